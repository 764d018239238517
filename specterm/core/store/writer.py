"""Writing a run as it is made: the run's lock, its metadata, and the append-only writer with resume.

The lock is `fcntl.flock` on `<run>/run.lock`: the kernel drops it when the holder exits (also on
kill -9), so a stale lock file never blocks anyone; the file keeps the holder's pid so a refusal
can say who holds it. Where `fcntl` does not exist (Windows) the lock is a no-op.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from specterm import __version__
from specterm.core.errors import SpectermError
from specterm.core.store.atomic import write_json_atomic
from specterm.core.store.models import model_key, model_label
from specterm.core.store.records import BOM, Stream, decode_line, record_line
from specterm.core.store.runs import (
    FORMAT,
    META_FILE,
    RECORDS_FILE,
    SCHEMA_VERSION,
    load_run,
    read_meta,
)

LOCK_FILE = "run.lock"

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


def lock_holder(path: Path) -> str:
    """The pid written by the session holding the lock (or '?' when unreadable)."""
    try:
        return (Path(path) / LOCK_FILE).read_text(encoding="ascii").strip() or "?"
    except (OSError, UnicodeDecodeError):
        return "?"


class RunLock:
    """Exclusive, non-blocking lock on a run directory; use as a context manager or call release()."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = None

    def acquire(self) -> RunLock:
        try:
            fh = open(self.path / LOCK_FILE, "a+", encoding="ascii")
        except OSError as exc:
            raise SpectermError(f"cannot lock {self.path} for writing ({exc.strerror}); check that the directory is writable.") from None
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                raise SpectermError(
                    f"{self.path} is being written by another specterm session (pid {lock_holder(self.path)}); "
                    "wait for it to finish or stop it, then try again."
                ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh
        return self

    def release(self) -> None:
        if self._fh is not None:
            if fcntl is not None:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    @property
    def held(self) -> bool:
        return self._fh is not None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_unlocked(path: str | os.PathLike[str]) -> None:
    """Refuse (one sentence) when another session holds the lock of an existing run directory."""
    path = Path(path)
    if (path / LOCK_FILE).exists():
        RunLock(path).acquire().release()


# ---------------------------------------------------------------------------------- metadata ---

def new_meta(name: str, **fields: Any) -> dict[str, Any]:
    """Metadata skeleton every run starts from; callers add models, generation and cost."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "specterm_version": __version__,
        "name": name,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
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

# ------------------------------------------------------------------------- generation settings ---

RESUME_SETTINGS = ("max_new_tokens", "y_method", "dtype", "decoding", "prompt_encoding")


def y_method(generation: dict[str, Any]) -> str | None:
    """How y was built, without the batch size (which does not change y): 'batched greedy' or
    'speculative decoding, gamma=G'. Older runs only have the free text y_built_with."""
    method = generation.get("y_method")
    if isinstance(method, str):
        return method
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

    Holds the run's lock (above) from creation until `close()` (also a context manager).
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

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_meta_atomic(path: Path, meta: dict[str, Any]) -> None:
    """Replace `path`/run.json atomically (store/atomic.py: a unique temp file beside it, fsync'ed,
    renamed, the directory fsync'ed)."""
    write_json_atomic(Path(path) / META_FILE, meta)
