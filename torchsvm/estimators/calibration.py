"""Probability baselines for SVM scores (SPEC S4).

Everything here turns a real-valued SVM score ``z = f(x)`` into ``P(y = +1 | x)``.
Two layers:

* **Score calibrators** -- scikit-learn estimators on 1-D scores,
  ``fit(z, y, sample_weight=None)`` / ``predict_proba(z) -> (t, 2)`` with columns
  ``[P(classes_[0]), P(classes_[1])]``; ``classes_[1]`` is the positive class (the
  class a positive score points to, as in :meth:`sklearn.svm.SVC.decision_function`).

  ============================  ===================================================
  :class:`PlattCalibrator`      Platt's sigmoid, Lin--Lin--Weng regularised targets
  :class:`IsotonicCalibrator`   isotonic regression (wraps ``IsotonicRegression``)
  :class:`SoftmaxCalibrator`    ``p = 1 / (1 + exp(-2 z))`` (no fit)
  :class:`BinningCalibrator`    ``n_bins`` equal-width bins of ``z`` (10 and 50)
  :class:`Svm01Calibrator`      Rueping's SVM-01: ``p+`` / line ``(1 + z) / 2`` / ``p-``
  :class:`SvmPPCalibrator`      Rueping's SVM-PP: the line clipped to ``[p-, p+]``
  :class:`BetaCalibrator`       Garczarek's binary beta scaling, one scaler
  :class:`SollichCalibrator`    Sollich's Bayesian SVM class probability at the MAP
  ============================  ===================================================

* **Estimators** -- :class:`CalibratedSVC` gets out-of-fold scores of any estimator
  with ``fit(X, y, sample_weight=None)`` and ``decision_function`` by internal
  cross-validation (SPEC S4: "on held-out scores ... cross-validation inside the
  training set"), fits one calibrator on them and refits the estimator on all
  training rows (``ensemble=False`` semantics of
  :class:`sklearn.calibration.CalibratedClassifierCV`, as scikit-learn >= 1.9
  recommends). The exact-kernel logistic regression the SVM scalings are compared to
  lives in :mod:`torchsvm.estimators.kernel_logistic`.

Sources and every deviation are written down in ``docs/baselines.md``. Tao et al.'s
PPSVM is not implemented (no faithful description was available; see there).

Conventions: binary problems only (SPEC S2-S4 are binary). Scores are float64.
Sample weights are frequency weights wherever a calibrator counts rows.
"""

from __future__ import annotations

import logging
import numbers
from typing import Any

import numpy as np
from scipy.special import betainc, betaincinv, expit, log_expit
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import check_cv, cross_val_predict

from torchsvm.estimators._base import (
    BaseEstimator,
    BinaryClassifierMixin,
    HasMethods,
    Interval,
    StrOptions,
    _fit_context,
    check_binary_sample_weight,
    check_is_fitted,
    clone,
    column_or_1d,
    encode_binary,
    validate_data,
)
from torchsvm.exceptions import DataError
from torchsvm.types import ArrayLike, FloatArray

logger = logging.getLogger(__name__)

__all__ = [
    "BetaCalibrator",
    "BinningCalibrator",
    "CalibratedSVC",
    "IsotonicCalibrator",
    "PlattCalibrator",
    "SollichCalibrator",
    "SoftmaxCalibrator",
    "Svm01Calibrator",
    "SvmPPCalibrator",
    "make_calibrator",
]

CALIBRATION_METHODS = (
    "sigmoid",
    "isotonic",
    "softmax",
    "binning10",
    "binning50",
    "svm01",
    "svmpp",
    "beta",
    "sollich",
)


# --------------------------------------------------------------------------- helpers
def _check_scores(z: ArrayLike, name: str = "scores") -> FloatArray:
    """Validate 1-D scores: shape (n,) or (n, 1), finite, float64."""
    try:
        arr = np.asarray(z, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numeric; got {type(z).__name__}") from exc
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise DataError(
            f"{name} must be 1-D of shape (n_samples,) or (n_samples, 1); "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise DataError(f"{name} is empty (0 samples)")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{name} contain NaN or infinity")
    return arr


def _binary_classes(y: ArrayLike, who: str) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y01)`` through :func:`~torchsvm.estimators._base.encode_binary`."""
    classes, y_pm = encode_binary(y, who)
    return classes, (y_pm > 0).astype(np.float64)


def _weights(
    sample_weight: ArrayLike | None,
    z: FloatArray,
    y01: FloatArray,
    classes: np.ndarray,
    who: str,
) -> FloatArray:
    """Frequency weights of shape (n,); a weighting that leaves one class is refused."""
    return check_binary_sample_weight(
        sample_weight, z[:, None], 2.0 * y01 - 1.0, classes, who
    )


def _weighted_fraction(
    y01: FloatArray, w: FloatArray, mask: np.ndarray
) -> float | None:
    """Weighted fraction of positives among ``mask``; None when the set is empty."""
    total = float(np.sum(w[mask]))
    if total <= 0.0:
        return None
    return float(np.sum(w[mask] * y01[mask]) / total)


# ------------------------------------------------------------------ base calibrator
class _ScoreCalibrator(BinaryClassifierMixin, BaseEstimator):
    """Common ``fit`` / ``predict_proba`` plumbing of the 1-D score calibrators."""

    _parameter_constraints: dict[str, list[Any]] = {}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(
        self, z: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> _ScoreCalibrator:
        """Fit the calibrator on held-out scores.

        Parameters
        ----------
        z : array-like of shape (n_samples,) or (n_samples, 1)
            Held-out scores ``f(x)``; larger means more likely ``classes_[1]``.
        y : array-like of shape (n_samples,)
            Binary labels (any two values; the larger sorted one is positive).
        sample_weight : array-like of shape (n_samples,), default=None
            Frequency weights.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        scores = _check_scores(z)
        y_arr = column_or_1d(y, warn=True)
        if y_arr.shape[0] != scores.shape[0]:
            raise DataError(
                f"scores and y have different lengths: {scores.shape[0]} != "
                f"{y_arr.shape[0]}"
            )
        name = type(self).__name__
        self.classes_, y01 = _binary_classes(y_arr, name)
        w = _weights(sample_weight, scores, y01, self.classes_, name)
        self._fit(scores, y01, w)
        return self

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        """Learn the map; ``y01`` is 1 for ``classes_[1]``."""

    def _proba_positive(self, z: FloatArray) -> FloatArray:  # pragma: no cover
        raise AttributeError("subclasses define _proba_positive")

    def predict_proba(self, z: ArrayLike) -> FloatArray:
        """Calibrated probabilities.

        Parameters
        ----------
        z : array-like of shape (t,) or (t, 1)
            Scores of the evaluation rows.

        Returns
        -------
        proba : ndarray of shape (t, 2)
            Columns ``[P(classes_[0]), P(classes_[1])]``.
        """
        check_is_fitted(self, "classes_")
        p = np.clip(self._proba_positive(_check_scores(z)), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, z: ArrayLike) -> np.ndarray:
        """Most probable class for each score.

        Parameters
        ----------
        z : array-like of shape (t,) or (t, 1)
            Scores.

        Returns
        -------
        labels : ndarray of shape (t,)
            ``classes_[argmax(predict_proba(z))]``.
        """
        proba = self.predict_proba(z)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self) -> Any:
        """1-D scores in, as :class:`sklearn.isotonic.IsotonicRegression`."""
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        return tags


# --------------------------------------------------------------------------- Platt
class PlattCalibrator(_ScoreCalibrator):
    """Platt scaling ``p = 1 / (1 + exp(A z + B))`` (SPEC S4).

    ``A, B`` maximise the likelihood of the regularised targets of Platt (2000),
    ``t+ = (N+ + 1) / (N+ + 2)`` and ``t- = 1 / (N- + 2)``, with the numerically
    safe Newton method with backtracking of Lin, Lin & Weng (2007). ``N+ / N-`` are
    the (weighted) class totals, as in scikit-learn's ``_sigmoid_calibration``, so
    the fitted map equals ``CalibratedClassifierCV(method="sigmoid")``'s.

    Parameters
    ----------
    max_iter : int, default=100
        Newton iterations.
    tol : float, default=1e-10
        Stop when the gradient's max-norm is below ``tol * max(1, sum(w))``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    a_ : float
        Slope ``A`` (negative when larger scores mean more positive).
    b_ : float
        Offset ``B``.
    n_iter_ : int
        Newton iterations used.

    References
    ----------
    Platt, J. (2000). Probabilistic outputs for support vector machines.
    Lin, H.-T., Lin, C.-J., Weng, R. C. (2007). A note on Platt's probabilistic
    outputs for support vector machines. Machine Learning 68, 267-276.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0.0, None, closed="neither")],
    }

    def __init__(self, max_iter: int = 100, tol: float = 1e-10) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        n_pos = float(np.sum(w * y01))
        n_neg = float(np.sum(w * (1.0 - y01)))
        t = np.where(y01 > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        # NOTE: the problem is invariant to rescaling z (A absorbs it); working on
        # z / max|z| keeps the Hessian well conditioned for large SVM scores.
        scale = max(float(np.max(np.abs(z))), 1.0)
        u = z / scale

        def objective(ab: FloatArray) -> float:
            f = ab[0] * u + ab[1]
            # -[t log p + (1-t) log(1-p)] with p = sigmoid(-f)
            return float(np.sum(w * (-t * log_expit(-f) - (1.0 - t) * log_expit(f))))

        ab = np.array([0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))])
        fval = objective(ab)
        stop = self.tol * max(1.0, float(np.sum(w)))
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):  # noqa: B007
            p = expit(-(ab[0] * u + ab[1]))
            r = w * (t - p)  # d loss / d f
            grad = np.array([np.dot(r, u), np.sum(r)])
            if np.max(np.abs(grad)) < stop:
                break
            d = w * p * (1.0 - p)
            hess = np.array(
                [[np.dot(d, u * u), np.dot(d, u)], [np.dot(d, u), np.sum(d)]]
            )
            hess += 1e-12 * np.eye(2)  # Lin-Lin-Weng's sigma keeps H invertible
            step = -np.linalg.solve(hess, grad)
            slope = float(np.dot(grad, step))
            size = 1.0
            while size >= 1e-10:
                cand = ab + size * step
                fcand = objective(cand)
                if fcand < fval + 1e-4 * size * slope:
                    ab, fval = cand, fcand
                    break
                size /= 2.0
            else:
                logger.debug(
                    "Platt line search failed; stopping at iteration %d", n_iter
                )
                break
        self.a_ = float(ab[0] / scale)
        self.b_ = float(ab[1])
        self.n_iter_ = n_iter

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        return expit(-(self.a_ * z + self.b_))


# ------------------------------------------------------------------------ isotonic
class IsotonicCalibrator(_ScoreCalibrator):
    """Isotonic regression of ``1[y = +1]`` on the score (SPEC S4).

    A thin wrapper of :class:`sklearn.isotonic.IsotonicRegression` with
    ``out_of_bounds="clip"`` -- exactly what ``CalibratedClassifierCV(method=
    "isotonic")`` fits -- so that it shares the calibrator API of this module.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    isotonic_ : IsotonicRegression
        The fitted regression.
    """

    def __init__(self) -> None:
        pass

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        self.isotonic_ = IsotonicRegression(out_of_bounds="clip").fit(
            z, y01, sample_weight=w
        )

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        return np.asarray(self.isotonic_.predict(z), dtype=np.float64)


# ------------------------------------------------------------------------- softmax
class SoftmaxCalibrator(_ScoreCalibrator):
    """Softmax of the two class scores ``(z, -z)``: ``p = 1 / (1 + exp(-2 z))``.

    Nothing is learned; ``fit`` only records the classes (SPEC S4, Rueping 2004).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    """

    def __init__(self) -> None:
        pass

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        return expit(2.0 * z)


# ------------------------------------------------------------------------- binning
class BinningCalibrator(_ScoreCalibrator):
    """Histogram binning on ``n_bins`` equal-width bins of the score (SPEC S4).

    The bins split ``[min z, max z]`` of the fitting scores into equal widths; the
    probability in a bin is the (weighted) fraction of positives among its fitting
    rows. New scores outside the range fall in the first or last bin.

    Empty bins: a bin without fitting rows gets the value linearly interpolated,
    along bin centres, between the nearest non-empty bins on either side (the
    nearest non-empty bin's value beyond the outermost ones). When all fitting
    scores are equal there is one value, the overall fraction of positives.

    Parameters
    ----------
    n_bins : int, default=10
        Number of equal-width bins (the thesis uses 10 and 50).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    bin_edges_ : ndarray of shape (n_bins + 1,)
        Bin edges over the fitting scores' range.
    bin_proba_ : ndarray of shape (n_bins,)
        ``P(+)`` per bin (empty bins filled by the rule above).
    bin_counts_ : ndarray of shape (n_bins,)
        Total sample weight per bin.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "n_bins": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, n_bins: int = 10) -> None:
        self.n_bins = n_bins

    def _bin_index(self, z: FloatArray) -> np.ndarray:
        lo, hi = self.bin_edges_[0], self.bin_edges_[-1]
        if hi <= lo:
            return np.zeros(z.shape[0], dtype=np.intp)
        idx = np.floor((z - lo) / (hi - lo) * self.n_bins).astype(np.intp)
        return np.clip(idx, 0, self.n_bins - 1)

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        lo, hi = float(np.min(z)), float(np.max(z))
        self.bin_edges_ = np.linspace(lo, hi, self.n_bins + 1)
        idx = self._bin_index(z)
        counts = np.bincount(idx, weights=w, minlength=self.n_bins)
        pos = np.bincount(idx, weights=w * y01, minlength=self.n_bins)
        full = counts > 0
        proba = np.zeros(self.n_bins)
        proba[full] = pos[full] / counts[full]
        if not np.all(full):
            centres = 0.5 * (self.bin_edges_[:-1] + self.bin_edges_[1:])
            proba[~full] = np.interp(centres[~full], centres[full], proba[full])
        self.bin_counts_ = counts
        self.bin_proba_ = proba

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        return self.bin_proba_[self._bin_index(z)]


# ------------------------------------------------------------- SVM-01 and SVM-PP
def _margin_fractions(
    z: FloatArray, y01: FloatArray, w: FloatArray
) -> tuple[float, float]:
    """``(p-, p+)``: fractions of positives among ``z < -1`` and ``z > 1``.

    An empty side falls back to the end value of the line ``(1 + z) / 2``,
    i.e. ``p- = 0`` and ``p+ = 1``.
    """
    p_minus = _weighted_fraction(y01, w, z < -1.0)
    p_plus = _weighted_fraction(y01, w, z > 1.0)
    return (0.0 if p_minus is None else p_minus, 1.0 if p_plus is None else p_plus)


class Svm01Calibrator(_ScoreCalibrator):
    """Rueping's SVM-01 (SPEC S4).

    ``p = p+`` for ``z > 1``, ``(1 + z) / 2`` for ``-1 <= z <= 1`` and ``p-`` for
    ``z < -1``, with ``p+`` (``p-``) the fraction of positive fitting rows among
    those with ``z > 1`` (``z < -1``). An empty side uses ``p+ = 1`` / ``p- = 0``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    p_plus_ : float
        Fraction of positives beyond the positive margin.
    p_minus_ : float
        Fraction of positives beyond the negative margin.
    """

    def __init__(self) -> None:
        pass

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        self.p_minus_, self.p_plus_ = _margin_fractions(z, y01, w)

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        p = 0.5 * (1.0 + z)
        p = np.where(z > 1.0, self.p_plus_, p)
        return np.where(z < -1.0, self.p_minus_, p)


class SvmPPCalibrator(_ScoreCalibrator):
    """Rueping's SVM-PP: the line ``(1 + z) / 2`` clipped at ``p-`` and ``p+``.

    ``p = min(max((1 + z) / 2, p-), p+)``, with ``p+`` / ``p-`` as in
    :class:`Svm01Calibrator` (SPEC S4). If ``p- > p+`` (a degenerate fit) the
    output is the constant ``p+``, as ``numpy.clip`` does.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    p_plus_ : float
        Upper clip (fraction of positives among ``z > 1``).
    p_minus_ : float
        Lower clip (fraction of positives among ``z < -1``).
    """

    def __init__(self) -> None:
        pass

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        self.p_minus_, self.p_plus_ = _margin_fractions(z, y01, w)

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        return np.minimum(np.maximum(0.5 * (1.0 + z), self.p_minus_), self.p_plus_)


# -------------------------------------------------------------------- beta scaling
class BetaCalibrator(_ScoreCalibrator):
    """Garczarek's beta scaling for a binary argmax classifier (SPEC S4).

    Membership values: ``m(x) = 1 / (1 + exp(-2 z))`` for the positive class and
    ``1 - m`` for the negative one (the softmax of :class:`SoftmaxCalibrator`).
    Each row is assigned to the class with the larger membership (``z >= 0`` means
    positive); ``a(x) = max(m, 1 - m)`` is the assigned class' membership.
    Over the rows of a region (``per_class=False``: all rows, i.e. one scaler for
    both classes, as SPEC S4 asks; ``per_class=True``: one region per assigned
    class, as in Garczarek's multi-class form):

    1. ``CR`` = correctness rate of the assignment, ``pm`` / ``S`` = mean / variance
       of ``a`` (variance with ``n - 1``; frequency-weighted when weighted);
    2. moment-matched beta of the memberships: ``NM = pm (1 - pm) / S - 1``,
       ``Beta(pm NM, (1 - pm) NM)``;
    3. target beta with mean ``CR`` and dispersion ``N = min(n, NM)`` (the number of
       rows ``n`` bounds the precision): ``Beta(CR N, (1 - CR) N)``;
    4. scaled membership ``a' = F_target^{-1}(F_fitted(a))``;
       ``P(+) = a'`` if assigned positive else ``1 - a'``.

    Degenerate regions: ``S < eps`` (all memberships equal) or ``CR`` in ``{0, 1}``
    map every membership to ``CR`` ("treated as one point and shifted to the
    correctness rate"). A ``per_class`` region without fitting rows leaves the
    memberships unscaled.

    Parameters
    ----------
    per_class : bool, default=False
        One scaler per assigned class instead of one for both.
    eps : float, default=1e-4
        Variance below which a region's memberships count as one point.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    regions_ : dict
        ``{region: (CR, pm, NM, N)}``; region ``"all"`` or ``0`` / ``1`` (the
        assigned class). ``NM`` / ``N`` are ``nan`` for degenerate regions.

    References
    ----------
    Garczarek, U. M. (2002). Classification rules in standardized partition spaces.
    Dissertation, Universitaet Dortmund.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "per_class": ["boolean"],
        "eps": [Interval(numbers.Real, 0.0, None, closed="left")],
    }

    def __init__(self, per_class: bool = False, eps: float = 1e-4) -> None:
        self.per_class = per_class
        self.eps = eps

    @staticmethod
    def _assign(z: FloatArray) -> tuple[FloatArray, np.ndarray]:
        m = expit(2.0 * z)
        positive = z >= 0.0
        return np.where(positive, m, 1.0 - m), positive

    def _region_keys(self, positive: np.ndarray) -> list[tuple[Any, np.ndarray]]:
        if not self.per_class:
            return [("all", np.ones(positive.shape[0], dtype=bool))]
        return [(0, ~positive), (1, positive)]

    def _fit(self, z: FloatArray, y01: FloatArray, w: FloatArray) -> None:
        a, positive = self._assign(z)
        correct = (positive == (y01 > 0)).astype(np.float64)
        self.regions_: dict[Any, tuple[float, float, float, float]] = {}
        for key, mask in self._region_keys(positive):
            wk = w[mask]
            total = float(np.sum(wk))
            if total <= 0.0:
                continue
            cr = float(np.sum(wk * correct[mask]) / total)
            pm = float(np.sum(wk * a[mask]) / total)
            dev = float(np.sum(wk * (a[mask] - pm) ** 2))
            var = dev / (total - 1.0) if total > 1.0 else 0.0
            if var < self.eps or cr <= 0.0 or cr >= 1.0:
                self.regions_[key] = (cr, pm, float("nan"), float("nan"))
                continue
            nm = max(pm * (1.0 - pm) / var - 1.0, np.finfo(float).tiny)
            self.regions_[key] = (cr, pm, nm, min(total, nm))

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        a, positive = self._assign(z)
        scaled = a.copy()
        for key, mask in self._region_keys(positive):
            if key not in self.regions_ or not np.any(mask):
                continue
            cr, pm, nm, n = self.regions_[key]
            if np.isnan(nm):
                scaled[mask] = cr
                continue
            u = betainc(pm * nm, (1.0 - pm) * nm, a[mask])
            scaled[mask] = betaincinv(cr * n, (1.0 - cr) * n, u)
        return np.where(positive, scaled, 1.0 - scaled)


# ------------------------------------------------------------------------- Sollich
class SollichCalibrator(_ScoreCalibrator):
    """Sollich's Bayesian-SVM class probability evaluated at the MAP (SPEC S4).

    Sollich reads the SVM as the MAP of a Gaussian-process posterior with the
    normalised hinge likelihood ``Q(y | theta) = kappa(C) exp(-C l(y theta))``,
    ``l(u) = max(0, 1 - u)``. Given the latent value ``theta = z`` (the SVM score,
    libsvm convention ``1/2 |w|^2 + C sum l``), the class probability is
    ``Q(+|z) / (Q(+|z) + Q(-|z)) = sigmoid(C (l(-z) - l(z)))``, i.e.
    ``sigmoid(2 C z)`` inside the margin and ``sigmoid(C (z + 1))`` /
    ``sigmoid(C (z - 1))`` beyond it. Nothing is fitted; ``C`` must be the SVM's.
    Sollich's posterior-average variants need Monte Carlo over the GP posterior and
    are not implemented (see ``docs/baselines.md``).

    Parameters
    ----------
    C : float, default=1.0
        The SVM's misclassification penalty (libsvm / scikit-learn convention).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.

    References
    ----------
    Sollich, P. (2002). Bayesian methods for support vector machines: evidence and
    predictive class probabilities. Machine Learning 46, 21-52.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C": [Interval(numbers.Real, 0.0, None, closed="neither")],
    }

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def _proba_positive(self, z: FloatArray) -> FloatArray:
        hinge_pos = np.maximum(0.0, 1.0 - z)
        hinge_neg = np.maximum(0.0, 1.0 + z)
        return expit(self.C * (hinge_neg - hinge_pos))


# ------------------------------------------------------------------------- factory
def make_calibrator(method: str, estimator: Any = None) -> _ScoreCalibrator:
    """Build the score calibrator named ``method``.

    Parameters
    ----------
    method : str
        One of ``"sigmoid"``, ``"isotonic"``, ``"softmax"``, ``"binning10"``,
        ``"binning50"``, ``"svm01"``, ``"svmpp"``, ``"beta"``, ``"sollich"``.
    estimator : estimator, default=None
        Needed for ``"sollich"`` only: its ``C`` parameter is used.

    Returns
    -------
    calibrator : estimator
        An unfitted calibrator.
    """
    simple: dict[str, type[_ScoreCalibrator]] = {
        "sigmoid": PlattCalibrator,
        "isotonic": IsotonicCalibrator,
        "softmax": SoftmaxCalibrator,
        "svm01": Svm01Calibrator,
        "svmpp": SvmPPCalibrator,
        "beta": BetaCalibrator,
    }
    if method in simple:
        return simple[method]()
    if method in ("binning10", "binning50"):
        return BinningCalibrator(n_bins=int(method.removeprefix("binning")))
    if method == "sollich":
        params = estimator.get_params() if estimator is not None else {}
        if "C" not in params:
            raise ValueError(
                "method='sollich' needs the estimator's C parameter; "
                f"{type(estimator).__name__} has none"
            )
        return SollichCalibrator(C=float(params["C"]))
    raise ValueError(
        f"unknown calibration method {method!r}; use {CALIBRATION_METHODS}"
    )


# ---------------------------------------------------------------- CalibratedSVC
class CalibratedSVC(BinaryClassifierMixin, BaseEstimator):
    """An SVM (or any scorer) with probabilities from held-out scores (SPEC S4).

    ``fit`` computes out-of-fold ``decision_function`` values of ``estimator`` with
    ``cv`` inside the training set, fits the calibrator on them, then refits
    ``estimator`` on all rows (``CalibratedClassifierCV(..., ensemble=False)``).
    With ``method="sigmoid"`` / ``"isotonic"`` and the same splitter the
    probabilities equal scikit-learn's.

    Parameters
    ----------
    estimator : estimator, default=None
        Anything with ``fit(X, y, sample_weight=None)`` and ``decision_function``
        (e.g. ``torchsvm.estimators.svc.WeightedSVC`` or ``sklearn.svm.SVC``).
        ``None`` means ``sklearn.svm.SVC()``.
    method : str or calibrator, default="sigmoid"
        ``"sigmoid"`` (Platt), ``"isotonic"``, ``"softmax"``, ``"binning10"``,
        ``"binning50"``, ``"svm01"``, ``"svmpp"``, ``"beta"``, ``"sollich"``, or an
        unfitted calibrator object of this module (it is cloned).
    cv : int or cross-validation splitter, default=5
        As in scikit-learn; an int means (stratified) ``KFold`` without shuffling.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the positive class.
    estimator_ : estimator
        ``estimator`` refitted on all training rows.
    calibrator_ : estimator
        The fitted score calibrator.
    oof_decision_ : ndarray of shape (n,)
        The out-of-fold scores the calibrator was fitted on.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.svm import SVC
    >>> X, y = make_classification(n_samples=60, random_state=0)
    >>> clf = CalibratedSVC(SVC(kernel="linear"), method="svmpp", cv=3).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "estimator": [HasMethods(["fit", "decision_function"]), None],
        "method": [
            StrOptions(set(CALIBRATION_METHODS)),
            HasMethods(["fit", "predict_proba"]),
        ],
        "cv": ["cv_object"],
    }

    def __init__(
        self,
        estimator: Any = None,
        method: str | Any = "sigmoid",
        cv: int | Any = 5,
    ) -> None:
        self.estimator = estimator
        self.method = method
        self.cv = cv

    def _get_estimator(self) -> Any:
        if self.estimator is None:
            from sklearn.svm import SVC

            return SVC()
        return self.estimator

    def _check_folds(self, y01: np.ndarray) -> None:
        n_folds = getattr(self.cv, "n_splits", self.cv)
        if isinstance(n_folds, numbers.Integral):
            smallest = int(np.min(np.bincount(y01.astype(np.intp))))
            if smallest < int(n_folds):
                raise DataError(
                    f"cv={n_folds} folds need at least {n_folds} rows of each class; "
                    f"the smallest class has {smallest}"
                )

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> CalibratedSVC:
        """Fit the estimator and the calibrator.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training rows.
        y : array-like of shape (n,)
            Binary labels.
        sample_weight : array-like of shape (n,), default=None
            Passed to ``estimator.fit`` and to the calibrator.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y01 = _binary_classes(y, type(self).__name__)
        self._check_folds(y01)
        base = self._get_estimator()
        fit_params: dict[str, Any] = {}
        if sample_weight is not None:
            sample_weight = check_binary_sample_weight(
                sample_weight, X, 2.0 * y01 - 1.0, self.classes_, type(self).__name__
            )
            fit_params["sample_weight"] = sample_weight
        cv = check_cv(self.cv, y, classifier=True)
        oof = cross_val_predict(
            clone(base), X, y, cv=cv, method="decision_function", params=fit_params
        )
        self.oof_decision_ = _check_scores(oof, "out-of-fold decision values")
        if isinstance(self.method, str):
            calibrator = make_calibrator(self.method, base)
        else:
            calibrator = clone(self.method)
        self.calibrator_ = calibrator.fit(self.oof_decision_, y, sample_weight)
        self.estimator_ = clone(base).fit(X, y, **fit_params)
        return self

    def decision_function(self, X: ArrayLike) -> FloatArray:
        """Scores of the refitted estimator.

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        scores : ndarray of shape (t,)
            ``estimator_.decision_function(X)``.
        """
        check_is_fitted(self, "estimator_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return _check_scores(self.estimator_.decision_function(X), "decision values")

    def predict_proba(self, X: ArrayLike) -> FloatArray:
        """Calibrated probabilities.

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        proba : ndarray of shape (t, 2)
            Columns ``[P(classes_[0]), P(classes_[1])]``.
        """
        check_is_fitted(self, "calibrator_")
        return self.calibrator_.predict_proba(self.decision_function(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class with the larger calibrated probability (ties: ``classes_[0]``).

        Parameters
        ----------
        X : array-like of shape (t, d)
            Evaluation rows.

        Returns
        -------
        labels : ndarray of shape (t,)
            Predicted labels.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
