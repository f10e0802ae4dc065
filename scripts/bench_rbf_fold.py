"""The bootstrap batch of one outer fold of a probabilities run, solved as the run does.

Builds the batch of ``BootstrapProbabilitySVC.fit`` for ``DATASET``'s fold ``FOLD`` of
``--config`` (default ``configs/probabilities-rbf.toml``): the fold's preprocessing
(``load_fold_data``), the estimator's replicate draws (``random_state = seed * 1000 +
fold``, as ``torchsvm.experiments.probabilities``), of which the first ``B`` are kept,
times the config's C grid; then solves it with ``BoxQpSolver(SolverConfig(tol,
max_iter))`` as ``solve_replicates`` does and prints one line: CPU and wall seconds of
the solve, certified problems, the largest relative duality gap and the load average.
Run it against another commit with ``PYTHONPATH`` pointing at that commit's tree.

``--libsvm K`` also fits ``K`` problems spread over the batch with libsvm
(``SVC(C, gamma).fit`` on the rows of positive weight, ``sample_weight`` = counts,
``tol`` 1e-6) and prints their CPU seconds, scaled to the whole batch, and the largest
relative difference between libsvm's dual value and the batch's.

Example (cervical's first fold, 20 replicates)::

    TORCHSVM_DATA=/work/shared/data OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE \\
        python scripts/bench_rbf_fold.py cervical 0 20 --libsvm 22
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Sequence

import numpy as np
import torch


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("fold", type=int)
    ap.add_argument("B", type=int, help="the first B bootstrap replicates")
    ap.add_argument("--config", default="configs/probabilities-rbf.toml")
    ap.add_argument("--libsvm", type=int, default=0, metavar="K")
    ap.add_argument(
        "--smo",
        choices=("auto", "on", "off"),
        default="auto",
        help="BoxQpSolver's SMO pre-pass: its rule (auto) or forced on / off",
    )
    ap.add_argument(
        "--smo-eps",
        type=float,
        default=None,
        help="the SMO pre-pass's maximal KKT violation (smo._EPS; default: as set)",
    )
    ap.add_argument("-v", action="store_true", help="the solver's INFO log")
    args = ap.parse_args(argv)
    if args.v:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    from torchsvm.config import SolverConfig, load_config
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
    from torchsvm.experiments.runner import load_fold_data
    from torchsvm.kernels import compute_kernel
    from torchsvm.problems.svm import BatchedSvmProblem
    from torchsvm.solvers.box_qp import BoxQpSolver

    if args.smo_eps is not None:
        import torchsvm.solvers.box_qp as box_qp_mod
        import torchsvm.solvers.smo as smo_mod

        smo_mod._EPS = args.smo_eps
        if hasattr(box_qp_mod, "_SMO_EPS"):
            box_qp_mod._SMO_EPS = args.smo_eps

    cfg = load_config(args.config)
    kernel = cfg.probabilities.kernels[0]
    d = load_fold_data(cfg, args.dataset, args.fold)
    boot = BootstrapProbabilitySVC(
        C_grid=np.asarray(cfg.bootstrap.C_grid),
        n_bootstrap=int(cfg.bootstrap.n_bootstrap),
        kernel=kernel,
        gamma=cfg.bootstrap.gamma_value,
        random_state=cfg.protocol.seed * 1000 + args.fold,
    )
    X, y_pm = boot._prepare(d["X_train"], np.asarray(d["y_train"]))
    counts = boot.counts_[: args.B]
    y = y_pm.astype(np.float64)
    C = np.asarray(cfg.bootstrap.C_grid, dtype=np.float64)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C, counts, kernel=kernel, gamma=cfg.bootstrap.gamma_value
    )
    solver = BoxQpSolver(
        SolverConfig(tol=float(cfg.solver.tol), max_iter=int(cfg.solver.max_iter)),
        smo={"auto": None, "on": True, "off": False}[args.smo],
    )
    c0, w0 = time.process_time(), time.perf_counter()
    sol = solver(prob)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(
        f"{args.dataset} fold {args.fold} n {X.shape[0]} d {X.shape[1]} "
        f"P {prob.n_problems}: solve {cpu:.1f} CPU s ({wall:.1f} wall), "
        f"{int(sol.converged.sum())}/{prob.n_problems} certified, max gap "
        f"{float(sol.duality_gap.max()):.1e}, load {os.getloadavg()[0]:.1f}"
    )
    if args.libsvm > 0:
        from sklearn.svm import SVC

        with torch.inference_mode():
            K = compute_kernel(prob.X, kernel=kernel, gamma=prob.gamma)
            Q = (K * prob.y[:, None] * prob.y[None, :]).numpy()
        alpha = sol.alpha.numpy()
        ids = np.unique(np.linspace(0, prob.n_problems - 1, args.libsvm).round())
        c_idx = prob.index["c_idx"].numpy()
        r_idx = prob.index["rep_idx"].numpy()
        t, worst = 0.0, 0.0
        for p in ids.astype(int):
            w = counts[r_idx[p]]
            keep = np.flatnonzero(w > 0)  # sklearn's support_ indexes the rows kept
            c0 = time.process_time()
            svc = SVC(C=C[c_idx[p]], gamma=prob.gamma, tol=1e-6, cache_size=500)
            svc.fit(X[keep], y[keep], sample_weight=w[keep])
            t += time.process_time() - c0
            a = np.zeros(len(y))
            a[keep[svc.support_]] = np.abs(svc.dual_coef_[0])
            ours = alpha[p].sum() - 0.5 * alpha[p] @ Q @ alpha[p]
            ref = a.sum() - 0.5 * a @ Q @ a
            worst = max(worst, abs(ours - ref) / max(1.0, abs(ours)))
        print(
            f"libsvm: {len(ids)} problems {t:.2f} CPU s, scaled to the batch "
            f"{t * prob.n_problems / len(ids):.1f} CPU s; largest relative dual "
            f"difference {worst:.1e}"
        )
    return 0 if bool(sol.converged.all()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
