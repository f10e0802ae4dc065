"""Unit archives: a run folder's finished units in one file that can be committed.

A long protocol (hundreds of units, days of CPU) runs across machines that do not keep
their scratch folders. :func:`export_units` packs the run folder's ``config.toml`` and
every ``units/<key>.json`` into one gzip-compressed JSON-lines file; :func:`import_units`
unpacks it into a (new or partly finished) run folder, so that the runner resumes from
there. ``python -m torchsvm.train --out DIR --archive FILE`` does both: it restores the
units of ``FILE`` that ``DIR`` lacks before running, rewrites ``FILE`` as each unit
finishes, and once more at the end (also with ``--report-only``, so a report can be made
from the archive alone).

File format (``torchsvm-units``, version 1), one JSON object per line:

- line 1, the header: ``{"format": "torchsvm-units", "version": 1, "config": <the
  config.toml text>, "n_units": <int>}``;
- then one line per unit, in key order: the unit file's record as the runner wrote it
  (``key``, ``params``, ``fingerprint``, ``seconds``, ``finished_at``, ``code``,
  ``result``).

The bytes depend only on the content (sorted keys, gzip header without a time stamp), so
an unchanged folder gives an identical file. Nothing is trusted on import beyond what the
runner checks anyway: a restored unit is reused only when its fingerprint and params
match the current config's (see :func:`torchsvm.experiments.runner.run_experiment`).
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from torchsvm.experiments.report import atomic_write, atomic_write_json, read_json

__all__ = ["ArchiveError", "archive_config", "export_units", "import_units"]

FORMAT = "torchsvm-units"
VERSION = 1


class ArchiveError(ValueError):
    """A unit archive that cannot be read (not gzip / JSON lines, wrong format)."""


def _unit_files(out: Path) -> list[Path]:
    units = out / "units"
    if not units.is_dir():
        return []
    return sorted(p for p in units.rglob("*.json") if not p.name.startswith("."))


def _read(archive: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        with gzip.open(archive, "rt", encoding="utf-8") as fh:
            lines = [line for line in fh if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ArchiveError(f"{archive}: not a gzip unit archive ({exc})") from None
    if not lines:
        raise ArchiveError(f"{archive}: empty file, no header")
    try:
        header = json.loads(lines[0])
        records = [json.loads(line) for line in lines[1:]]
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{archive}: line {exc.lineno} is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ArchiveError(f"{archive}: not a {FORMAT} archive (header {header!r:.80})")
    if header.get("version") != VERSION:
        raise ArchiveError(
            f"{archive}: archive version {header.get('version')!r}; this torchsvm "
            f"reads version {VERSION}"
        )
    for i, rec in enumerate(records, start=2):
        if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
            raise ArchiveError(f"{archive}: line {i} is not a unit record")
        _check_key(rec["key"], archive)
    return header, records


def _check_key(key: str, archive: Path) -> None:
    parts = key.split("/")
    if key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ArchiveError(f"{archive}: unit key {key!r} is not a relative unit path")


def export_units(out: str | Path, archive: str | Path) -> int:
    """Pack ``out``'s config and finished units into ``archive`` (atomically).

    Returns the number of units written. Unreadable unit files are left out (and
    logged by :func:`~torchsvm.experiments.report.read_json`).

    Raises
    ------
    FileNotFoundError
        ``out`` has no ``config.toml`` (it is not a run folder).
    """
    out = Path(out)
    config = out / "config.toml"
    if not config.is_file():
        raise FileNotFoundError(f"{out} is not a run folder (no config.toml)")
    records = []
    for path in _unit_files(out):
        rec = read_json(path)
        if isinstance(rec, dict) and isinstance(rec.get("key"), str):
            records.append(rec)
    records.sort(key=lambda r: r["key"])
    header = {
        "format": FORMAT,
        "version": VERSION,
        "config": config.read_text(encoding="utf-8"),
        "n_units": len(records),
    }
    buf = io.StringIO()
    for obj in (header, *records):
        buf.write(json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n")
    data = gzip.compress(buf.getvalue().encode("utf-8"), compresslevel=9, mtime=0)

    def write(p: Path) -> None:
        p.write_bytes(data)

    atomic_write(Path(archive), write)
    return len(records)


def archive_config(archive: str | Path) -> str:
    """The ``config.toml`` text stored in ``archive``'s header."""
    header, _ = _read(Path(archive))
    config = header.get("config")
    if not isinstance(config, str):
        raise ArchiveError(f"{archive}: header has no config text")
    return config


def import_units(
    archive: str | Path, out: str | Path, *, fingerprint: str | None = None
) -> int:
    """Unpack ``archive``'s units into run folder ``out``; returns how many were written.

    A unit is written when ``out`` has no file for its key, or when ``out``'s file has
    another fingerprint than ``fingerprint`` (the current config's) while the archive's
    record has it. Finished work in ``out`` is never replaced otherwise. ``out`` must be
    a run folder already (its ``config.toml`` written by the runner, or restored from
    :func:`archive_config`).
    """
    archive, out = Path(archive), Path(out)
    _, records = _read(archive)
    written = 0
    for rec in records:
        path = out / "units" / f"{rec['key']}.json"
        have = read_json(path)
        if isinstance(have, dict):
            if fingerprint is None or have.get("fingerprint") == fingerprint:
                continue
            if rec.get("fingerprint") != fingerprint:
                continue
        atomic_write_json(path, rec)
        written += 1
    return written
