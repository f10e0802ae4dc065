"""FISTA with adaptive restart for SVM duals too large to factorise (SPEC S1).

When ``n`` is too large to factorise (``n > max_factor_n`` for nonlinear kernels) the
dual is solved by FISTA with adaptive restart, with the exact projection onto
``{0 <= a <= u, y^T a = 0}`` (:func:`torchsvm.solvers.kkt.project_feasible`) and ``Q a``
computed from kernel blocks (:class:`KernelOperator`, cached whole when it fits the
budget). It is slower per digit of accuracy than the factorised methods but needs no
factorisation. Every ``check_every`` iterations the iterate is certified by its duality
gap.
"""

from __future__ import annotations

import torch

from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.kkt import duality_gap, project_feasible
from torchsvm.types import SolveStatus

_OPT = SolveStatus.optimal.code
_MAXIT = SolveStatus.max_iter.code


class KernelOperator:
    """``A @ Q`` from kernel blocks, for the first-order fallback (no factorisation)."""

    def __init__(self, problem: BatchedSvmProblem, memory_bytes: int) -> None:
        self.problem = problem
        n = problem.n_samples
        itemsize = torch.finfo(problem.dtype).bits // 8
        self.block = max(1, min(n, (memory_bytes // 4) // max(1, n * itemsize)))
        self.K: torch.Tensor | None = None
        if n * n * itemsize <= memory_bytes // 2:
            self.K = self._kernel_rows(0, n)

    def _kernel_rows(self, s: int, e: int) -> torch.Tensor:
        p = self.problem
        return compute_kernel(
            p.X[s:e],
            p.X,
            kernel=p.kernel,
            gamma=p.gamma,
            degree=p.degree,
            coef0=p.coef0,
        )

    def matvec(self, A: torch.Tensor) -> torch.Tensor:
        y = self.problem.y
        Ay = A * y
        if self.K is not None:
            return (Ay @ self.K) * y
        n = self.problem.n_samples
        out = torch.empty_like(A)
        for s in range(0, n, self.block):
            e = min(n, s + self.block)
            out[:, s:e] = Ay @ self._kernel_rows(s, e).T
        return out * y

    def max_eigenvalue(self, n_iter: int = 50) -> float:
        gen = torch.Generator(device="cpu").manual_seed(0)
        v = torch.rand((1, self.problem.n_samples), generator=gen, dtype=torch.float64)
        v = v.to(device=self.problem.device, dtype=self.problem.dtype)
        lam = 1.0
        for _ in range(n_iter):
            w = self.matvec(v)
            lam = float(w.norm())
            v = w / max(lam, 1e-300)
        return lam


def fista(
    prob: BatchedSvmProblem,
    op: KernelOperator,
    config: SolverConfig,
    a0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, ...]:
    """FISTA with adaptive restart on every problem of ``prob`` (SPEC S1).

    Returns the same eight tensors as :func:`torchsvm.solvers.admm.admm` (``rho`` zero).
    """
    cfg = config
    y, n, P = prob.y, prob.n_samples, prob.n_problems
    dt, dev = prob.dtype, prob.device
    U, S = prob.U, prob.S
    L = 1.02 * op.max_eigenvalue() + (0.0 if S is None else float(S.max()))
    x = (
        project_feasible(a0, y, U)
        if a0 is not None
        else torch.zeros((P, n), dtype=dt, device=dev)
    )
    yk, t = x.clone(), torch.ones(P, dtype=dt, device=dev)
    status = torch.full((P,), _MAXIT, dtype=torch.long, device=dev)
    n_iter = torch.full((P,), cfg.max_iter, dtype=torch.long, device=dev)
    active = torch.ones(P, dtype=torch.bool, device=dev)
    primal = dual = gap = b = torch.zeros(P, dtype=dt, device=dev)
    it = 0
    while it < cfg.max_iter:
        for _ in range(min(cfg.check_every, cfg.max_iter - it)):
            grad = op.matvec(yk) - 1.0
            if S is not None:
                grad = grad + S * yk
            x_new = project_feasible(yk - grad / L, y, U)
            restart = ((grad * (x_new - x)).sum(1) > 0) & active
            t_new = 0.5 * (1.0 + torch.sqrt(1.0 + 4.0 * t * t))
            mom = torch.where(restart, 0.0, (t - 1.0) / t_new)
            t = torch.where(restart, 1.0, t_new)
            step = torch.where(active[:, None], x_new, x)
            yk = step + mom[:, None] * (step - x)
            x = step
        it += cfg.check_every
        QA = op.matvec(x)
        primal, dual, gap, b = duality_gap(x, QA, y, U, S)
        newly = active & (gap <= cfg.tol)
        status[newly] = _OPT
        n_iter[newly] = min(it, cfg.max_iter)
        active &= ~newly
        if not bool(active.any()):
            break
    rho = torch.zeros(P, dtype=dt, device=dev)
    return (x, b, status, n_iter, primal, dual, gap, rho)
