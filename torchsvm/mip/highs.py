"""HiGHS adapter: the only module of torchsvm that imports :mod:`highspy`.

Model solved (SPEC S5 "Solving", S6, S7)::

    min / max   c @ x + 0.5 x^T Q x + offset
    s.t.        row_lower <= A x <= row_upper
                col_lower <= x <= col_upper
                x_k integer for integrality[k]

- LP and MILP (``Q is None``) and convex QP (``Q`` PSD, no integers) go straight to
  HiGHS, built through its array API (``addVars`` / ``addRows`` with CSR /
  ``passHessian``).
- ``Q`` together with integers (a convex MIQP) is refused by HiGHS; :func:`solve_model`
  hands it to :func:`torchsvm.mip.outer_approx.solve_convex_miqp`.
- ``sense="max"`` is solved internally as ``min -(...)``; with ``Q`` this requires the
  objective to be concave (``Q`` negative semidefinite), i.e. ``-Q`` PSD.

Every solve has a time limit (:class:`MipConfig.time_limit`). A solve stopped at the
limit returns its incumbent (if any) with its proven gap, status
:attr:`SolveStatus.time_limit` and a :class:`SolverTimeLimitWarning`; an infeasible model
returns status :attr:`SolveStatus.infeasible` (callers raise
:class:`~torchsvm.exceptions.InfeasibleProblemError` with a message naming the
constraint that cannot be met).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import highspy
import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import SolverError, SolverTimeLimitWarning
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "MipConfig",
    "MipModel",
    "MipResult",
    "check_feasible",
    "model_objective",
    "solve_lp_batch",
    "solve_model",
]

_HMS = highspy.HighsModelStatus

#: HiGHS model status -> project status (one table, as linopy's ``Highs._solve``).
_STATUS_MAP: dict[highspy.HighsModelStatus, SolveStatus] = {
    _HMS.kOptimal: SolveStatus.optimal,
    _HMS.kModelEmpty: SolveStatus.optimal,
    _HMS.kInfeasible: SolveStatus.infeasible,
    _HMS.kUnboundedOrInfeasible: SolveStatus.infeasible,
    _HMS.kUnbounded: SolveStatus.unbounded,
    _HMS.kTimeLimit: SolveStatus.time_limit,
    _HMS.kIterationLimit: SolveStatus.max_iter,
    _HMS.kSolutionLimit: SolveStatus.max_iter,
    _HMS.kObjectiveBound: SolveStatus.not_solved,
    _HMS.kObjectiveTarget: SolveStatus.not_solved,
    _HMS.kInterrupt: SolveStatus.not_solved,
    _HMS.kHighsInterrupt: SolveStatus.not_solved,  # type: ignore[attr-defined]
    _HMS.kUnknown: SolveStatus.not_solved,
    _HMS.kNotset: SolveStatus.error,
    _HMS.kLoadError: SolveStatus.error,
    _HMS.kModelError: SolveStatus.error,
    _HMS.kPresolveError: SolveStatus.error,
    _HMS.kSolveError: SolveStatus.error,
    _HMS.kPostsolveError: SolveStatus.error,
    _HMS.kMemoryLimit: SolveStatus.error,
}


@dataclass(frozen=True)
class MipConfig:
    """Settings of every HiGHS / outer-approximation solve.

    Parameters
    ----------
    time_limit : float
        Wall-clock limit in seconds, always passed to HiGHS (and honoured overall by
        the outer approximation).
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
    """Outcome of :func:`solve_model`.

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


def _set_options(h: highspy.Highs, config: MipConfig, time_limit: float) -> None:
    h.setOptionValue("output_flag", bool(config.verbose))
    h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
    h.setOptionValue("mip_rel_gap", float(config.mip_rel_gap))
    h.setOptionValue("threads", int(config.threads))
    h.setOptionValue("primal_feasibility_tolerance", float(config.feasibility_tol))
    h.setOptionValue("mip_feasibility_tolerance", float(config.feasibility_tol))


def _load(h: highspy.Highs, model: MipModel) -> int:
    """Pass a validated model to ``h`` as a minimisation; return the sign applied."""
    sign = 1.0 if model.sense == "min" else -1.0
    n = model.n_cols
    h.clearModel()
    inf = highspy.kHighsInf
    h.addVars(n, np.maximum(model.col_lower, -inf), np.minimum(model.col_upper, inf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), sign * np.asarray(model.c))
    A = model.A
    assert A is not None
    m = A.shape[0]
    if m:
        h.addRows(
            m,
            np.maximum(model.row_lower, -inf),
            np.minimum(model.row_upper, inf),
            int(A.nnz),
            A.indptr.astype(np.int32),
            A.indices.astype(np.int32),
            A.data.astype(np.float64),
        )
    if model.has_integers:
        integ = np.asarray(model.integrality, dtype=bool)
        idx = np.flatnonzero(integ).astype(np.int32)
        types = np.full(
            idx.shape[0], int(highspy.HighsVarType.kInteger), dtype=np.uint8
        )
        h.changeColsIntegrality(idx.shape[0], idx, types)
    if model.Q is not None:
        L = sp.csc_array(sp.tril(sign * model.Q, format="csc"))
        L.sort_indices()
        h.passHessian(
            n,
            int(L.nnz),
            int(highspy.HessianFormat.kTriangular),
            L.indptr.astype(np.int32),
            L.indices.astype(np.int32),
            L.data.astype(np.float64),
        )
    if model.offset:
        h.changeObjectiveOffset(sign * model.offset)
    if model.col_names is not None:
        for k, name in enumerate(model.col_names):
            h.passColName(k, str(name))
    return int(sign)


def _run(
    h: highspy.Highs,
    model: MipModel,
    config: MipConfig,
    time_limit: float,
    start: np.ndarray | None,
    warn: bool = True,
    options: dict[str, float | int | str | bool] | None = None,
) -> MipResult:
    """Load, solve and read back one LP / QP / MILP (no MIQP)."""
    t0 = time.perf_counter()
    _set_options(h, config, time_limit)
    for key, value in (options or {}).items():
        h.setOptionValue(key, value)
    sign = _load(h, model)
    start_ok: bool | None = None
    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        start_ok, reason = check_feasible(
            model, start, tol=max(1e-6, config.feasibility_tol)
        )
        if not start_ok:
            logger.info("MIP start rejected: %s", reason)
        if start.shape == (model.n_cols,) and np.all(np.isfinite(start)):
            sol = highspy.HighsSolution()
            x0 = start.copy()
            if model.has_integers:
                integ = np.asarray(model.integrality, dtype=bool)
                x0[integ] = np.round(x0[integ])
            sol.col_value = list(x0)
            sol.value_valid = True
            h.setSolution(sol)
    h.run()
    hs = h.getModelStatus()
    if hs == _HMS.kUnboundedOrInfeasible:
        # NOTE: presolve may not tell infeasible from unbounded; ask again without it.
        h.setOptionValue("presolve", "off")
        h.run()
        hs = h.getModelStatus()
        h.setOptionValue("presolve", "choose")
    status = _STATUS_MAP.get(hs, SolveStatus.error)
    if status is SolveStatus.error:
        elapsed = time.perf_counter() - t0
        if elapsed >= 0.95 * time_limit:
            # HiGHS's QP solver reports a time-limited run as a solve error
            raise SolverError(
                f"HiGHS stopped at its time limit ({time_limit:g} s) with model status "
                f"{h.modelStatusToString(hs)} and no usable solution; raise time_limit"
            )
        raise SolverError(f"HiGHS failed with model status {h.modelStatusToString(hs)}")
    info = h.getInfo()
    sol = h.getSolution()
    is_mip = model.has_integers
    has_x = bool(info.primal_solution_status == highspy.kSolutionStatusFeasible)
    if status is SolveStatus.optimal:
        has_x = True
    x = np.asarray(sol.col_value, dtype=np.float64).copy() if has_x else None
    if x is not None and model.has_integers:
        integ = np.asarray(model.integrality, dtype=bool)
        x[integ] = np.round(x[integ])
    obj = sign * float(info.objective_function_value) if x is not None else math.nan
    if x is not None:
        obj = model_objective(model, x)
    if is_mip:
        bound = sign * float(info.mip_dual_bound)
        gap = float(info.mip_gap) if x is not None else math.inf
        if status is SolveStatus.optimal and not math.isfinite(gap):
            gap = 0.0
    else:
        bound = obj if status is SolveStatus.optimal else (-sign * math.inf)
        gap = 0.0 if status is SolveStatus.optimal else math.inf
    duals = None
    if not is_mip and sol.dual_valid and model.n_rows:
        duals = sign * np.asarray(sol.row_dual, dtype=np.float64)
    msg = h.modelStatusToString(hs)
    runtime = time.perf_counter() - t0
    if status is SolveStatus.time_limit and warn:
        warnings.warn(
            f"HiGHS stopped at its time limit ({time_limit:.3g} s) "
            + (
                f"with incumbent {obj:.6g}, gap {gap:.3g}"
                if x is not None
                else "without an incumbent"
            ),
            SolverTimeLimitWarning,
            stacklevel=3,
        )
    if status in (SolveStatus.infeasible, SolveStatus.unbounded):
        x, obj, gap = None, math.nan, math.inf
        bound = math.inf if status is SolveStatus.infeasible else -math.inf
        if sign < 0:
            bound = -bound
    return MipResult(
        status=status,
        x=x,
        objective=obj,
        bound=bound,
        mip_gap=gap,
        runtime=runtime,
        row_duals=duals,
        message=msg,
        start_feasible=start_ok,
    )


def _new_highs() -> highspy.Highs:
    h = highspy.Highs()
    h.silent()
    return h


# --------------------------------------------------------------------------- public


def solve_model(
    model: MipModel, config: MipConfig | None = None, start: np.ndarray | None = None
) -> MipResult:
    """Solve an LP, convex QP, MILP or convex MIQP.

    Parameters
    ----------
    model : MipModel
        The model; validated here.
    config : MipConfig, optional
        Time limit, gap, threads, verbosity (default ``MipConfig()``).
    start : ndarray of shape (n,), optional
        MIP start passed to HiGHS with ``setSolution`` (and, for an MIQP, the first
        cut point of the outer approximation).

    Returns
    -------
    MipResult
        Status, incumbent, objective, proven bound and gap.

    Raises
    ------
    ValueError
        If the model is malformed (shapes, NaN, inconsistent bounds).
    SolverError
        If HiGHS fails without a usable answer.

    Notes
    -----
    Q with integers is a convex MIQP, which HiGHS refuses: it is dispatched to
    :func:`torchsvm.mip.outer_approx.solve_convex_miqp` (SPEC S5 "Solving"). A convex
    QP on which the HiGHS active-set solver fails is re-solved by the dense interior
    point :func:`torchsvm.mip.outer_approx.solve_qp_ipm`.
    """
    config = MipConfig() if config is None else config
    model = validate_model(model)
    if model.has_integers and model.Q is not None:
        from torchsvm.mip.outer_approx import solve_convex_miqp

        return solve_convex_miqp(model, config, start)
    try:
        return _run(_new_highs(), model, config, config.time_limit, start)
    except SolverError:
        if model.Q is None:
            raise
        # NOTE: the HiGHS active-set QP fails on some degenerate semidefinite QPs
        # (e.g. the CSVM kernel form); fall back to the dense interior point.
        from torchsvm.mip.outer_approx import solve_qp_ipm

        logger.info("HiGHS QP failed; solving with the interior point instead")
        t0 = time.perf_counter()
        flip = model.sense == "max"
        m = model
        if flip:
            assert model.Q is not None
            m = replace(
                model, c=-model.c, Q=-model.Q, offset=-model.offset, sense="min"
            )
        res = solve_qp_ipm(m, time_limit=config.time_limit)
        if res.status is not SolveStatus.optimal:
            raise
        if flip:
            res = replace(res, objective=-res.objective, bound=-res.bound)
        return replace(res, runtime=time.perf_counter() - t0)


def solve_lp_batch(
    models: Sequence[MipModel], config: MipConfig | None = None
) -> list[MipResult]:
    """Solve many small LP / QP / MILP models, reusing one HiGHS instance.

    Each model gets the full ``config.time_limit``. MIQPs are dispatched as in
    :func:`solve_model`.

    Parameters
    ----------
    models : sequence of MipModel
        Models to solve, in order.
    config : MipConfig, optional
        Shared settings.

    Returns
    -------
    list of MipResult
        One result per model.
    """
    config = MipConfig() if config is None else config
    h = _new_highs()
    out = []
    for model in models:
        vm = validate_model(model)
        if vm.has_integers and vm.Q is not None:
            out.append(solve_model(vm, config))
        else:
            out.append(_run(h, vm, config, config.time_limit, None))
    return out


def _solve_validated(
    model: MipModel,
    config: MipConfig,
    time_limit: float,
    start: np.ndarray | None = None,
    h: highspy.Highs | None = None,
    warn: bool = False,
    options: dict[str, float | int | str | bool] | None = None,
) -> MipResult:
    """Solve an already validated non-MIQP model (used by the outer approximation)."""
    return _run(
        h if h is not None else _new_highs(),
        model,
        config,
        time_limit,
        start,
        warn,
        options,
    )
