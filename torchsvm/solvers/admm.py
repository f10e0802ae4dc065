"""Batched ADMM for SVM duals sharing one factorised ``Q`` (SPEC S1, S1b).

Every problem ``p`` of a batch solves (libsvm convention)::

    min_a  1/2 a^T Q a + 1/2 sum_i s_pi a_i^2 - 1^T a
    s.t.   y^T a = 0,   0 <= a_i <= u_pi,

with ``Q = diag(y) K diag(y)`` shared, by ADMM with the splitting ``a = z``:

- the ``a``-step minimises ``1/2 a^T Q a - 1^T a + rho_p/2 ||a - z_p + lam_p||^2`` subject
  to ``y^T a = 0``. With one factorisation ``Q = V diag(e) V^T`` (eigendecomposition for
  kernels; thin SVD of ``diag(y) X`` for the linear kernel, where the complement of
  ``V`` has eigenvalue 0) the solve for *all* problems is two GEMMs,
  ``(P, n) @ (n, k)`` and back, for any per-problem ``rho_p``: ``(Q + rho I)^{-1} =
  V diag(1/(e + rho)) V^T + (I - V V^T)/rho``. The equality constraint is a rank-one
  Schur complement whose multiplier is the SVM intercept.
- the ``z``-step is elementwise: ``z = clip(rho v / (rho + s), 0, u)``, which is where the
  S1b diagonal shift lives, so S1b costs nothing extra;
- ``rho_p`` is adapted per problem (OSQP's residual-balancing rule) at no refactorisation
  cost, and over-relaxation is used.

Every ``check_every`` iterations (the only host synchronisations) the iterate is
projected onto the feasible set, polished (:mod:`torchsvm.solvers.polish`) and certified
by its duality gap (:func:`torchsvm.solvers.kkt.duality_gap`); problems whose relative
gap is below ``tol`` are removed from the working set, so converged problems stop
costing work.
"""

from __future__ import annotations

import math

import torch

from torchsvm.config import SolverConfig
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.factor import SharedFactor
from torchsvm.solvers.kkt import duality_gap, project_face, project_feasible
from torchsvm.solvers.polish import polish
from torchsvm.types import SolveStatus

_OPT = SolveStatus.optimal.code
_MAXIT = SolveStatus.max_iter.code


def admm(
    prob: BatchedSvmProblem,
    F: SharedFactor,
    config: SolverConfig,
    a0: torch.Tensor | None = None,
    r0: torch.Tensor | None = None,
    max_iter: int | None = None,
) -> tuple[torch.Tensor, ...]:
    """ADMM on every problem of ``prob`` (see the module docstring); SPEC S1.

    Parameters
    ----------
    prob : BatchedSvmProblem
    F : SharedFactor
        Factorisation of the shared ``Q``.
    config : SolverConfig
        ``tol``, ``max_iter``, ``check_every``, ``rho``, ``relaxation`` and the polish
        settings are read from it.
    a0 : tensor of shape (P, n), optional
        Warm start (projected onto each feasible set).
    r0 : tensor of shape (P,), optional
        Initial penalties (e.g. the ``rho`` of an earlier solution).
    max_iter : int, optional
        Overrides ``config.max_iter``.

    Returns
    -------
    alpha, b, status, n_iter, primal, dual, rel_gap, rho
        Tensors with leading axis ``P`` (status codes of :class:`SolveStatus`).
    """
    cfg = config
    max_it = cfg.max_iter if max_iter is None else max_iter
    y, n = prob.y, prob.n_samples
    P = prob.n_problems
    dt, dev = prob.dtype, prob.device
    U_all, S_all = prob.U, prob.S
    e, V, Vt, yt = F.e, F.V, F.Vt, F.y_tilde

    # outputs
    out_alpha = torch.zeros((P, n), dtype=dt, device=dev)
    out_b = torch.zeros(P, dtype=dt, device=dev)
    out_status = torch.full((P,), _MAXIT, dtype=torch.long, device=dev)
    out_iter = torch.zeros(P, dtype=torch.long, device=dev)
    out_primal = torch.zeros(P, dtype=dt, device=dev)
    out_dual = torch.zeros(P, dtype=dt, device=dev)
    out_gap = torch.full((P,), math.inf, dtype=dt, device=dev)
    out_rho = torch.zeros(P, dtype=dt, device=dev)

    ids = torch.arange(P, device=dev)
    U = U_all
    S = S_all
    rho0 = cfg.rho if cfg.rho is not None else max(F.mean_diag, 1e-8)
    rho = r0.clone() if r0 is not None else torch.full((P,), rho0, dtype=dt, device=dev)
    z = (
        project_feasible(a0, y, U)
        if a0 is not None
        else torch.zeros((P, n), dtype=dt, device=dev)
    )
    lam = torch.zeros_like(z)
    sig = cfg.relaxation
    sqrt_n = math.sqrt(n)

    def rho_terms(rho: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dinv = 1.0 / (e[None, :] + rho[:, None]) - 1.0 / rho[:, None]  # (R, k)
        ySy = n / rho + (dinv * (yt * yt)[None, :]).sum(1)  # (R,)
        return dinv, ySy

    dinv, ySy = rho_terms(rho)
    it = 0
    z_prev = z
    Bp: torch.Tensor | None = None
    while ids.numel() > 0 and it < max_it:
        steps = min(cfg.check_every, max_it - it)
        for _ in range(steps):
            z_prev = z
            r = 1.0 + rho[:, None] * (z - lam)
            c = r @ V
            ySr = (r @ y) / rho + (c * dinv) @ yt
            bmul = ySr / ySy
            alpha = (r - bmul[:, None] * y) / rho[:, None] + (
                (c - bmul[:, None] * yt) * dinv
            ) @ Vt
            ahat = sig * alpha + (1.0 - sig) * z
            v = ahat + lam
            if S is None:
                z = torch.minimum(v.clamp_min(0.0), U)
            else:
                z = torch.minimum(
                    (rho[:, None] * v / (rho[:, None] + S)).clamp_min(0.0), U
                )
            lam = v - z
        it += steps

        # ---- certificate on the projected iterate (host sync here only)
        A = project_face(z, y, U)
        QA = F.matvec(A)
        primal, dual, rel, b = duality_gap(A, QA, y, U, S)
        if cfg.polish and it >= cfg.polish_after:
            # the polished track (monotone face-CG) starts from the better of its
            # last point and ADMM's projected iterate, judged by the QP objective
            obj_a = 0.5 * (A * QA).sum(1) - A.sum(1)
            if S is not None:
                obj_a = obj_a + 0.5 * (S * A * A).sum(1)
            if Bp is None:
                start_pt = A
            else:
                QB = F.matvec(Bp)
                obj_b = 0.5 * (Bp * QB).sum(1) - Bp.sum(1)
                if S is not None:
                    obj_b = obj_b + 0.5 * (S * Bp * Bp).sum(1)
                start_pt = torch.where((obj_b < obj_a)[:, None], Bp, A)
            Bp = polish(start_pt, y, U, S, F, cfg.polish_iter)
            QB = F.matvec(Bp)
            p2, d2, rel2, b2 = duality_gap(Bp, QB, y, U, S)
            better = rel2 < rel
            bt = better[:, None]
            A = torch.where(bt, Bp, A)
            primal, dual = (
                torch.where(better, p2, primal),
                torch.where(better, d2, dual),
            )
            rel, b = torch.where(better, rel2, rel), torch.where(better, b2, b)
        done = rel <= cfg.tol
        if it >= max_it:
            done = torch.ones_like(done)
        if bool(done.any()):
            gi = ids[done]
            out_alpha[gi] = A[done]
            out_b[gi] = b[done]
            out_status[gi] = torch.where(rel[done] <= cfg.tol, _OPT, _MAXIT)
            out_iter[gi] = it
            out_primal[gi] = primal[done]
            out_dual[gi] = dual[done]
            out_gap[gi] = rel[done]
            out_rho[gi] = rho[done]
            keep = ~done
            ids, z, z_prev, lam, rho = (
                ids[keep],
                z[keep],
                z_prev[keep],
                lam[keep],
                rho[keep],
            )
            if Bp is not None:
                Bp = Bp[keep]
            alpha = alpha[keep]
            U = U[keep]
            S = None if S is None else S[keep]
            if ids.numel() == 0:
                break
        # ---- residual balancing of rho (per problem, no refactorisation)
        prim = (alpha - z).norm(dim=1) / torch.maximum(
            alpha.norm(dim=1), z.norm(dim=1)
        ).clamp_min(1e-12)
        dual_r = (rho[:, None] * (z - z_prev)).norm(dim=1) / torch.maximum(
            (rho[:, None] * lam).norm(dim=1), torch.full_like(rho, sqrt_n)
        )
        ratio = torch.sqrt(prim.clamp_min(1e-12) / dual_r.clamp_min(1e-12))
        change = (ratio > 3.0) | (ratio < 1.0 / 3.0)
        if bool(change.any()):
            new_rho = torch.where(change, (rho * ratio).clamp(1e-8, 1e8), rho)
            lam = lam * (rho / new_rho)[:, None]
            rho = new_rho
        dinv, ySy = rho_terms(rho)
    return (
        out_alpha,
        out_b,
        out_status,
        out_iter,
        out_primal,
        out_dual,
        out_gap,
        out_rho,
    )
