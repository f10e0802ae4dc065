"""torchsvm: batched weighted SVMs on CPU/GPU with trustworthy probabilities.

See README.md and SPEC S1-S8 for the methods.
"""

from __future__ import annotations

import os as _os

# The batched solvers issue thousands of short tensor ops. With OpenMP's default
# (active, spinning) wait policy, idle worker threads spin between ops, and on a machine
# with any other load the process slows down ~20x (measured: the solve of one
# breast_cancer fold, 5500 linear SVMs, 2 cores shared with one busy process: 176 s
# spinning vs 9.8-12.2 s passive).
# Only takes effect when torch was not imported before torchsvm; a value the user set
# is kept.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from torchsvm import dea, metrics  # noqa: E402
from torchsvm.config import SolverConfig
from torchsvm.data.datasets import Dataset, list_datasets, load_dataset
from torchsvm.estimators.bootstrap import BootstrapProbabilitySVC
from torchsvm.estimators.calibration import (
    BetaCalibrator,
    BinningCalibrator,
    CalibratedSVC,
    IsotonicCalibrator,
    PlattCalibrator,
    SoftmaxCalibrator,
    SollichCalibrator,
    Svm01Calibrator,
    SvmPPCalibrator,
    make_calibrator,
)
from torchsvm.estimators.csvm import (
    ConstrainedSVC,
    SlidingInterceptSVC,
    fit_s5c_ensemble,
)
from torchsvm.estimators.dea import DeaOutputSelector
from torchsvm.estimators.implied import ImpliedPosteriorSVC
from torchsvm.estimators.kernel_logistic import (
    KernelLogisticRegression,
    KernelLogisticRegressionCV,
)
from torchsvm.estimators.persistence import load_model, save_model
from torchsvm.estimators.selection import (
    CardinalityConstrainedSVC,
    CostSensitiveFeatureSelector,
)
from torchsvm.estimators.sensitivity import (
    RocSweepDisplay,
    SensitivitySweepSVC,
    roc_sweep_cv,
)
from torchsvm.estimators.svc import BatchedSVC, WeightedSVC
from torchsvm.exceptions import (
    ConvergenceWarning,
    DataError,
    DatasetNotFoundError,
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
    TorchSvmError,
)
from torchsvm.mip.model import MipConfig, MipModel, MipResult
from torchsvm.mip.outer_approx import solve_convex_miqp
from torchsvm.mip.solve import solve_model
from torchsvm.problems.csvm import FloorCappedWarning
from torchsvm.problems.svm import BatchedSvmProblem
from torchsvm.solvers.box_qp import BoxQpSolver
from torchsvm.solvers.solution import BatchedSvmSolution
from torchsvm.types import SolveStatus

__version__ = "0.1.0"

__all__ = [
    "MipResult",
    "MipModel",
    "MipConfig",
    "ConstrainedSVC",
    "DeaOutputSelector",
    "FloorCappedWarning",
    "SlidingInterceptSVC",
    "BatchedSVC",
    "BatchedSvmProblem",
    "BatchedSvmSolution",
    "BetaCalibrator",
    "BinningCalibrator",
    "BootstrapProbabilitySVC",
    "BoxQpSolver",
    "CalibratedSVC",
    "CardinalityConstrainedSVC",
    "CostSensitiveFeatureSelector",
    "ConvergenceWarning",
    "DataError",
    "Dataset",
    "DatasetNotFoundError",
    "ImpliedPosteriorSVC",
    "InfeasibleProblemError",
    "IsotonicCalibrator",
    "KernelLogisticRegression",
    "KernelLogisticRegressionCV",
    "PlattCalibrator",
    "RocSweepDisplay",
    "SensitivitySweepSVC",
    "SoftmaxCalibrator",
    "SolveStatus",
    "SolverConfig",
    "SolverError",
    "SolverTimeLimitWarning",
    "SollichCalibrator",
    "Svm01Calibrator",
    "SvmPPCalibrator",
    "TorchSvmError",
    "WeightedSVC",
    "__version__",
    "solve_model",
    "solve_convex_miqp",
    "fit_s5c_ensemble",
    "dea",
    "list_datasets",
    "load_dataset",
    "load_model",
    "save_model",
    "make_calibrator",
    "metrics",
    "roc_sweep_cv",
]
