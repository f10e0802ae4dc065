"""Command line: ``python -m torchsvm.train`` runs the SPEC S2 bootstrap experiment.

With no arguments it runs configs/default.toml's protocol (the built-in defaults: 10 outer
folds, B = 500, C in 2^-5..2^5, linear kernel) on scikit-learn's bundled breast_cancer
data and writes ``runs/<timestamp>/``. Bad input (unknown key, bad value, missing file,
cuda without a GPU) is a one-line ``error: ...`` on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import torch

from torchsvm.exceptions import TorchSvmError
from torchsvm.experiment import run_experiment
from torchsvm.experiment_config import ConfigError, load_config

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
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, load the config, run the experiment, write the run folder; exit code."""
    try:
        args = _parser().parse_args(argv)
    except _ArgumentError as exc:
        return _fail(str(exc))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    overrides = list(args.overrides) + (
        [f"device={args.device}"] if args.device else []
    )
    try:
        cfg = load_config(args.config, overrides)
    except ConfigError as exc:
        return _fail(str(exc))
    if cfg.device == "cuda" and not torch.cuda.is_available():
        return _fail(
            "device cuda was requested but CUDA is not available on this machine"
        )
    out = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"cannot create run folder {out}: {exc}")
    bar = _progress_bar(cfg.protocol.n_folds, disable=args.no_progress)
    try:
        report = run_experiment(cfg, out, progress=bar)
    except (TorchSvmError, ValueError, FileNotFoundError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    finally:
        bar.close()
    report.write(out, plots=cfg.report.plots, n_interval=cfg.report.n_interval_samples)
    print(
        f"\n{cfg.name}: {cfg.protocol.n_folds} outer folds, B = {cfg.bootstrap.n_bootstrap}, "
        f"{len(cfg.bootstrap.C_grid)} C values, kernel {cfg.bootstrap.kernel}, "
        f"{report.meta['seconds_total']:.1f} s "
        f"({report.meta['n_folds_resumed']} folds resumed)\n"
    )
    print(report.to_table())
    print(
        f"\nwritten to {out}/ (config.toml, report.json, predictions.csv, summary.txt"
        + (
            ", reliability.png, score_intervals.png, roc.png)"
            if cfg.report.plots
            else ")"
        )
    )
    return 0


class _progress_bar:  # noqa: N801 - used like a function
    """tqdm over folds, as a ``progress(done, total, result)`` callback."""

    def __init__(self, total: int, disable: bool) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, desc="outer folds", unit="fold", disable=disable)

    def __call__(self, done: int, total: int, res: dict[str, Any]) -> None:
        mse = res["metrics"]["bootstrap_ensemble"]["mse"]
        self._bar.set_postfix(best_C=res["best_C"], mse=f"{mse:.4f}")
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


if __name__ == "__main__":
    raise SystemExit(main())
