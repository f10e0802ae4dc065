"""HiGHS adapter: the only module of torchsvm that imports :mod:`highspy`.

Builds a validated :class:`~torchsvm.mip.model.MipModel` without integers-and-``Q``
(LP, convex QP, MILP) through the HiGHS array API (``addVars`` / ``addRows`` with CSR /
``passHessian``), runs it and reads it back through one status table
(``_STATUS_MAP``, as linopy's ``Highs._solve``). It does not dispatch: a convex MIQP
goes through :func:`torchsvm.mip.solve.solve_model`, which hands it to the outer
approximation.

``sense="max"`` is solved internally as ``min -(...)``; with ``Q`` this requires the
objective to be concave (``Q`` negative semidefinite).

Every run has a time limit. A MIP stopped at the limit returns its incumbent (if any)
with its proven gap, status :attr:`SolveStatus.time_limit` and a
:class:`SolverTimeLimitWarning`; an infeasible model returns status
:attr:`SolveStatus.infeasible` (callers raise
:class:`~torchsvm.exceptions.InfeasibleProblemError` naming the constraint).
"""

from __future__ import annotations

import logging
import math
import time
import warnings

import highspy
import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import SolverError, SolverTimeLimitWarning
from torchsvm.mip.model import (
    MipConfig,
    MipModel,
    MipResult,
    check_feasible,
    model_objective,
    validate_model,
)
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["PersistentLp", "new_highs", "solve_highs"]

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
    t_run = time.perf_counter()
    h.run()
    hs = h.getModelStatus()
    logger.debug(
        "HiGHS run: %.3f s of a %.3g s limit (load %.3f s), %s, %d rows x %d cols",
        time.perf_counter() - t_run,
        time_limit,
        t_run - t0,
        h.modelStatusToString(hs),
        model.n_rows,
        model.n_cols,
    )
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


def new_highs() -> highspy.Highs:
    """A silent HiGHS instance (reuse it across :func:`solve_highs` calls)."""
    return _new_highs()


def solve_highs(
    model: MipModel,
    config: MipConfig,
    *,
    time_limit: float | None = None,
    start: np.ndarray | None = None,
    highs: highspy.Highs | None = None,
    warn: bool = True,
    options: dict[str, float | int | str | bool] | None = None,
) -> MipResult:
    """Run one LP / convex QP / MILP on HiGHS.

    Parameters
    ----------
    model : MipModel
        Validated (:func:`~torchsvm.mip.model.validate_model`) model; integers together
        with ``Q`` are refused (HiGHS cannot solve a MIQP).
    config : MipConfig
        Gap, threads, tolerances; ``config.time_limit`` unless ``time_limit`` is given.
    time_limit : float, optional
        Seconds for this run (callers with an overall budget pass what is left).
    start : ndarray of shape (n,), optional
        MIP start handed to HiGHS with ``setSolution``.
    highs : highspy.Highs, optional
        Instance to reuse (:func:`new_highs`).
    warn : bool
        Emit :class:`SolverTimeLimitWarning` when stopped at the limit.
    options : dict, optional
        Extra HiGHS options (e.g. ``objective_bound``).

    Returns
    -------
    MipResult

    Raises
    ------
    ValueError
        For a model with integers and ``Q``.
    SolverError
        If HiGHS fails without a usable answer.
    """
    if model.has_integers and model.Q is not None:
        raise ValueError(
            "solve_highs got a convex MIQP (integers and Q); use "
            "torchsvm.mip.solve.solve_model, which dispatches it to the outer approximation"
        )
    tl = config.time_limit if time_limit is None else time_limit
    return _run(
        highs if highs is not None else _new_highs(),
        model,
        config,
        tl,
        start,
        warn,
        options,
    )


class PersistentLp:
    """One LP kept loaded in HiGHS and re-solved after small changes.

    Between solves only coefficients, row bounds and costs change (or columns are
    added), so the simplex restarts from the previous basis instead of from scratch.
    SPEC S7 solves K envelopment LPs that differ in one column and the right-hand
    side this way (:mod:`torchsvm.mip.dea`).

    Parameters
    ----------
    model : MipModel
        An LP (no integers, no ``Q``).
    config : MipConfig
        Tolerances and threads; every :meth:`solve` gets a time limit.
    options : dict, optional
        Further HiGHS options (e.g. ``simplex_strategy``).
    """

    def __init__(
        self,
        model: MipModel,
        config: MipConfig,
        options: dict[str, float | int | str | bool] | None = None,
    ) -> None:
        if model.has_integers or model.Q is not None:
            raise ValueError("PersistentLp holds an LP (no integers, no Q)")
        model = validate_model(model)
        self.config = config
        self._h = _new_highs()
        _set_options(self._h, config, config.time_limit)
        # NOTE: presolve would discard the basis that makes the re-solves cheap.
        self._h.setOptionValue("presolve", "off")
        for key, value in (options or {}).items():
            self._h.setOptionValue(key, value)
        self._sign = _load(self._h, model)
        self.n_cols = model.n_cols
        self.n_rows = model.n_rows

    def change_coefficients(
        self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
    ) -> None:
        """Set ``A[rows[t], cols[t]] = values[t]``."""
        for r, c, v in zip(rows.tolist(), cols.tolist(), values.tolist()):
            self._h.changeCoeff(int(r), int(c), float(v))

    def change_row_bounds(
        self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray
    ) -> None:
        """Set the bounds of the given rows (infinities allowed)."""
        inf = highspy.kHighsInf
        self._h.changeRowsBounds(
            len(rows),
            np.asarray(rows, dtype=np.int32),
            np.maximum(np.asarray(lower, dtype=np.float64), -inf),
            np.minimum(np.asarray(upper, dtype=np.float64), inf),
        )

    def change_col_bounds(
        self, cols: np.ndarray, lower: np.ndarray, upper: np.ndarray
    ) -> None:
        """Set the bounds of the given columns (infinities allowed)."""
        inf = highspy.kHighsInf
        self._h.changeColsBounds(
            len(cols),
            np.asarray(cols, dtype=np.int32),
            np.maximum(np.asarray(lower, dtype=np.float64), -inf),
            np.minimum(np.asarray(upper, dtype=np.float64), inf),
        )

    def change_costs(self, cols: np.ndarray, costs: np.ndarray) -> None:
        """Set the objective coefficients of the given columns (model's sense)."""
        self._h.changeColsCost(
            len(cols),
            np.asarray(cols, dtype=np.int32),
            self._sign * np.asarray(costs, dtype=np.float64),
        )

    def add_columns(
        self,
        costs: np.ndarray,
        lower: np.ndarray,
        upper: np.ndarray,
        A: sp.csc_array,
    ) -> None:
        """Append columns with costs, bounds and their entries ``A (m, k)``."""
        inf = highspy.kHighsInf
        A = sp.csc_array(A)
        k = int(A.shape[1])
        self._h.addCols(
            k,
            self._sign * np.asarray(costs, dtype=np.float64),
            np.maximum(np.asarray(lower, dtype=np.float64), -inf),
            np.minimum(np.asarray(upper, dtype=np.float64), inf),
            int(A.nnz),
            A.indptr[:-1].astype(np.int32),
            A.indices.astype(np.int32),
            A.data.astype(np.float64),
        )
        self.n_cols += k

    def solve(self, time_limit: float) -> MipResult:
        """Re-solve from the current basis within ``time_limit`` seconds.

        Returns
        -------
        MipResult
            ``x`` and ``row_duals`` (model's sense) when optimal; the status otherwise
            (no warning: the caller owns the overall budget).
        """
        t0 = time.perf_counter()
        h = self._h
        h.setOptionValue("time_limit", float(max(time_limit, 1e-3)))
        h.run()
        status = _STATUS_MAP.get(h.getModelStatus(), SolveStatus.error)
        runtime = time.perf_counter() - t0
        if status is not SolveStatus.optimal:
            return MipResult(
                status=status,
                x=None,
                objective=math.nan,
                bound=math.nan,
                mip_gap=math.inf,
                runtime=runtime,
                message=h.modelStatusToString(h.getModelStatus()),
            )
        sol = h.getSolution()
        obj = self._sign * float(h.getInfo().objective_function_value)
        return MipResult(
            status=status,
            x=np.asarray(sol.col_value, dtype=np.float64),
            objective=obj,
            bound=obj,
            mip_gap=0.0,
            runtime=runtime,
            row_duals=self._sign * np.asarray(sol.row_dual, dtype=np.float64),
            n_iter=int(h.getInfo().simplex_iteration_count),
        )
