"""The monotone active set (pdas.pdas_monotone) on faces where the plain active set cycles.

The instances are built like UCI cervical (the RBF probabilities run's fold that did not
finish): a few distinct rows repeated with small changes, rare binary features, integer
counts, few positives, and two copies of one point with opposite labels. Their faces
``Q_FF`` are nearly singular, and :func:`~torchsvm.solvers.pdas.pdas_dense` cycles.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.kernels import compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver, merge_duplicate_rows
from torchsvm.solvers.kkt import duality_gap, project_face
from torchsvm.solvers.pdas import pdas_dense, pdas_monotone

TOL = 1e-7


@pytest.fixture(autouse=True)
def one_thread():  # noqa: ANN201
    """Small batched solves: one thread (two threads on a loaded 2-core machine spend
    most of their time waiting on each other, 10x the time here)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def cervical_like(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows drawn from ``n / 3`` distinct ones (16 rare binary features, 4 integer
    ones), the first integer feature moved by one in half the rows, ~8 % positives,
    one row repeated with the opposite label; standardised."""
    rng = np.random.default_rng(seed)
    m = n // 3
    Xb = (rng.random((m, 16)) < rng.uniform(0.01, 0.15, 16)).astype(float)
    Xc = np.stack(
        [
            rng.integers(15, 50, m),
            rng.poisson(2, m),
            rng.poisson(1, m) * (rng.random(m) < 0.3),
            rng.integers(0, 3, m),
        ],
        1,
    ).astype(float)
    X = np.hstack([Xb, Xc])[rng.integers(0, m, size=n)]
    X[:, 16] += rng.integers(-1, 2, n) * (rng.random(n) < 0.5)
    p = 1 / (1 + np.exp(-(2 * X[:, 0] + 2 * X[:, 1] - 3.5 + 0.05 * (X[:, 16] - 30))))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    X = np.vstack([X, X[:1]])
    y = np.append(y, -y[0])
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    return X, y


def batch(seed: int) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray]:
    X, y = cervical_like(seed)
    rng = np.random.default_rng(100 + seed)
    counts = rng.multinomial(len(y), np.full(len(y), 1 / len(y)), size=4).astype(float)
    counts[:, -1] = np.maximum(counts[:, -1], 1.0)  # the opposite-label copy is drawn
    counts[:, 0] = np.maximum(counts[:, 0], 1.0)
    C = np.array([0.5, 4.0, 32.0])
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, C, counts, kernel="rbf", gamma="scale"
    )
    return prob, X, y, counts


def dense_q(prob: BatchedSvmProblem) -> torch.Tensor:
    K = compute_kernel(prob.X, kernel="rbf", gamma=prob.gamma)
    return K * prob.y[:, None] * prob.y[None, :]


def dual_value(a: torch.Tensor, Q: torch.Tensor) -> np.ndarray:
    return (a.sum(1) - 0.5 * ((a @ Q) * a).sum(1)).numpy()


def libsvm_dual(prob: BatchedSvmProblem, X, y, counts, Q_full) -> np.ndarray:  # noqa: ANN001
    """libsvm's dual value of every problem of ``prob`` (rows of weight 0 left out:
    sklearn's ``support_`` indexes the rows it kept)."""
    C = prob.C.numpy()
    reps = prob.index["rep_idx"].numpy()
    out = []
    for p in range(prob.n_problems):
        w = counts[reps[p]]
        keep = np.flatnonzero(w > 0)
        svc = SVC(C=C[p], gamma=prob.gamma, tol=1e-6, cache_size=200)
        svc.fit(X[keep], y[keep], sample_weight=w[keep])
        a = np.zeros(len(y))
        a[keep[svc.support_]] = np.abs(svc.dual_coef_[0])
        at = torch.tensor(a)[None]
        out.append(dual_value(at, Q_full)[0])
    return np.array(out)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_pdas_dense_cycles_and_the_monotone_active_set_certifies(seed: int) -> None:
    prob, X, y, counts = batch(seed)
    merged, _ = merge_duplicate_rows(prob)
    Q = dense_q(merged)
    U, yt = merged.U, merged.y
    # the plain active set from every coordinate at its bound: some rows cycle
    _, _, _, _, ok_plain = pdas_dense(Q, yt, U, None, U.clone(), max_iter=40)
    assert not bool(ok_plain.all())
    A, QA, _, n_it, ok = pdas_monotone(Q, yt, U, None, project_face(U.clone(), yt, U))
    assert bool(ok.all())
    assert bool((A >= 0).all()) and bool((A <= U).all())
    assert float((A @ yt).abs().max()) < 1e-10
    torch.testing.assert_close(QA, A @ Q, rtol=0, atol=1e-10)
    gap = duality_gap(A, QA, yt, U, None)[2]
    assert float(gap.max()) <= TOL
    # the optimum of libsvm on the unmerged rows (merging keeps the dual value)
    ref = libsvm_dual(prob, X, y, counts, dense_q(prob))
    np.testing.assert_allclose(dual_value(A, Q), ref, rtol=1e-5)


def test_box_qp_certifies_cycling_rows_without_admm(
    caplog: pytest.LogCaptureFixture,
) -> None:
    prob, X, y, counts = batch(0)
    with caplog.at_level(logging.INFO, logger="torchsvm.solvers.box_qp"):
        sol = BoxQpSolver(SolverConfig(tol=TOL), smo=False)(prob)
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= TOL
    assert "cycled" in caplog.text
    assert "handed to ADMM" not in caplog.text
    ref = libsvm_dual(prob, X, y, counts, dense_q(prob))
    np.testing.assert_allclose(dual_value(sol.alpha, dense_q(prob)), ref, rtol=1e-5)


def test_pdas_monotone_with_a_diagonal_shift_matches_pdas_dense() -> None:
    # S1b (squared slacks): no upper bounds, Q + diag(s) positive definite; the plain
    # active set converges here, and both methods reach the one optimum
    prob, _, _, counts = batch(2)
    Q = dense_q(prob)
    P, n = prob.U.shape
    w = torch.tensor(counts[prob.index["rep_idx"].numpy()])
    U = torch.where(w > 0, torch.inf, 0.0).to(Q.dtype)
    S = torch.where(w > 0, 1.0 / (prob.C[:, None] * w.clamp_min(1.0)), 0.0).to(Q.dtype)
    yt = prob.y
    A1, QA1, _, _, ok1 = pdas_dense(
        Q, yt, U, S, torch.zeros(P, n, dtype=Q.dtype), max_iter=60
    )
    A2, QA2, _, _, ok2 = pdas_monotone(Q, yt, U, S, torch.zeros(P, n, dtype=Q.dtype))
    assert bool(ok2.all())
    assert float(duality_gap(A2, QA2, yt, U, S)[2].max()) <= TOL
    good = ok1 & (duality_gap(A1, QA1, yt, U, S)[2] <= TOL)
    assert bool(good.any())
    D1 = dual_value(A1, Q) - 0.5 * (S * A1 * A1).sum(1).numpy()
    D2 = dual_value(A2, Q) - 0.5 * (S * A2 * A2).sum(1).numpy()
    np.testing.assert_allclose(D2[good.numpy()], D1[good.numpy()], rtol=1e-9)


def test_cycling_rows_start_the_monotone_active_set_from_smo(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # a batch below SMO's pre-pass rule (12 problems): the rows whose active set cycles
    # get SMO's loose point from 0 before the monotone finish, which then takes fewer
    # steps than from the active set's starts (churn's RBF fold: 1372 per problem)
    prob, X, y, counts = batch(0)

    def monotone_steps(smo: bool | None) -> tuple[float, object]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="torchsvm.solvers.box_qp"):
            sol = BoxQpSolver(SolverConfig(tol=TOL), smo=smo)(prob)
        line = [r.getMessage() for r in caplog.records if "certified" in r.getMessage()]
        assert len(line) == 1
        return float(line[0].rsplit("(", 1)[1].split()[0]), sol

    steps_off, _ = monotone_steps(False)
    assert "SMO from 0" not in caplog.text
    steps, sol = monotone_steps(None)
    assert "SMO from 0" in caplog.text
    assert steps < steps_off
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= TOL
    assert "handed to ADMM" not in caplog.text
    ref = libsvm_dual(prob, X, y, counts, dense_q(prob))
    np.testing.assert_allclose(dual_value(sol.alpha, dense_q(prob)), ref, rtol=1e-5)


def test_rows_that_cycle_from_smos_point_resume_smo(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # with the SMO pre-pass, rows whose active set cycles from SMO's point resume SMO
    # to a smaller violation before the monotone finish (cervical's RBF fold: 43 steps
    # per problem from SMO's point at 1e-2, 19 after resuming)
    prob, X, y, counts = batch(1)
    with caplog.at_level(logging.INFO, logger="torchsvm.solvers.box_qp"):
        sol = BoxQpSolver(SolverConfig(tol=TOL), smo=True)(prob)
    assert "SMO resumed" in caplog.text
    assert "handed to ADMM" not in caplog.text
    assert bool(sol.converged.all())
    assert float(sol.duality_gap.max()) <= TOL
    assert bool((sol.alpha >= 0).all()) and bool((sol.alpha <= prob.U).all())
    ref = libsvm_dual(prob, X, y, counts, dense_q(prob))
    np.testing.assert_allclose(dual_value(sol.alpha, dense_q(prob)), ref, rtol=1e-5)
