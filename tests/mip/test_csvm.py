"""CSVM (SPEC S5) by outer approximation vs brute force over z with an independent QP.

The oracle writes the thesis' formulation directly in cvxpy (Clarabel): the primal with
``||w||^2`` or the partial dual with the kernel matrix ``K`` itself (no factor, no
auxiliary ``v``), for every ``z`` in {0,1}^|F| that meets the floors.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from torchsvm.exceptions import InfeasibleProblemError, SolverTimeLimitWarning
from torchsvm.mip.csvm import build_csvm_model, csvm_start, solve_csvm
from torchsvm.mip.model import MipConfig, MipModel, check_feasible
from torchsvm.problems.csvm import CsvmProblem, FloorCappedWarning, hoeffding_floor

cp = pytest.importorskip("cvxpy")


def make_data(seed: int, n: int = 20, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    y[-2:] = [1.0, -1.0]
    return X, y


def brute_force_csvm(p: CsvmProblem, form: str) -> float:
    """min over feasible z of the fixed-z QP, written with K directly (cvxpy)."""
    I, F = p.train_idx, p.floor_idx
    y, X, cost = p.y, p.X, p.cost()
    M1, M2 = p.big_m, p.big_m_dual
    R = I if p.on_training else np.union1d(I, F)
    K = p.gram(R)
    posR = {int(r): t for t, r in enumerate(R)}
    best = math.inf
    for zt in itertools.product([0.0, 1.0], repeat=F.size):
        z = np.array(zt)
        if any(
            sum(z[np.searchsorted(F, m)] for m in p.floor_members(fl))
            < fl.required - 1e-9
            for fl in p.floors
        ):
            continue
        b = cp.Variable()
        xi = cp.Variable(I.size, nonneg=True)
        cons = []
        if form == "primal":
            w = cp.Variable(X.shape[1])
            fI, fF = X[I] @ w + b, X[F] @ w + b
            obj = cp.sum_squares(w)
        else:
            a = cp.Variable(R.size, nonneg=True)
            ay = cp.multiply(y[R], a)
            fI = K[[posR[int(r)] for r in I]] @ ay + b
            fF = K[[posR[int(r)] for r in F]] @ ay + b
            obj = cp.quad_form(ay, cp.psd_wrap(K))
            cons.append(y[R] @ a == 0)
            aI = [posR[int(r)] for r in I]
            if p.on_training:
                cons.append(a[aI] <= cost[I] / 2 + M2 * z)
            else:
                cons.append(a[aI] <= cost[I] / 2)
                cons.append(a[[posR[int(r)] for r in F]] <= M2 * z)
        cons.append(cp.multiply(y[I], fI) + xi >= 1)
        if p.on_training:
            cons.append(xi <= M1 * (1 - z))
        else:
            cons.append(cp.multiply(y[F], fF) >= 1 - M1 * (1 - z))
        prob = cp.Problem(cp.Minimize(obj + cost[I] @ xi), cons)
        prob.solve(solver="CLARABEL")
        if prob.status == "optimal":
            best = min(best, float(prob.value))
    return best


CASES = [("linear", "primal"), ("linear", "dual"), ("rbf", "dual")]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("kernel", "form"), CASES)
def test_csvm_matches_brute_force(seed: int, kernel: str, form: str) -> None:
    X, y = make_data(seed)
    anchor = np.arange(20) >= 13  # |J| = 7
    p = CsvmProblem.from_data(
        X, y, anchor, C=5.0, kernel=kernel, gamma=0.5, min_tpr=0.9, hoeffding_alpha=None
    )
    sol = solve_csvm(p, MipConfig(time_limit=60), form=form)
    ref = brute_force_csvm(p, form)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert sol.bound <= sol.objective + 1e-9


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_s5c_matches_brute_force(kernel: str) -> None:
    X, y = make_data(3, n=9)
    p = CsvmProblem.from_data(
        X,
        y,
        None,
        C=2.0,
        kernel=kernel,
        gamma=0.5,
        min_tpr=1.0,
        min_tnr=0.6,
        hoeffding_alpha=None,
        on_training=True,
    )
    sol = solve_csvm(p, MipConfig(time_limit=60))
    ref = brute_force_csvm(p, "primal" if kernel == "linear" else "dual")
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


def test_linear_primal_and_dual_forms_agree() -> None:
    X, y = make_data(4, n=30)
    anchor = np.arange(30) >= 15
    p = CsvmProblem.from_data(
        X, y, anchor, C=3.0, min_tpr=0.85, min_tnr=0.5, hoeffding_alpha=None
    )
    a = solve_csvm(p, MipConfig(time_limit=60), form="primal")
    b = solve_csvm(p, MipConfig(time_limit=60), form="dual")
    assert a.objective == pytest.approx(b.objective, rel=1e-3)
    np.testing.assert_allclose(a.coef, b.coef, atol=5e-3 * (1 + np.abs(a.coef).max()))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_warm_start_accepted_and_rates_hold(kernel: str) -> None:
    X, y = make_data(5, n=40)
    anchor = np.arange(40) >= 20
    p = CsvmProblem.from_data(
        X, y, anchor, C=1.0, kernel=kernel, gamma=0.5, min_tpr=0.9, hoeffding_alpha=None
    )
    model, layout, _ = build_csvm_model(p)
    start = csvm_start(p, layout)
    assert start.x is not None
    # the sliding-b start (repaired in the dual form) is feasible for the MIQP
    assert check_feasible(model, start.x, tol=1e-7)[0]
    # the outer approximation's start (the release screen would prove it first)
    sol = solve_csvm(p, MipConfig(time_limit=60), release_screen=False)
    assert sol.start_feasible is True
    # start objective is an upper bound on the optimum
    f = sol.decision_function(p.X)
    J = p.floor_idx
    pos = J[p.y[J] > 0]
    assert np.mean(f[pos] > 0) >= p.floors[0].floor - 1e-12
    assert np.all(p.y[J][sol.z] * f[J][sol.z] >= 1 - 1e-5)


def test_hoeffding_floor_above_one_names_the_floor() -> None:
    X, y = make_data(0)
    anchor = np.arange(20) >= 13
    assert hoeffding_floor(0.9, 4, 0.05) > 1
    with pytest.warns(FloorCappedWarning, match="TPR sample floor .* capped at 1"):
        p = CsvmProblem.from_data(X, y, anchor, min_tpr=0.95, hoeffding_alpha=0.05)
    assert p.floors[0].floor == 1.0


def test_infeasible_floors_pair_names_both() -> None:
    # XOR on the anchors: no linear classifier gets all of J+ and all of J- right.
    X = np.array([[0, 0], [1, 1], [0, 1], [1, 0]] * 3, dtype=float)
    X += np.random.default_rng(0).normal(scale=0.01, size=X.shape)
    y = np.array([1, 1, -1, -1] * 3, dtype=float)
    anchor = np.arange(12) >= 4
    p = CsvmProblem.from_data(
        X, y, anchor, min_tpr=1.0, min_tnr=1.0, hoeffding_alpha=None, big_m=10.0
    )
    with pytest.raises(InfeasibleProblemError, match="TPR >= 1.*TNR >= 1.*together"):
        solve_csvm(p, MipConfig(time_limit=30))


def test_problem_validation() -> None:
    X, y = make_data(0)
    with pytest.raises(ValueError, match="at least one floor"):
        CsvmProblem.from_data(X, y, np.arange(20) >= 10)
    with pytest.raises(ValueError, match="anchor set J is empty"):
        CsvmProblem.from_data(X, y, None, min_tpr=0.5)
    with pytest.raises(ValueError, match="only -1 and"):
        CsvmProblem.from_data(X, y * 2, np.arange(20) >= 10, min_tpr=0.5)
    p = CsvmProblem.from_data(
        X, y, np.arange(20) >= 10, C=2.0, min_tpr=0.5, hoeffding_alpha=None
    )
    nIp = int(np.sum(y[:10] > 0))
    assert p.C_pos == pytest.approx(2.0 / nIp)


def test_s5c_sparse_newton_matches_brute_force() -> None:
    """The QPs' sparse Newton system (qp_solver="ipm-sparse") on S5c, vs brute force."""
    X, y = make_data(3, n=9)
    p = CsvmProblem.from_data(
        X,
        y,
        None,
        C=2.0,
        min_tpr=1.0,
        min_tnr=0.6,
        hoeffding_alpha=None,
        on_training=True,
    )
    sol = solve_csvm(p, MipConfig(time_limit=60), qp_solver="ipm-sparse")
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(brute_force_csvm(p, "primal"), rel=1e-4)


def test_s5c_linear_sparse_and_dense_qps_same_optimum_as_scip() -> None:
    """Issue 18: a linear S5c with a binding TPR floor (weights as a bootstrap draw's
    counts, penalty and M of Ctrl2) has the same optimum with the interior point's
    sparse and dense Newton systems, and SCIP's on the same model."""
    from torchsvm.mip.scip import solve_scip

    rng = np.random.default_rng(11)
    n = 60
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.9 * rng.normal(size=n) > 0, 1.0, -1.0)
    counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)

    def problem(t: float) -> CsvmProblem:
        return CsvmProblem.from_data(
            X,
            y,
            None,
            sample_weight=counts,
            on_training=True,
            penalty="libsvm",
            C=1.0,
            min_tpr=t,
            hoeffding_alpha=None,
            big_m=1000.0,
        )

    cfg = MipConfig(time_limit=120, mip_rel_gap=1e-6)
    p = problem(0.97)
    auto = solve_csvm(p, cfg, qp_solver="ipm-sparse")
    dense = solve_csvm(p, cfg, qp_solver="ipm-dense")
    assert auto.status == dense.status == "optimal"
    assert auto.objective == pytest.approx(dense.objective, rel=1e-6)
    scip = solve_scip(build_csvm_model(p, "primal")[0], cfg)
    assert scip.status == "optimal"
    assert auto.objective == pytest.approx(scip.objective, rel=1e-5)
    # the floor binds: a floor that every classifier meets gives a lower optimum
    loose = solve_csvm(problem(0.05), cfg)
    assert loose.objective < auto.objective - 1e-3 * abs(auto.objective)


def test_floor_rounding_meets_every_floor_with_fewest_ones() -> None:
    """The rounded z satisfies the model's floor rows; no chosen one can be dropped."""
    from torchsvm.mip.csvm import floor_rounding

    X, y = make_data(6, n=60)
    anchor = np.arange(60) >= 20
    w = np.random.default_rng(0).integers(1, 4, size=60).astype(float)
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=1.0,
        kernel="rbf",
        gamma=0.5,
        min_tpr=0.8,
        min_tnr=0.6,
        min_accuracy=0.75,
        hoeffding_alpha=None,
        sample_weight=w,
    )
    model, layout, _ = build_csvm_model(p)
    rng = np.random.default_rng(1)
    x = np.zeros(model.n_cols)
    x[layout.z] = rng.uniform(size=layout.floor_idx.size)
    (z,) = floor_rounding(p, layout)(x)
    floor_rows = model.A.tocsr()[:, layout.z]
    # the floor rows are the ones whose only columns are z
    only_z = np.flatnonzero(
        np.diff(floor_rows.indptr) == np.diff(model.A.tocsr().indptr)
    )
    only_z = only_z[np.diff(floor_rows.indptr)[only_z] > 0]
    assert only_z.size == 3
    act = floor_rows[only_z] @ z
    assert np.all(act >= model.row_lower[only_z] - 1e-9)
    for t in np.flatnonzero(z):
        z2 = z.copy()
        z2[t] = 0.0
        assert np.any(floor_rows[only_z] @ z2 < model.row_lower[only_z] - 1e-9)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_relaxation_rounding_keeps_the_brute_force_optimum(kernel: str) -> None:
    X, y = make_data(7)
    anchor = np.arange(20) >= 12
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=5.0,
        kernel=kernel,
        gamma=0.5,
        min_tpr=0.75,
        min_tnr=0.5,
        hoeffding_alpha=None,
    )
    ref = brute_force_csvm(p, "primal" if kernel == "linear" else "dual")
    for rounding in (True, False):
        sol = solve_csvm(p, MipConfig(time_limit=60), round_relaxation=rounding)
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


def test_round_relaxation_value_is_checked() -> None:
    X, y = make_data(0)
    p = CsvmProblem.from_data(
        X, y, np.arange(20) >= 13, min_tpr=0.9, hoeffding_alpha=None
    )
    with pytest.raises(ValueError, match="round_relaxation must be"):
        solve_csvm(p, MipConfig(time_limit=10), round_relaxation="yes")


@pytest.mark.parametrize(
    ("kernel", "on_training"), [("linear", False), ("rbf", False), ("linear", True)]
)
def test_local_search_keeps_the_brute_force_optimum(
    kernel: str, on_training: bool
) -> None:
    """solve_csvm(local_search=True) (swap search before the first master) is exact."""
    if on_training:
        X, y = make_data(3, n=10)
        p = CsvmProblem.from_data(
            X,
            y,
            None,
            C=2.0,
            kernel=kernel,
            min_tpr=1.0,
            min_tnr=0.6,
            hoeffding_alpha=None,
            on_training=True,
        )
    else:
        X, y = make_data(7)
        p = CsvmProblem.from_data(
            X,
            y,
            np.arange(20) >= 12,
            C=5.0,
            kernel=kernel,
            gamma=0.5,
            min_tpr=0.75,
            min_tnr=0.5,
            hoeffding_alpha=None,
        )
    form = "primal" if kernel == "linear" else "dual"
    ref = brute_force_csvm(p, form)
    sol = solve_csvm(p, MipConfig(time_limit=60), local_search=True)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert sol.bound <= sol.objective + 1e-9


def test_floor_swaps_meet_every_floor_and_release_a_binding_row() -> None:
    """Each swap keeps the model's floor rows; it releases a row at margin 1."""
    from torchsvm.mip.csvm import floor_swaps

    X, y = make_data(6, n=60)
    anchor = np.arange(60) >= 20
    w = np.random.default_rng(0).integers(1, 4, size=60).astype(float)
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=1.0,
        kernel="linear",
        min_tpr=0.8,
        min_tnr=0.6,
        hoeffding_alpha=None,
        sample_weight=w,
    )
    model, layout, _ = build_csvm_model(p)
    sol = solve_csvm(p, MipConfig(time_limit=60), local_search=False)
    x = np.zeros(model.n_cols)
    x[layout.w] = sol.coef
    x[layout.b] = sol.intercept
    F = layout.floor_idx
    marg = y[F] * (X[F] @ sol.coef + sol.intercept)
    floor_rows = model.A.tocsr()[:, layout.z]
    only_z = np.flatnonzero(
        np.diff(floor_rows.indptr) == np.diff(model.A.tocsr().indptr)
    )
    only_z = only_z[np.diff(floor_rows.indptr)[only_z] > 0]
    assert only_z.size == 2
    cands = floor_swaps(p, layout)(x)
    assert cands
    base = marg >= 1.0 - 1e-7
    for z in cands:
        assert np.all(floor_rows[only_z] @ z >= model.row_lower[only_z] - 1e-9)
        released = np.flatnonzero(base & (z == 0))
        assert released.size == 1
        assert marg[released[0]] <= 1.0 + 1e-4


def test_local_search_value_is_checked() -> None:
    X, y = make_data(0)
    p = CsvmProblem.from_data(
        X, y, np.arange(20) >= 13, min_tpr=0.9, hoeffding_alpha=None
    )
    with pytest.raises(ValueError, match="local_search must be"):
        solve_csvm(p, MipConfig(time_limit=10), local_search="yes")


@pytest.mark.parametrize("anchor_lps", [True, False])
@pytest.mark.parametrize("tnr", [None, 0.5])
def test_anchor_tightening_keeps_the_brute_force_optimum(
    tnr: float | None, anchor_lps: bool
) -> None:
    """solve_csvm(tighten_anchors=True) (bounded big-M, rows dropped) is exact.

    With a TPR floor only, the negative anchors are in no floor, so their rows can
    be dropped; with both floors every anchor's big-M is bounded, by an LP per
    floor member (``anchor_lps=True``) or by the box of ``(w, b)`` alone.
    """
    X, y = make_data(7)
    p = CsvmProblem.from_data(
        X,
        y,
        np.arange(20) >= 12,
        C=5.0,
        kernel="linear",
        min_tpr=0.75,
        min_tnr=tnr,
        hoeffding_alpha=None,
    )
    ref = brute_force_csvm(p, "primal")
    sol = solve_csvm(
        p, MipConfig(time_limit=60), tighten_anchors=True, anchor_lps=anchor_lps
    )
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert sol.bound <= sol.objective + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_box_big_m_keeps_the_brute_force_optimum_on_random_instances(
    seed: int,
) -> None:
    """The anchors' big-M from the box of ``(w, b)`` alone (``anchor_lps=False``)
    never cuts the optimum: random small instances, both floors or one, against
    brute force over every assignment."""
    rng = np.random.default_rng(100 + seed)
    n = 16
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1, -1)
    y[:2], y[2:4] = 1, -1
    anchor = np.zeros(n, dtype=bool)
    anchor[rng.permutation(n)[: n // 2]] = True
    tnr = 0.6 if seed % 2 else None
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=float(rng.uniform(1.0, 20.0)),
        kernel="linear",
        min_tpr=0.7,
        min_tnr=tnr,
        hoeffding_alpha=None,
    )
    ref = brute_force_csvm(p, "primal")
    sol = solve_csvm(
        p, MipConfig(time_limit=60), tighten_anchors=True, anchor_lps=False
    )
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("member_lps", [True, False])
def test_anchor_tightening_master_keeps_its_optimum(member_lps: bool) -> None:
    """The tightened master has the master's optimum (HiGHS on both as the oracle).

    Under a cutoff above the master's optimum, the optimal point lies in the
    polytope the big-M are bounded over, so both masters have the same optimum;
    the tightened one must also be smaller (bounded M, rows dropped), or the test
    would pass with the identity.
    """
    from torchsvm.mip.csvm import anchor_tightening
    from torchsvm.mip.highs import solve_highs
    from torchsvm.mip.outer_approx import OuterApproximation

    X, y = make_data(11, n=80, d=3)
    p = CsvmProblem.from_data(
        X,
        y,
        np.arange(80) >= 40,
        C=20.0,
        kernel="linear",
        min_tpr=0.9,
        hoeffding_alpha=None,
    )
    model, layout, factor = build_csvm_model(p)
    cfg = MipConfig(time_limit=60)
    oa = OuterApproximation(model, cfg, factor=factor)
    start = csvm_start(p, layout, None)
    assert start.x is not None
    oa.set_start(start.x)
    oa.relax()
    master = oa.lifted.master_model()
    ref = solve_highs(master, cfg)
    assert ref.status == "optimal"
    cutoff = oa.ub
    assert ref.objective <= cutoff
    tight = anchor_tightening(p, layout, member_lps=member_lps)(master, cutoff, 30.0)
    assert tight.n_rows < master.n_rows  # negative anchors (no floor) dropped
    zc = layout.z.start + np.arange(layout.floor_idx.size)
    nI = layout.train_idx.size
    kept_anchor = np.asarray(tight.A.tocsr()[nI:, zc].min(axis=1).todense()).ravel()
    assert np.any((kept_anchor < 0) & (kept_anchor > -p.big_m + 1e-9))
    # (w, b) bounded over the tightened LP relaxation, around the master's optimum
    wb = np.r_[np.arange(layout.w.start, layout.w.stop), layout.b]
    assert np.all(np.isfinite(tight.col_lower[wb]) & np.isfinite(tight.col_upper[wb]))
    assert np.all(np.isinf(master.col_lower[wb]))
    assert np.all(tight.col_lower[wb] <= ref.x[wb] + 1e-9)
    assert np.all(ref.x[wb] <= tight.col_upper[wb] + 1e-9)
    got = solve_highs(tight, cfg)
    assert got.status == "optimal"
    assert got.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)
    # no point outside the master: the tightened optimum is a master point
    from torchsvm.mip.model import check_feasible as feasible

    assert feasible(master, got.x, tol=1e-6)[0]


def test_tighten_anchors_value_is_checked() -> None:
    X, y = make_data(0)
    p = CsvmProblem.from_data(
        X, y, np.arange(20) >= 13, min_tpr=0.9, hoeffding_alpha=None
    )
    with pytest.raises(ValueError, match="tighten_anchors must be"):
        solve_csvm(p, MipConfig(time_limit=10), tighten_anchors="yes")
    with pytest.raises(ValueError, match="anchor_lps must be"):
        solve_csvm(p, MipConfig(time_limit=10), anchor_lps="yes")
    q = CsvmProblem.from_data(
        X, y, None, kernel="rbf", min_tpr=0.9, hoeffding_alpha=None, on_training=True
    )
    with pytest.raises(ValueError, match="primal form"):
        solve_csvm(q, MipConfig(time_limit=10), tighten_anchors=True)


def test_grid_cuts_keep_the_brute_force_optimum() -> None:
    """solve_csvm(grid_cuts=True) (tangent cuts of ||w||^2 on a grid) is exact."""
    X, y = make_data(7)
    p = CsvmProblem.from_data(
        X, y, np.arange(20) >= 12, C=5.0, min_tpr=0.75, hoeffding_alpha=None
    )
    ref = brute_force_csvm(p, "primal")
    for grid in (True, False):
        sol = solve_csvm(p, MipConfig(time_limit=60), grid_cuts=grid)
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


def test_tighten_anchors_auto_from_more_than_tighten_min_int_anchors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tighten_anchors="auto"`` hands the tightening to the outer approximation
    on the primal S5 with more than TIGHTEN_MIN_INT anchors, and only there."""
    import torchsvm.mip.csvm as csvm_mod

    seen: list[object] = []

    class Stop(Exception):
        pass

    def fake(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["tighten"])
        raise Stop

    monkeypatch.setattr(csvm_mod, "solve_convex_miqp", fake)
    for n_anchor in (csvm_mod.TIGHTEN_MIN_INT, csvm_mod.TIGHTEN_MIN_INT + 1):
        X, y = make_data(3, n=n_anchor + 40)
        p = CsvmProblem.from_data(
            X, y, np.arange(X.shape[0]) >= 40, min_tpr=0.5, hoeffding_alpha=None
        )
        assert p.floor_idx.size == n_anchor
        with pytest.raises(Stop):
            solve_csvm(p, MipConfig(time_limit=30))
    assert seen[0] is None and callable(seen[1])


def test_primal_s5_masters_get_s5_proof_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The primal S5 hands :data:`S5_PROOF_OPTIONS` and :data:`S5_QP_SOLVER` to the
    outer approximation, S5c its own options and the interior point, and the kernel
    form no options and the interior point; ``anchor_lps="auto"`` follows
    :data:`S5_ANCHOR_LPS` on S5 and :data:`S5C_ANCHOR_LPS` on S5c."""
    import torchsvm.mip.csvm as csvm_mod

    seen: list[object] = []
    qps: list[str] = []

    class Stop(Exception):
        pass

    def fake(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["proof_options"])
        qps.append(kwargs["qp_solver"])
        raise Stop

    lps: list[bool] = []
    real = csvm_mod.anchor_tightening

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        lps.append(kwargs["member_lps"])
        return real(*args, **kwargs)

    monkeypatch.setattr(csvm_mod, "solve_convex_miqp", fake)
    monkeypatch.setattr(csvm_mod, "anchor_tightening", spy)
    X, y = make_data(3, n=40)
    anchors = np.arange(40) >= 20
    for kernel, on_training in (("linear", False), ("linear", True), ("rbf", False)):
        p = CsvmProblem.from_data(
            X,
            y,
            None if on_training else anchors,
            kernel=kernel,
            min_tpr=0.5,
            hoeffding_alpha=None,
            on_training=on_training,
        )
        with pytest.raises(Stop):
            solve_csvm(
                p,
                MipConfig(time_limit=30),
                tighten_anchors=kernel == "linear",
                release_screen=False,
            )
    assert seen == [csvm_mod.S5_PROOF_OPTIONS, csvm_mod.S5C_PROOF_OPTIONS, None]
    assert lps == [csvm_mod.S5_ANCHOR_LPS, csvm_mod.S5C_ANCHOR_LPS]
    assert qps == [csvm_mod.S5_QP_SOLVER, "ipm", "ipm"]
    with pytest.raises(ValueError, match="qp_solver must be"):
        solve_csvm(p, MipConfig(time_limit=10), qp_solver="cplex")


@pytest.mark.parametrize("tnr", [None, 0.6])
def test_s5c_tightening_keeps_the_brute_force_optimum(tnr: float | None) -> None:
    """S5c with its slacks' big-M bounded under the cutoff is exact (brute force).

    With a TPR floor only, the negatives are in no floor and their ``z`` is fixed
    at 0; with both floors every row's big-M is bounded.
    """
    X, y = make_data(5, n=9)
    p = CsvmProblem.from_data(
        X,
        y,
        None,
        C=3.0,
        min_tpr=0.75,
        min_tnr=tnr,
        hoeffding_alpha=None,
        on_training=True,
    )
    ref = brute_force_csvm(p, "primal")
    sol = solve_csvm(p, MipConfig(time_limit=60), tighten_anchors=True)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert sol.bound <= sol.objective + 1e-9


def _s5c_bootstrap_problem(n: int = 80, t: float = 0.9, seed: int = 11) -> CsvmProblem:
    """A linear S5c as Ctrl2 builds it: a bootstrap draw's counts as weights, the
    libsvm penalty and M = 1000, a TPR floor that S1 misses."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.9 * rng.normal(size=n) > 0, 1.0, -1.0)
    counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
    return CsvmProblem.from_data(
        X,
        y,
        None,
        sample_weight=counts,
        on_training=True,
        penalty="libsvm",
        C=4.0,
        min_tpr=t,
        hoeffding_alpha=None,
        big_m=1000.0,
    )


def test_s5c_tightened_master_keeps_its_optimum() -> None:
    """The tightened S5c master has the master's optimum (HiGHS on both as the
    oracle) and is a subset of it; its slack rows' big-M must actually shrink, or
    the test would pass with the identity."""
    from torchsvm.mip.csvm import anchor_tightening
    from torchsvm.mip.highs import solve_highs
    from torchsvm.mip.model import check_feasible as feasible
    from torchsvm.mip.outer_approx import OuterApproximation

    p = _s5c_bootstrap_problem()
    model, layout, factor = build_csvm_model(p)
    cfg = MipConfig(time_limit=60)
    oa = OuterApproximation(model, cfg, factor=factor)
    start = csvm_start(p, layout, None)
    assert start.x is not None
    oa.set_start(start.x)
    oa.polish(np.round(start.x[model.integrality.astype(bool)]))
    oa.relax()
    master = oa.lifted.master_model()
    ref = solve_highs(master, cfg)
    assert ref.status == "optimal"
    cutoff = oa.ub
    assert math.isfinite(cutoff) and ref.objective <= cutoff
    tight = anchor_tightening(p, layout)(master, cutoff, 30.0)
    nI = layout.train_idx.size
    zc = layout.z.start + np.arange(nI)
    coef = np.asarray(tight.A.tocsr()[nI : 2 * nI, zc].max(axis=1).todense()).ravel()
    assert np.any((coef > 0) & (coef < p.big_m - 1e-9))  # bounded big-M
    neg = p.y[layout.train_idx] < 0  # in no floor: z fixed at 0
    assert np.all(tight.col_upper[zc[neg]] == 0)
    xi = layout.xi.start + np.arange(nI)
    assert np.all(np.isfinite(tight.col_upper[xi]))
    got = solve_highs(tight, cfg)
    assert got.status == "optimal"
    assert got.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)
    assert feasible(master, got.x, tol=1e-6)[0]


@pytest.mark.slow
def test_s5c_tighten_after_nodes_same_optimum_as_scip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``tighten_anchors="auto"`` on S5c: masters run untightened up to
    S5C_TIGHTEN_AFTER nodes; a master stopped there hands over its bound and point
    and the next ones are tightened. Forced after 1 node, the answer is SCIP's."""
    import torchsvm.mip.csvm as csvm_mod
    import torchsvm.mip.outer_approx as oa_mod
    from torchsvm.mip.scip import solve_scip

    p = _s5c_bootstrap_problem(n=120, t=0.95, seed=3)
    cfg = MipConfig(time_limit=120, mip_rel_gap=1e-6)
    limits: list[int] = []
    run = oa_mod.OuterApproximation._run_master

    def spy(self, master, config, opts):  # type: ignore[no-untyped-def]
        limits.append(int((opts or {}).get("mip_max_nodes", -1)))
        return run(self, master, config, opts)

    monkeypatch.setattr(oa_mod.OuterApproximation, "_run_master", spy)
    monkeypatch.setattr(csvm_mod, "S5C_TIGHTEN_AFTER", 1)
    lazy = solve_csvm(p, cfg)
    # the first master with a cutoff is capped and stops there; the rest are not
    assert limits[0] == 1 and len(limits) > 1
    assert all(v == oa_mod._NO_NODE_LIMIT for v in limits[1:])
    monkeypatch.setattr(oa_mod.OuterApproximation, "_run_master", run)
    plain = solve_csvm(p, cfg, tighten_anchors=False)
    scip = solve_scip(build_csvm_model(p, "primal")[0], cfg)
    assert lazy.status == plain.status == scip.status == "optimal"
    assert lazy.objective == pytest.approx(scip.objective, rel=1e-5)
    assert plain.objective == pytest.approx(scip.objective, rel=1e-5)


def test_s5c_masters_branch_on_reliable_pseudo_costs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The primal S5c's masters with a cutoff run with S5C_PROOF_OPTIONS
    (reliability branching on) instead of the proof mode's 0. The S5c optimum is
    SCIP's."""
    import torchsvm.mip.outer_approx as oa_mod
    from torchsvm.mip.csvm import S5C_PROOF_OPTIONS
    from torchsvm.mip.scip import solve_scip

    seen: list[dict] = []
    run = oa_mod.OuterApproximation._run_master

    def spy(self, master, config, opts):  # type: ignore[no-untyped-def]
        seen.append(dict(opts or {}))
        return run(self, master, config, opts)

    monkeypatch.setattr(oa_mod.OuterApproximation, "_run_master", spy)
    p = _s5c_bootstrap_problem(n=60, t=0.95, seed=3)
    cfg = MipConfig(time_limit=60, mip_rel_gap=1e-6)
    got = solve_csvm(p, cfg)
    cut = [o for o in seen if "objective_bound" in o]
    assert cut and all(
        o["mip_pscost_minreliable"] == S5C_PROOF_OPTIONS["mip_pscost_minreliable"]
        for o in cut
    )
    assert S5C_PROOF_OPTIONS["mip_pscost_minreliable"] > 0
    scip = solve_scip(build_csvm_model(p, "primal")[0], cfg)
    assert got.status == scip.status == "optimal"
    assert got.objective == pytest.approx(scip.objective, rel=1e-5)


def test_tighten_after_value_is_checked() -> None:
    from torchsvm.mip.outer_approx import OuterApproximation

    p = _s5c_bootstrap_problem(n=20)
    model, _, factor = build_csvm_model(p)
    with pytest.raises(ValueError, match="tighten_after"):
        OuterApproximation(model, factor=factor, tighten_after=0)


def _kernel_problem(seed: int, n: int = 24) -> CsvmProblem:
    X, y = make_data(seed, n=n)
    return CsvmProblem.from_data(
        X,
        y,
        np.arange(n) >= n // 2,
        C=float(n),
        kernel="rbf",
        gamma=0.5,
        min_tpr=0.8,
        hoeffding_alpha=None,
    )


@pytest.mark.parametrize("seed", range(3))
def test_kernel_anchor_bounds_hold_at_points_below_the_cutoff(seed: int) -> None:
    """Every anchor margin and ``b`` of MIQP points below ``U`` lies within the bounds.

    Random ``(v, b)`` (``v`` in the factor's span, as the model's), slacks at their
    least, ``U`` the largest objective among them: each point is below ``U``, so
    the tightened rows (``y_j f(x_j) >= 1 - M_j`` at ``z_j = 0``) and the ``b``
    column's bounds must hold at all of them, the weak-duality ``M_j`` as well as
    the closed form.
    """
    from torchsvm.mip.csvm import kernel_anchor_bounds

    p = _kernel_problem(seed)
    model, layout, factor = build_csvm_model(p)
    rng = np.random.default_rng(seed)
    I, F, y = layout.train_idx, layout.floor_idx, p.y
    pos = {int(r): t for t, r in enumerate(layout.dual_idx)}
    LI = layout.L[[pos[int(r)] for r in I]]
    LF = layout.L[[pos[int(r)] for r in F]]
    k = layout.L.shape[1]
    V = rng.normal(size=(400, k)) * rng.uniform(0.05, 2.0, size=(400, 1))
    b = rng.normal(scale=1.5, size=400)
    fI = V @ LI.T + b[:, None]
    xi = np.maximum(0.0, 1.0 - y[I] * fI)
    obj = (V**2).sum(axis=1) + xi @ p.cost()[I]
    U = float(obj.max())
    margins = y[F] * (V @ LF.T + b[:, None])  # (points, |F|)
    # the master: the model's columns, then r and t (k each)
    n = layout.n_cols
    lifted = MipModel(
        c=np.concatenate([model.c, np.zeros(k), np.ones(k)]),
        A=sp.hstack([model.A, sp.csr_array((model.A.shape[0], 2 * k))], format="csr"),
        row_lower=model.row_lower,
        row_upper=model.row_upper,
        col_lower=np.concatenate([model.col_lower, np.full(k, -np.inf), np.zeros(k)]),
        col_upper=np.concatenate([model.col_upper, np.full(2 * k, np.inf)]),
        integrality=np.concatenate([model.integrality, np.zeros(2 * k, dtype=bool)]),
    )
    members = np.flatnonzero(y[F] > 0)
    rows = I.size + members
    zcols = layout.z.start + members
    for dual_qps in (False, True):
        out = kernel_anchor_bounds(p, layout, dual_qps=dual_qps)(lifted, U, 30.0)
        A = sp.csr_array(out.A)
        Mj = -A[rows, zcols]
        assert np.all(Mj < p.big_m)  # tightened
        assert np.allclose(out.row_lower[rows], 1.0 - Mj)
        # z_j = 0: y_j f(x_j) >= 1 - M_j at every point below U
        assert np.all(margins[:, members] >= out.row_lower[rows][None, :] - 1e-9)
        assert np.all(b >= out.col_lower[layout.b] - 1e-9)
        assert np.all(b <= out.col_upper[layout.b] + 1e-9)
        r = math.sqrt(2.0) * V
        assert np.all(np.abs(r) <= out.col_upper[n : n + k] + 1e-9)
        # here U / S (S = C: the slack costs of a class) dominates the bound, where
        # the multipliers of the class mean are already the best ones
    # near the optimum the QPs' multipliers beat the class mean's closed form, and
    # the optimum itself (a point below a slightly higher cutoff) meets the rows
    sol = solve_csvm(p, MipConfig(time_limit=60))
    U = sol.objective * (1.0 + 1e-6)
    f = sol.decision_function(p.X[F[members]]) * y[F[members]]
    Ms = []
    for dual_qps in (False, True):
        out = kernel_anchor_bounds(p, layout, dual_qps=dual_qps)(lifted, U, 30.0)
        Ms.append(-sp.csr_array(out.A)[rows, zcols])
        assert np.all(f >= out.row_lower[rows] - 1e-6)
        assert out.col_lower[layout.b] - 1e-6 <= sol.intercept
        assert sol.intercept <= out.col_upper[layout.b] + 1e-6
    assert np.all(Ms[1] <= Ms[0] + 1e-9)
    assert np.any(Ms[1] < Ms[0] - 1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_kernel_anchor_bounds_keep_the_brute_force_optimum(seed: int) -> None:
    """solve_csvm(kernel_bounds=True / False) on the RBF kernel form equals brute force."""
    p = _kernel_problem(seed, n=20)
    ref = brute_force_csvm(p, "dual")
    for on in (True, False):
        sol = solve_csvm(p, MipConfig(time_limit=60), kernel_bounds=on)
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
        assert sol.bound <= sol.objective + 1e-9


def test_kernel_bounds_value_is_checked() -> None:
    p = _kernel_problem(0, n=20)
    with pytest.raises(ValueError, match="kernel_bounds"):
        solve_csvm(p, MipConfig(time_limit=10), kernel_bounds="yes")
    X, y = make_data(0)
    lin = CsvmProblem.from_data(
        X, y, np.arange(20) >= 10, C=5.0, min_tpr=0.8, hoeffding_alpha=None
    )
    with pytest.raises(ValueError, match="kernel_bounds"):
        solve_csvm(lin, MipConfig(time_limit=10), kernel_bounds=True)


def _release_problem(seed: int, kernel: str, n: int = 40) -> CsvmProblem:
    """S5 with about 10 positive anchors of which about 3 may be released."""
    X, y = make_data(seed, n=n)
    anchor = np.arange(n) >= n // 2
    return CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=float(n) / 4,
        kernel=kernel,
        gamma=0.5,
        min_tpr=0.7,
        hoeffding_alpha=None,
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("kernel", "form"), CASES)
def test_release_screen_matches_scip(seed: int, kernel: str, form: str) -> None:
    """The release-set screen proves the same optimum as SCIP on the MIQP, alone."""
    pytest.importorskip("pyscipopt")
    from torchsvm.mip.scip import solve_scip

    p = _release_problem(seed, kernel)
    fl = p.floors[0]
    m = len(p.floor_members(fl))
    assert m - math.ceil(fl.required) >= 2  # several rows may be released
    cfg = MipConfig(time_limit=120, mip_rel_gap=1e-6)
    sol = solve_csvm(p, cfg, form=form, release_screen=True)
    model, _, _ = build_csvm_model(p, form)
    scip = solve_scip(model, cfg)
    assert scip.status == "optimal"
    assert sol.status == "optimal"
    assert sol.n_iter == 0  # proven by the screen, no outer-approximation round
    assert sol.objective == pytest.approx(scip.objective, rel=1e-5, abs=1e-7)
    assert sol.bound <= scip.objective * (1 + 1e-9) + 1e-9
    # the floor holds on the answer
    f = sol.decision_function(p.X)
    mem = p.floor_members(fl)
    assert np.sum(p.y[mem] * f[mem] >= 1 - 1e-6) >= fl.required - 1e-9


def _release_points(p: CsvmProblem, sets: list[np.ndarray]):  # type: ignore[no-untyped-def]
    """Dual points of ``P(R)`` for the given release sets, as the screen's arrays."""
    from torchsvm.mip.csvm_release import _balance, _dual_qp, member_system

    _, layout, _ = build_csvm_model(p, "dual")
    I = layout.train_idx
    S, LS, yS, cap, G = member_system(p, layout)
    same = yS == yS[-1]
    pts = []
    for rel in sets:
        keep = np.concatenate([np.ones(I.size, dtype=bool), ~rel])
        a = np.zeros(S.size)
        a[keep] = _dual_qp(G[np.ix_(keep, keep)], yS[keep], cap[keep], MipConfig())
        pts.append(_balance(a, yS, cap))
    return LS, yS, same, I.size, pts


def _exact_release_value(p: CsvmProblem, rel: np.ndarray) -> float:
    """``P(R)`` in feature space (cvxpy): ``v`` free on the factor's rows."""
    _, layout, _ = build_csvm_model(p, "dual")
    I, R = layout.train_idx, layout.dual_idx
    mem = np.asarray(p.floor_members(p.floors[0]))
    posR = {int(s): t for t, s in enumerate(R)}
    LI = layout.L[[posR[int(s)] for s in I]]
    LF = layout.L[[posR[int(s)] for s in mem[~rel]]]
    v = cp.Variable(layout.L.shape[1])
    b = cp.Variable()
    xi = cp.Variable(I.size, nonneg=True)
    cons = [
        cp.multiply(p.y[I], LI @ v + b) + xi >= 1,
        cp.multiply(p.y[mem[~rel]], LF @ v + b) >= 1,
    ]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(v) + p.cost()[I] @ xi), cons)
    prob.solve(solver="CLARABEL")
    return float(prob.value)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_release_screen_bounds_hold_and_a_wrong_restoration_fails(kernel: str) -> None:
    """Every screen bound is below the set's exact ``P(R)`` (independent QP), and is
    exact on the sets whose points made it. The same check catches the bound with
    the equality ``sum a y = 0`` not restored (``R``'s multipliers only zeroed)."""
    from torchsvm.mip import _release_screen as rs

    p = _release_problem(1, kernel)
    fl = p.floors[0]
    mem = p.floor_members(fl)
    m = len(mem)
    r = m - math.ceil(fl.required)
    rng = np.random.default_rng(0)
    point_sets = [np.zeros(m, dtype=bool)]
    for _ in range(3):
        rel = np.zeros(m, dtype=bool)
        rel[rng.choice(m, r, replace=False)] = True
        point_sets.append(rel)
    LS, yS, same, nI, pts = _release_points(p, point_sets)
    LF = LS[nI:]
    arrs: dict[str, list] = {
        k: [] for k in ("aF", "gp", "gn", "pos", "neg", "pp", "pn", "nn")
    }
    for a in pts:
        vp, vn = LS[same].T @ a[same], LS[~same].T @ a[~same]
        for k, val in zip(
            arrs,
            (
                a[nI:],
                LF @ vp,
                LF @ vn,
                a[same].sum(),
                a[~same].sum(),
                vp @ vp,
                vp @ vn,
                vn @ vn,
            ),
        ):
            arrs[k].append(val)
    A = [np.ascontiguousarray(np.array(arrs[k], dtype=float)) for k in arrs]
    sets = np.array(list(itertools.combinations(range(m), r)), dtype=np.int64)
    bounds = np.full(sets.shape[0], -np.inf)
    rs.screen_list(sets, bounds, 0, np.inf, A[0], A[1], A[2], LF @ LF.T, *A[3:])
    # a wrong restoration: R's multipliers zeroed in v, but their mass kept on the
    # positive side of the balance (the formula's P' taken as the point's ``pos``)
    wrong = np.full(sets.shape[0], -np.inf)
    for q, idx in enumerate(sets):
        for a in pts:
            a2 = a.copy()
            a2[nI + idx] = 0.0
            P = a[same].sum()
            rho = P / a[~same].sum()
            u = LS[same].T @ a2[same]
            Q = float(np.sum((u - rho * (LS[~same].T @ a2[~same])) ** 2))
            wrong[q] = max(wrong[q], 4 * P - Q if Q <= 2 * P else 4 * P * P / Q)
    exact = np.array(
        [_exact_release_value(p, np.isin(np.arange(m), idx)) for idx in sets]
    )
    tol = 1e-6 * (1 + np.abs(exact))
    assert np.all(bounds <= exact + tol)
    assert np.any(wrong > exact + 1e-3 * (1 + np.abs(exact)))  # the check has teeth
    for rel in point_sets[1:]:
        q = next(
            i for i, idx in enumerate(sets) if np.all(np.isin(np.arange(m), idx) == rel)
        )
        assert bounds[q] == pytest.approx(exact[q], rel=1e-5)


def test_release_screen_refuses_two_floors_and_respects_the_time_limit() -> None:
    from torchsvm.mip.csvm_release import release_applies

    X, y = make_data(2, n=40)
    anchor = np.arange(40) >= 20
    p = CsvmProblem.from_data(
        X, y, anchor, C=10.0, min_tpr=0.7, min_tnr=0.6, hoeffding_alpha=None
    )
    assert "2 floors" in release_applies(p)
    sol = solve_csvm(p, MipConfig(time_limit=60), release_screen=True)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(
        solve_csvm(p, MipConfig(time_limit=60), release_screen=False).objective,
        rel=1e-4,
    )
    with pytest.raises(ValueError, match="release_screen must be"):
        solve_csvm(p, MipConfig(time_limit=10), release_screen="on")
    # a call stopped in the screen returns its incumbent with the proven gap
    q = _release_problem(0, "rbf")
    with pytest.warns(SolverTimeLimitWarning, match="release-set screen"):
        stopped = solve_csvm(q, MipConfig(time_limit=1e-3), release_screen=True)
    assert stopped.status == "time_limit"
    assert stopped.bound <= stopped.objective
    assert stopped.mip_gap == pytest.approx(
        (stopped.objective - stopped.bound) / stopped.objective
    )
    best = solve_csvm(q, MipConfig(time_limit=60), release_screen=True)
    assert best.status == "optimal"
    assert (
        stopped.bound <= best.objective * (1 + 1e-9) <= stopped.objective * (1 + 1e-9)
    )


def test_release_screen_auto_on_for_the_kernel_form_only() -> None:
    p = _release_problem(0, "linear")
    cfg = MipConfig(time_limit=60)
    primal = solve_csvm(p, cfg)  # auto: the primal form's outer approximation
    dual = solve_csvm(p, cfg, form="dual")  # auto: the screen proves it
    assert primal.status == dual.status == "optimal"
    assert primal.n_iter >= 1 and dual.n_iter == 0
    assert dual.objective == pytest.approx(primal.objective, rel=1e-4)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_release_screen_with_no_row_to_release(kernel: str) -> None:
    """A floor of 1 leaves one release set (none released): the screen's answer is
    its QP, the outer approximation's optimum."""
    X, y = make_data(4, n=30)
    anchor = np.arange(30) >= 15
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=5.0,
        kernel=kernel,
        gamma=0.5,
        min_tpr=1.0,
        hoeffding_alpha=None,
    )
    cfg = MipConfig(time_limit=60)
    a = solve_csvm(p, cfg, form="dual", release_screen=True)
    b = solve_csvm(p, cfg, form="dual", release_screen=False)
    assert a.status == b.status == "optimal"
    assert a.n_iter == 0
    assert a.objective == pytest.approx(b.objective, rel=1e-4)
