"""One bootstrap fold of the RBF probabilities run: SMO pre-pass vs dense active set vs libsvm.

Sizes of ``configs/probabilities-rbf.toml``: 90 % of a staged dataset (a seeded
permutation), standardised, labels {-1, +1} (the largest label positive), 11 C values
(2^-5..2^5) x ``B`` bootstrap replicates, RBF with ``gamma="scale"``, ``tol = 1e-7``.
``what`` is ``smo`` (``BoxQpSolver(smo=True)``), ``pdas`` (``smo=False``) or ``libsvm`` (a
loop of ``SVC(C, gamma).fit(X, y, sample_weight=counts)`` over 55 problems spread over
the grid, scaled to all). Prints one line; compare runs taken under the same load.

Example: ``OMP_NUM_THREADS=1 python scripts/bench_smo_fold.py wisconsin smo 500``
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

import numpy as np
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.data.datasets import load_dataset
from torchsvm.data.resample import bootstrap_counts
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("what", choices=["smo", "pdas", "libsvm"])
    ap.add_argument("B", type=int, nargs="?", default=500)
    ap.add_argument("--data-dir", default=os.environ.get("TORCHSVM_DATA"))
    args = ap.parse_args(argv)
    ds = load_dataset(args.dataset, args.data_dir)
    X, y = np.asarray(ds.X, float), np.asarray(ds.y)
    y = np.where(y == np.unique(y)[-1], 1.0, -1.0)
    rng = np.random.default_rng(0)
    keep = rng.permutation(len(y))[: int(0.9 * len(y))]
    X = StandardScaler().fit_transform(X[keep])
    y = y[keep]
    C = 2.0 ** np.arange(-5, 6)
    counts = bootstrap_counts(len(y), args.B, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C, counts, kernel="rbf", gamma="scale"
    )
    head = f"{args.dataset} {X.shape} P {prob.n_problems} load {os.getloadavg()[0]:.1f}"
    if args.what == "libsvm":
        c = prob.index["c_idx"].numpy()
        r = prob.index["rep_idx"].numpy()
        ids = np.unique(np.linspace(0, prob.n_problems - 1, 55).round().astype(int))
        t = time.perf_counter()
        for q in ids:
            SVC(C=C[c[q]], gamma=prob.gamma).fit(X, y, sample_weight=counts[r[q]])
        t_sk = (time.perf_counter() - t) * prob.n_problems / len(ids)
        print(f"{head}: libsvm loop (scaled) {t_sk:.1f} s")
        return 0
    t = time.perf_counter()
    sol = BoxQpSolver(SolverConfig(), smo=args.what == "smo")(prob)
    t = time.perf_counter() - t
    print(
        f"{head}: {args.what} {t:.1f} s, {int(sol.converged.sum())} optimal, "
        f"max gap {float(sol.duality_gap.max()):.1e}, "
        f"mean iterations {float(sol.n_iter.double().mean()):.1f}"
    )
    return 0 if bool(sol.converged.all()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
