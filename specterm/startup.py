"""The two command lines that open the TUI with every default, `specterm` (the runs in ./streams)
and `specterm open RUN...`, started without typer (`run`); every other command line goes to the
typer app of specterm/cli.py, which `run` is handed.

Why apart from cli.py: typer (with click) takes 30-45 ms to import, and the TUI's start-up pays
every millisecond before its first table (issue 21: a warm open paints every table with CIs in
<= 0.5 s). These two command lines need no parsing, so nothing here imports typer unless a sentence
has to be printed. cli.py re-exports these names and its commands call them; the script's entry
point is specterm/launch.py (cli.py imports this module, so this module never imports cli.py).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES

if TYPE_CHECKING:
    from specterm.core.store import Run, RunFiles
    from specterm.headstart import HeadStart


def fail(message: str, code: int = 2) -> None:
    """Print one sentence to stderr, control and bidi characters escaped (text.printable), and exit (no traceback)."""
    import typer

    from specterm.core.report.text import printable

    typer.secho(f"error: {printable(message)}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


@contextmanager
def stderr_status() -> Iterator[Callable[[str], None]]:
    """`say(text)` shows `text` as a transient status line on stderr while the block runs, on a
    terminal only (a pipe or a log gets nothing); the line is gone when the block ends."""
    if not sys.stderr.isatty():
        yield lambda text: None
        return
    from rich.console import Console

    with Console(stderr=True).status("") as status:
        yield lambda text: status.update(text)


def warn(message: str, prefix: str = "warning") -> None:
    """One line on stderr, control and bidi characters escaped (text.printable)."""
    import typer

    from specterm.core.report.text import printable

    typer.secho(f"{prefix}: {printable(message)}", err=True, fg=typer.colors.YELLOW)


def open_tui(runs: List[Path], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, seed: int = SEED, shuffles: int = SHUFFLES,
             use_cache: bool = True, loaded: "Optional[list[Run]]" = None,
             loaded_files: "Optional[list[RunFiles]]" = None, head_start: "Optional[HeadStart]" = None,
             files_read: "Optional[tuple[list[RunFiles], Any, Any]]" = None) -> None:
    """Check the run directories (one clear sentence if one is wrong), then start the app on them.
    `loaded`: the runs already loaded from `runs` (the no-argument form), so the app does not load
    them again; `loaded_files`: the bytes they were parsed from (the app keys the alias by them);
    `head_start`: the child already analysing them (open_streams); `files_read`: warm_read's reading of
    them with these parameters (open_streams, warm). Otherwise they are read here (warm_read) and, when
    no alias is found, the child starts, before Textual is imported (specterm/headstart.py); it is
    stopped when the app ends."""
    from specterm.core.store import read_meta
    from specterm.headstart import HeadStart

    if loaded is None:
        for path in runs:
            read_meta(path)
    params = {"gamma": gamma, "boot": boot, "shuffles": shuffles, "seed": seed}
    if files_read is None and loaded is None and head_start is None and use_cache:
        files_read = warm_read(runs, params)
    if head_start is None and loaded is None and (files_read is None or files_read[2] is None):  # not warm
        head_start = HeadStart.start(runs, params, use_cache=use_cache)
    try:
        _run_app(runs, gamma, boot, seed, shuffles, use_cache, loaded, loaded_files, head_start, files_read)
    finally:
        if head_start is not None:
            head_start.close()


def _run_app(runs: List[Path], gamma: int, boot: int, seed: int, shuffles: int, use_cache: bool,
             loaded: "Optional[list[Run]]", loaded_files: "Optional[list[RunFiles]]",
             head_start: "Optional[HeadStart]", files_read: "Optional[tuple[Any, ...]]") -> None:
    from specterm.app import make_app

    # Every object made so far (modules, classes, functions: textual's and specterm's) lives as long
    # as the process: kept out of the cyclic collector, the full collection that start-up otherwise
    # runs before the first table (17-18 ms of CPU here) has nothing to walk.
    gc.freeze()
    tui = make_app(runs, gamma=gamma, boot=boot, seed=seed, shuffles=shuffles, use_cache=use_cache, loaded=loaded,
                   loaded_files=loaded_files, head_start=head_start, files_read=files_read)
    tui.run()
    if tui.return_code:  # Textual printed the traceback of an unhandled exception: the shell sees the failure
        raise SystemExit(tui.return_code)


def open_streams(opener: Callable[..., Any] | None = None) -> None:
    """`specterm` with no command: the TUI on the runs in ./streams (open_runs). `opener`: open_tui, or
    the one cli.py holds (the typer path passes it, so that a test's stand-in for cli.open_tui is the
    one called)."""
    from specterm.core.store import find_runs

    paths = find_runs("streams")
    if not paths:
        fail("there are no runs in ./streams; make one with `specterm run` or `specterm import`, or pass them with `specterm open RUN...`.")
    open_runs(paths, opener, where="./streams")


def open_runs(paths: List[Path], opener: Callable[..., Any] | None = None, gamma: int = GAMMA_DEFAULT,
              boot: int = BOOT, seed: int = SEED, shuffles: int = SHUFFLES, use_cache: bool = True,
              where: str = "the runs given") -> None:
    """The TUI on the runs `paths` (`specterm`, `specterm open RUN...`): every run that loads is shown and
    every run that does not is named (one warning each); only when none loads is it an error. `open
    RUN...` (cold) checks each run's files and run.json without numpy (_readable) and leaves the
    records to the app's load, which skips a run whose records do not load and names it; `specterm`
    (./streams) loads every run here.

    Warm (the analysis cache has an alias for the bytes of every run's files, core/report/cache.py): every
    run loaded when that alias was written, so none is skipped; its load warnings are said again and
    the app opens on the runs (report first, no numpy before it). Otherwise every run is loaded here,
    once, from bytes read once: the app takes the loaded runs and those bytes as they are (it does
    not read them again, and writes the alias for the next open)."""
    params = {"gamma": gamma, "boot": boot, "shuffles": shuffles, "seed": seed}
    opener = opener or open_tui
    extra = {**_non_default(params), **({} if use_cache else {"use_cache": False})}
    read = warm_read(paths, params) if use_cache else None
    if read is not None and read[2] is not None:  # an alias: its load warnings, and the app takes the bytes read
        for message in read[2][3]:
            warn(message)
        opener(paths, files_read=read, **extra)
        return
    if where != "./streams":  # `open RUN...`: the app loads them itself, after its first frame (no numpy before it)
        good = _readable(paths)
        if read is not None and good == list(paths):
            opener(good, files_read=read, **extra)  # the bytes read for the alias: the app parses them
        else:
            opener(good, **extra)
        return
    from specterm.core.store import load_runs_lenient
    from specterm.headstart import HeadStart

    # the analysis starts now, in a child process, while the runs are loaded here and Textual is
    # imported (specterm/headstart.py); it reads and skips the runs this load skips
    head = HeadStart.start(paths, params, lenient=True, use_cache=use_cache)
    try:
        runs, files, problems = load_runs_lenient(paths)  # one corrupt run must not hide the others
        if not runs and len(problems) == 1:
            fail(problems[0])  # the one run given (or found) does not load: its own sentence
        for run in runs:
            for message in run.warnings:
                warn(message)
        for problem in problems:
            warn(f"skipped {problem}")
        if not runs:
            fail(f"no run in {where} could be read (see the warnings above); fix them with `specterm repair RUN` or re-create them.")
        opener([r.path for r in runs], loaded=runs, loaded_files=files, head_start=head, **extra)
    finally:
        if head is not None:
            head.close()


def _readable(paths: List[Path]) -> List[Path]:
    """The runs among `paths` whose files can be read and whose run.json is valid (no numpy: store.files
    and store.meta), each other one named in a warning; when none is, its sentence (one run) or a summary
    is the error. A record that does not load is found by the app's own load, which names it and shows
    the others (loading.Parsed.skipped)."""
    from specterm.core.errors import SpectermError
    from specterm.core.store import META_FILE, parse_meta, read_run_files

    good, problems = [], []
    for path in paths:
        try:
            parse_meta(read_run_files(path).meta, Path(path) / META_FILE)
            good.append(path)
        except SpectermError as exc:
            problems.append(str(exc))
    if not good:
        fail(problems[0] if len(problems) == 1 else "no run given could be read: " + "; ".join(problems))
    for problem in problems:
        warn(f"skipped {problem}")
    return good


def _non_default(params: dict[str, Any]) -> dict[str, Any]:
    """The analysis parameters that differ from the defaults (an opener given only the defaults is
    called as `specterm` calls it)."""
    defaults = {"gamma": GAMMA_DEFAULT, "boot": BOOT, "shuffles": SHUFFLES, "seed": SEED}
    return {k: v for k, v in params.items() if v != defaults[k]}


def warm_read(paths: List[Path], params: dict[str, Any]) -> "Optional[tuple[list[RunFiles], Any, Any]]":
    """(the bytes of the runs' files, their files key, the cache's alias for them or None), read once
    before the app starts: whether the open is warm decides whether the analysis gets a head start,
    and the app's first load takes them as they are (SpectermApp files_read). None when the cache is
    off or a file cannot be read (the app then reads them and says what is wrong). No numpy."""
    from specterm.core.report import cache
    from specterm.core.errors import SpectermError
    from specterm.core.store import read_run_files

    if not cache.enabled():
        return None
    try:
        files = [read_run_files(p) for p in paths]
    except SpectermError:
        return None
    fkey = cache.files_key(files, params, 0)
    return files, fkey, cache.load_alias(fkey) if fkey is not None else None


def tui_shortcut(argv: list[str]) -> list[Path] | None:
    """The command lines that open the TUI with every default: [] (`specterm`: the runs in ./streams,
    returned as []) and ["open", RUN, ...] with no option. None for anything else (every option,
    --help, a missing RUN, every other command), which typer parses.

    Why: typer parses a command's parameters with pydantic (typer >= 0.2x), whose import and
    adapters cost about 0.1 s of a 0.5 s start, and typer itself 30-45 ms more; these two lines need
    no parsing, so `main` starts them directly, with the same checks and messages as the typer path."""
    if not argv:
        return []
    if argv[0] == "open" and len(argv) > 1 and not any(a.startswith("-") for a in argv[1:]):
        return [Path(a) for a in argv[1:]]
    return None


def run(typer_app: Callable[[], Callable[[], Any]]) -> None:
    """The command line in sys.argv: the TUI's two (tui_shortcut) here, anything else by the typer
    app that `typer_app()` returns (imported only then)."""
    from specterm.core.errors import SpectermError
    from specterm.core.report.text import printable

    try:
        runs = tui_shortcut(sys.argv[1:])
        if runs is None:
            typer_app()()
        else:
            try:
                if runs:
                    open_runs(runs)
                else:
                    open_streams()
            except Exception as exc:  # fail(): typer.Exit, its sentence printed already (typer is imported then)
                typer_module = sys.modules.get("typer")
                if typer_module is not None and isinstance(exc, typer_module.Exit):
                    raise SystemExit(exc.exit_code) from None
                raise
    except SpectermError as exc:
        import typer

        typer.secho(f"error: {printable(str(exc))}", err=True, fg=typer.colors.RED)
        raise SystemExit(2) from None
    except OSError as exc:  # a path the file system refuses (a name over 255 bytes, ...): one sentence, never a traceback
        import typer

        typer.secho(f"error: {printable(os_error_sentence(exc))}", err=True, fg=typer.colors.RED)
        raise SystemExit(2) from None


def os_error_sentence(exc: OSError) -> str:
    """One sentence for an OSError that reached the command line: what failed, on which path, what to do."""
    import errno

    where = f" {exc.filename}" if exc.filename is not None else ""
    if exc.errno == errno.ENAMETOOLONG:
        return f"the path{where} has a name longer than the file system allows (255 bytes per name); use a shorter name."
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk is full writing{where}; free some space and run the command again."
    return f"cannot use{where} ({exc.strerror or exc}); check the path and its permissions."
