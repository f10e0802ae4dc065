"""Batched dual solver against its oracles (libsvm, HiGHS QP, cvxpylayers, brute identities)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.exceptions import DataError
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver, merge_duplicate_rows
from torchsvm.solvers.factor import build_factor
from torchsvm.solvers.kkt import duality_gap

TOL_F = 1e-3  # decision values: max|df| <= TOL_F * max(1, max|f|)  (issue #2, SPEC S8)
TOL_GAP = 1e-6


def _breast_cancer(n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    if n is not None:
        idx = np.random.default_rng(0).permutation(len(y))[:n]
        X, y = X[idx], y[idx]
    return X, y


def _synthetic(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(
        n,
        d,
        n_informative=min(d - 1, 5) if d > 2 else 1,
        n_redundant=0,
        flip_y=0.05,
        random_state=seed,
    )
    return StandardScaler().fit_transform(X), np.where(y == 1, 1.0, -1.0)


def _scores(prob: BatchedSvmProblem, sol, X: np.ndarray) -> np.ndarray:
    Xt = torch.as_tensor(X, dtype=prob.dtype, device=prob.device)
    return (
        sol.decision_function(
            prob.X,
            prob.y,
            Xt,
            kernel=prob.kernel,
            gamma=prob.gamma,
            degree=prob.degree,
            coef0=prob.coef0,
        )
        .cpu()
        .numpy()
    )


def _assert_close_to_libsvm(f_ours: np.ndarray, f_ref: np.ndarray) -> None:
    err = np.abs(f_ours - f_ref).max()
    assert err <= TOL_F * max(1.0, np.abs(f_ref).max()), err


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("data", ["breast_cancer", "synthetic"])
def test_box_qp_matches_libsvm(kernel: str, data: str, device: str, seed: int) -> None:
    X, y = _breast_cancer(150) if data == "breast_cancer" else _synthetic(150, 20, seed)
    rng = np.random.default_rng(seed)
    counts = np.stack(
        [
            np.bincount(rng.integers(0, len(y), len(y)), minlength=len(y))
            for _ in range(3)
        ]
    )
    Cs = np.array([2.0**-5, 1.0, 2.0**5])
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, Cs, counts, kernel=kernel, device=device
    )
    sol = BoxQpSolver()(prob)
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= TOL_GAP
    F = _scores(prob, sol, X)
    c_idx, rep_idx = (
        prob.index["c_idx"].cpu().numpy(),
        prob.index["rep_idx"].cpu().numpy(),
    )
    for p in range(prob.n_problems):
        ref = SVC(kernel=kernel, C=Cs[c_idx[p]], gamma="scale", tol=1e-8)
        ref.fit(X, y, sample_weight=counts[rep_idx[p]])
        _assert_close_to_libsvm(F[p], ref.decision_function(X))


def test_box_qp_matches_libsvm_poly() -> None:
    X, y = _synthetic(120, 4)
    prob = BatchedSvmProblem.from_weights(
        X, y, [0.5, 4.0], kernel="poly", gamma=0.5, degree=2, coef0=1.0
    )
    sol = BoxQpSolver()(prob)
    F = _scores(prob, sol, X)
    for p, C in enumerate([0.5, 4.0]):
        ref = SVC(kernel="poly", C=C, gamma=0.5, degree=2, coef0=1.0, tol=1e-8).fit(
            X, y
        )
        _assert_close_to_libsvm(F[p], ref.decision_function(X))


def test_batched_equals_single_solves() -> None:
    X, y = _synthetic(80, 5)
    rng = np.random.default_rng(1)
    W = rng.integers(0, 3, size=(4, 80)).astype(float)
    W[:, :2] = 1.0
    y[:2] = [1.0, -1.0]
    Cs = np.array([0.1, 1.0, 3.0, 10.0])
    prob = BatchedSvmProblem.from_weights(X, y, Cs, W, kernel="rbf")
    sol = BoxQpSolver()(prob)
    F = _scores(prob, sol, X)
    for p in range(4):
        single = BatchedSvmProblem.from_weights(
            X, y, Cs[p : p + 1], W[p : p + 1], kernel="rbf"
        )
        s1 = BoxQpSolver()(single)
        np.testing.assert_allclose(
            F[p], _scores(single, s1, X)[0], atol=1e-4 * max(1, np.abs(F[p]).max())
        )


def test_integer_weights_equal_repeated_rows() -> None:
    X, y = _synthetic(60, 4, seed=3)
    w = np.random.default_rng(3).integers(1, 4, size=60)
    Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
    for kernel in ("linear", "rbf"):
        pw = BatchedSvmProblem.from_weights(
            X, y, [2.0], w[None, :], kernel=kernel, gamma=0.3
        )
        pr = BatchedSvmProblem.from_weights(Xr, yr, [2.0], kernel=kernel, gamma=0.3)
        fw = _scores(pw, BoxQpSolver()(pw), X)
        fr = _scores(pr, BoxQpSolver()(pr), X)
        np.testing.assert_allclose(fw, fr, atol=1e-4 * max(1, np.abs(fr).max()))


def test_zero_weight_gives_zero_alpha() -> None:
    X, y = _synthetic(70, 4)
    W = np.ones((2, 70))
    W[:, ::3] = 0.0
    prob = BatchedSvmProblem.from_weights(X, y, [1.0, 10.0], W, kernel="rbf")
    sol = BoxQpSolver()(prob)
    assert torch.all(sol.alpha[:, ::3] == 0)
    # and equals the fit on the kept rows only
    keep = W[0] > 0
    sub = BatchedSvmProblem.from_weights(
        X[keep], y[keep], [1.0, 10.0], kernel="rbf", gamma=prob.gamma
    )
    np.testing.assert_allclose(
        _scores(prob, sol, X), _scores(sub, BoxQpSolver()(sub), X), atol=1e-4
    )


def test_row_permutation_leaves_solution_unchanged() -> None:
    X, y = _synthetic(90, 5)
    perm = np.random.default_rng(0).permutation(90)
    p1 = BatchedSvmProblem.from_weights(X, y, [1.0], kernel="linear")
    p2 = BatchedSvmProblem.from_weights(X[perm], y[perm], [1.0], kernel="linear")
    s1, s2 = BoxQpSolver()(p1), BoxQpSolver()(p2)
    np.testing.assert_allclose(s1.w.numpy(), s2.w.numpy(), atol=1e-5)
    np.testing.assert_allclose(s1.b.numpy(), s2.b.numpy(), atol=1e-5)


def test_feasibility_and_certificate() -> None:
    X, y = _synthetic(100, 6)
    prob = BatchedSvmProblem.from_weights(X, y, [0.03, 1.0, 30.0], kernel="rbf")
    sol = BoxQpSolver()(prob)
    A = sol.alpha
    assert torch.all(A >= 0) and torch.all(A <= prob.U + 1e-12)
    assert torch.all((A * prob.y).sum(1).abs() <= 1e-9 * prob.U.sum(1))
    assert torch.all(sol.primal >= sol.dual - 1e-9)


def test_box_qp_matches_highs_qp() -> None:
    from torchsvm.mip.model import MipModel
    from torchsvm.mip.solve import solve_model

    X, y = _synthetic(28, 3, seed=5)
    prob = BatchedSvmProblem.from_weights(X, y, [0.5, 5.0], kernel="rbf")
    sol = BoxQpSolver()(prob)
    Q = (build_factor(prob).matvec(torch.eye(28, dtype=torch.float64))).numpy()
    for p, C in enumerate([0.5, 5.0]):
        res = solve_model(
            MipModel(
                c=-np.ones(28),
                A=y[None, :],
                row_lower=np.zeros(1),
                row_upper=np.zeros(1),
                col_lower=np.zeros(28),
                col_upper=np.full(28, C),
                Q=0.5 * (Q + Q.T),
            )
        )
        np.testing.assert_allclose(
            -float(sol.dual[p]), res.objective, rtol=1e-6, atol=1e-8
        )


def test_diag_shift_variant_matches_highs_qp() -> None:
    """SPEC S1b: no upper bound, K_ii += lambda per class."""
    from torchsvm.mip.model import MipModel
    from torchsvm.mip.solve import solve_model

    X, y = _synthetic(25, 3, seed=6)
    lam_neg, lam_pos = np.array([0.5, 2.0]), np.array([0.1, 1.0])
    prob = BatchedSvmProblem.from_diag_shift(X, y, lam_neg, lam_pos, kernel="rbf")
    sol = BoxQpSolver()(prob)
    assert bool(sol.converged.all())
    Q = (build_factor(prob).matvec(torch.eye(25, dtype=torch.float64))).numpy()
    for p in range(2):
        s = np.where(y > 0, lam_pos[p], lam_neg[p])
        res = solve_model(
            MipModel(
                c=-np.ones(25),
                A=y[None, :],
                row_lower=np.zeros(1),
                row_upper=np.zeros(1),
                col_lower=np.zeros(25),
                col_upper=np.full(25, np.inf),
                Q=0.5 * (Q + Q.T) + np.diag(s),
            )
        )
        np.testing.assert_allclose(-float(sol.dual[p]), res.objective, rtol=1e-6)


def test_box_qp_matches_cvxpylayers() -> None:
    pytest.importorskip("cvxpylayers")
    from torchsvm.solvers.cvxpy_ref import solve_dual_cvxpylayers

    X, y = _synthetic(24, 3, seed=7)
    rng = np.random.default_rng(7)
    U = rng.uniform(0.2, 3.0, size=(3, 24))
    prob = BatchedSvmProblem.from_bounds(X, y, U, kernel="linear")
    sol = BoxQpSolver()(prob)
    Q = (X @ X.T) * np.outer(y, y)
    A = solve_dual_cvxpylayers(Q, y, U)
    obj = 0.5 * np.einsum("pi,ij,pj->p", A, Q, A) - A.sum(1)
    np.testing.assert_allclose(-sol.dual.numpy(), obj, rtol=1e-5, atol=1e-6)
    w_ref = (A * y) @ X
    np.testing.assert_allclose(
        sol.w.numpy(), w_ref, atol=2e-3 * max(1, np.abs(w_ref).max())
    )


def test_first_order_fallback_matches_admm() -> None:
    X, y = _synthetic(120, 4)
    prob = BatchedSvmProblem.from_weights(X, y, [0.1, 1.0], kernel="rbf")
    s_admm = BoxQpSolver()(prob)
    s_fista = BoxQpSolver(SolverConfig(method="fista", tol=1e-6, max_iter=100000))(prob)
    assert bool(s_fista.converged.all())
    np.testing.assert_allclose(
        _scores(prob, s_fista, X), _scores(prob, s_admm, X), atol=2e-3
    )


def test_chunking_gives_the_same_result() -> None:
    X, y = _synthetic(80, 4)
    prob = BatchedSvmProblem.from_weights(X, y, np.geomspace(0.1, 10, 6), kernel="rbf")
    whole = BoxQpSolver()(prob)
    chunked = BoxQpSolver(SolverConfig(memory_bytes=60_000))(prob)
    np.testing.assert_allclose(
        _scores(prob, chunked, X), _scores(prob, whole, X), atol=1e-5
    )


def test_warm_start_converges_faster() -> None:
    X, y = _synthetic(100, 5)
    prob = BatchedSvmProblem.from_weights(X, y, [1.0, 2.0], kernel="rbf")
    cold = BoxQpSolver()(prob)
    warm = BoxQpSolver()(prob, init=cold)
    assert bool(warm.converged.all())
    assert int(warm.n_iter.max()) <= int(cold.n_iter.max())


def test_float32_is_close_to_float64() -> None:
    X, y = _synthetic(100, 4)
    p64 = BatchedSvmProblem.from_weights(X, y, [1.0], kernel="rbf")
    p32 = p64.to(dtype=torch.float32)
    s32 = BoxQpSolver(SolverConfig(tol=1e-4))(p32)
    f64 = _scores(p64, BoxQpSolver()(p64), X)
    assert np.abs(_scores(p32, s32, X) - f64).max() <= 1e-2 * max(1, np.abs(f64).max())


@pytest.mark.gpu
def test_cpu_and_cuda_agree() -> None:
    X, y = _synthetic(300, 10)
    rng = np.random.default_rng(0)
    counts = np.stack(
        [np.bincount(rng.integers(0, 300, 300), minlength=300) for _ in range(4)]
    )
    res = []
    for dev in ("cpu", "cuda"):
        prob = BatchedSvmProblem.from_bootstrap(
            X, y, [0.1, 10.0], counts, kernel="rbf", device=dev
        )
        res.append(_scores(prob, BoxQpSolver()(prob), X))
    np.testing.assert_allclose(res[0], res[1], atol=1e-4 * max(1, np.abs(res[0]).max()))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": np.array([[np.nan, 1.0], [0.0, 1.0]]), "y": [1, -1]}, "NaN"),
        ({"X": np.array([[np.inf, 1.0], [0.0, 1.0]]), "y": [1, -1]}, "NaN or infinite"),
        ({"X": np.zeros((0, 2)), "y": []}, "empty"),
        ({"X": np.zeros((3, 2)), "y": [1, 1, 1]}, "single class"),
        ({"X": np.zeros((3, 2)), "y": [1, -1, 2]}, "-1/\\+1"),
        ({"X": np.zeros((3, 2)), "y": [1, -1]}, "3 samples but y has 2"),
        ({"X": np.eye(3), "y": [1, -1, 1], "C": [0.0]}, "C must be finite and > 0"),
        (
            {"X": np.eye(3), "y": [1, -1, 1], "sample_weight": [[1, -1, 1]]},
            "non-negative",
        ),
        ({"X": np.eye(3), "y": [1, -1, 1], "sample_weight": [[0, 0, 0]]}, "all zero"),
        ({"X": np.eye(3), "y": [1, -1, 1], "sample_weight": [[0, 1, 0]]}, "class \\+1"),
        ({"X": np.eye(3), "y": [1, -1, 1], "sample_weight": [[1, 1]]}, "shape"),
    ],
)
def test_bad_input_gives_specific_errors(kwargs: dict, match: str) -> None:
    args = {"C": [1.0], "sample_weight": None, **kwargs}
    with pytest.raises(DataError, match=match):
        BatchedSvmProblem.from_weights(
            args["X"], args["y"], args["C"], args["sample_weight"]
        )


def test_unknown_kernel_and_missing_cuda() -> None:
    with pytest.raises(ValueError, match="unknown kernel"):
        BatchedSvmProblem.from_weights(np.eye(2), [1, -1], [1.0], kernel="sigmoid")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            BatchedSvmProblem.from_weights(np.eye(2), [1, -1], [1.0], device="cuda")


# ------------------------------------------------------------------ interior point
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ipm_agrees_with_admm_on_bootstrap_batch(dtype: torch.dtype) -> None:
    X, y = _synthetic(300, 6, seed=3)
    rng = np.random.default_rng(3)
    counts = np.stack(
        [np.bincount(rng.integers(0, 300, 300), minlength=300) for _ in range(4)]
    )
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, 2.0 ** np.arange(-5, 6, 2), counts, kernel="linear", dtype=dtype
    )
    tol = 1e-7 if dtype == torch.float64 else 1e-4
    s_ipm = BoxQpSolver(SolverConfig(method="ipm", ipm_after=0, tol=tol))(prob)
    s_admm = BoxQpSolver(SolverConfig(method="admm", tol=tol))(prob)
    assert bool(s_ipm.converged.all()) and bool(s_admm.converged.all())
    np.testing.assert_allclose(
        s_ipm.dual.double().numpy(),
        s_admm.dual.double().numpy(),
        rtol=10 * tol,
        atol=10 * tol,
    )
    f_ipm, f_admm = _scores(prob, s_ipm, X), _scores(prob, s_admm, X)
    assert np.abs(f_ipm - f_admm).max() <= (
        1e-4 if dtype == torch.float64 else 1e-2
    ) * max(1, np.abs(f_admm).max())
    # auto picks the interior point for the linear kernel with few features
    s_auto = BoxQpSolver()(prob.to(dtype=torch.float64))
    assert int(s_auto.n_iter.max()) < 100


def test_ipm_iterate_is_near_optimal_before_rounding() -> None:
    from torchsvm.mip.model import MipModel
    from torchsvm.mip.solve import solve_model
    from torchsvm.solvers.ipm import ipm_low_rank

    X, y = _synthetic(30, 3, seed=8)
    U = np.random.default_rng(8).uniform(0.0, 2.0, size=(2, 30))
    U[:, :5] = 0.0  # fixed at zero
    prob = BatchedSvmProblem.from_bounds(X, y, U, kernel="linear")
    F = build_factor(prob)
    a, b, n_iter, mu = ipm_low_rank(F.low_rank(), prob.y, prob.U, tol=1e-10)
    assert bool((a[:, :5] == 0).all())
    assert bool((a >= 0).all()) and bool((a <= prob.U).all())
    Q = (X @ X.T) * np.outer(y, y)
    for p in range(2):
        res = solve_model(
            MipModel(
                c=-np.ones(30),
                A=y[None, :],
                row_lower=np.zeros(1),
                row_upper=np.zeros(1),
                col_lower=np.zeros(30),
                col_upper=U[p],
                Q=Q,
            )
        )
        ap = a[p].numpy()
        obj = 0.5 * ap @ Q @ ap - ap.sum()
        np.testing.assert_allclose(obj, res.objective, rtol=1e-7, atol=1e-8)
        assert abs(float(ap @ y)) <= 1e-8
    assert int(n_iter.max()) < 60


def test_ipm_diag_shift_variant_matches_highs_qp() -> None:
    """SPEC S1b on the linear kernel: no upper bound, so the IPM has only lower bounds."""
    from torchsvm.mip.model import MipModel
    from torchsvm.mip.solve import solve_model

    X, y = _synthetic(25, 3, seed=9)
    lam_neg, lam_pos = np.array([0.5, 2.0]), np.array([0.1, 1.0])
    prob = BatchedSvmProblem.from_diag_shift(X, y, lam_neg, lam_pos, kernel="linear")
    sol = BoxQpSolver(SolverConfig(method="ipm", ipm_after=0))(prob)
    assert bool(sol.converged.all())
    Q = (X @ X.T) * np.outer(y, y)
    for p in range(2):
        s = np.where(y > 0, lam_pos[p], lam_neg[p])
        res = solve_model(
            MipModel(
                c=-np.ones(25),
                A=y[None, :],
                row_lower=np.zeros(1),
                row_upper=np.zeros(1),
                col_lower=np.zeros(25),
                col_upper=np.full(25, np.inf),
                Q=Q + np.diag(s),
            )
        )
        np.testing.assert_allclose(-float(sol.dual[p]), res.objective, rtol=1e-6)


# ------------------------------------------------------------------ active set
def test_active_set_hands_unsettled_rows_to_admm() -> None:
    X, y = _synthetic(120, 4, seed=12)
    prob = BatchedSvmProblem.from_weights(X, y, [0.5, 4.0], kernel="rbf")
    ref = BoxQpSolver(SolverConfig(method="admm"))(prob)
    capped = BoxQpSolver(SolverConfig(method="pdas", pdas_max_iter=1))(prob)
    assert bool(capped.converged.all())
    np.testing.assert_allclose(capped.dual.numpy(), ref.dual.numpy(), rtol=1e-6)


def test_active_set_factor_reuse_changes_nothing() -> None:
    from torchsvm.kernels import compute_kernel
    from torchsvm.solvers.pdas import face_kernel, pdas_dense

    X, y = _synthetic(200, 5, seed=13)
    prob = BatchedSvmProblem.from_weights(X, y, [0.25, 1.0, 8.0], kernel="rbf")
    Q = (
        compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
        * prob.y[:, None]
        * prob.y[None, :]
    )
    ff = face_kernel(prob.X, prob.y, "rbf", prob.gamma, 3, 0.0)
    out = [
        pdas_dense(Q, prob.y, prob.U, None, prob.U.clone(), face_fn=ff, reuse_factors=r)
        for r in (False, True)
    ]
    for a, b_ in zip(out[0][:3], out[1][:3], strict=True):
        np.testing.assert_allclose(a.numpy(), b_.numpy(), rtol=1e-9, atol=1e-9)
    assert bool(out[0][4].all()) and bool(out[1][4].all())


def _duplicate_heavy(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """120 distinct rows, each repeated 1-4 times (some copies with the other label)."""
    X, y = _synthetic(120, 4, seed=seed)
    rng = np.random.default_rng(seed)
    rep = rng.integers(1, 5, size=120)
    Xr, yr = np.repeat(X, rep, axis=0), np.repeat(y, rep)
    flip = rng.choice(len(yr), 15, replace=False)  # equal x, opposite labels
    yr[flip] = -yr[flip]
    perm = rng.permutation(len(yr))
    return Xr[perm], yr[perm]


def test_merge_duplicate_rows_sums_bounds_and_keeps_opposite_labels() -> None:
    X, y = _duplicate_heavy(1)
    n = len(y)
    counts = np.random.default_rng(1).integers(0, 3, size=(3, n)).astype(float)
    prob = BatchedSvmProblem.from_weights(
        X, y, [0.5, 1.0, 2.0], counts, kernel="linear"
    )
    sub, group = merge_duplicate_rows(prob)
    key = np.concatenate([X, y[:, None]], 1)
    m = len(np.unique(key, axis=0))
    assert sub.n_samples == m < n
    g = group.numpy()
    for j in range(m):  # every merged row: one (x, y), the sum of its rows' bounds
        rows = g == j
        assert len(np.unique(key[rows], axis=0)) == 1
        np.testing.assert_array_equal(sub.X[j].numpy(), X[rows][0])
        assert float(sub.y[j]) == y[rows][0]
        np.testing.assert_allclose(
            sub.U[:, j].numpy(), prob.U.numpy()[:, rows].sum(1), rtol=1e-15
        )
    distinct = BatchedSvmProblem.from_weights(X[:5], [1, -1, 1, -1, 1], [1.0])
    if len(np.unique(X[:5], axis=0)) == 5:
        assert merge_duplicate_rows(distinct) is None


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_duplicate_rows_merged_solve_matches_libsvm(kernel: str) -> None:
    # bootstrap counts on rows that repeat: the merged solve must give the original
    # problem's optimum (libsvm on the original rows), a certificate, and alphas
    # feasible for the original bounds
    X, y = _duplicate_heavy(2)
    n = len(y)
    rng = np.random.default_rng(2)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(4)]
    )
    Cs = [0.1, 1.0, 10.0]
    prob = BatchedSvmProblem.from_bootstrap(X, y, Cs, counts, kernel=kernel, gamma=0.5)
    sol = BoxQpSolver()(prob)
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= SolverConfig().tol
    A, U, yt = sol.alpha, prob.U, prob.y
    assert bool((A >= 0).all()) and bool((A <= U).all())
    assert bool((A[U == 0] == 0).all())
    assert float((A * yt).sum(1).abs().max()) <= 1e-10 * float(U.sum(1).max())
    # the gap recomputed from the returned alphas on the original rows
    K = (
        (prob.X @ prob.X.T)
        if kernel == "linear"
        else torch.exp(-0.5 * torch.cdist(prob.X, prob.X) ** 2)
    )
    QA = (A * yt) @ K * yt
    rel = duality_gap(A, QA, yt, U, None)[2]
    assert float(rel.max()) <= SolverConfig().tol
    F = _scores(prob, sol, X)
    c_idx, rep_idx = prob.index["c_idx"].numpy(), prob.index["rep_idx"].numpy()
    for p in range(prob.n_problems):
        ref = SVC(kernel=kernel, C=Cs[c_idx[p]], gamma=0.5, tol=1e-8)
        fr = ref.fit(X, y, sample_weight=counts[rep_idx[p]]).decision_function(X)
        _assert_close_to_libsvm(F[p], fr)


@pytest.mark.slow
def test_duplicate_rows_merged_warm_start_and_float32() -> None:
    # against the solve without merging (slow on this degenerate batch: it is what the
    # merging avoids)
    X, y = _duplicate_heavy(3)
    prob = BatchedSvmProblem.from_weights(X, y, [0.3, 3.0], kernel="linear")
    ref = BoxQpSolver(merge_duplicates=False)(prob)
    warm = BoxQpSolver()(prob, init=ref)
    assert bool(warm.converged.all())
    np.testing.assert_allclose(warm.dual.numpy(), ref.dual.numpy(), rtol=1e-6)
    p32 = prob.to(dtype=torch.float32)
    s32 = BoxQpSolver(SolverConfig(tol=1e-5))(p32)
    assert bool(s32.converged.all()) and s32.alpha.dtype == torch.float32
    assert bool((s32.alpha >= 0).all()) and bool((s32.alpha <= p32.U).all())
    np.testing.assert_allclose(s32.dual.double().numpy(), ref.dual.numpy(), rtol=1e-4)
