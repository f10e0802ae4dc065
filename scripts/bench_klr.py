"""Time the probabilities experiment's kernel logistic regression baselines, before/after.

SPEC S4 / issue 17: ``torchsvm.experiments.probabilities._fit_unit`` fits
``KernelLogisticRegression(C=C*, kernel, gamma)`` (``klr``) and
``KernelLogisticRegressionCV(kernel, cv=StratifiedKFold(...))`` (``klr_cv``) on the
preprocessed training rows of one outer fold. This script builds the same fold (the
config's data loading, ``seed = protocol.seed * 1000 + fold`` for the inner folds) and
fits both with the current estimators ("after") and with
``torchsvm/estimators/kernel_logistic.py`` as of ``--before`` ("before", loaded from git),
in the same run, and prints per part: wall and CPU seconds, Newton iterations, warnings,
the selected ``C`` (and ``gamma``) and the largest difference of the held-out
probabilities ``P(+|x)`` between the two.

Parts: ``klr`` and ``klr_cv`` with the linear kernel (``--config``), ``rbf_klr`` and
``rbf_klr_cv`` with the RBF kernel (``--config-rbf``; ``gamma = "scale"`` resolved on
the fold's training rows, as ``BootstrapProbabilitySVC`` does). ``--C`` is the ``C*``
of the single fits (the SVM's best C; 32 on churn's fold 3 of the linear run).
``--rbf-gammas scale`` restricts the RBF search to the scale gamma (1/3 of the grid).

``--probe-starts`` instead counts the current kernel-form Newton's iterations over the
search's C grid on the first inner fold of the RBF fit (``gamma`` = the scale gamma of
the fold's training rows times ``--probe-gamma-factor``) from four starts: ``a = 0, b = 0``;
``a = 0, b`` = log prior odds (the default); the previous C's solution (warm start); and
that solution with ``a`` scaled by the ratio of the C values. It prints the iterations,
CPU seconds and the largest decision-value difference from the default start.

Example::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data \\
        PYTHONPATH=. python scripts/bench_klr.py --dataset churn --fold 3 --C 32
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import warnings
from types import ModuleType
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from torchsvm.config import load_config
from torchsvm.estimators import kernel_logistic as after_module
from torchsvm.experiments.runner import load_fold_data
from torchsvm.kernels import compute_kernel_np, resolve_gamma


def _module_at(rev: str) -> ModuleType:
    src = subprocess.run(
        ["git", "show", f"{rev}:torchsvm/estimators/kernel_logistic.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = os.path.join(tempfile.mkdtemp(), "kernel_logistic_before.py")
    with open(path, "w") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location("kernel_logistic_before", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fold(config: str, dataset: str, fold: int) -> dict[str, Any]:
    cfg = load_config(config)
    d = load_fold_data(cfg, dataset, fold)
    y_tr = np.asarray(d["y_train"])
    n_inner = int(
        min(cfg.probabilities.inner_cv, np.bincount((y_tr > 0).astype(int)).min())
    )
    seed = cfg.protocol.seed * 1000 + fold
    return {
        "X": np.asarray(d["X_train"], dtype=np.float64),
        "y": y_tr,
        "X_te": np.asarray(d["X_test"], dtype=np.float64),
        "cv": StratifiedKFold(n_splits=n_inner, shuffle=True, random_state=seed),
    }


def _run(model: Any, data: dict[str, Any]) -> dict[str, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = model.fit(data["X"], data["y"])
        p = m.predict_proba(data["X_te"])[:, 1]
    return {
        "wall": time.perf_counter() - t0,
        "cpu": time.process_time() - c0,
        "model": m,
        "p": p,
        "warnings": sorted({str(w.message)[:90] for w in caught}),
    }


def _describe(r: dict[str, Any]) -> str:
    m = r["model"]
    inner = getattr(m, "best_estimator_", m)
    bits = [
        f"wall {r['wall']:9.3f} s",
        f"cpu {r['cpu']:9.3f} s",
        f"n_iter {inner.n_iter_}",
    ]
    if hasattr(m, "C_"):
        bits.append(f"C_ {m.C_:g}")
        if not np.isnan(m.gamma_):
            bits.append(f"gamma_ {m.gamma_:.4g}")
    if hasattr(inner, "solver_"):
        bits.append(f"solver {inner.solver_}")
    bits.append(f"warnings {r['warnings']}")
    return "  ".join(bits)


def _probe_starts(config: str, dataset: str, fold: int, factor: float) -> None:
    d = _fold(config, dataset, fold)
    tr, _ = next(d["cv"].split(d["X"], d["y"]))
    X, ypm = d["X"][tr], np.where(d["y"][tr] > 0, 1.0, -1.0)
    gamma = factor * resolve_gamma("scale", X, np.ones(tr.size))
    K = compute_kernel_np(X, X, kernel="rbf", gamma=gamma)
    grid = 2.0 ** np.arange(-5, 6, 2)  # KernelLogisticRegressionCV's default C grid
    print(f"probe: {dataset} fold {fold}, inner fold 0: n={tr.size}, gamma={gamma:.4g}")
    ref: dict[float, np.ndarray] = {}
    for start in ("prior", "zero", "warm", "warm_scaled"):
        prev: tuple[np.ndarray, float, float] | None = None
        its, cpu, dev = [], 0.0, 0.0
        for C in grid:
            est = after_module.KernelLogisticRegression(C=C, kernel="rbf", gamma=gamma)
            kw: dict[str, Any] = {}
            if start == "zero":
                kw = {"b0": 0.0}
            elif start != "prior" and prev is not None:
                scale = C / prev[2] if start == "warm_scaled" else 1.0
                kw = {"a0": prev[0] * scale, "b0": prev[1]}
            c0 = time.process_time()
            a, b, n_iter = est._newton(K, ypm, C * np.ones(tr.size), **kw)
            cpu += time.process_time() - c0
            its.append(n_iter)
            prev = (a, b, C)
            f = K @ a + b
            if start == "prior":
                ref[C] = f
            elif C in ref:
                dev = max(dev, float(np.max(np.abs(f - ref[C]))))
        print(
            f"  start {start:11s} iterations {its} total {sum(its)}  cpu {cpu:.1f} s"
            f"  max |f - f_prior| {dev:.1e}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/probabilities.toml")
    ap.add_argument("--config-rbf", default="configs/probabilities-rbf.toml")
    ap.add_argument("--dataset", default="churn")
    ap.add_argument("--fold", type=int, default=3)
    ap.add_argument("--C", type=float, default=32.0, help="C* of the single fits")
    ap.add_argument("--before", default="bc97510", help="git revision of 'before'")
    ap.add_argument("--parts", default="klr,klr_cv,rbf_klr,rbf_klr_cv")
    ap.add_argument("--rbf-gammas", default="grid", choices=("grid", "scale"))
    ap.add_argument("--probe-starts", action="store_true")
    ap.add_argument("--probe-gamma-factor", type=float, default=1.0)
    args = ap.parse_args()
    if args.probe_starts:
        print(f"load {os.getloadavg()}")
        _probe_starts(args.config_rbf, args.dataset, args.fold, args.probe_gamma_factor)
        return
    before_module = _module_at(args.before)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"commit {head}  before {args.before}  python {sys.version.split()[0]}")
    print(
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}  load {os.getloadavg()}"
    )
    parts = args.parts.split(",")
    data = {}
    if {"klr", "klr_cv"} & set(parts):
        data["linear"] = _fold(args.config, args.dataset, args.fold)
    if {"rbf_klr", "rbf_klr_cv"} & set(parts):
        data["rbf"] = _fold(args.config_rbf, args.dataset, args.fold)
    for part in parts:
        kernel = "rbf" if part.startswith("rbf_") else "linear"
        d = data[kernel]
        n, dim = d["X"].shape
        gamma: Any = "scale"
        if kernel == "rbf":
            gamma = resolve_gamma("scale", d["X"], np.ones(n))
        print(
            f"\n{part}: {args.dataset} fold {args.fold}, n={n}, d={dim}, kernel={kernel}"
        )
        rows = {}
        for label, mod in (("after", after_module), ("before", before_module)):
            if part.endswith("klr_cv"):
                extra = {}
                if kernel == "rbf" and args.rbf_gammas == "scale":
                    extra["gamma_grid"] = [gamma]
                model = mod.KernelLogisticRegressionCV(
                    kernel=kernel, cv=d["cv"], **extra
                )
            else:
                model = mod.KernelLogisticRegression(
                    C=args.C, kernel=kernel, gamma=gamma
                )
            rows[label] = _run(model, d)
            print(f"  {label:6s} {_describe(rows[label])}", flush=True)
        dp = float(np.max(np.abs(rows["after"]["p"] - rows["before"]["p"])))
        ratio = rows["before"]["wall"] / rows["after"]["wall"]
        print(
            f"  held-out max |p_after - p_before| = {dp:.2e}; before/after wall {ratio:.1f}x"
        )
    print(f"\nload at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
