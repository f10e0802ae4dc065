"""Compiled kernels of :func:`~torchsvm.mip.csvm_release.release_screen` (SPEC S5).

Each dual point ``p`` of the primal (feature-space) CSVM ``P(R)`` is described by its
multipliers ``aF[p]`` on the ``m`` floor members, the inner products ``gp[p, j] =
L_j . v+`` and ``gn[p, j] = L_j . v-`` of member ``j``'s factor row with the point's
positive and negative sums ``v+ = sum_{y=+1} a_s L_s``, ``v- = sum_{y=-1} a_s L_s``,
the masses ``pos[p] = sum_{y=+1} a_s`` and ``neg[p] = sum_{y=-1} a_s`` (balanced,
``pos = neg``) and the three products ``vpp = |v+|^2``, ``vpn = v+ . v-``, ``vnn =
|v-|^2``. ``G`` is the members' factor Gram matrix ``L_j . L_k``. The floor members
are positive (``y = +1``).

For a release set ``R`` the point's multipliers on ``R`` are zeroed (``R``'s margins
are not in ``P(R)``). That leaves the positive mass ``P' = pos - A_R`` (``A_R =
sum_R a_j``) and ``u = v+ - sum_R a_j L_j``; scaling the positives by ``s`` and the
negatives by ``t = s P' / neg`` (both in ``[0, 1]``, so every cap still holds)
restores ``sum a y = 0``, and the dual objective ``2 sum a - |L^T y a|^2`` becomes
``4 s P' - s^2 Q`` with ``Q = |u - (P'/neg) v-|^2``, maximised at ``s = min(1, 2 P' /
Q)``. By weak duality that is a lower bound on ``P(R)``.
"""

from __future__ import annotations

import numpy as np

from torchsvm.solvers.active_set_kernel import available, njit, warm_once

__all__ = ["available", "screen_all", "screen_list", "warm"]


@njit(cache=True, nogil=True)
def _bound(p, idx, r, aF, gp, gn, G, pos, neg, vpp, vpn, vnn):  # noqa: ANN001, ANN201, PLR0913
    A = 0.0
    lp = 0.0
    ln = 0.0
    quad = 0.0
    for s in range(r):
        j = idx[s]
        aj = aF[p, j]
        if aj == 0.0:
            continue
        A += aj
        lp += aj * gp[p, j]
        ln += aj * gn[p, j]
        quad += aj * aj * G[j, j]
        for t in range(s):
            k = idx[t]
            quad += 2.0 * aj * aF[p, k] * G[j, k]
    P1 = pos[p] - A
    if P1 <= 0.0:
        return 0.0
    rho = P1 / neg[p] if neg[p] > 0.0 else 0.0
    uu = vpp[p] - 2.0 * lp + quad
    un = vpn[p] - ln
    Q = uu - 2.0 * rho * un + rho * rho * vnn[p]
    if Q <= 2.0 * P1:
        return 4.0 * P1 - Q
    return 4.0 * P1 * P1 / Q


@njit(cache=True, nogil=True)
def screen_all(m, r, thr, aF, gp, gn, G, pos, neg, vpp, vpn, vnn, cap, out, outb):  # noqa: ANN001, ANN201, PLR0913
    """Every ``r``-subset of ``range(m)`` in lexicographic order: those whose best
    bound over the points stays below ``thr`` are written to ``out`` (rows of member
    indices) with the bound in ``outb``, up to ``cap`` of them. Returns ``(count,
    lowest bound over all subsets)``; ``count > cap`` means the list is incomplete."""
    npts = aF.shape[0]
    idx = np.arange(r)
    count = 0
    low = np.inf
    if r == 0 or r > m:
        return 0, low
    while True:
        best = -np.inf
        for p in range(npts):
            b = _bound(p, idx, r, aF, gp, gn, G, pos, neg, vpp, vpn, vnn)
            if b > best:
                best = b
                if best >= thr:
                    break
        if best < low:
            low = best
        if best < thr:
            if count < cap:
                for s in range(r):
                    out[count, s] = idx[s]
                outb[count] = best
            count += 1
        # next combination
        s = r - 1
        while s >= 0 and idx[s] == m - r + s:
            s -= 1
        if s < 0:
            break
        idx[s] += 1
        for t in range(s + 1, r):
            idx[t] = idx[t - 1] + 1
    return count, low


@njit(cache=True, nogil=True)
def screen_list(sets, bounds, p0, thr, aF, gp, gn, G, pos, neg, vpp, vpn, vnn):  # noqa: ANN001, ANN201, PLR0913
    """Raise ``bounds`` of the listed subsets by the points from ``p0`` on (in
    place); returns how many stay below ``thr``."""
    npts = aF.shape[0]
    n, r = sets.shape
    left = 0
    for q in range(n):
        idx = sets[q]
        best = bounds[q]
        if best < thr:
            for p in range(p0, npts):
                b = _bound(p, idx, r, aF, gp, gn, G, pos, neg, vpp, vpn, vnn)
                if b > best:
                    best = b
                    if best >= thr:
                        break
            bounds[q] = best
        if best < thr:
            left += 1
    return left


@warm_once
def warm() -> None:
    """Compile the kernels (a tiny call each), once per process."""
    m, r = 4, 2
    aF = np.ones((1, m))
    g = np.zeros((1, m))
    G = np.eye(m)
    one = np.ones(1)
    out = np.zeros((8, r), dtype=np.int64)
    outb = np.zeros(8)
    screen_all(
        m, r, 0.0, aF, g, g, G, one * 4, one * 4, one, one * 0, one, 8, out, outb
    )
    screen_list(
        out[:2],
        outb[:2].copy(),
        0,
        1.0,
        aF,
        g,
        g,
        G,
        one * 4,
        one * 4,
        one,
        one * 0,
        one,
    )
