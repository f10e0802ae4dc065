"""Active-set polish of feasible dual points by face-restricted CG (SPEC S1).

Used after ADMM checks and after the interior point's rounding: each round fixes the
binding bound coordinates and runs conjugate gradients on the remaining face, on
compact rows (see :func:`polish`).
"""

from __future__ import annotations

import math

import torch

from torchsvm.solvers.factor import SharedFactor
from torchsvm.solvers.kkt import project_face
from torchsvm.solvers.pdas import compact_mask


def _face_cg(
    A: torch.Tensor,
    G: torch.Tensor,
    U: torch.Tensor,
    y: torch.Tensor,
    Sd: torch.Tensor | None,
    tol_a: torch.Tensor,
    m: torch.Tensor,
    op: torch.Tensor,
    low_rank: bool,
    steps: int,
    W_ext: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Conjugate gradients on the faces ``m`` of compact rows (see :func:`polish`).

    ``op`` holds each row's slice of ``Q``: when ``low_rank``, the face indices (R, f)
    into ``W_ext`` (the factor ``W`` with ``Q = W W^T`` plus a zero row that absorbs the
    padding), else ``Q_FF`` of shape (R, f, f). ``Sd`` is the
    gathered diagonal shift. Returns the final ``A``, ``G``, face ``m`` and a flag per
    row saying whether CG solved its face (residual at rounding level).
    """
    fin = torch.finfo(A.dtype)
    tiny, res_tol = fin.tiny, 1e3 * fin.eps
    inf = torch.full((), math.inf, dtype=A.dtype, device=A.device)
    R = A.shape[0]
    rows = torch.arange(R, device=A.device)
    outA, outG, outm = A.clone(), G.clone(), m.clone()
    solved_out = torch.zeros(R, dtype=torch.bool, device=A.device)
    restart = torch.ones(R, dtype=torch.bool, device=A.device)
    p = torch.zeros_like(A)
    rr = torch.zeros(R, dtype=A.dtype, device=A.device)
    rr0: torch.Tensor | None = None
    for k in range(steps):
        mf = m.to(A.dtype)
        my = mf * y
        nf = mf.sum(1, keepdim=True).clamp_min(1.0)
        r = -(mf * G)
        r = r - my * ((my * r).sum(1, keepdim=True) / nf)
        rr_new = (r * r).sum(1)
        if rr0 is None:
            rr0 = rr_new.clamp_min(tiny)
        beta = torch.where(restart | (rr <= 0), 0.0, rr_new / rr.clamp_min(tiny))
        p = mf * (r + beta[:, None] * p)
        p = p - my * ((my * p).sum(1, keepdim=True) / nf)
        rr = rr_new
        if low_rank:
            # W_F^T p as an embedding bag over the shared (cache-resident) W, then
            # W_F (W_F^T p) as one GEMM against W^T and a gather: no (R, f, k) copy
            t_k = torch.nn.functional.embedding_bag(
                op, W_ext, per_sample_weights=p, mode="sum"
            )
            Hp = torch.gather(t_k @ W_ext.T, 1, op)
        else:
            Hp = (op @ p[:, :, None])[:, :, 0]
        if Sd is not None:
            Hp = Hp + Sd * p
        pHp = (p * Hp).sum(1)
        t_cg = torch.where(pHp > 0, (r * p).sum(1) / pHp.clamp_min(tiny), inf)
        ratio_lo = torch.where(p < 0, A / (-p).clamp_min(tiny), inf)
        ratio_up = torch.where(p > 0, (U - A) / p.clamp_min(tiny), inf)
        t_max = torch.minimum(ratio_lo, ratio_up).amin(1)
        hit = t_max <= t_cg
        t = torch.where(hit, t_max, t_cg)
        t = torch.where(torch.isfinite(t) & (rr > 0), t, 0.0)
        A = torch.minimum((A + t[:, None] * p).clamp_min(0.0), U)
        G = G + t[:, None] * Hp
        # pin coordinates that reached a bound along the step
        reached = ((A <= tol_a) & (p < 0)) | ((A >= U - tol_a) & (p > 0))
        m = m & ~(reached & hit[:, None])
        restart = hit
        last = k == steps - 1
        if k % 4 == 3 or last:
            solved = ~hit & (rr <= res_tol * res_tol * rr0)
            if last or bool(solved.sum() * 4 >= solved.numel()):
                outA[rows], outG[rows], outm[rows] = A, G, m
                solved_out[rows] = solved
                keep = ~solved
                if last or not bool(keep.any()):
                    break
                rows, A, G, U, y, tol_a, m, p, rr, rr0, restart, op = (
                    t_[keep]
                    for t_ in (rows, A, G, U, y, tol_a, m, p, rr, rr0, restart, op)
                )
                Sd = None if Sd is None else Sd[keep]
    return outA, outG, outm, solved_out


def polish(
    A: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor | None,
    F: SharedFactor,
    n_steps: int,
    n_rounds: int = 6,
    max_bytes: int = 2**28,
) -> torch.Tensor:
    """Active-set polish by face-restricted conjugate gradients (Moré–Toraldo GPCG).

    Starting from a feasible ``A`` (rows are problems), each round fixes the coordinates
    whose bound is binding (``a_i = 0`` with reduced gradient ``> 0``, ``a_i = u_i`` with
    reduced gradient ``< 0``; the reduced gradient uses the least-squares intercept of the
    free set) and runs conjugate gradients on the remaining face with ``y^T a = 0``
    enforced by projection. A CG step that would leave the box is truncated at the
    boundary, the coordinate that hit it is pinned and CG restarts, so the objective
    decreases monotonically and singular faces (the linear kernel's null space) are safe.

    The CG runs on compact rows: each problem's face (width ``f`` = the largest face of
    the batch, usually far below ``n``: bound and out-of-bag coordinates drop out) is
    gathered together with its slice of ``Q`` (``W_F`` of the low-rank factor, or
    ``Q_FF``), so a step costs ``O(f k)`` or ``O(f^2)`` per problem instead of ``O(n k)``.
    A row leaves the round as soon as CG has solved its face, and leaves the polish when
    a solved round ends on the face it started from; finished rows are compacted away.
    At most ``n_steps`` CG steps in all; no per-problem Python loop.
    """
    fin = torch.finfo(A.dtype)
    rel_tol, big, tiny = max(1e-12, 16 * fin.eps), fin.max / 4, fin.tiny
    P, n = A.shape
    dev, dt = A.device, A.dtype
    k_rank = F.e.shape[0]
    A = A.clone()
    QA = F.matvec(A)
    G = QA - 1.0 if S is None else QA + S * A - 1.0
    tol_all = rel_tol * U.clamp_max(big) + tiny
    alive = torch.arange(P, device=dev)
    prev_face: torch.Tensor | None = None
    prev_solved: torch.Tensor | None = None
    per_round = max(1, n_steps // n_rounds)
    for _ in range(n_rounds):
        if alive.numel() == 0:
            break
        Ar, Gr, Ur, tol_a = A[alive], G[alive], U[alive], tol_all[alive]
        interior = (Ar > tol_a) & (Ar < Ur - tol_a)
        ni = interior.sum(1, keepdim=True).to(dt)
        b = -(torch.where(interior, Gr * y, 0.0)).sum(1, keepdim=True) / ni.clamp_min(
            1.0
        )
        red = Gr + b * y
        m = ~(
            ((Ar <= tol_a) & (red >= 0)) | ((Ar >= Ur - tol_a) & (red <= 0)) | (Ur <= 0)
        )
        if prev_face is not None and prev_solved is not None:
            # rows that solved their last face and would start from it again are done
            keep = ~(prev_solved & (m == prev_face).all(1))
            alive, Ar, Gr, Ur, tol_a, m = (
                t[keep] for t in (alive, Ar, Gr, Ur, tol_a, m)
            )
            if alive.numel() == 0:
                break
        nf = m.sum(1)
        f = max(1, int(nf.max()))
        low_rank = k_rank <= f
        per_row = max(
            1, (f * (f if not low_rank else 0) + 16 * f + 2 * n) * A.element_size()
        )
        chunk = max(1, max_bytes // per_row)
        W_ext = None
        if low_rank:
            W = F.low_rank()
            W_ext = torch.cat([W, torch.zeros_like(W[:1])], dim=0)
        face_out = torch.zeros((alive.numel(), n), dtype=torch.bool, device=dev)
        solved_all = torch.zeros(alive.numel(), dtype=torch.bool, device=dev)
        for c in range(0, alive.numel(), chunk):
            sl = slice(c, c + chunk)
            mc = m[sl]
            ip, valid = compact_mask(mc, f, n)  # padding points at the spare index n
            idx = torch.where(
                valid, ip, 0
            )  # for gathers from (R, n) rows, masked by vf
            vf = valid.to(dt)
            if low_rank:
                op = ip
            else:
                op = F.gather(idx) * (vf[:, :, None] * vf[:, None, :])
            Sd = None if S is None else torch.gather(S[alive[sl]], 1, idx) * vf
            AF = torch.gather(Ar[sl], 1, idx)
            GF = torch.gather(Gr[sl], 1, idx) * vf
            UF = torch.gather(Ur[sl], 1, idx) * vf
            AF = AF * vf
            yF = y[idx] * vf
            tF = torch.gather(tol_a[sl], 1, idx)
            AF, _, mF, solved = _face_cg(
                AF, GF, UF, yF, Sd, tF, valid, op, low_rank, per_round, W_ext
            )
            # scatter back through a spare column that absorbs the padding
            Aext = torch.cat([Ar[sl], torch.zeros_like(Ar[sl, :1])], dim=1)
            Ar[sl] = Aext.scatter(1, ip, AF)[:, :n]
            fext = torch.zeros((idx.shape[0], n + 1), dtype=torch.bool, device=dev)
            face_out[sl] = fext.scatter(1, ip, mF & valid)[:, :n]
            solved_all[sl] = solved
        A[alive] = Ar
        QA_r = F.matvec(Ar)
        G[alive] = QA_r - 1.0 if S is None else QA_r + S[alive] * Ar - 1.0
        prev_face, prev_solved = face_out, solved_all
    return project_face(A, y, U)
