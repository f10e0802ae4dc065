"""Batched dual solver for weighted SVMs sharing one kernel: method choice (SPEC S1, S1b, S8).

Every problem ``p`` of a batch solves (libsvm convention)::

    min_a  1/2 a^T Q a + 1/2 sum_i s_pi a_i^2 - 1^T a
    s.t.   y^T a = 0,   0 <= a_i <= u_pi,

with ``Q = diag(y) K diag(y)`` shared. :class:`BoxQpSolver` first merges rows of equal
``(x, y)`` into one whose bound is the sum of theirs (:func:`merge_duplicate_rows`, exact;
the merged solution is split back in proportion to the bounds), then picks the method,
splits the batch into chunks that fit the memory budget and hands rows one method cannot
certify to another. The methods, one module each:

- :mod:`torchsvm.solvers.ipm` (``ipm``): when the factor of ``Q`` has a small rank (the
  linear kernel with ``d`` features: ``k <= d``), batched Mehrotra interior-point steps
  whose Newton systems share ``W`` and cost one ``(P, n) @ (n, k^2)`` GEMM, converging in
  ~15 iterations whatever the number of bounded support vectors; the iterate is rounded
  to the box, polished (:mod:`torchsvm.solvers.polish`) and certified by the duality gap.
  For ``n <= ipm_admm_max_n`` and batches of at least 1000 problems ADMM gets
  ``ipm_after`` iterations first. With the compiled active set on the CPU, every
  problem of a batch off the C path (below) is first tried from ``a = 0`` by the
  active set, where a pilot of them shows that this pays (few support vectors:
  mushroom's bootstrap batch, 4500 rows, rank 86, 14 ms per problem against 250 ms by
  ADMM), and the rest go to the interior point.
  When the batch holds several values of ``C`` (a bootstrap grid), only the smallest
  ``C`` is solved so (or, with the compiled active set on the CPU, by the active set
  from ``a = 0`` where a pilot of those problems shows that this pays); every later ``C`` starts from the solution of the most similar
  problem at the previous ``C`` (the same replicate), scaled to the new bounds, where
  their bounds are proportional (:func:`c_path_sources`; the others are solved as the
  smallest ``C`` is), and is
  finished by the feasible active-set method of :mod:`torchsvm.solvers.active_set`
  (exact face solves on ``|F| <= k + 1`` free coordinates, no ``(P, n) @ (n, k^2)``
  product); rows it does not certify go back to the interior point.
- :mod:`torchsvm.solvers.pdas` (``pdas``): for full-rank kernels (RBF, polynomial) the
  batched primal-dual active-set method on ``Q`` itself (an eigendecomposition would
  cost ``~9 n^3`` flops up front). Problems are solved in stages of increasing ``C``,
  each warm-started from the most similar problem of the previous stage.
- :mod:`torchsvm.solvers.admm` (``admm``): ADMM on the factor
  (:mod:`torchsvm.solvers.factor`); the fallback for rows the others cannot certify.
  float32 batches do not fall back to float32 ADMM: a gap near the default ``tol`` is
  below what float32 can certify, so those rows are solved again in float64 from the
  float32 iterate (``_refine_float64``).
- :mod:`torchsvm.solvers.fista` (``fista``): when ``n`` is too large to factorise, FISTA
  on kernel blocks.

Interior-point and active-set iterations are few (tens) and heavy, so they synchronise
with the host once per iteration to drop finished problems; ADMM's many light
iterations synchronise only every ``check_every``. Every problem is certified by its
relative duality gap (:func:`torchsvm.solvers.kkt.duality_gap`). Measured choices are
recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace

import torch

from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.active_set import active_set_low_rank, purify_start, use_kernel
from torchsvm.solvers.admm import admm
from torchsvm.solvers.factor import SharedFactor, build_factor
from torchsvm.solvers.fista import KernelOperator, fista
from torchsvm.solvers.ipm import ipm_low_rank
from torchsvm.solvers.kkt import duality_gap, project_face
from torchsvm.solvers.pdas import face_kernel, pdas_dense, pdas_monotone
from torchsvm.solvers.polish import polish
from torchsvm.solvers.smo import _EPS as _SMO_EPS  # RBF (issue 14)
from torchsvm.solvers.smo import smo_problem, smo_solve, use_smo
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

_OPT = SolveStatus.optimal.code
_MAXIT = SolveStatus.max_iter.code
# active-set iterations after the interior point (measured: 1-3 from its partition)
_IPM_PDAS_ITER = 8
# feasible active-set iterations after the interior point (no diagonal shift)
_IPM_AS_ITER = 100
#: rows of the interior point's start with more than this many times ``k + 1`` free
#: coordinates are purified to ``k + 1`` before the active set
_PURIFY_ABOVE = 4
# feasible active-set iterations per C-path stage before the interior point takes over
# (measured on the main job's fold: 7-34 on average, at most 55)
_PATH_MAX_ITER = 200
# the C path's roots from the vertex a = 0 by the compiled active set (see
# _roots_from_vertex): a pilot of one root in _VERTEX_PILOT_SHARE (at least one, at
# most _VERTEX_PILOT_ROWS) first, and the rest only where the pilot's mean iterations
# stay within _VERTEX_PILOT_ITERS (k + 1); each row stops after _VERTEX_MAX_ITERS
# (k + 1) iterations and goes to the interior point
_VERTEX_PILOT_ROWS = 32
_VERTEX_PILOT_SHARE = 16
_VERTEX_PILOT_ITERS = 5
_VERTEX_MAX_ITERS = 10
# smallest batch for which ``ipm`` tries ADMM first (see ``_ipm``)
_ADMM_FIRST_MIN_PROBLEMS = 1000
# float32 batches of the low-rank (linear) route with ``tol`` below this are solved in
# float64 and rounded (see ``_solve_in_float64``)
_FLOAT32_MIN_TOL = 1e-4
# largest n for the C path: the active set changes one bound per blocked step and the
# changes between neighbouring C grow with n. Measured (11 C x 500 bootstrap
# replicates, linear): n = 512 breast_cancer, at most 46 iterations per stage, the
# fold 3.3x faster than the interior point alone; n = 4140 spambase (d = 57), stage 2
# took 306 s and 307 of 500 rows hit the 200-iteration cap (mean 194), against 24 s
# for the interior point on those 307 rows (batched torch active set, 2.5e1 us per
# row-iteration at n = 512)
_C_PATH_MAX_N = 2000
# ... and with the compiled active set (``use_kernel``: CPU with numba), whose
# row-iteration costs a few microseconds: no limit. Measured (scripts/
# ab_c_path_large_n.py, 11 C x 20 replicates, CPU s off the path -> on it): S8
# linear (n = 5000) 3.19 -> 0.70, every problem certified on the path; the
# probabilities run's folds 0: pageblocks 3.44 -> 0.63, spambase 7.19 -> 4.83,
# adult 13.0 -> 11.0, nursery 0.41 -> 0.33, mushroom 3.3 -> 1.9 (with the two rules
# of _ipm_path for n above _C_PATH_MAX_N), churn 6.1 -> 6.5 (138 of 200 rows reach
# _PATH_MAX_ITER and go to the interior point)
_C_PATH_MAX_N_COMPILED = math.inf
# the dense active set's factor store grows its width by 10 % at a time: a face of width
# f takes up to about 1.21 f^2 numbers per row (solvers/pdas.py, _FactorStore._grow)
_STORE_GROWTH = 1.25
# a first-stage face of at least this many free coordinates is "wide" (see _pdas): from
# the cold start it takes ~log3(f / 256) growing factorisations. Nursery's RBF inner CV
# (faces of ~9200): 14 factorisations, 52 CPU s for the first problem of a fold
_PDAS_WIDE_FACE = 1024
# iteration cap of the monotone active set (pdas_monotone), which fixes one coordinate
# per blocked step: at least this many, or 2 n (cervical's RBF bootstrap folds,
# n = 744: 97-234 iterations from every coordinate at its bound)
_MONOTONE_MIN_ITER = 1000
# ... which takes the rows whose violations have not reached a new minimum for this many
# active-set iterations (pdas_dense's ``stall``): they cycle, and the 40 iterations of
# the cap cost cervical's folds as much as the monotone finish. Only from SMO's point:
# from the cold starts of the C stages the rule stopped rows of S8 RBF (n = 5000) that
# converge without it, and the batch spent more than 173 CPU s in the monotone finish
# against 22.0 in all without the rule
_PDAS_STALL = 5
# rows that cycle from SMO's point resume SMO to this fraction of its violation before
# the monotone active set
_CYCLE_EPS = 0.1


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


def _vertex_pilot_rows(n_roots: int) -> int:
    """Rows of :meth:`BoxQpSolver._roots_from_vertex`'s pilot among ``n_roots`` roots."""
    return min(_VERTEX_PILOT_ROWS, -(-n_roots // _VERTEX_PILOT_SHARE))


def _certify(
    A: torch.Tensor,
    QA: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    b: torch.Tensor,
    tol: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`duality_gap` of the active set's points (no diagonal shift), first at
    the intercepts ``b`` of their last face solves: that gap bounds the gap at the
    optimal intercept from above, so it certifies without sorting the ``n``
    breakpoints of every row; only rows it leaves above ``tol`` get the optimal
    intercept.

    The dual value bounds the optimum from below only where ``y^T a = 0``; a row whose
    ``|y^T a|`` exceeds ``1e3`` units of rounding of ``sum a`` gets an infinite gap (it
    is not certified, and goes on to the next method). Measured on a degenerate batch
    (duplicate rows of both labels, tests/solvers/test_active_set.py): a start with
    faces far wider than ``k + 1``, before purification, ended at ``|y^T a| = 3e-4``
    with a "gap" of 9e-9 and a dual value above the true optimum."""
    out = list(duality_gap(A, QA, y, U, None, b=b))
    short = (~(out[2] <= tol)).nonzero()[:, 0]
    if short.numel():
        sub = duality_gap(A[short], QA[short], y, U[short], None)
        for o, v in zip(out, sub, strict=True):
            o[short] = v
    eps = torch.finfo(A.dtype).eps
    resid = (A * y).sum(1).abs()
    off = resid > 1e3 * eps * A.abs().sum(1).clamp_min(1.0)
    out[2] = torch.where(off, torch.inf, out[2])
    return out[0], out[1], out[2], out[3]


def merge_duplicate_rows(
    prob: BatchedSvmProblem,
) -> tuple[BatchedSvmProblem, torch.Tensor] | None:
    """Merge the rows of equal ``(x, y)`` into one whose bound is the sum of theirs.

    With equal ``x`` and ``y`` the rows' hinge losses are equal at every ``(w, b)``, so
    the primal ``1/2 ||w||^2 + sum_i u_pi xi_i`` is that of one row with bound
    ``sum u_pi`` for every kernel; a dual solution of the merged problem, split over
    the rows in proportion to their bounds, is a dual solution of the original with
    the same ``y^T a``, ``Q a``, objective and gap. Only for batches without a
    diagonal shift (S1b weighs squared slacks, whose merged dual is not a sum of
    bounds). Rows of equal ``x`` and opposite labels are kept apart.

    Returns
    -------
    (merged problem, group) or None
        ``group`` (n,): the merged row of each original row (merged rows in the order
        of their first original row); None when every row is distinct.
    """
    if prob.S is not None:
        return None
    key = torch.cat([prob.X, prob.y[:, None]], 1)
    _, inv = torch.unique(key, dim=0, return_inverse=True)
    m = int(inv.max()) + 1
    n = prob.n_samples
    if m == n:
        return None
    idx = torch.arange(n, device=inv.device)
    first = torch.full((m,), n, dtype=torch.long, device=inv.device)
    first = first.scatter_reduce(0, inv, idx, reduce="amin")
    order = torch.argsort(first)  # merged rows in the order of first occurrence
    rank = torch.empty_like(order)
    rank[order] = torch.arange(m, device=inv.device)
    group = rank[inv]
    keep = first[order]
    U = torch.zeros((prob.n_problems, m), dtype=prob.dtype, device=prob.device)
    U.index_add_(1, group, prob.U)
    return replace(prob, X=prob.X[keep], y=prob.y[keep], U=U), group


def _problem_scale(prob: BatchedSvmProblem) -> torch.Tensor:
    """Each problem's ``C`` (or its mean finite bound when the batch has no ``C``)."""
    if prob.C is not None:
        return prob.C.to(prob.dtype)
    U = prob.U
    fin = torch.isfinite(U)
    act = (U > 0).to(prob.dtype)
    return torch.where(fin, U, 1.0).sum(1) / act.sum(1).clamp_min(1.0)


def c_path_sources(
    U: torch.Tensor, stage: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which problems of a batch the ``C`` path may warm-start, and from which problem.

    A solution of problem ``p`` scaled by ``t`` is a feasible point of ``q`` with the
    same partition (and the start the ``C`` path needs) only when ``q``'s bounds are
    ``t`` times ``p``'s: the same rows and the same weights up to a factor, as for one
    bootstrap replicate at two values of ``C``. Problems that differ otherwise (other
    row blocks, class ratios or row weights: the subset fits of
    :mod:`torchsvm.mip.subset_search`) gave poor starts, several times the active-set
    iterations of the interior point's (docs/benchmarks.md, "Feature selection's start
    heuristics without the C path").

    Rule: problem ``q`` of stage ``r > 0`` chains from the problem ``p`` of stage
    ``r - 1`` whose zero and infinite bounds are the same and whose finite ones
    satisfy ``|u_q - t u_p| <= tau max u_q`` with ``t = sum u_q / sum u_p`` and ``tau
    = max(1e-6, 1e3 eps)`` (bounds rounded to float32 and solved in float64 are
    proportional to ~1e-7). The candidate ``p`` is the one whose scale-free signature
    ``u^T v / sum u`` (``v`` a fixed pseudo-random vector) is nearest to ``q``'s: equal
    for proportional bounds, and a sort of ``P`` numbers rather than a ``(P, n) @ (n,
    P)`` product of cosines. Every other problem, stage 0 included, is a root, solved
    from scratch.

    Parameters
    ----------
    U : tensor of shape (P, n)
        Upper bounds (``inf``: none).
    stage : tensor of shape (P,)
        Stage of each problem by increasing scale (:func:`_scale_stages`).

    Returns
    -------
    src : tensor of shape (P,), long
        The problem each one chains from, ``-1`` for a root.
    ratio : tensor of shape (P,)
        ``t``: the factor from the source's bounds to the problem's (1 for a root).
    """
    P, n = U.shape
    dt, dev = U.dtype, U.device
    src = torch.full((P,), -1, dtype=torch.long, device=dev)
    ratio = torch.ones(P, dtype=dt, device=dev)
    fin = torch.isfinite(U)
    act = U > 0
    Uf = torch.where(fin, U, 0.0)
    tot = Uf.sum(1)
    gen = torch.Generator().manual_seed(0)
    v = (0.5 + torch.rand(n, generator=gen, dtype=torch.float64)).to(dev, dt)
    sig = (Uf @ v) / torch.where(tot > 0, tot, 1.0)
    tau = max(1e-6, 1e3 * torch.finfo(dt).eps)
    stages = torch.unique(stage).tolist()
    for s_prev, s in zip(stages[:-1], stages[1:], strict=True):
        rows = (stage == s).nonzero()[:, 0]
        prev = (stage == s_prev).nonzero()[:, 0]
        sp, order = torch.sort(sig[prev])
        hi = torch.searchsorted(sp, sig[rows]).clamp(max=prev.numel() - 1)
        lo = (hi - 1).clamp_min(0)
        near = torch.where(
            (sig[rows] - sp[lo]).abs() <= (sp[hi] - sig[rows]).abs(), lo, hi
        )
        p = prev[order[near]]
        same = ((act[rows] == act[p]) & (fin[rows] == fin[p])).all(1)
        tot_p = tot[p]
        t = tot[rows] / torch.where(tot_p > 0, tot_p, 1.0)
        dev_ = (Uf[rows] - t[:, None] * Uf[p]).abs().amax(1)
        prop = same & (tot_p > 0) & (t > 0) & (dev_ <= tau * Uf[rows].amax(1))
        src[rows[prop]] = p[prop]
        ratio[rows[prop]] = t[prop]
    return src, ratio


def _scale_stages(prob: BatchedSvmProblem) -> torch.Tensor:
    """Stage of each problem by increasing scale: one per distinct ``C`` (at most 32),
    else 12 quantile bins."""
    scale = _problem_scale(prob)
    uniq = torch.unique(scale)
    if uniq.numel() <= 32:
        return torch.searchsorted(uniq, scale)
    q = torch.quantile(
        scale, torch.linspace(0, 1, 13, dtype=scale.dtype, device=scale.device)[1:-1]
    )
    return torch.searchsorted(q, scale)


class BoxQpSolver:
    """Batched solver of SVM duals sharing ``Q``; called as ``solver(problem, init=None)``.

    Parameters
    ----------
    config : SolverConfig
    c_path : bool
        For the linear kernel's interior-point method (``ipm``), solve a batch with
        several values of ``C`` along the ``C`` path (see the module docstring; only
        for ``n <= 2000``, where it was measured to pay), each problem whose bounds are
        proportional to those of a problem at the next smaller scale from that
        problem's solution (:func:`c_path_sources`; the solver finds them, so callers
        need not); False solves every problem by the interior point.
    merge_duplicates : bool
        Solve rows of equal ``(x, y)`` as one (:func:`merge_duplicate_rows`; batches
        without a diagonal shift, and only when no ``factor`` is given); False solves
        the rows as they are.
    vertex_roots : bool
        Along the ``C`` path, with the compiled active set (``active_set_kernel``,
        CPU), first try the roots from the vertex ``a = 0`` (:meth:`_roots_from_vertex`);
        False solves every root by the interior point (as on CUDA or without numba).

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

    def __init__(
        self,
        config: SolverConfig | None = None,
        *,
        c_path: bool = True,
        smo: bool | None = None,
        merge_duplicates: bool = True,
        vertex_roots: bool = True,
    ) -> None:
        self.config = config or SolverConfig()
        self.vertex_roots = vertex_roots
        self.c_path = c_path
        self.merge_duplicates = merge_duplicates
        # RBF (issue 14): dense batches by SMO (solvers/smo.py); None: the
        # rule of smo.use_smo, True/False force it on/off
        self.smo = smo

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
        init_alpha = init.alpha if isinstance(init, BatchedSvmSolution) else init
        P, n = problem.n_problems, problem.n_samples
        if init_alpha is not None and tuple(init_alpha.shape) != (P, n):
            raise ValueError(
                f"init must have shape (P, n) = ({P}, {n}); got {tuple(init_alpha.shape)}"
            )
        init_rho = init.rho if isinstance(init, BatchedSvmSolution) else None
        if self.merge_duplicates and factor is None and problem.S is None:
            with torch.inference_mode():
                merged = merge_duplicate_rows(problem)
            if merged is not None:
                sub, group = merged
                a0 = None
                if init_alpha is not None:
                    a0 = torch.zeros_like(sub.U).index_add_(
                        1, group, init_alpha.to(sub.device, sub.dtype)
                    )
                sol = self._solve(sub, a0, init_rho, factor)
                return self._split_merged(problem, sub, group, sol)
        return self._solve(problem, init_alpha, init_rho, factor)

    def _split_merged(
        self,
        problem: BatchedSvmProblem,
        sub: BatchedSvmProblem,
        group: torch.Tensor,
        sol: BatchedSvmSolution,
    ) -> BatchedSvmSolution:
        """The solution of the merged problem ``sub`` on the rows of ``problem``: each
        merged coordinate split over its rows in proportion to their bounds, which keeps
        ``0 <= a <= u``, ``y^T a`` and ``W^T a`` (the intercept, objectives and gap are
        those of ``sub``)."""
        with torch.inference_mode():
            U = problem.U
            Ug = sub.U[:, group]
            share = torch.where(Ug > 0, U / torch.where(Ug > 0, Ug, 1.0), 0.0)
            alpha = torch.minimum(sol.alpha[:, group] * share, U)
            w = None
            if problem.kernel == "linear":
                w = (alpha * problem.y) @ problem.X
        return BatchedSvmSolution(
            alpha=alpha,
            b=sol.b,
            w=w,
            status=sol.status,
            n_iter=sol.n_iter,
            primal=sol.primal,
            dual=sol.dual,
            duality_gap=sol.duality_gap,
            rho=sol.rho,
        )

    def _solve(
        self,
        problem: BatchedSvmProblem,
        init_alpha: torch.Tensor | None,
        init_rho: torch.Tensor | None,
        factor: SharedFactor | None,
    ) -> BatchedSvmSolution:
        """:meth:`__call__` on a batch whose duplicate rows are merged (or kept)."""
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
        if (
            problem.dtype == torch.float32
            and cfg.method == "auto"
            and method == "admm"  # the linear kernel with d < n: the low-rank route
            and cfg.tol < _FLOAT32_MIN_TOL
            and factor is None
        ):
            return self._solve_in_float64(problem, init_alpha)
        budget = self._memory_budget(problem)
        with torch.inference_mode():
            if method == "pdas" and use_smo(problem, self.smo):
                # RBF (issue 14): batched SMO along the C path; the rows it
                # does not certify go to the dense active set from its point
                Q = None if factor is None else factor.dense()
                out = list(
                    smo_problem(problem, cfg, _scale_stages(problem), init_alpha, Q)
                )
                bad = (out[2] != _OPT).nonzero()[:, 0]
                if bad.numel():
                    A_s, U_s = out[0][bad], problem.U[bad]
                    wide = int(((A_s > 0) & (A_s < U_s)).sum(1).max())
                    if (
                        wide >= _PDAS_WIDE_FACE
                        and self.smo is None
                        and init_alpha is None
                    ):
                        # wide faces: from SMO's points every row factorises its own
                        # face from scratch (nursery, n = 4500, faces of ~2300: 305
                        # CPU s for 220 problems); the staged active set reuses its
                        # factors along the C path and starts the chains from a pilot
                        # chain's partition (47 CPU s)
                        logger.info(
                            "smo: faces of up to %d free coordinates; the active set "
                            "solves the %d uncertified problems from its own starts",
                            wide,
                            bad.numel(),
                        )
                        sub = self._pdas(problem.select(bad.cpu()), None, factor)
                    else:
                        sub = self._pdas(
                            problem.select(bad.cpu()), A_s, factor, from_smo=True
                        )
                    _replace_rows(out, bad, sub, out[3][bad])
                return self._finish(problem, *out)
            if method == "pdas":
                out = self._pdas(problem, init_alpha, factor)
                return self._finish(problem, *out)
            if method in ("admm", "ipm"):
                op: SharedFactor | KernelOperator = factor or build_factor(
                    problem, cfg.eig_rel_tol
                )
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
            stages = _scale_stages(problem)
            if (
                method == "ipm"
                and self.c_path
                and problem.S is None
                and n
                <= (
                    _C_PATH_MAX_N_COMPILED
                    if use_kernel(cfg.active_set_kernel, problem.device)
                    else _C_PATH_MAX_N
                )
                and stages.max() > 0
            ):
                # only problems whose bounds are proportional to a problem's of the
                # stage before chain along the path (c_path_sources); a batch with
                # none goes to the interior point below
                src, ratio = c_path_sources(problem.U, stages)
                if bool((src >= 0).any()):
                    out = self._ipm_path(
                        problem,
                        op,  # type: ignore[arg-type]
                        src,
                        ratio,
                        stages,
                        chunk,
                    )
                    return self._finish(problem, *out)
                logger.info(
                    "no problem's bounds are proportional to a smaller scale's: "
                    "%d problems solved without the C path",
                    P,
                )
            if (
                method == "ipm"
                and self.vertex_roots
                and init_alpha is None
                and problem.S is None
                and use_kernel(cfg.active_set_kernel, problem.device)
            ):
                # without the C path (n above _C_PATH_MAX_N, or no proportional
                # bounds): every problem from a = 0 by the compiled active set where
                # a pilot shows that this pays, the rest by the interior point
                out = self._empty_out(problem)
                left = self._roots_from_vertex(
                    problem,
                    op,  # type: ignore[arg-type]
                    op.low_rank(),  # type: ignore[union-attr]
                    torch.arange(P, device=problem.device),
                    out,
                )
                for s in range(0, left.numel(), chunk):
                    rows = left[s : s + chunk]
                    part = self._ipm(
                        problem.select(rows.cpu()),
                        op,  # type: ignore[arg-type]
                    )
                    _replace_rows(out, rows, part, out[3][rows].clone())
                return self._finish(problem, *out)
            parts = []
            for s in range(0, P, chunk):
                sub = problem.select(slice(s, s + chunk))
                a0 = (
                    None
                    if init_alpha is None
                    else init_alpha[s : s + chunk].to(problem.device, problem.dtype)
                )
                r0 = (
                    None
                    if init_rho is None
                    else init_rho[s : s + chunk].to(problem.device, problem.dtype)
                )
                if method == "ipm":
                    parts.append(self._ipm(sub, op))  # type: ignore[arg-type]
                elif method == "admm":
                    parts.append(admm(sub, op, cfg, a0, r0))  # type: ignore[arg-type]
                else:
                    parts.append(fista(sub, op, cfg, a0))  # type: ignore[arg-type]
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
            logger.warning(
                "%d of %d problems stopped at max_iter=%d (gap above tol=%g)",
                n_bad,
                P,
                cfg.max_iter,
                cfg.tol,
            )
        return BatchedSvmSolution(
            alpha=alpha,
            b=b,
            w=w,
            status=status,
            n_iter=n_iter,
            primal=primal,
            dual=dual,
            duality_gap=gap,
            rho=rho,
        )

    # ---------------------------------------------------------------- helpers
    def _solve_in_float64(
        self, problem: BatchedSvmProblem, init_alpha: torch.Tensor | None
    ) -> BatchedSvmSolution:
        """Solve a float32 batch of the low-rank route in float64 (same float32-valued
        data), certify it by the float64 gap and round the answer to float32.

        At a ``tol`` below about ``1e-4`` float32 cannot certify the larger ``C`` of a
        bootstrap grid (the rounding of the gap's own terms; docs/benchmarks.md, "the
        active set on faces, float32, large n"), so the float32 path ended in
        :meth:`_refine_float64` anyway, after the active set had spent its iteration
        cap and the interior point had run again in float32: measured on the main
        job's fold at ``tol = 1e-7`` 42-51 CPU s against 3.3-3.6 solved so, and on S8
        linear 14.6-14.7 against 4.9-5.1 (docs/benchmarks.md, "float32 on the low-rank
        route"). The low-rank route keeps ``O(P n)`` memory,
        so float64 costs at most twice the float32 iterates; the dense (RBF) route,
        whose ``n x n`` matrix float32 may have been chosen to fit, is left as it is.
        """
        logger.info(
            "float32 batch of %d problems solved in float64 (tol=%g below float32's "
            "reach)",
            problem.n_problems,
            self.config.tol,
        )
        sub = problem.to(dtype=torch.float64)
        a0 = None if init_alpha is None else init_alpha.to(sub.device, torch.float64)
        # the rows are already merged (or kept) by __call__: solve them as they are
        sol = self._solve(sub, a0, None, None)

        def f32(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(torch.float32)

        return BatchedSvmSolution(
            alpha=f32(sol.alpha),  # type: ignore[arg-type]
            b=f32(sol.b),  # type: ignore[arg-type]
            w=f32(sol.w),
            status=sol.status,
            n_iter=sol.n_iter,
            primal=f32(sol.primal),  # type: ignore[arg-type]
            dual=f32(sol.dual),  # type: ignore[arg-type]
            duality_gap=f32(sol.duality_gap),  # type: ignore[arg-type]
            rho=f32(sol.rho),  # type: ignore[arg-type]
        )

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
        from_smo: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """Primal-dual active set on the dense ``Q`` (see :mod:`torchsvm.solvers.pdas`).

        Without a warm start the problems are solved in stages of increasing scale
        (``C``, or the mean bound): the first stage starts with every coordinate at its
        upper bound, each later problem from the partition of the most similar problem
        (cosine of the bound vectors) of the previous stage, so most problems need 3-6
        iterations. Rows the active-set iterations do not settle go to ADMM.

        When the first stage's faces might not fit the factor store together (whose
        factors are reused along the stages), one chain of problems (a problem of the
        first stage and its successors) is solved first. If its faces are that wide
        (nursery's RBF inner CV: ~9200 free coordinates of ~10500), the other chains
        are solved in groups whose factors fit, each group's first problem started
        from the first chain's partition instead of cold (issue 18).

        Rows whose active set cycles are finished by the monotone active set
        (:func:`~torchsvm.solvers.pdas.pdas_monotone`), which fixes about one
        coordinate per step: from the active set's own starts that was 1372 steps per
        problem on churn's RBF bootstrap fold (n = 2579, every problem cycled). Unless
        the start is already SMO's (``from_smo``), those rows first get SMO to its
        loose violation from 0 (finite bounds, no diagonal shift), whose point is a few
        tens of steps from the optimum (not with ``smo=False``).
        """
        cfg = self.config
        y, U, S = prob.y, prob.U, prob.S
        P, n = U.shape
        dt, dev = prob.dtype, prob.device
        if factor is not None:
            Q = factor.dense()
        else:
            K = compute_kernel(
                prob.X,
                kernel=prob.kernel,
                gamma=prob.gamma,
                degree=prob.degree,
                coef0=prob.coef0,
            )
            Q = K.mul_(y[:, None]).mul_(y[None, :])
        face_fn = face_kernel(
            prob.X, y, prob.kernel, prob.gamma, prob.degree, prob.coef0
        )
        fin = torch.isfinite(U)
        A = torch.zeros((P, n), dtype=dt, device=dev)
        QA = torch.zeros((P, n), dtype=dt, device=dev)
        b = torch.zeros(P, dtype=dt, device=dev)
        n_iter = torch.zeros(P, dtype=torch.long, device=dev)
        ok = torch.zeros(P, dtype=torch.bool, device=dev)
        budget = self._memory_budget(prob) // 4
        starts = torch.zeros((P, n), dtype=dt, device=dev)

        def run(rows: torch.Tensor, A0: torch.Tensor, factors=None):  # noqa: ANN001, ANN202
            starts[rows] = A0
            a, qa, bb, it, good, store = pdas_dense(
                Q,
                y,
                U[rows],
                None if S is None else S[rows],
                A0,
                max_iter=cfg.pdas_max_iter,
                max_bytes=budget,
                face_fn=face_fn,
                factors=factors,
                return_factors=True,
                stall=_PDAS_STALL if from_smo else 0,
            )
            A[rows], QA[rows], b[rows], n_iter[rows], ok[rows] = a, qa, bb, it, good
            return store

        if init is not None:
            run(torch.arange(P, device=dev), project_face(init, y, U), None)
        else:
            Ufin = torch.where(fin, U, 0.0)
            act = (U > 0).to(dt)
            scale = _problem_scale(prob)
            stage = _scale_stages(prob)
            pattern = torch.where(fin, U, act) / scale[:, None]
            pattern = pattern / pattern.norm(dim=1, keepdim=True).clamp_min(1e-300)
            levels = torch.unique(stage).tolist()
            # each later problem starts from the most similar problem of the stage
            # before (its source); root: the first stage's problem its chain starts at
            src_of = torch.full((P,), -1, dtype=torch.long, device=dev)
            root = torch.arange(P, device=dev)
            prev_rows: torch.Tensor | None = None
            for st in levels:
                rows = (stage == st).nonzero()[:, 0]
                if prev_rows is not None:
                    pos = (pattern[rows] @ pattern[prev_rows].T).argmax(1)
                    src_of[rows] = prev_rows[pos]
                    root[rows] = root[src_of[rows]]
                prev_rows = rows

            def warm(
                src: torch.Tensor, rows: torch.Tensor, unseen: bool = False
            ) -> torch.Tensor:
                """Start of ``rows`` with the partition of the solved problems ``src``;
                ``unseen``: coordinates inactive in the source (another fold's held-out
                rows) start in the source's most common state, not at 0."""
                Ur = U[rows]
                As, Us = A[src], Ufin[src]
                at_up = fin[src] & (As >= Us) & (Us > 0)
                free_s = (As > 0) & ~at_up
                if unseen:
                    on = (U[src] > 0).to(dt)
                    n_up, n_free = (at_up * on).sum(1), (free_s * on).sum(1)
                    n_lo = on.sum(1) - n_up - n_free
                    off = U[src] <= 0
                    to_up = (n_up > n_free) & (n_up > n_lo)
                    to_free = ~to_up & (n_free > n_lo)
                    at_up = at_up | (off & to_up[:, None])
                    free_s = free_s | (off & to_free[:, None])
                A0 = torch.where(at_up & fin[rows], Ur, 0.0)
                return torch.where(
                    free_s & (Ur > 0), 0.5 * torch.where(fin[rows], Ur, 1.0), A0
                )

            def chains(roots: torch.Tensor, start: torch.Tensor | None) -> None:
                """Solve every problem whose chain starts at ``roots``, stage by stage;
                the first stage cold (every coordinate at its upper bound) or, with
                ``start``, from the partition of the solved problem ``start``."""
                mine = (root[:, None] == roots[None, :]).any(1)
                prev: torch.Tensor | None = None
                prev_store = None
                for st in levels:
                    rows = ((stage == st) & mine).nonzero()[:, 0]
                    if rows.numel() == 0:
                        continue
                    factors = None
                    if prev is None:
                        if start is None:
                            A0 = torch.where(fin[rows], U[rows], 0.5 * act[rows])
                        else:
                            A0 = warm(start.expand(rows.numel()), rows, unseen=True)
                    else:
                        src = src_of[rows]
                        pos = torch.searchsorted(prev, src)
                        if prev_store is not None:
                            # the start has the source's face: reuse its factor
                            factors = prev_store.subset(pos)
                        A0 = warm(src, rows)
                    prev_store = run(rows, A0, factors)
                    prev = rows

            roots = (stage == levels[0]).nonzero()[:, 0]
            item = U.element_size()
            n_act = int((U[roots] > 0).sum(1).max())
            if roots.numel() > 1 and roots.numel() * n_act * n_act * item > budget:
                # the faces of the first stage might not fit the factor store together:
                # solve one chain first and measure its widest face (issue 18)
                pilot = roots[:1]
                chains(pilot, None)
                mine = root == pilot
                Um = torch.where(fin[mine], U[mine], torch.inf)
                f = int(((A[mine] > 0) & (A[mine] < Um)).sum(1).max())
                per_row = int(_STORE_GROWTH * f * f * item) + 1
                rest = roots[1:]
                if f < _PDAS_WIDE_FACE:
                    chains(rest, None)  # narrow faces: all chains at once, as before
                else:
                    # wide faces: from every coordinate at its upper bound, the faces
                    # grow through several factorisations of up to f^3 / 3 flops; the
                    # pilot's partition (another fold or replicate at the same scale)
                    # is much nearer. And the factors of every chain of a stage may not
                    # fit the store together, whose factors then could not be reused
                    # along the chains (a full factorisation per problem and stage):
                    # the chains go in groups whose factors fit
                    g = max(1, budget // per_row)
                    logger.info(
                        "pdas: faces of up to %d free coordinates; %d chains solved "
                        "%d at a time from the first chain's partition",
                        f,
                        rest.numel(),
                        g,
                    )
                    for s0 in range(0, rest.numel(), g):
                        chains(rest[s0 : s0 + g], pilot[0])
            else:
                chains(roots, None)
        primal, dual, rel, b_opt = duality_gap(A, QA, y, U, S)
        status = torch.where(ok & (rel <= cfg.tol), _OPT, _MAXIT)
        bad = (status != _OPT).nonzero()[:, 0]
        if bad.numel():
            # the active set cycled on these rows (nearly singular faces: near-duplicate
            # rows): the monotone variant from their feasible starts (pdas_monotone)
            Sb = None if S is None else S[bad]
            A_m0 = project_face(starts[bad], y, U[bad])
            # SMO needs the kernel itself, a copy of Q: only where it fits a quarter
            # of the budget (n <= 11585 in float64 at the default 4 GiB)
            smo_ok = self.smo is not False and n * n * Q.element_size() <= budget
            if smo_ok and use_smo(prob.select(bad.cpu()), True):
                # the cycled rows' starts (every coordinate at its bound, or another
                # problem's partition) lie far from their optima, a step per coordinate
                # for the monotone method; SMO's loose point from 0 is near. Starts
                # that are SMO's point already go on to a ten times smaller violation
                A_m0, _, it_s, _ = smo_solve(
                    Q * y[:, None] * y[None, :],
                    y,
                    U[bad],
                    A_m0 if from_smo else None,
                    eps=_SMO_EPS * (_CYCLE_EPS if from_smo else 1.0),
                )
                n_iter[bad] = n_iter[bad] + it_s
                logger.info(
                    "pdas: %d of %d problems cycled; SMO %s (%.0f iterations on "
                    "average) starts the monotone active set",
                    bad.numel(),
                    P,
                    "resumed" if from_smo else "from 0",
                    float(it_s.double().mean()),
                )
            a_m, qa_m, _, it_m, ok_m = pdas_monotone(
                Q,
                y,
                U[bad],
                Sb,
                A_m0,
                max_iter=max(_MONOTONE_MIN_ITER, 2 * n),
                max_bytes=budget,
                face_fn=face_fn,
            )
            g_m = duality_gap(a_m, qa_m, y, U[bad], Sb)
            good = ok_m & (g_m[2] <= cfg.tol)
            logger.info(
                "pdas: %d of %d problems cycled; the monotone active set certified "
                "%d of them (%.0f iterations on average)",
                bad.numel(),
                P,
                int(good.sum()),
                float(it_m.double().mean()),
            )
            gb = bad[good]
            A[gb] = a_m[good]
            n_iter[gb] = n_iter[gb] + it_m[good]
            primal[gb], dual[gb], rel[gb], b_opt[gb] = (v[good] for v in g_m)
            status[gb] = _OPT
        rho = torch.zeros(P, dtype=dt, device=dev)
        out = [A, b_opt, status, n_iter, primal, dual, rel, rho]
        if bool((status != _OPT).any()):
            if dt != torch.float64:
                self._refine_float64(prob, out, "pdas")
            else:
                self._admm_rest(
                    prob, factor or build_factor(prob, cfg.eig_rel_tol), out, "pdas"
                )
        return tuple(out)

    def _ipm_chunked(
        self, prob: BatchedSvmProblem, F: SharedFactor, chunk: int
    ) -> tuple[torch.Tensor, ...]:
        """:meth:`_ipm_only` on chunks of at most ``chunk`` problems."""
        parts = [
            self._ipm_only(prob.select(slice(s, s + chunk)), F)
            for s in range(0, prob.n_problems, chunk)
        ]
        return tuple(torch.cat([p[i] for p in parts]) for i in range(8))

    def _ipm_path(
        self,
        prob: BatchedSvmProblem,
        F: SharedFactor,
        src: torch.Tensor,
        ratio: torch.Tensor,
        stage: torch.Tensor,
        chunk: int,
    ) -> tuple[torch.Tensor, ...]:
        """Interior point at the smallest ``C``, feasible active set along the ``C`` path.

        The roots (``src < 0``, :func:`c_path_sources`: stage ``0``, the smallest
        scale, and every problem whose bounds are not proportional to a problem's of
        the stage before) are solved by :meth:`_ipm_only` (no ADMM first: its rounded,
        active-set-finished points are vertices of the box, whose partition is the
        start the next stage needs; measured 13.0 s vs 16.5 s for the active-set stages
        of the main job's fold), or, with the compiled active set on the CPU, from
        ``a = 0`` where a pilot of them shows that this pays
        (:meth:`_roots_from_vertex`). Every other problem starts from the solution of its
        source ``src`` (the same bootstrap replicate at the previous ``C``), scaled by
        ``ratio`` and projected onto its feasible set, which keeps the source's
        partition; :func:`~torchsvm.solvers.active_set.active_set_low_rank` finishes
        it. Every later stage runs in one pipelined call: a row starts as soon
        as its source has stopped (``parent`` / ``make_start``), so the batch stays
        full and the batched iterations are those of the longest replicate chain (215
        on the main job's fold) rather than the sum of each stage's slowest row (305).
        Every problem is certified by its duality gap; rows the active set does not
        certify are solved by :meth:`_ipm_only` (their successors start from their
        uncertified, feasible, point).
        """
        cfg = self.config
        y, U = prob.y, prob.U
        P, n = U.shape
        dt, dev = prob.dtype, prob.device
        W = F.low_rank()
        fin = torch.isfinite(U)
        out = self._empty_out(prob)
        A = out[0]
        snap = max(1e-6, 1e3 * torch.finfo(dt).eps)

        def start(rows: torch.Tensor, A0: torch.Tensor) -> torch.Tensor:
            """Feasible start for ``rows`` from the point ``A0`` (scaled source)."""
            # snap to the bounds what a tolerance-certified point left near them
            # (the interior point, ADMM or the polish certify within ``tol``)
            # (float32: the interior point stops at ~100 eps, whose iterate sits
            # ~1e-5 off the bounds; a 1e-6 snap left faces of hundreds of points)
            Ur, fr = U[rows], fin[rows]
            r = A0 / torch.where(fr & (Ur > 0), Ur, 1.0)
            A0 = torch.where(r < snap, 0.0, torch.where(fr & (r > 1 - snap), Ur, A0))
            A0 = torch.minimum(A0, torch.where(fr, Ur, A0)) * (Ur > 0)
            # same bootstrap counts: the scaled point is feasible; project the others
            viol = (A0 * y).sum(1).abs() > 1e3 * torch.finfo(dt).eps * (
                1.0 + A0.abs().sum(1)
            )
            if bool(viol.any()):
                vi = viol.nonzero()[:, 0]
                A0[vi] = project_face(A0[vi], y, Ur[vi])
            return A0

        # the roots: with the compiled active set, from the vertex a = 0 where that
        # pays (_roots_from_vertex); the others by the interior point, whose rounded
        # point the active set below then only cleans (1-2 iterations; in float32
        # the rounded point can keep coordinates a little off their bounds within
        # the gap tolerance)
        rows0 = (src < 0).nonzero()[:, 0]
        from_zero = False  # the roots' pilot from a = 0 accepted
        if self.vertex_roots and use_kernel(cfg.active_set_kernel, dev):
            # above _C_PATH_MAX_N a pilot whose rows are all certified within the cap
            # is kept whatever its mean (mushroom's bootstrap batch, n = 4500, k =
            # 86: 488 iterations per root from a = 0 against the threshold of 435,
            # where the interior point and its purification of one-hot faces took
            # 4x the batch's time; scripts/ab_c_path_large_n.py)
            verdict: list[bool] = []
            rows0 = self._roots_from_vertex(
                prob,
                F,
                W,
                rows0,
                out,
                accept_certified=n > _C_PATH_MAX_N,
                accepted=verdict,
            )
            from_zero = bool(verdict) and verdict[0]
        if rows0.numel():
            it0 = out[3][rows0].clone()
            first = self._ipm_chunked(prob.select(rows0.cpu()), F, chunk)
            _replace_rows(out, rows0, first, it0)
            Ur0 = U[rows0]
            a, b_as, it, ok = active_set_low_rank(
                W,
                y,
                Ur0,
                start(rows0, first[0].clone()),
                max_iter=_PATH_MAX_ITER,
                tol=cfg.tol,
                kernel=cfg.active_set_kernel,
            )
            p_, d_, rel, b_ = _certify(a, F.matvec(a), y, Ur0, b_as, cfg.tol)
            good = ok & (rel <= cfg.tol)
            # keep the interior point's (certified) answer where the clean-up fails
            gi = rows0[good]
            sub = (a, b_, torch.full_like(it, _OPT), it, p_, d_, rel, out[7][rows0])
            _replace_rows(out, gi, tuple(v[good] for v in sub), out[3][gi])
        # every other problem: from its source (the same bootstrap replicate at the
        # previous C); all in one pipelined call, each row starting as soon as its
        # source has stopped (sources come earlier: they are roots or of a smaller
        # stage)
        rest = (src >= 0).nonzero()[:, 0]
        if rest.numel() == 0:
            return tuple(out)
        rest = rest[torch.argsort(stage[rest], stable=True)]
        local = torch.full((P,), -1, dtype=torch.long, device=dev)
        local[rest] = torch.arange(rest.numel(), device=dev)
        parent = local[src[rest]]  # -1 where the source is a root

        def make_start(q: torch.Tensor, A_par: torch.Tensor) -> torch.Tensor:
            g = rest[q]
            return start(g, A_par * ratio[g][:, None])

        A0 = torch.zeros((rest.numel(), n), dtype=dt, device=dev)
        r1 = (parent < 0).nonzero()[:, 0]
        g1 = rest[r1]
        A0[r1] = start(g1, A[src[g1]] * ratio[g1][:, None])
        Ur = U[rest]
        a, b_as, it, ok = active_set_low_rank(
            W,
            y,
            Ur,
            A0,
            max_iter=_PATH_MAX_ITER,
            tol=cfg.tol,
            parent=parent,
            make_start=make_start,
            kernel=cfg.active_set_kernel,
        )
        p_, d_, rel, b_ = _certify(a, F.matvec(a), y, Ur, b_as, cfg.tol)
        # every iterate is feasible (the starts are projected), so the gap
        # certifies a row whatever ``ok`` says (as for the roots from a = 0)
        good = rel <= cfg.tol
        stat = torch.where(good, _OPT, _MAXIT)
        _replace_rows(out, rest, (a, b_, stat, it, p_, d_, rel, out[7][rest]), 0)
        bad = rest[~good]
        if bad.numel() and from_zero:
            # where the roots went from a = 0, so do the rows the path leaves: on
            # mushroom's bootstrap batch (n = 4500, k = 86) 14 of 200 rows stopped at
            # _PATH_MAX_ITER, and the interior point's purification of their one-hot
            # faces took 5 of the batch's 6.4 CPU s (scripts/ab_c_path_large_n.py)
            bad = self._roots_from_vertex(prob, F, W, bad, out, with_pilot=False)
        if bad.numel():
            logger.info(
                "ipm path: %d of %d problems handed to the interior point",
                bad.numel(),
                rest.numel(),
            )
            _replace_rows(
                out,
                bad,
                self._ipm_chunked(prob.select(bad.cpu()), F, chunk),
                out[3][bad].clone(),
            )
        return tuple(out)

    @staticmethod
    def _empty_out(prob: BatchedSvmProblem) -> list[torch.Tensor]:
        """Solver outputs (alpha, b, status, iterations, primal, dual, gap, rho) of a
        batch none of whose problems is solved yet (status ``max_iter``)."""
        P, n = prob.U.shape
        dt, dev = prob.dtype, prob.device
        A = torch.zeros((P, n), dtype=dt, device=dev)
        b = torch.zeros(P, dtype=dt, device=dev)
        status = torch.full((P,), _MAXIT, dtype=torch.long, device=dev)
        n_iter = torch.zeros(P, dtype=torch.long, device=dev)
        primal, dual, gap = (torch.zeros(P, dtype=dt, device=dev) for _ in range(3))
        return [A, b, status, n_iter, primal, dual, gap, torch.zeros_like(b)]

    def _roots_from_vertex(
        self,
        prob: BatchedSvmProblem,
        F: SharedFactor,
        W: torch.Tensor,
        rows0: torch.Tensor,
        out: list[torch.Tensor],
        accept_certified: bool = False,
        with_pilot: bool = True,
        accepted: list[bool] | None = None,
    ) -> torch.Tensor:
        """The C path's roots ``rows0`` (or, off the path, every problem of the
        batch) by the compiled active set from ``a = 0``.

        ``a = 0`` is a feasible vertex, and with the compiled kernel a row-iteration
        costs a few microseconds, so a root whose solution has few support vectors
        costs less so than by the interior point (``O(n k^2)`` per iteration), even at
        about two row-iterations per support vector. Measured (CPU, one thread;
        docs/benchmarks.md, "compiled active set and the C path's roots from a = 0"):
        the main job's fold (breast_cancer, n = 512, k = 30, 500 roots) takes 111
        iterations per root from 0, its roots 0.27 CPU s against 0.48 by the interior
        point, the fold 0.87 against 1.10 (``scripts/profile_main_job_fold.py
        --compare``). On staged datasets with many bounded coordinates (german,
        spambase, churn, diabetes, ...) every pilot row reached the cap of
        ``_VERTEX_MAX_ITERS (k + 1)`` iterations (``scripts/vertex_roots_pilot.py``).
        So a pilot goes first, one root in ``_VERTEX_PILOT_SHARE`` (at least one, at
        most ``_VERTEX_PILOT_ROWS``, spread evenly over ``rows0``: a batch off the
        path lists its problems C by C, the smallest C, with the most support
        vectors, first), so that a rejected pilot costs a small share of
        the roots' time (german's 500-replicate fold and 5-replicate batches of german
        and spambase: within the noise), and the other rows follow only if the pilot
        averaged at most ``_VERTEX_PILOT_ITERS (k + 1)`` iterations. Certified rows
        are written to ``out``, with their active-set iterations; an uncertified row
        keeps its iterations in ``out``, to which the interior point's are added.
        With ``accept_certified``, a pilot whose rows are all certified (within the
        cap) is accepted whatever its mean; with ``with_pilot=False`` every row is
        tried at once. The pilot's verdict is appended to ``accepted`` (when given).
        Returns the rows left for the interior point (uncertified, or not tried).
        """
        cfg = self.config
        y, U = prob.y, prob.U
        k1 = W.shape[1] + 1

        def solve(rows: torch.Tensor) -> torch.Tensor:
            Ur = U[rows]
            a, b_as, it, ok = active_set_low_rank(
                W,
                y,
                Ur,
                torch.zeros_like(Ur),
                max_iter=_VERTEX_MAX_ITERS * k1,
                tol=cfg.tol,
                kernel=cfg.active_set_kernel,
            )
            p_, d_, rel, b_ = _certify(a, F.matvec(a), y, Ur, b_as, cfg.tol)
            # every iterate is feasible, so its gap certifies it whatever ``ok``
            # says: on one-hot data (mushroom's bootstrap batch) ~1.5 % of the rows
            # cycle on ties at the cap, already within tol, where the interior point
            # and its purification took 0.4 CPU s per row
            good = rel <= cfg.tol
            sub = (a, b_, torch.full_like(it, _OPT), it, p_, d_, rel, out[7][rows])
            _replace_rows(out, rows[good], tuple(v[good] for v in sub), 0)
            # an uncertified row's iterations count for the interior point's
            out[3][rows[~good]] = it[~good]
            return good

        if not with_pilot:
            return rows0[~solve(rows0)]
        m = _vertex_pilot_rows(rows0.numel())
        if m == 0:
            return rows0
        # the pilot spread evenly over the rows (a batch without the C path lists
        # its problems C by C, and the smallest C takes the most iterations)
        pick = torch.zeros(rows0.numel(), dtype=torch.bool, device=rows0.device)
        pick[torch.linspace(0, rows0.numel() - 1, m).round().long()] = True
        pilot, later = rows0[pick], rows0[~pick]
        good = solve(pilot)
        mean_it = float(out[3][pilot].double().mean()) if pilot.numel() else 0.0
        reject = mean_it > _VERTEX_PILOT_ITERS * k1 and not (
            accept_certified and bool(good.all())
        )
        if accepted is not None:
            accepted.append(not reject)
        if reject:
            logger.info(
                "ipm: the pilot took %.0f iterations from a = 0; the interior point "
                "solves the %d problems",
                mean_it,
                rows0.numel() - int(good.sum()),
            )
            return torch.cat([pilot[~good], later])
        left = [pilot[~good]]
        if later.numel():
            left.append(later[~solve(later)])
        return torch.cat(left)

    def _admm_rest(
        self,
        prob: BatchedSvmProblem,
        F: SharedFactor,
        out: list[torch.Tensor],
        name: str,
    ) -> None:
        """Finish the uncertified rows of ``out`` (solver outputs) with ADMM, in place
        (float32 problems: :meth:`_refine_float64` instead)."""
        bad = (out[2] != _OPT).nonzero()[:, 0]
        if bad.numel() == 0:
            return
        if prob.dtype != torch.float64:
            self._refine_float64(prob, out, name)
            return
        bad = self._monotone_linear(prob, F, out, bad)
        if bad.numel() == 0:
            return
        logger.info(
            "%s: %d of %d problems handed to ADMM", name, bad.numel(), prob.n_problems
        )
        sub = admm(prob.select(bad.cpu()), F, self.config, out[0][bad])
        _replace_rows(out, bad, sub, out[3][bad])

    def _monotone_linear(
        self,
        prob: BatchedSvmProblem,
        F: SharedFactor,
        out: list[torch.Tensor],
        bad: torch.Tensor,
    ) -> torch.Tensor:
        """Linear kernel: the monotone active set (:func:`pdas_monotone`) on the dense
        ``Q`` finishes the uncertified rows ``bad`` of ``out`` from their points
        (projected onto ``y^T a = 0``), in place; returns the rows still uncertified,
        whose points it replaces where its gap is smaller (ADMM's start).

        Near-separable rows at large ``C`` have optimal faces wider than ``d + 1``
        (a singular ``Q_FF``, many optimal ``a``): the low-rank active set and the
        polish stop short there, and ADMM crawls (spambase fold 0, ``C = 32``,
        replicate 460: 20000 ADMM iterations, 67 CPU s, gap 1.8e-7 > 1e-7). On such a
        face the monotone method may stop at a stationary point up to the accuracy of
        its solve; those rows are purified (at most ``k + 1`` free coordinates, ``Q a``
        unchanged) and get a second pass. Only where ``Q`` fits a quarter of the
        memory budget (n <= 11585 in float64 at 4 GiB)."""
        y, U = prob.y, prob.U
        n = U.shape[1]
        budget = self._memory_budget(prob) // 4
        if (
            prob.kernel != "linear"
            or prob.S is not None
            or prob.dtype != torch.float64
            or n * n * U.element_size() > budget
        ):
            return bad
        Z = prob.X * y[:, None]
        Q = Z @ Z.T
        face_fn = face_kernel(
            prob.X, y, prob.kernel, prob.gamma, prob.degree, prob.coef0
        )
        W = F.low_rank()
        tol = self.config.tol
        certified = 0
        for attempt in range(2):
            Ub = U[bad]
            A0 = project_face(out[0][bad], y, Ub)
            if attempt:
                A0 = project_face(purify_start(W, y, Ub, A0, W.shape[1] + 1), y, Ub)
            a_m, qa_m, b_m, it_m, _ = pdas_monotone(
                Q,
                y,
                Ub,
                None,
                A0,
                max_iter=max(_MONOTONE_MIN_ITER, 2 * n),
                max_bytes=budget,
                face_fn=face_fn,
            )
            # every iterate is feasible up to rounding, so its gap (infinite where
            # ``y^T a`` is off, :func:`_certify`) certifies it whatever the method's
            # own test says (a row may stop at the cap)
            g_m = _certify(a_m, qa_m, y, Ub, b_m, tol)
            good = g_m[2] <= tol
            better = good | (g_m[2] < out[6][bad])
            gb = bad[better]
            out[0][gb] = a_m[better]
            out[1][gb] = g_m[3][better]
            out[3][gb] = out[3][gb] + it_m[better]
            for k in range(3):
                out[4 + k][gb] = g_m[k][better]
            out[2][bad[good]] = _OPT
            certified += int(good.sum())
            bad = bad[~good]
            if bad.numel() == 0:
                break
        logger.info(
            "linear: the monotone active set certified %d uncertified problems, "
            "%d left",
            certified,
            bad.numel(),
        )
        return bad

    def _refine_float64(
        self, prob: BatchedSvmProblem, out: list[torch.Tensor], name: str
    ) -> None:
        """Solve the uncertified rows of a float32 batch again in float64, in place.

        A relative gap near ``tol = 1e-7`` (or ``1e-5``) is at or below what float32
        arithmetic can certify: the rounding error of the gap's own terms is about
        ``eps n C |K|``, and float32 ADMM stagnates there for minutes (docs/
        benchmarks.md, "float32 at the default tolerance"). The rows are solved in
        float64 on the same (float32-valued) data, warm-started from the float32
        iterate, and certified by the float64 gap; ``alpha`` is returned rounded to
        float32, with the float64 intercept, objectives and gap.
        """
        bad = (out[2] != _OPT).nonzero()[:, 0]
        if bad.numel() == 0:
            return
        logger.info(
            "%s: %d of %d float32 problems not certified at tol=%g; refined in float64",
            name,
            bad.numel(),
            prob.n_problems,
            self.config.tol,
        )
        sub = prob.select(bad.cpu()).to(dtype=torch.float64)
        solver = BoxQpSolver(self.config, c_path=self.c_path, smo=self.smo)
        sol = solver(sub, init=out[0][bad].to(torch.float64))
        vals = (
            sol.alpha,
            sol.b,
            sol.status,
            sol.n_iter,
            sol.primal,
            sol.dual,
            sol.duality_gap,
            sol.rho,
        )
        dt = out[0].dtype
        res = tuple(v if not v.is_floating_point() else v.to(dt) for v in vals)
        _replace_rows(out, bad, res, out[3][bad])

    def _ipm(
        self, prob: BatchedSvmProblem, F: SharedFactor
    ) -> tuple[torch.Tensor, ...]:
        """Interior point, rounding to the box, polish; ADMM finishes uncertified rows."""
        cfg = self.config
        # easy problems (few bounded support vectors) finish in a few ADMM checks, which
        # cost O(n k) per iteration against the interior point's O(n k^2): try those first
        # (measured: n = 512 x 5500 problems 9.0 s ADMM-first vs 14.1 s; n = 5000 x 220
        # problems 22 s vs 4.1 s, where ADMM needs hundreds of iterations)
        # Only for large batches: measured on breast_cancer (n = 512, linear, one C, at
        # load ~9), the interior point alone was faster for 1 problem (0.18 s vs 0.56 s
        # at C = 1, 0.19 s vs 1.28 s at C = 10), 20 (0.34 vs 0.74 s) and 100 (1.9 vs
        # 2.3 s at C = 1, 1.8 vs 5.3 s at C = 8); at 500 it was 7.8 vs 6.9 s at C = 1 but
        # 9.0 vs 15.3 s at C = 8. Single fits (CV of Platt scaling, estimators) gain most.
        first = None
        if (
            cfg.ipm_after
            and prob.n_samples <= cfg.ipm_admm_max_n
            and prob.n_problems >= _ADMM_FIRST_MIN_PROBLEMS
        ):
            first = admm(prob, F, cfg, max_iter=cfg.ipm_after)
        if first is not None:
            rest = (first[2] != _OPT).nonzero()[:, 0]
            if rest.numel() == 0:
                return first
            out = list(first)
            _replace_rows(
                out, rest, self._ipm_only(prob.select(rest.cpu()), F), cfg.ipm_after
            )
            return tuple(out)
        return self._ipm_only(prob, F)

    def _ipm_only(
        self, prob: BatchedSvmProblem, F: SharedFactor
    ) -> tuple[torch.Tensor, ...]:
        """Interior point, then an exact face solve from its partition (active set).

        The interior iterate's coordinates within a relative ``1e-6`` (float32:
        ``1e3 eps``) of a bound go onto it; the rest form each problem's face. Without a
        diagonal shift the feasible active set
        (:func:`~torchsvm.solvers.active_set.active_set_low_rank`, from the rounded
        point projected onto ``y^T a = 0``) solves the face exactly and corrects the
        misplaced coordinates; with one, primal-dual active-set iterations
        (:func:`~torchsvm.solvers.pdas.pdas_dense` on the low-rank factor) do. Rows
        they do not certify are polished from the rounded point, and rows still
        uncertified go to ADMM.
        """
        cfg = self.config
        y, U, S = prob.y, prob.U, prob.S
        W = F.low_rank()
        a, _, n_iter, _ = ipm_low_rank(
            W, y, U, S, tol=cfg.ipm_tol, compile=cfg.ipm_compile
        )
        fin = torch.isfinite(U)
        r = a / torch.where(fin & (U > 0), U, 1.0)
        A0 = torch.where(r < 1e-6, 0.0, torch.where(fin & (r > 1 - 1e-6), U, a))
        if S is None:
            # the feasible active set (solvers/active_set.py) from the rounded point,
            # projected onto y^T a = 0: measured on S8 linear (n = 5000, 220 problems,
            # `scripts/bench_solver.py --workload s8 --phases`), the infeasible
            # primal-dual active set below certified few rows within its 8 iterations
            # and left the rest to the polish (docs/benchmarks.md, "pipelined C path")
            snap = max(1e-6, 1e3 * torch.finfo(prob.dtype).eps)
            A0 = torch.where(r < snap, 0.0, torch.where(fin & (r > 1 - snap), U, a))
            # a degenerate problem (duplicate rows of both labels) leaves the interior
            # point with hundreds of free coordinates per row; purification moves them
            # onto bounds with Q a and the objective unchanged (or lower). Faces up to
            # _PURIFY_ABOVE (k + 1) stay with the active set, which settles them in a
            # few steps (measured on the main job's fold, where purifying those too
            # cost ~10-20 % more CPU: scripts/bench_solver.py --workload main-job)
            A0 = project_face(A0, y, U)
            k1 = W.shape[1] + 1
            A0 = purify_start(W, y, U, A0, k1, only_above=_PURIFY_ABOVE * k1)
            A0 = project_face(A0, y, U)
            A, b_as, it_p, ok = active_set_low_rank(
                W,
                y,
                U,
                A0,
                max_iter=_IPM_AS_ITER,
                tol=cfg.tol,
                kernel=cfg.active_set_kernel,
            )
            n_iter = n_iter + it_p
            # every iterate is feasible, so its gap certifies it whatever ``ok`` says
            primal, dual, rel, b = _certify(A, F.matvec(A), y, U, b_as, cfg.tol)
        else:
            face_fn = face_kernel(
                prob.X, y, prob.kernel, prob.gamma, prob.degree, prob.coef0
            )
            A, _, _, it_p, ok = pdas_dense(
                None,
                y,
                U,
                S,
                A0,
                max_iter=_IPM_PDAS_ITER,
                face_fn=face_fn,
                low_rank=W,
                max_bytes=self._memory_budget(prob) // 4,
                reuse_factors=False,
            )
            n_iter = n_iter + it_p
            primal, dual, rel, b = duality_gap(A, F.matvec(A), y, U, S)
            # an unsettled row may violate y^T a = 0, where the gap certifies nothing
            rel = torch.where(ok, rel, torch.inf)
        bad = (rel > cfg.tol).nonzero()[:, 0]
        if bad.numel() and cfg.polish:
            Ub, Sb = U[bad], None if S is None else S[bad]
            Ab = project_face(A0[bad], y, Ub)
            Bp = polish(Ab, y, Ub, Sb, F, cfg.polish_iter)
            p2, d2, rel2, b2 = duality_gap(Bp, F.matvec(Bp), y, Ub, Sb)
            better = rel2 < rel[bad]
            A[bad] = torch.where(better[:, None], Bp, A[bad])
            primal[bad] = torch.where(better, p2, primal[bad])
            dual[bad] = torch.where(better, d2, dual[bad])
            b[bad] = torch.where(better, b2, b[bad])
            rel[bad] = torch.where(better, rel2, rel[bad])
        P = prob.n_problems
        status = torch.where(rel <= cfg.tol, _OPT, _MAXIT)
        rho = torch.zeros(P, dtype=prob.dtype, device=prob.device)
        out = [A, b, status, n_iter, primal, dual, rel, rho]
        self._admm_rest(prob, F, out, "ipm")
        return tuple(out)
