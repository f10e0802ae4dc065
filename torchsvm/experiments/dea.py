"""DEA feature selection (SPEC S7, thesis ch. 5; Benitez-Pena, Bogetoft, Romero Morales).

The thesis' data (182 electricity distribution operators, 1 input, 100 outputs) is not
public; the Norwegian regulator's distribution data and the classic Program Follow
Through set stand in for it, and a synthetic frontier of the thesis' shape
(:func:`torchsvm.data.dea_data.make_synthetic_frontier`) for its scale.

Units (one per section; cross-preference one per p):

* ``nve_path``: NVE distribution data: one input (constructed ``ld_TOTXDEA``), every
  usable output (range-normalised); joint mean-efficiency selection for
  p = 1..``dea.p_max`` with the SPEC S7 table, the greedy baseline (Pastor et al. 2002),
  solve times; ``nve_cross/p_XX``: the cross-preference shares for ``dea.cross_p``;
* ``pft_path`` / ``pft_inputs`` / ``pft_cross/p_XX``: Charnes et al. (1981) Program
  Follow Through data: output selection p = 1..3 (only three outputs exist) and input
  selection 1..5 (FSDEA, all outputs kept);
* ``scale``: synthetic K = ``dea.scale_k`` DMUs, M = ``dea.scale_m`` outputs: all
  efficiency LPs with each engine of :func:`torchsvm.dea.efficiency` (``mip.time_limit``
  each) and time-limited selections (``dea.scale_time_limit`` for each whole call).

Every selection gets ``mip.time_limit`` seconds for the whole call (greedy start and
exact stage). ``dea.tiny`` cuts NVE to its first 30 DMUs and 6 outputs (smoke run).
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from torchsvm import dea
from torchsvm.config import ExperimentConfig
from torchsvm.data.dea_data import (
    DeaDataset,
    load_nve_distribution,
    load_pft1981,
    make_synthetic_frontier,
)
from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.experiments.csvm import settings_table
from torchsvm.experiments.report import ProtocolReport, save_figure
from torchsvm.experiments.runner import Unit

__all__ = ["EFFICIENCY_METHODS", "THESIS", "assemble", "run_unit", "units"]

logger = logging.getLogger(__name__)

#: the efficiency engines compared in the scale test (torchsvm.dea.efficiency ``method``)
EFFICIENCY_METHODS = ("envelopment", "multiplier")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.integer | np.floating | np.bool_):
        return obj.item()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def _nve(cfg: ExperimentConfig) -> DeaDataset:
    nve = load_nve_distribution(cfg.data.data_dir or None)
    if cfg.dea.tiny:
        nve = DeaDataset(
            nve.X_in[:30],
            nve.Y_out[:30, :6],
            nve.input_names,
            nve.output_names[:6],
            nve.dmu_names[:30],
            nve.meta,
        )
    return nve


def _cross_ps(cfg: ExperimentConfig) -> list[int]:
    return list(cfg.dea.cross_p)


def units(cfg: ExperimentConfig) -> list[Unit]:
    """Sections as units; cross-preference one unit per p."""
    out = [Unit("nve_path", {"section": "nve_path"})]
    out += [
        Unit(f"nve_cross/p_{p:02d}", {"section": "nve_cross", "p": p})
        for p in _cross_ps(cfg)
    ]
    out += [
        Unit("pft_path", {"section": "pft_path"}),
        Unit("pft_inputs", {"section": "pft_inputs"}),
    ]
    out += [
        Unit(f"pft_cross/p_{p:02d}", {"section": "pft_cross", "p": p}) for p in (1, 2)
    ]
    if cfg.dea.run_scale:
        out.append(Unit("scale", {"section": "scale"}))
    return out


def run_unit(cfg: ExperimentConfig, unit: Unit) -> dict[str, Any]:
    """Run one section (see the module docstring)."""
    sec, tl = unit.params["section"], cfg.mip.time_limit
    if sec == "nve_path":
        nve = _nve(cfg)
        res = _path_section(nve, cfg.dea.p_max, tl)
        with np.errstate(invalid="ignore"):
            corr = np.nan_to_num(np.corrcoef(nve.Y_out, rowvar=False))
        res["output_correlation"] = corr
    elif sec == "nve_cross":
        res = _cross_section(_nve(cfg), [unit.params["p"]], tl)
    elif sec == "pft_path":
        res = _path_section(load_pft1981(cfg.data.data_dir or None), 3, tl)
    elif sec == "pft_inputs":
        res = _input_section(load_pft1981(cfg.data.data_dir or None), tl)
    elif sec == "pft_cross":
        res = _cross_section(
            load_pft1981(cfg.data.data_dir or None), [unit.params["p"]], tl
        )
    elif sec == "scale":
        d = cfg.dea
        res = _scale_section(d.scale_k, d.scale_m, d.scale_p, d.scale_time_limit, tl)
    else:  # pragma: no cover - units() makes only the above
        raise ValueError(f"unknown DEA section {sec!r}")
    return _jsonable(res)


#: keys holding seconds (kept out of the compared figures)
_TIME_KEYS = ("seconds", "mip_seconds", "path_seconds", "runtime")


def _split_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: _split_timings(v)
            for k, v in obj.items()
            if not (k in _TIME_KEYS or "seconds" in k)
        }
    if isinstance(obj, list):
        return [_split_timings(v) for v in obj]
    return obj


def assemble(
    cfg: ExperimentConfig, results: dict[str, dict[str, Any]], failures: dict[str, str]
) -> ProtocolReport:
    """The section tables, the plots; timings stay in the unit files and the text."""
    res: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPU cores, HiGHS, {cfg.mip.threads} thread(s)"
    }
    for key, val in results.items():
        if "/" in key:
            sec, p = key.split("/")
            if str(int(p[2:])) in val:  # p above the number of outputs: skipped
                res.setdefault(sec, {})[str(int(p[2:]))] = val[str(int(p[2:]))]
        else:
            res[key] = val
    prefix = "dea"
    plots = [
        "dea_vp_boxplots.png",
        "dea_efficiency_hist.png",
        "dea_selected_correlation.png",
        "dea_pi_hist.png",
    ]
    text = "\n".join(
        [
            "## Settings: this run next to the thesis' (SPEC S7)",
            "",
            settings_table(THESIS, _used(cfg, res)),
            "",
            "The thesis' operators are not public: the NVE distribution data and the "
            "PFT1981 schools stand in for them, and the synthetic frontier for their "
            "size. DEA has no rate floors and no held-out rows: there is no floor to "
            "check here.",
            "",
            _markdown(res, plots if "nve_path" in res else []),
        ]
    )
    figures = _split_timings({k: v for k, v in res.items() if k != "machine"})

    def plot(out: Path) -> list[Path]:
        return [out / name for name in _plots(res, out, prefix)]

    return ProtocolReport(
        title="DEA feature selection (SPEC S7)",
        figures=figures,
        text=text,
        plot=plot,
    )


#: the thesis' protocol (SPEC S7), shown next to the settings used
THESIS = {
    "data": "182 electricity distribution operators (not public)",
    "inputs x outputs": "1 x 100",
    "selection sizes": "p = 1..10",
    "objective": "mean efficiency, joint selection",
    "big-M": "M1 = 1000",
    "time limit": "300 s per MILP",
}


def _used(cfg: ExperimentConfig, res: dict[str, Any]) -> dict[str, str]:
    nve = res.get("nve_path")
    shape = (
        f"NVE: {len(nve['inputs'])} x {len(nve['outputs'])} (K = {nve['n_dmus']})"
        if nve
        else "NVE: not run yet"
    )
    if cfg.dea.run_scale:
        shape += f"; synthetic: 1 x {cfg.dea.scale_m} (K = {cfg.dea.scale_k})"
    methods = sorted({r.get("method", "?") for r in nve["rows"]}) if nve else ["?"]
    return {
        "data": "NVE distribution data, PFT1981"
        + (", synthetic frontier" if cfg.dea.run_scale else "")
        + (" (tiny: NVE cut to 30 DMUs, 6 outputs)" if cfg.dea.tiny else ""),
        "inputs x outputs": shape,
        "selection sizes": f"p = 1..{cfg.dea.p_max}",
        "objective": "mean efficiency, joint selection",
        "big-M": "tight per-DMU bounds (SPEC S7), joint model by " + ", ".join(methods),
        "time limit": f"{cfg.mip.time_limit:g} s per selection call (greedy + exact)",
    }


def _path_section(d: DeaDataset, p_max: int, time_limit: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    path = dea.selection_path(d.X_in, d.Y_out, p_max=p_max, time_limit=time_limit)
    total = time.perf_counter() - t0
    full = dea.efficiency(d.X_in, d.Y_out)
    rows = []
    for i, p in enumerate(path.p):
        rows.append(
            {
                "p": int(p),
                "v": path.values[i],
                "gain": path.marginal_gains[i],
                "greedy": path.greedy_values[i],
                "summary": path.summaries[i],
                "selected": [d.output_names[o] for o in path.selections[i]],
                "greedy_selected": [
                    d.output_names[o] for o in path.greedy_selections[i]
                ],
                "status": str(path.statuses[i]),
                "mip_gap": path.mip_gaps[i],
                "mip_seconds": path.runtimes[i],
                "efficiencies": path.efficiencies[i],
                "method": path.results[i].method if path.results else "?",
            }
        )
    return {
        "rows": rows,
        "full_model": dea.efficiency_summary(full),
        "full_efficiencies": full,
        "path_seconds": total,
        "n_dmus": d.n_dmus,
        "outputs": list(d.output_names),
        "inputs": list(d.input_names),
        "meta": {k: v for k, v in d.meta.items() if k != "program"},
    }


def _cross_section(d: DeaDataset, ps: Sequence[int], time_limit: float) -> dict:
    out = {}
    for p in ps:
        if p > d.Y_out.shape[1]:
            continue
        cp = dea.cross_preference(d.X_in, d.Y_out, p, time_limit=time_limit)
        out[str(p)] = {
            "pi": cp.pi,
            "share_dmus_with_pi_gt_0": float(np.mean(cp.pi > 0) * 100),
            "mean_pi": float(cp.pi.mean()),
            "max_pi": float(cp.pi.max()),
            "n_distinct_individual": len({r.tobytes() for r in cp.individual_outputs}),
            "seconds": cp.runtime,
        }
    return out


def _input_section(d: DeaDataset, time_limit: float) -> dict[str, Any]:
    rows = []
    for q in range(1, d.X_in.shape[1] + 1):
        t0 = time.perf_counter()
        r = dea.select_features(
            d.X_in, d.Y_out, n_outputs=None, n_inputs=q, time_limit=time_limit
        )
        rows.append(
            {
                "q": q,
                "v": r.objective,
                "summary": dea.efficiency_summary(r.efficiencies),
                "selected": [d.input_names[i] for i in r.selected_inputs],
                "status": str(r.status),
                "mip_gap": r.mip_gap,
                "seconds": time.perf_counter() - t0,
            }
        )
    return {"rows": rows}


def _scale_section(
    K: int, M: int, p: int, time_limit: float, lp_time_limit: float
) -> dict[str, Any]:
    """Efficiency LPs (``lp_time_limit`` per engine) and selections (``time_limit``)."""
    X, Y = make_synthetic_frontier(K, 1, M, seed=0)
    out: dict[str, Any] = {"K": K, "M": M}
    effs = {}
    for name in EFFICIENCY_METHODS:
        t0 = time.perf_counter()
        effs[name] = dea.efficiency(X, Y, method=name, time_limit=lp_time_limit)
        out[f"efficiency_seconds_{name}"] = time.perf_counter() - t0
        logger.info(
            "scale efficiency %s: %.1fs", name, out[f"efficiency_seconds_{name}"]
        )
    e = effs[EFFICIENCY_METHODS[0]]
    out["max_abs_diff_between_methods"] = float(
        max(np.abs(v - e).max() for v in effs.values())
    )
    out["efficiency_summary"] = dea.efficiency_summary(e)
    out["n_efficient"] = int((e >= 1 - 1e-6).sum())
    t0 = time.perf_counter()
    ind = [
        dea.select_features(X, Y, n_outputs=p, dmu=k, time_limit=time_limit)
        for k in range(5)
    ]
    out["individual_p"] = p
    out["individual_seconds_5_dmus"] = time.perf_counter() - t0
    out["individual_status"] = [str(r.status) for r in ind]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        r = dea.select_features(
            X, Y, n_outputs=p, time_limit=time_limit, warm_start=None
        )
    out["joint"] = {
        "p": p,
        "seconds": time.perf_counter() - t0,
        "mip_seconds": r.runtime,
        "status": str(r.status),
        "objective": r.objective,
        "bound": r.bound,
        "mip_gap": r.mip_gap,
        "n_reference_rows_per_dmu": r.extra["n_reference"],
        "method": r.method,
        "time_limit": time_limit,
    }
    return out


def _table(rows: list[dict[str, Any]], key: str = "p") -> list[str]:
    lines = [
        f"| {key} | v | gain | greedy | min | max | mean | std | Q1 | median | Q3 | IQR "
        "| status | gap | MIP s | selected |",
        "|" + "---|" * 16,
    ]
    for r in rows:
        s = r["summary"]
        lines.append(
            f"| {r[key]} | {r['v']:.4f} | {r.get('gain', float('nan')):.4f} | "
            f"{r.get('greedy', float('nan')):.4f} | {s['min']:.3f} | {s['max']:.3f} | "
            f"{s['mean']:.3f} | {s['std']:.3f} | {s['q1']:.3f} | {s['median']:.3f} | "
            f"{s['q3']:.3f} | {s['iqr']:.3f} | {r['status']} | {r['mip_gap']:.1e} | "
            f"{r.get('mip_seconds', r.get('seconds', float('nan'))):.2f} | "
            f"{', '.join(r['selected'])} |"
        )
    return lines


def _plots(res: dict[str, Any], out: Path, prefix: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    nve = res.get("nve_path")
    if nve:
        rows = nve["rows"]
        fig, ax = plt.subplots(figsize=(8, 4.5))
        ax.boxplot([r["efficiencies"] for r in rows], positions=[r["p"] for r in rows])
        ax.plot(
            [r["p"] for r in rows], [r["v"] for r in rows], "o-", label="v(p) exact"
        )
        ax.plot(
            [r["p"] for r in rows], [r["greedy"] for r in rows], "x--", label="greedy"
        )
        ax.set_xlabel("p (number of outputs)")
        ax.set_ylabel("efficiency")
        ax.set_title("NVE distribution: v(p) and efficiencies per p")
        ax.legend()
        made.append(_savefig(fig, out / f"{prefix}_vp_boxplots.png"))
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.5), sharey=True)
        for ax, r in zip(axes, [rows[0], rows[min(2, len(rows) - 1)], rows[-1]]):
            ax.hist(r["efficiencies"], bins=np.linspace(0, 1, 21))
            ax.set_title(f"p = {r['p']} (mean {r['v']:.3f})")
            ax.set_xlabel("efficiency")
        axes[0].set_ylabel("DMUs")
        made.append(_savefig(fig, out / f"{prefix}_efficiency_hist.png"))
        names = nve["outputs"]
        sel = [names.index(s) for s in rows[-1]["selected"]]
        corr = np.asarray(nve["output_correlation"])[np.ix_(sel, sel)]
        fig, ax = plt.subplots(figsize=(6, 5))
        im = ax.imshow(corr, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks(range(len(sel)), [names[i] for i in sel], rotation=90)
        ax.set_yticks(range(len(sel)), [names[i] for i in sel])
        fig.colorbar(im, ax=ax)
        ax.set_title(f"correlation of the selected outputs (p = {rows[-1]['p']})")
        made.append(_savefig(fig, out / f"{prefix}_selected_correlation.png"))
    cross = res.get("nve_cross")
    if cross:
        fig, ax = plt.subplots(figsize=(7, 4))
        bins = np.arange(0, 105, 5)
        for p, c in cross.items():
            ax.hist(c["pi"], bins=bins, histtype="step", label=f"p = {p}")
        ax.set_xlabel("Pi(k') = % of DMUs preferring DMU k''s selection (5 % bins)")
        ax.set_ylabel("DMUs k'")
        ax.legend()
        made.append(_savefig(fig, out / f"{prefix}_pi_hist.png"))
    return made


def _savefig(fig: Any, path: Path) -> str:
    fig.tight_layout()
    save_figure(fig, path)
    return path.name


def _markdown(res: dict[str, Any], plots: list[str]) -> str:
    L = [f"Machine: {res['machine']}", ""]
    nve = res.get("nve_path")
    if nve:
        m = nve["meta"]
        L += [
            "## Norwegian distribution system operators (NVE base data)",
            "",
            f"Year {m['year']}, K = {nve['n_dmus']} companies "
            f"({m['n_dropped_companies']} of {m['n_companies_in_year']} dropped: no "
            "local grid, non-positive cost or missing geography), input "
            f"`ld_TOTXDEA` (constructed, rate {m['rate_of_return']}), "
            f"M = {len(nve['outputs'])} outputs divided by their range: "
            f"{', '.join(nve['outputs'])}. Dropped constant/missing outputs: "
            f"{m['dropped_outputs'] or 'none'}.",
            "",
            "Joint selection, objective mean efficiency (v(p)), greedy = Pastor et al. "
            "(2002) nested selection (also the MIP start). Efficiencies are LP values "
            f"for the selection. Whole path: {nve['path_seconds']:.1f} s "
            "(greedy + MILPs + LPs).",
            "",
        ]
        L += _table(nve["rows"])
        s = nve["full_model"]
        L += [
            "",
            f"All {len(nve['outputs'])} outputs: mean {s['mean']:.4f}, min "
            f"{s['min']:.4f}, median {s['median']:.4f}.",
            "",
        ]
    cross = res.get("nve_cross")
    if cross:
        L += [
            "### Cross-preference (NVE)",
            "",
            "Pi(k') = share of DMUs whose efficiency is higher under DMU k''s "
            "individually optimal selection than under the joint one.",
            "",
            "| p | mean Pi | max Pi | % of k' with Pi > 0 | distinct individual "
            "selections | seconds |",
            "|---|---|---|---|---|---|",
        ]
        for p, c in cross.items():
            L.append(
                f"| {p} | {c['mean_pi']:.1f} | {c['max_pi']:.1f} | "
                f"{c['share_dmus_with_pi_gt_0']:.1f} | {c['n_distinct_individual']} | "
                f"{c['seconds']:.1f} |"
            )
        L.append("")
    pft = res.get("pft_path")
    if pft:
        L += [
            "## Program Follow Through (Charnes, Cooper and Rhodes 1981; deaR PFT1981)",
            "",
            f"K = {pft['n_dmus']} schools, inputs {', '.join(pft['inputs'])}; outputs "
            f"{', '.join(pft['outputs'])} (range-normalised). Only three outputs exist, "
            "so the output path stops at p = 3; the input path (FSDEA, all outputs "
            "kept) covers 1..5 inputs.",
            "",
        ]
        L += _table(pft["rows"])
        L += ["", "Input selection (joint, mean efficiency):", ""]
        L += _table(res["pft_inputs"]["rows"], key="q")
        pc = res.get("pft_cross", {})
        for p, c in pc.items():
            L.append(
                f"\nCross-preference p = {p}: mean Pi {c['mean_pi']:.1f} %, max "
                f"{c['max_pi']:.1f} %, {c['share_dmus_with_pi_gt_0']:.1f} % of schools "
                "have Pi > 0."
            )
        L.append("")
    sc = res.get("scale")
    if sc:
        j = sc["joint"]
        L += [
            f"## Synthetic scale test (K = {sc['K']}, M = {sc['M']})",
            "",
            "One input, outputs from three latent factors with 2 % noise, half-normal "
            f"inefficiency; {sc['n_efficient']} efficient DMUs, mean efficiency "
            f"{sc['efficiency_summary']['mean']:.3f}.",
            "",
            "| computation | seconds |",
            "|---|---|",
        ]
        for key in EFFICIENCY_METHODS:
            L.append(
                f"| all {sc['K']} efficiency LPs, method {key} | "
                f"{sc[f'efficiency_seconds_{key}']:.1f} |"
            )
        L += [
            f"| individual selection p = {sc['individual_p']}, 5 DMUs | "
            f"{sc['individual_seconds_5_dmus']:.1f} |",
            f"| joint selection p = {j['p']} ({j.get('method', '?')}, no greedy start, "
            f"limit {j['time_limit']} s for the whole call) "
            f"| {j['seconds']:.1f} |",
            "",
            "Largest difference between the efficiency methods: "
            f"{sc['max_abs_diff_between_methods']:.1e}. Joint MILP: status "
            f"{j['status']}, objective {j['objective']:.4f}, bound {j['bound']:.4f}, "
            f"gap {j['mip_gap']:.2e}, {j['n_reference_rows_per_dmu']} frontier rows per "
            "DMU (the DMUs efficient with all outputs).",
            "",
        ]
    if plots:
        L += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(L)
