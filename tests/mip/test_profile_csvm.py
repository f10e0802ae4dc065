"""scripts/profile_csvm.py splits a solve into parts that add up and replays its master."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest


def test_profile_csvm_small(tmp_path: pathlib.Path) -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "profile_csvm", root / "scripts" / "profile_csvm.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    out = tmp_path / "prof.jsonl"
    args = ["--linear-sizes", "120", "--seeds", "2", "--no-scip", "--out", str(out)]
    assert mod.main(args) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    for key in ("default", "optimum_incumbent"):
        run = row[key]
        # the parts are disjoint pieces of the call: never more than its wall time
        assert sum(run["parts"].values()) <= run["total"] * (1 + 1e-9)
        assert run["parts"]["masters"] > 0
        assert len(run["masters"]) >= 1
    # the optimum handed over as incumbent is the same optimum (gap 1e-4)
    a, b = row["default"]["obj"], row["optimum_incumbent"]["obj"]
    assert b == pytest.approx(a, rel=2e-4)
    # replaying the first master is the same model: it ends, whatever the seed
    assert [r["seed"] for r in row["replays"]["default"]] == [0, 1]
    done = {"Optimal", "Objective bound", "Infeasible"}
    assert all(r["status"] in done for r in row["replays"]["default"])
