"""Benchmark of the batched solver against a loop of scikit-learn SVC fits (SPEC S8, issue 14).

Workloads (``--workload``):

- ``main-job``: one fold of the main job, 11 C values (2^-5..2^5) x 500 bootstrap
  replicates of SVMs on 512 standardised breast_cancer rows (5500 problems);
- ``s8``: SPEC S8, make_classification(5000, 30, flip_y=0.05) standardised, 11 C values x
  20 replicates (220 problems);
- ``dataset``: one training fold (the first 90 % of the rows) of a staged dataset
  (``--dataset``, via :func:`torchsvm.data.datasets.load_dataset`, ``TORCHSVM_DATA``),
  subsampled to ``--max-rows`` at random (seed 0) as configs/probabilities.toml does,
  categoricals one-hot, standardised, 11 C values x ``--replicates`` (default 500): the probabilities
  protocol's bootstrap stage at its larger sizes (issue 17); with ``--fold K``, instead
  the batch the probabilities experiment itself solves on outer fold ``K``
  (``--config``, default configs/probabilities.toml): the fold's preprocessed training
  rows (:func:`torchsvm.experiments.runner.load_fold_data`), the replicates its
  :class:`~torchsvm.estimators.bootstrap.BootstrapProbabilitySVC` draws (seed
  ``protocol.seed * 1000 + K``), of which the first ``--replicates`` are solved, and the
  config's ``[solver]`` tolerance and iteration cap.

The reference is a loop of ``sklearn.svm.SVC(kernel, C, gamma).fit(X, y,
sample_weight=counts)`` (libsvm, default tol=1e-3, what users run) in the same process,
on ``--sklearn-problems`` problems spread evenly over the grid, scaled to all problems.
Decision values of one problem per C are checked against ``SVC(tol=1e-8)``.

Achieved GFLOP/s: the GEMM-type flops of the solve (mm, bmm, addmm..., counted by
``torch.utils.flop_counter`` in a second, untimed run of the same solve) over the timed
wall time, against the machine's matmul peak measured in the same run (the best of
several square GEMMs in the benchmark's dtype). Cholesky factorisations, elementwise
passes and gathers are not counted, so the figure is a lower bound on the work done.

Prints a summary and appends one JSON line per run to ``runs/bench/solver.jsonl``, with
the load average before and after (the machine may be shared: compare ratios, which are
measured under the same load, rather than absolute times).
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
from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402

C_GRID_DEFAULT = 2.0 ** np.arange(-5, 6)
# issue 14 targets: speed ratio against the libsvm loop
TARGETS = {
    ("main-job", "linear"): 10.0,
    ("s8", "linear"): 150.0,
    ("s8", "rbf"): 5.0,
    ("main-job", "rbf"): 1.0,
}


def workload_data(
    name: str,
    tiny: bool,
    dataset: str | None = None,
    max_rows: int = 5000,
    replicates: int = 500,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Standardised ``X``, labels in {-1, +1} and the number of bootstrap replicates."""
    if name == "dataset":
        from torchsvm.data.datasets import load_dataset

        if not dataset:
            raise SystemExit("--workload dataset needs --dataset NAME")
        ds = load_dataset(dataset)
        import pandas as pd

        X = pd.get_dummies(ds.X, dtype=float).to_numpy()  # categoricals one-hot
        y = np.asarray(ds.y, dtype=float)
        if X.shape[0] > max_rows:
            sel = np.random.default_rng(0).choice(X.shape[0], max_rows, replace=False)
            X, y = X[sel], y[sel]
        n = int(0.9 * X.shape[0])
        X = StandardScaler().fit_transform(X[:n])
        return X, np.where(y[:n] > 0, 1.0, -1.0), 2 if tiny else replicates
    if name == "main-job":
        X, y = load_breast_cancer(return_X_y=True)
        n = 120 if tiny else 512
        X, y = X[:n], y[:n]
        B = 5 if tiny else 500
    else:
        n = 300 if tiny else 5000
        X, y = make_classification(n, 30, flip_y=0.05, random_state=0)
        B = 2 if tiny else 20
    X = StandardScaler().fit_transform(X)
    return X, np.where(y == 1, 1.0, -1.0), B


def fold_workload(
    dataset: str, fold: int, replicates: int, config: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """The probabilities experiment's bootstrap batch on one outer fold.

    Returns ``X`` (preprocessed training rows), ``y`` in {-1, +1}, the C grid, the
    first ``replicates`` of the fit's ``(B, n)`` bootstrap counts (drawn as
    ``BootstrapProbabilitySVC.fit`` draws them) and the config's solver settings.
    """
    from torchsvm.config import load_config
    from torchsvm.estimators._base import encode_binary
    from torchsvm.estimators.bootstrap import _draw_counts
    from torchsvm.experiments.runner import load_fold_data

    cfg = load_config(config)
    d = load_fold_data(cfg, dataset, fold)
    X = np.asarray(d["X_train"], dtype=np.float64)
    _, y = encode_binary(np.asarray(d["y_train"]), "bench")
    seed = cfg.protocol.seed * 1000 + int(fold)  # as probabilities.run_unit
    counts = _draw_counts(y, int(cfg.bootstrap.n_bootstrap), seed)[:replicates]
    solver = {"tol": float(cfg.solver.tol), "max_iter": int(cfg.solver.max_iter)}
    grid = np.asarray(cfg.bootstrap.C_grid, dtype=np.float64)
    return X, y.astype(np.float64), grid, counts, solver


def matmul_peak_gflops(
    dtype: torch.dtype, device: torch.device, size: int = 2048, repeats: int = 5
) -> float:
    """Best GFLOP/s of a square ``(size, size) @ (size, size)`` GEMM on this machine now."""
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a @ b
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / best / 1e9


def count_gemm_flops(solver: BoxQpSolver, prob: BatchedSvmProblem) -> float:
    """GEMM-type flops of one solve (torch's flop counter; elementwise work not counted)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        solver(prob)
    return float(fc.get_total_flops())


def profile_solve(solver: BoxQpSolver, prob: BatchedSvmProblem, top: int) -> list:
    """Solve once more under cProfile; the ``top`` functions by own (tottime) seconds,
    as [name, calls, tottime, cumtime] (the profiler's overhead inflates small calls)."""
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    solver(prob)
    pr.disable()
    st = pstats.Stats(pr)
    rows = []
    for (file, line, fn), (_, nc, tt, ct, _) in st.stats.items():  # type: ignore[attr-defined]
        name = fn if file == "~" else f"{Path(file).name}:{line}({fn})"
        rows.append([name, int(nc), round(tt, 4), round(ct, 4)])
    rows.sort(key=lambda r: -r[2])
    total = sum(r[2] for r in rows)
    print(f"cProfile of a second solve: {total:.2f} s of own time in all functions")
    for r in rows[:top]:
        print(f"  {r[2]:8.3f} s own {r[3]:8.3f} s cum {r[1]:8d} calls  {r[0]}")
    return [["total", 0, round(total, 4), 0.0]] + rows[:top]


_PHASES = (
    "ipm_low_rank",
    "purify_start",
    "active_set_low_rank",
    "pdas_dense",
    "admm",
    "polish",
    "duality_gap",
    "project_face",
    "build_factor",
    "smo_problem",
)
_ORIGINAL: dict = {}


def _time_phases(acc: dict | None, sync) -> None:  # noqa: ANN001
    """Wrap (``acc`` a dict) or restore (None) the phase functions of ``box_qp``."""
    from torchsvm.solvers import box_qp

    for name in _PHASES:
        if acc is None:
            setattr(box_qp, name, _ORIGINAL[name])
            continue
        fn = _ORIGINAL.setdefault(name, getattr(box_qp, name))

        def timed(*a, _fn=fn, _name=name, **k):  # noqa: ANN002, ANN003, ANN202
            t0, c0 = time.perf_counter(), time.process_time()
            out = _fn(*a, **k)
            sync()
            c = acc.setdefault(_name, [0.0, 0, 0.0])
            c[0] += time.perf_counter() - t0
            c[1] += 1
            c[2] += time.process_time() - c0
            return out

        setattr(box_qp, name, timed)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["main-job", "s8", "dataset"], default="s8")
    ap.add_argument("--dataset", help="staged dataset for --workload dataset")
    ap.add_argument(
        "--fold",
        type=int,
        default=None,
        help="with --workload dataset: the probabilities experiment's own batch on this "
        "outer fold (rows, replicates, tolerance of --config)",
    )
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--max-rows", type=int, default=5000)
    ap.add_argument("--replicates", type=int, default=500)
    ap.add_argument("--kernel", choices=["linear", "rbf"], default="linear")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument(
        "--tol",
        type=float,
        default=None,
        help="solver relative-gap tolerance (default: SolverConfig's)",
    )
    ap.add_argument("--method", default="auto", help="SolverConfig.method")
    ap.add_argument(
        "--ipm-after",
        type=int,
        default=None,
        help="SolverConfig.ipm_after (ADMM iterations before the interior point)",
    )
    ap.add_argument(
        "--c-path",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="BoxQpSolver(c_path=...): linear batches solved along the C path",
    )
    ap.add_argument(
        "--smo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="BoxQpSolver(smo=...): dense (RBF) batches by batched SMO "
        "(torchsvm/solvers/smo.py); default: the solver's own rule",
    )
    ap.add_argument(
        "--ipm-compile",
        action="store_true",
        help="SolverConfig.ipm_compile (torch.compile'd interior point); the solve is "
        "then run twice, the first (with the compilation) timed apart as first_solve",
    )
    ap.add_argument(
        "--active-set-kernel",
        choices=["auto", "numba", "torch"],
        default="auto",
        help="SolverConfig.active_set_kernel: the linear active set as a compiled "
        "per-row kernel (numba) or batched torch iterations; the warm-up solve, "
        "excluded from the timing, compiles the kernel (timed apart as warm_up)",
    )
    ap.add_argument(
        "--vertex-roots",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="BoxQpSolver(vertex_roots=...): with the compiled active set, the C "
        "path's roots from a = 0 where a pilot of them pays; else by the interior point",
    )
    ap.add_argument(
        "--sklearn-problems",
        type=int,
        default=55,
        help="problems in the timed libsvm loop, spread over the grid, scaled to all",
    )
    ap.add_argument(
        "--no-flops", action="store_true", help="skip the flop-counting run"
    )
    ap.add_argument(
        "--phases",
        action="store_true",
        help="time the solver's phases (interior point, active set, ADMM, polish, ...)",
    )
    ap.add_argument(
        "--cprofile",
        type=int,
        default=0,
        metavar="N",
        help="after the timed solve, solve again under cProfile (untimed) and print "
        "its N most expensive functions by own time (also in the JSON line)",
    )
    ap.add_argument(
        "--checks",
        type=int,
        default=None,
        metavar="N",
        help="check N problems (one per C, spread over the grid) against "
        "SVC(tol=1e-8); default: one per C",
    )
    ap.add_argument(
        "--save",
        default=None,
        metavar="NPZ",
        help="save every problem's w (linear), b, alpha, duality gap and status "
        "(to compare the solutions of two commits)",
    )
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--out", default="runs/bench/solver.jsonl")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    C_GRID = C_GRID_DEFAULT
    fold_solver: dict = {}
    if args.fold is not None:
        if args.workload != "dataset" or not args.dataset:
            raise SystemExit("--fold needs --workload dataset --dataset NAME")
        B = 2 if args.tiny else args.replicates
        X, y, C_GRID, counts, fold_solver = fold_workload(
            args.dataset, args.fold, B, args.config
        )
        n = X.shape[0]
    else:
        X, y, B = workload_data(
            args.workload, args.tiny, args.dataset, args.max_rows, args.replicates
        )
        n = X.shape[0]
        counts = bootstrap_counts(n, B, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X,
        y,
        C_GRID,
        counts,
        kernel=args.kernel,
        gamma="scale",
        device=args.device,
        dtype=args.dtype,
    )
    P = prob.n_problems
    kw = {"method": args.method, **fold_solver}
    if args.tol is not None:
        kw["tol"] = args.tol
    if args.ipm_after is not None:
        kw["ipm_after"] = args.ipm_after
    if args.ipm_compile:
        kw["ipm_compile"] = True
    kw["active_set_kernel"] = args.active_set_kernel
    solver = BoxQpSolver(
        SolverConfig(**kw),
        c_path=args.c_path,
        smo=args.smo,
        vertex_roots=args.vertex_roots,
    )
    sync = torch.cuda.synchronize if prob.device.type == "cuda" else (lambda: None)
    peak = matmul_peak_gflops(prob.dtype, prob.device)
    t0, c0 = time.perf_counter(), time.process_time()
    solver(prob.select(slice(0, 1)))  # warm-up (excluded): kernels, allocator
    sync()
    warm_up = (time.perf_counter() - t0, time.process_time() - c0)
    first = None
    if args.ipm_compile:
        # the compilation depends on the shapes: a full solve first, timed apart
        t0, c0 = time.perf_counter(), time.process_time()
        solver(prob)
        sync()
        first = (time.perf_counter() - t0, time.process_time() - c0)
    phases: dict[str, list[float]] = {}
    if args.phases:
        _time_phases(phases, sync)
    t0, c0 = time.perf_counter(), time.process_time()
    sol = solver(prob)
    sync()
    t_ours = time.perf_counter() - t0
    # CPU seconds of this process: under a shared load they move less than the wall
    # time (other runs take cores, not this process's work)
    c_ours = time.process_time() - c0
    if args.phases:
        _time_phases(None, sync)
    flops = None if args.no_flops else count_gemm_flops(solver, prob)
    profile = profile_solve(solver, prob, args.cprofile) if args.cprofile else None
    gflops = None if flops is None else flops / t_ours / 1e9

    # libsvm loop on problems spread evenly over the grid (every C), same process
    n_sk = min(P, args.sklearn_problems)
    sk_ids = np.unique(np.linspace(0, P - 1, n_sk).round().astype(int))
    c_idx = prob.index["c_idx"].cpu().numpy()
    rep_idx = prob.index["rep_idx"].cpu().numpy()
    t0, c0 = time.perf_counter(), time.process_time()
    for p in sk_ids:
        SVC(kernel=args.kernel, C=C_GRID[c_idx[p]], gamma=prob.gamma).fit(
            X, y, sample_weight=counts[rep_idx[p]]
        )
    t_sk = (time.perf_counter() - t0) * P / len(sk_ids)
    c_sk = (time.process_time() - c0) * P / len(sk_ids)

    # accuracy: one problem per C vs SVC(tol=1e-8)
    Xt = prob.X
    worst = 0.0
    n_chk = len(C_GRID) if args.checks is None else min(args.checks, len(C_GRID))
    check_cs = np.unique(np.linspace(0, len(C_GRID) - 1, n_chk).round().astype(int))
    check_ids = np.array(
        [int(np.nonzero(c_idx == r)[0][0]) for r in check_cs[: max(n_chk, 0)]],
        dtype=np.int64,
    )
    if args.save:
        extra = {} if sol.w is None else {"w": sol.w.double().cpu().numpy()}
        np.savez_compressed(
            args.save,
            **extra,
            b=sol.b.double().cpu().numpy(),
            alpha=sol.alpha.double().cpu().numpy(),
            gap=sol.duality_gap.double().cpu().numpy(),
            status=sol.status.cpu().numpy(),
            dual=sol.dual.double().cpu().numpy(),
            c_idx=c_idx,
            rep_idx=rep_idx,
        )
    F = (
        sol.select(torch.as_tensor(check_ids))
        .decision_function(prob.X, prob.y, Xt, kernel=prob.kernel, gamma=prob.gamma)
        .double()
        .cpu()
        .numpy()
    )
    # linear kernel: the primal objective 1/2 |w|^2 + sum u_i hinge_i of both
    # solutions (ours: w_j = f(e_j) - f(0)); libsvm's above ours means libsvm stopped
    # short of the optimum, since ours is certified by its duality gap
    excess = []
    if args.kernel == "linear":
        probe = torch.cat([torch.zeros(1, X.shape[1]), torch.eye(X.shape[1])])
        Fp = (
            sol.select(torch.as_tensor(check_ids))
            .decision_function(
                prob.X, prob.y, probe.to(Xt), kernel=prob.kernel, gamma=prob.gamma
            )
            .double()
            .cpu()
            .numpy()
        )

        def primal(w: np.ndarray, b: float, u: np.ndarray) -> float:
            return float(0.5 * w @ w + u @ np.maximum(0.0, 1.0 - y * (X @ w + b)))

    for j, p in enumerate(check_ids):
        ref = SVC(kernel=args.kernel, C=C_GRID[c_idx[p]], gamma=prob.gamma, tol=1e-8)
        fr = ref.fit(X, y, sample_weight=counts[rep_idx[p]]).decision_function(X)
        worst = max(worst, float(np.abs(fr - F[j]).max() / max(1.0, np.abs(fr).max())))
        if args.kernel == "linear":
            u = C_GRID[c_idx[p]] * counts[rep_idx[p]]
            ours = primal(Fp[j, 1:] - Fp[j, 0], float(Fp[j, 0]), u)
            theirs = primal(ref.coef_[0], float(ref.intercept_[0]), u)
            excess.append((theirs - ours) / max(abs(ours), 1e-300))
    target = TARGETS.get((args.workload, args.kernel))
    ratio = t_sk / t_ours
    rec = {
        "workload": args.workload,
        "dataset": args.dataset,
        "fold": args.fold,
        "tol": solver.config.tol,
        "tiny": args.tiny,
        "device": torch.cuda.get_device_name(prob.device)
        if prob.device.type == "cuda"
        else platform.processor() or "cpu",
        "torch": torch.__version__,
        "kernel": args.kernel,
        "dtype": args.dtype,
        "method": args.method,
        "ipm_after": solver.config.ipm_after,
        "c_path": args.c_path,
        "ipm_compile": args.ipm_compile,
        "active_set_kernel": args.active_set_kernel,
        "vertex_roots": args.vertex_roots,
        "warm_up_wall_cpu_s": [round(warm_up[0], 3), round(warm_up[1], 3)],
        # with --ipm-compile: the first full solve (compilation included; CPU seconds
        # of this process only, the compiler's worker processes are not counted)
        "first_solve_s": None if first is None else round(first[0], 3),
        "first_solve_cpu_s": None if first is None else round(first[1], 3),
        "smo": args.smo,
        "P": P,
        "n": n,
        "d": X.shape[1],
        "B": B,
        "t_ours_s": round(t_ours, 3),
        "t_sklearn_s": round(t_sk, 3),
        "cpu_ours_s": round(c_ours, 3),
        "cpu_sklearn_s": round(c_sk, 3),
        "cpu_speedup": round(c_sk / c_ours, 2),
        "sklearn_problems_timed": len(sk_ids),
        "speedup": round(ratio, 2),
        "target_speedup": target,
        "problems_per_s": round(P / t_ours, 2),
        "iters_mean": float(sol.n_iter.double().mean()),
        "iters_max": int(sol.n_iter.max()),
        # along the C path: the longest replicate chain (sum over C of one replicate's
        # iterations: the batched iterations of a pipelined path) and the sum over C of
        # each C's slowest replicate (those of a path solved stage by stage)
        "chain_iters_max": int(
            torch.zeros(B, dtype=torch.long)
            .index_add_(0, prob.index["rep_idx"].cpu(), sol.n_iter.cpu())
            .max()
        ),
        "stage_iters_sum": int(
            sum(
                int(sol.n_iter.cpu()[prob.index["c_idx"].cpu() == r].max())
                for r in range(len(C_GRID))
            )
        ),
        "n_optimal": int(sol.converged.sum()),
        "max_rel_gap": float(sol.duality_gap.max()),
        "max_rel_df_vs_libsvm_tol1e-8": worst,
        # per checked C (one problem each): (libsvm primal - ours) / ours, linear only
        "primal_excess_libsvm_tol1e-8": excess or None,
        "checked": len(check_ids),
        "gemm_gflop": None if flops is None else round(flops / 1e9, 2),
        "gemm_gflops_per_s": None if gflops is None else round(gflops, 2),
        "matmul_peak_gflops_per_s": round(peak, 2),
        "fraction_of_peak": None if gflops is None else round(gflops / peak, 4),
        "phases_s": {k: round(v[0], 3) for k, v in phases.items()} or None,
        "phase_calls": {k: int(v[1]) for k, v in phases.items()} or None,
        # CPU seconds of this process per phase (under a shared load the wall time
        # of a phase includes the time other processes held the cores)
        "phases_cpu_s": {k: round(v[2], 3) for k, v in phases.items()} or None,
        "cprofile_top": profile,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(v, 2) for v in load_before],
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(rec, indent=1))
    msg = (
        f"\n{args.workload} {args.kernel} {args.dtype}: {P} problems, ours {t_ours:.2f} s vs "
        f"libsvm loop {t_sk:.2f} s -> {ratio:.1f}x (target {target}x; CPU seconds "
        f"{c_ours:.2f} vs {c_sk:.2f}, {c_sk / c_ours:.1f}x); "
        f"{rec['n_optimal']}/{P} optimal, max rel gap {rec['max_rel_gap']:.1e}; "
        f"max |df| vs libsvm {worst:.1e}"
    )
    if gflops is not None:
        msg += f"; GEMM {gflops:.1f} GFLOP/s of a {peak:.1f} GFLOP/s matmul peak"
    if first is not None:
        msg += f"; first solve (with compilation) {first[0]:.1f} s wall"
    if phases:
        msg += "; phases " + ", ".join(
            f"{k} {v[0]:.2f} s / {v[2]:.2f} CPU s ({v[1]} calls)"
            for k, v in phases.items()
        )
    print(msg + f"; load {load_before[0]:.1f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    ok = rec["n_optimal"] == P and worst <= (1e-3 if args.dtype == "float64" else 1e-2)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
