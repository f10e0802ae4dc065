"""Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5; thesis ch. 3).

Thin entry point over :mod:`torchsvm.experiments.cost_sensitive`: the same as
``python -m torchsvm.train --config configs/cost_sensitive.toml --out runs/cost_sensitive``; ``--tiny`` uses
``configs/cost_sensitive-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.

``--ctrl2-workload DATASET [DATASET ...]`` fits nothing of Ctrl2: for fold 0 of each
dataset (``configs/cost_sensitive.toml``) it prints one JSON line with the number of
the ``R * B`` S5c fits per imposed t that need a MIQP
(:func:`torchsvm.experiments.cost_sensitive.ctrl2_workload`).
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
        for name in sys.argv[sys.argv.index("--ctrl2-workload") + 1 :]:
            print(json.dumps(ctrl2_workload(cfg, name)), flush=True)
        raise SystemExit(0)
    raise SystemExit(reproduce("cost_sensitive"))
