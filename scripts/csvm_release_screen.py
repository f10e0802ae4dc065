"""The release-set screen (torchsvm.mip.csvm_release) on a bench_mip.py CSVM instance.

Builds ``bench_mip._csvm_problem(kernel, n)``, its dual-form model, and runs
:func:`~torchsvm.mip.csvm_release.release_screen` with gap 1e-4: prints the number of
release sets, the survivors per pass, the QPs, the answer and its bound, and checks the
answer's point against the kernel-form MIQP (``check_feasible``, objective) and against
the QP of the kernel form with its ``z`` fixed (HiGHS / interior point). The last line
is ``RESULT kernel n seconds status upper lower qps``.

Usage: ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python
scripts/csvm_release_screen.py --kernel rbf --sizes 100 200 300 --time-limit 1800``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mip import _csvm_problem  # noqa: E402

from torchsvm.mip.csvm import build_csvm_model  # noqa: E402
from torchsvm.mip.csvm_release import release_screen  # noqa: E402
from torchsvm.mip.model import MipConfig, check_feasible, model_objective  # noqa: E402
from torchsvm.mip.solve import solve_model  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="rbf")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100])
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for name in ("numba", "torchsvm.mip.qp_ipm", "torchsvm.mip.highs"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for n in args.sizes:
        p = _csvm_problem(args.kernel, n)
        print("load", os.getloadavg(), flush=True)
        t0 = time.perf_counter()
        model, layout, _ = build_csvm_model(p, "dual")
        cfg = MipConfig(time_limit=args.time_limit, mip_rel_gap=1e-4)
        res = release_screen(
            p, layout, cfg, deadline=t0 + args.time_limit, batch=args.batch
        )
        dt = time.perf_counter() - t0
        if res is None:
            print("RESULT", args.kernel, n, dt, "not-applicable", flush=True)
            continue
        print(
            f"n={n}: {res.n_sets} sets, survivors per pass {res.survivors}, "
            f"{res.qps} QPs, {res.points} points, upper {res.upper:.8g}, "
            f"lower {res.lower:.8g}, {res.message}, {dt:.1f} s",
            flush=True,
        )
        if res.x is not None:
            ok, why = check_feasible(model, res.x, tol=1e-6)
            print(
                "kernel-form point feasible:",
                ok,
                why,
                "objective",
                model_objective(model, res.x),
                flush=True,
            )
            # the kernel form's QP at the answer's z
            lo, up = model.col_lower.copy(), model.col_upper.copy()
            z = np.round(res.x[layout.z])
            lo[layout.z] = z
            up[layout.z] = z
            fixed = replace(
                model,
                col_lower=lo,
                col_upper=up,
                integrality=np.zeros(model.n_cols, dtype=bool),
            )
            q = solve_model(fixed, MipConfig(time_limit=300.0))
            print(
                "kernel-form QP at the answer's z:",
                q.status,
                q.objective,
                "released",
                np.flatnonzero(res.released),
                flush=True,
            )
        print(
            "RESULT",
            args.kernel,
            n,
            f"{dt:.2f}",
            "optimal" if res.proven else "stopped",
            f"{res.upper:.8g}",
            f"{res.lower:.8g}",
            res.qps,
            flush=True,
        )
        print("load", os.getloadavg(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
