"""Batched SMO for dense kernels (torchsvm/solvers/smo.py; issue 14, S8 RBF)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from tests.helpers import assert_svm_close, decision_values, primal_dual_gap
from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver, _scale_stages
from torchsvm.solvers.smo import (
    gradient,
    kkt_violation,
    smo_path,
    smo_solve,
    use_smo,
)

C_GRID = 2.0 ** np.arange(-3, 4, 2)


def _data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(
        n, d, n_informative=min(d, 4), n_redundant=0, flip_y=0.1, random_state=seed
    )
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


def _counts(n: int, B: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)])


def _problem(
    n: int, B: int, seed: int, dtype: str = "float64"
) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray]:
    X, y = _data(n, 5, seed)
    counts = _counts(n, B, seed)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID, counts, kernel="rbf", gamma="scale", dtype=dtype
    )
    return prob, X, y, counts


def _libsvm_decision(
    prob: BatchedSvmProblem, X: np.ndarray, y: np.ndarray, counts: np.ndarray, p: int
) -> np.ndarray:
    c = int(prob.index["c_idx"][p])
    r = int(prob.index["rep_idx"][p])
    ref = SVC(C=C_GRID[c], gamma=prob.gamma, tol=1e-10, max_iter=10**7)
    return ref.fit(X, y, sample_weight=counts[r]).decision_function(X)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_smo_matches_libsvm(dtype: str) -> None:
    prob, X, y, counts = _problem(100, 2, seed=1, dtype=dtype)
    tol = 1e-7 if dtype == "float64" else 1e-5
    sol = BoxQpSolver(SolverConfig(tol=tol), smo=True)(prob)
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= tol
    # the gap recomputed independently (numpy, float64) from alpha and b
    assert float(primal_dual_gap(prob, sol).max()) <= (
        1e-6 if dtype == "float64" else 1e-4
    )
    F = decision_values(prob, sol, X)
    rtol = 1e-4 if dtype == "float64" else 1e-3
    for p in range(prob.n_problems):
        assert_svm_close(F[p], _libsvm_decision(prob, X, y, counts, p), rtol, f"p={p}")
    A, U = sol.alpha.double(), prob.U.double()
    assert bool((A >= 0).all()) and bool((A <= U).all())
    assert bool((A[U == 0] == 0).all())  # out-of-bag rows stay at 0
    yA = (A * prob.y.double()).sum(1).abs()
    assert float(yA.max()) <= 1e-10 * float(U.sum(1).max()) * (
        1 if dtype == "float64" else 1e5
    )


def test_smo_matches_dense_active_set() -> None:
    prob, _, _, _ = _problem(80, 2, seed=2)
    s_smo = BoxQpSolver(SolverConfig(tol=1e-9), smo=True)(prob)
    s_pdas = BoxQpSolver(SolverConfig(tol=1e-9), smo=False)(prob)
    assert bool(s_smo.converged.all()) and bool(s_pdas.converged.all())
    np.testing.assert_allclose(
        s_smo.dual.numpy(), s_pdas.dual.numpy(), rtol=1e-8, atol=1e-10
    )


def test_smo_solve_reaches_eps_and_keeps_gradient() -> None:
    X, y = _data(60, 3, seed=4)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    K = compute_kernel(Xt, kernel="rbf", gamma=0.3)
    U = torch.as_tensor(_counts(60, 4, 4), dtype=torch.float64) * 2.0
    for shrink in (True, False):
        A, G, it, viol = smo_solve(K, yt, U, eps=1e-6, shrink=shrink)
        assert bool((viol < 1e-6).all()) and bool((it > 0).all())
        # (numpy's assert: torch.testing imports torch.distributed, ~10 s)
        np.testing.assert_allclose(G.numpy(), gradient(K, yt, A).numpy(), atol=1e-10)
        np.testing.assert_array_equal(
            kkt_violation(A, G, yt, U)[0].numpy(), viol.numpy()
        )
        assert float((A * yt).sum(1).abs().max()) <= 1e-12
        assert bool((A >= 0).all()) and bool((A <= U).all())


def test_c_path_warm_start_equals_cold_solve() -> None:
    prob, _, _, _ = _problem(80, 2, seed=5)
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    path = smo_path(K, prob.y, prob.U, _scale_stages(prob), tol=1e-8)
    cold = smo_path(K, prob.y, prob.U, None, tol=1e-8)
    assert bool(path[2].all()) and bool(cold[2].all())
    np.testing.assert_allclose(path[5].numpy(), cold[5].numpy(), rtol=1e-7)


def test_one_class_left_after_bootstrap_is_a_clear_error() -> None:
    X, y = _data(40, 3, seed=6)
    counts = np.ones((2, 40), dtype=int)
    counts[1, y > 0] = 0  # replicate 1 drew no positive row
    with pytest.raises(ValueError, match="one class left"):
        BatchedSvmProblem.from_bootstrap(X, y, [1.0], counts, kernel="rbf")


def test_single_in_bag_row_per_class_is_solved() -> None:
    # a replicate with one positive and one negative row: the only feasible points
    # have a_+ = a_-; both reach the bound min(u_+, u_-) at small C
    X, y = _data(30, 3, seed=7)
    counts = np.zeros((1, 30), dtype=int)
    counts[0, np.flatnonzero(y > 0)[0]] = 1
    counts[0, np.flatnonzero(y < 0)[:3]] = [1, 2, 1]
    prob = BatchedSvmProblem.from_bootstrap(X, y, [0.1, 10.0], counts, kernel="rbf")
    sol = BoxQpSolver(SolverConfig(tol=1e-9), smo=True)(prob)
    assert bool(sol.converged.all())
    F = decision_values(prob, sol, X)
    for p in range(2):
        ref = SVC(C=[0.1, 10.0][p], gamma=prob.gamma, tol=1e-10)
        f_ref = ref.fit(X, y, sample_weight=counts[0]).decision_function(X)
        assert_svm_close(F[p], f_ref, 1e-5, f"p={p}")


def test_diagonal_shift_and_infinite_bounds_go_to_the_active_set() -> None:
    # S1b problems (u = inf, a diagonal shift) are outside SMO's box: BoxQpSolver must
    # not send them there, and still solve them
    X, y = _data(60, 3, seed=8)
    prob = BatchedSvmProblem.from_diag_shift(
        X, y, [0.5, 2.0], [1.0, 0.25], kernel="rbf"
    )
    sol = BoxQpSolver(SolverConfig(tol=1e-8), smo=True)(prob)
    assert bool(sol.converged.all())
    with pytest.raises(ValueError, match="finite upper bounds"):
        K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
        smo_solve(K, prob.y, prob.U)


def test_smo_on_device_matches_cpu(device: str) -> None:
    # the same solve on the requested device (cuda only where available, marker gpu)
    prob, _, _, _ = _problem(60, 2, seed=9)
    s_cpu = BoxQpSolver(SolverConfig(tol=1e-8), smo=True)(prob)
    s_dev = BoxQpSolver(SolverConfig(tol=1e-8), smo=True)(prob.to(device))
    assert bool(s_dev.converged.all())
    assert s_dev.alpha.device.type == torch.device(device).type
    np.testing.assert_allclose(
        s_dev.dual.cpu().numpy(), s_cpu.dual.numpy(), rtol=1e-7, atol=1e-10
    )


def test_init_warm_start_reaches_the_same_optimum() -> None:
    prob, _, _, _ = _problem(60, 2, seed=10)
    solver = BoxQpSolver(SolverConfig(tol=1e-8), smo=True)
    cold = solver(prob)
    # an infeasible start (scaled past the bounds) is projected first
    warm = solver(prob, init=cold.alpha * 1.5)
    assert bool(warm.converged.all())
    np.testing.assert_allclose(warm.dual.numpy(), cold.dual.numpy(), rtol=1e-7)
    with pytest.raises(ValueError, match="init must have shape"):
        solver(prob, init=cold.alpha[:, :10])


def test_use_smo_rule() -> None:
    prob, _, _, _ = _problem(40, 1, seed=11)
    assert use_smo(prob, True)
    assert not use_smo(prob, False)
    X, y = _data(40, 3, seed=11)
    s1b = BatchedSvmProblem.from_diag_shift(X, y, [1.0], [1.0], kernel="rbf")
    assert not use_smo(s1b, True)  # u = inf: outside SMO's box


def test_auto_rule_follows_the_measured_sizes() -> None:
    from torchsvm.solvers import smo

    small, _, _, _ = _problem(40, 1, seed=12)
    assert not use_smo(small, None)  # below _AUTO_MIN_N: the active set alone
    n = smo._AUTO_MIN_N
    X, y = _data(n, 3, seed=12)
    C = np.full(smo._AUTO_MIN_P, 1.0)
    mid = BatchedSvmProblem.from_weights(X, y, C=C, kernel="rbf")
    assert use_smo(mid, None)
    assert not use_smo(mid.select(slice(0, 1)), None)  # one problem: the active set
    lin = BatchedSvmProblem.from_weights(X, y, C=C, kernel="linear")
    assert not use_smo(lin, None)


# ------------------------------------------------------- regressions of a review


def _weighted(
    X: np.ndarray,
    y: np.ndarray,
    C: list[float],
    w: np.ndarray | None = None,
    dtype: str = "float64",
) -> BatchedSvmProblem:
    return BatchedSvmProblem.from_weights(
        X, y, C=C, sample_weight=w, kernel="rbf", gamma="scale", dtype=dtype
    )


def _assert_matches_libsvm(
    prob: BatchedSvmProblem,
    X: np.ndarray,
    y: np.ndarray,
    C: list[float],
    w: np.ndarray | None,
    A: torch.Tensor,
    b: torch.Tensor,
    rtol: float,
) -> None:
    K = compute_kernel(prob.X.double(), kernel="rbf", gamma=prob.gamma)
    F = (A.double() * prob.y.double()) @ K + b.double()[:, None]
    for p, c in enumerate(C):
        ref = SVC(C=c, gamma=prob.gamma, tol=1e-10, max_iter=10**7)
        f_ref = ref.fit(X, y, sample_weight=w).decision_function(X)
        assert_svm_close(F[p].numpy(), f_ref, rtol, f"C={c}")
    U = prob.U.double()
    assert bool(torch.isfinite(A).all())
    assert bool((A >= 0).all()) and bool((A.double() <= U).all())
    assert bool((A[U == 0] == 0).all())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_all_at_bound_solution_is_finite_and_matches_libsvm(dtype: str) -> None:
    # C so small that every in-bag coordinate ends at its bound (no free support
    # vector: b is the midpoint of libsvm's interval). Before the fix, float32 gave
    # NaN: a row with I_up or I_low empty still rewrote v at an arbitrary j
    X, y = _data(80, 4, seed=0)
    C = [1e-4, 1e-3]
    prob = _weighted(X, y, C, dtype=dtype)
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    tol = 1e-7 if dtype == "float64" else 1e-5
    A, b, ok, it, *_ = smo_path(K, prob.y, prob.U, None, tol=tol)
    assert bool(ok.all())
    # NOTE: the certificate is relative to max(|primal|, 1), so at C = 1e-4 it is an
    # absolute gap and b agrees with libsvm's only to ~4e-5 (rtol as in the other
    # tests of this file)
    rtol = 1e-4 if dtype == "float64" else 1e-3
    _assert_matches_libsvm(prob, X, y, C, None, A, b, rtol)
    sol = BoxQpSolver(SolverConfig(tol=tol), smo=True)(prob)
    assert bool(sol.converged.all())
    _assert_matches_libsvm(prob, X, y, C, None, sol.alpha, sol.b, rtol)


def test_row_that_converges_between_checks_stops() -> None:
    # row 0 has 4 in-bag rows and needs 2 steps; row 1 needs hundreds. Before
    # the fix, row 0 went on stepping until the next check (64 iterations here),
    # with a bogus j once it had no violating pair left
    X, y = _data(60, 3, seed=7)
    yt = torch.as_tensor(y)
    K = compute_kernel(torch.as_tensor(X), kernel="rbf", gamma=0.3)
    U = torch.ones((2, 60), dtype=torch.float64)
    U[0] = 0.0
    U[0, np.flatnonzero(y > 0)[0]] = 1.0
    U[0, np.flatnonzero(y < 0)[:3]] = 2.0
    alone = smo_solve(K, yt, U[:1], eps=1e-9, check_every=1)
    A, G, it, viol = smo_solve(K, yt, U, eps=1e-9, check_every=64)
    assert int(it[0]) == int(alone[2][0]) <= 3
    assert bool((viol < 1e-9).all())
    np.testing.assert_allclose(A[0].numpy(), alone[0][0].numpy(), atol=1e-12)


def test_max_iter_bounds_every_resumption_together() -> None:
    # row 0 (small C) is certified early, row 1 (large C) is resumed: before the
    # fix each resumption had a fresh budget (200 iterations for max_iter = 100), and
    # row 0 came back NaN in float64 too (the bogus-j bug above)
    X, y = _data(80, 4, seed=0)
    prob = _weighted(X, y, [0.05, 50.0])
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    kw = dict(tol=1e-12, eps=1e-1, refine=3)
    full = smo_path(K, prob.y, prob.U, None, **kw)
    assert bool(full[2].all()) and bool(torch.isfinite(full[0]).all())
    A, b, ok, it, *_ = smo_path(K, prob.y, prob.U, None, **kw, max_iter=100)
    assert int(it.max()) <= 100 < int(full[3][1])
    assert bool(ok[0]) and not bool(ok[1])
    assert bool((A >= 0).all()) and bool((A <= prob.U).all())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", ["same_label", "opposite_label", "zero_weight"])
def test_duplicates_and_zero_weights_match_libsvm(case: str, dtype: str) -> None:
    # duplicate rows make pair curvatures 0 (libsvm's tau step); opposite labels on
    # identical rows force both to their bounds; a zero weight fixes the row at 0
    X, y = _data(70, 4, seed=13)
    w = None
    if case == "same_label":
        X, y = np.vstack([X, X[:10]]), np.concatenate([y, y[:10]])
    elif case == "opposite_label":
        X, y = np.vstack([X, X[:10]]), np.concatenate([y, -y[:10]])
    else:
        w = np.ones(70)
        w[:5], w[5:10] = 0.0, 3.0
    C = [0.5, 20.0]
    prob = _weighted(X, y, C, w, dtype)
    tol = 1e-7 if dtype == "float64" else 1e-5
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    A, b, ok, *_ = smo_path(K, prob.y, prob.U, None, tol=tol)
    assert bool(ok.all())
    rtol = 1e-4 if dtype == "float64" else 1e-3
    _assert_matches_libsvm(prob, X, y, C, w, A, b, rtol)


@pytest.mark.slow
def test_large_c_matches_libsvm() -> None:
    # nearly hard margin: few bounded coordinates, many SMO iterations
    X, y = _data(80, 4, seed=0)
    C = [1e3, 1e5]
    prob = _weighted(X, y, C)
    sol = BoxQpSolver(SolverConfig(tol=1e-8), smo=True)(prob)
    assert bool(sol.converged.all())
    _assert_matches_libsvm(prob, X, y, C, None, sol.alpha, sol.b, 1e-4)


@pytest.mark.parametrize(
    ("n", "P", "expected"),
    [
        (255, 100, False),
        (256, 100, True),
        (256, 99, False),
        (4500, 100, True),
        (4501, 100, False),
    ],
)
def test_auto_rule_at_the_thresholds(n: int, P: int, expected: bool) -> None:
    X, y = _data(n, 3, seed=14)
    prob = BatchedSvmProblem.from_weights(X, y, C=np.ones(P), kernel="rbf")
    assert use_smo(prob, None) is expected


@pytest.mark.slow  # ~8 s under load
def test_auto_smo_at_the_lower_threshold_matches_the_active_set() -> None:
    # n = 256, 100 problems: the default rule picks the SMO pre-pass
    n = 256
    X, y = _data(n, 4, seed=15)
    counts = _counts(n, 25, seed=15)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID, counts, kernel="rbf", gamma="scale"
    )
    assert use_smo(prob, None)
    s_auto = BoxQpSolver(SolverConfig(tol=1e-8))(prob)
    s_pdas = BoxQpSolver(SolverConfig(tol=1e-8), smo=False)(prob)
    assert bool(s_auto.converged.all()) and bool(s_pdas.converged.all())
    np.testing.assert_allclose(
        s_auto.dual.numpy(), s_pdas.dual.numpy(), rtol=1e-7, atol=1e-10
    )


@pytest.mark.slow  # ~10 s under load
def test_wide_faces_after_smo_go_to_the_staged_active_set(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # nursery's faces from SMO's point (~2300 free coordinates) are solved by the
    # staged active set from its own starts; here the threshold is lowered to 4
    import logging

    import torchsvm.solvers.box_qp as box_qp

    monkeypatch.setattr(box_qp, "_PDAS_WIDE_FACE", 4)
    n = 256
    X, y = _data(n, 4, seed=16)
    counts = _counts(n, 25, seed=16)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C_GRID, counts, kernel="rbf", gamma="scale"
    )
    assert use_smo(prob, None)
    with caplog.at_level(logging.INFO, logger="torchsvm.solvers.box_qp"):
        sol = BoxQpSolver(SolverConfig(tol=1e-8))(prob)
    assert "the active set solves the" in caplog.text
    assert bool(sol.converged.all())
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    Q = K * prob.y[:, None] * prob.y[None, :]
    dual = sol.alpha.sum(1) - 0.5 * ((sol.alpha @ Q) * sol.alpha).sum(1)
    reps = prob.index["rep_idx"].numpy()
    Cs = prob.C.numpy()
    for p in range(0, prob.n_problems, 17):
        w = counts[reps[p]].astype(float)
        keep = np.flatnonzero(w > 0)
        svc = SVC(C=Cs[p], gamma=prob.gamma, tol=1e-8).fit(
            X[keep], y[keep], sample_weight=w[keep]
        )
        a = np.zeros(n)
        a[keep[svc.support_]] = np.abs(svc.dual_coef_[0])
        at = torch.tensor(a)
        ref = float(at.sum() - 0.5 * at @ Q.double() @ at)
        assert abs(float(dual[p]) - ref) <= 1e-6 * max(1.0, abs(ref))
