"""Reproduce the implied-posterior experiments of SPEC S3.

1. Tutorial experiment: german credit (numeric 24-feature version), first 500 rows train,
   last 500 test, RBF kernel, C = 10 in the 1/2-weighted form, gamma = 0.001, 201 models.
   On the test half: calibration score (SPEC S3, ``mean |p - iso(p)|``) and AUC of
   (a) the raw scores of the z+ = 1/2 SVM min-max scaled to [0, 1], (b) Platt scaling
   of that SVM (5-fold out-of-fold scores inside the training half), (c) the implied
   posterior and (d) the implied posterior with out-of-fold isotonic calibration; plus
   the calibration plot (isotonic step function, 10-bin dots, diagonal).
2. The same comparison on more staged datasets with stratified k-fold cross-validation
   (features standardised inside each fold; categorical -> dummies; gamma="scale").

Writes docs/results/implied.md + implied.json (+ implied_*.png). Finished sections are
cached in the JSON (written atomically) and skipped on rerun; ``--tiny`` is a
seconds-long smoke run writing implied_tiny.*.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchsvm.data.datasets import load_dataset
from torchsvm.data.preprocess import make_preprocessor_for
from torchsvm.data.resample import outer_folds
from torchsvm.estimators.calibration import CalibratedSVC
from torchsvm.estimators.implied import ImpliedPosteriorSVC
from torchsvm.estimators.svc import WeightedSVC
from torchsvm.metrics import auc, calibration_score

logger = logging.getLogger("reproduce_implied")
REPO = Path(__file__).resolve().parents[1]
METHODS = ("raw_minmax", "platt", "implied", "implied_isotonic")


def _save(path: Path, obj: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_jsonable))
    os.replace(tmp, path)


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.integer | np.floating):
        return o.item()
    return str(o)


def _minmax(z: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.clip((z - lo) / max(hi - lo, 1e-300), 0.0, 1.0)


def _compare(
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xte: np.ndarray,
    args: argparse.Namespace,
    gamma: float | str,
) -> dict[str, Any]:
    """Probabilities of the four methods on ``Xte`` (models fitted on the train part)."""
    out: dict[str, Any] = {"seconds": {}}
    t0 = time.perf_counter()
    # the z+ = 1/2 member of the sweep: bound C/2 per class (1/2-weighted form)
    svm = WeightedSVC(C=args.C / 2, gamma=gamma, tol=args.tol).fit(Xtr, ytr)
    f_tr, f_te = svm.decision_function(Xtr), svm.decision_function(Xte)
    out["raw_minmax"] = _minmax(f_te, float(f_tr.min()), float(f_tr.max()))
    out["seconds"]["svm"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    platt = CalibratedSVC(
        WeightedSVC(C=args.C / 2, gamma=gamma, tol=args.tol), method="sigmoid", cv=5
    ).fit(Xtr, ytr)
    out["platt"] = platt.predict_proba(Xte)[:, 1]
    out["seconds"]["platt"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    imp = ImpliedPosteriorSVC(
        C=args.C,
        gamma=gamma,
        n_models=args.n_models,
        tol=args.tol,
        device=args.device,
        calibration="isotonic",
        cv=5,
        random_state=0,
    ).fit(Xtr, ytr)
    out["implied"] = imp.implied_posterior(Xte)
    out["implied_isotonic"] = imp.predict_proba(Xte)[:, 1]
    out["seconds"]["implied_with_5fold_isotonic"] = time.perf_counter() - t0
    out["sweep_status"] = {
        s: int((imp.sweep_.status_ == s).sum())
        for s in set(imp.sweep_.status_.tolist())
    }
    return out


def _scores(y: np.ndarray, probs: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {
        m: {"calibration": calibration_score(y, probs[m]), "auc": auc(y, probs[m])}
        for m in METHODS
    }


def german_section(args: argparse.Namespace) -> dict[str, Any]:
    """Tutorial experiment: first 500 / last 500 rows of german (numeric)."""
    ds = load_dataset("german", args.data_dir, version="numeric")
    X = ds.X.to_numpy(dtype=np.float64)
    y = ds.y
    n_half = 60 if args.tiny else 500
    Xtr, ytr, Xte, yte = X[:n_half], y[:n_half], X[-n_half:], y[-n_half:]
    if args.german_scale == "standard":
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    probs = _compare(Xtr, ytr, Xte, args, gamma=args.gamma)
    return {
        "n_train": int(ytr.size),
        "n_test": int(yte.size),
        "n_pos_train": int((ytr > 0).sum()),
        "n_pos_test": int((yte > 0).sum()),
        "scale": args.german_scale,
        "gamma": args.gamma,
        "C": args.C,
        "n_models": args.n_models,
        "metrics": _scores(yte, probs),
        "seconds": probs["seconds"],
        "sweep_status": probs["sweep_status"],
        "y_test": yte,
        "probs": {m: probs[m] for m in METHODS},
    }


def german_general_section(args: argparse.Namespace) -> dict[str, Any]:
    """Same split, general convention (tutorial eq. 12, uniform implied-posterior grid)."""
    ds = load_dataset("german", args.data_dir, version="numeric")
    X = ds.X.to_numpy(dtype=np.float64)
    n_half = 60 if args.tiny else 500
    Xtr, ytr, Xte, yte = X[:n_half], ds.y[:n_half], X[-n_half:], ds.y[-n_half:]
    if args.german_scale == "standard":
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    t0 = time.perf_counter()
    imp = ImpliedPosteriorSVC(
        C=args.C,
        gamma=args.gamma,
        n_models=args.n_models,
        tol=args.tol,
        device=args.device,
        convention="general",
    ).fit(Xtr, ytr)
    p = imp.implied_posterior(Xte)
    return {
        "calibration": calibration_score(yte, p),
        "auc": auc(yte, p),
        "seconds": time.perf_counter() - t0,
        "z_pos_range": [float(imp.z_pos_.min()), float(imp.z_pos_.max())],
        "z_neg_range": [float(imp.z_neg_.min()), float(imp.z_neg_.max())],
    }


def cv_section(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """k-fold comparison on one staged dataset (fold-wise preprocessing)."""
    ds = load_dataset(name, args.data_dir)
    y = ds.y
    X = ds.X
    if args.tiny:
        keep = np.sort(np.random.default_rng(0).choice(y.size, 80, replace=False))
        X, y = X.iloc[keep].reset_index(drop=True), y[keep]
    folds = outer_folds(y, n_splits=args.folds, random_state=0)
    per_fold: list[dict[str, Any]] = []
    seconds = 0.0
    for train, test in folds:
        pre = make_preprocessor_for(ds).fit(X.iloc[train])
        Xtr, Xte = pre.transform(X.iloc[train]), pre.transform(X.iloc[test])
        probs = _compare(Xtr, y[train], Xte, args, gamma="scale")
        per_fold.append(_scores(y[test], probs))
        seconds += sum(probs["seconds"].values())
    summary = {
        m: {
            k: (
                float(np.mean([f[m][k] for f in per_fold])),
                float(np.std([f[m][k] for f in per_fold])),
            )
            for k in ("calibration", "auc")
        }
        for m in METHODS
    }
    return {
        "n": int(y.size),
        "n_pos": int((y > 0).sum()),
        "folds": args.folds,
        "summary": summary,
        "per_fold": per_fold,
        "seconds": seconds,
    }


def _calibration_plot(sec: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.isotonic import IsotonicRegression

    y01 = (np.asarray(sec["y_test"]) > 0).astype(float)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2))
    titles = {
        "raw_minmax": "raw score (min-max)",
        "platt": "Platt",
        "implied": "implied posterior",
        "implied_isotonic": "implied + isotonic",
    }
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
            title=f"{titles[m]}\ncal={sc['calibration']:.3f} AUC={sc['auc']:.3f}",
            xlabel="predicted P(bad credit)",
            xlim=(0, 1),
            ylim=(0, 1),
        )
    axes[0].set_ylabel("observed frequency")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def _markdown(res: dict[str, Any], command: str, plot: str | None) -> str:
    g = res["german"]
    lines = [
        "# Implied posterior probability (SPEC S3)",
        "",
        f"Command: `{command}`",
        "",
        "## German credit (numeric), first 500 train / last 500 test",
        "",
        f"RBF, gamma = {g['gamma']}, C = {g['C']} in the 1/2-weighted form (bounds z+ C "
        f"and (1 - z+) C; libsvm C = {g['C'] / 2:g} per class at z+ = 1/2), "
        f"{g['n_models']} models (the two ends fictitious), features: {g['scale']}. "
        f"Train {g['n_train']} rows ({g['n_pos_train']} bad), test {g['n_test']} "
        f"({g['n_pos_test']} bad). Sweep solver status: {g['sweep_status']}.",
        "",
        "| method | calibration score (lower = better) | AUC |",
        "|---|---|---|",
    ]
    for m in METHODS:
        s = g["metrics"][m]
        lines.append(f"| {m} | {s['calibration']:.4f} | {s['auc']:.4f} |")
    gg = res.get("german_general")
    if gg:
        lines.append(
            f"| implied, general convention (eq. 12) | {gg['calibration']:.4f} | "
            f"{gg['auc']:.4f} |"
        )
        lines += [
            "",
            "General convention: z+ in "
            f"[{gg['z_pos_range'][0]:.4f}, {gg['z_pos_range'][1]:.4f}], z- in "
            f"[{gg['z_neg_range'][0]:.4f}, {gg['z_neg_range'][1]:.4f}] (bounds z+ C, "
            "z- C), chosen so the implied posteriors of eq. 12 are the uniform grid; "
            "no calibration.",
        ]
    lines += [
        "",
        "Wall seconds (1 torch thread on a shared 2-core machine): "
        + ", ".join(f"{k} {v:.1f}" for k, v in g["seconds"].items()),
        "",
    ]
    if plot:
        lines += [f"![calibration plot]({plot})", ""]
    lines += [
        "raw_minmax: scores of the z+ = 1/2 SVM scaled by the training scores' min/max; "
        "platt: CalibratedSVC(method='sigmoid', cv=5) of the same SVM; implied: SPEC S3 "
        "vote fraction; implied_isotonic: isotonic regression fitted on 5-fold "
        "out-of-fold implied posteriors of the training half. The calibration score "
        "fits the isotonic map on the test half itself (SPEC S3).",
        "",
    ]
    cv = res.get("cv", {})
    if cv:
        k = next(iter(cv.values()))["folds"]
        lines += [
            f"## Staged datasets, {k}-fold stratified cross-validation",
            "",
            "Standardised numeric features and 0/1 dummies fitted on each training fold; "
            f"RBF with gamma='scale', C = {g['C']} (1/2-weighted), {g['n_models']} models. "
            "Mean (sd) over folds.",
            "",
            "| dataset | n (+) | "
            + " | ".join(f"{m} cal" for m in METHODS)
            + " | "
            + " | ".join(f"{m} AUC" for m in METHODS)
            + " |",
            "|---|---|" + "---|" * (2 * len(METHODS)),
        ]
        for name, sec in cv.items():
            s = sec["summary"]
            cells = [
                f"{s[m]['calibration'][0]:.3f} ({s[m]['calibration'][1]:.3f})"
                for m in METHODS
            ]
            cells += [f"{s[m]['auc'][0]:.3f} ({s[m]['auc'][1]:.3f})" for m in METHODS]
            lines.append(
                f"| {name} | {sec['n']} ({sec['n_pos']}) | " + " | ".join(cells) + " |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "results")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--gamma", type=float, default=0.001)
    ap.add_argument("--n-models", type=int, default=201)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--german-scale", choices=("none", "standard"), default="none")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument(
        "--datasets",
        nargs="*",
        default=[
            "heart_statlog",
            "liver_bupa",
            "diabetes",
            "ionosphere",
            "sonar",
            "wisconsin",
        ],
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1 avoids OpenMP spin-waits on a shared machine)",
    )
    ap.add_argument("--fresh", action="store_true", help="ignore cached sections")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    if args.tiny:
        args.n_models, args.folds, args.datasets = 11, 3, args.datasets[:1]
    name = "implied_tiny" if args.tiny else "implied"
    args.out.mkdir(parents=True, exist_ok=True)
    jpath = args.out / f"{name}.json"
    res: dict[str, Any] = (
        {} if args.fresh or not jpath.exists() else json.loads(jpath.read_text())
    )
    if "german" not in res:
        logger.info("german: tutorial split")
        res["german"] = german_section(args)
        _save(jpath, res)
    if "german_general" not in res:
        logger.info("german: general convention")
        res["german_general"] = german_general_section(args)
        _save(jpath, res)
    res.setdefault("cv", {})
    for ds in args.datasets:
        if ds in res["cv"]:
            continue
        logger.info("%s: %d-fold CV", ds, args.folds)
        res["cv"][ds] = cv_section(ds, args)
        _save(jpath, res)
    plot = f"{name}_german_calibration.png"
    _calibration_plot(res["german"], args.out / plot)
    command = "python scripts/reproduce_implied.py " + " ".join(
        sys.argv[1:] if argv is None else list(argv)
    )
    md = _markdown(res, command.strip(), plot)
    tmp = args.out / f"{name}.md.tmp"
    tmp.write_text(md)
    os.replace(tmp, args.out / f"{name}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
