"""Implied posterior probability (SPEC S3; Nalbantov & Ivanov's tutorial).

1. Tutorial experiment (units ``german/tutorial`` and ``german/general``): german credit
   (numeric 24-feature version), first ``implied.german_rows`` rows train, last as many
   test, RBF, C = ``implied.C`` in the 1/2-weighted form, gamma = ``implied.gamma``,
   ``implied.n_models`` models. On the test half: calibration score (SPEC S3,
   ``mean |p - iso(p)|``) and AUC of (a) the raw scores of the z+ = 1/2 SVM min-max
   scaled to [0, 1], (b) Platt scaling of that SVM (5-fold), (c) the implied posterior
   and (d) the implied posterior with out-of-fold isotonic calibration; plus the
   calibration plot. ``german/general`` runs the general convention (tutorial eq. 12).
2. The same comparison on ``data.datasets`` with stratified k-fold cross-validation
   (one unit per dataset and fold; features preprocessed inside each fold;
   gamma="scale").
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = ["METHODS", "assemble", "run_unit", "units"]

METHODS = ("raw_minmax", "platt", "implied", "implied_isotonic")
_TITLES = {
    "raw_minmax": "raw score (min-max)",
    "platt": "Platt",
    "implied": "implied posterior",
    "implied_isotonic": "implied + isotonic",
}


def units(cfg: ExperimentConfig) -> list[Unit]:
    """The two german units, then one per (dataset, fold)."""
    out = [Unit("german/tutorial", {"part": "tutorial"})]
    out.append(Unit("german/general", {"part": "general"}))
    out += [
        Unit(f"cv/{name}/fold_{k:02d}", {"part": "cv", "dataset": name, "fold": k})
        for name in cfg.data.datasets
        for k in range(cfg.protocol.folds_run)
    ]
    return out


def _minmax(z: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.clip((z - lo) / max(hi - lo, 1e-300), 0.0, 1.0)


def _compare(
    cfg: ExperimentConfig,
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xte: np.ndarray,
    gamma: float | str,
) -> dict[str, Any]:
    """Probabilities of the four methods on ``Xte`` (models fitted on the train part)."""
    from torchsvm.estimators.calibration import CalibratedSVC
    from torchsvm.estimators.implied import ImpliedPosteriorSVC
    from torchsvm.estimators.svc import WeightedSVC

    C, tol = cfg.implied.C, cfg.solver.tol
    out: dict[str, Any] = {"seconds": {}}
    t0 = time.perf_counter()
    # the z+ = 1/2 member of the sweep: bound C/2 per class (1/2-weighted form)
    svm = WeightedSVC(C=C / 2, gamma=gamma, tol=tol).fit(Xtr, ytr)
    f_tr, f_te = svm.decision_function(Xtr), svm.decision_function(Xte)
    out["raw_minmax"] = _minmax(f_te, float(f_tr.min()), float(f_tr.max()))
    out["seconds"]["svm"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    platt = CalibratedSVC(
        WeightedSVC(C=C / 2, gamma=gamma, tol=tol), method="sigmoid", cv=5
    ).fit(Xtr, ytr)
    out["platt"] = platt.predict_proba(Xte)[:, 1]
    out["seconds"]["platt"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    imp = ImpliedPosteriorSVC(
        C=C,
        gamma=gamma,
        n_models=cfg.implied.n_models,
        tol=tol,
        device=cfg.device,
        calibration="isotonic",
        cv=5,
        random_state=cfg.protocol.seed,
    ).fit(Xtr, ytr)
    out["implied"] = imp.implied_posterior(Xte)
    out["implied_isotonic"] = imp.predict_proba(Xte)[:, 1]
    out["seconds"]["implied_with_5fold_isotonic"] = time.perf_counter() - t0
    st = [str(s) for s in np.asarray(imp.sweep_.status_).tolist()]
    out["sweep_status"] = {s: st.count(s) for s in sorted(set(st))}
    return out


def _scores(y: np.ndarray, probs: dict[str, Any]) -> dict[str, dict[str, float]]:
    from torchsvm.metrics import auc, calibration_score

    return {
        m: {
            "calibration": float(calibration_score(y, probs[m])),
            "auc": float(auc(y, probs[m])),
        }
        for m in METHODS
    }


def _german(cfg: ExperimentConfig) -> tuple[np.ndarray, ...]:
    from torchsvm.data.datasets import load_dataset

    ds = load_dataset("german", cfg.data.data_dir or None, version="numeric")
    X = ds.X.to_numpy(dtype=np.float64)
    n = cfg.implied.german_rows
    Xtr, ytr, Xte, yte = X[:n], ds.y[:n], X[-n:], ds.y[-n:]
    if cfg.implied.german_scale == "standard":
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    return Xtr, np.asarray(ytr), Xte, np.asarray(yte)


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """One german part, or one CV fold of one dataset."""
    from torchsvm.estimators.implied import ImpliedPosteriorSVC
    from torchsvm.metrics import auc, calibration_score

    part = unit.params["part"]
    imp = cfg.implied
    if part == "tutorial":
        Xtr, ytr, Xte, yte = _german(cfg)
        probs = _compare(cfg, Xtr, ytr, Xte, gamma=imp.gamma)
        return {
            "n_train": int(ytr.size),
            "n_test": int(yte.size),
            "n_pos_train": int((ytr > 0).sum()),
            "n_pos_test": int((yte > 0).sum()),
            "metrics": _scores(yte, probs),
            "seconds": probs["seconds"],
            "sweep_status": probs["sweep_status"],
            "y_test": yte.astype(int).tolist(),
            "probs": {m: np.asarray(probs[m]).tolist() for m in METHODS},
        }
    if part == "general":
        Xtr, ytr, Xte, yte = _german(cfg)
        t0 = time.perf_counter()
        est = ImpliedPosteriorSVC(
            C=imp.C,
            gamma=imp.gamma,
            n_models=imp.n_models,
            tol=cfg.solver.tol,
            device=cfg.device,
            convention="general",
        ).fit(Xtr, ytr)
        p = est.implied_posterior(Xte)
        return {
            "calibration": float(calibration_score(yte, p)),
            "auc": float(auc(yte, p)),
            "seconds": time.perf_counter() - t0,
            "z_pos_range": [float(est.z_pos_.min()), float(est.z_pos_.max())],
            "z_neg_range": [float(est.z_neg_.min()), float(est.z_neg_.max())],
        }
    d = load_fold_data(cfg, unit.params["dataset"], unit.params["fold"])
    probs = _compare(cfg, d["X_train"], d["y_train"], d["X_test"], gamma="scale")
    return {
        "metrics": _scores(d["y_test"], probs),
        "seconds": float(sum(probs["seconds"].values())),
        "n": int(d["keep"].size),
        "n_pos": int((np.asarray(d["dataset"].y)[d["keep"]] > 0).sum()),
    }


def _tutorial_lines(cfg: ExperimentConfig, g: dict[str, Any], gg: Any) -> list[str]:
    imp = cfg.implied
    lines = [
        f"## German credit (numeric), first {imp.german_rows} train / last "
        f"{imp.german_rows} test",
        "",
        f"RBF, gamma = {imp.gamma}, C = {imp.C} in the 1/2-weighted form (bounds z+ C "
        f"and (1 - z+) C; libsvm C = {imp.C / 2:g} per class at z+ = 1/2), "
        f"{imp.n_models} models (the two ends fictitious), features: "
        f"{imp.german_scale}. Train {g['n_train']} rows ({g['n_pos_train']} bad), test "
        f"{g['n_test']} ({g['n_pos_test']} bad). Sweep solver status: "
        f"{g['sweep_status']}.",
        "",
        "| method | calibration score (lower = better) | AUC |",
        "|---|---|---|",
    ]
    for m in METHODS:
        s = g["metrics"][m]
        lines.append(f"| {m} | {s['calibration']:.4f} | {s['auc']:.4f} |")
    if gg:
        lines.append(
            f"| implied, general convention (eq. 12) | {gg['calibration']:.4f} | "
            f"{gg['auc']:.4f} |"
        )
        lines += [
            "",
            f"General convention: z+ in [{gg['z_pos_range'][0]:.4f}, "
            f"{gg['z_pos_range'][1]:.4f}], z- in [{gg['z_neg_range'][0]:.4f}, "
            f"{gg['z_neg_range'][1]:.4f}] (bounds z+ C, z- C), chosen so the implied "
            "posteriors of eq. 12 are the uniform grid; no calibration.",
        ]
    lines += [
        "",
        "Wall seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in g["seconds"].items()),
        "",
        "![calibration plot](implied_german_calibration.png)",
        "",
        "raw_minmax: scores of the z+ = 1/2 SVM scaled by the training scores' min/max; "
        "platt: CalibratedSVC(method='sigmoid', cv=5) of the same SVM; implied: SPEC S3 "
        "vote fraction; implied_isotonic: isotonic regression fitted on 5-fold "
        "out-of-fold implied posteriors of the training half. The calibration score "
        "fits the isotonic map on the test half itself (SPEC S3).",
        "",
    ]
    return lines


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """German tables, the per-dataset CV table (mean, sd over folds), the plot."""
    figures: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    lines: list[str] = []
    g = results.get("german/tutorial")
    gg = results.get("german/general")
    if g is not None:
        figures["german"] = {"metrics": g["metrics"], "sweep_status": g["sweep_status"]}
        timings["german"] = g["seconds"]
        lines += _tutorial_lines(cfg, g, gg)
    if gg is not None:
        figures["german_general"] = {k: v for k, v in gg.items() if k != "seconds"}
        timings["german_general"] = gg["seconds"]
    cv_rows = []
    for name in cfg.data.datasets:
        per = [v for k, v in results.items() if k.startswith(f"cv/{name}/")]
        if not per:
            continue
        summary = {
            m: {
                k: [
                    float(np.mean([f["metrics"][m][k] for f in per])),
                    float(np.std([f["metrics"][m][k] for f in per])),
                ]
                for k in ("calibration", "auc")
            }
            for m in METHODS
        }
        figures.setdefault("cv", {})[name] = {
            "n": per[0]["n"],
            "n_pos": per[0]["n_pos"],
            "folds_done": len(per),
            "summary": summary,
        }
        timings.setdefault("cv", {})[name] = float(sum(f["seconds"] for f in per))
        cells = [
            f"{summary[m]['calibration'][0]:.3f} ({summary[m]['calibration'][1]:.3f})"
            for m in METHODS
        ]
        cells += [
            f"{summary[m]['auc'][0]:.3f} ({summary[m]['auc'][1]:.3f})" for m in METHODS
        ]
        cv_rows.append(
            f"| {name} | {per[0]['n']} ({per[0]['n_pos']}) | "
            + " | ".join(cells)
            + " |"
        )
    if cv_rows:
        lines += [
            f"## Staged datasets, {cfg.protocol.n_folds}-fold stratified cross-validation",
            "",
            "Standardised numeric features and 0/1 dummies fitted on each training fold; "
            f"RBF with gamma='scale', C = {cfg.implied.C} (1/2-weighted), "
            f"{cfg.implied.n_models} models. Mean (sd) over folds.",
            "",
            "| dataset | n (+) | "
            + " | ".join(f"{m} cal" for m in METHODS)
            + " | "
            + " | ".join(f"{m} AUC" for m in METHODS)
            + " |",
            "|---|---|" + "---|" * (2 * len(METHODS)),
            *cv_rows,
            "",
        ]

    def plot(out: Path) -> list[Path]:
        if g is None:
            return []
        return [_calibration_plot(g, out / "implied_german_calibration.png")]

    return ProtocolReport(
        title="Implied posterior probability (SPEC S3)",
        figures=figures,
        text="\n".join(lines),
        timings=timings,
        plot=plot,
    )


def _calibration_plot(sec: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.isotonic import IsotonicRegression

    y01 = (np.asarray(sec["y_test"]) > 0).astype(float)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    for ax, m in zip(axes, METHODS, strict=True):
        p = np.asarray(sec["probs"][m], dtype=float)
        order = np.argsort(p)
        iso = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(p, y01)
        ax.step(p[order], iso.predict(p[order]), where="post", label="isotonic fit")
        edges = np.linspace(0, 1, 11)
        idx = np.clip(np.digitize(p, edges) - 1, 0, 9)
        mids = [
            (p[idx == b].mean(), y01[idx == b].mean())
            for b in range(10)
            if (idx == b).any()
        ]
        if mids:
            mx, my = zip(*mids, strict=True)
            ax.plot(mx, my, "o", label="10-bin frequency")
        ax.plot([0, 1], [0, 1], "k:", lw=0.8, label="diagonal")
        sc = sec["metrics"][m]
        ax.set(
            title=f"{_TITLES[m]}\ncal={sc['calibration']:.3f} AUC={sc['auc']:.3f}",
            xlabel="predicted P(bad credit)",
            xlim=(0, 1),
            ylim=(0, 1),
        )
    axes[0].set_ylabel("observed frequency")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)
