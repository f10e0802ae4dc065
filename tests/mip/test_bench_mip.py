"""scripts/bench_mip.py --tiny runs every section and writes its JSON lines."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

pytest.importorskip("pyscipopt")


@pytest.mark.slow
def test_bench_mip_tiny(tmp_path: pathlib.Path) -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "bench_mip", root / "scripts" / "bench_mip.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    assert mod.main(["--tiny", "--only", "fs60,csvm", "--out-dir", str(tmp_path)]) == 0
    (out,) = tmp_path.glob("mip-*-tiny.jsonl")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    fs = next(r for r in rows if r["section"] == "fs60")
    assert fs["ours_status"] == "optimal"
    assert fs["ours_size"] == fs["brute_force_size"]
    csvm = [r for r in rows if r["section"] == "csvm"]
    assert {r["kernel"] for r in csvm} == {"linear", "rbf"}
    for r in csvm:
        assert r["ours_obj"] == pytest.approx(r["scip_obj"], rel=1e-3)
