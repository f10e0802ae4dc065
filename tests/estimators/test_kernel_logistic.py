"""KernelLogisticRegressionCV: inner-CV tuning of C and gamma (SPEC S4, issue 17)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from torchsvm.estimators.kernel_logistic import (
    KernelLogisticRegression,
    KernelLogisticRegressionCV,
)
from torchsvm.kernels import resolve_gamma


def _data(seed: int = 0, n: int = 60):
    return make_classification(n, 4, n_informative=3, n_redundant=0, random_state=seed)


def test_cv_picks_the_grid_search_optimum_and_refits_on_all_rows() -> None:
    X, y = _data()
    cv = StratifiedKFold(3)
    m = KernelLogisticRegressionCV(
        C_grid=[0.01, 1.0, 100.0], gamma_grid=[0.02, 0.5], cv=cv
    )
    m.fit(X, y)
    ref = GridSearchCV(
        KernelLogisticRegression(),
        {"C": [0.01, 1.0, 100.0], "gamma": [0.02, 0.5]},
        scoring="neg_log_loss",
        cv=cv,
    ).fit(X, y)
    assert (m.C_, m.gamma_) == (ref.best_params_["C"], ref.best_params_["gamma"])
    refit = KernelLogisticRegression(C=m.C_, gamma=m.gamma_).fit(X, y)
    np.testing.assert_allclose(m.predict_proba(X), refit.predict_proba(X), atol=1e-12)
    p = m.predict_proba(X)
    assert p.shape == (60, 2) and np.allclose(p.sum(1), 1.0)


def test_default_gamma_grid_is_relative_to_scale() -> None:
    X, y = _data(1)
    m = KernelLogisticRegressionCV(C_grid=[1.0], cv=3).fit(X, y)
    g = resolve_gamma("scale", X)
    assert m.cv_results_["param_gamma"].tolist() == pytest.approx([g / 4, g, 4 * g])
    lin = KernelLogisticRegressionCV(kernel="linear", C_grid=[0.1, 1.0], cv=3).fit(X, y)
    assert np.isnan(lin.gamma_) and lin.C_ in (0.1, 1.0)


def test_cv_bad_input() -> None:
    X, y = _data(2, n=20)
    with pytest.raises(ValueError, match="C_grid"):
        KernelLogisticRegressionCV(C_grid=[-1.0]).fit(X, y)
    with pytest.raises(ValueError, match="rows of each class"):
        KernelLogisticRegressionCV(cv=5).fit(X, np.r_[np.ones(17), np.zeros(3)])
