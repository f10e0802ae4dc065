"""Direct tests of the interior point (ipm.py) and the active set (pdas.py) against libsvm."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.svm import SVC

from tests.contracts import contract_counts, contract_data
from tests.helpers import assert_svm_close
from torchsvm.kernels import compute_kernel
from torchsvm.solvers import ipm
from torchsvm.solvers.ipm import ipm_low_rank
from torchsvm.solvers.kkt import duality_gap
from torchsvm.solvers.pdas import pdas_dense


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_ipm_low_rank_matches_libsvm(dtype: torch.dtype) -> None:
    X, y = contract_data(60, 4, seed=2)
    counts = contract_counts(60, 3, seed=1)
    C = np.array([0.1, 1.0, 10.0])
    U = torch.tensor(C[:, None] * counts, dtype=dtype)
    Z = torch.tensor(X * y[:, None], dtype=dtype)
    yt = torch.tensor(y, dtype=dtype)
    a, b, n_iter, mu = ipm_low_rank(Z, yt, U, tol=1e-9)
    assert bool((a >= 0).all()) and bool((a <= U).all())
    assert bool((a[U == 0] == 0).all())
    assert int(n_iter.max()) < 60  # converged before the cap
    rtol = 1e-3 if dtype == torch.float64 else 2e-2
    for p in range(3):
        ref = SVC(kernel="linear", C=C[p], tol=1e-10).fit(X, y, sample_weight=counts[p])
        f = (a[p].double().numpy() * y) @ (X @ X.T) + float(b[p])
        assert_svm_close(f, ref.decision_function(X), rtol, f"ipm problem {p}")


@pytest.mark.parametrize("shift", [False, True])
def test_ipm_low_rank_in_row_blocks_equals_one_block(
    shift: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rows are independent: blocks of 3 (3 + 3 + 1 rows) give each row the iterations
    # and the point of the single block, diagonal shift (S1b) sliced with the bounds
    X, y = contract_data(60, 4, seed=5)
    counts = contract_counts(60, 7, seed=3)
    C = np.array([0.05, 0.3, 1.0, 2.0, 5.0, 10.0, 40.0])
    U = torch.tensor(C[:, None] * counts)
    S = None
    if shift:  # S1b: no upper bounds, a diagonal shift per problem
        U = torch.full_like(U, torch.inf)
        S = torch.tensor(np.linspace(0.2, 1.0, 7)[:, None] * np.ones((1, 60)))
    Z = torch.tensor(X * y[:, None])
    yt = torch.tensor(y)
    one = ipm_low_rank(Z, yt, U, S, tol=1e-9, block_rows=0)
    blocks = ipm_low_rank(Z, yt, U, S, tol=1e-9, block_rows=3)
    assert torch.equal(one[2], blocks[2])  # the same iterations per row
    torch.testing.assert_close(blocks[0], one[0], rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(blocks[1], one[1], rtol=1e-9, atol=1e-12)
    # the automatic blocks on the CPU (forced small here) as well
    monkeypatch.setattr(ipm, "_CPU_BLOCK_BYTES", 2 * 60 * 8)
    monkeypatch.setattr(ipm, "_MIN_BLOCK_ROWS", 2)
    assert ipm.row_block_size(7, 60, torch.float64, torch.device("cpu")) == 2
    auto = ipm_low_rank(Z, yt, U, S, tol=1e-9)
    assert torch.equal(one[2], auto[2])
    torch.testing.assert_close(auto[0], one[0], rtol=1e-9, atol=1e-12)
    if not shift:  # and the answers are libsvm's
        for p in (0, 3, 5):  # (libsvm at C = 40 takes minutes at tol=1e-10 here)
            ref = SVC(kernel="linear", C=C[p], tol=1e-10).fit(
                X, y, sample_weight=counts[p]
            )
            f = (auto[0][p].numpy() * y) @ (X @ X.T) + float(auto[1][p])
            assert_svm_close(f, ref.decision_function(X), 1e-3, f"block problem {p}")
    else:
        Q = Z @ Z.T
        _, _, rel, _ = duality_gap(auto[0], auto[0] @ Q, yt, U, S)
        assert float(rel.max()) <= 1e-7


def test_ipm_low_rank_with_diagonal_shift() -> None:
    # S1b: u = inf, Q + diag(s); compared with the dense dual solved through its KKT system
    X, y = contract_data(30, 3, seed=4)
    Z = torch.tensor(X * y[:, None])
    yt = torch.tensor(y)
    U = torch.full((1, 30), torch.inf, dtype=torch.float64)
    S = torch.full((1, 30), 0.7, dtype=torch.float64)
    a, b, _, _ = ipm_low_rank(Z, yt, U, S, tol=1e-11)
    Q = Z @ Z.T
    _, _, rel, _ = duality_gap(a, a @ Q, yt, U, S)
    assert float(rel[0]) <= 1e-7
    assert bool((a >= 0).all())


@pytest.mark.parametrize("seed", [0, 1])
def test_pdas_dense_rbf_matches_libsvm_and_certifies(seed: int) -> None:
    X, y = contract_data(60, 4, seed=seed)
    counts = contract_counts(60, 2, seed=seed)
    C = np.array([1.0, 10.0])
    gamma = 0.3
    Xt, yt = torch.tensor(X), torch.tensor(y)
    K = compute_kernel(Xt, kernel="rbf", gamma=gamma)
    Q = K * yt[:, None] * yt[None, :]
    U = torch.tensor(C[:, None] * counts)
    A, QA, b, n_iter, ok = pdas_dense(Q, yt, U, None, U.clone(), max_iter=40)
    assert bool(ok.all())
    assert (
        bool((A >= 0).all()) and bool((A <= U).all()) and bool((A[U == 0] == 0).all())
    )
    _, _, rel, _ = duality_gap(A, A @ Q, yt, U, None)
    assert float(rel.max()) <= 1e-10
    for p in range(2):
        ref = SVC(kernel="rbf", C=C[p], gamma=gamma, tol=1e-10).fit(
            X, y, sample_weight=counts[p]
        )
        f = (A[p] * yt) @ K + b[p]
        assert_svm_close(f.numpy(), ref.decision_function(X), 1e-4, f"pdas problem {p}")


def test_pdas_dense_reports_unsettled_rows() -> None:
    # one iteration from a bad start cannot settle: the row is reported, not hidden
    X, y = contract_data(60, 4, seed=0)
    yt = torch.tensor(y)
    K = compute_kernel(torch.tensor(X), kernel="rbf", gamma=0.3)
    Q = K * yt[:, None] * yt[None, :]
    U = torch.full((1, 60), 10.0, dtype=torch.float64)
    *_, ok = pdas_dense(Q, yt, U, None, U.clone(), max_iter=1)
    assert not bool(ok.any())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_update_solve_with_cached_border_columns_matches_a_fresh_factorisation(
    dtype: torch.dtype,
) -> None:
    # successive faces near one factorised face: the bordered solves reuse the cached
    # L^{-1} b_j columns and their Gram, and must equal the solve from a new Cholesky
    # factor of each face (the oracle), also for subsets of the store's rows (copied
    # out, or solved with the others as discarded rows)
    from torchsvm.solvers.pdas import _FactorStore, _full_solve, _update_solve

    X, y = contract_data(80, 3, seed=3)
    Xt, yt = torch.tensor(X, dtype=dtype), torch.tensor(y, dtype=dtype)
    n, R = 80, 4
    Q = compute_kernel(Xt, kernel="rbf", gamma=0.5) * yt[:, None] * yt[None, :]
    from torchsvm.solvers.pdas import _gather_face_fn

    face_fn = _gather_face_fn(Q)
    y_ext = torch.nn.functional.pad(yt, (0, 1))
    g = torch.Generator().manual_seed(0)
    free0 = torch.rand(R, n, generator=g) < 0.4
    rhs = torch.randn(R, n, generator=g, dtype=torch.float64).to(dtype)
    c = torch.randn(R, generator=g, dtype=torch.float64).to(dtype)
    store = _FactorStore(R, n, dtype, torch.device("cpu"), 2**30)
    gi = torch.arange(R)
    _full_solve(face_fn, y_ext, None, free0, rhs, c, 2**30, store, gi)
    free = free0.clone()
    tol = 1e-8 if dtype == torch.float64 else 2e-2
    subsets = {1: torch.tensor([0, 2]), 2: torch.tensor([0, 1, 3])}
    for step in range(4):
        # add a few coordinates, drop a few (some dropped earlier come back)
        flip = torch.rand(R, n, generator=g) < 0.05
        free = free ^ flip
        rows = subsets.get(step, gi)
        a, b, ok = _update_solve(
            face_fn, y_ext, None, free[rows], rhs[rows], c[rows], store, rows
        )
        a_ref, b_ref, ok_ref = _full_solve(
            face_fn, y_ext, None, free[rows], rhs[rows], c[rows], 2**30
        )
        assert bool(ok.all()) and bool(ok_ref.all())
        scale = 1.0 + float(a_ref.abs().max())
        assert float((a - a_ref).abs().max()) <= tol * scale, step
        assert float((b - b_ref).abs().max()) <= tol * scale, step
        assert bool((a[~free[rows]] == 0).all())
    assert int(store.cnt.max()) > 0  # the cache was used
