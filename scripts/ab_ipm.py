"""A/B of two versions of the low-rank interior point, in one process (issue 14).

Times :func:`~torchsvm.solvers.ipm.ipm_low_rank` of each given ``ipm.py`` (loaded as a
standalone module, e.g. from ``git archive <sha> torchsvm/solvers/ipm.py``) on identical
inputs, alternately (the order flips every repetition), ``--reps`` times, in CPU
seconds of this process: alternating in one process keeps the versions under the same
load, which on the shared machine moves separate runs by 10-30 %. Workloads:

- ``fold``: the main job's fold's roots, i.e. its 500 bootstrap problems at the first
  ``C = 2^-5`` (512 standardised breast_cancer rows, ``bootstrap_counts(512, 500, 0)``),
  which the fold solves by the interior point before its C path;
- ``s8``: SPEC S8's linear batch (``make_classification(5000, 30, flip_y=0.05,
  random_state=0)``, 11 C = 2^-5..2^5 x 20 bootstrap replicates), all of whose problems
  the solver gives to the interior point (``n`` is above the C path's limit).

Reports each version's CPU seconds per repetition and their medians, its iterations and
the largest difference of its iterates from the first version's (relative to the
largest bound).

Usage::

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/ab_ipm.py --workload fold \\
        --version parent=/tmp/parent/torchsvm/solvers/ipm.py \\
        --version new=torchsvm/solvers/ipm.py --reps 6
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
import torch  # noqa: E402
from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from torchsvm.config import SolverConfig  # noqa: E402
from torchsvm.data.resample import bootstrap_counts  # noqa: E402


def _load(name: str, path: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(f"_ab_{name}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workload(name: str, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """``W`` (n, k) with ``Q = W W^T``, labels ``y`` and the bounds ``U`` (P, n)."""
    if name == "fold":
        X, y = load_breast_cancer(return_X_y=True)
        X = StandardScaler().fit_transform(X[:512])
        y = np.where(y[:512] == 1, 1.0, -1.0)
        U = 2.0**-5 * np.asarray(bootstrap_counts(512, 500, 0), dtype=np.float64)
    else:
        X, y = make_classification(5000, 30, flip_y=0.05, random_state=0)
        X = StandardScaler().fit_transform(X)
        y = np.where(y == 1, 1.0, -1.0)
        counts = np.asarray(bootstrap_counts(5000, 20, 0), dtype=np.float64)
        grid = 2.0 ** np.arange(-5, 6)
        U = (grid[:, None, None] * counts[None]).reshape(-1, 5000)
    W = torch.as_tensor(X * y[:, None], dtype=dtype)
    return W, torch.as_tensor(y, dtype=dtype), torch.as_tensor(U, dtype=dtype)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--version",
        action="append",
        required=True,
        metavar="NAME=PATH",
        help="an ipm.py to time (two or more; the first is the reference)",
    )
    ap.add_argument("--workload", choices=["fold", "s8"], default="fold")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    ap.add_argument("--reps", type=int, default=6)
    args = ap.parse_args(argv)
    versions = {}
    for v in args.version:
        name, _, path = v.partition("=")
        versions[name] = _load(name, path).ipm_low_rank
    W, y, U = workload(args.workload, getattr(torch, args.dtype))
    tol = SolverConfig().ipm_tol
    print(
        f"{args.workload}: {U.shape[0]} problems, n = {U.shape[1]}, k = {W.shape[1]}, "
        f"{args.dtype}, ipm_tol {tol:g}; load {os.getloadavg()[0]:.1f}"
    )
    cpu: dict[str, list[float]] = {k: [] for k in versions}
    first: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    names = list(versions)
    for r in range(args.reps):
        for name in names if r % 2 == 0 else names[::-1]:
            c0 = time.process_time()
            a, _, it, _ = versions[name](W, y, U, tol=tol)
            cpu[name].append(time.process_time() - c0)
            first.setdefault(name, (a, it))
    ref_a, _ = first[names[0]]
    scale = float(U[torch.isfinite(U)].max())
    for name in names:
        a, it = first[name]
        diff = float((a - ref_a).abs().max()) / scale
        print(
            f"{name}: CPU s {' '.join(f'{c:.3f}' for c in cpu[name])}; median "
            f"{statistics.median(cpu[name]):.3f}; iterations mean "
            f"{float(it.double().mean()):.3f} max {int(it.max())}; max |a - "
            f"{names[0]}| / max u {diff:.1e}"
        )
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
