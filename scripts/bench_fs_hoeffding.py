"""(P1) with Hoeffding floors on outer folds of the feature_selection experiment.

Reproduces the ``fs_hoeffding_linear`` fit of ``torchsvm.experiments.feature_selection``
on the chosen folds: the fold's rows (``fold_rows``, as the experiment splits and
preprocesses them), the targets from the linear inner CV (``min{1, rate0 - slack}``),
and ``CostSensitiveFeatureSelector`` with Hoeffding alpha, big-M, C and time limit of
``configs/feature_selection.toml``. Prints one line per fold (size, status, proven
bound and gap, seconds of the (P1) stage and of the fit) and the load average.
With ``--triple-screen`` it runs only the exact triple screen on the fold's rows and
floors and prints its counts and seconds.

Usage::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data \\
        PYTHONPATH=. python scripts/bench_fs_hoeffding.py --dataset gastrointestinal \\
        --folds 0 1
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np


def main() -> None:
    from torchsvm.config import load_config
    from torchsvm.estimators.selection import CostSensitiveFeatureSelector
    from torchsvm.experiments import feature_selection as fsx

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/feature_selection.toml")
    ap.add_argument("--dataset", default="gastrointestinal")
    ap.add_argument("--folds", type=int, nargs="+", default=[0])
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument(
        "--triple-screen",
        action="store_true",
        help="only run the exact triple screen (screen_triples) on each fold's (P1) "
        "rows and floors and print its counts and seconds (no fit)",
    )
    args = ap.parse_args()

    cfg = load_config(args.config)
    s = cfg.feature_selection
    limit = cfg.mip.time_limit if args.time_limit is None else args.time_limit
    print(f"load before: {os.getloadavg()}", flush=True)
    for fold in args.folds:
        d = fsx.fold_rows(cfg, args.dataset, fold)
        X, y = d["X_train"], d["y_train"]
        cv = fsx._inner_cv(X, y, "linear", cfg, cfg.protocol.seed + fold)
        p_tpr = min(1.0, max(0.0, cv["tpr"] - s.target_slack))
        p_tnr = min(1.0, max(0.0, cv["tnr"] - s.target_slack))
        if args.triple_screen:
            _triple_screen(args.dataset, fold, X, y, p_tpr, p_tnr, s.hoeffding_alpha)
            continue
        est = CostSensitiveFeatureSelector(
            min_tpr=p_tpr,
            min_tnr=p_tnr,
            hoeffding_alpha=s.hoeffding_alpha,
            kernel="linear",
            C=cv["C"],
            big_m=fsx.BIG_M,
            time_limit=limit,
            mip_rel_gap=cfg.mip.mip_rel_gap,
            device=cfg.device,
        )
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        wall = time.perf_counter() - t0
        res = est.selection_.result
        rec = {
            "dataset": args.dataset,
            "fold": fold,
            "floors": [round(est.tpr_floor_, 4), round(est.tnr_floor_, 4)],
            "n_selected": int(est.get_support().sum()),
            "status": est.status_,
            "bound": float(res.bound),
            "gap": round(float(est.mip_gap_), 4),
            "p1_s": round(est.solve_time_["milp"], 1),
            "fit_s": round(wall, 1),
            "support": np.flatnonzero(est.get_support()).tolist(),
            "message": res.message,
        }
        print(json.dumps(rec), flush=True)
    print(f"load after: {os.getloadavg()}", flush=True)


def _triple_screen(dataset, fold, X, y, p_tpr, p_tnr, alpha) -> None:
    """Time :func:`screen_triples` alone on the fold (as the selector's floors)."""
    from torchsvm.estimators._base import encode_binary
    from torchsvm.experiments import feature_selection as fsx
    from torchsvm.mip.subset_search import screen_triples
    from torchsvm.problems.selection import SelectionProblem

    _, y_pm = encode_binary(y, "CostSensitiveFeatureSelector")  # as its fit does
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the capped floors' warning, as in the fit
        problem = SelectionProblem.from_data(X, y_pm, p_tpr, p_tnr, alpha)
    stats: dict[str, float] = {}
    t0 = time.perf_counter()
    got = screen_triples(problem, fsx.BIG_M, stats=stats)
    rec = {
        "dataset": dataset,
        "fold": fold,
        "floors": [round(problem.tpr_floor, 4), round(problem.tnr_floor, 4)],
        "features": int(X.shape[1]),
        "triples": None if got is None else int(got.shape[0]),
        "first": None if got is None or not got.size else got[0].tolist(),
        "screen_s": round(time.perf_counter() - t0, 1),
        **{k: round(v, 1) if isinstance(v, float) else v for k, v in stats.items()},
    }
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
