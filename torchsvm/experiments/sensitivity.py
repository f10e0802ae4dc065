"""Sensitivity control: ROC curves of C+ sweeps (SPEC S1 / S1b, Veropoulos et al.).

Statlog heart (RBF, sigma = 4.9), Pima diabetes (sigma = 1.1) and BUPA liver
(sigma = 0.7), gamma = 1 / (2 sigma^2). For each dataset, scheme -- ``box`` (C+ sweep
of the box constraints, S1) and ``diagonal`` (C+ sweep of the kernel-diagonal shift
1/(2 C+), S1b) -- and outer fold (one unit), the whole C+ sweep (C- fixed) is solved as
one batch on the training part; the held-out predictions, pooled over folds, give one
(FPR, TPR) point per C+ and so the ROC curve of the scheme. Features: standardised
numeric columns and 0/1 dummies, fitted on each training part.

Timing (fold 0 only): the batched solve against fitting the same C+ values one at a
time (our solver with one problem per call, and libsvm's SVC with ``class_weight`` for
the box scheme), after a warm-up fit. Timings go to the report's ``timings``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = ["SCHEMES", "SIGMA", "assemble", "run_unit", "units"]

SIGMA = {"heart_statlog": 4.9, "diabetes": 1.1, "liver_bupa": 0.7}
SCHEMES = ("box", "diagonal")


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
        for scheme in SCHEMES
        for k in range(cfg.protocol.folds_run)
    ]


def _grid(cfg: ExperimentConfig) -> np.ndarray:
    from torchsvm.estimators.sensitivity import default_c_pos_grid

    s = cfg.sensitivity
    return default_c_pos_grid(s.C, s.n_grid, s.span)


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Held-out false / true positive counts of every C+ on one fold (+ timings on fold 0)."""
    from torchsvm.estimators.sensitivity import SensitivitySweepSVC, fit_one_at_a_time

    name, scheme, k = unit.params["dataset"], unit.params["scheme"], unit.params["fold"]
    d = load_fold_data(cfg, name, k)
    Xtr, ytr, Xte, yte = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    est = SensitivitySweepSVC(
        scheme=scheme,
        C=cfg.sensitivity.C,
        C_pos_grid=_grid(cfg),
        gamma=1.0 / (2.0 * SIGMA[name] ** 2),
        tol=cfg.solver.tol,
        device=cfg.device,
    )
    timing: dict[str, float] = {}
    if k == 0:
        est.fit(Xtr, ytr)  # warm-up (first-call overheads), not timed
    c0 = time.process_time()
    m = SensitivitySweepSVC(**est.get_params()).fit(Xtr, ytr)
    timing["batched_cpu_seconds"] = time.process_time() - c0
    timing["batched_seconds"] = float(m.fit_time_)
    hits = m.decision_function(Xte) > 0
    statuses: dict[str, int] = {}
    for s in m.status_:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    if k == 0:
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
        "timing": timing,
    }


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Pooled ROC points and sweep AUC per (dataset, scheme); timings apart."""
    from torchsvm.estimators.sensitivity import sweep_auc

    grid = _grid(cfg)
    figures: dict[str, Any] = {"C_pos": grid.tolist(), "C_neg": cfg.sensitivity.C}
    timings: dict[str, Any] = {}
    rows = []
    for name in cfg.data.datasets:
        for scheme in SCHEMES:
            rs = [
                results[key]
                for k in range(cfg.protocol.folds_run)
                if (key := f"{name}/{scheme}/fold_{k:02d}") in results
            ]
            if not rs:
                continue
            fp = np.sum([r["fp"] for r in rs], axis=0)
            tp = np.sum([r["tp"] for r in rs], axis=0)
            n_neg = sum(r["n_neg"] for r in rs)
            n_pos = sum(r["n_pos"] for r in rs)
            fpr, tpr = fp / max(n_neg, 1), tp / max(n_pos, 1)
            statuses: dict[str, int] = {}
            for r in rs:
                for s, c in r["statuses"].items():
                    statuses[s] = statuses.get(s, 0) + c
            auc = float(sweep_auc(fpr, tpr))
            figures.setdefault(name, {})[scheme] = {
                "sigma": SIGMA[name],
                "gamma": 1.0 / (2.0 * SIGMA[name] ** 2),
                "n": n_neg + n_pos,
                "n_pos": n_pos,
                "folds_done": len(rs),
                "fpr": fpr.tolist(),
                "tpr": tpr.tolist(),
                "auc": auc,
                "statuses": statuses,
            }
            per_fold = [r["timing"]["batched_seconds"] for r in rs]
            t0 = rs[0]["timing"] if f"{name}/{scheme}/fold_00" in results else {}
            timings.setdefault(name, {})[scheme] = {
                "batched_seconds_per_fold": per_fold,
                **{f"{k}_fold0": v for k, v in t0.items()},
            }

            def cell(key: str, t0: dict[str, float] = t0) -> str:
                w, c = t0.get(f"{key}_seconds"), t0.get(f"{key}_cpu_seconds")
                return "n/a" if w is None else f"{w:.2f} / {c:.2f}"

            rows.append(
                f"| {name} | {n_neg + n_pos} ({n_pos}) | {SIGMA[name]} | {scheme} | "
                f"{auc:.3f} | {np.mean(per_fold):.2f} | {cell('batched')} | "
                f"{cell('one_at_a_time')} | {cell('sklearn_one_at_a_time')} | {statuses} |"
            )
    s = cfg.sensitivity
    text = "\n".join(
        [
            f"C- = {s.C}; C+ = C- * 2^k for {s.n_grid} values of k in [-{s.span:g}, "
            f"{s.span:g}]; {cfg.protocol.n_folds}-fold stratified CV, held-out predictions "
            "pooled over folds; box: hinge loss with class bounds; diagonal: quadratic "
            f"slack, K_ii += 1/(2 C_y). Solver tol (relative duality gap) {cfg.solver.tol:g}. "
            "Fold-0 timings: wall / CPU seconds (CPU = process time, all threads); "
            "libsvm only for the box scheme (it has no S1b).",
            "",
            "| dataset | n (+) | sigma | scheme | AUC of sweep | batched wall s/fold (mean) | "
            "fold 0 batched | fold 0 one-at-a-time (ours) | fold 0 one-at-a-time (libsvm) "
            "| statuses |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
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
            for scheme in SCHEMES:
                if scheme in figures[name]:
                    r = figures[name][scheme]
                    RocSweepDisplay(fpr=r["fpr"], tpr=r["tpr"], name=scheme).plot(
                        ax=ax, plot_chance_level=scheme == SCHEMES[-1]
                    )
            ax.set_title(f"{name} (sigma = {SIGMA[name]})")
        fig.tight_layout()
        return [save_figure(fig, out / "sensitivity_roc.png")]

    return ProtocolReport(
        title="Sensitivity control: ROC curves of C+ sweeps (SPEC S1 / S1b)",
        figures=figures,
        text=text + "\n\n![ROC curves](sensitivity_roc.png)",
        timings=timings,
        plot=plot,
    )
