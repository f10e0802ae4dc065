r"""DEA models and their solvers (SPEC S7, thesis ch. 5).

Notation: K DMUs with inputs ``X (K, N) >= 0`` and outputs ``Y (K, M) >= 0``; the
evaluated DMUs are a set ``S`` (one DMU for the individual models OSDEA(k)/FSDEA(k),
all K for the joint model OSDEA(p)); the reference set ``R`` holds the DMUs whose
frontier rows are kept (see Notes).

Efficiency LP (CRS, input oriented, multiplier form), one block per ``k in S``::

    (1) E(k) = max  sum_o beta_o^k y_o^k
    (2)  s.t.  sum_o beta_o^k y_o^j - sum_i alpha_i^k x_i^j <= 0      j in R
    (3)        sum_i alpha_i^k x_i^k = 1
    (4)        alpha^k, beta^k >= 0      (L_o <= beta_o^k <= U_o with weight bounds)

Its dual, the envelopment form, is what :func:`solve_efficiencies` solves::

    (E)  E(k) = min  theta + sum_o U_o mu_o - sum_o L_o nu_o
          s.t.  sum_{j in C} lambda_j x_i^j - theta x_i^k <= 0        i = 1..N
                sum_{j in C} lambda_j y_o^j + mu_o - nu_o >= y_o^k    o = 1..M
                lambda, mu, nu >= 0

(``mu`` only for finite ``U_o``, ``nu`` only for ``L_o > 0``).  From one DMU to the
next only the column of ``theta`` (N entries) and the right-hand side change, so one
HiGHS model is kept (:class:`torchsvm.mip.highs.PersistentLp`) and dual simplex restarts
from the previous basis.  The multiplier weights are the row duals:
``alpha_i = -dual_i``, ``beta_o = dual_o``.  Columns ``C`` are generated: start from
the DMU with the best ratio ``y_o / sum_i x_i`` per output, add the DMUs whose
multiplier row (2) the current weights violate (negative reduced cost of
``lambda_j``), re-solve; the columns persist across DMUs and converge to the frontier.
The result is the optimum over all of ``R`` (no violated row is left).

``build_efficiency_model`` stacks the multiplier blocks of a batch of DMUs into one
block-diagonal LP; ``method="multiplier"`` of :func:`solve_efficiencies` (kept as a
second, independent formulation) loads the block of one DMU and re-solves it for the
next by changing only (1), (3) and the bounds (5), from the previous basis.

Selection model (OSDEA / FSDEA, individual or joint), variables ``alpha^k, beta^k``
for ``k in S``, binaries ``z_o`` (outputs) and optionally ``zt_i`` (inputs), shared by
all evaluated DMUs; rows (2)-(4) for every ``k in S`` plus::

    (5)  beta_o^k <= Ub_o^k z_o              tight big-M, Ub_o^k = min(U_o, 1 / y_o^k)
    (6)  beta_o^k >= L_o z_o                 weight lower bounds (only when L_o > 0)
    (7)  alpha_i^k <= zt_i / x_i^k           input selection (needs x > 0)
    (8)  sum_o z_o = p ;  sum_i zt_i = pt     cardinalities
    (9)  sum_o c_o z_o <= budget              output costs
    (10) pmin_g <= sum_{o in G_g} z_o <= pmax_g        clusters of outputs
    (11) z_o + z_o' <= 1                      excluded (highly correlated) pairs
    (12) e_k = sum_o beta_o^k y_o^k            efficiency variables, 0 <= e_k <= 1

Objectives (``objective=``)::

    mean       max (1/|S|) sum_k e_k
    weighted   max sum_k w_k e_k / sum_k w_k
    min        max lam,   (13) lam <= e_k                                  k in S
    percentile max lam,   (14) e_k >= lam - (1 - delta_k), sum_k delta_k = r,
                          delta binary, r = floor(|S| pi / 100)
    quadratic  min sum_k (1 - e_k)^2 = sum_k e_k^2 - 2 sum_k e_k + |S|   (a convex MIQP,
               solved by outer approximation, SPEC S5 "Solving")

``build_selection_model`` states (1)-(14) in one MILP ("big_m" method).  For the
joint model without weight bounds or input selection, :func:`solve_selection` uses a
Benders decomposition instead ("benders"): the LP (1)-(5) of DMU k with ``z`` fixed
has the dual (E) with ``U_o = z_o / y_o^k``, whose feasible set does not depend on
``z``.  Any dual point therefore bounds ``E_k(z)`` for every ``z``; the optimal
envelopment solution ``(theta, lambda)`` of a selection ``T`` gives the cut::

    (15) e_k <= E_k(T) + sum_{o not in T, y_o^k > 0} max(0, 1 - lambda . y_o / y_o^k) z_o

(``mu_o = max(0, y_o^k - lambda . y_o)`` makes the dual feasible for ``o`` outside
``T``; its cost is ``mu_o z_o / y_o^k``), tight at ``z = 1_T``.  With the
subadditivity ``E_k(A u B) <= E_k(A) + E_k(B)`` (split ``beta``) this also gives
``(16) e_k <= sum_o E_k({o}) z_o`` and monotonicity ``(17) e_k <= E_k(all outputs)``.
The master is a MILP over ``z`` and ``e`` only (M binaries, |S| continuous) with the
rows (8)-(11), (13)-(14), (16), (17) and the cuts (15) found so far; its dual bound is
a valid upper bound, every master solution evaluated by LP is a lower bound, and the
loop stops at ``mip_rel_gap`` or the time limit.  Cuts of every selection the greedy
start and the swap local search after it evaluated are kept in a pool and enter the
master when violated.  Before the first MILP master, Kelley rounds on its LP
relaxation add the cuts of the relaxed big-M LP at the fractional ``z``
(``beta_o <= z_o / y_o^k``; its dual ``(theta, lambda, mu)`` gives
``e_k <= theta + sum_o (mu_o / y_o^k) z_o`` for every ``z``), so the master's root bound
is the big-M model's LP relaxation instead of the full model's mean efficiency.

Notes
-----
* Tight big-M (5): row ``j = k`` of (2) with (3) gives ``sum_o beta_o^k y_o^k <= 1``,
  so ``beta_o^k <= 1 / y_o^k`` whenever ``y_o^k > 0``.  Where ``y_o^k = 0`` the weight
  does not enter DMU k's objective and only tightens rows (2), so ``beta_o^k = 0`` is
  fixed without loss (unless a lower bound ``L_o > 0`` forces it positive; then
  ``U_o`` must be finite).  Likewise (3) gives ``alpha_i^k <= 1 / x_i^k``.  The
  percentile constant ``M' = 1`` is tight because ``0 <= e_k, lam <= 1``.
* Reference set: a DMU that is inefficient with all inputs and outputs stays
  inefficient under every selection (dropping an output forces ``beta_o = 0``, dropping
  an input forces ``alpha_i = 0``: both restrict (1)-(4)), and the row (2) of an
  inefficient DMU is implied by the rows of the efficient ones (its envelopment
  peers are efficient).  Selections therefore use ``R`` = the DMUs efficient in the
  full model; this is exact for every selection but is not used with weight bounds,
  which break the cone argument (there ``R`` = the non-dominated DMUs).
* The percentile is counted as in SPEC S7: ``delta_k = 1`` marks the ``r`` DMUs that must
  reach ``lam``, so the optimum is the ``r``-th largest efficiency (``percentile=100``
  is the minimum).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import (
    DataError,
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
)
from torchsvm.mip.highs import PersistentLp, solve_highs
from torchsvm.mip.model import MipConfig, MipModel
from torchsvm.mip.solve import solve_model
from torchsvm.problems.dea import (
    DeaSelectionProblem,
    DeaSelectionResult,
    aggregate,
)
from torchsvm.types import ArrayLike, FloatArray, NDArray, SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "DeaLayout",
    "EfficiencyBatch",
    "SelectionEvaluator",
    "build_efficiency_model",
    "build_envelopment_model",
    "build_selection_model",
    "efficient_reference",
    "greedy_path",
    "nondominated_dmus",
    "output_beta_bounds",
    "solve_efficiencies",
    "solve_selection",
]

_EFF_TOL = 1e-6
_VIOL_TOL = 1e-9
_COLS_PER_ROUND = 5
#: local search after the greedy start: budget share (of time_limit) and selections
_LOCAL_SEARCH_SHARE = 0.5
_LOCAL_SEARCH_EVALUATIONS = 400
#: the singleton rows (16) are skipped when their LPs are not done by this share
_SINGLETON_SHARE = 0.2
#: Kelley rounds on the master's LP relaxation: budget share (of what is left), rounds,
#: violation threshold
_ROOT_SHARE = 0.3
#: masters prune below (1 + _TARGET_SHARE * mip_rel_gap) x incumbent
_TARGET_SHARE = 0.95
_ROOT_ROUNDS = 50
_ROOT_VIOL = 1e-6


@dataclass(frozen=True)
class DeaLayout:
    """Column indices of a DEA multiplier / selection model.

    Attributes
    ----------
    dmus : ndarray of shape (S,)
        Evaluated DMUs, in block order.
    alpha : ndarray of shape (S, N)
        Columns of the input weights.
    beta : ndarray of shape (S, M)
        Columns of the output weights.
    z, z_in : ndarray of shape (M,) / (N,) or None
        Output / input selection binaries.
    eff : ndarray of shape (S,) or None
        Efficiency variables ``e_k``.
    lam : int or None
        The min / percentile level.
    delta : ndarray of shape (S,) or None
        Percentile indicators.
    """

    dmus: NDArray
    alpha: NDArray
    beta: NDArray
    z: NDArray | None = None
    z_in: NDArray | None = None
    eff: NDArray | None = None
    lam: int | None = None
    delta: NDArray | None = None


class _Rows:
    """COO accumulator of constraint rows."""

    def __init__(self) -> None:
        self.r: list[NDArray] = []
        self.c: list[NDArray] = []
        self.v: list[NDArray] = []
        self.lo: list[NDArray] = []
        self.hi: list[NDArray] = []
        self.m = 0

    def add(
        self,
        rows: ArrayLike,
        cols: ArrayLike,
        vals: ArrayLike,
        lo: ArrayLike,
        hi: ArrayLike,
    ) -> None:
        """Add ``len(lo)`` rows; ``rows`` are local (0-based) indices."""
        keep = np.asarray(vals) != 0
        self.r.append(np.asarray(rows).ravel()[keep.ravel()] + self.m)
        self.c.append(np.asarray(cols).ravel()[keep.ravel()])
        self.v.append(np.asarray(vals, dtype=np.float64).ravel()[keep.ravel()])
        self.lo.append(np.asarray(lo, dtype=np.float64).ravel())
        self.hi.append(np.asarray(hi, dtype=np.float64).ravel())
        self.m += len(self.lo[-1])

    def matrix(self, n: int) -> tuple[sp.csr_array, FloatArray, FloatArray]:
        if self.m == 0:
            return sp.csr_array((0, n)), np.zeros(0), np.zeros(0)
        A = sp.coo_array(
            (np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
            shape=(self.m, n),
        ).tocsr()
        return A, np.concatenate(self.lo), np.concatenate(self.hi)


def nondominated_dmus(X: FloatArray, Y: FloatArray) -> NDArray:
    """DMUs not dominated by another (``x^j' <= x^j``, ``y^j' >= y^j``, one strict).

    The rows (2) of a dominated DMU are implied by its dominator's for every selection
    and every weight vector ``alpha, beta >= 0``; exact duplicates keep the first.

    Parameters
    ----------
    X : ndarray of shape (K, N)
    Y : ndarray of shape (K, M)

    Returns
    -------
    ndarray of int
        Sorted indices of the kept DMUs.
    """
    K = X.shape[0]
    keep = np.ones(K, dtype=bool)
    for j in range(K):
        le = np.all(X <= X[j], axis=1) & np.all(Y >= Y[j], axis=1)
        le[j] = False
        if not le.any():
            continue
        strict = np.any(X[le] < X[j], axis=1) | np.any(Y[le] > Y[j], axis=1)
        dup_before = np.flatnonzero(le)[~strict]
        if strict.any() or np.any(dup_before < j):
            keep[j] = False
    return np.flatnonzero(keep)


def output_beta_bounds(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Tight bounds ``L_o <= beta_o^k <= Ub_o^k`` of (5)-(6).

    Parameters
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
    dmus : ndarray of shape (S,)
    weight_bounds : (L, U) arrays of shape (M,), optional

    Returns
    -------
    lower, upper : ndarray of shape (S, M)
        ``upper == 0`` marks a weight fixed to zero.
    """
    Yk = Y[dmus]
    M = Y.shape[1]
    L = np.zeros(M) if weight_bounds is None else np.asarray(weight_bounds[0], float)
    U = (
        np.full(M, np.inf)
        if weight_bounds is None
        else np.asarray(weight_bounds[1], float)
    )
    with np.errstate(divide="ignore"):
        tight = np.where(Yk > 0, 1.0 / np.where(Yk > 0, Yk, 1.0), 0.0)
    upper = np.where(Yk > 0, np.minimum(tight, U[None, :]), 0.0)
    need = (Yk <= 0) & (L[None, :] > 0)
    if need.any():
        if not np.all(np.isfinite(np.broadcast_to(U, Yk.shape)[need])):
            o = int(np.argwhere(need)[0, 1])
            raise DataError(
                f"output {o} has a weight lower bound {L[o]} and a zero value for an "
                "evaluated DMU; give a finite weight upper bound for it"
            )
        upper = np.where(need, U[None, :], upper)
    lower = np.broadcast_to(L[None, :], Yk.shape).copy()
    if np.any(lower > upper + 1e-12):
        k, o = np.argwhere(lower > upper + 1e-12)[0]
        raise InfeasibleProblemError(
            f"weight bounds infeasible for DMU {int(dmus[k])}, output {int(o)}: lower "
            f"{lower[k, o]:.4g} exceeds the tight upper bound {upper[k, o]:.4g} "
            "(beta_o y_o^k <= 1)"
        )
    return lower, upper


def _block_rows(
    rows: _Rows,
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray,
    alpha: NDArray,
    beta: NDArray,
) -> None:
    """Rows (2) and (3) for every evaluated DMU (vectorised over blocks)."""
    S, N = alpha.shape
    M = beta.shape[1]
    Xr, Yr = X[reference], Y[reference]
    r = len(reference)
    local = (np.arange(S)[:, None] * r + np.arange(r)[None, :])[:, :, None]  # (S,r,1)
    rows.add(
        np.concatenate(
            [np.broadcast_to(local, (S, r, M)), np.broadcast_to(local, (S, r, N))],
            axis=2,
        ),
        np.concatenate(
            [
                np.broadcast_to(beta[:, None, :], (S, r, M)),
                np.broadcast_to(alpha[:, None, :], (S, r, N)),
            ],
            axis=2,
        ),
        np.concatenate(
            [
                np.broadcast_to(Yr[None], (S, r, M)),
                np.broadcast_to(-Xr[None], (S, r, N)),
            ],
            axis=2,
        ),
        np.full(S * r, -np.inf),
        np.zeros(S * r),
    )
    rows.add(
        np.repeat(np.arange(S), N),
        alpha.ravel(),
        X[dmus].ravel(),
        np.ones(S),
        np.ones(S),
    )


def build_efficiency_model(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray | None = None,
    weight_bounds: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[MipModel, DeaLayout]:
    """Block-diagonal multiplier LP (1)-(4) for a batch of DMUs.

    Parameters
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
    dmus : ndarray of shape (S,)
        DMUs of the batch.
    reference : ndarray, optional
        Rows (2) kept (default all K).
    weight_bounds : (L, U), optional
        Absolute bounds ``L_o <= beta_o <= U_o``.

    Returns
    -------
    model : MipModel
        ``sense="max"``; the objective is the sum of the batch's efficiencies.
    layout : DeaLayout
    """
    dmus = np.asarray(dmus, dtype=np.int64)
    K, N = X.shape
    M = Y.shape[1]
    reference = np.arange(K) if reference is None else np.asarray(reference)
    S = len(dmus)
    alpha = np.arange(S * N).reshape(S, N)
    beta = S * N + np.arange(S * M).reshape(S, M)
    n = S * (N + M)
    rows = _Rows()
    _block_rows(rows, X, Y, dmus, reference, alpha, beta)
    A, lo, hi = rows.matrix(n)
    c = np.zeros(n)
    c[beta.ravel()] = Y[dmus].ravel()
    col_lower = np.zeros(n)
    col_upper = np.full(n, np.inf)
    lb, ub = output_beta_bounds(X, Y, dmus, weight_bounds)
    col_lower[beta.ravel()] = lb.ravel()
    col_upper[beta.ravel()] = np.where(ub > 0, ub, 0.0).ravel()
    model = MipModel(
        c=c,
        A=A,
        row_lower=lo,
        row_upper=hi,
        col_lower=col_lower,
        col_upper=col_upper,
        sense="max",
    )
    return model, DeaLayout(dmus=dmus, alpha=alpha, beta=beta)


@dataclass(frozen=True)
class EnvelopmentLayout:
    """Columns of the envelopment LP (E): ``theta``, ``mu``, ``nu``, then ``lambda``.

    Attributes
    ----------
    n_inputs, n_outputs : int
        Rows: N input rows, then M output rows.
    mu, nu : ndarray of int
        Outputs with a ``mu_o`` (finite ``U_o``) / ``nu_o`` (``L_o > 0``) column.
    n_fixed : int
        Columns before the first ``lambda``.
    """

    n_inputs: int
    n_outputs: int
    mu: NDArray
    nu: NDArray
    n_fixed: int


def build_envelopment_model(
    X: FloatArray,
    Y: FloatArray,
    k: int,
    columns: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None = None,
) -> tuple[MipModel, EnvelopmentLayout]:
    """Envelopment LP (E) of DMU ``k`` with the ``lambda`` columns of ``columns``.

    Parameters
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
    k : int
        Evaluated DMU.
    columns : ndarray of int
        DMUs with a ``lambda_j`` column.
    weight_bounds : (L, U), optional

    Returns
    -------
    model : MipModel
        ``sense="min"``; its optimum is ``E(k)``.
    layout : EnvelopmentLayout
    """
    N, M = X.shape[1], Y.shape[1]
    if weight_bounds is None:
        mu = nu = np.zeros(0, dtype=np.int64)
        U = L = np.zeros(M)
    else:
        L, U = weight_bounds
        mu = np.flatnonzero(np.isfinite(U))
        nu = np.flatnonzero(L > 0)
    n_fixed = 1 + len(mu) + len(nu)
    cols = np.asarray(columns, dtype=np.int64)
    theta_col = np.concatenate([-X[k], np.zeros(M)])
    mu_cols = np.zeros((N + M, len(mu)))
    mu_cols[N + mu, np.arange(len(mu))] = 1.0
    nu_cols = np.zeros((N + M, len(nu)))
    nu_cols[N + nu, np.arange(len(nu))] = -1.0
    lam_cols = np.vstack([X[cols].T, Y[cols].T])
    A = sp.csr_array(np.hstack([theta_col[:, None], mu_cols, nu_cols, lam_cols]))
    c = np.concatenate([[1.0], U[mu], -L[nu], np.zeros(len(cols))])
    model = MipModel(
        c=c,
        A=A,
        row_lower=np.concatenate([np.full(N, -np.inf), Y[k]]),
        row_upper=np.concatenate([np.zeros(N), np.full(M, np.inf)]),
        col_lower=np.concatenate([[-np.inf], np.zeros(n_fixed - 1 + len(cols))]),
        col_upper=np.full(n_fixed + len(cols), np.inf),
        sense="min",
    )
    return model, EnvelopmentLayout(N, M, mu, nu, n_fixed)


@dataclass(frozen=True)
class EfficiencyBatch:
    """Efficiencies of a set of DMUs with their multiplier and envelopment solutions.

    Attributes
    ----------
    efficiencies : ndarray of shape (S,)
    alpha : ndarray of shape (S, N)
        Optimal input weights (``alpha . x^k = 1``).
    beta : ndarray of shape (S, M)
        Optimal output weights.
    lambdas : ndarray of shape (S, R) or None
        Envelopment intensities over ``reference`` (``method="envelopment"``).
    reference : ndarray of shape (R,)
    n_columns : int
        ``lambda`` columns generated (envelopment).
    """

    efficiencies: FloatArray
    alpha: FloatArray
    beta: FloatArray
    lambdas: FloatArray | None
    reference: NDArray
    n_columns: int = 0


def _remaining(deadline: float | None, what: str) -> float:
    if deadline is None:
        return 1e9
    left = deadline - time.perf_counter()
    if left <= 0:
        raise SolverError(f"{what}: time limit reached before all LPs were solved")
    return left


def _seed_columns(X: FloatArray, Y: FloatArray, reference: NDArray) -> NDArray:
    ratio = Y[reference] / X[reference].sum(axis=1, keepdims=True)
    return np.unique(reference[np.argmax(ratio, axis=0)])


def _solve_envelopment(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None,
    config: MipConfig,
    deadline: float | None,
    want_lambdas: bool,
    columns: NDArray | None = None,
) -> EfficiencyBatch:
    S = len(dmus)
    N, M = X.shape[1], Y.shape[1]
    eff = np.zeros(S)
    alpha = np.zeros((S, N))
    beta = np.zeros((S, M))
    lambdas = np.zeros((S, len(reference))) if want_lambdas else None
    if S == 0:
        return EfficiencyBatch(eff, alpha, beta, lambdas, reference)
    pos = {int(j): t for t, j in enumerate(reference)}
    cols = _seed_columns(X, Y, reference) if columns is None else np.asarray(columns)
    in_model = np.zeros(len(reference), dtype=bool)
    in_model[[pos[int(j)] for j in cols]] = True
    model, lay = build_envelopment_model(X, Y, int(dmus[0]), cols, weight_bounds)
    lp = PersistentLp(model, config)
    col_dmus = list(cols.tolist())
    in_rows = np.arange(N)
    out_rows = N + np.arange(M)
    zeros_n = np.zeros(N, dtype=np.int64)
    infs = np.full(M, np.inf)
    Xr, Yr = X[reference], Y[reference]
    all_in = bool(in_model.all())
    for s, k in enumerate(dmus.tolist()):
        lp.change_coefficients(in_rows, zeros_n, -X[k])
        lp.change_row_bounds(out_rows, Y[k], infs)
        while True:
            res = lp.solve(_remaining(deadline, "DEA efficiency LPs"))
            if res.status in (SolveStatus.unbounded, SolveStatus.infeasible):
                raise InfeasibleProblemError(
                    f"efficiency LP of DMU {k} has no feasible weights (weight bounds "
                    "incompatible with sum_o beta_o y_o^j <= sum_i alpha_i x_i^j)"
                )
            if res.status is SolveStatus.time_limit:
                raise SolverError("DEA efficiency LPs: time limit reached")
            if res.status is not SolveStatus.optimal or res.row_duals is None:
                raise SolverError(
                    f"efficiency LP of DMU {k} not solved: {res.status} {res.message}"
                )
            a = np.maximum(-res.row_duals[:N], 0.0)
            b = np.maximum(res.row_duals[N:], 0.0)
            if all_in:
                break
            viol = Yr @ b - Xr @ a
            viol[in_model] = -np.inf
            scale = 1.0 + Xr @ a
            cand = np.flatnonzero(viol > _VIOL_TOL * scale)
            if cand.size == 0:
                break
            top = cand[np.argsort(-viol[cand])[:_COLS_PER_ROUND]]
            in_model[top] = True
            all_in = bool(in_model.all())
            new = reference[top]
            col_dmus.extend(new.tolist())
            block = sp.csc_array(np.vstack([X[new].T, Y[new].T]))
            lp.add_columns(
                np.zeros(len(new)), np.zeros(len(new)), np.full(len(new), np.inf), block
            )
        assert res.x is not None
        eff[s] = res.objective
        alpha[s], beta[s] = a, b
        if lambdas is not None:
            lam = res.x[lay.n_fixed :]
            lambdas[s, [pos[j] for j in col_dmus]] = np.maximum(lam, 0.0)
    return EfficiencyBatch(
        np.clip(eff, 0.0, None), alpha, beta, lambdas, reference, len(col_dmus)
    )


def _solve_multiplier(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None,
    config: MipConfig,
    deadline: float | None,
) -> EfficiencyBatch:
    """Multiplier LPs (1)-(4), one persistent HiGHS model re-solved DMU by DMU.

    From one DMU to the next only the normalisation row (3), the objective (1) and
    the tight bounds (5) of ``beta`` change; the rows (2) of ``reference`` stay, so the
    simplex restarts from the previous basis (the dual of what ``_solve_envelopment``
    does, kept as a second, independent formulation).
    """
    S = len(dmus)
    N, M = X.shape[1], Y.shape[1]
    alpha = np.zeros((S, N))
    beta = np.zeros((S, M))
    if S == 0:
        return EfficiencyBatch(np.zeros(0), alpha, beta, None, reference)
    # NOTE: one block per call used to stack ~2e6 nonzeros of blocks into one LP;
    # at K = 1000, M = 100 that took ~45x the envelopment time and ran past its
    # limit under load (issue 16).
    model, lay = build_efficiency_model(X, Y, dmus[:1], reference, weight_bounds)
    lp = PersistentLp(model, config)
    norm_row = np.full(N, model.n_rows - 1)
    a_cols, b_cols = lay.alpha[0], lay.beta[0]
    lower, upper = output_beta_bounds(X, Y, dmus, weight_bounds)
    upper = np.where(upper > 0, upper, 0.0)
    for s, k in enumerate(dmus.tolist()):
        if s:
            lp.change_coefficients(norm_row, a_cols, X[k])
            lp.change_costs(b_cols, Y[k])
            lp.change_col_bounds(b_cols, lower[s], upper[s])
        res = lp.solve(_remaining(deadline, "DEA efficiency LPs"))
        if res.status in (SolveStatus.infeasible, SolveStatus.unbounded):
            raise InfeasibleProblemError(
                f"efficiency LP of DMU {k} has no feasible weights (weight bounds "
                "incompatible with sum_o beta_o y_o^j <= sum_i alpha_i x_i^j)"
            )
        if res.status is SolveStatus.time_limit:
            raise SolverError("DEA efficiency LPs: time limit reached")
        if res.status is not SolveStatus.optimal or res.x is None:
            raise SolverError(
                f"efficiency LP of DMU {k} not solved: {res.status} {res.message}"
            )
        alpha[s] = np.maximum(res.x[a_cols], 0.0)
        beta[s] = np.clip(res.x[b_cols], lower[s], upper[s])
    eff = np.einsum("sm,sm->s", beta, Y[dmus])
    return EfficiencyBatch(np.clip(eff, 0.0, None), alpha, beta, None, reference)


def solve_efficiencies(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    reference: NDArray | None = None,
    weight_bounds: tuple[FloatArray, FloatArray] | None = None,
    config: MipConfig | None = None,
    *,
    deadline: float | None = None,
    method: str = "envelopment",
    lambdas: bool = False,
) -> EfficiencyBatch:
    """CRS input-oriented efficiencies of the DMUs ``dmus`` (LP (1)-(4) / (E)).

    Parameters
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
        Validated data.
    dmus : ndarray of shape (S,)
    reference : ndarray, optional
        DMUs whose rows (2) / columns ``lambda`` are kept (default: the non-dominated
        DMUs, :func:`nondominated_dmus`).
    weight_bounds : (L, U), optional
    config : MipConfig, optional
        Tolerances and threads.
    deadline : float, optional
        ``time.perf_counter()`` value by which all LPs must be solved.
    method : {"envelopment", "multiplier"}
        Persistent envelopment LP with column generation, or the persistent
        multiplier LP (1)-(4) re-solved DMU by DMU.
    lambdas : bool
        Also return the envelopment intensities (envelopment only).

    Returns
    -------
    EfficiencyBatch

    Raises
    ------
    InfeasibleProblemError
        Weight bounds that admit no weights.
    SolverError
        An LP that HiGHS does not solve, or the deadline passed.
    """
    config = MipConfig() if config is None else config
    dmus = np.asarray(dmus, dtype=np.int64)
    ref = nondominated_dmus(X, Y) if reference is None else np.asarray(reference)
    if method == "envelopment":
        return _solve_envelopment(
            X, Y, dmus, ref, weight_bounds, config, deadline, lambdas
        )
    if method == "multiplier":
        if lambdas:
            raise ValueError("lambdas=True needs method='envelopment'")
        return _solve_multiplier(X, Y, dmus, ref, weight_bounds, config, deadline)
    raise ValueError(f"method must be 'envelopment' or 'multiplier', got {method!r}")


def efficient_reference(
    X: FloatArray,
    Y: FloatArray,
    weight_bounds: tuple[FloatArray, FloatArray] | None,
    config: MipConfig,
    deadline: float | None = None,
) -> tuple[NDArray, FloatArray | None]:
    """Rows needed for every selection, and the full-model efficiencies.

    Returns the DMUs efficient with all inputs and outputs (see Notes of the module)
    and their efficiencies ``E_k(all)`` of every DMU; with weight bounds, the
    non-dominated DMUs and ``None``.
    """
    nd = nondominated_dmus(X, Y)
    if weight_bounds is not None:
        return nd, None
    full = _solve_envelopment(
        X, Y, np.arange(X.shape[0]), nd, None, config, deadline, False
    )
    return np.flatnonzero(full.efficiencies >= 1.0 - _EFF_TOL), full.efficiencies


def build_selection_model(
    problem: DeaSelectionProblem, reference: NDArray | None = None
) -> tuple[MipModel, DeaLayout]:
    """Selection MILP / MIQP (1)-(14) of a problem ("big_m").

    Parameters
    ----------
    problem : DeaSelectionProblem
        Validated data, counts, objective and constraints.
    reference : ndarray, optional
        Rows (2) kept (see Notes of the module; default all K).

    Returns
    -------
    model : MipModel
    layout : DeaLayout
    """
    X, Y = problem.X, problem.Y
    dmus = problem.evaluated
    n_outputs, n_inputs = problem.n_outputs, problem.n_inputs
    objective = problem.objective.name
    weights = problem.objective.weights
    percentile = problem.objective.percentile
    cons = problem.constraints
    weight_bounds = cons.weight_bounds
    output_costs, budget = cons.output_costs, cons.budget
    clusters = [(g.members, g.p_min, g.p_max) for g in cons.clusters]
    excluded_pairs = list(cons.excluded_pairs)
    K, N = X.shape
    M = Y.shape[1]
    reference = np.arange(K) if reference is None else np.asarray(reference)
    S = len(dmus)
    nxt = 0

    def take(shape: tuple[int, ...] | int) -> NDArray:
        nonlocal nxt
        size = int(np.prod(shape))
        idx = np.arange(nxt, nxt + size).reshape(shape)
        nxt += size
        return idx

    alpha = take((S, N))
    beta = take((S, M))
    z = take(M) if n_outputs is not None else None
    z_in = take(N) if n_inputs is not None else None
    need_eff = objective in ("min", "percentile", "quadratic")
    eff = take(S) if need_eff else None
    lam = int(take(1)[0]) if objective in ("min", "percentile") else None
    delta = take(S) if objective == "percentile" else None
    n = nxt

    col_lower = np.zeros(n)
    col_upper = np.full(n, np.inf)
    integrality = np.zeros(n, dtype=bool)
    lb, ub = output_beta_bounds(X, Y, dmus, weight_bounds)
    col_lower[beta.ravel()] = 0.0
    col_upper[beta.ravel()] = ub.ravel()
    for b in (z, z_in, delta):
        if b is not None:
            col_upper[b] = 1.0
            integrality[b] = True
    if eff is not None:
        col_upper[eff] = 1.0
    if lam is not None:
        col_upper[lam] = 1.0

    rows = _Rows()
    _block_rows(rows, X, Y, dmus, reference, alpha, beta)
    if z is not None:
        # (5) for weights that can be positive, (6) where L_o > 0
        sel = ub > 0
        kk, oo = np.nonzero(sel)
        cnt = len(kk)
        rows.add(
            np.repeat(np.arange(cnt), 2),
            np.stack([beta[kk, oo], z[oo]], axis=1),
            np.stack([np.ones(cnt), -ub[kk, oo]], axis=1),
            np.full(cnt, -np.inf),
            np.zeros(cnt),
        )
        kk, oo = np.nonzero(lb > 0)
        cnt = len(kk)
        if cnt:
            rows.add(
                np.repeat(np.arange(cnt), 2),
                np.stack([beta[kk, oo], z[oo]], axis=1),
                np.stack([np.ones(cnt), -lb[kk, oo]], axis=1),
                np.zeros(cnt),
                np.full(cnt, np.inf),
            )
        rows.add(
            np.zeros(M, dtype=int),
            z,
            np.ones(M),
            [float(n_outputs or 0)],
            [float(n_outputs or 0)],
        )
    else:
        col_lower[beta.ravel()] = lb.ravel()
    if z_in is not None:
        Xk = X[dmus]
        if np.any(Xk <= 0):
            raise DataError("input selection needs strictly positive inputs")
        cnt = S * N
        rows.add(
            np.repeat(np.arange(cnt), 2),
            np.stack([alpha.ravel(), np.tile(z_in, S)], axis=1),
            np.stack([np.ones(cnt), -(1.0 / Xk).ravel()], axis=1),
            np.full(cnt, -np.inf),
            np.zeros(cnt),
        )
        col_upper[alpha.ravel()] = (1.0 / Xk).ravel()
        rows.add(
            np.zeros(N, dtype=int),
            z_in,
            np.ones(N),
            [float(n_inputs or 0)],
            [float(n_inputs or 0)],
        )
    if output_costs is not None and budget is not None:
        if z is None:
            raise ValueError("output_costs/budget need output selection (n_outputs)")
        rows.add(np.zeros(M, dtype=int), z, output_costs, [-np.inf], [budget])
    for members, pmin, pmax in clusters or ():
        if z is None:
            raise ValueError("clusters need output selection (n_outputs)")
        idx = np.asarray(members, dtype=np.int64)
        rows.add(
            np.zeros(len(idx), dtype=int),
            z[idx],
            np.ones(len(idx)),
            [pmin],
            [pmax],
        )
    if excluded_pairs:
        if z is None:
            raise ValueError("correlation exclusion needs output selection (n_outputs)")
        pairs = np.asarray(excluded_pairs, dtype=np.int64).reshape(-1, 2)
        cnt = len(pairs)
        rows.add(
            np.repeat(np.arange(cnt), 2),
            z[pairs].ravel(),
            np.ones(2 * cnt),
            np.full(cnt, -np.inf),
            np.ones(cnt),
        )
    Yk = Y[dmus]
    if eff is not None:
        rows.add(
            np.repeat(np.arange(S), M + 1),
            np.concatenate([eff[:, None], beta], axis=1),
            np.concatenate([np.ones((S, 1)), -Yk], axis=1),
            np.zeros(S),
            np.zeros(S),
        )
    if objective == "min":
        assert eff is not None and lam is not None
        rows.add(
            np.repeat(np.arange(S), 2),
            np.stack([np.full(S, lam), eff], axis=1),
            np.stack([np.ones(S), -np.ones(S)], axis=1),
            np.full(S, -np.inf),
            np.zeros(S),
        )
    if objective == "percentile":
        if percentile is None:
            raise ValueError("objective='percentile' needs percentile=")
        assert eff is not None and lam is not None and delta is not None
        r = int(np.floor(S * float(percentile) / 100.0 + 1e-9))
        if not 1 <= r <= S:
            raise ValueError(
                f"percentile={percentile} gives r = floor({S} * pi / 100) = {r} DMUs; "
                f"need 1 <= r <= {S}"
            )
        rows.add(
            np.repeat(np.arange(S), 3),
            np.stack([np.full(S, lam), eff, delta], axis=1),
            np.stack([np.ones(S), -np.ones(S), np.ones(S)], axis=1),
            np.full(S, -np.inf),
            np.ones(S),
        )
        rows.add(np.zeros(S, dtype=int), delta, np.ones(S), [r], [r])

    A, lo, hi = rows.matrix(n)
    c = np.zeros(n)
    Q = None
    offset = 0.0
    sense = "max"
    if objective == "mean":
        c[beta.ravel()] = (Yk / S).ravel()
    elif objective == "weighted":
        if weights is None:
            raise ValueError("objective='weighted' needs weights= of shape (S,)")
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (S,) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(
                f"weights must be non-negative of shape ({S},) with a positive sum"
            )
        c[beta.ravel()] = (Yk * (w / w.sum())[:, None]).ravel()
    elif objective in ("min", "percentile"):
        c[lam] = 1.0
    else:  # quadratic
        assert eff is not None
        c[eff] = -2.0
        Q = sp.csr_array(
            (np.full(S, 2.0), (eff, eff)),
            shape=(n, n),
        )
        offset = float(S)
        sense = "min"
    model = MipModel(
        c=c,
        A=A,
        row_lower=lo,
        row_upper=hi,
        col_lower=col_lower,
        col_upper=col_upper,
        integrality=integrality if integrality.any() else None,
        Q=Q,
        offset=offset,
        sense=sense,
    )
    layout = DeaLayout(
        dmus=dmus,
        alpha=alpha,
        beta=beta,
        z=z,
        z_in=z_in,
        eff=eff,
        lam=lam,
        delta=delta,
    )
    return model, layout


# --------------------------------------------------------------------------- selection


@dataclass
class SelectionEvaluator:
    """LP efficiencies of selections, with the cut data (15) of each."""

    problem: DeaSelectionProblem
    reference: NDArray
    config: MipConfig
    deadline: float | None
    n_lps: int = 0

    def __call__(
        self,
        outputs: NDArray,
        inputs: NDArray | None = None,
        dmus: NDArray | None = None,
        lambdas: bool = False,
    ) -> EfficiencyBatch:
        """Efficiencies of ``dmus`` (default the evaluated ones) under a selection."""
        X, Y = self.problem.X, self.problem.Y
        ins = np.arange(X.shape[1]) if inputs is None else inputs
        dm = self.problem.evaluated if dmus is None else dmus
        wb = self.problem.constraints.weight_bounds
        wb = None if wb is None else (wb[0][outputs], wb[1][outputs])
        self.n_lps += len(dm)
        return _solve_envelopment(
            X[:, ins],
            Y[:, outputs],
            dm,
            self.reference,
            wb,
            self.config,
            self.deadline,
            lambdas,
            columns=self.reference if wb is None else None,
        )

    def value(self, outputs: NDArray, inputs: NDArray | None = None) -> float:
        """Objective of a selection."""
        eff = self(outputs, inputs).efficiencies
        return aggregate(eff, self.problem.objective)


@dataclass
class _CutPool:
    """Cuts (15) ``e_k <= const_k + coef_k . z`` from evaluated selections."""

    const: list[FloatArray] = field(default_factory=list)  # each (S,)
    coef: list[FloatArray] = field(default_factory=list)  # each (S, M)
    singles: dict[int, FloatArray] = field(default_factory=dict)  # o -> E_k({o})

    def add(
        self,
        Y_eval: FloatArray,
        Y_ref: FloatArray,
        outputs: NDArray,
        batch: EfficiencyBatch,
    ) -> None:
        """Cuts of one selection from its envelopment solution."""
        assert batch.lambdas is not None
        ly = batch.lambdas @ Y_ref  # (S, M): lambda . y_o over all outputs
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(Y_eval > 0, np.maximum(0.0, 1.0 - ly / Y_eval), 0.0)
        g[:, outputs] = 0.0
        self.const.append(batch.efficiencies.copy())
        self.coef.append(g)
        if len(outputs) == 1:
            self.singles[int(outputs[0])] = batch.efficiencies.copy()


def _pool_bounds(
    pool: _CutPool, chosen: list[int], e_upper: FloatArray, M: int
) -> FloatArray:
    """Upper bounds ``(S, M)`` on ``E_k(chosen + [o])`` from the cuts (15)-(17)."""
    ub = np.broadcast_to(np.minimum(e_upper, 1.0)[:, None], (len(e_upper), M)).copy()
    if len(pool.singles) == M:
        single = np.stack([pool.singles[o] for o in range(M)], axis=1)
        ub = np.minimum(ub, single[:, chosen].sum(axis=1, keepdims=True) + single)
    for const, coef in zip(pool.const, pool.coef):
        base = const + coef[:, chosen].sum(axis=1)
        np.minimum(ub, base[:, None] + coef, out=ub)
    return ub


def greedy_path(
    evaluate: SelectionEvaluator,
    n_steps: int,
    deadline: float | None = None,
    pool: _CutPool | None = None,
    e_upper: FloatArray | None = None,
) -> tuple[list[NDArray], list[float]]:
    """Greedy nested output selection (Pastor, Ruiz and Sirvent 2002).

    Adds, step by step, the output whose addition gives the best objective given those
    already chosen, among the outputs the constraints still allow (ties: the lowest
    index).  Stops early (with the steps done) when ``deadline`` passes.

    With ``e_upper`` (the full-model efficiencies) and no weight bounds, candidates are
    evaluated in decreasing order of an upper bound on their objective from the cuts
    (15)-(17) of the selections evaluated so far, and a step ends as soon as no
    remaining candidate can beat the best one: the same selections, fewer LPs.

    Returns
    -------
    selections : list of ndarray of int
        Nested selections for p = 1..(steps done).
    values : list of float
    """
    prob = evaluate.problem
    M = prob.Y.shape[1]
    cons = prob.constraints
    obj = prob.objective
    lazy = e_upper is not None and cons.weight_bounds is None and obj.maximise
    if lazy and pool is None:
        pool = _CutPool()
    chosen: list[int] = []
    path: list[NDArray] = []
    values: list[float] = []
    Y_eval = prob.Y[prob.evaluated]
    Y_ref = prob.Y[evaluate.reference]
    for _ in range(n_steps):
        cand = [o for o in range(M) if o not in chosen and cons.can_add(chosen, o)]
        bounds = np.full(M, np.inf)
        if lazy:
            assert pool is not None and e_upper is not None
            ub = _pool_bounds(pool, chosen, e_upper, M)
            bounds = np.array([aggregate(ub[:, o], obj) for o in range(M)])
            cand.sort(key=lambda o: (-bounds[o], o))
        best_o, best_v = -1, float("nan")
        for o in cand:
            if best_o >= 0 and bounds[o] < best_v - 1e-12:
                break
            if deadline is not None and time.perf_counter() > deadline:
                return path, values
            outs = np.array(sorted(chosen + [o]))
            batch = evaluate(outs, lambdas=pool is not None)
            if pool is not None:
                pool.add(Y_eval, Y_ref, outs, batch)
            v = aggregate(batch.efficiencies, obj)
            tie = best_o >= 0 and abs(v - best_v) <= 1e-12 and o < best_o
            if best_o < 0 or obj.better(v, best_v) or tie:
                best_o, best_v = o, v
        if best_o < 0:
            break
        chosen.append(best_o)
        path.append(np.array(sorted(chosen)))
        values.append(best_v)
    return path, values


def _swap_bounds(
    pool: _CutPool,
    single: FloatArray | None,
    e_upper: FloatArray,
    current: NDArray,
    leave: int,
    M: int,
) -> FloatArray:
    """Upper bounds ``(S, M)`` on ``E_k(current - {leave} + {o})`` from (15)-(17)."""
    S = len(e_upper)
    rest = current[current != leave]
    ub = np.broadcast_to(np.minimum(e_upper, 1.0)[:, None], (S, M)).copy()
    if single is not None:
        np.minimum(ub, single[:, rest].sum(axis=1, keepdims=True) + single, out=ub)
    for const, coef in zip(pool.const, pool.coef):
        base = const + coef[:, rest].sum(axis=1)
        np.minimum(ub, base[:, None] + coef, out=ub)
    return ub


def _local_search(
    evaluate: SelectionEvaluator,
    start: NDArray,
    start_value: float,
    pool: _CutPool,
    single: FloatArray | None,
    e_upper: FloatArray,
    deadline: float,
    max_evaluations: int,
) -> tuple[NDArray, float]:
    """Swap local search from a selection (one output out, one in).

    Each sweep bounds every swap by the cuts (15)-(17) in ``pool`` (one vectorised
    pass) and evaluates the swaps in decreasing order of that bound until the bound
    falls below the best value found: the best swap of the neighbourhood, with most
    swaps pruned.  Every evaluated selection adds its cuts to ``pool`` (they also serve
    the Benders master).  Stops at a local optimum, the deadline or after
    ``max_evaluations`` selections.
    """
    prob = evaluate.problem
    obj = prob.objective
    M = prob.Y.shape[1]
    Y_eval = prob.Y[prob.evaluated]
    Y_ref = prob.Y[evaluate.reference]
    cur, best = np.sort(np.asarray(start, dtype=np.int64)), float(start_value)
    seen = {cur.tobytes()}
    n_eval = 0
    while time.perf_counter() < deadline and n_eval < max_evaluations:
        cands: list[tuple[float, NDArray]] = []
        for leave in cur.tolist():
            ub = _swap_bounds(pool, single, e_upper, cur, leave, M)
            for o in range(M):
                if o in cur:
                    continue
                T = np.sort(np.append(cur[cur != leave], o))
                if T.tobytes() in seen or not prob.constraints.admits(T):
                    continue
                cands.append((aggregate(ub[:, o], obj), T))
        cands.sort(key=lambda c: -c[0])
        step_best, step_sel = best, None
        for bound, T in cands:
            if bound <= step_best + 1e-12:
                break
            if time.perf_counter() > deadline or n_eval >= max_evaluations:
                break
            seen.add(T.tobytes())
            batch = evaluate(T, lambdas=True)
            pool.add(Y_eval, Y_ref, T, batch)
            n_eval += 1
            v = aggregate(batch.efficiencies, obj)
            if obj.better(v, step_best):
                step_best, step_sel = v, T
        logger.info(
            "local search: %d candidates, %d evaluated so far, best %.6g",
            len(cands),
            n_eval,
            step_best,
        )
        if step_sel is None:
            break
        cur, best = step_sel, step_best
    return cur, best


def _greedy_inputs(
    evaluate: SelectionEvaluator, outputs: NDArray, n_inputs: int
) -> tuple[NDArray, float]:
    N = evaluate.problem.X.shape[1]
    obj = evaluate.problem.objective
    picked: list[int] = []
    best = (float("nan"), -1)
    for _ in range(n_inputs):
        best = (float("nan"), -1)
        for i in range(N):
            if i in picked:
                continue
            v = evaluate.value(outputs, np.array(sorted(picked + [i])))
            if best[1] < 0 or obj.better(v, best[0]):
                best = (v, i)
        picked.append(best[1])
    return np.array(sorted(picked)), best[0]


def _start_vector(
    evaluate: SelectionEvaluator,
    layout: DeaLayout,
    n_cols: int,
    outputs: NDArray,
    inputs: NDArray,
) -> FloatArray:
    """A MIP start for the big-M model from the LP weights of a selection."""
    prob = evaluate.problem
    x = np.zeros(n_cols)
    batch = evaluate(outputs, inputs)
    x[layout.alpha[:, inputs]] = batch.alpha
    x[layout.beta[:, outputs]] = batch.beta
    if layout.z is not None:
        x[layout.z[outputs]] = 1.0
    if layout.z_in is not None:
        x[layout.z_in[inputs]] = 1.0
    e = np.clip(batch.efficiencies, 0.0, 1.0)
    if layout.eff is not None:
        x[layout.eff] = e
    if layout.lam is not None:
        if prob.objective.name == "min":
            x[layout.lam] = e.min()
        else:
            assert prob.objective.percentile is not None and layout.delta is not None
            r = int(np.floor(len(e) * prob.objective.percentile / 100.0 + 1e-9))
            top = np.argsort(-e, kind="stable")[:r]
            x[layout.delta[top]] = 1.0
            x[layout.lam] = e[top].min()
    return x


@dataclass(frozen=True)
class _Exact:
    outputs: NDArray
    inputs: NDArray
    bound: float
    status: SolveStatus
    extra: dict[str, float]


def _infeasible(problem: DeaSelectionProblem) -> InfeasibleProblemError:
    c = problem.constraints
    return InfeasibleProblemError(
        f"no selection of {problem.n_outputs} outputs / {problem.n_inputs} inputs "
        f"satisfies the constraints (budget={c.budget}, {len(c.clusters)} clusters, "
        f"{len(c.excluded_pairs)} excluded correlated pairs, "
        f"weight bounds={c.weight_bounds is not None})"
    )


def _any_selection(prob: DeaSelectionProblem) -> NDArray | None:
    """A selection satisfying the constraints, found without LPs (time-limit fallback).

    Adds outputs by decreasing mean value where the constraints allow; ``None`` when
    that does not reach a complete admissible selection.
    """
    if prob.n_outputs is None:
        return None
    chosen: list[int] = []
    for o in np.argsort(-prob.Y.mean(axis=0), kind="stable").tolist():
        if len(chosen) == prob.n_outputs:
            break
        if prob.constraints.can_add(chosen, o):
            chosen.append(o)
    out = np.array(sorted(chosen), dtype=np.int64)
    if len(out) == prob.n_outputs and prob.constraints.admits(out):
        return out
    return None


def _solve_big_m(
    evaluate: SelectionEvaluator,
    start: tuple[NDArray, NDArray] | None,
    config: MipConfig,
    time_limit: float,
) -> _Exact:
    prob = evaluate.problem
    model, lay = build_selection_model(prob, evaluate.reference)
    x0 = None
    if start is not None:
        x0 = _start_vector(evaluate, lay, model.n_cols, *start)
    cfg = MipConfig(
        time_limit=max(time_limit, 1e-3),
        mip_rel_gap=config.mip_rel_gap,
        threads=config.threads,
        verbose=config.verbose,
        feasibility_tol=config.feasibility_tol,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        res = solve_model(model, cfg, start=x0)
    if res.status == SolveStatus.infeasible:
        raise _infeasible(prob)
    if res.x is None:
        if start is None:
            fallback = _any_selection(prob)
            if fallback is not None and prob.n_inputs is None:
                start = (fallback, np.arange(prob.X.shape[1]))
        if start is not None:
            return _Exact(start[0], start[1], res.bound, res.status, {})
        raise SolverError(
            f"DEA selection MIP gave no solution: {res.status} {res.message}"
        )
    M, N = prob.Y.shape[1], prob.X.shape[1]
    outs = np.arange(M) if lay.z is None else np.flatnonzero(res.x[lay.z] > 0.5)
    ins = np.arange(N) if lay.z_in is None else np.flatnonzero(res.x[lay.z_in] > 0.5)
    return _Exact(
        outs, ins, float(res.bound), res.status, {"mip_objective": res.objective}
    )


def _benders_master(
    prob: DeaSelectionProblem,
    cut_rows: list[tuple[NDArray, FloatArray, FloatArray]],
    single: FloatArray | None,
    e_upper: FloatArray,
) -> tuple[MipModel, NDArray, NDArray, int | None, NDArray | None]:
    """Master MILP over ``z`` (M), ``e`` (S), [``lam``], [``delta`` (S)]."""
    M = prob.Y.shape[1]
    S = len(prob.evaluated)
    obj = prob.objective
    z = np.arange(M)
    e = M + np.arange(S)
    nxt = M + S
    lam = None
    delta = None
    if obj.name in ("min", "percentile"):
        lam = nxt
        nxt += 1
    if obj.name == "percentile":
        delta = nxt + np.arange(S)
        nxt += S
    n = nxt
    rows = _Rows()
    assert prob.n_outputs is not None
    rows.add(np.zeros(M, dtype=int), z, np.ones(M), [prob.n_outputs], [prob.n_outputs])
    cons = prob.constraints
    if cons.output_costs is not None and cons.budget is not None:
        rows.add(np.zeros(M, dtype=int), z, cons.output_costs, [-np.inf], [cons.budget])
    for g in cons.clusters:
        rows.add(
            np.zeros(len(g.members), dtype=int),
            z[g.members],
            np.ones(len(g.members)),
            [g.p_min],
            [g.p_max],
        )
    if cons.excluded_pairs:
        pairs = np.asarray(cons.excluded_pairs, dtype=np.int64).reshape(-1, 2)
        cnt = len(pairs)
        rows.add(
            np.repeat(np.arange(cnt), 2),
            z[pairs].ravel(),
            np.ones(2 * cnt),
            np.full(cnt, -np.inf),
            np.ones(cnt),
        )
    if single is not None:  # (16)
        rows.add(
            np.repeat(np.arange(S), M + 1),
            np.concatenate([e[:, None], np.broadcast_to(z, (S, M))], axis=1),
            np.concatenate([np.ones((S, 1)), -single], axis=1),
            np.full(S, -np.inf),
            np.zeros(S),
        )
    for k_idx, const, coef in cut_rows:  # (15)
        cnt = len(k_idx)
        rows.add(
            np.repeat(np.arange(cnt), M + 1),
            np.concatenate([e[k_idx][:, None], np.broadcast_to(z, (cnt, M))], axis=1),
            np.concatenate([np.ones((cnt, 1)), -coef], axis=1),
            np.full(cnt, -np.inf),
            const,
        )
    if lam is not None and obj.name == "min":  # (13)
        rows.add(
            np.repeat(np.arange(S), 2),
            np.stack([np.full(S, lam), e], axis=1),
            np.stack([np.ones(S), -np.ones(S)], axis=1),
            np.full(S, -np.inf),
            np.zeros(S),
        )
    if delta is not None:  # (14)
        assert lam is not None and obj.percentile is not None
        r = int(np.floor(S * obj.percentile / 100.0 + 1e-9))
        rows.add(
            np.repeat(np.arange(S), 3),
            np.stack([np.full(S, lam), e, delta], axis=1),
            np.stack([np.ones(S), -np.ones(S), np.ones(S)], axis=1),
            np.full(S, -np.inf),
            np.ones(S),
        )
        rows.add(np.zeros(S, dtype=int), delta, np.ones(S), [r], [r])
    A, lo, hi = rows.matrix(n)
    c = np.zeros(n)
    if obj.name == "mean":
        c[e] = 1.0 / S
    elif obj.name == "weighted":
        assert obj.weights is not None
        c[e] = obj.weights / obj.weights.sum()
    else:
        assert lam is not None
        c[lam] = 1.0
    col_upper = np.ones(n)
    col_upper[e] = e_upper
    integ = np.zeros(n, dtype=bool)
    integ[z] = True
    if delta is not None:
        integ[delta] = True
    model = MipModel(
        c=c,
        A=A,
        row_lower=lo,
        row_upper=hi,
        col_lower=np.zeros(n),
        col_upper=col_upper,
        integrality=integ,
        sense="max",
    )
    return model, z, e, lam, delta


def _master_start(
    prob: DeaSelectionProblem,
    n: int,
    z: NDArray,
    e: NDArray,
    lam: int | None,
    delta: NDArray | None,
    outputs: NDArray,
    eff: FloatArray,
) -> FloatArray:
    x = np.zeros(n)
    x[z[outputs]] = 1.0
    x[e] = np.clip(eff, 0.0, 1.0)
    if lam is not None:
        if delta is None:
            x[lam] = x[e].min()
        else:
            assert prob.objective.percentile is not None
            r = int(np.floor(len(eff) * prob.objective.percentile / 100.0 + 1e-9))
            top = np.argsort(-x[e], kind="stable")[:r]
            x[delta[top]] = 1.0
            x[lam] = x[e][top].min()
    return x


def _root_rounds(
    evaluate: SelectionEvaluator,
    cut_rows: list[tuple[NDArray, FloatArray, FloatArray]],
    single: FloatArray | None,
    e_upper: FloatArray,
    config: MipConfig,
    deadline: float,
) -> tuple[float, FloatArray | None]:
    """Kelley rounds on the master's LP relaxation; appends cuts.

    Returns the LP bound and the last fractional ``z`` (``None`` if no LP was solved).

    Solve the master with ``z`` relaxed to ``[0, 1]``, add the cuts of
    :func:`_relaxation_cuts` that its fractional point violates, repeat until none is
    violated (the bound is then that of the big-M model's LP relaxation, SPEC S7 tight
    big-M) or the deadline.  The cuts stay valid for every binary ``z``: they give the
    MILP master a root bound it would otherwise have to branch for.
    """
    prob = evaluate.problem
    bound = math.inf
    zf = None
    for rnd in range(_ROOT_ROUNDS):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        model, z, e, _, _ = _benders_master(prob, cut_rows, single, e_upper)
        relaxed = dataclasses.replace(model, integrality=None)
        res = solve_highs(
            relaxed,
            MipConfig(
                time_limit=left,
                threads=config.threads,
                feasibility_tol=config.feasibility_tol,
            ),
            warn=False,
        )
        if res.status is not SolveStatus.optimal or res.x is None:
            break
        bound = min(bound, res.objective)
        zf, ef = res.x[z], res.x[e]
        ks, const, coef = _relaxation_cuts(evaluate, zf, np.arange(len(ef)), deadline)
        viol = ef[ks] - (const + coef @ zf) > _ROOT_VIOL
        logger.info(
            "benders root %d: LP bound %.6g, %d rows, %d violated cuts",
            rnd + 1,
            res.objective,
            model.n_rows,
            int(viol.sum()),
        )
        if not viol.any():
            break
        cut_rows.append((ks[viol], const[viol], coef[viol]))
    return bound, zf


def _solve_benders(
    evaluate: SelectionEvaluator,
    incumbent: tuple[NDArray, float] | None,
    pool: _CutPool,
    single: FloatArray | None,
    e_upper: FloatArray,
    config: MipConfig,
    deadline: float,
) -> tuple[_Exact, NDArray | None, float]:
    """Benders loop (15)-(17); returns the best selection, its value, and the bound."""
    prob = evaluate.problem
    obj = prob.objective
    Y_eval = prob.Y[prob.evaluated]
    Y_ref = prob.Y[evaluate.reference]
    pool_const = np.stack(pool.const) if pool.const else np.zeros((0, len(e_upper)))
    pool_coef = (
        np.stack(pool.coef)
        if pool.coef
        else np.zeros((0, len(e_upper), prob.Y.shape[1]))
    )
    in_master = np.zeros(pool_const.shape, dtype=bool)
    cut_rows: list[tuple[NDArray, FloatArray, FloatArray]] = []
    best_out = None if incumbent is None else incumbent[0]
    best_val = -math.inf if incumbent is None else incumbent[1]
    bound = math.inf
    status = SolveStatus.time_limit
    n_iter = n_cuts = 0
    seen: set[bytes] = set()
    bound, zf = _root_rounds(
        evaluate,
        cut_rows,
        single,
        e_upper,
        config,
        time.perf_counter() + _ROOT_SHARE * max(0.0, deadline - time.perf_counter()),
    )
    if zf is not None:
        # NOTE: the largest p of the fractional root z is a start where the greedy did
        # not finish (large K); a local search from it if it beats the incumbent.
        rounded = _round_fractional(prob, zf)
        if rounded is not None and time.perf_counter() < deadline:
            try:
                batch = evaluate(rounded, lambdas=True)
            except SolverError:
                batch = None
            if batch is not None:
                pool.add(Y_eval, Y_ref, rounded, batch)
                v = aggregate(batch.efficiencies, obj)
                if best_out is None or obj.better(v, best_val):
                    ls_deadline = time.perf_counter() + _LOCAL_SEARCH_SHARE * max(
                        0.0, deadline - time.perf_counter()
                    )
                    best_out, best_val = _local_search(
                        evaluate,
                        rounded,
                        v,
                        pool,
                        single,
                        e_upper,
                        ls_deadline,
                        _LOCAL_SEARCH_EVALUATIONS,
                    )
                    logger.info("benders: start from the rounded root %.6g", best_val)
        pool_const = np.stack(pool.const) if pool.const else np.zeros((0, len(e_upper)))
        pool_coef = (
            np.stack(pool.coef)
            if pool.coef
            else np.zeros((0, len(e_upper), prob.Y.shape[1]))
        )
        in_master = np.zeros(pool_const.shape, dtype=bool)
    n_cuts = sum(len(r[0]) for r in cut_rows)
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        model, z, e, lam, delta = _benders_master(prob, cut_rows, single, e_upper)
        start = None
        if best_out is not None:
            try:
                beff = evaluate(best_out).efficiencies
            except SolverError:
                break
            start = _master_start(prob, model.n_cols, z, e, lam, delta, best_out, beff)
        # NOTE: an early master need not be solved tightly: its z only has to be
        # good enough to yield cuts; the tolerance follows the gap still open.
        master_gap = max(
            config.mip_rel_gap / 4, min(0.25 * _rel_gap(best_val, bound), 0.05)
        )
        cfg = MipConfig(
            time_limit=left,
            mip_rel_gap=master_gap,
            threads=config.threads,
            verbose=config.verbose,
            feasibility_tol=config.feasibility_tol,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolverTimeLimitWarning)
            # NOTE: HiGHS minimises -master; objective_bound prunes every node that
            # cannot beat (1 + gap) * incumbent, so an empty master proves the gap.
            target = None
            if best_out is not None and best_val > 0:
                # NOTE: a hair inside the gap, so that a pruned master proves it
                # strictly (not up to rounding).
                target = (1.0 + _TARGET_SHARE * config.mip_rel_gap) * best_val
            res = solve_highs(
                model,
                cfg,
                start=start,
                warn=False,
                options=None if target is None else {"objective_bound": -target},
            )
        n_iter += 1
        logger.info(
            "benders %d: master %.2fs (%s, %d rows), incumbent %.6g, bound %.6g",
            n_iter,
            res.runtime,
            res.status,
            model.n_rows,
            best_val,
            min(bound, res.bound),
        )
        if (
            res.x is None
            and target is not None
            and res.status
            in (
                SolveStatus.infeasible,
                SolveStatus.not_solved,
            )
        ):
            # no master solution reaches the target: the gap is proven
            bound = min(bound, target)
            status = SolveStatus.optimal
            break
        if res.status == SolveStatus.infeasible:
            raise _infeasible(prob)
        # NOTE: nodes pruned by objective_bound may hold master values up to the
        # target, which HiGHS's dual bound leaves out (it may even accept a MIP start
        # below the target): only max(dual bound, target) is proven.
        master_bound = res.bound if target is None else max(res.bound, target)
        if math.isfinite(master_bound):
            bound = min(bound, master_bound)
        if res.x is None:
            break
        zs = np.flatnonzero(res.x[z] > 0.5)
        es = res.x[e]
        gap = _rel_gap(best_val, bound)
        if gap <= config.mip_rel_gap:
            status = SolveStatus.optimal
            break
        # cuts of the pool violated at the master solution
        added = False
        if len(pool_const):
            val = pool_const + pool_coef[:, :, zs].sum(axis=2)
            viol = (es[None, :] - val > 1e-7) & ~in_master
            if viol.any():
                # NOTE: one most violated pool cut per DMU keeps the master small.
                score = np.where(viol, es[None, :] - val, -np.inf)
                t_best = np.argmax(score, axis=0)
                ks = np.flatnonzero(np.isfinite(score[t_best, np.arange(len(es))]))
                in_master[t_best[ks], ks] = True
                cut_rows.append(
                    (ks, pool_const[t_best[ks], ks], pool_coef[t_best[ks], ks])
                )
                n_cuts += len(ks)
                added = True
        key = zs.tobytes()
        if key not in seen:
            seen.add(key)
            try:
                batch = evaluate(zs, lambdas=True)
            except SolverError:
                break  # the LPs ran past the deadline: keep the incumbent
            v = aggregate(batch.efficiencies, obj)
            if best_out is None or obj.better(v, best_val):
                best_out, best_val = zs, v
            ks = np.flatnonzero(es - batch.efficiencies > 1e-7)
            if ks.size:
                const, coef = _pareto_cuts(evaluate, zs, batch, ks, deadline)
                cut_rows.append((ks, const, coef))
                n_cuts += len(ks)
                added = True
        if _rel_gap(best_val, bound) <= config.mip_rel_gap:
            status = SolveStatus.optimal
            break
        if not added:
            # NOTE: the master's e equal the LP efficiencies of its z, so no cut can
            # lower its bound further: what is proven is the master's dual bound
            # (its incumbent objective is not a bound while master_gap > 0).
            if math.isfinite(master_bound):
                bound = min(bound, master_bound)
            status = (
                SolveStatus.optimal
                if _rel_gap(best_val, bound) <= config.mip_rel_gap
                else status
            )
            break
    if best_out is None:
        best_out = _any_selection(prob)
        if best_out is None:
            raise SolverError("DEA Benders: no selection found within the time limit")
    extra = {
        "benders_iterations": n_iter,
        "benders_cuts": n_cuts,
        "pool_cuts": int(pool_const.size),
    }
    N = prob.X.shape[1]
    return _Exact(best_out, np.arange(N), bound, status, extra), best_out, best_val


class _DualEfficiencyLp(PersistentLp):
    """The dual of the output-oriented efficiency LP of one DMU, kept in HiGHS and
    re-targeted at other DMUs (SPEC S7): ``min c_theta theta + sum_o cost_o mu_o``
    over ``lambda . x_i <= theta x_i^k`` (one row per input i) and ``lambda . y_o +
    mu_o >= y_o^k`` (one row per output o), ``lambda >= 0``, ``mu >= 0``, theta free.

    Columns: theta, then ``mu_o`` for the outputs ``mu_outputs`` (``mu_cols``), then
    ``lambda_j`` for the reference DMUs. Costs of theta and mu start at
    ``theta_cost`` and 0; callers set them with ``change_costs``.
    """

    def __init__(
        self,
        evaluate: SelectionEvaluator,
        mu_outputs: NDArray,
        k0: int,
        theta_cost: float,
    ) -> None:
        prob = evaluate.problem
        X, Y = prob.X, prob.Y
        ref = evaluate.reference
        M, N = Y.shape[1], X.shape[1]
        n_mu = len(mu_outputs)
        mu_block = np.zeros((N + M, n_mu))
        mu_block[N + np.asarray(mu_outputs), np.arange(n_mu)] = 1.0
        A = np.hstack(
            [
                np.concatenate([-X[k0], np.zeros(M)])[:, None],
                mu_block,
                np.vstack([X[ref].T, Y[ref].T]),
            ]
        )
        n_col = 1 + n_mu + len(ref)
        model = MipModel(
            c=np.concatenate([[theta_cost], np.zeros(n_col - 1)]),
            A=sp.csr_array(A),
            row_lower=np.concatenate([np.full(N, -np.inf), Y[k0]]),
            row_upper=np.concatenate([np.zeros(N), np.full(M, np.inf)]),
            col_lower=np.concatenate([[-np.inf], np.zeros(n_col - 1)]),
            col_upper=np.full(n_col, np.inf),
            sense="min",
        )
        super().__init__(model, evaluate.config)
        self._X, self._Y = X, Y
        self.mu_cols = 1 + np.arange(n_mu)

    def load_dmu(self, k: int) -> None:
        """Make the LP the one of DMU ``k``: its inputs scale theta, its outputs are
        the right-hand sides."""
        N, M = self._X.shape[1], self._Y.shape[1]
        self.change_coefficients(np.arange(N), np.zeros(N, dtype=np.int64), -self._X[k])
        self.change_row_bounds(N + np.arange(M), self._Y[k], np.full(M, np.inf))


def _pareto_cuts(
    evaluate: SelectionEvaluator,
    outputs: NDArray,
    batch: EfficiencyBatch,
    ks: NDArray,
    deadline: float,
) -> tuple[FloatArray, FloatArray]:
    """Cuts (15) of a selection T for the evaluated DMUs ``ks``, strengthened.

    Among the dual points tight at ``T`` (``theta <= E_k(T)``, ``mu_o = 0`` for o in
    T) pick the one minimising ``sum_{o not in T} mu_o / y_o^k``, the cut's value at
    the core point ``z = p / M`` (Magnanti and Wong 1981): an LP over
    ``(theta, mu, lambda)`` with every output row.  Falls back to the optimal
    envelopment ``lambda`` (the plain cut) for a DMU whose LP is not solved in time.
    """
    prob = evaluate.problem
    Y = prob.Y
    ref = evaluate.reference
    M = Y.shape[1]
    evald = prob.evaluated
    Y_eval = Y[evald]
    plain = _CutPool()
    plain.add(Y_eval, Y[ref], outputs, batch)
    const = plain.const[0][ks].copy()
    coef = plain.coef[0][ks].copy()
    out = np.setdiff1d(np.arange(M), outputs)
    if out.size == 0:
        return const, coef
    # columns: theta, mu_o (o not in T), lambda_j (j in ref)
    lp = _DualEfficiencyLp(evaluate, out, int(evald[ks[0]]), theta_cost=0.0)
    mu_cols = lp.mu_cols
    for t, s_idx in enumerate(ks.tolist()):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        k = int(evald[s_idx])
        yk = Y[k]
        lp.load_dmu(k)
        # NOTE: a hair above E_k(T) keeps the LP feasible under HiGHS tolerances.
        theta = batch.efficiencies[s_idx]
        lp.change_col_bounds(
            np.array([0]), np.array([-np.inf]), np.array([theta + 1e-9])
        )
        with np.errstate(divide="ignore"):
            cost = np.where(yk[out] > 0, 1.0 / np.where(yk[out] > 0, yk[out], 1.0), 0.0)
        lp.change_costs(mu_cols, cost)
        res = lp.solve(left)
        if res.status is not SolveStatus.optimal or res.x is None:
            continue
        mu = np.maximum(res.x[mu_cols], 0.0)
        g = np.zeros(M)
        g[out] = mu * cost
        if g.sum() < coef[t].sum():
            coef[t] = g
            const[t] = max(theta, float(res.x[0]))
    return const, coef


def _relaxation_cuts(
    evaluate: SelectionEvaluator,
    z: FloatArray,
    ks: NDArray,
    deadline: float,
) -> tuple[NDArray, FloatArray, FloatArray]:
    """Cuts of a fractional ``z`` from the LP relaxation of (5): ``beta_o <= z_o / y_o^k``.

    The relaxed efficiency ``E_k(z) = max sum_o beta_o y_o^k`` s.t. (2)-(4) and
    ``beta_o <= z_o / y_o^k`` has the dual ``min theta + sum_o (z_o / y_o^k) mu_o``
    over ``lambda . x <= theta x^k``, ``lambda . y_o + mu_o >= y_o^k``, whose feasible
    set does not depend on ``z``: its optimum gives ``e_k <= theta + sum_o (mu_o /
    y_o^k) z_o`` for every ``z``, tight at the fractional point (the root of the big-M
    model's LP relaxation, reached by Kelley rounds in :func:`_solve_benders`).

    Returns
    -------
    ks : ndarray of int
        The DMUs (positions in ``evaluated``) whose LP was solved in time.
    const, coef : ndarray of shape (len(ks),), (len(ks), M)
    """
    prob = evaluate.problem
    X, Y = prob.X, prob.Y
    ref = evaluate.reference
    M = Y.shape[1]
    evald = prob.evaluated
    if ks.size == 0:
        return ks, np.zeros(0), np.zeros((0, M))
    lp = _DualEfficiencyLp(evaluate, np.arange(M), int(evald[ks[0]]), theta_cost=1.0)
    done, const, coef = [], [], []
    for s_idx in ks.tolist():
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        k = int(evald[s_idx])
        yk = Y[k]
        inv = np.where(yk > 0, 1.0 / np.where(yk > 0, yk, 1.0), 0.0)
        lp.load_dmu(k)
        lp.change_costs(lp.mu_cols, np.clip(z, 0.0, 1.0) * inv)
        res = lp.solve(left)
        if res.status is not SolveStatus.optimal or res.x is None:
            continue
        done.append(s_idx)
        lam = np.maximum(res.x[1 + M :], 0.0)
        # NOTE: rebuild a dual-feasible point from lambda alone (theta from the input
        # rows, mu from the output rows), so the cut is valid whatever the tolerances.
        pos = X[k] > 0
        theta = float(np.max((X[ref][:, pos].T @ lam) / X[k, pos]))
        mu = np.maximum(0.0, yk - Y[ref].T @ lam)
        const.append(max(theta, 0.0))
        coef.append(mu * inv)
    if not done:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, M))
    return np.asarray(done, dtype=np.int64), np.asarray(const), np.vstack(coef)


def _round_fractional(prob: DeaSelectionProblem, z: FloatArray) -> NDArray | None:
    """The ``p`` largest entries of a fractional ``z`` the constraints admit, or None."""
    chosen: list[int] = []
    for o in np.argsort(-z, kind="stable").tolist():
        if len(chosen) == prob.n_outputs:
            break
        if prob.constraints.can_add(chosen, o):
            chosen.append(o)
    out = np.array(sorted(chosen), dtype=np.int64)
    if len(out) == prob.n_outputs and prob.constraints.admits(out):
        return out
    return None


def _singletons(
    evaluate: SelectionEvaluator, pool: _CutPool, deadline: float
) -> FloatArray | None:
    """``E_k({o})`` for every evaluated k and output o, for the rows (16)."""
    prob = evaluate.problem
    M = prob.Y.shape[1]
    out = np.zeros((len(prob.evaluated), M))
    for o in range(M):
        if o in pool.singles:
            out[:, o] = pool.singles[o]
            continue
        if time.perf_counter() > deadline:
            return None
        out[:, o] = evaluate(np.array([o])).efficiencies
    return out


def _rel_gap(value: float, bound: float) -> float:
    if not (math.isfinite(value) and math.isfinite(bound)):
        return math.inf
    return max(0.0, bound - value) / max(abs(value), 1e-10)


def solve_selection(
    problem: DeaSelectionProblem,
    *,
    time_limit: float = 300.0,
    config: MipConfig | None = None,
    warm_start: str | None = "greedy",
    method: str = "auto",
) -> DeaSelectionResult:
    """Exact selection of a :class:`DeaSelectionProblem` within ``time_limit`` seconds.

    The whole call is bounded: the full-model LPs, the greedy start (at most 30 % of
    the budget), the exact stage and the final efficiencies share ``time_limit``.

    Parameters
    ----------
    problem : DeaSelectionProblem
    time_limit : float
        Seconds for the whole call.
    config : MipConfig, optional
        Gap (``mip_rel_gap``), threads, tolerances; its ``time_limit`` is ignored.
    warm_start : {"greedy", None}
        Start from the greedy nested selection (Pastor et al. 2002).
    method : {"auto", "benders", "big_m"}
        ``"auto"``: Benders for joint models without weight bounds, input selection or
        the quadratic objective; the big-M MILP / MIQP otherwise.

    Returns
    -------
    DeaSelectionResult

    Raises
    ------
    InfeasibleProblemError
        No selection satisfies the constraints.
    """
    t0 = time.perf_counter()
    if not (time_limit > 0 and math.isfinite(time_limit)):
        raise ValueError(f"time_limit must be finite and > 0, got {time_limit}")
    if warm_start not in ("greedy", None):
        raise ValueError(f"warm_start must be 'greedy' or None, got {warm_start!r}")
    config = MipConfig(time_limit=time_limit) if config is None else config
    deadline = t0 + time_limit
    prob = problem
    benders_ok = (
        prob.n_outputs is not None
        and prob.n_inputs is None
        and prob.constraints.weight_bounds is None
        and prob.objective.name != "quadratic"
    )
    if method == "auto":
        method = "benders" if benders_ok and prob.dmu is None else "big_m"
    elif method == "benders" and not benders_ok:
        raise ValueError(
            "method='benders' needs output selection without weight bounds, input "
            "selection or the quadratic objective"
        )
    elif method not in ("benders", "big_m"):
        raise ValueError(f"method must be 'auto', 'benders' or 'big_m', got {method!r}")
    # NOTE: LPs after the exact stage (the reported efficiencies) need a reserve.
    lp_deadline = deadline + max(1.0, 0.05 * time_limit)
    t_ref = time.perf_counter()
    reference, full_eff = efficient_reference(
        prob.X, prob.Y, prob.constraints.weight_bounds, config, lp_deadline
    )
    # NOTE: the exact stage stops early enough for the final efficiencies of all K
    # DMUs (about the cost of the full-model LPs just timed) to fit in the budget;
    # with a reserve of 1 s they ran past the deadline at K = 1000 under load.
    reserve = min(0.25 * time_limit, 1.5 * (time.perf_counter() - t_ref) + 0.5)
    exact_deadline = deadline - reserve
    evaluate = SelectionEvaluator(prob, reference, config, lp_deadline)
    N = prob.X.shape[1]
    pool = _CutPool() if method == "benders" else None
    greedy: tuple[NDArray, NDArray, float] | None = None
    if warm_start == "greedy" and prob.n_outputs is not None:
        g_deadline = t0 + 0.3 * time_limit
        e_up = None if full_eff is None else full_eff[prob.evaluated]
        path, vals = greedy_path(evaluate, prob.n_outputs, g_deadline, pool, e_up)
        if len(path) == prob.n_outputs and prob.constraints.admits(path[-1]):
            g_in = np.arange(N)
            g_val = vals[-1]
            if prob.n_inputs is not None:
                g_in, g_val = _greedy_inputs(evaluate, path[-1], prob.n_inputs)
            greedy = (path[-1], g_in, g_val)
    if (
        method == "benders"
        and greedy is not None
        and prob.n_outputs == 1
        and prob.constraints.weight_bounds is None
    ):
        # NOTE: with p = 1 the greedy step evaluated (or pruned by valid bounds) every
        # admissible output: its choice is optimal.
        exact = _Exact(
            greedy[0], greedy[1], greedy[2], SolveStatus.optimal, {"exhaustive": 1}
        )
    elif method == "benders":
        assert pool is not None and full_eff is not None
        single = _singletons(evaluate, pool, t0 + _SINGLETON_SHARE * time_limit)
        inc = None if greedy is None else (greedy[0], greedy[2])
        if inc is not None:
            # NOTE: a better incumbent lowers the target every master must beat.
            inc = _local_search(
                evaluate,
                inc[0],
                inc[1],
                pool,
                single,
                full_eff[prob.evaluated],
                t0 + _LOCAL_SEARCH_SHARE * time_limit,
                _LOCAL_SEARCH_EVALUATIONS,
            )
        exact, _, _ = _solve_benders(
            evaluate,
            inc,
            pool,
            single,
            full_eff[prob.evaluated],
            config,
            exact_deadline,
        )
    else:
        start = None if greedy is None else (greedy[0], greedy[1])
        exact = _solve_big_m(
            evaluate, start, config, exact_deadline - time.perf_counter()
        )
    outs, ins = exact.outputs, exact.inputs
    try:
        eff_all = evaluate(outs, ins, np.arange(prob.X.shape[0])).efficiencies
    except SolverError:
        # NOTE: a result a little late beats none: the reported efficiencies are
        # re-solved without the deadline when the reserve was too short.
        logger.warning("DEA selection: final efficiency LPs ran past the time limit")
        evaluate.deadline = None
        eff_all = evaluate(outs, ins, np.arange(prob.X.shape[0])).efficiencies
    value = aggregate(eff_all[prob.evaluated], prob.objective)
    if greedy is not None and prob.objective.better(greedy[2], value):
        # NOTE: only possible at a time limit (or within the gap); keep the better.
        outs, ins, value = greedy
        eff_all = evaluate(outs, ins, np.arange(prob.X.shape[0])).efficiencies
    bound = exact.bound
    if prob.objective.maximise:
        gap = _rel_gap(value, bound)
    else:
        gap = (
            max(0.0, value - bound) / max(abs(value), 1e-10)
            if math.isfinite(bound)
            else math.inf
        )
    status = exact.status
    if status is SolveStatus.time_limit:
        warnings.warn(
            f"DEA selection stopped at its time limit ({time_limit:.3g} s) with "
            f"objective {value:.6g}, bound {bound:.6g} (relative gap {gap:.3g})",
            SolverTimeLimitWarning,
            stacklevel=3,
        )
    return DeaSelectionResult(
        selected_outputs=np.asarray(outs, dtype=np.int64),
        selected_inputs=np.asarray(ins, dtype=np.int64),
        efficiencies=eff_all,
        objective=value,
        bound=float(bound),
        status=status,
        mip_gap=float(gap),
        runtime=time.perf_counter() - t0,
        greedy_outputs=None if greedy is None else greedy[0],
        greedy_objective=float("nan") if greedy is None else greedy[2],
        dmu=prob.dmu,
        objective_name=prob.objective.name,
        method=method,
        extra={**exact.extra, "n_reference": len(reference), "n_lps": evaluate.n_lps},
    )
