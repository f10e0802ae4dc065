"""Compiled per-row kernel of the feasible active set on the CPU (numba; SPEC S1, S8).

The same method as :func:`torchsvm.solvers.active_set.active_set_low_rank` (face
solves from the residual, ratio test, freeing the most violated bound coordinates at
a face minimiser, the maximal violating pair after a step blocked at once, the
thresholds in units of rounding of ``Q a``, the gap test at the face's intercept and
then at the optimal one), run row by row in one compiled loop instead of as batched
torch operations on the rows of every iteration. On the CPU the batched version's cost
is not its flops but its many small operations on ragged batches (measured on the main
job's fold: 26 us per row-iteration, the GEMMs at ~1 % of the matmul peak;
docs/benchmarks.md, "Main job's fold: where the time goes"). Here a row-iteration is
its face's Gram matrix and bordered LU (``O(|F|^2 k + |F|^3)``), the ratio test, and at
a face minimiser two ``(n, k)`` products and a pass over the ``n`` coordinates.

Every quantity inside the kernel is float64 (``a`` is rounded to the batch's dtype on
return); the violation thresholds use the batch's own rounding unit, as the torch path
does. Along the ``C`` path a row starts from its parent's point after the parent's
generation has finished: rows are independent, so this gives each row the start the
pipelined torch call gives it.

numba is optional (``pip install torchsvm[fast]``); without it this module imports,
:func:`available` is False and the torch path is used. The first call compiles the
kernel (seconds), cached on disk by numba for later processes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

try:  # the only numba import of the package
    from numba import njit

    _HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    _HAVE_NUMBA = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]  # noqa: ANN002, ANN003, ANN201
        def deco(fn):  # noqa: ANN001, ANN202
            return fn

        return deco


# reassociation (SIMD sums) but IEEE infinities and NaNs: the finiteness checks stay
_FM = {"reassoc", "contract", "nsz", "arcp"}


def available() -> bool:
    """Whether numba is importable (the kernel can run)."""
    return _HAVE_NUMBA


@njit(cache=True, nogil=True)
def _optimal_intercept(QA, y, u, eps, tiny):  # noqa: ANN001, ANN202
    """:func:`~torchsvm.solvers.kkt.optimal_intercept` of one row (hinge loss)."""
    n = QA.shape[0]
    T = np.empty(n)
    for i in range(n):
        T[i] = y[i] - QA[i] * y[i]
    order = np.argsort(T, kind="mergesort")
    w_pos = 0.0
    for i in range(n):
        if y[i] > 0:
            w_pos += u[i]
    cum = np.empty(n)
    s = 0.0
    for j in range(n):
        s += u[order[j]]
        cum[j] = s
    slack = max(1e-12, 64.0 * eps) * max(cum[n - 1], tiny)
    k_lo = 0
    k_hi = 0
    for j in range(n):
        if cum[j] < w_pos - slack:
            k_lo += 1
        if cum[j] <= w_pos + slack:
            k_hi += 1
    k_lo = min(k_lo, n - 1)
    k_hi = min(k_hi, n - 1)
    return 0.5 * (T[order[k_lo]] + T[order[k_hi]])


@njit(cache=True, nogil=True)
def _rel_gap(a, QA, y, u, b):  # noqa: ANN001, ANN202
    """Relative duality gap of one feasible row at the intercept ``b``
    (:func:`~torchsvm.solvers.kkt.duality_gap` with the hinge loss)."""
    quad = 0.0
    suma = 0.0
    loss = 0.0
    for i in range(a.shape[0]):
        quad += a[i] * QA[i]
        suma += a[i]
        xi = 1.0 - y[i] * (QA[i] * y[i] + b)
        if xi > 0.0 and u[i] > 0.0:
            loss += u[i] * xi
    primal = 0.5 * quad + loss
    dual = suma - 0.5 * quad
    return max(primal - dual, 0.0) / max(abs(primal), 1.0)


@njit(cache=True, nogil=True)
def _gradient(W, a, QA, w):  # noqa: ANN001, ANN202
    """``w = W^T a`` and ``QA = W w`` (BLAS matrix-vector products)."""
    w[:] = np.dot(a, W)
    QA[:] = np.dot(W, w)


@njit(cache=True, nogil=True, fastmath=_FM)
def _face_solve(k, y, F, nf, G, rhs, c, M, x, eps):  # noqa: ANN001, ANN202
    """Bordered face solve of :func:`~torchsvm.solvers.active_set._face_solve` for
    one row: ``[[Q_FF, y_F], [y_F^T, 0]] [d; b] = [rhs; c]`` by LU with partial
    pivoting, ``Q_FF`` given by its lower triangle ``G``; faces wider than ``k + 1``
    or singular systems take ``Q_FF`` plus a relative jitter (Cholesky, the intercept
    from the border). ``d`` in ``x[:nf]``; returns ``(b, ok, exact)``."""
    if nf == 0:
        return 0.0, True, True
    m = nf + 1
    if nf <= k + 1:
        for i in range(nf):
            for j in range(i + 1):
                M[i, j] = G[i, j]
                M[j, i] = G[i, j]
            M[i, nf] = y[F[i]]
            M[nf, i] = y[F[i]]
            x[i] = rhs[i]
        M[nf, nf] = 0.0
        x[nf] = c
        good = True
        for p in range(m):
            piv = p
            best = abs(M[p, p])
            for i in range(p + 1, m):
                if abs(M[i, p]) > best:
                    best = abs(M[i, p])
                    piv = i
            if best == 0.0 or not math.isfinite(best):
                good = False
                break
            if piv != p:
                for j in range(m):
                    tmp = M[p, j]
                    M[p, j] = M[piv, j]
                    M[piv, j] = tmp
                tmp = x[p]
                x[p] = x[piv]
                x[piv] = tmp
            inv = 1.0 / M[p, p]
            for i in range(p + 1, m):
                fct = M[i, p] * inv
                if fct != 0.0:
                    for j in range(p + 1, m):
                        M[i, j] -= fct * M[p, j]
                    x[i] -= fct * x[p]
        if good:
            for i in range(m - 1, -1, -1):
                s = x[i]
                for j in range(i + 1, m):
                    s -= M[i, j] * x[j]
                x[i] = s / M[i, i]
            for i in range(m):
                if not math.isfinite(x[i]):
                    good = False
            if good:
                return x[nf], True, True
    # jittered Q_FF: a descent direction of the face problem (the ratio test cuts it)
    dmax = 0.0
    for i in range(nf):
        dmax = max(dmax, abs(G[i, i]))
    jit = max(1e-12, 100.0 * eps) * max(dmax, 1.0)
    for i in range(nf):
        for j in range(i + 1):
            M[i, j] = G[i, j]
        M[i, i] += jit
    chol = True
    for j in range(nf):
        s = M[j, j]
        for l_ in range(j):
            s -= M[j, l_] * M[j, l_]
        if not s > 0.0:
            chol = False
            break
        s = math.sqrt(s)
        M[j, j] = s
        for i in range(j + 1, nf):
            t = M[i, j]
            for l_ in range(j):
                t -= M[i, l_] * M[j, l_]
            M[i, j] = t / s
    if not chol:
        for i in range(nf):
            x[i] = 0.0
        return 0.0, False, False
    x1 = np.empty(nf)
    x2 = np.empty(nf)
    for i in range(nf):
        x1[i] = rhs[i]
        x2[i] = y[F[i]]
    for v in (x1, x2):
        for i in range(nf):
            s = v[i]
            for l_ in range(i):
                s -= M[i, l_] * v[l_]
            v[i] = s / M[i, i]
        for i in range(nf - 1, -1, -1):
            s = v[i]
            for l_ in range(i + 1, nf):
                s -= M[l_, i] * v[l_]
            v[i] = s / M[i, i]
    yx1 = 0.0
    yx2 = 0.0
    for i in range(nf):
        yx1 += x1[i] * y[F[i]]
        yx2 += x2[i] * y[F[i]]
    bb = (yx1 - c) / (yx2 if yx2 > 0.0 else 1.0)
    ok = yx2 > 0.0 and math.isfinite(bb)
    for i in range(nf):
        x[i] = x1[i] - bb * x2[i]
        if not math.isfinite(x[i]):
            ok = False
    return bb, ok, False


@njit(cache=True, nogil=True, fastmath=_FM)
def _gram_rows(W, F, G, lo, hi):  # noqa: ANN001, ANN202
    """Rows ``lo..hi-1`` of the lower triangle of the face's Gram matrix ``G``."""
    k = W.shape[1]
    for i in range(lo, hi):
        fi = F[i]
        for j in range(i + 1):
            fj = F[j]
            s = 0.0
            for l_ in range(k):
                s += W[fi, l_] * W[fj, l_]
            G[i, j] = s


@njit(cache=True, nogil=True)
def _solve_row(W, y, u, a, max_iter, cap, tol, use_tol, eps, tiny):  # noqa: ANN001, ANN202, C901
    """The feasible active set on one row from its feasible start ``a`` (updated in
    place); returns ``(b, iterations, converged)``."""
    n, k = W.shape
    F = np.empty(n, np.int64)
    r = np.empty(n)
    nf = 0
    for i in range(n):
        if u[i] > 0.0 and a[i] > 0.0 and a[i] < u[i]:
            F[nf] = i
            nf += 1
    w = np.empty(k)
    QA = np.empty(n)
    score = np.empty(n)
    inface = np.zeros(n, np.bool_)
    _gradient(W, a, QA, w)
    for i in range(nf):
        r[i] = 1.0 - QA[F[i]]
    sz = max(nf, cap) + 4
    G = np.empty((sz, sz))  # lower triangle of Q_FF, in the face's slot order
    M = np.empty((sz, sz))
    x = np.empty(sz)
    kept = np.empty(n, np.int64)
    _gram_rows(W, F, G, 0, nf)
    top_v = np.empty(n)
    top_i = np.empty(n, np.int64)
    b = 0.0
    single = False
    tgs = 1e3
    c_corr = 0.0
    n_it = 0
    while True:
        bS, ok, exact = _face_solve(k, y, F, nf, G, r, c_corr, M, x, eps)
        # ratio test along d on the face
        t = np.inf
        for i in range(nf):
            di = x[i]
            fi = F[i]
            if di < 0.0:
                t = min(t, a[fi] / -di)
            elif di > 0.0 and math.isfinite(u[fi]):
                t = min(t, (u[fi] - a[fi]) / di)
        t = min(max(t, 0.0), 1.0)
        full = t >= 1.0
        c_corr = c_corr * (1.0 - t)
        tb = t * (1.0 + 1e-9)
        nf_old = nf
        j = 0
        for i in range(nf):
            di = x[i]
            fi = F[i]
            ai = a[fi]
            an = ai + t * di
            blocked = False
            if not full:
                if di < 0.0 and ai / -di <= tb:
                    an = 0.0
                    blocked = True
                elif di > 0.0 and math.isfinite(u[fi]) and (u[fi] - ai) / di <= tb:
                    an = u[fi]
                    blocked = True
            a[fi] = an
            if not blocked:
                F[j] = fi
                kept[j] = i
                # on the face Q_FF d = r - b y_F (exact solves): r - t (r - b y_F)
                r[j] = r[i] - t * (r[i] - bS * y[fi])
                j += 1
        if j < nf:
            # drop the blocked slots' rows and columns of G (kept[jj] >= jj)
            for jj in range(j):
                ki = kept[jj]
                if ki != jj:
                    for ii in range(jj + 1):
                        G[jj, ii] = G[ki, kept[ii]]
        nf = j
        if not exact:
            # jittered solve: the residual afresh
            _gradient(W, a, QA, w)
            for i in range(nf):
                r[i] = 1.0 - QA[F[i]]
        if nf_old > 0:
            b = bS
        stop = not ok
        if full and ok:
            # a face minimiser: the gradient, the certificate, coordinates to free
            _gradient(W, a, QA, w)
            if nf_old == 0:
                b = _optimal_intercept(QA, y, u, eps, tiny)
            qmax = 0.0
            for i in range(n):
                qmax = max(qmax, abs(QA[i]))
            tg = tgs * eps * (1.0 + qmax)
            res_ok = True
            for i in range(nf):
                fi = F[i]
                g = QA[fi] + b * y[fi] - 1.0
                if abs(g) > tg:
                    res_ok = False
                r[i] = 1.0 - QA[fi]
                inface[fi] = True
            # score = sgn g - tg, sgn = sign(a - u / 2) (+1 at u, -1 at 0, 0 if u = 0)
            m = max(cap - nf, 2)
            n_top = 0
            vmax = -np.inf
            for i in range(n):
                if inface[i]:
                    score[i] = -np.inf
                    continue
                h = a[i] - 0.5 * u[i]
                sg = 1.0 if h > 0.0 else (-1.0 if h < 0.0 else 0.0)
                s = (QA[i] + b * y[i] - 1.0) * sg - tg
                score[i] = s
                if s > vmax:
                    vmax = s
                if s > 0.0:
                    # the m largest violations, in decreasing order
                    if n_top < m:
                        p = n_top
                        n_top += 1
                    elif s > top_v[m - 1]:
                        p = m - 1
                    else:
                        continue
                    while p > 0 and top_v[p - 1] < s:
                        top_v[p] = top_v[p - 1]
                        top_i[p] = top_i[p - 1]
                        p -= 1
                    top_v[p] = s
                    top_i[p] = i
            for i in range(nf):
                inface[F[i]] = False
            done = vmax <= 0.0 and res_ok
            ya = 0.0
            for i in range(n):
                ya += a[i] * y[i]
            # the drift of y^T a (rounding) is corrected by the next face solves
            c_corr = -ya
            if use_tol and done:
                rel = _rel_gap(a, QA, y, u, b)
                if rel > tol:
                    rel = _rel_gap(a, QA, y, u, _optimal_intercept(QA, y, u, eps, tiny))
                if rel > tol:
                    if tgs <= 1.0:
                        ok = False  # unconverged at the finest threshold: stop
                    else:
                        done = False
                    tgs = max(tgs / 30.0, 1.0)
            if use_tol and not done and n_it >= 2 * cap:
                # a long row: on degenerate one-hot faces rows cycle on ties whose
                # violations stay above tg with the point already certified by its
                # gap (mushroom's bootstrap batches: up to a third of the rows, each
                # to the iteration cap); the gap at this intercept, O(n) against the
                # gradient's O(n k), stops them
                done = _rel_gap(a, QA, y, u, b) <= tol
            stop = stop or done
            nf0 = nf
            if not done:
                if single:
                    # the maximal violating pair of SMO: the most violated coordinate
                    # of each sign of s = y * (descent direction)
                    bp, bn = -np.inf, -np.inf
                    ip, i_n = -1, -1
                    for i in range(n):
                        s = score[i]
                        h = a[i] - 0.5 * u[i]
                        sg = 1.0 if h > 0.0 else (-1.0 if h < 0.0 else 0.0)
                        if sg * y[i] < 0.0:
                            if s > bp:
                                bp, ip = s, i
                        elif s > bn:
                            bn, i_n = s, i
                    if bp > 0.0:
                        F[nf] = ip
                        r[nf] = 1.0 - QA[ip]
                        nf += 1
                    if bn > 0.0:
                        F[nf] = i_n
                        r[nf] = 1.0 - QA[i_n]
                        nf += 1
                else:
                    for p in range(n_top):
                        i = top_i[p]
                        F[nf] = i
                        r[nf] = 1.0 - QA[i]
                        nf += 1
            if nf + 2 > sz:
                sz = nf + 4
                G2 = np.empty((sz, sz))
                G2[:nf0, :nf0] = G[:nf0, :nf0]
                G = G2
                M = np.empty((sz, sz))
                x = np.empty(sz)
            _gram_rows(W, F, G, nf0, nf)
        n_it += 1
        if n_it >= max_iter and not stop:
            ok = False
            stop = True
        if stop:
            return b, n_it, ok
        if not full and t <= 0.0:
            # a step blocked at once after freeing several: one pair at a time
            single = True


@njit(cache=True, nogil=True)
def _solve_rows(W, y, U, A, rows, max_iter, cap, tol, use_tol, eps, tiny, ob, oit, ook):  # noqa: ANN001, ANN202
    for j in range(rows.shape[0]):
        p = rows[j]
        bb, it, ok = _solve_row(
            W, y, U[p], A[p], max_iter, cap, tol, use_tol, eps, tiny
        )
        ob[p] = bb
        oit[p] = it
        ook[p] = ok


def _clip_start(A0: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """The start clipped to the box, the coordinates at a bound exactly on it
    (:func:`~torchsvm.solvers.active_set._start_rows`)."""
    act, fin = U > 0, torch.isfinite(U)
    a = torch.where(act, torch.minimum(A0.clamp_min(0.0), torch.where(fin, U, A0)), 0.0)
    lo = act & (a <= 0)
    up = act & fin & (a >= U)
    return torch.where(up, U, torch.where(lo, 0.0, a))


def active_set_rows(
    W: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    A0: torch.Tensor,
    *,
    max_iter: int,
    face_cap: int,
    tol: float | None,
    parent: torch.Tensor | None = None,
    make_start=None,  # noqa: ANN001
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`~torchsvm.solvers.active_set.active_set_low_rank` by the compiled kernel
    (CPU tensors; same arguments and returns). With ``parent``, rows run by
    generations: a row's start is ``make_start`` of its parent's final point."""
    P, n = U.shape
    dt = U.dtype
    eps = float(torch.finfo(dt).eps)
    tiny = float(torch.finfo(dt).tiny)
    Wn = np.ascontiguousarray(W.detach().cpu().numpy(), dtype=np.float64)
    yn = np.ascontiguousarray(y.detach().cpu().numpy(), dtype=np.float64)
    Un = np.ascontiguousarray(
        torch.where(U > 0, U, 0.0).cpu().numpy(), dtype=np.float64
    )
    An = np.zeros((P, n), dtype=np.float64)
    ob = np.zeros(P, dtype=np.float64)
    oit = np.full(P, max_iter, dtype=np.int64)
    ook = np.zeros(P, dtype=np.bool_)
    use_tol = tol is not None
    tol_f = float(tol) if tol is not None else 0.0

    def run(rows: torch.Tensor, starts: torch.Tensor) -> None:
        rn = rows.cpu().numpy().astype(np.int64)
        An[rn] = _clip_start(starts, U[rows]).to(torch.float64).cpu().numpy()
        _solve_rows(
            Wn,
            yn,
            Un,
            An,
            rn,
            max_iter,
            face_cap,
            tol_f,
            use_tol,
            eps,
            tiny,
            ob,
            oit,
            ook,
        )

    if parent is None:
        run(torch.arange(P), A0)
    else:
        if make_start is None:
            raise ValueError("active_set_low_rank: parent needs make_start")
        parent = parent.cpu().to(torch.long)
        done = parent < 0
        rows = done.nonzero()[:, 0]
        run(rows, A0[rows])
        while not bool(done.all()):
            q = (~done & done[parent.clamp_min(0)]).nonzero()[:, 0]
            if q.numel() == 0:
                raise ValueError("active_set_low_rank: parent is not a forest")
            A_par = torch.from_numpy(An[parent[q].numpy()]).to(dt)
            run(q, make_start(q, A_par))
            done[q] = True
    A = torch.from_numpy(An).to(device=U.device, dtype=dt)
    return (
        A,
        torch.from_numpy(ob).to(device=U.device, dtype=dt),
        torch.from_numpy(oit).to(U.device),
        torch.from_numpy(ook).to(U.device),
    )


def warm_once(fn):  # noqa: ANN001, ANN201
    """Decorator for a module's warm-up (compile its kernels, or load them from numba's
    on-disk cache, on a tiny instance): run it once per process, and only where numba
    is installed (without it the kernels are plain Python and need no warm-up)."""
    done = False

    @functools.wraps(fn)
    def wrapper() -> None:
        nonlocal done
        if done or not available():
            return
        fn()
        done = True

    return wrapper


@warm_once
def warm() -> None:
    """Compile the kernel (or load it from numba's on-disk cache) once per process,
    on a two-row problem with the argument types :func:`active_set_rows` passes.

    The first call in a fresh installation compiles ``_solve_rows`` and everything it
    inlines: 15-50 s of CPU, against milliseconds once cached. Callers with a time
    limit (:func:`~torchsvm.mip.feature_selection.solve_feature_selection`,
    :func:`~torchsvm.mip.csvm.solve_csvm`) warm before their clock starts, so that a
    one-off compilation is not charged to the search: on a fresh checkout the 60 x 5
    selection benchmark spent 48 s of its 60 s limit compiling inside its start
    heuristics' batch of SVMs, and stopped with gap 0.67 where it proves the optimum in
    4 s once the cache is warm.
    """
    W = torch.eye(2, dtype=torch.float64)
    y = torch.tensor([1.0, -1.0], dtype=torch.float64)
    U = torch.ones(1, 2, dtype=torch.float64)
    active_set_rows(W, y, U, torch.zeros_like(U), max_iter=5, face_cap=2, tol=1e-7)
