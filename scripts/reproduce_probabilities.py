"""Reproduce the probability comparison of SPEC S2 / S4 on the staged datasets.

Thin entry point over :mod:`torchsvm.experiments.probabilities`: the same as
``python -m torchsvm.train --config configs/probabilities.toml --out runs/probabilities``; ``--tiny`` uses
``configs/probabilities-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("probabilities"))
