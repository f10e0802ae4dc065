"""Cost-sensitive feature selection estimators (SPEC S6, thesis ch. 4).

:class:`CostSensitiveFeatureSelector` solves (P1) (the cheapest feature set on which a
linear classifier meets the TPR and TNR floors; a HiGHS MILP warm-started from a
linear SVM fitted by the batched solver, on CPU or GPU), then builds the max-margin
classifier on the selected features with the rows ``z`` of (P1) fixed: (P2) the
linear SVM, solved exactly as a HiGHS QP, or (P3) the RBF SVM with the kernel
restricted to the selected features, solved in the dual by the batched box-QP solver
(the hard rows get the dual bound ``M2``; see :mod:`torchsvm.mip.feature_selection`).

:class:`CardinalityConstrainedSVC` is the comparator of SPEC S6: the SVM with at most
``k_max`` features (a convex MIQP solved by outer approximation).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_selection import SelectorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    check_is_fitted,
    validate_data,
)

from torchsvm.estimators._base import (
    BinaryClassifierMixin,
    check_binary_sample_weight,
    encode_binary,
)
from torchsvm.estimators.svc import WeightedSVC
from torchsvm.exceptions import ConvergenceWarning, SolverError
from torchsvm.kernels import resolve_gamma
from torchsvm.mip.feature_selection import (
    FeatureSelectionResult,
    build_selection_milp,
    kernel_upper_bounds,
    solve_cardinality_svm,
    solve_feature_selection,
    solve_sparse_linear_svm,
)
from torchsvm.mip.model import MipConfig, check_feasible
from torchsvm.problems.selection import SelectionProblem

__all__ = ["CardinalityConstrainedSVC", "CostSensitiveFeatureSelector"]


def _positive_rows(
    sample_weight: Any, X: np.ndarray, y_pm: np.ndarray, classes: np.ndarray, name: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows with positive weight and their weights (None when unweighted).

    A zero-weight row adds nothing to the objective or to a weighted rate floor, so it
    is dropped before the MIP (whose problem modules need weights > 0); the result is
    then that of the repeated-rows problem.
    """
    if sample_weight is None:
        return np.ones(X.shape[0], dtype=bool), None
    sw = check_binary_sample_weight(sample_weight, X, y_pm, classes, name)
    keep = sw > 0
    return keep, sw[keep]


class _LinearOnSupport(ClassifierMixin, BaseEstimator):
    """Fixed linear classifier ``f(x) = coef_ . x + intercept_`` on the selected columns.

    Parameters
    ----------
    coef : ndarray of shape (s,)
        Weights of the selected features.
    intercept : float
        Intercept.
    classes : ndarray of shape (2,)
        ``classes[1]`` is predicted where ``f(x) > 0``.
    """

    def __init__(
        self,
        coef: np.ndarray | None = None,
        intercept: float = 0.0,
        classes: np.ndarray | None = None,
    ) -> None:
        self.coef = coef
        self.intercept = intercept
        self.classes = classes

    def fit(self, X: Any = None, y: Any = None) -> _LinearOnSupport:
        """Store the given coefficients (the optimisation happened in (P2))."""
        coef = np.zeros(0) if self.coef is None else np.asarray(self.coef, float)
        self.coef_ = coef[None, :]
        self.intercept_ = np.array([float(self.intercept)])
        self.classes_ = np.asarray([-1, 1] if self.classes is None else self.classes)
        self.n_features_in_ = coef.shape[0]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of shape (t,)."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.n_features_in_)
        return X @ self.coef_[0] + self.intercept_[0]

    def predict(self, X: Any) -> np.ndarray:
        """Labels: ``classes_[1]`` where the score is positive."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]


class CostSensitiveFeatureSelector(BinaryClassifierMixin, SelectorMixin, BaseEstimator):
    """Cheapest feature set meeting TPR / TNR floors, then an SVM on it (SPEC S6).

    Parameters
    ----------
    min_tpr, min_tnr : float, default=0.9
        Targets ``p0`` for the training TPR (on ``classes_[1]``) and TNR.
    hoeffding_alpha : float or None, default=None
        None: floors ``p* = p0``; otherwise ``p* = p0 + sqrt(-log(alpha) / (2 n+-))``.
    feature_costs : array-like of shape (d,) or None, default=None
        Cost of each feature (None: 1 each, i.e. fewest features).
    kernel : {"linear", "rbf"}, default="linear"
        Final classifier: (P2) linear SVM or (P3) RBF SVM on the selected features.
    C : float, default=1.0
        SVM penalty (libsvm convention ``1/2 ||w||^2 + C sum xi``; thesis ``C / 2``).
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width, resolved on all features so that ``K_delta`` is the SPEC's
        ``exp(-gamma sum_k delta_k (x_k - x'_k)^2)``.
    big_m : float, default=100.0
        ``M1 = M2 = M3`` of (P1)-(P3).
    time_limit : float, default=300.0
        Seconds for the MILP (and each QP).
    mip_rel_gap : float, default=1e-4
        Relative gap at which the MILP stops.
    device : str, default="cpu"
        Device of the batched SVM solves (warm start and (P3)).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    support_ : ndarray of shape (d,) of bool
        Selected features (also :meth:`get_support`).
    cost_ : float
        Total cost of the selected features.
    tpr_floor_, tnr_floor_ : float
        Floors imposed in (P1).
    z_ : ndarray of shape (n,) of bool
        Training rows (P1) keeps at margin 1 (False for rows of zero weight, which are
        left out of the MIP: they add nothing to its objective or floors).
    estimator_ : classifier
        SVM on the selected columns (input: ``transform(X)``).
    status_ : str
        MILP status (``"optimal"`` or ``"time_limit"``).
    mip_gap_ : float
        Proven relative gap of the MILP.
    start_feasible_ : bool or None
        Whether the SVM warm start was a feasible MIP start (None: none built).
    selection_ : FeatureSelectionResult
        The (P1) solution used (pass it, or the fitted selector, as ``selection=`` to
        another selector's :meth:`fit` on the same problem to reuse it).
    selection_reused_ : bool
        Whether ``selection_`` was passed in (``fit(..., selection=...)``) rather than
        solved by this fit.
    solve_time_ : dict
        Seconds of ``"warm_start"``, ``"milp"`` and ``"svm"`` (the first two are 0
        with a reused selection).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 4))
    >>> y = (X[:, 0] + 0.1 * rng.normal(size=40) > 0).astype(int)
    >>> fs = CostSensitiveFeatureSelector(min_tpr=0.9, min_tnr=0.9, time_limit=10)
    >>> fs.fit(X, y).get_support().sum(), fs.status_
    (np.int64(1), 'optimal')
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "min_tpr": [Interval(Real, 0, 1, closed="both")],
        "min_tnr": [Interval(Real, 0, 1, closed="both")],
        "hoeffding_alpha": [Interval(Real, 0, 1, closed="neither"), None],
        "feature_costs": ["array-like", None],
        "kernel": [StrOptions({"linear", "rbf"})],
        "C": [Interval(Real, 0, None, closed="neither")],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "big_m": [Interval(Real, 0, None, closed="neither")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0, None, closed="left")],
        "device": [str],
    }

    def __init__(
        self,
        min_tpr: float = 0.9,
        min_tnr: float = 0.9,
        hoeffding_alpha: float | None = None,
        feature_costs: Any = None,
        kernel: str = "linear",
        C: float = 1.0,
        gamma: float | str = "scale",
        big_m: float = 100.0,
        time_limit: float = 300.0,
        mip_rel_gap: float = 1e-4,
        device: str = "cpu",
    ) -> None:
        self.min_tpr = min_tpr
        self.min_tnr = min_tnr
        self.hoeffding_alpha = hoeffding_alpha
        self.feature_costs = feature_costs
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.big_m = big_m
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.device = device

    def fit(
        self,
        X: Any,
        y: Any,
        sample_weight: Any = None,
        *,
        selection: FeatureSelectionResult | CostSensitiveFeatureSelector | None = None,
    ) -> CostSensitiveFeatureSelector:
        """Select features by (P1) and fit the (P2)/(P3) SVM on them.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Two classes; ``classes_[1]`` is the positive one (TPR).
        sample_weight : array-like of shape (n,), optional
            Positive row weights (e.g. k-means cluster sizes): weight the rate floors
            and the slack penalty.
        selection : FeatureSelectionResult or fitted CostSensitiveFeatureSelector, optional
            A (P1) solution to reuse instead of solving (P1) again, e.g. the
            ``selection_`` of a selector fitted on the same rows, weights, floors,
            feature costs and ``big_m`` with the other ``kernel`` or ``C``: (P1) does
            not depend on the kernel or on ``C`` (``C`` only steers its warm start),
            so the final (P2)/(P3) SVM is fitted on that selection (thesis ch. 4
            solves (P1) once and fits both classifiers on its features). It is checked
            first: its floors must be this selector's and its point ``(w, b, z,
            delta)`` must satisfy (P1)'s constraints on these rows. ``status_``,
            ``mip_gap_`` and ``cost_`` are then the reused solve's.

        Returns
        -------
        self

        Raises
        ------
        InfeasibleProblemError
            If the floors cannot be met (the message names them).
        ValueError
            If ``selection`` was not solved for this problem (the message says how
            it differs).
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        keep, sw = _positive_rows(
            sample_weight, X, y_pm, self.classes_, type(self).__name__
        )
        X, y, y_pm = X[keep], y[keep], y_pm[keep]
        costs = None if self.feature_costs is None else np.asarray(self.feature_costs)
        # One deadline for the whole fit (SPEC S6; PLAN "time_limit bounds the WHOLE
        # call"): the warm-start SVM, (P1) with its heuristics, and the final SVM.
        # (P1) may use the limit less a 10 % reserve for the final SVM.
        limit = float(self.time_limit)
        t0 = time.perf_counter()
        deadline = t0 + limit
        config = MipConfig(
            time_limit=max(1e-3, 0.9 * limit), mip_rel_gap=float(self.mip_rel_gap)
        )
        if selection is not None:
            sel = self._check_selection(selection, X, y_pm, costs, sw)
            t1 = t2 = time.perf_counter()
        else:
            warm = WeightedSVC(kernel="linear", C=self.C, device=self.device).fit(
                X, y_pm, sample_weight=sw
            )
            t1 = time.perf_counter()
            config = replace(config, time_limit=max(1e-3, deadline - 0.1 * limit - t1))
            sel = solve_feature_selection(
                X,
                y_pm,
                self.min_tpr,
                self.min_tnr,
                hoeffding_alpha=self.hoeffding_alpha,
                feature_costs=costs,
                big_m=self.big_m,
                config=config,
                warm_start=(warm.coef_[0], float(warm.intercept_[0])),
                sample_weight=sw,
                batch_seconds=t1 - t0,
            )
            t2 = time.perf_counter()
        self.selection_ = sel
        self.selection_reused_ = selection is not None
        self.support_ = sel.support
        self.z_ = np.zeros(keep.shape[0], dtype=bool)
        self.z_[keep] = sel.z
        self.cost_ = sel.cost
        self.tpr_floor_, self.tnr_floor_ = sel.tpr_floor, sel.tnr_floor
        self.status_ = sel.status.value
        self.mip_gap_ = sel.mip_gap
        self.start_feasible_ = sel.result.start_feasible
        svm_config = replace(
            config, time_limit=max(1e-3, deadline - time.perf_counter())
        )
        self.estimator_ = self._fit_svm(
            X, y, y_pm, sel.support, sel.z, sw, svm_config, sel
        )
        self.solve_time_ = {
            "warm_start": t1 - t0,
            "milp": t2 - t1,
            "svm": time.perf_counter() - t2,
        }
        return self

    def _check_selection(
        self,
        selection: FeatureSelectionResult | CostSensitiveFeatureSelector,
        X: np.ndarray,
        y_pm: np.ndarray,
        costs: np.ndarray | None,
        sw: np.ndarray | None,
    ) -> FeatureSelectionResult:
        """``selection`` as a (P1) solution of this problem, or a ValueError."""
        if isinstance(selection, CostSensitiveFeatureSelector):
            check_is_fitted(selection, "selection_")
            selection = selection.selection_
        if not isinstance(selection, FeatureSelectionResult):
            raise TypeError(
                "selection must be a FeatureSelectionResult or a fitted "
                f"CostSensitiveFeatureSelector, got {type(selection).__name__}"
            )
        n, d = X.shape
        if selection.support.shape != (d,) or selection.z.shape != (n,):
            raise ValueError(
                f"selection was solved on {selection.z.shape[0]} rows x "
                f"{selection.support.shape[0]} features; these data have {n} rows "
                f"(of positive weight) x {d} features"
            )
        problem = SelectionProblem.from_data(
            X, y_pm, self.min_tpr, self.min_tnr, self.hoeffding_alpha, costs, sw
        )
        floors = (problem.tpr_floor, problem.tnr_floor)
        if not np.allclose(
            floors, (selection.tpr_floor, selection.tnr_floor), rtol=0, atol=1e-12
        ):
            raise ValueError(
                f"selection was solved with floors p*(+1)={selection.tpr_floor:.6g}, "
                f"p*(-1)={selection.tnr_floor:.6g}; this selector imposes "
                f"{floors[0]:.6g}, {floors[1]:.6g}"
            )
        if not np.isclose(float(problem.costs @ selection.support), selection.cost):
            raise ValueError(
                f"selection's cost {selection.cost:.6g} is not the cost of its "
                "features under this selector's feature_costs"
            )
        model = build_selection_milp(
            problem.X, problem.y, *floors, problem.costs, self.big_m, sample_weight=sw
        )
        x = np.concatenate(
            [
                selection.w,
                [selection.b],
                selection.z.astype(float),
                selection.support.astype(float),
            ]
        )
        ok, reason = check_feasible(model, x, tol=1e-6)
        if not ok:
            raise ValueError(
                "selection is not a feasible (P1) point on these rows (other rows, "
                f"weights or big_m?): {reason}"
            )
        return selection

    def _fit_svm(
        self,
        X: np.ndarray,
        y: np.ndarray,
        y_pm: np.ndarray,
        support: np.ndarray,
        z: np.ndarray,
        sw: np.ndarray | None,
        config: MipConfig,
        sel: FeatureSelectionResult | None = None,
    ) -> Any:
        if self.kernel == "rbf" and support.any():
            u = kernel_upper_bounds(z, self.C, self.big_m, sample_weight=sw)
            gamma = resolve_gamma(self.gamma, X, sample_weight=sw)
            return WeightedSVC(
                kernel="rbf", C=self.C, gamma=gamma, device=self.device
            ).fit(X[:, support], y, sample_weight=u / float(self.C))
        # NOTE: with no feature selected both kernels reduce to a constant score.
        try:
            w, b, _ = solve_sparse_linear_svm(
                X, y_pm, support, z, self.C, self.big_m, config, sample_weight=sw
            )
        except SolverError as err:
            if sel is None:
                raise
            # (P2) did not finish (time left, or the QP solvers failed): keep (P1)'s
            # own classifier, which meets both floors on the selected features
            warnings.warn(
                f"(P2) not solved ({err}); the classifier is (P1)'s separating "
                "direction on the selected features, not the max-margin SVM",
                ConvergenceWarning,
                stacklevel=3,
            )
            w, b = sel.w, sel.b
        return _LinearOnSupport(w[support], b, self.classes_).fit()

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self)
        return self.support_

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of the fitted SVM, shape (t,); positive means ``classes_[1]``."""
        check_is_fitted(self)
        return self.estimator_.decision_function(self.transform(X))

    def predict(self, X: Any) -> np.ndarray:
        """Class labels from :meth:`decision_function`."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]

    def score(self, X: Any, y: Any) -> float:
        """Accuracy of :meth:`predict` (so the selector can be tuned on its own)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


class CardinalityConstrainedSVC(BinaryClassifierMixin, BaseEstimator):
    """SVM using at most ``k_max`` features (SPEC S6 comparator; an MIQP).

    ``min 1/2 ||w||^2 + C sum xi`` subject to the soft-margin rows, ``|w_k| <= M
    delta_k`` and ``sum_k delta_k <= k_max``, solved by outer approximation (SPEC S5
    "Solving"), warm-started from the ``k_max`` largest weights of a linear SVM. With
    ``kernel="rbf"`` an RBF SVM is then fitted on the selected features.

    Parameters
    ----------
    k_max : int, default=1
        Maximum number of features.
    kernel : {"linear", "rbf"}, default="linear"
        Final classifier on the selected features.
    C : float, default=1.0
        Penalty (libsvm convention).
    gamma : {"scale", "auto"} or float, default="scale"
        RBF width, resolved on all features.
    big_m : float, default=100.0
        ``M`` bounding ``|w_k|``.
    time_limit : float, default=300.0
        Overall seconds of the outer approximation.
    mip_rel_gap : float, default=1e-4
        Relative gap at which it stops.
    device : str, default="cpu"
        Device of the batched SVM solves.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    support_ : ndarray of shape (d,) of bool
    coef_ : ndarray of shape (1, d)
        MIQP weights (zero off the support).
    intercept_ : ndarray of shape (1,)
    estimator_ : classifier or None
        RBF SVM on the selected columns (``kernel="rbf"``).
    status_ : str
    mip_gap_ : float
    solve_time_ : float

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 4))
    >>> y = (X[:, 1] > 0).astype(int)
    >>> clf = CardinalityConstrainedSVC(k_max=1, time_limit=10).fit(X, y)
    >>> np.flatnonzero(clf.support_).tolist()
    [1]
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "k_max": [Interval(Integral, 0, None, closed="left")],
        "kernel": [StrOptions({"linear", "rbf"})],
        "C": [Interval(Real, 0, None, closed="neither")],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "big_m": [Interval(Real, 0, None, closed="neither")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0, None, closed="left")],
        "device": [str],
    }

    def __init__(
        self,
        k_max: int = 1,
        kernel: str = "linear",
        C: float = 1.0,
        gamma: float | str = "scale",
        big_m: float = 100.0,
        time_limit: float = 300.0,
        mip_rel_gap: float = 1e-4,
        device: str = "cpu",
    ) -> None:
        self.k_max = k_max
        self.kernel = kernel
        self.C = C
        self.gamma = gamma
        self.big_m = big_m
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.device = device

    def fit(
        self, X: Any, y: Any, sample_weight: Any = None
    ) -> CardinalityConstrainedSVC:
        """Solve the MIQP (and the RBF SVM on its features when ``kernel="rbf"``)."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        keep, sw = _positive_rows(
            sample_weight, X, y_pm, self.classes_, type(self).__name__
        )
        X, y, y_pm = X[keep], y[keep], y_pm[keep]
        k = min(int(self.k_max), X.shape[1])
        t0 = time.perf_counter()
        warm = WeightedSVC(kernel="linear", C=self.C, device=self.device).fit(
            X, y_pm, sample_weight=sw
        )
        res = solve_cardinality_svm(
            X,
            y_pm,
            k,
            C=self.C,
            big_m=self.big_m,
            config=MipConfig(float(self.time_limit), float(self.mip_rel_gap)),
            warm_start=(warm.coef_[0], float(warm.intercept_[0])),
            sample_weight=sw,
        )
        self.support_ = res.support
        self.coef_ = res.w[None, :]
        self.intercept_ = np.array([res.b])
        self.status_ = res.result.status.value
        self.mip_gap_ = float(res.result.mip_gap)
        self.estimator_ = None
        if self.kernel == "rbf" and res.support.any():
            self.estimator_ = WeightedSVC(
                kernel="rbf",
                C=self.C,
                gamma=resolve_gamma(self.gamma, X, sample_weight=sw),
                device=self.device,
            ).fit(X[:, res.support], y, sample_weight=sw)
        self.solve_time_ = time.perf_counter() - t0
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of shape (t,); positive means ``classes_[1]``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        if self.estimator_ is not None:
            return self.estimator_.decision_function(X[:, self.support_])
        return X @ self.coef_[0] + self.intercept_[0]

    def predict(self, X: Any) -> np.ndarray:
        """Labels: ``classes_[1]`` where the score is positive."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]
