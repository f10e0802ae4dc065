"""Resampling helpers: bootstrap counts, folds, anchor split, k-means compression."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.cluster import KMeans

from torchsvm.data.resample import (
    as_generator,
    bootstrap_counts,
    kmeans_compress,
    outer_folds,
    split_anchor,
    stratified_bootstrap_counts,
)
from torchsvm.exceptions import DataError


def test_bootstrap_counts_shape_dtype_and_sums(seed: int) -> None:
    counts = bootstrap_counts(37, 50, random_state=seed)
    assert counts.shape == (50, 37)
    assert counts.dtype == np.int64
    assert np.all(counts >= 0)
    np.testing.assert_array_equal(counts.sum(axis=1), 37)


def test_bootstrap_counts_match_index_draws(seed: int) -> None:
    # the documented draw: rng.integers(0, n, size=(B, n)), then per-row bincount
    idx = np.random.default_rng(seed).integers(0, 20, size=(5, 20))
    expected = np.stack([np.bincount(row, minlength=20) for row in idx])
    np.testing.assert_array_equal(bootstrap_counts(20, 5, seed), expected)


def test_bootstrap_counts_reproducible(seed: int) -> None:
    a = bootstrap_counts(100, 20, random_state=seed)
    np.testing.assert_array_equal(a, bootstrap_counts(100, 20, random_state=seed))
    assert not np.array_equal(a, bootstrap_counts(100, 20, random_state=seed + 1))
    gen = np.random.default_rng(seed)
    np.testing.assert_array_equal(a, bootstrap_counts(100, 20, random_state=gen))


def test_bootstrap_counts_distribution(seed: int) -> None:
    n, B = 500, 400
    counts = bootstrap_counts(n, B, random_state=seed)
    assert counts.mean() == pytest.approx(1.0)  # exact: rows sum to n
    p_oob = np.mean(counts == 0)
    expected = (1 - 1 / n) ** n  # ~ e^-1 = 0.368
    sd = math.sqrt(expected * (1 - expected) / (n * B))
    assert abs(p_oob - expected) < 6 * sd + 1e-3
    # each count is Binomial(n, 1/n): variance (1 - 1/n)
    assert counts.var() == pytest.approx(1 - 1 / n, rel=0.05)


@pytest.mark.parametrize(
    ("args", "exc"),
    [
        ((0, 5, 0), ValueError),
        ((5, 0, 0), ValueError),
        ((5.0, 5, 0), TypeError),
        ((5, 5, "seed"), TypeError),
        ((5, 5, -1), ValueError),
        ((True, 5, 0), TypeError),
    ],
)
def test_bootstrap_counts_bad_input(args: tuple, exc: type) -> None:
    with pytest.raises(exc):
        bootstrap_counts(*args)


def test_as_generator_accepts_legacy_random_state() -> None:
    g1 = as_generator(np.random.RandomState(3))
    g2 = as_generator(np.random.RandomState(3))
    assert g1.integers(1000) == g2.integers(1000)


def test_stratified_bootstrap_keeps_class_sizes(seed: int) -> None:
    y = np.array([1] * 7 + [-1] * 23)
    counts = stratified_bootstrap_counts(y, 40, random_state=seed)
    assert counts.shape == (40, 30)
    np.testing.assert_array_equal(counts[:, y == 1].sum(axis=1), 7)
    np.testing.assert_array_equal(counts[:, y == -1].sum(axis=1), 23)
    np.testing.assert_array_equal(
        counts, stratified_bootstrap_counts(y, 40, random_state=seed)
    )
    with pytest.raises(DataError, match="classes"):
        stratified_bootstrap_counts(np.ones(5), 3, 0)


def test_outer_folds_partition_and_stratify(seed: int) -> None:
    y = np.array([1] * 30 + [-1] * 70)
    folds = outer_folds(y, n_splits=10, random_state=seed)
    assert len(folds) == 10
    tests = np.concatenate([te for _, te in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(100))
    for train, test in folds:
        assert np.intersect1d(train, test).size == 0
        assert train.size + test.size == 100
        assert (y[test] == 1).sum() == 3
    again = outer_folds(y, n_splits=10, random_state=seed)
    for (a, b), (c, d) in zip(folds, again, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_outer_folds_bad_input() -> None:
    with pytest.raises(DataError, match="smallest class"):
        outer_folds([1, 1, -1, -1, -1], n_splits=3)
    with pytest.raises(ValueError, match="n_splits"):
        outer_folds([1, -1] * 5, n_splits=1)
    with pytest.raises(DataError, match="1-D"):
        outer_folds(np.ones((4, 2)))


def test_split_anchor_stratified(seed: int) -> None:
    y = np.array([1] * 21 + [-1] * 40)
    mask = split_anchor(y, 0.5, random_state=seed)
    assert mask.dtype == bool
    assert mask.shape == (61,)
    assert (mask & (y == 1)).sum() == round(0.5 * 21)
    assert (mask & (y == -1)).sum() == 20
    np.testing.assert_array_equal(mask, split_anchor(y, 0.5, random_state=seed))


def test_split_anchor_first_half_second_half() -> None:
    y = np.array([1, -1, 1, -1, 1, -1, 1, -1])
    mask = split_anchor(y, 0.5, shuffle=False)
    np.testing.assert_array_equal(np.flatnonzero(mask), [4, 5, 6, 7])


def test_split_anchor_bad_input() -> None:
    with pytest.raises(DataError, match="row"):
        split_anchor([1, -1, -1, -1])
    with pytest.raises(ValueError, match="anchor_fraction"):
        split_anchor([1, 1, -1, -1], anchor_fraction=1.0)


def test_kmeans_compress_weights_and_centroids(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (60, 3)), rng.normal(4, 1, (25, 3))])
    y = np.array([-1] * 60 + [1] * 25)
    Xc, yc, w = kmeans_compress(X, y, n_clusters_per_class=5, random_state=seed)
    assert Xc.shape == (10, 3)
    assert yc.shape == (10,)
    assert w.shape == (10,)
    assert w[yc == -1].sum() == 60
    assert w[yc == 1].sum() == 25
    # oracle: a plain per-class KMeans with the same seed gives the same centroids
    km = KMeans(n_clusters=5, n_init=10, random_state=seed).fit(X[y == 1])
    np.testing.assert_allclose(Xc[yc == 1], km.cluster_centers_)
    np.testing.assert_array_equal(w[yc == 1], np.bincount(km.labels_, minlength=5))
    # the weighted mean of the centroids is the class mean
    np.testing.assert_allclose(
        (w[yc == -1, None] * Xc[yc == -1]).sum(0) / 60, X[y == -1].mean(0)
    )


def test_kmeans_compress_small_class_kept_and_dict() -> None:
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.array([1, 1, -1, -1, -1, -1, -1, -1, -1, -1])
    Xc, yc, w = kmeans_compress(X, y, {1: 5, -1: 3}, random_state=0)
    np.testing.assert_array_equal(Xc[yc == 1], X[:2])
    np.testing.assert_array_equal(w[yc == 1], [1, 1])
    assert (yc == -1).sum() == 3
    assert w[yc == -1].sum() == 8


def test_kmeans_compress_bad_input() -> None:
    X = np.zeros((4, 2))
    with pytest.raises(DataError, match="rows"):
        kmeans_compress(X, [1, -1, 1], 2)
    with pytest.raises(DataError, match="NaN"):
        kmeans_compress(np.full((2, 2), np.nan), [1, -1], 2)
    with pytest.raises(ValueError, match="no entry"):
        kmeans_compress(X, [1, -1, 1, -1], {1: 1})
