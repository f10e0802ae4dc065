"""Ray backend on a local 2-CPU instance: same figures as local, resume, failures.

Skipped cleanly where Ray is not importable (``pip install -e ".[ray]"``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from torchsvm.config import load_config  # noqa: E402
from torchsvm.estimators.bootstrap import (  # noqa: E402
    BootstrapProbabilitySVC,
    fit_replicates_distributed,
    solve_replicates,
)
from torchsvm.experiments import run_experiment  # noqa: E402
from torchsvm.parallel import map_chunks, ray_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "configs" / "bootstrap-tiny.toml"
FAST = ["bootstrap.n_bootstrap=6", "report.plots=false"]

pytestmark = [pytest.mark.ray, pytest.mark.slow]


@pytest.fixture(scope="module")
def ray_instance():  # noqa: ANN201
    with ray_session(None, num_workers=2) as r:
        yield r


def _assert_same_figures(a: object, b: object, path: str = "figures") -> None:
    """Equal structure, equal non-floats, floats equal to 1e-12 relative.

    NOTE: a Ray task has one CPU, so torch runs it single-threaded, while the local
    driver uses every core; BLAS reductions then sum in another order and a figure can
    differ in its last bits (verified: with OMP_NUM_THREADS=1 for the driver too, the
    figures are bit-identical).
    """
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            _assert_same_figures(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_figures(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        # a duality gap at rounding level (1e-15) is all summation order: its last
        # bits, not 1e-12 of it, are what a thread count changes
        tiny = 1e-12 if path.rsplit(".", 1)[-1].endswith("gap") else 1e-15
        assert b == pytest.approx(a, rel=1e-12, abs=tiny, nan_ok=True), path
    else:
        assert a == b, path


def _csv_values(path: Path) -> list[list[str | float]]:
    rows = []
    for line in path.read_text().splitlines():
        row: list[str | float] = []
        for cell in line.split(","):
            try:
                row.append(float(cell))
            except ValueError:
                row.append(cell)
        rows.append(row)
    return rows


def _square(x: int) -> int:
    return x * x


def test_map_chunks_keeps_order(ray_instance) -> None:  # noqa: ANN001
    assert map_chunks(_square, [3, 1, 2]) == [9, 1, 4]


def test_ray_backend_equals_local_and_resumes(ray_instance, tmp_path: Path) -> None:  # noqa: ANN001
    cfg = load_config(TINY, FAST)
    local = run_experiment(cfg, tmp_path / "local")
    remote = run_experiment(cfg, tmp_path / "ray", backend="ray")
    assert remote.report["meta"]["backend"] == "ray"
    _assert_same_figures(remote.report["figures"], local.report["figures"])
    _assert_same_figures(
        _csv_values(tmp_path / "ray" / "predictions.csv"),
        _csv_values(tmp_path / "local" / "predictions.csv"),
    )
    # a driver that stopped after two units: the ray run resumes from the files
    (tmp_path / "ray" / "units" / "breast_cancer" / "fold_01.json").unlink()
    again = run_experiment(cfg, tmp_path / "ray", backend="ray")
    assert again.n_resumed == 2
    _assert_same_figures(again.report["figures"], local.report["figures"])


def test_ray_failed_unit_is_reported(ray_instance, tmp_path: Path) -> None:  # noqa: ANN001
    # every unit fails inside its Ray task (unknown dataset); the run still reports
    cfg = load_config(TINY, [*FAST, "data.datasets=no_such_dataset"])
    res = run_experiment(cfg, tmp_path, backend="ray")
    assert set(res.failures) == {f"no_such_dataset/fold_0{k}" for k in range(3)}
    assert all("no_such_dataset" in msg for msg in res.failures.values())
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["meta"]["n_failed"] == 3


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_replicate_chunks_on_ray_equal_one_batch(ray_instance, kernel: str) -> None:  # noqa: ANN001
    import numpy as np
    from sklearn.datasets import make_classification

    from torchsvm import BootstrapProbabilitySVC
    from torchsvm.kernels import compute_kernel_np

    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    y_pm = np.where(y == 1, 1, -1)
    m = BootstrapProbabilitySVC(
        C_grid=[0.5, 2.0], n_bootstrap=12, kernel=kernel, random_state=3
    ).fit(X, y)
    full = solve_replicates(X, y_pm, m.C_grid_, m.counts_, kernel=kernel)
    # the one-batch helper is the estimator's own fit
    np.testing.assert_array_equal(full["n_iter"], m.n_iter_)
    np.testing.assert_allclose(full["duality_gap"], m.duality_gap_, rtol=0, atol=0)
    dist = fit_replicates_distributed(
        X, y_pm, m.C_grid_, m.counts_, n_chunks=3, kernel=kernel
    )
    assert dist["statuses"].shape == (2, 12)
    K = compute_kernel_np(X, X[:40], kernel=kernel, gamma=full["gamma"])
    f_full = full["coef"] @ K + full["intercept"][..., None]
    f_dist = dist["coef"] @ K + dist["intercept"][..., None]
    np.testing.assert_allclose(f_dist, f_full, rtol=0, atol=1e-10)
    # the votes, hence every probability of the ensemble, are the same
    np.testing.assert_array_equal(f_dist > 0, f_full > 0)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_bootstrap_backend_ray_equals_local(ray_instance, kernel: str) -> None:  # noqa: ANN001
    import numpy as np
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=150, n_features=5, random_state=1)
    params = dict(
        C_grid=[0.25, 1.0, 4.0], n_bootstrap=16, kernel=kernel, random_state=7
    )
    local = BootstrapProbabilitySVC(**params).fit(X, y)
    dist = BootstrapProbabilitySVC(**params, backend="ray", n_chunks=3).fit(X, y)
    np.testing.assert_array_equal(dist.counts_, local.counts_)
    np.testing.assert_array_equal(dist.oob_accuracy_, local.oob_accuracy_)
    np.testing.assert_array_equal(dist.weights_, local.weights_)
    np.testing.assert_array_equal(dist.predict_proba(X), local.predict_proba(X))
    np.testing.assert_allclose(
        dist.bootstrap_decision_function(X),
        local.bootstrap_decision_function(X),
        rtol=0,
        atol=1e-10,
    )


def test_ray_equals_local_for_the_probabilities_protocol(
    ray_instance,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    cfg = load_config(
        ROOT / "configs" / "probabilities-tiny.toml",
        ["bootstrap.n_bootstrap=3", "probabilities.baselines=['platt', 'isotonic']"],
    )
    local = run_experiment(cfg, tmp_path / "local")
    remote = run_experiment(cfg, tmp_path / "ray", backend="ray")
    assert not remote.failures and len(remote.results) == 4
    _assert_same_figures(remote.report["figures"], local.report["figures"])
