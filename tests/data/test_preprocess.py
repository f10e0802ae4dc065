"""SPEC S2 preprocessing: fold-wise fitting, imputation, dummies, binary targets."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline

from torchsvm.data.datasets import load_dataset
from torchsvm.data.preprocess import (
    binarize_target,
    make_preprocessor,
    make_preprocessor_for,
)
from torchsvm.exceptions import DataError


@pytest.fixture
def frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 60
    a = rng.normal(5.0, 2.0, n)
    a[[3, 17]] = np.nan
    b = rng.exponential(3.0, n)
    c = rng.choice(["red", "green", "blue"], n, p=[0.6, 0.3, 0.1]).astype(object)
    c[[5, 40]] = None
    return pd.DataFrame({"a": a, "b": b, "c": pd.Categorical(c)})


def test_numeric_median_imputation_and_scaling(frame: pd.DataFrame) -> None:
    pre = make_preprocessor(["c"], ["a", "b"]).fit(frame)
    Z = pre.transform(frame)
    names = list(pre.get_feature_names_out())
    assert names[:2] == ["a", "b"]
    a = frame["a"].to_numpy()
    med = np.nanmedian(a)
    filled = np.where(np.isnan(a), med, a)
    np.testing.assert_allclose(Z[:, 0], (filled - filled.mean()) / filled.std())
    np.testing.assert_allclose(Z[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(axis=0), 1.0)


def test_categorical_mode_imputation_and_dummies(frame: pd.DataFrame) -> None:
    pre = make_preprocessor(["c"], ["a", "b"]).fit(frame)
    Z = pre.transform(frame)
    names = list(pre.get_feature_names_out())
    dummies = Z[:, 2:]
    assert sorted(names[2:]) == ["c_blue", "c_green", "c_red"]
    np.testing.assert_array_equal(dummies.sum(axis=1), 1.0)  # one level per row
    mode = frame["c"].mode().iloc[0]
    for row in (5, 40):  # missing -> the training mode
        assert names[2 + int(np.argmax(dummies[row]))] == f"c_{mode}"
    assert set(np.unique(dummies)) == {0.0, 1.0}


def test_unseen_level_becomes_all_zero(frame: pd.DataFrame) -> None:
    pre = make_preprocessor(["c"], ["a", "b"]).fit(frame)
    new = pd.DataFrame({"a": [1.0], "b": [2.0], "c": pd.Categorical(["purple"])})
    np.testing.assert_array_equal(pre.transform(new)[0, 2:], 0.0)


def test_statistics_come_from_training_rows_only(frame: pd.DataFrame) -> None:
    train, test = frame.iloc[:40], frame.iloc[40:]
    pre = make_preprocessor(["c"], ["a", "b"]).fit(train)
    scaler = pre.named_transformers_["numeric"].named_steps["scale"]
    imputer = pre.named_transformers_["numeric"].named_steps["impute"]
    np.testing.assert_allclose(imputer.statistics_, train[["a", "b"]].median())
    filled = train[["a", "b"]].fillna(train[["a", "b"]].median())
    np.testing.assert_allclose(scaler.mean_, filled.mean())
    Z_test = pre.transform(test)
    manual = (test["b"] - filled["b"].mean()) / filled["b"].std(ddof=0)
    np.testing.assert_allclose(Z_test[:, 1], manual)


class _RecordingClassifier(ClassifierMixin, BaseEstimator):
    """Remembers the matrix it was fitted on (to inspect what each fold saw)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> _RecordingClassifier:
        self.X_fit_ = np.asarray(X)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(len(X), self.classes_[0])


def test_standardisation_refit_inside_each_cv_fold(frame: pd.DataFrame) -> None:
    y = np.where(frame["b"] > frame["b"].median(), 1, -1)
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    pipe = make_pipeline(make_preprocessor(["c"], ["a", "b"]), _RecordingClassifier())
    out = cross_validate(
        pipe, frame, y, cv=cv, return_estimator=True, return_indices=True
    )
    for est, train_idx in zip(out["estimator"], out["indices"]["train"], strict=True):
        seen = est[-1].X_fit_
        # the training part is exactly standardised: the scaler saw only these rows
        np.testing.assert_allclose(seen[:, :2].mean(axis=0), 0.0, atol=1e-12)
        np.testing.assert_allclose(seen[:, :2].std(axis=0), 1.0)
        train = frame.iloc[train_idx]
        scaler = est[0].named_transformers_["numeric"].named_steps["scale"]
        filled = train[["a", "b"]].fillna(train[["a", "b"]].median())
        np.testing.assert_allclose(scaler.mean_, filled.mean())
        assert not np.allclose(scaler.mean_, frame[["a", "b"]].mean())


def test_pipeline_in_cross_val_score_on_real_schema() -> None:
    ds = load_dataset("breast_cancer")
    pipe = make_pipeline(make_preprocessor_for(ds), LogisticRegression(max_iter=500))
    scores = cross_val_score(pipe, ds.X, ds.y, cv=5)
    assert scores.mean() > 0.95


def test_dtype_based_selection_without_lists(frame: pd.DataFrame) -> None:
    auto = make_preprocessor().fit(frame)
    explicit = make_preprocessor(["c"], ["a", "b"]).fit(frame)
    np.testing.assert_allclose(auto.transform(frame), explicit.transform(frame))
    only_cat = make_preprocessor(["c"]).fit(frame)
    np.testing.assert_allclose(only_cat.transform(frame), explicit.transform(frame))


def test_numpy_input_with_index_columns() -> None:
    X = np.array([[1.0, 0.0], [2.0, 1.0], [np.nan, 1.0], [3.0, 2.0]])
    Z = make_preprocessor([1]).fit_transform(X)
    assert Z.shape == (4, 1 + 3)
    np.testing.assert_allclose(Z[2, 0], 0.0)  # median of 1, 2, 3 = mean


def test_all_missing_column_keeps_width() -> None:
    train = pd.DataFrame({"a": [np.nan, np.nan, np.nan], "b": [1.0, 2.0, 3.0]})
    Z = make_preprocessor([], ["a", "b"]).fit_transform(train)
    assert Z.shape == (3, 2)
    assert np.all(np.isfinite(Z))


def test_options_and_clone_and_pickle(frame: pd.DataFrame) -> None:
    raw = make_preprocessor(["c"], ["a", "b"], scale=False).fit_transform(frame)
    assert np.nanmax(np.abs(raw[:, 1] - frame["b"].to_numpy())) == 0.0
    scaled = make_preprocessor(["c"], ["a", "b"], scale_dummies=True).fit_transform(
        frame
    )
    np.testing.assert_allclose(scaled.mean(axis=0), 0.0, atol=1e-12)
    pre = clone(make_preprocessor(["c"]))
    fitted = pickle.loads(pickle.dumps(pre.fit(frame)))
    np.testing.assert_allclose(fitted.transform(frame), pre.transform(frame))
    with pytest.raises(ValueError, match="both categorical and numeric"):
        make_preprocessor(["a"], ["a"])


def test_binarize_target_rules() -> None:
    np.testing.assert_array_equal(binarize_target([-1, 1, 1]), [-1, 1, 1])
    np.testing.assert_array_equal(binarize_target([0, 1, 0]), [-1, 1, -1])
    np.testing.assert_array_equal(binarize_target([True, False]), [1, -1])
    # SPEC S2: largest class negative, the rest positive
    y = ["a", "b", "b", "c", "b"]
    np.testing.assert_array_equal(binarize_target(y), [1, -1, -1, 1, -1])
    np.testing.assert_array_equal(binarize_target(y, positive="b"), [-1, 1, 1, -1, 1])
    np.testing.assert_array_equal(
        binarize_target(y, positive=["a", "c"]), [1, -1, -1, 1, -1]
    )
    assert binarize_target(np.array([1, 2, 2])).dtype == np.int64


@pytest.mark.parametrize(
    ("y", "kwargs", "match"),
    [
        (["a", "a"], {}, "single class"),
        (["a", "b"], {}, "tied"),
        (["a", None], {}, "missing"),
        (["a", "b"], {"positive": "z"}, "do not occur"),
        ([], {}, "empty"),
        ([[1, 2]], {}, "1-D"),
    ],
)
def test_binarize_target_errors(y: list, kwargs: dict, match: str) -> None:
    with pytest.raises(DataError, match=match):
        binarize_target(y, **kwargs)
