"""Reproduce SPEC S6 (thesis ch. 4): cost-sensitive feature selection vs SVM baselines.

Thin entry point over :mod:`torchsvm.experiments.feature_selection`: the same as
``python -m torchsvm.train --config configs/feature_selection.toml --out runs/feature_selection``; ``--tiny`` uses
``configs/feature_selection-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("feature_selection"))
