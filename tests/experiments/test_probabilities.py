"""The probabilities protocol (SPEC S2 / S4) through the library."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold

from torchsvm import CalibratedSVC, WeightedSVC
from torchsvm.config import ConfigError, load_config
from torchsvm.experiments import probabilities as proto
from torchsvm.experiments import run_experiment

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "probabilities-tiny.toml"


@pytest.mark.slow
def test_tiny_run_has_every_method_and_ranks(tmp_path: Path) -> None:
    cfg = load_config(TINY)
    res = run_experiment(cfg, tmp_path)
    assert not res.failures
    assert len(res.results) == 4  # breast_cancer x {linear, rbf} x 2 folds
    methods = set(proto.BOOTSTRAP_METHODS) | set(cfg.probabilities.baselines)
    for unit in res.results.values():
        assert set(unit["metrics"]) == methods
        for metrics in unit["metrics"].values():
            assert 0.0 <= metrics["mse"] <= 1.0 and 0.0 <= metrics["auc"] <= 1.0
        assert unit["best_C"] in unit["C_grid"]
    md = (tmp_path / "summary.md").read_text()
    for meth in methods:
        assert proto.LABELS[meth] in md
    assert "4 of 4 (dataset, kernel, fold) units finished" in md
    assert "Differences from the papers" in md
    rep = json.loads((tmp_path / "report.json").read_text())["figures"]
    n = len(methods)
    for kernel in ("linear", "rbf"):
        assert set(rep["summary"][kernel]["breast_cancer"]) == methods
        ranks = rep["average_ranks"][kernel]["by_metric"]["mse"]["ranks"]
        assert sum(ranks.values()) == pytest.approx(n * (n + 1) / 2)
    assert rep["sizes"]["breast_cancer"]["n_used"] == 150


def test_oob_calibrated_rows_equal_a_calibrated_fit() -> None:
    from torchsvm import BootstrapProbabilitySVC

    X, y01 = make_classification(n_samples=90, n_features=4, random_state=5)
    y = np.where(y01 == 1, 1, -1)
    cfg = load_config(TINY, ["bootstrap.n_bootstrap=8", "probabilities.baselines=[]"])
    res = proto._fit_unit(X[:60], y[:60], X[60:], y[60:], "linear", cfg, seed=4)
    assert {"bootstrap_oob_score_sigmoid", "bootstrap_oob_auto_scores"} <= set(
        proto.OOB_CALIBRATIONS
    )
    for meth, params in proto.OOB_CALIBRATIONS.items():
        ref = BootstrapProbabilitySVC(
            C_grid=np.asarray(cfg.bootstrap.C_grid),
            n_bootstrap=8,
            kernel="linear",
            tol=cfg.solver.tol,
            random_state=4,
            **params,
        ).fit(X[:60], y[:60])
        np.testing.assert_allclose(
            res["pred"][meth], ref.predict_proba(X[60:])[:, 1], atol=1e-12
        )
        assert res["oob_calibration_choice"][meth] == [
            ref.calibration_,
            ref.calibration_input_,
        ]
    # the raw ensemble row is left uncalibrated after the calibrated rows
    raw = BootstrapProbabilitySVC(
        C_grid=np.asarray(cfg.bootstrap.C_grid),
        n_bootstrap=8,
        kernel="linear",
        tol=cfg.solver.tol,
        random_state=4,
    ).fit(X[:60], y[:60])
    np.testing.assert_allclose(
        res["pred"]["bootstrap_ensemble"], raw.predict_proba(X[60:])[:, 1], atol=1e-12
    )


def test_shared_calibrator_fit_equals_separate_calibrated_svc() -> None:
    X, y01 = make_classification(n_samples=90, n_features=4, random_state=3)
    y = np.where(y01 == 1, 1, -1)
    Xtr, ytr, Xte, yte = X[:60], y[:60], X[60:], y[60:]
    baselines = ("platt", "isotonic", "beta", "sollich")
    cfg = load_config(
        TINY,
        [
            "bootstrap.n_bootstrap=5",
            "solver.tol=1e-7",
            "probabilities.inner_cv=3",
            f"probabilities.baselines={list(baselines)}",
        ],
    )
    res = proto._fit_unit(Xtr, ytr, Xte, yte, "rbf", cfg, seed=7)
    assert set(res["pred"]) == {"y", *proto.BOOTSTRAP_METHODS, *baselines}
    svc = WeightedSVC(C=res["best_C"], kernel="rbf", gamma=res["gamma"])
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=7)
    for name in baselines:
        method = proto.CALIBRATION_BASELINES[name]
        ref = CalibratedSVC(svc, method=method, cv=cv).fit(Xtr, ytr)
        np.testing.assert_allclose(
            res["pred"][name], ref.predict_proba(Xte)[:, 1], atol=1e-9
        )


def test_unknown_baseline_or_kernel_is_rejected() -> None:
    with pytest.raises(ConfigError, match="ppsvm"):
        load_config(TINY, ["probabilities.baselines=['platt', 'ppsvm']"])
    with pytest.raises(ConfigError, match="probabilities.kernels"):
        load_config(TINY, ["probabilities.kernels=['poly']"])


def test_missing_dataset_is_reported_not_fatal(tmp_path: Path) -> None:
    cfg = load_config(
        TINY,
        [
            "data.datasets=['breast_cancer', 'no_such_set']",
            "probabilities.kernels=['linear']",
            "probabilities.baselines=['platt']",
            "bootstrap.n_bootstrap=3",
        ],
    )
    res = run_experiment(cfg, tmp_path)
    assert set(res.failures) == {
        "no_such_set/linear/fold_00",
        "no_such_set/linear/fold_01",
    }
    assert len(res.results) == 2
    assert "no_such_set" in (tmp_path / "summary.md").read_text()


@pytest.mark.data
@pytest.mark.slow
def test_tiny_run_on_a_staged_dataset(tmp_path: Path) -> None:
    cfg = load_config(
        TINY, ["data.datasets=['heart_statlog']", "probabilities.kernels=['linear']"]
    )
    res = run_experiment(cfg, tmp_path)
    assert len(res.results) == 2 and not res.failures
    sizes = res.report["figures"]["sizes"]["heart_statlog"]
    assert sizes["n_used"] == 150 and sizes["n_original"] == 270


@pytest.mark.gpu
def test_tiny_run_on_cuda(tmp_path: Path) -> None:
    cfg = load_config(TINY, ["device=cuda", "probabilities.kernels=['rbf']"])
    res = run_experiment(cfg, tmp_path)
    assert len(res.results) == 2 and not res.failures
