"""Issue-18 rerun defects of the feature selector (SPEC S6): whole-call time limit and
a failed (P2) QP.

Oracles: HiGHS's own (P2) QP (the SVM-dual fallback must agree with it), the (P1)
floors on the training rows, and the wall clock.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

import torchsvm.mip.feature_selection as fsmod
from torchsvm.estimators.selection import CostSensitiveFeatureSelector
from torchsvm.exceptions import ConvergenceWarning, SolverError
from torchsvm.mip.feature_selection import solve_sparse_linear_svm


def _hard(n: int = 400, d: int = 30, seed: int = 0):
    X, y = make_classification(
        n,
        d,
        n_informative=min(8, d - 1),
        n_redundant=min(6, max(0, d - 9)),
        flip_y=0.05,
        random_state=seed,
    )
    return X, np.where(y == 1, 1.0, -1.0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_time_limit_bounds_the_whole_selector_fit(kernel: str) -> None:
    X, y = _hard()
    limit = 8.0
    fs = CostSensitiveFeatureSelector(
        min_tpr=0.8,
        min_tnr=0.8,
        hoeffding_alpha=None,
        kernel=kernel,
        time_limit=limit,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fs.fit(X, y)
    elapsed = time.perf_counter() - t0
    assert elapsed <= limit + 1.5, elapsed
    assert sum(fs.solve_time_.values()) <= limit + 1.5
    assert np.isfinite(fs.mip_gap_)


def _p2_inputs():
    X, y = _hard(n=120, d=6, seed=1)
    support = np.zeros(6, dtype=bool)
    support[[0, 1, 2, 3, 4, 5]] = True
    # rows the SVM already gets right with margin can be held at margin 1
    f = X @ np.linalg.lstsq(X, y, rcond=None)[0]
    z = y * f > 1.2
    return X, y, support, z


def test_p2_falls_back_to_the_svm_dual_when_the_qp_fails(monkeypatch) -> None:
    X, y, support, z = _p2_inputs()
    w_ref, b_ref, res_ref = solve_sparse_linear_svm(X, y, support, z, C=1.0)

    def broken(*args, **kwargs):
        raise SolverError("HiGHS failed with model status Not Set")

    monkeypatch.setattr(fsmod, "solve_model", broken)
    w, b, res = solve_sparse_linear_svm(X, y, support, z, C=1.0)
    assert res.objective == pytest.approx(res_ref.objective, rel=1e-5)
    np.testing.assert_allclose(w, w_ref, atol=1e-3 * (1 + np.abs(w_ref).max()))
    assert b == pytest.approx(b_ref, abs=1e-3 * (1 + abs(b_ref)))


def test_selector_keeps_p1_classifier_when_p2_cannot_be_solved(monkeypatch) -> None:
    X, y = _hard(n=120, d=5, seed=2)
    fs_ok = CostSensitiveFeatureSelector(min_tpr=0.7, min_tnr=0.7, time_limit=20)
    fs_ok.fit(X, y)

    def broken(*args, **kwargs):
        raise SolverError("(P2) on 2 features could not be solved: Not Set")

    monkeypatch.setattr("torchsvm.estimators.selection.solve_sparse_linear_svm", broken)
    fs = CostSensitiveFeatureSelector(min_tpr=0.7, min_tnr=0.7, time_limit=20)
    with pytest.warns(ConvergenceWarning, match=r"\(P2\) not solved"):
        fs.fit(X, y)
    assert np.array_equal(fs.get_support(), fs_ok.get_support())
    pred = fs.predict(X)
    pos = y == fs.classes_[1]
    # (P1)'s own classifier meets both training floors
    assert np.mean(pred[pos] == fs.classes_[1]) >= 0.7
    assert np.mean(pred[~pos] != fs.classes_[1]) >= 0.7


def test_p2_stopped_without_a_point_is_a_solver_error_not_infeasible(
    monkeypatch,
) -> None:
    from torchsvm.mip.model import MipResult
    from torchsvm.types import SolveStatus

    X, y, support, z = _p2_inputs()

    def stopped(*args, **kwargs):
        return MipResult(
            SolveStatus.time_limit, None, np.nan, -np.inf, np.inf, 0.0, message="t"
        )

    monkeypatch.setattr(fsmod, "solve_model", stopped)
    with pytest.raises(SolverError, match="stopped without a solution"):
        solve_sparse_linear_svm(X, y, support, z, C=1.0)
