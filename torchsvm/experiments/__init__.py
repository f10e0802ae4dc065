"""Experiments as a library layer: one runner, one module per protocol.

``run_experiment(load_config("configs/<experiment>.toml"), out_dir)`` runs any protocol
(``bootstrap`` = the main job, ``probabilities``, ``implied``, ``sensitivity``,
``csvm``, ``cost_sensitive``, ``feature_selection``, ``dea``) locally or on Ray; see
:mod:`torchsvm.experiments.runner`.
"""

from torchsvm.experiments.runner import (
    PROTOCOLS,
    RunFolderError,
    RunResult,
    Unit,
    get_protocol,
    load_fold_data,
    run_experiment,
)

__all__ = [
    "PROTOCOLS",
    "RunFolderError",
    "RunResult",
    "Unit",
    "get_protocol",
    "load_fold_data",
    "run_experiment",
]
