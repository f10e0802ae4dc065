"""One `solve_csvm` call on a bench_mip.py RBF CSVM instance with HiGHS's log and the engine's timings.

The instance of ``scripts/bench_mip.py --rbf-sizes N`` (``bench_mip._csvm_problem``),
solved with ``MipConfig(time_limit=T, mip_rel_gap=1e-4, verbose=True)`` and the
engine's DEBUG log (the interior point's iterations left out): each master's HiGHS
log (root bound, nodes, incumbent on the tangent model), the outer approximation's
rounds and the result. The last line is ``RESULT n seconds status objective bound gap
rounds``; the floor members' ``z`` of the answer go to ``--z-out`` (``.npy``).

Usage: ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python
scripts/csvm_master_log.py 300 1800``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mip import _csvm_problem  # noqa: E402

from torchsvm.mip.csvm import solve_csvm  # noqa: E402
from torchsvm.mip.model import MipConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("time_limit", type=float)
    ap.add_argument("--kernel", default="rbf")
    ap.add_argument("--z-out", default=None)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s")
    for name in ("numba", "matplotlib", "torchsvm.mip.qp_ipm"):
        logging.getLogger(name).setLevel(logging.WARNING)
    p = _csvm_problem(args.kernel, args.n)
    print("load", os.getloadavg(), flush=True)
    t0 = time.perf_counter()
    sol = solve_csvm(
        p, MipConfig(time_limit=args.time_limit, mip_rel_gap=1e-4, verbose=True)
    )
    print(
        "RESULT",
        args.n,
        time.perf_counter() - t0,
        sol.status,
        sol.objective,
        sol.bound,
        sol.mip_gap,
        sol.n_iter,
        flush=True,
    )
    print("load", os.getloadavg(), flush=True)
    if args.z_out:
        np.save(args.z_out, sol.z)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
