"""Dispatch of MIP models to their solver (SPEC S5 "Solving", S6, S7).

- LP, MILP (``Q is None``) and convex QP (``Q`` PSD, no integers): HiGHS
  (:mod:`torchsvm.mip.highs`); a convex QP on which the HiGHS active-set solver fails is
  re-solved by the dense interior point :func:`torchsvm.mip.qp_ipm.solve_qp_ipm`.
- ``Q`` together with integers (a convex MIQP, refused by HiGHS): outer approximation
  (:func:`torchsvm.mip.outer_approx.solve_convex_miqp`).

Every call has a time limit (``MipConfig.time_limit``); a stopped call returns its
incumbent with its proven gap and a :class:`~torchsvm.exceptions.SolverTimeLimitWarning`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from torchsvm.exceptions import SolverError
from torchsvm.mip.highs import new_highs, solve_highs
from torchsvm.mip.model import MipConfig, MipModel, MipResult, validate_model
from torchsvm.mip.outer_approx import solve_convex_miqp
from torchsvm.mip.qp_ipm import solve_qp_ipm
from torchsvm.types import SolveStatus

logger = logging.getLogger(__name__)

__all__ = ["solve_lp_batch", "solve_model"]


def solve_model(
    model: MipModel, config: MipConfig | None = None, start: np.ndarray | None = None
) -> MipResult:
    """Solve an LP, convex QP, MILP or convex MIQP.

    Parameters
    ----------
    model : MipModel
        The model; validated here.
    config : MipConfig, optional
        Time limit, gap, threads, verbosity (default ``MipConfig()``).
    start : ndarray of shape (n,), optional
        MIP start passed to HiGHS with ``setSolution`` (and, for an MIQP, the first
        incumbent of the outer approximation).

    Returns
    -------
    MipResult
        Status, incumbent, objective, proven bound and gap.

    Raises
    ------
    ValueError
        If the model is malformed (shapes, NaN, inconsistent bounds).
    SolverError
        If HiGHS fails without a usable answer.
    """
    config = MipConfig() if config is None else config
    model = validate_model(model)
    if model.has_integers and model.Q is not None:
        return solve_convex_miqp(model, config, start)
    t_call = time.perf_counter()
    try:
        return solve_highs(model, config, start=start)
    except SolverError:
        if model.Q is None:
            raise
        # NOTE: the HiGHS active-set QP fails on some degenerate semidefinite QPs
        # (e.g. the CSVM kernel form); fall back to the dense interior point.
        logger.info("HiGHS QP failed; solving with the interior point instead")
        t0 = time.perf_counter()
        flip = model.sense == "max"
        m = model
        if flip:
            assert model.Q is not None
            m = replace(
                model, c=-model.c, Q=-model.Q, offset=-model.offset, sense="min"
            )
        # the fallback gets what is left of the call's limit, not a second one
        left = config.time_limit - (time.perf_counter() - t_call)
        if left <= 0:
            raise
        res = solve_qp_ipm(m, time_limit=left)
        if res.status is not SolveStatus.optimal:
            raise
        if flip:
            res = replace(res, objective=-res.objective, bound=-res.bound)
        return replace(res, runtime=time.perf_counter() - t0)


def solve_lp_batch(
    models: Sequence[MipModel], config: MipConfig | None = None
) -> list[MipResult]:
    """Solve many small LP / QP / MILP models, reusing one HiGHS instance.

    Each model gets the full ``config.time_limit``. MIQPs are dispatched as in
    :func:`solve_model`.

    Parameters
    ----------
    models : sequence of MipModel
        Models to solve, in order.
    config : MipConfig, optional
        Shared settings.

    Returns
    -------
    list of MipResult
        One result per model.
    """
    config = MipConfig() if config is None else config
    h = new_highs()
    out = []
    for model in models:
        vm = validate_model(model)
        if vm.has_integers and vm.Q is not None:
            out.append(solve_model(vm, config))
        else:
            out.append(solve_highs(vm, config, highs=h))
    return out
