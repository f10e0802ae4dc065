"""Metrics vs sklearn oracles and hand-computed cases (SPEC S3, S4)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss

from torchsvm.exceptions import DataError
from torchsvm.metrics import (
    accuracy,
    auc,
    average_ranks,
    binary_targets,
    calibration_score,
    g_mean,
    log_loss,
    probability_mse,
    summarize_probabilities,
    tnr,
    tpr,
)


@pytest.fixture
def sample(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.choice([-1, 1], size=200)
    p = np.clip(0.5 + 0.3 * y + rng.normal(0, 0.25, size=200), 0.01, 0.99)
    return y, p


def test_binary_targets_accepts_both_conventions() -> None:
    np.testing.assert_array_equal(binary_targets([-1, 1, 1]), [0, 1, 1])
    np.testing.assert_array_equal(binary_targets([0, 1, 0]), [0, 1, 0])
    np.testing.assert_array_equal(binary_targets([True, False]), [1, 0])
    np.testing.assert_array_equal(binary_targets([1.0, -1.0]), [1, 0])


@pytest.mark.parametrize(
    "bad", [[-1, 0, 1], [1, 2], ["a", "b"], [np.nan, 1.0], [], [[1, -1], [1, -1]]]
)
def test_binary_targets_rejects_bad_labels(bad: list) -> None:
    with pytest.raises(DataError):
        binary_targets(bad)


def test_probability_mse_matches_brier_score_loss(sample) -> None:
    y, p = sample
    assert probability_mse(y, p) == pytest.approx(brier_score_loss(y == 1, p))
    assert probability_mse((y == 1).astype(int), p) == pytest.approx(
        probability_mse(y, p)
    )


def test_log_loss_matches_sklearn(sample) -> None:
    y, p = sample
    assert log_loss(y, p) == pytest.approx(sk_log_loss(y == 1, p), rel=1e-12)


def test_log_loss_clips_extremes() -> None:
    # a confident mistake costs -log(eps), not infinity
    assert log_loss([1], [0.0], eps=1e-15) == pytest.approx(-math.log(1e-15))
    assert log_loss([-1, 1], [0.0, 1.0]) == pytest.approx(-math.log(1 - 1e-15))
    with pytest.raises(ValueError, match="eps"):
        log_loss([1], [0.5], eps=0.0)


def test_auc_matches_roc_auc_score(sample) -> None:
    y, p = sample
    assert auc(y, p) == pytest.approx(roc_auc_score(y, p))
    # any score works, not only probabilities
    assert auc(y, 10 * p - 3) == pytest.approx(roc_auc_score(y, p))
    assert auc([-1, 1, -1, 1], [0.1, 0.2, 0.2, 0.9]) == pytest.approx(0.875)


def test_auc_single_class_raises() -> None:
    with pytest.raises(DataError, match="single class"):
        auc([1, 1, 1], [0.1, 0.2, 0.3])


def test_calibration_score_hand_case() -> None:
    # iso fit of t=[0,1,0,1] on p=[.1,.2,.3,.4] pools (.2,.3) -> [0, .5, .5, 1]
    y = [-1, 1, -1, 1]
    p = [0.1, 0.2, 0.3, 0.4]
    expected = np.mean(np.abs(np.array(p) - np.array([0.0, 0.5, 0.5, 1.0])))
    assert calibration_score(y, p) == pytest.approx(expected)


def test_calibration_score_matches_isotonic_regression(sample) -> None:
    y, p = sample
    t = (y == 1).astype(float)
    iso = IsotonicRegression(out_of_bounds="clip").fit(p, t)
    assert calibration_score(y, p) == pytest.approx(np.mean(np.abs(p - iso.predict(p))))


def test_calibration_score_zero_when_calibrated_on_sample() -> None:
    # p equals the empirical frequency within each level and increases
    y = [-1, -1, 1, -1, 1, 1, 1, 1]
    p = [0.25] * 4 + [1.0] * 4
    assert calibration_score(y, p) == pytest.approx(0.0, abs=1e-12)


def test_rates_hand_case() -> None:
    y = np.array([1, 1, 1, 1, -1, -1, -1, -1, -1, -1])
    pred = np.array([1, 1, 1, -1, -1, -1, -1, -1, 1, 1])
    assert tpr(y, pred) == pytest.approx(0.75)
    assert tnr(y, pred) == pytest.approx(4 / 6)
    assert g_mean(y, pred) == pytest.approx(math.sqrt(0.75 * 4 / 6))
    assert accuracy(y, pred) == pytest.approx(0.7)
    # {0, 1} predictions are accepted too
    assert tpr(y, (pred == 1).astype(int)) == pytest.approx(0.75)


def test_rates_undefined_raise() -> None:
    with pytest.raises(DataError, match="no positive"):
        tpr([-1, -1], [1, -1])
    with pytest.raises(DataError, match="no negative"):
        tnr([1, 1], [1, -1])
    with pytest.raises(DataError, match="entries"):
        accuracy([1, -1], [1, -1, 1])


@pytest.mark.parametrize(
    ("p", "match"),
    [
        ([0.5, 1.2], r"\[0, 1\]"),
        ([0.5, -0.1], r"\[0, 1\]"),
        ([0.5, np.nan], "NaN"),
        ([0.5], "entries"),
        ([[0.5, 0.5], [0.5, 0.5]], "1-D"),
    ],
)
def test_probability_validation(p: list, match: str) -> None:
    with pytest.raises(DataError, match=match):
        probability_mse([1, -1], p)


def test_round_off_outside_unit_interval_is_clipped() -> None:
    assert probability_mse([1, -1], [1 + 1e-12, -1e-12]) == pytest.approx(0.0)


def test_average_ranks_hand_case() -> None:
    table = pd.DataFrame(
        {"a": [0.1, 0.3, 0.2], "b": [0.2, 0.1, 0.2], "c": [0.3, 0.2, 0.1]},
        index=["d1", "d2", "d3"],
    )
    # d1: a1 b2 c3; d2: b1 c2 a3; d3: c1, a/b tie 2.5
    ranks = average_ranks(table)
    assert list(ranks.index) == ["a", "b", "c"]
    np.testing.assert_allclose(ranks.to_numpy(), [6.5 / 3, 5.5 / 3, 6 / 3])
    # reversing the order maps rank r to (n_methods + 1) - r
    np.testing.assert_allclose(
        average_ranks(table.to_numpy(), higher_is_better=True),
        4 - np.array([6.5 / 3, 5.5 / 3, 6 / 3]),
    )
    assert ranks.sum() == pytest.approx(6.0)  # ranks of 3 methods sum to 1+2+3


def test_average_ranks_rejects_nan_and_shape() -> None:
    with pytest.raises(DataError, match="NaN"):
        average_ranks([[0.1, np.nan]])
    with pytest.raises(DataError, match="2-D"):
        average_ranks([0.1, 0.2])


def test_summarize_probabilities(sample) -> None:
    y, p = sample
    s = summarize_probabilities(y, p)
    assert s["n"] == 200
    assert s["n_positive"] == int((y == 1).sum())
    assert s["mse"] == pytest.approx(brier_score_loss(y == 1, p))
    assert s["auc"] == pytest.approx(roc_auc_score(y, p))
    pred = np.where(p >= 0.5, 1, -1)
    assert s["accuracy"] == pytest.approx(np.mean(pred == y))
    assert s["g_mean"] == pytest.approx(math.sqrt(s["tpr"] * s["tnr"]))
    one_class = summarize_probabilities([1, 1], [0.9, 0.8])
    assert math.isnan(one_class["auc"])
    assert math.isnan(one_class["tnr"])
