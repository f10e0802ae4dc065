"""Issue-18 rerun defects of the CSVM engine (SPEC S5): start quality, bounds, limits.

Oracles: the objective of the start the MIQP is handed (an upper bound on the optimum,
so the returned classifier can never be worse), the previous zeroing-only dual start,
and the brute-force/SCIP tests of test_csvm.py for optimality.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from torchsvm.estimators.csvm import ConstrainedSVC, SlidingInterceptSVC
from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.csvm import (
    _dual_start,
    build_csvm_model,
    csvm_start,
    fit_s1,
    solve_csvm,
    start_objective,
)
from torchsvm.mip.model import MipConfig, check_feasible
from torchsvm.problems.csvm import CsvmProblem, FloorCappedWarning


def _capped_problem(
    n: int = 160, seed: int = 0
) -> tuple[CsvmProblem, np.ndarray, np.ndarray]:
    """RBF, TPR floor with a Hoeffding margin that caps at 1 (every J+ row at margin 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, 4))
    y = np.where(X[:, 0] + 0.6 * X[:, 1] + 0.8 * rng.normal(size=2 * n) > 0, 1.0, -1.0)
    anchor = np.zeros(n, dtype=bool)
    anchor[n // 2 :] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FloorCappedWarning)
        p = CsvmProblem.from_data(
            X[:n],
            y[:n],
            anchor,
            C=8.0,
            kernel="rbf",
            gamma=0.25,
            min_tpr=0.95,
            hoeffding_alpha=0.05,
            penalty="libsvm",
        )
    assert p.floors[0].floor == 1.0
    return p, X[n:], y[n:]


def test_dual_start_refits_beat_the_zeroing_start_and_stay_feasible() -> None:
    p, _, _ = _capped_problem()
    model, layout, _ = build_csvm_model(p)
    s1 = fit_s1(p)
    old = _dual_start(p, layout, s1)  # zeroing alone (the earlier start)
    new = csvm_start(p, layout, s1)
    assert new.x is not None and old.x is not None
    assert check_feasible(model, new.x, tol=1e-7)[0]
    assert start_objective(p, layout, new.x) <= start_objective(p, layout, old.x) + 1e-9


@pytest.mark.slow
def test_csvm_never_worse_than_its_start_and_not_degenerate() -> None:
    p, Xte, yte = _capped_problem()
    _, layout, _ = build_csvm_model(p)
    start = csvm_start(p, layout)
    assert start.x is not None
    # the start is optimal here and the solve proves it in about 8 s; with a 20 s limit
    # under load a time-limited call once returned an incumbent 5e-7 relative above
    # the start (inside the gap), so the limit leaves room for the proof
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        sol = solve_csvm(p, MipConfig(time_limit=120))
    assert sol.objective <= start_objective(p, layout, start.x) + 1e-7
    assert math.isfinite(sol.mip_gap) and sol.bound <= sol.objective + 1e-9
    # every J+ row is met (the capped floor) and the held-out negatives are not all
    # labelled positive, as the degenerate start did
    f = sol.decision_function(p.X)
    J = p.floor_idx
    assert np.all(f[J[p.y[J] > 0]] > 0)
    tnr = float(np.mean(sol.decision_function(Xte)[yte < 0] <= 0))
    assert tnr >= 0.3


def test_time_limit_bounds_the_whole_csvm_call_with_a_finite_gap() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 5))
    y = np.where(X[:, 0] + 0.9 * rng.normal(size=600) > 0, 1, 0)
    limit = 3.0
    clf = ConstrainedSVC(
        C=8.0, kernel="rbf", gamma=0.2, min_tpr=0.95, penalty="libsvm", time_limit=limit
    )
    # The limit is checked between steps, so it is overshot by the last step's CPU
    # time stretched by the share of a core this process gets: the slack scales
    # with the fit's wall / CPU ratio (at least 1). One BLAS and torch thread keeps
    # that ratio meaningful (spinning threads count as CPU time) and keeps the
    # model's eigendecomposition of the 600 x 600 Gram matrix, before the first
    # check, from taking 3-5 s under thread contention (measured at load 7 on 2
    # cores with 2 threads; 0.1-0.2 s with one). A solver that ignored the limit
    # would still fail: without one, this instance takes 16 CPU s to prove.
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0, c0 = time.perf_counter(), time.process_time()
            clf.fit(X, y)
            elapsed = time.perf_counter() - t0
            stretch = max(1.0, elapsed / max(time.process_time() - c0, 1e-3))
            slid = SlidingInterceptSVC(
                C=8.0, kernel="rbf", gamma=0.2, min_tpr=0.95, penalty="libsvm"
            ).fit(X, y)
    finally:
        torch.set_num_threads(n_threads)
    # the estimator's own set-up (Gram, anchor split) is outside solve_csvm's limit
    assert clf.solve_time_ <= limit + 1.5 * stretch
    assert elapsed <= limit + 4.0 * stretch
    assert math.isfinite(clf.mip_gap_)
    # both meet the floor on J+
    assert clf.achieved_rates_["tpr"] >= clf.floors_["tpr"] - 1e-12
    assert slid.achieved_rates_["tpr"] >= slid.floors_["tpr"] - 1e-12


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_linear_start_candidates_feasible(form: str) -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=80) > 0, 1.0, -1.0)
    anchor = np.arange(80) >= 40
    p = CsvmProblem.from_data(
        X, y, anchor, C=4.0, min_tpr=0.9, hoeffding_alpha=None, penalty="libsvm"
    )
    model, layout, _ = build_csvm_model(p, form)
    st = csvm_start(p, layout)
    assert st.x is not None
    assert check_feasible(model, st.x, tol=1e-7)[0]
