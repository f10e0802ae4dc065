"""Sensitivity-control protocol (SPEC S1 / S1b) through the library (replaces the script test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from torchsvm.config import load_config
from torchsvm.experiments import run_experiment

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.data
def test_tiny_sweep_gives_roc_curves(tmp_path: Path) -> None:
    res = run_experiment(
        load_config(ROOT / "configs" / "sensitivity-tiny.toml"), tmp_path
    )
    assert not res.failures
    r = res.report["figures"]["heart_statlog"]
    assert set(r) == {"box", "diagonal"}
    for scheme in ("box", "diagonal"):
        assert len(r[scheme]["tpr"]) == 5 and 0.5 < r[scheme]["auc"] <= 1.0
        assert r[scheme]["n"] == 90 and r[scheme]["folds_done"] == 3
    # a larger C+ never makes the box scheme predict fewer positives (pooled TPR)
    assert np.all(np.diff(r["box"]["tpr"]) >= -1e-12)
    assert (tmp_path / "sensitivity_roc.png").is_file()


def test_dataset_without_sigma_is_refused() -> None:
    cfg = load_config(
        ROOT / "configs" / "sensitivity-tiny.toml", ["data.datasets=['german']"]
    )
    with pytest.raises(ValueError, match="no sigma known for dataset 'german'"):
        run_experiment(cfg)
