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

Every output file a person asks for (`report -o`, `crossstack -o`, the TUI's exports) goes through
`write_output`: the same idiom, plus a refusal of a directory, a missing folder, a run directory and
a run's own file names. A writer holds an flock on its temp name until the rename, so
`sweep_leftovers` removes exactly the temp names of writers that died (a killed import, merge,
repair or run), never a live one's.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
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

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


def is_temp_name(name: str) -> bool:
    """True for a name the store's writers use while a file or directory is unfinished (and for any
    hidden entry): discovery never loads one."""
    return name.startswith(".")


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"))


def file_kind(mode: int) -> str:
    """What a stat mode names, in words ("a FIFO (named pipe)", "a character device", ...)."""
    return next((word for test, word in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | os.PathLike[str], advice: str = "replace it with the file itself") -> bytes:
    """The bytes of `path`, read only if it is a regular file (symlinks to one are followed): a FIFO,
    a device or a socket is refused in one sentence before a byte is read (the open itself never
    blocks: O_NONBLOCK, and the kind is checked on the open descriptor, so nothing can be swapped in
    between). FileNotFoundError passes through (callers treat a missing file their own way); any
    other OSError becomes one sentence."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SpectermError(f"cannot read {path} ({exc.strerror or exc}); check its permissions.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SpectermError(f"{path} is {file_kind(info.st_mode)}, not a regular file, and specterm reads only "
                                f"regular files; {advice}.")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 24)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise SpectermError(f"cannot read {path} ({exc.strerror or exc}); check the file.") from None
    finally:
        os.close(fd)


def check_output_target(target: Path, flag: str = "-o") -> None:
    """Refuse (one sentence) an output path that exists and is not a regular file: a symbolic link,
    a FIFO, a device (/dev/full, /dev/stdout, which is a link to /proc/self/fd/1), a socket or a
    directory. specterm writes only over a regular file or a new name; `-o -` writes to stdout."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SpectermError(f"cannot use {flag} {target} ({exc.strerror or exc}); choose another path.") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpectermError(f"{flag} {target} is {file_kind(info.st_mode)}, and specterm writes only over a regular "
                            f"file or a new name; choose another path, or `{flag} -` for standard output.")


def run_folder_above(path: str | os.PathLike[str]) -> Path | None:
    """The nearest existing folder at or above `path`'s parent that holds a run.json (a run), or None."""
    probe = Path(os.path.abspath(path)).parent
    while True:
        if (probe / RUN_FILE_NAMES[0]).is_file():
            return probe
        if probe == probe.parent:
            return None
        probe = probe.parent


def check_not_in_run(out: str | os.PathLike[str], flag: str = "--out") -> None:
    """Refuse a new run directory inside another run's folder (it would be a run nested in a run,
    which `list` never shows and a copy of the outer run carries along)."""
    outer = run_folder_above(out)
    if outer is not None:
        raise SpectermError(f"{flag} {out} is inside the run {outer}; put new runs beside it (e.g. under streams/), "
                            "not in it.")


MAX_NAME_BYTES = 255  # the longest file name most file systems take (ext4, xfs, btrfs, APFS)


def check_visible_name(out: str | os.PathLike[str], flag: str = "--out") -> None:
    """Refuse a new run directory whose name starts with a dot (discovery never loads a hidden entry,
    is_temp_name, so `specterm list` and the TUI would never show it) or whose path has a name longer
    than MAX_NAME_BYTES (refused before anything slow, not by the first write)."""
    if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in Path(out).parts):
        raise SpectermError(f"{flag} {out} has a name longer than the file system allows ({MAX_NAME_BYTES} bytes per "
                            "name); use a shorter name.")
    if is_temp_name(Path(out).name):
        raise SpectermError(f"{flag} {out} is a hidden name (it starts with a dot), which `specterm list` and the TUI "
                            "never show; choose a name without the leading dot.")


def write_failure(path: str | os.PathLike[str], exc: OSError, advice: str = "check that the directory is writable",
                  again: str = "run the command again") -> SpectermError:
    """One sentence for an OSError met while writing `path` (a full disk says so and what to do:
    free space and `again`, e.g. "continue the run with --resume")."""
    if exc.errno == errno.ENOSPC:
        return SpectermError(f"cannot write {path}: the disk is full (no space left on device); free some space and {again}.")
    if exc.errno == errno.EDQUOT:
        return SpectermError(f"cannot write {path}: the disk quota is exceeded; free some space and {again}.")
    if exc.errno == errno.ENAMETOOLONG:
        return SpectermError(f"cannot write {path}: a name in the path is longer than the file system allows; use a shorter name.")
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
    The temp file is locked (flock) from its creation until after the rename, so `sweep_leftovers`
    tells a live writer's temp file from a dead one's. Raises OSError (the temp file is removed);
    `write_failure` turns it into one sentence."""
    target = Path(target)
    tmp = _temp_name(target, TEMP_FILE_SUFFIX)
    fd = open_new_file(tmp)
    try:
        _lock(fd)
        with os.fdopen(fd, "wb", closefd=False) as fh:
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
    finally:
        os.close(fd)
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


_HELD_DIRS: dict[Path, int] = {}  # temporary directories being built here -> their locked descriptor


def _lock(fd: int) -> None:
    """flock `fd` exclusively (the kernel drops it when the process dies); a no-op without fcntl."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def make_temp_dir(target: Path) -> Path:
    """A new, unique, empty directory beside `target` (`.NAME.XXXXXXXXXXXX.partial`) to build it in,
    locked (flock on the directory) until publish_dir or discard_dir; raises OSError."""
    tmp = _temp_name(target, TEMP_DIR_SUFFIX)
    os.mkdir(tmp, DIR_MODE)
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC)
    except OSError:
        os.rmdir(tmp)
        raise
    _lock(fd)
    _HELD_DIRS[tmp] = fd
    return tmp


def _release_dir(tmp: Path) -> None:
    fd = _HELD_DIRS.pop(tmp, None)
    if fd is not None:
        os.close(fd)


def publish_dir(tmp: Path, target: Path) -> None:
    """Rename the finished directory `tmp` to `target` (which must not exist) and fsync the parent."""
    try:
        os.rename(tmp, target)
    finally:
        _release_dir(tmp)
    fsync_dir(target.parent)


def discard_dir(tmp: Path) -> None:
    """Remove an unfinished temporary directory (best effort)."""
    shutil.rmtree(tmp, ignore_errors=True)
    _release_dir(tmp)


_LEFTOVER = re.compile(r"^\..+\.[0-9a-f]{12}(\.tmp|\.partial)$")
SWEEP_MIN_AGE_S = 2.0  # a writer locks its temp name right after creating it: never race that instant


def sweep_leftovers(folder: str | os.PathLike[str]) -> list[str]:
    """Remove the temp names in `folder` that a dead writer left (a killed import, merge, repair or
    run: `.NAME.XXXXXXXXXXXX.tmp` files and `.partial` directories, named by _temp_name), and return
    their names. A writer holds an flock on its temp name until it renames it, and the kernel drops
    the lock when the writer dies: a temp name whose lock can be taken has no writer. Anything else
    (other hidden entries, names a live writer holds, names younger than SWEEP_MIN_AGE_S) is left."""
    import time

    folder = Path(folder)
    removed: list[str] = []
    if fcntl is None:  # Windows: no flock, so no way to tell a dead writer
        return removed  # type: ignore[unreachable]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return removed
    now = time.time()
    for name in names:
        if not _LEFTOVER.match(name):
            continue
        path = folder / name
        try:
            info = os.lstat(path)
            if now - info.st_mtime < SWEEP_MIN_AGE_S:
                continue
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            if name.endswith(TEMP_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
            removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def leftovers_line(folder: str | os.PathLike[str], removed: list[str]) -> str:
    """The one line that says what sweep_leftovers removed."""
    return f"removed {len(removed)} leftover(s) of interrupted writes in {folder}: {', '.join(removed)}"


RUN_FILE_NAMES = ("run.json", "prompts.jsonl", "run.lock")  # store/meta.py META_FILE, RECORDS_FILE; writer.py LOCK_FILE


def write_output(target: str | os.PathLike[str], data: bytes, advice: str = "choose another -o path") -> Path:
    """Write an output file (a report, a cross-stack table, an export) with the one writer idiom
    (write_atomic: never partial, never through a symlink), or refuse in one sentence: a directory,
    a folder that does not exist, a run directory (one holding run.json) or a run's own file names.
    Returns the path written."""
    target = Path(target)
    try:
        if target.is_dir():
            raise SpectermError(f"{target} is a directory; pass a file name, e.g. {target / 'report.md'}.")
        parent = target.parent
        if not parent.is_dir():
            raise SpectermError(f"the directory {parent} does not exist; create it or {advice}.")
        check_output_target(target)
        if target.name in RUN_FILE_NAMES or run_folder_above(target) is not None:
            raise SpectermError(f"{target} is inside a run directory or is a run's own file, which specterm never "
                                f"overwrites with a report; {advice}.")
        write_bytes_atomic(target, data)
    except OSError as exc:
        raise write_failure(target, exc, advice) from None
    return target
