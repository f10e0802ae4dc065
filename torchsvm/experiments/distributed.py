"""Ray helpers (Ray is optional: ``pip install -e ".[ray]"``).

- :func:`ray_session`, :func:`map_chunks`: a Ray runtime and an ordered task map;
- :func:`solve_replicates` / :func:`fit_replicates_distributed`: the replicate fits of
  :class:`~torchsvm.BootstrapProbabilitySVC` (SPEC S2) for a block of bootstrap draws,
  and the same split into replicate chunks solved as Ray tasks. The draws stay on the
  driver and every (C, replicate) problem is solved on its own by the batched solver,
  so the chunked fit gives the same scores as one batch.

Without ``address`` a local Ray instance is started with ``num_workers`` CPUs (all of
this machine's by default) and shut down afterwards; with ``address`` (``"auto"`` or
``"ray://host:10001"``) the driver joins that cluster. A session that finds Ray
already initialised reuses it and leaves it running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "fit_replicates_distributed",
    "import_ray",
    "map_chunks",
    "ray_session",
    "solve_replicates",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def import_ray() -> Any:
    """``import ray`` with an error that says how to install it."""
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "backend 'ray' needs Ray: pip install -e \".[ray]\" (or pip install ray)"
        ) from exc
    return ray


@contextmanager
def ray_session(
    address: str | None = None, num_workers: int | None = None
) -> Iterator[Any]:
    """Yield the ``ray`` module with a connected runtime (see the module docstring)."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if address is None:
            if num_workers is not None:
                kwargs["num_cpus"] = int(num_workers)
        else:
            kwargs["address"] = address
        ray.init(**kwargs)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def map_chunks(
    func: Callable[[T], R],
    chunks: Sequence[T],
    *,
    address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0.0,
) -> list[R]:
    """``[func(c) for c in chunks]`` as Ray tasks (one CPU, ``num_gpus`` GPUs each).

    Results come back in chunk order; the first task error is raised after all tasks
    have finished. ``func`` must be picklable (a module-level function or a
    ``functools.partial`` of one).
    """
    with ray_session(address, num_workers) as ray:
        task = ray.remote(func).options(num_cpus=1, num_gpus=num_gpus, max_retries=0)
        refs = [task.remote(c) for c in chunks]
        ray.wait(refs, num_returns=len(refs))
        return list(ray.get(refs))


def solve_replicates(
    X: np.ndarray,
    y_pm: np.ndarray,
    C_grid: np.ndarray,
    counts: np.ndarray,
    *,
    kernel: str = "linear",
    gamma: float | str = "scale",
    degree: int = 3,
    coef0: float = 0.0,
    tol: float = 1e-7,
    max_iter: int = 20000,
    device: str = "cpu",
    dtype: str = "float64",
) -> dict[str, Any]:
    """Fit the ``R x b`` weighted SVMs of one block of draws (SPEC S2 step 1).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y_pm : ndarray of shape (n,)
        Labels in {-1, +1}.
    C_grid : ndarray of shape (R,)
    counts : ndarray of shape (b, n)
        Bootstrap draw counts of the block's replicates.

    Returns
    -------
    dict
        ``coef`` (R, b, n) = ``alpha * y``, ``intercept`` (R, b), ``n_iter`` (R, b),
        ``duality_gap`` (R, b), ``w`` (R, b, d) or None, ``scores`` (R, b, n) on the
        training rows, ``gamma`` (float) and ``statuses`` (list of str, P entries).
    """
    import torch

    from torchsvm.config import SolverConfig
    from torchsvm.problems.svm import BatchedSvmProblem
    from torchsvm.solvers.box_qp import BoxQpSolver

    dt = {"float64": torch.float64, "float32": torch.float32}[str(dtype)]
    prob = BatchedSvmProblem.from_bootstrap(
        X,
        y_pm,
        C_grid,
        counts,
        kernel=kernel,
        gamma=gamma,
        degree=degree,
        coef0=coef0,
        device=torch.device(device),
        dtype=dt,
    )
    sol = BoxQpSolver(SolverConfig(tol=float(tol), max_iter=int(max_iter)))(prob)
    R, B, n = len(C_grid), counts.shape[0], X.shape[0]
    r_idx = prob.index["c_idx"].cpu().numpy()
    b_idx = prob.index["rep_idx"].cpu().numpy()

    def grid(values: Any, *tail: int, dtype: Any = np.float64) -> np.ndarray:
        out = np.zeros((R, B, *tail), dtype=dtype)
        out[r_idx, b_idx] = values.detach().cpu().numpy()
        return out

    F = sol.decision_function(
        prob.X,
        prob.y,
        prob.X,
        kernel=prob.kernel,
        gamma=prob.gamma,
        degree=prob.degree,
        coef0=prob.coef0,
    )
    return {
        "coef": grid(sol.alpha, n) * y_pm[None, None, :],
        "intercept": grid(sol.b),
        "n_iter": grid(sol.n_iter, dtype=np.int64),
        "duality_gap": grid(sol.duality_gap),
        "w": None if sol.w is None else grid(sol.w, X.shape[1]),
        "scores": grid(F, n),
        "gamma": float(prob.gamma),
        "statuses": [str(s) for s in sol.statuses()],
    }


def fit_replicates_distributed(
    X: np.ndarray,
    y_pm: np.ndarray,
    C_grid: np.ndarray,
    counts: np.ndarray,
    *,
    n_chunks: int | None = None,
    address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0.0,
    **solver_kwargs: Any,
) -> dict[str, Any]:
    """:func:`solve_replicates` on replicate chunks as Ray tasks, concatenated.

    ``counts`` (B, n) is split into ``n_chunks`` consecutive blocks of replicates (None:
    the CPUs of the Ray cluster, at most B); each block is one task with one CPU (and
    ``num_gpus`` GPUs, e.g. 1 when ``device="cuda"``). The result has the layout of
    one :func:`solve_replicates` call on all of ``counts``.
    """
    counts = np.asarray(counts)
    with ray_session(address, num_workers) as ray:
        if n_chunks is None:
            n_chunks = int(ray.cluster_resources().get("CPU", 1))
        n_chunks = max(1, min(int(n_chunks), counts.shape[0]))
        chunks = np.array_split(counts, n_chunks, axis=0)
        func = partial(solve_replicates, X, y_pm, np.asarray(C_grid), **solver_kwargs)
        task = ray.remote(_call_on_chunk).options(
            num_cpus=1, num_gpus=num_gpus, max_retries=0
        )
        func_ref = ray.put(func)
        parts = ray.get([task.remote(func_ref, c) for c in chunks])
    out: dict[str, Any] = {"gamma": parts[0]["gamma"]}
    for key in ("coef", "intercept", "n_iter", "duality_gap", "scores"):
        out[key] = np.concatenate([p[key] for p in parts], axis=1)
    out["w"] = (
        None
        if parts[0]["w"] is None
        else np.concatenate([p["w"] for p in parts], axis=1)
    )
    # statuses are in problem order p = r * b + j within each chunk: regroup as (R, B)
    R = len(C_grid)
    out["statuses"] = np.concatenate(
        [np.asarray(p["statuses"], dtype=object).reshape(R, -1) for p in parts], axis=1
    )
    return out


def _call_on_chunk(func: Callable[[np.ndarray], Any], chunk: np.ndarray) -> Any:
    return func(chunk)
