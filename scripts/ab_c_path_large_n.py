"""The C path above n = 2000 with the compiled active set, against the route before (issue 14).

``BoxQpSolver`` chains linear bootstrap batches along the ``C`` path (the same
replicate's solution at the previous ``C``, scaled, finished by the feasible active set).
With the batched torch active set that stops at ``_C_PATH_MAX_N = 2000`` rows; with the
compiled kernel (numba, CPU) the limit is ``_C_PATH_MAX_N_COMPILED``. This script times
one batch both ways in one process, alternated ``--reps`` times (the order swapped every
round):

- ``path``: the solver as it is (``_C_PATH_MAX_N_COMPILED`` unchanged);
- ``previous``: ``_C_PATH_MAX_N_COMPILED = 2000``, the route before: off the path for
  ``n > 2000``, so every problem is first tried from ``a = 0`` (a pilot) and the rest go
  to the interior point.

Workloads (``--workloads``, comma-separated): ``s8`` (SPEC S8's linear batch:
make_classification(5000, 30, flip_y=0.05), 11 C x 20 replicates, as
``bench_solver.py --workload s8``) or a staged dataset name, whose batch is the one
configs/probabilities.toml's linear run solves on outer fold ``--fold`` (its first
``--replicates`` replicates, the config's ``tol`` and ``max_iter``;
``bench_solver.fold_workload``).

Prints per workload and route the median CPU seconds (and the range), certified
problems, the largest relative duality gap, mean iterations per C, and the largest
relative difference of the primal objectives between the two routes. Run with
``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=... PYTHONPATH=.``. One JSON
line per workload is appended to ``--out`` with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_solver import C_GRID_DEFAULT, fold_workload, workload_data  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers import box_qp  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402


def build(name: str, fold: int, replicates: int, config: str, dtype: str):  # noqa: ANN201
    """The batch and the solver settings of one workload."""
    if name == "s8":
        X, y, B = workload_data("s8", False)
        counts = bootstrap_counts(X.shape[0], B, 0)
        grid, kw = C_GRID_DEFAULT, {}
    else:
        X, y, grid, counts, kw = fold_workload(name, fold, replicates, config)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, grid, counts, kernel="linear", device="cpu", dtype=dtype
    )
    return prob, kw


def run(solver: BoxQpSolver, prob: BatchedSvmProblem, previous: bool) -> dict:
    """One timed solve on the route asked for."""
    saved = box_qp._C_PATH_MAX_N_COMPILED
    if previous:
        box_qp._C_PATH_MAX_N_COMPILED = box_qp._C_PATH_MAX_N
    try:
        c0 = time.process_time()
        sol = solver(prob)
        cpu = time.process_time() - c0
    finally:
        box_qp._C_PATH_MAX_N_COMPILED = saved
    c_idx = prob.index["c_idx"].cpu()
    it = sol.n_iter.double().cpu()
    return {
        "cpu": cpu,
        "optimal": int((sol.status == 0).sum()),
        "max_gap": float(sol.duality_gap.max()),
        "iters_per_c": [
            round(float(it[c_idx == c].mean()), 1) for c in range(int(c_idx.max()) + 1)
        ],
        "primal": sol.primal.double().cpu(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="s8")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--tol", type=float, default=None, help="SolverConfig.tol")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="runs/bench/ab_c_path_large_n.jsonl")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    for name in args.workloads.split(","):
        load0 = os.getloadavg()
        prob, kw = build(name, args.fold, args.replicates, args.config, args.dtype)
        if args.tol is not None:
            kw["tol"] = args.tol
        solver = BoxQpSolver(SolverConfig(**kw))
        solver(prob.select(slice(0, 1)))  # warm-up (excluded): compiled kernel
        res: dict[str, list[dict]] = {"previous": [], "path": []}
        for r in range(args.reps):
            order = ("previous", "path") if r % 2 == 0 else ("path", "previous")
            for route in order:
                res[route].append(run(solver, prob, route == "previous"))
        a, b = res["previous"][-1]["primal"], res["path"][-1]["primal"]
        diff = float(((a - b).abs() / (1.0 + a.abs())).max())
        line = {
            "workload": name,
            "fold": None if name == "s8" else args.fold,
            "n": prob.n_samples,
            "problems": prob.n_problems,
            "dtype": args.dtype,
            "tol": solver.config.tol,
            "reps": args.reps,
            "max_primal_rel_diff": diff,
            "loadavg_before": load0,
            "loadavg_after": os.getloadavg(),
        }
        print(
            f"{name}: n = {prob.n_samples}, {prob.n_problems} problems, {args.dtype}, "
            f"tol {solver.config.tol:g}; primal values differ by at most {diff:.1e} "
            f"(relative); load {load0[0]:.1f}"
        )
        for route, runs in res.items():
            cpus = [x["cpu"] for x in runs]
            last = runs[-1]
            line[route] = {
                "cpu_s": [round(c, 3) for c in cpus],
                "median_cpu_s": float(np.median(cpus)),
                "optimal": last["optimal"],
                "max_gap": last["max_gap"],
                "iters_per_c": last["iters_per_c"],
            }
            print(
                f"  {route:8s} CPU s median {np.median(cpus):.3f} "
                f"({min(cpus):.3f}-{max(cpus):.3f}), {last['optimal']}/"
                f"{prob.n_problems} optimal, max gap {last['max_gap']:.1e}, "
                f"iterations per C {last['iters_per_c']}"
            )
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
