"""Feature selection in Data Envelopment Analysis (SPEC S7, thesis ch. 5).

Public entry points::

    eff = efficiency(X_in, Y_out)                         # (K,) CRS input-oriented
    res = select_features(X_in, Y_out, n_outputs=p, ...)  # exact MILP / MIQP selection
    path = selection_path(X_in, Y_out, p_max=10)          # v(p), summaries, selections
    cp = cross_preference(X_in, Y_out, p)                 # Delta matrix and Pi(k')
    greedy = greedy_selection(X_in, Y_out, n_outputs=p)   # Pastor et al. (2002) baseline

The formulations (tight big-M, objectives, extensions) are stated in
:mod:`torchsvm.mip.dea`; every MILP goes through :func:`torchsvm.mip.highs.solve_model`
with a time limit.  Efficiencies are always reported from the LPs (1)-(4) re-solved for
the chosen selection, so they do not carry MIP tolerances.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchsvm.exceptions import (
    DataError,
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
)
from torchsvm.mip.dea import (
    OBJECTIVES,
    DeaModelArrays,
    build_efficiency_model,
    build_selection_model,
    nondominated_dmus,
)
from torchsvm.mip.model import MipConfig
from torchsvm.mip.solve import solve_lp_batch, solve_model
from torchsvm.types import ArrayLike, FloatArray, NDArray, SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "CrossPreference",
    "SelectionPath",
    "SelectionResult",
    "correlated_pairs",
    "cross_preference",
    "efficiency",
    "efficiency_summary",
    "greedy_selection",
    "select_features",
    "selection_path",
]

_EFF_TOL = 1e-6
_NNZ_PER_BATCH = 2_000_000
_LP_TIME_LIMIT = 600.0
_RG_MIN = 150  # reference sets above this size use row generation
_RG_BATCH = 100
_RG_ADD = 5
_RG_TOL = 1e-9


# --------------------------------------------------------------------------- validation


def _validate(X_in: ArrayLike, Y_out: ArrayLike) -> tuple[FloatArray, FloatArray]:
    X = np.asarray(X_in, dtype=np.float64)
    Y = np.asarray(Y_out, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if Y.ndim == 1:
        Y = Y[:, None]
    if X.ndim != 2 or Y.ndim != 2:
        raise DataError(f"X_in and Y_out must be 2-D, got shapes {X.shape}, {Y.shape}")
    if X.shape[0] != Y.shape[0]:
        raise DataError(f"X_in has {X.shape[0]} DMUs (rows) but Y_out has {Y.shape[0]}")
    if X.shape[0] < 1 or X.shape[1] < 1 or Y.shape[1] < 1:
        raise DataError(f"need >= 1 DMU, input and output, got {X.shape}, {Y.shape}")
    for name, A in (("X_in", X), ("Y_out", Y)):
        if not np.all(np.isfinite(A)):
            bad = np.argwhere(~np.isfinite(A))[0].tolist()
            raise DataError(f"{name} contains NaN or inf (first at row, col {bad})")
        if np.any(A < 0):
            bad = np.argwhere(A < 0)[0].tolist()
            raise DataError(f"{name} has negative values (first at row, col {bad})")
    zero_rows = np.flatnonzero(~np.any(X > 0, axis=1))
    if zero_rows.size:
        raise DataError(
            f"DMUs {zero_rows[:10].tolist()} have all-zero inputs; the CRS "
            "normalisation sum_i alpha_i x_i^k = 1 is infeasible for them"
        )
    if not np.any(Y > 0):
        raise DataError("Y_out is all zero: every efficiency would be 0")
    return X, Y


def _weight_bounds(
    weight_bounds: tuple[ArrayLike, ArrayLike] | None, M: int
) -> tuple[FloatArray, FloatArray] | None:
    if weight_bounds is None:
        return None
    L = np.broadcast_to(np.asarray(weight_bounds[0], dtype=np.float64), (M,)).copy()
    U = np.broadcast_to(np.asarray(weight_bounds[1], dtype=np.float64), (M,)).copy()
    if np.any(L < 0) or np.any(U < L) or np.any(np.isnan(L)) or np.any(np.isnan(U)):
        raise ValueError("weight_bounds (L, U) need 0 <= L <= U, no NaN")
    return L, U


def _config(time_limit: float, config: MipConfig | None) -> MipConfig:
    return config if config is not None else MipConfig(time_limit=time_limit)


# --------------------------------------------------------------------------- efficiency


def _batch_size(n_dmus: int, n_ref: int, n_cols: int, batch_size: int | None) -> int:
    if batch_size is not None:
        return max(1, int(batch_size))
    return max(1, min(n_dmus, _NNZ_PER_BATCH // max(1, n_ref * n_cols)))


def _solve_efficiency(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None,
    cfg: MipConfig,
    method: str,
    batch_size: int | None,
    row_generation: bool | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Efficiencies (S,) and weights alpha (S, N), beta (S, M) of the DMUs ``dmus``.

    With many reference DMUs the rows (2) are generated lazily: solve with a seed set
    (the best ratio y_o / sum_i x_i per output), add the most violated rows of the
    full reference set, repeat until none is violated -- the same optimum as the full
    LP, with far fewer rows (most DMUs are never binding).
    """
    use_rg = len(reference) > _RG_MIN if row_generation is None else row_generation
    if not use_rg:
        return _solve_fixed_rows(
            X, Y, dmus, reference, weight_bounds, cfg, method, batch_size
        )
    S = len(dmus)
    eff = np.zeros(S)
    alpha = np.zeros((S, X.shape[1]))
    beta = np.zeros((S, Y.shape[1]))
    ratio = Y[reference] / X[reference].sum(axis=1, keepdims=True)
    seed_rows = np.unique(reference[np.argmax(ratio, axis=0)])
    chunk = S if method == "per_dmu" else (batch_size or _RG_BATCH)
    Xr, Yr = X[reference], Y[reference]
    for start in range(0, S, chunk):
        idx = np.arange(start, min(S, start + chunk))
        rows = seed_rows
        while True:
            e, a, b = _solve_fixed_rows(
                X, Y, dmus[idx], rows, weight_bounds, cfg, method, None
            )
            viol = Yr @ b.T - Xr @ a.T  # (r, s)
            viol[np.isin(reference, rows)] = -np.inf
            top = np.argsort(-viol, axis=0)[:_RG_ADD]
            hit = np.take_along_axis(viol, top, axis=0) > _RG_TOL
            if not hit.any():
                break
            rows = np.union1d(rows, reference[top[hit]])
        eff[idx], alpha[idx], beta[idx] = e, a, b
    return eff, alpha, beta


def _solve_fixed_rows(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None,
    cfg: MipConfig,
    method: str,
    batch_size: int | None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    S = len(dmus)
    N, M = X.shape[1], Y.shape[1]
    eff = np.zeros(S)
    alpha = np.zeros((S, N))
    beta = np.zeros((S, M))
    if method == "per_dmu":
        arrays = [
            build_efficiency_model(X, Y, dmus[[b]], reference, weight_bounds)
            for b in range(S)
        ]
        results = solve_lp_batch([a.to_mip_model() for a in arrays], cfg)
        chunks = [
            (np.array([b]), a, r) for b, (a, r) in enumerate(zip(arrays, results))
        ]
    elif method == "block":
        size = _batch_size(S, len(reference), N + M, batch_size)
        chunks = []
        for start in range(0, S, size):
            idx = np.arange(start, min(S, start + size))
            a = build_efficiency_model(X, Y, dmus[idx], reference, weight_bounds)
            chunks.append((idx, a, solve_model(a.to_mip_model(), cfg)))
    else:
        raise ValueError(f"method must be 'block' or 'per_dmu', got {method!r}")
    for idx, a, r in chunks:
        if r.status == SolveStatus.infeasible:
            raise InfeasibleProblemError(
                f"efficiency LP infeasible for DMUs {dmus[idx][:5].tolist()} (weight "
                "bounds incompatible with sum_o beta_o y_o^j <= sum_i alpha_i x_i^j)"
            )
        if r.x is None or r.status != SolveStatus.optimal:
            raise SolverError(f"efficiency LP not solved: {r.status} {r.message}")
        alpha[idx] = r.x[a.layout.alpha]
        beta[idx] = r.x[a.layout.beta]
    eff = np.einsum("sm,sm->s", beta, Y[dmus])
    return np.clip(eff, 0.0, None), alpha, beta


def efficiency(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    *,
    dmus: ArrayLike | None = None,
    weight_bounds: tuple[ArrayLike, ArrayLike] | None = None,
    method: str = "block",
    batch_size: int | None = None,
    time_limit: float = 300.0,
    return_weights: bool = False,
    row_generation: bool | None = None,
) -> FloatArray | tuple[FloatArray, FloatArray, FloatArray]:
    """CRS input-oriented efficiencies E(k) of SPEC S7 (multiplier LP (1)-(4)).

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
    method : {"block", "per_dmu"}
        ``"block"``: one block-diagonal HiGHS LP per batch of DMUs; ``"per_dmu"``: one
        LP per DMU, all solved on one reused HiGHS instance.
    batch_size : int, optional
        DMUs per block model (default: as many as fit in about 2e6 nonzeros).
    time_limit : float
        Seconds per HiGHS call.
    return_weights : bool
        Also return ``alpha (S, N)`` and ``beta (S, M)``.
    row_generation : bool, optional
        Generate the rows (2) lazily (default: when more than 150 DMUs are
        non-dominated).

    Returns
    -------
    ndarray of shape (S,)
        Efficiencies in [0, 1]; at least one DMU of the full set has E = 1.

    Notes
    -----
    Only the rows (2) of non-dominated DMUs are kept (exact, see
    :func:`torchsvm.mip.dea.nondominated_dmus`).
    """
    X, Y = _validate(X_in, Y_out)
    K = X.shape[0]
    idx = np.arange(K) if dmus is None else np.asarray(dmus, dtype=np.int64).ravel()
    if idx.size and (idx.min() < 0 or idx.max() >= K):
        raise ValueError(f"dmus must be in [0, {K}), got {idx.tolist()[:10]}")
    wb = _weight_bounds(weight_bounds, Y.shape[1])
    eff, alpha, beta = _solve_efficiency(
        X,
        Y,
        idx,
        nondominated_dmus(X, Y),
        wb,
        MipConfig(time_limit=time_limit),
        method,
        batch_size,
        row_generation,
    )
    if return_weights:
        return eff, alpha, beta
    return eff


def efficiency_summary(eff: ArrayLike) -> dict[str, float]:
    """Min, max, mean, std, quartiles and IQR of a vector of efficiencies."""
    e = np.asarray(eff, dtype=np.float64)
    q1, med, q3 = np.quantile(e, [0.25, 0.5, 0.75])
    return {
        "min": float(e.min()),
        "max": float(e.max()),
        "mean": float(e.mean()),
        "std": float(e.std(ddof=1)) if e.size > 1 else 0.0,
        "q1": float(q1),
        "median": float(med),
        "q3": float(q3),
        "iqr": float(q3 - q1),
    }


def correlated_pairs(Y_out: ArrayLike, max_correlation: float) -> list[tuple[int, int]]:
    """Output pairs with ``|rho_oo'| > max_correlation`` (constraint (11)).

    Parameters
    ----------
    Y_out : array of shape (K, M)
    max_correlation : float
        Threshold in [0, 1].

    Returns
    -------
    list of (o, o')
        Pairs with ``o < o'``; constant columns have no correlation and no pairs.
    """
    if not 0.0 <= max_correlation <= 1.0:
        raise ValueError(f"max_correlation must be in [0, 1], got {max_correlation}")
    Y = np.asarray(Y_out, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.corrcoef(Y, rowvar=False)
    rho = np.atleast_2d(np.nan_to_num(rho, nan=0.0))
    i, j = np.nonzero(np.triu(np.abs(rho) > max_correlation, k=1))
    return [(int(a), int(b)) for a, b in zip(i, j)]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SelectionResult:
    """Outcome of :func:`select_features`.

    Attributes
    ----------
    selected_outputs : ndarray of int
        Chosen output columns (sorted).
    selected_inputs : ndarray of int
        Chosen input columns (all inputs when input selection is off).
    efficiencies : ndarray of shape (K,)
        LP efficiencies of every DMU under the selection.
    objective : float
        Objective of the selection, recomputed from ``efficiencies``.
    bound : float
        Proven bound of the MIP (``objective`` side of ``mip_gap``).
    status : SolveStatus
        ``optimal`` or ``time_limit`` (incumbent returned).
    mip_gap : float
        Proven relative gap.
    runtime : float
        Seconds of the MIP solve.
    greedy_outputs : ndarray of int or None
        The greedy warm start (Pastor et al. 2002) when used.
    greedy_objective : float
        Its objective (``nan`` without warm start).
    dmu : int or None
        The evaluated DMU of an individual model.
    objective_name : str
        Which objective.
    """

    selected_outputs: NDArray
    selected_inputs: NDArray
    efficiencies: FloatArray
    objective: float
    bound: float
    status: SolveStatus
    mip_gap: float
    runtime: float
    greedy_outputs: NDArray | None = None
    greedy_objective: float = float("nan")
    dmu: int | None = None
    objective_name: str = "mean"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionPath:
    """v(p) and the selections for p = 1..p_max (:func:`selection_path`).

    Attributes
    ----------
    p : ndarray of shape (P,)
    values : ndarray of shape (P,)
        Exact objective v(p).
    marginal_gains : ndarray of shape (P,)
        ``v(p) - v(p-1)`` (``v(0) = 0``).
    greedy_values : ndarray of shape (P,)
        Objective of the greedy nested selection.
    efficiencies : ndarray of shape (P, K)
    selections : list of ndarray of int
    summaries : list of dict
        :func:`efficiency_summary` per p.
    statuses, mip_gaps, runtimes : per-p solve records
    """

    p: NDArray
    values: FloatArray
    marginal_gains: FloatArray
    greedy_values: FloatArray
    efficiencies: FloatArray
    selections: list[NDArray]
    greedy_selections: list[NDArray]
    summaries: list[dict[str, float]]
    statuses: list[SolveStatus]
    mip_gaps: FloatArray
    runtimes: FloatArray
    results: list[SelectionResult] = field(default_factory=list)


@dataclass(frozen=True)
class CrossPreference:
    """Cross-preference analysis of SPEC S7.

    Attributes
    ----------
    delta : ndarray of shape (K, K)
        ``delta[k, k'] = E^(k)(z^(k')(p)) - E^(k)(z(p))``.
    pi : ndarray of shape (K,)
        ``Pi(k') = 100 / K * |{k : delta[k, k'] > tol}|``.
    joint_outputs : ndarray of int
        ``z(p)``.
    individual_outputs : ndarray of shape (K, M) of bool
        ``z^(k')(p)`` row by row.
    joint_efficiencies : ndarray of shape (K,)
    """

    delta: FloatArray
    pi: FloatArray
    joint_outputs: NDArray
    individual_outputs: NDArray
    joint_efficiencies: FloatArray
    runtime: float


# --------------------------------------------------------------------------- objective


def _aggregate(
    eff: FloatArray,
    objective: str,
    weights: FloatArray | None,
    percentile: float | None,
) -> float:
    if objective == "mean":
        return float(eff.mean())
    if objective == "weighted":
        assert weights is not None
        return float(np.dot(weights, eff) / weights.sum())
    if objective == "min":
        return float(eff.min())
    if objective == "percentile":
        assert percentile is not None
        r = int(np.floor(len(eff) * percentile / 100.0 + 1e-9))
        return float(np.sort(eff)[::-1][r - 1])
    return float(np.sum((1.0 - eff) ** 2))


def _better(a: float, b: float, objective: str) -> bool:
    return a < b - 1e-12 if objective == "quadratic" else a > b + 1e-12


def _efficient_reference(
    X: FloatArray,
    Y: FloatArray,
    wb: tuple[FloatArray, FloatArray] | None,
    cfg: MipConfig,
) -> NDArray:
    """Rows needed for every selection: efficient DMUs of the full model (no bounds)."""
    nd = nondominated_dmus(X, Y)
    if wb is not None:
        return nd
    eff, _, _ = _solve_efficiency(X, Y, nd, nd, None, cfg, "block", None)
    return nd[eff >= 1.0 - _EFF_TOL]


@dataclass
class _Problem:
    X: FloatArray
    Y: FloatArray
    evaluated: NDArray
    reference: NDArray
    objective: str
    weights: FloatArray | None
    percentile: float | None
    wb: tuple[FloatArray, FloatArray] | None
    cfg: MipConfig
    lp_cfg: MipConfig

    def subset_eff(
        self, outputs: NDArray, inputs: NDArray, dmus: NDArray | None = None
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """LP efficiencies (and weights) with only the given columns."""
        dm = self.evaluated if dmus is None else dmus
        wb = None if self.wb is None else (self.wb[0][outputs], self.wb[1][outputs])
        return _solve_efficiency(
            self.X[:, inputs],
            self.Y[:, outputs],
            dm,
            self.reference,
            wb,
            self.lp_cfg,
            "block",
            None,
        )

    def value(self, outputs: NDArray, inputs: NDArray) -> float:
        eff, _, _ = self.subset_eff(outputs, inputs)
        return _aggregate(eff, self.objective, self.weights, self.percentile)


# --------------------------------------------------------------------------- greedy


def _feasible_add(
    chosen: list[int],
    o: int,
    costs: FloatArray | None,
    budget: float | None,
    clusters: Sequence[tuple[Sequence[int], int, int]] | None,
    excluded: set[tuple[int, int]],
) -> bool:
    if costs is not None and budget is not None:
        if costs[chosen + [o]].sum() > budget + 1e-9:
            return False
    for members, _, pmax in clusters or ():
        if o in members and sum(c in members for c in chosen) + 1 > pmax:
            return False
    return not any((min(o, c), max(o, c)) in excluded for c in chosen)


def _greedy(
    prob: _Problem,
    n_outputs: int,
    n_inputs: int | None,
    costs: FloatArray | None,
    budget: float | None,
    clusters: Sequence[tuple[Sequence[int], int, int]] | None,
    excluded: set[tuple[int, int]],
) -> tuple[list[NDArray], list[float], NDArray]:
    """Nested forward selection; returns the selections and values for p = 1..n."""
    M, N = prob.Y.shape[1], prob.X.shape[1]
    all_in = np.arange(N)
    chosen: list[int] = []
    path: list[NDArray] = []
    values: list[float] = []
    for _ in range(n_outputs):
        best_o, best_v = -1, float("nan")
        for o in range(M):
            if o in chosen or not _feasible_add(
                chosen, o, costs, budget, clusters, excluded
            ):
                continue
            v = prob.value(np.array(sorted(chosen + [o])), all_in)
            if best_o < 0 or _better(v, best_v, prob.objective):
                best_o, best_v = o, v
        if best_o < 0:
            break
        chosen.append(best_o)
        path.append(np.array(sorted(chosen)))
        values.append(best_v)
    inputs = all_in
    if n_inputs is not None and path:
        outs = path[-1]
        picked: list[int] = []
        for _ in range(n_inputs):
            cand = [
                (prob.value(outs, np.array(sorted(picked + [i]))), i)
                for i in range(N)
                if i not in picked
            ]
            best = cand[0]
            for v, i in cand[1:]:
                if _better(v, best[0], prob.objective):
                    best = (v, i)
            picked.append(best[1])
        inputs = np.array(sorted(picked))
        values[-1] = prob.value(outs, inputs)
    return path, values, inputs


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
    a baseline and the MILP warm start, not optimal in general.

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
    n_outputs : int
        Steps p = 1..n_outputs.
    dmu : int, optional
        Individual version (maximise E(dmu)).
    objective, weights, percentile : see :func:`select_features`
    time_limit : float
        Per LP call.

    Returns
    -------
    selections : list of ndarray of int
        Nested selections for p = 1..n_outputs.
    values : ndarray of shape (n_outputs,)
        Their objective values.
    """
    X, Y = _validate(X_in, Y_out)
    _check_p(n_outputs, Y.shape[1], "n_outputs")
    prob = _make_problem(
        X, Y, dmu, objective, weights, percentile, None, time_limit, None
    )
    path, values, _ = _greedy(prob, n_outputs, None, None, None, None, set())
    return path, np.asarray(values)


# --------------------------------------------------------------------------- exact


def _check_p(p: int | None, total: int, name: str) -> None:
    if p is None:
        return
    if int(p) != p or p < 1:
        raise ValueError(f"{name} must be a positive integer, got {p!r}")
    if p > total:
        raise ValueError(f"{name}={p} exceeds the number of columns ({total})")


def _make_problem(
    X: FloatArray,
    Y: FloatArray,
    dmu: int | None,
    objective: str,
    weights: ArrayLike | None,
    percentile: float | None,
    wb: tuple[FloatArray, FloatArray] | None,
    time_limit: float,
    config: MipConfig | None,
) -> _Problem:
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    K = X.shape[0]
    if dmu is not None and not 0 <= int(dmu) < K:
        raise ValueError(f"dmu must be in [0, {K}), got {dmu}")
    evaluated = np.arange(K) if dmu is None else np.array([int(dmu)])
    w = None
    if objective == "weighted":
        if weights is None:
            raise ValueError("objective='weighted' needs weights= (e.g. the input)")
        w = np.asarray(weights, dtype=np.float64).ravel()
        if dmu is not None:
            w = np.ones(1)
        if w.shape != (len(evaluated),) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be >= 0, shape ({K},), positive sum")
    if objective == "percentile":
        if percentile is None or not 0 < float(percentile) <= 100:
            raise ValueError(f"percentile must be in (0, 100], got {percentile}")
        if int(np.floor(len(evaluated) * float(percentile) / 100 + 1e-9)) < 1:
            raise ValueError(f"percentile={percentile} selects no DMU of {K}")
    cfg = _config(time_limit, config)
    # NOTE: the LPs (greedy, reference set, reported efficiencies) get their own,
    # longer limit so that a short MIP limit still yields an incumbent to report.
    lp_cfg = MipConfig(time_limit=max(_LP_TIME_LIMIT, cfg.time_limit))
    return _Problem(
        X=X,
        Y=Y,
        evaluated=evaluated,
        reference=_efficient_reference(X, Y, wb, lp_cfg),
        objective=objective,
        weights=w,
        percentile=None if percentile is None else float(percentile),
        wb=wb,
        cfg=cfg,
        lp_cfg=lp_cfg,
    )


def _start_vector(
    prob: _Problem, arrays: DeaModelArrays, outputs: NDArray, inputs: NDArray
) -> FloatArray:
    """A MIP start from the LP weights of a given selection."""
    lay = arrays.layout
    x = np.zeros(arrays.n_cols)
    eff, alpha, beta = prob.subset_eff(outputs, inputs)
    x[lay.alpha[:, inputs]] = alpha
    x[lay.beta[:, outputs]] = beta
    if lay.z is not None:
        x[lay.z[outputs]] = 1.0
    if lay.z_in is not None:
        x[lay.z_in[inputs]] = 1.0
    e = np.clip(eff, 0.0, 1.0)
    if lay.eff is not None:
        x[lay.eff] = e
    if lay.lam is not None:
        if prob.objective == "min":
            x[lay.lam] = e.min()
        else:
            assert prob.percentile is not None and lay.delta is not None
            r = int(np.floor(len(e) * prob.percentile / 100.0 + 1e-9))
            top = np.argsort(-e, kind="stable")[:r]
            x[lay.delta[top]] = 1.0
            x[lay.lam] = e[top].min()
    return x


def select_features(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    n_outputs: int | None = 1,
    n_inputs: int | None = None,
    dmu: int | None = None,
    objective: str = "mean",
    weights: ArrayLike | None = None,
    percentile: float | None = None,
    weight_bounds: tuple[ArrayLike, ArrayLike] | None = None,
    output_costs: ArrayLike | None = None,
    budget: float | None = None,
    clusters: Sequence[tuple[Sequence[int], int, int]] | None = None,
    max_correlation: float | None = None,
    time_limit: float = 300.0,
    warm_start: str | None = "greedy",
    config: MipConfig | None = None,
) -> SelectionResult:
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
    weight_bounds : (L, U), optional
        Output weight bounds ``L_o z_o <= beta_o <= U_o z_o`` (arrays of shape (M,)).
    output_costs : array of shape (M,), optional
        Costs ``c_o`` with ``sum_o c_o z_o <= budget``.
    budget : float, optional
    clusters : sequence of (indices, p_min, p_max), optional
        At least ``p_min`` and at most ``p_max`` outputs of each group.
    max_correlation : float, optional
        Forbid pairs of outputs with ``|rho| > max_correlation``.
    time_limit : float
        Seconds for the MIP (and per LP).
    warm_start : {"greedy", None}
        Start HiGHS from the greedy nested selection (Pastor et al. 2002).
    config : MipConfig, optional
        Overrides ``time_limit`` with a full solver configuration.

    Returns
    -------
    SelectionResult

    Raises
    ------
    DataError
        Negative, NaN or all-zero inputs, mismatched shapes.
    ValueError
        ``n_outputs > M``, unknown objective, missing weights / percentile.
    InfeasibleProblemError
        Budget, clusters, correlation exclusion or weight bounds admit no selection.
    """
    X, Y = _validate(X_in, Y_out)
    K, N = X.shape
    M = Y.shape[1]
    _check_p(n_outputs, M, "n_outputs")
    _check_p(n_inputs, N, "n_inputs")
    if n_outputs is None and n_inputs is None:
        raise ValueError("give n_outputs and/or n_inputs")
    if n_inputs is not None and np.any(X <= 0):
        raise DataError("input selection (n_inputs) needs strictly positive inputs")
    if warm_start not in ("greedy", None):
        raise ValueError(f"warm_start must be 'greedy' or None, got {warm_start!r}")
    wb = _weight_bounds(weight_bounds, M)
    costs = None if output_costs is None else np.asarray(output_costs, float).ravel()
    if costs is not None and (costs.shape != (M,) or budget is None):
        raise ValueError(f"output_costs must have shape ({M},) and need budget=")
    for members, pmin, pmax in clusters or ():
        if any(not 0 <= int(o) < M for o in members) or pmin > pmax:
            raise ValueError(f"bad cluster {members!r} ({pmin}, {pmax})")
    excluded = [] if max_correlation is None else correlated_pairs(Y, max_correlation)
    prob = _make_problem(
        X, Y, dmu, objective, weights, percentile, wb, time_limit, config
    )
    greedy = None
    if warm_start == "greedy" and n_outputs is not None:
        path, vals, g_in = _greedy(
            prob, n_outputs, n_inputs, costs, budget, clusters, set(excluded)
        )
        if len(path) == n_outputs and _clusters_ok(path[-1], clusters):
            greedy = (path[-1], g_in, vals[-1])
    return _solve_selection(
        prob, n_outputs, n_inputs, costs, budget, clusters, excluded, greedy, dmu
    )


def _solve_selection(
    prob: _Problem,
    n_outputs: int | None,
    n_inputs: int | None,
    costs: FloatArray | None,
    budget: float | None,
    clusters: Sequence[tuple[Sequence[int], int, int]] | None,
    excluded: list[tuple[int, int]],
    greedy: tuple[NDArray, NDArray, float] | None,
    dmu: int | None,
) -> SelectionResult:
    X, Y, objective = prob.X, prob.Y, prob.objective
    K, N = X.shape
    M = Y.shape[1]
    arrays = build_selection_model(
        X,
        Y,
        prob.evaluated,
        n_outputs,
        n_inputs,
        objective,
        prob.weights,
        prob.percentile,
        prob.wb,
        costs,
        budget,
        clusters,
        excluded,
        prob.reference,
    )
    start = None
    g_out: NDArray | None = None
    g_val = float("nan")
    all_out, all_in = np.arange(M), np.arange(N)
    if greedy is not None:
        g_out, g_in, g_val = greedy
        start = _start_vector(prob, arrays, g_out, g_in)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SolverTimeLimitWarning)
        res = solve_model(arrays.to_mip_model(), prob.cfg, start=start)
    runtime = time.perf_counter() - t0
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if res.status == SolveStatus.infeasible:
        raise InfeasibleProblemError(
            f"no selection of {n_outputs} outputs / {n_inputs} inputs satisfies the "
            f"constraints (budget={budget}, clusters={clusters}, "
            f"{len(excluded)} excluded correlated pairs, "
            f"weight bounds={prob.wb is not None})"
        )
    if res.x is None:
        raise SolverError(
            f"DEA selection MIP gave no solution: {res.status} {res.message}"
        )
    lay = arrays.layout
    outs = all_out if lay.z is None else np.flatnonzero(res.x[lay.z] > 0.5)
    ins = all_in if lay.z_in is None else np.flatnonzero(res.x[lay.z_in] > 0.5)
    eff_all, _, _ = prob.subset_eff(outs, ins, np.arange(K))
    value = _aggregate(
        eff_all[prob.evaluated], objective, prob.weights, prob.percentile
    )
    if greedy is not None and _better(g_val, value, objective):
        # NOTE: only possible at a time limit (or within the MIP gap); keep the better.
        outs, ins, value = greedy
        eff_all, _, _ = prob.subset_eff(outs, ins, np.arange(K))
    return SelectionResult(
        selected_outputs=outs,
        selected_inputs=ins,
        efficiencies=eff_all,
        objective=value,
        bound=float(res.bound),
        status=res.status,
        mip_gap=float(res.mip_gap),
        runtime=runtime,
        greedy_outputs=g_out,
        greedy_objective=g_val,
        dmu=None if dmu is None else int(dmu),
        objective_name=objective,
        extra={
            "mip_objective": float(res.objective),
            "n_reference": len(prob.reference),
        },
    )


def _clusters_ok(
    outputs: NDArray, clusters: Sequence[tuple[Sequence[int], int, int]] | None
) -> bool:
    for members, pmin, pmax in clusters or ():
        n = int(np.isin(outputs, np.asarray(members)).sum())
        if not pmin <= n <= pmax:
            return False
    return True


def selection_path(
    X_in: ArrayLike,
    Y_out: ArrayLike,
    p_max: int = 10,
    *,
    objective: str = "mean",
    weights: ArrayLike | None = None,
    percentile: float | None = None,
    time_limit: float = 300.0,
    **kwargs: Any,
) -> SelectionPath:
    """Joint selection for p = 1..p_max: v(p), marginal gains, summaries, greedy values.

    Parameters
    ----------
    X_in, Y_out : arrays of shape (K, N), (K, M)
    p_max : int
        Largest p (capped at M).
    objective, weights, percentile, time_limit
        As in :func:`select_features`.
    **kwargs
        Further :func:`select_features` arguments (constraints, ``dmu``).

    Returns
    -------
    SelectionPath
    """
    X, Y = _validate(X_in, Y_out)
    p_max = min(int(p_max), Y.shape[1])
    _check_p(p_max, Y.shape[1], "p_max")
    wb = _weight_bounds(kwargs.pop("weight_bounds", None), Y.shape[1])
    costs = kwargs.pop("output_costs", None)
    costs = None if costs is None else np.asarray(costs, float).ravel()
    budget = kwargs.pop("budget", None)
    clusters = kwargs.pop("clusters", None)
    max_corr = kwargs.pop("max_correlation", None)
    config = kwargs.pop("config", None)
    dmu = kwargs.pop("dmu", None)
    if kwargs:
        raise TypeError(f"unexpected arguments {sorted(kwargs)}")
    excluded = [] if max_corr is None else correlated_pairs(Y, max_corr)
    prob = _make_problem(
        X, Y, dmu, objective, weights, percentile, wb, time_limit, config
    )
    path, vals, g_in = _greedy(
        prob, p_max, None, costs, budget, clusters, set(excluded)
    )
    res = []
    for p in range(1, p_max + 1):
        greedy = None
        if len(path) >= p and _clusters_ok(path[p - 1], clusters):
            greedy = (path[p - 1], g_in, vals[p - 1])
        res.append(
            _solve_selection(
                prob, p, None, costs, budget, clusters, excluded, greedy, dmu
            )
        )
    values = np.array([r.objective for r in res])
    return SelectionPath(
        p=np.arange(1, p_max + 1),
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
    joint: SelectionResult | None = None,
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
        Per MILP.
    tol : float
        Threshold for a strict preference.
    joint : SelectionResult, optional
        A joint selection already computed for this p.

    Returns
    -------
    CrossPreference

    Notes
    -----
    Individual optima need not be unique; the selection HiGHS returns is used.
    """
    X, Y = _validate(X_in, Y_out)
    K, M = Y.shape
    _check_p(p, M, "p")
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
    prob = _make_problem(X, Y, None, "mean", None, None, None, time_limit, None)
    all_in = np.arange(X.shape[1])
    cache: dict[bytes, FloatArray] = {}
    delta = np.zeros((K, K))
    for kp in range(K):
        key = indiv[kp].tobytes()
        if key not in cache:
            cache[key], _, _ = prob.subset_eff(np.flatnonzero(indiv[kp]), all_in)
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
