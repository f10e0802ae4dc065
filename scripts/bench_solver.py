"""Benchmark of the batched solver against a loop of scikit-learn SVC fits (SPEC S8).

Workload: make_classification(n, 30, flip_y=0.05), standardised; the C grid
2^-5..2^5 (11 values) x B bootstrap replicates, as one batch. The reference is a loop
of ``sklearn.svm.SVC(kernel, C, gamma="scale").fit(X, y, sample_weight=counts)`` on the
same machine in the same run (default tol=1e-3 for the timing, what users run; every
problem's decision values are checked against SVC with tol=1e-8 on a sample of
problems). Prints wall time, problems/s, the speed ratio, GFLOP/s of the batched
iteration and the accuracy check; appends a JSON line to runs/bench/solver.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402
from torchsvm.solvers.factor import build_factor  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--d", type=int, default=30)
    ap.add_argument("--B", type=int, default=20)
    ap.add_argument("--kernel", choices=["linear", "rbf"], default="linear")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--tol", type=float, default=1e-7)
    ap.add_argument("--sklearn-problems", type=int, default=None,
                    help="time the sklearn loop on this many problems and extrapolate (default: all)")
    ap.add_argument("--check", type=int, default=11, help="problems checked against SVC(tol=1e-8)")
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--out", default="runs/bench/solver.jsonl")
    args = ap.parse_args(argv)
    if args.tiny:
        args.n, args.B, args.check = 200, 2, 3
    X, y = make_classification(args.n, args.d, flip_y=0.05, random_state=0)
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    C_grid = 2.0 ** np.arange(-5, 6)
    counts = bootstrap_counts(args.n, args.B, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_grid, counts, kernel=args.kernel, gamma="scale", device=args.device, dtype=args.dtype
    )
    P = prob.n_problems
    solver = BoxQpSolver(SolverConfig(tol=args.tol))
    sync = torch.cuda.synchronize if prob.device.type == "cuda" else (lambda: None)
    # warm-up (excluded): kernels, allocator
    solver(prob.select(slice(0, 1)))
    sync()
    cfg = solver.config
    dense = args.kernel != "linear" and cfg.method in ("auto", "pdas")
    t0 = time.perf_counter()
    # the active-set method works on Q itself; the others factorise it first
    factor = None if dense else build_factor(prob)
    sync()
    t_factor = time.perf_counter() - t0
    sol = solver(prob, factor=factor)
    sync()
    t_ours = time.perf_counter() - t0
    k = args.n if factor is None else int(factor.e.shape[0])
    iters = sol.n_iter.double()
    if dense:
        # active set: two (n x n) GEMM rows per iteration (face Cholesky not counted)
        method = "pdas"
        per_iter = 4 * args.n * args.n
    elif cfg.method == "ipm" or (cfg.method == "auto" and k <= cfg.ipm_max_rank):
        # interior point: the (n, k(k+1)/2) factor GEMM plus ~8 (n x k) GEMM rows
        method = "ipm"
        per_iter = 2 * args.n * k * (k + 1) / 2 + 16 * args.n * k
    else:
        # ADMM: two (n x k) GEMM rows per iteration
        method = "admm"
        per_iter = 4 * args.n * k
    flops = float((iters * per_iter).sum())
    gflops = flops / max(t_ours - t_factor, 1e-9) / 1e9

    # sklearn loop (default tol) on the same problems
    n_sk = P if args.sklearn_problems is None else min(P, args.sklearn_problems)
    c_idx = prob.index["c_idx"].cpu().numpy()
    rep_idx = prob.index["rep_idx"].cpu().numpy()
    t0 = time.perf_counter()
    for p in range(n_sk):
        SVC(kernel=args.kernel, C=C_grid[c_idx[p]], gamma="scale").fit(X, y, sample_weight=counts[rep_idx[p]])
    t_sk = (time.perf_counter() - t0) * P / n_sk

    # accuracy: every C, first replicates, vs SVC(tol=1e-8)
    Xt = prob.X
    F = sol.decision_function(prob.X, prob.y, Xt, kernel=prob.kernel, gamma=prob.gamma).cpu().numpy()
    worst = 0.0
    check_ids = np.linspace(0, P - 1, min(args.check, P)).astype(int)
    for p in check_ids:
        ref = SVC(kernel=args.kernel, C=C_grid[c_idx[p]], gamma="scale", tol=1e-8)
        fr = ref.fit(X, y, sample_weight=counts[rep_idx[p]]).decision_function(X)
        worst = max(worst, float(np.abs(fr - F[p]).max() / max(1.0, np.abs(fr).max())))
    rec = {
        "device": torch.cuda.get_device_name(prob.device) if prob.device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__, "kernel": args.kernel, "dtype": args.dtype,
        "P": P, "n": args.n, "d": args.d, "B": args.B, "rank": k,
        "t_factor_s": round(t_factor, 3), "t_ours_s": round(t_ours, 3),
        "t_sklearn_s": round(t_sk, 3), "sklearn_problems_timed": n_sk,
        "speedup": round(t_sk / t_ours, 2), "problems_per_s": round(P / t_ours, 2),
        "iters_mean": float(iters.mean()), "iters_max": int(iters.max()),
        "n_optimal": int(sol.converged.sum()), "max_rel_gap": float(sol.duality_gap.max()),
        "max_rel_df_vs_libsvm_tol1e-8": worst, "checked": len(check_ids),
        "method": method, "gflops_iteration_estimate": round(gflops, 2), "threads": torch.get_num_threads(),
    }
    print(json.dumps(rec, indent=1))
    print(f"\n{args.kernel}: {P} problems, ours {t_ours:.1f} s vs sklearn loop {t_sk:.1f} s "
          f"-> {t_sk / t_ours:.1f}x; max rel gap {rec['max_rel_gap']:.1e}; "
          f"max |df| vs libsvm {worst:.1e} (target 1e-3)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return 0 if worst <= 1e-3 and rec["max_rel_gap"] <= 1e-6 else 1


if __name__ == "__main__":
    raise SystemExit(main())
