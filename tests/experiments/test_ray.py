"""Ray backend on a local 2-CPU instance: same figures as local, resume, failures.

Skipped cleanly where Ray is not importable (``pip install -e ".[ray]"``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from torchsvm.config import load_config  # noqa: E402
from torchsvm.experiments import run_experiment  # noqa: E402
from torchsvm.experiments.distributed import map_chunks, ray_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "bootstrap-tiny.toml"
FAST = ["bootstrap.n_bootstrap=6", "report.plots=false"]

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def ray_instance():  # noqa: ANN201
    with ray_session(None, num_workers=2) as r:
        yield r


def _square(x: int) -> int:
    return x * x


def test_map_chunks_keeps_order(ray_instance) -> None:  # noqa: ANN001
    assert map_chunks(_square, [3, 1, 2]) == [9, 1, 4]


def test_ray_backend_equals_local_and_resumes(ray_instance, tmp_path: Path) -> None:  # noqa: ANN001
    cfg = load_config(TINY, FAST)
    local = run_experiment(cfg, tmp_path / "local")
    remote = run_experiment(cfg, tmp_path / "ray", backend="ray")
    assert remote.report["meta"]["backend"] == "ray"
    assert remote.report["figures"] == local.report["figures"]
    assert (tmp_path / "ray" / "predictions.csv").read_text() == (
        tmp_path / "local" / "predictions.csv"
    ).read_text()
    # a driver that stopped after two units: the ray run resumes from the files
    (tmp_path / "ray" / "units" / "fold_01.json").unlink()
    again = run_experiment(cfg, tmp_path / "ray", backend="ray")
    assert again.n_resumed == 2
    assert again.report["figures"] == local.report["figures"]


def test_ray_failed_unit_is_reported(ray_instance, tmp_path: Path) -> None:  # noqa: ANN001
    # every unit fails inside its Ray task (unknown dataset); the run still reports
    cfg = load_config(TINY, [*FAST, "data.datasets=no_such_dataset"])
    res = run_experiment(cfg, tmp_path, backend="ray")
    assert set(res.failures) == {"fold_00", "fold_01", "fold_02"}
    assert all("no_such_dataset" in msg for msg in res.failures.values())
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["meta"]["n_failed"] == 3
