"""HiGHS adapter vs scipy.optimize (linprog / milp), closed-form QPs and brute force."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp, minimize

from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.model import MipConfig, MipModel, check_feasible
from torchsvm.mip.solve import solve_lp_batch, solve_model
from torchsvm.types import SolveStatus


def _random_lp(rng: np.random.Generator, n: int = 6, m: int = 5) -> MipModel:
    A = rng.normal(size=(m, n))
    x0 = rng.uniform(0, 1, n)
    return MipModel(
        c=rng.normal(size=n),
        A=sp.csr_array(A),
        row_lower=np.full(m, -np.inf),
        row_upper=A @ x0 + rng.uniform(0, 1, m),
        col_lower=np.zeros(n),
        col_upper=np.full(n, 3.0),
    )


@pytest.mark.parametrize("seed", range(5))
def test_lp_matches_linprog(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = _random_lp(rng)
    ref = linprog(
        m.c,
        A_ub=m.A.toarray(),
        b_ub=m.row_upper,
        bounds=list(zip(m.col_lower, m.col_upper)),
        method="highs",
    )
    res = solve_model(m)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.fun, rel=1e-7, abs=1e-8)
    assert res.bound == pytest.approx(res.objective)
    assert res.mip_gap == 0.0
    np.testing.assert_allclose(res.row_duals, ref.ineqlin.marginals, atol=1e-7)
    assert check_feasible(m, res.x)[0]


def test_lp_max_sense_and_equality_rows() -> None:
    rng = np.random.default_rng(3)
    n = 5
    A = rng.uniform(0.1, 1, size=(2, n))
    b = A @ np.full(n, 0.5)
    m = MipModel(
        c=rng.uniform(0, 1, n),
        A=sp.csr_array(A),
        row_lower=b,
        row_upper=b,
        col_lower=np.zeros(n),
        col_upper=np.ones(n),
        sense="max",
        offset=2.0,
    )
    ref = linprog(-m.c, A_eq=A, b_eq=b, bounds=[(0, 1)] * n, method="highs")
    res = solve_model(m)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(-ref.fun + 2.0, rel=1e-8)
    np.testing.assert_allclose(A @ res.x, b, atol=1e-7)


@pytest.mark.parametrize("seed", range(4))
def test_milp_matches_scipy_milp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 10, 4
    A = rng.uniform(0, 1, size=(m, n))
    integ = np.arange(n) < 7
    model = MipModel(
        c=-rng.uniform(0, 1, n),
        A=sp.csr_array(A),
        row_lower=np.full(m, -np.inf),
        row_upper=A.sum(axis=1) * 0.4,
        col_lower=np.zeros(n),
        col_upper=np.where(integ, 1.0, 2.0),
        integrality=integ,
    )
    ref = milp(
        model.c,
        constraints=LinearConstraint(A, -np.inf, model.row_upper),
        integrality=integ.astype(int),
        bounds=Bounds(model.col_lower, model.col_upper),
    )
    res = solve_model(model)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.fun, rel=1e-6, abs=1e-8)
    assert res.mip_gap <= 1e-4
    assert np.all(res.x[integ] == np.round(res.x[integ]))


def test_qp_equality_matches_kkt_system() -> None:
    rng = np.random.default_rng(0)
    n, m = 6, 2
    G = rng.normal(size=(n, n))
    Q = G @ G.T + np.eye(n)
    c = rng.normal(size=n)
    A = rng.normal(size=(m, n))
    b = rng.normal(size=m)
    kkt = np.block([[Q, A.T], [A, np.zeros((m, m))]])
    x_ref = np.linalg.solve(kkt, np.concatenate([-c, b]))[:n]
    model = MipModel(
        c=c,
        A=sp.csr_array(A),
        row_lower=b,
        row_upper=b,
        col_lower=np.full(n, -np.inf),
        col_upper=np.full(n, np.inf),
        Q=Q,
    )
    res = solve_model(model)
    assert res.status is SolveStatus.optimal
    np.testing.assert_allclose(res.x, x_ref, atol=1e-5)
    assert res.objective == pytest.approx(c @ x_ref + 0.5 * x_ref @ Q @ x_ref, rel=1e-7)


def test_box_qp_matches_lbfgsb() -> None:
    rng = np.random.default_rng(1)
    n = 8
    G = rng.normal(size=(n, n))
    Q = sp.csr_array(G @ G.T)
    c = rng.normal(size=n) * 3
    model = MipModel(
        c=c,
        A=None,
        row_lower=np.zeros(0),
        row_upper=np.zeros(0),
        col_lower=np.zeros(n),
        col_upper=np.ones(n),
        Q=Q,
    )
    res = solve_model(model)
    ref = minimize(
        lambda x: c @ x + 0.5 * x @ (Q @ x),
        np.full(n, 0.5),
        jac=lambda x: c + Q @ x,
        bounds=[(0, 1)] * n,
        method="L-BFGS-B",
        options={"ftol": 1e-14, "gtol": 1e-10},
    )
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.fun, rel=1e-6, abs=1e-7)


def test_infeasible_and_unbounded() -> None:
    inf = MipModel(
        c=np.ones(2),
        A=sp.csr_array(np.array([[1.0, 1.0]])),
        row_lower=np.array([5.0]),
        row_upper=np.array([np.inf]),
        col_lower=np.zeros(2),
        col_upper=np.ones(2),
        integrality=np.array([True, False]),
    )
    res = solve_model(inf)
    assert res.status is SolveStatus.infeasible
    assert res.x is None
    assert math.isinf(res.mip_gap)
    unb = MipModel(
        c=np.array([-1.0, 0.0]),
        A=None,
        row_lower=np.zeros(0),
        row_upper=np.zeros(0),
        col_lower=np.zeros(2),
        col_upper=np.full(2, np.inf),
    )
    assert solve_model(unb).status is SolveStatus.unbounded


def _hard_knapsack(n: int = 120, m: int = 6) -> MipModel:
    rng = np.random.default_rng(7)
    A = rng.integers(1000, 10000, size=(m, n)).astype(float)
    return MipModel(
        c=-(A.sum(axis=0) / m + rng.integers(0, 3000, n)),
        A=sp.csr_array(A),
        row_lower=np.full(m, -np.inf),
        row_upper=A.sum(axis=1) / 2,
        col_lower=np.zeros(n),
        col_upper=np.ones(n),
        integrality=np.ones(n, dtype=bool),
    )


def test_time_limit_returns_incumbent_and_warns() -> None:
    model = _hard_knapsack()
    start = np.zeros(model.n_cols)
    with pytest.warns(SolverTimeLimitWarning):
        res = solve_model(
            model, MipConfig(time_limit=0.05, mip_rel_gap=0.0), start=start
        )
    assert res.status is SolveStatus.time_limit
    assert res.x is not None
    assert res.start_feasible is True
    assert check_feasible(model, res.x)[0]
    assert res.objective <= 0.0
    assert res.bound <= res.objective + 1e-9
    assert 0.0 <= res.mip_gap < math.inf


def test_start_is_checked() -> None:
    model = _hard_knapsack(n=10, m=2)
    res = solve_model(model, start=np.ones(10))
    assert res.start_feasible is False
    assert res.status is SolveStatus.optimal


def test_lp_batch_matches_single() -> None:
    rng = np.random.default_rng(11)
    models = [_random_lp(rng) for _ in range(6)]
    batch = solve_lp_batch(models, MipConfig(time_limit=10))
    for m, r in zip(models, batch):
        assert r.objective == pytest.approx(solve_model(m).objective, rel=1e-9)


def _base(**kw: object) -> MipModel:
    d = dict(
        c=np.ones(2),
        A=sp.csr_array(np.ones((1, 2))),
        row_lower=np.zeros(1),
        row_upper=np.ones(1),
        col_lower=np.zeros(2),
        col_upper=np.ones(2),
    )
    d.update(kw)
    return MipModel(**d)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"c": np.ones(3)}, "columns"),
        ({"c": np.array([np.nan, 1.0])}, "c contains NaN"),
        ({"row_upper": np.ones(2)}, "row_upper must have shape"),
        ({"col_lower": np.array([2.0, 0.0])}, "col_lower"),
        ({"row_lower": np.array([np.inf])}, "row_lower may not contain"),
        ({"integrality": np.ones(3, bool)}, "integrality must have shape"),
        ({"Q": np.eye(3)}, "Q must have shape"),
        ({"Q": np.array([[1.0, 1.0], [0.0, 1.0]])}, "symmetric"),
        ({"sense": "maximise"}, "sense"),
        ({"A": sp.csr_array(np.array([[np.nan, 1.0]]))}, "A contains NaN"),
    ],
)
def test_bad_input_raises(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        solve_model(_base(**kw))


def test_bad_config_raises() -> None:
    with pytest.raises(ValueError, match="time_limit"):
        MipConfig(time_limit=0)
    with pytest.raises(ValueError, match="mip_rel_gap"):
        MipConfig(mip_rel_gap=-1)


def test_no_warning_when_optimal() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolverTimeLimitWarning)
        assert solve_model(_base()).status is SolveStatus.optimal


@pytest.mark.parametrize("seed", range(3))
def test_persistent_lp_with_options_matches_linprog(seed: int) -> None:
    """PersistentLp's extra HiGHS options are set, and its re-solves under new costs
    (the primal simplex, as the CSVM anchor tightening runs them) match linprog."""
    from torchsvm.mip.highs import PersistentLp

    rng = np.random.default_rng(seed)
    m = _random_lp(rng)
    plp = PersistentLp(m, MipConfig(time_limit=10), options={"simplex_strategy": 4})
    assert plp._h.getOptionValue("simplex_strategy")[-1] == 4
    cols = np.arange(m.n_cols)
    for _ in range(4):
        c = rng.normal(size=m.n_cols)
        plp.change_costs(cols, c)
        got = plp.solve(10.0)
        ref = linprog(
            c,
            A_ub=m.A.toarray(),
            b_ub=m.row_upper,
            bounds=list(zip(m.col_lower, m.col_upper)),
        )
        assert got.status is SolveStatus.optimal
        assert got.objective == pytest.approx(ref.fun, rel=1e-7, abs=1e-8)
