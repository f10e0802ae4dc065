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
