"""Dense primal-dual interior point (Mehrotra) for convex QPs (SPEC S5 "Solving").

Used for the fixed-integer and relaxed QPs of the outer approximation
(:mod:`torchsvm.mip.outer_approx`) and as the fallback of
:func:`torchsvm.mip.solve.solve_model` when the HiGHS active-set QP fails on the
degenerate, semidefinite CSVM QPs. Pure numpy/scipy: it imports no solver.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from torchsvm.mip.model import MipModel, MipResult, model_objective
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["solve_qp_ipm"]


def _step_length(
    s: np.ndarray, lam: np.ndarray, ds: np.ndarray, dl: np.ndarray
) -> float:
    """Largest step in (0, 1] keeping ``s`` and ``lam`` non-negative."""
    a = 1.0
    neg = ds < 0
    if neg.any():
        a = min(a, float(np.min(-s[neg] / ds[neg])))
    neg = dl < 0
    if neg.any():
        a = min(a, float(np.min(-lam[neg] / dl[neg])))
    return a


def solve_qp_ipm(
    model: MipModel,
    *,
    time_limit: float = 300.0,
    tol: float = 1e-9,
    dual_tol: float = 1e-4,
    max_iter: int = 200,
    iter_time: float | None = None,
    linalg: str = "auto",
) -> MipResult:
    """Dense primal-dual interior-point method (Mehrotra) for a convex QP.

    Solves ``min c x + 0.5 x^T Q x + offset`` s.t. rows, bounds (integrality ignored;
    fixed columns are eliminated; if it fails, it is retried with the free columns
    defined by equality rows substituted out). Used for the outer approximation's QPs
    because the
    HiGHS active-set QP can stall or fail on the degenerate, semidefinite CSVM QPs.

    Parameters
    ----------
    model : MipModel
        A validated model with ``sense="min"``.
    time_limit : float
        Seconds.
    tol : float
        Relative tolerance on the primal / dual residuals and the complementarity gap.
    dual_tol : float
        Dual residual accepted once the complementarity gap has vanished.
    max_iter : int
        Iteration cap.
    iter_time : float, optional
        Expected seconds of one iteration (e.g. measured on a QP of the same size, as
        the outer approximation does); predicts the first iteration.
    linalg : {"auto", "dense", "sparse"}
        How the Newton system is solved each iteration. ``dense``: the normal
        equations ``H + G^T D G`` (inequality rows ``G`` eliminated) are formed and
        factored densely. ``sparse``: the augmented system
        ``[[H + D_B, G^T], [G, -D^-1]]`` is factored by a sparse LU (SuperLU), never
        forming ``G^T D G``. Same iterates up to rounding, so the same optimum at
        ``tol``. ``auto``: sparse where the augmented system has at most a quarter of
        the normal equations' dense entries (and >= 300 rows; below, SuperLU's
        overhead was not repaid: linear S5 n = 100 of scripts/bench_mip.py 0.22 s
        sparse vs 0.20 s dense), e.g. the linear CSVM's
        primal form (``w`` dense but only ``d`` columns; ``xi``, ``z`` each in a few
        rows), whose normal equations are dense over all ``d + 1 + 2 n`` columns
        (wisconsin S5c, issue 18: a 755-column dense system per iteration); dense
        otherwise (e.g. the RBF kernel form, whose factor rows are dense).

    Returns
    -------
    MipResult
        ``optimal`` with ``x``, or ``not_solved`` / ``time_limit`` without one;
        ``n_iter`` is the number of iterations made.

    Notes
    -----
    ``time_limit`` bounds the call by prediction: one iteration (one dense LU of the
    Newton system and its solves) cannot be interrupted, so no iteration starts that is
    predicted to end past the limit. The prediction is the previous iteration's time;
    for the first one ``iter_time`` or, without it, a timed LU of a random matrix of
    half the Newton system's size, times 8 (cubic cost) and times
    ``_ITER_PER_LU`` (the forming of the system and the four solves; measured
    ~2.6x the LU at 1081 columns, issue 19). The set-up before the first iteration
    (dense copies of the model, ~0.07 s at 1081 columns under load 10) is not
    predicted.
    """
    t0 = time.perf_counter()
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if linalg not in ("auto", "dense", "sparse"):
            raise ValueError(
                f"linalg must be 'auto', 'dense' or 'sparse', got {linalg!r}"
            )
        res = _solve_qp_ipm(
            model, time_limit, tol, dual_tol, max_iter, False, iter_time, linalg
        )
        left = time_limit - (time.perf_counter() - t0)
        if res.status is SolveStatus.not_solved and res.x is None and left > 0:
            # retry with the free columns of equality rows substituted out
            first = res.n_iter
            res = _solve_qp_ipm(
                model, left, tol, dual_tol, max_iter, True, iter_time, linalg
            )
            res = replace(res, n_iter=first + res.n_iter)
    return replace(res, runtime=time.perf_counter() - t0)


# one iteration / one LU of the Newton system (forming it, 4 solves; issue 19: 0.2 s
# per iteration vs 0.077 s per LU at 1081 columns, OMP_NUM_THREADS=1, load ~10)
_ITER_PER_LU = 3.0


def _predict_iter(size: int) -> float:
    """Predicted seconds of one iteration on a Newton system of ``size`` rows.

    Times an LU of a random matrix of half the size (one eighth of the work) and
    scales it (its cost: ~1/24 of one iteration); 0 for small systems (< 200 rows,
    a few milliseconds per iteration).
    """
    if size < 200:
        return 0.0
    k = size // 2
    A = np.random.default_rng(0).standard_normal((k, k)) + k * np.eye(k)
    s = time.perf_counter()
    scipy.linalg.lu_factor(A, check_finite=False)
    return (time.perf_counter() - s) * 8.0 * _ITER_PER_LU


def _substitution(
    A: np.ndarray,
    rl: np.ndarray,
    ru: np.ndarray,
    lo: np.ndarray,
    up: np.ndarray,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """Columns to eliminate through equality rows: ``x = P x_r + p0``.

    A column qualifies if it is free, and a row qualifies if it is an equality holding
    exactly one qualifying column with a coefficient of magnitude >= 1e-6 (the other
    entries then only involve kept columns). Returns ``(None, ., .)`` if nothing
    qualifies; else ``P`` of shape (n, n_r), ``p0``, the mask of the rows kept and the
    indices of the kept columns (``x[kept] = x_r``).
    """
    n = A.shape[1]
    freecol = ~np.isfinite(lo) & ~np.isfinite(up)
    eq = np.isfinite(rl) & (rl == ru)
    if not (freecol.any() and eq.any()):
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    sub_of_row: dict[int, int] = {}
    used: set[int] = set()
    for row in np.flatnonzero(eq).tolist():
        cand = np.flatnonzero(freecol & (np.abs(A[row]) >= 1e-6))
        if cand.size == 1 and int(cand[0]) not in used:
            sub_of_row[row] = int(cand[0])
            used.add(int(cand[0]))
    if not sub_of_row:
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    subs = np.array(sorted(used))
    kept = np.setdiff1d(np.arange(n), subs)
    # a row may only reference substituted columns through its own pivot
    for r1, j1 in list(sub_of_row.items()):
        others = np.flatnonzero(A[r1])
        if np.intersect1d(others[others != j1], subs).size:
            del sub_of_row[r1]
    if not sub_of_row:
        return None, np.zeros(n), np.ones(A.shape[0], dtype=bool), np.arange(n)
    subs = np.array(sorted(sub_of_row.values()))
    kept = np.setdiff1d(np.arange(n), subs)
    P = np.zeros((n, kept.size))
    P[kept, np.arange(kept.size)] = 1.0
    p0 = np.zeros(n)
    for r2, j2 in sub_of_row.items():
        a = A[r2, j2]
        P[j2] = -A[r2, kept] / a
        p0[j2] = rl[r2] / a
    keep_rows = np.ones(A.shape[0], dtype=bool)
    keep_rows[list(sub_of_row)] = False
    return P, p0, keep_rows, kept


def _solve_qp_ipm(
    model: MipModel,
    time_limit: float,
    tol: float,
    dual_tol: float,
    max_iter: int,
    substitute: bool,
    iter_time: float | None = None,
    linalg: str = "auto",
) -> MipResult:
    t0 = time.perf_counter()
    n = model.n_cols
    lo_c, up_c = np.asarray(model.col_lower), np.asarray(model.col_upper)
    fixed = lo_c == up_c
    free = np.flatnonzero(~fixed)
    xf = lo_c[fixed]
    Qf = None if model.Q is None else sp.csr_array(model.Q)
    A = sp.csr_array(model.A) if model.A is not None else sp.csr_array((0, n))
    shift = A[:, np.flatnonzero(fixed)] @ xf if fixed.any() else np.zeros(A.shape[0])
    Af = A[:, free].toarray()
    rl = np.asarray(model.row_lower) - shift
    ru = np.asarray(model.row_upper) - shift
    # rows left without a free column are constants: drop those they satisfy (an
    # inequality 0 <= 0 would force its slack to 0, a degenerate complementarity pair;
    # e.g. |w_k| <= M delta_k at delta_k = 0 once w_k is fixed, see
    # OuterApproximation.qp_bounds)
    empty = ~np.any(Af != 0, axis=1)
    if empty.any():
        slack = 1e-9 * (1.0 + np.abs(shift))
        ok = empty & (rl <= slack) & (ru >= -slack)
        if ok.any():
            Af, rl, ru = Af[~ok], rl[~ok], ru[~ok]
    c = np.asarray(model.c, dtype=np.float64)[free].copy()
    const = float(model.offset) + float(np.asarray(model.c)[fixed] @ xf)
    if Qf is not None:
        H = Qf[free][:, free].toarray()
        if fixed.any():
            Qff = Qf[free][:, np.flatnonzero(fixed)]
            c += Qff @ xf
            const += 0.5 * float(
                xf @ (Qf[np.flatnonzero(fixed)][:, np.flatnonzero(fixed)] @ xf)
            )
    else:
        H = np.zeros((free.size, free.size))
    lo_free, up_free = lo_c[free].copy(), up_c[free].copy()
    # Substitute free columns defined by equality rows (e.g. v = L^T diag(y) a in the
    # CSVM kernel form): x = P x_r + p0. The reduced QP has no such saddle block and
    # is far better conditioned for the interior point.
    P: np.ndarray | None = None
    if substitute:
        P, p0, keep_rows, kept = _substitution(Af, rl, ru, lo_free, up_free)
    if P is not None:
        const += float(c @ p0 + 0.5 * p0 @ H @ p0)
        c = P.T @ (c + H @ p0)
        H = P.T @ H @ P
        shift_r = Af @ p0
        Af = (Af @ P)[keep_rows]
        rl, ru = (rl - shift_r)[keep_rows], (ru - shift_r)[keep_rows]
        lo_free, up_free = lo_free[kept], up_free[kept]
    nf = H.shape[0]
    eq = np.isfinite(rl) & (rl == ru)
    AE, bE = Af[eq], rl[eq]
    lo_rows = np.flatnonzero(~eq & np.isfinite(rl))
    up_rows = np.flatnonzero(~eq & np.isfinite(ru))
    # inequality rows G x <= h (dense part) and bound rows sgn * x_j <= hb
    G = np.vstack([-Af[lo_rows], Af[up_rows]])
    h = np.concatenate([-rl[lo_rows], ru[up_rows]])
    lo_f, up_f = lo_free, up_free
    bl = np.flatnonzero(np.isfinite(lo_f))
    bu = np.flatnonzero(np.isfinite(up_f))
    bidx = np.concatenate([bl, bu])
    bsgn = np.concatenate([-np.ones(bl.size), np.ones(bu.size)])
    hb = np.concatenate([-lo_f[bl], up_f[bu]])
    mG, mB, mE = G.shape[0], bidx.size, AE.shape[0]
    m = mG + mB

    def gx(x: np.ndarray) -> np.ndarray:
        return np.concatenate([G @ x, bsgn * x[bidx]])

    def gtv(v: np.ndarray) -> np.ndarray:
        out = G.T @ v[:mG]
        np.add.at(out, bidx, bsgn * v[mG:])
        return out

    hh = np.concatenate([h, hb])
    # Structure of the Newton system: columns that no inequality row touches and that
    # H couples to nothing else ("isolated", e.g. the CSVM kernel form's multipliers,
    # which appear only in equality rows and bounds) have a diagonal block in
    # K = H + G^T D G; they are eliminated, so each iteration factors a system of
    # (kept columns + equality rows) instead of (all columns + equality rows), and
    # G^T D G is formed only over the columns G touches.
    g_touch = np.any(G != 0, axis=0) if G.size else np.zeros(nf, dtype=bool)
    H_off = H - np.diag(np.diag(H))
    h_touch = np.any(H_off != 0, axis=0)
    bounded = np.zeros(nf, dtype=bool)
    bounded[bidx] = True
    iso = ~g_touch & ~h_touch & (bounded | (np.diag(H) > 0))
    if not mE:
        iso[:] = False
    iso_cols = np.flatnonzero(iso)
    dcols = np.flatnonzero(~iso)
    nd = dcols.size
    pos_d = np.full(nf, -1)
    pos_d[dcols] = np.arange(nd)
    gcols = np.flatnonzero(g_touch)
    g_in_d = pos_d[gcols]
    Gc = G[:, gcols]
    Hd = H[np.ix_(dcols, dcols)]
    h_iso = np.diag(H)[iso_cols].copy()
    AE_d = AE[:, dcols]
    AE_i = AE[:, iso_cols]
    # the sparse augmented system (solve_qp_ipm, ``linalg``): unknowns (dx_d, dnu, v)
    # with v = D_G G dx, so that G^T D G is never formed
    nK = nd + mE
    use_sparse = False
    if linalg != "dense" and nK:
        Gc_s = sp.csr_array(Gc)
        Hd_s = sp.csr_array(Hd)
        AEd_s = sp.csr_array(AE_d)
        nnz_aug = Hd_s.nnz + nd + 2 * AEd_s.nnz + mE * mE + 2 * Gc_s.nnz + mG
        use_sparse = linalg == "sparse" or (nK >= 300 and nnz_aug <= 0.25 * nK * nK)
    if use_sparse:
        # G's columns renumbered from gcols to the kept columns
        G_d = sp.csr_array(
            (Gc_s.data, g_in_d[Gc_s.indices], Gc_s.indptr), shape=(mG, nd)
        )
        G = sp.csr_array(G)  # gx / gtv as sparse products from here on
        G_d2 = G_d.multiply(G_d).tocsr()
        G_dT = sp.csr_array(G_d.T)
        AEd_T = sp.csr_array(AEd_s.T)
        h_d = Hd_s.diagonal()
        # without equality rows the pattern is fixed: [[H + diag, G^T], [G, diag]];
        # it is built once and only its diagonal is rewritten per iteration
        aug0: sp.csc_array | None = None
        diag_pos = np.zeros(0, dtype=np.int64)
        if not mE and mG:
            Hoff = sp.csr_array(Hd_s - sp.diags_array(h_d))
            Hoff.eliminate_zeros()
            aug0 = sp.block_array(
                [
                    [Hoff + sp.eye_array(nd), G_dT],
                    [G_d, -sp.eye_array(mG)],
                ],
                format="csc",
            )
            aug0.sum_duplicates()
            aug0.sort_indices()
            col_of = np.repeat(np.arange(aug0.shape[1]), np.diff(aug0.indptr))
            diag_pos = np.flatnonzero(aug0.indices == col_of)
            assert diag_pos.size == aug0.shape[0]
    x = np.zeros(nf)
    if bl.size:
        x[bl] = np.maximum(x[bl], lo_f[bl])
    if bu.size:
        x[bu] = np.minimum(x[bu], up_f[bu])
    s = np.maximum(hh - gx(x), 1.0)
    lam = np.ones(m)
    nu = np.zeros(mE)
    scale_c = 1.0 + np.linalg.norm(c, np.inf)
    scale_h = 1.0 + (np.linalg.norm(hh, np.inf) if m else 0.0)
    status = SolveStatus.not_solved
    last_top: float | None = None
    feas_x: np.ndarray | None = None
    prev_rd: float | None = None
    # predicted seconds of the first iteration (see solve_qp_ipm, Notes)
    # (a sparse iteration is not predicted by a dense LU: 0 until measured)
    if iter_time is not None:
        t_first = float(iter_time)
    else:
        t_first = 0.0 if use_sparse else _predict_iter(nd + mE)
    n_done = 0
    for _ in range(max_iter):
        now = time.perf_counter()
        # stop before an iteration predicted to end past the limit (dense iterations
        # on thousands of columns take tens of seconds each)
        t_iter = t_first if last_top is None else now - last_top
        last_top = now
        if now - t0 + t_iter > time_limit:
            status = SolveStatus.time_limit
            break
        rd = H @ x + c + gtv(lam) + (AE.T @ nu if mE else 0.0)
        rp = gx(x) + s - hh
        re = AE @ x - bE if mE else np.zeros(0)
        mu = float(s @ lam) / max(m, 1)
        logger.debug(
            "ipm rd=%.2e rp=%.2e re=%.2e mu=%.2e",
            np.abs(rd).max(),
            np.abs(rp).max() if m else 0,
            np.abs(re).max() if mE else 0,
            mu,
        )
        pobj = float(c @ x + 0.5 * x @ H @ x)
        primal_ok = (m == 0 or np.linalg.norm(rp, np.inf) <= tol * scale_h) and (
            mE == 0 or np.linalg.norm(re, np.inf) <= tol * (1 + np.abs(bE).max())
        )
        rd_n = float(np.linalg.norm(rd, np.inf)) / scale_c
        # NOTE: on the semidefinite CSVM QPs the dual residual can stall (1e-7..1e-5)
        # once the barrier is tiny (D spans 1e-12..1e12). A primal-feasible point with
        # vanishing complementarity and rd <= dual_tol is accepted: the outer
        # approximation only needs a feasible, near-optimal point (its bound comes
        # from the HiGHS master).
        if primal_ok and mu <= tol * max(1.0, abs(pobj)) / 10 and rd_n <= tol:
            status = SolveStatus.optimal
            break
        if primal_ok:
            feas_x = x.copy()
        if (
            primal_ok
            and mu <= 1e-8 * max(1.0, abs(pobj))
            and rd_n <= dual_tol
            and prev_rd is not None
            and rd_n >= 0.5 * prev_rd
        ):
            # the dual residual stalls or grows once the barrier is tiny (see NOTE);
            # while it still falls fast the iterations go on to the strict test
            # above (a point accepted early is only ~1e-8 accurate)
            status = SolveStatus.optimal
            break
        prev_rd = rd_n
        if primal_ok and mu <= 1e-13 * max(1.0, abs(pobj)):
            break
        D = lam / s
        diag = np.zeros(nf)
        np.add.at(diag, bidx, D[mG:])
        dg = h_iso + diag[iso_cols]
        dg = dg + 1e-11 * (1.0 + np.abs(h_iso))
        if mE:
            S = (AE_i / dg) @ AE_i.T if iso_cols.size else np.zeros((mE, mE))
        KKT: np.ndarray | sp.csc_array
        if use_sparse:
            # the same regularised K = H + G^T D G + D_B as the dense branch, in
            # augmented form: [[H + D_B + reg, AE^T, G^T], [AE, -S, 0], [G, 0, -1/D]]
            kdiag = h_d + G_d2.T @ D[:mG]
            top_d = diag[dcols] + 1e-11 * (1.0 + np.abs(kdiag))
            if aug0 is not None:
                KKT = aug0.copy()
                KKT.data[diag_pos] = np.concatenate([h_d + top_d, -1.0 / D[:mG]])
            else:
                blocks: list[list[sp.csr_array | None]] = [
                    [Hd_s + sp.diags_array(top_d, format="csr")]
                ]
                if mE:
                    blocks[0].append(AEd_T)
                    blocks.append([AEd_s, sp.csr_array(-S)])
                if mG:
                    blocks[0].append(G_dT)
                    if mE:
                        blocks[1].append(None)
                        blocks.append([G_d, None])
                    else:
                        blocks.append([G_d])
                    blocks[-1].append(sp.diags_array(-1.0 / D[:mG], format="csr"))
                KKT = sp.block_array(blocks, format="csc")
            try:
                # symmetric pattern: a minimum-degree ordering of A + A^T and
                # diagonal pivots preferred (threshold 0.01; it pivots off the
                # diagonal only where a pivot is tiny, e.g. the free intercept)
                lu = spla.splu(
                    KKT,
                    permc_spec="MMD_AT_PLUS_A",
                    diag_pivot_thresh=0.01,
                    options={"SymmetricMode": True},
                )
            except RuntimeError:  # exactly singular
                break
        else:
            # K restricted to the kept columns: H + G^T D G over the columns G touches
            Kd = Hd.copy()
            Kd[np.ix_(g_in_d, g_in_d)] += (Gc.T * D[:mG]) @ Gc
            kdiag = np.diag(Kd).copy()
            Kd[np.diag_indices(nd)] += diag[dcols] + 1e-11 * (1.0 + np.abs(kdiag))
            KKT = np.block([[Kd, AE_d.T], [AE_d, -S]]) if mE else Kd
            try:
                lu = scipy.linalg.lu_factor(KKT, check_finite=False)
            except (ValueError, np.linalg.LinAlgError):
                break

        def newton(
            rc: np.ndarray,
            D: np.ndarray = D,
            lu: object = lu,
            KKT: np.ndarray | sp.csc_array = KKT,
            dg: np.ndarray = dg,
            rd: np.ndarray = rd,
            rp: np.ndarray = rp,
            re: np.ndarray = re,
            s: np.ndarray = s,
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            rhs_x = -rd - gtv(D * rp - rc / s)
            r_d, r_i = rhs_x[dcols], rhs_x[iso_cols]
            if mE:
                rhs = np.concatenate([r_d, -re - AE_i @ (r_i / dg)])
            else:
                rhs = r_d
            if use_sparse:
                if mG:
                    rhs = np.concatenate([rhs, np.zeros(mG)])
                sol = lu.solve(rhs)  # type: ignore[attr-defined]
                sol += lu.solve(rhs - KKT @ sol)  # type: ignore[attr-defined]
            else:
                sol = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
                sol += scipy.linalg.lu_solve(lu, rhs - KKT @ sol, check_finite=False)
            dx = np.empty(nf)
            dx[dcols] = sol[:nd]
            dn = sol[nd : nd + mE]
            if iso_cols.size:
                dx[iso_cols] = (r_i - (AE_i.T @ dn if mE else 0.0)) / dg
            return dx, D * (gx(dx) + rp) - rc / s, dn

        rc = s * lam
        dx, dl, dn = newton(rc)
        ds = (-rc - s * dl) / lam
        a_aff = _step_length(s, lam, ds, dl)
        mu_aff = float((s + a_aff * ds) @ (lam + a_aff * dl)) / max(m, 1)
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        rc = s * lam + ds * dl - sigma * mu
        dx, dl, dn = newton(rc)
        ds = (-rc - s * dl) / lam
        a = min(1.0, 0.99 * _step_length(s, lam, ds, dl))
        x += a * dx
        s += a * ds
        lam += a * dl
        if mE:
            nu += a * dn
        n_done += 1
        if not np.all(np.isfinite(x)):
            break
    runtime = time.perf_counter() - t0

    def expand(xr: np.ndarray) -> np.ndarray:
        full = np.empty(n)
        full[free] = xr if P is None else P @ xr + p0
        full[fixed] = xf
        return full

    if status is not SolveStatus.optimal:
        if feas_x is None:
            return MipResult(
                status,
                None,
                math.nan,
                -math.inf,
                math.inf,
                runtime,
                message="interior point did not converge",
                n_iter=n_done,
            )
        # not certified, but primal feasible (to tol): usable as an incumbent
        full = expand(feas_x)
        obj = model_objective(model, full)
        return MipResult(
            status,
            full,
            obj,
            -math.inf,
            math.inf,
            runtime,
            message="interior point not certified; last primal-feasible iterate",
            n_iter=n_done,
        )
    full = expand(x)
    obj = model_objective(model, full)
    # the complementarity s.lam bounds the distance to the optimum (up to the dual
    # residual, accepted at <= dual_tol): a conservative lower bound
    lower = obj - float(s @ lam)
    return MipResult(
        SolveStatus.optimal,
        full,
        obj,
        lower,
        0.0,
        runtime,
        message=f"optimal ({'sparse' if use_sparse else 'dense'} Newton system)",
        n_iter=n_done,
    )
