"""CSVM with one floor, proven by a dual screen over the floor's release sets (SPEC S5).

Notation of :mod:`torchsvm.mip.csvm`. Take S5 (anchor rows) with one floor of unit
weights whose members ``F`` share one label (TPR or TNR), ``m = |F|`` members of which
``need`` must be met: at most ``r = m - need`` rows may be released.

*The primal (feature-space) relaxation.* On the kernel factor's rows ``L`` (``w = v``
free, no multiplier caps, anchors in no floor dropped) a release set ``R`` of ``F``
gives the QP::

    P(R) = min ||v||^2 + sum_I c_i xi_i
           s.t. y_i (L_i . v + b) + xi_i >= 1  (i in I),  y_j (L_j . v + b) >= 1  (j in F \\ R).

Every point of the kernel form with ``z`` releasing ``R`` (members with ``z_j = 0``)
is a point of ``P(R)`` with the same objective (it only drops rows and the link ``v =
L^T y a``), so ``min_R P(R)`` bounds the kernel form's optimum from below; releasing
more rows only lowers ``P``, so only ``|R| = r`` matters (``C(m, r)`` sets). The dual of
``P(R)`` is ``max 2 sum a - |L^T y a|^2`` over ``0 <= a_i <= c_i / 2`` on ``I``, ``a_j
>= 0`` on ``F \\ R`` and ``sum a y = 0``; at its optimum ``a`` the kernel form's point
``(v = L^T y a, b, xi, z, a)`` has the same objective whenever it is feasible there
(``a_j <= M2`` on the members, released and unfloored anchors at ``y f >= 1 - M1``),
which is checked, not assumed.

*The screen.* Any dual point of any ``P(R')``, with ``R``'s multipliers zeroed and the
equality restored by scaling (:mod:`torchsvm.mip._release_screen`), is dual feasible
for ``P(R)`` and bounds it by weak duality, at ``O(r^2)`` per set. A pool of points
(the all-enforced ``P({})``, the incumbent's, every solved survivor's) screens every
set; the sets below the cutoff are solved best bound first, their duals join the pool,
until none is left. The answer is the best solved set whose kernel-form point is
feasible; the bound is the least of the solved sets' dual values and the unsolved
sets' screen bounds.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from torchsvm.exceptions import SolverError
from torchsvm.mip import _release_screen as _rs
from torchsvm.mip.model import MipConfig, MipModel
from torchsvm.mip.solve import solve_model
from torchsvm.problems.csvm import CsvmProblem

if TYPE_CHECKING:
    from torchsvm.mip.csvm import CsvmLayout

logger = logging.getLogger(__name__)

__all__ = ["ReleaseScreen", "release_applies", "release_screen"]

#: most sets listed by one pass of the screen (int64 rows of ``r`` member indices)
LIST_CAP = 2_000_000
#: full passes whose survivors overflow LIST_CAP before the screen gives up
MAX_OVER_CAP = 5


@dataclass
class ReleaseScreen:
    """Outcome of :func:`release_screen`.

    ``x`` is the best kernel-form point found (layout of :func:`build_csvm_model`'s
    dual form) with objective ``upper``; ``lower`` the proven bound (``-inf`` when the
    screen could not bound every set); ``proven`` whether ``upper - lower <= gap *
    |upper|``.
    """

    x: np.ndarray | None
    upper: float
    lower: float
    proven: bool
    n_sets: int
    qps: int
    points: int
    survivors: list[int] = field(default_factory=list)
    released: np.ndarray | None = None
    message: str = ""


def release_applies(problem: CsvmProblem) -> str:
    """Empty string if the screen applies to ``problem``, else why not."""
    if problem.on_training:
        return "S5c (floors on the training rows)"
    if len(problem.floors) != 1:
        return f"{len(problem.floors)} floors (the screen takes one)"
    fl = problem.floors[0]
    mem = problem.floor_members(fl)
    if not np.all(problem.weights[mem] == 1.0):
        return "weighted floor rows"
    if np.unique(problem.y[mem]).size != 1:
        return "floor members of both labels"
    return ""


def _dual_qp(
    G: np.ndarray, y: np.ndarray, cap: np.ndarray, config: MipConfig
) -> np.ndarray:
    """``argmax 2 sum a - a^T (yy^T * G) a`` s.t. ``0 <= a <= cap``, ``y . a = 0``."""
    H = (y[:, None] * y[None, :]) * G
    n = y.size
    model = MipModel(
        c=-2.0 * np.ones(n),
        A=sp.csr_array(y[None, :].astype(np.float64)),
        row_lower=np.zeros(1),
        row_upper=np.zeros(1),
        col_lower=np.zeros(n),
        col_upper=cap,
        Q=sp.csr_array(2.0 * H),
    )
    res = solve_model(model, config)
    if res.x is None:
        raise SolverError(f"release-set dual QP failed: {res.status} {res.message}")
    return np.asarray(res.x, dtype=np.float64)


def _balance(a: np.ndarray, y: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Clip to the box and scale the heavier label down so that ``y . a = 0``."""
    a = np.clip(a, 0.0, cap)
    P = float(a[y > 0].sum())
    N = float(a[y < 0].sum())
    if P > N and P > 0:
        a[y > 0] *= N / P
    elif N > P and N > 0:
        a[y < 0] *= P / N
    return a


def member_system(
    problem: CsvmProblem, layout: CsvmLayout
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The screen's rows: the training rows ``I``, then the floor's members.

    Returns ``S`` (their problem indices), ``LS`` (their rows of the dual layout's
    kernel factor ``L``), ``yS``, ``capS`` (``C/2`` on ``I``, ``inf`` on the members:
    ``P(R)`` has no multiplier caps in feature space) and ``GS = LS LS^T``.
    """
    mem = np.asarray(problem.floor_members(problem.floors[0]))
    pos_in_R = {int(s): t for t, s in enumerate(layout.dual_idx)}
    S = np.concatenate([layout.train_idx, mem])
    LS = layout.L[[pos_in_R[int(s)] for s in S]]
    yS = problem.y[S].astype(np.float64)
    capS = np.concatenate(
        [problem.cost()[layout.train_idx] / 2.0, np.full(mem.size, np.inf)]
    )
    return S, LS, yS, capS, LS @ LS.T


def release_screen(
    problem: CsvmProblem,
    layout: CsvmLayout,
    config: MipConfig,
    *,
    deadline: float,
    incumbent: float = math.inf,
    batch: int = 8,
    max_sets: float = 5e7,
    caps: bool = True,
) -> ReleaseScreen | None:
    """Solve the one-floor S5 kernel form by the release-set screen (module docstring).

    Returns None where it does not apply (:func:`release_applies`) or has more than
    ``max_sets`` sets. ``incumbent`` is an upper bound known elsewhere (objective of
    a feasible kernel-form point): sets above it need no QP. ``caps``: check the
    members' multipliers against ``M2`` (the kernel form's caps; False for the
    primal form of the linear kernel, which has none). The screen's passes are not
    interrupted; ``deadline`` is checked between them and bounds each QP.
    """
    why = release_applies(problem)
    if why:
        logger.info("release screen skipped: %s", why)
        return None
    if layout.form != "dual" or layout.L is None:
        raise ValueError("release_screen needs the dual-form layout")
    fl = problem.floors[0]
    y = problem.y.astype(np.float64)
    I, J, R = layout.train_idx, layout.floor_idx, layout.dual_idx
    mem = np.asarray(problem.floor_members(fl))
    m = mem.size
    need = int(math.ceil(fl.required - 1e-9))
    r = m - need
    n_sets = math.comb(m, r) if r >= 0 else 0
    if r < 0 or n_sets > max_sets:
        logger.info("release screen skipped: C(%d, %d) = %d sets", m, r, n_sets)
        return None
    M1, M2 = float(problem.big_m), float(problem.big_m_dual)
    cost = problem.cost()
    pos_in_R = {int(s): t for t, s in enumerate(R)}
    S, LS, yS, capS, GS = member_system(problem, layout)
    nI = I.size
    ym = float(y[mem[0]])
    same = yS == ym
    LJ = layout.L[[pos_in_R[int(s)] for s in J]]
    yJ = y[J]
    pos_in_J = {int(s): t for t, s in enumerate(J)}
    memJ = np.array([pos_in_J[int(s)] for s in mem])
    gap = float(config.mip_rel_gap)

    pool: dict[str, list] = {
        k: [] for k in ("aF", "gp", "gn", "pos", "neg", "pp", "pn", "nn")
    }
    best = {"upper": float(incumbent), "x": None, "rel": None}
    qps = 0
    # every solved set's dual value (a lower bound on its P), by its release mask
    solved: dict[bytes, float] = {}

    def add_point(a: np.ndarray) -> float:
        vp = LS[same].T @ a[same]
        vn = LS[~same].T @ a[~same]
        LF = LS[nI:]
        pool["aF"].append(a[nI:].copy())
        pool["gp"].append(LF @ vp)
        pool["gn"].append(LF @ vn)
        pool["pos"].append(float(a[same].sum()))
        pool["neg"].append(float(a[~same].sum()))
        pool["pp"].append(float(vp @ vp))
        pool["pn"].append(float(vp @ vn))
        pool["nn"].append(float(vn @ vn))
        v = vp - vn if ym > 0 else vn - vp
        return float(2.0 * a.sum() - v @ v)

    def kernel_point(a: np.ndarray, rel: np.ndarray) -> tuple[float, np.ndarray] | None:
        """Kernel-form point of multipliers ``a`` (zero on ``rel``), best ``b``."""
        if caps and np.any(a[nI:] > M2 * (1 + 1e-9)):
            return None
        v = LS.T @ (yS * a)
        gI = layout.L[[pos_in_R[int(s)] for s in I]] @ v
        gJ = LJ @ v
        enforced = np.zeros(J.size, dtype=bool)
        enforced[memJ[~rel]] = True
        h = np.where(enforced, 1.0, 1.0 - M1)
        lo = np.max(np.where(yJ > 0, h - gJ, -np.inf), initial=-np.inf)
        hi = np.min(np.where(yJ < 0, -h - gJ, np.inf), initial=np.inf)
        if lo > hi:
            return None
        yI, cI = y[I], cost[I]
        cand = np.clip(np.concatenate([yI - gI, [lo, hi]]), lo, hi)
        cand = cand[np.isfinite(cand)]
        xi = np.maximum(0.0, 1.0 - yI[None, :] * (gI[None, :] + cand[:, None]))
        obj = xi @ cI
        k = int(np.argmin(obj))
        b = float(cand[k])
        x = np.zeros(layout.n_cols)
        x[layout.w] = v
        x[layout.b] = b
        x[layout.xi] = xi[k]
        z = np.zeros(J.size)
        z[memJ[~rel]] = 1.0
        x[layout.z] = z
        aR = np.zeros(R.size)
        aR[[pos_in_R[int(s)] for s in S]] = a
        assert layout.a is not None
        x[layout.a] = aR
        return float(v @ v + obj[k]), x

    def solve_set(rel: np.ndarray) -> float:
        """Solve ``P(rel)``; add its point; returns its dual (lower) bound."""
        nonlocal qps
        keep = np.concatenate([np.ones(nI, dtype=bool), ~rel])
        a = np.zeros(S.size)
        left = max(deadline - time.perf_counter(), 1.0)
        sub = _dual_qp(
            GS[np.ix_(keep, keep)],
            yS[keep],
            capS[keep],
            MipConfig(time_limit=min(60.0, left), threads=1),
        )
        a[keep] = sub
        qps += 1
        a = _balance(a, yS, capS)
        lower = add_point(a)
        solved[rel.tobytes()] = lower
        kp = kernel_point(a, rel)
        if kp is not None and kp[0] < best["upper"]:
            best["upper"], best["x"], best["rel"] = kp[0], kp[1], rel.copy()
        elif kp is None and lower < best["upper"]:
            logger.warning("release set's kernel point infeasible (caps bind?)")
            best.setdefault("unresolved", []).append(rel.copy())
        return lower

    _rs.warm()
    t0 = time.perf_counter()
    # the all-enforced point, then the members with the largest multipliers released
    lower0 = solve_set(np.zeros(m, dtype=bool))
    aF0 = pool["aF"][0]
    rel = np.zeros(m, dtype=bool)
    rel[np.argsort(-aF0)[:r]] = True
    solve_set(rel)
    # greedy: release one at a time, re-solving
    rel = np.zeros(m, dtype=bool)
    for _ in range(r):
        aF = pool["aF"][-1]
        cand = np.where(rel, -np.inf, aF)
        rel[int(np.argmax(cand))] = True
        solve_set(rel)
    logger.info(
        "release screen: P({}) %.6g, start %.6g, %d QPs", lower0, best["upper"], qps
    )

    def arrays() -> tuple[np.ndarray, ...]:
        return tuple(
            np.ascontiguousarray(np.array(pool[k], dtype=np.float64))
            for k in ("aF", "gp", "gn", "pos", "neg", "pp", "pn", "nn")
        )

    Gm = np.ascontiguousarray(GS[nI:, nI:])
    survivors_log: list[int] = []
    sets = np.zeros((0, r), dtype=np.int64)
    bnds = np.zeros(0)
    listed = False
    low = -math.inf
    while True:
        if time.perf_counter() > deadline:
            break
        thr = best["upper"] - gap * abs(best["upper"])
        aF, gp, gn, pos, neg, pp, pn, nn = arrays()
        cap = LIST_CAP
        out = np.zeros((cap, r), dtype=np.int64)
        outb = np.zeros(cap)
        count, low = _rs.screen_all(
            m, r, thr, aF, gp, gn, Gm, pos, neg, pp, pn, nn, cap, out, outb
        )
        survivors_log.append(int(count))
        logger.info(
            "release screen: %d points, %d of %d sets left under %.6g (%.1f s)",
            aF.shape[0],
            count,
            n_sets,
            thr,
            time.perf_counter() - t0,
        )
        if count <= cap:
            sets, bnds = out[:count].copy(), outb[:count].copy()
            listed = True
            break
        # too many: solve a few of the listed ones (lowest bound) and screen again,
        # at most MAX_OVER_CAP times (the caller's outer approximation goes on)
        if len(survivors_log) >= MAX_OVER_CAP:
            break
        order = np.argsort(outb)[:batch]
        for q in order:
            rel = np.zeros(m, dtype=bool)
            rel[out[q]] = True
            solve_set(rel)
    # the list: solve lowest bound first, re-screen with the new points
    p_done = len(pool["aF"])
    while sets.shape[0] and time.perf_counter() < deadline:
        thr = best["upper"] - gap * abs(best["upper"])
        order = np.argsort(bnds)
        sets, bnds = sets[order], bnds[order]
        nb = min(batch, sets.shape[0])
        for q in range(nb):
            rel = np.zeros(m, dtype=bool)
            rel[sets[q]] = True
            key = rel.tobytes()
            if key not in solved:
                solve_set(rel)
        # the solved sets leave the list: their dual values are kept in ``solved``
        sets, bnds = sets[nb:], bnds[nb:]
        thr = best["upper"] - gap * abs(best["upper"])
        aF, gp, gn, pos, neg, pp, pn, nn = arrays()
        _rs.screen_list(sets, bnds, p_done, thr, aF, gp, gn, Gm, pos, neg, pp, pn, nn)
        p_done = aF.shape[0]
        keep = bnds < thr
        sets, bnds = sets[keep], bnds[keep]
        survivors_log.append(int(sets.shape[0]))
        logger.info(
            "release screen: %d points, %d QPs, %d sets left, upper %.8g (%.1f s)",
            p_done,
            qps,
            sets.shape[0],
            best["upper"],
            time.perf_counter() - t0,
        )
    thr = best["upper"] - gap * abs(best["upper"])
    unresolved = [
        u for u in best.get("unresolved", []) if solved.get(u.tobytes(), math.inf) < thr
    ]
    if listed and sets.shape[0] == 0 and not unresolved:
        # every set is screened (bound >= thr) or solved (its dual value)
        lower = min([thr, *solved.values()])
        msg = "proven"
    else:
        lower = float(np.min(bnds)) if listed and bnds.size else low
        lower = min([lower, *solved.values()])
        msg = (
            "stopped" if not unresolved else "kernel point infeasible below the cutoff"
        )
    up = best["upper"]
    proven = (
        math.isfinite(up) and up - lower <= gap * abs(up) + 1e-12 and msg == "proven"
    )
    return ReleaseScreen(
        x=best["x"],
        upper=up,
        lower=lower,
        proven=proven,
        n_sets=n_sets,
        qps=qps,
        points=len(pool["aF"]),
        survivors=survivors_log,
        released=best["rel"],
        message=msg,
    )
