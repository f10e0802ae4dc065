"""Kernel (Gram) matrices in torch, computed in row blocks so memory stays bounded.

Supported kernels (SPEC S1 notation, scikit-learn's parametrisation):

- ``linear``: ``K(x, x') = x . x'``
- ``rbf``: ``K(x, x') = exp(-gamma ||x - x'||^2)``
- ``poly``: ``K(x, x') = (gamma x . x' + coef0) ** degree``

``gamma="scale"`` is ``1 / (n_features * Var(X))`` and ``gamma="auto"`` is
``1 / n_features``, as scikit-learn's ``SVC`` defines them, except that ``Var(X)`` (the
variance of all entries of ``X``) is weighted by ``sample_weight`` when one is given:
row ``i`` counts ``w_i`` times, so integer weights give the gamma of the repeated rows
(scikit-learn's ``SVC`` ignores the weights here and fails that equivalence).

This module is the one Gram-matrix and gamma implementation of the package:
:func:`compute_kernel` (torch, blocked), :func:`compute_kernel_np` (its numpy view for CPU
callers such as ``mip/``), :func:`batched_kernel` (per-problem subsets) and
:func:`resolve_gamma` (numpy or torch ``X``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

KERNELS = ("linear", "rbf", "poly")

# Rows of the left operand per block: bounds the temporary (block, t) buffers.
_DEFAULT_BLOCK_ELEMENTS = 2**24


def validate_kernel(kernel: str) -> str:
    """Return ``kernel`` if known, else raise a ``ValueError`` naming the choices."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {list(KERNELS)}")
    return kernel


def _weighted_variance(X: Any, sample_weight: Any | None) -> float:
    """Variance of all entries of ``X`` (n, d), row ``i`` counted ``sample_weight[i]`` times."""
    if isinstance(X, torch.Tensor):
        Xn = X.detach()
        if sample_weight is None:
            return float(Xn.var(unbiased=False)) if Xn.numel() else 0.0
        w = torch.as_tensor(sample_weight, dtype=Xn.dtype, device=Xn.device)
    else:
        Xn = np.asarray(X, dtype=np.float64)
        if sample_weight is None:
            return float(Xn.var()) if Xn.size else 0.0
        w = np.asarray(sample_weight, dtype=np.float64)
    if tuple(w.shape) != (Xn.shape[0],):
        raise ValueError(
            f"sample_weight must have shape ({Xn.shape[0]},) to weight the rows of X; "
            f"got {tuple(w.shape)}"
        )
    total = float(w.sum())
    if not math.isfinite(total) or total <= 0 or bool((w < 0).any()):
        raise ValueError(
            "sample_weight for gamma='scale' must be finite, non-negative and not all zero"
        )
    d = Xn.shape[1]
    mean = float((w[:, None] * Xn).sum()) / (total * d)
    return float((w[:, None] * (Xn - mean) ** 2).sum()) / (total * d)


def resolve_gamma(
    gamma: float | str, X: Any, sample_weight: Any | None = None
) -> float:
    """Numeric gamma for ``X`` of shape (n, d) (numpy array or torch tensor).

    Parameters
    ----------
    gamma : {"scale", "auto"} or float
        ``"scale"``: ``1 / (d * Var_w(X))`` (1.0 when the variance is 0, as scikit-learn);
        ``"auto"``: ``1 / d``; a positive finite float is returned as is.
    X : ndarray or tensor of shape (n, d)
    sample_weight : array-like of shape (n,), default=None
        Row weights of the variance (row ``i`` counts ``w_i`` times); None = unweighted.

    Returns
    -------
    float
    """
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            var = _weighted_variance(X, sample_weight)
            return 1.0 / (n_features * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(
            f"gamma must be a positive float, 'scale' or 'auto'; got {gamma!r}"
        )
    g = float(gamma)
    if not math.isfinite(g) or g <= 0:
        raise ValueError(f"gamma must be a positive finite number; got {gamma!r}")
    return g


def _block_kernel(
    A: torch.Tensor,
    B: torch.Tensor,
    kernel: str,
    gamma: float,
    degree: int,
    coef0: float,
    B_sqnorm: torch.Tensor | None,
) -> torch.Tensor:
    G = A @ B.T
    if kernel == "linear":
        return G
    if kernel == "poly":
        return (gamma * G + coef0) ** degree
    a2 = (A * A).sum(1, keepdim=True)
    b2 = B_sqnorm if B_sqnorm is not None else (B * B).sum(1)
    D = (a2 + b2[None, :] - 2.0 * G).clamp_min_(0.0)
    return torch.exp_(D.mul_(-gamma))


def compute_kernel(
    X1: torch.Tensor,
    X2: torch.Tensor | None = None,
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 0.0,
    block_elements: int = _DEFAULT_BLOCK_ELEMENTS,
) -> torch.Tensor:
    """Gram matrix ``K[i, j] = K(X1[i], X2[j])``.

    Parameters
    ----------
    X1 : tensor of shape (n, d)
    X2 : tensor of shape (t, d), optional
        Defaults to ``X1`` (the result is then symmetrised exactly).
    kernel, gamma, degree, coef0
        Kernel and its numeric parameters (resolve ``"scale"`` first with
        :func:`resolve_gamma`).
    block_elements : int
        Upper bound on the elements of one temporary block.

    Returns
    -------
    tensor of shape (n, t), on ``X1``'s device and dtype.
    """
    validate_kernel(kernel)
    symmetric = X2 is None
    X2_ = X1 if X2 is None else X2
    n, t = X1.shape[0], X2_.shape[0]
    out = torch.empty((n, t), dtype=X1.dtype, device=X1.device)
    b2 = (X2_ * X2_).sum(1) if kernel == "rbf" else None
    rows = max(1, block_elements // max(t, 1))
    for s in range(0, n, rows):
        out[s : s + rows] = _block_kernel(
            X1[s : s + rows], X2_, kernel, gamma, degree, coef0, b2
        )
    if symmetric:
        out = 0.5 * (out + out.T)
        if kernel == "rbf":
            out.diagonal().fill_(1.0)
    return out


def compute_kernel_np(
    X1: np.ndarray,
    X2: np.ndarray | None = None,
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 0.0,
) -> np.ndarray:
    """Numpy view of :func:`compute_kernel` (float64, CPU): array of shape (n, t).

    The arrays are shared with torch without a copy where possible, so CPU callers
    (``mip/``, estimators) use the same Gram matrix as the batched solver.
    """

    def as_tensor(a: np.ndarray) -> torch.Tensor:
        arr = np.ascontiguousarray(a, dtype=np.float64)
        # torch cannot share a read-only buffer: copy those
        return torch.from_numpy(arr if arr.flags.writeable else arr.copy())

    A = as_tensor(X1)
    B = None if X2 is None else as_tensor(X2)
    K = compute_kernel(A, B, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    return K.numpy()


def batched_kernel(
    A: torch.Tensor,
    B: torch.Tensor | None = None,
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 0.0,
) -> torch.Tensor:
    """Gram matrices of batches of point sets: ``A`` (R, f, d), ``B`` (R, g, d) -> (R, f, g).

    ``B`` defaults to ``A`` (then the result is symmetric, with an exact RBF diagonal).
    One batched GEMM plus an elementwise map; used where each problem of a batch needs
    the kernel on its own subset of rows (recomputing is cheaper than gathering blocks
    out of a large cached ``K``).
    """
    validate_kernel(kernel)
    same = B is None
    B_ = A if B is None else B
    G = torch.bmm(A, B_.transpose(1, 2))
    if kernel == "linear":
        return G
    if kernel == "poly":
        return (gamma * G + coef0) ** degree
    a2 = torch.diagonal(G, dim1=1, dim2=2).clone() if same else (A * A).sum(2)
    b2 = a2 if same else (B_ * B_).sum(2)
    D = G.mul_(-2.0).add_(a2[:, :, None]).add_(b2[:, None, :]).clamp_min_(0.0)
    if same:
        D.diagonal(dim1=1, dim2=2).zero_()
    return torch.exp_(D.mul_(-gamma))
