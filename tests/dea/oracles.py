"""Independent oracles for the DEA tests: scipy linprog per DMU and brute force."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

import numpy as np
from scipy.optimize import linprog


def linprog_efficiency(X, Y, k, lower=None, upper=None):
    """E(k) of SPEC S7 by scipy.optimize.linprog (multiplier form)."""
    K, N = X.shape
    M = Y.shape[1]
    c = np.concatenate([np.zeros(N), -Y[k]])
    A = np.hstack([-X, Y])
    bounds = [(0, None)] * N
    lo = np.zeros(M) if lower is None else lower
    hi = [None] * M if upper is None else upper
    bounds += [(lo[o], hi[o]) for o in range(M)]
    res = linprog(
        c,
        A_ub=A,
        b_ub=np.zeros(K),
        A_eq=np.concatenate([X[k], np.zeros(M)])[None],
        b_eq=[1.0],
        bounds=bounds,
        method="highs",
    )
    assert res.status == 0, res.message
    return -res.fun


def all_efficiencies(X, Y, **kw):
    return np.array([linprog_efficiency(X, Y, k, **kw) for k in range(X.shape[0])])


def aggregate(eff, objective, weights=None, percentile=None):
    if objective == "mean":
        return eff.mean()
    if objective == "weighted":
        return weights @ eff / weights.sum()
    if objective == "min":
        return eff.min()
    if objective == "percentile":
        r = int(np.floor(len(eff) * percentile / 100 + 1e-9))
        return np.sort(eff)[::-1][r - 1]
    return ((1 - eff) ** 2).sum()


def brute_force(
    X,
    Y,
    p,
    objective="mean",
    dmu=None,
    subsets: Iterable[tuple[int, ...]] | None = None,
    value: Callable | None = None,
    **kw,
):
    """Best objective over all output subsets of size p (min for 'quadratic')."""
    M = Y.shape[1]
    subsets = itertools.combinations(range(M), p) if subsets is None else subsets
    best = None
    for S in subsets:
        S = list(S)
        if value is not None:
            v = value(S)
        elif dmu is not None:
            v = linprog_efficiency(X, Y[:, S], dmu)
        else:
            v = aggregate(all_efficiencies(X, Y[:, S]), objective, **kw)
        sign = -1 if objective == "quadratic" else 1
        if best is None or sign * v > sign * best:
            best = v
    return best
