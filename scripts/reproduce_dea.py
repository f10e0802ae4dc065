"""Reproduce the DEA feature-selection experiment of SPEC S7.

Thin entry point over :mod:`torchsvm.experiments.dea`: the same as
``python -m torchsvm.train --config configs/dea.toml --out runs/dea``; ``--tiny`` uses
``configs/dea-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("dea"))
