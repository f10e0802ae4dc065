"""Split a py-spy profile's samples by the frames on their stacks (issue 18).

``python scripts/pyspy_split.py PROFILE FRAME[=LABEL] ...`` reads a profile written by
``py-spy record -f raw`` (one line per stack: frames joined by ``;``, then a sample
count) and prints, for each ``FRAME`` in the order given, the samples whose stack holds
a frame of that name (``function`` or ``Class.method``, without file and line) and not
one of the frames named before it, with their share of all samples; the rest is
``other``. E.g. the S5c path of Ctrl2::

    python scripts/pyspy_split.py hous0.prof \\
        "anchor_tightening.<locals>.tighten=bound LPs" \\
        "OuterApproximation._run_master=master MILPs" \\
        "OuterApproximation.qp=QPs" "csvm_start=start" "_batched_s1_fits=S1 batch"

Order matters: a frame nested in another one named earlier counts for the earlier.
"""

from __future__ import annotations

import sys
from collections import Counter


def split(path: str, frames: list[tuple[str, str]]) -> tuple[Counter, int]:
    out: Counter = Counter()
    total = 0
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            stack, count = line.rsplit(" ", 1)
            n = int(count)
            total += n
            names = {fr.split(" (")[0] for fr in stack.split(";")}
            label = "other"
            for frame, lab in frames:
                if frame in names:
                    label = lab
                    break
            out[label] += n
    return out, total


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    pairs = []
    for arg in sys.argv[2:]:
        frame, _, label = arg.partition("=")
        pairs.append((frame, label or frame))
    counts, total = split(sys.argv[1], pairs)
    print(f"samples {total}")
    for label in [lab for _, lab in pairs] + ["other"]:
        n = counts.get(label, 0)
        print(f"{label:30s} {n:7d} {n / max(total, 1):6.3f}")
