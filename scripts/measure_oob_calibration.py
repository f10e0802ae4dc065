"""Out-of-bag calibration of BootstrapProbabilitySVC vs Platt and the raw ensemble.

Issue 17's prototype measurement, through the library: for each dataset, stratified
outer folds; on each training part (subsampled to ``--max-rows``, preprocessing fitted on
it) fit ``BootstrapProbabilitySVC`` once per calibration setting (the raw votes and the
out-of-bag calibrations) and ``CalibratedSVC(WeightedSVC, method="sigmoid")`` (Platt on
5-fold out-of-fold scores, C = the ensemble's best C); held-out MSE (Brier score) per
method, averaged over folds. Prints a Markdown table and the counts "beats Platt on k of
N" / "improves or keeps the raw ensemble on k of N" per calibration.

    python scripts/measure_oob_calibration.py --datasets wisconsin german --folds 5
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import numpy as np
from sklearn.model_selection import StratifiedKFold

from torchsvm.data.datasets import load_dataset
from torchsvm.data.preprocess import make_preprocessor_for
from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
from torchsvm.estimators.calibration import CalibratedSVC
from torchsvm.estimators.svc import WeightedSVC

METHODS = (None, "isotonic", "sigmoid", "beta", "auto")


def _name(m: str | None) -> str:
    return "raw" if m is None else m


def run_dataset(name: str, args: argparse.Namespace) -> dict[str, float]:
    ds = load_dataset(name)
    X, y = ds.X, np.asarray(ds.y)
    rng = np.random.default_rng(args.seed)
    folds = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
    mse: dict[str, list[float]] = {}
    for train, test in folds.split(X, y):
        if train.size > args.max_rows:
            train = np.sort(rng.choice(train, args.max_rows, replace=False))
        pre = make_preprocessor_for(ds).fit(X.iloc[train])
        Xtr, Xte = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        ytr, yte = y[train], (y[test] > 0).astype(float)
        est = BootstrapProbabilitySVC(
            C_grid=2.0 ** np.arange(-5, 6, 2),
            n_bootstrap=args.n_bootstrap,
            kernel=args.kernel,
            random_state=args.seed,
        ).fit(Xtr, ytr)
        for m in METHODS:
            # the calibrations share the ensemble's fits (calibration needs none):
            # refit only the out-of-bag calibrator on the fitted ensemble
            est.set_params(calibration=m)._fit_calibration(np.where(ytr > 0, 1.0, -1.0))
            p = est.predict_proba(Xte)[:, list(est.classes_).index(1)]
            mse.setdefault(_name(m), []).append(float(np.mean((p - yte) ** 2)))
        C = est.best_C_
        platt = CalibratedSVC(
            WeightedSVC(C=C, kernel=args.kernel), method="sigmoid", cv=5
        )
        platt.fit(Xtr, ytr)
        p = platt.predict_proba(Xte)[:, list(platt.classes_).index(1)]
        mse.setdefault("platt", []).append(float(np.mean((p - yte) ** 2)))
    return {k: float(np.mean(v)) for k, v in mse.items()}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", required=True)
    ap.add_argument("--kernel", default="linear", choices=["linear", "rbf"])
    ap.add_argument("--n-bootstrap", type=int, default=100)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--max-rows", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    cols = [_name(m) for m in METHODS] + ["platt"]
    rows = {}
    print("| dataset | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name in args.datasets:
        rows[name] = r = run_dataset(name, args)
        print(
            f"| {name} | " + " | ".join(f"{r[c]:.4f}" for c in cols) + " |", flush=True
        )
    n = len(rows)
    for m in METHODS[1:]:
        beats = sum(r[m] < r["platt"] for r in rows.values())
        keeps = sum(r[m] <= r["raw"] for r in rows.values())
        print(
            f"{m}: beats Platt on {beats} of {n}; improves or keeps the raw ensemble on {keeps} of {n}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
