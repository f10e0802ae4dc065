r"""Formulation builders for feature selection in DEA (SPEC S7, thesis ch. 5).

Notation: K DMUs with inputs ``X (K, N) >= 0`` and outputs ``Y (K, M) >= 0``; the
evaluated DMUs are a set ``S`` (one DMU for the individual models OSDEA(k)/FSDEA(k),
all K for the joint model OSDEA(p)); the reference set ``R`` holds the DMUs whose
frontier rows are kept (all K by default, see Notes).

Efficiency LP (CRS, input oriented, multiplier form), one block per ``k in S``::

    (1) E(k) = max  sum_o beta_o^k y_o^k
    (2)  s.t.  sum_o beta_o^k y_o^j - sum_i alpha_i^k x_i^j <= 0      j in R
    (3)        sum_i alpha_i^k x_i^k = 1
    (4)        alpha^k, beta^k >= 0

``build_efficiency_model`` stacks the blocks of a batch of DMUs into one block-diagonal
LP (the objective is the sum of the block objectives, so every block is at its own
optimum at the optimum of the sum).

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
  peers are efficient).  Callers may therefore pass ``R`` = the DMUs efficient in the
  full model; this is exact for every selection but is not used with weight bounds,
  which break the cone argument.
* The percentile is counted as in SPEC S7: ``delta_k = 1`` marks the ``r`` DMUs that must
  reach ``lam``, so the optimum is the ``r``-th largest efficiency (``percentile=100``
  is the minimum).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import DataError, InfeasibleProblemError
from torchsvm.types import ArrayLike, FloatArray, NDArray

__all__ = [
    "DeaLayout",
    "DeaModelArrays",
    "OBJECTIVES",
    "build_efficiency_model",
    "build_selection_model",
    "nondominated_dmus",
    "output_beta_bounds",
]

OBJECTIVES: tuple[str, ...] = ("mean", "weighted", "min", "percentile", "quadratic")


@dataclass(frozen=True)
class DeaLayout:
    """Column indices of a DEA model.

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


@dataclass(frozen=True)
class DeaModelArrays:
    """The arrays of a ``torchsvm.mip.highs.MipModel`` plus the column layout."""

    c: FloatArray
    A: sp.csr_array
    row_lower: FloatArray
    row_upper: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integrality: NDArray | None
    Q: sp.csr_array | None
    offset: float
    sense: str
    layout: DeaLayout

    @property
    def n_cols(self) -> int:
        """Number of columns."""
        return int(self.c.shape[0])

    def to_mip_model(self):  # type: ignore[no-untyped-def]  # noqa: ANN201
        """Return the ``MipModel`` (imported lazily from ``torchsvm.mip.highs``)."""
        from torchsvm.mip.model import MipModel

        return MipModel(
            c=self.c,
            A=self.A,
            row_lower=self.row_lower,
            row_upper=self.row_upper,
            col_lower=self.col_lower,
            col_upper=self.col_upper,
            integrality=self.integrality,
            Q=self.Q,
            offset=self.offset,
            sense=self.sense,
        )


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
) -> DeaModelArrays:
    """Block-diagonal LP (1)-(4) for a batch of DMUs.

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
    DeaModelArrays
        ``sense="max"``; the objective is the sum of the batch's efficiencies.
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
    return DeaModelArrays(
        c=c,
        A=A,
        row_lower=lo,
        row_upper=hi,
        col_lower=col_lower,
        col_upper=col_upper,
        integrality=None,
        Q=None,
        offset=0.0,
        sense="max",
        layout=DeaLayout(dmus=dmus, alpha=alpha, beta=beta),
    )


def build_selection_model(
    X: FloatArray,
    Y: FloatArray,
    dmus: NDArray,
    n_outputs: int | None,
    n_inputs: int | None = None,
    objective: str = "mean",
    weights: FloatArray | None = None,
    percentile: float | None = None,
    weight_bounds: tuple[FloatArray, FloatArray] | None = None,
    output_costs: FloatArray | None = None,
    budget: float | None = None,
    clusters: Sequence[tuple[Sequence[int], int, int]] | None = None,
    excluded_pairs: Sequence[tuple[int, int]] | None = None,
    reference: NDArray | None = None,
) -> DeaModelArrays:
    """Selection MILP / MIQP (1)-(14) for the evaluated DMUs ``dmus``.

    Parameters
    ----------
    X, Y : ndarray of shape (K, N), (K, M)
        Validated data (inputs must be > 0 when ``n_inputs`` is given).
    dmus : ndarray of shape (S,)
        Evaluated DMUs: one for OSDEA(k) / FSDEA(k), all K for the joint model.
    n_outputs : int or None
        ``p`` in (8); ``None`` keeps every output (no output binaries).
    n_inputs : int or None
        ``pt`` in (8); ``None`` keeps every input.
    objective : {"mean", "weighted", "min", "percentile", "quadratic"}
        See the module docstring.
    weights : ndarray of shape (S,), optional
        ``w_k`` of the weighted objective.
    percentile : float, optional
        ``pi`` of the percentile objective (``r = floor(S pi / 100)``).
    weight_bounds : (L, U), optional
        Arrays of shape (M,) for (5)-(6).
    output_costs, budget : optional
        (9).
    clusters : sequence of (indices, pmin, pmax), optional
        (10).
    excluded_pairs : sequence of (o, o'), optional
        (11).
    reference : ndarray, optional
        Rows (2) kept (see Notes of the module).

    Returns
    -------
    DeaModelArrays
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    dmus = np.asarray(dmus, dtype=np.int64)
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
    return DeaModelArrays(
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
        layout=DeaLayout(
            dmus=dmus,
            alpha=alpha,
            beta=beta,
            z=z,
            z_in=z_in,
            eff=eff,
            lam=lam,
            delta=delta,
        ),
    )
