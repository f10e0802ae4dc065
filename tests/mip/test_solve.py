"""Dispatch (mip/solve.py) and the HiGHS adapter alone (mip/highs.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from torchsvm.exceptions import SolverError
from torchsvm.mip import highs as highs_mod
from torchsvm.mip import solve as solve_mod
from torchsvm.mip.highs import solve_highs
from torchsvm.mip.model import MipConfig, validate_model
from torchsvm.mip.solve import solve_lp_batch, solve_model
from torchsvm.types import SolveStatus

from .test_outer_approx import brute_force, random_miqp


def test_miqp_goes_to_outer_approximation() -> None:
    model = random_miqp(0)
    res = solve_model(model, MipConfig(time_limit=30))
    assert res.status is SolveStatus.optimal
    assert res.n_iter >= 1  # master MILPs ran: the outer approximation solved it
    assert res.objective == pytest.approx(brute_force(model), rel=1e-4, abs=1e-6)


def test_qp_and_milp_go_to_highs() -> None:
    model = random_miqp(1)
    qp = replace(model, integrality=None)
    milp = replace(model, Q=None)
    cfg = MipConfig(time_limit=30)
    for m in (qp, milp):
        res = solve_model(m, cfg)
        ref = solve_highs(validate_model(m), cfg)
        assert res.n_iter == 0
        assert res.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-9)


def test_highs_adapter_refuses_miqp() -> None:
    with pytest.raises(ValueError, match="outer approximation"):
        solve_highs(validate_model(random_miqp(0)), MipConfig())


def test_qp_failure_falls_back_to_interior_point(monkeypatch) -> None:
    model = replace(random_miqp(2), integrality=None)
    ref = solve_model(model, MipConfig(time_limit=30))

    def failing(*args, **kwargs):
        raise SolverError("simulated HiGHS QP failure")

    monkeypatch.setattr(solve_mod, "solve_highs", failing)
    res = solve_model(model, MipConfig(time_limit=30))
    assert res.status is SolveStatus.optimal
    assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-7)
    with pytest.raises(SolverError, match="simulated"):
        solve_model(replace(model, Q=None), MipConfig(time_limit=30))


def test_batch_dispatches_miqp() -> None:
    models = [random_miqp(3), replace(random_miqp(3), Q=None)]
    out = solve_lp_batch(models, MipConfig(time_limit=30))
    assert out[0].n_iter >= 1
    assert out[0].objective == pytest.approx(brute_force(models[0]), rel=1e-4)
    assert out[1].objective <= out[0].objective + 1e-9  # dropping Q >= 0 lowers it


def test_status_table_covers_every_highs_status() -> None:
    hms = highs_mod.highspy.HighsModelStatus
    names = [n for n in dir(hms) if n.startswith("k")]
    missing = [n for n in names if getattr(hms, n) not in highs_mod._STATUS_MAP]
    assert not missing, missing


def test_highspy_imported_only_by_the_adapter() -> None:
    """No import cycle: highs.py imports no other mip module but model; only it
    imports highspy (and only scip.py imports pyscipopt)."""
    import ast
    import pathlib

    root = pathlib.Path(highs_mod.__file__).parent
    for path in root.glob("*.py"):
        mods = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods.add(node.module)
        if path.name != "highs.py":
            assert "highspy" not in mods, path.name
        else:
            assert {m for m in mods if m.startswith("torchsvm.mip")} == {
                "torchsvm.mip.model"
            }
        if path.name != "scip.py":
            assert "pyscipopt" not in mods, path.name
        assert not any("_solve_validated" in m for m in mods)
