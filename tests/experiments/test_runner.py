"""The experiment runner: resume, atomic writes, failed units, refusal, a killed driver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchsvm.config import load_config
from torchsvm.experiments import RunFolderError, run_experiment
from torchsvm.experiments import bootstrap as main_job
from torchsvm.experiments.report import atomic_write_text

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "bootstrap-tiny.toml"
FAST = ["bootstrap.n_bootstrap=4", "baselines.platt=false", "report.plots=false"]


def test_failed_unit_is_reported_while_the_rest_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(TINY, FAST)
    real = main_job.run_unit

    def flaky(cfg, unit):  # noqa: ANN001, ANN202
        if unit.params["fold"] == 1:
            raise ValueError("solver exploded on purpose\nsecond line")
        return real(cfg, unit)

    monkeypatch.setattr(main_job, "run_unit", flaky)
    res = run_experiment(cfg, tmp_path)
    assert res.failures == {
        "breast_cancer/fold_01": "ValueError: solver exploded on purpose"
    }
    assert set(res.results) == {"breast_cancer/fold_00", "breast_cancer/fold_02"}
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["failures"] == [
        {
            "unit": "breast_cancer/fold_01",
            "error": "ValueError: solver exploded on purpose",
        }
    ]
    assert rep["meta"]["n_failed"] == 1 and len(rep["figures"]["folds"]) == 2
    assert "breast_cancer/fold_01" in (tmp_path / "summary.md").read_text()
    assert json.loads((tmp_path / "failures.json").read_text()) == res.failures
    # the next run retries only the failed unit
    monkeypatch.setattr(main_job, "run_unit", real)
    again = run_experiment(cfg, tmp_path)
    assert again.n_resumed == 2 and not again.failures
    assert not (tmp_path / "failures.json").exists()
    assert len(again.report["figures"]["folds"]) == 3


def test_resume_equals_fresh_run_and_other_fingerprints_rerun(tmp_path: Path) -> None:
    cfg = load_config(TINY, FAST)
    first = run_experiment(cfg, tmp_path / "a")
    (tmp_path / "a" / "units" / "breast_cancer" / "fold_02.json").unlink()
    second = run_experiment(cfg, tmp_path / "a")
    assert second.n_resumed == 2
    assert second.report["figures"] == first.report["figures"]
    # a unit file written under another config is not trusted
    unit = tmp_path / "a" / "units" / "breast_cancer" / "fold_00.json"
    data = json.loads(unit.read_text())
    data["fingerprint"] = "0" * 16
    unit.write_text(json.dumps(data))
    third = run_experiment(cfg, tmp_path / "a")
    assert third.n_resumed == 2
    assert third.report["figures"] == first.report["figures"]


def test_other_config_is_refused(tmp_path: Path) -> None:
    run_experiment(load_config(TINY, FAST), tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(RunFolderError, match=r"protocol.seed: 0 -> 3"):
        run_experiment(load_config(TINY, [*FAST, "protocol.seed=3"]), tmp_path)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before


def test_atomic_write_keeps_old_file_when_writer_fails(tmp_path: Path) -> None:
    from torchsvm.experiments.report import atomic_write

    target = tmp_path / "report.json"
    atomic_write_text(target, "old")

    def broken(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def _processes_naming(path: Path) -> list[int]:
    """Ids of the live processes whose command line names ``path``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (d / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if str(path) in cmd and state != "Z":
            pids.append(int(d.name))
    return pids


@pytest.mark.slow
def test_killed_driver_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "torchsvm.train",
        "--config",
        str(TINY),
        "--out",
        str(out),
        "--no-progress",
        "--set",
        "bootstrap.n_bootstrap=40",
        "--set",
        "protocol.n_folds=5",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    first = out / "units" / "breast_cancer" / "fold_00.json"
    deadline = time.monotonic() + 240
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the driver's forked fold workers (the main job's default) end with it
    deadline = time.monotonic() + 20
    while _processes_naming(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_naming(out)
    done = sorted(p.name for p in (out / "units").rglob("*.json"))
    assert 1 <= len(done) < 5, done
    # every unit file on disk is complete JSON (atomic), no temporaries left
    for p in (out / "units").rglob("*"):
        assert not p.name.startswith("."), p
        if p.is_file():
            json.loads(p.read_text())
    rc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True).returncode
    assert rc == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["meta"]["n_resumed"] == len(done)
    assert len(rep["figures"]["folds"]) == 5


def test_folder_grows_by_kernels_and_keeps_its_units(tmp_path: Path) -> None:
    tiny = ROOT / "configs" / "probabilities-tiny.toml"
    fast = ["bootstrap.n_bootstrap=3", "probabilities.baselines=['platt']"]
    first = run_experiment(
        load_config(tiny, [*fast, "probabilities.kernels=['linear']"]), tmp_path
    )
    assert set(first.results) == {f"breast_cancer/linear/fold_0{k}" for k in (0, 1)}
    both = run_experiment(
        load_config(tiny, [*fast, "probabilities.kernels=['linear', 'rbf']"]), tmp_path
    )
    assert both.n_resumed == 2 and len(both.results) == 4
    for key, res in first.results.items():
        assert both.results[key]["metrics"] == res["metrics"]
    # a setting that changes results is still refused
    with pytest.raises(RunFolderError, match="bootstrap.n_bootstrap: 3 -> 4"):
        run_experiment(
            load_config(
                tiny, ["bootstrap.n_bootstrap=4", "probabilities.baselines=['platt']"]
            ),
            tmp_path,
        )


def _flat(x, prefix=""):  # noqa: ANN001, ANN202
    if isinstance(x, dict):
        return {
            k2: v for k, v in x.items() for k2, v in _flat(v, f"{prefix}/{k}").items()
        }
    if isinstance(x, list):
        return {
            k2: v
            for i, v in enumerate(x)
            for k2, v in _flat(v, f"{prefix}[{i}]").items()
        }
    return {prefix: x}


@pytest.mark.slow
def test_worker_processes_give_the_figures_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(TINY, FAST)
    one = run_experiment(cfg, tmp_path / "a")
    two = run_experiment(cfg, tmp_path / "b", num_workers=2)
    assert two.n_resumed == 0 and not two.failures
    assert two.report["meta"]["n_workers"] == 2
    assert one.report["meta"]["n_workers"] == 1
    assert list(two.results) == list(one.results)  # unit order, not finish order
    a, b = _flat(one.report["figures"]), _flat(two.report["figures"])
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], float):
            # one torch thread per worker: equal up to the rounding of the thread count
            assert b[k] == pytest.approx(a[k], rel=1e-6, abs=1e-9), k
        else:
            assert b[k] == a[k], k
    assert len(list((tmp_path / "b" / "units").rglob("*.json"))) == 3
    # a unit that raises in a worker is reported; the others finish
    real = main_job.run_unit

    def flaky(cfg, unit):  # noqa: ANN001, ANN202
        if unit.params["fold"] == 2:
            raise ValueError("worker unit failed on purpose")
        return real(cfg, unit)

    monkeypatch.setattr(main_job, "run_unit", flaky)
    res = run_experiment(cfg, tmp_path / "c", num_workers=2)
    assert res.failures == {
        "breast_cancer/fold_02": "ValueError: worker unit failed on purpose"
    }
    assert set(res.results) == {"breast_cancer/fold_00", "breast_cancer/fold_01"}


def test_default_local_workers() -> None:
    from torchsvm.experiments.runner import default_local_workers

    cores = len(os.sched_getaffinity(0))
    # the main job's folds: one worker per core, at most one per unit
    assert default_local_workers(load_config(TINY, FAST), 3) == min(cores, 3)
    assert default_local_workers(load_config(TINY, FAST), 1) == 1
    assert default_local_workers(load_config(TINY, [*FAST, "device=cuda"]), 3) == 1
    # other protocols: one after another in this process
    csvm = load_config(ROOT / "configs" / "csvm-tiny.toml", [])
    assert default_local_workers(csvm, 10) == 1
