"""ConstrainedSVC and the S5c ensemble (SPEC S5, S5c)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from torchsvm.data.resample import bootstrap_counts
from torchsvm.estimators.csvm import ConstrainedSVC, fit_s5c_ensemble
from torchsvm.exceptions import InfeasibleProblemError, SolverTimeLimitWarning


def make_data(seed: int = 0, n: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] + 0.8 * rng.normal(size=n) > 0.3, "sick", "ok")
    return X, y


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_floors_hold_on_anchor_set(kernel: str) -> None:
    X, y = make_data()
    clf = ConstrainedSVC(C=1.0, kernel=kernel, min_tpr=0.9, hoeffding_alpha=None)
    clf.fit(X, y)
    assert list(clf.classes_) == ["ok", "sick"]
    assert clf.status_ == "optimal"
    assert clf.mip_gap_ <= 1e-4
    assert clf.achieved_rates_["tpr"] >= clf.floors_["tpr"]
    J = clf.anchor_mask_
    pred = clf.predict(X[J])
    assert np.mean(pred[y[J] == "sick"] == "sick") == pytest.approx(
        clf.achieved_rates_["tpr"]
    )
    if kernel == "linear":
        np.testing.assert_allclose(
            clf.decision_function(X), X @ clf.coef_[0] + clf.intercept_[0], atol=1e-10
        )
    else:
        assert clf.dual_coef_.shape[1] == clf.support_vectors_.shape[0]


def test_floor_raises_tpr_over_plain_svm() -> None:
    X, y = make_data(1, n=100)
    loose = ConstrainedSVC(min_tpr=0.05, hoeffding_alpha=None).fit(X, y)
    tight = ConstrainedSVC(min_tpr=0.97, hoeffding_alpha=None).fit(X, y)
    assert tight.achieved_rates_["tpr"] >= 0.97
    assert tight.objective_ >= loose.objective_ - 1e-9


def test_anchor_mask_and_hoeffding() -> None:
    X, y = make_data(2, n=120)
    mask = np.arange(120) >= 60
    clf = ConstrainedSVC(min_tpr=0.7, hoeffding_alpha=0.05).fit(X, y, anchor_mask=mask)
    np.testing.assert_array_equal(clf.anchor_mask_, mask)
    n_pos = int(np.sum(y[mask] == "sick"))
    assert clf.floors_["tpr"] == pytest.approx(
        0.7 + np.sqrt(np.log(0.05) / (-2 * n_pos))
    )
    assert clf.achieved_rates_["tpr"] >= clf.floors_["tpr"]


def test_infeasible_floor_is_named() -> None:
    X, y = make_data(3, n=40)
    with pytest.raises(InfeasibleProblemError, match="TNR floor cannot be met"):
        ConstrainedSVC(min_tpr=None, min_tnr=0.99, hoeffding_alpha=0.05).fit(X, y)


def test_time_limit_returns_incumbent_with_warning() -> None:
    X, y = make_data(4, n=400)
    clf = ConstrainedSVC(min_tpr=0.9, hoeffding_alpha=None, time_limit=0.01)
    with pytest.warns(SolverTimeLimitWarning):
        clf.fit(X, y)
    assert clf.status_ == "time_limit"
    assert clf.mip_gap_ >= 0
    assert clf.achieved_rates_["tpr"] >= clf.floors_["tpr"]


def test_sklearn_clone_and_params() -> None:
    clf = ConstrainedSVC(C=2.0, kernel="rbf", gamma=0.3, min_tnr=0.8)
    c2 = clone(clf)
    assert c2.get_params()["C"] == 2.0
    with pytest.raises(ValueError):
        ConstrainedSVC(kernel="poly").fit(*make_data())


def test_s5c_ensemble_rates_and_parallel() -> None:
    X, y = make_data(5, n=40)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    counts = bootstrap_counts(40, 3, np.random.default_rng(0))
    ens = fit_s5c_ensemble(X, y_pm, counts, C=1.0, min_tpr=0.9, time_limit=30)
    assert ens.statuses == ["optimal"] * 3
    F = ens.decision_function(X)
    assert F.shape == (3, 40)
    for b in range(3):
        w = counts[b]
        pos = y_pm > 0
        tpr = np.sum(w[pos] * (F[b, pos] > 0)) / np.sum(w[pos])
        assert tpr >= 0.9 - 1e-9
    p = ens.predict_proba_positive(X)
    assert np.all((p >= 0) & (p <= 1))


@pytest.mark.slow
def test_s5c_ensemble_parallel_matches_serial() -> None:
    X, y = make_data(5, n=40)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    counts = bootstrap_counts(40, 3, np.random.default_rng(0))
    F = fit_s5c_ensemble(X, y_pm, counts, C=1.0, min_tpr=0.9).decision_function(X)
    par = fit_s5c_ensemble(X, y_pm, counts, C=1.0, min_tpr=0.9, time_limit=30, n_jobs=2)
    np.testing.assert_allclose(
        par.decision_function(X), F, atol=1e-4 * (1 + np.abs(F).max())
    )


_ANCHOR_SPLIT = (
    "the anchor set J is a random stratified split of the rows, so repeating a row "
    "and doubling its weight give different splits, hence different MIQPs"
)


@parametrize_with_checks(
    [ConstrainedSVC(min_tpr=0.5, hoeffding_alpha=None, time_limit=5.0)],
    expected_failed_checks=lambda est: {
        "check_sample_weight_equivalence_on_dense_data": _ANCHOR_SPLIT
    },
)
def test_sklearn_compatible(estimator, check) -> None:
    """scikit-learn's estimator checks (binary-only classifier tag)."""
    check(estimator)
