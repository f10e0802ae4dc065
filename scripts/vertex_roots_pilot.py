"""Iterations of the C path's roots from the vertex a = 0, per staged dataset (issue 14).

``BoxQpSolver._roots_from_vertex`` (torchsvm/solvers/box_qp.py) solves the C path's
roots by the compiled active set from ``a = 0`` after a pilot whose mean iterations
must stay within ``_VERTEX_PILOT_ITERS (k + 1)``, each row capped at
``_VERTEX_MAX_ITERS (k + 1)``. For each dataset (``bench_solver.py --workload dataset``:
the first 90 % of at most ``--max-rows`` rows, one-hot, standardised; or ``main-job``,
its 512 breast_cancer rows), this takes the first C (2^-5) of ``--replicates``
bootstrap replicates and runs up to 32 of them from ``a = 0`` under that cap: the
iterations (mean, min, max), the rows certified, the decision the pilot's rule would
take, and the CPU seconds of that call.

Usage::

    OMP_NUM_THREADS=1 TORCHSVM_DATA=/work/shared/data PYTHONPATH=. \\
        python scripts/vertex_roots_pilot.py main-job german spambase
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
import torch  # noqa: E402

from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers import box_qp  # noqa: E402
from torchsvm.solvers.active_set import active_set_low_rank  # noqa: E402
from torchsvm.solvers.factor import build_factor  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_solver import workload_data  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+", help="staged datasets, or main-job")
    ap.add_argument("--max-rows", type=int, default=2000)
    ap.add_argument("--replicates", type=int, default=32)
    args = ap.parse_args(argv)
    active_set_low_rank(  # compile or load the kernel outside the timings
        torch.ones((2, 1), dtype=torch.float64),
        torch.tensor([1.0, -1.0], dtype=torch.float64),
        torch.ones((1, 2), dtype=torch.float64),
        torch.zeros((1, 2), dtype=torch.float64),
        kernel="numba",
    )
    print(
        "dataset n d k+1 | iterations from 0: mean min max | certified | "
        "pilot threshold, cap | decision | CPU s"
    )
    for ds in args.datasets:
        if ds == "main-job":
            X, y, _ = workload_data("main-job", False)
        else:
            X, y, _ = workload_data("dataset", False, ds, args.max_rows, 1)
        if not np.isfinite(X).all():
            print(f"{ds}: missing values, skipped")
            continue
        n = X.shape[0]
        counts = bootstrap_counts(n, args.replicates, 0)
        prob = BatchedSvmProblem.from_bootstrap(
            X, y, 2.0 ** np.arange(-5, 6), counts, kernel="linear"
        )
        W = build_factor(prob).low_rank()
        k1 = W.shape[1] + 1
        rows = (prob.index["c_idx"] == 0).nonzero()[:, 0][: box_qp._VERTEX_PILOT_ROWS]
        U = prob.U[rows]
        c0 = time.process_time()
        _, _, it, ok = active_set_low_rank(
            W,
            prob.y,
            U,
            torch.zeros_like(U),
            max_iter=box_qp._VERTEX_MAX_ITERS * k1,
            tol=1e-9,
            kernel="numba",
        )
        cpu = time.process_time() - c0
        thr = box_qp._VERTEX_PILOT_ITERS * k1
        mean = float(it.double().mean())
        print(
            f"{ds} {n} {X.shape[1]} {k1} | {mean:.1f} {int(it.min())} {int(it.max())} "
            f"| {int(ok.sum())}/{rows.numel()} | {thr}, {box_qp._VERTEX_MAX_ITERS * k1} "
            f"| {'accept' if mean <= thr else 'reject'} | {cpu:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
