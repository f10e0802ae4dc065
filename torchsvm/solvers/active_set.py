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
the rank-30 face singular). An iteration costs two ``(P, n) @ (n, k)`` products with
the factor, a few elementwise passes and the small face factorisations; no
``(P, n) @ (n, k^2)`` product as in the interior point.

Rows not settled within ``max_iter`` (degenerate steps can stall) are reported and
finished by the caller with another method.
"""

from __future__ import annotations

import torch

from torchsvm.solvers.kkt import optimal_intercept


def _face_solve(
    W_ext: torch.Tensor,
    y_ext: torch.Tensor,
    free: torch.Tensor,
    nfree: torch.Tensor,
    rhs: torch.Tensor,
    c: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Minimiser of every row's QP on its face, with ``Q = W W^T`` (one padded batch).

    Solves the bordered system ``[[Q_FF, y_F], [y_F^T, 0]] [a_F; b] = [rhs_F; c]`` by
    LU (faces padded with identity rows to the widest one: faces are at most ``~k +
    1`` wide, so padding costs little). ``Q_FF = W_F W_F^T`` itself is singular from
    ``|F| = k + 1`` on, where the bordered matrix is not, so no Cholesky factor of
    ``Q_FF`` is used there. Faces wider than ``k + 1`` (a start with many free
    coordinates) have no unique minimiser; their rows, and rows whose LU fails, are
    solved with ``Q_FF`` plus a relative jitter above the dtype's rounding: the step is
    then a descent direction of the face problem and the ratio test cuts it.
    Returns ``a`` (zero off the face), ``b`` and a flag per row.
    """
    R, n = free.shape
    k = W_ext.shape[1]
    dt, dev = rhs.dtype, rhs.device
    f = max(int(nfree.max()), 1)
    # face indices without sorting: the j-th free coordinate goes to column j
    pos = torch.where(free, free.cumsum(1) - 1, f)
    idx = torch.full((R, f + 1), n, dtype=torch.long, device=dev)
    idx.scatter_(1, pos, torch.arange(n, device=dev).expand(R, n))
    idx = idx[:, :f]
    valid = idx < n
    Wf = W_ext[idx]  # (R, f, k); padding rows are zero
    yF = y_ext[idx]
    rF = torch.gather(torch.nn.functional.pad(rhs, (0, 1)), 1, idx)
    K = torch.zeros((R, f + 1, f + 1), dtype=dt, device=dev)
    K[:, :f, :f] = Wf @ Wf.transpose(1, 2)
    K[:, :f, :f].diagonal(dim1=1, dim2=2).add_((~valid).to(dt))
    K[:, :f, f] = yF
    K[:, f, :f] = yF
    x, info = torch.linalg.solve_ex(K, torch.cat([rF, c[:, None]], dim=1))
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
        Xs = torch.cholesky_solve(torch.stack([rF[bi], yF[bi]], dim=2), L)
        x1, x2 = Xs[..., 0], Xs[..., 1]
        yx2 = (x2 * yF[bi]).sum(1)
        bb = ((x1 * yF[bi]).sum(1) - c[bi]) / torch.where(yx2 > 0, yx2, 1.0)
        aF[bi] = x1 - bb[:, None] * x2
        b[bi] = bb
        ok[bi] = (info2 == 0) & (yx2 > 0)
    aF = torch.where(valid & has[:, None], aF, 0.0)
    b = torch.where(has, b, 0.0)
    ok = ok & torch.isfinite(b) & torch.isfinite(aF).all(1)
    a = torch.zeros((R, n + 1), dtype=dt, device=dev)
    a.scatter_(1, idx, aF)
    return a[:, :n], b, ok


def active_set_low_rank(
    W: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    A0: torch.Tensor,
    *,
    max_iter: int = 100,
    face_cap: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Feasible active-set iterations for every row, started from the feasible ``A0``.

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
    dt, dev = U.dtype, U.device
    eps = torch.finfo(dt).eps
    Wt = W.T.contiguous()
    y_ext = torch.nn.functional.pad(y, (0, 1))
    W_ext = torch.nn.functional.pad(W, (0, 0, 0, 1))
    act = U > 0
    fin = torch.isfinite(U)
    Uf = torch.where(fin, U, 0.0)
    a = torch.where(act, torch.minimum(A0.clamp_min(0.0), torch.where(fin, U, A0)), 0.0)
    lo = act & (a <= 0)
    up = act & fin & (a >= U)
    a = torch.where(up, Uf, torch.where(lo, 0.0, a))
    out_A = a.clone()
    out_b = torch.zeros(P, dtype=dt, device=dev)
    out_it = torch.full((P,), max_iter, dtype=torch.long, device=dev)
    out_ok = torch.zeros(P, dtype=torch.bool, device=dev)
    rows = torch.arange(P, device=dev)
    Ua, Ufa, acta, fina = U, Uf, act, fin
    # rows whose last step was blocked at once: free one coordinate at a time
    single = torch.zeros(P, dtype=torch.bool, device=dev)
    for it in range(max_iter):
        free = acta & ~lo & ~up
        nfree = free.sum(1)
        ab = torch.where(up, Ufa, 0.0)
        Qab = (ab @ W) @ Wt
        c = -(ab * y).sum(1)
        aF, b, ok = _face_solve(W_ext, y_ext, free, nfree, 1.0 - Qab, c)
        # ratio test along d = a* - a on the face
        d = torch.where(free, aF - a, 0.0)
        neg, pos = free & (d < 0), free & fina & (d > 0)
        r_lo = torch.where(neg, a / torch.where(neg, -d, 1.0), torch.inf)
        r_up = torch.where(pos, (Ufa - a) / torch.where(pos, d, 1.0), torch.inf)
        t = torch.minimum(r_lo.amin(1), r_up.amin(1)).clamp(0.0, 1.0)
        full = t >= 1.0
        a = torch.where(free, a + t[:, None] * d, a)
        tb = (t * (1.0 + 1e-9))[:, None]
        blk_lo = ~full[:, None] & neg & (r_lo <= tb)
        blk_up = ~full[:, None] & pos & (r_up <= tb)
        a = torch.where(blk_lo, 0.0, torch.where(blk_up, Ufa, a))
        # gradient at the new point (used on full steps: b is the face's multiplier)
        QA = (a @ W) @ Wt
        nofree = nfree == 0
        if bool(nofree.any()):
            b = torch.where(nofree, optimal_intercept(QA * y, y, Ua, None), b)
        g = QA - 1.0 + b[:, None] * y
        tg = 1e3 * eps * (1.0 + QA.abs().amax(1, keepdim=True))
        viol = (lo & (g < -tg)) | (up & (g > tg))
        done = full & ok & (viol.sum(1) == 0)
        stop = done | ~ok
        if bool(stop.any()):
            gi = rows[stop]
            out_A[gi], out_b[gi] = a[stop], b[stop]
            out_it[gi], out_ok[gi] = it + 1, done[stop]
            keep = ~stop
            if not bool(keep.any()):
                break
            rows, a, b, lo, up, g, viol, blk_lo, blk_up = (
                x[keep] for x in (rows, a, b, lo, up, g, viol, blk_lo, blk_up)
            )
            full, nfree, t = full[keep], nfree[keep], t[keep]
            Ua, Ufa, acta, fina, single = (
                x[keep] for x in (Ua, Ufa, acta, fina, single)
            )
        # partition update: blocked coordinates onto their bound (partial steps) ...
        lo = lo | blk_lo
        up = up | blk_up
        # ... or, at a face minimiser, free the most violated bound coordinates (at
        # least two: with y^T a = 0 one coordinate alone cannot move off a vertex)
        cap = (cap_face - nfree).clamp_min(2)
        to_free = viol & full[:, None]
        if bool((to_free.sum(1) > cap).any()) or bool(single.any()):
            score = torch.where(to_free, g.abs(), -1.0)
            order = torch.argsort(score, dim=1, descending=True)
            rank = torch.empty_like(order).scatter_(
                1, order, torch.arange(n, device=dev).expand_as(order)
            )
            # after a step blocked at once: the maximal violating pair of SMO, i.e. the
            # most violated coordinate of each sign of s = y * (descent direction), the
            # direction in which its move changes y^T a (+1 off the lower bound, -1 off
            # the upper one). A pair of opposite s can move together on y^T a = 0; a
            # pair picked by class alone may have equal s and be blocked at once forever
            s_pos = (y[None, :] > 0) == lo
            rank_c = torch.empty_like(order).scatter_(
                1,
                order,
                torch.where(s_pos, 1, 0).gather(1, order).cumsum(1) - 1,
            )
            rank_neg = rank - rank_c - 1
            first = torch.where(s_pos, rank_c, rank_neg) == 0
            to_free = to_free & torch.where(single[:, None], first, rank < cap[:, None])
        lo = lo & ~to_free
        up = up & ~to_free
        # a step blocked at once (t = 0) after freeing several: free one at a time
        single = single | (~full & (t <= 0))
    else:
        out_A[rows], out_b[rows] = a, b
    return out_A, out_b, out_it, out_ok
