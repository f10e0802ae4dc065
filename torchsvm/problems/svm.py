"""A batch of weighted SVM duals that share one training set (SPEC S1, S1b).

Problem ``p`` of a batch is the dual of the weighted soft-margin SVM (libsvm convention,
``1/2 ||w||^2 + sum_i u_pi xi_i``; the thesis' ``w.w + C sum xi`` has dual bounds ``C/2``)::

    min_a  1/2 a^T (Q + diag(s_p)) a - 1^T a
    s.t.   y^T a = 0,   0 <= a_i <= u_pi,                                   (SPEC S1)

with ``Q_ij = y_i y_j K(x_i, x_j)`` shared by every problem, per-problem upper bounds
``u_pi = C_p c_pi kappa_{y_i}`` (sample weight ``c``, e.g. bootstrap counts, and class
weights ``kappa``) and an optional per-problem diagonal shift ``s_pi`` (variant S1b,
Veropoulos et al.: quadratic slack penalty, ``u = inf`` and ``s = lambda_{y_i}``).
A batch therefore stores ``X (n, d)`` and ``y (n,)`` once plus ``U (P, n)`` (and
``S (P, n)``); it never materialises ``P`` copies of ``Q``.

The leading axis is the problem axis ``P``. ``index`` maps each problem back to the grid
it came from (``c_idx``, ``rep_idx``, ``z_idx``), so estimators never infer the grid from
sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from torchsvm.exceptions import DataError
from torchsvm.kernels import resolve_gamma, validate_kernel

_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Map ``"float64"``/``"float32"`` (or a torch dtype) to a torch floating dtype."""
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float64, torch.float32):
            raise ValueError(f"dtype must be float64 or float32; got {dtype}")
        return dtype
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be 'float64' or 'float32'; got {dtype!r}")
    return _DTYPES[dtype]


def resolve_device(device: str | torch.device) -> torch.device:
    """A torch device; ``cuda`` without an available GPU is an error, never a fallback."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"invalid device {device!r}: use 'cpu' or 'cuda'") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={str(device)!r} was requested but CUDA is not available on this "
            "machine (torch.cuda.is_available() is False); use device='cpu'"
        )
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {device!r}: use 'cpu' or 'cuda'")
    return dev


def check_features(X: Any, name: str = "X") -> np.ndarray:
    """Validate a 2-D finite numeric feature matrix and return it as float64 numpy."""
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be numeric; could not convert: {exc}") from exc
    if arr.ndim != 2:
        raise DataError(
            f"{name} must be 2-D (n_samples, n_features); got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise DataError(f"{name} is empty: 0 samples (shape {arr.shape})")
    if arr.shape[1] == 0:
        raise DataError(f"{name} has 0 features (shape {arr.shape})")
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).sum())
        raise DataError(f"{name} contains {bad} NaN or infinite value(s)")
    return arr


def check_binary_labels(y: Any, n_samples: int) -> np.ndarray:
    """Validate labels already coded as -1/+1 with both classes present."""
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D; got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise DataError(f"X has {n_samples} samples but y has {arr.shape[0]}")
    vals = np.unique(arr)
    if not np.isin(vals, [-1, 1]).all():
        raise DataError(
            f"y must be coded as -1/+1 here; got values {vals[:5].tolist()}"
        )
    if vals.size < 2:
        raise DataError(
            f"y has a single class ({vals.tolist()}); an SVM needs two classes"
        )
    return arr.astype(np.float64)


@dataclass(frozen=True)
class BatchedSvmProblem:
    """P weighted SVM duals sharing ``X``, ``y`` and the kernel (SPEC S1, S1b).

    Attributes
    ----------
    X : tensor of shape (n, d)
        Training features.
    y : tensor of shape (n,)
        Labels in {-1, +1} (floating dtype).
    U : tensor of shape (P, n)
        Upper bounds ``u_pi >= 0`` (``inf`` allowed for S1b).
    S : tensor of shape (P, n) or None
        Diagonal shift of ``Q`` per problem (S1b); ``None`` means zero.
    kernel, gamma, degree, coef0
        Kernel; ``gamma`` is numeric (resolved from ``"scale"`` at build time).
    C : tensor of shape (P,) or None
        The C value each problem was built from (information only).
    index : dict of str to tensor of shape (P,)
        Grid coordinates (``c_idx``, ``rep_idx``, ``z_idx``...).
    """

    X: torch.Tensor
    y: torch.Tensor
    U: torch.Tensor
    S: torch.Tensor | None = None
    kernel: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0
    C: torch.Tensor | None = None
    index: dict[str, torch.Tensor] = field(default_factory=dict)

    # ------------------------------------------------------------------ basics
    @property
    def n_problems(self) -> int:
        return int(self.U.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def device(self) -> torch.device:
        return self.X.device

    @property
    def dtype(self) -> torch.dtype:
        return self.X.dtype

    def to(
        self, device: str | torch.device | None = None, dtype: torch.dtype | None = None
    ) -> BatchedSvmProblem:
        """Copy to another device and/or floating dtype (``index`` stays int64)."""
        dev = self.device if device is None else resolve_device(device)
        dt = self.dtype if dtype is None else dtype

        def mv(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(device=dev, dtype=dt)

        return replace(
            self,
            X=self.X.to(device=dev, dtype=dt),
            y=self.y.to(device=dev, dtype=dt),
            U=self.U.to(device=dev, dtype=dt),
            S=mv(self.S),
            C=mv(self.C),
            index={k: v.to(device=dev) for k, v in self.index.items()},
        )

    def select(
        self, idx: torch.Tensor | np.ndarray | list[int] | slice
    ) -> BatchedSvmProblem:
        """Sub-batch of the problems ``idx`` (shares ``X`` and ``y``)."""
        if not isinstance(idx, slice):
            idx = torch.as_tensor(np.asarray(idx), dtype=torch.long, device=self.device)
        return replace(
            self,
            U=self.U[idx],
            S=None if self.S is None else self.S[idx],
            C=None if self.C is None else self.C[idx],
            index={k: v[idx] for k, v in self.index.items()},
        )

    # --------------------------------------------------------------- builders
    @classmethod
    def from_bounds(
        cls,
        X: Any,
        y: Any,
        U: Any,
        *,
        S: Any = None,
        kernel: str = "rbf",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        C: Any = None,
        index: dict[str, Any] | None = None,
        device: str | torch.device = "cpu",
        dtype: str | torch.dtype = "float64",
    ) -> BatchedSvmProblem:
        """Build a batch from explicit bounds ``U (P, n)`` (and shifts ``S (P, n)``).

        Raises ``DataError`` / ``ValueError`` naming the offending input.
        """
        validate_kernel(kernel)
        dev = resolve_device(device)
        dt = resolve_dtype(dtype)
        Xn = check_features(X)
        n = Xn.shape[0]
        yn = check_binary_labels(y, n)
        Un = np.asarray(U, dtype=np.float64)
        if Un.ndim == 1:
            Un = Un[None, :]
        if Un.ndim != 2 or Un.shape[1] != n:
            raise DataError(f"U must have shape (P, n) with n = {n}; got {Un.shape}")
        if Un.shape[0] == 0:
            raise DataError("the batch is empty: U has 0 problems")
        if np.isnan(Un).any():
            raise DataError("U contains NaN")
        if (Un < 0).any():
            raise DataError("upper bounds must be >= 0 (negative weight or C)")
        Sn = None
        if S is not None:
            Sn = np.broadcast_to(np.asarray(S, dtype=np.float64), Un.shape).copy()
            if not np.isfinite(Sn).all() or (Sn < 0).any():
                raise DataError("diagonal shifts S must be finite and >= 0")
            bad = ~np.isfinite(Un) & (Sn <= 0)
            if bad.any():
                raise DataError(
                    "a problem has an infinite upper bound without a positive diagonal "
                    "shift: its dual is unbounded (hard margin) — give a finite C or S>0"
                )
        elif not np.isfinite(Un).all():
            raise DataError("U must be finite unless a diagonal shift S is given (S1b)")
        pos, neg = yn > 0, yn < 0
        for p in range(Un.shape[0]):
            if not (Un[p, pos] > 0).any() or not (Un[p, neg] > 0).any():
                which = "+1" if not (Un[p, pos] > 0).any() else "-1"
                raise DataError(
                    f"problem {p} gives zero weight to every sample of class {which}: "
                    "all-zero weights for a class (one class left)"
                )
        Xt = torch.as_tensor(np.ascontiguousarray(Xn).copy(), dtype=dt, device=dev)
        g = resolve_gamma(gamma, Xt) if kernel != "linear" else 0.0
        Ct = (
            None
            if C is None
            else torch.as_tensor(np.asarray(C, np.float64), dtype=dt, device=dev)
        )
        idx = {
            k: torch.as_tensor(np.asarray(v), dtype=torch.long, device=dev)
            for k, v in (index or {}).items()
        }
        return cls(
            X=Xt,
            y=torch.as_tensor(yn, dtype=dt, device=dev),
            U=torch.as_tensor(Un, dtype=dt, device=dev),
            S=None if Sn is None else torch.as_tensor(Sn, dtype=dt, device=dev),
            kernel=kernel,
            gamma=float(g),
            degree=int(degree),
            coef0=float(coef0),
            C=Ct,
            index=idx,
        )

    @classmethod
    def from_weights(
        cls,
        X: Any,
        y: Any,
        C: Any,
        sample_weight: Any = None,
        class_weight: Any = None,
        **kwargs: Any,
    ) -> BatchedSvmProblem:
        """Bounds ``u_pi = C_p * c_pi * kappa_{p, y_i}`` (SPEC S1).

        Parameters
        ----------
        C : array of shape (P,) or scalar
        sample_weight : array of shape (P, n), (n,) or None
        class_weight : array of shape (P, 2) or (2,) or None
            ``[kappa_-, kappa_+]`` (columns in class order -1, +1).
        """
        Xn = check_features(X)
        n = Xn.shape[0]
        yn = check_binary_labels(y, n)
        Cn = np.atleast_1d(np.asarray(C, dtype=np.float64))
        if Cn.ndim != 1:
            raise DataError(f"C must be a scalar or 1-D array; got shape {Cn.shape}")
        if not np.isfinite(Cn).all() or (Cn <= 0).any():
            raise DataError(
                f"C must be finite and > 0; got {Cn[(~np.isfinite(Cn)) | (Cn <= 0)][:3]}"
            )
        P = Cn.shape[0]
        if sample_weight is None:
            W = np.ones((P, n))
        else:
            W = np.asarray(sample_weight, dtype=np.float64)
            if W.ndim == 1:
                W = np.broadcast_to(W, (P, n))
            if W.shape[1:] != (n,) or W.ndim != 2:
                raise DataError(
                    f"sample_weight must have shape (n,) or (P, n) = ({P}, {n}); got {W.shape}"
                )
            if W.shape[0] != P:
                if P == 1:
                    P = W.shape[0]
                    Cn = np.repeat(Cn, P)
                else:
                    raise DataError(
                        f"C has {P} values but sample_weight has {W.shape[0]} rows"
                    )
            if not np.isfinite(W).all():
                raise DataError("sample_weight contains NaN or infinite values")
            if (W < 0).any():
                raise DataError(
                    "sample_weight must be non-negative (negative weight found)"
                )
            if (W.sum(axis=1) <= 0).any():
                raise DataError("sample_weight is all zero for at least one problem")
        kap = _class_weight_matrix(class_weight, P)
        kappa = np.where(yn > 0, kap[:, 1:2], kap[:, 0:1])
        U = Cn[:, None] * W * kappa
        return cls.from_bounds(Xn, yn, U, C=Cn, **kwargs)

    @classmethod
    def from_bootstrap(
        cls,
        X: Any,
        y: Any,
        C_grid: Any,
        counts: Any,
        class_weight: Any = None,
        **kwargs: Any,
    ) -> BatchedSvmProblem:
        """The ``n_C x B`` grid of SPEC S2: the same bootstrap draws for every C.

        Problem ``p = r * B + b`` uses ``C_grid[r]`` and ``counts[b]``; ``index`` holds
        ``c_idx`` and ``rep_idx``.
        """
        Cg = np.atleast_1d(np.asarray(C_grid, dtype=np.float64))
        cnt = np.asarray(counts, dtype=np.float64)
        if cnt.ndim != 2:
            raise DataError(f"counts must have shape (B, n); got {cnt.shape}")
        R, B = Cg.shape[0], cnt.shape[0]
        c_idx = np.repeat(np.arange(R), B)
        rep_idx = np.tile(np.arange(B), R)
        W = cnt[rep_idx]
        prob = cls.from_weights(X, y, Cg[c_idx], W, class_weight, **kwargs)
        dev = prob.device
        return replace(
            prob,
            index={
                "c_idx": torch.as_tensor(c_idx, device=dev),
                "rep_idx": torch.as_tensor(rep_idx, device=dev),
            },
        )

    @classmethod
    def from_class_weights(
        cls,
        X: Any,
        y: Any,
        C: float,
        kappa_neg: Any,
        kappa_pos: Any,
        sample_weight: Any = None,
        **kwargs: Any,
    ) -> BatchedSvmProblem:
        """A class-weight sweep (SPEC S3, S1): ``C+ = C kappa_pos[p]``, ``C- = C kappa_neg[p]``."""
        kn = np.atleast_1d(np.asarray(kappa_neg, dtype=np.float64))
        kp = np.atleast_1d(np.asarray(kappa_pos, dtype=np.float64))
        if kn.shape != kp.shape or kn.ndim != 1:
            raise DataError(
                f"kappa_neg and kappa_pos must be 1-D of equal length; got {kn.shape}, {kp.shape}"
            )
        P = kn.shape[0]
        prob = cls.from_weights(
            X,
            y,
            np.full(P, float(C)),
            sample_weight,
            np.stack([kn, kp], axis=1),
            **kwargs,
        )
        return replace(prob, index={"z_idx": torch.arange(P, device=prob.device)})

    @classmethod
    def from_diag_shift(
        cls,
        X: Any,
        y: Any,
        lambda_neg: Any,
        lambda_pos: Any,
        **kwargs: Any,
    ) -> BatchedSvmProblem:
        """Variant S1b: no upper bound, ``K_ii += lambda_{y_i}`` per problem."""
        Xn = check_features(X)
        yn = check_binary_labels(y, Xn.shape[0])
        ln = np.atleast_1d(np.asarray(lambda_neg, dtype=np.float64))
        lp = np.atleast_1d(np.asarray(lambda_pos, dtype=np.float64))
        if ln.shape != lp.shape or ln.ndim != 1:
            raise DataError("lambda_neg and lambda_pos must be 1-D of equal length")
        if (
            not (np.isfinite(ln).all() and np.isfinite(lp).all())
            or (ln <= 0).any()
            or (lp <= 0).any()
        ):
            raise DataError("diagonal shifts lambda must be finite and > 0")
        S = np.where(yn[None, :] > 0, lp[:, None], ln[:, None])
        U = np.full_like(S, math.inf)
        prob = cls.from_bounds(Xn, yn, U, S=S, **kwargs)
        return replace(
            prob, index={"z_idx": torch.arange(ln.shape[0], device=prob.device)}
        )


def _class_weight_matrix(class_weight: Any, P: int) -> np.ndarray:
    """``(P, 2)`` matrix ``[kappa_-, kappa_+]`` from None, (2,), (P, 2) or a {-1: , 1: } dict."""
    if class_weight is None:
        return np.ones((P, 2))
    if isinstance(class_weight, dict):
        kap = np.array(
            [float(class_weight.get(-1, 1.0)), float(class_weight.get(1, 1.0))]
        )
    else:
        kap = np.asarray(class_weight, dtype=np.float64)
    if kap.shape == (2,):
        kap = np.broadcast_to(kap, (P, 2))
    if kap.shape != (P, 2):
        raise DataError(
            f"class_weight must have shape (2,) or (P, 2) = ({P}, 2); got {kap.shape}"
        )
    if not np.isfinite(kap).all() or (kap <= 0).any():
        raise DataError("class weights must be finite and > 0")
    return np.asarray(kap, dtype=np.float64)
