"""The SPEC S2 evaluation protocol: ``run_experiment(config) -> ExperimentReport``.

For each of ``protocol.n_folds`` stratified outer folds: the preprocessor (median /
mode imputation, dummies, standardisation; SPEC S2) is fitted on the training rows only;
:class:`~torchsvm.estimators.bootstrap.BootstrapProbabilitySVC` fits its ``R * B``
SVMs as one batch; the held-out rows get

- ``p_bootstrap``: the acc^2-weighted ensemble over ``J`` with its probability interval,
- ``p_best_c``: the "best C" variant, read from the same fits (votes at
  ``r* = argmax acc_r``, at the ensemble's Ctrl1 threshold when ``target_tpr`` is set),
- ``score``/``score_lower``/``score_upper``: the basic bootstrap score interval at ``r*``,
- ``p_platt``: a Platt-scaled SVM (SPEC S4; ``CalibratedSVC(WeightedSVC(C), "sigmoid")``).

Each finished fold is written atomically to ``<out>/folds/fold_XX.json`` together with
a fingerprint of the config; a re-run with the same ``out`` and config skips it.
The score of a method is the mean over folds of its held-out MSE (also log loss, AUC
and the S3 calibration score).
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchsvm.data.datasets import load_dataset
from torchsvm.data.preprocess import make_preprocessor_for
from torchsvm.data.resample import outer_folds
from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC, vote_fraction
from torchsvm.estimators.calibration import CalibratedSVC
from torchsvm.estimators.svc import WeightedSVC
from torchsvm.experiment_config import ExperimentConfig, to_toml
from torchsvm.metrics import summarize_probabilities
from torchsvm.report import (
    METRICS,
    ExperimentReport,
    atomic_write_json,
    atomic_write_text,
)

__all__ = ["METHODS", "config_fingerprint", "run_experiment", "run_fold"]

logger = logging.getLogger(__name__)

METHODS = ("bootstrap_ensemble", "bootstrap_best_c", "platt")
_PROB_KEY = {
    "bootstrap_ensemble": "p_bootstrap",
    "bootstrap_best_c": "p_best_c",
    "platt": "p_platt",
}


def config_fingerprint(cfg: ExperimentConfig) -> str:
    """sha256 of everything that changes fold results (the device does not)."""
    d = cfg.to_dict()
    d.pop("device", None)
    d.pop("report", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def _estimator(cfg: ExperimentConfig, seed: int) -> BootstrapProbabilitySVC:
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


def run_fold(
    cfg: ExperimentConfig,
    X_tr: Any,
    y_tr: np.ndarray,
    X_te: Any,
    y_te: np.ndarray,
    seed: int,
    dataset: Any,
) -> dict[str, Any]:
    """Fit every method on one training fold and predict the held-out rows.

    Returns
    -------
    dict
        ``metrics`` per method, the fitted C weights, timings and per-row ``pred`` lists.
    """
    pre = make_preprocessor_for(dataset).fit(X_tr)
    A_tr, A_te = pre.transform(X_tr), pre.transform(X_te)
    t0 = time.perf_counter()
    m = _estimator(cfg, seed).fit(A_tr, y_tr)
    t_boot = time.perf_counter() - t0
    p_ens = m.predict_proba(A_te)[:, 1]
    lo, hi = m.predict_proba_interval(A_te, level=cfg.bootstrap.level)
    f_best = m.bootstrap_decision_function(A_te)
    p_best = vote_fraction(f_best, m.threshold_, axis=0)
    s_lo, s_hi = m.score_interval(A_te, level=cfg.bootstrap.level)
    pred: dict[str, list[Any]] = {
        "y": y_te.astype(int).tolist(),
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
        "best_C": m.best_C_,
        "threshold": m.threshold_,
        "solver_max_gap": float(np.max(m.duality_gap_)),
        "solver_mean_iter": float(np.mean(m.n_iter_)),
        "seconds_bootstrap": t_boot,
        "seconds_platt": t_platt,
        "n_train": int(len(y_tr)),
        "n_test": int(len(y_te)),
    }


def run_experiment(
    cfg: ExperimentConfig,
    out_dir: str | Path | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> ExperimentReport:
    """Run the SPEC S2 protocol; resume finished folds found in ``out_dir/folds``.

    Parameters
    ----------
    cfg : ExperimentConfig
    out_dir : path, optional
        Run folder; when given, the resolved config and each fold are written there.
    progress : callable, optional
        ``progress(done, total, fold_result)`` after every fold (also skipped ones).
    """
    t_start = time.perf_counter()
    ds = load_dataset(
        cfg.data.name, cfg.data.data_dir or None, target=cfg.data.target or None
    )
    y = np.asarray(ds.y)
    folds = outer_folds(y, cfg.protocol.n_folds, random_state=cfg.protocol.seed)
    fp = config_fingerprint(cfg)
    fold_dir = None if out_dir is None else Path(out_dir) / "folds"
    if out_dir is not None:
        atomic_write_text(Path(out_dir) / "config.toml", to_toml(cfg))
    results: list[dict[str, Any]] = []
    n_resumed = 0
    for k, (tr, te) in enumerate(folds):
        path = None if fold_dir is None else fold_dir / f"fold_{k:02d}.json"
        res = _load_fold(path, fp)
        if res is None:
            res = run_fold(
                cfg,
                ds.X.iloc[tr],
                y[tr],
                ds.X.iloc[te],
                y[te],
                seed=cfg.protocol.seed * 1000 + k,
                dataset=ds,
            )
            res["pred"]["index"] = te.tolist()
            res["pred"]["fold"] = [k] * len(te)
            res["fingerprint"] = fp
            if path is not None:
                atomic_write_json(path, res)
        else:
            n_resumed += 1
        results.append(res)
        if progress is not None:
            progress(k + 1, len(folds), res)
    return _assemble(cfg, results, time.perf_counter() - t_start, n_resumed)


def _load_fold(path: Path | None, fingerprint: str) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        res = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        logger.warning("ignoring unreadable fold file %s", path)
        return None
    if res.get("fingerprint") != fingerprint:
        logger.info("fold file %s is from another config; recomputing", path)
        return None
    return res


def _assemble(
    cfg: ExperimentConfig, results: list[dict[str, Any]], seconds: float, n_resumed: int
) -> ExperimentReport:
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for meth in METHODS:
        if meth not in results[0]["metrics"]:
            continue
        summary[meth] = {}
        for met in METRICS:
            vals = np.array(
                [
                    np.nan
                    if r["metrics"][meth][met] is None
                    else r["metrics"][meth][met]
                    for r in results
                ],
                dtype=float,
            )
            summary[meth][met] = {
                "mean": float(np.nanmean(vals)),
                "std": float(np.nanstd(vals)),
            }
    keys = list(results[0]["pred"])
    order = ["index", "fold"] + [k for k in keys if k not in ("index", "fold")]
    pred = {k: [v for r in results for v in r["pred"][k]] for k in order}
    folds = [{k: v for k, v in r.items() if k != "pred"} for r in results]
    meta = {
        "seconds_total": seconds,
        "n_folds_resumed": n_resumed,
        "seconds_bootstrap_per_fold": float(
            np.mean([r["seconds_bootstrap"] for r in results])
        ),
        "device": cfg.device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "n_threads": torch.get_num_threads(),
        "fingerprint": config_fingerprint(cfg),
    }
    return ExperimentReport(
        config=cfg.to_dict(), summary=summary, folds=folds, predictions=pred, meta=meta
    )
