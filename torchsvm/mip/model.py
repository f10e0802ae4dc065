"""MIP model types shared by every mixed-integer stage (SPEC S5 "Solving", S6, S7).

Model::

    min / max   c @ x + 0.5 x^T Q x + offset
    s.t.        row_lower <= A x <= row_upper
                col_lower <= x <= col_upper
                x_k integer for integrality[k]

This module holds the data types (:class:`MipConfig`, :class:`MipModel`,
:class:`MipResult`) and the solver-free helpers (validation, objective, feasibility
check). It imports no solver: :mod:`torchsvm.mip.highs` is the HiGHS adapter,
:mod:`torchsvm.mip.solve` the dispatch, :mod:`torchsvm.mip.scip` the SCIP oracle.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from torchsvm.types import SolveStatus

__all__ = [
    "MipConfig",
    "MipModel",
    "MipResult",
    "check_feasible",
    "model_objective",
    "validate_model",
]


@dataclass(frozen=True)
class MipConfig:
    """Settings of every HiGHS / outer-approximation solve.

    Parameters
    ----------
    time_limit : float
        Wall-clock limit in seconds, always passed to HiGHS (and honoured overall by
        the outer approximation). The first call in a process compiles (or loads
        from numba's on-disk cache) the compiled kernels before its clock starts:
        up to tens of seconds once per installation, not charged to the limit.
    mip_rel_gap : float
        Relative optimality gap at which a MIP (or the outer approximation) stops.
    threads : int
        HiGHS threads.
    verbose : bool
        Show the HiGHS log.
    feasibility_tol : float
        Primal and MIP feasibility tolerance.
    """

    time_limit: float = 300.0
    mip_rel_gap: float = 1e-4
    threads: int = 1
    verbose: bool = False
    feasibility_tol: float = 1e-7

    def __post_init__(self) -> None:
        if not (self.time_limit > 0 and math.isfinite(self.time_limit)):
            raise ValueError(
                f"MipConfig.time_limit must be finite and > 0, got {self.time_limit}"
            )
        if not self.mip_rel_gap >= 0:
            raise ValueError(
                f"MipConfig.mip_rel_gap must be >= 0, got {self.mip_rel_gap}"
            )
        if int(self.threads) < 1:
            raise ValueError(f"MipConfig.threads must be >= 1, got {self.threads}")
        if not self.feasibility_tol > 0:
            raise ValueError(
                f"MipConfig.feasibility_tol must be > 0, got {self.feasibility_tol}"
            )


@dataclass(frozen=True)
class MipModel:
    """``min/max c @ x + 0.5 x^T Q x + offset`` s.t. rows, column bounds, integrality.

    Parameters
    ----------
    c : ndarray of shape (n,)
        Linear objective.
    A : sparse matrix of shape (m, n) or None
        Constraint matrix (``None``: no rows).
    row_lower, row_upper : ndarray of shape (m,)
        Row bounds; ``-inf`` / ``+inf`` allowed.
    col_lower, col_upper : ndarray of shape (n,)
        Column bounds; infinities allowed.
    integrality : ndarray of shape (n,) of bool or None
        ``True`` marks an integer column (binary when its bounds are 0..1).
    Q : sparse matrix or ndarray of shape (n, n) or None
        Symmetric PSD matrix of the objective ``0.5 x^T Q x``.
    offset : float
        Constant added to the objective.
    sense : {"min", "max"}
        Optimisation sense.
    col_names : sequence of str or None
        Column names (for HiGHS logs / model files).
    """

    c: np.ndarray
    A: sp.spmatrix | sp.sparray | None
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray | None = None
    Q: sp.spmatrix | sp.sparray | np.ndarray | None = None
    offset: float = 0.0
    sense: str = "min"
    col_names: Sequence[str] | None = None

    @property
    def n_cols(self) -> int:
        """Number of variables ``n``."""
        return int(np.asarray(self.c).shape[0])

    @property
    def n_rows(self) -> int:
        """Number of constraint rows ``m``."""
        return 0 if self.A is None else int(self.A.shape[0])

    @property
    def has_integers(self) -> bool:
        """Whether any column is integer."""
        return self.integrality is not None and bool(np.any(self.integrality))

    @property
    def has_quadratic(self) -> bool:
        """Whether the objective has a non-zero quadratic part."""
        if self.Q is None:
            return False
        Q = self.Q
        if isinstance(Q, np.ndarray):
            return bool(np.any(Q != 0))
        return bool(sp.csr_array(Q).count_nonzero() > 0)


@dataclass(frozen=True)
class MipResult:
    """Outcome of :func:`torchsvm.mip.solve.solve_model` (and every MIP solve).

    Parameters
    ----------
    status : SolveStatus
        ``optimal``, ``time_limit``, ``infeasible``, ``unbounded``, ...
    x : ndarray of shape (n,) or None
        Incumbent (``None`` if none was found).
    objective : float
        Objective of the incumbent in the model's own sense (``nan`` if none).
    bound : float
        Proven dual bound (equals ``objective`` for an optimal LP/QP).
    mip_gap : float
        Proven relative gap ``|objective - bound| / max(1, |objective|)`` as HiGHS
        reports it for MIPs; 0 for optimal LP/QP; ``inf`` without incumbent.
    runtime : float
        Wall-clock seconds.
    row_duals : ndarray of shape (m,) or None
        Row duals (LP/QP only), in the model's own sense.
    message : str
        Human-readable detail.
    n_iter : int
        Outer-approximation rounds (0 for direct HiGHS solves).
    start_feasible : bool or None
        Whether the supplied MIP start satisfied the model (``None``: no start).
    """

    status: SolveStatus
    x: np.ndarray | None
    objective: float
    bound: float
    mip_gap: float
    runtime: float
    row_duals: np.ndarray | None = None
    message: str = ""
    n_iter: int = 0
    start_feasible: bool | None = None
    extra: dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def _as_csr(A: sp.spmatrix | sp.sparray | np.ndarray | None, n: int) -> sp.csr_array:
    if A is None:
        return sp.csr_array((0, n))
    out = sp.csr_array(A, dtype=np.float64)
    out.sum_duplicates()
    out.sort_indices()
    return out


def _as_q(
    Q: sp.spmatrix | sp.sparray | np.ndarray | None, n: int
) -> sp.csc_array | None:
    if Q is None:
        return None
    Qs = sp.csc_array(Q, dtype=np.float64)
    Qs.eliminate_zeros()
    if Qs.nnz == 0:
        return None
    return Qs


def _check_vec(name: str, v: np.ndarray, n: int, allow_inf: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n,):
        raise ValueError(f"MipModel.{name} must have shape ({n},), got {v.shape}")
    if np.isnan(v).any():
        raise ValueError(
            f"MipModel.{name} contains NaN at index {int(np.argmax(np.isnan(v)))}"
        )
    if allow_inf == "none" and np.isinf(v).any():
        raise ValueError(f"MipModel.{name} must be finite")
    if allow_inf == "neg" and np.isposinf(v).any():
        raise ValueError(f"MipModel.{name} may not contain +inf")
    if allow_inf == "pos" and np.isneginf(v).any():
        raise ValueError(f"MipModel.{name} may not contain -inf")
    return v


def validate_model(model: MipModel) -> MipModel:
    """Check shapes, NaN and bound consistency; return a normalised copy.

    Raises
    ------
    ValueError
        Naming the offending field and shape.
    """
    c = np.asarray(model.c, dtype=np.float64)
    if c.ndim != 1 or c.shape[0] == 0:
        raise ValueError(
            f"MipModel.c must be a non-empty 1-D array, got shape {c.shape}"
        )
    n = c.shape[0]
    c = _check_vec("c", c, n, "none")
    A = _as_csr(model.A, n)
    if A.shape[1] != n:
        raise ValueError(
            f"MipModel.A must have {n} columns (len(c)), got shape {A.shape}"
        )
    if A.nnz and not np.all(np.isfinite(A.data)):
        raise ValueError("MipModel.A contains NaN or inf entries")
    m = A.shape[0]
    rl = _check_vec("row_lower", model.row_lower, m, "neg")
    ru = _check_vec("row_upper", model.row_upper, m, "pos")
    cl = _check_vec("col_lower", model.col_lower, n, "neg")
    cu = _check_vec("col_upper", model.col_upper, n, "pos")
    if np.any(rl > ru):
        i = int(np.argmax(rl > ru))
        raise ValueError(f"row_lower[{i}]={rl[i]} > row_upper[{i}]={ru[i]}")
    if np.any(cl > cu):
        i = int(np.argmax(cl > cu))
        raise ValueError(f"col_lower[{i}]={cl[i]} > col_upper[{i}]={cu[i]}")
    integ = None
    if model.integrality is not None:
        integ = np.asarray(model.integrality)
        if integ.shape != (n,):
            raise ValueError(
                f"MipModel.integrality must have shape ({n},), got {integ.shape}"
            )
        integ = integ.astype(bool)
    Q = _as_q(model.Q, n)
    if Q is not None:
        if Q.shape != (n, n):
            raise ValueError(f"MipModel.Q must have shape ({n}, {n}), got {Q.shape}")
        if not np.all(np.isfinite(Q.data)):
            raise ValueError("MipModel.Q contains NaN or inf entries")
        asym = abs(Q - Q.T)
        scale = max(1.0, float(abs(Q).max()))
        if asym.nnz and float(asym.max()) > 1e-9 * scale:
            raise ValueError("MipModel.Q must be symmetric")
    if model.sense not in ("min", "max"):
        raise ValueError(f"MipModel.sense must be 'min' or 'max', got {model.sense!r}")
    if not math.isfinite(float(model.offset)):
        raise ValueError(f"MipModel.offset must be finite, got {model.offset}")
    if model.col_names is not None and len(model.col_names) != n:
        raise ValueError(
            f"MipModel.col_names must have {n} names, got {len(model.col_names)}"
        )
    return replace(
        model,
        c=c,
        A=A,
        row_lower=rl,
        row_upper=ru,
        col_lower=cl,
        col_upper=cu,
        integrality=integ,
        Q=Q,
        offset=float(model.offset),
    )


def model_objective(model: MipModel, x: np.ndarray) -> float:
    """Objective ``c @ x + 0.5 x^T Q x + offset`` of ``x`` (model's own sense)."""
    x = np.asarray(x, dtype=np.float64)
    val = float(np.asarray(model.c, dtype=np.float64) @ x) + float(model.offset)
    if model.Q is not None:
        val += 0.5 * float(x @ (model.Q @ x))
    return val


def check_feasible(
    model: MipModel, x: np.ndarray, tol: float = 1e-6
) -> tuple[bool, str]:
    """Check bounds, rows and integrality of ``x`` with absolute tolerance ``tol``.

    Returns
    -------
    ok : bool
        Whether ``x`` is feasible.
    reason : str
        The first violated constraint, or ``""``.
    """
    x = np.asarray(x, dtype=np.float64)
    n = model.n_cols
    if x.shape != (n,) or not np.all(np.isfinite(x)):
        return False, f"start must be a finite vector of shape ({n},), got {x.shape}"
    if np.any(x < model.col_lower - tol):
        k = int(np.argmax(x < model.col_lower - tol))
        return (
            False,
            f"column {k} below its lower bound ({x[k]} < {model.col_lower[k]})",
        )
    if np.any(x > model.col_upper + tol):
        k = int(np.argmax(x > model.col_upper + tol))
        return (
            False,
            f"column {k} above its upper bound ({x[k]} > {model.col_upper[k]})",
        )
    if model.integrality is not None:
        integ = np.asarray(model.integrality, dtype=bool)
        frac = np.abs(x - np.round(x))
        if np.any(integ & (frac > tol)):
            k = int(np.argmax(integ & (frac > tol)))
            return False, f"integer column {k} is fractional ({x[k]})"
    if model.A is not None and model.A.shape[0]:
        ax = model.A @ x
        lo = np.asarray(model.row_lower)
        up = np.asarray(model.row_upper)
        scale = 1.0 + np.abs(ax)
        bad = (ax < lo - tol * scale) | (ax > up + tol * scale)
        if np.any(bad):
            i = int(np.argmax(bad))
            return False, f"row {i} violated ({lo[i]} <= {ax[i]} <= {up[i]} fails)"
    return True, ""
