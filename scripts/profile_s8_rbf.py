"""Where S8 RBF's seconds go in the dense active set, and A/B of its settings (issue 14).

S8 RBF (SPEC S8: make_classification(5000, 30, flip_y=0.05) standardised, 11 C x 20
bootstrap replicates, the batch of ``scripts/bench_solver.py --workload s8 --kernel
rbf``) takes the dense active set alone: ``n = 5000`` is above the SMO pre-pass's
``smo._AUTO_MAX_N``. This script solves that batch with ``BoxQpSolver`` and reports:

- ``--profile``: every ``pdas_dense`` run (its rows, CPU seconds, iterations, mean and
  largest free face at the start and at the end), and the CPU seconds of the face
  factorisations (``_full_solve``: rows and mean widths), the bordered updates
  (``_update_solve``: rows, mean width, largest change), and the products with ``Q``
  (``_cols_product``, ``_update_product``), by wrapping those functions;
- ``--variants A,B,...`` with ``--rounds R``: solve CPU seconds of each variant,
  alternated in one process, with the mean iterations, the certified problems and the
  largest relative duality gap. Variants: ``base`` (the solver as it is), ``nopilot``
  (``SolverConfig(memory_bytes=8 GiB)``: the first stage's worst-case faces fit the
  store, so the twenty chains run together without the pilot chain), ``fracNN``
  (``pdas._UPDATE_FRAC_DENSE = NN / 100``: bordered updates up to that fraction of the
  factorised face instead of refactorising);
- ``--micro``: the two kernels that bound a faster dense route, in float64 and float32:
  one ``(19, 5000) @ (5000, 5000)`` product and a batched Cholesky of 19 faces of 1300.

CPU seconds are ``time.process_time`` of this process. Run with
``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=.``.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_solver import C_GRID_DEFAULT, workload_data  # noqa: E402

import torchsvm.solvers.box_qp as box_qp  # noqa: E402
import torchsvm.solvers.pdas as pdas  # noqa: E402
from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.types import SolveStatus  # noqa: E402


def s8_rbf() -> BatchedSvmProblem:
    X, y, B = workload_data("s8", False)
    counts = bootstrap_counts(X.shape[0], B, 0)
    return BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID_DEFAULT, counts, kernel="rbf", gamma="scale", dtype="float64"
    )


def solver_for(variant: str) -> box_qp.BoxQpSolver:
    pdas._UPDATE_FRAC_DENSE = 0.25
    mem = None
    if variant == "nopilot":
        mem = 8 * 2**30
    elif variant.startswith("frac"):
        pdas._UPDATE_FRAC_DENSE = float(variant[4:]) / 100
    elif variant != "base":
        raise SystemExit(f"unknown variant {variant}")
    return box_qp.BoxQpSolver(SolverConfig(memory_bytes=mem))


def profile(prob: BatchedSvmProblem) -> None:
    T: dict[str, float] = collections.defaultdict(float)
    N: dict[str, int] = collections.defaultdict(int)
    full: list[tuple[int, float]] = []
    upd: list[tuple[int, float, int]] = []

    def wrap(mod, name, info=None):  # noqa: ANN001, ANN202
        fn = getattr(mod, name)

        def w(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t = time.process_time()
            out = fn(*a, **k)
            T[name] += time.process_time() - t
            N[name] += 1
            if info is not None:
                info(a, out)
            return out

        setattr(mod, name, w)

    def run_info(a, out, cpu: float) -> None:  # noqa: ANN001
        U, A0, A = a[2], a[4], out[0]
        f0 = ((A0 > 0) & (A0 < U)).sum(1).double()
        f1 = ((A > 0) & (A < U)).sum(1).double()
        it = out[3].double()
        print(
            f"pdas_dense rows {U.shape[0]:3d}  CPU s {cpu:5.2f}  iterations mean {it.mean():5.1f} max "
            f"{int(it.max()):3d}  free at start mean {f0.mean():6.0f}  at the end mean "
            f"{f1.mean():6.0f} max {int(f1.max()):5d}",
            flush=True,
        )

    def full_info(a, out) -> None:  # noqa: ANN001
        free = a[3]
        full.append((free.shape[0], float(free.sum(1).double().mean())))

    def upd_info(a, out) -> None:  # noqa: ANN001
        free, store, gi = a[3], a[6], a[7]
        ch = int((free ^ store.mask[gi]).sum(1).max())
        upd.append((free.shape[0], float(free.sum(1).double().mean()), ch))

    # box_qp calls pdas_dense through its own name
    orig_dense = box_qp.pdas_dense

    def dense(*a, **k):  # noqa: ANN002, ANN003, ANN202
        t = time.process_time()
        out = orig_dense(*a, **k)
        cpu = time.process_time() - t
        T["pdas_dense"] += cpu
        N["pdas_dense"] += 1
        run_info(a, out, cpu)
        return out

    box_qp.pdas_dense = dense
    wrap(pdas, "_full_solve", full_info)
    wrap(pdas, "_update_solve", upd_info)
    wrap(pdas, "_cols_product")
    wrap(pdas, "_update_product")
    solver = box_qp.BoxQpSolver(SolverConfig())
    c0 = time.process_time()
    sol = solver(prob)
    total = time.process_time() - c0
    box_qp.pdas_dense = orig_dense
    print(f"solve CPU s {total:.2f}")
    for k in T:
        print(f"  {k}: {N[k]} calls, {T[k]:.2f} CPU s (inclusive)")
    rows = sum(r for r, _ in full)
    gflop = sum(r * f**3 / 3 for r, f in full) / 1e9
    print(f"  factorised rows {rows}, Cholesky flops {gflop:.1f} GFLOP")
    print("  factorisations (rows, mean width):", [(r, round(f)) for r, f in full])
    print(
        "  bordered updates (rows, mean width, largest change):",
        [(r, round(f), m) for r, f, m in upd],
    )
    opt = int((sol.status == SolveStatus.optimal.code).sum())
    print(
        f"  certified {opt}/{prob.n_problems}, max rel gap {sol.duality_gap.max():.1e}"
    )


def micro() -> None:
    for dt in (torch.float64, torch.float32):
        Q = torch.randn(5000, 5000, dtype=dt)
        v = torch.randn(19, 5000, dtype=dt)
        M = torch.randn(19, 1300, 1300, dtype=dt)
        M = M @ M.transpose(1, 2) + 1300 * torch.eye(1300, dtype=dt)
        for _ in range(2):
            c0 = time.process_time()
            for _ in range(10):
                v @ Q
            t_mm = (time.process_time() - c0) / 10
            c0 = time.process_time()
            torch.linalg.cholesky_ex(M)
            t_ch = time.process_time() - c0
        print(
            f"{dt}: (19, 5000) @ (5000, 5000) {1e3 * t_mm:.1f} ms "
            f"({2 * 19 * 5000 * 5000 / t_mm / 1e9:.1f} GFLOP/s); Cholesky 19 x 1300 "
            f"{1e3 * t_ch:.0f} ms ({19 * 1300**3 / 3 / t_ch / 1e9:.1f} GFLOP/s)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--variants", default="")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--micro", action="store_true")
    args = ap.parse_args()
    prob = s8_rbf()
    box_qp.BoxQpSolver(SolverConfig())(prob.select(slice(0, 1)))  # warm-up
    if args.micro:
        micro()
    if args.profile:
        profile(prob)
    variants = [v for v in args.variants.split(",") if v]
    for rnd in range(args.rounds if variants else 0):
        for v in variants:
            solver = solver_for(v)
            c0 = time.process_time()
            sol = solver(prob)
            cpu = time.process_time() - c0
            opt = int((sol.status == SolveStatus.optimal.code).sum())
            print(
                f"{v} round {rnd}: CPU s {cpu:.2f}, iterations mean "
                f"{sol.n_iter.double().mean():.2f}, certified {opt}/{prob.n_problems}, "
                f"max rel gap {sol.duality_gap.max():.1e}",
                flush=True,
            )
    pdas._UPDATE_FRAC_DENSE = 0.25


if __name__ == "__main__":
    main()
