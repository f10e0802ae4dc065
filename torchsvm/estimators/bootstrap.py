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
instead of S1; S5c reads each C of the grid as S1 does (``u_i = C c_i``), so a floor the
replicate's S1 fit already meets leaves that fit unchanged, and the vote threshold stays
0. The fits come from :func:`fit_s5c_path`: one S1 fit per (C, replicate); S1 where it
meets the floor (exact, no MIQP); for a floor only all positives can meet (TPR 1) the S1
fit with the positives' slack priced 1e4 times higher where it meets every positive
(exact, no MIQP); otherwise one HiGHS outer approximation
(:func:`torchsvm.mip.csvm.solve_csvm`, ``mip_time_limit`` seconds each, ``n_jobs``
processes over replicates). :meth:`BootstrapProbabilitySVC.fit_targets` fits several
targets on one path, in increasing order, and takes a proven optimum at a lower target
as the optimum of a higher one whose floor it meets (exact: S5c's feasible set shrinks
as the floor rises, its objective does not change). Only the fits differ: OOB
accuracies, weights, votes and intervals are computed as for Ctrl1. A fit that hits its
time limit contributes its incumbent (``mip_status_`` and ``mip_gap_`` say which);
``ctrl2_source_`` says which fits were S1, reused, forced or solved, ``ctrl2_seconds_`` their
seconds, ``ctrl2_wall_time_`` the seconds of the whole path.

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

Calibration of the mean decision value (``calibration_input="scores"``; issue 17). This
departs from SPEC S2, whose probability is the vote fraction: with a kernel whose
replicates agree on the sign of most rows (RBF), the votes of most rows are exactly 0 or
1, so they lose the ranking and no monotone map of the votes can recover it. The
ensemble's mean decision value ``s(x) = sum_r weights_[r] (1/B) sum_b f_{r,b}(x)`` (the
vote's weights on the scores instead of their signs;
:meth:`BootstrapProbabilitySVC.mean_decision_function`) keeps it. Its out-of-bag
version ``oob_decision_[i]`` averages, for each C, only the replicates that did not draw
row ``i``; the chosen calibrator is fitted on the pairs ``(oob_decision_[i], y_i)`` and
maps ``s(x)``. ``calibration_input="auto"`` puts the vote and the score calibrators
side by side: with ``calibration="auto"``, raw votes and all six calibrators compete in
the cross-validation above; with a named calibrator, its vote and score versions do.

``"auto"`` leaves isotonic regression on the votes out when fewer than 20 out-of-bag
votes lie strictly inside (0, 1) (``_MIN_INTERIOR_VOTES``): on nearly binary votes it is
a step function of two or three levels whose cross-validated MSE is unreliable. An
explicit ``calibration="isotonic"`` is always fitted.

One-standard-error rule (``calibration_rule="one_se"``; issue 17). With 150-250
out-of-bag rows the cross-validated MSEs of seven candidates differ by less than their
noise, and the argmin picks noisily. ``"one_se"`` keeps a reference candidate -- Platt's
sigmoid (two parameters), on the decision values when they are an input, else on the
votes (with a named calibrator: that calibrator) -- unless the lowest candidate's mean
paired difference ``d_i = loss_i(best) - loss_i(ref)`` over the out-of-bag rows is
more than one standard error ``sd(d) / sqrt(m)`` below zero. This is the one-standard-
error rule of Hastie, Tibshirani & Friedman (ESL, sec. 7.10) toward the simplest model,
with two departures: the standard error is that of the paired per-row differences
(the candidates share folds and rows), not of each candidate's error over folds, and
"simplest" is the fixed reference above, not an order over all candidates. It is a
choice among S2's out-of-bag calibrations only; SPEC S2 itself has no calibration step.

Blend with Platt's single SVM (``blend_platt``; issue 17). This departs from SPEC S2
further: the probability is no longer a function of the ensemble alone. With
``blend_platt`` set, one more model is fitted after the ensemble: Platt's baseline of
SPEC S4, the S1 SVM on all training rows at the ensemble's best C ``C_{r*}`` (same
kernel and ``gamma_``) with a sigmoid fitted on its out-of-fold decision values over
``blend_cv`` stratified inner folds (:class:`~torchsvm.estimators.calibration.
CalibratedSVC`, ``1 + blend_cv`` extra fits). The probability is the convex blend
``w P_platt(+|x) + (1 - w) P(+|x)`` of Platt's probability and the ensemble's
(calibrated when ``calibration`` is set). ``blend_platt`` is the weight ``w`` itself
or ``"oob"``: ``w`` in ``0, 0.05, ..., 1`` minimising the Brier score of the same blend
of the training rows' held-out probabilities, Platt's calibrator on its out-of-fold
decision values and the ensemble's out-of-bag ``oob_calibrated_proba_`` (ties: the
smaller ``w``). The two are not held out alike -- Platt's out-of-fold scores come from
SVMs on ``(blend_cv - 1) / blend_cv`` of the rows, the ensemble's from its own
replicates -- so the chosen ``w`` leans toward the ensemble where the full-data SVM is
better than its inner-fold SVMs. With RBF the bagged replicates (about 63 % unique rows)
rank rows worse than one SVM on all rows on some data sets (sonar, heart_statlog);
the blend keeps part of that SVM's ranking. Ctrl1 and Ctrl2 (``target_tpr``) are not
defined for the blend and raise ``ValueError``. ``predict_proba_interval`` blends the
ensemble's interval with Platt's point estimate (``w p_platt + (1 - w) [lo, hi]``):
Platt's sigmoid has no interval of its own here, so the interval covers the ensemble's
uncertainty only.

Coherence with the calibrated probabilities: ``predict_proba_interval`` maps the
endpoints of the raw-vote interval through the same calibrator (isotonic and Platt maps
are monotone, so the interval keeps containing the point estimate; for safety the
bounds are widened to include it). A score calibrator maps the normal interval of the
mean decision value, ``s +- z sd_b(s_b) / sqrt(B)`` with ``s_b`` replicate ``b``'s
weighted score, in the same way. Ctrl1 with a calibrator votes at threshold 0 and
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
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
from torchsvm.estimators.csvm import _s1_if_optimal
from torchsvm.kernels import compute_kernel, resolve_gamma
from torchsvm.mip.csvm import CsvmSolution, solve_csvm
from torchsvm.mip.model import MipConfig
from torchsvm.mip.warm_start import S1Fit
from torchsvm.problems.csvm import CsvmProblem
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.types import SolveStatus

__all__ = [
    "BootstrapProbabilitySVC",
    "S5cPath",
    "default_c_grid",
    "fit_s5c_path",
    "vote_fraction",
]

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


def _mix_votes(weights: np.ndarray, per_c: np.ndarray) -> np.ndarray:
    """``sum_r weights[r] per_c[r]`` over ``weights > 0``, exactly 0 or 1 where every
    such C votes exactly 0 or 1.

    The weights sum to 1 only to rounding, so the plain sum of unanimous votes can be
    ``1 - 1e-16``; such a row is snapped to the exact value (the mixture of equal
    fractions is that fraction), so that "P = 0 or 1" counts are exact.

    Parameters
    ----------
    weights : ndarray of shape (R,)
        Mixture weights (non-negative).
    per_c : ndarray of shape (R, t)
        Vote fraction of each C (nan where undefined).

    Returns
    -------
    ndarray of shape (t,)
    """
    used = weights > 0
    w, v = weights[used], per_c[used]
    p = w @ v
    p = np.where((v == 1.0).all(0), 1.0, p)
    return np.where((v == 0.0).all(0), 0.0, p)


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
        Calibrate ``P(+|x)`` on out-of-bag data (no extra fits; see the module
        docstring). ``"auto"`` picks by out-of-bag cross-validation and may keep the
        raw votes.
    calibration_input : {"votes", "scores", "auto"}, default="votes"
        What the calibrator reads. ``"votes"``: the SPEC S2 vote posterior (its
        out-of-bag votes ``oob_proba_``). ``"scores"``: the ensemble's mean decision
        value (out of bag: ``oob_decision_``), which keeps the ranking that votes lose
        where the replicates agree; this departs from S2, whose probability is the vote.
        ``"auto"``: both, chosen by out-of-bag cross-validation. Ignored without
        ``calibration``.
    calibration_rule : {"min", "one_se"}, default="min"
        How ``"auto"`` picks among its candidates. ``"min"``: the lowest
        cross-validated MSE. ``"one_se"``: the reference calibrator (Platt's sigmoid,
        on the decision values when they are an input) unless the lowest is more than
        one standard error of the paired per-row differences below it (see the module
        docstring). Ignored when there is one candidate.
    blend_platt : float in [0, 1], "oob" or None, default=None
        Weight of Platt's single SVM (S1 on all rows at ``C_{r*}``, sigmoid on
        ``blend_cv`` inner folds) in a convex blend with the ensemble's probability;
        ``"oob"`` chooses it on the training rows' held-out probabilities (see the
        module docstring). Departs from SPEC S2; not with ``target_tpr``.
    blend_cv : int, default=5
        Inner folds of the blended Platt SVM (stratified, shuffled with
        ``random_state`` when it is an int, else 0; at most the smaller class size).
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
    oob_decision_ : ndarray of shape (n,)
        Out-of-bag mean decision value ``s_oob(x_i)`` (nan for rows never out of bag).
    calibration_ : str or None
        The calibrator in use (``"auto"`` resolved; None: raw votes).
    calibration_input_ : {"votes", "scores"} or None
        The calibrator's input (``"auto"`` resolved; None: raw votes).
    calibrator_ : estimator or None
        The fitted calibrator (input: the vote log-odds ``z`` or the mean decision
        value ``s``).
    calibration_scores_ : dict
        With ``"auto"``: out-of-bag cross-validated MSE of ``"raw"`` and each candidate,
        vote calibrators by name (``"sigmoid"``), score calibrators as
        ``"sigmoid:scores"``.
    oob_calibrated_proba_ : ndarray of shape (n,)
        The out-of-bag input through the calibrator (in-sample for the calibrator).
    platt_ : CalibratedSVC or None
        With ``blend_platt``: Platt's SVM at ``best_C_`` and its sigmoid.
    blend_weight_ : float
        Weight ``w`` of ``platt_`` in the probability (0 without ``blend_platt``).
    blend_scores_ : ndarray of shape (21,)
        With ``blend_platt="oob"``: Brier score of the blend of the training rows'
        held-out probabilities at ``w = 0, 0.05, ..., 1``.
    proba_cutoff_ : float
        ``predict`` gives ``classes_[1]`` where ``P(+|x) > proba_cutoff_`` (1/2 unless
        Ctrl1 acts on calibrated probabilities).
    n_iter_, duality_gap_ : ndarray of shape (R, B)
        Solver diagnostics per fit (S1 fits only).
    mip_status_, mip_gap_ : ndarray of shape (R, B)
        Ctrl2 only: status and proven relative gap of every S5c fit.
    ctrl2_source_ : ndarray of shape (R, B), dtype object
        Ctrl2 only: ``"s1"``, ``"reused"``, ``"forced"`` or ``"miqp"`` per fit
        (:class:`S5cPath`).
    ctrl2_seconds_ : ndarray of shape (R, B)
        Ctrl2 only: seconds per fit after the shared S1 fit.
    ctrl2_wall_time_ : float
        Ctrl2 only: seconds of the whole S5c path (shared by ``fit_targets``' models).
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
        "calibration_input": [StrOptions({"votes", "scores", "auto"})],
        "calibration_rule": [StrOptions({"min", "one_se"})],
        "blend_platt": [
            Interval(Real, 0.0, 1.0, closed="both"),
            StrOptions({"oob"}),
            None,
        ],
        "blend_cv": [Interval(Integral, 2, None, closed="left")],
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
        calibration_input: str = "votes",
        calibration_rule: str = "min",
        blend_platt: float | str | None = None,
        blend_cv: int = 5,
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
        self.calibration_input = calibration_input
        self.calibration_rule = calibration_rule
        self.blend_platt = blend_platt
        self.blend_cv = blend_cv
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
        self._fit_votes(train_scores, y_pm, X)
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

        With ``control="csvm"`` (Ctrl2) the S5c fits do depend on the target; they come
        from one :func:`fit_s5c_path` over all targets (``self.target_tpr`` first),
        which shares the S1 fits and reuses a proven optimum at a lower target where it
        meets a higher floor (exact), so element ``k`` is ``fit`` with that target, to
        the MIQP's gap. ``ctrl2_wall_time_`` is then the seconds of the shared path.

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
        if self.control == "csvm":
            return self._fit_targets_csvm(X, y, target_tprs)
        X, y_pm, train_scores = self._fit_ensemble(X, y)
        out = []
        for t in target_tprs:
            m = copy.deepcopy(self)
            m.target_tpr = t
            m._validate_params()
            m._fit_votes(train_scores, y_pm, X)
            out.append(m)
        self._fit_votes(train_scores, y_pm, X)
        return out

    def _fit_targets_csvm(
        self, X: Any, y: Any, target_tprs: Sequence[float | None]
    ) -> list[BootstrapProbabilitySVC]:
        """Ctrl2 for several targets from one S5c path (:func:`fit_s5c_path`)."""
        targets = [float(self.target_tpr) if self.target_tpr is not None else None]
        targets += [None if t is None else float(t) for t in target_tprs]
        if any(t is None for t in targets):
            raise ValueError(
                "control='csvm' (Ctrl2) needs a TPR floor for every target; got None "
                "(the uncontrolled model is the Ctrl1 one with target_tpr=None)"
            )
        X, y_pm = self._prepare(X, y)
        uniq = sorted(set(targets))  # each distinct floor solved once
        path = self._s5c_path(X, y_pm, np.asarray(uniq, dtype=np.float64))
        out = []
        for t in targets[1:]:
            m = copy.deepcopy(self)
            m.target_tpr = t
            m._validate_params()
            m._fit_votes(m._apply_path(path, uniq.index(t), X), y_pm, X)
            out.append(m)
        self._fit_votes(self._apply_path(path, uniq.index(targets[0]), X), y_pm, X)
        return out

    def _fit_votes(
        self, train_scores: np.ndarray, y_pm: np.ndarray, X: np.ndarray
    ) -> None:
        """Weights, Ctrl1 threshold, calibration and the Platt blend from the
        training scores (``X``: the training rows, for the blend's SVM)."""
        self._store_weights(train_scores, y_pm)
        self._fit_threshold(train_scores, y_pm)
        self.oob_decision_ = self._oob_decision(train_scores)
        self.platt_: Any = None
        if self.blend_platt is not None:
            self._fit_platt(X, y_pm)
        self._fit_calibration(y_pm)

    def _fit_platt(self, X: np.ndarray, y_pm: np.ndarray) -> None:
        """Platt's SVM for ``blend_platt``: S1 on all rows at ``best_C_``, sigmoid on
        ``blend_cv`` stratified inner folds (SPEC S4's Platt baseline)."""
        from torchsvm.estimators.calibration import CalibratedSVC
        from torchsvm.estimators.svc import WeightedSVC

        if self.target_tpr is not None:
            raise ValueError(
                "blend_platt is not defined with target_tpr (Ctrl1 / Ctrl2): the "
                "blended probability has no vote threshold or constrained fits"
            )
        n_splits = int(min(self.blend_cv, np.bincount((y_pm > 0).astype(int)).min()))
        if n_splits < 2:
            raise ValueError(
                f"blend_platt needs at least 2 rows of each class; got {n_splits}"
            )
        seed = self.random_state if isinstance(self.random_state, Integral) else 0
        svc = WeightedSVC(
            C=self.best_C_,
            kernel=self.kernel,
            gamma=self.gamma_ if self.kernel != "linear" else self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            device=self.device,
            dtype=self.dtype,
        )
        cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=int(seed))
        self.platt_ = CalibratedSVC(svc, method="sigmoid", cv=cv).fit(X, y_pm)

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validate parameters and data, encode labels, draw the replicates."""
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
        return X, y_pm

    def _fit_ensemble(
        self, X: Any, y: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate, draw the replicates and fit every (C, replicate): (X, y_pm, scores)."""
        X, y_pm = self._prepare(X, y)
        if self.control == "csvm":
            path = self._s5c_path(X, y_pm, np.array([float(self.target_tpr)]))
            train_scores = self._apply_path(path, 0, X)
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

    def _s5c_path(
        self, X: np.ndarray, y_pm: np.ndarray, targets: np.ndarray
    ) -> S5cPath:
        """Ctrl2: the S5c fits of every (target, C, replicate) (:func:`fit_s5c_path`)."""
        gamma = 0.0
        if self.kernel != "linear":
            gamma = resolve_gamma(self.gamma, torch.as_tensor(X, dtype=torch.float64))
        self.gamma_ = float(gamma)
        return fit_s5c_path(
            X,
            y_pm,
            self.counts_,
            self.C_grid_,
            targets,
            kernel=self.kernel,
            gamma=self.gamma_,
            time_limit=float(self.mip_time_limit),
            mip_rel_gap=float(self.mip_rel_gap),
            n_jobs=self.n_jobs,
        )

    def _apply_path(self, path: S5cPath, k: int, X: np.ndarray) -> np.ndarray:
        """Take target ``k`` of a Ctrl2 path as this model's fits: scores (R, B, n)."""
        sols = path.solutions[k]
        R, B = len(sols), len(sols[0])
        self._csvm = [list(row) for row in sols]
        scores = np.stack(
            [np.stack([s.decision_function(X) for s in row]) for row in sols]
        )
        self.mip_status_ = path.statuses(k)
        self.mip_gap_ = path.gaps(k)
        self.ctrl2_source_ = path.source[k].copy()
        self.ctrl2_seconds_ = path.seconds[k].copy()
        self.ctrl2_wall_time_ = float(path.wall_time)
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
        return _mix_votes(self.weights_, per_c)

    def _oob_decision(self, scores: np.ndarray) -> np.ndarray:
        """Out-of-bag mean decision value per training row: shape (n,).

        ``s_oob(x_i) = mean_{b: i out of bag} sum_r weights_[r] f_{r,b}(x_i)``, the
        vote's weights on the scores instead of their signs (nan if never out of bag).
        """
        oob = self.counts_ == 0  # (B, n)
        used = self.weights_ > 0
        s = np.tensordot(self.weights_[used], scores[used], axes=1)  # (B, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(oob, s, 0.0).sum(0) / oob.sum(0)

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

    def _calibrate(self, p: np.ndarray, s: np.ndarray | None = None) -> np.ndarray:
        """Calibrated ``P(+|x)`` from raw votes ``p`` or mean decision values ``s``
        (whichever ``calibration_input_`` reads; nan stays nan)."""
        if self.calibrator_ is None:
            return p
        if self.calibration_input_ == "scores":
            if s is None:
                raise ValueError("a score calibrator needs the mean decision values")
            return _apply_calibrator(self.calibrator_, s)
        z = np.full_like(p, np.nan, dtype=np.float64)
        ok = np.isfinite(p)
        z[ok] = self._vote_scores(p[ok])
        return _apply_calibrator(self.calibrator_, z)

    def _fit_calibration(self, y_pm: np.ndarray) -> None:
        """Fit the out-of-bag calibrator and, with Ctrl1, the probability cutoff."""
        self.calibrator_: Any = None
        self.calibration_: str | None = None
        self.calibration_input_: str | None = None
        self.calibration_scores_: dict[str, float] = {}
        self.proba_cutoff_ = 0.5
        if self.calibration is not None:
            seen = np.isfinite(self.oob_proba_) & np.isfinite(self.oob_decision_)
            p, y01 = self.oob_proba_[seen], (y_pm[seen] > 0).astype(np.float64)
            s = self.oob_decision_[seen]
            if y01.min() == y01.max():
                raise ValueError(
                    f"calibration={self.calibration!r} needs out-of-bag rows of both "
                    f"classes; only {int(seen.sum())} rows were ever out of bag"
                )
            inputs = (
                ("votes", "scores")
                if self.calibration_input == "auto"
                else (self.calibration_input,)
            )
            methods = (
                tuple(_CALIBRATORS)
                if self.calibration == "auto"
                else (self.calibration,)
            )
            method: str | None = methods[0]
            source: str | None = inputs[0]
            if len(methods) * len(inputs) > 1:
                method, source = self._choose_calibration(
                    p, s, y01, methods, inputs, keep_raw=self.calibration == "auto"
                )
            if method is not None:
                x = self._vote_scores(p) if source == "votes" else s
                self.calibrator_ = _CALIBRATORS[method]().fit(x, y01)
                self.calibration_input_ = source
            self.calibration_ = method
        self.oob_calibrated_proba_ = self._calibrate(
            self.oob_proba_, self.oob_decision_
        )
        self._fit_blend_weight(y_pm)
        if (
            self.calibrator_ is not None
            and self.target_tpr is not None
            and self.control == "threshold"
        ):
            self.proba_cutoff_ = self._ctrl1_cutoff(y_pm)

    def _fit_blend_weight(self, y_pm: np.ndarray) -> None:
        """``blend_weight_``: the given weight, or with ``"oob"`` the grid weight with
        the lowest Brier score of the blended held-out training probabilities."""
        self.blend_weight_ = 0.0
        self.blend_scores_ = np.zeros(0)
        if self.blend_platt is None:
            return
        if getattr(self, "platt_", None) is None:
            raise ValueError("blend_platt needs Platt's SVM (fitted by fit)")
        if self.blend_platt != "oob":
            self.blend_weight_ = float(self.blend_platt)
            return
        q = self.oob_calibrated_proba_
        ok = np.isfinite(q)
        y01 = (y_pm[ok] > 0).astype(np.float64)
        p = self.platt_.calibrator_.predict_proba(self.platt_.oof_decision_[ok])[:, 1]
        self.blend_scores_ = np.array(
            [np.mean((w * p + (1.0 - w) * q[ok] - y01) ** 2) for w in _BLEND_GRID]
        )
        self.blend_weight_ = float(_BLEND_GRID[int(np.argmin(self.blend_scores_))])

    def _choose_calibration(
        self,
        p: np.ndarray,
        s: np.ndarray,
        y01: np.ndarray,
        methods: Sequence[str],
        inputs: Sequence[str],
        keep_raw: bool,
    ) -> tuple[str | None, str | None]:
        """The lowest out-of-fold MSE on the OOB pairs; ties keep raw votes, then the
        earlier candidate. Isotonic on votes is left out when fewer than
        ``_MIN_INTERIOR_VOTES`` out-of-bag votes lie strictly inside (0, 1). With
        ``calibration_rule="one_se"`` the reference candidate (:func:`_reference`)
        stays unless the lowest is more than one standard error below it."""
        n_splits = int(min(5, np.bincount(y01.astype(np.intp)).min()))
        scores: dict[str, float] = {}
        losses: dict[str, np.ndarray] = {}
        if keep_raw:
            losses["raw"] = (p - y01) ** 2
            scores["raw"] = float(np.mean(losses["raw"]))
        interior = int(np.count_nonzero((p > 0.0) & (p < 1.0)))
        cands = [
            (m, src)
            for src in inputs
            for m in methods
            if not (
                m == "isotonic" and src == "votes" and interior < _MIN_INTERIOR_VOTES
            )
        ]
        if n_splits >= 2:
            folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=0)
            splits = list(folds.split(p, y01))
            for m, src in cands:
                x = self._vote_scores(p) if src == "votes" else s
                q = np.empty_like(p)
                for train, test in splits:
                    if y01[train].min() == y01[train].max():
                        q[test] = y01[train].mean()
                        continue
                    cal = _CALIBRATORS[m]().fit(x[train], y01[train])
                    q[test] = cal.predict_proba(x[test])[:, 1]
                key = _candidate_key(m, src)
                losses[key] = (q - y01) ** 2
                scores[key] = float(np.mean(losses[key]))
        self.calibration_scores_ = scores
        ref = _reference(methods, inputs)
        if not scores:  # no cross-validation possible: the first candidate
            return ref if self.calibration_rule == "one_se" else cands[0]
        order = ["raw"] * keep_raw + [_candidate_key(m, src) for m, src in cands]
        best = min(scores, key=lambda k: (scores[k], order.index(k)))
        if self.calibration_rule == "one_se":
            d = losses[best] - losses[_candidate_key(*ref)]
            se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
            if not float(np.mean(d)) < -se:
                return ref
        if best == "raw":
            return None, None
        return cands[order.index(best) - keep_raw]

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
        return self._ensemble_outputs(X)[0]

    def _ensemble_outputs(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Raw vote ``P(+|x)`` (t,) and per-replicate mixture scores
        ``sum_r weights_[r] f_{r,b}(x)`` (B, t), from one evaluation of the fits."""
        check_is_fitted(self, "weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        grid = self._grid_scores(X)  # (k, B, t)
        per_c = vote_fraction(grid, self.threshold_, axis=1)  # (k, t)
        w = self.weights_[self._used]
        p = np.clip(_mix_votes(w, per_c), 0.0, 1.0)
        return p, np.tensordot(w, grid, axes=1)

    def mean_decision_function(self, X: Any) -> np.ndarray:
        """Ensemble mean decision value ``sum_r weights_[r] mean_b f_{r,b}(x)``.

        The input of ``calibration_input="scores"``; on a training row, the same mean
        over the replicates that did not draw it is ``oob_decision_``.

        Returns
        -------
        ndarray of shape (t,)
        """
        return self._ensemble_outputs(X)[1].mean(0)

    def _proba_positive(self, X: Any) -> np.ndarray:
        p, s = self._ensemble_outputs(X)
        q = np.clip(self._calibrate(p, s.mean(0)), 0.0, 1.0)
        return self._blend(X, q)

    def _blend(self, X: Any, q: np.ndarray) -> np.ndarray:
        """``w P_platt + (1 - w) q`` with ``blend_platt``; ``q`` otherwise."""
        if getattr(self, "platt_", None) is None:
            return q
        w = self.blend_weight_
        p = self.platt_.predict_proba(X)[:, 1]
        return np.clip(w * p + (1.0 - w) * q, 0.0, 1.0)

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
        With a score calibrator (``calibration_input_ == "scores"``): the normal
        interval ``s +- z sd_b(s_b) / sqrt(B)`` of the mean decision value ``s`` over
        the B per-replicate mixture scores ``s_b``, mapped and widened the same way.

        Returns
        -------
        lower, upper : ndarray of shape (t,)
        """
        z = _z_value(level)
        p, s_b = self._ensemble_outputs(X)
        half = z * np.sqrt(p * (1.0 - p) / int(self.n_bootstrap))
        lo, hi = np.clip(p - half, 0.0, 1.0), np.clip(p + half, 0.0, 1.0)
        if self.calibrator_ is None:
            return self._blend(X, lo), self._blend(X, hi)
        s = s_b.mean(0)
        if self.calibration_input_ == "scores":
            B = s_b.shape[0]
            se = s_b.std(0, ddof=1) / np.sqrt(B) if B > 1 else np.zeros_like(s)
            g = np.stack(
                [
                    self._calibrate(p, s - z * se),
                    self._calibrate(p, s),
                    self._calibrate(p, s + z * se),
                ]
            )
        else:
            # the raw-vote interval through the calibration map, widened to hold g(p)
            g = np.stack([self._calibrate(lo), self._calibrate(p), self._calibrate(hi)])
        g = np.clip(g, 0.0, 1.0)
        return self._blend(X, g.min(0)), self._blend(X, g.max(0))

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

#: the weights ``blend_platt="oob"`` searches
_BLEND_GRID = np.linspace(0.0, 1.0, 21)

#: "auto" leaves isotonic on the votes out below this many out-of-bag votes strictly
#: inside (0, 1): on nearly binary votes it is a step function of two or three levels.
_MIN_INTERIOR_VOTES = 20


def _candidate_key(method: str, source: str) -> str:
    """Key of ``calibration_scores_``: ``"sigmoid"`` (votes), ``"sigmoid:scores"``."""
    return method if source == "votes" else f"{method}:{source}"


def _reference(methods: Sequence[str], inputs: Sequence[str]) -> tuple[str, str]:
    """The candidate ``calibration_rule="one_se"`` keeps unless clearly beaten:
    Platt's sigmoid when it competes (else the named calibrator), on the decision
    values when they are an input (two parameters on the input that keeps the ranking)."""
    method = "sigmoid" if "sigmoid" in methods else methods[0]
    return method, ("scores" if "scores" in inputs else inputs[0])


def _apply_calibrator(calibrator: Any, x: np.ndarray) -> np.ndarray:
    """``calibrator``'s P(+) at the finite entries of ``x``; nan elsewhere."""
    out = np.full(x.shape, np.nan, dtype=np.float64)
    ok = np.isfinite(x)
    if ok.any():
        out[ok] = calibrator.predict_proba(x[ok])[:, 1]
    return out


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


# --------------------------------------------------------------- Ctrl2 (S5c path)
#: tolerance of the reuse check: a row counts towards a floor when ``y_i f(x_i) >= 1 -
#: tol``; the outer approximation accepts incumbents at this feasibility tolerance
_REUSE_TOL = 1e-6

#: Ctrl2's S5c path also seeds a MIQP from the lower targets at the same C: the last
#: proven optimum there (which misses this floor) is repaired to this floor and
#: polished (``repair`` of :func:`~torchsvm.mip.csvm.solve_csvm`), and a MIQP at a
#: lower target of the same C that ran tightened masters makes this one tightened
#: from its first master, as the previous C's does. Seeds and the search only.
#: Measured (scripts/bench_ctrl2_path.py, docs/benchmarks.md, "Ctrl2's S5c path: the
#: previous C's assignment polished first, seeds across t"): fewer nodes at C = 1/32,
#: housing's CPU unchanged (+1 % over two replicates), wisconsin's 4 % lower.
S5C_SEEDS_ACROSS_T = True


@dataclass(frozen=True)
class S5cPath:
    """S5c fits of every (target TPR, C, replicate) of Ctrl2 (SPEC S2 / S5c).

    Parameters
    ----------
    targets : ndarray of shape (T,)
        TPR floors, in the caller's order.
    solutions : tuple
        ``solutions[k][r][b]``: the :class:`~torchsvm.mip.csvm.CsvmSolution` of target
        ``k``, C ``r``, replicate ``b`` (linear kernel: ``coef`` and ``intercept`` only;
        the support rows are dropped to keep memory at ``R * B * T * d`` numbers).
    source : ndarray of shape (T, R, B), dtype object
        How each fit was obtained: ``"s1"`` (the replicate's S1 fit meets the floor,
        so it is the S5c optimum; no MIQP), ``"reused"`` (the proven S5c optimum at a
        lower target of the same (C, replicate) meets this floor, so it is optimal here
        too; no MIQP), ``"forced"`` (a floor that only all its rows meet, e.g. TPR 1:
        the binaries are fixed, and the S1 fit with those rows' slack priced 1e4 times
        higher meets it, so it is the optimum; no MIQP) or ``"miqp"`` (solved by outer
        approximation).
    seconds : ndarray of shape (T, R, B)
        Seconds of each fit after the shared S1 fit (the MIQP, or the check).
    s1_seconds : float
        Seconds of the batched S1 fits (and the upweighted fits of TPR-1 floors)
        shared by the targets.
    wall_time : float
        Seconds of the whole path.
    cpu_seconds : ndarray of shape (T, R, B) or None
        CPU seconds of this process per fit (as ``seconds``; on a loaded machine the
        wall seconds overstate the work; with ``n_jobs > 1`` the worker's).
    s1_cpu_seconds : float
        CPU seconds of the batched S1 fits.
    """

    targets: np.ndarray
    solutions: tuple[tuple[tuple[CsvmSolution, ...], ...], ...]
    source: np.ndarray
    seconds: np.ndarray
    s1_seconds: float
    wall_time: float
    cpu_seconds: np.ndarray | None = None
    s1_cpu_seconds: float = 0.0

    def statuses(self, k: int) -> np.ndarray:
        """Status strings of target ``k``: shape (R, B)."""
        return np.array(
            [[s.status.value for s in row] for row in self.solutions[k]], dtype=object
        )

    def gaps(self, k: int) -> np.ndarray:
        """Proven relative gaps of target ``k``: shape (R, B)."""
        return np.array([[s.mip_gap for s in row] for row in self.solutions[k]])


def _reuse_if_feasible(
    problem: CsvmProblem,
    sol: CsvmSolution,
    tol: float = _REUSE_TOL,
    margin: np.ndarray | None = None,
) -> CsvmSolution | None:
    """``sol`` (an S5c optimum at a lower floor) if it meets ``problem``'s floors.

    S5c's feasible set shrinks as a floor rises and its objective does not depend on
    the floor, so a proven optimum at floor ``t`` that is feasible at ``t' > t`` is
    optimal at ``t'`` (with the same bound and gap). Feasible means: ``xi_i = max(0, 1 -
    y_i f(x_i)) <= M`` on the in-bag rows and the draw-weighted count of floor rows with
    ``y_i f(x_i) >= 1 - tol`` (``z_i = 1``) reaches each floor. Returns None otherwise.
    ``margin``: ``y_i f(x_i)`` on ``problem.train_idx`` if already known.
    """
    I = problem.train_idx
    if margin is None:
        margin = problem.y[I] * sol.decision_function(problem.X[I])
    if np.maximum(0.0, 1.0 - margin).max(initial=0.0) > problem.big_m:
        return None
    z = margin >= 1.0 - tol
    w = problem.weights
    for floor in problem.floors:
        members = problem.floor_members(floor)
        if float(w[members] @ z[np.searchsorted(I, members)]) < floor.required - 1e-9:
            return None
    return dc_replace(sol, z=z)


#: the factor on the positives' S1 bounds of the fit that stands in for a floor forcing
#: every positive (:func:`_batched_s1_fits`)
_FORCE_FACTOR = 1e4


def _forces_all(problem: CsvmProblem) -> bool:
    """Whether every floor can only be met with ``z_i = 1`` on all its rows.

    True when dropping the lightest row of a floor already misses it (e.g. a TPR floor
    of 1): then S5c's binaries are fixed and its optimum is one convex QP.
    """
    w = problem.weights
    for floor in problem.floors:
        wm = w[problem.floor_members(floor)]
        if wm.size and float(wm.sum() - wm.min()) >= floor.required - 1e-9:
            return False
    return bool(problem.floors)


def _batched_s1_fits(
    X: np.ndarray,
    y_pm: np.ndarray,
    counts: np.ndarray,
    C_grid: np.ndarray,
    kernel: str,
    gamma: float,
    positive_factor: float = 1.0,
    tol: float = 1e-8,
) -> list[list[S1Fit]]:
    """S1 fits ``[b][r]`` of every (replicate, C) as ONE batch of the dual solver.

    Bounds ``u_i = C_r c_{b,i}`` (S1's convention, :func:`~torchsvm.mip.warm_start.
    s1_bounds` of the S5c problem), the positives' multiplied by ``positive_factor``.
    With ``positive_factor = _FORCE_FACTOR`` this is the relaxation of a floor that
    every positive must meet (TPR 1): for points with ``xi = 0`` on the positives the
    objectives agree and the relaxation drops ``xi <= M (1 - z)``, so where its optimum
    meets every positive (``y_i f(x_i) >= 1``) it is the S5c optimum;
    :func:`~torchsvm.estimators.csvm._s1_if_optimal` checks that and builds the
    solution, else the caller solves the MIQP.
    """
    B, R = counts.shape[0], C_grid.size
    scale = np.where(y_pm > 0, float(positive_factor), 1.0)
    U = (C_grid[:, None, None] * counts[None, :, :] * scale[None, None, :]).reshape(
        R * B, -1
    )
    prob = BatchedSvmProblem.from_bounds(
        X, y_pm, U, kernel=kernel, gamma=float(gamma) if kernel != "linear" else 1.0
    )
    sol = BoxQpSolver(SolverConfig(tol=float(tol)))(prob)
    return [
        [S1Fit.from_solution(sol, y_pm, index=r * B + b) for r in range(R)]
        for b in range(B)
    ]


def _s5c_path_replicate(
    X: np.ndarray,
    y_pm: np.ndarray,
    counts: np.ndarray,
    s1_fits: list[S1Fit],
    forced_fits: list[S1Fit] | None,
    C_grid: np.ndarray,
    targets: np.ndarray,
    kernel: str,
    gamma: float,
    config: MipConfig,
    share: bool = False,
) -> tuple[list[list[CsvmSolution]], np.ndarray, np.ndarray, np.ndarray]:
    """Every (target, C) S5c fit of one replicate: (solutions[k][r], source, seconds,
    CPU seconds). ``share``: seed each MIQP with the fits made before it (see
    :func:`fit_s5c_path`) beyond the same target's fit at the previous C and the
    lower targets' bound."""
    T, R = targets.size, C_grid.size
    sols: list[list[Any]] = [[None] * R for _ in range(T)]
    source = np.empty((T, R), dtype=object)
    secs = np.zeros((T, R))
    cpu = np.zeros((T, R))
    order = np.argsort(targets, kind="stable")
    # proven bounds of the fits so far: bounds[k, r] (-inf where none yet)
    bounds = np.full((T, R), -np.inf)
    for r, C in enumerate(C_grid):
        problems = [
            CsvmProblem.from_data(
                X,
                y_pm,
                None,
                sample_weight=counts,
                on_training=True,
                penalty="libsvm",
                C=float(C),
                kernel=kernel,
                gamma=gamma,
                min_tpr=float(t),
                min_tnr=None,
                hoeffding_alpha=None,  # Ctrl2's floor is the target itself (SPEC S2)
                big_m=1000.0,
            )
            for t in targets
        ]
        s1 = s1_fits[r]  # S1 does not depend on the floor
        I = problems[0].train_idx  # the in-bag rows, the same for every target
        # S1 as an S5c solution once (at the lowest target it meets), then its margins
        # against the higher floors; it misses every floor above the first it misses
        s1_sol: CsvmSolution | None = None
        s1_margin: np.ndarray | None = None
        s1_out = False
        proven: CsvmSolution | None = None  # last proven optimum at a lower target
        proven_margin: np.ndarray | None = None
        low_bound: float | None = None  # proven bound at a lower target
        low_tight = False  # a MIQP at a lower target of this C ran tightened masters
        for k in order:
            t1, c1 = time.perf_counter(), time.process_time()
            how = "s1"
            sol = None
            if not s1_out and s1_sol is None:
                sol = _s1_if_optimal(problems[k], s1, 0.0)
                if sol is not None:
                    s1_sol = sol
                    s1_margin = problems[k].y[I] * sol.decision_function(
                        problems[k].X[I]
                    )
            elif not s1_out and s1_sol is not None:
                # the tolerance of _s1_if_optimal's own check
                sol = _reuse_if_feasible(problems[k], s1_sol, 1e-7, s1_margin)
            s1_out = s1_out or sol is None
            if sol is None and proven is not None:
                how = "reused"
                sol = _reuse_if_feasible(problems[k], proven, _REUSE_TOL, proven_margin)
            if sol is None and forced_fits is not None and _forces_all(problems[k]):
                how = "forced"
                sol = _s1_if_optimal(problems[k], forced_fits[r], 0.0)
            if sol is None:
                how = "miqp"
                # exact seeds (solve_csvm): the same floor's fit at the previous C is
                # feasible here (the constraints do not see C); the bound at a lower
                # floor (same C and weights) bounds this optimum from below
                seeds = [sols[k][r - 1]] if r > 0 else []
                lb, points = low_bound, None
                if share:
                    seeds, lb, points = _shared_seeds(
                        sols, bounds, targets, C_grid, k, r, X, s1, kernel, seeds, lb
                    )
                # a master of the same floor's MIQP at the previous C needed the
                # bounded big-M (S5C_TIGHTEN_AFTER nodes without it): bound it from
                # the first master here, instead of first running one without
                hard = r > 0 and source[k, r - 1] == "miqp"
                hard = hard and sols[k][r - 1].tightened_masters > 0
                across = S5C_SEEDS_ACROSS_T
                hard = hard or (across and low_tight)
                sol = solve_csvm(
                    problems[k],
                    config,
                    s1=s1,
                    incumbents=seeds,
                    lower_bound=lb,
                    cut_points=points,
                    tighten_anchors=True if hard else "auto",
                    repair=[proven] if across and proven is not None else (),
                )
                low_tight = low_tight or sol.tightened_masters > 0
            dt = time.perf_counter() - t1
            cpu[k, r] = time.process_time() - c1
            if how != "miqp":
                sol = dc_replace(sol, runtime=dt)
            if sol.coef is not None and sol.support_X is not None:
                # linear: f(x) = w.x + b needs no copy of the support rows (R * B * T
                # copies of them filled 11 GB on srbct, d = 2308)
                sol = dc_replace(sol, dual_coef=None, support_X=None)
            sols[k][r], source[k, r], secs[k, r] = sol, how, dt
            if np.isfinite(sol.bound):
                low_bound = max(low_bound or -np.inf, float(sol.bound))
                bounds[k, r] = float(sol.bound)
            if sol.status is SolveStatus.optimal and sol is not proven:
                proven = sol
                proven_margin = problems[k].y[I] * sol.decision_function(
                    problems[k].X[I]
                )
    return sols, source, secs, cpu


def _shared_seeds(
    sols: list[list[Any]],
    bounds: np.ndarray,
    targets: np.ndarray,
    C_grid: np.ndarray,
    k: int,
    r: int,
    X: np.ndarray,
    s1: S1Fit,
    kernel: str,
    seeds: list[CsvmSolution],
    low_bound: float | None,
) -> tuple[list[CsvmSolution], float | None, np.ndarray | None]:
    """What the fits made so far on this replicate prove about fit ``(k, r)``.

    All of it exact for S5c on one replicate (same rows and weights; objective
    ``a(w) + C s(xi)`` with ``a, s >= 0``, feasible set independent of ``C``, shrinking
    as the floor rises):

    - incumbents: every fit at the previous C whose floor is at least ``targets[k]``
      (feasible here; :func:`~torchsvm.mip.csvm.solve_csvm` keeps the best);
    - lower bound: the best proven bound of any fit ``(k', r')`` with
      ``targets[k'] <= targets[k]`` and ``C_grid[r'] <= C_grid[r]`` (its problem is a
      relaxation of this one, and a smaller C lowers every objective value);
    - tangent cuts of ``||w||^2`` (linear kernel, primal form) at the ``w`` of S1 and
      of every fit so far at this C and at the previous C: valid for every CSVM on
      the same features, they start the master closer to the objective near the
      optimum.
    """
    out = list(seeds)
    if r > 0:
        for k2 in np.flatnonzero(targets >= targets[k]):
            cand = sols[k2][r - 1]
            if cand is not None and all(cand is not x for x in out):
                out.append(cand)
    lower = (targets <= targets[k])[:, None] & (C_grid <= C_grid[r])[None, :]
    lb = low_bound
    if np.isfinite(bounds[lower]).any():
        lb = max(lb if lb is not None else -np.inf, float(bounds[lower].max()))
    points = None
    if kernel == "linear":
        W = [X.T @ s1.dual_coef]
        for r2 in (r - 1, r):
            if r2 < 0:
                continue
            for k2 in range(targets.size):
                cand = sols[k2][r2]
                if cand is not None and cand.coef is not None:
                    W.append(np.asarray(cand.coef, dtype=np.float64))
        points = np.unique(np.round(np.stack(W), 12), axis=0)
    return out, lb, points


def fit_s5c_path(
    X: np.ndarray,
    y_pm: np.ndarray,
    counts: np.ndarray,
    C_grid: Sequence[float],
    targets: Sequence[float],
    *,
    kernel: str = "linear",
    gamma: float = 1.0,
    time_limit: float = 60.0,
    mip_rel_gap: float = 1e-4,
    n_jobs: int | None = 1,
    share_seeds: bool = False,
) -> S5cPath:
    """Ctrl2's S5c fits for every target TPR, C and replicate, sharing work (SPEC S5c).

    Fit ``(k, r, b)`` is S5c on replicate ``b``'s in-bag rows (weights ``counts[b]``),
    ``min 0.5 ||w||^2 + C_r sum_i c_i xi_i`` (S1's convention), TPR floor
    ``targets[k]``, ``0 <= xi_i <= M (1 - z_i)``, ``M = 1000`` -- the fit
    :func:`torchsvm.estimators.csvm.fit_s5c_ensemble` makes for one target. What is
    shared, all of it exact:

    - one S1 fit per (C, replicate) for all targets (S1 does not see the floor), all
      of them one batch of the dual solver;
    - a floor that S1 meets (rows with ``y_i f(x_i) >= 1``) leaves S1 as the optimum;
    - targets are visited in increasing order, and a proven S5c optimum at a lower
      target that meets a higher floor is the optimum there (the feasible set shrinks
      with the floor, the objective does not change), so no MIQP is solved for it;
    - a floor only all its rows can meet (TPR 1) fixes the binaries: S1 with those
      rows' slack priced ``1e4`` times higher is a relaxation whose optimum, when it
      meets every such row, is the S5c optimum (one batch of such QPs, no MIQP).

    Every other fit is one outer approximation warm-started by sliding b on S1
    (:func:`torchsvm.mip.csvm.solve_csvm`, ``time_limit`` seconds each; a fit at the
    limit keeps its incumbent and is never reused), seeded with two exact facts: the
    same target's fit at the previous C is feasible (an incumbent: S5c's constraints
    do not depend on C), and the best proven bound at a lower target of the same
    (C, replicate) bounds the optimum from below. A MIQP whose floor's MIQP at the
    previous C ran tightened masters (``tightened_masters > 0``: an untightened master
    passed :data:`~torchsvm.mip.csvm.S5C_TIGHTEN_AFTER` nodes) bounds its slacks'
    big-M from its first master (``tighten_anchors=True``) instead of first running
    one untightened; the bounds are exact either way. With ``share_seeds`` each MIQP also
    gets what every earlier fit of its replicate proves (:func:`_shared_seeds`): the
    previous C's fits at higher targets as incumbents, the best bound over
    lower-or-equal targets and smaller-or-equal C, and tangent cuts of ``||w||^2`` at
    the earlier fits' ``w`` (linear kernel). Exact, but not faster overall in a
    ``scripts/reproduce_cost_sensitive.py --ctrl2-pilot`` comparison (faster on
    wisconsin, slower on housing, where the extra cuts sent two outer approximations
    along longer paths), so it is off by default.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y_pm : ndarray of shape (n,)
        Labels in {-1, +1}.
    counts : ndarray of shape (B, n)
        Bootstrap draw counts.
    C_grid : sequence of float, length R
    targets : sequence of float in (0, 1], length T
    kernel : {"linear", "rbf"}
    gamma : float
        Resolved RBF gamma.
    time_limit, mip_rel_gap : float
        Per-MIQP limit and relative gap.
    n_jobs : int or None
        Processes over replicates (joblib ``loky``); 1 runs in-process.
    share_seeds : bool
        Seed each MIQP with every earlier fit of its replicate (above); False (default)
        keeps only the previous C's fit at the same target and the lower targets'
        bound.

    Returns
    -------
    S5cPath
    """
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y_pm, dtype=np.float64).ravel()
    cnt = np.asarray(counts, dtype=np.float64)
    grid = np.asarray(C_grid, dtype=np.float64).ravel()
    tg = np.asarray(targets, dtype=np.float64).ravel()
    if cnt.ndim != 2 or cnt.shape[1] != Xa.shape[0]:
        raise ValueError(f"counts must have shape (B, {Xa.shape[0]}); got {cnt.shape}")
    if tg.size == 0 or not np.all((tg > 0) & (tg <= 1)):
        raise ValueError(f"Ctrl2 targets must lie in (0, 1]; got {tg.tolist()}")
    config = MipConfig(time_limit=float(time_limit), mip_rel_gap=float(mip_rel_gap))
    B, R = cnt.shape[0], grid.size
    t0, c0 = time.perf_counter(), time.process_time()
    # the S1 fits of every (C, replicate) as one batch; and, for the replicates where
    # some target forces every in-bag positive (TPR 1), their upweighted fits as one
    w_pos = cnt * (ya > 0)[None, :]
    total = w_pos.sum(1)
    lightest = np.where(w_pos > 0, w_pos, np.inf).min(1)
    forcing = (total - lightest)[:, None] < tg[None, :] * total[:, None] - 1e-9
    need = np.flatnonzero(forcing.any(1))
    s1_all = _batched_s1_fits(Xa, ya, cnt, grid, kernel, float(gamma))
    forced_all: list[list[S1Fit] | None] = [None] * B
    if need.size:
        fits = _batched_s1_fits(
            Xa, ya, cnt[need], grid, kernel, float(gamma), _FORCE_FACTOR, tol=1e-10
        )
        for b, f in zip(need, fits, strict=True):
            forced_all[b] = f
    s1_wall, s1_cpu = time.perf_counter() - t0, time.process_time() - c0
    job = partial(
        _s5c_path_replicate,
        Xa,
        ya,
        C_grid=grid,
        targets=tg,
        kernel=kernel,
        gamma=float(gamma),
        config=config,
        share=bool(share_seeds),
    )
    if n_jobs == 1:
        out = [job(cnt[b], s1_all[b], forced_all[b]) for b in range(B)]
    else:
        from joblib import Parallel, delayed

        out = Parallel(n_jobs=n_jobs)(
            delayed(job)(cnt[b], s1_all[b], forced_all[b]) for b in range(B)
        )
    wall = time.perf_counter() - t0
    T = tg.size
    sols = tuple(
        tuple(tuple(o[0][k][r] for o in out) for r in range(R)) for k in range(T)
    )
    return S5cPath(
        targets=tg,
        solutions=sols,
        source=np.stack([o[1] for o in out], axis=2),
        seconds=np.stack([o[2] for o in out], axis=2),
        cpu_seconds=np.stack([o[3] for o in out], axis=2),
        s1_seconds=float(s1_wall),
        s1_cpu_seconds=float(s1_cpu),
        wall_time=float(wall),
    )
