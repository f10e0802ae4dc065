"""Batched feasible active-set method for SVM duals, warm-started along the C path (SPEC S1, S8).

Replicates of a bootstrap batch are solved for a grid of ``C``; problem ``(C_{r+1}, b)``
differs from ``(C_r, b)`` only by the scale of its bounds, and its optimal partition of
the coordinates into ``L`` (at 0), ``U`` (at the bound) and the free face ``F`` is
close to the one at ``C_r``. From a feasible start with that partition the method
repeats, for every row at once:

1. solve the equality-constrained QP on the face exactly (one batched LU factor of
   its bordered KKT matrix; for the linear kernel ``|F| <= d + 1`` at the optimum, so
   the factors are tiny);
2. move from the current point toward the face minimiser, as far as the box allows
   (ratio test); coordinates that block the step go onto their bound;
3. at a face minimiser (full step), free the bound coordinates whose gradient has the
   wrong sign, the most violated first and at most ``face_cap - |F|`` of them (at
   least one), so that faces stay nonsingular for a rank-``k`` ``Q`` (``face_cap = k +
   1``); stop when none is left.

Every step keeps ``a`` feasible and, being a step toward the minimiser of the convex
objective on an affine set containing ``a``, does not increase the dual objective,
unlike the infeasible primal-dual active-set method of :mod:`torchsvm.solvers.pdas`,
which cycles on this workload (measured: from the ``C_r`` partition, 0 of 100 problems
settled within 30 iterations at ``C >= 2^-2``; free coordinates up to 256 at once make
the rank-30 face singular). A row's state is its face (a few padded slots of
indices), the residual ``r = 1 - (Q a)_F`` on it and ``a``: a blocked step (most
steps) costs ``O(|F|^2 k + |F|^3)`` per row, the face solve included, and no pass over
the ``n`` coordinates; only rows at a face minimiser form the gradient (one ``(n, k)``
product each). The face solve is for the step from the residual, so that an inexact
factor (float32) errs in proportion to the residual and repeated full steps refine the
point (measured on the main job's fold: the same iterates as the earlier whole-row
implementation in float64, 1.3-2.5x faster; float32 rows reach a relative gap of
~1e-6 where the absolute face solve stalled at ~1e-4). No ``(P, n) @ (n, k^2)`` product as in the
interior point.

Rows not settled within ``max_iter`` (degenerate steps can stall) are reported and
finished by the caller with another method.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchsvm.solvers.kkt import duality_gap, optimal_intercept


def _face_solve(
    Wf: torch.Tensor,
    yF: torch.Tensor,
    valid: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Minimiser of every row's QP on its face, with ``Q_FF = W_F W_F^T`` (one padded batch).

    Solves the bordered system ``[[Q_FF, y_F], [y_F^T, 0]] [a_F; b] = [rhs_F; c]`` by
    LU. ``Wf`` (R, f, k), ``yF``, ``rhs`` (R, f) hold each row's face in ``f`` slots,
    ``valid`` marking the used ones (the others have zero ``Wf`` / ``yF`` rows and get an
    identity row). ``Q_FF`` itself is singular from ``|F| = k + 1`` on, where the
    bordered matrix is not, so no Cholesky factor of ``Q_FF`` is used there. Faces
    wider than ``k + 1`` (a start with many free coordinates) have no unique
    minimiser; their rows, and rows whose LU fails, are solved with ``Q_FF`` plus a
    relative jitter above the dtype's rounding: the step is then a descent direction of
    the face problem and the ratio test cuts it. Returns ``a_F`` (R, f; zero on unused
    slots), ``b``, a flag per row and whether the row's system was solved exactly (no
    jitter), so that ``Q_FF a_F + b y_F = rhs``.
    """
    R, f, k = Wf.shape
    dt, dev = rhs.dtype, rhs.device
    nfree = valid.sum(1)
    K = torch.zeros((R, f + 1, f + 1), dtype=dt, device=dev)
    K[:, :f, :f] = Wf @ Wf.transpose(1, 2)
    K[:, :f, :f].diagonal(dim1=1, dim2=2).add_((~valid).to(dt))
    K[:, :f, f] = yF
    K[:, f, :f] = yF
    x, info = torch.linalg.solve_ex(K, torch.cat([rhs, c[:, None]], dim=1))
    aF, b = x[:, :f], x[:, f]
    has = nfree > 0  # a row without free coordinates: the caller picks b
    bad = has & ((info != 0) | (nfree > k + 1) | ~torch.isfinite(x).all(1))
    ok = torch.ones(R, dtype=torch.bool, device=dev)
    if bool(bad.any()):
        bi = bad.nonzero()[:, 0]
        M = K[bi, :f, :f]
        jit = max(1e-12, 100 * torch.finfo(dt).eps)
        jit = jit * M.diagonal(dim1=1, dim2=2).abs().amax(1).clamp_min(1.0)
        M.diagonal(dim1=1, dim2=2).add_(jit[:, None] * valid[bi])
        L, info2 = torch.linalg.cholesky_ex(M)
        Xs = torch.cholesky_solve(torch.stack([rhs[bi], yF[bi]], dim=2), L)
        x1, x2 = Xs[..., 0], Xs[..., 1]
        yx2 = (x2 * yF[bi]).sum(1)
        bb = ((x1 * yF[bi]).sum(1) - c[bi]) / torch.where(yx2 > 0, yx2, 1.0)
        aF[bi] = x1 - bb[:, None] * x2
        b[bi] = bb
        ok[bi] = (info2 == 0) & (yx2 > 0)
    aF = torch.where(valid & has[:, None], aF, 0.0)
    b = torch.where(has, b, 0.0)
    ok = ok & torch.isfinite(b) & torch.isfinite(aF).all(1)
    return aF, b, ok, ~bad


def _violating_pair(
    score: torch.Tensor,
    sgn: torch.Tensor,
    y: torch.Tensor,
    top_v: torch.Tensor,
    top_i: torch.Tensor,
    rows: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The maximal violating pair of SMO for ``rows`` of a face-minimiser batch.

    ``score`` (R, n) is each coordinate's violation (``> 0``: violates), ``sgn`` the
    side of its bound (``+1`` at the upper one, ``-1`` at 0), ``top_v`` / ``top_i``
    (R, m) the ``m`` largest scores in decreasing order. Returns, per row, the most
    violating coordinate of each sign of ``s = y * (descent direction)`` (``s > 0``
    off the lower bound with ``y > 0`` or off the upper one with ``y < 0``) as
    indices (Rs, 2) and whether each violates (Rs, 2). The pair is read off the top
    list where that list holds a violating coordinate of each sign, or holds every
    violating coordinate (its last entry does not violate); only the other rows
    take a pass over their ``n`` coordinates.
    """
    m = top_v.shape[1]
    lv, li = top_v[rows], top_i[rows, :m]
    s_top = (sgn[rows].gather(1, li) * y[li]) < 0
    viol = lv > 0
    pos_in, neg_in = viol & s_top, viol & ~s_top
    whole = ~viol[:, -1]
    # the first (largest) entry of each sign in the list
    ip = pos_in.to(torch.int8).argmax(1, keepdim=True)
    i_n = neg_in.to(torch.int8).argmax(1, keepdim=True)
    pair_i = torch.cat([li.gather(1, ip), li.gather(1, i_n)], 1)
    pair_t = torch.stack([pos_in.any(1), neg_in.any(1)], 1)
    rest = ~((pair_t[:, 0] | whole) & (pair_t[:, 1] | whole))
    if bool(rest.any()):
        ri = rest.nonzero()[:, 0]
        sc = score[rows[ri]]
        s_pos = (sgn[rows[ri]] * y) < 0
        sp_v, sp_i = torch.where(s_pos, sc, -torch.inf).max(1)
        sn_v, sn_i = torch.where(s_pos, -torch.inf, sc).max(1)
        pair_i[ri] = torch.stack([sp_i, sn_i], 1)
        pair_t[ri] = torch.stack([sp_v > 0, sn_v > 0], 1)
    return pair_i, pair_t


StartFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _start_rows(
    A: torch.Tensor,
    A0: torch.Tensor,
    rows: torch.Tensor,
    act: torch.Tensor,
    fin: torch.Tensor,
    U: torch.Tensor,
    W: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Write the starts ``A0`` (R, n) of ``rows`` into ``A`` (P, n + 1), clipped to the
    box with the coordinates at a bound put exactly on it; returns ``rows``, their
    packed faces (indices, validity) and ``w = W^T a`` (R, k)."""
    n = U.shape[1]
    ac, fc, Uc = act[rows], fin[rows], U[rows]
    a = torch.where(ac, torch.minimum(A0.clamp_min(0.0), torch.where(fc, Uc, A0)), 0.0)
    lo = ac & (a <= 0)
    up = ac & fc & (a >= Uc)
    a = torch.where(up, Uc, torch.where(lo, 0.0, a))
    A[rows, :n] = a
    A[rows, n] = 0.0
    free = ac & ~lo & ~up
    f0 = max(int(free.sum(1).max()), 1) if rows.numel() else 1
    idx, valid = _pack(free, f0)
    return rows, idx, valid, a @ W


def _face_solve_grouped(
    W_ext: torch.Tensor,
    y_ext: torch.Tensor,
    idx: torch.Tensor,
    valid: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
    nfree: torch.Tensor,
    cap: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`_face_solve` on groups of rows of similar face width (faces packed left
    in their slots ``idx``, rows of ``W_ext`` / ``y_ext``): each group is padded only
    to its own widest face, and gathers only those slots' rows of ``W_ext``."""
    R, f = idx.shape
    edges = sorted(
        {e for e in (cap // 4, cap // 2, (3 * cap) // 4, cap + 2) if 2 <= e < f}
    )
    if not edges:
        return _face_solve(W_ext[idx], y_ext[idx], valid, rhs, c)
    edges.append(f)
    grp = torch.bucketize(nfree, torch.tensor(edges, device=nfree.device))
    d = torch.zeros_like(rhs)
    b = torch.zeros_like(c)
    ok = torch.ones(R, dtype=torch.bool, device=rhs.device)
    exact = torch.ones(R, dtype=torch.bool, device=rhs.device)
    for g, e in enumerate(edges):
        r = (grp == g).nonzero()[:, 0]
        if r.numel() == 0:
            continue
        if r.numel() == R:
            ig = idx[:, :e]
            dg, b, ok, exact = _face_solve(
                W_ext[ig], y_ext[ig], valid[:, :e], rhs[:, :e], c
            )
            d[:, :e] = dg
            break
        ig = idx[r, :e]
        d[r, :e], b[r], ok[r], exact[r] = _face_solve(
            W_ext[ig], y_ext[ig], valid[r, :e], rhs[r, :e], c[r]
        )
    return d, b, ok, exact


def _pack_slots(
    idx: torch.Tensor, valid: torch.Tensor, n: int, vals: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Move each row's used slots to the left (in order) and drop empty columns;
    ``vals`` (R, f) moves with them."""
    R = idx.shape[0]
    width = max(int(valid.sum(1).max()), 1) if R else 1
    pos = torch.where(valid, valid.cumsum(1) - 1, width)
    out = torch.full((R, width + 1), n, dtype=idx.dtype, device=idx.device)
    out.scatter_(1, pos, torch.where(valid, idx, n))
    out = out[:, :width].contiguous()
    ov = torch.zeros((R, width + 1), dtype=vals.dtype, device=vals.device)
    ov.scatter_(1, pos, torch.where(valid, vals, 0.0))
    return out, out < n, ov[:, :width]


def _pack(mask: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Column indices of the True entries of each row of ``mask`` (R, n), packed left
    into ``width`` slots (padding index ``n``), and the slots' validity."""
    R, n = mask.shape
    pos = torch.where(mask, mask.cumsum(1) - 1, width)
    idx = torch.full((R, width + 1), n, dtype=torch.long, device=mask.device)
    idx.scatter_(1, pos, torch.arange(n, device=mask.device).expand(R, n))
    idx = idx[:, :width]
    return idx, idx < n


def _null_proj(
    x: torch.Tensor,
    B: torch.Tensor,
    Gj: torch.Tensor | None,
    Uq: torch.Tensor | None,
) -> torch.Tensor:
    """``x`` (R, s) minus its part in the range of ``B`` (R, s, m): by the orthonormal
    basis ``Uq`` of that range, or else by the Cholesky factor ``Gj`` of the
    (jittered) Gram matrix."""
    if Uq is not None:
        return x - (Uq @ (Uq.transpose(1, 2) @ x[..., None]))[..., 0]
    assert Gj is not None
    c = torch.cholesky_solve(B.transpose(1, 2) @ x[..., None], Gj)
    return x - (B @ c)[..., 0]


def _purify_windows(
    B: torch.Tensor,
    uF: torch.Tensor,
    aF: torch.Tensor,
    valid: torch.Tensor,
    cap: int,
    steps: int,
    exact: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Purification steps on independent windows (R, s) of free coordinates.

    ``B`` (R, s, k + 1) holds each slot's ``[w_i, y_i]`` (zero on unused slots), ``uF``
    / ``aF`` its bound and value. Each window with more than ``cap`` valid slots steps
    along the null space of its own ``B^T`` (the projection of the direction to its
    nearest vertex, signed so that ``1^T v >= 0``) as far as the box allows, so every
    step fixes at least one coordinate of every live window; the other coordinates
    (other windows included) do not move, so ``W^T a`` and ``y^T a`` stay fixed.
    The projection uses ``B^T B`` (downdated as slots leave) with a relative jitter of
    ``1e-12``, refined once; with ``exact``, an SVD of ``B`` at every step instead,
    whose singular values below ``1e-9`` of the largest count as null (for windows
    at or below ``k + 1`` slots, where a direction the jitter takes for null would
    move ``W^T a``). Returns the new values and validity of the slots.
    """
    dt, dev = aF.dtype, aF.device
    k1 = B.shape[2]
    finF = torch.isfinite(uF)
    eye = torch.eye(k1, dtype=dt, device=dev)
    rel_jit = max(1e-12, 100 * torch.finfo(dt).eps)
    G = B.transpose(1, 2) @ B
    # windows whose [W_S, y_S] has no null space left (no direction to step along)
    flat = torch.zeros(B.shape[0], dtype=torch.bool, device=dev)
    for it in range(steps):
        live = (valid.sum(1) > cap) & ~flat
        if not bool(live.any()):
            break
        # toward the nearest vertex, projected onto null([W_F, y_F]^T)
        half = torch.where(finF, uF / 2, torch.inf)
        t = torch.where(valid, torch.where(aF < half, -aF, uF - aF), 0.0)
        t = torch.where(finF | (aF < half), t, -aF)
        Gj = Uq = None
        if exact:
            Uq, sv, _ = torch.linalg.svd(B, full_matrices=False)
            Uq = Uq * (sv > 1e-9 * sv[:, :1])[:, None, :]
        else:
            jit = rel_jit * G.diagonal(dim1=1, dim2=2).amax(1).clamp_min(1.0)
            Gj, info = torch.linalg.cholesky_ex(G + jit[:, None, None] * eye)
            if bool((info != 0).any()):
                # downdates drifted, or a singular window in float32: factor afresh,
                # with a larger jitter where needed (the refinement below, and the
                # active set's certificate after the purification, absorb it)
                G = B.transpose(1, 2) @ B
                for _ in range(4):
                    Gj, info = torch.linalg.cholesky_ex(G + jit[:, None, None] * eye)
                    if not bool((info != 0).any()):
                        break
                    jit = torch.where(info != 0, jit * 1e3, jit)
        v = _null_proj(t, B, Gj, Uq)
        # t (nearly) in the range of B: a fixed pseudo-random direction instead
        small = v.norm(dim=1) <= 1e-9 * t.norm(dim=1).clamp_min(1e-300)
        if bool((small & live).any()):
            e = torch.sin(
                torch.arange(t.shape[1], dtype=dt, device=dev) * 12.9898 + float(it)
            ).expand_as(t)
            e = torch.where(valid, e, 0.0)
            ve = _null_proj(e, B, Gj, Uq)
            none = small & live & (ve.norm(dim=1) <= 1e-9 * e.norm(dim=1))
            flat = flat | none
            live = live & ~none
            v = torch.where(small[:, None], ve, v)
        # one step of refinement: the jitter and a window's conditioning leave B^T v
        # off zero by more than rounding, and W^T a would drift by it
        v = _null_proj(v, B, Gj, Uq)
        v = torch.where(valid & live[:, None], v, 0.0)
        v = torch.where(v.sum(1, keepdim=True) < 0, -v, v)  # 1^T v >= 0
        neg, pos = v < 0, finF & (v > 0)
        r_lo = torch.where(neg, aF / torch.where(neg, -v, 1.0), torch.inf)
        r_up = torch.where(pos, (uF - aF) / torch.where(pos, v, 1.0), torch.inf)
        step = torch.minimum(r_lo.amin(1), r_up.amin(1))
        ok = live & torch.isfinite(step) & (v.abs().amax(1) > 0)
        step = torch.where(ok, step, 0.0)
        aN = aF + step[:, None] * v
        tb = (step * (1.0 + 1e-9))[:, None]
        hit_lo = ok[:, None] & neg & (r_lo <= tb)
        hit_up = ok[:, None] & pos & (r_up <= tb)
        aN = torch.where(hit_lo, 0.0, torch.where(hit_up, uF, aN))
        aF = torch.where(valid, aN, aF)
        gone = hit_lo | hit_up
        if not bool(gone.any()):
            break
        # downdate G by the slots that left (a few per step): O(k^2) each
        gi, gj = gone.nonzero(as_tuple=True)
        bg = B[gi, gj]
        G.index_add_(0, gi, -(bg[:, :, None] * bg[:, None, :]))
        B[gi, gj] = 0.0
        valid = valid & ~gone
    return aF, valid


def purify_start(
    W: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    A0: torch.Tensor,
    cap: int,
    max_steps: int | None = None,
    only_above: int | None = None,
) -> torch.Tensor:
    """Move a feasible point to one with at most ``cap`` free coordinates per row,
    without increasing the dual objective and without changing ``Q a`` or ``y^T a``.

    With ``Q = W W^T`` of rank ``k``, a point whose face ``F`` (coordinates strictly
    inside the box) has more than ``k + 1`` coordinates can move along the null space of
    ``[W_F, y_F]^T``: ``W^T a`` and ``y^T a`` stay fixed, so the objective
    ``1/2 a^T Q a - 1^T a`` changes only linearly, by ``-1^T v`` per unit step. A step
    takes ``v`` = the projection onto that null space of the direction to the nearest
    vertex (every free coordinate to its nearer bound), with the sign for which
    ``1^T v >= 0``, and goes as far as the box allows: at least one coordinate reaches
    its bound and leaves the face (purification, as in a crossover from an interior
    point). An interior point on a degenerate problem leaves such faces (measured on
    churn: 2835 rows, ``k = 13``, ~1100 free coordinates per problem; on nursery's
    inner CV every one of ~10500 coordinates); the active set would need one
    ``O(|F|^3)`` face solve per coordinate fixed and ``O(|F|^2)`` memory per row (21 GB
    on churn's 1100 problems).

    The face is cut into windows of ``2 cap`` coordinates, and every window steps
    along the null space of its own ``[W_S, y_S]^T`` (moving only its own
    coordinates, which keeps ``W^T a`` and ``y^T a`` of the whole row) until it has
    ``cap`` free coordinates left; the survivors of two windows then form one window,
    and so on (a tree). A face of ``f`` coordinates takes about ``cap log2(f / cap)``
    batched steps of ``O(f k)`` work each, where steps along the whole face fixed one
    coordinate (or a few) per step: ``f - cap`` steps of ``O(f k)`` each (nursery's
    inner CV, 11 rows of ~10500 free coordinates: 95 CPU s that way, 2 s by windows;
    docs/benchmarks.md, "windowed purification of the linear inner CV"). The last window goes on below ``cap`` while its
    ``[W_F, y_F]`` has a null space (SVD, singular values below ``1e-9`` of the largest
    count as null): with one-hot columns (a sum of columns per attribute) faces of
    ``k + 1`` lattice rows are rank-deficient, and from such starts the active set
    cycled on ties at rounding level (nursery: 100 iterations without a certificate).

    Parameters
    ----------
    W : tensor of shape (n, k)
    y : tensor of shape (n,)
    U : tensor of shape (P, n)
        Upper bounds (``inf``: none).
    A0 : tensor of shape (P, n)
        Feasible point (``0 <= a <= u``, ``y^T a = 0``).
    cap : int
        Rows with more free coordinates than this are purified down to it (at least
        ``k + 1``, below which the null space is empty in general).
    max_steps : int, optional
        Bound on the steps of each window (default: until it has ``cap`` left).
    only_above : int, optional
        Purify only the rows with more free coordinates than this (default ``cap``);
        the others are returned as they are.

    Returns
    -------
    tensor of shape (P, n)
        The purified point (rows at or below ``cap`` unchanged).

    On the CPU the rows go in blocks of :func:`~torchsvm.solvers.ipm.row_block_size`
    (each row's windows are its own): measured on churn's bootstrap batch (5500 rows,
    n = 2582), the whole batch took 66 CPU s, half of it in the kernel zeroing fresh
    pages of its large temporaries, and blocks 34 CPU s (docs/benchmarks.md, "The
    probabilities experiment's bootstrap batch on churn").
    """
    from torchsvm.solvers.ipm import row_block_size

    P, n = U.shape
    rb = row_block_size(P, n, A0.dtype, A0.device)
    if rb < P:
        return torch.cat(
            [
                purify_start(
                    W, y, U[s : s + rb], A0[s : s + rb], cap, max_steps, only_above
                )
                for s in range(0, P, rb)
            ]
        )
    k = W.shape[1]
    cap = max(int(cap), k + 1)
    fin = torch.isfinite(U)
    free = (A0 > 0) & (A0 < torch.where(fin, U, torch.inf))
    nf = free.sum(1)
    rows = (nf > max(cap, cap if only_above is None else int(only_above))).nonzero()[
        :, 0
    ]
    if rows.numel() == 0:
        return A0
    A = A0.clone()
    R = rows.numel()
    idx, valid = _pack(free[rows], int(nf[rows].max()))
    W_ext = torch.nn.functional.pad(W, (0, 0, 0, 1))
    y_ext = torch.nn.functional.pad(y, (0, 1))
    U_ext = torch.nn.functional.pad(U[rows], (0, 1))
    a_ext = torch.nn.functional.pad(A[rows], (0, 1))
    aF = a_ext.gather(1, idx)
    s = 2 * cap
    last = False
    while True:
        # write back the slots that left, then pack the free ones left and cut them
        # into windows of s slots; the last window (every row's face fits in one, or
        # a level fixed nothing) goes on below cap while [W_F, y_F] has a null space:
        # one-hot features leave rank-deficient faces of k + 1 coordinates, from
        # which the active set cycled on ties (nursery)
        a_ext.scatter_(1, idx, torch.where(idx < n, aF, 0.0))
        width = max(int(valid.sum(1).max()), 1)
        last = last or width <= s
        ws = width if last else s
        nw = -(-width // ws)
        order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)
        order = torch.nn.functional.pad(order, (0, max(0, nw * ws - order.shape[1])))
        order = order[:, : nw * ws]
        inside = torch.arange(nw * ws, device=A.device) < valid.shape[1]
        idx = torch.where(inside, idx.gather(1, order), n)
        aF = torch.where(inside, aF.gather(1, order), 0.0)
        valid = inside & valid.gather(1, order)
        idx = torch.where(valid, idx, n)
        iw, vw = idx.view(R * nw, ws), valid.view(R * nw, ws)
        B = torch.cat([W_ext[iw], y_ext[iw][..., None]], dim=2) * vw[..., None]
        uw = U_ext.gather(1, idx).view(R * nw, ws)
        steps = (width if last else s - cap) if max_steps is None else int(max_steps)
        aw, vw2 = _purify_windows(
            B,
            uw,
            aF.reshape(R * nw, ws),
            vw,
            0 if last else cap,
            steps,
            exact=last,
        )
        aF, valid2 = aw.view(R, nw * ws), vw2.view(R, nw * ws)
        left = int(valid.sum()) - int(valid2.sum())
        valid = valid2
        if last:
            break
        last = left == 0  # no progress by windows: one window per row
    a_ext.scatter_(1, idx, torch.where(idx < n, aF, 0.0))
    A[rows] = a_ext[:, :n]
    return A


def use_kernel(kernel: str, device: torch.device) -> bool:
    """Whether ``kernel`` (``"auto"``, ``"numba"``, ``"torch"``) selects the compiled
    per-row kernel for tensors on ``device``; ``"numba"`` where it cannot run raises."""
    if kernel == "torch":
        return False
    if kernel not in ("auto", "numba"):
        raise ValueError(f"active set kernel {kernel!r}: 'auto', 'numba' or 'torch'")
    from torchsvm.solvers.active_set_kernel import available

    ok = device.type == "cpu" and available()
    if kernel == "numba" and not ok:
        raise RuntimeError("active set kernel 'numba' needs numba and CPU tensors")
    return ok


def active_set_low_rank(
    W: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    A0: torch.Tensor,
    *,
    max_iter: int = 100,
    face_cap: int | None = None,
    tol: float | None = None,
    parent: torch.Tensor | None = None,
    make_start: StartFn | None = None,
    kernel: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Feasible active-set iterations for every row, started from the feasible ``A0``.

    The state of a row is its face (the indices of its free coordinates, in a few
    padded slots), the residual ``r = 1 - (Q a)_F`` on it and ``a`` itself;
    coordinates off the face sit exactly at ``0`` or at ``u``. A step that is blocked
    (most steps) touches only the face, no pass over the ``n`` coordinates: the face
    solve (the face's rows of ``W`` gathered once, in width groups) and ``r`` carried
    by the face equation ``Q_FF d = r - b y_F``, so ``r - t (r - b y_F)`` after a step
    ``t d`` (``O(|F|)``; rows solved with a jitter, whose ``d`` does not satisfy it,
    recompute ``r``). Only at a face minimiser (full step) is the gradient ``Q a - 1 +
    b y`` formed, for those rows alone, to certify them or to free violating
    coordinates; ``r`` is then taken from it afresh so that its updates do not drift.
    The certificate (the gradient and the duality gap) never uses ``r``.

    Parameters
    ----------
    W : tensor of shape (n, k)
        ``Q = W W^T`` (shared).
    y : tensor of shape (n,)
        Labels in {-1, +1}.
    U : tensor of shape (P, n)
        Upper bounds (``0`` fixes a coordinate at zero; ``inf``: no upper bound).
    A0 : tensor of shape (P, n)
        Feasible start (``0 <= a <= u``, ``y^T a = 0``); its coordinates at 0 / at
        ``u`` / strictly between give the starting partition.
    max_iter : int
    face_cap : int, optional
        Largest face grown by freeing coordinates (default ``k + 1``).
    tol : float, optional
        Relative duality gap (:func:`~torchsvm.solvers.kkt.duality_gap`) a row must
        reach to count as converged. A row is first settled when no bound coordinate
        violates its optimality condition by more than ``1e3`` units of rounding of
        ``Q a``; in float32 that can leave a gap of ~1e-2 at large ``C``, so a row whose
        gap is above ``tol`` goes on with a threshold 30x smaller (down to one unit of
        rounding), and is reported unconverged if even that does not reach ``tol``.
        None: no gap test (float64 rows settle at gaps of ~1e-12).
    parent : tensor of shape (P,), optional
        Pipelining along the ``C`` path: row ``q`` with ``parent[q] = p >= 0`` starts
        as soon as row ``p`` stops, from ``make_start(q_rows, A[p_rows])`` (its
        ``A0`` row is ignored); rows with ``parent < 0`` start at once. A row that
        settles early passes its point on without waiting for the slowest row of its
        stage, so the batch stays full and the number of batched iterations is that
        of the longest chain, not the sum of every stage's slowest row (measured on
        the main job's fold: 215 instead of 305). ``max_iter`` counts each row's own
        iterations.
    make_start : callable, optional
        ``make_start(rows, A_parent)`` -> feasible starts, tensor of shape
        ``(len(rows), n)`` (needed with ``parent``).
    kernel : {"auto", "numba", "torch"}
        ``numba``: the compiled per-row kernel
        (:mod:`torchsvm.solvers.active_set_kernel`, CPU tensors, numba installed);
        ``torch``: the batched torch iterations below (any device); ``auto``: the
        kernel for CPU tensors where numba is importable, else torch.

    Returns
    -------
    A : tensor of shape (P, n)
        Last iterate (feasible).
    b : tensor of shape (P,)
        Intercept of the last face solve.
    n_iter : tensor of shape (P,)
    converged : tensor of shape (P,), bool
        At a face minimiser with no coordinate violating its optimality condition.
    """
    P, n = U.shape
    k = W.shape[1]
    cap_face = k + 1 if face_cap is None else int(face_cap)
    if use_kernel(kernel, U.device):
        from torchsvm.solvers.active_set_kernel import active_set_rows

        return active_set_rows(
            W,
            y,
            U,
            A0,
            max_iter=max_iter,
            face_cap=cap_face,
            tol=tol,
            parent=parent,
            make_start=make_start,
        )
    dt, dev = U.dtype, U.device
    eps = torch.finfo(dt).eps
    Wt = W.T.contiguous()
    y_ext = torch.nn.functional.pad(y, (0, 1))
    W_ext = torch.nn.functional.pad(W, (0, 0, 0, 1))
    act = U > 0
    fin = torch.isfinite(U)
    # the padding column n: bound 0, value 0 (writes of unused slots land there)
    U_ext = torch.nn.functional.pad(torch.where(act, U, 0.0), (0, 1))
    A = torch.zeros((P, n + 1), dtype=dt, device=dev)
    A_flat, U_flat = A.view(-1), U_ext.view(-1)
    if parent is None:
        pending = torch.zeros(P, dtype=torch.bool, device=dev)
    else:
        if make_start is None:
            raise ValueError("active_set_low_rank: parent needs make_start")
        parent = parent.to(device=dev, dtype=torch.long)
        pending = parent >= 0
    first = (~pending).nonzero()[:, 0]
    rows, idx, valid, w = _start_rows(A, A0[first], first, act, fin, U, W)
    # the residual 1 - (Q a)_F of each face slot, the right-hand side of the face
    # solves: afresh at starts and face minimisers, updated by the face equation after
    # the other steps
    r = torch.where(valid, 1.0 - (W_ext[idx] * w[:, None, :]).sum(2), 0.0)
    out_b = torch.zeros(P, dtype=dt, device=dev)
    out_it = torch.full((P,), max_iter, dtype=torch.long, device=dev)
    out_ok = torch.zeros(P, dtype=torch.bool, device=dev)
    R0 = rows.numel()
    b = torch.zeros(R0, dtype=dt, device=dev)
    # rows whose last step was blocked at once: free one pair at a time
    single = torch.zeros(R0, dtype=torch.bool, device=dev)
    # violation threshold (units of rounding of Q a) and the y^T a still to correct
    tgs = torch.full((R0,), 1e3, dtype=dt, device=dev)
    c_corr = torch.zeros(R0, dtype=dt, device=dev)
    # each row's own iteration count
    n_it = torch.zeros(R0, dtype=torch.long, device=dev)
    while rows.numel():
        lin = rows[:, None] * (n + 1) + idx  # flat positions in A / U_ext
        uF = U_flat.take(lin)
        aF = A_flat.take(lin)
        nfree = valid.sum(1)
        # the step d to the face minimiser, solved for directly from the residual
        # r = 1 - (Q a)_F (y_F^T d = 0): an inexact factor (float32) then errs in
        # proportion to the residual, so repeated full steps refine the point.
        # faces solved in groups of similar width (the face is packed left): padding
        # every row to the widest face made each LU that wide, and an LU costs
        # ~width^3 (measured on the main job's fold: mean width 26 for a mean face of
        # 16; an LU batch of width 27 took 18 ms, of width 14 3 ms)
        d, bS, ok, exact = _face_solve_grouped(
            W_ext, y_ext, idx, valid, r, c_corr, nfree, cap_face
        )
        # ratio test along d on the face
        d = torch.where(valid, d, 0.0)
        finF = torch.isfinite(uF)
        neg, pos = valid & (d < 0), valid & finF & (d > 0)
        r_lo = torch.where(neg, aF / torch.where(neg, -d, 1.0), torch.inf)
        r_up = torch.where(pos, (uF - aF) / torch.where(pos, d, 1.0), torch.inf)
        t = torch.minimum(r_lo.amin(1), r_up.amin(1)).clamp(0.0, 1.0)
        full = t >= 1.0
        c_corr = c_corr * (1.0 - t)
        aN = aF + t[:, None] * d
        tb = (t * (1.0 + 1e-9))[:, None]
        blk_lo = ~full[:, None] & neg & (r_lo <= tb)
        blk_up = ~full[:, None] & pos & (r_up <= tb)
        aN = torch.where(blk_lo, 0.0, torch.where(blk_up, uF, aN))
        aN = torch.where(valid, aN, 0.0)
        A_flat.index_put_((lin.view(-1),), aN.view(-1))
        # the new residual: on the face, Q_FF d = r - b y_F (exact solves), so the
        # step t d leaves r - t (r - b y_F), without the face's (R, f, k) rows of W
        # (the coordinates put on a bound move by t d up to rounding)
        r = r - t[:, None] * (r - bS[:, None] * y_ext[idx])
        valid = valid & ~(blk_lo | blk_up)
        r = torch.where(valid, r, 0.0)
        if not bool(exact.all()):
            # jittered solves (wide or singular faces): the residual afresh
            je = (~exact).nonzero()[:, 0]
            wj = A[rows[je], :n] @ W
            r[je] = torch.where(
                valid[je], 1.0 - (W_ext[idx[je]] * wj[:, None, :]).sum(2), 0.0
            )
        b = torch.where(nfree > 0, bS, b)
        # at face minimisers: the gradient, certification, coordinates to free
        stop = ~ok
        fr = (full & ok).nonzero()[:, 0]
        new_idx = None
        if fr.numel():
            rf = rows[fr]
            Af = A[rf, :n]
            Uf = U[rf]
            QA = (Af @ W) @ Wt
            nof = nfree[fr] == 0
            bf = b[fr]
            if bool(nof.any()):
                ni = nof.nonzero()[:, 0]
                bf[ni] = optimal_intercept(QA[ni] * y, y, Uf[ni], None)
                b[fr] = bf
            # (the (R, n) passes below are most of a face minimiser's cost, so they
            # are few: each full-length temporary is a pass over memory)
            g = torch.addcmul(QA, bf[:, None], y).sub_(1.0)
            qmin, qmax = torch.aminmax(QA, dim=1)
            scale_q = 1.0 + torch.maximum(qmax, -qmin)
            tg = tgs[fr] * eps * scale_q
            # the face's own residual (zero up to the face solve's rounding)
            idx_f, valid_f = idx[fr], valid[fr]
            idx_fc = idx_f.clamp_max(n - 1)
            res = torch.where(valid_f, g.gather(1, idx_fc), 0.0)
            # r afresh from Q a, so that its updates do not drift
            r[fr] = torch.where(valid_f, 1.0 - QA.gather(1, idx_fc), 0.0)
            # sgn = sign(a - u / 2): +1 at the upper bound, -1 at 0 (also for an
            # infinite bound, never reached), 0 where u = 0 (a coordinate fixed at 0);
            # v = sgn g > 0 is the size of a violation of the optimality condition
            sgn = torch.sub(Af, Uf, alpha=0.5).sign_()
            # score = v - tg > 0: the coordinate violates; face slots are excluded
            score = g.mul_(sgn).sub_(tg[:, None])
            score = torch.nn.functional.pad(score, (0, 1))
            score.scatter_(1, torch.where(valid_f, idx_f, n), -torch.inf)
            score = score[:, :n]
            # free the most violated bound coordinates (at least two: with y^T a = 0
            # one coordinate alone cannot move off a vertex); after a step blocked at
            # once, the maximal violating pair of SMO: the most violated coordinate of
            # each sign of s = y * (descent direction), the direction in which its
            # move changes y^T a (+1 off the lower bound, -1 off the upper one). A pair
            # of opposite s can move together on y^T a = 0; a pair picked by class
            # alone may have equal s and be blocked at once forever
            m = (cap_face - nfree[fr]).clamp_min(2)
            mmax = int(min(int(m.max()), n))
            top_v, top_i = torch.topk(score, max(mmax, 1), dim=1)
            # no violating coordinate and the face residual at rounding level
            done_f = (top_v[:, 0] <= 0) & (res.abs() <= tg[:, None]).all(1)
            # the drift of y^T a (rounding) is corrected by the next face solves
            c_corr[fr] = -(Af @ y)
            if tol is not None and bool(done_f.any()):
                ci = done_f.nonzero()[:, 0]
                # the gap at the face's intercept bounds the gap at the optimal one
                # from above (no sort of the n breakpoints); only rows it does not
                # certify get the optimal intercept
                rel = duality_gap(Af[ci], QA[ci], y, Uf[ci], None, b=bf[ci])[2]
                short = rel > tol
                if bool(short.any()):
                    sc = ci[short]
                    rel[short] = duality_gap(Af[sc], QA[sc], y, Uf[sc], None)[2]
                    short = rel > tol
                if bool(short.any()):
                    si_ = ci[short]
                    at_min = tgs[fr[si_]] <= 1.0
                    # unconverged at the finest threshold: report, stop
                    ok[fr[si_[at_min]]] = False
                    tgs[fr[si_]] = (tgs[fr[si_]] / 30.0).clamp_min(1.0)
                    done_f[si_[~at_min]] = False
            stop[fr] = stop[fr] | done_f
            take = (top_v > 0) & (torch.arange(top_v.shape[1], device=dev) < m[:, None])
            if mmax < 2:
                top_i = torch.nn.functional.pad(top_i, (0, 2 - mmax), value=0)
                take = torch.nn.functional.pad(take, (0, 2 - mmax), value=False)
                mmax = 2
            new_i, new_t = top_i, take
            sgl = single[fr].nonzero()[:, 0]
            if sgl.numel():
                # s > 0: off the lower bound with y > 0 or off the upper with y < 0
                pair_i, pair_t = _violating_pair(score, sgn, y, top_v, top_i, sgl)
                new_i = new_i.clone()
                new_t = new_t.clone()
                new_i[sgl] = torch.nn.functional.pad(pair_i, (0, mmax - 2), value=0)
                new_t[sgl] = torch.nn.functional.pad(pair_t, (0, mmax - 2), value=False)
            new_t = new_t & ~done_f[:, None]
            new_idx = (fr, new_i, new_t, 1.0 - QA.gather(1, new_i))
        n_it = n_it + 1
        # a row at its own iteration cap stops unconverged
        capped = (n_it >= max_iter) & ~stop
        ok = ok & ~capped
        stop = stop | capped
        if bool(stop.any()):
            si = stop.nonzero()[:, 0]
            out_b[rows[si]] = b[si]
            out_it[rows[si]] = n_it[si]
            out_ok[rows[si]] = ok[si]
        # a step blocked at once (t = 0) after freeing several: free one at a time
        single = single | (~full & (t <= 0))
        # append the freed coordinates as new slots (packed below)
        if new_idx is not None:
            fr, new_i, new_t, new_r = new_idx
            add_i = torch.full(
                (idx.shape[0], new_i.shape[1]), n, dtype=idx.dtype, device=dev
            )
            add_i[fr] = torch.where(new_t, new_i, n)
            add_r = torch.zeros((idx.shape[0], new_i.shape[1]), dtype=dt, device=dev)
            add_r[fr] = torch.where(new_t, new_r, 0.0)
            idx = torch.cat([idx, add_i], 1)
            valid = torch.cat([valid, add_i < n], 1)
            r = torch.cat([r, add_r], 1)
        keep = ~stop
        if bool(stop.any()):
            rows_stop = rows[stop]
            rows, idx, valid, r, b, single, tgs, c_corr, n_it = (
                x[keep] for x in (rows, idx, valid, r, b, single, tgs, c_corr, n_it)
            )
            if parent is not None and bool(pending.any()):
                # the stopped rows' children start now, from their points
                just = torch.zeros(P + 1, dtype=torch.bool, device=dev)
                just[rows_stop] = True
                q = (pending & just[parent.clamp_min(0)]).nonzero()[:, 0]
                if q.numel():
                    pending[q] = False
                    A0q = make_start(q, A[parent[q], :n])  # type: ignore[misc]
                    rq, iq, vq, wq = _start_rows(A, A0q, q, act, fin, U, W)
                    width = max(idx.shape[1], iq.shape[1])
                    pad = torch.nn.functional.pad
                    idx = torch.cat(
                        [
                            pad(idx, (0, width - idx.shape[1]), value=n),
                            pad(iq, (0, width - iq.shape[1]), value=n),
                        ]
                    )
                    valid = torch.cat(
                        [
                            pad(valid, (0, width - valid.shape[1]), value=False),
                            pad(vq, (0, width - vq.shape[1]), value=False),
                        ]
                    )
                    rrq = torch.where(
                        vq, 1.0 - (W_ext[iq] * wq[:, None, :]).sum(2), 0.0
                    )
                    r = torch.cat(
                        [
                            pad(r, (0, width - r.shape[1])),
                            pad(rrq, (0, width - rrq.shape[1])),
                        ]
                    )
                    m = q.numel()
                    rows = torch.cat([rows, rq])
                    b = torch.cat([b, torch.zeros(m, dtype=dt, device=dev)])
                    single = torch.cat(
                        [single, torch.zeros(m, dtype=torch.bool, device=dev)]
                    )
                    tgs = torch.cat([tgs, torch.full((m,), 1e3, dtype=dt, device=dev)])
                    c_corr = torch.cat([c_corr, torch.zeros(m, dtype=dt, device=dev)])
                    n_it = torch.cat(
                        [n_it, torch.zeros(m, dtype=torch.long, device=dev)]
                    )
        if not rows.numel():
            break
        # pack the used slots to the left and drop empty columns
        idx, valid, r = _pack_slots(idx, valid, n, r)
    return A[:, :n].contiguous(), out_b, out_it, out_ok
