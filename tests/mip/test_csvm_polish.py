"""S5c incumbents handed in by a caller, polished at this C before the first master.

Ctrl2's path (issue 18) hands each S5c MIQP the same floor's optimum at the previous
C. ``solve_csvm(polish_incumbents=...)`` solves that assignment's fixed-binary QP at
this C (:func:`~torchsvm.mip.csvm.incumbent_assignment`: ``z`` on the floor members it
meets, 0 on the rows of no floor). Oracles: cvxpy (Clarabel) for the fixed-binary QP
and brute force over ``z`` for the optimum (tests/mip/test_csvm.py).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from torchsvm.exceptions import ConvergenceWarning
from torchsvm.mip.csvm import (
    build_csvm_model,
    incumbent_assignment,
    solution_start,
    solve_csvm,
)
from torchsvm.mip.model import MipConfig, check_feasible, model_objective
from torchsvm.problems.csvm import CsvmProblem

from .test_csvm import make_data

cp = pytest.importorskip("cvxpy")


def s5c(C: float, min_tpr: float = 0.7, n: int = 10, seed: int = 3) -> CsvmProblem:
    """A linear S5c with a TPR floor only."""
    X, y = make_data(seed, n=n)
    return CsvmProblem.from_data(
        X,
        y,
        None,
        C=C,
        min_tpr=min_tpr,
        hoeffding_alpha=None,
        on_training=True,
    )


def fixed_z_qp(p: CsvmProblem, z: np.ndarray) -> float:
    """The S5c primal with ``z`` fixed, written directly in cvxpy (Clarabel)."""
    I, X, y, cost = p.train_idx, p.X, p.y, p.cost()
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    xi = cp.Variable(I.size, nonneg=True)
    cons = [
        cp.multiply(y[I], X[I] @ w + b) + xi >= 1,
        xi <= p.big_m * (1 - z),
    ]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(w) + cost[I] @ xi), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


def brute_force_tpr_only(p: CsvmProblem) -> float:
    """min over the positives' ``z`` meeting the floor of :func:`fixed_z_qp`, the
    negatives' ``z`` at 0 (in no floor, ``z = 1`` only drops their slack)."""
    I, y = p.train_idx, p.y
    pos = np.flatnonzero(y[I] > 0)
    (fl,) = p.floors
    best = np.inf
    for bits in itertools.product([0.0, 1.0], repeat=pos.size):
        z = np.zeros(I.size)
        z[pos] = bits
        if float(p.weights[I] @ z) < fl.required - 1e-9:
            continue
        best = min(best, fixed_z_qp(p, z))
    return best


def test_incumbent_assignment_keeps_the_floor_and_drops_the_negatives_z() -> None:
    low, high = s5c(C=2.0), s5c(C=8.0)
    prev = solve_csvm(low, MipConfig(time_limit=60))
    model, layout, _ = build_csvm_model(high)
    x = solution_start(high, layout, prev)
    assert x is not None
    x2 = incumbent_assignment(high, layout, x)
    assert check_feasible(model, x, tol=1e-6)[0]
    assert check_feasible(model, x2, tol=1e-6)[0]
    neg = high.y[layout.floor_idx] < 0
    z, z2 = x[layout.z], x2[layout.z]
    assert np.all(z2[neg] == 0) and np.array_equal(z2[~neg], z[~neg])
    assert np.any(z[neg] == 1)  # the test would pass with the identity otherwise
    # the same point with fewer z = 1: same objective, still feasible
    assert model_objective(model, x2) == pytest.approx(model_objective(model, x))


@pytest.mark.parametrize("polish", [False, True])
def test_the_previous_c_incumbent_polished_is_its_fixed_binary_qp(
    polish: bool,
) -> None:
    """No start and no master: only the handed-in incumbent can come back. Polished,
    it is the optimum of its assignment's QP at this C (cvxpy), below the point as
    handed in; not polished, it is the point as handed in."""
    low, high = s5c(C=2.0), s5c(C=8.0)
    prev = solve_csvm(low, MipConfig(time_limit=60))
    model, layout, _ = build_csvm_model(high)
    x = incumbent_assignment(high, layout, solution_start(high, layout, prev))
    as_handed = model_objective(model, x)
    with pytest.warns(ConvergenceWarning):
        got = solve_csvm(
            high,
            MipConfig(time_limit=60),
            use_start=False,
            max_rounds=0,
            incumbents=[prev],
            polish_incumbents=polish,
        )
    if polish:
        ref = fixed_z_qp(high, x[layout.z])
        assert got.objective == pytest.approx(ref, rel=1e-5, abs=1e-7)
        assert got.objective < as_handed - 1e-6  # the QP moved the point
    else:
        assert got.objective == pytest.approx(as_handed, rel=1e-9)


@pytest.mark.parametrize("min_tpr", [0.6, 0.9])
@pytest.mark.parametrize("polish", [False, True])
def test_s5c_with_polished_incumbents_is_the_brute_force_optimum(
    min_tpr: float, polish: bool
) -> None:
    """Seed 4: at t = 0.7 the previous C's assignment is not the optimum's here."""
    prev = solve_csvm(s5c(4.0, min_tpr, n=12, seed=4), MipConfig(time_limit=60))
    p = s5c(16.0, min_tpr, n=12, seed=4)
    got = solve_csvm(
        p, MipConfig(time_limit=60), incumbents=[prev], polish_incumbents=polish
    )
    ref = brute_force_tpr_only(p)
    assert got.status == "optimal"
    assert got.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert got.bound <= got.objective + 1e-9


def test_polish_incumbents_value_is_checked() -> None:
    with pytest.raises(ValueError, match="polish_incumbents"):
        solve_csvm(s5c(C=1.0), MipConfig(time_limit=10), polish_incumbents="yes")


def test_repaired_assignment_meets_the_floor_with_the_highest_margins() -> None:
    """A lower floor's optimum misses a higher floor; repaired, its ``z`` meets it
    with the members of highest margin and nothing else."""
    from torchsvm.mip.csvm import repaired_assignment

    low = solve_csvm(s5c(4.0, 0.3, n=12, seed=4), MipConfig(time_limit=60))
    p = s5c(4.0, 0.95, n=12, seed=4)
    model, layout, _ = build_csvm_model(p)
    x = solution_start(p, layout, low)
    assert not check_feasible(model, x, tol=1e-6)[0]  # misses the higher floor
    x2 = repaired_assignment(p, layout, x)
    z = x2[layout.z]
    F = layout.floor_idx
    pos = p.y[F] > 0
    (fl,) = p.floors
    assert float(p.weights[F] @ z) >= fl.required - 1e-9
    assert np.all(z[~pos] == 0)
    marg = p.y[F] * (p.X[F] @ low.coef + low.intercept)
    assert marg[pos & (z == 1)].min() >= marg[pos & (z == 0)].max(initial=-np.inf)
    # the fewest members: dropping the lowest chosen one misses the floor
    chosen = np.flatnonzero(pos & (z == 1))
    last = chosen[np.argmin(marg[chosen])]
    assert float(p.weights[F] @ z) - p.weights[F][last] < fl.required - 1e-9


@pytest.mark.parametrize("min_tpr", [0.6, 0.9])
def test_s5c_with_a_repaired_lower_floor_optimum_is_the_brute_force_optimum(
    min_tpr: float,
) -> None:
    low = solve_csvm(s5c(16.0, 0.3, n=12, seed=4), MipConfig(time_limit=60))
    p = s5c(16.0, min_tpr, n=12, seed=4)
    got = solve_csvm(p, MipConfig(time_limit=60), repair=[low])
    assert got.status == "optimal"
    assert got.objective == pytest.approx(brute_force_tpr_only(p), rel=1e-4, abs=1e-6)
    with warnings.catch_warnings():
        # max_rounds=0 warns unless the relaxation's bound already closes the gap
        warnings.simplefilter("ignore", ConvergenceWarning)
        only = solve_csvm(
            p, MipConfig(time_limit=60), use_start=False, max_rounds=0, repair=[low]
        )
    # no start, no master: the repaired assignment's own QP (cvxpy) comes back
    model, layout, _ = build_csvm_model(p)
    from torchsvm.mip.csvm import repaired_assignment

    x = repaired_assignment(p, layout, solution_start(p, layout, low))
    assert only.objective == pytest.approx(
        fixed_z_qp(p, x[layout.z]), rel=1e-5, abs=1e-7
    )


@pytest.mark.parametrize("min_tpr", [0.6, 0.9])
def test_s5c_slack_bounds_kept_under_a_lower_cutoff_keep_the_optimum(
    min_tpr: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S5C_TIGHTEN_REFRESH: the slack bounds computed under an earlier, higher cutoff
    are kept (valid, looser) until the cutoff falls by that share; the optimum is
    still brute force's, with a refresh large enough that none is computed again."""
    import torchsvm.mip.csvm as csvm_mod

    calls: list[float] = []
    real = csvm_mod.anchor_tightening

    def spy(problem, layout, refresh=0.0, **kw):  # type: ignore[no-untyped-def]
        calls.append(refresh)
        return real(problem, layout, refresh, **kw)

    monkeypatch.setattr(csvm_mod, "anchor_tightening", spy)
    monkeypatch.setattr(csvm_mod, "S5C_TIGHTEN_REFRESH", 10.0)
    p = s5c(16.0, min_tpr, n=12, seed=4)
    got = solve_csvm(p, MipConfig(time_limit=60), tighten_anchors=True)
    assert calls == [10.0]
    assert got.status == "optimal"
    assert got.objective == pytest.approx(brute_force_tpr_only(p), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("seed", [3, 4, 5])
@pytest.mark.parametrize("min_tpr", [0.5, 0.7])
def test_s5c_slack_bounds_from_the_box_alone_keep_the_optimum(
    min_tpr: float, seed: int
) -> None:
    """S5c tightened from the first master with every slack's big-M from the box of
    ``(w, b)`` alone (``anchor_lps=False``: no LP per floor member): a superset of
    the polytope the LPs bound over, so the optimum is still brute force's."""
    p = s5c(0.25, min_tpr, n=12, seed=seed)
    got = solve_csvm(
        p, MipConfig(time_limit=60), tighten_anchors=True, anchor_lps=False
    )
    ref = brute_force_tpr_only(p)
    assert got.status == "optimal"
    assert got.objective == pytest.approx(ref, rel=1e-4, abs=1e-6)
    assert got.bound <= got.objective + 1e-9
    assert got.tightened_masters >= 1
