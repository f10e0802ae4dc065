"""Loaders for the Data Envelopment Analysis datasets of SPEC S7.

Three real data sets are read from the staged data folder (``../shared/data``, see its
``MANIFEST.md``); nothing is copied into the repository.

* ``load_nve_distribution`` -- the Norwegian regulator's (NVE/RME) base data for the
  local electricity distribution grid (``dea_dso_norway_nve``): one row per company for
  one year, one input (total cost, ``ld_TOTXDEA``, constructed from the cost columns as
  NVE's model does) and every usable output column.
* ``load_pft1981`` -- Charnes, Cooper and Rhodes' (1981) Program Follow Through data, 70
  schools, five inputs and three outputs, from R package deaR (``PFT1981.csv``) or R package
  Benchmarking (``charnes1981.csv.gz``; the two copies differ in four cells).
* ``load_finland_distribution`` -- 89 Finnish electricity distribution firms shipped with
  pyStoNED (``dea_dso_finland``): input TOTEX, outputs Energy, Length, Customers
  (+ optionally the underground-cable share PerUndGr).

Notes
-----
NVE's DEA input ``ld_TOTXDEA`` is not stored in the base data; it is computed as in NVE's
``1_1_Calculated_Input_Values.R`` (repository NVE/IRiR) for a single year, without the
five-year averaging and CPI indexing of the regulatory model::

    OPEX = ld_OPEXxS + ld_sal - ld_sal.cap + ld_pens + ld_pens.eq - ld_impl - ld_391 - ld_cga
    RAB  = 1.01 * (ld_bv.sf + ld_bv.gf)          # book values + 1 % working capital
    DEP  = ld_dep.sf + ld_dep.gf
    NL   = ld_nl [MWh] * ap.t_2 [NOK/MWh] / 1000  # network losses at the area price, kNOK
    TOTX = OPEX + rate * RAB + DEP + ld_cens + NL - ld_gci

with the NVE reference rate of return ``rate`` (default 0.0639, the rate NVE's scripts
use for the later revenue-cap years).  Companies without a local distribution grid
(no subscribers, high-voltage km or substations), with non-positive total cost, or with
missing geography (average latitude 0) are dropped.  Output candidates are the local
distribution outputs (``ld_sub, ld_hv, ld_ss, ld_hvoh, ld_hvug, ld_hvsc``) and the twelve
environmental ``ldz_*`` variables; columns that are constant or missing in the chosen year
are dropped.  Regional-grid columns (``rd_*``, ``rdz_*``) and cost components are not
outputs.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from torchsvm.data.datasets import resolve_data_dir
from torchsvm.exceptions import DataError, DatasetNotFoundError
from torchsvm.types import FloatArray

__all__ = [
    "DeaDataset",
    "find_data_dir",
    "load_finland_distribution",
    "load_nve_distribution",
    "load_pft1981",
    "make_synthetic_frontier",
    "scale_by_range",
]

NVE_OUTPUT_CANDIDATES: tuple[str, ...] = (
    "ld_sub",
    "ld_hv",
    "ld_ss",
    "ld_hvoh",
    "ld_hvug",
    "ld_hvsc",
    "ldz_mgc",
    "ldz_f4",
    "ldz_f7",
    "ldz_inc.av",
    "ldz_wind",
    "ldz_cod2c",
    "ldz_lat.av",
    "ldz_ice.av",
    "ldz_snow",
    "ldz_temp",
    "ldz_isl",
    "ldz_cmpp",
)
NVE_RATE_OF_RETURN = 0.0639
NVE_WORKING_CAPITAL = 1.01


@dataclass(frozen=True)
class DeaDataset:
    """A DEA data set: inputs and outputs of K decision making units (DMUs).

    Attributes
    ----------
    X_in : ndarray of shape (K, N)
        Inputs (non-negative).
    Y_out : ndarray of shape (K, M)
        Outputs (non-negative).
    input_names, output_names, dmu_names : tuple of str
        Column and row labels.
    meta : dict
        Provenance (file, year, construction notes).
    """

    X_in: FloatArray
    Y_out: FloatArray
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    dmu_names: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_dmus(self) -> int:
        """Number of DMUs K."""
        return int(self.X_in.shape[0])


def find_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Locate the staged data folder (the one holding ``MANIFEST.md``).

    Parameters
    ----------
    data_dir : path, optional
        Explicit folder; otherwise the one resolver
        :func:`torchsvm.data.datasets.resolve_data_dir` decides (``$TORCHSVM_DATA``,
        then ``../shared/data`` holding ``MANIFEST.md``).

    Returns
    -------
    Path
        The data folder.
    """
    path = resolve_data_dir(data_dir)
    if (path / "MANIFEST.md").is_file() or (data_dir is not None and path.is_dir()):
        return path
    raise DatasetNotFoundError(
        "staged DEA data not found; pass data_dir= or set TORCHSVM_DATA to the folder "
        f"holding MANIFEST.md (resolved to {str(path)!r})"
    )


def _file(data_dir: str | os.PathLike[str] | None, *parts: str) -> Path:
    path = find_data_dir(data_dir).joinpath(*parts)
    if not path.is_file():
        raise DatasetNotFoundError(
            f"{path} is missing; it is listed in shared/data/MANIFEST.md ({parts[0]})"
        )
    return path


def scale_by_range(Y: FloatArray) -> FloatArray:
    """Divide every column by its range (max - min), as SPEC S7 scales outputs.

    CRS efficiencies are invariant to this scaling; it only conditions the LPs and the
    big-M constants.  Constant columns raise a ``DataError``.

    Parameters
    ----------
    Y : ndarray of shape (K, M)

    Returns
    -------
    ndarray of shape (K, M)
    """
    Y = np.asarray(Y, dtype=np.float64)
    rng = Y.max(axis=0) - Y.min(axis=0)
    if np.any(rng <= 0):
        bad = np.flatnonzero(rng <= 0).tolist()
        raise DataError(f"columns {bad} are constant; they cannot be scaled by range")
    return Y / rng


def make_synthetic_frontier(
    n_dmus: int,
    n_inputs: int = 1,
    n_outputs: int = 100,
    *,
    n_factors: int = 3,
    seed: int = 0,
) -> tuple[FloatArray, FloatArray]:
    """Synthetic CRS frontier shaped like the thesis' data (SPEC S7 substitute).

    The thesis' 182 operators x 100 outputs are not public.  This generator gives DMUs
    whose outputs are driven by a few latent cost drivers, as network outputs are:
    inputs ``x ~ U(1, 10)^N``; size ``s = mean_i x_i``; half-normal inefficiency
    ``u ~ |N(0, 0.3)|``; outputs ``y_o = s exp(-u) (w . F_o) eps`` with Dirichlet
    mixing weights ``w`` over ``n_factors`` factors ``F ~ U(0.5, 1.5)`` and 2 %
    log-normal noise ``eps``; outputs divided by their range.

    Parameters
    ----------
    n_dmus, n_inputs, n_outputs : int
        K, N, M.
    n_factors : int
        Latent output factors.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (K, N)
    Y : ndarray of shape (K, M)
        Range-normalised outputs.
    """
    if min(n_dmus, n_inputs, n_outputs, n_factors) < 1 or n_dmus < 2:
        raise ValueError("need n_dmus >= 2 and n_inputs, n_outputs, n_factors >= 1")
    rng = np.random.default_rng(seed)
    X = rng.uniform(1, 10, (n_dmus, n_inputs))
    size = X.mean(axis=1)
    u = np.abs(rng.normal(0, 0.3, n_dmus))
    mix = rng.dirichlet(np.ones(n_factors), n_dmus) @ rng.uniform(
        0.5, 1.5, (n_factors, n_outputs)
    )
    Y = (size * np.exp(-u))[:, None] * mix * rng.lognormal(0, 0.02, (n_dmus, n_outputs))
    return X, Y / (Y.max(0) - Y.min(0))


def load_nve_distribution(
    data_dir: str | os.PathLike[str] | None = None,
    year: int | None = None,
    rate_of_return: float = NVE_RATE_OF_RETURN,
    normalise: bool = True,
) -> DeaDataset:
    """Norwegian distribution system operators (NVE base data), one row per company.

    Parameters
    ----------
    data_dir : path, optional
        Staged data folder (see ``find_data_dir``).
    year : int, optional
        Year to use; default the latest year in which every company has a row.
    rate_of_return : float
        NVE reference rate applied to the regulatory asset base in ``ld_TOTXDEA``.
    normalise : bool
        Divide outputs by their range (``scale_by_range``).

    Returns
    -------
    DeaDataset
        One input (``ld_TOTXDEA``, kNOK) and the usable output columns.
    """
    path = _file(data_dir, "dea_dso_norway_nve", "BaseData_27112018.csv")
    df = pd.read_csv(path, encoding="latin-1")
    counts = df.groupby("y")["orgn"].nunique()
    n_comp = df["orgn"].nunique()
    if year is None:
        complete = counts[counts == n_comp]
        year = int(complete.index.max())
    if year not in counts.index:
        raise DataError(f"year {year} not in NVE data (years {counts.index.tolist()})")
    d = df[df["y"] == year].drop_duplicates("orgn").reset_index(drop=True)
    opex = (
        d["ld_OPEXxS"]
        + d["ld_sal"]
        - d["ld_sal.cap"]
        + d["ld_pens"]
        + d["ld_pens.eq"]
        - d["ld_impl"]
        - d["ld_391"]
        - d["ld_cga"]
    )
    rab = NVE_WORKING_CAPITAL * (d["ld_bv.sf"] + d["ld_bv.gf"])
    dep = d["ld_dep.sf"] + d["ld_dep.gf"]
    losses = d["ld_nl"] * d["ap.t_2"] / 1000.0
    totx = opex + rate_of_return * rab + dep + d["ld_cens"] + losses - d["ld_gci"]
    keep = (
        (totx > 0)
        & (d["ld_sub"] > 0)
        & (d["ld_hv"] > 0)
        & (d["ld_ss"] > 0)
        & (d["ldz_lat.av"] > 0)
    )
    d = d[keep].reset_index(drop=True)
    totx = totx[keep].to_numpy(dtype=np.float64)
    outs = d[list(NVE_OUTPUT_CANDIDATES)].astype(np.float64)
    usable = [
        c
        for c in NVE_OUTPUT_CANDIDATES
        if outs[c].notna().all() and outs[c].nunique() > 1 and (outs[c] >= 0).all()
    ]
    dropped = sorted(set(NVE_OUTPUT_CANDIDATES) - set(usable))
    Y = outs[usable].to_numpy(dtype=np.float64)
    if normalise:
        Y = scale_by_range(Y)
    return DeaDataset(
        X_in=totx[:, None],
        Y_out=Y,
        input_names=("ld_TOTXDEA",),
        output_names=tuple(usable),
        dmu_names=tuple(str(c) for c in d["comp"]),
        meta={
            "source": str(path),
            "year": year,
            "rate_of_return": rate_of_return,
            "n_companies_in_year": int(n_comp),
            "n_dropped_companies": int((~keep).sum()),
            "dropped_outputs": dropped,
            "normalised_by_range": normalise,
        },
    )


def load_pft1981(
    data_dir: str | os.PathLike[str] | None = None,
    source: str = "deaR",
    normalise: bool = True,
) -> DeaDataset:
    """Charnes, Cooper and Rhodes' Program Follow Through schools (70 DMUs, 5 in, 3 out).

    Parameters
    ----------
    data_dir : path, optional
        Staged data folder.
    source : {"deaR", "Benchmarking"}
        ``dea_deaR/PFT1981.csv`` or ``dea_Benchmarking/charnes1981.csv.gz``.
    normalise : bool
        Divide outputs by their range.

    Returns
    -------
    DeaDataset
        ``meta["program"]`` holds the PFT (1) / NFT (0) flag per school.
    """
    if source == "deaR":
        path = _file(data_dir, "dea_deaR", "PFT1981.csv")
        df = pd.read_csv(path)
        inputs = ["Education", "Occupation", "Parental", "Counseling", "Teachers"]
        outputs = ["Reading", "Math", "Coopersmith"]
        names = df["Site"].astype(str)
        program = (df["Program"] == "PFT").to_numpy(dtype=int)
    elif source == "Benchmarking":
        path = _file(data_dir, "dea_Benchmarking", "charnes1981.csv.gz")
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            df = pd.read_csv(io.StringIO(fh.read()), sep=";")
        inputs = ["x1", "x2", "x3", "x4", "x5"]
        outputs = ["y1", "y2", "y3"]
        names = df["name"].astype(str)
        program = df["pft"].to_numpy(dtype=int)
    else:
        raise ValueError(f"source must be 'deaR' or 'Benchmarking', got {source!r}")
    X = df[inputs].to_numpy(dtype=np.float64)
    Y = df[outputs].to_numpy(dtype=np.float64)
    if normalise:
        Y = scale_by_range(Y)
    return DeaDataset(
        X_in=X,
        Y_out=Y,
        input_names=tuple(inputs),
        output_names=tuple(outputs),
        dmu_names=tuple(names),
        meta={
            "source": str(path),
            "program": program,
            "normalised_by_range": normalise,
        },
    )


def load_finland_distribution(
    data_dir: str | os.PathLike[str] | None = None,
    outputs: Sequence[str] = ("Energy", "Length", "Customers"),
    normalise: bool = True,
) -> DeaDataset:
    """Finnish electricity distribution firms (pyStoNED data, 89 DMUs), input TOTEX.

    Parameters
    ----------
    data_dir : path, optional
        Staged data folder.
    outputs : sequence of str
        Output columns (any of Energy, Length, Customers, PerUndGr).
    normalise : bool
        Divide outputs by their range.

    Returns
    -------
    DeaDataset
    """
    path = _file(data_dir, "dea_dso_finland", "electricityFirms.csv")
    df = pd.read_csv(path)
    missing = [c for c in outputs if c not in df.columns]
    if missing:
        raise ValueError(f"unknown output columns {missing}; have {list(df.columns)}")
    X = df[["TOTEX"]].to_numpy(dtype=np.float64)
    Y = df[list(outputs)].to_numpy(dtype=np.float64)
    if normalise:
        Y = scale_by_range(Y)
    return DeaDataset(
        X_in=X,
        Y_out=Y,
        input_names=("TOTEX",),
        output_names=tuple(outputs),
        dmu_names=tuple(f"firm{i + 1}" for i in range(len(df))),
        meta={"source": str(path), "normalised_by_range": normalise},
    )
