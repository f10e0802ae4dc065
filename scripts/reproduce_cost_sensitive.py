"""Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5; thesis ch. 3).

Thin entry point over :mod:`torchsvm.experiments.cost_sensitive`: the same as
``python -m torchsvm.train --config configs/cost_sensitive.toml --out runs/cost_sensitive``; ``--tiny`` uses
``configs/cost_sensitive-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.

``--ctrl2-workload DATASET [DATASET ...]`` fits nothing of Ctrl2: for fold 0 of each
dataset (``configs/cost_sensitive.toml``) it prints one JSON line with the number of
the ``R * B`` S5c fits per imposed t that need a MIQP
(:func:`torchsvm.experiments.cost_sensitive.ctrl2_workload`); with
``--miqp-cpu-seconds S`` (CPU seconds per MIQP, e.g. a pilot's median) also the CPU-hours
of that fold and of all folds.

``--ctrl2-pilot DATASET REPLICATES`` fits Ctrl2's S5c path (every C and t of
``configs/cost_sensitive.toml``, its MIQP time limit) on fold 0 for the replicates
``REPLICATES`` (comma-separated indices into the run's B draws) and prints one JSON line:
how each fit was obtained, MIQP seconds per t and the fold's extrapolated seconds
(:func:`torchsvm.experiments.cost_sensitive.ctrl2_pilot`). ``--set KEY=VALUE`` options
after it override the config (e.g. ``--set mip.time_limit=300``); ``--share-seeds``
seeds each MIQP with every earlier fit of its replicate (``fit_s5c_path(share_seeds=
True)``), to measure what that saves against the default seeding.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torchsvm.train import reproduce

if __name__ == "__main__":
    if "--ctrl2-workload" in sys.argv:
        from torchsvm.config import load_config
        from torchsvm.experiments.cost_sensitive import ctrl2_workload

        root = Path(__file__).resolve().parents[1]
        cfg = load_config(root / "configs" / "cost_sensitive.toml")
        args = sys.argv[sys.argv.index("--ctrl2-workload") + 1 :]
        secs = None
        if "--miqp-cpu-seconds" in args:
            at = args.index("--miqp-cpu-seconds")
            secs = float(args[at + 1])
            args = args[:at] + args[at + 2 :]
        for name in args:
            print(json.dumps(ctrl2_workload(cfg, name, 0, secs)), flush=True)
        raise SystemExit(0)
    if "--ctrl2-pilot" in sys.argv:
        from torchsvm.config import load_config
        from torchsvm.experiments.cost_sensitive import ctrl2_pilot

        at = sys.argv.index("--ctrl2-pilot")
        name, reps = sys.argv[at + 1], sys.argv[at + 2]
        sets = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--set"]
        root = Path(__file__).resolve().parents[1]
        cfg = load_config(root / "configs" / "cost_sensitive.toml", sets)
        rep = [int(r) for r in reps.split(",")]
        share = "--share-seeds" in sys.argv
        print(json.dumps(ctrl2_pilot(cfg, name, 0, rep, share)), flush=True)
        raise SystemExit(0)
    raise SystemExit(reproduce("cost_sensitive"))
