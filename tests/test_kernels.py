"""Direct tests of torchsvm.kernels against scikit-learn's pairwise kernels (oracle)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel
from sklearn.svm import SVC

from torchsvm.kernels import (
    batched_kernel,
    compute_kernel,
    compute_kernel_np,
    resolve_gamma,
    validate_kernel,
)


def _oracle(kernel, A, B, gamma=0.7, degree=3, coef0=0.5):
    if kernel == "linear":
        return linear_kernel(A, B)
    if kernel == "rbf":
        return rbf_kernel(A, B, gamma=gamma)
    return polynomial_kernel(A, B, degree=degree, gamma=gamma, coef0=coef0)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_compute_kernel_matches_sklearn(kernel):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(13, 4)), rng.normal(size=(7, 4))
    kw = dict(kernel=kernel, gamma=0.7, degree=3, coef0=0.5)
    K = compute_kernel(torch.as_tensor(A), torch.as_tensor(B), **kw).numpy()
    np.testing.assert_allclose(K, _oracle(kernel, A, B), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        compute_kernel_np(A, B, **kw), _oracle(kernel, A, B), atol=1e-12
    )
    Ks = compute_kernel_np(A, **kw)
    np.testing.assert_array_equal(Ks, Ks.T)
    np.testing.assert_allclose(Ks, _oracle(kernel, A, A), atol=1e-12)


def test_compute_kernel_blocks_agree_with_one_block():
    rng = np.random.default_rng(1)
    A = torch.as_tensor(rng.normal(size=(50, 3)))
    full = compute_kernel(A, kernel="rbf", gamma=0.3)
    tiny = compute_kernel(A, kernel="rbf", gamma=0.3, block_elements=7)
    torch.testing.assert_close(full, tiny, rtol=0, atol=1e-14)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_batched_kernel_matches_sklearn(kernel):
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 5, 4))
    kw = dict(kernel=kernel, gamma=0.7, degree=3, coef0=0.5)
    K = batched_kernel(torch.as_tensor(A), torch.as_tensor(B), **kw).numpy()
    Ks = batched_kernel(torch.as_tensor(A), **kw).numpy()
    for r in range(3):
        np.testing.assert_allclose(K[r], _oracle(kernel, A[r], B[r]), atol=1e-12)
        np.testing.assert_allclose(Ks[r], _oracle(kernel, A[r], A[r]), atol=1e-12)


def test_resolve_gamma_matches_sklearn_svc_unweighted():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 5)) * 3.0
    y = (X[:, 0] > 0).astype(int)
    assert resolve_gamma("scale", X) == pytest.approx(
        SVC(gamma="scale").fit(X, y)._gamma
    )
    assert resolve_gamma("scale", torch.as_tensor(X)) == pytest.approx(
        resolve_gamma("scale", X)
    )
    assert resolve_gamma("auto", X) == pytest.approx(1 / 5)
    assert resolve_gamma(0.25, X) == 0.25


def test_resolve_gamma_weighted_equals_repeated_rows():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(9, 3))
    w = np.array([0, 1, 2, 3, 1, 0, 4, 1, 2])
    rep = np.repeat(X, w, axis=0)
    g = resolve_gamma("scale", X, sample_weight=w)
    assert g == pytest.approx(resolve_gamma("scale", rep), rel=1e-12)
    assert g != pytest.approx(resolve_gamma("scale", X))
    gt = resolve_gamma("scale", torch.as_tensor(X), sample_weight=torch.as_tensor(w))
    assert gt == pytest.approx(g, rel=1e-12)
    # scaling every weight changes nothing
    assert resolve_gamma("scale", X, sample_weight=2.5 * w) == pytest.approx(
        g, rel=1e-12
    )


def test_resolve_gamma_zero_variance_is_one():
    assert resolve_gamma("scale", np.ones((4, 2))) == 1.0


@pytest.mark.parametrize("gamma", ["median", -1.0, 0.0, float("nan"), float("inf")])
def test_resolve_gamma_rejects_bad_values(gamma):
    with pytest.raises(ValueError, match="gamma"):
        resolve_gamma(gamma, np.ones((3, 2)))


@pytest.mark.parametrize(
    "w, match",
    [
        (np.ones(2), "shape"),
        (np.zeros(3), "not all zero"),
        (np.array([1.0, -1.0, 1.0]), "non-negative"),
    ],
)
def test_resolve_gamma_rejects_bad_weights(w, match):
    with pytest.raises(ValueError, match=match):
        resolve_gamma("scale", np.arange(6.0).reshape(3, 2), sample_weight=w)


def test_validate_kernel_names_choices():
    with pytest.raises(ValueError, match="sigmoid"):
        validate_kernel("sigmoid")
