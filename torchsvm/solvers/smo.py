"""Batched SMO for SVM duals sharing one precomputed kernel (SPEC S1, S8; issue 14).

Every problem ``p`` of a batch solves the weighted SVM dual (libsvm convention)::

    min_a  1/2 a^T Q a - 1^T a    s.t.   y^T a = 0,   0 <= a_i <= u_pi,

with ``Q = diag(y) K diag(y)`` shared and only the bounds ``u_p`` (``C`` times the sample
weights) differing. Zero-weight rows (``u_pi = 0``, out of bag) are fixed at 0 and never
enter a working set.

The method is sequential minimal optimisation with libsvm's second-order working-set
selection (Fan, Chen & Lin, "Working set selection using second order information for
training SVM", JMLR 6, 2005, WSS 2), run on every problem of the batch at once: each
iteration picks one pair ``(i_p, j_p)`` per problem, gathers the two rows ``Q[i_p]``,
``Q[j_p]`` (restricted to the problem's working columns) and updates every gradient by
two rank-one terms. There is no Python loop over problems and no host synchronisation
inside the iteration loop except the convergence check every ``check_every``
iterations. What makes it cheaper than a loop of libsvm fits:

- ``Q`` is computed once for the batch (libsvm recomputes kernel columns per fit);
- shrinking (libsvm's rule, Joachims 1998): a coordinate at a bound whose gradient says it
  stays there leaves the working columns; each problem's working columns are kept as a
  padded compact index ``(P, m)``, so an iteration costs ``O(P m)`` with ``m`` far below
  ``n``; the gradients of the shrunk columns are rebuilt exactly, from the change of
  ``a`` since the last rebuild, by one ``(P, c) @ (c, n)`` GEMM over the ``c`` columns
  that changed, before the stopping test is applied to all columns;
- warm starts along the ``C`` path (:func:`smo_path`): the solution of the same bootstrap
  replicate at the previous (smaller) ``C``, unscaled, lies in the new box, so it is
  feasible and keeps its exact gradient (no product with ``Q``); see
  :func:`_stage_starts`.

SMO stops at a maximal KKT violation ``eps`` (libsvm's ``m(a) - M(a) < eps``);
:func:`smo_path` then certifies every problem by its relative duality gap
(:func:`torchsvm.solvers.kkt.duality_gap`, the certificate of every other method here)
from an exactly recomputed ``Q a``; a problem above ``tol`` is resumed with a ten times
smaller ``eps`` (a few rounds), and what is still uncertified is reported as such, for
:class:`~torchsvm.solvers.box_qp.BoxQpSolver` to hand to another method.

``BoxQpSolver(smo=True)`` runs SMO to a loose violation (``_EPS``) without resumptions
and hands the rows to the dense active set (:mod:`torchsvm.solvers.pdas`), whose exact
face solves start from SMO's point. On a 2-core CPU this pre-pass
halved the time of bootstrap folds of 300-1000 rows (11 C x 500 replicates) and tied
with the active set alone on S8 RBF (n = 5000); SMO resumed alone to the ``1e-7`` gap
was 2.5x slower than the active set there (docs/benchmarks.md, "S8 RBF ... batched
SMO"; ``_EPS`` later moved from ``1e-1`` to ``1e-2``, "S8 RBF ... SMO review, pre-pass
``eps``").
The automatic choice (:func:`use_smo`) follows those measurements. SMO is the method
meant for GPUs, where it was not measured.
"""

from __future__ import annotations

import logging
import math

import torch

from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.kkt import duality_gap, project_face
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

# libsvm's TAU: curvature floor for non-positive-definite pairs
_TAU = 1e-12
# ``BoxQpSolver`` uses SMO (as a pre-pass of the dense active set) for nonlinear kernels
# with _AUTO_MIN_N <= n <= _AUTO_MAX_N. Measured on bootstrap folds, 11 C x 500
# replicates, load ~10 (docs/benchmarks.md "S8 RBF ... batched SMO"): ionosphere n = 315
# 31.6 s vs 67.2 s active set alone, breast-cancer n = 512 26.4-35.5 s vs 60.3-61.6 s,
# biodeg n = 949 170 s vs > 400 s; S8 n = 5000 (220 problems) a tie; sonar n = 187
# (1100 problems) slower (5.0 s vs 3.9 s). Up to 4500 since the active set alone
# cycles on the RBF bootstrap folds of the probabilities run with n > 2000
# (scripts/bench_rbf_fold.py, 11 C x 20 replicates, CPU s with / without the pre-pass):
# churn (2579 distinct rows) 7.8 vs 24.5, spambase (n = 4140) 22.8 vs 80.0,
# pageblocks (n = 4500, the protocol's largest fold) 16.1 vs 73.5. Not at S8's
# n = 5000, where the active set alone converges: 22.0 vs 32.1 (docs/benchmarks.md,
# "RBF bootstrap batches on the probabilities run's next datasets")
_AUTO_MIN_N = 256
_AUTO_MAX_N = 4500
# ... and only for batches of at least this many problems: its cost is per-iteration
# overhead that a large batch shares (all the measured folds had 5500 problems)
_AUTO_MIN_P = 100
# BoxQpSolver(smo=True): SMO to a loose maximal KKT violation, no resumption, then the
# dense active set's exact face solves from SMO's point (S8 RBF, load ~10, libsvm loop in
# the same run: SMO resumed to the 1e-7 gap alone 312 s, 0.5x; eps 1e-3 + active set
# 124 s, 1.1x; eps 1e-1 + active set 127 s, 1.3x; active set alone 135 s, 1.2x).
# After the fix of rows without a violating pair, on the bootstrap folds
# where the rule uses SMO (scripts/bench_smo_fold.py, load 10-13, docs/benchmarks.md
# "S8 RBF ... SMO review, pre-pass eps"): eps 1e-2 was the best of 1e-1 / 1e-2 / 1e-3 on ionosphere
# (n = 315) and wisconsin (n = 512)
_EPS = 1e-2
_REFINE = 0


def _compact(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the True entries of each row first: ``(R, m)`` indices and validity.

    The padding positions are the row's other columns (a permutation, so no duplicates),
    flagged invalid; ``m`` is the largest count of the batch (one host sync).
    """
    cnt = mask.sum(1)
    m = max(1, int(cnt.max()))
    order = torch.sort(mask.to(torch.int8), dim=1, descending=True, stable=True).indices
    idx = order[:, :m]
    valid = torch.arange(m, device=mask.device)[None, :] < cnt[:, None]
    return idx, valid


def kkt_violation(
    A: torch.Tensor, G: torch.Tensor, y: torch.Tensor, U: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """libsvm's maximal violation ``m(a) - M(a)`` per problem, with ``m`` and ``M``.

    ``m = max_{t in I_up} -y_t g_t``, ``M = min_{t in I_low} -y_t g_t``; ``a`` is optimal
    iff ``m <= M``. ``G`` is the gradient ``Q a - 1``; tensors of shape (P, n).
    """
    vy = -y * G
    pos = y > 0
    lo_ok, hi_ok = A > 0, A < U
    up = torch.where(pos, hi_ok, lo_ok)
    low = torch.where(pos, lo_ok, hi_ok)
    inf = torch.full((), math.inf, dtype=G.dtype, device=G.device)
    gmax = torch.where(up, vy, -inf).amax(1)
    gmin = torch.where(low, vy, inf).amin(1)
    return gmax - gmin, gmax, gmin


def _working_mask(
    A: torch.Tensor, G: torch.Tensor, y: torch.Tensor, U: torch.Tensor, shrink: bool
) -> torch.Tensor:
    """Columns each problem keeps: ``u > 0`` and, with ``shrink``, not shrinkable.

    libsvm's rule: a coordinate that can only move in the ``I_up`` direction (at a bound)
    is dropped when ``-y_t g_t < M``, one that can only move in the ``I_low`` direction
    when ``-y_t g_t > m``; free coordinates always stay.
    """
    keep = U > 0
    if not shrink:
        return keep
    _, gmax, gmin = kkt_violation(A, G, y, U)
    vy = -y * G
    pos = y > 0
    lo_ok, hi_ok = A > 0, A < U
    up = torch.where(pos, hi_ok, lo_ok)
    low = torch.where(pos, lo_ok, hi_ok)
    only_up = up & ~low
    only_low = low & ~up
    drop = (only_up & (vy < gmin[:, None])) | (only_low & (vy > gmax[:, None]))
    return keep & ~drop


def _smo_compact(
    K: torch.Tensor,
    kd: torch.Tensor,
    y: torch.Tensor,
    A: torch.Tensor,
    G: torch.Tensor,
    U: torch.Tensor,
    rows: torch.Tensor,
    eps: torch.Tensor,
    budget: torch.Tensor,
    n_iter: torch.Tensor,
    check_every: int,
    shrink: bool,
) -> None:
    """SMO/WSS2 on the working columns of ``rows`` until each is ``eps``-optimal there.

    Updates ``A`` (every coordinate is written through as it moves) and ``n_iter`` in
    place; ``G`` is read for the start only (the caller rebuilds it afterwards).
    ``budget`` (per row of ``rows``) caps the iterations.

    # NOTE: the loop works with ``v = -y * g`` and the kernel ``K`` itself: moving
    # ``a_i`` by ``+y_i t`` and ``a_j`` by ``-y_j t`` changes ``v`` by
    # ``t (K[j] - K[i])`` and the curvature of the pair is ``K_ii + K_jj - 2 K_ij``, so
    # no label products appear in the per-iteration passes.
    """
    dt, dev = A.dtype, A.device
    inf = math.inf
    Ar, Gr, Ur = A[rows], G[rows], U[rows]
    idx, valid = _compact(_working_mask(Ar, Gr, y, Ur, shrink))
    # per-column fields (a, u, y) stacked so that one gather reads a pair's values
    au = torch.stack([Ar.gather(1, idx), Ur.gather(1, idx), y[idx]], 1)
    kdc = kd[idx]
    # v = -y g on I_up (else -inf) and on I_low (else +inf): the WSS 2 scans need no
    # masks, and the update ``v += t (K[j] - K[i])`` keeps the infinities
    vu, vl = _split(-(au[:, 2] * Gr.gather(1, idx)), au, valid)
    left = budget.clone()
    going = torch.ones(rows.shape[0], dtype=torch.bool, device=dev)
    # built once: a tensor from a Python list is a host-to-device copy (a sync on CUDA)
    pm = torch.tensor([1.0, -1.0], dtype=dt, device=dev)
    k = 0
    while rows.numel():
        gmax, i = vu.max(1, keepdim=True)
        gi = idx.gather(1, i)[:, 0]
        # NOTE: index_select + gather was faster on CPU than K[gi[:, None], idx] or
        # take() at R = 20-220, m = 500-3000, n = 5000, despite the (R, n)
        # copy
        Ki = K.index_select(0, gi).gather(1, idx)
        # second-order choice of j: maximise (gmax - v_t)^2 / curvature over I_low
        quad = torch.add(kdc, Ki, alpha=-2.0).add_(kd[gi][:, None]).clamp_min_(_TAU)
        d = torch.sub(gmax, vl).clamp_min_(0.0)
        # libsvm's stop, per row and iteration: m(a) - M(a) < eps on the working
        # columns (a stopped row is left alone until the next check drops it)
        going &= d.amax(1) >= eps
        best, j = d.square_().div_(quad).max(1, keepdim=True)
        gj = idx.gather(1, j)[:, 0]
        Kj = K.index_select(0, gj).gather(1, idx)
        ij = torch.cat([i, j], 1)
        f = au.gather(2, ij[:, None, :].expand(-1, 3, -1))  # (R, 3, 2): a, u, y
        a_ij, u_ij, y_ij = f.unbind(1)
        # room along the direction: a_i moves by +y_i t, a_j by -y_j t
        sgn = y_ij * pm
        lim = torch.where(sgn > 0, u_ij - a_ij, a_ij)
        t = (gmax - vl.gather(1, j)) / quad.gather(1, j)
        moving = going & (left > 0) & (best[:, 0] > 0)
        mv = moving[:, None]
        # NOTE: a row with no violating pair (converged between two checks, budget
        # spent, or I_up / I_low empty) has an arbitrary j and an infinite or NaN t:
        # it must not move, and its v must not be rewritten below (else a -inf/+inf
        # lands in the other set, and the next step is bogus or NaN)
        t = torch.where(mv, torch.minimum(t, lim.amin(1, keepdim=True)), 0.0)
        t = t.clamp_min_(0.0)
        # land exactly on the bound that limits the step
        hit = (t >= lim) & moving[:, None]
        new = torch.where(hit, torch.where(sgn > 0, u_ij, 0.0), a_ij + sgn * t)
        au[:, 0].scatter_(1, ij, new)
        A[rows[:, None], idx.gather(1, ij)] = new
        dK = Kj.sub_(Ki)
        vu.addcmul_(t, dK)
        vl.addcmul_(t, dK)
        # i is in I_up and j in I_low before a step: their v are finite there
        vv = torch.cat([vu.gather(1, i), vl.gather(1, j)], 1)
        lo_ok, hi_ok = new > 0, new < u_ij
        pos = y_ij > 0
        vu_ij = torch.where(torch.where(pos, hi_ok, lo_ok), vv, -inf)
        vl_ij = torch.where(torch.where(pos, lo_ok, hi_ok), vv, inf)
        vu.scatter_(1, ij, torch.where(mv, vu_ij, vu.gather(1, ij)))
        vl.scatter_(1, ij, torch.where(mv, vl_ij, vl.gather(1, ij)))
        mi = moving.to(n_iter.dtype)
        n_iter.index_add_(0, rows, mi)
        left -= mi
        k += 1
        if k % check_every:
            continue
        going &= left > 0
        if not bool(going.all()):
            rows, idx, valid, au, vu, vl, kdc, left, eps = (
                x[going] for x in (rows, idx, valid, au, vu, vl, kdc, left, eps)
            )
            going = going[going]
            if rows.numel() == 0:
                break
        if shrink and k % (8 * check_every) == 0:
            gmax_ = vu.amax(1, keepdim=True)
            gmin_ = vl.amin(1, keepdim=True)
            up, low = torch.isfinite(vu), torch.isfinite(vl)
            drop = ((up & ~low) & (vu < gmin_)) | ((low & ~up) & (vl > gmax_))
            keep = valid & ~drop
            if int(keep.sum(1).max()) <= 0.8 * idx.shape[1]:
                p_, valid = _compact(keep)
                idx, vu, vl, kdc = (x.gather(1, p_) for x in (idx, vu, vl, kdc))
                au = au.gather(2, p_[:, None, :].expand(-1, 3, -1))


def _split(
    v: torch.Tensor, au: torch.Tensor, valid: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``v`` on ``I_up`` (else ``-inf``) and on ``I_low`` (else ``+inf``).

    ``au`` of shape (R, 3, m) stacks ``a``, ``u`` and ``y`` of the working columns.
    """
    a, u, yc = au.unbind(1)
    pos = yc > 0
    lo_ok, hi_ok = a > 0, a < u
    up = valid & torch.where(pos, hi_ok, lo_ok)
    low = valid & torch.where(pos, lo_ok, hi_ok)
    return torch.where(up, v, -math.inf), torch.where(low, v, math.inf)


def _rebuild_gradient(
    K: torch.Tensor,
    y: torch.Tensor,
    A: torch.Tensor,
    A_ref: torch.Tensor,
    G_ref: torch.Tensor,
    rows: torch.Tensor,
) -> None:
    """``G_ref[rows] += (A - A_ref)[rows] @ Q`` over the changed columns; ``A_ref`` := ``A``.

    One ``(R, c) @ (c, n)`` GEMM over the ``c`` columns that changed in any row.
    """
    D = A[rows] - A_ref[rows]
    cols = (D != 0).any(0).nonzero()[:, 0]
    if cols.numel():
        G_ref[rows] += ((D[:, cols] * y[cols]) @ K[cols]) * y
    A_ref[rows] = A[rows]


def gradient(K: torch.Tensor, y: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """``A @ Q - 1`` with ``Q = diag(y) K diag(y)``, over the nonzero columns of ``A``."""
    cols = (A != 0).any(0).nonzero()[:, 0]
    if cols.numel() == 0:
        return torch.full_like(A, -1.0)
    return ((A[:, cols] * y[cols]) @ K[cols]) * y - 1.0


def smo_solve(
    K: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    A: torch.Tensor | None = None,
    G: torch.Tensor | None = None,
    *,
    eps: float | torch.Tensor = 1e-3,
    max_iter: int | torch.Tensor = 100_000,
    check_every: int = 32,
    shrink: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batched SMO (WSS 2) on a shared dense kernel to a maximal KKT violation ``eps``.

    Parameters
    ----------
    K : tensor of shape (n, n)
        The kernel matrix (``Q = diag(y) K diag(y)``), symmetric positive semidefinite.
    y : tensor of shape (n,)
        Labels in {-1, +1}.
    U : tensor of shape (P, n)
        Finite upper bounds (``0`` fixes a coordinate at 0).
    A : tensor of shape (P, n), optional
        Feasible start (``0 <= a <= u``, ``y^T a = 0``); default 0.
    G : tensor of shape (P, n), optional
        ``A @ Q - 1`` for the start (computed when omitted).
    eps : float or tensor of shape (P,)
        Stop when ``m(a) - M(a) < eps`` over all columns (libsvm's ``tol``).
    max_iter : int or tensor of shape (P,)
        Iterations per problem.
    check_every : int
        Iterations between the host synchronisations that drop finished problems.
    shrink : bool
        libsvm's shrinking (see the module docstring).

    Returns
    -------
    A, G : tensors of shape (P, n)
        The last iterate and its gradient ``A @ Q - 1`` (rebuilt exactly from the
        changes, up to rounding).
    n_iter : tensor of shape (P,)
    violation : tensor of shape (P,)
        ``m(a) - M(a)`` at the last iterate.
    """
    P, n = U.shape
    dt, dev = U.dtype, U.device
    if not bool(torch.isfinite(U).all()):
        raise ValueError("smo_solve needs finite upper bounds U (no S1b problems)")
    A = torch.zeros((P, n), dtype=dt, device=dev) if A is None else A.clone()
    G = gradient(K, y, A) if G is None else G.clone()
    kd = torch.diagonal(K).contiguous()
    n_iter = torch.zeros(P, dtype=torch.long, device=dev)
    A_ref = A.clone()
    eps_t = torch.as_tensor(eps, dtype=dt, device=dev).expand(P)
    cap = torch.as_tensor(max_iter, dtype=torch.long, device=dev).expand(P)
    pending = torch.arange(P, device=dev)
    viol, _, _ = kkt_violation(A, G, y, U)
    for _ in range(20):
        pending = pending[
            (viol[pending] >= eps_t[pending]) & (n_iter[pending] < cap[pending])
        ]
        if pending.numel() == 0:
            break
        _smo_compact(
            K,
            kd,
            y,
            A,
            G,
            U,
            pending,
            eps_t[pending],
            cap[pending] - n_iter[pending],
            n_iter,
            check_every,
            shrink,
        )
        _rebuild_gradient(K, y, A, A_ref, G, pending)
        viol[pending] = kkt_violation(A[pending], G[pending], y, U[pending])[0]
    return A, G, n_iter, viol


def _stage_starts(
    A: torch.Tensor,
    G: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    src: torch.Tensor,
    rows: torch.Tensor,
    K: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Warm starts of ``rows`` from the solutions of ``src`` (one source per row).

    The source's ``a`` is kept as it is when it lies in the row's box (the same bootstrap
    replicate at a larger ``C``): it is then feasible and its gradient is the source's.
    Otherwise it is clipped, made feasible along the free coordinates
    (:func:`~torchsvm.solvers.kkt.project_face`) and its gradient recomputed.

    # NOTE: scaling the source by the ratio of the ``C`` (what the linear C path does)
    # was measured worse here: S8 RBF, C 0.5 -> 1, 20 replicates, eps 1e-3: 2888 SMO
    # iterations scaled, 2051 unscaled, 2430 from 0.
    """
    A0, G0, Ur = A[src], G[src], U[rows]
    inside = (A0 <= Ur).all(1)
    if bool(inside.all()):
        return A0, G0
    out = ~inside
    Af = project_face(torch.minimum(A0[out], Ur[out]), y, Ur[out])
    A0[out] = Af
    G0[out] = gradient(K, y, Af)
    return A0, G0


def smo_path(
    K: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    stage: torch.Tensor | None = None,
    *,
    tol: float = 1e-7,
    eps: float = 1e-3,
    max_iter: int = 100_000,
    check_every: int = 32,
    shrink: bool = True,
    refine: int = 3,
    start: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """Solve and certify a batch by SMO, stage by stage along the ``C`` path.

    Parameters
    ----------
    K : tensor of shape (n, n)
        The shared kernel matrix.
    y : tensor of shape (n,)
    U : tensor of shape (P, n)
        Finite upper bounds.
    stage : tensor of shape (P,), optional
        Stage of each problem (increasing ``C``); stage ``r > 0`` starts from the most
        similar problem of stage ``r - 1`` (cosine of the bound vectors: the same
        bootstrap replicate). None solves every problem from 0 at once.
    tol : float
        Relative duality gap that certifies a problem
        (:func:`~torchsvm.solvers.kkt.duality_gap`).
    eps : float
        First SMO stopping threshold (maximal KKT violation). A problem whose gap is
        above ``tol`` is resumed with ``eps`` scaled by ``tol / gap`` (the gap falls
        about linearly with the violation), at most ``refine`` times.
    max_iter, check_every, shrink
        See :func:`smo_solve`.
    refine : int
        Resumptions with a smaller ``eps`` for problems above ``tol``.
    start : tensor of shape (P, n), optional
        Feasible starts for every problem (then ``stage`` is ignored).

    Returns
    -------
    A, b, certified, n_iter, primal, dual, gap : tensors of leading size P
        ``certified`` (bool) says whether the relative gap is at most ``tol``.
    """
    P, n = U.shape
    dt, dev = U.dtype, U.device
    A = torch.zeros((P, n), dtype=dt, device=dev)
    G = torch.full((P, n), -1.0, dtype=dt, device=dev)
    n_iter = torch.zeros(P, dtype=torch.long, device=dev)
    primal, dual, gap, b = (torch.zeros(P, dtype=dt, device=dev) for _ in range(4))
    if stage is None or start is not None:
        stage = torch.zeros(P, dtype=torch.long, device=dev)
    pattern = U / U.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dt).tiny)
    prev: torch.Tensor | None = None
    for st in torch.unique(stage).tolist():
        rows = (stage == st).nonzero()[:, 0]
        Ur = U[rows]
        if start is not None:
            A0, G0 = start[rows].clone(), gradient(K, y, start[rows])
        elif prev is None:
            A0 = G0 = None
        else:
            src = prev[(pattern[rows] @ pattern[prev].T).argmax(1)]
            A0, G0 = _stage_starts(A, G, y, U, src, rows, K)
        e = torch.full((rows.numel(),), eps, dtype=dt, device=dev)
        it_r = torch.zeros(rows.numel(), dtype=torch.long, device=dev)
        todo = torch.arange(rows.numel(), device=dev)
        Ar = torch.zeros((rows.numel(), n), dtype=dt, device=dev) if A0 is None else A0
        Gr = torch.full_like(Ar, -1.0) if G0 is None else G0
        for _ in range(refine + 1):
            a, g, it, _ = smo_solve(
                K,
                y,
                Ur[todo],
                Ar[todo],
                Gr[todo],
                eps=e[todo],
                max_iter=max_iter - it_r[todo],  # one budget for all resumptions
                check_every=check_every,
                shrink=shrink,
            )
            Ar[todo], it_r[todo] = a, it_r[todo] + it
            # certificate from an exact product (the SMO gradient carries rounding)
            g = gradient(K, y, a)
            Gr[todo] = g
            p_, d_, rel, b_ = duality_gap(a, g + 1.0, y, Ur[todo], None)
            r = rows[todo]
            primal[r], dual[r], gap[r], b[r] = p_, d_, rel, b_
            bad = rel > tol
            if not bool(bad.any()) or bool((it_r[todo] >= max_iter).all()):
                break
            # the gap falls about linearly with the violation: aim a factor 4 below tol
            e[todo] = torch.where(
                bad, e[todo] * (0.25 * tol / rel.clamp_min(tol)), e[todo]
            )
            todo = todo[bad & (it_r[todo] < max_iter)]
            if todo.numel() == 0:
                break
        A[rows], G[rows], n_iter[rows] = Ar, Gr, it_r
        prev = rows
    return A, b, gap <= tol, n_iter, primal, dual, gap


def use_smo(problem: BatchedSvmProblem, choice: bool | None) -> bool:
    """Whether :class:`~torchsvm.solvers.box_qp.BoxQpSolver` solves a dense batch by SMO.

    ``choice`` True/False forces it (SMO still needs finite bounds and no diagonal
    shift); None applies the measured rule: nonlinear kernels with
    ``_AUTO_MIN_N <= n <= _AUTO_MAX_N`` in batches of at least ``_AUTO_MIN_P`` problems
    (see the constants' comments).
    """
    ok = problem.S is None and bool(torch.isfinite(problem.U).all())
    if choice is not None:
        return bool(choice) and ok
    n = problem.n_samples
    return (
        ok
        and problem.kernel != "linear"
        and _AUTO_MIN_N <= n <= _AUTO_MAX_N
        and problem.n_problems >= _AUTO_MIN_P
    )


def smo_problem(
    problem: BatchedSvmProblem,
    config: SolverConfig,
    stage: torch.Tensor | None,
    init: torch.Tensor | None = None,
    Q: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """Solve a :class:`~torchsvm.problems.svm.BatchedSvmProblem` by :func:`smo_path`.

    Returns the solver outputs of :class:`~torchsvm.solvers.box_qp.BoxQpSolver`:
    ``alpha, b, status, n_iter, primal, dual, gap, rho`` (status ``optimal`` where the
    relative duality gap is at most ``config.tol``, else ``max_iter``).

    ``init`` (shape (P, n)) is projected onto each problem's feasible set and replaces
    the ``C`` path's starts; ``Q`` (``diag(y) K diag(y)``), when the caller has it,
    saves computing the kernel.
    """
    y = problem.y
    if Q is not None:
        K = Q * y[:, None] * y[None, :]
    else:
        K = compute_kernel(
            problem.X,
            kernel=problem.kernel,
            gamma=problem.gamma,
            degree=problem.degree,
            coef0=problem.coef0,
        )
    U = problem.U
    if init is not None:
        A0 = project_face(init.to(U.device, U.dtype), y, U)
        out = smo_path(
            K, y, U, None, tol=config.tol, start=A0, refine=_REFINE, eps=_EPS
        )
    else:
        out = smo_path(K, y, U, stage, tol=config.tol, refine=_REFINE, eps=_EPS)
    A, b, ok, n_iter, primal, dual, gap = out
    status = torch.where(ok, SolveStatus.optimal.code, SolveStatus.max_iter.code).to(
        torch.long
    )
    logger.info(
        "smo: %d of %d problems certified (tol %g), %.0f iterations on average",
        int(ok.sum()),
        ok.numel(),
        config.tol,
        float(n_iter.double().mean()) if n_iter.numel() else 0.0,
    )
    return A, b, status, n_iter, primal, dual, gap, torch.zeros_like(b)
