"""Constrained SVM estimators (SPEC S5; thesis ch. 2) and the S5c bootstrap ensemble.

:class:`ConstrainedSVC` returns the widest-margin classifier whose true-positive rate
(and/or true-negative rate, accuracy) on the anchor set ``J`` reaches a floor, with a
Hoeffding margin so that the floor holds with probability ``1 - alpha`` out of sample.
The MIQP is solved exactly by outer approximation over HiGHS MILPs
(:mod:`torchsvm.mip.csvm`), warm-started by the S1 solution with a sliding intercept.

:class:`SlidingInterceptSVC` is the thesis' "sliding b" baseline: S1 on ``I u J``, the
multipliers kept, the intercept slid until the same floors (Hoeffding margin included)
hold on ``J``.

Floors above 1 (a Hoeffding margin on few anchor rows) are capped at 1 with a
:class:`~torchsvm.problems.csvm.FloorCappedWarning` stating the guarantee imposed
(:mod:`torchsvm.problems.csvm`).

Conventions (``penalty``): ``"thesis"`` (the default of both estimators) is the thesis'
``||w||^2 + C+ sum_{I+} xi + C- sum_{I-} xi`` with ``C+ = C / |I+|`` and
``C- = C / |I-|`` (so ``C`` is *not* libsvm's ``C``: the S1 classifier with the same
slack costs is libsvm's with ``C_i = C_{y_i} / 2``); ``"libsvm"`` reads ``C`` as S1 does
(``0.5 ||w||^2 + C sum xi``, :class:`sklearn.svm.SVC`'s ``C``). The positive class is
``classes_[1]``.

:func:`fit_s5c_ensemble` fits the training-set version S5c on bootstrap replicates (the
Ctrl2 building block of SPEC S2), optionally in parallel processes. It reads ``C`` as S1
does (``penalty="libsvm"``), so that with a floor that does not bind each replicate is
the S1 fit of the bootstrap SVM with the same ``C`` and the same draw.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from torchsvm.data.resample import split_anchor
from torchsvm.estimators._base import (
    BaseEstimator,
    BinaryClassifierMixin,
    Interval,
    StrOptions,
    check_binary_sample_weight,
    check_is_fitted,
    encode_binary,
    validate_data,
)
from torchsvm.exceptions import DataError, InfeasibleProblemError
from torchsvm.kernels import compute_kernel_np, resolve_gamma
from torchsvm.mip.csvm import CsvmSolution, fit_s1, solve_csvm
from torchsvm.mip.model import MipConfig
from torchsvm.mip.warm_start import (
    S1Fit,
    s1_bounds,
    scores_without_intercept,
    slide_intercept,
)
from torchsvm.problems.csvm import PENALTIES, CsvmProblem
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = [
    "ConstrainedSVC",
    "S5cEnsemble",
    "SlidingInterceptSVC",
    "fit_s5c_ensemble",
    "s1_if_optimal",
]


def _rates(
    y_pm: np.ndarray, f: np.ndarray, weights: np.ndarray | None = None
) -> dict[str, float]:
    """Weighted TPR, TNR and accuracy of the scores ``f`` (``f > 0`` is positive)."""
    w = np.ones_like(f) if weights is None else np.asarray(weights, dtype=np.float64)
    pred = np.where(f > 0, 1.0, -1.0)
    pos, neg = y_pm > 0, y_pm < 0
    nan = float("nan")
    return {
        "tpr": float(w[pos] @ (pred[pos] > 0) / w[pos].sum()) if pos.any() else nan,
        "tnr": float(w[neg] @ (pred[neg] < 0) / w[neg].sum()) if neg.any() else nan,
        "accuracy": float(w @ (pred == y_pm) / w.sum()),
    }


_FLOOR = [Interval(Real, 0.0, 1.0, closed="right"), None]


class _FloorClassifier(BinaryClassifierMixin, BaseEstimator):
    """Shared data handling of the anchor-floor classifiers (SPEC S5)."""

    def _build_problem(
        self, X: Any, y: Any, anchor_mask: Any, sample_weight: Any = None
    ) -> CsvmProblem:
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(np.asarray(y), type(self).__name__)
        if sample_weight is not None:
            sample_weight = check_binary_sample_weight(
                sample_weight, X, y_pm, self.classes_, type(self).__name__
            )
        if anchor_mask is None:
            mask = split_anchor(y_pm, self.anchor_fraction, self.random_state)
        else:
            mask = np.asarray(anchor_mask, dtype=bool).ravel()
            if mask.shape != (X.shape[0],):
                raise DataError(
                    f"anchor_mask must have shape ({X.shape[0]},), got {mask.shape}"
                )
        self.anchor_mask_ = mask
        self.gamma_ = resolve_gamma(self.gamma, X, sample_weight=sample_weight)
        return CsvmProblem.from_data(
            X,
            y_pm,
            mask,
            C=self.C,
            kernel=self.kernel,
            gamma=self.gamma_,
            min_tpr=self.min_tpr,
            min_tnr=self.min_tnr,
            min_accuracy=self.min_accuracy,
            hoeffding_alpha=self.hoeffding_alpha,
            big_m=getattr(self, "big_m", 100.0),
            big_m_dual=getattr(self, "big_m", 100.0),
            sample_weight=sample_weight,
            penalty=self.penalty,
        )

    def _store_floors(self, problem: CsvmProblem) -> None:
        self.floors_ = {f.rate: f.floor for f in problem.floors}
        self.capped_floors_ = {
            f.rate: f.uncapped for f in problem.floors if f.uncapped is not None
        }

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores ``f(x)`` of shape (m,); positive means ``classes_[1]``."""
        check_is_fitted(self, "intercept_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if hasattr(self, "coef_"):
            return X @ self.coef_[0] + self.intercept_[0]
        if self.dual_coef_.size == 0:
            return np.full(X.shape[0], self.intercept_[0])
        K = compute_kernel_np(
            X, self.support_vectors_, kernel=self.kernel, gamma=self.gamma_
        )
        return K @ self.dual_coef_[0] + self.intercept_[0]

    def predict(self, X: Any) -> np.ndarray:
        """Class labels of shape (m,)."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]


class ConstrainedSVC(_FloorClassifier):
    """SVM with performance floors on an anchor set (SPEC S5), solved exactly.

    Parameters
    ----------
    C : float, default=1.0
        Penalty, read according to ``penalty``.
    kernel : {"linear", "rbf"}, default="linear"
        Linear kernel: primal form; RBF: partial dual form.
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width, as in :class:`sklearn.svm.SVC` (computed on all fitted rows, weighted
        by ``sample_weight``: :func:`torchsvm.kernels.resolve_gamma`).
    min_tpr, min_tnr, min_accuracy : float or None
        Targets ``p0`` on ``J+``, ``J-`` and ``J``; at least one is required.
    hoeffding_alpha : float or None, default=0.05
        Level of the Hoeffding margin; None imposes ``p0`` itself on ``J``. A sample
        floor above 1 is capped at 1 (every anchor row of that class must be met) with a
        :class:`~torchsvm.problems.csvm.FloorCappedWarning`.
    anchor_fraction : float, default=0.5
        Share of each class put in ``J`` when ``fit`` gets no ``anchor_mask``.
    big_m : float, default=100.0
        ``M1`` of the anchor rows (and ``M2`` of the anchor multipliers).
    time_limit : float, default=300.0
        Seconds for the whole MIQP.
    mip_rel_gap : float, default=1e-4
        Relative gap at which the outer approximation stops.
    random_state : int or None, default=0
        Seed of the default anchor split.
    form : {"auto", "primal", "dual"}, default="auto"
        MIQP form (``auto``: primal for linear, dual for RBF).
    penalty : {"thesis", "libsvm"}, default="thesis"
        ``"thesis"``: ``C+- = C / |I+-|`` in ``||w||^2 + sum C_y xi``; ``"libsvm"``:
        ``C`` as in :class:`sklearn.svm.SVC` (``0.5 ||w||^2 + C sum xi``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, d)
        ``w`` (linear kernel).
    intercept_ : ndarray of shape (1,)
        ``b``.
    dual_coef_ : ndarray of shape (1, n_SV)
        ``a_s y_s`` (dual form).
    support_vectors_ : ndarray of shape (n_SV, d)
        Rows with non-zero multiplier (dual form).
    z_ : ndarray of shape (n_floor_rows,), bool
        Anchor rows (floor rows) forced onto the right side of the margin.
    form_ : str
        MIQP form used, ``"primal"`` or ``"dual"``.
    anchor_mask_ : ndarray of shape (n,), bool
        The anchor set ``J`` used.
    gamma_ : float
        Resolved RBF width.
    floors_ : dict
        ``{rate: imposed sample floor min(1, p*0)}``.
    capped_floors_ : dict
        ``{rate: uncapped p*0}`` for the floors that were capped at 1.
    status_ : str
        ``"optimal"`` or ``"time_limit"``.
    mip_gap_ : float
        Proven relative gap.
    objective_ : float
        MIQP objective (thesis scale).
    achieved_rates_ : dict
        TPR, TNR and accuracy on the anchor set.
    solve_time_ : float
        Seconds of the MIQP call (start heuristics and outer approximation; this is
        what ``time_limit`` bounds).
    n_iter_ : int
        Outer-approximation rounds.
    start_feasible_ : bool or None
        Whether the sliding-b warm start was feasible.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0)
    >>> clf = ConstrainedSVC(min_tpr=0.8, hoeffding_alpha=None).fit(X, y)
    >>> clf.achieved_rates_["tpr"] >= 0.8
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"linear", "rbf"})],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(Real, 0.0, None, closed="neither"),
        ],
        "min_tpr": _FLOOR,
        "min_tnr": _FLOOR,
        "min_accuracy": _FLOOR,
        "hoeffding_alpha": [Interval(Real, 0.0, 1.0, closed="neither"), None],
        "anchor_fraction": [Interval(Real, 0.0, 1.0, closed="neither")],
        "big_m": [Interval(Real, 0.0, None, closed="neither")],
        "time_limit": [Interval(Real, 0.0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0.0, None, closed="left")],
        "random_state": ["random_state"],
        "form": [StrOptions({"auto", "primal", "dual"})],
        "penalty": [StrOptions(set(PENALTIES))],
    }

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "linear",
        gamma: float | str = "scale",
        min_tpr: float | None = 0.95,
        min_tnr: float | None = None,
        min_accuracy: float | None = None,
        hoeffding_alpha: float | None = 0.05,
        anchor_fraction: float = 0.5,
        big_m: float = 100.0,
        time_limit: float = 300.0,
        mip_rel_gap: float = 1e-4,
        random_state: int | None = 0,
        form: str = "auto",
        penalty: str = "thesis",
    ) -> None:
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.min_tpr = min_tpr
        self.min_tnr = min_tnr
        self.min_accuracy = min_accuracy
        self.hoeffding_alpha = hoeffding_alpha
        self.anchor_fraction = anchor_fraction
        self.big_m = big_m
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.random_state = random_state
        self.form = form
        self.penalty = penalty

    # ------------------------------------------------------------------ fit
    def fit(
        self, X: Any, y: Any, anchor_mask: Any = None, sample_weight: Any = None
    ) -> ConstrainedSVC:
        """Fit on ``(X, y)``; ``anchor_mask`` (bool, shape (n,)) marks ``J``.

        ``sample_weight`` (shape (n,), >= 0; e.g. k-means cluster sizes) scales the slack
        costs on ``I`` and the counts of the floors on ``J``.

        Raises
        ------
        InfeasibleProblemError
            Naming the floors that no classifier meets together.

        Warns
        -----
        FloorCappedWarning
            A Hoeffding floor above 1 was capped at 1.
        """
        problem = self._build_problem(X, y, anchor_mask, sample_weight)
        sol = self._solve(problem)
        self._store_results(problem, sol)
        return self

    def _solve(self, problem: CsvmProblem) -> CsvmSolution:
        config = MipConfig(
            time_limit=float(self.time_limit), mip_rel_gap=float(self.mip_rel_gap)
        )
        return solve_csvm(problem, config, form=self.form)

    def _store_results(self, problem: CsvmProblem, sol: CsvmSolution) -> None:
        # NOTE: fitted attributes are numpy arrays and Python scalars only (pickles and
        # skops files hold no torchsvm types); the solution object is not kept.
        self.intercept_ = np.array([sol.intercept])
        if sol.coef is not None:
            self.coef_ = sol.coef[None, :].copy()
        if sol.dual_coef is not None and sol.support_X is not None:
            self.dual_coef_ = sol.dual_coef[None, :].copy()
            self.support_vectors_ = sol.support_X.copy()
        self.z_ = np.asarray(sol.z, dtype=bool).copy()
        self.form_ = str(sol.form)
        self._store_floors(problem)
        self.status_ = sol.status.value
        self.mip_gap_ = float(sol.mip_gap)
        self.objective_ = float(sol.objective)
        self.solve_time_ = float(sol.runtime)
        self.n_iter_ = int(sol.n_iter)
        self.start_feasible_ = (
            None if sol.start_feasible is None else bool(sol.start_feasible)
        )
        J = problem.floor_idx
        self.achieved_rates_ = _rates(
            problem.y[J], sol.decision_function(problem.X[J]), problem.weights[J]
        )


class SlidingInterceptSVC(_FloorClassifier):
    """The thesis' "sliding b" baseline of the constrained SVM (SPEC S5, ch. 2).

    S1 is fitted on ``I u J`` (all rows, anchors included) with the slack costs of the
    CSVM (``penalty``); its multipliers are kept and only the intercept ``b`` is moved,
    to the value closest to S1's at which every floor holds on ``J`` (a row counts when
    it is classified right, ``y f >= 0``). The floors are those of
    :class:`ConstrainedSVC`: ``p0`` plus the Hoeffding margin, capped at 1. With a
    floor on one class a feasible shift always exists; floors on both classes that no
    shift meets raise :class:`~torchsvm.exceptions.InfeasibleProblemError`.

    The S1 fit and the slide are those of the CSVM warm start
    (:func:`torchsvm.mip.csvm.fit_s1`,
    :func:`torchsvm.mip.warm_start.slide_intercept` with a margin of ``1e-9``, so that
    every counted row is classified right by :meth:`predict`).

    Parameters
    ----------
    C : float, default=1.0
        Penalty, read according to ``penalty``.
    kernel : {"linear", "rbf"}, default="linear"
        Kernel of S1.
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width (computed on all fitted rows).
    min_tpr, min_tnr, min_accuracy : float or None
        Targets ``p0`` on ``J+``, ``J-`` and ``J``; at least one is required.
    hoeffding_alpha : float or None, default=0.05
        Level of the Hoeffding margin; None slides to ``p0`` itself.
    anchor_fraction : float, default=0.5
        Share of each class put in ``J`` when ``fit`` gets no ``anchor_mask``.
    random_state : int or None, default=0
        Seed of the default anchor split.
    penalty : {"thesis", "libsvm"}, default="thesis"
        ``"libsvm"`` makes S1 :class:`sklearn.svm.SVC` with this ``C`` on ``I u J``.
    s1_solver : {"batched", "libsvm"}, default="batched"
        Who fits S1: the package's batched solver (:func:`torchsvm.mip.csvm.fit_s1`) or
        scikit-learn's libsvm (:class:`sklearn.svm.SVC` with the same per-row bounds,
        ``tol=1e-6``), faster for one large RBF problem on a CPU. Both solve the same
        convex problem; they agree up to solver tolerance.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    intercept_ : ndarray of shape (1,)
        Slid ``b``.
    s1_intercept_ : float
        S1's ``b`` before the slide.
    dual_coef_ : ndarray of shape (1, n_SV)
        S1's ``a_s y_s``.
    support_vectors_ : ndarray of shape (n_SV, d)
        S1's support vectors.
    coef_ : ndarray of shape (1, d)
        ``w`` (linear kernel).
    anchor_mask_ : ndarray of shape (n,), bool
        The anchor set ``J`` used.
    gamma_ : float
        Resolved RBF width.
    floors_, capped_floors_ : dict
        As in :class:`ConstrainedSVC`.
    achieved_rates_ : dict
        TPR, TNR and accuracy on the anchor set after the slide.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = (X[:, 0] + rng.normal(size=80) > 0)
    >>> clf = SlidingInterceptSVC(min_tpr=0.9, hoeffding_alpha=None).fit(X, y)
    >>> bool(clf.achieved_rates_["tpr"] >= 0.9)
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        key: ConstrainedSVC._parameter_constraints[key]
        for key in (
            "C",
            "kernel",
            "gamma",
            "min_tpr",
            "min_tnr",
            "min_accuracy",
            "hoeffding_alpha",
            "anchor_fraction",
            "random_state",
            "penalty",
        )
    } | {"s1_solver": [StrOptions({"batched", "libsvm"})]}

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "linear",
        gamma: float | str = "scale",
        min_tpr: float | None = 0.95,
        min_tnr: float | None = None,
        min_accuracy: float | None = None,
        hoeffding_alpha: float | None = 0.05,
        anchor_fraction: float = 0.5,
        random_state: int | None = 0,
        penalty: str = "thesis",
        s1_solver: str = "batched",
    ) -> None:
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.min_tpr = min_tpr
        self.min_tnr = min_tnr
        self.min_accuracy = min_accuracy
        self.hoeffding_alpha = hoeffding_alpha
        self.anchor_fraction = anchor_fraction
        self.random_state = random_state
        self.penalty = penalty
        self.s1_solver = s1_solver

    def fit(
        self, X: Any, y: Any, anchor_mask: Any = None, sample_weight: Any = None
    ) -> SlidingInterceptSVC:
        """Fit S1 on all rows and slide its intercept to the floors on ``J``.

        ``anchor_mask`` (bool, shape (n,)) marks ``J``; ``sample_weight`` (>= 0) scales
        the slack costs and the floors' counts, as in :class:`ConstrainedSVC`.

        Raises
        ------
        InfeasibleProblemError
            No intercept meets the floors together (floors on both classes).

        Warns
        -----
        FloorCappedWarning
            A Hoeffding floor above 1 was capped at 1.
        """
        problem = self._build_problem(X, y, anchor_mask, sample_weight)
        s1 = fit_s1(problem) if self.s1_solver == "batched" else _fit_s1_libsvm(problem)
        J = problem.floor_idx
        g = scores_without_intercept(problem, s1, J)
        # NOTE: a margin a hair above 0 so that a counted row is classified right by
        # predict (f > 0 is positive): with margin 0 a score of exactly 0 would count
        # for both classes.
        tiny = 1e-9 * (1.0 + float(np.abs(g).max(initial=0.0)))
        slide = slide_intercept(problem, g, s1.intercept, margin=tiny)
        if slide.intercept is None:
            raise InfeasibleProblemError(
                f"no intercept of the S1 classifier meets {problem.describe_floors()} "
                "together on the anchor rows (the constrained SVM, which also moves "
                "the multipliers, may still)"
            )
        sv = np.flatnonzero(s1.dual_coef)
        self.s1_intercept_ = float(s1.intercept)
        self.intercept_ = np.array([slide.intercept])
        self.dual_coef_ = s1.dual_coef[sv][None, :].copy()
        self.support_vectors_ = problem.X[sv].copy()
        if problem.kernel == "linear":
            self.coef_ = self.dual_coef_ @ self.support_vectors_
        self._store_floors(problem)
        self.achieved_rates_ = _rates(
            problem.y[J], g + slide.intercept, problem.weights[J]
        )
        return self


def _fit_s1_libsvm(problem: CsvmProblem) -> S1Fit:
    """S1 of the CSVM warm start (bounds ``s1_bounds``) fitted by scikit-learn's libsvm."""
    from sklearn.svm import SVC

    u = s1_bounds(problem)
    keep = np.flatnonzero(u > 0)
    scale = float(u[keep].max())
    svc = SVC(
        C=scale,
        kernel=problem.kernel,
        gamma=float(problem.gamma) if problem.kernel == "rbf" else "scale",
        tol=1e-6,
        cache_size=1000,
    )
    svc.fit(problem.X[keep], problem.y[keep], sample_weight=u[keep] / scale)
    dual = np.zeros(problem.X.shape[0])
    # NOTE: classes_ = [-1, 1], so dual_coef_ is alpha * y and decision > 0 means +1.
    dual[keep[svc.support_]] = np.asarray(svc.dual_coef_).ravel()
    return S1Fit(dual, float(svc.intercept_[0]))


@dataclass(frozen=True)
class S5cEnsemble:
    """Bootstrap ensemble of S5c classifiers (Ctrl2 building block, SPEC S2 / S5c).

    Parameters
    ----------
    solutions : tuple of CsvmSolution
        One per replicate, in order.
    runtimes : ndarray of shape (B,)
        Wall seconds per replicate (including the warm start).
    wall_time : float
        Seconds for the whole batch.
    """

    solutions: tuple[CsvmSolution, ...]
    runtimes: np.ndarray
    wall_time: float

    @property
    def statuses(self) -> list[str]:
        """Status per replicate."""
        return [s.status.value for s in self.solutions]

    @property
    def mip_gaps(self) -> np.ndarray:
        """Proven gap per replicate, shape (B,)."""
        return np.array([s.mip_gap for s in self.solutions])

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of every replicate, shape (B, m)."""
        Xa = np.asarray(X, dtype=np.float64)
        return np.stack([s.decision_function(Xa) for s in self.solutions])

    def predict_proba_positive(self, X: Any) -> np.ndarray:
        """``P(y = +1 | x)`` = share of replicates with ``f > 0`` (ties 1/2), shape (m,)."""
        F = self.decision_function(X)
        return ((F > 0) + 0.5 * (F == 0)).mean(axis=0)

    def stacked(self, X_fit: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The replicates as plain arrays over the rows they were fitted on.

        ``f_b(x) = sum_i dual[b, i] K(X_fit[i], x) + intercept[b]`` (or
        ``x . coef[b] + intercept[b]`` for the linear kernel), the layout of the S1 fits
        of :class:`~torchsvm.estimators.bootstrap.BootstrapProbabilitySVC`, so a caller
        can keep numpy arrays instead of solution objects.

        Parameters
        ----------
        X_fit : array-like of shape (n, d)
            The rows passed to :func:`fit_s5c_ensemble`.

        Returns
        -------
        dual : ndarray of shape (B, n)
            ``a_i y_i`` per replicate (0 off the support; linear fits in the primal
            form have no multipliers and give zeros).
        intercept : ndarray of shape (B,)
        coef : ndarray of shape (B, d) or None
            ``w`` per replicate for the linear kernel, else None.
        """
        Xa = np.ascontiguousarray(X_fit, dtype=np.float64)
        index = {row.tobytes(): i for i, row in enumerate(Xa)}
        B, n = len(self.solutions), Xa.shape[0]
        dual = np.zeros((B, n))
        for b, sol in enumerate(self.solutions):
            if sol.dual_coef is None or sol.support_X is None:
                continue
            for coef, row in zip(sol.dual_coef, sol.support_X, strict=True):
                key = np.ascontiguousarray(row, dtype=np.float64).tobytes()
                if key not in index:
                    raise DataError(
                        "X_fit is not the data the ensemble was fitted on (a support "
                        "vector is not one of its rows)"
                    )
                dual[b, index[key]] += coef
        intercept = np.array([s.intercept for s in self.solutions], dtype=np.float64)
        coef = None
        if all(s.coef is not None for s in self.solutions):
            coef = np.stack(
                [np.asarray(s.coef, dtype=np.float64) for s in self.solutions]
            )
        return dual, intercept, coef


def _fit_one(
    X: np.ndarray,
    y_pm: np.ndarray,
    counts: np.ndarray,
    kwargs: dict[str, Any],
    config: MipConfig,
) -> tuple[CsvmSolution, float]:
    t0 = time.perf_counter()
    problem = CsvmProblem.from_data(
        X,
        y_pm,
        None,
        sample_weight=counts,
        on_training=True,
        penalty="libsvm",
        **kwargs,
    )
    s1 = fit_s1(problem)
    sol = s1_if_optimal(problem, s1, time.perf_counter() - t0)
    if sol is None:
        sol = solve_csvm(problem, config, s1=s1)
    return sol, time.perf_counter() - t0


def s1_if_optimal(
    problem: CsvmProblem, s1: S1Fit, runtime: float, tol: float = 1e-7
) -> CsvmSolution | None:
    """S1 as the S5c optimum when it already meets the floors, else None.

    S5c is S1 on ``I`` plus ``0 <= xi_i <= M (1 - z_i)`` and the floors on ``z``: its
    feasible set lies inside S1's, so an S1 optimum that is feasible for S5c (setting
    ``z_i = 1`` where ``y_i f(x_i) >= 1``, up to ``tol``) is an S5c optimum, with no MIQP
    to solve. This is what makes a non-binding floor cost one S1 fit.
    """
    I = problem.train_idx
    sv = np.flatnonzero(s1.dual_coef)
    g = scores_without_intercept(problem, s1, I)
    margin = problem.y[I] * (g + s1.intercept)
    xi = np.maximum(0.0, 1.0 - margin)
    if xi.max(initial=0.0) > problem.big_m:
        return None
    z = margin >= 1.0 - tol
    pos = {int(r): k for k, r in enumerate(I)}
    w = problem.weights
    for floor in problem.floors:
        members = problem.floor_members(floor)
        cols = np.array([pos[int(r)] for r in members], dtype=np.int64)
        if float(w[members] @ z[cols]) < floor.required - 1e-9:
            return None
    a = s1.dual_coef[sv]
    Xs = problem.X[sv]
    K = compute_kernel_np(Xs, Xs, kernel=problem.kernel, gamma=problem.gamma)
    objective = float(a @ K @ a + problem.cost()[I] @ xi)
    linear = problem.kernel == "linear"
    return CsvmSolution(
        status=SolveStatus.optimal,
        coef=Xs.T @ a if linear else None,
        dual_coef=a.copy(),
        support_X=Xs.copy(),
        intercept=float(s1.intercept),
        z=z,
        objective=objective,
        bound=objective,
        mip_gap=0.0,
        runtime=float(runtime),
        n_iter=0,
        start_feasible=True,
        form="primal" if linear else "dual",
        kernel=problem.kernel,
        gamma=float(problem.gamma),
    )


#: Old private name, kept for importers (torchsvm.estimators.bootstrap).
_s1_if_optimal = s1_if_optimal


def fit_s5c_ensemble(
    X: Any,
    y: Any,
    counts: Any,
    *,
    C: float = 1.0,
    kernel: str = "linear",
    gamma: float = 1.0,
    min_tpr: float | None = 0.95,
    min_tnr: float | None = None,
    hoeffding_alpha: float | None = None,
    big_m: float = 1000.0,
    time_limit: float = 300.0,
    mip_rel_gap: float = 1e-4,
    n_jobs: int | None = 1,
) -> S5cEnsemble:
    """Fit S5c (floors on the training rows themselves) on each bootstrap replicate.

    Replicate ``b`` is S5c on the in-bag rows with weights ``counts[b]``:
    ``min 0.5 ||w||^2 + C sum_i c_i xi_i`` (S1's convention, ``penalty="libsvm"``: the
    same ``C`` as the bootstrap SVM of SPEC S2), floors counted with the same weights
    (``sum_{I+} c_i z_i >= p*0 sum_{I+} c_i``), ``0 <= xi_i <= M (1 - z_i)``, ``M = 1000``.
    A row counts towards a floor when ``y_i f(x_i) >= 1`` (``z_i = 1``), so a floor that
    the S1 fit of the replicate already meets in this sense leaves it unchanged: Ctrl2
    with such a floor is the unconstrained bootstrap SVM. Every replicate first fits S1;
    when S1 meets the floors it is returned as the exact S5c optimum (``n_iter = 0``,
    gap 0) and no MIQP is solved, otherwise S1 warm-starts the outer approximation.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Training rows (already preprocessed).
    y : array-like of shape (n,)
        Labels in {-1, +1}.
    counts : array-like of shape (B, n)
        Bootstrap counts (0 = out of bag), e.g. from
        :func:`torchsvm.data.resample.bootstrap_counts`.
    C, kernel, gamma : float, str, float
        SVM parameters (``C`` as in S1 / :class:`sklearn.svm.SVC`, ``u_i = C c_i``;
        ``gamma`` already resolved).
    min_tpr, min_tnr : float or None
        Floors on the in-bag rows.
    hoeffding_alpha : float or None
        Hoeffding level (None: ``p*0 = p0``).
    big_m : float
        ``M`` of ``xi <= M (1 - z)``.
    time_limit, mip_rel_gap : float
        Per-replicate MIQP limit and relative gap.
    n_jobs : int or None
        Parallel processes (joblib ``loky``); 1 runs in-process.

    Returns
    -------
    S5cEnsemble
        Solutions, per-replicate seconds and the batch wall time.
    """
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64).ravel()
    Cnt = np.asarray(counts, dtype=np.float64)
    if Cnt.ndim != 2 or Cnt.shape[1] != Xa.shape[0]:
        raise DataError(f"counts must have shape (B, {Xa.shape[0]}), got {Cnt.shape}")
    kwargs: dict[str, Any] = dict(
        C=C,
        kernel=kernel,
        gamma=gamma,
        min_tpr=min_tpr,
        min_tnr=min_tnr,
        hoeffding_alpha=hoeffding_alpha,
        big_m=big_m,
    )
    config = MipConfig(time_limit=time_limit, mip_rel_gap=mip_rel_gap)
    t0 = time.perf_counter()
    out: Sequence[tuple[CsvmSolution, float]]
    if n_jobs == 1:
        out = [_fit_one(Xa, ya, c, kwargs, config) for c in Cnt]
    else:
        from joblib import Parallel, delayed

        out = Parallel(n_jobs=n_jobs)(
            delayed(_fit_one)(Xa, ya, c, kwargs, config) for c in Cnt
        )
    wall = time.perf_counter() - t0
    return S5cEnsemble(
        tuple(s for s, _ in out), np.array([t for _, t in out]), float(wall)
    )
