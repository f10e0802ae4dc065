"""Cost-sensitive feature selection for SVMs: (P1) MILP, (P2) QP, cardinality MIQP (SPEC S6).

Notation: rows ``i = 1..n`` with ``x_i in R^d``, ``y_i in {-1, +1}``, optional row
weights ``v_i > 0`` (cluster sizes after k-means compression, 1 otherwise); ``I+`` / ``I-``
the positive / negative rows; feature costs ``c_k >= 0`` (1 = fewest features).

Rate floors (SPEC S6, thesis ch. 4): ``p*(+1)`` on the TPR and ``p*(-1)`` on the TNR,
either ``p* = p0`` or ``p* = p0 + sqrt(-log(alpha) / (2 |I+-|))`` (Hoeffding margin);
The problem data, floors and their validation live in
:mod:`torchsvm.problems.selection` (:func:`~torchsvm.problems.selection.rate_floor`). A floor above 1 is reported as infeasible before any solve.

(P1) MILP, columns ``[w (d), b, z (n), delta (d)]`` (thesis ch. 4, eq. (P1))::

    min   sum_k c_k delta_k
    s.t.  y_i (w . x_i + b) >= 1 - M2 (1 - z_i)             i = 1..n        (1)
          sum_{i in I+} v_i z_i >= p*(+1) sum_{i in I+} v_i                  (2)
          sum_{i in I-} v_i z_i >= p*(-1) sum_{i in I-} v_i                  (3)
          -M3 delta_k <= w_k <= M3 delta_k                 k = 1..d        (4)
          z, delta binary;  b free.

(2)-(3) are the SPEC's ``sum_i z_i (1 +- y_i) >= p* sum_i (1 +- y_i)`` divided by 2.
With unit weights the right-hand side is rounded up to the next integer (``z`` is
binary), which only removes HiGHS tolerance noise. Warm start (:func:`selection_start`):
a linear SVM ``(w, b)`` on all features, scaled by ``s = 1 / tau`` where ``tau`` is the
largest margin level that keeps enough rows of each class above it; ``z_i = 1`` for the
rows with ``y_i f(x_i) >= tau``, ``delta = 1``; it is used when it satisfies (1)-(4).

(P2) linear sparse SVM with ``z`` and the support ``S = {k : delta_k = 1}`` fixed; a
convex QP, columns ``[w_S (|S|), b, xi (n)]``::

    min   1/2 ||w_S||^2 + C sum_i v_i xi_i
    s.t.  y_i (w_S . x_iS + b) >= 1 - xi_i,   0 <= xi_i <= M1 (1 - z_i).

The thesis writes ``||w||^2 + C sum xi``; we use the libsvm convention of SPEC S1
(``C_thesis = 2 C``). With ``z`` fixed the rate constraints hold automatically (rows
with ``z_i = 1`` keep margin 1), and (P1)'s solution restricted to ``S`` is feasible, so
(P2) is always feasible. It is solved exactly by HiGHS QP (the Hessian is the identity
on ``w_S``, so the QP is tiny in ``d`` and sparse in ``n``).

(P3) kernel sparse SVM: the dual of (P2) with ``K_delta(x, x') = exp(-gamma sum_k
delta_k (x_k - x'_k)^2)``. With ``z`` fixed, rows ``z_i = 1`` carry a hard margin and
rows ``z_i = 0`` the soft one with ``xi_i <= M1``; the exact dual is
``max 1'a - 1/2 a'Qa - M1 sum_{z_i=0} (a_i - C v_i)_+`` with ``a_i`` unbounded on the
hard rows, which is not a box QP. Following the thesis' partial dual of the kernel
CSVM (SPEC S5: multipliers of the ``z`` rows bounded by ``M2``) we solve the box QP
``0 <= a_i <= u_i`` with ``u_i = M2`` on hard rows and ``u_i = C v_i`` on the others
(:func:`kernel_upper_bounds`), i.e. S1 with per-row weights. That is exactly the
batched solver's problem (one ``Q``, a bound vector), so it runs on the GPU; the
``xi_i <= M1`` cap is dropped (it only binds for margins below ``1 - M1 = -99``).

Cardinality-constrained SVM (comparator; Chan et al. 2007, Ghaddar & Naoum-Sawaya
2018), columns ``[w (d), b, xi (n), delta (d)]``, a convex MIQP solved by the outer
approximation of :mod:`torchsvm.mip.outer_approx`::

    min   1/2 ||w||^2 + C sum_i v_i xi_i
    s.t.  y_i (w . x_i + b) >= 1 - xi_i,  xi >= 0,
          -M delta_k <= w_k <= M delta_k,  sum_k delta_k <= k_max,  delta binary.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import (
    DataError,
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
)
from torchsvm.mip import _triple_drops
from torchsvm.mip.highs import solve_highs
from torchsvm.mip.model import (
    MipConfig,
    MipModel,
    MipResult,
    check_feasible,
    validate_model,
)
from torchsvm.mip.qp_ipm import solve_qp_ipm
from torchsvm.mip.solve import solve_model
from torchsvm.mip.subset_search import (
    fit_subsets,
    margin_point,
    screen_pairs,
    screen_triples,
    separable_1d,
    separable_2d,
    separable_by_planes,
    threshold_start,
)
from torchsvm.problems.selection import (
    SelectionProblem,
    check_feature_costs,
    check_selection_data,
    floor_rhs,
)
from torchsvm.solvers import active_set_kernel
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "CardinalityResult",
    "FeatureSelectionResult",
    "build_cardinality_miqp",
    "build_selection_milp",
    "kernel_upper_bounds",
    "selection_start",
    "solve_cardinality_svm",
    "solve_feature_selection",
    "solve_sparse_linear_svm",
]


# ----------------------------------------------------------------------------- (P1)


def build_selection_milp(
    X: np.ndarray,
    y: np.ndarray,
    tpr_floor: float,
    tnr_floor: float,
    feature_costs: np.ndarray | None = None,
    big_m: float = 100.0,
    big_m_w: float | None = None,
    sample_weight: np.ndarray | None = None,
) -> MipModel:
    """Build (P1) as a :class:`MipModel` with columns ``[w (d), b, z (n), delta (d)]``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training rows.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    tpr_floor, tnr_floor : float
        ``p*(+1)``, ``p*(-1)`` (already including any Hoeffding margin).
    feature_costs : ndarray of shape (d,), optional
        ``c_k >= 0`` (default 1).
    big_m : float
        ``M2`` of constraint (1).
    big_m_w : float, optional
        ``M3`` of constraint (4) (default ``big_m``).
    sample_weight : ndarray of shape (n,), optional
        Row weights ``v_i`` in the rate rows (2)-(3).

    Returns
    -------
    MipModel
        The MILP (see module docstring).
    """
    X, y, v = check_selection_data(X, y, sample_weight)
    n, d = X.shape
    c = check_feature_costs(feature_costs, d)
    M2 = float(big_m)
    M3 = float(big_m if big_m_w is None else big_m_w)
    if not (M2 > 0 and M3 > 0):
        raise ValueError(f"big-M values must be > 0, got M2={M2}, M3={M3}")
    iz, idl = d + 1, d + 1 + n
    n_cols = 2 * d + 1 + n
    yX = y[:, None] * X
    # (1): y_i x_i . w + y_i b - M2 z_i >= 1 - M2
    A1 = sp.hstack(
        [
            sp.csr_array(yX),
            sp.csr_array(y[:, None]),
            sp.diags_array(-M2 * np.ones(n)),
            sp.csr_array((n, d)),
        ],
        format="csr",
    )
    pos, neg = y > 0, y < 0
    A2 = sp.csr_array(np.concatenate([np.zeros(d + 1), v * pos, np.zeros(d)])[None, :])
    A3 = sp.csr_array(np.concatenate([np.zeros(d + 1), v * neg, np.zeros(d)])[None, :])
    eye = sp.eye_array(d, format="csr")
    # (4): w_k - M3 delta_k <= 0 and -w_k - M3 delta_k <= 0
    A4 = sp.hstack([eye, sp.csr_array((d, 1 + n)), -M3 * eye], format="csr")
    A5 = sp.hstack([-eye, sp.csr_array((d, 1 + n)), -M3 * eye], format="csr")
    A = sp.vstack([A1, A2, A3, A4, A5], format="csr")
    row_lower = np.concatenate(
        [
            np.full(n, 1.0 - M2),
            [floor_rhs(tpr_floor, v[pos])],
            [floor_rhs(tnr_floor, v[neg])],
            np.full(2 * d, -np.inf),
        ]
    )
    row_upper = np.concatenate([np.full(n + 2, np.inf), np.zeros(2 * d)])
    col_lower = np.concatenate([np.full(d, -M3), [-np.inf], np.zeros(n + d)])
    col_upper = np.concatenate([np.full(d, M3), [np.inf], np.ones(n + d)])
    integrality = np.zeros(n_cols, dtype=bool)
    integrality[iz:] = True
    cost = np.zeros(n_cols)
    cost[idl:] = c
    names = (
        [f"w{k}" for k in range(d)]
        + ["b"]
        + [f"z{i}" for i in range(n)]
        + [f"delta{k}" for k in range(d)]
    )
    return MipModel(
        c=cost,
        A=A,
        row_lower=row_lower,
        row_upper=row_upper,
        col_lower=col_lower,
        col_upper=col_upper,
        integrality=integrality,
        col_names=names,
    )


def selection_start(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    b: float,
    tpr_floor: float,
    tnr_floor: float,
    big_m: float = 100.0,
    big_m_w: float | None = None,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray | None:
    """MIP start for (P1) from a linear SVM ``(w, b)`` on all features, or None.

    The scores are rescaled by ``1 / tau`` where ``tau`` is the largest margin level
    such that the rows of each class with ``y_i f(x_i) >= tau`` meet that class's
    floor; those rows get ``z_i = 1`` and ``delta = 1``. None is returned when no
    positive ``tau`` exists (the SVM misses a floor) or the scaled point violates
    ``|w_k| <= M3`` or ``y_i f(x_i) >= 1 - M2``.

    Returns
    -------
    ndarray of shape (2 d + 1 + n,) or None
        ``[w, b, z, delta]``.
    """
    X, y, v = check_selection_data(X, y, sample_weight)
    n, d = X.shape
    M2 = float(big_m)
    M3 = float(big_m if big_m_w is None else big_m_w)
    m = y * (X @ np.asarray(w, float) + float(b))
    taus = []
    for mask, p in ((y > 0, tpr_floor), (y < 0, tnr_floor)):
        need = floor_rhs(p, v[mask])
        if need <= 0:
            continue
        order = np.argsort(-m[mask])
        cum = np.cumsum(v[mask][order])
        j = int(np.searchsorted(cum, need - 1e-9))
        if j >= order.size:
            return None
        taus.append(float(m[mask][order][j]))
    tau = min(taus) if taus else float(np.max(m))
    if not tau > 1e-9:
        return None
    s = 1.0 / tau
    ws, bs = np.asarray(w, float) * s, float(b) * s
    ms = m * s
    if np.any(np.abs(ws) > M3) or np.any(ms < 1.0 - M2 + 1e-9):
        return None
    z = (ms >= 1.0 - 1e-9).astype(float)
    return np.concatenate([ws, [bs], z, np.ones(d)])


@dataclass(frozen=True)
class FeatureSelectionResult:
    """Outcome of (P1).

    Parameters
    ----------
    support : ndarray of shape (d,) of bool
        Selected features (``delta_k = 1``).
    w : ndarray of shape (d,)
        (P1)'s separating direction (zero off the support).
    b : float
        (P1)'s intercept.
    z : ndarray of shape (n,) of bool
        Rows kept at margin 1.
    cost : float
        ``sum_k c_k delta_k``.
    tpr_floor, tnr_floor : float
        The floors ``p*(+1)``, ``p*(-1)`` imposed.
    result : MipResult
        Raw solver record (status, bound, gap, runtime, start_feasible).
    """

    support: np.ndarray
    w: np.ndarray
    b: float
    z: np.ndarray
    cost: float
    tpr_floor: float
    tnr_floor: float
    result: MipResult

    @property
    def status(self) -> SolveStatus:
        """Solver status (``optimal`` or ``time_limit``)."""
        return self.result.status

    @property
    def mip_gap(self) -> float:
        """Proven relative gap."""
        return float(self.result.mip_gap)


def _warm_kernels() -> None:
    """Compile (or load from numba's cache) every kernel a selection may call, before
    its clock starts (see :func:`torchsvm.solvers.active_set_kernel.warm`)."""
    active_set_kernel.warm()
    _triple_drops.warm()


def solve_feature_selection(
    X: np.ndarray,
    y: np.ndarray,
    min_tpr: float,
    min_tnr: float,
    hoeffding_alpha: float | None = None,
    feature_costs: np.ndarray | None = None,
    big_m: float = 100.0,
    config: MipConfig | None = None,
    warm_start: tuple[np.ndarray, float] | None = None,
    sample_weight: np.ndarray | None = None,
    *,
    method: str = "auto",
    max_enumerate: int = 14,
    batch_seconds: float | None = None,
) -> FeatureSelectionResult:
    """Solve (P1): the cheapest feature set whose linear classifier meets both floors.

    Algorithm (SPEC S6; the MILP of the module docstring is the model):

    1. Start heuristics (:mod:`torchsvm.mip.subset_search`). With more than
       ``max_enumerate`` features (or ``method="milp"``), first the exact size screens
       (``_SubsetSearch.screen``: the 1-D test refutes single features and, when one
       class must keep every row, :func:`~torchsvm.mip.subset_search.screen_pairs`
       refutes pairs, and when at most a few rows may be dropped (none, or up to
       three in all),
       :func:`~torchsvm.mip.subset_search.screen_triples` settles every triple), then
       an LP-priced forward selection with a swap descent whose
       sets are checked by (P1) restricted to them (``_SubsetSearch.local_search``);
       an incumbent at the proven size bound is optimal at once. Where that found no
       incumbent, or with few features: linear SVMs on candidate subsets fitted as one
       batch of the batched solver, each turned into a (P1) point by the best
       threshold and scale; with few features every subset is fitted, otherwise a
       backward-elimination path (one batch per step) drops the costliest feature
       whose removal keeps a feasible point. ``warm_start`` adds its direction.
    2. Exact phase. Feasibility is monotone (a superset of a feasible subset is
       feasible: ``w_k = 0`` on the added features), so the incumbent of cost ``U`` is
       optimal once every subset of cost below ``U`` is proven infeasible, and it is
       enough to prove the maximal ones. With at most ``max_enumerate`` features
       (``method="enumerate"`` or ``"auto"``) each maximal subset ``S`` is settled by
       the exact planar test :func:`~torchsvm.mip.subset_search.separable_2d` when
       ``|S| <= 2``, else by (P1) restricted to ``S`` (``delta_k = 0`` off ``S``),
       which also returns the cheapest feasible subset inside ``S``. Otherwise
       (``method="milp"`` or many features) the full (P1) is solved by HiGHS from the
       heuristic start, with ``sum delta >= 2`` added when no single feature meets the
       floors (exact 1-D test), ``>= 3`` when no pair does either, ``>= 4`` when no
       triple does.

    ``config.time_limit`` bounds the whole call, heuristics included. A stopped call
    returns the incumbent with its proven gap and a
    :class:`~torchsvm.exceptions.SolverTimeLimitWarning`.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training rows.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    min_tpr, min_tnr : float
        Targets ``p0`` for TPR and TNR.
    hoeffding_alpha : float or None
        Hoeffding level (None: ``p* = p0``).
    feature_costs : ndarray of shape (d,), optional
        Costs ``c_k`` (default 1: fewest features).
    big_m : float
        ``M2 = M3`` of the model.
    config : MipConfig, optional
        Time limit and gap.
    warm_start : (w, b), optional
        Linear SVM on all features, one more start candidate.
    sample_weight : ndarray of shape (n,), optional
        Row weights in the rate rows.
    method : {"auto", "enumerate", "milp"}
        Exact phase (see above).
    max_enumerate : int
        ``"auto"`` enumerates subsets when ``d <= max_enumerate``.
    batch_seconds : float, optional
        Expected seconds of one batched SVM solve on these rows (e.g. the time of the
        caller's warm-start fit): the heuristics start no batch predicted to end past
        their deadline, and without a hint the first batch has no prediction.

    Returns
    -------
    FeatureSelectionResult

    Raises
    ------
    InfeasibleProblemError
        If a floor exceeds 1 or no linear classifier meets both floors.
    SolverError
        If the time limit passes without any feasible selection.
    """
    _warm_kernels()  # a one-off compilation is not charged to the time limit
    t0 = time.perf_counter()
    config = MipConfig() if config is None else config
    if method not in ("auto", "enumerate", "milp"):
        raise ValueError(
            f"method must be 'auto', 'enumerate' or 'milp', got {method!r}"
        )
    problem = SelectionProblem.from_data(
        X, y, min_tpr, min_tnr, hoeffding_alpha, feature_costs, sample_weight
    )
    X, y, v = problem.X, problem.y, problem.v
    n, d = X.shape
    p_pos, p_neg = problem.tpr_floor, problem.tnr_floor
    costs = problem.costs
    model = build_selection_milp(
        X, y, p_pos, p_neg, costs, big_m, sample_weight=sample_weight
    )

    search = _SubsetSearch(problem, model, big_m, config, t0)
    if batch_seconds is not None:
        search._timing["last"] = float(batch_seconds)
    if warm_start is not None:
        search.offer(
            selection_start(
                X, y, warm_start[0], warm_start[1], p_pos, p_neg, big_m, sample_weight=v
            )
        )
        search.offer(threshold_start(problem, warm_start[0], np.ones(d, bool), big_m))
    res = search.single_features()
    if res is None:
        enumerate_ = method == "enumerate" or (method == "auto" and d <= max_enumerate)
        found = 0
        if not enumerate_:
            search.screen()  # exact and cheap: before the heuristics take the time
            found = search.local_search()
        if not found and not search.proven():
            # the batched SVM fits only where the LP-priced search found no set
            search.heuristics()
        res = search.enumerate() if enumerate_ else search.full_milp()
    if res.status is SolveStatus.infeasible:
        raise InfeasibleProblemError(
            f"the TPR floor p*(+1)={p_pos:.4f} and the TNR floor p*(-1)={p_neg:.4f} "
            f"(min_tpr={min_tpr}, min_tnr={min_tnr}, hoeffding_alpha={hoeffding_alpha}) "
            "cannot both be met on the training rows by any linear classifier with "
            f"|w_k| <= big_m={big_m}; lower min_tpr or min_tnr"
        )
    if res.x is None:
        raise SolverError(
            f"(P1) found no feasible feature set ({res.status.value}: {res.message}); "
            "raise time_limit"
        )
    if res.status is SolveStatus.time_limit:
        warnings.warn(
            f"feature selection stopped at its time limit ({config.time_limit:.3g} s) "
            f"with cost {res.objective:.6g}, proven bound {res.bound:.6g} "
            f"(gap {res.mip_gap:.3g})",
            SolverTimeLimitWarning,
            stacklevel=2,
        )
    logger.info(
        "(P1) %s in %.2fs: cost %.6g, bound %.6g, %s",
        res.status.value,
        time.perf_counter() - t0,
        res.objective,
        res.bound,
        res.message,
    )
    x = res.x
    w, b = x[:d].copy(), float(x[d])
    z = x[d + 1 : d + 1 + n] > 0.5
    delta = x[d + 1 + n :] > 0.5
    w[~delta] = 0.0
    return FeatureSelectionResult(
        support=delta,
        w=w,
        b=b,
        z=z,
        cost=float(costs @ delta),
        tpr_floor=p_pos,
        tnr_floor=p_neg,
        result=res,
    )


class _SubsetSearch:
    """State of :func:`solve_feature_selection`: incumbent, proofs, time budget."""

    def __init__(
        self,
        problem: SelectionProblem,
        model: MipModel,
        big_m: float,
        config: MipConfig,
        t0: float,
    ) -> None:
        self.problem = problem
        self.model = model
        self.big_m = float(big_m)
        self.config = config
        self.t0 = t0
        self.n, self.d = problem.X.shape
        self.costs = problem.costs
        self.best_x: np.ndarray | None = None
        self.best_cost = math.inf
        self.start_feasible: bool | None = None
        self.n_milps = 0
        self.msgs: list[str] = []
        self._timing: dict[str, float] = {}
        # which single features meet both floors (exact 1-D test), once computed
        self._single: np.ndarray | None = None
        # smallest selection size not refuted (:meth:`screen`), once computed
        self.min_size: int | None = None
        self._ls_deadline = math.inf  # end of :meth:`local_search`

    def remaining(self) -> float:
        return self.config.time_limit - (time.perf_counter() - self.t0)

    def _delta(self, x: np.ndarray) -> np.ndarray:
        return x[self.d + 1 + self.n :] > 0.5

    def offer(self, x: np.ndarray | None) -> bool:
        """Keep ``x`` if it is feasible for (P1) and cheaper than the incumbent."""
        if x is None:
            return False
        ok, _ = check_feasible(self.model, x, tol=1e-6)
        if not ok:
            return False
        # drop unused features: delta_k = 0 where w_k = 0 stays feasible and is cheaper
        x = x.copy()
        dl = slice(self.d + 1 + self.n, None)
        x[dl] = np.where(np.abs(x[: self.d]) > 0, x[dl], 0.0)
        cost = float(self.costs @ self._delta(x))
        if cost < self.best_cost - 1e-9:
            self.best_x, self.best_cost = x, cost
            self.start_feasible = True
            return True
        return False

    def single_features(self) -> MipResult | None:
        """The cheapest single feature that meets both floors, as a first incumbent.

        The exact 1-D test (:func:`~torchsvm.mip.subset_search.separable_2d`) settles
        every single feature; the cheapest one that meets the floors gives a (P1)
        point through the max-margin LP on the rows its threshold classifies right
        (:func:`~torchsvm.mip.subset_search.margin_point`). Unless ``w = 0`` meets the
        floors (then the bound is 0), every feasible selection holds a feature, so
        ``min_k c_k`` is a lower bound: an incumbent at that cost is optimal, and the
        result is returned at once (no heuristics, no MILP). Otherwise None.
        """
        d = self.d
        if self.remaining() <= 0:
            return None
        self._single = separable_1d(self.problem, big_m=self.big_m)
        if separable_2d(self.problem, np.zeros(d, dtype=bool)):
            return None  # w = 0 meets the floors: the bound is 0
        # the cheapest separating features first; a threshold may still need |w_k|
        # or a slack beyond big-M (margin_point gives None), so a few are tried
        cand = np.flatnonzero(self._single)
        for k in cand[np.argsort(self.costs[cand], kind="stable")][:8]:
            if self.costs[k] >= self.best_cost - 1e-9 or self.remaining() <= 0:
                break
            wit: list[np.ndarray] = []
            mask = np.arange(d) == k
            if not separable_2d(self.problem, mask, witness=wit):
                continue
            cfg = replace(self.config, time_limit=max(1e-3, self.remaining()))
            x = margin_point(self.problem, mask, wit[0], self.big_m, cfg)
            if self.offer(x):
                self.msgs.append(f"feature {k} alone meets the floors")
        if self.best_x is None:
            return None
        lb = float(self.costs.min())
        tol = self.config.mip_rel_gap * max(1.0, abs(self.best_cost))
        if self.best_cost > lb + tol:
            return None
        return self._result(
            SolveStatus.optimal, lb, "no selection is cheaper than one feature"
        )

    # ---------------------------------------------------------------- heuristics
    def _try_subsets(self, subsets: np.ndarray) -> np.ndarray:
        """Fit batches on ``subsets``; return which gave a feasible point.

        The subsets go to :func:`fit_subsets` in chunks of one solver batch each, so
        that the fitted directions held at once are ``(iterations, chunk * R, d)``,
        not ``(iterations, len(subsets) * R, d)`` (leukemia_golub, d = 7129: one
        backward step over every feature would hold 1.2 GB per iteration).
        """
        R = len(_RATIOS)
        found = np.zeros(subsets.shape[0], dtype=bool)
        chunk = max(1, _SUBSET_BATCH_ROWS // max(1, self.n))
        deadline = self.t0 + 0.5 * self.config.time_limit
        for s in range(0, subsets.shape[0], chunk):
            if time.perf_counter() > deadline:
                break
            part = subsets[s : s + chunk]
            Ws = fit_subsets(
                self.problem,
                part,
                class_ratios=_RATIOS,
                max_rows=_SUBSET_BATCH_ROWS,
                deadline=deadline,
                timing=self._timing,
            )
            for W in Ws:
                for p in range(part.shape[0]):
                    for t in range(R):
                        if not np.any(W[p * R + t]):
                            continue  # not fitted before the deadline
                        x = threshold_start(
                            self.problem, W[p * R + t], part[p], self.big_m
                        )
                        if x is not None and check_feasible(self.model, x, tol=1e-6)[0]:
                            found[s + p] = True
                            self.offer(x)
        return found

    def heuristics(self) -> None:
        """Batched SVM fits on candidate subsets (all subsets, or a backward path)."""
        d, n = self.d, self.n
        if 2**d * n <= 30_000:
            masks = (np.arange(1, 2**d)[:, None] >> np.arange(d)) & 1
            if self.remaining() > 0:
                self._try_subsets(masks.astype(bool))
                self.msgs.append(f"{2**d - 1} subsets fitted in one batch")
            return
        S = np.ones(d, dtype=bool)
        if self.best_x is not None:
            S = self._delta(self.best_x).copy()
        elif not self._try_subsets(S[None, :])[0]:
            return
        steps = 0
        while S.sum() > 1 and self.remaining() > 0.2 * self.config.time_limit:
            idx = np.flatnonzero(S)
            if idx.size > _MAX_BACKWARD_CANDIDATES:
                # many features (e.g. 7129 genes, n << d): SVM-RFE's ranking by the
                # incumbent's |w_k|; candidates drop the 1, 2, 4, ... lowest-ranked
                # features (up to all but one), so that a step fits a bounded batch and
                # the path shrinks S geometrically instead of one feature per step
                w = np.zeros(d) if self.best_x is None else np.abs(self.best_x[:d])
                order = idx[np.argsort(w[idx], kind="stable")]
                sizes = np.unique(
                    np.minimum(2 ** np.arange(int(np.log2(idx.size)) + 1), idx.size - 1)
                )
                cand = np.repeat(S[None, :], sizes.size, axis=0)
                for r, b in enumerate(sizes):
                    cand[r, order[:b]] = False
                found = self._try_subsets(cand)
                if not found.any():
                    break
                # the cheapest candidate that keeps a feasible point
                r = np.flatnonzero(found)[np.argmin(cand[found] @ self.costs)]
                S = cand[r].copy()
                steps += 1
                continue
            cand = np.repeat(S[None, :], idx.size, axis=0)
            cand[np.arange(idx.size), idx] = False
            found = self._try_subsets(cand)
            if not found.any():
                break
            # drop the costliest feature whose removal keeps a feasible point
            k = idx[found][np.argmax(self.costs[idx[found]])]
            S[k] = False
            steps += 1
        self.msgs.append(f"backward path of {steps} steps")

    # ---------------------------------------------------------- local search
    def _elastic_duals(self, S: list[int]) -> np.ndarray | None:
        """Row duals of the elastic LP on features ``S`` (None if it failed).

        ``min sum_i v_i xi_i`` s.t. ``y_i (w_S . x_iS + b) + xi_i >= 1``, ``xi >= 0``,
        ``|w_k| <= M3``: the hinge-L1 fit of the rows on ``S``. The dual ``pi`` prices
        a feature ``k`` outside ``S`` at ``|sum_i pi_i y_i x_ik|`` (the rate at which
        the optimum falls as ``w_k`` leaves 0), column generation's choice.
        """
        X, y, v = self.problem.X, self.problem.y, self.problem.v
        n, k = self.n, len(S)
        A = sp.hstack(
            [
                sp.csr_array(y[:, None] * X[:, S]),
                sp.csr_array(y[:, None]),
                sp.eye_array(n, format="csr"),
            ],
            format="csr",
        )
        model = MipModel(
            c=np.concatenate([np.zeros(k + 1), v]),
            A=A,
            row_lower=np.ones(n),
            row_upper=np.full(n, np.inf),
            col_lower=np.concatenate([np.full(k, -self.big_m), [-np.inf], np.zeros(n)]),
            col_upper=np.concatenate(
                [np.full(k, self.big_m), [np.inf], np.full(n, np.inf)]
            ),
        )
        cfg = replace(self.config, time_limit=self._step_limit())
        try:
            res = solve_model(model, cfg)
        except SolverError:
            return None
        if res.status is not SolveStatus.optimal or res.row_duals is None:
            return None
        return np.abs(res.row_duals)

    def _step_limit(self) -> float:
        """Seconds for one LP / subset MILP of the local search: at most 5, and not
        past the local search's own deadline."""
        left = min(self.remaining(), self._ls_deadline - time.perf_counter())
        return max(1e-3, min(5.0, left))

    def _price(self, S: list[int]) -> np.ndarray | None:
        """Features outside ``S`` by falling LP price per unit cost (best first)."""
        pi = self._elastic_duals(S)
        if pi is None:
            return None
        g = np.abs((pi * self.problem.y) @ self.problem.X)
        g = g / np.maximum(self.costs, 1e-12)
        g[S] = -np.inf
        if not np.max(g) > 1e-12:
            return None  # no feature lowers the LP: the forward step is stuck
        return np.argsort(-g, kind="stable")

    def _subset_point(self, S: list[int]) -> list[int] | None:
        """(P1) restricted to ``S`` (a small MILP on those columns); offer its optimum.

        Returns the support of the point found (the cheapest subset of ``S`` that
        meets the floors, or an incumbent found within its time limit), or None.
        """
        d, n = self.d, self.n
        p = self.problem
        sub = build_selection_milp(
            p.X[:, S],
            p.y,
            p.tpr_floor,
            p.tnr_floor,
            self.costs[S],
            self.big_m,
            sample_weight=p.v,
        )
        cfg = replace(self.config, time_limit=self._step_limit())
        self.n_milps += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SolverTimeLimitWarning)
                res = solve_model(sub, cfg)
        except SolverError:
            return None
        if res.x is None:
            return None
        k = len(S)
        x = np.zeros(2 * d + 1 + n)
        x[S] = res.x[:k]
        x[d] = res.x[k]
        x[d + 1 : d + 1 + n] = res.x[k + 1 : k + 1 + n]
        x[d + 1 + n + np.asarray(S)] = res.x[k + 1 + n :]
        self.offer(x)
        return [f for f, dl in zip(S, res.x[k + 1 + n :]) if dl > 0.5]

    def proven(self) -> bool:
        """Whether the incumbent meets the proven size bound (:meth:`screen`)."""
        if self.best_x is None or not self.min_size:
            return False
        lb = float(np.sort(self.costs)[: self.min_size].sum())
        tol = self.config.mip_rel_gap * max(1.0, abs(self.best_cost))
        return self.best_cost <= lb + tol

    def local_search(self, share: float = 0.4, n_starts: int = 10) -> int:
        """LP-priced forward selection from several starts, then a swap descent.

        Forward: from one feature, add the feature the elastic LP prices best
        (:meth:`_elastic_duals`) until (P1) restricted to the set is feasible (a small
        MILP, which also returns the set's cheapest feasible subset); the starts are the
        features the LP prices best on no feature. Descent from each feasible set
        ``S``: drop two features, add one of the 8 best priced, keep the first cheaper
        feasible set. Stops at ``share`` of the remaining time, or once the incumbent
        meets the proven size bound (``self.min_size`` features at the least costs).
        Returns the number of starts that reached a feasible set.
        """
        deadline = time.perf_counter() + share * max(0.0, self.remaining())
        self._ls_deadline = deadline

        def done() -> bool:
            return time.perf_counter() > deadline or self.proven()

        order = self._price([])
        if order is None:
            return 0
        n_found = 0
        for k0 in order[:n_starts]:
            if done():
                break
            S = [int(k0)]
            found = None
            while (
                not done()
                and len(S) <= _MAX_FORWARD
                and float(self.costs[S].sum()) < self.best_cost - 1e-9
            ):
                if len(S) >= max(2, self.min_size or 0):
                    found = self._subset_point(S)
                    if found is not None:
                        break
                nxt = self._price(S)
                if nxt is None:
                    break
                S.append(int(nxt[0]))
            if found is not None:
                n_found += 1
                self._descend(found, done)
        self.msgs.append(f"LP-priced forward search: {n_found} feasible sets")
        return n_found

    def _descend(self, S: list[int], done: Callable[[], bool]) -> None:
        """Swap descent: replace two features of ``S`` by one while that stays feasible."""
        improved = True
        while improved and not done():
            improved = False
            for pair in combinations(S, 2):
                if done():
                    return
                R = [k for k in S if k not in pair]
                nxt = self._price(R)
                if nxt is None:
                    return
                for k in nxt[:8]:
                    T = [*R, int(k)]
                    if float(self.costs[T].sum()) >= float(self.costs[S].sum()) - 1e-9:
                        continue
                    got = self._subset_point(T)
                    if got is not None:
                        S, improved = got, True
                        break
                if improved:
                    break

    # ---------------------------------------------------------------- exact
    def _restricted(self, mask: np.ndarray) -> MipResult:
        """(P1) with ``delta_k = w_k = 0`` off ``mask``: cheapest subset inside it."""
        d, n = self.d, self.n
        lo, up = self.model.col_lower.copy(), self.model.col_upper.copy()
        off = np.flatnonzero(~mask)
        lo[off] = up[off] = 0.0
        lo[d + 1 + n + off] = up[d + 1 + n + off] = 0.0
        sub = replace(self.model, col_lower=lo, col_upper=up)
        start = None
        if self.best_x is not None and not np.any(self._delta(self.best_x) & ~mask):
            start = self.best_x
        cfg = replace(self.config, time_limit=max(1e-3, self.remaining()))
        self.n_milps += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolverTimeLimitWarning)
            return solve_model(sub, cfg, start=start)

    def _result(self, status: SolveStatus, lb: float, msg: str) -> MipResult:
        ub = self.best_cost
        if self.best_x is None:
            gap = math.inf
        else:
            lb = min(lb, ub)
            gap = max(0.0, ub - lb) / max(1.0, abs(ub))
        return MipResult(
            status=status,
            x=self.best_x,
            objective=ub if self.best_x is not None else math.nan,
            bound=lb,
            mip_gap=gap,
            runtime=time.perf_counter() - self.t0,
            message="; ".join([*self.msgs, msg]),
            n_iter=self.n_milps,
            start_feasible=self.start_feasible,
        )

    def enumerate(self) -> MipResult:
        """Prove the incumbent optimal by settling every maximal cheaper subset."""
        d = self.d
        masks = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(bool)
        cost = masks @ self.costs
        # proven: (mask, threshold): subsets of mask with cost < threshold are infeasible
        proofs: list[tuple[np.ndarray, float]] = []
        dead = np.zeros(2**d, dtype=bool)
        tol = 1e-9
        while True:
            open_ = ~dead & (cost < self.best_cost - tol)
            if not open_.any():
                if self.best_x is None:
                    return self._result(SolveStatus.infeasible, math.inf, "no subset")
                return self._result(
                    SolveStatus.optimal, self.best_cost, "every cheaper subset refuted"
                )
            if self.remaining() <= 0:
                lb = float(cost[open_].min())
                return self._result(SolveStatus.time_limit, lb, "time limit")
            cand = np.flatnonzero(open_)
            # maximal open subsets: no open superset with one more feature
            is_max = np.ones(cand.size, dtype=bool)
            for k in range(d):
                sup = cand | (1 << k)
                is_max &= ~((sup != cand) & open_[sup])
            cm = cand[is_max]
            j = cm[np.argmax(cost[cm])]
            M = masks[j]
            settled = False
            if M.sum() <= 2 and not separable_2d(self.problem, M):
                proofs.append((M, math.inf))
                settled = True
            elif M.sum() == 3:
                wit: list[np.ndarray] = []
                sep = separable_by_planes(self.problem, M, witness=wit)
                if sep is False:
                    proofs.append((M, math.inf))
                    settled = True
                elif wit:
                    # the plane's rows give a start for the subset MILP below
                    cfg = replace(self.config, time_limit=max(1e-3, self.remaining()))
                    if self.offer(
                        margin_point(self.problem, M, wit[0], self.big_m, cfg)
                    ):
                        continue  # new incumbent: the open set shrinks
            if not settled:
                try:
                    res = self._restricted(M)
                except SolverError as err:
                    logger.info("subset MILP failed: %s", err)
                    lb = float(cost[open_].min())
                    return self._result(
                        SolveStatus.time_limit, lb, f"subset MILP failed: {err}"
                    )
                if res.status is SolveStatus.infeasible:
                    proofs.append((M, math.inf))
                elif res.x is not None:
                    self.offer(res.x)
                    if res.status is SolveStatus.optimal:
                        thr = res.objective - self.config.mip_rel_gap * max(
                            1.0, abs(res.objective)
                        )
                        proofs.append((M, max(thr, res.bound)))
                    else:
                        proofs.append((M, res.bound))
                else:
                    lb = float(cost[open_].min())
                    return self._result(
                        SolveStatus.time_limit, lb, "time limit in a subset MILP"
                    )
            Mm, thr = proofs[-1]
            inside = ~np.any(masks & ~Mm, axis=1)
            dead |= inside & (cost < thr - tol)
            dead[j] |= thr == math.inf or cost[j] < thr - tol

    def screen(self) -> int:
        """Smallest selection size not yet refuted: 0, 2, 3 or 4 (``self.min_size``).

        2 when the exact 1-D test refutes every single feature, 3 when
        :func:`screen_pairs` also refutes every pair (it may take half of the
        remaining time: where it applies, the MILP's bound rarely passes 2), 4 when
        :func:`screen_triples` (at most three rows may be dropped) also refutes every
        triple; the
        pairs and triples that meet the floors are offered as incumbents.
        """
        self.min_size = 0
        single = self._single
        if single is None and self.remaining() > 0:
            single = self._single = separable_1d(self.problem, big_m=self.big_m)
        if single is None or single.any():
            return self.min_size
        self.min_size = 2
        pairs = self._pairs()
        if pairs is not None and pairs.shape[0] == 0:
            self.min_size = 3
            triples = self._triples()
            if triples is not None and triples.shape[0] == 0:
                self.min_size = 4
        return self.min_size

    def _triples(self) -> np.ndarray | None:
        """Triples of features that meet the floors (:func:`screen_triples`), offered
        as incumbents (the cheapest 8, by (P1) restricted to each).

        Called once every pair is refuted; None when the screen does not apply (more
        than three rows may be dropped) or ran out of its share (half the remaining
        time); an empty
        array proves that no triple meets the floors.
        """
        deadline = time.perf_counter() + 0.5 * max(0.0, self.remaining())
        # a feasible triple at the three least costs is optimal: where rows may be
        # dropped the screen may stop there (it returns the triples found so far)
        least = float(np.sort(self.costs)[:3].sum())
        stats: dict[str, float] = {}
        triples = screen_triples(
            self.problem,
            self.big_m,
            deadline=deadline,
            stats=stats,
            stop_cost=least + 1e-9 * max(1.0, abs(least)),
        )
        if triples is None:
            return None
        order = np.argsort(self.costs[triples].sum(1), kind="stable")
        for t in triples[order][:8]:
            if self.costs[t].sum() >= self.best_cost - 1e-9 or self.remaining() <= 0:
                break
            if self._subset_point([int(k) for k in t]) is not None:
                self.msgs.append(f"features {', '.join(map(str, t))} meet the floors")
        if stats.get("partial"):
            self.msgs.append(
                "the exact triple test stopped at a feasible triple of the least cost "
                f"({triples.shape[0]} feasible found)"
            )
        else:
            self.msgs.append(
                f"{triples.shape[0]} triples of features pass the exact triple test"
            )
        return triples

    def _pairs(self) -> np.ndarray | None:
        """Pairs of features that meet the floors (:func:`screen_pairs`), as incumbents.

        None when the screen does not apply or ran out of its share of the time; an
        empty array proves that no pair meets the floors.
        """
        deadline = time.perf_counter() + 0.5 * max(0.0, self.remaining())
        pairs = screen_pairs(self.problem, deadline=deadline, big_m=self.big_m)
        if pairs is None:
            return None
        for k, l in pairs[np.argsort(self.costs[pairs].sum(1), kind="stable")][:8]:
            if (
                self.costs[[k, l]].sum() >= self.best_cost - 1e-9
                or self.remaining() <= 0
            ):
                break
            mask = np.zeros(self.d, dtype=bool)
            mask[[k, l]] = True
            wit: list[np.ndarray] = []
            if separable_2d(self.problem, mask, witness=wit):
                cfg = replace(self.config, time_limit=max(1e-3, self.remaining()))
                if self.offer(
                    margin_point(self.problem, mask, wit[0], self.big_m, cfg)
                ):
                    self.msgs.append(f"features {k}, {l} meet the floors")
        self.msgs.append(f"{pairs.shape[0]} pairs of features pass the exact pair test")
        return pairs

    def full_milp(self) -> MipResult:
        """(P1) by HiGHS from the incumbent, with ``sum delta >= 2`` (or 3) when valid.

        ``sum delta >= 2`` when the exact 1-D test refutes every single feature, and
        ``>= 3`` when :func:`screen_pairs` also refutes every pair; the sum of the
        2 (3) smallest costs is then a lower bound (an incumbent at it is optimal).
        """
        d, n = self.d, self.n
        model = self.model
        # NOTE: one mask at a time; a list of np.eye(d)[k] views kept d eye matrices
        # alive (d = 7129: ~29 MB committed each, the leukemia_golub OOM)
        min_size = self.screen() if self.min_size is None else self.min_size
        lb = 0.0
        if min_size:
            lb = float(np.sort(self.costs)[:min_size].sum())
            tol = self.config.mip_rel_gap * max(1.0, abs(self.best_cost))
            if self.best_x is not None and self.best_cost <= lb + tol:
                return self._result(
                    SolveStatus.optimal, lb, f"no selection of {min_size - 1} features"
                )
            row = np.zeros(model.n_cols)
            row[d + 1 + n :] = 1.0
            model = replace(
                model,
                A=sp.vstack([model.A, sp.csr_array(row[None, :])], format="csr"),
                row_lower=np.concatenate([model.row_lower, [float(min_size)]]),
                row_upper=np.concatenate([model.row_upper, [np.inf]]),
            )
            self.msgs.append(
                f"no {min_size - 1} features suffice: sum delta >= {min_size}"
            )
        cfg = replace(self.config, time_limit=max(1e-3, self.remaining()))
        self.n_milps += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SolverTimeLimitWarning)
                res = solve_model(model, cfg, start=self.best_x)
        except SolverError as err:
            # HiGHS failed without an answer: the heuristic incumbent (if any) stands,
            # with the only bound proven so far (0)
            logger.info("full (P1) MILP failed: %s", err)
            return self._result(
                SolveStatus.time_limit, lb, f"full (P1) MILP failed: {err}"
            )
        if res.status is SolveStatus.infeasible:
            return self._result(SolveStatus.infeasible, math.inf, "(P1) infeasible")
        if res.x is not None:
            self.offer(res.x)
        lb = max(lb, res.bound if math.isfinite(res.bound) else 0.0)
        status = (
            SolveStatus.optimal
            if res.status is SolveStatus.optimal
            else SolveStatus.time_limit
        )
        return self._result(status, lb, f"full (P1) MILP: {res.message}")


_RATIOS = (1.0, 0.25, 4.0)

#: Longest LP-priced forward path (:meth:`_SubsetSearch.local_search`).
_MAX_FORWARD = 64

#: Stacked rows per batch of subset fits (:func:`fit_subsets`' ``max_rows``).
_SUBSET_BATCH_ROWS = 2_000

#: Above this many features, a backward step drops blocks of 1, 2, 4, ... features
#: ranked by |w_k| instead of trying each one-feature removal.
_MAX_BACKWARD_CANDIDATES = 32


# ----------------------------------------------------------------------------- (P2)


def _p2_by_dual(
    Xs: np.ndarray, y: np.ndarray, v: np.ndarray, z: np.ndarray, C: float, big_m: float
) -> tuple[np.ndarray, float, MipResult] | None:
    """(P2) through the SVM dual when features outnumber rows (``s > n``).

    HiGHS's QP solver works in the primal, with ``s`` free weights: with thousands of
    features (microarrays) it needs minutes. The dual has ``n`` variables. Rows with
    ``z_i = 1`` get a penalty ``1e4 C max(v)`` instead of a hard margin; if the solution
    keeps their slack at zero and every other slack below its cap ``M1``, it satisfies
    all constraints of (P2) and is optimal for it (it solves a relaxation of (P2)).
    Otherwise ``None``: the caller solves the primal QP.
    """
    from torchsvm.problems.svm import BatchedSvmProblem
    from torchsvm.solvers.box_qp import BoxQpSolver

    t0 = time.perf_counter()
    cv = C * v
    U = np.where(z, 1e4 * C * max(1.0, float(v.max())), cv)
    try:
        prob = BatchedSvmProblem.from_bounds(Xs, y, U[None, :], kernel="linear")
    except DataError:
        return None
    sol = BoxQpSolver()(prob)
    if not bool(sol.converged.all()):
        return None
    w = sol.w[0].cpu().numpy()
    b = float(sol.b[0])
    xi = np.maximum(0.0, 1.0 - y * (Xs @ w + b))
    tol = 1e-6
    if (xi[z] > tol).any() or (xi[~z] > big_m + tol).any():
        return None
    xi[z] = 0.0
    obj = 0.5 * float(w @ w) + float(cv @ xi)
    x = np.concatenate([w, [b], xi])
    res = MipResult(
        status=SolveStatus.optimal,
        x=x,
        objective=obj,
        bound=obj,
        mip_gap=0.0,
        runtime=time.perf_counter() - t0,
        message=f"solved as an SVM dual (relative duality gap {float(sol.duality_gap[0]):.1e})",
    )
    return w, b, res


def solve_sparse_linear_svm(
    X: np.ndarray,
    y: np.ndarray,
    support: np.ndarray,
    z: np.ndarray,
    C: float = 1.0,
    big_m: float = 100.0,
    config: MipConfig | None = None,
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, float, MipResult]:
    """Solve (P2) exactly (HiGHS QP): linear SVM on ``support`` with ``z`` fixed.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training rows (all features; only ``support`` columns are used).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    support : ndarray of shape (d,) of bool
        Selected features.
    z : ndarray of shape (n,) of bool
        Rows held at margin 1 (``xi_i = 0``).
    C : float
        Penalty (libsvm convention).
    big_m : float
        ``M1``: cap on the slack of rows with ``z_i = 0``.
    config : MipConfig, optional
        Time limit.
    sample_weight : ndarray of shape (n,), optional
        Row weights ``v_i`` multiplying ``C``.

    Returns
    -------
    w : ndarray of shape (d,)
        Zero off the support.
    b : float
    result : MipResult

    Raises
    ------
    InfeasibleProblemError
        If ``z`` cannot be held at margin 1 on ``support`` (not the case for a (P1)
        solution).
    """
    X, y, v = check_selection_data(X, y, sample_weight)
    n, d = X.shape
    S = np.flatnonzero(np.asarray(support, bool))
    z = np.asarray(z, bool)
    if z.shape != (n,):
        raise ValueError(f"z must have shape ({n},), got {z.shape}")
    if not C > 0:
        raise ValueError(f"C must be > 0, got {C}")
    s = S.size
    if s > n:
        fast = _p2_by_dual(X[:, S], y, v, z, float(C), float(big_m))
        if fast is not None:
            w_s, b_fast, res_fast = fast
            w = np.zeros(d)
            w[S] = w_s
            return w, b_fast, res_fast
    A = sp.hstack(
        [sp.csr_array(y[:, None] * X[:, S]), sp.csr_array(y[:, None]), sp.eye_array(n)],
        format="csr",
    )
    Q = sp.diags_array(np.concatenate([np.ones(s), np.zeros(1 + n)])) if s else None
    model = MipModel(
        c=np.concatenate([np.zeros(s + 1), float(C) * v]),
        A=A,
        row_lower=np.ones(n),
        row_upper=np.full(n, np.inf),
        col_lower=np.concatenate([np.full(s + 1, -np.inf), np.zeros(n)]),
        col_upper=np.concatenate([np.full(s + 1, np.inf), float(big_m) * (~z)]),
        Q=Q,
    )
    try:
        res = solve_model(model, config)
    except SolverError as err:
        # HiGHS's QP and the interior point both failed (numerically troubled, or
        # out of time): the SVM dual is exact whenever its check passes
        fast = _p2_by_dual(X[:, S], y, v, z, float(C), float(big_m)) if s else None
        if fast is None:
            raise SolverError(
                f"(P2) on {s} features could not be solved: {err}"
            ) from err
        w_s, b_fast, res_fast = fast
        w = np.zeros(d)
        w[S] = w_s
        return w, b_fast, res_fast
    if res.x is None and res.status is not SolveStatus.infeasible:
        raise SolverError(
            f"(P2) on {s} features stopped without a solution ({res.status.value}: "
            f"{res.message})"
        )
    if res.x is None:
        raise InfeasibleProblemError(
            f"(P2) is infeasible: the {int(z.sum())} rows with z=1 cannot all keep "
            f"margin 1 using the {s} selected features ({res.status.value})"
        )
    w = np.zeros(d)
    w[S] = res.x[:s]
    return w, float(res.x[s]), res


# ----------------------------------------------------------------------------- (P3)


def kernel_upper_bounds(
    z: np.ndarray,
    C: float = 1.0,
    big_m: float = 100.0,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray:
    """Dual upper bounds of (P3) as a box QP: ``M2`` on rows ``z_i = 1``, else ``C v_i``.

    Parameters
    ----------
    z : ndarray of shape (n,) of bool
        Rows held at margin 1 by (P1).
    C : float
        Penalty (libsvm convention).
    big_m : float
        ``M2``, the bound on the multipliers of the hard rows (SPEC S5 kernel form).
    sample_weight : ndarray of shape (n,), optional
        Row weights ``v_i``.

    Returns
    -------
    ndarray of shape (n,)
        ``u_i``; pass ``u / C`` as ``sample_weight`` to an S1 solver with penalty ``C``.
    """
    z = np.asarray(z, bool)
    v = (
        np.ones(z.shape[0])
        if sample_weight is None
        else np.asarray(sample_weight, float)
    )
    return np.where(z, np.maximum(float(big_m), float(C) * v), float(C) * v)


# ----------------------------------------------------------------------- comparator


def build_cardinality_miqp(
    X: np.ndarray,
    y: np.ndarray,
    k_max: int,
    C: float = 1.0,
    big_m: float = 100.0,
    sample_weight: np.ndarray | None = None,
) -> MipModel:
    """Cardinality-constrained SVM MIQP, columns ``[w (d), b, xi (n), delta (d)]``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training rows.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    k_max : int
        At most ``k_max`` features.
    C : float
        Penalty (libsvm convention).
    big_m : float
        ``M`` in ``|w_k| <= M delta_k``.
    sample_weight : ndarray of shape (n,), optional
        Row weights multiplying ``C``.

    Returns
    -------
    MipModel
        Convex MIQP (``Q`` = identity on ``w``).
    """
    X, y, v = check_selection_data(X, y, sample_weight)
    n, d = X.shape
    if not 0 <= int(k_max) <= d:
        raise ValueError(f"k_max must be in [0, {d}], got {k_max}")
    M = float(big_m)
    eye = sp.eye_array(d, format="csr")
    A = sp.vstack(
        [
            sp.hstack(
                [
                    sp.csr_array(y[:, None] * X),
                    sp.csr_array(y[:, None]),
                    sp.eye_array(n),
                    sp.csr_array((n, d)),
                ]
            ),
            sp.hstack([eye, sp.csr_array((d, 1 + n)), -M * eye]),
            sp.hstack([-eye, sp.csr_array((d, 1 + n)), -M * eye]),
            sp.csr_array(np.concatenate([np.zeros(d + 1 + n), np.ones(d)])[None, :]),
        ],
        format="csr",
    )
    n_cols = 2 * d + 1 + n
    integrality = np.zeros(n_cols, dtype=bool)
    integrality[d + 1 + n :] = True
    return MipModel(
        c=np.concatenate([np.zeros(d + 1), float(C) * v, np.zeros(d)]),
        A=A,
        row_lower=np.concatenate([np.ones(n), np.full(2 * d + 1, -np.inf)]),
        row_upper=np.concatenate([np.full(n, np.inf), np.zeros(2 * d), [float(k_max)]]),
        col_lower=np.concatenate([np.full(d, -M), [-np.inf], np.zeros(n + d)]),
        col_upper=np.concatenate(
            [np.full(d, M), [np.inf], np.full(n, np.inf), np.ones(d)]
        ),
        integrality=integrality,
        Q=sp.diags_array(np.concatenate([np.ones(d), np.zeros(1 + n + d)])),
    )


@dataclass(frozen=True)
class CardinalityResult:
    """Outcome of the cardinality-constrained SVM.

    Parameters
    ----------
    support : ndarray of shape (d,) of bool
        Features used (``delta_k = 1``).
    w : ndarray of shape (d,)
    b : float
    result : MipResult
        Raw record (objective ``1/2 ||w||^2 + C sum xi``, bound, gap, runtime).
    """

    support: np.ndarray
    w: np.ndarray
    b: float
    result: MipResult


def solve_cardinality_svm(
    X: np.ndarray,
    y: np.ndarray,
    k_max: int,
    C: float = 1.0,
    big_m: float = 100.0,
    config: MipConfig | None = None,
    warm_start: tuple[np.ndarray, float] | None = None,
    sample_weight: np.ndarray | None = None,
    method: str = "auto",
) -> CardinalityResult:
    """Solve the cardinality-constrained SVM exactly.

    Three exact routes:

    - ``"enumerate"``: the convex QP of every subset of ``min(k_max, d)`` features
      (HiGHS QP, ``|w_k| <= M`` as column bounds), keeping the cheapest. Every
      feasible point uses at most ``k_max`` features, so it is a point of the QP of
      some subset of exactly ``min(k_max, d)`` features (a subset with fewer features
      is a face of a larger one: ``w_k = 0`` is allowed there); the least of these
      QP optima is therefore the MIQP optimum, proven without branching. Meant for
      few subsets: ``k_max = 1`` on ``d`` features is ``d`` QPs of ``2 + n`` columns.
    - ``"screen"``: the same optimum over the same subsets, most of them settled
      by weak duality instead of a QP (:func:`_cardinality_by_dual_screen`): any
      dual point of one subset's QP bounds every subset's, and the bound is a sum
      over features. Meant for many subsets: ``k_max = 2`` on leukemia_golub's 7129
      genes is 25.4 million.
    - ``"miqp"``: the outer approximation of :mod:`torchsvm.mip.outer_approx` on
      :func:`build_cardinality_miqp`.

    ``"auto"`` enumerates when there are at most :data:`CARDINALITY_SCREEN_MIN`
    subsets, for as long as the QPs solved so far (checked every 8) predict the whole
    enumeration within 80 % of the time limit, and screens otherwise (within 80 % of
    it). If that does not prove the optimum it takes the MIQP with the time left,
    started from the cheapest subset solved so far when that beats ``warm_start``.

    Parameters
    ----------
    X, y, k_max, C, big_m, sample_weight
        As in :func:`build_cardinality_miqp`.
    config : MipConfig, optional
        Overall time limit (the whole call) and gap of the outer approximation.
    warm_start : (w, b), optional
        A linear SVM on all features; its ``k_max`` largest ``|w_k|`` give the start.
    method : {"auto", "screen", "enumerate", "miqp"}, default="auto"
        ``"enumerate"`` enumerates whatever the number of subsets, and ``"screen"``
        screens whatever their number; either stops at the time limit with its
        incumbent, gap unknown (``inf``).

    Returns
    -------
    CardinalityResult

    Raises
    ------
    SolverError
        If no feasible point is found within the time limit.
    """
    if method not in ("auto", "screen", "enumerate", "miqp"):
        raise ValueError(
            f"method must be 'auto', 'screen', 'enumerate' or 'miqp', got {method!r}"
        )
    t0 = time.perf_counter()
    config = MipConfig() if config is None else config
    X, y, v = check_selection_data(X, y, sample_weight)
    n, d = X.shape
    model = build_cardinality_miqp(X, y, k_max, C, big_m, sample_weight=v)
    n_subsets = math.comb(d, min(int(k_max), d))
    enum = None
    if method == "enumerate" or (
        method == "auto" and n_subsets <= CARDINALITY_SCREEN_MIN
    ):
        enum = _cardinality_by_enumeration(
            X,
            y,
            v,
            int(k_max),
            float(C),
            float(big_m),
            config,
            t0,
            force=method == "enumerate",
        )
    elif method in ("auto", "screen"):
        first = None
        if warm_start is not None:
            w0 = np.asarray(warm_start[0], float)
            first = np.argsort(-np.abs(w0), kind="stable")[: min(int(k_max), d)]
        enum = _cardinality_by_dual_screen(
            X,
            y,
            v,
            int(k_max),
            float(C),
            float(big_m),
            config,
            t0,
            first=first,
            share=1.0 if method == "screen" else _ENUM_SHARE,
        )
    if enum is not None and (enum.proven or method in ("enumerate", "screen")):
        return enum.result(d, n, time.perf_counter() - t0)
    start = None
    if warm_start is not None:
        w0 = np.clip(np.asarray(warm_start[0], float), -big_m, big_m)
        keep = np.zeros(d, bool)
        keep[np.argsort(-np.abs(w0))[: int(k_max)]] = True
        w0 = np.where(keep, w0, 0.0)
        b0 = float(warm_start[1])
        xi = np.maximum(0.0, 1.0 - y * (X @ w0 + b0))
        start = np.concatenate([w0, [b0], xi, keep.astype(float)])
    if enum is not None and enum.best_x is not None:
        x_enum = enum.x(d, n)
        if start is None or _cardinality_value(model, x_enum) < _cardinality_value(
            model, start
        ):
            start = x_enum
    left = config.time_limit - (time.perf_counter() - t0)
    res = solve_model(model, replace(config, time_limit=max(1e-3, left)), start=start)
    if res.x is None:
        raise SolverError(
            f"cardinality SVM: no feasible point ({res.status.value}: {res.message})"
        )
    delta = res.x[d + 1 + n :] > 0.5
    w = np.where(delta, res.x[:d], 0.0)
    return CardinalityResult(support=delta, w=w, b=float(res.x[d]), result=res)


def _cardinality_value(model: MipModel, x: np.ndarray) -> float:
    """The MIQP objective ``1/2 x'Qx + c'x`` at ``x``."""
    Qx = model.Q @ x if model.Q is not None else np.zeros_like(x)
    return float(0.5 * x @ Qx + model.c @ x)


@dataclass
class _Enumeration:
    """Cheapest subset QP found by :func:`_cardinality_by_enumeration`."""

    best_obj: float
    best_S: np.ndarray
    best_x: np.ndarray | None  # [w_S, b, xi] of the best subset's QP
    proven: bool
    n_qp: int
    n_subsets: int
    how: str = ""  # how the proof went, when not by solving every subset

    def x(self, d: int, n: int) -> np.ndarray:
        """The best point in the MIQP's columns ``[w (d), b, xi (n), delta (d)]``."""
        assert self.best_x is not None
        k = self.best_S.size
        w = np.zeros(d)
        w[self.best_S] = self.best_x[:k]
        delta = np.zeros(d)
        delta[self.best_S[self.best_x[:k] != 0.0]] = 1.0
        return np.concatenate([w, [self.best_x[k]], self.best_x[k + 1 :], delta])

    def result(self, d: int, n: int, runtime: float) -> CardinalityResult:
        if self.best_x is None:
            raise SolverError(
                f"cardinality SVM: no subset QP solved within the time limit "
                f"({self.n_qp} of {self.n_subsets})"
            )
        x = self.x(d, n)
        delta = x[d + 1 + n :] > 0.5
        if self.proven:
            status, bound, gap = SolveStatus.optimal, self.best_obj, 0.0
            msg = self.how or f"every one of the {self.n_subsets} subsets solved (QP)"
        else:
            status, bound, gap = SolveStatus.time_limit, -math.inf, math.inf
            msg = f"time limit after {self.n_qp} of {self.n_subsets} subset QPs"
            warnings.warn(
                f"cardinality SVM: {msg}; the incumbent is unproven",
                SolverTimeLimitWarning,
                stacklevel=3,
            )
        res = MipResult(
            status=status,
            x=x,
            objective=self.best_obj,
            bound=bound,
            mip_gap=gap,
            runtime=runtime,
            message=msg,
            n_iter=self.n_qp,
        )
        return CardinalityResult(
            support=delta, w=np.where(delta, x[:d], 0.0), b=float(x[d]), result=res
        )


def _cardinality_by_enumeration(
    X: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    k_max: int,
    C: float,
    big_m: float,
    config: MipConfig,
    t0: float,
    force: bool = False,
) -> _Enumeration:
    """Solve the SVM QP of every subset of ``min(k_max, d)`` features (HiGHS QP).

    Returns a result with ``proven=False`` when the budget (80 % of the time limit,
    or the whole limit with ``force``) ran out, or was predicted to run out
    (``force=False``), before the last subset.
    """
    from itertools import combinations

    n, d = X.shape
    k = min(max(int(k_max), 0), d)
    n_subsets = math.comb(d, k)
    share = 1.0 if force else _ENUM_SHARE
    deadline = t0 + share * config.time_limit
    qps = _SubsetQps(X, y, v, k, C, big_m)
    out = _Enumeration(math.inf, np.zeros(0, dtype=np.int64), None, False, 0, n_subsets)
    t_first = time.perf_counter()
    best_model = None
    for S in combinations(range(d), k):
        now = time.perf_counter()
        if now >= deadline:
            return out
        if not force and out.n_qp >= 8 and out.n_qp % 8 == 0:
            # predict the whole enumeration from the QPs so far (again every 8 QPs:
            # on a loaded machine one slow start must not decide it)
            per = (now - t_first) / out.n_qp
            if now + per * (n_subsets - out.n_qp) > deadline:
                return out
        S = np.asarray(S, dtype=np.int64)
        model = qps.model(S)
        res = _solve_subset_qp(model, config, deadline - now)
        if res is None:
            logger.info("cardinality subset QP %s: no solution", S.tolist())
            return out
        out.n_qp += 1
        if res.status is not SolveStatus.optimal or res.x is None:
            return out  # out of time (the subset QP is always feasible)
        if res.objective < out.best_obj:
            out.best_obj, out.best_S, out.best_x = float(res.objective), S, res.x
            best_model = model
    out.proven = True
    _polish_best(out, best_model, config, t0)
    return out


class _SubsetQps:
    """The SVM QPs on ``k``-feature subsets: columns ``[w_S, b, xi]``, ``|w_S| <= M``.

    Everything but the subset's columns of ``y x`` is shared by all subsets.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        v: np.ndarray,
        k: int,
        C: float,
        big_m: float,
    ) -> None:
        n = X.shape[0]
        self.yX = y[:, None] * X
        self._yv = sp.csr_array(y[:, None])
        self._rows = sp.eye_array(n, format="csr")
        self._c = np.concatenate([np.zeros(k + 1), C * v])
        self._lo = np.concatenate([np.full(k, -big_m), [-np.inf], np.zeros(n)])
        self._up = np.concatenate([np.full(k, big_m), [np.inf], np.full(n, np.inf)])
        self._Q = (
            sp.diags_array(np.concatenate([np.ones(k), np.zeros(1 + n)])) if k else None
        )

    def model(self, S: np.ndarray) -> MipModel:
        """The QP on the features ``S`` (``k`` of them)."""
        n = self.yX.shape[0]
        A = sp.hstack([sp.csr_array(self.yX[:, S]), self._yv, self._rows], format="csr")
        return MipModel(
            c=self._c,
            A=A,
            row_lower=np.ones(n),
            row_upper=np.full(n, np.inf),
            col_lower=self._lo,
            col_upper=self._up,
            Q=self._Q,
        )


def _solve_subset_qp(
    model: MipModel, config: MipConfig, time_limit: float
) -> MipResult | None:
    """One subset QP within ``time_limit`` seconds; None if it was not solved.

    HiGHS's active-set QP first, its iterations capped at ``_SUBSET_QP_ITERS`` per
    row and column: with its default Hessian regularisation (1e-7) it can cycle on
    these semidefinite QPs until the time limit (every single-feature QP of a 40 x 12
    problem at ``M = 0.3``, while the interior point took 3 ms), so a stalled run is
    retried unregularised and then by the interior point (:func:`solve_qp_ipm`,
    which gives no duals).
    """
    model = validate_model(model)
    t_end = time.perf_counter() + time_limit
    cap = _SUBSET_QP_ITERS * (model.n_rows + model.n_cols)
    for extra in ({}, {"qp_regularization_value": 0.0}):
        left = t_end - time.perf_counter()
        if left <= 0:
            return None
        try:
            res = solve_highs(
                model,
                config,
                time_limit=left,
                warn=False,
                options={"qp_iteration_limit": cap, **extra},
            )
        except SolverError:
            continue
        if res.status is SolveStatus.optimal and res.x is not None:
            return res
    left = t_end - time.perf_counter()
    if left <= 0:
        return None
    res = solve_qp_ipm(model, time_limit=left)
    return res if res.status is SolveStatus.optimal and res.x is not None else None


#: Iterations per row and column of HiGHS's QP on one subset before the retry
#: (see :func:`_solve_subset_qp`).
_SUBSET_QP_ITERS = 20


def _polish_best(
    out: _Enumeration, best_model: MipModel | None, config: MipConfig, t0: float
) -> None:
    """Solve the winning subset's QP again, unregularised and at tight tolerances.

    HiGHS's QP adds 1e-7 to the Hessian (``qp_regularization_value``) and stops at
    1e-7, which moved decision values by 7e-8 between equivalent models (weights
    against repeated rows).
    """
    left = t0 + config.time_limit - time.perf_counter()
    if out.best_x is not None and best_model is not None and left > 0:
        tight = replace(config, feasibility_tol=_POLISH_TOL, time_limit=left)
        try:
            res = solve_highs(
                best_model,
                tight,
                warn=False,
                options={
                    "dual_feasibility_tolerance": _POLISH_TOL,
                    "qp_regularization_value": 0.0,
                },
            )
        except SolverError as err:
            logger.info("cardinality: tight re-solve failed: %s", err)
        else:
            if res.status is SolveStatus.optimal and res.x is not None:
                out.best_obj, out.best_x = float(res.objective), res.x


def _huber_conjugate(s: np.ndarray, big_m: float) -> np.ndarray:
    """``h(s) = max_{|w| <= M} (w s - w^2 / 2)``: ``s^2 / 2``, linear beyond ``M``."""
    a = np.abs(s)
    return np.where(a <= big_m, 0.5 * s * s, big_m * a - 0.5 * big_m * big_m)


def _iter_subsets_above(
    h: np.ndarray, tau: float, k: int, chunk: int = 1 << 20, count_only: bool = False
) -> Iterator[np.ndarray | int]:
    """The ``k``-subsets of positions of ``h`` whose values sum to more than ``tau``.

    ``h`` must be sorted in decreasing order. Yields the subsets in blocks of at most
    about ``chunk`` rows of increasing positions, shape ``(m, k)`` (or, with
    ``count_only``, the blocks' sizes). Sorted values bound every completion of a
    partial subset by its next values, so the search visits only prefixes that can
    still exceed ``tau``.
    """
    d = h.size
    if k == 0:
        if tau < 0.0:
            yield 1 if count_only else np.zeros((1, 0), dtype=np.int64)
        return
    if k > d:
        return
    cs = np.concatenate([[0.0], np.cumsum(h)])
    neg = -h  # increasing: searchsorted counts the positions whose h exceeds a value

    def with_prefix(prefix: list[int], block: np.ndarray) -> np.ndarray:
        head = np.broadcast_to(
            np.asarray(prefix, dtype=np.int64), (block.shape[0], len(prefix))
        )
        return np.hstack([head, block])

    def search(prefix: list[int], p: int, m: int, acc: float) -> Iterator[Any]:
        if m == 1:
            hi = int(np.searchsorted(neg, -(tau - acc), side="left"))
            if hi > p:
                yield (
                    hi - p
                    if count_only
                    else with_prefix(prefix, np.arange(p, hi, dtype=np.int64)[:, None])
                )
            return
        if m == 2:
            q = np.arange(p, d - 1, dtype=np.int64)
            if q.size == 0:
                return
            lim = np.searchsorted(neg, -(tau - acc - h[q]), side="left")
            cnt = np.clip(lim - q - 1, 0, None)
            if count_only:
                tot = int(cnt.sum())
                if tot:
                    yield tot
                return
            # blocks of consecutive first positions, each about ``chunk`` pairs
            ends = np.cumsum(cnt)
            lo = 0
            while lo < q.size:
                base = int(ends[lo - 1]) if lo else 0
                hi = int(np.searchsorted(ends, base + chunk, side="right"))
                hi = max(hi, lo + 1)
                c = cnt[lo:hi]
                tot = int(c.sum())
                if tot:
                    qq = np.repeat(q[lo:hi], c)
                    rr = qq + 1 + (np.arange(tot) - np.repeat(np.cumsum(c) - c, c))
                    yield with_prefix(prefix, np.column_stack([qq, rr]))
                lo = hi
            return
        for q in range(p, d - m + 1):
            if acc + cs[q + m] - cs[q] <= tau:
                break  # later positions complete no better
            yield from search([*prefix, q], q + 1, m - 1, acc + h[q])

    yield from search([], 0, k, 0.0)


def _subsets_above(h: np.ndarray, tau: float, k: int, cap: int) -> np.ndarray | None:
    """Every ``k``-subset of positions of ``h`` (sorted decreasing) whose values sum to
    more than ``tau``, shape ``(m, k)``; None when there are more than ``cap``."""
    if sum(_take(_iter_subsets_above(h, tau, k, count_only=True), cap + 1)) > cap:
        return None
    blocks = list(_iter_subsets_above(h, tau, k))
    return np.vstack(blocks) if blocks else np.zeros((0, k), dtype=np.int64)


def _take(counts: Iterator[Any], limit: int) -> Iterator[int]:
    """The counts, stopped once their sum exceeds ``limit``."""
    total = 0
    for c in counts:
        total += int(c)
        yield int(c)
        if total > limit:
            return


def _screen_bound(
    base: float, h: np.ndarray, q: np.ndarray, cand: np.ndarray
) -> np.ndarray:
    """One dual point's lower bounds on the subset QPs ``cand`` (rows of features).

    ``base = sum(alpha) - |sum alpha_i y_i| B``, ``h = h(s)`` and ``q = s^2 / 2`` per
    feature. The better of the dual function at ``alpha``, ``base - sum_S h``, and at
    ``t alpha`` for the best ``t`` in (0, 1]: ``t base - sum_S h(t s_j) >= t base -
    t^2 sum_S q_j`` since ``h(u) <= u^2 / 2``, whose maximum is ``base - H`` if
    ``2 H <= base`` and ``base^2 / (4 H)`` otherwise (``H = sum_S q_j``; only ``t -> 0``,
    bound 0, where ``base <= 0``).
    """
    lb = base - h[cand].sum(axis=1)
    if base <= 0.0:
        return lb
    H = q[cand].sum(axis=1)
    with np.errstate(divide="ignore"):
        g = np.where(2.0 * H <= base, base - H, base * base / (4.0 * H))
    return np.maximum(lb, g)


def _cardinality_by_dual_screen(
    X: np.ndarray,
    y: np.ndarray,
    v: np.ndarray,
    k_max: int,
    C: float,
    big_m: float,
    config: MipConfig,
    t0: float,
    first: np.ndarray | None = None,
    share: float = 1.0,
) -> _Enumeration:
    """The cheapest subset QP, with most subsets settled by dual bounds alone.

    Any ``alpha`` with ``0 <= alpha_i <= C v_i`` is feasible in the dual of every
    subset's QP (SPEC S6's cardinality SVM on the features ``S``, ``|w_j| <= M``),
    so weak duality bounds all of them at once::

        P(S) >= sum(alpha) - |sum(alpha_i y_i)| B - sum_{j in S} h(s_j),
        s_j = sum_i alpha_i y_i x_ij,   h(s) = max_{|w| <= M} (w s - w^2 / 2).

    ``B = 1 + M k max|x_ij|`` bounds ``|b|``: the hinge sum is piecewise linear in
    ``b`` with breakpoints ``b = y_i - w.x_i``, so an optimal ``b`` lies at one of
    them. Each bound also takes ``t alpha`` at its best ``t`` in (0, 1]
    (:func:`_screen_bound`). Both are separable over features, so the subsets one
    ``alpha`` cannot settle against the incumbent ``U`` are listed from its sorted
    per-feature terms without visiting the others, and streamed through every other
    ``alpha``'s bound. Each solved QP (promising and random subsets, alternately, until
    that listing leaves at most ``_SCREEN_CAP``) gives its optimal duals as another
    ``alpha`` (balanced so that ``sum alpha_i y_i = 0``) and perhaps a better ``U``.
    The subsets left are solved best bound first, and the list shrinks with every new
    ``alpha`` and ``U``. When the list is empty, every subset either was solved or has
    a bound of at least ``U`` (less ``1e-9 |U|``), so the incumbent is optimal.

    Stops unproven at ``share`` of the time limit. Leukemia_golub (71 x 7129, k = 2,
    25.4M subsets) is proven with 53 QPs at C = 2^-5 and about 1000-1400 at C = 2-4
    (0.5-60 s; docs/benchmarks.md).
    """
    n, d = X.shape
    k = min(max(int(k_max), 0), d)
    n_subsets = math.comb(d, k)
    deadline = t0 + share * config.time_limit
    qps = _SubsetQps(X, y, v, k, C, big_m)
    yX = qps.yX
    cap_alpha = C * v
    b_max = 1.0 + big_m * k * float(np.abs(X).max(initial=0.0))
    pos = y > 0
    out = _Enumeration(math.inf, np.zeros(0, dtype=np.int64), None, False, 0, n_subsets)
    bases: list[float] = []
    hs: list[np.ndarray] = []  # h(s_j) per feature, one array per dual point
    qs: list[np.ndarray] = []  # s_j^2 / 2 per feature
    solved: set[tuple[int, ...]] = set()
    best_model: MipModel | None = None
    rng = np.random.default_rng(0)

    def add_alpha(alpha: np.ndarray) -> None:
        alpha = np.clip(alpha, 0.0, cap_alpha)
        a_pos, a_neg = alpha[pos].sum(), alpha[~pos].sum()
        if a_pos > a_neg:
            alpha[pos] *= a_neg / a_pos
        elif a_neg > a_pos:
            alpha[~pos] *= a_pos / a_neg
        residual = abs(float(alpha @ y))
        s_ = yX.T @ alpha
        bases.append(float(alpha.sum()) - residual * b_max)
        hs.append(_huber_conjugate(s_, big_m))
        qs.append(0.5 * s_ * s_)

    def solve(S: tuple[int, ...]) -> bool:
        """Solve one subset's QP; False when out of time."""
        nonlocal best_model
        now = time.perf_counter()
        if now >= deadline:
            return False
        solved.add(S)
        model = qps.model(np.asarray(S, np.int64))
        res = _solve_subset_qp(model, config, deadline - now)
        if res is None:
            logger.info("cardinality subset QP %s: no solution", list(S))
            return False
        out.n_qp += 1
        if res.status is not SolveStatus.optimal or res.x is None:
            return False
        if res.objective < out.best_obj:
            out.best_obj = float(res.objective)
            out.best_S, out.best_x = np.asarray(S, np.int64), res.x
            best_model = model
        if res.row_duals is not None:
            add_alpha(np.abs(res.row_duals[:n]))
        return True

    def q_limit(a: int) -> float:
        """The scaled bound ``max_t g(t)`` of dual point ``a`` reaches the incumbent
        where ``sum_S q_j`` is at most this."""
        base, ub = bases[a], out.best_obj
        if base <= ub:
            return -math.inf
        return base * base / (4.0 * ub) if 2.0 * ub <= base else base - ub

    def bound_one(a: int, cand: np.ndarray) -> np.ndarray:
        return _screen_bound(bases[a], hs[a], qs[a], cand)

    def bound(cand: np.ndarray, which: range) -> np.ndarray:
        lb = np.full(cand.shape[0], -np.inf)
        for a in which:
            np.maximum(lb, bound_one(a, cand), out=lb)
        return lb

    def unsettled(block: np.ndarray, order: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The subsets of ``block`` no dual point settles, with their best bounds."""
        cut = out.best_obj - 1e-9 * max(1.0, abs(out.best_obj))
        lb = np.full(block.shape[0], -np.inf)
        idx = np.arange(block.shape[0])
        for a in order:
            lb[idx] = np.maximum(lb[idx], bound_one(a, block[idx]))
            idx = idx[lb[idx] < cut]
            if idx.size == 0:
                break
        return block[idx], lb[idx]

    def listing() -> tuple[np.ndarray, np.ndarray] | None:
        """Every subset no dual point settles, or None if that takes too long.

        The subsets one dual point leaves (by ``h`` or by ``q``, whichever leaves
        fewer, at most ``_SCREEN_STREAM``) are streamed in blocks and filtered by
        every other dual point; None when more than ``_SCREEN_CAP`` survive.
        """
        tol = 1e-9 * max(1.0, abs(out.best_obj))
        best = None
        for a in sorted(range(len(bases)), key=lambda a: -bases[a])[:8]:
            for vals, tau in ((hs[a], bases[a] - out.best_obj), (qs[a], q_limit(a))):
                if tau == -math.inf:
                    continue
                srt = np.sort(vals)[::-1]
                m = sum(
                    _take(
                        _iter_subsets_above(srt, tau + tol, k, count_only=True),
                        _SCREEN_STREAM,
                    )
                )
                if m <= _SCREEN_STREAM and (best is None or m < best[0]):
                    best = (m, a, vals, tau)
        if best is None:
            return None
        _, a0, vals, tau = best
        order = np.argsort(-vals, kind="stable")
        others = [a for a in range(len(bases)) if a != a0]
        others.sort(key=lambda a: -bases[a])
        kept: list[np.ndarray] = []
        lbs: list[np.ndarray] = []
        total = 0
        for block in _iter_subsets_above(vals[order], tau + tol, k):
            if time.perf_counter() >= deadline:
                return None
            c, lb = unsettled(np.sort(order[block], axis=1), [a0, *others])
            total += c.shape[0]
            if total > _SCREEN_CAP:
                return None
            kept.append(c)
            lbs.append(lb)
        if not kept:
            return np.zeros((0, k), dtype=np.int64), np.zeros(0)
        return np.vstack(kept), np.concatenate(lbs)

    def promising() -> tuple[int, ...] | None:
        """The unsolved subset of least bound among the latest ``h``'s top features."""
        for r in (k + 6, k + 12, 2 * k + 24):
            top = np.argsort(-hs[-1], kind="stable")[: min(r, d)]
            cand = np.sort(np.array(list(combinations(top.tolist(), k))), axis=1)
            order = np.argsort(bound(cand, range(len(bases))), kind="stable")
            for i in order:
                S = tuple(int(j) for j in cand[i])
                if S not in solved:
                    return S
        return None

    def random_subset() -> tuple[int, ...]:
        """A subset drawn at random: its duals settle typical subsets."""
        return tuple(sorted(int(j) for j in rng.choice(d, size=k, replace=False)))

    # a dual point before any QP: the upper bounds C v (balanced), which also
    # rank the features when no first subset is given (largest |s_j|)
    add_alpha(cap_alpha.copy())
    if first is None or first.size != k:
        first = np.argsort(-np.abs(yX.T @ cap_alpha), kind="stable")[:k]
    if not solve(tuple(sorted(int(j) for j in first))):
        return out
    # more dual points (promising and random subsets, alternately) until the subsets
    # none of them settles can be listed; listing is tried after 1, 2, 4, ... QPs
    listed = None
    next_try = 1
    while listed is None:
        if out.n_qp >= next_try:
            listed = listing()
            next_try *= 2
            if listed is not None:
                break
        if len(solved) >= n_subsets:
            listed = np.zeros((0, k), dtype=np.int64), np.zeros(0)
            break  # every subset solved
        S = promising() if out.n_qp % 2 else None
        for _ in range(16 if S is None else 0):
            S = random_subset()
            if S not in solved:
                break
        if S is None or S in solved:
            S = promising()
        if S is None or S in solved or not solve(S):
            return out
    cand, lb = listed
    n_alpha = len(bases)
    while True:
        tol = 1e-9 * max(1.0, abs(out.best_obj))
        if len(bases) > n_alpha:
            np.maximum(lb, bound(cand, range(n_alpha, len(bases))), out=lb)
            n_alpha = len(bases)
        keep = lb < out.best_obj - tol
        cand, lb = cand[keep], lb[keep]
        if cand.shape[0] == 0:
            break
        i = int(np.argmin(lb))
        S = tuple(int(j) for j in cand[i])
        cand, lb = np.delete(cand, i, axis=0), np.delete(lb, i)
        if S not in solved and not solve(S):
            return out
    out.proven = True
    out.how = (
        f"all {n_subsets} subsets settled: {out.n_qp} solved (QP), the rest by "
        f"{len(bases)} dual bounds"
    )
    _polish_best(out, best_model, config, t0)
    return out


#: ``method="auto"`` settles subsets by dual bounds (:func:`_cardinality_by_dual_screen`)
#: when there are more than this many; fewer are all solved.
CARDINALITY_SCREEN_MIN = 64

#: The dual screen lists at most this many unsettled subsets at once; until its
#: bounds leave fewer, it solves more subsets for more bounds.
_SCREEN_CAP = 1_000_000

#: ... and streams at most this many subsets (those one dual point leaves) through
#: all its bounds to find them.
_SCREEN_STREAM = 50_000_000


#: Share of the time limit the enumeration may take with ``method="auto"``; the MIQP
#: gets the rest, from the best subset so far. The MIQP rarely closes a gap the
#: enumeration could not (gastrointestinal, k = 1 of 1396 genes: gap 0.93 at 300 s),
#: so the enumeration gets most of it.
_ENUM_SHARE = 0.8

#: Primal and dual feasibility tolerance of the enumeration's final re-solve.
_POLISH_TOL = 1e-10
