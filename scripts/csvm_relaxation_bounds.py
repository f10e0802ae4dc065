"""Continuous relaxation of the RBF CSVM rows of bench_mip.py, with and without big-M bounds.

For each ``n`` (the instance of ``scripts/bench_mip.py --rbf-sizes n``: kernel partial
dual form, synthetic 5-d data, half the rows anchors, TPR floor 0.9) and a cutoff ``U``
(default: the objective of ``solve_csvm``'s sliding-b start), prints

- the continuous relaxation's value (the QP of the MIQP with ``z`` in [0, 1]) and the
  relaxed ``z`` of the floor members and of the anchors in no floor;
- the big-M that :func:`torchsvm.mip.csvm.kernel_anchor_bounds` gives the floor
  members under ``U`` (closed form, then weak duality), and the relaxation with those
  big-M (and the bounds on ``b``) in the model: a relaxation of every MIQP point with
  objective ``<= U``, so its value is a valid lower bound wherever the optimum is
  ``<= U``;
- ``--uniform-m``: the relaxation with every floor member's big-M set to each given
  value. These are NOT valid bounds; they show how small the big-M would have to be
  for the relaxation to bind.

Usage: ``PYTHONPATH=. python scripts/csvm_relaxation_bounds.py --sizes 100 200
--cutoffs 99.5718 197.347 --uniform-m 5 3 2``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mip import _csvm_problem  # noqa: E402

import torchsvm.mip.csvm as csvm  # noqa: E402
from torchsvm.mip.model import MipConfig, MipModel  # noqa: E402
from torchsvm.mip.outer_approx import OuterApproximation  # noqa: E402


def _relax(model: MipModel, factor: np.ndarray) -> tuple[float, np.ndarray]:
    oa = OuterApproximation(model, MipConfig(time_limit=600.0), factor=factor)
    res = oa.relax()
    assert res.x is not None, res.message
    return float(res.objective), res.x[: model.n_cols]


def _bounded(model: MipModel, tighten, U: float, k: int) -> MipModel:  # noqa: ANN001
    """``model`` with the rows and ``b`` bounds ``tighten`` gives a master under ``U``."""
    n = model.n_cols
    ext = MipModel(
        c=np.concatenate([model.c, np.zeros(k), np.ones(k)]),
        A=sp.hstack([model.A, sp.csr_array((model.A.shape[0], 2 * k))], format="csr"),
        row_lower=model.row_lower,
        row_upper=model.row_upper,
        col_lower=np.concatenate([model.col_lower, np.full(k, -np.inf), np.zeros(k)]),
        col_upper=np.concatenate([model.col_upper, np.full(2 * k, np.inf)]),
        integrality=np.concatenate([model.integrality, np.zeros(2 * k, dtype=bool)]),
    )
    out = tighten(ext, U, 600.0)
    return replace(
        model,
        A=sp.csr_array(out.A)[:, :n],
        row_lower=out.row_lower,
        col_lower=out.col_lower[:n],
        col_upper=out.col_upper[:n],
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--cutoffs", type=float, nargs="*", default=None)
    ap.add_argument("--uniform-m", type=float, nargs="*", default=[])
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()}", flush=True)
    for i, n in enumerate(args.sizes):
        p = _csvm_problem("rbf", n)
        model, layout, factor = csvm.build_csvm_model(p)
        k = layout.L.shape[1]
        if args.cutoffs:
            U = args.cutoffs[i]
        else:
            start = csvm.csvm_start(p, layout, s1_solver="libsvm")
            U = csvm.start_objective(p, layout, start.x)
        F, y = layout.floor_idx, p.y
        members = np.flatnonzero(y[F] > 0)
        rows = layout.train_idx.size + members
        zcols = layout.z.start + members
        t = time.perf_counter()
        val, x = _relax(model, factor)
        z = x[layout.z]
        print(
            f"n={n} k={k} U={U:.6g}: relaxation {val:.6g} ({time.perf_counter() - t:.1f}"
            f" s); floor members' z mean {z[members].mean():.3f} (min "
            f"{z[members].min():.3f}), other anchors' z mean "
            f"{np.delete(z, members).mean():.3f}",
            flush=True,
        )
        for dual in (False, True):
            t = time.perf_counter()
            tight = _bounded(model, csvm.kernel_anchor_bounds(p, layout, dual), U, k)
            took = time.perf_counter() - t
            Mj = -sp.csr_array(tight.A)[rows, zcols]
            tval, _ = _relax(tight, factor)
            print(
                f"  {'weak duality' if dual else 'closed form'}: M_j median "
                f"{np.median(Mj):.3g} in [{Mj.min():.3g}, {Mj.max():.3g}] ({took:.1f} s)"
                f"; b in [{tight.col_lower[layout.b]:.4g}, "
                f"{tight.col_upper[layout.b]:.4g}]; relaxation {tval:.6g}",
                flush=True,
            )
        for m in args.uniform_m:
            A = sp.csr_array(model.A, copy=True).tolil()
            lo = model.row_lower.copy()
            for r, c in zip(rows, zcols):
                A[r, c] = -m
                lo[r] = 1.0 - m
            fake = replace(model, A=sp.csr_array(A), row_lower=lo)
            fval, _ = _relax(fake, factor)
            print(f"  every member's M = {m:g} (not valid): relaxation {fval:.6g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
