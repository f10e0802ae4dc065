"""DEA output selection as a scikit-learn style estimator (SPEC S7).

``DeaOutputSelector().fit(X_in, Y_out)`` solves the joint selection OSDEA(p) (or the
individual one for ``dmu=k``) through :func:`torchsvm.mip.dea.solve_selection` and
stores the chosen outputs and the efficiencies as learned attributes;
``transform(Y_out)`` keeps the selected output columns.  The functional API is
:mod:`torchsvm.dea`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from torchsvm.estimators._base import (
    BaseEstimator,
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)
from torchsvm.mip.dea import solve_selection
from torchsvm.mip.model import MipConfig
from torchsvm.problems.dea import (
    OBJECTIVES,
    DeaSelectionProblem,
    SelectionConstraints,
    validate_dea_data,
)
from torchsvm.types import ArrayLike, NDArray

__all__ = ["DeaOutputSelector"]


class DeaOutputSelector(BaseEstimator):
    """Exact output selection in DEA (OSDEA, SPEC S7).

    Parameters
    ----------
    n_outputs : int
        Number p of outputs to select.
    objective : {"mean", "weighted", "min", "percentile", "quadratic"}
        Aggregate of the efficiencies (see :func:`torchsvm.dea.select_features`).
    weights : array of shape (K,), optional
        For ``objective="weighted"``.
    percentile : float, optional
        For ``objective="percentile"``.
    dmu : int, optional
        Individual model OSDEA(k) for this DMU; default the joint model.
    weight_bounds : (L, U), optional
    output_costs : array of shape (M,), optional
        With ``budget``.
    budget : float, optional
    clusters : list of (indices, p_min, p_max), optional
    max_correlation : float, optional
    time_limit : float
        Seconds for the whole fit.
    mip_rel_gap : float
        Relative gap at which the exact stage stops.
    warm_start : {"greedy", None}
    method : {"auto", "benders", "big_m"}

    Attributes
    ----------
    selected_outputs_ : ndarray of int
        Chosen output columns (sorted).
    support_ : ndarray of shape (M,) of bool
    efficiencies_ : ndarray of shape (K,)
        LP efficiencies of the training DMUs under the selection.
    objective_ : float
    bound_ : float
        Proven bound on the optimal objective.
    mip_gap_ : float
        Proven relative gap.
    status_ : SolveStatus
    result_ : DeaSelectionResult
        The full record.
    n_features_in_ : int
        Number of outputs M seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from torchsvm.estimators.dea import DeaOutputSelector
    >>> X = np.array([[1.0], [1.0], [1.0]])
    >>> Y = np.array([[1.0, 0.2], [0.5, 1.0], [0.2, 0.1]])
    >>> sel = DeaOutputSelector(n_outputs=1).fit(X, Y)
    >>> sel.selected_outputs_.tolist(), round(sel.objective_, 4)
    ([0], 0.5667)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "n_outputs": [Interval(Integral, 1, None, closed="left")],
        "objective": [StrOptions(set(OBJECTIVES))],
        "weights": ["array-like", None],
        "percentile": [Interval(Real, 0, 100, closed="right"), None],
        "dmu": [Interval(Integral, 0, None, closed="left"), None],
        "weight_bounds": [tuple, list, None],
        "output_costs": ["array-like", None],
        "budget": [Interval(Real, 0, None, closed="left"), None],
        "clusters": [list, tuple, None],
        "max_correlation": [Interval(Real, 0, 1, closed="both"), None],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_rel_gap": [Interval(Real, 0, None, closed="left")],
        "warm_start": [StrOptions({"greedy"}), None],
        "method": [StrOptions({"auto", "benders", "big_m"})],
    }

    def __init__(
        self,
        n_outputs: int = 1,
        *,
        objective: str = "mean",
        weights: ArrayLike | None = None,
        percentile: float | None = None,
        dmu: int | None = None,
        weight_bounds: tuple[ArrayLike, ArrayLike] | None = None,
        output_costs: ArrayLike | None = None,
        budget: float | None = None,
        clusters: list[tuple[list[int], int, int]] | None = None,
        max_correlation: float | None = None,
        time_limit: float = 300.0,
        mip_rel_gap: float = 1e-4,
        warm_start: str | None = "greedy",
        method: str = "auto",
    ) -> None:
        self.n_outputs = n_outputs
        self.objective = objective
        self.weights = weights
        self.percentile = percentile
        self.dmu = dmu
        self.weight_bounds = weight_bounds
        self.output_costs = output_costs
        self.budget = budget
        self.clusters = clusters
        self.max_correlation = max_correlation
        self.time_limit = time_limit
        self.mip_rel_gap = mip_rel_gap
        self.warm_start = warm_start
        self.method = method

    def _build_problem(self, X_in: ArrayLike, Y_out: ArrayLike) -> DeaSelectionProblem:
        X, Y = validate_dea_data(X_in, Y_out)
        cons = SelectionConstraints.make(
            Y,
            weight_bounds=self.weight_bounds,
            output_costs=self.output_costs,
            budget=self.budget,
            clusters=self.clusters,
            max_correlation=self.max_correlation,
        )
        return DeaSelectionProblem.make(
            X,
            Y,
            n_outputs=self.n_outputs,
            dmu=self.dmu,
            objective=self.objective,
            weights=self.weights,
            percentile=self.percentile,
            constraints=cons,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X_in: ArrayLike, Y_out: ArrayLike) -> DeaOutputSelector:
        """Select ``n_outputs`` outputs of ``Y_out`` for the DMUs with inputs ``X_in``.

        Parameters
        ----------
        X_in : array of shape (K, N)
            Non-negative inputs.
        Y_out : array of shape (K, M)
            Non-negative outputs.

        Returns
        -------
        self
        """
        problem = self._build_problem(X_in, Y_out)
        config = MipConfig(time_limit=self.time_limit, mip_rel_gap=self.mip_rel_gap)
        res = solve_selection(
            problem,
            time_limit=self.time_limit,
            config=config,
            warm_start=self.warm_start,
            method=self.method,
        )
        M = problem.Y.shape[1]
        self.selected_outputs_ = np.asarray(res.selected_outputs, dtype=np.int64)
        self.support_ = np.zeros(M, dtype=bool)
        self.support_[self.selected_outputs_] = True
        self.efficiencies_ = np.asarray(res.efficiencies, dtype=np.float64)
        self.objective_ = float(res.objective)
        self.bound_ = float(res.bound)
        self.mip_gap_ = float(res.mip_gap)
        self.status_ = res.status
        self.result_ = res
        self.n_features_in_ = M
        return self

    def get_support(self, indices: bool = False) -> NDArray:
        """Mask (or indices) of the selected outputs."""
        check_is_fitted(self, "support_")
        return self.selected_outputs_.copy() if indices else self.support_.copy()

    def transform(self, Y_out: ArrayLike) -> NDArray:
        """Keep the selected output columns of ``Y_out (K', M)``."""
        check_is_fitted(self, "support_")
        Y = np.asarray(Y_out, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] != self.n_features_in_:
            raise ValueError(
                f"Y_out must have shape (K, {self.n_features_in_}), got {Y.shape}"
            )
        return Y[:, self.selected_outputs_]
