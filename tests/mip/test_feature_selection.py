"""Tests of the SPEC S6 formulations against brute force, linprog and scikit-learn."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.svm import SVC

from torchsvm.exceptions import InfeasibleProblemError
from torchsvm.mip.feature_selection import (
    build_cardinality_miqp,
    build_selection_milp,
    kernel_upper_bounds,
    selection_start,
    solve_cardinality_svm,
    solve_feature_selection,
    solve_sparse_linear_svm,
)
from torchsvm.mip.model import MipConfig, check_feasible
from torchsvm.problems.csvm import FloorCappedWarning
from torchsvm.problems.selection import SelectionProblem, rate_floor

CFG = MipConfig(time_limit=30.0, mip_rel_gap=0.0)


def _toy(seed: int, n: int = 12, d: int = 4, noise: float = 0.6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:2] = rng.normal(size=2)
    y = np.where(X @ w + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    if (y > 0).all() or (y < 0).all():
        y[:2] = [1.0, -1.0]
    return X, y


def _subset_feasible(X, y, S, need_pos, need_neg, M):
    """Oracle: does some w on S (|w| <= M), b and 0/1 z meet the floors? (enumerate z).

    Feasibility is monotone in z, so only z with exactly ``need`` ones per class are
    tried; each is an LP feasibility problem solved by scipy's linprog.
    """
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    s = len(S)
    for zp in itertools.combinations(pos, need_pos):
        for zn in itertools.combinations(neg, need_neg):
            z = np.zeros(len(y))
            z[list(zp) + list(zn)] = 1
            # -(y_i x_iS w + y_i b) <= -(1 - M (1 - z_i))
            A = -np.hstack([y[:, None] * X[:, S], y[:, None]])
            rhs = -(1.0 - M * (1.0 - z))
            res = linprog(
                np.zeros(s + 1),
                A_ub=A,
                b_ub=rhs,
                bounds=[(-M, M)] * s + [(None, None)],
                method="highs",
            )
            if res.status == 0:
                return True
    return False


def _brute_force_cost(X, y, p_pos, p_neg, costs, M):
    d = X.shape[1]
    need_pos = math.ceil(p_pos * (y > 0).sum() - 1e-9)
    need_neg = math.ceil(p_neg * (y < 0).sum() - 1e-9)
    subsets = [S for r in range(d + 1) for S in itertools.combinations(range(d), r)]
    subsets.sort(key=lambda S: costs[list(S)].sum())
    for S in subsets:
        if _subset_feasible(X, y, list(S), need_pos, need_neg, M):
            return float(costs[list(S)].sum())
    return math.inf


@pytest.mark.parametrize(
    ("seed", "p", "costs"),
    [
        (0, 0.9, None),
        (1, 1.0, None),
        (2, 0.8, np.array([3.0, 1.0, 2.0, 0.5])),
        (3, 0.85, np.array([1.0, 4.0, 1.0, 1.0])),
    ],
)
def test_selection_milp_matches_brute_force(seed, p, costs):
    X, y = _toy(seed, n=10, d=4)
    c = np.ones(4) if costs is None else costs
    expected = _brute_force_cost(X, y, p, p, c, 100.0)
    if math.isinf(expected):
        with pytest.raises(InfeasibleProblemError):
            solve_feature_selection(X, y, p, p, feature_costs=costs, config=CFG)
        return
    res = solve_feature_selection(X, y, p, p, feature_costs=costs, config=CFG)
    assert res.cost == pytest.approx(expected, abs=1e-6)
    # the returned classifier meets the floors with the selected features only
    m = y * (X @ res.w + res.b)
    assert np.all(m[res.z] >= 1 - 1e-6)
    assert res.z[y > 0].sum() >= p * (y > 0).sum() - 1e-9
    assert res.z[y < 0].sum() >= p * (y < 0).sum() - 1e-9
    assert np.all(res.w[~res.support] == 0)


@pytest.mark.slow  # 64 subsets brute force
def test_selection_milp_brute_force_d6():
    X, y = _toy(7, n=8, d=6, noise=0.3)
    expected = _brute_force_cost(X, y, 1.0, 0.75, np.ones(6), 100.0)
    res = solve_feature_selection(X, y, 1.0, 0.75, config=CFG)
    assert res.cost == pytest.approx(expected)


def test_infeasible_floors_name_the_floors():
    # XOR: no linear classifier gets all four points right
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    with pytest.raises(InfeasibleProblemError, match=r"TPR floor .* TNR floor"):
        solve_feature_selection(X, y, 1.0, 1.0, config=CFG)
    # a floor on one class alone is always feasible (shift b), with no feature
    res = solve_feature_selection(X, y, 1.0, 0.0, config=CFG)
    assert res.cost == 0


def test_hoeffding_floor_above_one_is_capped():
    X, y = _toy(0)
    assert rate_floor(0.9, 100, None) == 0.9
    assert rate_floor(0.9, 100, 0.05) == pytest.approx(
        0.9 + math.sqrt(-math.log(0.05) / 200)
    )
    n_pos = int((y > 0).sum())
    assert rate_floor(0.9, n_pos, 0.05) > 1
    with pytest.warns(FloorCappedWarning, match="TPR sample floor .* capped at 1"):
        p = SelectionProblem.from_data(X, y, 0.9, 0.5, hoeffding_alpha=0.05)
    assert p.tpr_floor == 1.0
    assert p.need_pos == n_pos


def test_warm_start_is_feasible_for_highs():
    X, y = _toy(4, n=30, d=5, noise=0.2)
    clf = SVC(kernel="linear", C=10.0).fit(X, y)
    p = 0.8
    start = selection_start(X, y, clf.coef_[0], clf.intercept_[0], p, p)
    assert start is not None
    model = build_selection_milp(X, y, p, p)
    ok, reason = check_feasible(model, start)
    assert ok, reason
    res = solve_feature_selection(
        X, y, p, p, config=CFG, warm_start=(clf.coef_[0], clf.intercept_[0])
    )
    assert res.result.start_feasible is True
    assert res.cost <= 5


def test_sparse_linear_svm_matches_sklearn_when_all_rows_soft():
    # z = 0 everywhere and a slack cap that never binds: (P2) is the plain SVM on S
    X, y = _toy(5, n=40, d=4)
    S = np.array([True, False, True, True])
    w, b, res = solve_sparse_linear_svm(X, y, S, np.zeros(40, bool), C=0.7)
    ref = SVC(kernel="linear", C=0.7, tol=1e-10).fit(X[:, S], y)
    np.testing.assert_allclose(w[S], ref.coef_[0], atol=1e-4)
    assert w[1] == 0
    np.testing.assert_allclose(
        X[:, S] @ w[S] + b, ref.decision_function(X[:, S]), atol=1e-3
    )


def test_sparse_linear_svm_keeps_z_rows_at_margin():
    X, y = _toy(6, n=20, d=4, noise=0.2)
    sel = solve_feature_selection(X, y, 0.9, 0.9, config=CFG)
    w, b, _ = solve_sparse_linear_svm(X, y, sel.support, sel.z, C=1.0)
    m = y * (X @ w + b)
    assert np.all(m[sel.z] >= 1 - 1e-6)
    assert np.all(w[~sel.support] == 0)


def test_kernel_upper_bounds():
    u = kernel_upper_bounds(np.array([True, False]), C=2.0, big_m=100.0)
    np.testing.assert_allclose(u, [100.0, 2.0])


def _svm_objective(X, y, C, v=None, tol=1e-10):
    v = np.ones(len(y)) if v is None else v
    clf = SVC(kernel="linear", C=C, tol=tol).fit(X, y, sample_weight=v)
    w = clf.coef_[0]
    xi = np.maximum(0, 1 - y * clf.decision_function(X))
    return 0.5 * w @ w + C * v @ xi


@pytest.mark.parametrize("k", [1, 2])
def test_cardinality_svm_matches_brute_force(k):
    X, y = _toy(8, n=24, d=4, noise=0.8)
    best = min(
        _svm_objective(X[:, list(S)], y, 1.0)
        for S in itertools.combinations(range(4), k)
    )
    clf = SVC(kernel="linear", C=1.0).fit(X, y)
    res = solve_cardinality_svm(
        X,
        y,
        k,
        C=1.0,
        config=MipConfig(time_limit=30.0, mip_rel_gap=1e-6),
        warm_start=(clf.coef_[0], clf.intercept_[0]),
    )
    assert res.support.sum() <= k
    assert res.result.objective == pytest.approx(best, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize(
    ("k", "big_m", "weighted"),
    [
        (0, 100.0, False),
        (1, 100.0, True),
        (2, 0.3, False),
        (3, 100.0, True),
        (5, 0.3, True),
    ],
)
def test_cardinality_svm_enumeration_matches_miqp_and_brute_force(k, big_m, weighted):
    """The subset enumeration proves the MIQP's optimum: scikit-learn / HiGHS as oracles.

    ``big_m = 0.3`` makes ``|w_k| <= M`` bind (the unbounded SVM has larger weights),
    so the oracle there is the MIQP by outer approximation, not libsvm; ``k = 5`` is
    every feature (one subset).
    """
    X, y = _toy(11, n=30, d=5, noise=0.8)
    v = np.random.default_rng(3).uniform(0.5, 2.0, size=30) if weighted else None
    kw = dict(C=0.7, big_m=big_m, sample_weight=v)
    cfg = MipConfig(time_limit=60.0, mip_rel_gap=1e-6)
    enum = solve_cardinality_svm(X, y, k, config=cfg, method="enumerate", **kw)
    miqp = solve_cardinality_svm(X, y, k, config=cfg, method="miqp", **kw)
    auto = solve_cardinality_svm(X, y, k, config=cfg, **kw)
    assert enum.result.status.value == "optimal" and enum.result.mip_gap == 0.0
    assert "subsets solved" in auto.result.message  # few subsets: enumerated
    assert enum.support.sum() <= min(k, 5)
    assert enum.result.objective == pytest.approx(
        miqp.result.objective, rel=1e-5, abs=1e-7
    )
    assert auto.result.objective == pytest.approx(enum.result.objective, rel=1e-9)
    model = build_cardinality_miqp(X, y, k, C=0.7, big_m=big_m, sample_weight=v)
    assert check_feasible(model, enum.result.x, tol=1e-6)[0]
    if big_m == 100.0 and k > 0:
        # |w_k| <= 100 does not bind: libsvm on every subset is the oracle
        best = min(
            _svm_objective(X[:, list(S)], y, 0.7, v)
            for S in itertools.combinations(range(5), min(k, 5))
        )
        assert enum.result.objective == pytest.approx(best, rel=1e-4, abs=1e-6)


def test_cardinality_svm_enumeration_stopped_by_the_time_limit_warns() -> None:
    from torchsvm.exceptions import SolverTimeLimitWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 60))
    y = np.where(X[:, 0] + rng.normal(size=40) > 0, 1.0, -1.0)
    cfg = MipConfig(time_limit=0.5, mip_rel_gap=1e-6)
    with pytest.warns(SolverTimeLimitWarning, match="unproven"):
        res = solve_cardinality_svm(X, y, 2, config=cfg, method="enumerate")  # 1770
    assert res.result.status.value == "time_limit"
    assert math.isinf(res.result.mip_gap)
    assert 0 < res.result.n_iter < 1770
    model = build_cardinality_miqp(X, y, 2, C=1.0)
    assert check_feasible(model, res.result.x, tol=1e-6)[0]


def test_cardinality_svm_screen_gives_way_to_the_miqp_when_it_cannot_list(
    monkeypatch,
) -> None:
    from torchsvm.mip import feature_selection as fsm

    X, y = _toy(5, n=24, d=6, noise=0.8)
    cfg = MipConfig(time_limit=60.0, mip_rel_gap=1e-6)
    ref = solve_cardinality_svm(X, y, 3, C=1.0, config=cfg, method="enumerate")
    monkeypatch.setattr(fsm, "CARDINALITY_SCREEN_MIN", 10)  # C(6, 3) = 20 subsets
    screened = solve_cardinality_svm(X, y, 3, C=1.0, config=cfg)
    assert "settled" in screened.result.message
    assert screened.result.objective == pytest.approx(ref.result.objective, rel=1e-9)
    # a screen that may list no subset and runs out of its share proves nothing:
    # the MIQP takes over
    monkeypatch.setattr(fsm, "_SCREEN_CAP", 0)
    solved_all = solve_cardinality_svm(X, y, 3, C=1.0, config=cfg)  # until all solved
    assert solved_all.result.status.value == "optimal"
    assert solved_all.result.n_iter == 20
    assert solved_all.result.objective == pytest.approx(ref.result.objective, rel=1e-9)
    monkeypatch.setattr(fsm, "_ENUM_SHARE", 1e-4)
    res = solve_cardinality_svm(X, y, 3, C=1.0, config=cfg)
    assert "settled" not in res.result.message
    assert "subsets solved" not in res.result.message
    assert res.result.objective == pytest.approx(ref.result.objective, rel=1e-5)
    with pytest.raises(ValueError, match="method must be"):
        solve_cardinality_svm(X, y, 3, method="brute")


@pytest.mark.parametrize(
    ("k", "big_m", "weighted", "seed"),
    [
        (1, 100.0, False, 0),
        (2, 100.0, True, 1),
        (2, 0.3, False, 2),
        (3, 100.0, False, 3),
        (3, 0.3, True, 4),
        (4, 100.0, True, 5),
    ],
)
def test_cardinality_dual_screen_matches_enumeration_and_cvxpy(
    k, big_m, weighted, seed
) -> None:
    """The dual screen's optimum is the enumeration's, with fewer subset QPs.

    Oracles: every subset's QP by HiGHS (``method="enumerate"``), and every subset's
    QP by cvxpy's conic solver (``|w| <= M`` binds at ``M = 0.3``).
    """
    cp = pytest.importorskip("cvxpy")
    X, y = _toy(seed, n=36, d=9, noise=0.8)
    v = np.random.default_rng(seed).uniform(0.3, 3.0, size=36) if weighted else None
    kw = dict(C=0.7, big_m=big_m, sample_weight=v)
    cfg = MipConfig(time_limit=60.0, mip_rel_gap=1e-6)
    enum = solve_cardinality_svm(X, y, k, config=cfg, method="enumerate", **kw)
    screen = solve_cardinality_svm(X, y, k, config=cfg, method="screen", **kw)
    n_subsets = math.comb(9, k)
    assert "settled" in screen.result.message
    assert screen.result.status.value == "optimal" and screen.result.mip_gap == 0.0
    assert screen.result.objective == pytest.approx(enum.result.objective, rel=1e-9)
    assert screen.result.n_iter < n_subsets == enum.result.n_iter
    model = build_cardinality_miqp(X, y, k, C=0.7, big_m=big_m, sample_weight=v)
    assert check_feasible(model, screen.result.x, tol=1e-6)[0]
    assert screen.support.sum() <= k
    cv = np.ones(36) if v is None else v

    def subset_qp(S: tuple[int, ...]) -> float:
        w, b, xi = cp.Variable(k), cp.Variable(), cp.Variable(36)
        cons = [
            cp.multiply(y, X[:, list(S)] @ w + b) >= 1 - xi,
            xi >= 0,
            cp.abs(w) <= big_m,
        ]
        obj = 0.5 * cp.sum_squares(w) + 0.7 * cv @ xi
        return cp.Problem(cp.Minimize(obj), cons).solve()

    best = min(subset_qp(S) for S in itertools.combinations(range(9), k))
    assert screen.result.objective == pytest.approx(best, rel=1e-5, abs=1e-6)


def test_subsets_above_lists_exactly_the_subsets_over_the_threshold() -> None:
    from torchsvm.mip.feature_selection import _subsets_above

    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(1, 11))
        k = int(rng.integers(0, min(d, 5) + 1))
        h = np.sort(rng.normal(size=d))[::-1].copy()
        if rng.random() < 0.3:
            h = np.round(h * 8) / 8  # ties at the threshold, exact in binary
        tau = float(np.round(rng.normal() * 12) / 8)
        want = {
            S for S in itertools.combinations(range(d), k) if h[list(S)].sum() > tau
        }
        got = _subsets_above(h, tau, k, 10**6)
        assert got is not None and got.shape == (len(want), k)
        assert set(map(tuple, got.tolist())) == want
        if len(want) > 1:
            assert _subsets_above(h, tau, k, len(want) - 1) is None


@pytest.mark.parametrize("big_m", [100.0, 0.4])
def test_cardinality_screen_bound_never_exceeds_the_subset_optimum(big_m) -> None:
    """Weak duality, with the scaled dual point: every bound is below the subset's QP
    optimum (cvxpy), for dual points balanced or not, large or small."""
    cp = pytest.importorskip("cvxpy")
    from torchsvm.mip.feature_selection import _huber_conjugate, _screen_bound

    X, y = _toy(7, n=30, d=6, noise=0.8)
    C = 1.5
    v = np.random.default_rng(1).uniform(0.5, 2.0, size=30)
    k = 2
    subsets = np.array(list(itertools.combinations(range(6), k)))

    def subset_qp(S) -> float:
        w, b, xi = cp.Variable(k), cp.Variable(), cp.Variable(30)
        cons = [
            cp.multiply(y, X[:, list(S)] @ w + b) >= 1 - xi,
            xi >= 0,
            cp.abs(w) <= big_m,
        ]
        obj = 0.5 * cp.sum_squares(w) + C * (v @ xi)
        return cp.Problem(cp.Minimize(obj), cons).solve()

    opt = np.array([subset_qp(S) for S in subsets])
    b_max = 1.0 + big_m * k * np.abs(X).max()
    rng = np.random.default_rng(2)
    tight = 0
    for scale in (1.0, 0.3, 0.05):
        for _ in range(20):
            alpha = rng.uniform(0.0, 1.0, size=30) * C * v * scale
            s = (y[:, None] * X).T @ alpha
            base = alpha.sum() - abs(alpha @ y) * b_max
            lb = _screen_bound(base, _huber_conjugate(s, big_m), 0.5 * s * s, subsets)
            assert np.all(lb <= opt + 1e-6 * np.maximum(1.0, opt))
            # balanced: the bound is useful (positive) on some subsets
            pos = y > 0
            alpha[pos] *= alpha[~pos].sum() / alpha[pos].sum()
            s = (y[:, None] * X).T @ alpha
            lb = _screen_bound(
                alpha.sum(), _huber_conjugate(s, big_m), 0.5 * s * s, subsets
            )
            assert np.all(lb <= opt + 1e-6 * np.maximum(1.0, opt))
            tight += int(np.any(lb > 0.5 * opt))
    assert tight > 0


def test_cardinality_huber_conjugate_is_the_box_constrained_maximum() -> None:
    from torchsvm.mip.feature_selection import _huber_conjugate

    s = np.linspace(-3.0, 3.0, 61)
    w = np.linspace(-0.7, 0.7, 14001)[:, None]  # |w| <= M = 0.7
    brute = (w * s - 0.5 * w * w).max(axis=0)
    np.testing.assert_allclose(_huber_conjugate(s, 0.7), brute, atol=1e-7)


def test_cardinality_subset_qp_survives_highs_stalling() -> None:
    # HiGHS's regularised QP cycled to its time limit on every one of these
    # single-feature QPs (|w| <= 0.3 binds); the capped retry solves each at once
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 12))
    y = np.where(X[:, 0] - X[:, 3] + 0.8 * rng.normal(size=40) > 0, 1.0, -1.0)
    cfg = MipConfig(time_limit=30.0, mip_rel_gap=1e-6)
    # (before the retry, the first QP took the whole time limit: "no subset solved")
    res = solve_cardinality_svm(
        X, y, 1, C=0.7, big_m=0.3, config=cfg, method="enumerate"
    )
    assert res.result.status.value == "optimal"
    miqp = solve_cardinality_svm(X, y, 1, C=0.7, big_m=0.3, config=cfg, method="miqp")
    assert res.result.objective == pytest.approx(miqp.result.objective, rel=1e-5)


@pytest.mark.parametrize("with_z", [False, True])
def test_sparse_linear_svm_dual_path_matches_primal_qp(with_z: bool) -> None:
    """More features than rows: (P2) goes through the SVM dual; HiGHS's primal QP agrees."""
    from torchsvm.mip import feature_selection as fsm

    rng = np.random.default_rng(11)
    X = rng.normal(size=(24, 60))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=24) > 0, 1.0, -1.0)
    S = np.ones(60, bool)
    S[::7] = False
    z = np.zeros(24, bool)
    if with_z:
        z[np.argsort(-(y * X[:, 0]))[:5]] = True  # rows easily kept at margin 1
    w, b, res = solve_sparse_linear_svm(X, y, S, z, C=0.8)
    assert "dual" in res.message
    v = np.ones(24)
    fast = fsm._p2_by_dual(X[:, S], y, v, z, 0.8, 100.0)
    assert fast is not None
    # oracle: the primal (P2) solved by cvxpy's conic solver
    cp = pytest.importorskip("cvxpy")
    Xs = X[:, S]
    wv, bv, xi = cp.Variable(Xs.shape[1]), cp.Variable(), cp.Variable(24)
    cons = [cp.multiply(y, Xs @ wv + bv) >= 1 - xi, xi >= 0, xi <= 100.0 * (~z)]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(wv) + 0.8 * cp.sum(xi)), cons)
    prob.solve()
    np.testing.assert_allclose(res.objective, prob.value, rtol=1e-5)
    np.testing.assert_allclose(
        w[S], wv.value, atol=1e-3 * max(1.0, np.abs(wv.value).max())
    )
    assert np.all(w[~S] == 0)
    m = y * (X @ w + b)
    assert np.all(m[z] >= 1 - 1e-6)


def _wide(n: int = 40, d: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """n << d, as leukemia_golub (71 x 7129): two informative features."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _peak_mb(fn: Callable[[], object]) -> float:
    import tracemalloc
    import warnings

    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_feature_selection_memory_is_bounded_when_n_much_less_than_d() -> None:
    # Regression (leukemia_golub fold 0 OOM-killed at 17.8 GB): the backward path held
    # one fitted direction per candidate subset, (4, d * 3, d), and the full MILP's
    # single-feature masks kept d eye matrices alive. A d x d float64 is 191 MB here;
    # what remains is one batch of stacked subset rows, at most 2000 x d (80 MB).
    X, y = _wide()
    peak = _peak_mb(
        lambda: solve_feature_selection(
            X, y, 0.8, 0.8, None, config=MipConfig(time_limit=4.0)
        )
    )
    assert peak < 180.0, peak


def test_cardinality_svm_memory_is_bounded_when_n_much_less_than_d() -> None:
    # the dense interior point and the eigen-factor of Q held several (2d, 2d) and
    # (d, d) matrices; large QPs now go to HiGHS and Q = I is factored sparsely
    X, y = _wide()
    clf = SVC(kernel="linear", C=1.0).fit(X, y)
    out: list[object] = []
    peak = _peak_mb(
        lambda: out.append(
            solve_cardinality_svm(
                X,
                y,
                3,
                C=1.0,
                config=MipConfig(time_limit=3.0),
                warm_start=(clf.coef_[0], clf.intercept_[0]),
            )
        )
    )
    assert peak < 100.0, peak
    res = out[0]
    assert res.support.sum() <= 3
    # the incumbent is a feasible point of the MIQP
    model = build_cardinality_miqp(X, y, 3, C=1.0)
    assert check_feasible(model, res.result.x, tol=1e-6)[0]


def test_first_use_compilation_is_not_charged_to_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a fresh installation compiles the active-set kernel on first use (tens of
    # seconds); solve_feature_selection warms it before its clock starts, so the
    # search keeps its whole budget. A slow warm-up stands in for the compilation.
    import time

    import torchsvm.mip.feature_selection as fs

    monkeypatch.setattr(fs, "_warm_kernels", lambda: time.sleep(1.5))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    t0 = time.perf_counter()
    res = fs.solve_feature_selection(X, y, 0.6, 0.6, None, config=MipConfig(10.0))
    assert time.perf_counter() - t0 >= 1.5
    assert res.result.status.value == "optimal"
    assert res.result.runtime < time.perf_counter() - t0 - 1.4
