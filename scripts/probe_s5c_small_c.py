"""Probes of Ctrl2's S5c MIQPs at small C: what bounds and fixings could save (issue 18).

Reads MIQPs captured by ``python scripts/replay_s5c.py capture DATASET REP OUT.pkl``.

``bounds OUT.pkl I``: for captured MIQP ``I`` with optimum ``U`` (its captured
objective), the exact extremes of each floor member's margin ``y_i f(x_i)`` over
``{||w||^2 + sum_I c_i xi_i <= U, xi_i >= max(0, 1 - y_i f(x_i))}`` (convex, cvxpy with
Clarabel; no floor, no ``z``): the tightest big-M and fixings that bounds of this kind
can give, since :func:`~torchsvm.mip.csvm.anchor_tightening`'s LPs relax this set.
Prints how many members would have ``z_i = 1`` fixed (least margin >= 1) or ``z_i = 0``
(largest margin < 1), and the quantiles of ``M_i = 1 - least margin``.

``kelley OUT.pkl I,J [ROUNDS]``: solves the MIQPs with
:func:`~torchsvm.mip.csvm.solve_csvm` as captured (300 s), and before each master
runs up to ``ROUNDS`` (default 30) rounds of tangent cuts at the master's LP-relaxed
point (kept as cuts of the master). Prints the LP bounds per round, the cutoff, the
master's CPU seconds and nodes: whether the masters' root gap is the tangents' or the
big-M formulation's.

``passes OUT.pkl I,J PASSES``: solves the MIQPs tightened from the first master, where
each tightening is followed by ``PASSES - 1`` further passes of the members' bound
LPs, now over the tightened master's whole LP relaxation (floor and slack rows
included): tighter big-M, valid under the same cutoff. Prints the caps per pass and
the CPU seconds with the passes' own share.

``sweep OUT.pkl I,J VARIANTS``: solves the MIQPs once per variant (comma-separated,
or separated by ``|`` where the argument holds one, e.g. for a dict's commas;
``-`` the defaults, ``key=value`` keyword arguments of ``solve_csvm``, several joined
by ``;``, ``csvm.NAME=value`` a constant of :mod:`torchsvm.mip.csvm`, reset to its
default for every other variant), the order reversed on every other MIQP, 300 s
each; prints CPU seconds, rounds and objective per MIQP and the totals.

Run with ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE TORCHSVM_DATA=/work/shared/data
PYTHONPATH=.``.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp


def _load(path: str) -> list[dict]:
    with open(path, "rb") as f:
        return pickle.load(f)


def bounds(path: str, i: int) -> None:
    import cvxpy as cp

    from torchsvm.mip.csvm import build_csvm_model

    r = _load(path)[i]
    p, sol = r["problem"], r["sol"]
    _, layout, _ = build_csvm_model(p, "primal")
    I, y, X = layout.train_idx, p.y, p.X
    c = p.cost()[I]
    U = float(sol.objective)
    mem = np.unique(np.concatenate([p.floor_members(f) for f in p.floors]))
    wts = p.weights[mem]
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    xi = cp.Variable(I.size)
    cons = [
        xi >= 0,
        xi >= 1 - cp.multiply(y[I], X[I] @ w + b),
        cp.sum_squares(w) + c @ xi <= U,
    ]
    lo, hi = np.empty(mem.size), np.empty(mem.size)
    c0 = time.process_time()
    for t, j in enumerate(mem):
        f = y[j] * (X[j] @ w + b)
        pr = cp.Problem(cp.Minimize(f), cons)
        pr.solve(solver="CLARABEL")
        lo[t] = pr.value
        pr = cp.Problem(cp.Maximize(f), cons)
        pr.solve(solver="CLARABEL")
        hi[t] = pr.value
    opt = y[mem] * (X[mem] @ sol.coef + sol.intercept) >= 1 - 1e-6
    print(
        f"MIQP {i}: C {p.C:g}, floor {[f.required for f in p.floors]}, U {U:.9g}, "
        f"{mem.size} members (weight {wts.sum():g}), {time.process_time() - c0:.1f} "
        "CPU s"
    )
    print(
        f"  z = 1 fixed (least margin >= 1): {(lo >= 1).sum()} (weight {wts[lo >= 1].sum():g})"
    )
    print(
        f"  z = 0 fixed (largest margin < 1): {(hi < 1).sum()} (weight {wts[hi < 1].sum():g})"
    )
    print(f"  undecided: {((lo < 1) & (hi >= 1)).sum()}; met at the optimum: {opt.sum()} (weight {wts[opt].sum():g})")  # fmt: skip
    q = np.quantile(1 - lo, [0, 0.1, 0.5, 0.9, 1])
    print("  M_i quantiles (0, 10, 50, 90, 100 %):", np.round(q, 3))


def _solve(r: dict, **extra) -> tuple:  # type: ignore[no-untyped-def]
    from torchsvm.mip.csvm import solve_csvm

    c0 = time.process_time()
    sol = solve_csvm(
        r["problem"], replace(r["config"], time_limit=300.0), **{**r["kw"], **extra}
    )
    return sol, time.process_time() - c0


def kelley(path: str, which: list[int], rounds: int) -> None:
    import torchsvm.mip.outer_approx as oa
    from torchsvm.mip.highs import solve_highs

    real = oa.OuterApproximation._run_master

    def run_master(self, master, config, opts):  # type: ignore[no-untyped-def]
        n, k = self.lifted.n, self.lifted.k
        cutoff = (opts or {}).get("objective_bound", math.inf)
        c0 = time.process_time()
        vals: list = []
        for _ in range(rounds):
            res = solve_highs(
                replace(master, integrality=None), config, time_limit=10, warn=False
            )
            if res.x is None:
                vals.append(res.message)
                break
            if vals and res.objective <= vals[-1] + 1e-9 * max(1.0, abs(vals[-1])):
                break
            vals.append(res.objective)
            if res.objective >= cutoff:
                break
            rr, tt = res.x[n : n + k], res.x[n + k :]
            viol = np.flatnonzero(0.5 * rr**2 - tt > 1e-9 * max(1.0, abs(self.ub)))
            if viol.size == 0:
                break
            self.lifted.add_points(viol, rr[viol])
            master = replace(
                master,
                A=sp.vstack(
                    [master.A, self.lifted.cut_rows(viol, rr[viol])], format="csr"
                ),
                row_lower=np.concatenate([master.row_lower, -0.5 * rr[viol] ** 2]),
                row_upper=np.concatenate(
                    [master.row_upper, np.full(viol.size, np.inf)]
                ),
            )
        kc = time.process_time() - c0
        c1 = time.process_time()
        res = real(self, master, config, opts)
        nodes = int(self._highs.getInfo().mip_node_count)
        print(
            f"  master: LP bounds {[round(v, 4) if isinstance(v, float) else v for v in vals]}"  # noqa: E501
            f" ({kc:.2f} CPU s), cutoff {cutoff:.6g}, MILP {time.process_time() - c1:.2f}"
            f" CPU s, {nodes} nodes, {res.message}",
            flush=True,
        )
        return res

    oa.OuterApproximation._run_master = run_master
    recs = _load(path)
    for i in which:
        sol, cpu = _solve(recs[i])
        print(i, sol.status.value, f"{sol.objective:.9g}", sol.n_iter, f"cpu {cpu:.2f}")


def passes(path: str, which: list[int], n_pass: int) -> None:
    import torchsvm.mip.csvm as cm
    from torchsvm.mip.highs import PersistentLp
    from torchsvm.mip.model import MipConfig
    from torchsvm.mip.outer_approx import lp_under_cutoff
    from torchsvm.types import SolveStatus

    real = cm.anchor_tightening
    spent = {"cpu": 0.0}

    def tightening(problem, layout, refresh=0.0, **kw):  # type: ignore[no-untyped-def]
        inner = real(problem, layout, refresh, **kw)
        I, F, y, X = layout.train_idx, layout.floor_idx, problem.y, problem.X
        rows = I.size + np.arange(F.size)
        zcol = layout.z.start + np.arange(F.size)
        xicol = layout.xi.start + np.arange(I.size)
        ucols = np.array([*range(layout.w.start, layout.w.stop), layout.b])
        D = y[F][:, None] * np.hstack([X[F], np.ones((F.size, 1))])
        mem = {int(j) for f in problem.floors for j in problem.floor_members(f)}
        fm = np.flatnonzero([int(j) in mem for j in F])

        def tighten(master, cutoff, time_limit):  # type: ignore[no-untyped-def]
            out = inner(master, cutoff, time_limit)
            c0 = time.process_time()
            for k in range(n_pass - 1):
                plp = PersistentLp(
                    lp_under_cutoff(out, cutoff),
                    MipConfig(time_limit=60.0),
                    options={"simplex_strategy": 4},
                )
                A = sp.csr_array(out.A).tolil()
                up, lo_c, up_c = (
                    out.row_upper.copy(),
                    out.col_lower.copy(),
                    out.col_upper.copy(),
                )
                cap = up_c[xicol].copy()
                lowered = 0
                for t in fm:
                    plp.change_costs(ucols, D[t])
                    res = plp.solve(30.0)
                    if res.status is not SolveStatus.optimal:
                        continue
                    m = res.objective - cm._TIGHTEN_SAFETY * (1 + abs(res.objective))
                    new = max(0.0, 1.0 - m)
                    if new < cap[t] - 1e-9:
                        lowered += 1
                        cap[t] = up_c[xicol[t]] = A[rows[t], zcol[t]] = new
                        up[rows[t]] = new
                        if new == 0.0:
                            lo_c[zcol[t]] = 1.0
                out = replace(
                    out,
                    A=sp.csr_array(A),
                    row_upper=up,
                    col_lower=lo_c,
                    col_upper=up_c,
                )
                print(
                    f"  pass {k + 2} under cutoff {cutoff:.6g}: {lowered} caps lowered,"
                    f" median cap {np.median(cap[fm]):.3g}, z = 1 fixed "
                    f"{int((cap[fm] == 0).sum())}",
                    flush=True,
                )
            spent["cpu"] += time.process_time() - c0
            return out

        return tighten

    cm.anchor_tightening = tightening
    recs = _load(path)
    for i in which:
        spent["cpu"] = 0.0
        sol, cpu = _solve(recs[i], tighten_anchors=True)
        print(
            i, f"passes {n_pass}", sol.status.value, f"{sol.objective:.9g}",
            sol.n_iter, f"cpu {cpu:.2f}", f"of which further passes {spent['cpu']:.2f}",
            flush=True,
        )  # fmt: skip


def sweep(path: str, which: list[int], variants: list[str]) -> None:
    import torchsvm.mip.csvm as cm

    defaults = {k: getattr(cm, k) for k in dir(cm) if k.isupper()}
    recs = _load(path)
    total = dict.fromkeys(variants, 0.0)
    for n, i in enumerate(which):
        for v in variants if n % 2 == 0 else variants[::-1]:
            kw: dict = {}
            for k, val in defaults.items():
                setattr(cm, k, val)
            for item in [] if v == "-" else v.split(";"):
                key, val = item.split("=", 1)
                if key.startswith("csvm."):
                    setattr(cm, key[5:], eval(val))  # noqa: S307 - own command line
                else:
                    kw[key] = eval(val)  # noqa: S307
            sol, cpu = _solve(recs[i], **kw)
            total[v] += cpu
            print(i, v, sol.status.value, f"{sol.objective:.9g}", sol.n_iter,
                  f"cpu {cpu:.2f}", flush=True)  # fmt: skip
    for k, val in defaults.items():
        setattr(cm, k, val)
    print("total CPU s", {v: round(t, 2) for v, t in total.items()},
          "load", os.getloadavg())  # fmt: skip


def main() -> None:
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "bounds":
        bounds(a[1], int(a[2]))
    elif len(a) >= 3 and a[0] == "kelley":
        kelley(a[1], [int(i) for i in a[2].split(",")], int(a[3]) if len(a) > 3 else 30)
    elif len(a) >= 4 and a[0] == "passes":
        passes(a[1], [int(i) for i in a[2].split(",")], int(a[3]))
    elif len(a) >= 4 and a[0] == "sweep":
        sep = "|" if "|" in a[3] else ","
        sweep(a[1], [int(i) for i in a[2].split(",")], a[3].split(sep))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
