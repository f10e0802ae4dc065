"""Direct tests of torchsvm.solvers.kkt against brute-force oracles (SPEC S1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from sklearn.svm import SVC

from tests.contracts import contract_data
from torchsvm.solvers.kkt import (
    duality_gap,
    optimal_intercept,
    project_face,
    project_feasible,
)


def _problem(
    seed: int, P: int = 5, n: int = 30
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, -1.0, 1.0)
    U = rng.uniform(0.0, 2.0, (P, n)) * (rng.random((P, n)) > 0.2)
    Z = rng.normal(0.0, 1.5, (P, n))
    return torch.tensor(Z), torch.tensor(y), torch.tensor(U)


def _brute_projection(z: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
    """clip(z - theta y, 0, u) with theta the root of y^T clip(...) found by Brent's method."""

    def h(t: float) -> float:
        return float((np.clip(z - t * y, 0.0, u) * y).sum())

    M = np.abs(z).max() + 1.0
    theta = brentq(h, -M, M, xtol=1e-15, rtol=1e-15, maxiter=500)
    return np.clip(z - theta * y, 0.0, u)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_project_feasible_is_the_euclidean_projection(seed: int) -> None:
    Z, y, U = _problem(seed)
    A = project_feasible(Z, y, U).numpy()
    for p in range(Z.shape[0]):
        ref = _brute_projection(Z[p].numpy(), y.numpy(), U[p].numpy())
        np.testing.assert_allclose(A[p], ref, atol=1e-10)
    assert np.abs((A * y.numpy()).sum(1)).max() <= 1e-12 * (1 + np.abs(A).sum())


def test_project_face_keeps_bound_coordinates() -> None:
    Z, y, U = _problem(4)
    Zc = torch.minimum(Z.clamp_min(0.0), U)
    A = project_face(Z, y, U)
    at_bound = (Zc == 0) | (Zc == U)
    has_interior = ((Zc > 0) & (Zc < U)).any(1)
    for p in range(Z.shape[0]):
        assert abs(float((A[p] * y).sum())) <= 1e-12 * (1 + float(A[p].abs().sum()))
        assert bool(((A[p] >= 0) & (A[p] <= U[p])).all())
        if has_interior[p]:
            # bound coordinates stay exactly where they were unless the interior ones
            # could not absorb the residual (then the Euclidean projection is used)
            same = torch.equal(A[p][at_bound[p]], Zc[p][at_bound[p]])
            ref = torch.as_tensor(
                _brute_projection(Zc[p].numpy(), y.numpy(), U[p].numpy())
            )
            assert same or torch.allclose(A[p], ref, atol=1e-10)


def test_project_face_in_row_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # on the CPU the rows are projected in blocks (forced to 2 rows here): each row
    # as in one block, and on the face of its clipped point or the brute projection
    from torchsvm.solvers import ipm

    Z, y, U = _problem(4)
    one = project_face(Z, y, U)
    monkeypatch.setattr(ipm, "_CPU_BLOCK_BYTES", 2 * Z.shape[1] * 8)
    monkeypatch.setattr(ipm, "_MIN_BLOCK_ROWS", 2)
    assert ipm.row_block_size(Z.shape[0], Z.shape[1], Z.dtype, Z.device) == 2
    blocks = project_face(Z, y, U)
    torch.testing.assert_close(blocks, one, rtol=0.0, atol=1e-12)
    assert bool(((blocks >= 0) & (blocks <= U)).all())
    assert float((blocks * y).sum(1).abs().max()) <= 1e-12 * (1 + float(Z.abs().sum()))


def _hinge_objective(g: np.ndarray, y: np.ndarray, u: np.ndarray, b: float) -> float:
    return float((u * np.maximum(0.0, 1.0 - y * (g + b))).sum())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_optimal_intercept_minimises_the_hinge_loss(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 25
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    G = rng.normal(size=(4, n))
    U = rng.uniform(0.1, 1.0, (4, n))
    b = optimal_intercept(
        torch.tensor(G), torch.tensor(y), torch.tensor(U), None
    ).numpy()
    for p in range(4):
        # the objective is piecewise linear with breakpoints y_i - g_i: its minimum is at one
        cand = y - G[p]
        vals = np.array([_hinge_objective(G[p], y, U[p], t) for t in cand])
        best = vals.min()
        assert _hinge_objective(G[p], y, U[p], float(b[p])) <= best + 1e-12 * max(
            1.0, best
        )
        # midpoint rule: b lies between the smallest and largest minimising breakpoints
        argmins = cand[vals <= best + 1e-12 * max(1.0, best)]
        assert argmins.min() - 1e-12 <= b[p] <= argmins.max() + 1e-12


def test_optimal_intercept_with_diagonal_shift_brute_force() -> None:
    rng = np.random.default_rng(7)
    n = 20
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    G = rng.normal(size=(2, n))
    S = np.full((2, n), 0.5)
    U = np.full((2, n), np.inf)
    b = optimal_intercept(
        torch.tensor(G), torch.tensor(y), torch.tensor(U), torch.tensor(S)
    ).numpy()

    def huber(p: int, t: float) -> float:
        xi = np.maximum(0.0, 1.0 - y * (G[p] + t))
        return float((xi * xi / (2 * S[p])).sum())

    for p in range(2):
        grid = np.linspace(b[p] - 1e-3, b[p] + 1e-3, 201)
        assert huber(p, float(b[p])) <= min(huber(p, t) for t in grid) + 1e-12


def test_duality_gap_zero_at_libsvm_optimum_and_positive_elsewhere() -> None:
    X, y = contract_data(40, 3, seed=1)
    C = 1.0
    ref = SVC(kernel="linear", C=C, tol=1e-12).fit(X, y)
    a = np.zeros(len(y))
    a[ref.support_] = np.abs(ref.dual_coef_[0])
    K = X @ X.T
    Q = K * y[:, None] * y[None, :]
    A = torch.tensor(a)[None, :]
    U = torch.full((1, len(y)), C, dtype=torch.float64)
    yt = torch.tensor(y)
    primal, dual, rel, b = duality_gap(A, A @ torch.tensor(Q), yt, U, None)
    assert (
        float(rel[0]) <= 1e-6
    )  # libsvm stops at tol=1e-12 on its KKT gap, not exactly
    np.testing.assert_allclose(float(b[0]), float(ref.intercept_[0]), atol=1e-5)
    # a feasible non-optimal point: half the optimum (y^T a = 0 still holds)
    A2 = 0.5 * A
    p2, d2, rel2, _ = duality_gap(A2, A2 @ torch.tensor(Q), yt, U, None)
    w = (0.5 * a * y) @ X
    f = X @ w
    primal_ref = 0.5 * w @ w + min(
        (C * np.maximum(0.0, 1.0 - y * (f + t))).sum() for t in y - f
    )
    np.testing.assert_allclose(float(p2[0]), primal_ref, rtol=1e-10)
    np.testing.assert_allclose(
        float(d2[0]), 0.5 * a.sum() - 0.125 * a @ Q @ a, rtol=1e-10
    )
    assert float(rel2[0]) > 1e-3


def test_duality_gap_at_a_given_intercept_bounds_the_optimal_one() -> None:
    # any intercept gives a primal value >= the one at the optimal intercept, so the
    # (absolute) gap evaluated there is an upper bound of the gap, equal at the optimum
    Z, y, U = _problem(4, P=6, n=40)
    A = project_feasible(Z, y, U)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(40, 3, generator=g, dtype=torch.float64)
    Q = (X @ X.T) * y[:, None] * y[None, :]
    QA = A @ Q
    p0, d0, rel0, b0 = duality_gap(A, QA, y, U, None)
    for shift in (-0.5, 0.1, 2.0):
        p1, d1, rel1, b1 = duality_gap(A, QA, y, U, None, b=b0 + shift)
        torch.testing.assert_close(b1, b0 + shift)
        torch.testing.assert_close(d1, d0)
        assert bool((p1 - d1 >= p0 - d0 - 1e-12).all())
        assert bool((p1 > p0 + 1e-9).any())  # the shift is not a no-op
    p2, _, rel2, _ = duality_gap(A, QA, y, U, None, b=b0)
    torch.testing.assert_close(p2, p0)
    torch.testing.assert_close(rel2, rel0)
