"""Constrained SVM as a convex MIQP, solved by outer approximation (SPEC S5; thesis ch. 2).

Notation: ``I`` training rows, ``J`` anchor rows, ``F`` the rows carrying ``z`` (``F = J``
for S5, ``F = I`` for S5c), ``c_i = w_i C_{y_i}`` the slack cost (``C+ = C/|I+|``,
``C- = C/|I-|``), ``M1 = problem.big_m``, ``M2 = problem.big_m_dual``.

Linear (primal) form, thesis ch. 2 (``form="primal"``; linear kernel only)::

    min  ||w||^2 + sum_{i in I} c_i xi_i
    s.t. y_i (w.x_i + b) + xi_i >= 1                       (i in I)
         y_j (w.x_j + b) - M1 z_j >= 1 - M1                 (j in J)       [S5]
         xi_i + M1 z_i <= M1                                (i in I)       [S5c]
         sum_{j in F_l} w_j z_j >= p*0_l sum_{j in F_l} w_j (each floor l)
         xi >= 0,  z binary.

Kernel (partial dual) form (``form="dual"``), SPEC S5: multipliers ``a = (lambda on I,
mu on J)``, ``b`` and ``z`` primal. With ``K_RR = L L^T`` (``R = I u J``; ``L`` of shape
(|R|, k): ``X_R`` for the linear kernel, the eigen-factor of the RBF Gram matrix with
eigenvalues below ``rank_tol * max`` dropped) we write ``v = L^T diag(y) a``, so that
``sum_{s,s'} a_s y_s a_s' y_s' K_ss' = ||v||^2`` and ``sum_s a_s y_s K_si = L_i . v``::

    min  ||v||^2 + sum_{i in I} c_i xi_i
    s.t. v - L^T diag(y) a = 0
         y_i (L_i . v + b) + xi_i >= 1                      (i in I)
         y_j (L_j . v + b) - M1 z_j >= 1 - M1               (j in J)       [S5]
         sum_R a_s y_s = 0
         0 <= lambda_i <= c_i / 2                           (i in I)       [S5]
         0 <= mu_j <= M2 z_j                                (j in J)       [S5]
         xi_i + M1 z_i <= M1,  0 <= lambda_i <= c_i/2 + M2 z_i  (i in I)   [S5c]
         floors as above; xi >= 0, z binary.

The multiplier bound ``c_i / 2`` is the thesis' ``C+/2``: its objective has no 1/2, so
its dual box is half libsvm's. [S5c, kernel form]: a row forced onto the margin
(``z_i = 1``, ``xi_i = 0``) loses its slack, so its multiplier is no longer capped by
``c_i/2``; we allow ``c_i/2 + M2 z_i`` (our choice; the thesis states S5c only in the
linear form). Both forms are convex MIQPs with ``Q = 2 I`` on ``w`` (``v``), solved by
:func:`torchsvm.mip.outer_approx.solve_convex_miqp` with the factor ``sqrt(2) I``.

Decision function: ``f(x) = w.x + b`` (primal) or ``sum_R a_s y_s K(x_s, x) + b`` (dual).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from torchsvm.config import SolverConfig
from torchsvm.exceptions import (
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
)
from torchsvm.kernels import compute_kernel_np
from torchsvm.mip import _release_screen as _release_kernels
from torchsvm.mip.csvm_release import release_applies
from torchsvm.mip.csvm_release import release_screen as _release_screen
from torchsvm.mip.highs import PersistentLp
from torchsvm.mip.model import MipConfig, MipModel, MipResult, check_feasible
from torchsvm.mip.outer_approx import factor_psd, lp_under_cutoff, solve_convex_miqp
from torchsvm.mip.solve import solve_model
from torchsvm.mip.warm_start import (
    S1Fit,
    s1_bounds,
    scores_without_intercept,
    slide_intercept,
)
from torchsvm.problems.csvm import CsvmProblem, RateFloor
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers import active_set_kernel
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "CsvmLayout",
    "CsvmSolution",
    "anchor_tightening",
    "build_csvm_model",
    "csvm_start",
    "fit_s1",
    "fit_s1_batch",
    "kernel_anchor_bounds",
    "floor_rounding",
    "floor_swaps",
    "solution_start",
    "solve_csvm",
    "start_objective",
]


@dataclass(frozen=True)
class CsvmLayout:
    """Column layout of the CSVM model and the row sets it was built on."""

    form: str
    w: slice
    b: int
    xi: slice
    z: slice
    a: slice | None
    train_idx: np.ndarray  # I
    floor_idx: np.ndarray  # F
    dual_idx: np.ndarray  # R (rows carrying a multiplier)
    L: np.ndarray | None  # (|R|, k) kernel factor (dual form)
    n_cols: int


@dataclass(frozen=True)
class CsvmSolution:
    """Solved constrained SVM.

    Parameters
    ----------
    status : SolveStatus
        ``optimal`` or ``time_limit`` (incumbent with its gap).
    coef : ndarray of shape (d,) or None
        ``w`` (linear kernel, either form).
    dual_coef : ndarray of shape (n_support,) or None
        ``a_s y_s`` (dual form).
    support_X : ndarray of shape (n_support, d) or None
        Rows with non-zero ``a_s`` (dual form).
    intercept : float
        ``b``.
    z : ndarray of shape (len(floor_idx),), bool
        Floor rows forced onto the right side of the margin.
    objective, bound, mip_gap, runtime : float
        MIQP objective (thesis scale), proven bound, gap and seconds.
    n_iter : int
        Outer-approximation rounds.
    start_feasible : bool or None
        Whether the warm start was feasible for the MIQP.
    form : str
        ``"primal"`` or ``"dual"``.
    tightened_masters : int
        Masters run with :func:`anchor_tightening` (0 where none was).
    """

    status: SolveStatus
    coef: np.ndarray | None
    dual_coef: np.ndarray | None
    support_X: np.ndarray | None
    intercept: float
    z: np.ndarray
    objective: float
    bound: float
    mip_gap: float
    runtime: float
    n_iter: int
    start_feasible: bool | None
    form: str
    kernel: str
    gamma: float
    tightened_masters: int = 0

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """Scores ``f(x)`` of shape (m,) for rows ``X`` of shape (m, d)."""
        X = np.asarray(X, dtype=np.float64)
        if self.coef is not None:
            return X @ self.coef + self.intercept
        assert self.dual_coef is not None and self.support_X is not None
        if self.dual_coef.size == 0:
            return np.full(X.shape[0], self.intercept)
        K = compute_kernel_np(X, self.support_X, kernel=self.kernel, gamma=self.gamma)
        return K @ self.dual_coef + self.intercept


def _resolve_form(problem: CsvmProblem, form: str) -> str:
    if form == "auto":
        return "primal" if problem.kernel == "linear" else "dual"
    if form not in ("primal", "dual"):
        raise ValueError(f"form must be 'auto', 'primal' or 'dual', got {form!r}")
    if form == "primal" and problem.kernel != "linear":
        raise ValueError("the primal CSVM form needs kernel='linear'")
    return form


def build_csvm_model(
    problem: CsvmProblem,
    form: str = "auto",
    *,
    floors: tuple[RateFloor, ...] | None = None,
    rank_tol: float = 1e-9,
) -> tuple[MipModel, CsvmLayout, np.ndarray]:
    """Build the CSVM MIQP of the module docstring.

    Parameters
    ----------
    problem : CsvmProblem
        Data and floors.
    form : {"auto", "primal", "dual"}
        ``auto``: primal for the linear kernel, dual otherwise.
    floors : tuple of RateFloor, optional
        Floors to impose (default ``problem.floors``; used to diagnose infeasibility).
    rank_tol : float
        Relative eigenvalue cut of the kernel factor (dual form, RBF).

    Returns
    -------
    model : MipModel
        The MIQP.
    layout : CsvmLayout
        Column layout.
    factor : ndarray of shape (n_cols, k)
        ``F`` with ``Q = F F^T`` for the outer approximation.
    """
    form = _resolve_form(problem, form)
    floors = problem.floors if floors is None else floors
    I, Fr = problem.train_idx, problem.floor_idx
    y, X = problem.y, problem.X
    cost = problem.cost()
    M1, M2 = problem.big_m, problem.big_m_dual
    R = I if problem.on_training else np.union1d(I, Fr)
    if form == "primal":
        Phi_rows = X
        k = X.shape[1]
        L = None
    else:
        L = (
            X[R]
            if problem.kernel == "linear"
            else factor_psd(problem.gram(R), rank_tol)
        )
        k = L.shape[1]
        Phi_rows = np.zeros((X.shape[0], k))
        Phi_rows[R] = L
    nI, nF = I.size, Fr.size
    na = R.size if form == "dual" else 0
    # columns: [w/v (k), b, xi (nI), z (nF), a (na)]
    cw = slice(0, k)
    cb = k
    cxi = slice(k + 1, k + 1 + nI)
    cz = slice(cxi.stop, cxi.stop + nF)
    ca = slice(cz.stop, cz.stop + na)
    n = ca.stop
    blocks: list[sp.csr_array] = []
    lo: list[np.ndarray] = []
    up: list[np.ndarray] = []

    def add(mat: sp.csr_array, lower: np.ndarray, upper: np.ndarray) -> None:
        blocks.append(sp.csr_array(mat))
        lo.append(lower)
        up.append(upper)

    # margins on I: y_i (phi_i.w + b) + xi_i >= 1
    yI = y[I]
    mI = sp.hstack(
        [
            sp.csr_array(yI[:, None] * Phi_rows[I]),
            sp.csr_array(yI[:, None]),
            sp.eye_array(nI, format="csr"),
            sp.csr_array((nI, nF + na)),
        ],
        format="csr",
    )
    add(mI, np.ones(nI), np.full(nI, np.inf))
    if problem.on_training:
        # xi_i + M z_i <= M   (F = I in the same order)
        m = sp.hstack(
            [
                sp.csr_array((nI, k + 1)),
                sp.eye_array(nI, format="csr"),
                M1 * sp.eye_array(nI, format="csr"),
                sp.csr_array((nI, na)),
            ],
            format="csr",
        )
        add(m, np.full(nI, -np.inf), np.full(nI, M1))
    else:
        yJ = y[Fr]
        mJ = sp.hstack(
            [
                sp.csr_array(yJ[:, None] * Phi_rows[Fr]),
                sp.csr_array(yJ[:, None]),
                sp.csr_array((nF, nI)),
                -M1 * sp.eye_array(nF, format="csr"),
                sp.csr_array((nF, na)),
            ],
            format="csr",
        )
        add(mJ, np.full(nF, 1.0 - M1), np.full(nF, np.inf))
    # floors
    pos_in_F = {int(r): t for t, r in enumerate(Fr)}
    w_rows = problem.weights
    for fl in floors:
        mem = problem.floor_members(fl)
        row = np.zeros(n)
        row[cz.start + np.array([pos_in_F[int(r)] for r in mem])] = w_rows[mem]
        add(sp.csr_array(row[None, :]), np.array([fl.required]), np.array([np.inf]))
    col_lo = np.concatenate([np.full(k + 1, -np.inf), np.zeros(nI + nF + na)])
    col_up = np.concatenate(
        [np.full(k + 1 + nI, np.inf), np.ones(nF), np.full(na, np.inf)]
    )
    if form == "dual":
        assert L is not None
        yR = y[R]
        # v - L^T diag(y) a = 0
        link = sp.hstack(
            [
                sp.eye_array(k, format="csr"),
                sp.csr_array((k, 1 + nI + nF)),
                sp.csr_array(-(L * yR[:, None]).T),
            ],
            format="csr",
        )
        add(link, np.zeros(k), np.zeros(k))
        eq = np.zeros(n)
        eq[ca] = yR
        add(sp.csr_array(eq[None, :]), np.zeros(1), np.zeros(1))
        pos_in_R = {int(r): t for t, r in enumerate(R)}
        aI = ca.start + np.array([pos_in_R[int(r)] for r in I], dtype=np.int64)
        if problem.on_training:
            # a_i - M2 z_i <= c_i / 2
            rows = np.arange(nI)
            mat = sp.csr_array(
                (
                    np.concatenate([np.ones(nI), -M2 * np.ones(nI)]),
                    (
                        np.concatenate([rows, rows]),
                        np.concatenate([aI, cz.start + rows]),
                    ),
                ),
                shape=(nI, n),
            )
            add(mat, np.full(nI, -np.inf), cost[I] / 2.0)
        else:
            col_up[aI] = cost[I] / 2.0
            aJ = ca.start + np.array([pos_in_R[int(r)] for r in Fr], dtype=np.int64)
            rows = np.arange(nF)
            mat = sp.csr_array(
                (
                    np.concatenate([np.ones(nF), -M2 * np.ones(nF)]),
                    (
                        np.concatenate([rows, rows]),
                        np.concatenate([aJ, cz.start + rows]),
                    ),
                ),
                shape=(nF, n),
            )
            add(mat, np.full(nF, -np.inf), np.zeros(nF))
    c = np.zeros(n)
    c[cxi] = cost[I]
    Qd = np.zeros(n)
    Qd[cw] = 2.0  # ||w||^2 = 0.5 w^T (2 I) w
    integ = np.zeros(n, dtype=bool)
    integ[cz] = True
    model = MipModel(
        c=c,
        A=sp.vstack(blocks, format="csr"),
        row_lower=np.concatenate(lo),
        row_upper=np.concatenate(up),
        col_lower=col_lo,
        col_upper=col_up,
        integrality=integ,
        Q=sp.diags_array(Qd, format="csr"),
    )
    factor = np.zeros((n, k))
    factor[np.arange(k), np.arange(k)] = math.sqrt(2.0)
    layout = CsvmLayout(
        form, cw, cb, cxi, cz, ca if form == "dual" else None, I, Fr, R, L, n
    )
    return model, layout, factor


@dataclass(frozen=True)
class CsvmStart:
    """MIP start from the sliding-b warm start.

    Parameters
    ----------
    x : ndarray of shape (n_cols,) or None
        Start vector (None if no intercept meets the floors with margin 1).
    s1 : S1Fit
        The S1 solution it came from.
    intercept : float or None
        Slid intercept (margin 1).
    """

    x: np.ndarray | None
    s1: S1Fit
    intercept: float | None


def fit_s1(
    problem: CsvmProblem,
    tol: float = 1e-8,
    exclude: np.ndarray | None = None,
    *,
    solver: str = "batched",
) -> S1Fit:
    """Fit S1 (SPEC S1, S5 warm start).

    One weighted SVM on the rows with a positive bound
    :func:`~torchsvm.mip.warm_start.s1_bounds` (``u_i = w_i C_{y_i} / 2`` on ``I u J``;
    ``I`` for S5c), solved by the batched solver
    :class:`~torchsvm.solvers.box_qp.BoxQpSolver` (``solver="batched"``) or by
    scikit-learn's libsvm (``solver="libsvm"``: :class:`sklearn.svm.SVC` with the same
    per-row bounds, KKT tolerance ``tol``; linear and RBF kernels). Rows in ``exclude``
    (indices) take no part (bound 0).
    """
    if solver not in ("batched", "libsvm"):
        raise ValueError(f"solver must be 'batched' or 'libsvm', got {solver!r}")
    u = s1_bounds(problem)
    if exclude is not None and len(exclude):
        u = u.copy()
        u[np.asarray(exclude, dtype=np.int64)] = 0.0
    keep = np.flatnonzero(u > 0)
    if keep.size == 0 or np.unique(problem.y[keep]).size < 2:
        return S1Fit(np.zeros(problem.X.shape[0]), 0.0)
    if solver == "libsvm":
        if problem.kernel not in ("linear", "rbf"):
            raise ValueError(
                f"solver='libsvm' fits the linear and RBF kernels, not {problem.kernel!r}"
            )
        from sklearn.svm import SVC

        scale = float(u[keep].max())
        svc = SVC(
            C=scale,
            kernel=problem.kernel,
            gamma=float(problem.gamma) if problem.kernel == "rbf" else "scale",
            tol=tol,
            cache_size=500,
        )
        svc.fit(problem.X[keep], problem.y[keep], sample_weight=u[keep] / scale)
        dual = np.zeros(problem.X.shape[0])
        # NOTE: classes_ = [-1, 1], so dual_coef_ is alpha * y, decision > 0 means +1.
        dual[keep[svc.support_]] = np.asarray(svc.dual_coef_).ravel()
        return S1Fit(dual, float(svc.intercept_[0]))
    prob = BatchedSvmProblem.from_bounds(
        problem.X[keep],
        problem.y[keep],
        u[keep][None, :],
        kernel=problem.kernel,
        gamma=float(problem.gamma) if problem.kernel != "linear" else 1.0,
    )
    sol = BoxQpSolver(SolverConfig(tol=tol))(prob)
    return S1Fit.from_solution(sol, problem.y[keep], rows=keep, n=problem.X.shape[0])


def _upweighted_bounds(problem: CsvmProblem, factors: tuple[float, ...]) -> np.ndarray:
    """S1 bounds with the floor rows' bounds scaled by each factor, shape (F, n).

    The bounds of the rows the floors count (e.g. ``J+`` for a TPR floor) are scaled by
    ``factor`` and capped at ``max(M2, u)`` (``M2`` bounds the anchor multipliers in
    the dual form); the other rows keep :func:`~torchsvm.mip.warm_start.s1_bounds`.
    """
    u = s1_bounds(problem)
    members = np.unique(
        np.concatenate([problem.floor_members(f) for f in problem.floors])
    )
    U = np.repeat(u[None, :], len(factors), axis=0)
    for r, f in enumerate(factors):
        U[r, members] = np.minimum(
            u[members] * f, np.maximum(problem.big_m_dual, u[members])
        )
    return U


def fit_s1_batch(problem: CsvmProblem, U: np.ndarray, tol: float = 1e-8) -> list[S1Fit]:
    """S1 fits for several bound vectors ``U`` (shape (P, n)) as one batch.

    Rows with a zero bound in a problem take no part in it; a problem left with one
    class is returned as the zero classifier.
    """
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    n = problem.X.shape[0]
    keep = np.flatnonzero(U.max(axis=0) > 0)
    out: list[S1Fit | None] = [None] * U.shape[0]
    ok = [
        r
        for r in range(U.shape[0])
        if np.unique(problem.y[keep][U[r, keep] > 0]).size == 2
    ]
    if ok:
        prob = BatchedSvmProblem.from_bounds(
            problem.X[keep],
            problem.y[keep],
            U[np.ix_(ok, keep)],
            kernel=problem.kernel,
            gamma=float(problem.gamma) if problem.kernel != "linear" else 1.0,
        )
        sol = BoxQpSolver(SolverConfig(tol=tol))(prob)
        for t, r in enumerate(ok):
            out[r] = S1Fit.from_solution(sol, problem.y[keep], rows=keep, n=n, index=t)
    return [S1Fit(np.zeros(n), 0.0) if f is None else f for f in out]


def csvm_start(
    problem: CsvmProblem,
    layout: CsvmLayout,
    s1: S1Fit | None = None,
    *,
    deadline: float | None = None,
    max_refits: int = 4,
    s1_solver: str = "batched",
) -> CsvmStart:
    """Sliding-b MIP start (SPEC S5 warm start), see :mod:`torchsvm.mip.warm_start`.

    Dual form of S5: ``mu_j <= M2 z_j`` forbids a multiplier on an anchor the slid
    classifier leaves on the wrong side of its margin. Each candidate S1 fit is made
    feasible by zeroing such multipliers, restoring ``sum a y = 0`` by scaling down the
    heavier class's multipliers (which keeps every box) and sliding again, until no
    anchor with ``z_j = 0`` carries a multiplier. Where that zeroing strips many
    multipliers the start degenerates (``b`` slid far, nearly every row one class), so
    S1 is also refitted without the offending anchors (at most ``max_refits`` times),
    and once on ``I`` alone (no anchor multiplier at all, always representable); S1
    is also fitted with the floor rows' bounds scaled up (:func:`fit_s1_batch`, one
    batch), so that less sliding is needed. The candidate with the lowest MIQP
    objective is returned.

    ``deadline`` (a :func:`time.perf_counter` value) stops the refits early: no refit
    batch starts that the previous batch's time predicts to end past it (the first
    batch, of the up-weighted fits, has no prediction); the first candidate is always
    built. ``s1_solver`` is :func:`fit_s1`'s ``solver`` when ``s1``
    is not given (the refits are batched fits).
    """
    s1 = fit_s1(problem, solver=s1_solver) if s1 is None else s1
    if layout.form == "dual" and not problem.on_training:
        return _dual_start_refit(problem, layout, s1, deadline, max_refits)
    # NOTE: the primal form and S5c take S1's slid start alone; the up-weighted
    # candidates cost a batched fit (2.2 s of 6 s at linear n = 100) and the fixed-z
    # QPs there are cheap, so they did not pay.
    return _slid_start(problem, layout, s1)


_FACTORS = (4.0, 16.0, 64.0)


def _slid_start(problem: CsvmProblem, layout: CsvmLayout, s1: S1Fit) -> CsvmStart:
    """Start from one S1 fit with the intercept slid (margin 1); primal form or S5c."""
    I, Fr = layout.train_idx, layout.floor_idx
    gF = scores_without_intercept(problem, s1, Fr)
    slide = slide_intercept(problem, gF, s1.intercept, margin=1.0)
    if slide.intercept is None:
        return CsvmStart(None, s1, None)
    b = slide.intercept
    x = np.zeros(layout.n_cols)
    sv = np.flatnonzero(s1.dual_coef)
    if layout.form == "primal":
        x[layout.w] = problem.X[sv].T @ s1.dual_coef[sv]
    else:
        assert layout.L is not None and layout.a is not None
        dR = s1.dual_coef[layout.dual_idx]
        x[layout.a] = np.abs(dR)
        x[layout.w] = layout.L.T @ dR
    x[layout.b] = b
    gI = scores_without_intercept(problem, s1, I)
    x[layout.xi] = np.maximum(0.0, 1.0 - problem.y[I] * (gI + b))
    x[layout.z] = slide.satisfied.astype(float)
    if problem.on_training:
        x[layout.xi] = np.where(slide.satisfied, 0.0, x[layout.xi])
    return CsvmStart(x, s1, b)


def start_objective(problem: CsvmProblem, layout: CsvmLayout, x: np.ndarray) -> float:
    """MIQP objective ``||w||^2 + sum_I c_i xi_i`` of a start vector (thesis scale)."""
    w = x[layout.w]
    return float(w @ w + problem.cost()[layout.train_idx] @ x[layout.xi])


def _bad_anchors(problem: CsvmProblem, layout: CsvmLayout, fit: S1Fit) -> np.ndarray:
    """Floor rows that carry a multiplier but miss the margin once ``b`` is slid."""
    Fr = layout.floor_idx
    gF = scores_without_intercept(problem, fit, Fr)
    slide = slide_intercept(problem, gF, fit.intercept, margin=1.0)
    carrying = np.abs(fit.dual_coef[Fr]) > 0
    return carrying if slide.intercept is None else ~slide.satisfied & carrying


def _dual_start_refit(
    problem: CsvmProblem,
    layout: CsvmLayout,
    s1: S1Fit,
    deadline: float | None,
    max_refits: int,
) -> CsvmStart:
    """Best feasible S5 dual-form start over batched S1 refits (see :func:`csvm_start`).

    Candidates: S1 itself and S1 with the floor rows up-weighted (each factor of
    ``_FACTORS``). Each round refits, in one batch, every candidate without the anchors
    its last fit left short of the margin while carrying a multiplier; in the last
    round the candidates still unsettled drop every anchor (S1 on ``I`` alone).
    """
    Fr = layout.floor_idx
    best, best_obj = CsvmStart(None, s1, None), math.inf

    def consider(fit: S1Fit) -> None:
        nonlocal best, best_obj
        cand = _dual_start(problem, layout, fit)
        if cand.x is not None:
            obj = start_objective(problem, layout, cand.x)
            if obj < best_obj:
                best, best_obj = cand, obj

    t_batch = 0.0  # seconds of the last batch: predicts the next one

    def late() -> bool:
        return deadline is not None and time.perf_counter() + t_batch >= deadline

    consider(s1)
    if late():
        return best
    U0 = np.vstack([s1_bounds(problem)[None, :], _upweighted_bounds(problem, _FACTORS)])
    t = time.perf_counter()
    fits = [s1, *fit_s1_batch(problem, U0[1:])]
    t_batch = time.perf_counter() - t
    for fit in fits[1:]:
        consider(fit)
    excl = np.zeros(U0.shape, dtype=bool)
    for rnd in range(max_refits + 1):
        if late():
            break
        idx = []
        for r, fit in enumerate(fits):
            bad = _bad_anchors(problem, layout, fit)
            if bad.any() and not excl[r, Fr].all():
                excl[r, Fr[bad]] = True
                if rnd == max_refits:
                    excl[r, Fr] = True  # last resort: S1 on I alone
                idx.append(r)
        if not idx:
            break
        t = time.perf_counter()
        new = fit_s1_batch(problem, np.where(excl[idx], 0.0, U0[idx]))
        t_batch = time.perf_counter() - t
        for r, fit in zip(idx, new, strict=True):
            fits[r] = fit
            consider(fit)
    logger.debug("CSVM dual start: objective %.6g", best_obj)
    return best


def _dual_start(problem: CsvmProblem, layout: CsvmLayout, s1: S1Fit) -> CsvmStart:
    """Feasible start of the S5 dual form from one S1 fit (zeroing, see :func:`csvm_start`)."""
    assert layout.L is not None and layout.a is not None
    R, I, Fr, L = layout.dual_idx, layout.train_idx, layout.floor_idx, layout.L
    yR = problem.y[R]
    a = np.abs(s1.dual_coef[R])
    posR = {int(r): t for t, r in enumerate(R)}
    iI = np.array([posR[int(r)] for r in I], dtype=np.int64)
    iF = np.array([posR[int(r)] for r in Fr], dtype=np.int64)
    b0 = s1.intercept
    for _ in range(len(Fr) + 1):
        v = L.T @ (yR * a)
        g = L @ v  # scores without intercept on R, as the model computes them
        slide = slide_intercept(problem, g[iF], b0, margin=1.0)
        if slide.intercept is None:
            return CsvmStart(None, s1, None)
        bad = iF[~slide.satisfied & (a[iF] > 0)]
        if bad.size == 0:
            break
        a[bad] = 0.0
        imbalance = float(yR @ a)
        cls = yR > 0 if imbalance > 0 else yR < 0
        heavy = float(a[cls].sum())
        if heavy > 0:
            a[cls] *= max(0.0, (heavy - abs(imbalance)) / heavy)
    assert slide.intercept is not None
    b = float(slide.intercept)
    x = np.zeros(layout.n_cols)
    x[layout.a] = a
    x[layout.w] = v
    x[layout.b] = b
    x[layout.xi] = np.maximum(0.0, 1.0 - problem.y[I] * (g[iI] + b))
    x[layout.z] = slide.satisfied.astype(float)
    return CsvmStart(x, s1, b)


def solution_start(
    problem: CsvmProblem, layout: CsvmLayout, sol: CsvmSolution, tol: float = 1e-7
) -> np.ndarray | None:
    """Model vector of ``problem`` from a classifier solved on the same rows.

    Takes ``w`` (``sol.coef``, primal form) or the multipliers (``sol.dual_coef`` on
    ``sol.support_X``, dual form; every support row must be a row of ``R``) and
    ``b``, and sets ``xi`` from the margins and ``z_j = 1`` where the margin is at
    least ``1 - tol`` (S5c: ``xi_j = 0`` there). The result may be infeasible for
    ``problem`` (e.g. it misses a higher floor); the outer approximation checks it
    (:meth:`~torchsvm.mip.outer_approx.OuterApproximation.offer`). Returns None when
    ``sol`` cannot be written in this layout (a dual form whose support rows are not
    rows of ``R``, or a primal form without ``coef``).
    """
    I, Fr, y = layout.train_idx, layout.floor_idx, problem.y
    x = np.zeros(layout.n_cols)
    if layout.form == "primal":
        if sol.coef is None or np.shape(sol.coef) != (problem.X.shape[1],):
            return None
        w = np.asarray(sol.coef, dtype=np.float64)
        x[layout.w] = w
        g = problem.X @ w
    else:
        assert layout.L is not None and layout.a is not None
        if sol.dual_coef is None or sol.support_X is None:
            return None
        R = layout.dual_idx
        index = {
            np.ascontiguousarray(problem.X[r], dtype=np.float64).tobytes(): t
            for t, r in enumerate(R)
        }
        aR = np.zeros(R.size)
        for coef, row in zip(sol.dual_coef, sol.support_X, strict=True):
            t = index.get(np.ascontiguousarray(row, dtype=np.float64).tobytes())
            if t is None:
                return None
            aR[t] += float(coef) * y[R[t]]
        if np.any(aR < -1e-12):
            return None
        aR = np.maximum(aR, 0.0)
        v = layout.L.T @ (y[R] * aR)
        x[layout.a] = aR
        x[layout.w] = v
        g = np.zeros(problem.X.shape[0])
        g[R] = layout.L @ v
    b = float(sol.intercept)
    x[layout.b] = b
    marg = y * (g + b)
    x[layout.xi] = np.maximum(0.0, 1.0 - marg[I])
    z = marg[Fr] >= 1.0 - tol
    x[layout.z] = z.astype(float)
    if problem.on_training:
        x[layout.xi] = np.where(z, 0.0, x[layout.xi])
    return x


def incumbent_assignment(
    problem: CsvmProblem, layout: CsvmLayout, x: np.ndarray
) -> np.ndarray:
    """``x`` (a :func:`solution_start` vector) with ``z`` on the rows of no floor at 0.

    :func:`solution_start` sets ``z_j = 1`` on every row of ``F`` whose margin is at
    least ``1 - tol``. A row in no floor gains nothing from ``z_j = 1``, which only
    adds its margin constraint (S5) or drops its slack (S5c; S5c's ``F = I`` holds
    the negatives, which no TPR floor counts). With those ``z`` at 0 the floors keep
    the same counts, so the assignment stays feasible when ``x`` is, and its
    fixed-binary QP is a relaxation of ``x``'s: the better point to polish.
    """
    out = np.asarray(x, dtype=np.float64).copy()
    member = np.zeros(problem.X.shape[0], dtype=bool)
    for fl in problem.floors:
        member[problem.floor_members(fl)] = True
    z = out[layout.z]
    z[~member[layout.floor_idx]] = 0.0
    out[layout.z] = z
    return out


def repaired_assignment(
    problem: CsvmProblem, layout: CsvmLayout, x: np.ndarray
) -> np.ndarray:
    """``x`` (a :func:`solution_start` vector) with ``z`` meeting every floor.

    Each floor takes its members in decreasing margin ``y_j f(x_j)`` under ``x``'s
    ``(w, b)`` until its weighted count is met (:func:`floor_rounding` on the
    margins), every other ``z`` 0: the members that ``x`` comes closest to meeting.
    Only an assignment to polish (its fixed-binary QP decides its value; primal
    form).
    """
    out = np.asarray(x, dtype=np.float64).copy()
    if layout.form != "primal":
        raise ValueError("repaired_assignment needs the primal form")
    F = layout.floor_idx
    marg = problem.y[F] * (problem.X[F] @ out[layout.w] + out[layout.b])
    probe = out.copy()
    probe[layout.z] = marg
    out[layout.z] = floor_rounding(problem, layout)(probe)[0]
    return out


def floor_rounding(
    problem: CsvmProblem, layout: CsvmLayout
) -> Callable[[np.ndarray], list[np.ndarray]]:
    """Rounding heuristic for the outer approximation's relaxed point.

    From the continuous relaxation's ``z`` (big-M: every ``z_j`` fractional on German
    credit), take for each floor its members in decreasing relaxed ``z`` until the
    floor's weighted count is met, and set every other ``z`` to 0. ``z_j = 1`` adds a
    margin constraint (S5) or removes a slack (S5c), so the fewest ones that meet the
    floors leave the QP the most room. The assignment is only a candidate: the outer
    approximation polishes it by its own QP (an infeasible QP gives no incumbent) and
    keeps it only if it beats the incumbent. German fold 3 (900 rows, RBF; every
    relaxed ``z`` fractional): incumbent 704.875 after 300 s with it, 802.798 without
    (``scripts/bench_mip.py --only overrun --overrun-rounding on off``,
    docs/benchmarks.md, "relaxation rounding for the kernel-form CSVM").
    """
    pos_in_F = {int(r): t for t, r in enumerate(layout.floor_idx)}
    w = problem.weights
    plan = []
    for fl in problem.floors:
        mem = problem.floor_members(fl)
        plan.append(
            (np.array([pos_in_F[int(r)] for r in mem], dtype=np.int64), w[mem], fl)
        )

    def rounding(x: np.ndarray) -> list[np.ndarray]:
        zr = np.asarray(x, dtype=np.float64)[layout.z]
        z = np.zeros(zr.size)
        for pos, wts, fl in plan:
            order = np.argsort(-zr[pos], kind="stable")
            have = float(np.dot(wts, z[pos]))
            for t in order:
                if have >= fl.required - 1e-9:
                    break
                if z[pos[t]] == 0.0:
                    z[pos[t]] = 1.0
                    have += float(wts[t])
        return [z]

    return rounding


def floor_swaps(
    problem: CsvmProblem,
    layout: CsvmLayout,
    n_add: int = 2,
    n_drop: int = 8,
    bind_tol: float = 1e-4,
) -> Callable[[np.ndarray], list[np.ndarray]]:
    """Neighbourhood of a feasible point for the outer approximation's local search.

    At the point ``x`` (model columns), every floor member with margin
    ``y_j f(x_j) >= 1`` gets ``z_j = 1`` (``x`` stays feasible, so that assignment's
    QP is at most ``x``'s objective), every other ``z`` is 0. The moves: release one
    of the ``n_drop`` members whose margin constraint binds (``y_j f(x_j) <= 1 +
    bind_tol``) where every floor still holds without it; otherwise release it and
    take in one of the ``n_add`` released members of its floors with the largest
    margin. Only candidates: each is polished by its own QP.
    """
    F = layout.floor_idx
    y = problem.y
    if layout.form == "primal":
        rows = problem.X[F]
    else:
        assert layout.L is not None
        pos_in_R = {int(r): t for t, r in enumerate(layout.dual_idx)}
        rows = layout.L[np.array([pos_in_R[int(r)] for r in F], dtype=np.int64)]
    pos_in_F = {int(r): t for t, r in enumerate(F)}
    w = problem.weights
    plan = []
    member = np.zeros((len(problem.floors), F.size), dtype=bool)
    wF = np.zeros(F.size)
    for l, fl in enumerate(problem.floors):
        pos = np.array(
            [pos_in_F[int(r)] for r in problem.floor_members(fl)], dtype=np.int64
        )
        member[l, pos] = True
        wF[pos] = w[F[pos]]
        plan.append(fl.required - 1e-9)
    required = np.array(plan)
    in_any = member.any(axis=0)

    def swaps(x: np.ndarray) -> list[np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        marg = y[F] * (rows @ x[layout.w] + x[layout.b])
        z = (in_any & (marg >= 1.0 - 1e-7)).astype(np.float64)
        have = member @ (wF * z)
        on = np.flatnonzero(z > 0)
        bind = on[np.argsort(marg[on], kind="stable")[:n_drop]]
        bind = bind[marg[bind] <= 1.0 + bind_tol]
        out: list[np.ndarray] = []
        for j in bind:
            left = have - member[:, j] * wF[j]
            if np.all(left >= required):
                zn = z.copy()
                zn[j] = 0.0
                out.append(zn)
                continue
            short = member[:, j] & (left < required)
            cand = np.flatnonzero((z == 0) & member[short].all(axis=0))
            for k in cand[np.argsort(-marg[cand], kind="stable")[:n_add]]:
                if np.all(left + member[:, k] * wF[k] >= required):
                    zn = z.copy()
                    zn[j], zn[k] = 0.0, 1.0
                    out.append(zn)
        return out

    return swaps


#: Relative safety on the LP bounds of :func:`anchor_tightening` (HiGHS's
#: feasibility and optimality tolerances are 1e-6 / 1e-7).
_TIGHTEN_SAFETY = 1e-5

#: Most QPs per floor member in :func:`_dual_margin_multipliers`.
_DUAL_BOUND_ROUNDS = 6

#: HiGHS's ``simplex_strategy`` for the primal simplex.
_PRIMAL_SIMPLEX = 4


def _nearest_neighbour_order(D: np.ndarray) -> np.ndarray:
    """Order of the rows of ``D`` by a greedy walk to the closest direction (cosine),
    from the first row: consecutive LPs ``min D_t u`` then re-solve from close bases."""
    n = D.shape[0]
    if n <= 2:
        return np.arange(n)
    U = D / np.maximum(np.linalg.norm(D, axis=1, keepdims=True), 1e-300)
    S = U @ U.T
    left = np.ones(n, dtype=bool)
    order = np.empty(n, dtype=np.int64)
    cur = 0
    for t in range(n):
        order[t] = cur
        left[cur] = False
        if t + 1 < n:
            cur = int(np.flatnonzero(left)[np.argmax(S[cur, left])])
    return order


def anchor_tightening(
    problem: CsvmProblem,
    layout: CsvmLayout,
    refresh: float = 0.0,
    member_lps: bool = True,
) -> Callable[[MipModel, float, float], MipModel]:
    """Big-M of the anchor rows bounded under the cutoff (S5, primal form).

    For the outer approximation's ``tighten`` (:class:`~torchsvm.mip.outer_approx.
    OuterApproximation`). Every master point with objective ``<= U`` (the cutoff)
    lies in the master's LP relaxation without its anchor and floor rows, with the
    objective row ``c x + sum_k t_k <= U``; over that polytope, one LP per anchor
    ``j`` gives ``m_j <= min y_j (w.x_j + b)``:

    - a floor member's row ``y_j f(x_j) >= 1 - M1 (1 - z_j)`` becomes
      ``y_j f(x_j) >= 1 - M_j (1 - z_j)`` with ``M_j = 1 - m_j`` (``m_j`` lowered by
      :data:`_TIGHTEN_SAFETY` ``(1 + |m_j|)`` for the LP's tolerances) where that is
      below ``M1``; at ``M_j <= 0`` its ``z_j = 1``
      is fixed (always met, and it only helps the floors);
    - an anchor in no floor (its ``z_j`` only loosens its own row, so ``z_j = 0``
      is no worse) whose ``m_j`` over the box of ``(w, b)`` (12 LPs) is at least
      ``1 - M1`` loses its row, and its ``z_j`` is fixed at 0;
    - ``(w, b)`` is then bounded over the tightened master's LP relaxation (all its
      rows, objective ``<= U``; 12 more LPs, same safety), and these bounds become
      the ``w`` and ``b`` columns' bounds. With them HiGHS separates cuts on the
      master (none with ``w``, ``b`` free): on linear n = 400 of
      scripts/bench_mip.py the first master's tree went from 808 to 248 nodes and
      about 0.62 to 0.47 s. The looser box of the LP without anchor and floor rows
      (b in [-2.14, 1.38] instead of [-0.83, 1.38]) did not speed it up (scratch,
      medians of 4 at load ~7; docs/benchmarks.md, "Linear CSVM: bounded w and b").
    - ``member_lps=False``: no LP per floor member and no second box. Every anchor's
      ``m_j`` (floor members too) is its minimum over the first box of ``(w, b)``
      (``2 (d + 1)`` LPs in all), and that box bounds the ``w`` and ``b`` columns.
      It is a superset of the polytope, so the bounds stay valid, only looser
      (:data:`S5_ANCHOR_LPS` says where this is used and why).

    The LPs re-solve by the primal simplex: a change of costs keeps the last basis
    primal feasible (0.24 -> 0.15 s for the 86 LPs of that instance, same bounds).

    S5c (``on_training``, rows ``xi_i + M1 z_i <= M1`` in place of anchor rows): the
    same LPs give ``m_i``, and every master point with objective ``<= U`` has one
    with ``xi_i = max(0, 1 - y_i f(x_i)) <= max(0, 1 - m_i) =: M_i`` (lower slacks:
    no higher objective, every row still met), so ``xi_i <= M_i`` bounds each
    slack, a floor member's row becomes ``xi_i + M_i z_i <= M_i`` (``z_i = 1``
    fixed at ``M_i = 0``) and a row in no floor gets ``z_i = 0`` (its ``z_i`` only
    caps its own slack). Members' LPs follow a greedy nearest-direction order
    (Ctrl2's S5c has 13-30 features, where the angle of the first two says little).

    The returned master's points with objective ``<= U`` are points of the given
    one, and every point of the given one with objective ``<= U`` has a point with
    the same objective in it (``z_j`` of the second kind set to 0), as ``tighten``
    asks. Bounds are computed
    again only when the cutoff has dropped (more cuts only shrink the polytope, so
    earlier bounds stay valid), by more than ``refresh * max(1, |U_last|)`` below the
    cutoff ``U_last`` they were computed under (bounds under a higher cutoff stay
    valid under a lower one; 0: at every drop). Why: with ``M1 = 100`` the master's LP relaxation
    lets every anchor's ``z_j`` sit near 1 whatever its margin. On linear n = 1000
    of scripts/bench_mip.py (186 floor members, 314 negative anchors in no floor)
    the solve took a median 43.8 / 41.7 s with it against 63.2 / 65.9 s without,
    SCIP 112.0 / 96.2 s, in two runs at load ~7-9 (docs/benchmarks.md, "MIP
    engine: linear CSVM n = 1000 under half of SCIP's time").
    """
    if layout.form != "primal":
        raise ValueError("anchor_tightening needs the primal form (linear kernel)")
    s5c = bool(problem.on_training)
    I, F, y, X = layout.train_idx, layout.floor_idx, problem.y, problem.X
    nI, nF = I.size, F.size
    M1 = float(problem.big_m)
    # the anchor rows (S5) or the rows xi_i + M1 z_i <= M1 (S5c, F = I), in F's order
    rows = nI + np.arange(nF)
    zcol = layout.z.start + np.arange(nF)
    xicol = layout.xi.start + np.arange(nI)
    ucols = np.array([*range(layout.w.start, layout.w.stop), layout.b], dtype=np.int64)
    D = y[F][:, None] * np.hstack([X[F], np.ones((nF, 1))])  # margins: D @ (w, b)
    pos_in_F = {int(r): t for t, r in enumerate(F)}
    in_floor = np.zeros(nF, dtype=bool)
    for fl in problem.floors:
        in_floor[[pos_in_F[int(r)] for r in problem.floor_members(fl)]] = True
    # floor members in order of their direction's angle: neighbouring LPs re-solve
    # from close bases
    fm = np.flatnonzero(in_floor)
    if s5c:
        fm = fm[_nearest_neighbour_order(D[fm])]
    else:
        fm = fm[np.argsort(np.arctan2(D[fm, 1], D[fm, 0]), kind="stable")]
    state: dict[str, Any] = {"cutoff": math.inf, "m": None, "box": None}

    def box_of(plp: PersistentLp, t_end: float) -> np.ndarray:
        """Bounds ``(2, d + 1)`` on ``(w, b)`` over the LP (+-inf where not solved)."""
        box = np.full((2, ucols.size), [[-np.inf], [np.inf]])
        for side, sgn in ((0, 1.0), (1, -1.0)):
            for i in range(ucols.size):
                left = t_end - time.perf_counter()
                if left <= 0:
                    break
                c = np.zeros(ucols.size)
                c[i] = sgn
                plp.change_costs(ucols, c)
                res = plp.solve(left)
                if res.status is SolveStatus.optimal:
                    v = sgn * res.objective
                    box[side, i] = v - _TIGHTEN_SAFETY * (1.0 + abs(v)) * sgn
        return box

    def lp_of(lp: MipModel, t_end: float) -> PersistentLp:
        return PersistentLp(
            lp,
            MipConfig(time_limit=max(t_end - time.perf_counter(), 1e-3)),
            options={"simplex_strategy": _PRIMAL_SIMPLEX},
        )

    def bounds(master: MipModel, cutoff: float, t_end: float) -> None:
        # rows: the model's (I, anchors, floors), then r = L^T x_S and the cuts
        keep = np.ones(master.n_rows, dtype=bool)
        keep[nI : nI + nF + len(problem.floors)] = False
        plp = lp_of(lp_under_cutoff(master, cutoff, keep), t_end)
        m = np.full(nF, -np.inf)
        box = box_of(plp, t_end)
        lo_b = np.where(D > 0, box[0], box[1])
        with np.errstate(invalid="ignore"):
            m_box = np.where(D != 0, D * lo_b, 0.0).sum(axis=1)
        m[~in_floor] = m_box[~in_floor]
        if not member_lps:
            m[in_floor] = m_box[in_floor]
        for t in fm if member_lps else ():
            left = t_end - time.perf_counter()
            if left <= 0:
                break
            plp.change_costs(ucols, D[t])
            res = plp.solve(left)
            if res.status is SolveStatus.optimal:
                m[t] = res.objective - _TIGHTEN_SAFETY * (1.0 + abs(res.objective))
        state.update(cutoff=cutoff, m=m, box=box)

    def tighten(master: MipModel, cutoff: float, time_limit: float) -> MipModel:
        t_end = time.perf_counter() + time_limit
        last = state["cutoff"]
        drop = refresh * max(1.0, abs(last)) if math.isfinite(last) else 0.0
        fresh = cutoff < last - drop and time_limit > 0
        if fresh:
            bounds(master, cutoff, t_end)
        m = state["m"]
        if m is None:
            return master
        A = sp.csr_array(master.A).tolil()
        lo, up = master.row_lower.copy(), master.row_upper.copy()
        col_lo, col_up = master.col_lower.copy(), master.col_upper.copy()
        keep = np.ones(master.n_rows, dtype=bool)
        if s5c:
            # xi_i <= max(0, 1 - m_i) for every row; a floor member's row becomes
            # xi_i + M_i z_i <= M_i; rows in no floor get z_i = 0
            cap = np.maximum(1.0 - m, 0.0)
            ok = np.isfinite(cap)
            col_up[xicol[ok]] = np.minimum(col_up[xicol[ok]], cap[ok])
            for t in np.flatnonzero(in_floor & (cap < M1)):
                A[rows[t], zcol[t]] = cap[t]
                up[rows[t]] = cap[t]
                if cap[t] == 0.0:
                    col_lo[zcol[t]] = 1.0
            col_lo[zcol[~in_floor]] = 0.0
            col_up[zcol[~in_floor]] = 0.0
            gone = np.flatnonzero(~in_floor)
        else:
            for t in np.flatnonzero(in_floor & (1.0 - m < M1)):
                Mj = max(1.0 - m[t], 0.0)
                A[rows[t], zcol[t]] = -Mj
                lo[rows[t]] = 1.0 - Mj
                if Mj == 0.0:
                    col_lo[zcol[t]] = 1.0
            gone = np.flatnonzero(~in_floor & (m >= 1.0 - M1))
            keep[rows[gone]] = False
            col_up[zcol[gone]] = 0.0
            col_lo[zcol[gone]] = 0.0
        out = replace(
            master,
            A=sp.csr_array(A)[keep],
            row_lower=lo[keep],
            row_upper=up[keep],
            col_lower=col_lo,
            col_upper=col_up,
        )
        if member_lps and fresh and time.perf_counter() < t_end:
            # (w, b) over the tightened master's whole LP relaxation (anchor and
            # floor rows too): a subset of the box that bounded the M_j
            box = box_of(lp_of(lp_under_cutoff(out, cutoff), t_end), t_end)
            state["box"] = np.stack(
                [
                    np.maximum(state["box"][0], box[0]),
                    np.minimum(state["box"][1], box[1]),
                ]
            )
        box = state["box"]
        col_lo[ucols] = np.maximum(col_lo[ucols], box[0])
        col_up[ucols] = np.minimum(col_up[ucols], box[1])
        logger.debug(
            "anchor rows under cutoff %.8g: median M_j %.3g over %d floor members, "
            "%d rows dropped; b in [%.4g, %.4g]",
            cutoff,
            float(np.median(np.minimum(1.0 - m[in_floor], M1))) if fm.size else M1,
            fm.size,
            gone.size,
            box[0, -1],
            box[1, -1],
        )
        return replace(out, col_lower=col_lo, col_upper=col_up)

    return tighten


def _norm_bound(D: float, S: float, U: float) -> float:
    """``max_{0 <= s <= sqrt(U)} D s + (U - s^2) / S`` (``D >= 0``, ``S > 0``, ``U >= 0``)."""
    root = math.sqrt(max(U, 0.0))
    s0 = 0.5 * D * S
    if s0 >= root:
        return D * root
    return D * s0 + (U - s0 * s0) / S


def _dual_margin_bound(
    beta: np.ndarray,
    A: np.ndarray,
    a: np.ndarray,
    yj: float,
    y: np.ndarray,
    c: np.ndarray,
    U: float,
    b_abs: float,
) -> float:
    """Lower bound on ``y_j f(x_j)`` from multipliers ``beta >= 0`` (weak duality).

    ``A`` (k, |I|) has columns ``y_i L_i``, ``a = y_j L_j``; the bound is the
    Lagrangian dual function of :func:`kernel_anchor_bounds` at ``(lambda, beta)``
    with ``lambda = max(||w|| / (2 sqrt(U)), max_i beta_i / c_i)``, ``w = A beta - a``
    (the best ``lambda`` for this ``beta`` within ``beta <= lambda c``), less
    ``|y_j - y . beta| b_abs`` for the rounding left in the ``b`` stationarity.
    """
    w = A @ beta - a
    pos = c > 0
    if np.any(beta[~pos] > 0):
        return -math.inf
    lam = max(
        float(np.linalg.norm(w)) / (2.0 * math.sqrt(U)) if U > 0 else 0.0,
        float(np.max(beta[pos] / c[pos])) if pos.any() else 0.0,
        1e-300,
    )
    ww = float(w @ w)
    return (
        float(beta.sum())
        - lam * U
        - ww / (4.0 * lam)
        - abs(yj - float(y @ beta)) * b_abs
    )


def _dual_margin_multipliers(
    A: np.ndarray,
    G: np.ndarray,
    a: np.ndarray,
    yj: float,
    y: np.ndarray,
    c: np.ndarray,
    U: float,
    t_end: float,
    lam0: float,
    rounds: int = _DUAL_BOUND_ROUNDS,
) -> np.ndarray | None:
    """Multipliers ``beta`` for :func:`_dual_margin_bound` by a few QPs.

    For fixed ``lambda`` the best ``beta`` maximises ``sum beta - ||A beta - a||^2 /
    (4 lambda)`` over ``y . beta = y_j``, ``0 <= beta <= lambda c`` (a convex QP, the
    HiGHS QP here); ``lambda`` then moves to the best for that ``beta``. Any
    ``beta >= 0`` gives a valid bound, so the QPs' accuracy only changes how tight
    it is. Returns the ``beta`` of the best bound (None if no QP solved).
    """
    n = y.size
    lam0 = max(lam0, 1e-8)
    best, best_beta, lam = -math.inf, None, lam0
    row = sp.csr_array(y[None, :])
    for _ in range(rounds):
        left = t_end - time.perf_counter()
        if left <= 0:
            break
        qp = MipModel(
            c=-(1.0 + (A.T @ a) / (2.0 * lam)),
            A=row,
            row_lower=np.array([yj]),
            row_upper=np.array([yj]),
            col_lower=np.zeros(n),
            col_upper=lam * c,
            Q=sp.csr_array(G / (2.0 * lam)),
        )
        res = solve_model(qp, MipConfig(time_limit=left))
        if res.x is None:
            break
        beta = np.clip(res.x, 0.0, lam * c)
        e = yj - float(y @ beta)
        fix = np.flatnonzero((y * np.sign(e) > 0) & (c > 0))
        if e != 0.0 and fix.size:
            beta[fix[0]] += abs(e)
        B = _dual_margin_bound(beta, A, a, yj, y, c, U, 0.0)
        if B > best:
            best, best_beta = B, beta
        w = A @ beta - a
        nxt = max(
            float(np.linalg.norm(w)) / (2.0 * math.sqrt(U)),
            float(np.max(beta / np.where(c > 0, c, np.inf))),
            lam0,
        )
        if abs(nxt - lam) <= 1e-3 * lam:
            break
        lam = nxt
    return best_beta


def kernel_anchor_bounds(
    problem: CsvmProblem, layout: CsvmLayout, dual_qps: bool = True
) -> Callable[[MipModel, float, float], MipModel]:
    """Big-M of the anchor rows bounded under the cutoff (S5, dual form).

    For the outer approximation's ``tighten``. Let ``U`` be the cutoff and ``x`` any
    point of the MIQP (not of a master) with objective ``||v||^2 + sum_I c_i xi_i <=
    U``. Write ``s = ||v||``, so ``s^2 <= U``, and take an anchor ``j`` with label
    ``y_j``. ``L_i`` is row ``i`` of the kernel factor, so that ``f(x_i) = L_i . v +
    b``; ``c_i >= 0`` are the slack costs.

    *Closed form.* Let ``T`` be the training rows of label ``y_j``, ``S = sum_T c_i``
    and ``Lbar = sum_T c_i L_i / S``. Every slack is ``>= 0``, so ``sum_T c_i xi_i <=
    U - s^2``, and ``xi_i >= 1 - y_j (L_i . v + b)`` on ``T``; summing with weights
    ``c_i``: ``y_j b >= 1 - y_j Lbar . v - (U - s^2) / S``. Hence, by Cauchy-Schwarz
    with ``D_j = ||L_j - Lbar||``::

        y_j f(x_j) = y_j L_j . v + y_j b >= 1 - D_j s - (U - s^2) / S >= 1 - M_j,

    ``M_j = max_{0 <= s <= sqrt(U)} D_j s + (U - s^2) / S`` (:func:`_norm_bound`).
    The same sums bound ``b``: ``b >= 1 - m(||Lbar_+||)`` from the positive rows,
    ``b <= m(||Lbar_-||) - 1`` from the negative ones (``m`` as ``M_j`` with ``D``
    the norm of the class mean). ``0.5 r_k^2 <= ||v||^2 <= U`` bounds each lifted
    ``r_k`` to ``+-sqrt(2 U)`` and ``t_k`` to ``U`` (``r = sqrt(2) v``,
    :func:`build_csvm_model`'s factor).

    *Weak duality* (``dual_qps=True``). ``min y_j f(x_j)`` over the relaxation
    ``{margins on I, xi >= 0, ||v||^2 + c . xi <= U}`` (anchor and floor rows
    dropped) has, for ``lambda > 0`` on the objective row and ``beta_i >= 0`` on the
    margins, the Lagrangian dual function (minimised over ``v``, ``b``, ``xi``)::

        sum_i beta_i - lambda U - ||sum_i beta_i y_i L_i - y_j L_j||^2 / (4 lambda)

    wherever ``sum_i beta_i y_i = y_j`` (stationarity in ``b``) and ``beta_i <=
    lambda c_i`` (in ``xi``); each such pair is a lower bound on ``y_j f(x_j)``
    (weak duality), so ``M_j = 1 -`` that bound is valid whatever the ``beta``. The
    class mean ``beta = c / S`` on ``T`` is the closed form's pair; a few QPs
    (:func:`_dual_margin_multipliers`) find better ones, once per drop of the
    cutoff, and their ``beta`` are re-evaluated at later cutoffs
    (:func:`_dual_margin_bound`, which also charges a rounding residual of the ``b``
    equation at the closed form's ``|b|`` bound). The smaller ``M_j`` of the two is
    used.

    A floor member's row ``y_j f(x_j) >= 1 - M1 (1 - z_j)`` takes ``M_j`` (raised by
    :data:`_TIGHTEN_SAFETY` ``(1 + |M_j|)`` for the solvers' tolerances) in place of
    ``M1`` where that is smaller: at ``z_j = 0`` the row still holds at every point
    below ``U``, at ``z_j = 1`` it is unchanged. Every MIQP point with objective
    ``<= U``, lifted to ``(x, r, 0.5 r^2)``, is thus a point of the returned master
    with the same objective: the master's bound and "nothing below the cutoff" stay
    proofs for the MIQP, and the master's points are points of the given master
    (rows and bounds only tightened). This is weaker than
    :func:`anchor_tightening`'s contract (there, every point of the given master
    below ``U`` keeps an equal one) and enough for the outer approximation, whose
    masters prove bounds on the MIQP. Anchors in no floor keep their rows and ``z``:
    in this form ``z_j`` also gates ``mu_j <= M2 z_j``, so ``z_j = 0`` is not
    no worse point by point.

    Measured (scripts/csvm_relaxation_bounds.py; docs/benchmarks.md, "CSVM RBF
    n = 300, issue 19"): on the RBF rows of scripts/bench_mip.py, under the best
    known objective as ``U``, the weak-duality ``M_j`` are 1.2-9.9 (medians 3.4 /
    4.4 / 4.9 at n = 100 / 200 / 300) instead of 100, the closed form's 6.7-19.2,
    yet the continuous relaxation hardly moves: n = 100 85.92 -> 87.75 (optimum
    99.57), n = 200 173.78 unchanged (197.35), n = 300 285.73 -> 286.45 (incumbent
    335.72). The relaxation keeps every margin nearly free by spreading the floor's
    few released rows over all members (each ``z_j ~ 0.92``); even an invalid
    ``M_j = 2`` for every member gives only 98.21 / 188.07 / 309.73. A scratch A/B
    of the whole solve at n = 200 was no faster with it, so
    ``solve_csvm(kernel_bounds="auto")`` leaves it off.
    """
    if layout.form != "dual" or problem.on_training:
        raise ValueError("kernel_anchor_bounds needs the dual form of S5 (anchor rows)")
    assert layout.L is not None
    I, F, y = layout.train_idx, layout.floor_idx, problem.y
    nI, nF = I.size, F.size
    M1 = float(problem.big_m)
    cost = problem.cost()
    pos_in_R = {int(r): t for t, r in enumerate(layout.dual_idx)}
    LI = layout.L[[pos_in_R[int(r)] for r in I]]
    LF = layout.L[[pos_in_R[int(r)] for r in F]]
    cls: dict[int, tuple[float, np.ndarray]] = {}
    for lab in (-1, 1):
        sel = y[I] == lab
        S = float(cost[I][sel].sum())
        if S > 0:
            cls[lab] = (S, (cost[I][sel] @ LI[sel]) / S)
    pos_in_F = {int(r): t for t, r in enumerate(F)}
    in_floor = np.zeros(nF, dtype=bool)
    for fl in problem.floors:
        in_floor[[pos_in_F[int(r)] for r in problem.floor_members(fl)]] = True
    members = np.flatnonzero(in_floor & np.isin(y[F], list(cls)))
    D = np.array([np.linalg.norm(LF[t] - cls[int(y[F][t])][1]) for t in members])
    rows = nI + members
    zcols = layout.z.start + members
    k = layout.L.shape[1]
    yI = y[I].astype(np.float64)
    cI = cost[I]
    AI = (yI[:, None] * LI).T  # columns y_i L_i
    GI = AI.T @ AI if dual_qps else None
    # multipliers of the last cutoff they were computed under (valid under any)
    state: dict[str, Any] = {"cutoff": math.inf, "beta": {}}

    def b_box(U: float) -> tuple[float, float]:
        safe = 1.0 + _TIGHTEN_SAFETY
        lo, hi = -math.inf, math.inf
        if 1 in cls:
            m = _norm_bound(float(np.linalg.norm(cls[1][1])), cls[1][0], U) * safe
            lo = 1.0 - m - _TIGHTEN_SAFETY
        if -1 in cls:
            m = _norm_bound(float(np.linalg.norm(cls[-1][1])), cls[-1][0], U) * safe
            hi = m - 1.0 + _TIGHTEN_SAFETY
        return lo, hi

    def tighten(master: MipModel, cutoff: float, time_limit: float) -> MipModel:
        t_end = time.perf_counter() + time_limit
        U = float(cutoff)
        if not (math.isfinite(U) and U >= 0.0):
            return master
        b_lo, b_hi = b_box(U)
        b_abs = max(abs(b_lo), abs(b_hi))
        Ms = np.array(
            [_norm_bound(d, cls[int(y[F][t])][0], U) for d, t in zip(D, members)]
        )
        if dual_qps and U < state["cutoff"]:
            assert GI is not None
            for i, t in enumerate(members):
                yj = float(y[F][t])
                # y . beta = y_j within beta <= lambda c needs lambda >= 1 / S
                lam0 = max(
                    D[i] / (2.0 * math.sqrt(max(U, 1e-12))),
                    (1.0 + 1e-6) / cls[int(yj)][0],
                )
                beta = _dual_margin_multipliers(
                    AI, GI, yj * LF[t], yj, yI, cI, U, t_end, lam0
                )
                if beta is not None:
                    state["beta"][int(t)] = beta
            state["cutoff"] = U
        for i, t in enumerate(members):
            beta = state["beta"].get(int(t))
            if beta is not None and math.isfinite(b_abs):
                yj = float(y[F][t])
                B = _dual_margin_bound(beta, AI, yj * LF[t], yj, yI, cI, U, b_abs)
                Ms[i] = min(Ms[i], 1.0 - B)
        Ms = Ms + _TIGHTEN_SAFETY * (1.0 + np.abs(Ms))
        A = sp.csr_array(master.A, copy=True)
        A.sort_indices()
        lo = master.row_lower.copy()
        col_lo, col_up = master.col_lower.copy(), master.col_upper.copy()
        done = 0
        for row, col, Mj in zip(rows, zcols, Ms):
            if not Mj < M1:
                continue
            Mj = max(Mj, 0.0)
            a0, a1 = A.indptr[row], A.indptr[row + 1]
            at = a0 + int(np.searchsorted(A.indices[a0:a1], col))
            if at >= a1 or A.indices[at] != col:
                continue
            A.data[at] = -Mj
            lo[row] = 1.0 - Mj
            if Mj == 0.0:
                col_lo[col] = 1.0
            done += 1
        col_lo[layout.b] = max(col_lo[layout.b], b_lo)
        col_up[layout.b] = min(col_up[layout.b], b_hi)
        safe = 1.0 + _TIGHTEN_SAFETY
        n = layout.n_cols
        rmax = math.sqrt(2.0 * U) * safe + _TIGHTEN_SAFETY
        col_lo[n : n + k] = np.maximum(col_lo[n : n + k], -rmax)
        col_up[n : n + k] = np.minimum(col_up[n : n + k], rmax)
        col_up[n + k : n + 2 * k] = np.minimum(
            col_up[n + k : n + 2 * k], U * safe + _TIGHTEN_SAFETY
        )
        logger.debug(
            "kernel anchor rows under cutoff %.8g: %d of %d members, median M_j "
            "%.3g in [%.3g, %.3g]; b in [%.4g, %.4g]; %.3f s",
            U,
            done,
            members.size,
            float(np.median(Ms)) if Ms.size else math.nan,
            float(Ms.min()) if Ms.size else math.nan,
            float(Ms.max()) if Ms.size else math.nan,
            b_lo,
            b_hi,
            time_limit - (t_end - time.perf_counter()),
        )
        return replace(master, A=A, row_lower=lo, col_lower=col_lo, col_upper=col_up)

    return tighten


def _diagnose_infeasible(problem: CsvmProblem, form: str, config: MipConfig) -> str:
    """Name the floor(s) that cannot be met (each alone, then together)."""
    bad = []
    per = max(1e-3, config.time_limit / max(1, len(problem.floors)))
    cfg = replace(config, time_limit=per)
    for fl in problem.floors:
        model, _, _ = build_csvm_model(problem, form, floors=(fl,))
        feas = replace(model, c=np.zeros(model.n_cols), Q=None)
        if solve_model(feas, cfg).status is SolveStatus.infeasible:
            bad.append(fl)
    if bad:
        return (
            f"the {problem.describe_floors(bad)} floor cannot be met on the "
            f"{'training' if problem.on_training else 'anchor'} rows with "
            f"big_m={problem.big_m:g}"
        )
    return (
        f"the floors {problem.describe_floors()} cannot be met together on the "
        f"{'training' if problem.on_training else 'anchor'} rows (each alone can)"
    )


#: ``local_search="auto"`` runs the swap search on primal models with more floor
#: rows (binaries) than this (docs/benchmarks.md, "a swap local search").
LOCAL_SEARCH_MIN_INT = 300

#: ``tighten_anchors="auto"`` bounds the anchor rows' big-M on primal S5 models with
#: more anchors than this. Measured (scripts/bench_mip.py, docs/benchmarks.md,
#: "Linear CSVM n = 400 in one master"): linear n = 400 (200 anchors) and n = 500
#: (250) faster with it; n = 100 (50) and n = 200 (100), solved in a fraction of a
#: second, slower by the tightening's LPs.
TIGHTEN_MIN_INT = 100

#: ``anchor_lps="auto"`` on the primal S5: whether the anchor tightening solves one
#: LP per floor member for its big-M (and bounds ``(w, b)`` again over the tightened
#: master) instead of taking the big-M from the box of ``(w, b)`` alone
#: (:func:`anchor_tightening`, ``member_lps``). Measured (scripts/sweep_csvm_master.py,
#: docs/benchmarks.md, "MIP engine: linear CSVM, anchor big-M from the box alone and
#: reliability branching at 2"), medians over HiGHS seeds: linear n = 400 of
#: scripts/bench_mip.py (seeds 0-9) tightening 0.45 -> 0.07 s, first master's tree
#: 337 -> 290 nodes, call 2.11 -> 1.46 s; n = 500 (seeds 0-4) 0.81 -> 0.09 s,
#: 453 -> 567 nodes, call 3.83 -> 3.39 s. The LPs' tighter big-M did not buy a
#: smaller tree.
S5_ANCHOR_LPS = False

#: ``anchor_lps="auto"`` on the primal S5c: the same choice for its slacks' big-M
#: (:func:`anchor_tightening`, ``member_lps``). Measured (scripts/bench_ctrl2_path.py,
#: docs/benchmarks.md, "Ctrl2's S5c small-C proofs: what bounds and fixings can
#: give"): housing fold 0, replicates 2, 3 and 4, 95 MIQPs 224.5 -> 193.3 CPU s
#: (bound LPs 77 -> 14 s, masters 124 -> 155 s, nodes 16,717 -> 27,502), the same
#: optima; the LPs' tighter big-M bought smaller trees, but not enough to pay for
#: the LPs. Wisconsin's masters are never tightened, so it is unchanged.
S5C_ANCHOR_LPS = False

#: ``tighten_anchors="auto"`` on the primal S5c bounds its slacks' big-M (and
#: ``(w, b)``) only after a master has explored this many branch-and-bound nodes
#: without it, and from then on. Why (Ctrl2's MIQPs replayed, docs/benchmarks.md,
#: "Ctrl2's S5c MIQPs"): wisconsin's masters end in 0.3-1.6 s (about 450 nodes)
#: untightened and in about 0.3 s tightened, but the bounds' LPs take 1-3 s, a net
#: loss; housing's first masters did not end in 60 s untightened and take 8-24 s
#: tightened. Nodes, not seconds: a loaded machine would pass a limit in seconds on
#: masters that are cheap.
S5C_TIGHTEN_AFTER = 1000

#: HiGHS options over the outer approximation's proof mode
#: (:data:`~torchsvm.mip.outer_approx._PROOF_OPTIONS`) for the primal S5c's masters
#: with a cutoff: reliability branching back on (HiGHS's default of 8 reliable
#: pseudo-costs instead of 0). Why (docs/benchmarks.md, "Ctrl2's S5c MIQPs: where
#: housing's path goes, reliability branching in the masters"): four of housing's
#: hardest MIQPs replayed took 60.5 CPU s with it against 118.0 s without, and
#: housing's pilot path 382 against 556 CPU s, side by side at load 7-10.
S5C_PROOF_OPTIONS: dict[str, float | int | str | bool] = {"mip_pscost_minreliable": 8}

#: HiGHS options over the outer approximation's proof mode for the primal S5's
#: masters with a cutoff: reliability branching with 2 reliable pseudo-costs
#: (a candidate is strong-branched until two of its branchings were seen) instead of
#: 0. Measured (scripts/sweep_csvm_master.py, same section as
#: :data:`S5_ANCHOR_LPS`), medians over HiGHS seeds, with the box-alone big-M: linear
#: n = 400 (seeds 0-9) 290 -> 124 nodes, masters 1.02 -> 0.97 s; n = 200 and 500
#: (seeds 0-4) 139 -> 50 and 567 -> 319 nodes in about the same time. At 8 (S5c's
#: value) the n = 400 tree is smaller still (90 nodes), but the strong branching
#: costs more than it saves (masters 1.30 s).
#:
#: Cut separation at the nodes and four primal heuristics (feasibility jump, RINS,
#: RENS, root reduced cost) are off: the proof stays complete (only the root's cuts
#: and the branching prove it), and the masters' incumbents come from the outer
#: approximation's QPs anyway. Measured (docs/benchmarks.md, "MIP engine: linear
#: CSVM n = 400, HiGHS options on the masters" and the n = 1000 check after it):
#: the call's median over HiGHS seeds fell by about 10 % at n = 100, 200, 400 and
#: 500 (n = 400: 0.84 -> 0.78 s and 0.86 -> 0.74 s in two runs, same optimum) and
#: from 18.0 to 12.6 s at n = 1000 (seeds 0-2); the trees grow (n = 400: 128 -> 157
#: nodes) but each node is cheaper.
S5_PROOF_OPTIONS: dict[str, float | int | str | bool] = {
    "mip_pscost_minreliable": 2,
    "mip_allow_cut_separation_at_nodes": False,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}

#: ``qp_solver="auto"`` on the primal S5: the outer approximation's QPs (start
#: polish, relaxation, each master's assignment) by the HiGHS QP, the interior point
#: where it fails. Measured (scripts/sweep_csvm_master.py, same section as
#: :data:`S5_ANCHOR_LPS`): on linear n = 400 of scripts/bench_mip.py the call's
#: time outside the masters and the tightening fell from 0.28-0.46 s to 0.13-0.20 s
#: over HiGHS seeds 0-9 (3 QPs of about 0.08 s each by the interior point, 0.01-0.03
#: s by HiGHS). S5c and the kernel form keep the interior point: the HiGHS QP failed
#: on an S5c relaxation (n = 512, d = 30) and was not measured on the kernel form.
S5_QP_SOLVER = "highs"

#: ``solve_csvm(release_screen="auto")`` screens at most this many release sets
RELEASE_SCREEN_MAX_SETS = 5e7
#: share of the time limit the release screen may use before the outer approximation
RELEASE_SCREEN_SHARE = 0.8

#: The primal S5c's slack bounds (:func:`anchor_tightening`) are computed again only
#: when the cutoff has fallen by more than this share of it since they were computed
#: (0: at every drop). Bounds under a higher cutoff stay valid, only looser. Measured
#: (scripts/bench_ctrl2_path.py, docs/benchmarks.md, "Ctrl2's S5c path: the previous
#: C's assignment polished first"): housing's Ctrl2 MIQPs of two replicates 144.1 ->
#: 129.5 CPU s at 0.01, the same masters and optima.
S5C_TIGHTEN_REFRESH = 0.01


def _warm_kernels() -> None:
    """Compile (or load from numba's cache) every kernel a solve may call, before its
    clock starts (see :func:`torchsvm.solvers.active_set_kernel.warm`)."""
    active_set_kernel.warm()
    _release_kernels.warm()


def solve_csvm(
    problem: CsvmProblem,
    config: MipConfig | None = None,
    *,
    form: str = "auto",
    s1: S1Fit | None = None,
    use_start: bool = True,
    max_rounds: int = 200,
    incumbents: Sequence[CsvmSolution] = (),
    lower_bound: float | None = None,
    cut_points: np.ndarray | None = None,
    s1_solver: str = "auto",
    qp_solver: str = "auto",
    round_relaxation: bool | str = "auto",
    local_search: bool | str = "auto",
    tighten_anchors: bool | str = "auto",
    grid_cuts: bool | str = "auto",
    master_pool: int = 8,
    polish_incumbents: bool | str = "auto",
    repair: Sequence[CsvmSolution] = (),
    anchor_lps: bool | str = "auto",
    kernel_bounds: bool | str = "auto",
    release_screen: bool | str = "auto",
) -> CsvmSolution:
    """Solve the CSVM exactly by outer approximation, warm-started by sliding b.

    Parameters
    ----------
    problem : CsvmProblem
        Data and floors.
    config : MipConfig, optional
        Time limit (overall) and relative gap.
    form : {"auto", "primal", "dual"}
        Formulation (module docstring).
    s1 : S1Fit, optional
        Precomputed S1 solution on the same rows (e.g. from the GPU batch).
    use_start : bool
        Use the sliding-b MIP start.
    max_rounds : int
        Outer-approximation rounds.
    incumbents : sequence of CsvmSolution
        Classifiers solved on the same rows (e.g. the same S5c at a higher floor,
        whose solution is feasible at every lower floor, or at a neighbouring ``C``:
        the constraints do not depend on ``C``); each one that is feasible here is an
        incumbent (:func:`solution_start`, not polished) and each adds tangent cuts.
    lower_bound : float, optional
        A proven lower bound on this problem's optimum, taken as given (e.g. the
        proven ``bound`` of the same data, ``C`` and weights at a lower floor: that
        problem is a relaxation of this one).
    cut_points : ndarray of shape (m, d), optional
        Primal form only: points ``w`` at which to add tangent cuts of ``||w||^2``
        (valid for every CSVM on the same features, whatever the rows' weights,
        ``C`` or floors).
    s1_solver : {"auto", "batched", "libsvm"}
        Who fits S1 when ``s1`` is not given (:func:`fit_s1`). ``auto`` is libsvm for
        the linear and RBF kernels: one S1 fit is a single small SVM, for which the
        batched solver's set-up dominates (linear n = 100 of scripts/bench_mip.py,
        load ~11: 0.7-0.8 s batched vs 0.09 s libsvm at tol 1e-8, intercept and ``w``
        equal to 7e-7; the S1 fit was most of the 0.8-1.7 s solve). The start only
        seeds the outer approximation, whose answer is exact either way. Pass ``s1``
        (e.g. a row of a GPU batch) to use the batched solver's fit.
    qp_solver : {"auto", "ipm", "ipm-dense", "ipm-sparse", "highs"}
        Solver of the outer approximation's QPs
        (:func:`~torchsvm.mip.outer_approx.solve_convex_miqp`; ``highs`` falls back
        to the interior point where the HiGHS QP fails). ``auto``: ``highs`` on the
        primal S5 (:data:`S5_QP_SOLVER`), else ``ipm`` (whose ``linalg="auto"``
        picks the sparse Newton system for the primal form).
    round_relaxation : bool or "auto"
        Polish the continuous relaxation rounded to the floors
        (:func:`floor_rounding`) as a further incumbent. It changes no bound and
        the answer stays exact; it can only lower the incumbent (and the gap of a
        call stopped by its limit). ``auto``: on for the kernel (dual) form, off for
        the primal form. Measured (scripts/bench_mip.py, docs/benchmarks.md): RBF
        n = 100 proven in 2.0 s instead of 74.6 s, German fold 3 at 300 s gap 0.154
        instead of 0.257; linear n = 100 0.17 s instead of 0.12 s (one more QP, no
        fewer masters).
    local_search : bool or "auto"
        Before the first master, improve the incumbent by best-improvement swaps of
        the floor's binding members (:func:`floor_swaps`,
        :meth:`~torchsvm.mip.outer_approx.OuterApproximation.local_search`). It
        changes no bound; the answer stays exact. ``auto``: on for the primal form
        of S5 (anchor rows) with more than :data:`LOCAL_SEARCH_MIN_INT` of them
        (measured there: linear n = 1000 of scripts/bench_mip.py one master instead
        of two; at n = 500 it only added QPs); off for S5c and the kernel form,
        where it was not measured.
    tighten_anchors : bool or "auto"
        Bound the anchor rows' big-M under each master's cutoff and drop the rows
        of anchors in no floor that cannot bind there; on S5c, bound the slacks'
        big-M (:func:`anchor_tightening`; primal form only). Each master keeps the
        points that can beat the incumbent, so the answer stays exact. ``auto``: on
        for the primal form of S5 with more than :data:`TIGHTEN_MIN_INT` anchors,
        and for the primal S5c once a master has explored
        :data:`S5C_TIGHTEN_AFTER` nodes without it.
    grid_cuts : bool or "auto"
        Tangent cuts of ``||w||^2`` on a grid over the box of ``w`` that can beat
        the first master's cutoff (``grid`` of
        :func:`~torchsvm.mip.outer_approx.solve_convex_miqp`; ``auto``: a lifted
        quadratic of at most 10 dimensions, e.g. the primal form with at most 10
        features). Tangents are valid everywhere; the answer stays exact.
    master_pool : int
        Most of a master's improving solutions whose assignments are polished when
        the master leaves the gap open (``master_pool`` of
        :func:`~torchsvm.mip.outer_approx.solve_convex_miqp`; 0: none). Incumbents
        only; the answer stays exact.
    polish_incumbents : bool or "auto"
        Before the first master, solve the fixed-binary QP of each feasible
        ``incumbents`` entry's assignment (:func:`incumbent_assignment`: ``z = 1``
        on the floor members it meets, 0 elsewhere) at this problem's ``C``,
        instead of only taking the entry as it is. Its QP optimum is an incumbent
        no worse than the entry, and its tangent cuts sit at this ``C``'s point.
        Incumbents and cuts only; the answer stays exact. ``auto``: on for S5c
        (``on_training``), whose path hands in the same floor's optimum at the
        previous ``C``: on housing's Ctrl2 path its assignment was often the
        optimum's here, and a master then only has to prove it (docs/benchmarks.md,
        "Ctrl2's S5c path: the previous C's assignment polished first").
    repair : sequence of CsvmSolution
        Classifiers on the same rows that may miss the floors (e.g. the same S5c's
        optimum at a lower floor): each gives the assignment of
        :func:`repaired_assignment` (its members of highest margin until every
        floor is met), whose fixed-binary QP is polished before the first master.
        Incumbents and cuts only; the answer stays exact.
    anchor_lps : bool or "auto"
        With ``tighten_anchors``: bound each floor member's big-M by an LP of its
        own and then ``(w, b)`` over the tightened master (``member_lps`` of
        :func:`anchor_tightening`), or only by the box of ``(w, b)`` (``2 (d + 1)``
        LPs). Both bounds are valid; the answer stays exact. ``auto``: the box
        alone on S5 (:data:`S5_ANCHOR_LPS`) and on S5c (:data:`S5C_ANCHOR_LPS`).
    kernel_bounds : bool or "auto"
        Dual form of S5: bound each floor member's big-M, ``b`` and the lifted
        ``r``, ``t`` under each master's cutoff (:func:`kernel_anchor_bounds`:
        closed form and weak duality). Valid for every MIQP point below the
        cutoff, so the answer stays exact. ``auto``: off (it hardly moves the
        relaxation of the RBF rows of scripts/bench_mip.py; see there).
    release_screen : bool or "auto"
        First try the dual screen over the floor's release sets
        (:func:`~torchsvm.mip.csvm_release.release_screen`: S5 with one unit-weight
        floor of one label; exact, its answer is a feasible point of this model and
        its bound a proof). Where it proves the optimum the outer approximation is
        skipped; otherwise its incumbent and bound seed it, with the time left. It
        may use :data:`RELEASE_SCREEN_SHARE` of the limit. ``auto``: on for the
        kernel (dual) form where it applies with at most
        :data:`RELEASE_SCREEN_MAX_SETS` release sets, off for the primal form.
        Measured (scripts/bench_mip.py ``--csvm-release off auto``;
        docs/benchmarks.md, "CSVM release-set screen"): RBF n = 300 proven in
        seconds where the outer approximation stopped at 1800 s with gap 0.15; on
        the linear primal form the outer approximation is already faster (n = 100,
        200) and n = 400's C(74, 7) = 1.8e9 sets are above the cap.

    Returns
    -------
    CsvmSolution

    Raises
    ------
    InfeasibleProblemError
        Naming the floor(s) that cannot be met.
    SolverError
        If no feasible classifier was found within the time limit.
    """
    config = MipConfig() if config is None else config
    _warm_kernels()  # a one-off compilation is not charged to the time limit
    t0 = time.perf_counter()
    deadline = t0 + config.time_limit
    if qp_solver not in ("auto", "ipm", "ipm-dense", "ipm-sparse", "highs"):
        raise ValueError(
            "qp_solver must be 'auto', 'ipm', 'ipm-dense', 'ipm-sparse' or 'highs', "
            f"got {qp_solver!r}"
        )
    if round_relaxation not in (True, False, "auto"):
        raise ValueError(
            f"round_relaxation must be True, False or 'auto', got {round_relaxation!r}"
        )
    model, layout, factor = build_csvm_model(problem, form)
    rounding_on = (
        layout.form == "dual" if round_relaxation == "auto" else bool(round_relaxation)
    )
    if local_search not in (True, False, "auto"):
        raise ValueError(
            f"local_search must be True, False or 'auto', got {local_search!r}"
        )
    search_on = (
        layout.form == "primal"
        and not problem.on_training
        and layout.floor_idx.size > LOCAL_SEARCH_MIN_INT
        if local_search == "auto"
        else bool(local_search)
    )
    if tighten_anchors not in (True, False, "auto"):
        raise ValueError(
            f"tighten_anchors must be True, False or 'auto', got {tighten_anchors!r}"
        )
    big_s5 = (
        layout.form == "primal"
        and not problem.on_training
        and layout.floor_idx.size > TIGHTEN_MIN_INT
    )
    s5c_primal = layout.form == "primal" and problem.on_training
    tighten_on = (
        big_s5 or s5c_primal if tighten_anchors == "auto" else bool(tighten_anchors)
    )
    if tighten_on and layout.form != "primal":
        raise ValueError("tighten_anchors needs the primal form (linear kernel)")
    if qp_solver == "auto":
        primal_s5 = layout.form == "primal" and not problem.on_training
        qp_solver = S5_QP_SOLVER if primal_s5 else "ipm"
    if anchor_lps not in (True, False, "auto"):
        raise ValueError(
            f"anchor_lps must be True, False or 'auto', got {anchor_lps!r}"
        )
    lps_on = (
        (S5C_ANCHOR_LPS if s5c_primal else S5_ANCHOR_LPS)
        if anchor_lps == "auto"
        else bool(anchor_lps)
    )
    if kernel_bounds not in (True, False, "auto"):
        raise ValueError(
            f"kernel_bounds must be True, False or 'auto', got {kernel_bounds!r}"
        )
    kernel_s5 = layout.form == "dual" and not problem.on_training
    kbounds_on = False if kernel_bounds == "auto" else bool(kernel_bounds)
    if kbounds_on and not kernel_s5:
        raise ValueError("kernel_bounds needs the dual form of S5 (anchor rows)")
    points = None
    if cut_points is not None:
        if layout.form != "primal":
            raise ValueError("cut_points needs the primal form (linear kernel)")
        W = np.atleast_2d(np.asarray(cut_points, dtype=np.float64))
        if W.shape[1] != problem.X.shape[1]:
            raise ValueError(
                f"cut_points must have shape (m, {problem.X.shape[1]}), got {W.shape}"
            )
        points = np.zeros((W.shape[0], layout.n_cols))
        points[:, layout.w] = W
    if s1_solver not in ("auto", "batched", "libsvm"):
        raise ValueError(
            f"s1_solver must be 'auto', 'batched' or 'libsvm', got {s1_solver!r}"
        )
    if release_screen not in (True, False, "auto"):
        raise ValueError(
            f"release_screen must be True, False or 'auto', got {release_screen!r}"
        )
    screened = None
    screen_on = (
        layout.form == "dual" if release_screen == "auto" else bool(release_screen)
    )
    if screen_on and not release_applies(problem):
        dlayout = (
            layout if layout.form == "dual" else build_csvm_model(problem, "dual")[1]
        )
        try:
            screened = _release_screen(
                problem,
                dlayout,
                config,
                deadline=t0 + RELEASE_SCREEN_SHARE * config.time_limit,
                max_sets=(
                    RELEASE_SCREEN_MAX_SETS if release_screen == "auto" else math.inf
                ),
                caps=layout.form == "dual",
            )
        except SolverError as exc:
            logger.info("release screen failed (%s); outer approximation only", exc)
        if screened is not None and screened.x is not None:
            xs = screened.x
            if layout.form != "dual":
                x_p = np.zeros(layout.n_cols)
                x_p[layout.w] = xs[dlayout.w]
                x_p[layout.b] = xs[dlayout.b]
                x_p[layout.xi] = xs[dlayout.xi]
                x_p[layout.z] = xs[dlayout.z]
                xs = x_p
            if screened.proven or time.perf_counter() >= deadline:
                upper = screened.upper
                if use_start and time.perf_counter() < deadline:
                    # the screen's point is recovered from a dual QP's solution, so
                    # it can sit a few 1e-7 (relative) above a start with the same
                    # proof; the call never returns worse than its sliding-b start
                    if s1_solver == "auto":
                        lib = problem.kernel in ("linear", "rbf")
                        s1_solver = "libsvm" if lib else "batched"
                    st = csvm_start(
                        problem, layout, s1, deadline=deadline, s1_solver=s1_solver
                    )
                    ok = (
                        st.x is not None
                        and check_feasible(model, st.x, tol=config.feasibility_tol)[0]
                    )
                    if ok:
                        f_st = start_objective(problem, layout, st.x)
                        if f_st < upper:
                            xs, upper = st.x, f_st
                gap = max(0.0, upper - screened.lower) / max(abs(upper), 1e-10)
                if not screened.proven:
                    warnings.warn(
                        f"CSVM stopped at its time limit {config.time_limit:g} s in "
                        f"the release-set screen: gap {gap:.3g}",
                        SolverTimeLimitWarning,
                        stacklevel=2,
                    )
                return _csvm_solution(
                    problem,
                    layout,
                    xs,
                    SolveStatus.optimal if screened.proven else SolveStatus.time_limit,
                    upper,
                    screened.lower,
                    gap,
                    t0,
                    0,
                    None,
                    0,
                )
    # S5c under "auto": only once a master has run S5C_TIGHTEN_AFTER nodes untightened
    tighten_after = (
        S5C_TIGHTEN_AFTER if tighten_anchors == "auto" and s5c_primal else None
    )
    start = None
    if use_start:
        # the start's refits may use at most half of the limit (the first is always made)
        if s1_solver == "auto":
            lib = problem.kernel in ("linear", "rbf")
            s1_solver = "libsvm" if lib else "batched"
        start = csvm_start(
            problem,
            layout,
            s1,
            deadline=t0 + 0.5 * config.time_limit,
            s1_solver=s1_solver,
        )
    seeds = [solution_start(problem, layout, s) for s in incumbents]
    if screened is not None:
        if screened.x is not None:
            seeds.append(xs)
        if math.isfinite(screened.lower):
            lower_bound = (
                screened.lower
                if lower_bound is None
                else max(float(lower_bound), screened.lower)
            )
    if polish_incumbents not in (True, False, "auto"):
        raise ValueError(
            "polish_incumbents must be True, False or 'auto', "
            f"got {polish_incumbents!r}"
        )
    polish_on = (
        problem.on_training if polish_incumbents == "auto" else bool(polish_incumbents)
    )
    polish = (
        [incumbent_assignment(problem, layout, x) for x in seeds if x is not None]
        if polish_on
        else []
    )
    for sol in repair:
        x = solution_start(problem, layout, sol)
        if x is not None:
            polish.append(repaired_assignment(problem, layout, x))
    left = max(deadline - time.perf_counter(), 1e-3)
    res: MipResult = solve_convex_miqp(
        model,
        replace(config, time_limit=left),
        start.x if start is not None else None,
        max_rounds=max_rounds,
        factor=factor,
        incumbents=[x for x in seeds if x is not None],
        cut_points=points,
        lower_bound=lower_bound,
        qp_solver=qp_solver,
        rounding=floor_rounding(problem, layout) if rounding_on else None,
        improve=floor_swaps(problem, layout) if search_on else None,
        tighten=(
            anchor_tightening(
                problem,
                layout,
                S5C_TIGHTEN_REFRESH if s5c_primal else 0.0,
                member_lps=lps_on,
            )
            if tighten_on
            else kernel_anchor_bounds(problem, layout)
            if kbounds_on
            else None
        ),
        grid=grid_cuts,
        master_pool=master_pool,
        tighten_after=tighten_after,
        proof_options=(
            S5C_PROOF_OPTIONS
            if s5c_primal
            else S5_PROOF_OPTIONS
            if layout.form == "primal"
            else None
        ),
        polish=polish,
    )
    if res.status is SolveStatus.infeasible:
        left = max(deadline - time.perf_counter(), 1e-3)
        raise InfeasibleProblemError(
            _diagnose_infeasible(problem, layout.form, replace(config, time_limit=left))
        )
    if res.x is None:
        raise SolverError(
            f"no feasible constrained SVM found ({res.status}: {res.message}) within "
            f"{config.time_limit:g} s"
        )
    return _csvm_solution(
        problem,
        layout,
        res.x,
        res.status,
        res.objective,
        res.bound,
        res.mip_gap,
        t0,
        res.n_iter,
        res.start_feasible,
        int(res.extra.get("tightened_masters", 0)),
    )


def _csvm_solution(
    problem: CsvmProblem,
    layout: CsvmLayout,
    x: np.ndarray,
    status: SolveStatus,
    objective: float,
    bound: float,
    gap: float,
    t0: float,
    n_iter: int,
    start_feasible: bool | None,
    tightened: int,
) -> CsvmSolution:
    """The :class:`CsvmSolution` of a model point ``x``."""
    coef = dual = supp = None
    if layout.form == "primal":
        coef = x[layout.w].copy()
    else:
        assert layout.a is not None
        a = x[layout.a]
        R = layout.dual_idx
        nz = np.flatnonzero(a > 1e-10)
        dual = a[nz] * problem.y[R[nz]]
        supp = problem.X[R[nz]]
        if problem.kernel == "linear":
            coef = supp.T @ dual
    return CsvmSolution(
        status=status,
        coef=coef,
        dual_coef=dual,
        support_X=supp,
        intercept=float(x[layout.b]),
        z=np.round(x[layout.z]).astype(bool),
        objective=objective,
        bound=bound,
        mip_gap=gap,
        runtime=time.perf_counter() - t0,
        n_iter=n_iter,
        start_feasible=start_feasible,
        form=layout.form,
        kernel=problem.kernel,
        gamma=problem.gamma,
        tightened_masters=tightened,
    )
