"""Subset heuristics and exact subset tests for the feature-selection MILP (SPEC S6).

Two tools used by :func:`torchsvm.mip.feature_selection.solve_feature_selection`:

- :func:`fit_subsets`: linear SVMs on many candidate feature subsets, fitted as ONE
  batch of the batched solver. The subsets cannot share a Gram matrix, so the batch is
  built on stacked copies of the rows, copy ``p`` holding ``X`` with the features
  outside subset ``p`` zeroed; problem ``p`` gives positive bounds only to copy ``p``
  (all other rows have ``u = 0`` and stay at ``alpha = 0``), so its dual is exactly the
  SVM on subset ``p``. Each SVM direction is turned into a (P1) point by
  :func:`threshold_start` (best intercept and scale for the floors).
- :func:`separable_2d`: an exact test that no linear classifier on one or two features
  meets both floors. A (P1) point has ``y_i (w . x_i + b) >= 1 > 0`` on its rows with
  ``z_i = 1``, so "no hyperplane classifies strictly enough rows of each class" proves
  a subset infeasible for (P1) whatever the big-M values. In the plane the order of
  the projections ``x_i . u`` only changes when ``u`` crosses a direction orthogonal
  to some ``x_i - x_j``; one direction inside every arc between consecutive critical
  angles, with every threshold between consecutive projections, enumerates every
  strict dichotomy (``O(n^2)`` directions, ``O(n^3 log n)`` work).
"""

from __future__ import annotations

import logging
import time
from itertools import combinations, product

import numpy as np
import scipy.sparse as sp

from torchsvm.config import SolverConfig
from torchsvm.exceptions import DataError
from torchsvm.mip.model import MipConfig, MipModel
from torchsvm.mip.solve import solve_model
from torchsvm.problems.selection import SelectionProblem
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "fit_subsets",
    "margin_point",
    "screen_pairs",
    "screen_triples",
    "separable_2d",
    "separable_by_planes",
    "threshold_start",
]


def threshold_start(
    problem: SelectionProblem,
    w: np.ndarray,
    support: np.ndarray,
    big_m: float,
    big_m_w: float | None = None,
) -> np.ndarray | None:
    """(P1) point ``[w, b, z, delta]`` from a direction ``w`` on ``support``, or None.

    With scores ``s = X w``, let ``s+`` be the ``k+``-th largest positive score and
    ``s-`` the ``k-``-th smallest negative one (``k+-`` the rows the floors need,
    weighted). A threshold separating both counts with margin exists iff
    ``s+ > s-``; ``b = -(s+ + s-) / 2`` and the scale ``2 / (s+ - s-)`` put those rows
    at ``y f >= 1``. The point is returned if it satisfies ``|w_k| <= M3`` and
    ``y_i f(x_i) >= 1 - M2`` on every row.
    """
    X, y, v = problem.X, problem.y, problem.v
    M2 = float(big_m)
    M3 = float(big_m if big_m_w is None else big_m_w)
    w = np.where(support, np.asarray(w, dtype=np.float64), 0.0)
    s = X @ w
    pos, neg = y > 0, y < 0

    def kth(scores: np.ndarray, weights: np.ndarray, need: float) -> float | None:
        if need <= 0:
            return None
        order = np.argsort(-scores)
        cum = np.cumsum(weights[order])
        j = int(np.searchsorted(cum, need - 1e-9))
        return None if j >= order.size else float(scores[order][j])

    sp_ = kth(s[pos], v[pos], problem.need_pos)
    sn_ = kth(-s[neg], v[neg], problem.need_neg)
    if sp_ is None and sn_ is None:
        return None
    hi = sp_ if sp_ is not None else float(np.max(s)) + 1.0
    lo = -sn_ if sn_ is not None else float(np.min(s)) - 1.0
    if sp_ is None:
        hi = lo + 2.0 * max(1.0, float(np.ptp(s)))
    if sn_ is None:
        lo = hi - 2.0 * max(1.0, float(np.ptp(s)))
    if not hi - lo > 1e-9 * max(1.0, float(np.abs(s).max())):
        return None
    scale = 2.0 / (hi - lo)
    ws, bs = w * scale, -0.5 * (hi + lo) * scale
    m = y * (X @ ws + bs)
    if np.any(np.abs(ws) > M3) or np.any(m < 1.0 - M2 + 1e-9):
        return None
    z = (m >= 1.0 - 1e-9).astype(float)
    return np.concatenate([ws, [bs], z, support.astype(float)])


def _chosen_rows(problem: SelectionProblem, s: np.ndarray) -> np.ndarray:
    """Rows a threshold on scores ``s`` should count: the ``k+`` best positives and
    the ``k-`` best negatives (by weight), i.e. the rows (P1)'s ``z`` would keep."""
    y, v = problem.y, problem.v
    keep = np.zeros(y.shape[0], dtype=bool)
    for cls, need, sign in (
        (y > 0, problem.need_pos, -1.0),
        (y < 0, problem.need_neg, 1.0),
    ):
        idx = np.flatnonzero(cls)
        order = idx[np.argsort(sign * s[idx])]
        cum = np.cumsum(v[order])
        j = int(np.searchsorted(cum, need - 1e-9)) + 1 if need > 0 else 0
        keep[order[:j]] = True
    return keep


def fit_subsets(
    problem: SelectionProblem,
    subsets: np.ndarray,
    class_ratios: tuple[float, ...] = (1.0,),
    C: float = 1.0,
    iterations: int = 4,
    max_rows: int = 2_000,
    deadline: float | None = None,
    timing: dict[str, float] | None = None,
) -> np.ndarray:
    """Linear SVM directions for every subset (rows of ``subsets``), one batch.

    After the first fit each SVM is refitted ``iterations - 1`` times on the rows its
    direction counts for the floors (:func:`_chosen_rows`; the other rows keep 2% of
    their weight): an alternating heuristic for (P1)'s ``z``.

    Parameters
    ----------
    problem : SelectionProblem
    subsets : ndarray of shape (P, d) of bool
    class_ratios : tuple of float
        Each subset is fitted once per ratio ``r`` with the positive rows' bounds
        multiplied by ``r`` (different TPR/TNR trade-offs for the floors).
    C : float
        Penalty per row (times the row weight).
    iterations : int
        Fits per problem (the batch is solved ``iterations`` times).
    max_rows : int
        Stacked rows per batch; larger requests are split into several batches. Each
        problem of a batch spans all its stacked rows (zero bounds off its own block),
        so a batch costs about (subsets per batch)^2: small batches are cheaper in
        total and let the deadline stop the work between them.
    deadline : float, optional
        ``time.perf_counter()`` value after which no further batch is started, nor
        one whose predicted time (the last solve's) would end past it (directions
        not fitted stay zero).
    timing : dict, optional
        ``{"last": seconds}`` of the last batch solve, read and updated here, so that
        the prediction carries over between calls.

    Returns
    -------
    ndarray of shape (iterations, P * len(class_ratios), d)
        Directions ``w`` (zero off each subset), subset-major.
    """
    X, y, v = problem.X, problem.y, problem.v
    n, d = X.shape
    subsets = np.asarray(subsets, dtype=bool)
    R = len(class_ratios)
    out = np.zeros((iterations, subsets.shape[0] * R, d))
    nsub = max(1, max_rows // max(1, n))
    # the problems differ in their row blocks, class ratios and row weights, not in
    # C: the solver sees that their bounds are not proportional and solves them
    # without the C path (box_qp.c_path_sources)
    solver = BoxQpSolver(SolverConfig(tol=1e-6))
    ratio = np.asarray(class_ratios, dtype=np.float64)
    # seconds of the last batch solve (predicts the next one)
    last = 0.0 if timing is None else float(timing.get("last", 0.0))
    for s in range(0, subsets.shape[0], nsub):
        idx = np.arange(s, min(subsets.shape[0], s + nsub))
        P = idx.size
        Xb = np.concatenate([X * subsets[p] for p in idx])
        yb = np.tile(y, P)
        base = C * v[None, :] * np.where(y[None, :] > 0, ratio[:, None], 1.0)  # (R, n)
        row_w = np.ones((P * R, n))
        for it in range(iterations):
            if deadline is not None and time.perf_counter() + last > deadline:
                break
            U = np.zeros((P * R, n * P))
            for a in range(P):
                U[a * R : (a + 1) * R, a * n : (a + 1) * n] = (
                    base * row_w[a * R : (a + 1) * R]
                )
            try:
                prob = BatchedSvmProblem.from_bounds(Xb, yb, U, kernel="linear")
            except DataError as err:  # pragma: no cover - validated inputs
                logger.info("subset batch skipped: %s", err)
                break
            t_solve = time.perf_counter()
            sol = solver(prob)
            last = time.perf_counter() - t_solve
            if timing is not None:
                timing["last"] = last
            coef = sol.alpha.detach().cpu().numpy() * yb[None, :]
            W = coef @ Xb  # (P*R, d)
            for a, p in enumerate(idx):
                for t in range(R):
                    w = np.where(subsets[p], W[a * R + t], 0.0)
                    out[it, p * R + t] = w
                    row_w[a * R + t] = np.where(_chosen_rows(problem, X @ w), 1.0, 0.02)
    return out


def separable_2d(
    problem: SelectionProblem,
    features: np.ndarray,
    witness: list[np.ndarray] | None = None,
) -> bool:
    """Whether some hyperplane on ``features`` (at most 2) meets both floors strictly.

    ``False`` proves that no (P1) point uses only these features (module docstring).
    With ``witness`` (a list) and a nonempty ``features``, the rows that the first
    hyperplane found classifies strictly right are appended to it (a set of rows
    meeting both floors, for :func:`margin_point`).
    """
    feats = np.flatnonzero(np.asarray(features, dtype=bool))
    if feats.size > 2:
        raise ValueError("separable_2d takes at most two features")
    X, y, v = problem.X[:, feats], problem.y, problem.v
    need_p, need_n = problem.need_pos, problem.need_neg
    pos = y > 0
    # w = 0: b > 0 classifies every positive and no negative (and vice versa)
    if (need_n <= 0 and v[pos].sum() >= need_p) or (
        need_p <= 0 and v[~pos].sum() >= need_n
    ):
        return True
    if feats.size == 0:
        return False
    if feats.size == 1:
        dirs = np.array([[1.0], [-1.0]])
    else:
        P = np.unique(X, axis=0)
        if P.shape[0] == 1:
            return False
        i, j = np.triu_indices(P.shape[0], 1)
        dx = P[j] - P[i]
        base = np.arctan2(dx[:, 1], dx[:, 0]) + 0.5 * np.pi
        crit = np.unique(np.mod(np.concatenate([base, base + np.pi]), 2 * np.pi))
        nxt = np.concatenate([crit[1:], [crit[0] + 2 * np.pi]])
        mid = 0.5 * (crit + nxt)
        dirs = np.stack([np.cos(mid), np.sin(mid)], axis=1)
    vp = np.where(pos, v, 0.0)
    vn = np.where(pos, 0.0, v)
    chunk = max(1, 2_000_000 // max(1, X.shape[0]))
    for s in range(0, dirs.shape[0], chunk):
        ok, order, Ss = _threshold_cuts(dirs[s : s + chunk] @ X.T, vp, vn, problem)
        if ok.any():
            if witness is not None:
                # the widest gap among the cuts that meet the floors: the largest
                # margin, so the fewest rows beyond the big-M in margin_point
                gap = np.full(ok.shape, np.inf)
                gap[:, 1:-1] = Ss[:, 1:] - Ss[:, :-1]
                score = np.where(ok, gap, -1.0)
                m, t = np.unravel_index(int(np.argmax(score)), ok.shape)
                right = np.zeros(X.shape[0], dtype=bool)
                right[order[m, :t]] = True  # below the cut: classified negative
                witness.append(np.where(right, ~pos, pos))
            return True
    return False


def _threshold_cuts(
    S: np.ndarray, vp: np.ndarray, vn: np.ndarray, problem: SelectionProblem
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which thresholds on each row of projections ``S`` (m, n) meet both floors.

    Returns ``ok`` of shape ``(m, n + 1)`` (the cut after sorted position ``t``:
    negatives below, positives above, strictly), the sort ``order`` and the sorted
    projections. ``vp`` / ``vn`` are the row weights of the positives / negatives.
    """
    order = np.argsort(S, axis=1, kind="stable")
    Ss = np.take_along_axis(S, order, axis=1)
    zero = np.zeros((S.shape[0], 1))
    below_n = np.concatenate([zero, np.cumsum(vn[order], 1)], 1)
    wp = vp[order]
    above_p = wp.sum(1, keepdims=True) - np.concatenate([zero, np.cumsum(wp, 1)], 1)
    # a cut between equal projections is not a strict threshold
    # (exact equality only: identical rows; treating near-equal projections as
    # separable errs on the safe side of an infeasibility proof)
    edge = np.zeros((S.shape[0], 1), dtype=bool)
    tie = np.concatenate([edge, Ss[:, 1:] == Ss[:, :-1], edge], 1)
    need_p, need_n = problem.need_pos, problem.need_neg
    ok = (below_n >= need_n - 1e-9) & (above_p >= need_p - 1e-9) & ~tie
    return ok, order, Ss


def separable_1d(problem: SelectionProblem, big_m: float | None = None) -> np.ndarray:
    """:func:`separable_2d` on every single feature at once: a bool array ``(d,)``.

    One sort per feature and direction, in chunks of about two million entries;
    ``False`` at ``k`` proves that no (P1) point uses feature ``k`` alone. Where
    ``w = 0`` meets both floors every entry is True (as :func:`separable_2d`).

    With ``big_m``, a feature passes only where a threshold also leaves a gap the
    bound ``|w_k| <= big_m`` can span: a (P1) point on feature ``k`` alone keeps its
    positives at ``w_k x_k + b >= 1`` and its negatives at ``<= -1``, so the kept rows
    of the two classes are at least ``2 / |w_k| >= 2 / big_m`` apart along
    ``sign(w_k) x_k``. The test shifts the positives by ``(2 / big_m)(1 - 1e-9)``
    toward the negatives and asks for a strict threshold, so a gap of exactly
    ``2 / big_m`` still passes (the safe side of a refutation); the rows' own big-M
    (dropped rows' slack) only shrinks (P1)'s set further and is not used. Without
    it a feature that splits the classes by a hair (leukemia_golub: 0.015, which
    needs ``|w_k| >= 131`` against ``big_m = 100``) passes, and no size bound follows.
    """
    X, y, v = problem.X, problem.y, problem.v
    n, d = X.shape
    if separable_2d(problem, np.zeros(d, dtype=bool)):
        return np.ones(d, dtype=bool)
    pos = y > 0
    vp = np.where(pos, v, 0.0)
    vn = np.where(pos, 0.0, v)
    shift = 0.0 if big_m is None else (2.0 / float(big_m)) * (1.0 - 1e-9)
    sp = np.where(pos, shift, 0.0)
    out = np.zeros(d, dtype=bool)
    chunk = max(1, 1_000_000 // max(1, n))
    for s in range(0, d, chunk):
        cols = X[:, s : s + chunk].T  # (m, n)
        both = np.concatenate([cols - sp, -cols - sp])
        ok = _threshold_cuts(both, vp, vn, problem)[0].any(1)
        m = cols.shape[0]
        out[s : s + m] = ok[:m] | ok[m:]
    return out


def _dominance_masks(
    problem: SelectionProblem,
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Bit masks of the quadrant test (:func:`screen_pairs`), or None if it does not apply.

    Returns ``(B, v_soft, slack)``: ``B[s, k, o]`` (uint64 words over the hard class's
    rows) marks the hard rows ``h`` with ``sgn_s (h_k - o_k) <= 0`` for soft row ``o``
    (``sgn_0 = +1``, ``sgn_1 = -1``); ``v_soft`` the soft rows' weights and ``slack``
    the weight of soft rows that may be dropped.
    """
    X, y, v = problem.X, problem.y, problem.v
    need = {1: problem.need_pos, -1: problem.need_neg}
    if need[1] <= 0 or need[-1] <= 0:
        return None  # w = 0 may be feasible; the test assumes rows of both classes
    hard = None
    for cls in (1, -1):
        m = y == cls
        # every row of this class must be kept: dropping any one misses the floor
        # (claimed only with a clear margin, the safe side of a refutation)
        if v[m].sum() - need[cls] < v[m].min() - 1e-9:
            hard = cls
            break
    if hard is None:
        return None
    H, O = X[y == hard], X[y == -hard]
    v_soft = v[y == -hard]
    slack = float(v_soft.sum() - need[-hard])
    n_words = (H.shape[0] + 63) // 64
    d = X.shape[1]
    if 2 * d * O.shape[0] * n_words > _MAX_MASK_WORDS:
        return None
    B = np.zeros((2, d, O.shape[0], n_words), dtype=np.uint64)
    for s, sgn in enumerate((1.0, -1.0)):
        for k in range(d):
            B[s, k] = _pack_bits(sgn * H[None, :, k] <= sgn * O[:, None, k])
    return B, v_soft, slack


def screen_pairs(
    problem: SelectionProblem,
    deadline: float | None = None,
    max_candidates: int = 5_000,
    big_m: float | None = None,
) -> np.ndarray | None:
    """The feature pairs that may meet both floors; every other pair is refuted.

    Applies when one class (the *hard* class) must keep every row: its floor cannot
    spare a single row (e.g. a Hoeffding floor capped at 1). A (P1) point has
    ``y_i f(x_i) >= 1`` on its kept rows, so with ``u = y_hard w`` every kept soft row
    ``o`` and every hard row ``h`` satisfy ``u . (h - o) >= 2 > 0``. If ``u`` lies in
    the closed quadrant of signs ``(s, t)`` on features ``(k, l)`` and some hard row
    has ``s (h_k - o_k) <= 0`` and ``t (h_l - o_l) <= 0``, then ``u . (h - o) <= 0``:
    ``o`` must be dropped. A quadrant whose forced soft rows weigh more than the soft
    class can spare holds no (P1) direction; a pair whose four quadrants are all
    refuted is infeasible whatever the big-M values (``w = 0`` is excluded because
    both floors need rows). The test is bit masks over the hard rows (one AND per
    soft row and quadrant); the pairs it leaves open are settled by the exact planar
    test :func:`separable_2d`, or, when no row of either class may be dropped and
    ``big_m`` is given, by (P1) restricted to the pair, then an LP (``|w_k| <= big_m``,
    margin 1 on every row; HiGHS proves its infeasibility, as for the subset MILPs).

    Parameters
    ----------
    problem : SelectionProblem
    deadline : float, optional
        ``time.perf_counter()`` value; past it the screen gives up (None).
    max_candidates : int
        Give up (None) when more pairs than this pass the quadrant test.
    big_m : float, optional
        ``M3`` of (P1): settle the open pairs by the LP where no row may be dropped.

    Returns
    -------
    ndarray of shape (m, 2) or None
        The pairs ``(k, l)``, ``k < l``, that :func:`separable_2d` (or the LP) accepts
        (empty: no pair of features meets the floors), or None when the test does
        not apply (neither class is hard, or the masks would be too large) or gave up.
    """
    got = _dominance_masks(problem)
    if got is None:
        return None
    B, v_soft, slack = got
    d = problem.X.shape[1]
    limit = slack + 1e-9 * max(1.0, float(v_soft.sum()))
    # no soft row may be dropped: a quadrant is open only without any forced row
    strict = limit < float(v_soft.min())
    one_word = B.shape[3] == 1
    cand: list[np.ndarray] = []
    n_cand = 0
    for k in range(d - 1):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        open_ = np.zeros(d - k - 1, dtype=bool)
        for s in (0, 1):
            for t in (0, 1):
                if one_word:
                    forced = (B[s, k, :, 0][None] & B[t, k + 1 :, :, 0]) != 0
                else:  # (l, |O|)
                    forced = np.any(B[s, k][None] & B[t, k + 1 :], axis=2)
                if strict:
                    open_ |= ~forced.any(axis=1)
                else:
                    open_ |= forced @ v_soft <= limit
        ls = k + 1 + np.flatnonzero(open_)
        if ls.size:
            cand.append(np.stack([np.full(ls.size, k), ls], axis=1))
            n_cand += ls.size
            if n_cand > max_candidates:
                return None
    pairs = np.concatenate(cand) if cand else np.zeros((0, 2), dtype=np.int64)
    keep = np.zeros(pairs.shape[0], dtype=bool)
    for i, (k, l) in enumerate(pairs):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        if strict and big_m is not None:
            keep[i] = _pair_lp(problem, int(k), int(l), big_m)
        else:
            mask = np.zeros(d, dtype=bool)
            mask[[k, l]] = True
            keep[i] = separable_2d(problem, mask)
    return pairs[keep]


def _pair_lp(problem: SelectionProblem, k: int, l: int, big_m: float) -> bool:
    """Whether (P1) on features ``{k, l}`` with every row kept is feasible (an LP).

    ``y_i (w_k x_ik + w_l x_il + b) >= 1`` for all rows, ``|w| <= big_m``; anything
    but a proven infeasibility counts as feasible (the safe side of a refutation).
    """
    return _subset_lp(problem, np.array([k, l]), np.full(2, float(big_m)))


def _subset_lp(
    problem: SelectionProblem, feats: np.ndarray, bounds: np.ndarray
) -> bool:
    """Whether ``y_i (w . x_i[feats] + b) >= 1`` on every row has a solution with
    ``|w_j| <= bounds[j]`` (an LP; anything but a proven infeasibility counts as
    feasible)."""
    return _subset_feasible(problem, feats, bounds, None)


def _subset_milp(
    problem: SelectionProblem, feats: np.ndarray, bounds: np.ndarray, big_m: float
) -> bool:
    """Whether (P1) restricted to ``feats`` is feasible: a MILP with the ``z``
    binaries (``y_i (w . x_i + b) >= 1 - big_m (1 - z_i)``, both floors on the
    weighted ``z``, ``|w_j| <= bounds[j]``). Anything but a proven infeasibility
    counts as feasible (the safe side of a refutation)."""
    return _subset_feasible(problem, feats, bounds, float(big_m))


def _subset_feasible(
    problem: SelectionProblem,
    feats: np.ndarray,
    bounds: np.ndarray,
    big_m: float | None,
) -> bool:
    """(P1) on ``feats`` with ``|w_j| <= bounds[j]``: every row at margin 1 (an LP,
    ``big_m`` None), or rows dropped within the floors (the ``z`` binaries with row
    big-M ``big_m``). Columns ``[w, b(, z)]``; False only on a proven infeasibility."""
    X, y = problem.X[:, feats], problem.y
    n, k = X.shape
    margins = sp.csr_array(np.hstack([y[:, None] * X, y[:, None]]))
    col_lower = np.concatenate([-bounds, [-np.inf]])
    col_upper = np.concatenate([bounds, [np.inf]])
    if big_m is None:
        model = MipModel(
            c=np.zeros(k + 1),
            A=margins,
            row_lower=np.ones(n),
            row_upper=np.full(n, np.inf),
            col_lower=col_lower,
            col_upper=col_upper,
        )
    else:
        v, pos = problem.v, y > 0
        A = sp.vstack(
            [
                sp.hstack([margins, sp.diags_array(-big_m * np.ones(n))]),
                sp.csr_array(np.concatenate([np.zeros(k + 1), v * pos])[None, :]),
                sp.csr_array(np.concatenate([np.zeros(k + 1), v * ~pos])[None, :]),
            ],
            format="csr",
        )
        model = MipModel(
            c=np.zeros(k + 1 + n),
            A=A,
            row_lower=np.concatenate(
                [np.full(n, 1.0 - big_m), [problem.need_pos, problem.need_neg]]
            ),
            row_upper=np.full(n + 2, np.inf),
            col_lower=np.concatenate([col_lower, np.zeros(n)]),
            col_upper=np.concatenate([col_upper, np.ones(n)]),
            integrality=np.concatenate(
                [np.zeros(k + 1, dtype=bool), np.ones(n, dtype=bool)]
            ),
        )
    try:
        res = solve_model(model, MipConfig(time_limit=10.0))
    except Exception:  # noqa: BLE001 - any failure: not refuted
        return True
    return res.status is not SolveStatus.infeasible


#: Largest bit-mask array (uint64 words) :func:`screen_pairs` builds.
_MAX_MASK_WORDS = 20_000_000

#: Largest array of row differences (floats) :func:`screen_triples` builds.
_MAX_DIFFERENCES = 30_000_000


def _pack_bits(M: np.ndarray) -> np.ndarray:
    """bool ``(r, c)`` -> uint64 ``(r, ceil(c / 64))``; bit ``i`` of word ``w`` is
    column ``64 w + i``."""
    r, c = M.shape
    pad = np.zeros((r, -(-c // 64) * 64), dtype=bool)
    pad[:, :c] = M
    return np.packbits(pad, axis=1, bitorder="little").view("<u8")


def screen_triples(
    problem: SelectionProblem,
    big_m: float,
    deadline: float | None = None,
    n_bytes: int = 16,
    depth: int = 3,
    max_open: int = 1_000_000,
    stats: dict[str, float] | None = None,
    max_drops: int = 3,
    depth_drops: int = 7,
    stop_cost: float | None = None,
) -> np.ndarray | None:
    """The feature triples on which (P1) is feasible (every other triple is refuted).

    Must be called only once every single feature and every pair of features is
    refuted for (P1) with this ``big_m`` (the exact 1-D test and
    :func:`screen_pairs`). Where a floor lets its class drop rows, at most
    ``max_drops`` rows in all, the screen of :func:`_screen_triples_drops` runs (the
    same steps, each octant or cone refuted when its witnesses admit no allowed drop
    set); with larger budgets it does not apply (None). The rest of this docstring
    is the case where neither class may drop a row (both floors capped at 1, or
    short of 1 by less than one row). A (P1) point on a triple then has
    ``u . D_j >= 2`` for every difference ``D_j = h - o`` of a positive row ``h``
    and a negative row ``o`` (``u = w`` on the triple), with ``|u_k| <= M``, so
    ``||u||_1 <= 3M``. Steps, all exact:

    1. Reduction. A constant column only shifts ``b``: a triple holding one is as
       feasible as its other two features (refuted). Identical columns ``k, k'``
       add up, ``w_k + w_k'`` with bound ``2M``: a triple holding both is the pair
       of ``k`` and the third feature with ``|w_k| <= 2M``, checked here (quadrant
       test, then the LP), and the other triples go through one column per class.
    2. Octant test (bit masks over the ``D_j``, big-M free): if ``u`` lies in the
       closed octant of signs ``sigma``, a ``D_j`` with ``sigma_i D_ji <= 0`` on all
       three features has ``u . D_j <= 0``. A triple with a ``D_j`` in every octant is
       refuted. Pairs of features ``(k, l)`` and a quadrant give the set ``Q`` of
       ``D_j`` violating on both; a table over the ``n_bytes`` fullest bytes of ``Q``
       lists the third features ``m`` that could leave the octant open, and those
       candidates get the test on every ``D_j``.
    3. Cone cover of each open octant: a cone spanned by rays ``r_1, r_2, r_3`` is
       refuted when one ``D_j`` has ``r_i . D_j <= tau ||r_i||_1`` on all three
       rays (then ``u . D_j <= tau ||u||_1 <= 3 M tau < 2`` on the cone, with
       ``tau = 1 / (6M)``). The octant is split at its edges' midpoints into 4
       cones, recursively to ``depth`` (the first split on bool arrays, then
       floats).
    4. The triples of the octants left get (P1)'s LP on the triple (margin 1 on
       every row, ``|w_k| <= big_m``; HiGHS proves infeasibility).

    Parameters
    ----------
    problem : SelectionProblem
    big_m : float
        ``M3`` of (P1).
    deadline : float, optional
        ``time.perf_counter()`` value; past it the screen gives up (None), and so
        it does as soon as step 2, after 2 % of its triples, forecasts (at the pace
        so far) that it ends past it.
    n_bytes : int
        Bytes of ``Q`` the table of step 2 uses.
    depth : int
        Splits of step 3.
    max_open : int
        Give up (None) when more octants than this stay open after step 2.
    stats : dict, optional
        Filled with the columns kept by step 1 (``columns``), the octants open
        after step 2 (``open``) and after step 3 (``covered_open``), the LPs of
        step 4 (``lps``) and the seconds of steps 2-4 (``s_octants``, ``s_cover``,
        ``s_lp``); with droppable rows also the most positives and negatives a drop
        set may hold (``drops_pos``, ``drops_neg``).
    max_drops : int
        Most rows (both classes together) the floors may let (P1) drop for the
        screen to apply.
    depth_drops : int
        Splits of step 3 where rows may be dropped (compiled; a cone refuted early
        costs no further splits, so deeper splits are cheap and leave fewer MILPs).
    stop_cost : float, optional
        Where rows may be dropped: stop at the first block of triples (in the order
        of their smallest feature) that yields a feasible triple of cost (by
        ``problem.costs``) at most this, and return the feasible triples found so far
        (``stats["partial"]``). Such a result is never empty, so it is never taken
        for a refutation; a caller passing the sum of the three least costs gets an
        incumbent at its proven bound.

    Returns
    -------
    ndarray of shape (m, 3) or None
        Every triple ``k < l < m`` on which (P1) is feasible, in lexicographic
        order (empty: no triple of features meets the floors), or None when the
        screen does not apply (more than ``max_drops`` rows may be dropped, or the
        masks would be too large) or gave up.
    """
    X, y, v = problem.X, problem.y, problem.v
    n, d = X.shape
    pos = y > 0
    M = float(big_m)
    strict = True
    for cls, need in ((pos, problem.need_pos), (~pos, problem.need_neg)):
        if need <= 0 or not cls.any():
            return None
        if v[cls].sum() - need >= v[cls].min() - 1e-9:
            strict = False  # this class may drop a row
    if not strict:
        return _screen_triples_drops(
            problem, M, deadline, depth_drops, max_open, max_drops, stats, stop_cost
        )
    H, O = X[pos], X[~pos]
    J = H.shape[0] * O.shape[0]
    # step 1: one column per class of identical non-constant columns
    reps, members = _column_classes(X)
    dr = reps.size
    nw = -(-J // 64)
    if 2 * dr * nw + 2 * 8 * nw * 256 * (-(-dr // 64)) > _MAX_MASK_WORDS:
        return None
    if J * dr > _MAX_DIFFERENCES:
        return None
    D = (H[:, None, reps] - O[None, :, reps]).reshape(J, dr)
    tau = 1.0 / (6.0 * M)
    if not 1e-12 * max(1.0, float(np.abs(D).max())) < tau:
        return None  # rounding could exceed the cover's tolerance
    # rows of D in a fixed pseudo-random order: the bytes of step 2 sample them
    D = D[np.random.default_rng(0).permutation(J)]
    # Vp[r][k]: bits over j of "D_jk violates sign r of u_k" (0: u_k >= 0, D_jk <= 0)
    Vp = [_pack_bits((D <= 0).T), _pack_bits((D >= 0).T)]
    found: list[tuple[int, int, int]] = []
    # triples with two identical columns: the pair with the doubled bound
    for c, mem in enumerate(members):
        if mem.size < 2:
            continue
        others = np.delete(np.arange(dr), c)
        open_ = np.zeros(others.size, dtype=bool)
        for s in (0, 1):
            for t in (0, 1):
                open_ |= ~np.any(Vp[s][c][None, :] & Vp[t][others], axis=1)
        for o in others[open_]:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            if _subset_lp(problem, np.array([reps[c], reps[o]]), np.array([2 * M, M])):
                for a, b in combinations(mem, 2):
                    for e in members[o]:
                        found.append(tuple(sorted((int(a), int(b), int(e)))))
    st = {} if stats is None else stats
    st["columns"] = dr
    t0 = time.perf_counter()
    if dr < 3:
        inst = np.zeros((0, 4), dtype=np.int64)
    else:
        inst = _open_octants(Vp, dr, n_bytes, deadline, max_open)
    if inst is None:
        return None
    t1 = time.perf_counter()
    alive = _cover_octants(D, inst, tau, depth, deadline)
    if alive is None:
        return None
    cand = np.unique(inst[alive, :3], axis=0)
    t2 = time.perf_counter()
    st.update(
        open=inst.shape[0],
        covered_open=int(alive.sum()),
        lps=cand.shape[0],
        s_octants=t1 - t0,
        s_cover=t2 - t1,
    )
    for k, l, m in cand:
        if deadline is not None and time.perf_counter() > deadline:
            return None
        if _subset_lp(problem, reps[[k, l, m]], np.full(3, M)):
            # the same columns: every choice of one member per class
            for t in product(members[k], members[l], members[m]):
                found.append(tuple(sorted(int(f) for f in t)))
    st["s_lp"] = time.perf_counter() - t2
    if not found:
        return np.zeros((0, 3), dtype=np.int64)
    return np.unique(np.array(found, dtype=np.int64), axis=0)


def _column_classes(X: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Step 1 of :func:`screen_triples`: one representative per class of identical
    non-constant columns (in the order of their first column), and each class's
    columns."""
    live = np.flatnonzero(np.ptp(X, axis=0) > 0)
    _, first, inv = np.unique(
        X[:, live], axis=1, return_index=True, return_inverse=True
    )
    inv = np.asarray(inv).reshape(-1)
    order = np.argsort(first)  # classes in the order of their first column
    return live[first[order]], [live[inv == c] for c in order]


def _drop_budget(v: np.ndarray, need: float) -> tuple[float, int]:
    """Weight a class may drop (with a tolerance on the generous side, so that a
    refutation never assumes fewer drops than (P1) allows) and the most rows it
    may drop (its smallest weights)."""
    lim = float(v.sum() - need) + 1e-9 * max(1.0, float(v.sum()))
    count = int(np.searchsorted(np.cumsum(np.sort(v)), lim, side="right"))
    return lim, count


def _screen_triples_drops(
    problem: SelectionProblem,
    M: float,
    deadline: float | None,
    depth: int,
    max_open: int,
    max_drops: int,
    stats: dict[str, float] | None,
    stop_cost: float | None = None,
) -> np.ndarray | None:
    """:func:`screen_triples` where a floor lets its class drop rows (SPEC S6, (P1)).

    A (P1) point keeps a row set ``K`` (``z_i = 1``) whose dropped rows weigh at
    most each class's slack (``sum v - need``), and ``u . (h - o) >= 2`` for every
    kept positive ``h`` and kept negative ``o`` (``u = w`` on the triple,
    ``|u_k| <= M``). ``u`` lies in a closed octant, and in a cone of that octant's
    split; every *witness* pair ``(h, o)`` of that region (one with ``u . (h - o) < 2``
    on all of it) has a dropped row. So a region whose witness pairs admit no drop
    set within the budgets (a vertex cover of the bipartite witness graph, per class
    weight; decided exactly by :mod:`torchsvm.mip._triple_drops`) holds no (P1)
    direction, whatever the drop set; a triple all of whose octants are such is
    infeasible. Steps, all exact:

    1. Reduction (as in the strict case): a triple with a constant column is a pair
       (refuted); a triple holding two identical columns is the pair with ``2M`` on
       that column, settled here (its four quadrants' witnesses, then the MILP); three
       identical columns are one feature with ``3M``, refuted by the big-M free 1-D
       test.
    2. Octant witnesses: ``D = h - o`` with ``sigma_i D_i <= 0`` on all three features
       (``u . D <= 0``). Octants whose witnesses admit a cover stay open.
    3. Cone cover of each open octant, as in the strict case (split at the edges'
       midpoints, ``depth`` levels), with witnesses ``r . D <= tau ||r||_1`` on all
       three rays (``u . D <= 3 M tau < 2``, ``tau = 1 / (6M)``): a cone is refuted
       when its witnesses admit no cover, an octant when all its leaf cones are.
    4. The triples left get (P1) restricted to the triple, a MILP with the ``z``
       binaries (:func:`_subset_milp`), which decides them (a proven infeasibility
       refutes; anything else keeps the triple).

    Returns None when more than ``max_drops`` rows may be dropped, numba is missing
    and the instance is not small, an array is too large, more than ``max_open``
    octants stay open, or the deadline (or the pace forecast of step 2) is passed.
    """
    from torchsvm.mip import _triple_drops as kern

    X, y, v = problem.X, problem.y, problem.v
    costs = problem.costs
    pos = y > 0
    lim_h, kp = _drop_budget(v[pos], problem.need_pos)
    lim_o, kn = _drop_budget(v[~pos], problem.need_neg)
    maxd = kp + kn
    if maxd > max_drops or maxd == 0:
        return None
    H, O = X[pos], X[~pos]
    nP, nO = H.shape[0], O.shape[0]
    reps, members = _column_classes(X)
    dr = reps.size
    if not kern.available() and dr * (dr - 1) * (dr - 2) / 6 * nP * nO > 1e6:
        return None  # plain Python: only small instances
    kern.warm()  # compiled before the pace forecast's clock (see warm)
    nwp = -(-nP // 64)
    if 2 * dr * nO * nwp > _MAX_MASK_WORDS or nP * nO * dr > _MAX_DIFFERENCES:
        return None
    # D[o, h, c] = h_c - o_c on the representatives
    D = np.ascontiguousarray(H[None, :, reps] - O[:, None, reps])
    tau = 1.0 / (6.0 * M)
    if not 1e-12 * max(1.0, float(np.abs(D).max())) < tau:
        return None  # rounding could exceed the cover's tolerance
    # V[r, c, o]: words over h of "D[o, h, c] violates sign r of u_c"
    V = np.empty((2, dr, nO, nwp), dtype=np.uint64)
    for r, bad in enumerate((D <= 0, D >= 0)):
        V[r] = _pack_bits(bad.transpose(2, 0, 1).reshape(dr * nO, nP)).reshape(
            dr, nO, nwp
        )
    vO = np.ascontiguousarray(v[~pos], dtype=np.float64)
    vH = np.ascontiguousarray(v[pos], dtype=np.float64)
    args = (vO, vH, lim_o, lim_h, maxd)
    dropO = np.zeros(nO, dtype=np.bool_)
    dropH = np.zeros(nwp, dtype=np.uint64)
    st = {} if stats is None else stats
    st.update(columns=dr, drops_pos=kp, drops_neg=kn)
    found: list[tuple[int, int, int]] = []
    # step 1: triples with two identical columns, the pair with the doubled bound
    for c, mem in enumerate(members):
        if mem.size < 2:
            continue
        for e in range(dr):
            if e == c:
                continue
            if deadline is not None and time.perf_counter() > deadline:
                return None
            open_ = any(
                kern.coverable_words(V[s, c], V[t, e], *args, dropO, dropH)
                for s in (0, 1)
                for t in (0, 1)
            )
            if open_ and _subset_milp(
                problem, np.array([reps[c], reps[e]]), np.array([2 * M, M]), M
            ):
                for a, b in combinations(mem, 2):
                    for f in members[e]:
                        found.append(tuple(sorted((int(a), int(b), int(f)))))

    def enough() -> bool:
        # a feasible triple at the target cost: the caller needs no more
        if stop_cost is None or not found:
            return False
        best = min(float(costs[list(t)].sum()) for t in found)
        return best <= stop_cost

    if enough():
        st["partial"] = True
        return np.unique(np.array(found, dtype=np.int64), axis=0)
    # steps 2-4 by blocks of k (all at once without stop_cost): octants whose
    # witnesses admit a cover, their cone cover, the MILPs of the triples left
    t_start = time.perf_counter()
    out = np.zeros((max_open, 4), dtype=np.int64)
    cnt = settled = 0
    st.update(open=0, covered_open=0, lps=0, s_octants=0.0, s_cover=0.0, s_lp=0.0)
    work = np.array([(dr - k - 1) * (dr - k - 2) / 2 for k in range(max(0, dr - 2))])
    total, done = float(work.sum()), 0.0
    for k in range(max(0, dr - 2)):
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return None
        if deadline is not None and done >= 0.02 * total:
            if now + (now - t_start) * (total - done) / done > deadline:
                return None  # the rest cannot fit
        done += work[k]
        t0 = time.perf_counter()
        cnt = int(kern.open_octants_k(V, k, *args, out, cnt))
        if cnt < 0:
            return None
        st["s_octants"] += time.perf_counter() - t0
        last = k == dr - 3
        if not last and (stop_cost is None or cnt - settled < _DROP_BLOCK):
            continue
        inst = out[settled:cnt]
        settled = cnt
        t1 = time.perf_counter()
        # step 3: cone cover, in chunks between deadline checks
        alive = np.zeros(inst.shape[0], dtype=np.bool_)
        for c0 in range(0, inst.shape[0], 2_000):
            if deadline is not None and time.perf_counter() > deadline:
                return None
            sl = slice(c0, min(inst.shape[0], c0 + 2_000))
            alive[sl] = kern.cover_cones(
                D, inst[sl], tau, depth, *args, np.zeros(sl.stop - sl.start, np.bool_)
            )
        cand = np.unique(inst[alive, :3], axis=0)
        t2 = time.perf_counter()
        st["open"] += inst.shape[0]
        st["covered_open"] += int(alive.sum())
        st["lps"] += cand.shape[0]
        st["s_cover"] += t2 - t1
        # step 4: (P1) restricted to each triple left
        for a, b, c in cand:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            if _subset_milp(problem, reps[[a, b, c]], np.full(3, M), M):
                for t in product(members[a], members[b], members[c]):
                    found.append(tuple(sorted(int(f) for f in t)))
        st["s_lp"] += time.perf_counter() - t2
        if enough():
            st["partial"] = True
            break
    if not found:
        return np.zeros((0, 3), dtype=np.int64)
    return np.unique(np.array(found, dtype=np.int64), axis=0)


#: Open octants per block of :func:`_screen_triples_drops` with ``stop_cost``.
_DROP_BLOCK = 20_000


def _open_octants(
    Vp: list[np.ndarray],
    d: int,
    n_bytes: int,
    deadline: float | None,
    max_open: int,
) -> np.ndarray | None:
    """Step 2 of :func:`screen_triples`: rows ``(k, l, m, octant)``, ``k < l < m``,
    of the octants that no ``D_j`` refutes (octant bits: sign of ``u_k``, ``u_l``,
    ``u_m``, 1 for ``<= 0``); None past the deadline or above ``max_open``."""
    Vb = [V.view(np.uint8) for V in Vp]  # (d, bytes)
    nb = Vb[0].shape[1]
    n_bytes = min(n_bytes, nb)
    # tab[r, c, q]: bits over m of the features whose byte c of Vb[r] misses q
    q = np.arange(256, dtype=np.uint8)
    tab = np.stack(
        [
            np.stack(
                [_pack_bits((Vb[r][None, :, c] & q[:, None]) == 0) for c in range(nb)]
            )
            for r in (0, 1)
        ]
    )
    above = _pack_bits(np.arange(d)[None, :] > np.arange(d)[:, None])  # m > l
    out: list[np.ndarray] = []
    n_open = 0
    # triples with smallest feature k: the work of step k, for the forecast
    work = np.array([(d - k - 1) * (d - k - 2) / 2 for k in range(d - 2)])
    total, done = float(work.sum()), 0.0
    t0 = time.perf_counter()
    for k in range(d - 2):
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return None
        if deadline is not None and done >= 0.02 * total:
            # give up early (not at the deadline) when the rest cannot fit
            if now + (now - t0) * (total - done) / done > deadline:
                return None
        done += work[k]
        L = np.arange(k + 1, d - 1)
        for s in (0, 1):
            for t in (0, 1):
                Qb = Vb[s][k][None, :] & Vb[t][L]  # (l, bytes)
                cs = np.argpartition(np.bitwise_count(Qb), nb - n_bytes, axis=1)
                cs = cs[:, nb - n_bytes :]
                qs = np.take_along_axis(Qb, cs, axis=1)
                for r in (0, 1):
                    cand = above[L]
                    for i in range(n_bytes):
                        cand &= tab[r, cs[:, i], qs[:, i]]
                    rows = np.flatnonzero(cand.any(axis=1))
                    if rows.size == 0:
                        continue
                    bits = np.unpackbits(
                        cand[rows].view(np.uint8), axis=1, bitorder="little"
                    )[:, :d]
                    ri, mi = np.nonzero(bits)
                    li = L[rows][ri]
                    ok = ~np.any(Vp[s][k][None, :] & Vp[t][li] & Vp[r][mi], axis=1)
                    if ok.any():
                        oc = s | (t << 1) | (r << 2)
                        m_ok = int(ok.sum())
                        out.append(
                            np.stack(
                                [np.full(m_ok, k), li[ok], mi[ok], np.full(m_ok, oc)], 1
                            )
                        )
                        n_open += m_ok
                        if n_open > max_open:
                            return None
    return np.concatenate(out) if out else np.zeros((0, 4), dtype=np.int64)


def _cover_octants(
    D: np.ndarray,
    inst: np.ndarray,
    tau: float,
    depth: int,
    deadline: float | None,
) -> np.ndarray | None:
    """Step 3 of :func:`screen_triples`: which open octants ``inst`` the cone cover
    leaves open (bool per row), or None past the deadline."""
    DT = np.ascontiguousarray(D.T)
    alive = np.zeros(inst.shape[0], dtype=bool)
    # octants per chunk: about 2 M (bool phase) / 0.5 M (float phase) entries over j
    step = max(1, 2_000_000 // D.shape[0])
    for c0 in range(0, inst.shape[0], step):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        Ic = inst[c0 : c0 + step]
        sg = 1.0 - 2.0 * ((Ic[:, 3:4] >> np.arange(3)) & 1)  # u >= 0 after the flip
        A, B, C = (DT[Ic[:, i]] * sg[:, i : i + 1] for i in range(3))
        # the first split: rays e_a, e_b, e_c and the midpoints (e_a + e_b) etc.
        ab, ac, bc = A + B <= 2 * tau, A + C <= 2 * tau, B + C <= 2 * tau
        ref = np.any(ab & ac & bc, axis=1)
        ref &= np.any((A <= tau) & ab & ac, axis=1)
        ref &= np.any((B <= tau) & ab & bc, axis=1)
        ref &= np.any((C <= tau) & ac & bc, axis=1)
        alive[c0 : c0 + Ic.shape[0]] = ~ref
    idx = np.flatnonzero(alive)
    step = max(1, 500_000 // D.shape[0])
    for c0 in range(0, idx.size, step):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        ii = idx[c0 : c0 + step]
        Ic = inst[ii]
        sg = 1.0 - 2.0 * ((Ic[:, 3:4] >> np.arange(3)) & 1)
        Dt = D[:, Ic[:, :3]].transpose(1, 0, 2) * sg[:, None, :]
        rays = np.broadcast_to(np.eye(3), (ii.size, 3, 3)).copy()
        alive[ii] = ~_cover(Dt, rays, depth, tau)
    return alive


def _cover(Dt: np.ndarray, rays: np.ndarray, depth: int, tau: float) -> np.ndarray:
    """Whether each cone (rays ``rays[i]``, in the closed orthant ``u >= 0``) is
    refuted by the ``D_j`` in ``Dt[i]`` (some ``j`` with ``r . D_j <= tau |r|_1``
    on its three rays), splitting at the edges' midpoints ``depth`` times."""
    viol = np.einsum("njc,nrc->nrj", Dt, rays) <= tau * rays.sum(2)[:, :, None]
    ref = viol.all(1).any(1)
    if depth == 0 or ref.all():
        return ref
    idx = np.flatnonzero(~ref)
    R = rays[idx]
    a, b, c = R[:, 0], R[:, 1], R[:, 2]
    ab, bc, ac = 0.5 * (a + b), 0.5 * (b + c), 0.5 * (a + c)
    allref = np.ones(idx.size, dtype=bool)
    for S in ((a, ab, ac), (b, ab, bc), (c, ac, bc), (ab, bc, ac)):
        live = np.flatnonzero(allref)
        if live.size == 0:
            break
        sub = np.stack(S, 1)[live]
        allref[live] &= _cover(Dt[idx[live]], sub, depth - 1, tau)
    ref[idx] = allref
    return ref


def separable_by_planes(
    problem: SelectionProblem,
    features: np.ndarray,
    max_work: float = 5e7,
    witness: list[np.ndarray] | None = None,
) -> bool | None:
    """Exact test on ``k = |features|`` features through planes spanned by k rows.

    Every strict dichotomy ``T`` (rows classified strictly right by some ``(w, b)``)
    whose rows affinely span ``R^k`` is, at an extreme ray of the cone
    ``{(w, b): y_i (w . x_i + b) >= 0, i in T}``, realised weakly by a hyperplane
    through k affinely independent rows of ``T``. So counting, for every such plane
    and both orientations, the rows strictly on their side plus all rows on the plane
    over-approximates every dichotomy: if no plane reaches both floors, no ``(w, b)``
    does, and the subset is infeasible for (P1). The spanning condition holds when no
    enumerated plane holds more than ``k`` rows (general position) and every ``T``
    meeting the floors has more than ``k`` rows. Returns None when that cannot be
    certified or the work ``C(n, k) * n`` exceeds ``max_work`` (the caller then uses
    the MILP). With ``witness`` (a list), the rows counted by the first plane found
    are appended to it.
    """
    from itertools import combinations
    from math import comb

    feats = np.flatnonzero(np.asarray(features, dtype=bool))
    k = feats.size
    X, y, v = problem.X[:, feats], problem.y, problem.v
    n = X.shape[0]
    if k == 0 or comb(n, k) * n > max_work:
        return None
    need_p, need_n = problem.need_pos, problem.need_neg
    pos = y > 0

    def min_rows(w: np.ndarray, need: float) -> int:
        if need <= 0:
            return 0
        c = np.cumsum(np.sort(w)[::-1])
        return int(np.searchsorted(c, need - 1e-9)) + 1

    if min_rows(v[pos], need_p) + min_rows(v[~pos], need_n) <= k:
        return None
    idx = np.array(list(combinations(range(n), k)), dtype=np.int64)
    chunk = max(1, int(2_000_000 // max(1, n)))
    vp = np.where(pos, v, 0.0)
    vn = np.where(pos, 0.0, v)
    scale = 1.0 + np.abs(X).max()
    for s in range(0, idx.shape[0], chunk):
        T = idx[s : s + chunk]
        P = X[T]  # (m, k, k)
        # normal of the affine plane through the k rows: null vector of [P, 1]
        A = np.concatenate([P, np.ones((T.shape[0], k, 1))], axis=2)
        _, sv, Vt = np.linalg.svd(A)
        wb = Vt[:, -1, :]  # (m, k+1)
        indep = sv[:, -1] > 1e-9 * scale if k > 0 else np.ones(T.shape[0], bool)
        wb = wb[indep]
        if wb.shape[0] == 0:
            continue
        f = wb[:, :k] @ X.T + wb[:, k : k + 1]  # (m, n)
        tol = 1e-9 * scale * (1.0 + np.linalg.norm(wb[:, :k], axis=1, keepdims=True))
        on = np.abs(f) <= tol
        if (on.sum(1) > k).any():
            return None  # not in general position: cannot certify
        for sgn in (1.0, -1.0):
            g = sgn * f
            got_p = ((g > tol) | on) @ vp
            got_n = ((g < -tol) | on) @ vn
            hit = (got_p >= need_p - 1e-9) & (got_n >= need_n - 1e-9)
            if np.any(hit):
                if witness is not None:
                    j = int(np.argmax(hit))
                    witness.append(((g[j] * y > 0) | on[j]).astype(bool))
                return True
    return False


def margin_point(
    problem: SelectionProblem,
    support: np.ndarray,
    rows: np.ndarray,
    big_m: float,
    config: MipConfig,
) -> np.ndarray | None:
    """(P1) point with ``z = rows`` on ``support`` by the max-margin LP, or None.

    ``max t`` s.t. ``y_i (w . x_i + b) >= t`` on ``rows``, ``-1 <= w_k <= 1`` on the
    support (0 off it); with ``t > 0`` the point ``(w, b) / t`` has margin 1 on
    ``rows``; it is returned if it meets the floors and the big-M rows.
    """
    X, y = problem.X, problem.y
    n, d = X.shape
    rows = np.asarray(rows, dtype=bool)
    R = np.flatnonzero(rows)
    # columns [w (d), b, t]; rows -y_i x_i w - y_i b + t <= 0
    A = np.hstack([-y[R, None] * X[R], -y[R, None], np.ones((R.size, 1))])
    lo = np.concatenate([np.where(support, -1.0, 0.0), [-np.inf, -np.inf]])
    up = np.concatenate([np.where(support, 1.0, 0.0), [np.inf, 1.0]])
    c = np.zeros(d + 2)
    c[-1] = 1.0
    model = MipModel(
        c=c,
        A=sp.csr_array(A),
        row_lower=np.full(R.size, -np.inf),
        row_upper=np.zeros(R.size),
        col_lower=lo,
        col_upper=up,
        sense="max",
    )
    res = solve_model(model, config)
    if res.x is None or not res.x[-1] > 1e-9:
        return None
    t = float(res.x[-1])
    w, b = res.x[:d] / t, float(res.x[d]) / t
    M2 = float(big_m)
    m = y * (X @ w + b)
    if np.any(np.abs(w) > M2) or np.any(m < 1.0 - M2 + 1e-9):
        return None
    z = (m >= 1.0 - 1e-9).astype(float)
    return np.concatenate([w, [b], z, np.asarray(support, dtype=float)])
