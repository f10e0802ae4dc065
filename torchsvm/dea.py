"""Feature selection in Data Envelopment Analysis: the functional API (SPEC S7).

Public entry points::

    eff = efficiency(X_in, Y_out)                         # (K,) CRS input-oriented
    res = select_features(X_in, Y_out, n_outputs=p, ...)  # exact selection
    path = selection_path(X_in, Y_out, p_max=10)          # v(p), summaries, selections
    cp = cross_preference(X_in, Y_out, p)                 # Delta matrix and Pi(k')
    greedy = greedy_selection(X_in, Y_out, n_outputs=p)   # Pastor et al. (2002) baseline

Thin wrappers: the problems and their validation are in :mod:`torchsvm.problems.dea`,
the models and solvers in :mod:`torchsvm.mip.dea` (every MILP with a time limit), the
estimator in :mod:`torchsvm.estimators.dea`.  Efficiencies are always reported from
the LPs re-solved for the chosen selection, so they do not carry MIP tolerances.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from torchsvm.mip.dea import (
    SelectionEvaluator,
    efficient_reference,
    greedy_path,
    nondominated_dmus,
    solve_efficiencies,
    solve_selection,
)
from torchsvm.mip.model import MipConfig
from torchsvm.problems.dea import (
    CrossPreference,
    DeaSelectionProblem,
    DeaSelectionResult,
    SelectionConstraints,
    SelectionPath,
    check_count,
    check_dmus,
    correlated_pairs,
    efficiency_summary,
    validate_dea_data,
    validate_weight_bounds,
)
from torchsvm.types import ArrayLike, FloatArray, NDArray

__all__ = [
    "CrossPreference",
    "DeaSelectionResult",
    "SelectionConstraints",
    "SelectionPath",
    "correlated_pairs",
    "cross_preference",
    "efficiency",
    "efficiency_summary",
    "greedy_selection",
    "select_features",
    "selection_path",
]

_CONSTRAINT_OPTIONS = (
    "weight_bounds",
    "output_costs",
    "budget",
    "clusters",
    "max_correlation",
)


def _check_time_limit(time_limit: float) -> float:
    t = float(time_limit)
    if not (t > 0 and np.isfinite(t)):
        raise ValueError(f"time_limit must be finite and > 0, got {time_limit}")
    return t


def efficiency(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    *,
    dmus: ArrayLike | None = None,
    weight_bounds: tuple[ArrayLike, ArrayLike] | None = None,
    method: str = "envelopment",
    time_limit: float = 300.0,
    return_weights: bool = False,
) -> FloatArray | tuple[FloatArray, FloatArray, FloatArray]:
    """CRS input-oriented efficiencies E(k) of SPEC S7 (LP (1)-(4)).

    Parameters
    ----------
    X_in : array of shape (K, N)
        Non-negative inputs; every DMU needs a positive input.
    Y_out : array of shape (K, M)
        Non-negative outputs.
    dmus : array of int, optional
        Evaluate only these DMUs (default all K).
    weight_bounds : (L, U), optional
        Absolute output-weight bounds ``L_o <= beta_o <= U_o``.
    method : {"envelopment", "multiplier"}
        One persistent HiGHS envelopment LP re-solved from the previous basis with
        column generation (default), or one persistent multiplier LP (1)-(4)
        re-solved DMU by DMU (a second, independent formulation).
    time_limit : float
        Seconds for all LPs together.
    return_weights : bool
        Also return ``alpha (S, N)`` and ``beta (S, M)``.

    Returns
    -------
    ndarray of shape (S,)
        Efficiencies in [0, 1]; at least one DMU of the full set has E = 1.

    Raises
    ------
    DataError
        Malformed data (see :func:`torchsvm.problems.dea.validate_dea_data`).
    ValueError
        Fractional or out-of-range ``dmus``, bad weight bounds or method.
    SolverError
        The LPs did not finish within ``time_limit``.
    """
    X, Y = validate_dea_data(X_in, Y_out)
    idx = check_dmus(dmus, X.shape[0])
    wb = validate_weight_bounds(weight_bounds, Y.shape[1])
    t = _check_time_limit(time_limit)
    batch = solve_efficiencies(
        X,
        Y,
        idx,
        nondominated_dmus(X, Y),
        wb,
        MipConfig(time_limit=t),
        deadline=time.perf_counter() + t,
        method=method,
    )
    if return_weights:
        return batch.efficiencies, batch.alpha, batch.beta
    return batch.efficiencies


def _problem(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    n_outputs: Any,
    kwargs: dict[str, Any],
    constraint_options: dict[str, Any],
) -> DeaSelectionProblem:
    unknown = sorted(set(constraint_options) - set(_CONSTRAINT_OPTIONS))
    if unknown:
        raise TypeError(
            f"unexpected arguments {unknown}; constraints are {_CONSTRAINT_OPTIONS}"
        )
    X, Y = validate_dea_data(X_in, Y_out)
    cons = SelectionConstraints.make(Y, **constraint_options)
    return DeaSelectionProblem.make(
        X, Y, n_outputs=n_outputs, constraints=cons, **kwargs
    )


def select_features(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    n_outputs: int | None = 1,
    *,
    n_inputs: int | None = None,
    dmu: int | None = None,
    objective: str = "mean",
    weights: ArrayLike | None = None,
    percentile: float | None = None,
    time_limit: float = 300.0,
    warm_start: str | None = "greedy",
    config: MipConfig | None = None,
    method: str = "auto",
    **constraint_options: Any,
) -> DeaSelectionResult:
    """Exact output (and input) selection: OSDEA / FSDEA, individual or joint (SPEC S7).

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
        Inputs and outputs (outputs usually scaled by their range).
    n_outputs : int or None
        Number p of outputs to select (``None``: keep all outputs, select inputs only).
    n_inputs : int, optional
        Number of inputs to select (FSDEA); inputs must then be strictly positive.
    dmu : int, optional
        Individual model for this DMU; default the joint model over all DMUs.
    objective : {"mean", "weighted", "min", "percentile", "quadratic"}
        Mean efficiency, weighted mean (``weights``), minimum, the
        ``floor(K pi / 100)``-th largest efficiency (``percentile=pi``), or the squared
        distance ``sum_k (1 - E_k)^2`` to full efficiency (an MIQP).
    weights : array of shape (K,), optional
        For ``objective="weighted"``.
    percentile : float, optional
        For ``objective="percentile"``.
    time_limit : float
        Seconds for the whole call (greedy start and LPs included).
    warm_start : {"greedy", None}
        Start from the greedy nested selection (Pastor et al. 2002).
    config : MipConfig, optional
        ``mip_rel_gap`` (default 1e-4), threads, tolerances.
    method : {"auto", "benders", "big_m"}
        See :func:`torchsvm.mip.dea.solve_selection`.
    **constraint_options
        ``weight_bounds=(L, U)``, ``output_costs=`` with ``budget=``,
        ``clusters=[(indices, p_min, p_max), ...]``, ``max_correlation=``
        (:class:`~torchsvm.problems.dea.SelectionConstraints`).

    Returns
    -------
    DeaSelectionResult

    Raises
    ------
    DataError
        Negative, NaN or all-zero inputs, mismatched shapes.
    ValueError
        ``n_outputs > M``, unknown objective, missing weights / percentile, negative
        costs, malformed clusters.
    InfeasibleProblemError
        Budget, clusters, correlation exclusion or weight bounds admit no selection.
    """
    t = _check_time_limit(time_limit)
    prob = _problem(
        X_in,
        Y_out,
        n_outputs,
        {
            "n_inputs": n_inputs,
            "dmu": dmu,
            "objective": objective,
            "weights": weights,
            "percentile": percentile,
        },
        constraint_options,
    )
    cfg = config if config is not None else MipConfig(time_limit=t)
    return solve_selection(
        prob, time_limit=t, config=cfg, warm_start=warm_start, method=method
    )


def greedy_selection(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    n_outputs: int,
    *,
    dmu: int | None = None,
    objective: str = "mean",
    weights: ArrayLike | None = None,
    percentile: float | None = None,
    time_limit: float = 300.0,
) -> tuple[list[NDArray], FloatArray]:
    """Greedy nested output selection of Pastor, Ruiz and Sirvent (2002).

    Starting from no output, add at each step the output whose addition gives the best
    objective (mean efficiency by default) given those already chosen.  SPEC S7: it is
    a baseline and the warm start, not optimal in general.

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
    n_outputs : int
        Steps p = 1..n_outputs.
    dmu : int, optional
        Individual version (maximise E(dmu)).
    objective, weights, percentile : see :func:`select_features`
    time_limit : float
        Seconds for the whole call.

    Returns
    -------
    selections : list of ndarray of int
        Nested selections for p = 1..n_outputs.
    values : ndarray of shape (n_outputs,)
        Their objective values.
    """
    t = _check_time_limit(time_limit)
    deadline = time.perf_counter() + t
    prob = _problem(
        X_in,
        Y_out,
        n_outputs,
        {
            "dmu": dmu,
            "objective": objective,
            "weights": weights,
            "percentile": percentile,
        },
        {},
    )
    cfg = MipConfig(time_limit=t)
    reference, full = efficient_reference(prob.X, prob.Y, None, cfg, deadline)
    assert prob.n_outputs is not None and full is not None
    path, values = greedy_path(
        SelectionEvaluator(prob, reference, cfg, deadline),
        prob.n_outputs,
        e_upper=full[prob.evaluated],
    )
    return path, np.asarray(values)


def selection_path(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    p_max: int = 10,
    *,
    objective: str = "mean",
    weights: ArrayLike | None = None,
    percentile: float | None = None,
    time_limit: float = 300.0,
    dmu: int | None = None,
    config: MipConfig | None = None,
    **constraint_options: Any,
) -> SelectionPath:
    """Selection for p = 1..p_max: v(p), marginal gains, summaries, greedy values.

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
    p_max : int
        Largest p (capped at M).
    objective, weights, percentile, dmu, config
        As in :func:`select_features`.
    time_limit : float
        Seconds per p.
    **constraint_options
        As in :func:`select_features`.

    Returns
    -------
    SelectionPath
    """
    X, Y = validate_dea_data(X_in, Y_out)
    p_top = check_count(p_max, np.iinfo(np.int64).max, "p_max")
    assert p_top is not None
    p_top = min(p_top, Y.shape[1])
    res = [
        select_features(
            X,
            Y,
            n_outputs=p,
            dmu=dmu,
            objective=objective,
            weights=weights,
            percentile=percentile,
            time_limit=time_limit,
            config=config,
            **constraint_options,
        )
        for p in range(1, p_top + 1)
    ]
    values = np.array([r.objective for r in res])
    return SelectionPath(
        p=np.arange(1, p_top + 1),
        values=values,
        marginal_gains=np.diff(np.concatenate([[0.0], values])),
        greedy_values=np.array([r.greedy_objective for r in res]),
        efficiencies=np.stack([r.efficiencies for r in res]),
        selections=[r.selected_outputs for r in res],
        greedy_selections=[
            r.greedy_outputs if r.greedy_outputs is not None else np.array([], int)
            for r in res
        ],
        summaries=[efficiency_summary(r.efficiencies) for r in res],
        statuses=[r.status for r in res],
        mip_gaps=np.array([r.mip_gap for r in res]),
        runtimes=np.array([r.runtime for r in res]),
        results=res,
    )


def cross_preference(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    p: int,
    *,
    time_limit: float = 300.0,
    tol: float = 1e-6,
    joint: DeaSelectionResult | None = None,
) -> CrossPreference:
    """Cross-preference analysis of SPEC S7 (mean-efficiency joint model).

    ``delta[k, k'] = E^(k)(z^(k')(p)) - E^(k)(z(p))`` compares DMU k's efficiency under
    DMU k''s individually optimal selection with the joint one;
    ``Pi(k') = 100 / K * |{k : delta[k, k'] > tol}|`` is the share of DMUs preferring k''s
    selection.

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
    p : int
        Number of outputs.
    time_limit : float
        Per selection (the joint one and each individual one).
    tol : float
        Threshold for a strict preference.
    joint : DeaSelectionResult, optional
        A joint selection already computed for this p.

    Returns
    -------
    CrossPreference

    Notes
    -----
    Individual optima need not be unique; the selection HiGHS returns is used.
    """
    X, Y = validate_dea_data(X_in, Y_out)
    K, M = Y.shape
    check_count(p, M, "p")
    t0 = time.perf_counter()
    if joint is None:
        joint = select_features(X, Y, n_outputs=p, time_limit=time_limit)
    indiv = np.zeros((K, M), dtype=bool)
    for k in range(K):
        # NOTE: individual MILPs are small; the greedy start would cost more LPs
        # than the MILP itself.
        r = select_features(
            X, Y, n_outputs=p, dmu=k, time_limit=time_limit, warm_start=None
        )
        indiv[k, r.selected_outputs] = True
    cfg = MipConfig(time_limit=time_limit)
    reference, _ = efficient_reference(X, Y, None, cfg)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=p)
    evaluate = SelectionEvaluator(prob, reference, cfg, None)
    cache: dict[bytes, FloatArray] = {}
    delta = np.zeros((K, K))
    for kp in range(K):
        key = indiv[kp].tobytes()
        if key not in cache:
            cache[key] = evaluate(np.flatnonzero(indiv[kp])).efficiencies
        delta[:, kp] = cache[key] - joint.efficiencies
    pi = 100.0 / K * (delta > tol).sum(axis=0)
    return CrossPreference(
        delta=delta,
        pi=pi,
        joint_outputs=joint.selected_outputs,
        individual_outputs=indiv,
        joint_efficiencies=joint.efficiencies,
        runtime=time.perf_counter() - t0,
    )
