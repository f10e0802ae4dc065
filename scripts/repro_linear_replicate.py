"""One replicate of the probabilities experiment's bootstrap batch (issues 14/17).

Solves the 11 C values of replicate ``--replicate`` of the batch that
``scripts/bench_solver.py --workload dataset --dataset NAME --fold K`` solves (same rows,
draws, tolerance and iteration cap), and prints the CPU seconds, status, relative gap
and iterations per C. With ``--libsvm C``, checks the solution at that C against
``SVC(kernel='linear', tol=1e-8)`` with the same sample weights (primal values and
decision values).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_solver import fold_workload  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="spambase")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--replicate", type=int, default=460)
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--libsvm", type=float, default=None, metavar="C")
    args = ap.parse_args()
    X, y, grid, counts, solver = fold_workload(
        args.dataset, args.fold, args.replicate + 1, args.config
    )
    c = counts[args.replicate : args.replicate + 1]
    prob = BatchedSvmProblem.from_bootstrap(X, y, grid, c, kernel="linear")
    s = BoxQpSolver(SolverConfig(**solver))
    print(f"load {os.getloadavg()}, n = {X.shape[0]}, d = {X.shape[1]}, {solver}")
    t0 = time.process_time()
    sol = s(prob)
    print(f"solve: {time.process_time() - t0:.2f} CPU s")
    for k, C in enumerate(grid):
        print(
            f"C = {C:g}: status {int(sol.status[k])}, rel gap "
            f"{float(sol.duality_gap[k]):.2e}, {int(sol.n_iter[k])} iterations"
        )
    if args.libsvm is not None:
        k = int(np.argmin(np.abs(grid - args.libsvm)))
        a, b = sol.alpha[k].double().numpy(), float(sol.b[k])
        w = (a * y) @ X
        u = grid[k] * c[0]

        def primal(w: np.ndarray, b: float) -> float:
            return float(0.5 * w @ w + u @ np.maximum(0.0, 1.0 - y * (X @ w + b)))

        t0 = time.process_time()
        ref = SVC(kernel="linear", C=grid[k], tol=1e-8).fit(X, y, sample_weight=c[0])
        t_ref = time.process_time() - t0
        f, fr = X @ w + b, ref.decision_function(X)
        print(
            f"libsvm at C = {grid[k]:g} ({t_ref:.1f} CPU s): primal ours "
            f"{primal(w, b):.10g}, libsvm {primal(ref.coef_[0], ref.intercept_[0]):.10g}; "
            f"max |df| {np.abs(f - fr).max() / max(1.0, np.abs(fr).max()):.2e} "
            "(relative)"
        )
    print(f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
