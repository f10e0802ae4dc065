"""Constrained SVM with a TPR floor (SPEC S5; thesis ch. 2, issue 18).

Part 1, one unit per (dataset, outer fold): ``protocol.n_folds``-fold stratified CV
(``csvm.large_folds`` folds above ``csvm.large_rows`` rows), preprocessing fitted on the
training part ``T``. On ``T``:

- inner ``csvm.inner_folds``-fold CV of the RBF SVM (libsvm) over ``C, gamma`` in
  ``2^csvm.grid_exponents`` selecting accuracy, or the G-mean ``sqrt(TPR * TNR)`` when
  the minority class is below 30 %; ``TPR0`` = the selected SVM's inner-CV TPR and the
  target ``p0 = min(1, TPR0 + 0.025)``;
- ``I`` / ``J`` = first / second half of each class of ``T`` (the thesis' split);
- above ``csvm.large_rows`` rows each class of ``I`` and of ``J`` is compressed by
  k-means to ``csvm.max_per_class`` centroids weighted by cluster size (the thesis
  compresses only there); below it every row is kept;
- methods, all scored on the held-out fold: ``SVM`` (libsvm ``SVC(C, gamma)`` on ``T``),
  ``SVM(C+,C-)`` (the same with balanced class weights), ``sliding b``
  (:class:`~torchsvm.estimators.csvm.SlidingInterceptSVC`: S1 on ``I u J``, ``b`` slid to
  the floor on ``J``) and ``CSVM`` (:class:`~torchsvm.estimators.csvm.ConstrainedSVC`,
  the exact MIQP, ``M1 = M2 = 100``, ``mip.time_limit``). Both floor methods impose
  ``p0`` plus the Hoeffding margin at ``csvm.hoeffding_alpha`` (0: ``p0`` itself), capped
  at 1, and read ``C`` as libsvm does (``penalty="libsvm"``), so that one ``C`` means the
  same for all four methods.

The floor "held" on a fold when the held-out TPR reaches ``p0`` (the rate the Hoeffding
floor on ``J`` guarantees with probability ``1 - alpha``).

Part 2, one unit per (kernel, n): our engine as a user calls it
(:func:`torchsvm.mip.csvm.solve_csvm`: its sliding-b start, anchor big-M tightening, local
search, relaxation rounding and tangent-cut grid where its rules turn them on, all
timed) against SCIP (:func:`torchsvm.mip.scip.solve_scip`) on the identical CSVM MIQP
(:func:`~torchsvm.mip.csvm.build_csvm_model`) of synthetic 5-d data (half the rows
anchors, TPR floor 0.9, ``C = n`` in the thesis' convention, ``M = 100``), SCIP handed
the same sliding-b start (:func:`~torchsvm.mip.csvm.csvm_start` with ``solve_csvm``'s
S1 solver, built outside its time), ``csvm.solver_time_limit`` seconds each, one thread.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit, load_fold_data, subsample_rows

__all__ = [
    "DATASETS",
    "METHODS",
    "THESIS",
    "assemble",
    "run_unit",
    "settings_table",
    "units",
]

#: the thesis' datasets (ch. 2)
DATASETS = ("australian", "votes", "wisconsin", "german", "pageblocks", "biodeg")
METHODS = ("SVM", "SVM(C+,C-)", "sliding b", "CSVM")
#: the thesis' protocol (SPEC S5), shown next to the settings used
THESIS = {
    "datasets": ", ".join(DATASETS),
    "rows": "all",
    "outer CV": "10-fold (5-fold above 1000 rows), all folds",
    "inner CV": "10-fold over C, gamma in 2^-5..2^5 (11 x 11)",
    "inner CV model": "the standard RBF SVM; its C, gamma for all methods",
    "k-means compression": "each class of I and J, only above 1000 rows",
    "centroids per class": "not stated",
    "Hoeffding alpha": "0.05",
    "MIQP time limit": "300 s",
    "M1 = M2": "100",
}
#: the target is the standard SVM's TPR plus this (SPEC S5)
TARGET_STEP = 0.025
BIG_M = 100.0


def settings_table(
    thesis: dict[str, str], used: dict[str, str], same: dict[str, bool] | None = None
) -> str:
    """Markdown table: each setting of the thesis next to the one used (departures marked).

    A setting matches when the strings are equal, or hold the same comma-separated items
    in another order (dataset lists); ``same`` overrides the verdict per key (e.g. a
    thesis value ">= 100", or one the thesis does not state).
    """
    lines = ["| setting | thesis | this run |", "|---|---|---|"]
    for key, ref in thesis.items():
        val = used.get(key, "?")
        ok = val == ref or sorted(val.split(", ")) == sorted(ref.split(", "))
        if same is not None and key in same:
            ok = same[key]
        mark = "" if ok else " **(differs)**"
        lines.append(f"| {key} | {ref} | {val}{mark} |")
    return "\n".join(lines)


def _n_rows(cfg: ExperimentConfig, name: str) -> int:
    from torchsvm.data.datasets import load_dataset

    ds = load_dataset(name, cfg.data.data_dir or None, target=cfg.data.target or None)
    y = np.asarray(ds.y)
    return int(subsample_rows(y, cfg.data.max_rows, cfg.protocol.seed).size)


def _n_folds(cfg: ExperimentConfig, n: int) -> int:
    return cfg.csvm.large_folds if n > cfg.csvm.large_rows else cfg.protocol.n_folds


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, outer fold), then one per solver-comparison size."""
    out: list[Unit] = []
    if cfg.csvm.run_cv:
        for name in cfg.data.datasets:
            n = _n_rows(cfg, name)
            k = _n_folds(cfg, n)
            n_run = k if cfg.protocol.max_folds == 0 else min(cfg.protocol.max_folds, k)
            out += [
                Unit(
                    f"{name}/fold_{f:02d}",
                    {"part": "cv", "dataset": name, "fold": f, "n_folds": k, "n": n},
                )
                for f in range(n_run)
            ]
    for kernel, sizes in (
        ("linear", cfg.csvm.solver_sizes),
        ("rbf", cfg.csvm.solver_rbf_sizes),
    ):
        out += [
            Unit(
                f"solver/{kernel}/n{n:05d}",
                {"part": "solver", "kernel": kernel, "n": n},
            )
            for n in sizes
        ]
    return out


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """One outer fold (all four methods) or one OA-vs-SCIP solve."""
    if unit.params["part"] == "solver":
        return _solver_unit(cfg, unit.params["kernel"], unit.params["n"])
    return _cv_unit(cfg, unit)


# ------------------------------------------------------------------------- part 1
def _finite(x: float) -> float | None:
    """``x`` as a float, or None when it is not finite (unit files are strict JSON)."""
    return float(x) if np.isfinite(x) else None


def _rates(y: np.ndarray, f: np.ndarray) -> dict[str, float]:
    return {
        "tpr": float(np.mean(f[y > 0] > 0)),
        "tnr": float(np.mean(f[y < 0] <= 0)),
    }


def _inner_cv(
    X: np.ndarray, y: np.ndarray, grid: np.ndarray, k: int, seed: int
) -> dict[str, Any]:
    """RBF SVM (libsvm) selected by inner k-fold CV over ``C x gamma = grid x grid``."""
    from sklearn.svm import SVC

    from torchsvm.data.resample import outer_folds

    gmean = min(np.mean(y > 0), np.mean(y < 0)) < 0.3
    folds = outer_folds(y, k, random_state=seed)
    best: dict[str, Any] = {"score": -1.0}
    for C in grid:
        for g in grid:
            f = np.empty(y.shape[0])
            for tr, te in folds:
                f[te] = SVC(C=C, gamma=g).fit(X[tr], y[tr]).decision_function(X[te])
            r = _rates(y, f)
            acc = float(np.mean(np.where(f > 0, 1, -1) == y))
            score = math.sqrt(r["tpr"] * r["tnr"]) if gmean else acc
            if score > best["score"] + 1e-12:
                best = {"score": score, "C": float(C), "gamma": float(g), **r}
    best["criterion"] = "gmean" if gmean else "accuracy"
    return best


def _compress(
    X: np.ndarray, y: np.ndarray, k: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from torchsvm.data.resample import kmeans_compress

    if k is None:
        return X, y, np.ones(y.shape[0])
    return kmeans_compress(X, y, k, random_state=seed)


def _fit_floor(est: Any, X: Any, y: Any, mask: Any, w: Any) -> tuple[Any, list[str]]:
    """Fit a floor classifier; returns it and the warning classes it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, anchor_mask=mask, sample_weight=w)
    return est, sorted({w.category.__name__ for w in caught})


def _cv_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    from sklearn.svm import SVC

    from torchsvm.data.resample import split_anchor
    from torchsvm.estimators.csvm import ConstrainedSVC, SlidingInterceptSVC
    from torchsvm.exceptions import InfeasibleProblemError, SolverError

    s = cfg.csvm
    p = unit.params
    seed = cfg.protocol.seed + p["fold"]
    d = load_fold_data(cfg, p["dataset"], p["fold"], n_folds=p["n_folds"])
    X, y, Xte, yte = d["X_train"], d["y_train"], d["X_test"], d["y_test"]
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    grid = np.array([2.0**e for e in s.grid_exponents])
    cv = _inner_cv(X, y, grid, s.inner_folds, seed)
    timing["inner_cv_seconds"] = time.perf_counter() - t0
    C, g = cv["C"], cv["gamma"]
    target = min(1.0, cv["tpr"] + TARGET_STEP)
    out: dict[str, Any] = {
        "inner_cv": {k: v for k, v in cv.items() if k != "score"},
        "inner_cv_score": cv["score"],
        "target": target,
        "n_train": int(y.size),
        "n_test": int(yte.size),
        "methods": {},
    }
    svm = SVC(C=C, gamma=g).fit(X, y)
    out["methods"]["SVM"] = _rates(yte, svm.decision_function(Xte))
    bal = SVC(C=C, gamma=g, class_weight="balanced").fit(X, y)
    out["methods"]["SVM(C+,C-)"] = _rates(yte, bal.decision_function(Xte))
    anchor = split_anchor(y, 0.5, shuffle=False)
    alpha = s.hoeffding_alpha or None
    floor_kw = {
        "C": C,
        "kernel": "rbf",
        "gamma": g,
        "min_tpr": target,
        "hoeffding_alpha": alpha,
        "penalty": "libsvm",
    }
    compress = p["n"] > s.large_rows
    k = s.max_per_class if compress else None
    XI, yI, wI = _compress(X[~anchor], y[~anchor], k, seed)
    XJ, yJ, wJ = _compress(X[anchor], y[anchor], k, seed)
    Xc, yc, wc = np.vstack([XI, XJ]), np.concatenate([yI, yJ]), np.concatenate([wI, wJ])
    mask = np.concatenate([np.zeros(yI.size, bool), np.ones(yJ.size, bool)])
    out["compressed"] = bool(compress)
    out["mip_rows"] = int(yc.size)
    out["n_binaries"] = int(yJ.size)
    for name, est in (
        ("sliding b", SlidingInterceptSVC(**floor_kw)),
        (
            "CSVM",
            ConstrainedSVC(
                **floor_kw,
                big_m=BIG_M,
                time_limit=cfg.mip.time_limit,
                mip_rel_gap=cfg.mip.mip_rel_gap,
            ),
        ),
    ):
        t0 = time.perf_counter()
        try:
            # sliding b is cheap: S1 on every row of T; the CSVM gets the compressed rows
            if name == "sliding b":
                fitted, warned = _fit_floor(est, X, y, anchor, None)
            else:
                fitted, warned = _fit_floor(est, Xc, yc, mask, wc)
        except (InfeasibleProblemError, SolverError) as exc:
            out["methods"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        finally:
            timing[f"{name}_seconds"] = time.perf_counter() - t0
        rec = _rates(yte, fitted.decision_function(Xte))
        rec["floor"] = float(fitted.floors_["tpr"])
        rec["floor_capped"] = "tpr" in fitted.capped_floors_
        rec["anchor_tpr"] = float(fitted.achieved_rates_["tpr"])
        rec["warnings"] = warned
        if name == "CSVM":
            rec.update(
                status=fitted.status_,
                mip_gap=_finite(fitted.mip_gap_),
                rounds=int(fitted.n_iter_),
                start_feasible=fitted.start_feasible_,
            )
            timing["CSVM_solve_seconds"] = float(fitted.solve_time_)
        out["methods"][name] = rec
    for rec in out["methods"].values():
        if "tpr" in rec:
            rec["held"] = bool(rec["tpr"] >= target - 1e-12)
    out["timing"] = timing
    return out


# ------------------------------------------------------------------------- part 2
def _synthetic(n: int, seed: int, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.9 * rng.normal(size=n) > 0.4, 1, -1)
    return X, y


def _solver_problem(kernel: str, n: int) -> Any:
    """The part-2 CSVM of size ``n``: synthetic data, half the rows anchors."""
    from torchsvm.data.resample import split_anchor
    from torchsvm.problems.csvm import CsvmProblem

    X, y = _synthetic(n, seed=n)
    anchor = split_anchor(y, 0.5, random_state=n)
    return CsvmProblem.from_data(
        X,
        y,
        anchor,
        C=float(n),
        kernel=kernel,
        gamma=0.2,
        min_tpr=0.9,
        hoeffding_alpha=None,
        big_m=BIG_M,
        big_m_dual=BIG_M,
    )


#: how part 2 times our engine: ``solve_csvm`` as a user calls it (units without this
#: mark timed ``solve_convex_miqp`` alone from the start, without the CSVM's options)
SOLVER_CALL = "solve_csvm"


def _solver_unit(cfg: ExperimentConfig, kernel: str, n: int) -> dict[str, Any]:
    from torchsvm.exceptions import SolverTimeLimitWarning
    from torchsvm.mip.csvm import (
        build_csvm_model,
        csvm_start,
        solve_csvm,
        start_objective,
    )
    from torchsvm.mip.model import MipConfig

    problem = _solver_problem(kernel, n)
    mcfg = MipConfig(
        time_limit=cfg.csvm.solver_time_limit,
        mip_rel_gap=cfg.mip.mip_rel_gap,
        threads=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        t0 = time.perf_counter()
        # everything a user's call does (model, start, options), timed as a whole
        sol = solve_csvm(problem, mcfg)
        t_oa = time.perf_counter() - t0
    out: dict[str, Any] = {
        "kernel": kernel,
        "n": n,
        "binaries": int(problem.floor_idx.size),
        "oa": {
            "call": SOLVER_CALL,
            "status": sol.status.value,
            "objective": _finite(sol.objective),
            "mip_gap": _finite(sol.mip_gap),
            "rounds": int(sol.n_iter),
            "start_feasible": sol.start_feasible,
        },
        "timing": {"oa_seconds": t_oa},
    }
    # SCIP: the identical model, and the start solve_csvm builds (same S1 solver:
    # libsvm for the linear and RBF kernels), built outside SCIP's time
    model, layout, _ = build_csvm_model(problem)
    start = csvm_start(problem, layout, s1_solver="libsvm").x
    out["start_objective"] = (
        None if start is None else _finite(start_objective(problem, layout, start))
    )
    try:
        from torchsvm.mip.scip import solve_scip

        t0 = time.perf_counter()
        sc = solve_scip(model, mcfg, start=start)
        out["timing"]["scip_seconds"] = time.perf_counter() - t0
        out["scip"] = {
            "status": sc.status.value,
            "objective": _finite(sc.objective),
            "mip_gap": _finite(sc.mip_gap),
        }
    except ImportError:
        out["scip"] = {"status": "pyscipopt missing"}
    return out


# ------------------------------------------------------------------------- report
def _gap(g: float | None) -> str:
    return "inf" if g is None else f"{g:.1e}"


def _ms(vals: list[float]) -> str:
    return "-" if not vals else f"{np.mean(vals):.3f} ({np.std(vals):.3f})"


def _used(cfg: ExperimentConfig, folds: dict[str, tuple[int, int]]) -> dict[str, str]:
    s = cfg.csvm
    exps = list(s.grid_exponents)
    contiguous = exps == list(range(exps[0], exps[-1] + 1))
    grid = (
        f"2^{exps[0]}..2^{exps[-1]}"
        if contiguous
        else "2^{" + ", ".join(map(str, exps)) + "}"
    )
    run = ", ".join(f"{n}: {r}/{k}" for n, (r, k) in folds.items())
    return {
        "datasets": ", ".join(cfg.data.datasets),
        "rows": "all" if cfg.data.max_rows == 0 else f"at most {cfg.data.max_rows}",
        "outer CV": (
            f"{cfg.protocol.n_folds}-fold ({s.large_folds}-fold above {s.large_rows} rows), "
            + (
                "all folds"
                if cfg.protocol.max_folds == 0
                else f"first {cfg.protocol.max_folds}"
            )
        ),
        "inner CV": f"{s.inner_folds}-fold over C, gamma in {grid} ({len(exps)} x {len(exps)})",
        # _inner_cv: libsvm SVC per (C, gamma, fold); no MIQP inside the inner CV
        "inner CV model": "the standard RBF SVM; its C, gamma for all methods",
        "k-means compression": f"each class of I and J, only above {s.large_rows} rows",
        "centroids per class": f"{s.max_per_class}",
        "Hoeffding alpha": "none"
        if not s.hoeffding_alpha
        else f"{s.hoeffding_alpha:g}",
        "MIQP time limit": f"{cfg.mip.time_limit:g} s",
        "M1 = M2": f"{BIG_M:g}",
        "_folds": run,
    }


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Per dataset: mean (std) TPR / TNR per method, folds where the floor held."""
    figures: dict[str, Any] = {"datasets": {}, "solver": []}
    timings: dict[str, Any] = {}
    by_ds: dict[str, list[dict[str, Any]]] = {}
    folds: dict[str, tuple[int, int]] = {}
    for key, r in results.items():
        if key.startswith("solver/"):
            continue
        by_ds.setdefault(key.split("/")[0], []).append(r)
    for u in units(cfg) if cfg.csvm.run_cv else []:
        if u.params["part"] == "cv":
            name = u.params["dataset"]
            done = len(by_ds.get(name, []))
            folds[name] = (done, u.params["n_folds"])
    rows = []
    for name in cfg.data.datasets:
        rs = by_ds.get(name, [])
        if not rs:
            continue
        ds: dict[str, Any] = {
            "folds_done": len(rs),
            "n_folds": folds.get(name, (0, 0))[1],
            "target": [r["target"] for r in rs],
            "compressed": rs[0]["compressed"],
            "mip_rows": [r["mip_rows"] for r in rs],
            "methods": {},
        }
        cells = [name, f"{len(rs)}/{ds['n_folds']}", _ms(ds["target"])]
        for m in METHODS:
            recs = [r["methods"][m] for r in rs if "tpr" in r["methods"].get(m, {})]
            errs = [
                r["methods"][m]["error"]
                for r in rs
                if "error" in r["methods"].get(m, {})
            ]
            mf: dict[str, Any] = {
                "tpr": [x["tpr"] for x in recs],
                "tnr": [x["tnr"] for x in recs],
                "held": sum(x["held"] for x in recs),
                "n_errors": len(errs),
            }
            if m in ("sliding b", "CSVM"):
                mf["floor"] = [x["floor"] for x in recs]
                mf["n_floor_capped"] = sum(x["floor_capped"] for x in recs)
                mf["anchor_tpr"] = [x["anchor_tpr"] for x in recs]
            if m == "CSVM":
                st = [x["status"] for x in recs]
                mf["status"] = {v: st.count(v) for v in sorted(set(st))}
                mf["mip_gap"] = [x["mip_gap"] for x in recs]
            ds["methods"][m] = mf
            cells += [_ms(mf["tpr"]), _ms(mf["tnr"])]
        for m in ("sliding b", "CSVM"):
            mf = ds["methods"][m]
            cells.append(
                f"{mf['held']}/{len(rs)}"
                + (f" ({mf['n_errors']} failed)" if mf["n_errors"] else "")
            )
        csvm = ds["methods"]["CSVM"]
        cells.append(
            _ms(csvm["floor"])
            + (f", {csvm['n_floor_capped']} capped" if csvm["n_floor_capped"] else "")
        )
        cells.append(", ".join(f"{k} {v}" for k, v in csvm["status"].items()) or "-")
        # None: no finite gap (time limit before any lower bound)
        gaps = [np.inf if g is None else g for g in csvm["mip_gap"]]
        cells.append(f"{np.mean(gaps):.1e}, {np.max(gaps):.1e}" if gaps else "-")
        secs = [r["timing"].get("CSVM_solve_seconds") for r in rs]
        secs = [x for x in secs if x is not None]
        timings[name] = {
            "csvm_solve_seconds": secs,
            "inner_cv_seconds": [r["timing"]["inner_cv_seconds"] for r in rs],
        }
        cells.append(f"{np.mean(secs):.1f}, {np.max(secs):.1f}" if secs else "-")
        figures["datasets"][name] = ds
        rows.append("| " + " | ".join(cells) + " |")
    used = _used(cfg, folds)
    text = [
        "## Settings: this run next to the thesis' (SPEC S5)",
        "",
        settings_table(THESIS, used),
        "",
        f"Folds finished: {used['_folds'] or 'none'}. A rerun of the same command resumes.",
        "",
        "## TPR and TNR on held-out folds",
        "",
        "Target p0 = min(1, TPR0 + 0.025), TPR0 = the inner-CV TPR of the selected RBF "
        "SVM. `held` = folds whose held-out TPR reaches p0. `floor` = the floor imposed "
        "on J (p0 plus the Hoeffding margin, capped at 1). Mean (std) over folds.",
        "",
        "| dataset | folds | target p0 | "
        + " | ".join(f"{m} TPR | {m} TNR" for m in METHODS)
        + " | sliding b held | CSVM held | CSVM floor on J | CSVM status | "
        "CSVM gap (mean, max) | CSVM solve s (mean, max) |",
        "|" + "---|" * (3 + 2 * len(METHODS) + 6),
        *rows,
    ]
    solver_rows = []
    old_call = 0
    for key, r in results.items():
        if not key.startswith("solver/"):
            continue
        fig = {k: r[k] for k in ("kernel", "n", "binaries", "oa", "scip")}
        figures["solver"].append(fig)
        t = r["timing"]
        timings[key] = t
        oa, sc = r["oa"], r["scip"]
        nan = float("nan")
        o_oa = nan if oa["objective"] is None else oa["objective"]
        o_sc = nan if sc.get("objective") is None else sc["objective"]
        diff = abs(o_sc - o_oa) / max(1.0, abs(o_oa))
        ratio = t.get("scip_seconds", float("nan")) / t["oa_seconds"]
        # * = a unit run before part 2 timed solve_csvm (module docstring)
        mark = "" if oa.get("call") == SOLVER_CALL else "*"
        old_call += bool(mark)
        solver_rows.append(
            f"| {r['kernel']} | {r['n']}{mark} | {r['binaries']} | {t['oa_seconds']:.2f} | "
            f"{oa['status']} | {_gap(oa.get('mip_gap'))} | {oa['rounds']} | "
            f"{t.get('scip_seconds', nan):.2f} | {sc['status']} | "
            f"{_gap(sc.get('mip_gap'))} | {diff:.1e} | {ratio:.2f} |"
        )
    if solver_rows:
        text += [
            "",
            "## Cost of the solver: outer approximation (HiGHS) vs SCIP on the same MIQP",
            "",
            "Synthetic 5-d data, half the rows anchors, TPR floor 0.9, C = n (thesis' "
            "convention), M = 100; linear kernel in the primal form, RBF (gamma = 0.2) in "
            "the partial dual. OA = our engine as a user calls it (`solve_csvm`: its "
            "sliding-b start and its CSVM options included in its time); SCIP gets the "
            "identical MIQP and the same sliding-b start (built outside its time); "
            f"{cfg.csvm.solver_time_limit:g} s each, gap {cfg.mip.mip_rel_gap:g}, "
            "1 thread. Wall seconds (machine shared, so compare the ratio)."
            + (
                " Rows marked * come from units run before part 2 timed `solve_csvm`: "
                "there OA is `solve_convex_miqp` alone from the start (start untimed, "
                "without the CSVM's options)."
                if old_call
                else ""
            ),
            "",
            "| kernel | n | binaries | OA s | OA status | OA gap | OA rounds | SCIP s | "
            "SCIP status | SCIP gap | obj diff | SCIP s / OA s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *solver_rows,
        ]
    figures["settings"] = {k: v for k, v in used.items() if not k.startswith("_")}

    def plot(out: Path) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(figures["datasets"])
        if not names:
            return []
        fig, ax = plt.subplots(figsize=(1.6 * len(names) + 3, 4))
        width = 0.8 / len(METHODS)
        for i, m in enumerate(METHODS):
            vals = [figures["datasets"][n]["methods"][m]["tpr"] for n in names]
            ax.bar(
                np.arange(len(names)) + (i - 1.5) * width,
                [np.mean(v) if v else np.nan for v in vals],
                width,
                yerr=[np.std(v) if v else 0.0 for v in vals],
                label=m,
            )
        tgt = [np.mean(figures["datasets"][n]["target"]) for n in names]
        ax.scatter(
            np.arange(len(names)),
            tgt,
            marker="_",
            s=600,
            c="k",
            label="target p0",
            zorder=3,
        )
        ax.set_xticks(np.arange(len(names)), names)
        ax.set_ylabel("held-out TPR (mean, std over folds)")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8, loc="lower left")
        ax.set_title("Constrained SVM: held-out TPR against the target")
        return [save_figure(fig, out / "csvm_tpr.png")]

    return ProtocolReport(
        title="Constrained SVM (SPEC S5, thesis ch. 2)",
        figures=figures,
        text="\n".join(text) + "\n\n![held-out TPR](csvm_tpr.png)",
        timings=timings,
        plot=plot,
    )
