"""Outer approximation (SPEC S5 "Solving") vs brute force over binaries and vs SCIP."""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.model import (
    MipConfig,
    MipModel,
    check_feasible,
    model_objective,
)
from torchsvm.mip.outer_approx import (
    OuterApproximation,
    factor_psd,
    solve_convex_miqp,
)
from torchsvm.mip.solve import solve_model
from torchsvm.types import SolveStatus


def random_miqp(seed: int, nb: int = 6, nc: int = 4, m: int = 5) -> MipModel:
    return random_miqp_and_point(seed, nb, nc, m)[0]


def random_miqp_and_point(
    seed: int, nb: int = 6, nc: int = 4, m: int = 5
) -> tuple[MipModel, np.ndarray]:
    """Random convex MIQP and a feasible point of it."""
    rng = np.random.default_rng(seed)
    n = nb + nc
    G = rng.normal(size=(n, n - 2))  # rank-deficient PSD on purpose
    A = rng.normal(size=(m, n))
    x0 = np.concatenate([rng.integers(0, 2, nb), rng.uniform(-1, 1, nc)])
    model = MipModel(
        c=rng.normal(size=n) * 2,
        A=sp.csr_array(A),
        row_lower=np.full(m, -np.inf),
        row_upper=A @ x0 + rng.uniform(0, 1, m),
        col_lower=np.concatenate([np.zeros(nb), np.full(nc, -5.0)]),
        col_upper=np.concatenate([np.ones(nb), np.full(nc, 5.0)]),
        integrality=np.arange(n) < nb,
        Q=G @ G.T / n,
    )
    return model, x0


def brute_force(model: MipModel) -> float:
    """Minimum over all binary assignments of the convex QP with them fixed."""
    integ = np.asarray(model.integrality, dtype=bool)
    idx = np.flatnonzero(integ)
    best = math.inf
    for z in itertools.product([0.0, 1.0], repeat=idx.size):
        lo, up = model.col_lower.copy(), model.col_upper.copy()
        lo[idx] = z
        up[idx] = z
        qp = replace(model, integrality=None, col_lower=lo, col_upper=up)
        res = solve_model(qp)
        if res.status is SolveStatus.optimal:
            best = min(best, res.objective)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_oa_matches_brute_force(seed: int) -> None:
    model = random_miqp(seed)
    res = solve_convex_miqp(model, MipConfig(time_limit=30))
    ref = brute_force(model)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref, rel=1e-4, abs=1e-5)
    assert res.bound <= res.objective + 1e-9
    assert res.mip_gap <= 1e-4
    assert check_feasible(model, res.x, tol=1e-5)[0]


def svm_like_model(
    seed: int, n_train: int = 10, n_anchor: int = 8
) -> tuple[MipModel, int]:
    """Linear CSVM-like MIQP: min ||w||^2 + C sum xi with big-M anchor rows, TPR floor."""
    rng = np.random.default_rng(seed)
    d = 2
    X = rng.normal(size=(n_train + n_anchor, d))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=len(X)) > 0, 1.0, -1.0)
    y[n_train] = 1.0
    y[n_train + 1] = -1.0
    XI, yI, XJ, yJ = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    # columns: w (d), b, xi (n_train), z (n_anchor)
    n = d + 1 + n_train + n_anchor
    M, C = 100.0, 1.0
    rows = []
    lo = []
    for i in range(n_train):  # y_i (w x_i + b) + xi_i >= 1
        r = np.zeros(n)
        r[:d] = yI[i] * XI[i]
        r[d] = yI[i]
        r[d + 1 + i] = 1.0
        rows.append(r)
        lo.append(1.0)
    for j in range(n_anchor):  # y_j (w x_j + b) - M z_j >= 1 - M
        r = np.zeros(n)
        r[:d] = yJ[j] * XJ[j]
        r[d] = yJ[j]
        r[d + 1 + n_train + j] = -M
        rows.append(r)
        lo.append(1.0 - M)
    pos = np.flatnonzero(yJ > 0)
    r = np.zeros(n)
    r[d + 1 + n_train + pos] = 1.0
    rows.append(r)
    lo.append(math.ceil(0.75 * pos.size))
    c = np.zeros(n)
    c[d + 1 : d + 1 + n_train] = C
    Q = np.zeros((n, n))
    Q[:d, :d] = 2.0 * np.eye(d)  # ||w||^2 = 0.5 w^T (2I) w
    model = MipModel(
        c=c,
        A=sp.csr_array(np.array(rows)),
        row_lower=np.array(lo, dtype=float),
        row_upper=np.full(len(rows), np.inf),
        col_lower=np.concatenate(
            [np.full(d + 1, -np.inf), np.zeros(n_train + n_anchor)]
        ),
        col_upper=np.concatenate([np.full(d + 1 + n_train, np.inf), np.ones(n_anchor)]),
        integrality=np.arange(n) >= d + 1 + n_train,
        Q=sp.csr_array(Q),
    )
    return model, d


@pytest.mark.parametrize("seed", range(3))
def test_oa_svm_big_m_matches_brute_force(seed: int) -> None:
    model, _ = svm_like_model(seed)
    res = solve_model(model, MipConfig(time_limit=30))  # dispatches to OA
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-6)


def test_oa_uses_factor_and_start() -> None:
    model, d = svm_like_model(5)
    n = model.n_cols
    F = np.zeros((n, d))
    F[:d, :d] = math.sqrt(2.0) * np.eye(d)
    ref = solve_convex_miqp(model, MipConfig(time_limit=30))
    res = solve_convex_miqp(model, MipConfig(time_limit=30), start=ref.x, factor=F)
    assert res.start_feasible is True
    assert res.objective == pytest.approx(ref.objective, rel=1e-4, abs=1e-6)


def test_oa_matches_scip() -> None:
    pyscipopt = pytest.importorskip("pyscipopt")
    model = random_miqp(42, nb=8, nc=4)
    scip = pyscipopt.Model()
    scip.hideOutput()
    n = model.n_cols
    xs = [
        scip.addVar(
            lb=model.col_lower[k],
            ub=model.col_upper[k],
            vtype="B" if model.integrality[k] else "C",
        )
        for k in range(n)
    ]
    A = model.A.toarray()
    for i in range(A.shape[0]):
        scip.addCons(
            pyscipopt.quicksum(A[i, k] * xs[k] for k in range(n)) <= model.row_upper[i]
        )
    Q = np.asarray(model.Q)
    t = scip.addVar(lb=None, ub=None)
    quad = pyscipopt.quicksum(
        0.5 * Q[a, b] * xs[a] * xs[b] for a in range(n) for b in range(n)
    )
    scip.addCons(quad <= t)
    scip.setObjective(pyscipopt.quicksum(model.c[k] * xs[k] for k in range(n)) + t)
    scip.setParam("limits/gap", 1e-7)
    scip.optimize()
    res = solve_convex_miqp(model, MipConfig(time_limit=30, mip_rel_gap=1e-6))
    assert res.objective == pytest.approx(scip.getObjVal(), rel=1e-4, abs=1e-5)


def test_oa_max_sense() -> None:
    model = random_miqp(3)
    flipped = replace(
        model, c=-model.c, Q=-np.asarray(model.Q), sense="max", offset=1.5
    )
    res = solve_convex_miqp(flipped)
    assert res.objective == pytest.approx(-brute_force(model) + 1.5, rel=1e-4, abs=1e-5)
    assert res.bound >= res.objective - 1e-9


def test_oa_infeasible() -> None:
    model = random_miqp(1)
    n = model.n_cols
    extra = sp.csr_array(np.concatenate([np.ones(6), np.zeros(n - 6)])[None, :])
    bad = replace(
        model,
        A=sp.vstack([model.A, extra]),
        row_lower=np.concatenate([model.row_lower, [2.5]]),
        row_upper=np.concatenate([model.row_upper, [2.6]]),
    )
    assert solve_convex_miqp(bad).status is SolveStatus.infeasible


def test_oa_time_limit_returns_incumbent() -> None:
    model, x0 = random_miqp_and_point(4, nb=30, nc=10, m=12)
    with pytest.warns(SolverTimeLimitWarning):
        res = solve_convex_miqp(
            model, MipConfig(time_limit=0.02, mip_rel_gap=0.0), start=x0
        )
    assert res.status is SolveStatus.time_limit
    assert res.start_feasible is True
    assert res.x is not None
    assert check_feasible(model, res.x, tol=1e-5)[0]
    assert res.objective <= model_objective(model, x0) + 1e-7
    assert res.mip_gap >= 0.0


def test_not_psd_raises() -> None:
    with pytest.raises(ValueError, match="positive semidefinite"):
        factor_psd(np.array([[1.0, 2.0], [2.0, 1.0]]))
    model = random_miqp(0)
    with pytest.raises(ValueError, match="positive semidefinite"):
        solve_convex_miqp(replace(model, Q=-np.asarray(model.Q)))


def test_factor_psd_reconstructs() -> None:
    rng = np.random.default_rng(0)
    G = rng.normal(size=(7, 3))
    L = factor_psd(G @ G.T)
    assert L.shape == (7, 3)
    np.testing.assert_allclose(L @ L.T, G @ G.T, atol=1e-10)


def test_oa_highs_qp_option_matches_ipm() -> None:
    model = random_miqp(2)
    a = solve_convex_miqp(model, qp_solver="highs")
    b = solve_convex_miqp(model, qp_solver="ipm")
    assert a.objective == pytest.approx(b.objective, rel=1e-5, abs=1e-6)
    with pytest.raises(ValueError, match="qp_solver"):
        solve_convex_miqp(model, qp_solver="cplex")


@pytest.mark.parametrize("how", ["raises", "error"])
def test_highs_qp_failure_falls_back_to_the_interior_point(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``qp_solver="highs"``: a HiGHS QP that raises or reports an error is solved
    again by the interior point, which gives the brute-force optimum here."""
    import torchsvm.mip.outer_approx as oa_mod
    from torchsvm.exceptions import SolverError
    from torchsvm.mip.model import MipResult

    real = oa_mod.solve_highs
    failed: list[bool] = []

    def failing(model, *args, **kwargs):  # type: ignore[no-untyped-def]
        if model.Q is None:  # the masters (MILPs) run as usual
            return real(model, *args, **kwargs)
        failed.append(True)
        if how == "raises":
            raise SolverError("HiGHS failed with model status Solve error")
        return MipResult(
            SolveStatus.error, None, math.nan, -math.inf, math.inf, 0.0, message="x"
        )

    monkeypatch.setattr(oa_mod, "solve_highs", failing)
    model = random_miqp(3)
    res = solve_convex_miqp(model, MipConfig(time_limit=60), qp_solver="highs")
    assert failed
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_oa_matches_scip_on_csvm(kernel: str) -> None:
    """The CSVM MIQP (kernel form for RBF) solved by OA and by the SCIP oracle."""
    pytest.importorskip("pyscipopt")
    from torchsvm.mip.csvm import build_csvm_model, csvm_start
    from torchsvm.mip.scip import solve_scip
    from torchsvm.problems.csvm import CsvmProblem

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=40) > 0, 1.0, -1.0)
    anchor = np.arange(40) >= 28
    p = CsvmProblem.from_data(
        X, y, anchor, C=5.0, kernel=kernel, gamma=0.5, min_tpr=0.9, hoeffding_alpha=None
    )
    model, layout, factor = build_csvm_model(p)
    cfg = MipConfig(time_limit=60, mip_rel_gap=1e-6)
    oa = solve_convex_miqp(model, cfg, csvm_start(p, layout).x, factor=factor)
    ref = solve_scip(model, cfg)
    assert oa.status is SolveStatus.optimal and ref.status is SolveStatus.optimal
    assert oa.objective == pytest.approx(ref.objective, rel=1e-4, abs=1e-6)
    assert oa.bound <= ref.objective * (1 + 1e-4) + 1e-6


def _dense_rbf_csvm_oa(n: int, time_limit: float) -> OuterApproximation:
    """OA state of an RBF CSVM in its kernel form (dense master) with one cut."""
    from torchsvm.mip.csvm import build_csvm_model
    from torchsvm.problems.csvm import CsvmProblem

    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 8))
    y = np.where(X[:, 0] + 0.9 * rng.normal(size=n) > 0, 1.0, -1.0)
    anchor = np.arange(n) >= n // 2
    p = CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=8.0,
        kernel="rbf",
        gamma=0.1,
        min_tpr=0.95,
        hoeffding_alpha=None,
        penalty="libsvm",
    )
    model, _, factor = build_csvm_model(p, "dual")
    oa = OuterApproximation(model, MipConfig(time_limit=time_limit), factor=factor)
    oa.lifted.add_cuts(np.ones(oa.lifted.k))
    return oa


def test_dense_master_stops_near_its_time_limit() -> None:
    # Regression (issue 19, German credit CSVM ran 306-584 s at a 300 s limit): HiGHS
    # reads its clock only between presolve, symmetry detection and the feasibility
    # jump, which on a dense master ran far past the limit (this master: 12-32 s at a
    # 1-2 s limit under load, 5e5 nonzeros); the master now runs without them.
    oa = _dense_rbf_csvm_oa(500, time_limit=1.0)
    assert oa.lifted.master_model().A.nnz > 400_000
    t0 = time.perf_counter()
    mres, _ = oa.master()
    took = time.perf_counter() - t0
    assert took <= 1.0 + 2.5, took
    assert mres.status in (SolveStatus.time_limit, SolveStatus.optimal)


def test_master_not_started_when_its_overrun_would_pass_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torchsvm.mip.outer_approx as oa_mod

    oa = _dense_rbf_csvm_oa(60, time_limit=5.0)
    oa._master_overrun = 10.0  # as if an earlier master had overrun by 10 s

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("HiGHS must not be started")

    monkeypatch.setattr(oa_mod, "solve_highs", fail)
    mres, _ = oa.master()
    assert mres.status is SolveStatus.time_limit
    assert mres.x is None
    # the loop turns it into a timed-out result with the incumbent and its gap
    with pytest.warns(SolverTimeLimitWarning):
        res = oa.run()
    assert res.status is SolveStatus.time_limit


@pytest.mark.parametrize("seed", range(3))
def test_rounding_heuristic_changes_no_optimum(seed: int) -> None:
    """Any assignment a rounding proposes (here: infeasible all-ones and all-zeros,
    and the relaxed point rounded) is only an incumbent candidate: same optimum as
    brute force, and each proposal is polished once."""
    model, d = svm_like_model(seed)
    n_int = int(np.sum(model.integrality))
    calls: list[int] = []

    def rounding(x: np.ndarray) -> list[np.ndarray]:
        calls.append(x.size)
        z = x[model.integrality]
        return [np.ones(n_int), np.zeros(n_int), np.round(z), np.round(z)]

    res = solve_convex_miqp(model, MipConfig(time_limit=30), rounding=rounding)
    assert calls == [model.n_cols]
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-6)


def test_rounding_of_the_wrong_shape_raises() -> None:
    model, _ = svm_like_model(0)
    with pytest.raises(ValueError, match="rounding returned an assignment of shape"):
        solve_convex_miqp(
            model, MipConfig(time_limit=30), rounding=lambda x: [np.ones(3)]
        )


@pytest.mark.parametrize("seed", range(3))
def test_master_with_incumbent_is_solved_tightly(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A master with an incumbent returns the master's optimum below the cutoff, not
    # the first assignment below it (a loose gap 0.5 took 4 masters instead of 1 on
    # the linear n = 500 CSVM under highspy 1.16.0; docs/benchmarks.md "Linear n =
    # 500"), and runs without HiGHS's sub-MIPs. Oracle: the same master model solved
    # by HiGHS without cutoff.
    import torchsvm.mip.outer_approx as oa_mod

    model, x0 = random_miqp_and_point(seed, nb=8, nc=4, m=6)
    # without the grid of tangent cuts, which would add rows to the master solved
    # (test_grid_cuts_bound_the_tangent_model_error covers it)
    oa = OuterApproximation(
        model, MipConfig(time_limit=60.0, mip_rel_gap=1e-4), grid=False
    )
    oa.lifted.add_cuts(oa.lifted.r_of(x0))
    assert oa.offer(x0)
    seen: list[tuple[MipConfig, dict]] = []
    real = oa_mod.solve_highs

    def spy(master, config, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((config, dict(kwargs.get("options") or {})))
        return real(master, config, **kwargs)

    monkeypatch.setattr(oa_mod, "solve_highs", spy)
    master = oa.lifted.master_model()
    mres, cutoff = oa.master()
    config, opts = seen[-1]
    assert config.mip_rel_gap <= 1e-4
    assert opts["objective_bound"] == cutoff
    assert opts["mip_heuristic_run_rins"] is False
    ref = solve_model(master, MipConfig(time_limit=60.0, mip_rel_gap=1e-9))
    assert ref.status is SolveStatus.optimal
    if ref.objective < cutoff - 1e-6 * max(1.0, abs(cutoff)):
        assert mres.x is not None
        assert mres.objective == pytest.approx(ref.objective, rel=1e-4, abs=1e-6)
    else:
        assert mres.x is None or mres.objective >= cutoff - 1e-6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("grid", [False, True])
def test_grid_cuts_keep_the_brute_force_optimum(seed: int, grid: bool) -> None:
    """The grid of tangent cuts under the first cutoff changes no optimum."""
    model, x0 = random_miqp_and_point(seed)
    res = solve_convex_miqp(model, MipConfig(time_limit=30), start=x0, grid=grid)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-5)
    assert res.bound <= res.objective + 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_grid_cuts_on_the_svm_model_keep_the_brute_force_optimum(seed: int) -> None:
    model, d = svm_like_model(seed)
    ref = brute_force(model)
    start = solve_convex_miqp(model, MipConfig(time_limit=30), grid=False)
    res = solve_convex_miqp(model, MipConfig(time_limit=30), start=start.x, grid=True)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_grid_cuts_bound_the_tangent_model_error(seed: int) -> None:
    """Over the box the grid spans, the tangent model is within g |U| / (2 k) of
    ``r_k^2 / 2`` in each dimension (so within g |U| / 2 in all), and the box holds
    the master points below the cutoff (oracle: HiGHS on the master without the
    grid)."""
    model, x0 = random_miqp_and_point(seed)
    g = 1e-3
    oa = OuterApproximation(model, MipConfig(time_limit=60.0, mip_rel_gap=g))
    assert oa._grid_pending  # k = 8 <= _GRID_MAX_K
    oa.lifted.add_cuts(oa.lifted.r_of(x0))
    assert oa.offer(x0)
    cutoff = oa.ub - g * max(1.0, abs(oa.ub))
    before = oa.lifted.master_model()
    n_before = sum(c.size for c in oa.lifted.cut_k)
    grown = oa.grid_cuts(before, cutoff, 30.0)
    ks = np.concatenate(oa.lifted.cut_k)[n_before:]
    rho = np.concatenate(oa.lifted.cut_rho)[n_before:]
    k = oa.lifted.k
    assert grown.n_rows == before.n_rows + ks.size
    assert set(ks.tolist()) == set(range(k))
    for kk in range(k):
        pts = np.sort(rho[ks == kk])
        r = np.linspace(pts[0], pts[-1], 2001)
        tangent = np.max(pts[:, None] * r[None, :] - 0.5 * pts[:, None] ** 2, axis=0)
        err = 0.5 * r**2 - tangent
        assert np.all(err >= -1e-9)  # tangents: below the epigraph everywhere
        if pts.size < 64:  # not widened by _GRID_MAX_PER_K
            assert err.max() <= g * max(1.0, abs(cutoff)) / (2 * k) * (1 + 1e-9)
    # the master's optimum below the cutoff (if any) lies in the box
    ref = solve_model(before, MipConfig(time_limit=60.0, mip_rel_gap=1e-9))
    if ref.status is SolveStatus.optimal and ref.objective <= cutoff:
        r_opt = ref.x[oa.lifted.n : oa.lifted.n + k]
        for kk in range(k):
            pts = rho[ks == kk]
            assert pts.min() - 1e-6 <= r_opt[kk] <= pts.max() + 1e-6


def test_grid_value_is_checked() -> None:
    model = random_miqp(0)
    with pytest.raises(ValueError, match="grid must be"):
        solve_convex_miqp(model, MipConfig(time_limit=10), grid="yes")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pool", [0, 8])
def test_master_pool_keeps_the_brute_force_optimum(seed: int, pool: int) -> None:
    """Polishing the masters' improving solutions changes no optimum."""
    model, x0 = random_miqp_and_point(seed)
    res = solve_convex_miqp(
        model, MipConfig(time_limit=30), start=x0, grid=False, master_pool=pool
    )
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-5)
    assert res.bound <= res.objective + 1e-9
    svm, _ = svm_like_model(seed)
    res = solve_convex_miqp(svm, MipConfig(time_limit=30), master_pool=pool)
    assert res.objective == pytest.approx(brute_force(svm), rel=1e-4, abs=1e-6)


def test_master_pool_holds_master_points_and_is_polished_once() -> None:
    """The pool's points are points of the model with integral integers (oracle:
    its own rows and bounds); each new assignment is polished once, then the pool
    is empty."""
    model, x0 = random_miqp_and_point(3, nb=8, nc=4)
    oa = OuterApproximation(model, MipConfig(time_limit=30), grid=False)
    oa.relax()
    oa.lifted.add_cuts(oa.lifted.r_of(x0))
    assert oa.offer(x0)
    mres, _ = oa.master()
    pool = list(oa._pool)
    if mres.x is not None:
        assert pool  # the final solution is an improving one
    for x in pool:
        assert np.array_equal(x[oa.integ], np.round(x[oa.integ]))
        ok, why = check_feasible(model, x, tol=1e-5)
        assert ok, why
    n_new = len({np.round(x[oa.integ]).astype(np.int64).tobytes() for x in pool})
    seen = len(oa.seen)
    runs = oa.polish_pool()
    assert runs == min(n_new, oa.master_pool) and len(oa.seen) == seen + runs
    assert oa._pool == [] and oa.polish_pool() == 0


def test_master_pool_value_is_checked() -> None:
    with pytest.raises(ValueError, match="master_pool must be"):
        solve_convex_miqp(random_miqp(0), MipConfig(time_limit=10), master_pool=-1)
