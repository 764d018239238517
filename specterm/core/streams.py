"""The stream store: a run is a directory with `run.json` (metadata) and `prompts.jsonl` (records).

Layout of `streams/NAME/`:

- `run.json`: human-readable metadata, `{"format": "specterm-run", "schema_version": 1, ...}`:
  specterm version, models (spec, source, sha256 where a file), dtype, device, hardware,
  generation parameters, measured cost ratio, creation time.
- `prompts.jsonl`: one JSON object per completed prompt, appended and fsync'ed one prompt at a
  time, so an interrupted run never loses or corrupts a finished prompt. A final line without its
  newline is an interrupted write: loading ignores it and `RunWriter` truncates it away on resume.

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

Arrays are base64 rather than JSON lists so that loading 1M positions stays well under a second.
Nothing is ever unpickled.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from specterm import __version__
from specterm.core.errors import SpectermError

FORMAT = "specterm-run"
SCHEMA_VERSION = 1
META_FILE = "run.json"
RECORDS_FILE = "prompts.jsonl"

_INT_FIELDS = ("y", "draft_argmax", "piece_ends")
_FLOAT_FIELDS = ("draft_conf", "target_conf", "beta")


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


def stream_from_record(rec: Any, where: str, run: str = "") -> Stream:
    """Validate one record (a parsed JSON object) and build its Stream; `where` names it in errors."""
    if not isinstance(rec, dict):
        raise SpectermError(f"{where}: expected a JSON object per line; this is not a specterm stream file.")
    for key in ("id", "corpus", "bits"):
        if not isinstance(rec.get(key), str):
            raise SpectermError(f"{where}: field '{key}' must be a string; re-create or re-import the run.")
    try:
        bits = bits_from_str(rec["bits"])
    except (ValueError, UnicodeEncodeError):
        raise SpectermError(f"{where}: 'bits' must be a string of 0 and 1 only; fix or re-import the file.") from None
    n = bits.size
    if "n" in rec and rec["n"] != n:
        raise SpectermError(f"{where}: 'n' is {rec['n']} but 'bits' has {n} positions; the file is corrupt.")
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
    return Stream(
        id=rec["id"],
        corpus=rec["corpus"],
        bits=bits,
        prompt=prompt,
        text=text,
        stop=rec.get("stop"),
        run=run,
        **kw,
    )


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
    meta_path = path / META_FILE
    if not path.is_dir():
        raise SpectermError(f"{path} is not a run directory; pass a directory under streams/ (see `specterm list`).")
    if not meta_path.is_file():
        raise SpectermError(f"{path} has no {META_FILE}, so it is not a specterm run; pass a directory made by `specterm run` or `specterm import`.")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpectermError(f"{meta_path} is not valid JSON ({exc}); restore it or re-create the run.") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SpectermError(f"{meta_path} is not a specterm run file (no \"format\": \"{FORMAT}\"); pass a run made by specterm.")
    version = meta.get("schema_version")
    if not isinstance(version, int):
        raise SpectermError(f"{meta_path} has no integer schema_version; the file is corrupt.")
    if version > SCHEMA_VERSION:
        raise SpectermError(
            f"{meta_path} was written with stream schema {version}, newer than this specterm reads ({SCHEMA_VERSION}); upgrade specterm."
        )
    return meta


def iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for each complete line of prompts.jsonl; skips a torn final line."""
    rec_path = path / RECORDS_FILE
    if not rec_path.exists():
        return
    data = rec_path.read_bytes()
    lines = data.split(b"\n")
    # The last element is b"" when the file ends with a newline; otherwise it is a torn write.
    complete = lines[:-1]
    for lineno, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SpectermError(f"{rec_path}:{lineno}: not valid JSON ({exc.__class__.__name__}); the file is corrupt, restore it or re-run.") from None


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load and validate a run directory. Raises SpectermError with one sentence on any problem."""
    path = Path(path)
    meta = read_meta(path)
    run = Run(path=path, meta=meta)
    seen: set[tuple[str, str]] = set()
    rec_path = path / RECORDS_FILE
    for lineno, rec in iter_records(path):
        stream = stream_from_record(rec, f"{rec_path}:{lineno}", run=run.name)
        key = (stream.corpus, stream.id)
        if key in seen:
            raise SpectermError(f"{rec_path}:{lineno}: prompt '{stream.id}' ({stream.corpus}) appears twice; the file is corrupt.")
        seen.add(key)
        run.streams.append(stream)
    return run


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    return [load_run(p) for p in paths]


def group_by_models(runs: list[Run]) -> list[list[Run]]:
    """Runs split by (target, draft), in first-seen order: only runs of one model pair are pooled."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        key = (repr(model_key(run.meta.get("target"))), repr(model_key(run.meta.get("draft"))))
        groups.setdefault(key, []).append(run)
    return list(groups.values())


def find_runs(root: str | os.PathLike[str] = "streams") -> list[Path]:
    """Run directories directly under `root` (those with a run.json), sorted by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / META_FILE).is_file())


class RunWriter:
    """Append-only writer: metadata first, then one fsync'ed line per completed prompt.

    With `resume=True` an existing run is reopened: its metadata must name the same models, a
    torn final line is cut away, and `done` holds the (corpus, id) pairs already stored so the
    caller skips them.
    """

    def __init__(self, path: str | os.PathLike[str], meta: dict[str, Any], resume: bool = False,
                 check_keys: tuple[str, ...] = ("target", "draft")):
        self.path = Path(path)
        self.done: set[tuple[str, str]] = set()
        meta_path = self.path / META_FILE
        if meta_path.exists():
            if not resume:
                raise SpectermError(f"{self.path} already holds a run; pass --resume to continue it or choose another --out.")
            old = read_meta(self.path)
            for key in check_keys:
                if model_key(old.get(key)) != model_key(meta.get(key)):
                    raise SpectermError(
                        f"{self.path} was run with a different {key} ({model_key(old.get(key))}); resume with the same models or choose another --out."
                    )
            self.meta = old
            self._truncate_torn_tail()
            for _, rec in iter_records(self.path):
                if isinstance(rec, dict):
                    self.done.add((str(rec.get("corpus")), str(rec.get("id"))))
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self.meta = meta
            self.write_meta()
            (self.path / RECORDS_FILE).touch()

    def _truncate_torn_tail(self) -> None:
        rec_path = self.path / RECORDS_FILE
        if not rec_path.exists():
            rec_path.touch()
            return
        data = rec_path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(rec_path, "r+b") as fh:
                fh.truncate(keep)

    def write_meta(self) -> None:
        """Atomically replace run.json (write a temp file, then rename)."""
        tmp = self.path / (META_FILE + ".tmp")
        tmp.write_text(json.dumps(self.meta, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / META_FILE)

    def update_meta(self, **fields: Any) -> None:
        self.meta.update(fields)
        self.write_meta()

    def append(self, stream: Stream) -> None:
        key = (stream.corpus, stream.id)
        if key in self.done:
            raise SpectermError(f"prompt '{stream.id}' ({stream.corpus}) is already in {self.path}; it was not written twice.")
        line = json.dumps(stream.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n"
        with open(self.path / RECORDS_FILE, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.done.add(key)


def model_key(model: Any) -> Any:
    """What identifies a model across runs: the sha256 of its file when known, else its spec."""
    if isinstance(model, dict):
        return model.get("sha256") or model.get("spec")
    return model


def write_run(path: str | os.PathLike[str], meta: dict[str, Any], streams: Iterable[Stream]) -> Path:
    """Write a complete run at once, atomically: built in a sibling temp directory, then renamed."""
    path = Path(path)
    if path.exists():
        raise SpectermError(f"{path} already exists; choose another --out or remove it first.")
    tmp = path.with_name(path.name + ".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with open(tmp / RECORDS_FILE, "w", encoding="utf-8") as fh:
        for s in streams:
            fh.write(json.dumps(s.to_record(), ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, path)
    return path
