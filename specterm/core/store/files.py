"""A run's two files read once, as bytes (RunFiles): a load parses exactly the bytes it read, so a
digest of them (core/report/cache.py files_key) names what was loaded. No numpy here: a warm `specterm
open` reads these and the analysis cache before its first table, and imports numpy after it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store.atomic import is_temp_name, read_regular
from specterm.core.store.meta import META_FILE, RECORDS_FILE, read_meta, read_meta_bytes


@dataclass(frozen=True)
class RunFiles:
    """The bytes of a run's two files, read once (read_run_files): a load parses exactly these, so
    a digest of them (core/report/cache.py files_key) names what was loaded. records is None when the run
    has no prompts.jsonl yet."""

    path: Path
    meta: bytes
    records: bytes | None


def read_records_file(path: Path) -> bytes | None:
    """The bytes of a run's prompts.jsonl, or None when there is none."""
    rec_path = Path(path) / RECORDS_FILE
    try:
        return read_regular(rec_path, "restore the run's own prompts.jsonl")
    except FileNotFoundError:
        return None


def read_run_files(path: str | os.PathLike[str]) -> RunFiles:
    """Read the run directory's run.json and prompts.jsonl (the errors of read_meta and
    stored_lines, one sentence each)."""
    path = Path(path)
    return RunFiles(path, read_meta_bytes(path)[1], read_records_file(path))


def merged_shard_names(metas: dict[Path, dict[str, Any]]) -> set[str]:
    """Names of the shard directories that some run in `metas` was merged from."""
    names: set[str] = set()
    for meta in metas.values():
        for src in meta.get("merged_from") or []:
            if isinstance(src, str):
                names.add(Path(src).name)
    return names


def _holds_meta(p: Path) -> bool:
    """True when `p` is a folder with a run.json entry that is not a folder: a regular file, or a FIFO or
    device in its place, which is listed so that loading names it (store/atomic.py read_regular) instead
    of hiding the run or blocking on it."""
    try:
        return p.is_dir() and not (p / META_FILE).is_dir() and os.path.lexists(p / META_FILE)
    except OSError:
        return False


def discover_runs(root: str | os.PathLike[str] = "streams") -> tuple[list[Path], list[Path]]:
    """(runs, merged shards) directly under `root`, sorted by name; hidden entries (temporary
    directories of an unfinished write) are never runs.

    A shard run (run.json "shard": [i, N]) whose directory a merged run under the same root lists in
    "merged_from" is left out of the runs: its prompts are already in the merged run, and counting
    them again would pool every prompt twice.
    """
    root = Path(root)
    if not root.is_dir():
        return [], []
    metas: dict[Path, dict[str, Any]] = {}
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise SpectermError(f"cannot list {root} ({exc.strerror}); check its permissions.") from None
    for p in entries:
        if is_temp_name(p.name):
            continue  # an unfinished import/merge (or any hidden entry) is never a run
        if _holds_meta(p):
            try:
                metas[p] = read_meta(p)
            except SpectermError:
                metas[p] = {}  # listed; loading it reports what is wrong
    merged = merged_shard_names(metas)
    runs = [p for p, m in metas.items() if not (m.get("shard") and p.name in merged)]
    shards = [p for p, m in metas.items() if m.get("shard") and p.name in merged]
    return runs, shards


def find_runs(root: str | os.PathLike[str] = "streams") -> list[Path]:
    """Run directories directly under `root` (those with a run.json), sorted by name, without the
    shards of a merged run there (see discover_runs)."""
    return discover_runs(root)[0]
