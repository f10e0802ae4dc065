"""Sensitivity control: ROC curves of C+ sweeps (SPEC S1 / S1b, Veropoulos et al.).

Statlog heart (RBF, sigma = 4.9), Pima diabetes (sigma = 1.1) and BUPA liver
(sigma = 0.7), gamma = 1 / (2 sigma^2). For each dataset, sweep and outer fold (one
unit), the whole sweep is solved as one batch on the training part; the held-out
predictions, pooled over folds, give one (FPR, TPR) point per model and so the ROC
curve of the sweep. Features: standardised numeric columns and 0/1 dummies, fitted on
each training part. Sweeps (``SWEEPS``):

- ``box`` / ``diagonal``: C+ over the grid with C- = ``sensitivity.C`` (S1 box bounds /
  S1b diagonal shift 1/(2 C+));
- ``box_hard``: C+ over the grid with C- = ``sensitivity.C_large`` (the paper's C- =
  infinity, exact wherever no negative multiplier reaches C_large), then the mirrored
  half (C+ = C_large, C- back over the grid), so the path reaches "everything
  positive" and the curve spans FPR 0-1;
- ``diagonal_hard``: epsilon+ = 1/(2 C+) over the grid with epsilon- = 0 (negatives
  hard, hinge bound C_large), then the mirrored half.

The first ``n_grid`` models of a hard sweep are the one-sided sweep the paper describes
(C+ or epsilon+ with the negatives hard); the report gives its FPR range and AUC too.
Per-fold AUCs and TPR at FPR <= ``FPR_TARGET`` of the sweeps are compared with
:func:`~torchsvm.estimators.sensitivity.paired_fold_test` (Wilcoxon signed-rank, paired
t beside it) for the pairs in ``PAIRS``.

Timing (fold 0 only, ``box`` and ``diagonal``): the batched solve against fitting the same C+ values one at a
time (our solver with one problem per call, and libsvm's SVC with ``class_weight`` for
the box scheme), after a warm-up fit. Timings go to the report's ``timings``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = [
    "FPR_TARGET",
    "PAIRS",
    "SCHEMES",
    "SIGMA",
    "SWEEPS",
    "assemble",
    "run_unit",
    "units",
]

SIGMA = {"heart_statlog": 4.9, "diabetes": 1.1, "liver_bupa": 0.7}
SWEEPS = ("box", "diagonal", "box_hard", "diagonal_hard")
SCHEMES = SWEEPS  # the name the earlier reports used
#: pairs of sweeps compared fold by fold
PAIRS = (
    ("box", "diagonal"),
    ("box_hard", "diagonal_hard"),
    ("box_hard", "box"),
    ("diagonal_hard", "diagonal"),
)
#: the false-positive rate at which the sweeps' best TPR is compared
FPR_TARGET = 0.1


def sweep_params(cfg: ExperimentConfig, sweep: str) -> dict[str, Any]:
    """``SensitivitySweepSVC`` parameters of one sweep (besides grid and kernel)."""
    s = cfg.sensitivity
    if sweep == "box":
        return {"scheme": "box", "C": s.C}
    if sweep == "diagonal":
        return {"scheme": "diagonal", "C": s.C}
    if sweep == "box_hard":
        return {"scheme": "box", "C": s.C_large, "mirror": True}
    if sweep == "diagonal_hard":
        return {
            "scheme": "diagonal",
            "C": s.C_large,
            "mirror": True,
            "hard_fixed_side": True,
        }
    raise ValueError(f"unknown sweep {sweep!r}; choose from {list(SWEEPS)}")


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, scheme, outer fold)."""
    for name in cfg.data.datasets:
        if name not in SIGMA:
            raise ValueError(
                f"sensitivity: no sigma known for dataset {name!r}; choose from {list(SIGMA)}"
            )
    return [
        Unit(
            f"{name}/{scheme}/fold_{k:02d}",
            {"dataset": name, "scheme": scheme, "fold": k},
        )
        for name in cfg.data.datasets
        for scheme in SWEEPS
        for k in range(cfg.protocol.folds_run)
    ]


def _grid(cfg: ExperimentConfig) -> np.ndarray:
    from torchsvm.estimators.sensitivity import default_c_pos_grid

    s = cfg.sensitivity
    return default_c_pos_grid(s.C, s.n_grid, s.span)


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Held-out false / true positive counts of every model on one fold (+ fold-0 timings)."""
    from torchsvm.estimators.sensitivity import SensitivitySweepSVC, fit_one_at_a_time

    name, scheme, k = unit.params["dataset"], unit.params["scheme"], unit.params["fold"]
    d = load_fold_data(cfg, name, k)
    Xtr, ytr, Xte, yte = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    est = SensitivitySweepSVC(
        **sweep_params(cfg, scheme),
        C_pos_grid=_grid(cfg),
        gamma=1.0 / (2.0 * SIGMA[name] ** 2),
        tol=cfg.solver.tol,
        device=cfg.device,
    )
    timing: dict[str, float] = {}
    timed = k == 0 and scheme in ("box", "diagonal")
    if timed:
        est.fit(Xtr, ytr)  # warm-up (first-call overheads), not timed
    c0 = time.process_time()
    m = SensitivitySweepSVC(**est.get_params()).fit(Xtr, ytr)
    timing["batched_cpu_seconds"] = time.process_time() - c0
    timing["batched_seconds"] = float(m.fit_time_)
    hits = m.decision_function(Xte) > 0
    statuses: dict[str, int] = {}
    for s in m.status_:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    if timed:
        c0 = time.process_time()
        _, timing["one_at_a_time_seconds"] = fit_one_at_a_time(est, Xtr, ytr)
        timing["one_at_a_time_cpu_seconds"] = time.process_time() - c0
        if scheme == "box":
            c0 = time.process_time()
            _, timing["sklearn_one_at_a_time_seconds"] = fit_one_at_a_time(
                est, Xtr, ytr, backend="sklearn"
            )
            timing["sklearn_one_at_a_time_cpu_seconds"] = time.process_time() - c0
    return {
        "fp": hits[:, yte < 0].sum(1).astype(int).tolist(),
        "tp": hits[:, yte > 0].sum(1).astype(int).tolist(),
        "n_neg": int((yte < 0).sum()),
        "n_pos": int((yte > 0).sum()),
        "statuses": statuses,
        "C_pos": m.C_pos_.tolist(),
        "C_neg": m.C_neg_.tolist(),
        "n_fixed_at_bound": m.n_fixed_at_bound_.astype(int).tolist(),
        "timing": timing,
    }


def _fold_curve(r: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    fpr = np.asarray(r["fp"], dtype=np.float64) / max(r["n_neg"], 1)
    tpr = np.asarray(r["tp"], dtype=np.float64) / max(r["n_pos"], 1)
    return fpr, tpr


def _sweep_entry(
    cfg: ExperimentConfig, name: str, sweep: str, rs: dict[int, dict[str, Any]]
) -> dict[str, Any]:
    """Pooled curve, per-fold statistics and diagnostics of one (dataset, sweep)."""
    from torchsvm.estimators.sensitivity import sweep_auc, tpr_at_fpr

    folds = list(rs.values())
    fp = np.sum([r["fp"] for r in folds], axis=0)
    tp = np.sum([r["tp"] for r in folds], axis=0)
    n_neg = sum(r["n_neg"] for r in folds)
    n_pos = sum(r["n_pos"] for r in folds)
    fpr, tpr = fp / max(n_neg, 1), tp / max(n_pos, 1)
    statuses: dict[str, int] = {}
    for r in folds:
        for st, c in r["statuses"].items():
            statuses[st] = statuses.get(st, 0) + c
    per_fold = {k: _fold_curve(r) for k, r in rs.items()}
    at_bound = np.sum([r["n_fixed_at_bound"] for r in folds], axis=0)
    entry: dict[str, Any] = {
        "sigma": SIGMA[name],
        "gamma": 1.0 / (2.0 * SIGMA[name] ** 2),
        "n": n_neg + n_pos,
        "n_pos": n_pos,
        "folds_done": len(folds),
        "C_pos": folds[0]["C_pos"],
        "C_neg": folds[0]["C_neg"],
        "fpr": fpr.tolist(),
        "tpr": tpr.tolist(),
        "auc": float(sweep_auc(fpr, tpr)),
        "fpr_range": [float(fpr.min()), float(fpr.max())],
        "tpr_at_target": tpr_at_fpr(fpr, tpr, FPR_TARGET),
        "folds": sorted(per_fold),
        "auc_folds": [float(sweep_auc(*per_fold[k])) for k in sorted(per_fold)],
        "tpr_at_target_folds": [
            tpr_at_fpr(*per_fold[k], FPR_TARGET) for k in sorted(per_fold)
        ],
        "models_with_fixed_at_bound": int((at_bound > 0).sum()),
        "statuses": statuses,
    }
    if sweep.endswith("_hard"):
        m = cfg.sensitivity.n_grid
        entry["one_sided"] = {
            "auc": float(sweep_auc(fpr[:m], tpr[:m])),
            "fpr_range": [float(fpr[:m].min()), float(fpr[:m].max())],
            "tpr_range": [float(tpr[:m].min()), float(tpr[:m].max())],
        }
    return entry


def _paired_tests(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from torchsvm.estimators.sensitivity import paired_fold_test

    out: dict[str, Any] = {}
    for a, b in PAIRS:
        if a not in entries or b not in entries:
            continue
        ea, eb = entries[a], entries[b]
        common = sorted(set(ea["folds"]) & set(eb["folds"]))
        if len(common) < 2:
            continue
        ia = [ea["folds"].index(k) for k in common]
        ib = [eb["folds"].index(k) for k in common]
        out[f"{a} vs {b}"] = {
            stat: dataclasses.asdict(
                paired_fold_test(
                    np.asarray(ea[f"{stat}_folds"])[ia],
                    np.asarray(eb[f"{stat}_folds"])[ib],
                )
            )
            for stat in ("auc", "tpr_at_target")
        }
    return out


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Pooled ROC points, sweep AUCs and paired fold tests per dataset; timings apart."""
    s = cfg.sensitivity
    grid = _grid(cfg)
    figures: dict[str, Any] = {
        "C_pos_grid": grid.tolist(),
        "C_neg": s.C,
        "C_large": s.C_large,
        "fpr_target": FPR_TARGET,
    }
    timings: dict[str, Any] = {}
    rows, time_rows, test_rows = [], [], []
    for name in cfg.data.datasets:
        entries: dict[str, dict[str, Any]] = {}
        for sweep in SWEEPS:
            rs = {
                k: results[key]
                for k in range(cfg.protocol.folds_run)
                if (key := f"{name}/{sweep}/fold_{k:02d}") in results
            }
            if not rs:
                continue
            e = entries[sweep] = _sweep_entry(cfg, name, sweep, rs)
            fixed = s.C if sweep in ("box", "diagonal") else s.C_large
            half = e.get("one_sided")
            half_cell = (
                "-"
                if half is None
                else f"{half['auc']:.3f}; FPR {half['fpr_range'][0]:.2f}-"
                f"{half['fpr_range'][1]:.2f}"
            )
            bound_cell = (
                e["models_with_fixed_at_bound"] if sweep.endswith("_hard") else "-"
            )
            rows.append(
                f"| {name} | {e['n']} ({e['n_pos']}) | {SIGMA[name]} | {sweep} | "
                f"{fixed:g} | {len(e['fpr'])} | {e['auc']:.3f} | "
                f"{e['fpr_range'][0]:.2f}-{e['fpr_range'][1]:.2f} | {half_cell} | "
                f"{e['tpr_at_target']:.3f} | {np.mean(e['auc_folds']):.3f} "
                f"({np.std(e['auc_folds']):.3f}) | {bound_cell} | "
                f"{e['folds_done']} | {e['statuses']} |"
            )
            t0 = rs[0]["timing"] if 0 in rs else {}
            per_fold = [r["timing"]["batched_seconds"] for r in rs.values()]
            timings.setdefault(name, {})[sweep] = {
                "batched_seconds_per_fold": per_fold,
                **{f"{k}_fold0": v for k, v in t0.items()},
            }

            def cell(key: str, t0: dict[str, float] = t0) -> str:
                w, c = t0.get(f"{key}_seconds"), t0.get(f"{key}_cpu_seconds")
                return "n/a" if w is None else f"{w:.2f} / {c:.2f}"

            time_rows.append(
                f"| {name} | {sweep} | {len(e['fpr'])} | {np.mean(per_fold):.2f} | "
                f"{cell('batched')} | {cell('one_at_a_time')} | "
                f"{cell('sklearn_one_at_a_time')} |"
            )
        if not entries:
            continue
        tests = _paired_tests(entries)
        figures[name] = {**entries, "paired_tests": tests}
        for pair, t in tests.items():
            a, r = t["auc"], t["tpr_at_target"]
            test_rows.append(
                f"| {name} | {pair} | {a['n']} | {a['mean_diff']:+.3f} | "
                f"{a['wilcoxon_pvalue']:.3f} | {a['t_pvalue']:.3f} | "
                f"{r['mean_diff']:+.3f} | {r['wilcoxon_pvalue']:.3f} | "
                f"{r['t_pvalue']:.3f} |"
            )
    settings = [
        "## Settings: this run next to the paper's (Veropoulos, Campbell & "
        "Cristianini)",
        "",
        "| setting | paper | this run |",
        "|---|---|---|",
        "| datasets | heart (statlog), Pima diabetes, BUPA liver | "
        f"{', '.join(cfg.data.datasets)} |",
        "| kernel | RBF, sigma 4.9 / 1.1 / 0.7 | RBF, gamma = 1/(2 sigma^2), "
        "sigma 4.9 / 1.1 / 0.7 |",
        f"| C- while C+ is swept | infinity | {s.C_large:g} (box_hard; exact where "
        f"no negative reaches it: see 'fixed at bound'); {s.C:g} (box) |",
        "| epsilon- while epsilon+ is swept | 0 | 0 (diagonal_hard, hinge bound "
        f"{s.C_large:g}); 1/(2 * {s.C:g}) (diagonal) |",
        f"| swept values | not checked (paper text not at hand) | {s.n_grid} values "
        f"c = {s.C:g} * 2^k, k in [-{s.span:g}, {s.span:g}] |",
        "| mirrored half (C+ hard, C- swept) | no | yes, hard sweeps only **(added)** "
        "|",
        "| evaluation | not checked | "
        f"{cfg.protocol.n_folds}-fold stratified CV, predictions pooled "
        f"(max_rows {cfg.data.max_rows or 'all'}) |",
        "| paired test over folds | no | Wilcoxon signed-rank (+ paired t) "
        "**(added)** |",
        "",
    ]
    text = "\n".join(
        [
            *settings,
            f"Grid: c = {s.C:g} * 2^k for {s.n_grid} values of k in [-{s.span:g}, "
            f"{s.span:g}]. box / diagonal: C+ = c (diagonal: K_ii += 1/(2 c) for "
            f"positives, 1/(2 C-) for negatives) with C- = {s.C:g}. box_hard: C+ = c "
            f"with C- = {s.C_large:g} (for C- = infinity), then (C+, C-) = "
            f"({s.C_large:g}, {s.C_large:g}), then C+ = {s.C_large:g} with C- = c "
            "back over the grid. diagonal_hard: epsilon+ = 1/(2 c) with epsilon- = 0 "
            f"(negatives: hard quadratic margin, hinge bound {s.C_large:g}), the hard "
            "model, then the mirror. 'one-sided half' = the first "
            f"{s.n_grid} models of a hard sweep (the paper's sweep), its AUC with the "
            "straight segment to (1, 1). 'fixed at bound' (hard sweeps) counts models "
            "where, in some fold, a row of the class held fixed reached the bound "
            f"{s.C_large:g} (0: every hard model is exactly the C = infinity / "
            f"epsilon = 0 one). {cfg.protocol.n_folds}-fold stratified "
            "CV; held-out predictions pooled over folds for the curves. Solver tol "
            f"(relative duality gap) {cfg.solver.tol:g}.",
            "",
            "| dataset | n (+) | sigma | sweep | fixed C | models | pooled AUC | "
            "FPR range | one-sided half: AUC; FPR range | TPR at FPR <= "
            f"{FPR_TARGET:g} (pooled) | fold AUC mean (sd) | fixed at bound | folds | "
            "statuses |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Paired tests over folds (two-sided; each fold's own ROC AUC and its best "
            f"TPR at FPR <= {FPR_TARGET:g}; difference = first minus second sweep). "
            "Wilcoxon signed-rank is the primary test (one difference per fold of a "
            "bounded statistic: few and not normal; folds with a zero difference "
            "dropped); "
            "the paired t p-value is beside it. Folds share training rows, so both "
            "are optimistic.",
            "",
            "| dataset | sweeps | folds | mean dAUC | Wilcoxon p | t p | "
            f"mean dTPR@{FPR_TARGET:g} | Wilcoxon p | t p |",
            "|---|---|---|---|---|---|---|---|---|",
            *test_rows,
            "",
            "Timings: batched wall s per fold (mean); fold 0 wall / CPU s (CPU = "
            "process time, all threads) of the batch, of one-at-a-time fits with our "
            "solver and with libsvm (box only; libsvm has no S1b); the hard sweeps "
            "are not timed one at a time.",
            "",
            "| dataset | sweep | models | batched wall s/fold (mean) | fold 0 batched "
            "| fold 0 one-at-a-time (ours) | fold 0 one-at-a-time (libsvm) |",
            "|---|---|---|---|---|---|---|",
            *time_rows,
        ]
    )

    def plot(out: Path) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from torchsvm.estimators.sensitivity import RocSweepDisplay

        names = [n for n in cfg.data.datasets if n in figures]
        if not names:
            return []
        fig, axes = plt.subplots(
            1, len(names), figsize=(5 * len(names), 5), squeeze=False
        )
        for ax, name in zip(axes[0], names, strict=True):
            present = [sw for sw in SWEEPS if sw in figures[name]]
            for sweep in present:
                r = figures[name][sweep]
                RocSweepDisplay(fpr=r["fpr"], tpr=r["tpr"], name=sweep).plot(
                    ax=ax, plot_chance_level=sweep == present[-1]
                )
            ax.set_title(f"{name} (sigma = {SIGMA[name]})")
        fig.tight_layout()
        return [save_figure(fig, out / "sensitivity_roc.png")]

    return ProtocolReport(
        title="Sensitivity control: ROC curves of C+ / epsilon+ sweeps (SPEC S1 / S1b)",
        figures=figures,
        text=text + "\n\n![ROC curves](sensitivity_roc.png)",
        timings=timings,
        plot=plot,
    )
