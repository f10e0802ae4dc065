"""Compare two solution files of ``scripts/bench_solver.py --save`` (same batch, two commits).

Prints, over every problem: the status counts, the largest relative duality gap of
each, the largest difference of ``w`` relative to ``max(1, |w|)`` (linear kernel: ``w``
is unique at the optimum, so two certified solutions agree to the tolerance), the
largest difference of ``b``, and the largest relative difference of the dual objectives.

``python scripts/compare_solutions.py before.npz after.npz``
"""

from __future__ import annotations

import sys

import numpy as np


def main(argv: list[str]) -> int:
    a, b = (np.load(p) for p in argv[1:3])
    if not (
        np.array_equal(a["c_idx"], b["c_idx"])
        and np.array_equal(a["rep_idx"], b["rep_idx"])
    ):
        raise SystemExit("the two files hold different batches")
    P = a["b"].shape[0]
    for name, s in (("first", a), ("second", b)):
        vals, cnt = np.unique(s["status"], return_counts=True)
        print(
            f"{name}: {P} problems, status counts {dict(zip(vals.tolist(), cnt.tolist()))}, "
            f"max rel gap {s['gap'].max():.2e}"
        )
    if "w" in a and "w" in b:
        wa, wb = a["w"], b["w"]
        scale = np.maximum(1.0, np.abs(wa).max(1))
        dw = np.abs(wa - wb).max(1) / scale
        print(
            f"max |w1 - w2| / max(1, |w1|): {dw.max():.2e} (median {np.median(dw):.2e}, "
            f"problem {int(dw.argmax())}, C index {int(a['c_idx'][dw.argmax()])})"
        )
        # the primal is 1-strongly convex in w: 1/2 |w - w*|^2 <= P(w, b) - P*, which is
        # at most the absolute gap g = rel gap * max(1, |P|) (|P| ~ |D| to the gap), so
        # two certified solutions are within sqrt(2 g1) + sqrt(2 g2) of each other
        g1, g2 = (s["gap"] * np.maximum(1.0, np.abs(s["dual"])) for s in (a, b))
        # (plus rounding: 1e-10 of |w|, where both gaps are at rounding level)
        wn = np.maximum(1.0, np.linalg.norm(wa, axis=1))
        bound = np.sqrt(2.0 * g1) + np.sqrt(2.0 * g2) + 1e-10 * wn
        dn = np.linalg.norm(wa - wb, axis=1)
        ratio = dn / bound
        print(
            f"max |w1 - w2| / (sqrt(2 g1) + sqrt(2 g2) + 1e-10 |w1|): {ratio.max():.2e} "
            "(at most 1 where both are certified)"
        )
    db = np.abs(a["b"] - b["b"])
    dd = np.abs(a["dual"] - b["dual"]) / np.maximum(1.0, np.abs(a["dual"]))
    print(f"max |b1 - b2|: {db.max():.2e} (median {np.median(db):.2e})")
    print(f"max relative difference of the dual objectives: {dd.max():.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
