"""Smoke run of scripts/reproduce_dea.py --tiny."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.data
def test_reproduce_dea_tiny(tmp_path, data_dir):
    spec = importlib.util.spec_from_file_location(
        "reproduce_dea", ROOT / "scripts" / "reproduce_dea.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (
        mod.main(["--tiny", "--out", str(tmp_path), "--data-dir", str(data_dir)]) == 0
    )
    res = json.loads((tmp_path / "dea_tiny.json").read_text())
    assert {"nve_path", "nve_cross", "pft_path", "pft_inputs", "scale"} <= set(res)
    assert (tmp_path / "dea_tiny.md").read_text().startswith("# DEA")
    assert len(list(tmp_path.glob("dea_tiny_*.png"))) == 4
