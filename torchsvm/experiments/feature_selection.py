"""Cost-sensitive feature selection vs SVM baselines (SPEC S6, thesis ch. 4).

One unit per dataset and outer fold (features preprocessed on the training rows only):

- ``svm``: standard SVM on all features (linear and RBF); its training TPR0 / TNR0 set
  the targets ``TPR >= TPR0 - 0.025`` and ``TNR >= TNR0 - 0.025`` (SPEC S6);
- ``fs``: :class:`CostSensitiveFeatureSelector` with ``p* = p0`` and ``fs_hoeffding``
  with the Hoeffding margin at ``alpha = 0.05``, each with the linear (P2) and the RBF
  (P3) classifier;
- ``card``: :class:`CardinalityConstrainedSVC` with ``k`` = the number of features
  ``fs`` selected in that fold (linear and RBF).

Test accuracy, TPR and TNR are averaged over the folds (mean, std), with the number of
features before -> after and the solve times. Training folds above
``feature_selection.max_rows_per_class`` rows per class are compressed per class by
k-means (cluster sizes as weights, SPEC S5) before the MILP / MIQP; the baselines use
all rows. ``feature_selection.max_train_rows`` > 0 subsamples large training folds
(stratified, every method). The positive class of each dataset is the chapter's
majority class (``POSITIVE``) unless ``data.target`` names one.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.data.resample import kmeans_compress
from torchsvm.estimators.selection import (
    CardinalityConstrainedSVC,
    CostSensitiveFeatureSelector,
)
from torchsvm.estimators.svc import WeightedSVC
from torchsvm.exceptions import (
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
)
from torchsvm.experiments.report import ProtocolReport
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = ["METHODS", "POSITIVE", "assemble", "run_unit", "units"]

#: dataset -> positive class (ch. 4: the majority class is positive)
POSITIVE = {
    "wisconsin": "benign",
    "votes": "democrat",
    "nursery": "not_recom",
    "australian": "class_0",
    "careval": "unacc",
    "leukemia_golub": "all",
    "gastrointestinal": "not_hyperplasic",
}
METHODS = [
    "svm_linear",
    "svm_rbf",
    "fs_linear",
    "fs_rbf",
    "fs_hoeffding_linear",
    "fs_hoeffding_rbf",
    "card_linear",
    "card_rbf",
]


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, outer fold)."""
    return [
        Unit(f"{name}/fold_{k:02d}", {"dataset": name, "fold": k})
        for name in cfg.data.datasets
        for k in range(cfg.protocol.folds_run)
    ]


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Every method on one outer fold."""
    name = unit.params["dataset"]
    target = cfg.data.target or POSITIVE.get(name, "")
    d = load_fold_data(
        cfg,
        name,
        unit.params["fold"],
        max_train_rows=cfg.feature_selection.max_train_rows,
        target=target,
    )
    y_tr = np.asarray(d["y_train"], dtype=float)
    y_te = np.asarray(d["y_test"], dtype=float)
    rec = _fold(d["X_train"], y_tr, d["X_test"], y_te, cfg)
    rec["train_rows"] = int(y_tr.size)
    rec["positive"] = str(d["dataset"].positive_label)
    return rec


def _timings(rec: Any) -> Any:
    if isinstance(rec, dict):
        return {
            k: _timings(v) for k, v in rec.items() if k not in ("time", "milp_time")
        }
    return rec


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Per dataset and method: mean ± std over folds, features kept, infeasible folds."""
    res: dict[str, Any] = {}
    for key, rec in results.items():
        name, fold = key.split("/")
        entry = res.setdefault(name, {"folds": {}, "positive": rec.get("positive")})
        entry["folds"][str(int(fold[5:]))] = rec
    figures = {
        name: {
            "positive": e["positive"],
            "folds": {f: _timings(r) for f, r in e["folds"].items()},
        }
        for name, e in res.items()
    }
    timings = {
        name: {
            f: {m: r[m].get("time") for m in METHODS if isinstance(r.get(m), dict)}
            for f, r in e["folds"].items()
        }
        for name, e in res.items()
    }
    return ProtocolReport(
        title="Cost-sensitive feature selection (SPEC S6, thesis ch. 4)",
        figures=figures,
        text=_markdown(res, cfg),
        timings=timings,
    )


def _rates(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    pos = y > 0
    return {
        "accuracy": float(np.mean(pred == y)),
        "tpr": float(np.mean(pred[pos] > 0)) if pos.any() else float("nan"),
        "tnr": float(np.mean(pred[~pos] < 0)) if (~pos).any() else float("nan"),
    }


def _record(est: Any, X_te: np.ndarray, y_te: np.ndarray, **extra: Any) -> dict:
    pred = np.where(est.decision_function(X_te) > 0, 1, -1)
    return {**_rates(y_te, pred), **extra}


def _fold(
    X_tr: np.ndarray,
    y_tr: np.ndarray,
    X_te: np.ndarray,
    y_te: np.ndarray,
    cfg: ExperimentConfig,
) -> dict[str, Any]:
    d = X_tr.shape[1]
    out: dict[str, Any] = {"n_features": d}
    fs_cfg = cfg.feature_selection
    gamma = fs_cfg.gamma_value
    kw = {"C": fs_cfg.C, "device": cfg.device}
    t0 = time.perf_counter()
    lin = WeightedSVC(kernel="linear", **kw).fit(X_tr, y_tr)
    out["svm_linear"] = _record(
        lin, X_te, y_te, n_selected=d, time=time.perf_counter() - t0
    )
    t0 = time.perf_counter()
    rbf = WeightedSVC(kernel="rbf", gamma=gamma, **kw).fit(X_tr, y_tr)
    out["svm_rbf"] = _record(
        rbf, X_te, y_te, n_selected=d, time=time.perf_counter() - t0
    )
    train = _rates(y_tr, np.where(lin.decision_function(X_tr) > 0, 1, -1))
    p_tpr = max(0.0, train["tpr"] - 0.025)
    p_tnr = max(0.0, train["tnr"] - 0.025)
    out["targets"] = {"tpr": p_tpr, "tnr": p_tnr}
    Xc, yc, wc = X_tr, y_tr, None
    k = fs_cfg.max_rows_per_class
    if min((y_tr > 0).sum(), (y_tr < 0).sum()) > k or len(y_tr) > 2 * k:
        Xc, yc, wc = kmeans_compress(X_tr, y_tr, k, random_state=cfg.protocol.seed)
    out["milp_rows"] = int(len(yc))
    k_sel: int | None = None
    for name, alpha in (("fs", None), ("fs_hoeffding", 0.05)):
        for kernel in ("linear", "rbf"):
            fs = CostSensitiveFeatureSelector(
                min_tpr=p_tpr,
                min_tnr=p_tnr,
                hoeffding_alpha=alpha,
                kernel=kernel,
                gamma=gamma,
                time_limit=cfg.mip.time_limit,
                **kw,
            )
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", SolverTimeLimitWarning)
                    fs.fit(Xc, yc, sample_weight=wc)
            except InfeasibleProblemError as exc:
                out[f"{name}_{kernel}"] = {"infeasible": str(exc)}
                continue
            except SolverError as exc:
                # time limit without any feasible selection: reported, not hidden
                out[f"{name}_{kernel}"] = {"no_incumbent": str(exc)}
                continue
            rec = _record(
                fs,
                X_te,
                y_te,
                n_selected=int(fs.get_support().sum()),
                time=time.perf_counter() - t0,
                milp_time=fs.solve_time_["milp"],
                status=fs.status_,
                mip_gap=fs.mip_gap_,
                start_feasible=fs.start_feasible_,
                time_limit_hit=any(
                    issubclass(w.category, SolverTimeLimitWarning) for w in caught
                ),
            )
            out[f"{name}_{kernel}"] = rec
            if name == "fs" and kernel == "linear":
                k_sel = rec["n_selected"]
    for kernel in ("linear", "rbf"):
        if k_sel is None:
            out[f"card_{kernel}"] = {"infeasible": "no fs selection to copy k from"}
            continue
        card = CardinalityConstrainedSVC(
            k_max=max(1, k_sel),
            kernel=kernel,
            gamma=gamma,
            time_limit=cfg.mip.time_limit,
            **kw,
        )
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolverTimeLimitWarning)
            card.fit(Xc, yc, sample_weight=wc)
        out[f"card_{kernel}"] = _record(
            card,
            X_te,
            y_te,
            n_selected=int(card.support_.sum()),
            time=time.perf_counter() - t0,
            status=card.status_,
            mip_gap=card.mip_gap_,
        )
    return out


def _skipped(rec: dict[str, Any]) -> bool:
    """The cardinality comparator could not run: ``fs_linear`` gave it no ``k``."""
    return str(rec.get("infeasible", "")).startswith("no fs selection")


def _fmt(vals: list[float]) -> str:
    if not vals:
        return "n/a"
    return f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"


def _markdown(res: dict[str, Any], cfg: ExperimentConfig) -> str:
    fs_cfg = cfg.feature_selection
    time_limit = cfg.mip.time_limit
    max_train_rows = fs_cfg.max_train_rows
    lines = [
        f"Settings: {cfg.protocol.n_folds}-fold outer CV (first "
        f"{cfg.protocol.folds_run} folds run), "
        f"C = {fs_cfg.C}, gamma = {fs_cfg.gamma} (no inner CV), big-M = 100, MILP / MIQP "
        f"time limit {time_limit} s, training folds compressed by per-class k-means "
        f"to at most {fs_cfg.max_rows_per_class} rows per class before the MILP / MIQP"
        + (
            f"; training folds above {max_train_rows} rows are first subsampled "
            f"(stratified) to {max_train_rows} rows for every method, baselines "
            "included, the test folds stay whole (rows used: the `train rows` column). "
            if max_train_rows
            else ". "
        )
        + "Targets per fold: TPR >= TPR0 - 0.025 and TNR >= TNR0 - 0.025 with TPR0 / "
        "TNR0 the training rates of the standard linear SVM. Positive class = the "
        "chapter's majority class. Test-fold accuracy / TPR / TNR: mean ± std over "
        "folds; `feat` = features before -> mean after; `infeas` = folds where the "
        "floors could not be met (excluded from the means); `time-limit hit` = folds "
        "where the MILP / MIQP stopped at the limit (with an incumbent, counted in the "
        "means, or without one, excluded); times are per fit (s).",
        "",
        "Datasets requested: "
        + ", ".join(
            f"{d} ({len(res[d]['folds'])} folds finished)"
            if d in res
            else f"{d} (not run yet)"
            for d in cfg.data.datasets
        )
        + ". A re-run of the same command resumes the unfinished ones.",
        "",
        "| dataset | method | accuracy | TPR | TNR | feat | time (s) | infeas |"
        " time-limit hit | train rows |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in res.items():
        folds = list(entry["folds"].values())
        if not folds:
            continue
        d = folds[0]["n_features"]
        n_rows = sorted({f.get("train_rows") for f in folds if f.get("train_rows")})
        rows = ", ".join(str(r) for r in n_rows) if n_rows else "all"
        for m in METHODS:
            recs = [f[m] for f in folds if m in f and "accuracy" in f[m]]
            infeas = sum(
                1
                for f in folds
                if m in f and "infeasible" in f[m] and not _skipped(f[m])
            )
            skipped = sum(1 for f in folds if m in f and _skipped(f[m]))
            infeas_cell = (
                f"{infeas} (+{skipped} not run: fs_linear gave no k)"
                if skipped
                else str(infeas)
            )
            no_inc = sum(1 for f in folds if m in f and "no_incumbent" in f[m])
            hit = sum(
                1
                for r in recs
                if r.get("time_limit_hit") or r.get("status") == "time_limit"
            )
            sel = np.mean([r["n_selected"] for r in recs]) if recs else float("nan")
            lines.append(
                f"| {name} | {m} | {_fmt([r['accuracy'] for r in recs])} | "
                f"{_fmt([r['tpr'] for r in recs])} | {_fmt([r['tnr'] for r in recs])} | "
                f"{d} -> {sel:.1f} | {_fmt([r['time'] for r in recs])} | {infeas_cell} | "
                f"{hit + no_inc} | {rows} |"
            )
    over = []
    for name, entry in res.items():
        for m in METHODS:
            ts = [
                f[m]["time"]
                for f in entry["folds"].values()
                if m in f and "time" in f[m]
            ]
            if ts and max(ts) > 2 * time_limit and not m.startswith("svm"):
                over.append(f"{name} {m} (max {max(ts):.0f} s)")
    if over:
        lines += [
            "",
            f"Fits that overran the {time_limit:g} s limit by more than 2x: "
            + ", ".join(over)
            + ". The MIQPs go through the outer approximation, whose QP steps use a "
            "dense interior point; with thousands of features one iteration can outlast "
            "the whole limit, and the limit is checked between iterations.",
        ]
    return "\n".join(lines) + "\n"
