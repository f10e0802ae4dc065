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
    method : {"auto", "ipm", "admm", "fista"}
        ``admm`` factorises ``Q`` once (eigendecomposition, or thin SVD for the linear
        kernel) and shares it across the batch; ``ipm`` is the interior-point method for
        a low-rank factor (rank ``<= ipm_max_rank``: the linear kernel with few
        features), followed by the active-set polish, with ADMM finishing any row the
        polish could not certify; ``fista`` is the first-order fallback that never
        stores more than kernel blocks; ``auto`` picks ``ipm`` for a low-rank factor,
        else ``admm`` when the factorisation fits ``max_factor_n``, else ``fista``.
    max_factor_n : int
        Largest ``n`` for which a nonlinear kernel is eigendecomposed.
    ipm_max_rank : int
        Largest rank of ``Q`` for which ``auto`` uses the interior-point method.
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
        if self.method not in ("auto", "ipm", "admm", "fista"):
            raise ValueError(
                f"method must be 'auto', 'ipm', 'admm' or 'fista'; got {self.method!r}"
            )
        if not (math.isfinite(self.ipm_tol) and self.ipm_tol > 0):
            raise ValueError(f"ipm_tol must be > 0; got {self.ipm_tol}")
        if not (0 < self.relaxation < 2):
            raise ValueError(f"relaxation must lie in (0, 2); got {self.relaxation}")
        if self.rho is not None and not (self.rho > 0):
            raise ValueError(f"rho must be > 0; got {self.rho}")
