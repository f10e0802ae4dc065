"""ConstrainedSVC, SlidingInterceptSVC and the S5c ensemble (SPEC S2 Ctrl2, S5, S5c)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from torchsvm.data.resample import bootstrap_counts
from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
from torchsvm.estimators.csvm import (
    ConstrainedSVC,
    SlidingInterceptSVC,
    fit_s5c_ensemble,
)
from torchsvm.exceptions import (
    DataError,
    InfeasibleProblemError,
    SolverTimeLimitWarning,
)
from torchsvm.problems.csvm import FloorCappedWarning, hoeffding_floor


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
    # the outer approximation's gap test has a float slack (a master proving nothing
    # below the cutoff UB - 1e-4 |UB| leaves a gap of 1e-4 up to rounding)
    assert clf.mip_gap_ <= 1e-4 * (1 + 1e-9)
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


def test_floor_above_one_is_capped_and_met() -> None:
    """Thesis ch. 2: p* > 1 means every anchor row of the class; no error, a warning."""
    X, y = make_data(3, n=40)
    clf = ConstrainedSVC(min_tpr=None, min_tnr=0.99, hoeffding_alpha=0.05)
    with pytest.warns(FloorCappedWarning, match="TNR sample floor .* capped at 1"):
        clf.fit(X, y)
    n_neg = int(np.sum(y[clf.anchor_mask_] == "ok"))
    assert clf.capped_floors_["tnr"] == pytest.approx(
        hoeffding_floor(0.99, n_neg, 0.05)
    )
    assert clf.floors_["tnr"] == 1.0
    assert clf.status_ == "optimal"
    J = clf.anchor_mask_
    assert np.all(clf.predict(X[J & (y == "ok")]) == "ok")


def _xor_anchors() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.array([[0, 0], [1, 1], [0, 1], [1, 0]] * 4, dtype=float)
    y = np.array(["a", "a", "b", "b"] * 4)
    return X, y, np.arange(16) >= 8


def test_infeasible_only_when_no_classifier_meets_the_floors() -> None:
    # XOR on the anchors: no linear classifier gets every anchor of both classes right
    X, y, mask = _xor_anchors()
    both = dict(min_tpr=1.0, min_tnr=1.0, hoeffding_alpha=None, time_limit=30.0)
    with pytest.raises(InfeasibleProblemError, match="TPR >= 1.*TNR >= 1"):
        ConstrainedSVC(**both).fit(X, y, anchor_mask=mask)
    with pytest.raises(InfeasibleProblemError, match="no intercept"):
        SlidingInterceptSVC(min_tpr=1.0, min_tnr=1.0, hoeffding_alpha=None).fit(
            X, y, anchor_mask=mask
        )
    # one floor alone is always feasible, capped Hoeffding floor included
    with pytest.warns(FloorCappedWarning):
        clf = ConstrainedSVC(min_tpr=0.9, time_limit=30.0).fit(X, y, anchor_mask=mask)
    assert clf.achieved_rates_["tpr"] == 1.0


@pytest.mark.data
def test_defaults_on_wisconsin_cap_the_floor(data_dir) -> None:
    """Issue 18: ConstrainedSVC() on Wisconsin (70/30) raised (floor 1.092 on 74 anchor
    positives); the floor is now capped at 1 and met on every anchor positive."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from torchsvm.data.datasets import load_dataset

    ds = load_dataset("wisconsin", data_dir=data_dir)
    X, y = np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    Xtr = StandardScaler().fit_transform(Xtr)
    for est in (ConstrainedSVC(), SlidingInterceptSVC()):
        with pytest.warns(FloorCappedWarning, match=r"1\.092 .* on 74 anchor rows"):
            est.fit(Xtr, ytr)
        assert est.floors_ == {"tpr": 1.0}
        assert est.achieved_rates_["tpr"] == 1.0


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
    ens = fit_s5c_ensemble(X, y_pm, counts, C=0.1, min_tpr=0.9, time_limit=30)
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
    "and doubling its weight give different splits, hence different problems; with "
    "the split carried over, weights equal repeated rows "
    "(test_integer_weights_equal_repeated_rows_with_the_same_anchors)"
)


@parametrize_with_checks(
    [
        ConstrainedSVC(min_tpr=0.5, hoeffding_alpha=None, time_limit=5.0),
        SlidingInterceptSVC(min_tpr=0.5, hoeffding_alpha=None),
    ],
    expected_failed_checks=lambda est: {
        "check_sample_weight_equivalence_on_dense_data": _ANCHOR_SPLIT
    },
)
def test_sklearn_compatible(estimator, check) -> None:
    """scikit-learn's estimator checks (binary-only classifier tag)."""
    check(estimator)


# ----------------------------------------------------------------------------- sliding b


def _libsvm_scores(X, y, C, kernel="linear", gamma=1.0, sample_weight=None):
    svc = SVC(C=C, kernel=kernel, gamma=gamma, tol=1e-10)
    svc.fit(X, y, sample_weight=sample_weight)
    return svc


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_sliding_b_is_libsvm_with_a_moved_intercept(kernel: str) -> None:
    """penalty="libsvm": S1 on I u J is sklearn's SVC(C); only b moves, to the b closest
    to SVC's at which the (Hoeffding) floor holds on J."""
    X, y = make_data(6, n=300)
    mask = np.arange(300) >= 150
    y_pm = np.where(y == "sick", 1.0, -1.0)
    clf = SlidingInterceptSVC(
        C=0.05,
        kernel=kernel,
        gamma=0.5,
        min_tpr=0.8,
        hoeffding_alpha=0.05,
        penalty="libsvm",
    ).fit(X, y, anchor_mask=mask)
    svc = _libsvm_scores(X, y_pm, 0.05, kernel, 0.5)
    g = svc.decision_function(X) - svc.intercept_[0]
    np.testing.assert_allclose(
        clf.decision_function(X) - clf.intercept_[0],
        g,
        atol=1e-5 * (1 + np.abs(g).max()),
    )
    assert clf.s1_intercept_ == pytest.approx(svc.intercept_[0], abs=1e-5)
    n_pos = int(np.sum(mask & (y_pm > 0)))
    floor = hoeffding_floor(0.8, n_pos, 0.05)
    assert clf.floors_["tpr"] == pytest.approx(floor)
    # oracle: smallest b (>= S1's) with TPR on J+ >= floor, by brute force over rows
    gJ = g[mask & (y_pm > 0)]
    need = math.ceil(floor * n_pos - 1e-9)
    b_need = -np.sort(gJ)[::-1][need - 1]  # the need-th largest score must be >= 0
    b_star = max(svc.intercept_[0], b_need)
    assert clf.intercept_[0] == pytest.approx(b_star, abs=1e-5)
    assert clf.achieved_rates_["tpr"] >= floor
    assert svc.intercept_[0] < b_need  # the floor binds here (else nothing is tested)


def test_sliding_b_hoeffding_margin_slides_further() -> None:
    X, y = make_data(7, n=300)
    kw = dict(C=1.0, min_tpr=0.75, random_state=1)
    plain = SlidingInterceptSVC(hoeffding_alpha=None, **kw).fit(X, y)
    margin = SlidingInterceptSVC(hoeffding_alpha=0.05, **kw).fit(X, y)
    assert margin.floors_["tpr"] > plain.floors_["tpr"] == 0.75
    assert margin.intercept_[0] >= plain.intercept_[0]
    assert margin.achieved_rates_["tpr"] >= margin.floors_["tpr"]
    np.testing.assert_allclose(margin.dual_coef_, plain.dual_coef_)


def test_sliding_b_non_binding_floor_keeps_s1() -> None:
    X, y = make_data(8, n=100)
    clf = SlidingInterceptSVC(min_tpr=0.05, hoeffding_alpha=None).fit(X, y)
    assert clf.intercept_[0] == clf.s1_intercept_


def test_sliding_b_thesis_penalty_is_libsvm_with_class_costs() -> None:
    """penalty="thesis": S1 on I u J with C+- = C / |I+-| in ||w||^2 + sum C_y xi, i.e.
    libsvm with per-row bounds C_y / 2 (the CSVM warm start's S1)."""
    X, y = make_data(9, n=80)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    clf = SlidingInterceptSVC(C=8.0, min_tpr=0.3, hoeffding_alpha=None).fit(X, y)
    I = ~clf.anchor_mask_
    n_pos, n_neg = np.sum(I & (y_pm > 0)), np.sum(I & (y_pm < 0))
    bound = np.where(y_pm > 0, 8.0 / n_pos, 8.0 / n_neg) / 2.0
    svc = _libsvm_scores(X, y_pm, 1.0, "linear", sample_weight=bound)
    np.testing.assert_allclose(clf.coef_, svc.coef_, atol=1e-5)
    assert clf.s1_intercept_ == pytest.approx(svc.intercept_[0], abs=1e-5)


# ----------------------------------------------------------------------------- Ctrl2


def test_s5c_with_non_binding_floor_is_libsvm_with_counts() -> None:
    """fit_s5c_ensemble reads C as S1 does: with a floor the S1 fit already meets (rows
    with y f >= 1), each replicate is SVC(C) with sample_weight = draw counts."""
    X, y = make_data(10, n=50)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    counts = bootstrap_counts(50, 3, np.random.default_rng(1))
    C = 20.0
    ens = fit_s5c_ensemble(
        X,
        y_pm,
        counts,
        C=C,
        kernel="rbf",
        gamma=0.4,
        min_tpr=0.1,
        time_limit=30,
        mip_rel_gap=1e-6,
    )
    for b in range(3):
        keep = counts[b] > 0
        svc = _libsvm_scores(X[keep], y_pm[keep], C, "rbf", 0.4, counts[b][keep])
        f = svc.decision_function(X)
        pos = keep & (y_pm > 0)
        met = counts[b][pos] @ (f[pos] >= 1) / counts[b][pos].sum()
        assert met >= 0.1 + 0.05  # the floor does not bind (premise of the test)
        np.testing.assert_allclose(
            ens.decision_function(X)[b], f, atol=1e-4 * (1 + np.abs(f).max())
        )


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_ctrl2_non_binding_floor_reproduces_s1(kernel: str) -> None:
    """Issue 18: Ctrl2 (control="csvm") with a floor that does not bind equals the
    unconstrained bootstrap SVM: same C grid, same draws, same fits up to solver
    tolerance, hence the same OOB accuracies, weights and probabilities."""
    X, y = make_data(11, n=60)
    kw = dict(
        C_grid=[0.25, 1.0, 4.0], n_bootstrap=4, random_state=0, kernel=kernel, gamma=0.3
    )
    s1 = BootstrapProbabilitySVC(**kw).fit(X, y)
    c2 = BootstrapProbabilitySVC(
        target_tpr=0.05, control="csvm", mip_time_limit=30.0, **kw
    ).fit(X, y)
    np.testing.assert_array_equal(c2.counts_, s1.counts_)
    assert (c2.mip_status_ == "optimal").all()
    pos = y == s1.classes_[1]
    for r in range(3):
        F = s1.bootstrap_decision_function(X, c_index=r) if r in s1._used else None
        if F is None:
            continue
        for b in range(
            4
        ):  # premise: S1 already has >= 5 % of in-bag positives at y f >= 1
            c = s1.counts_[b]
            assert c[pos] @ (F[b, pos] >= 1) >= 0.1 * c[pos].sum()
        F2 = c2.bootstrap_decision_function(X, c_index=r)
        np.testing.assert_allclose(F2, F, atol=2e-4 * (1 + np.abs(F).max()))
    np.testing.assert_allclose(c2.oob_accuracy_, s1.oob_accuracy_)
    np.testing.assert_allclose(c2.weights_, s1.weights_)
    np.testing.assert_allclose(c2.predict_proba(X), s1.predict_proba(X))


@pytest.mark.parametrize("est", [ConstrainedSVC, SlidingInterceptSVC])
@pytest.mark.parametrize("alpha", [None, 0.2])
def test_integer_weights_equal_repeated_rows_with_the_same_anchors(est, alpha) -> None:
    """Why check_sample_weight_equivalence_on_dense_data is an expected failure: with
    the anchor assignment carried over to the copies, weights == repeated rows; only
    the default random split of J differs between the two data sets."""
    X, y = make_data(12, n=40)
    w = np.random.default_rng(0).integers(1, 4, size=40)
    mask = np.arange(40) % 2 == 1
    kw = dict(C=1.0, kernel="rbf", min_tpr=0.8, hoeffding_alpha=alpha)
    if est is ConstrainedSVC:
        kw["time_limit"] = 60.0
    a = est(**kw).fit(X, y, anchor_mask=mask, sample_weight=w)
    b = est(**kw).fit(
        np.repeat(X, w, 0), np.repeat(y, w), anchor_mask=np.repeat(mask, w)
    )
    assert a.gamma_ == pytest.approx(b.gamma_)
    assert a.floors_ == pytest.approx(b.floors_)
    fa, fb = a.decision_function(X), b.decision_function(X)
    np.testing.assert_allclose(fa, fb, atol=1e-4 * (1 + np.abs(fa).max()))


@pytest.mark.parametrize("est", [ConstrainedSVC, SlidingInterceptSVC])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_fitted_attributes_are_numpy_and_pickle(est, kernel: str) -> None:
    """Fitted state holds numpy arrays and Python scalars only (no torchsvm objects),
    so pickles and skops files load without torchsvm's solution types."""
    import pickle

    X, y = make_data(13, n=60)
    clf = est(kernel=kernel, min_tpr=0.8, hoeffding_alpha=None).fit(X, y)
    plain = (np.ndarray, np.generic, float, int, bool, str, dict, type(None))
    for name, value in vars(clf).items():
        if name.endswith("_") and not name.startswith("_"):
            assert isinstance(value, plain), (name, type(value))
            if isinstance(value, dict):
                assert all(isinstance(v, (float, int)) for v in value.values()), name
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_s5c_ensemble_as_plain_arrays(kernel: str) -> None:
    """S5cEnsemble.stacked gives the replicates as (dual over X_fit, b[, w]) arrays with
    the same scores as the solution objects."""
    from sklearn.metrics.pairwise import rbf_kernel

    X, y = make_data(14, n=40)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    counts = bootstrap_counts(40, 3, np.random.default_rng(2))
    ens = fit_s5c_ensemble(
        X, y_pm, counts, C=1.0, kernel=kernel, gamma=0.5, min_tpr=0.9, time_limit=30
    )
    dual, b, w = ens.stacked(X)
    Xt = np.random.default_rng(3).normal(size=(15, 2))
    F = ens.decision_function(Xt)
    if kernel == "linear":
        assert w is not None
        np.testing.assert_allclose(Xt @ w.T + b, F.T, atol=1e-10)
    else:
        assert w is None
        assert np.all(dual[counts == 0] == 0)  # out-of-bag rows carry no multiplier
        np.testing.assert_allclose(
            rbf_kernel(Xt, X, gamma=0.5) @ dual.T + b, F.T, atol=1e-10
        )
        with pytest.raises(DataError, match="not the data"):
            ens.stacked(X + 1.0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_s5c_non_binding_floor_skips_the_miqp_with_the_same_optimum(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replicate whose S1 fit meets the floor returns S1 without a MIQP; the outer
    approximation on the same S5c problem (oracle) reaches the same optimum. A binding
    floor still goes through the MIQP."""
    import torchsvm.estimators.csvm as mod
    from torchsvm.mip.csvm import solve_csvm
    from torchsvm.mip.model import MipConfig
    from torchsvm.problems.csvm import CsvmProblem

    X, y = make_data(15, n=50)
    y_pm = np.where(y == "sick", 1.0, -1.0)
    counts = bootstrap_counts(50, 2, np.random.default_rng(4))
    kw = dict(C=5.0, kernel=kernel, gamma=0.5, time_limit=30, mip_rel_gap=1e-6)
    calls: list[float] = []

    def counting(problem, config, **kwargs):
        calls.append(problem.floors[0].target)
        return solve_csvm(problem, config, **kwargs)

    monkeypatch.setattr(mod, "solve_csvm", counting)
    loose = fit_s5c_ensemble(X, y_pm, counts, min_tpr=0.1, **kw)
    assert calls == []
    tight = fit_s5c_ensemble(X, y_pm, counts, min_tpr=0.97, **kw)
    assert calls == [0.97, 0.97]
    for b, sol in enumerate(loose.solutions):
        problem = CsvmProblem.from_data(
            X,
            y_pm,
            None,
            C=5.0,
            kernel=kernel,
            gamma=0.5,
            min_tpr=0.1,
            hoeffding_alpha=None,
            big_m=1000.0,
            sample_weight=counts[b],
            on_training=True,
            penalty="libsvm",
        )
        oracle = solve_csvm(problem, MipConfig(time_limit=30, mip_rel_gap=1e-6))
        assert sol.objective == pytest.approx(oracle.objective, rel=1e-5)
        f, fo = sol.decision_function(X), oracle.decision_function(X)
        np.testing.assert_allclose(f, fo, atol=1e-3 * (1 + np.abs(fo).max()))
        assert tight.solutions[b].objective >= sol.objective - 1e-9


@pytest.mark.parametrize("penalty", ["thesis", "libsvm"])
def test_sliding_b_s1_solvers_agree(penalty: str) -> None:
    """s1_solver="libsvm" (scikit-learn) and the batched solver fit the same S1."""
    X, y = make_data(16, n=200)
    kw = dict(C=4.0, kernel="rbf", gamma=0.7, min_tpr=0.85, penalty=penalty)
    a = SlidingInterceptSVC(**kw).fit(X, y)
    b = SlidingInterceptSVC(s1_solver="libsvm", **kw).fit(X, y)
    fa, fb = a.decision_function(X), b.decision_function(X)
    np.testing.assert_allclose(fa, fb, atol=1e-4 * (1 + np.abs(fa).max()))
    assert a.s1_intercept_ == pytest.approx(b.s1_intercept_, abs=1e-4)
    assert b.achieved_rates_["tpr"] >= b.floors_["tpr"]
