"""The batched result record of the dual solver."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from torchsvm.kernels import compute_kernel
from torchsvm.types import SolveStatus


@dataclass(frozen=True)
class BatchedSvmSolution:
    """Solutions of a :class:`~torchsvm.problems.svm.BatchedSvmProblem`; every field batched.

    Attributes
    ----------
    alpha : tensor of shape (P, n)
        Dual variables (feasible: ``0 <= alpha <= U``, ``y^T alpha = 0`` to rounding).
    b : tensor of shape (P,)
        Intercepts (``f(x) = sum_i alpha_i y_i K(x_i, x) + b``).
    w : tensor of shape (P, d) or None
        Primal weights for the linear kernel.
    status : tensor of shape (P,)
        Integer codes of :class:`~torchsvm.types.SolveStatus`.
    n_iter : tensor of shape (P,)
        Iterations each problem used.
    primal, dual : tensor of shape (P,)
        Objective values (libsvm convention, see SPEC S1).
    duality_gap : tensor of shape (P,)
        ``(primal - dual) / max(1, |primal|)``.
    rho : tensor of shape (P,)
        Final ADMM penalties (useful as a warm start).
    """

    alpha: torch.Tensor
    b: torch.Tensor
    w: torch.Tensor | None
    status: torch.Tensor
    n_iter: torch.Tensor
    primal: torch.Tensor
    dual: torch.Tensor
    duality_gap: torch.Tensor
    rho: torch.Tensor

    @property
    def n_problems(self) -> int:
        return int(self.alpha.shape[0])

    @property
    def converged(self) -> torch.Tensor:
        """Boolean tensor of shape (P,): status is ``optimal``."""
        return self.status == SolveStatus.optimal.code

    def statuses(self) -> list[SolveStatus]:
        """Statuses as enum members."""
        return [SolveStatus.from_code(int(c)) for c in self.status.tolist()]

    def select(self, idx: Any) -> BatchedSvmSolution:
        """Sub-batch ``idx`` (keeps the leading axis)."""
        if isinstance(idx, int):
            idx = [idx]
        kw = {
            f: getattr(self, f)[idx]
            for f in (
                "alpha",
                "b",
                "status",
                "n_iter",
                "primal",
                "dual",
                "duality_gap",
                "rho",
            )
        }
        return replace(self, w=None if self.w is None else self.w[idx], **kw)

    def decision_function(
        self,
        X_train: torch.Tensor,
        y: torch.Tensor,
        X_new: torch.Tensor,
        *,
        kernel: str,
        gamma: float,
        degree: int = 3,
        coef0: float = 0.0,
        block_rows: int = 4096,
    ) -> torch.Tensor:
        """Scores ``f_p(x)`` for every problem and new row: tensor of shape (P, t)."""
        if self.w is not None and kernel == "linear":
            return self.w @ X_new.T + self.b[:, None]
        coef = self.alpha * y  # (P, n)
        support = (coef != 0).any(0)
        coef_s = coef[:, support]
        Xs = X_train[support]
        out = torch.empty(
            (self.n_problems, X_new.shape[0]), dtype=coef.dtype, device=coef.device
        )
        for s in range(0, X_new.shape[0], block_rows):
            Kb = compute_kernel(
                Xs,
                X_new[s : s + block_rows],
                kernel=kernel,
                gamma=gamma,
                degree=degree,
                coef0=coef0,
            )
            out[:, s : s + block_rows] = coef_s @ Kb
        return out + self.b[:, None]

    def to_numpy(self) -> dict[str, np.ndarray]:
        """Every field as a numpy array (on CPU)."""
        out = {
            f: getattr(self, f).detach().cpu().numpy()
            for f in (
                "alpha",
                "b",
                "status",
                "n_iter",
                "primal",
                "dual",
                "duality_gap",
                "rho",
            )
        }
        if self.w is not None:
            out["w"] = self.w.detach().cpu().numpy()
        return out
