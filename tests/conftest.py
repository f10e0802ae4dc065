"""Shared fixtures: device/dtype parametrisation, seeds, GPU auto-skip, shared data path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

try:  # hypothesis profiles: dev = 25 examples, ci = 100
    from hypothesis import settings

    settings.register_profile("dev", max_examples=25, deadline=None)
    settings.register_profile("ci", max_examples=100, deadline=None)
    settings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # pragma: no cover
    pass

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """The staged datasets folder (torchsvm's one resolver) or None where it is absent."""
    from torchsvm.data.datasets import resolve_data_dir

    folder = resolve_data_dir()
    return folder if (folder / "MANIFEST.md").is_file() else None


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    has_cuda = torch.cuda.is_available()
    skip_gpu = pytest.mark.skip(reason="needs CUDA (no GPU on this machine)")
    skip_data = pytest.mark.skip(reason="staged datasets (../shared/data) not found")
    data = shared_data_dir()
    for item in items:
        if item.get_closest_marker("gpu") is not None and not has_cuda:
            item.add_marker(skip_gpu)
        if item.get_closest_marker("data") is not None and data is None:
            item.add_marker(skip_data)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def seed() -> int:
    return 0


@pytest.fixture
def data_dir() -> Path:
    d = shared_data_dir()
    if d is None:
        pytest.skip("staged datasets (../shared/data) not found")
    return d
