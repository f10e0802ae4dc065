"""First C of a main-job fold: the active set from the full-data partition vs the interior point.

The C path (``BoxQpSolver._ipm_path``) solves the smallest C of a bootstrap grid with the
interior point and an active-set clean-up, then every later C with the active set from
the previous C. This script times an alternative for that first stage on one fold of
the main job (configs/default.toml, 500 replicates at C = 2^-5): solve the full-data
problem (every count 1) once, start every replicate from its partition (coordinates at
the bound go to their bound ``C * count``, free ones keep their value, capped; out-of-bag
ones are 0), restore ``y^T a = 0`` greedily (on the side in excess, lower free
coordinates first, then bounded ones, smallest first), then run
:func:`~torchsvm.solvers.active_set.active_set_low_rank`. Both answers are certified by
the duality gap; the script prints the CPU and wall seconds of each (the greedy
feasibility step, a Python loop here, is not timed), the iterations, how many rows were
certified and the largest difference of the two answers.

Example::

    OMP_NUM_THREADS=1 python scripts/first_c_start_check.py --fold 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import torchsvm  # noqa: F401  (sets OMP_WAIT_POLICY before torch loads)
from torchsvm.config import SolverConfig, load_config
from torchsvm.estimators._base import encode_binary
from torchsvm.estimators.bootstrap import _draw_counts
from torchsvm.experiments.runner import load_fold_data
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.active_set import active_set_low_rank
from torchsvm.solvers.box_qp import BoxQpSolver, _certify
from torchsvm.solvers.factor import build_factor
from torchsvm.solvers.ipm import ipm_low_rank
from torchsvm.solvers.kkt import project_face


def _greedy_feasible(A0: torch.Tensor, y: torch.Tensor, at_u: torch.Tensor) -> None:
    """Make ``y^T a = 0`` in place by lowering coordinates of the side in excess."""
    for p in range(A0.shape[0]):
        a = A0[p]
        res = float((a * y).sum())
        if abs(res) < 1e-15:
            continue
        side = 1.0 if res > 0 else -1.0
        cand = ((y == side) & (a > 0)).nonzero()[:, 0].tolist()
        for i in sorted(cand, key=lambda i: (bool(at_u[i]), float(a[i]))):
            if res * side <= 0:
                break
            take = min(float(a[i]), res * side)
            a[i] -= take
            res -= side * take


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    cfg = load_config(None, [])
    tol = cfg.solver.tol
    d = load_fold_data(cfg, cfg.data.datasets[0], args.fold)
    X = d["X_train"]
    _, y = encode_binary(d["y_train"], "fold")
    counts = _draw_counts(
        y, cfg.bootstrap.n_bootstrap, cfg.protocol.seed * 1000 + args.fold
    )
    C0 = float(min(cfg.bootstrap.C_grid))
    kw = {"kernel": "linear", "dtype": torch.float64}
    prob = BatchedSvmProblem.from_bootstrap(X, y, np.array([C0]), counts, **kw)
    ones = np.ones((1, len(y)))
    full = BatchedSvmProblem.from_bootstrap(X, y, np.array([C0]), ones, **kw)
    scfg = SolverConfig(tol=tol)
    with torch.inference_mode():
        F = build_factor(prob, scfg.eig_rel_tol)
        W, yt, U = F.low_rank(), prob.y, prob.U
        c0 = time.process_time()
        af = BoxQpSolver(scfg)(full).alpha[0]
        t_full = time.process_time() - c0
        at_u = af >= C0 * (1 - 1e-9)
        free = (af > 0) & ~at_u
        A0 = torch.where(at_u[None], U, torch.minimum(af[None].expand_as(U), U))
        A0 = (A0 * (U > 0)).clone()
        _greedy_feasible(A0, yt, at_u)
        A0 = project_face(A0, yt, U)
        print(
            f"fold {args.fold}, C = {C0}: full data {int(at_u.sum())} at the bound, "
            f"{int(free.sum())} free ({t_full:.3f} CPU s); starts: "
            f"{float(((A0 > 0) & (A0 < U)).sum(1).double().mean()):.1f} free on average"
        )
        for _ in range(args.repeat):
            c0, w0 = time.process_time(), time.perf_counter()
            a, b, it, ok = active_set_low_rank(W, yt, U, A0, max_iter=200, tol=tol)
            p1, _, rel, _ = _certify(a, F.matvec(a), yt, U, b, tol)
            c1, w1 = time.process_time() - c0, time.perf_counter() - w0
            good1 = int((ok & (rel <= tol)).sum())
            c0, w0 = time.process_time(), time.perf_counter()
            ai, _, ni, _ = ipm_low_rank(W, yt, U, None, tol=scfg.ipm_tol)
            fin = torch.isfinite(U)
            r = ai / torch.where(fin & (U > 0), U, 1.0)
            s = max(1e-6, 1e3 * torch.finfo(ai.dtype).eps)
            Ai = torch.where(r < s, 0.0, torch.where(fin & (r > 1 - s), U, ai))
            a2, b2, it2, ok2 = active_set_low_rank(
                W, yt, U, project_face(Ai, yt, U), max_iter=100, tol=tol
            )
            p2, _, rel2, _ = _certify(a2, F.matvec(a2), yt, U, b2, tol)
            c2, w2 = time.process_time() - c0, time.perf_counter() - w0
            good2 = int((ok2 & (rel2 <= tol)).sum())
            print(
                f"  active set from the full-data partition: {c1:.3f} CPU s "
                f"({w1:.3f} wall), iterations mean {it.double().mean():.1f} max "
                f"{int(it.max())}, certified {good1}/{len(it)}"
            )
            print(
                f"  interior point + clean-up:               {c2:.3f} CPU s "
                f"({w2:.3f} wall), iterations {ni.double().mean():.1f} + "
                f"{it2.double().mean():.1f}, certified {good2}/{len(it2)}"
            )
            print(
                f"  max |a1 - a2| / C {float((a - a2).abs().max()) / C0:.1e}, max rel "
                f"primal difference {float(((p1 - p2).abs() / p2.abs()).max()):.1e}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
