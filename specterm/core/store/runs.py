"""Runs: reading a run directory (run.json + prompts.jsonl) and finding the runs under a folder.

Layout of `streams/NAME/`:

- `run.json`: human-readable metadata (store/meta.py), `{"format": "specterm-run",
  "schema_version": 1, ...}`: specterm version, models (spec, source, sha256 where a file), dtype,
  device, hardware, generation parameters, measured cost ratio, creation time.
- `prompts.jsonl`: one record (store/records.py) per completed prompt, appended and fsync'ed one
  prompt at a time, so an interrupted run never loses or corrupts a finished prompt. A final line
  without its newline is kept when it is a whole valid record (only the newline was lost), kept
  with a warning when it is a whole record followed by stray bytes (a corrupted newline: an
  interrupted write only ever leaves a prefix of a record), and otherwise it is an interrupted
  write: loading ignores it and `RunWriter` cuts it away on resume.
- `run.lock`: the advisory lock of the session writing the run (store/writer.py).

Discovery (find_runs, discover_runs) lives in store/files.py, numpy-free, so `specterm` lists
./streams before the first table without numpy; it never loads a hidden entry (store/atomic.py
`is_temp_name`): the unfinished temporary directories of a killed `import` or `merge` are not runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store.files import RunFiles, read_records_file, read_run_files
from specterm.core.store.meta import (
    META_FILE,
    RECORDS_FIELD,
    RECORDS_FILE,
    meta_warnings,
    parse_meta,
    read_meta,
    record_bounds,
)
from specterm.core.store.lines import decode_lines
from specterm.core.store.records import BOM, RecordBounds, Stream, check_unique, decode_line

BATCH_BYTES = 1 << 20
"""Whole lines of prompts.jsonl decoded together (`decode_lines`) up to about this many bytes; a longer line
is decoded alone. The batch's numpy temporaries are a few times its size."""


@dataclass
class Run:
    """A stored run: its directory, metadata, streams (in the order they were written) and the
    warnings its loading raised (a record kept although its line was damaged)."""

    path: Path
    meta: dict[str, Any]
    streams: list[Stream] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        name = self.meta.get("name")
        return name if isinstance(name, str) and name else self.path.name

    @property
    def corpora(self) -> list[str]:
        return sorted({s.corpus for s in self.streams})

    @property
    def r_measured(self) -> float | None:
        cost = self.meta.get("cost") or {}
        r = cost.get("r_measured")
        return float(r) if isinstance(r, (int, float)) and not isinstance(r, bool) else None


def prompts_and_positions(runs: Sequence[Run]) -> tuple[int, int]:
    """How many prompts (streams) the runs hold, and how many stored positions in all."""
    return sum(len(r.streams) for r in runs), sum(s.n for r in runs for s in r.streams)


@dataclass
class StoredLine:
    """One line of prompts.jsonl as stored: 1-based number, bytes without the newline, and whether
    the newline was there (only the last line can lack it)."""

    lineno: int
    raw: bytes
    complete: bool


def stored_lines(path: Path, data: bytes | None = None) -> list[StoredLine]:
    """The non-blank lines of a run's prompts.jsonl (a leading UTF-8 BOM is skipped); `data`: its
    bytes, already read (else the file is read)."""
    if data is None:
        data = read_records_file(path)
        if data is None:
            return []
    return list(each_stored_line(data))


def each_stored_line(data: bytes) -> Iterator[StoredLine]:
    """stored_lines of the bytes `data`, one line at a time: a load holds the file's bytes and the
    line it parses, not a copy of every line besides (10M positions: 120 MB less at its peak)."""
    start = len(BOM) if data.startswith(BOM) else 0
    lineno = 0
    while True:
        lineno += 1
        end = data.find(b"\n", start)
        raw = data[start:] if end < 0 else data[start:end]
        if raw.strip():
            yield StoredLine(lineno, raw, end >= 0)
        if end < 0:
            return
        start = end + 1


def split_damaged_tail(raw: bytes) -> tuple[bytes, bytes] | None:
    """(record, stray bytes) when an unterminated final line is one whole JSON object followed by
    other bytes, else None. An interrupted write leaves only a prefix of a line, so a whole record
    with bytes after it is a damaged newline (a flipped bit), not a torn write."""
    text = raw.decode("utf-8", "surrogateescape")  # stray bytes need not be UTF-8
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or end >= len(text):
        return None
    head = text[:end].encode("utf-8", "surrogateescape")
    return head, raw[len(head):]


def iter_records(path: Path, meta: dict[str, Any] | None = None,
                 warn: Callable[[str], None] | None = None, data: bytes | None = None) -> Iterator[tuple[int, Stream]]:
    """(line number, Stream) for each record of a run's prompts.jsonl (`meta`: its run.json, read
    when not given), each checked against the run's bounds (meta.record_bounds).

    A final line without its newline is kept when it is a whole valid record; kept with a warning
    (passed to `warn`) when it is a whole valid record followed by stray bytes; and skipped when it
    is neither (an interrupted write). Any other bad line raises SpectermError naming FILE:LINE.
    """
    path = Path(path)
    meta = read_meta(path) if meta is None else meta
    rec_path = path / RECORDS_FILE
    name = str(meta.get("name") or path.name)
    require = meta.get("checksums") is True
    bounds = record_bounds(meta)
    if data is None:
        data = read_records_file(path)
    batch: list[tuple[int, bytes, str]] = []  # whole lines decoded together (decode_lines), at most BATCH_BYTES
    size = 0
    for line in each_stored_line(data) if data is not None else ():
        where = f"{rec_path}:{line.lineno}"
        if line.complete and len(line.raw) <= BATCH_BYTES:
            batch.append((line.lineno, line.raw, where))
            size += len(line.raw)
            if size >= BATCH_BYTES:
                yield from _decoded(batch, name, require, bounds)
                batch, size = [], 0
            continue
        yield from _decoded(batch, name, require, bounds)
        batch, size = [], 0
        if line.complete:
            yield line.lineno, decode_line(line.raw, where, name, require, bounds)
            continue
        try:
            stream = decode_line(line.raw, where, name, require, bounds)
        except SpectermError:
            split = split_damaged_tail(line.raw)
            if split is None:
                continue  # torn by an interrupted write: the prompt was never finished
            stream = decode_line(split[0], where, name, require, bounds)
            if warn is not None:
                warn(f"{where}: the last record is whole but {len(split[1])} stray byte(s) follow it where its newline "
                     "should be; it is kept, and `specterm repair` rewrites the line.")
        yield line.lineno, stream
    yield from _decoded(batch, name, require, bounds)


def _decoded(batch: list[tuple[int, bytes, str]], name: str, require: bool,
             bounds: RecordBounds) -> Iterator[tuple[int, Stream]]:
    """(line number, Stream) of each (line number, bytes, where) of `batch`, decoded together."""
    if batch:
        streams = decode_lines([(raw, where) for _, raw, where in batch], name, require, bounds)
        yield from zip([lineno for lineno, _, _ in batch], streams)


def load_run(path: str | os.PathLike[str], files: RunFiles | None = None) -> Run:
    """Load and validate a run directory. Raises SpectermError with one sentence on any problem;
    a record kept from a damaged line is named in `Run.warnings`. `files`: its files' bytes, read
    once by read_run_files (what is parsed is exactly what was read); else they are read here."""
    path = Path(path)
    if files is None:
        files = read_run_files(path)
    run = Run(path=path, meta=parse_meta(files.meta, path / META_FILE))
    run.warnings.extend(meta_warnings(run.meta, path))
    lines: list[int] = []
    rec_path = path / RECORDS_FILE
    if files.records is not None:
        for lineno, stream in iter_records(path, run.meta, run.warnings.append, files.records):
            run.streams.append(stream)
            lines.append(lineno)
        check_unique(run.streams, lambda i: f"{rec_path}:{lines[i]}",
                     "the file is corrupt; `specterm repair RUN` keeps the first copy and drops the rest.")
    check_record_count(run.meta, len(run.streams), rec_path)
    return run


def check_record_count(meta: dict[str, Any], found: int, rec_path: Path) -> None:
    """Refuse a prompts.jsonl holding fewer records than run.json's `records` (the count its writers
    wrote after each record: a lower bound), i.e. one truncated or with lines deleted, in one
    sentence; a run without the count (written before it existed) is not checked."""
    expected = meta.get(RECORDS_FIELD)
    if type(expected) is int and found < expected:
        raise SpectermError(f"{rec_path} holds {found} records but run.json says {expected} were written (the file was "
                            f"truncated or lines were deleted); restore it, or run `specterm repair {rec_path.parent}` "
                            f"to keep the {found} that remain.")


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    return [load_run(p) for p in paths]


def load_runs_lenient(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Run], list[RunFiles], list[str]]:
    """(the runs that load, the bytes each was parsed from, one sentence per run that does not): one
    corrupt run hides no other."""
    runs: list[Run] = []
    files: list[RunFiles] = []
    problems: list[str] = []
    for p in paths:
        try:
            f = read_run_files(p)
            runs.append(load_run(p, f))
            files.append(f)
        except SpectermError as exc:
            problems.append(str(exc))
    return runs, files, problems
