"""Command line: ``python -m torchsvm.train`` runs any experiment protocol from a config.

With no arguments it runs the main job (configs/default.toml = the built-in defaults:
the SPEC S2 bootstrap protocol, 10 outer folds, B = 500, C in 2^-5..2^5, linear kernel)
on scikit-learn's bundled breast_cancer data and writes ``runs/<timestamp>/``.
``--config configs/<experiment>.toml`` runs another protocol. Rerunning with the same
``--out`` and config resumes; a folder made with another config is refused. Every
error (unknown key, bad value, missing file, cuda without a GPU, foreign run folder) is
one line ``error: ...`` on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from torchsvm.config import ConfigError, load_config

logger = logging.getLogger("torchsvm.train")


class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m torchsvm.train", description=__doc__.splitlines()[0])
    p.add_argument(
        "--config",
        help="TOML config (default: built-in defaults = configs/default.toml)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. bootstrap.n_bootstrap=100",
    )
    p.add_argument(
        "--device", choices=["cpu", "cuda"], help="overrides the config's device"
    )
    p.add_argument(
        "--out", help="run folder (default runs/<timestamp>); reuse it to resume"
    )
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="run the units on this machine (in --workers processes) or as Ray tasks",
    )
    p.add_argument(
        "--address",
        help="Ray cluster address (e.g. auto or ray://head:10001); default: a local "
        "Ray instance",
    )
    p.add_argument(
        "--workers",
        type=int,
        help="local backend: worker processes, one torch thread each (default: one "
        "per CPU core for the main job's folds, else 1: the units one after another "
        "in this process); ray backend: CPUs of the local Ray instance (default: all "
        "of this machine's)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="run no unit: write the report of the units already finished in --out "
        "(the progress of a long run that is still going or was stopped); with --rerun / "
        "--rerun-before, the units those select are left out as not run yet",
    )
    p.add_argument(
        "--rerun",
        action="append",
        default=[],
        metavar="GLOB",
        help="compute finished units whose key matches GLOB again, e.g. 'australian/*' "
        "(after a fix that changes results but not the config); repeatable",
    )
    p.add_argument(
        "--rerun-before",
        metavar="TIME",
        help="compute finished units that finished before TIME (ISO 8601, UTC if no "
        "offset, e.g. 2026-11-23T02:30) again",
    )
    p.add_argument(
        "--archive",
        metavar="FILE",
        help="unit archive (.jsonl.gz) kept in step with --out: its units that --out "
        "lacks are restored before running, and it is rewritten with every finished "
        "unit afterwards (also with --report-only; an --out folder that does not exist "
        "yet gets the archive's config), so a long run continues on another machine",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _fail(message: str) -> int:
    text = message.splitlines()[0] if message else "failed"
    print(f"error: {text}", file=sys.stderr)
    return 2


def _restore_config(archive: Path, out: Path) -> str | None:
    """Give a new run folder ``out`` the config of ``archive``; an error message or None."""
    from torchsvm.experiments.archive import ArchiveError, archive_config

    try:
        text = archive_config(archive)
    except ArchiveError as exc:
        return f"--archive: {exc}"
    if (out / "config.toml").is_file() or (out.is_dir() and any(out.iterdir())):
        return None
    from torchsvm.experiments.report import atomic_write_text

    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "config.toml", text)
    except OSError as exc:
        return f"cannot create run folder {out}: {exc}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, load the config, run the experiment, write the run folder; exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except _ArgumentError as exc:
        return _fail(str(exc))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.address and args.backend != "ray":
        return _fail("--address needs --backend ray")
    if args.workers is not None and args.workers < 1:
        return _fail(f"--workers must be >= 1; got {args.workers}")
    from torchsvm.experiments.runner import parse_time

    try:
        rerun_before = parse_time(args.rerun_before) if args.rerun_before else None
    except ValueError as exc:
        return _fail(f"--rerun-before: {exc}")
    if args.archive and not args.out:
        return _fail("--archive needs --out, the run folder it keeps in step with")
    if args.archive and Path(args.archive).is_file():
        restored = _restore_config(Path(args.archive), Path(args.out))
        if restored is not None:
            return _fail(restored)
    if args.report_only:
        if not args.out:
            return _fail("--report-only needs --out, the run folder to report on")
        if not (Path(args.out) / "config.toml").is_file():
            return _fail(
                f"--report-only: {args.out} is not a run folder (no config.toml)"
            )
        if not args.config:
            args.config = str(Path(args.out) / "config.toml")
    overrides = list(args.overrides) + (
        [f"device={args.device}"] if args.device else []
    )
    try:
        cfg = load_config(args.config, overrides)
    except ConfigError as exc:
        return _fail(str(exc))
    import torch

    if cfg.device == "cuda" and not torch.cuda.is_available():
        return _fail(
            "device cuda was requested but CUDA is not available on this machine"
        )
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            return _fail('backend ray needs Ray: pip install -e ".[ray]"')
    out = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"cannot create run folder {out}: {exc}")
    from tqdm.contrib.logging import logging_redirect_tqdm

    from torchsvm.exceptions import TorchSvmError
    from torchsvm.experiments.runner import (
        RunFolderError,
        default_local_workers,
        get_protocol,
        run_experiment,
    )

    workers = args.workers
    if workers is None and args.backend == "local" and not args.report_only:
        workers = default_local_workers(
            cfg, len(get_protocol(cfg.experiment).units(cfg))
        )

    bar = _ProgressBar(disable=args.no_progress)
    try:
        # log records (e.g. "unit ... failed") go through tqdm.write: never onto the
        # progress bar's line
        with logging_redirect_tqdm():
            result = run_experiment(
                cfg,
                out,
                backend=args.backend,
                address=args.address,
                num_workers=workers,
                progress=bar,
                command="python -m torchsvm.train " + shlex.join(argv),
                execute=not args.report_only,
                rerun=args.rerun,
                rerun_before=rerun_before,
                archive=args.archive,
            )
    except (
        RunFolderError,
        TorchSvmError,
        ValueError,
        FileNotFoundError,
        ImportError,
    ) as exc:
        bar.close()
        return _fail(str(exc) or type(exc).__name__)
    bar.close()
    meta = result.report["meta"]
    print(
        f"\n{cfg.experiment} / {cfg.name}: {meta['n_units']} units "
        f"({meta['n_resumed']} resumed, {meta['n_failed']} failed"
        + (f", {meta['n_pending']} not run yet" if meta["n_pending"] else "")
        + "), "
        f"{meta['seconds_total']:.1f} s, backend {args.backend}\n"
    )
    print(result.protocol_report.text)
    for f in result.report["failures"]:
        print(f"failed unit {f['unit']}: {f['error']}")
    names = ", ".join(p.name for p in result.files)
    print(f"\nwritten to {out}/ ({names})")
    return 1 if result.failures else 0


def reproduce(experiment: str, argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scripts/reproduce_<experiment>.py``.

    ``--tiny`` picks ``configs/<experiment>-tiny.toml`` (else ``configs/<experiment>.toml``)
    and the default ``--out`` is ``runs/<experiment>[-tiny]``; every other flag is
    passed on to :func:`main`.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    tiny = "--tiny" in args
    args = [a for a in args if a != "--tiny"]
    stem = f"{experiment}-tiny" if tiny else experiment
    configs = Path(__file__).resolve().parents[1] / "configs"
    if "--config" not in args:
        args = ["--config", str(configs / f"{stem}.toml"), *args]
    if "--out" not in args:
        args = [*args, "--out", str(Path("runs") / stem)]
    return main(args)


class _ProgressBar:
    """tqdm over units, as a ``progress(done, total, key, status)`` callback."""

    def __init__(self, disable: bool) -> None:
        self._disable = disable
        self._bar = None

    def __call__(self, done: int, total: int, key: str, status: str) -> None:
        if self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=total, desc="units", unit="unit", disable=self._disable
            )
        self._bar.set_postfix_str(f"{key} {status}")
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


if __name__ == "__main__":
    raise SystemExit(main())
