"""Implied posterior probability of an SVM from a class-weight sweep (SPEC S3).

Nalbantov & Ivanov's idea: re-weighting the two classes moves the separating surface,
and on the surface fitted with positive-class share ``z+`` the posterior ``P(+ | x)``
is known (the *implied posterior* of that model). A sweep of ``z+`` therefore gives a
family of surfaces, and the posterior at ``x`` is the fraction of surfaces that put
``x`` on the positive side.

Model ``h`` of the sweep is the weighted SVM of SPEC S1 with class bounds

- **balanced convention** (tutorial default; exact when ``C+ n+ = C- n-`` and used by
  the tutorial whenever ``C+ = C-``): ``u_i = z_h C+`` for positives and
  ``(1 - z_h) C-`` for negatives; implied posterior ``pi_h = z_h``;
- **general convention** (tutorial eq. 12): ``u_i = z+_h C+`` for positives and
  ``z-_h C-`` for negatives with ``z- = 1/2 + (1/2 - z+) C+ n+ / (C- n-)``; implied
  posterior ``pi = z+ C- n- / ((1/2 + z+) C- n- + (1/2 - z+) C+ n+)``. We choose the
  ``z+_h`` that make ``pi_h`` a uniform grid, i.e. (inverting eq. 12 with
  ``a = C- n-``, ``b = C+ n+``) ``z+ = pi (a + b) / (2 (a (1 - pi) + b pi))``; both
  weights stay positive for every ``pi`` in ``(0, 1)``. With ``a = b`` this is the
  balanced convention.

Grid: ``n_models`` equally spaced implied posteriors ``pi = 0, 1/(n_models - 1), ...,
1`` (the tutorial's 201 models with step 0.005 include the two ends). The two ends are
the *fictitious models*: ``pi = 0`` classifies everything negative and ``pi = 1``
everything positive; they are not fitted (a zero bound for a class would make the
problem one-class). The ``H = n_models - 2`` interior models are solved as **one
batch** sharing the kernel matrix (SPEC S1, S8). Then::

    P(+ | x) = (1 + #{h : f_h(x) > 0} + 1/2 #{h : f_h(x) = 0}) / (H + 2),

which lies in ``[1/(H+2), (H+1)/(H+2)]``, strictly inside ``(0, 1)``.

Scaling conventions: the tutorial's "C+ = C- = 10 in the 1/2-weighted form" means the
weights ``z+`` and ``1 - z+`` multiply ``C = 10``, so at ``z+ = 1/2`` each class has
bound 5. Our solver uses the libsvm convention ``1/2 ||w||^2 + sum_i u_i xi_i``; the
bound of model ``h`` is passed as is, i.e. ``ImpliedPosteriorSVC(C=10)`` fits, at
``z+ = 1/2``, the same model as ``sklearn.svm.SVC(C=5)``.

Optional calibration (SPEC S3): isotonic regression of ``1[y = +1]`` on the implied
posteriors of held-out rows (out-of-fold over ``cv`` stratified folds inside the
training set, each fold's sweep again one batch), applied on top of the sweep refitted
on all rows.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import StratifiedKFold

from torchsvm.estimators._base import (
    SVM_PARAMETER_CONSTRAINTS,
    BaseEstimator,
    BinaryClassifierMixin,
    Interval,
    StrOptions,
    TorchDeviceMixin,
    check_is_fitted,
    class_weight_vector,
    encode_binary,
    validate_data,
)
from torchsvm.estimators.svc import BatchedSVC

logger = logging.getLogger(__name__)

__all__ = ["ImpliedPosteriorSVC", "implied_posterior_grid", "implied_posterior"]

CONVENTIONS = ("balanced", "general")


def implied_posterior_grid(
    n_models: int,
    convention: str = "balanced",
    C_pos: float = 1.0,
    C_neg: float = 1.0,
    n_pos: float = 1.0,
    n_neg: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class shares of the interior models of the sweep (SPEC S3).

    Parameters
    ----------
    n_models : int
        Models including the two fictitious ends (``>= 3``).
    convention : {"balanced", "general"}
        Balanced: ``z- = 1 - z+`` and ``pi = z+``. General: tutorial eq. 12.
    C_pos, C_neg : float
        ``C+`` and ``C-`` (used by the general convention).
    n_pos, n_neg : float
        Class sizes ``n+`` and ``n-`` (used by the general convention).

    Returns
    -------
    z_pos : ndarray of shape (H,)
        Multiplier of ``C+`` for the positive class, ``H = n_models - 2``.
    z_neg : ndarray of shape (H,)
        Multiplier of ``C-`` for the negative class.
    posterior : ndarray of shape (H,)
        Implied posterior ``pi_h`` of each model (a uniform grid in ``(0, 1)``).
    """
    if int(n_models) < 3:
        raise ValueError(
            f"n_models must be >= 3 (two fictitious + 1 fitted); got {n_models}"
        )
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    vals = np.array([C_pos, C_neg, n_pos, n_neg], dtype=np.float64)
    if not np.isfinite(vals).all() or (vals <= 0).any():
        raise ValueError(
            f"C_pos, C_neg, n_pos, n_neg must be finite and > 0; got {vals.tolist()}"
        )
    pi = np.linspace(0.0, 1.0, int(n_models))[1:-1]
    if convention == "balanced":
        return pi.copy(), 1.0 - pi, pi
    a, b = C_neg * n_neg, C_pos * n_pos
    z_pos = pi * (a + b) / (2.0 * (a * (1.0 - pi) + b * pi))
    z_neg = 0.5 + (0.5 - z_pos) * b / a
    return z_pos, z_neg, pi


def implied_posterior(
    z_pos: np.ndarray, C_pos: float, C_neg: float, n_pos: float, n_neg: float
) -> np.ndarray:
    """Tutorial eq. 12: implied posterior of the general-convention model ``z+``."""
    a, b = C_neg * n_neg, C_pos * n_pos
    z = np.asarray(z_pos, dtype=np.float64)
    return z * a / ((0.5 + z) * a + (0.5 - z) * b)


def vote_fraction(scores: np.ndarray) -> np.ndarray:
    """Implied posterior from interior-model scores, fictitious models included.

    Parameters
    ----------
    scores : ndarray of shape (H, t)
        ``f_h(x)`` of the ``H`` fitted models.

    Returns
    -------
    ndarray of shape (t,)
        ``(1 + #{f_h > 0} + #{f_h = 0} / 2) / (H + 2)`` (SPEC S3).
    """
    H = scores.shape[0]
    votes = (scores > 0).sum(0) + 0.5 * (scores == 0).sum(0)
    return (1.0 + votes) / (H + 2.0)


class ImpliedPosteriorSVC(BinaryClassifierMixin, TorchDeviceMixin, BaseEstimator):
    """SVM probabilities from a class-weight sweep: the implied posterior (SPEC S3).

    Parameters
    ----------
    C : float, default=1.0
        Penalty in the 1/2-weighted form: model ``z+`` has bounds ``z+ C+`` and
        ``(1 - z+) C-`` (balanced) with ``C+ = C kappa+``, ``C- = C kappa-``.
    kernel : {"linear", "rbf", "poly"}, default="rbf"
    gamma : {"scale", "auto"} or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    class_weight : dict or None, default=None
        ``{label: kappa}`` multiplying ``C`` per class (``C+ != C-``).
    n_models : int, default=201
        Models in the sweep including the two fictitious ends (201: step 0.005).
    convention : {"balanced", "general"}, default="balanced"
        See the module docstring (tutorial eq. 12 for ``"general"``).
    calibration : {"isotonic"} or None, default=None
        Isotonic regression of the labels on out-of-fold implied posteriors.
    cv : int, default=5
        Stratified folds for ``calibration="isotonic"``.
    random_state : int, RandomState or None, default=0
        Shuffle of the calibration folds.
    tol : float, default=1e-7
        Relative duality gap at which the batched solver stops.
    max_iter : int, default=20000
    device : str, default="cpu"
    dtype : {"float64", "float32"}, default="float64"

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    z_pos_, z_neg_ : ndarray of shape (H,)
        Class multipliers of the fitted (interior) models.
    posterior_grid_ : ndarray of shape (H,)
        Implied posterior of each fitted model.
    sweep_ : BatchedSVC
        The ``H`` fitted models (one batch).
    n_iter_ : int
        Most solver iterations any sweep model used.
    calibrator_ : IsotonicRegression or None
    oof_posterior_ : ndarray of shape (n,) or None
        Out-of-fold implied posteriors the calibrator was fitted on.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    >>> m = ImpliedPosteriorSVC(C=10.0, n_models=11).fit(X, y)
    >>> p = m.predict_proba(X)[:, 1]
    >>> bool((p > 0).all() and (p < 1).all())
    True
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **SVM_PARAMETER_CONSTRAINTS,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "class_weight": [dict, None],
        "n_models": [Interval(Integral, 3, None, closed="left")],
        "convention": [StrOptions(set(CONVENTIONS))],
        "calibration": [StrOptions({"isotonic"}), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        class_weight: dict[Any, float] | None = None,
        n_models: int = 201,
        convention: str = "balanced",
        calibration: str | None = None,
        cv: int = 5,
        random_state: Any = 0,
        tol: float = 1e-7,
        max_iter: int = 20000,
        device: str = "cpu",
        dtype: str = "float64",
    ) -> None:
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.class_weight = class_weight
        self.n_models = n_models
        self.convention = convention
        self.calibration = calibration
        self.cv = cv
        self.random_state = random_state
        self.tol = tol
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype

    # ------------------------------------------------------------------ fitting
    def _kappa(self) -> np.ndarray:
        """``[kappa-, kappa+]`` from ``class_weight`` (labels of ``classes_``)."""
        return class_weight_vector(
            self.class_weight, self.classes_, np.zeros(0), np.zeros(0)
        )

    def _fit_sweep(self, X: np.ndarray, y_pm: np.ndarray) -> BatchedSVC:
        """Fit the ``H`` interior models on ``(X, y_pm)`` as one batch."""
        kap = self._kappa()
        C_neg, C_pos = float(self.C) * kap[0], float(self.C) * kap[1]
        n_pos, n_neg = float((y_pm > 0).sum()), float((y_pm < 0).sum())
        z_pos, z_neg, _ = implied_posterior_grid(
            self.n_models, self.convention, C_pos, C_neg, n_pos, n_neg
        )
        H = z_pos.shape[0]
        class_w = np.stack([z_neg * kap[0], z_pos * kap[1]], axis=1)
        sweep = BatchedSVC(
            kernel=self.kernel,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            tol=self.tol,
            max_iter=self.max_iter,
            device=self.device,
            dtype=self.dtype,
        )
        sweep.fit(X, y_pm, C=np.full(H, float(self.C)), class_weight=class_w)
        n_bad = int((sweep.status_ != "optimal").sum())
        if n_bad:
            logger.warning(
                "%d of %d sweep models did not reach tol=%g", n_bad, H, self.tol
            )
        return sweep

    def fit(self, X: Any, y: Any) -> ImpliedPosteriorSVC:
        """Fit the ``z+`` sweep (one batch) and, optionally, the isotonic calibrator."""
        self._validate_params()
        self._device()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        kap = self._kappa()
        n_pos, n_neg = float((y_pm > 0).sum()), float((y_pm < 0).sum())
        self.z_pos_, self.z_neg_, self.posterior_grid_ = implied_posterior_grid(
            self.n_models,
            self.convention,
            self.C * kap[1],
            self.C * kap[0],
            n_pos,
            n_neg,
        )
        self.sweep_ = self._fit_sweep(X, y_pm)
        self.n_iter_ = int(np.max(self.sweep_.n_iter_))
        self.calibrator_: IsotonicRegression | None = None
        self.oof_posterior_: np.ndarray | None = None
        if self.calibration == "isotonic":
            self.oof_posterior_ = self._out_of_fold(X, y_pm)
            self.calibrator_ = IsotonicRegression(
                increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0
            ).fit(self.oof_posterior_, (y_pm > 0).astype(np.float64))
        return self

    def _out_of_fold(self, X: np.ndarray, y_pm: np.ndarray) -> np.ndarray:
        """Implied posteriors of every training row from sweeps fitted without it."""
        counts = np.array([(y_pm < 0).sum(), (y_pm > 0).sum()])
        if counts.min() < self.cv:
            raise ValueError(
                f"calibration='isotonic' with cv={self.cv} needs at least {self.cv} "
                f"samples per class; the smallest class has {int(counts.min())}"
            )
        splitter = StratifiedKFold(
            n_splits=int(self.cv), shuffle=True, random_state=self.random_state
        )
        oof = np.empty(X.shape[0])
        for train, test in splitter.split(X, y_pm):
            sweep = self._fit_sweep(X[train], y_pm[train])
            oof[test] = vote_fraction(sweep.decision_function(X[test]))
        return oof

    # --------------------------------------------------------------- predicting
    def model_scores(self, X: Any) -> np.ndarray:
        """Scores ``f_h(x)`` of the fitted interior models: array of shape (H, t)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.sweep_.decision_function(X)

    def implied_posterior(self, X: Any) -> np.ndarray:
        """Uncalibrated implied posterior ``P(+ | x)`` (SPEC S3): shape (t,)."""
        return vote_fraction(self.model_scores(X))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Columns ``[P(classes_[0] | x), P(classes_[1] | x)]``: shape (t, 2)."""
        p = self.implied_posterior(X)
        if self.calibrator_ is not None:
            p = np.clip(self.calibrator_.predict(p), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """``classes_[1]`` where ``P(+ | x) > 1/2``."""
        p = self.predict_proba(X)[:, 1]
        return self.classes_[(p > 0.5).astype(int)]
