"""Tests of the bootstrap probabilistic SVM (SPEC S2) against sklearn / hand oracles."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC, vote_fraction
from torchsvm.estimators.csvm import fit_s5c_ensemble


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_classification(
        n_samples=160, n_features=5, n_informative=3, flip_y=0.1, random_state=3
    )
    return X[:100], y[:100], X[100:], y[100:]


@pytest.fixture(scope="module")
def fitted(data: tuple) -> BootstrapProbabilitySVC:
    X, y, _, _ = data
    m = BootstrapProbabilitySVC(
        C_grid=[0.1, 1.0, 10.0],
        n_bootstrap=15,
        accuracy_eps=0.05,
        kernel="rbf",
        random_state=0,
    )
    return m.fit(X, y)


def test_probabilities_valid(fitted: BootstrapProbabilitySVC, data: tuple) -> None:
    _, _, Xt, _ = data
    P = fitted.predict_proba(Xt)
    assert P.shape == (Xt.shape[0], 2)
    assert ((P >= 0) & (P <= 1)).all()
    np.testing.assert_allclose(P.sum(1), 1.0)
    # votes of B replicates mixed by weights: predict is the argmax, decision monotone
    np.testing.assert_array_equal(fitted.predict(Xt), fitted.classes_[np.argmax(P, 1)])
    np.testing.assert_allclose(fitted.decision_function(Xt), P[:, 1] - 0.5)


def test_weights_follow_spec(fitted: BootstrapProbabilitySVC, data: tuple) -> None:
    X, y, Xt, _ = data
    acc = np.nanmean(fitted.oob_accuracy_, axis=1)
    np.testing.assert_allclose(fitted.accuracy_, acc)
    J = np.flatnonzero(acc >= acc.max() - 0.05)
    np.testing.assert_array_equal(fitted.support_set_, J)
    w = np.zeros(3)
    w[J] = acc[J] ** 2 / (acc[J] ** 2).sum()
    np.testing.assert_allclose(fitted.weights_, w)
    # P(+|x) = sum_r w_r (1/B) sum_b 1[f > 0] (ties 1/2), from the raw scores
    p = sum(
        w[r] * vote_fraction(fitted.bootstrap_decision_function(Xt, r), axis=0)
        for r in J
    )
    np.testing.assert_allclose(fitted.predict_proba(Xt)[:, 1], p)
    best = fitted.set_params(ensemble=False)
    single = BootstrapProbabilitySVC(**best.get_params()).fit(X, y)
    fitted.set_params(ensemble=True)
    assert single.weights_[np.argmax(acc)] == 1.0
    assert single.weights_.sum() == 1.0


def test_matches_sklearn_fits(data: tuple) -> None:
    """Each replicate is SVC(C).fit(X, y, sample_weight=counts): OOB accuracy and votes."""
    X, y, Xt, _ = data
    grid = [0.5, 4.0]
    m = BootstrapProbabilitySVC(
        C_grid=grid, n_bootstrap=4, kernel="rbf", random_state=1
    )
    m.fit(X, y)
    for r, C in enumerate(grid):
        for b in range(4):
            c = m.counts_[b]
            ref = SVC(C=C, kernel="rbf", gamma="scale", tol=1e-10).fit(
                X, y, sample_weight=c
            )
            f = ref.decision_function(X)
            oob = c == 0
            acc = np.mean((f[oob] > 0) == (y[oob] == 1))
            assert m.oob_accuracy_[r, b] == pytest.approx(acc, abs=1.0 / oob.sum())
        if m.weights_[r] > 0:
            f_ref = np.stack(
                [
                    SVC(C=C, kernel="rbf", gamma="scale", tol=1e-10)
                    .fit(X, y, sample_weight=m.counts_[b])
                    .decision_function(Xt)
                    for b in range(4)
                ]
            )
            f_ours = m.bootstrap_decision_function(Xt, r)
            np.testing.assert_allclose(f_ours, f_ref, atol=2e-3 * np.abs(f_ref).max())


def test_ctrl1_raises_tpr_never_lowers_p(data: tuple) -> None:
    X, y, Xt, _ = data
    kw = dict(C_grid=[1.0], n_bootstrap=15, kernel="rbf", random_state=0)
    base = BootstrapProbabilitySVC(**kw).fit(X, y)
    ctrl = BootstrapProbabilitySVC(target_tpr=1.0, **kw).fit(X, y)
    assert ctrl.threshold_ >= 0.0
    assert (ctrl.predict_proba(Xt)[:, 1] >= base.predict_proba(Xt)[:, 1]).all()
    pos = (y == 1) & ~np.isnan(ctrl.oob_proba_)
    assert np.mean(ctrl.oob_proba_[pos] >= 0.5) >= 1.0
    # smallest such a: a slightly smaller shift misses the target
    below = BootstrapProbabilitySVC(target_tpr=1.0, **kw).fit(X, y)
    scores_ok = np.mean(
        below._oob_proba(_train_scores(below, X), ctrl.threshold_ * 0.999)[pos] >= 0.5
    )
    if ctrl.threshold_ > 0:
        assert scores_ok < 1.0


def _train_scores(m: BootstrapProbabilitySVC, X: np.ndarray) -> np.ndarray:
    out = np.zeros((m.C_grid_.shape[0], m.counts_.shape[0], X.shape[0]))
    for r in m._used:
        out[r] = m.bootstrap_decision_function(X, r)
    return out


def test_reproducible(data: tuple) -> None:
    X, y, Xt, _ = data
    kw = dict(C_grid=[1.0], n_bootstrap=8, kernel="linear")
    a = BootstrapProbabilitySVC(random_state=5, **kw).fit(X, y)
    b = BootstrapProbabilitySVC(random_state=5, **kw).fit(X, y)
    c = BootstrapProbabilitySVC(random_state=6, **kw).fit(X, y)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    np.testing.assert_array_equal(a.predict_proba(Xt), b.predict_proba(Xt))
    assert not np.array_equal(a.counts_, c.counts_)


def test_intervals(fitted: BootstrapProbabilitySVC, data: tuple) -> None:
    _, _, Xt, _ = data
    p = fitted.predict_proba(Xt)[:, 1]
    lo, hi = fitted.predict_proba_interval(Xt, level=0.95)
    assert ((lo <= p) & (p <= hi) & (lo >= 0) & (hi <= 1)).all()
    half = 1.959963984540054 * np.sqrt(p * (1 - p) / 15)
    np.testing.assert_allclose(hi, np.clip(p + half, 0, 1))
    f = fitted.bootstrap_decision_function(Xt)
    slo, shi = fitted.score_interval(Xt, level=0.9)
    np.testing.assert_allclose(slo, 2 * f.mean(0) - np.quantile(f, 0.95, axis=0))
    np.testing.assert_allclose(shi, 2 * f.mean(0) - np.quantile(f, 0.05, axis=0))
    with pytest.raises(ValueError, match="level"):
        fitted.score_interval(Xt, level=1.5)


def test_bad_input(data: tuple) -> None:
    X, y, _, _ = data
    with pytest.raises(ValueError, match="C_grid"):
        BootstrapProbabilitySVC(C_grid=[-1.0], n_bootstrap=2).fit(X, y)
    with pytest.raises(ValueError, match="binary|classes"):
        BootstrapProbabilitySVC(n_bootstrap=2).fit(X, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="CUDA|cuda"):
        import torch

        if torch.cuda.is_available():
            pytest.skip("has a GPU")
        BootstrapProbabilitySVC(n_bootstrap=2, device="cuda").fit(X, y)


@pytest.mark.gpu
def test_cpu_and_gpu_agree(data: tuple) -> None:
    """Same random_state: same draws, and the same probabilities on CPU and CUDA."""
    X, y, Xt, _ = data
    kw = dict(C_grid=[0.5, 2.0], n_bootstrap=10, kernel="rbf", random_state=2)
    cpu = BootstrapProbabilitySVC(device="cpu", **kw).fit(X, y)
    gpu = BootstrapProbabilitySVC(device="cuda", **kw).fit(X, y)
    np.testing.assert_array_equal(cpu.counts_, gpu.counts_)
    # votes can only differ where a score is within rounding of 0
    diff = np.abs(cpu.predict_proba(Xt) - gpu.predict_proba(Xt))
    assert diff.mean() < 0.01
    np.testing.assert_allclose(cpu.weights_, gpu.weights_, atol=0.02)


def test_ctrl2_constrained_fits_meet_the_floor(data: tuple) -> None:
    """Ctrl2: every S5c fit meets the TPR floor on its in-bag rows (counted with the
    draw counts, SPEC S5c), and the ensemble raises P(+|x) on the positives."""
    X, y, _, _ = data
    X, y = X[:60], y[:60]
    kw = dict(C_grid=[1.0], n_bootstrap=4, random_state=0)
    m = BootstrapProbabilitySVC(
        target_tpr=0.95, control="csvm", mip_time_limit=30.0, **kw
    )
    m.fit(X, y)
    assert m.mip_status_.shape == (1, 4)
    pos = y == m.classes_[1]
    for b, sol in enumerate(m._csvm[0]):
        if m.mip_status_[0, b] != "optimal":
            continue
        f, c = sol.decision_function(X), m.counts_[b]
        assert (c[pos] * (f[pos] >= -1e-7)).sum() >= 0.95 * c[pos].sum() - 1e-9
    p2 = m.predict_proba(X)[:, 1]
    p0 = BootstrapProbabilitySVC(**kw).fit(X, y).predict_proba(X)[:, 1]
    assert p2[pos].mean() >= p0[pos].mean()
    assert m.threshold_ == 0.0 and m.ctrl2_wall_time_ > 0


def test_ctrl2_bad_configs(data: tuple) -> None:
    X, y, _, _ = data
    with pytest.raises(ValueError, match="needs target_tpr"):
        BootstrapProbabilitySVC(n_bootstrap=2, control="csvm").fit(X, y)
    with pytest.raises(ValueError, match="kernel 'linear' or 'rbf'"):
        BootstrapProbabilitySVC(
            n_bootstrap=2, control="csvm", target_tpr=0.9, kernel="poly"
        ).fit(X, y)


# ------------------------------------------------- out-of-bag calibration (issue 17)
@pytest.fixture(scope="module")
def raw_and_calibrated(data: tuple) -> dict:
    X, y, _, _ = data
    kw = dict(C_grid=[0.5, 2.0], n_bootstrap=30, kernel="linear", random_state=4)
    out = {None: BootstrapProbabilitySVC(**kw).fit(X, y)}
    for method in ("isotonic", "sigmoid", "beta", "auto"):
        out[method] = BootstrapProbabilitySVC(calibration=method, **kw).fit(X, y)
    return out


@pytest.mark.parametrize("method", ["isotonic", "sigmoid", "beta", "auto"])
def test_calibration_needs_no_extra_fits(
    raw_and_calibrated: dict, data: tuple, method
) -> None:
    raw, cal = raw_and_calibrated[None], raw_and_calibrated[method]
    _, _, Xt, _ = data
    np.testing.assert_array_equal(cal.counts_, raw.counts_)
    np.testing.assert_array_equal(cal.n_iter_, raw.n_iter_)
    np.testing.assert_allclose(cal.oob_proba_, raw.oob_proba_)
    np.testing.assert_allclose(cal._raw_proba(Xt), raw.predict_proba(Xt)[:, 1])


@pytest.mark.parametrize("method", ["isotonic", "sigmoid", "beta"])
def test_calibrated_probabilities_valid_and_monotone(
    raw_and_calibrated, data, method
) -> None:
    cal = raw_and_calibrated[method]
    _, _, Xt, _ = data
    p = cal.predict_proba(Xt)
    assert ((p >= 0) & (p <= 1)).all() and np.allclose(p.sum(1), 1.0)
    # the calibration map is non-decreasing in the raw vote
    grid = np.linspace(0.0, 1.0, 2 * cal.n_bootstrap + 1)
    g = cal._calibrate(grid)
    assert ((g >= 0) & (g <= 1)).all()
    if method != "beta":
        assert (np.diff(g) >= -1e-12).all()
    raw = cal._raw_proba(Xt)
    order = np.argsort(raw, kind="stable")
    if method != "beta":
        assert (np.diff(p[order, 1]) >= -1e-12).all()
    assert cal.calibration_ == method


def test_beta_calibration_monotone_within_each_assigned_class(
    raw_and_calibrated,
) -> None:
    # Garczarek's scaling maps the memberships of each assigned class monotonically
    cal = raw_and_calibrated["beta"]
    grid = np.linspace(0.0, 1.0, 2 * cal.n_bootstrap + 1)
    g = cal._calibrate(grid)
    lo, hi = grid < 0.5, grid >= 0.5
    assert (np.diff(g[lo]) >= -1e-12).all() and (np.diff(g[hi]) >= -1e-12).all()


def test_isotonic_calibration_is_sklearn_isotonic_on_oob_votes(
    raw_and_calibrated, data
) -> None:
    from sklearn.isotonic import IsotonicRegression

    cal = raw_and_calibrated["isotonic"]
    X, y, Xt, _ = data
    seen = np.isfinite(cal.oob_proba_)
    # fitted on the vote log-odds (a strictly increasing map of the vote, so the
    # fitted steps are those of isotonic regression on the votes themselves)
    ref = IsotonicRegression(out_of_bounds="clip").fit(
        cal._vote_scores(cal.oob_proba_[seen]),
        (y[seen] == cal.classes_[1]).astype(float),
    )
    raw = cal._raw_proba(Xt)
    np.testing.assert_allclose(
        cal.predict_proba(Xt)[:, 1], ref.predict(cal._vote_scores(raw)), atol=1e-12
    )
    on_votes = IsotonicRegression(out_of_bounds="clip").fit(
        cal.oob_proba_[seen], (y[seen] == cal.classes_[1]).astype(float)
    )
    np.testing.assert_allclose(
        cal.oob_calibrated_proba_[seen],
        on_votes.predict(cal.oob_proba_[seen]),
        atol=1e-12,
    )


def test_auto_is_reproducible_and_scores_the_candidates(data: tuple) -> None:
    X, y, Xt, _ = data
    kw = dict(C_grid=[1.0], n_bootstrap=20, calibration="auto", random_state=7)
    a = BootstrapProbabilitySVC(**kw).fit(X, y)
    b = BootstrapProbabilitySVC(**kw).fit(X, y)
    assert a.calibration_ == b.calibration_
    p = a.oob_proba_[np.isfinite(a.oob_proba_)]
    few = np.count_nonzero((p > 0) & (p < 1)) < 20  # isotonic on votes is left out
    assert set(a.calibration_scores_) == {"raw", "sigmoid", "beta"} | (
        set() if few else {"isotonic"}
    )
    best = min(a.calibration_scores_.values())
    chosen = "raw" if a.calibration_ is None else a.calibration_
    assert a.calibration_scores_[chosen] == best
    np.testing.assert_array_equal(a.predict_proba(Xt), b.predict_proba(Xt))


@pytest.mark.parametrize("method", [None, "isotonic", "sigmoid", "beta", "auto"])
def test_intervals_contain_the_calibrated_estimate(
    raw_and_calibrated, data, method
) -> None:
    cal = raw_and_calibrated[method]
    _, _, Xt, _ = data
    p = cal.predict_proba(Xt)[:, 1]
    lo, hi = cal.predict_proba_interval(Xt, level=0.9)
    assert ((lo <= p + 1e-12) & (p <= hi + 1e-12)).all()
    assert ((lo >= 0) & (hi <= 1)).all()


def test_ctrl1_with_calibration_moves_the_cutoff(data: tuple) -> None:
    X, y, _, _ = data
    kw = dict(C_grid=[1.0], n_bootstrap=20, kernel="rbf", random_state=0)
    m = BootstrapProbabilitySVC(target_tpr=0.97, calibration="isotonic", **kw).fit(X, y)
    assert m.threshold_ == 0.0 and m.proba_cutoff_ <= 0.5
    pos = (y == m.classes_[1]) & np.isfinite(m.oob_calibrated_proba_)
    tpr = np.mean(m.oob_calibrated_proba_[pos] > m.proba_cutoff_)
    assert tpr >= 0.97
    f = m.decision_function(X)
    np.testing.assert_array_equal(m.predict(X), m.classes_[(f > 0).astype(int)])
    np.testing.assert_allclose(f, m.predict_proba(X)[:, 1] - m.proba_cutoff_)
    # without target_tpr the cutoff is 1/2: predict is the argmax of predict_proba
    plain = BootstrapProbabilitySVC(calibration="isotonic", **kw).fit(X, y)
    assert plain.proba_cutoff_ == 0.5
    np.testing.assert_array_equal(
        plain.predict(X), plain.classes_[np.argmax(plain.predict_proba(X), axis=1)]
    )


@pytest.mark.parametrize(
    ("kernel", "calibration", "source"),
    [
        ("linear", None, "votes"),
        ("rbf", None, "votes"),
        ("linear", "isotonic", "votes"),
        ("rbf", "sigmoid", "scores"),
    ],
)
def test_fit_targets_equals_one_fit_per_target(
    data: tuple, kernel: str, calibration: str | None, source: str
) -> None:
    X, y, Xt, _ = data
    kw = dict(
        C_grid=[0.1, 1.0, 10.0],
        n_bootstrap=12,
        kernel=kernel,
        calibration=calibration,
        calibration_input=source,
        random_state=4,
    )
    targets = [None, 0.8, 0.95, 1.0]
    base = BootstrapProbabilitySVC(target_tpr=0.9, **kw)
    shared = base.fit_targets(X, y, targets)
    assert len(shared) == len(targets)
    thresholds = set()
    for t, m in zip(targets, shared, strict=True):
        ref = BootstrapProbabilitySVC(target_tpr=t, **kw).fit(X, y)
        assert m.target_tpr == t
        assert m.threshold_ == ref.threshold_ and m.proba_cutoff_ == ref.proba_cutoff_
        np.testing.assert_array_equal(m.predict_proba(Xt), ref.predict_proba(Xt))
        np.testing.assert_array_equal(m.predict(Xt), ref.predict(Xt))
        np.testing.assert_array_equal(m.weights_, ref.weights_)
        thresholds.add((m.threshold_, m.proba_cutoff_))
    # the targets do move the control (else the test could not tell the copies apart)
    assert len(thresholds) > 1
    # self is fitted with its own target
    ref = BootstrapProbabilitySVC(target_tpr=0.9, **kw).fit(X, y)
    np.testing.assert_array_equal(base.predict_proba(Xt), ref.predict_proba(Xt))


def test_ctrl2_fit_targets_each_fit_is_its_own_s5c_solve(data: tuple) -> None:
    """Ctrl2 on one shared S5c path (S1 where it meets the floor, a lower target's
    proven optimum where it meets the higher floor, the upweighted S1 fit for TPR 1,
    else a MIQP) gives, for every
    (target, C, replicate), the optimum of that fit's own independent S5c solve
    (MIP's fit_s5c_ensemble), and each model equals its own fit."""
    X, y, Xt, _ = data
    X, y = X[:40], y[:40]
    y_pm = np.where(y == 1, 1.0, -1.0)
    kw = dict(C_grid=[0.5, 2.0], n_bootstrap=3, control="csvm", random_state=0)
    targets = [0.7, 0.8, 1.0]
    base = BootstrapProbabilitySVC(target_tpr=0.7, mip_time_limit=120.0, **kw)
    models = base.fit_targets(X, y, targets)
    sources = {s for m in models for s in m.ctrl2_source_.ravel()}
    # the data exercise all three ways a fit is obtained
    assert sources == {"s1", "reused", "forced", "miqp"}
    for t, m in zip(targets, models, strict=True):
        assert m.target_tpr == t and (m.mip_status_ == "optimal").all()
        for r, C in enumerate(m.C_grid_):
            ref = fit_s5c_ensemble(
                X, y_pm, m.counts_, C=float(C), min_tpr=t, time_limit=120.0
            )
            for b, (mine, own) in enumerate(
                zip(m._csvm[r], ref.solutions, strict=True)
            ):
                assert own.status.value == "optimal"
                gap = 2e-4 * max(1.0, abs(own.objective))
                assert abs(mine.objective - own.objective) <= gap, (t, r, b)
                # the fit meets its own floor (z_i = 1 where y_i f(x_i) >= 1)
                f, c = mine.decision_function(X), m.counts_[b] * (y_pm > 0)
                met = y_pm * f >= 1.0 - 1e-6
                assert c @ met >= t * c.sum() - 1e-9
                np.testing.assert_allclose(
                    mine.decision_function(Xt), own.decision_function(Xt), atol=1e-3
                )
    # a model from the path equals its own fit
    one = BootstrapProbabilitySVC(target_tpr=0.8, mip_time_limit=120.0, **kw).fit(X, y)
    np.testing.assert_allclose(
        one.predict_proba(Xt), models[1].predict_proba(Xt), atol=1e-12
    )


def test_ctrl2_non_binding_floor_is_the_unconstrained_ensemble(data: tuple) -> None:
    """A floor every replicate's S1 fit meets leaves Ctrl2 = the plain bootstrap SVM
    (same C meaning, same draws): every fit is S1, no MIQP, same probabilities."""
    X, y, Xt, _ = data
    kw = dict(C_grid=[0.25, 4.0], n_bootstrap=6, random_state=1)
    plain = BootstrapProbabilitySVC(**kw).fit(X, y)
    ctrl2 = BootstrapProbabilitySVC(target_tpr=0.05, control="csvm", **kw).fit(X, y)
    assert (ctrl2.ctrl2_source_ == "s1").all()
    np.testing.assert_array_equal(ctrl2.weights_, plain.weights_)
    for r in plain._used:
        np.testing.assert_allclose(
            ctrl2.bootstrap_decision_function(Xt, r),
            plain.bootstrap_decision_function(Xt, r),
            atol=1e-4,
        )
    np.testing.assert_allclose(
        ctrl2.predict_proba(Xt), plain.predict_proba(Xt), atol=1.5 / 6
    )
    assert np.mean(ctrl2.predict(Xt) == plain.predict(Xt)) >= 0.97


def test_ctrl2_fit_targets_needs_floors(data: tuple) -> None:
    X, y, _, _ = data
    m = BootstrapProbabilitySVC(target_tpr=0.9, control="csvm", n_bootstrap=2)
    with pytest.raises(ValueError, match="needs a TPR floor for every target"):
        m.fit_targets(X, y, [0.5, None])


def test_ctrl2_shared_seeds_pick_what_is_valid() -> None:
    """Which earlier fits seed MIQP (k, r) (hand-built path state, no solve):
    incumbents = the previous C's fits at targets >= t, bound = max over targets <= t
    and C <= C_r, cut points = S1's w and the w of the fits at C_r and C_{r-1}."""
    from types import SimpleNamespace

    from torchsvm.estimators.bootstrap import _shared_seeds
    from torchsvm.mip.warm_start import S1Fit

    targets = np.array([0.9, 0.5, 0.7])  # not sorted: the rule reads the values
    grid = np.array([1.0, 0.5, 2.0])
    T, R = 3, 3
    sols = [[None] * R for _ in range(T)]
    bounds = np.full((T, R), -np.inf)
    val = 0
    for k in range(T):
        for r in range(R):
            val += 1
            sols[k][r] = SimpleNamespace(coef=np.array([float(val), 0.0]))
            bounds[k, r] = float(val)
    X = np.eye(2)
    s1 = S1Fit(dual_coef=np.array([0.0, 7.0]), intercept=0.0)
    # fit (k=2: t=0.7, r=2: C=2.0), previous C index r-1 = 1 (C=0.5)
    inc, lb, pts = _shared_seeds(
        sols, bounds, targets, grid, 2, 2, X, s1, "linear", [], None
    )
    assert [x.coef[0] for x in inc] == [2.0, 8.0]  # t = 0.9 and t = 0.7 at r = 1
    # targets <= 0.7: k in {1, 2}; C <= 2: every r -> max over bounds[1:, :]
    assert lb == bounds[1:, :].max()
    assert sorted(pts[:, 0].tolist()) == [0.0, 2, 3, 5, 6, 8, 9]  # S1 w = (0, 7)
    assert [0.0, 7.0] in pts.tolist()
    # C = 0.5 (r = 1): smaller C's bounds only (r = 1 itself); given bound kept if higher
    _, lb, _ = _shared_seeds(sols, bounds, targets, grid, 0, 1, X, s1, "linear", [], 99)
    assert lb == 99
    _, lb, pts = _shared_seeds(sols, bounds, targets, grid, 0, 1, X, s1, "rbf", [], 0)
    assert lb == bounds[:, 1].max() and pts is None


@pytest.mark.slow  # two S5c paths with MIQPs: ~16 s under load
def _record_solve_csvm(monkeypatch) -> list[dict]:
    """Record every ``solve_csvm`` call of ``fit_s5c_path`` (problem, solution, kwargs)."""
    import torchsvm.estimators.bootstrap as boot

    calls: list[dict] = []
    real = boot.solve_csvm

    def spy(problem, config, **kw):
        sol = real(problem, config, **kw)
        calls.append({"problem": problem, "sol": sol, **kw})
        return sol

    monkeypatch.setattr(boot, "solve_csvm", spy)
    return calls


def test_ctrl2_shared_seeds_are_exact(data: tuple, monkeypatch) -> None:
    """The seeds each MIQP gets from its replicate's earlier fits (incumbents at higher
    targets of the previous C, the bound over lower targets and smaller C, tangent
    cuts at earlier w) are valid: every bound handed over is <= that fit's own
    optimum, every incumbent is feasible there, and the path equals the one seeded
    the old way (same optimal objectives, fit by fit)."""
    import torchsvm.estimators.bootstrap as boot
    from torchsvm.estimators.bootstrap import _draw_counts, fit_s5c_path

    X, y, _, _ = data
    X, y = X[:40], y[:40]
    y_pm = np.where(y == 1, 1.0, -1.0)
    counts = _draw_counts(y_pm, 2, 0)
    grid, targets = [0.25, 1.0, 4.0], [0.7, 0.8, 0.9, 0.95]
    calls = _record_solve_csvm(monkeypatch)
    shared = fit_s5c_path(
        X, y_pm, counts, grid, targets, time_limit=120.0, share_seeds=True
    )
    n_shared = len(calls)
    old = fit_s5c_path(
        X, y_pm, counts, grid, targets, time_limit=120.0, share_seeds=False
    )
    assert n_shared > 0 and len(calls) == 2 * n_shared  # same fits need a MIQP
    seeded = calls[:n_shared]
    # the data exercise every kind of seed
    assert any(c["lower_bound"] is not None for c in seeded)
    assert any(len(c["incumbents"]) >= 2 for c in seeded)
    assert any(
        c["cut_points"] is not None and len(c["cut_points"]) >= 2 for c in seeded
    )
    for c in seeded:
        opt = c["sol"]
        assert opt.status.value == "optimal"
        tol = 2e-4 * max(1.0, abs(opt.objective))
        if c["lower_bound"] is not None:
            assert c["lower_bound"] <= opt.objective + tol
        for inc in c["incumbents"]:
            # feasible here: meets this problem's floor with z_i = 1 at margin >= 1
            assert boot._reuse_if_feasible(c["problem"], inc) is not None
    for k in range(len(targets)):
        for r in range(len(grid)):
            for b in range(2):
                a, o = shared.solutions[k][r][b], old.solutions[k][r][b]
                assert a.status.value == o.status.value == "optimal"
                assert abs(a.objective - o.objective) <= 2e-4 * max(1, abs(o.objective))


def test_ctrl2_path_tightens_after_a_hard_previous_c(data: tuple, monkeypatch) -> None:
    """A MIQP whose floor needed the bounded big-M at the previous C
    (``tightened_masters > 0``) is solved with it from the first master
    (``tighten_anchors=True``); the others keep ``"auto"``. Forced here by
    S5C_TIGHTEN_AFTER = 1; every path fit equals its own solve without any
    tightening (optimal objectives within the gap)."""
    import torchsvm.mip.csvm as csvm_mod
    from torchsvm.estimators.bootstrap import _draw_counts, fit_s5c_path
    from torchsvm.mip.model import MipConfig

    X, y, _, _ = data
    X, y = X[:40], y[:40]
    y_pm = np.where(y == 1, 1.0, -1.0)
    counts = _draw_counts(y_pm, 1, 0)
    grid, targets = [0.25, 1.0, 4.0], [0.8, 0.95]
    calls = _record_solve_csvm(monkeypatch)
    monkeypatch.setattr(csvm_mod, "S5C_TIGHTEN_AFTER", 1)
    fit_s5c_path(X, y_pm, counts, grid, targets, time_limit=60.0)
    hinted = [c for c in calls if c["tighten_anchors"] is True]
    assert hinted and any(c["tighten_anchors"] == "auto" for c in calls)
    by_key = {(c["problem"].C, c["problem"].floors[0].required): c for c in calls}
    for c in hinted:
        C, req = c["problem"].C, c["problem"].floors[0].required
        prev_C = grid[grid.index(C) - 1]
        assert by_key[(prev_C, req)]["sol"].tightened_masters > 0
        assert c["sol"].tightened_masters > 0
    for c in calls:
        ref = csvm_mod.solve_csvm(
            c["problem"], MipConfig(time_limit=60.0), tighten_anchors=False
        )
        assert c["sol"].status.value == ref.status.value == "optimal"
        tol = 2e-4 * max(1.0, abs(ref.objective))
        assert abs(c["sol"].objective - ref.objective) <= tol


# ------------------------------------------- unanimous votes are exactly 0 or 1 (issue 17)
# acc^2 weights of these accuracies sum to 1 - 1.1e-16 in floating point
_ACC = np.array([0.874, 0.86, 0.875, 0.756])


def test_mix_votes_is_exact_where_every_c_is_unanimous() -> None:
    from torchsvm.estimators.bootstrap import _mix_votes

    w = _ACC**2 / (_ACC**2).sum()
    assert w @ np.ones(4) < 1.0  # the defect: the plain mixture of 1s is not 1
    per_c = np.array(
        [
            [1.0, 0.0, 1.0, 0.5, np.nan],
            [1.0, 0.0, 1.0, 0.5, np.nan],
            [1.0, 0.0, 0.9, 0.5, np.nan],
            [1.0, 0.0, 1.0, 0.5, np.nan],
        ]
    )
    p = _mix_votes(w, per_c)
    assert p[0] == 1.0 and p[1] == 0.0
    assert 0.0 < p[2] < 1.0 and p[2] == pytest.approx(1.0 - 0.1 * w[2])
    assert p[3] == pytest.approx(0.5)
    assert np.isnan(p[4])
    # zero weights are left out of the unanimity check
    w0 = np.array([0.5, 0.5, 0.0, 0.0])
    assert _mix_votes(w0, per_c)[2] == 1.0


def test_unanimous_predictions_are_exactly_zero_or_one() -> None:
    # far from the boundary every replicate at every C agrees: P must be exactly 0 / 1
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 1, (30, 2)), rng.normal(3, 1, (30, 2))])
    y = np.repeat([0, 1], 30)
    m = BootstrapProbabilitySVC(
        C_grid=[0.25, 0.5, 1.0, 2.0], n_bootstrap=10, accuracy_eps=1.0, random_state=0
    ).fit(X, y)
    m.weights_ = _ACC**2 / (_ACC**2).sum()  # weights whose float sum is below 1
    far = np.array([[-20.0, -20.0], [20.0, 20.0]])
    np.testing.assert_array_equal(m.predict_proba(far)[:, 1], [0.0, 1.0])
    scores = np.stack([m.bootstrap_decision_function(X, r) for r in range(4)])
    oob = m._oob_proba(scores, 0.0)
    drawn = (m.counts_ > 0)[None]
    seen = np.isfinite(oob)
    all_pos = seen & np.all((scores > 0) | drawn, axis=(0, 1))
    all_neg = seen & np.all((scores < 0) | drawn, axis=(0, 1))
    assert all_pos.any() and all_neg.any()
    assert (oob[all_pos] == 1.0).all() and (oob[all_neg] == 0.0).all()


# -------------------------- out-of-bag calibration of the mean decision value (issue 17)
@pytest.fixture(scope="module")
def tiny() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_classification(
        n_samples=70,
        n_features=3,
        n_informative=2,
        n_redundant=0,
        flip_y=0.15,
        random_state=5,
    )
    return X[:50], y[:50], X[50:]


def _brute_force_mixture(m: BootstrapProbabilitySVC, X, y, Xt, kernel: str):
    """sklearn SVC per (C, replicate) with the draw counts as sample weights."""
    B = m.counts_.shape[0]
    s_tr, s_te = np.zeros((B, X.shape[0])), np.zeros((B, Xt.shape[0]))
    for r, C in enumerate(m.C_grid_):
        if m.weights_[r] == 0:
            continue
        for b in range(B):
            ref = SVC(C=C, kernel=kernel, gamma="scale", tol=1e-10).fit(
                X, y, sample_weight=m.counts_[b]
            )
            s_tr[b] += m.weights_[r] * ref.decision_function(X)
            s_te[b] += m.weights_[r] * ref.decision_function(Xt)
    oob = m.counts_ == 0
    with np.errstate(invalid="ignore"):
        oob_mean = np.where(oob, s_tr, 0.0).sum(0) / oob.sum(0)
    return oob_mean, s_te.mean(0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_oob_mean_decision_value_matches_brute_force(tiny, kernel: str) -> None:
    X, y, Xt = tiny
    m = BootstrapProbabilitySVC(
        C_grid=[0.5, 2.0],
        n_bootstrap=6,
        accuracy_eps=1.0,
        kernel=kernel,
        calibration="sigmoid",
        calibration_input="scores",
        random_state=2,
    ).fit(X, y)
    assert (m.weights_ > 0).all()  # both C values enter the mixture
    oob_ref, mean_ref = _brute_force_mixture(m, X, y, Xt, kernel)
    seen = (m.counts_ == 0).any(0)
    assert seen.sum() > 30 and not seen.all()
    np.testing.assert_array_equal(np.isfinite(m.oob_decision_), seen)
    scale = np.abs(mean_ref).max()
    np.testing.assert_allclose(m.oob_decision_[seen], oob_ref[seen], atol=2e-3 * scale)
    np.testing.assert_allclose(
        m.mean_decision_function(Xt), mean_ref, atol=2e-3 * scale
    )


def test_score_sigmoid_is_sklearns_platt_on_the_oob_mean_decision_value(tiny) -> None:
    from scipy.special import expit
    from sklearn.calibration import _sigmoid_calibration

    X, y, Xt = tiny
    m = BootstrapProbabilitySVC(
        C_grid=[0.5, 2.0],
        n_bootstrap=8,
        kernel="rbf",
        calibration="sigmoid",
        calibration_input="scores",
        random_state=0,
    ).fit(X, y)
    assert m.calibration_ == "sigmoid" and m.calibration_input_ == "scores"
    seen = np.isfinite(m.oob_decision_)
    a, b = _sigmoid_calibration(
        m.oob_decision_[seen], (y[seen] == m.classes_[1]).astype(float)
    )
    s = m.mean_decision_function(Xt)
    np.testing.assert_allclose(
        m.predict_proba(Xt)[:, 1], expit(-(a * s + b)), atol=1e-6
    )
    np.testing.assert_allclose(
        m.oob_calibrated_proba_[seen],
        expit(-(a * m.oob_decision_[seen] + b)),
        atol=1e-6,
    )
    # the probability is a function of the mean score, not of the votes
    order = np.argsort(s)
    assert (np.diff(m.predict_proba(Xt)[order, 1]) >= -1e-12).all()


def test_score_isotonic_is_sklearn_isotonic_on_the_oob_mean_decision_value(
    tiny,
) -> None:
    from sklearn.isotonic import IsotonicRegression

    X, y, Xt = tiny
    m = BootstrapProbabilitySVC(
        C_grid=[1.0],
        n_bootstrap=8,
        kernel="rbf",
        calibration="isotonic",
        calibration_input="scores",
        random_state=0,
    ).fit(X, y)
    seen = np.isfinite(m.oob_decision_)
    ref = IsotonicRegression(out_of_bounds="clip").fit(
        m.oob_decision_[seen], (y[seen] == m.classes_[1]).astype(float)
    )
    np.testing.assert_allclose(
        m.predict_proba(Xt)[:, 1], ref.predict(m.mean_decision_function(Xt)), atol=1e-12
    )


@pytest.fixture(scope="module")
def score_models(data: tuple) -> dict:
    X, y, _, _ = data
    kw = dict(C_grid=[0.5, 2.0], n_bootstrap=30, kernel="rbf", random_state=4)
    out = {"raw": BootstrapProbabilitySVC(**kw).fit(X, y)}
    for method in ("isotonic", "sigmoid", "beta", "auto"):
        for source in ("scores", "auto"):
            out[method, source] = BootstrapProbabilitySVC(
                calibration=method, calibration_input=source, **kw
            ).fit(X, y)
    return out


@pytest.mark.parametrize("method", ["isotonic", "sigmoid", "beta", "auto"])
@pytest.mark.parametrize("source", ["scores", "auto"])
def test_score_calibration_needs_no_extra_fits_and_has_coherent_intervals(
    score_models: dict, data: tuple, method: str, source: str
) -> None:
    raw, cal = score_models["raw"], score_models[method, source]
    _, _, Xt, _ = data
    np.testing.assert_array_equal(cal.counts_, raw.counts_)
    np.testing.assert_array_equal(cal.n_iter_, raw.n_iter_)
    np.testing.assert_allclose(cal.oob_decision_, raw.oob_decision_)
    np.testing.assert_allclose(cal._raw_proba(Xt), raw.predict_proba(Xt)[:, 1])
    p = cal.predict_proba(Xt)
    assert ((p >= 0) & (p <= 1)).all() and np.allclose(p.sum(1), 1.0)
    lo, hi = cal.predict_proba_interval(Xt, level=0.9)
    assert ((lo <= p[:, 1] + 1e-12) & (p[:, 1] <= hi + 1e-12)).all()
    assert ((lo >= 0) & (hi <= 1)).all()
    if cal.calibration_input_ == "scores" and cal.calibration_ == "sigmoid":
        assert (hi - lo > 0).any()  # the score interval has a width


def test_auto_chooses_among_vote_and_score_calibrators(score_models: dict) -> None:
    both = score_models["auto", "auto"]
    keys = {"raw", "isotonic", "sigmoid", "beta"}
    keys |= {f"{k}:scores" for k in ("isotonic", "sigmoid", "beta")}
    v = both.oob_proba_[np.isfinite(both.oob_proba_)]
    if np.count_nonzero((v > 0) & (v < 1)) < 20:  # the guard leaves vote isotonic out
        keys -= {"isotonic"}
    assert set(both.calibration_scores_) == keys
    best = min(both.calibration_scores_, key=both.calibration_scores_.get)
    chosen = (
        "raw"
        if both.calibration_ is None
        else both.calibration_
        + ("" if both.calibration_input_ == "votes" else ":scores")
    )
    assert both.calibration_scores_[chosen] == both.calibration_scores_[best]
    scores_only = score_models["auto", "scores"]
    assert set(scores_only.calibration_scores_) == {
        "raw",
        "isotonic:scores",
        "sigmoid:scores",
        "beta:scores",
    }
    # a named calibrator with calibration_input="auto": votes vs scores, no raw
    sig = score_models["sigmoid", "auto"]
    assert set(sig.calibration_scores_) == {"sigmoid", "sigmoid:scores"}
    assert sig.calibration_ == "sigmoid"
    pick = min(sig.calibration_scores_, key=sig.calibration_scores_.get)
    assert sig.calibration_input_ == ("scores" if pick.endswith(":scores") else "votes")


def test_ctrl1_with_score_calibration_moves_the_cutoff(data: tuple) -> None:
    X, y, _, _ = data
    m = BootstrapProbabilitySVC(
        C_grid=[1.0],
        n_bootstrap=20,
        kernel="rbf",
        random_state=0,
        target_tpr=0.97,
        calibration="sigmoid",
        calibration_input="scores",
    ).fit(X, y)
    assert m.threshold_ == 0.0 and m.proba_cutoff_ <= 0.5
    pos = (y == m.classes_[1]) & np.isfinite(m.oob_calibrated_proba_)
    assert np.mean(m.oob_calibrated_proba_[pos] > m.proba_cutoff_) >= 0.97
    f = m.decision_function(X)
    np.testing.assert_allclose(f, m.predict_proba(X)[:, 1] - m.proba_cutoff_)
    np.testing.assert_array_equal(m.predict(X), m.classes_[(f > 0).astype(int)])


def test_calibration_input_is_validated(data: tuple) -> None:
    X, y, _, _ = data
    with pytest.raises(ValueError, match="calibration_input"):
        BootstrapProbabilitySVC(n_bootstrap=2, calibration_input="margins").fit(X, y)


def test_auto_leaves_vote_isotonic_out_on_nearly_binary_votes(data: tuple) -> None:
    X, y, _, _ = data
    # B = 20 linear replicates at one C agree on all but a few rows out of bag
    kw = dict(C_grid=[1.0], n_bootstrap=20, calibration="auto", random_state=7)
    few = BootstrapProbabilitySVC(**kw).fit(X, y)
    p = few.oob_proba_[np.isfinite(few.oob_proba_)]
    assert 0 < np.count_nonzero((p > 0) & (p < 1)) < 20
    assert "isotonic" not in few.calibration_scores_
    assert {"raw", "sigmoid", "beta"} <= set(few.calibration_scores_)
    assert few.calibration_ != "isotonic"
    # the score calibrators see continuous inputs: isotonic on scores stays a candidate
    both = BootstrapProbabilitySVC(calibration_input="auto", **kw).fit(X, y)
    assert "isotonic" not in both.calibration_scores_
    assert "isotonic:scores" in both.calibration_scores_
    # an explicit isotonic is fitted all the same
    iso = BootstrapProbabilitySVC(**{**kw, "calibration": "isotonic"}).fit(X, y)
    assert iso.calibration_ == "isotonic" and iso.calibrator_ is not None
    # on overlapping classes most votes are mixed, and isotonic competes
    Xn, yn = make_classification(
        n_samples=100,
        n_features=5,
        n_informative=3,
        class_sep=0.3,
        flip_y=0.2,
        random_state=3,
    )
    many = BootstrapProbabilitySVC(**kw).fit(Xn, yn)
    q = many.oob_proba_[np.isfinite(many.oob_proba_)]
    assert np.count_nonzero((q > 0) & (q < 1)) >= 20
    assert "isotonic" in many.calibration_scores_


def _cv_sigmoid_losses(m: BootstrapProbabilitySVC, y: np.ndarray) -> dict:
    """Per-row out-of-fold squared errors of sklearn's Platt on the vote log-odds and
    on the OOB mean decision value (the folds 'auto' uses)."""
    from scipy.special import expit
    from sklearn.calibration import _sigmoid_calibration
    from sklearn.model_selection import StratifiedKFold

    seen = np.isfinite(m.oob_proba_)
    p, s = m.oob_proba_[seen], m.oob_decision_[seen]
    y01 = (y[seen] == m.classes_[1]).astype(float)
    B = m.counts_.shape[0]
    ps = (B * p + 0.5) / (B + 1.0)
    z = 0.5 * np.log(ps / (1.0 - ps))
    out = {}
    for key, x in (("sigmoid", z), ("sigmoid:scores", s)):
        q = np.empty_like(y01)
        folds = StratifiedKFold(5, shuffle=True, random_state=0)
        for tr, te in folds.split(x, y01):
            a, b = _sigmoid_calibration(x[tr], y01[tr])
            q[te] = expit(-(a * x[te] + b))
        out[key] = (q - y01) ** 2
    return out


@pytest.mark.parametrize(
    ("seed", "kernel", "min_pick", "one_se_pick"),
    [
        (0, "linear", "votes", "scores"),  # votes lower, by less than one SE
        (2, "rbf", "votes", "votes"),  # votes lower by more than one SE
    ],
)
def test_one_se_rule_against_sklearn_platt_losses(
    seed: int, kernel: str, min_pick: str, one_se_pick: str
) -> None:
    X, y = make_classification(
        n_samples=120,
        n_features=5,
        n_informative=3,
        flip_y=0.1,
        class_sep=0.8,
        random_state=seed,
    )
    kw = dict(
        C_grid=[0.5, 2.0],
        n_bootstrap=20,
        kernel=kernel,
        random_state=seed,
        calibration="sigmoid",
        calibration_input="auto",
    )
    lowest = BootstrapProbabilitySVC(**kw).fit(X, y)
    one_se = BootstrapProbabilitySVC(calibration_rule="one_se", **kw).fit(X, y)
    ref = _cv_sigmoid_losses(lowest, y)
    for key, loss in ref.items():
        assert one_se.calibration_scores_[key] == pytest.approx(loss.mean(), abs=1e-6)
    d = ref["sigmoid"] - ref["sigmoid:scores"]
    se = d.std(ddof=1) / np.sqrt(d.size)
    # the oracle's rule: votes only when more than one SE below the reference
    assert (d.mean() < -se) == (one_se_pick == "votes")
    assert (d.mean() < 0) == (min_pick == "votes")
    assert lowest.calibration_input_ == min_pick
    assert one_se.calibration_input_ == one_se_pick
    assert one_se.calibration_ == "sigmoid"
    np.testing.assert_array_equal(one_se.counts_, lowest.counts_)


def test_one_se_rule_keeps_the_reference_on_scores_with_auto_auto(
    score_models: dict, data: tuple
) -> None:
    X, y, Xt, _ = data
    ref = score_models["auto", "auto"]
    m = BootstrapProbabilitySVC(
        C_grid=[0.5, 2.0],
        n_bootstrap=30,
        kernel="rbf",
        random_state=4,
        calibration="auto",
        calibration_input="auto",
        calibration_rule="one_se",
    ).fit(X, y)
    assert m.calibration_scores_ == ref.calibration_scores_
    if (m.calibration_, m.calibration_input_) != ("sigmoid", "scores"):
        # left the reference: the pick is the argmin and clearly below it
        assert m.calibration_ == ref.calibration_
        assert m.calibration_input_ == ref.calibration_input_


def test_calibration_rule_is_validated(data: tuple) -> None:
    X, y, _, _ = data
    with pytest.raises(ValueError, match="calibration_rule"):
        BootstrapProbabilitySVC(n_bootstrap=2, calibration_rule="argmin").fit(X, y)


# ------------------------------------------------------------- blend with Platt
@pytest.fixture(scope="module")
def blend_models(data: tuple) -> dict:
    X, y, _, _ = data
    kw = dict(
        C_grid=[0.5, 2.0],
        n_bootstrap=20,
        kernel="rbf",
        random_state=4,
        calibration="sigmoid",
        calibration_input="scores",
        tol=1e-10,
    )
    out = {"ensemble": BootstrapProbabilitySVC(**kw).fit(X, y)}
    for w in ("oob", 0.0, 1.0):
        out[w] = BootstrapProbabilitySVC(blend_platt=w, **kw).fit(X, y)
    return out


@pytest.mark.slow
def test_blend_platt_is_sklearn_platt_blended_with_the_calibrated_ensemble(
    blend_models: dict, data: tuple
) -> None:
    from scipy.special import expit
    from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    X, y, Xt, _ = data
    ens, m = blend_models["ensemble"], blend_models["oob"]
    # the ensemble and its out-of-bag calibration are untouched by the blend
    np.testing.assert_array_equal(m.counts_, ens.counts_)
    np.testing.assert_allclose(m.oob_calibrated_proba_, ens.oob_calibrated_proba_)
    # oracle: scikit-learn's Platt (libsvm SVC at the best C and gamma_, sigmoid on
    # out-of-fold decision values over the same shuffled stratified folds, refit)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=4)
    svc = SVC(C=m.best_C_, kernel="rbf", gamma=m.gamma_, tol=1e-10)
    ref = CalibratedClassifierCV(svc, method="sigmoid", cv=cv, ensemble=False)
    p_platt = ref.fit(X, y).predict_proba(Xt)[:, 1]
    np.testing.assert_allclose(m.platt_.predict_proba(Xt)[:, 1], p_platt, atol=1e-6)
    # the weight: the grid point with the lowest Brier score of the blended
    # held-out training probabilities (Platt's out-of-fold, the ensemble's out-of-bag)
    y01 = (y == m.classes_[1]).astype(float)
    oof = cross_val_predict(svc, X, y, cv=cv, method="decision_function")
    a, b = _sigmoid_calibration(oof, y01)
    p_tr = expit(-(a * oof + b))
    q_tr = ens.oob_calibrated_proba_
    ok = np.isfinite(q_tr)
    grid = np.linspace(0.0, 1.0, 21)
    brier = np.array(
        [np.mean((w * p_tr[ok] + (1 - w) * q_tr[ok] - y01[ok]) ** 2) for w in grid]
    )
    np.testing.assert_allclose(m.blend_scores_, brier, atol=1e-6)
    w = m.blend_weight_
    assert w in grid and brier[grid == w][0] <= brier.min() + 1e-6
    q_te = ens.predict_proba(Xt)[:, 1]
    np.testing.assert_allclose(
        m.predict_proba(Xt)[:, 1], w * p_platt + (1 - w) * q_te, atol=1e-6
    )


@pytest.mark.slow
def test_blend_platt_fixed_weights_and_intervals(
    blend_models: dict, data: tuple
) -> None:
    _, _, Xt, _ = data
    ens = blend_models["ensemble"]
    zero, one = blend_models[0.0], blend_models[1.0]
    assert zero.blend_weight_ == 0.0 and one.blend_weight_ == 1.0
    np.testing.assert_allclose(zero.predict_proba(Xt), ens.predict_proba(Xt))
    np.testing.assert_allclose(one.predict_proba(Xt), one.platt_.predict_proba(Xt))
    m = blend_models["oob"]
    p = m.predict_proba(Xt)
    assert ((p >= 0) & (p <= 1)).all() and np.allclose(p.sum(1), 1.0)
    np.testing.assert_array_equal(m.predict(Xt), m.classes_[np.argmax(p, 1)])
    lo, hi = m.predict_proba_interval(Xt, level=0.9)
    assert ((lo <= p[:, 1] + 1e-12) & (p[:, 1] <= hi + 1e-12)).all()
    # Platt's part is a point: the interval is the ensemble's, shrunk by 1 - w
    lo0, hi0 = ens.predict_proba_interval(Xt, level=0.9)
    np.testing.assert_allclose(hi - lo, (1 - m.blend_weight_) * (hi0 - lo0), atol=1e-12)
    assert ens.platt_ is None and ens.blend_weight_ == 0.0


def test_blend_platt_is_not_defined_with_a_tpr_target(data: tuple) -> None:
    X, y, _, _ = data
    m = BootstrapProbabilitySVC(
        C_grid=[1.0], n_bootstrap=5, blend_platt=0.5, target_tpr=0.9, random_state=0
    )
    with pytest.raises(ValueError, match="blend_platt"):
        m.fit(X, y)
