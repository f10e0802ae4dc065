"""Unit archives: a run continues from a committed archive on a machine without its folder."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from torchsvm.config import load_config
from torchsvm.experiments import RunFolderError, run_experiment
from torchsvm.experiments import bootstrap as main_job
from torchsvm.experiments.archive import (
    ArchiveError,
    archive_config,
    export_units,
    import_units,
)
from torchsvm.train import main

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "bootstrap-tiny.toml"
FAST = ["bootstrap.n_bootstrap=4", "baselines.platt=false", "report.plots=false"]


def test_run_continues_from_archive_without_recomputing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(TINY, FAST)
    archive = tmp_path / "units.jsonl.gz"
    fresh = run_experiment(cfg, tmp_path / "a")
    # a run that finished two units on one machine ...
    (tmp_path / "a" / "units" / "breast_cancer" / "fold_02.json").unlink()
    assert export_units(tmp_path / "a", archive) == 2
    # ... goes on elsewhere: only the missing unit is computed
    calls: list[str] = []
    real = main_job.run_unit

    def counting(cfg, unit):  # noqa: ANN001, ANN202
        calls.append(unit.key)
        return real(cfg, unit)

    monkeypatch.setattr(main_job, "run_unit", counting)
    res = run_experiment(cfg, tmp_path / "b", archive=archive)
    assert calls == ["breast_cancer/fold_02"]
    assert res.n_resumed == 2 and res.report["meta"]["n_restored"] == 2
    assert res.report["figures"] == fresh.report["figures"]
    # the archive now holds all three units, byte-identical on an unchanged rewrite
    first = archive.read_bytes()
    with gzip.open(archive, "rt") as fh:
        lines = [json.loads(line) for line in fh]
    assert lines[0]["format"] == "torchsvm-units" and lines[0]["n_units"] == 3
    assert [r["key"] for r in lines[1:]] == [
        f"breast_cancer/fold_0{i}" for i in range(3)
    ]
    export_units(tmp_path / "b", archive)
    assert archive.read_bytes() == first


def test_import_keeps_finished_work_and_replaces_only_stale_units(
    tmp_path: Path,
) -> None:
    cfg = load_config(TINY, FAST)
    res = run_experiment(cfg, tmp_path / "a")
    fp = res.report["meta"]["fingerprint"]
    archive = tmp_path / "u.jsonl.gz"
    export_units(tmp_path / "a", archive)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    unit = tmp_path / "b" / "units" / "breast_cancer" / "fold_00.json"
    rec = json.loads(unit.read_text())
    rec["seconds"] = -1.0  # a local, finished unit with the right fingerprint: kept
    unit.write_text(json.dumps(rec))
    stale = tmp_path / "b" / "units" / "breast_cancer" / "fold_01.json"
    rec1 = json.loads(stale.read_text())
    rec1["fingerprint"] = "0" * 16  # another config's unit: replaced by the archive's
    stale.write_text(json.dumps(rec1))
    assert import_units(archive, tmp_path / "b", fingerprint=fp) == 1
    assert json.loads(unit.read_text())["seconds"] == -1.0
    assert json.loads(stale.read_text())["fingerprint"] == fp


def test_bad_archives_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_text("not gzip")
    with pytest.raises(ArchiveError, match="not a gzip unit archive"):
        archive_config(bad)
    other = tmp_path / "other.jsonl.gz"
    other.write_bytes(gzip.compress(b'{"format": "something"}\n'))
    with pytest.raises(ArchiveError, match="not a torchsvm-units archive"):
        import_units(other, tmp_path)
    evil = tmp_path / "evil.jsonl.gz"
    head = {"format": "torchsvm-units", "version": 1, "config": "", "n_units": 1}
    lines = [json.dumps(head), json.dumps({"key": "../../outside"})]
    evil.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(ArchiveError, match="not a relative unit path"):
        import_units(evil, tmp_path / "run")
    assert not (tmp_path / "outside.json").exists()
    with pytest.raises(FileNotFoundError, match="no config.toml"):
        export_units(tmp_path / "nothing", tmp_path / "x.jsonl.gz")
    with pytest.raises(ValueError, match="needs a run folder"):
        run_experiment(load_config(TINY, FAST), None, archive=tmp_path / "x.jsonl.gz")


def test_archive_holds_every_finished_unit_when_the_run_is_stopped(
    tmp_path: Path,
) -> None:
    # a driver killed after its second unit (the machine lost, the run folder with
    # it): the archive already has both finished units, and a new folder resumes them
    archive = tmp_path / "u.jsonl.gz"
    seen: list[str] = []

    def stop_after_two(i: int, total: int, key: str, status: str) -> None:
        seen.append(key)
        if len(seen) == 2:
            raise KeyboardInterrupt

    cfg = load_config(TINY, FAST)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "a", archive=archive, progress=stop_after_two)
    with gzip.open(archive, "rt") as fh:
        keys = [json.loads(line).get("key") for line in fh][1:]
    assert keys == sorted(seen)
    shutil.rmtree(tmp_path / "a")
    again = run_experiment(cfg, tmp_path / "b", archive=archive)
    assert again.n_resumed == 2 and again.report["meta"]["n_restored"] == 2


def test_archive_of_another_config_is_refused(tmp_path: Path) -> None:
    run_experiment(load_config(TINY, FAST), tmp_path / "a")
    archive = tmp_path / "u.jsonl.gz"
    export_units(tmp_path / "a", archive)
    rc = main(
        [
            "--config",
            str(TINY),
            *[a for kv in [*FAST, "protocol.seed=3"] for a in ("--set", kv)],
            "--out",
            str(tmp_path / "b"),
            "--archive",
            str(archive),
            "--no-progress",
        ]
    )
    assert rc == 2  # the restored config.toml says seed 0: refused, nothing written
    assert not (tmp_path / "b" / "units").exists()
    with pytest.raises(RunFolderError):
        run_experiment(
            load_config(TINY, [*FAST, "protocol.seed=3"]),
            tmp_path / "b",
            archive=archive,
        )


def test_cli_report_from_archive_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg_args = [a for kv in FAST for a in ("--set", kv)]
    archive = tmp_path / "u.jsonl.gz"
    out = tmp_path / "a"
    assert (
        main(
            [
                "--config",
                str(TINY),
                *cfg_args,
                "--out",
                str(out),
                "--archive",
                str(archive),
                "--no-progress",
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    capsys.readouterr()
    # a machine with the archive only: --report-only rebuilds the folder and the report
    again = tmp_path / "elsewhere"
    assert (
        main(
            [
                "--out",
                str(again),
                "--archive",
                str(archive),
                "--report-only",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "3 units (3 resumed" in capsys.readouterr().out
    assert (
        json.loads((again / "report.json").read_text())["figures"]
        == (report["figures"])
    )
    assert (again / "config.toml").read_text() == (out / "config.toml").read_text()
    assert main(["--archive", str(archive), "--report-only"]) == 2


def test_written_files_get_the_umask_mode_not_private(tmp_path: Path) -> None:
    import os

    from torchsvm.experiments.report import atomic_write_text

    umask = os.umask(0)
    os.umask(umask)
    atomic_write_text(tmp_path / "a.txt", "x")
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "a.txt").read_text() == "x"
