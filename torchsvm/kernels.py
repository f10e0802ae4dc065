"""Kernel (Gram) matrices in torch, computed in row blocks so memory stays bounded.

Supported kernels (SPEC S1 notation, scikit-learn's parametrisation):

- ``linear``: ``K(x, x') = x . x'``
- ``rbf``: ``K(x, x') = exp(-gamma ||x - x'||^2)``
- ``poly``: ``K(x, x') = (gamma x . x' + coef0) ** degree``

``gamma="scale"`` is ``1 / (n_features * X.var())`` and ``gamma="auto"`` is
``1 / n_features``, exactly as scikit-learn's ``SVC`` defines them.
"""

from __future__ import annotations

import math

import torch

KERNELS = ("linear", "rbf", "poly")

# Rows of the left operand per block: bounds the temporary (block, t) buffers.
_DEFAULT_BLOCK_ELEMENTS = 2**24


def validate_kernel(kernel: str) -> str:
    """Return ``kernel`` if known, else raise a ``ValueError`` naming the choices."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {list(KERNELS)}")
    return kernel


def resolve_gamma(gamma: float | str, X: torch.Tensor) -> float:
    """Numeric gamma for ``X`` of shape (n, d), following scikit-learn's definitions."""
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            var = float(X.var(unbiased=False)) if X.numel() else 0.0
            return 1.0 / (n_features * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"gamma must be a positive float, 'scale' or 'auto'; got {gamma!r}")
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
