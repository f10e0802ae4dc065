"""KernelLogisticRegression(CV): the solver routes and inner-CV tuning (SPEC S4, issue 17)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from torchsvm.estimators.kernel_logistic import (
    KernelLogisticRegression,
    KernelLogisticRegressionCV,
    _newton_step,
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


# ----------------------------------------------- linear kernel: the primal route
def _case(name: str) -> tuple[np.ndarray, np.ndarray, float, np.ndarray | None]:
    """Random, duplicated, separable (large C) and weighted data with ``d < n``."""
    rng = np.random.default_rng(7)
    X, y = _data(3, n=120)
    if name == "duplicates":
        return np.vstack([X, X[:40], X[:10]]), np.r_[y, y[:40], y[:10]], 4.0, None
    if name == "separable":
        Xs = rng.standard_normal((100, 3))
        return Xs, (Xs @ [1.0, -2.0, 0.5] > 0).astype(int), 1e4, None
    if name == "weighted":
        w = rng.uniform(0.0, 3.0, size=y.size)
        w[:10] = 0.0
        return X, y, 2.0, w
    return X, y, 1.0, None


def _kernel_form(
    X: np.ndarray, y: np.ndarray, C: float, w: np.ndarray | None, tol: float
) -> tuple[np.ndarray, float, int]:
    """The kernel-form Newton on the linear Gram matrix ``X X'`` (the O(n^3) route)."""
    w = np.ones(y.size) if w is None else w
    est = KernelLogisticRegression(C=C, kernel="linear", tol=tol)
    return est._newton(X @ X.T, 2.0 * y - 1.0, C * w)


@pytest.mark.parametrize("case", ["random", "duplicates", "separable", "weighted"])
def test_linear_primal_route_equals_the_kernel_form_and_sklearn(case: str) -> None:
    X, y, C, w = _case(case)
    tol = 1e-10
    m = KernelLogisticRegression(C=C, kernel="linear", tol=tol).fit(
        X, y, sample_weight=w
    )
    assert m.solver_ == "primal"
    a, b, _ = _kernel_form(X, y, C, w, tol)
    X_new = np.random.default_rng(1).standard_normal((30, X.shape[1]))
    f_kernel = X_new @ (X.T @ a) + b
    # both stop at a gradient (residual) below tol * C: decision values agree to it
    np.testing.assert_allclose(m.decision_function(X_new), f_kernel, atol=1e-9)
    np.testing.assert_allclose(m.dual_coef_, a, atol=1e-9 * max(1.0, C))
    # a = -dJ/df recovers w = X' a (the stationarity condition of the kernel form)
    np.testing.assert_allclose(X.T @ m.dual_coef_, m.coef_, atol=tol * max(1.0, C))
    ref = LogisticRegression(C=C, solver="lbfgs", tol=1e-14, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs may stop on its ftol first
        ref.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        m.predict_proba(X_new), ref.predict_proba(X_new), atol=1e-6
    )


def test_primal_solution_short_of_tol_is_polished_in_kernel_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class TwoIterations(LogisticRegression):
        def fit(self, X, y, sample_weight=None):  # type: ignore[no-untyped-def]
            self.max_iter = 2
            return super().fit(X, y, sample_weight=sample_weight)

    import torchsvm.estimators.kernel_logistic as module

    monkeypatch.setattr(module, "LogisticRegression", TwoIterations)
    X, y, C, w = _case("separable")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = KernelLogisticRegression(C=C, kernel="linear").fit(X, y)
    assert m.solver_ == "primal" and m.n_iter_ > 2
    a, b, _ = _kernel_form(X, y, C, w, 1e-8)
    np.testing.assert_allclose(m.decision_function(X), X @ (X.T @ a) + b, atol=1e-6)
    np.testing.assert_allclose(m.coef_, X.T @ m.dual_coef_)


def test_linear_kernel_with_more_features_than_rows_stays_in_kernel_form() -> None:
    X, y = _data(4, n=30)
    X = np.hstack([X, np.random.default_rng(0).standard_normal((30, 40))])
    m = KernelLogisticRegression(C=2.0, kernel="linear").fit(X, y)
    assert m.solver_ == "kernel"
    np.testing.assert_allclose(m.coef_, X.T @ m.dual_coef_)
    ref = LogisticRegression(C=2.0, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(m.predict_proba(X), ref.predict_proba(X), atol=1e-6)


def test_newton_does_not_stall_when_the_objective_is_flat_to_rounding() -> None:
    # churn's fold 3 (issue 17): with the rank-d linear Gram matrix the last Newton
    # steps lower J by less than J's rounding, the Armijo test on J rejected them at
    # random and Newton ran to max_iter (100 O(n^3) iterations) short of tol; the
    # residual test accepts them and Newton ends in its quadratic phase
    X, y = make_classification(
        200, 4, n_informative=3, n_redundant=0, random_state=1, flip_y=0.1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b, n_iter = _kernel_form(X, y, 32.0, None, 1e-8)
    assert n_iter <= 12
    f = X @ (X.T @ a) + b
    r = -32.0 * (2 * y - 1) * expit(-(2 * y - 1) * f)
    assert max(np.abs(r + a).max(), abs(r.sum())) < 1e-8 * 32.0
    m = KernelLogisticRegression(C=32.0, kernel="linear").fit(X, y)
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-8)


@pytest.mark.parametrize("zeros", [0, 5, 40])
def test_newton_step_solves_the_bordered_system(zeros: int) -> None:
    rng = np.random.default_rng(zeros)
    n = 40
    B = rng.standard_normal((n, 6))
    K = B @ B.T  # rank 6
    d = rng.uniform(0.0, 2.0, n)
    d[:zeros] = 0.0
    a, r = rng.standard_normal(n), rng.standard_normal(n)
    res = r + a
    da, db = _newton_step(K, d, res, r, a)
    lhs = np.block([[d[:, None] * K + np.eye(n), d[:, None]], [np.ones((1, n)), 0.0]])
    # every d_i = 0 leaves db free: the least-squares solution
    ref = np.linalg.lstsq(lhs, np.r_[-res, -a.sum()], rcond=None)[0]
    np.testing.assert_allclose(np.r_[da, db], ref, rtol=1e-9, atol=1e-9)


def test_linear_cv_scores_equal_sklearn_logistic_regression() -> None:
    X, y = _data(5, n=90)
    w = np.random.default_rng(5).uniform(0.2, 2.0, size=y.size)
    grid = [0.03, 1.0, 30.0]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    m = KernelLogisticRegressionCV(kernel="linear", C_grid=grid, cv=cv)
    m.fit(X, y, sample_weight=w)
    ref = GridSearchCV(
        LogisticRegression(tol=1e-14, max_iter=100_000),
        {"C": grid},
        scoring="neg_log_loss",
        cv=cv,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        m.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-7
    )
    assert m.C_ == ref.best_params_["C"]
    assert m.best_estimator_.solver_ == "primal"
    np.testing.assert_allclose(
        m.predict_proba(X), ref.best_estimator_.predict_proba(X), atol=1e-6
    )


def test_cv_fits_all_rows_once(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _data(6, n=45)
    sizes: list[int] = []
    fit = KernelLogisticRegression._fit_rows

    def spy(self, X, y, sample_weight, **kw):  # type: ignore[no-untyped-def]
        sizes.append(len(X))
        return fit(self, X, y, sample_weight, **kw)

    monkeypatch.setattr(KernelLogisticRegression, "_fit_rows", spy)
    KernelLogisticRegressionCV(C_grid=[0.1, 1.0], gamma_grid=[0.3], cv=3).fit(X, y)
    assert sizes.count(45) == 1 and len(sizes) == 2 * 3 + 1


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_warm_started_search_scores_equal_independent_fits(
    kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the search fits each inner fold's C grid in increasing order, each Newton started
    # from the previous C's solution; GridSearchCV fits every pair from scratch
    X, y = _data(8, n=50)
    if kernel == "linear":  # d >= n: the kernel form, where the warm start applies
        X = np.hstack([X, np.random.default_rng(8).standard_normal((50, 60))])
    w = np.random.default_rng(9).uniform(0.3, 2.0, size=y.size)
    C_grid, gamma_grid = [100.0, 0.01, 1.0], [0.05, 0.4]
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    starts: list[bool] = []
    newton = KernelLogisticRegression._newton

    def spy(self, K, ypm, cw, a0=None, b0=None):  # type: ignore[no-untyped-def]
        starts.append(a0 is not None)
        return newton(self, K, ypm, cw, a0=a0, b0=b0)

    monkeypatch.setattr(KernelLogisticRegression, "_newton", spy)
    m = KernelLogisticRegressionCV(
        C_grid=C_grid, gamma_grid=gamma_grid, kernel=kernel, cv=cv, tol=1e-11
    ).fit(X, y, sample_weight=w)
    n_paths = 3 * (2 if kernel == "rbf" else 1)
    # per path: the first C from the default start, the other two warm
    assert starts[:-1].count(True) == 2 * n_paths and len(starts) == 3 * n_paths + 1
    monkeypatch.setattr(KernelLogisticRegression, "_newton", newton)
    grid = {"C": C_grid, **({"gamma": gamma_grid} if kernel == "rbf" else {})}
    ref = GridSearchCV(
        KernelLogisticRegression(kernel=kernel, tol=1e-11),
        grid,
        scoring="neg_log_loss",
        cv=cv,
        refit=False,
    ).fit(X, y, sample_weight=w)
    # both stop at residual < tol * max(1, C): the scores agree to about that
    for key in ("mean_test_score", "split0_test_score", "split2_test_score"):
        np.testing.assert_allclose(m.cv_results_[key], ref.cv_results_[key], atol=1e-9)
    np.testing.assert_array_equal(
        m.cv_results_["rank_test_score"], ref.cv_results_["rank_test_score"]
    )
    assert m.cv_results_["params"] == ref.cv_results_["params"]
    assert m.C_ == ref.best_params_["C"]
