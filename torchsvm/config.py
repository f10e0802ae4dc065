"""Frozen configuration dataclasses (no global settings, no hidden device state)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the batched dual solver (:class:`torchsvm.solvers.box_qp.BoxQpSolver`).

    Parameters
    ----------
    tol : float
        Target relative duality gap ``(primal - dual) / max(1, |primal|)`` per problem.
    max_iter : int
        Iteration cap per problem (ADMM iterations, or gradient steps in the fallback).
    check_every : int
        Iterations between convergence checks (the only host synchronisations).
    method : {"auto", "ipm", "pdas", "admm", "fista"}
        ``ipm``: batched interior-point method on a low-rank factor of ``Q`` (the
        linear kernel with ``d <= ipm_max_rank`` features), rounded to the box and
        polished. ``pdas``: primal-dual active-set iterations on the dense ``Q`` (no
        factorisation; exact face solves by Cholesky), for full-rank kernels.
        ``admm``: factorises ``Q`` once (eigendecomposition, or thin SVD for the linear
        kernel) and shares it across the batch. ``fista``: the first-order fallback that
        never stores more than kernel blocks. ``auto``: ``ipm`` for the linear kernel
        with few features, ``pdas`` for nonlinear kernels with ``n <= max_factor_n``
        (and the linear kernel with ``d >= n``), ``admm`` for the linear kernel in
        between, ``fista`` above ``max_factor_n``. Rows that ``ipm`` or ``pdas`` cannot
        certify are finished by ``admm``.
    max_factor_n : int
        Largest ``n`` for which a nonlinear kernel's ``Q`` is held in memory (``pdas``,
        ``admm``); above it ``auto`` uses ``fista``.
    ipm_max_rank : int
        Largest rank of ``Q`` for which ``auto`` uses the interior-point method.
    ipm_after : int
        ``ipm`` first runs this many ADMM iterations (cheap, ``O(n k)`` each) and
        hands only the uncertified problems to the interior point (``O(n k^2)`` per
        iteration); 0 goes straight to the interior point. Only for ``n <=
        ipm_admm_max_n``: with more samples there are more bounded support vectors to
        identify and ADMM needs hundreds of iterations.
    ipm_admm_max_n : int
        Largest ``n`` for which ``ipm`` tries ADMM first (see ``ipm_after``).
    pdas_max_iter : int
        Active-set iterations after which a dense problem is handed to ADMM.
    ipm_tol : float
        Relative complementarity / residual at which the interior-point iterate is
        rounded to the box and handed to the polish.
    rho : float or None
        Initial ADMM penalty (None: mean diagonal of ``Q``); adapted per problem.
    relaxation : float
        ADMM over-relaxation in (0, 2).
    memory_bytes : int or None
        Working-memory budget for one chunk of problems (None: 60 % of free CUDA memory,
        or 4 GiB on CPU). The batch is split into chunks automatically.
    eig_rel_tol : float
        Eigenvalues below ``eig_rel_tol * max eigenvalue`` are treated as exact zeros.
    polish, polish_after, polish_iter
        Active-set polish: from iteration ``polish_after`` on, every check also runs
        ``polish_iter`` face-restricted CG steps (a monotone GPCG track started from the
        better of its last point and ADMM's projected iterate); a problem stops as soon
        as either point is certified.
    """

    tol: float = 1e-7
    max_iter: int = 20000
    check_every: int = 20
    method: str = "auto"
    max_factor_n: int = 12000
    ipm_max_rank: int = 64
    ipm_after: int = 60
    ipm_admm_max_n: int = 2000
    pdas_max_iter: int = 40
    ipm_tol: float = 1e-9
    rho: float | None = None
    relaxation: float = 1.6
    memory_bytes: int | None = None
    eig_rel_tol: float = 1e-13
    polish: bool = True
    polish_after: int = 20
    polish_iter: int = 200

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be > 0; got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1; got {self.max_iter}")
        if self.check_every < 1:
            raise ValueError(f"check_every must be >= 1; got {self.check_every}")
        if self.method not in ("auto", "ipm", "pdas", "admm", "fista"):
            raise ValueError(
                f"method must be 'auto', 'ipm', 'pdas', 'admm' or 'fista'; got {self.method!r}"
            )
        if self.ipm_admm_max_n < 0:
            raise ValueError(f"ipm_admm_max_n must be >= 0; got {self.ipm_admm_max_n}")
        if self.ipm_after < 0:
            raise ValueError(f"ipm_after must be >= 0; got {self.ipm_after}")
        if not (math.isfinite(self.ipm_tol) and self.ipm_tol > 0):
            raise ValueError(f"ipm_tol must be > 0; got {self.ipm_tol}")
        if not (0 < self.relaxation < 2):
            raise ValueError(f"relaxation must lie in (0, 2); got {self.relaxation}")
        if self.rho is not None and not (self.rho > 0):
            raise ValueError(f"rho must be > 0; got {self.rho}")
