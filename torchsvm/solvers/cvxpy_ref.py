"""Exact small-QP oracle for the SVM dual through cvxpylayers (lazy import).

The dual of SPEC S1 (libsvm convention) is written as a parametrised cvxpy problem with
the bounds ``u`` as the parameter, so one ``CvxpyLayer`` solves a whole batch; ``Q`` is
entered through its factor ``L`` (``Q = L L^T``) to keep the problem DPP-compliant.
Used by the tests as an independent oracle, and usable as a differentiable path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def solve_dual_cvxpylayers(Q: np.ndarray, y: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Solve ``min 1/2 a^T Q a - 1^T a, y^T a = 0, 0 <= a <= u`` for every row of ``U``.

    Parameters
    ----------
    Q : array of shape (n, n), symmetric PSD
    y : array of shape (n,) in {-1, +1}
    U : array of shape (P, n)

    Returns
    -------
    array of shape (P, n): the optimal ``a`` of each problem.
    """
    import cvxpy as cp
    from cvxpylayers.torch import CvxpyLayer

    n = Q.shape[0]
    evals, evecs = np.linalg.eigh(0.5 * (Q + Q.T))
    L = evecs * np.sqrt(np.clip(evals, 0.0, None))
    a = cp.Variable(n)
    u = cp.Parameter(n, nonneg=True)
    objective = cp.Minimize(0.5 * cp.sum_squares(L.T @ a) - cp.sum(a))
    constraints = [y @ a == 0, a >= 0, a <= u]
    layer: Any = CvxpyLayer(
        cp.Problem(objective, constraints), parameters=[u], variables=[a]
    )
    (sol,) = layer(torch.as_tensor(U, dtype=torch.float64))
    return sol.detach().numpy()
