"""How small a duality gap float32 can certify on the main job's fold (issue 14).

Solves one fold of the main job (11 C x B bootstrap replicates, linear kernel, the data of
``scripts/bench_solver.py --workload main-job``) in float64, rounds each optimum to
float32 and evaluates its relative duality gap in float32 and in float64. The float32
value is a floor below which no float32 solver can certify this fold: the exact optimum
itself does not reach it.

    PYTHONPATH=. OMP_NUM_THREADS=2 python scripts/float32_gap_floor.py [--replicates B]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_solver import C_GRID, workload_data  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402
from torchsvm.solvers.kkt import duality_gap  # noqa: E402


def _gap(
    alpha: torch.Tensor, X: torch.Tensor, y: torch.Tensor, U: torch.Tensor
) -> torch.Tensor:
    ay = alpha * y
    QA = y * ((ay @ X) @ X.T)  # A Q with Q_ij = y_i y_j x_i . x_j
    return duality_gap(alpha, QA, y, U, None)[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--replicates", type=int, default=None, help="B (default: the main job's)"
    )
    args = ap.parse_args()
    X, y, B = workload_data("main-job", False)
    B = args.replicates or B
    counts = bootstrap_counts(X.shape[0], B, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID, counts, kernel="linear", dtype="float64"
    )
    sol = BoxQpSolver(SolverConfig())(prob)
    Xd, yd = prob.X, prob.y
    print(
        f"float64 solve: max rel gap {float(sol.duality_gap.max()):.1e} over {sol.alpha.shape[0]} problems"
    )
    Cs = prob.C  # (P,): the C of each problem
    a32 = sol.alpha.float()
    g32 = _gap(a32, Xd.float(), yd.float(), prob.U.float())
    g64 = _gap(a32.double(), Xd, yd, prob.U)
    print("C        rel gap of the float64 optimum rounded to float32")
    print("         evaluated in float32: max / median | evaluated in float64: max")
    for c in C_GRID:
        rows = Cs == c
        print(
            f"{c:<8g} {float(g32[rows].max()):.1e} / {float(g32[rows].median()):.1e}"
            f"             | {float(g64[rows].max()):.1e}"
        )


if __name__ == "__main__":
    main()
