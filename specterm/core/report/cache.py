"""Analysis cache: a finished report stored as its JSON (`Report.to_dict`, the `report --format json`
form), found again by a key of everything the numbers depend on, so that a run set opened twice is
analysed once.

Key (all of it is stored in the entry and compared in full on every read; the file name is its hash):

    cache schema    CACHE_SCHEMA, bumped when the entry layout changes
    code            specterm's version, a hash of the source of specterm/core (the statistics, the
                    report types, the constants), numpy's version (its random streams); any edit
                    of the analysis code or an upgrade makes every older entry a miss
    runs            per run, in order: its resolved path (the report names it), a hash of its
                    metadata (costs, r, confirmations) and of every field of every stream (bits,
                    gate, beta, draft_conf, ...: all dataclass fields, so a new field is covered),
                    its stream and position counts
    params          gamma, boot, shuffles, seed, depth_gamma

The content hash is taken of the loaded runs, not of their files: the numbers are a function of
what was loaded, so a file that changes while it is read cannot pair a report with other data.

Aliases (`*.alias.json`, below): the TUI finds a report by a digest of the bytes of the runs'
files before it parses them (a warm `specterm open` paints its tables without numpy, then parses
the runs from the same bytes and checks their key against the alias's: a mismatch withdraws the
report, deletes the alias and recomputes). An alias is written only by a load that parsed exactly
the bytes it hashed (store.read_run_files).

Where: $XDG_CACHE_HOME/specterm/reports (default ~/.cache/specterm/reports), the XDG convention
for data that can be rebuilt. Not beside the run: run directories are data that people copy,
commit and share (and may be read-only, e.g. the shipped runs in an installed package), and an
entry beside the run would travel with it to machines where it can only be a miss.
SPECTERM_CACHE=0 (or `--no-cache`) turns the cache off.

Length: the key, an entry's proofs (digest, counts) and the aliases share one entry format and its
one reader (_read_keyed); split apart, each module would import the others' private pieces.

Never trusted: an entry that is not valid JSON, has another schema or key, or does not rebuild a
Report is deleted and the report recomputed. Every entry proves what it serves: it carries `digest`,
a blake2b of its key and of the exact JSON text of its report (`entry_digest`; the report is stored
last and hashed as read, `_report_text`: about 1 ms for a 190 KB report), checked on every read
(an edited number, a flipped bit or another run's report pasted in is a mismatch), and the report's
own counts are checked against the key's runs (`count_mismatch`: streams and positions per run and
pooled); a mismatch is a miss, the entry deleted and rebuilt, and `note` (the CLI: stderr) told once.
What it protects against: accidents, not forgery. The digest is not keyed (no secret), so a
person who can write the cache folder (the user's own ~/.cache) can write an entry that passes every
check; they could as well edit specterm. What it does catch is everything an accident makes: a
flipped bit, a truncated or interrupted write, an entry of another run or code version, a FIFO or
device in an entry's place (read only if regular: store.atomic.read_regular). `specterm report`
says on stderr when it served from the cache (`on_hit`), and `--no-cache` analyses again.
`runs[].path` is never served from an entry: the caller's runs name themselves (`cached_analyse`). Entries are JSON only (nothing is unpickled). Writes
use the store's one writer idiom (core/store/atomic.py); at most MAX_ENTRIES are kept, least
recently used first out.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable, Sequence
from hashlib import blake2b  # not CPython's private _blake2 (hashlib's import costs ~10 ms of a warm open: accepted)
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specterm.core.decide.machine import this_machine
from specterm.core.errors import SpectermError
from specterm.core.store.atomic import read_regular, write_bytes_atomic

if TYPE_CHECKING:
    from specterm.core.report.types import Report
    from specterm.core.store import Run

CACHE_SCHEMA = 2  # 2: entries carry a digest of their key and report
MAX_ENTRIES = 64
PARAM_NAMES = ("gamma", "boot", "shuffles", "seed", "depth_gamma")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/specterm/reports, or ~/.cache/specterm/reports (XDG's default)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "specterm" / "reports"


def enabled() -> bool:
    """False when SPECTERM_CACHE is 0, off, no or false."""
    return os.environ.get("SPECTERM_CACHE", "1").strip().lower() not in ("0", "off", "no", "false")


@functools.cache
def core_sources() -> str:
    """specterm's version + a hash of every source file of specterm/core."""
    import specterm

    core = Path(__file__).resolve().parent
    h = blake2b(digest_size=16)
    for path in sorted(core.rglob("*.py")):
        h.update(str(path.relative_to(core)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return f"{getattr(specterm, '__version__', '?')}+{h.hexdigest()}"


@functools.cache
def code_version() -> str:
    """specterm's version + a hash of every source file of specterm/core + numpy's version."""
    import numpy as np

    return f"{core_sources()}+numpy{np.__version__}"


@functools.cache
def numpy_stamp() -> str | None:
    """numpy's version without importing numpy (a warm open reads the cache before it imports
    numpy): a digest of numpy/version.py, which holds the version string an installed numpy was
    built with. An alias's stand-in for code_version's numpy{version}; None when it cannot be read
    (then no alias is read or written)."""
    import importlib.util

    spec = importlib.util.find_spec("numpy")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    try:
        raw = (Path(where[0]) / "version.py").read_bytes()
    except (IndexError, OSError):
        return None
    return f"numpy-version.py:{blake2b(raw, digest_size=16).hexdigest()}"


def _update(h: Any, value: Any) -> None:
    """Feed one field's value into the hash, typed (so 1, "1" and [1] differ)."""
    import numpy as np

    if value is None:
        h.update(b"N")
    elif isinstance(value, np.ndarray):
        h.update(f"A{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).reshape(-1).view(np.uint8))  # its bytes, not copied
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        h.update(f"S{len(raw)}:".encode())
        h.update(raw)
    else:
        text = json.dumps(value, sort_keys=True, default=repr)
        h.update(f"J{len(text)}:".encode())
        h.update(text.encode())


class _Chunked:
    """A hash fed in pieces of about CHUNK bytes: the digest of feeding every piece in turn (hashing
    streams), with one release of the GIL per chunk. blake2b releases it for every piece over 2 KiB,
    and a run's streams are tens of thousands of such pieces; each hand-over back waited up to the
    switch interval while the UI thread painted (10M positions: the key took 6.6 s beside the first
    full paint, against 0.6 s alone)."""

    CHUNK = 1 << 20

    def __init__(self, h: Any) -> None:
        self.h, self.size = h, 0
        self.parts: list[Any] = []  # bytes, and arrays' bytes (uint8 views)

    def update(self, data: Any) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= self.CHUNK:
            self.h.update(b"".join(self.parts))
            self.parts, self.size = [], 0

    def hexdigest(self) -> str:
        self.h.update(b"".join(self.parts))
        self.parts, self.size = [], 0
        return str(self.h.hexdigest())


def _column(h: Any, values: list[Any]) -> None:
    """Feed one field of every stream (in order) into the hash: a header that types and sizes each
    value, then the values' bytes end to end. The common columns take one header for all streams:
    1-D arrays of one dtype ("A", the dtype, every length), strings ("S", every UTF-8 length) and
    no value at all ("N", the count); anything else is typed value by value (_update's tags). The sizes in the header fix where each
    value ends, so two columns that differ anywhere hash differently."""
    import numpy as np

    if values and all(type(v) is np.ndarray and v.ndim == 1 for v in values) and len({v.dtype.str for v in values}) == 1:
        sizes = np.fromiter((v.size for v in values), dtype=np.int64, count=len(values))
        h.update(f"A{values[0].dtype.str}:".encode())
        h.update(sizes.view(np.uint8))
        for v in values:  # _Chunked joins them into pieces of about 1 MiB (no copy of the whole column)
            h.update(np.ascontiguousarray(v).view(np.uint8))
    elif all(v is None for v in values):
        h.update(f"N{len(values)}:".encode())
    elif all(type(v) is str for v in values):
        raw = [v.encode("utf-8", "surrogatepass") for v in values]
        h.update(b"S:")
        h.update(np.fromiter((len(r) for r in raw), dtype=np.int64, count=len(raw)).view(np.uint8))
        h.update(b"".join(raw))
    else:
        h.update(b"V:")
        for v in values:
            _update(h, v)


def run_digest(run: Run) -> dict[str, Any]:
    """What the numbers of one run depend on: its path, and a hash of its metadata and of every
    field of every stream (field by field, `_column`: no Python step per stream and field but a
    getattr), with the stream and position counts."""
    import numpy as np

    h = _Chunked(blake2b(digest_size=20))
    _update(h, json.dumps(run.meta, sort_keys=True, default=repr))
    streams = run.streams
    h.update(f"{len(streams)} streams".encode())
    if streams:
        for f in dataclasses.fields(streams[0]):
            h.update(f.name.encode())
            _column(h, [getattr(s, f.name) for s in streams])
    positions = sum(int(np.asarray(s.bits).size) for s in streams)
    return {"path": str(Path(run.path).resolve()), "content": h.hexdigest(), "streams": len(streams),
            "positions": positions}


def cache_key(runs: Sequence[Run], params: dict[str, Any]) -> dict[str, Any]:
    """The whole key of an analysis (see the module docstring); stored in the entry, compared in full."""
    unknown = set(params) - set(PARAM_NAMES)
    if unknown:
        raise ValueError(f"cache_key: unknown parameter(s) {sorted(unknown)}")
    return {
        "cache_schema": CACHE_SCHEMA,
        "code": code_version(),
        "runs": [run_digest(r) for r in runs],
        "params": {name: params.get(name) for name in PARAM_NAMES},
        "machine": this_machine().key(),  # which cost profile is shown depends on the machine (SPEC 6)
    }


def entry_path(key: dict[str, Any]) -> Path:
    text = json.dumps(key, sort_keys=True)
    return cache_dir() / f"{blake2b(text.encode(), digest_size=20).hexdigest()}.json"


def _canonical(obj: Any) -> str:
    """The one text of a JSON value that an entry's digest covers (compact, keys in their order)."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def entry_digest(key: dict[str, Any], body: str) -> str:
    """blake2b of an entry's key (sorted) and the JSON text of what it serves, `body`: an entry
    edited, damaged or pasted together from two entries no longer has its digest."""
    h = blake2b(digest_size=20)
    h.update(json.dumps(key, sort_keys=True).encode())
    h.update(b"\0")
    h.update(body.encode("utf-8", "surrogatepass"))
    return str(h.hexdigest())


_SAID: set[str] = set()  # the entries whose mismatch was said already (said once per process)


def _reject(path: Path, why: str, note: Callable[[str], None] | None) -> None:
    """Delete an entry that failed a check and say why, once per entry and process."""
    _remove(path)
    if note is not None and str(path) not in _SAID:
        _SAID.add(str(path))
        note(f"the analysis cache entry {path.name} {why}; it was removed and the report is computed again.")


_REPORT_MARK = b',"report":'


def _report_text(raw: bytes, entry: dict[str, Any]) -> str:
    """The report's JSON text as stored: `store` writes it last, after the key and the digest, so it
    is everything after the first top-level `,"report":` (a quote inside a string is escaped, so
    that byte sequence is never inside the key). Hashed as read, not re-encoded: re-encoding a
    190 KB report took 15 ms of a warm open's cache read."""
    at = raw.find(_REPORT_MARK)
    if at < 0 or not raw.endswith(b"}"):
        raise ValueError("not an entry as store writes it")
    return raw[at + len(_REPORT_MARK):-1].decode("utf-8")


def _alias_body(entry: dict[str, Any]) -> Any:
    return [entry.get("content"), entry.get("groups"), entry.get("first"), entry.get("warnings")]


def _alias_text(raw: bytes, entry: dict[str, Any]) -> str:
    return _canonical(_alias_body(entry))


def _read_keyed(path: Path, key: dict[str, Any], body: Callable[[bytes, dict[str, Any]], str],
                note: Callable[[str], None] | None = None) -> dict[str, Any] | None:
    """The JSON object at `path` if it is stored under `key` and its digest covers `key` and the text
    of what it serves (`body(raw bytes, entry)`); None when missing or unreadable, and an entry that
    is not JSON, holds another key or fails its digest is deleted (to be rebuilt)."""
    try:
        raw = read_regular(path)  # a FIFO or a device in the cache is never opened for reading (it would block)
    except FileNotFoundError:
        return None
    except SpectermError:
        _remove(path)
        return None
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        entry = None
    if not isinstance(entry, dict) or entry.get("key") != key:
        _remove(path)
        return None
    try:
        ok = entry.get("digest") == entry_digest(key, body(raw, entry))
    except (ValueError, TypeError, RecursionError):
        ok = False
    if not ok:
        _reject(path, "does not match its digest (it was edited or damaged)", note)
        return None
    return entry


def count_mismatch(report: Report, key: dict[str, Any]) -> str | None:
    """What in `report` disagrees with the runs its key describes (per run: its stream count; all
    together: the streams and positions of the pooled set and of the corpora), or None."""
    from specterm.core.report.types import POOLED

    runs = key.get("runs") or []
    streams = sum(int(r.get("streams", 0)) for r in runs)
    positions = sum(int(r.get("positions", 0)) for r in runs)
    if len(report.runs) != len(runs) or any(s.n_streams != int(r.get("streams", -1)) for s, r in zip(report.runs, runs)):
        held = [int(r.get("streams", -1)) for r in runs]
        return f"describes run(s) of {[s.n_streams for s in report.runs]} prompts where the runs hold {held}"
    corpora = [s for name, s in report.sets.items() if name != POOLED]
    pooled = report.sets.get(POOLED)
    got_streams = sum(s.n_streams for s in corpora)
    got_positions = sum(s.n_positions + s.n_positions_gated_out for s in corpora)
    if got_streams != streams or got_positions != positions:
        return f"counts {got_streams} prompts and {got_positions} positions where the runs hold {streams} and {positions}"
    if pooled is not None and (pooled.n_streams != streams or pooled.n_positions + pooled.n_positions_gated_out != positions):
        return f"pools {pooled.n_streams} prompts where the runs hold {streams}"
    return None


def load(key: dict[str, Any], note: Callable[[str], None] | None = None) -> Report | None:
    """The cached report for `key`, or None (missing, unreadable, another key or schema, a digest or
    counts that do not match, or not a report: such an entry is deleted, to be rebuilt; `note` is
    told why, once)."""
    from specterm.core.report.types import Report

    path = entry_path(key)
    entry = _read_keyed(path, key, _report_text, note)
    if entry is None:
        return None
    try:
        report = Report.from_dict(entry["report"])
    except Exception:
        _remove(path)
        return None
    wrong = count_mismatch(report, key)
    if wrong is not None:
        _reject(path, f"{wrong} (another report)", note)
        return None
    try:
        os.utime(path)  # recently used: pruned last
    except OSError:
        pass
    return report


def store(key: dict[str, Any], report: Report) -> Path | None:
    """Write the entry atomically; None when it cannot be written (a read-only home is not an error)."""
    path = entry_path(key)
    try:
        body = _canonical(report.to_dict())
        head = json.dumps({"key": key, "digest": entry_digest(key, body)}, allow_nan=False, separators=(",", ":"))
        text = f"{head[:-1]}{_REPORT_MARK.decode()}{body}}}"  # the report last, as _report_text reads it
    except ValueError:  # a NaN that the report should have made null: do not cache what JSON cannot hold
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, text.encode("utf-8"))
    except OSError:
        return None
    _prune(path.parent)
    return path


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


STALE_TEMP_S = 600.0
"""A temp file of the cache older than this was left by a writer that was killed (SIGKILL between
its open and its rename): no write of an entry takes minutes."""


def remove_stale_temps(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the temp files (store.atomic's ".NAME.HEX.tmp") older than STALE_TEMP_S from `folder`;
    a younger one may be another process's write under way. Returns what was removed."""
    import time

    now = time.time() if now is None else now
    gone = []
    for p in folder.glob(".*.tmp"):
        try:
            if now - p.stat().st_mtime > STALE_TEMP_S:
                p.unlink()
                gone.append(p)
        except OSError:
            pass
    return gone


def _prune(folder: Path, keep: int = MAX_ENTRIES) -> None:
    """Keep the `keep` most recently used entries; remove temp files a killed writer left."""
    remove_stale_temps(folder)
    try:
        entries = [(p.stat().st_mtime_ns, p) for p in folder.glob("*.json")]
    except OSError:
        return
    for _, p in sorted(entries, reverse=True)[keep:]:
        _remove(p)


def cached_analyse(runs: Sequence[Run], *, use_cache: bool = True, on_compute: Callable[[], None] | None = None,
                   note: Callable[[str], None] | None = None, report_alias: dict[str, Any] | None = None,
                   on_hit: Callable[[str], None] | None = None, **params: Any) -> Report:
    """`analysis.analyse(runs, **params)`, read from the cache when an entry for exactly these runs,
    parameters and code exists and proves it (load), else computed (`on_compute` called first) and
    stored; `note` is told once about an entry that failed its checks. `report_alias`: the alias key
    (files_key with REPORT_PAIR) of the bytes `specterm report` parsed `runs` from, every run given,
    when loading them said nothing: the alias `load_by_files` finds the entry by is stored too.
    `on_hit` is told the entry's path when the report was read from the cache (the CLI says so)."""
    from specterm.core.report.analysis import analyse

    key = cache_key(runs, params) if use_cache and enabled() else None
    cached = load(key, note) if key is not None else None
    if cached is not None:
        for summary, run in zip(cached.runs, runs):
            summary.path = str(run.path)  # the runs as named now (analysis.run_summary), never the cache's
        report = cached
        if on_hit is not None and key is not None:
            on_hit(str(entry_path(key)))
    else:
        if on_compute is not None:
            on_compute()
        report = analyse(list(runs), **params)
        if key is not None and store(key, report) is None:
            key = None  # no entry: no alias to it
    if key is not None and report_alias is not None:
        store_alias(report_alias, key, 1, 0)
    return report


# -- aliases: the runs' files -> the entry of what they load to ----------------------------------------
# The key above needs the runs loaded (parsed and validated: about 40-60 ms on the shipped runs) and
# hashed. An alias names an entry by the bytes of the runs' files instead, so that a warm open
# shows the report before it parses them. It is written only by a load that parsed exactly the
# bytes it hashed (store.read_run_files, then load_run(files=...)), and it says: these bytes, with
# this code, parameters and pair, load to the runs of `content` (the entry's full key). The entry it
# points to is still read and checked against that full key (load), and the app checks the alias
# once it has parsed the same bytes (the runs' own key must equal `content`; else the alias is
# deleted and the report recomputed), so an alias can never pair a report with other data unless
# parsing the same bytes with the same code gave other runs.

REPORT_PAIR = None
"""files_key's `group` of `specterm report`: every run given, pooled by store.single_pair (the TUI's
groups leave out the runs without prompts and never refuse a mix, so its aliases are its own)."""


def files_key(files: Sequence[Any], params: dict[str, Any], group: int | None) -> dict[str, Any] | None:
    """An alias's key: cache schema, code (numpy's by numpy_stamp), every run's resolved path and
    the digests of the bytes of its run.json and prompts.jsonl (store.RunFiles, in order), the
    parameters, and which model pair of them is shown (`group`, before the modulo by the number of
    pairs; REPORT_PAIR: the report command's). None when numpy's version cannot be told without
    importing it."""
    unknown = set(params) - set(PARAM_NAMES)
    if unknown:
        raise ValueError(f"files_key: unknown parameter(s) {sorted(unknown)}")
    stamp = numpy_stamp()
    if stamp is None:
        return None

    def digest(raw: bytes | None) -> str | None:
        return None if raw is None else blake2b(raw, digest_size=20).hexdigest()

    return {
        "cache_schema": CACHE_SCHEMA,
        "alias": True,
        "code": f"{core_sources()}+{stamp}",
        "files": [{"path": str(Path(f.path).resolve()), "meta": digest(f.meta), "records": digest(f.records)}
                  for f in files],
        "params": {name: params.get(name) for name in PARAM_NAMES},
        "group": None if group is None else int(group),
        "machine": this_machine().key(),
    }


def alias_path(fkey: dict[str, Any]) -> Path:
    text = json.dumps(fkey, sort_keys=True)
    return cache_dir() / f"{blake2b(text.encode(), digest_size=20).hexdigest()}.alias.json"


def load_alias(fkey: dict[str, Any]) -> tuple[dict[str, Any], int, int, list[str]] | None:
    """(the entry's full key, the number of model pairs, the index of the run whose metadata names
    the pair, the warnings that loading those runs raised) for `fkey`, or None (missing, unreadable,
    another key: such an alias is deleted)."""
    entry = _read_keyed(alias_path(fkey), fkey, _alias_text)
    if entry is None:
        return None
    try:
        content, groups, first, warnings = entry["content"], entry["groups"], entry["first"], entry["warnings"]
        if not isinstance(content, dict) or type(groups) is not int or type(first) is not int or groups < 1 \
                or not 0 <= first < len(fkey["files"]) or not isinstance(warnings, list) \
                or not all(isinstance(w, str) for w in warnings):
            raise ValueError("not an alias")
    except Exception:
        remove_alias(fkey)
        return None
    return content, groups, first, warnings


def store_alias(fkey: dict[str, Any], content: dict[str, Any], groups: int, first: int,
                warnings: Sequence[str] = ()) -> None:
    """Write the alias atomically (nothing when it cannot be written). `warnings`: what loading the runs
    said (Run.warnings, in order), so that an open that finds the report by the alias says it too."""
    path = alias_path(fkey)
    try:
        entry = {"key": fkey, "content": content, "groups": groups, "first": first, "warnings": list(warnings)}
        entry["digest"] = entry_digest(fkey, _canonical(_alias_body(entry)))
        text = json.dumps(entry, separators=(",", ":"))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, text.encode("utf-8"))
    except (OSError, ValueError):
        return


def remove_alias(fkey: dict[str, Any]) -> None:
    _remove(alias_path(fkey))


def load_by_files(fkey: dict[str, Any], paths: Sequence[Any],
                  note: Callable[[str], None] | None = None) -> Report | None:
    """`specterm report`'s warm path: the report of the runs at `paths` (in the order given) whose
    files' bytes have the alias key `fkey` (files_key with REPORT_PAIR), read from the alias's entry
    (`load`: the entry's full key, digest and counts checked) without parsing the runs; None when
    there is none. Only a load that said nothing (no warning, no note) stores such an alias
    (cached_analyse's `report_alias`), so a hit has nothing to say; the runs are named as given now."""
    alias = load_alias(fkey)
    if alias is None:
        return None
    content, groups, _, warnings = alias
    report = load(content, note) if groups == 1 and not warnings else None
    if report is None:
        return None
    resolved = [str(Path(p).resolve()) for p in paths]
    try:
        for summary, run in zip(report.runs, content["runs"]):
            summary.path = str(Path(paths[resolved.index(run["path"])]))  # as cached_analyse names them
    except (ValueError, KeyError, TypeError):
        return None
    return report
