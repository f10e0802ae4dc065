r"""DEA feature-selection problems: specs, validation and results (SPEC S7, thesis ch. 5).

Pure data: nothing here solves an LP.  The models are stated in
:mod:`torchsvm.mip.dea`; the functional API is :mod:`torchsvm.dea` and the estimator
:class:`torchsvm.estimators.dea.DeaOutputSelector`.

Notation: K DMUs with inputs ``X (K, N) >= 0`` and outputs ``Y (K, M) >= 0``.  The CRS
input-oriented efficiency of DMU k over the output set ``S`` is::

    E_k(S) = max  sum_{o in S} beta_o y_o^k
             s.t. sum_{o in S} beta_o y_o^j - sum_i alpha_i x_i^j <= 0   (all j)
                  sum_i alpha_i x_i^k = 1,   alpha, beta >= 0

and a selection problem chooses ``S`` with ``|S| = p`` (plus the constraints of
:class:`SelectionConstraints`) to maximise an aggregate (:class:`SelectionObjective`)
of the efficiencies of the evaluated DMUs (one DMU: individual model OSDEA(k); all:
joint model OSDEA(p)).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from torchsvm.exceptions import DataError
from torchsvm.types import ArrayLike, FloatArray, NDArray, SolveStatus

__all__ = [
    "OBJECTIVES",
    "CrossPreference",
    "DeaSelectionProblem",
    "DeaSelectionResult",
    "OutputCluster",
    "SelectionConstraints",
    "SelectionObjective",
    "SelectionPath",
    "aggregate",
    "check_count",
    "check_dmus",
    "correlated_pairs",
    "efficiency_summary",
    "validate_dea_data",
    "validate_weight_bounds",
]

OBJECTIVES: tuple[str, ...] = ("mean", "weighted", "min", "percentile", "quadratic")


# --------------------------------------------------------------------------- checks


def validate_dea_data(
    X_in: ArrayLike, Y_out: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Inputs ``X (K, N)`` and outputs ``Y (K, M)`` as float64, checked.

    Raises
    ------
    DataError
        Wrong dimensions, mismatched rows, NaN / inf, negative values, a DMU with
        all-zero inputs (its normalisation row is infeasible) or all-zero outputs.
    """
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


def check_count(p: Any, total: int, name: str) -> int | None:
    """A positive integer count ``<= total`` (``None`` passes through).

    Raises
    ------
    ValueError
        Non-integral, NaN, infinite, non-positive or too large values, naming ``name``.
    """
    if p is None:
        return None
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise ValueError(f"{name} must be a positive integer, got {p!r}")
    if not math.isfinite(float(p)) or float(p) != int(p) or p < 1:
        raise ValueError(f"{name} must be a positive integer, got {p!r}")
    if p > total:
        raise ValueError(f"{name}={p} exceeds the number of columns ({total})")
    return int(p)


def check_dmus(dmus: ArrayLike | None, K: int) -> NDArray:
    """DMU indices in ``[0, K)`` as int64 (default all K).

    Raises
    ------
    ValueError
        Non-integral (e.g. 2.5, which would otherwise be truncated) or out-of-range
        indices.
    """
    if dmus is None:
        return np.arange(K)
    raw = np.asarray(dmus).ravel()
    if raw.dtype == bool:
        raise ValueError("dmus must be integer indices, got a boolean array")
    if raw.size and not np.issubdtype(raw.dtype, np.integer):
        as_float = raw.astype(np.float64)
        if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
            raise ValueError(f"dmus must be integer indices, got {raw.tolist()[:10]}")
    idx = raw.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= K):
        raise ValueError(f"dmus must be in [0, {K}), got {idx.tolist()[:10]}")
    return idx


def validate_weight_bounds(
    weight_bounds: tuple[ArrayLike, ArrayLike] | None, M: int
) -> tuple[FloatArray, FloatArray] | None:
    """Output-weight bounds ``(L, U)`` broadcast to shape (M,), ``0 <= L <= U``."""
    if weight_bounds is None:
        return None
    if len(weight_bounds) != 2:
        raise ValueError("weight_bounds must be a pair (L, U)")
    try:
        L = np.broadcast_to(np.asarray(weight_bounds[0], dtype=np.float64), (M,)).copy()
        U = np.broadcast_to(np.asarray(weight_bounds[1], dtype=np.float64), (M,)).copy()
    except ValueError as err:
        raise ValueError(
            f"weight_bounds must broadcast to shape ({M},): {err}"
        ) from err
    if np.any(np.isnan(L)) or np.any(np.isnan(U)) or np.any(L < 0) or np.any(U < L):
        raise ValueError("weight_bounds (L, U) need 0 <= L <= U, no NaN")
    return L, U


def correlated_pairs(Y_out: ArrayLike, max_correlation: float) -> list[tuple[int, int]]:
    """Output pairs with ``|rho_oo'| > max_correlation`` (constraint (11)).

    Parameters
    ----------
    Y_out : array of shape (K, M)
        Finite outputs.
    max_correlation : float
        Threshold in [0, 1].

    Returns
    -------
    list of (o, o')
        Pairs with ``o < o'``; constant columns have no correlation and no pairs.

    Raises
    ------
    ValueError
        A threshold outside [0, 1] or NaN.
    DataError
        NaN or inf in ``Y_out`` (a NaN correlation would silently allow the pair).
    """
    mc = float(max_correlation)
    if not 0.0 <= mc <= 1.0:
        raise ValueError(f"max_correlation must be in [0, 1], got {max_correlation}")
    Y = np.asarray(Y_out, dtype=np.float64)
    if Y.ndim != 2:
        raise DataError(f"Y_out must be 2-D, got shape {Y.shape}")
    if not np.all(np.isfinite(Y)):
        bad = np.argwhere(~np.isfinite(Y))[0].tolist()
        raise DataError(f"Y_out contains NaN or inf (first at row, col {bad})")
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.corrcoef(Y, rowvar=False)
    # NOTE: only constant columns give NaN here (Y is finite): they correlate with none.
    rho = np.atleast_2d(np.nan_to_num(rho, nan=0.0))
    i, j = np.nonzero(np.triu(np.abs(rho) > mc, k=1))
    return [(int(a), int(b)) for a, b in zip(i, j)]


def efficiency_summary(eff: ArrayLike) -> dict[str, float]:
    """Min, max, mean, std, quartiles and IQR of a non-empty vector of efficiencies.

    Raises
    ------
    ValueError
        An empty vector or NaN.
    """
    e = np.asarray(eff, dtype=np.float64).ravel()
    if e.size == 0:
        raise ValueError("efficiency_summary needs at least one efficiency, got none")
    if np.any(np.isnan(e)):
        raise ValueError("efficiency_summary got NaN efficiencies")
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


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True)
class SelectionObjective:
    """Aggregate of the evaluated DMUs' efficiencies (SPEC S7 objectives).

    Attributes
    ----------
    name : {"mean", "weighted", "min", "percentile", "quadratic"}
        Mean, weighted mean, minimum, the ``r = floor(S pi / 100)``-th largest
        efficiency, or ``sum_k (1 - E_k)^2`` (minimised).
    weights : ndarray of shape (S,) or None
        ``w_k`` for ``"weighted"``.
    percentile : float or None
        ``pi`` in (0, 100] for ``"percentile"``.
    """

    name: str = "mean"
    weights: FloatArray | None = None
    percentile: float | None = None

    @classmethod
    def make(
        cls,
        name: str,
        n_evaluated: int,
        weights: ArrayLike | None = None,
        percentile: float | None = None,
    ) -> SelectionObjective:
        """Validate an objective for ``n_evaluated`` DMUs."""
        if name not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {name!r}")
        w = None
        if name == "weighted":
            if weights is None:
                raise ValueError("objective='weighted' needs weights= (e.g. the input)")
            w = np.asarray(weights, dtype=np.float64).ravel()
            if n_evaluated == 1:
                w = np.ones(1)
            if (
                w.shape != (n_evaluated,)
                or not np.all(np.isfinite(w))
                or np.any(w < 0)
                or w.sum() <= 0
            ):
                raise ValueError(
                    f"weights must be finite, >= 0, of shape ({n_evaluated},) with a "
                    "positive sum"
                )
        pct = None
        if name == "percentile":
            if percentile is None or not 0 < float(percentile) <= 100:
                raise ValueError(f"percentile must be in (0, 100], got {percentile}")
            pct = float(percentile)
            if int(np.floor(n_evaluated * pct / 100 + 1e-9)) < 1:
                raise ValueError(
                    f"percentile={percentile} selects no DMU of {n_evaluated}"
                )
        return cls(name=name, weights=w, percentile=pct)

    @property
    def maximise(self) -> bool:
        """Whether larger values are better (all but ``"quadratic"``)."""
        return self.name != "quadratic"

    def better(self, a: float, b: float) -> bool:
        """Whether value ``a`` is strictly better than ``b``."""
        return a > b + 1e-12 if self.maximise else a < b - 1e-12


def aggregate(eff: FloatArray, objective: SelectionObjective) -> float:
    """Objective value of the efficiencies ``eff (S,)`` of the evaluated DMUs."""
    name = objective.name
    if name == "mean":
        return float(eff.mean())
    if name == "weighted":
        assert objective.weights is not None
        return float(np.dot(objective.weights, eff) / objective.weights.sum())
    if name == "min":
        return float(eff.min())
    if name == "percentile":
        assert objective.percentile is not None
        r = int(np.floor(len(eff) * objective.percentile / 100.0 + 1e-9))
        return float(np.sort(eff)[::-1][r - 1])
    return float(np.sum((1.0 - eff) ** 2))


@dataclass(frozen=True)
class OutputCluster:
    """A group of outputs of which ``p_min..p_max`` are chosen (constraint (10))."""

    members: NDArray
    p_min: int
    p_max: int


@dataclass(frozen=True)
class SelectionConstraints:
    """Side constraints of a selection (SPEC S7 extensions, constraints (5)-(11)).

    Attributes
    ----------
    weight_bounds : (L, U) arrays of shape (M,) or None
        ``L_o z_o <= beta_o <= U_o z_o``.
    output_costs : ndarray of shape (M,) or None
        ``c_o >= 0`` with ``sum_o c_o z_o <= budget``.
    budget : float or None
    clusters : tuple of OutputCluster
    excluded_pairs : tuple of (o, o')
        Pairs that may not both be chosen (from ``max_correlation``).
    """

    weight_bounds: tuple[FloatArray, FloatArray] | None = None
    output_costs: FloatArray | None = None
    budget: float | None = None
    clusters: tuple[OutputCluster, ...] = ()
    excluded_pairs: tuple[tuple[int, int], ...] = ()

    @classmethod
    def make(
        cls,
        Y: FloatArray,
        *,
        weight_bounds: tuple[ArrayLike, ArrayLike] | None = None,
        output_costs: ArrayLike | None = None,
        budget: float | None = None,
        clusters: Sequence[tuple[Sequence[int], int, int]] | None = None,
        max_correlation: float | None = None,
    ) -> SelectionConstraints:
        """Validate the constraints against validated outputs ``Y (K, M)``."""
        M = Y.shape[1]
        wb = validate_weight_bounds(weight_bounds, M)
        costs = None
        if output_costs is not None or budget is not None:
            if output_costs is None or budget is None:
                raise ValueError("output_costs and budget must be given together")
            costs = np.asarray(output_costs, dtype=np.float64).ravel()
            if costs.shape != (M,):
                raise ValueError(
                    f"output_costs must have shape ({M},), got {costs.shape}"
                )
            if not np.all(np.isfinite(costs)) or np.any(costs < 0):
                bad = np.flatnonzero(~np.isfinite(costs) | (costs < 0))[:5].tolist()
                raise ValueError(
                    f"output_costs must be finite and >= 0 (outputs {bad} are not)"
                )
            if not math.isfinite(float(budget)):
                raise ValueError(f"budget must be finite, got {budget}")
            budget = float(budget)
        groups = []
        for spec in clusters or ():
            if len(spec) != 3:
                raise ValueError(f"a cluster is (indices, p_min, p_max), got {spec!r}")
            members, pmin, pmax = spec
            idx = np.asarray(members).ravel()
            ok = idx.size > 0 and np.issubdtype(idx.dtype, np.integer)
            if not ok or np.any(idx < 0) or np.any(idx >= M):
                raise ValueError(
                    f"bad cluster {members!r}: need output indices in [0, {M})"
                )
            if int(pmin) != pmin or int(pmax) != pmax or not 0 <= pmin <= pmax:
                raise ValueError(
                    f"bad cluster {members!r}: need integers 0 <= p_min <= p_max, got "
                    f"({pmin}, {pmax})"
                )
            groups.append(
                OutputCluster(np.unique(idx.astype(np.int64)), int(pmin), int(pmax))
            )
        pairs = (
            ()
            if max_correlation is None
            else tuple(correlated_pairs(Y, max_correlation))
        )
        return cls(
            weight_bounds=wb,
            output_costs=costs,
            budget=budget,
            clusters=tuple(groups),
            excluded_pairs=pairs,
        )

    @property
    def only_cardinality(self) -> bool:
        """Whether nothing but ``|S| = p`` (and weight bounds) restricts ``S``."""
        return (
            self.output_costs is None and not self.clusters and not self.excluded_pairs
        )

    def can_add(self, chosen: Sequence[int], o: int) -> bool:
        """Whether output ``o`` can join ``chosen`` without breaking a max-side limit."""
        if self.output_costs is not None and self.budget is not None:
            if self.output_costs[list(chosen) + [o]].sum() > self.budget + 1e-9:
                return False
        for g in self.clusters:
            if o in g.members and np.isin(chosen, g.members).sum() + 1 > g.p_max:
                return False
        excl = set(self.excluded_pairs)
        return not any((min(o, c), max(o, c)) in excl for c in chosen)

    def admits(self, outputs: NDArray) -> bool:
        """Whether a complete selection satisfies every constraint."""
        out = np.asarray(outputs, dtype=np.int64)
        if self.output_costs is not None and self.budget is not None:
            if self.output_costs[out].sum() > self.budget + 1e-9:
                return False
        for g in self.clusters:
            if not g.p_min <= int(np.isin(out, g.members).sum()) <= g.p_max:
                return False
        s = set(out.tolist())
        return not any(a in s and b in s for a, b in self.excluded_pairs)


@dataclass(frozen=True)
class DeaSelectionProblem:
    """One OSDEA / FSDEA selection problem (SPEC S7).

    Attributes
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
        Validated inputs and outputs.
    n_outputs : int or None
        ``p`` (``None``: keep every output, select inputs only).
    n_inputs : int or None
        Inputs to select (FSDEA), or ``None`` to keep all.
    dmu : int or None
        Individual model for this DMU; ``None`` is the joint model over all DMUs.
    objective : SelectionObjective
    constraints : SelectionConstraints
    """

    X: FloatArray
    Y: FloatArray
    n_outputs: int | None
    n_inputs: int | None
    dmu: int | None
    objective: SelectionObjective
    constraints: SelectionConstraints

    @classmethod
    def make(
        cls,
        X_in: ArrayLike,
        Y_out: ArrayLike,
        *,
        n_outputs: Any = 1,
        n_inputs: Any = None,
        dmu: Any = None,
        objective: str = "mean",
        weights: ArrayLike | None = None,
        percentile: float | None = None,
        constraints: SelectionConstraints | None = None,
    ) -> DeaSelectionProblem:
        """Validate data and parameters into a problem."""
        X, Y = validate_dea_data(X_in, Y_out)
        K, N = X.shape
        M = Y.shape[1]
        p = check_count(n_outputs, M, "n_outputs")
        pt = check_count(n_inputs, N, "n_inputs")
        if p is None and pt is None:
            raise ValueError("give n_outputs and/or n_inputs")
        if pt is not None and np.any(X <= 0):
            raise DataError("input selection (n_inputs) needs strictly positive inputs")
        k = None
        if dmu is not None:
            k = int(check_dmus([dmu], K)[0]) if np.ndim(dmu) == 0 else None
            if k is None:
                raise ValueError(f"dmu must be one index in [0, {K}), got {dmu!r}")
        n_eval = K if k is None else 1
        obj = SelectionObjective.make(objective, n_eval, weights, percentile)
        cons = constraints if constraints is not None else SelectionConstraints()
        return cls(
            X=X, Y=Y, n_outputs=p, n_inputs=pt, dmu=k, objective=obj, constraints=cons
        )

    @property
    def evaluated(self) -> NDArray:
        """DMUs whose efficiencies enter the objective (shape (S,))."""
        K = self.X.shape[0]
        return np.arange(K) if self.dmu is None else np.array([self.dmu])


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DeaSelectionResult:
    """Outcome of a DEA output / input selection.

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
        Proven bound on the optimal objective.
    status : SolveStatus
        ``optimal`` or ``time_limit`` (incumbent returned).
    mip_gap : float
        Proven relative gap ``|bound - objective| / max(|objective|, 1e-10)``.
    runtime : float
        Seconds of the whole call (greedy start included).
    greedy_outputs : ndarray of int or None
        The greedy start (Pastor et al. 2002) when used.
    greedy_objective : float
        Its objective (``nan`` without it).
    dmu : int or None
        The evaluated DMU of an individual model.
    objective_name : str
    method : str
        ``"benders"`` or ``"big_m"`` (see :mod:`torchsvm.mip.dea`).
    extra : dict
        Solver details (iterations, cuts, reference rows).
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
    method: str = "big_m"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionPath:
    """v(p) and the selections for p = 1..p_max.

    Attributes
    ----------
    p : ndarray of shape (P,)
    values : ndarray of shape (P,)
        Objective v(p) of the returned selections.
    marginal_gains : ndarray of shape (P,)
        ``v(p) - v(p-1)`` (``v(0) = 0``).
    greedy_values : ndarray of shape (P,)
        Objective of the greedy nested selection.
    efficiencies : ndarray of shape (P, K)
    selections, greedy_selections : list of ndarray of int
    summaries : list of dict
        :func:`efficiency_summary` per p.
    statuses, mip_gaps, runtimes : per-p solve records
    results : list of DeaSelectionResult
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
    results: list[DeaSelectionResult] = field(default_factory=list)


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
    runtime : float
    """

    delta: FloatArray
    pi: FloatArray
    joint_outputs: NDArray
    individual_outputs: NDArray
    joint_efficiencies: FloatArray
    runtime: float
