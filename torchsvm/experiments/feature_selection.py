"""Cost-sensitive feature selection vs SVM baselines (SPEC S6, thesis ch. 4, issue 18).

One unit per (dataset, outer fold): ``protocol.n_folds``-fold stratified CV, or
leave-one-out below ``feature_selection.loo_below_rows`` rows; preprocessing fitted on
the training part. On the training part:

- inner ``feature_selection.inner_folds``-fold CV over ``C`` in
  ``feature_selection.C_grid`` of the linear and of the RBF SVM (``gamma`` fixed), one
  batch of (fold x C) problems per kernel
  (:class:`~torchsvm.estimators.svc.BatchedSVC`, held-out rows weighted 0), selecting
  accuracy, or the G-mean when the minority class is below 30 %;
- the targets come from the selected linear SVM's inner-CV *validation* rates (thesis
  ch. 4): ``p0(+) = min{1, max{0, TPR0 - slack}}`` and the same for the TNR;
- methods, each scored on the held-out fold: ``svm_linear`` / ``svm_rbf`` (standard SVM
  on all features at the selected ``C``), ``fs_*``
  (:class:`~torchsvm.estimators.selection.CostSensitiveFeatureSelector` with floors
  ``p0``) and ``fs_hoeffding_*`` (floors ``p0`` plus the Hoeffding margin at
  ``feature_selection.hoeffding_alpha``), each with the linear (P2) and RBF (P3)
  classifier, and ``card_*`` (:class:`~torchsvm.estimators.selection.CardinalityConstrainedSVC`
  with ``k`` = the features ``fs_linear`` kept in that fold). (P1) does not depend on
  the kernel or on ``C`` (``C`` only steers its warm start), so it is solved once per
  floor pair, by ``fs_linear`` / ``fs_hoeffding_linear``, and the RBF method fits (P3)
  on that selection (``fit(..., selection=...)``; thesis ch. 4 also solves (P1) once);
  its record says ``selection_from``. Earlier versions had each kernel solve (P1) on its
  own, from its own C's warm start: the same MILP, so the same selection whenever
  (P1) was proven optimal with a unique optimum.

Training parts above ``feature_selection.max_rows_per_class`` rows in a class are
compressed per class by k-means (cluster sizes as weights) before the MILP / MIQP;
``max_train_rows`` > 0 subsamples large training parts (every method). The positive
class of each dataset is the chapter's majority class (``POSITIVE``) unless
``data.target`` names one.

Whether the floors held on held-out rows is judged on the held-out predictions pooled
over the folds (with leave-one-out a fold has one row): pooled TPR >= mean ``p0(+)``
and pooled TNR >= mean ``p0(-)``.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.csvm import settings_table
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit, load_fold_data, subsample_rows

__all__ = [
    "METHODS",
    "POSITIVE",
    "THESIS",
    "assemble",
    "fold_rows",
    "run_unit",
    "units",
]

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
METHODS = (
    "svm_linear",
    "svm_rbf",
    "fs_linear",
    "fs_rbf",
    "fs_hoeffding_linear",
    "fs_hoeffding_rbf",
    "card_linear",
    "card_rbf",
)
#: the thesis' protocol (SPEC S6, issue 18), shown next to the settings used
THESIS = {
    "datasets": ", ".join(POSITIVE),
    "outer CV": "10-fold, leave-one-out below 100 rows, all folds",
    "inner CV": "10-fold over C in 2^-5..2^5",
    "gamma": "2^-5..2^5 (inner CV)",
    "targets": "min{1, rate0 - 0.025}, rate0 = validation TPR / TNR of the linear SVM",
    "Hoeffding variant": "alpha = 0.05",
    "training rows": "all",
    "k-means compression": "none",
    "MILP / MIQP time limit": "300 s",
    "M1 = M2 = M3": "100",
}
BIG_M = 100.0


def _n_rows(cfg: ExperimentConfig, name: str) -> int:
    from torchsvm.data.datasets import load_dataset

    ds = load_dataset(
        name, cfg.data.data_dir or None, target=_target(cfg, name) or None
    )
    y = np.asarray(ds.y)
    return int(subsample_rows(y, cfg.data.max_rows, cfg.protocol.seed).size)


def _target(cfg: ExperimentConfig, name: str) -> str:
    return cfg.data.target or POSITIVE.get(name, "")


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, outer fold); leave-one-out below ``loo_below_rows`` rows."""
    out = []
    for name in cfg.data.datasets:
        k = _n_folds(cfg, name)
        n_run = k if cfg.protocol.max_folds == 0 else min(cfg.protocol.max_folds, k)
        width = max(2, len(str(k - 1)))
        out += [
            Unit(
                f"{name}/fold_{f:0{width}d}", {"dataset": name, "fold": f, "n_folds": k}
            )
            for f in range(n_run)
        ]
    return out


def _n_folds(cfg: ExperimentConfig, name: str) -> int:
    """Outer folds of ``name``: leave-one-out below ``loo_below_rows`` rows."""
    n = _n_rows(cfg, name)
    return n if n < cfg.feature_selection.loo_below_rows else cfg.protocol.n_folds


def fold_rows(
    cfg: ExperimentConfig, name: str, fold: int, n_folds: int | None = None
) -> dict[str, Any]:
    """Outer fold ``fold`` of ``name`` as a unit gets it (:func:`load_fold_data`).

    ``n_folds`` defaults to the protocol's (:func:`units`); benchmark scripts use this
    to reproduce one fold's fits.
    """
    return load_fold_data(
        cfg,
        name,
        fold,
        n_folds=_n_folds(cfg, name) if n_folds is None else n_folds,
        max_train_rows=cfg.feature_selection.max_train_rows,
        target=_target(cfg, name),
    )


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Inner CV, targets and every method on one outer fold."""
    p = unit.params
    d = fold_rows(cfg, p["dataset"], p["fold"], p["n_folds"])
    rec = _fold(d["X_train"], d["y_train"], d["X_test"], d["y_test"], cfg, p["fold"])
    rec["positive"] = str(d["dataset"].positive_label)
    return rec


# ---------------------------------------------------------------------------- fold
def _counts(y: np.ndarray, f: np.ndarray) -> dict[str, int]:
    """Held-out confusion counts (pooled over folds later)."""
    pos, hit = y > 0, f > 0
    return {
        "tp": int(np.sum(pos & hit)),
        "n_pos": int(pos.sum()),
        "tn": int(np.sum(~pos & ~hit)),
        "n_neg": int((~pos).sum()),
    }


def _inner_cv(
    X: np.ndarray, y: np.ndarray, kernel: str, cfg: ExperimentConfig, seed: int
) -> dict[str, Any]:
    """C of ``kernel`` by inner CV: every (fold, C) problem in one batch."""
    from torchsvm.data.resample import outer_folds
    from torchsvm.estimators.svc import BatchedSVC

    s = cfg.feature_selection
    grid = np.asarray(s.C_grid, dtype=float)
    n_min = int(min((y > 0).sum(), (y < 0).sum()))
    k = min(s.inner_folds, n_min)
    folds = outer_folds(y, k, random_state=seed)
    W = np.ones((k * grid.size, y.size))
    for i, (_, te) in enumerate(folds):
        W[i * grid.size : (i + 1) * grid.size, te] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bat = BatchedSVC(kernel=kernel, gamma=s.gamma_value, device=cfg.device).fit(
            X, y, C=np.tile(grid, k), sample_weight=W
        )
    F = bat.decision_function(X)
    f = np.empty((grid.size, y.size))
    for i, (_, te) in enumerate(folds):
        f[:, te] = F[i * grid.size : (i + 1) * grid.size][:, te]
    pos = y > 0
    tpr = np.mean(f[:, pos] > 0, axis=1)
    tnr = np.mean(f[:, ~pos] <= 0, axis=1)
    gmean = min(pos.mean(), 1 - pos.mean()) < 0.3
    score = np.sqrt(tpr * tnr) if gmean else np.mean((f > 0) == pos, axis=1)
    j = int(np.argmax(score))  # ties: the smallest C
    return {
        "C": float(grid[j]),
        "tpr": float(tpr[j]),
        "tnr": float(tnr[j]),
        "score": float(score[j]),
        "criterion": "gmean" if gmean else "accuracy",
        "folds": k,
    }


def _fold(
    X_tr: np.ndarray,
    y_tr: np.ndarray,
    X_te: np.ndarray,
    y_te: np.ndarray,
    cfg: ExperimentConfig,
    fold: int,
) -> dict[str, Any]:
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

    s = cfg.feature_selection
    seed = cfg.protocol.seed + fold
    gamma = s.gamma_value
    d = X_tr.shape[1]
    out: dict[str, Any] = {"n_features": d, "train_rows": int(y_tr.size), "methods": {}}
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    cv = {kern: _inner_cv(X_tr, y_tr, kern, cfg, seed) for kern in ("linear", "rbf")}
    timing["inner_cv"] = time.perf_counter() - t0
    out["inner_cv"] = cv
    slack = s.target_slack
    p_tpr = min(1.0, max(0.0, cv["linear"]["tpr"] - slack))
    p_tnr = min(1.0, max(0.0, cv["linear"]["tnr"] - slack))
    out["targets"] = {"tpr": p_tpr, "tnr": p_tnr}
    for kern in ("linear", "rbf"):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svm = WeightedSVC(
                kernel=kern, C=cv[kern]["C"], gamma=gamma, device=cfg.device
            ).fit(X_tr, y_tr)
        timing[f"svm_{kern}"] = time.perf_counter() - t0
        out["methods"][f"svm_{kern}"] = {
            **_counts(y_te, svm.decision_function(X_te)),
            "n_selected": d,
        }
    Xc, yc, wc = X_tr, y_tr, None
    k = s.max_rows_per_class
    if 0 < k < max((y_tr > 0).sum(), (y_tr < 0).sum()):
        Xc, yc, wc = kmeans_compress(X_tr, y_tr, k, random_state=seed)
    out["milp_rows"] = int(yc.size)
    k_sel: int | None = None
    for name, alpha in (("fs", None), ("fs_hoeffding", s.hoeffding_alpha)):
        # (P1) depends on the rows, floors, costs and big-M only (C only steers its
        # warm start), so it is solved once per floor pair, with the linear method,
        # and the RBF method fits (P3) on that selection (thesis ch. 4 does the same)
        shared: Any = None
        for kern in ("linear", "rbf"):
            key = f"{name}_{kern}"
            if kern == "rbf" and "error" in out["methods"][f"{name}_linear"]:
                # the same (P1) failed for the linear method: not solved again
                out["methods"][key] = {
                    **out["methods"][f"{name}_linear"],
                    "selection_from": f"{name}_linear",
                }
                timing[key] = 0.0
                continue
            est = CostSensitiveFeatureSelector(
                min_tpr=p_tpr,
                min_tnr=p_tnr,
                hoeffding_alpha=alpha,
                kernel=kern,
                C=cv[kern]["C"],
                gamma=gamma,
                big_m=BIG_M,
                time_limit=cfg.mip.time_limit,
                mip_rel_gap=cfg.mip.mip_rel_gap,
                device=cfg.device,
            )
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est.fit(Xc, yc, sample_weight=wc, selection=shared)
            except (InfeasibleProblemError, SolverError) as exc:
                # infeasible floors, or a time limit without any selection: reported
                out["methods"][key] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            finally:
                timing[key] = time.perf_counter() - t0
            rec = {
                **_counts(y_te, est.decision_function(X_te)),
                "n_selected": int(est.get_support().sum()),
                "status": est.status_,
                "mip_gap": float(est.mip_gap_),
                "floors": {"tpr": float(est.tpr_floor_), "tnr": float(est.tnr_floor_)},
                "time_limit_hit": any(
                    issubclass(w.category, SolverTimeLimitWarning) for w in caught
                ),
                # e.g. FloorCappedWarning: a Hoeffding floor above 1 imposed as 1
                "warnings": sorted({w.category.__name__ for w in caught}),
            }
            if shared is not None:
                # status, gap and time-limit flag are those of the shared (P1) solve
                rec["selection_from"] = f"{name}_linear"
                hit = bool(out["methods"][f"{name}_linear"]["time_limit_hit"])
                rec["time_limit_hit"] = hit
                if hit:
                    rec["warnings"] = sorted(
                        {*rec["warnings"], SolverTimeLimitWarning.__name__}
                    )
            out["methods"][key] = rec
            shared = est
            if key == "fs_linear":
                k_sel = rec["n_selected"]
    for kern in ("linear", "rbf"):
        key = f"card_{kern}"
        if k_sel is None:
            out["methods"][key] = {"error": "not run: fs_linear gave no k"}
            continue
        card = CardinalityConstrainedSVC(
            k_max=max(1, k_sel),
            kernel=kern,
            C=cv[kern]["C"],
            gamma=gamma,
            time_limit=cfg.mip.time_limit,
            device=cfg.device,
        )
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SolverTimeLimitWarning)
                card.fit(Xc, yc, sample_weight=wc)
        except SolverError as exc:
            out["methods"][key] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        finally:
            timing[key] = time.perf_counter() - t0
        out["methods"][key] = {
            **_counts(y_te, card.decision_function(X_te)),
            "n_selected": int(card.support_.sum()),
            "status": card.status_,
            "mip_gap": float(card.mip_gap_),
            "time_limit_hit": any(
                issubclass(w.category, SolverTimeLimitWarning) for w in caught
            ),
        }
    out["timing"] = timing
    return out


# -------------------------------------------------------------------------- report
def _used(cfg: ExperimentConfig) -> dict[str, str]:
    s = cfg.feature_selection
    ex = np.log2(np.asarray(s.C_grid))
    whole = np.allclose(ex, np.round(ex))
    grid = (
        f"2^{int(ex[0])}..2^{int(ex[-1])}"
        if whole and np.array_equal(np.round(ex), np.arange(ex[0], ex[-1] + 1))
        else "{" + ", ".join(f"{c:g}" for c in s.C_grid) + "}"
    )
    folds = f"{cfg.protocol.n_folds}-fold" + (
        f", leave-one-out below {s.loo_below_rows} rows" if s.loo_below_rows else ""
    )
    folds += (
        ", all folds"
        if cfg.protocol.max_folds == 0
        else f", first {cfg.protocol.max_folds}"
    )
    rows = (
        "all"
        if cfg.data.max_rows == 0
        else f"dataset subsampled to {cfg.data.max_rows}"
    )
    if s.max_train_rows:
        rows += f"; training parts subsampled to {s.max_train_rows}"
    return {
        "datasets": ", ".join(cfg.data.datasets),
        "outer CV": folds,
        "inner CV": f"{s.inner_folds}-fold over C in {grid}",
        "gamma": f"{s.gamma} (fixed)",
        "targets": (
            f"min{{1, rate0 - {s.target_slack:g}}}, rate0 = validation TPR / TNR of the "
            "linear SVM"
        ),
        "Hoeffding variant": f"alpha = {s.hoeffding_alpha:g}",
        "training rows": rows,
        "k-means compression": (
            f"per class above {s.max_rows_per_class} rows"
            if s.max_rows_per_class
            else "none"
        ),
        "MILP / MIQP time limit": f"{cfg.mip.time_limit:g} s",
        "M1 = M2 = M3": f"{BIG_M:g}",
    }


def _ms(vals: list[float]) -> str:
    return "n/a" if not vals else f"{np.mean(vals):.3f} ± {np.std(vals):.3f}"


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Per dataset and method: pooled held-out rates, whether the floors held, features."""
    expected: dict[str, int] = {}
    for u in units(cfg):
        expected[u.params["dataset"]] = u.params["n_folds"]
    by_ds: dict[str, list[dict[str, Any]]] = {}
    for key, r in results.items():
        by_ds.setdefault(key.split("/")[0], []).append(r)
    figures: dict[str, Any] = {"datasets": {}, "settings": _used(cfg)}
    timings: dict[str, Any] = {}
    rows = []
    for name in cfg.data.datasets:
        rs = by_ds.get(name, [])
        if not rs:
            continue
        t_tpr = float(np.mean([r["targets"]["tpr"] for r in rs]))
        t_tnr = float(np.mean([r["targets"]["tnr"] for r in rs]))
        ds: dict[str, Any] = {
            "positive": rs[0]["positive"],
            "n_features": rs[0]["n_features"],
            "folds_done": len(rs),
            "n_folds": expected.get(name, len(rs)),
            "target_tpr": t_tpr,
            "target_tnr": t_tnr,
            "C_linear": [r["inner_cv"]["linear"]["C"] for r in rs],
            "C_rbf": [r["inner_cv"]["rbf"]["C"] for r in rs],
            "methods": {},
        }
        timings[name] = [r["timing"] for r in rs]
        for m in METHODS:
            recs = [r["methods"][m] for r in rs if "tp" in r["methods"].get(m, {})]
            errs = [
                r["methods"][m]["error"]
                for r in rs
                if "error" in r["methods"].get(m, {})
            ]
            if not recs:
                ds["methods"][m] = {"folds": 0, "n_errors": len(errs)}
                rows.append(f"| {name} | {m} | - | - | - | - | - | {len(errs)} | - |")
                continue
            tot = {k: sum(x[k] for x in recs) for k in ("tp", "n_pos", "tn", "n_neg")}
            # a rate without held-out rows of its class (leave-one-out folds finished
            # so far all of one class) is undefined, and so is whether its floor held
            tpr = tot["tp"] / tot["n_pos"] if tot["n_pos"] else None
            tnr = tot["tn"] / tot["n_neg"] if tot["n_neg"] else None
            acc = (tot["tp"] + tot["tn"]) / max(tot["n_pos"] + tot["n_neg"], 1)
            held = (
                None
                if tpr is None or tnr is None
                else bool(tpr >= t_tpr - 1e-12 and tnr >= t_tnr - 1e-12)
            )
            hit = sum(bool(x.get("time_limit_hit")) for x in recs)
            mf = {
                "folds": len(recs),
                "n_errors": len(errs),
                "accuracy": acc,
                "tpr": tpr,
                "tnr": tnr,
                "floors_held": held,
                "n_selected": [x["n_selected"] for x in recs],
                "n_time_limit": hit,
            }
            ds["methods"][m] = mf
            rows.append(
                f"| {name} | {m} | {acc:.3f} | {_rate(tpr)} | {_rate(tnr)} | "
                f"{'-' if held is None else 'yes' if held else 'no'} | "
                f"{ds['n_features']} -> "
                f"{_ms([float(v) for v in mf['n_selected']])} | {len(errs)} | {hit} |"
            )
        figures["datasets"][name] = ds
    used = figures["settings"]
    done = ", ".join(
        f"{n}: {figures['datasets'][n]['folds_done'] if n in figures['datasets'] else 0}"
        f"/{expected.get(n, '?')}"
        for n in cfg.data.datasets
    )
    targets = [
        f"| {n} | {v['positive']} | {v['target_tpr']:.3f} | {v['target_tnr']:.3f} | "
        f"{_ms(v['C_linear'])} | {_ms(v['C_rbf'])} |"
        for n, v in figures["datasets"].items()
    ]
    text = "\n".join(
        [
            "## Settings: this run next to the thesis' (SPEC S6)",
            "",
            settings_table(THESIS, used),
            "",
            f"Folds finished: {done}. A rerun of the same command resumes.",
            "",
            "## Targets (mean over folds) and the C chosen by inner CV",
            "",
            "| dataset | positive | p0 TPR | p0 TNR | C linear | C rbf |",
            "|---|---|---|---|---|---|",
            *targets,
            "",
            "## Held-out rates (pooled over folds)",
            "",
            "`floors held` = pooled held-out TPR >= mean p0(+) and TNR >= mean p0(-) "
            "(`-`: a rate is undefined, no held-out row of its class yet); "
            "`feat` = features before -> kept (mean ± std over folds); `failed` = folds "
            "where the floors could not be met or no selection was found in time "
            "(excluded from the rates); `time limit` = fits stopped at the limit with an "
            "incumbent (counted).",
            "",
            "| dataset | method | accuracy | TPR | TNR | floors held | feat | failed | "
            "time limit |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )

    def plot(out: Path) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(figures["datasets"])
        if not names:
            return []
        fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
        width = 0.8 / len(METHODS)
        for ax, rate, tkey in zip(
            axes, ("tpr", "tnr"), ("target_tpr", "target_tnr"), strict=True
        ):
            for i, m in enumerate(METHODS):
                vals = [figures["datasets"][n]["methods"][m].get(rate) for n in names]
                vals = [np.nan if v is None else v for v in vals]
                ax.bar(np.arange(len(names)) + (i - 3.5) * width, vals, width, label=m)
            tg = [figures["datasets"][n][tkey] for n in names]
            ax.scatter(np.arange(len(names)), tg, marker="_", s=600, c="k", zorder=3)
            ax.set_xticks(np.arange(len(names)), names, rotation=30)
            ax.set_title(f"held-out {rate.upper()} (pooled); bar = target p0")
        axes[0].set_ylim(0, 1.05)
        axes[1].legend(fontsize=7, loc="lower right")
        return [save_figure(fig, out / "feature_selection_rates.png")]

    return ProtocolReport(
        title="Cost-sensitive feature selection (SPEC S6, thesis ch. 4)",
        figures=figures,
        text=text + "\n\n![held-out rates](feature_selection_rates.png)",
        timings=timings,
        plot=plot,
    )
