"""Implied-posterior protocol (SPEC S3) through the library (replaces the script test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from torchsvm.config import load_config
from torchsvm.experiments import run_experiment
from torchsvm.experiments.implied import german_split

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.data
def test_tiny_run_has_german_tables_splits_cv_and_plot(tmp_path: Path) -> None:
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
    sp = fig["german_splits"]
    assert sp["n_splits_done"] == 3 and sp["splits"] == [0, 1, 2]
    for m in ("raw_minmax", "platt", "implied"):
        cal = sp[m]["calibration"]
        v = np.asarray(cal["values"])
        assert cal["mean"] == pytest.approx(v.mean())
        assert cal["sd"] == pytest.approx(v.std(ddof=1))
        lo, hi = cal["ci95_mean"]
        clo, chi = cal["ci95_corrected"]
        assert clo < lo <= cal["mean"] <= hi < chi  # the corrected one is wider
    # split 0 is the tutorial split: the same raw / Platt / implied figures
    for m in ("raw_minmax", "platt", "implied"):
        assert sp[m]["auc"]["values"][0] == pytest.approx(
            fig["german"]["metrics"][m]["auc"]
        )
    assert set(sp["paired_tests"]) == {"implied vs platt", "implied vs raw_minmax"}
    assert (tmp_path / "implied_german_calibration.png").is_file()
    assert (tmp_path / "summary.md").read_text().startswith("# Implied posterior")


def test_german_splits_are_disjoint_stratified_and_stable() -> None:
    y = np.r_[np.ones(300), -np.ones(700)]
    tr0, te0 = german_split(y, 500, 0, seed=0)
    np.testing.assert_array_equal(tr0, np.arange(500))
    np.testing.assert_array_equal(te0, np.arange(500, 1000))
    seen = []
    for j in (1, 2, 3):
        tr, te = german_split(y, 500, j, seed=0)
        assert tr.size == te.size == 500 and not set(tr) & set(te)
        assert (y[tr] > 0).sum() == (y[te] > 0).sum() == 150  # 30 % in each half
        seen.append(tuple(tr))
    assert len(set(seen)) == 3
    # split j does not depend on how many splits are drawn, only on the seed
    np.testing.assert_array_equal(german_split(y, 500, 2, seed=0)[0], seen[1])
    assert not np.array_equal(german_split(y, 500, 2, seed=1)[0], seen[1])
    with pytest.raises(ValueError, match="2 \\* german_rows"):
        german_split(y, 600, 1, seed=0)
