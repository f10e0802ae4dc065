"""Datasets (staged UCI/microarray sets + scikit-learn's breast_cancer), preprocessing, resampling."""

from torchsvm.data.datasets import (
    DATASETS,
    Dataset,
    DatasetSpec,
    FileSpec,
    dataset_info,
    list_datasets,
    load_dataset,
    resolve_data_dir,
)
from torchsvm.data.preprocess import (
    binarize_target,
    make_preprocessor,
    make_preprocessor_for,
)
from torchsvm.data.resample import (
    bootstrap_counts,
    kmeans_compress,
    outer_folds,
    split_anchor,
    stratified_bootstrap_counts,
)

__all__ = [
    "DATASETS",
    "Dataset",
    "DatasetSpec",
    "FileSpec",
    "binarize_target",
    "bootstrap_counts",
    "dataset_info",
    "kmeans_compress",
    "list_datasets",
    "load_dataset",
    "make_preprocessor",
    "make_preprocessor_for",
    "outer_folds",
    "resolve_data_dir",
    "split_anchor",
    "stratified_bootstrap_counts",
]
