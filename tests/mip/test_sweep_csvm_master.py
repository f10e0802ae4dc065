"""scripts/sweep_csvm_master.py: settings with further HiGHS options reach the masters."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from typing import Any

import pytest


def _load() -> Any:
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "sweep_csvm_master", root / "scripts" / "sweep_csvm_master.py"
    )
    mod = importlib.util.module_from_spec(spec)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_option_suffix_parsed_and_passed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod = _load()
    assert mod._option_value("false") is False
    assert mod._option_value("3") == 3
    assert mod._option_value("0.2") == 0.2
    assert mod._option_value("simplex") == "simplex"
    assert mod._SETTING.match("box-r2+mip_heuristic_effort=0+presolve=off")
    assert not mod._SETTING.match("box-r2+mip_heuristic_effort")
    seen: list[dict[str, Any]] = []
    orig = mod.oa_mod.OuterApproximation._run_master

    def spy(oa: Any, master: Any, config: Any, opts: Any) -> Any:
        seen.append(dict(opts or {}))
        return orig(oa, master, config, opts)

    monkeypatch.setattr(mod.oa_mod.OuterApproximation, "_run_master", spy)
    out = tmp_path / "sweep.jsonl"
    setting = "box-r2+mip_allow_cut_separation_at_nodes=false"
    args = ["--linear-sizes", "100", "--seeds", "3", "--settings", setting]
    assert mod.main([*args, "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["setting"] == setting and row["status"] == "optimal"
    last = seen[-1]
    assert last["mip_allow_cut_separation_at_nodes"] is False
    assert last["mip_pscost_minreliable"] == 2 and last["random_seed"] == 3
