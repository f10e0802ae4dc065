"""The DEA feature-selection protocol (SPEC S7) through the library."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from torchsvm.config import load_config
from torchsvm.experiments import dea, run_experiment

ROOT = Path(__file__).resolve().parents[2]


def test_full_config_follows_the_thesis_where_the_data_allow() -> None:
    cfg = load_config(ROOT / "configs" / "dea.toml")
    assert cfg.experiment == "dea" and cfg.protocol.seed == 0
    assert cfg.dea.p_max == 10 and cfg.mip.time_limit == 300.0 and cfg.dea.run_scale
    assert (cfg.dea.scale_k, cfg.dea.scale_m) == (1000, 100) and not cfg.dea.tiny
    used = dea._used(cfg, {})
    assert used["selection sizes"] == dea.THESIS["selection sizes"]
    assert used["objective"] == dea.THESIS["objective"]
    assert "synthetic: 1 x 100 (K = 1000)" in used["inputs x outputs"]


@pytest.mark.slow
@pytest.mark.data
def test_tiny_run_sections_and_oracles(tmp_path: Path, data_dir: Path) -> None:
    cfg = load_config(ROOT / "configs" / "dea-tiny.toml", [f"data.data_dir={data_dir}"])
    res = run_experiment(cfg, tmp_path)
    assert not res.failures, res.failures
    fig = json.loads((tmp_path / "report.json").read_text())["figures"]
    assert {
        "nve_path",
        "nve_cross",
        "pft_path",
        "pft_inputs",
        "pft_cross",
        "scale",
    } <= set(fig)
    for sec in ("nve_path", "pft_path"):
        v = [r["v"] for r in fig[sec]["rows"]]
        greedy = [r["greedy"] for r in fig[sec]["rows"]]
        # v(p) is non-decreasing and the exact selection is never below the greedy one
        assert np.all(np.diff(v) >= -1e-9) and np.all(np.subtract(v, greedy) >= -1e-9)
    # PFT has three outputs: v(3) is the full model's mean efficiency
    pft = fig["pft_path"]
    assert pft["rows"][-1]["p"] == 3
    assert pft["rows"][-1]["v"] == pytest.approx(pft["full_model"]["mean"], abs=1e-6)
    # the two efficiency engines (envelopment, multiplier LPs) agree
    assert fig["scale"]["max_abs_diff_between_methods"] < 1e-6
    pi = np.asarray(fig["nve_cross"]["1"]["pi"])
    assert pi.shape == (30,) and np.all((pi >= 0) & (pi <= 100))
    summary = (tmp_path / "summary.md").read_text()
    assert "| setting | thesis | this run |" in summary
    assert len(list(tmp_path.glob("dea_*.png"))) == 4
