"""Out-of-bag calibration on votes vs on decision values, on the protocol's own folds.

Issue 17's check of the decision-value calibration (``BootstrapProbabilitySVC(
calibration_input="scores")``). For each dataset and outer fold of a probabilities
config (the same folds, preprocessing, seeds and settings as the experiment's units:
``torchsvm.experiments.probabilities._fit_unit``, so its rows equal the unit's), one
bootstrap fit gives the raw ensemble and every out-of-bag calibration below; Platt is the
protocol's single-SVM baseline (``CalibratedSVC(WeightedSVC(C = C_{r*}), "sigmoid")``
on 5 inner folds). Prints, per dataset, the fold-mean held-out MSE (Brier score) and AUC
of each row, the datasets on which each row beats Platt / keeps the raw ensemble, and
what ``auto`` chose (``oob_auto_one_se``: ``calibration_rule="one_se"``). The last
column, ``test_fold_sigmoid``, is a diagnostic that reads the test labels: a sigmoid of
the mean decision value fitted on the test fold itself, i.e. about as low as a sigmoid
calibration of these scores can get. ``--jsonl`` keeps per-fold results and resumes
from them.

    python scripts/oob_calibration_check.py --config configs/probabilities-rbf.toml \\
        --datasets divorce sonar heart_statlog --folds 0 1 2 3 4 5 6 7 8 9
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from torchsvm.config import load_config
from torchsvm.experiments import probabilities as proto
from torchsvm.experiments.runner import load_fold_data
from torchsvm.metrics import summarize_probabilities

#: rows of the table: the experiment's out-of-bag rows plus the other single
#: calibrators, so that votes and decision values are compared calibrator by calibrator
CALIBRATIONS = {
    "oob_vote_isotonic": {"calibration": "isotonic", "calibration_input": "votes"},
    "oob_vote_sigmoid": {"calibration": "sigmoid", "calibration_input": "votes"},
    "oob_vote_auto": {"calibration": "auto", "calibration_input": "votes"},
    "oob_score_isotonic": {"calibration": "isotonic", "calibration_input": "scores"},
    "oob_score_sigmoid": {"calibration": "sigmoid", "calibration_input": "scores"},
    "oob_score_beta": {"calibration": "beta", "calibration_input": "scores"},
    "oob_auto_votes_or_scores": {"calibration": "auto", "calibration_input": "auto"},
    "oob_auto_one_se": {
        "calibration": "auto",
        "calibration_input": "auto",
        "calibration_rule": "one_se",
    },
}
#: rows that read Platt's single SVM as well as the ensemble (``_hybrid_rows``): the
#: full-data SVM at ``C_{r*}`` (Platt's refit) with an out-of-bag sigmoid, and
#: combinations of Platt with the ensemble's out-of-bag Platt on decision values
HYBRIDS = (
    "full_svm_oob_mean_sigmoid",
    "full_svm_oob_pooled_sigmoid",
    "blend_platt_oob_score_sigmoid",
    "stack_platt_oob_score",
)
ROWS = ("bootstrap_ensemble", *CALIBRATIONS, *HYBRIDS, "platt")
#: diagnostic, not a method: Platt's sigmoid of the ensemble's mean decision value fitted
#: on the test fold itself (through the logit of oob_score_sigmoid's held-out
#: probabilities, an affine map of that value, so the fit is the same). How low a sigmoid
#: of these scores gets with the test labels known; compare with Platt's held-out MSE.
DIAGNOSTIC = "test_fold_sigmoid"


def _test_fold_sigmoid(p_score_sigmoid: list[float], y: list[int]) -> float:
    """MSE of a sigmoid fitted on the test fold to the mean decision value's logit."""
    from scipy.special import logit

    from torchsvm.estimators.calibration import PlattCalibrator

    z = logit(np.clip(np.asarray(p_score_sigmoid), 1e-15, 1.0 - 1e-15))
    y01 = (np.asarray(y) > 0).astype(np.float64)
    q = PlattCalibrator().fit(z, y01).predict_proba(z)[:, 1]
    return float(np.mean((q - y01) ** 2))


#: blend weights searched by ``blend_platt_oob_score_sigmoid``
BLEND_GRID = np.linspace(0.0, 1.0, 21)


def _hybrid_rows(
    boot, platt, A_tr: np.ndarray, y_tr: np.ndarray, A_te: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Held-out P(+|x) of the rows in ``HYBRIDS``; nothing here reads the test labels.

    ``f`` is Platt's SVM refitted on all training rows at ``C_{r*}``
    (``platt.estimator_``), ``F[b, i]`` replicate ``b``'s score at ``C_{r*}`` on
    training row ``i`` and ``O[b, i]`` whether ``i`` is out of bag for ``b``.

    - ``full_svm_oob_mean_sigmoid``: Platt's sigmoid fitted on the out-of-bag mean
      ``mean_{b: O[b, i]} F[b, i]`` (one pair per row), applied to ``f(x)``: Platt's
      ranking with the ensemble's calibration set instead of 5 inner folds.
    - ``full_svm_oob_pooled_sigmoid``: the same on every out-of-bag pair
      ``(F[b, i], y_i)``, each weighted ``1 / #{b: O[b, i]}`` so that every row counts
      once: single-replicate scores, whose spread is a single SVM's, not the mean's.
    - ``blend_platt_oob_score_sigmoid``: ``w P_platt + (1 - w) P_oob``, with ``P_oob``
      the ensemble's out-of-bag Platt on the mean decision value (the row
      ``oob_score_sigmoid``) and ``w`` in ``BLEND_GRID`` minimising the Brier score of
      the same blend of the training rows' held-out probabilities (Platt's calibrator
      on its inner out-of-fold scores, the ensemble's on the out-of-bag mean). This is
      ``BootstrapProbabilitySVC(calibration="sigmoid", calibration_input="scores",
      blend_platt="oob")`` with ``random_state`` the fold's seed (same probabilities).
    - ``stack_platt_oob_score``: a logistic regression (unpenalised, on Platt's
      regularised targets) of ``y`` on Platt's inner out-of-fold score and the
      out-of-bag mean decision value, applied to ``(f(x), s(x))``.

    Returns the rows and the chosen blend weight / stacking coefficients.
    """
    from sklearn.linear_model import LogisticRegression

    from torchsvm.estimators.calibration import PlattCalibrator

    y_pm = np.where(y_tr == boot.classes_[1], 1, -1)
    y01 = (y_pm > 0).astype(np.float64)
    O = boot.counts_ == 0  # (B, n)
    n_oob = O.sum(0)
    seen = n_oob > 0
    F = boot.bootstrap_decision_function(A_tr)  # (B, n) at C_{r*}
    m = np.where(O, F, 0.0).sum(0)[seen] / n_oob[seen]
    f_te = platt.decision_function(A_te)
    out: dict[str, np.ndarray] = {}
    info: dict[str, float] = {}
    cal = PlattCalibrator().fit(m, y01[seen])
    out["full_svm_oob_mean_sigmoid"] = cal.predict_proba(f_te)[:, 1]
    w_pool = np.broadcast_to(1.0 / np.maximum(n_oob, 1), O.shape)[O]
    y_pool = np.broadcast_to(y01, O.shape)[O]
    cal = PlattCalibrator().fit(F[O], y_pool, sample_weight=w_pool)
    out["full_svm_oob_pooled_sigmoid"] = cal.predict_proba(f_te)[:, 1]
    # the ensemble's out-of-bag Platt on decision values, on training and test rows
    boot.set_params(calibration="sigmoid", calibration_input="scores")
    boot._fit_calibration(y_pm)
    q_tr, q_te = boot.oob_calibrated_proba_, boot.predict_proba(A_te)[:, 1]
    boot.set_params(calibration=None, calibration_input="votes")
    boot._fit_calibration(y_pm)
    p_tr = platt.calibrator_.predict_proba(platt.oof_decision_)[:, 1]
    p_te = platt.predict_proba(A_te)[:, 1]
    ok = np.isfinite(q_tr)
    brier = [
        float(np.mean((w * p_tr[ok] + (1.0 - w) * q_tr[ok] - y01[ok]) ** 2))
        for w in BLEND_GRID
    ]
    w = float(BLEND_GRID[int(np.argmin(brier))])
    out["blend_platt_oob_score_sigmoid"] = w * p_te + (1.0 - w) * q_te
    info["blend_weight_platt"] = w
    Z_tr = np.column_stack([platt.oof_decision_, boot.oob_decision_])[ok]
    Z_te = np.column_stack([f_te, boot.mean_decision_function(A_te)])
    # Platt's regularised targets (t+ = (N+ + 1) / (N+ + 2), t- = 1 / (N- + 2)) as
    # two weighted copies of each row, so separable folds keep finite coefficients
    yk = y01[ok]
    n_pos, n_neg = float(yk.sum()), float(yk.size - yk.sum())
    t = np.where(yk > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    lr = LogisticRegression(C=np.inf, max_iter=1000).fit(
        np.vstack([Z_tr, Z_tr]),
        np.r_[np.ones(yk.size), np.zeros(yk.size)],
        sample_weight=np.r_[t, 1.0 - t],
    )
    out["stack_platt_oob_score"] = lr.predict_proba(Z_te)[:, 1]
    info["stack_coef_platt"], info["stack_coef_oob"] = map(float, lr.coef_[0])
    return out, info


def run_fold(
    cfg, dataset: str, kernel: str, fold: int, dump: Path | None = None
) -> dict:
    """One unit's bootstrap fit, out-of-bag rows and Platt (as ``run_unit``)."""
    d = load_fold_data(cfg, dataset, fold)
    t0 = time.perf_counter()
    models: dict = {}
    res = proto._fit_unit(
        d["X_train"],
        np.asarray(d["y_train"]),
        d["X_test"],
        np.asarray(d["y_test"]),
        kernel,
        cfg,
        seed=cfg.protocol.seed * 1000 + int(fold),
        oob_calibrations=CALIBRATIONS,
        models=models,
    )
    y_te = np.asarray(res["pred"]["y"])
    hyb, info = _hybrid_rows(
        models["bootstrap"],
        models["calibrated_svm"],
        d["X_train"],
        np.asarray(d["y_train"]),
        d["X_test"],
    )
    if dump is not None:
        boot = models["bootstrap"]
        platt = models["calibrated_svm"]
        dump.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            dump / f"{dataset}_{kernel}_{fold}.npz",
            y_tr=np.asarray(d["y_train"]),
            y_te=y_te,
            positive=boot.classes_[1],
            counts=boot.counts_.astype(np.int16),
            weights=boot.weights_,
            used=boot._used,
            best_index=boot.best_index_,
            scores_tr=boot._grid_scores(d["X_train"]).astype(np.float32),
            scores_te=boot._grid_scores(d["X_test"]).astype(np.float32),
            platt_oof=platt.oof_decision_,
            platt_tr=platt.decision_function(d["X_train"]),
            platt_te=platt.decision_function(d["X_test"]),
            platt_a_b=[platt.calibrator_.a_, platt.calibrator_.b_],
        )
    for meth, p in hyb.items():
        summ = summarize_probabilities(y_te, np.clip(p, 0.0, 1.0))
        res["metrics"][meth] = summ
    return {
        "dataset": dataset,
        "kernel": kernel,
        "fold": fold,
        "mse": {m: res["metrics"][m]["mse"] for m in ROWS},
        "auc": {m: res["metrics"][m]["auc"] for m in ROWS},
        "choice": res["oob_calibration_choice"],
        "hybrid_info": info,
        DIAGNOSTIC: _test_fold_sigmoid(
            res["pred"]["oob_score_sigmoid"], res["pred"]["y"]
        ),
        "seconds": time.perf_counter() - t0,
    }


def _table(rows: list[dict], folds: Sequence[int]) -> list[str]:
    keys = sorted({(r["kernel"], r["dataset"]) for r in rows})
    L = [
        f"| kernel | dataset | folds | {' | '.join(ROWS)} | {DIAGNOSTIC} |",
        "|---|---|---|" + "---|" * (len(ROWS) + 1),
    ]
    means: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for kernel, ds in keys:
        sel = [r for r in rows if r["kernel"] == kernel and r["dataset"] == ds]
        m = {
            met: {meth: float(np.mean([r[met][meth] for r in sel])) for meth in ROWS}
            for met in ("mse", "auc")
        }
        means[kernel, ds] = m
        best = min(m["mse"].values())
        cells = []
        for meth in ROWS:
            txt = f"{m['mse'][meth]:.4f} / {m['auc'][meth]:.3f}"
            cells.append(f"**{txt}**" if m["mse"][meth] == best else txt)
        diag = [r[DIAGNOSTIC] for r in sel if DIAGNOSTIC in r]
        cells.append(f"{np.mean(diag):.4f}" if len(diag) == len(sel) else "")
        L.append(f"| {kernel} | {ds} | {len(sel)} | " + " | ".join(cells) + " |")
    L += [
        "",
        "Cells: fold-mean MSE / AUC; bold: the lowest MSE of the row. "
        f"{DIAGNOSTIC}: fold-mean MSE of a sigmoid of the mean decision value fitted "
        "on the test fold (a diagnostic that reads the test labels, not a method).",
        "",
    ]
    for kernel in sorted({k for k, _ in keys}):
        ds_k = [ds for k, ds in keys if k == kernel]
        for meth in ROWS[1:-1]:
            beat = sum(
                means[kernel, d]["mse"][meth] < means[kernel, d]["mse"]["platt"]
                for d in ds_k
            )
            keep = sum(
                means[kernel, d]["mse"][meth]
                <= means[kernel, d]["mse"]["bootstrap_ensemble"]
                for d in ds_k
            )
            L.append(
                f"- {kernel}, {meth}: lower MSE than Platt on {beat} of {len(ds_k)}, "
                f"improves or keeps the raw ensemble on {keep} of {len(ds_k)}"
            )
    L.append("")
    for kernel in sorted({k for k, _ in keys}):
        ds_k = [ds for k, ds in keys if k == kernel]
        ranks = np.mean(
            [rankdata([means[kernel, d]["mse"][m] for m in ROWS]) for d in ds_k],
            axis=0,
        )
        L.append(
            f"- {kernel}, average MSE rank among these {len(ROWS)} rows over "
            f"{len(ds_k)} datasets (1 = lowest, ties averaged): "
            + ", ".join(
                f"{m} {r:.2f}" for m, r in sorted(zip(ROWS, ranks), key=lambda x: x[1])
            )
        )
    L.append("")
    for kernel, ds in keys:
        sel = [r for r in rows if r["kernel"] == kernel and r["dataset"] == ds]
        w = [r["hybrid_info"]["blend_weight_platt"] for r in sel if "hybrid_info" in r]
        if w:
            L.append(
                f"- blend_platt_oob_score_sigmoid on {kernel}/{ds}: Platt's weight "
                f"mean {np.mean(w):.2f} (min {min(w):.2f}, max {max(w):.2f})"
            )
    L.append("")
    for meth in ("oob_vote_auto", "oob_auto_votes_or_scores", "oob_auto_one_se"):
        for kernel, ds in keys:
            sel = [r for r in rows if r["kernel"] == kernel and r["dataset"] == ds]
            c = Counter(
                "raw" if r["choice"][meth][0] is None else ":".join(r["choice"][meth])
                for r in sel
            )
            L.append(f"- {meth} chose on {kernel}/{ds}: {dict(sorted(c.items()))}")
    return L


#: rows ``--from-dump`` recomputes from the saved scores (``_dump_rows``)
DUMP_ROWS = ("oob_score_sigmoid", "blend_platt_oob_score_sigmoid", "blend_platt_half")


def _dump_rows(path: Path) -> dict[str, float]:
    """Held-out MSE of ``DUMP_ROWS`` and Platt from one fold's ``--dump`` file.

    Recomputed from the saved scores (the ensemble's in float32), so they agree with
    the fitted rows to rounding: ``oob_score_sigmoid`` (the ensemble's out-of-bag
    Platt on the mean decision value), ``blend_platt_oob_score_sigmoid`` (its blend
    with Platt, weight chosen on the training rows as in ``_hybrid_rows``) and
    ``blend_platt_half``, the same blend at the fixed weight 1/2
    (``BootstrapProbabilitySVC(..., blend_platt=0.5)``): no weight is chosen from
    data, the usual equal-weight forecast combination.
    """
    from scipy.special import expit

    from torchsvm.estimators.calibration import PlattCalibrator

    z = np.load(path, allow_pickle=True)
    y_tr = (z["y_tr"] == z["positive"]).astype(np.float64)
    y_te = (z["y_te"] == z["positive"]).astype(np.float64)
    O = z["counts"] == 0
    n_oob = O.sum(0)
    seen = n_oob > 0
    w = z["weights"][z["used"]]
    mix_tr = np.tensordot(w, z["scores_tr"].astype(np.float64), axes=1)  # (B, n)
    mix_te = np.tensordot(w, z["scores_te"].astype(np.float64), axes=1)
    s_oob = np.where(O, mix_tr, 0.0).sum(0)[seen] / n_oob[seen]
    cal = PlattCalibrator().fit(s_oob, y_tr[seen])
    q_tr, q_te = cal.predict_proba(s_oob)[:, 1], cal.predict_proba(mix_te.mean(0))[:, 1]
    a, b = z["platt_a_b"]
    p_tr = expit(-(a * z["platt_oof"][seen] + b))
    p_te = expit(-(a * z["platt_te"] + b))
    brier = [np.mean((v * p_tr + (1 - v) * q_tr - y_tr[seen]) ** 2) for v in BLEND_GRID]
    v = float(BLEND_GRID[int(np.argmin(brier))])
    rows = {
        "platt": p_te,
        "oob_score_sigmoid": q_te,
        "blend_platt_oob_score_sigmoid": v * p_te + (1 - v) * q_te,
        "blend_platt_half": 0.5 * p_te + 0.5 * q_te,
    }
    return {k: float(np.mean((p - y_te) ** 2)) for k, p in rows.items()}


def _dump_table(dump: Path, rows: list[dict], keys: list[tuple[str, str]]) -> list[str]:
    """Fold-mean MSE of ``DUMP_ROWS`` from the dumps, with Platt and the raw ensemble
    of the fitted rows (JSONL) and the largest difference of the recomputed rows from
    the fitted ones (a check of the recomputation)."""
    L = [
        "",
        "Recomputed from the saved scores (--from-dump): fold-mean MSE",
        "",
        f"| kernel | dataset | folds | bootstrap_ensemble | {' | '.join(DUMP_ROWS)} "
        "| platt |",
        "|---|---|---|" + "---|" * (len(DUMP_ROWS) + 2),
    ]
    means: dict[tuple[str, str], dict[str, float]] = {}
    gap = 0.0
    for kernel, ds in keys:
        sel = [r for r in rows if r["kernel"] == kernel and r["dataset"] == ds]
        rec = []
        for r in sel:
            f = dump / f"{ds}_{kernel}_{r['fold']}.npz"
            if not f.exists():
                break
            d = _dump_rows(f)
            for k in ("platt", *DUMP_ROWS[:2]):
                gap = max(gap, abs(d[k] - r["mse"][k]))
            rec.append({**d, "bootstrap_ensemble": r["mse"]["bootstrap_ensemble"]})
        if len(rec) != len(sel) or not rec:
            continue
        m = {k: float(np.mean([x[k] for x in rec])) for k in rec[0]}
        means[kernel, ds] = m
        cells = " | ".join(
            f"{m[k]:.4f}" for k in ("bootstrap_ensemble", *DUMP_ROWS, "platt")
        )
        L.append(f"| {kernel} | {ds} | {len(rec)} | {cells} |")
    L.append("")
    L.append(f"- largest |recomputed - fitted| fold MSE: {gap:.1e}")
    for kernel in sorted({k for k, _ in means}):
        ds_k = [d for k, d in means if k == kernel]
        for meth in DUMP_ROWS:
            beat = sum(means[kernel, d][meth] < means[kernel, d]["platt"] for d in ds_k)
            keep = sum(
                means[kernel, d][meth] <= means[kernel, d]["bootstrap_ensemble"]
                for d in ds_k
            )
            L.append(
                f"- {kernel}, {meth} (recomputed): lower MSE than Platt on {beat} of "
                f"{len(ds_k)}, improves or keeps the raw ensemble on {keep} of "
                f"{len(ds_k)}"
            )
    return L


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="a probabilities config (TOML)")
    ap.add_argument("--datasets", nargs="+", required=True)
    ap.add_argument("--folds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--kernels", nargs="+", default=None, help="default: the config's")
    ap.add_argument("--set", nargs="*", default=[], help="config overrides key=value")
    ap.add_argument(
        "--jsonl", type=Path, default=None, help="per-fold results (resume)"
    )
    ap.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="also save each fold's scores (every kept C and replicate, training and "
        "test rows), draw counts and Platt's scores as DIR/<dataset>_<kernel>_<fold>.npz",
    )
    ap.add_argument(
        "--from-dump",
        type=Path,
        default=None,
        help="also recompute DUMP_ROWS from a --dump folder of the same folds",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    cfg = load_config(args.config, [*args.set, "probabilities.baselines=['platt']"])
    kernels = args.kernels or list(cfg.probabilities.kernels)
    done: list[dict] = []
    if args.jsonl is not None and args.jsonl.exists():
        done = [json.loads(x) for x in args.jsonl.read_text().splitlines() if x]
    have = {(r["dataset"], r["kernel"], r["fold"]) for r in done}
    for ds in args.datasets:
        for kernel in kernels:
            for k in args.folds:
                if (ds, kernel, k) in have:
                    continue
                r = run_fold(cfg, ds, kernel, k, args.dump)
                done.append(r)
                print(
                    f"{ds}/{kernel}/fold {k}: {r['seconds']:.1f} s, MSE "
                    + ", ".join(f"{m} {v:.4f}" for m, v in r["mse"].items()),
                    flush=True,
                )
                if args.jsonl is not None:
                    with args.jsonl.open("a") as fh:
                        fh.write(json.dumps(r) + "\n")
    want = {(d, kn, k) for d in args.datasets for kn in kernels for k in args.folds}
    rows = [r for r in done if (r["dataset"], r["kernel"], r["fold"]) in want]
    print("\n".join(_table(rows, args.folds)))
    if args.from_dump is not None:
        keys = sorted({(r["kernel"], r["dataset"]) for r in rows})
        print("\n".join(_dump_table(args.from_dump, rows, keys)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
