"""The one writer idiom of the store: files and directories appear whole or not at all.

A file is written to a unique temporary name in the target's own directory, opened with
`O_CREAT | O_EXCL | O_NOFOLLOW` (a symlink or an existing file at that name is never written
through), fsync'ed, renamed over the target (a symlink at the target is replaced, never
followed), and the directory is fsync'ed so the rename itself survives a crash.

Temporary names start with a dot and end in `.tmp` (files) or `.partial` (directories):
`is_temp_name` is how discovery knows never to load one. Files are created with mode 0666 and
directories 0777 less the umask (0644 / 0755 under the usual umask 022), like any file a person
creates, never mkstemp's private 0600 / 0700.

An OSError becomes one sentence (`write_failure`): "No space left on device" says to free space.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

from specterm.core.errors import SpectermError

TEMP_FILE_SUFFIX = ".tmp"
TEMP_DIR_SUFFIX = ".partial"
FILE_MODE = 0o666  # less the umask
DIR_MODE = 0o777  # less the umask
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def is_temp_name(name: str) -> bool:
    """True for a name the store's writers use while a file or directory is unfinished (and for any
    hidden entry): discovery never loads one."""
    return name.startswith(".")


def write_failure(path: str | os.PathLike[str], exc: OSError, advice: str = "check that the directory is writable") -> SpectermError:
    """One sentence for an OSError met while writing `path` (a full disk says so and what to do)."""
    if exc.errno == errno.ENOSPC:
        return SpectermError(f"cannot write {path}: the disk is full (no space left on device); free some space and run the command again.")
    if exc.errno == errno.EDQUOT:
        return SpectermError(f"cannot write {path}: the disk quota is exceeded; free some space and run the command again.")
    return SpectermError(f"cannot write {path} ({exc.strerror or exc}); {advice}.")


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory so a rename or creation in it is durable (a no-op where directories cannot
    be opened, e.g. Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a directory; the rename is still atomic
        pass
    finally:
        os.close(fd)


def _temp_name(target: Path, suffix: str) -> Path:
    return target.with_name(f".{target.name}.{os.urandom(6).hex()}{suffix}")


def open_new_file(path: Path) -> int:
    """A file descriptor of a new file at `path` for writing: O_EXCL and O_NOFOLLOW, so neither an
    existing file nor a symlink is ever written through."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)


def open_append(path: str | os.PathLike[str], truncate_to: int | None = None) -> BinaryIO:
    """`path` opened for appending (created with FILE_MODE if missing), never through a symlink
    (O_NOFOLLOW); with `truncate_to`, first cut the file to that many bytes. Raises OSError."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
    fh = os.fdopen(fd, "r+b")
    try:
        if truncate_to is not None:
            fh.truncate(truncate_to)
        fh.seek(0, os.SEEK_END)
    except BaseException:
        fh.close()
        raise
    return fh


def write_atomic(target: str | os.PathLike[str], chunks: Iterable[bytes]) -> None:
    """Replace `target` with the concatenated `chunks` atomically (see the module docstring): a
    unique temp name beside it opened with O_EXCL | O_NOFOLLOW, fsync, rename, fsync the directory.
    Raises OSError (the temp file is removed); `write_failure` turns it into one sentence."""
    target = Path(target)
    tmp = _temp_name(target, TEMP_FILE_SUFFIX)
    fd = open_new_file(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(target.parent)


def write_bytes_atomic(target: str | os.PathLike[str], data: bytes) -> None:
    """`write_atomic` of one bytes object."""
    write_atomic(target, (data,))


def json_text(obj: Any) -> str:
    """The stored form of a JSON metadata file: indented, key order kept, newline-terminated."""
    return json.dumps(obj, indent=2) + "\n"


def write_json_atomic(target: str | os.PathLike[str], obj: Any) -> None:
    """`write_bytes_atomic` of `obj` as indented JSON (UTF-8)."""
    write_bytes_atomic(target, json_text(obj).encode("utf-8"))


def make_temp_dir(target: Path) -> Path:
    """A new, unique, empty directory beside `target` (`.NAME.XXXXXXXXXXXX.partial`) to build it in;
    raises OSError."""
    tmp = _temp_name(target, TEMP_DIR_SUFFIX)
    os.mkdir(tmp, DIR_MODE)
    return tmp


def publish_dir(tmp: Path, target: Path) -> None:
    """Rename the finished directory `tmp` to `target` (which must not exist) and fsync the parent."""
    os.rename(tmp, target)
    fsync_dir(target.parent)


def discard_dir(tmp: Path) -> None:
    """Remove an unfinished temporary directory (best effort)."""
    shutil.rmtree(tmp, ignore_errors=True)
