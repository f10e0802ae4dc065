"""The probabilities experiment's linear bootstrap batches against a libsvm loop (issue 14).

For each ``--datasets`` name, the batch that configs/probabilities.toml's linear run
solves on outer fold ``--fold`` (:func:`bench_solver.fold_workload`: the fold's
preprocessed training rows, the estimator's own bootstrap draws, the config's ``tol``
and ``max_iter``), restricted to the first ``--replicates`` replicates (11 C x R
problems). Prints, per dataset and solver route:

- ``ours``: ``BoxQpSolver`` as the experiment builds it (``SolverConfig(tol,
  max_iter)``), CPU seconds of the whole batch and per problem, certified problems,
  the largest relative duality gap, mean iterations per C;
- ``previous`` (with ``--previous``): the route these batches took before the
  compiled active set from ``a = 0`` was tried off the C path and before
  ``ipm_max_rank`` was raised from 64 to 128 (``SolverConfig(ipm_max_rank=64)``,
  ``vertex_roots=False``): ADMM for mushroom (rank 86) and adult (rank 95), the
  interior point for nursery (rank 20), on the first ``--previous-replicates``
  replicates (its ADMM takes ~0.25-1.1 CPU s per problem);
- ``libsvm``: a loop of ``SVC(kernel="linear", C).fit(X, y, sample_weight=counts)``
  (default ``tol=1e-3``, what users run) over ``--sklearn-problems`` problems spread
  evenly over the grid and the replicates, in the same process; the ratio is libsvm's
  CPU seconds per problem over ours.

Run with ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=... PYTHONPATH=.``.
A warm-up solve of one problem (excluded) compiles the active-set kernel first. One JSON
line per dataset and route is appended to ``--out``, with the load average.
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
from bench_solver import fold_workload  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402
from torchsvm.solvers.factor import build_factor  # noqa: E402


def solve(prob: BatchedSvmProblem, cfg: SolverConfig, vertex: bool) -> dict:
    """Solve ``prob``; CPU / wall seconds, certificates and iterations per C."""
    solver = BoxQpSolver(cfg, vertex_roots=vertex)
    solver(prob.select(slice(0, 1)))  # warm-up (excluded): compiled kernel, allocator
    t0, c0 = time.perf_counter(), time.process_time()
    sol = solver(prob)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    c_idx = prob.index["c_idx"].cpu()
    P = prob.n_problems
    return {
        "P": P,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_ms_per_problem": round(1e3 * cpu / P, 3),
        "certified": int((sol.converged & (sol.duality_gap <= cfg.tol)).sum()),
        "max_rel_gap": float(sol.duality_gap.max()),
        "iters_mean_per_c": [
            round(float(sol.n_iter[c_idx == r].double().mean()), 1)
            for r in range(int(c_idx.max()) + 1)
        ],
        "iters_max": int(sol.n_iter.max()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="mushroom,nursery,adult")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--sklearn-problems", type=int, default=22)
    ap.add_argument(
        "--previous",
        action="store_true",
        help="also time the previous route (ipm_max_rank=64, vertex_roots=False)",
    )
    ap.add_argument("--previous-replicates", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/bootstrap_batch.jsonl")
    args = ap.parse_args()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for name in args.datasets.split(","):
        R = max(args.replicates, args.previous_replicates if args.previous else 1)
        X, y, grid, counts, solver_kw = fold_workload(name, args.fold, R, args.config)
        rank = int(np.linalg.matrix_rank(X))
        base = {"dataset": name, "fold": args.fold, "n": X.shape[0], "d": X.shape[1]}
        base["rank"] = rank
        print(
            f"{name} fold {args.fold}: n = {X.shape[0]}, d = {X.shape[1]}, rank {rank},"
            f" {solver_kw}, load {os.getloadavg()}",
            flush=True,
        )
        routes = [("ours", args.replicates, SolverConfig(**solver_kw), True)]
        if args.previous:
            cfg_prev = SolverConfig(**solver_kw, ipm_max_rank=64)
            routes.append(("previous", args.previous_replicates, cfg_prev, False))
        res: dict[str, dict] = {}
        for label, reps, cfg, vertex in routes:
            prob = BatchedSvmProblem.from_bootstrap(
                X, y, grid, counts[:reps], kernel="linear"
            )
            k = build_factor(prob, cfg.eig_rel_tol).low_rank().shape[1]
            r = solve(prob, cfg, vertex)
            r["k"] = k
            res[label] = r
            print(
                f"  {label:8s} {reps:4d} replicates, {r['P']:5d} problems: "
                f"{r['cpu_s']:9.2f} CPU s ({r['cpu_ms_per_problem']:8.2f} ms / problem),"
                f" {r['certified']}/{r['P']} certified, max rel gap "
                f"{r['max_rel_gap']:.1e}, iterations per C {r['iters_mean_per_c']}",
                flush=True,
            )
        # libsvm loop on problems spread over the grid and the replicates
        P = len(grid) * args.replicates
        ids = np.unique(
            np.linspace(0, P - 1, args.sklearn_problems).round().astype(int)
        )
        c0 = time.process_time()
        for p in ids:
            r_, b_ = divmod(int(p), args.replicates)
            SVC(kernel="linear", C=grid[r_]).fit(X, y, sample_weight=counts[b_])
        c_sk = (time.process_time() - c0) / len(ids)
        ratios = {
            lab: round(1e3 * c_sk / r["cpu_ms_per_problem"], 2)
            for lab, r in res.items()
        }
        print(
            f"  libsvm   {len(ids)} problems: {1e3 * c_sk:.2f} CPU ms / problem; "
            f"libsvm / ours per problem: {ratios}; load {os.getloadavg()}",
            flush=True,
        )
        rec = {
            **base,
            "routes": res,
            "libsvm_cpu_ms_per_problem": round(1e3 * c_sk, 3),
            "libsvm_problems": len(ids),
            "ratio_libsvm_over": ratios,
            "load_after": os.getloadavg(),
            "torch": torch.__version__,
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        with open(args.out, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
