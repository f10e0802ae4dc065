"""A/B of two versions of the active set on the main job's fold, in one process (issue 14).

The main job's fold (``bench_solver.py --workload main-job``: 11 C x 500 bootstrap
replicates on 512 standardised breast_cancer rows) is solved once with the installed
solver, recording the arguments of its pipelined
:func:`~torchsvm.solvers.active_set.active_set_low_rank` call (every C after the first,
about 70 % of the fold's time). That call is then repeated with the
``active_set_low_rank`` of each given ``active_set.py`` file (loaded as standalone
modules, e.g. from ``git archive <sha> torchsvm/solvers/active_set.py``), alternately,
``--reps`` times, on identical inputs, timing CPU seconds of this process. Alternating
in one process keeps both versions under the same load, which on a shared machine moves
separate runs by 10-30 %. Checks that every version certifies every row and reports the
largest difference of the iterates and of the iteration counts against the first.

Usage::

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/ab_active_set.py \\
        --version parent=/tmp/parent/torchsvm/solvers/active_set.py \\
        --version new=torchsvm/solvers/active_set.py --reps 7
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from collections.abc import Sequence

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402
from torchsvm.solvers import box_qp  # noqa: E402
from torchsvm.solvers.box_qp import BoxQpSolver  # noqa: E402


def _load(name: str, path: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(f"_ab_{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--version",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="an active_set.py to time (two or more; the first is the reference)",
    )
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--replicates", type=int, default=500)
    args = ap.parse_args(argv)
    versions = {}
    for v in args.version:
        name, _, path = v.partition("=")
        versions[name] = _load(name, path).active_set_low_rank

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X[:512])
    y = np.where(y[:512] == 1, 1.0, -1.0)
    counts = bootstrap_counts(512, args.replicates, 0)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, 2.0 ** np.arange(-5, 6), counts, kernel="linear", dtype="float64"
    )
    calls = []
    real = box_qp.active_set_low_rank

    def spy(*a, **k):  # noqa: ANN002, ANN003, ANN202
        calls.append((a, k))
        return real(*a, **k)

    box_qp.active_set_low_rank = spy
    try:
        BoxQpSolver(SolverConfig())(prob)
    finally:
        box_qp.active_set_low_rank = real
    piped = [c for c in calls if c[1].get("parent") is not None]
    if not piped:
        raise SystemExit("no pipelined active-set call recorded")
    a, k = piped[0]
    load0 = os.getloadavg()
    cpu: dict[str, list[float]] = {name: [] for name in versions}
    outs = {}
    for _ in range(args.reps):
        for name, fn in versions.items():
            c0 = time.process_time()
            out = fn(*a, **k)
            cpu[name].append(time.process_time() - c0)
            if not bool(out[3].all()):
                raise SystemExit(f"{name}: {int((~out[3]).sum())} rows not certified")
            outs[name] = out
    ref = next(iter(versions))
    print(
        f"pipelined call: {k['parent'].numel()} rows; load {load0} -> {os.getloadavg()}"
    )
    for name in versions:
        t = cpu[name]
        da = float((outs[name][0] - outs[ref][0]).abs().max())
        dit = int((outs[name][2] != outs[ref][2]).sum())
        print(
            f"{name}: CPU s {' '.join(f'{v:.2f}' for v in t)}; median "
            f"{statistics.median(t):.2f}, mean iterations "
            f"{float(outs[name][2].double().mean()):.3f}; vs {ref}: max |A diff| "
            f"{da:.1e}, rows with other iteration counts {dit}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
