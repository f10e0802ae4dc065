"""Warm starts take solutions: S1 from the batched solver, checked against libsvm."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
from sklearn.svm import SVC

import torchsvm.mip.warm_start as ws
from torchsvm.mip.csvm import fit_s1
from torchsvm.problems.csvm import CsvmProblem


def test_warm_start_imports_no_estimator() -> None:
    tree = ast.parse(pathlib.Path(ws.__file__).read_text())
    mods = {
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    mods |= {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not any(m.startswith(("torchsvm.estimators", "sklearn")) for m in mods)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_fit_s1_matches_libsvm(kernel: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=60) > 0, 1.0, -1.0)
    anchor = np.arange(60) >= 40
    p = CsvmProblem.from_data(
        X, y, anchor, C=4.0, kernel=kernel, gamma=0.5, min_tpr=0.8, hoeffding_alpha=None
    )
    s1 = fit_s1(p)
    u = ws.s1_bounds(p)
    keep = u > 0
    ref = SVC(C=float(u.max()), kernel=kernel, gamma=0.5, tol=1e-10)
    ref.fit(X[keep], y[keep], sample_weight=u[keep] / u.max())
    rows = np.arange(60)
    g = ws.scores_without_intercept(p, s1, rows) + s1.intercept
    np.testing.assert_allclose(g, ref.decision_function(X), atol=1e-4)
