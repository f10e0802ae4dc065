"""SCIP oracle for :class:`~torchsvm.mip.model.MipModel` (tests and benchmarks only).

The only module of torchsvm that imports :mod:`pyscipopt`, lazily: SCIP is an optional
reference (SPEC S5 "Solving": HiGHS is the engine, SCIP the oracle). A quadratic
objective is stated through its epigraph ``0.5 x^T Q x <= t`` (SCIP takes no quadratic
objective), so SCIP solves the same convex MIQP as the outer approximation.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.model import (
    MipConfig,
    MipModel,
    MipResult,
    model_objective,
    validate_model,
)
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["build_scip", "solve_scip"]

_STATUS = {
    "optimal": SolveStatus.optimal,
    "gaplimit": SolveStatus.optimal,
    "timelimit": SolveStatus.time_limit,
    "infeasible": SolveStatus.infeasible,
    "unbounded": SolveStatus.unbounded,
    "inforunbd": SolveStatus.infeasible,
}


def _import_scip() -> Any:
    try:
        import pyscipopt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the SCIP oracle needs pyscipopt (pip install pyscipopt)"
        ) from err
    return pyscipopt


def build_scip(model: MipModel, config: MipConfig) -> tuple[Any, list[Any]]:
    """Translate a validated model into a ``pyscipopt.Model`` (minimisation).

    Returns the SCIP model and its variables in column order. ``sense="max"`` is
    translated as ``min -(...)``.
    """
    pyscipopt = _import_scip()
    sign = 1.0 if model.sense == "min" else -1.0
    m = pyscipopt.Model()
    m.hideOutput(not config.verbose)
    n = model.n_cols
    integ = (
        np.zeros(n, dtype=bool)
        if model.integrality is None
        else np.asarray(model.integrality, dtype=bool)
    )
    lo, up = np.asarray(model.col_lower), np.asarray(model.col_upper)
    xs = []
    for k in range(n):
        vtype = "C"
        if integ[k]:
            vtype = "B" if lo[k] >= 0 and up[k] <= 1 else "I"
        xs.append(
            m.addVar(
                lb=float(lo[k]) if np.isfinite(lo[k]) else None,
                ub=float(up[k]) if np.isfinite(up[k]) else None,
                vtype=vtype,
            )
        )
    A = sp.csr_array(model.A)
    for i in range(A.shape[0]):
        cols = A.indices[A.indptr[i] : A.indptr[i + 1]]
        vals = A.data[A.indptr[i] : A.indptr[i + 1]]
        expr = pyscipopt.quicksum(float(v) * xs[c] for c, v in zip(cols, vals))
        rl, ru = float(model.row_lower[i]), float(model.row_upper[i])
        if math.isfinite(rl) and rl == ru:
            m.addCons(expr == rl)
            continue
        if math.isfinite(rl):
            m.addCons(expr >= rl)
        if math.isfinite(ru):
            m.addCons(expr <= ru)
    obj = pyscipopt.quicksum(
        sign * float(model.c[k]) * xs[k] for k in range(n) if model.c[k] != 0
    )
    if model.Q is not None:
        Q = sp.coo_array(sp.triu(sp.csr_array(model.Q)))
        t = m.addVar(lb=None, ub=None)
        quad = pyscipopt.quicksum(
            (0.5 if i == j else 1.0) * sign * float(v) * xs[i] * xs[j]
            for i, j, v in zip(Q.row, Q.col, Q.data)
        )
        m.addCons(quad <= t)
        obj = obj + t
    m.setObjective(obj + sign * float(model.offset), "minimize")
    m.setParam("limits/time", float(config.time_limit))
    m.setParam("limits/gap", float(config.mip_rel_gap))
    m.setParam("parallel/maxnthreads", int(config.threads))
    m.setParam("numerics/feastol", float(config.feasibility_tol))
    return m, xs


def solve_scip(
    model: MipModel, config: MipConfig | None = None, start: np.ndarray | None = None
) -> MipResult:
    """Solve a model with SCIP (the oracle of the tests and benchmarks).

    Parameters
    ----------
    model : MipModel
        LP, MILP, convex QP or convex MIQP.
    config : MipConfig, optional
        ``time_limit``, ``mip_rel_gap``, ``threads``, ``feasibility_tol``.
    start : ndarray of shape (n,), optional
        A solution handed to SCIP (``addSol``; SCIP checks it).

    Returns
    -------
    MipResult
        ``mip_gap`` is ``(UB - LB) / max(1, |UB|)`` (the project's definition, not
        SCIP's), ``extra["scip_gap"]`` SCIP's own.

    Raises
    ------
    ImportError
        If pyscipopt is not installed.
    """
    config = MipConfig() if config is None else config
    model = validate_model(model)
    sign = 1.0 if model.sense == "min" else -1.0
    t0 = time.perf_counter()
    m, xs = build_scip(model, config)
    if start is not None:
        sol = m.createSol()
        for k, v in enumerate(np.asarray(start, dtype=np.float64)):
            m.setSolVal(sol, xs[k], float(v))
        if model.Q is not None:
            # the epigraph variable is the last one created
            t = m.getVars()[-1]
            m.setSolVal(
                sol,
                t,
                sign * (model_objective(model, start) - model.offset)
                - sign * float(model.c @ start),
            )
        m.addSol(sol, free=True)
    m.optimize()
    runtime = time.perf_counter() - t0
    status = _STATUS.get(m.getStatus(), SolveStatus.not_solved)
    x = None
    if m.getNSols():
        best = m.getBestSol()
        x = np.array([m.getSolVal(best, v) for v in xs])
        if model.integrality is not None:
            integ = np.asarray(model.integrality, dtype=bool)
            x[integ] = np.round(x[integ])
    if status in (SolveStatus.infeasible, SolveStatus.unbounded):
        x = None
    obj = model_objective(model, x) if x is not None else math.nan
    bound_min = float(m.getDualbound())
    ub_min = sign * obj if x is not None else math.inf
    gap = (
        max(0.0, ub_min - bound_min) / max(1.0, abs(ub_min))
        if x is not None
        else math.inf
    )
    if status is SolveStatus.time_limit:
        warnings.warn(
            f"SCIP stopped at its time limit ({config.time_limit:.3g} s), gap {gap:.3g}",
            SolverTimeLimitWarning,
            stacklevel=2,
        )
    return MipResult(
        status=status,
        x=x,
        objective=obj,
        bound=sign * bound_min,
        mip_gap=gap,
        runtime=runtime,
        message=str(m.getStatus()),
        extra={"scip_gap": float(m.getGap())},
    )
