"""What a caller hands to ``solve_csvm``: incumbents, a proven bound, tangent-cut points.

Used by the S5c path of Ctrl2 (issue 18): the solution at a higher floor is feasible
at every lower floor, and the bound at a lower floor is valid at every higher one. The
oracle for the optimum is brute force over ``z`` (tests/mip/test_csvm.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from torchsvm.exceptions import ConvergenceWarning
from torchsvm.mip.csvm import build_csvm_model, fit_s1, solution_start, solve_csvm
from torchsvm.mip.model import MipConfig, check_feasible, model_objective
from torchsvm.problems.csvm import CsvmProblem

from .test_csvm import brute_force_csvm, make_data

pytest.importorskip("cvxpy")


def s5c(kernel: str, min_tpr: float, C: float = 2.0) -> CsvmProblem:
    X, y = make_data(3, n=8)
    return CsvmProblem.from_data(
        X,
        y,
        None,
        C=C,
        kernel=kernel,
        gamma=0.5,
        min_tpr=min_tpr,
        hoeffding_alpha=None,
        on_training=True,
    )


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_solution_start_round_trips_a_solution(kernel: str) -> None:
    p = s5c(kernel, 1.0)
    sol = solve_csvm(p, MipConfig(time_limit=60))
    model, layout, _ = build_csvm_model(p)
    x = solution_start(p, layout, sol)
    assert x is not None
    ok, why = check_feasible(model, x, tol=1e-6)
    assert ok, why
    assert model_objective(model, x) == pytest.approx(sol.objective, rel=1e-6)


@pytest.mark.parametrize(
    "kernel", ["linear", pytest.param("rbf", marks=pytest.mark.slow)]
)
def test_incumbent_from_a_higher_floor_is_used_and_the_optimum_is_exact(
    kernel: str,
) -> None:
    high = solve_csvm(s5c(kernel, 1.0), MipConfig(time_limit=60))
    low = s5c(kernel, 0.6)
    # no start and no master round: only the handed-over incumbent can be returned
    with pytest.warns(ConvergenceWarning):
        only = solve_csvm(
            low,
            MipConfig(time_limit=60),
            use_start=False,
            incumbents=[high],
            max_rounds=0,
        )
    assert only.objective <= high.objective + 1e-9
    full = solve_csvm(low, MipConfig(time_limit=60), incumbents=[high])
    ref = brute_force_csvm(low, "primal" if kernel == "linear" else "dual")
    assert full.status == "optimal"
    assert full.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)


def test_lower_bound_closes_the_gap_without_a_master() -> None:
    p = s5c("linear", 0.8)
    sol = solve_csvm(p, MipConfig(time_limit=60))
    again = solve_csvm(
        p, MipConfig(time_limit=60), incumbents=[sol], lower_bound=sol.bound
    )
    assert again.status == "optimal"
    assert again.n_iter == 0
    assert again.objective == pytest.approx(sol.objective, rel=1e-6)


def test_cut_points_keep_the_optimum() -> None:
    X, y = make_data(1, n=20)
    anchor = np.arange(20) >= 13
    p = CsvmProblem.from_data(X, y, anchor, C=5.0, min_tpr=0.9, hoeffding_alpha=None)
    W = np.random.default_rng(0).normal(size=(6, 2))
    sol = solve_csvm(p, MipConfig(time_limit=60), cut_points=W)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(brute_force_csvm(p, "primal"), rel=1e-4)
    prbf = CsvmProblem.from_data(
        X, y, anchor, C=5.0, kernel="rbf", min_tpr=0.9, hoeffding_alpha=None
    )
    with pytest.raises(ValueError, match="primal form"):
        solve_csvm(prbf, MipConfig(time_limit=60), cut_points=W)
    with pytest.raises(ValueError, match="shape"):
        solve_csvm(p, MipConfig(time_limit=60), cut_points=np.zeros((2, 3)))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_libsvm_s1_equals_the_batched_s1(kernel: str) -> None:
    X, y = make_data(2, n=40)
    anchor = np.arange(40) >= 25
    p = CsvmProblem.from_data(
        X, y, anchor, C=4.0, kernel=kernel, gamma=0.5, min_tpr=0.9, hoeffding_alpha=None
    )
    a = fit_s1(p)
    b = fit_s1(p, solver="libsvm")
    np.testing.assert_allclose(b.dual_coef, a.dual_coef, atol=1e-5)
    assert b.intercept == pytest.approx(a.intercept, abs=1e-5)
    with pytest.raises(ValueError, match="solver"):
        fit_s1(p, solver="smo")
    with pytest.raises(ValueError, match="s1_solver"):
        solve_csvm(p, MipConfig(time_limit=10), s1_solver="smo")
