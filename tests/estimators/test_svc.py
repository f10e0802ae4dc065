"""WeightedSVC / BatchedSVC: scikit-learn contract, libsvm agreement, specific errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from torchsvm.estimators.svc import BatchedSVC, WeightedSVC


def test_rbf_scale_gamma_is_weighted_like_repeated_rows() -> None:
    X, y = make_classification(60, 4, random_state=3)
    w = np.random.default_rng(3).integers(0, 4, 60)
    weighted = WeightedSVC(kernel="rbf").fit(X, y, sample_weight=w)
    repeated = WeightedSVC(kernel="rbf").fit(np.repeat(X, w, 0), np.repeat(y, w))
    assert weighted.gamma_ == pytest.approx(repeated.gamma_, rel=1e-12)
    np.testing.assert_allclose(
        weighted.decision_function(X), repeated.decision_function(X), atol=1e-5
    )


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_weighted_svc_matches_sklearn(kernel: str) -> None:
    X, y = make_classification(120, 6, random_state=0)
    w = np.random.default_rng(0).integers(0, 4, 120)
    ours = WeightedSVC(C=2.0, kernel=kernel, class_weight={0: 2.0, 1: 0.5}).fit(
        X, y, sample_weight=w
    )
    # libsvm's gamma="scale" ignores the weights; ours weights the variance
    gamma = ours.gamma_ if kernel == "rbf" else "scale"
    ref = SVC(
        C=2.0, kernel=kernel, gamma=gamma, class_weight={0: 2.0, 1: 0.5}, tol=1e-8
    )
    ref.fit(X, y, sample_weight=w)
    f_ref = ref.decision_function(X)
    assert np.abs(ours.decision_function(X) - f_ref).max() <= 1e-3 * max(
        1, np.abs(f_ref).max()
    )
    np.testing.assert_array_equal(ours.classes_, ref.classes_)
    if kernel == "linear":
        np.testing.assert_allclose(
            ours.coef_, ref.coef_, atol=1e-3 * np.abs(ref.coef_).max()
        )


def test_batched_svc_shapes_and_statuses() -> None:
    X, y = make_classification(80, 5, random_state=1)
    W = np.random.default_rng(1).integers(1, 3, size=(4, 80))
    bat = BatchedSVC(kernel="rbf").fit(X, y, C=[0.1, 1.0, 10.0, 100.0], sample_weight=W)
    assert bat.decision_function(X[:7]).shape == (4, 7)
    assert bat.predict(X[:7]).shape == (4, 7)
    assert bat.status_.shape == bat.n_iter_.shape == bat.duality_gap_.shape == (4,)
    assert set(bat.status_) == {"optimal"}
    assert (bat.duality_gap_ <= 1e-6).all()


@pytest.mark.parametrize(
    ("X", "y", "kwargs", "match"),
    [
        (np.array([[np.nan, 0.0], [1.0, 1.0]]), [0, 1], {}, "NaN"),
        (np.ones((4, 2)), [0, 0, 0, 0], {}, "only one class"),
        (np.ones((3, 2)), [0, 1, 2], {}, "Only binary classification"),
        (np.ones((3, 2)), [0, 1], {}, "inconsistent numbers of samples"),
        (np.zeros((0, 2)), [], {}, "0 sample"),
        (np.eye(3), [0, 1, 0], {"sample_weight": [1.0, -1.0, 1.0]}, "[Nn]egative"),
        (np.eye(3), [0, 1, 0], {"sample_weight": [0.0, 0.0, 0.0]}, "non-zero"),
        (np.eye(3), [0, 1, 0], {"sample_weight": [1.0, 0.0, 1.0]}, "zero weight"),
    ],
)
def test_weighted_svc_bad_input(X, y, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        WeightedSVC().fit(X, y, **kwargs)


def test_bad_params_and_device() -> None:
    X, y = make_classification(20, 3, n_informative=2, n_redundant=0, random_state=0)
    with pytest.raises(ValueError, match="C"):
        WeightedSVC(C=0.0).fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        WeightedSVC(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match="C must be"):
        BatchedSVC().fit(X, y, C=[1.0, -1.0])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            WeightedSVC(device="cuda").fit(X, y)


@pytest.mark.gpu
def test_weighted_svc_cuda_matches_cpu() -> None:
    X, y = make_classification(200, 8, random_state=2)
    f_cpu = WeightedSVC(C=3.0).fit(X, y).decision_function(X)
    f_gpu = WeightedSVC(C=3.0, device="cuda").fit(X, y).decision_function(X)
    np.testing.assert_allclose(f_gpu, f_cpu, atol=1e-4 * max(1, np.abs(f_cpu).max()))
