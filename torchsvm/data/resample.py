"""Resampling: bootstrap counts, outer folds, anchor splits, k-means compression.

All randomness is drawn on the CPU with ``numpy.random.default_rng(random_state)`` so that
CPU and GPU runs of the same seed see the same replicates (STYLE §4).

- ``bootstrap_counts`` (SPEC S1/S2): a bootstrap replicate of ``n`` rows is the weighted
  problem on the full training set with weight ``c_i`` = the number of times row ``i`` was
  drawn; ``c_i = 0`` marks the out-of-bag rows.
- ``outer_folds`` (SPEC S2, S5, S6): stratified k-fold (train_idx, test_idx) pairs.
- ``split_anchor`` (SPEC S5): stratified split of the rows into a training part ``I`` and
  an anchor part ``J``.
- ``kmeans_compress`` (SPEC S5): each class of a large training set is replaced by the
  centroids of a per-class k-means, with the cluster sizes as sample weights.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import numpy.typing as npt
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning
from sklearn.model_selection import StratifiedKFold

from torchsvm.exceptions import DataError

__all__ = [
    "as_generator",
    "bootstrap_counts",
    "kmeans_compress",
    "outer_folds",
    "split_anchor",
    "stratified_bootstrap_counts",
]

RandomState = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(
    random_state: RandomState | np.random.RandomState,
) -> np.random.Generator:
    """Turn an sklearn-style ``random_state`` into a ``numpy.random.Generator``.

    Parameters
    ----------
    random_state : int, Generator, SeedSequence, RandomState or None
        A ``Generator`` is returned as is (and advanced by the caller's draws); an int or
        ``SeedSequence`` seeds ``default_rng``; a legacy ``RandomState`` seeds a new
        generator from one draw; ``None`` uses fresh OS entropy.

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, bool) or not (
        random_state is None
        or isinstance(
            random_state,
            numbers.Integral | np.random.Generator | np.random.SeedSequence,
        )
    ):
        raise TypeError(
            "random_state must be None, an int, a numpy Generator, SeedSequence or "
            f"RandomState, got {type(random_state).__name__}"
        )
    if isinstance(random_state, numbers.Integral) and random_state < 0:
        raise ValueError(f"random_state must be non-negative, got {random_state}")
    return np.random.default_rng(random_state)


def _check_positive_int(value: int, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_labels(y: npt.ArrayLike, min_classes: int = 2) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise DataError("y is empty")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise DataError("y contains NaN or inf")
    n_classes = np.unique(arr).shape[0]
    if n_classes < min_classes:
        raise DataError(f"y needs at least {min_classes} classes, found {n_classes}")
    return arr


def _counts_from_indices(indices: np.ndarray, n_samples: int) -> np.ndarray:
    n_bootstrap = indices.shape[0]
    offsets = (np.arange(n_bootstrap, dtype=np.int64) * n_samples)[:, None]
    flat = np.bincount((indices + offsets).ravel(), minlength=n_bootstrap * n_samples)
    return flat.reshape(n_bootstrap, n_samples).astype(np.int64)


def bootstrap_counts(
    n_samples: int, n_bootstrap: int, random_state: RandomState = None
) -> np.ndarray:
    """Bootstrap replicates as draw counts (SPEC S1/S2).

    Replicate ``b`` draws ``n_samples`` row indices uniformly with replacement,
    ``rng.integers(0, n_samples, size=(n_bootstrap, n_samples))[b]``, with
    ``rng = numpy.random.default_rng(random_state)``.

    Parameters
    ----------
    n_samples : int
        Number of training rows ``n``.
    n_bootstrap : int
        Number of replicates ``B``.
    random_state : int, Generator, SeedSequence or None
        Seed; the same seed gives the same counts on every platform.

    Returns
    -------
    ndarray of shape (B, n), dtype int64
        ``counts[b, i]`` = number of times row ``i`` was drawn in replicate ``b``; each
        row sums to ``n``. Rows with count 0 are the replicate's out-of-bag rows.
    """
    n = _check_positive_int(n_samples, "n_samples")
    n_boot = _check_positive_int(n_bootstrap, "n_bootstrap")
    rng = as_generator(random_state)
    indices = rng.integers(0, n, size=(n_boot, n))
    return _counts_from_indices(indices, n)


def stratified_bootstrap_counts(
    y: npt.ArrayLike, n_bootstrap: int, random_state: RandomState = None
) -> np.ndarray:
    """Bootstrap counts that keep every class size fixed.

    Within each class (taken in ``numpy.unique`` order) replicate ``b`` draws ``n_c``
    rows with replacement from that class only, so ``counts[b, y == c].sum() == n_c``.
    Useful with small minority classes, where a plain bootstrap may draw no positives.

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels (any values; at least two classes).
    n_bootstrap : int
        Number of replicates ``B``.
    random_state : int, Generator, SeedSequence or None
        Seed.

    Returns
    -------
    ndarray of shape (B, n), dtype int64
    """
    labels = _check_labels(y)
    n_boot = _check_positive_int(n_bootstrap, "n_bootstrap")
    rng = as_generator(random_state)
    n = labels.shape[0]
    counts = np.zeros((n_boot, n), dtype=np.int64)
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        draws = rng.integers(0, members.shape[0], size=(n_boot, members.shape[0]))
        counts[:, members] = _counts_from_indices(draws, members.shape[0])
    return counts


def outer_folds(
    y: npt.ArrayLike, n_splits: int = 10, random_state: int | None = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified, shuffled k-fold split for the outer evaluation loop (SPEC S2, S5).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels.
    n_splits : int, default=10
        Number of folds (SPEC S2: 10; SPEC S5: 5 above 1000 rows).
    random_state : int or None, default=0
        Seed of the shuffle (``StratifiedKFold(shuffle=True)``).

    Returns
    -------
    list of (train_idx, test_idx)
        ``n_splits`` pairs of int64 index arrays; the test parts partition ``range(n)``.

    Raises
    ------
    DataError
        If a class has fewer rows than ``n_splits`` (some test fold would miss it).
    """
    labels = _check_labels(y)
    k = _check_positive_int(n_splits, "n_splits", minimum=2)
    _, class_sizes = np.unique(labels, return_counts=True)
    if class_sizes.min() < k:
        raise DataError(
            f"n_splits={k} exceeds the smallest class size {int(class_sizes.min())}"
        )
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    return [
        (train.astype(np.int64), test.astype(np.int64))
        for train, test in cv.split(np.zeros((labels.shape[0], 1)), labels)
    ]


def split_anchor(
    y: npt.ArrayLike,
    anchor_fraction: float = 0.5,
    random_state: RandomState = 0,
    shuffle: bool = True,
) -> np.ndarray:
    """Split rows into the training part ``I`` and the anchor part ``J`` (SPEC S5).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels.
    anchor_fraction : float, default=0.5
        Share of each class that goes to ``J`` (rounded to the nearest row, and kept
        between 1 and ``n_c - 1`` so that both parts see every class).
    random_state : int, Generator, SeedSequence or None, default=0
        Seed of the per-class permutation.
    shuffle : bool, default=True
        If False, reproduce the thesis' "first half / second half" split: the last
        ``anchor_fraction`` of each class in the given row order is the anchor set.

    Returns
    -------
    ndarray of shape (n,), dtype bool
        ``True`` for anchor rows (``J``), ``False`` for training rows (``I``).

    Raises
    ------
    DataError
        If a class has fewer than 2 rows.
    """
    labels = _check_labels(y)
    if not 0.0 < anchor_fraction < 1.0:
        raise ValueError(f"anchor_fraction must be in (0, 1), got {anchor_fraction}")
    rng = as_generator(random_state)
    mask = np.zeros(labels.shape[0], dtype=bool)
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        n_c = members.shape[0]
        if n_c < 2:
            raise DataError(f"class {cls!r} has {n_c} row(s); need 2 to split I / J")
        n_anchor = min(max(round(anchor_fraction * n_c), 1), n_c - 1)
        chosen = rng.permutation(members)[:n_anchor] if shuffle else members[-n_anchor:]
        mask[chosen] = True
    return mask


def kmeans_compress(
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    n_clusters_per_class: int | dict[object, int],
    random_state: int | None = 0,
    sample_weight: npt.ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class k-means compression with cluster sizes as weights (SPEC S5).

    Each class ``c`` is replaced by the ``k_c`` centroids of a k-means fitted on its rows
    (``KMeans(n_clusters=k_c, n_init=10, random_state)``); every centroid carries the
    total weight of its cluster. A class with at most ``k_c`` rows is kept unchanged.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features (already preprocessed: k-means is scale-sensitive).
    y : array-like of shape (n,)
        Class labels.
    n_clusters_per_class : int or dict
        Centroids per class, or a ``{label: k}`` mapping.
    random_state : int or None, default=0
        Seed of k-means.
    sample_weight : array-like of shape (n,), optional
        Row weights (default 1); centroids are weighted means and the returned weight
        of a centroid is the sum of its members' weights.

    Returns
    -------
    X_c : ndarray of shape (m, d)
        Centroids (and the kept rows of small classes), grouped by class.
    y_c : ndarray of shape (m,)
        Their labels.
    weights : ndarray of shape (m,), float64
        Cluster sizes (sums of member weights); ``weights.sum()`` equals the total input
        weight, and the per-class totals are preserved.
    """
    data = np.asarray(X, dtype=np.float64)
    labels = _check_labels(y, min_classes=1)
    if data.ndim != 2:
        raise DataError(f"X must be 2-D, got shape {data.shape}")
    if data.shape[0] != labels.shape[0]:
        raise DataError(f"X has {data.shape[0]} rows but y has {labels.shape[0]}")
    if not np.all(np.isfinite(data)):
        raise DataError("X contains NaN or inf")
    if sample_weight is None:
        weight = np.ones(labels.shape[0])
    else:
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != labels.shape or np.any(weight < 0):
            raise DataError("sample_weight must be non-negative with the shape of y")
    parts_X: list[np.ndarray] = []
    parts_y: list[np.ndarray] = []
    parts_w: list[np.ndarray] = []
    for cls in np.unique(labels):
        if isinstance(n_clusters_per_class, dict):
            if cls not in n_clusters_per_class:
                raise ValueError(f"n_clusters_per_class has no entry for class {cls!r}")
            k = n_clusters_per_class[cls]
        else:
            k = n_clusters_per_class
        k = _check_positive_int(k, "n_clusters_per_class")
        members = np.flatnonzero(labels == cls)
        if members.shape[0] <= k:
            parts_X.append(data[members])
            parts_w.append(weight[members])
            parts_y.append(labels[members])
            continue
        km = KMeans(n_clusters=k, n_init=10, random_state=random_state)
        with warnings.catch_warnings():
            # duplicate rows can leave fewer distinct centroids; empty ones are dropped
            warnings.simplefilter("ignore", SklearnConvergenceWarning)
            assign = km.fit_predict(data[members], sample_weight=weight[members])
        sizes = np.bincount(assign, weights=weight[members], minlength=k)
        keep = sizes > 0
        parts_X.append(km.cluster_centers_[keep])
        parts_w.append(sizes[keep])
        parts_y.append(np.full(int(keep.sum()), cls, dtype=labels.dtype))
    return np.vstack(parts_X), np.concatenate(parts_y), np.concatenate(parts_w)
