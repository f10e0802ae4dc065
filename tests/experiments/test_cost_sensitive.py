"""Ctrl1 vs Ctrl2 protocol: the t = 0 column and the Ctrl1 TPR shift."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchsvm.config import ConfigError, load_config
from torchsvm.experiments import run_experiment
from torchsvm.experiments.cost_sensitive import units
from torchsvm.experiments.csvm import settings_table

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
    summary = (tmp_path / "summary.md").read_text()
    assert "| 0 (none) |" in summary
    # the settings table next to the thesis' and the per-dataset floor verdict
    assert "| bootstrap replicates B | >= 100 | 4 **(differs)** |" in summary
    assert "## Did the imposed TPR hold on held-out rows?" in summary
    # what Ctrl2 covers is part of the settings table
    row = "| Ctrl2 units finished | every dataset, fold and t | 2 of 2; datasets"
    assert row + " complete: breast_cancer |" in summary
    assert (
        "| Ctrl2 fits at their time limit (incumbent, not proven optimal) |" in summary
    )
    for t in ("0.50", "1.00"):
        for ctrl in ("Ctrl1", "Ctrl2"):
            f = fig[t][ctrl]
            assert f["held"] == (f["pooled_tpr"] >= float(t) - 1e-12)
    assert "held" not in fig["0.00"]["Ctrl1"]


def test_cheap_units_run_before_ctrl2() -> None:
    cfg = load_config(
        TINY, ["data.datasets=['breast_cancer', 'wisconsin']", "protocol.max_folds=2"]
    )
    keys = [u.key for u in units(cfg)]
    first_ctrl2 = min(i for i, k in enumerate(keys) if k.endswith("/csvm"))
    assert all(k.endswith("/csvm") for k in keys[first_ctrl2:])
    # 2 datasets x 2 folds x (t = 0 + 2 x Ctrl1 + 2 x Ctrl2)
    assert first_ctrl2 == 2 * 2 * 3 and len(keys) == 2 * 2 * 5
    assert len(set(keys)) == len(keys)


def test_settings_table_marks_departures_only() -> None:
    thesis = {"datasets": "a, b, c", "B": ">= 100", "limit": "300 s"}
    used = {"datasets": "c, a, b", "B": "100", "limit": "60 s"}
    table = settings_table(thesis, used, same={"B": True})
    assert "| datasets | a, b, c | c, a, b |" in table
    assert "| B | >= 100 | 100 |" in table
    assert "| limit | 300 s | 60 s **(differs)** |" in table


def test_imposed_tpr_must_be_in_0_1() -> None:
    with pytest.raises(ConfigError, match="cost_sensitive.tprs"):
        load_config(TINY, ["cost_sensitive.tprs=[0.0, 0.5]"])


def test_ctrl1_units_share_one_fit_and_equal_a_fresh_fit() -> None:
    from torchsvm.experiments import cost_sensitive as cs
    from torchsvm.experiments.runner import Unit

    cfg = load_config(TINY, ["bootstrap.n_bootstrap=6"])

    def unit(t: float, control: str) -> Unit:
        return Unit(
            "u", {"dataset": "breast_cancer", "fold": 0, "tpr": t, "control": control}
        )

    def strip(r: dict) -> dict:
        return {k: v for k, v in r.items() if k != "fit_s"}

    # one unit of the fold fits the S1 ensemble once for t = 0 and every imposed t
    cs._CACHE.clear()
    none = cs.run_unit(cfg, unit(0.0, "none"))
    models = cs._CACHE["threshold"][1]
    assert set(models) == {None, 0.5, 1.0}
    shared = cs.run_unit(cfg, unit(1.0, "threshold"))
    assert cs._CACHE["threshold"][1] is models  # taken from the cache, no refit
    # each equals the unit computed with an empty cache (a fit of its own)
    cs._CACHE.clear()
    assert strip(cs.run_unit(cfg, unit(1.0, "threshold"))) == strip(shared)
    cs._CACHE.clear()
    cs._CACHE["threshold"] = ("another fold", {}, 0.0)
    assert strip(cs.run_unit(cfg, unit(0.0, "none"))) == strip(none)
    assert shared["threshold"] != none["threshold"] or shared["tpr"] == 1.0
    cs._CACHE.clear()


def test_ctrl2_units_share_one_s5c_path() -> None:
    """The Ctrl2 units of a fold take their models from one S5c path over all t; a
    unit computed alone (empty cache) gives the same figures."""
    from torchsvm.experiments import cost_sensitive as cs
    from torchsvm.experiments.runner import Unit

    cfg = load_config(
        TINY, ["bootstrap.n_bootstrap=3", "cost_sensitive.tprs=[0.9, 1.0]"]
    )

    def unit(t: float) -> Unit:
        return Unit(
            "u", {"dataset": "breast_cancer", "fold": 0, "tpr": t, "control": "csvm"}
        )

    timing = ("fit_s", "miqp_seconds", "miqp_seconds_max")

    def strip(r: dict) -> dict:
        return {k: v for k, v in r.items() if k not in timing}

    cs._CACHE.clear()
    low = cs.run_unit(cfg, unit(0.9))
    models = cs._CACHE["csvm"][1]
    assert set(models) == {0.9, 1.0}
    high = cs.run_unit(cfg, unit(1.0))
    assert cs._CACHE["csvm"][1] is models  # no second path
    assert sum(low["ctrl2_source"].values()) == 3 == sum(high["ctrl2_source"].values())
    assert high["mip_status"] == {"optimal": 3}
    cs._CACHE.clear()
    assert strip(cs.run_unit(cfg, unit(1.0))) == strip(high)
    cs._CACHE.clear()


@pytest.mark.slow
def test_ctrl2_workload_counts_the_fits_that_solve_a_miqp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    import torchsvm.estimators.bootstrap as est_boot
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
    from torchsvm.experiments.cost_sensitive import ctrl2_workload
    from torchsvm.experiments.runner import load_fold_data

    cfg = load_config(
        TINY,
        [
            "bootstrap.C_grid=[0.03125, 1.0]",
            "bootstrap.n_bootstrap=5",
            "cost_sensitive.tprs=[0.5, 0.95, 1.0]",
        ],
    )
    w = ctrl2_workload(cfg, "breast_cancer")
    assert w["fits"] == 10 and set(w["miqps"]) == {"0.50", "0.95", "1.00"}
    assert w["miqps_total"] == sum(w["miqps"].values()) and "cpu_hours_fold" not in w
    # the CPU-hour estimate: count x seconds per MIQP, for one fold and all folds
    e = ctrl2_workload(cfg, "breast_cancer", 0, miqp_cpu_seconds=36.0)
    assert e["miqps"] == w["miqps"]
    assert e["cpu_hours_fold"] == pytest.approx(w["miqps_total"] / 100.0)
    assert e["cpu_hours_all_folds"] == pytest.approx(
        e["cpu_hours_fold"] * cfg.protocol.n_folds
    )
    # oracle: the calls Ctrl2 makes to the MIP engine (a replicate whose S1 meets the
    # floor is returned without one)
    calls = []
    real = est_boot.solve_csvm

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(est_boot, "solve_csvm", counting)
    d = load_fold_data(cfg, "breast_cancer", 0)
    y = np.where(np.asarray(d["y_train"]) > 0, 1, -1)
    solved = {}
    for t in (0.5, 0.95, 1.0):
        calls.clear()
        BootstrapProbabilitySVC(
            C_grid=[0.03125, 1.0],
            n_bootstrap=5,
            target_tpr=t,
            control="csvm",
            mip_time_limit=10.0,
            random_state=cfg.protocol.seed,
        ).fit(d["X_train"], y)
        solved[f"{t:.2f}"] = len(calls)
    assert w["miqps"] == solved
    # the case holds fits with and without a MIQP (else the count could not be wrong)
    assert solved["0.50"] < solved["0.95"]
    # t = 1 fixes every positive's binary: one QP each, no MIQP
    assert solved["1.00"] == 0 < w["forced"]["1.00"]
