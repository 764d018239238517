"""An advisory lock on a run directory, held while one session writes it.

`fcntl.flock` on `<run>/run.lock`: the kernel drops the lock when the holder exits (also on
kill -9), so a stale lock file never blocks anyone; the file keeps the holder's pid so a refusal
can say who holds it. Where `fcntl` does not exist (Windows) the lock is a no-op.
"""

from __future__ import annotations

import os
from typing import IO
from pathlib import Path

from specterm.core.errors import SpectermError

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

    def acquire(self) -> "RunLock":
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

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def check_unlocked(path: str | os.PathLike[str]) -> None:
    """Refuse (one sentence) when another session holds the lock of an existing run directory."""
    path = Path(path)
    if (path / LOCK_FILE).exists():
        RunLock(path).acquire().release()
