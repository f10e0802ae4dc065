"""Smoke run of scripts/bench_dea.py --tiny (the benchmark is not a test; this is)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_dea_tiny(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location(
        "bench_dea", ROOT / "scripts" / "bench_dea.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "dea.jsonl"
    assert mod.main(["--tiny", "--out", str(out)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["part"] for r in recs] == ["efficiency", "joint", "scale"]
    assert recs[0]["max_abs_diff"] < 1e-7
    assert all(r["status"] == "optimal" for r in recs[1]["rows"])
    assert "x" in capsys.readouterr().out
