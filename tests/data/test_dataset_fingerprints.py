"""Every dataset loads to the same rows, columns, values and targets as before the registry
moved from Python literals to ``registry.toml`` (issue 13).

The expectations in ``dataset_fingerprints.json`` were computed with the loader as it was
before the move (commit message says which) and are regenerated only on purpose with::

    python tests/data/test_dataset_fingerprints.py --write

A new target or option value gets its expectation, without touching the others, from::

    python tests/data/test_dataset_fingerprints.py --add-missing

A fingerprint is the shape, the positive count and share, the positive-class label, and
sha256 digests of ``X`` (column names, dtypes, category levels and every cell through
``pandas.util.hash_pandas_object``) and of ``y``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from torchsvm.data.datasets import DATASETS, Dataset, load_dataset

EXPECTED_FILE = Path(__file__).with_name("dataset_fingerprints.json")
_MICROARRAYS = {"colon_alon", "leukemia_golub", "srbct"}


def fingerprint(ds: Dataset) -> dict[str, Any]:
    """Shape, positives and content digests of one loaded dataset."""
    X = ds.X
    header = {
        "columns": [str(c) for c in X.columns],
        "dtypes": [str(t) for t in X.dtypes],
        "categorical": list(ds.categorical),
        "levels": {
            str(c): [str(v) for v in X[c].cat.categories] for c in ds.categorical
        },
    }
    hx = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    hx.update(pd.util.hash_pandas_object(X, index=False).to_numpy().tobytes())
    return {
        "rows": int(X.shape[0]),
        "columns": int(X.shape[1]),
        "positives": ds.n_positive,
        "positive_share": round(ds.n_positive / max(ds.n_samples, 1), 6),
        "positive_label": ds.positive_label,
        "x_sha256": hx.hexdigest(),
        "y_sha256": hashlib.sha256(np.ascontiguousarray(ds.y).tobytes()).hexdigest(),
    }


def cases() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, target, options): every target with default options, and every
    non-default option value with the default target."""
    out = []
    for name, spec in DATASETS.items():
        for target in spec.targets:
            out.append((name, target, {}))
        for key, values in spec.options.items():
            for value in values[1:]:
                value = list(value) if isinstance(value, tuple) else value
                out.append((name, spec.default_target, {key: value}))
    return out


def _key(name: str, target: str, options: dict[str, Any]) -> str:
    return json.dumps([name, target, options], sort_keys=True)


def _load_expected() -> dict[str, dict[str, Any]]:
    rows = json.loads(EXPECTED_FILE.read_text(encoding="utf-8"))
    return {_key(r["name"], r["target"], r["options"]): r["fingerprint"] for r in rows}


def _params() -> list[Any]:
    if not EXPECTED_FILE.is_file():  # only while regenerating it
        return []
    rows = json.loads(EXPECTED_FILE.read_text(encoding="utf-8"))
    params = []
    for r in rows:
        opts = "-".join(f"{k}={v}" for k, v in r["options"].items())
        marks = [pytest.mark.slow] if r["name"] in _MICROARRAYS else []
        params.append(
            pytest.param(
                r["name"],
                r["target"],
                r["options"],
                r["fingerprint"],
                id=f"{r['name']}-{r['target']}{'-' + opts if opts else ''}",
                marks=marks,
            )
        )
    return params


@pytest.mark.data
@pytest.mark.parametrize(("name", "target", "options", "expected"), _params())
def test_dataset_unchanged(
    data_dir: Path, name: str, target: str, options: dict, expected: dict
) -> None:
    ds = load_dataset(name, data_dir, target=target, **options)
    assert fingerprint(ds) == expected


def test_every_registered_case_has_an_expectation() -> None:
    expected = _load_expected()
    missing = [k for k in (_key(*c) for c in cases()) if k not in expected]
    assert not missing, f"no recorded fingerprint for {missing}"


def _write(data_dir: Path, only_missing: bool) -> None:
    known = _load_expected() if only_missing and EXPECTED_FILE.is_file() else {}
    rows = json.loads(EXPECTED_FILE.read_text(encoding="utf-8")) if known else []
    for name, target, options in cases():
        if _key(name, target, options) in known:
            continue
        ds = load_dataset(name, data_dir, target=target, **options)
        rows.append(
            {
                "name": name,
                "target": target,
                "options": options,
                "fingerprint": fingerprint(ds),
            }
        )
        print(name, target, options, rows[-1]["fingerprint"]["rows"], file=sys.stderr)
    EXPECTED_FILE.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover - regeneration on purpose only
    if not {"--write", "--add-missing"} & set(sys.argv):
        raise SystemExit(
            "usage: python tests/data/test_dataset_fingerprints.py --write | --add-missing"
        )
    from torchsvm.data.datasets import resolve_data_dir

    _write(resolve_data_dir(), only_missing="--add-missing" in sys.argv)
