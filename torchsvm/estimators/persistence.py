"""Save and load fitted estimators without pickle: the skops format (issue 13).

``pickle`` runs arbitrary code on load. :func:`save_model` writes a skops file (a zip of
JSON + numpy arrays) and :func:`load_model` reads it back, loading only types it trusts:
numpy/scipy/scikit-learn types that skops trusts by default, plus the torchsvm estimator
types listed in :data:`TRUSTED_TYPES`. Anything else is refused with an
:class:`UntrustedModelError` naming the types, unless the caller lists them in
``trusted``. Fitted torchsvm estimators hold numpy arrays only, so a model fitted on
CUDA loads on a CPU-only machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from torchsvm.estimators._base import check_is_fitted
from torchsvm.exceptions import TorchSvmError

__all__ = ["TRUSTED_TYPES", "UntrustedModelError", "load_model", "save_model"]

#: Fully qualified names of the torchsvm types :func:`load_model` trusts.
TRUSTED_TYPES: tuple[str, ...] = (
    "torchsvm.estimators.svc.WeightedSVC",
    "torchsvm.estimators.svc.BatchedSVC",
    "torchsvm.estimators.bootstrap.BootstrapProbabilitySVC",
    "torchsvm.estimators.implied.ImpliedPosteriorSVC",
    "torchsvm.estimators.sensitivity.SensitivitySweepSVC",
    "torchsvm.estimators.calibration.CalibratedSVC",
    "torchsvm.estimators.calibration.PlattCalibrator",
    "torchsvm.estimators.calibration.IsotonicCalibrator",
    "torchsvm.estimators.calibration.SoftmaxCalibrator",
    "torchsvm.estimators.calibration.BinningCalibrator",
    "torchsvm.estimators.calibration.Svm01Calibrator",
    "torchsvm.estimators.calibration.SvmPPCalibrator",
    "torchsvm.estimators.calibration.BetaCalibrator",
    "torchsvm.estimators.calibration.SollichCalibrator",
    "torchsvm.estimators.kernel_logistic.KernelLogisticRegression",
    "torchsvm.estimators.kernel_logistic.KernelLogisticRegressionCV",
    "torchsvm.estimators.selection.CostSensitiveFeatureSelector",
    "torchsvm.estimators.selection.CardinalityConstrainedSVC",
    "torchsvm.estimators.selection._LinearOnSupport",
    "torchsvm.estimators.csvm.ConstrainedSVC",
    "torchsvm.estimators.csvm.SlidingInterceptSVC",
    "torchsvm.estimators.dea.DeaOutputSelector",
    "torchsvm.types.SolveStatus",
)


class UntrustedModelError(TorchSvmError, ValueError):
    """A model file holds types that are neither trusted by skops nor by torchsvm."""


def _skops_io() -> Any:
    try:
        import skops.io as sio
    except ImportError as exc:  # pragma: no cover - skops is a dependency
        raise ImportError(
            "save_model/load_model need skops (pip install skops)"
        ) from exc
    return sio


def save_model(estimator: Any, path: str | os.PathLike[str]) -> None:
    """Write a fitted estimator to ``path`` in the skops format (no pickle).

    Parameters
    ----------
    estimator : fitted estimator
    path : str or path-like
        Destination file (conventionally ``*.skops``).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``estimator`` is not fitted.
    """
    check_is_fitted(estimator)
    _skops_io().dump(estimator, os.fspath(path))


def load_model(
    path: str | os.PathLike[str], *, trusted: Iterable[str] | None = None
) -> Any:
    """Load an estimator written by :func:`save_model`.

    Parameters
    ----------
    path : str or path-like
    trusted : iterable of str, default=None
        Extra fully qualified type names to trust (e.g. a third-party base estimator
        inside :class:`~torchsvm.estimators.calibration.CalibratedSVC`).

    Returns
    -------
    estimator

    Raises
    ------
    UntrustedModelError
        If the file holds a type neither skops nor torchsvm trusts nor ``trusted`` lists.
    """
    sio = _skops_io()
    path = os.fspath(path)
    untrusted = list(sio.get_untrusted_types(file=path))
    allowed = set(TRUSTED_TYPES) | set(trusted or ())
    unknown = sorted(t for t in untrusted if t not in allowed)
    if unknown:
        raise UntrustedModelError(
            f"{path} holds types that are not trusted: {unknown}; if you trust the file's "
            "origin, pass them as load_model(path, trusted=[...])"
        )
    return sio.load(path, trusted=untrusted)
