"""Convex MIQP by outer approximation over HiGHS MILPs and QPs (SPEC S5 "Solving").

Problem (a :class:`~torchsvm.mip.highs.MipModel` with integers and ``Q``)::

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

0. Continuous relaxation (integrality dropped, same QP solver): a lower bound and the first
   cut point; infeasible relaxation => infeasible model. If a ``start`` is given its
   integers are fixed and the QP polished to give the first incumbent and cuts.
1. Master MILP over ``(x, r, t)``: ``min c x + sum_k t_k + offset`` with the tangent cuts
   ``t_k >= 0.5 rho_k^2 + rho_k (r_k - rho_k)`` at every cut point ``rho``; its proven
   dual bound is a lower bound ``LB``. Once an incumbent ``UB`` exists the master gets
   the cutoff ``UB - mip_rel_gap * max(1, |UB|)`` (HiGHS ``objective_bound``) and a
   loose gap: it must either return a new assignment below the cutoff or prove that
   none exists, which proves the incumbent optimal within the tolerance.
2. With the integers fixed at the master solution, the convex QP (our dense
   interior point :func:`solve_qp_ipm`, or the HiGHS QP on the lifted model) gives a
   feasible point: upper bound ``UB`` and incumbent; cuts are added at the QP solution
   (all ``k``) and at the master point (only the violated ``k``, Kelley cuts).
3. Stop when ``UB - LB <= mip_rel_gap * max(1, |UB|)`` (status optimal), at the time limit
   (status time_limit + :class:`SolverTimeLimitWarning`; the whole procedure honours
   ``config.time_limit``), or after ``max_rounds`` rounds (status max_iter + warning).

Termination without no-good cuts: the cut at the QP optimum of an integer assignment
makes the master value of that assignment at least the QP optimum (KKT), so a repeated
assignment closes the gap; the master-point Kelley cuts make progress in between.
The reported ``mip_gap`` is ``max(0, UB - LB) / max(1, |UB|)``.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import replace

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from torchsvm.exceptions import ConvergenceWarning, SolverError, SolverTimeLimitWarning
from torchsvm.mip.highs import (
    MipConfig,
    MipModel,
    MipResult,
    _solve_validated,
    check_feasible,
    model_objective,
    validate_model,
)
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["factor_psd", "solve_convex_miqp", "solve_qp_ipm"]


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


class _Lifted:
    """The model lifted to ``(x, r, t)`` with ``r = L^T x_S`` (see module docstring)."""

    def __init__(self, model: MipModel, factor: np.ndarray | None) -> None:
        self.model = model
        n = model.n_cols
        Q = sp.csc_array(model.Q)
        touched = np.unique(np.concatenate([Q.nonzero()[0], Q.nonzero()[1]]))
        self.S = touched
        if factor is not None:
            F = np.asarray(factor, dtype=np.float64)
            if F.ndim != 2 or F.shape[0] != n:
                raise ValueError(f"factor must have shape ({n}, k), got {F.shape}")
            L = F[touched]
        else:
            L = factor_psd(Q[touched][:, touched])
        self.L = L  # (|S|, k)
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

    def master_model(self) -> MipModel:
        n, k = self.n, self.k
        ks = np.concatenate(self.cut_k) if self.cut_k else np.zeros(0, dtype=int)
        rho = np.concatenate(self.cut_rho) if self.cut_rho else np.zeros(0)
        nc = ks.size
        # cut: t_k - rho r_k >= -0.5 rho^2   over columns [x (n), r (k), t (k)]
        rows = np.repeat(np.arange(nc), 2)
        cols = np.empty(2 * nc, dtype=np.int64)
        cols[0::2] = n + ks
        cols[1::2] = n + k + ks
        vals = np.empty(2 * nc)
        vals[0::2] = -rho
        vals[1::2] = 1.0
        cuts = sp.csr_array((vals, (rows, cols)), shape=(nc, n + 2 * k))
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


def _finish(
    status: SolveStatus,
    x: np.ndarray | None,
    ub: float,
    lb: float,
    t0: float,
    rounds: int,
    sign: float,
    msg: str,
    start_ok: bool | None,
) -> MipResult:
    if x is None:
        gap = math.inf
        obj = math.nan
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
        runtime=time.perf_counter() - t0,
        message=msg,
        n_iter=rounds,
        start_feasible=start_ok,
    )


def solve_convex_miqp(
    model: MipModel,
    config: MipConfig | None = None,
    start: np.ndarray | None = None,
    *,
    max_rounds: int = 200,
    factor: np.ndarray | None = None,
    qp_solver: str = "ipm",
) -> MipResult:
    """Solve a convex MIQP exactly by outer approximation (SPEC S5 "Solving").

    Parameters
    ----------
    model : MipModel
        Model with integers and a PSD ``Q`` (``sense="max"`` needs ``-Q`` PSD).
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
    qp_solver : {"ipm", "highs"}
        Solver of the fixed-integer and relaxed QPs: our dense interior point
        (:func:`solve_qp_ipm`, default; falls back to HiGHS if it fails) or the HiGHS
        active-set QP on the lifted model (which stalls on some degenerate CSVM QPs).

    Returns
    -------
    MipResult
        ``x`` is the incumbent over the model's own columns; ``bound`` the proven lower
        (upper, for ``max``) bound; ``n_iter`` the number of master MILPs.
    """
    t0 = time.perf_counter()
    config = MipConfig() if config is None else config
    model = validate_model(model)
    sign = 1.0
    if model.sense == "max":
        sign = -1.0
        model = replace(
            model,
            c=-model.c,
            Q=None if model.Q is None else -model.Q,
            offset=-model.offset,
            sense="min",
        )
    if model.Q is None or not model.has_integers:
        res = _solve_validated(model, config, config.time_limit, start, warn=True)
        return replace(res, objective=sign * res.objective, bound=sign * res.bound)
    if qp_solver not in ("ipm", "highs"):
        raise ValueError(f"qp_solver must be 'ipm' or 'highs', got {qp_solver!r}")
    lifted = _Lifted(model, factor)
    integ = lifted.integ
    int_idx = np.flatnonzero(integ)

    def remaining() -> float:
        return config.time_limit - (time.perf_counter() - t0)

    best_x: np.ndarray | None = None
    ub, lb = math.inf, -math.inf
    seen: set[bytes] = set()
    start_ok: bool | None = None

    def qp(z: np.ndarray | None, tl: float) -> MipResult:
        """Convex QP with the integers fixed at ``z`` (relaxed if None)."""
        if qp_solver == "highs":
            return _solve_validated(lifted.qp_model(z), config, tl)
        lo, up = model.col_lower.copy(), model.col_upper.copy()
        if z is not None:
            lo[int_idx] = z
            up[int_idx] = z
        sub = replace(model, integrality=None, col_lower=lo, col_upper=up)
        res = solve_qp_ipm(sub, time_limit=tl)
        if res.status is SolveStatus.not_solved:
            logger.info("interior point failed; retrying the QP with HiGHS")
            try:
                return _solve_validated(lifted.qp_model(z), config, tl)
            except SolverError as err:
                logger.info("HiGHS QP failed too: %s", err)
        return res

    def polish(z: np.ndarray) -> MipResult | None:
        nonlocal best_x, ub
        key = np.round(z).astype(np.int64).tobytes()
        seen.add(key)
        tl = remaining()
        if tl <= 0:
            return None
        res = qp(np.round(z), tl)
        if res.x is None:
            return res
        x = res.x[: lifted.n].copy()
        x[integ] = np.round(x[integ])
        val = model_objective(model, x)
        if res.status is SolveStatus.optimal:
            lifted.add_cuts(lifted.r_of(x))
        if val < ub:
            ub, best_x = val, x
        return res

    def timed_out(rounds: int, msg: str) -> MipResult:
        warnings.warn(
            f"outer approximation stopped at its time limit ({config.time_limit:.3g} s) "
            f"after {rounds} rounds; UB={ub:.6g}, LB={lb:.6g}",
            SolverTimeLimitWarning,
            stacklevel=3,
        )
        return _finish(
            SolveStatus.time_limit, best_x, ub, lb, t0, rounds, sign, msg, start_ok
        )

    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        start_ok, reason = check_feasible(
            model, start, tol=max(1e-6, config.feasibility_tol)
        )
        if not start_ok:
            logger.info("outer approximation start not feasible: %s", reason)
        if start_ok:
            ub, best_x = model_objective(model, start), start.copy()
            lifted.add_cuts(lifted.r_of(start))

    # 0. continuous relaxation: bound + first cut point (keeps the master bounded).
    relax = qp(None, remaining())
    if relax.status is SolveStatus.infeasible:
        return _finish(
            SolveStatus.infeasible,
            None,
            ub,
            math.inf,
            t0,
            0,
            sign,
            "continuous relaxation infeasible",
            None,
        )
    if relax.status is SolveStatus.unbounded:
        return _finish(
            SolveStatus.unbounded,
            None,
            ub,
            -math.inf,
            t0,
            0,
            sign,
            "continuous relaxation unbounded",
            None,
        )
    if relax.status is SolveStatus.optimal and relax.x is not None:
        lb = relax.objective
        lifted.add_cuts(lifted.r_of(relax.x[: lifted.n]))
    elif relax.status is SolveStatus.time_limit:
        return timed_out(0, "time limit in the continuous relaxation")
    if (
        start is not None
        and start.shape == (model.n_cols,)
        and np.all(np.isfinite(start))
    ):
        polish(start[integ])
    tol = config.mip_rel_gap
    master_cfg = replace(config, mip_rel_gap=max(tol / 4.0, 1e-9))
    rounds = 0
    while True:
        if best_x is not None and ub - lb <= tol * max(1.0, abs(ub)):
            return _finish(
                SolveStatus.optimal,
                best_x,
                ub,
                lb,
                t0,
                rounds,
                sign,
                "optimal",
                start_ok,
            )
        if rounds >= max_rounds:
            warnings.warn(
                f"outer approximation stopped after max_rounds={max_rounds}; "
                f"UB={ub:.6g}, LB={lb:.6g}",
                ConvergenceWarning,
                stacklevel=2,
            )
            return _finish(
                SolveStatus.max_iter,
                best_x,
                ub,
                lb,
                t0,
                rounds,
                sign,
                "max_rounds reached",
                start_ok,
            )
        if remaining() <= 0:
            return timed_out(rounds, "time limit")
        master = lifted.master_model()
        opts: dict[str, float | int | str | bool] | None = None
        mstart = None
        cutoff = math.inf
        if best_x is not None:
            # Only assignments beating the incumbent by the tolerance matter: the
            # cutoff prunes the master's tree; "none left" proves the gap closed.
            cutoff = ub - tol * max(1.0, abs(ub))
            opts = {"objective_bound": cutoff, "mip_heuristic_effort": 0.0}
        # With the cutoff the master only has to find an assignment below it (or
        # prove there is none), so a loose gap suffices; without an incumbent its
        # dual bound is the lower bound and it is solved tightly.
        mcfg = master_cfg if best_x is None else replace(config, mip_rel_gap=0.5)
        mres = _solve_validated(master, mcfg, remaining(), mstart, options=opts)
        if (
            mcfg is not master_cfg
            and mres.x is not None
            and mres.objective >= cutoff
            and mres.bound < cutoff
            and remaining() > 0
        ):
            # only a solution above the cutoff came back: settle this round tightly
            mres = _solve_validated(
                master, master_cfg, remaining(), mstart, options=opts
            )
        rounds += 1
        cut_off = mres.message == "Objective bound" or (
            mres.status is SolveStatus.infeasible and best_x is not None
        )
        if cut_off and mres.x is None:
            lb = max(lb, cutoff)
            continue
        if mres.status is SolveStatus.infeasible:
            if best_x is None:
                return _finish(
                    SolveStatus.infeasible,
                    None,
                    ub,
                    math.inf,
                    t0,
                    rounds,
                    sign,
                    "master MILP infeasible",
                    start_ok,
                )
            lb = ub  # no assignment better than the incumbent remains
            continue
        if mres.status is SolveStatus.unbounded:
            return _finish(
                SolveStatus.unbounded,
                None,
                ub,
                -math.inf,
                t0,
                rounds,
                sign,
                "master MILP unbounded",
                start_ok,
            )
        if math.isfinite(mres.bound):
            lb = max(lb, mres.bound)
        if mres.x is None:
            return timed_out(rounds, "time limit in the master MILP")
        xm = mres.x
        z = np.round(xm[int_idx])
        key = z.astype(np.int64).tobytes()
        if key not in seen:
            pres = polish(z)
            if pres is None or pres.x is None:
                # QP failed: the master point itself is feasible for the model
                x_m = xm[: lifted.n].copy()
                x_m[integ] = np.round(x_m[integ])
                ok, _ = check_feasible(
                    model, x_m, tol=max(1e-6, config.feasibility_tol)
                )
                val = model_objective(model, x_m)
                if ok and val < ub:
                    ub, best_x = val, x_m
        # Kelley cuts at the master point where the epigraph is violated
        r = xm[lifted.n : lifted.n + lifted.k]
        t = xm[lifted.n + lifted.k :]
        viol = 0.5 * r**2 - t > 1e-9 * max(1.0, abs(ub) if math.isfinite(ub) else 1.0)
        lifted.add_cuts(r, np.flatnonzero(viol))
        logger.debug("OA round %d: LB=%.8g UB=%.8g", rounds, lb, ub)
        if mres.status is SolveStatus.time_limit:
            return timed_out(rounds, "time limit in the master MILP")


# --------------------------------------------------------------------------- QP by IPM


def _step_length(
    s: np.ndarray, lam: np.ndarray, ds: np.ndarray, dl: np.ndarray
) -> float:
    """Largest step in (0, 1] keeping ``s`` and ``lam`` non-negative."""
    a = 1.0
    neg = ds < 0
    if neg.any():
        a = min(a, float(np.min(-s[neg] / ds[neg])))
    neg = dl < 0
    if neg.any():
        a = min(a, float(np.min(-lam[neg] / dl[neg])))
    return a


def solve_qp_ipm(
    model: MipModel,
    *,
    time_limit: float = 300.0,
    tol: float = 1e-9,
    dual_tol: float = 1e-4,
    max_iter: int = 200,
) -> MipResult:
    """Dense primal-dual interior-point method (Mehrotra) for a convex QP.

    Solves ``min c x + 0.5 x^T Q x + offset`` s.t. rows, bounds (integrality ignored;
    fixed columns are eliminated; if it fails, it is retried with the free columns
    defined by equality rows substituted out). Used for the outer approximation's QPs
    because the
    HiGHS active-set QP can stall or fail on the degenerate, semidefinite CSVM QPs.

    Parameters
    ----------
    model : MipModel
        A validated model with ``sense="min"``.
    time_limit : float
        Seconds.
    tol : float
        Relative tolerance on the primal / dual residuals and the complementarity gap.
    dual_tol : float
        Dual residual accepted once the complementarity gap has vanished.
    max_iter : int
        Iteration cap.

    Returns
    -------
    MipResult
        ``optimal`` with ``x``, or ``not_solved`` / ``time_limit`` without one.
    """
    t0 = time.perf_counter()
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        res = _solve_qp_ipm(model, time_limit, tol, dual_tol, max_iter, False)
        left = time_limit - (time.perf_counter() - t0)
        if res.status is SolveStatus.not_solved and left > 0:
            # retry with the free columns of equality rows substituted out
            res = _solve_qp_ipm(model, left, tol, dual_tol, max_iter, True)
    return replace(res, runtime=time.perf_counter() - t0)


def _substitution(
    A: np.ndarray,
    rl: np.ndarray,
    ru: np.ndarray,
    lo: np.ndarray,
    up: np.ndarray,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Columns to eliminate through equality rows: ``x = P x_r + p0``.

    A column qualifies if it is free, and a row qualifies if it is an equality holding
    exactly one qualifying column with a coefficient of magnitude >= 1e-6 (the other
    entries then only involve kept columns). Returns ``(None, ., .)`` if nothing
    qualifies; else ``P`` of shape (n, n_r), ``p0``, the mask of the rows kept and the
    indices of the kept columns (``x[kept] = x_r``).
    """
    n = A.shape[1]
    freecol = ~np.isfinite(lo) & ~np.isfinite(up)
    eq = np.isfinite(rl) & (rl == ru)
    if not (freecol.any() and eq.any()):
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    sub_of_row: dict[int, int] = {}
    used: set[int] = set()
    for row in np.flatnonzero(eq).tolist():
        cand = np.flatnonzero(freecol & (np.abs(A[row]) >= 1e-6))
        if cand.size == 1 and int(cand[0]) not in used:
            sub_of_row[row] = int(cand[0])
            used.add(int(cand[0]))
    if not sub_of_row:
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    subs = np.array(sorted(used))
    kept = np.setdiff1d(np.arange(n), subs)
    # a row may only reference substituted columns through its own pivot
    for r1, j1 in list(sub_of_row.items()):
        others = np.flatnonzero(A[r1])
        if np.intersect1d(others[others != j1], subs).size:
            del sub_of_row[r1]
    if not sub_of_row:
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    subs = np.array(sorted(sub_of_row.values()))
    kept = np.setdiff1d(np.arange(n), subs)
    P = np.zeros((n, kept.size))
    P[kept, np.arange(kept.size)] = 1.0
    p0 = np.zeros(n)
    for r2, j2 in sub_of_row.items():
        a = A[r2, j2]
        P[j2] = -A[r2, kept] / a
        p0[j2] = rl[r2] / a
    keep_rows = np.ones(A.shape[0], dtype=bool)
    keep_rows[list(sub_of_row)] = False
    return P, p0, keep_rows, kept


def _solve_qp_ipm(
    model: MipModel,
    time_limit: float,
    tol: float,
    dual_tol: float,
    max_iter: int,
    substitute: bool,
) -> MipResult:
    t0 = time.perf_counter()
    n = model.n_cols
    lo_c, up_c = np.asarray(model.col_lower), np.asarray(model.col_upper)
    fixed = lo_c == up_c
    free = np.flatnonzero(~fixed)
    xf = lo_c[fixed]
    Qf = None if model.Q is None else sp.csr_array(model.Q)
    A = sp.csr_array(model.A) if model.A is not None else sp.csr_array((0, n))
    shift = A[:, np.flatnonzero(fixed)] @ xf if fixed.any() else np.zeros(A.shape[0])
    Af = A[:, free].toarray()
    rl = np.asarray(model.row_lower) - shift
    ru = np.asarray(model.row_upper) - shift
    c = np.asarray(model.c, dtype=np.float64)[free].copy()
    const = float(model.offset) + float(np.asarray(model.c)[fixed] @ xf)
    if Qf is not None:
        H = Qf[free][:, free].toarray()
        if fixed.any():
            Qff = Qf[free][:, np.flatnonzero(fixed)]
            c += Qff @ xf
            const += 0.5 * float(
                xf @ (Qf[np.flatnonzero(fixed)][:, np.flatnonzero(fixed)] @ xf)
            )
    else:
        H = np.zeros((free.size, free.size))
    lo_free, up_free = lo_c[free].copy(), up_c[free].copy()
    # Substitute free columns defined by equality rows (e.g. v = L^T diag(y) a in the
    # CSVM kernel form): x = P x_r + p0. The reduced QP has no such saddle block and
    # is far better conditioned for the interior point.
    P: np.ndarray | None = None
    if substitute:
        P, p0, keep_rows, kept = _substitution(Af, rl, ru, lo_free, up_free)
    if P is not None:
        const += float(c @ p0 + 0.5 * p0 @ H @ p0)
        c = P.T @ (c + H @ p0)
        H = P.T @ H @ P
        shift_r = Af @ p0
        Af = (Af @ P)[keep_rows]
        rl, ru = (rl - shift_r)[keep_rows], (ru - shift_r)[keep_rows]
        lo_free, up_free = lo_free[kept], up_free[kept]
    nf = H.shape[0]
    eq = np.isfinite(rl) & (rl == ru)
    AE, bE = Af[eq], rl[eq]
    lo_rows = np.flatnonzero(~eq & np.isfinite(rl))
    up_rows = np.flatnonzero(~eq & np.isfinite(ru))
    # inequality rows G x <= h (dense part) and bound rows sgn * x_j <= hb
    G = np.vstack([-Af[lo_rows], Af[up_rows]])
    h = np.concatenate([-rl[lo_rows], ru[up_rows]])
    lo_f, up_f = lo_free, up_free
    bl = np.flatnonzero(np.isfinite(lo_f))
    bu = np.flatnonzero(np.isfinite(up_f))
    bidx = np.concatenate([bl, bu])
    bsgn = np.concatenate([-np.ones(bl.size), np.ones(bu.size)])
    hb = np.concatenate([-lo_f[bl], up_f[bu]])
    mG, mB, mE = G.shape[0], bidx.size, AE.shape[0]
    m = mG + mB

    def gx(x: np.ndarray) -> np.ndarray:
        return np.concatenate([G @ x, bsgn * x[bidx]])

    def gtv(v: np.ndarray) -> np.ndarray:
        out = G.T @ v[:mG]
        np.add.at(out, bidx, bsgn * v[mG:])
        return out

    hh = np.concatenate([h, hb])
    x = np.zeros(nf)
    if bl.size:
        x[bl] = np.maximum(x[bl], lo_f[bl])
    if bu.size:
        x[bu] = np.minimum(x[bu], up_f[bu])
    s = np.maximum(hh - gx(x), 1.0)
    lam = np.ones(m)
    nu = np.zeros(mE)
    scale_c = 1.0 + np.linalg.norm(c, np.inf)
    scale_h = 1.0 + (np.linalg.norm(hh, np.inf) if m else 0.0)
    status = SolveStatus.not_solved
    last_top: float | None = None
    for _ in range(max_iter):
        now = time.perf_counter()
        # stop before an iteration that would end past the limit (dense iterations on
        # thousands of columns take tens of seconds each)
        t_iter = 0.0 if last_top is None else now - last_top
        last_top = now
        if now - t0 + t_iter > time_limit:
            status = SolveStatus.time_limit
            break
        rd = H @ x + c + gtv(lam) + (AE.T @ nu if mE else 0.0)
        rp = gx(x) + s - hh
        re = AE @ x - bE if mE else np.zeros(0)
        mu = float(s @ lam) / max(m, 1)
        logger.debug(
            "ipm rd=%.2e rp=%.2e re=%.2e mu=%.2e",
            np.abs(rd).max(),
            np.abs(rp).max() if m else 0,
            np.abs(re).max() if mE else 0,
            mu,
        )
        pobj = float(c @ x + 0.5 * x @ H @ x)
        primal_ok = (m == 0 or np.linalg.norm(rp, np.inf) <= tol * scale_h) and (
            mE == 0 or np.linalg.norm(re, np.inf) <= tol * (1 + np.abs(bE).max())
        )
        rd_n = float(np.linalg.norm(rd, np.inf)) / scale_c
        # NOTE: on the semidefinite CSVM QPs the dual residual can stall (1e-7..1e-5)
        # once the barrier is tiny (D spans 1e-12..1e12). A primal-feasible point with
        # vanishing complementarity and rd <= dual_tol is accepted: the outer
        # approximation only needs a feasible, near-optimal point (its bound comes
        # from the HiGHS master).
        if primal_ok and mu <= tol * max(1.0, abs(pobj)) / 10 and rd_n <= tol:
            status = SolveStatus.optimal
            break
        if primal_ok and mu <= 1e-13 * max(1.0, abs(pobj)):
            if rd_n <= dual_tol:
                status = SolveStatus.optimal
            break
        D = lam / s
        K = H + (G.T * D[:mG]) @ G
        diag = np.zeros(nf)
        np.add.at(diag, bidx, D[mG:])
        K[np.diag_indices(nf)] += diag + 1e-11 * (1.0 + np.abs(np.diag(K)))
        KKT = np.block([[K, AE.T], [AE, np.zeros((mE, mE))]]) if mE else K
        try:
            lu = scipy.linalg.lu_factor(KKT, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            break

        def newton(
            rc: np.ndarray,
            D: np.ndarray = D,
            lu: tuple = lu,
            KKT: np.ndarray = KKT,
            rd: np.ndarray = rd,
            rp: np.ndarray = rp,
            re: np.ndarray = re,
            s: np.ndarray = s,
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            rhs_x = -rd - gtv(D * rp - rc / s)
            rhs = np.concatenate([rhs_x, -re]) if mE else rhs_x
            sol = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
            sol += scipy.linalg.lu_solve(lu, rhs - KKT @ sol, check_finite=False)
            dx = sol[:nf]
            return dx, D * (gx(dx) + rp) - rc / s, sol[nf:]

        rc = s * lam
        dx, dl, dn = newton(rc)
        ds = (-rc - s * dl) / lam
        a_aff = _step_length(s, lam, ds, dl)
        mu_aff = float((s + a_aff * ds) @ (lam + a_aff * dl)) / max(m, 1)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        rc = s * lam + ds * dl - sigma * mu
        dx, dl, dn = newton(rc)
        ds = (-rc - s * dl) / lam
        a = min(1.0, 0.99 * _step_length(s, lam, ds, dl))
        x += a * dx
        s += a * ds
        lam += a * dl
        if mE:
            nu += a * dn
        if not np.all(np.isfinite(x)):
            break
    runtime = time.perf_counter() - t0
    if status is not SolveStatus.optimal:
        return MipResult(
            status,
            None,
            math.nan,
            -math.inf,
            math.inf,
            runtime,
            message="interior point did not converge",
        )
    full = np.empty(n)
    full[free] = x if P is None else P @ x + p0
    full[fixed] = xf
    obj = model_objective(model, full)
    return MipResult(
        SolveStatus.optimal, full, obj, obj, 0.0, runtime, message="optimal"
    )
