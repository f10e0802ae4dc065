"""Constrained SVM problem specification (SPEC S5; thesis ch. 2): data, anchors, floors.

A :class:`CsvmProblem` is pure data: rows ``X`` with labels ``y`` in {-1, +1}, the split
into the training set ``I`` and the anchor set ``J`` (``anchor`` mask), the penalty ``C``,
the kernel, big-M constants and the performance floors. Solving lives in
:mod:`torchsvm.mip.csvm`.

Floors (SPEC S5). For each required rate ``l`` (``"tpr"`` on ``J+``, ``"tnr"`` on ``J-``,
``"accuracy"`` on ``J``) with target ``p0`` the sample floor is the Hoeffding-corrected

    p*0 = p0 + sqrt(-log(alpha) / (2 n_l)),        n_l = |J+|, |J-| or |J|,

or ``p*0 = p0`` when ``hoeffding_alpha is None`` (:func:`hoeffding_floor`, the one
implementation in the package). The MIP row is
``sum_{j in J_l} w_j z_j >= p*0 * sum_{j in J_l} w_j`` (``w_j`` = 1 unless rows carry
weights, e.g. after k-means compression), enforced as an integer count
``ceil(p*0 n_l)`` for unit weights.

Capped floors (thesis ch. 2): a sample floor ``p*0 > 1`` means that every row of
``J_l`` must be met, so it is capped at 1 with a :class:`FloorCappedWarning` that states
the guarantee actually imposed: with the floor 1 on ``n_l`` rows Hoeffding gives
``rate >= 1 - sqrt(-log(alpha) / (2 n_l))`` with probability ``1 - alpha``, or
``rate >= p0`` with probability ``1 - exp(-2 n_l (1 - p0)^2)`` (:func:`floor_guarantee`).
No floor is rejected for its value; a problem whose floors no classifier can meet
together is reported by the solver (:class:`~torchsvm.exceptions.InfeasibleProblemError`).

Penalty conventions (``penalty``):

- ``"thesis"`` (thesis ch. 2): objective ``||w||^2 + C+ sum_{I+} w_i xi_i + C-
  sum_{I-} w_i xi_i`` (no 1/2) with ``C+ = C / |I+|`` and ``C- = C / |I-|``. In
  libsvm's convention (``0.5 ||w||^2 + C_i xi_i``) the same classifier has
  ``C_i = C_{y_i} / 2``.
- ``"libsvm"`` (SPEC S1, the convention of :class:`~torchsvm.estimators.svc.WeightedSVC`
  and of the bootstrap SVM of SPEC S2): ``0.5 ||w||^2 + C sum_i w_i xi_i``, i.e. the
  thesis-scale slack cost ``2 C w_i`` for both classes. With this convention a floor that
  does not bind gives exactly the S1 classifier with ``C`` and ``sample_weight = w``.

:meth:`CsvmProblem.cost` returns the thesis-scale cost of every row in both cases; the
solvers only read it.

Training-set version S5c (SPEC S5, used for Ctrl2 in S2): ``on_training=True``; the floors
and ``z`` live on ``I`` itself (``anchor`` all False) with ``0 <= xi_i <= M (1 - z_i)``,
``M = 1000``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from torchsvm.exceptions import DataError, TorchSvmWarning
from torchsvm.kernels import compute_kernel_np

__all__ = [
    "PENALTIES",
    "CsvmProblem",
    "FloorCappedWarning",
    "RateFloor",
    "floor_guarantee",
    "hoeffding_floor",
]

PENALTIES = ("thesis", "libsvm")

_RATES = ("tpr", "tnr", "accuracy")
_RATE_LABEL = {"tpr": "TPR", "tnr": "TNR", "accuracy": "accuracy"}


class FloorCappedWarning(TorchSvmWarning):
    """A Hoeffding sample floor above 1 was capped at 1 (SPEC S5, thesis ch. 2)."""


def hoeffding_floor(target: float, n_rows: int, alpha: float | None) -> float:
    """Sample floor ``p* = p0 + sqrt(-log(alpha) / (2 n))`` (SPEC S5, S6).

    The one Hoeffding floor of the package (CSVM, S5c and feature selection use it).

    Parameters
    ----------
    target : float
        Required rate ``p0`` in [0, 1].
    n_rows : int
        Rows the rate is measured on (``n >= 1``).
    alpha : float or None
        Hoeffding level in (0, 1); None returns ``p0`` itself.

    Returns
    -------
    float
        ``p*``, not capped: it may exceed 1 (see :func:`floor_guarantee` and the capping
        in :meth:`CsvmProblem.from_data`).
    """
    if not 0.0 <= float(target) <= 1.0:
        raise ValueError(f"rate target must be in [0, 1], got {target}")
    if alpha is None:
        return float(target)
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"hoeffding_alpha must be in (0, 1) or None, got {alpha}")
    if n_rows < 1:
        raise ValueError(f"a rate floor needs at least one row, got n={n_rows}")
    return float(target) + math.sqrt(-math.log(float(alpha)) / (2.0 * n_rows))


def floor_guarantee(
    target: float, floor: float, n_rows: int, alpha: float
) -> tuple[float, float]:
    """What a sample floor guarantees out of sample by Hoeffding's inequality.

    Parameters
    ----------
    target : float
        ``p0``.
    floor : float
        Imposed sample floor (``<= 1``).
    n_rows : int
        Rows it is imposed on.
    alpha : float
        Hoeffding level.

    Returns
    -------
    rate : float
        ``floor - sqrt(-log(alpha) / (2 n))``: the rate guaranteed with probability
        ``1 - alpha``.
    confidence : float
        ``1 - exp(-2 n (floor - p0)^2)``: the probability with which ``rate >= p0`` is
        guaranteed (0 when ``floor <= p0``).
    """
    rate = float(floor) - math.sqrt(-math.log(float(alpha)) / (2.0 * n_rows))
    gap = max(0.0, float(floor) - float(target))
    return rate, 1.0 - math.exp(-2.0 * n_rows * gap * gap)


def _warn_capped(
    rate: str,
    target: float,
    pstar: float,
    n_rows: int,
    alpha: float | None,
    on_training: bool,
) -> None:
    """Warn that ``p* > 1`` was capped at 1 and say what that guarantees."""
    assert alpha is not None  # p* > 1 needs a Hoeffding margin
    label = _RATE_LABEL[rate]
    where = "training" if on_training else "anchor"
    rate_ok, conf = floor_guarantee(target, 1.0, n_rows, alpha)
    warnings.warn(
        f"the {label} sample floor {pstar:.4g} (target {target:g} + Hoeffding margin "
        f"{pstar - target:.3g} at alpha={alpha:g} on {n_rows} {where} rows) exceeds 1 "
        f"and is capped at 1: every {where} row it counts must be met. Guarantee "
        f"imposed: {label} >= {rate_ok:.4g} with probability {1 - alpha:.4g}, i.e. "
        f"{label} >= {target:g} only with probability {conf:.4g} (not {1 - alpha:.4g}); "
        "more rows would restore it",
        FloorCappedWarning,
        stacklevel=3,
    )


@dataclass(frozen=True)
class RateFloor:
    """One performance floor (SPEC S5).

    Parameters
    ----------
    rate : {"tpr", "tnr", "accuracy"}
        Which rate.
    target : float
        Requested rate ``p0``.
    floor : float
        Imposed sample floor: ``min(1, p*0)`` with ``p*0`` Hoeffding-corrected or ``p0``.
    n_rows : int
        ``n_l``: rows the rate is measured on (the weight sum for weighted rows).
    required : float
        Required weighted count ``floor * sum w`` (rounded up to an integer for unit
        weights).
    uncapped : float or None
        ``p*0`` when it exceeded 1 and was capped (then ``floor == 1``), else None.
    """

    rate: str
    target: float
    floor: float
    n_rows: int
    required: float
    uncapped: float | None = None

    @property
    def capped(self) -> bool:
        """Whether the Hoeffding floor exceeded 1 and was capped at 1."""
        return self.uncapped is not None

    def describe(self) -> str:
        """Human-readable ``TPR >= 0.95 (sample floor 0.983 on 40 rows)``."""
        cap = f", capped from {self.uncapped:.4g}" if self.uncapped is not None else ""
        return (
            f"{_RATE_LABEL[self.rate]} >= {self.target:g} (sample floor {self.floor:.4g}"
            f"{cap} on {self.n_rows} rows)"
        )


@dataclass(frozen=True)
class CsvmProblem:
    """Data of a constrained SVM (SPEC S5 / S5c).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        All rows, ``I`` and ``J`` together.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    anchor : ndarray of shape (n,), bool
        ``True`` for the anchor set ``J`` (all False for S5c).
    C : float
        Penalty, read according to ``penalty``.
    kernel : {"linear", "rbf"}
        Kernel.
    gamma : float
        RBF width (ignored for linear).
    floors : tuple of RateFloor
        Performance floors.
    big_m : float
        ``M1`` of the anchor rows (S5) or ``M`` of ``xi <= M (1 - z)`` (S5c).
    big_m_dual : float
        ``M2`` bounding the anchor multipliers ``mu_j <= M2 z_j`` (kernel form).
    sample_weight : ndarray of shape (n,)
        Row weights (bootstrap counts, cluster sizes); they scale ``xi`` costs and the
        floors' counts.
    on_training : bool
        S5c: floors and ``z`` on ``I``.
    penalty : {"thesis", "libsvm"}
        ``"thesis"``: ``C+ = C / |I+|``, ``C- = C / |I-|`` (weighted sizes) in
        ``||w||^2 + sum C_y w_i xi_i``; ``"libsvm"``: S1's ``0.5 ||w||^2 + C sum w_i xi_i``.
    """

    X: np.ndarray
    y: np.ndarray
    anchor: np.ndarray
    C: float
    kernel: str
    gamma: float
    floors: tuple[RateFloor, ...]
    big_m: float = 100.0
    big_m_dual: float = 100.0
    sample_weight: np.ndarray | None = None
    on_training: bool = False
    penalty: str = "thesis"

    # ------------------------------------------------------------------ sets
    @property
    def weights(self) -> np.ndarray:
        """Row weights of shape (n,) (ones if none were given)."""
        if self.sample_weight is None:
            return np.ones(self.y.shape[0])
        return np.asarray(self.sample_weight, dtype=np.float64)

    @property
    def train_idx(self) -> np.ndarray:
        """Indices of ``I`` (rows with positive weight that are not anchors)."""
        return np.flatnonzero(~self.anchor & (self.weights > 0))

    @property
    def floor_idx(self) -> np.ndarray:
        """Rows that carry ``z`` and the floors: ``J`` (S5) or ``I`` (S5c)."""
        if self.on_training:
            return self.train_idx
        return np.flatnonzero(self.anchor & (self.weights > 0))

    @property
    def C_pos(self) -> float:
        """Thesis-scale cost per unit weight of a positive slack.

        ``C / |I+|`` (weighted size) for ``penalty="thesis"``; ``2 C`` for ``"libsvm"``.
        """
        if self.penalty == "libsvm":
            return 2.0 * self.C
        w = self.weights[self.train_idx]
        return self.C / float(w[self.y[self.train_idx] > 0].sum())

    @property
    def C_neg(self) -> float:
        """Thesis-scale cost per unit weight of a negative slack (see :attr:`C_pos`)."""
        if self.penalty == "libsvm":
            return 2.0 * self.C
        w = self.weights[self.train_idx]
        return self.C / float(w[self.y[self.train_idx] < 0].sum())

    def cost(self) -> np.ndarray:
        """Per-row slack cost ``w_i C_{y_i}`` of shape (n,) (thesis scale, no 1/2)."""
        return self.weights * np.where(self.y > 0, self.C_pos, self.C_neg)

    def floor_members(self, floor: RateFloor) -> np.ndarray:
        """Indices (into all rows) the floor counts over."""
        idx = self.floor_idx
        if floor.rate == "tpr":
            return idx[self.y[idx] > 0]
        if floor.rate == "tnr":
            return idx[self.y[idx] < 0]
        return idx

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_data(
        cls,
        X: npt.ArrayLike,
        y: npt.ArrayLike,
        anchor: npt.ArrayLike | None,
        *,
        C: float = 1.0,
        kernel: str = "linear",
        gamma: float = 1.0,
        min_tpr: float | None = None,
        min_tnr: float | None = None,
        min_accuracy: float | None = None,
        hoeffding_alpha: float | None = 0.05,
        big_m: float | None = None,
        big_m_dual: float = 100.0,
        sample_weight: npt.ArrayLike | None = None,
        on_training: bool = False,
        penalty: str = "thesis",
    ) -> CsvmProblem:
        """Validate inputs and compute the floors.

        Parameters
        ----------
        X, y : array-like of shape (n, d), (n,)
            Rows and labels in {-1, +1}.
        anchor : array-like of shape (n,), bool, or None
            The anchor set ``J``; must be None (or all False) for ``on_training``.
        C, kernel, gamma : float, str, float
            SVM parameters.
        min_tpr, min_tnr, min_accuracy : float or None
            Targets ``p0`` in (0, 1].
        hoeffding_alpha : float or None
            Hoeffding level; None uses ``p*0 = p0``. A floor ``p*0 > 1`` is capped at 1
            with a :class:`FloorCappedWarning`.
        big_m : float, optional
            ``M1`` (S5, default 100) or ``M`` (S5c, default 1000).
        big_m_dual : float
            ``M2`` (default 100).
        sample_weight : array-like of shape (n,), optional
            Non-negative row weights.
        on_training : bool
            Build S5c.
        penalty : {"thesis", "libsvm"}
            How ``C`` is read (module docstring).

        Raises
        ------
        DataError
            Bad shapes, labels, NaN, or an empty class in ``I`` / ``J``.

        Warns
        -----
        FloorCappedWarning
            A Hoeffding floor above 1 was capped at 1; the message states the guarantee
            actually imposed.
        """
        Xa = np.asarray(X, dtype=np.float64)
        ya = np.asarray(y, dtype=np.float64).ravel()
        if Xa.ndim != 2 or Xa.shape[0] != ya.shape[0]:
            raise DataError(
                f"X must be (n, d) with n = len(y); got {Xa.shape}, {ya.shape}"
            )
        if not np.all(np.isfinite(Xa)):
            raise DataError("X contains NaN or inf")
        if not np.all(np.isin(ya, (-1.0, 1.0))):
            raise DataError("y must contain only -1 and +1")
        n = ya.shape[0]
        if anchor is None:
            mask = np.zeros(n, dtype=bool)
        else:
            mask = np.asarray(anchor, dtype=bool).ravel()
            if mask.shape != (n,):
                raise DataError(f"anchor mask must have shape ({n},), got {mask.shape}")
        if on_training and mask.any():
            raise DataError("the training-set version S5c has no anchor set")
        if not on_training and not mask.any():
            raise DataError(
                "the anchor set J is empty; pass anchor rows or on_training"
            )
        sw = None
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=np.float64).ravel()
            if sw.shape != (n,) or np.any(sw < 0) or not np.all(np.isfinite(sw)):
                raise DataError("sample_weight must be finite, >= 0 and of shape (n,)")
        if not C > 0:
            raise ValueError(f"C must be > 0, got {C}")
        if penalty not in PENALTIES:
            raise ValueError(f"penalty must be 'thesis' or 'libsvm', got {penalty!r}")
        if kernel not in ("linear", "rbf"):
            raise ValueError(f"kernel must be 'linear' or 'rbf', got {kernel!r}")
        if kernel == "rbf" and not gamma > 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        M = (1000.0 if on_training else 100.0) if big_m is None else float(big_m)
        if not M > 0:
            raise ValueError(f"big_m must be > 0, got {big_m}")
        proto = cls(
            Xa,
            ya,
            mask,
            float(C),
            kernel,
            float(gamma),
            (),
            M,
            big_m_dual,
            sw,
            on_training,
            penalty,
        )
        tr = proto.train_idx
        for s, name in ((1.0, "positive"), (-1.0, "negative")):
            if not np.any(ya[tr] == s):
                raise DataError(f"the training set I has no {name} rows")
        floors = []
        targets = {"tpr": min_tpr, "tnr": min_tnr, "accuracy": min_accuracy}
        for rate in _RATES:
            p0 = targets[rate]
            if p0 is None:
                continue
            if not 0.0 < p0 <= 1.0:
                raise ValueError(f"min_{rate} must be in (0, 1], got {p0}")
            stub = RateFloor(rate, p0, p0, 0, 0.0)
            members = proto.floor_members(stub)
            if members.size == 0:
                where = "I" if on_training else "J"
                raise DataError(
                    f"no rows in {where} to measure the {_RATE_LABEL[rate]} floor"
                )
            wsum = float(proto.weights[members].sum())
            # NOTE: with weights (cluster sizes, bootstrap counts) n_l is the number of
            # original rows the weights stand for, not the number of weighted rows.
            n_l = int(members.size) if sw is None else max(1, round(wsum))
            pstar = hoeffding_floor(p0, n_l, hoeffding_alpha)
            uncapped = None
            if pstar > 1.0:
                uncapped, pstar = pstar, 1.0
                _warn_capped(rate, p0, uncapped, n_l, hoeffding_alpha, on_training)
            unit = np.all(proto.weights[members] == 1.0)
            req = math.ceil(pstar * wsum - 1e-9) if unit else pstar * wsum
            floors.append(RateFloor(rate, float(p0), pstar, n_l, float(req), uncapped))
        if not floors:
            raise ValueError(
                "give at least one floor: min_tpr, min_tnr or min_accuracy"
            )
        return cls(
            Xa,
            ya,
            mask,
            float(C),
            kernel,
            float(gamma),
            tuple(floors),
            M,
            float(big_m_dual),
            sw,
            on_training,
            penalty,
        )

    def describe_floors(self, floors: Sequence[RateFloor] | None = None) -> str:
        """``"TPR >= 0.95 (...) and TNR >= 0.9 (...)"``."""
        fl = self.floors if floors is None else floors
        return " and ".join(f.describe() for f in fl)

    def gram(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Kernel matrix over ``rows`` (default all rows) of shape (m, m)."""
        Xr = self.X if rows is None else self.X[rows]
        return compute_kernel_np(Xr, Xr, kernel=self.kernel, gamma=self.gamma)
