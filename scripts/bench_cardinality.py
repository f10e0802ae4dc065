"""The cardinality SVM comparator (SPEC S6) on outer folds of the feature_selection experiment.

Solves the linear cardinality MIQP that ``card_linear`` / ``card_rbf`` of
``torchsvm.experiments.feature_selection`` solve on a fold: the fold's rows
(``fold_rows``, as the experiment splits and preprocesses them), ``k`` (by default
the experiment's: the size ``fs_linear`` selects; pass ``--k`` to skip that fit), the
given ``C`` values (the experiment takes the linear and the RBF inner CV's C), big-M 100
and the config's time limit (gap 1e-4), warm-started from a linear SVM on all features as
``CardinalityConstrainedSVC`` does. Each ``--methods`` entry of
:func:`~torchsvm.mip.feature_selection.solve_cardinality_svm` runs on the same problem,
one after the other; one line each: status, objective, proven gap, subset QPs, seconds.

Usage::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data \\
        PYTHONPATH=. python scripts/bench_cardinality.py --dataset leukemia_golub \\
        --folds 0 --C 0.03125 2 --k 2 --methods auto miqp
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np


def main() -> None:
    from torchsvm import WeightedSVC
    from torchsvm.config import load_config
    from torchsvm.estimators.selection import CostSensitiveFeatureSelector
    from torchsvm.experiments import feature_selection as fsx
    from torchsvm.mip.feature_selection import solve_cardinality_svm
    from torchsvm.mip.model import MipConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/feature_selection.toml")
    ap.add_argument("--dataset", default="leukemia_golub")
    ap.add_argument("--folds", type=int, nargs="+", default=[0])
    ap.add_argument("--C", type=float, nargs="+", default=[2.0**-5, 2.0])
    ap.add_argument("--k", type=int, default=None, help="default: fs_linear's size")
    ap.add_argument(
        "--methods",
        nargs="+",
        default=["auto", "miqp"],
        choices=["auto", "screen", "enumerate", "miqp"],
    )
    ap.add_argument("--big-m", type=float, default=100.0)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--out", default=None, help="append one JSON line per solve")
    args = ap.parse_args()

    cfg = load_config(args.config)
    s = cfg.feature_selection
    limit = cfg.mip.time_limit if args.time_limit is None else args.time_limit
    print(f"load before: {os.getloadavg()}", flush=True)
    for fold in args.folds:
        d = fsx.fold_rows(cfg, args.dataset, fold)
        X, y = d["X_train"], d["y_train"]
        k = args.k
        if k is None:
            cv = fsx._inner_cv(X, y, "linear", cfg, cfg.protocol.seed + fold)
            tpr = min(1.0, max(0.0, cv["tpr"] - s.target_slack))
            tnr = min(1.0, max(0.0, cv["tnr"] - s.target_slack))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sel = CostSensitiveFeatureSelector(
                    min_tpr=tpr,
                    min_tnr=tnr,
                    C=cv["C"],
                    hoeffding_alpha=None,
                    time_limit=limit,
                ).fit(X, y)
            k = max(1, int(sel.support_.sum()))
        for C in args.C:
            warm = WeightedSVC(kernel="linear", C=C).fit(X, y)
            for method in args.methods:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = solve_cardinality_svm(
                        X,
                        y,
                        k,
                        C=C,
                        big_m=args.big_m,
                        config=MipConfig(
                            limit, 1e-4
                        ),  # CardinalityConstrainedSVC's gap
                        warm_start=(warm.coef_[0], float(warm.intercept_[0])),
                        method=method,
                    )
                sec = time.perf_counter() - t0
                r = res.result
                rec = {
                    "dataset": args.dataset,
                    "fold": fold,
                    "shape": list(X.shape),
                    "k": k,
                    "C": C,
                    "method": method,
                    "status": r.status.value,
                    "objective": r.objective,
                    "gap": r.mip_gap,
                    "n_iter": r.n_iter,
                    "support": np.flatnonzero(res.support).tolist(),
                    "seconds": sec,
                    "message": r.message,
                }
                print(
                    f"{args.dataset} fold {fold} {X.shape} k={k} C={C:g} {method}: "
                    f"{r.status.value}, objective {r.objective:.6g}, gap {r.mip_gap:.3g}, "
                    f"{sec:.1f} s ({r.message})",
                    flush=True,
                )
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(rec) + "\n")
    print(f"load after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
