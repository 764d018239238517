"""Writing a run as it is made: the run's lock, its metadata, and the append-only writer with resume.

The lock is `fcntl.flock` on `<run>/run.lock`: the kernel drops it when the holder exits (also on
kill -9), so a stale lock file never blocks anyone; the file keeps the holder's pid so a refusal
can say who holds it. Where `fcntl` does not exist (Windows) the lock is a no-op.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TextIO

from specterm import __version__
from specterm.core.errors import SpectermError
from specterm.core.store.atomic import (
    FILE_MODE,
    check_not_in_run,
    check_visible_name,
    file_kind,
    is_temp_name,
    open_append,
    leftovers_line,
    open_new_file,
    sweep_leftovers,
    write_atomic,
    write_failure,
    write_json_atomic,
)
from specterm.core.store.meta import (
    FORMAT,
    LEGACY_VERSION,
    META_FILE,
    RECORDS_FIELD,
    RECORDS_FILE,
    RESUME_SETTINGS,
    SETTING_FLAGS,
    generation_settings,
    read_meta,
    record_bounds,
    seal_meta,
    validate_meta,
)
from specterm.core.store.modelkeys import model_key, model_label
from specterm.core.store.records import BOM, Stream, decode_line, record_line
from specterm.core.store.files import read_records_file
from specterm.core.store.runs import load_run, split_damaged_tail, stored_lines

LOCK_FILE = "run.lock"
RESUME = "continue the run with `specterm run ... --resume`"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


def lock_holder(path: Path) -> str:
    """The pid written by the session holding the lock (or '?' when unreadable)."""
    try:
        fd = os.open(Path(path) / LOCK_FILE, os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read(64).decode("ascii").strip() or "?"
    except (OSError, UnicodeDecodeError):
        return "?"


class RunLock:
    """Exclusive, non-blocking lock on a run directory; use as a context manager or call release()."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh: TextIO | None = None

    def acquire(self) -> RunLock:
        """Take the lock or refuse in one sentence. The lock file is opened with O_NOFOLLOW: a
        run.lock that is a symlink (which would make the pid land in a file outside the run) is
        refused, never followed."""
        lock_path = self.path / LOCK_FILE
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
                         | getattr(os, "O_NONBLOCK", 0), FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP or lock_path.is_symlink():
                raise SpectermError(f"{lock_path} is a symbolic link, which specterm never writes through; "
                                    "remove it and try again.") from None
            raise SpectermError(f"cannot lock {self.path} for writing ({exc.strerror}); check that the directory is writable.") from None
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            os.close(fd)
            raise SpectermError(f"{lock_path} is {file_kind(kind)}, not a lock file specterm made; remove it and try again.")
        fh = os.fdopen(fd, "r+", encoding="ascii")
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                raise SpectermError(
                    f"{self.path} is being written by another specterm session (pid {lock_holder(self.path)}); "
                    "wait for it to finish or stop it, then try again."
                ) from None
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
        except OSError as exc:
            try:  # closing flushes the pid again: on a full disk that fails too, and must not hide this sentence
                fh.close()
            except OSError:
                pass
            raise write_failure(lock_path, exc) from None
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

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_unlocked(path: str | os.PathLike[str]) -> None:
    """Refuse (one sentence) when another session holds the lock of an existing run directory."""
    path = Path(path)
    if (path / LOCK_FILE).exists() or (path / LOCK_FILE).is_symlink():
        RunLock(path).acquire().release()


def check_writable(path: str | os.PathLike[str], why: str = "this command records its result in run.json") -> None:
    """Refuse, in one sentence and before anything slow, a run directory this session cannot write:
    one locked by another session, or read-only (taking its lock opens run.lock for writing, and a
    temporary file is made and removed beside run.json, as every rewrite of run.json does)."""
    path = Path(path)
    RunLock(path).acquire().release()
    probe = path / f".{META_FILE}.{os.urandom(6).hex()}.tmp"
    try:
        os.close(open_new_file(probe))
        os.unlink(probe)
    except OSError as exc:
        raise SpectermError(f"cannot write in {path} ({exc.strerror}); {why}: make the run writable or copy it "
                            "somewhere writable first.") from None


# ---------------------------------------------------------------------------------- metadata ---

def check_new_run_dir(out: Path, resume: bool) -> None:
    """--out must be a new path we can create outside any run, or (with --resume) an existing run (a folder
    without one is refused, never started afresh); nothing is created."""
    import tempfile

    check_visible_name(out)
    if out.exists() and not out.is_dir():
        raise SpectermError(f"--out {out} is a file, not a run directory; choose another --out.")
    if resume and not os.path.lexists(out / META_FILE):
        raise SpectermError(f"--resume: {out} holds no run to resume (no {META_FILE}); drop --resume to start a new run "
                            "there, or pass the folder of the interrupted run.")
    if not resume:
        check_not_in_run(out)
    if (out / META_FILE).is_file():
        if not resume:
            raise SpectermError(f"{out} already holds a run; pass --resume to continue it or choose another --out.")
        check_unlocked(out)
    elif out.is_dir() and any(p.name != LOCK_FILE and not is_temp_name(p.name) for p in out.iterdir()):
        raise SpectermError(f"{out} exists and is not a specterm run (no {META_FILE}); choose another --out.")
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise SpectermError(f"cannot create {out}: {probe} is not a directory; choose another --out.")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".specterm-probe-", dir=probe))
    except OSError as exc:
        raise SpectermError(f"cannot write under {probe} ({exc.strerror}); choose another --out.") from None


def new_meta(name: str, **fields: Any) -> dict[str, Any]:
    """Metadata skeleton every run starts from; callers add models, generation and cost."""
    return {
        "format": FORMAT,
        "schema_version": LEGACY_VERSION,  # seal_meta raises it to SCHEMA_VERSION once the run has its seals
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
        self.warnings: list[str] = []
        self.lock = RunLock(self.path)
        meta_path = self.path / META_FILE
        if meta_path.exists() or meta_path.is_symlink():
            if not resume:
                raise SpectermError(f"{self.path} already holds a run; pass --resume to continue it or choose another --out.")
            self.lock.acquire()
            try:
                old = read_meta(self.path)
                conflict = resume_conflict(old, meta, check_keys)
                if conflict:
                    raise SpectermError(f"{self.path} {conflict}; resume with the same settings or choose another --out.")
                self.meta = old
                swept = sweep_leftovers(self.path)  # a killed repair's or run.json writer's temp file
                if swept:
                    self.warnings.append(leftovers_line(self.path, swept))
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
            self.meta = {**meta, "checksums": True, RECORDS_FIELD: 0}  # every line it appends carries a checksum: sealed
            self.write_meta()
            try:
                open_append(self.path / RECORDS_FILE).close()
            except OSError as exc:
                raise write_failure(self.path / RECORDS_FILE, exc) from None

    def _mend_tail(self) -> None:
        """Cut a torn final line (an interrupted write: a prefix of a record); give a whole final
        record its missing newline; and keep a whole final record followed by stray bytes (a
        damaged newline, never an interrupted write): the stray bytes are replaced by the newline
        and `warnings` says so. Nothing is opened through a symlink."""
        rec_path = self.path / RECORDS_FILE
        try:
            data = read_records_file(self.path) or b""
            if data.endswith(b"\n"):
                return
            keep = data.rfind(b"\n") + 1
            tail = data[keep:].removeprefix(BOM) if keep == 0 else data[keep:]
            bounds = record_bounds(self.meta)
            require = self.meta.get("checksums") is True
            cut, newline = keep, False
            if tail.strip():
                try:
                    decode_line(tail, "tail", require_checksum=require, bounds=bounds)
                    cut, newline = len(data), True
                except SpectermError:
                    split = split_damaged_tail(tail)
                    if split is not None:
                        try:
                            decode_line(split[0], "tail", require_checksum=require, bounds=bounds)
                        except SpectermError:
                            split = None
                    if split is not None:
                        cut, newline = len(data) - len(split[1]), True
                        self.warnings.append(f"{rec_path}: the last record was whole but {len(split[1])} stray byte(s) "
                                             "followed it where its newline should be; the record is kept, the bytes replaced by a newline.")
            with open_append(rec_path, truncate_to=cut) as fh:
                if newline:
                    fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise write_failure(rec_path, exc) from None

    def write_meta(self) -> None:
        """Atomically replace run.json (store/atomic.py)."""
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
        rec_path = self.path / RECORDS_FILE
        try:
            with open_append(rec_path) as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise write_failure(rec_path, exc, "nothing of this prompt was kept", RESUME) from None
        self.done.add(key)
        # written after the record: the count is a lower bound a load checks prompts.jsonl against (store/runs.py)
        self.update_meta(**{RECORDS_FIELD: len(self.done)})

    def replace(self, stream: Stream) -> None:
        """Replace the stored record of prompt (stream.corpus, stream.id) by `stream`'s (a stream repaired
        in place, `specterm run --backend llama.cpp --resume`): prompts.jsonl is rewritten whole, atomically
        (store/atomic.py: a temp file beside it, fsync'ed, renamed), so a kill leaves the old file or the
        new one, every other record byte for byte."""
        if not self.lock.held:
            raise SpectermError(f"the writer of {self.path} was closed; open the run again with --resume.")
        key = (stream.corpus, stream.id)
        new = record_line(stream).rstrip(b"\n")
        lines, hits = [], 0
        for line in stored_lines(self.path):
            rec = json.loads(line.raw.decode("utf-8"))  # the run was loaded whole when the writer opened it
            if (rec.get("corpus"), rec.get("id")) == key:
                lines.append(new)
                hits += 1
            else:
                lines.append(line.raw)
        if hits != 1:
            raise SpectermError(f"prompt '{stream.id}' ({stream.corpus}) is stored {hits} times in {self.path}; "
                                "run `specterm repair` on it first.")
        rec_path = self.path / RECORDS_FILE
        try:
            write_atomic(rec_path, (raw + b"\n" for raw in lines))
        except OSError as exc:
            raise write_failure(rec_path, exc, "the run is unchanged", RESUME) from None

    def close(self) -> None:
        self.lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_meta_atomic(path: Path, meta: dict[str, Any]) -> None:
    """Replace `path`/run.json atomically (store/atomic.py: a unique temp file beside it, fsync'ed,
    renamed, the directory fsync'ed), with its checksum (meta.seal_meta); a failure (a full disk) is
    one sentence, the old file intact."""
    sealed = seal_meta(meta)
    validate_meta(sealed, Path(path) / META_FILE)  # the one validator: never write what a load would refuse
    try:
        write_json_atomic(Path(path) / META_FILE, sealed)
    except OSError as exc:
        raise write_failure(Path(path) / META_FILE, exc) from None
