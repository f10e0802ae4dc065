"""Tests of the sensitivity-control sweeps and their ROC display (SPEC S1, S1b)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.metrics.pairwise import rbf_kernel  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.data.resample import outer_folds  # noqa: E402
from torchsvm.estimators.sensitivity import (  # noqa: E402
    RocSweepDisplay,
    SensitivitySweepSVC,
    default_c_pos_grid,
    fit_one_at_a_time,
    roc_points,
    roc_sweep_cv,
    sweep_auc,
)

GAMMA = 0.3
GRID = default_c_pos_grid(1.0, n_points=7, span=6.0)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(
        n_samples=90,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        flip_y=0.15,
        random_state=1,
    )
    return X, np.where(y == 1, 1, -1)


@pytest.fixture(scope="module", params=["box", "diagonal"])
def sweep(request: pytest.FixtureRequest, data: tuple) -> SensitivitySweepSVC:
    X, y = data
    return SensitivitySweepSVC(
        scheme=request.param, C=1.0, C_pos_grid=GRID, gamma=GAMMA, tol=1e-8
    ).fit(X, y)


def test_batched_equals_one_at_a_time(sweep: SensitivitySweepSVC, data: tuple) -> None:
    X, y = data
    single, seconds = fit_one_at_a_time(sweep, X, y)
    batch = sweep.decision_function(X)
    assert seconds > 0
    np.testing.assert_allclose(batch, single, atol=1e-5 * np.abs(single).max())


def test_box_sweep_matches_sklearn_class_weight(data: tuple) -> None:
    X, y = data
    est = SensitivitySweepSVC(
        scheme="box", C=2.0, C_pos_grid=[0.5, 2.0, 16.0], gamma=GAMMA, tol=1e-8
    ).fit(X, y)
    f = est.decision_function(X)
    for p, c_pos in enumerate(est.C_pos_):
        ref = SVC(C=2.0, gamma=GAMMA, class_weight={-1: 1.0, 1: c_pos / 2.0}, tol=1e-8)
        f_ref = ref.fit(X, y).decision_function(X)
        np.testing.assert_allclose(f[p], f_ref, atol=1e-3 * np.abs(f_ref).max())


def test_diagonal_sweep_matches_libsvm_on_shifted_kernel(data: tuple) -> None:
    # S1b dual = hinge dual with K + diag(1/(2 C_{y_i})) and no upper bound: libsvm on
    # that precomputed Gram matrix with a C large enough to never bind is the oracle.
    X, y = data
    Xtr, ytr, Xte = X[:60], y[:60], X[60:]
    c_pos, c_neg = 4.0, 1.0
    est = SensitivitySweepSVC(
        scheme="diagonal", C=c_neg, C_pos_grid=[c_pos], gamma=GAMMA, tol=1e-9
    ).fit(Xtr, ytr)
    K = rbf_kernel(Xtr, gamma=GAMMA) + np.diag(
        np.where(ytr > 0, 0.5 / c_pos, 0.5 / c_neg)
    )
    ref = SVC(kernel="precomputed", C=1e6, tol=1e-10).fit(K, ytr)
    assert np.abs(ref.dual_coef_).max() < 1e5  # the bound never binds
    f_ref = ref.decision_function(rbf_kernel(Xte, Xtr, gamma=GAMMA))
    f = est.decision_function(Xte)[0]
    np.testing.assert_allclose(f, f_ref, atol=1e-3 * np.abs(f_ref).max())


def test_roc_sweep_endpoints(sweep: SensitivitySweepSVC, data: tuple) -> None:
    X, y = data
    fpr, tpr = sweep.roc(X, y)
    # C+ << C-: everything negative; C+ >> C-: (almost) every positive found
    assert fpr[0] <= 0.05 and tpr[0] <= 0.1
    assert tpr[-1] >= 0.95
    assert fpr[-1] > fpr[0]
    assert np.all(np.diff(tpr) >= -0.05)  # sensitivity grows with C+


def test_roc_points_and_auc_by_hand() -> None:
    y = np.array([1, 1, -1, -1])
    pred = np.array([[-1, -1, -1, -1], [1, -1, -1, -1], [1, 1, 1, -1]])
    fpr, tpr = roc_points(y, pred)
    np.testing.assert_allclose(fpr, [0.0, 0.0, 0.5])
    np.testing.assert_allclose(tpr, [0.0, 0.5, 1.0])
    # polygon (0,0) (0,0.5) (0.5,1) (1,1): 0.5*0.75 + 0.5*1
    assert sweep_auc(fpr, tpr) == pytest.approx(0.875)
    assert sweep_auc(np.array([]), np.array([])) == pytest.approx(0.5)


def test_display_from_estimator_and_predictions(
    sweep: SensitivitySweepSVC, data: tuple
) -> None:
    X, y = data
    fig, ax = plt.subplots()
    disp = RocSweepDisplay.from_estimator(sweep, X, y, ax=ax, plot_chance_level=True)
    assert disp.ax_ is ax and disp.figure_ is fig
    assert disp.line_.get_xdata().shape == (len(GRID) + 2,)
    assert 0.5 < disp.roc_auc <= 1.0
    disp2 = RocSweepDisplay.from_predictions(y, sweep.decision_function(X), name="x")
    assert disp2.roc_auc == pytest.approx(disp.roc_auc)
    assert "AUC" in disp2.line_.get_label()
    plt.close("all")


def test_roc_sweep_cv_pools_folds(data: tuple) -> None:
    X, y = data
    folds = outer_folds(y, n_splits=3, random_state=0)
    est = SensitivitySweepSVC(
        scheme="box", C=1.0, C_pos_grid=GRID, gamma=GAMMA, tol=1e-6
    )
    res = roc_sweep_cv(est, X, y, folds, preprocessor=StandardScaler())
    assert res.fpr.shape == res.tpr.shape == (len(GRID),)
    assert len(res.fit_seconds) == 3 and sum(res.statuses.values()) == 3 * len(GRID)
    # pooled = count-weighted mean of the fold rates
    tp = 0.0
    for train, test in folds:
        sc = StandardScaler().fit(X[train])
        m = SensitivitySweepSVC(
            scheme="box", C=1.0, C_pos_grid=GRID, gamma=GAMMA, tol=1e-6
        ).fit(sc.transform(X[train]), y[train])
        tp = tp + (m.predict(sc.transform(X[test]))[:, y[test] > 0] > 0).sum(1)
    np.testing.assert_allclose(res.tpr, tp / (y > 0).sum())
    disp = RocSweepDisplay.from_result(res)
    assert disp.roc_auc == pytest.approx(res.auc)
    plt.close("all")


def test_bad_input(data: tuple) -> None:
    X, y = data
    with pytest.raises(ValueError, match="C_pos_grid"):
        SensitivitySweepSVC(C_pos_grid=[1.0, -2.0]).fit(X, y)
    with pytest.raises(ValueError, match="scheme"):
        SensitivitySweepSVC(scheme="other").fit(X, y)
    with pytest.raises(ValueError, match="sklearn"):
        fit_one_at_a_time(
            SensitivitySweepSVC(scheme="diagonal"), X, y, backend="sklearn"
        )
    with pytest.raises(ValueError, match="equal length"):
        RocSweepDisplay(fpr=[0.1], tpr=[0.1, 0.2])
