"""The C path's roots from the vertex a = 0 by the compiled active set (issue 14).

``BoxQpSolver._roots_from_vertex`` solves the path's roots from ``a = 0`` and leaves the
rows it does not certify, or does not try after a slow pilot, to the interior point.
Every answer is compared with the interior-point route (``vertex_roots=False``) and
with libsvm at a tight tolerance, in the cases where the pilot is accepted, where it is
rejected, and where some rows stop at the iteration cap.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers import box_qp
from torchsvm.solvers.box_qp import BoxQpSolver

pytest.importorskip("numba")

TOL = 1e-9
CS = 2.0 ** np.arange(-5, -1)


def _problem(kind: str, B: int) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray]:
    if kind == "breast_cancer":
        # few support vectors from a = 0: the pilot is accepted
        X, y = load_breast_cancer(return_X_y=True)
        X, y = X[:200], y[:200]
    else:
        # flipped labels, many bounded coordinates: the pilot is rejected
        X, y = make_classification(
            240, 6, n_informative=4, n_redundant=0, flip_y=0.2, random_state=3
        )
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    n = X.shape[0]
    rng = np.random.default_rng(0)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)]
    )
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, CS, counts, kernel="linear", dtype="float64"
    )
    return prob, X, counts


def _solve(
    prob: BatchedSvmProblem, vertex: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple:
    """Solve; returns the solution, the roots given to ``_roots_from_vertex``, the
    rows it left to the interior point and its calls of the active set from 0."""
    seen: dict = {"roots": None, "left": None, "zero_starts": []}
    real_roots = BoxQpSolver._roots_from_vertex
    real_as = box_qp.active_set_low_rank

    def spy_roots(self, prob_, F, W, rows0, out, **kw):  # noqa: ANN001, ANN003, ANN202
        left = real_roots(self, prob_, F, W, rows0, out, **kw)
        seen["roots"], seen["left"] = rows0.clone(), left.clone()
        return left

    def spy_as(W, y, U, A0, **k):  # noqa: ANN001, ANN003, ANN202
        if k.get("parent") is None and not bool(A0.any()):
            seen["zero_starts"].append(U.shape[0])
        return real_as(W, y, U, A0, **k)

    with monkeypatch.context() as m:
        m.setattr(BoxQpSolver, "_roots_from_vertex", spy_roots)
        m.setattr(box_qp, "active_set_low_rank", spy_as)
        sol = BoxQpSolver(
            SolverConfig(tol=TOL, active_set_kernel="numba"), vertex_roots=vertex
        )(prob)
    return sol, seen


def _check_against_ipm_route_and_libsvm(
    prob: BatchedSvmProblem,
    X: np.ndarray,
    counts: np.ndarray,
    sol,  # noqa: ANN001
    ref,  # noqa: ANN001
) -> None:
    for s in (sol, ref):
        assert bool(s.converged.all())
        assert float(s.duality_gap.max()) <= TOL
        A, U = s.alpha, prob.U
        assert bool((A >= 0).all()) and bool((A <= U).all())
        assert float((A * prob.y).sum(1).abs().max()) <= 1e-9 * float(A.sum(1).max())
    # the same optimum: primal values, and w = sum a_i y_i x_i, b (unique here)
    p, q = sol.primal.numpy(), ref.primal.numpy()
    assert np.abs(p - q).max() <= 1e-8 * np.abs(q).max()
    w = ((sol.alpha * prob.y) @ prob.X).numpy()
    wr = ((ref.alpha * prob.y) @ prob.X).numpy()
    assert np.abs(w - wr).max() <= 1e-6 * max(1.0, np.abs(wr).max())
    # decision values against libsvm at a tight tolerance: the roots (first C) and a
    # problem of the last C of the first and last replicates
    c_idx = prob.index["c_idx"].numpy()
    rep_idx = prob.index["rep_idx"].numpy()
    B = counts.shape[0]
    picks = [
        int(np.nonzero((c_idx == c) & (rep_idx == r))[0][0])
        for c in (0, len(CS) - 1)
        for r in (0, B - 1)
    ]
    F = sol.select(torch.as_tensor(picks)).decision_function(
        prob.X, prob.y, prob.X, kernel="linear", gamma=prob.gamma
    )
    for j, p_ in enumerate(picks):
        svc = SVC(kernel="linear", C=CS[c_idx[p_]], tol=1e-10).fit(
            X, prob.y.numpy(), sample_weight=counts[rep_idx[p_]]
        )
        fr = svc.decision_function(X)
        assert np.abs(fr - F[j].numpy()).max() <= 1e-5 * max(1.0, np.abs(fr).max())


@pytest.mark.parametrize(
    ("kind", "accepted"), [("breast_cancer", True), ("flipped", False)]
)
def test_vertex_roots_match_interior_point_route(
    kind: str, accepted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    B = 40
    pilot = box_qp._vertex_pilot_rows(B)
    assert 1 < pilot < B  # a pilot and rows after it
    prob, X, counts = _problem(kind, B)
    sol, seen = _solve(prob, True, monkeypatch)
    ref, seen_ref = _solve(prob, False, monkeypatch)
    assert seen_ref["roots"] is None and seen_ref["zero_starts"] == []
    roots, left = seen["roots"], seen["left"]
    assert roots.numel() == B  # the first C
    # the pilot: rows spread evenly over the roots
    in_pilot = torch.zeros(B, dtype=torch.bool)
    in_pilot[torch.linspace(0, B - 1, pilot).round().long()] = True
    if accepted:
        # the pilot and the rest were solved from 0, and most certified there
        assert seen["zero_starts"] == [pilot, B - pilot]
        assert left.numel() < B // 4
    else:
        assert seen["zero_starts"] == [pilot]
        assert bool(torch.isin(roots[~in_pilot], left).all())
    # rows certified from the vertex: iterations within the cap, not the interior
    # point's; the others: the vertex iterations spent plus the interior point's
    done = roots[~torch.isin(roots, left)]
    k1 = X.shape[1] + 1
    assert bool((sol.n_iter[done] <= box_qp._VERTEX_MAX_ITERS * k1).all())
    tried = roots if accepted else roots[in_pilot]
    capped = tried[torch.isin(tried, left)]
    if not accepted:
        assert capped.numel() > 0
        # rows outside a rejected pilot: the interior point's alone
        rest = roots[~in_pilot]
        assert bool((sol.n_iter[rest] == ref.n_iter[rest]).all())
    cap = box_qp._VERTEX_MAX_ITERS * k1
    assert bool((sol.n_iter[capped] >= cap + ref.n_iter[capped]).all())
    _check_against_ipm_route_and_libsvm(prob, X, counts, sol, ref)


def test_vertex_roots_capped_rows_go_to_the_interior_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the flipped labels' roots take 180-260 iterations from 0 (k + 1 = 7): a cap of
    # 30 (k + 1) stops some of them uncertified, and a pilot threshold no pilot
    # exceeds tries every row; the capped rows must come back from the interior point
    # with the same answers
    prob, X, counts = _problem("flipped", 12)
    monkeypatch.setattr(box_qp, "_VERTEX_PILOT_SHARE", 2)
    monkeypatch.setattr(box_qp, "_VERTEX_PILOT_ROWS", 5)
    monkeypatch.setattr(box_qp, "_VERTEX_PILOT_ITERS", 10**6)
    monkeypatch.setattr(box_qp, "_VERTEX_MAX_ITERS", 30)
    sol, seen = _solve(prob, True, monkeypatch)
    ref, _ = _solve(prob, False, monkeypatch)
    assert seen["zero_starts"] == [5, 7]
    left = seen["left"]
    assert 0 < left.numel() < 12  # some capped, some certified from 0
    k1 = X.shape[1] + 1
    assert bool((sol.n_iter[left] >= 30 * k1 + ref.n_iter[left]).all())
    _check_against_ipm_route_and_libsvm(prob, X, counts, sol, ref)


def test_vertex_pilot_rows() -> None:
    # one root in _VERTEX_PILOT_SHARE, at least one, at most _VERTEX_PILOT_ROWS: a
    # rejected pilot costs a small share of trying every root from a = 0
    share, most = box_qp._VERTEX_PILOT_SHARE, box_qp._VERTEX_PILOT_ROWS
    assert box_qp._vertex_pilot_rows(1) == 1
    assert box_qp._vertex_pilot_rows(share) == 1
    assert box_qp._vertex_pilot_rows(share + 1) == 2
    assert box_qp._vertex_pilot_rows(500) == min(most, -(-500 // share))
    assert box_qp._vertex_pilot_rows(10**6) == most


def test_vertex_roots_only_with_the_compiled_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the torch active set (the route on CUDA and without numba) never tries a = 0
    prob, *_ = _problem("breast_cancer", 3)
    called = []
    real = BoxQpSolver._roots_from_vertex

    def spy(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        called.append(1)
        return real(self, *a, **kw)

    monkeypatch.setattr(BoxQpSolver, "_roots_from_vertex", spy)
    sol = BoxQpSolver(SolverConfig(tol=TOL, active_set_kernel="torch"))(prob)
    assert bool(sol.converged.all()) and not called
    monkeypatch.setattr(box_qp, "use_kernel", lambda kernel, device: False)
    sol = BoxQpSolver(SolverConfig(tol=TOL))(prob)
    assert bool(sol.converged.all()) and not called
    monkeypatch.undo()
    monkeypatch.setattr(BoxQpSolver, "_roots_from_vertex", spy)
    BoxQpSolver(SolverConfig(tol=TOL))(prob)
    assert called  # the default on the CPU with numba


def test_compiled_kernel_is_off_for_cuda_tensors() -> None:
    # CUDA tensors take the torch active set, whose roots the interior point solves
    assert not box_qp.use_kernel("auto", torch.device("cuda"))


@pytest.mark.gpu
def test_no_vertex_roots_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    prob, X, counts = _problem("breast_cancer", 4)
    called = []
    monkeypatch.setattr(
        BoxQpSolver, "_roots_from_vertex", lambda *a: called.append(1) or a[4]
    )
    sol = BoxQpSolver(SolverConfig(tol=TOL))(prob.to("cuda"))
    assert bool(sol.converged.all()) and not called


def _one_hot_separable(
    n: int, attrs: int, levels: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mushroom-like data: one-hot categorical columns (rank ``attrs (levels - 1) +
    1``), standardised, labels by a linear rule on them (separable)."""
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, levels, size=(n, attrs))
    X = np.zeros((n, attrs * levels))
    X[np.arange(n)[:, None], np.arange(attrs) * levels + cats] = 1.0
    score = X @ rng.normal(size=attrs * levels)
    y = np.where(score > np.median(score), 1.0, -1.0)
    return StandardScaler().fit_transform(X), y


def test_linear_batch_off_the_c_path_from_the_vertex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # mushroom's bootstrap batch (probabilities experiment, linear, 4500 rows, rank
    # 86 from 116 one-hot columns, separable) went to ADMM (rank above the old
    # ipm_max_rank = 64), 300-500 iterations per problem, 9077 s per fold; from
    # a = 0 the compiled active set certifies each problem in about 2 iterations per
    # support vector. Off the C path (n above _C_PATH_MAX_N) every problem is tried
    # from a = 0, the pilot spread over the C values; the answers are those of the
    # interior-point route and of libsvm
    X, y = _one_hot_separable(300, 20, 5, 0)
    n = X.shape[0]
    rng = np.random.default_rng(1)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(3)]
    )
    cs = 2.0 ** np.arange(-5, 6, 2)
    prob = BatchedSvmProblem.from_bootstrap(X, y, cs, counts, kernel="linear")
    P = prob.n_problems
    # n = 300: off the path
    monkeypatch.setattr(box_qp, "_C_PATH_MAX_N", 100)
    monkeypatch.setattr(box_qp, "_C_PATH_MAX_N_COMPILED", 100)
    calls: dict[str, list] = {"admm": [], "roots": []}
    real_admm, real_roots = box_qp.admm, BoxQpSolver._roots_from_vertex

    def spy_admm(prob_, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls["admm"].append(prob_.n_problems)
        return real_admm(prob_, *a, **k)

    def spy_roots(self, prob_, F, W, rows0, out, **kw):  # noqa: ANN001, ANN003, ANN202
        left = real_roots(self, prob_, F, W, rows0, out, **kw)
        calls["roots"].append((rows0.numel(), left.numel(), W.shape[1]))
        return left

    monkeypatch.setattr(box_qp, "admm", spy_admm)
    monkeypatch.setattr(BoxQpSolver, "_roots_from_vertex", spy_roots)
    cfg = SolverConfig(tol=1e-9, active_set_kernel="numba")
    sol = BoxQpSolver(cfg)(prob)
    ((tried, left, k),) = calls["roots"]
    assert 64 < k <= cfg.ipm_max_rank  # the old limit sent this rank to ADMM
    assert tried == P and left == 0 and calls["admm"] == []
    k1 = k + 1
    assert bool((sol.n_iter <= box_qp._VERTEX_MAX_ITERS * k1).all())
    calls["roots"].clear()
    ref = BoxQpSolver(cfg, vertex_roots=False)(prob)  # the interior point's route
    assert calls["roots"] == []
    for s in (sol, ref):
        assert bool(s.converged.all()) and float(s.duality_gap.max()) <= 1e-9
        assert bool((s.alpha >= 0).all()) and bool((s.alpha <= prob.U).all())
    p, q = sol.primal.numpy(), ref.primal.numpy()
    assert np.abs(p - q).max() <= 1e-8 * np.abs(q).max()
    c_idx = prob.index["c_idx"].numpy()
    rep_idx = prob.index["rep_idx"].numpy()
    for j in (0, P - 1):
        svc = SVC(kernel="linear", C=cs[c_idx[j]], tol=1e-10).fit(
            X, y, sample_weight=counts[rep_idx[j]]
        )
        fr = svc.decision_function(X)
        f = (X @ sol.w[j].numpy()) + float(sol.b[j])
        assert np.abs(fr - f).max() <= 1e-5 * max(1.0, np.abs(fr).max())
    # the old rank limit: the same batch by ADMM
    calls["admm"].clear()
    old = BoxQpSolver(SolverConfig(tol=1e-9, ipm_max_rank=64))(prob.select(slice(0, 1)))
    assert calls["admm"] == [1] and bool(old.converged.all())


def test_vertex_rows_certified_by_their_gap_whatever_the_kernel_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # on one-hot data some rows cycle on ties from a = 0 and reach the cap with
    # ``ok`` False, their points already within tol (mushroom: ~1.5 % of the batch);
    # the gap certifies them, so they do not go to the interior point (0.4 CPU s per
    # row there, its purification included). Here every row from a = 0 reports
    # ``ok`` False: the certified ones stay, the others (none here) would go on
    X, y = _one_hot_separable(300, 20, 5, 2)
    n = X.shape[0]
    counts = np.random.default_rng(3).multinomial(n, np.full(n, 1.0 / n), size=2)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, np.array([0.25, 4.0]), counts, kernel="linear"
    )
    monkeypatch.setattr(box_qp, "_C_PATH_MAX_N", 100)
    monkeypatch.setattr(box_qp, "_C_PATH_MAX_N_COMPILED", 100)
    real_as = box_qp.active_set_low_rank
    ipm_rows: list[int] = []
    real_ipm = BoxQpSolver._ipm

    def not_ok(W, y_, U, A0, **k):  # noqa: ANN001, ANN003, ANN202
        a, b, it, ok = real_as(W, y_, U, A0, **k)
        return a, b, it, ok & bool(A0.any())  # False from a = 0

    def spy_ipm(self, prob_, F):  # noqa: ANN001, ANN202
        ipm_rows.append(prob_.n_problems)
        return real_ipm(self, prob_, F)

    monkeypatch.setattr(box_qp, "active_set_low_rank", not_ok)
    monkeypatch.setattr(BoxQpSolver, "_ipm", spy_ipm)
    cfg = SolverConfig(tol=1e-9, active_set_kernel="numba")
    sol = BoxQpSolver(cfg)(prob)
    assert ipm_rows == []
    assert bool(sol.converged.all()) and float(sol.duality_gap.max()) <= 1e-9
    monkeypatch.setattr(box_qp, "active_set_low_rank", real_as)
    ref = BoxQpSolver(cfg, vertex_roots=False)(prob)
    assert ipm_rows == [prob.n_problems]
    p, q = sol.primal.numpy(), ref.primal.numpy()
    assert np.abs(p - q).max() <= 1e-8 * np.abs(q).max()


@pytest.mark.data
def test_mushroom_rows_cycling_on_ties_stop_at_their_certificate() -> None:
    # mushroom fold 5 of the probabilities experiment (linear, 4500 rows, rank 86):
    # from a = 0 about half of the rows at C = 2^-4 cycled on ties to the cap of
    # 10 (k + 1) iterations with their points certified long before (and ~35 % of
    # the fold's batch, so the pilot's mean rose above 5 (k + 1) and the batch went
    # to the interior point: 344 ms per problem against 18); a long row now stops at
    # a face minimiser whose gap is within tol
    from torchsvm.config import load_config
    from torchsvm.estimators._base import encode_binary
    from torchsvm.estimators.bootstrap import _draw_counts
    from torchsvm.experiments.runner import load_fold_data
    from torchsvm.solvers.active_set import active_set_low_rank
    from torchsvm.solvers.factor import build_factor
    from torchsvm.solvers.kkt import duality_gap

    cfg = load_config("configs/probabilities.toml")
    d = load_fold_data(cfg, "mushroom", 5)
    X = np.asarray(d["X_train"], dtype=np.float64)
    _, y = encode_binary(np.asarray(d["y_train"]), "test")
    counts = _draw_counts(
        y, int(cfg.bootstrap.n_bootstrap), cfg.protocol.seed * 1000 + 5
    )
    prob = BatchedSvmProblem.from_bootstrap(
        X, y.astype(np.float64), np.array([0.0625]), counts[:10], kernel="linear"
    )
    F = build_factor(prob)
    W = F.low_rank()
    k1 = W.shape[1] + 1
    U = prob.U
    a, b, it, ok = active_set_low_rank(
        W,
        prob.y,
        U,
        torch.zeros_like(U),
        max_iter=box_qp._VERTEX_MAX_ITERS * k1,
        tol=1e-7,
        kernel="numba",
    )
    assert bool(ok.all())
    assert int(it.max()) < box_qp._VERTEX_MAX_ITERS * k1
    assert float(duality_gap(a, F.matvec(a), prob.y, U, None)[2].max()) <= 1e-7
    assert float((a * prob.y).sum(1).abs().max()) <= 1e-9 * float(a.sum(1).max())


def _path_spies(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Record the verdicts of the roots' pilot, the rows tried from a = 0 without a
    pilot, and the rows the interior point solves."""
    seen: dict = {"verdicts": [], "no_pilot": [], "ipm": []}
    real_roots, real_ipm = BoxQpSolver._roots_from_vertex, BoxQpSolver._ipm_chunked

    def spy_roots(self, prob_, F, W, rows0, out, **kw):  # noqa: ANN001, ANN003, ANN202
        if not kw.get("with_pilot", True):
            seen["no_pilot"].append(rows0.numel())
        verdict: list[bool] = []
        left = real_roots(self, prob_, F, W, rows0, out, **{**kw, "accepted": verdict})
        seen["verdicts"] += verdict
        if kw.get("accepted") is not None:
            kw["accepted"] += verdict
        return left

    def spy_ipm(self, prob_, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen["ipm"].append(prob_.n_problems)
        return real_ipm(self, prob_, *a, **k)

    monkeypatch.setattr(BoxQpSolver, "_roots_from_vertex", spy_roots)
    monkeypatch.setattr(BoxQpSolver, "_ipm_chunked", spy_ipm)
    return seen


def _one_hot_batch() -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray]:
    X, y = _one_hot_separable(300, 20, 5, 4)
    n = X.shape[0]
    rng = np.random.default_rng(5)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(4)]
    )
    cs = 2.0 ** np.arange(-5, 6, 5)
    prob = BatchedSvmProblem.from_bootstrap(X, y, cs, counts, kernel="linear")
    return prob, X, counts, cs


def _check_libsvm(prob, sol, X, counts, cs, ref) -> None:  # noqa: ANN001
    for s in (sol, ref):
        assert bool(s.converged.all()) and float(s.duality_gap.max()) <= 1e-9
        assert bool((s.alpha >= 0).all()) and bool((s.alpha <= prob.U).all())
    p, q = sol.primal.numpy(), ref.primal.numpy()
    assert np.abs(p - q).max() <= 1e-8 * np.abs(q).max()
    c_idx = prob.index["c_idx"].numpy()
    rep_idx = prob.index["rep_idx"].numpy()
    y = prob.y.numpy()
    for j in (0, prob.n_problems // 2, prob.n_problems - 1):
        svc = SVC(kernel="linear", C=cs[c_idx[j]], tol=1e-10).fit(
            X, y, sample_weight=counts[rep_idx[j]]
        )
        fr = svc.decision_function(X)
        f = (X @ sol.w[j].numpy()) + float(sol.b[j])
        assert np.abs(fr - f).max() <= 1e-5 * max(1.0, np.abs(fr).max())


@pytest.mark.slow  # 10-12 s on the loaded machine
def test_large_n_path_keeps_a_certified_pilot_whatever_its_mean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # above _C_PATH_MAX_N (mushroom's bootstrap batch, n = 4500, k = 86) the roots'
    # pilot averaged 488 iterations from a = 0 against the threshold 5 (k + 1) = 435,
    # every row certified; the interior point and its purification of one-hot faces
    # then took 4x the batch's time. There a pilot whose rows are all certified is
    # kept; at or below _C_PATH_MAX_N the threshold still decides
    prob, X, counts, cs = _one_hot_batch()
    monkeypatch.setattr(box_qp, "_VERTEX_PILOT_ITERS", 0)  # every mean is above it
    cfg = SolverConfig(tol=1e-9, active_set_kernel="numba")
    ref = BoxQpSolver(cfg, c_path=False, vertex_roots=False)(prob)
    seen = _path_spies(monkeypatch)
    below = BoxQpSolver(cfg)(prob)  # n = 300 <= _C_PATH_MAX_N
    assert seen["verdicts"] == [False] and seen["ipm"]
    _check_libsvm(prob, below, X, counts, cs, ref)
    monkeypatch.setattr(box_qp, "_C_PATH_MAX_N", 100)  # n = 300 above it
    seen["verdicts"].clear()
    seen["ipm"].clear()
    above = BoxQpSolver(cfg)(prob)
    assert seen["verdicts"] == [True] and seen["ipm"] == []
    _check_libsvm(prob, above, X, counts, cs, ref)


@pytest.mark.slow  # 10-12 s on the loaded machine
def test_path_rows_left_go_from_the_vertex_where_the_roots_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # rows the path does not certify within _PATH_MAX_ITER go to the compiled active
    # set from a = 0 (all at once, no pilot) where the roots' pilot was accepted, and
    # only the rows it leaves to the interior point; where the pilot was rejected,
    # straight to the interior point
    prob, X, counts, cs = _one_hot_batch()
    monkeypatch.setattr(box_qp, "_PATH_MAX_ITER", 1)  # the path certifies few rows
    cfg = SolverConfig(tol=1e-9, active_set_kernel="numba")
    ref = BoxQpSolver(cfg, c_path=False, vertex_roots=False)(prob)
    seen = _path_spies(monkeypatch)
    sol = BoxQpSolver(cfg)(prob)
    assert seen["verdicts"] == [True]
    ((tried,),) = (seen["no_pilot"],)
    assert tried > 0 and seen["ipm"] == []
    assert bool((sol.n_iter > 0).all())
    _check_libsvm(prob, sol, X, counts, cs, ref)
    monkeypatch.setattr(box_qp, "_VERTEX_PILOT_ITERS", 0)  # pilot rejected
    for v in seen.values():
        v.clear()
    sol = BoxQpSolver(cfg)(prob)
    assert seen["verdicts"] == [False] and seen["no_pilot"] == []
    assert sum(seen["ipm"]) > prob.n_problems // 3  # the roots, then the path's rows
    _check_libsvm(prob, sol, X, counts, cs, ref)
