"""DEA efficiency and feature selection (SPEC S7) against linprog and brute force."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.dea.oracles import (
    aggregate,
    all_efficiencies,
    brute_force,
    linprog_efficiency,
)
from torchsvm import dea
from torchsvm.data.dea_data import make_synthetic_frontier
from torchsvm.exceptions import (
    DataError,
    InfeasibleProblemError,
    SolverTimeLimitWarning,
)
from torchsvm.mip.dea import (
    build_selection_model,
    nondominated_dmus,
    solve_efficiencies,
)
from torchsvm.problems.dea import DeaSelectionProblem
from torchsvm.types import SolveStatus

# Counterexample 1 (v(p) not concave).  Found by a seeded search over 400 random
# instances (K=5, N=1, M=4, integer data in [1, 9] x [0, 9], numpy default_rng(seed))
# with brute-force v(p): seed 7 is the first whose marginal gains increase
# (v = 0.657, 0.903, 0.946, 1.000: gain 0.054 at p=4 > 0.043 at p=3).  The thesis'
# own counterexample data is not available; this instance plays its role.
NONCONCAVE_X = np.array([[9], [6], [7], [9], [6]], dtype=float)
NONCONCAVE_Y = np.array(
    [[7, 8, 2, 0], [3, 2, 8, 9], [0, 4, 8, 1], [7, 1, 4, 8], [3, 3, 2, 7]], dtype=float
)
# Counterexample 2 (greedy nested selection not optimal).  Same search, seed 0: greedy
# (Pastor et al. 2002) picks {1} then {1, 3} (mean 0.7264) while {.,.} optimum is 0.7475.
GREEDY_X = np.array([[8], [6], [5], [3], [3]], dtype=float)
GREEDY_Y = np.array(
    [[0, 0, 0, 1], [8, 6, 9, 5], [6, 9, 7, 6], [5, 5, 9, 2], [8, 6, 0, 3]], dtype=float
)


def _data(seed: int, K: int = 10, N: int = 1, M: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, (K, N))
    Y = rng.uniform(0.0, 1.0, (K, M))
    Y[rng.random((K, M)) < 0.1] = 0.0  # some zero outputs exercise the big-M rules
    return X, Y


# ----------------------------------------------------------------------- efficiency


@pytest.mark.parametrize("method", ["envelopment", "multiplier"])
def test_efficiency_matches_linprog(method, seed):
    X, Y = _data(seed, K=25, N=2, M=3)
    eff = dea.efficiency(X, Y, method=method)
    np.testing.assert_allclose(eff, all_efficiencies(X, Y), atol=1e-7)


def test_multiplier_subset_bounds_and_zero_inputs_match_linprog(seed):
    # the persistent multiplier LP changes row (3), the costs and the bounds (5) per
    # DMU: zero inputs (entries absent from the first DMU's row) and weight bounds
    X, Y = _data(seed, K=20, N=2, M=3)
    X[[0, 5], 1] = 0.0
    dmus = [0, 5, 9, 2]
    eff = dea.efficiency(X, Y, dmus=dmus, method="multiplier")
    np.testing.assert_allclose(
        eff, [linprog_efficiency(X, Y, k) for k in dmus], atol=1e-7
    )
    L, U = np.full(3, 0.05), np.full(3, 0.5)
    eff = dea.efficiency(X, Y, method="multiplier", weight_bounds=(L, U))
    np.testing.assert_allclose(eff, all_efficiencies(X, Y, lower=L, upper=U), atol=1e-7)


@pytest.mark.slow
def test_multiplier_finishes_the_scale_unit():
    # Issue 16: the scale unit (K = 1000, M = 100) failed with "efficiency LP not
    # solved: time_limit" in the multiplier engine, which stacked ~40 DMUs' blocks
    # into each LP (~175 s on an idle 2-core machine).  One persistent multiplier
    # LP re-solved per DMU takes a few times the envelopment time.
    X, Y = make_synthetic_frontier(1000, 1, 100, seed=0)
    env = dea.efficiency(X, Y, method="envelopment", time_limit=150.0)
    mult = dea.efficiency(X, Y, method="multiplier", time_limit=150.0)
    np.testing.assert_allclose(mult, env, atol=1e-7)


def test_column_generation_matches_linprog(seed):
    # many DMUs, few efficient: the envelopment LP must generate frontier columns
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, (120, 2))
    Y = X.sum(1, keepdims=True) * rng.uniform(0.2, 1.0, (120, 4))
    batch = solve_efficiencies(X, Y, np.arange(120), np.arange(120))
    np.testing.assert_allclose(batch.efficiencies, all_efficiencies(X, Y), atol=1e-7)
    assert batch.n_columns < 120


def test_envelopment_weights_and_lambdas_are_optimal(seed):
    X, Y = _data(seed, K=30, N=2, M=3)
    b = solve_efficiencies(X, Y, np.arange(30), np.arange(30), lambdas=True)
    # multiplier feasibility and value (duality), envelopment feasibility and value
    np.testing.assert_allclose((b.alpha * X).sum(1), 1.0, atol=1e-8)
    assert np.all(Y @ b.beta.T - X @ b.alpha.T <= 1e-8)
    np.testing.assert_allclose((b.beta * Y).sum(1), b.efficiencies, atol=1e-8)
    assert b.lambdas is not None
    assert np.all(b.lambdas @ X <= b.efficiencies[:, None] * X + 1e-8)
    assert np.all(b.lambdas @ Y >= Y - 1e-8)


def test_efficiency_subset_and_weights_match_linprog(seed):
    X, Y = _data(seed, K=15, N=2, M=3)
    eff, alpha, beta = dea.efficiency(X, Y, dmus=[3, 7], return_weights=True)
    np.testing.assert_allclose(eff, [linprog_efficiency(X, Y, k) for k in (3, 7)])
    np.testing.assert_allclose((alpha * X[[3, 7]]).sum(1), 1.0, atol=1e-8)
    assert np.all(Y @ beta.T - X @ alpha.T <= 1e-7)


def test_efficiency_weight_bounds_match_linprog(seed):
    X, Y = _data(seed, K=12, N=1, M=3)
    L, U = np.full(3, 0.05), np.full(3, 0.5)
    eff = dea.efficiency(X, Y, weight_bounds=(L, U))
    ref = all_efficiencies(X, Y, lower=L, upper=U)
    np.testing.assert_allclose(eff, ref, atol=1e-7)


@settings(max_examples=20, deadline=None)
@given(
    st.integers(2, 12),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(0, 2**31 - 1),
)
def test_efficiency_invariants(K, N, M, s):
    rng = np.random.default_rng(s)
    X = rng.uniform(0.5, 2.0, (K, N))
    Y = rng.uniform(0.0, 1.0, (K, M))
    eff = dea.efficiency(X, Y)
    assert np.all(eff <= 1 + 1e-9) and np.all(eff >= 0)
    assert eff.max() == pytest.approx(1.0, abs=1e-9)
    # CRS: scaling an output column or all inputs leaves E unchanged
    np.testing.assert_allclose(dea.efficiency(3.0 * X, Y * 2.0), eff, atol=1e-7)


def test_nondominated_rows_are_exact(seed):
    X, Y = _data(seed, K=30, N=1, M=2)
    keep = nondominated_dmus(X, Y)
    assert len(keep) < 30
    np.testing.assert_allclose(dea.efficiency(X, Y), all_efficiencies(X, Y), atol=1e-7)


# ----------------------------------------------------------------------- selection


@pytest.mark.parametrize(
    ("objective", "kw"),
    [
        ("mean", {}),
        ("min", {}),
        ("percentile", {"percentile": 70}),
        ("quadratic", {}),
    ],
)
@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("method", ["auto", "big_m"])
def test_joint_selection_matches_brute_force(objective, kw, p, method, seed):
    X, Y = _data(seed, K=10, M=6)
    res = dea.select_features(
        X, Y, n_outputs=p, objective=objective, method=method, **kw
    )
    assert res.status == SolveStatus.optimal
    best = brute_force(X, Y, p, objective, **kw)
    assert res.objective == pytest.approx(best, abs=1e-6)
    eff = all_efficiencies(X, Y[:, res.selected_outputs])
    np.testing.assert_allclose(res.efficiencies, eff, atol=1e-7)
    assert len(res.selected_outputs) == p


def test_weighted_selection_matches_brute_force(seed):
    X, Y = _data(seed, K=10, M=5)
    w = X[:, 0]
    res = dea.select_features(X, Y, n_outputs=2, objective="weighted", weights=w)
    assert res.objective == pytest.approx(
        brute_force(X, Y, 2, "weighted", weights=w), abs=1e-6
    )


@pytest.mark.parametrize("k", [0, 4, 9])
def test_individual_selection_matches_brute_force(k, seed):
    X, Y = _data(seed, K=10, N=2, M=7)
    res = dea.select_features(X, Y, n_outputs=3, dmu=k)
    assert res.objective == pytest.approx(brute_force(X, Y, 3, dmu=k), abs=1e-6)
    assert res.efficiencies[k] == pytest.approx(res.objective, abs=1e-7)


def test_input_and_output_selection_matches_brute_force(seed):
    X, Y = _data(seed, K=9, N=3, M=4)
    res = dea.select_features(X, Y, n_outputs=2, n_inputs=2)
    best = max(
        all_efficiencies(X[:, list(I)], Y[:, list(S)]).mean()
        for S in itertools.combinations(range(4), 2)
        for I in itertools.combinations(range(3), 2)
    )
    assert res.objective == pytest.approx(best, abs=1e-6)
    assert len(res.selected_inputs) == 2


@pytest.mark.parametrize("method", ["benders", "big_m"])
def test_constraints_match_brute_force(method, seed):
    X, Y = _data(seed, K=10, M=7)
    costs = np.array([3.0, 1.0, 2.0, 2.0, 1.0, 3.0, 1.0])
    clusters = [([0, 1, 2], 1, 1), ([3, 4, 5, 6], 0, 2)]
    excluded = dea.correlated_pairs(Y, 0.3)
    res = dea.select_features(
        X,
        Y,
        n_outputs=3,
        output_costs=costs,
        budget=5.0,
        clusters=clusters,
        max_correlation=0.3,
        method=method,
    )

    def ok(S):
        in1 = sum(o in (0, 1, 2) for o in S)
        in2 = sum(o in (3, 4, 5, 6) for o in S)
        pairs = {(a, b) for a, b in itertools.combinations(sorted(S), 2)}
        return (
            costs[list(S)].sum() <= 5
            and in1 == 1
            and in2 <= 2
            and not (pairs & set(excluded))
        )

    subsets = [S for S in itertools.combinations(range(7), 3) if ok(S)]
    assert subsets, "test instance must admit a selection"
    assert ok(tuple(res.selected_outputs))
    assert res.objective == pytest.approx(
        brute_force(X, Y, 3, subsets=subsets), abs=1e-6
    )


def test_weight_bounds_selection_matches_brute_force(seed):
    X, Y = _data(seed, K=8, M=5)
    Y = Y + 0.05  # strictly positive outputs
    L, U = np.full(5, 0.02), np.full(5, 2.0)
    res = dea.select_features(X, Y, n_outputs=2, weight_bounds=(L, U))

    def value(S):
        return all_efficiencies(X, Y[:, S], lower=L[S], upper=U[S]).mean()

    assert res.objective == pytest.approx(brute_force(X, Y, 2, value=value), abs=1e-6)


def test_infeasible_constraints_raise():
    X, Y = _data(0, K=8, M=5)
    with pytest.raises(InfeasibleProblemError):
        dea.select_features(X, Y, n_outputs=3, output_costs=np.ones(5), budget=2.0)
    with pytest.raises(InfeasibleProblemError):
        dea.select_features(X, Y, n_outputs=2, clusters=[([0, 1, 2, 3, 4], 0, 1)])


def test_tight_big_m_values():
    X, Y = _data(1, K=6, M=4)
    Y[2, 1] = 0.0
    m, layout = build_selection_model(DeaSelectionProblem.make(X, Y, n_outputs=2))
    beta = layout.beta
    assert m.col_upper[beta[2, 1]] == 0.0
    np.testing.assert_allclose(m.col_upper[beta[0]], 1.0 / Y[0])


# ----------------------------------------------------------------------- thesis facts


def test_counterexample_v_not_concave():
    path = dea.selection_path(NONCONCAVE_X, NONCONCAVE_Y, p_max=4)
    brute = [brute_force(NONCONCAVE_X, NONCONCAVE_Y, p) for p in range(1, 5)]
    np.testing.assert_allclose(path.values, brute, atol=1e-7)
    gains = path.marginal_gains
    assert np.all(np.diff(path.values) >= -1e-9)  # v non-decreasing
    assert gains[3] > gains[2] + 1e-3  # ... but not concave
    assert path.values[-1] == pytest.approx(
        dea.efficiency(NONCONCAVE_X, NONCONCAVE_Y).mean()
    )


def test_counterexample_greedy_not_optimal():
    sel, vals = dea.greedy_selection(GREEDY_X, GREEDY_Y, 2)
    exact = dea.select_features(GREEDY_X, GREEDY_Y, n_outputs=2)
    assert exact.objective == pytest.approx(brute_force(GREEDY_X, GREEDY_Y, 2))
    assert exact.objective > vals[1] + 0.02
    assert sel[1].tolist() == [1, 3]
    assert exact.greedy_objective == pytest.approx(vals[1])


def test_individual_v_monotone_and_reaches_full_efficiency(seed):
    X, Y = _data(seed, K=8, M=5)
    full = dea.efficiency(X, Y)
    for k in (0, 5):
        v = [
            dea.select_features(X, Y, n_outputs=p, dmu=k).objective for p in range(1, 6)
        ]
        assert np.all(np.diff(v) >= -1e-9)
        assert v[-1] == pytest.approx(full[k], abs=1e-7)


def test_cross_preference_matches_definition(seed):
    X, Y = _data(seed, K=8, M=5)
    cp = dea.cross_preference(X, Y, 2)
    joint = all_efficiencies(X, Y[:, cp.joint_outputs])
    for kp in range(8):
        own = all_efficiencies(X, Y[:, np.flatnonzero(cp.individual_outputs[kp])])
        np.testing.assert_allclose(cp.delta[:, kp], own - joint, atol=1e-7)
        # k' prefers its own selection to the joint one
        assert cp.delta[kp, kp] >= -1e-7
    np.testing.assert_allclose(cp.pi, 100 / 8 * (cp.delta > 1e-6).sum(0))
    assert np.all((cp.pi >= 0) & (cp.pi <= 100))


def test_time_limit_returns_incumbent_with_warning():
    rng = np.random.default_rng(3)
    X = rng.uniform(1, 2, (80, 1))
    Y = rng.uniform(0, 1, (80, 16))
    with pytest.warns(SolverTimeLimitWarning):
        res = dea.select_features(X, Y, n_outputs=5, time_limit=0.02, objective="min")
    assert res.status == SolveStatus.time_limit
    assert len(res.selected_outputs) == 5
    assert res.mip_gap > 0
    assert res.objective == pytest.approx(
        aggregate(dea.efficiency(X, Y[:, res.selected_outputs]), "min"), abs=1e-7
    )


# ----------------------------------------------------------------------- bad data


@pytest.mark.parametrize(
    ("X", "Y", "match"),
    [
        (np.array([[1.0], [-1.0]]), np.ones((2, 2)), "negative"),
        (np.array([[1.0], [0.0]]), np.ones((2, 2)), "all-zero inputs"),
        (np.array([[1.0], [np.nan]]), np.ones((2, 2)), "NaN"),
        (np.ones((2, 1)), np.array([[1.0, np.inf], [1, 1]]), "NaN or inf"),
        (np.ones((3, 1)), np.ones((2, 2)), "rows"),
        (np.ones((2, 1)), np.zeros((2, 2)), "all zero"),
    ],
)
def test_bad_data_raises(X, Y, match):
    with pytest.raises(DataError, match=match):
        dea.efficiency(X, Y)
    with pytest.raises(DataError, match=match):
        dea.select_features(X, Y, n_outputs=1)


def test_bad_parameters_raise():
    X, Y = _data(0, K=6, M=3)
    with pytest.raises(ValueError, match="exceeds"):
        dea.select_features(X, Y, n_outputs=4)
    with pytest.raises(ValueError, match="objective"):
        dea.select_features(X, Y, n_outputs=1, objective="median")
    with pytest.raises(ValueError, match="percentile"):
        dea.select_features(X, Y, n_outputs=1, objective="percentile")
    with pytest.raises(ValueError, match="weights"):
        dea.select_features(X, Y, n_outputs=1, objective="weighted")
    with pytest.raises(ValueError, match="dmu"):
        dea.select_features(X, Y, n_outputs=1, dmu=6)
    with pytest.raises(DataError, match="strictly positive"):
        Xz = X.copy()
        Xz[0, 0] = 0.0
        dea.select_features(np.hstack([Xz, X]), Y, n_outputs=1, n_inputs=1)


# ----------------------------------------------------------------------- input checks (issue 16)


def test_fractional_dmus_raise():
    X, Y = _data(0, K=6, M=3)
    with pytest.raises(ValueError, match="integer"):
        dea.efficiency(X, Y, dmus=[1.5, 2])
    # integral floats are indices, not truncations
    np.testing.assert_allclose(
        dea.efficiency(X, Y, dmus=[1.0, 2.0]), dea.efficiency(X, Y, dmus=[1, 2])
    )


def test_negative_output_costs_raise():
    X, Y = _data(0, K=6, M=3)
    with pytest.raises(ValueError, match="output_costs"):
        dea.select_features(X, Y, n_outputs=1, output_costs=[1.0, -1.0, 1.0], budget=1)
    with pytest.raises(ValueError, match="together"):
        dea.select_features(X, Y, n_outputs=1, output_costs=[1.0, 1.0, 1.0])


def test_nan_in_correlated_pairs_raises():
    Y = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 0.5]])
    with pytest.raises(DataError, match="NaN"):
        dea.correlated_pairs(Y, 0.5)
    with pytest.raises(ValueError, match="max_correlation"):
        dea.correlated_pairs(np.ones((3, 2)), float("nan"))


def test_empty_efficiency_summary_raises():
    with pytest.raises(ValueError, match="at least one"):
        dea.efficiency_summary([])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2.5, 0, "3", True])
def test_bad_n_outputs_raises(bad):
    X, Y = _data(0, K=6, M=3)
    with pytest.raises(ValueError, match="n_outputs must be a positive integer"):
        dea.select_features(X, Y, n_outputs=bad)


def test_time_limit_bounds_the_whole_call():
    # greedy start, reference LPs and the exact stage share one budget
    X, Y = make_synthetic_frontier(150, 1, 60, seed=5)
    t0 = time.perf_counter()
    with pytest.warns(SolverTimeLimitWarning):
        res = dea.select_features(X, Y, n_outputs=8, time_limit=2.0)
    # NOTE: the final efficiencies of the selection may use a reserve of 1 s.
    assert time.perf_counter() - t0 < 2.0 + 1.0 + 1.5
    assert res.status == SolveStatus.time_limit
    assert len(res.selected_outputs) == 8
    assert res.objective == pytest.approx(
        dea.efficiency(X, Y[:, res.selected_outputs]).mean(), abs=1e-7
    )


@pytest.mark.parametrize("N", [1, 2])
def test_benders_cuts_are_valid_and_tight(N, seed):
    # cuts (15) of a selection T, plain and strengthened, bound E_k(S) for EVERY S
    from torchsvm.mip.dea import (
        SelectionEvaluator,
        _CutPool,
        _pareto_cuts,
        efficient_reference,
    )
    from torchsvm.mip.model import MipConfig

    X, Y = _data(seed, K=9, N=N, M=5)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=2)
    cfg = MipConfig()
    ref, _ = efficient_reference(X, Y, None, cfg)
    ev = SelectionEvaluator(prob, ref, cfg, None)
    T = np.array([1, 3])
    batch = ev(T, lambdas=True)
    ks = np.arange(9)
    strong = _pareto_cuts(ev, T, batch, ks, time.perf_counter() + 60)
    pool = _CutPool()
    pool.add(Y, Y[ref], T, batch)
    for const, coef in [(pool.const[0], pool.coef[0]), strong]:
        for r in range(1, 6):
            for S in itertools.combinations(range(5), r):
                z = np.zeros(5)
                z[list(S)] = 1.0
                eff = all_efficiencies(X, Y[:, list(S)])
                assert np.all(eff <= const + coef @ z + 1e-7)
        np.testing.assert_allclose(const, all_efficiencies(X, Y[:, T]), atol=1e-7)
    # the strengthened cut is never weaker at the core point
    assert np.all(strong[1].sum(1) <= pool.coef[0].sum(1) + 1e-9)


def test_swap_bounds_bound_every_swap(seed):
    # the vectorised bounds the local search prunes with never cut off a swap
    from torchsvm.mip.dea import (
        SelectionEvaluator,
        _CutPool,
        _singletons,
        _swap_bounds,
        efficient_reference,
    )
    from torchsvm.mip.model import MipConfig

    X, Y = _data(seed, K=10, N=2, M=6)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=3)
    cfg = MipConfig()
    ref, full = efficient_reference(X, Y, None, cfg)
    ev = SelectionEvaluator(prob, ref, cfg, None)
    pool = _CutPool()
    for T in ([0, 1, 2], [1, 4, 5], [2, 3]):
        pool.add(Y, Y[ref], np.array(T), ev(np.array(T), lambdas=True))
    single = _singletons(ev, pool, time.perf_counter() + 60)
    cur = np.array([0, 2, 4])
    for leave in cur:
        ub = _swap_bounds(pool, single, full, cur, int(leave), 6)
        for o in set(range(6)) - set(cur.tolist()):
            T = sorted(set(cur.tolist()) - {int(leave)} | {o})
            assert np.all(all_efficiencies(X, Y[:, T]) <= ub[:, o] + 1e-7)


def test_local_search_reaches_a_swap_local_optimum(seed):
    from torchsvm.mip.dea import (
        SelectionEvaluator,
        _CutPool,
        _local_search,
        efficient_reference,
    )
    from torchsvm.mip.model import MipConfig

    X, Y = _data(seed + 3, K=12, N=1, M=7)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=3)
    cfg = MipConfig()
    ref, full = efficient_reference(X, Y, None, cfg)
    ev = SelectionEvaluator(prob, ref, cfg, None)
    start = np.array([0, 1, 2])
    v0 = ev.value(start)
    sel, v = _local_search(
        ev, start, v0, _CutPool(), None, full, time.perf_counter() + 60, 10_000
    )
    assert v >= v0 - 1e-12
    assert v == pytest.approx(all_efficiencies(X, Y[:, sel]).mean(), abs=1e-7)
    for leave in sel:
        for o in set(range(7)) - set(sel.tolist()):
            T = sorted(set(sel.tolist()) - {int(leave)} | {o})
            assert all_efficiencies(X, Y[:, T]).mean() <= v + 1e-7


@pytest.mark.parametrize("s", range(4))
def test_benders_with_local_search_matches_brute_force(s):
    # greedy start + local search + Benders must still reach the optimum of all
    # C(M, p) subsets (default mip_rel_gap 1e-4)
    X, Y = make_synthetic_frontier(14, 1, 8, seed=s)
    res = dea.select_features(X, Y, n_outputs=3, method="benders")
    assert res.status == SolveStatus.optimal
    best = brute_force(X, Y, 3)
    assert res.objective == pytest.approx(best, rel=1e-4, abs=1e-7)
    assert best <= res.bound + 1e-9  # the proven bound is a bound
    assert res.mip_gap <= 1e-4


@pytest.mark.parametrize("N", [1, 2])
def test_relaxation_cuts_are_valid_and_tight_at_the_fractional_point(N, seed):
    # cut of a fractional z: equals the LP relaxation of (5) at z (linprog with
    # beta_o <= z_o / y_o^k) and bounds E_k(S) for every binary selection S
    from torchsvm.mip.dea import (
        SelectionEvaluator,
        _relaxation_cuts,
        efficient_reference,
    )
    from torchsvm.mip.model import MipConfig

    X, Y = _data(seed, K=9, N=N, M=5)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=2)
    cfg = MipConfig()
    ref, _ = efficient_reference(X, Y, None, cfg)
    ev = SelectionEvaluator(prob, ref, cfg, None)
    zf = np.array([0.7, 0.1, 0.5, 0.0, 0.7])
    ks, const, coef = _relaxation_cuts(ev, zf, np.arange(9), time.perf_counter() + 60)
    assert ks.tolist() == list(range(9))
    for k in range(9):
        yk = Y[k]
        upper = np.where(yk > 0, zf / np.where(yk > 0, yk, 1.0), 0.0)
        relaxed = linprog_efficiency(X, Y, k, upper=upper)
        assert const[k] + coef[k] @ zf == pytest.approx(relaxed, abs=1e-7)
    for r in range(1, 6):
        for S in itertools.combinations(range(5), r):
            z = np.zeros(5)
            z[list(S)] = 1.0
            eff = all_efficiencies(X, Y[:, list(S)])
            assert np.all(eff <= const + coef @ z + 1e-7)


def test_root_rounds_bound_the_optimum(seed):
    # the Kelley rounds' LP bound is an upper bound on v(p) (brute force) and no
    # weaker than the cut-free master (the full-model mean efficiency)
    from torchsvm.mip.dea import SelectionEvaluator, _root_rounds, efficient_reference
    from torchsvm.mip.model import MipConfig

    X, Y = make_synthetic_frontier(12, 1, 7, seed=seed)
    prob = DeaSelectionProblem.make(X, Y, n_outputs=2)
    cfg = MipConfig()
    ref, full = efficient_reference(X, Y, None, cfg)
    ev = SelectionEvaluator(prob, ref, cfg, None)
    rows: list = []
    bound, zf = _root_rounds(ev, rows, None, full, cfg, time.perf_counter() + 60)
    assert rows, "the full-efficiency point violates some relaxation cut"
    assert brute_force(X, Y, 2) <= bound + 1e-7
    assert bound <= full.mean() + 1e-9
    assert zf is not None and zf.sum() == pytest.approx(2.0)


@pytest.mark.parametrize("s", range(2))
def test_benders_without_greedy_matches_brute_force(s):
    # no greedy start: the rounded root LP and its local search give the incumbent
    X, Y = make_synthetic_frontier(14, 1, 8, seed=s)
    res = dea.select_features(X, Y, n_outputs=3, warm_start=None, method="benders")
    assert res.status == SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(X, Y, 3), rel=1e-4, abs=1e-7)


def test_single_output_selection_is_proven_by_the_greedy_step(seed):
    # p = 1: the greedy step sees every output (or prunes it by a valid bound)
    X, Y = make_synthetic_frontier(20, 1, 9, seed=seed)
    res = dea.select_features(X, Y, n_outputs=1)
    assert res.status == SolveStatus.optimal and res.mip_gap <= 1e-12
    assert res.objective == pytest.approx(brute_force(X, Y, 1), abs=1e-9)
