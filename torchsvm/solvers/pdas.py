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
``(m, m)`` Schur complement at ``O(m f^2)`` flops instead of ``f^3 / 3``.
The method can cycle in rare cases; rows that have not converged within ``max_iter``
are reported and finished by the caller with another method.
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

    def subset(self, gi: torch.Tensor) -> _FactorStore:
        """A store for a new run whose row ``r`` starts from this store's row ``gi[r]``."""
        out = _FactorStore(gi.numel(), self.n, self.dtype, self.device, self.max_bytes)
        out.enabled, out.width = self.enabled, self.width
        out.idx, out.valid, out.L = self.idx[gi], self.valid[gi], self.L[gi]
        out.mask, out.has = self.mask[gi], self.has[gi]
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
    fac: _Factors,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Solve faces that differ a little from the factorised ones (bordered Schur system).

    With ``F0`` the factorised face, ``A = F \\ F0`` and ``D = F0 \\ F``, the system on
    ``F`` equals the system on ``F0 u A`` with the constraints ``x_D = 0`` (multipliers
    ``l``)::

        [M00  M0A  E_D] [x0]   [r0]
        [MA0  MAA  0  ] [xA] = [rA]
        [E_D^T 0   0  ] [l ]   [0 ]

    eliminated through ``M00 = L L^T``: ``W = M00^{-1} [M0A, E_D]`` and the ``(m, m)``
    Schur complement ``[[MAA, 0], [0, 0]] - [M0A, E_D]^T W``, ``m = |A| + |D|``.
    """
    R, n = free.shape
    dt, dev = rhs.dtype, rhs.device
    y = y_ext[:n]
    rows = torch.arange(R, device=dev)
    f0 = fac.idx.shape[1]
    add = free & ~fac.mask
    drop = fac.mask & ~free
    mA = int(add.sum(1).max())
    mD = int(drop.sum(1).max())
    ipA, validA = compact_mask(add, max(mA, 1), n)
    # positions (within the factorised ordering) of the dropped coordinates
    drop_pos = (
        torch.gather(torch.nn.functional.pad(drop, (0, 1)), 1, fac.idx) & fac.valid
    )
    posD, validD = compact_mask(drop_pos, max(mD, 1), f0)
    m = ipA.shape[1] + posD.shape[1]
    # B = [M0A, E_D]: (R, f0, m)
    M0A = face_fn(fac.idx, ipA)
    ED = torch.zeros((R, f0 + 1, posD.shape[1]), dtype=dt, device=dev)
    ED.scatter_(1, posD[:, None, :], 1.0)
    ED = ED[:, :f0] * validD[:, None, :]
    Bm = torch.cat([M0A, ED], dim=2)
    r0 = torch.gather(torch.nn.functional.pad(rhs, (0, 1)), 1, fac.idx) * fac.valid
    rA = torch.gather(torch.nn.functional.pad(rhs, (0, 1)), 1, ipA) * validA
    R0 = torch.stack([r0, y_ext[fac.idx]], dim=2)  # (R, f0, 2)
    RA = torch.stack([rA, y_ext[ipA]], dim=2)  # (R, mA, 2)
    sol = _tri_solve(
        fac.L, torch.cat([R0, Bm], dim=2)
    )  # one pass over L for all columns
    Y0, W = sol[..., :2], sol[..., 2:]
    C = torch.zeros((R, m, m), dtype=dt, device=dev)
    nA = ipA.shape[1]
    C[:, :nA, :nA] = face_fn(ipA, None)
    dA = _shift_diag(S, rows, ipA, validA, 1.0)
    dD = torch.where(validD, 0.0, 1.0)
    C.diagonal(dim1=1, dim2=2).add_(torch.cat([dA, dD], dim=1))
    Sch = C - Bm.transpose(1, 2) @ W
    rz = torch.cat(
        [RA, torch.zeros((R, posD.shape[1], 2), dtype=dt, device=dev)], dim=1
    )
    z, info = torch.linalg.solve_ex(Sch, rz - Bm.transpose(1, 2) @ Y0)
    X0 = Y0 - W @ z
    x = torch.zeros((R, n + 1, 2), dtype=dt, device=dev)
    keep0 = fac.valid & ~drop_pos[:, :f0]
    x.scatter_(1, torch.where(keep0, fac.idx, n)[:, :, None].expand(-1, -1, 2), X0)
    x.scatter_(1, ipA[:, :, None].expand(-1, -1, 2), z[:, :nA] * validA[:, :, None])
    x = x[:, :n]
    a, b, ok = _intercept_and_scatter(x, y, c)
    # a singular Schur complement (an added point repeats a face point): refactorise
    ok = ok & (info == 0) & torch.isfinite(a).all(1)
    return torch.where(free, a, 0.0), b, ok


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
            return v @ Qd

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
        upd = torch.zeros(rows.numel(), dtype=torch.bool, device=dev)
        if store is not None and store.enabled:
            mask0 = store.mask[rows]
            nch = (free ^ mask0).sum(1)
            lim = torch.clamp(_UPDATE_FRAC * mask0.sum(1), max=_UPDATE_MAX)
            upd = store.has[rows] & (nch <= lim) & (free.sum(1) > 0)
        aF = torch.zeros_like(ab)
        b = torch.zeros(rows.numel(), dtype=dt, device=dev)
        ok = torch.ones(rows.numel(), dtype=torch.bool, device=dev)
        if bool(upd.any()):
            ui = upd.nonzero()[:, 0]
            aU, bU, okU = _update_solve(
                face_fn,
                y_ext,
                None if Sa is None else Sa[ui],
                free[ui],
                rhs[ui],
                c[ui],
                store.get(rows[ui]),
            )
            aF[ui], b[ui] = aU, bU
            upd[ui[~okU]] = False  # refactorised below
        if not bool(upd.all()):
            fi = (~upd).nonzero()[:, 0]
            aN, bN, okN = _full_solve(
                face_fn,
                y_ext,
                None if Sa is None else Sa[fi],
                free[fi],
                rhs[fi],
                c[fi],
                max_bytes,
                store,
                rows[fi],
            )
            aF[fi], b[fi], ok[fi] = aN, bN, okN
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
