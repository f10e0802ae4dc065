"""Same experiment with ``--backend local`` and ``--backend ray --workers N``: wall time and equality.

Runs ``python -m torchsvm.train`` twice (fresh run folders under ``--out``), then
compares the two ``report.json`` figures (exactly) and ``predictions.csv`` (where the
protocol writes one), and prints one JSON line with both wall times. Example::

    OMP_NUM_THREADS=1 python scripts/bench_backends.py --config configs/default.toml \\
        --set bootstrap.n_bootstrap=100 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def _run(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "torchsvm.train", *args, "--no-progress"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--set", dest="overrides", action="append", default=[])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("runs") / "bench_backends")
    args = ap.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    common = ["--config", args.config]
    for s in args.overrides:
        common += ["--set", s]
    t_local = _run([*common, "--out", str(args.out / "local")])
    t_ray = _run(
        [
            *common,
            "--out",
            str(args.out / "ray"),
            "--backend",
            "ray",
            "--workers",
            str(args.workers),
        ]
    )
    reps = {
        b: json.loads((args.out / b / "report.json").read_text())
        for b in ("local", "ray")
    }
    pred = [args.out / b / "predictions.csv" for b in ("local", "ray")]
    same_pred = (
        pred[0].read_text() == pred[1].read_text()
        if all(p.is_file() for p in pred)
        else None
    )
    row = {
        "config": args.config,
        "overrides": args.overrides,
        "workers": args.workers,
        "n_units": reps["local"]["meta"]["n_units"],
        "seconds_local": round(t_local, 1),
        "seconds_ray": round(t_ray, 1),
        "unit_seconds_local": round(
            sum(v for v in reps["local"]["meta"]["seconds_per_unit"].values() if v), 1
        ),
        "figures_equal": reps["local"]["figures"] == reps["ray"]["figures"],
        "predictions_csv_equal": same_pred,
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(row))
    return 0 if row["figures_equal"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
