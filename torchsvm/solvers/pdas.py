"""Batched primal-dual active-set method for SVM duals with a dense ``Q`` (SPEC S1, S1b).

For kernels whose ``Q`` has full rank (RBF, polynomial) an eigendecomposition of ``Q``
costs ``~9 n^3`` flops before the first iteration (59 s at ``n = 5000`` on two CPU
cores). The primal-dual active-set method (Hintermüller, Ito & Kunisch, 2002) needs
only ``Q`` itself. Each problem keeps a partition of its coordinates into ``L`` (at 0),
``U`` (at the upper bound) and the free face ``F``; one iteration

1. solves the equality-constrained QP on the face exactly::

       [Q_FF + diag(s_F)   y_F] [a_F]   [1 - Q_{F,U} u_U    ]
       [y_F^T              0  ] [ b ] = [-y_U^T u_U         ]

   by one Cholesky factor of ``Q_FF + diag(s_F)`` (faces of all problems batched, padded
   with identity rows, in chunks of similar width);
2. computes the gradient ``g = Q a - 1 + b y + s a`` for every problem (two GEMMs
   ``(P, n) @ (n, n)`` shared by the batch);
3. moves free coordinates that left the box onto the bound they crossed and frees bound
   coordinates whose gradient has the wrong sign.

It stops when no coordinate violates its condition: the point is then the exact
optimum (up to the Cholesky solve), which the duality gap certifies. Started from a
good partition (the solution at a neighbouring ``C``), it takes 3-6 iterations.

The last iterations of a run change only a few coordinates of the face. A row whose
face differs from its last factorised face ``F0`` in ``m`` coordinates (``m`` small)
reuses that factor: the new face system is the system on ``F0`` bordered by the added
coordinates and by equality constraints that pin the dropped ones, solved through an
``(m, m)`` Schur complement at ``O(m f^2)`` flops instead of ``f^3 / 3``. The columns
``L^{-1} b_j`` of the border and their Gram matrix are kept with the factor, so an
iteration solves only for the coordinates new to the border (issue 14).
The method can cycle: on nearly singular faces (near-duplicate rows of an RBF kernel,
UCI cervical's bootstrap folds) every problem did. Rows that have not converged within
``max_iter``, or whose violations stop falling (``stall``), are reported; the caller
finishes them by :func:`pdas_monotone`, a feasible active set whose objective never
increases (Newton steps on the face with an exact line search and a ratio test).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from torchsvm.kernels import batched_kernel
from torchsvm.solvers.kkt import optimal_intercept

# a row frees at most max(_CAP_MIN, _CAP_MULT * |F|) bound coordinates per iteration
_CAP_MULT, _CAP_MIN = 2, 256
# a face is refactorised when it differs from the factorised one in more coordinates
_UPDATE_MAX, _UPDATE_FRAC = 256, 0.125
# ... on a dense Q (RBF, polynomial): with the border columns L^{-1} b_j and their Gram
# cached per factor (_FactorStore), an update costs the new columns only, so wider
# changes pay (S8 RBF, docs/benchmarks.md: "cached border columns in the dense active set")
_UPDATE_MAX_DENSE, _UPDATE_FRAC_DENSE = 512, 0.25
# ... and on faces wider than 8 * 512 up to |F0| / 8 changes: an update of m columns
# costs ~m f^2 + m^2 f flops against f^3 / 3 for a factorisation (nursery's RBF inner
# CV, faces of ~9200, issue 18)
_UPDATE_DIV_WIDE = 8
# an update of at least this fraction of a store's rows runs on all of them: copying the
# factors of a subset (R f^2 numbers) costs more than the discarded rows' solves
_FULL_STORE_FRAC = 0.75

FaceFn = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def face_kernel(
    X: torch.Tensor,
    y: torch.Tensor,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
) -> FaceFn:
    """``face_fn`` for :func:`pdas_dense` that recomputes blocks of ``Q`` from ``X``.

    ``face_fn(i, j)`` is ``Q[i_r][:, j_r]`` for every row ``r`` (``j`` None: ``j = i``);
    index ``n`` (padding) maps to a zero label, hence zero rows and columns.
    """
    X_ext = torch.nn.functional.pad(X, (0, 0, 0, 1))
    y_ext = torch.nn.functional.pad(y, (0, 1))

    def face_fn(i: torch.Tensor, j: torch.Tensor | None = None) -> torch.Tensor:
        yi = y_ext[i]
        yj = yi if j is None else y_ext[j]
        Kf = batched_kernel(
            X_ext[i],
            None if j is None else X_ext[j],
            kernel=kernel,
            gamma=gamma,
            degree=degree,
            coef0=coef0,
        )
        return Kf.mul_(yi[:, :, None]).mul_(yj[:, None, :])

    return face_fn


def _gather_face_fn(Q: torch.Tensor) -> FaceFn:
    Q_ext = torch.nn.functional.pad(Q, (0, 1, 0, 1))

    def face_fn(i: torch.Tensor, j: torch.Tensor | None = None) -> torch.Tensor:
        j = i if j is None else j
        return Q_ext[i[:, :, None], j[:, None, :]]

    return face_fn


def compact_mask(
    mask: torch.Tensor, width: int, pad: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the True entries of each row, padded with ``pad``: (R, width), valid."""
    idx = torch.sort(mask.to(torch.int8), dim=1, descending=True, stable=True).indices[
        :, :width
    ]
    valid = torch.arange(width, device=mask.device)[None, :] < mask.sum(1)[:, None]
    return torch.where(valid, idx, pad), valid


@dataclass
class _Factors:
    """Cholesky factors of the last factorised face of each row, padded to one width."""

    idx: torch.Tensor  # (R, f0), padding n
    valid: torch.Tensor  # (R, f0)
    L: torch.Tensor  # (R, f0, f0), identity on padding
    mask: torch.Tensor  # (R, n): the factorised face


class _FactorStore:
    """Per-row face factors of one :func:`pdas_dense` run, written in place.

    Rows are the run's rows (fixed); the common width grows when a wider face arrives.
    Gives up (``enabled`` False) when the factors would exceed ``max_bytes``.
    """

    def __init__(
        self, R: int, n: int, dtype: torch.dtype, device: torch.device, max_bytes: int
    ) -> None:
        self.R, self.n, self.dtype, self.device, self.max_bytes = (
            R,
            n,
            dtype,
            device,
            max_bytes,
        )
        self.width = 0
        self.enabled = True
        self.idx = torch.full((R, 0), n, dtype=torch.long, device=device)
        self.valid = torch.zeros((R, 0), dtype=torch.bool, device=device)
        self.L = torch.zeros((R, 0, 0), dtype=dtype, device=device)
        self.mask = torch.zeros((R, n), dtype=torch.bool, device=device)
        self.has = torch.zeros(R, dtype=torch.bool, device=device)
        # per row, ``L^{-1} b_j`` for the border columns ``b_j`` of the bordered update
        # solves since the last factorisation (:func:`_update_solve`), stored as rows of
        # ``Yt`` (R, slots, width): ``slot[r, j]`` is coordinate ``j``'s row of ``Yt[r]``
        # (-1: none; column ``n`` is scratch),
        # ``cnt[r]`` the columns in use; off (``cache`` False) beyond ``max_bytes``
        self.cache = True
        self.slot = torch.full((R, n + 1), -1, dtype=torch.long, device=device)
        self.Yt = torch.zeros((R, 0, 0), dtype=dtype, device=device)
        self.G = torch.zeros((R, 0, 0), dtype=dtype, device=device)  # Yt Yt^T
        self.cnt = torch.zeros(R, dtype=torch.long, device=device)

    def _grow(self, f: int) -> None:
        f = max(f, int(1.1 * self.width))
        if self.R * f * f * torch.finfo(self.dtype).bits // 8 > self.max_bytes:
            self.enabled = False
            self.has.zero_()
            return
        k = f - self.width
        L = (
            torch.eye(f, dtype=self.dtype, device=self.device)
            .expand(self.R, f, f)
            .clone()
        )
        L[:, : self.width, : self.width] = self.L
        self.L = L
        self.idx = torch.nn.functional.pad(self.idx, (0, k), value=self.n)
        self.valid = torch.nn.functional.pad(self.valid, (0, k))
        # the new padding rows of L are the identity's, so cached columns are 0 there
        self.Yt = torch.nn.functional.pad(self.Yt, (0, f - self.Yt.shape[2]))
        self.width = f

    def write(
        self,
        gi: torch.Tensor,
        ip: torch.Tensor,
        valid: torch.Tensor,
        L: torch.Tensor,
        mask: torch.Tensor,
    ) -> None:
        f = ip.shape[1]
        if not self.enabled:
            return
        if f > self.width:
            self._grow(f)
            if not self.enabled:
                return
        W = self.width
        self.L[gi, :f, :f] = L
        if f < W:
            self.L[gi, f:, :] = 0.0
            self.L[gi, :f, f:] = 0.0
            Ld = self.L.diagonal(dim1=1, dim2=2)
            Ld[gi, f:] = 1.0
        self.idx[gi] = torch.nn.functional.pad(ip, (0, W - f), value=self.n)
        self.valid[gi] = torch.nn.functional.pad(valid, (0, W - f))
        self.mask[gi] = mask
        self.has[gi] = True
        self.slot[gi] = -1
        self.cnt[gi] = 0

    def cached(
        self, gi: torch.Tensor, cols: torch.Tensor, valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Cached border columns of rows ``gi`` for coordinates ``cols`` (R, m).

        Returns ``Y^T`` of shape (R, m, width) (zero where not cached) and which are.
        """
        sl = self.slot[gi[:, None], cols]
        have = valid & (sl >= 0)
        if not self.cache or self.Yt.shape[1] == 0 or not bool(have.any()):
            R, m = cols.shape
            return self.L.new_zeros((R, m, self.width)), have
        Yt = self.Yt[gi[:, None], sl.clamp_min(0)]
        return Yt.mul_(have[:, :, None]), have

    def append(
        self,
        gi: torch.Tensor,
        cols: torch.Tensor,
        valid: torch.Tensor,
        Ynt: torch.Tensor,
    ) -> None:
        """Cache the new border columns ``Ynt`` (R, k, width) of coordinates ``cols``."""
        if not self.cache:
            return
        k = cols.shape[1]
        cnt = self.cnt[gi]
        need = int(cnt.max()) + k
        S = self.Yt.shape[1]
        if need > S:
            S2 = max(need, int(1.5 * S), 16)
            per_row = (self.width + S2) * S2 * torch.finfo(self.dtype).bits // 8
            if self.R * per_row > self.max_bytes:
                self.cache = False
                self.Yt, self.G = self.Yt[:, :0], self.G[:, :0, :0]
                self.slot.fill_(-1)
                self.cnt.zero_()
                return
            self.Yt = torch.nn.functional.pad(self.Yt, (0, 0, 0, S2 - S))
            self.G = torch.nn.functional.pad(self.G, (0, S2 - S, 0, S2 - S))
        sl = cnt[:, None] + torch.arange(k, device=self.device)[None, :]
        self.Yt[gi[:, None], sl] = Ynt
        # Gram rows of the new columns against every cached one (unused slots are 0)
        Yr = self.Yt if gi.numel() == self.R else self.Yt[gi]
        Gn = torch.bmm(Ynt, Yr.transpose(1, 2))  # (R, k, S)
        ar = torch.arange(Gn.shape[2], device=self.device)
        self.G[gi[:, None], sl] = Gn
        self.G[gi[:, None, None], ar[None, :, None], sl[:, None, :]] = Gn.transpose(
            1, 2
        )
        self.slot[gi[:, None], torch.where(valid, cols, self.n)] = torch.where(
            valid, sl, -1
        )
        self.slot[gi, self.n] = -1
        self.cnt[gi] = cnt + valid.sum(1)

    def gram(
        self, gi: torch.Tensor, cols: torch.Tensor, valid: torch.Tensor
    ) -> torch.Tensor | None:
        """``Y_b^T Y_b`` of the border ``cols`` (R, m), all cached; None if off."""
        if not self.cache:
            return None
        if self.G.shape[1] == 0:  # nothing cached: no valid border column
            R, m = cols.shape
            return self.G.new_zeros((R, m, m))
        sl = self.slot[gi[:, None], cols].clamp_min(0)
        Gb = self.G[gi[:, None, None], sl[:, :, None], sl[:, None, :]]
        return Gb.mul_(valid[:, :, None] & valid[:, None, :])

    def subset(self, gi: torch.Tensor) -> _FactorStore:
        """A store for a new run whose row ``r`` starts from this store's row ``gi[r]``.

        ``gi`` the identity (the next ``C`` stage of the same replicates) hands over this
        store itself, without copying its factors.
        """
        ar = torch.arange(self.R, device=self.device)
        if gi.numel() == self.R and bool((gi == ar).all()):
            return self
        out = _FactorStore(gi.numel(), self.n, self.dtype, self.device, self.max_bytes)
        out.enabled, out.width = self.enabled, self.width
        out.idx, out.valid, out.L = self.idx[gi], self.valid[gi], self.L[gi]
        out.mask, out.has = self.mask[gi], self.has[gi]
        out.cache, out.slot, out.cnt = self.cache, self.slot[gi], self.cnt[gi]
        out.Yt, out.G = self.Yt[gi], self.G[gi]
        return out

    def get(self, gi: torch.Tensor) -> _Factors:
        if gi.numel() == self.R:
            return _Factors(self.idx, self.valid, self.L, self.mask)
        return _Factors(self.idx[gi], self.valid[gi], self.L[gi], self.mask[gi])


def _tri_solve(L: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``(L L^T)^{-1} B`` for batched lower-triangular ``L``."""
    Y = torch.linalg.solve_triangular(L, B, upper=False)
    return torch.linalg.solve_triangular(L.transpose(1, 2), Y, upper=True)


def _shift_diag(
    S: torch.Tensor | None,
    rows: torch.Tensor,
    idx: torch.Tensor,
    valid: torch.Tensor,
    pad_value: float,
) -> torch.Tensor:
    """Diagonal added to a gathered block: ``s`` on valid entries, ``pad_value`` on padding."""
    d = torch.where(valid, 0.0, pad_value)
    if S is not None:
        S_ext = torch.nn.functional.pad(S[rows], (0, 1))
        d = d + torch.gather(S_ext, 1, idx) * valid
    return d


def _intercept_and_scatter(
    x: torch.Tensor, y: torch.Tensor, c: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """From ``x = M^{-1} [r, y]`` on the face (scattered, (R, n, 2)): ``a_F``, ``b``, ok."""
    x1, x2 = x[..., 0], x[..., 1]
    yx2 = x2 @ y
    b = (x1 @ y - c) / torch.where(yx2 > 0, yx2, 1.0)
    a = x1 - b[:, None] * x2
    ok = torch.isfinite(b) & (yx2 > 0)
    return a, b, ok


def _full_solve(
    face_fn: FaceFn,
    y_ext: torch.Tensor,
    S: torch.Tensor | None,
    free: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
    max_bytes: int,
    store: _FactorStore | None = None,
    gi: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Factorise and solve every row's face; the factors go to ``store`` rows ``gi``."""
    R, n = free.shape
    dt, dev = rhs.dtype, rhs.device
    y = y_ext[:n]
    nf = free.sum(1)
    x = torch.zeros((R, n, 2), dtype=dt, device=dev)
    ok = torch.ones(R, dtype=torch.bool, device=dev)
    order = torch.argsort(nf, descending=True)
    nf_sorted = nf[order].tolist()
    itemsize = rhs.element_size()
    s = 0
    while s < R:
        f = int(nf_sorted[s])
        if f == 0:
            break  # the remaining rows have no free coordinate: the caller picks b
        per_row = (3 * f * f + 8 * f) * itemsize
        e = min(R, s + max(1, max_bytes // per_row))
        # rows of similar face width only: padding costs f^3 flops per row
        e = s + max(1, sum(1 for v in nf_sorted[s:e] if v >= 0.85 * f))
        rows = order[s:e]
        s = e
        ip, valid = compact_mask(free[rows], f, n)
        M = face_fn(ip, None)
        M.diagonal(dim1=1, dim2=2).add_(_shift_diag(S, rows, ip, valid, 1.0))
        L, info = torch.linalg.cholesky_ex(M)
        bad = info != 0
        if bool(bad.any()):
            # semidefinite face (repeated points, linear-like kernels): a tiny jitter,
            # above the dtype's rounding (1e-12 is below float32's eps: no effect there)
            rel_jit = max(1e-12, 100 * torch.finfo(M.dtype).eps)
            jit = rel_jit * M.diagonal(dim1=1, dim2=2).abs().amax(1).clamp_min(1.0)
            L2, info2 = torch.linalg.cholesky_ex(
                M + torch.diag_embed(jit[:, None] * valid)
            )
            L = torch.where(bad[:, None, None], L2, L)
            ok[rows[bad & (info2 != 0)]] = False
        del M
        rF = torch.gather(rhs[rows], 1, torch.where(valid, ip, 0)) * valid
        Xs = _tri_solve(L, torch.stack([rF, y_ext[ip]], dim=2))
        ext = torch.zeros((rows.numel(), n + 1, 2), dtype=dt, device=dev)
        x[rows] = ext.scatter(1, ip[:, :, None].expand(-1, -1, 2), Xs)[:, :n]
        if store is not None and gi is not None:
            store.write(gi[rows], ip, valid, L, free[rows])
    a, b, ok_b = _intercept_and_scatter(x, y, c)
    has = nf > 0
    return torch.where(free, a, 0.0), b, ok & (ok_b | ~has)


def _update_solve(
    face_fn: FaceFn,
    y_ext: torch.Tensor,
    S: torch.Tensor | None,
    free: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
    store: _FactorStore,
    gi: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Solve faces that differ a little from the factorised ones (bordered Schur system).

    With ``F0`` the factorised face of row ``gi`` in ``store``, ``A = F \\ F0`` and
    ``D = F0 \\ F``, the system on ``F`` equals the system on ``F0 u A`` with the
    constraints ``x_D = 0`` (multipliers ``l``)::

        [M00  M0A  E_D] [x0]   [r0]
        [MA0  MAA  0  ] [xA] = [rA]
        [E_D^T 0   0  ] [l ]   [0 ]

    eliminated through ``M00 = L L^T``: with ``Y = L^{-1} [M0A, E_D]`` the ``(m, m)``
    Schur complement is ``[[MAA, 0], [0, 0]] - Y^T Y`` (``m = |A| + |D|``) and
    ``x0 = L^{-T} (L^{-1} r0 - Y z)``. The columns of ``Y`` depend only on ``F0`` and
    the coordinate, so they are kept in ``store`` until the row is refactorised: an
    iteration computes ``L^{-1}`` only of the coordinates new to the border (on the
    RBF path most of the cost of an update was this forward solve, repeated for the
    whole border at every iteration; issue 14).
    """
    R, n = free.shape
    dt, dev = rhs.dtype, rhs.device
    if S is None and _FULL_STORE_FRAC * store.R <= R < store.R:
        # most of the store's rows: solve them all (the others with an empty border
        # and a zero right-hand side, discarded) rather than copy their factors out
        full = torch.arange(store.R, device=dev)
        free_f = store.mask.clone()
        free_f[gi] = free
        rhs_f = rhs.new_zeros((store.R, n))
        rhs_f[gi] = rhs
        c_f = c.new_zeros(store.R)
        c_f[gi] = c
        a, b, ok = _update_solve(face_fn, y_ext, None, free_f, rhs_f, c_f, store, full)
        return a[gi], b[gi], ok[gi]
    y = y_ext[:n]
    fac = store.get(gi)
    f0 = fac.idx.shape[1]
    add = free & ~fac.mask
    drop = fac.mask & ~free
    border = add | drop
    m = max(int(border.sum(1).max()), 1)
    ipB, validB = compact_mask(border, m, n)
    isA = torch.gather(torch.nn.functional.pad(add, (0, 1)), 1, ipB)
    ipA = torch.where(isA, ipB, n)  # the added coordinates (drops and padding: n)
    # Y^T of the border (R, m + 1, f0): a last zero row for the scatter below
    Ybx, have = store.cached(
        gi,
        torch.nn.functional.pad(ipB, (0, 1), value=n),
        torch.nn.functional.pad(validB, (0, 1)),
    )
    Ybt, have = Ybx[:, :m], have[:, :m]
    need = validB & ~have
    k = int(need.sum(1).max())
    r0 = torch.gather(torch.nn.functional.pad(rhs, (0, 1)), 1, fac.idx) * fac.valid
    R0 = torch.stack([r0, y_ext[fac.idx]], dim=2)  # (R, f0, 2)
    if k:
        posN, validN = compact_mask(need, k, m)  # positions in the border, pad m
        ipN = torch.gather(torch.nn.functional.pad(ipB, (0, 1), value=n), 1, posN)
        isAN = torch.gather(torch.nn.functional.pad(isA, (0, 1)), 1, posN) & validN
        # new columns: M0A for added coordinates, unit vectors E_D for dropped ones
        Bn = face_fn(fac.idx, torch.where(isAN, ipN, n))
        where = torch.full((R, n + 1), f0, dtype=torch.long, device=dev)
        where.scatter_(1, fac.idx, torch.arange(f0, device=dev).expand(R, -1))
        pD = torch.where(validN & ~isAN, torch.gather(where, 1, ipN), f0)
        ED = torch.zeros((R, f0 + 1, k), dtype=dt, device=dev)
        ED.scatter_(1, pD[:, None, :], 1.0)
        Bn = Bn + ED[:, :f0]
        sol = torch.linalg.solve_triangular(
            fac.L, torch.cat([R0, Bn], dim=2), upper=False
        )
        Y0 = sol[..., :2]
        Ynt = sol[..., 2:].transpose(1, 2) * validN[:, :, None]  # (R, k, f0)
        Ybx.scatter_(1, posN[:, :, None].expand(-1, -1, f0), Ynt)
        store.append(gi, ipN, validN, Ynt)
    else:
        Y0 = torch.linalg.solve_triangular(fac.L, R0, upper=False)
    C = face_fn(ipA, None)
    dA = _shift_diag(S, torch.arange(R, device=dev), ipB, validB, 1.0)
    C.diagonal(dim1=1, dim2=2).add_(torch.where(isA | ~validB, dA, 0.0))
    Gb = store.gram(gi, ipB, validB)
    if Gb is None:
        Sch = torch.baddbmm(C, Ybt, Ybt.transpose(1, 2), alpha=-1.0)
    else:
        Sch = C.sub_(Gb)
    rA = torch.gather(torch.nn.functional.pad(rhs, (0, 1)), 1, ipA) * isA
    RB = torch.stack([rA, y_ext[ipA]], dim=2)  # (R, m, 2); zero on drops
    z, info = torch.linalg.solve_ex(Sch, torch.baddbmm(RB, Ybt, Y0, alpha=-1.0))
    X0 = torch.linalg.solve_triangular(
        fac.L.transpose(1, 2),
        torch.baddbmm(Y0, Ybt.transpose(1, 2), z, alpha=-1.0),
        upper=True,
    )
    x = torch.zeros((R, n + 1, 2), dtype=dt, device=dev)
    keep0 = fac.valid & ~torch.gather(torch.nn.functional.pad(drop, (0, 1)), 1, fac.idx)
    x.scatter_(1, torch.where(keep0, fac.idx, n)[:, :, None].expand(-1, -1, 2), X0)
    x.scatter_(1, ipA[:, :, None].expand(-1, -1, 2), z * isA[:, :, None])
    x = x[:, :n]
    a, b, ok = _intercept_and_scatter(x, y, c)
    # a singular Schur complement (an added point repeats a face point): refactorise
    ok = ok & (info == 0) & torch.isfinite(a).all(1)
    return torch.where(free, a, 0.0), b, ok


def _solve_faces(
    face_fn: FaceFn,
    y_ext: torch.Tensor,
    S: torch.Tensor | None,
    free: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
    store: _FactorStore | None,
    rows: torch.Tensor,
    max_bytes: int,
    frac: float,
    cap_upd: int | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Solve every row's face system (``rhs``, ``c``): by a bordered update of the
    row's stored factor when its face changed little, else by a new factorisation.

    ``cap_upd`` None: at most ``_UPDATE_MAX`` changes (the low-rank route); else at
    most ``max(cap_upd, |F0| / _UPDATE_DIV_WIDE)`` (dense ``Q``). Returns ``a_F``
    (zero off the face), ``b`` and whether each row's solve succeeded.
    """
    R = rows.numel()
    dt, dev = rhs.dtype, rhs.device
    upd = torch.zeros(R, dtype=torch.bool, device=dev)
    if store is not None and store.enabled:
        mask0 = store.mask[rows]
        nch = (free ^ mask0).sum(1)
        f0 = mask0.sum(1)
        if cap_upd is not None:
            cap_r = (f0 // _UPDATE_DIV_WIDE).clamp_min(cap_upd)
        else:
            cap_r = torch.full_like(f0, _UPDATE_MAX)
        lim = torch.minimum(frac * f0.double(), cap_r.double())
        upd = store.has[rows] & (nch <= lim) & (free.sum(1) > 0)
    aF = torch.zeros_like(rhs)
    b = torch.zeros(R, dtype=dt, device=dev)
    ok = torch.ones(R, dtype=torch.bool, device=dev)
    if bool(upd.any()):
        ui = upd.nonzero()[:, 0]
        aU, bU, okU = _update_solve(
            face_fn,
            y_ext,
            None if S is None else S[ui],
            free[ui],
            rhs[ui],
            c[ui],
            store,  # type: ignore[arg-type]
            rows[ui],
        )
        aF[ui], b[ui] = aU, bU
        upd[ui[~okU]] = False  # refactorised below
    if not bool(upd.all()):
        fi = (~upd).nonzero()[:, 0]
        aN, bN, okN = _full_solve(
            face_fn,
            y_ext,
            None if S is None else S[fi],
            free[fi],
            rhs[fi],
            c[fi],
            max_bytes,
            store,
            rows[fi],
        )
        aF[fi], b[fi], ok[fi] = aN, bN, okN
    return aF, b, ok


def _update_product(
    Q: torch.Tensor,
    v: torch.Tensor,
    v_prev: torch.Tensor | None,
    Qv_prev: torch.Tensor | None,
    max_changes: int = 64,
) -> torch.Tensor:
    """``v @ Q``, from ``v_prev @ Q`` plus the rows of ``Q`` where ``v`` changed when few did.

    A full product streams all of ``Q`` (memory-bound for a few rows); an update reads
    only the changed rows.
    """
    n = v.shape[1]
    if v_prev is not None and Qv_prev is not None:
        diff = v - v_prev
        ch = diff != 0
        m = int(ch.sum(1).max())
        if m == 0:
            return Qv_prev
        if m <= max_changes:
            ip, valid = compact_mask(ch, m, n - 1)  # padding: any row, weighted by zero
            dv = torch.gather(diff, 1, ip) * valid
            rows = Q.index_select(0, ip.reshape(-1)).view(v.shape[0], m, n)
            return Qv_prev + torch.bmm(dv[:, None, :], rows)[:, 0]
        # more changes per row, but in few columns over the batch (a C stage of the RBF
        # path moves a few hundred bound coordinates of n = 5000)
        return Qv_prev + _cols_product(diff, Q)
    return v @ Q


def _cols_product(v: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
    """``v @ Q`` from the rows of ``Q`` where some row of ``v`` is nonzero.

    With at most ``n / 4`` such columns (the faces of the small ``C`` stages on the RBF
    path) the rows of ``Q`` they select are copied out and multiplied, which reads
    less of ``Q`` than the full (memory-bound) product.
    """
    n = v.shape[1]
    cols = (v != 0).any(0).nonzero()[:, 0]
    if cols.numel() <= n // 4:
        return v[:, cols] @ Q.index_select(0, cols)
    return v @ Q


def pdas_dense(
    Q: torch.Tensor | None,
    y: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor | None,
    A0: torch.Tensor,
    *,
    max_iter: int = 40,
    max_bytes: int = 2**29,
    face_fn: FaceFn | None = None,
    reuse_factors: bool = True,
    factors: _FactorStore | None = None,
    return_factors: bool = False,
    low_rank: torch.Tensor | None = None,
    stall: int = 0,
) -> tuple[torch.Tensor, ...]:
    """Primal-dual active-set iterations for every row, started from the partition of ``A0``.

    Parameters
    ----------
    Q : tensor of shape (n, n) or None
        ``diag(y) K diag(y)`` (shared); None when ``low_rank`` and ``face_fn`` are given.
    y : tensor of shape (n,)
    U : tensor of shape (P, n)
        Upper bounds (``0`` fixes a coordinate; ``inf``: no upper bound).
    S : tensor of shape (P, n), optional
        Diagonal shift (SPEC S1b).
    A0 : tensor of shape (P, n)
        Start: coordinates at 0 / at ``u`` / strictly between define the partition.
    max_iter : int
    max_bytes : int
        Memory for the batched face factors.
    face_fn : callable, optional
        ``face_fn(i, j)``: blocks ``Q[i_r][:, j_r]`` (see :func:`face_kernel`); default
        gathers from ``Q``. Callers with the data pass :func:`face_kernel`, which is
        cheaper than gathering from a large ``Q``.
    reuse_factors : bool
        Solve faces close to the last factorised one by a bordered Schur update.
    factors : _FactorStore, optional
        Factors to start from (``store.subset(src)`` of an earlier run whose row
        ``src[r]`` gave this row's start): a warm-started first iteration then costs
        triangular solves instead of a factorisation.
    return_factors : bool
        Also return the run's factor store (a sixth output).
    low_rank : tensor of shape (n, k), optional
        ``W`` with ``Q = W W^T`` (the linear kernel's factor): products with ``Q`` are
        then two ``(P, n) @ (n, k)`` GEMMs instead of one ``(P, n) @ (n, n)``, and ``Q``
        is never formed.
    stall : int
        > 0: a row whose number of violated conditions has not fallen below its
        smallest so far for ``stall`` iterations stops, unconverged (it cycles; the
        caller finishes it by :func:`pdas_monotone`). 0: only ``max_iter`` stops rows.

    Returns
    -------
    A : tensor of shape (P, n)
        Last iterate, clipped to the box.
    QA : tensor of shape (P, n)
        ``A @ Q`` for the returned ``A`` before clipping (equal at convergence).
    b : tensor of shape (P,)
    n_iter : tensor of shape (P,)
    converged : tensor of shape (P,), bool
        No coordinate violates its optimality condition (and ``y^T a = 0``).
    """
    P, n = U.shape
    dt, dev = U.dtype, U.device
    act = U > 0
    fin = torch.isfinite(U)
    Uf = torch.where(fin, U, 0.0)
    lo = act & (A0 <= 0)
    up = act & fin & (A0 >= U)
    out_A = torch.zeros((P, n), dtype=dt, device=dev)
    out_QA = torch.zeros((P, n), dtype=dt, device=dev)
    out_b = torch.zeros(P, dtype=dt, device=dev)
    out_it = torch.zeros(P, dtype=torch.long, device=dev)
    out_ok = torch.zeros(P, dtype=torch.bool, device=dev)
    rows = torch.arange(P, device=dev)
    Ua, Ufa, acta, fina = U, Uf, act, fin
    Sa = S
    eps = torch.finfo(dt).eps
    y_ext = torch.nn.functional.pad(y, (0, 1))
    if low_rank is not None:
        Wl, Wlt = low_rank, low_rank.T.contiguous()

        def qmul(v: torch.Tensor) -> torch.Tensor:
            return (v @ Wl) @ Wlt
    else:
        if Q is None:
            raise ValueError("pdas_dense needs Q or low_rank")
        Qd = Q

        def qmul(v: torch.Tensor) -> torch.Tensor:
            return _cols_product(v, Qd)

    if face_fn is None:
        if Q is None:
            raise ValueError("pdas_dense needs Q or face_fn")
        face_fn = _gather_face_fn(Q)
    store = factors
    if reuse_factors and store is None:
        store = _FactorStore(P, n, dt, dev, max_bytes)
    if not reuse_factors:
        store = None
    if store is not None and store.R != P:
        raise ValueError(f"factors hold {store.R} rows; the batch has {P}")
    ab_prev: torch.Tensor | None = None
    Qab_prev: torch.Tensor | None = None
    frac, cap_upd = (
        (_UPDATE_FRAC, _UPDATE_MAX)
        if low_rank is not None
        else (_UPDATE_FRAC_DENSE, _UPDATE_MAX_DENSE)
    )
    best_viol = torch.full((P,), n + 1, dtype=torch.long, device=dev)
    since = torch.zeros(P, dtype=torch.long, device=dev)
    for it in range(max_iter):
        free = acta & ~lo & ~up
        ab = torch.where(up, Ufa, 0.0)
        if low_rank is None:
            Qab = _update_product(Q, ab, ab_prev, Qab_prev)
        else:
            Qab = qmul(ab)
        ab_prev, Qab_prev = ab, Qab
        c = -(ab * y).sum(1)
        rhs = 1.0 - Qab
        aF, b, ok = _solve_faces(
            face_fn,
            y_ext,
            Sa,
            free,
            rhs,
            c,
            store,
            rows,
            max_bytes,
            frac,
            cap_upd if low_rank is None else None,
        )
        nofree = free.sum(1) == 0
        a = torch.where(free, aF, ab)
        QA = Qab + qmul(aF)
        if bool(nofree.any()):
            # no free coordinate: the intercept that best fits the bound coordinates
            b = torch.where(nofree, optimal_intercept(QA * y, y, Ua, Sa), b)
        g = QA - 1.0 + b[:, None] * y
        if Sa is not None:
            g = g + Sa * a
        scale = 1.0 + QA.abs().amax(1, keepdim=True)
        tg = 1e3 * eps * scale
        ta = 1e3 * eps * torch.where(fina, Ufa, 1.0 + a.abs())
        v_lo = lo & (g < -tg)
        v_up = up & (g > tg)
        f_lo = free & (a < -ta)
        f_up = free & fina & (a > Ufa + ta)
        n_viol = (v_lo | v_up | f_lo | f_up).sum(1)
        feas = (a * y).sum(1).abs() <= 1e3 * eps * (1.0 + (a.abs() * acta).sum(1))
        done = (n_viol == 0) & feas & ok
        last = it == max_iter - 1
        fin_rows = done | last
        if stall > 0:
            better = n_viol < best_viol[rows]
            best_viol[rows] = torch.where(better, n_viol, best_viol[rows])
            since[rows] = torch.where(better, 0, since[rows] + 1)
            fin_rows = fin_rows | (since[rows] >= stall)
        if bool(fin_rows.any()):
            Ac = torch.minimum(
                a.clamp_min(0.0), torch.where(fina, Ufa, a.clamp_min(0.0))
            )
            gi = rows[fin_rows]
            out_A[gi] = Ac[fin_rows]
            out_QA[gi] = QA[fin_rows]
            out_b[gi] = b[fin_rows]
            out_it[gi] = it + 1
            out_ok[gi] = done[fin_rows]
            keep = ~fin_rows
            if not bool(keep.any()):
                break
            rows, lo, up, free, v_lo, v_up, f_lo, f_up, g, ab_prev, Qab_prev = (
                t[keep]
                for t in (
                    rows,
                    lo,
                    up,
                    free,
                    v_lo,
                    v_up,
                    f_lo,
                    f_up,
                    g,
                    ab_prev,
                    Qab_prev,
                )
            )
            Ua, Ufa, acta, fina = Ua[keep], Ufa[keep], acta[keep], fina[keep]
            Sa = None if Sa is None else Sa[keep]
        # free at most max(256, 2 |F|) bound coordinates per iteration, the most violated
        # first: a cold start would otherwise free almost every coordinate at once
        to_free = v_lo | v_up
        cap = (_CAP_MULT * free.sum(1)).clamp_min(_CAP_MIN)
        if bool((to_free.sum(1) > cap).any()):
            score = torch.where(to_free, g.abs(), -1.0)
            rank = torch.argsort(torch.argsort(score, dim=1, descending=True), dim=1)
            to_free = to_free & (rank < cap[:, None])
        lo = (lo & ~(to_free & v_lo)) | f_lo
        up = (up & ~(to_free & v_up)) | f_up
    if return_factors:
        return out_A, out_QA, out_b, out_it, out_ok, store
    return out_A, out_QA, out_b, out_it, out_ok


def pdas_monotone(
    Q: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor | None,
    A0: torch.Tensor,
    *,
    max_iter: int = 2000,
    max_bytes: int = 2**29,
    face_fn: FaceFn | None = None,
) -> tuple[torch.Tensor, ...]:
    """Feasible, monotone active-set iterations on a dense ``Q`` from a feasible ``A0``.

    :func:`pdas_dense` jumps to the solution of each face system and can cycle when the
    faces are nearly singular: near-duplicate rows of an RBF kernel (``K_ij`` close to
    1) make ``Q_FF`` ill-conditioned, the face solution lands far outside the box, and
    the next partition is as wrong as the last (cervical's bootstrap folds: every
    problem cycled for the 40 iterations and went to ADMM). Here every iterate stays
    feasible and the objective never increases:

    1. a Newton step on the face ``F`` from the current point ``a``::

           [Q_FF + diag(s_F)   y_F] [d_F]   [-g_F]
           [y_F^T              0  ] [ b ] = [ 0  ],    g = Q a - 1 + s a,

       by the same factors (and bordered updates) as :func:`pdas_dense`; repeated on
       an unchanged face it is iterative refinement of an ill-conditioned solve;
    2. an exact line search along ``d`` (``min(-g^T d / d^T Q d, 1)`` for an exact
       solve), cut at the first coordinate that reaches a bound (ratio test), which
       joins the bound set;
    3. at a stationary point of the face (no coordinate blocked the step and
       ``|g_i + b y_i|`` below the tolerance on ``F``) the bound coordinates whose
       multipliers have the wrong sign are freed (the most violated first, at most
       ``max(256, 2 |F|)``; only the most violated after a step of length 0).

    Returns the outputs of :func:`pdas_dense`; ``converged`` marks rows that met the
    same conditions (the caller certifies them by the duality gap).
    """
    P, n = U.shape
    dt, dev = U.dtype, U.device
    eps = torch.finfo(dt).eps
    act = U > 0
    fin = torch.isfinite(U)
    Uf = torch.where(fin, U, 0.0)
    a = torch.minimum(A0.clamp_min(0.0), torch.where(fin, U, A0.clamp_min(0.0)))
    a = torch.where(act, a, 0.0)
    lo = act & (a <= 0)
    up = act & fin & (a >= Uf)
    a = torch.where(up, Uf, torch.where(lo, 0.0, a))
    if face_fn is None:
        face_fn = _gather_face_fn(Q)
    y_ext = torch.nn.functional.pad(y, (0, 1))
    store = _FactorStore(P, n, dt, dev, max_bytes)
    QA = _cols_product(a, Q)
    b = torch.zeros(P, dtype=dt, device=dev)
    n_it = torch.zeros(P, dtype=torch.long, device=dev)
    done = torch.zeros(P, dtype=torch.bool, device=dev)
    degen = torch.zeros(P, dtype=torch.bool, device=dev)
    fails = torch.zeros(P, dtype=torch.bool, device=dev)
    run = torch.ones(P, dtype=torch.bool, device=dev)
    inf = torch.full((), torch.inf, dtype=dt, device=dev)
    for _ in range(max_iter):
        rows = run.nonzero()[:, 0]
        if rows.numel() == 0:
            break
        n_it[rows] += 1
        ar, QAr, Ur, Ufr, finr = a[rows], QA[rows], U[rows], Uf[rows], fin[rows]
        Sr = None if S is None else S[rows]
        lor, upr = lo[rows], up[rows]
        free = act[rows] & ~lor & ~upr
        has_f = free.any(1)
        g = QAr - 1.0 if Sr is None else QAr - 1.0 + Sr * ar
        zero = torch.zeros(rows.numel(), dtype=dt, device=dev)
        d, bN, ok = _solve_faces(
            face_fn,
            y_ext,
            Sr,
            free,
            torch.where(free, -g, 0.0),
            zero,
            store,
            rows,
            max_bytes,
            _UPDATE_FRAC_DENSE,
            _UPDATE_MAX_DENSE,
        )
        d = torch.where(free & ok[:, None] & torch.isfinite(d), d, 0.0)
        # y_F^T d = 0 up to the solve's rounding: remove the rest along y_F, and
        # measure the slope by the gradient of the Lagrangian (g + b y), whose
        # product with d does not carry b times that rounding
        nf = free.sum(1)
        d = d - torch.where(free, y, 0.0) * ((d * y).sum(1) / nf.clamp_min(1))[:, None]
        b0 = -(torch.where(free, g, 0.0) * y).sum(1) / nf.clamp_min(1)
        Qd = _cols_product(d, Q)
        gd = ((g + b0[:, None] * y) * d).sum(1)
        dQd = (d * Qd).sum(1)
        if Sr is not None:
            dQd = dQd + (Sr * d * d).sum(1)
        # a direction of zero curvature (a singular face: the KKT matrix of two
        # opposite-label copies of one point is singular) descends without limit:
        # only the ratio test stops it
        descent = gd < 0
        curved = dQd > 0
        t_line = torch.where(curved, -gd / torch.where(curved, dQd, 1.0), inf)
        t_line = torch.where(descent, t_line, 0.0)
        neg = free & (d < 0)
        pos = free & finr & (d > 0)
        ratio = torch.where(neg, ar / torch.where(neg, -d, 1.0), inf)
        ratio = torch.minimum(
            ratio, torch.where(pos, (Ufr - ar) / torch.where(pos, d, 1.0), inf)
        )
        t_ratio = ratio.amin(1).clamp_min(0.0)
        descent = descent & (torch.isfinite(t_line) | torch.isfinite(t_ratio))
        t_line = torch.where(descent, t_line, 0.0)
        blocked = descent & (t_ratio <= t_line)
        t = torch.where(blocked, t_ratio, t_line)
        ar = ar + t[:, None] * d
        QAr = QAr + t[:, None] * Qd
        hit = blocked[:, None] & free & (ratio <= t_ratio[:, None])
        lor = lor | (hit & neg)
        upr = upr | (hit & pos)
        ar = torch.where(lor, 0.0, torch.where(upr, Ufr, ar))
        free = free & ~hit
        degen[rows] = blocked & (t_ratio <= 0)
        # multiplier of y^T a = 0 at the new point: least squares on the face, or the
        # primal-optimal intercept without free coordinates
        g = QAr - 1.0 if Sr is None else QAr - 1.0 + Sr * ar
        nf = free.sum(1)
        b_ls = -(torch.where(free, g, 0.0) * y).sum(1) / nf.clamp_min(1)
        if bool((nf == 0).any()):
            b_ls = torch.where(nf == 0, optimal_intercept(QAr * y, y, Ur, Sr), b_ls)
        gb = g + b_ls[:, None] * y
        scale = 1.0 + QAr.abs().amax(1, keepdim=True)
        tg = torch.maximum(1e3 * eps * scale, 1e-10 * scale)
        stat = (free & (gb.abs() > tg)).any(1)
        v_lo = lor & (gb < -tg)
        v_up = upr & (gb > tg)
        to_free = v_lo | v_up
        at_face = ~blocked & ~stat
        feas = (ar * y).sum(1).abs() <= 1e3 * eps * (1.0 + ar.abs().sum(1))
        fin_r = at_face & ~to_free.any(1) & feas
        # no descent direction on a face that is not stationary: first the face is
        # refactorised (a bordered update may have lost accuracy); if a new factor
        # fails too, the face counts as stationary up to the accuracy of its solve
        # (cond(Q_FF) eps) when the residual is small (the certificate judges), else
        # the row stops
        flat = ~blocked & stat & ~descent & has_f
        res = torch.where(free, gb.abs(), 0.0).amax(1) / scale[:, 0]
        again = flat & fails[rows]
        at_face = at_face | (again & (res <= 1e-6))
        fin_r = at_face & ~to_free.any(1) & feas
        stuck = again & (res > 1e-6)
        fails[rows] = flat & ~again
        if bool(fails[rows].any()):
            store.has[rows[fails[rows]]] = False
        cap = (_CAP_MULT * nf).clamp_min(_CAP_MIN)
        cap = torch.where(degen[rows], 1, cap)
        score = torch.where(to_free & at_face[:, None], gb.abs(), -1.0)
        if bool(((score >= 0).sum(1) > cap).any()):
            rank = torch.argsort(torch.argsort(score, dim=1, descending=True), dim=1)
            release = (score >= 0) & (rank < cap[:, None])
        else:
            release = score >= 0
        lor = lor & ~release
        upr = upr & ~release
        a[rows], QA[rows], b[rows] = ar, QAr, b_ls
        lo[rows], up[rows] = lor, upr
        done[rows] = fin_r
        run[rows] = ~fin_r & ~stuck
    # the products were updated along the steps: recompute them once, exactly
    return a, _cols_product(a, Q), b, n_it, done
