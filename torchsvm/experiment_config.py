"""Experiment configuration of the SPEC S2 protocol: frozen dataclasses + ``load_config``.

A run is fully described by one TOML file (``configs/<name>.toml``) plus ``--set
section.key=value`` overrides. Unknown sections or keys, values of the wrong type and
out-of-range values raise :class:`ConfigError` (a ``ValueError``) whose message names
the key, so the CLI can turn it into a one-line error.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

__all__ = [
    "BaselineConfig",
    "BootstrapSettings",
    "ConfigError",
    "DataConfig",
    "ExperimentConfig",
    "ProtocolConfig",
    "ReportConfig",
    "SolverSettings",
    "load_config",
    "to_toml",
]


class ConfigError(ValueError):
    """A bad configuration file, key or value (the message names it)."""


@dataclass(frozen=True)
class DataConfig:
    """Dataset (``torchsvm.data.datasets.load_dataset`` name; breast_cancer is bundled)."""

    name: str = "breast_cancer"
    target: str = ""
    data_dir: str = ""


@dataclass(frozen=True)
class ProtocolConfig:
    """Outer evaluation loop (SPEC S2: 10 stratified folds, preprocessing per fold)."""

    n_folds: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_folds < 2:
            raise ConfigError(f"protocol.n_folds must be >= 2; got {self.n_folds}")


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
        if self.gamma not in ("scale", "auto"):
            try:
                ok = float(self.gamma) > 0
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(
                    f"bootstrap.gamma must be 'scale', 'auto' or a positive number; got {self.gamma!r}"
                )
        if not 0.0 <= self.target_tpr <= 1.0:
            raise ConfigError(
                f"bootstrap.target_tpr must lie in [0, 1] (0 = no Ctrl1); got {self.target_tpr}"
            )
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"bootstrap.level must lie in (0, 1); got {self.level}")

    @property
    def gamma_value(self) -> float | str:
        return self.gamma if self.gamma in ("scale", "auto") else float(self.gamma)


@dataclass(frozen=True)
class SolverSettings:
    """Solver tolerance/iterations and floating dtype."""

    tol: float = 1e-7
    max_iter: int = 20000
    dtype: str = "float64"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.tol) and self.tol > 0):
            raise ConfigError(f"solver.tol must be > 0; got {self.tol}")
        if self.max_iter < 1:
            raise ConfigError(f"solver.max_iter must be >= 1; got {self.max_iter}")
        if self.dtype not in ("float64", "float32"):
            raise ConfigError(
                f"solver.dtype must be float64 or float32; got {self.dtype!r}"
            )


@dataclass(frozen=True)
class BaselineConfig:
    """Platt-scaled SVM (SPEC S4) on the same folds; ``C`` fixed, ``cv`` inner folds."""

    platt: bool = True
    C: float = 1.0
    cv: int = 5

    def __post_init__(self) -> None:
        if not (math.isfinite(self.C) and self.C > 0):
            raise ConfigError(f"baselines.C must be > 0; got {self.C}")
        if self.cv < 2:
            raise ConfigError(f"baselines.cv must be >= 2; got {self.cv}")


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
    """Every knob of one SPEC S2 run."""

    name: str = "bootstrap_breast_cancer"
    device: str = "cpu"
    data: DataConfig = field(default_factory=DataConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)
    solver: SolverSettings = field(default_factory=SolverSettings)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)
    report: ReportConfig = field(default_factory=ReportConfig)

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ConfigError(f"device must be 'cpu' or 'cuda'; got {self.device!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples become lists)."""
        return _plain(dataclasses.asdict(self))


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def _coerce(value: Any, typ: Any, key: str) -> Any:
    """Convert a TOML (or ``--set`` string) value to the field type, or raise."""
    name = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if isinstance(value, str) and not (typ is str or name == "str"):
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
    if getattr(typ, "__origin__", None) is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{key} must be a list of numbers; got {value!r}")
        return tuple(_coerce(v, float, key) for v in value)
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
    return cls(**kwargs)


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
        Missing or unparsable file, unknown key, bad type or out-of-range value.
    """
    tree: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            tree = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}") from exc
    for ov in overrides:
        _set_override(tree, ov)
    return _build(ExperimentConfig, tree, "")


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
