"""Classification benchmark datasets of the papers, read from the staged copies.

``load_dataset(name)`` returns a :class:`Dataset` with the raw features (a DataFrame whose
categorical columns have dtype ``category``; missing values are NaN), labels ``y`` in
``{-1, +1}`` with the positive class the papers use, and metadata. Preprocessing
(imputation, dummies, standardisation, SPEC S2) is a separate, fold-wise step:
:func:`torchsvm.data.preprocess.make_preprocessor`.

Files are read exactly as staged in the shared data folder (see its ``MANIFEST.md``):
separators, header lines, ``'?'`` missing markers, gzip and encodings as noted there, and
every file's sha256 is checked against the manifest before it is parsed.

Data folder
-----------
Files live at ``<data_dir>/<name>/<file>``. ``data_dir`` is resolved as

1. the ``data_dir`` argument, if given (only that folder is searched);
2. else the environment variable ``TORCHSVM_DATA`` (only that folder);
3. else the user cache ``$XDG_CACHE_HOME/torchsvm/data`` (``~/.cache/torchsvm/data``),
   then the staged folder ``../shared/data`` next to this repository checkout.

A missing file raises :class:`~torchsvm.exceptions.DatasetNotFoundError` naming the file,
the folders searched and the public source it was staged from; with ``download=True``
files that are byte-identical copies of a public GitHub file are fetched into the first
searched folder (never in tests). A checksum mismatch raises
:class:`~torchsvm.exceptions.DataError`.

Positive classes (``target=``; the default is the papers' main choice)
----------------------------------------------------------------------
Where the papers' chapters differ, ``target`` selects the definition; see
:func:`dataset_info` or ``DATASETS[name].targets`` for every option. Notable choices:
wisconsin malignant (thesis ch. 2 / SPEC S5; ch. 4 and seed 000 count benign as +);
cervical Biopsy (seed 000; Hinselmann / Schiller / Cytology in ch. 3); careval
``class != unacc`` (ch. 3; ch. 4 uses ``== unacc``); australian class 1 (ch. 4 counts class
0); nursery ``not_recom`` (ch. 4: the largest class); leukemia ALL (AML in ch. 3); srbct EWS
(EWS + BL in seed 000); heart_disease_uci ``num > 0`` on Cleveland + Hungarian +
Switzerland (720 rows; the thesis' 'heart' has 720 rows, 362 +); housing, absenteeism and
productivity have no target fixed by the papers; the thresholds are the ones the manifest
documents. Multiclass labels not covered by a paper follow SPEC S2 ("largest class
negative, the rest positive") through the ``"largest_negative"`` targets.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from torchsvm.exceptions import DataError, DatasetNotFoundError

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetSpec",
    "FileSpec",
    "dataset_info",
    "list_datasets",
    "load_dataset",
    "resolve_data_dirs",
]

logger = logging.getLogger(__name__)

DATA_ENV_VAR = "TORCHSVM_DATA"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_UCI = "CC BY 4.0 (UCI listing; source repo states no licence)"

# Full commits of the source repositories (MANIFEST.md, "Full commits").
_COMMITS = {
    "EpistasisLab/pmlb": ["934854d0af2ed5a99ce43b2a0d30195eb44abd77"],
    "EyedBread/naive-bayes": ["8b74199a7418407b5fbb13384d663a0b3cf2a6a3"],
    "KESSMARX/Project---Car-Evaluation-": ["d4aba9e91b3a412bcfff1d4f094783aa3554af19"],
    "LProcopi15/RWorkshop": ["579b5e1c2408a0df98d114ae43f9116f2da47071"],
    "SCI2SUGR/KEEL": ["9d361afbebce1aa94446a114605e5554c7303511"],
    "SHILPIKUMARI2111/Divorce-Prediction": ["0ad2a6906ae175d8b6899a1bfecfa4808d808a65"],
    "Sabreen-Nazar/Iranian_Churn": ["7ef6d16ba14ca725be88bd4055428a51d3ddbb43"],
    "Zanderax/ID3": ["abd54a75f990b84eb47a99d329a0b6d5f585c01b"],
    "amritmaj/SVM-Tree": ["d7feedb491255e60379f18a082af7810f3b93801"],
    "cran/EMMIXSSL": ["cfacc7d02e6d654c0664105ad0a0dbe9573c592d"],
    "cran/plsgenomics": ["8c770daf139b94f6dd073529a53863d6db902a98"],
    "denisect/cervical_cancer_dataset": ["6c64511feee8b371d1505087432f4f3fe6558bda"],
    "gianluigilopardo/Absenteeism_prediction": [
        "3afa4714838d68ca2a9264b3b552cf6646844f74"
    ],
    "jbrownlee/Datasets": [
        "357ed4a2b0d25702e92bdefe48ab8e397991cdc5",
        "477f2a64890670c95d53c85e7fdede32882aaf7c",
        "a8229c90a131a53c58be9027e047e6a74f11a264",
    ],
    "jenniferdo2211/Spam-Filtering-Neural-Network": [
        "e5215692751baed90b3b39de640cf6ac32df1dc2"
    ],
    "jtreglos/machine-learning_classification": [
        "f9404cc0bdd98287ab4876c079e74a5f57c979fb"
    ],
    "lfvvercosa/base_german": ["79e3c5d7dbed57ca5b2b92cba72c1d9350c6370a"],
    "omsyaran/ML_QSAR": ["dff89991f0e1e84ecb9b9715073990320200ea26"],
    "rajarshi4488/Classification": ["68520acede4f2efa36c7b95201d43dfb817b1595"],
    "ramhiser/datamicroarray": ["45810be1718c30272058fb09a8fa53e6ae87ae56"],
    "tigner13/MachineLearningDataStructures": [
        "5b997ee6a52c4ac9ed2d82148c8d00694a031443"
    ],
    "vipull2010/heart-disease-xai": [
        "1e0e11d696e96223189b2c46dedcce55a28759dd",
        "1f5b0170d97fd915179c8007d216eed8cfd18488",
        "2d9fcfa3efc50bf4c1a47ebcbb81ae337b4919aa",
        "57dc4370ce47f8fb0663aeb6c97638214333f303",
        "7f986f549fa8e6b6c31eadc913dee834a4c02d30",
        "a2f0230e0df8d860bd83c67cbe0fa1d139938055",
        "c00013b0d580099a7a281f78ff6aba1b54c79d0f",
        "f2e917a60eac0f9256c4ec36336e36144e084225",
    ],
    "willhurwitz123/Wisconsin-breast-cancer-data": [
        "2197dcbd4dde4ab352e3af1a560d4323ee740cd3"
    ],
}


def _full_commit(repo: str, short: str) -> str:
    matches = [c for c in _COMMITS.get(repo, []) if c.startswith(short)]
    if len(matches) != 1:  # pragma: no cover - guarded by the registry test
        raise KeyError(f"no unique full commit for {repo} @ {short}")
    return matches[0]


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


Reader = Callable[
    [Callable[[str], Path], str, Mapping[str, Any]],
    tuple[pd.DataFrame, np.ndarray, list[str], str, dict[str, Any]],
]


@dataclass(frozen=True)
class DatasetSpec:
    """Registry entry of one dataset.

    Attributes
    ----------
    name : str
        Name as in MANIFEST.md.
    files : tuple of FileSpec
        Every staged file the loader may read (options pick a subset).
    reader : callable
        ``reader(get, target, options) -> (X, positive_mask, categorical, positive_label,
        extra_meta)``; ``get(path)`` returns the verified local path of a file.
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


def resolve_data_dirs(data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Folders searched for staged files, in order (see the module docstring).

    Parameters
    ----------
    data_dir : path-like, optional
        Explicit folder; when given it is the only one searched.

    Returns
    -------
    list of Path
    """
    if data_dir is not None:
        return [Path(data_dir).expanduser()]
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return [Path(env).expanduser()]
    return [_user_cache_dir(), _REPO_ROOT.parent / "shared" / "data"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
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

    def __init__(self, spec: DatasetSpec, dirs: list[Path], download: bool) -> None:
        self.spec = spec
        self.dirs = dirs
        self.download = download
        self.used: dict[str, str] = {}
        self.folder: Path | None = None

    def __call__(self, rel_path: str) -> Path:
        fspec = next((f for f in self.spec.files if f.path == rel_path), None)
        if fspec is None:  # pragma: no cover - registry bug
            raise KeyError(f"{rel_path} is not registered for {self.spec.name}")
        path = next((d / rel_path for d in self.dirs if (d / rel_path).is_file()), None)
        if path is None:
            if self.download and fspec.direct:
                path = self.dirs[0] / rel_path
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
                f"{path}: sha256 {actual} does not match the manifest's {fspec.sha256}; "
                "the file is not the staged copy (re-fetch it from "
                f"{fspec.source})"
            )
        self.used[rel_path] = actual
        self.folder = path.parent.parent
        return path

    def _missing_message(self, fspec: FileSpec) -> str:
        searched = ", ".join(str(d) for d in self.dirs)
        how = (
            f"download {fspec.url} (or call load_dataset(..., download=True))"
            if fspec.direct
            else f"get it from {fspec.source} (converted/compressed copy, see "
            "MANIFEST.md for how it was made)"
        )
        return (
            f"dataset {self.spec.name!r}: file {fspec.path!r} not found in {searched}. "
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


def _largest_class(labels: pd.Series) -> Any:
    counts = labels.value_counts()
    return counts.index[0]


ReaderOut = tuple[pd.DataFrame, np.ndarray, list[str], str, dict[str, Any]]

# ------------------------------------------------------------------------ readers

_WDBC_FEATURES = [
    "radius",
    "texture",
    "perimeter",
    "area",
    "smoothness",
    "compactness",
    "concavity",
    "concave points",
    "symmetry",
    "fractal dimension",
]
#: Names as in sklearn.datasets.load_breast_cancer (same 30 columns in the same order).
WDBC_COLUMNS = (
    [f"mean {f}" for f in _WDBC_FEATURES]
    + [f"{f} error" for f in _WDBC_FEATURES]
    + [f"worst {f}" for f in _WDBC_FEATURES]
)


def _wdbc_target(malignant: np.ndarray, target: str) -> tuple[np.ndarray, str]:
    if target == "malignant":
        return malignant, "diagnosis == M (malignant)"
    return ~malignant, "diagnosis == B (benign)"


def _read_wisconsin(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    raw = pd.read_csv(get("wisconsin/wdbc.data"), header=None)
    X = raw.iloc[:, 2:].astype(np.float64)
    X.columns = WDBC_COLUMNS
    pos, label = _wdbc_target((raw[1] == "M").to_numpy(), target)
    return X, pos, [], label, {"ids": raw[0].to_numpy()}


def _read_breast_cancer(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer(as_frame=True)
    X = bunch.data.astype(np.float64)
    # sklearn codes 0 = malignant, 1 = benign
    pos, label = _wdbc_target((bunch.target == 0).to_numpy(), target)
    return X, pos, [], label, {}


_GERMAN_NAMES = [
    "checking_status",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "employment_since",
    "installment_rate",
    "personal_status_sex",
    "other_debtors",
    "residence_since",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "existing_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
]
_GERMAN_CATEGORICAL = [
    "checking_status",
    "credit_history",
    "purpose",
    "savings",
    "employment_since",
    "personal_status_sex",
    "other_debtors",
    "property",
    "other_installment_plans",
    "housing",
    "job",
    "telephone",
    "foreign_worker",
]


def _read_german(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    version = opts["version"]
    if version == "categorical":
        raw = pd.read_csv(get("german/german.data"), sep=" ", header=None)
        X = raw.iloc[:, :20].copy()
        X.columns = _GERMAN_NAMES
        categorical = list(_GERMAN_CATEGORICAL)
    else:
        raw = pd.read_csv(get("german/german.data-numeric"), sep=r"\s+", header=None)
        X = raw.iloc[:, :24].astype(np.float64)
        X.columns = [f"a{i:02d}" for i in range(1, 25)]
        categorical = []
    cls = raw.iloc[:, -1].to_numpy()
    if target == "bad":
        return X, cls == 2, categorical, "class == 2 (bad credit)", {}
    return X, cls == 1, categorical, "class == 1 (good credit)", {}


_ADULT_NAMES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]
_ADULT_CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
]


def _read_adult(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    split = opts["split"]
    parts = {"train": ["adult/adult.data.gz"], "test": ["adult/adult.test.gz"]}
    files = parts.get(split, parts["train"] + parts["test"])
    frames, split_col = [], []
    for rel in files:
        # comma + space separated, no header, '?' = missing (MANIFEST)
        df = pd.read_csv(
            get(rel),
            header=None,
            names=[*_ADULT_NAMES, "income"],
            skipinitialspace=True,
            na_values="?",
        )
        frames.append(df)
        split_col += ["test" if "test" in rel else "train"] * len(df)
    raw = pd.concat(frames, ignore_index=True)
    X = raw[_ADULT_NAMES]
    # test labels end with a dot ('>50K.')
    pos = raw["income"].str.rstrip(".").eq(">50K").to_numpy()
    return X, pos, list(_ADULT_CATEGORICAL), "income > 50K", {"split": split_col}


def _simple_numeric(
    rel: str,
    names: list[str] | None,
    label_col: int,
    positive: Any,
    label: str,
    **read_kw: Any,
) -> Reader:
    def reader(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
        raw = pd.read_csv(get(rel), **read_kw)
        lab = raw.iloc[:, label_col]
        X = raw.drop(columns=raw.columns[label_col]).astype(np.float64)
        if names is not None:
            X.columns = names
        else:
            X.columns = [str(c).strip() for c in X.columns]
        return X, (lab == positive).to_numpy(), [], label, {}

    return reader


_DIABETES_NAMES = [
    "pregnancies",
    "glucose",
    "blood_pressure",
    "skin_thickness",
    "insulin",
    "bmi",
    "diabetes_pedigree",
    "age",
]
_HOUSING_NAMES = [
    "CRIM",
    "ZN",
    "INDUS",
    "CHAS",
    "NOX",
    "RM",
    "AGE",
    "DIS",
    "RAD",
    "TAX",
    "PTRATIO",
    "B",
    "LSTAT",
]


def _read_housing(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("housing/housing.data"), sep=r"\s+", header=None)
    X = raw.iloc[:, :13].astype(np.float64)
    X.columns = _HOUSING_NAMES
    medv = raw[13].to_numpy(dtype=np.float64)
    if target == "medv_gt_21":
        return X, medv > 21.0, [], "MEDV > 21", {}
    med = float(np.median(medv))
    return X, medv >= med, [], f"MEDV >= median ({med:g})", {}


_STATLOG_HEART_CATEGORICAL = ["chest_pain_type", "rest_elec_card_graph", "thal"]


def _read_heart_statlog(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    raw = pd.read_csv(get("heart_statlog/heart.dat"), sep=" ")
    X = raw.drop(columns="Class").astype(np.float64)
    # nominal attributes 3, 7, 13 of the UCI description (binary ones stay numeric)
    return (
        X,
        (raw["Class"] == 2).to_numpy(),
        list(_STATLOG_HEART_CATEGORICAL),
        "class == 2 (heart disease present)",
        {},
    )


def _read_liver(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("liver_bupa/bupa.data"))
    X = raw.drop(columns="selector").astype(np.float64)
    sel = raw["selector"].to_numpy()
    if target == "selector_2":
        return X, sel == 2, [], "selector == 2", {}
    return X, sel == 1, [], "selector == 1", {}


def _read_nursery(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("nursery/nursery.data.gz"))
    cls = raw["classification"]
    X = raw.drop(columns="classification")
    categorical = [str(c) for c in X.columns]
    if target == "largest_negative":
        big = _largest_class(cls)
        return X, (cls != big).to_numpy(), categorical, f"class != {big}", {}
    return X, (cls == "not_recom").to_numpy(), categorical, "class == not_recom", {}


_CERVICAL_TARGETS = {
    "biopsy": "Biopsy",
    "hinselmann": "Hinselmann",
    "schiller": "Schiller",
    "cytology": "Cytology",
}


def _read_cervical(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("cervical/risk_factors_cervical_cancer.csv"), na_values="?")
    targets = list(_CERVICAL_TARGETS.values())
    X = raw.drop(columns=targets).astype(np.float64)
    col = _CERVICAL_TARGETS[target]
    return X, (raw[col] == 1).to_numpy(), [], f"{col} == 1", {}


def _read_churn(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("churn/Customer_Churn.csv"))
    X = raw.drop(columns="Churn").astype(np.float64)
    return X, (raw["Churn"] == 1).to_numpy(), [], "Churn == 1", {}


_HEART_UCI_NAMES = [
    "age",
    "sex",
    "cp",
    "trestbps",
    "chol",
    "fbs",
    "restecg",
    "thalach",
    "exang",
    "oldpeak",
    "slope",
    "ca",
    "thal",
]
_HEART_UCI_SOURCES = ("cleveland", "hungarian", "switzerland", "va")


def _read_heart_uci(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    sources = opts["sources"]
    if isinstance(sources, str):
        sources = (sources,)
    bad = [s for s in sources if s not in _HEART_UCI_SOURCES]
    if bad or not sources:
        raise ValueError(
            f"sources must be a non-empty subset of {_HEART_UCI_SOURCES}, got {sources}"
        )
    frames, origin = [], []
    for src in sources:
        # processed.cleveland.data carries a header line added by the source repo
        header = 0 if src == "cleveland" else None
        df = pd.read_csv(
            get(f"heart_disease_uci/processed.{src}.data"),
            header=header,
            na_values="?",
        )
        df.columns = [*_HEART_UCI_NAMES, "num"]
        frames.append(df)
        origin += [src] * len(df)
    raw = pd.concat(frames, ignore_index=True)
    X = raw[_HEART_UCI_NAMES].astype(np.float64)
    pos = (raw["num"] > 0).to_numpy()
    return (
        X,
        pos,
        ["cp", "restecg", "slope", "thal"],
        "num > 0 (disease)",
        {"row_source": np.asarray(origin)},
    )


def _read_divorce(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("divorce/divorce.csv"), sep=";")
    label = raw.columns[-1]  # 'Target' in this copy ('Class' in UCI's)
    X = raw.drop(columns=label).astype(np.float64)
    return X, (raw[label] == 1).to_numpy(), [], f"{label} == 1 (divorced)", {}


_ABSENTEEISM_CATEGORICAL = [
    "Reason for absence",
    "Month of absence",
    "Day of the week",
    "Seasons",
]


def _read_absenteeism(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    raw = pd.read_csv(get("absenteeism/Absenteeism_at_work.csv"))
    raw.columns = [str(c).strip() for c in raw.columns]
    hours = raw["Absenteeism time in hours"].to_numpy(dtype=np.float64)
    # ID identifies the employee, it is not a measurement
    X = raw.drop(columns=["ID", "Absenteeism time in hours"]).astype(np.float64)
    X = X.astype({c: np.int64 for c in _ABSENTEEISM_CATEGORICAL})
    if target == "hours_gt_4":
        pos, label = hours > 4, "Absenteeism time in hours > 4"
    else:
        pos, label = hours >= 8, "Absenteeism time in hours >= 8"
    return X, pos, list(_ABSENTEEISM_CATEGORICAL), label, {"ids": raw["ID"].to_numpy()}


def _read_productivity(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    # UTF-8 with BOM, CRLF line ends; empty wip cells are missing
    raw = pd.read_csv(
        get("productivity/garments_worker_productivity.csv"), encoding="utf-8-sig"
    )
    # NOTE: 'finishing ' and 'finishing' are one department (UCI quirk kept in the file)
    raw["department"] = raw["department"].str.strip()
    actual = raw["actual_productivity"].to_numpy(dtype=np.float64)
    planned = raw["targeted_productivity"].to_numpy(dtype=np.float64)
    X = raw.drop(columns=["date", "actual_productivity"])
    categorical = ["quarter", "department", "day", "team"]
    num = [c for c in X.columns if c not in categorical]
    X[num] = X[num].astype(np.float64)
    if target == "actual_lt_0.75":
        pos, label = actual < 0.75, "actual_productivity < 0.75"
    else:
        pos, label = actual >= planned, "actual_productivity >= targeted_productivity"
    return X, pos, categorical, label, {"date": raw["date"].to_numpy()}


_VOTES_NAMES = [
    "handicapped-infants",
    "water-project-cost-sharing",
    "adoption-of-the-budget-resolution",
    "physician-fee-freeze",
    "el-salvador-aid",
    "religious-groups-in-schools",
    "anti-satellite-test-ban",
    "aid-to-nicaraguan-contras",
    "mx-missile",
    "immigration",
    "synfuels-corporation-cutback",
    "education-spending",
    "superfund-right-to-sue",
    "crime",
    "duty-free-exports",
    "export-administration-act-south-africa",
]


def _read_votes(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(
        get("votes/house-votes-84.data"),
        header=None,
        names=["party", *_VOTES_NAMES],
        na_values="?",
    )
    X = raw[_VOTES_NAMES].astype(object)
    party = raw["party"].str.strip()
    if target == "republican":
        return (
            X,
            (party == "republican").to_numpy(),
            list(_VOTES_NAMES),
            ("party == republican"),
            {},
        )
    return (
        X,
        (party == "democrat").to_numpy(),
        list(_VOTES_NAMES),
        ("party == democrat"),
        {},
    )


_AUSTRALIAN_CATEGORICAL = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]


def _read_australian(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    raw = pd.read_csv(get("australian/australian.dat"), sep=" ", header=None)
    X = raw.iloc[:, :14].copy()
    X.columns = [f"A{i}" for i in range(1, 15)]
    cls = raw[14].to_numpy()
    if target == "class_0":
        return X, cls == 0, list(_AUSTRALIAN_CATEGORICAL), "A15 == 0", {}
    return X, cls == 1, list(_AUSTRALIAN_CATEGORICAL), "A15 == 1", {}


_CAR_NAMES = ["buying", "maint", "doors", "persons", "lug_boot", "safety"]


def _read_careval(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(
        get("careval/car.data"), header=None, names=[*_CAR_NAMES, "class"]
    )
    X = raw[_CAR_NAMES].astype(object)
    unacc = (raw["class"] == "unacc").to_numpy()
    if target == "unacc":
        return X, unacc, list(_CAR_NAMES), "class == unacc", {}
    return X, ~unacc, list(_CAR_NAMES), "class != unacc (acc, good, vgood)", {}


def _read_biodeg(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("biodeg/biodeg.csv"), sep=";")
    # the header line ends with ';', which adds one empty column
    raw = raw.loc[:, [c for c in raw.columns if not str(c).startswith("Unnamed")]]
    X = raw.drop(columns="experimental_class").astype(np.float64)
    rb = (raw["experimental_class"] == "RB").to_numpy()
    return X, rb, [], "experimental_class == RB (ready biodegradable)", {}


_PAGEBLOCKS_NAMES = [
    "height",
    "lenght",
    "area",
    "eccen",
    "p_black",
    "p_and",
    "mean_tr",
    "blackpix",
    "blackand",
    "wb_trans",
]


def _read_pageblocks(
    get: Callable[[str], Path], target: str, opts: Mapping
) -> ReaderOut:
    if opts["version"] == "keel":
        # KEEL format: '@' header lines, comma + space separated
        raw = pd.read_csv(
            get("pageblocks/page-blocks0.dat"),
            comment="@",
            header=None,
            skipinitialspace=True,
        )
        X = raw.iloc[:, :10].astype(np.float64)
        X.columns = _PAGEBLOCKS_NAMES
        pos = (raw[10].str.strip() == "positive").to_numpy()
        return X, pos, [], "class == positive (non-text block, KEEL)", {}
    raw = pd.read_csv(get("pageblocks/page-blocks_pmlb.tsv.gz"), sep="\t")
    X = raw.drop(columns="target").astype(np.float64)
    X.columns = _PAGEBLOCKS_NAMES
    return X, (raw["target"] != 1).to_numpy(), [], "target != 1 (non-text block)", {}


def _read_mushroom(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    raw = pd.read_csv(get("mushroom/agaricus-lepiota.data"), na_values="?")
    X = raw.drop(columns="edibility").astype(object)
    categorical = [str(c) for c in X.columns]
    pos = (raw["edibility"] == "p").to_numpy()
    return X, pos, categorical, "edibility == p (poisonous)", {}


def _read_microarray(
    rel: str, label_col: str = "label", extra: tuple[str, ...] = ()
) -> Callable[[Callable[[str], Path]], tuple[pd.DataFrame, pd.Series, pd.DataFrame]]:
    def read(
        get: Callable[[str], Path],
    ) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
        raw = pd.read_csv(get(rel))
        labels = raw[label_col]
        side = raw[list(extra)]
        X = raw.drop(columns=[label_col, *extra]).astype(np.float64)
        return X, labels, side

    return read


def _read_colon(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    X, labels, _ = _read_microarray("colon_alon/alon_colon.csv.gz")(get)
    if target == "tumor":
        return X, (labels == "t").to_numpy(), [], "label == t (tumour)", {}
    return X, (labels == "n").to_numpy(), [], "label == n (normal)", {}


def _read_leukemia(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    X, labels, side = _read_microarray(
        "leukemia_golub/golub_leukemia.csv.gz", extra=("split",)
    )(get)
    split = side["split"].to_numpy()
    if opts["split"] != "all":
        keep = split == opts["split"]
        X, labels, split = X.loc[keep].reset_index(drop=True), labels[keep], split[keep]
    cls = "AML" if target == "aml" else "ALL"
    return X, (labels == cls).to_numpy(), [], f"label == {cls}", {"split": split}


def _read_srbct(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    X, labels, _ = _read_microarray("srbct/srbct_khan.csv.gz")(get)
    if target == "ews_bl":
        return X, labels.isin(["EWS", "BL"]).to_numpy(), [], "label in {EWS, BL}", {}
    return X, (labels == "EWS").to_numpy(), [], "label == EWS", {}


def _read_gastro(get: Callable[[str], Path], target: str, opts: Mapping) -> ReaderOut:
    # UCI orientation: row 0 lesion name, row 1 class, row 2 light, rows 3.. features;
    # one column per lesion x light
    raw = pd.read_csv(get("gastrointestinal/data.txt"), header=None, dtype=str)
    names = raw.iloc[0].to_numpy()
    cls = raw.iloc[1].astype(int).to_numpy()
    light = raw.iloc[2].astype(int).to_numpy()
    feats = raw.iloc[3:].astype(np.float64).to_numpy().T  # (152, 698)
    n_feat = feats.shape[1]
    if opts["layout"] == "lesion_light":
        X = pd.DataFrame(feats, columns=[f"f{j:03d}" for j in range(1, n_feat + 1)])
        X.insert(0, "light_nbi", (light == 2).astype(np.float64))
        lesion_cls = cls
        extra = {"groups": names, "light": light}
    else:
        # one row per lesion: white-light features, then NBI features
        order = pd.unique(names)
        blocks = []
        for code, tag in ((1, "wl"), (2, "nbi")):
            sel = light == code
            frame = pd.DataFrame(
                feats[sel],
                index=names[sel],
                columns=[f"{tag}_f{j:03d}" for j in range(1, n_feat + 1)],
            )
            if frame.index.duplicated().any():
                raise DataError(f"gastrointestinal: a lesion has two {tag} columns")
            blocks.append(frame.loc[order])
        X = pd.concat(blocks, axis=1).reset_index(drop=True)
        first = pd.Series(cls, index=names).groupby(level=0).first()
        lesion_cls = first.loc[order].to_numpy()
        extra = {"lesion": np.asarray(order)}
    if target == "adenoma":
        return X, lesion_cls == 3, [], "class == 3 (adenoma)", extra
    return X, lesion_cls != 1, [], "class != 1 (not hyperplasic)", extra


# ------------------------------------------------------------------------ registry


def _f(path: str, sha: str, source: str, direct: bool = True) -> FileSpec:
    return FileSpec(path=path, sha256=sha, source=source, direct=direct)


_JB = "jbrownlee/Datasets"
_HD = "vipull2010/heart-disease-xai"
_SPECS: list[DatasetSpec] = [
    DatasetSpec(
        name="wisconsin",
        files=(
            _f(
                "wisconsin/wdbc.data",
                "d606af411f3e5be8a317a5a8b652b425aaf0ff38ca683d5327ffff94c3695f4a",
                "willhurwitz123/Wisconsin-breast-cancer-data @ 2197dcbd4dde : wdbc.data",
            ),
        ),
        reader=_read_wisconsin,
        targets={
            "malignant": "diagnosis == M: 212 (thesis ch2, SPEC S5)",
            "benign": "diagnosis == B: 357 (thesis ch4, seed 000)",
        },
        default_target="malignant",
        origin="UCI ML Repository #17 Breast Cancer Wisconsin (Diagnostic)",
        licence=_UCI,
        notes="Values identical to sklearn's load_breast_cancer ('breast_cancer').",
    ),
    DatasetSpec(
        name="breast_cancer",
        files=(),
        reader=_read_breast_cancer,
        targets={
            "malignant": "sklearn target == 0 (malignant): 212",
            "benign": "sklearn target == 1 (benign): 357",
        },
        default_target="malignant",
        origin="scikit-learn bundled copy of UCI #17 (sklearn.datasets.load_breast_cancer)",
        licence="CC BY 4.0 (UCI); shipped with scikit-learn (BSD-3-Clause)",
        notes="Needs no data folder; same values as 'wisconsin'.",
    ),
    DatasetSpec(
        name="german",
        files=(
            _f(
                "german/german.data",
                "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
                "lfvvercosa/base_german @ 79e3c5d7dbed : german.data",
            ),
            _f(
                "german/german.data-numeric",
                "2752b044394958ab6dd193a0b56ca0f0b3a2d8bc7cb8c008e35a5e84bbec02f8",
                "lfvvercosa/base_german @ 79e3c5d7dbed : german.data-numeric",
            ),
        ),
        reader=_read_german,
        targets={"bad": "class == 2 (bad): 300", "good": "class == 1 (good): 700"},
        default_target="bad",
        options={"version": ("categorical", "numeric")},
        origin="UCI #144 Statlog (German Credit Data)",
        licence=_UCI,
        notes=(
            "version='categorical': the 20 original attributes (13 categorical); "
            "version='numeric': german.data-numeric, 24 numeric columns (SPEC S3 "
            "tutorial experiment)."
        ),
    ),
    DatasetSpec(
        name="adult",
        files=(
            _f(
                "adult/adult.data.gz",
                "171e93e0be014947c678f8e0fd17485ec99e8c273d1a7a0b506bb9139e95800b",
                f"{_JB} @ 477f2a648906 : adult-train.csv",
                direct=False,
            ),
            _f(
                "adult/adult.test.gz",
                "1f463d13207c2309afd36957e5dc547973934dd2cc22214907fda590810d9e32",
                f"{_JB} @ 477f2a648906 : adult-test.csv",
                direct=False,
            ),
        ),
        reader=_read_adult,
        targets={"income_gt_50k": "income == '>50K': 7841 train, 3846 test"},
        default_target="income_gt_50k",
        options={"split": ("train", "test", "all")},
        origin="UCI #2 Adult",
        licence=_UCI,
        notes="split='all' stacks train then test; meta['split'] tells them apart.",
    ),
    DatasetSpec(
        name="banknote",
        files=(
            _f(
                "banknote/banknote_authentication.csv",
                "d0539aaed2139ba7a587b3e34fb345ce503ff7d5d33dbf9912d8e195ce425cb9",
                f"{_JB} @ a8229c90a131 : banknote_authentication.csv",
            ),
        ),
        reader=_simple_numeric(
            "banknote/banknote_authentication.csv",
            ["variance", "skewness", "curtosis", "entropy"],
            4,
            1,
            "class == 1",
            header=None,
        ),
        targets={"class_1": "class == 1: 610"},
        default_target="class_1",
        origin="UCI #267 Banknote Authentication",
        licence=_UCI,
    ),
    DatasetSpec(
        name="diabetes",
        files=(
            _f(
                "diabetes/pima-indians-diabetes.csv",
                "6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af",
                f"{_JB} @ 357ed4a2b0d2 : pima-indians-diabetes.data.csv",
            ),
        ),
        reader=_simple_numeric(
            "diabetes/pima-indians-diabetes.csv",
            _DIABETES_NAMES,
            8,
            1,
            "class == 1 (diabetic)",
            header=None,
        ),
        targets={"class_1": "class == 1: 268"},
        default_target="class_1",
        origin="Pima Indians Diabetes (NIDDK; formerly UCI)",
        licence="not stated",
        notes=(
            "Zeros (e.g. glucose, BMI) are kept as recorded. Seed 000 reports 759 rows / "
            "263 +, which no simple zero filter reproduces."
        ),
    ),
    DatasetSpec(
        name="housing",
        files=(
            _f(
                "housing/housing.data",
                "e3e36f7b9e5435f9eb8320e106aebad00031fefa3064527da0c71dec59e49b76",
                f"{_JB} @ a8229c90a131 : housing.data",
            ),
        ),
        reader=_read_housing,
        targets={
            "medv_ge_median": "MEDV >= median (21.2): 255",
            "medv_gt_21": "MEDV > 21: 257",
        },
        default_target="medv_ge_median",
        origin="Boston Housing (Harrison & Rubinfeld 1978; StatLib / former UCI)",
        licence="not stated",
        notes="The papers fix no threshold (thesis: 256 +); neither rule gives 256.",
    ),
    DatasetSpec(
        name="ionosphere",
        files=(
            _f(
                "ionosphere/ionosphere.csv",
                "fd6dd7864b55d56dac0a1e6e24af9ccc35bf2555ac79af8ab9f3d1daa065ab83",
                f"{_JB} @ a8229c90a131 : ionosphere.csv",
            ),
        ),
        reader=_simple_numeric(
            "ionosphere/ionosphere.csv",
            [f"a{i:02d}" for i in range(1, 35)],
            34,
            "g",
            "class == g (good)",
            header=None,
        ),
        targets={"good": "class == g: 225"},
        default_target="good",
        origin="UCI #52 Ionosphere",
        licence=_UCI,
    ),
    DatasetSpec(
        name="heart_statlog",
        files=(
            _f(
                "heart_statlog/heart.dat",
                "0f54e1ea92b9d244a4a357ccf5da91823e9d2592af9dedeea7df85fc5758b8b7",
                "amritmaj/SVM-Tree @ d7feedb49125 : heart.dat",
            ),
        ),
        reader=_read_heart_statlog,
        targets={"presence": "class == 2: 120"},
        default_target="presence",
        origin="UCI #145 Statlog (Heart)",
        licence=_UCI,
    ),
    DatasetSpec(
        name="liver_bupa",
        files=(
            _f(
                "liver_bupa/bupa.data",
                "975e8d89b140a487b16276cf3dacad97af63c4e367512b9973e7ab7b1626d419",
                "amritmaj/SVM-Tree @ d7feedb49125 : bupa.data",
            ),
        ),
        reader=_read_liver,
        targets={
            "selector_1": "selector == 1: 145",
            "selector_2": "selector == 2: 200",
        },
        default_target="selector_1",
        origin="UCI #60 Liver Disorders (BUPA)",
        licence=_UCI,
        notes="'selector' is a train/test split variable in UCI's own note; the papers "
        "use it as the class.",
    ),
    DatasetSpec(
        name="nursery",
        files=(
            _f(
                "nursery/nursery.data.gz",
                "ae030a2461f9138ec45c404848325d3d72d4ebccc2573732837a6c96df7127d3",
                "jtreglos/machine-learning_classification @ f9404cc0bdd9 : nursery.data",
                direct=False,
            ),
        ),
        reader=_read_nursery,
        targets={
            "not_recom": "class == not_recom (largest class, thesis ch4): 4320",
            "largest_negative": "SPEC S2 rule, class != not_recom: 8640",
        },
        default_target="not_recom",
        origin="UCI #76 Nursery",
        licence=_UCI,
    ),
    DatasetSpec(
        name="cervical",
        files=(
            _f(
                "cervical/risk_factors_cervical_cancer.csv",
                "f749419274544950bdb971781b26187bc16440b0a86ad96f932854ac7dc530a7",
                "denisect/cervical_cancer_dataset @ 6c64511feee8 : "
                "risk_factors_cervical_cancer.csv",
            ),
        ),
        reader=_read_cervical,
        targets={
            "biopsy": "Biopsy == 1: 55 (seed 000)",
            "hinselmann": "Hinselmann == 1: 35 (ch3 cervical-cancer-1)",
            "schiller": "Schiller == 1: 74 (ch3 cervical-cancer-2)",
            "cytology": "Cytology == 1: 44",
        },
        default_target="biopsy",
        origin="UCI #383 Cervical Cancer (Risk Factors)",
        licence=_UCI,
        notes="Features are the 32 risk factors; the four test results are targets only.",
    ),
    DatasetSpec(
        name="churn",
        files=(
            _f(
                "churn/Customer_Churn.csv",
                "72a4a660cba4166bab4f0c24e930d5453d1917e208c9ce2ed16b841347350dd3",
                "Sabreen-Nazar/Iranian_Churn @ 7ef6d16ba14c : Customer_Churn.csv",
            ),
        ),
        reader=_read_churn,
        targets={"churn": "Churn == 1: 495"},
        default_target="churn",
        origin="UCI Iranian Churn Dataset (Keramati & Ardabili 2011)",
        licence=_UCI + "; source repo: Apache-2.0",
        notes="All 13 columns kept (the thesis lists 11 attributes).",
    ),
    DatasetSpec(
        name="heart_disease_uci",
        files=tuple(
            _f(f"heart_disease_uci/processed.{src}.data", sha, source)
            for src, sha, source in [
                (
                    "cleveland",
                    "c620b2f015f8e6309443511060daa06cc46abe0a7e9126bf423a463988d746f1",
                    "EyedBread/naive-bayes @ 8b74199a7418 : processed.cleveland.data",
                ),
                (
                    "hungarian",
                    "31134d83efc3266e486acece5e259585d7a52f16afa5567f195e70a993327afe",
                    f"{_HD} @ 57dc4370ce47 : processed.hungarian.data",
                ),
                (
                    "switzerland",
                    "422aa0182e5b95ff4ef2d95512caf3335e114fc1816db477a5a30286b267c2d7",
                    f"{_HD} @ f2e917a60eac : processed.switzerland.data",
                ),
                (
                    "va",
                    "1a12cdc1aa204bc5506aa22f04b6c45224b23f36adbd1c62039f65f370e334ea",
                    f"{_HD} @ 1e0e11d696e9 : processed.va.data",
                ),
            ]
        ),
        reader=_read_heart_uci,
        targets={"disease": "num > 0: 360 of 720 (cleveland+hungarian+switzerland)"},
        default_target="disease",
        options={
            "sources": (
                ("cleveland", "hungarian", "switzerland"),
                ("cleveland",),
                ("cleveland", "hungarian", "switzerland", "va"),
            )
        },
        origin="UCI #45 Heart Disease",
        licence=_UCI,
        notes=(
            "The 13 processed attributes. Thesis 'heart' (720 x 75, 362 +) is nearest "
            "to cleveland+hungarian+switzerland (720 rows, 360 +); its 75 raw "
            "attributes are not reconstructed. chol == 0 in switzerland is kept as "
            "recorded. sources= takes any subset of cleveland, hungarian, switzerland, "
            "va; meta['row_source'] tells the rows apart."
        ),
    ),
    DatasetSpec(
        name="divorce",
        files=(
            _f(
                "divorce/divorce.csv",
                "9f764154a3abdbbb41c935659daafcf3b178b1c1e13ffbf3e31aa078800279ef",
                "SHILPIKUMARI2111/Divorce-Prediction @ 0ad2a6906ae1 : divorce.csv",
            ),
        ),
        reader=_read_divorce,
        targets={"divorced": "label == 1: 84"},
        default_target="divorced",
        origin="UCI Divorce Predictors data set",
        licence=_UCI,
    ),
    DatasetSpec(
        name="absenteeism",
        files=(
            _f(
                "absenteeism/Absenteeism_at_work.csv",
                "7c6659d003ef0a489ecc356e5f09717081e0e964cdbd53ebd39b4d144058c894",
                "gianluigilopardo/Absenteeism_prediction @ 3afa4714838d : "
                "Absenteeism_at_work.csv",
            ),
        ),
        reader=_read_absenteeism,
        targets={
            "hours_ge_8": "Absenteeism time in hours >= 8: 271",
            "hours_gt_4": "Absenteeism time in hours > 4: 279",
        },
        default_target="hours_ge_8",
        origin="UCI #445 Absenteeism at work",
        licence=_UCI,
        notes=(
            "No rule is fixed by the papers (thesis: 739 rows, 272 +). ID is dropped "
            "(kept in meta['ids']); 19 features remain, 4 of them categorical."
        ),
    ),
    DatasetSpec(
        name="productivity",
        files=(
            _f(
                "productivity/garments_worker_productivity.csv",
                "4535b146a3462dce3a43d3b352b2235def269f3ff5255d5b412fca209738b70f",
                "rajarshi4488/Classification @ 68520acede4f : "
                "garments_worker_productivity.csv",
            ),
        ),
        reader=_read_productivity,
        targets={
            "met_target": "actual_productivity >= targeted_productivity: 875",
            "actual_lt_0.75": "actual_productivity < 0.75: 481",
        },
        default_target="met_target",
        origin="UCI #597 Productivity Prediction of Garment Employees",
        licence=_UCI,
        notes=(
            "No rule is fixed by the papers (thesis: 1196 rows, 474 +; "
            "'actual_lt_0.75' is the nearest). date is dropped (meta['date']), "
            "actual_productivity is the target; department names are stripped "
            "('finishing ' == 'finishing'); 506 empty wip cells are missing."
        ),
    ),
    DatasetSpec(
        name="votes",
        files=(
            _f(
                "votes/house-votes-84.data",
                "40a09e12204d633e373926ca9f6adf4b6f7f55a7c383682a8cb12986f34e8de7",
                "tigner13/MachineLearningDataStructures @ 5b997ee6a52c : "
                "house-votes-84.data",
            ),
        ),
        reader=_read_votes,
        targets={
            "democrat": "party == democrat: 267",
            "republican": "party == republican: 168",
        },
        default_target="democrat",
        origin="UCI #105 Congressional Voting Records",
        licence=_UCI,
        notes="'?' (no recorded vote, 203 rows) is read as missing.",
    ),
    DatasetSpec(
        name="australian",
        files=(
            _f(
                "australian/australian.dat",
                "52485551057350586caa87adb8f87384fb20899afc34e63d07d16e1e969a4cbe",
                "LProcopi15/RWorkshop @ 579b5e1c2408 : "
                "Week 2 - Visualizations/australian.dat",
            ),
        ),
        reader=_read_australian,
        targets={
            "class_1": "A15 == 1: 307",
            "class_0": "A15 == 0: 383 (thesis ch4)",
        },
        default_target="class_1",
        origin="UCI #143 Statlog (Australian Credit Approval)",
        licence=_UCI,
        notes=(
            "A1, A4, A5, A6, A8, A9, A11, A12 are categorical (UCI description). This "
            "copy marks 6 cells 'NA' (4 rows); they are read as missing."
        ),
    ),
    DatasetSpec(
        name="careval",
        files=(
            _f(
                "careval/car.data",
                "b703a9ac69f11e64ce8c223c0a40de4d2e9d769f7fb20be5f8f2e8a619893d83",
                "KESSMARX/Project---Car-Evaluation- @ d4aba9e91b3a : car.data",
            ),
        ),
        reader=_read_careval,
        targets={
            "acceptable": "class != unacc: 518 (thesis ch3)",
            "unacc": "class == unacc: 1210 (thesis ch4)",
        },
        default_target="acceptable",
        origin="UCI #19 Car Evaluation",
        licence=_UCI,
    ),
    DatasetSpec(
        name="biodeg",
        files=(
            _f(
                "biodeg/biodeg.csv",
                "ddc3166c17bbd63975b930cda57d3bc477a7362dd03b69471e95b77975aad066",
                "omsyaran/ML_QSAR @ dff89991f0e1 : biodeg.csv",
            ),
        ),
        reader=_read_biodeg,
        targets={"rb": "experimental_class == RB: 356"},
        default_target="rb",
        origin="UCI #254 QSAR Biodegradation",
        licence=_UCI,
    ),
    DatasetSpec(
        name="pageblocks",
        files=(
            _f(
                "pageblocks/page-blocks0.dat",
                "c46bf830740d44bf8d4042b1679424857bcfd770568d2c250f92a91a12d425b2",
                "SCI2SUGR/KEEL @ 9d361afbebce : dist/data/page-blocks0/page-blocks0.dat",
            ),
            _f(
                "pageblocks/page-blocks_pmlb.tsv.gz",
                "fd447ed82d29f20aa8faa03c3cb3e34381e45b64af026dc5b0d9861052440482",
                "EpistasisLab/pmlb @ 934854d0af2e : "
                "datasets/classification/page-blocks/page-blocks.tsv.gz",
            ),
        ),
        reader=_read_pageblocks,
        targets={"non_text": "KEEL: class == positive: 559; PMLB: target != 1: 560"},
        default_target="non_text",
        options={"version": ("keel", "pmlb")},
        origin="KEEL imbalanced 'page-blocks0' from UCI #78 Page Blocks",
        licence="KEEL repo: GPL-3 (software); PMLB repo: MIT",
        notes="Thesis: 5472 rows, 558 +; the KEEL copy has 5472 rows, 559 +.",
    ),
    DatasetSpec(
        name="sonar",
        files=(
            _f(
                "sonar/sonar.csv",
                "3079c09b5d2789a0f96aff82c28e5164fafe2495c5f8da96c6c256c1bd25763f",
                f"{_JB} @ a8229c90a131 : sonar.csv",
            ),
        ),
        reader=_simple_numeric(
            "sonar/sonar.csv",
            [f"band_{i:02d}" for i in range(1, 61)],
            60,
            "M",
            "class == M (mine)",
            header=None,
        ),
        targets={"mine": "class == M: 111"},
        default_target="mine",
        origin="UCI #151 Connectionist Bench (Sonar)",
        licence=_UCI,
    ),
    DatasetSpec(
        name="mushroom",
        files=(
            _f(
                "mushroom/agaricus-lepiota.data",
                "126abef844f76d8484681851a7d02e09e52dc0c6594fc49f1bc7854397c5ebda",
                "Zanderax/ID3 @ abd54a75f990 : agaricus-lepiota.data",
            ),
        ),
        reader=_read_mushroom,
        targets={"poisonous": "edibility == p: 3916"},
        default_target="poisonous",
        origin="UCI #73 Mushroom",
        licence=_UCI + "; source repo: GPL-3",
        notes="stalk-root '?' (2480 rows) is read as missing.",
    ),
    DatasetSpec(
        name="spambase",
        files=(
            _f(
                "spambase/spambase.data",
                "b547e97c32fdb24e4bbf9b332abc844499b7a7b47161f58ff85ace3a78b45416",
                "jenniferdo2211/Spam-Filtering-Neural-Network @ e5215692751b : "
                "spambase.data",
            ),
        ),
        reader=_simple_numeric("spambase/spambase.data", None, 57, 1, "spam == 1"),
        targets={"spam": "spam == 1: 1813"},
        default_target="spam",
        origin="UCI #94 Spambase",
        licence=_UCI,
    ),
    DatasetSpec(
        name="colon_alon",
        files=(
            _f(
                "colon_alon/alon_colon.csv.gz",
                "dafdd81cb47af7a7a6a542d0519c0414469704807a050c469dadca42769b1c15",
                "ramhiser/datamicroarray @ 45810be1718c : data/alon.RData",
                direct=False,
            ),
        ),
        reader=_read_colon,
        targets={"normal": "label == n: 22", "tumor": "label == t: 40"},
        default_target="normal",
        origin="Alon et al. 1999 (Princeton); via R package datamicroarray",
        licence="datamicroarray: MIT",
    ),
    DatasetSpec(
        name="leukemia_golub",
        files=(
            _f(
                "leukemia_golub/golub_leukemia.csv.gz",
                "3f5f3329f307f0d0c5e6b88edf9d3d2cec143f771d64f175785dd33aca3e5b2d",
                "ramhiser/datamicroarray @ 45810be1718c : data/golub.RData",
                direct=False,
            ),
        ),
        reader=_read_leukemia,
        targets={
            "all": "label == ALL: 47 (seed 000, ch4)",
            "aml": "label == AML: 25 (ch3)",
        },
        default_target="all",
        options={"split": ("all", "train", "test")},
        origin="Golub et al. 1999 (Broad Institute); via R package datamicroarray",
        licence="datamicroarray: MIT",
        notes="7129 probes (papers: 7128); meta['split'] is the original 38/34 split.",
    ),
    DatasetSpec(
        name="srbct",
        files=(
            _f(
                "srbct/srbct_khan.csv.gz",
                "4bdebe543542e3b8fe9630b39c92a21d49c356976274865bf9f3f08ff6206440",
                "cran/plsgenomics @ 8c770daf139b : data/SRBCT.rda",
                direct=False,
            ),
        ),
        reader=_read_srbct,
        targets={
            "ews": "label == EWS: 29 (ch3)",
            "ews_bl": "label in {EWS, BL}: 40 (seed 000)",
        },
        default_target="ews",
        origin="Khan et al. 2001; via R package plsgenomics",
        licence="plsgenomics: GPL (>= 2)",
        notes="2308 genes (papers: 1022 after a gene filter not reproduced here).",
    ),
    DatasetSpec(
        name="gastrointestinal",
        files=(
            _f(
                "gastrointestinal/data.txt",
                "0e5e6cad811cc0e3b9675a8dfe5fc8900a1774ae9f7cccf966625c30cd402af1",
                "cran/EMMIXSSL @ cfacc7d02e6d : data/gastrodata.rda",
                direct=False,
            ),
        ),
        reader=_read_gastro,
        targets={
            "not_hyperplasic": "lesion class != 1: 55 of 76 lesions",
            "adenoma": "lesion class == 3: 40 of 76 lesions",
        },
        default_target="not_hyperplasic",
        options={"layout": ("lesion", "lesion_light")},
        origin="UCI Gastrointestinal Lesions in Regular Colonoscopy (Mesejo et al. "
        "2016); via R package EMMIXSSL",
        licence="EMMIXSSL: GPL-3",
        notes=(
            "layout='lesion' (default): one row per lesion, 698 white-light (wl_*) then "
            "698 NBI (nbi_*) features = 1396 columns, 76 rows. layout='lesion_light': "
            "one row per lesion x light as staged (152 rows, 698 features + light_nbi); "
            "meta['groups'] holds the lesion name, use grouped CV to keep both lights "
            "of a lesion in the same fold."
        ),
    ),
]

#: Registry of every classification dataset, by name (read-only).
DATASETS: Mapping[str, DatasetSpec] = MappingProxyType({s.name: s for s in _SPECS})


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
        Data folder holding ``<name>/<file>``; default: ``TORCHSVM_DATA``, then the user
        cache, then ``../shared/data`` next to the checkout.
    target : str, optional
        Positive-class definition (``DATASETS[name].targets``); default the papers'
        main choice.
    download : bool, default=False
        Fetch missing files that are byte-identical public copies into the first
        searched folder.
    **options
        Dataset-specific options (``DATASETS[name].options``): ``version`` (german:
        ``"categorical"`` / ``"numeric"``; pageblocks: ``"keel"`` / ``"pmlb"``), ``split``
        (adult: ``"train"`` / ``"test"`` / ``"all"``; leukemia_golub: ``"all"`` /
        ``"train"`` / ``"test"``), ``sources`` (heart_disease_uci), ``layout``
        (gastrointestinal: ``"lesion"`` / ``"lesion_light"``).

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        Unknown name, target or option value.
    DatasetNotFoundError
        A needed file is missing; the message names it, the folders searched and the
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
    dirs = resolve_data_dirs(data_dir)
    resolver = _FileResolver(spec, dirs, download)
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
