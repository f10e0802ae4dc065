"""Partition of the main job's fold solutions along the C path (issue 14).

Solves one fold of the main job (configs/default.toml: 11 C x 500 bootstrap replicates
of linear SVMs on the fold's standardised breast_cancer training rows) with
:func:`~torchsvm.estimators.bootstrap.solve_replicates` and prints, per C, the solver's
iterations per problem (interior point + active set at the first C, active set after),
the mean number of free coordinates (``0 < a < u``) and of coordinates at the upper
bound, and the mean number of coordinates whose bound status (at ``u`` or not) changes
from the previous C. The active set moves one coordinate onto a bound per blocked step,
so iterations against bound changes say how much of a C step is spent on them.

Example::

    OMP_NUM_THREADS=1 python scripts/fold_partition_stats.py --fold 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import torchsvm  # noqa: F401  (sets OMP_WAIT_POLICY before torch loads)
from torchsvm.config import load_config
from torchsvm.estimators._base import encode_binary
from torchsvm.estimators.bootstrap import _draw_counts, solve_replicates
from torchsvm.experiments.runner import load_fold_data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fold", type=int, default=0)
    args = ap.parse_args()
    cfg = load_config(None, [])
    d = load_fold_data(cfg, cfg.data.datasets[0], args.fold)
    _, y = encode_binary(d["y_train"], "fold")
    # the seed run_unit gives the fold's estimator (protocol.seed * 1000 + fold)
    counts = _draw_counts(
        y, cfg.bootstrap.n_bootstrap, cfg.protocol.seed * 1000 + args.fold
    )
    C = np.asarray(cfg.bootstrap.C_grid, dtype=np.float64)
    t0 = time.perf_counter()
    fit = solve_replicates(
        d["X_train"], y, C, counts, tol=cfg.solver.tol, max_iter=cfg.solver.max_iter
    )
    secs = time.perf_counter() - t0
    a = np.abs(fit["coef"])  # (R, B, n) = alpha
    U = counts[None] * C[:, None, None]
    rel = 1e-9
    at_u = (U > 0) & (a >= U * (1 - rel))
    free = (a > U * rel) & ~at_u
    it = fit["n_iter"]
    print(
        f"fold {args.fold}: n = {len(y)}, in-bag rows per replicate "
        f"{(counts > 0).sum(1).mean():.1f}, solve {secs:.2f} s, max rel gap "
        f"{fit['duality_gap'].max():.1e}"
    )
    print(
        f"{'C':>9} {'iter mean':>9} {'max':>4} {'free':>6} {'at u':>6} {'changes':>8}"
    )
    for r, c in enumerate(C):
        ch = "" if r == 0 else f"{(at_u[r] != at_u[r - 1]).sum(1).mean():8.1f}"
        print(
            f"{c:9.5f} {it[r].mean():9.1f} {it[r].max():4d} {free[r].sum(1).mean():6.1f}"
            f" {at_u[r].sum(1).mean():6.1f} {ch:>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
