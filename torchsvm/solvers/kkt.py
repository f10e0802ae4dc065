"""Optimality certificates for batched SVM duals: projection, intercept, duality gap.

For problem ``p`` with bounds ``u`` and diagonal shift ``s`` (SPEC S1, S1b) the primal is::

    P(w, b) = 1/2 ||w||^2 + sum_i l_i(1 - y_i (w . phi(x_i) + b)),

with ``l_i`` the convex conjugate of the dual's box/quadratic term (a Huber loss):
``l(xi) = t xi - s t^2 / 2`` where ``t = clip(xi / s, 0, u)`` (``s > 0``) or
``t = u 1[xi > 0]`` (``s = 0``, the hinge ``u max(0, xi)``). The dual is::

    D(a) = 1^T a - 1/2 a^T Q a - 1/2 sum_i s_i a_i^2,   0 <= a <= u,  y^T a = 0.

Given a feasible ``a`` we take ``w = sum_i a_i y_i phi(x_i)`` and the intercept that
minimises ``P(w, .)`` exactly (a 1-D convex problem solved by bisection on its one-sided
derivatives). When the minimisers form an interval, its midpoint is returned: this is
libsvm's rule when no free support vector exists, and with free support vectors at the
optimum the interval is the single value ``mean(y_i - (Qa)_i y_i)`` of SPEC S1.
``P - D >= 0`` is then a certificate of optimality, reported relative to ``max(1, |P|)``.
"""

from __future__ import annotations

import torch

_N_BISECT = 62


def _project(
    Z: torch.Tensor, y: torch.Tensor, U: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``clip(z - theta d, 0, u)`` with ``theta`` the root of ``h = y^T clip(...)``.

    ``d`` is ``y`` (the Euclidean projection) or ``y`` masked to the coordinates allowed
    to move. ``h`` is decreasing and piecewise linear; safeguarded Newton steps are exact
    once the moving free set is identified, with a bisection fallback for rows where
    Newton has not settled. Returns the points and a flag per row: ``|y^T a|`` at
    rounding level (False only when the masked coordinates cannot absorb the residual).
    """
    M = Z.abs().amax(dim=1) + 1.0
    lo, hi = -M, M.clone()
    theta = torch.zeros_like(M)
    scale = (Z.abs().sum(1) + 1.0) * max(1e-14, 8 * torch.finfo(Z.dtype).eps)
    h = torch.zeros_like(M)
    for k in range(16):
        a = Z - theta[:, None] * D
        ac = torch.minimum(a.clamp_min(0.0), U)
        h = (ac * y).sum(1)
        if k % 4 == 3 and not bool((h.abs() > scale).any()):
            break
        free = (a > 0) & (a < U) & (D != 0)
        pos = h > 0
        lo = torch.where(pos, torch.maximum(lo, theta), lo)
        hi = torch.where(pos, hi, torch.minimum(hi, theta))
        nfree = free.sum(1).to(Z.dtype)
        step = theta + h / nfree.clamp_min(1.0)
        ok = (nfree > 0) & (step > lo) & (step < hi)
        theta = torch.where(ok, step, 0.5 * (lo + hi))
    else:
        a = Z - theta[:, None] * D
        h = (torch.minimum(a.clamp_min(0.0), U) * y).sum(1)
    bad = h.abs() > scale
    if bool(bad.any()):
        # bisection on the (few) rows where Newton has not settled
        idx = bad.nonzero()[:, 0]
        Zb, Ub, lob, hib = Z[idx], U[idx], lo[idx], hi[idx]
        Db = D if D.dim() == 1 else D[idx]
        for _ in range(_N_BISECT):
            mid = 0.5 * (lob + hib)
            hm = (torch.minimum((Zb - mid[:, None] * Db).clamp_min(0.0), Ub) * y).sum(1)
            pos = hm > 0
            lob = torch.where(pos, mid, lob)
            hib = torch.where(pos, hib, mid)
        theta = theta.index_copy(0, idx, 0.5 * (lob + hib))
    A = torch.minimum((Z - theta[:, None] * D).clamp_min(0.0), U)
    ok = (A * y).sum(1).abs() <= scale
    return A, ok


def project_feasible(Z: torch.Tensor, y: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of ``Z`` onto ``{0 <= a <= u, y^T a = 0}``.

    The projection is ``clip(z - theta y, 0, u)`` with ``theta`` the root of the
    decreasing piecewise-linear ``h(theta) = y^T clip(z - theta y, 0, u)``; found by
    safeguarded Newton steps (exact once the free set is identified), with a bisection
    fallback for rows where Newton has not settled.

    Parameters
    ----------
    Z, U : tensor of shape (P, n)
    y : tensor of shape (n,)

    Returns
    -------
    tensor of shape (P, n); ``|y^T a|`` is at rounding level.
    """
    return _project(Z, y, U, y)[0]


def project_face(Z: torch.Tensor, y: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """Feasible point that keeps the bound coordinates of ``Z`` exactly on their bounds.

    ``Z`` is first clipped to the box; then only its coordinates strictly inside the box
    move (along ``y``) to restore ``y^T a = 0``. The Euclidean projection
    (:func:`project_feasible`) would shift *every* coordinate of one class off its bound
    by a rounding-size amount, and an active-set method would then see hundreds of
    spurious free coordinates. Rows where the interior coordinates cannot absorb the
    residual fall back to the Euclidean projection.

    On the CPU the rows go in blocks of :func:`~torchsvm.solvers.ipm.row_block_size`
    (each row's projection is its own; large ``(P, n)`` temporaries cost more in
    page faults than in arithmetic, see :func:`~torchsvm.solvers.ipm.ipm_low_rank`).
    """
    from torchsvm.solvers.ipm import row_block_size

    P, n = Z.shape
    rb = row_block_size(P, n, Z.dtype, Z.device)
    if rb < P:
        return torch.cat(
            [_project_face(Z[s : s + rb], y, U[s : s + rb]) for s in range(0, P, rb)]
        )
    return _project_face(Z, y, U)


def _project_face(Z: torch.Tensor, y: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """:func:`project_face` on one block of rows."""
    Zc = torch.minimum(Z.clamp_min(0.0), U)
    D = y * ((Zc > 0) & (Zc < U)).to(Z.dtype)
    A, ok = _project(Zc, y, U, D)
    if not bool(ok.all()):
        bad = (~ok).nonzero()[:, 0]
        A[bad] = project_feasible(Zc[bad], y, U[bad])
    return A


def _loss_slopes(
    xi: torch.Tensor, U: torch.Tensor, S: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right and left derivatives of ``l`` at ``xi`` (elementwise)."""
    zero = torch.zeros((), dtype=xi.dtype, device=xi.device)
    right = torch.where(xi >= 0, U, zero)
    left = torch.where(xi > 0, U, zero)
    if S is not None:
        smooth = S > 0
        t = torch.minimum((xi / torch.where(smooth, S, 1.0)).clamp_min(0.0), U)
        right = torch.where(smooth, t, right)
        left = torch.where(smooth, t, left)
    return right, left


def loss_value(
    xi: torch.Tensor, U: torch.Tensor, S: torch.Tensor | None
) -> torch.Tensor:
    """Elementwise primal loss ``l(xi)`` (hinge ``u max(0, xi)`` or Huber with ``s``)."""
    zero = torch.zeros((), dtype=xi.dtype, device=xi.device)
    if S is None:
        # u max(0, xi) without ``torch.where`` (several products' cost on the CPU):
        # u xi <= 0 where xi <= 0; the NaN of u = inf at xi = 0 is a zero loss
        return torch.nan_to_num_(
            (U * xi).clamp_min_(0.0), nan=0.0, posinf=torch.inf, neginf=0.0
        )
    smooth = S > 0
    t = torch.where(
        smooth,
        torch.minimum((xi / torch.where(smooth, S, 1.0)).clamp_min(0.0), U),
        torch.where(xi > 0, U, zero),
    )
    # NOTE: t * xi with t = 0 and xi = -inf cannot occur (xi is finite).
    return torch.where(t > 0, t * xi - 0.5 * S * t * t, zero)


def optimal_intercept(
    G: torch.Tensor, y: torch.Tensor, U: torch.Tensor, S: torch.Tensor | None
) -> torch.Tensor:
    """Midpoint of ``argmin_b sum_i l_i(1 - y_i (g_i + b))`` for every problem.

    For the hinge loss the minimisers are found exactly by sorting the breakpoints
    ``t_i = y_i - g_i``: the slope right of ``b`` is ``-W+ + sum_{t_i <= b} u_i``.
    With a diagonal shift (smooth Huber loss, S1b) the derivative is bisected.

    Parameters
    ----------
    G : tensor of shape (P, n)
        ``g_i = sum_j a_j y_j K(x_j, x_i)`` (decision values without intercept).
    y : tensor of shape (n,)
    U, S : tensor of shape (P, n) (``S`` may be None)

    Returns
    -------
    tensor of shape (P,)
    """
    T = y - G  # breakpoints
    if S is None or not bool((S > 0).any()):
        Tsorted, order = torch.sort(T, dim=1)
        cum = torch.cumsum(torch.gather(U, 1, order), dim=1)
        w_pos = (U * (y > 0)).sum(1, keepdim=True)
        slack = max(1e-12, 64 * torch.finfo(G.dtype).eps) * cum[:, -1:].clamp_min(
            torch.finfo(G.dtype).tiny
        )
        n = T.shape[1]
        k_lo = (cum < w_pos - slack).sum(1, keepdim=True).clamp_max(n - 1)
        k_hi = (cum <= w_pos + slack).sum(1, keepdim=True).clamp_max(n - 1)
        b_lo = torch.gather(Tsorted, 1, k_lo)[:, 0]
        b_hi = torch.gather(Tsorted, 1, k_hi)[:, 0]
        return 0.5 * (b_lo + b_hi)

    lo0 = T.amin(1) - 1.0
    hi0 = T.amax(1) + 1.0
    ypos = y > 0

    def slopes(b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xi = 1.0 - y * (G + b[:, None])
        right, left = _loss_slopes(xi, U, S)
        d_plus = torch.where(ypos, -left, right).sum(1)
        d_minus = torch.where(ypos, -right, left).sum(1)
        return d_plus, d_minus

    # b_lo = inf{b : D+(b) >= 0},  b_hi = sup{b : D-(b) <= 0}
    lo_a, hi_a = lo0.clone(), hi0.clone()
    lo_b, hi_b = lo0.clone(), hi0.clone()
    for _ in range(_N_BISECT):
        mid_a = 0.5 * (lo_a + hi_a)
        mid_b = 0.5 * (lo_b + hi_b)
        dp, _ = slopes(mid_a)
        _, dm = slopes(mid_b)
        ok_a = dp >= 0
        hi_a = torch.where(ok_a, mid_a, hi_a)
        lo_a = torch.where(ok_a, lo_a, mid_a)
        ok_b = dm <= 0
        lo_b = torch.where(ok_b, mid_b, lo_b)
        hi_b = torch.where(ok_b, hi_b, mid_b)
    b_lo = 0.5 * (lo_a + hi_a)
    b_hi = 0.5 * (lo_b + hi_b)
    return 0.5 * (b_lo + torch.maximum(b_lo, b_hi))


def duality_gap(
    A: torch.Tensor,
    QA: torch.Tensor,
    y: torch.Tensor,
    U: torch.Tensor,
    S: torch.Tensor | None,
    b: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Primal value, dual value, relative gap and optimal intercept of feasible ``A``.

    Parameters
    ----------
    A : tensor of shape (P, n)
        Dual-feasible points (see :func:`project_feasible`).
    QA : tensor of shape (P, n)
        ``A @ Q`` (``Q`` symmetric).
    b : tensor of shape (P,), optional
        Intercepts at which to evaluate the primal instead of the optimal ones: the
        gap is then an upper bound of the gap at the optimal intercept (still a
        certificate), without sorting the breakpoints.

    Returns
    -------
    primal, dual, rel_gap, b : tensors of shape (P,)
    """
    quad = (A * QA).sum(1)
    G = QA * y
    if b is None:
        b = optimal_intercept(G, y, U, S)
    xi = 1.0 - y * (G + b[:, None])
    primal = 0.5 * quad + loss_value(xi, U, S).sum(1)
    dual = A.sum(1) - 0.5 * quad
    if S is not None:
        dual = dual - 0.5 * (S * A * A).sum(1)
    gap = (primal - dual).clamp_min(0.0)
    rel = gap / primal.abs().clamp_min(1.0)
    return primal, dual, rel, b
