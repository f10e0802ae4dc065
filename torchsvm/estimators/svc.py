"""scikit-learn front ends of the batched solver: ``WeightedSVC`` and ``BatchedSVC``.

Both solve SPEC S1 (libsvm convention ``1/2 ||w||^2 + sum_i C c_i kappa_{y_i} xi_i``), so
``WeightedSVC(C=C).fit(X, y, sample_weight=c)`` reaches the optimum of
``sklearn.svm.SVC(C=C).fit(X, y, sample_weight=c)``; decision values agree to the solver
tolerance (``tests/solvers`` checks this against libsvm).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from torchsvm.config import SolverConfig
from torchsvm.exceptions import DataError
from torchsvm.kernels import KERNELS, compute_kernel
from torchsvm.problems.svm import BatchedSvmProblem, resolve_device, resolve_dtype
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

# Constraints of the kernel/solver parameters every batched estimator shares.
SVM_PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel": [StrOptions(set(KERNELS))],
    "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, None, None, closed="neither")],
    "tol": [Interval(Real, 0.0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "device": [str, torch.device],
    "dtype": [StrOptions({"float64", "float32"})],
}


def encode_binary(y: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``classes_`` and labels in {-1, +1} (``classes_[1]`` is +1); specific errors."""
    check_classification_targets(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(
            f"{name} needs samples of 2 classes, but the data contains only one class: "
            f"{classes.tolist()}"
        )
    if classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported. {name} got {classes.size} classes "
            f"{classes[:6].tolist()} (reduce to two, e.g. largest class vs the rest)"
        )
    return classes, np.where(y == classes[1], 1.0, -1.0)


def class_weight_vector(class_weight: Any, classes: np.ndarray, y_pm: np.ndarray,
                        sample_weight: np.ndarray) -> np.ndarray:
    """``[kappa_-, kappa_+]`` from None, "balanced" (weighted counts) or a label dict."""
    if class_weight is None:
        return np.ones(2)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict; got {class_weight!r}")
        tot = sample_weight.sum()
        w_neg = sample_weight[y_pm < 0].sum()
        w_pos = sample_weight[y_pm > 0].sum()
        return np.array([tot / (2 * w_neg), tot / (2 * w_pos)])
    if isinstance(class_weight, dict):
        unknown = set(class_weight) - set(classes.tolist())
        if unknown:
            raise ValueError(f"class_weight has labels {sorted(map(str, unknown))} not in classes {classes.tolist()}")
        kap = np.array([float(class_weight.get(classes[0], 1.0)), float(class_weight.get(classes[1], 1.0))])
        if not np.isfinite(kap).all() or (kap <= 0).any():
            raise ValueError(f"class weights must be finite and > 0; got {kap.tolist()}")
        return kap
    raise ValueError(f"class_weight must be None, 'balanced' or a dict; got {type(class_weight).__name__}")


class _BatchedSvmBase(BaseEstimator):
    """Shared machinery: device/dtype, problem building, solving, kernel evaluation."""

    def _solver_config(self) -> SolverConfig:
        return SolverConfig(tol=float(self.tol), max_iter=int(self.max_iter))

    def _solve(self, X: np.ndarray, y_pm: np.ndarray, U: np.ndarray) -> tuple[BatchedSvmProblem, BatchedSvmSolution]:
        device = resolve_device(self.device)
        dtype = resolve_dtype(self.dtype)
        prob = BatchedSvmProblem.from_bounds(
            X, y_pm, U, kernel=self.kernel, gamma=self.gamma, degree=self.degree,
            coef0=self.coef0, device=device, dtype=dtype,
        )
        sol = BoxQpSolver(self._solver_config())(prob)
        return prob, sol

    def _store(self, prob: BatchedSvmProblem, sol: BatchedSvmSolution) -> None:
        alpha = sol.alpha.detach().cpu().numpy()
        y_pm = prob.y.detach().cpu().numpy()
        support = np.flatnonzero((alpha > 0).any(0))
        self.support_ = support
        self._coef_sv = (alpha * y_pm)[:, support]  # (P, n_SV)
        self._X_sv = prob.X.detach().cpu().numpy()[support]
        self.gamma_ = float(prob.gamma)
        self.alpha_ = alpha
        self._b = sol.b.detach().cpu().numpy()
        self._w = None if sol.w is None else sol.w.detach().cpu().numpy()
        self._status_codes = sol.status.cpu().numpy()
        self._n_iter = sol.n_iter.cpu().numpy()
        self._gap = sol.duality_gap.detach().cpu().numpy()

    def _scores(self, X: np.ndarray) -> np.ndarray:
        """Decision values for every fitted problem: array of shape (P, t)."""
        device = resolve_device(self.device)
        dtype = resolve_dtype(self.dtype)
        # a copy when the caller's array is read-only (torch cannot share it)
        X = X if X.flags.writeable else np.array(X)
        Xt = torch.as_tensor(X, dtype=dtype, device=device)
        if self._w is not None:
            W = torch.as_tensor(self._w, dtype=dtype, device=device)
            out = W @ Xt.T
        else:
            coef = torch.as_tensor(self._coef_sv, dtype=dtype, device=device)
            out = torch.zeros((coef.shape[0], X.shape[0]), dtype=dtype, device=device)
            if coef.shape[1] > 0:
                Xs = torch.as_tensor(self._X_sv, dtype=dtype, device=device)
                block = max(1, 2**24 // max(1, Xs.shape[0]))
                for s in range(0, X.shape[0], block):
                    Kb = compute_kernel(Xs, Xt[s : s + block], kernel=self.kernel,
                                        gamma=self.gamma_, degree=self.degree, coef0=self.coef0)
                    out[:, s : s + block] = coef @ Kb
        b = torch.as_tensor(self._b, dtype=dtype, device=device)
        return (out + b[:, None]).cpu().numpy().astype(np.float64)


class WeightedSVC(ClassifierMixin, _BatchedSvmBase):
    """Weighted soft-margin SVM (SPEC S1) on CPU or CUDA; a scikit-learn classifier.

    Parameters
    ----------
    C : float, default=1.0
        Penalty (libsvm convention); per-sample bound ``C * sample_weight * class_weight``.
    kernel : {"linear", "rbf", "poly"}, default="rbf"
    gamma : {"scale", "auto"} or float, default="scale"
        As in :class:`sklearn.svm.SVC`.
    degree : int, default=3
    coef0 : float, default=0.0
    class_weight : None, "balanced" or dict, default=None
        Multiplies ``C`` per class (``C+ = C kappa+``, ``C- = C kappa-``).
    tol : float, default=1e-7
        Relative duality gap at which the solver stops.
    max_iter : int, default=20000
    device : str, default="cpu"
        ``"cuda"`` without a GPU raises ``ValueError``.
    dtype : {"float64", "float32"}, default="float64"

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    support_ : ndarray of shape (n_SV,)
    support_vectors_ : ndarray of shape (n_SV, d)
    dual_coef_ : ndarray of shape (1, n_SV)
        ``alpha_i y_i`` (``y = +1`` for ``classes_[1]``), as scikit-learn's.
    intercept_ : ndarray of shape (1,)
    coef_ : ndarray of shape (1, d)
        Linear kernel only.
    n_iter_ : int
    duality_gap_ : float
        Relative duality gap of the returned solution.
    status_ : str
        ``"optimal"`` or ``"max_iter"``.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    >>> clf = WeightedSVC(C=1.0, kernel="linear").fit(X, y)
    >>> clf.status_, clf.score(X, y) > 0.8
    ('optimal', True)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        **SVM_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        class_weight: Any = None,
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
        self.tol = tol
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> WeightedSVC:
        """Fit on ``(X, y)`` with optional non-negative ``sample_weight`` of shape (n,)."""
        self._validate_params()
        resolve_device(self.device)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if sw.sum() <= 0:
            raise ValueError("sample_weight is all zero: nothing to fit")
        for lab, sgn in ((self.classes_[0], -1), (self.classes_[1], 1)):
            if sw[y_pm == sgn].sum() <= 0:
                raise ValueError(f"every sample of class {lab!r} has zero weight (one class left)")
        kap = class_weight_vector(self.class_weight, self.classes_, y_pm, sw)
        U = float(self.C) * sw * np.where(y_pm > 0, kap[1], kap[0])
        prob, sol = self._solve(X, y_pm, U[None, :])
        self._store(prob, sol)
        self.support_vectors_ = self._X_sv
        self.dual_coef_ = self._coef_sv
        self.intercept_ = self._b.copy()
        if self._w is not None:
            self.coef_ = self._w.copy()
        self.n_iter_ = int(self._n_iter[0])
        self.duality_gap_ = float(self._gap[0])
        self.status_ = SolveStatus.from_code(int(self._status_codes[0])).value
        self.n_support_ = np.array([int((y_pm[self.support_] < 0).sum()), int((y_pm[self.support_] > 0).sum())])
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed scores ``f(x)``: array of shape (t,); positive means ``classes_[1]``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._scores(X)[0]

    def predict(self, X: Any) -> np.ndarray:
        """Class labels: ``classes_[1]`` where ``f(x) > 0``."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


class BatchedSVC(_BatchedSvmBase):
    """P weighted SVMs on one training set, solved as one batch (SPEC S1, S8).

    Parameters are those of :class:`WeightedSVC` except ``C`` and ``class_weight``,
    which are given per problem to :meth:`fit`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    alpha_ : ndarray of shape (P, n)
    intercept_ : ndarray of shape (P,)
    coef_ : ndarray of shape (P, d)
        Linear kernel only.
    status_ : ndarray of shape (P,) of str
    n_iter_ : ndarray of shape (P,)
    duality_gap_ : ndarray of shape (P,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=80, n_features=5, random_state=0)
    >>> bat = BatchedSVC(kernel="linear").fit(X, y, C=[0.1, 1.0, 10.0])
    >>> bat.decision_function(X[:4]).shape, list(bat.status_)
    ((3, 4), ['optimal', 'optimal', 'optimal'])
    """

    _parameter_constraints: dict[str, list[Any]] = dict(SVM_PARAMETER_CONSTRAINTS)

    def __init__(
        self,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        tol: float = 1e-7,
        max_iter: int = 20000,
        device: str = "cpu",
        dtype: str = "float64",
    ) -> None:
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype

    def fit(self, X: Any, y: Any, C: Any = 1.0, sample_weight: Any = None,
            class_weight: Any = None) -> BatchedSVC:
        """Fit P problems: ``C`` of shape (P,) or scalar, ``sample_weight`` (P, n) or (n,).

        ``class_weight`` is None, "balanced", a label dict (shared) or an array of shape
        (P, 2) of ``[kappa_-, kappa_+]``.
        """
        self._validate_params()
        resolve_device(self.device)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        n = X.shape[0]
        Cs = np.atleast_1d(np.asarray(C, dtype=np.float64))
        if Cs.ndim != 1 or not np.isfinite(Cs).all() or (Cs <= 0).any():
            raise ValueError(f"C must be a positive finite scalar or 1-D array; got {C!r}")
        if sample_weight is None:
            W = np.ones((Cs.shape[0], n))
        else:
            W = np.asarray(sample_weight, dtype=np.float64)
            if W.ndim == 1:
                W = W[None, :]
            if W.ndim != 2 or W.shape[1] != n:
                raise DataError(f"sample_weight must have shape (n,) or (P, n) with n = {n}; got {W.shape}")
            if Cs.shape[0] == 1 and W.shape[0] > 1:
                Cs = np.repeat(Cs, W.shape[0])
            if W.shape[0] == 1 and Cs.shape[0] > 1:
                W = np.repeat(W, Cs.shape[0], axis=0)
            if W.shape[0] != Cs.shape[0]:
                raise DataError(f"C has {Cs.shape[0]} values but sample_weight has {W.shape[0]} rows")
            if not np.isfinite(W).all():
                raise DataError("sample_weight contains NaN or infinite values")
            if (W < 0).any():
                raise DataError("sample_weight must be non-negative (negative weight found)")
        if isinstance(class_weight, np.ndarray | list | tuple):
            kap = np.asarray(class_weight, dtype=np.float64)
            kap = np.broadcast_to(kap, (Cs.shape[0], 2))
            if not np.isfinite(kap).all() or (kap <= 0).any():
                raise DataError("class weights must be finite and > 0")
        else:
            kap = np.stack([class_weight_vector(class_weight, self.classes_, y_pm, w) for w in W])
        U = Cs[:, None] * W * np.where(y_pm[None, :] > 0, kap[:, 1:2], kap[:, 0:1])
        prob, sol = self._solve(X, y_pm, U)
        self._store(prob, sol)
        self.C_ = Cs
        self.intercept_ = self._b.copy()
        if self._w is not None:
            self.coef_ = self._w.copy()
        self.n_iter_ = self._n_iter
        self.duality_gap_ = self._gap
        self.status_ = np.array([SolveStatus.from_code(int(c)).value for c in self._status_codes])
        self.solution_ = sol
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of every problem: array of shape (P, t)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._scores(X)

    def predict(self, X: Any) -> np.ndarray:
        """Labels of every problem: array of shape (P, t)."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]
