"""Dense QP interior point (mip/qp_ipm.py) against the HiGHS QP."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from torchsvm.mip.highs import solve_highs
from torchsvm.mip.model import MipConfig, MipModel, check_feasible, validate_model
from torchsvm.mip.qp_ipm import solve_qp_ipm
from torchsvm.types import SolveStatus

from .test_outer_approx import random_miqp


@pytest.mark.parametrize("seed", range(4))
def test_qp_ipm_matches_highs_qp(seed: int) -> None:
    model = random_miqp(seed)
    qp = validate_model(replace(model, integrality=None))
    ref = solve_highs(qp, MipConfig(time_limit=30))
    res = solve_qp_ipm(qp)
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-7)
    assert check_feasible(qp, res.x, tol=1e-7)[0]


def test_qp_ipm_equality_rows_and_fixed_columns() -> None:
    """Equality-defined free columns (substitution path) and fixed columns."""
    rng = np.random.default_rng(5)
    n = 6
    G = rng.normal(size=(n, n))
    Q = G @ G.T + 0.1 * np.eye(n)
    A = sp.csr_array(rng.normal(size=(2, n)))
    lo = np.full(n, -np.inf)
    up = np.full(n, np.inf)
    lo[0] = up[0] = 0.3  # fixed column
    qp = validate_model(
        MipModel(
            c=rng.normal(size=n),
            A=A,
            row_lower=np.array([1.0, -np.inf]),
            row_upper=np.array([1.0, 2.0]),
            col_lower=lo,
            col_upper=up,
            Q=Q,
        )
    )
    ref = solve_highs(qp, MipConfig(time_limit=30))
    res = solve_qp_ipm(qp)
    assert res.status is SolveStatus.optimal
    assert res.x[0] == pytest.approx(0.3)
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-7)


def test_qp_ipm_time_limit_gives_no_point() -> None:
    model = validate_model(replace(random_miqp(0), integrality=None))
    res = solve_qp_ipm(model, time_limit=0.0)
    assert res.status is SolveStatus.time_limit
    assert res.x is None


def _dense_box_qp(n: int = 800) -> MipModel:
    """Box-constrained QP with a dense PSD Q: one Newton system of n rows per iteration."""
    rng = np.random.default_rng(3)
    B = rng.normal(size=(n, 20))
    return validate_model(
        MipModel(
            c=rng.normal(size=n),
            A=None,
            row_lower=np.zeros(0),
            row_upper=np.zeros(0),
            col_lower=np.full(n, -1.0),
            col_upper=np.full(n, 1.0),
            Q=B @ B.T + np.eye(n),
        )
    )


def test_qp_ipm_starts_no_iteration_predicted_past_the_limit() -> None:
    """Issue 19: the first dense iteration was always made, whatever the limit left."""
    qp = _dense_box_qp()
    probe = solve_qp_ipm(qp, max_iter=2)
    assert probe.n_iter == 2
    t_iter = probe.runtime / 2
    # a limit well under one iteration (but above the set-up): the timed-LU
    # prediction stops the call before its first iteration
    res = solve_qp_ipm(qp, time_limit=0.25 * t_iter)
    assert res.status is SolveStatus.time_limit and res.x is None
    assert res.n_iter == 0
    # a given per-iteration time is used as the prediction
    res = solve_qp_ipm(qp, time_limit=5.0, iter_time=10.0)
    assert res.status is SolveStatus.time_limit and res.n_iter == 0
    assert res.runtime < 5.0
    full = solve_qp_ipm(qp, time_limit=60.0, iter_time=t_iter)
    assert full.status is SolveStatus.optimal and full.n_iter > 2


# ---------------------------------------------------------------- sparse Newton system
@pytest.mark.parametrize("seed", range(4))
def test_qp_ipm_sparse_newton_matches_dense_and_highs(seed: int) -> None:
    """linalg="sparse" (augmented system, SuperLU) = the dense normal equations."""
    qp = validate_model(replace(random_miqp(seed), integrality=None))
    ref = solve_highs(qp, MipConfig(time_limit=30))
    dense = solve_qp_ipm(qp, linalg="dense")
    sparse = solve_qp_ipm(qp, linalg="sparse")
    assert dense.status is sparse.status is SolveStatus.optimal
    assert "sparse" in sparse.message and "dense" in dense.message
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-9, abs=1e-10)
    assert sparse.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-7)
    assert check_feasible(qp, sparse.x, tol=1e-7)[0]


def test_qp_ipm_sparse_newton_with_equality_rows() -> None:
    """The sparse branch with equality rows (the rebuilt augmented system)."""
    rng = np.random.default_rng(7)
    n = 8
    B = rng.normal(size=(n, 3))
    A = sp.csr_array(rng.normal(size=(4, n)))
    qp = validate_model(
        MipModel(
            c=rng.normal(size=n),
            A=A,
            row_lower=np.array([0.5, -1.0, -np.inf, -np.inf]),
            row_upper=np.array([0.5, -1.0, 2.0, 1.0]),
            col_lower=np.full(n, -3.0),
            col_upper=np.full(n, 3.0),
            Q=B @ B.T,
        )
    )
    ref = solve_highs(qp, MipConfig(time_limit=30))
    res = solve_qp_ipm(qp, linalg="sparse")
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-7)
    assert check_feasible(qp, res.x, tol=1e-7)[0]


def _s5c_model(n: int = 240, d: int = 4, seed: int = 0) -> tuple[MipModel, np.ndarray]:
    """Linear S5c (primal form, Ctrl2's penalty and M) with a TPR floor of 0.97, and
    the ``z`` of its sliding-b start (feasible)."""
    from torchsvm.mip.csvm import build_csvm_model, csvm_start
    from torchsvm.problems.csvm import CsvmProblem

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.9 * rng.normal(size=n) > 0, 1.0, -1.0)
    p = CsvmProblem.from_data(
        X,
        y,
        None,
        C=1.0,
        kernel="linear",
        min_tpr=0.97,
        hoeffding_alpha=None,
        on_training=True,
        penalty="libsvm",
        big_m=1000.0,
        sample_weight=rng.integers(0, 3, n).astype(float),
    )
    model, layout, _ = build_csvm_model(p, "primal")
    start = csvm_start(p, layout, s1_solver="libsvm")
    assert start.x is not None
    return model, start.x[layout.z]


def _cvxpy_qp(model: MipModel) -> float:
    """The QP (integrality dropped) in cvxpy / Clarabel; ``Q`` is diagonal here."""
    cp = pytest.importorskip("cvxpy")
    Q = sp.csr_array(model.Q)
    q = Q.diagonal()
    assert Q.count_nonzero() == np.count_nonzero(q)
    x = cp.Variable(model.n_cols)
    A = sp.csr_array(model.A)
    cons = []
    lo, up = np.asarray(model.col_lower), np.asarray(model.col_upper)
    fin = np.isfinite(lo)
    cons.append(x[np.flatnonzero(fin)] >= lo[fin])
    fin = np.isfinite(up)
    cons.append(x[np.flatnonzero(fin)] <= up[fin])
    rl, ru = np.asarray(model.row_lower), np.asarray(model.row_upper)
    cons.append(A[np.isfinite(rl)] @ x >= rl[np.isfinite(rl)])
    cons.append(A[np.isfinite(ru)] @ x <= ru[np.isfinite(ru)])
    obj = model.c @ x + 0.5 * cp.sum(cp.multiply(q, cp.square(x))) + model.offset
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def test_qp_ipm_s5c_relaxation_sparse_by_default_same_optimum() -> None:
    """Issue 18: the linear S5c relaxation (binding TPR floor) takes the sparse Newton
    system by default; it and a fixed-z QP reach the dense path's and Clarabel's
    optimum."""
    model, z = _s5c_model()
    model = validate_model(model)
    integ = np.asarray(model.integrality, dtype=bool)
    relax = replace(model, integrality=None)
    auto = solve_qp_ipm(relax)
    dense = solve_qp_ipm(relax, linalg="dense")
    assert auto.status is dense.status is SolveStatus.optimal
    assert "sparse" in auto.message
    ref = _cvxpy_qp(relax)
    assert auto.objective == pytest.approx(dense.objective, rel=1e-7, abs=1e-8)
    assert auto.objective == pytest.approx(ref, rel=1e-6, abs=1e-7)
    assert check_feasible(relax, auto.x, tol=1e-7)[0]
    # fixed z: the sliding-b start's (feasible)
    assert np.isclose(z, 1.0).sum() >= 0.5 * z.size
    lo, up = model.col_lower.copy(), model.col_upper.copy()
    lo[integ] = up[integ] = z
    fixed = replace(relax, col_lower=lo, col_upper=up)
    a = solve_qp_ipm(fixed, linalg="sparse")
    b = solve_qp_ipm(fixed, linalg="dense")
    assert a.status is b.status is SolveStatus.optimal
    assert a.objective == pytest.approx(b.objective, rel=1e-7, abs=1e-8)
    assert a.objective == pytest.approx(_cvxpy_qp(fixed), rel=1e-6, abs=1e-7)


def test_qp_ipm_linalg_is_validated() -> None:
    qp = validate_model(replace(random_miqp(0), integrality=None))
    with pytest.raises(ValueError, match="linalg"):
        solve_qp_ipm(qp, linalg="cholmod")
