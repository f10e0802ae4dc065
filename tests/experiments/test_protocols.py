"""The -tiny configs of bootstrap, probabilities, implied, sensitivity and cost_sensitive
run through the library, write their run folder atomically and resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from torchsvm.config import EXPERIMENTS, load_config
from torchsvm.experiments import run_experiment

ROOT = Path(__file__).resolve().parents[2]
#: tiny configs whose datasets are staged in ../shared/data (not bundled)
NEEDS_STAGED = {"sensitivity", "implied"}
#: tiny runs that take more than ~5 s on a loaded 2-core machine
SLOW = {"probabilities", "implied", "cost_sensitive"}
#: csvm, feature_selection and dea have their own test files (tests/experiments/test_*.py)
MINE = ("bootstrap", "probabilities", "implied", "sensitivity", "cost_sensitive")


def _params() -> list:
    out = []
    for exp in MINE:
        assert exp in EXPERIMENTS
        marks = [pytest.mark.slow] if exp in SLOW else []
        if exp in NEEDS_STAGED:
            marks.append(pytest.mark.data)  # conftest skips it without the data
        out.append(pytest.param(exp, marks=marks, id=exp))
    return out


def _finite_numbers(obj: object) -> list[float]:
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in _finite_numbers(v)]
    if isinstance(obj, list):
        return [x for v in obj for x in _finite_numbers(v)]
    if isinstance(obj, float):
        return [obj]
    return []


@pytest.mark.parametrize("experiment", _params())
def test_tiny_config_runs_and_resumes(experiment: str, tmp_path: Path) -> None:
    cfg = load_config(ROOT / "configs" / f"{experiment}-tiny.toml")
    assert cfg.experiment == experiment
    res = run_experiment(cfg, tmp_path)
    assert not res.failures, res.failures
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["experiment"] == experiment and rep["figures"]
    assert all(math.isfinite(x) for x in _finite_numbers(rep["figures"]))
    assert (tmp_path / "summary.md").read_text().startswith("# ")
    assert load_config(tmp_path / "config.toml") == cfg
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]
    again = run_experiment(cfg, tmp_path)
    assert again.n_resumed == rep["meta"]["n_units"]
    assert again.report["figures"] == rep["figures"]
