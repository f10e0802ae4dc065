"""Warm start of the constrained SVM: S1 solution + sliding intercept (SPEC S5).

Thesis recipe (ch. 2): solve the weighted SVM S1 on ``I u J`` (``I`` alone for S5c) with
the class penalties ``C+ = C/|I+|``, ``C- = C/|I-|``; keep its multipliers fixed and
slide the intercept ``b`` until the floors hold on the floor rows (``J``, or ``I`` for
S5c); ``z_j = 1`` for the rows then satisfied. This is both the "sliding b" baseline
and the MIP start.

Two margins are used (our reading, stated here):

- the MIP start needs ``y_j f(x_j) >= 1`` for ``z_j = 1`` (the big-M rows), so it slides
  with ``margin=1``;
- the sliding-b *classifier* (baseline) only needs correct classification, ``margin=0``.

Among the intercepts that meet every floor the one closest to the S1 intercept is
taken. If none exists (floors on both classes that no shift of ``b`` meets) the slide
returns ``None``: the MIP may still be feasible with another ``w``.

This module takes solutions, it fits nothing: the caller fits S1 with the batched
solver (:func:`torchsvm.mip.csvm.fit_s1`) and passes the solution as an :class:`S1Fit`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from torchsvm.kernels import compute_kernel_np
from torchsvm.problems.csvm import CsvmProblem
from torchsvm.solvers.solution import BatchedSvmSolution

logger = logging.getLogger(__name__)

__all__ = [
    "S1Fit",
    "SlideResult",
    "s1_bounds",
    "scores_without_intercept",
    "slide_intercept",
]


@dataclass(frozen=True)
class S1Fit:
    """A fitted S1 classifier ``f(x) = sum_s dual_coef_s K(x_s, x) + intercept``.

    Parameters
    ----------
    dual_coef : ndarray of shape (n,)
        ``alpha_s y_s`` for every row of the problem (0 off the support).
    intercept : float
        ``b``.
    """

    dual_coef: np.ndarray
    intercept: float

    @classmethod
    def from_solution(
        cls,
        solution: BatchedSvmSolution,
        y: np.ndarray,
        rows: np.ndarray | None = None,
        n: int | None = None,
        index: int = 0,
    ) -> S1Fit:
        """Take problem ``index`` of a batched solution (SPEC S1).

        Parameters
        ----------
        solution : BatchedSvmSolution
            Output of :class:`~torchsvm.solvers.box_qp.BoxQpSolver`.
        y : ndarray of shape (n_fit,)
            Labels in {-1, +1} of the rows the batch was fitted on.
        rows : ndarray of shape (n_fit,), optional
            Positions of those rows among ``n`` rows (``None``: all rows, in order).
        n : int, optional
            Total number of rows (needed with ``rows``).
        index : int
            Which problem of the batch.
        """
        alpha = solution.alpha[index].detach().cpu().numpy().astype(np.float64)
        coef = alpha * np.asarray(y, dtype=np.float64)
        if rows is not None:
            if n is None:
                raise ValueError("S1Fit.from_solution needs n together with rows")
            full = np.zeros(int(n))
            full[np.asarray(rows)] = coef
            coef = full
        return cls(coef, float(solution.b[index]))


def s1_bounds(problem: CsvmProblem) -> np.ndarray:
    """Per-row S1 bounds ``u_i = w_i C_{y_i} / 2`` on ``I u J`` (``I`` for S5c).

    The thesis' C has no 1/2 in its objective, so its dual box is half libsvm's. Rows
    with ``u_i = 0`` take no part in S1. The caller fits S1 with these bounds (the
    batched solver, :class:`~torchsvm.problems.svm.BatchedSvmProblem` and
    :class:`~torchsvm.solvers.box_qp.BoxQpSolver`) and passes the solution through
    :meth:`S1Fit.from_solution`.
    """
    cost = problem.cost() / 2.0
    if problem.on_training:
        cost = np.where(problem.anchor, 0.0, cost)
    return cost


def scores_without_intercept(
    problem: CsvmProblem, fit: S1Fit, rows: np.ndarray
) -> np.ndarray:
    """``g(x_r) = sum_s dual_coef_s K(x_s, x_r)`` for ``rows``."""
    sv = np.flatnonzero(fit.dual_coef)
    if sv.size == 0:
        return np.zeros(rows.size)
    K = compute_kernel_np(
        problem.X[rows], problem.X[sv], kernel=problem.kernel, gamma=problem.gamma
    )
    return K @ fit.dual_coef[sv]


@dataclass(frozen=True)
class SlideResult:
    """Outcome of :func:`slide_intercept`.

    Parameters
    ----------
    intercept : float or None
        Feasible intercept closest to the S1 one, or None if no shift meets the floors.
    satisfied : ndarray of shape (n_floor_rows,), bool
        Rows of ``problem.floor_idx`` with ``y f >= margin`` at that intercept.
    """

    intercept: float | None
    satisfied: np.ndarray


def slide_intercept(
    problem: CsvmProblem, g: np.ndarray, b0: float, margin: float = 1.0
) -> SlideResult:
    """Slide ``b`` until every floor holds on the floor rows (SPEC S5 "sliding b").

    Parameters
    ----------
    problem : CsvmProblem
        Floors and floor rows.
    g : ndarray of shape (len(problem.floor_idx),)
        Scores without intercept on ``problem.floor_idx``.
    b0 : float
        S1 intercept (the slide stays as close to it as the floors allow).
    margin : float
        Required ``y f`` for a row to count (1 for the MIP start, 0 for classification).

    Returns
    -------
    SlideResult
    """
    F = problem.floor_idx
    y = problem.y[F]
    w = problem.weights[F]
    eps = 1e-9
    cand = np.concatenate([[b0], np.where(y > 0, margin - g + eps, -margin - g - eps)])
    f = g[None, :] + cand[:, None]
    sat = np.where(y[None, :] > 0, f >= margin, f <= -margin)
    ok = np.ones(cand.size, dtype=bool)
    pos = {int(r): k for k, r in enumerate(F)}
    for floor in problem.floors:
        cols = np.array([pos[int(r)] for r in problem.floor_members(floor)])
        ok &= (sat[:, cols] * w[cols]).sum(1) >= floor.required - 1e-9
    if not ok.any():
        return SlideResult(None, sat[0])
    k = int(np.flatnonzero(ok)[np.argmin(np.abs(cand[ok] - b0))])
    return SlideResult(float(cand[k]), sat[k])
