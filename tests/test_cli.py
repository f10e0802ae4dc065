"""CLI and experiment-config tests: tiny end-to-end run, resume, refusal, exit codes."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from torchsvm.config import (
    EXPERIMENTS,
    ConfigError,
    ExperimentConfig,
    config_diff,
    config_fingerprint,
    load_config,
    to_toml,
)
from torchsvm.train import main

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "bootstrap-tiny.toml"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    out = tmp_path_factory.mktemp("run")
    t0 = time.perf_counter()
    rc = main(["--config", str(TINY), "--out", str(out), "--no-progress"])
    assert rc == 0
    return out, time.perf_counter() - t0


def test_tiny_run_writes_everything(tiny_run: tuple[Path, float]) -> None:
    out, _ = tiny_run
    for name in (
        "config.toml",
        "report.json",
        "summary.md",
        "predictions.csv",
        "summary.txt",
        "reliability.png",
        "score_intervals.png",
        "roc.png",
    ):
        assert (out / name).is_file(), name
    rep = json.loads((out / "report.json").read_text())
    assert rep["experiment"] == "bootstrap"
    summary = rep["figures"]["summary"]
    assert set(summary) == {"bootstrap_ensemble", "bootstrap_best_c", "platt"}
    for mets in summary.values():
        assert 0.0 <= mets["mse"]["mean"] <= 0.25
        assert mets["auc"]["mean"] > 0.9
    assert len(rep["figures"]["folds"]) == 3
    for f in rep["figures"]["folds"]:
        assert np.isclose(sum(f["weights"]), 1.0)
    lines = (out / "predictions.csv").read_text().strip().splitlines()
    assert len(lines) == 1 + 569  # every breast_cancer row held out once
    head = lines[0].split(",")
    assert head[:2] == ["index", "fold"]
    row = dict(zip(head, lines[1].split(",")))
    assert float(row["p_lower"]) <= float(row["p_bootstrap"]) <= float(row["p_upper"])
    assert load_config(out / "config.toml") == load_config(TINY)
    # atomic writes leave no temporary files behind
    assert not [p for p in out.rglob(".*") if p.is_file()]


def test_resume_skips_finished_folds(tiny_run: tuple[Path, float], capsys) -> None:
    out, _ = tiny_run
    before = json.loads((out / "report.json").read_text())
    t0 = time.perf_counter()
    args = ["--config", str(TINY), "--out", str(out), "--no-progress"]
    assert main([*args, "--set", "report.plots=false"]) == 0
    assert time.perf_counter() - t0 < 10
    after = json.loads((out / "report.json").read_text())
    assert after["meta"]["n_resumed"] == 3
    assert after["figures"] == before["figures"]
    assert "bootstrap_ensemble" in capsys.readouterr().out


def test_report_only_runs_nothing_and_counts_pending(
    tiny_run: tuple[Path, float], tmp_path: Path, capsys
) -> None:
    out, _ = tiny_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    units = sorted((copy / "units").rglob("*.json"))
    assert len(units) == 3
    units[-1].unlink()
    rc = main(["--out", str(copy), "--report-only", "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "1 not run yet" in text
    assert not units[-1].exists()  # nothing was fitted
    rep = json.loads((copy / "report.json").read_text())
    assert rep["meta"]["n_pending"] == 1 and rep["meta"]["n_resumed"] == 2
    assert len(rep["figures"]["folds"]) == 2
    # with --rerun-before, units finished before that time are left out, not refitted
    rc = main(
        [
            "--out",
            str(copy),
            "--report-only",
            "--rerun-before",
            "2999-01-01",
            "--no-progress",
        ]
    )
    assert rc == 0 and "3 not run yet" in capsys.readouterr().out
    assert json.loads((copy / "report.json").read_text())["meta"]["n_resumed"] == 0
    assert not units[-1].exists()


def test_rerun_recomputes_matching_or_older_units(
    tiny_run: tuple[Path, float], tmp_path: Path, capsys
) -> None:
    out, _ = tiny_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    units = sorted((copy / "units").rglob("*.json"))
    recs = {p: json.loads(p.read_text()) for p in units}
    for rec in recs.values():
        assert rec["code"]["torchsvm"]
        assert rec["finished_at"].endswith("+00:00")
    key = recs[units[0]]["key"]
    args = ["--out", str(copy), "--config", str(TINY), "--no-progress"]
    assert main([*args, "--rerun", key]) == 0
    rep = json.loads((copy / "report.json").read_text())
    assert rep["meta"]["n_resumed"] == 2
    again = json.loads(units[0].read_text())
    assert again["finished_at"] >= recs[units[0]]["finished_at"]

    # same config, same seed: the recomputed unit gives the same figures
    def figures(rec: dict) -> dict:
        return {k: v for k, v in rec["result"].items() if not k.startswith("seconds")}

    assert figures(again) == figures(recs[units[0]])
    assert main([*args, "--rerun-before", "1970-01-02"]) == 0
    assert json.loads((copy / "report.json").read_text())["meta"]["n_resumed"] == 3
    assert main([*args, "--rerun-before", "2999-01-01T00:00"]) == 0
    assert json.loads((copy / "report.json").read_text())["meta"]["n_resumed"] == 0
    assert main([*args, "--rerun-before", "yesterday"]) == 2
    assert "ISO 8601" in capsys.readouterr().err


def test_report_only_needs_a_run_folder(tmp_path: Path, capsys) -> None:
    assert main(["--report-only", "--no-progress"]) == 2
    assert "needs --out" in capsys.readouterr().err
    assert main(["--out", str(tmp_path), "--report-only", "--no-progress"]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_changed_config_is_refused_not_overwritten(
    tiny_run: tuple[Path, float], capsys
) -> None:
    out, _ = tiny_run
    before = (out / "report.json").read_bytes()
    rc = main(
        [
            "--config",
            str(TINY),
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "bootstrap.n_bootstrap=11",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "another config" in err and "bootstrap.n_bootstrap: 10 -> 11" in err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert (out / "report.json").read_bytes() == before
    assert config_diff(load_config(out / "config.toml"), load_config(TINY)) == []


def test_foreign_nonempty_folder_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    rc = main(["--config", str(TINY), "--out", str(tmp_path), "--no-progress"])
    assert rc == 2 and "not empty" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--set", "bootstrap.nope=1"], "unknown config key 'bootstrap.nope'"),
        (["--set", "bootstrap.n_bootstrap=abc"], "bootstrap.n_bootstrap"),
        (["--set", "bootstrap.n_bootstrap=0"], "n_bootstrap must be >= 1"),
        (["--set", "solver.tol=-1"], "solver.tol"),
        (["--set", "novalue"], "key=value"),
        (["--set", "csvm.inner_folds=3"], "section [csvm] does not apply"),
        (["--set", "experiment=nope"], "experiment must be one of"),
        (["--set", "mip.time_limit=0"], "time_limit"),
        (["--config", "no/such/file.toml"], "config file not found"),
        (["--device", "tpu"], "invalid choice"),
        (["--backend", "spark"], "invalid choice"),
        (["--address", "auto"], "--address needs --backend ray"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], fragment: str, capsys, tmp_path: Path
) -> None:
    rc = main([*args, "--out", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert fragment in err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_cuda_without_gpu_is_error(capsys, tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    rc = main(["--config", str(TINY), "--device", "cuda", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and "CUDA is not available" in err and err.count("\n") == 1


def test_bad_toml_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[bootstrap\nkernel = 'rbf'\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(bad)
    bad.write_text("[bootstrap]\nkernel = 'sigmoid'\n")
    with pytest.raises(ConfigError, match="bootstrap.kernel"):
        load_config(bad)


def test_config_roundtrip_and_defaults(tmp_path: Path) -> None:
    default = load_config(ROOT / "configs" / "default.toml")
    assert default == ExperimentConfig()  # the file spells out the built-in defaults
    assert default.bootstrap.n_bootstrap == 500 and len(default.bootstrap.C_grid) == 11
    assert default.protocol.n_folds == 10
    for path in sorted((ROOT / "configs").glob("*.toml")):
        cfg = load_config(path)
        p = tmp_path / path.name
        p.write_text(to_toml(cfg))
        assert load_config(p) == cfg, path.name
    over = load_config(
        None, ["bootstrap.C_grid=[1, 2]", "bootstrap.gamma=0.5", "device=cpu"]
    )
    assert over.bootstrap.C_grid == (1.0, 2.0) and over.bootstrap.gamma_value == 0.5
    names = load_config(None, ["data.datasets=breast_cancer"])
    assert names.data.datasets == ("breast_cancer",)


def test_every_experiment_has_paper_and_tiny_config() -> None:
    for exp in EXPERIMENTS:
        paper = (
            ROOT / "configs" / ("default.toml" if exp == "bootstrap" else f"{exp}.toml")
        )
        tiny = ROOT / "configs" / f"{exp}-tiny.toml"
        for path in (paper, tiny):
            assert path.is_file(), path
            cfg = load_config(path)
            assert cfg.experiment == exp
            assert "seed" in path.read_text().split("[protocol]", 1)[1]


def test_fingerprint_ignores_device_name_and_report() -> None:
    a = load_config(TINY)
    b = load_config(TINY, ["name=other", "report.plots=false"])
    c = load_config(TINY, ["protocol.seed=1"])
    assert config_fingerprint(a) == config_fingerprint(b)
    assert config_fingerprint(a) != config_fingerprint(c)
    assert config_diff(a, c) == ["protocol.seed: 0 -> 1"]


def test_failed_unit_exit_1_and_its_message_never_shares_the_bar_line(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchsvm.experiments import bootstrap as main_job

    real = main_job.run_unit

    def flaky(cfg, unit):  # noqa: ANN001, ANN202
        if unit.params["fold"] == 1:
            raise RuntimeError("boom")
        return real(cfg, unit)

    monkeypatch.setattr(main_job, "run_unit", flaky)
    args = ["--config", str(TINY), "--out", str(tmp_path)]
    rc = main(
        [*args, "--set", "bootstrap.n_bootstrap=3", "--set", "report.plots=false"]
    )
    out, err = capsys.readouterr()
    assert rc == 1
    assert "failed unit breast_cancer/fold_01: RuntimeError: boom" in out
    # the bar redraws with \r; the warning must start a line of its own
    pieces = [p for chunk in err.split("\n") for p in chunk.split("\r")]
    hits = [p for p in pieces if "boom" in p]
    assert hits, err
    assert all(
        p.startswith(("WARNING", "unit breast_cancer/fold_01 failed")) for p in hits
    ), hits
