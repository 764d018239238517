"""The stream store: a run is a directory with `run.json` (metadata) and `prompts.jsonl` (records).

Layout of `streams/NAME/`:

- `run.json`: human-readable metadata, `{"format": "specterm-run", "schema_version": 1, ...}`:
  specterm version, models (spec, source, sha256 where a file), dtype, device, hardware,
  generation parameters, measured cost ratio, creation time.
- `prompts.jsonl`: one JSON object per completed prompt, appended and fsync'ed one prompt at a
  time, so an interrupted run never loses or corrupts a finished prompt. A final line without its
  newline is kept when it is a whole valid record (only the newline was lost); otherwise it is an
  interrupted write: loading ignores it and `RunWriter` cuts it away on resume.
- `run.lock`: the advisory lock of the session writing the run (core/lock.py).

Every record written since checksums exist carries `checksum`, the first 16 hex digits of the
sha256 of its canonical JSON (sorted keys, ASCII, no spaces) without that field, and run.json says
`"checksums": true`; such a run refuses a record without one. Older runs (no `checksums` in
run.json) load without them; `specterm repair RUN` adds them.

Record fields (per prompt, n = number of positions of the continuation y_1..y_n):

    id, corpus, prompt        str (prompt may be null for imported runs)
    n                         int
    bits                      "0110..." a_t = 1 iff draft argmax at t == y_{t+1}, t = 0..n-1
    gate                      "1111..." target argmax at t == y_{t+1} (null: not checked, i.e. imported)
    y, draft_argmax           base64 of little-endian int32 arrays of length n (or null)
    text, piece_ends          decoded pieces of y concatenated, and base64 int32 end offsets (or null)
    draft_conf, target_conf   base64 float32: top-1 probability of draft / target at each t (or null)
    beta                      base64 float32: sum_v min(p_t(v), q_t(v)) (or null)
    stop                      "eos" | "length" | null
    checksum                  16 hex digits (see above; absent in runs written before checksums)

Probabilities (draft_conf, target_conf, beta) must be finite and within [0, 1] (up to float32
rounding, PROB_SLACK).

Arrays are base64 rather than JSON lists so that loading 1M positions stays well under a second.
Nothing is ever unpickled.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from specterm import __version__
from specterm.core.errors import SpectermError
from specterm.core.lock import RunLock

FORMAT = "specterm-run"
SCHEMA_VERSION = 1
META_FILE = "run.json"
RECORDS_FILE = "prompts.jsonl"
CHECKSUM_FIELD = "checksum"
BOM = b"\xef\xbb\xbf"
PROB_SLACK = 1e-5  # float32 rounding: a sum of min(p, q) over 150k entries may land a few ulps above 1

_INT_FIELDS = ("y", "draft_argmax", "piece_ends")
_FLOAT_FIELDS = ("draft_conf", "target_conf", "beta")
_STR_FIELDS = ("id", "corpus", "prompt", "text", "stop")


def encode_array(values: np.ndarray, dtype: str) -> str:
    """Base64 of the little-endian bytes of `values` as `dtype` ('<i4' or '<f4')."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def decode_array(text: str, dtype: str) -> np.ndarray:
    """Inverse of `encode_array`; raises ValueError on bad base64 or a size that is not whole items."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    item = np.dtype(dtype).itemsize
    if len(raw) % item:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {dtype} items")
    return np.frombuffer(raw, dtype=dtype)


def bits_from_str(text: str) -> np.ndarray:
    """'0110' -> array([0, 1, 1, 0], uint8); raises ValueError on any other character."""
    arr = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - ord("0")
    if arr.size and arr.max() > 1:
        raise ValueError("bits must contain only the characters 0 and 1")
    return arr


def bits_to_str(bits: np.ndarray) -> str:
    return (np.asarray(bits, dtype=np.uint8) + ord("0")).tobytes().decode("ascii")


@dataclass
class Stream:
    """One prompt's accept/reject stream and what the oracle kept per position."""

    id: str
    corpus: str
    bits: np.ndarray  # uint8, a_t for t = 0..n-1
    prompt: str | None = None
    gate: np.ndarray | None = None  # uint8, 1 where target argmax == y_{t+1}
    y: np.ndarray | None = None
    draft_argmax: np.ndarray | None = None
    draft_conf: np.ndarray | None = None
    target_conf: np.ndarray | None = None
    beta: np.ndarray | None = None
    text: str | None = None
    piece_ends: np.ndarray | None = None
    stop: str | None = None
    run: str = ""

    @property
    def n(self) -> int:
        return int(self.bits.size)

    @property
    def valid_len(self) -> int:
        """Positions before the first gate failure (all of them when the gate held or was not checked)."""
        if self.gate is None:
            return self.n
        bad = np.flatnonzero(self.gate == 0)
        return int(bad[0]) if bad.size else self.n

    @property
    def a(self) -> np.ndarray:
        """The analysed stream: bits up to the first gate failure."""
        return self.bits[: self.valid_len]

    @property
    def gate_rate(self) -> float:
        if self.gate is None or self.gate.size == 0:
            return 1.0
        return float(self.gate.mean())

    @property
    def pieces(self) -> list[str] | None:
        """Decoded text of each token of y (None when the run did not keep tokens)."""
        if self.text is None or self.piece_ends is None:
            return None
        starts = np.concatenate([[0], self.piece_ends[:-1]])
        return [self.text[s:e] for s, e in zip(starts.tolist(), self.piece_ends.tolist())]

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "id": self.id,
            "corpus": self.corpus,
            "prompt": self.prompt,
            "n": self.n,
            "bits": bits_to_str(self.bits),
            "gate": None if self.gate is None else bits_to_str(self.gate),
            "text": self.text,
            "stop": self.stop,
        }
        for name in _INT_FIELDS:
            val = getattr(self, name)
            rec[name] = None if val is None else encode_array(val, "<i4")
        for name in _FLOAT_FIELDS:
            val = getattr(self, name)
            rec[name] = None if val is None else encode_array(val, "<f4")
        return rec


def record_checksum(rec: dict[str, Any]) -> str:
    """First 16 hex digits of sha256(canonical JSON of `rec` without its checksum field).

    Canonical = sorted keys, ASCII escapes, no spaces: the same payload always gives the same bytes,
    however the line itself was spaced or escaped.
    """
    payload = {k: v for k, v in rec.items() if k != CHECKSUM_FIELD}
    canon = json.dumps(payload, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("ascii")).hexdigest()[:16]


def record_line(stream: Stream) -> bytes:
    """The stored line of `stream`: its record plus checksum, compact JSON, newline-terminated."""
    rec = stream.to_record()
    rec[CHECKSUM_FIELD] = record_checksum(rec)
    try:
        return (json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raise SpectermError(
            f"prompt {stream.id!r} ({stream.corpus!r}) holds a lone surrogate, which is not text; fix its strings."
        ) from None


def _check_text(value: Any, name: str, where: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise SpectermError(f"{where}: '{name}' holds a lone surrogate, which is not text; the file is corrupt.") from None


def stream_from_record(rec: Any, where: str, run: str = "", require_checksum: bool = False) -> Stream:
    """Validate one record (a parsed JSON object) and build its Stream; `where` names it in errors.

    The checksum is verified when present and required when `require_checksum`.
    """
    if not isinstance(rec, dict):
        raise SpectermError(f"{where}: expected a JSON object per line; this is not a specterm stream file.")
    if CHECKSUM_FIELD in rec:
        if rec[CHECKSUM_FIELD] != record_checksum(rec):
            raise SpectermError(f"{where}: the record does not match its checksum; the file is corrupt, restore it or drop the line with `specterm repair`.")
    elif require_checksum:
        raise SpectermError(f"{where}: the record has no checksum although its run stores them; the file is corrupt.")
    for key in ("id", "corpus", "bits"):
        if not isinstance(rec.get(key), str):
            raise SpectermError(f"{where}: field '{key}' must be a string; re-create or re-import the run.")
    for key in _STR_FIELDS:
        _check_text(rec.get(key), key, where)
    try:
        bits = bits_from_str(rec["bits"])
    except (ValueError, UnicodeEncodeError):
        raise SpectermError(f"{where}: 'bits' must be a string of 0 and 1 only; fix or re-import the file.") from None
    n = bits.size
    if "n" in rec and (type(rec["n"]) is not int or rec["n"] != n):
        raise SpectermError(f"{where}: 'n' is {str(rec['n'])[:20]} but 'bits' has {n} positions; the file is corrupt.")
    kw: dict[str, Any] = {}
    if rec.get("gate") is not None:
        try:
            kw["gate"] = bits_from_str(rec["gate"])
        except (ValueError, UnicodeEncodeError, AttributeError):
            raise SpectermError(f"{where}: 'gate' must be a string of 0 and 1 only; the file is corrupt.") from None
        if kw["gate"].size != n:
            raise SpectermError(f"{where}: 'gate' has {kw['gate'].size} positions, 'bits' has {n}; the file is corrupt.")
    for name, dtype in [(f, "<i4") for f in _INT_FIELDS] + [(f, "<f4") for f in _FLOAT_FIELDS]:
        val = rec.get(name)
        if val is None:
            continue
        try:
            arr = decode_array(val, dtype)
        except (ValueError, binascii.Error, AttributeError, UnicodeEncodeError):
            raise SpectermError(f"{where}: field '{name}' is not valid base64 {dtype}; the file is corrupt.") from None
        if arr.size != n:
            raise SpectermError(f"{where}: '{name}' has {arr.size} values, 'bits' has {n}; the file is corrupt.")
        if name in _FLOAT_FIELDS and not bool(np.all((arr >= 0.0) & (arr <= 1.0 + PROB_SLACK))):  # NaN fails both
            raise SpectermError(f"{where}: '{name}' holds values that are not probabilities (NaN, infinite or outside [0, 1]); the file is corrupt.")
        kw[name] = arr
    text = rec.get("text")
    if text is not None:
        if not isinstance(text, str) or "piece_ends" not in kw:
            raise SpectermError(f"{where}: 'text' needs 'piece_ends' beside it; the file is corrupt.")
        ends = kw["piece_ends"]
        if n and (ends[-1] != len(text) or np.any(np.diff(ends) < 0) or ends[0] < 0):
            raise SpectermError(f"{where}: 'piece_ends' does not match 'text'; the file is corrupt.")
    prompt = rec.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise SpectermError(f"{where}: 'prompt' must be a string; the file is corrupt.")
    stop = rec.get("stop")
    if stop is not None and not isinstance(stop, str):
        raise SpectermError(f"{where}: 'stop' must be a string or null; the file is corrupt.")
    return Stream(id=rec["id"], corpus=rec["corpus"], bits=bits, prompt=prompt, text=text, stop=stop, run=run, **kw)


def decode_line(raw: bytes, where: str, run: str = "", require_checksum: bool = False) -> Stream:
    """Parse and validate one stored line. The one error path: whatever goes wrong (bad UTF-8, bad
    JSON, a 5000-digit integer, nesting too deep for the parser, a bad field) is a SpectermError
    that starts with `where` ("FILE:LINE")."""
    try:
        return stream_from_record(json.loads(raw.decode("utf-8")), where, run, require_checksum)
    except SpectermError:
        raise
    except RecursionError:
        raise SpectermError(f"{where}: the line is nested too deeply to be a record; the file is corrupt.") from None
    except UnicodeDecodeError:
        raise SpectermError(f"{where}: the line is not UTF-8 text; the file is corrupt, restore it or drop the line with `specterm repair`.") from None
    except json.JSONDecodeError as exc:
        raise SpectermError(f"{where}: not valid JSON ({exc.msg}); the file is corrupt, restore it or drop the line with `specterm repair`.") from None
    except Exception as exc:  # e.g. ValueError for an integer beyond Python's digit limit
        detail = str(exc).splitlines()[0][:80] if str(exc) else ""
        raise SpectermError(f"{where}: the line cannot be read ({type(exc).__name__}: {detail}); the file is corrupt.") from None


def check_unique(items: Sequence[Any], where: Callable[[int], str], advice: str) -> None:
    """The one uniqueness rule of the store: (corpus, id) names a prompt once.

    `items` have `.corpus` and `.id` (streams or prompts); `where(i)` names item i in the message.
    """
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(items):
        key = (item.corpus, item.id)
        if key in seen:
            raise SpectermError(f"{where(i)}: prompt {item.id!r} ({item.corpus}) appears twice (first at {where(seen[key])}); {advice}")
        seen[key] = i


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


def new_meta(name: str, **fields: Any) -> dict[str, Any]:
    """Metadata skeleton every run starts from; callers add models, generation and cost."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "specterm_version": __version__,
        "name": name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware_info(),
        **fields,
    }


def hardware_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "system": platform.system(),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


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
    if data.startswith(BOM):
        data = data[len(BOM):]
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


def group_by_models(runs: list[Run]) -> list[list[Run]]:
    """Runs split by model pair and pooled within each pair (see core/pooling.py)."""
    from specterm.core.pooling import group_by_models as group

    return group(runs)


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


# ------------------------------------------------------------------------- generation settings ---

RESUME_SETTINGS = ("max_new_tokens", "y_method", "dtype", "decoding", "prompt_encoding")


def y_method(generation: dict[str, Any]) -> str | None:
    """How y was built, without the batch size (which does not change y): 'batched greedy' or
    'speculative decoding, gamma=G'. Older runs only have the free text y_built_with."""
    if isinstance(generation.get("y_method"), str):
        return generation["y_method"]
    text = generation.get("y_built_with")
    if not isinstance(text, str):
        return None
    if text.startswith("speculative"):
        return "speculative decoding, gamma=" + text.rsplit("gamma=", 1)[-1]
    return "batched greedy"


def generation_settings(meta: dict[str, Any]) -> dict[str, Any]:
    """The settings that change what a stored stream means; a resumed run must keep them all."""
    gen = meta.get("generation") or {}
    return {
        "max_new_tokens": gen.get("max_new_tokens"),
        "y_method": y_method(gen),
        "dtype": meta.get("dtype"),
        "decoding": gen.get("decoding"),
        "prompt_encoding": gen.get("prompt_encoding"),
    }


SETTING_FLAGS = {"max_new_tokens": "-n", "y_method": "--spec-gamma", "dtype": "--dtype",
                 "decoding": "the decoding rule", "prompt_encoding": "the prompt encoding"}


def resume_conflict(old: dict[str, Any], new: dict[str, Any], keys: Iterable[str] = ("target", "draft")) -> str | None:
    """One sentence saying how `new` differs from the stored run `old` (models, then generation
    settings), or None. Settings missing on either side are not compared."""
    for key in keys:
        if model_key(old.get(key)) != model_key(new.get(key)):
            return f"was run with a different {key} ({model_label(old.get(key))})"
    a, b = generation_settings(old), generation_settings(new)
    for key in RESUME_SETTINGS:
        if a[key] is not None and b[key] is not None and a[key] != b[key]:
            return f"was run with {key} {a[key]} ({SETTING_FLAGS[key]}), not {b[key]}"
    return None


class RunWriter:
    """Append-only writer: metadata first, then one fsync'ed line per completed prompt.

    Holds the run's lock (core/lock.py) from creation until `close()` (also a context manager).
    With `resume=True` an existing run is reopened: its models and generation settings must match
    (resume_conflict), a torn final line is cut away (a whole final record that only lacks its
    newline gets the newline), and `done` holds the (corpus, id) pairs already stored so the caller
    skips them.
    """

    def __init__(self, path: str | os.PathLike[str], meta: dict[str, Any], resume: bool = False,
                 check_keys: tuple[str, ...] = ("target", "draft")):
        self.path = Path(path)
        self.done: set[tuple[str, str]] = set()
        self.lock = RunLock(self.path)
        meta_path = self.path / META_FILE
        if meta_path.exists():
            if not resume:
                raise SpectermError(f"{self.path} already holds a run; pass --resume to continue it or choose another --out.")
            self.lock.acquire()
            try:
                old = read_meta(self.path)
                conflict = resume_conflict(old, meta, check_keys)
                if conflict:
                    raise SpectermError(f"{self.path} {conflict}; resume with the same settings or choose another --out.")
                self.meta = old
                self._mend_tail()
                self.done = {(s.corpus, s.id) for s in load_run(self.path).streams}
            except BaseException:
                self.lock.release()
                raise
        else:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SpectermError(f"cannot create {self.path} ({exc.strerror}); choose another --out.") from None
            self.lock.acquire()
            self.meta = {**meta, "checksums": True}  # every line this writer appends carries one
            self.write_meta()
            (self.path / RECORDS_FILE).touch()

    def _mend_tail(self) -> None:
        """Cut a torn final line; give a whole final record its missing newline."""
        rec_path = self.path / RECORDS_FILE
        if not rec_path.exists():
            rec_path.touch()
            return
        data = rec_path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        try:
            decode_line(data[keep:].removeprefix(BOM), "tail", require_checksum=self.meta.get("checksums") is True)
        except SpectermError:
            with open(rec_path, "r+b") as fh:
                fh.truncate(keep)
                os.fsync(fh.fileno())
            return
        with open(rec_path, "ab") as fh:
            fh.write(b"\n")
            os.fsync(fh.fileno())

    def write_meta(self) -> None:
        """Atomically replace run.json (write a temp file, then rename)."""
        write_meta_atomic(self.path, self.meta)

    def update_meta(self, **fields: Any) -> None:
        self.meta.update(fields)
        self.write_meta()

    def append(self, stream: Stream) -> None:
        if not self.lock.held:
            raise SpectermError(f"the writer of {self.path} was closed; open the run again with --resume.")
        key = (stream.corpus, stream.id)
        if key in self.done:
            raise SpectermError(f"prompt '{stream.id}' ({stream.corpus}) is already in {self.path}; it was not written twice.")
        line = record_line(stream)
        with open(self.path / RECORDS_FILE, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.done.add(key)

    def close(self) -> None:
        self.lock.release()

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_meta_atomic(path: Path, meta: dict[str, Any]) -> None:
    """Replace `path`/run.json atomically: a unique temp file beside it, fsync'ed, then renamed."""
    fd, tmp = tempfile.mkstemp(prefix=f".{META_FILE}.", suffix=".tmp", dir=path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(meta, indent=2, sort_keys=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path / META_FILE)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------------------------ models ---

def model_key(model: Any) -> Any:
    """What identifies a model across runs: the sha256 of its file when known, else its spec."""
    if isinstance(model, dict):
        return model.get("sha256") or model.get("spec")
    return model


def model_label(model: Any) -> str:
    """A short name of a model for messages: its spec (a hub id, a file name, layers:K)."""
    if isinstance(model, dict):
        return str(model.get("spec") or model.get("sha256") or "unknown model")
    return "no model" if model is None else str(model)


def public_model(desc: dict[str, Any], record_paths: bool = False) -> dict[str, Any]:
    """A model description fit to share: a hub id or layers:K as given; a local file or directory
    named by its last two path parts (e.g. 'qwen2.5-coder-1.5b-instruct/model.gguf') with its
    sha256 and size, without the absolute path unless `record_paths`."""
    out = dict(desc)
    path = out.get("path")
    if out.get("source") in ("gguf", "dir") and isinstance(path, str):
        p = Path(path)
        out["spec"] = f"{p.parent.name}/{p.name}" if p.parent.name else p.name
        if p.is_file():
            out["size"] = p.stat().st_size
        if not record_paths:
            del out["path"]
    return out


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def models_dirs() -> list[Path]:
    """Where model_location looks for a run's local models by name: $SPECTERM_MODELS (os.pathsep
    separated), then ./models."""
    env = os.environ.get("SPECTERM_MODELS", "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [Path("models")]


def model_location(model: Any, override: str | None = None, search: Sequence[Path] | None = None) -> str:
    """The argument to load a run's model with (a path, a hub id or layers:K).

    `override` (e.g. --target/--draft) wins. Otherwise: a hub id or layers:K as recorded; a local
    model at its recorded path when the run kept one (--record-paths) and it still exists; else the
    file/directory found by its recorded name ('parent/file') or file name under the `search`
    directories (default models_dirs()), checked against the recorded sha256 for a file.
    """
    if override:
        return override
    if not isinstance(model, dict):
        raise SpectermError("the run names no model (an imported run?); pass --target and --draft.")
    source, spec = model.get("source"), model.get("spec")
    if source in ("hub", "layers") and isinstance(spec, str):
        return spec
    path = model.get("path")
    if isinstance(path, str) and Path(path).exists():
        return path
    if not isinstance(spec, str):
        raise SpectermError("the run does not say where its model came from; pass --target and --draft.")
    rel = Path(spec)
    want_size, want_sha = model.get("size"), model.get("sha256")
    for root in (models_dirs() if search is None else list(search)):
        if not root.is_dir():
            continue
        candidates = [root / rel, root / rel.name, *sorted(root.glob(f"*/{rel.name}"))]
        for cand in dict.fromkeys(candidates):
            if not cand.exists():
                continue
            if cand.is_file():
                if want_size is not None and cand.stat().st_size != want_size:
                    continue
                if want_sha is not None and sha256_file(cand) != want_sha:
                    continue
            return str(cand)
    dirs = ", ".join(str(d) for d in (models_dirs() if search is None else search))
    raise SpectermError(f"model {spec} was not found under {dirs}; pass its location with --target/--draft or set SPECTERM_MODELS.")


# ------------------------------------------------------------------------ whole-run writing ---

def write_run(path: str | os.PathLike[str], meta: dict[str, Any], streams: Iterable[Stream]) -> Path:
    """Write a complete run at once, atomically: built in a unique temporary directory beside
    `path` (tempfile.mkdtemp), then renamed. Nothing else is ever deleted."""
    path = Path(path)
    if path.exists():
        raise SpectermError(f"{path} already exists; choose another --out or remove it first.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    except OSError as exc:
        raise SpectermError(f"cannot create {path} ({exc.strerror}); choose another --out.") from None
    try:
        meta = {**meta, "checksums": True}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        with open(tmp / RECORDS_FILE, "wb") as fh:
            for s in streams:
                fh.write(record_line(s))
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, path)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise SpectermError(f"cannot write {path} ({exc.strerror or exc}); choose another --out.") from None
        raise
    return path


def merge_runs(paths: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> tuple[Path, list[Stream]]:
    """Merge shard runs of one model pair into a new run `out` (each prompt exactly once).

    The merged run lists its shards' directory names in "merged_from", so discovery under the same
    root skips the shards (discover_runs).
    """
    paths = [Path(p) for p in paths]
    if len({p.resolve() for p in paths}) < len(paths):
        raise SpectermError("a shard is named twice; it is in more than one shard position, and merge refuses to duplicate it.")
    runs = load_runs(paths)
    first = runs[0].meta
    for r in runs[1:]:
        for key in ("target", "draft"):
            if model_key(first.get(key)) != model_key(r.meta.get(key)):
                raise SpectermError(f"{r.path} was run with a different {key}; merge only shards of the same run.")
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

    @property
    def changed(self) -> bool:
        return bool(self.dropped or self.checksummed or self.mended_tail)


def repair_run(path: str | os.PathLike[str]) -> RepairResult:
    """Rewrite prompts.jsonl keeping each valid record once: drops torn and invalid lines and later
    copies of a (corpus, id) already kept, gives every kept record a checksum, and replaces the file
    atomically (a temp file beside it, fsync'ed, renamed) under the run's lock."""
    path = Path(path)
    meta = read_meta(path)
    rec_path = path / RECORDS_FILE
    require = meta.get("checksums") is True
    with RunLock(path):
        kept: list[bytes] = []
        dropped: list[str] = []
        seen: dict[tuple[str, str], tuple[int, dict]] = {}
        added = 0
        lines = stored_lines(path)
        mended = bool(lines) and not lines[-1].complete
        for line in lines:
            where = f"line {line.lineno}"
            try:
                stream = decode_line(line.raw, where, require_checksum=require)
            except SpectermError as exc:
                why = "torn (an interrupted write)" if not line.complete else str(exc).removeprefix(f"{where}: ")
                dropped.append(f"{where}: {why}")
                continue
            rec = json.loads(line.raw.decode("utf-8"))
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
                kept.append(line.raw)
        result = RepairResult(kept=len(kept), dropped=dropped, checksummed=added,
                              mended_tail=mended and not any(d.startswith(f"line {lines[-1].lineno}:") for d in dropped))
        if result.changed or not require:
            fd, tmp = tempfile.mkstemp(prefix=f".{RECORDS_FILE}.", suffix=".tmp", dir=path)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(b"".join(line + b"\n" for line in kept))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, rec_path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            if not require:
                write_meta_atomic(path, {**meta, "checksums": True})
    return result
