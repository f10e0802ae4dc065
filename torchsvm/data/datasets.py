"""Classification benchmark datasets of the papers, read from the staged copies.

``load_dataset(name)`` returns a :class:`Dataset` with the raw features (a DataFrame whose
categorical columns have dtype ``category``; missing values are NaN), labels ``y`` in
``{-1, +1}`` with the positive class the papers use, and metadata. Preprocessing
(imputation, dummies, standardisation, SPEC S2) is a separate, fold-wise step:
:func:`torchsvm.data.preprocess.make_preprocessor`.

The registry is data: ``registry.toml`` next to this module lists, per dataset, its files
(path, sha256, public source), its targets and options and its provenance; the parsing of
each dataset's files lives in :mod:`torchsvm.data.readers`. Files are read exactly as staged
in the shared data folder (see its ``MANIFEST.md``), and every file's sha256 is checked
against the registry before it is parsed. Where the loaders' definitions differ from the
papers' dataset tables (productivity, cervical, the bootstrap paper's "heart"), see
``docs/datasets.md``.

Data folder
-----------
Files live at ``<data_dir>/<name>/<file>``. :func:`resolve_data_dir` is the one place that
decides ``data_dir`` (the DEA loaders and the test suite use it too):

1. the ``data_dir`` argument, if given;
2. else the environment variable ``TORCHSVM_DATA``;
3. else the staged folder ``../shared/data`` next to this repository checkout (or
   ``shared/data`` inside it), if it holds ``MANIFEST.md``;
4. else the user cache ``$XDG_CACHE_HOME/torchsvm/data`` (``~/.cache/torchsvm/data``),
   where ``download=True`` puts what it fetches.

A missing file raises :class:`~torchsvm.exceptions.DatasetNotFoundError` naming the file,
the folder searched and the public source it was staged from; with ``download=True``
files that are byte-identical copies of a public GitHub file are fetched into that folder
(never in tests). A checksum mismatch raises :class:`~torchsvm.exceptions.DataError`
naming the file and both digests.

Positive classes (``target=``; the default is the papers' main choice)
----------------------------------------------------------------------
Where the papers' chapters differ, ``target`` selects the definition; see
:func:`dataset_info` or ``DATASETS[name].targets`` for every option. Notable choices:
wisconsin malignant (thesis ch. 2 / SPEC S5; ch. 4 and seed 000 count benign as +);
cervical Biopsy (seed 000; Hinselmann / Schiller / Cytology in ch. 3); careval
``class != unacc`` (ch. 3; ch. 4 uses ``== unacc``); australian class 1 (ch. 4 counts class
0); nursery ``not_recom`` (ch. 4: the largest class); leukemia ALL (AML in ch. 3); srbct EWS
(EWS + BL in seed 000); heart_disease_uci ``num > 0`` on Cleveland + Hungarian +
Switzerland (720 rows; the thesis' 'heart' has 720 rows, 362 +); productivity
``actual_productivity < mean`` (474 of 1197 = 39.6 %, the papers' share; no rule is stated
in the papers); housing and absenteeism have no target fixed by the papers, the thresholds
are the ones the manifest documents. Multiclass labels not covered by a paper follow SPEC
S2 ("largest class negative, the rest positive") through the ``"largest_negative"``
targets. cervical keeps the 32 risk factors as features by default
(``features="with_other_tests"`` adds the three other test results); the bootstrap paper's
140-row "heart" set matches no staged file. Evidence: ``docs/datasets.md`` and
``tests/data/test_paper_definitions.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import tomllib
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from torchsvm.data.readers import READERS, Reader
from torchsvm.exceptions import DataError, DatasetNotFoundError

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetSpec",
    "FileSpec",
    "dataset_info",
    "list_datasets",
    "load_dataset",
    "resolve_data_dir",
]

logger = logging.getLogger(__name__)

DATA_ENV_VAR = "TORCHSVM_DATA"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_REGISTRY_FILE = "registry.toml"


@dataclass(frozen=True)
class FileSpec:
    """One staged file: where it lives, its checksum and where it came from.

    Attributes
    ----------
    path : str
        Path relative to the data folder, ``"<dataset>/<file>"``.
    sha256 : str
        Checksum of the file as stored (of the compressed bytes for ``.gz``).
    source : str
        ``"owner/repo @ commit : path"`` of the public copy it was staged from.
    direct : bool
        True if the stored file is a byte-identical copy of the source file, so that
        :attr:`url` can be downloaded as is; False for converted or re-compressed files.
    """

    path: str
    sha256: str
    source: str
    direct: bool = True

    @property
    def url(self) -> str:
        """Raw GitHub address of the source file at its pinned commit."""
        repo, rest = (s.strip() for s in self.source.split(" @ ", 1))
        short, path = (s.strip() for s in rest.split(" : ", 1))
        quoted = urllib.parse.quote(path)
        return (
            f"https://raw.githubusercontent.com/{repo}/{_full_commit(repo, short)}/"
            f"{quoted}"
        )


@dataclass(frozen=True)
class DatasetSpec:
    """Registry entry of one dataset (one ``[datasets.<name>]`` table of registry.toml).

    Attributes
    ----------
    name : str
        Name as in MANIFEST.md.
    files : tuple of FileSpec
        Every staged file the loader may read (options pick a subset).
    reader : callable
        ``reader(get, target, options) -> (X, positive_mask, categorical, positive_label,
        extra_meta)`` from :data:`torchsvm.data.readers.READERS`; ``get(path)`` returns the
        verified local path of a file.
    targets : mapping
        Allowed ``target`` values and what they mean; ``default_target`` is one of them.
    options : mapping
        Dataset-specific keyword options and their allowed values (first = default).
    origin, licence, notes : str
        Provenance from MANIFEST.md and the choices made here.
    """

    name: str
    files: tuple[FileSpec, ...]
    reader: Reader
    targets: Mapping[str, str]
    default_target: str
    origin: str
    licence: str
    notes: str = ""
    options: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A loaded binary classification dataset (raw features, labels in ``{-1, +1}``).

    Attributes
    ----------
    X : DataFrame of shape (n, d)
        Features with column names; categorical columns have dtype ``category``;
        missing values are NaN (imputed later, SPEC S2).
    y : ndarray of shape (n,), dtype int64
        ``+1`` for the positive class, ``-1`` otherwise.
    name : str
        Dataset name.
    positive_label : str
        Description of the positive class, e.g. ``"diagnosis == M (malignant)"``.
    categorical : list of str
        Names of the categorical columns of ``X``.
    meta : dict
        ``source``, ``origin``, ``licence``, ``files`` (path -> sha256), ``target``,
        ``options``, ``n_rows``, ``n_features``, ``n_positive``, ``notes`` and dataset
        extras (e.g. ``groups`` or ``split`` arrays).
    """

    X: pd.DataFrame
    y: np.ndarray
    name: str
    positive_label: str
    categorical: list[str]
    meta: dict[str, Any]

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of raw feature columns (before dummies)."""
        return int(self.X.shape[1])

    @property
    def n_positive(self) -> int:
        """Number of rows with ``y == +1``."""
        return int(np.sum(self.y == 1))

    @property
    def feature_names(self) -> list[str]:
        """Column names of ``X``."""
        return [str(c) for c in self.X.columns]

    @property
    def numeric(self) -> list[str]:
        """Names of the non-categorical columns of ``X``."""
        cats = set(self.categorical)
        return [str(c) for c in self.X.columns if c not in cats]


# --------------------------------------------------------------------------- paths


def _user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "torchsvm" / "data"


def _staged_candidates() -> list[Path]:
    return [_REPO_ROOT.parent / "shared" / "data", _REPO_ROOT / "shared" / "data"]


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data folder: the one place that decides where staged files are read from.

    Used by :func:`load_dataset`, :mod:`torchsvm.data.dea_data` and the test suite.

    Parameters
    ----------
    data_dir : path-like, optional
        Explicit folder; returned as given (``~`` expanded), whether or not it exists.

    Returns
    -------
    Path
        ``data_dir`` if given; else ``$TORCHSVM_DATA`` if set; else the first of
        ``../shared/data`` next to the repository checkout and ``shared/data`` inside it
        that holds ``MANIFEST.md``; else the user cache ``$XDG_CACHE_HOME/torchsvm/data``
        (``~/.cache/torchsvm/data``), where ``load_dataset(..., download=True)`` saves.
        The folder is not created; a file missing from it raises
        :class:`~torchsvm.exceptions.DatasetNotFoundError` when it is needed.
    """
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env).expanduser()
    for folder in _staged_candidates():
        if (folder / "MANIFEST.md").is_file():
            return folder
    return _user_cache_dir()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        raise DataError(f"cannot read {path}: {err}") from err
    return digest.hexdigest()


def _download(spec: FileSpec, dest: Path) -> None:
    """Fetch ``spec.url`` to ``dest`` atomically and check its checksum."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    logger.info("downloading %s -> %s", spec.url, dest)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(spec.url) as resp:
            shutil.copyfileobj(resp, out)
        actual = _sha256(tmp)
        if actual != spec.sha256:
            raise DataError(
                f"downloaded {spec.url} has sha256 {actual}, expected {spec.sha256}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


class _FileResolver:
    """Finds, optionally downloads, and checksums the files of one dataset."""

    def __init__(self, spec: DatasetSpec, folder: Path, download: bool) -> None:
        self.spec = spec
        self.root = folder
        self.download = download
        self.used: dict[str, str] = {}
        self.folder: Path | None = None

    def __call__(self, rel_path: str) -> Path:
        fspec = next((f for f in self.spec.files if f.path == rel_path), None)
        if fspec is None:  # pragma: no cover - registry bug
            raise KeyError(f"{rel_path} is not registered for {self.spec.name}")
        path = self.root / rel_path
        if not path.is_file():
            if self.download and fspec.direct:
                try:
                    _download(fspec, path)
                except OSError as err:  # offline, HTTP error, unwritable folder
                    raise DatasetNotFoundError(
                        f"{self._missing_message(fspec)} Download failed: {err}"
                    ) from err
            else:
                raise DatasetNotFoundError(self._missing_message(fspec))
        actual = _sha256(path)
        if actual != fspec.sha256:
            raise DataError(
                f"dataset {self.spec.name!r}: file {path} has sha256 {actual}, but the "
                f"registry (and MANIFEST.md) expects {fspec.sha256}: it is not the staged "
                f"copy (corrupt, truncated or another version); re-fetch it from "
                f"{fspec.source}"
            )
        self.used[rel_path] = actual
        self.folder = path.parent.parent
        return path

    def _missing_message(self, fspec: FileSpec) -> str:
        how = (
            f"download {fspec.url} (or call load_dataset(..., download=True))"
            if fspec.direct
            else f"get it from {fspec.source} (converted/compressed copy, see "
            "MANIFEST.md for how it was made)"
        )
        return (
            f"dataset {self.spec.name!r}: file {fspec.path!r} not found in {self.root}. "
            f"Origin: {self.spec.origin}; staged from {fspec.source}. To fix: {how} "
            f"and save it as <data_dir>/{fspec.path}, or point {DATA_ENV_VAR} / "
            "data_dir at a folder that has it."
        )


# ------------------------------------------------------------------------ helpers


def _categorize(X: pd.DataFrame, categorical: list[str]) -> pd.DataFrame:
    X = X.copy()
    for col in categorical:
        X[col] = X[col].astype("category")
    return X


# ----------------------------------------------------------------------- registry

_DATASET_KEYS = {
    "origin",
    "licence",
    "notes",
    "default_target",
    "targets",
    "options",
    "files",
}
_FILE_KEYS = {"path", "sha256", "source", "direct"}


def _registry_error(msg: str) -> DataError:
    return DataError(f"torchsvm/data/{_REGISTRY_FILE}: {msg}")


def _parse_file(name: str, entry: Mapping[str, Any]) -> FileSpec:
    unknown = set(entry) - _FILE_KEYS
    missing = {"path", "sha256", "source"} - set(entry)
    if unknown or missing:
        raise _registry_error(
            f"{name}: file entry {dict(entry)} has unknown keys {sorted(unknown)} or "
            f"lacks {sorted(missing)}"
        )
    sha = str(entry["sha256"])
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise _registry_error(f"{name}: {entry['path']} sha256 {sha!r} is not 64 hex")
    return FileSpec(
        path=str(entry["path"]),
        sha256=sha,
        source=str(entry["source"]),
        direct=bool(entry.get("direct", True)),
    )


def _parse_spec(name: str, entry: Mapping[str, Any]) -> DatasetSpec:
    unknown = set(entry) - _DATASET_KEYS
    if unknown:
        raise _registry_error(f"{name}: unknown keys {sorted(unknown)}")
    if name not in READERS:
        raise _registry_error(f"{name}: no reader in torchsvm.data.readers.READERS")
    try:
        targets = dict(entry["targets"])
        default_target = str(entry["default_target"])
        origin, licence = str(entry["origin"]), str(entry["licence"])
    except KeyError as err:
        raise _registry_error(f"{name}: missing key {err}") from None
    if default_target not in targets:
        raise _registry_error(
            f"{name}: default_target {default_target!r} not in targets"
        )
    options = {
        key: tuple(tuple(v) if isinstance(v, list) else v for v in values)
        for key, values in dict(entry.get("options", {})).items()
    }
    return DatasetSpec(
        name=name,
        files=tuple(_parse_file(name, f) for f in entry.get("files", [])),
        reader=READERS[name],
        targets=MappingProxyType(targets),
        default_target=default_target,
        origin=origin,
        licence=licence,
        notes=str(entry.get("notes", "")),
        options=MappingProxyType(options),
    )


def _load_registry() -> tuple[dict[str, DatasetSpec], dict[str, list[str]]]:
    try:
        text = resources.files(__package__).joinpath(_REGISTRY_FILE).read_text("utf-8")
    except OSError as err:
        raise _registry_error(
            f"cannot read the dataset registry ({err}); an installation without the "
            "package data (pyproject [tool.setuptools.package-data]) lacks it"
        ) from err
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _registry_error(f"not valid TOML: {err}") from err
    specs = {name: _parse_spec(name, e) for name, e in raw.get("datasets", {}).items()}
    missing = set(READERS) - set(specs)
    if missing:
        raise _registry_error(f"readers without a registry entry: {sorted(missing)}")
    commits = {repo: list(c) for repo, c in raw.get("commits", {}).items()}
    return specs, commits


_SPECS, _COMMITS = _load_registry()

#: Registry of every classification dataset, by name (read-only; from registry.toml).
DATASETS: Mapping[str, DatasetSpec] = MappingProxyType(_SPECS)


def _full_commit(repo: str, short: str) -> str:
    matches = [c for c in _COMMITS.get(repo, []) if c.startswith(short)]
    if len(matches) != 1:  # pragma: no cover - guarded by the registry test
        raise KeyError(f"no unique full commit for {repo} @ {short}")
    return matches[0]


def list_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset`, in registry order."""
    return list(DATASETS)


def dataset_info(name: str) -> DatasetSpec:
    """Registry entry (files, targets, options, provenance) of one dataset."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(
            f"unknown dataset {name!r}; known: {', '.join(DATASETS)}"
        ) from None


def _resolve_options(spec: DatasetSpec, options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(spec.options)
    if unknown:
        allowed = ", ".join(spec.options) or "none"
        raise TypeError(
            f"dataset {spec.name!r} takes no option(s) {sorted(unknown)}; "
            f"its options are: {allowed}"
        )
    resolved = {}
    for key, allowed_values in spec.options.items():
        value = options.get(key, allowed_values[0])
        if key == "sources":  # any subset, in the caller's order
            value = (value,) if isinstance(value, str) else tuple(value)
        elif value not in allowed_values:
            raise ValueError(
                f"{spec.name}: {key} must be one of {allowed_values}, got {value!r}"
            )
        resolved[key] = value
    return resolved


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    target: str | None = None,
    download: bool = False,
    **options: Any,
) -> Dataset:
    """Load a staged classification dataset with labels in ``{-1, +1}``.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (names as in MANIFEST.md, plus ``"breast_cancer"``
        from scikit-learn).
    data_dir : path-like, optional
        Data folder holding ``<name>/<file>``; default :func:`resolve_data_dir`
        (``TORCHSVM_DATA``, then ``../shared/data`` next to the checkout, then the user
        cache).
    target : str, optional
        Positive-class definition (``DATASETS[name].targets``); default the papers'
        main choice.
    download : bool, default=False
        Fetch missing files that are byte-identical public copies into the data folder.
    **options
        Dataset-specific options (``DATASETS[name].options``): ``version`` (german:
        ``"categorical"`` / ``"numeric"``; pageblocks: ``"keel"`` / ``"pmlb"``), ``split``
        (adult: ``"train"`` / ``"test"`` / ``"all"``; leukemia_golub: ``"all"`` /
        ``"train"`` / ``"test"``), ``sources`` (heart_disease_uci), ``layout``
        (gastrointestinal: ``"lesion"`` / ``"lesion_light"``), ``features`` (cervical:
        ``"risk_factors"`` / ``"with_other_tests"``).

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Unknown name, target or option value.
    DatasetNotFoundError
        A needed file is missing; the message names it, the folder searched and the
        public source.
    DataError
        A file's sha256 differs from the manifest, or it parses to an unexpected shape.

    Examples
    --------
    >>> ds = load_dataset("breast_cancer")
    >>> ds.X.shape, ds.n_positive
    ((569, 30), 212)
    """
    spec = dataset_info(name)
    chosen = spec.default_target if target is None else str(target).lower()
    if chosen not in spec.targets:
        raise ValueError(
            f"{name}: target must be one of {list(spec.targets)}, got {target!r}"
        )
    opts = _resolve_options(spec, dict(options))
    resolver = _FileResolver(spec, resolve_data_dir(data_dir), download)
    X, positive, categorical, label, extra = spec.reader(resolver, chosen, opts)
    positive = np.asarray(positive, dtype=bool)
    if positive.shape != (X.shape[0],):
        raise DataError(
            f"{name}: {X.shape[0]} feature rows but {positive.shape} labels"
        )
    X = _categorize(X.reset_index(drop=True), categorical)
    y = np.where(positive, 1, -1).astype(np.int64)
    meta: dict[str, Any] = {
        "source": "; ".join(f.source for f in spec.files if f.path in resolver.used)
        or spec.origin,
        "origin": spec.origin,
        "licence": spec.licence,
        "files": dict(resolver.used),
        "data_dir": None if resolver.folder is None else str(resolver.folder),
        "target": chosen,
        "options": opts,
        "n_rows": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "n_positive": int(positive.sum()),
        "notes": spec.notes,
        **extra,
    }
    logger.debug("loaded %s: %s rows, %s +", name, X.shape[0], int(positive.sum()))
    return Dataset(
        X=X,
        y=y,
        name=name,
        positive_label=label,
        categorical=list(categorical),
        meta=meta,
    )
