"""Benchmark of DEA at the thesis' scale (issue 16, SPEC S7).

Three parts, each on synthetic frontiers from
:func:`torchsvm.data.dea_data.make_synthetic_frontier` (the thesis' data are not public):

1. efficiencies: ``dea.efficiency`` against a loop of ``scipy.optimize.linprog(method=
   "highs")`` over the same multiplier LPs, timed in the same run (ratio, max |diff|);
2. joint selection (mean objective) on a thesis-shaped instance, with the proven gap
   and the wall time of the whole call; optionally the path p = 1..p_max with v(p),
   greedy values and the cross-preference Pi at chosen p;
3. the scale test (K = 1000, M = 100): efficiencies and one joint selection.

Appends one JSON line per part to ``runs/bench/dea.jsonl``.  ``--tiny`` runs all parts
on small instances in seconds (the smoke test).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linprog

from torchsvm import dea
from torchsvm.data.dea_data import make_synthetic_frontier
from torchsvm.exceptions import SolverTimeLimitWarning
from torchsvm.mip.model import MipConfig


def _linprog_loop(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """E(k) for every DMU, one multiplier LP (1)-(4) per DMU, all K rows (2)."""
    K, N = X.shape
    M = Y.shape[1]
    A_ub = np.hstack([-X, Y])
    out = np.zeros(K)
    for k in range(K):
        res = linprog(
            np.concatenate([np.zeros(N), -Y[k]]),
            A_ub=A_ub,
            b_ub=np.zeros(K),
            A_eq=np.concatenate([X[k], np.zeros(M)])[None],
            b_eq=[1.0],
            bounds=[(0, None)] * (N + M),
            method="highs",
        )
        out[k] = -res.fun
    return out


def bench_efficiency(K: int, N: int, M: int, seed: int) -> dict[str, Any]:
    """Efficiencies of all K DMUs: ours vs the linprog loop (same run)."""
    X, Y = make_synthetic_frontier(K, N, M, seed=seed)
    t0 = time.perf_counter()
    ref = _linprog_loop(X, Y)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    eff = dea.efficiency(X, Y)
    t_ours = time.perf_counter() - t0
    return {
        "part": "efficiency",
        "K": K,
        "N": N,
        "M": M,
        "seed": seed,
        "seconds_linprog_loop": t_ref,
        "seconds_ours": t_ours,
        "ratio": t_ref / t_ours,
        "max_abs_diff": float(np.abs(eff - ref).max()),
        "n_efficient": int((eff >= 1 - 1e-6).sum()),
    }


def _select(
    X: np.ndarray, Y: np.ndarray, p: int, time_limit: float, gap: float
) -> dict[str, Any]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverTimeLimitWarning)
        r = dea.select_features(
            X,
            Y,
            n_outputs=p,
            time_limit=time_limit,
            config=MipConfig(time_limit=time_limit, mip_rel_gap=gap),
        )
    return {
        "p": p,
        "seconds": time.perf_counter() - t0,
        "time_limit": time_limit,
        "status": str(r.status),
        "objective": r.objective,
        "bound": r.bound,
        "mip_gap": r.mip_gap,
        "greedy_objective": r.greedy_objective,
        "selected": r.selected_outputs.tolist(),
        "method": r.method,
        **{k: v for k, v in r.extra.items() if isinstance(v, (int, float))},
    }


def bench_joint(
    K: int,
    M: int,
    ps: Sequence[int],
    time_limit: float,
    gap: float,
    cross_ps: Sequence[int],
    seed: int,
) -> dict[str, Any]:
    """Joint selections for each p (mean objective) and cross-preference at cross_ps."""
    X, Y = make_synthetic_frontier(K, 1, M, seed=seed)
    rows = [_select(X, Y, p, time_limit, gap) for p in ps]
    cross = []
    for p in cross_ps:
        t0 = time.perf_counter()
        cp = dea.cross_preference(X, Y, p, time_limit=time_limit)
        cross.append(
            {
                "p": p,
                "seconds": time.perf_counter() - t0,
                "mean_pi": float(cp.pi.mean()),
                "max_pi": float(cp.pi.max()),
                "share_pi_positive": float((cp.pi > 0).mean()),
                "pi_hist_5pct": np.histogram(cp.pi, bins=np.arange(0, 105, 5))[
                    0
                ].tolist(),
            }
        )
    return {
        "part": "joint",
        "K": K,
        "N": 1,
        "M": M,
        "seed": seed,
        "rows": rows,
        "cross": cross,
    }


def bench_scale(
    K: int, M: int, p: int, time_limit: float, gap: float
) -> dict[str, Any]:
    """Scale test: all K efficiencies and one joint selection."""
    X, Y = make_synthetic_frontier(K, 1, M, seed=0)
    t0 = time.perf_counter()
    eff = dea.efficiency(X, Y)
    t_eff = time.perf_counter() - t0
    return {
        "part": "scale",
        "K": K,
        "M": M,
        "seconds_efficiency": t_eff,
        "n_efficient": int((eff >= 1 - 1e-6).sum()),
        "mean_efficiency": float(eff.mean()),
        "joint": _select(X, Y, p, time_limit, gap),
    }


def _ints(text: str) -> list[int]:
    if not text:
        return []
    if ".." in text:
        a, b = text.split("..")
        return list(range(int(a), int(b) + 1))
    return [int(t) for t in text.split(",")]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the parts asked for and append their records."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="efficiency,joint,scale")
    ap.add_argument("--eff-K", type=int, default=1000)
    ap.add_argument("--eff-N", type=int, default=2)
    ap.add_argument("--eff-M", type=int, default=30)
    ap.add_argument("--joint-K", type=int, default=182)
    ap.add_argument("--joint-M", type=int, default=100)
    ap.add_argument("--p", default="5", help="p values: '5', '1,5' or '1..10'")
    ap.add_argument("--cross-p", default="", help="p values for cross-preference")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--gap", type=float, default=0.01, help="target mip_rel_gap")
    ap.add_argument("--scale-K", type=int, default=1000)
    ap.add_argument("--scale-M", type=int, default=100)
    ap.add_argument("--scale-p", type=int, default=5)
    ap.add_argument("--scale-time-limit", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/bench/dea.jsonl")
    ap.add_argument("--tiny", action="store_true", help="small instances (smoke)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.eff_K, args.eff_M = 40, 4
        args.joint_K, args.joint_M, args.p, args.cross_p = 15, 6, "1..2", "2"
        args.time_limit = args.scale_time_limit = 20.0
        args.scale_K, args.scale_M, args.scale_p = 30, 8, 2
    parts = set(args.parts.split(","))
    meta = {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "command": "python scripts/bench_dea.py "
        + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
    }
    records = []
    if "efficiency" in parts:
        records.append(bench_efficiency(args.eff_K, args.eff_N, args.eff_M, args.seed))
    if "joint" in parts:
        records.append(
            bench_joint(
                args.joint_K,
                args.joint_M,
                _ints(args.p),
                args.time_limit,
                args.gap,
                _ints(args.cross_p),
                args.seed,
            )
        )
    if "scale" in parts:
        records.append(
            bench_scale(
                args.scale_K,
                args.scale_M,
                args.scale_p,
                args.scale_time_limit,
                args.gap,
            )
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        for rec in records:
            fh.write(json.dumps({**meta, **rec}) + "\n")
    for rec in records:
        print(json.dumps(rec, indent=1))
        if rec["part"] == "efficiency":
            print(
                f"efficiency K={rec['K']} N={rec['N']} M={rec['M']}: ours "
                f"{rec['seconds_ours']:.2f} s vs linprog loop "
                f"{rec['seconds_linprog_loop']:.2f} s = {rec['ratio']:.1f}x, "
                f"max |diff| {rec['max_abs_diff']:.1e}"
            )
        elif rec["part"] == "joint":
            for r in rec["rows"]:
                print(
                    f"joint p={r['p']}: v={r['objective']:.5f} bound={r['bound']:.5f} "
                    f"gap={r['mip_gap']:.2%} {r['status']} in {r['seconds']:.1f} s "
                    f"(limit {r['time_limit']:g} s)"
                )
        else:
            j = rec["joint"]
            print(
                f"scale K={rec['K']} M={rec['M']}: efficiencies "
                f"{rec['seconds_efficiency']:.1f} s; joint p={j['p']} gap "
                f"{j['mip_gap']:.2%} {j['status']} in {j['seconds']:.1f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
