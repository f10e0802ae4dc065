"""Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5; thesis ch. 3).

For every dataset, outer fold (preprocessing fitted on the training rows only), imposed
TPR ``t`` of ``cost_sensitive.tprs`` and control (one unit each), the bootstrap
probabilistic SVM is fitted on the same bootstrap draws (same ``random_state``):

- Ctrl1 (``threshold``): ``BootstrapProbabilitySVC(target_tpr=t)``: S1 fits, vote
  threshold ``-a`` chosen on out-of-bag scores;
- Ctrl2 (``csvm``): ``BootstrapProbabilitySVC(target_tpr=t, control="csvm")``: every
  fit is the training-set constrained SVM S5c with the TPR floor ``t`` (HiGHS outer
  approximation, ``mip.time_limit`` seconds each);
- t = 0 (``cost_sensitive.uncontrolled``): ``BootstrapProbabilitySVC(target_tpr=None)``,
  fitted once per fold and shown in both columns (no threshold shift, no floor).

Reported per dataset and ``t`` (mean over folds): the MSE of ``P(+|x)`` on the held-out
positives (``mean (1 - p)^2``) and negatives (``mean p^2``), the held-out TPR / TNR of
``P(+|x) >= 1/2``, and the seconds per ensemble fit. Kernel: ``bootstrap.kernel``
(linear in the paper).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import ProtocolReport
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = ["CONTROLS", "assemble", "run_unit", "units"]

CONTROLS = ("threshold", "csvm")
LABEL = {"threshold": "Ctrl1", "csvm": "Ctrl2"}


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, fold, imposed TPR, control); t = 0 once per fold."""
    out = []
    for name in cfg.data.datasets:
        for k in range(cfg.protocol.folds_run):
            if cfg.cost_sensitive.uncontrolled:
                out.append(
                    Unit(
                        f"{name}/fold_{k:02d}/tpr_0.00/none",
                        {"dataset": name, "fold": k, "tpr": 0.0, "control": "none"},
                    )
                )
            out += [
                Unit(
                    f"{name}/fold_{k:02d}/tpr_{t:.2f}/{control}",
                    {"dataset": name, "fold": k, "tpr": t, "control": control},
                )
                for t in cfg.cost_sensitive.tprs
                for control in CONTROLS
            ]
    return out


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Fit one controlled ensemble and score it on the held-out rows."""
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC

    p = unit.params
    d = load_fold_data(cfg, p["dataset"], p["fold"])
    y_tr = np.where(np.asarray(d["y_train"]) > 0, 1, -1)
    y_te = np.where(np.asarray(d["y_test"]) > 0, 1, -1)
    b = cfg.bootstrap
    t0 = time.perf_counter()
    m = BootstrapProbabilitySVC(
        C_grid=np.asarray(b.C_grid, dtype=float),
        n_bootstrap=b.n_bootstrap,
        accuracy_eps=b.accuracy_eps,
        kernel=b.kernel,
        gamma=b.gamma_value,
        target_tpr=float(p["tpr"]) if p["control"] != "none" else None,
        control="threshold" if p["control"] == "none" else p["control"],
        mip_time_limit=cfg.mip.time_limit,
        random_state=cfg.protocol.seed,
        device=cfg.device,
    ).fit(d["X_train"], y_tr)
    fit_s = time.perf_counter() - t0
    prob = m.predict_proba(d["X_test"])[:, list(m.classes_).index(1)]
    pos, neg = y_te == 1, y_te != 1
    out: dict[str, Any] = {
        "mse_pos": float(np.mean((1.0 - prob[pos]) ** 2)),
        "mse_neg": float(np.mean(prob[neg] ** 2)),
        "tpr": float(np.mean(prob[pos] >= 0.5)),
        "tnr": float(np.mean(prob[neg] < 0.5)),
        "fit_s": fit_s,
        "threshold": float(m.threshold_),
        "best_C": float(m.best_C_),
        "n_train": int(y_tr.size),
        "n_test": int(y_te.size),
        "d": int(d["X_train"].shape[1]),
        "n_rows_used": int(d["keep"].size),
    }
    if p["control"] == "csvm":
        st = [str(s) for s in m.mip_status_.ravel().tolist()]
        out["mip_status"] = {s: st.count(s) for s in sorted(set(st))}
        out["mip_gap_max"] = float(np.max(m.mip_gap_))
    return out


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Per dataset and imposed TPR: fold means of MSE+ / MSE- / TPR / TNR per control."""
    figures: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    b = cfg.bootstrap
    lines = [
        f"Settings: kernel {b.kernel}, B = {b.n_bootstrap} bootstrap replicates (the "
        f"same draws for Ctrl1 and Ctrl2), C grid {list(b.C_grid)}, "
        f"{cfg.protocol.n_folds}-fold stratified outer CV (first "
        f"{cfg.protocol.folds_run} run), data.max_rows = {cfg.data.max_rows} (0 = all), "
        f"S5c MIQP time limit {cfg.mip.time_limit:g} s per fit. MSE+ = mean (1 - "
        "P(+|x))^2 over held-out positives, MSE- = mean P(+|x)^2 over held-out "
        "negatives; TPR / TNR of P(+|x) >= 1/2; mean over folds. Seconds are per "
        "ensemble fit. Ctrl2's S5c fits read C as S1 does (u_i = C c_i), so both "
        "controls use the same C grid in the same sense; t = 0 is the plain bootstrap "
        "SVM (one fit per fold, shown under both controls).",
        "",
    ]
    for name in cfg.data.datasets:
        du = {k: v for k, v in results.items() if k.startswith(f"{name}/")}
        if not du:
            continue
        first = next(iter(du.values()))
        folds_done = sorted({int(k.split("/")[1][5:]) for k in du})
        lines += [
            f"## {name}",
            "",
            f"Rows used {first['n_rows_used']}, features {first['d']}; folds finished: "
            f"{folds_done}.",
            "",
            "| imposed TPR | Ctrl1 MSE+ | Ctrl1 MSE- | Ctrl1 TPR / TNR | Ctrl2 MSE+ | "
            "Ctrl2 MSE- | Ctrl2 TPR / TNR | s per ensemble fit Ctrl1 / Ctrl2 | Ctrl2 "
            "MIQP status |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        tprs = ([0.0] if cfg.cost_sensitive.uncontrolled else []) + list(
            cfg.cost_sensitive.tprs
        )
        for t in tprs:
            cells, secs = ["0 (none)" if t == 0 else f"{t:.2f}"], []
            status: dict[str, int] = {}
            for control in CONTROLS:
                suffix = f"/tpr_{t:.2f}/{'none' if t == 0 else control}"
                us = [v for k, v in du.items() if k.endswith(suffix)]
                if not us:
                    cells += ["n/a"] * 3
                    secs.append("n/a")
                    continue
                mean = {
                    key: float(np.mean([u[key] for u in us]))
                    for key in ("mse_pos", "mse_neg", "tpr", "tnr", "fit_s")
                }
                fig = {k: v for k, v in mean.items() if k != "fit_s"}
                fig["n_folds"] = len(us)
                figures.setdefault(name, {}).setdefault(f"{t:.2f}", {})[
                    LABEL[control]
                ] = fig
                timings.setdefault(name, {}).setdefault(f"{t:.2f}", {})[
                    LABEL[control]
                ] = mean["fit_s"]
                cells += [
                    f"{mean['mse_pos']:.4f}",
                    f"{mean['mse_neg']:.4f}",
                    f"{mean['tpr']:.2f} / {mean['tnr']:.2f}",
                ]
                secs.append(f"{mean['fit_s']:.1f}")
                for u in us:
                    for k, v in u.get("mip_status", {}).items():
                        status[k] = status.get(k, 0) + v
            cells.append(" / ".join(secs))
            cells.append(
                ", ".join(f"{k} {v}" for k, v in sorted(status.items())) or "-"
            )
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return ProtocolReport(
        title="Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5)",
        figures=figures,
        text="\n".join(lines),
        timings=timings,
    )
