"""Experiment reports: the ``ProtocolReport`` record, atomic writers, CSV and plots.

Every file is written atomically (a temporary file in the same folder, then
``os.replace``), so an interrupted run never leaves a half-written result.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "METRICS",
    "ProtocolReport",
    "csv_text",
    "read_json",
    "save_figure",
    "atomic_write",
    "atomic_write_json",
    "atomic_write_text",
    "write_plots",
]

METRICS = ("mse", "log_loss", "auc", "calibration")
_LABELS = {
    "mse": "MSE (Brier)",
    "log_loss": "log loss",
    "auc": "AUC",
    "calibration": "calibration",
}


# the process umask, read once (os.umask can only be read by setting it)
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` then move the temporary file onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix
    )
    os.close(fd)
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would
        os.chmod(tmp, 0o666 & ~_UMASK)
        writer(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) atomically."""

    def write(p: Path) -> None:
        p.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _clean(obj: Any) -> Any:
    """Replace non-finite floats by None (strict JSON)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented strict JSON atomically (nan/inf become null)."""
    text = json.dumps(
        _clean(json.loads(json.dumps(obj, default=_json_default))), indent=2
    )
    atomic_write_text(path, text + "\n")


def read_json(path: str | Path) -> Any:
    """The JSON in ``path``, or None when it is missing or unreadable (then logged)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        logger.warning("ignoring unreadable file %s", path)
        return None


@dataclass
class ProtocolReport:
    """What a protocol makes of its finished units.

    Attributes
    ----------
    title : str
        First line of ``summary.md``.
    figures : dict
        Everything the run found (goes to ``report.json``; JSON-able, no timings that
        would make two equal runs differ: those go to ``timings``).
    text : str
        Readable summary (Markdown tables), printed by the CLI and written to
        ``summary.md``.
    timings : dict
        Seconds (kept apart from ``figures`` so that backends can be compared).
    extra_files : dict of str to str
        Further text files of the run folder (CSV tables).
    plot : callable or None
        ``plot(out_dir) -> list of paths`` writes the figures' plots (atomically).
    """

    title: str
    figures: dict[str, Any]
    text: str
    timings: dict[str, Any] = field(default_factory=dict)
    extra_files: dict[str, str] = field(default_factory=dict)
    plot: Callable[[Path], list[Path]] | None = None

    def markdown(self, report: Mapping[str, Any]) -> str:
        """``summary.md``: title, command, the summary text and any failed units."""
        meta = report.get("meta", {})
        lines = [f"# {self.title}", ""]
        if meta.get("command"):
            lines += [f"Command: `{meta['command']}`", ""]
        lines += [
            f"Units: {meta.get('n_units')} ({meta.get('n_resumed')} resumed, "
            f"{meta.get('n_failed')} failed); backend {meta.get('backend')}, device "
            f"{meta.get('device')}; {meta.get('seconds_total', float('nan')):.1f} s.",
            "",
            self.text.rstrip(),
        ]
        if report.get("failures"):
            lines += ["", "## Failed units", ""]
            lines += [f"- `{f['unit']}`: {f['error']}" for f in report["failures"]]
        return "\n".join(lines)

    def write_files(self, out: Path, plots: bool = True) -> list[Path]:
        """Write ``extra_files`` and (when ``plots``) the plots into ``out``."""
        written = []
        for name, text in self.extra_files.items():
            atomic_write_text(out / name, text)
            written.append(out / name)
        if plots and self.plot is not None:
            written += self.plot(out)
        return written


def csv_text(cols: Mapping[str, Sequence[Any]]) -> str:
    """Columns (equal lengths) as CSV text with a header row."""
    return _csv(cols)


def save_figure(fig: Any, path: Path) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    atomic_write(
        path, lambda t: fig.savefig(t, format="png", dpi=110, bbox_inches="tight")
    )
    plt.close(fig)
    return path


def _csv(cols: Mapping[str, Sequence[Any]]) -> str:
    keys = list(cols)
    n = len(cols[keys[0]]) if keys else 0
    rows = [",".join(keys)]
    for i in range(n):
        rows.append(",".join(_fmt(cols[k][i]) for k in keys))
    return "\n".join(rows) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return repr(float(v))
    return str(v)


def write_plots(
    out: Path, pred: Mapping[str, Sequence[Any]], n_interval: int = 20
) -> list[Path]:
    """Reliability diagram with interval band, score intervals of held-out rows, ROC."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_curve

    y = (np.asarray(pred["y"]) > 0).astype(float)
    p = np.asarray(pred["p_bootstrap"], dtype=float)
    lo = np.asarray(pred["p_lower"], dtype=float)
    hi = np.asarray(pred["p_upper"], dtype=float)
    paths: list[Path] = []

    def save(fig: Any, name: str) -> None:
        path = out / name
        atomic_write(
            path, lambda t: fig.savefig(t, format="png", dpi=110, bbox_inches="tight")
        )
        plt.close(fig)
        paths.append(path)

    # reliability diagram: 10 equal-width bins of P(+|x); band = mean interval per bin
    edges = np.linspace(0.0, 1.0, 11)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, 9)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], "k:", lw=1, label="perfect")
    freq, blo, bhi, mp = [], [], [], []
    for k in range(10):
        m = which == k
        if m.any():
            mp.append(p[m].mean())
            freq.append(y[m].mean())
            blo.append(lo[m].mean())
            bhi.append(hi[m].mean())
    ax.fill_between(
        mp, blo, bhi, color="C0", alpha=0.25, label="mean probability interval"
    )
    ax.plot(mp, freq, "o-", color="C0", label="bootstrap ensemble")
    for key, lab, col in (("p_best_c", "best C", "C1"), ("p_platt", "Platt", "C2")):
        if key in pred:
            q = np.asarray(pred[key], dtype=float)
            wq = np.clip(np.digitize(q, edges[1:-1]), 0, 9)
            bx = [q[wq == k].mean() for k in range(10) if (wq == k).any()]
            by = [y[wq == k].mean() for k in range(10) if (wq == k).any()]
            ax.plot(bx, by, "s--", color=col, alpha=0.7, label=lab)
    ax.set_xlabel("predicted P(+|x)")
    ax.set_ylabel("observed frequency of +")
    ax.set_title("Reliability (held-out, all folds)")
    ax.legend(loc="upper left", fontsize=8)
    save(fig, "reliability.png")

    # score intervals for n_interval held-out rows (spread over the score range)
    f = np.asarray(pred["score"], dtype=float)
    order = np.argsort(f)
    pick = order[np.linspace(0, f.size - 1, min(n_interval, f.size)).astype(int)]
    slo = np.asarray(pred["score_lower"], dtype=float)[pick]
    shi = np.asarray(pred["score_upper"], dtype=float)[pick]
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = np.arange(pick.size)
    colors = ["C3" if v > 0 else "C0" for v in y[pick]]
    ax.vlines(xs, slo, shi, colors=colors, lw=2)
    ax.scatter(xs, f[pick], c=colors, zorder=3, s=15)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(
        xs,
        [str(int(i)) for i in np.asarray(pred["index"])[pick]],
        rotation=90,
        fontsize=7,
    )
    ax.set_xlabel("held-out sample (row index); red = positive")
    ax.set_ylabel("score f(x) at best C")
    ax.set_title("Basic bootstrap score intervals")
    save(fig, "score_intervals.png")

    # ROC
    fig, ax = plt.subplots(figsize=(5, 5))
    for key, lab in (
        ("p_bootstrap", "bootstrap ensemble"),
        ("p_best_c", "best C"),
        ("p_platt", "Platt"),
    ):
        if key in pred and 0 < y.sum() < y.size:
            fpr, tpr, _ = roc_curve(y, np.asarray(pred[key], dtype=float))
            ax.plot(fpr, tpr, label=lab)
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("ROC (held-out, all folds)")
    ax.legend(loc="lower right", fontsize=8)
    save(fig, "roc.png")
    return paths
