"""Implied posterior probability (SPEC S3; Nalbantov & Ivanov's tutorial).

1. Tutorial experiment (units ``german/tutorial`` and ``german/general``): german credit
   (numeric 24-feature version), first ``implied.german_rows`` rows train, last as many
   test, RBF, C = ``implied.C`` in the 1/2-weighted form, gamma = ``implied.gamma``,
   ``implied.n_models`` models. On the test half: calibration score (SPEC S3,
   ``mean |p - iso(p)|``) and AUC of (a) the raw scores of the z+ = 1/2 SVM min-max
   scaled to [0, 1], (b) Platt scaling of that SVM (5-fold), (c) the implied posterior
   and (d) the implied posterior with out-of-fold isotonic calibration; plus the
   calibration plot. ``german/general`` runs the general convention (tutorial eq. 12).
2. Repeated german splits (units ``german/split_XX``, ``implied.n_splits`` of them):
   split 0 is the tutorial's (first / last ``implied.german_rows`` rows), splits 1..
   are stratified random splits of the same sizes (``StratifiedShuffleSplit``, seed
   ``protocol.seed``), so both halves keep german's 30 % bad-credit share and the
   spread over splits measures the methods rather than a prior shift between halves
   (the tutorial split itself has 27 % / 33 %). Same model settings as the tutorial;
   methods raw_minmax, platt, implied (no isotonic step: it refits the sweep 5 more
   times per split). The report gives, per method, the mean, the standard deviation
   and two 95 % intervals over splits: the t interval of the mean and the
   Nadeau-Bengio corrected one (variance factor 1/J + n_test/n_train, since the
   splits share rows), plus paired Wilcoxon tests between methods over splits.
3. The same comparison on ``data.datasets`` with stratified k-fold cross-validation
   (one unit per dataset and fold; features preprocessed inside each fold;
   gamma="scale").
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

__all__ = ["METHODS", "SPLIT_METHODS", "assemble", "german_split", "run_unit", "units"]

METHODS = ("raw_minmax", "platt", "implied", "implied_isotonic")
#: methods of the repeated german splits
SPLIT_METHODS = ("raw_minmax", "platt", "implied")
_TITLES = {
    "raw_minmax": "raw score (min-max)",
    "platt": "Platt",
    "implied": "implied posterior",
    "implied_isotonic": "implied + isotonic",
}


def units(cfg: ExperimentConfig) -> list[Unit]:
    """The two german units, the repeated german splits, then one per (dataset, fold)."""
    out = [Unit("german/tutorial", {"part": "tutorial"})]
    out.append(Unit("german/general", {"part": "general"}))
    out += [
        Unit(f"german/split_{j:02d}", {"part": "split", "split": j})
        for j in range(cfg.implied.n_splits)
    ]
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
    isotonic: bool = True,
) -> dict[str, Any]:
    """Probabilities of the methods on ``Xte`` (models fitted on the train part).

    ``isotonic=False`` leaves out ``implied_isotonic`` (and its 5 extra sweeps).
    """
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
        calibration="isotonic" if isotonic else None,
        cv=5,
        random_state=cfg.protocol.seed,
    ).fit(Xtr, ytr)
    out["implied"] = imp.implied_posterior(Xte)
    if isotonic:
        out["implied_isotonic"] = imp.predict_proba(Xte)[:, 1]
        out["seconds"]["implied_with_5fold_isotonic"] = time.perf_counter() - t0
    else:
        out["seconds"]["implied"] = time.perf_counter() - t0
    st = [str(s) for s in np.asarray(imp.sweep_.status_).tolist()]
    out["sweep_status"] = {s: st.count(s) for s in sorted(set(st))}
    return out


def _scores(
    y: np.ndarray, probs: dict[str, Any], methods: tuple[str, ...] = METHODS
) -> dict[str, dict[str, float]]:
    from torchsvm.metrics import auc, calibration_score

    return {
        m: {
            "calibration": float(calibration_score(y, probs[m])),
            "auc": float(auc(y, probs[m])),
        }
        for m in methods
    }


def german_split(
    y: np.ndarray, n_rows: int, split: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Train / test row indices of german split ``split`` (``n_rows`` each).

    Split 0: the first ``n_rows`` rows train, the last ``n_rows`` test (the
    tutorial's). Split ``j >= 1``: the ``j``-th split of
    ``StratifiedShuffleSplit(train_size=n_rows, test_size=n_rows,
    random_state=seed)``, which does not depend on how many splits are drawn.
    """
    from sklearn.model_selection import StratifiedShuffleSplit

    n = y.size
    if 2 * n_rows > n:
        raise ValueError(
            f"german split needs 2 * german_rows <= {n} rows; got german_rows={n_rows}"
        )
    if split == 0:
        return np.arange(n_rows), np.arange(n - n_rows, n)
    sss = StratifiedShuffleSplit(
        n_splits=split, train_size=n_rows, test_size=n_rows, random_state=seed
    )
    for j, (train, test) in enumerate(sss.split(np.zeros((n, 1)), y), start=1):
        if j == split:
            return np.sort(train), np.sort(test)
    raise AssertionError("unreachable")  # pragma: no cover


def _german(cfg: ExperimentConfig, split: int = 0) -> tuple[np.ndarray, ...]:
    from torchsvm.data.datasets import load_dataset

    ds = load_dataset("german", cfg.data.data_dir or None, version="numeric")
    X = ds.X.to_numpy(dtype=np.float64)
    y = np.asarray(ds.y)
    train, test = german_split(y, cfg.implied.german_rows, split, cfg.protocol.seed)
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
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
    if part == "split":
        Xtr, ytr, Xte, yte = _german(cfg, unit.params["split"])
        probs = _compare(cfg, Xtr, ytr, Xte, gamma=imp.gamma, isotonic=False)
        return {
            "n_pos_train": int((ytr > 0).sum()),
            "n_pos_test": int((yte > 0).sum()),
            "metrics": _scores(yte, probs, SPLIT_METHODS),
            "seconds": probs["seconds"],
            "sweep_status": probs["sweep_status"],
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
    lines += _settings_lines(cfg)
    if g is not None:
        figures["german"] = {"metrics": g["metrics"], "sweep_status": g["sweep_status"]}
        timings["german"] = g["seconds"]
        lines += _tutorial_lines(cfg, g, gg)
    if gg is not None:
        figures["german_general"] = {k: v for k, v in gg.items() if k != "seconds"}
        timings["german_general"] = gg["seconds"]
    splits = {
        j: results[key]
        for j in range(cfg.implied.n_splits)
        if (key := f"german/split_{j:02d}") in results
    }
    if splits:
        figures["german_splits"] = _split_summary(splits)
        timings["german_splits"] = {j: r["seconds"] for j, r in sorted(splits.items())}
        lines += _split_lines(cfg, figures["german_splits"])
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


def _interval_summary(v: np.ndarray, n_test_over_train: float) -> dict[str, Any]:
    """Mean, sd and two 95 % intervals of per-split values ``v`` (J splits)."""
    from scipy import stats

    J = v.size
    mean = float(v.mean())
    sd = float(v.std(ddof=1)) if J > 1 else float("nan")
    q = float(stats.t.ppf(0.975, J - 1)) if J > 1 else float("nan")
    half = q * sd / np.sqrt(J)
    # Nadeau & Bengio (2003): random splits share rows, so the variance of the mean
    # is about (1/J + n_test/n_train) sd^2, not sd^2 / J
    half_nb = q * sd * np.sqrt(1.0 / J + n_test_over_train)
    return {
        "values": v.tolist(),
        "mean": mean,
        "sd": sd,
        "ci95_mean": [mean - half, mean + half],
        "ci95_corrected": [mean - half_nb, mean + half_nb],
        "range": [float(v.min()), float(v.max())],
    }


def _split_summary(splits: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Per method and metric: values over splits, intervals; paired tests."""
    from torchsvm.estimators.sensitivity import paired_fold_test

    keys = sorted(splits)
    out: dict[str, Any] = {"splits": keys, "n_splits_done": len(keys)}
    for m in SPLIT_METHODS:
        out[m] = {
            k: _interval_summary(
                np.array([splits[j]["metrics"][m][k] for j in keys]), 1.0
            )
            for k in ("calibration", "auc")
        }
    tests: dict[str, Any] = {}
    if len(keys) >= 2:
        for a, b in (("implied", "platt"), ("implied", "raw_minmax")):
            tests[f"{a} vs {b}"] = {
                k: dataclasses.asdict(
                    paired_fold_test(out[a][k]["values"], out[b][k]["values"])
                )
                for k in ("calibration", "auc")
            }
    out["paired_tests"] = tests
    status: dict[str, int] = {}
    for j in keys:
        for st, c in splits[j]["sweep_status"].items():
            status[st] = status.get(st, 0) + c
    out["sweep_status"] = status
    return out


def _settings_lines(cfg: ExperimentConfig) -> list[str]:
    imp = cfg.implied
    return [
        "## Settings: this run next to the tutorial's (Nalbantov & Ivanov)",
        "",
        "| setting | tutorial | this run |",
        "|---|---|---|",
        "| data | german credit, numeric 24-feature version | the same |",
        f"| split | first 500 rows train, last 500 test | first / last "
        f"{imp.german_rows} (split 0), plus {max(imp.n_splits - 1, 0)} stratified "
        "random splits of the same sizes **(added)** |",
        f"| kernel | RBF, gamma = 0.001 | RBF, gamma = {imp.gamma} |",
        f"| C | C+ = C- = 10, 1/2-weighted | {imp.C}, 1/2-weighted |",
        f"| models | 201 (step 0.005, ends fictitious) | {imp.n_models} |",
        f"| feature scaling | not stated in SPEC S3 | {imp.german_scale} |",
        "| calibration score | mean abs(p - iso(p)) on the test half | the same |",
        "| Platt | yes | CalibratedSVC(method='sigmoid', cv=5) |",
        "",
    ]


def _split_lines(cfg: ExperimentConfig, sp: dict[str, Any]) -> list[str]:
    imp = cfg.implied
    J = sp["n_splits_done"]
    lines = [
        f"## German credit, {J} repeated {imp.german_rows} / {imp.german_rows} splits",
        "",
        "Split 0 = the tutorial's first / last rows; splits 1.. stratified random "
        f"(StratifiedShuffleSplit, seed {cfg.protocol.seed}). Same settings as the "
        f"tutorial (RBF, gamma = {imp.gamma}, C = {imp.C} 1/2-weighted, "
        f"{imp.n_models} models, features: {imp.german_scale}). Sweep status over all "
        f"splits: {sp['sweep_status']}. Mean (sd) over splits; 95 % intervals: the "
        "t interval of the mean, and the Nadeau-Bengio corrected one (variance "
        "factor 1/J + n_test/n_train = 1/J + 1: the splits share rows, so the naive "
        "interval is too narrow); range = min-max over splits.",
        "",
        "| method | calibration mean (sd) | 95 % CI of mean | corrected 95 % | range | "
        "AUC mean (sd) | 95 % CI of mean | corrected 95 % | range |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cells(d: dict[str, Any]) -> str:
        lo, hi = d["ci95_mean"]
        clo, chi = d["ci95_corrected"]
        return (
            f"{d['mean']:.4f} ({d['sd']:.4f}) | [{lo:.4f}, {hi:.4f}] | "
            f"[{clo:.4f}, {chi:.4f}] | {d['range'][0]:.4f}-{d['range'][1]:.4f}"
        )

    for m in SPLIT_METHODS:
        lines.append(f"| {m} | {cells(sp[m]['calibration'])} | {cells(sp[m]['auc'])} |")
    if sp["paired_tests"]:
        lines += [
            "",
            "Paired two-sided tests over splits (difference = first minus second; "
            "Wilcoxon signed-rank primary, paired t beside it; optimistic, as the "
            "splits share rows).",
            "",
            "| methods | mean d(calibration) | Wilcoxon p | t p | mean dAUC | "
            "Wilcoxon p | t p |",
            "|---|---|---|---|---|---|---|",
        ]
        for pair, t in sp["paired_tests"].items():
            c, a = t["calibration"], t["auc"]
            lines.append(
                f"| {pair} | {c['mean_diff']:+.4f} | {c['wilcoxon_pvalue']:.3g} | "
                f"{c['t_pvalue']:.3g} | {a['mean_diff']:+.4f} | "
                f"{a['wilcoxon_pvalue']:.3g} | {a['t_pvalue']:.3g} |"
            )
    lines.append("")
    return lines


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
