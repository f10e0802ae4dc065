"""Exact-kernel logistic regression, the probability reference of SPEC S4.

:class:`KernelLogisticRegression` fits ``C`` and ``gamma`` as given;
:class:`KernelLogisticRegressionCV` tunes them by inner cross-validation on the training
rows (Rueping tuned the kernel logistic regression's own ``C`` and ``gamma``; SPEC S4,
issue 17), by the grid search of :class:`sklearn.model_selection.GridSearchCV` with the
log loss, each inner fold's C grid fitted as one warm-started path.
"""

from __future__ import annotations

import numbers
import warnings
from itertools import product
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit, log_expit
from scipy.stats import rankdata
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.model_selection import ParameterGrid, check_cv

from torchsvm.estimators._base import (
    BaseEstimator,
    BinaryClassifierMixin,
    Interval,
    StrOptions,
    _fit_context,
    check_binary_sample_weight,
    check_is_fitted,
    encode_binary,
    validate_data,
)
from torchsvm.exceptions import ConvergenceWarning
from torchsvm.kernels import compute_kernel_np, resolve_gamma
from torchsvm.types import ArrayLike, FloatArray

__all__ = ["KernelLogisticRegression", "KernelLogisticRegressionCV"]


def _newton_step(
    K: FloatArray, d: FloatArray, res: FloatArray, r: FloatArray, a: FloatArray
) -> tuple[FloatArray, float]:
    """Newton step ``(da, db)`` of :meth:`KernelLogisticRegression._newton`.

    Solves ``(D K + I) da + D 1 db = -res``, ``1' da = -1' a`` (``res = r + a``) by
    ``da = -res - S z`` with ``S = D^1/2``: then ``(I + S K S) z = -S K res + db S 1``
    and ``1' S z = -1' r`` fix ``z = z0 + db z1`` and ``db``. ``I + S K S`` is
    symmetric positive definite with eigenvalues >= 1, so one Cholesky factorisation
    serves. When every ``d_i`` is 0 (``b`` drops out) the least-squares solution of the
    bordered system is taken.
    """
    n = K.shape[0]
    s = np.sqrt(d)
    if np.any(s > 0):
        M = s[:, None] * K * s[None, :]
        M[np.diag_indices(n)] += 1.0
        factor = cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
        Z = cho_solve(factor, np.column_stack([-s * (K @ res), s]), check_finite=False)
        den = float(s @ Z[:, 1])
        if den > 0.0 and np.isfinite(den):
            db = (-float(np.sum(r)) - float(s @ Z[:, 0])) / den
            return -res - s * (Z[:, 0] + db * Z[:, 1]), db
    lhs = np.empty((n + 1, n + 1))
    lhs[:n, :n] = d[:, None] * K
    lhs[:n, :n][np.diag_indices(n)] += 1.0
    lhs[:n, n] = d
    lhs[n, :n] = 1.0
    lhs[n, n] = 0.0
    rhs = np.concatenate([-res, [-np.sum(a)]])
    step = np.linalg.lstsq(lhs, rhs, rcond=None)[0]  # singular when D = 0
    return step[:n], float(step[n])


def _cv_results(
    candidates: list[dict[str, float]], scores: FloatArray
) -> dict[str, Any]:
    """``GridSearchCV.cv_results_``'s score keys for ``scores`` (candidates x splits).

    The rank is ``GridSearchCV``'s (``rankdata(-mean, "min")``), so the first candidate
    of the best mean score in ``ParameterGrid`` order is the best, as there.
    """
    out: dict[str, Any] = {"params": candidates}
    for key in candidates[0]:
        out[f"param_{key}"] = np.ma.MaskedArray(
            [c[key] for c in candidates], mask=False
        )
    for k in range(scores.shape[1]):
        out[f"split{k}_test_score"] = scores[:, k]
    mean = scores.mean(axis=1)
    out["mean_test_score"] = mean
    out["std_test_score"] = np.sqrt(((scores - mean[:, None]) ** 2).mean(axis=1))
    out["rank_test_score"] = rankdata(-mean, method="min").astype(np.int32)
    return out


# ------------------------------------------------------ kernel logistic regression
class KernelLogisticRegression(BinaryClassifierMixin, BaseEstimator):
    """Exact-kernel logistic regression, the reference of SPEC S4.

    Minimises over dual coefficients ``a`` (n,) and intercept ``b``::

        J(a, b) = C sum_i w_i log(1 + exp(-y_i f_i)) + 1/2 a' K a,   f = K a + b,

    the kernel form of ``1/2 |w|^2 + C sum_i w_i logloss`` (scikit-learn's
    ``LogisticRegression`` objective; with a linear kernel ``w = X' a`` and the
    two coincide). Solved by damped Newton (IRLS): with ``r = dJ/df`` and
    ``D = d2J/df2`` (diagonal) the step solves the K-free system
    ``(D K + I) da + D 1 db = -(r + a)``, ``1' da = -1' a`` -- the full Newton
    system left-multiplied by ``K^-1`` -- so a singular ``K`` is harmless -- through
    one Cholesky factorisation of ``I + D^1/2 K D^1/2`` (:func:`_newton_step`). Costs
    ``O(n^3)`` per iteration; meant for up to a few thousand rows.

    With the linear kernel and fewer features than rows (``d < n``) the same objective
    is solved in the ``d + 1`` primal unknowns ``(w, b)`` by scikit-learn's
    ``LogisticRegression(solver="newton-cholesky")`` (unpenalised intercept, ``O(n d^2)``
    per iteration) and ``a = C w_i y_i sigma(-y_i f_i)`` is read off the optimum, where
    ``a = -dJ/df`` holds exactly; the decision values are ``X w + b`` either way.

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation strength.
    kernel : {"rbf", "linear"}, default="rbf"
        Kernel.
    gamma : "scale", "auto" or float, default="scale"
        RBF width: ``"scale"`` is ``1 / (d Var_w(X))`` with the variance weighted by
        ``sample_weight`` (:func:`torchsvm.kernels.resolve_gamma`), ``"auto"`` is ``1 / d``.
    tol : float, default=1e-8
        Stop when ``max(|r + a|, |sum r|) < tol * max(1, C)`` (primal route:
        ``max(|w + X' r|, |sum r|) < tol * max(1, C)``).
    max_iter : int, default=100
        Newton iterations.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    X_fit_ : ndarray of shape (n, d)
        Training rows (the kernel expansion points).
    dual_coef_ : ndarray of shape (n,)
        ``a``.
    intercept_ : float
        ``b``.
    coef_ : ndarray of shape (d,)
        Linear kernel only: ``w`` (``X_fit_' a`` up to the tolerance).
    gamma_ : float
        RBF width used (``nan`` for the linear kernel).
    n_iter_ : int
        Newton iterations used (both solvers' when the primal solution is polished
        in the kernel form).
    solver_ : {"primal", "kernel"}
        Which form was solved.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=50, random_state=0)
    >>> KernelLogisticRegression(C=1.0).fit(X, y).predict_proba(X[:1]).shape
    (1, 2)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "kernel": [StrOptions({"rbf", "linear"})],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(numbers.Real, 0.0, None, closed="neither"),
        ],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "rbf",
        gamma: str | float = "scale",
        tol: float = 1e-8,
        max_iter: int = 100,
    ) -> None:
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.max_iter = max_iter

    def _kernel(self, A: FloatArray, B: FloatArray) -> FloatArray:
        gamma = 0.0 if self.kernel == "linear" else self.gamma_
        return compute_kernel_np(A, B, kernel=self.kernel, gamma=gamma)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> KernelLogisticRegression:
        """Fit by damped Newton on the dual coefficients.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training rows.
        y : array-like of shape (n,)
            Binary labels.
        sample_weight : array-like of shape (n,), default=None
            Per-row weights ``w_i`` of the loss.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit_rows(X, y, sample_weight)

    def _fit_rows(
        self,
        X: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None,
        K: FloatArray | None = None,
        start: tuple[FloatArray, float] | None = None,
    ) -> KernelLogisticRegression:
        """:meth:`fit`, with the kernel form's Gram matrix ``K`` and Newton start given.

        :class:`KernelLogisticRegressionCV` passes each inner fold's ``K`` once for the
        whole C grid and starts each C from the previous C's ``(a, b)``; both are
        ignored on the primal route.
        """
        X_in, y = validate_data(self, X, y, dtype=np.float64)
        X = np.asarray(X_in, dtype=np.float64)
        name = type(self).__name__
        self.classes_, ypm = encode_binary(y, name)
        w = check_binary_sample_weight(sample_weight, X, ypm, self.classes_, name)
        self.gamma_ = float("nan")
        if self.kernel == "rbf":
            self.gamma_ = resolve_gamma(self.gamma, X, w)
        if self.kernel == "linear" and X.shape[1] < X.shape[0]:
            a, b, n_iter, coef = self._fit_primal(X, ypm, w)
            self.solver_ = "primal"
        else:
            a0, b0 = (None, None) if start is None else start
            K = self._kernel(X, X) if K is None else K
            a, b, n_iter = self._newton(K, ypm, self.C * w, a0=a0, b0=b0)
            coef = X.T @ a if self.kernel == "linear" else None
            self.solver_ = "kernel"
        self.X_fit_ = X
        self.dual_coef_ = a
        self.intercept_ = b
        self.n_iter_ = n_iter
        if coef is not None:
            self.coef_ = coef
        return self

    def _fit_primal(
        self, X: FloatArray, ypm: FloatArray, w: FloatArray
    ) -> tuple[FloatArray, float, int, FloatArray]:
        """Linear kernel with ``d < n``: the same objective in the ``d + 1`` primal unknowns.

        ``w = X' a`` turns ``J`` into ``1/2 |w|^2 + C sum_i w_i logloss(y_i (w.x_i + b))``
        with the intercept unpenalised -- scikit-learn's ``LogisticRegression`` objective
        (solver ``"newton-cholesky"``, which does not penalise the intercept). Its
        gradient criterion is on the objective divided by ``C sum_i w_i``, so its ``tol``
        is ``tol max(1, C) / (C sum_i w_i)``. At the optimum ``a = -r``
        (``r = dJ/df``) holds exactly, which recovers ``dual_coef_``; the solution is
        accepted when ``max(|w + X' r|, |sum r|) < tol max(1, C)``, the primal form of
        the kernel solver's stopping rule, and otherwise polished by the kernel-form
        Newton started from the same decision values.
        """
        C = float(self.C)
        stop = self.tol * max(1.0, C)
        lr = LogisticRegression(
            C=C,
            solver="newton-cholesky",
            tol=stop / (C * float(np.sum(w))),
            max_iter=self.max_iter,
        )
        with warnings.catch_warnings():
            # judged below by the kernel solver's own criterion
            warnings.simplefilter("ignore")
            lr.fit(X, ypm, sample_weight=w)
        coef = np.asarray(lr.coef_, dtype=np.float64).ravel()
        b = float(lr.intercept_[0])
        r = -C * w * ypm * expit(-ypm * (X @ coef + b))
        n_iter = int(np.max(lr.n_iter_))
        if max(float(np.max(np.abs(coef + X.T @ r))), abs(float(np.sum(r)))) < stop:
            return -r, b, n_iter, coef
        # start from the same decision values: the min-norm a with X' a = w (a = -r
        # is the optimum's a only, far from it X' (-r) can be far from w)
        a0 = np.linalg.lstsq(X.T, coef, rcond=None)[0]
        a, b, more = self._newton(X @ X.T, ypm, C * w, a0=a0, b0=b)
        return a, b, n_iter + more, X.T @ a

    def _newton(
        self,
        K: FloatArray,
        ypm: FloatArray,
        cw: FloatArray,
        a0: FloatArray | None = None,
        b0: float | None = None,
    ) -> tuple[FloatArray, float, int]:
        """Damped Newton on ``(a, b)`` from ``(a0, b0)``.

        The default start is ``a = 0`` with ``b`` the weighted log prior odds
        ``log(sum_{y=1} C w_i / sum_{y=-1} C w_i)``, the minimiser of ``J(0, b)``
        (about one Newton iteration fewer than ``b = 0``; the optimum is the same).

        The step solves the K-free system through the symmetric positive definite
        ``M = I + S K S`` (``S = D^1/2``): with ``da = -res - S z``, ``M z = -S K res +
        db S 1`` and ``1' S z = -1' r`` -- one Cholesky factorisation (``n^3 / 3``)
        instead of the LU of the non-symmetric ``D K + I`` (``2 n^3 / 3``); the step
        is the same. The line search is Armijo's on ``J``; once ``J`` changes by less
        than its own rounding (``64 eps |J|``) it can no longer rank steps, and a step
        is then accepted when it lowers the stopping residual instead (the test
        scikit-learn's Newton solvers use), so Newton's last, quadratically
        convergent steps are not lost to rounding noise in ``J``.
        """
        n = K.shape[0]
        a = np.zeros(n) if a0 is None else np.array(a0, dtype=np.float64)
        if b0 is None:
            b0 = np.log(np.sum(cw[ypm > 0])) - np.log(np.sum(cw[ypm < 0]))
        b = float(b0)
        Ka = K @ a
        eps = np.finfo(np.float64).eps

        def state(
            a_: FloatArray, Ka_: FloatArray, b_: float
        ) -> tuple[float, FloatArray, float]:
            f = Ka_ + b_
            J = float(np.sum(cw * -log_expit(ypm * f)) + 0.5 * a_ @ Ka_)
            r_ = -cw * ypm * expit(-ypm * f)  # dJ/df
            err_ = max(float(np.max(np.abs(r_ + a_))), abs(float(np.sum(r_))))
            return J, r_, err_

        fval, r, err = state(a, Ka, b)
        stop = self.tol * max(1.0, float(self.C))
        for n_iter in range(1, self.max_iter + 1):
            if err < stop:
                return a, b, n_iter - 1
            f = Ka + b
            res = r + a
            d = cw * expit(f) * expit(-f)  # d2J/df2
            da, db = _newton_step(K, d, res, r, a)
            Kda = K @ da
            slope = float(Kda @ res + np.sum(r) * db)
            size = 1.0
            while size >= 1e-12:
                a_c, Ka_c, b_c = a + size * da, Ka + size * Kda, b + size * db
                cand, r_c, err_c = state(a_c, Ka_c, b_c)
                if cand <= fval + 1e-4 * size * min(slope, 0.0) or (
                    cand - fval <= 64.0 * eps * abs(fval) and err_c < err
                ):
                    a, Ka, b, fval, r, err = a_c, Ka_c, b_c, cand, r_c, err_c
                    break
                size /= 2.0
            else:
                warnings.warn(
                    f"KernelLogisticRegression: Newton's line search failed at "
                    f"iteration {n_iter} with residual {err:.3g} above tol "
                    f"{stop:.3g}",
                    ConvergenceWarning,
                    stacklevel=3,
                )
                return a, b, n_iter
        if err < stop:
            return a, b, self.max_iter
        warnings.warn(
            f"KernelLogisticRegression: Newton stopped after {self.max_iter} "
            f"iterations with residual {err:.3g} above tol {stop:.3g}",
            ConvergenceWarning,
            stacklevel=3,
        )
        return a, b, self.max_iter

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Latent log-odds ``f(x) = sum_j a_j K(x_j, x) + b``.

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        scores : ndarray of shape (t,)
            Log-odds of ``classes_[1]``.
        """
        check_is_fitted(self, "dual_coef_")
        X_arr = np.asarray(
            validate_data(self, X, reset=False, dtype=np.float64), dtype=np.float64
        )
        if self.kernel == "linear":
            return X_arr @ self.coef_ + self.intercept_
        return self._kernel(X_arr, self.X_fit_) @ self.dual_coef_ + self.intercept_

    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        proba : ndarray of shape (t, 2)
            Columns ``[P(classes_[0]), P(classes_[1])]``.
        """
        f = self.decision_function(X)
        return np.column_stack([expit(-f), expit(f)])

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Labels by the sign of the log-odds (``f = 0`` gives ``classes_[0]``).

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        labels : ndarray of shape (t,)
            Predicted labels.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(np.intp)]


class KernelLogisticRegressionCV(BinaryClassifierMixin, BaseEstimator):
    """Kernel logistic regression with ``C`` and ``gamma`` tuned by inner CV (SPEC S4).

    Rueping compared the SVM scalings with a kernel logistic regression whose own ``C``
    and ``gamma`` were tuned; this is that baseline: the grid search of
    :class:`~sklearn.model_selection.GridSearchCV` over ``C_grid`` x ``gamma_grid`` of
    :class:`KernelLogisticRegression` on the training rows only (same candidates, scores,
    ranks and choice), refitted on all of them with the best pair. Per inner fold and
    ``gamma`` the kernel matrix is built once and the C values are fitted in increasing
    order, each kernel-form Newton started from the previous C's ``(a, b)``: the same
    optima to ``tol``, in fewer Newton iterations than independent fits.

    Parameters
    ----------
    C_grid : array-like of shape (n_C,) or None, default=None
        Candidate ``C``; None means ``2^-5, 2^-3, ..., 2^5``.
    gamma_grid : array-like or None, default=None
        Candidate RBF widths (ignored for ``kernel="linear"``); None means
        ``g * 2^{-2, 0, 2}`` with ``g`` the (sample-weighted) ``"scale"`` gamma of the
        training rows.
    kernel : {"rbf", "linear"}, default="rbf"
    cv : int or splitter, default=5
        Inner folds (an int means stratified ``KFold`` without shuffling).
    scoring : str, default="neg_log_loss"
        Selection criterion (any scikit-learn scorer name; ``"neg_brier_score"`` is the
        MSE of the papers' tables).
    tol : float, default=1e-8
    max_iter : int, default=100
    n_jobs : int or None, default=None
        ``joblib`` jobs over the (``gamma``, inner fold) paths.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    best_estimator_ : KernelLogisticRegression
        Refitted on all rows with ``C_`` and ``gamma_``.
    C_ : float
    gamma_ : float
        ``nan`` for the linear kernel.
    cv_results_ : dict
        The score keys of ``GridSearchCV.cv_results_`` (``params``, ``param_*``,
        ``split{k}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``); no timings.
    n_iter_ : int
        Newton iterations of the refitted model.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=60, random_state=0)
    >>> m = KernelLogisticRegressionCV(C_grid=[0.1, 1.0], gamma_grid=[0.05], cv=3)
    >>> m.fit(X, y).predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C_grid": ["array-like", None],
        "gamma_grid": ["array-like", None],
        "kernel": [StrOptions({"rbf", "linear"})],
        "cv": ["cv_object"],
        "scoring": [str],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_jobs": [numbers.Integral, None],
    }

    def __init__(
        self,
        C_grid: Any = None,
        gamma_grid: Any = None,
        kernel: str = "rbf",
        cv: Any = 5,
        scoring: str = "neg_log_loss",
        tol: float = 1e-8,
        max_iter: int = 100,
        n_jobs: int | None = None,
    ) -> None:
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.kernel = kernel
        self.cv = cv
        self.scoring = scoring
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs

    @staticmethod
    def _grid(values: Any, default: np.ndarray, name: str) -> list[float]:
        arr = (
            default
            if values is None
            else np.atleast_1d(np.asarray(values, dtype=np.float64))
        )
        if (
            arr.ndim != 1
            or arr.size == 0
            or not np.isfinite(arr).all()
            or (arr <= 0).any()
        ):
            raise ValueError(
                f"{name} must be a non-empty 1-D array of finite values > 0"
            )
        return [float(v) for v in arr]

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> KernelLogisticRegressionCV:
        """Grid-search ``C`` (and ``gamma``) by inner CV, then refit on all rows.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Binary labels.
        sample_weight : array-like of shape (n,), default=None
            Passed to every fit and weighting the held-out scores, as scikit-learn's
            ``GridSearchCV`` (1.9) weights them.

        Returns
        -------
        self : object
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        name = type(self).__name__
        self.classes_, y_pm = encode_binary(y, name)
        sw = check_binary_sample_weight(sample_weight, X, y_pm, self.classes_, name)
        grid: dict[str, list[Any]] = {
            "C": self._grid(self.C_grid, 2.0 ** np.arange(-5, 6, 2), "C_grid")
        }
        if self.kernel == "rbf":
            base = resolve_gamma("scale", X, sw)
            grid["gamma"] = self._grid(
                self.gamma_grid, base * 2.0 ** np.array([-2.0, 0.0, 2.0]), "gamma_grid"
            )
        cv = check_cv(self.cv, y, classifier=True)
        n_splits = cv.get_n_splits(X, y)
        smallest = int(min((y_pm > 0).sum(), (y_pm < 0).sum()))
        if smallest < n_splits:
            raise ValueError(
                f"cv={n_splits} inner folds need at least {n_splits} rows of each class; "
                f"the smallest class has {smallest}"
            )
        candidates = list(ParameterGrid(grid))  # GridSearchCV's order
        splits = list(cv.split(X, y))
        scorer = get_scorer(self.scoring)
        paths = Parallel(n_jobs=self.n_jobs)(
            delayed(self._path)(X, y, sw, tr, te, gamma, grid["C"], scorer)
            for gamma in grid.get("gamma", [None])
            for tr, te in splits
        )
        scores = np.empty((len(candidates), len(splits)))
        for (gamma, k), path in zip(
            product(grid.get("gamma", [None]), range(len(splits))), paths, strict=True
        ):
            for i, cand in enumerate(candidates):
                if cand.get("gamma") == gamma:
                    scores[i, k] = path[cand["C"]]
        self.cv_results_ = _cv_results(candidates, scores)
        best = candidates[int(np.argmin(self.cv_results_["rank_test_score"]))]
        self.best_estimator_ = KernelLogisticRegression(
            C=best["C"],
            kernel=self.kernel,
            gamma=best.get("gamma", "scale"),
            tol=self.tol,
            max_iter=self.max_iter,
        ).fit(X, y, sample_weight=sw)
        self.C_ = float(best["C"])
        self.gamma_ = float(self.best_estimator_.gamma_)
        self.n_iter_ = int(self.best_estimator_.n_iter_)
        return self

    def _path(
        self,
        X: FloatArray,
        y: np.ndarray,
        sw: FloatArray,
        tr: np.ndarray,
        te: np.ndarray,
        gamma: float | None,
        C_grid: list[float],
        scorer: Any,
    ) -> dict[float, float]:
        """Held-out scores of one inner fold (and ``gamma``) over the C grid.

        The C values are fitted in increasing order on one Gram matrix, each Newton
        started from the previous C's ``(a, b)``; the optimum of each fit is the same
        to ``tol``. On an inner fold of churn's fold 3 (RBF, scale gamma) the default
        C grid took 28 Newton iterations, against 39 from the default start
        (docs/benchmarks.md, "Kernel logistic regression baselines").
        """
        est = KernelLogisticRegression(
            kernel=self.kernel,
            gamma="scale" if gamma is None else gamma,
            tol=self.tol,
            max_iter=self.max_iter,
        )
        X_tr = X[tr]
        K = None
        if self.kernel == "rbf" or X_tr.shape[1] >= X_tr.shape[0]:  # kernel form
            K = compute_kernel_np(
                X_tr, X_tr, kernel=self.kernel, gamma=0.0 if gamma is None else gamma
            )
        start: tuple[FloatArray, float] | None = None
        out: dict[float, float] = {}
        with warnings.catch_warnings():
            # candidates far from the optimum may stop at max_iter inside the search;
            # the refitted best model still warns through its own fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            for C in sorted(set(C_grid)):
                est.set_params(C=C)._fit_rows(X_tr, y[tr], sw[tr], K=K, start=start)
                if K is not None:
                    start = (est.dual_coef_, est.intercept_)
                out[C] = float(scorer(est, X[te], y[te], sample_weight=sw[te]))
        return out

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Log-odds of ``classes_[1]`` from the refitted model: shape (t,)."""
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.best_estimator_.decision_function(X)

    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Columns ``[P(classes_[0]), P(classes_[1])]``: shape (t, 2)."""
        f = self.decision_function(X)
        return np.column_stack([expit(-f), expit(f)])

    def predict(self, X: ArrayLike) -> np.ndarray:
        """``classes_[1]`` where the log-odds are positive: shape (t,)."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(np.intp)]
