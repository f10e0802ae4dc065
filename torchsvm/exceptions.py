"""Exception and warning hierarchy (BoTorch style): filter by class, not by message."""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning


class TorchSvmError(Exception):
    """Base class of every error raised by torchsvm."""


class InfeasibleProblemError(TorchSvmError, ValueError):
    """The requested constraints (rate floors, budgets, cardinalities) cannot be met."""


class SolverError(TorchSvmError, RuntimeError):
    """An underlying solver failed in a way that leaves no usable solution."""


class DataError(TorchSvmError, ValueError):
    """Input data is malformed (shape, NaN/inf, classes, weights)."""


class DatasetNotFoundError(TorchSvmError, FileNotFoundError):
    """A staged dataset file is missing; the message says which file and where to get it."""


class TorchSvmWarning(UserWarning):
    """Base class of torchsvm warnings."""


class SolverTimeLimitWarning(TorchSvmWarning):
    """A solver stopped at its time limit; the incumbent is returned with its proven gap."""


class ConvergenceWarning(TorchSvmWarning, _SklearnConvergenceWarning):
    """An iterative solver stopped before reaching its tolerance.

    A subclass of :class:`sklearn.exceptions.ConvergenceWarning`, so scikit-learn's
    filters (and ``pytest.warns(sklearn.exceptions.ConvergenceWarning)``) catch it.
    """
