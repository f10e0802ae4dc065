"""Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5; thesis ch. 3).

Thin entry point over :mod:`torchsvm.experiments.cost_sensitive`: the same as
``python -m torchsvm.train --config configs/cost_sensitive.toml --out runs/cost_sensitive``; ``--tiny`` uses
``configs/cost_sensitive-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("cost_sensitive"))
