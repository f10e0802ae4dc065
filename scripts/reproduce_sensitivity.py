"""Reproduce the sensitivity-control experiment (SPEC S1 / S1b, Veropoulos et al.).

Thin entry point over :mod:`torchsvm.experiments.sensitivity`: the same as
``python -m torchsvm.train --config configs/sensitivity.toml --out runs/sensitivity``; ``--tiny`` uses
``configs/sensitivity-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("sensitivity"))
