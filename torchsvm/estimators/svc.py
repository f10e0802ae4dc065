"""scikit-learn front ends of the batched solver: ``WeightedSVC`` and ``BatchedSVC``.

Both solve SPEC S1 (libsvm convention ``1/2 ||w||^2 + sum_i C c_i kappa_{y_i} xi_i``), so
``WeightedSVC(C=C).fit(X, y, sample_weight=c)`` reaches the optimum of
``sklearn.svm.SVC(C=C).fit(X, y, sample_weight=c)``; decision values agree to the solver
tolerance (``tests/solvers`` checks this against libsvm).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
import torch

from torchsvm.config import SolverConfig
from torchsvm.estimators._base import (
    SVM_PARAMETER_CONSTRAINTS,
    BaseEstimator,
    BinaryBatchMixin,
    BinaryClassifierMixin,
    Interval,
    StrOptions,
    TorchDeviceMixin,
    check_binary_sample_weight,
    check_is_fitted,
    class_weight_vector,
    encode_binary,
    validate_data,
    warn_if_not_converged,
)
from torchsvm.exceptions import DataError
from torchsvm.kernels import compute_kernel, resolve_gamma
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

__all__ = ["BatchedSVC", "WeightedSVC"]


class _BatchedSvmBase(TorchDeviceMixin, BaseEstimator):
    """Shared machinery: problem building, solving, kernel evaluation.

    Fitted state is numpy only (``_store``), so a pickle of a model fitted on CUDA loads
    on a CPU machine.
    """

    def _solver_config(self) -> SolverConfig:
        return SolverConfig(tol=float(self.tol), max_iter=int(self.max_iter))

    def _solve(
        self, X: np.ndarray, y_pm: np.ndarray, U: np.ndarray, gamma: float | str
    ) -> tuple[BatchedSvmProblem, BatchedSvmSolution]:
        prob = BatchedSvmProblem.from_bounds(
            X,
            y_pm,
            U,
            kernel=self.kernel,
            gamma=gamma,
            degree=self.degree,
            coef0=self.coef0,
            device=self._device(),
            dtype=self._dtype(),
        )
        sol = BoxQpSolver(self._solver_config())(prob)
        warn_if_not_converged(
            sol.statuses(), type(self).__name__, self.max_iter, self.tol
        )
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
        device, dtype = self._device(), self._dtype()
        Xt = self._as_tensor(X)
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
                    Kb = compute_kernel(
                        Xs,
                        Xt[s : s + block],
                        kernel=self.kernel,
                        gamma=self.gamma_,
                        degree=self.degree,
                        coef0=self.coef0,
                    )
                    out[:, s : s + block] = coef @ Kb
        b = torch.as_tensor(self._b, dtype=dtype, device=device)
        return (out + b[:, None]).cpu().numpy().astype(np.float64)


class WeightedSVC(BinaryClassifierMixin, _BatchedSvmBase):
    """Weighted soft-margin SVM (SPEC S1) on CPU or CUDA; a scikit-learn classifier.

    Parameters
    ----------
    C : float, default=1.0
        Penalty (libsvm convention); per-sample bound ``C * sample_weight * class_weight``.
    kernel : {"linear", "rbf", "poly"}, default="rbf"
    gamma : {"scale", "auto"} or float, default="scale"
        As in :class:`sklearn.svm.SVC`, except that ``"scale"`` weights the variance of
        ``X`` by ``sample_weight`` (:func:`torchsvm.kernels.resolve_gamma`), so integer
        weights fit the same model as repeated rows.
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
        self._device()
        X, y = validate_data(self, X, y, dtype=np.float64)
        name = type(self).__name__
        self.classes_, y_pm = encode_binary(y, name)
        sw = check_binary_sample_weight(sample_weight, X, y_pm, self.classes_, name)
        kap = class_weight_vector(self.class_weight, self.classes_, y_pm, sw)
        U = float(self.C) * sw * np.where(y_pm > 0, kap[1], kap[0])
        gamma = 0.0 if self.kernel == "linear" else resolve_gamma(self.gamma, X, sw)
        prob, sol = self._solve(X, y_pm, U[None, :], gamma)
        self._store(prob, sol)
        self.support_vectors_ = self._X_sv
        self.dual_coef_ = self._coef_sv
        self.intercept_ = self._b.copy()
        if self._w is not None:
            self.coef_ = self._w.copy()
        self.n_iter_ = int(self._n_iter[0])
        self.duality_gap_ = float(self._gap[0])
        self.status_ = SolveStatus.from_code(int(self._status_codes[0])).value
        self.n_support_ = np.array(
            [int((y_pm[self.support_] < 0).sum()), int((y_pm[self.support_] > 0).sum())]
        )
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


class BatchedSVC(BinaryBatchMixin, _BatchedSvmBase):
    """P weighted SVMs on one training set, solved as one batch (SPEC S1, S8).

    Parameters are those of :class:`WeightedSVC` except ``C`` and ``class_weight``,
    which are given per problem to :meth:`fit`. The P problems share one kernel matrix,
    so ``gamma="scale"`` uses the variance of ``X`` weighted by ``sample_weight`` when
    every problem has the same weights, and the unweighted variance otherwise.

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

    def fit(
        self,
        X: Any,
        y: Any,
        C: Any = 1.0,
        sample_weight: Any = None,
        class_weight: Any = None,
    ) -> BatchedSVC:
        """Fit P problems: ``C`` of shape (P,) or scalar, ``sample_weight`` (P, n) or (n,).

        ``class_weight`` is None, "balanced", a label dict (shared) or an array of shape
        (2,) or (P, 2) of ``[kappa_-, kappa_+]`` (finite, > 0).
        """
        self._validate_params()
        self._device()
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        n = X.shape[0]
        Cs = np.atleast_1d(np.asarray(C, dtype=np.float64))
        if Cs.ndim != 1 or not np.isfinite(Cs).all() or (Cs <= 0).any():
            raise ValueError(
                f"C must be a positive finite scalar or 1-D array; got {C!r}"
            )
        if sample_weight is None:
            W = np.ones((Cs.shape[0], n))
        else:
            W = np.asarray(sample_weight, dtype=np.float64)
            if W.ndim == 1:
                W = W[None, :]
            if W.ndim != 2 or W.shape[1] != n:
                raise DataError(
                    f"sample_weight must have shape (n,) or (P, n) with n = {n}; got {W.shape}"
                )
            if Cs.shape[0] == 1 and W.shape[0] > 1:
                Cs = np.repeat(Cs, W.shape[0])
            if W.shape[0] == 1 and Cs.shape[0] > 1:
                W = np.repeat(W, Cs.shape[0], axis=0)
            if W.shape[0] != Cs.shape[0]:
                raise DataError(
                    f"C has {Cs.shape[0]} values but sample_weight has {W.shape[0]} rows"
                )
            if not np.isfinite(W).all():
                raise DataError("sample_weight contains NaN or infinite values")
            if (W < 0).any():
                raise DataError(
                    "sample_weight must be non-negative (negative weight found)"
                )
        kap = self._class_weights(class_weight, y_pm, W)
        U = Cs[:, None] * W * np.where(y_pm[None, :] > 0, kap[:, 1:2], kap[:, 0:1])
        shared = (W == W[:1]).all() and W[0].sum() > 0
        gamma = 0.0
        if self.kernel != "linear":
            gamma = resolve_gamma(self.gamma, X, W[0] if shared else None)
        prob, sol = self._solve(X, y_pm, U, gamma)
        self._store(prob, sol)
        self.C_ = Cs
        self.intercept_ = self._b.copy()
        if self._w is not None:
            self.coef_ = self._w.copy()
        self.n_iter_ = self._n_iter
        self.duality_gap_ = self._gap
        self.status_ = np.array(
            [SolveStatus.from_code(int(c)).value for c in self._status_codes]
        )
        return self

    def _class_weights(
        self, class_weight: Any, y_pm: np.ndarray, W: np.ndarray
    ) -> np.ndarray:
        """``[kappa_-, kappa_+]`` per problem: array of shape (P, 2), with specific errors."""
        P = W.shape[0]
        if isinstance(class_weight, np.ndarray | list | tuple):
            try:
                kap = np.asarray(class_weight, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise DataError(
                    f"class_weight as an array must be numeric [kappa_-, kappa_+]; {exc}"
                ) from exc
            if kap.shape not in ((2,), (P, 2)):
                raise DataError(
                    f"class_weight as an array must have shape (2,) or (P, 2) = ({P}, 2) "
                    f"of [kappa_-, kappa_+]; got shape {kap.shape}"
                )
            if not np.isfinite(kap).all() or (kap <= 0).any():
                bad = kap[~(np.isfinite(kap) & (kap > 0))]
                raise DataError(
                    f"class weights must be finite and > 0; got {bad[:4].tolist()}"
                )
            return np.broadcast_to(kap, (P, 2))
        if class_weight is not None and not isinstance(class_weight, str | dict):
            raise DataError(
                "class_weight must be None, 'balanced', a label dict or an array of shape "
                f"(2,) or (P, 2); got {type(class_weight).__name__}"
            )
        for p, w in enumerate(W):
            for label, sign in ((self.classes_[0], -1.0), (self.classes_[1], 1.0)):
                if not np.any(w[y_pm == sign] > 0):
                    raise DataError(
                        f"problem {p}: every sample of class {label!r} has zero weight "
                        "(the weighting leaves one class)"
                    )
        return np.stack(
            [class_weight_vector(class_weight, self.classes_, y_pm, w) for w in W]
        )

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of every problem: array of shape (P, t)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._scores(X)

    def predict(self, X: Any) -> np.ndarray:
        """Labels of every problem: array of shape (P, t)."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]
