"""Tests of the implied posterior SVC (SPEC S3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from torchsvm.estimators.implied import (
    ImpliedPosteriorSVC,
    implied_posterior,
    implied_posterior_grid,
    vote_fraction,
)
from torchsvm.estimators.svc import WeightedSVC


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(
        n_samples=80,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        flip_y=0.1,
        random_state=0,
    )
    return X, y


@pytest.fixture(scope="module")
def fitted(data: tuple[np.ndarray, np.ndarray]) -> ImpliedPosteriorSVC:
    X, y = data
    return ImpliedPosteriorSVC(C=10.0, gamma=0.2, n_models=21, tol=1e-6).fit(X, y)


def test_grid_balanced_is_uniform_and_excludes_ends() -> None:
    z_pos, z_neg, pi = implied_posterior_grid(201)
    assert z_pos.shape == (199,)
    np.testing.assert_allclose(np.diff(pi), 0.005, atol=1e-12)
    assert pi[0] > 0 and pi[-1] < 1
    np.testing.assert_allclose(z_pos + z_neg, 1.0)


def test_general_reduces_to_balanced_when_c_times_n_equal() -> None:
    # C+ n+ = C- n-: 2 * 30 = 1 * 60
    zb = implied_posterior_grid(11, "balanced")
    zg = implied_posterior_grid(11, "general", C_pos=2.0, C_neg=1.0, n_pos=30, n_neg=60)
    for a, b in zip(zb, zg, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize(
    ("C_pos", "C_neg", "n_pos", "n_neg"), [(1, 1, 30, 70), (5, 1, 80, 20)]
)
def test_general_grid_inverts_eq12_with_positive_weights(
    C_pos: float, C_neg: float, n_pos: float, n_neg: float
) -> None:
    z_pos, z_neg, pi = implied_posterior_grid(41, "general", C_pos, C_neg, n_pos, n_neg)
    np.testing.assert_allclose(implied_posterior(z_pos, C_pos, C_neg, n_pos, n_neg), pi)
    np.testing.assert_allclose(
        z_neg, 0.5 + (0.5 - z_pos) * C_pos * n_pos / (C_neg * n_neg)
    )
    assert (z_pos > 0).all() and (z_neg > 0).all()


def test_vote_fraction_counts_fictitious_models_and_ties() -> None:
    scores = np.array([[1.0, -1.0, 0.0], [1.0, -1.0, -2.0], [1.0, -1.0, 3.0]])
    # H = 3: all positive -> (1 + 3) / 5; none -> 1/5; one tie + one positive -> 2.5/5
    np.testing.assert_allclose(vote_fraction(scores), [0.8, 0.2, 0.5])


def test_posterior_strictly_inside_unit_interval(
    fitted: ImpliedPosteriorSVC, data: tuple[np.ndarray, np.ndarray]
) -> None:
    X, _ = data
    far = np.vstack([X, 100 * X[:3], -100 * X[:3]])
    p = fitted.predict_proba(far)
    H = fitted.posterior_grid_.shape[0]
    assert (p[:, 1] >= 1 / (H + 2) - 1e-12).all() and (
        p[:, 1] <= (H + 1) / (H + 2) + 1e-12
    ).all()
    assert (p > 0).all() and (p < 1).all()
    np.testing.assert_allclose(p.sum(1), 1.0)


def test_points_far_on_positive_side_get_higher_posterior(
    fitted: ImpliedPosteriorSVC, data: tuple[np.ndarray, np.ndarray]
) -> None:
    X, _ = data
    f_mid = fitted.model_scores(X)[fitted.posterior_grid_.shape[0] // 2]
    p = fitted.implied_posterior(X)
    far_pos, far_neg = f_mid > 1.0, f_mid < -1.0
    assert far_pos.any() and far_neg.any()
    assert p[far_pos].min() > p[far_neg].max()
    assert spearmanr(f_mid, p).statistic > 0.9


def test_posterior_monotone_in_mean_score(
    fitted: ImpliedPosteriorSVC, data: tuple
) -> None:
    X, y = data
    p = fitted.implied_posterior(X)
    # a higher posterior means more models vote positive: the implied posterior is
    # a rank-preserving summary of the sweep, so AUC is high on training data
    from torchsvm.metrics import auc

    assert auc(np.where(y == 1, 1, -1), p) > 0.85


@pytest.mark.parametrize("h", [0, 9, 18])
def test_batched_sweep_matches_individual_weighted_svc(
    fitted: ImpliedPosteriorSVC, data: tuple[np.ndarray, np.ndarray], h: int
) -> None:
    X, y = data
    z_pos, z_neg = fitted.z_pos_[h], fitted.z_neg_[h]
    single = WeightedSVC(C=10.0, gamma=0.2, class_weight={0: z_neg, 1: z_pos}, tol=1e-8)
    f_single = single.fit(X, y).decision_function(X)
    f_batch = fitted.model_scores(X)[h]
    scale = np.abs(f_single).max()
    np.testing.assert_allclose(f_batch, f_single, atol=1e-3 * scale)


def test_batched_sweep_matches_sklearn_svc(
    fitted: ImpliedPosteriorSVC, data: tuple[np.ndarray, np.ndarray]
) -> None:
    X, y = data
    h = 4
    ref = SVC(
        C=10.0,
        gamma=0.2,
        class_weight={0: fitted.z_neg_[h], 1: fitted.z_pos_[h]},
        tol=1e-8,
    ).fit(X, y)
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(
        fitted.model_scores(X)[h], f_ref, atol=1e-3 * np.abs(f_ref).max()
    )


def test_general_convention_equals_balanced_when_c_n_balanced(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    X, y = data
    n_pos, n_neg = (y == 1).sum(), (y == 0).sum()
    cw = {0: 1.0, 1: n_neg / n_pos}  # C+ n+ = C- n-
    kw = dict(C=2.0, gamma=0.2, n_models=7, class_weight=cw, tol=1e-8)
    pb = ImpliedPosteriorSVC(convention="balanced", **kw).fit(X, y)
    pg = ImpliedPosteriorSVC(convention="general", **kw).fit(X, y)
    np.testing.assert_allclose(pg.z_pos_, pb.z_pos_)
    np.testing.assert_allclose(pg.predict_proba(X), pb.predict_proba(X))


def test_isotonic_calibration_is_monotone_map_of_raw(
    data: tuple[np.ndarray, np.ndarray],
) -> None:
    X, y = data
    m = ImpliedPosteriorSVC(
        C=10.0, gamma=0.2, n_models=11, calibration="isotonic", cv=3, tol=1e-5
    ).fit(X, y)
    raw = m.implied_posterior(X)
    cal = m.predict_proba(X)[:, 1]
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(cal[order]) >= -1e-12)
    assert m.oof_posterior_ is not None and m.oof_posterior_.shape == (X.shape[0],)
    assert (cal >= 0).all() and (cal <= 1).all()


def test_bad_input_messages(data: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = data
    with pytest.raises(ValueError, match="n_models"):
        ImpliedPosteriorSVC(n_models=2).fit(X, y)
    with pytest.raises(ValueError, match="only one class"):
        ImpliedPosteriorSVC(n_models=5).fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="class_weight has labels"):
        ImpliedPosteriorSVC(n_models=5, class_weight={7: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match="per class"):
        ImpliedPosteriorSVC(n_models=5, calibration="isotonic", cv=5).fit(X[:6], y[:6])
    with pytest.raises(ValueError, match="convention"):
        implied_posterior_grid(5, "other")
