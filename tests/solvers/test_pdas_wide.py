"""The dense active set on batches whose faces are too wide for the factor store together
(nursery's RBF inner CV, issue 18): chains solved in groups from a pilot's partition."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.svm import SVC

import torchsvm.solvers.box_qp as box_qp
from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel, resolve_gamma
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver


def _rbf_lattice_cv(
    levels: tuple[int, ...], folds: int, Cs: np.ndarray, noise: float, seed: int
) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """A full factorial design, one-hot, RBF at gamma "scale" (nursery's kind of data:
    almost every active row is a free support vector), as an inner CV batch (every
    (fold, C), held-out rows weighted 0)."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(m) for m in levels], indexing="ij"), -1)
    grid = grid.reshape(-1, len(levels))
    X = np.concatenate([np.eye(m)[grid[:, j]] for j, m in enumerate(levels)], 1)
    y = np.where(grid[:, 0] == 0, 1.0, -1.0)
    y = np.where(rng.random(y.size) < noise, -y, y)
    fold = rng.permutation(y.size) % folds
    Wt = np.repeat(
        (fold[None, :] != np.arange(folds)[:, None]).astype(float), Cs.size, 0
    )
    C = np.tile(Cs, folds)
    gamma = resolve_gamma("scale", X, None)
    prob = BatchedSvmProblem.from_bounds(
        X, y, C[:, None] * Wt, kernel="rbf", gamma=gamma
    )
    return prob, X, y, Wt, C, gamma


def _check_against_libsvm(
    prob: BatchedSvmProblem,
    sol,  # noqa: ANN001
    X: np.ndarray,
    y: np.ndarray,
    Wt: np.ndarray,
    C: np.ndarray,
    gamma: float,
    problems: list[int],
    tol: float = 1e-10,
    f_tol: float = 1e-5,
) -> None:
    K = compute_kernel(prob.X, kernel="rbf", gamma=gamma).numpy()
    F = (sol.alpha.numpy() * y) @ K + sol.b.numpy()[:, None]
    for p in problems:
        on = Wt[p] > 0
        ref = SVC(kernel="rbf", C=C[p], gamma=gamma, tol=tol).fit(X[on], y[on])
        a = np.zeros(y.size)
        a[np.flatnonzero(on)[ref.support_]] = np.abs(ref.dual_coef_[0])
        v = a * y
        dual_ref = a.sum() - 0.5 * v @ K @ v
        # libsvm's dual value cannot exceed the optimum; ours is certified within 1e-7
        assert float(sol.dual[p]) >= dual_ref - 1e-7 * max(1.0, abs(dual_ref))
        assert float(sol.dual[p]) <= dual_ref + 1e-5 * max(1.0, abs(dual_ref))
        fr = ref.decision_function(X)
        assert np.abs(F[p] - fr).max() <= f_tol * max(1.0, np.abs(fr).max())


def _spy_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(rows, widest face of the result) of every ``pdas_dense`` run."""
    seen: list[tuple[int, int]] = []
    real = box_qp.pdas_dense

    def spy(Q, y, U, S, A0, **k):  # noqa: ANN001, ANN003, ANN202
        out = real(Q, y, U, S, A0, **k)
        A = out[0]
        seen.append((U.shape[0], int(((A > 0) & (A < U)).sum(1).max())))
        return out

    monkeypatch.setattr(box_qp, "pdas_dense", spy)
    return seen


def test_wide_faces_solved_chain_by_chain_against_libsvm(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    prob, X, y, Wt, C, gamma = _rbf_lattice_cv(
        (3, 3, 4, 3, 2), 3, np.array([0.03125, 1.0, 32.0]), 0.0, 0
    )
    n_act = int((prob.U > 0).sum(1).max())
    # a factor store of one wide face per chain, not of three
    mem = 4 * int(1.6 * n_act**2 * 8)
    monkeypatch.setattr(box_qp, "_PDAS_WIDE_FACE", 64)  # the lattice's faces: ~130
    seen = _spy_runs(monkeypatch)
    with caplog.at_level(logging.INFO, logger="torchsvm.solvers.box_qp"):
        sol = BoxQpSolver(SolverConfig(tol=1e-7, memory_bytes=mem))(prob)
    assert "chains solved" in caplog.text
    widest = max(f for _, f in seen)
    assert widest > 0.6 * n_act  # the data do make wide faces
    assert max(r for r, _ in seen) == 1  # one chain at a time
    assert len(seen) == prob.n_problems
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    _check_against_libsvm(prob, sol, X, y, Wt, C, gamma, list(range(prob.n_problems)))
    # the stage-by-stage batch of the whole problem set (memory for every factor)
    # reaches the same optimum
    ref = BoxQpSolver(SolverConfig(tol=1e-7))(prob)
    assert bool(ref.converged.all())
    np.testing.assert_allclose(sol.dual.numpy(), ref.dual.numpy(), rtol=2e-7)


def test_narrow_faces_keep_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # label noise and a large C: few free coordinates; the pilot's faces fit, so the
    # other chains are solved together, cold, as before
    prob, X, y, Wt, C, gamma = _rbf_lattice_cv(
        (3, 3, 4, 3, 2), 3, np.array([32.0]), 0.2, 1
    )
    n_act = int((prob.U > 0).sum(1).max())
    monkeypatch.setattr(box_qp, "_PDAS_WIDE_FACE", 100)
    seen = _spy_runs(monkeypatch)
    sol = BoxQpSolver(SolverConfig(tol=1e-7, memory_bytes=4 * 2 * n_act**2 * 8))(prob)
    assert bool(sol.converged.all())
    assert max(f for _, f in seen) < 0.7 * n_act
    assert [r for r, _ in seen] == [1, 2]  # the pilot, then the other two chains
    _check_against_libsvm(prob, sol, X, y, Wt, C, gamma, [0, 2])


@pytest.mark.slow  # 1440 rows, faces of about 900 coordinates
def test_wide_faces_larger_lattice_against_libsvm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prob, X, y, Wt, C, gamma = _rbf_lattice_cv(
        (3, 5, 4, 4, 3, 2), 4, np.array([0.03125, 1.0, 32.0]), 0.0, 2
    )
    n_act = int((prob.U > 0).sum(1).max())
    monkeypatch.setattr(box_qp, "_PDAS_WIDE_FACE", 256)
    seen = _spy_runs(monkeypatch)
    sol = BoxQpSolver(SolverConfig(tol=1e-7, memory_bytes=4 * int(1.6 * n_act**2 * 8)))(
        prob
    )
    assert max(r for r, _ in seen) == 1
    assert max(f for _, f in seen) > 0.6 * n_act
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    _check_against_libsvm(
        prob, sol, X, y, Wt, C, gamma, [0, 5, 11], tol=1e-8, f_tol=1e-4
    )
