"""Reproduce the constrained-SVM experiment (SPEC S5; thesis ch. 2) -> docs/results/csvm.md.

Part 1 (protocol of SPEC S5, with the deviations printed in the report):
for each dataset and outer fold (10-fold, 5-fold above 1000 rows), on the training part T:
inner CV over (C, gamma) of the RBF SVM selecting accuracy (G-mean if the minority class is
< 30 %); TPR0 = the selected SVM's inner-CV TPR; target = min(1, TPR0 + 0.025). T is split
into I (first half of each class) and the anchor set J (second half). Methods, all scored on
the held-out fold:

- SVM: libsvm SVC(C, gamma) on T;
- SVM(C+, C-): the same with balanced class weights (C+ = C n / (2 n+), thesis' C/|I+|);
- sliding b: S1 on T, intercept slid until TPR on J reaches the sample floor;
- CSVM: :class:`torchsvm.estimators.csvm.ConstrainedSVC` on I u J, floor = target on J.

For the MIQP each class of I and of J is compressed by k-means to at most
``--max-per-class`` centroids weighted by cluster size (the thesis does this above 1000
rows only), and the CSVM's ``C`` is libsvm's ``C`` times |I| (so C+ = C |I| / |I+|).

Part 2: cost of the solver: time to proven optimum of our outer approximation vs SCIP
(pyscipopt) on the same linear-kernel CSVM MIQPs, n = |I u J| from 100 to 1000.

Results are written atomically to ``<out>.json`` (finished work is resumed) and
``<out>.md`` with the exact command line.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.data.resample import kmeans_compress, outer_folds, split_anchor
from torchsvm.estimators.csvm import ConstrainedSVC
from torchsvm.exceptions import InfeasibleProblemError, SolverTimeLimitWarning
from torchsvm.mip.csvm import build_csvm_model, csvm_start
from torchsvm.mip.model import MipConfig, MipModel
from torchsvm.mip.outer_approx import solve_convex_miqp
from torchsvm.mip.warm_start import scores_without_intercept, slide_intercept
from torchsvm.problems.csvm import CsvmProblem, hoeffding_floor

logger = logging.getLogger("reproduce_csvm")

DATASETS = ["australian", "votes", "wisconsin", "german", "pageblocks", "biodeg"]
METHODS = ["SVM", "SVM(C+,C-)", "sliding b", "CSVM"]


# ----------------------------------------------------------------------------- io
def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _load_state(path: Path) -> dict[str, Any]:
    if path.is_file():
        return json.loads(path.read_text())
    return {"cv": {}, "solver": {}}


# ----------------------------------------------------------------------------- data
def _synthetic(n: int, seed: int, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.9 * rng.normal(size=n) > 0.4, 1, -1)
    return X, y


def _load(name: str) -> tuple[Any, np.ndarray, Any]:
    """Raw features, labels in {-1, +1} and a preprocessor factory."""
    if name.startswith("synthetic"):
        X, y = _synthetic(int(name.split("-")[1]) if "-" in name else 120, 0)
        from sklearn.preprocessing import StandardScaler

        return X, y, StandardScaler
    from torchsvm.data.datasets import load_dataset
    from torchsvm.data.preprocess import make_preprocessor_for

    ds = load_dataset(name)
    return ds.X, np.asarray(ds.y), lambda: make_preprocessor_for(ds)


def _rows(X: Any, idx: np.ndarray) -> Any:
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


# ----------------------------------------------------------------------------- metrics
def _tpr_tnr(y: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    pos, neg = y > 0, y < 0
    return float(np.mean(f[pos] > 0)), float(np.mean(f[neg] <= 0))


def _inner_cv(
    X: np.ndarray, y: np.ndarray, grid: Sequence[float], k: int, seed: int
) -> tuple[float, float, float]:
    """(C, gamma, TPR0) of the RBF SVM selected by inner k-fold CV."""
    from sklearn.svm import SVC

    gmean = min(np.mean(y > 0), np.mean(y < 0)) < 0.3
    folds = outer_folds(y, k, random_state=seed)
    best = (-1.0, 1.0, 1.0, 0.0)
    for C in grid:
        for g in grid:
            preds = np.empty_like(y, dtype=float)
            for tr, te in folds:
                preds[te] = SVC(C=C, gamma=g).fit(X[tr], y[tr]).decision_function(X[te])
            tpr, tnr = _tpr_tnr(y, preds)
            acc = float(np.mean(np.where(preds > 0, 1, -1) == y))
            score = math.sqrt(tpr * tnr) if gmean else acc
            if score > best[0] + 1e-12:
                best = (score, C, g, tpr)
    return best[1], best[2], best[3]


def _compress(
    X: np.ndarray, y: np.ndarray, k: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = {c: int(np.sum(y == c)) for c in (-1, 1)}
    if max(counts.values()) <= k:
        return X, y, np.ones(y.shape[0])
    return kmeans_compress(X, y, {c: min(k, n) for c, n in counts.items()}, seed)


def run_fold(
    X: np.ndarray,
    y: np.ndarray,
    test_X: np.ndarray,
    test_y: np.ndarray,
    args: argparse.Namespace,
    seed: int,
) -> dict[str, Any]:
    """All four methods on one outer fold; returns TPR/TNR per method and solve info."""
    from sklearn.svm import SVC

    t0 = time.perf_counter()
    C, g, tpr0 = _inner_cv(X, y, args.grid, args.inner_folds, seed)
    target = min(1.0, tpr0 + 0.025)
    out: dict[str, Any] = {"C": C, "gamma": g, "tpr0": tpr0, "target": target}
    svm = SVC(C=C, gamma=g).fit(X, y)
    out["SVM"] = _tpr_tnr(test_y, svm.decision_function(test_X))
    bal = SVC(C=C, gamma=g, class_weight="balanced").fit(X, y)
    out["SVM(C+,C-)"] = _tpr_tnr(test_y, bal.decision_function(test_X))
    anchor = split_anchor(y, 0.5, shuffle=False)
    # sliding b: S1 on T = I u J, b slid until TPR on J reaches the (sample) floor
    p_full = CsvmProblem.from_data(
        X, y, anchor, kernel="rbf", gamma=g, min_tpr=target, hoeffding_alpha=None
    )
    floor = target
    if args.hoeffding_alpha is not None:
        floor = hoeffding_floor(
            target, int(np.sum(y[anchor] > 0)), args.hoeffding_alpha
        )
    if floor <= 1.0:
        from torchsvm.mip.warm_start import S1Fit

        dual = np.zeros(y.shape[0])
        dual[svm.support_] = svm.dual_coef_.ravel()
        s1 = S1Fit(dual, float(svm.intercept_[0]))
        gJ = scores_without_intercept(p_full, s1, p_full.floor_idx)
        p_floor = CsvmProblem.from_data(
            X,
            y,
            anchor,
            kernel="rbf",
            gamma=g,
            min_tpr=min(floor, 1.0),
            hoeffding_alpha=None,
        )
        sl = slide_intercept(p_floor, gJ, s1.intercept, margin=0.0)
        b = s1.intercept if sl.intercept is None else sl.intercept
        fX = svm.decision_function(test_X) - s1.intercept + b
        out["sliding b"] = _tpr_tnr(test_y, fX)
    # CSVM on the compressed I and J
    XI, yI, wI = _compress(X[~anchor], y[~anchor], args.max_per_class, seed)
    XJ, yJ, wJ = _compress(X[anchor], y[anchor], args.max_per_class, seed)
    Xc = np.vstack([XI, XJ])
    yc = np.concatenate([yI, yJ])
    wc = np.concatenate([wI, wJ])
    mask = np.concatenate([np.zeros(yI.size, bool), np.ones(yJ.size, bool)])
    clf = ConstrainedSVC(
        C=C * float(wI.sum()),
        kernel="rbf",
        gamma=g,
        min_tpr=target,
        hoeffding_alpha=args.hoeffding_alpha,
        big_m=100.0,
        time_limit=args.time_limit,
        mip_gap=1e-4,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolverTimeLimitWarning)
            clf.fit(Xc, yc, anchor_mask=mask, sample_weight=wc)
        out["CSVM"] = _tpr_tnr(test_y, clf.decision_function(test_X))
        out["csvm_status"] = clf.status_
        out["csvm_gap"] = clf.mip_gap_
        out["csvm_time"] = clf.solve_time_
        out["csvm_rounds"] = clf.n_iter_
        out["csvm_anchor_tpr"] = clf.achieved_rates_["tpr"]
    except InfeasibleProblemError as err:
        out["csvm_status"] = f"infeasible: {err}"
    out["n_binaries"] = int(yJ.size)
    out["fold_time"] = time.perf_counter() - t0
    return out


def run_cv(args: argparse.Namespace, state: dict[str, Any], json_path: Path) -> None:
    for name in args.datasets:
        Xraw, y, make_pre = _load(name)
        n = y.shape[0]
        k = args.folds if args.folds else (5 if n > 1000 else 10)
        folds = outer_folds(y, k, random_state=0)[: args.max_folds or k]
        for f, (tr, te) in enumerate(folds):
            key = f"{name}/{f}"
            if key in state["cv"]:
                continue
            pre = make_pre()
            Xtr = np.asarray(pre.fit_transform(_rows(Xraw, tr)), dtype=np.float64)
            Xte = np.asarray(pre.transform(_rows(Xraw, te)), dtype=np.float64)
            res = run_fold(Xtr, y[tr], Xte, y[te], args, seed=f)
            logger.info("%s fold %d: %s", name, f, {m: res.get(m) for m in METHODS})
            state["cv"][key] = res
            _atomic_write(json_path, json.dumps(state, indent=1, default=float))


# ----------------------------------------------------------------------------- solver
def _scip_solve(model: MipModel, time_limit: float) -> tuple[float, str, float, float]:
    """Solve the MIQP with SCIP directly (epigraph of the quadratic): time, status, obj, gap."""
    import pyscipopt

    m = pyscipopt.Model()
    m.hideOutput()
    n = model.n_cols
    integ = np.asarray(model.integrality, dtype=bool)
    xs = [
        m.addVar(
            lb=None if not np.isfinite(model.col_lower[k]) else model.col_lower[k],
            ub=None if not np.isfinite(model.col_upper[k]) else model.col_upper[k],
            vtype="B" if integ[k] else "C",
        )
        for k in range(n)
    ]
    A = model.A.tocsr()
    for i in range(A.shape[0]):
        lo, up = model.row_lower[i], model.row_upper[i]
        cols, vals = (
            A.indices[A.indptr[i] : A.indptr[i + 1]],
            A.data[A.indptr[i] : A.indptr[i + 1]],
        )
        expr = pyscipopt.quicksum(float(v) * xs[c] for c, v in zip(cols, vals))
        if np.isfinite(lo) and np.isfinite(up) and lo == up:
            m.addCons(expr == float(lo))
        else:
            if np.isfinite(lo):
                m.addCons(expr >= float(lo))
            if np.isfinite(up):
                m.addCons(expr <= float(up))
    Q = model.Q.tocoo()
    t = m.addVar(lb=0.0, ub=None)
    quad = pyscipopt.quicksum(
        0.5 * float(v) * xs[i] * xs[j] for i, j, v in zip(Q.row, Q.col, Q.data)
    )
    m.addCons(quad <= t)
    m.setObjective(pyscipopt.quicksum(float(model.c[k]) * xs[k] for k in range(n)) + t)
    m.setParam("limits/time", time_limit)
    m.setParam("limits/gap", 1e-4)
    m.setParam("parallel/maxnthreads", 1)
    t0 = time.perf_counter()
    m.optimize()
    wall = time.perf_counter() - t0
    obj = m.getObjVal() if m.getNSols() else float("nan")
    return wall, m.getStatus(), obj, m.getGap()


def run_solver(
    args: argparse.Namespace, state: dict[str, Any], json_path: Path
) -> None:
    jobs = [("linear", n) for n in args.solver_sizes]
    jobs += [("rbf", n) for n in args.solver_rbf_sizes]
    for kernel, n in jobs:
        key = str(n) if kernel == "linear" else f"rbf/{n}"
        if key in state["solver"]:
            continue
        X, y = _synthetic(n, seed=n, d=5)
        anchor = split_anchor(y, 0.5, random_state=n)
        p = CsvmProblem.from_data(
            X,
            y,
            anchor,
            C=2.0 * n / 2,
            kernel=kernel,
            gamma=0.2,
            min_tpr=0.9,
            hoeffding_alpha=None,
        )
        model, layout, factor = build_csvm_model(p)
        start = csvm_start(p, layout)
        cfg = MipConfig(time_limit=args.solver_time_limit, mip_rel_gap=1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolverTimeLimitWarning)
            t0 = time.perf_counter()
            res = solve_convex_miqp(model, cfg, start.x, factor=factor)
            t_oa = time.perf_counter() - t0
        row: dict[str, Any] = {
            "kernel": kernel,
            "n": n,
            "binaries": int(anchor.sum()),
            "oa_time": t_oa,
            "oa_status": res.status.value,
            "oa_obj": res.objective,
            "oa_gap": res.mip_gap,
            "oa_rounds": res.n_iter,
        }
        try:
            t_s, st, obj, gap = _scip_solve(model, args.solver_time_limit)
            row.update(scip_time=t_s, scip_status=st, scip_obj=obj, scip_gap=gap)
        except ImportError:
            row.update(scip_status="pyscipopt missing")
        logger.info("solver n=%d: %s", n, row)
        state["solver"][key] = row
        _atomic_write(json_path, json.dumps(state, indent=1, default=float))


# ----------------------------------------------------------------------------- report
def _ms(vals: list[float]) -> str:
    if not vals:
        return "-"
    return f"{np.mean(vals):.3f} ({np.std(vals):.3f})"


def write_report(
    args: argparse.Namespace, state: dict[str, Any], md_path: Path, cmd: str
) -> None:
    lines = [
        "# Constrained SVM (SPEC S5): reproduction",
        "",
        f"Command: `{cmd}`",
        "",
        "Produced by `scripts/reproduce_csvm.py`; raw numbers in the JSON next to this file.",
        "",
        "## Protocol and deviations",
        "",
        f"- datasets: {', '.join(args.datasets)}; outer folds: "
        f"{args.folds or '10 (5 above 1000 rows)'}"
        + (f", first {args.max_folds} only" if args.max_folds else "")
        + f"; inner {args.inner_folds}-fold CV over C, gamma in 2^{{{', '.join(str(int(math.log2(g))) for g in args.grid)}}}"
        " (accuracy, G-mean if minority < 30 %).",
        "- TPR0 = inner-CV TPR of the selected RBF SVM; target = min(1, TPR0 + 0.025); "
        "I / J = first / second half of each class of the training part.",
        f"- CSVM: RBF partial-dual MIQP, M1 = M2 = 100, outer approximation over HiGHS, "
        f"time limit {args.time_limit:g} s, gap 1e-4; each class of I and J compressed by "
        f"k-means to <= {args.max_per_class} weighted centroids (thesis: only above 1000 rows); "
        f"Hoeffding alpha = {args.hoeffding_alpha}.",
        "- sliding b: libsvm SVM on I u J, intercept slid (classification margin 0) until the "
        "TPR on J reaches the floor.",
        "- Rates are on the held-out outer folds: mean (std) over folds; 'met' = folds whose "
        "test TPR reaches the target.",
        "",
        "## TPR and TNR on held-out folds",
        "",
        "| dataset | folds | target | "
        + " | ".join(f"{m} TPR | {m} TNR" for m in METHODS)
        + " | CSVM met | CSVM status (opt/tl/inf) | CSVM solve s (mean, max) |"
        " CSVM gap (mean, max) |",
        "|" + "---|" * (3 + 2 * len(METHODS) + 4),
    ]
    by_ds: dict[str, list[dict[str, Any]]] = {}
    for key, res in state["cv"].items():
        by_ds.setdefault(key.split("/")[0], []).append(res)
    for name, rows in by_ds.items():
        cells = [name, str(len(rows)), _ms([r["target"] for r in rows])]
        for m in METHODS:
            vals = [r[m] for r in rows if m in r]
            cells.append(_ms([v[0] for v in vals]))
            cells.append(_ms([v[1] for v in vals]))
        met = [r["CSVM"][0] >= r["target"] - 1e-12 for r in rows if "CSVM" in r]
        cells.append(f"{sum(met)}/{len(rows)}")
        st = [r.get("csvm_status", "") for r in rows]
        cells.append(
            f"{sum(s == 'optimal' for s in st)}/{sum(s == 'time_limit' for s in st)}/"
            f"{sum(s.startswith('infeasible') for s in st)}"
        )
        times = [r["csvm_time"] for r in rows if "csvm_time" in r]
        cells.append(f"{np.mean(times):.1f}, {np.max(times):.1f}" if times else "-")
        gaps = [r["csvm_gap"] for r in rows if "csvm_gap" in r]
        cells.append(f"{np.mean(gaps):.1e}, {np.max(gaps):.1e}" if gaps else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Cost of the solver: outer approximation (HiGHS) vs SCIP on the same MIQP",
        "",
        "CSVM MIQPs on synthetic 5-d data (half the rows anchors, TPR floor 0.9, "
        "C = n, M = 100): linear kernel in the primal form, RBF (gamma = 0.2) in the "
        "partial dual form; both solvers get the identical model; time limit "
        f"{args.solver_time_limit:g} s each, gap 1e-4, 1 thread.",
        "",
        "| kernel | n | binaries | OA s | OA status | OA gap | OA rounds | SCIP s | SCIP status | SCIP gap | obj diff | SCIP s / OA s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted(
        state["solver"].values(), key=lambda r: (r.get("kernel", "linear"), r["n"])
    )
    for r in rows:
        ratio = r.get("scip_time", float("nan")) / r["oa_time"]
        diff = abs(r.get("scip_obj", float("nan")) - r["oa_obj"]) / max(
            1.0, abs(r["oa_obj"])
        )
        lines.append(
            f"| {r.get('kernel', 'linear')} | {r['n']} | {r['binaries']} | "
            f"{r['oa_time']:.2f} | {r['oa_status']} | "
            f"{r['oa_gap']:.1e} | {r['oa_rounds']} | {r.get('scip_time', float('nan')):.2f} | "
            f"{r.get('scip_status')} | {r.get('scip_gap', float('nan')):.1e} | {diff:.1e} | "
            f"{ratio:.2f} |"
        )
    _atomic_write(md_path, "\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument(
        "--folds", type=int, default=0, help="0: 10 (5 above 1000 rows)"
    )
    parser.add_argument("--max-folds", type=int, default=0, help="run only the first k")
    parser.add_argument("--inner-folds", type=int, default=3)
    parser.add_argument(
        "--grid-exponents", type=int, nargs="+", default=[-5, -3, -1, 1, 3, 5]
    )
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--max-per-class", type=int, default=40)
    parser.add_argument("--hoeffding-alpha", type=float, default=None)
    parser.add_argument(
        "--solver-sizes", type=int, nargs="*", default=[100, 200, 400, 1000]
    )
    parser.add_argument(
        "--solver-rbf-sizes", type=int, nargs="*", default=[60, 100, 150]
    )
    parser.add_argument("--solver-time-limit", type=float, default=120.0)
    parser.add_argument("--skip-cv", action="store_true")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the .md from the .json"
    )
    parser.add_argument("--out", default="docs/results/csvm")
    args = parser.parse_args(argv)
    if args.tiny:
        args.datasets = ["synthetic-80"]
        args.folds, args.max_folds, args.inner_folds = 3, 2, 2
        args.grid_exponents = [-1, 1]
        args.time_limit, args.max_per_class = 10.0, 8
        args.solver_sizes, args.solver_time_limit = [40], 10.0
        args.solver_rbf_sizes = [20]
        if args.out == "docs/results/csvm":
            args.out = "runs/csvm_tiny"
    args.grid = [2.0**e for e in args.grid_exponents]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    out = Path(args.out)
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    state = _load_state(json_path)
    cmd = "python scripts/reproduce_csvm.py " + " ".join(
        sys.argv[1:] if argv is None else list(argv)
    )
    if not args.report_only:
        if not args.skip_cv:
            run_cv(args, state, json_path)
        run_solver(args, state, json_path)
    write_report(args, state, md_path, cmd)
    print(f"wrote {md_path} and {json_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
