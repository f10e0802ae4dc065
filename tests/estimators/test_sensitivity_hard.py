"""Hard-margin sweeps (the paper's C- = infinity / epsilon- = 0), mirrored paths and the
paired fold test (SPEC S1, S1b; issue 17)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from torchsvm.estimators.sensitivity import (
    SensitivitySweepSVC,
    fit_one_at_a_time,
    paired_fold_test,
    tpr_at_fpr,
)

GAMMA = 0.3
GRID = 2.0 ** np.linspace(-8, 8, 9)
LARGE = 1e4


@pytest.fixture(scope="module")
def overlap() -> tuple[np.ndarray, ...]:
    """Overlapping classes (15 % flipped labels); first 70 rows train, rest test."""
    X, y = make_classification(
        n_samples=110,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        flip_y=0.15,
        random_state=3,
    )
    y = np.where(y == 1, 1, -1)
    return X[:70], y[:70], X[70:], y[70:]


@pytest.fixture(scope="module", params=["box", "diagonal"])
def hard(request: pytest.FixtureRequest, overlap: tuple) -> SensitivitySweepSVC:
    Xtr, ytr, _, _ = overlap
    return SensitivitySweepSVC(
        scheme=request.param,
        C=LARGE,
        C_pos_grid=GRID,
        gamma=GAMMA,
        mirror=True,
        hard_fixed_side=request.param == "diagonal",
        tol=1e-8,
    ).fit(Xtr, ytr)


def _rates(f: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hit = f > 0
    return hit[:, y < 0].mean(1), hit[:, y > 0].mean(1)


def test_mirrored_path_layout(hard: SensitivitySweepSVC) -> None:
    m = GRID.size
    assert hard.C_pos_.shape == hard.C_neg_.shape == (2 * m + 1,)
    np.testing.assert_allclose(hard.C_pos_[:m], GRID)
    np.testing.assert_allclose(hard.C_neg_[:m], LARGE)
    np.testing.assert_allclose(hard.C_pos_[m:], LARGE)
    np.testing.assert_allclose(hard.C_neg_[m + 1 :], GRID[::-1])
    assert hard.decision_function(np.zeros((3, 4))).shape == (2 * m + 1, 3)
    assert set(hard.status_) == {"optimal"}


def test_hard_sweep_spans_fpr_zero_to_one(
    hard: SensitivitySweepSVC, overlap: tuple
) -> None:
    Xtr, ytr, Xte, yte = overlap
    # no row of the class held fixed reaches its bound: every model is exactly the
    # C = infinity (epsilon = 0) model on that class
    assert (hard.n_fixed_at_bound_ == 0).all()
    m = GRID.size
    fpr_tr, tpr_tr = _rates(hard.decision_function(Xtr), ytr)
    # first half: negatives hard, so no training negative is ever a false positive;
    # mirrored half: positives hard, so every training positive is found
    assert (fpr_tr[:m] == 0).all()
    assert (tpr_tr[m:] == 1).all()
    fpr, tpr = _rates(hard.decision_function(Xte), yte)
    assert fpr[0] == 0 and tpr[0] == 0  # C+ tiny: everything negative
    assert fpr[-1] == 1 and tpr[-1] == 1  # C- tiny: everything positive
    # the one-sided half alone stops at the hard-margin model, well below FPR 1
    assert fpr[:m].max() < 0.6


def test_box_hard_matches_libsvm_with_a_larger_bound(overlap: tuple) -> None:
    # the bound C- = 1e4 never binds, so the model is the C- = infinity one: libsvm
    # with C- = 1e6 (class_weight) must give the same decision function
    Xtr, ytr, Xte, _ = overlap
    grid = np.array([0.1, 1.0, 10.0])
    est = SensitivitySweepSVC(
        scheme="box", C=LARGE, C_pos_grid=grid, gamma=GAMMA, tol=1e-9
    ).fit(Xtr, ytr)
    assert (est.n_fixed_at_bound_ == 0).all()
    f = est.decision_function(Xte)
    for p, c in enumerate(grid):
        ref = SVC(C=c, gamma=GAMMA, class_weight={-1: 1e6 / c, 1: 1.0}, tol=1e-10)
        f_ref = ref.fit(Xtr, ytr).decision_function(Xte)
        np.testing.assert_allclose(f[p], f_ref, atol=1e-4 * np.abs(f_ref).max())


def test_diagonal_hard_matches_libsvm_on_shifted_kernel(overlap: tuple) -> None:
    # epsilon- = 0: the dual is the hard-margin dual on K + diag(1/(2 C+)) for the
    # positives only; libsvm on that precomputed Gram matrix with a never-binding C
    Xtr, ytr, Xte, _ = overlap
    c_pos = 2.0
    est = SensitivitySweepSVC(
        scheme="diagonal",
        C=LARGE,
        C_pos_grid=[c_pos],
        gamma=GAMMA,
        hard_fixed_side=True,
        tol=1e-10,
    ).fit(Xtr, ytr)
    assert est.n_fixed_at_bound_[0] == 0
    K = rbf_kernel(Xtr, gamma=GAMMA) + np.diag(np.where(ytr > 0, 0.5 / c_pos, 0.0))
    ref = SVC(kernel="precomputed", C=1e7, tol=1e-11).fit(K, ytr)
    assert np.abs(ref.dual_coef_).max() < 1e6  # the bound never binds
    f_ref = ref.decision_function(rbf_kernel(Xte, Xtr, gamma=GAMMA))
    f = est.decision_function(Xte)[0]
    np.testing.assert_allclose(f, f_ref, atol=1e-4 * np.abs(f_ref).max())
    # without hard_fixed_side the negatives are shifted by 1/(2 C) > 0: a different
    # (if close) model, so the flag is not a no-op
    soft = SensitivitySweepSVC(
        scheme="diagonal", C=1.0, C_pos_grid=[c_pos], gamma=GAMMA, tol=1e-10
    ).fit(Xtr, ytr)
    assert np.abs(soft.decision_function(Xte)[0] - f).max() > 1e-3


def test_mirrored_half_is_the_sweep_with_classes_swapped(
    hard: SensitivitySweepSVC, overlap: tuple
) -> None:
    Xtr, ytr, Xte, _ = overlap
    swapped = SensitivitySweepSVC(**hard.get_params()).set_params(mirror=False)
    swapped.fit(Xtr, -ytr)
    m = GRID.size
    f = hard.decision_function(Xte)[m + 1 :]  # (C+, C-) = (L, c), c reversed
    g = -swapped.decision_function(Xte)[::-1]  # on -y: (C+, C-) = (c, L)
    np.testing.assert_allclose(f, g, atol=1e-4 * np.abs(g).max())


def test_tpr_at_fpr_by_hand() -> None:
    fpr = np.array([0.0, 0.05, 0.1, 0.3, 1.0])
    tpr = np.array([0.0, 0.4, 0.6, 0.9, 1.0])
    assert tpr_at_fpr(fpr, tpr, 0.1) == pytest.approx(0.6)
    assert tpr_at_fpr(fpr, tpr, 0.09) == pytest.approx(0.4)
    assert tpr_at_fpr(fpr[1:], tpr[1:], 0.01) == 0.0
    with pytest.raises(ValueError, match="equal length"):
        tpr_at_fpr(fpr, tpr[:2], 0.1)


def test_paired_fold_test_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(0.6, 0.9, 10)
    b = a - rng.normal(0.02, 0.03, 10)
    res = paired_fold_test(a, b)
    w = stats.wilcoxon(a, b)
    t = stats.ttest_rel(a, b)
    assert res.n == res.n_nonzero == 10
    assert res.wilcoxon_statistic == pytest.approx(w.statistic)
    assert res.wilcoxon_pvalue == pytest.approx(w.pvalue)
    assert res.t_statistic == pytest.approx(t.statistic)
    assert res.t_pvalue == pytest.approx(t.pvalue)
    assert res.mean_diff == pytest.approx(np.mean(a - b))


def test_paired_fold_test_by_hand() -> None:
    # five distinct positive differences: the exact two-sided signed-rank p-value
    # is 2 / 2^5 (only the all-positive and all-negative sign patterns are as extreme)
    a = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    b = a - np.array([0.01, 0.02, 0.03, 0.04, 0.05])
    res = paired_fold_test(a, b)
    assert res.wilcoxon_pvalue == pytest.approx(2 / 32)
    assert res.mean_diff == pytest.approx(0.03)
    # a zero difference is dropped by the Wilcoxon test, NaN pairs entirely
    res = paired_fold_test([0.5, *a, np.nan], [0.5, *b, 0.3])
    assert res.n == 6 and res.n_nonzero == 5
    assert res.wilcoxon_pvalue == pytest.approx(2 / 32)
    # identical sweeps: no evidence at all
    same = paired_fold_test(a, a)
    assert same.wilcoxon_pvalue == 1.0 and np.isnan(same.t_pvalue)


def test_bad_input(overlap: tuple) -> None:
    Xtr, ytr, _, _ = overlap
    with pytest.raises(
        ValueError, match="hard_fixed_side applies to scheme='diagonal'"
    ):
        SensitivitySweepSVC(scheme="box", hard_fixed_side=True).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="mirror=False"):
        fit_one_at_a_time(SensitivitySweepSVC(mirror=True), Xtr, ytr)
    with pytest.raises(ValueError, match="equal-length"):
        paired_fold_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2 complete pairs"):
        paired_fold_test([1.0, np.nan], [2.0, 3.0])


@pytest.mark.parametrize("scheme", ["box", "diagonal"])
def test_hard_sweep_spans_fpr_zero_to_one_on_a_separable_toy(scheme: str) -> None:
    # two well-separated blobs, linear kernel: the hard-margin model exists and
    # classifies the test rows perfectly, yet the mirrored path still reaches both ends
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(2.0, 0.5, (40, 2)), rng.normal(-2.0, 0.5, (40, 2))]
    y = np.r_[np.ones(40), -np.ones(40)].astype(int)
    test = np.arange(80) % 4 == 0
    est = SensitivitySweepSVC(
        scheme=scheme,
        C=LARGE,
        C_pos_grid=2.0 ** np.linspace(-12, 4, 9),
        kernel="linear",
        mirror=True,
        hard_fixed_side=scheme == "diagonal",
        tol=1e-8,
    ).fit(X[~test], y[~test])
    assert (est.n_fixed_at_bound_ == 0).all()
    fpr, tpr = _rates(est.decision_function(X[test]), y[test])
    assert fpr[0] == 0 and tpr[0] == 0
    assert fpr[-1] == 1 and tpr[-1] == 1
    m = 9
    assert fpr[m] == 0 and tpr[m] == 1  # the hard-margin model in the middle
