"""Batched dual solver for weighted SVMs sharing one kernel (SPEC S1, S1b, S8).

Every problem ``p`` of a batch solves (libsvm convention)::

    min_a  1/2 a^T Q a + 1/2 sum_i s_pi a_i^2 - 1^T a
    s.t.   y^T a = 0,   0 <= a_i <= u_pi,

with ``Q = diag(y) K diag(y)`` shared. The method is ADMM with the splitting ``a = z``:

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
projected onto the feasible set and certified by its duality gap
(:func:`torchsvm.solvers.kkt.duality_gap`); problems whose relative gap is below
``tol`` are removed from the working set, so converged problems stop costing work.
The batch is split into chunks that fit the memory budget.

When the factor has a small rank (the linear kernel with ``d`` features: ``k <= d``) the
default is instead the batched interior-point method of :mod:`torchsvm.solvers.ipm`:
Mehrotra steps whose Newton systems share ``W`` and cost one ``(P, n) @ (n, k^2)`` GEMM,
converging in ~15 iterations whatever the number of bounded support vectors; its iterate
is rounded to the box, polished by the same face CG and certified by the same duality
gap, and any row left uncertified continues with ADMM from there.

For full-rank kernels (RBF, polynomial) the default is the batched primal-dual active-set
method of :mod:`torchsvm.solvers.pdas`, which works on ``Q`` itself: an eigendecomposition
costs ``~9 n^3`` flops up front, the active set a few Cholesky factorisations of faces of
free support vectors. Problems are solved in stages of increasing ``C``, each warm-started
from the most similar problem of the previous stage.

Interior-point and active-set iterations are few (tens) and heavy, so they synchronise
with the host once per iteration to drop finished problems; ADMM's many light
iterations synchronise only every ``check_every``.

When ``n`` is too large to factorise (``n > max_factor_n`` for nonlinear kernels) the
fallback is FISTA with adaptive restart on the same dual, with the exact projection onto
``{0 <= a <= u, y^T a = 0}`` and ``Q a`` computed from kernel blocks (cached whole when it
fits the budget). It is slower per digit of accuracy but needs no factorisation.
Measured choices are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import torch

from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.ipm import ipm_low_rank
from torchsvm.solvers.kkt import duality_gap, project_face, project_feasible
from torchsvm.solvers.pdas import compact_mask, face_kernel, pdas_dense
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

_OPT = SolveStatus.optimal.code
_MAXIT = SolveStatus.max_iter.code


@dataclass(frozen=True)
class SharedFactor:
    """``Q = V diag(e) V^T`` (+ zero eigenvalues on the complement of ``V``).

    Attributes
    ----------
    V : tensor of shape (n, k)
    Vt : tensor of shape (k, n)
    e : tensor of shape (k,)
    y_tilde : tensor of shape (k,)
        ``V^T y``.
    """

    V: torch.Tensor
    Vt: torch.Tensor
    e: torch.Tensor
    y_tilde: torch.Tensor
    n: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def matvec(self, A: torch.Tensor) -> torch.Tensor:
        """``A @ Q`` for a batch of row vectors: tensor of shape (P, n)."""
        return ((A @ self.V) * self.e) @ self.Vt

    @property
    def mean_diag(self) -> float:
        return float(self.e.sum()) / self.n

    def low_rank(self) -> torch.Tensor:
        """``W = V diag(sqrt(e))`` of shape (n, k), so that ``Q = W W^T`` (cached)."""
        W = self._cache.get("W")
        if W is None:
            W = self.V * self.e.clamp_min(0.0).sqrt()
            self._cache["W"] = W
        return W

    def dense(self) -> torch.Tensor:
        """``Q`` itself, shape (n, n), formed once from the factor and cached."""
        Q = self._cache.get("Q")
        if Q is None:
            Q = (self.V * self.e) @ self.Vt
            self._cache["Q"] = Q
        return Q

    def gather(self, idx: torch.Tensor) -> torch.Tensor:
        """``Q[idx_p][:, idx_p]`` for every row ``p`` of ``idx`` (R, f): shape (R, f, f)."""
        Q = self.dense()
        return Q[idx[:, :, None], idx[:, None, :]]


def build_factor(problem: BatchedSvmProblem, eig_rel_tol: float = 1e-13) -> SharedFactor:
    """Factorise the shared ``Q`` once (float64 internally, cast to the problem dtype)."""
    X = problem.X.to(torch.float64)
    y = problem.y.to(torch.float64)
    n, d = X.shape
    if problem.kernel == "linear" and d < n:
        Z = X * y[:, None]
        Uz, sv, _ = torch.linalg.svd(Z, full_matrices=False)
        e, V = sv * sv, Uz
    else:
        if problem.kernel == "linear":
            K = X @ X.T
        else:
            K = compute_kernel(X, kernel=problem.kernel, gamma=problem.gamma,
                               degree=problem.degree, coef0=problem.coef0)
        Q = K * y[:, None] * y[None, :]
        del K
        e, V = torch.linalg.eigh(Q)
        del Q
    emax = float(e.max()) if e.numel() else 0.0
    keep = e > eig_rel_tol * max(emax, 1e-300)
    e, V = e[keep], V[:, keep]
    dt = problem.dtype
    V = V.to(dt).contiguous()
    return SharedFactor(
        V=V, Vt=V.T.contiguous(), e=e.to(dt), y_tilde=(V.T @ problem.y.to(dt)), n=n
    )


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
        return compute_kernel(p.X[s:e], p.X, kernel=p.kernel, gamma=p.gamma,
                              degree=p.degree, coef0=p.coef0)

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
            t_k = torch.nn.functional.embedding_bag(op, W_ext, per_sample_weights=p, mode="sum")
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
                    t_[keep] for t_ in (rows, A, G, U, y, tol_a, m, p, rr, rr0, restart, op))
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
        b = -(torch.where(interior, Gr * y, 0.0)).sum(1, keepdim=True) / ni.clamp_min(1.0)
        red = Gr + b * y
        m = ~(((Ar <= tol_a) & (red >= 0)) | ((Ar >= Ur - tol_a) & (red <= 0)) | (Ur <= 0))
        if prev_face is not None and prev_solved is not None:
            # rows that solved their last face and would start from it again are done
            keep = ~(prev_solved & (m == prev_face).all(1))
            alive, Ar, Gr, Ur, tol_a, m = (t[keep] for t in (alive, Ar, Gr, Ur, tol_a, m))
            if alive.numel() == 0:
                break
        nf = m.sum(1)
        f = max(1, int(nf.max()))
        low_rank = k_rank <= f
        per_row = max(1, (f * (f if not low_rank else 0) + 16 * f + 2 * n) * A.element_size())
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
            idx = torch.where(valid, ip, 0)  # for gathers from (R, n) rows, masked by vf
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
            AF, _, mF, solved = _face_cg(AF, GF, UF, yF, Sd, tF, valid, op, low_rank, per_round,
                                         W_ext)
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


def _replace_rows(
    out: list[torch.Tensor],
    rows: torch.Tensor,
    sub: tuple[torch.Tensor, ...],
    iter_offset: torch.Tensor | int,
) -> None:
    """Write a sub-batch's solver outputs over ``rows`` of ``out``; its iteration counts
    add to ``iter_offset`` (the iterations already spent on those rows)."""
    for o, v in zip(out, sub, strict=True):
        o[rows] = v
    out[3][rows] = sub[3] + iter_offset


class BoxQpSolver:
    """Batched solver of SVM duals sharing ``Q``; called as ``solver(problem, init=None)``.

    Parameters
    ----------
    config : SolverConfig

    Examples
    --------
    >>> import numpy as np
    >>> from torchsvm.problems.svm import BatchedSvmProblem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> prob = BatchedSvmProblem.from_weights(X, y, C=[0.1, 1.0, 10.0], kernel="linear")
    >>> sol = BoxQpSolver()(prob)
    >>> bool(sol.converged.all()), tuple(sol.alpha.shape)
    (True, (3, 40))
    """

    def __init__(self, config: SolverConfig | None = None) -> None:
        self.config = config or SolverConfig()

    # ------------------------------------------------------------------ public
    def __call__(
        self,
        problem: BatchedSvmProblem,
        init: BatchedSvmSolution | torch.Tensor | None = None,
        *,
        factor: SharedFactor | None = None,
    ) -> BatchedSvmSolution:
        """Solve every problem of the batch.

        Parameters
        ----------
        problem : BatchedSvmProblem
        init : BatchedSvmSolution or tensor of shape (P, n), optional
            Warm start (dual variables; projected onto each problem's feasible set).
        factor : SharedFactor, optional
            A factorisation of ``Q`` computed earlier for the same ``X``, ``y``, kernel.
        """
        cfg = self.config
        P, n = problem.n_problems, problem.n_samples
        method = cfg.method
        if method == "auto":
            nonlinear = problem.kernel != "linear"
            if nonlinear and n > cfg.max_factor_n:
                method = "fista"
            elif nonlinear or problem.n_features >= n:
                method = "pdas"  # full-rank Q: no eigendecomposition needed
            else:
                method = "admm"  # becomes "ipm" below once the rank is known
        init_alpha = init.alpha if isinstance(init, BatchedSvmSolution) else init
        init_rho = init.rho if isinstance(init, BatchedSvmSolution) else None
        if init_alpha is not None and tuple(init_alpha.shape) != (P, n):
            raise ValueError(f"init must have shape (P, n) = ({P}, {n}); got {tuple(init_alpha.shape)}")
        budget = self._memory_budget(problem)
        with torch.inference_mode():
            if method == "pdas":
                out = self._pdas(problem, init_alpha, factor)
                return self._finish(problem, *out)
            if method in ("admm", "ipm"):
                op: SharedFactor | KernelOperator = factor or build_factor(problem, cfg.eig_rel_tol)
                k = op.e.shape[0]  # type: ignore[union-attr]
                if cfg.method == "auto" and k <= cfg.ipm_max_rank:
                    method = "ipm"
                per_problem = (14 * n + 6 * k) * problem.X.element_size()
                if method == "ipm":
                    per_problem = 30 * n * problem.X.element_size()
            else:
                op = KernelOperator(problem, budget)
                per_problem = 12 * n * problem.X.element_size()
            chunk = int(max(1, min(P, budget // max(1, per_problem))))
            parts = []
            for s in range(0, P, chunk):
                sub = problem.select(slice(s, s + chunk))
                a0 = None if init_alpha is None else init_alpha[s : s + chunk].to(problem.device, problem.dtype)
                r0 = None if init_rho is None else init_rho[s : s + chunk].to(problem.device, problem.dtype)
                if method == "ipm":
                    parts.append(self._ipm(sub, op))  # type: ignore[arg-type]
                elif method == "admm":
                    parts.append(self._admm(sub, op, a0, r0))  # type: ignore[arg-type]
                else:
                    parts.append(self._fista(sub, op, a0))  # type: ignore[arg-type]
            out = tuple(torch.cat([p[i] for p in parts]) for i in range(8))
        return self._finish(problem, *out)

    def _finish(
        self,
        problem: BatchedSvmProblem,
        alpha: torch.Tensor,
        b: torch.Tensor,
        status: torch.Tensor,
        n_iter: torch.Tensor,
        primal: torch.Tensor,
        dual: torch.Tensor,
        gap: torch.Tensor,
        rho: torch.Tensor,
    ) -> BatchedSvmSolution:
        cfg = self.config
        P = problem.n_problems
        w = None
        if problem.kernel == "linear":
            w = (alpha * problem.y) @ problem.X
        n_bad = int((status != _OPT).sum())
        if n_bad:
            logger.warning("%d of %d problems stopped at max_iter=%d (gap above tol=%g)",
                           n_bad, P, cfg.max_iter, cfg.tol)
        return BatchedSvmSolution(alpha=alpha, b=b, w=w, status=status, n_iter=n_iter,
                                  primal=primal, dual=dual, duality_gap=gap, rho=rho)

    # ---------------------------------------------------------------- helpers
    def _memory_budget(self, problem: BatchedSvmProblem) -> int:
        if self.config.memory_bytes is not None:
            return int(self.config.memory_bytes)
        if problem.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(problem.device)
            return int(0.6 * free)
        return 4 * 2**30

    def _pdas(
        self,
        prob: BatchedSvmProblem,
        init: torch.Tensor | None,
        factor: SharedFactor | None,
    ) -> tuple[torch.Tensor, ...]:
        """Primal-dual active set on the dense ``Q`` (see :mod:`torchsvm.solvers.pdas`).

        Without a warm start the problems are solved in stages of increasing scale
        (``C``, or the mean bound): the first stage starts with every coordinate at its
        upper bound, each later problem from the partition of the most similar problem
        (cosine of the bound vectors) of the previous stage, so most problems need 3-6
        iterations. Rows the active-set iterations do not settle go to ADMM.
        """
        cfg = self.config
        y, U, S = prob.y, prob.U, prob.S
        P, n = U.shape
        dt, dev = prob.dtype, prob.device
        if factor is not None:
            Q = factor.dense()
        else:
            K = compute_kernel(prob.X, kernel=prob.kernel, gamma=prob.gamma,
                               degree=prob.degree, coef0=prob.coef0)
            Q = K.mul_(y[:, None]).mul_(y[None, :])
        face_fn = face_kernel(prob.X, y, prob.kernel, prob.gamma, prob.degree, prob.coef0)
        fin = torch.isfinite(U)
        A = torch.zeros((P, n), dtype=dt, device=dev)
        QA = torch.zeros((P, n), dtype=dt, device=dev)
        b = torch.zeros(P, dtype=dt, device=dev)
        n_iter = torch.zeros(P, dtype=torch.long, device=dev)
        ok = torch.zeros(P, dtype=torch.bool, device=dev)
        budget = self._memory_budget(prob) // 4

        def run(rows: torch.Tensor, A0: torch.Tensor, factors=None):  # noqa: ANN001, ANN202
            a, qa, bb, it, good, store = pdas_dense(
                Q, y, U[rows], None if S is None else S[rows], A0,
                max_iter=cfg.pdas_max_iter, max_bytes=budget, face_fn=face_fn,
                factors=factors, return_factors=True)
            A[rows], QA[rows], b[rows], n_iter[rows], ok[rows] = a, qa, bb, it, good
            return store

        if init is not None:
            run(torch.arange(P, device=dev), project_face(init, y, U), None)
        else:
            Ufin = torch.where(fin, U, 0.0)
            act = (U > 0).to(dt)
            if prob.C is not None:
                scale = prob.C.to(dt)
            else:
                scale = torch.where(fin, U, 1.0).sum(1) / act.sum(1).clamp_min(1.0)
            uniq = torch.unique(scale)
            if uniq.numel() <= 32:
                stage = torch.searchsorted(uniq, scale)
            else:
                q = torch.quantile(scale, torch.linspace(0, 1, 13, dtype=dt, device=dev)[1:-1])
                stage = torch.searchsorted(q, scale)
            pattern = torch.where(fin, U, act) / scale[:, None]
            pattern = pattern / pattern.norm(dim=1, keepdim=True).clamp_min(1e-300)
            prev: torch.Tensor | None = None
            prev_store = None
            for st in torch.unique(stage).tolist():
                rows = (stage == st).nonzero()[:, 0]
                Ur = U[rows]
                factors = None
                if prev is None:
                    # cold start: every coordinate at its upper bound (free if unbounded)
                    A0 = torch.where(fin[rows], Ur, 0.5 * act[rows])
                else:
                    pos = (pattern[rows] @ pattern[prev].T).argmax(1)
                    src = prev[pos]
                    if prev_store is not None:
                        # the start has the source's face: reuse its factor
                        factors = prev_store.subset(pos)
                    As, Us = A[src], Ufin[src]
                    at_up = fin[src] & (As >= Us) & (Us > 0)
                    free_s = (As > 0) & ~at_up
                    A0 = torch.where(at_up & fin[rows], Ur, 0.0)
                    A0 = torch.where(free_s & (Ur > 0), 0.5 * torch.where(fin[rows], Ur, 1.0), A0)
                prev_store = run(rows, A0, factors)
                prev = rows
        primal, dual, rel, b_opt = duality_gap(A, QA, y, U, S)
        status = torch.where(ok & (rel <= cfg.tol), _OPT, _MAXIT)
        rho = torch.zeros(P, dtype=dt, device=dev)
        out = [A, b_opt, status, n_iter, primal, dual, rel, rho]
        if bool((status != _OPT).any()):
            self._admm_rest(prob, factor or build_factor(prob, cfg.eig_rel_tol), out, "pdas")
        return tuple(out)

    def _admm_rest(
        self, prob: BatchedSvmProblem, F: SharedFactor, out: list[torch.Tensor], name: str
    ) -> None:
        """Finish the uncertified rows of ``out`` (solver outputs) with ADMM, in place."""
        bad = (out[2] != _OPT).nonzero()[:, 0]
        if bad.numel() == 0:
            return
        logger.info("%s: %d of %d problems handed to ADMM", name, bad.numel(), prob.n_problems)
        sub = self._admm(prob.select(bad.cpu()), F, out[0][bad], None)
        _replace_rows(out, bad, sub, out[3][bad])

    def _ipm(self, prob: BatchedSvmProblem, F: SharedFactor) -> tuple[torch.Tensor, ...]:
        """Interior point, rounding to the box, polish; ADMM finishes uncertified rows."""
        cfg = self.config
        # easy problems (few bounded support vectors) finish in a few ADMM checks, which
        # cost O(n k) per iteration against the interior point's O(n k^2): try those first
        # (measured: n = 512 x 5500 problems 9.0 s ADMM-first vs 14.1 s; n = 5000 x 220
        # problems 22 s vs 4.1 s, where ADMM needs hundreds of iterations)
        first = None
        if cfg.ipm_after and prob.n_samples <= cfg.ipm_admm_max_n:
            first = self._admm(prob, F, None, None, max_iter=cfg.ipm_after)
        if first is not None:
            rest = (first[2] != _OPT).nonzero()[:, 0]
            if rest.numel() == 0:
                return first
            out = list(first)
            _replace_rows(out, rest, self._ipm_only(prob.select(rest.cpu()), F), cfg.ipm_after)
            return tuple(out)
        return self._ipm_only(prob, F)

    def _ipm_only(self, prob: BatchedSvmProblem, F: SharedFactor) -> tuple[torch.Tensor, ...]:
        cfg = self.config
        y, U, S = prob.y, prob.U, prob.S
        a, _, n_iter, _ = ipm_low_rank(F.low_rank(), y, U, S, tol=cfg.ipm_tol)
        # coordinates within a relative 1e-6 of a bound go onto it; the polish frees any
        # that the reduced gradient says should move
        r = a / torch.where(U > 0, U, 1.0)
        fin = torch.isfinite(U)
        A0 = torch.where(r < 1e-6, 0.0, torch.where(fin & (r > 1 - 1e-6), U, a))
        A = project_face(A0, y, U)
        primal, dual, rel, b = duality_gap(A, F.matvec(A), y, U, S)
        if cfg.polish:
            Bp = polish(A, y, U, S, F, cfg.polish_iter)
            p2, d2, rel2, b2 = duality_gap(Bp, F.matvec(Bp), y, U, S)
            better = rel2 < rel
            A = torch.where(better[:, None], Bp, A)
            primal, dual = torch.where(better, p2, primal), torch.where(better, d2, dual)
            rel, b = torch.where(better, rel2, rel), torch.where(better, b2, b)
        P = prob.n_problems
        status = torch.where(rel <= cfg.tol, _OPT, _MAXIT)
        rho = torch.zeros(P, dtype=prob.dtype, device=prob.device)
        out = [A, b, status, n_iter, primal, dual, rel, rho]
        self._admm_rest(prob, F, out, "ipm")
        return tuple(out)

    def _admm(
        self,
        prob: BatchedSvmProblem,
        F: SharedFactor,
        a0: torch.Tensor | None,
        r0: torch.Tensor | None,
        max_iter: int | None = None,
    ) -> tuple[torch.Tensor, ...]:
        cfg = self.config
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
        z = project_feasible(a0, y, U) if a0 is not None else torch.zeros((P, n), dtype=dt, device=dev)
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
                alpha = (r - bmul[:, None] * y) / rho[:, None] + ((c - bmul[:, None] * yt) * dinv) @ Vt
                ahat = sig * alpha + (1.0 - sig) * z
                v = ahat + lam
                if S is None:
                    z = torch.minimum(v.clamp_min(0.0), U)
                else:
                    z = torch.minimum((rho[:, None] * v / (rho[:, None] + S)).clamp_min(0.0), U)
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
                primal, dual = torch.where(better, p2, primal), torch.where(better, d2, dual)
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
                ids, z, z_prev, lam, rho = ids[keep], z[keep], z_prev[keep], lam[keep], rho[keep]
                if Bp is not None:
                    Bp = Bp[keep]
                alpha = alpha[keep]
                U = U[keep]
                S = None if S is None else S[keep]
                if ids.numel() == 0:
                    break
            # ---- residual balancing of rho (per problem, no refactorisation)
            prim = (alpha - z).norm(dim=1) / torch.maximum(alpha.norm(dim=1), z.norm(dim=1)).clamp_min(1e-12)
            dual_r = (rho[:, None] * (z - z_prev)).norm(dim=1) / torch.maximum(
                (rho[:, None] * lam).norm(dim=1), torch.full_like(rho, sqrt_n))
            ratio = torch.sqrt(prim.clamp_min(1e-12) / dual_r.clamp_min(1e-12))
            change = (ratio > 3.0) | (ratio < 1.0 / 3.0)
            if bool(change.any()):
                new_rho = torch.where(change, (rho * ratio).clamp(1e-8, 1e8), rho)
                lam = lam * (rho / new_rho)[:, None]
                rho = new_rho
            dinv, ySy = rho_terms(rho)
        return (out_alpha, out_b, out_status, out_iter, out_primal, out_dual, out_gap, out_rho)

    def _fista(
        self, prob: BatchedSvmProblem, op: KernelOperator, a0: torch.Tensor | None
    ) -> tuple[torch.Tensor, ...]:
        cfg = self.config
        y, n, P = prob.y, prob.n_samples, prob.n_problems
        dt, dev = prob.dtype, prob.device
        U, S = prob.U, prob.S
        L = 1.02 * op.max_eigenvalue() + (0.0 if S is None else float(S.max()))
        x = project_feasible(a0, y, U) if a0 is not None else torch.zeros((P, n), dtype=dt, device=dev)
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
