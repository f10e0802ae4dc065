"""Where `solve_csvm`'s time goes on scripts/bench_mip.py's CSVM instances, next to SCIP.

Issue 19's CSVM rows (linear n = 100..1000, RBF n <= 300) ask for a proven optimum in at
most half of SCIP's time on the same MIQP. This script splits one `solve_csvm` call
(the defaults, as bench_mip.py's "ours") into its parts and says how large each lever
could be, on the same instance (``bench_mip._csvm_problem``):

1. **Split of the default solve**: the start (S1 fit, slid intercept), the QPs (start
   polish, continuous relaxation, the masters' assignments), the anchor tightening's
   LPs (``anchor_tightening``), the grid of tangent cuts, and each master MILP with its
   cutoff, branch-and-bound nodes and simplex iterations (read from the master's HiGHS
   object after its run). The rest ("other") is model building and bookkeeping.
2. **The optimum as the first incumbent**: the same call with the first call's
   solution handed over (``solve_csvm(incumbents=[sol])``). The tightening then runs
   under the optimum's cutoff and the master only proves it: the most that any better
   early incumbent (start heuristic, local search) could save.
3. **Master replays over HiGHS seeds**: the first master of 1. and of 2. (the exact
   models and options handed to HiGHS) solved again with ``random_seed`` 0..S-1; the
   node counts' spread tells HiGHS's own variance from a change of the model.
4. **SCIP** on the same MIQP from the same start as bench_mip.py's ``--csvm-scip-start``
   (``csvm_start(..., s1_solver="libsvm")``): time, nodes and root dual bound.

Timings are wall seconds of this process (1 thread each); the parts are measured by
wrapping the engine's functions, which does not change what they compute. Run with
``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python scripts/profile_csvm.py
--linear-sizes 400``; ``--out FILE`` appends one JSON line per instance.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mip import _csvm_problem  # noqa: E402

import torchsvm.mip.csvm as csvm_mod  # noqa: E402
import torchsvm.mip.outer_approx as oa_mod  # noqa: E402
from torchsvm.mip.csvm import build_csvm_model, csvm_start, solve_csvm  # noqa: E402
from torchsvm.mip.highs import new_highs, solve_highs  # noqa: E402
from torchsvm.mip.model import MipConfig, MipModel  # noqa: E402


class _Probe:
    """Times the engine's parts of one solve by wrapping its functions."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.masters: list[dict[str, Any]] = []
        self.first_master: tuple[MipModel, MipConfig, dict[str, Any]] | None = None
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, owner: Any, name: str, label: str) -> None:
        orig = getattr(owner, name)
        probe = self

        def timed(*args: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*args, **kw)
            finally:
                probe.parts[label] += time.perf_counter() - t
                probe.counts[label] += 1

        self._saved.append((owner, name, orig))
        setattr(owner, name, timed)

    def __enter__(self) -> _Probe:
        probe = self
        self._wrap(csvm_mod, "csvm_start", "start")
        self._wrap(oa_mod.OuterApproximation, "qp", "QPs")
        self._wrap(oa_mod.OuterApproximation, "grid_cuts", "grid")
        orig_tight = csvm_mod.anchor_tightening

        def tightening(*args: Any, **kw: Any) -> Callable[..., MipModel]:
            inner = orig_tight(*args, **kw)

            def tighten(*a: Any, **k: Any) -> MipModel:
                t = time.perf_counter()
                try:
                    return inner(*a, **k)
                finally:
                    probe.parts["tightening LPs"] += time.perf_counter() - t
                    probe.counts["tightening LPs"] += 1

            return tighten

        self._saved.append((csvm_mod, "anchor_tightening", orig_tight))
        csvm_mod.anchor_tightening = tightening
        orig_master = oa_mod.OuterApproximation._run_master

        def run_master(
            oa: oa_mod.OuterApproximation,
            master: MipModel,
            config: MipConfig,
            opts: dict[str, Any] | None,
        ) -> Any:
            if probe.first_master is None:
                probe.first_master = (master, config, dict(opts or {}))
            t = time.perf_counter()
            res = orig_master(oa, master, config, opts)
            took = time.perf_counter() - t
            info = oa._highs.getInfo()
            probe.parts["masters"] += took
            probe.counts["masters"] += 1
            probe.masters.append(
                {
                    "time": took,
                    "cutoff": (opts or {}).get("objective_bound", float("inf")),
                    "nodes": int(info.mip_node_count),
                    "lp_iterations": int(info.simplex_iteration_count),
                    "rows": master.n_rows,
                    "binaries": int(
                        np.count_nonzero(
                            np.asarray(master.integrality, dtype=bool)
                            & (master.col_lower < master.col_upper)
                        )
                    ),
                    "status": res.message,
                }
            )
            return res

        self._saved.append((oa_mod.OuterApproximation, "_run_master", orig_master))
        oa_mod.OuterApproximation._run_master = run_master  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, orig in reversed(self._saved):
            setattr(owner, name, orig)


def _replay(
    master: tuple[MipModel, MipConfig, dict[str, Any]], seed: int
) -> dict[str, Any]:
    """The master solved again by HiGHS with ``random_seed = seed``."""
    model, cfg, opts = master
    h = new_highs()
    t = time.perf_counter()
    res = solve_highs(
        model,
        replace(cfg, time_limit=600.0),
        highs=h,
        warn=False,
        options={**opts, "random_seed": seed},
    )
    info = h.getInfo()
    return {
        "seed": seed,
        "time": time.perf_counter() - t,
        "nodes": int(info.mip_node_count),
        "lp_iterations": int(info.simplex_iteration_count),
        "status": res.message,
    }


def _scip(problem: Any, cfg: MipConfig) -> dict[str, Any]:
    """SCIP on the same MIQP from the start bench_mip.py's --csvm-scip-start hands it."""
    from torchsvm.mip.model import model_objective
    from torchsvm.mip.scip import build_scip

    model, layout, _ = build_csvm_model(problem)
    start = csvm_start(problem, layout, s1_solver="libsvm").x
    t0 = time.perf_counter()
    m, xs = build_scip(model, cfg)
    if start is not None:
        sol = m.createSol()
        for k, v in enumerate(start):
            m.setSolVal(sol, xs[k], float(v))
        # the epigraph variable is the last one (as solve_scip)
        m.setSolVal(
            sol,
            m.getVars()[-1],
            model_objective(model, start) - model.offset - float(model.c @ start),
        )
        m.addSol(sol, free=True)
    m.optimize()
    return {
        "time": time.perf_counter() - t0,
        "status": str(m.getStatus()),
        "obj": float(m.getPrimalbound()),
        "nodes": int(m.getNNodes()),
        "root_bound": float(m.getDualboundRoot()),
    }


def _solve(problem: Any, cfg: MipConfig, **kw: Any) -> tuple[Any, _Probe, float]:
    with _Probe() as probe:
        t = time.perf_counter()
        # the masters are what this script profiles: no release-set screen first
        sol = solve_csvm(problem, cfg, release_screen=False, **kw)
        total = time.perf_counter() - t
    return sol, probe, total


def _print_solve(label: str, sol: Any, probe: _Probe, total: float) -> None:
    known = sum(probe.parts.values())
    print(
        f"  {label}: {total:.3f} s, {sol.status.value}, obj {sol.objective:.6f}, "
        f"gap {sol.mip_gap:.2g}, {sol.n_iter} master(s)"
    )
    for part in ("start", "QPs", "tightening LPs", "grid", "masters"):
        if probe.counts.get(part):
            print(
                f"    {part:15s} {probe.parts[part]:7.3f} s "
                f"({100 * probe.parts[part] / total:4.1f} %, {probe.counts[part]} calls)"
            )
    print(f"    {'other':15s} {total - known:7.3f} s")
    for k, m in enumerate(probe.masters):
        print(
            f"    master {k + 1}: {m['time']:.3f} s, cutoff {m['cutoff']:.6g}, "
            f"{m['nodes']} nodes, {m['lp_iterations']} LP iterations, "
            f"{m['binaries']} free binaries, {m['rows']} rows, {m['status']}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--linear-sizes", type=int, nargs="*", default=[400])
    ap.add_argument("--rbf-sizes", type=int, nargs="*", default=[])
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument(
        "--seeds", type=int, default=5, help="HiGHS seeds of the master replays"
    )
    ap.add_argument("--no-scip", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    args = ap.parse_args(argv)
    cfg = MipConfig(time_limit=args.time_limit, mip_rel_gap=1e-4)
    jobs = [("linear", n) for n in args.linear_sizes]
    jobs += [("rbf", n) for n in args.rbf_sizes]
    print(f"load average {os.getloadavg()}", flush=True)
    for kernel, n in jobs:
        problem = _csvm_problem(kernel, n)
        # a first call loads the libraries (libsvm, HiGHS) outside the timings
        solve_csvm(_csvm_problem(kernel, 60), cfg, release_screen=False)
        print(f"csvm {kernel} n = {n} (load {os.getloadavg()[0]:.1f})", flush=True)
        sol, probe, total = _solve(problem, cfg)
        _print_solve("default", sol, probe, total)
        sol2, probe2, total2 = _solve(problem, cfg, incumbents=[sol])
        _print_solve("optimum handed as incumbent", sol2, probe2, total2)
        replays: dict[str, list[dict[str, Any]]] = {}
        for label, pr in (("default", probe), ("optimum", probe2)):
            if pr.first_master is None:
                continue
            replays[label] = [_replay(pr.first_master, s) for s in range(args.seeds)]
            nodes = [r["nodes"] for r in replays[label]]
            times = [r["time"] for r in replays[label]]
            print(
                f"  first master ({label} incumbent) over {args.seeds} HiGHS seeds: "
                f"nodes {min(nodes)}-{max(nodes)} (median {np.median(nodes):.0f}), "
                f"{min(times):.3f}-{max(times):.3f} s (median {np.median(times):.3f})",
                flush=True,
            )
        scip = None
        if not args.no_scip:
            scip = _scip(problem, cfg)
            print(
                f"  SCIP: {scip['time']:.3f} s, {scip['status']}, obj {scip['obj']:.6f}, "
                f"{scip['nodes']} nodes, root bound {scip['root_bound']:.6g}; "
                f"ours / SCIP {total / scip['time']:.2f} (default), "
                f"{total2 / scip['time']:.2f} (optimum handed)",
                flush=True,
            )
        print(f"  load {os.getloadavg()[0]:.1f}", flush=True)
        if args.out is not None:
            row = {
                "kernel": kernel,
                "n": n,
                "default": {
                    "total": total,
                    "obj": sol.objective,
                    "parts": dict(probe.parts),
                    "masters": probe.masters,
                },
                "optimum_incumbent": {
                    "total": total2,
                    "obj": sol2.objective,
                    "parts": dict(probe2.parts),
                    "masters": probe2.masters,
                },
                "replays": replays,
                "scip": scip,
                "load": os.getloadavg()[0],
            }
            with args.out.open("a") as fh:
                fh.write(json.dumps(row, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
