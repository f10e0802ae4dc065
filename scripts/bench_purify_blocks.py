"""Purification of the interior point's start, on the whole batch or in row blocks (issue 14).

Builds the probabilities experiment's bootstrap batch of one outer fold
(``scripts/bench_solver.py``'s ``--workload dataset --fold``: rows, replicates, C grid
and tolerance of ``--config``), merges duplicate rows and rounds the interior point's
iterate to the box as ``BoxQpSolver._ipm_only`` does, then times
:func:`torchsvm.solvers.active_set.purify_start` on the whole batch and on blocks of
rows of :func:`torchsvm.solvers.ipm.row_block_size` (``--block-rows`` to override),
alternated ``--repeats`` times (the whole batch with ``purify_start``'s own
blocks switched off). Each timing gives CPU seconds, the kernel's share
(``ru_stime``) and the minor page faults of this process. The purified points of the
two are compared: ``W^T a`` and ``y^T a`` of every row against the start, the dual
objective (never higher than the start's), the free coordinates per row, and the
largest difference between the two.

``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data
PYTHONPATH=. python scripts/bench_purify_blocks.py --dataset churn --fold 3``
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_solver import fold_workload  # noqa: E402

from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers import ipm  # noqa: E402
from torchsvm.solvers.active_set import purify_start  # noqa: E402
from torchsvm.solvers.box_qp import _PURIFY_ABOVE, merge_duplicate_rows  # noqa: E402
from torchsvm.solvers.factor import build_factor  # noqa: E402
from torchsvm.solvers.ipm import ipm_low_rank, row_block_size  # noqa: E402
from torchsvm.solvers.kkt import project_face  # noqa: E402


def _usage() -> tuple[float, float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_stime, r.ru_minflt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="churn")
    ap.add_argument("--fold", type=int, default=3)
    ap.add_argument("--replicates", type=int, default=500)
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--block-rows", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    load0 = os.getloadavg()
    X, y, grid, counts, solver = fold_workload(
        args.dataset, args.fold, args.replicates, args.config
    )
    prob = BatchedSvmProblem.from_bootstrap(X, y, grid, counts, kernel="linear")
    with torch.inference_mode():
        merged = merge_duplicate_rows(prob)
        if merged is not None:
            prob = merged[0]
        F = build_factor(prob, 1e-13)
        W, yt, U = F.low_rank(), prob.y, prob.U
        c0 = time.process_time()
        a = ipm_low_rank(W, yt, U, None, tol=1e-9)[0]
        t_ipm = time.process_time() - c0
        # the rounding of BoxQpSolver._ipm_only (float64: snap 1e-6)
        fin = torch.isfinite(U)
        r = a / torch.where(fin & (U > 0), U, 1.0)
        A0 = torch.where(r < 1e-6, 0.0, torch.where(fin & (r > 1 - 1e-6), U, a))
        A0 = project_face(A0, yt, U)
        k1 = W.shape[1] + 1
        P, n = U.shape
        rb = args.block_rows or row_block_size(P, n, U.dtype, U.device)
        free0 = ((A0 > 0) & (A0 < U)).sum(1)
        print(
            f"{args.dataset} fold {args.fold}: P = {P}, n = {n} (merged), k = {k1 - 1}; "
            f"interior point {t_ipm:.1f} CPU s; free coordinates per row of the "
            f"rounded start: median {int(free0.median())}, max {int(free0.max())}, "
            f"rows above {_PURIFY_ABOVE} (k + 1): {int((free0 > _PURIFY_ABOVE * k1).sum())}"
            f"; blocks of {rb} rows; load {load0[0]:.1f}",
            flush=True,
        )

        def whole() -> torch.Tensor:
            # one block: purify_start's own blocks (on the CPU) switched off
            saved = ipm._CPU_BLOCK_BYTES
            ipm._CPU_BLOCK_BYTES = 1 << 62
            try:
                return purify_start(
                    W, yt, U, A0.clone(), k1, only_above=_PURIFY_ABOVE * k1
                )
            finally:
                ipm._CPU_BLOCK_BYTES = saved

        def blocks() -> torch.Tensor:
            return torch.cat(
                [
                    purify_start(
                        W,
                        yt,
                        U[s : s + rb],
                        A0[s : s + rb].clone(),
                        k1,
                        only_above=_PURIFY_ABOVE * k1,
                    )
                    for s in range(0, P, rb)
                ]
            )

        out = {}
        for rep in range(args.repeats):
            for name, fn in (("whole batch", whole), ("row blocks", blocks)):
                u0, s0, f0 = _usage()
                t0 = time.perf_counter()
                out[name] = fn()
                u1, s1, f1 = _usage()
                print(
                    f"  run {rep + 1} {name:11s}: {u1 - u0:7.2f} CPU s "
                    f"({s1 - s0:6.2f} s in the kernel), {time.perf_counter() - t0:7.1f} s "
                    f"wall, {f1 - f0} minor page faults; load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        wT0, yT0 = A0 @ W, A0 @ yt
        obj0 = 0.5 * (wT0 * wT0).sum(1) - A0.sum(1)
        for name, A in out.items():
            wT = A @ W
            obj = 0.5 * (wT * wT).sum(1) - A.sum(1)
            free = ((A > 0) & (A < U)).sum(1)
            print(
                f"  {name}: max |W^T a - W^T a0| {float((wT - wT0).abs().max()):.1e}, "
                f"max |y^T a - y^T a0| {float((A @ yt - yT0).abs().max()):.1e}, "
                f"objective raised on {int((obj > obj0 + 1e-9 * obj0.abs()).sum())} rows, "
                f"free per row: median {int(free.median())}, max {int(free.max())}, "
                f"bounds kept {bool(((A >= 0) & (A <= U)).all())}"
            )
        d = (out["whole batch"] - out["row blocks"]).abs().max()
        print(f"  max |whole - blocks| {float(d):.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
