"""Shared plumbing of the scikit-learn front ends (STYLE section 2, ``estimators/_base.py``).

One home for what every estimator of :mod:`torchsvm.estimators` repeats:

- the scikit-learn private imports (``_param_validation``, ``validate_data``,
  ``_check_sample_weight``, ``_fit_context``): estimator modules import them from here, so
  a change of scikit-learn's private API is fixed in one place;
- parameter constraints shared by the kernel/solver estimators
  (:data:`SVM_PARAMETER_CONSTRAINTS`, :data:`DEVICE_CONSTRAINTS`);
- binary label encoding (:func:`encode_binary`), class weights
  (:func:`class_weight_vector`) and sample-weight checks that refuse a weighting leaving
  one class with zero weight (:func:`check_binary_sample_weight`);
- device/dtype resolution (:class:`TorchDeviceMixin`; ``device="cuda"`` without a GPU is
  an error, never a fallback) and :func:`to_numpy`, so fitted attributes (and pickles)
  hold numpy arrays only and a model fitted on CUDA loads on a CPU machine;
- :func:`warn_if_not_converged`: a fit stopped by ``max_iter`` raises
  :class:`~torchsvm.exceptions.ConvergenceWarning` (a subclass of scikit-learn's).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import ClassifierTags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from torchsvm.exceptions import ConvergenceWarning, DataError
from torchsvm.kernels import KERNELS
from torchsvm.problems.svm import resolve_device, resolve_dtype

__all__ = [
    "DEVICE_CONSTRAINTS",
    "SVM_PARAMETER_CONSTRAINTS",
    "BaseEstimator",
    "BinaryBatchMixin",
    "BinaryClassifierMixin",
    "ClassifierMixin",
    "HasMethods",
    "Interval",
    "NotFittedError",
    "StrOptions",
    "TorchDeviceMixin",
    "_check_sample_weight",
    "_fit_context",
    "check_binary_sample_weight",
    "check_is_fitted",
    "class_weight_vector",
    "clone",
    "column_or_1d",
    "encode_binary",
    "to_numpy",
    "validate_data",
    "warn_if_not_converged",
]

#: ``device`` and ``dtype`` of every estimator that runs the batched solver.
DEVICE_CONSTRAINTS: dict[str, list[Any]] = {
    "device": [str, torch.device],
    "dtype": [StrOptions({"float64", "float32"})],
}

#: Kernel and solver parameters shared by the batched estimators (sklearn names).
SVM_PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel": [StrOptions(set(KERNELS))],
    "gamma": [
        StrOptions({"scale", "auto"}),
        Interval(Real, 0.0, None, closed="neither"),
    ],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
    "tol": [Interval(Real, 0.0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    **DEVICE_CONSTRAINTS,
}


def encode_binary(y: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``classes_`` and labels in {-1, +1} (``classes_[1]`` is +1).

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels (any two values; the larger sorted one is positive).
    name : str
        Estimator name for the error messages.

    Returns
    -------
    classes : ndarray of shape (2,)
    y_pm : ndarray of shape (n,) of float
        +1 for ``classes[1]``, -1 for ``classes[0]``.

    Raises
    ------
    DataError
        (a ``ValueError``) for continuous targets, one class or more than two classes.
    """
    y = column_or_1d(y, warn=True)
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise DataError(
            f"{name} needs samples of 2 classes, but the data contains only one class "
            f"(1 class: {classes.tolist()})"
        )
    if classes.size > 2:
        raise DataError(
            f"Only binary classification is supported. {name} got {classes.size} classes "
            f"{classes[:6].tolist()} (reduce to two, e.g. largest class vs the rest)"
        )
    return classes, np.where(y == classes[1], 1.0, -1.0)


def check_binary_sample_weight(
    sample_weight: Any, X: Any, y_pm: np.ndarray, classes: np.ndarray, name: str
) -> np.ndarray:
    """Non-negative finite weights of shape (n,) that leave weight on both classes.

    A weighting that zeroes one class would fit a one-class problem and still predict
    that class; it is refused with a message naming the class.
    """
    sw = _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True
    )
    if not np.any(sw > 0):
        raise DataError(
            f"{name}: sample_weight is zero for every sample: nothing to fit"
        )
    for label, sign in ((classes[0], -1.0), (classes[1], 1.0)):
        if not np.any(sw[y_pm == sign] > 0):
            raise DataError(
                f"{name}: every sample of class {label!r} has zero weight "
                "(the weighting leaves one class)"
            )
    return sw


def class_weight_vector(
    class_weight: Any, classes: np.ndarray, y_pm: np.ndarray, sample_weight: np.ndarray
) -> np.ndarray:
    """``[kappa_-, kappa_+]`` from None, ``"balanced"`` (weighted counts) or a label dict."""
    if class_weight is None:
        return np.ones(2)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(
                f"class_weight must be None, 'balanced' or a dict; got {class_weight!r}"
            )
        tot = sample_weight.sum()
        w_neg = sample_weight[y_pm < 0].sum()
        w_pos = sample_weight[y_pm > 0].sum()
        if w_neg <= 0 or w_pos <= 0:
            raise DataError(
                "class_weight='balanced' needs positive total weight in both classes"
            )
        return np.array([tot / (2 * w_neg), tot / (2 * w_pos)])
    if isinstance(class_weight, dict):
        unknown = set(class_weight) - set(classes.tolist())
        if unknown:
            raise ValueError(
                f"class_weight has labels {sorted(map(str, unknown))} not in classes "
                f"{classes.tolist()}"
            )
        kap = np.array(
            [
                float(class_weight.get(classes[0], 1.0)),
                float(class_weight.get(classes[1], 1.0)),
            ]
        )
        if not np.isfinite(kap).all() or (kap <= 0).any():
            raise ValueError(
                f"class weights must be finite and > 0; got {kap.tolist()}"
            )
        return kap
    raise ValueError(
        f"class_weight must be None, 'balanced' or a dict; got {type(class_weight).__name__}"
    )


def to_numpy(x: Any) -> Any:
    """A tensor as a CPU numpy array (``None`` and numpy arrays pass through)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return x


def warn_if_not_converged(
    statuses: Iterable[Any], name: str, max_iter: int, tol: float
) -> None:
    """Raise :class:`~torchsvm.exceptions.ConvergenceWarning` if a fit hit ``max_iter``."""
    values = [getattr(s, "value", s) for s in statuses]
    n_bad = sum(v == "max_iter" for v in values)
    if n_bad:
        warnings.warn(
            f"{name}: {n_bad} of {len(values)} problem(s) stopped at max_iter={max_iter} "
            f"before reaching tol={tol:g}; increase max_iter or tol",
            ConvergenceWarning,
            stacklevel=3,
        )


class TorchDeviceMixin:
    """``device`` / ``dtype`` parameters resolved in one place (STYLE section 4)."""

    device: Any
    dtype: Any

    def _device(self) -> torch.device:
        return resolve_device(self.device)

    def _dtype(self) -> torch.dtype:
        return resolve_dtype(self.dtype)

    def _as_tensor(self, X: np.ndarray) -> torch.Tensor:
        """``X`` on the estimator's device/dtype (copies a read-only array)."""
        X = X if X.flags.writeable else np.array(X)
        return torch.as_tensor(X, dtype=self._dtype(), device=self._device())


class BinaryBatchMixin:
    """Tags of an estimator that fits P binary classifiers at once (not a classifier).

    ``predict`` returns shape (P, t), so scikit-learn's classifier checks do not apply;
    the tags still say that ``fit`` needs a binary target.
    """

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.classifier_tags = ClassifierTags(multi_class=False)
        tags.target_tags.required = True
        return tags


class BinaryClassifierMixin(ClassifierMixin):
    """A binary-only classifier: tags say so (SPEC S1-S6 are binary)."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
