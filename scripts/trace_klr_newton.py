"""Trace the kernel-form Newton of ``KernelLogisticRegression`` as it was before the fix.

Replays the damped Newton of ``torchsvm/estimators/kernel_logistic.py`` at bc97510
(start ``a = 0, b = 0``, LU of the bordered K-free system, Armijo backtracking on ``J``)
on the linear Gram matrix of one outer fold of the probabilities experiment (built by
``compute_kernel_np`` as ``fit`` builds it: whether the last steps pass the Armijo test
depends on the rounding of ``J``, so ``X @ X.T`` can give another sequence), printing
per iteration ``J``, the stopping residuals ``max |r + a|`` and ``|sum r|`` against
``tol * max(1, C)``, the directional derivative ``slope`` of the step, ``J``'s rounding
``eps |J|`` and the accepted step size. ``--full-steps-after K`` takes full Newton steps
from iteration ``K`` on (what the residual test of the fix lets through).

Example::

    OMP_NUM_THREADS=1 TORCHSVM_DATA=/work/shared/data PYTHONPATH=. \\
        python scripts/trace_klr_newton.py --dataset churn --fold 3 --C 32 --max-iter 14
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import expit, log_expit

from torchsvm.config import load_config
from torchsvm.experiments.runner import load_fold_data
from torchsvm.kernels import compute_kernel_np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--dataset", default="churn")
    ap.add_argument("--fold", type=int, default=3)
    ap.add_argument("--C", type=float, default=32.0)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--full-steps-after", type=int, default=0)
    args = ap.parse_args()
    d = load_fold_data(load_config(args.config), args.dataset, args.fold)
    X = np.asarray(d["X_train"], dtype=np.float64)
    y = np.asarray(d["y_train"])
    ypm = np.where(y > 0, 1.0, -1.0)
    n = y.size
    K = compute_kernel_np(X, X, kernel="linear", gamma=0.0)  # as fit() built it
    cw = args.C * np.ones(n)
    stop = args.tol * max(1.0, args.C)
    print(f"n={n} d={X.shape[1]} C={args.C} stop={stop:.3g}")

    def objective(a_: np.ndarray, b_: float) -> float:
        f = K @ a_ + b_
        return float(np.sum(cw * -log_expit(ypm * f)) + 0.5 * a_ @ (K @ a_))

    a, b = np.zeros(n), 0.0
    fval = objective(a, b)
    lhs = np.empty((n + 1, n + 1))
    t0 = time.process_time()
    for it in range(1, args.max_iter + 1):
        f = K @ a + b
        r = -cw * ypm * expit(-ypm * f)
        res = r + a
        err_a, err_b = float(np.max(np.abs(res))), abs(float(np.sum(r)))
        head = f"{it:3d} J {fval:.12g} max|r+a| {err_a:.2e} |sum r| {err_b:.2e}"
        if max(err_a, err_b) < stop:
            print(head, "converged")
            return
        d_ = cw * expit(f) * expit(-f)
        lhs[:n, :n] = d_[:, None] * K
        lhs[:n, :n][np.diag_indices(n)] += 1.0
        lhs[:n, n] = d_
        lhs[n, :n] = 1.0
        lhs[n, n] = 0.0
        step = np.linalg.solve(lhs, np.concatenate([-res, [-np.sum(a)]]))
        da, db = step[:n], float(step[n])
        slope = float((K @ res) @ da + np.sum(r) * db)
        rounding = np.finfo(np.float64).eps * abs(fval)
        size = 1.0
        if args.full_steps_after and it >= args.full_steps_after:
            a, b, fval = a + da, b + db, objective(a + da, b + db)
        else:
            while size >= 1e-12:
                cand = objective(a + size * da, b + size * db)
                if cand <= fval + 1e-4 * size * min(slope, 0.0):
                    a, b, fval = a + size * da, b + size * db, cand
                    break
                size /= 2.0
            else:
                print(head, f"slope {slope:.2e} line search failed")
                return
        print(
            head,
            f"slope {slope:.2e} eps|J| {rounding:.1e} step {size:.3g}",
            f"cpu {time.process_time() - t0:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
