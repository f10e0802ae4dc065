"""Reproduce the implied-posterior experiments of SPEC S3.

Thin entry point over :mod:`torchsvm.experiments.implied`: the same as
``python -m torchsvm.train --config configs/implied.toml --out runs/implied``; ``--tiny`` uses
``configs/implied-tiny.toml``. Every other flag (``--set``, ``--backend ray``, ``--out``,
...) is passed on; rerunning with the same ``--out`` resumes.
"""

from __future__ import annotations

from torchsvm.train import reproduce

if __name__ == "__main__":
    raise SystemExit(reproduce("implied"))
