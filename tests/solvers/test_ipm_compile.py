"""The ``torch.compile``d interior point (``ipm_low_rank(compile=True)``) against the
uncompiled one and libsvm, and its fallback when compilation is unavailable."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.svm import SVC

from tests.contracts import contract_counts, contract_data
from tests.helpers import assert_svm_close
from torchsvm.solvers import ipm
from torchsvm.solvers.ipm import ipm_low_rank
from torchsvm.solvers.kkt import duality_gap

C = np.array([0.1, 1.0, 10.0])


def _problem(dtype: torch.dtype, with_s: bool = False):  # noqa: ANN202
    X, y = contract_data(60, 4, seed=2)
    counts = contract_counts(60, 3, seed=1)
    U = torch.tensor(C[:, None] * counts, dtype=dtype)
    Z = torch.tensor(X * y[:, None], dtype=dtype)
    S = torch.full_like(U, 0.3) if with_s else None
    return X, y, counts, Z, torch.tensor(y, dtype=dtype), U, S


@pytest.mark.slow  # compiling takes tens of seconds
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_compiled_ipm_matches_eager_and_libsvm(dtype: torch.dtype) -> None:
    X, y, counts, Z, yt, U, _ = _problem(dtype)
    a0, b0, it0, _ = ipm_low_rank(Z, yt, U, tol=1e-9)
    a1, b1, it1, _ = ipm_low_rank(Z, yt, U, tol=1e-9, compile=True)
    # the same method; fused loops round differently in the last bits
    assert bool(((it1 - it0).abs() <= 1).all())
    atol = (1e-7 if dtype == torch.float64 else 1e-3) * float(U.max())
    assert float((a1 - a0).abs().max()) <= atol
    assert bool((a1 >= 0).all()) and bool((a1 <= U).all())
    assert bool((a1[U == 0] == 0).all())
    rtol = 1e-3 if dtype == torch.float64 else 2e-2
    for p in range(3):
        ref = SVC(kernel="linear", C=C[p], tol=1e-10).fit(X, y, sample_weight=counts[p])
        f = (a1[p].double().numpy() * y) @ (X @ X.T) + float(b1[p])
        assert_svm_close(f, ref.decision_function(X), rtol, f"compiled ipm problem {p}")


@pytest.mark.slow
def test_compiled_ipm_with_diagonal_shift_certifies() -> None:
    _, _, _, Z, yt, U, S = _problem(torch.float64, with_s=True)
    a, _, _, _ = ipm_low_rank(Z, yt, U, S, tol=1e-11, compile=True)
    _, _, rel, _ = duality_gap(a, a @ (Z @ Z.T), yt, U, S)
    assert float(rel.max()) <= 1e-7


def _raise(*args):  # noqa: ANN002, ANN202
    raise RuntimeError("no C++ compiler")


def test_compile_failure_warns_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, _, Z, yt, U, _ = _problem(torch.float64)
    monkeypatch.setattr(ipm, "_COMPILED", (_raise, _raise))
    monkeypatch.setattr(ipm, "_COMPILE_FAILED", False)
    ref = ipm_low_rank(Z, yt, U, tol=1e-9)
    with pytest.warns(
        RuntimeWarning, match="torch.compile failed.*no C\\+\\+ compiler"
    ):
        out = ipm_low_rank(Z, yt, U, tol=1e-9, compile=True)
    assert all(torch.equal(r, o) for r, o in zip(ref, out, strict=True))
    assert ipm._COMPILE_FAILED


def test_no_torch_compile_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, _, Z, yt, U, _ = _problem(torch.float64)
    ref = ipm_low_rank(Z, yt, U, tol=1e-9)
    monkeypatch.delattr(torch, "compile")
    with pytest.warns(RuntimeWarning, match="no torch.compile"):
        out = ipm_low_rank(Z, yt, U, tol=1e-9, compile=True)
    assert all(torch.equal(r, o) for r, o in zip(ref, out, strict=True))
