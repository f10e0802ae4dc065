"""The feasible active-set method and the C-path solve of the linear kernel (issue 14)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers import box_qp
from torchsvm.solvers.active_set import active_set_low_rank, purify_start
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.factor import build_factor
from torchsvm.solvers.kkt import duality_gap, project_face


def _bootstrap_problem(
    n: int, d: int, B: int, seed: int, dtype: str = "float64"
) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_classification(
        n, d, n_informative=min(d - 1, 5), n_redundant=0, flip_y=0.05, random_state=seed
    )
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)]
    )
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, 2.0 ** np.arange(-5, 6, 2), counts, kernel="linear", dtype=dtype
    )
    return prob, X, y, counts


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_c_path_agrees_with_interior_point_and_libsvm(dtype: str) -> None:
    # d = 6: optimal faces of d + 1 = 7 free points, where Q_FF itself is singular
    prob, X, y, counts = _bootstrap_problem(300, 6, 4, seed=3, dtype=dtype)
    tol = 1e-7 if dtype == "float64" else 1e-5
    cfg = SolverConfig(method="ipm", tol=tol)
    s_path = BoxQpSolver(cfg)(prob)
    s_ipm = BoxQpSolver(cfg, c_path=False)(prob)
    assert bool(s_path.converged.all()) and bool(s_ipm.converged.all())
    assert float(s_path.duality_gap.max()) <= tol
    np.testing.assert_allclose(
        s_path.dual.double().numpy(), s_ipm.dual.double().numpy(), rtol=10 * tol
    )
    A, U = s_path.alpha.double(), prob.U.double()
    assert bool((A >= 0).all()) and bool((A <= U).all())
    # decision values vs libsvm at a tight tolerance, one problem per C
    c_idx = prob.index["c_idx"].numpy()
    rep_idx = prob.index["rep_idx"].numpy()
    Cs = 2.0 ** np.arange(-5, 6, 2)
    F = (
        (s_path.alpha.double() * prob.y.double()) @ prob.X.double() @ prob.X.double().T
        + s_path.b.double()[:, None]
    ).numpy()
    for r in range(len(Cs)):
        p = int(np.nonzero(c_idx == r)[0][0])
        ref = SVC(kernel="linear", C=Cs[r], tol=1e-10).fit(
            X, y, sample_weight=counts[rep_idx[p]]
        )
        fr = ref.decision_function(X)
        rt = 1e-4 if dtype == "float64" else 1e-2
        assert np.abs(F[p] - fr).max() <= rt * max(1.0, np.abs(fr).max())


def test_active_set_from_a_vertex_reaches_the_optimum() -> None:
    # a = 0 is a feasible vertex with no free coordinate: one coordinate alone cannot
    # move off it (y^T a = 0), so the method must free a pair
    prob, *_ = _bootstrap_problem(200, 5, 2, seed=7)
    F = build_factor(prob)
    W = F.low_rank()
    with torch.inference_mode():
        a, b, it, ok = active_set_low_rank(
            W, prob.y, prob.U, torch.zeros_like(prob.U), max_iter=500
        )
        _, dual, rel, _ = duality_gap(a, F.matvec(a), prob.y, prob.U, None)
    assert bool(ok.all()), it
    assert float(rel.max()) <= 1e-9
    ref = BoxQpSolver(SolverConfig(method="ipm"), c_path=False)(prob)
    np.testing.assert_allclose(dual.numpy(), ref.dual.numpy(), rtol=1e-8)
    # feasible throughout: exact box and y^T a at rounding level
    assert bool((a >= 0).all()) and bool((a <= prob.U).all())
    assert float((a * prob.y).sum(1).abs().max()) <= 1e-10


def test_uncertified_path_rows_go_to_the_interior_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prob, *_ = _bootstrap_problem(150, 4, 3, seed=11)
    monkeypatch.setattr(box_qp, "_PATH_MAX_ITER", 1)
    sol = BoxQpSolver(SolverConfig(method="ipm"))(prob)
    assert bool(sol.converged.all())
    ref = BoxQpSolver(SolverConfig(method="ipm"), c_path=False)(prob)
    np.testing.assert_allclose(sol.dual.numpy(), ref.dual.numpy(), rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_active_set_from_a_wide_interior_face(dtype: str) -> None:
    # a start with every coordinate free (|F| = n >> k + 1): the face has no unique
    # minimiser (jittered solve), the faces shrink by blocking and grow again by
    # freeing; the result must be the optimum, feasible, for every row
    prob, *_ = _bootstrap_problem(120, 4, 3, seed=5, dtype=dtype)
    F = build_factor(prob)
    W = F.low_rank()
    y, U = prob.y, prob.U
    tol = 1e-9 if dtype == "float64" else 1e-5
    ref = BoxQpSolver(SolverConfig(method="ipm", tol=tol), c_path=False)(prob)
    with torch.inference_mode():
        A0 = project_face(torch.where(U > 0, 0.5 * U, 0.0), y, U)
        # the other rows start at their optimum (narrow faces): the wide row's face
        # solve runs apart from theirs
        A0[1:] = ref.alpha[1:]
        a, _, it, ok = active_set_low_rank(W, y, U, A0, max_iter=500, tol=tol)
        _, dual, _, _ = duality_gap(a, F.matvec(a), y, U, None)
        # the gap of the returned point, evaluated in float64: a float32 evaluation
        # through F.matvec differs from the solver's (A W) W^T by rounding (with 2
        # threads one row read 1.1e-5 there, 5.0e-6 through W and 3.5e-6 in float64)
        ad, Wd = a.double(), W.double()
        rel = duality_gap(ad, (ad @ Wd) @ Wd.T, y.double(), U.double(), None)[2]
    assert bool(ok.all()), it
    assert float(rel.max()) <= tol
    if dtype == "float64":  # float32's certified point sits a little off its bounds
        assert int(it[0]) > 10 and int(it[1:].max()) <= 3
    np.testing.assert_allclose(
        dual.double().numpy(), ref.dual.double().numpy(), rtol=10 * tol
    )
    assert bool((a >= 0).all()) and bool((a <= U).all())
    eps = torch.finfo(a.dtype).eps
    assert float((a * y).sum(1).abs().max()) <= 1e3 * eps * float(U.sum(1).max())


@pytest.mark.parametrize("kernel", ["torch", "numba"])
def test_c_path_only_up_to_its_largest_n(
    monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    # above its largest n (_C_PATH_MAX_N with the batched torch active set,
    # _C_PATH_MAX_N_COMPILED with the compiled kernel) every C goes to the interior
    # point (the active set's iteration count grows with n); the answers are the
    # same either way
    if kernel == "numba":
        pytest.importorskip("numba")
    prob, *_ = _bootstrap_problem(150, 4, 2, seed=13)
    cfg = SolverConfig(method="ipm", active_set_kernel=kernel)
    # (the interior point's own clean-up also runs the active set, without parent)
    calls: list[bool] = []
    real = box_qp.active_set_low_rank

    def spy(*a, **k):  # noqa: ANN002, ANN003, ANN202
        calls.append(k.get("parent") is not None)
        return real(*a, **k)

    monkeypatch.setattr(box_qp, "active_set_low_rank", spy)
    on = BoxQpSolver(cfg)(prob)
    assert any(calls)
    # the other kernel's limit does not apply
    other = "_C_PATH_MAX_N" if kernel == "numba" else "_C_PATH_MAX_N_COMPILED"
    monkeypatch.setattr(box_qp, other, 100)
    calls.clear()
    BoxQpSolver(cfg)(prob)
    assert any(calls)
    own = "_C_PATH_MAX_N_COMPILED" if kernel == "numba" else "_C_PATH_MAX_N"
    monkeypatch.setattr(box_qp, own, 100)
    calls.clear()
    off = BoxQpSolver(cfg)(prob)
    assert calls and not any(calls)
    assert bool(on.converged.all()) and bool(off.converged.all())
    np.testing.assert_allclose(on.dual.numpy(), off.dual.numpy(), rtol=1e-7)


def test_c_path_only_for_proportional_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # the solver chains a problem along the C path only from a problem of the stage
    # before whose bounds are proportional to its own (the same bootstrap replicate
    # at a smaller C); problems that differ in their row weights are solved from
    # scratch, and a batch without proportional bounds skips the path altogether
    prob, X, y, counts = _bootstrap_problem(150, 4, 3, seed=21)
    stage = box_qp._scale_stages(prob)
    src, ratio = box_qp.c_path_sources(prob.U, stage)
    c_idx, rep = prob.index["c_idx"], prob.index["rep_idx"]
    later = c_idx > 0
    assert bool((src[~later] == -1).all())
    assert bool((c_idx[src[later]] == c_idx[later] - 1).all())
    assert bool((rep[src[later]] == rep[later]).all())
    torch.testing.assert_close(ratio[later], torch.full_like(ratio[later], 4.0))
    # the same bounds with one row's weight changed in every problem of C > 2^-5,
    # by a factor that grows with C (its row of the largest bound)
    U2 = prob.U.clone()
    rows = later.nonzero()[:, 0]
    col = prob.U.argmax(1)
    fac = 1.0 + 0.5 * c_idx.to(U2.dtype)
    U2[rows, col[rows]] *= fac[rows]
    src2, _ = box_qp.c_path_sources(U2, stage)
    assert bool((src2 == -1).all())
    # a mixed batch: the first replicate proportional, the others not
    U3 = prob.U.clone()
    bad = (later & (rep > 0)).nonzero()[:, 0]
    U3[bad, col[bad]] *= fac[bad]
    src3, _ = box_qp.c_path_sources(U3, stage)
    assert bool(((src3 >= 0) == (later & (rep == 0))).all())
    cfg = SolverConfig(method="ipm")
    calls: list[bool] = []
    real = box_qp.active_set_low_rank

    def spy(*a, **k):  # noqa: ANN002, ANN003, ANN202
        calls.append(k.get("parent") is not None)
        return real(*a, **k)

    monkeypatch.setattr(box_qp, "active_set_low_rank", spy)
    Xt, yt = prob.X.numpy(), prob.y.numpy()
    for U_, chained in ((U2, False), (U3, True)):
        calls.clear()
        p_ = dataclasses.replace(prob, U=U_)  # the same C (stages) as prob
        sol = BoxQpSolver(cfg)(p_)
        assert any(calls) == chained
        assert bool(sol.converged.all())
        ref = BoxQpSolver(cfg, c_path=False)(p_)
        np.testing.assert_allclose(sol.dual.numpy(), ref.dual.numpy(), rtol=1e-7)
        # decision values against libsvm at a tight tolerance on a few problems
        for q in (0, int(rows[-1]), int(bad[0])):
            svc = SVC(kernel="linear", C=1.0, tol=1e-10)
            svc.fit(Xt, yt, sample_weight=U_[q].numpy())
            f_ref = svc.decision_function(Xt)
            f = Xt @ sol.w[q].numpy() + float(sol.b[q])
            assert np.abs(f - f_ref).max() <= 1e-4 * max(1.0, np.abs(f_ref).max())


def test_pipelined_chains_match_stage_by_stage_solves() -> None:
    # parent / make_start: each row starts as soon as its parent stops, from the
    # parent's final point; the answers equal those of one call per stage
    prob, *_ = _bootstrap_problem(160, 4, 3, seed=17)
    F = build_factor(prob)
    W = F.low_rank()
    y, U = prob.y, prob.U
    c_idx = prob.index["c_idx"]
    n_C = int(c_idx.max()) + 1
    stages = [(c_idx == r).nonzero()[:, 0] for r in range(n_C)]
    ratio = 4.0  # the grid of _bootstrap_problem: 2^-5, 2^-3, ...
    with torch.inference_mode():
        ref = BoxQpSolver(SolverConfig(method="ipm"), c_path=False)(
            prob.select(stages[0])
        )
        # stage by stage
        seq = []
        A_prev = ref.alpha
        for rows in stages[1:]:
            A0 = project_face(A_prev * ratio, y, U[rows])
            a, _, it, ok = active_set_low_rank(
                W, y, U[rows], A0, max_iter=200, tol=1e-9
            )
            assert bool(ok.all())
            seq.append(a)
            A_prev = a
        # one pipelined call over the later stages
        rest = torch.cat(stages[1:])
        B = stages[0].numel()
        parent = torch.arange(rest.numel()) - B  # the same replicate, one stage before
        seen: list[tuple[torch.Tensor, torch.Tensor]] = []

        def make_start(q: torch.Tensor, A_par: torch.Tensor) -> torch.Tensor:
            seen.append((q.clone(), A_par.clone()))
            return project_face(A_par * ratio, y, U[rest[q]])

        A0 = torch.zeros((rest.numel(), prob.n_samples), dtype=U.dtype)
        A0[:B] = project_face(ref.alpha * ratio, y, U[stages[1]])
        a, _, it, ok = active_set_low_rank(
            W,
            y,
            U[rest],
            A0,
            max_iter=200,
            tol=1e-9,
            parent=parent,
            make_start=make_start,
        )
    assert bool(ok.all())
    # every child was started once, from its parent's returned point
    q_all = torch.cat([q for q, _ in seen])
    assert sorted(q_all.tolist()) == list(range(B, rest.numel()))
    for q, A_par in seen:
        torch.testing.assert_close(A_par, a[parent[q]], rtol=0, atol=0)
    Ur = U[rest]
    d_pipe = duality_gap(a, F.matvec(a), y, Ur, None)[1]
    a_seq = torch.cat(seq)
    d_seq = duality_gap(a_seq, F.matvec(a_seq), y, Ur, None)[1]
    np.testing.assert_allclose(d_pipe.numpy(), d_seq.numpy(), rtol=1e-9)
    assert int(it.max()) <= 200 and int(it.min()) >= 1


def test_parent_without_make_start_is_an_error() -> None:
    prob, *_ = _bootstrap_problem(40, 3, 1, seed=2)
    W = build_factor(prob).low_rank()
    parent = torch.full((prob.n_problems,), -1)
    with pytest.raises(ValueError, match="make_start"):
        active_set_low_rank(W, prob.y, prob.U, torch.zeros_like(prob.U), parent=parent)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_grouped_face_solves_match_one_padded_batch(dtype: torch.dtype) -> None:
    # rows of very different face widths, solved in width groups, give what one
    # batch padded to the widest face gives
    from torchsvm.solvers.active_set import _face_solve, _face_solve_grouped

    g = torch.Generator().manual_seed(0)
    R, f, k = 40, 14, 10
    Wf = torch.randn(R, f, k, generator=g, dtype=dtype)
    nfree = torch.randint(0, k + 4, (R,), generator=g)
    nfree[0] = f  # a wide row
    valid = torch.arange(f)[None, :] < nfree[:, None]
    Wf = Wf * valid[:, :, None]
    yF = torch.where(torch.rand(R, f, generator=g) < 0.5, -1.0, 1.0).to(dtype) * valid
    rhs = torch.randn(R, f, generator=g, dtype=dtype) * valid
    c = torch.randn(R, generator=g, dtype=dtype)
    d1, b1, ok1, ex1 = _face_solve(Wf, yF, valid, rhs, c)
    # the grouped solve gathers each group's slots from rows of W_ext / y_ext
    W_ext = torch.cat([Wf.reshape(R * f, k), torch.zeros(1, k, dtype=dtype)])
    y_ext = torch.cat([yF.reshape(R * f), torch.zeros(1, dtype=dtype)])
    idx = torch.where(valid, torch.arange(R * f).view(R, f), R * f)
    d2, b2, ok2, ex2 = _face_solve_grouped(
        W_ext, y_ext, idx, valid, rhs, c, nfree, k + 1
    )
    assert torch.equal(ok1, ok2)
    assert torch.equal(ex1, ex2)
    # exact solves satisfy the face equation Q_FF d + b y_F = rhs, y_F^T d = c (the
    # active set carries the residual 1 - (Q a)_F by it); the wide row is jittered
    assert not bool(ex1[0])
    e = ex1 & ok1 & (nfree > 0)
    lhs = (Wf @ (Wf.transpose(1, 2) @ d1[..., None]))[..., 0] + b1[:, None] * yF
    tol_eq = 1e-8 if dtype == torch.float64 else 2e-2
    torch.testing.assert_close(lhs[e] * valid[e], rhs[e], rtol=tol_eq, atol=tol_eq)
    torch.testing.assert_close((d1 * yF).sum(1)[e], c[e], rtol=tol_eq, atol=tol_eq)
    tol = 1e-8 if dtype == torch.float64 else 1e-3
    good = ok1 & (nfree <= k + 1)  # narrow faces: a unique minimiser
    torch.testing.assert_close(d2[good], d1[good], rtol=tol, atol=tol)
    torch.testing.assert_close(b2[good], b1[good], rtol=tol, atol=tol)


@pytest.mark.slow  # 84 s at load 8 (two solves of the batch and libsvm at tol 1e-10)
def test_wide_interior_start_is_purified_to_a_narrow_face(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # many duplicate rows with both labels (discrete features): the interior point
    # stops with many coordinates strictly inside the box (measured on churn: ~1100
    # of 2835 at k = 13), and a face that wide cost O(|F|^2) memory per problem (21 GB
    # on churn's 1100 problems). Purification hands the active set at most k + 1 free
    # coordinates per row; the optimum is unchanged.
    rng = np.random.default_rng(5)
    n, d = 400, 4
    X = rng.integers(0, 3, size=(n, d)).astype(float)
    y = np.where(X.sum(1) + rng.normal(0, 1.5, n) > 4, 1.0, -1.0)
    X = StandardScaler().fit_transform(X)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(6)]
    )
    Cs = np.array([0.03125, 1.0, 32.0])
    prob = BatchedSvmProblem.from_bootstrap(X, y, Cs, counts, kernel="linear")
    starts: list[tuple[int, int]] = []
    real = box_qp.active_set_low_rank

    def spy(W, y_, U, A0, **k):  # noqa: ANN001, ANN003, ANN202
        fin = torch.isfinite(U)
        free = (A0 > 0) & (A0 < torch.where(fin, U, torch.inf))
        if k.get("parent") is None:
            starts.append((int(free.sum(1).max()), W.shape[1]))
        return real(W, y_, U, A0, **k)

    monkeypatch.setattr(box_qp, "active_set_low_rank", spy)
    cfg = SolverConfig(method="ipm", tol=1e-7)
    # the interior point's route: without vertex_roots=False a batch off the C path
    # is first tried from a = 0 by the compiled active set, which needs no start
    solver = BoxQpSolver(cfg, c_path=False, vertex_roots=False)
    with monkeypatch.context() as m:  # the former start, without purification
        m.setattr(box_qp, "purify_start", lambda W, y, U, A0, cap, **k: A0)
        wide = solver(prob)
    ((wide_start, k),) = starts
    starts.clear()
    sol = solver(prob)
    assert wide_start > 4 * (k + 1), wide_start  # the data do make a wide start
    # rows above _PURIFY_ABOVE * (k + 1) are purified to k + 1; the rest keep theirs
    assert starts[0][0] <= box_qp._PURIFY_ABOVE * (k + 1), starts
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    np.testing.assert_allclose(sol.dual.numpy(), wide.dual.numpy(), rtol=1e-7)
    # decision values against libsvm, one problem per C
    F = ((sol.alpha * prob.y) @ prob.X @ prob.X.T + sol.b[:, None]).numpy()
    c_idx, rep_idx = prob.index["c_idx"].numpy(), prob.index["rep_idx"].numpy()
    for r, C in enumerate(Cs):
        p = int(np.nonzero(c_idx == r)[0][0])
        ref = SVC(kernel="linear", C=C, tol=1e-10).fit(
            X, y, sample_weight=counts[rep_idx[p]]
        )
        fr = ref.decision_function(X)
        assert np.abs(F[p] - fr).max() <= 1e-4 * max(1.0, np.abs(fr).max())


def test_purify_start_keeps_w_and_feasibility_and_does_not_raise_the_objective() -> (
    None
):
    rng = np.random.default_rng(2)
    n, k, P = 300, 3, 5
    W = torch.tensor(rng.normal(size=(n, k)))
    y = torch.tensor(np.where(rng.random(n) < 0.5, 1.0, -1.0))
    U = torch.tensor(rng.uniform(0.5, 2.0, size=(P, n)))
    U[0, :10] = torch.inf  # coordinates without an upper bound
    A0 = project_face(
        U.clamp_max(3.0) * torch.tensor(rng.uniform(0.2, 0.8, (P, n))), y, U
    )
    A = purify_start(W, y, U, A0, k + 1)
    fin = torch.isfinite(U)
    free = (A > 0) & (A < torch.where(fin, U, torch.inf))
    # rows with finite bounds reach k + 1; along an unbounded direction (row 0's
    # coordinates without an upper bound) a row may stop earlier, still feasible
    assert int(free[1:].sum(1).max()) <= k + 1
    assert int(free[0].sum()) <= int(((A0[0] > 0) & (A0[0] < U[0])).sum())
    assert bool((A >= 0).all()) and bool((A <= U).all())
    np.testing.assert_allclose((A @ W).numpy(), (A0 @ W).numpy(), atol=1e-8)
    assert float((A * y).sum(1).abs().max()) <= 1e-8
    obj = lambda a: 0.5 * ((a @ W) ** 2).sum(1) - a.sum(1)  # noqa: E731
    assert bool((obj(A) <= obj(A0) + 1e-8).all())


def test_purify_start_in_row_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # on the CPU the rows are purified in blocks (forced to 2 rows here, 3 blocks):
    # the same invariants per row, and the rows of a block purified as on their own
    from torchsvm.solvers import ipm

    rng = np.random.default_rng(5)
    n, k, P = 200, 3, 5
    W = torch.tensor(rng.normal(size=(n, k)))
    y = torch.tensor(np.where(rng.random(n) < 0.5, 1.0, -1.0))
    U = torch.tensor(rng.uniform(0.5, 2.0, size=(P, n)))
    A0 = project_face(U * torch.tensor(rng.uniform(0.2, 0.8, (P, n))), y, U)
    monkeypatch.setattr(ipm, "_CPU_BLOCK_BYTES", 2 * n * 8)
    monkeypatch.setattr(ipm, "_MIN_BLOCK_ROWS", 2)
    A = purify_start(W, y, U, A0, k + 1)
    free = (A > 0) & (A < U)
    assert int(free.sum(1).max()) <= k + 1
    assert bool((A >= 0).all()) and bool((A <= U).all())
    np.testing.assert_allclose((A @ W).numpy(), (A0 @ W).numpy(), atol=1e-8)
    assert float((A * y).sum(1).abs().max()) <= 1e-8
    obj = lambda a: 0.5 * ((a @ W) ** 2).sum(1) - a.sum(1)  # noqa: E731
    assert bool((obj(A) <= obj(A0) + 1e-8).all())
    for s in (0, 2, 4):  # each block as a batch of its own
        torch.testing.assert_close(
            A[s : s + 2], purify_start(W, y, U[s : s + 2], A0[s : s + 2], k + 1)
        )


def _lattice_cv_problem(
    levels: tuple[int, ...], folds: int, Cs: np.ndarray, noise: float, seed: int
) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A full factorial design, one-hot (nursery's kind of data): the label is a
    function of the first attribute (flipped for a fraction ``noise`` of the rows), and
    the batch is an inner CV (every (fold, C), held-out rows weighted 0)."""
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
    prob = BatchedSvmProblem.from_bounds(X, y, C[:, None] * Wt, kernel="linear")
    return prob, X, y, Wt, C


def _check_against_libsvm(
    prob: BatchedSvmProblem,
    sol,  # noqa: ANN001
    X: np.ndarray,
    y: np.ndarray,
    Wt: np.ndarray,
    C: np.ndarray,
) -> None:
    F = ((sol.alpha * prob.y) @ prob.X @ prob.X.T + sol.b[:, None]).numpy()
    for p in range(prob.n_problems):
        on = Wt[p] > 0
        ref = SVC(kernel="linear", C=C[p], tol=1e-10).fit(X[on], y[on])
        a = np.zeros(y.size)
        a[np.flatnonzero(on)[ref.support_]] = np.abs(ref.dual_coef_[0])
        w = (a * y) @ X
        dual_ref = a.sum() - 0.5 * w @ w
        # libsvm's dual value cannot exceed the optimum; ours is certified within 1e-7
        assert float(sol.dual[p]) >= dual_ref - 1e-7 * max(1.0, abs(dual_ref))
        assert float(sol.dual[p]) <= dual_ref + 1e-6 * max(1.0, abs(dual_ref))
        fr = ref.decision_function(X)
        assert np.abs(F[p] - fr).max() <= 1e-4 * max(1.0, np.abs(fr).max())


def test_lattice_inner_cv_purified_by_windows_against_libsvm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a separable lattice puts every row on the margin: the interior point stops with
    # every active coordinate free (nursery's inner CV: ~10500 of 11664), and the
    # one-hot columns make faces of k + 1 coordinates rank-deficient
    prob, X, y, Wt, C = _lattice_cv_problem(
        (3, 3, 4, 3, 2), 3, np.array([0.5, 8.0]), 0.0, 0
    )
    seen: list[tuple[int, int, int]] = []
    real = box_qp.purify_start

    def spy(W, y_, U, A0, cap, **k):  # noqa: ANN001, ANN003, ANN202
        A = real(W, y_, U, A0, cap, **k)
        fin = torch.isfinite(U)
        free = lambda a: (a > 0) & (a < torch.where(fin, U, torch.inf))  # noqa: E731
        seen.append((int(free(A0).sum(1).min()), int(free(A).sum(1).max()), W.shape[1]))
        return A

    monkeypatch.setattr(box_qp, "purify_start", spy)
    # the interior point's route (not the compiled active set from a = 0)
    sol = BoxQpSolver(
        SolverConfig(method="ipm", tol=1e-7), c_path=False, vertex_roots=False
    )(prob)
    ((before, after, k),) = seen
    assert before > 4 * (k + 1)  # the data do make a wide start
    assert after <= k + 1
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    _check_against_libsvm(prob, sol, X, y, Wt, C)


def test_purify_start_below_k_plus_1_on_rank_deficient_faces() -> None:
    # one-hot columns: [W_F, y_F] of k + 1 lattice rows has a null space, and the
    # purification goes on until it has none (a face the active set can solve)
    prob, *_ = _lattice_cv_problem((3, 4, 3), 2, np.array([1.0]), 0.1, 3)
    W = build_factor(prob).low_rank()
    y, U = prob.y, prob.U
    k = W.shape[1]
    A0 = project_face(U * 0.5, y, U)
    A = purify_start(W, y, U, A0, k + 1)
    free = ((A > 0) & (A < U))[0]
    M = torch.cat([W[free], y[free, None]], 1)
    assert int(free.sum()) <= k + 1
    assert int(torch.linalg.matrix_rank(M)) == int(free.sum())  # no null space left
    assert bool((A >= 0).all()) and bool((A <= U).all())
    np.testing.assert_allclose((A @ W).numpy(), (A0 @ W).numpy(), atol=1e-10)
    assert float((A * y).sum(1).abs().max()) <= 1e-10
    obj = lambda a: 0.5 * ((a @ W) ** 2).sum(1) - a.sum(1)  # noqa: E731
    assert bool((obj(A) <= obj(A0) + 1e-10).all())


def test_lattice_inner_cv_with_label_noise_against_libsvm() -> None:
    prob, X, y, Wt, C = _lattice_cv_problem(
        (3, 5, 4, 4, 3, 2), 4, np.array([0.03125, 1.0, 32.0]), 0.02, 1
    )
    sol = BoxQpSolver(SolverConfig(method="ipm", tol=1e-7), c_path=False)(prob)
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    _check_against_libsvm(prob, sol, X, y, Wt, C)


@pytest.mark.slow  # nursery's size: 12960 rows, 27 one-hot columns
def test_nursery_sized_lattice_inner_cv_against_libsvm() -> None:
    prob, X, y, Wt, C = _lattice_cv_problem(
        (3, 5, 4, 4, 3, 2, 3, 3), 3, np.array([0.03125, 32.0]), 0.0, 2
    )
    sol = BoxQpSolver(SolverConfig(method="ipm", tol=1e-7), c_path=False)(prob)
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-7
    _check_against_libsvm(prob, sol, X, y, Wt, C)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_violating_pair_from_the_top_list_matches_a_full_pass(seed: int) -> None:
    # the maximal violating pair, read off the top list where it can be, against the
    # brute-force pass over every coordinate of every row
    from torchsvm.solvers.active_set import _violating_pair

    g = torch.Generator().manual_seed(seed)
    R, n, m = 60, 50, 4
    score = torch.randn(R, n, generator=g, dtype=torch.float64)
    # rows with few violations (the list holds all), rows whose list is all of one
    # sign, a row without any violation, face slots at -inf
    score[:20] -= 2.0
    score[40] = -1.0
    score[:, :3] = -torch.inf
    sgn = torch.where(torch.rand(R, n, generator=g) < 0.5, -1.0, 1.0).double()
    y = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    s_pos = (sgn * y) < 0
    score[20:30] = torch.where(s_pos[20:30], score[20:30].abs() + 5.0, score[20:30])
    top_v, top_i = torch.topk(score, m, dim=1)
    rows = torch.arange(0, R, 2)
    pair_i, pair_t = _violating_pair(score, sgn, y, top_v, top_i, rows)
    for q, p in enumerate(rows.tolist()):
        for side, mask in enumerate((s_pos[p], ~s_pos[p])):
            v = torch.where(mask, score[p], -torch.inf)
            assert bool(pair_t[q, side]) == bool(v.max() > 0)
            if bool(pair_t[q, side]):
                assert int(pair_i[q, side]) == int(v.argmax())
