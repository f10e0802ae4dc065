"""Linear CSVM masters over HiGHS seeds: anchor big-M by LPs or by the box, reliability.

Issue 19's linear CSVM rows (scripts/bench_mip.py's instances, ``_csvm_problem``) ask
for a proven optimum in at most half of SCIP's time. A master's branch-and-bound tree
changes with any change of the model, so one solve per setting says little. This
script solves each instance with ``solve_csvm``'s defaults under each setting, with
every master run by HiGHS at ``random_seed`` s for s in the seeds, alternately, and
prints per setting the medians of the call's time, the masters' time and their nodes
(summed over the call's masters), and the anchor tightening's time.

Settings (``--settings``, any of):

- ``lps-r0``: one LP per floor member for its big-M and a second box of ``(w, b)``
  (``solve_csvm(anchor_lps=True)``), masters with ``mip_pscost_minreliable = 0``
  (the engine before the box-alone big-M and reliability 2);
- ``box-r0``: the big-M from the box of ``(w, b)`` alone (``anchor_lps=False``),
  reliability 0;
- ``box-rK``, ``lps-rK``: the same with ``mip_pscost_minreliable = K`` and no other
  option (``box-r2`` is the default before the masters' node cuts and heuristics were
  switched off; the default now is ``box-r2`` with the five options of
  ``S5_PROOF_OPTIONS``);
- a suffix ``-highs`` or ``-ipm``: ``solve_csvm(qp_solver=)`` for the outer
  approximation's QPs (none: the default);
- then any number of ``+option=value``: further HiGHS options for the masters
  (``box-r2+mip_heuristic_effort=0``), added to the reliability for the call
  (together they replace ``S5_PROOF_OPTIONS``).

``--scip`` also solves each instance by SCIP (before the settings, and again after
them), from the start bench_mip.py's ``--csvm-scip-start`` hands it, and prints each
setting's median time over SCIP's mean: a same-run ratio over the seeds.

The reliability is set through ``torchsvm.mip.csvm.S5_PROOF_OPTIONS`` for the call.
Run with ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. python
scripts/sweep_csvm_master.py --linear-sizes 400 --seeds 0 1 2 3 4``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mip import _csvm_problem  # noqa: E402

import torchsvm.mip.csvm as csvm_mod  # noqa: E402
import torchsvm.mip.outer_approx as oa_mod  # noqa: E402
from torchsvm.mip.model import MipConfig, MipModel  # noqa: E402
from torchsvm.mip.scip import solve_scip  # noqa: E402

_SETTING = re.compile(r"^(lps|box)-r(\d+)(-highs|-ipm)?((?:\+\w+=[^+]+)*)$")


def _option_value(text: str) -> float | int | str | bool:
    if text in ("true", "false"):
        return text == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _solve(n: int, setting: str, seed: int) -> dict[str, Any]:
    m = _SETTING.match(setting)
    assert m is not None
    lps, rel = m.group(1) == "lps", int(m.group(2))
    qp = {} if m.group(3) is None else {"qp_solver": m.group(3)[1:]}
    masters: list[tuple[float, int]] = []
    tight: list[float] = []
    orig_run = oa_mod.OuterApproximation._run_master
    orig_tight = csvm_mod.anchor_tightening
    orig_opts = csvm_mod.S5_PROOF_OPTIONS

    def run_master(
        oa: oa_mod.OuterApproximation,
        master: MipModel,
        config: MipConfig,
        opts: dict[str, Any] | None,
    ) -> Any:
        t = time.perf_counter()
        res = orig_run(oa, master, config, {**(opts or {}), "random_seed": seed})
        masters.append(
            (time.perf_counter() - t, int(oa._highs.getInfo().mip_node_count))
        )
        return res

    def tightening(*args: Any, **kw: Any) -> Any:
        inner = orig_tight(*args, **kw)

        def tighten(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                tight.append(time.perf_counter() - t)

        return tighten

    oa_mod.OuterApproximation._run_master = run_master  # type: ignore[method-assign]
    csvm_mod.anchor_tightening = tightening  # type: ignore[assignment]
    extra = {
        k: _option_value(v)
        for k, v in (o.split("=", 1) for o in m.group(4).split("+")[1:])
    }
    csvm_mod.S5_PROOF_OPTIONS = {"mip_pscost_minreliable": rel, **extra}
    try:
        p = _csvm_problem("linear", n)
        cfg = MipConfig(time_limit=300, mip_rel_gap=1e-4)
        t0 = time.perf_counter()
        # the masters are what this script sweeps: no release-set screen first
        sol = csvm_mod.solve_csvm(p, cfg, anchor_lps=lps, release_screen=False, **qp)
        total = time.perf_counter() - t0
    finally:
        oa_mod.OuterApproximation._run_master = orig_run  # type: ignore[method-assign]
        csvm_mod.anchor_tightening = orig_tight
        csvm_mod.S5_PROOF_OPTIONS = orig_opts
    return {
        "n": n,
        "setting": setting,
        "seed": seed,
        "time": total,
        "status": str(getattr(sol.status, "value", sol.status)),
        "obj": sol.objective,
        "masters": len(masters),
        "master_time": sum(t for t, _ in masters),
        "nodes": sum(k for _, k in masters),
        "tightening": sum(tight),
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--linear-sizes", nargs="+", type=int, default=[400])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--settings", nargs="+", default=["lps-r0", "box-r0", "box-r2"])
    ap.add_argument("--scip", action="store_true", help="SCIP reference, same run")
    ap.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    args = ap.parse_args(argv)
    for s in args.settings:
        if not _SETTING.match(s):
            ap.error(
                f"setting {s!r} is not lps-rK or box-rK (-highs, -ipm, +option=value)"
            )
    print(f"load average {os.getloadavg()}", flush=True)
    csvm_mod.solve_csvm(
        _csvm_problem("linear", 60), MipConfig(time_limit=60), release_screen=False
    )
    for n in args.linear_sizes:
        rows: dict[str, list[dict[str, Any]]] = {s: [] for s in args.settings}
        scip_times: list[float] = []

        def scip(n: int = n, scip_times: list[float] = scip_times) -> None:
            p = _csvm_problem("linear", n)
            cfg = MipConfig(time_limit=600, mip_rel_gap=1e-4)
            model, layout, _ = csvm_mod.build_csvm_model(p)
            start = csvm_mod.csvm_start(p, layout, s1_solver="libsvm").x
            res = solve_scip(model, cfg, start=start)
            scip_times.append(res.runtime)
            print(
                f"n={n} SCIP: {res.runtime:.3f} s {res.status.value} obj "
                f"{res.objective:.6f}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if args.out is not None:
                with args.out.open("a") as fh:
                    rec = {"n": n, "setting": "scip", "time": res.runtime}
                    fh.write(json.dumps(rec) + "\n")

        if args.scip:
            scip()
        for seed in args.seeds:
            for s in args.settings:
                r = _solve(n, s, seed)
                rows[s].append(r)
                print(
                    f"n={n} {s} seed {seed}: {r['time']:.3f} s {r['status']} "
                    f"obj {r['obj']:.6f}, {r['masters']} master(s) "
                    f"{r['master_time']:.3f} s {r['nodes']} nodes, tightening "
                    f"{r['tightening']:.3f} s, load {r['load']:.1f}",
                    flush=True,
                )
                if args.out is not None:
                    with args.out.open("a") as fh:
                        fh.write(json.dumps(r) + "\n")
        if args.scip:
            scip()
        ref = statistics.fmean(scip_times) if scip_times else math.nan
        for s in args.settings:
            rs = rows[s]

            def med(key: str, rs: list[dict[str, Any]] = rs) -> float:
                return float(statistics.median(r[key] for r in rs))

            print(
                f"n={n} {s}: medians total {med('time'):.3f} s, masters "
                f"{med('master_time'):.3f} s, nodes {med('nodes'):g} "
                f"{[r['nodes'] for r in rs]}, tightening {med('tightening'):.3f} s"
                + (f", ratio to SCIP {med('time') / ref:.2f}" if scip_times else ""),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
