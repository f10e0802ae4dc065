"""The solvers' selections by 0/1-mask arithmetic (instead of ``torch.where``) against
the ``torch.where`` formulas they replace, on edge values (zeros, infinite bounds)."""

from __future__ import annotations

import pytest
import torch

from torchsvm.solvers.ipm import _step_to_boundary
from torchsvm.solvers.kkt import loss_value


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_hinge_loss_value_matches_where(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    xi = torch.randn(7, 50, generator=g, dtype=dtype)
    xi[:, :10] = 0.0
    U = torch.rand(7, 50, generator=g, dtype=dtype) * 3
    U[:, ::3] = torch.inf
    U[:, 1::7] = 0.0
    ref = torch.where(xi > 0, U * xi, torch.zeros((), dtype=dtype))
    out = loss_value(xi, U, None)
    assert torch.equal(out, ref)
    assert not torch.isnan(out).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_step_to_boundary_matches_where(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(1)
    P, n = 9, 40
    v = torch.rand(P, n, generator=g, dtype=dtype) + torch.finfo(dtype).tiny
    dv = torch.randn(P, n, generator=g, dtype=dtype)
    mask = torch.rand(P, n, generator=g) < 0.7
    dv[0] = dv[0].abs()  # no blocking coordinate: full step
    dv[1, :5] = 0.0
    v = torch.where(mask, v, torch.randn(P, n, generator=g, dtype=dtype).abs())
    ratio = (v + (~mask).to(dtype)) / torch.where(mask & (dv < 0), -dv, 0.0)
    ref = ratio.amin(1).clamp_max(1.0)
    maskf = mask.to(dtype)
    out = _step_to_boundary(v, dv, maskf, 1.0 - maskf)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert out[0] == 1.0
    # the step keeps every masked coordinate nonnegative
    assert bool(((v + out[:, None] * dv) >= -1e-6 * v.abs())[mask].all())
