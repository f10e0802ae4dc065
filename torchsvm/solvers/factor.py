"""The shared factorisation ``Q = V diag(e) V^T`` of a batch's dual Hessian (SPEC S1).

``Q = diag(y) K diag(y)`` is the same for every problem of a
:class:`~torchsvm.problems.svm.BatchedSvmProblem`; it is factorised once: the thin SVD of
``diag(y) X`` for the linear kernel with ``d < n`` (rank ``<= d``), an eigendecomposition
otherwise. ADMM, the interior point and the polish all work through this factor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem


@dataclass(frozen=True)
class SharedFactor:
    """``Q = V diag(e) V^T`` (+ zero eigenvalues on the complement of ``V``).

    Attributes
    ----------
    V : tensor of shape (n, k)
    Vt : tensor of shape (k, n)
    e : tensor of shape (k,)
    y_tilde : tensor of shape (k,)
        ``V^T y``.
    """

    V: torch.Tensor
    Vt: torch.Tensor
    e: torch.Tensor
    y_tilde: torch.Tensor
    n: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def matvec(self, A: torch.Tensor) -> torch.Tensor:
        """``A @ Q`` for a batch of row vectors: tensor of shape (P, n)."""
        return ((A @ self.V) * self.e) @ self.Vt

    @property
    def mean_diag(self) -> float:
        return float(self.e.sum()) / self.n

    def low_rank(self) -> torch.Tensor:
        """``W = V diag(sqrt(e))`` of shape (n, k), so that ``Q = W W^T`` (cached)."""
        W = self._cache.get("W")
        if W is None:
            W = self.V * self.e.clamp_min(0.0).sqrt()
            self._cache["W"] = W
        return W

    def dense(self) -> torch.Tensor:
        """``Q`` itself, shape (n, n), formed once from the factor and cached."""
        Q = self._cache.get("Q")
        if Q is None:
            Q = (self.V * self.e) @ self.Vt
            self._cache["Q"] = Q
        return Q

    def gather(self, idx: torch.Tensor) -> torch.Tensor:
        """``Q[idx_p][:, idx_p]`` for every row ``p`` of ``idx`` (R, f): shape (R, f, f)."""
        Q = self.dense()
        return Q[idx[:, :, None], idx[:, None, :]]


def build_factor(
    problem: BatchedSvmProblem, eig_rel_tol: float = 1e-13
) -> SharedFactor:
    """Factorise the shared ``Q`` once (float64 internally, cast to the problem dtype)."""
    X = problem.X.to(torch.float64)
    y = problem.y.to(torch.float64)
    n, d = X.shape
    if problem.kernel == "linear" and d < n:
        Z = X * y[:, None]
        Uz, sv, _ = torch.linalg.svd(Z, full_matrices=False)
        e, V = sv * sv, Uz
    else:
        if problem.kernel == "linear":
            K = X @ X.T
        else:
            K = compute_kernel(
                X,
                kernel=problem.kernel,
                gamma=problem.gamma,
                degree=problem.degree,
                coef0=problem.coef0,
            )
        Q = K * y[:, None] * y[None, :]
        del K
        e, V = torch.linalg.eigh(Q)
        del Q
    emax = float(e.max()) if e.numel() else 0.0
    keep = e > eig_rel_tol * max(emax, 1e-300)
    e, V = e[keep], V[:, keep]
    dt = problem.dtype
    V = V.to(dt).contiguous()
    return SharedFactor(
        V=V, Vt=V.T.contiguous(), e=e.to(dt), y_tilde=(V.T @ problem.y.to(dt)), n=n
    )
