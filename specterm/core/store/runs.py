"""Runs: reading a run directory, finding the runs under a folder, and which runs pool together.

Layout of `streams/NAME/`:

- `run.json`: human-readable metadata, `{"format": "specterm-run", "schema_version": 1, ...}`:
  specterm version, models (spec, source, sha256 where a file), dtype, device, hardware,
  generation parameters, measured cost ratio, creation time.
- `prompts.jsonl`: one record (store/records.py) per completed prompt, appended and fsync'ed one
  prompt at a time, so an interrupted run never loses or corrupts a finished prompt. A final line
  without its newline is kept when it is a whole valid record (only the newline was lost);
  otherwise it is an interrupted write: loading ignores it and `RunWriter` cuts it away on resume.
- `run.lock`: the advisory lock of the session writing the run (store/writer.py).

Pooling (SPEC: a prompt counts once; model pairs are never pooled):

- Runs of different model pairs (model_key of target and draft) are never pooled: the TUI shows one
  pair at a time (group_by_models), `specterm report` refuses a mix (single_pair).
- Within one pair, a (corpus, id) counts once: the same run opened twice is opened once, and a
  prompt stored in two runs is kept from the first when the records are identical and refused
  when they differ (pool_runs).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store.models import model_key, model_label
from specterm.core.store.records import BOM, Stream, check_unique, decode_line

FORMAT = "specterm-run"
SCHEMA_VERSION = 1
META_FILE = "run.json"
RECORDS_FILE = "prompts.jsonl"


@dataclass
class Run:
    """A stored run: its directory, metadata and streams (in the order they were written)."""

    path: Path
    meta: dict[str, Any]
    streams: list[Stream] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.meta.get("name") or self.path.name

    @property
    def corpora(self) -> list[str]:
        return sorted({s.corpus for s in self.streams})

    @property
    def r_measured(self) -> float | None:
        cost = self.meta.get("cost") or {}
        r = cost.get("r_measured")
        return float(r) if isinstance(r, (int, float)) else None


def read_meta(path: Path) -> dict[str, Any]:
    path = Path(path)
    meta_path = path / META_FILE
    if not path.is_dir():
        raise SpectermError(f"{path} is not a run directory; pass a directory under streams/ (see `specterm list`).")
    if not meta_path.is_file():
        raise SpectermError(f"{path} has no {META_FILE}, so it is not a specterm run; pass a directory made by `specterm run` or `specterm import`.")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise SpectermError(f"cannot read {meta_path} ({exc.strerror}); check its permissions.") from None
    except RecursionError:
        raise SpectermError(f"{meta_path} is nested too deeply to be run metadata; restore it or re-create the run.") from None
    except Exception as exc:  # bad UTF-8, bad JSON, an integer beyond the digit limit
        detail = (getattr(exc, "msg", None) or str(exc)).splitlines()[0][:80]
        raise SpectermError(f"{meta_path} is not valid JSON ({detail}); restore it or re-create the run.") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SpectermError(f"{meta_path} is not a specterm run file (no \"format\": \"{FORMAT}\"); pass a run made by specterm.")
    version = meta.get("schema_version")
    if type(version) is not int:
        raise SpectermError(f"{meta_path} has no integer schema_version; the file is corrupt.")
    if version > SCHEMA_VERSION:
        raise SpectermError(
            f"{meta_path} was written with stream schema {version}, newer than this specterm reads ({SCHEMA_VERSION}); upgrade specterm."
        )
    return meta


@dataclass
class StoredLine:
    """One line of prompts.jsonl as stored: 1-based number, bytes without the newline, and whether
    the newline was there (only the last line can lack it)."""

    lineno: int
    raw: bytes
    complete: bool


def stored_lines(path: Path) -> list[StoredLine]:
    """The non-blank lines of a run's prompts.jsonl (a leading UTF-8 BOM is skipped)."""
    rec_path = Path(path) / RECORDS_FILE
    try:
        data = rec_path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SpectermError(f"cannot read {rec_path} ({exc.strerror}); check its permissions.") from None
    data = data.removeprefix(BOM)
    parts = data.split(b"\n")
    out = [StoredLine(i, raw, True) for i, raw in enumerate(parts[:-1], start=1)]
    out.append(StoredLine(len(parts), parts[-1], False))
    return [line for line in out if line.raw.strip()]


def iter_records(path: Path, meta: dict[str, Any] | None = None) -> Iterator[tuple[int, Stream]]:
    """(line number, Stream) for each record of a run's prompts.jsonl (`meta`: its run.json, read
    when not given).

    A final line without its newline is kept when it is a whole valid record and skipped when it
    is not (an interrupted write); any other bad line raises SpectermError naming FILE:LINE.
    """
    path = Path(path)
    meta = read_meta(path) if meta is None else meta
    rec_path = path / RECORDS_FILE
    name = str(meta.get("name") or path.name)
    require = meta.get("checksums") is True
    for line in stored_lines(path):
        where = f"{rec_path}:{line.lineno}"
        if line.complete:
            yield line.lineno, decode_line(line.raw, where, name, require)
            continue
        try:
            stream = decode_line(line.raw, where, name, require)
        except SpectermError:
            continue  # torn by an interrupted write: the prompt was never finished
        yield line.lineno, stream


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load and validate a run directory. Raises SpectermError with one sentence on any problem."""
    path = Path(path)
    run = Run(path=path, meta=read_meta(path))
    lines: list[int] = []
    for lineno, stream in iter_records(path, run.meta):
        run.streams.append(stream)
        lines.append(lineno)
    rec_path = path / RECORDS_FILE
    check_unique(run.streams, lambda i: f"{rec_path}:{lines[i]}",
                 "the file is corrupt; `specterm repair RUN` keeps the first copy and drops the rest.")
    return run


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    return [load_run(p) for p in paths]


def load_runs_lenient(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Run], list[str]]:
    """(the runs that load, one sentence per run that does not): one corrupt run hides no other."""
    runs, problems = [], []
    for p in paths:
        try:
            runs.append(load_run(p))
        except SpectermError as exc:
            problems.append(str(exc))
    return runs, problems



def merged_shard_names(metas: dict[Path, dict[str, Any]]) -> set[str]:
    """Names of the shard directories that some run in `metas` was merged from."""
    names: set[str] = set()
    for meta in metas.values():
        for src in meta.get("merged_from") or []:
            if isinstance(src, str):
                names.add(Path(src).name)
    return names


def discover_runs(root: str | os.PathLike[str] = "streams") -> tuple[list[Path], list[Path]]:
    """(runs, merged shards) directly under `root`, sorted by name.

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
        if (p / META_FILE).is_file():
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


# ----------------------------------------------------------------------------------- pooling ---


def pair_key(run: Run) -> tuple[str, str]:
    """The model pair of a run: (target, draft) identities (model_key)."""
    return (repr(model_key(run.meta.get("target"))), repr(model_key(run.meta.get("draft"))))


def pair_label(run: Run) -> str:
    return f"target {model_label(run.meta.get('target'))}, draft {model_label(run.meta.get('draft'))}"


def same_record(a: Stream, b: Stream) -> bool:
    """True when two streams hold the same stored record (every field, arrays compared exactly)."""
    ra, rb = a.to_record(), b.to_record()
    return ra == rb


def pool_runs(runs: list[Run]) -> list[Run]:
    """The runs of one pair with every (corpus, id) kept once, in order.

    A run directory given twice is kept once; a prompt already kept from an earlier run is dropped
    from a later one when its record is identical, and refused (SpectermError naming both runs)
    when it differs. Returns new Run objects; the inputs are not changed.
    """
    out: list[Run] = []
    seen_paths: set[Any] = set()
    kept: dict[tuple[str, str], tuple[Stream, Run]] = {}
    for run in runs:
        where = run.path.resolve()
        if where in seen_paths:
            continue
        seen_paths.add(where)
        streams = []
        for s in run.streams:
            key = (s.corpus, s.id)
            if key in kept:
                first, first_run = kept[key]
                if not same_record(first, s):
                    raise SpectermError(
                        f"prompt {s.id!r} ({s.corpus}) is in both {first_run.path} and {run.path} with different "
                        "records; a prompt of one model pair counts once, so open only one of these runs."
                    )
                continue
            kept[key] = (s, run)
            streams.append(s)
        out.append(replace(run, streams=streams))
    return out


def group_by_models(runs: list[Run]) -> list[list[Run]]:
    """Runs split by model pair in first-seen order, each group pooled (pool_runs)."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(pair_key(run), []).append(run)
    return [pool_runs(g) for g in groups.values()]


def single_pair(runs: list[Run]) -> list[Run]:
    """The runs pooled (pool_runs), or one sentence naming runs of different model pairs."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(pair_key(run), []).append(run)
    if len(groups) > 1:
        firsts = [g[0] for g in groups.values()]
        names = " and ".join(f"{r.path} ({pair_label(r)})" for r in firsts[:3])
        raise SpectermError(f"{names} are runs of different model pairs, which are never pooled; report each pair on its own.")
    return pool_runs(runs)
