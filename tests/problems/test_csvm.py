"""CsvmProblem (SPEC S5): Hoeffding floors, capping at 1, penalty conventions, Gram."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from torchsvm.exceptions import DataError
from torchsvm.problems.csvm import (
    CsvmProblem,
    FloorCappedWarning,
    floor_guarantee,
    hoeffding_floor,
)


def make_data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(np.arange(n) % 3 == 0, 1.0, -1.0)
    return X, y


def test_hoeffding_floor_formula() -> None:
    # thesis ch. 2: p* = p0 + sqrt(-log(alpha) / (2 n)); Wisconsin 70/30 has 74 anchor
    # positives at anchor_fraction 0.5 and the default target 0.95
    assert hoeffding_floor(0.95, 74, 0.05) == pytest.approx(
        0.95 + math.sqrt(-math.log(0.05) / 148)
    )
    assert hoeffding_floor(0.95, 74, 0.05) == pytest.approx(1.0923, abs=1e-4)
    assert hoeffding_floor(0.7, 10, None) == 0.7
    assert hoeffding_floor(0.0, 10, 0.5) == pytest.approx(math.sqrt(math.log(2) / 20))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.2, 10, 0.05), "rate target"),
        ((-0.1, 10, 0.05), "rate target"),
        ((0.5, 10, 1.0), "hoeffding_alpha"),
        ((0.5, 10, 0.0), "hoeffding_alpha"),
        ((0.5, 0, 0.05), "at least one row"),
    ],
)
def test_hoeffding_floor_rejects_bad_input(args: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        hoeffding_floor(*args)


def test_floor_guarantee_inverts_hoeffding() -> None:
    n, alpha, p0 = 50, 0.05, 0.8
    pstar = hoeffding_floor(p0, n, alpha)
    rate, conf = floor_guarantee(p0, pstar, n, alpha)
    # an uncapped floor guarantees exactly p0 with probability 1 - alpha
    assert rate == pytest.approx(p0)
    assert conf == pytest.approx(1 - alpha)
    # capping at 1 weakens it: a lower rate at 1 - alpha, or p0 at a lower probability
    rate1, conf1 = floor_guarantee(0.95, 1.0, 74, alpha)
    assert rate1 == pytest.approx(1 - math.sqrt(-math.log(alpha) / 148))
    assert conf1 == pytest.approx(1 - math.exp(-2 * 74 * 0.05**2))
    assert rate1 < 0.95 and conf1 < 1 - alpha


def test_floor_above_one_is_capped_with_the_guarantee_stated() -> None:
    X, y = make_data(40)
    anchor = np.arange(40) >= 20  # 7 anchor positives
    n_pos = int(np.sum(y[anchor] > 0))
    pstar = hoeffding_floor(0.95, n_pos, 0.05)
    assert pstar > 1
    with pytest.warns(FloorCappedWarning) as rec:
        p = CsvmProblem.from_data(X, y, anchor, min_tpr=0.95, hoeffding_alpha=0.05)
    msg = str(rec[0].message)
    rate, conf = floor_guarantee(0.95, 1.0, n_pos, 0.05)
    assert f"{pstar:.4g}" in msg and "capped at 1" in msg
    assert f"TPR >= {rate:.4g} with probability 0.95" in msg
    assert f"TPR >= 0.95 only with probability {conf:.4g}" in msg
    (fl,) = p.floors
    assert fl.floor == 1.0 and fl.capped and fl.uncapped == pytest.approx(pstar)
    assert fl.required == n_pos  # every anchor positive must be met
    assert "capped from" in fl.describe()


def test_floor_below_one_is_not_capped_and_does_not_warn() -> None:
    X, y = make_data(200)
    anchor = np.arange(200) >= 100
    with warnings.catch_warnings():
        warnings.simplefilter("error", FloorCappedWarning)
        p = CsvmProblem.from_data(X, y, anchor, min_tpr=0.6, hoeffding_alpha=0.05)
    (fl,) = p.floors
    n_pos = int(np.sum(y[anchor] > 0))
    assert not fl.capped and fl.floor == pytest.approx(
        hoeffding_floor(0.6, n_pos, 0.05)
    )
    assert fl.required == math.ceil(fl.floor * n_pos - 1e-9)


def test_weighted_floor_counts_the_rows_the_weights_stand_for() -> None:
    X, y = make_data(30)
    w = np.full(30, 3.0)
    p = CsvmProblem.from_data(
        X, y, None, on_training=True, min_tnr=0.5, sample_weight=w, hoeffding_alpha=0.1
    )
    (fl,) = p.floors
    n_neg = int(3 * np.sum(y < 0))
    assert fl.n_rows == n_neg
    assert fl.floor == pytest.approx(hoeffding_floor(0.5, n_neg, 0.1))
    assert fl.required == pytest.approx(fl.floor * n_neg)


def test_penalty_conventions() -> None:
    X, y = make_data(30)
    w = np.linspace(0.5, 2.0, 30)
    anchor = np.arange(30) >= 20
    th = CsvmProblem.from_data(
        X, y, anchor, C=3.0, min_tpr=0.5, sample_weight=w, hoeffding_alpha=None
    )
    I = th.train_idx
    n_pos, n_neg = w[I][y[I] > 0].sum(), w[I][y[I] < 0].sum()
    np.testing.assert_allclose(th.cost(), w * np.where(y > 0, 3 / n_pos, 3 / n_neg))
    lib = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=3.0,
        min_tpr=0.5,
        sample_weight=w,
        hoeffding_alpha=None,
        penalty="libsvm",
    )
    # 0.5 ||w||^2 + C sum w_i xi_i == 0.5 (||w||^2 + 2 C sum w_i xi_i)
    np.testing.assert_allclose(lib.cost(), 2 * 3.0 * w)
    assert lib.C_pos == lib.C_neg == 6.0
    with pytest.raises(ValueError, match="penalty"):
        CsvmProblem.from_data(X, y, anchor, min_tpr=0.5, penalty="sklearn")


def test_gram_is_the_rbf_kernel() -> None:
    X, y = make_data(25)
    p = CsvmProblem.from_data(
        X,
        y,
        np.arange(25) >= 12,
        kernel="rbf",
        gamma=0.3,
        min_tpr=0.5,
        hoeffding_alpha=None,
    )
    np.testing.assert_allclose(p.gram(), rbf_kernel(X, gamma=0.3), atol=1e-12)
    rows = np.array([0, 3, 7])
    np.testing.assert_allclose(p.gram(rows), rbf_kernel(X[rows], gamma=0.3), atol=1e-12)


def test_validation_errors_are_specific() -> None:
    X, y = make_data(20)
    with pytest.raises(DataError, match="anchor set J is empty"):
        CsvmProblem.from_data(X, y, None, min_tpr=0.5)
    with pytest.raises(ValueError, match="at least one floor"):
        CsvmProblem.from_data(X, y, np.arange(20) >= 10)
    with pytest.raises(ValueError, match=r"min_tpr must be in \(0, 1\]"):
        CsvmProblem.from_data(X, y, np.arange(20) >= 10, min_tpr=1.5)
