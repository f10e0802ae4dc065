"""Reproduce the constrained-SVM experiment (SPEC S5, thesis ch. 2).

Thin entry point over :mod:`torchsvm.experiments.csvm`: the same as
``python -m torchsvm.train --config configs/csvm.toml --out runs/csvm``; ``--tiny`` uses
``configs/csvm-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("csvm"))
