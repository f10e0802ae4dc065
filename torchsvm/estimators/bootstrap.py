"""Bootstrap probabilistic SVM (SPEC S2; Benitez-Pena et al., thesis ch. 3).

For every C of a grid ``C_1..C_R`` and every bootstrap replicate ``b = 1..B`` (the same
draws for every C) the weighted SVM of SPEC S1 is fitted with sample weights = draw
counts, all ``R * B`` problems as ONE batch of the dual solver (it chunks by itself).
Then, with ``f_{r,b}`` the fitted scores:

- ``oob_accuracy_[r, b]``: accuracy of ``f_{r,b}`` on the replicate's out-of-bag rows
  (a score of exactly 0 counts as half right, as ties do everywhere here);
- ``acc_r = mean_b oob_accuracy_[r, b]``, ``J = {r : acc_r >= max acc - eps}`` and
  ``weights_[r] = acc_r^2 / sum_{l in J} acc_l^2`` on ``J`` (0 elsewhere);
  with ``ensemble=False`` only ``r* = argmax acc_r`` is used ("best C");
- ``P(+|x) = sum_r weights_[r] (1/B) sum_b (1[f_{r,b}(x) > -a] + 1/2 1[f_{r,b}(x) = -a])``
  with threshold ``a = 0`` unless Ctrl1 (``target_tpr``) chose ``a > 0``.

Confidence intervals (thesis ch. 3): ``predict_proba_interval`` is the normal
approximation ``p +- z sqrt(p (1 - p) / B)`` clipped to [0, 1];
``score_interval`` is the basic bootstrap interval ``(2 f - f*_(1-a/2), 2 f - f*_(a/2))``
of the scores at the selected C ``r*`` (``f`` = mean of the B bootstrap scores).

Ctrl1 (``target_tpr``): the threshold ``-a`` is chosen on out-of-bag scores: for a
training row ``i`` and each C the vote is averaged over the replicates in which ``i`` was
out of bag, combined with ``weights_``; ``a`` is the smallest value ``>= 0`` for which
the fraction of positive rows (that were out of bag at least once) with
``P_oob(+|x_i) >= 1/2`` reaches ``target_tpr``. The infimum of such ``a`` is not
attained with the strict ``>`` of SPEC S2, so ``a`` is the next float above the critical
``-f`` (then the score that defines it counts as a full positive vote).
Since ``a >= 0``, Ctrl1 never lowers ``P(+|x)``.

Ctrl2 (``control="csvm"``): every (C, replicate) fit is the training-set constrained
SVM S5c of SPEC S5 with the TPR floor ``target_tpr`` on the replicate's in-bag rows
(:func:`torchsvm.estimators.csvm.fit_s5c_ensemble`, one HiGHS outer approximation per
fit, ``mip_time_limit`` seconds each, ``n_jobs`` processes) instead of S1; S5c reads
each C of the grid as S1 does (``u_i = C c_i``), so a floor the replicate's S1 fit
already meets leaves that fit unchanged, and the vote threshold stays 0. Only the fits differ: OOB accuracies, weights, votes and intervals
are shared with Ctrl1. A fit that hits its time limit contributes its incumbent
(``mip_status_`` and ``mip_gap_`` say which); ``ctrl2_wall_time_`` is the seconds of
the whole batch of MIQPs.

Out-of-bag calibration (``calibration``; issue 17). Every training row ``i`` has the
out-of-bag vote ``oob_proba_[i]`` of the replicates that did not draw it: a held-out
probability that costs no extra fit. ``calibration="isotonic"``, ``"sigmoid"`` (Platt)
or ``"beta"`` (Garczarek's beta scaling) fits that calibrator
(:mod:`torchsvm.estimators.calibration`, scikit-learn's ``IsotonicRegression`` for
isotonic) on the pairs ``(oob_proba_[i], y_i)`` of the rows out of bag at least once and
maps the ensemble's ``P(+|x)`` through it. The calibrators see the vote on the log-odds
scale ``z = logit((B p + 1/2) / (B + 1)) / 2``, a strictly increasing map of ``p`` (the
smoothing keeps votes of exactly 0 or 1 finite; ``sigmoid(2 z)`` is then the smoothed
vote, the membership value of Garczarek's scaling). ``"auto"`` chooses among the raw
votes and the three calibrators by 5-fold cross-validation of the MSE (Brier score) on
the out-of-bag pairs (folds stratified, shuffled with a fixed seed 0, so the choice is a
function of the fit) and keeps the raw votes unless a calibrator is strictly better.

Coherence with the calibrated probabilities: ``predict_proba_interval`` maps the
endpoints of the raw-vote interval through the same calibrator (isotonic and Platt maps
are monotone, so the interval keeps containing the point estimate; for safety the
bounds are widened to include it). Ctrl1 with a calibrator votes at threshold 0 and
moves the decision cutoff instead of the votes: ``proba_cutoff_`` is the largest
``c <= 1/2`` for which the out-of-bag TPR of ``calibrated P(+|x) >= c`` reaches
``target_tpr``; ``predict`` and ``decision_function = P(+|x) - c`` use it, while
``predict_proba`` stays calibrated (shifting the votes would only be undone by the
calibrator, which learns the frequencies of the shifted votes).

Deviations, written down as SPEC asks: a replicate that draws no row of one class has no
SVM; such replicates are redrawn from the same generator (so the draws stay a function
of ``random_state``). A replicate without out-of-bag rows (tiny ``n``) has no OOB
accuracy and is left out of the mean ``acc_r``.

``predict`` is the argmax of ``predict_proba`` (ties go to ``classes_[0]``) and
``decision_function`` is ``P(+|x) - 1/2``, monotone in the probability, so
scikit-learn's consistency checks hold (with Ctrl1 on calibrated probabilities the
cutoff ``proba_cutoff_`` replaces 1/2). The raw bootstrap scores are
:meth:`BootstrapProbabilitySVC.bootstrap_decision_function`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from functools import partial
from numbers import Integral, Real
from typing import Any

import numpy as np
import torch
from scipy.stats import norm
from sklearn.model_selection import StratifiedKFold

from torchsvm.config import SolverConfig
from torchsvm.data.resample import as_generator, bootstrap_counts
from torchsvm.estimators._base import (
    SVM_PARAMETER_CONSTRAINTS,
    BaseEstimator,
    BinaryClassifierMixin,
    Interval,
    StrOptions,
    TorchDeviceMixin,
    check_is_fitted,
    encode_binary,
    validate_data,
    warn_if_not_converged,
)
from torchsvm.estimators.calibration import (
    BetaCalibrator,
    IsotonicCalibrator,
    PlattCalibrator,
)
from torchsvm.estimators.csvm import fit_s5c_ensemble
from torchsvm.kernels import compute_kernel, resolve_gamma
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver

__all__ = ["BootstrapProbabilitySVC", "default_c_grid", "vote_fraction"]

_MAX_REDRAWS = 100


def default_c_grid() -> np.ndarray:
    """The paper's grid ``2^-5, ..., 2^5`` (SPEC S2): array of shape (11,)."""
    return 2.0 ** np.arange(-5, 6)


def vote_fraction(
    scores: np.ndarray, threshold: float = 0.0, axis: int = -2
) -> np.ndarray:
    """Fraction of scores above ``-threshold`` along ``axis``; ties count 1/2 (SPEC S2).

    Parameters
    ----------
    scores : ndarray
        Bootstrap scores, replicates along ``axis``.
    threshold : float, default=0.0
        The Ctrl1 shift ``a >= 0``: a vote is positive when ``f > -a``.
    axis : int, default=-2
        Replicate axis.

    Returns
    -------
    ndarray
        ``mean(1[f > -a] + 1/2 1[f == -a])`` along ``axis``.
    """
    cut = -float(threshold)
    return np.mean((scores > cut) + 0.5 * (scores == cut), axis=axis)


def _draw_counts(y_pm: np.ndarray, n_bootstrap: int, random_state: Any) -> np.ndarray:
    """``(B, n)`` bootstrap counts; replicates missing a class are redrawn (same rng)."""
    rng = as_generator(random_state)
    n = y_pm.shape[0]
    counts = bootstrap_counts(n, n_bootstrap, rng)
    pos = y_pm > 0
    for _ in range(_MAX_REDRAWS):
        bad = np.flatnonzero(
            (counts[:, pos].sum(1) == 0) | (counts[:, ~pos].sum(1) == 0)
        )
        if bad.size == 0:
            return counts
        counts[bad] = bootstrap_counts(n, bad.size, rng)
    raise ValueError(
        f"could not draw bootstrap replicates containing both classes in {_MAX_REDRAWS} "
        f"tries (class sizes {int(pos.sum())} / {int((~pos).sum())}); too few samples"
    )


class BootstrapProbabilitySVC(BinaryClassifierMixin, TorchDeviceMixin, BaseEstimator):
    """Probabilities from bootstrap votes of SVMs over a C grid (SPEC S2).

    Parameters
    ----------
    C_grid : array-like of shape (R,), default=None
        Penalties (libsvm convention, SPEC S1); None means ``2^-5 .. 2^5``.
    n_bootstrap : int, default=500
        Number of replicates ``B`` (the same draws for every C).
    accuracy_eps : float, default=0.01
        ``epsilon`` of the set ``J`` of near-best C values.
    kernel : {"linear", "rbf", "poly"}, default="linear"
    gamma : {"scale", "auto"} or float, default="scale"
    degree : int, default=3
    coef0 : float, default=0.0
    ensemble : bool, default=True
        True: acc^2-weighted mixture over ``J``; False: the best C only.
    target_tpr : float in (0, 1] or None, default=None
        Ctrl1: shift the vote threshold to ``-a`` so that the out-of-bag TPR at
        ``P(+|x) >= 1/2`` reaches this value. With ``control="csvm"``: the TPR floor of
        every S5c fit (Ctrl2).
    control : {"threshold", "csvm"}, default="threshold"
        How ``target_tpr`` acts: Ctrl1 (vote threshold) or Ctrl2 (constrained SVMs).
    mip_time_limit : float, default=60.0
        Ctrl2: seconds per S5c MIQP (a fit at the limit keeps its incumbent).
    mip_rel_gap : float, default=1e-4
        Ctrl2: relative gap at which each S5c MIQP stops.
    calibration : {None, "isotonic", "sigmoid", "beta", "auto"}, default=None
        Calibrate ``P(+|x)`` on the out-of-bag votes (no extra fits; see the module
        docstring). ``"auto"`` picks by out-of-bag cross-validation and may keep the
        raw votes.
    n_jobs : int or None, default=1
        Ctrl2: parallel processes for the S5c fits of one C value.
    backend : {"local", "ray"}, default="local"
        ``"ray"`` splits the S1 fits into ``n_chunks`` blocks of replicates solved as
        Ray tasks (one CPU each, one GPU each when ``device="cuda"``). The draws stay
        here and every (C, replicate) problem is solved on its own, so the fit equals
        the local one. A Ray runtime already initialised (``ray.init(address=...)``
        for a cluster) is used; otherwise a local instance is started for the fit.
    n_chunks : int or None, default=None
        ``backend="ray"``: number of replicate blocks (None: the cluster's CPUs).
    tol : float, default=1e-7
        Relative duality gap of the solver (votes need only the score signs).
    max_iter : int, default=20000
    random_state : int, Generator or None, default=None
        Seed of the bootstrap draws (drawn on the CPU, so CPU and GPU agree).
    device : str, default="cpu"
        ``"cuda"`` without a GPU raises ``ValueError``.
    dtype : {"float64", "float32"}, default="float64"

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the positive class.
    C_grid_ : ndarray of shape (R,)
    counts_ : ndarray of shape (B, n)
        Bootstrap draw counts (0 = out of bag).
    oob_accuracy_ : ndarray of shape (R, B)
        Out-of-bag accuracy of every fit (nan where a replicate has no OOB row).
    accuracy_ : ndarray of shape (R,)
        ``acc_r``.
    support_set_ : ndarray of shape (|J|,)
        Indices ``J`` of the near-best C values.
    weights_ : ndarray of shape (R,)
        Mixture weights (sum to 1; zero outside ``J``, one-hot when ``ensemble=False``).
    best_index_ : int
        ``r* = argmax acc_r``; ``best_C_`` is ``C_grid_[r*]``.
    threshold_ : float
        The Ctrl1 shift ``a`` (0 without ``target_tpr``).
    oob_proba_ : ndarray of shape (n,)
        Out-of-bag ``P(+|x_i)`` at ``threshold_`` (nan for rows never out of bag).
    calibration_ : str or None
        The calibrator in use (``"auto"`` resolved; None: raw votes).
    calibrator_ : estimator or None
        The fitted score calibrator (input: the vote log-odds ``z``).
    calibration_scores_ : dict
        ``"auto"`` only: out-of-bag cross-validated MSE of ``"raw"`` and each calibrator.
    oob_calibrated_proba_ : ndarray of shape (n,)
        ``oob_proba_`` through the calibrator (in-sample for the calibrator).
    proba_cutoff_ : float
        ``predict`` gives ``classes_[1]`` where ``P(+|x) > proba_cutoff_`` (1/2 unless
        Ctrl1 acts on calibrated probabilities).
    n_iter_, duality_gap_ : ndarray of shape (R, B)
        Solver diagnostics per fit.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    >>> m = BootstrapProbabilitySVC(C_grid=[0.1, 1.0], n_bootstrap=20, random_state=0)
    >>> m.fit(X, y).predict_proba(X[:3]).shape
    (3, 2)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **SVM_PARAMETER_CONSTRAINTS,
        "C_grid": ["array-like", None],
        "n_bootstrap": [Interval(Integral, 1, None, closed="left")],
        "accuracy_eps": [Interval(Real, 0.0, None, closed="left")],
        "ensemble": ["boolean"],
        "target_tpr": [Interval(Real, 0.0, 1.0, closed="right"), None],
        "control": [StrOptions({"threshold", "csvm"})],
        "mip_time_limit": [Interval(Real, 0.0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0.0, None, closed="left")],
        "calibration": [StrOptions({"isotonic", "sigmoid", "beta", "auto"}), None],
        "n_jobs": [Integral, None],
        "backend": [StrOptions({"local", "ray"})],
        "n_chunks": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        C_grid: Any = None,
        n_bootstrap: int = 500,
        accuracy_eps: float = 0.01,
        kernel: str = "linear",
        gamma: float | str = "scale",
        degree: int = 3,
        coef0: float = 0.0,
        ensemble: bool = True,
        target_tpr: float | None = None,
        control: str = "threshold",
        mip_time_limit: float = 60.0,
        mip_rel_gap: float = 1e-4,
        calibration: str | None = None,
        n_jobs: int | None = 1,
        backend: str = "local",
        n_chunks: int | None = None,
        tol: float = 1e-7,
        max_iter: int = 20000,
        random_state: Any = None,
        device: str = "cpu",
        dtype: str = "float64",
    ) -> None:
        self.C_grid = C_grid
        self.n_bootstrap = n_bootstrap
        self.accuracy_eps = accuracy_eps
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.ensemble = ensemble
        self.target_tpr = target_tpr
        self.control = control
        self.mip_time_limit = mip_time_limit
        self.mip_rel_gap = mip_rel_gap
        self.calibration = calibration
        self.n_jobs = n_jobs
        self.backend = backend
        self.n_chunks = n_chunks
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.device = device
        self.dtype = dtype

    # ------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any) -> BootstrapProbabilitySVC:
        """Fit the ``R * B`` SVMs and the vote weights (SPEC S2 steps 1-3).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Binary labels.

        Returns
        -------
        self : BootstrapProbabilitySVC
        """
        X, y_pm, train_scores = self._fit_ensemble(X, y)
        self._fit_votes(train_scores, y_pm)
        return self

    def fit_targets(
        self, X: Any, y: Any, target_tprs: Sequence[float | None]
    ) -> list[BootstrapProbabilitySVC]:
        """Fit the ``R * B`` SVMs once and return one Ctrl1 model per target TPR.

        The SVM fits, out-of-bag accuracies and weights do not depend on ``target_tpr``;
        only the vote threshold (and, with ``calibration``, the cutoff) does. Element
        ``k`` is therefore the model ``fit(X, y)`` gives with
        ``target_tpr=target_tprs[k]`` (same draws, same arrays), at the cost of one fit.
        ``self`` is fitted with its own ``target_tpr``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Binary labels.
        target_tprs : sequence of float or None
            Target TPRs (None: no control).

        Returns
        -------
        list of BootstrapProbabilitySVC
            Fitted copies, in the order of ``target_tprs``.
        """
        if self.control != "threshold":
            raise ValueError(
                "fit_targets shares the S1 fits between targets, so it needs "
                f"control='threshold' (Ctrl1); got control={self.control!r}"
            )
        X, y_pm, train_scores = self._fit_ensemble(X, y)
        out = []
        for t in target_tprs:
            m = copy.deepcopy(self)
            m.target_tpr = t
            m._validate_params()
            m._fit_votes(train_scores, y_pm)
            out.append(m)
        self._fit_votes(train_scores, y_pm)
        return out

    def _fit_votes(self, train_scores: np.ndarray, y_pm: np.ndarray) -> None:
        """Weights, Ctrl1 threshold and calibration from the training scores."""
        self._store_weights(train_scores, y_pm)
        self._fit_threshold(train_scores, y_pm)
        self._fit_calibration(y_pm)

    def _fit_ensemble(
        self, X: Any, y: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate, draw the replicates and fit every (C, replicate): (X, y_pm, scores)."""
        self._validate_params()
        self._device()
        if self.control == "csvm":
            if self.target_tpr is None:
                raise ValueError(
                    "control='csvm' (Ctrl2) needs target_tpr, the TPR floor of the "
                    "constrained SVM"
                )
            if self.kernel not in ("linear", "rbf"):
                raise ValueError(
                    f"control='csvm' supports kernel 'linear' or 'rbf'; got {self.kernel!r}"
                )
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, y_pm = encode_binary(y, type(self).__name__)
        self.C_grid_ = self._check_c_grid()
        self.counts_ = _draw_counts(y_pm, int(self.n_bootstrap), self.random_state)
        if self.control == "csvm":
            train_scores = self._fit_replicates_csvm(X, y_pm, self.counts_)
        else:
            self._csvm = None
            train_scores = self._fit_replicates(X, y_pm, self.counts_)
        return X, y_pm, train_scores

    def _check_c_grid(self) -> np.ndarray:
        grid = default_c_grid() if self.C_grid is None else self.C_grid
        arr = np.atleast_1d(np.asarray(grid, dtype=np.float64))
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(
                f"C_grid must be a non-empty 1-D array; got shape {arr.shape}"
            )
        if not np.isfinite(arr).all() or (arr <= 0).any():
            raise ValueError(
                f"C_grid values must be finite and > 0; got {arr.tolist()}"
            )
        return arr

    def _fit_replicates(
        self, X: np.ndarray, y_pm: np.ndarray, counts: np.ndarray
    ) -> np.ndarray:
        """Fit every (C, replicate) pair as one batch; scores on the training rows.

        Returns
        -------
        ndarray of shape (R, B, n)
            ``f_{r,b}(x_i)`` (the grid comes from ``problem.index``, not from sizes).
        """
        solver_kwargs: dict[str, Any] = {
            "kernel": self.kernel,
            "gamma": self.gamma,
            "degree": self.degree,
            "coef0": self.coef0,
            "tol": float(self.tol),
            "max_iter": int(self.max_iter),
            "device": str(self._device()),
            "dtype": "float32" if self._dtype() == torch.float32 else "float64",
        }
        if self.backend == "ray":
            fit = fit_replicates_distributed(
                X,
                y_pm,
                self.C_grid_,
                counts,
                n_chunks=self.n_chunks,
                num_gpus=1.0 if str(self._device()).startswith("cuda") else 0.0,
                **solver_kwargs,
            )
        else:
            fit = solve_replicates(X, y_pm, self.C_grid_, counts, **solver_kwargs)
        warn_if_not_converged(
            np.ravel(fit["statuses"]).tolist(),
            type(self).__name__,
            self.max_iter,
            self.tol,
        )
        self.gamma_ = float(fit["gamma"])
        self._X_fit = X
        self._coef = fit["coef"]
        self._b = fit["intercept"]
        self.n_iter_ = fit["n_iter"]
        self.duality_gap_ = fit["duality_gap"]
        self._w: np.ndarray | None = fit["w"]
        return fit["scores"]

    def _fit_replicates_csvm(
        self, X: np.ndarray, y_pm: np.ndarray, counts: np.ndarray
    ) -> np.ndarray:
        """Ctrl2: S5c with the TPR floor on every (C, replicate); training scores (R, B, n)."""
        R, B, n = self.C_grid_.shape[0], counts.shape[0], X.shape[0]
        gamma = 0.0
        if self.kernel != "linear":
            gamma = resolve_gamma(self.gamma, torch.as_tensor(X, dtype=torch.float64))
        self.gamma_ = float(gamma)
        scores = np.zeros((R, B, n))
        self._csvm = []
        self.mip_status_ = np.empty((R, B), dtype=object)
        self.mip_gap_ = np.zeros((R, B))
        self.ctrl2_wall_time_ = 0.0
        for r, C in enumerate(self.C_grid_):
            ens = fit_s5c_ensemble(
                X,
                y_pm,
                counts,
                C=float(C),
                kernel=self.kernel,
                gamma=self.gamma_,
                min_tpr=float(self.target_tpr),
                time_limit=float(self.mip_time_limit),
                mip_rel_gap=float(self.mip_rel_gap),
                n_jobs=self.n_jobs,
            )
            self._csvm.append(ens.solutions)
            scores[r] = ens.decision_function(X)
            self.mip_status_[r] = ens.statuses
            self.mip_gap_[r] = ens.mip_gaps
            self.ctrl2_wall_time_ += ens.wall_time
        self._X_fit = X
        self._w = None
        self._coef = np.zeros((R, B, 0))
        self._b = np.zeros((R, B))
        return scores

    def _store_weights(self, scores: np.ndarray, y_pm: np.ndarray) -> None:
        """OOB accuracies, the set J, acc^2 weights and the best C (SPEC S2 step 3)."""
        oob = self.counts_ == 0  # (B, n)
        correct = (np.sign(scores) * y_pm + 1.0) / 2.0  # 1 right, 0 wrong, 1/2 tie
        n_oob = oob.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = (correct * oob[None]).sum(2) / n_oob[None, :]
        acc[:, n_oob == 0] = np.nan
        if np.isnan(acc).all():
            raise ValueError(
                "no bootstrap replicate has out-of-bag rows; increase n or B"
            )
        self.oob_accuracy_ = acc
        self.accuracy_ = np.nanmean(acc, axis=1)
        self.best_index_ = int(np.argmax(self.accuracy_))
        self.best_C_ = float(self.C_grid_[self.best_index_])
        self.support_set_ = np.flatnonzero(
            self.accuracy_ >= self.accuracy_.max() - float(self.accuracy_eps)
        )
        w = np.zeros_like(self.accuracy_)
        if self.ensemble:
            a2 = self.accuracy_[self.support_set_] ** 2
            w[self.support_set_] = a2 / a2.sum()
        else:
            w[self.best_index_] = 1.0
        self.weights_ = w
        self._used = np.flatnonzero(w > 0)
        if self.best_index_ not in self._used:
            self._used = np.union1d(self._used, [self.best_index_])
        self._coef = self._coef[self._used]
        self._b = self._b[self._used]
        if self._w is not None:
            self._w = self._w[self._used]
            self._coef = np.zeros((0,))
            self._X_fit = np.zeros((0, self._X_fit.shape[1]))

    def _oob_proba(self, scores: np.ndarray, threshold: float) -> np.ndarray:
        """Out-of-bag ``P(+|x_i)`` per training row at shift ``threshold``: shape (n,)."""
        oob = (self.counts_ == 0)[None]  # (1, B, n)
        votes = (scores > -threshold) + 0.5 * (scores == -threshold)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_c = (votes * oob).sum(1) / oob.sum(1)  # (R, n)
        used = self.weights_ > 0
        return (self.weights_[used, None] * per_c[used]).sum(0)

    def _fit_threshold(self, scores: np.ndarray, y_pm: np.ndarray) -> None:
        """Ctrl1 (SPEC S2): the smallest ``a >= 0`` whose OOB TPR reaches ``target_tpr``."""
        self.threshold_ = 0.0
        ctrl1 = self.target_tpr is not None and self.control == "threshold"
        if ctrl1 and self.calibration is None:
            pos = (y_pm > 0) & (self.counts_ == 0).any(0)
            if not pos.any():
                raise ValueError(
                    "Ctrl1 needs positive rows that are out of bag at least once"
                )
            used = self.weights_ > 0
            s_pos = scores[used][:, :, pos]
            oob_pos = (self.counts_ == 0)[:, pos][None]
            target = float(self.target_tpr)

            def reached(a: float) -> bool:
                votes = (s_pos > -a) + 0.5 * (s_pos == -a)
                per_c = (votes * oob_pos).sum(1) / oob_pos.sum(1)
                p_pos = (self.weights_[used, None] * per_c).sum(0)
                return bool(np.mean(p_pos >= 0.5) >= target)

            if not reached(0.0):
                neg = s_pos[(s_pos <= 0) & np.broadcast_to(oob_pos, s_pos.shape)]
                cand = np.unique(np.nextafter(-neg, np.inf))
                lo, hi = (
                    0,
                    cand.size - 1,
                )  # reached(cand[-1]) holds: every OOB vote is +
                while lo < hi:
                    mid = (lo + hi) // 2
                    if reached(float(cand[mid])):
                        hi = mid
                    else:
                        lo = mid + 1
                self.threshold_ = float(cand[lo])
        self.oob_proba_ = self._oob_proba(scores, self.threshold_)

    # ----------------------------------------------------------- calibration
    def _vote_scores(self, p: np.ndarray) -> np.ndarray:
        """Vote log-odds ``logit((B p + 1/2) / (B + 1)) / 2``: strictly increasing in p."""
        B = float(self.counts_.shape[0])
        ps = (B * p + 0.5) / (B + 1.0)
        return 0.5 * np.log(ps / (1.0 - ps))

    def _calibrate(self, p: np.ndarray) -> np.ndarray:
        """Calibrated ``P(+|x)`` for raw votes ``p`` (nan stays nan)."""
        if self.calibrator_ is None:
            return p
        out = np.full_like(p, np.nan, dtype=np.float64)
        ok = np.isfinite(p)
        if ok.any():
            z = self._vote_scores(p[ok])
            out[ok] = self.calibrator_.predict_proba(z)[:, 1]
        return out

    def _fit_calibration(self, y_pm: np.ndarray) -> None:
        """Fit the out-of-bag calibrator and, with Ctrl1, the probability cutoff."""
        self.calibrator_: Any = None
        self.calibration_: str | None = None
        self.calibration_scores_: dict[str, float] = {}
        self.proba_cutoff_ = 0.5
        if self.calibration is not None:
            seen = np.isfinite(self.oob_proba_)
            p, y01 = self.oob_proba_[seen], (y_pm[seen] > 0).astype(np.float64)
            if y01.min() == y01.max():
                raise ValueError(
                    f"calibration={self.calibration!r} needs out-of-bag rows of both "
                    f"classes; only {int(seen.sum())} rows were ever out of bag"
                )
            method = self.calibration
            if method == "auto":
                method = self._choose_calibration(p, y01)
            if method is not None:
                self.calibrator_ = _CALIBRATORS[method]().fit(self._vote_scores(p), y01)
            self.calibration_ = method
        self.oob_calibrated_proba_ = self._calibrate(self.oob_proba_)
        if (
            self.calibrator_ is not None
            and self.target_tpr is not None
            and self.control == "threshold"
        ):
            self.proba_cutoff_ = self._ctrl1_cutoff(y_pm)

    def _choose_calibration(self, p: np.ndarray, y01: np.ndarray) -> str | None:
        """``"auto"``: the lowest out-of-fold MSE on the OOB pairs; ties keep raw votes."""
        n_splits = int(min(5, np.bincount(y01.astype(np.intp)).min()))
        scores: dict[str, float] = {"raw": float(np.mean((p - y01) ** 2))}
        if n_splits >= 2:
            z = self._vote_scores(p)
            folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=0)
            for name, make in _CALIBRATORS.items():
                q = np.empty_like(p)
                for train, test in folds.split(z, y01):
                    if y01[train].min() == y01[train].max():
                        q[test] = y01[train].mean()
                        continue
                    q[test] = (
                        make().fit(z[train], y01[train]).predict_proba(z[test])[:, 1]
                    )
                scores[name] = float(np.mean((q - y01) ** 2))
        self.calibration_scores_ = scores
        best = min(scores, key=lambda k: (scores[k], k != "raw"))
        return None if best == "raw" else best

    def _ctrl1_cutoff(self, y_pm: np.ndarray) -> float:
        """Largest ``c <= 1/2`` whose OOB TPR of ``q >= c`` reaches ``target_tpr``."""
        q = self.oob_calibrated_proba_[
            (y_pm > 0) & np.isfinite(self.oob_calibrated_proba_)
        ]
        if q.size == 0:
            raise ValueError(
                "Ctrl1 needs positive rows that are out of bag at least once"
            )
        k = int(np.ceil(float(self.target_tpr) * q.size - 1e-12))
        crit = float(np.sort(q)[::-1][max(k, 1) - 1])
        if crit > 0.5:
            return 0.5
        return float(np.nextafter(crit, -np.inf))

    # --------------------------------------------------------------- predict
    def _grid_scores(self, X: np.ndarray) -> np.ndarray:
        """Scores of the kept fits: array of shape (len(_used), B, t)."""
        if self._csvm is not None:
            return np.stack(
                [
                    np.stack([s.decision_function(X) for s in self._csvm[r]])
                    for r in self._used
                ]
            )
        dev, dt = self._device(), self._dtype()
        Xt = torch.as_tensor(X, dtype=dt, device=dev)
        b = torch.as_tensor(self._b, dtype=dt, device=dev)
        if self._w is not None:
            W = torch.as_tensor(self._w, dtype=dt, device=dev)
            out = W @ Xt.T
        else:
            K = compute_kernel(
                torch.as_tensor(self._X_fit, dtype=dt, device=dev),
                Xt,
                kernel=self.kernel,
                gamma=self.gamma_,
                degree=self.degree,
                coef0=self.coef0,
            )
            out = torch.as_tensor(self._coef, dtype=dt, device=dev) @ K
        return (out + b[..., None]).cpu().numpy().astype(np.float64)

    def _raw_proba(self, X: Any) -> np.ndarray:
        """Uncalibrated ensemble vote ``P(+|x)`` (SPEC S2 step 4): shape (t,)."""
        check_is_fitted(self, "weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        per_c = vote_fraction(self._grid_scores(X), self.threshold_, axis=1)  # (k, t)
        return np.clip(self.weights_[self._used] @ per_c, 0.0, 1.0)

    def _proba_positive(self, X: Any) -> np.ndarray:
        return np.clip(self._calibrate(self._raw_proba(X)), 0.0, 1.0)

    def predict_proba(self, X: Any) -> np.ndarray:
        """``[P(classes_[0] | x), P(classes_[1] | x)]`` (SPEC S2 step 4): shape (t, 2).

        Calibrated on the out-of-bag votes when ``calibration`` is set.
        """
        p = self._proba_positive(X)
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """``classes_[1]`` where ``P(+|x) > proba_cutoff_`` (argmax unless Ctrl1 +
        calibration; ties go to ``classes_[0]``): shape (t,)."""
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]

    def decision_function(self, X: Any) -> np.ndarray:
        """``P(+|x) - proba_cutoff_``: positive exactly where ``predict`` gives ``classes_[1]``."""
        check_is_fitted(self, "weights_")
        return self._proba_positive(X) - self.proba_cutoff_

    def bootstrap_decision_function(
        self, X: Any, c_index: int | None = None
    ) -> np.ndarray:
        """Raw bootstrap scores ``f_{r,b}(x)`` at ``C_grid_[c_index]``: shape (B, t).

        ``c_index`` defaults to ``best_index_``; only C values in ``J`` (and the best)
        are kept after ``fit``.
        """
        check_is_fitted(self, "weights_")
        r = self.best_index_ if c_index is None else int(c_index)
        where = np.flatnonzero(self._used == r)
        if where.size == 0:
            raise ValueError(
                f"c_index={r} is not kept after fit; available: {self._used.tolist()}"
            )
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._grid_scores(X)[where[0]]

    def predict_proba_interval(
        self, X: Any, level: float = 0.95
    ) -> tuple[np.ndarray, np.ndarray]:
        """Normal-approximation interval of ``P(+|x)`` over B votes, clipped to [0, 1].

        With ``calibration``: the raw-vote interval mapped through the calibrator
        (monotone for isotonic and Platt), widened to contain the calibrated estimate.

        Returns
        -------
        lower, upper : ndarray of shape (t,)
        """
        z = _z_value(level)
        p = self._raw_proba(X)
        half = z * np.sqrt(p * (1.0 - p) / int(self.n_bootstrap))
        lo, hi = np.clip(p - half, 0.0, 1.0), np.clip(p + half, 0.0, 1.0)
        if self.calibrator_ is None:
            return lo, hi
        # the raw-vote interval through the calibration map, widened to hold g(p)
        g = np.stack([self._calibrate(lo), self._calibrate(p), self._calibrate(hi)])
        g = np.clip(g, 0.0, 1.0)
        return g.min(0), g.max(0)

    def score_interval(
        self, X: Any, level: float = 0.95
    ) -> tuple[np.ndarray, np.ndarray]:
        """Basic bootstrap interval of the score at the best C (SPEC S2).

        Returns
        -------
        lower, upper : ndarray of shape (t,)
            ``(2 f - f*_(1-a/2), 2 f - f*_(a/2))`` with ``f`` the mean bootstrap score.
        """
        a = 1.0 - _check_level(level)
        f = self.bootstrap_decision_function(X)
        fhat = f.mean(0)
        q_lo, q_hi = np.quantile(f, [a / 2.0, 1.0 - a / 2.0], axis=0)
        return 2.0 * fhat - q_hi, 2.0 * fhat - q_lo


_CALIBRATORS: dict[str, type] = {
    "isotonic": IsotonicCalibrator,
    "sigmoid": PlattCalibrator,
    "beta": BetaCalibrator,
}


def _check_level(level: float) -> float:
    lv = float(level)
    if not 0.0 < lv < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    return lv


def _z_value(level: float) -> float:
    return float(norm.ppf(0.5 + _check_level(level) / 2.0))


def solve_replicates(
    X: np.ndarray,
    y_pm: np.ndarray,
    C_grid: np.ndarray,
    counts: np.ndarray,
    *,
    kernel: str = "linear",
    gamma: float | str = "scale",
    degree: int = 3,
    coef0: float = 0.0,
    tol: float = 1e-7,
    max_iter: int = 20000,
    device: str = "cpu",
    dtype: str = "float64",
) -> dict[str, Any]:
    """Fit the ``R x b`` weighted SVMs of one block of draws (SPEC S2 step 1).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y_pm : ndarray of shape (n,)
        Labels in {-1, +1}.
    C_grid : ndarray of shape (R,)
    counts : ndarray of shape (b, n)
        Bootstrap draw counts of the block's replicates.

    Returns
    -------
    dict
        ``coef`` (R, b, n) = ``alpha * y``, ``intercept`` (R, b), ``n_iter`` (R, b),
        ``duality_gap`` (R, b), ``w`` (R, b, d) or None, ``scores`` (R, b, n) on the
        training rows, ``gamma`` (float) and ``statuses`` (list of str, P entries).
    """
    dt = {"float64": torch.float64, "float32": torch.float32}[str(dtype)]
    prob = BatchedSvmProblem.from_bootstrap(
        X,
        y_pm,
        C_grid,
        counts,
        kernel=kernel,
        gamma=gamma,
        degree=degree,
        coef0=coef0,
        device=torch.device(device),
        dtype=dt,
    )
    sol = BoxQpSolver(SolverConfig(tol=float(tol), max_iter=int(max_iter)))(prob)
    R, B, n = len(C_grid), counts.shape[0], X.shape[0]
    r_idx = prob.index["c_idx"].cpu().numpy()
    b_idx = prob.index["rep_idx"].cpu().numpy()

    def grid(values: Any, *tail: int, dtype: Any = np.float64) -> np.ndarray:
        out = np.zeros((R, B, *tail), dtype=dtype)
        out[r_idx, b_idx] = values.detach().cpu().numpy()
        return out

    F = sol.decision_function(
        prob.X,
        prob.y,
        prob.X,
        kernel=prob.kernel,
        gamma=prob.gamma,
        degree=prob.degree,
        coef0=prob.coef0,
    )
    return {
        "coef": grid(sol.alpha, n) * y_pm[None, None, :],
        "intercept": grid(sol.b),
        "n_iter": grid(sol.n_iter, dtype=np.int64),
        "duality_gap": grid(sol.duality_gap),
        "w": None if sol.w is None else grid(sol.w, X.shape[1]),
        "scores": grid(F, n),
        "gamma": float(prob.gamma),
        "statuses": [str(s) for s in sol.statuses()],
    }


def fit_replicates_distributed(
    X: np.ndarray,
    y_pm: np.ndarray,
    C_grid: np.ndarray,
    counts: np.ndarray,
    *,
    n_chunks: int | None = None,
    address: str | None = None,
    num_workers: int | None = None,
    num_gpus: float = 0.0,
    **solver_kwargs: Any,
) -> dict[str, Any]:
    """:func:`solve_replicates` on replicate chunks as Ray tasks, concatenated.

    ``counts`` (B, n) is split into ``n_chunks`` consecutive blocks of replicates (None:
    the CPUs of the Ray cluster, at most B); each block is one task with one CPU (and
    ``num_gpus`` GPUs, e.g. 1 when ``device="cuda"``). The result has the layout of
    one :func:`solve_replicates` call on all of ``counts``.
    """
    from torchsvm.parallel import ray_session

    counts = np.asarray(counts)
    with ray_session(address, num_workers) as ray:
        if n_chunks is None:
            n_chunks = int(ray.cluster_resources().get("CPU", 1))
        n_chunks = max(1, min(int(n_chunks), counts.shape[0]))
        chunks = np.array_split(counts, n_chunks, axis=0)
        func = partial(solve_replicates, X, y_pm, np.asarray(C_grid), **solver_kwargs)
        task = ray.remote(_call_on_chunk).options(
            num_cpus=1, num_gpus=num_gpus, max_retries=0
        )
        func_ref = ray.put(func)
        parts = ray.get([task.remote(func_ref, c) for c in chunks])
    out: dict[str, Any] = {"gamma": parts[0]["gamma"]}
    for key in ("coef", "intercept", "n_iter", "duality_gap", "scores"):
        out[key] = np.concatenate([p[key] for p in parts], axis=1)
    out["w"] = (
        None
        if parts[0]["w"] is None
        else np.concatenate([p["w"] for p in parts], axis=1)
    )
    # statuses are in problem order p = r * b + j within each chunk: regroup as (R, B)
    R = len(C_grid)
    out["statuses"] = np.concatenate(
        [np.asarray(p["statuses"], dtype=object).reshape(R, -1) for p in parts], axis=1
    )
    return out


def _call_on_chunk(func: Callable[[np.ndarray], Any], chunk: np.ndarray) -> Any:
    return func(chunk)
