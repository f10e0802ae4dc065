"""Shared test helpers: oracle comparisons for batched SVM solutions (SPEC S1, S8).

Alphas are never compared: the dual optimum is not unique (repeated rows, the linear
kernel's null space), the decision function is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.svm import SVC

from torchsvm.problems.svm import BatchedSvmProblem


def decision_values(prob: BatchedSvmProblem, sol: Any, X: np.ndarray) -> np.ndarray:
    """Scores of every problem of ``sol`` on the rows ``X``: array of shape (P, t)."""
    Xt = torch.as_tensor(np.asarray(X), dtype=prob.dtype, device=prob.device)
    F = sol.decision_function(
        prob.X,
        prob.y,
        Xt,
        kernel=prob.kernel,
        gamma=prob.gamma,
        degree=prob.degree,
        coef0=prob.coef0,
    )
    return F.detach().cpu().double().numpy()


def assert_svm_close(
    f_ours: np.ndarray, f_ref: np.ndarray, rtol: float, what: str = ""
) -> None:
    """``max |f_ours - f_ref| <= rtol * max(1, max |f_ref|)`` (decision values, any shape)."""
    f_ours, f_ref = (
        np.asarray(f_ours, dtype=np.float64),
        np.asarray(f_ref, dtype=np.float64),
    )
    assert f_ours.shape == f_ref.shape, (f_ours.shape, f_ref.shape)
    err = float(np.abs(f_ours - f_ref).max())
    bound = rtol * max(1.0, float(np.abs(f_ref).max()))
    assert err <= bound, f"{what}: max |df| = {err:.3e} > {bound:.3e} (rtol {rtol:g})"


def sklearn_decision(
    X: np.ndarray,
    y: np.ndarray,
    C: float,
    sample_weight: np.ndarray | None,
    kernel: str,
    gamma: float,
    X_eval: np.ndarray | None = None,
) -> np.ndarray:
    """libsvm's decision values for one weighted problem (``SVC(tol=1e-10)``)."""
    ref = SVC(kernel=kernel, C=C, gamma=gamma, tol=1e-10, max_iter=10**7)
    ref.fit(X, y, sample_weight=sample_weight)
    return ref.decision_function(X if X_eval is None else X_eval)


def primal_dual_gap(prob: BatchedSvmProblem, sol: Any) -> np.ndarray:
    """Relative duality gap of each problem, recomputed in numpy from ``alpha`` and ``b``.

    Independent of :mod:`torchsvm.solvers.kkt`: the primal is evaluated at ``(w(alpha), b)``
    with the hinge loss (``S`` is None) and the dual at ``alpha``.
    """
    if prob.S is not None:
        raise ValueError("primal_dual_gap covers the hinge loss (S is None) only")
    X = prob.X.double().cpu().numpy()
    y = prob.y.double().cpu().numpy()
    U = prob.U.double().cpu().numpy()
    A = sol.alpha.double().cpu().numpy()
    b = sol.b.double().cpu().numpy()
    if prob.kernel == "linear":
        K = X @ X.T
    else:
        from torchsvm.kernels import compute_kernel

        K = (
            compute_kernel(
                prob.X.double(),
                kernel=prob.kernel,
                gamma=prob.gamma,
                degree=prob.degree,
                coef0=prob.coef0,
            )
            .cpu()
            .numpy()
        )
    Q = K * y[:, None] * y[None, :]
    out = np.empty(A.shape[0])
    for p in range(A.shape[0]):
        a = A[p]
        quad = a @ Q @ a
        f = (a * y) @ K + b[p]
        primal = 0.5 * quad + (U[p] * np.maximum(0.0, 1.0 - y * f)).sum()
        dual = a.sum() - 0.5 * quad
        out[p] = (primal - dual) / max(1.0, abs(primal))
    return out


def kkt_violation(prob: BatchedSvmProblem, sol: Any) -> np.ndarray:
    """Largest violation of the KKT conditions in margin units, per problem (hinge loss).

    With ``m_i = y_i f(x_i)``: ``a_i < u_i`` needs ``m_i >= 1``, ``a_i > 0`` needs
    ``m_i <= 1``; coordinates with ``u_i = 0`` carry no condition. Coordinates within a
    relative ``1e-6`` of a bound count as on it.
    """
    X = prob.X.double().cpu().numpy()
    y = prob.y.double().cpu().numpy()
    U = prob.U.double().cpu().numpy()
    A = sol.alpha.double().cpu().numpy()
    f = decision_values(prob, sol, X)
    m = y[None, :] * f
    act = U > 0
    eps = 1e-6 * np.where(np.isfinite(U), U, 1.0)
    below = act & (A < U - eps)
    above = act & (A > eps)
    v1 = np.where(below, np.maximum(0.0, 1.0 - m), 0.0)
    v2 = np.where(above, np.maximum(0.0, m - 1.0), 0.0)
    return np.maximum(v1, v2).max(axis=1)
