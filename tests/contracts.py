"""Contracts every batched SVM solver method must meet (SPEC S1, S2, S8).

:class:`BatchedSolverContract` is a mixin of tests; a test module subclasses it and
provides ``solve(problem) -> BatchedSvmSolution`` and the case fixture ``case`` (method,
kernel, dtype). The contracts:

- a batch is solved as if each problem were solved alone (``torch.cat`` of single solves);
- integer sample weights equal repeated rows;
- a zero count gives a zero dual variable;
- permuting the training rows leaves ``(w, b)`` / the decision function unchanged;
- ``0 <= alpha <= U``, ``y^T alpha = 0``, and an optimal status means an independently
  recomputed duality gap and KKT violation below tolerance;
- decision values agree with ``sklearn.svm.SVC(sample_weight=counts)`` (libsvm).

Decision values are compared with :func:`tests.helpers.assert_svm_close`, never alphas.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from tests.helpers import (
    assert_svm_close,
    decision_values,
    kkt_violation,
    primal_dual_gap,
    sklearn_decision,
)
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.solution import BatchedSvmSolution


@dataclass(frozen=True)
class SolverCase:
    """One solver configuration under contract."""

    method: str
    kernel: str
    dtype: str

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch.float64 if self.dtype == "float64" else torch.float32

    @property
    def rtol(self) -> float:
        """Decision-value tolerance (float32 certifies a looser gap)."""
        return 1e-3 if self.dtype == "float64" else 1e-2

    @property
    def tol(self) -> float:
        """Solver relative-gap tolerance for this dtype."""
        return 1e-8 if self.dtype == "float64" else 1e-5

    def __str__(self) -> str:
        return f"{self.method}-{self.kernel}-{self.dtype}"


def contract_data(
    n: int = 48, d: int = 4, seed: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """A small standardised binary problem with label noise (both classes, no ties)."""
    X, y = make_classification(
        n, d, n_informative=3, n_redundant=0, flip_y=0.1, random_state=seed
    )
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


def contract_counts(n: int, B: int, seed: int = 0) -> np.ndarray:
    """Bootstrap counts (B, n), each row with zeros (out-of-bag points)."""
    rng = np.random.default_rng(seed)
    return np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)]
    ).astype(float)


C_GRID = np.array([0.1, 1.0, 10.0])


class BatchedSolverContract:
    """Mixin of contract tests; subclasses define ``solve`` and the ``case`` fixture."""

    def solve(self, case: SolverCase, prob: BatchedSvmProblem) -> BatchedSvmSolution:
        raise NotImplementedError

    # ---------------------------------------------------------------- builders
    def _problem(
        self,
        case: SolverCase,
        X: np.ndarray,
        y: np.ndarray,
        counts: np.ndarray,
        C: np.ndarray = C_GRID,
    ) -> BatchedSvmProblem:
        return BatchedSvmProblem.from_bootstrap(
            X, y, C, counts, kernel=case.kernel, gamma=0.2, dtype=case.dtype
        )

    # --------------------------------------------------------------- contracts
    def test_batched_equals_single_solves(self, case: SolverCase) -> None:
        X, y = contract_data()
        prob = self._problem(case, X, y, contract_counts(len(y), 2))
        sol = self.solve(case, prob)
        F = decision_values(prob, sol, X)
        singles = [self.solve(case, prob.select([p])) for p in range(prob.n_problems)]
        F1 = np.concatenate(
            [decision_values(prob.select([p]), s, X) for p, s in enumerate(singles)]
        )
        assert_svm_close(F, F1, case.rtol, f"{case}: batch vs one at a time")
        assert torch.equal(sol.status, torch.cat([s.status for s in singles]))

    def test_integer_counts_equal_repeated_rows(self, case: SolverCase) -> None:
        X, y = contract_data()
        counts = contract_counts(len(y), 1, seed=5)
        prob = self._problem(case, X, y, counts)
        rep = np.repeat(np.arange(len(y)), counts[0].astype(int))
        prob_rep = self._problem(case, X[rep], y[rep], np.ones((1, rep.size)))
        F = decision_values(prob, self.solve(case, prob), X)
        F_rep = decision_values(prob_rep, self.solve(case, prob_rep), X)
        assert_svm_close(F, F_rep, case.rtol, f"{case}: counts vs repeated rows")

    def test_zero_count_gives_zero_alpha(self, case: SolverCase) -> None:
        X, y = contract_data()
        counts = contract_counts(len(y), 2, seed=7)
        assert (counts == 0).any()
        prob = self._problem(case, X, y, counts)
        sol = self.solve(case, prob)
        zero = prob.U == 0
        assert bool((sol.alpha[zero] == 0).all())

    def test_row_permutation_invariance(self, case: SolverCase) -> None:
        X, y = contract_data()
        counts = contract_counts(len(y), 2, seed=11)
        perm = np.random.default_rng(1).permutation(len(y))
        prob = self._problem(case, X, y, counts)
        prob_p = self._problem(case, X[perm], y[perm], counts[:, perm])
        sol, sol_p = self.solve(case, prob), self.solve(case, prob_p)
        assert_svm_close(
            decision_values(prob, sol, X),
            decision_values(prob_p, sol_p, X),
            case.rtol,
            f"{case}: row permutation",
        )
        if case.kernel == "linear":
            assert sol.w is not None and sol_p.w is not None
            wb = torch.cat([sol.w, sol.b[:, None]], 1).double().numpy()
            wb_p = torch.cat([sol_p.w, sol_p.b[:, None]], 1).double().numpy()
            assert_svm_close(wb, wb_p, case.rtol, f"{case}: (w, b) under permutation")

    def test_feasible_and_certified(self, case: SolverCase) -> None:
        X, y = contract_data()
        prob = self._problem(case, X, y, contract_counts(len(y), 3, seed=2))
        sol = self.solve(case, prob)
        A, U = sol.alpha, prob.U
        assert A.dtype == case.torch_dtype
        assert bool((A >= 0).all()) and bool((A <= U).all())
        eps = torch.finfo(A.dtype).eps
        ya = (A * prob.y).sum(1).abs()
        assert bool((ya <= 1e3 * eps * (1.0 + A.sum(1))).all()), ya.max()
        opt = sol.converged.numpy()
        assert opt.all(), f"{case}: {int((~opt).sum())} problems not certified"
        gap = primal_dual_gap(prob, sol)
        assert gap.max() <= 10 * case.tol + 1e3 * float(eps), gap.max()
        viol = kkt_violation(prob, sol)
        assert viol.max() <= case.rtol, viol.max()
        if case.kernel == "linear":
            w = ((A * prob.y) @ prob.X).double().numpy()
            assert_svm_close(
                sol.w.double().numpy(), w, 1e3 * float(eps), "w = X^T (alpha y)"
            )

    def test_matches_libsvm(self, case: SolverCase) -> None:
        X, y = contract_data()
        counts = contract_counts(len(y), 2, seed=13)
        prob = self._problem(case, X, y, counts)
        sol = self.solve(case, prob)
        F = decision_values(prob, sol, X)
        c_idx = prob.index["c_idx"].numpy()
        rep_idx = prob.index["rep_idx"].numpy()
        for p in range(prob.n_problems):
            ref = sklearn_decision(
                X,
                y,
                float(C_GRID[c_idx[p]]),
                counts[rep_idx[p]],
                case.kernel,
                prob.gamma,
            )
            assert_svm_close(F[p], ref, case.rtol, f"{case}: problem {p} vs libsvm")


def cases(methods_kernels: dict[str, tuple[str, ...]]) -> list[pytest.param]:
    """pytest params for every (method, kernel, dtype) combination given."""
    out = []
    for method, kernels in methods_kernels.items():
        for kernel in kernels:
            for dtype in ("float64", "float32"):
                c = SolverCase(method, kernel, dtype)
                out.append(pytest.param(c, id=str(c)))
    return out
