"""Estimator contract regressions (issue 13): not-fitted errors, convergence warnings,
specific class_weight errors, numpy-only pickles and the skops save/load."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
from torchsvm.estimators.calibration import CalibratedSVC, PlattCalibrator
from torchsvm.estimators.implied import ImpliedPosteriorSVC
from torchsvm.estimators.kernel_logistic import (
    KernelLogisticRegression,
    KernelLogisticRegressionCV,
)
from torchsvm.estimators.persistence import UntrustedModelError, load_model, save_model
from torchsvm.estimators.selection import (
    CardinalityConstrainedSVC,
    CostSensitiveFeatureSelector,
)
from torchsvm.estimators.sensitivity import SensitivitySweepSVC
from torchsvm.estimators.svc import BatchedSVC, WeightedSVC
from torchsvm.exceptions import DataError


@pytest.fixture(scope="module")
def data():
    return make_classification(60, 4, n_informative=3, n_redundant=0, random_state=0)


UNFITTED = [
    WeightedSVC(),
    BatchedSVC(),
    BootstrapProbabilitySVC(),
    ImpliedPosteriorSVC(),
    SensitivitySweepSVC(),
    CalibratedSVC(),
    KernelLogisticRegression(),
    KernelLogisticRegressionCV(),
    CostSensitiveFeatureSelector(),
    CardinalityConstrainedSVC(),
]


@pytest.mark.parametrize("est", UNFITTED, ids=lambda e: type(e).__name__)
def test_predict_before_fit_raises_not_fitted(est, data) -> None:
    X, _ = data
    method = "transform" if isinstance(est, CostSensitiveFeatureSelector) else "predict"
    with pytest.raises(NotFittedError):
        getattr(clone(est), method)(X)
    if hasattr(est, "decision_function"):
        with pytest.raises(NotFittedError):
            clone(est).decision_function(X)


@pytest.mark.parametrize(
    "fit",
    [
        lambda X, y: WeightedSVC(kernel="rbf", max_iter=1, tol=1e-14).fit(X, y),
        lambda X, y: BatchedSVC(kernel="rbf", max_iter=1, tol=1e-14).fit(
            X, y, C=[1.0, 9.0]
        ),
        lambda X, y: SensitivitySweepSVC(C_pos_grid=[1.0], max_iter=1, tol=1e-14).fit(
            X, y
        ),
        lambda X, y: BootstrapProbabilitySVC(
            C_grid=[1.0],
            n_bootstrap=3,
            kernel="rbf",
            max_iter=1,
            tol=1e-14,
            random_state=0,
        ).fit(X, y),
    ],
    ids=["WeightedSVC", "BatchedSVC", "SensitivitySweepSVC", "BootstrapProbabilitySVC"],
)
def test_fit_stopped_by_max_iter_warns(fit, monkeypatch) -> None:
    # max_iter caps the first-order (ADMM) iterations, which take the rows the direct
    # active-set methods leave uncertified. Since the monotone finish of the dense
    # active set (pdas_monotone) certifies these 400-row RBF problems even at
    # tol=1e-14, it is made to fail here, so that the rows reach ADMM as they do
    # where the direct methods do not finish
    import torchsvm.solvers.box_qp as box_qp

    finish = box_qp.pdas_monotone

    def failing_finish(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        a, qa, b, it, ok = finish(*args, **kwargs)
        return a, qa, b, it, torch.zeros_like(ok)

    monkeypatch.setattr(box_qp, "pdas_monotone", failing_finish)
    X, y = make_classification(400, 4, n_informative=3, n_redundant=0, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        fit(X, y)


@pytest.mark.parametrize(
    ("class_weight", "match"),
    [
        (np.ones(3), r"shape \(2,\) or \(P, 2\)"),
        (np.ones((3, 2)), r"shape \(2,\) or \(P, 2\) = \(2, 2\)"),
        ([1.0, -1.0], "finite and > 0"),
        ([1.0, np.nan], "finite and > 0"),
        ({7: 1.0}, "not in classes"),
        (3.0, "class_weight must be"),
    ],
)
def test_batched_class_weight_errors_are_specific(class_weight, match, data) -> None:
    X, y = data
    with pytest.raises(ValueError, match=match):
        BatchedSVC(kernel="linear").fit(X, y, C=[1.0, 2.0], class_weight=class_weight)


def test_batched_balanced_with_a_zeroed_class_names_the_problem(data) -> None:
    X, y = data
    W = np.ones((2, 60))
    W[1, y == 1] = 0.0
    with pytest.raises(DataError, match="problem 1: every sample of class"):
        BatchedSVC(kernel="linear").fit(
            X, y, C=[1.0, 1.0], sample_weight=W, class_weight="balanced"
        )


def test_bootstrap_accepts_a_generator(data) -> None:
    X, y = data
    kw = dict(C_grid=[1.0], n_bootstrap=5)
    a = BootstrapProbabilitySVC(random_state=np.random.default_rng(0), **kw).fit(X, y)
    b = BootstrapProbabilitySVC(random_state=np.random.default_rng(0), **kw).fit(X, y)
    np.testing.assert_array_equal(a.counts_, b.counts_)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X))


def _fitted(data):
    X, y = data
    return [
        WeightedSVC().fit(X, y),
        BatchedSVC().fit(X, y, C=[0.5, 2.0]),
        SensitivitySweepSVC(C_pos_grid=[0.5, 2.0]).fit(X, y),
        BootstrapProbabilitySVC(
            C_grid=[1.0], n_bootstrap=5, kernel="rbf", random_state=0
        ).fit(X, y),
        ImpliedPosteriorSVC(n_models=5).fit(X, y),
        CalibratedSVC(WeightedSVC(kernel="linear"), cv=3, method="beta").fit(X, y),
        KernelLogisticRegressionCV(C_grid=[1.0], gamma_grid=[0.1], cv=3).fit(X, y),
    ]


def _outputs(est, X):
    if not hasattr(est, "predict_proba"):
        return est.decision_function(X)
    return est.predict_proba(X)


def test_pickles_hold_numpy_not_torch(data) -> None:
    X, _ = data
    for est in _fitted(data):
        blob = pickle.dumps(est)
        # a torch tensor pickles through torch._utils._rebuild_tensor: CUDA-bound
        assert b"_rebuild_tensor" not in blob and b"torch.storage" not in blob, type(
            est
        ).__name__
        np.testing.assert_allclose(_outputs(pickle.loads(blob), X), _outputs(est, X))


def test_skops_round_trip(data, tmp_path) -> None:
    X, _ = data
    for i, est in enumerate(_fitted(data)):
        path = tmp_path / f"m{i}.skops"
        save_model(est, path)
        back = load_model(path)
        assert type(back) is type(est)
        np.testing.assert_allclose(_outputs(back, X), _outputs(est, X))


class _Foreign(BaseEstimator):
    def fit(self, X, y, sample_weight=None):
        self.mean_ = float(np.mean(X))
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        return np.asarray(X)[:, 0] - self.mean_

    def predict(self, X):
        return (self.decision_function(X) > 0).astype(int)


def test_skops_refuses_untrusted_types(data, tmp_path) -> None:
    X, y = data
    est = CalibratedSVC(_Foreign(), method=PlattCalibrator(), cv=3).fit(X, y)
    path = tmp_path / "foreign.skops"
    save_model(est, path)
    with pytest.raises(UntrustedModelError, match="_Foreign"):
        load_model(path)
    name = f"{_Foreign.__module__}._Foreign"
    back = load_model(path, trusted=[name])
    np.testing.assert_allclose(back.predict_proba(X), est.predict_proba(X))
    with pytest.raises(NotFittedError):
        save_model(WeightedSVC(), tmp_path / "unfitted.skops")


@pytest.mark.gpu
def test_cuda_fit_pickles_to_numpy_and_predicts_on_cpu(data) -> None:
    X, y = data
    for est in (
        BatchedSVC(device="cuda").fit(X, y, C=[0.5, 2.0]),
        SensitivitySweepSVC(C_pos_grid=[0.5, 2.0], device="cuda").fit(X, y),
    ):
        blob = pickle.dumps(est)
        assert b"_rebuild_tensor" not in blob and b"torch.storage" not in blob
        back = pickle.loads(blob).set_params(device="cpu")
        np.testing.assert_allclose(
            back.decision_function(X), est.decision_function(X), rtol=1e-8, atol=1e-8
        )
