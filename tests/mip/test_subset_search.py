"""Feature-selection engine: batched subset fits, exact subset tests, search vs brute force."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.svm import SVC

from torchsvm.exceptions import SolverError, SolverTimeLimitWarning
from torchsvm.mip.feature_selection import build_selection_milp, solve_feature_selection
from torchsvm.mip.model import MipConfig, check_feasible
from torchsvm.mip.solve import solve_model
from torchsvm.mip.subset_search import (
    fit_subsets,
    margin_point,
    screen_pairs,
    screen_triples,
    separable_1d,
    separable_2d,
    separable_by_planes,
    threshold_start,
)
from torchsvm.problems.selection import SelectionProblem
from torchsvm.types import SolveStatus


def _data(seed: int, n: int = 30, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.6 * X[:, 1] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _subset_feasible(
    problem: SelectionProblem, mask: np.ndarray, big_m: float = 100.0
) -> bool:
    """Brute force: (P1) feasibility MILP with the features outside ``mask`` off."""
    model = build_selection_milp(
        problem.X, problem.y, problem.tpr_floor, problem.tnr_floor, big_m=big_m
    )
    n, d = problem.X.shape
    lo, up = model.col_lower.copy(), model.col_upper.copy()
    off = np.flatnonzero(~mask)
    lo[off] = up[off] = 0.0
    lo[d + 1 + n + off] = up[d + 1 + n + off] = 0.0
    res = solve_model(
        replace(model, c=np.zeros(model.n_cols), col_lower=lo, col_upper=up),
        MipConfig(time_limit=60),
    )
    assert res.status in (SolveStatus.optimal, SolveStatus.infeasible)
    return res.status is SolveStatus.optimal


def test_fit_subsets_is_one_svm_per_subset() -> None:
    X, y = _data(0)
    p = SelectionProblem.from_data(X, y, 0.7, 0.7)
    subsets = np.array([[1, 1, 0, 0], [0, 1, 1, 1]], dtype=bool)
    W = fit_subsets(p, subsets, class_ratios=(1.0,), C=1.0, iterations=1)[0]
    for s, w in zip(subsets, W):
        ref = SVC(kernel="linear", C=1.0, tol=1e-8).fit(X[:, s], y).coef_.ravel()
        np.testing.assert_allclose(w[s], ref, atol=2e-3)
        assert np.all(w[~s] == 0)


@pytest.mark.parametrize("seed", range(3))
def test_planar_and_plane_tests_agree_and_are_sound(seed: int) -> None:
    X, y = _data(seed, n=24)
    p = SelectionProblem.from_data(X, y, 0.85, 0.85)
    for pair in itertools.combinations(range(4), 2):
        m = np.zeros(4, dtype=bool)
        m[list(pair)] = True
        a = separable_2d(p, m)
        b = separable_by_planes(p, m)
        assert b is None or a == b
        if not a:  # a refutation must be right
            assert not _subset_feasible(p, m)


def test_plane_witness_gives_a_feasible_point() -> None:
    X, y = _data(4, n=30)
    p = SelectionProblem.from_data(X, y, 0.7, 0.7)
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor)
    m = np.array([1, 1, 1, 0], dtype=bool)
    wit: list[np.ndarray] = []
    assert separable_by_planes(p, m, witness=wit)
    x = margin_point(p, m, wit[0], 100.0, MipConfig(time_limit=10))
    assert x is not None and check_feasible(model, x)[0]
    x2 = threshold_start(p, x[:4], m, 100.0)
    assert x2 is None or check_feasible(model, x2)[0]


@pytest.mark.slow  # ~25-55 s each (brute force over every subset)
@pytest.mark.parametrize("seed", range(3))
def test_search_matches_brute_force_and_full_milp(seed: int) -> None:
    X, y = _data(seed, n=30, d=4)
    costs = np.array([1.0, 2.0, 1.0, 3.0]) if seed == 2 else None
    cfg = MipConfig(time_limit=60, mip_rel_gap=0.0)
    ours = solve_feature_selection(X, y, 0.8, 0.8, feature_costs=costs, config=cfg)
    milp = solve_feature_selection(
        X, y, 0.8, 0.8, feature_costs=costs, config=cfg, method="milp"
    )
    p = SelectionProblem.from_data(X, y, 0.8, 0.8, feature_costs=costs)
    best = min(
        float(p.costs @ m)
        for m in itertools.product([False, True], repeat=4)
        if _subset_feasible(p, np.array(m))
    )
    assert ours.status is SolveStatus.optimal
    assert ours.cost == pytest.approx(best)
    assert milp.cost == pytest.approx(best)
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor, costs)
    assert check_feasible(model, ours.result.x)[0]


def test_time_limit_bounds_the_whole_call() -> None:
    X, y = _data(1, n=200, d=12)
    cfg = MipConfig(time_limit=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        try:
            res = solve_feature_selection(X, y, 0.8, 0.8, config=cfg)
        except SolverError:
            return  # no incumbent within the limit: a clear error
    assert res.result.runtime < 0.5 + 5.0  # one batch / MILP may overrun a little
    if res.status is SolveStatus.time_limit:
        assert res.mip_gap >= 0.0


@pytest.mark.parametrize("seed", range(4))
def test_single_feature_witness_gives_a_feasible_point(seed: int) -> None:
    X, y = _data(seed, n=30)
    p = SelectionProblem.from_data(X, y, 0.6, 0.6)
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor)
    one = [separable_2d(p, np.arange(4) == k) for k in range(4)]
    assert separable_1d(p).tolist() == one
    points = 0
    for k in range(4):
        m = np.arange(4) == k
        wit: list[np.ndarray] = []
        ok = separable_2d(p, m, witness=wit)
        assert ok == bool(wit)
        if ok:
            right = wit[0]
            assert (right & (y > 0)).sum() >= p.need_pos - 1e-9
            assert (right & (y < 0)).sum() >= p.need_neg - 1e-9
            # a strict threshold may still need |w_k| or a row's slack beyond big-M:
            # then no point (None), never an infeasible one
            x = margin_point(p, m, right, 100.0, MipConfig(time_limit=10))
            assert x is None or check_feasible(model, x)[0]
            points += x is not None
        else:
            assert not _subset_feasible(p, m)
    assert points > 0  # feature 0 carries the labels: it meets 0.6 alone


def _single_feasible(problem: SelectionProblem, k: int, big_m: float) -> bool:
    """Brute force: (P1) feasibility MILP on feature ``k`` alone, ``M2 = M3 = big_m``."""
    return _subset_feasible(problem, np.arange(problem.X.shape[1]) == k, big_m)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("big_m", [2.0, 5.0, 40.0])
def test_separable_1d_with_big_m_matches_brute_force(seed: int, big_m: float) -> None:
    # with every row kept, a feature alone is a (P1) point iff its classes are split
    # by at least 2 / big_m (|w_k| <= big_m at margin 1); the big-M-free test admits
    # any split. Rows whose kept classes sit 2 / big_m apart within rounding (the
    # boundary) are not drawn here.
    rng = np.random.default_rng(seed)
    n, d = 24, 12
    y = np.where(np.arange(n) < 11, 1.0, -1.0)
    gaps = rng.choice([0.01, 0.1, 0.3, 1.0, 3.0], size=d)
    X = np.where(y[:, None] > 0, 1.0, -1.0) * (gaps / 2 + rng.random((n, d)))
    X[:, ::3] = rng.normal(size=(n, (d + 2) // 3))  # features that do not split
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    want = [_single_feasible(p, k, big_m) for k in range(d)]
    assert separable_1d(p, big_m=big_m).tolist() == want
    free = separable_1d(p)
    assert bool((free >= np.array(want)).all())
    if big_m == 2.0:  # the bound does refute features that split the classes
        assert (free & ~np.array(want)).any()


def test_separable_1d_with_big_m_is_sound_where_rows_may_drop() -> None:
    # where the floors let rows drop, the test leaves the dropped rows' big-M out,
    # so it may keep a feature (P1) cannot use, never refute one it can
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 30))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    p = SelectionProblem.from_data(X, y, 0.9, 0.9)
    for big_m in (1.0, 4.0, 100.0):
        got = separable_1d(p, big_m=big_m)
        for k in range(X.shape[1]):
            if not got[k]:
                assert not _single_feasible(p, k, big_m), (big_m, k)


def test_a_feature_split_by_a_hair_does_not_stop_the_size_screen() -> None:
    # feature 0 splits the classes by 0.01, which needs |w_0| >= 200 against
    # big_m = 100 (leukemia_golub's fold 5: 0.015, so (P1) stopped at its limit with 2
    # genes and bound 0); features 1 and 2 split them together: the 1-D test refutes
    # every single feature under the bound, the pair screen runs, and 2 is proven
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(400, 2))
    Z = Z[np.abs(Z.sum(1)) > 0.3][:40]
    y = np.where(Z.sum(1) > 0, 1.0, -1.0)
    n = y.size
    X = rng.normal(size=(n, 8))
    X[:, 1:3] = Z
    X[:, 0] = np.where(y > 0, 0.005 + rng.random(n), -0.005 - rng.random(n))
    X[np.argmax(y > 0), 0], X[np.argmax(y < 0), 0] = 0.005, -0.005
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    assert separable_1d(p)[0] and not separable_1d(p, big_m=100.0).any()
    assert not _single_feasible(p, 0, 100.0)
    res = solve_feature_selection(
        X, y, 1.0, 1.0, config=MipConfig(time_limit=30), method="milp"
    )
    assert res.status is SolveStatus.optimal
    assert res.cost == 2.0 and res.result.bound == 2.0
    assert "pairs of features pass the exact pair test" in res.result.message


def _lattice(seed: int, n: int = 300, d: int = 18) -> tuple[np.ndarray, np.ndarray]:
    """One-hot-like rows where feature 5 alone separates (nursery's shape): d > 14."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d)).astype(float)
    y = np.where(X[:, 5] > 0, 1.0, -1.0)
    return (X - X.mean(0)) / X.std(0), y


def test_a_single_separating_feature_is_proven_without_heuristics_or_milp() -> None:
    X, y = _lattice(0)
    costs = np.ones(X.shape[1])
    costs[5] = 2.0  # the separating feature is not the cheapest one
    cfg = MipConfig(time_limit=60, mip_rel_gap=1e-6)
    res = solve_feature_selection(X, y, 0.9, 0.9, feature_costs=costs, config=cfg)
    # oracle: HiGHS on the full (P1) model from no start
    model = build_selection_milp(X, y, res.tpr_floor, res.tnr_floor, costs)
    full = solve_model(model, cfg)
    assert full.status is SolveStatus.optimal
    assert res.status is SolveStatus.optimal
    assert res.cost == pytest.approx(full.objective, abs=1e-6)
    assert check_feasible(model, res.result.x)[0]
    if res.cost == pytest.approx(1.0):
        # a unit-cost feature reaches the floors alone: proven by the 1-D bound
        assert res.result.n_iter == 0
    # with unit costs the separating feature alone is optimal, proven at once
    res1 = solve_feature_selection(X, y, 0.9, 0.9, config=cfg)
    assert res1.status is SolveStatus.optimal and res1.cost == 1.0
    assert res1.result.n_iter == 0 and np.flatnonzero(res1.support).tolist() == [5]
    assert "no selection is cheaper than one feature" in res1.result.message


def _planar_pairs(p: SelectionProblem) -> set[tuple[int, int]]:
    d = p.X.shape[1]
    out = set()
    for k, l in itertools.combinations(range(d), 2):
        m = np.zeros(d, dtype=bool)
        m[[k, l]] = True
        if separable_2d(p, m):
            out.add((k, l))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_screen_pairs_keeps_every_planar_pair(seed: int) -> None:
    # the quadrant test only refutes: the pairs it returns are exactly those the
    # exact planar test accepts, with a hard class of either sign, weighted rows,
    # ties (a rounded feature) and a soft class that may drop 0-3 rows
    rng = np.random.default_rng(seed)
    X, y = _data(seed, n=28, d=7)
    X[:, 3] = np.round(X[:, 3])
    v = rng.integers(1, 4, size=y.size).astype(float) if seed % 2 else None
    tpr, tnr = (1.0, [0.6, 0.8, 0.9][seed % 3]) if seed < 3 else (0.75, 1.0)
    p = SelectionProblem.from_data(X, y, tpr, tnr, sample_weight=v)
    got = screen_pairs(p)
    assert got is not None
    assert {tuple(map(int, r)) for r in got} == _planar_pairs(p)


def test_screen_pairs_does_not_apply_without_a_hard_class() -> None:
    X, y = _data(0, n=28, d=5)
    assert screen_pairs(SelectionProblem.from_data(X, y, 0.8, 0.8)) is None


@pytest.mark.parametrize("seed", range(2))
def test_screen_pairs_refutations_are_right(seed: int) -> None:
    # against brute force: the (P1) feasibility MILP of every pair
    X, y = _data(seed + 10, n=26, d=6)
    p = SelectionProblem.from_data(X, y, 1.0, 0.85)
    got = {tuple(map(int, r)) for r in screen_pairs(p)}
    for k, l in itertools.combinations(range(6), 2):
        m = np.zeros(6, dtype=bool)
        m[[k, l]] = True
        assert _subset_feasible(p, m) == ((k, l) in got)


@pytest.mark.parametrize("seed", range(2))
def test_screen_pairs_with_every_row_kept_matches_brute_force(seed: int) -> None:
    # both floors at 1: the open pairs go to the LP of (P1) restricted to the pair
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 7))
    y = np.where(X[:, 0] - 0.7 * X[:, 1] + 0.05 * X[:, 2] > 0, 1.0, -1.0)
    X[:, 4] = X[:, 0] + 0.02 * rng.normal(size=30)  # a near twin: more open pairs
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    got = {tuple(map(int, r)) for r in screen_pairs(p, big_m=100.0)}
    want = set()
    for k, l in itertools.combinations(range(7), 2):
        m = np.zeros(7, dtype=bool)
        m[[k, l]] = True
        if _subset_feasible(p, m):
            want.add((k, l))
    assert got == want
    assert want  # the instance has feasible pairs (and infeasible ones)
    assert len(want) < 21


def test_no_feasible_pair_proves_three_features() -> None:
    # labels from three features: no pair (nor single feature) separates all rows,
    # so the pair screen's bound 3 meets the heuristics' incumbent at once
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 20))
    y = np.where(X[:, 0] + X[:, 1] + X[:, 2] > 0, 1.0, -1.0)
    cfg = MipConfig(time_limit=60)
    res = solve_feature_selection(X, y, 1.0, 1.0, config=cfg, method="milp")
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    assert screen_pairs(p).shape[0] == 0
    assert res.status is SolveStatus.optimal
    assert res.cost == 3.0 and res.result.bound == 3.0
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor)
    assert check_feasible(model, res.result.x)[0]


def _feasible_sets(
    p: SelectionProblem, size: int, big_m: float
) -> set[tuple[int, ...]]:
    """Brute force: the subsets of ``size`` features whose (P1) MILP is feasible."""
    model = build_selection_milp(
        p.X, p.y, p.tpr_floor, p.tnr_floor, big_m=big_m, sample_weight=p.v
    )
    n, d = p.X.shape
    out = set()
    for S in itertools.combinations(range(d), size):
        lo, up = model.col_lower.copy(), model.col_upper.copy()
        off = np.setdiff1d(np.arange(d), S)
        lo[off] = up[off] = 0.0
        lo[d + 1 + n + off] = up[d + 1 + n + off] = 0.0
        res = solve_model(
            replace(model, c=np.zeros(model.n_cols), col_lower=lo, col_upper=up),
            MipConfig(time_limit=60),
        )
        assert res.status in (SolveStatus.optimal, SolveStatus.infeasible)
        if res.status is SolveStatus.optimal:
            out.add(S)
    return out


def _strict_instance(seed: int, n: int = 16) -> tuple[np.ndarray, np.ndarray]:
    # labels from four features; ties (a rounded column), a constant column and a
    # twin of column 0
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 7))
    y = np.where(X[:, :4] @ np.array([1.0, -1.0, 0.7, 0.9]) > 0, 1.0, -1.0)
    X[:, 4] = np.round(2 * X[:, 4]) / 2
    X[:, 5] = 0.7
    X[:, 6] = X[:, 0]
    return X, y


@pytest.mark.parametrize(("seed", "big_m"), [(6, 20.0), (9, 20.0), (8, 3.0), (1, 20.0)])
def test_screen_triples_matches_brute_force(seed: int, big_m: float) -> None:
    # every row kept: the triples it returns are exactly the (P1)-feasible ones
    X, y = _strict_instance(seed)
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    assert not _feasible_sets(p, 1, big_m)
    assert not _feasible_sets(p, 2, big_m)  # its precondition
    got = screen_triples(p, big_m)
    assert got is not None
    want = _feasible_sets(p, 3, big_m)
    assert {tuple(map(int, r)) for r in got} == want
    assert len(want) < 35
    assert want or seed == 1  # seed 1: no feasible triple at all


def test_screen_triples_settles_twin_columns_with_the_doubled_bound() -> None:
    # y from x0 + x1; big-M below the weight w_0 needs but above half of it: the
    # pair is infeasible, the triple with a twin of column 0 is feasible
    from scipy.optimize import linprog

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    X[:, 0] *= 0.01  # w_0 must be about 100 times w_1: the bound binds on w_0 only
    # min t: y_i (w . x_i + b) >= 1, |w_k| <= t (scipy's LP, an independent oracle)
    A = np.hstack([-y[:, None] * X[:, :2], -y[:, None], np.zeros((60, 1))])
    B = np.hstack(
        [np.vstack([np.eye(2), -np.eye(2)]), np.zeros((4, 1)), -np.ones((4, 1))]
    )
    lp = linprog(
        [0, 0, 0, 1.0],
        A_ub=np.vstack([A, B]),
        b_ub=np.concatenate([-np.ones(60), np.zeros(4)]),
        bounds=[(None, None)] * 4,
    )
    big_m = 0.7 * lp.fun
    X[:, 4] = X[:, 0]
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    assert not _feasible_sets(p, 2, big_m)
    got = {tuple(map(int, r)) for r in screen_triples(p, big_m)}
    want = _feasible_sets(p, 3, big_m)
    assert (0, 1, 4) in want
    assert got == want


def test_screen_triples_does_not_apply_when_many_rows_may_drop() -> None:
    X, y = _strict_instance(0)
    # TNR 0.6 of 6 negatives: 2 may drop, 1 with max_drops = 1
    p = SelectionProblem.from_data(X, y, 1.0, 0.6)
    assert screen_triples(p, 100.0, max_drops=1) is None
    # 3 or more (both classes together) exceed the default of 3
    assert screen_triples(SelectionProblem.from_data(X, y, 0.8, 0.6), 100.0) is None


def _drop_floors(y: np.ndarray, k_pos: int, k_neg: int) -> tuple[float, float]:
    """Floors that let (P1) drop exactly ``k_pos`` positives and ``k_neg`` negatives."""
    n_pos, n_neg = int((y > 0).sum()), int((y < 0).sum())
    return 1.0 - (k_pos + 0.5) / n_pos, 1.0 - (k_neg + 0.5) / n_neg


@pytest.mark.parametrize(
    ("seed", "k_pos", "k_neg", "weighted"),
    [
        (5, 0, 1, False),
        (7, 0, 1, False),
        (8, 0, 2, False),
        (8, 1, 1, False),
        (6, 1, 1, False),
        (8, 2, 0, False),
        (6, 0, 2, True),
        (8, 2, 1, True),
        (10, 0, 3, True),
    ],
)
def test_screen_triples_with_droppable_rows_matches_brute_force(
    seed: int, k_pos: int, k_neg: int, weighted: bool
) -> None:
    # rows may drop (budgets of 1-3 rows per class, or by weight): the triples it
    # returns are exactly those whose (P1) feasibility MILP (z binaries, same floors)
    # is feasible; ties, a constant column and a twin column as in the strict case
    X, y = _strict_instance(seed, n=18)
    if weighted:
        v = np.random.default_rng(seed + 100).integers(1, 4, size=y.size)
        tpr, tnr = {6: (1.0, 0.85), 8: (0.85, 0.85), 10: (1.0, 0.85)}[seed]
        p = SelectionProblem.from_data(X, y, tpr, tnr, sample_weight=v.astype(float))
    else:
        p = SelectionProblem.from_data(X, y, *_drop_floors(y, k_pos, k_neg))
    assert not _feasible_sets(p, 1, 20.0)
    assert not _feasible_sets(p, 2, 20.0)  # its precondition
    stats: dict[str, float] = {}
    got = screen_triples(p, 20.0, stats=stats)
    assert got is not None
    assert (stats["drops_pos"], stats["drops_neg"]) == (k_pos, k_neg)
    want = _feasible_sets(p, 3, 20.0)
    assert {tuple(map(int, r)) for r in got} == want
    assert len(want) < 35
    # the witness covers refute octants here (not only the MILPs of step 4)
    assert stats["open"] < 8 * 10  # 10 triples of the 5 representative columns


@pytest.mark.parametrize("seed", range(3))
def test_dropping_a_negative_is_what_makes_a_triple_feasible(seed: int) -> None:
    # labels from features 0-2 and one negative deep on the positive side: no triple
    # keeps every row, the triple (0, 1, 2) does once that negative may be dropped
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 6))
    s = X[:, :3].sum(1)
    y = np.where(s > 0, 1.0, -1.0)
    y[np.argmax(s)] = -1.0
    strict = SelectionProblem.from_data(X, y, 1.0, 1.0)
    one = SelectionProblem.from_data(X, y, *_drop_floors(y, 0, 1))
    for p in (strict, one):
        assert not _feasible_sets(p, 1, 100.0)
        assert not _feasible_sets(p, 2, 100.0)
    assert screen_triples(strict, 100.0).shape[0] == 0
    assert not _feasible_sets(strict, 3, 100.0)
    got = {tuple(map(int, r)) for r in screen_triples(one, 100.0)}
    assert got == _feasible_sets(one, 3, 100.0)
    assert (0, 1, 2) in got


def test_no_feasible_triple_proves_four_features() -> None:
    # labels from four features on 70 rows: no triple separates them, so the triple
    # screen's bound 4 meets the local search's incumbent without the full MILP
    rng = np.random.default_rng(5)
    X = rng.normal(size=(70, 12))
    y = np.where(X[:, :4] @ np.array([1.0, 0.9, -0.8, 1.1]) > 0, 1.0, -1.0)
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    assert screen_triples(p, 100.0).shape[0] == 0
    res = solve_feature_selection(
        X, y, 1.0, 1.0, config=MipConfig(time_limit=60), method="milp"
    )
    assert res.status is SolveStatus.optimal
    assert res.cost == 4.0 and res.result.bound == 4.0
    assert "no 3 features" in res.result.message or "triple" in res.result.message
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor)
    assert check_feasible(model, res.result.x)[0]


@pytest.mark.parametrize("seed", range(3))
def test_screen_triples_near_separable_matches_brute_force(seed: int) -> None:
    # labels from three features plus a little noise: many octants stay open after
    # the octant test and go through the cone cover; no constant or twin columns, so
    # the answer is exact without the pair precondition
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 8))
    y = np.where(X[:, :3].sum(1) + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    X[:, 3] = X[:, 0] + X[:, 1] + 0.2 * rng.normal(size=40)
    p = SelectionProblem.from_data(X, y, 1.0, 1.0)
    got = {tuple(map(int, r)) for r in screen_triples(p, 100.0)}
    assert got == _feasible_sets(p, 3, 100.0)


def test_no_feasible_triple_with_a_droppable_row_proves_four_features() -> None:
    # labels from four features on 70 rows and one negative deep on the positive
    # side, which the TNR floor lets (P1) drop: no triple meets the floors even so
    # (brute force), the triple screen proves it, and the bound 4 meets the
    # incumbent without the full MILP
    rng = np.random.default_rng(5)
    X = rng.normal(size=(70, 12))
    s = X[:, :4] @ np.array([1.0, 0.9, -0.8, 1.1])
    y = np.where(s > 0, 1.0, -1.0)
    y[np.argmax(s)] = -1.0
    tpr, tnr = _drop_floors(y, 0, 1)
    p = SelectionProblem.from_data(X, y, tpr, tnr)
    stats: dict[str, float] = {}
    assert screen_triples(p, 100.0, stats=stats).shape[0] == 0
    assert stats["drops_neg"] == 1
    assert not _feasible_sets(p, 3, 100.0)
    res = solve_feature_selection(
        X, y, tpr, tnr, config=MipConfig(time_limit=60), method="milp"
    )
    assert res.status is SolveStatus.optimal
    assert res.cost == 4.0 and res.result.bound == 4.0
    assert "0 triples of features pass the exact triple test" in res.result.message
    model = build_selection_milp(X, y, p.tpr_floor, p.tnr_floor)
    assert check_feasible(model, res.result.x)[0]


def test_screen_triples_with_drops_stops_at_a_least_cost_triple(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # stop_cost: the screen may stop at the first block holding a feasible triple of
    # that cost; what it returns is feasible (a subset of the brute-force answer) and
    # never empty; a stop_cost no triple reaches gives the whole answer
    from torchsvm.mip import subset_search

    monkeypatch.setattr(subset_search, "_DROP_BLOCK", 1)
    X, y = _strict_instance(8, n=18)
    p = SelectionProblem.from_data(X, y, *_drop_floors(y, 0, 2))
    want = _feasible_sets(p, 3, 20.0)
    assert len(want) > 1
    stats: dict[str, float] = {}
    got = {
        tuple(map(int, r)) for r in screen_triples(p, 20.0, stats=stats, stop_cost=3.0)
    }
    assert got and got <= want
    assert stats.get("partial")
    stats = {}
    got = {
        tuple(map(int, r)) for r in screen_triples(p, 20.0, stats=stats, stop_cost=2.5)
    }
    assert got == want and not stats.get("partial")


def test_warm_compiles_every_drop_kernel_with_the_screens_argument_types() -> None:
    # the screen's pace forecast must not read numba's compilation as work: warm()
    # compiles each kernel with the types the screen passes, so a real screen
    # afterwards adds no signature (no compilation inside the forecast's clock)
    from torchsvm.mip import _triple_drops as kern

    if not kern.available():
        pytest.skip("numba is not installed: the kernels run as plain Python")
    names = ("coverable_words", "open_octants_k", "cover_cones")
    kern.warm()
    before = {f: list(getattr(kern, f).signatures) for f in names}
    assert all(before.values())
    X, y = _strict_instance(8, n=18)
    stats: dict[str, float] = {}
    got = screen_triples(
        SelectionProblem.from_data(X, y, *_drop_floors(y, 1, 1)), 20.0, stats=stats
    )
    assert got is not None and stats["open"] > 0
    assert {f: list(getattr(kern, f).signatures) for f in names} == before
