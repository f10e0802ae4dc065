"""Smoke test of scripts/reproduce_cost_sensitive.py (Ctrl1 vs Ctrl2 tables, SPEC S2)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location(
        "reproduce_cost_sensitive", ROOT / "scripts" / "reproduce_cost_sensitive.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_tiny_run_writes_units_and_resumes(tmp_path: Path) -> None:
    mod = _load()
    out, rep = tmp_path / "units", tmp_path / "report.md"
    argv = ["--tiny", "--out", str(out), "--report", str(rep)]
    assert mod.main(argv) == 0
    files = sorted(out.rglob("*.json"))
    assert len(files) == 2 * len(mod.TPRS)
    for f in files:
        u = json.loads(f.read_text())
        assert 0.0 <= u["mse_pos"] <= 1.0 and 0.0 <= u["mse_neg"] <= 1.0
        if u["control"] == "csvm":
            assert sum(u["mip_status"].values()) == 4
    text = rep.read_text()
    assert "Ctrl1 MSE+" in text and "| 0.95 |" in text
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert mod.main(argv) == 0  # resumes: no unit is refitted
    assert [f.stat().st_mtime_ns for f in files] == mtimes
