"""Smoke and resume tests of scripts/reproduce_probabilities.py (SPEC S2 / S4 protocol)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold

from torchsvm.estimators.calibration import CalibratedSVC
from torchsvm.estimators.svc import WeightedSVC

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reproduce_probabilities", ROOT / "scripts" / "reproduce_probabilities.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _unit_files(out: Path) -> list[Path]:
    return sorted((out / "units").rglob("fold_*.json"))


def test_tiny_run_writes_every_method_and_resumes(
    script: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "run"
    assert script.main(["--tiny", "--out", str(out)]) == 0
    units = _unit_files(out)
    assert len(units) == 4  # breast_cancer x {linear, rbf} x 2 folds
    for path in units:
        unit = json.loads(path.read_text())
        assert set(unit["metrics"]) == set(script.METHODS)
        for metrics in unit["metrics"].values():
            assert 0.0 <= metrics["mse"] <= 1.0
            assert 0.0 <= metrics["auc"] <= 1.0
        assert unit["best_C"] in unit["C_grid"]
    md = (out / "probabilities_tiny.md").read_text()
    for label in script.LABELS.values():
        assert label in md
    assert "4 of 4 (dataset, kernel, fold) units finished" in md
    assert "python scripts/reproduce_probabilities.py --tiny --out" in md
    assert "Differences from the papers" in md
    rep = json.loads((out / "probabilities_tiny.json").read_text())
    for kernel in ("linear", "rbf"):
        assert set(rep["summary"][kernel]["breast_cancer"]) == set(script.METHODS)
        ranks = rep["average_ranks"][kernel]["by_metric"]["mse"]["ranks"]
        assert set(ranks) == set(script.METHODS)
        n_methods = len(script.METHODS)
        assert sum(ranks.values()) == pytest.approx(n_methods * (n_methods + 1) / 2)
    assert rep["sizes"]["breast_cancer"]["n_used"] == 150

    # second run: every unit is resumed, nothing is refitted
    mtimes = {p: p.stat().st_mtime_ns for p in units}
    with caplog.at_level(logging.INFO, logger="reproduce_probabilities"):
        assert script.main(["--tiny", "--out", str(out)]) == 0
    assert {p: p.stat().st_mtime_ns for p in _unit_files(out)} == mtimes
    assert caplog.text.count("already done, skipped") == 4
    last = json.loads((out / "notes.json").read_text())["runs"][-1]
    assert last["computed"] == 0
    assert last["resumed"] == 4


def test_time_budget_zero_starts_nothing_and_reports_it(
    script: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    argv = ["--tiny", "--kernels", "linear", "--out", str(out), "--time-budget", "0"]
    assert script.main(argv) == 0
    assert _unit_files(out) == []
    md = (out / "probabilities_tiny.md").read_text()
    assert "0 of 2 (dataset, kernel, fold) units finished" in md
    assert json.loads((out / "notes.json").read_text())["runs"][-1]["not_started"] == 2


def test_shared_calibrator_fit_equals_separate_calibrated_svc(
    script: ModuleType,
) -> None:
    X, y01 = make_classification(n_samples=90, n_features=4, random_state=3)
    y = np.where(y01 == 1, 1, -1)
    Xtr, ytr, Xte, yte = X[:60], y[:60], X[60:], y[60:]
    args = argparse.Namespace(
        C_grid=(0.25, 1.0, 4.0),
        B=5,
        accuracy_eps=0.01,
        tol=1e-7,
        max_iter=20000,
        device="cpu",
        inner_cv=3,
        baselines=("platt", "isotonic", "beta", "sollich"),
    )
    res = script.run_unit(Xtr, ytr, Xte, yte, "rbf", args, seed=7)
    assert set(res["pred"]) == {"y", *script.BOOTSTRAP_METHODS, *args.baselines}
    svc = WeightedSVC(C=res["best_C"], kernel="rbf", gamma=res["gamma"])
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=7)
    for name in args.baselines:
        method = script.CALIBRATION_BASELINES[name]
        ref = CalibratedSVC(svc, method=method, cv=cv).fit(Xtr, ytr)
        np.testing.assert_allclose(
            res["pred"][name], ref.predict_proba(Xte)[:, 1], atol=1e-9
        )


def test_c_grid_parsing(script: ModuleType) -> None:
    grid = script._c_grid("2^-5..2^5")
    assert len(grid) == 11
    assert grid[0] == pytest.approx(1 / 32)
    assert grid[-1] == pytest.approx(32.0)
    assert script._c_grid("0.5, 2") == (0.5, 2.0)
    with pytest.raises(argparse.ArgumentTypeError, match="C grid"):
        script._c_grid("1..4")
    with pytest.raises(argparse.ArgumentTypeError, match="> 0"):
        script._c_grid("-1,2")


def test_unknown_baseline_is_rejected(script: ModuleType) -> None:
    with pytest.raises(SystemExit):
        script.main(["--tiny", "--baselines", "platt,ppsvm"])


@pytest.mark.data
def test_tiny_run_on_a_staged_dataset(
    script: ModuleType, tmp_path: Path, data_dir: Path
) -> None:
    out = tmp_path / "run"
    argv = ["--tiny", "--datasets", "heart_statlog", "--kernels", "linear"]
    argv += ["--data-dir", str(data_dir), "--out", str(out)]
    assert script.main(argv) == 0
    assert len(_unit_files(out)) == 2
    rep = json.loads((out / "probabilities_tiny.json").read_text())
    assert rep["sizes"]["heart_statlog"]["n_used"] == 150
    assert rep["sizes"]["heart_statlog"]["n_original"] == 270
    assert set(rep["summary"]["linear"]["heart_statlog"]) == set(script.METHODS)


@pytest.mark.gpu
def test_tiny_run_on_cuda(script: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--tiny", "--device", "cuda", "--kernels", "rbf", "--out", str(out)]
    assert script.main(argv) == 0
    units = _unit_files(out)
    assert len(units) == 2
    assert all(json.loads(p.read_text())["device"] == "cuda" for p in units)
