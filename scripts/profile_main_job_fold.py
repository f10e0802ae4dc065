"""Where the main job's fold spends its time, and how far its method can go (issue 14).

The fold (``bench_solver.py --workload main-job``: 11 C = 2^-5..2^5 x 500 bootstrap
replicates of a linear SVM on 512 standardised breast_cancer rows) is solved once by
``BoxQpSolver`` (CPU seconds of this process). Reported:

- the fold's CPU seconds, those of its pipelined active-set call (every C after the
  first), of the first C's roots from ``a = 0`` (``BoxQpSolver._roots_from_vertex``)
  and of its interior point (the roots left to it), and the active set's CPU seconds per
  row-iteration (one iteration of one problem);
- per C: the mean iterations, the mean partition of the solutions (coordinates at 0,
  free, at the bound) and how many coordinates of each problem's start are on the
  wrong side of that partition: the start the solver uses (the same replicate's
  solution at the previous C, scaled by 2) and, for comparison, the linear
  extrapolation ``a_r = 3 a_{r-1} - 2 a_{r-2}`` clipped to the box;
- micro-benchmarks of the batched operations one row-iteration cannot avoid, at the
  fold's sizes (300 rows at once, faces of ``f`` free coordinates, ``k = 30``):
  gathering the face's rows of ``W``, the face Gram matrices (``bmm``), the bordered
  LU solve (``linalg.solve_ex``), and at a face minimiser the gradient's two GEMMs and
  the pricing's ``topk``;
- the first C's interior point alone on its 500 problems with row blocks of 512, 256
  and 128 rows (``ipm_low_rank(block_rows=...)``);
- optionally (``--sklearn-problems N``) a libsvm loop of ``N`` problems spread over the
  grid, ``SVC(kernel="linear", C=C).fit(X, y, sample_weight=counts)`` as in
  ``bench_solver.py``, scaled to all 5500, for the ratio in the same run;
- optionally (``--compare R``) the whole fold under each of three settings, alternately,
  ``R`` times each, in this process: ``torch`` (``active_set_kernel="torch"``, the
  batched torch active set; the roots by the interior point), ``numba`` (the compiled
  active set, the roots by the interior point: ``BoxQpSolver(vertex_roots=False)``) and
  ``numba+vertex`` (the default: the compiled active set, the roots from ``a = 0``
  where the pilot allows). Per setting: the median and the range of the fold's CPU
  seconds and of its roots' (the C path's first problems: ``_roots_from_vertex`` and
  the interior point's call on the roots), the mean iterations, the problems certified
  and the largest relative difference of the primal values from the first setting's;
  with ``--sklearn-problems``, the libsvm loop is timed once more in every round and
  each ratio is that of the loop's median to the setting's. Alternating keeps the
  settings and the reference under the same load, which on a shared machine moves
  separate runs by 10-30 % (and the libsvm loop by as much).

Usage::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. \\
        python scripts/profile_main_job_fold.py --sklearn-problems 22 [--compare 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers import box_qp  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402
from torchsvm.solvers.ipm import ipm_low_rank  # noqa: E402
from torchsvm.types import SolveStatus  # noqa: E402

C_GRID = 2.0 ** np.arange(-5, 6)


def _partition(a: np.ndarray, u: np.ndarray, rel: float = 1e-9) -> np.ndarray:
    """0 at the lower bound (or fixed, u = 0), 1 free, 2 at the upper bound."""
    s = np.ones(a.shape, dtype=np.int8)
    s[a <= rel * u] = 0
    s[(a >= (1.0 - rel) * u) & (u > 0)] = 2
    s[u == 0] = 0
    return s


def _cpu_us_per_row(fn, rows: int, reps: int = 50) -> float:  # noqa: ANN001
    fn()
    c0 = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - c0) / reps / rows * 1e6


def micro(
    W: torch.Tensor, y: torch.Tensor, widths: Sequence[int], rows: int = 300
) -> dict:
    """CPU microseconds per row of the batched operations of one row-iteration."""
    n, k = W.shape
    gen = torch.Generator().manual_seed(0)
    dt = W.dtype
    out: dict = {}
    for f in widths:
        idx = torch.stack([torch.randperm(n, generator=gen)[:f] for _ in range(rows)])
        Wf = W[idx]
        yF = y[idx]
        K = torch.zeros((rows, f + 1, f + 1), dtype=dt)
        K[:, :f, :f] = Wf @ Wf.transpose(1, 2)
        K[:, :f, f] = yF
        K[:, f, :f] = yF
        rhs = torch.randn((rows, f + 1), generator=gen, dtype=dt)
        out[f"f={f}"] = {
            "gather_W_F": _cpu_us_per_row(lambda idx=idx: W[idx], rows),
            "gram_bmm": _cpu_us_per_row(lambda Wf=Wf: Wf @ Wf.transpose(1, 2), rows),
            "bordered_solve_ex": _cpu_us_per_row(
                lambda K=K, rhs=rhs: torch.linalg.solve_ex(K, rhs), rows
            ),
        }
    A = torch.rand((rows, n), generator=gen, dtype=dt)
    out["face_minimiser"] = {
        "gradient_two_gemms": _cpu_us_per_row(lambda: (A @ W) @ W.T, rows),
        "topk_18": _cpu_us_per_row(lambda: torch.topk(A, 18, dim=1), rows),
    }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--replicates", type=int, default=500)
    ap.add_argument(
        "--sklearn-problems",
        type=int,
        default=0,
        help="problems in a libsvm loop spread over the grid, scaled to all (0: none)",
    )
    ap.add_argument(
        "--compare",
        type=int,
        default=0,
        metavar="R",
        help="solve the fold R times under each of the settings torch / numba / "
        "numba+vertex, alternately (0: not)",
    )
    ap.add_argument("--out", default=None, help="append the JSON line to this file")
    args = ap.parse_args(argv)
    torch.manual_seed(0)

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X[:512])
    y = np.where(y[:512] == 1, 1.0, -1.0)
    B = args.replicates
    counts = bootstrap_counts(512, B, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID, counts, kernel="linear", dtype=args.dtype
    )
    solver = BoxQpSolver(SolverConfig())
    solver(prob.select(slice(0, 1)))  # warm-up

    # time the pipelined active-set call and the roots' interior point inside the solve
    spent = {
        "active_set_path_cpu_s": 0.0,
        "ipm_roots_cpu_s": 0.0,
        "vertex_roots_cpu_s": 0.0,
    }
    real_as, real_ipm = box_qp.active_set_low_rank, BoxQpSolver._ipm_chunked
    real_vertex = BoxQpSolver._roots_from_vertex

    def spy_as(*a, **k):  # noqa: ANN002, ANN003, ANN202
        c0 = time.process_time()
        res = real_as(*a, **k)
        if k.get("parent") is not None:
            spent["active_set_path_cpu_s"] += time.process_time() - c0
        return res

    def spy_ipm(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        c0 = time.process_time()
        res = real_ipm(self, *a, **k)
        spent["ipm_roots_cpu_s"] += time.process_time() - c0
        return res

    def spy_vertex(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        c0 = time.process_time()
        res = real_vertex(self, *a, **k)
        spent["vertex_roots_cpu_s"] += time.process_time() - c0
        return res

    box_qp.active_set_low_rank = spy_as
    BoxQpSolver._ipm_chunked = spy_ipm  # type: ignore[method-assign]
    BoxQpSolver._roots_from_vertex = spy_vertex  # type: ignore[method-assign]
    load0 = os.getloadavg()
    c0, t0 = time.process_time(), time.perf_counter()
    sol = solver(prob)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    box_qp.active_set_low_rank = real_as
    BoxQpSolver._ipm_chunked = real_ipm  # type: ignore[method-assign]
    BoxQpSolver._roots_from_vertex = real_vertex  # type: ignore[method-assign]

    ci = prob.index["c_idx"].cpu().numpy()
    ri = prob.index["rep_idx"].cpu().numpy()
    it = sol.n_iter.cpu().numpy()
    A = sol.alpha.double().cpu().numpy()
    U = prob.U.double().cpu().numpy()
    optimal = int((sol.status.cpu() == SolveStatus.optimal.code).sum())
    pos = {(int(c), int(r)): p for p, (c, r) in enumerate(zip(ci, ri, strict=True))}
    stages = []
    for c in range(len(C_GRID)):
        part, mm_scaled, mm_extra = [], [], []
        for r in range(B):
            p = pos[(c, r)]
            s = _partition(A[p], U[p])
            part.append(
                [(s == 0).sum() - (U[p] == 0).sum(), (s == 1).sum(), (s == 2).sum()]
            )
            if c >= 1:
                a1 = A[pos[(c - 1, r)]]
                start = np.minimum(2.0 * a1, U[p])
                mm_scaled.append((_partition(start, U[p]) != s).sum())
            if c >= 2:
                a2 = A[pos[(c - 2, r)]]
                ext = np.clip(3.0 * a1 - 2.0 * a2, 0.0, U[p])
                mm_extra.append((_partition(ext, U[p]) != s).sum())
        pm = np.mean(part, 0)
        stages.append(
            {
                "C": float(C_GRID[c]),
                "iters_mean": float(it[ci == c].mean()),
                "at_0": float(pm[0]),
                "free": float(pm[1]),
                "at_u": float(pm[2]),
                "start_mismatch_scaled": float(np.mean(mm_scaled))
                if mm_scaled
                else None,
                "start_mismatch_extrapolated": float(np.mean(mm_extra))
                if mm_extra
                else None,
            }
        )
    path_iters = int(it[ci > 0].sum())
    free_mean = float(np.mean([s["free"] for s in stages]))

    W = torch.as_tensor(X * y[:, None], dtype=prob.dtype)
    yt = torch.as_tensor(y, dtype=prob.dtype)
    widths = sorted({16, int(round(free_mean)) + 1, 31})
    mic = micro(W, yt, widths)

    U0 = prob.U[torch.as_tensor(ci == 0)]
    ipm_blocks = {}
    for rb in (512, 256, 128):
        c1 = time.process_time()
        ipm_low_rank(W, yt, U0, tol=SolverConfig().ipm_tol, block_rows=rb)
        ipm_blocks[str(rb)] = time.process_time() - c1

    sk = None
    libsvm = None
    if args.sklearn_problems > 0:
        picks = np.linspace(0, len(ci) - 1, args.sklearn_problems).round().astype(int)

        def libsvm() -> float:
            """CPU seconds of the libsvm loop on ``picks``, scaled to every problem."""
            c1 = time.process_time()
            for p in picks:
                SVC(kernel="linear", C=C_GRID[ci[p]]).fit(
                    X, y, sample_weight=counts[ri[p]]
                )
            return (time.process_time() - c1) / len(picks) * len(ci)

        sk = libsvm()

    compared = compare(prob, args.compare, libsvm) if args.compare > 0 else None

    res = {
        "dtype": args.dtype,
        "problems": len(ci),
        "optimal": optimal,
        "cpu_s": cpu,
        "wall_s": wall,
        **spent,
        "path_row_iterations": path_iters,
        "active_set_us_per_row_iteration": spent["active_set_path_cpu_s"]
        / max(path_iters, 1)
        * 1e6,
        "stages": stages,
        "micro_us_per_row": mic,
        "ipm_roots_by_block_rows_cpu_s": ipm_blocks,
        "libsvm_loop_cpu_s": sk,
        "ratio_cpu": None if sk is None else sk / cpu,
        "compare": compared,
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
        "threads": torch.get_num_threads(),
    }
    line = json.dumps(res)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(line + "\n")
    print(json.dumps(res, indent=1))
    print(
        f"fold {args.dtype}: {optimal}/{len(ci)} optimal, {cpu:.2f} CPU s "
        f"({wall:.2f} s wall); path active set {spent['active_set_path_cpu_s']:.2f} CPU s "
        f"over {path_iters} row-iterations = "
        f"{res['active_set_us_per_row_iteration']:.1f} us each; roots from a = 0 "
        f"{spent['vertex_roots_cpu_s']:.2f} CPU s, roots' interior point "
        f"{spent['ipm_roots_cpu_s']:.2f} CPU s"
        + ("" if sk is None else f"; libsvm loop {sk:.2f} CPU s, {sk / cpu:.1f}x")
        + f"; load {load0[0]:.1f}"
    )
    sk_c = (compared or {}).pop("libsvm", None)
    if sk_c is not None:
        print(
            f"  libsvm loop in the comparison's rounds: {sk_c['cpu_s_median']:.2f} CPU s "
            f"(median of {len(sk_c['cpu_s'])}, {min(sk_c['cpu_s']):.2f}-"
            f"{max(sk_c['cpu_s']):.2f})"
        )
    for name, c in (compared or {}).items():
        print(
            f"  {name}: fold {c['cpu_s_median']:.3f} CPU s (median of "
            f"{len(c['cpu_s'])}, {min(c['cpu_s']):.3f}-{max(c['cpu_s']):.3f}), roots "
            f"{c['roots_cpu_s_median']:.3f}, {c['iters_mean']:.2f} iterations per "
            f"problem, {c['optimal']} optimal, primal vs {next(iter(compared))} "
            f"{c['max_rel_primal_diff']:.1e}"
            + ("" if sk_c is None else f"; libsvm loop {c['ratio_cpu']:.1f}x")
        )
    return 0


_SETTINGS = {
    "torch": ({"active_set_kernel": "torch"}, {}),
    "numba": ({"active_set_kernel": "numba"}, {"vertex_roots": False}),
    "numba+vertex": ({"active_set_kernel": "numba"}, {"vertex_roots": True}),
}


def compare(
    prob: BatchedSvmProblem, reps: int, libsvm: Callable[[], float] | None
) -> dict:
    """The fold under each of ``_SETTINGS``, alternately, ``reps`` times each; with
    ``libsvm`` (the libsvm loop, scaled CPU seconds) that loop too in each round, so
    that each ratio is of two medians taken under the same load."""
    solvers = {
        name: BoxQpSolver(SolverConfig(**cfg), **kw)
        for name, (cfg, kw) in _SETTINGS.items()
    }
    for s in solvers.values():
        s(prob.select(slice(0, 1)))  # warm-up: the kernel's compilation or cache
    roots = {"cpu": 0.0}
    real_vertex, real_ipm = BoxQpSolver._roots_from_vertex, BoxQpSolver._ipm_chunked

    def spy_vertex(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        c0 = time.process_time()
        res = real_vertex(self, *a, **k)
        roots["cpu"] += time.process_time() - c0
        return res

    def spy_ipm(self, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        c0 = time.process_time()
        res = real_ipm(self, *a, **k)
        roots["cpu"] += time.process_time() - c0
        return res

    rec: dict = {n: {"cpu_s": [], "roots_cpu_s": [], "wall_s": []} for n in solvers}
    sk: list[float] = []
    sols = {}
    BoxQpSolver._roots_from_vertex = spy_vertex  # type: ignore[method-assign]
    BoxQpSolver._ipm_chunked = spy_ipm  # type: ignore[method-assign]
    try:
        for _ in range(reps):
            for name, s in solvers.items():
                roots["cpu"] = 0.0
                c0, t0 = time.process_time(), time.perf_counter()
                sols[name] = s(prob)
                rec[name]["cpu_s"].append(time.process_time() - c0)
                rec[name]["wall_s"].append(time.perf_counter() - t0)
                rec[name]["roots_cpu_s"].append(roots["cpu"])
            if libsvm is not None:
                sk.append(libsvm())
    finally:
        BoxQpSolver._roots_from_vertex = real_vertex  # type: ignore[method-assign]
        BoxQpSolver._ipm_chunked = real_ipm  # type: ignore[method-assign]
    ref = sols[next(iter(sols))].primal.double()
    sk_med = float(np.median(sk)) if sk else None
    for name, sol in sols.items():
        r = rec[name]
        r["cpu_s_median"] = float(np.median(r["cpu_s"]))
        r["roots_cpu_s_median"] = float(np.median(r["roots_cpu_s"]))
        r["iters_mean"] = float(sol.n_iter.double().mean())
        r["first_c_iters_mean"] = float(
            sol.n_iter[prob.index["c_idx"] == 0].double().mean()
        )
        r["optimal"] = int((sol.status.cpu() == SolveStatus.optimal.code).sum())
        r["max_rel_gap"] = float(sol.duality_gap.max())
        r["max_rel_primal_diff"] = float(
            ((sol.primal.double() - ref).abs() / ref.abs().clamp_min(1e-300)).max()
        )
        r["ratio_cpu"] = None if sk_med is None else sk_med / r["cpu_s_median"]
    if sk:
        rec["libsvm"] = {"cpu_s": sk, "cpu_s_median": sk_med}
    return rec


if __name__ == "__main__":
    raise SystemExit(main())
