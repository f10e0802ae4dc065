"""Ctrl1 vs Ctrl2 protocol: the t = 0 column and the Ctrl1 TPR shift."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsvm.config import ConfigError, load_config
from torchsvm.experiments import run_experiment

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "cost_sensitive-tiny.toml"


@pytest.mark.slow
def test_uncontrolled_column_and_ctrl1_never_lowers_tpr(tmp_path: Path) -> None:
    res = run_experiment(load_config(TINY), tmp_path)
    assert not res.failures
    fig = res.report["figures"]["breast_cancer"]
    assert set(fig) == {"0.00", "0.50", "1.00"}
    # t = 0 is one fit, reported under both controls
    assert fig["0.00"]["Ctrl1"] == fig["0.00"]["Ctrl2"]
    assert sum(k.endswith("/none") for k in res.results) == 1
    # Ctrl1 only lowers the vote threshold: held-out TPR never drops below t = 0's
    for t in ("0.50", "1.00"):
        assert fig[t]["Ctrl1"]["tpr"] >= fig["0.00"]["Ctrl1"]["tpr"]
    assert "| 0 (none) |" in (tmp_path / "summary.md").read_text()


def test_imposed_tpr_must_be_in_0_1() -> None:
    with pytest.raises(ConfigError, match="cost_sensitive.tprs"):
        load_config(TINY, ["cost_sensitive.tprs=[0.0, 0.5]"])
