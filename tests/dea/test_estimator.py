"""DeaOutputSelector (SPEC S7 front end) against brute force and the functional API."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.dea.oracles import all_efficiencies, brute_force
from torchsvm import dea
from torchsvm.estimators.dea import DeaOutputSelector
from torchsvm.exceptions import DataError
from torchsvm.types import SolveStatus


def _data(seed: int, K: int = 10, M: int = 6):
    rng = np.random.default_rng(seed)
    return rng.uniform(1.0, 3.0, (K, 1)), rng.uniform(0.0, 1.0, (K, M))


def test_selector_matches_brute_force(seed):
    X, Y = _data(seed)
    sel = DeaOutputSelector(n_outputs=2).fit(X, Y)
    assert sel.status_ == SolveStatus.optimal
    assert sel.objective_ == pytest.approx(brute_force(X, Y, 2), abs=1e-6)
    np.testing.assert_allclose(
        sel.efficiencies_, all_efficiencies(X, Y[:, sel.selected_outputs_]), atol=1e-7
    )
    assert sel.get_support().sum() == 2
    np.testing.assert_array_equal(sel.transform(Y), Y[:, sel.selected_outputs_])
    assert sel.mip_gap_ <= 1e-4


def test_selector_equals_functional_api(seed):
    X, Y = _data(seed, M=5)
    kw = {"output_costs": np.arange(1.0, 6.0), "budget": 6.0}
    sel = DeaOutputSelector(n_outputs=2, **kw).fit(X, Y)
    res = dea.select_features(X, Y, n_outputs=2, **kw)
    assert sel.objective_ == pytest.approx(res.objective, abs=1e-9)
    assert sel.result_.objective == pytest.approx(res.objective, abs=1e-9)


def test_selector_individual_and_pickle(seed):
    X, Y = _data(seed)
    sel = DeaOutputSelector(n_outputs=3, dmu=4).fit(X, Y)
    assert sel.objective_ == pytest.approx(brute_force(X, Y, 3, dmu=4), abs=1e-6)
    again = pickle.loads(pickle.dumps(sel))
    np.testing.assert_array_equal(again.selected_outputs_, sel.selected_outputs_)


def test_selector_errors():
    X, Y = _data(0)
    with pytest.raises(ValueError, match="n_outputs"):
        DeaOutputSelector(n_outputs=0).fit(X, Y)
    with pytest.raises(DataError):
        DeaOutputSelector(n_outputs=1).fit(-X, Y)
    sel = DeaOutputSelector(n_outputs=1)
    with pytest.raises(Exception, match="not fitted"):
        sel.transform(Y)
    sel.fit(X, Y)
    with pytest.raises(ValueError, match="shape"):
        sel.transform(Y[:, :3])
