"""Fold-wise preprocessing of the evaluation protocol (SPEC S2) as sklearn transformers.

SPEC S2: missing values -> median (numeric) / mode (categorical); categorical -> dummies;
features standardised inside each fold, i.e. every statistic (medians, modes, category
levels, means, standard deviations) is learned from the training rows only. Put the
transformer first in a ``Pipeline`` and let ``cross_val_score`` / the outer folds refit it
on each training part; never fit it on the full data set.

Multiclass -> binary (SPEC S2): :func:`binarize_target` makes the largest class negative
and the rest positive unless the dataset defines the positive class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from torchsvm.exceptions import DataError

__all__ = ["binarize_target", "make_preprocessor", "make_preprocessor_for"]


class _DtypeSelector:
    """Picklable column selector: categorical = not numeric (or categorical dtype)."""

    def __init__(self, categorical: bool) -> None:
        self.categorical = categorical

    def __call__(self, X: pd.DataFrame) -> list[Any]:
        def is_cat(col: Any) -> bool:
            dtype = X[col].dtype
            return isinstance(dtype, pd.CategoricalDtype) or not (
                is_numeric_dtype(dtype) or is_bool_dtype(dtype)
            )

        return [c for c in X.columns if is_cat(c) == self.categorical]

    def __repr__(self) -> str:
        return f"_DtypeSelector(categorical={self.categorical})"


class _ComplementSelector:
    """Picklable column selector: every column not in ``exclude``, in input order."""

    def __init__(self, exclude: Sequence[Any]) -> None:
        self.exclude = list(exclude)

    def __call__(self, X: Any) -> list[Any]:
        columns = list(X.columns) if hasattr(X, "columns") else range(X.shape[1])
        return [c for c in columns if c not in self.exclude]

    def __repr__(self) -> str:
        return f"_ComplementSelector(exclude={self.exclude!r})"


def make_preprocessor(
    categorical: Sequence[Any] | None = None,
    numeric: Sequence[Any] | None = None,
    *,
    scale: bool = True,
    scale_dummies: bool = False,
) -> ColumnTransformer:
    """Build the SPEC S2 preprocessing transformer (fit it on training rows only).

    Parameters
    ----------
    categorical : sequence of column names or indices, optional
        Columns to impute with the mode and one-hot encode
        (``OneHotEncoder(handle_unknown="ignore")``: a level unseen in training becomes
        all zeros). With both ``categorical`` and ``numeric`` left as None the columns
        are chosen by dtype at fit time (categorical dtype, strings and objects are
        categorical), which needs a DataFrame.
    numeric : sequence of column names or indices, optional
        Columns to impute with the median and standardise. If only ``categorical`` is
        given, every other column is numeric.
    scale : bool, default=True
        Standardise numeric columns (``StandardScaler``).
    scale_dummies : bool, default=False
        Also standardise the dummy columns (the default keeps them 0/1).

    Returns
    -------
    ColumnTransformer
        Dense float output: numeric columns first, then the dummies; names from
        ``get_feature_names_out``. Imputers keep all-missing columns
        (``keep_empty_features=True``), so every fold has the same output width.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"a": [1.0, None, 3.0], "c": ["x", "y", None]})
    >>> make_preprocessor(["c"], ["a"]).fit_transform(X).shape
    (3, 3)
    """
    num_steps: list[tuple[str, Any]] = [
        ("impute", SimpleImputer(strategy="median", keep_empty_features=True))
    ]
    if scale:
        num_steps.append(("scale", StandardScaler()))
    cat_steps: list[tuple[str, Any]] = [
        ("impute", SimpleImputer(strategy="most_frequent", keep_empty_features=True)),
        (
            "onehot",
            OneHotEncoder(
                handle_unknown="ignore", sparse_output=False, dtype=np.float64
            ),
        ),
    ]
    if scale and scale_dummies:
        cat_steps.append(("scale", StandardScaler()))
    cat_cols: Any
    num_cols: Any
    if categorical is None and numeric is None:
        cat_cols, num_cols = _DtypeSelector(True), _DtypeSelector(False)
    else:
        cat_cols = list(categorical or [])
        num_cols = (
            list(numeric) if numeric is not None else _ComplementSelector(cat_cols)
        )
        overlap = set(cat_cols) & set(num_cols if isinstance(num_cols, list) else [])
        if overlap:
            raise ValueError(f"columns both categorical and numeric: {sorted(overlap)}")
    transformers: list[tuple[str, Any, Any]] = [
        ("numeric", Pipeline(num_steps), num_cols),
        ("categorical", Pipeline(cat_steps), cat_cols),
    ]
    return ColumnTransformer(
        transformers,
        remainder="drop",
        sparse_threshold=0.0,
        verbose_feature_names_out=False,
    )


def make_preprocessor_for(dataset: Any, **kwargs: Any) -> ColumnTransformer:
    """:func:`make_preprocessor` with the column roles of a loaded ``Dataset``."""
    return make_preprocessor(
        categorical=list(dataset.categorical), numeric=list(dataset.numeric), **kwargs
    )


def binarize_target(
    y: npt.ArrayLike, positive: Any | Sequence[Any] | None = None
) -> np.ndarray:
    """Map class labels to ``{-1, +1}`` (SPEC S2).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels of any type.
    positive : label or sequence of labels, optional
        The positive class(es). If None: labels already in ``{-1, +1}``, ``{0, 1}`` or
        bool keep ``1`` / ``True`` as positive; otherwise the largest class is negative
        and all other classes positive (SPEC S2). A tie for the largest class is an
        error (name ``positive`` explicitly).

    Returns
    -------
    ndarray of shape (n,), dtype int64

    Raises
    ------
    DataError
        If ``y`` is not 1-D, is empty, has missing labels or a single class, or a given
        positive label does not occur.
    """
    if np.ndim(y) != 1:
        raise DataError(f"y must be 1-D, got shape {np.shape(y)}")
    arr = pd.Series(np.asarray(y, dtype=object))
    if arr.empty:
        raise DataError("y is empty")
    if arr.isna().any():
        raise DataError("y has missing labels")
    if positive is not None:
        pos_set = (
            set(positive)
            if isinstance(positive, list | tuple | set | frozenset)
            else {positive}
        )
        missing = [p for p in pos_set if not arr.isin([p]).any()]
        if missing:
            raise DataError(f"positive label(s) {missing} do not occur in y")
        mask = arr.isin(list(pos_set)).to_numpy()
    else:
        counts = arr.value_counts()
        if len(counts) < 2:
            raise DataError("y holds a single class")
        values = set(counts.index.tolist())
        if values <= {-1, 1} or values <= {0, 1}:
            mask = (arr == 1).to_numpy()
        else:
            if counts.iloc[0] == counts.iloc[1]:
                raise DataError(
                    f"largest class is tied ({counts.index[0]!r}, "
                    f"{counts.index[1]!r}); pass positive= explicitly"
                )
            mask = (arr != counts.index[0]).to_numpy()
    return np.where(mask, 1, -1).astype(np.int64)
