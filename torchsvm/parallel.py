"""Ray runtime helpers (Ray is optional: ``pip install -e ".[ray]"``).

:func:`ray_session` yields a connected Ray runtime and :func:`map_chunks` is an ordered
task map. Without ``address`` a local Ray instance is started with ``num_workers`` CPUs
(all of this machine's by default) and shut down afterwards; with ``address``
(``"auto"`` or ``"ray://host:10001"``) the driver joins that cluster. A session that
finds Ray already initialised reuses it and leaves it running.

This module imports nothing from torchsvm, so estimators (the replicate chunks of
:class:`~torchsvm.BootstrapProbabilitySVC`) and the experiment runner both build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["import_ray", "map_chunks", "ray_session"]

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
