"""Tests of the SPEC S4 probability baselines (torchsvm/estimators/calibration.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from torchsvm.estimators.calibration import (
    BetaCalibrator,
    BinningCalibrator,
    CalibratedSVC,
    IsotonicCalibrator,
    PlattCalibrator,
    SoftmaxCalibrator,
    SollichCalibrator,
    Svm01Calibrator,
    SvmPPCalibrator,
    make_calibrator,
)
from torchsvm.estimators.kernel_logistic import KernelLogisticRegression
from torchsvm.exceptions import DataError

ALL_CALIBRATORS = [
    PlattCalibrator(),
    IsotonicCalibrator(),
    SoftmaxCalibrator(),
    BinningCalibrator(n_bins=10),
    BinningCalibrator(n_bins=50),
    Svm01Calibrator(),
    SvmPPCalibrator(),
    BetaCalibrator(),
    BetaCalibrator(per_class=True),
    SollichCalibrator(C=2.0),
]
METHODS = [
    "sigmoid",
    "isotonic",
    "softmax",
    "binning10",
    "binning50",
    "svm01",
    "svmpp",
    "beta",
    "sollich",
]


def _scores(seed: int, n: int = 300, scale: float = 1.0) -> tuple[np.ndarray, ...]:
    """Scores whose true P(+|z) is a sigmoid, labels drawn from it, weights."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * 2.0
    y = (rng.random(n) < expit(1.5 * z - 0.3)).astype(int)
    w = rng.uniform(0.2, 2.0, size=n)
    return z * scale, y, w


def _data(seed: int, n: int = 120) -> tuple[np.ndarray, np.ndarray]:
    return make_classification(
        n_samples=n, n_features=4, n_informative=3, n_redundant=0, random_state=seed
    )


# ----------------------------------------------------------------- calibrators
@pytest.mark.parametrize("scale", [1.0, 50.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_platt_matches_sklearn_sigmoid_calibration(
    seed: int, scale: float, weighted: bool
) -> None:
    z, y, w = _scores(seed, scale=scale)
    sw = w if weighted else None
    a_ref, b_ref = _sigmoid_calibration(z, y, sw)
    cal = PlattCalibrator().fit(z, y, sample_weight=sw)
    grid = np.linspace(z.min() - 1, z.max() + 1, 101)
    np.testing.assert_allclose(
        cal.predict_proba(grid)[:, 1], expit(-(a_ref * grid + b_ref)), atol=1e-6
    )
    np.testing.assert_allclose([cal.a_, cal.b_], [a_ref, b_ref], rtol=1e-4, atol=1e-6)


def test_platt_uses_lin_lin_weng_targets() -> None:
    # Separable scores: plain MLE would diverge; the regularised targets keep A finite
    # and the fitted p at the extreme points equal the targets' logistic fit.
    z = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    y = np.array([0, 0, 0, 1, 1, 1])
    cal = PlattCalibrator().fit(z, y)
    assert np.isfinite(cal.a_) and cal.a_ < 0
    t = np.where(y == 1, 4.0 / 5.0, 1.0 / 5.0)

    def loss(ab: np.ndarray) -> float:
        p = expit(-(ab[0] * z + ab[1]))
        return float(-np.sum(t * np.log(p) + (1 - t) * np.log(1 - p)))

    ref = minimize(loss, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-10})
    np.testing.assert_allclose([cal.a_, cal.b_], ref.x, atol=1e-5)


@pytest.mark.parametrize("weighted", [False, True])
def test_isotonic_matches_sklearn_isotonic_regression(
    seed: int, weighted: bool
) -> None:
    z, y, w = _scores(seed)
    sw = w if weighted else None
    ref = IsotonicRegression(out_of_bounds="clip").fit(z, y, sample_weight=sw)
    cal = IsotonicCalibrator().fit(z, y, sample_weight=sw)
    grid = np.linspace(z.min() - 1, z.max() + 1, 101)
    np.testing.assert_allclose(cal.predict_proba(grid)[:, 1], ref.predict(grid))


def test_softmax_is_logistic_of_twice_the_score() -> None:
    z = np.array([-2.0, 0.0, 0.5])
    cal = SoftmaxCalibrator().fit(z, [0, 1, 1])
    np.testing.assert_allclose(cal.predict_proba(z)[:, 1], 1 / (1 + np.exp(-2 * z)))


def test_binning_hand_computed() -> None:
    # range [0, 10], 5 bins of width 2: [0,2) [2,4) [4,6) [6,8) [8,10]
    z = np.array([0.0, 1.0, 1.5, 2.5, 3.0, 8.5, 10.0])
    y = np.array([0, 0, 1, 1, 1, 1, 0])
    cal = BinningCalibrator(n_bins=5).fit(z, y)
    np.testing.assert_allclose(cal.bin_edges_, [0, 2, 4, 6, 8, 10])
    np.testing.assert_allclose(cal.bin_counts_, [3, 2, 0, 0, 2])
    # bins 2 and 3 are empty: interpolated between 1.0 (centre 3) and 0.5 (centre 9)
    expected = [1 / 3, 1.0, 1.0 - 0.5 * 2 / 6, 1.0 - 0.5 * 4 / 6, 0.5]
    np.testing.assert_allclose(cal.bin_proba_, expected)
    # out-of-range scores go to the end bins; the top edge belongs to the last bin
    p = cal.predict_proba([-5.0, 10.0, 99.0])[:, 1]
    np.testing.assert_allclose(p, [1 / 3, 0.5, 0.5])


def test_binning_weighted_and_constant_scores() -> None:
    cal = BinningCalibrator(n_bins=2).fit([0.0, 0.1, 1.0], [0, 1, 1], [3.0, 1.0, 1.0])
    np.testing.assert_allclose(cal.bin_proba_, [0.25, 1.0])
    flat = BinningCalibrator(n_bins=10).fit([1.0, 1.0, 1.0], [0, 1, 1])
    np.testing.assert_allclose(flat.predict_proba([-3.0, 5.0])[:, 1], [2 / 3, 2 / 3])


def test_svm01_and_svmpp_hand_computed() -> None:
    z = np.array([-3.0, -2.0, -1.5, -0.2, 0.3, 1.5, 2.0, 4.0, 5.0])
    y = np.array([0, 1, 0, 0, 1, 1, 1, 0, 1])
    # z < -1: y = 0, 1, 0 -> p- = 1/3 ; z > 1: y = 1, 1, 0, 1 -> p+ = 3/4
    s01 = Svm01Calibrator().fit(z, y)
    spp = SvmPPCalibrator().fit(z, y)
    assert (s01.p_minus_, s01.p_plus_) == pytest.approx((1 / 3, 3 / 4))
    grid = np.array([-2.0, -1.0, -0.5, 0.0, 0.4, 0.9, 1.0, 3.0])
    np.testing.assert_allclose(
        s01.predict_proba(grid)[:, 1], [1 / 3, 0.0, 0.25, 0.5, 0.7, 0.95, 1.0, 0.75]
    )
    np.testing.assert_allclose(
        spp.predict_proba(grid)[:, 1],
        [1 / 3, 1 / 3, 1 / 3, 0.5, 0.7, 0.75, 0.75, 0.75],
    )


def test_svm01_empty_margin_sides_fall_back_to_line_ends() -> None:
    cal = Svm01Calibrator().fit([-0.5, 0.5], [0, 1])
    assert (cal.p_minus_, cal.p_plus_) == (0.0, 1.0)
    np.testing.assert_allclose(cal.predict_proba([-4.0, 4.0])[:, 1], [0.0, 1.0])


@pytest.mark.parametrize("per_class", [False, True])
def test_beta_scaling_matches_scipy_beta_quantile_map(
    seed: int, per_class: bool
) -> None:
    z, y, _ = _scores(seed, n=400)
    cal = BetaCalibrator(per_class=per_class).fit(z, y)
    grid = np.linspace(-4, 4, 41)
    m = 1 / (1 + np.exp(-2 * grid))
    a = np.maximum(m, 1 - m)
    pos = grid >= 0
    expected = np.empty_like(grid)
    # independent oracle: recompute the regions' moments and map with scipy.stats
    m_fit = 1 / (1 + np.exp(-2 * z))
    a_fit, pos_fit = np.maximum(m_fit, 1 - m_fit), z >= 0
    regions = [(pos_fit == pos_fit, pos == pos)]
    if per_class:
        regions = [(~pos_fit, ~pos), (pos_fit, pos)]
    for fit_mask, grid_mask in regions:
        cr = np.mean(pos_fit[fit_mask] == (y[fit_mask] == 1))
        pm, var = a_fit[fit_mask].mean(), a_fit[fit_mask].var(ddof=1)
        nm = pm * (1 - pm) / var - 1
        n = min(fit_mask.sum(), nm)
        u = stats.beta(pm * nm, (1 - pm) * nm).cdf(a[grid_mask])
        expected[grid_mask] = stats.beta(cr * n, (1 - cr) * n).ppf(u)
    expected = np.where(pos, expected, 1 - expected)
    np.testing.assert_allclose(cal.predict_proba(grid)[:, 1], expected, atol=1e-10)
    # scaled assigned-class memberships are monotone in |z| within a region
    p = cal.predict_proba(np.linspace(0, 4, 50))[:, 1]
    assert np.all(np.diff(p) >= -1e-12)


def test_beta_scaling_mean_tracks_correctness_rate(seed: int) -> None:
    z, y, _ = _scores(seed, n=4000)
    cal = BetaCalibrator().fit(z, y)
    p = cal.predict_proba(z)[:, 1]
    assigned = np.where(z >= 0, p, 1 - p)
    cr = np.mean((z >= 0) == (y == 1))
    assert abs(assigned.mean() - cr) < 0.02


def test_beta_scaling_degenerate_region_maps_to_correctness_rate() -> None:
    cal = BetaCalibrator().fit([1.0, 1.0, 1.0, 1.0], [1, 1, 1, 0])
    np.testing.assert_allclose(cal.predict_proba([2.0, -2.0])[:, 1], [0.75, 0.25])
    perfect = BetaCalibrator().fit([-2.0, -1.0, 1.0, 2.5], [0, 0, 1, 1])
    np.testing.assert_allclose(perfect.predict_proba([0.3, -0.3])[:, 1], [1.0, 0.0])


@pytest.mark.parametrize("C", [0.5, 1.0, 4.0])
def test_sollich_map_probability_piecewise_form(C: float) -> None:
    z = np.array([-3.0, -1.0, -0.4, 0.0, 0.7, 1.0, 2.5])
    p = SollichCalibrator(C=C).fit(z, np.arange(7) % 2).predict_proba(z)[:, 1]
    inside = expit(2 * C * z)
    expected = np.where(
        z > 1, expit(C * (z + 1)), np.where(z < -1, expit(C * (z - 1)), inside)
    )
    np.testing.assert_allclose(p, expected)
    # normalised hinge likelihood Q(y|z) = exp(-C max(0, 1 - y z)), direct ratio
    q_pos, q_neg = np.exp(-C * np.maximum(0, 1 - z)), np.exp(-C * np.maximum(0, 1 + z))
    np.testing.assert_allclose(p, q_pos / (q_pos + q_neg))
    if C == 1.0:  # inside the margin it is the softmax baseline
        soft = SoftmaxCalibrator().fit(z, np.arange(7) % 2).predict_proba(z)[:, 1]
        mask = np.abs(z) <= 1
        np.testing.assert_allclose(p[mask], soft[mask])


@pytest.mark.parametrize("cal", ALL_CALIBRATORS, ids=lambda c: repr(c))
def test_calibrator_probabilities_valid_and_api(cal: object, seed: int) -> None:
    z, y, w = _scores(seed)
    labels = np.where(y == 1, "pos", "neg")
    fitted = clone(cal).fit(z, labels, sample_weight=w)
    assert list(fitted.classes_) == ["neg", "pos"]
    proba = fitted.predict_proba(np.linspace(-8, 8, 33).reshape(-1, 1))
    assert proba.shape == (33, 2)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(fitted.predict(z[:10])) <= {"neg", "pos"}
    assert clone(cal).get_params() == cal.get_params()


@pytest.mark.parametrize("cal", ALL_CALIBRATORS, ids=lambda c: repr(c))
def test_calibrator_input_validation(cal: object) -> None:
    with pytest.raises(NotFittedError):
        clone(cal).predict_proba([0.0])
    with pytest.raises(DataError, match="NaN"):
        clone(cal).fit([0.0, np.nan, 1.0], [0, 1, 1])
    with pytest.raises(DataError, match="1-D"):
        clone(cal).fit(np.zeros((3, 2)), [0, 1, 1])
    with pytest.raises(DataError, match="1 class"):
        clone(cal).fit([0.0, 1.0, 2.0], [1, 1, 1])
    with pytest.raises(DataError, match="Only binary"):
        clone(cal).fit([0.0, 1.0, 2.0], [0, 1, 2])
    with pytest.raises(DataError, match="different lengths"):
        clone(cal).fit([0.0, 1.0, 2.0], [0, 1])
    fitted = clone(cal).fit([-1.0, 0.0, 1.0, 2.0], [0, 0, 1, 1])
    with pytest.raises(DataError, match="NaN"):
        fitted.predict_proba([np.inf])


def test_make_calibrator_rejects_unknown_and_needs_c_for_sollich() -> None:
    with pytest.raises(ValueError, match="unknown calibration method"):
        make_calibrator("temperature")
    with pytest.raises(ValueError, match="C parameter"):
        make_calibrator("sollich", IsotonicRegression())
    assert make_calibrator("sollich", SVC(C=3.0)).C == 3.0
    assert make_calibrator("binning50").n_bins == 50


# ------------------------------------------------------------------- CalibratedSVC
@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("weighted", [False, True])
def test_calibrated_svc_matches_calibrated_classifier_cv(
    seed: int, method: str, weighted: bool
) -> None:
    X, y = _data(seed)
    sw = (
        np.random.default_rng(seed).uniform(0.5, 2.0, size=y.shape[0])
        if weighted
        else None
    )
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    svc = SVC(kernel="rbf", C=2.0)
    ref = CalibratedClassifierCV(svc, method=method, cv=cv, ensemble=False)
    ref.fit(X, y, sample_weight=sw)
    ours = CalibratedSVC(svc, method=method, cv=cv).fit(X, y, sample_weight=sw)
    X_test, _ = _data(seed + 1, n=50)
    np.testing.assert_allclose(
        ours.predict_proba(X_test), ref.predict_proba(X_test), atol=1e-6
    )
    np.testing.assert_array_equal(ours.predict(X_test), ref.predict(X_test))
    np.testing.assert_allclose(
        ours.decision_function(X_test),
        ref.calibrated_classifiers_[0].estimator.decision_function(X_test),
    )


def test_calibrated_svc_default_int_cv_matches_sklearn(seed: int) -> None:
    X, y = _data(seed)
    ref = CalibratedClassifierCV(SVC(), cv=3, ensemble=False).fit(X, y)
    ours = CalibratedSVC(SVC(), cv=3).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)


def test_calibrated_svc_uses_out_of_fold_scores(seed: int) -> None:
    X, y = _data(seed)
    cv = StratifiedKFold(n_splits=4)
    ours = CalibratedSVC(SVC(), method="svm01", cv=cv).fit(X, y)
    for train, test in cv.split(X, y):
        fold = SVC().fit(X[train], y[train])
        np.testing.assert_allclose(
            ours.oof_decision_[test], fold.decision_function(X[test])
        )
    ref = Svm01Calibrator().fit(ours.oof_decision_, y)
    assert (ours.calibrator_.p_minus_, ours.calibrator_.p_plus_) == (
        ref.p_minus_,
        ref.p_plus_,
    )
    np.testing.assert_allclose(
        ours.decision_function(X), SVC().fit(X, y).decision_function(X)
    )


@pytest.mark.parametrize("method", METHODS)
def test_calibrated_svc_every_method_gives_probabilities(
    seed: int, method: str
) -> None:
    X, y = _data(seed)
    labels = np.array(["b", "a"])[y]
    clf = CalibratedSVC(SVC(C=1.0), method=method, cv=3).fit(X, labels)
    proba = clf.predict_proba(X)
    assert list(clf.classes_) == ["a", "b"]
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(clf.predict(X) == labels) > 0.7


def test_calibrated_svc_accepts_calibrator_instance(seed: int) -> None:
    X, y = _data(seed)
    clf = CalibratedSVC(SVC(), method=BinningCalibrator(n_bins=7), cv=3).fit(X, y)
    assert clf.calibrator_.bin_proba_.shape == (7,)
    assert not hasattr(clf.method, "bin_proba_")  # the parameter was cloned, not fitted


def test_calibrated_svc_input_validation() -> None:
    X, y = _data(0, n=40)
    with pytest.raises(NotFittedError):
        CalibratedSVC(SVC()).predict_proba(X)
    with pytest.raises(ValueError, match="NaN"):
        CalibratedSVC(SVC()).fit(np.where(np.eye(40, 4) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="1 class"):
        CalibratedSVC(SVC()).fit(X, np.ones(40))
    with pytest.raises(ValueError, match="Only binary"):
        CalibratedSVC(SVC()).fit(X, np.arange(40) % 3)
    with pytest.raises(DataError, match="at least 5 rows of each class"):
        CalibratedSVC(SVC(), cv=5).fit(X, np.r_[np.ones(37), np.zeros(3)])
    clf = CalibratedSVC(SVC(), cv=3).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict_proba(X[:, :3])


def test_calibrated_svc_with_weighted_svc(seed: int) -> None:
    svc_module = pytest.importorskip("torchsvm.estimators.svc")
    X, y = _data(seed, n=80)
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=seed)
    ours = CalibratedSVC(svc_module.WeightedSVC(C=1.0, kernel="rbf"), cv=cv).fit(X, y)
    ref = CalibratedSVC(SVC(C=1.0, kernel="rbf"), cv=cv).fit(X, y)
    # same SVM problem, different solver: probabilities agree to solver accuracy
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-3)
    for method in ("isotonic", "svmpp", "sollich"):
        clf = CalibratedSVC(svc_module.WeightedSVC(C=1.0), method=method, cv=cv)
        proba = clf.fit(X, y).predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)


# ------------------------------------------------------------ kernel logistic reg.
@pytest.mark.parametrize("C", [0.05, 1.0, 20.0])
def test_klr_linear_kernel_matches_logistic_regression(seed: int, C: float) -> None:
    X, y = _data(seed)
    klr = KernelLogisticRegression(C=C, kernel="linear").fit(X, y)
    lr = LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(X, y)
    X_test, _ = _data(seed + 1, n=40)
    np.testing.assert_allclose(
        klr.predict_proba(X_test), lr.predict_proba(X_test), atol=1e-4
    )
    np.testing.assert_allclose(X.T @ klr.dual_coef_, lr.coef_[0], rtol=1e-3, atol=1e-4)


def test_klr_linear_kernel_weighted_matches_logistic_regression(seed: int) -> None:
    X, y = _data(seed)
    w = np.random.default_rng(seed).uniform(0.1, 3.0, size=y.shape[0])
    klr = KernelLogisticRegression(C=2.0, kernel="linear").fit(X, y, sample_weight=w)
    lr = LogisticRegression(C=2.0, tol=1e-12, max_iter=10_000).fit(
        X, y, sample_weight=w
    )
    np.testing.assert_allclose(klr.predict_proba(X), lr.predict_proba(X), atol=1e-4)


def test_klr_rbf_is_the_minimiser_of_its_objective(seed: int) -> None:
    X, y = _data(seed, n=40)
    C, gamma = 3.0, 0.4
    klr = KernelLogisticRegression(C=C, gamma=gamma).fit(X, y)
    K = rbf_kernel(X, X, gamma=gamma)
    ypm = 2.0 * y - 1.0

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        a, b = theta[:-1], theta[-1]
        f = K @ a + b
        loss = C * np.sum(np.logaddexp(0.0, -ypm * f)) + 0.5 * a @ K @ a
        r = -C * ypm * expit(-ypm * f)
        return float(loss), np.r_[K @ (r + a), r.sum()]

    ref = minimize(
        objective,
        np.zeros(41),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20_000},
    )
    ours = objective(np.r_[klr.dual_coef_, klr.intercept_])[0]
    assert ours <= ref.fun + 1e-8
    f_ref = K @ ref.x[:-1] + ref.x[-1]
    np.testing.assert_allclose(klr.decision_function(X), f_ref, atol=1e-4)


def test_klr_gamma_options_and_validation(seed: int) -> None:
    X, y = _data(seed, n=40)
    scale = KernelLogisticRegression().fit(X, y)
    assert scale.gamma_ == pytest.approx(1.0 / (X.shape[1] * X.var()))
    assert KernelLogisticRegression(gamma="auto").fit(X, y).gamma_ == 0.25
    with pytest.raises(NotFittedError):
        KernelLogisticRegression().predict(X)
    with pytest.raises(ValueError, match="1 class"):
        KernelLogisticRegression().fit(X, np.zeros(40))
    with pytest.raises(ValueError, match="NaN"):
        KernelLogisticRegression().fit(np.full((4, 2), np.nan), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="C"):
        KernelLogisticRegression(C=-1.0).fit(X, y)


@pytest.mark.parametrize("cal", ALL_CALIBRATORS, ids=lambda c: repr(c))
def test_calibrator_rejects_weights_that_leave_one_class(cal: object) -> None:
    # regression: a weighting zeroing a class used to fit and still predict that class
    z, y = [-2.0, -1.0, 0.5, 1.0, 2.0], [0, 0, 1, 1, 1]
    with pytest.raises(DataError, match="zero weight"):
        clone(cal).fit(z, y, sample_weight=[0.0, 0.0, 1.0, 1.0, 1.0])
    with pytest.raises(DataError, match="zero weight"):
        CalibratedSVC(SVC(), method=clone(cal), cv=2).fit(
            np.c_[z, z], y, sample_weight=[1.0, 1.0, 0.0, 0.0, 0.0]
        )
