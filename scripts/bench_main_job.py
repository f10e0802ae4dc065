"""Wall and CPU time of the main job end to end: ``python -m torchsvm.train`` (issue 14).

Runs ``python -m torchsvm.train --out <fresh folder> --no-progress [TRAIN_ARGS...]``
(defaults: configs/default.toml, the main job) in a subprocess ``--repeat`` times and
reports for each run the wall time, the CPU seconds of the command and every process it
started (user + system, from ``getrusage(RUSAGE_CHILDREN)``), the load average before
and after, and the runner's own ``seconds_total``. The environment is passed on as it
is, so ``OMP_NUM_THREADS`` is whatever the caller sets (unset: torch's default, one
thread per core).

``--phases`` adds one more run in a child process that runs ``torchsvm.train.main`` in
process with timers (wall and process CPU seconds; a phase nested in another counts as its own) around:
``imports`` (the modules the main job loads), ``data`` (fold split and
preprocessing), ``solve`` (:func:`~torchsvm.estimators.bootstrap.solve_replicates`,
the batched SVMs of a fold), ``votes`` (OOB accuracies, weights, threshold),
``ensemble`` (probabilities, intervals and scores of the held-out rows), ``platt``
(the Platt baseline's fit and predictions), ``metrics``, ``report`` (assembling the
figures, writing files) and ``plots``. That run uses ``--workers 1`` so every unit runs
in the timed process.

``--compare RUN_DIR`` checks every numeric figure of each run's ``report.json``
(``figures``: the fold means and every fold's metrics, weights, accuracies) against
``RUN_DIR/report.json`` and prints the largest absolute difference. ``--repo DIR`` runs
another source tree (e.g. ``git archive <commit> torchsvm configs | tar -x -C DIR``)
for before / after pairs.

One JSON line per run is appended to ``--out`` (default ``runs/bench/main_job.jsonl``).

Examples::

    python scripts/bench_main_job.py --phases
    python scripts/bench_main_job.py --repeat 2 --compare runs/mainjob-ref
    python scripts/bench_main_job.py -- --set protocol.max_folds=2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "n/a"


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "torchsvm", "scripts"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _numbers(x: Any, prefix: str = "") -> dict[str, float]:
    """Flatten the numeric leaves of a JSON value: {path: value}."""
    out: dict[str, float] = {}
    if isinstance(x, dict):
        for k, v in x.items():
            out.update(_numbers(v, f"{prefix}/{k}"))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.update(_numbers(v, f"{prefix}[{i}]"))
    elif isinstance(x, bool):
        out[prefix] = float(x)
    elif isinstance(x, int | float):
        out[prefix] = float(x)
    return out


def compare_figures(run: Path, ref: Path) -> dict[str, Any]:
    """Largest absolute difference of the numeric figures of two run folders."""
    a = _numbers(json.loads((run / "report.json").read_text())["figures"])
    b = _numbers(json.loads((ref / "report.json").read_text())["figures"])
    common = sorted(set(a) & set(b))
    worst, where = 0.0, ""
    for k in common:
        va, vb = a[k], b[k]
        if va != va and vb != vb:  # both nan
            continue
        d = abs(va - vb)
        if not d <= worst:
            worst, where = d, k
    return {
        "n_figures": len(common),
        "only_one_side": len(set(a) ^ set(b)),
        "max_abs_diff": worst,
        "at": where,
    }


def _env(repo: Path) -> dict[str, str]:
    """The caller's environment with ``repo`` first on the import path."""
    old = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(repo) + (os.pathsep + old if old else "")}


def run_once(train_args: Sequence[str], out_dir: Path, repo: Path) -> dict[str, Any]:
    """One ``python -m torchsvm.train`` in a subprocess: wall, CPU, load."""
    cmd = [sys.executable, "-m", "torchsvm.train", "--out", str(out_dir)]
    cmd += ["--no-progress", *train_args]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = _load()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=_env(repo), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec: dict[str, Any] = {
        "command": " ".join(["python", "-m", "torchsvm.train", *train_args]),
        "returncode": proc.returncode,
        "wall_s": wall,
        "cpu_user_s": r1.ru_utime - r0.ru_utime,
        "cpu_sys_s": r1.ru_stime - r0.ru_stime,
        "load_before": load0,
        "load_after": _load(),
    }
    rec["cpu_s"] = rec["cpu_user_s"] + rec["cpu_sys_s"]
    rep = out_dir / "report.json"
    if rep.is_file():
        meta = json.loads(rep.read_text())["meta"]
        rec["runner_seconds_total"] = meta.get("seconds_total")
        rec["seconds_per_unit"] = meta.get("seconds_per_unit")
        rec["n_threads"] = meta.get("n_threads")
        rec["n_workers"] = meta.get("n_workers")
    if proc.returncode != 0:
        rec["stderr_tail"] = proc.stderr[-2000:]
    rec["stdout_tail"] = proc.stdout[-1500:]
    return rec


# ----------------------------------------------------------------- phases child
_ACC: dict[str, list[float]] = {}
_STACK: list[list[float]] = []  # per open phase: [inner wall, inner CPU]


def _timed(name: str, fn: Any) -> Any:
    """``fn`` with its wall and CPU seconds added to phase ``name``, less the time of
    phases nested in it (which count as their own)."""

    def wrapper(*a: Any, **k: Any) -> Any:
        _STACK.append([0.0, 0.0])
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            dw, dc = time.perf_counter() - t0, time.process_time() - c0
            inner = _STACK.pop()
            if _STACK:
                _STACK[-1][0] += dw
                _STACK[-1][1] += dc
            acc = _ACC.setdefault(name, [0.0, 0.0, 0])
            acc[0] += dw - inner[0]
            acc[1] += dc - inner[1]
            acc[2] += 1

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _phases_child(out_dir: str, train_args: Sequence[str], result: str) -> int:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    t0, c0 = time.perf_counter(), time.process_time()
    import torchsvm.estimators.bootstrap as eb
    import torchsvm.estimators.calibration as ec
    import torchsvm.experiments.bootstrap as xb
    import torchsvm.experiments.report as xr
    import torchsvm.experiments.runner  # noqa: F401
    import torchsvm.metrics as tm
    import torchsvm.train as tt

    _ACC["imports"] = [time.perf_counter() - t0, time.process_time() - c0, 1]
    est = eb.BootstrapProbabilitySVC
    xb.load_fold_data = _timed("data", xb.load_fold_data)
    eb.solve_replicates = _timed("solve", eb.solve_replicates)
    est._fit_votes = _timed("votes", est._fit_votes)
    for m in (
        "predict_proba",
        "predict_proba_interval",
        "bootstrap_decision_function",
        "score_interval",
    ):
        setattr(est, m, _timed("ensemble", getattr(est, m)))
    ec.CalibratedSVC.fit = _timed("platt", ec.CalibratedSVC.fit)
    ec.CalibratedSVC.predict_proba = _timed("platt", ec.CalibratedSVC.predict_proba)
    tm.summarize_probabilities = _timed("metrics", tm.summarize_probabilities)
    xb.assemble = _timed("report", xb.assemble)
    xb.write_plots = _timed("plots", xb.write_plots)
    xr.ProtocolReport.write_files = _timed("report", xr.ProtocolReport.write_files)
    t1, c1 = time.perf_counter(), time.process_time()
    rc = tt.main(["--out", out_dir, "--no-progress", "--workers", "1", *train_args])
    _ACC.pop("main", None)
    _ACC["main"] = [time.perf_counter() - t1, time.process_time() - c1, 1]
    named = sum(v[1] for k, v in _ACC.items() if k not in ("main", "imports"))
    named_wall = sum(v[0] for k, v in _ACC.items() if k not in ("main", "imports"))
    _ACC["other"] = [_ACC["main"][0] - named_wall, _ACC["main"][1] - named, 1]
    Path(result).write_text(json.dumps({"rc": rc, "phases": _ACC}))
    return rc


def run_phases(train_args: Sequence[str], out_dir: Path, repo: Path) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        result = f.name
    cmd = [sys.executable, __file__, "--_phases-child", str(out_dir), result, "--"]
    load0 = _load()
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [*cmd, *train_args], cwd=repo, env=_env(repo), capture_output=True, text=True
    )
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec: dict[str, Any] = {
        "command": "phases: " + " ".join(["python -m torchsvm.train", *train_args]),
        "returncode": proc.returncode,
        "wall_s": time.perf_counter() - t0,
        "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
        "load_before": load0,
        "load_after": _load(),
    }
    try:
        rec["phases"] = {
            k: {"wall_s": v[0], "cpu_s": v[1], "calls": int(v[2])}
            for k, v in json.loads(Path(result).read_text())["phases"].items()
        }
    except (OSError, ValueError, KeyError):
        rec["stderr_tail"] = proc.stderr[-2000:]
    finally:
        Path(result).unlink(missing_ok=True)
    return rec


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--_phases-child"]:
        out_dir, result = argv[1], argv[2]
        rest = argv[3:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return _phases_child(out_dir, rest, result)
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Arguments after -- go to python -m torchsvm.train.",
    )
    ap.add_argument("--repeat", type=int, default=1, help="timed runs (default 1)")
    ap.add_argument("--phases", action="store_true", help="also a run split in phases")
    ap.add_argument("--compare", help="run folder whose report.json figures to compare")
    ap.add_argument(
        "--repo",
        default=str(REPO),
        help="source tree to run (its torchsvm and configs; default: this checkout), "
        "e.g. an earlier commit unpacked with git archive",
    )
    ap.add_argument("--keep", help="folder for the run folders (default: a temp dir)")
    ap.add_argument("--out", default=str(REPO / "runs/bench/main_job.jsonl"))
    args, train_args = ap.parse_known_args(argv)
    if train_args[:1] == ["--"]:
        train_args = train_args[1:]
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench_main_job_"))
    base.mkdir(parents=True, exist_ok=True)
    common = {
        "commit": _git_commit() if Path(args.repo).resolve() == REPO else args.repo,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    records = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(args.repeat):
        rec = {
            **common,
            **run_once(train_args, base / f"run-{stamp}-{i}", Path(args.repo)),
        }
        rec["run_dir"] = str(base / f"run-{stamp}-{i}")
        records.append(rec)
    if args.phases:
        rec = {
            **common,
            **run_phases(train_args, base / f"phases-{stamp}", Path(args.repo)),
        }
        rec["run_dir"] = str(base / f"phases-{stamp}")
        records.append(rec)
    if args.compare:
        for rec in records:
            if Path(rec["run_dir"], "report.json").is_file():
                rec["compare"] = compare_figures(
                    Path(rec["run_dir"]), Path(args.compare)
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")
    for rec in records:
        print(
            f"{rec['command']}: rc {rec['returncode']}, wall {rec['wall_s']:.1f} s, "
            f"CPU {rec['cpu_s']:.1f} s, load {rec['load_before']} -> "
            f"{rec['load_after']}, commit {rec['commit']}, "
            f"OMP_NUM_THREADS={rec['OMP_NUM_THREADS']}"
        )
        if "phases" in rec:
            for k, v in rec["phases"].items():
                print(
                    f"  {k:<10} wall {v['wall_s']:7.2f} s  CPU {v['cpu_s']:7.2f} s"
                    f"  ({v['calls']} calls)"
                )
        if "compare" in rec:
            c = rec["compare"]
            print(
                f"  vs {args.compare}: {c['n_figures']} figures, max |diff| "
                f"{c['max_abs_diff']:.3g} at {c['at']} "
                f"({c['only_one_side']} on one side only)"
            )
        if rec.get("stderr_tail"):
            print(rec["stderr_tail"])
    return 0 if all(r["returncode"] == 0 for r in records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
