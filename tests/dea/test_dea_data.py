"""DEA loaders on the staged copies in ../shared/data (skipped where absent)."""

from __future__ import annotations

import numpy as np
import pytest

from torchsvm import dea
from torchsvm.data.dea_data import (
    load_finland_distribution,
    load_nve_distribution,
    load_pft1981,
    scale_by_range,
)
from torchsvm.exceptions import DataError, DatasetNotFoundError

pytestmark = pytest.mark.data


def test_nve_distribution(data_dir):
    d = load_nve_distribution(data_dir)
    assert d.meta["year"] == 2017  # latest year with a row for every company
    assert d.X_in.shape == (d.n_dmus, 1) and d.n_dmus > 100
    assert d.Y_out.shape[1] == len(d.output_names) >= 15
    assert np.all(d.X_in > 0) and np.all(d.Y_out >= 0)
    np.testing.assert_allclose(d.Y_out.max(0) - d.Y_out.min(0), 1.0)
    eff = dea.efficiency(d.X_in, d.Y_out)
    assert eff.max() == pytest.approx(1.0) and np.all(eff <= 1 + 1e-9)


def test_pft_sources_agree(data_dir):
    a = load_pft1981(data_dir, normalise=False)
    b = load_pft1981(data_dir, source="Benchmarking", normalise=False)
    assert a.X_in.shape == (70, 5) and a.Y_out.shape == (70, 3)
    assert a.meta["program"].sum() == b.meta["program"].sum() == 49
    # MANIFEST: the two copies differ in four cells
    diff = (np.abs(a.X_in - b.X_in) > 1e-9).sum() + (
        np.abs(a.Y_out - b.Y_out) > 1e-9
    ).sum()
    assert diff == 4


def test_finland(data_dir):
    d = load_finland_distribution(data_dir)
    assert d.X_in.shape == (89, 1) and d.Y_out.shape == (89, 3)


def test_missing_dir_and_bad_columns(tmp_path, data_dir):
    with pytest.raises(DatasetNotFoundError):
        load_pft1981(tmp_path)
    with pytest.raises(ValueError, match="unknown output"):
        load_finland_distribution(data_dir, outputs=("Energy", "Nope"))
    with pytest.raises(DataError, match="constant"):
        scale_by_range(np.ones((3, 2)))
