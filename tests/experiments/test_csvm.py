"""The constrained-SVM protocol (SPEC S5, issue 18) through the library."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from torchsvm.config import load_config
from torchsvm.experiments import csvm, run_experiment
from torchsvm.experiments.runner import Unit

ROOT = Path(__file__).resolve().parents[2]


def test_full_config_is_the_thesis_protocol() -> None:
    cfg = load_config(ROOT / "configs" / "csvm.toml")
    assert cfg.experiment == "csvm" and cfg.protocol.seed == 0
    # the thesis' datasets, smallest first (a partial run holds the cheap ones whole)
    assert sorted(cfg.data.datasets) == sorted(csvm.DATASETS) and cfg.data.max_rows == 0
    s = cfg.csvm
    assert (cfg.protocol.n_folds, s.large_folds, s.large_rows) == (10, 5, 1000)
    assert s.inner_folds == 10 and list(s.grid_exponents) == list(range(-5, 6))
    assert s.hoeffding_alpha == 0.05 and cfg.mip.time_limit == 300.0
    used = csvm._used(cfg, {})
    # every setting the thesis states is the one used (the centroid count it does not state)
    table = csvm.settings_table(csvm.THESIS, used).splitlines()
    differs = [row.split(" | ")[0][2:] for row in table if "**(differs)**" in row]
    assert differs == ["centroids per class"]


def test_settings_table_marks_departures() -> None:
    text = csvm.settings_table({"a": "1", "b": "2"}, {"a": "1", "b": "3"})
    assert "| a | 1 | 1 |" in text and "| b | 2 | 3 **(differs)** |" in text


def test_solver_unit_oa_matches_scip() -> None:
    pytest.importorskip("pyscipopt")
    cfg = load_config(ROOT / "configs" / "csvm-tiny.toml")
    r = csvm.run_unit(
        cfg, Unit("solver/rbf/n00020", {"part": "solver", "kernel": "rbf", "n": 20})
    )
    assert r["oa"]["status"] == "optimal" and r["scip"]["status"] == "optimal"
    # SCIP is the oracle: the outer approximation reaches its optimum
    assert abs(r["oa"]["objective"] - r["scip"]["objective"]) <= 1e-3 * max(
        1.0, abs(r["scip"]["objective"])
    )


@pytest.mark.slow
def test_tiny_run_reports_floors_and_settings(tmp_path: Path) -> None:
    cfg = load_config(
        ROOT / "configs" / "csvm-tiny.toml",
        ["csvm.solver_sizes=[]", "csvm.solver_rbf_sizes=[]"],
    )
    res = run_experiment(cfg, tmp_path)
    assert not res.failures, res.failures
    for r in res.results.values():
        t = r["target"]
        assert 0.0 < t <= 1.0
        assert np.isclose(t, min(1.0, r["inner_cv"]["tpr"] + csvm.TARGET_STEP))
        assert r["compressed"] and r["mip_rows"] <= 4 * cfg.csvm.max_per_class
        for m in ("sliding b", "CSVM"):
            rec = r["methods"][m]
            # the floor is p0 plus the Hoeffding margin (capped at 1), met on J
            assert rec["floor"] >= t - 1e-12
            assert rec["anchor_tpr"] >= rec["floor"] - 1e-9
            assert rec["held"] == (rec["tpr"] >= t - 1e-12)
    rep = json.loads((tmp_path / "report.json").read_text())
    ds = rep["figures"]["datasets"]["breast_cancer"]
    assert ds["folds_done"] == 2 and ds["n_folds"] == 3
    assert set(ds["methods"]) == set(csvm.METHODS)
    summary = (tmp_path / "summary.md").read_text()
    assert "| setting | thesis | this run |" in summary
    assert "| Hoeffding alpha | 0.05 | 0.05 |" in summary
    assert "CSVM held" in summary and (tmp_path / "csvm_tpr.png").is_file()
