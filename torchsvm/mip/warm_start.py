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

The S1 solver sits behind :func:`fit_s1`: the project's batched
:class:`~torchsvm.estimators.svc.WeightedSVC` (scikit-learn's ``SVC`` where it is not
importable).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from torchsvm.problems.csvm import CsvmProblem, kernel_matrix

logger = logging.getLogger(__name__)

__all__ = ["S1Fit", "SlideResult", "fit_s1", "s1_for_csvm", "slide_intercept"]


@dataclass(frozen=True)
class S1Fit:
    """A fitted S1 classifier ``f(x) = sum_s dual_coef_s K(x_s, x) + intercept``.

    Parameters
    ----------
    dual_coef : ndarray of shape (n,)
        ``alpha_s y_s`` for every row passed to :func:`fit_s1` (0 off the support).
    intercept : float
        ``b``.
    """

    dual_coef: np.ndarray
    intercept: float


def fit_s1(
    X: np.ndarray,
    y: np.ndarray,
    sample_cost: np.ndarray,
    kernel: str,
    gamma: float,
) -> S1Fit:
    """Fit the weighted SVM S1 in libsvm's convention with per-row bounds ``sample_cost``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    sample_cost : ndarray of shape (n,)
        ``u_i`` (libsvm ``C * sample_weight``); rows with 0 are left out.
    kernel, gamma : str, float
        Kernel.

    Returns
    -------
    S1Fit
        Multipliers over all ``n`` rows and the intercept.
    """
    keep = np.flatnonzero(sample_cost > 0)
    scale = float(sample_cost[keep].max())
    g = gamma if kernel == "rbf" else "scale"
    clf: Any
    try:  # the project's batched S1 solver (SPEC S1); scikit-learn if unavailable
        from torchsvm.estimators.svc import WeightedSVC

        clf = WeightedSVC(C=scale, kernel=kernel, gamma=g, tol=1e-8)
    except ImportError:  # pragma: no cover - depends on the checkout
        from sklearn.svm import SVC

        clf = SVC(C=scale, kernel=kernel, gamma=g, tol=1e-6, cache_size=500)
    clf.fit(X[keep], y[keep], sample_weight=sample_cost[keep] / scale)
    dual = np.zeros(X.shape[0])
    # NOTE: dual_coef_ is alpha*y with classes_ = [-1, 1]; decision > 0 -> +1.
    dual[keep[clf.support_]] = np.asarray(clf.dual_coef_).ravel()
    return S1Fit(dual, float(clf.intercept_[0]))


def s1_for_csvm(problem: CsvmProblem) -> S1Fit:
    """S1 on ``I u J`` (``I`` for S5c) with ``u_i = w_i C_{y_i} / 2`` (SPEC S5 warm start)."""
    cost = problem.cost() / 2.0  # thesis C (no 1/2) -> libsvm bound C/2
    if problem.on_training:
        cost = np.where(problem.anchor, 0.0, cost)
    return fit_s1(problem.X, problem.y, cost, problem.kernel, problem.gamma)


def scores_without_intercept(
    problem: CsvmProblem, fit: S1Fit, rows: np.ndarray
) -> np.ndarray:
    """``g(x_r) = sum_s dual_coef_s K(x_s, x_r)`` for ``rows``."""
    sv = np.flatnonzero(fit.dual_coef)
    if sv.size == 0:
        return np.zeros(rows.size)
    K = kernel_matrix(problem.X[rows], problem.X[sv], problem.kernel, problem.gamma)
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
