"""Dataset loaders: manifest counts, checksums, data-folder resolution, errors."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from torchsvm.data import datasets as datasets_module
from torchsvm.data.datasets import (
    DATASETS,
    Dataset,
    FileSpec,
    list_datasets,
    load_dataset,
    resolve_data_dir,
)
from torchsvm.data.preprocess import make_preprocessor_for
from torchsvm.data.readers import READERS
from torchsvm.exceptions import DataError, DatasetNotFoundError

# (name, options, rows, raw feature columns, positives) from MANIFEST.md
EXPECTED = [
    ("wisconsin", {}, 569, 30, 212),
    ("wisconsin", {"target": "benign"}, 569, 30, 357),
    ("german", {}, 1000, 20, 300),
    ("german", {"version": "numeric"}, 1000, 24, 300),
    ("adult", {}, 32561, 14, 7841),
    ("adult", {"split": "test"}, 16281, 14, 3846),
    ("adult", {"split": "all"}, 48842, 14, 11687),
    ("banknote", {}, 1372, 4, 610),
    ("diabetes", {}, 768, 8, 268),
    ("housing", {}, 506, 13, 255),
    ("housing", {"target": "medv_gt_21"}, 506, 13, 257),
    ("ionosphere", {}, 351, 34, 225),
    ("heart_statlog", {}, 270, 13, 120),
    ("liver_bupa", {}, 345, 6, 145),
    ("nursery", {}, 12960, 8, 4320),
    ("nursery", {"target": "largest_negative"}, 12960, 8, 8640),
    ("cervical", {}, 858, 32, 55),
    ("cervical", {"target": "hinselmann"}, 858, 32, 35),
    ("cervical", {"target": "schiller"}, 858, 32, 74),
    ("cervical", {"target": "cytology"}, 858, 32, 44),
    ("cervical", {"features": "with_other_tests"}, 858, 35, 55),
    ("churn", {}, 3150, 13, 495),
    ("heart_disease_uci", {}, 720, 13, 360),
    ("heart_disease_uci", {"sources": ("cleveland",)}, 303, 13, 139),
    ("heart_disease_uci", {"sources": ("va",)}, 200, 13, 149),
    ("divorce", {}, 170, 54, 84),
    ("absenteeism", {}, 740, 19, 271),
    ("absenteeism", {"target": "hours_gt_4"}, 740, 19, 279),
    ("productivity", {}, 1197, 13, 474),
    ("productivity", {"target": "met_target"}, 1197, 13, 875),
    ("productivity", {"target": "actual_lt_0.75"}, 1197, 13, 481),
    ("votes", {}, 435, 16, 267),
    ("australian", {}, 690, 14, 307),
    ("australian", {"target": "class_0"}, 690, 14, 383),
    ("careval", {}, 1728, 6, 518),
    ("careval", {"target": "unacc"}, 1728, 6, 1210),
    ("biodeg", {}, 1055, 41, 356),
    ("pageblocks", {}, 5472, 10, 559),
    ("pageblocks", {"version": "pmlb"}, 5473, 10, 560),
    ("sonar", {}, 208, 60, 111),
    ("mushroom", {}, 8124, 22, 3916),
    ("spambase", {}, 4601, 57, 1813),
    ("colon_alon", {}, 62, 2000, 22),
    ("leukemia_golub", {}, 72, 7129, 47),
    ("leukemia_golub", {"target": "aml"}, 72, 7129, 25),
    ("leukemia_golub", {"split": "train"}, 38, 7129, 27),
    ("srbct", {}, 83, 2308, 29),
    ("srbct", {"target": "ews_bl"}, 83, 2308, 40),
    ("gastrointestinal", {}, 76, 1396, 55),
    ("gastrointestinal", {"target": "adenoma"}, 76, 1396, 40),
    ("gastrointestinal", {"layout": "lesion_light"}, 152, 699, 110),
]

_MICROARRAYS = {"colon_alon", "leukemia_golub", "srbct"}
_ids = [
    f"{n}-{'-'.join(f'{k}={v}' for k, v in o.items()) or 'default'}"
    for n, o, *_ in EXPECTED
]


def _manifest_text(data_dir: Path) -> str:
    return (data_dir / "MANIFEST.md").read_text(encoding="utf-8")


def _check_dataset(ds: Dataset) -> None:
    assert isinstance(ds.X, pd.DataFrame)
    assert ds.y.dtype == np.int64
    assert set(np.unique(ds.y)) <= {-1, 1}
    assert ds.X.columns.is_unique
    assert all(isinstance(c, str) for c in ds.X.columns)
    for col in ds.categorical:
        assert isinstance(ds.X[col].dtype, pd.CategoricalDtype), col
    numeric_dtypes = {str(t) for t in ds.X[ds.numeric].dtypes.unique()}
    assert numeric_dtypes <= {"float64", "int64"}, numeric_dtypes
    assert ds.meta["n_rows"] == ds.n_samples
    assert ds.meta["n_positive"] == ds.n_positive
    for key in ("source", "origin", "licence", "notes", "target", "files"):
        assert key in ds.meta


_CASES = [
    pytest.param(
        *case, id=i, marks=[pytest.mark.slow] if case[0] in _MICROARRAYS else []
    )
    for case, i in zip(EXPECTED, _ids, strict=True)
]


@pytest.mark.data
@pytest.mark.parametrize(("name", "options", "rows", "features", "positives"), _CASES)
def test_dataset_matches_manifest_counts(
    data_dir: Path, name: str, options: dict, rows: int, features: int, positives: int
) -> None:
    ds = load_dataset(name, data_dir, **options)
    assert (ds.n_samples, ds.n_features, ds.n_positive) == (rows, features, positives)
    _check_dataset(ds)


@pytest.mark.data
def test_every_manifest_classification_dataset_is_registered(data_dir: Path) -> None:
    text = _manifest_text(data_dir)
    names = set(re.findall(r"^\| ([a-z_]+) \| ", text, flags=re.MULTILINE))
    names -= {"name"}
    classification = {n for n in names if not n.startswith("dea_")}
    assert classification == set(list_datasets()) - {"breast_cancer"}


@pytest.mark.data
def test_registry_checksums_match_manifest(data_dir: Path) -> None:
    text = _manifest_text(data_dir)
    manifest = dict(
        (file, sha)
        for file, sha in re.findall(r"([\w.\-]+) — sha256 `([0-9a-f]{64})`", text)
    )
    n_checked = 0
    for spec in DATASETS.values():
        for fspec in spec.files:
            assert manifest[Path(fspec.path).name] == fspec.sha256, fspec.path
            n_checked += 1
    assert n_checked >= 30


@pytest.mark.data
@pytest.mark.slow
def test_every_dataset_preprocesses_to_finite_matrix(data_dir: Path) -> None:
    for name in list_datasets():
        ds = load_dataset(name, data_dir)
        Z = make_preprocessor_for(ds).fit_transform(ds.X)
        assert Z.shape[0] == ds.n_samples, name
        assert np.all(np.isfinite(Z)), name


@pytest.mark.data
def test_wisconsin_equals_sklearn_breast_cancer(data_dir: Path) -> None:
    a = load_dataset("wisconsin", data_dir)
    b = load_dataset("breast_cancer")
    assert list(a.X.columns) == list(b.X.columns)
    np.testing.assert_allclose(a.X.to_numpy(), b.X.to_numpy())
    np.testing.assert_array_equal(a.y, b.y)


@pytest.mark.data
def test_missing_markers_become_nan(data_dir: Path) -> None:
    adult = load_dataset("adult", data_dir)
    assert int(adult.X.isna().sum().sum()) == 4262  # '?' cells
    votes = load_dataset("votes", data_dir)
    assert int(votes.X.isna().any(axis=1).sum()) == 203
    assert set(votes.X["crime"].cat.categories) == {"n", "y"}
    mushroom = load_dataset("mushroom", data_dir)
    assert int(mushroom.X["stalk-root"].isna().sum()) == 2480


@pytest.mark.data
def test_heart_disease_sources_and_meta(data_dir: Path) -> None:
    ds = load_dataset("heart_disease_uci", data_dir)
    src, counts = np.unique(ds.meta["row_source"], return_counts=True)
    assert dict(zip(src.tolist(), counts.tolist(), strict=True)) == {
        "cleveland": 303,
        "hungarian": 294,
        "switzerland": 123,
    }
    with pytest.raises(ValueError, match="sources"):
        load_dataset("heart_disease_uci", data_dir, sources=("mars",))


@pytest.mark.data
def test_gastrointestinal_layouts_agree(data_dir: Path) -> None:
    per_lesion = load_dataset("gastrointestinal", data_dir)
    per_light = load_dataset("gastrointestinal", data_dir, layout="lesion_light")
    groups = per_light.meta["groups"]
    light = per_light.meta["light"]
    first = per_lesion.meta["lesion"][0]
    wl_row = per_light.X[(groups == first) & (light == 1)].iloc[0, 1:].to_numpy()
    nbi_row = per_light.X[(groups == first) & (light == 2)].iloc[0, 1:].to_numpy()
    np.testing.assert_array_equal(per_lesion.X.iloc[0, :698].to_numpy(), wl_row)
    np.testing.assert_array_equal(per_lesion.X.iloc[0, 698:].to_numpy(), nbi_row)


def test_breast_cancer_needs_no_data_folder(tmp_path: Path) -> None:
    ds = load_dataset("breast_cancer", data_dir=tmp_path)
    assert (ds.n_samples, ds.n_features, ds.n_positive) == (569, 30, 212)
    assert load_dataset("breast_cancer", target="benign").n_positive == 357
    _check_dataset(ds)


def test_missing_file_names_file_folder_and_source(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("wisconsin", data_dir=tmp_path)
    msg = str(info.value)
    assert "wisconsin/wdbc.data" in msg
    assert str(tmp_path) in msg
    assert "willhurwitz123/Wisconsin-breast-cancer-data" in msg
    assert "raw.githubusercontent.com" in msg
    assert isinstance(info.value, FileNotFoundError)


def test_missing_converted_file_does_not_offer_download(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="converted") as info:
        load_dataset("srbct", data_dir=tmp_path, download=True)
    assert "cran/plsgenomics" in str(info.value)


def test_checksum_mismatch_names_file_and_both_digests(tmp_path: Path) -> None:
    (tmp_path / "sonar").mkdir()
    bad = tmp_path / "sonar" / "sonar.csv"
    bad.write_text("0.1,0.2,M\n")
    actual = hashlib.sha256(bad.read_bytes()).hexdigest()
    with pytest.raises(DataError, match="sha256") as info:
        load_dataset("sonar", data_dir=tmp_path)
    msg = str(info.value)
    assert str(bad) in msg
    assert actual in msg
    assert DATASETS["sonar"].files[0].sha256 in msg


def test_truncated_gzip_is_reported_before_parsing(tmp_path: Path) -> None:
    # a corrupt copy of a compressed file fails the checksum, not deep inside pandas
    (tmp_path / "adult").mkdir()
    (tmp_path / "adult" / "adult.data.gz").write_bytes(b"\x1f\x8b\x08\x00trunc")
    with pytest.raises(DataError, match=r"adult\.data\.gz has sha256"):
        load_dataset("adult", data_dir=tmp_path)


def test_resolve_data_dir_order(tmp_path: Path, monkeypatch) -> None:
    staged, other = tmp_path / "staged", tmp_path / "no_manifest"
    staged.mkdir()
    other.mkdir()
    (staged / "MANIFEST.md").write_text("# staged\n")
    monkeypatch.setattr(datasets_module, "_staged_candidates", lambda: [other, staged])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHSVM_DATA", str(tmp_path / "env"))
    # 1. argument, 2. environment, 3. first staged folder with MANIFEST.md, 4. cache
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_dir() == tmp_path / "env"
    with pytest.raises(DatasetNotFoundError, match="env"):
        load_dataset("sonar")
    monkeypatch.delenv("TORCHSVM_DATA")
    assert resolve_data_dir() == staged
    (staged / "MANIFEST.md").unlink()
    assert resolve_data_dir() == tmp_path / "cache" / "torchsvm" / "data"


def test_one_resolver_for_tests_and_dea(tmp_path: Path, monkeypatch) -> None:
    from tests.conftest import shared_data_dir
    from torchsvm.data import dea_data

    monkeypatch.setenv("TORCHSVM_DATA", str(tmp_path))
    assert shared_data_dir() is None  # no MANIFEST.md: data tests skip
    (tmp_path / "MANIFEST.md").write_text("# staged\n")
    assert shared_data_dir() == tmp_path
    assert dea_data.find_data_dir() == tmp_path


@pytest.mark.data
def test_download_fetches_and_verifies(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    # stand-in for GitHub: a file:// URL to the staged copy (nothing leaves the machine)
    monkeypatch.setattr(
        FileSpec, "url", property(lambda s: (data_dir / s.path).as_uri())
    )
    ds = load_dataset("sonar", data_dir=tmp_path, download=True)
    assert (tmp_path / "sonar" / "sonar.csv").is_file()
    assert ds.n_positive == 111
    assert not list((tmp_path / "sonar").glob("*.part"))


def test_download_rejects_wrong_checksum(tmp_path: Path, monkeypatch) -> None:
    bogus = tmp_path / "bogus.csv"
    bogus.write_text("not sonar\n")
    monkeypatch.setattr(FileSpec, "url", property(lambda s: bogus.as_uri()))
    with pytest.raises(DataError, match="sha256"):
        load_dataset("sonar", data_dir=tmp_path / "data", download=True)
    assert not (tmp_path / "data" / "sonar" / "sonar.csv").exists()


def test_source_urls_are_pinned_raw_github() -> None:
    for spec in DATASETS.values():
        for fspec in spec.files:
            url = fspec.url
            assert re.match(
                r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", url
            )
            assert " " not in url


def test_unknown_name_target_and_option() -> None:
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("iris")
    with pytest.raises(ValueError, match="target must be one of"):
        load_dataset("breast_cancer", target="tumour")
    with pytest.raises(TypeError, match="no option"):
        load_dataset("breast_cancer", version="numeric")
    with pytest.raises(ValueError, match="version must be one of"):
        load_dataset("german", version="ordinal")


def test_registry_ships_as_package_data_and_every_entry_has_a_reader() -> None:
    from importlib import resources

    assert resources.files("torchsvm.data").joinpath("registry.toml").is_file()
    assert list(READERS) == list(DATASETS)


def test_registry_errors_are_specific() -> None:
    entry = {
        "origin": "o",
        "licence": "l",
        "default_target": "t",
        "targets": {"t": "all"},
        "files": [{"path": "sonar/x.csv", "sha256": "0" * 64, "source": "a/b @ c : d"}],
    }
    assert datasets_module._parse_spec("sonar", entry).files[0].direct is True
    with pytest.raises(DataError, match="unknown keys"):
        datasets_module._parse_spec("sonar", {**entry, "colour": "red"})
    with pytest.raises(DataError, match="no reader"):
        datasets_module._parse_spec("iris", entry)
    with pytest.raises(DataError, match="default_target"):
        datasets_module._parse_spec("sonar", {**entry, "default_target": "u"})
    with pytest.raises(DataError, match="64 hex"):
        bad_file = [{"path": "sonar/x.csv", "sha256": "abc", "source": "s"}]
        datasets_module._parse_spec("sonar", {**entry, "files": bad_file})


def test_missing_or_invalid_registry_is_a_clear_error(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(datasets_module.resources, "files", lambda package: tmp_path)
    with pytest.raises(DataError, match="cannot read the dataset registry"):
        datasets_module._load_registry()
    (tmp_path / "registry.toml").write_text("[datasets.sonar\n")
    with pytest.raises(DataError, match="not valid TOML"):
        datasets_module._load_registry()
    (tmp_path / "registry.toml").write_text("[datasets]\n")
    with pytest.raises(DataError, match="readers without a registry entry"):
        datasets_module._load_registry()


def test_registry_targets_have_defaults() -> None:
    assert "breast_cancer" in list_datasets()
    for spec in DATASETS.values():
        assert spec.default_target in spec.targets
        for values in spec.options.values():
            assert len(values) >= 2


def test_failed_download_is_dataset_not_found(tmp_path: Path, monkeypatch) -> None:
    gone = tmp_path / "nowhere" / "sonar.csv"
    monkeypatch.setattr(FileSpec, "url", property(lambda s: gone.as_uri()))
    with pytest.raises(DatasetNotFoundError, match="Download failed"):
        load_dataset("sonar", data_dir=tmp_path / "data", download=True)
