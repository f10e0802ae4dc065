"""Capture Ctrl2's S5c MIQPs of one replicate and replay them one by one (issues 18/19).

``capture DATASET REPLICATE OUT.pkl``: fits Ctrl2's S5c path
(:func:`torchsvm.estimators.bootstrap.fit_s5c_path`, ``configs/cost_sensitive.toml``:
every C and t, 60 s per MIQP) on fold 0 for one replicate and pickles every MIQP it
solves: the problem, the config, the seeds the path handed to
:func:`~torchsvm.mip.csvm.solve_csvm` (incumbents, lower bound) and the solution with
its CPU seconds. One line per MIQP: index, C, floor, status, rounds, CPU s.

``replay OUT.pkl I,J,... [ours|scip] [KWARGS]``: solves the captured MIQPs ``I, J, ...``
again with the checkout's :func:`~torchsvm.mip.csvm.solve_csvm` (same seeds; ``KWARGS``
a Python dict literal of further keyword arguments, e.g. ``"dict(tighten_anchors=True)"``)
or with SCIP on the same model (:func:`torchsvm.mip.scip.solve_scip`); ``TL=SECONDS`` in
the environment replaces the time limit (SCIP: 120 s unless given). One line per MIQP:
index, status, objective, bound, rounds, CPU and wall seconds, then the captured
objective, rounds and CPU seconds.

``DBG=1`` logs the outer approximation at DEBUG (each master's seconds, bounds, the
tightening); ``HIGHS_LOG=K`` prints HiGHS's own log of the K-th master (1-based) of each
replayed MIQP (root bound, nodes). ``MASTER_OPTS`` (a Python dict literal of HiGHS options)
updates the options of the masters that have a cutoff
(:data:`torchsvm.mip.outer_approx._PROOF_OPTIONS` and, where the commit has it,
:data:`torchsvm.mip.csvm.S5C_PROOF_OPTIONS`), to time other branching settings.

Run with ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data
PYTHONPATH=.``; to time an older commit, unpack it (``git archive``) and put it first on
``PYTHONPATH``.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np


def capture(name: str, rep: int, out: str) -> None:
    import torchsvm.estimators.bootstrap as bs
    from torchsvm.config import load_config
    from torchsvm.experiments.cost_sensitive import load_fold_data

    root = Path(__file__).resolve().parents[1]
    cfg = load_config(root / "configs" / "cost_sensitive.toml")
    d = load_fold_data(cfg, name, 0)
    y = np.where(np.asarray(d["y_train"]) > 0, 1.0, -1.0)
    counts = bs._draw_counts(y, cfg.bootstrap.n_bootstrap, cfg.protocol.seed)
    print(d["X_train"].shape, int((y > 0).sum()), flush=True)
    recs: list[dict] = []
    real = bs.solve_csvm

    def wrap(problem, config, **kw):  # type: ignore[no-untyped-def]
        c0 = time.process_time()
        sol = real(problem, config, **kw)
        cpu = time.process_time() - c0
        recs.append(dict(problem=problem, config=config, kw=kw, sol=sol, cpu=cpu))
        floors = [f.required for f in problem.floors]
        print(len(recs), problem.C, floors, sol.status.value, sol.n_iter, round(cpu, 2))
        with open(out, "wb") as f:
            pickle.dump(recs, f)
        return sol

    bs.solve_csvm = wrap
    tprs = sorted(float(t) for t in cfg.cost_sensitive.tprs)
    bs.fit_s5c_path(
        d["X_train"],
        y,
        counts[[rep]],
        np.asarray(cfg.bootstrap.C_grid),
        tprs,
        time_limit=cfg.mip.time_limit,
        mip_rel_gap=cfg.mip.mip_rel_gap,
    )


def replay(path: str, which: list[int], mode: str, extra: dict) -> None:
    from torchsvm.mip.csvm import build_csvm_model, solve_csvm

    if os.environ.get("DBG"):
        import logging

        logging.basicConfig(format="%(relativeCreated)8.0f %(name)s %(message)s")
        for name in ("torchsvm.mip.outer_approx", "torchsvm.mip.csvm"):
            logging.getLogger(name).setLevel(logging.DEBUG)
    if os.environ.get("HIGHS_LOG"):
        import torchsvm.mip.outer_approx as oa

        run_master = oa.OuterApproximation._run_master

        def logged(self, master, config, opts):  # type: ignore[no-untyped-def]
            self._n_master = getattr(self, "_n_master", 0) + 1
            if self._n_master == int(os.environ["HIGHS_LOG"]):
                config = replace(config, verbose=True)
            return run_master(self, master, config, opts)

        oa.OuterApproximation._run_master = logged
    if os.environ.get("MASTER_OPTS"):
        import torchsvm.mip.csvm as csvm_mod
        import torchsvm.mip.outer_approx as oa

        opts = eval(os.environ["MASTER_OPTS"])  # noqa: S307
        oa._PROOF_OPTIONS.update(opts)
        # S5c's own overrides (where this commit has them) take the same values
        getattr(csvm_mod, "S5C_PROOF_OPTIONS", {}).update(opts)
    with open(path, "rb") as f:
        recs = pickle.load(f)
    for i in which:
        r = recs[i]
        p, cfg, kw = r["problem"], r["config"], {**r["kw"], **extra}
        orig = (r["sol"].objective, r["sol"].n_iter, round(r["cpu"], 2))
        c0, t0 = time.process_time(), time.perf_counter()
        if mode == "scip":
            from torchsvm.mip.scip import solve_scip

            tl = float(os.environ.get("TL", 120))
            res = solve_scip(
                build_csvm_model(p, "primal")[0], replace(cfg, time_limit=tl)
            )
            status, obj, bound, rounds = res.status, res.objective, res.bound, "-"
        else:
            if os.environ.get("TL"):
                cfg = replace(cfg, time_limit=float(os.environ["TL"]))
            sol = solve_csvm(p, cfg, **kw)
            status, obj, bound, rounds = (
                sol.status,
                sol.objective,
                sol.bound,
                sol.n_iter,
            )
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        print(
            i, mode, getattr(status, "value", status), obj, bound, rounds,
            "cpu", round(cpu, 2), "wall", round(wall, 2), "orig", *orig, flush=True,
        )  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "capture":
        capture(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 4 and sys.argv[1] == "replay":
        mode = sys.argv[4] if len(sys.argv) > 4 else "ours"
        extra = eval(sys.argv[5]) if len(sys.argv) > 5 else {}  # noqa: S307
        replay(sys.argv[2], [int(i) for i in sys.argv[3].split(",")], mode, extra)
    else:
        raise SystemExit(__doc__)
