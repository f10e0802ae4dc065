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
    assert set(r) == {"box", "diagonal", "box_hard", "diagonal_hard", "paired_tests"}
    for scheme in ("box", "diagonal"):
        assert len(r[scheme]["tpr"]) == 5 and 0.5 < r[scheme]["auc"] <= 1.0
        assert r[scheme]["n"] == 90 and r[scheme]["folds_done"] == 3
    # a larger C+ never makes the box scheme predict fewer positives (pooled TPR)
    assert np.all(np.diff(r["box"]["tpr"]) >= -1e-12)
    for scheme in ("box_hard", "diagonal_hard"):
        e = r[scheme]
        assert len(e["tpr"]) == 11  # 5 + the hard model + the 5 mirrored
        # the mirrored path runs from everything negative to everything positive
        assert e["fpr_range"] == [0.0, 1.0]
        assert e["fpr"][0] == e["tpr"][0] == 0.0 and e["fpr"][-1] == e["tpr"][-1] == 1.0
        # the one-sided half (negatives hard) stops well short of FPR 1
        assert e["one_sided"]["fpr_range"][1] < 0.5
        assert e["models_with_fixed_at_bound"] == 0  # C_large never binds
        assert len(e["auc_folds"]) == 3
    t = r["paired_tests"]["box vs diagonal"]["auc"]
    assert t["n"] == 3
    diffs = np.subtract(r["box"]["auc_folds"], r["diagonal"]["auc_folds"])
    assert t["mean_diff"] == pytest.approx(diffs.mean())
    assert (tmp_path / "sensitivity_roc.png").is_file()
    assert "Paired tests over folds" in (tmp_path / "summary.md").read_text()


def test_dataset_without_sigma_is_refused() -> None:
    cfg = load_config(
        ROOT / "configs" / "sensitivity-tiny.toml", ["data.datasets=['german']"]
    )
    with pytest.raises(ValueError, match="no sigma known for dataset 'german'"):
        run_experiment(cfg)
