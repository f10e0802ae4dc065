"""(P1) of the feature_selection experiment on one outer fold, with given floors.

Usage: ``PYTHONPATH=. python scripts/fs_single_fold.py DATASET FOLD TPR_FLOOR TNR_FLOOR
TIME_LIMIT`` (``TORCHSVM_DATA`` pointing at the staged data). The floors are those a unit
records under ``result.targets`` (the validation-rate targets); ``big_m`` is the
experiment's. Prints the training shape, then status, cost, proven bound and seconds, then
(P1)'s message.
"""

from __future__ import annotations

import sys
import time
import warnings

from torchsvm.config import MipConfig, load_config
from torchsvm.experiments.feature_selection import BIG_M, fold_rows
from torchsvm.mip.feature_selection import solve_feature_selection


def main() -> None:
    name, fold = sys.argv[1], int(sys.argv[2])
    tpr, tnr, limit = (float(a) for a in sys.argv[3:6])
    cfg = load_config("configs/feature_selection.toml")
    d = fold_rows(cfg, name, fold)
    X, y = d["X_train"], d["y_train"]
    print(X.shape, int((y > 0).sum()), int((y < 0).sum()))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_feature_selection(
            X, y, tpr, tnr, config=MipConfig(time_limit=limit), big_m=BIG_M
        )
    dt = time.perf_counter() - t
    print(res.status.value, res.cost, res.result.bound, round(dt, 1))
    print(res.result.message)


if __name__ == "__main__":
    main()
