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


def test_bench_mip_s5c_tiny(
    tmp_path: pathlib.Path, data_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The s5c section (issue 18): both QP paths prove the same optimum."""
    monkeypatch.setenv("TORCHSVM_DATA", str(data_dir))
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "bench_mip", root / "scripts" / "bench_mip.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    argv = ["--tiny", "--only", "s5c", "--s5c-C", "1", "--s5c-tprs", "0.97"]
    argv += ["--s5c-repeats", "1", "--out-dir", str(tmp_path)]
    assert mod.main(argv) == 0
    (out,) = tmp_path.glob("mip-*-tiny.jsonl")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    (row,) = [r for r in rows if r["section"] == "s5c"]
    assert row["status"] == {"ipm-dense": "optimal", "ipm": "optimal"}
    assert row["objective"]["ipm"] == pytest.approx(
        row["objective"]["ipm-dense"], rel=1e-6
    )
