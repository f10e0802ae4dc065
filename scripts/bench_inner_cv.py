"""Time the feature-selection experiment's inner-CV batch of SVMs on one outer fold.

SPEC S6 / issue 18: ``torchsvm.experiments.feature_selection._inner_cv`` fits every
(inner fold, C) problem of an outer fold's training part in one batch (held-out rows
weighted 0). This script builds the same batch (the config's data loading, inner folds
and C grid; linear kernel, float64, tol 1e-7 as ``BatchedSVC`` uses) and solves it with
:class:`~torchsvm.solvers.box_qp.BoxQpSolver`, timing the interior point, the start
purification and the active set separately (wrappers around the functions the solver
calls). ``--problems N`` keeps the first ``N`` problems (the first inner fold's C values
come first). ``--sklearn K`` checks ``K`` problems, spread over the batch, against
``sklearn.svm.SVC(kernel="linear", tol=1e-8)`` (libsvm): decision values and the dual
objective. ``--experiment`` times the experiment's own ``_inner_cv`` for the linear
kernel instead.

``--kernel rbf`` builds the RBF batch of the experiment instead (``gamma = "scale"``
resolved on the fold's rows, as ``BatchedSVC`` does) and times the dense route
(``pdas_dense``, its full face factorisations and the wide-face route separately);
``--sklearn K`` then fits ``SVC(kernel="rbf", gamma=<the same number>, tol=...)`` on
the rows of weight 1 of ``K`` problems (``--sklearn-tol``, default 1e-3 and 1e-8) and
compares decision values on every row and the dual objective; the libsvm CPU seconds
are printed next to ours, in the same run.

Example::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data \\
        PYTHONPATH=. python scripts/bench_inner_cv.py --dataset nursery --fold 0
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP

import numpy as np  # noqa: E402
import torch  # noqa: E402

import torchsvm.solvers.box_qp as box_qp  # noqa: E402
from torchsvm.config import SolverConfig, load_config  # noqa: E402
from torchsvm.data.resample import outer_folds  # noqa: E402
from torchsvm.experiments.feature_selection import _target  # noqa: E402
from torchsvm.experiments.runner import load_fold_data  # noqa: E402
from torchsvm.problems.svm import BatchedSvmProblem  # noqa: E402


def _timed(name: str, times: dict[str, list[float]]) -> Callable[..., Any]:
    f = getattr(box_qp, name)

    def g(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        out = f(*a, **k)
        times.setdefault(name, []).append(time.process_time() - t0)
        return out

    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/feature_selection.toml")
    ap.add_argument("--dataset", default="nursery")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--problems", type=int, default=0, help="first N problems (0: all)")
    ap.add_argument("--sklearn", type=int, default=0, help="problems checked by libsvm")
    ap.add_argument("--kernel", default="linear", choices=("linear", "rbf"))
    ap.add_argument(
        "--sklearn-tol",
        default="1e-3,1e-8",
        help="libsvm tolerances for --kernel rbf (comma separated)",
    )
    ap.add_argument(
        "--select",
        default="",
        help="--kernel rbf: comma-separated problem indices instead of --problems",
    )
    ap.add_argument(
        "--experiment",
        action="store_true",
        help="time the experiment's own _inner_cv(kernel='linear') instead (the "
        "BatchedSVC fit, its decision values and the choice of C)",
    )
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    cfg = load_config(args.config)
    s = cfg.feature_selection
    d = load_fold_data(
        cfg,
        args.dataset,
        args.fold,
        n_folds=cfg.protocol.n_folds,
        max_train_rows=s.max_train_rows,
        target=_target(cfg, args.dataset),
    )
    if args.experiment:
        from torchsvm.experiments.feature_selection import _inner_cv

        t0, c0 = time.perf_counter(), time.process_time()
        cv = _inner_cv(
            d["X_train"], d["y_train"], "linear", cfg, cfg.protocol.seed + args.fold
        )
        print(
            f"{args.dataset} fold {args.fold}: _inner_cv linear "
            f"{time.perf_counter() - t0:.2f} s wall, {time.process_time() - c0:.2f} "
            f"CPU s, load {os.getloadavg()}; max RSS "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB; {cv}"
        )
        return
    if args.kernel == "rbf":
        _rbf(args, cfg, d)
        return
    X, y = d["X_train"], np.where(d["y_train"] > 0, 1.0, -1.0)
    grid = np.asarray(s.C_grid, dtype=float)
    k = min(s.inner_folds, int(min((y > 0).sum(), (y < 0).sum())))
    folds = outer_folds(d["y_train"], k, random_state=cfg.protocol.seed + args.fold)
    Wt = np.ones((k * grid.size, y.size))
    for i, (_, te) in enumerate(folds):
        Wt[i * grid.size : (i + 1) * grid.size, te] = 0.0
    Cs = np.tile(grid, k)
    P = args.problems or Cs.size
    U = Cs[:P, None] * Wt[:P]
    prob = BatchedSvmProblem.from_bounds(X, y, U, kernel="linear", dtype=torch.float64)
    times: dict[str, list[float]] = {}
    for name in ("ipm_low_rank", "purify_start", "active_set_low_rank"):
        setattr(box_qp, name, _timed(name, times))
    print(
        f"{args.dataset} fold {args.fold}: {X.shape[0]} rows x {X.shape[1]} columns, "
        f"{int((y > 0).sum())} positive, {P} problems; load {os.getloadavg()}"
    )
    t0, c0 = time.perf_counter(), time.process_time()
    sol = box_qp.BoxQpSolver(SolverConfig(tol=1e-7, max_iter=20000))(prob)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"solve: {wall:.2f} s wall, {cpu:.2f} CPU s; load {os.getloadavg()}")
    for name, v in times.items():
        print(f"  {name}: {len(v)} calls, {sum(v):.2f} CPU s")
    print(
        f"certified {int(sol.converged.sum())} / {P}, max rel gap "
        f"{float(sol.duality_gap.max()):.2e}, mean iterations "
        f"{float(sol.n_iter.double().mean()):.1f}; max RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB"
    )
    if args.sklearn:
        from sklearn.svm import SVC

        A = sol.alpha.numpy()
        F = (A * y) @ X @ X.T + sol.b.numpy()[:, None]
        for p in np.linspace(0, P - 1, args.sklearn).round().astype(int):
            t1 = time.process_time()
            on = Wt[p] > 0  # (libsvm's support_ indexes the rows of weight > 0)
            ref = SVC(kernel="linear", C=Cs[p], tol=1e-8).fit(X[on], y[on])
            fr = ref.decision_function(X)
            a_ref = np.zeros(y.size)
            a_ref[np.flatnonzero(on)[ref.support_]] = np.abs(ref.dual_coef_[0])
            wr = (a_ref * y) @ X
            d_ref = a_ref.sum() - 0.5 * wr @ wr
            print(
                f"  problem {p} (C = {Cs[p]:g}): max |f - f_libsvm| "
                f"{np.abs(F[p] - fr).max():.2e}, dual ours {float(sol.dual[p]):.10f} "
                f"libsvm {d_ref:.10f} ({time.process_time() - t1:.1f} CPU s)"
            )


def _rbf(args: argparse.Namespace, cfg: Any, d: dict[str, Any]) -> None:
    """The RBF batch of the inner CV: ours against libsvm in the same run."""
    import torchsvm.solvers.pdas as pdas
    from torchsvm.kernels import compute_kernel, resolve_gamma

    s = cfg.feature_selection
    X, y = d["X_train"], np.where(d["y_train"] > 0, 1.0, -1.0)
    grid = np.asarray(s.C_grid, dtype=float)
    k = min(s.inner_folds, int(min((y > 0).sum(), (y < 0).sum())))
    folds = outer_folds(d["y_train"], k, random_state=cfg.protocol.seed + args.fold)
    Wt = np.ones((k * grid.size, y.size))
    for i, (_, te) in enumerate(folds):
        Wt[i * grid.size : (i + 1) * grid.size, te] = 0.0
    Cs = np.tile(grid, k)
    if args.select:
        sel = np.array([int(v) for v in args.select.split(",")])
    else:
        sel = np.arange(args.problems or Cs.size)
    gamma = resolve_gamma(s.gamma_value, X, None)  # BatchedSVC: weights not shared
    U = Cs[sel, None] * Wt[sel]
    prob = BatchedSvmProblem.from_bounds(
        X, y, U, kernel="rbf", gamma=gamma, dtype=torch.float64
    )
    times: dict[str, list[float]] = {}
    for mod, name in (
        (box_qp, "pdas_dense"),
        (pdas, "_full_solve"),
        (pdas, "_update_solve"),
        (pdas, "wide_face_solve"),
    ):
        if hasattr(mod, name):
            f = getattr(mod, name)
            setattr(mod, name, _timed_fn(f, name, times))
    print(
        f"{args.dataset} fold {args.fold}: {X.shape[0]} rows x {X.shape[1]} columns, "
        f"{int((y > 0).sum())} positive, gamma {gamma:.6g}, problems {sel.tolist()} "
        f"(C {Cs[sel].tolist()}); load {os.getloadavg()}",
        flush=True,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    sol = box_qp.BoxQpSolver(SolverConfig(tol=1e-7, max_iter=20000))(prob)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    A = sol.alpha.numpy()
    print(
        f"solve: {wall:.2f} s wall, {cpu:.2f} CPU s; load {os.getloadavg()}",
        flush=True,
    )
    for name, v in times.items():
        print(f"  {name}: {len(v)} calls, {sum(v):.2f} CPU s")
    print(
        f"certified {int(sol.converged.sum())} / {sel.size}, max rel gap "
        f"{float(sol.duality_gap.max()):.2e}, iterations {sol.n_iter.tolist()}, "
        f"free coordinates {((A > 0) & (A < U)).sum(1).tolist()}; max RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB",
        flush=True,
    )
    if not args.sklearn:
        return
    from sklearn.svm import SVC

    Xt = torch.as_tensor(X, dtype=torch.float64)
    K = compute_kernel(Xt, kernel="rbf", gamma=gamma).numpy()
    F = (A * y) @ K + sol.b.numpy()[:, None]
    tols = [float(t) for t in args.sklearn_tol.split(",")]
    for j in np.linspace(0, sel.size - 1, args.sklearn).round().astype(int):
        p = sel[j]
        on = Wt[p] > 0
        for tol in tols:
            t1 = time.process_time()
            ref = SVC(kernel="rbf", C=Cs[p], gamma=gamma, tol=tol, cache_size=2000).fit(
                X[on], y[on]
            )
            t_ref = time.process_time() - t1
            fr = ref.decision_function(X)
            a_ref = np.zeros(y.size)
            a_ref[np.flatnonzero(on)[ref.support_]] = np.abs(ref.dual_coef_[0])
            v = a_ref * y
            d_ref = a_ref.sum() - 0.5 * v @ K @ v
            print(
                f"  problem {p} (C = {Cs[p]:g}), libsvm tol {tol:g}: {t_ref:.1f} CPU s, "
                f"{ref.support_.size} SV; max |f - f_libsvm| "
                f"{np.abs(F[j] - fr).max():.2e}, dual ours {float(sol.dual[j]):.10f} "
                f"libsvm {d_ref:.10f}; load {os.getloadavg()}",
                flush=True,
            )


def _timed_fn(f: Callable[..., Any], name: str, times: dict[str, list[float]]):  # noqa: ANN202
    def g(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        out = f(*a, **k)
        times.setdefault(name, []).append(time.process_time() - t0)
        return out

    return g


if __name__ == "__main__":
    main()
