"""A run's two files read once, as bytes (RunFiles): a load parses exactly the bytes it read, so a
digest of them (core/cache.py files_key) names what was loaded. No numpy here: a warm `specterm
open` reads these and the analysis cache before its first table, and imports numpy after it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from specterm.core.errors import SpectermError
from specterm.core.store.meta import RECORDS_FILE, read_meta_bytes


@dataclass(frozen=True)
class RunFiles:
    """The bytes of a run's two files, read once (read_run_files): a load parses exactly these, so
    a digest of them (core/cache.py files_key) names what was loaded. records is None when the run
    has no prompts.jsonl yet."""

    path: Path
    meta: bytes
    records: bytes | None


def read_records_file(path: Path) -> bytes | None:
    """The bytes of a run's prompts.jsonl, or None when there is none."""
    rec_path = Path(path) / RECORDS_FILE
    try:
        return rec_path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SpectermError(f"cannot read {rec_path} ({exc.strerror}); check its permissions.") from None


def read_run_files(path: str | os.PathLike[str]) -> RunFiles:
    """Read the run directory's run.json and prompts.jsonl (the errors of read_meta and
    stored_lines, one sentence each)."""
    path = Path(path)
    return RunFiles(path, read_meta_bytes(path)[1], read_records_file(path))
