"""CLI and experiment-config tests: tiny end-to-end run, resume, one-line errors (exit 2)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from torchsvm.experiment_config import (
    ConfigError,
    ExperimentConfig,
    load_config,
    to_toml,
)
from torchsvm.train import main

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "tiny.toml"


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
        "predictions.csv",
        "summary.txt",
        "reliability.png",
        "score_intervals.png",
        "roc.png",
    ):
        assert (out / name).is_file(), name
    rep = json.loads((out / "report.json").read_text())
    assert set(rep["summary"]) == {"bootstrap_ensemble", "bootstrap_best_c", "platt"}
    for mets in rep["summary"].values():
        assert 0.0 <= mets["mse"]["mean"] <= 0.25
        assert mets["auc"]["mean"] > 0.9
    assert len(rep["folds"]) == 3
    for f in rep["folds"]:
        assert np.isclose(sum(f["weights"]), 1.0)
    lines = (out / "predictions.csv").read_text().strip().splitlines()
    assert len(lines) == 1 + 569  # every breast_cancer row held out once
    head = lines[0].split(",")
    assert head[:2] == ["index", "fold"]
    row = dict(zip(head, lines[1].split(",")))
    assert float(row["p_lower"]) <= float(row["p_bootstrap"]) <= float(row["p_upper"])
    assert load_config(out / "config.toml") == load_config(TINY)
    assert not list(out.rglob(".*.tmp")) and not list(out.glob(".*"))


def test_resume_skips_finished_folds(tiny_run: tuple[Path, float], capsys) -> None:
    out, _ = tiny_run
    before = json.loads((out / "report.json").read_text())
    t0 = time.perf_counter()
    assert (
        main(
            [
                "--config",
                str(TINY),
                "--out",
                str(out),
                "--no-progress",
                "--set",
                "report.plots=false",
            ]
        )
        == 0
    )
    assert time.perf_counter() - t0 < 10
    after = json.loads((out / "report.json").read_text())
    assert after["meta"]["n_folds_resumed"] == 3
    assert after["summary"] == before["summary"]
    assert "bootstrap_ensemble" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--set", "bootstrap.nope=1"], "unknown config key 'bootstrap.nope'"),
        (["--set", "bootstrap.n_bootstrap=abc"], "bootstrap.n_bootstrap"),
        (["--set", "bootstrap.n_bootstrap=0"], "n_bootstrap must be >= 1"),
        (["--set", "solver.tol=-1"], "solver.tol"),
        (["--set", "novalue"], "key=value"),
        (["--config", "no/such/file.toml"], "config file not found"),
        (["--device", "tpu"], "invalid choice"),
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
    for name in ("default", "tiny", "rbf"):
        cfg = load_config(ROOT / "configs" / f"{name}.toml")
        p = tmp_path / f"{name}.toml"
        p.write_text(to_toml(cfg))
        assert load_config(p) == cfg
    over = load_config(
        None, ["bootstrap.C_grid=[1, 2]", "bootstrap.gamma=0.5", "device=cpu"]
    )
    assert over.bootstrap.C_grid == (1.0, 2.0) and over.bootstrap.gamma_value == 0.5
