"""One runner for every protocol: units, fold-wise data, fingerprint resume, backends.

An experiment (``ExperimentConfig.experiment``) is a protocol module with

- ``units(cfg) -> list[Unit]``: the independent pieces of work, e.g. one per
  (dataset, kernel, outer fold);
- ``run_unit(cfg, unit) -> dict``: a pure function of the config and the unit (every
  seed is derived from ``protocol.seed`` and the unit), JSON-able result;
- ``assemble(cfg, results, failures) -> ProtocolReport``: the figures, the readable
  summary and the plots, from all finished units.

:func:`run_experiment` writes into the run folder ``out/``:

- ``config.toml``: the resolved config; a folder made with a config whose results differ
  (see :func:`torchsvm.config.config_diff`) is refused with :class:`RunFolderError`.
  Keys that only select units (``data.datasets``, ``protocol.max_folds``,
  ``probabilities.kernels``, ...) may change: the folder keeps every unit it has and
  the report covers the units the current config names;
- ``units/<key>.json``: each finished unit with the config fingerprint, written as soon
  as it finishes; a later run with the same config skips it (so a killed driver
  resumes where it stopped). Each unit file also records when it finished and the code
  that made it (``torchsvm`` version, git commit and whether the tree had uncommitted
  changes, where a git checkout is found). After a fix that changes results but not the
  config, ``rerun=`` (globs over unit keys) or ``rerun_before=`` (a finish time) make
  those units run again. A unit that raises is recorded in ``failures.json`` and in
  the report while the others finish; it is retried on the next run;
- ``report.json`` (figures, failures, meta), ``summary.md`` and the protocol's plots.

A run folder is scratch space; ``archive=`` keeps a committed copy of its units in step
with it (:mod:`torchsvm.experiments.archive`), so a run continues on another machine.

Every file is written atomically (a temporary file in the same folder, then
``os.replace``). Backends: ``local`` runs the units one after another in this process,
or in ``num_workers`` forked worker processes with one torch thread each;
``ray`` runs them as Ray tasks (a local Ray instance, or the cluster at ``address``),
one CPU per task and ``num_gpus`` per task when the device is cuda. Both call the same
``run_unit``, so the same config gives the same figures.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import importlib
import logging
import platform
import subprocess
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import (
    ExperimentConfig,
    config_diff,
    config_fingerprint,
    load_config,
    to_toml,
)
from torchsvm.experiments.archive import export_units, import_units
from torchsvm.experiments.report import (
    ProtocolReport,
    atomic_write_json,
    atomic_write_text,
    read_json,
)

__all__ = [
    "RunFolderError",
    "RunResult",
    "Unit",
    "get_protocol",
    "load_fold_data",
    "run_experiment",
]

logger = logging.getLogger(__name__)

#: experiment name -> module implementing it
PROTOCOLS = {
    "bootstrap": "torchsvm.experiments.bootstrap",
    "probabilities": "torchsvm.experiments.probabilities",
    "implied": "torchsvm.experiments.implied",
    "sensitivity": "torchsvm.experiments.sensitivity",
    "csvm": "torchsvm.experiments.csvm",
    "cost_sensitive": "torchsvm.experiments.cost_sensitive",
    "feature_selection": "torchsvm.experiments.feature_selection",
    "dea": "torchsvm.experiments.dea",
}


class RunFolderError(ValueError):
    """The run folder belongs to another config (never overwritten) or is unusable."""


@dataclass(frozen=True)
class Unit:
    """One independent piece of work.

    Parameters
    ----------
    key : str
        Unique path-like name, e.g. ``"german/linear/fold_03"`` (its file name).
    params : dict
        JSON-able parameters ``run_unit`` reads (dataset, kernel, fold, ...).
    """

    key: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    """What :func:`run_experiment` returns (``report`` is also in ``report.json``)."""

    report: dict[str, Any]
    protocol_report: ProtocolReport
    results: dict[str, dict[str, Any]]
    failures: dict[str, str]
    n_resumed: int
    seconds: float
    files: list[Path] = field(default_factory=list)


def get_protocol(experiment: str) -> Any:
    """The protocol module of ``experiment``."""
    try:
        return importlib.import_module(PROTOCOLS[experiment])
    except KeyError:
        raise ValueError(
            f"unknown experiment {experiment!r}; choose from {sorted(PROTOCOLS)}"
        ) from None


# --------------------------------------------------------------------- data helpers
@lru_cache(maxsize=8)
def _dataset(name: str, data_dir: str, target: str) -> Any:
    from torchsvm.data.datasets import load_dataset

    return load_dataset(name, data_dir or None, target=target or None)


def subsample_rows(y: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    """Sorted row indices: all rows, or a stratified subsample of ``max_rows``."""
    from sklearn.model_selection import train_test_split

    n = y.shape[0]
    if max_rows <= 0 or n <= max_rows:
        return np.arange(n)
    keep, _ = train_test_split(
        np.arange(n), train_size=max_rows, stratify=y, random_state=seed
    )
    return np.sort(keep)


def load_fold_data(
    cfg: ExperimentConfig,
    dataset: str,
    fold: int,
    n_folds: int | None = None,
    max_rows: int | None = None,
    max_train_rows: int = 0,
    target: str | None = None,
) -> dict[str, Any]:
    """One outer fold with its preprocessing fitted on the training rows only.

    ``max_rows`` (default ``data.max_rows``) subsamples the dataset before the split;
    ``max_train_rows`` > 0 subsamples only the training part (stratified; the test
    fold stays whole); ``target`` overrides ``data.target``. ``n_folds`` equal to the
    number of rows kept is leave-one-out (fold ``k`` holds out row ``k``).

    Returns
    -------
    dict
        ``X_train, y_train, X_test, y_test`` (numpy, preprocessed), ``train``/``test``
        (row indices into the dataset), ``dataset`` (the loaded ``Dataset``), ``keep``
        (the rows used after ``max_rows`` subsampling).
    """
    from torchsvm.data.preprocess import make_preprocessor_for
    from torchsvm.data.resample import outer_folds

    ds = _dataset(
        dataset, cfg.data.data_dir, cfg.data.target if target is None else target
    )
    y_all = np.asarray(ds.y)
    keep = subsample_rows(
        y_all,
        cfg.data.max_rows if max_rows is None else max_rows,
        cfg.protocol.seed,
    )
    y = y_all[keep]
    k = cfg.protocol.n_folds if n_folds is None else n_folds
    if k == y.size:  # leave-one-out: fold k holds out row k
        te = np.array([fold], dtype=np.int64)
        tr = np.delete(np.arange(y.size, dtype=np.int64), fold)
    else:
        tr, te = outer_folds(y, k, random_state=cfg.protocol.seed)[fold]
    if 0 < max_train_rows < tr.size:
        tr = np.sort(tr[subsample_rows(y[tr], max_train_rows, cfg.protocol.seed)])
    X = ds.X.iloc[keep]
    pre = make_preprocessor_for(ds).fit(X.iloc[tr])
    return {
        "X_train": np.asarray(pre.transform(X.iloc[tr]), dtype=np.float64),
        "y_train": y[tr],
        "X_test": np.asarray(pre.transform(X.iloc[te]), dtype=np.float64),
        "y_test": y[te],
        "train": keep[tr],
        "test": keep[te],
        "dataset": ds,
        "keep": keep,
    }


# -------------------------------------------------------------------------- runner
def _unit_path(out: Path, key: str) -> Path:
    return out / "units" / f"{key}.json"


def _prepare_folder(out: Path, cfg: ExperimentConfig) -> None:
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"run folder {out} exists and is not a folder")
    old_path = out / "config.toml"
    if old_path.is_file():
        try:
            old = load_config(old_path)
        except ValueError as exc:
            raise RunFolderError(
                f"run folder {out} has an unreadable config.toml ({exc}); use another --out"
            ) from None
        diff = config_diff(old, cfg)
        if diff:
            more = f" (+{len(diff) - 1} more)" if len(diff) > 1 else ""
            raise RunFolderError(
                f"run folder {out} was made with another config ({diff[0]}{more}); "
                "use another --out or the same config"
            )
    elif out.is_dir() and any(out.iterdir()):
        raise RunFolderError(
            f"run folder {out} is not empty and has no config.toml; use another --out"
        )
    atomic_write_text(old_path, to_toml(cfg))


@lru_cache(maxsize=1)
def code_version() -> dict[str, Any]:
    """The code a unit was computed with: torchsvm version, git commit, dirty flag."""
    import torchsvm

    info: dict[str, Any] = {"torchsvm": getattr(torchsvm, "__version__", None)}
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "torchsvm"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return info
    info["git_commit"] = commit
    info["git_dirty"] = bool(dirty)
    return info


def _finished_at(record: dict[str, Any], path: Path) -> _dt.datetime:
    stamp = record.get("finished_at")
    if isinstance(stamp, str):
        try:
            return _dt.datetime.fromisoformat(stamp)
        except ValueError:
            pass
    return _dt.datetime.fromtimestamp(path.stat().st_mtime, tz=_dt.UTC)


def parse_time(text: str) -> _dt.datetime:
    """An ISO 8601 time (``2026-11-23T02:30``, ``2026-11-23 02:30:00+00:00``); UTC if naive.

    Raises
    ------
    ValueError
        ``text`` is not an ISO 8601 time.
    """
    try:
        t = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-11-23T02:30, UTC if no offset)"
        ) from None
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.UTC)


def _run_unit_safely(cfg: ExperimentConfig, unit: Unit) -> tuple[str, Any, float]:
    """``("ok", result, seconds)`` or ``("error", one-line message, seconds)``."""
    t0 = time.perf_counter()
    try:
        res = get_protocol(cfg.experiment).run_unit(cfg, unit)
    except Exception as exc:  # a failed unit is reported; the others go on
        logger.debug("unit %s failed:\n%s", unit.key, traceback.format_exc())
        msg = str(exc).splitlines()[0] if str(exc) else ""
        return (
            "error",
            f"{type(exc).__name__}: {msg}".rstrip(": "),
            (time.perf_counter() - t0),
        )
    return "ok", res, time.perf_counter() - t0


OnDone = Callable[[Unit, str, Any, float], None]


def _execute_local(
    cfg: ExperimentConfig, units: Sequence[Unit], on_done: OnDone, workers: int = 1
) -> None:
    if workers > 1 and len(units) > 1:
        _execute_processes(cfg, units, on_done, min(workers, len(units)))
        return
    if workers > 1:
        # one unit left: here, but with the workers' single thread, so that its
        # figures do not depend on how many units were pending (thread counts change
        # the rounding of reductions)
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for unit in units:
                on_done(unit, *_run_unit_safely(cfg, unit))
        finally:
            torch.set_num_threads(threads)
        return
    for unit in units:
        status, payload, seconds = _run_unit_safely(cfg, unit)
        on_done(unit, status, payload, seconds)


def _init_worker(parent: int) -> None:
    """A unit worker runs one torch thread (the workers share the cores) and ends with
    its driver: a killed driver would otherwise leave its forked workers waiting on the
    task queue for ever (they hold its write end themselves)."""
    import os
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: SIGTERM when the driver dies
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the driver died before prctl
        os._exit(1)
    import torch

    torch.set_num_threads(1)


def _execute_processes(
    cfg: ExperimentConfig, units: Sequence[Unit], on_done: OnDone, workers: int
) -> None:
    """The units in ``workers`` forked processes, one torch thread each.

    The workers are forked from this process, so they start with its modules loaded
    (no second import of torch and scikit-learn) and see the same protocol functions.
    One thread per worker also keeps a forked child off an OpenMP thread pool its
    parent may have started. Results come back in the order the units finish;
    :func:`run_experiment` reports them in unit order. A worker that dies (killed,
    out of memory) fails its unit and the units not started yet; the workers end
    when the driver dies.
    """
    import multiprocessing as mp
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("fork")
    ex = ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    )
    try:
        futs = {ex.submit(_run_unit_safely, cfg, u): u for u in units}
        for fut in as_completed(futs):
            unit = futs[fut]
            try:
                status, payload, seconds = fut.result()
            except BrokenProcessPool as exc:
                msg = str(exc).splitlines()[0] if str(exc) else ""
                status, payload, seconds = (
                    "error",
                    f"{type(exc).__name__}: {msg}".rstrip(": "),
                    float("nan"),
                )
            on_done(unit, status, payload, seconds)
    except BaseException:
        # Ctrl-C or an error in the driver: stop now, do not wait for queued units
        for proc in list((getattr(ex, "_processes", None) or {}).values()):
            proc.terminate()
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


def default_local_workers(cfg: ExperimentConfig, n_units: int) -> int:
    """Worker processes of the local backend when none are asked for.

    One per usable CPU core (at most one per unit) for protocols whose units are small
    and many (``PARALLEL_UNITS = True`` in the protocol module: the main job's folds),
    on the CPU; else 1 (the units run in this process, one after another).
    """
    import os
    import sys

    protocol = get_protocol(cfg.experiment)
    if not getattr(protocol, "PARALLEL_UNITS", False) or cfg.device != "cpu":
        return 1
    if not sys.platform.startswith("linux"):
        return 1  # the workers are forked
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_units))


def _execute_ray(
    cfg: ExperimentConfig,
    units: Sequence[Unit],
    on_done: OnDone,
    address: str | None,
    num_workers: int | None,
    num_gpus: float,
) -> None:
    from torchsvm.parallel import ray_session

    with ray_session(address, num_workers) as ray:
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": 0}
        if cfg.device == "cuda":
            opts["num_gpus"] = num_gpus
        task = ray.remote(_run_unit_safely).options(**opts)
        cfg_ref = ray.put(cfg)
        refs = {task.remote(cfg_ref, u): u for u in units}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                unit = refs[ref]
                try:
                    status, payload, seconds = ray.get(ref)
                except Exception as exc:  # the worker died (OOM, node lost)
                    msg = str(exc).splitlines()[0] if str(exc) else ""
                    status, payload, seconds = (
                        "error",
                        f"{type(exc).__name__}: {msg}",
                        float("nan"),
                    )
                on_done(unit, status, payload, seconds)


def run_experiment(
    cfg: ExperimentConfig,
    out_dir: str | Path | None = None,
    *,
    backend: str = "local",
    address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 1.0,
    progress: Callable[[int, int, str, str], None] | None = None,
    command: str | None = None,
    execute: bool = True,
    rerun: Sequence[str] = (),
    rerun_before: _dt.datetime | None = None,
    archive: str | Path | None = None,
) -> RunResult:
    """Run every unit of ``cfg``'s protocol (resuming finished ones) and assemble the report.

    Parameters
    ----------
    cfg : ExperimentConfig
    out_dir : path, optional
        Run folder (see the module docstring). Without it nothing is written and
        nothing is resumed.
    backend : {"local", "ray"}
    address : str, optional
        Ray cluster address (``ray`` backend); None starts a local instance.
    num_workers : int, optional
        ``local``: worker processes (forked, one torch thread each; None or 1: the
        units run in this process, one after another; see
        :func:`default_local_workers`). ``ray``: CPUs of a local Ray instance (None:
        all of this machine's).
    num_gpus : float
        GPUs per Ray task when ``cfg.device == "cuda"``.
    progress : callable, optional
        ``progress(done, total, key, status)`` after each unit (also resumed ones).
    command : str, optional
        The command line, quoted in the summary.
    execute : bool
        False: run nothing, assemble the report from the units already finished in
        ``out_dir`` (a long run's progress report; ``meta["n_pending"]`` counts the rest).
        Units that ``rerun`` / ``rerun_before`` select count as not run: left out.
    rerun : sequence of str
        Globs over unit keys (``fnmatch``, e.g. ``"australian/*"``): finished units that
        match are computed again (after a fix that changes results, not the config).
    rerun_before : datetime, optional
        Finished units that finished before this time are computed again.
    archive : path, optional
        A unit archive (:mod:`torchsvm.experiments.archive`) to keep in step with
        ``out_dir``: where it exists, the units it has and ``out_dir`` lacks are
        restored first; it is rewritten with every unit of ``out_dir`` as each unit
        finishes (so a lost run folder costs only the units in progress) and after
        the run (or the report). Needs ``out_dir``.

    Raises
    ------
    RunFolderError
        ``out_dir`` was made with a config whose results differ.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray'; got {backend!r}")
    t_start = time.perf_counter()
    protocol = get_protocol(cfg.experiment)
    out = None if out_dir is None else Path(out_dir)
    if archive is not None and out is None:
        raise ValueError("archive needs a run folder (out_dir)")
    if out is not None:
        _prepare_folder(out, cfg)
    fp = config_fingerprint(cfg)
    n_restored = 0
    if archive is not None and Path(archive).is_file():
        n_restored = import_units(archive, out, fingerprint=fp)
    units = list(protocol.units(cfg))
    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        raise RuntimeError(f"protocol {cfg.experiment} made duplicate unit keys")
    results: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    pending: list[Unit] = []
    for u in units:
        path = None if out is None else _unit_path(out, u.key)
        done = None if path is None else read_json(path)
        stale = done is not None and (
            any(fnmatch.fnmatchcase(u.key, g) for g in rerun)
            or (
                rerun_before is not None
                and path is not None
                and _finished_at(done, path) < rerun_before
            )
        )
        if (
            done is not None
            and not stale
            and done.get("fingerprint") == fp
            and done.get("params") == u.params
        ):
            results[u.key] = done["result"]
            seconds[u.key] = done.get("seconds", float("nan"))
        else:
            pending.append(u)
    n_resumed = len(results)
    total = len(units)
    if progress is not None:
        for i, key in enumerate(k for k in keys if k in results):
            progress(i + 1, total, key, "resumed")

    def on_done(unit: Unit, status: str, payload: Any, secs: float) -> None:
        seconds[unit.key] = secs
        if status == "ok":
            results[unit.key] = payload
            if out is not None:
                atomic_write_json(
                    _unit_path(out, unit.key),
                    {
                        "key": unit.key,
                        "params": unit.params,
                        "fingerprint": fp,
                        "seconds": secs,
                        "finished_at": _dt.datetime.now(_dt.UTC).isoformat(
                            timespec="seconds"
                        ),
                        "code": code_version(),
                        "result": payload,
                    },
                )
                if archive is not None:
                    # every finished unit is in the committed archive at once: a
                    # machine that loses the run folder loses only the unit in progress
                    export_units(out, archive)
        else:
            failures[unit.key] = payload
            logger.warning("unit %s failed: %s", unit.key, payload)
            if out is not None:
                atomic_write_json(out / "failures.json", failures)
        if progress is not None:
            progress(len(results) + len(failures), total, unit.key, status)

    if pending and execute:
        if backend == "ray":
            _execute_ray(cfg, pending, on_done, address, num_workers, num_gpus)
        else:
            _execute_local(cfg, pending, on_done, num_workers or 1)
    if out is not None and not failures and execute:
        (out / "failures.json").unlink(missing_ok=True)
    n_pending = 0 if execute else len(pending)
    ordered = {k: results[k] for k in keys if k in results}
    rep = protocol.assemble(cfg, ordered, failures)
    wall = time.perf_counter() - t_start
    report = {
        "experiment": cfg.experiment,
        "name": cfg.name,
        "figures": rep.figures,
        "failures": [{"unit": k, "error": v} for k, v in failures.items()],
        "meta": {
            "fingerprint": fp,
            "backend": backend,
            # local: worker processes (1: units in the driver process; with more, each
            # unit ran on one torch thread); ray: the local instance's CPUs (None: all)
            "n_workers": num_workers if backend == "ray" else max(1, num_workers or 1),
            "device": cfg.device,
            "n_units": total,
            "n_resumed": n_resumed,
            "n_failed": len(failures),
            "n_pending": n_pending,
            "n_restored": n_restored,
            "seconds_total": wall,
            "seconds_per_unit": {k: seconds.get(k) for k in keys},
            "command": command,
            "code": code_version(),
            **_versions(),
        },
    }
    files: list[Path] = []
    if out is not None:
        atomic_write_json(out / "report.json", report)
        atomic_write_text(out / "summary.md", rep.markdown(report) + "\n")
        files = [out / "config.toml", out / "report.json", out / "summary.md"]
        files += rep.write_files(out, plots=cfg.report.plots)
        if archive is not None:
            export_units(out, archive)
            files.append(Path(archive))
    return RunResult(
        report=report,
        protocol_report=rep,
        results=ordered,
        failures=failures,
        n_resumed=n_resumed,
        seconds=wall,
        files=files,
    )


def _versions() -> dict[str, Any]:
    import torch

    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "n_threads": torch.get_num_threads(),
    }
