"""Probability and classification metrics shared by every experiment (SPEC S2, S3, S4).

Labels may be given as ``{-1, +1}`` (the library's convention), ``{0, 1}`` or booleans;
``+1`` / ``1`` / ``True`` is always the positive class. Probabilities are ``P(y = +1 | x)``.

Definitions
-----------
- ``probability_mse``: the Brier score ``mean((p - 1[y = +1])^2)`` (SPEC S2, the papers' MSE).
- ``log_loss``: mean cross-entropy ``-mean(t log p + (1 - t) log(1 - p))`` with ``p``
  clipped to ``[eps, 1 - eps]`` (SPEC S4).
- ``calibration_score``: ``mean_x |p(x) - iso(p(x))|`` with ``iso`` the increasing isotonic
  regression of ``1[y = +1]`` on ``p`` fitted on the same set (SPEC S3, Nalbantov & Ivanov).
- ``tpr`` / ``tnr`` / ``g_mean`` / ``accuracy`` on hard labels; ``g_mean = sqrt(TPR * TNR)``
  (SPEC S5 model selection for imbalanced sets).
- ``average_ranks``: Rüping-style average rank of each method over datasets (SPEC S4);
  rank 1 is the best, ties get the average of the ranks they span.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy.stats import rankdata
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import roc_auc_score

from torchsvm.exceptions import DataError

__all__ = [
    "accuracy",
    "auc",
    "average_ranks",
    "calibration_score",
    "g_mean",
    "log_loss",
    "probability_mse",
    "summarize_probabilities",
    "tnr",
    "tpr",
]

#: Probabilities within this distance outside [0, 1] are clipped (float round-off);
#: anything further out is an error.
PROBABILITY_SLACK = 1e-9


def _as_1d(values: npt.ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise DataError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise DataError(f"{name} is empty")
    return arr


def binary_targets(y: npt.ArrayLike) -> np.ndarray:
    """Map labels in ``{-1, +1}``, ``{0, 1}`` or bool to the indicator ``1[y = +1]``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels.

    Returns
    -------
    ndarray of shape (n,), dtype int64
        ``1`` for positives, ``0`` for negatives.

    Raises
    ------
    DataError
        If ``y`` is not 1-D, contains NaN, or holds values outside ``{-1, +1}`` /
        ``{0, 1}`` (a mix such as ``{-1, 0, 1}`` is rejected).
    """
    arr = _as_1d(y, "y")
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.number):
        raise DataError(f"y must be numeric or boolean, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise DataError("y contains NaN or inf")
    values = set(np.unique(arr).tolist())
    if values <= {-1, 1}:
        return (arr == 1).astype(np.int64)
    if values <= {0, 1}:
        return (arr == 1).astype(np.int64)
    raise DataError(
        f"y must take values in {{-1, +1}} or {{0, 1}}, got {sorted(values)[:10]}"
    )


def _check_probabilities(p: npt.ArrayLike, n: int, name: str = "p") -> np.ndarray:
    arr = _as_1d(p, name).astype(np.float64)
    if arr.shape[0] != n:
        raise DataError(f"{name} has {arr.shape[0]} entries but y has {n}")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{name} contains NaN or inf")
    lo, hi = float(arr.min()), float(arr.max())
    if lo < -PROBABILITY_SLACK or hi > 1.0 + PROBABILITY_SLACK:
        raise DataError(
            f"{name} must be probabilities in [0, 1], got values in [{lo:.6g}, {hi:.6g}]"
        )
    return np.clip(arr, 0.0, 1.0)


def _check_scores(score: npt.ArrayLike, n: int) -> np.ndarray:
    arr = _as_1d(score, "score").astype(np.float64)
    if arr.shape[0] != n:
        raise DataError(f"score has {arr.shape[0]} entries but y has {n}")
    if not np.all(np.isfinite(arr)):
        raise DataError("score contains NaN or inf")
    return arr


def _check_pair(y: npt.ArrayLike, p: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    t = binary_targets(y)
    return t, _check_probabilities(p, t.shape[0])


def probability_mse(y: npt.ArrayLike, p: npt.ArrayLike) -> float:
    """Mean squared error of ``P(+|x)`` against ``1[y = +1]`` (Brier score; SPEC S2).

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels in ``{-1, +1}`` or ``{0, 1}``.
    p : array-like of shape (n,)
        Predicted ``P(y = +1 | x)`` in ``[0, 1]``.

    Returns
    -------
    float
        ``mean((p - t)^2)``, between 0 and 1.
    """
    t, prob = _check_pair(y, p)
    return float(np.mean((prob - t) ** 2))


def log_loss(y: npt.ArrayLike, p: npt.ArrayLike, eps: float = 1e-15) -> float:
    """Mean cross-entropy of ``P(+|x)`` (SPEC S4).

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels in ``{-1, +1}`` or ``{0, 1}``.
    p : array-like of shape (n,)
        Predicted ``P(y = +1 | x)``.
    eps : float, default=1e-15
        ``p`` is clipped to ``[eps, 1 - eps]`` so that a confident mistake costs
        ``-log(eps)`` instead of infinity.

    Returns
    -------
    float
        ``-mean(t log p + (1 - t) log(1 - p))``.
    """
    if not 0.0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5), got {eps}")
    t, prob = _check_pair(y, p)
    prob = np.clip(prob, eps, 1.0 - eps)
    return float(-np.mean(t * np.log(prob) + (1 - t) * np.log1p(-prob)))


def auc(y: npt.ArrayLike, score: npt.ArrayLike) -> float:
    """Area under the ROC curve of ``score`` (any monotone score or probability).

    Raises
    ------
    DataError
        If only one class is present (the AUC is undefined).
    """
    t = binary_targets(y)
    s = _check_scores(score, t.shape[0])
    if t.min() == t.max():
        raise DataError("AUC is undefined when y holds a single class")
    return float(roc_auc_score(t, s))


def calibration_score(y: npt.ArrayLike, p: npt.ArrayLike) -> float:
    """Calibration score ``mean |p - iso(p)|`` (SPEC S3).

    ``iso`` is the increasing isotonic regression of ``1[y = +1]`` on ``p``, fitted on the
    same rows it is evaluated on (``IsotonicRegression(increasing=True,
    out_of_bounds="clip")``). A perfectly calibrated ``p`` on this sample scores 0.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels in ``{-1, +1}`` or ``{0, 1}``.
    p : array-like of shape (n,)
        Predicted ``P(y = +1 | x)``.

    Returns
    -------
    float
        The mean absolute distance between ``p`` and its isotonic recalibration.
    """
    t, prob = _check_pair(y, p)
    iso = IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0, y_max=1)
    fitted = iso.fit(prob, t.astype(np.float64)).predict(prob)
    return float(np.mean(np.abs(prob - fitted)))


def _confusion(
    y_true: npt.ArrayLike, y_pred: npt.ArrayLike
) -> tuple[int, int, int, int]:
    t = binary_targets(y_true)
    try:
        q = binary_targets(y_pred)
    except DataError as err:
        raise DataError(f"y_pred: {err}") from None
    if q.shape != t.shape:
        raise DataError(f"y_pred has {q.shape[0]} entries but y_true has {t.shape[0]}")
    tp = int(np.sum((t == 1) & (q == 1)))
    fn = int(np.sum((t == 1) & (q == 0)))
    tn = int(np.sum((t == 0) & (q == 0)))
    fp = int(np.sum((t == 0) & (q == 1)))
    return tp, fn, tn, fp


def tpr(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Compute the true positive rate (sensitivity) ``TP / (TP + FN)``.

    Raises
    ------
    DataError
        If ``y_true`` has no positive rows.
    """
    tp, fn, _, _ = _confusion(y_true, y_pred)
    if tp + fn == 0:
        raise DataError("TPR is undefined: y_true has no positive rows")
    return tp / (tp + fn)


def tnr(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Compute the true negative rate (specificity) ``TN / (TN + FP)``.

    Raises
    ------
    DataError
        If ``y_true`` has no negative rows.
    """
    _, _, tn, fp = _confusion(y_true, y_pred)
    if tn + fp == 0:
        raise DataError("TNR is undefined: y_true has no negative rows")
    return tn / (tn + fp)


def g_mean(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Geometric mean ``sqrt(TPR * TNR)`` (SPEC S5 selection rule for minority < 30 %)."""
    return math.sqrt(tpr(y_true, y_pred) * tnr(y_true, y_pred))


def accuracy(y_true: npt.ArrayLike, y_pred: npt.ArrayLike) -> float:
    """Fraction of rows whose predicted class equals the true class."""
    tp, fn, tn, fp = _confusion(y_true, y_pred)
    return (tp + tn) / (tp + fn + tn + fp)


def average_ranks(
    table: pd.DataFrame | npt.ArrayLike, higher_is_better: bool = False
) -> pd.Series | np.ndarray:
    """Average rank of each method over datasets (Rüping; SPEC S4).

    Parameters
    ----------
    table : DataFrame or array-like of shape (n_datasets, n_methods)
        One row per dataset, one column per method, holding a metric value.
    higher_is_better : bool, default=False
        By default lower values are better (MSE, log loss, calibration score); set
        ``True`` for AUC or accuracy.

    Returns
    -------
    Series indexed by the columns (for a DataFrame) or ndarray of shape (n_methods,)
        Mean over datasets of each method's rank; rank 1 is the best and tied methods
        share the average of the ranks they span.

    Raises
    ------
    DataError
        If the table is not 2-D, is empty or holds NaN.
    """
    values = np.asarray(table, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] == 0 or values.shape[1] == 0:
        raise DataError(
            f"table must be 2-D (n_datasets, n_methods), got shape {values.shape}"
        )
    if not np.all(np.isfinite(values)):
        raise DataError("table contains NaN or inf; drop or fill missing results first")
    ranks = rankdata(-values if higher_is_better else values, method="average", axis=1)
    mean_ranks = ranks.mean(axis=0)
    if isinstance(table, pd.DataFrame):
        return pd.Series(mean_ranks, index=table.columns, name="average_rank")
    return mean_ranks


def summarize_probabilities(
    y: npt.ArrayLike, p: npt.ArrayLike, threshold: float = 0.5
) -> dict[str, Any]:
    """All SPEC S2/S4 metrics of one set of probabilities, as a flat dict.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels in ``{-1, +1}`` or ``{0, 1}``.
    p : array-like of shape (n,)
        Predicted ``P(y = +1 | x)``.
    threshold : float, default=0.5
        Rows with ``p >= threshold`` are classified positive for the hard-label metrics.

    Returns
    -------
    dict
        Keys ``n``, ``n_positive``, ``mse``, ``log_loss``, ``auc``, ``calibration``,
        ``accuracy``, ``tpr``, ``tnr``, ``g_mean``. Metrics undefined on this sample
        (AUC, TPR, TNR, G-mean with a single class) are ``nan``.
    """
    t, prob = _check_pair(y, p)
    pred = (prob >= threshold).astype(np.int64)
    out: dict[str, Any] = {
        "n": int(t.shape[0]),
        "n_positive": int(t.sum()),
        "mse": probability_mse(t, prob),
        "log_loss": log_loss(t, prob),
        "calibration": calibration_score(t, prob),
        "accuracy": accuracy(t, pred),
    }
    for key, fn in (("auc", auc), ("tpr", tpr), ("tnr", tnr), ("g_mean", g_mean)):
        try:
            out[key] = fn(t, prob if key == "auc" else pred)
        except DataError:
            out[key] = float("nan")
    return out
