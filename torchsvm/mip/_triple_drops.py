"""Compiled kernels of :func:`~torchsvm.mip.subset_search.screen_triples` where rows
may be dropped (SPEC S6, (P1)).

A (P1) point keeps every row with ``z_i = 1`` at margin 1, so for every kept positive
``h`` and kept negative ``o`` the difference ``D = h - o`` has ``w . D >= 2``. A
*witness* of a region of directions ``u`` (an octant, or a cone inside one) is a pair
``(o, h)`` whose difference has ``u . D < 2`` for every ``u`` of the region with
``|u_k| <= M``: one of its two rows must be dropped. The rows dropped must therefore
cover every witness edge (a vertex cover of the bipartite witness graph) within the
floors' budgets: the dropped positives may weigh at most ``lim_h``, the dropped
negatives at most ``lim_o``. A region whose witnesses admit no such cover holds no
(P1) direction.

Coverability is decided exactly by branching on edges: any cover contains an endpoint
of the first uncovered edge, so following "drop ``o``" / "drop ``h``" at each of at most
``maxd`` steps (the most rows the budgets can drop) visits every minimal choice. A
branch code's bit ``maxd - 1 - step`` picks the endpoint, so the codes that share a
failed prefix form one block and are skipped together. The scan over the edges is lazy:
the witness words are computed only up to the first uncovered edge, which keeps the
test cheap on regions with many witnesses (the common case).

Bit layout: ``V[r, c, o, w]`` (uint64) holds bit ``h % 64`` of word ``h // 64`` when
``D[h, o, c]`` violates sign ``r`` of ``u_c`` (``r = 0``: ``u_c >= 0`` and
``D <= 0``; ``r = 1``: ``u_c <= 0`` and ``D >= 0``).

numba is optional: without it these functions run as plain Python (only small
instances are then screened; the caller decides).
"""

from __future__ import annotations

import numpy as np

from torchsvm.solvers.active_set_kernel import available, njit, warm_once

__all__ = ["available", "coverable_words", "cover_cones", "open_octants_k", "warm"]

_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@njit(cache=True, nogil=True)
def coverable_words(Q, R, vO, vH, lim_o, lim_h, maxd, dropO, dropH):  # noqa: ANN001, ANN201, PLR0913
    """Whether the witness edges ``Q[o] & R[o]`` (bits over positives) have a cover
    within the budgets (module docstring). ``dropO`` (bool, ``nO``) and ``dropH``
    (uint64, ``nwp``) are scratch arrays."""
    nO, nwp = Q.shape
    vHmin = vH.min()
    npaths = 1 << maxd
    code = 0
    while code < npaths:
        for o in range(nO):
            dropO[o] = False
        for w in range(nwp):
            dropH[w] = _ZERO
        bo = lim_o
        bh = lim_h
        o = 0
        step = 0
        failed = maxd
        while True:
            if step < maxd and (code >> (maxd - 1 - step)) & 1 == 1 and bh < vHmin:
                # no positive fits: the path with "drop o" here (visited before
                # this one, same prefix) scanned this step and found what it found
                failed = step
                break
            found = False
            ww = 0
            xx = _ZERO
            while o < nO:
                if not dropO[o]:
                    for w in range(nwp):
                        x = Q[o, w] & R[o, w] & ~dropH[w]
                        if x != _ZERO:
                            found = True
                            ww = w
                            xx = x
                            break
                    if found:
                        break
                o += 1
            if not found:
                return True
            if step >= maxd:
                break
            if (code >> (maxd - 1 - step)) & 1 == 0:
                if vO[o] <= bo:
                    bo -= vO[o]
                    dropO[o] = True
                    o += 1
                else:
                    failed = step
                    break
            else:
                b = 0
                while (xx >> np.uint64(b)) & _ONE == _ZERO:
                    b += 1
                h = ww * 64 + b
                if vH[h] <= bh:
                    bh -= vH[h]
                    dropH[ww] |= _ONE << np.uint64(b)
                else:
                    failed = step
                    break
            step += 1
        if failed >= maxd:
            code += 1
        else:
            span = 1 << (maxd - 1 - failed)
            code = (code // span + 1) * span
    return False


@njit(cache=True, nogil=True)
def open_octants_k(V, k, vO, vH, lim_o, lim_h, maxd, out, n_out):  # noqa: ANN001, ANN201, PLR0913
    """Octants ``(k, l, m, octant)`` (``k < l < m``, octant bits: sign of ``u_k``,
    ``u_l``, ``u_m``, 1 for ``<= 0``) whose octant witnesses admit a cover, written to
    ``out`` from row ``n_out``; returns the new row count, or -1 when ``out`` is full."""
    d = V.shape[1]
    nO = V.shape[2]
    nwp = V.shape[3]
    Q = np.empty((nO, nwp), dtype=np.uint64)
    dropO = np.zeros(nO, dtype=np.bool_)
    dropH = np.zeros(nwp, dtype=np.uint64)
    cnt = n_out
    no_pos = vH.min() > lim_h
    for l in range(k + 1, d - 1):
        for s in range(2):
            for t in range(2):
                for o in range(nO):
                    for w in range(nwp):
                        Q[o, w] = V[s, k, o, w] & V[t, l, o, w]
                for m in range(l + 1, d):
                    for r in range(2):
                        if no_pos:
                            # no positive may drop: the only cover drops every
                            # negative with a witness
                            acc = 0.0
                            for o in range(nO):
                                for w in range(nwp):
                                    if Q[o, w] & V[r, m, o, w] != _ZERO:
                                        acc += vO[o]
                                        break
                                if acc > lim_o:
                                    break
                            cov = acc <= lim_o
                        else:
                            cov = coverable_words(
                                Q, V[r, m], vO, vH, lim_o, lim_h, maxd, dropO, dropH
                            )
                        if cov:
                            if cnt >= out.shape[0]:
                                return -1
                            out[cnt, 0] = k
                            out[cnt, 1] = l
                            out[cnt, 2] = m
                            out[cnt, 3] = s | (t << 1) | (r << 2)
                            cnt += 1
    return cnt


@njit(cache=True, nogil=True)
def _cone_coverable(D, cols, sg, rays, tau, vO, vH, lim_o, lim_h, maxd, dropO, dropH):  # noqa: ANN001, ANN201, PLR0913
    """Whether the witnesses of the cone ``rays`` (3 x 3, rows are rays in the
    flipped orthant ``u >= 0``) admit a cover: edges ``(o, h)`` with
    ``r . D_sg <= tau ||r||_1`` on all three rays (``D_sg = sg * D[o, h, cols]``)."""
    nO = D.shape[0]
    nP = D.shape[1]
    vHmin = vH.min()
    thr = np.empty(3)
    for i in range(3):
        thr[i] = tau * (rays[i, 0] + rays[i, 1] + rays[i, 2])
    npaths = 1 << maxd
    code = 0
    while code < npaths:
        for o in range(nO):
            dropO[o] = False
        for h in range(nP):
            dropH[h] = False
        bo = lim_o
        bh = lim_h
        o = 0
        step = 0
        failed = maxd
        while True:
            if step < maxd and (code >> (maxd - 1 - step)) & 1 == 1 and bh < vHmin:
                failed = step  # as in coverable_words
                break
            found = False
            hh = 0
            while o < nO:
                if not dropO[o]:
                    for h in range(nP):
                        if dropH[h]:
                            continue
                        a = sg[0] * D[o, h, cols[0]]
                        b = sg[1] * D[o, h, cols[1]]
                        c = sg[2] * D[o, h, cols[2]]
                        wit = True
                        for i in range(3):
                            if (
                                rays[i, 0] * a + rays[i, 1] * b + rays[i, 2] * c
                                > thr[i]
                            ):
                                wit = False
                                break
                        if wit:
                            found = True
                            hh = h
                            break
                    if found:
                        break
                o += 1
            if not found:
                return True
            if step >= maxd:
                break
            if (code >> (maxd - 1 - step)) & 1 == 0:
                if vO[o] <= bo:
                    bo -= vO[o]
                    dropO[o] = True
                    o += 1
                else:
                    failed = step
                    break
            else:
                if vH[hh] <= bh:
                    bh -= vH[hh]
                    dropH[hh] = True
                else:
                    failed = step
                    break
            step += 1
        if failed >= maxd:
            code += 1
        else:
            span = 1 << (maxd - 1 - failed)
            code = (code // span + 1) * span
    return False


@njit(cache=True, nogil=True)
def cover_cones(D, inst, tau, depth, vO, vH, lim_o, lim_h, maxd, alive):  # noqa: ANN001, ANN201, PLR0913
    """For each open octant ``inst[i] = (k, l, m, octant)``: ``alive[i] = False`` when
    every cone of its split (at the edges' midpoints, ``depth`` levels) has witnesses
    that admit no cover; a cone whose witnesses admit a cover is split further, and
    one still coverable at ``depth`` leaves the octant alive. ``D`` is
    ``(nO, nP, d)``: ``D[o, h] = h - o``."""
    nO = D.shape[0]
    nP = D.shape[1]
    dropO = np.zeros(nO, dtype=np.bool_)
    dropH = np.zeros(nP, dtype=np.bool_)
    cols = np.empty(3, dtype=np.int64)
    sg = np.empty(3)
    cap = 3 * depth + 2
    stack = np.empty((cap, 3, 3))
    lev = np.empty(cap, dtype=np.int64)
    for i in range(inst.shape[0]):
        for c in range(3):
            cols[c] = inst[i, c]
            sg[c] = -1.0 if (inst[i, 3] >> c) & 1 else 1.0
        top = 0
        for a in range(3):
            for c in range(3):
                stack[0, a, c] = 1.0 if a == c else 0.0
        lev[0] = 0
        top = 1
        ok = True  # every cone refuted so far
        while top > 0:
            top -= 1
            R = stack[top].copy()
            lv = lev[top]
            if not _cone_coverable(
                D, cols, sg, R, tau, vO, vH, lim_o, lim_h, maxd, dropO, dropH
            ):
                continue
            if lv == depth:
                ok = False
                break
            ab = 0.5 * (R[0] + R[1])
            bc = 0.5 * (R[1] + R[2])
            ac = 0.5 * (R[0] + R[2])
            for S in range(4):
                for c in range(3):
                    if S == 0:
                        stack[top, 0, c] = R[0, c]
                        stack[top, 1, c] = ab[c]
                        stack[top, 2, c] = ac[c]
                    elif S == 1:
                        stack[top, 0, c] = R[1, c]
                        stack[top, 1, c] = ab[c]
                        stack[top, 2, c] = bc[c]
                    elif S == 2:
                        stack[top, 0, c] = R[2, c]
                        stack[top, 1, c] = ac[c]
                        stack[top, 2, c] = bc[c]
                    else:
                        stack[top, 0, c] = ab[c]
                        stack[top, 1, c] = bc[c]
                        stack[top, 2, c] = ac[c]
                lev[top] = lv + 1
                top += 1
        alive[i] = not ok
    return alive


@warm_once
def warm() -> None:
    """Compile every kernel of this module (or load it from numba's cache) once per
    process, on a tiny instance with the argument types the caller uses.

    :func:`~torchsvm.mip.subset_search.screen_triples` forecasts its octant pass's
    total time from its first 2 % and gives up when the forecast passes the deadline.
    A first call that compiled inside that 2 % read the compilation (tens of seconds
    at low priority on a loaded machine) as pace: gastrointestinal's fold 53 gave up
    and stopped at its 270 s limit with 4 genes on a fresh checkout, and proved 3 genes
    in 8-19 s once the cache was warm. Compiling here, before the clock starts, keeps
    the forecast a forecast of the work.
    """
    n_o, n_p, d = 2, 2, 3
    V = np.zeros((2, d, n_o, 1), dtype=np.uint64)
    args = (np.ones(n_o), np.ones(n_p), 1.0, 0.0, 1)
    coverable_words(
        V[0, 0], V[1, 1], *args, np.zeros(n_o, np.bool_), np.zeros(1, np.uint64)
    )
    out = np.zeros((16, 4), dtype=np.int64)
    cnt = open_octants_k(V, 0, *args, out, 0)
    D = np.ascontiguousarray(np.ones((n_o, n_p, d)))
    cover_cones(D, out[: max(1, cnt)], 0.1, 1, *args, np.zeros(max(1, cnt), np.bool_))
