"""MIP engine benchmark (issue 19): our engine vs SCIP / brute force, side by side.

Sections (each prints one line per instance and appends a JSON line to
``runs/bench/mip-<stamp>.jsonl``):

- ``fs60``: cost-sensitive feature selection on the 60 x 5 instance of issue 19
  (``make_classification(120, 5, n_informative=3, n_redundant=0, flip_y=0.1,
  class_sep=0.8, random_state=0)``, first 60 rows, floors 0.7, no Hoeffding margin):
  :func:`~torchsvm.mip.feature_selection.solve_feature_selection` vs brute force
  (one HiGHS feasibility MILP per subset, smallest size first) and SCIP on the same
  (P1) model. Target: proven optimal in <= 30 s with brute force's subset size.
- ``csvm``: constrained SVM, synthetic data of ``scripts/reproduce_csvm.py``
  (d = 5, half the rows anchors, C = n, TPR floor 0.9 without Hoeffding margin),
  linear n = 100..1000 and RBF (gamma 0.2) n <= 300: time to proven optimum of
  :func:`~torchsvm.mip.csvm.solve_csvm` (S1 start included) vs SCIP on the same MIQP.
  Target ratio ours / SCIP <= 0.5. ``--csvm-local-search off auto`` also times ours
  without the swap local search (``solve_csvm(local_search=)``), alternately with
  it, ``--csvm-repeats`` times each (ours = the median), against one SCIP solve;
  ``--csvm-tighten off auto`` likewise without and with the anchor rows' big-M
  bounded under the cutoff (``solve_csvm(tighten_anchors=)``), ``--csvm-grid off
  auto`` without and with the grid of tangent cuts (``solve_csvm(grid_cuts=)``).
  The instances are the csvm experiment's part 2 ("Cost of the solver" of
  docs/results/csvm.md: ``torchsvm.experiments.csvm._synthetic``, seed ``n``,
  ``M = 100``); ``--csvm-scip-start`` hands SCIP the sliding-b start that
  ``solve_csvm`` builds (libsvm S1), as that report's runner does since it times
  ``solve_csvm``; ``--csvm-report-oa`` also times the runner's former call
  (``solve_convex_miqp`` from the batched-S1 start). ``--csvm-pool 0 8`` times ours
  without and with polishing each master's pool of improving solutions
  (``solve_csvm(master_pool=)``). ``--csvm-anchor-lps on auto`` times ours with
  and without one LP per floor member for its big-M in the anchor tightening
  (``solve_csvm(anchor_lps=)``; ``auto`` takes the big-M from the box of ``(w, b)``).
  ``--csvm-release off auto`` times ours without and with the release-set screen
  first (``solve_csvm(release_screen=)``).
- ``wisconsin``: feature selection on Wisconsin (398 training rows: stratified 70 %,
  ``random_state=0``, standardised), floors 0.85 with Hoeffding alpha 0.05, both
  engines with the same time limit (300 s). Target: our proven gap <= SCIP's.

- ``overrun``: does ``time_limit`` bound the whole CSVM call (issue 19)? German credit,
  one outer fold of ``configs/csvm.toml`` (``load_fold_data``, the anchor half ``J``
  as the experiment splits it, no compression: 900 rows, RBF kernel form), fitted by
  ``ConstrainedSVC`` with the experiment's settings (``big_m``, Hoeffding alpha,
  libsvm penalty) at each ``--overrun-limits`` value; prints wall time, status, gap
  and the overrun past the limit. ``C``, ``gamma`` and the TPR target default to
  fold 3's inner-CV choice in runs/csvm (``C = 2``, ``gamma = 2^-4``, target
  43/90 + 0.025, its inner-CV TPR plus the step); ``--overrun-C`` etc. change them.
  ``--overrun-rounding on off`` fits each limit with and without the
  relaxation-rounding incumbent (``solve_csvm(round_relaxation=)``) and prints both
  objectives and gaps; ``--overrun-scip`` also runs SCIP on the same MIQP.
  Not part of the default sections (it needs ``TORCHSVM_DATA``).

- ``s5c``: the Ctrl2 S5c MIQP (issue 18) on Wisconsin: the ``wisconsin`` section's
  398 training rows, row weights = the counts of one bootstrap draw
  (``numpy.random.default_rng(--s5c-seed)``), ``on_training``, libsvm penalty,
  ``M = 1000``, TPR floor ``t`` without margin, as ``Ctrl2`` poses it
  (:mod:`torchsvm.estimators.bootstrap`), for each ``--s5c-C`` and ``--s5c-tprs``.
  Each MIQP is solved with the interior point's dense Newton system
  (``qp_solver="ipm-dense"``, the code before the sparse one) and with the default
  (``"ipm"``: sparse for this primal form), alternately, ``--s5c-repeats`` times;
  prints each wall time, the ratio of the medians and both objectives (they must
  agree). ``--s5c-all-rows``: all 569 rows instead (standardised; a Ctrl2 fold of
  10-fold CV has 512). Not part of the default sections (it needs ``TORCHSVM_DATA``).

``--tiny`` runs a seconds-long smoke version of every section.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm.data.resample import split_anchor
from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.csvm import build_csvm_model, csvm_start, solve_csvm
from torchsvm.mip.feature_selection import (
    build_selection_milp,
    solve_feature_selection,
)
from torchsvm.mip.model import MipConfig
from torchsvm.mip.outer_approx import solve_convex_miqp
from torchsvm.mip.scip import solve_scip
from torchsvm.mip.solve import solve_model
from torchsvm.problems.csvm import CsvmProblem
from torchsvm.problems.selection import SelectionProblem
from torchsvm.types import SolveStatus


def _emit(out: Path, row: dict[str, Any]) -> None:
    with out.open("a") as fh:
        fh.write(json.dumps(row, default=float) + "\n")


def _fs60(tiny: bool) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import make_classification

    if tiny:
        X, y = make_classification(
            60, 4, n_informative=3, n_redundant=0, flip_y=0.1, random_state=1
        )
        X, y = X[:30], y[:30]
    else:
        X, y = make_classification(
            120,
            5,
            n_informative=3,
            n_redundant=0,
            flip_y=0.1,
            class_sep=0.8,
            random_state=0,
        )
        X, y = X[:60], y[:60]
    return X, np.where(y > 0, 1.0, -1.0)


def brute_force_size(
    problem: SelectionProblem, time_limit: float
) -> tuple[int | None, float]:
    """Smallest feasible subset size by one HiGHS feasibility MILP per subset."""
    model = build_selection_milp(
        problem.X, problem.y, problem.tpr_floor, problem.tnr_floor
    )
    n, d = problem.X.shape
    t0 = time.perf_counter()
    for k in range(d + 1):
        for S in itertools.combinations(range(d), k):
            m = np.zeros(d, dtype=bool)
            m[list(S)] = True
            lo, up = model.col_lower.copy(), model.col_upper.copy()
            off = np.flatnonzero(~m)
            lo[off] = up[off] = 0.0
            lo[d + 1 + n + off] = up[d + 1 + n + off] = 0.0
            sub = replace(model, c=np.zeros(model.n_cols), col_lower=lo, col_upper=up)
            res = solve_model(sub, MipConfig(time_limit=time_limit))
            if res.status is SolveStatus.optimal:
                return k, time.perf_counter() - t0
            if res.status is not SolveStatus.infeasible:
                return None, time.perf_counter() - t0  # undecided subset
    return None, time.perf_counter() - t0


def run_fs60(args: argparse.Namespace, out: Path) -> None:
    X, y = _fs60(args.tiny)
    tl = 30.0 if args.tiny else args.fs_time_limit
    cfg = MipConfig(time_limit=tl, mip_rel_gap=0.0)
    t0 = time.perf_counter()
    res = solve_feature_selection(X, y, 0.7, 0.7, None, config=cfg)
    t_ours = time.perf_counter() - t0
    problem = SelectionProblem.from_data(X, y, 0.7, 0.7)
    bf_size, t_bf = brute_force_size(problem, 10.0 if args.tiny else 300.0)
    model = build_selection_milp(X, y, problem.tpr_floor, problem.tnr_floor)
    scip = solve_scip(model, replace(cfg, time_limit=tl))
    row = {
        "section": "fs60",
        "n": X.shape[0],
        "d": X.shape[1],
        "ours_time": t_ours,
        "ours_status": res.status.value,
        "ours_size": int(res.support.sum()),
        "ours_gap": res.mip_gap,
        "brute_force_size": bf_size,
        "brute_force_time": t_bf,
        "scip_time": scip.runtime,
        "scip_status": scip.status.value,
        "scip_obj": scip.objective,
        "scip_gap": scip.mip_gap,
        "time_limit": tl,
    }
    _emit(out, row)
    print(
        f"fs60 {X.shape[0]}x{X.shape[1]}: ours {t_ours:.1f}s {res.status.value} "
        f"size {row['ours_size']} gap {res.mip_gap:.3g} | brute force size {bf_size} "
        f"in {t_bf:.1f}s | SCIP {scip.runtime:.1f}s {scip.status.value} "
        f"obj {scip.objective:.4g} gap {scip.mip_gap:.3g}",
        flush=True,
    )


def _versions() -> dict[str, str]:
    """Solver package versions: the masters' search (and so the number of outer-
    approximation rounds) changes between HiGHS releases (docs/benchmarks.md,
    "Linear n = 500")."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for pkg in ("highspy", "pyscipopt", "scipy", "numpy", "torch"):
        try:
            found[pkg] = version(pkg)
        except PackageNotFoundError:
            found[pkg] = "absent"
    return found


def _csvm_problem(kernel: str, n: int) -> CsvmProblem:
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 5))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.9 * rng.normal(size=n) > 0.4, 1, -1)
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
    )


#: --csvm-rounding / --overrun-rounding values -> solve_csvm(round_relaxation=)
_ROUNDING: dict[str, bool | str] = {"off": False, "on": True, "auto": "auto"}


def run_csvm(args: argparse.Namespace, out: Path) -> None:
    jobs = [("linear", n) for n in args.linear_sizes]
    jobs += [("rbf", n) for n in args.rbf_sizes]
    for kernel, n in jobs:
        p = _csvm_problem(kernel, n)
        cfg = MipConfig(time_limit=args.csvm_time_limit, mip_rel_gap=1e-4)
        extra: dict[str, Any] = {}
        roundings = sorted(set(args.csvm_rounding), key=list(_ROUNDING).index)
        searches = sorted(set(args.csvm_local_search), key=list(_ROUNDING).index)
        tightens = sorted(set(args.csvm_tighten), key=list(_ROUNDING).index)
        grids = sorted(set(args.csvm_grid), key=list(_ROUNDING).index)
        pools = list(dict.fromkeys(args.csvm_pool))
        lpss = sorted(set(args.csvm_anchor_lps), key=list(_ROUNDING).index)
        rels = sorted(set(args.csvm_release), key=list(_ROUNDING).index)
        # settings "local_search", "local_search/tighten_anchors" (the latter when
        # more than one tighten_anchors value is timed), with "/grid_cuts" appended
        # when more than one grid_cuts value is timed and "/pool<k>" when more than
        # one master_pool value is and "/lps-<v>" when more than one anchor_lps value
        # is and "/rel-<v>" when more than one release_screen value is; the last is
        # "ours"
        settings = [
            (
                search,
                tighten,
                grid,
                pool,
                lps,
                rel,
                (search if len(tightens) == 1 else f"{search}/{tighten}")
                + ("" if len(grids) == 1 else f"/{grid}")
                + ("" if len(pools) == 1 else f"/pool{pool}")
                + ("" if len(lpss) == 1 else f"/lps-{lps}")
                + ("" if len(rels) == 1 else f"/rel-{rel}"),
            )
            for search in searches
            for tighten in tightens
            for grid in grids
            for pool in pools
            for lps in lpss
            for rel in rels
        ]
        ls_runs: dict[str, list[dict[str, Any]]] = {lab: [] for *_, lab in settings}
        for _rep in range(args.csvm_repeats):
            for search, tighten, grid, pool, lps, rel, label in settings:
                # alternately; the last setting (the default, "auto") is "ours"
                for rounding in roundings:
                    # "off" first: the last one (the default, "auto") is "ours"
                    t0 = time.perf_counter()
                    sol = solve_csvm(
                        p,
                        cfg,
                        round_relaxation=_ROUNDING[rounding],
                        local_search=_ROUNDING[search],
                        tighten_anchors=_ROUNDING[tighten],
                        grid_cuts=_ROUNDING[grid],
                        master_pool=pool,
                        anchor_lps=_ROUNDING[lps],
                        release_screen=_ROUNDING[rel],
                    )
                    t_ours = time.perf_counter() - t0
                    if rounding == "off" and len(roundings) > 1:
                        extra = {
                            "off_time": t_ours,
                            "off_status": str(getattr(sol.status, "value", sol.status)),
                            "off_obj": sol.objective,
                        }
                ls_runs[label].append(
                    {
                        "time": t_ours,
                        "status": str(getattr(sol.status, "value", sol.status)),
                        "obj": sol.objective,
                        "gap": sol.mip_gap,
                        "rounds": sol.n_iter,
                        "load": os.getloadavg()[0],
                    }
                )
        if len(settings) > 1 or args.csvm_repeats > 1:
            extra["local_search_runs"] = ls_runs
        # "ours": the median time of the last setting's repeats
        t_ours = float(np.median([r["time"] for r in ls_runs[settings[-1][-1]]]))
        model, layout, factor = build_csvm_model(p)
        start = scip_start = None
        if args.csvm_scip_start:
            # the experiment's part 2 (torchsvm.experiments.csvm._solver_unit): the
            # start solve_csvm builds itself (libsvm S1 for the linear and RBF kernels)
            scip_start = csvm_start(p, layout, s1_solver="libsvm").x
        if args.csvm_report_oa:
            # the part-2 runner's former call: csvm_start's default (batched) S1 fit
            start = csvm_start(p, layout).x
            # the experiment's own call (torchsvm.experiments.csvm._solver_unit):
            # the outer approximation alone, from that start, timed without it
            # (with each --csvm-grid value, alternately)
            # (and each --csvm-pool value)
            combos = [
                (g, pool, g + ("" if len(pools) == 1 else f"/pool{pool}"))
                for g in grids
                for pool in pools
            ]
            runs: dict[str, list[dict[str, Any]]] = {lab: [] for *_, lab in combos}
            for _rep in range(args.csvm_repeats):
                for g, pool, lab in combos:
                    t0 = time.perf_counter()
                    oa = solve_convex_miqp(
                        model,
                        cfg,
                        start,
                        factor=factor,
                        grid=_ROUNDING[g],
                        master_pool=pool,
                    )
                    runs[lab].append(
                        {
                            "time": time.perf_counter() - t0,
                            "status": oa.status.value,
                            "obj": oa.objective,
                            "rounds": oa.n_iter,
                        }
                    )
            extra["report_oa_runs"] = runs
        scip = solve_scip(model, cfg, start=scip_start)
        both = sol.status == SolveStatus.optimal and scip.status is SolveStatus.optimal
        ratio = t_ours / scip.runtime if both else float("nan")
        row = {
            "section": "csvm",
            "kernel": kernel,
            "n": n,
            "ours_time": t_ours,
            "ours_status": str(getattr(sol.status, "value", sol.status)),
            "ours_obj": sol.objective,
            "ours_gap": sol.mip_gap,
            "ours_rounds": sol.n_iter,
            "scip_time": scip.runtime,
            "scip_status": scip.status.value,
            "scip_obj": scip.objective,
            "scip_gap": scip.mip_gap,
            "ratio": ratio,
            "time_limit": cfg.time_limit,
            "rounding": roundings[-1],
            "tighten_anchors": tightens[-1],
            "grid_cuts": grids[-1],
            "master_pool": pools[-1],
            "release_screen": rels[-1],
            "scip_start": bool(args.csvm_scip_start),
            **extra,
        }
        if "off_time" in extra:
            row["off_ratio"] = extra["off_time"] / scip.runtime if both else math.nan
        _emit(out, row)
        print(
            f"csvm {kernel:6s} n={n:5d}: ours {t_ours:7.2f}s {row['ours_status']:10s} "
            f"obj {sol.objective:.6g} | SCIP {scip.runtime:7.2f}s "
            f"{scip.status.value:10s} obj {scip.objective:.6g} | ratio {ratio:.2f}"
            + (
                f" | without rounding {extra['off_time']:.2f}s {extra['off_status']} "
                f"obj {extra['off_obj']:.6g} ratio {row['off_ratio']:.2f}"
                if "off_time" in extra
                else ""
            )
            + f" | load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for g, runs in extra.get("report_oa_runs", {}).items():
            times = [r["time"] for r in runs]
            print(
                f"    part 2's former call (solve_convex_miqp from the batched-S1 start), {g}: "
                + ", ".join(
                    f"{r['time']:.2f}s {r['status']} ({r['rounds']} rounds)"
                    for r in runs
                )
                + f" | median {np.median(times):.2f}s, ratio "
                f"{np.median(times) / scip.runtime:.2f}",
                flush=True,
            )
        if "local_search_runs" in extra:
            for search, runs in ls_runs.items():
                times = [r["time"] for r in runs]
                print(
                    "    "
                    + ("local_search" if len(tightens) == 1 else "ls/tighten")
                    + ("" if len(grids) == 1 else "/grid")
                    + ("" if len(pools) == 1 else "/pool")
                    + ("" if len(lpss) == 1 else "/lps")
                    + ("" if len(rels) == 1 else "/rel")
                    + f"={search}: "
                    + ", ".join(
                        f"{r['time']:.2f}s {r['status']} ({r['rounds']} rounds)"
                        for r in runs
                    )
                    + f" | median {np.median(times):.2f}s, ratio "
                    f"{np.median(times) / scip.runtime:.2f}",
                    flush=True,
                )


def _wisconsin(tiny: bool) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from torchsvm.data.datasets import load_dataset

    ds = load_dataset("wisconsin")
    X = np.asarray(ds.X, dtype=np.float64)
    y = np.where(np.asarray(ds.y) > 0, 1.0, -1.0)  # +1 = malignant
    Xtr, _, ytr, _ = train_test_split(X, y, train_size=0.7, stratify=y, random_state=0)
    if tiny:
        Xtr, ytr = Xtr[:, :8], ytr  # all rows (the Hoeffding margin needs them)
    return StandardScaler().fit_transform(Xtr), ytr


def run_wisconsin(args: argparse.Namespace, out: Path) -> None:
    X, y = _wisconsin(args.tiny)
    tl = 5.0 if args.tiny else args.wisconsin_time_limit
    cfg = MipConfig(time_limit=tl, mip_rel_gap=1e-4)
    alpha = 0.05
    t0 = time.perf_counter()
    res = solve_feature_selection(X, y, 0.85, 0.85, alpha, config=cfg)
    t_ours = time.perf_counter() - t0
    problem = SelectionProblem.from_data(X, y, 0.85, 0.85, alpha)
    model = build_selection_milp(X, y, problem.tpr_floor, problem.tnr_floor)
    scip = solve_scip(model, cfg)
    row = {
        "section": "wisconsin",
        "n": X.shape[0],
        "d": X.shape[1],
        "ours_time": t_ours,
        "ours_status": res.status.value,
        "ours_cost": res.cost,
        "ours_bound": res.result.bound,
        "ours_gap": res.mip_gap,
        "scip_time": scip.runtime,
        "scip_status": scip.status.value,
        "scip_obj": scip.objective,
        "scip_bound": scip.bound,
        "scip_gap": scip.mip_gap,
        "time_limit": tl,
    }
    _emit(out, row)
    print(
        f"wisconsin {X.shape[0]}x{X.shape[1]}: ours {t_ours:.1f}s {res.status.value} "
        f"cost {res.cost:g} bound {res.result.bound:.4g} gap {res.mip_gap:.3g} | "
        f"SCIP {scip.runtime:.1f}s {scip.status.value} obj {scip.objective:.4g} "
        f"bound {scip.bound:.4g} gap {scip.mip_gap:.3g}",
        flush=True,
    )


def run_s5c(args: argparse.Namespace, out: Path) -> None:
    if args.s5c_all_rows:
        from sklearn.preprocessing import StandardScaler

        from torchsvm.data.datasets import load_dataset

        ds = load_dataset("wisconsin")
        X = StandardScaler().fit_transform(np.asarray(ds.X, dtype=np.float64))
        y = np.where(np.asarray(ds.y) > 0, 1.0, -1.0)
    else:
        X, y = _wisconsin(args.tiny)
    n = X.shape[0]
    counts = np.bincount(
        np.random.default_rng(args.s5c_seed).integers(0, n, n), minlength=n
    ).astype(np.float64)
    cfg = MipConfig(time_limit=args.s5c_time_limit, mip_rel_gap=1e-4)
    for C, t in itertools.product(args.s5c_C, args.s5c_tprs):
        problem = CsvmProblem.from_data(
            X,
            y,
            None,
            sample_weight=counts,
            on_training=True,
            penalty="libsvm",
            C=float(C),
            kernel="linear",
            min_tpr=float(t),
            hoeffding_alpha=None,
            big_m=1000.0,
        )
        times: dict[str, list[float]] = {"ipm-dense": [], "ipm": []}
        objs: dict[str, float] = {}
        status: dict[str, str] = {}
        for _ in range(args.s5c_repeats):
            for qp in times:
                t0 = time.perf_counter()
                sol = solve_csvm(problem, cfg, qp_solver=qp)
                times[qp].append(time.perf_counter() - t0)
                objs[qp], status[qp] = sol.objective, sol.status.value
        med = {k: float(np.median(v)) for k, v in times.items()}
        row = {
            "section": "s5c",
            "n": n,
            "d": X.shape[1],
            "C": C,
            "tpr": t,
            "seed": args.s5c_seed,
            "times": times,
            "objective": objs,
            "status": status,
            "ratio": med["ipm"] / med["ipm-dense"],
            "loadavg": os.getloadavg(),
        }
        _emit(out, row)
        print(
            f"s5c C={C:g} t={t:g}: dense {med['ipm-dense']:.2f}s "
            f"{status['ipm-dense']} obj {objs['ipm-dense']:.10g} | default "
            f"{med['ipm']:.2f}s {status['ipm']} obj {objs['ipm']:.10g} | ratio "
            f"{row['ratio']:.2f} (medians of {args.s5c_repeats}; load "
            f"{os.getloadavg()[0]:.1f})",
            flush=True,
        )


def run_overrun(args: argparse.Namespace, out: Path) -> None:
    from torchsvm.config import load_config
    from torchsvm.estimators.csvm import ConstrainedSVC
    from torchsvm.experiments.csvm import BIG_M
    from torchsvm.experiments.runner import load_fold_data

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "csvm.toml")
    d = load_fold_data(cfg, "german", args.overrun_fold, n_folds=cfg.protocol.n_folds)
    X, y = d["X_train"], d["y_train"]
    if args.tiny:
        X, y = X[:120], y[:120]
    J = split_anchor(y, 0.5, shuffle=False)
    # rows stacked as the experiment stacks them: I first, then J
    X, y = np.vstack([X[~J], X[J]]), np.concatenate([y[~J], y[J]])
    J = np.arange(y.size) >= int((~J).sum())
    import torchsvm.estimators.csvm as est_csvm
    from torchsvm.mip.csvm import solve_csvm

    limits = [5.0] if args.tiny else args.overrun_limits
    for limit, rounding in itertools.product(limits, args.overrun_rounding):
        # off: the engine without the relaxation-rounding incumbent, for a
        # before/after comparison in one run
        est_csvm.solve_csvm = functools.partial(
            solve_csvm, round_relaxation=_ROUNDING[rounding]
        )
        est = ConstrainedSVC(
            C=args.overrun_C,
            kernel="rbf",
            gamma=args.overrun_gamma,
            min_tpr=args.overrun_min_tpr,
            hoeffding_alpha=cfg.csvm.hoeffding_alpha or None,
            penalty="libsvm",
            big_m=BIG_M,
            time_limit=limit,
            mip_rel_gap=cfg.mip.mip_rel_gap,
        )
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, y, anchor_mask=J, sample_weight=np.ones(y.size))
        wall = time.perf_counter() - t0
        est_csvm.solve_csvm = solve_csvm
        scip_row: dict[str, Any] = {}
        if args.overrun_scip:
            # SCIP on exactly the MIQP ours solved, with the same limit and gap
            problem = est._build_problem(X, y, J, np.ones(y.size))
            model, _, _ = build_csvm_model(problem)
            scip = solve_scip(
                model,
                MipConfig(time_limit=limit, mip_rel_gap=cfg.mip.mip_rel_gap),
            )
            scip_row = {
                "scip_time": scip.runtime,
                "scip_status": scip.status.value,
                "scip_obj": scip.objective,
                "scip_gap": scip.mip_gap,
            }
        row = {
            "section": "overrun",
            **scip_row,
            "rounding": rounding,
            "objective": float(est.objective_),
            "dataset": "german",
            "fold": args.overrun_fold,
            "n": int(y.size),
            "time_limit": limit,
            "wall": wall,
            "solve_time": est.solve_time_,
            "overrun": est.solve_time_ - limit,
            "status": est.status_,
            "gap": est.mip_gap_,
            "rounds": int(est.n_iter_),
            "warnings": sorted({w.category.__name__ for w in caught}),
            "load1": load0,
        }
        _emit(out, row)
        print(
            f"overrun german fold {args.overrun_fold} n={y.size}: limit {limit:g}s "
            f"solve {est.solve_time_:.2f}s (overrun {row['overrun']:+.2f}s, fit "
            f"{wall:.2f}s) rounding {rounding} {est.status_} obj {est.objective_:.6g} "
            f"gap {est.mip_gap_:.3g} rounds {est.n_iter_} "
            f"load {load0:.1f}"
            + (
                f" | SCIP {scip_row['scip_time']:.2f}s {scip_row['scip_status']} obj "
                f"{scip_row['scip_obj']:.6g} gap {scip_row['scip_gap']:.3g}"
                if scip_row
                else ""
            ),
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument(
        "--only", default="fs60,csvm,wisconsin", help="comma-separated sections"
    )
    ap.add_argument("--linear-sizes", type=int, nargs="*", default=None)
    ap.add_argument("--rbf-sizes", type=int, nargs="*", default=None)
    ap.add_argument("--csvm-time-limit", type=float, default=300.0)
    ap.add_argument("--fs-time-limit", type=float, default=60.0)
    ap.add_argument("--wisconsin-time-limit", type=float, default=300.0)
    ap.add_argument("--overrun-limits", type=float, nargs="*", default=[60.0, 120.0])
    ap.add_argument(
        "--csvm-rounding",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(round_relaxation=) of ours; 'auto off' also "
        "times ours without the relaxation-rounding incumbent (same run, same SCIP "
        "reference)",
    )
    ap.add_argument(
        "--csvm-local-search",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(local_search=) of ours; 'off auto' times "
        "both (alternately, --csvm-repeats times each; same SCIP reference)",
    )
    ap.add_argument(
        "--csvm-tighten",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(tighten_anchors=) of ours; 'off auto' times "
        "both (alternately with each --csvm-local-search value, --csvm-repeats "
        "times each; same SCIP reference)",
    )
    ap.add_argument(
        "--csvm-grid",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(grid_cuts=) of ours; 'off auto' times both "
        "(alternately with each --csvm-local-search / --csvm-tighten value)",
    )
    ap.add_argument(
        "--csvm-pool",
        nargs="+",
        type=int,
        default=[8],
        help="csvm section: solve_csvm(master_pool=) of ours (and of the report's "
        "call); '0 8' times both, alternately (0: no master's pool polished)",
    )
    ap.add_argument(
        "--csvm-anchor-lps",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(anchor_lps=) of ours; 'on auto' times both "
        "(alternately with the other settings; same SCIP reference)",
    )
    ap.add_argument(
        "--csvm-release",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="csvm section: solve_csvm(release_screen=) of ours; 'off auto' times "
        "both (alternately with the other settings; same SCIP reference)",
    )
    ap.add_argument(
        "--csvm-scip-start",
        action="store_true",
        help="csvm section: hand SCIP the sliding-b start solve_csvm builds "
        "(csvm_start with libsvm S1), as the csvm experiment's part 2 does",
    )
    ap.add_argument(
        "--csvm-report-oa",
        action="store_true",
        help="csvm section: also time the csvm experiment's former call "
        "(solve_convex_miqp from csvm_start, without solve_csvm's options), "
        "--csvm-repeats times with each --csvm-grid value",
    )
    ap.add_argument(
        "--csvm-repeats",
        type=int,
        default=1,
        help="csvm section: solves of ours per setting; ours = their median time",
    )
    ap.add_argument(
        "--overrun-rounding",
        nargs="+",
        choices=tuple(_ROUNDING),
        default=["auto"],
        help="relaxation-rounding incumbent (solve_csvm round_relaxation); "
        "'on off' runs both at each limit",
    )
    ap.add_argument(
        "--overrun-scip",
        action="store_true",
        help="also solve the same MIQP with SCIP at each limit",
    )
    ap.add_argument("--overrun-fold", type=int, default=3)
    ap.add_argument("--overrun-C", type=float, default=2.0)
    ap.add_argument("--overrun-gamma", type=float, default=0.0625)
    # fold 3's inner-CV TPR is 43/90
    ap.add_argument("--overrun-min-tpr", type=float, default=43 / 90 + 0.025)
    ap.add_argument("--s5c-C", type=float, nargs="*", default=[0.1, 1.0, 10.0])
    ap.add_argument("--s5c-tprs", type=float, nargs="*", default=[0.97, 0.995])
    ap.add_argument("--s5c-seed", type=int, default=0)
    ap.add_argument("--s5c-repeats", type=int, default=3)
    ap.add_argument("--s5c-time-limit", type=float, default=60.0)
    ap.add_argument("--s5c-all-rows", action="store_true")
    ap.add_argument("--out-dir", default="runs/bench")
    args = ap.parse_args(argv)
    if args.linear_sizes is None:
        args.linear_sizes = [40] if args.tiny else [100, 200, 500, 1000]
    if args.rbf_sizes is None:
        args.rbf_sizes = [30] if args.tiny else [100, 200, 300]
    if args.tiny:
        args.csvm_time_limit = 30.0
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = (
        out_dir
        / f"mip-{time.strftime('%Y%m%d-%H%M%S')}{'-tiny' if args.tiny else ''}.jsonl"
    )
    _emit(
        out,
        {
            "section": "meta",
            "argv": sys.argv if argv is None else argv,
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "versions": _versions(),
        },
    )
    print(f"load average {os.getloadavg()}; {_versions()}; writing {out}", flush=True)
    # a fresh checkout compiles the active-set kernel on first use (tens of seconds
    # once, cached on disk afterwards); solve_feature_selection and solve_csvm do it
    # before their clocks start, and the timings below are of the solves
    from torchsvm.solvers.active_set_kernel import warm

    t0 = time.perf_counter()
    warm()
    t_warm = time.perf_counter() - t0
    _emit(out, {"section": "meta", "numba_warm_s": t_warm})
    print(f"numba warm-up {t_warm:.1f}s (not in the timings)", flush=True)
    sections = {
        "fs60": run_fs60,
        "csvm": run_csvm,
        "wisconsin": run_wisconsin,
        "overrun": run_overrun,
        "s5c": run_s5c,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        for name in args.only.split(","):
            if name not in sections:
                raise SystemExit(
                    f"unknown section {name!r}; choose from {list(sections)}"
                )
            sections[name](args, out)
    _emit(out, {"section": "meta", "loadavg_end": os.getloadavg()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
