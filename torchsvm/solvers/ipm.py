"""Batched primal-dual interior-point method for SVM duals with a low-rank ``Q`` (SPEC S1).

For the linear kernel (and any kernel whose ``Q = W W^T`` has a small rank ``k``) every
problem ``p`` of the batch::

    min_a  1/2 a^T (W W^T + diag(s_p)) a - 1^T a   s.t.  y^T a = 0,  0 <= a <= u_p

is solved by Mehrotra's predictor-corrector method. Each Newton system
``(W W^T + diag(e_p)) da + y db = g`` is solved through the Woodbury identity with one
``(k, k)`` Cholesky factor per problem, ``I + W^T diag(1/e_p) W``. All problems form
their factors in one GEMM, ``(1/e) @ [w_i w_i^T]_i`` of shape ``(P, n) @ (n, k^2)``,
against the row-wise outer products of the shared ``W``; nothing of size ``(P, n, k)`` is
materialised. An iteration costs ``O(P n k^2)`` flops, and the method needs a few tens
of iterations whatever the conditioning, where first-order methods need hundreds to
identify which of thousands of coordinates sit on their bounds (Fine & Scheinberg, 2001).

Coordinates with ``u_pi = 0`` (out-of-bag rows of a bootstrap batch) are fixed at zero
and cost nothing. The interior iterate is not a vertex of the box: the caller rounds
coordinates near their bounds and finishes with the active-set polish, whose duality
gap is the certificate (:func:`torchsvm.solvers.kkt.duality_gap`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

#: on the CPU, rows are solved in blocks whose ``(rows, n)`` arrays take about this many
#: bytes (see :func:`ipm_low_rank`'s ``block_rows``)
_CPU_BLOCK_BYTES = 2 << 20
_MIN_BLOCK_ROWS = 16


def row_block_size(P: int, n: int, dtype: torch.dtype, device: torch.device) -> int:
    """Rows per block of batched ``(P, n)`` passes (:func:`ipm_low_rank`,
    :func:`~torchsvm.solvers.kkt.project_face`): all of them off the CPU; on the CPU
    as many as keep one ``(rows, n)`` array near :data:`_CPU_BLOCK_BYTES`."""
    if device.type != "cpu":
        return P
    per_row = max(1, n * torch.empty((), dtype=dtype).element_size())
    return max(_MIN_BLOCK_ROWS, _CPU_BLOCK_BYTES // per_row)


def _woodbury_solve(
    W: torch.Tensor, L: torch.Tensor, E_inv: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    """``(W W^T + diag(1 / E_inv))^{-1} v`` per row, with ``L L^T = I + W^T diag(E_inv) W``."""
    ev = E_inv * v
    t = torch.cholesky_solve((ev @ W)[:, :, None], L)[:, :, 0]
    return ev.addcmul_(E_inv, t @ W.T, value=-1.0)


def _max_step(inv_a, inv_su, inv_z, inv_w, da, dz, dw) -> torch.Tensor:  # noqa: ANN001
    """Largest step in (0, 1] keeping ``a``, ``u - a``, ``z``, ``w`` nonnegative.

    From the inverses of the four, each zero off its own coordinates (``inv_a = 1 / a``
    where ``u > 0``, ``inv_su = 1 / (u - a)`` where ``u`` is finite, ...): the step to
    the boundary of ``v >= 0`` along ``dv`` is ``1 / max(1, max(-dv / v))``, one product
    and one reduction over ``(P, n)`` for each of the four, where the ratio ``v / -dv``
    on the blocking coordinates took five passes. With the fused passes of
    :func:`_newton_step` the interior point took 8-15 % less CPU time on the main job's
    fold's 500 first-C problems and 11 % less on S8's linear batch
    (``scripts/ab_ipm.py``). Masks are 0/1 products, not ``torch.where``: on the CPU
    (torch 2.13) a ``where`` over ``(P, n)`` costs several elementwise products."""
    m = torch.stack(
        [
            torch.mul(da, inv_a).amin(1).neg_(),
            torch.mul(da, inv_su).amax(1),
            torch.mul(dz, inv_z).amin(1).neg_(),
            torch.mul(dw, inv_w).amin(1).neg_(),
        ]
    ).amax(0)
    return m.clamp_min_(1.0).reciprocal_()


@dataclass
class _Newton:
    """One iteration's factorised Newton system (shared by predictor and corrector)."""

    W: torch.Tensor
    L: torch.Tensor
    E_inv: torch.Tensor
    inv_a: torch.Tensor
    inv_su: torch.Tensor
    act: torch.Tensor
    rd: torch.Tensor
    rp: torch.Tensor
    y: torch.Tensor
    Ainv_y: torch.Tensor
    yAy: torch.Tensor
    z: torch.Tensor
    w: torch.Tensor

    def direction(
        self, rcz: torch.Tensor, rcw: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Newton step for complementarity targets ``rcz`` (lower) and ``rcw`` (upper)."""
        # (fused: each temporary below is one pass over ``(P, n)``)
        g = torch.mul(rcz, self.inv_a).addcmul_(rcw, self.inv_su, value=-1.0)
        g.sub_(self.rd).mul_(self.act)
        Ag = _woodbury_solve(self.W, self.L, self.E_inv, g)
        db = (Ag @ self.y + self.rp) / self.yAy
        da = Ag.addcmul_(db[:, None], self.Ainv_y, value=-1.0)
        dz = torch.addcmul(rcz, self.z, da, value=-1.0).mul_(self.inv_a)
        dw = torch.addcmul(rcw, self.w, da).mul_(self.inv_su)
        return da, db, dz, dw


def _factor(
    E_inv: torch.Tensor, WW: torch.Tensor, lower: torch.Tensor, k: int
) -> torch.Tensor:
    """Cholesky factors of ``I + W^T diag(E_inv) W`` per row from the packed ``WW``."""
    Mflat = E_inv @ WW  # (P, k(k+1)/2)
    M = torch.zeros((E_inv.shape[0], k * k), dtype=E_inv.dtype, device=E_inv.device)
    M = M.index_copy(1, lower, Mflat).view(-1, k, k)
    M = M + torch.eye(k, dtype=M.dtype, device=M.device)
    return torch.linalg.cholesky(M)


def _residuals(a, z, w, b, W, y, Ufa, upa, acta, nupa, Sa, m, tol, has_s):  # noqa: ANN001, ANN202
    """Slack ``u - a``, dual and primal residuals, mean complementarity and the rows
    that have converged (relative to the row's scale)."""
    # u - a on the upper-bounded coordinates, 1 elsewhere (Ufa = 0 there)
    su = torch.addcmul(nupa, Ufa - a, upa)
    Ha = (a @ W) @ W.T + Sa * a if has_s else (a @ W) @ W.T
    rd = torch.addcmul(Ha, b[:, None], y).sub_(1.0).sub_(z).add_(w).mul_(acta)
    rp = a @ y
    comp = (a * z).sum(1) + (su * w).mul_(upa).sum(1)
    mu = comp / m
    # largest |.| of a row by one aminmax pass; a >= 0, so its sum is its 1-norm
    h_lo, h_hi = torch.aminmax(Ha, dim=1)
    scale = 1.0 + torch.maximum(h_hi, -h_lo)
    r_lo, r_hi = torch.aminmax(rd, dim=1)
    done = (
        (mu <= tol * scale)
        & (torch.maximum(r_hi, -r_lo) <= tol * scale)
        & (rp.abs() <= tol * (1.0 + a.sum(1)))
    )
    return su, rd, rp, mu, done


def _newton_step(  # noqa: ANN202
    a,
    z,
    w,
    b,
    su,
    rd,
    rp,
    mu,
    W,
    WW,
    lower,
    y,
    Ufa,
    upa,
    acta,
    nacta,
    nupa,
    Sa,
    m,
    reg,  # noqa: ANN001
):
    """One Mehrotra predictor-corrector step; returns the new ``a, z, w, b``."""
    dt = a.dtype
    eps, tiny, big = torch.finfo(dt).eps, torch.finfo(dt).tiny, torch.finfo(dt).max
    # inverse slacks, zero on fixed coordinates (a = 0 there; su = 1 off the upper set)
    inv_a = acta / (a + nacta)
    inv_su = upa / su
    # z > 0 and w > 0 on their coordinates (zero off them at the start)
    inv_z = acta / (z + nacta)
    inv_w = upa / (w + nupa)
    D = torch.mul(z, inv_a).addcmul_(w, inv_su)
    # primal regularisation: free coordinates have D -> 0 and Q is singular
    E_inv = acta / torch.maximum(D.add_(Sa), reg)
    L = _factor(E_inv, WW, lower, W.shape[1])
    Ainv_y = _woodbury_solve(W, L, E_inv, y.expand_as(a))
    yAy = Ainv_y @ y

    sysm = _Newton(W, L, E_inv, inv_a, inv_su, acta, rd, rp, y, Ainv_y, yAy, z, w)

    # predictor (the complementarity products a z and (u - a) w serve both steps)
    az, sw = a * z, su * w
    da, db, dz, dw = sysm.direction(
        torch.mul(az, acta).neg_(), torch.mul(sw, upa).neg_()
    )
    t = _max_step(inv_a, inv_su, inv_z, inv_w, da, dz, dw)
    tc = t[:, None]
    a_aff = torch.addcmul(a, tc, da)
    z_aff = torch.addcmul(z, tc, dz)
    w_aff = torch.addcmul(w, tc, dw)
    mu_aff = (
        (a_aff * z_aff).sum(1)
        + torch.addcmul(su, tc, da, value=-1.0).mul_(w_aff).mul_(upa).sum(1)
    ) / m
    sigma = (mu_aff / mu.clamp_min(1e-300)).clamp(0.0, 1.0) ** 3
    sm = (sigma * mu)[:, None]
    # corrector
    rcz = torch.sub(sm, az).addcmul_(da, dz, value=-1.0).mul_(acta)
    rcw = torch.sub(sm, sw).addcmul_(da, dw).mul_(upa)
    da, db, dz, dw = sysm.direction(rcz, rcw)
    t = (0.995 * _max_step(inv_a, inv_su, inv_z, inv_w, da, dz, dw)).clamp_max(1.0)
    tt = t[:, None]
    a = torch.addcmul(a, tt, da)
    z = torch.addcmul(z, tt, dz).clamp_min_(tiny)
    w = torch.addcmul(w, tt, dw).clamp_min_(tiny)
    b = b + t * db
    # stay strictly inside the box in floating point (float32 rounds a onto u)
    # (Ufa = 0 off the upper set; the products select exactly, values are finite)
    gap_a = torch.addcmul(Ufa, 1.0 + a, nupa).mul_(4 * eps)
    a = torch.maximum(a, gap_a).mul_(acta)
    a = torch.minimum(a, torch.add(Ufa - gap_a, nupa, alpha=big))
    return a, z, w, b


_COMPILED: tuple | None = None


def _compiled() -> tuple:
    """``torch.compile``d :func:`_residuals` and :func:`_newton_step` (built once).

    Inductor fuses each function's elementwise passes and reductions over ``(P, n)``
    into a few loops (C++/OpenMP on the CPU, Triton on CUDA); the GEMMs and the
    Cholesky calls stay ATen calls. The batch dimension becomes dynamic after its first
    change (rows leave as they converge), so a solve compiles a few times at most."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = (
            torch.compile(_residuals, dynamic=None),
            torch.compile(_newton_step, dynamic=None),
        )
    return _COMPILED


def _with_fallback(compiled, eager):  # noqa: ANN001, ANN202
    """Call ``compiled``; if compiling or running it fails, warn once and use ``eager``
    for the rest of the process (the step functions are pure, so a retry is safe)."""

    def call(*args):  # noqa: ANN002, ANN202
        global _COMPILE_FAILED
        if not _COMPILE_FAILED:
            try:
                return compiled(*args)
            except Exception as exc:  # noqa: BLE001 - any compiler / toolchain failure
                _COMPILE_FAILED = True
                warnings.warn(
                    "ipm_low_rank(compile=True): torch.compile failed "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                    "using the uncompiled interior point",
                    RuntimeWarning,
                    stacklevel=3,
                )
        return eager(*args)

    return call


_COMPILE_FAILED = False


def ipm_low_rank(
    W: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor | None = None,
    *,
    tol: float = 1e-10,
    max_iter: int = 60,
    a0: torch.Tensor | None = None,
    compile: bool = False,
    block_rows: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Solve every row's box-constrained dual by a batched interior-point method.

    Parameters
    ----------
    W : tensor of shape (n, k)
        ``Q = W W^T`` (shared by the batch).
    y : tensor of shape (n,)
        Labels in {-1, +1}.
    U : tensor of shape (P, n)
        Upper bounds (``0`` fixes a coordinate at zero; ``inf``: no upper bound).
    S : tensor of shape (P, n), optional
        Nonnegative diagonal shift (SPEC S1b).
    tol : float
        Stop a row when its mean complementarity and its residuals, relative to the
        row's scale, are below ``tol``.
    max_iter : int
    a0 : tensor of shape (P, n), optional
        Ignored beyond its support: interior-point methods start from the centre.
    compile : bool
        Run each iteration's residuals and Newton step through ``torch.compile``
        (fused elementwise passes; same method, iterates equal to rounding). The first
        solves of a process pay the compilation (tens of seconds to minutes on a
        loaded CPU); if it fails, a ``RuntimeWarning`` and the uncompiled path.
    block_rows : int, optional
        Solve the rows in blocks of at most this many, one after the other (the rows
        are independent: the same iterations per row). None: on the CPU, blocks whose
        ``(rows, n)`` arrays take about 2 MiB; elsewhere one block. An iteration makes
        dozens of elementwise passes and temporaries over ``(rows, n)``; measured on
        churn's bootstrap batch (5500 problems, n = 2582 merged rows; docs/
        benchmarks.md, "The probabilities experiment's bootstrap batch on churn"), one
        block of 5500 rows spent most of its CPU time in the kernel, zeroing the fresh
        pages of its 100 MB temporaries (the allocator maps arrays that large anew each
        time), and blocks that stay in the cache cost a fraction of it. 0: one block.

    Returns
    -------
    a : tensor of shape (P, n)
        Interior iterate (strictly inside the box on the coordinates with ``u > 0``).
    b : tensor of shape (P,)
        The multiplier of ``y^T a = 0`` (the SVM intercept).
    n_iter : tensor of shape (P,)
    mu : tensor of shape (P,)
        Final mean complementarity.
    """
    P, n = U.shape
    k = W.shape[1]
    dt, dev = U.dtype, U.device
    rb = row_block_size(P, n, dt, dev) if block_rows is None else int(block_rows)
    if 0 < rb < P:
        parts = [
            ipm_low_rank(
                W,
                y,
                U[s : s + rb],
                None if S is None else S[s : s + rb],
                tol=tol,
                max_iter=max_iter,
                compile=compile,
                block_rows=0,
            )
            for s in range(0, P, rb)
        ]
        return tuple(torch.cat([part[i] for part in parts]) for i in range(4))  # type: ignore[return-value]
    act = U > 0
    upper = act & torch.isfinite(U)
    actf, upf = act.to(dt), upper.to(dt)
    m = (act.sum(1) + upper.sum(1)).to(dt).clamp_min(1.0)  # complementarity pairs
    # row-wise outer products of W, upper triangle only: (n, k(k+1)/2)
    iu = torch.triu_indices(k, k, device=dev)
    WW = (W[:, iu[0]] * W[:, iu[1]]).contiguous()
    Ufin = torch.where(upper, U, 0.0)

    # starting point: the centre of each box, unit multipliers
    a = torch.where(upper, 0.5 * U, actf)
    z = actf.clone()
    w = upf.clone()
    b = torch.zeros(P, dtype=dt, device=dev)
    Sv = torch.zeros_like(U) if S is None else S

    # positions of the lower triangle in a row-major (k, k) block: the Cholesky
    # factorisation reads only the lower triangle, so the upper one is never filled
    lower = (iu[1] * k + iu[0]).contiguous()

    qdiag = (W * W).sum(1)
    eps = torch.finfo(dt).eps
    reg = max(1e-11, 1e3 * eps) * max(1.0, float(qdiag.max()))
    tol = max(tol, 100 * eps)
    n_iter = torch.zeros(P, dtype=torch.long, device=dev)
    mu = torch.zeros(P, dtype=dt, device=dev)
    rows = torch.arange(P, device=dev)
    A_out, b_out, mu_out = a.clone(), b.clone(), mu.clone()
    Ua, Ufa, upa, acta, Sa = U, Ufin, upf, actf, Sv
    # 0/1 masks of the coordinates without a (finite) bound: the selections below are
    # products with 0/1 masks, exact for finite values, rather than ``torch.where``
    # (several times slower on the CPU over ``(P, n)``; see ``_max_step``)
    nacta, nupa = 1.0 - acta, 1.0 - upa
    resid, newton = _residuals, _newton_step
    if compile:
        if hasattr(torch, "compile"):
            c_resid, c_newton = _compiled()
            resid = _with_fallback(c_resid, _residuals)
            newton = _with_fallback(c_newton, _newton_step)
        else:
            warnings.warn(
                "ipm_low_rank(compile=True): this torch has no torch.compile; "
                "using the uncompiled interior point",
                RuntimeWarning,
                stacklevel=2,
            )
    # tensors, not Python floats: a compiled step would specialise on their values
    reg_t = torch.tensor(reg, dtype=dt, device=dev)
    tol_t = torch.tensor(tol, dtype=dt, device=dev)
    for it in range(max_iter):
        su, rd, rp, mu, done = resid(
            a, z, w, b, W, y, Ufa, upa, acta, nupa, Sa, m[rows], tol_t, S is not None
        )
        n_iter[rows] = it
        if bool(done.any()) or it == max_iter - 1:
            fin = done if it < max_iter - 1 else torch.ones_like(done)
            A_out[rows[fin]] = a[fin]
            b_out[rows[fin]] = b[fin]
            mu_out[rows[fin]] = mu[fin]
            keep = ~fin
            if not bool(keep.any()):
                break
            rows, a, z, w, b, su, rd, rp, mu = (
                t[keep] for t in (rows, a, z, w, b, su, rd, rp, mu)
            )
            Ua, Ufa, upa, acta, Sa, nacta, nupa = (
                t[keep] for t in (Ua, Ufa, upa, acta, Sa, nacta, nupa)
            )
        a, z, w, b = newton(
            a,
            z,
            w,
            b,
            su,
            rd,
            rp,
            mu,
            W,
            WW,
            lower,
            y,
            Ufa,
            upa,
            acta,
            nacta,
            nupa,
            Sa,
            m[rows],
            reg_t,
        )
    del Ua
    return A_out, b_out, n_iter, mu_out
