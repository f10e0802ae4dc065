"""SCIP oracle (mip/scip.py) against HiGHS and brute force."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.model import MipConfig, check_feasible
from torchsvm.mip.solve import solve_model
from torchsvm.types import SolveStatus

from .test_highs import _hard_knapsack
from .test_outer_approx import brute_force, random_miqp

pytest.importorskip("pyscipopt")
from torchsvm.mip.scip import solve_scip  # noqa: E402


@pytest.mark.parametrize("seed", range(3))
def test_scip_miqp_matches_brute_force(seed: int) -> None:
    model = random_miqp(seed)
    res = solve_scip(model, MipConfig(time_limit=30, mip_rel_gap=1e-7))
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-6)
    assert check_feasible(model, res.x, tol=1e-5)[0]


def test_scip_milp_and_max_sense_match_highs() -> None:
    model = replace(random_miqp(4), Q=None)
    flipped = replace(model, c=-model.c, sense="max", offset=2.0)
    cfg = MipConfig(time_limit=30, mip_rel_gap=1e-9)
    for m in (model, flipped):
        assert solve_scip(m, cfg).objective == pytest.approx(
            solve_model(m, cfg).objective, rel=1e-6, abs=1e-7
        )


def test_scip_time_limit_warns_and_keeps_gap() -> None:
    model = _hard_knapsack()
    with pytest.warns(SolverTimeLimitWarning):
        res = solve_scip(model, MipConfig(time_limit=0.05, mip_rel_gap=0.0))
    assert res.status is SolveStatus.time_limit
    assert res.mip_gap >= 0.0
    assert np.isfinite(res.extra["scip_gap"]) or res.x is None
