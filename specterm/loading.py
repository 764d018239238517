"""Loading runs for the app, without the app: the cache alias, the head start, point-then-CI and the
withdrawal of a report found not to be its runs'. No Textual here (the app only paints what a load
says); tested without Pilot (tests/test_loading.py).

A load says what it has through `emit(event)` (the app posts each as a message, messages.py), from
its worker thread and, for the head start's full report, from one more thread:

    Stage(text)                    what it is doing now (the loading line)
    Shown(report, complete, ...)   show this report: the point estimates (complete=False, boot > 0),
                                   every CI before the borderline check (complete=False, cis=True)
                                   or the full one; report=None withdraws what was shown (a cached
                                   or head-start report whose runs were not these: the right one follows)
    Parsed(runs, groups, skipped)  the runs of the pair shown, parsed (the screens' streams), and one
                                   sentence per run given that did not load (the others are shown)
    Drafted(drafters)              the drafter runs among them (SPEC 2b: no per-position bits), each
                                   drafter's Which draft? rows (core/drafted/route.drafter_runs): after
                                   the pair's report, or alone when only drafter runs were given

The order of one load: a report found by the bytes of the runs' files (core/report/cache.py aliases) or
sent by the head start's child (specterm/headstart.py) is shown before the runs are parsed, and kept
only when the runs parsed from those same bytes have its cache key (else withdrawn); otherwise
`analyse` hands over the point estimates before its bootstrap, then every CI before the borderline
check of the verdicts (about half of the bootstrap's time), then the full report; each replaces the
one before whole: a value and a CI on screen always come from one report of one load.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from specterm.core.errors import SpectermError
from specterm.core.report.fmt import computing_line, parsing_line

if TYPE_CHECKING:
    from specterm.core.drafted.which_draft import DrafterRuns
    from specterm.core.report.types import Report
    from specterm.core.store import Run, RunFiles
    from specterm.headstart import HeadStart

QUIT_STORE_WAIT_S = 0.5
"""At most this long quitting waits for the load to store the report shown (the head start's is stored
once the runs are parsed here: milliseconds for a small run); never for an analysis or a parse."""

PAINT_WAIT_S = 1.0
"""At most this long a load waits, after handing over a report found before the runs are parsed (an
alias's, the head start's), for the frame that shows it: parsing the runs holds the GIL."""


@dataclass(frozen=True)
class Stage:
    """What the load is doing now (parsing, computing): the line a screen shows while it waits."""

    text: str
    load_id: int


@dataclass(frozen=True)
class Shown:
    """A report to show (None: withdraw the one shown)."""

    report: Report | None
    load_id: int
    complete: bool = True
    """False for the point estimates (boot = 0: no CIs) while the bootstrap runs, and (`cis`) for the
    report with every CI while its verdicts are checked under the other bootstrap seeds."""
    cis: bool = False
    """With complete=False: every CI is in; no verdict is marked borderline yet (SPEC 4's check of
    seeds 1..4 runs: analysis.analyse's on_cis)."""
    pair_meta: dict[str, Any] | None = None
    """The metadata of the pair's first run, when the report comes before the runs."""
    painted: threading.Event | None = None
    """Set by the painter once the frame showing this report is painted (the load waits for it)."""
    groups: int | None = None
    """How many model pairs the runs hold, when the report comes before the runs."""


@dataclass(frozen=True)
class Parsed:
    """The runs of the pair shown (of `groups` model pairs) are parsed; `skipped`: one sentence per run
    given that did not load (the others are shown)."""

    runs: list[Run]
    load_id: int
    groups: int
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drafted:
    """The drafter runs given (no per-position bits: the pair's screens leave them out), each drafter's
    Which draft? rows, for the Decide screen."""

    drafters: list[DrafterRuns]
    load_id: int


DRAFTERS_ONLY = ("{names}: drafter runs only (SPEC 2b: no per-position bits), so this screen's statistics do not "
                 "apply to them; Decide (6) compares them (Which draft?), `specterm report` gives their report, and "
                 "a draft-model run of the same target opened beside them fills the other screens.")
"""The one sentence every screen but Decide shows when only drafter runs were opened."""


Event = Union[Stage, Shown, Parsed, Drafted]
Emit = Callable[[Event], None]


@dataclass
class Prefetch:
    """What `Loader.warm` read for its load (the worker parses the runs from these bytes)."""

    load_id: int
    paths: tuple[Path, ...]
    files: list[RunFiles]
    fkey: dict[str, Any] | None
    alias: tuple[dict[str, Any], int, int, list[str]] | None
    """The alias whose report `warm` showed (None when it showed none)."""
    painted: threading.Event


class Loader:
    """What the loads of one app share: the analysis parameters, the runs already parsed (and their
    bytes), the head start's child and startup.warm_read's reading of the first load's files."""

    def __init__(self, params: dict[str, int], *, use_cache: bool = True, paths: Sequence[Path] = (),
                 loaded: Sequence[Run] | None = None, loaded_files: Sequence[RunFiles] | None = None,
                 head_start: HeadStart | None = None, files_read: tuple[Any, ...] | None = None) -> None:
        self.params = dict(params)
        """gamma, boot, shuffles, seed of every load."""
        self.use_cache = use_cache
        """Read and write the analysis cache (core/report/cache.py; SPECTERM_CACHE=0 also turns it off)."""
        self.loaded: tuple[tuple[Path, ...], list[Run]] | None = (
            (tuple(Path(p) for p in paths), list(loaded)) if loaded is not None else None)
        """(paths, runs) as loaded from those paths: the CLI's own load (`specterm` loads every run to
        warn about bad ones) and each load's, so that neither the first table nor `M` to a pair not
        yet shown reads the runs again. Given as `loaded`, they must be `load_runs(paths)`."""
        self.loaded_files = list(loaded_files) if loaded is not None and loaded_files is not None else None
        """The bytes `loaded` was parsed from (store.read_run_files), if the CLI kept them: a load then
        writes the alias a later open finds the report by."""
        self.head_start = head_start
        """The child analysing the first load's runs (specterm/headstart.py), until that load takes it."""
        self.head_child = head_start
        """The same child, kept after its load took it (for `M`: it stores the other pairs); `close`."""
        self.files_read = files_read
        """(files, files key, alias or None) of the first load's paths as startup.warm_read read them for
        these parameters and the first pair, taken by `warm` instead of reading them again."""
        self.prefetched: Prefetch | None = None
        """What `warm` read, for that load."""
        self.drafted: tuple[tuple[Path, ...], list[DrafterRuns]] | None = None
        """(paths, the drafter runs' rows) of the last load that had drafter runs (`M` does not analyse them again)."""
        self.stored: tuple[int, threading.Event] | None = None
        """(load id, set once that load's report is in the cache): the app, quitting while the report is
        shown, waits for it (at most QUIT_STORE_WAIT_S), so the next start is warm."""
        self.current: Load | None = None
        """The last load started (`quit` stores its head start's report if the load could not yet)."""
        self.closing = threading.Event()
        """Set when the app quits (`quit`): every load stops at its next step and writes nothing more."""
        self.writing = threading.Lock()
        """Held around each write of a load to the cache; `quit` takes it and keeps it, so a write under
        way ends whole (each is one atomic file) and none starts after."""

    def forget_runs(self) -> None:
        """The next load reads its runs again (the oracle's output may have grown since: same path)."""
        self.loaded = None
        self.loaded_files = None
        self.drafted = None

    def close(self) -> None:
        """Stop the head start's child (it may still analyse the other pairs, for `M`)."""
        if self.head_child is not None:
            self.head_child.close()

    def quit(self, load_id: int, shown_complete: bool) -> None:
        """The app quits: no load computes or writes any more, and no finished report is lost. When the
        report shown is load `load_id`'s full one, the load gets QUIT_STORE_WAIT_S to store it; a head
        start's report that the load is still checking (parsing the runs: seconds at 10M positions) is
        stored here under the child's key instead (the next start is warm). A write under way ends
        whole (one atomic file); none starts after. A load still parsing or analysing runs in a
        daemon thread (`run_detached`) and ends with the process."""
        stored = self.stored[1] if self.stored is not None and self.stored[0] == load_id and shown_complete else None
        if stored is not None:
            stored.wait(QUIT_STORE_WAIT_S)
        self.closing.set()
        self.writing.acquire(timeout=QUIT_STORE_WAIT_S)  # not released: no load's write starts after this
        load = self.current
        if stored is not None and not stored.is_set() and load is not None and load.load_id == load_id:
            load.store_head_report()  # before the child is closed: its key is read from it
        self.close()

    def cache_on(self) -> bool:
        from specterm.core.report import cache

        return self.use_cache and cache.enabled()

    def warm(self, paths: Sequence[Path], load_id: int, group: int) -> Shown | None:
        """A cached report found by the bytes of the runs' files (a warm open, core/report/cache.py aliases),
        looked for before the first frame: about 20 ms of reading and JSON. The bytes (and the alias,
        when found) go to load `load_id` (`prefetched`), which parses the runs from them once this
        report's frame is painted and checks that they are the entry's. None when there is none; a
        file that cannot be read is left to the load, which says what is wrong."""
        from specterm.core.report import cache
        from specterm.core.store import META_FILE, parse_meta, read_run_files

        if self.loaded is not None or not self.cache_on():
            return None
        key_paths = tuple(Path(p) for p in paths)
        read, self.files_read = self.files_read, None
        if read is not None and group == 0:
            files, fkey, alias = read
        else:
            try:
                files = [read_run_files(p) for p in key_paths]
            except SpectermError:
                return None
            fkey = cache.files_key(files, self.params, group)
            alias = cache.load_alias(fkey) if fkey is not None else None
        report = cache.load(alias[0]) if alias is not None else None
        painted = threading.Event()
        self.prefetched = Prefetch(load_id, key_paths, list(files), fkey, alias if report is not None else None, painted)
        if report is None or alias is None:
            return None
        first = parse_meta(files[alias[2]].meta, key_paths[alias[2]] / META_FILE)  # the crumb's pair
        return Shown(report, load_id, pair_meta=first, painted=painted, groups=alias[1])

    def load(self, paths: Sequence[Path], load_id: int, group: int, emit: Emit,
             cancelled: Callable[[], bool] = lambda: False) -> None:
        """Load the runs at `paths` (unless loaded already) and show the report of model pair `group`
        (modulo the number of pairs): see the module docstring. Runs in a worker thread; `cancelled`
        says when the painter no longer wants this load (nothing more is shown then)."""
        stored = threading.Event()
        self.stored = (load_id, stored)
        self.current = Load(self, paths, load_id, group, emit, lambda: self.closing.is_set() or cancelled())
        if self.current.run():
            stored.set()

    def write(self, store: Callable[[], Any]) -> bool:
        """Run one cache write `store()` unless the app is quitting (then nothing: False)."""
        while not self.writing.acquire(timeout=0.05):
            if self.closing.is_set():  # quit holds the lock for good
                return False
        try:
            if self.closing.is_set():
                return False
            store()
            return True
        finally:
            self.writing.release()


def run_detached(target: Callable[[], None], cancelled: Callable[[], bool], poll_s: float = 0.05) -> None:
    """Run `target` in a daemon thread and wait for it, but return as soon as `cancelled()`: the app's
    worker (a thread of asyncio's executor, which the app joins as it exits) then never holds the exit
    up for a parse or an analysis, which goes on in the daemon thread until it stops at its next step or
    the process ends. Its exception, if it ends with one, is raised here (the worker reports it)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # handed to the waiting worker
            failed.append(exc)

    thread = threading.Thread(target=run, name="specterm-load", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(poll_s)
        if cancelled():
            return
    if failed:
        raise failed[0]


class Load:
    """One load: its request, what it has read so far, and the steps that take it to a report."""

    def __init__(self, loader: Loader, paths: Sequence[Path], load_id: int, group: int, emit: Emit,
                 cancelled: Callable[[], bool]) -> None:
        self.loader = loader
        self.paths = tuple(Path(p) for p in paths)
        self.load_id = load_id
        self.group = group
        self.emit = emit
        self.cancelled = cancelled
        self.params = dict(loader.params)
        self.use_cache = loader.cache_on()
        self.point_first = self.params["boot"] > 0
        """Point estimates first (their CIs follow): whenever there is a bootstrap."""
        self.files: list[RunFiles] | None = None
        self.all_runs: list[Run] | None = None
        self.skipped: list[str] = []
        """One sentence per run given that did not load (parse): the others are shown."""
        self.fkey: dict[str, Any] | None = None
        self.alias: tuple[dict[str, Any], int, int, list[str]] | None = None
        """The alias whose report was shown before the runs were parsed."""
        self.painted: threading.Event | None = None
        self.head: HeadStart | None = None
        """The head start, while its reports are this load's."""
        self.head_report: Report | None = None
        self.head_complete = False
        self.head_full: list[Report | None] = []
        """The child's full report, read by `head_reader` while the runs are parsed here."""
        self.head_reader: threading.Thread | None = None
        self.drafter_runs: list[Run] = []
        """The drafter runs among the runs given (parse): their rows go out after the pair's report."""

    def run(self) -> bool:
        """The load's steps; True when its report is in the cache (or was read from it) as it ends."""
        self.take_head()
        self.read()
        if self.alias is None and self.all_runs is None and self.files is not None:
            size = sum(len(f.meta) + len(f.records or b"") for f in self.files)
            self.say(parsing_line(len(self.files), size))
        if self.head is not None:
            self.head_first()
        if self.painted is not None and (self.alias is not None or self.head is not None):
            self.painted.wait(PAINT_WAIT_S)  # parsing the runs holds the GIL: after the report's frame (or 1 s)
        if self.head is not None and not self.head_complete:
            self.read_head_full()
        runs, groups = self.parse()
        key = self.cache_key(runs)
        if self.alias is not None and self.alias_holds(key):
            self.drafters()
            return True  # the report shown is this key's (checked against the entry in full)
        report = self.head_kept(runs, key) if self.head is not None else None
        if report is None:
            report = self.cached_or_analysed(runs, key)
            if report is None:
                return False  # cancelled
        self.store_alias(runs, key, groups)
        self.show(report)
        self.drafters()
        return True

    # -- the steps ---------------------------------------------------------------------------------
    def say(self, text: str) -> None:
        self.emit(Stage(text, self.load_id))

    def show(self, report: Report | None, **kw: Any) -> None:
        self.emit(Shown(report, self.load_id, **kw))

    def take_head(self) -> None:
        """The head start is the first load's only, and only if this load is the one it was started for."""
        head, self.loader.head_start = self.loader.head_start, None
        if head is not None and not head.serves(self.paths, self.params, self.group):
            head.close()
            head = None
        self.head = head

    def read(self) -> None:
        """The runs' bytes (or runs loaded already): read once, the alias and the runs come from them.
        On a warm open the alias's report is shown first, the runs parsed from the same bytes after it."""
        from specterm.core.report import cache

        loaded, prefetched = self.loader.loaded, self.loader.prefetched
        self.loader.prefetched = None
        if loaded is not None and loaded[0] == self.paths:
            self.all_runs = loaded[1]
            self.files = self.loader.loaded_files
            if self.files is not None and self.use_cache:
                self.fkey = cache.files_key(self.files, self.params, self.group)
        elif prefetched is not None and (prefetched.load_id, prefetched.paths) == (self.load_id, self.paths):
            # the first load, after `warm` read the files (and showed the alias's report, if any)
            self.files, self.fkey, self.alias, self.painted = prefetched.files, prefetched.fkey, prefetched.alias, prefetched.painted
        else:
            self.read_files()

    def read_files(self) -> None:
        from specterm.core.report import cache
        from specterm.core.store import META_FILE, parse_meta, read_run_files  # no numpy before the first table

        self.files = files = [read_run_files(p) for p in self.paths]
        self.fkey = cache.files_key(files, self.params, self.group) if self.use_cache else None
        alias = cache.load_alias(self.fkey) if self.fkey is not None else None
        report = cache.load(alias[0]) if alias is not None else None
        if alias is None or report is None:
            return
        self.alias = alias
        first = parse_meta(files[alias[2]].meta, self.paths[alias[2]] / META_FILE)  # the crumb's pair
        self.painted = threading.Event()
        self.show(report, pair_meta=first, painted=self.painted, groups=alias[1])

    def head_first(self) -> None:
        """Show the head start's first report, if the child parsed the bytes this load read (its files
        key is this load's, computed here when the load did not need it: same bytes, code and
        parameters, so the same runs); else the child is closed and not used."""
        assert self.head is not None
        shown = self.head_shown() if self.alias is None and self.files is not None else False
        if not shown:
            self.head.close()
            self.head = None

    def head_shown(self) -> bool:
        from specterm.core.report import cache
        from specterm.core.store import META_FILE, parse_meta

        head, files = self.head, self.files
        assert head is not None and files is not None
        said = head.read()
        fkey = cache.files_key(files, self.params, 0) if self.fkey is None else self.fkey  # a head start serves pair 0 only
        if said is None or fkey is None or said.get("fkey") != json.loads(json.dumps(fkey)):
            return False
        if isinstance(said.get("prompts"), int) and isinstance(said.get("positions"), int):
            self.say(computing_line(said["prompts"], said["positions"], self.point_first))
        shown = head_report(head)
        if shown is not None and not shown[1] and not self.point_first:
            shown = head_report(head)  # the full report only (no bootstrap: as the load's own analysis)
        if shown is None:
            return False
        try:
            i = int(said["first"])
            first = parse_meta(files[i].meta, self.paths[i] / META_FILE)  # the crumb's pair
            groups = int(said["groups"])
        except (KeyError, IndexError, TypeError, ValueError, SpectermError):
            return False
        self.head_report, self.head_complete = shown[0], shown[1]
        self.painted = threading.Event()
        self.show(shown[0], complete=shown[1], cis=shown[2], pair_meta=first, painted=self.painted, groups=groups)
        return True

    def store_head_report(self) -> None:
        """Store the head start's full report, shown already, under the child's cache key of its runs
        (the key the load would check the runs it parses against); nothing when the child has not
        delivered both. The child's runs are those of the bytes this load read (their files keys
        matched): its report and key belong together as the entries the child stores for `M` do."""
        from specterm.core.report import cache

        head = self.head
        full = self.head_report if self.head_complete else (self.head_full[0] if self.head_full else None)
        if head is None or full is None or not self.use_cache:
            return
        key = head.read_key()
        if isinstance(key, dict):
            cache.store(key, full)

    def read_head_full(self) -> None:
        """Show the child's full report as soon as it comes, not once the runs are parsed here (10M
        positions: 3 s): the trust of its point report and of a warm open's alias (the same bytes, code
        and parameters); `head_kept` keeps it only if the parsed runs have the child's key."""
        head = self.head
        assert head is not None

        def read_full() -> None:
            shown = head_report(head)
            while shown is not None and shown[2]:  # every CI, before the borderline check: shown, then the full one
                if not self.cancelled():
                    self.show(shown[0], complete=False, cis=True)
                shown = head_report(head)
            full = shown[0] if shown is not None and shown[1] else None
            self.head_full.append(full)
            if full is not None and not self.cancelled():
                self.show(full)

        self.head_reader = threading.Thread(target=read_full, name="specterm-head-full", daemon=True)
        self.head_reader.start()

    def parse(self) -> tuple[list[Run], int]:
        """The runs of the pair `group` (runs without prompts left out) and the number of pairs."""
        from specterm.core.store import drafter_of, group_runs, load_run

        if self.all_runs is None:
            assert self.files is not None
            loaded: list[Run] = []
            self.skipped = []
            for p, f in zip(self.paths, self.files):  # one run that does not load hides no other (issue 56)
                try:
                    loaded.append(load_run(p, f))
                except SpectermError as exc:
                    if len(self.paths) == 1:
                        raise
                    self.skipped.append(f"skipped {exc}")
            if not loaded:
                raise SpectermError(self.skipped[0].removeprefix("skipped "))
            self.all_runs = loaded
            if not self.skipped:
                self.loader.loaded = (self.paths, self.all_runs)
        runs = [r for r in self.all_runs if r.streams and drafter_of(r.meta) is None]
        self.drafter_runs = [r for r in self.all_runs if r.streams and drafter_of(r.meta) is not None]  # Decide's Which draft?
        if not runs:
            if self.drafter_runs:
                self.drafters()
                raise SpectermError(DRAFTERS_ONLY.format(names=", ".join(r.path.name for r in self.drafter_runs)))
            names = ", ".join(str(p) for p in self.paths)
            raise SpectermError(f"{names} holds no finished prompts yet; run `specterm run` or `specterm import` first.")
        groups = group_runs(runs)  # one model pair with two settings (e.g. -n) is two groups
        runs = groups[self.group % len(groups)]
        self.emit(Parsed(runs, self.load_id, len(groups), tuple(self.skipped)))
        return runs, len(groups)

    def drafters(self) -> None:
        """The drafter runs' Which draft? rows (core/drafted/route.drafter_runs, about 0.5 s a drafter at the
        shipped runs' size; once per set of paths), sent after the pair's report: nothing when there are none
        or the load was cancelled."""
        from specterm.core.drafted.route import drafter_runs

        if not self.drafter_runs or self.cancelled():
            return
        done = self.loader.drafted
        if done is None or done[0] != self.paths:
            p = self.params
            done = (self.paths, drafter_runs(self.drafter_runs, p["gamma"], p["boot"], p["seed"]))
            self.loader.drafted = done
        if not self.cancelled():
            self.emit(Drafted(done[1], self.load_id))

    def cache_key(self, runs: list[Run]) -> dict[str, Any] | None:
        from specterm.core.report import cache

        return cache.cache_key(runs, self.params) if self.use_cache else None

    def alias_holds(self, key: dict[str, Any] | None) -> bool:
        """Whether the alias's report (shown) is that of the runs parsed (their whole key); else the
        alias lied (parsing the same bytes gave other runs): removed, never used again, and the report
        withdrawn until the right one comes."""
        from specterm.core.report import cache

        assert self.alias is not None
        if self.alias[0] == key:
            return True
        assert self.fkey is not None
        cache.remove_alias(self.fkey)
        self.show(None)
        return False

    def head_kept(self, runs: list[Run], key: dict[str, Any] | None) -> Report | None:
        """The head start's report (shown already), kept when the child's runs are these (their whole
        key, which the child sends after its full report); else withdrawn and the child closed."""
        from specterm.core.report import cache

        head = self.head
        assert head is not None
        if self.head_reader is not None:
            self.head_reader.join()
        full = self.head_report if self.head_complete else self.head_full[0]
        own = json.loads(json.dumps(key if key is not None else cache.cache_key(runs, self.params)))
        child_key = head.read_key()
        report = full if full is not None and child_key == own else None
        if child_key is not None and child_key != own:  # the same bytes parsed to other runs: off the screen
            self.show(None)
        if report is None:
            head.close()
        elif key is not None:  # the child goes on with the other pairs (for M); closed when the app ends
            self.loader.write(lambda: cache.store(key, report))
        return report

    def cached_or_analysed(self, runs: list[Run], key: dict[str, Any] | None) -> Report | None:
        """The pair's report from the cache, from the head start's child (`M` to a pair it analyses for
        the cache: waited for, not computed twice) or analysed here; None when cancelled."""
        from specterm.core.report import cache
        from specterm.core.store import prompts_and_positions

        report = cache.load(key) if key is not None else None
        if report is not None:
            return report
        counts = prompts_and_positions(runs)  # the loading line's
        child = self.loader.head_child
        if key is not None and self.head is None and child is not None:
            self.say(computing_line(*counts))
            if child.wait_stored(key):
                report = cache.load(key)
                if report is not None:
                    return report
        return self.analysed(runs, key, counts)

    def analysed(self, runs: list[Run], key: dict[str, Any] | None, counts: tuple[int, int]) -> Report | None:
        from specterm.core.report import cache
        from specterm.core.report.analysis import analyse

        def point_ready(point: Report) -> None:
            if not self.cancelled():
                self.show(point, complete=False)

        def cis_ready(report: Report) -> None:
            if not self.cancelled():
                self.show(report, complete=False, cis=True)

        self.say(computing_line(*counts, self.point_first))
        p = self.params
        report = analyse(runs, gamma=p["gamma"], boot=p["boot"], shuffles=p["shuffles"], seed=p["seed"],
                         on_point=point_ready if self.point_first else None,
                         on_cis=cis_ready if self.point_first else None)
        if self.cancelled():
            return None
        if key is not None:
            self.loader.write(lambda: cache.store(key, report))
        return report

    def store_alias(self, runs: list[Run], key: dict[str, Any] | None, groups: int) -> None:
        """The alias a later open finds this report by (the bytes of the runs' files)."""
        from specterm.core.report import cache

        if self.fkey is None or key is None or self.files is None or self.all_runs is None:
            return
        first_path = runs[0].path
        first = next(i for i, f in enumerate(self.files) if f.path == first_path)
        warnings = [*self.skipped, *(w for r in self.all_runs for w in r.warnings)]
        fkey = self.fkey
        self.loader.write(lambda: cache.store_alias(fkey, key, groups, first, warnings))


def head_report(head: HeadStart) -> tuple[Report, bool, bool] | None:
    """The child's next report, whether it is complete and whether it is the one with every CI before
    the borderline check (`Shown.cis`); None when the next message is not one."""
    from specterm.core.report.types import Report

    said = head.read()
    if said is None or "report" not in said:
        return None
    try:
        complete = bool(said.get("complete"))
        return Report.from_dict(said["report"]), complete, not complete and said.get("cis") is True
    except Exception:  # not a report: never shown
        return None
