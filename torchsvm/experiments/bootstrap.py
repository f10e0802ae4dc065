"""The main job: the SPEC S2 evaluation protocol of the bootstrap probabilistic SVM.

One unit per stratified outer fold of ``data.datasets[0]``: the preprocessor (median /
mode imputation, dummies, standardisation; SPEC S2) is fitted on the training rows only;
:class:`~torchsvm.estimators.bootstrap.BootstrapProbabilitySVC` fits its ``R * B`` SVMs
as one batch; the held-out rows get

- ``p_bootstrap``: the acc^2-weighted ensemble over ``J`` with its probability interval,
- ``p_best_c``: the "best C" variant, read from the same fits (votes at
  ``r* = argmax acc_r``, at the ensemble's Ctrl1 threshold when ``target_tpr`` is set),
- ``score``/``score_lower``/``score_upper``: the basic bootstrap score interval at ``r*``,
- ``p_platt``: a Platt-scaled SVM (SPEC S4; ``CalibratedSVC(WeightedSVC(C), "sigmoid")``).

The score of a method is the mean over folds of its held-out MSE (also log loss, AUC
and the S3 calibration score). The run folder gets ``predictions.csv`` (every held-out
row), ``summary.txt`` and the plots ``reliability.png``, ``score_intervals.png`` and
``roc.png``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import (
    METRICS,
    ProtocolReport,
    csv_text,
    write_plots,
)
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = ["METHODS", "assemble", "run_unit", "units"]

METHODS = ("bootstrap_ensemble", "bootstrap_best_c", "platt")
_PROB_KEY = {
    "bootstrap_ensemble": "p_bootstrap",
    "bootstrap_best_c": "p_best_c",
    "platt": "p_platt",
}
_LABELS = {
    "mse": "MSE (Brier)",
    "log_loss": "log loss",
    "auc": "AUC",
    "calibration": "calibration",
}
#: the local backend runs the folds in one worker process per core by default (each
#: fold is a few hundred MB at most; its batched solve gains little from a second
#: thread, two folds side by side gain ~2x)
PARALLEL_UNITS = True
#: unit-result keys that are timings (kept out of the compared figures)
_TIMING_KEYS = ("seconds_bootstrap", "seconds_platt")


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per outer fold."""
    name = cfg.data.datasets[0]
    return [
        Unit(f"{name}/fold_{k:02d}", {"dataset": name, "fold": k})
        for k in range(cfg.protocol.folds_run)
    ]


def _estimator(cfg: ExperimentConfig, seed: int) -> Any:
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC

    b = cfg.bootstrap
    return BootstrapProbabilitySVC(
        C_grid=np.asarray(b.C_grid),
        n_bootstrap=b.n_bootstrap,
        accuracy_eps=b.accuracy_eps,
        kernel=b.kernel,
        gamma=b.gamma_value,
        ensemble=True,
        target_tpr=b.target_tpr if b.target_tpr > 0 else None,
        tol=cfg.solver.tol,
        max_iter=cfg.solver.max_iter,
        random_state=seed,
        device=cfg.device,
        dtype=cfg.solver.dtype,
    )


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Fit every method on one training fold and predict its held-out rows."""
    from torchsvm.estimators.bootstrap import vote_fraction
    from torchsvm.estimators.calibration import CalibratedSVC
    from torchsvm.estimators.svc import WeightedSVC
    from torchsvm.metrics import summarize_probabilities

    k = int(unit.params["fold"])
    d = load_fold_data(cfg, unit.params["dataset"], k)
    A_tr, y_tr, A_te, y_te = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    t0 = time.perf_counter()
    m = _estimator(cfg, cfg.protocol.seed * 1000 + k).fit(A_tr, y_tr)
    t_boot = time.perf_counter() - t0
    p_ens = m.predict_proba(A_te)[:, 1]
    lo, hi = m.predict_proba_interval(A_te, level=cfg.bootstrap.level)
    f_best = m.bootstrap_decision_function(A_te)
    p_best = vote_fraction(f_best, m.threshold_, axis=0)
    s_lo, s_hi = m.score_interval(A_te, level=cfg.bootstrap.level)
    pred: dict[str, list[Any]] = {
        "index": d["test"].tolist(),
        "fold": [k] * len(y_te),
        "y": np.asarray(y_te).astype(int).tolist(),
        "p_bootstrap": p_ens.tolist(),
        "p_lower": lo.tolist(),
        "p_upper": hi.tolist(),
        "p_best_c": p_best.tolist(),
        "score": f_best.mean(0).tolist(),
        "score_lower": s_lo.tolist(),
        "score_upper": s_hi.tolist(),
    }
    t_platt = 0.0
    if cfg.baselines.platt:
        t1 = time.perf_counter()
        svc = WeightedSVC(
            C=cfg.baselines.C,
            kernel=cfg.bootstrap.kernel,
            gamma=cfg.bootstrap.gamma_value,
            tol=cfg.solver.tol,
            max_iter=cfg.solver.max_iter,
            device=cfg.device,
            dtype=cfg.solver.dtype,
        )
        platt = CalibratedSVC(svc, method="sigmoid", cv=cfg.baselines.cv).fit(
            A_tr, y_tr
        )
        pred["p_platt"] = platt.predict_proba(A_te)[:, 1].tolist()
        t_platt = time.perf_counter() - t1
    metrics = {
        meth: summarize_probabilities(y_te, np.asarray(pred[key]))
        for meth, key in _PROB_KEY.items()
        if key in pred
    }
    return {
        "metrics": metrics,
        "pred": pred,
        "accuracy": m.accuracy_.tolist(),
        "weights": m.weights_.tolist(),
        "support_set": m.support_set_.tolist(),
        "best_C": float(m.best_C_),
        "threshold": float(m.threshold_),
        "solver_max_gap": float(np.max(m.duality_gap_)),
        "solver_mean_iter": float(np.mean(m.n_iter_)),
        "seconds_bootstrap": t_boot,
        "seconds_platt": t_platt,
        "n_train": int(len(y_tr)),
        "n_test": int(len(y_te)),
    }


def _table(summary: dict[str, dict[str, dict[str, float]]]) -> str:
    head = f"{'method':<22}" + "".join(f"{_LABELS[m]:>20}" for m in METRICS)
    lines = [head, "-" * len(head)]
    for method, mets in summary.items():
        cells = "".join(
            f"{mets[m]['mean']:>12.4f} ± {mets[m]['std']:<5.3f}" for m in METRICS
        )
        lines.append(f"{method:<22}{cells}")
    return "\n".join(lines)


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Fold means of every metric, per-fold records, the predictions CSV and plots."""
    res = list(results.values())
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for meth in METHODS:
        if not res or meth not in res[0]["metrics"]:
            continue
        summary[meth] = {}
        for met in METRICS:
            vals = np.array(
                [
                    np.nan
                    if r["metrics"][meth][met] is None
                    else r["metrics"][meth][met]
                    for r in res
                ],
                dtype=float,
            )
            summary[meth][met] = {
                "mean": float(np.nanmean(vals)) if vals.size else float("nan"),
                "std": float(np.nanstd(vals)) if vals.size else float("nan"),
            }
    keys = list(res[0]["pred"]) if res else []
    pred = {k: [v for r in res for v in r["pred"][k]] for k in keys}
    folds = [
        {k: v for k, v in r.items() if k != "pred" and k not in _TIMING_KEYS}
        for r in res
    ]
    timings = {k: [r[k] for r in res] for k in _TIMING_KEYS}
    b = cfg.bootstrap
    table = _table(summary)
    text = (
        f"{cfg.data.datasets[0]}: {len(res)} of {cfg.protocol.folds_run} outer folds "
        f"(of {cfg.protocol.n_folds}), B = {b.n_bootstrap}, {len(b.C_grid)} C values, "
        f"kernel {b.kernel}; mean ± std over folds of the held-out metrics.\n\n"
        + "```\n"
        + table
        + "\n```"
    )

    def plot(out: Path) -> list[Path]:
        if not pred:
            return []
        return write_plots(out, pred, cfg.report.n_interval_samples)

    return ProtocolReport(
        title=f"Bootstrap probabilistic SVM (SPEC S2): {cfg.name}",
        figures={"summary": summary, "folds": folds},
        text=text,
        timings=timings,
        extra_files={
            "predictions.csv": csv_text(pred) if pred else "",
            "summary.txt": table + "\n",
        },
        plot=plot,
    )
