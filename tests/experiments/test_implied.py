"""Implied-posterior protocol (SPEC S3) through the library (replaces the script test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsvm.config import load_config
from torchsvm.experiments import run_experiment

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.data
def test_tiny_run_has_german_tables_cv_and_plot(tmp_path: Path) -> None:
    res = run_experiment(load_config(ROOT / "configs" / "implied-tiny.toml"), tmp_path)
    assert not res.failures
    fig = res.report["figures"]
    methods = {"raw_minmax", "platt", "implied", "implied_isotonic"}
    assert set(fig["german"]["metrics"]) == methods
    for m in methods:
        assert 0.0 <= fig["german"]["metrics"][m]["auc"] <= 1.0
    lo, hi = fig["german_general"]["z_pos_range"]
    assert 0.0 <= lo <= hi  # weights z+ of the eq. 12 grid (may exceed 1)
    assert set(fig["cv"]) == {"heart_statlog"}
    assert fig["cv"]["heart_statlog"]["folds_done"] == 3
    assert (tmp_path / "implied_german_calibration.png").is_file()
    assert (tmp_path / "summary.md").read_text().startswith("# Implied posterior")
