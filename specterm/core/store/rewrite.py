"""Whole-run writing: a run written at once (import), shards merged into one run, a run repaired.

Each is built beside its target and renamed into place (store/atomic.py): a killed command leaves
at most a hidden temporary name, which discovery never loads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store.atomic import (
    discard_dir,
    json_text,
    make_temp_dir,
    publish_dir,
    sweep_leftovers,
    write_atomic,
    write_failure,
)
from specterm.core.store.meta import (
    META_CHECKSUM_FIELD,
    META_FILE,
    RECORDS_FIELD,
    RECORDS_FILE,
    SCHEMA_VERSION,
    meta_checksum,
    read_meta,
    record_bounds,
    seal_meta,
    validate_meta,
)
from specterm.core.store.modelkeys import model_key
from specterm.core.store.records import (
    CHECKSUM_FIELD,
    Stream,
    check_unique,
    decode_line,
    record_checksum,
    record_line,
)
from specterm.core.store.runs import load_run, split_damaged_tail, stored_lines
from specterm.core.store.writer import RunLock, resume_conflict, write_meta_atomic


def write_run(path: str | os.PathLike[str], meta: dict[str, Any], streams: Iterable[Stream]) -> Path:
    """Write a complete run at once, atomically: built in a unique temporary directory beside
    `path` (store/atomic.py, a hidden `.NAME.XXXX.partial` that discovery never loads), then
    renamed. Nothing else is ever deleted."""
    path = Path(path)
    if path.exists():
        raise SpectermError(f"{path} already exists; choose another --out or remove it first.")
    streams = list(streams)
    meta = seal_meta({**meta, "checksums": True, RECORDS_FIELD: len(streams)})
    validate_meta(meta, path / META_FILE)  # the one validator: what is written is what a load accepts
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = make_temp_dir(path)
    except OSError as exc:
        raise SpectermError(f"cannot create {path} ({exc.strerror}); choose another --out.") from None
    try:
        write_atomic(tmp / META_FILE, (json_text(meta).encode("utf-8"),))
        write_atomic(tmp / RECORDS_FILE, (record_line(s) for s in streams))
        publish_dir(tmp, path)
    except BaseException as exc:
        discard_dir(tmp)
        if isinstance(exc, OSError):
            raise write_failure(path, exc, "choose another --out") from None
        raise
    return path


def missing_shards(metas: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """The shards ("i/N") a set of shard runs lacks, by each run.json's "shard": [i, N]; SpectermError
    when they do not read as one set (shards of different N, a run without "shard" beside shards).
    Runs of which none records a shard (merged by hand) have nothing to check: []."""
    marks: list[Any] = [m.get("shard") for m in metas]
    if all(mark is None for mark in marks):
        return []
    for name, mark in zip(names, marks):
        if mark is None:
            raise SpectermError(f"{name} is not a shard (its run.json records no \"shard\": [i, N]) but the others are; "
                                "merge only the shards of one run.")
    totals = sorted({mark[1] for mark in marks})
    if len(totals) > 1:
        raise SpectermError(f"the shards come from splits into {' and '.join(map(str, totals))} parts; merge only the "
                            "shards of one run.")
    total = totals[0]
    held = {int(mark[0]) for mark in marks}
    return [f"{i}/{total}" for i in range(total) if i not in held]


def merge_runs(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], allow_partial: bool = False,
               warn: Callable[[str], None] | None = None) -> tuple[Path, list[Stream]]:
    """Merge shard runs of one model pair into a new run `out` (each prompt exactly once).

    Each shard's run.json records [i, N]: a set that lacks a shard is refused (missing_shards), unless
    `allow_partial`, when `warn` is told which shards are missing. The merged run lists its shards'
    directory names in "merged_from", so discovery under the same root skips the shards (discover_runs).
    """
    shard_paths = [Path(p) for p in paths]
    if len({p.resolve() for p in shard_paths}) < len(shard_paths):
        raise SpectermError("a shard is named twice; it is in more than one shard position, and merge refuses to duplicate it.")
    locks = []
    try:
        for p in shard_paths:
            read_meta(p)  # not a run: its own sentence, before a lock file is made in it
            locks.append(RunLock(p).acquire())  # a shard still being written is refused (its writer holds it)
        return _merge_locked(shard_paths, out, allow_partial, warn)
    finally:
        for lock in locks:
            lock.release()


def incomplete_tail(path: Path) -> str | None:
    """Why the run at `path` is unfinished, or None: its prompts.jsonl ends in a torn line (a writer
    stopped in the middle of a prompt) that no load keeps."""
    lines = stored_lines(path)
    if not lines or lines[-1].complete:
        return None
    last = lines[-1]
    meta = read_meta(path)
    try:
        decode_line(last.raw, "tail", require_checksum=meta.get("checksums") is True, bounds=record_bounds(meta))
        return None  # a whole record that only lost its newline
    except SpectermError:
        pass
    return f"its last line ({path / RECORDS_FILE}:{last.lineno}) is a prompt whose writing was interrupted"


def _merge_locked(shard_paths: list[Path], out: str | os.PathLike[str], allow_partial: bool,
                  warn: Callable[[str], None] | None) -> tuple[Path, list[Stream]]:
    runs = []
    for p in shard_paths:
        why = incomplete_tail(p)
        if why is not None:
            raise SpectermError(f"shard {p} is incomplete: {why}; finish it with `specterm run ... --resume` (or "
                                f"`specterm repair {p}`) before merging.")
        runs.append(load_run(p))
    missing = missing_shards([r.meta for r in runs], [str(r.path) for r in runs])
    if missing and not allow_partial:
        raise SpectermError(f"the shards given lack shard {', '.join(missing)} of the run (each run.json records its "
                            "[i, N]); pass every shard, or --allow-partial to merge without them.")
    if missing and warn is not None:
        warn(f"merging without shard {', '.join(missing)} (--allow-partial): the merged run lacks their prompts.")
    first = runs[0].meta
    for r in runs[1:]:
        for key in ("target", "draft"):
            if model_key(first.get(key)) != model_key(r.meta.get(key)):
                raise SpectermError(f"{r.path} was run with a different {key}; merge only shards of the same run.")
        conflict = resume_conflict(first, r.meta)
        if conflict:
            raise SpectermError(f"{r.path} {conflict}; merge only shards of the same run.")
    streams = [s for r in runs for s in r.streams]
    origin = [str(r.path) for r in runs for _ in r.streams]
    check_unique(streams, lambda i: origin[i], "it is in more than one shard; merge refuses to duplicate it.")
    meta = dict(first)
    meta["name"] = Path(out).name
    meta["shard"] = None
    meta["merged_from"] = [r.path.name for r in runs]
    return write_run(out, meta, streams), streams


# ------------------------------------------------------------------------------------ repair ---

@dataclass
class RepairResult:
    kept: int
    dropped: list[str]  # "line N: why"
    checksummed: int  # records that got a checksum they lacked
    mended_tail: bool = False
    notes: list[str] = field(default_factory=list)  # "line N: what was kept although the line was damaged"

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.checksummed or self.mended_tail or self.notes)


def _sound_but_beyond(raw: bytes, where: str, require: bool) -> bool:
    """True when a record refused with the run's bounds is sound without them (its ids or length exceed
    run.json's vocabulary or max_new_tokens): a record of another run, or a run.json that is wrong."""
    try:
        decode_line(raw, where, require_checksum=require, bounds=None)
    except SpectermError:
        return False
    return True


def _decode_or_salvage(line: Any, where: str, require: bool, bounds: Any, dropped: list[str],
                       notes: list[str]) -> tuple[Stream, bytes] | None:
    """(stream, its bytes) of a stored line, or of the record before the stray bytes of a damaged last
    line (said in `notes`); None when the line is dropped (said in `dropped`)."""
    try:
        return decode_line(line.raw, where, require_checksum=require, bounds=bounds), line.raw
    except SpectermError as exc:
        split = None if line.complete else split_damaged_tail(line.raw)
        salvaged = None
        if split is not None:
            try:
                salvaged = decode_line(split[0], where, require_checksum=require, bounds=bounds)
            except SpectermError:
                pass
        if split is None or salvaged is None:
            why = "torn (an interrupted write)" if not line.complete else str(exc).removeprefix(f"{where}: ")
            dropped.append(f"{where}: {why}")
            return None
        notes.append(f"{where}: kept the record, dropped {len(split[1])} stray byte(s) where its newline should be")
        return salvaged, split[0]


def repair_run(path: str | os.PathLike[str]) -> RepairResult:
    """Rewrite prompts.jsonl keeping each valid record once: drops torn and invalid lines and later
    copies of a (corpus, id) already kept, gives every kept record a checksum, and replaces the file
    atomically (a temp file beside it, fsync'ed, renamed) under the run's lock. When at least half the
    records are sound but beyond run.json's bounds (its vocabulary or max_new_tokens), run.json is the
    likelier fault: nothing is dropped, and the sentence says to restore it."""
    path = Path(path)
    meta = read_meta(path, verify=False)  # a run.json that fails its checksum is checked field by field and sealed again
    rec_path = path / RECORDS_FILE
    require = meta.get("checksums") is True
    with RunLock(path):
        kept: list[bytes] = []
        dropped: list[str] = []
        seen: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
        added = 0
        beyond = 0  # sound records refused only by run.json's bounds (_sound_but_beyond)
        notes: list[str] = []
        lines = stored_lines(path)
        mended = bool(lines) and not lines[-1].complete
        bounds = record_bounds(meta)
        for line in lines:
            where = f"line {line.lineno}"
            decoded = _decode_or_salvage(line, where, require, bounds, dropped, notes)
            if decoded is None:
                beyond += line.complete and _sound_but_beyond(line.raw, where, require)
                continue
            stream, raw = decoded
            rec = json.loads(raw.decode("utf-8"))
            key = (stream.corpus, stream.id)
            if key in seen:
                first_line, first_rec = seen[key]
                same = {k: v for k, v in first_rec.items() if k != CHECKSUM_FIELD} == \
                       {k: v for k, v in rec.items() if k != CHECKSUM_FIELD}
                what = "a copy" if same else "a different record"
                dropped.append(f"{where}: {what} of prompt {stream.id!r} ({stream.corpus}) kept from line {first_line}")
                continue
            seen[key] = (line.lineno, rec)
            if CHECKSUM_FIELD not in rec:
                rec[CHECKSUM_FIELD] = record_checksum(rec)
                kept.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
                added += 1
            else:
                kept.append(raw)
        if beyond and 2 * beyond >= beyond + len(kept):
            raise SpectermError(f"{beyond} of the {beyond + len(kept)} records of {rec_path} hold token ids or lengths beyond "
                                f"what {META_FILE} says (vocabulary {bounds.vocab}, max_new_tokens {bounds.max_n}): run.json is "
                                "more likely wrong than the records; restore run.json (repair drops no record for it).")
        expected = meta.get(RECORDS_FIELD)
        if type(expected) is int and len(kept) < expected:
            notes.append(f"recovered {len(kept)} of the {expected} records run.json says were written; "
                         f"the other {expected - len(kept)} are lost (restore the file from a copy to get them back)")
        resealed = meta.get(META_CHECKSUM_FIELD) is not None and meta[META_CHECKSUM_FIELD] != meta_checksum(meta)
        if resealed:
            notes.append(f"{META_FILE} did not match its checksum; every field was checked and the checksum written again")
        swept = sweep_leftovers(path)
        if swept:
            notes.append(f"removed {len(swept)} leftover(s) of interrupted writes: {', '.join(swept)}")
        result = RepairResult(kept=len(kept), dropped=dropped, checksummed=added,
                              mended_tail=mended and not any(d.startswith(f"line {lines[-1].lineno}:") for d in dropped + notes),
                              notes=notes)
        if result.changed or not require:
            try:
                write_atomic(rec_path, (line + b"\n" for line in kept))
            except OSError as exc:
                raise write_failure(rec_path, exc, "the run is unchanged") from None
        if (result.changed or not require or META_CHECKSUM_FIELD not in meta or expected != len(kept)
                or meta.get("schema_version") != SCHEMA_VERSION):  # an old run is sealed (store/meta.py)
            write_meta_atomic(path, {**meta, "checksums": True, RECORDS_FIELD: len(kept)})
    return result
