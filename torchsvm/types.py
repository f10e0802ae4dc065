"""Shared type aliases and the project-wide solve status enum."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import torch

ArrayLike: TypeAlias = npt.ArrayLike
NDArray: TypeAlias = npt.NDArray[Any]
Tensor: TypeAlias = torch.Tensor
FloatArray: TypeAlias = npt.NDArray[np.float64]


class SolveStatus(StrEnum):
    """Outcome of a solve, shared by the batched GPU solver and the MIP stage.

    The integer codes (``code``) are what batched solutions store in tensors.
    """

    optimal = "optimal"
    max_iter = "max_iter"
    time_limit = "time_limit"
    infeasible = "infeasible"
    unbounded = "unbounded"
    not_solved = "not_solved"
    error = "error"

    @property
    def code(self) -> int:
        return _CODES[self]

    @classmethod
    def from_code(cls, code: int) -> SolveStatus:
        return _FROM_CODE[int(code)]

    @classmethod
    def resolve(cls, value: str | SolveStatus) -> SolveStatus:
        if isinstance(value, SolveStatus):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ValueError(
                f"unknown status {value!r}; expected one of {[s.value for s in cls]}"
            ) from None


_CODES = {s: i for i, s in enumerate(SolveStatus)}
_FROM_CODE = {i: s for s, i in _CODES.items()}
