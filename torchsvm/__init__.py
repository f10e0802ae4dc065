"""torchsvm: batched weighted SVMs on CPU/GPU with trustworthy probabilities.

See README.md and SPEC S1-S8 for the methods.
"""

from __future__ import annotations

from torchsvm.exceptions import (
    ConvergenceWarning,
    DataError,
    InfeasibleProblemError,
    SolverError,
    SolverTimeLimitWarning,
    TorchSvmError,
)
from torchsvm.types import SolveStatus

__version__ = "0.1.0"

__all__ = [
    "ConvergenceWarning",
    "DataError",
    "InfeasibleProblemError",
    "SolveStatus",
    "SolverError",
    "SolverTimeLimitWarning",
    "TorchSvmError",
    "__version__",
]
