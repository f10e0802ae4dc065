"""The release-set screen (torchsvm.mip.csvm_release) on a bench_mip.py CSVM instance.

Builds ``bench_mip._csvm_problem(kernel, n)``, its dual-form model, and runs
:func:`~torchsvm.mip.csvm_release.release_screen` with gap 1e-4: prints the number of
release sets, the survivors per pass, the QPs, the answer and its bound, and checks the
answer's point against the kernel-form MIQP (``check_feasible``, objective) and against
the QP of the kernel form with its ``z`` fixed (HiGHS / interior point). With
``--check-sets N`` it also solves ``P(R)`` (the dual QP, balanced: a lower bound on
``P(R)``) on every set one swap away from the answer's and on ``N`` random sets, and
counts those below the proven bound (a valid screen leaves none). The last line is
``RESULT kernel n seconds status upper lower qps``.

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
from torchsvm.mip.csvm_release import (  # noqa: E402
    _balance,
    _dual_qp,
    member_system,
    release_screen,
)
from torchsvm.mip.model import MipConfig, check_feasible, model_objective  # noqa: E402
from torchsvm.mip.solve import solve_model  # noqa: E402


def _check_sets(p, layout, res, n_random: int) -> None:  # noqa: ANN001
    """``P(R)``'s dual value on the answer's swap neighbours and random sets."""
    I = layout.train_idx
    mem = np.asarray(p.floor_members(p.floors[0]))
    S, LS, yS, cap, G = member_system(p, layout)
    rel0 = np.asarray(res.released, dtype=bool)
    sets = []
    for i in np.flatnonzero(rel0):
        for j in np.flatnonzero(~rel0):
            r = rel0.copy()
            r[i], r[j] = False, True
            sets.append(r)
    rng = np.random.default_rng(0)
    for _ in range(n_random):
        r = np.zeros(mem.size, dtype=bool)
        r[rng.choice(mem.size, int(rel0.sum()), replace=False)] = True
        sets.append(r)
    t0 = time.perf_counter()
    vals = []
    for r in sets:
        keep = np.concatenate([np.ones(I.size, dtype=bool), ~r])
        a = np.zeros(S.size)
        a[keep] = _dual_qp(G[np.ix_(keep, keep)], yS[keep], cap[keep], MipConfig())
        a = _balance(a, yS, cap)
        v = LS.T @ (yS * a)
        vals.append(2 * a.sum() - v @ v)
    vals = np.array(vals)
    print(
        f"check: {len(sets)} sets ({len(sets) - n_random} swap neighbours), "
        f"least P(R) {vals.min():.8g}, below the bound {res.lower:.8g}: "
        f"{int(np.sum(vals < res.lower))} ({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="rbf")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100])
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--check-sets", type=int, default=0)
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
        if args.check_sets and res.released is not None:
            _check_sets(p, layout, res, args.check_sets)
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
