"""Convex MIQP by outer approximation over HiGHS MILPs and QPs (SPEC S5 "Solving").

Problem (a :class:`~torchsvm.mip.model.MipModel` with integers and ``Q``)::

    min  c @ x + 0.5 x^T Q x + offset   s.t.  row_lower <= A x <= row_upper,
                                              col bounds, x_k integer (k in K_int)

with ``Q`` symmetric PSD (dense or sparse; e.g. a kernel block ``diag(y) K diag(y)``).

Lifting. Let ``S`` be the columns touched by ``Q`` and ``Q_SS = L L^T`` (``L`` of shape
(|S|, k): the factor supplied by the caller, the square root of a diagonal ``Q_SS``, or
the eigen-factor with eigenvalues below ``1e-10 * max`` dropped). Then
``0.5 x^T Q x = sum_k 0.5 r_k^2`` with ``r = L^T x_S``. Every HiGHS model below carries
the rows ``r - L^T x_S = 0`` (so HiGHS QPs see the sparse Hessian ``I`` on ``r`` instead
of a dense ``Q``).

Algorithm (Duran & Grossmann's outer approximation, disaggregated epigraphs):

0. If a ``start`` is given it is the first incumbent (when feasible), and its integers
   are fixed and the QP polished first, so that a call cut short still returns the best
   point known. The column box gives a first finite lower bound where it can
   (``0.5 x^T Q x >= 0``; :meth:`OuterApproximation.box_bound`). Then the continuous
   relaxation (integrality dropped, same QP solver): a lower bound and a cut point;
   infeasible relaxation => infeasible model.
   An optional ``rounding`` heuristic maps the relaxed point to integer assignments,
   whose fixed-integer QPs are polished next (incumbents only; no bound changes).
1. Master MILP over ``(x, r, t)``: ``min c x + sum_k t_k + offset`` with the tangent cuts
   ``t_k >= 0.5 rho_k^2 + rho_k (r_k - rho_k)`` at every cut point ``rho``; its proven
   dual bound is a lower bound ``LB``. Once an incumbent ``UB`` exists the master gets
   the cutoff ``UB - mip_rel_gap * max(1, |UB|)`` (HiGHS ``objective_bound``), the
   same tight gap, and runs without HiGHS's sub-MIP heuristics and reliability
   branching (``_PROOF_OPTIONS``; they only change the search, not the model or what
   a master proves): it returns the master's best assignment below the cutoff, or
   proves that none exists, which proves the incumbent optimal within the tolerance.
2. With the integers fixed at the master solution, the convex QP (our dense
   interior point :func:`torchsvm.mip.qp_ipm.solve_qp_ipm`, or the HiGHS QP on the lifted model) gives a
   feasible point: upper bound ``UB`` and incumbent; cuts are added at the QP solution
   (all ``k``) and at the master point (only the violated ``k``, Kelley cuts).
3. Stop when ``UB - LB <= mip_rel_gap * max(1, |UB|)`` (status optimal), at the time limit
   (status time_limit + :class:`SolverTimeLimitWarning`; the whole procedure honours
   ``config.time_limit``), or after ``max_rounds`` rounds (status max_iter + warning).

Termination without no-good cuts: the cut at the QP optimum of an integer assignment
makes the master value of that assignment at least the QP optimum (KKT), so a repeated
assignment closes the gap; the master-point Kelley cuts make progress in between.
The reported ``mip_gap`` is ``max(0, UB - LB) / max(1, |UB|)``.

Implementation: :class:`OuterApproximation` holds the state (lifted model, cuts,
incumbent, bounds) and exposes the steps (:meth:`~OuterApproximation.relax`,
:meth:`~OuterApproximation.polish`, :meth:`~OuterApproximation.master`,
:meth:`~OuterApproximation.add_kelley_cuts`); :meth:`~OuterApproximation.run` is the loop
above and :func:`solve_convex_miqp` the functional entry point.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import ConvergenceWarning, SolverError, SolverTimeLimitWarning
from torchsvm.mip.highs import PersistentLp, new_highs, solve_highs
from torchsvm.mip.model import (
    MipConfig,
    MipModel,
    MipResult,
    check_feasible,
    model_objective,
    validate_model,
)
from torchsvm.mip.qp_ipm import solve_qp_ipm
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["OuterApproximation", "factor_psd", "solve_convex_miqp"]


def factor_psd(Q: sp.sparray | np.ndarray, rel_tol: float = 1e-10) -> np.ndarray:
    """Return ``L`` of shape (n, k) with ``Q ~= L L^T`` (eigen-factor, exact up to ``rel_tol``).

    Parameters
    ----------
    Q : ndarray or sparse of shape (n, n)
        Symmetric PSD matrix.
    rel_tol : float
        Eigenvalues below ``rel_tol * max eigenvalue`` are dropped.

    Raises
    ------
    ValueError
        If ``Q`` has an eigenvalue below ``-1e-8 * max(1, max eigenvalue)``.
    """
    Qd = Q if isinstance(Q, np.ndarray) else sp.csr_array(Q).toarray()
    Qd = np.asarray(Qd, dtype=np.float64)
    off = Qd - np.diag(np.diag(Qd))
    if not np.any(off):
        d = np.diag(Qd)
        if np.any(d < 0):
            raise ValueError("Q is not positive semidefinite (negative diagonal entry)")
        keep = d > 0
        return np.diag(np.sqrt(d))[:, keep]
    w, V = np.linalg.eigh(0.5 * (Qd + Qd.T))
    top = max(float(w[-1]), 0.0)
    if w[0] < -1e-8 * max(1.0, top):
        raise ValueError(
            f"Q is not positive semidefinite (smallest eigenvalue {w[0]:.3g}); the outer "
            "approximation needs a convex objective"
        )
    keep = w > rel_tol * max(top, 1e-300)
    return V[:, keep] * np.sqrt(w[keep])


#: HiGHS options of every master with an incumbent ("proof mode"). Such a master
#: either finds an assignment below the cutoff or proves that none exists; HiGHS's
#: sub-MIP heuristics (RINS, RENS, root reduced cost) and its reliability strong
#: branching mostly add time there. Measured on the CSVM benchmark
#: (scripts/bench_mip.py, 1 thread, load ~8-11): the proof master of linear n = 100
#: took 0.69 s, 0.58 s of them in 11 sub-MIPs, and 0.07 s without them; at n = 500
#: strong branching was 19,696 of its 37,136 LP iterations. These masters also keep
#: the tight gap: with a loose one (0.5, stop at the first assignment below the
#: cutoff) and the first of them with HiGHS's heuristics, linear n = 500 took 4
#: masters and 8.9 s under highspy 1.16.0, whose masters separate no root cuts, and
#: 2 masters under 1.15.1; tight and in proof mode it takes 1 master, 2.3 s
#: (docs/benchmarks.md, "Linear n = 500").
_PROOF_OPTIONS: dict[str, float | int | str | bool] = {
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
    "mip_pscost_minreliable": 0,
}

#: Masters with more constraint nonzeros than this, and more than
#: :data:`_DENSE_ROW_NNZ` per row, are "dense" (e.g. the RBF CSVM in its kernel form,
#: whose two kernel blocks are dense: German credit, 900 rows, has 1.6e6 nonzeros). On them HiGHS runs three phases far past its time limit, because
#: it reads its clock only between them (HiGHS 1.15, 1 thread, load ~12): on German
#: fold 3's first master presolve took 209 s at a 10 s limit, symmetry detection ~10 s
#: and the feasibility jump ~6 s before the first clock check; on a synthetic RBF
#: CSVM of 400 rows (3.2e5 nonzeros) the master stopped after 12.1 s at a 1 s limit
#: (1.1 s without them; tests/mip/test_outer_approx.py). None of them changes what a
#: master proves.
_DENSE_MASTER_NNZ = 100_000

#: ... and more than this many nonzeros per row on average (the RBF CSVM masters:
#: 135-279; the cardinality SVM on 7129 genes, large but sparse: 16).
_DENSE_ROW_NNZ = 50

#: HiGHS options of a dense master (:data:`_DENSE_MASTER_NNZ`).
_DENSE_OPTIONS: dict[str, float | int | str | bool] = {
    "presolve": "off",
    "mip_detect_symmetry": False,
    "mip_heuristic_run_feasibility_jump": False,
}

#: Largest number of free columns of a QP for the dense interior point
#: (:meth:`OuterApproximation.qp`); larger QPs go to the HiGHS QP on the sparse
#: lifted model.
_IPM_MAX_COLS = 3_000

#: Largest lifted quadratic dimension for which a failed interior point is retried
#: with the HiGHS QP: on larger, dense lifted models (e.g. the RBF CSVM, k ~ 600)
#: HiGHS's active-set QP fails anyway and overran its time limit by 20+ s.
_HIGHS_QP_MAX_K = 200


#: ``grid="auto"`` lays the grid of tangent cuts (:meth:`OuterApproximation.grid_cuts`)
#: on models whose lifted quadratic has at most this many dimensions (the linear CSVM
#: in its primal form: one per feature; measured on 5 features, docs/benchmarks.md,
#: "Linear CSVM n = 400 in one master").
_GRID_MAX_K = 10

#: Most grid points per dimension (:meth:`OuterApproximation.grid_cuts`); a finer
#: spacing asked for by the gap is widened to this count.
_GRID_MAX_PER_K = 64

#: HiGHS's ``mip_max_nodes`` default (no limit)
_NO_NODE_LIMIT = 2147483647

#: ``qp_solver`` values: the interior point with its ``linalg="auto"`` (``ipm``) or a
#: forced ``dense`` / ``sparse`` Newton system (for benchmarks and tests), or HiGHS
_QP_SOLVERS = ("ipm", "ipm-dense", "ipm-sparse", "highs")


def lp_under_cutoff(
    master: MipModel, cutoff: float, keep: np.ndarray | None = None
) -> MipModel:
    """LP of ``master``'s rows ``keep`` (all by default), integers relaxed, with its
    objective row at most ``cutoff``: every master point that can beat the cutoff is
    a point of it, so bounds over it are valid presolve bounds for the master."""
    A = sp.csr_array(master.A)
    rl, ru = master.row_lower, master.row_upper
    if keep is not None:
        A, rl, ru = A[keep], rl[keep], ru[keep]
    return MipModel(
        c=np.zeros(master.n_cols),
        A=sp.vstack([A, sp.csr_array(master.c[None, :])], format="csr"),
        row_lower=np.concatenate([rl, [-np.inf]]),
        row_upper=np.concatenate([ru, [cutoff - float(master.offset)]]),
        col_lower=master.col_lower,
        col_upper=master.col_upper,
    )


class _Lifted:
    """The model lifted to ``(x, r, t)`` with ``r = L^T x_S`` (see module docstring)."""

    def __init__(self, model: MipModel, factor: np.ndarray | None) -> None:
        self.model = model
        n = model.n_cols
        Q = sp.csc_array(model.Q)
        touched = np.unique(np.concatenate([Q.nonzero()[0], Q.nonzero()[1]]))
        self.S = touched
        L: np.ndarray | sp.csr_array
        if factor is not None:
            F = np.asarray(factor, dtype=np.float64)
            if F.ndim != 2 or F.shape[0] != n:
                raise ValueError(f"factor must have shape ({n}, k), got {F.shape}")
            L = F[touched]
        else:
            QS = sp.csr_array(Q[touched][:, touched])
            dq = QS.diagonal()
            if QS.count_nonzero() == np.count_nonzero(dq):
                # diagonal Q (e.g. ||w||^2 of the cardinality SVM): a sparse factor;
                # factor_psd would densify an (|S|, |S|) matrix (d = 7129 genes: 406
                # MB, twice)
                if np.any(dq < 0):
                    raise ValueError(
                        "Q is not positive semidefinite (negative diagonal entry)"
                    )
                keep = np.flatnonzero(dq > 0)
                L = sp.csr_array(
                    (np.sqrt(dq[keep]), (keep, np.arange(keep.size))),
                    shape=(touched.size, keep.size),
                )
            else:
                L = factor_psd(QS)
        self.L = L  # (|S|, k), dense or sparse
        self.k = L.shape[1]
        k = self.k
        self.n = n
        self.integ = np.asarray(model.integrality, dtype=bool)
        # rows r - L^T x_S = 0
        LT = sp.csr_array(L.T)
        cols_x = sp.csr_array((LT.data, touched[LT.indices], LT.indptr), shape=(k, n))
        link = sp.hstack([-cols_x, sp.eye_array(k, format="csr")], format="csr")
        A = model.A if model.A is not None else sp.csr_array((0, n))
        self.base_A = sp.vstack(
            [sp.hstack([A, sp.csr_array((A.shape[0], k))]), link], format="csr"
        )
        self.base_lo = np.concatenate([model.row_lower, np.zeros(k)])
        self.base_up = np.concatenate([model.row_upper, np.zeros(k)])
        self.col_lo = np.concatenate([model.col_lower, np.full(k, -np.inf)])
        self.col_up = np.concatenate([model.col_upper, np.full(k, np.inf)])
        self.cut_k: list[np.ndarray] = []
        self.cut_rho: list[np.ndarray] = []

    def r_of(self, x: np.ndarray) -> np.ndarray:
        return self.L.T @ x[self.S]

    def qp_model(self, fixed: np.ndarray | None) -> MipModel:
        """Lifted convex QP; integers fixed at ``fixed`` (or relaxed if ``None``)."""
        n, k = self.n, self.k
        lo, up = self.col_lo.copy(), self.col_up.copy()
        if fixed is not None:
            idx = np.flatnonzero(self.integ)
            lo[idx] = fixed
            up[idx] = fixed
        H = sp.diags_array(np.concatenate([np.zeros(n), np.ones(k)]), format="csc")
        return MipModel(
            c=np.concatenate([self.model.c, np.zeros(k)]),
            A=self.base_A,
            row_lower=self.base_lo,
            row_upper=self.base_up,
            col_lower=lo,
            col_upper=up,
            Q=H,
            offset=self.model.offset,
        )

    def add_cuts(self, rho: np.ndarray, which: np.ndarray | None = None) -> int:
        ks = np.arange(self.k) if which is None else np.asarray(which)
        if ks.size == 0:
            return 0
        self.cut_k.append(ks)
        self.cut_rho.append(np.asarray(rho, dtype=np.float64)[ks])
        return int(ks.size)

    def add_points(self, ks: np.ndarray, rho: np.ndarray) -> int:
        """Cuts of the epigraphs ``k = ks[i]`` at ``r_k = rho[i]`` (any number per ``k``)."""
        ks = np.asarray(ks, dtype=np.int64)
        if ks.size == 0:
            return 0
        self.cut_k.append(ks)
        self.cut_rho.append(np.asarray(rho, dtype=np.float64))
        return int(ks.size)

    def cut_rows(self, ks: np.ndarray, rho: np.ndarray) -> sp.csr_array:
        """Rows ``t_k - rho r_k >= -0.5 rho^2`` over columns ``[x (n), r (k), t (k)]``."""
        n, k = self.n, self.k
        nc = ks.size
        rows = np.repeat(np.arange(nc), 2)
        cols = np.empty(2 * nc, dtype=np.int64)
        cols[0::2] = n + ks
        cols[1::2] = n + k + ks
        vals = np.empty(2 * nc)
        vals[0::2] = -rho
        vals[1::2] = 1.0
        return sp.csr_array((vals, (rows, cols)), shape=(nc, n + 2 * k))

    def master_model(self) -> MipModel:
        k = self.k
        ks = np.concatenate(self.cut_k) if self.cut_k else np.zeros(0, dtype=int)
        rho = np.concatenate(self.cut_rho) if self.cut_rho else np.zeros(0)
        nc = ks.size
        cuts = self.cut_rows(ks, rho)
        base = sp.hstack(
            [self.base_A, sp.csr_array((self.base_A.shape[0], k))], format="csr"
        )
        A = sp.vstack([base, cuts], format="csr")
        return MipModel(
            c=np.concatenate([self.model.c, np.zeros(k), np.ones(k)]),
            A=A,
            row_lower=np.concatenate([self.base_lo, -0.5 * rho**2]),
            row_upper=np.concatenate([self.base_up, np.full(nc, np.inf)]),
            col_lower=np.concatenate([self.col_lo, np.zeros(k)]),
            col_upper=np.concatenate([self.col_up, np.full(k, np.inf)]),
            integrality=np.concatenate([self.integ, np.zeros(2 * k, dtype=bool)]),
            offset=self.model.offset,
        )

    def master_start(self, x: np.ndarray) -> np.ndarray:
        r = self.r_of(x)
        return np.concatenate([x, r, 0.5 * r**2])


class OuterApproximation:
    """Outer approximation of one convex MIQP, step by step (see module docstring).

    Parameters
    ----------
    model : MipModel
        Model with integers and a PSD ``Q`` (``sense="max"`` needs ``-Q`` PSD).
    config : MipConfig, optional
        Overall time limit (counted from construction) and relative gap.
    factor : ndarray of shape (n, k), optional
        ``F`` with ``Q = F F^T`` (avoids an eigendecomposition).
    qp_solver : {"ipm", "ipm-dense", "ipm-sparse", "highs"}
        Solver of the fixed-integer and relaxed QPs (``ipm-dense`` / ``ipm-sparse``:
        the interior point with that ``linalg``; ``ipm``: ``linalg="auto"``).
    max_rounds : int
        Maximum number of master MILPs.
    rounding : callable, optional
        Primal heuristic: maps the continuous relaxation's point (model columns) to
        integer assignments (each of shape (n_int,)) whose fixed-integer QPs are
        polished right after the relaxation (:meth:`round_relaxation`). It only
        proposes incumbents, certified by their own QPs; the bounds are unchanged.
    improve : callable, optional
        Local search: maps the incumbent (model columns) to neighbouring integer
        assignments, polished before the first master (:meth:`local_search`). Like
        ``rounding`` it only proposes incumbents.
    tighten : callable, optional
        Master presolve under the cutoff: ``tighten(master, cutoff, time_limit)``
        gets a master with an incumbent (columns ``[x, r, t]``, the model's rows
        first, then the rows ``r = L^T x_S`` and the cuts) and returns a master over
        the same columns whose points with objective ``<= cutoff`` (a) are points
        of ``master`` and (b) include, for every point of ``master`` with objective
        ``<= cutoff``, one with the same objective (e.g. big-M coefficients bounded
        over the master's LP relaxation with its objective row at ``cutoff``). The
        master's bound and "nothing below the cutoff" stay proofs for the model,
        and the points it returns (below the cutoff) stay points of the model's
        relaxation (:meth:`master`).
    grid : bool or "auto"
        Lay tangent cuts on a grid over the box of ``r`` under the first master's
        cutoff (:meth:`grid_cuts`); ``auto``: where ``k <=`` :data:`_GRID_MAX_K`.
    master_pool : int
        Most of a master's improving solutions (besides its final one) whose
        assignments are polished when that master leaves the gap open
        (:meth:`polish_pool`); 0: none.
    tighten_after : int, optional
        Use ``tighten`` only once a master without it has explored this many
        branch-and-bound nodes (a measure of work that the machine's load does not
        change, unlike seconds): masters with a cutoff get at most that many nodes
        until then, and one stopped there leaves its bound and point (valid, as any
        master's) for the next, tightened one. None: tighten every master with a
        cutoff.
    proof_options : dict, optional
        HiGHS options that replace or extend :data:`_PROOF_OPTIONS` on the masters
        with a cutoff (e.g. reliability branching back on for a model whose proofs
        need it). They change the search only, not what a master proves.
    """

    def __init__(
        self,
        model: MipModel,
        config: MipConfig | None = None,
        *,
        factor: np.ndarray | None = None,
        qp_solver: str = "ipm",
        max_rounds: int = 200,
        rounding: Callable[[np.ndarray], Sequence[np.ndarray]] | None = None,
        improve: Callable[[np.ndarray], Sequence[np.ndarray]] | None = None,
        tighten: Callable[[MipModel, float, float], MipModel] | None = None,
        grid: bool | str = "auto",
        master_pool: int = 8,
        tighten_after: int | None = None,
        proof_options: dict[str, float | int | str | bool] | None = None,
    ) -> None:
        self.t0 = time.perf_counter()
        self.proof_options = dict(proof_options or {})
        self.config = MipConfig() if config is None else config
        if qp_solver not in _QP_SOLVERS:
            raise ValueError(
                f"qp_solver must be one of {_QP_SOLVERS}, got {qp_solver!r}"
            )
        model = validate_model(model)
        self.sign = 1.0
        if model.sense == "max":
            self.sign = -1.0
            model = replace(
                model,
                c=-model.c,
                Q=None if model.Q is None else -model.Q,
                offset=-model.offset,
                sense="min",
            )
        if model.Q is None or not model.has_integers:
            raise ValueError(
                "OuterApproximation needs a model with integers and Q; solve other "
                "models with torchsvm.mip.solve.solve_model"
            )
        self.model = model
        self.qp_solver = qp_solver
        self.max_rounds = int(max_rounds)
        self.rounding = rounding
        self.improve = improve
        self.tighten = tighten
        if tighten_after is not None and int(tighten_after) < 1:
            raise ValueError(f"tighten_after must be >= 1 or None, got {tighten_after}")
        self.tighten_after = None if tighten_after is None else int(tighten_after)
        # whether masters are tightened now (from the start unless tighten_after)
        self._tightening = tighten is not None and tighten_after is None
        # whether the last master stopped at tighten_after nodes
        self._capped = False
        # masters run tightened so far (reported in the result's ``extra``)
        self._n_tightened = 0
        self.lifted = _Lifted(model, factor)
        if grid not in (True, False, "auto"):
            raise ValueError(f"grid must be True, False or 'auto', got {grid!r}")
        # laid once, on the first master with a cutoff (:meth:`grid_cuts`)
        self._grid_pending = (
            self.lifted.k <= _GRID_MAX_K if grid == "auto" else bool(grid)
        )
        self.integ = self.lifted.integ
        self.int_idx = np.flatnonzero(self.integ)
        self.best_x: np.ndarray | None = None
        self.ub = math.inf
        self.lb = -math.inf
        self.rounds = 0
        self.seen: set[bytes] = set()
        self.start_ok: bool | None = None
        self._highs = new_highs()
        self._tol_feas = max(1e-6, self.config.feasibility_tol)
        # seconds per interior-point iteration, once measured (:meth:`qp`)
        self._ipm_iter: float | None = None
        # largest overrun of HiGHS's own time limit on this model's masters (s)
        self._master_overrun = 0.0
        if int(master_pool) < 0:
            raise ValueError(f"master_pool must be >= 0, got {master_pool}")
        self.master_pool = int(master_pool)
        # the last master's improving solutions (model columns), best first
        self._pool: list[np.ndarray] = []
        # integer assignments to polish before the first master (:meth:`seed`)
        self._polish_first: list[np.ndarray] = []

    # ------------------------------------------------------------------ helpers
    def remaining(self) -> float:
        """Seconds left of ``config.time_limit``."""
        return self.config.time_limit - (time.perf_counter() - self.t0)

    def gap_closed(self) -> bool:
        """Whether ``UB - LB <= mip_rel_gap * max(1, |UB|)`` with an incumbent."""
        # the slack absorbs rounding: a master that proves nothing below the cutoff
        # UB - gap * |UB| sets LB to exactly that, whose difference to UB may round
        # a hair above gap * |UB| (seen: 1.00000000000002e-4 at gap 1e-4, so the loop
        # never stopped)
        return self.best_x is not None and self.ub - self.lb <= (
            self.config.mip_rel_gap * max(1.0, abs(self.ub)) * (1.0 + 1e-9) + 1e-12
        )

    def offer(self, x: np.ndarray) -> bool:
        """Take ``x`` as incumbent if it is feasible and better; return whether taken."""
        x = np.asarray(x, dtype=np.float64).copy()
        x[self.integ] = np.round(x[self.integ])
        ok, _ = check_feasible(self.model, x, tol=self._tol_feas)
        if not ok:
            return False
        val = model_objective(self.model, x)
        if val < self.ub:
            self.ub, self.best_x = val, x
            return True
        return False

    def result(self, status: SolveStatus, msg: str) -> MipResult:
        """The current state as a :class:`MipResult` in the model's own sense."""
        x, ub, lb, sign = self.best_x, self.ub, self.lb, self.sign
        if x is None:
            gap, obj = math.inf, math.nan
        else:
            gap = max(0.0, ub - lb) / max(1.0, abs(ub))
            obj = ub
            lb = min(lb, ub)  # the master's tolerances can put LB a hair above UB
        return MipResult(
            status=status,
            x=x,
            objective=sign * obj if x is not None else math.nan,
            bound=sign * lb,
            mip_gap=gap,
            runtime=time.perf_counter() - self.t0,
            message=msg,
            n_iter=self.rounds,
            start_feasible=self.start_ok,
            extra={"tightened_masters": float(self._n_tightened)},
        )

    def timed_out(self, msg: str) -> MipResult:
        """Result at the time limit, with :class:`SolverTimeLimitWarning`."""
        warnings.warn(
            f"outer approximation stopped at its time limit "
            f"({self.config.time_limit:.3g} s) after {self.rounds} rounds; "
            f"UB={self.ub:.6g}, LB={self.lb:.6g}",
            SolverTimeLimitWarning,
            stacklevel=4,
        )
        return self.result(SolveStatus.time_limit, msg)

    # ------------------------------------------------------------------ steps
    def qp(self, z: np.ndarray | None, time_limit: float) -> MipResult:
        """Convex QP with the integers fixed at ``z`` (relaxed if ``None``).

        The interior point is bounded by prediction (one dense iteration cannot be
        interrupted; :func:`~torchsvm.mip.qp_ipm.solve_qp_ipm`): its per-iteration time,
        set-up included, measured on the previous QP of this model predicts the next
        one, and a QP whose first iteration would end past ``time_limit`` is not
        started (status ``time_limit``, no ``x``).
        """
        lifted, config = self.lifted, self.config
        if self.qp_solver == "highs":
            # the HiGHS QP; where it fails ("Solve error", seen on an S5c relaxation
            # with n = 512, d = 30), the interior point with what is left
            t_highs = time.perf_counter()
            try:
                hres = solve_highs(
                    lifted.qp_model(z), config, time_limit=time_limit, warn=False
                )
            except SolverError as err:
                logger.info(
                    "HiGHS QP failed (%s); retrying with the interior point", err
                )
            else:
                if hres.status not in (SolveStatus.error, SolveStatus.not_solved):
                    return hres
                logger.info(
                    "HiGHS QP: %s; retrying with the interior point", hres.message
                )
            time_limit -= time.perf_counter() - t_highs
            if time_limit <= 0:
                return MipResult(
                    SolveStatus.time_limit,
                    None,
                    math.nan,
                    -math.inf,
                    math.inf,
                    0.0,
                    message="time limit in the HiGHS QP",
                )
        lo, up = self.qp_bounds(z)
        if int(np.count_nonzero(lo != up)) > _IPM_MAX_COLS:
            # the dense interior point would hold several (cols, cols) matrices
            # (the cardinality SVM on d = 7129 genes: 14,330 columns, 1.5 GiB each)
            try:
                return solve_highs(
                    lifted.qp_model(z), config, time_limit=time_limit, warn=False
                )
            except SolverError as err:
                logger.info("HiGHS QP failed on a large QP: %s", err)
                return MipResult(
                    SolveStatus.not_solved,
                    None,
                    math.nan,
                    -math.inf,
                    math.inf,
                    0.0,
                    message=f"HiGHS QP failed: {err}",
                )
        sub = replace(self.model, integrality=None, col_lower=lo, col_upper=up)
        if self._ipm_iter is not None and self._ipm_iter > time_limit:
            # not even one iteration (set-up included) is predicted to fit
            return MipResult(
                SolveStatus.time_limit,
                None,
                math.nan,
                -math.inf,
                math.inf,
                0.0,
                message="interior point skipped: one iteration would pass the limit",
            )
        t_start = time.perf_counter()
        linalg = {"ipm-dense": "dense", "ipm-sparse": "sparse"}.get(
            self.qp_solver, "auto"
        )
        res = solve_qp_ipm(
            sub, time_limit=time_limit, iter_time=self._ipm_iter, linalg=linalg
        )
        if res.n_iter > 0:
            # seconds per iteration, set-up included: predicts the next QP's first
            # iteration (all of them have the same size), see solve_qp_ipm
            self._ipm_iter = res.runtime / res.n_iter
        left = time_limit - (time.perf_counter() - t_start)
        if (
            res.status is SolveStatus.not_solved
            and res.x is None
            and self.lifted.k <= _HIGHS_QP_MAX_K
            and left > 0
        ):
            logger.info("interior point failed; retrying the QP with HiGHS")
            try:
                return solve_highs(
                    lifted.qp_model(z), config, time_limit=left, warn=False
                )
            except SolverError as err:
                logger.info("HiGHS QP failed too: %s", err)
        return res

    def qp_bounds(self, z: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Column bounds of the QP with the integers fixed at ``z`` (relaxed if None).

        With ``z`` fixed, a row left with one non-fixed column ``x_j`` bounds ``x_j``;
        where those bounds meet in a point (e.g. the cardinality SVM's
        ``|w_k| <= M delta_k`` at ``delta_k = 0``, or S5c's ``xi_i + M z_i <= M`` at
        ``z_i = 1`` with ``xi_i >= 0``), ``x_j`` is fixed there. The QP is the same;
        the interior point then drops ``x_j`` (d = 7129 genes: 77 instead of 7,201
        free columns at ``k_max = 5``).
        """
        lo, up = self.model.col_lower.copy(), self.model.col_upper.copy()
        if z is None:
            return lo, up
        lo[self.int_idx] = z
        up[self.int_idx] = z
        A = self.model.A
        if A is None or A.shape[0] == 0:
            return lo, up
        A = sp.csr_array(A)
        fixed = lo == up
        shift = A @ np.where(fixed, lo, 0.0)
        Afree = A @ sp.diags_array((~fixed).astype(np.float64))
        Afree.eliminate_zeros()
        single = np.flatnonzero(np.diff(Afree.indptr) == 1)
        if single.size == 0:
            return lo, up
        j = Afree.indices[Afree.indptr[single]]
        a = Afree.data[Afree.indptr[single]]
        with np.errstate(invalid="ignore"):
            r_lo = (self.model.row_lower[single] - shift[single]) / a
            r_up = (self.model.row_upper[single] - shift[single]) / a
        b_lo = np.where(a > 0, r_lo, r_up)
        b_up = np.where(a > 0, r_up, r_lo)
        new_lo, new_up = lo.copy(), up.copy()
        np.maximum.at(new_lo, j, b_lo)
        np.minimum.at(new_up, j, b_up)
        with np.errstate(invalid="ignore"):
            point = np.flatnonzero(
                ~fixed
                & np.isfinite(new_lo)
                & np.isfinite(new_up)
                & (np.abs(new_up - new_lo) <= 1e-12 * (1.0 + np.abs(new_lo)))
            )
        lo[point] = up[point] = np.clip(new_lo[point], lo[point], up[point])
        return lo, up

    def qp_cols(self, z: np.ndarray | None) -> int:
        """Columns of the QP at ``z`` (relaxed if ``None``) that are not fixed."""
        lo, up = self.qp_bounds(z)
        return int(np.count_nonzero(lo != up))

    def box_bound(self) -> float:
        """Proven lower bound from the column box alone; raises ``LB`` to it.

        ``0.5 x^T Q x >= 0`` (Q PSD), so ``offset + sum_j min(c_j lo_j, c_j up_j)`` bounds
        the objective whenever it is finite (e.g. 0 for the CSVM: slack costs on
        ``xi >= 0``). It makes the gap finite before any QP or master has finished.
        """
        m = self.model
        c = np.asarray(m.c, dtype=np.float64)
        nz = c != 0
        with np.errstate(invalid="ignore"):
            lo = np.where(nz, c * m.col_lower, 0.0)
            up = np.where(nz, c * m.col_upper, 0.0)
        terms = np.minimum(lo, up)
        val = (
            float(m.offset) + float(terms.sum())
            if np.all(np.isfinite(terms))
            else -math.inf
        )
        if math.isfinite(val):
            self.lb = max(self.lb, val)
        return val

    def relax(self) -> MipResult:
        """Step 0: continuous relaxation; sets ``LB`` and adds its cut point."""
        res = self.qp(None, self.remaining())
        if res.status is SolveStatus.optimal and res.x is not None:
            self.lb = max(self.lb, min(res.bound, res.objective))
            self.lifted.add_cuts(self.lifted.r_of(res.x[: self.lifted.n]))
        return res

    def round_relaxation(self, x_relax: np.ndarray) -> int:
        """Polish the assignments :attr:`rounding` proposes at the relaxed point.

        Returns the number of fixed-integer QPs run (assignments already polished are
        skipped). With a weak relaxation (big-M) the master may need most of the
        limit before it finds an assignment: German credit's RBF CSVM (900 rows)
        never finished its first master's root LP in 300 s, so its incumbent came
        from the start and one master round.
        """
        if self.rounding is None:
            return 0
        x = np.asarray(x_relax, dtype=np.float64)[: self.lifted.n]
        runs = 0
        for z in self.rounding(x):
            z = np.round(np.asarray(z, dtype=np.float64))
            if z.shape != (self.int_idx.size,):
                raise ValueError(
                    f"rounding returned an assignment of shape {z.shape}, expected "
                    f"({self.int_idx.size},)"
                )
            if z.astype(np.int64).tobytes() in self.seen or self.remaining() <= 0:
                continue
            self.polish(z)
            runs += 1
        return runs

    def local_search(self, max_share: float = 0.25) -> int:
        """Best-improvement local search with :attr:`improve` from the incumbent.

        Each step polishes every new assignment :attr:`improve` proposes at the
        incumbent and moves to the best one; it stops when none improves on the
        incumbent, or after ``max_share`` of the time limit. Returns the number of
        QPs run. Only the incumbent changes (each QP is certified by itself); tangent
        cuts are added at the final incumbent only (a cut per QP makes every master
        larger by ``k`` rows per QP). Why: from a poorer incumbent the first master
        finds the better assignment anyway, but its bound on the tangent model can
        then miss the tolerance, so that a second master proves it again; the cut at
        a better incumbent closes it (linear n = 1000 of scripts/bench_mip.py: 2
        masters without, 1 with; docs/benchmarks.md, "linear n = 1000 profiled").
        """
        if self.improve is None or self.best_x is None:
            return 0
        stop = time.perf_counter() + max_share * self.config.time_limit
        runs = 0
        while self.best_x is not None and time.perf_counter() < stop:
            before = self.ub
            for z in self.improve(self.best_x):
                z = np.round(np.asarray(z, dtype=np.float64))
                if z.shape != (self.int_idx.size,):
                    raise ValueError(
                        f"improve returned an assignment of shape {z.shape}, "
                        f"expected ({self.int_idx.size},)"
                    )
                if z.astype(np.int64).tobytes() in self.seen:
                    continue
                if self.remaining() <= 0 or time.perf_counter() >= stop:
                    return runs
                self.polish(z, cuts=False)
                runs += 1
            if not self.ub < before - 1e-9 * max(1.0, abs(before)):
                break
        if self.best_x is not None:
            self.lifted.add_cuts(self.lifted.r_of(self.best_x))
        return runs

    def set_start(self, start: np.ndarray) -> None:
        """Take a MIP start: incumbent if feasible, then polish its integer part."""
        start = np.asarray(start, dtype=np.float64)
        self.start_ok, reason = check_feasible(self.model, start, tol=self._tol_feas)
        if not self.start_ok:
            logger.info("outer approximation start not feasible: %s", reason)
        else:
            val = model_objective(self.model, start)
            if val < self.ub:
                self.ub, self.best_x = val, start.copy()
            self.lifted.add_cuts(self.lifted.r_of(start))

    def polish(self, z: np.ndarray, cuts: bool = True) -> MipResult | None:
        """Step 2: fixed-integer QP at ``z``; updates the incumbent and adds its cuts.

        ``cuts=False``: no tangent cuts at the QP's point (the local search adds them
        at its final incumbent only).
        """
        key = np.round(z).astype(np.int64).tobytes()
        self.seen.add(key)
        tl = self.remaining()
        if tl <= 0:
            return None
        res = self.qp(np.round(z), tl)
        if res.x is None:
            return res
        x = res.x[: self.lifted.n].copy()
        x[self.integ] = np.round(x[self.integ])
        # a tangent cut is valid at any point; the incumbent needs a feasible one
        if cuts:
            self.lifted.add_cuts(self.lifted.r_of(x))
        if res.status is SolveStatus.optimal:
            val = model_objective(self.model, x)
            if val < self.ub:
                self.ub, self.best_x = val, x
        else:
            self.offer(x)
        return res

    def master(self) -> tuple[MipResult, float]:
        """Step 1: master MILP over the cuts so far; returns it and the cutoff used."""
        config = self.config
        tol = config.mip_rel_gap
        master_cfg = replace(config, mip_rel_gap=max(tol / 4.0, 1e-9))
        master = self.lifted.master_model()
        opts: dict[str, float | int | str | bool] | None = None
        cutoff = math.inf
        if self.best_x is not None:
            # Only assignments beating the incumbent by the tolerance matter: the
            # cutoff prunes the master's tree; "none left" proves the gap closed.
            cutoff = self.ub - tol * max(1.0, abs(self.ub))
            opts = {
                "objective_bound": cutoff,
                "mip_heuristic_effort": 0.0,
                **_PROOF_OPTIONS,
                **self.proof_options,
            }
        cap = None
        if self.tighten is not None and not self._tightening and math.isfinite(cutoff):
            cap = self.tighten_after
        if self._tightening and math.isfinite(cutoff):
            assert self.tighten is not None
            t = time.perf_counter()
            master = self.tighten(master, cutoff, 0.25 * self.remaining())
            self._n_tightened += 1
            logger.debug("master tightened: %.3f s", time.perf_counter() - t)
        if self._grid_pending and math.isfinite(cutoff):
            self._grid_pending = False
            master = self.grid_cuts(master, cutoff, 0.1 * self.remaining())
        assert master.A is not None
        if (
            master.A.nnz > _DENSE_MASTER_NNZ
            and master.A.nnz > _DENSE_ROW_NNZ * master.A.shape[0]
        ):
            opts = {**(opts or {}), **_DENSE_OPTIONS}
        if self.master_pool:
            opts = {**(opts or {}), "mip_improving_solution_save": True}
        if self.tighten_after is not None:
            # the Highs object is reused: reset the node limit when there is none
            opts = {
                **(opts or {}),
                "mip_max_nodes": _NO_NODE_LIMIT if cap is None else cap,
            }
        mres = self._run_master(master, master_cfg, opts)
        self._capped = cap is not None and mres.status is SolveStatus.max_iter
        if self._capped:
            logger.debug("master stopped at tighten_after=%d nodes: tightening", cap)
            self._tightening = True
        self._pool = self._saved_solutions(master) if self.master_pool else []
        self.rounds += 1
        return mres, cutoff

    def _saved_solutions(self, master: MipModel) -> list[np.ndarray]:
        """The last master's improving solutions (model columns), best master value first."""
        try:
            saved = self._highs.getSavedMipSolutions()
        except Exception as err:  # noqa: BLE001 - an older highspy: no pool, no harm
            logger.debug("no saved MIP solutions: %s", err)
            return []
        pts = [np.asarray(s.col_value, dtype=np.float64) for s in saved]
        pts = [x for x in pts if x.shape == (master.n_cols,) and np.all(np.isfinite(x))]
        pts.sort(key=lambda x: float(master.c @ x))
        return [x[: self.lifted.n] for x in pts]

    def polish_pool(self) -> int:
        """Polish the assignments of the last master's improving solutions.

        HiGHS keeps the solutions it improved on while solving a master
        (``mip_improving_solution_save``); their assignments are points of the master
        below its cutoff, like its final one, and the best of them by the true
        objective need not be the best by the tangent model. Their fixed-integer QPs
        (best master value first, at most :attr:`master_pool`, assignments not
        polished before) only propose incumbents and add tangent cuts, both valid, so
        the answer stays exact. Called when a master leaves the gap open: an
        incumbent found now lowers the next master's cutoff. Why: the RBF CSVM
        n = 60 of scripts/bench_mip.py (30 binaries, k = 60) found its optimum in the
        third of five masters from the final points alone; its first master's pool
        holds it, so two masters suffice (docs/benchmarks.md, "MIP engine: the csvm
        report's RBF n = 60").
        """
        runs = 0
        for x in self._pool:
            if runs >= self.master_pool or self.remaining() <= 0:
                break
            z = np.round(x[self.int_idx])
            if z.astype(np.int64).tobytes() in self.seen:
                continue
            self.polish(z)
            runs += 1
        self._pool = []
        return runs

    def grid_cuts(self, master: MipModel, cutoff: float, time_limit: float) -> MipModel:
        """Tangent cuts on a grid over the box of ``r`` that can beat the cutoff.

        Over the master's LP relaxation with its objective row at ``cutoff``, two LPs
        per dimension ``k`` bound ``r_k`` to ``[lo_k, hi_k]``; each epigraph
        ``t_k >= r_k^2 / 2`` gets tangent cuts at evenly spaced points of that
        interval. Between neighbouring points ``delta`` apart a tangent model is at
        most ``delta^2 / 8`` below ``r_k^2 / 2``, so the spacing ``delta =
        sqrt(4 g |U| / k)`` (``g = mip_rel_gap``, ``U`` the cutoff) keeps the master's
        value of every point in the box within ``g |U| / 2`` of the true objective
        (at most :data:`_GRID_MAX_PER_K` points per dimension, the spacing widened
        beyond that). Returns ``master`` with the cut rows appended; they are also
        kept for later masters. Tangents are valid everywhere and the box only
        places them, so the masters' bounds and the answer stay exact.

        Why: the master's tangent model is loose between the few points cut so far,
        so the first master, finding a better assignment, could prove its bound only
        to that looseness, and a second master had to prove the assignment found
        optimal (linear CSVM n = 400 of scripts/bench_mip.py, the report's row: 2
        masters; with the grid, 1; docs/benchmarks.md, "Linear CSVM n = 400 in one
        master").
        """
        t_end = time.perf_counter() + time_limit
        n, k = self.lifted.n, self.lifted.k
        A = sp.csr_array(master.A)
        lp = lp_under_cutoff(master, cutoff)
        plp = PersistentLp(lp, replace(self.config, time_limit=max(time_limit, 1e-3)))
        box = np.full((2, k), np.nan)
        cols = n + np.arange(k)
        for kk in range(k):
            for side, sgn in ((0, 1.0), (1, -1.0)):
                left = t_end - time.perf_counter()
                if left <= 0:
                    return master
                c = np.zeros(k)
                c[kk] = sgn
                plp.change_costs(cols, c)
                res = plp.solve(left)
                if res.status is not SolveStatus.optimal:
                    # nothing below the cutoff (the master will say so) or r_k not
                    # bounded by the rows and cuts so far: no grid, nothing lost
                    logger.debug("no grid of tangent cuts: box LP %s", res.message)
                    return master
                box[side, kk] = sgn * res.objective
        g = self.config.mip_rel_gap
        delta = math.sqrt(4.0 * g * max(1.0, abs(cutoff)) / k)
        ks_l: list[np.ndarray] = []
        rho_l: list[np.ndarray] = []
        for kk in range(k):
            lo, hi = box[0, kk], box[1, kk]
            width = max(hi - lo, 0.0)
            count = _GRID_MAX_PER_K if delta <= 0 else math.ceil(width / delta) + 1
            count = min(max(count, 2), _GRID_MAX_PER_K)
            rho_l.append(np.linspace(lo, hi, count))
            ks_l.append(np.full(count, kk, dtype=np.int64))
        ks, rho = np.concatenate(ks_l), np.concatenate(rho_l)
        self.lifted.add_points(ks, rho)
        logger.debug(
            "grid of %d tangent cuts (spacing %.3g) under cutoff %.8g: %.3f s",
            ks.size,
            delta,
            cutoff,
            time_limit - (t_end - time.perf_counter()),
        )
        return replace(
            master,
            A=sp.vstack([A, self.lifted.cut_rows(ks, rho)], format="csr"),
            row_lower=np.concatenate([master.row_lower, -0.5 * rho**2]),
            row_upper=np.concatenate([master.row_upper, np.full(ks.size, np.inf)]),
        )

    def _run_master(
        self,
        master: MipModel,
        config: MipConfig,
        opts: dict[str, float | int | str | bool] | None,
    ) -> MipResult:
        """One HiGHS master run within what is left, less the measured overrun.

        HiGHS checks its clock only between steps that can be long on a dense master
        (an LP refactorisation, the root LP's set-up): German fold 3's first master,
        at a 60 s limit, stopped at 73.6 s. The largest overrun seen on this model's
        masters so far is kept back from the next master's limit, so that the call as
        a whole ends near ``config.time_limit``.
        """
        left = self.remaining() - self._master_overrun
        if left <= 0:
            return MipResult(
                SolveStatus.time_limit,
                None,
                math.nan,
                -math.inf,
                math.inf,
                0.0,
                message="master skipped: its measured overrun would pass the limit",
            )
        t = time.perf_counter()
        mres = solve_highs(
            master, config, time_limit=left, highs=self._highs, warn=False, options=opts
        )
        took = time.perf_counter() - t
        self._master_overrun = max(self._master_overrun, took - left)
        logger.debug(
            "master MILP: %.3f s of %.3f s left (%d rows, %d nonzeros), %s",
            took,
            left,
            master.n_rows,
            0 if master.A is None else master.A.nnz,
            mres.message,
        )
        return mres

    def add_kelley_cuts(self, xm: np.ndarray) -> int:
        """Cuts at the master point where its epigraph ``t_k >= r_k^2 / 2`` is violated."""
        n, k = self.lifted.n, self.lifted.k
        r = xm[n : n + k]
        t = xm[n + k :]
        scale = abs(self.ub) if math.isfinite(self.ub) else 1.0
        viol = 0.5 * r**2 - t > 1e-9 * max(1.0, scale)
        return self.lifted.add_cuts(r, np.flatnonzero(viol))

    # ------------------------------------------------------------------ loop
    def seed(
        self,
        incumbents: Sequence[np.ndarray] = (),
        cut_points: np.ndarray | None = None,
        lower_bound: float | None = None,
        polish: Sequence[np.ndarray] = (),
    ) -> None:
        """Hand over what the caller already knows about this model.

        Parameters
        ----------
        incumbents : sequence of ndarray of shape (n,)
            Candidate points; each feasible one is offered (:meth:`offer`) and each
            adds its tangent cuts (a tangent of the convex objective is valid at any
            point, feasible or not).
        cut_points : ndarray of shape (m, n), optional
            Points (model columns) at which to add tangent cuts only.
        lower_bound : float, optional
            A lower bound on the optimum (model's own sense: an upper bound for
            ``max``) that the caller has proven, e.g. the proven bound of a relaxation
            of this model. It is taken as given; a wrong bound makes the result wrong.
        polish : sequence of ndarray of shape (n,)
            Points whose integer parts :meth:`run` polishes (fixed-integer QP, cuts at
            its solution) right after the start, before the relaxation and the first
            master, e.g. an incumbent solved at another ``C`` whose assignment is
            likely optimal here. Incumbents only: the bounds are unchanged.
        """
        n = self.model.n_cols
        for x in incumbents:
            x = np.asarray(x, dtype=np.float64)
            if x.shape != (n,) or not np.all(np.isfinite(x)):
                raise ValueError(f"an incumbent must be a finite vector of length {n}")
            self.offer(x)
            self.lifted.add_cuts(self.lifted.r_of(x))
        if cut_points is not None:
            P = np.atleast_2d(np.asarray(cut_points, dtype=np.float64))
            if P.shape[1] != n or not np.all(np.isfinite(P)):
                raise ValueError(f"cut_points must be finite, of shape (m, {n})")
            for x in P:
                self.lifted.add_cuts(self.lifted.r_of(x))
        if lower_bound is not None:
            if math.isnan(lower_bound):
                raise ValueError("lower_bound is NaN")
            self.lb = max(self.lb, self.sign * float(lower_bound))
        for x in polish:
            x = np.asarray(x, dtype=np.float64)
            if x.shape != (n,) or not np.all(np.isfinite(x[self.integ])):
                raise ValueError(
                    f"a point to polish must have length {n} and finite integers"
                )
            self._polish_first.append(np.round(x[self.integ]))

    def run(self, start: np.ndarray | None = None) -> MipResult:
        """Run the outer approximation to the gap, the time limit or ``max_rounds``."""
        self.box_bound()
        polished = False
        if start is not None:
            self.set_start(start)
            if np.shape(start) == (self.model.n_cols,) and np.all(np.isfinite(start)):
                # polish the start before the relaxation: a good incumbent first, so
                # that a call cut short by its limit still returns it
                self.polish(np.asarray(start, dtype=np.float64)[self.integ])
                polished = True
            if self.remaining() <= 0:
                return self.timed_out("time limit while polishing the start")
        for z in self._polish_first:
            if z.astype(np.int64).tobytes() not in self.seen:
                self.polish(z)
            if self.remaining() <= 0:
                return self.timed_out("time limit while polishing the seeds")
        self._polish_first = []
        if self.qp_cols(None) > _IPM_MAX_COLS and self.ub < math.inf:
            # a large relaxation (HiGHS QP, :meth:`qp`) may take the whole limit; with
            # an incumbent the masters give the bounds and detect infeasibility
            logger.info("continuous relaxation skipped: %d columns", self.qp_cols(None))
            return self._loop()
        relax = self.relax()
        if relax.status is SolveStatus.infeasible:
            self.best_x, self.lb = None, math.inf
            return self.result(
                SolveStatus.infeasible, "continuous relaxation infeasible"
            )
        if relax.status is SolveStatus.unbounded:
            self.best_x, self.lb = None, -math.inf
            return self.result(SolveStatus.unbounded, "continuous relaxation unbounded")
        if relax.status is SolveStatus.time_limit:
            return self.timed_out("time limit in the continuous relaxation")
        if (
            not polished
            and start is not None
            and np.shape(start) == (self.model.n_cols,)
            and np.all(np.isfinite(start))
        ):
            self.polish(np.asarray(start, dtype=np.float64)[self.integ])
        if relax.x is not None and relax.status is SolveStatus.optimal:
            self.round_relaxation(relax.x)
            if self.remaining() <= 0:
                return self.timed_out("time limit while rounding the relaxation")
        self.local_search()
        if self.remaining() <= 0:
            return self.timed_out("time limit in the local search")
        return self._loop()

    def _loop(self) -> MipResult:
        """Steps 1-3 of the module docstring until a stop rule holds."""
        while True:
            if self.gap_closed():
                return self.result(SolveStatus.optimal, "optimal")
            if self.rounds >= self.max_rounds:
                warnings.warn(
                    f"outer approximation stopped after max_rounds={self.max_rounds}; "
                    f"UB={self.ub:.6g}, LB={self.lb:.6g}",
                    ConvergenceWarning,
                    stacklevel=4,
                )
                return self.result(SolveStatus.max_iter, "max_rounds reached")
            if self.remaining() <= 0:
                return self.timed_out("time limit")
            mres, cutoff = self.master()
            cut_off = mres.message == "Objective bound" or (
                mres.status is SolveStatus.infeasible and self.best_x is not None
            )
            if cut_off and mres.x is None:
                self.lb = max(self.lb, cutoff)
                continue
            if mres.status is SolveStatus.infeasible:
                if self.best_x is None:
                    self.lb = math.inf
                    return self.result(SolveStatus.infeasible, "master MILP infeasible")
                self.lb = self.ub  # no assignment better than the incumbent remains
                continue
            if mres.status is SolveStatus.unbounded:
                self.best_x, self.lb = None, -math.inf
                return self.result(SolveStatus.unbounded, "master MILP unbounded")
            if math.isfinite(mres.bound):
                self.lb = max(self.lb, mres.bound)
            if mres.x is None:
                if self._capped:
                    continue
                return self.timed_out("time limit in the master MILP")
            xm = mres.x
            z = np.round(xm[self.int_idx])
            if z.astype(np.int64).tobytes() not in self.seen:
                pres = self.polish(z)
                if pres is None or pres.x is None:
                    # QP failed: the master point itself is feasible for the model
                    self.offer(xm[: self.lifted.n])
            self.add_kelley_cuts(xm)
            if not self.gap_closed():
                pooled = self.polish_pool()
                if pooled:
                    logger.debug("polished %d pooled assignments", pooled)
            logger.debug("OA round %d: LB=%.8g UB=%.8g", self.rounds, self.lb, self.ub)
            if mres.status is SolveStatus.time_limit:
                return self.timed_out("time limit in the master MILP")


def solve_convex_miqp(
    model: MipModel,
    config: MipConfig | None = None,
    start: np.ndarray | None = None,
    *,
    max_rounds: int = 200,
    factor: np.ndarray | None = None,
    qp_solver: str = "ipm",
    incumbents: Sequence[np.ndarray] = (),
    cut_points: np.ndarray | None = None,
    lower_bound: float | None = None,
    rounding: Callable[[np.ndarray], Sequence[np.ndarray]] | None = None,
    improve: Callable[[np.ndarray], Sequence[np.ndarray]] | None = None,
    tighten: Callable[[MipModel, float, float], MipModel] | None = None,
    grid: bool | str = "auto",
    master_pool: int = 8,
    tighten_after: int | None = None,
    proof_options: dict[str, float | int | str | bool] | None = None,
    polish: Sequence[np.ndarray] = (),
) -> MipResult:
    """Solve a convex MIQP exactly by outer approximation (SPEC S5 "Solving").

    Parameters
    ----------
    model : MipModel
        Model with integers and a PSD ``Q`` (``sense="max"`` needs ``-Q`` PSD). A model
        without integers or without ``Q`` is passed to HiGHS directly.
    config : MipConfig, optional
        Overall time limit and relative gap of the outer approximation.
    start : ndarray of shape (n,), optional
        Feasible (or nearly) point; its integers are fixed and polished by a QP to give
        the first incumbent and cuts.
    max_rounds : int
        Maximum number of master MILPs.
    factor : ndarray of shape (n, k), optional
        ``F`` with ``Q = F F^T`` (e.g. ``diag(y) X`` for a linear kernel), avoiding an
        eigendecomposition.
    qp_solver : {"ipm", "ipm-dense", "ipm-sparse", "highs"}
        Solver of the fixed-integer and relaxed QPs: our interior point
        (:func:`~torchsvm.mip.qp_ipm.solve_qp_ipm`, default; falls back to HiGHS if it
        fails; ``ipm-dense`` / ``ipm-sparse`` force its ``linalg``) or the HiGHS
        active-set QP on the lifted model.
    incumbents, cut_points, lower_bound
        What the caller already knows (:meth:`OuterApproximation.seed`): further
        feasible points (offered, not polished), points for tangent cuts, and a proven
        bound on the optimum (taken as given).
    rounding : callable, optional
        Primal heuristic on the continuous relaxation (:class:`OuterApproximation`).
    improve : callable, optional
        Local search from the incumbent (:meth:`OuterApproximation.local_search`).
    tighten : callable, optional
        Master presolve under the cutoff (:class:`OuterApproximation`).
    grid : bool or "auto"
        Tangent cuts on a grid over the box of the lifted quadratic that can beat
        the first cutoff (:meth:`OuterApproximation.grid_cuts`); ``auto``: where the
        lifted quadratic has at most :data:`_GRID_MAX_K` dimensions.
    master_pool : int
        Most improving solutions of a master, besides its final one, whose
        assignments are polished when it leaves the gap open
        (:meth:`OuterApproximation.polish_pool`); 0: none.
    tighten_after : int, optional
        Tighten only once an untightened master has explored this many nodes
        (:class:`OuterApproximation`); None: every master with a cutoff.
    proof_options : dict, optional
        HiGHS options over :data:`_PROOF_OPTIONS` for the masters with a cutoff
        (:class:`OuterApproximation`).
    polish : sequence of ndarray
        Points whose integer assignments are polished before the first master
        (:meth:`OuterApproximation.seed`); incumbents only.

    Returns
    -------
    MipResult
        ``x`` is the incumbent over the model's own columns; ``bound`` the proven lower
        (upper, for ``max``) bound; ``n_iter`` the number of master MILPs.
    """
    config = MipConfig() if config is None else config
    if qp_solver not in _QP_SOLVERS:
        raise ValueError(f"qp_solver must be one of {_QP_SOLVERS}, got {qp_solver!r}")
    vm = validate_model(model)
    if vm.Q is None or not vm.has_integers:
        return solve_highs(vm, config, start=start)
    oa = OuterApproximation(
        vm,
        config,
        factor=factor,
        qp_solver=qp_solver,
        max_rounds=max_rounds,
        rounding=rounding,
        improve=improve,
        tighten=tighten,
        grid=grid,
        master_pool=master_pool,
        tighten_after=tighten_after,
        proof_options=proof_options,
    )
    oa.seed(incumbents, cut_points, lower_bound, polish)
    return oa.run(start)
