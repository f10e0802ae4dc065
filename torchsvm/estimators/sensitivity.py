"""Sensitivity control by class-dependent penalties: ROC sweeps (SPEC S1, S1b).

Veropoulos, Campbell & Cristianini ("Controlling the sensitivity of support vector
machines") trade sensitivity for specificity with class-dependent penalties. Two
schemes, each swept over ``C+`` with ``C-`` fixed and solved as **one batch** that
shares the kernel matrix (SPEC S8):

- ``scheme="box"`` (SPEC S1): hinge loss with box constraints, dual bounds
  ``0 <= a_i <= C+`` for positives and ``C-`` for negatives;
- ``scheme="diagonal"`` (SPEC S1b): quadratic slack penalty ``sum_i C_{y_i} xi_i^2``;
  the dual has no upper bound and the kernel diagonal is increased by
  ``lambda_{y_i} = 1 / (2 C_{y_i})`` (libsvm's 1/2 convention, ``1/2 ||w||^2``).

Every model of the sweep gives one point (FPR, TPR) of the test ROC plane at threshold
0; the points, joined in FPR order between (0, 0) and (1, 1), are the sweep's ROC curve.
:class:`RocSweepDisplay` draws it in scikit-learn's display style.

Hard sweeps (the paper's ``C- = infinity``): with ``C`` large, the box scheme's
negatives are bounded by ``C`` only; where no negative multiplier reaches ``C`` at the
optimum the bound is inactive and the model *is* the ``C- = infinity`` model (a convex
problem whose KKT conditions do not involve an inactive bound), which
``n_fixed_at_bound_`` lets a caller check. ``hard_fixed_side=True`` does the same for
the diagonal scheme: the fixed class gets no diagonal shift (``epsilon- = 0``, the
hard quadratic margin) and the hinge bound ``C``. A sweep of ``C+`` with ``C-`` hard
only runs from "everything negative" to the hard-margin model, whose false-positive
rate is usually far below 1; ``mirror=True`` appends the mirrored half (``C+`` fixed
at ``C``, ``C-`` running back over the grid), so the path goes on to "everything
positive" and the curve spans FPR 0 to 1.

:func:`paired_fold_test` compares two sweeps on per-fold statistics (Wilcoxon
signed-rank, with the paired t-test beside it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from numbers import Real
from typing import Any

import numpy as np
import torch

from torchsvm.config import SolverConfig
from torchsvm.estimators._base import (
    SVM_PARAMETER_CONSTRAINTS,
    BinaryBatchMixin,
    Interval,
    StrOptions,
    check_is_fitted,
    clone,
    encode_binary,
    validate_data,
    warn_if_not_converged,
)
from torchsvm.estimators.svc import _BatchedSvmBase
from torchsvm.exceptions import DataError
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

__all__ = [
    "PairedTestResult",
    "RocSweepDisplay",
    "RocSweepResult",
    "SensitivitySweepSVC",
    "default_c_pos_grid",
    "fit_one_at_a_time",
    "paired_fold_test",
    "roc_points",
    "roc_sweep_cv",
    "sweep_auc",
    "tpr_at_fpr",
]

SCHEMES = ("box", "diagonal")


def default_c_pos_grid(C: float, n_points: int = 33, span: float = 8.0) -> np.ndarray:
    """``C * 2 ** linspace(-span, span, n_points)``: the default ``C+`` sweep."""
    return float(C) * 2.0 ** np.linspace(-span, span, int(n_points))


def roc_points(y_pm: np.ndarray, pred_pm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FPR and TPR of each row of hard predictions.

    Parameters
    ----------
    y_pm : ndarray of shape (t,)
        True labels in ``{-1, +1}``.
    pred_pm : ndarray of shape (P, t)
        Predicted labels in ``{-1, +1}`` of ``P`` models.

    Returns
    -------
    fpr, tpr : ndarray of shape (P,)
    """
    pos, neg = y_pm > 0, y_pm < 0
    if not pos.any() or not neg.any():
        raise DataError("ROC points need both classes in y")
    hit = pred_pm > 0
    return hit[:, neg].mean(1), hit[:, pos].mean(1)


def sweep_auc(fpr: np.ndarray, tpr: np.ndarray) -> float:
    """Area under the piecewise-linear curve through the sweep points, (0,0) and (1,1)."""
    x, yv = _curve(fpr, tpr)
    return float(np.sum(np.diff(x) * (yv[1:] + yv[:-1]) / 2.0))


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, max_fpr: float) -> float:
    """Best TPR among the sweep's points with ``FPR <= max_fpr`` (0 if none).

    The operating point a user of the sweep can pick when the false-positive rate
    may not exceed ``max_fpr``; (0, 0), the "everything negative" end, always counts.
    """
    f = np.asarray(fpr, dtype=np.float64)
    t = np.asarray(tpr, dtype=np.float64)
    if f.shape != t.shape or f.ndim != 1:
        raise ValueError(
            f"fpr and tpr must be 1-D of equal length; got {f.shape}, {t.shape}"
        )
    ok = f <= max_fpr + 1e-12
    return float(t[ok].max()) if ok.any() else 0.0


@dataclass(frozen=True)
class PairedTestResult:
    """Paired comparison of two sweeps over folds (see :func:`paired_fold_test`).

    Attributes
    ----------
    n : int
        Folds compared.
    n_nonzero : int
        Folds with a non-zero difference (the Wilcoxon test drops the others).
    mean_diff : float
        Mean of ``a - b``.
    wilcoxon_statistic, wilcoxon_pvalue : float
        Two-sided Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, zero
        differences dropped; exact null distribution when there are no ties and
        at most 50 differences, normal approximation otherwise); p = 1 when every
        difference is 0.
    t_statistic, t_pvalue : float
        Two-sided paired t-test (``scipy.stats.ttest_rel``); NaN when the
        differences are constant.
    """

    n: int
    n_nonzero: int
    mean_diff: float
    wilcoxon_statistic: float
    wilcoxon_pvalue: float
    t_statistic: float
    t_pvalue: float


def paired_fold_test(a: Any, b: Any) -> PairedTestResult:
    """Paired two-sided tests of ``a`` vs ``b`` (one value per fold, same folds).

    The Wilcoxon signed-rank test is the primary one: ten or so fold differences
    of a bounded statistic (AUC, a rate) are neither many nor normal, and the
    signed-rank test only assumes differences symmetric about their median. The
    paired t-test is reported beside it. Both treat folds as independent, which
    they are not (training parts overlap), so the p-values are optimistic
    (Nadeau & Bengio); read them as a ranking of evidence, not exact error rates.

    Parameters
    ----------
    a, b : array-like of shape (k,)
        Per-fold values of the two methods, aligned by fold; NaN pairs are dropped.

    Returns
    -------
    PairedTestResult
    """
    from scipy import stats

    x = np.asarray(a, dtype=np.float64).ravel()
    z = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != z.shape:
        raise ValueError(
            f"paired_fold_test needs equal-length inputs; got {x.shape}, {z.shape}"
        )
    keep = np.isfinite(x) & np.isfinite(z)
    x, z = x[keep], z[keep]
    if x.size < 2:
        raise ValueError(
            f"paired_fold_test needs at least 2 complete pairs; got {x.size}"
        )
    d = x - z
    nonzero = int(np.count_nonzero(d))
    if nonzero == 0:
        w_stat, w_p = 0.0, 1.0
    else:
        w = stats.wilcoxon(x, z, zero_method="wilcox", alternative="two-sided")
        w_stat, w_p = float(w.statistic), float(w.pvalue)
    if np.ptp(d) == 0.0:
        t_stat = t_p = float("nan")
    else:
        t = stats.ttest_rel(x, z)
        t_stat, t_p = float(t.statistic), float(t.pvalue)
    return PairedTestResult(
        n=int(x.size),
        n_nonzero=nonzero,
        mean_diff=float(d.mean()),
        wilcoxon_statistic=w_stat,
        wilcoxon_pvalue=w_p,
        t_statistic=t_stat,
        t_pvalue=t_p,
    )


def _curve(fpr: np.ndarray, tpr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([[0.0], np.asarray(fpr, dtype=np.float64), [1.0]])
    yv = np.concatenate([[0.0], np.asarray(tpr, dtype=np.float64), [1.0]])
    order = np.lexsort((yv, x))
    return x[order], yv[order]


class SensitivitySweepSVC(BinaryBatchMixin, _BatchedSvmBase):
    """A ``C+`` sweep of class-weighted SVMs solved as one batch (SPEC S1 / S1b).

    Parameters
    ----------
    scheme : {"box", "diagonal"}, default="box"
        ``"box"``: per-class box constraints (S1); ``"diagonal"``: quadratic slack
        penalty, kernel diagonal shifted by ``1 / (2 C_{y_i})`` (S1b).
    C : float, default=1.0
        ``C-``, the fixed penalty of the negative class (and, with ``mirror``, the
        fixed ``C+`` of the mirrored half). A large ``C`` stands in for the paper's
        ``C- = infinity``: exact for every model with ``n_fixed_at_bound_ == 0``.
    C_pos_grid : array-like of shape (m,) or None, default=None
        The swept penalties; None means ``default_c_pos_grid(C)`` (33 values,
        ``C * 2^-8 ... C * 2^8``).
    mirror : bool, default=False
        False: ``P = m`` models, ``(C+, C-) = (c, C)`` for ``c`` in the grid. True:
        ``P = 2 m + 1`` models, those, then ``(C, C)``, then ``(C, c)`` for ``c``
        in the reversed grid, so the path runs from "everything negative" to
        "everything positive".
    hard_fixed_side : bool, default=False
        Diagonal scheme only: the class whose penalty is held at ``C`` gets no
        diagonal shift (``epsilon = 0``: the hard quadratic margin) and the hinge
        bound ``C`` instead of the shift ``1 / (2 C)``; the swept class keeps
        ``1 / (2 c)``.
    kernel, gamma, degree, coef0
        As in :class:`sklearn.svm.SVC`.
    tol : float, default=1e-6
        Relative duality gap at which the solver stops.
    max_iter : int, default=20000
    device : str, default="cpu"
    dtype : {"float64", "float32"}, default="float64"

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    C_pos_, C_neg_ : ndarray of shape (P,)
        Penalties of every model of the path.
    n_fixed_at_bound_ : ndarray of shape (P,) of int
        Rows of the class held at ``C`` whose multiplier reaches ``C`` (relative
        tolerance 1e-6). Zero: the bound ``C`` is inactive and the model is also
        the one with that class's penalty infinite (its hard margin). Always zero
        in the diagonal scheme without ``hard_fixed_side`` (no upper bound there).
    alpha_ : ndarray of shape (P, n)
        Dual solution of every sweep model.
    intercept_ : ndarray of shape (P,)
    gamma_ : float
        Kernel width used (``gamma="scale"`` resolved on the training rows).
    n_iter_, duality_gap_ : ndarray of shape (P,)
        Solver diagnostics.
    fit_time_ : float
        Wall time of the batched solve (seconds).
    status_ : ndarray of shape (P,) of str
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    >>> sw = SensitivitySweepSVC(C_pos_grid=[0.01, 1.0, 100.0]).fit(X, y)
    >>> sw.decision_function(X).shape
    (3, 60)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **SVM_PARAMETER_CONSTRAINTS,
        "scheme": [StrOptions(set(SCHEMES))],
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "C_pos_grid": ["array-like", None],
        "mirror": ["boolean"],
        "hard_fixed_side": ["boolean"],
    }

    def __init__(
        self,
        scheme: str = "box",
        C: float = 1.0,
        C_pos_grid: Any = None,
        mirror: bool = False,
        hard_fixed_side: bool = False,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        tol: float = 1e-6,
        max_iter: int = 20000,
        device: str = "cpu",
        dtype: str = "float64",
    ) -> None:
        self.scheme = scheme
        self.C = C
        self.C_pos_grid = C_pos_grid
        self.mirror = mirror
        self.hard_fixed_side = hard_fixed_side
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype

    def _grid(self) -> np.ndarray:
        if self.C_pos_grid is None:
            return default_c_pos_grid(self.C)
        grid = np.atleast_1d(np.asarray(self.C_pos_grid, dtype=np.float64))
        if grid.ndim != 1 or grid.size == 0:
            raise ValueError(
                f"C_pos_grid must be a non-empty 1-D array; got shape {grid.shape}"
            )
        if not np.isfinite(grid).all() or (grid <= 0).any():
            raise ValueError(
                f"C_pos_grid must be finite and > 0; got {grid[:5].tolist()}"
            )
        return grid

    def path(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(C+, C-)`` of every model and which class is held at ``C`` (shape (P,))."""
        grid = self._grid()
        C = float(self.C)
        fixed = np.full_like(grid, C)
        if not self.mirror:
            m = grid.size
            return grid, fixed, np.zeros(m, bool), np.ones(m, bool)
        c_pos = np.concatenate([grid, [C], fixed])
        c_neg = np.concatenate([fixed, [C], grid[::-1]])
        m = grid.size
        fixed_pos = np.concatenate([np.zeros(m, bool), [True], np.ones(m, bool)])
        fixed_neg = np.concatenate([np.ones(m, bool), [True], np.zeros(m, bool)])
        return c_pos, c_neg, fixed_pos, fixed_neg

    def build_problem(self, X: np.ndarray, y_pm: np.ndarray) -> BatchedSvmProblem:
        """The batch of the sweep on ``(X, y_pm)``: one problem per model of the path."""
        if self.hard_fixed_side and self.scheme != "diagonal":
            raise ValueError(
                "hard_fixed_side applies to scheme='diagonal' only; in the box scheme "
                "a large C already makes the fixed class hard"
            )
        kw: dict[str, Any] = dict(
            kernel=self.kernel,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            device=self._device(),
            dtype=self._dtype(),
        )
        C_neg = float(self.C)
        if not (self.mirror or self.hard_fixed_side):
            grid = self._grid()
            if self.scheme == "box":
                return BatchedSvmProblem.from_class_weights(
                    X, y_pm, C_neg, np.ones_like(grid), grid / C_neg, **kw
                )
            return BatchedSvmProblem.from_diag_shift(
                X, y_pm, np.full_like(grid, 0.5 / C_neg), 0.5 / grid, **kw
            )
        c_pos, c_neg, fixed_pos, fixed_neg = self.path()
        pos = np.asarray(y_pm)[None, :] > 0
        c_row = np.where(pos, c_pos[:, None], c_neg[:, None])  # (P, n)
        index = {"z_idx": np.arange(c_pos.size)}
        if self.scheme == "box":
            return BatchedSvmProblem.from_bounds(X, y_pm, c_row, index=index, **kw)
        U = np.full_like(c_row, math.inf)
        S = 0.5 / c_row
        if self.hard_fixed_side:
            hard = np.where(pos, fixed_pos[:, None], fixed_neg[:, None])
            U = np.where(hard, c_row, U)
            S = np.where(hard, 0.0, S)
        return BatchedSvmProblem.from_bounds(X, y_pm, U, S=S, index=index, **kw)

    def solver(self) -> BoxQpSolver:
        """The configured batched solver."""
        return BoxQpSolver(
            SolverConfig(tol=float(self.tol), max_iter=int(self.max_iter))
        )

    def _solve(self, problem: BatchedSvmProblem, m: int) -> BatchedSvmSolution:
        """Solve the batch; a mirrored path as its two halves, one batch each.

        The halves hold opposite classes fixed; batched together, the active-set
        warm starts pair problems across halves and need tens of times more
        iterations (measured: 24 s vs 2 s on a 243-row fold), so each half is
        its own batch sharing the kernel.
        """
        solver = self.solver()
        if not self.mirror:
            return solver(problem)
        parts = [
            solver(problem.select(slice(0, m))),
            solver(problem.select(slice(m, None))),
        ]
        return _cat_solutions(parts)

    def fit(self, X: Any, y: Any) -> SensitivitySweepSVC:
        """Solve the whole ``C+`` sweep on ``(X, y)`` as one batch."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        self.C_pos_, self.C_neg_, fixed_pos, fixed_neg = self.path()
        problem = self.build_problem(X, y_pm)
        start = time.perf_counter()
        solution = self._solve(problem, self._grid().size)
        if problem.device.type == "cuda":
            torch.cuda.synchronize(problem.device)
        self.fit_time_ = time.perf_counter() - start
        statuses = solution.statuses()
        warn_if_not_converged(statuses, type(self).__name__, self.max_iter, self.tol)
        # numpy only from here: a pickle of a CUDA fit loads on a CPU machine
        self._store(problem, solution)
        fixed_rows = np.where(y_pm[None, :] > 0, fixed_pos[:, None], fixed_neg[:, None])
        at_bound = self.alpha_ >= (1.0 - 1e-6) * float(self.C)
        if self.scheme == "diagonal" and not self.hard_fixed_side:
            at_bound[:] = False  # the fixed class has no upper bound (U = inf)
        self.n_fixed_at_bound_ = (fixed_rows & at_bound).sum(1).astype(int)
        self.intercept_ = self._b.copy()
        self.n_iter_ = self._n_iter
        self.duality_gap_ = self._gap
        self.status_ = np.array([s.value for s in statuses], dtype=object)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of every sweep model: array of shape (P, t)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        with torch.inference_mode():
            return self._scores(X)

    def predict(self, X: Any) -> np.ndarray:
        """Labels of every sweep model: array of shape (P, t)."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]

    def roc(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """FPR and TPR of every sweep model on ``(X, y)``: two arrays of shape (P,)."""
        f = self.decision_function(X)
        y_pm = np.where(np.asarray(y) == self.classes_[1], 1, -1)
        return roc_points(y_pm, np.where(f > 0, 1, -1))


def _cat_solutions(parts: list[BatchedSvmSolution]) -> BatchedSvmSolution:
    """Concatenate solutions along the problem axis."""
    kw = {
        f.name: (
            None
            if getattr(parts[0], f.name) is None
            else torch.cat([getattr(p, f.name) for p in parts])
        )
        for f in fields(BatchedSvmSolution)
    }
    return BatchedSvmSolution(**kw)


def fit_one_at_a_time(
    estimator: SensitivitySweepSVC, X: Any, y: Any, backend: str = "torchsvm"
) -> tuple[np.ndarray, float]:
    """Fit the sweep's models one by one (the baseline the batch is timed against).

    Parameters
    ----------
    estimator : SensitivitySweepSVC
        Its parameters define the sweep (it is not modified).
    X, y : array-like
        Training data.
    backend : {"torchsvm", "sklearn"}
        ``"torchsvm"``: the same solver, one single-problem batch per ``C+`` (each
        fit factorises the kernel itself, as an independent fit would);
        ``"sklearn"``: :class:`sklearn.svm.SVC` with ``class_weight`` (box scheme only).

    Returns
    -------
    scores_fn : ndarray of shape (P, n)
        Decision values of each model on the training rows (for consistency checks).
    seconds : float
        Total wall time of the ``P`` fits.
    """
    est = clone(estimator)
    est._validate_params()
    if est.mirror or est.hard_fixed_side:
        raise ValueError(
            "fit_one_at_a_time times the plain C+ sweep; set mirror=False and "
            "hard_fixed_side=False"
        )
    Xn = np.asarray(X, dtype=np.float64)
    classes, y_pm = encode_binary(np.asarray(y), type(est).__name__)
    grid = est._grid()
    out = np.empty((grid.size, Xn.shape[0]))
    if backend == "sklearn":
        if est.scheme != "box":
            raise ValueError(
                "backend='sklearn' supports scheme='box' only (no S1b in libsvm)"
            )
        from sklearn.svm import SVC

        start = time.perf_counter()
        for p, c_pos in enumerate(grid):
            svc = SVC(
                C=float(est.C),
                kernel=est.kernel,
                gamma=est.gamma,
                degree=est.degree,
                coef0=est.coef0,
                tol=1e-3,
                class_weight={-1: 1.0, 1: c_pos / est.C},
            )
            out[p] = svc.fit(Xn, y_pm).decision_function(Xn)
        return out, time.perf_counter() - start
    if backend != "torchsvm":
        raise ValueError(f"backend must be 'torchsvm' or 'sklearn'; got {backend!r}")
    start = time.perf_counter()
    for p, c_pos in enumerate(grid):
        single = clone(est).set_params(C_pos_grid=[c_pos]).fit(Xn, y_pm)
        out[p] = single.decision_function(Xn)[0]
    return out, time.perf_counter() - start


@dataclass(frozen=True)
class RocSweepResult:
    """ROC points of a ``C+`` sweep pooled over cross-validation folds.

    Attributes
    ----------
    scheme : str
    C_pos : ndarray of shape (P,)
    fpr, tpr : ndarray of shape (P,)
        Pooled over folds (total false / true positives over total negatives / positives).
    fit_seconds : list of float
        Batched solve time of each fold.
    statuses : dict of str to int
        Solver status counts over all folds.
    """

    scheme: str
    C_pos: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    fit_seconds: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def auc(self) -> float:
        """Area under the sweep's ROC curve."""
        return sweep_auc(self.fpr, self.tpr)


def roc_sweep_cv(
    estimator: SensitivitySweepSVC,
    X: np.ndarray,
    y: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    preprocessor: Any = None,
) -> RocSweepResult:
    """ROC points of the sweep on held-out folds (one batch per fold).

    Parameters
    ----------
    estimator : SensitivitySweepSVC
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    folds : sequence of (train_idx, test_idx)
    preprocessor : transformer or None
        Cloned and fitted on each training part only (e.g. ``StandardScaler()``).
    """
    y_pm = np.where(np.asarray(y) > 0, 1, -1)
    fp = tp = None
    n_pos = n_neg = 0
    seconds: list[float] = []
    statuses: dict[str, int] = {}
    grid = np.array([])
    for train, test in folds:
        Xtr, Xte = X[train], X[test]
        if preprocessor is not None:
            pre = clone(preprocessor).fit(Xtr)
            Xtr, Xte = pre.transform(Xtr), pre.transform(Xte)
        est = clone(estimator).fit(Xtr, y_pm[train])
        grid = est.C_pos_
        hits = est.decision_function(Xte) > 0
        yt = y_pm[test]
        fp_f, tp_f = hits[:, yt < 0].sum(1), hits[:, yt > 0].sum(1)
        fp = fp_f if fp is None else fp + fp_f
        tp = tp_f if tp is None else tp + tp_f
        n_pos += int((yt > 0).sum())
        n_neg += int((yt < 0).sum())
        seconds.append(est.fit_time_)
        for s in est.status_:
            statuses[str(s)] = statuses.get(str(s), 0) + 1
    if fp is None or tp is None or n_pos == 0 or n_neg == 0:
        raise DataError("roc_sweep_cv needs at least one fold with both classes")
    return RocSweepResult(
        scheme=estimator.scheme,
        C_pos=grid,
        fpr=fp / n_neg,
        tpr=tp / n_pos,
        fit_seconds=seconds,
        statuses=statuses,
    )


class RocSweepDisplay:
    """ROC curve of a penalty sweep, in scikit-learn's display style.

    Parameters
    ----------
    fpr, tpr : ndarray of shape (P,)
        One point per sweep model.
    roc_auc : float or None
        Area under the curve (computed when None).
    name : str or None
        Legend label.

    Attributes
    ----------
    line_ : matplotlib Line2D
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> disp = RocSweepDisplay(fpr=[0.1, 0.3], tpr=[0.5, 0.9], name="box").plot()
    >>> round(disp.roc_auc, 3)
    0.83
    """

    def __init__(
        self,
        *,
        fpr: Any,
        tpr: Any,
        roc_auc: float | None = None,
        name: str | None = None,
    ) -> None:
        self.fpr = np.asarray(fpr, dtype=np.float64)
        self.tpr = np.asarray(tpr, dtype=np.float64)
        if self.fpr.shape != self.tpr.shape or self.fpr.ndim != 1:
            raise ValueError(
                f"fpr and tpr must be 1-D of equal length; got {self.fpr.shape}, {self.tpr.shape}"
            )
        self.roc_auc = (
            sweep_auc(self.fpr, self.tpr) if roc_auc is None else float(roc_auc)
        )
        self.name = name

    def plot(
        self,
        ax: Any = None,
        *,
        name: str | None = None,
        plot_chance_level: bool = False,
        **kwargs: Any,
    ) -> RocSweepDisplay:
        """Draw the curve (markers at the sweep points) on ``ax`` (new axes if None)."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        label = name if name is not None else self.name
        label = (
            f"{label} (AUC = {self.roc_auc:.3f})"
            if label
            else f"AUC = {self.roc_auc:.3f}"
        )
        x, yv = _curve(self.fpr, self.tpr)
        style = {"marker": ".", "label": label, **kwargs}
        (self.line_,) = ax.plot(x, yv, **style)
        if plot_chance_level:
            ax.plot([0, 1], [0, 1], "k:", lw=0.8, label="chance")
        ax.set(
            xlabel="False positive rate (1 - specificity)",
            ylabel="True positive rate (sensitivity)",
            xlim=(-0.01, 1.01),
            ylim=(-0.01, 1.01),
            aspect="equal",
        )
        ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, ax.figure
        return self

    @classmethod
    def from_estimator(
        cls,
        estimator: SensitivitySweepSVC,
        X: Any,
        y: Any,
        *,
        name: str | None = None,
        ax: Any = None,
        **kwargs: Any,
    ) -> RocSweepDisplay:
        """Curve of a fitted sweep on ``(X, y)``."""
        fpr, tpr = estimator.roc(X, y)
        name = estimator.scheme if name is None else name
        return cls(fpr=fpr, tpr=tpr, name=name).plot(ax=ax, **kwargs)

    @classmethod
    def from_predictions(
        cls,
        y_true: Any,
        y_score: Any,
        *,
        name: str | None = None,
        ax: Any = None,
        **kwargs: Any,
    ) -> RocSweepDisplay:
        """Curve from sweep scores ``y_score`` of shape (P, t), thresholded at 0."""
        y_pm = np.where(np.asarray(y_true) > 0, 1, -1)
        fpr, tpr = roc_points(y_pm, np.where(np.asarray(y_score) > 0, 1, -1))
        return cls(fpr=fpr, tpr=tpr, name=name).plot(ax=ax, **kwargs)

    @classmethod
    def from_result(
        cls,
        result: RocSweepResult,
        *,
        name: str | None = None,
        ax: Any = None,
        **kwargs: Any,
    ) -> RocSweepDisplay:
        """Curve of a cross-validated :class:`RocSweepResult`."""
        name = result.scheme if name is None else name
        return cls(fpr=result.fpr, tpr=result.tpr, name=name).plot(ax=ax, **kwargs)


def status_counts(solution: BatchedSvmSolution) -> dict[str, int]:
    """Counts of each :class:`~torchsvm.types.SolveStatus` in a solution."""
    out: dict[str, int] = {}
    for code in solution.status.tolist():
        key = SolveStatus.from_code(int(code)).value
        out[key] = out.get(key, 0) + 1
    return out
