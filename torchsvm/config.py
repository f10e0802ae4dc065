"""Frozen configuration dataclasses (no global settings, no hidden device state).

- :class:`SolverConfig`: the batched dual solver; :class:`MipConfig` (from
  :mod:`torchsvm.mip.model`): every HiGHS / outer-approximation solve.
- :class:`ExperimentConfig`: every knob of one experiment run (``configs/<experiment>.toml``),
  one section per concern plus one per protocol; :func:`load_config` reads TOML with
  ``--set section.key=value`` overrides. Unknown sections or keys, values of the wrong
  type, out-of-range values and a section that does not belong to the named
  ``experiment`` raise :class:`ConfigError` (a ``ValueError``) naming the key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from torchsvm.mip.model import MipConfig

__all__ = [
    "EXPERIMENTS",
    "BaselineConfig",
    "BootstrapSettings",
    "ConfigError",
    "CostSensitiveSettings",
    "CsvmSettings",
    "DataConfig",
    "DeaSettings",
    "ExperimentConfig",
    "FeatureSelectionSettings",
    "ImpliedSettings",
    "MipConfig",
    "ProbabilitiesSettings",
    "ProtocolConfig",
    "ReportConfig",
    "SensitivitySettings",
    "SolverConfig",
    "SolverSettings",
    "config_diff",
    "config_fingerprint",
    "load_config",
    "to_toml",
]


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the batched dual solver (:class:`torchsvm.solvers.box_qp.BoxQpSolver`).

    Parameters
    ----------
    tol : float
        Target relative duality gap ``(primal - dual) / max(1, |primal|)`` per problem.
        float32 problems: rows whose float32 gap stays above ``tol`` (the default is
        at or below what float32 arithmetic can certify, about ``eps n C |K|``) are
        solved again in float64 from the float32 iterate and certified by the float64
        gap; their ``alpha`` is returned rounded to float32, whose own gap can be up to
        about ``1e-5`` (measured 1.5e-6 on SPEC S8's tiny RBF batch; docs/benchmarks.md,
        "float32 at the default tolerance"). With ``method="auto"``, float32 batches
        of the linear kernel with ``d < n`` (the low-rank route) and ``tol < 1e-4``
        are solved in float64 from the start and rounded the same way
        (docs/benchmarks.md, "float32 on the low-rank route").
    max_iter : int
        Iteration cap per problem (ADMM iterations, or gradient steps in the fallback).
    check_every : int
        Iterations between convergence checks (the only host synchronisations).
    method : {"auto", "ipm", "pdas", "admm", "fista"}
        ``ipm``: batched interior-point method on a low-rank factor of ``Q`` (the
        linear kernel with ``d <= ipm_max_rank`` features), rounded to the box and
        polished. ``pdas``: primal-dual active-set iterations on the dense ``Q`` (no
        factorisation; exact face solves by Cholesky), for full-rank kernels.
        ``admm``: factorises ``Q`` once (eigendecomposition, or thin SVD for the linear
        kernel) and shares it across the batch. ``fista``: the first-order fallback that
        never stores more than kernel blocks. ``auto``: ``ipm`` for the linear kernel
        with few features, ``pdas`` for nonlinear kernels with ``n <= max_factor_n``
        (and the linear kernel with ``d >= n``), ``admm`` for the linear kernel in
        between, ``fista`` above ``max_factor_n``. Rows that ``ipm`` or ``pdas`` cannot
        certify are finished by ``admm``.
    max_factor_n : int
        Largest ``n`` for which a nonlinear kernel's ``Q`` is held in memory (``pdas``,
        ``admm``); above it ``auto`` uses ``fista``.
    ipm_max_rank : int
        Largest rank of ``Q`` for which ``auto`` uses the interior-point method (and,
        with the compiled active set, the active set from ``a = 0``), ADMM above it.
        128: at 64, the probabilities experiment's linear batches on mushroom (rank 86)
        and adult (rank 95), 4500 rows each, went to ADMM, 0.25 and 1.1 CPU s per
        problem, against 0.014 (from ``a = 0``) and 0.063 (interior point) on this
        route (docs/benchmarks.md, "mushroom's linear bootstrap batch").
    ipm_after : int
        ``ipm`` first runs this many ADMM iterations (cheap, ``O(n k)`` each) and
        hands only the uncertified problems to the interior point (``O(n k^2)`` per
        iteration); 0 goes straight to the interior point. Only for ``n <=
        ipm_admm_max_n``: with more samples there are more bounded support vectors to
        identify and ADMM needs hundreds of iterations.
    ipm_admm_max_n : int
        Largest ``n`` for which ``ipm`` tries ADMM first (see ``ipm_after``).
    pdas_max_iter : int
        Active-set iterations after which a dense problem is handed to ADMM.
    ipm_tol : float
        Relative complementarity / residual at which the interior-point iterate is
        rounded to the box and handed to the polish.
    ipm_compile : bool
        Run the interior point's iterations through ``torch.compile`` (fused
        elementwise passes, :func:`torchsvm.solvers.ipm.ipm_low_rank`). Off by default:
        the compilation takes tens of seconds to minutes per process, more than a
        typical solve; falls back to the uncompiled path with a warning.
    active_set_kernel : {"auto", "numba", "torch"}
        How the linear kernel's feasible active set runs
        (:func:`torchsvm.solvers.active_set.active_set_low_rank`): ``numba``, a compiled
        per-row kernel (CPU; the optional numba dependency, ``torchsvm[fast]``),
        ``torch``, batched torch iterations (any device), ``auto``, the kernel on the
        CPU where numba is importable. Same method, every answer certified by its gap.
    rho : float or None
        Initial ADMM penalty (None: mean diagonal of ``Q``); adapted per problem.
    relaxation : float
        ADMM over-relaxation in (0, 2).
    memory_bytes : int or None
        Working-memory budget for one chunk of problems (None: 60 % of free CUDA memory,
        or 4 GiB on CPU). The batch is split into chunks automatically.
    eig_rel_tol : float
        Eigenvalues below ``eig_rel_tol * max eigenvalue`` are treated as exact zeros.
    polish, polish_after, polish_iter
        Active-set polish: from iteration ``polish_after`` on, every check also runs
        ``polish_iter`` face-restricted CG steps (a monotone GPCG track started from the
        better of its last point and ADMM's projected iterate); a problem stops as soon
        as either point is certified.
    """

    tol: float = 1e-7
    max_iter: int = 20000
    check_every: int = 20
    method: str = "auto"
    max_factor_n: int = 12000
    ipm_max_rank: int = 128
    ipm_after: int = 60
    ipm_admm_max_n: int = 2000
    pdas_max_iter: int = 40
    ipm_tol: float = 1e-9
    ipm_compile: bool = False
    active_set_kernel: str = "auto"
    rho: float | None = None
    relaxation: float = 1.6
    memory_bytes: int | None = None
    eig_rel_tol: float = 1e-13
    polish: bool = True
    polish_after: int = 20
    polish_iter: int = 200

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be > 0; got {self.tol}")
        if self.max_iter < 1:
            raise ValueError(f"max_iter must be >= 1; got {self.max_iter}")
        if self.check_every < 1:
            raise ValueError(f"check_every must be >= 1; got {self.check_every}")
        if self.method not in ("auto", "ipm", "pdas", "admm", "fista"):
            raise ValueError(
                f"method must be 'auto', 'ipm', 'pdas', 'admm' or 'fista'; got {self.method!r}"
            )
        if self.ipm_admm_max_n < 0:
            raise ValueError(f"ipm_admm_max_n must be >= 0; got {self.ipm_admm_max_n}")
        if self.ipm_after < 0:
            raise ValueError(f"ipm_after must be >= 0; got {self.ipm_after}")
        if not (math.isfinite(self.ipm_tol) and self.ipm_tol > 0):
            raise ValueError(f"ipm_tol must be > 0; got {self.ipm_tol}")
        if not (0 < self.relaxation < 2):
            raise ValueError(f"relaxation must lie in (0, 2); got {self.relaxation}")
        if self.rho is not None and not (self.rho > 0):
            raise ValueError(f"rho must be > 0; got {self.rho}")


# ---------------------------------------------------------------- experiment config
class ConfigError(ValueError):
    """A bad configuration file, key or value (the message names it)."""


#: Protocol name -> the config sections it reads (besides ``experiment``, ``name``,
#: ``device``). A section outside this set in a config file is an error.
EXPERIMENTS: dict[str, tuple[str, ...]] = {
    "bootstrap": ("data", "protocol", "bootstrap", "solver", "baselines", "report"),
    "probabilities": (
        "data",
        "protocol",
        "bootstrap",
        "solver",
        "probabilities",
        "report",
    ),
    "implied": ("data", "protocol", "implied", "solver", "report"),
    "sensitivity": ("data", "protocol", "sensitivity", "solver", "report"),
    "csvm": ("data", "protocol", "csvm", "mip", "report"),
    "cost_sensitive": (
        "data",
        "protocol",
        "bootstrap",
        "cost_sensitive",
        "mip",
        "report",
    ),
    "feature_selection": ("data", "protocol", "feature_selection", "mip", "report"),
    "dea": ("data", "protocol", "dea", "mip", "report"),
}


def _positive(value: float, key: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{key} must be finite and > 0; got {value}")


@dataclass(frozen=True)
class DataConfig:
    """Datasets (``torchsvm.data.datasets.load_dataset`` names; breast_cancer is bundled).

    ``max_rows`` > 0 draws a stratified subsample of larger datasets (fixed seed).
    """

    datasets: tuple[str, ...] = ("breast_cancer",)
    target: str = ""
    data_dir: str = ""
    max_rows: int = 0

    def __post_init__(self) -> None:
        if not self.datasets:
            raise ConfigError("data.datasets must name at least one dataset")
        if self.max_rows < 0:
            raise ConfigError(f"data.max_rows must be >= 0; got {self.max_rows}")


@dataclass(frozen=True)
class ProtocolConfig:
    """Outer evaluation loop: stratified folds (preprocessing per fold), seed.

    ``max_folds`` > 0 runs only the first folds of the split.
    """

    n_folds: int = 10
    max_folds: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_folds < 2:
            raise ConfigError(f"protocol.n_folds must be >= 2; got {self.n_folds}")
        if self.max_folds < 0:
            raise ConfigError(f"protocol.max_folds must be >= 0; got {self.max_folds}")

    @property
    def folds_run(self) -> int:
        """Number of folds actually run."""
        return (
            self.n_folds if self.max_folds == 0 else min(self.max_folds, self.n_folds)
        )


@dataclass(frozen=True)
class BootstrapSettings:
    """``BootstrapProbabilitySVC`` parameters (SPEC S2)."""

    C_grid: tuple[float, ...] = tuple(2.0**k for k in range(-5, 6))
    n_bootstrap: int = 500
    accuracy_eps: float = 0.01
    kernel: str = "linear"
    gamma: str = "scale"
    target_tpr: float = 0.0
    level: float = 0.95

    def __post_init__(self) -> None:
        if not self.C_grid or any(
            not (math.isfinite(c) and c > 0) for c in self.C_grid
        ):
            raise ConfigError(
                f"bootstrap.C_grid must be non-empty, finite, > 0; got {self.C_grid}"
            )
        if self.n_bootstrap < 1:
            raise ConfigError(
                f"bootstrap.n_bootstrap must be >= 1; got {self.n_bootstrap}"
            )
        if self.accuracy_eps < 0:
            raise ConfigError(
                f"bootstrap.accuracy_eps must be >= 0; got {self.accuracy_eps}"
            )
        if self.kernel not in ("linear", "rbf", "poly"):
            raise ConfigError(
                f"bootstrap.kernel must be linear, rbf or poly; got {self.kernel!r}"
            )
        _check_gamma(self.gamma, "bootstrap.gamma")
        if not 0.0 <= self.target_tpr <= 1.0:
            raise ConfigError(
                "bootstrap.target_tpr must lie in [0, 1] (0 = no Ctrl1); "
                f"got {self.target_tpr}"
            )
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"bootstrap.level must lie in (0, 1); got {self.level}")

    @property
    def gamma_value(self) -> float | str:
        """``gamma`` as the estimators take it ("scale", "auto" or a float)."""
        return _gamma_value(self.gamma)


def _check_gamma(gamma: str, key: str) -> None:
    if gamma in ("scale", "auto"):
        return
    try:
        ok = float(gamma) > 0
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(
            f"{key} must be 'scale', 'auto' or a positive number; got {gamma!r}"
        )


def _gamma_value(gamma: str) -> float | str:
    return gamma if gamma in ("scale", "auto") else float(gamma)


@dataclass(frozen=True)
class SolverSettings:
    """Batched solver tolerance / iterations and floating dtype."""

    tol: float = 1e-7
    max_iter: int = 20000
    dtype: str = "float64"

    def __post_init__(self) -> None:
        _positive(self.tol, "solver.tol")
        if self.max_iter < 1:
            raise ConfigError(f"solver.max_iter must be >= 1; got {self.max_iter}")
        if self.dtype not in ("float64", "float32"):
            raise ConfigError(
                f"solver.dtype must be float64 or float32; got {self.dtype!r}"
            )


@dataclass(frozen=True)
class BaselineConfig:
    """Main job: Platt-scaled SVM (SPEC S4) on the same folds; ``C`` fixed."""

    platt: bool = True
    C: float = 1.0
    cv: int = 5

    def __post_init__(self) -> None:
        _positive(self.C, "baselines.C")
        if self.cv < 2:
            raise ConfigError(f"baselines.cv must be >= 2; got {self.cv}")


_PROB_BASELINES = (
    "platt",
    "isotonic",
    "softmax",
    "binning10",
    "binning50",
    "svm01",
    "svmpp",
    "beta",
    "sollich",
    "klr",
    "klr_cv",
)


@dataclass(frozen=True)
class ProbabilitiesSettings:
    """SPEC S2 / S4 comparison: kernels, baselines (SPEC S4 names), inner CV folds."""

    kernels: tuple[str, ...] = ("linear", "rbf")
    baselines: tuple[str, ...] = _PROB_BASELINES
    inner_cv: int = 5

    def __post_init__(self) -> None:
        bad = [k for k in self.kernels if k not in ("linear", "rbf")]
        if not self.kernels or bad:
            raise ConfigError(
                f"probabilities.kernels must be a non-empty list of linear, rbf; got {self.kernels}"
            )
        bad = [b for b in self.baselines if b not in _PROB_BASELINES]
        if bad:
            raise ConfigError(
                f"probabilities.baselines: unknown {bad}; choose from {list(_PROB_BASELINES)}"
            )
        if self.inner_cv < 2:
            raise ConfigError(
                f"probabilities.inner_cv must be >= 2; got {self.inner_cv}"
            )


@dataclass(frozen=True)
class ImpliedSettings:
    """SPEC S3: the german tutorial split and the CV comparison on ``data.datasets``.

    ``german_rows``: the first rows of german (numeric) train, the last as many test.
    ``n_splits``: repeated german splits of german_rows / german_rows (split 0 the
    tutorial's).
    """

    C: float = 10.0
    gamma: float = 0.001
    n_models: int = 201
    german_scale: str = "none"
    german_rows: int = 500
    n_splits: int = 20

    def __post_init__(self) -> None:
        _positive(self.C, "implied.C")
        _positive(self.gamma, "implied.gamma")
        if self.n_models < 3:
            raise ConfigError(f"implied.n_models must be >= 3; got {self.n_models}")
        if self.n_splits < 0:
            raise ConfigError(f"implied.n_splits must be >= 0; got {self.n_splits}")
        if self.german_rows < 10:
            raise ConfigError(
                f"implied.german_rows must be >= 10; got {self.german_rows}"
            )
        if self.german_scale not in ("none", "standard"):
            raise ConfigError(
                f"implied.german_scale must be none or standard; got {self.german_scale!r}"
            )


@dataclass(frozen=True)
class SensitivitySettings:
    """SPEC S1 / S1b: C+ = C * 2^k, ``n_grid`` values of k in [-span, span].

    ``C_large``: C- of the hard-negative sweeps (the paper's C- = infinity).
    """

    C: float = 1.0
    n_grid: int = 33
    span: float = 8.0
    C_large: float = 1e4

    def __post_init__(self) -> None:
        _positive(self.C, "sensitivity.C")
        _positive(self.C_large, "sensitivity.C_large")
        _positive(self.span, "sensitivity.span")
        if self.n_grid < 2:
            raise ConfigError(f"sensitivity.n_grid must be >= 2; got {self.n_grid}")


@dataclass(frozen=True)
class CsvmSettings:
    """SPEC S5 (thesis ch. 2): inner CV grid, compression, Hoeffding margin, solver part.

    ``hoeffding_alpha`` = 0 imposes the sample floor without margin;
    ``protocol.n_folds`` is used below ``large_rows`` rows, ``large_folds`` above.
    """

    inner_folds: int = 3
    grid_exponents: tuple[int, ...] = (-5, -3, -1, 1, 3, 5)
    max_per_class: int = 40
    hoeffding_alpha: float = 0.0
    large_rows: int = 1000
    large_folds: int = 5
    solver_sizes: tuple[int, ...] = (100, 200, 400, 1000)
    solver_rbf_sizes: tuple[int, ...] = (60, 100, 150)
    solver_time_limit: float = 120.0
    run_cv: bool = True

    def __post_init__(self) -> None:
        if self.inner_folds < 2:
            raise ConfigError(f"csvm.inner_folds must be >= 2; got {self.inner_folds}")
        if not self.grid_exponents:
            raise ConfigError("csvm.grid_exponents must not be empty")
        if self.max_per_class < 1:
            raise ConfigError(
                f"csvm.max_per_class must be >= 1; got {self.max_per_class}"
            )
        if not 0.0 <= self.hoeffding_alpha < 1.0:
            raise ConfigError(
                f"csvm.hoeffding_alpha must lie in [0, 1); got {self.hoeffding_alpha}"
            )
        _positive(self.solver_time_limit, "csvm.solver_time_limit")


@dataclass(frozen=True)
class CostSensitiveSettings:
    """Ctrl1 vs Ctrl2 (SPEC S2, S5): the imposed TPR values.

    ``uncontrolled`` adds the column t = 0 (no control: the plain bootstrap SVM, which
    both controls reduce to when nothing is imposed).
    """

    tprs: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
    uncontrolled: bool = True

    def __post_init__(self) -> None:
        if not self.tprs or any(not 0.0 < t <= 1.0 for t in self.tprs):
            raise ConfigError(
                f"cost_sensitive.tprs must be values in (0, 1]; got {self.tprs}"
            )


@dataclass(frozen=True)
class FeatureSelectionSettings:
    """SPEC S6 (thesis ch. 4): inner CV over C, validation-rate targets, compression.

    ``target_slack``: p0 = min{1, max{0, rate0 - slack}} from the inner-CV validation
    rates; ``hoeffding_alpha``: the Hoeffding variant; outer CV is leave-one-out below
    ``loo_below_rows`` rows; ``max_rows_per_class`` > 0: per-class k-means before the
    MILP / MIQP (0: none, as in the thesis); ``max_train_rows`` > 0 subsamples large
    training folds.
    """

    C_grid: tuple[float, ...] = tuple(2.0**k for k in range(-5, 6))
    inner_folds: int = 10
    loo_below_rows: int = 100
    target_slack: float = 0.025
    hoeffding_alpha: float = 0.05
    max_rows_per_class: int = 150
    max_train_rows: int = 0
    gamma: str = "scale"

    def __post_init__(self) -> None:
        if not self.C_grid or any(
            not (math.isfinite(c) and c > 0) for c in self.C_grid
        ):
            raise ConfigError(
                "feature_selection.C_grid must be non-empty, finite, > 0; "
                f"got {self.C_grid}"
            )
        if self.inner_folds < 2:
            raise ConfigError(
                f"feature_selection.inner_folds must be >= 2; got {self.inner_folds}"
            )
        if self.loo_below_rows < 0:
            raise ConfigError(
                "feature_selection.loo_below_rows must be >= 0; "
                f"got {self.loo_below_rows}"
            )
        if not 0.0 <= self.target_slack < 1.0:
            raise ConfigError(
                "feature_selection.target_slack must lie in [0, 1); "
                f"got {self.target_slack}"
            )
        if not 0.0 < self.hoeffding_alpha < 1.0:
            raise ConfigError(
                "feature_selection.hoeffding_alpha must lie in (0, 1); "
                f"got {self.hoeffding_alpha}"
            )
        if self.max_rows_per_class < 0 or self.max_rows_per_class == 1:
            raise ConfigError(
                "feature_selection.max_rows_per_class must be 0 (no compression) "
                f"or >= 2; got {self.max_rows_per_class}"
            )
        if self.max_train_rows < 0:
            raise ConfigError(
                "feature_selection.max_train_rows must be >= 0; "
                f"got {self.max_train_rows}"
            )
        _check_gamma(self.gamma, "feature_selection.gamma")

    @property
    def gamma_value(self) -> float | str:
        """``gamma`` as the estimators take it."""
        return _gamma_value(self.gamma)


@dataclass(frozen=True)
class DeaSettings:
    """SPEC S7: selection path length, cross-preference sizes, the synthetic scale test.

    ``tiny`` cuts NVE to 30 DMUs and 6 outputs (a smoke run).
    """

    p_max: int = 10
    cross_p: tuple[int, ...] = (1, 2, 3, 5, 10)
    scale_k: int = 1000
    scale_m: int = 100
    scale_p: int = 5
    scale_time_limit: float = 120.0
    run_scale: bool = True
    tiny: bool = False

    def __post_init__(self) -> None:
        if self.p_max < 1:
            raise ConfigError(f"dea.p_max must be >= 1; got {self.p_max}")
        if not self.cross_p or min(self.cross_p) < 1:
            raise ConfigError(f"dea.cross_p must be values >= 1; got {self.cross_p}")
        if self.scale_k < 2 or self.scale_m < 1 or self.scale_p < 1:
            raise ConfigError("dea.scale_k must be >= 2, scale_m and scale_p >= 1")
        _positive(self.scale_time_limit, "dea.scale_time_limit")


@dataclass(frozen=True)
class ReportConfig:
    """Outputs: plots on/off and how many held-out rows get score intervals."""

    plots: bool = True
    n_interval_samples: int = 20

    def __post_init__(self) -> None:
        if self.n_interval_samples < 1:
            raise ConfigError(
                f"report.n_interval_samples must be >= 1; got {self.n_interval_samples}"
            )


@dataclass(frozen=True)
class ExperimentConfig:
    """Every knob of one run; ``experiment`` names the protocol (see ``EXPERIMENTS``)."""

    experiment: str = "bootstrap"
    name: str = "bootstrap_breast_cancer"
    device: str = "cpu"
    data: DataConfig = field(default_factory=DataConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    solver: SolverSettings = field(default_factory=SolverSettings)
    mip: MipConfig = field(default_factory=MipConfig)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)
    probabilities: ProbabilitiesSettings = field(default_factory=ProbabilitiesSettings)
    implied: ImpliedSettings = field(default_factory=ImpliedSettings)
    sensitivity: SensitivitySettings = field(default_factory=SensitivitySettings)
    csvm: CsvmSettings = field(default_factory=CsvmSettings)
    cost_sensitive: CostSensitiveSettings = field(default_factory=CostSensitiveSettings)
    feature_selection: FeatureSelectionSettings = field(
        default_factory=FeatureSelectionSettings
    )
    dea: DeaSettings = field(default_factory=DeaSettings)
    report: ReportConfig = field(default_factory=ReportConfig)

    def __post_init__(self) -> None:
        if self.experiment not in EXPERIMENTS:
            raise ConfigError(
                f"experiment must be one of {sorted(EXPERIMENTS)}; got {self.experiment!r}"
            )
        if self.device not in ("cpu", "cuda"):
            raise ConfigError(f"device must be 'cpu' or 'cuda'; got {self.device!r}")
        if self.experiment == "bootstrap" and len(self.data.datasets) != 1:
            raise ConfigError(
                "experiment 'bootstrap' runs one dataset; data.datasets has "
                f"{len(self.data.datasets)}"
            )

    @property
    def sections(self) -> tuple[str, ...]:
        """The sections this experiment reads."""
        return EXPERIMENTS[self.experiment]

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict of the keys this experiment reads (tuples become lists)."""
        d = _plain(dataclasses.asdict(self))
        keep = {"experiment", "name", "device", *self.sections}
        return {k: v for k, v in d.items() if k in keep}


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


#: Keys that do not change a unit's numbers (a run folder may be resumed with others).
_NOT_FINGERPRINTED = ("name", "device", "report")
#: Keys that only select WHICH units run (each unit's key names its dataset, kernel,
#: fold, imposed TPR, ...): a run folder can grow by more datasets or kernels, or run
#: a subset, and keeps the units it has.
_SELECTION_KEYS = (
    ("data", "datasets"),
    ("protocol", "max_folds"),
    ("probabilities", "kernels"),
    ("cost_sensitive", "tprs"),
    ("cost_sensitive", "uncontrolled"),
)


def _result_settings(cfg: ExperimentConfig) -> dict[str, Any]:
    d = cfg.to_dict()
    for k in _NOT_FINGERPRINTED:
        d.pop(k, None)
    for sec, key in _SELECTION_KEYS:
        d.get(sec, {}).pop(key, None)
    return d


def config_fingerprint(cfg: ExperimentConfig) -> str:
    """sha256 (16 hex digits) of everything that changes a unit's results.

    Not in it: ``name``, ``device``, ``report`` and the keys that only select units
    (``data.datasets``, ``protocol.max_folds``, ``probabilities.kernels``,
    ``cost_sensitive.tprs`` / ``uncontrolled``).
    """
    blob = json.dumps(_result_settings(cfg), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def config_diff(old: ExperimentConfig, new: ExperimentConfig) -> list[str]:
    """``key: old -> new`` for every result-changing key that differs."""

    def flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, Mapping):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    a, b = flat(_result_settings(old)), flat(_result_settings(new))
    return [
        f"{k}: {a.get(k, '(unset)')!r} -> {b.get(k, '(unset)')!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]


def _type_name(typ: Any) -> str:
    return typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """Convert a TOML (or ``--set`` string) value to the field type, or raise."""
    name = _type_name(typ)
    str_list = get_origin(typ) is tuple and get_args(typ)[0] is str
    if isinstance(value, str) and typ is not str and not str_list:
        try:
            value = tomllib.loads(f"v = {value}")["v"]
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{key}: cannot parse {value!r} as {name}") from exc
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false; got {value!r}")
        return value
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} must be an integer; got {value!r}")
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key} must be a number; got {value!r}")
        return float(value)
    if typ is str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string; got {value!r}")
        return value
    if get_origin(typ) is tuple:
        item = get_args(typ)[0]
        if isinstance(value, str) and item is str:
            # ``--set data.datasets=a,b`` (a TOML list also works)
            try:
                value = tomllib.loads(f"v = {value}")["v"]
            except tomllib.TOMLDecodeError:
                value = [s.strip() for s in value.split(",") if s.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{key} must be a list; got {value!r}")
        return tuple(_coerce(v, item, key) for v in value)
    raise ConfigError(f"{key}: unsupported type {name}")  # pragma: no cover


def _build(cls: type, values: Mapping[str, Any], prefix: str) -> Any:
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    fields = {f.name for f in dataclasses.fields(cls)}
    for key, val in values.items():
        full = f"{prefix}{key}"
        if key not in fields:
            raise ConfigError(f"unknown config key {full!r}; known: {sorted(fields)}")
        typ = hints[key]
        if dataclasses.is_dataclass(typ):
            if not isinstance(val, Mapping):
                raise ConfigError(f"{full} must be a table [{full}]")
            kwargs[key] = _build(typ, val, f"{full}.")  # type: ignore[arg-type]
        else:
            kwargs[key] = _coerce(val, typ, full)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:  # e.g. MipConfig's own checks
        raise ConfigError(f"[{prefix.rstrip('.') or 'config'}] {exc}") from exc


def _set_override(tree: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise ConfigError(f"--set expects key=value; got {assignment!r}")
    key, raw = assignment.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"--set expects key=value; got {assignment!r}")
    node = tree
    for p in parts[:-1]:
        nxt = node.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"--set {key}: {p!r} is not a section")
        node = nxt
    node[parts[-1]] = raw.strip()


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = ()
) -> ExperimentConfig:
    """Read a TOML config (defaults when ``path`` is None) and apply ``key=value`` overrides.

    Raises
    ------
    ConfigError
        Missing or unparsable file, unknown key, bad type or out-of-range value, or a
        section the named ``experiment`` does not read.
    """
    tree: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            tree = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}".splitlines()[0]) from exc
    for ov in overrides:
        _set_override(tree, ov)
    cfg = _build(ExperimentConfig, tree, "")
    foreign = [
        k for k, v in tree.items() if isinstance(v, Mapping) and k not in cfg.sections
    ]
    if foreign:
        raise ConfigError(
            f"section [{foreign[0]}] does not apply to experiment {cfg.experiment!r} "
            f"(it reads {', '.join(cfg.sections)})"
        )
    return cfg


def to_toml(cfg: ExperimentConfig) -> str:
    """The resolved config as TOML text (loads back to an equal config)."""
    d = cfg.to_dict()
    lines = [f"{k} = {_toml_value(v)}" for k, v in d.items() if not isinstance(v, dict)]
    for sec, body in d.items():
        if isinstance(body, dict):
            lines.append(f"\n[{sec}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)
