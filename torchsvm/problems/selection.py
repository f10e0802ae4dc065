"""Cost-sensitive feature selection: the problem, its data and floors (SPEC S6).

Rows ``i = 1..n`` with ``x_i in R^d``, ``y_i in {-1, +1}``, row weights ``v_i > 0``
(cluster sizes after k-means compression, 1 otherwise); feature costs ``c_k >= 0``.
Rate floors: ``p*(+1)`` on the TPR and ``p*(-1)`` on the TNR, either ``p* = p0`` or
``p* = p0 + sqrt(-log(alpha) / (2 n_class))`` (the Hoeffding floor,
:func:`torchsvm.problems.csvm.hoeffding_floor`); with weighted rows ``n_class`` is the
class's total weight (the number of original rows it stands for). A floor above 1 is
capped at 1 with a ``FloorCappedWarning`` (as the CSVM's, issue 18).

This module validates and holds the specification (:class:`SelectionProblem`); the
mixed-integer models built from it and their solution live in
:mod:`torchsvm.mip.feature_selection`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from torchsvm.exceptions import DataError
from torchsvm.problems.csvm import FloorCappedWarning, floor_guarantee, hoeffding_floor

__all__ = [
    "SelectionProblem",
    "check_feature_costs",
    "check_selection_data",
    "floor_rhs",
    "rate_floor",
    "selection_floors",
]


def rate_floor(target: float, n_rows: int, alpha: float | None) -> float:
    """Sample floor ``p* = p0 + sqrt(-log(alpha) / (2 n))`` (SPEC S6); ``p0`` if no alpha.

    The Hoeffding floor of :func:`torchsvm.problems.csvm.hoeffding_floor` (one
    implementation); it may exceed 1, which :func:`selection_floors` caps.
    """
    return hoeffding_floor(target, n_rows, alpha)


def check_selection_data(
    X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``X (n, d)``, ``y in {-1, +1}^n`` (both classes) and weights ``v > 0``.

    Returns
    -------
    X, y, v : ndarrays (float64)

    Raises
    ------
    DataError
        Naming the offending input.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DataError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(X)):
        raise DataError("X contains NaN or infinite values")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise DataError("y must contain only -1 and +1")
    if not (np.any(y > 0) and np.any(y < 0)):
        raise DataError("y must contain both classes (-1 and +1)")
    v = (
        np.ones(X.shape[0])
        if sample_weight is None
        else np.asarray(sample_weight, float)
    )
    if v.shape != (X.shape[0],) or not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise DataError("sample_weight must be finite and > 0 with shape (n,)")
    return X, y, v


def check_feature_costs(feature_costs: np.ndarray | None, d: int) -> np.ndarray:
    """Feature costs ``c_k >= 0`` of shape ``(d,)`` (default all 1: fewest features)."""
    if feature_costs is None:
        return np.ones(d)
    c = np.asarray(feature_costs, dtype=np.float64)
    if c.shape != (d,):
        raise ValueError(f"feature_costs must have shape ({d},), got {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise ValueError("feature_costs must be finite and >= 0")
    return c


def floor_rhs(p: float, v: np.ndarray) -> float:
    """Right-hand side ``p * sum(v)`` of a rate row; rounded up for integer weights.

    With integer weights the left side ``sum v_i z_i`` is an integer, so rounding up
    (minus noise) only removes the HiGHS tolerance by which a row could count short.
    """
    need = p * float(v.sum())
    if np.allclose(v, np.round(v)):
        need = math.ceil(need - 1e-9)
    return need


def selection_floors(
    y: np.ndarray,
    min_tpr: float,
    min_tnr: float,
    alpha: float | None,
    v: np.ndarray,
) -> tuple[float, float]:
    """Floors ``(p*(+1), p*(-1))``, a Hoeffding floor above 1 capped at 1.

    As for the CSVM (SPEC S5, issue 18): ``p* > 1`` cannot be met as stated, so it is
    capped at 1 (every row of that class must be classified with margin) with a
    :class:`~torchsvm.problems.csvm.FloorCappedWarning` that states the guarantee
    actually imposed (:func:`~torchsvm.problems.csvm.floor_guarantee`). Whether a
    selection meets the capped floors is the MILP's question
    (:class:`~torchsvm.exceptions.InfeasibleProblemError` from the solve if not).
    """
    # NOTE: with weighted rows (k-means centroids) the Hoeffding n is the number of
    # original rows the class stands for, i.e. its total weight.
    n_pos = max(1, round(float(v[y > 0].sum())))
    n_neg = max(1, round(float(v[y < 0].sum())))
    p_pos = rate_floor(min_tpr, n_pos, alpha)
    p_neg = rate_floor(min_tnr, n_neg, alpha)
    out = []
    for name, p0, p, n in (
        ("TPR", min_tpr, p_pos, n_pos),
        ("TNR", min_tnr, p_neg, n_neg),
    ):
        if p > 1.0 + 1e-12:
            assert alpha is not None  # p* > 1 needs a Hoeffding margin
            rate_ok, conf = floor_guarantee(p0, 1.0, n, alpha)
            warnings.warn(
                f"the {name} sample floor {p:.4g} (target {p0:g} + Hoeffding margin "
                f"{p - p0:.3g} at alpha={alpha:g} on {n} rows) exceeds 1 and is capped "
                f"at 1: every row of that class must be met. Guarantee imposed: "
                f"{name} >= {rate_ok:.4g} with probability {1 - alpha:.4g}, i.e. "
                f"{name} >= {p0:g} only with probability {conf:.4g}; more rows would "
                "restore it",
                FloorCappedWarning,
                stacklevel=3,
            )
            p = 1.0
        out.append(p)
    return out[0], out[1]


@dataclass(frozen=True)
class SelectionProblem:
    """A validated feature-selection problem (SPEC S6).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    v : ndarray of shape (n,)
        Row weights.
    costs : ndarray of shape (d,)
        Feature costs.
    tpr_floor, tnr_floor : float
        ``p*(+1)``, ``p*(-1)`` (Hoeffding margin included).
    """

    X: np.ndarray
    y: np.ndarray
    v: np.ndarray
    costs: np.ndarray
    tpr_floor: float
    tnr_floor: float

    @classmethod
    def from_data(
        cls,
        X: np.ndarray,
        y: np.ndarray,
        min_tpr: float,
        min_tnr: float,
        hoeffding_alpha: float | None = None,
        feature_costs: np.ndarray | None = None,
        sample_weight: np.ndarray | None = None,
    ) -> SelectionProblem:
        """Validate the data and compute the floors (see module docstring)."""
        X, y, v = check_selection_data(X, y, sample_weight)
        p_pos, p_neg = selection_floors(y, min_tpr, min_tnr, hoeffding_alpha, v)
        return cls(
            X, y, v, check_feature_costs(feature_costs, X.shape[1]), p_pos, p_neg
        )

    @property
    def n_samples(self) -> int:
        """``n``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """``d``."""
        return int(self.X.shape[1])

    @property
    def need_pos(self) -> float:
        """Weighted count of positive rows the TPR floor requires."""
        return floor_rhs(self.tpr_floor, self.v[self.y > 0])

    @property
    def need_neg(self) -> float:
        """Weighted count of negative rows the TNR floor requires."""
        return floor_rhs(self.tnr_floor, self.v[self.y < 0])
