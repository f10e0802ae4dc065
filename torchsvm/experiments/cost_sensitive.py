"""Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5; thesis ch. 3).

For every dataset, outer fold (preprocessing fitted on the training rows only), imposed
TPR ``t`` of ``cost_sensitive.tprs`` and control (one unit each), the bootstrap
probabilistic SVM is fitted on the same bootstrap draws (same ``random_state``):

- Ctrl1 (``threshold``): ``BootstrapProbabilitySVC(target_tpr=t)``: S1 fits, vote
  threshold ``-a`` chosen on out-of-bag scores;
- Ctrl2 (``csvm``): ``BootstrapProbabilitySVC(target_tpr=t, control="csvm")``: every
  fit is the training-set constrained SVM S5c with the TPR floor ``t`` (HiGHS outer
  approximation, ``mip.time_limit`` seconds each). The Ctrl2 units of one fold share
  one S5c path over all t (:func:`torchsvm.estimators.bootstrap.fit_s5c_path`: S1 kept
  where it meets the floor, a proven optimum at a lower t kept where it meets a higher
  floor; both exact, so each model is its own fit to the MIQP gap);
- t = 0 (``cost_sensitive.uncontrolled``): ``BootstrapProbabilitySVC(target_tpr=None)``,
  fitted once per fold and shown in both columns (no threshold shift, no floor).

Reported per dataset and ``t`` (mean over folds): the MSE of ``P(+|x)`` on the held-out
positives (``mean (1 - p)^2``) and negatives (``mean p^2``), the held-out TPR / TNR of
``P(+|x) >= 1/2``, and the seconds per ensemble fit. Kernel: ``bootstrap.kernel``
(linear in the paper).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from torchsvm.config import ExperimentConfig
from torchsvm.experiments.csvm import settings_table
from torchsvm.experiments.report import ProtocolReport
from torchsvm.experiments.runner import Unit, load_fold_data

__all__ = [
    "CONTROLS",
    "THESIS",
    "assemble",
    "ctrl2_pilot",
    "ctrl2_workload",
    "run_unit",
    "units",
]

CONTROLS = ("threshold", "csvm")
LABEL = {"threshold": "Ctrl1", "csvm": "Ctrl2"}
#: the thesis' protocol (SPEC S2, S5; ch. 3, as issue 18 states it), shown next to the
#: settings used
THESIS = {
    "datasets": "wisconsin, australian, german, absenteeism, careval, churn, housing, "
    "srbct",
    "rows": "all",
    "outer CV": "10-fold stratified, all folds",
    "kernel": "linear",
    "bootstrap replicates B": ">= 100",
    "C grid": "11 values, 2^-5..2^5",
    "imposed TPR t": "none (t = 0), 0.5 to 1",
    "Ctrl2 C convention": "as S1 (u_i = C c_i)",
    "S5c time limit per fit": "not stated",
    "Ctrl2 units finished": "every dataset, fold and t",
    "Ctrl2 fits at their time limit (incumbent, not proven optimal)": "none",
}


def units(cfg: ExperimentConfig) -> list[Unit]:
    """One unit per (dataset, fold, imposed TPR, control); t = 0 once per fold.

    Order (the runner runs units in this order, so a partial run holds the cheap part
    whole): first t = 0 and Ctrl1 (one batch of S1 fits each) for every dataset and
    fold, then Ctrl2 (up to ``R * B`` MIQPs each) dataset by dataset, fold by fold.
    """
    cheap, ctrl2 = [], []
    for name in cfg.data.datasets:
        for k in range(cfg.protocol.folds_run):
            if cfg.cost_sensitive.uncontrolled:
                cheap.append(
                    Unit(
                        f"{name}/fold_{k:02d}/tpr_0.00/none",
                        {"dataset": name, "fold": k, "tpr": 0.0, "control": "none"},
                    )
                )
            for control, bucket in (("threshold", cheap), ("csvm", ctrl2)):
                bucket += [
                    Unit(
                        f"{name}/fold_{k:02d}/tpr_{t:.2f}/{control}",
                        {"dataset": name, "fold": k, "tpr": t, "control": control},
                    )
                    for t in cfg.cost_sensitive.tprs
                ]
    return cheap + ctrl2


#: the last (dataset, fold)'s models per control, one per target:
#: {control: (key, {t: model}, seconds)}
_CACHE: dict[str, Any] = {}


def _shared_models(
    cfg: ExperimentConfig,
    p: dict[str, Any],
    X: np.ndarray,
    y: np.ndarray,
    make: Any,
) -> tuple[Any, float]:
    """The unit's model, from ONE fit shared by every imposed t of its (dataset, fold).

    - t = 0 and Ctrl1: the S1 fits do not depend on t (only the out-of-bag threshold
      does), so the first such unit of a (dataset, fold) fits the R * B SVMs once
      (:meth:`~torchsvm.estimators.bootstrap.BootstrapProbabilitySVC.fit_targets`, each
      model equal to its own fit);
    - Ctrl2: the first Ctrl2 unit of a (dataset, fold) fits one S5c path over all the
      config's t (:func:`~torchsvm.estimators.bootstrap.fit_s5c_path`: S1 fits shared,
      S1 kept where it meets the floor, a proven optimum at a lower t kept where it
      meets the higher floor, else a MIQP; every fit the optimum of its own S5c, to the
      MIQP's gap).

    The other units take theirs from this cache (the runner runs them one after
    another). Seconds: the shared fit's (one ensemble fit, or the whole Ctrl2 path).
    """
    from torchsvm.config import config_fingerprint

    control = "csvm" if p["control"] == "csvm" else "threshold"
    key = f"{config_fingerprint(cfg)}/{p['dataset']}/{p['fold']}"
    tprs = [float(t) for t in cfg.cost_sensitive.tprs]
    targets: list[float | None] = sorted(tprs) if control == "csvm" else [None, *tprs]
    want = None if p["control"] == "none" else float(p["tpr"])
    if want not in targets:  # a t outside the config's list (direct call): fit it alone
        targets = [want] if control == "csvm" else [*targets, want]
    hit = _CACHE.get(control)
    if hit is None or hit[0] != key or want not in hit[1]:
        _CACHE.pop(control, None)  # free the previous fold's models first
        t0 = time.perf_counter()
        models = make(targets[0], control).fit_targets(X, y, targets)
        _CACHE[control] = (
            key,
            dict(zip(targets, models, strict=True)),
            time.perf_counter() - t0,
        )
    _, models, secs = _CACHE[control]
    return models[want], float(secs)


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Fit one controlled ensemble and score it on the held-out rows."""
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC

    p = unit.params
    d = load_fold_data(cfg, p["dataset"], p["fold"])
    y_tr = np.where(np.asarray(d["y_train"]) > 0, 1, -1)
    y_te = np.where(np.asarray(d["y_test"]) > 0, 1, -1)
    b = cfg.bootstrap

    def make(target: float | None, control: str = "threshold") -> Any:
        return BootstrapProbabilitySVC(
            C_grid=np.asarray(b.C_grid, dtype=float),
            n_bootstrap=b.n_bootstrap,
            accuracy_eps=b.accuracy_eps,
            kernel=b.kernel,
            gamma=b.gamma_value,
            target_tpr=target,
            control=control,
            mip_time_limit=cfg.mip.time_limit,
            random_state=cfg.protocol.seed,
            device=cfg.device,
        )

    m, fit_s = _shared_models(cfg, p, d["X_train"], y_tr, make)
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
        "n_pos": int(pos.sum()),
        "n_neg": int(neg.sum()),
        "d": int(d["X_train"].shape[1]),
        "n_rows_used": int(d["keep"].size),
    }
    if p["control"] == "csvm":
        st = [str(s) for s in m.mip_status_.ravel().tolist()]
        out["mip_status"] = {s: st.count(s) for s in sorted(set(st))}
        out["mip_gap_max"] = float(np.max(m.mip_gap_))
        src = [str(s) for s in m.ctrl2_source_.ravel().tolist()]
        out["ctrl2_source"] = {s: src.count(s) for s in sorted(set(src))}
        miqp = m.ctrl2_source_ == "miqp"
        out["miqp_seconds"] = float(m.ctrl2_seconds_[miqp].sum())
        out["miqp_seconds_max"] = float(m.ctrl2_seconds_[miqp].max(initial=0.0))
    return out


def ctrl2_workload(
    cfg: ExperimentConfig,
    dataset: str,
    fold: int = 0,
    miqp_cpu_seconds: float | None = None,
) -> dict[str, Any]:
    """How many of Ctrl2's ``R * B`` S5c fits need a MIQP, per imposed t, on one fold.

    A replicate's S5c fit is its S1 fit when that fit already meets the floor in S5c's
    sense (a positive counts when ``y_i f(x_i) >= 1``, weighted by its draw count;
    :func:`torchsvm.estimators.bootstrap.fit_s5c_path`); a floor that every in-bag
    positive must meet (``forced``, e.g. t = 1) is one QP; only the others solve a MIQP
    of up to ``mip.time_limit`` seconds, fewer where the path reuses a lower t's
    optimum (not counted here: that needs the MIQPs). The S1 fits are the bootstrap SVM's (same draws),
    so this costs one ensemble fit and bounds the Ctrl2 cost of the fold from the count.

    ``miqp_cpu_seconds`` (e.g. a pilot's median CPU seconds per MIQP,
    :func:`ctrl2_pilot`) adds the CPU-hour estimate of this fold and of all
    ``protocol.n_folds`` folds, taking this fold's count as every fold's.
    """
    from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC

    d = load_fold_data(cfg, dataset, fold)
    y = np.where(np.asarray(d["y_train"]) > 0, 1, -1)
    b = cfg.bootstrap
    m = BootstrapProbabilitySVC(
        C_grid=np.asarray(b.C_grid, dtype=float),
        n_bootstrap=b.n_bootstrap,
        kernel=b.kernel,
        gamma=b.gamma_value,
        random_state=cfg.protocol.seed,
        device=cfg.device,
    )
    t0 = time.perf_counter()
    _, y_pm, scores = m._fit_ensemble(d["X_train"], y)  # (R, B, n), the S1 fits
    secs = time.perf_counter() - t0
    w = m.counts_ * (y_pm > 0)[None, :]  # (B, n): in-bag weight of each positive
    met = (y_pm * scores) >= 1.0 - 1e-7  # S5c's z_i = 1 (tolerance as its S1 check)
    rate = (met * w[None]).sum(2) / w.sum(1)[None, :]  # (R, B) weighted in-bag TPR
    # a floor that no row can be dropped from fixes the binaries: one QP, no MIQP
    # (torchsvm.estimators.bootstrap._forces_all)
    total = w.sum(1)
    lightest = np.where(w > 0, w, np.inf).min(1)
    out: dict[str, Any] = {
        "dataset": dataset,
        "fold": fold,
        "n_train": int(y.size),
        "fits": int(rate.size),
        "s1_ensemble_seconds": secs,
        "miqps": {},
        "forced": {},
    }
    for t in cfg.cost_sensitive.tprs:
        need = rate < t - 1e-12
        forced = (total - lightest < t * total - 1e-9)[None, :] & need
        out["miqps"][f"{t:.2f}"] = int(np.sum(need & ~forced))
        out["forced"][f"{t:.2f}"] = int(np.sum(forced))
    total = sum(out["miqps"].values())
    out["miqps_total"] = total
    if miqp_cpu_seconds is not None:
        out["miqp_cpu_seconds"] = float(miqp_cpu_seconds)
        out["cpu_hours_fold"] = total * float(miqp_cpu_seconds) / 3600.0
        out["cpu_hours_all_folds"] = out["cpu_hours_fold"] * cfg.protocol.n_folds
    return out


def ctrl2_pilot(
    cfg: ExperimentConfig,
    dataset: str,
    fold: int = 0,
    replicates: Sequence[int] = (0, 1, 2, 3, 4),
    share_seeds: bool = False,
) -> dict[str, Any]:
    """Ctrl2's S5c path on some replicates of one fold: what the full fold costs.

    The draws are the run's (``bootstrap.n_bootstrap`` replicates, seed
    ``protocol.seed``); the path (:func:`torchsvm.estimators.bootstrap.fit_s5c_path`,
    every C of the grid, every t of ``cost_sensitive.tprs``, ``mip.time_limit`` s per
    MIQP) is fitted on the replicates listed only. Replicates are independent, so a
    full fold costs about ``B / len(replicates)`` times the path's seconds.
    ``share_seeds=True`` also seeds each MIQP with every earlier fit of its replicate
    (:func:`torchsvm.estimators.bootstrap.fit_s5c_path`), to measure what that saves.

    Returns
    -------
    dict
        Per t: how the fits were obtained (``s1`` / ``reused`` / ``forced`` /
        ``miqp``), MIQP statuses, MIQP wall seconds (sum, median, 90 % quantile, max),
        MIQP CPU seconds (sum, median, max; on a loaded machine the honest measure of
        work) and the largest gap; the path's wall and CPU seconds and their
        extrapolation to all B replicates.
    """
    from torchsvm.estimators.bootstrap import _draw_counts, fit_s5c_path

    d = load_fold_data(cfg, dataset, fold)
    y = np.where(np.asarray(d["y_train"]) > 0, 1.0, -1.0)
    b = cfg.bootstrap
    counts = _draw_counts(y, b.n_bootstrap, cfg.protocol.seed)
    reps = np.asarray(list(replicates), dtype=np.intp)
    c0 = time.process_time()
    tprs = sorted(float(t) for t in cfg.cost_sensitive.tprs)
    path = fit_s5c_path(
        d["X_train"],
        y,
        counts[reps],
        np.asarray(b.C_grid, dtype=float),
        tprs,
        kernel=b.kernel,
        time_limit=cfg.mip.time_limit,
        mip_rel_gap=cfg.mip.mip_rel_gap,
        share_seeds=share_seeds,
    )
    per_t: dict[str, Any] = {}
    for k, t in enumerate(tprs):
        src = path.source[k]
        miqp = src == "miqp"
        s = path.seconds[k][miqp]
        cpu = path.cpu_seconds[k][miqp] if path.cpu_seconds is not None else s
        st = path.statuses(k)[miqp].tolist()
        per_t[f"{t:.2f}"] = {
            "fits": int(src.size),
            "s1": int((src == "s1").sum()),
            "reused": int((src == "reused").sum()),
            "forced": int((src == "forced").sum()),
            "miqp": int(miqp.sum()),
            "miqp_status": {x: st.count(x) for x in sorted(set(st))},
            "miqp_seconds": float(s.sum()),
            "miqp_seconds_median": float(np.median(s)) if s.size else 0.0,
            "miqp_seconds_q90": float(np.quantile(s, 0.9)) if s.size else 0.0,
            "miqp_seconds_max": float(s.max(initial=0.0)),
            "gap_max": float(path.gaps(k)[miqp].max(initial=0.0)),
            "miqp_rounds": [
                int(sol.n_iter)
                for row, m_row in zip(path.solutions[k], miqp, strict=True)
                for sol, m in zip(row, m_row, strict=True)
                if m
            ],
            "miqp_cpu_seconds": float(cpu.sum()),
            "miqp_cpu_seconds_median": float(np.median(cpu)) if cpu.size else 0.0,
            "miqp_cpu_seconds_max": float(cpu.max(initial=0.0)),
            "other_cpu_seconds": float(
                path.cpu_seconds[k][~miqp].sum() if path.cpu_seconds is not None else 0
            ),
        }
    scale = b.n_bootstrap / reps.size
    cpu_total = time.process_time() - c0
    return {
        "dataset": dataset,
        "fold": fold,
        "n_train": int(y.size),
        "replicates": reps.tolist(),
        "n_bootstrap": int(b.n_bootstrap),
        "time_limit": float(cfg.mip.time_limit),
        "share_seeds": bool(share_seeds),
        "per_t": per_t,
        "s1_seconds": float(path.s1_seconds),
        "s1_cpu_seconds": float(path.s1_cpu_seconds),
        "path_seconds": float(path.wall_time),
        "path_cpu_seconds": float(cpu_total),
        "fold_seconds_estimate": float(path.wall_time * scale),
        "fold_cpu_seconds_estimate": float(cpu_total * scale),
    }


def _settings(cfg: ExperimentConfig) -> dict[str, str]:
    """The settings of this run, keyed as :data:`THESIS`."""
    b = cfg.bootstrap
    grid = np.log2(np.asarray(b.C_grid, dtype=float))
    whole = np.allclose(grid, np.round(grid)) and np.allclose(np.diff(grid), 1.0)
    cgrid = (
        f"{len(grid)} values, 2^{int(grid[0])}..2^{int(grid[-1])}"
        if whole and grid.size > 1
        else f"{len(grid)} values {list(b.C_grid)}"
    )
    tprs = ", ".join(f"{t:g}" for t in cfg.cost_sensitive.tprs)
    return {
        "datasets": ", ".join(cfg.data.datasets),
        "rows": "all" if cfg.data.max_rows == 0 else f"at most {cfg.data.max_rows}",
        "outer CV": f"{cfg.protocol.n_folds}-fold stratified, "
        + (
            "all folds"
            if cfg.protocol.max_folds == 0
            else f"first {cfg.protocol.folds_run}"
        ),
        "kernel": b.kernel,
        "bootstrap replicates B": f"{b.n_bootstrap}",
        "C grid": cgrid,
        "imposed TPR t": ("none (t = 0), " if cfg.cost_sensitive.uncontrolled else "")
        + tprs,
        "Ctrl2 C convention": "as S1 (u_i = C c_i)",
        "S5c time limit per fit": f"{cfg.mip.time_limit:g} s",
    }


def _pooled(us: list[dict[str, Any]]) -> float:
    """Held-out TPR pooled over folds (fold means when a unit lacks the counts)."""
    if all("n_pos" in u for u in us):
        n = sum(u["n_pos"] for u in us)
        return float(sum(u["tpr"] * u["n_pos"] for u in us) / max(n, 1))
    return float(np.mean([u["tpr"] for u in us]))


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """Per dataset and imposed TPR: fold means of MSE+ / MSE- / TPR / TNR per control."""
    figures: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    b = cfg.bootstrap
    used = _settings(cfg)
    expected = units(cfg)
    done = [u.key for u in expected if u.key in results]
    c2 = [u.key for u in expected if u.key.endswith("/csvm")]
    c2_done = [k for k in c2 if k in results]
    whole = [
        name
        for name in cfg.data.datasets
        if (mine := [k for k in c2 if k.startswith(f"{name}/")])
        and all(k in results for k in mine)
    ]
    used["Ctrl2 units finished"] = (
        f"{len(c2_done)} of {len(c2)}; datasets complete: {', '.join(whole) or 'none'}"
    )
    n_limit = sum(
        v
        for k in c2_done
        for s_, v in results[k].get("mip_status", {}).items()
        if s_ != "optimal"
    )
    n_fits = sum(sum(results[k].get("mip_status", {}).values()) for k in c2_done)
    used["Ctrl2 fits at their time limit (incumbent, not proven optimal)"] = (
        f"{n_limit} of {n_fits}" if n_fits else "none run"
    )
    lines = [
        "## Settings: this run next to the thesis' (SPEC S2, S5; issue 18)",
        "",
        settings_table(
            THESIS,
            used,
            same={
                "bootstrap replicates B": b.n_bootstrap >= 100,
                "S5c time limit per fit": True,
                "imposed TPR t": cfg.cost_sensitive.uncontrolled
                and min(cfg.cost_sensitive.tprs) == 0.5
                and max(cfg.cost_sensitive.tprs) == 1.0,
                "Ctrl2 units finished": len(c2_done) == len(c2),
                "Ctrl2 fits at their time limit (incumbent, not proven optimal)": (
                    n_fits > 0 and n_limit == 0
                ),
            },
        ),
        "",
        f"Units finished: {len(done)} of {len(expected)} "
        f"({sum(k.endswith('/csvm') for k in done)} of "
        f"{sum(u.key.endswith('/csvm') for u in expected)} Ctrl2 units); failed: "
        f"{len(failures)}. A rerun of the same command resumes. Tables below cover the "
        "folds finished per dataset and imposed TPR (the column `folds`), not the "
        "whole protocol unless every fold is listed.",
        "",
        f"Settings: kernel {b.kernel}, B = {b.n_bootstrap} bootstrap replicates (the "
        f"same draws for Ctrl1 and Ctrl2), C grid {list(b.C_grid)}, "
        f"{cfg.protocol.n_folds}-fold stratified outer CV (first "
        f"{cfg.protocol.folds_run} run), data.max_rows = {cfg.data.max_rows} (0 = all), "
        f"S5c MIQP time limit {cfg.mip.time_limit:g} s per fit. MSE+ = mean (1 - "
        "P(+|x))^2 over held-out positives, MSE- = mean P(+|x)^2 over held-out "
        "negatives; TPR / TNR of P(+|x) >= 1/2; mean over folds. Seconds are per "
        "ensemble fit; for Ctrl2 they are the seconds of the fold's whole S5c path, "
        "shared by every t (one S1 fit per (C, replicate); S1 kept where it meets the "
        "floor, `s1`; a proven optimum at a lower t kept where it meets the higher "
        "floor, `reused`; else a MIQP, `miqp`; each fit is the optimum of its own S5c to "
        "the MIQP gap). Ctrl2's S5c fits read C as S1 does (u_i = C c_i), so both "
        "controls use the same C grid in the same sense; t = 0 is the plain bootstrap "
        "SVM (one fit per fold, shown under both controls). `held` = the held-out TPR "
        "pooled over the finished folds reaches the imposed t (Ctrl1 imposes t on "
        "out-of-bag votes, Ctrl2 on the in-bag rows of every replicate; neither "
        "carries a Hoeffding margin, so held-out TPR may fall short of t by sampling "
        "error).",
        "",
    ]
    held_rows = []
    for name in cfg.data.datasets:
        du = {k: v for k, v in results.items() if k.startswith(f"{name}/")}
        if not du:
            continue
        first = next(iter(du.values()))
        lines += [
            f"## {name}",
            "",
            f"Rows used {first['n_rows_used']}, features {first['d']}.",
            "",
            "| imposed TPR | folds Ctrl1 / Ctrl2 | Ctrl1 MSE+ | Ctrl1 MSE- | Ctrl1 TPR / "
            "TNR | Ctrl2 MSE+ | Ctrl2 MSE- | Ctrl2 TPR / TNR | s per ensemble fit "
            "Ctrl1 / Ctrl2 path | Ctrl2 fits: status (how obtained; MIQP seconds) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        tprs = ([0.0] if cfg.cost_sensitive.uncontrolled else []) + list(
            cfg.cost_sensitive.tprs
        )
        held: dict[str, list[str]] = {"Ctrl1": [], "Ctrl2": []}
        for t in tprs:
            cells, secs, nf = ["0 (none)" if t == 0 else f"{t:.2f}"], [], []
            status: dict[str, int] = {}
            source: dict[str, int] = {}
            miqp_s = 0.0
            for control in CONTROLS:
                suffix = f"/tpr_{t:.2f}/{'none' if t == 0 else control}"
                us = [v for k, v in du.items() if k.endswith(suffix)]
                nf.append(str(len(us)))
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
                fig["pooled_tpr"] = _pooled(us)
                if t > 0:
                    fig["held"] = bool(fig["pooled_tpr"] >= t - 1e-12)
                    held[LABEL[control]].append(
                        f"{t:g}: {'yes' if fig['held'] else 'no'} "
                        f"({fig['pooled_tpr']:.3f}, {len(us)} f)"
                    )
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
                    for k, v in u.get("ctrl2_source", {}).items():
                        source[k] = source.get(k, 0) + v
                    miqp_s += float(u.get("miqp_seconds", 0.0))
            cells.insert(1, " / ".join(nf))
            cells.append(" / ".join(secs))
            how = ", ".join(f"{k} {v}" for k, v in sorted(source.items()))
            cells.append(
                (", ".join(f"{k} {v}" for k, v in sorted(status.items())) or "-")
                + (f" ({how}; MIQPs {miqp_s:.0f} s)" if how else "")
            )
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        held_rows.append(
            f"| {name} | {'; '.join(held['Ctrl1']) or '-'} | "
            f"{'; '.join(held['Ctrl2']) or '-'} |"
        )
    if held_rows:
        lines += [
            "## Did the imposed TPR hold on held-out rows?",
            "",
            "Per imposed t: yes / no (held-out TPR pooled over the finished folds, "
            "number of folds).",
            "",
            "| dataset | Ctrl1 | Ctrl2 |",
            "|---|---|---|",
            *held_rows,
            "",
        ]
    if failures:
        lines += ["## Failed units", ""] + [
            f"- `{k}`: {v}" for k, v in sorted(failures.items())
        ]
    return ProtocolReport(
        title="Cost-sensitive bootstrap probabilities: Ctrl1 vs Ctrl2 (SPEC S2, S5)",
        figures=figures,
        text="\n".join(lines),
        timings=timings,
    )
