"""Ctrl2's S5c path on some replicates of one fold: where the CPU goes, A/B alternated.

``python scripts/bench_ctrl2_path.py DATASET FOLD REPLICATES VARIANTS [TIME_LIMIT]``

Fits :func:`torchsvm.estimators.bootstrap.fit_s5c_path` (``configs/cost_sensitive.toml``:
every C and t) on replicates ``REPLICATES`` (comma-separated) of fold ``FOLD``, one
replicate at a time, once per variant in ``VARIANTS`` (comma-separated keyword
settings of :func:`~torchsvm.mip.csvm.solve_csvm`, e.g. ``polish_incumbents=False``
and ``polish_incumbents=True``; ``-`` for the defaults; several joined by ``;``; a
key ``bootstrap.NAME`` sets that constant of :mod:`torchsvm.estimators.bootstrap`,
e.g. ``bootstrap.S5C_SEEDS_ACROSS_T=False``, and ``csvm.NAME`` one of
:mod:`torchsvm.mip.csvm`). The variants run one after
another on the same replicate in one process, their order reversed on every other
replicate, so that the load of the shared machine moves both alike. ``TIME_LIMIT``
(seconds per MIQP, default the config's) may be raised so that every MIQP is proven
and the optima can be compared.

Per MIQP it records the CPU seconds of the whole :func:`~torchsvm.mip.csvm.solve_csvm`
call, of the HiGHS masters (and their branch-and-bound nodes), of the tightening
LPs (:func:`~torchsvm.mip.csvm.anchor_tightening`) and of the fixed-binary and relaxed
QPs. It prints one line per MIQP, then per variant: the path's CPU seconds, the fits
by source (``s1``, ``reused``, ``forced``, ``miqp``), the MIQPs' split, and the
largest relative difference of every fit's objective from the first variant's.
``JSON=FILE`` in the environment also writes every record there.

``python scripts/bench_ctrl2_path.py compare FILE.json [FILE.json ...]`` reads such
records (several runs pooled) and prints, per variant: the path CPU per replicate,
the MIQPs' CPU by C (where a fold's CPU goes), their masters, nodes and split; and,
MIQP by MIQP against the first variant, the largest relative objective difference,
how many differ by more than 1e-6 (both are proven only to ``mip_rel_gap``, 1e-4),
and how many objectives lie below the other run's proven bound (or bounds above its
objective) by more than that gap (relative): none, if both are exact.

Run with ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data
PYTHONPATH=.``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np


def _parse(variant: str) -> dict:
    if variant == "-":
        return {}
    out: dict = {}
    for item in variant.split(";"):
        k, v = item.split("=", 1)
        out[k.strip()] = eval(v)  # noqa: S307 - a benchmark's own command line
    return out


def compare(files: list[str], gap: float = 1e-4) -> None:
    paths: list[dict] = []
    recs: list[dict] = []
    for f in files:
        with open(f) as fh:
            d = json.load(fh)
        paths += d["paths"]
        recs += d["miqps"]
    variants = list(dict.fromkeys(p["variant"] for p in paths))
    first = variants[0]
    reps = sorted({p["rep"] for p in paths})
    print("replicates", reps, "variants", variants)
    for v in variants:
        pv = [p for p in paths if p["variant"] == v]
        rv = [r for r in recs if r["variant"] == v]
        print(
            f"\n{v}: path CPU per replicate",
            [round(p["cpu"], 1) for p in pv],
            "mean",
            round(sum(p["cpu"] for p in pv) / len(pv), 1),
        )
        tot = sum(r["cpu"] for r in rv)
        print(
            f"  {len(rv)} MIQPs, {tot:.1f} CPU s: masters "
            f"{sum(r['master_cpu'] for r in rv) / tot:.0%}, bound LPs "
            f"{sum(r['tighten_cpu'] for r in rv) / tot:.0%}, QPs "
            f"{sum(r['qp_cpu'] for r in rv) / tot:.0%}; rounds "
            f"{sum(r['rounds'] for r in rv)}, nodes {sum(r['nodes'] for r in rv)}"
        )
        for C in sorted({r["C"] for r in rv}):
            rc = [r for r in rv if r["C"] == C]
            print(
                f"  C = {C:g}: {len(rc)} MIQPs, {sum(r['cpu'] for r in rc):.1f} CPU s, "
                f"rounds {sum(r['rounds'] for r in rc)}, "
                f"nodes {sum(r['nodes'] for r in rc)}"
            )
    ref = {(r["rep"], r["C"], r["t"]): r for r in recs if r["variant"] == first}
    for v in variants[1:]:
        worst, over, outside, n = 0.0, 0, 0, 0
        for r in recs:
            if r["variant"] != v:
                continue
            q = ref.get((r["rep"], r["C"], r["t"]))
            if q is None:
                continue
            n += 1
            a, b = r["objective"], q["objective"]
            rel = abs(a - b) / max(1.0, abs(b))
            worst = max(worst, rel)
            over += rel > 1e-6
            # a feasible value is at least any proven bound of the same problem, to
            # the proofs' gap (a master that finds nothing below the cutoff
            # UB - gap |UB| sets the bound to UB)
            for x, y in ((r, q), (q, r)):
                tol = gap * max(1.0, abs(y["objective"]))
                if (
                    x["objective"] < y["bound"] - tol
                    or x["bound"] > y["objective"] + tol
                ):
                    outside += 1
        print(
            f"\n{v} vs {first}: {n} MIQPs; largest relative objective difference "
            f"{worst:.2e}, {over} above 1e-6; outside the other's proven interval "
            f"(to the gap {gap:g}): {outside}"
        )


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "compare":
        compare(sys.argv[2:])
        return
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    import torchsvm.estimators.bootstrap as bs
    import torchsvm.mip.csvm as csvm_mod
    import torchsvm.mip.outer_approx as oa
    from torchsvm.config import load_config
    from torchsvm.experiments.cost_sensitive import load_fold_data

    name, fold = sys.argv[1], int(sys.argv[2])
    reps = [int(r) for r in sys.argv[3].split(",")]
    variants = sys.argv[4].split(",")
    root = Path(__file__).resolve().parents[1]
    cfg = load_config(root / "configs" / "cost_sensitive.toml")
    tl = float(sys.argv[5]) if len(sys.argv) > 5 else float(cfg.mip.time_limit)
    d = load_fold_data(cfg, name, fold)
    X = np.asarray(d["X_train"], dtype=np.float64)
    y = np.where(np.asarray(d["y_train"]) > 0, 1.0, -1.0)
    counts = bs._draw_counts(y, cfg.bootstrap.n_bootstrap, cfg.protocol.seed)
    grid = np.asarray(cfg.bootstrap.C_grid, dtype=np.float64)
    tprs = sorted(float(t) for t in cfg.cost_sensitive.tprs)
    print(name, fold, X.shape, int((y > 0).sum()), "TL", tl, flush=True)

    acc: dict[str, float] = {}

    def timed(key, fn):  # type: ignore[no-untyped-def]
        def inner(*a, **kw):  # type: ignore[no-untyped-def]
            c0 = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                acc[key] = acc.get(key, 0.0) + time.process_time() - c0

        return inner

    real_run_master = oa.OuterApproximation._run_master

    def run_master(self, master, config, opts):  # type: ignore[no-untyped-def]
        c0 = time.process_time()
        res = real_run_master(self, master, config, opts)
        acc["master"] = acc.get("master", 0.0) + time.process_time() - c0
        acc["masters"] = acc.get("masters", 0) + 1
        try:
            acc["nodes"] = acc.get("nodes", 0) + int(
                self._highs.getInfo().mip_node_count
            )
        except Exception:  # noqa: BLE001 - a skipped master has no info
            pass
        return res

    oa.OuterApproximation._run_master = run_master
    oa.OuterApproximation.master = timed("master_call", oa.OuterApproximation.master)
    oa.OuterApproximation.qp = timed("qp", oa.OuterApproximation.qp)
    real_solve = bs.solve_csvm
    current: dict = {}
    recs: list[dict] = []

    def wrap(problem, config, **kw):  # type: ignore[no-untyped-def]
        acc.clear()
        c0 = time.process_time()
        sol = real_solve(problem, config, **kw, **current["kw"])
        cpu = time.process_time() - c0
        floor = problem.floors[0]
        rec = dict(
            variant=current["name"],
            rep=current["rep"],
            C=float(problem.C),
            t=float(floor.required),
            status=sol.status.value,
            objective=float(sol.objective),
            bound=float(sol.bound),
            rounds=int(sol.n_iter),
            cpu=cpu,
            master_cpu=acc.get("master", 0.0),
            tighten_cpu=acc.get("master_call", 0.0) - acc.get("master", 0.0),
            qp_cpu=acc.get("qp", 0.0),
            masters=int(acc.get("masters", 0)),
            nodes=int(acc.get("nodes", 0)),
        )
        recs.append(rec)
        print(
            rec["variant"], rec["rep"], rec["C"], round(rec["t"], 2), rec["status"],
            f"{rec['objective']:.9g}", rec["rounds"], "nodes", rec["nodes"],
            "cpu", round(cpu, 2), "master", round(rec["master_cpu"], 2),
            "tighten", round(rec["tighten_cpu"], 2), "qp", round(rec["qp_cpu"], 2),
            flush=True,
        )  # fmt: skip
        return sol

    bs.solve_csvm = wrap
    paths: list[dict] = []
    for i, rep in enumerate(reps):
        order = variants if i % 2 == 0 else variants[::-1]
        for v in order:
            kw = _parse(v)
            for key in [k for k in kw if k.startswith("bootstrap.")]:
                setattr(bs, key.split(".", 1)[1], kw.pop(key))
            for key in [k for k in kw if k.startswith("csvm.")]:
                setattr(csvm_mod, key.split(".", 1)[1], kw.pop(key))
            current.update(name=v, rep=rep, kw=kw)
            c0, t0 = time.process_time(), time.perf_counter()
            path = bs.fit_s5c_path(
                X,
                y,
                counts[[rep]],
                grid,
                tprs,
                time_limit=tl,
                mip_rel_gap=cfg.mip.mip_rel_gap,
            )
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            objs = [
                float(path.solutions[k][r][0].objective)
                for k in range(len(tprs))
                for r in range(grid.size)
            ]
            src = Counter(str(s) for s in path.source.ravel())
            paths.append(
                dict(
                    variant=v, rep=rep, cpu=cpu, wall=wall, source=dict(src), objs=objs
                )
            )
            print(
                "PATH", v, rep, "cpu", round(cpu, 1), "wall", round(wall, 1),
                dict(src), "load", os.getloadavg()[0], flush=True,
            )  # fmt: skip
    print(f"\nsummary (CPU s; load now {os.getloadavg()[0]:.1f})")
    first = variants[0]
    for v in variants:
        pv = [p for p in paths if p["variant"] == v]
        rv = [r for r in recs if r["variant"] == v]
        src: Counter = Counter()
        for p in pv:
            src.update(p["source"])
        diff = 0.0
        for p in pv:
            q = next(q for q in paths if q["variant"] == first and q["rep"] == p["rep"])
            a, b = np.array(p["objs"]), np.array(q["objs"])
            diff = max(diff, float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))))
        tot = sum(p["cpu"] for p in pv)
        print(
            v, "| path cpu", round(tot, 1), "| per replicate", round(tot / len(pv), 1),
            "| fits", dict(src), "| miqp cpu", round(sum(r["cpu"] for r in rv), 1),
            "master", round(sum(r["master_cpu"] for r in rv), 1),
            "tighten", round(sum(r["tighten_cpu"] for r in rv), 1),
            "qp", round(sum(r["qp_cpu"] for r in rv), 1),
            "| masters", sum(r["masters"] for r in rv),
            "nodes", sum(r["nodes"] for r in rv),
            "| not optimal", sum(r["status"] != "optimal" for r in rv),
            "| max rel objective diff vs", first, f"{diff:.2e}",
        )  # fmt: skip
    if os.environ.get("JSON"):
        with open(os.environ["JSON"], "w") as f:
            json.dump(dict(paths=paths, miqps=recs), f)


if __name__ == "__main__":
    main()
