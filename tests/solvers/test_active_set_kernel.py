"""The compiled per-row active set (numba) against the batched torch path (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from torchsvm.config import SolverConfig
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers import active_set_kernel
from torchsvm.solvers.active_set import active_set_low_rank, use_kernel
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.factor import build_factor
from torchsvm.solvers.kkt import duality_gap, project_face

pytest.importorskip("numba")


def _problem(
    n: int, d: int, B: int, seed: int, dtype: str = "float64"
) -> tuple[BatchedSvmProblem, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_classification(
        n, d, n_informative=min(d - 1, 5), n_redundant=0, flip_y=0.05, random_state=seed
    )
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    counts = np.stack(
        [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(B)]
    )
    Cs = 2.0 ** np.arange(-5, 6)
    prob = BatchedSvmProblem.from_bootstrap(
        X, y, Cs, counts, kernel="linear", dtype=dtype
    )
    return prob, X, y, counts, Cs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kernel_path_matches_torch_path_and_libsvm(dtype: str) -> None:
    # the whole C path (interior point at the first C, the active set's clean-up and
    # the pipelined path) by each kernel: every problem certified, the same primal
    # optimum, and decision values as libsvm's at a tight tolerance
    prob, X, y, counts, Cs = _problem(240, 8, 6, seed=11, dtype=dtype)
    tol = 1e-8 if dtype == "float64" else 1e-3
    # the roots by the interior point on both (the compiled kernel's roots from a = 0
    # are tests/solvers/test_vertex_roots.py's), so that the iterations compare
    sols = {
        kern: BoxQpSolver(
            SolverConfig(tol=tol, active_set_kernel=kern), vertex_roots=False
        )(prob)
        for kern in ("torch", "numba")
    }
    for s in sols.values():
        assert bool(s.converged.all())
        assert float(s.duality_gap.max()) <= tol
        A, U = s.alpha.double(), prob.U.double()
        assert bool((A >= 0).all()) and bool((A <= U).all())
        assert float((A * prob.y.double()).sum(1).abs().max()) <= 1e-4
    p_t = sols["torch"].primal.double().numpy()
    p_n = sols["numba"].primal.double().numpy()
    np.testing.assert_allclose(p_n, p_t, rtol=4 * tol, atol=4 * tol)
    # the same method: the same iterations (float64) up to rare rounding ties
    it_t = sols["torch"].n_iter.double().mean()
    it_n = sols["numba"].n_iter.double().mean()
    if dtype == "float64":
        assert abs(float(it_t - it_n)) <= 0.05 * float(it_t)
    s = sols["numba"]
    c_idx = prob.index["c_idx"].numpy()
    rep_idx = prob.index["rep_idx"].numpy()
    Xd = prob.X.double()
    F = (
        (s.alpha.double() * prob.y.double()) @ Xd @ Xd.T + s.b.double()[:, None]
    ).numpy()
    for r in (0, 5, 10):
        p = int(np.nonzero(c_idx == r)[0][0])
        ref = SVC(kernel="linear", C=Cs[r], tol=1e-10).fit(
            X, y, sample_weight=counts[rep_idx[p]]
        )
        fr = ref.decision_function(X)
        rt = 1e-4 if dtype == "float64" else 1e-2
        assert np.abs(F[p] - fr).max() <= rt * max(1.0, np.abs(fr).max())


def test_kernel_chains_match_torch_chains_row_by_row() -> None:
    # one call with parent / make_start (the pipelined C path): the kernel runs by
    # generations, the torch path as the parents stop; each row gets the same start,
    # so the rows' iterations and answers agree
    prob, *_ = _problem(200, 6, 5, seed=4)
    F = build_factor(prob)
    W, y, U = F.low_rank(), prob.y, prob.U
    c_idx = prob.index["c_idx"]
    # chains over C: row q's parent is the same replicate at the previous C
    order = torch.argsort(c_idx, stable=True)
    U = U[order]
    P = U.shape[0]
    B = 5
    parent = torch.arange(P) - B
    parent[:B] = -1
    ratio = 2.0

    def make_start(q: torch.Tensor, A_par: torch.Tensor) -> torch.Tensor:
        return project_face(A_par * ratio, y, U[q])

    A0 = torch.zeros_like(U)
    out = {}
    with torch.inference_mode():
        for kern in ("torch", "numba"):
            out[kern] = active_set_low_rank(
                W,
                y,
                U,
                A0,
                max_iter=200,
                tol=1e-10,
                parent=parent,
                make_start=make_start,
                kernel=kern,
            )
    (At, bt, itt, okt), (An, bn, itn, okn) = out["torch"], out["numba"]
    assert bool(okt.all()) and bool(okn.all())
    assert int((itt != itn).sum()) <= P // 10
    QA = F.matvec(An)
    rel = duality_gap(An, QA, y, U, None)[2]
    assert float(rel.max()) <= 1e-10
    # w = sum a_i y_i x_i is unique at the optimum
    wt = (At * y) @ prob.X
    wn = (An * y) @ prob.X
    assert float((wt - wn).abs().max()) <= 1e-6 * max(1.0, float(wt.abs().max()))
    assert float((bt - bn).abs().max()) <= 1e-6


def test_kernel_from_a_vertex_and_from_a_wide_face() -> None:
    # a = 0 (no free coordinate: a pair must be freed) and the clipped interior
    # point with most coordinates free (jittered solves of faces wider than k + 1)
    prob, *_ = _problem(150, 5, 2, seed=9)
    F = build_factor(prob)
    W, y, U = F.low_rank(), prob.y, prob.U
    wide = project_face(0.5 * U, y, U)
    for A0 in (torch.zeros_like(U), wide):
        with torch.inference_mode():
            A, b, it, ok = active_set_low_rank(
                W, y, U, A0, max_iter=400, tol=1e-9, kernel="numba"
            )
        assert bool(ok.all())
        rel = duality_gap(A, F.matvec(A), y, U, None, b=b)[2]
        assert float(rel.max()) <= 1e-9


def test_kernel_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    assert use_kernel("auto", cpu) and use_kernel("numba", cpu)
    assert not use_kernel("torch", cpu)
    assert not use_kernel("auto", torch.device("meta"))
    with pytest.raises(ValueError, match="kernel"):
        use_kernel("fast", cpu)
    # without numba: auto takes the torch path, an explicit request fails
    monkeypatch.setattr(active_set_kernel, "_HAVE_NUMBA", False)
    assert not use_kernel("auto", cpu)
    with pytest.raises(RuntimeError, match="numba"):
        use_kernel("numba", cpu)


def test_warm_compiles_the_kernel_with_the_solvers_argument_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # callers with a time limit warm before their clock starts: a real batch after
    # warm() must add no numba signature (no compilation left inside the clock)
    active_set_kernel.warm()
    before = list(active_set_kernel._solve_rows.signatures)
    assert before
    kernel, calls = active_set_kernel._solve_rows, []

    def counted(*args):  # noqa: ANN002, ANN202
        calls.append(1)
        return kernel(*args)

    monkeypatch.setattr(active_set_kernel, "_solve_rows", counted)
    prob, *_ = _problem(60, 4, 3, seed=7)
    res = BoxQpSolver(SolverConfig(tol=1e-7, active_set_kernel="numba"))(prob)
    assert bool(res.converged.all())
    assert calls
    assert list(kernel.signatures) == before
