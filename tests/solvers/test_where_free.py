"""The solvers' selections by 0/1-mask arithmetic (instead of ``torch.where``) against
the ``torch.where`` formulas they replace, on edge values (zeros, infinite bounds, masked
coordinates)."""

from __future__ import annotations

import pytest
import torch

from torchsvm.solvers.ipm import _max_step
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
def test_max_step_matches_where(dtype: torch.dtype) -> None:
    """The interior point's step to the boundary, from the masked inverses of ``a``,
    ``u - a``, ``z`` and ``w``, against the ratio test written with ``torch.where``."""
    g = torch.Generator().manual_seed(1)
    P, n = 9, 40
    tiny = torch.finfo(dtype).tiny

    def pos() -> torch.Tensor:
        return torch.rand(P, n, generator=g, dtype=dtype) + 1e-3

    a, su, z, w = pos(), pos(), pos(), pos()
    da, dz, dw = (torch.randn(P, n, generator=g, dtype=dtype) for _ in range(3))
    act = torch.rand(P, n, generator=g) < 0.7
    up = act & (torch.rand(P, n, generator=g) < 0.8)
    da[0], dz[0], dw[0] = da[0].abs(), dz[0].abs(), dw[0].abs()  # only da > 0 blocks
    da[1, :5] = 0.0
    z[2, 3] = tiny  # an iterate at the floor of its clamp: the step is ~0
    dz[2, 3] = -1.0
    act[2, 3] = True

    def ref_step(v: torch.Tensor, dv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        blk = mask & (dv < 0)
        ratio = torch.where(blk, v / torch.where(blk, -dv, 1.0), torch.inf)
        return ratio.amin(1).clamp_max(1.0)

    ref = torch.minimum(
        torch.minimum(ref_step(a, da, act), ref_step(su, -da, up)),
        torch.minimum(ref_step(z, dz, act), ref_step(w, dw, up)),
    )
    actf, upf = act.to(dtype), up.to(dtype)
    out = _max_step(actf / a, upf / su, actf / z, upf / w, da, dz, dw)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(out, ref, rtol=4 * eps, atol=2 * tiny)
    assert bool(((out > 0) | (ref <= 2 * tiny)).all()) and bool((out <= 1.0).all())
    # row 0: only u - a can block (da > 0 there)
    torch.testing.assert_close(
        out[0], ref_step(su[0:1], -da[0:1], up[0:1])[0], rtol=4 * eps, atol=0
    )
    assert float(out[2]) <= 2 * tiny
    # every masked coordinate stays nonnegative
    t = out[:, None]
    for v, dv, mask in ((a, da, act), (su, -da, up), (z, dz, act), (w, dw, up)):
        assert bool(((v + t * dv) >= -8 * eps * v)[mask].all())
