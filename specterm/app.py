"""The specterm Textual app: one screen per view (as modes, mounted on first visit), global keys,
the command palette, export, and the workers that load runs, analyse them and run the oracle.

`make_app` is the one factory the CLI and the tests share. Nothing here computes a statistic:
`specterm.core.analysis.analyse` does, in a thread worker, and the screens read its report.
"""

from __future__ import annotations

import gc
import json
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.events import ScreenSuspend
from textual.reactive import var
from textual.worker import Worker, WorkerState

from specterm import messages
from specterm.commands import SpectermCommands
from specterm.core.errors import SpectermError
from specterm.core.fmt import computing_line, parsing_line
from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES
from specterm.core.report import POOLED
from specterm.screens.registry import SCREENS, ScreenInfo, screen_class

if TYPE_CHECKING:
    from specterm.core.report import Report
    from specterm.core.store import Run, RunFiles
    from specterm.headstart import HeadStart
    from specterm.oracle.run import OracleConfig


CI_PENDING_EXPORT = "The CIs are still being computed; export when they show (the status line says when)."


class SpectermApp(App[Any]):
    """Loads runs, analyses them once in a worker, and shows the report on lazily mounted screens."""

    TITLE = "specterm"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    COMMANDS = App.COMMANDS | {SpectermCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(s.key, f"switch_screen('{s.mode}')", s.title, id=f"screen.{s.mode}",
                    tooltip=s.help, group=Binding.Group("screens", compact=True))
            for s in SCREENS
        ),
        Binding("e", "export", "export", id="app.export", tooltip="Write this screen's tables as markdown"),
        Binding("E", "export_all", "export all", show=False, id="app.export_all", tooltip="Write every table as markdown"),
        Binding("t", "toggle_theme", "theme", show=False, id="app.theme", tooltip="Toggle dark / light theme"),
        Binding("M", "next_models", "next model pair", show=False, id="app.models",
                tooltip="Runs of different draft/target pairs are analysed apart: show the next pair"),
        Binding("f1", "help", "help", id="app.help", tooltip="Every key of every screen"),
        Binding("q", "quit", "quit", show=False, id="app.quit", tooltip="Quit specterm"),
    ]

    runs: var[list | None] = var(None)
    """The loaded runs (None until loaded)."""
    report: var["Report | None"] = var(None)
    """`analyse(runs)`: the typed report (core/report.py; None until ready)."""
    error: var[str | None] = var(None)
    """One sentence when loading or analysing failed."""
    load_stage: var[str] = var("")
    """What the load is doing now (`messages.LoadStage`; "" before its first stage): the line a
    screen shows while it waits for the report."""
    ci_pending: var[bool] = var(False)
    """True while the report shown holds point estimates only (boot = 0) and the bootstrap runs;
    the screens say "computing CIs" until the full report replaces it."""
    pair_meta: dict | None = None
    """The metadata of the pair's first run while a cached report is shown before its runs are
    parsed (a warm open): the breadcrumb names the pair from it until `runs` come."""
    set_name: var[str] = var(POOLED)
    """The corpus (or "pooled") shown by the per-set screens; `c` cycles it."""

    def __init__(
        self,
        run_paths: Sequence[Path] = (),
        *,
        oracle_config: "OracleConfig | None" = None,
        oracle: Callable[..., Path] | None = None,
        check: Callable[[Any], None] | None = None,
        gamma: int = GAMMA_DEFAULT,
        boot: int = BOOT,
        shuffles: int = SHUFFLES,
        seed: int = SEED,
        initial: str | None = None,
        use_cache: bool = True,
        loaded: "Sequence[Run] | None" = None,
        loaded_files: "Sequence[RunFiles] | None" = None,
        head_start: "HeadStart | None" = None,
        files_read: "tuple[Any, ...] | None" = None,
    ) -> None:
        super().__init__()
        self.run_paths = [Path(p) for p in run_paths]
        self.loaded: tuple[tuple[Path, ...], list[Run]] | None = (
            (tuple(self.run_paths), list(loaded)) if loaded is not None else None)
        """(paths, runs) as loaded from those paths: the CLI's own load (`specterm` loads every run to
        warn about bad ones) and the worker's, so that neither the first table nor `M` to a pair not
        yet shown reads the runs again. Given as `loaded`, they must be `load_runs(run_paths)`."""
        self.loaded_files = list(loaded_files) if loaded is not None and loaded_files is not None else None
        """The bytes `loaded` was parsed from (store.read_run_files), if the CLI kept them: the worker
        then writes the alias a later open finds the report by."""
        self.head_start = head_start
        """The child process analysing the first load's runs (specterm/headstart.py), until that load
        takes it; closed when the app ends."""
        self._head_child = head_start
        """The same child, kept after its load took it: closed when the app ends (on_unmount)."""
        self.files_read = files_read
        """(files, files key, alias or None) of `run_paths` as startup.warm_read read them for these
        analysis parameters and the first pair, taken by _show_warm instead of reading them again."""
        self._prefetched: tuple[Any, ...] | None = None
        """(load_id, paths, files, files key, alias or None, painted event): what _show_warm read, for
        that load's worker."""
        self.oracle_config = oracle_config
        self.oracle = oracle
        self.oracle_check = check
        """Checks of the run's arguments (runner.check_run_arguments), run by the Run screen's worker first."""
        self.analysis_params = {"gamma": gamma, "boot": boot, "shuffles": shuffles, "seed": seed}
        self.use_cache = use_cache
        """Read and write the analysis cache (core/cache.py; SPECTERM_CACHE=0 also turns it off)."""
        self.load_id = 0
        """Bumped by every load: messages of an older load (other runs, another pair) are ignored."""
        self.model_group = 0
        """Which draft/target pair is shown when the runs hold several (`m` cycles)."""
        self.n_model_groups = 1
        self.pair_cache: dict[int, tuple[list, "Report"]] = {}
        """Each model pair's runs and report, computed once (M back to a pair shows it at once)."""
        self.streams_request = False
        """True once Enter on an Overview/Decide row asked Streams to show `streams_corpus` only."""
        self.streams_corpus: str | None = None
        self.drill_from: str | None = None
        """The mode whose row Enter drilled into Streams from; Escape on Streams goes back to it."""
        self.pair_sets: dict[int, str] = {}
        """The corpus shown for each pair when M left it."""
        self.oracle_result: Path | None = None
        """Where the oracle's finished (or cancelled, with prompts kept) run is; run_tui_oracle returns it."""
        self.initial = initial or ("run" if oracle_config is not None else "overview")
        for s in SCREENS:
            if s.mode != "run" or oracle_config is not None:
                self.add_mode(s.mode, partial(self._make_screen, s))

    @property
    def pair_key(self) -> int:
        """Which model pair is shown: model_group modulo the number of pairs."""
        return self.model_group % max(self.n_model_groups, 1)

    @property
    def has_oracle(self) -> bool:
        return self.oracle_config is not None

    def _make_screen(self, info: ScreenInfo):
        if info.mode == "run":
            screen = screen_class(info)(self.oracle_config, oracle=self.oracle, check=self.oracle_check)
        else:
            screen = screen_class(info)()
        # A new screen styles itself from the current stylesheet when it mounts; left at -1, this
        # counter makes Textual restyle every widget of the app on the screen's first visit.
        if hasattr(screen, "_css_update_count") and hasattr(self, "_css_update_count"):
            screen._css_update_count = self._css_update_count
        return screen

    # -- idle work: mount the screens not yet visited, redraw hidden screens that went stale --------
    IDLE_STEP_S: ClassVar[float] = 0.05
    """Pause between two pieces of idle work, so that keys are handled in between."""

    def schedule_idle_work(self) -> None:
        """Do one piece of idle work soon (then the next), unless a pass is already scheduled."""
        if (not getattr(self, "_idle_scheduled", False) and self.report is not None and not self.ci_pending
                and self.runs is not None):  # a cached report can come first: screens are mounted with both
            self._idle_scheduled = True
            self.set_timer(self.IDLE_STEP_S, self._idle_step)

    def _idle_step(self) -> None:
        """One screen per step: a hidden screen that is stale is redrawn, else an unvisited screen
        is mounted (composed and filled from the report; laid out and painted on its visit) without
        being shown."""
        self._idle_scheduled = False
        if self.report is None or self.ci_pending or self.runs is None or self.is_headless and not self.PREMOUNT_HEADLESS:
            return
        stacks = getattr(self, "_screen_stacks", {})
        for stack in stacks.values():
            for screen in stack:
                if screen is not self.screen and getattr(screen, "stale", False):
                    screen.catch_up()
                    self.schedule_idle_work()
                    return
        init_mode = getattr(self, "_init_mode", None)  # Textual's own mode set-up (8.x), without switching
        if init_mode is None:
            return
        for s in SCREENS:
            if s.mode in self._modes and s.mode not in stacks and s.mode != "run":
                init_mode(s.mode)
                self._screen_stacks[s.mode][0].post_message(ScreenSuspend())
                self.schedule_idle_work()
                return
        if not getattr(self, "_settled", False):
            # Every screen is mounted: what exists now (screens, report, runs) lives as long as the
            # app, so the cyclic collector need not walk it again. A full collection during a first
            # visit walked all of it (30-80 ms of a Streams visit, measured).
            self._settled = True
            gc.freeze()

    POINT_FIRST_HEADLESS: ClassVar[bool] = False
    """Headless (Pilot tests, snapshots) gets the full report only, as before: the Overview's
    column widths after a point-then-full redraw depend on timing (found by the snapshots)."""

    PREMOUNT_HEADLESS: ClassVar[bool] = False
    """Headless (Pilot tests, snapshots) mounts screens on their visit only, as before."""

    FIRST_SCREEN_WAIT_S: ClassVar[float] = 0.25
    """How long the first screen waits for the report before it shows its loading state. A report
    that comes sooner (a cached one: tens of ms) is composed into the first screen at once: one
    layout and one frame instead of a loading frame, a second layout and a second frame (about
    0.1 s of start-up on the shipped runs). Until then the terminal shows Textual's blank screen."""

    HEAD_START_WAIT_S: ClassVar[float] = 0.0
    """FIRST_SCREEN_WAIT_S of a cold open with a head start (specterm/headstart.py): its point estimates
    come 0.3-0.5 s after the mount, so the first screen (loading) is composed at once, its 0.1-0.2 s
    of the UI thread spent before they come rather than beside them (same-run A/B on the shipped
    runs, 6 pairs: first table 0.97 s against 1.04 s with the 0.25 s wait)."""

    PAINT_WAIT_S: ClassVar[float] = 1.0
    """At most this long the load waits, after handing over a cached report found by its files
    (core/cache.py aliases), for the frame that shows it before it parses the runs."""

    WAIT_HEADLESS: ClassVar[bool] = False
    """Headless (Pilot tests, snapshots) shows the first screen at once, as before."""

    def on_mount(self) -> None:
        self._first_shown = False
        if self.run_paths:
            self.load_id += 1
            warm = self.loaded is None and self._show_warm()
            self.load(self.run_paths, self.load_id)
            if warm:  # the cached report is the first screen's: no wait, no blank frame
                return
            wait = self.HEAD_START_WAIT_S if self._head_child is not None else self.FIRST_SCREEN_WAIT_S
            if wait > 0 and (not self.is_headless or self.WAIT_HEADLESS):
                self._first_timer = self.set_timer(wait, self.show_first_screen)
                return
        self.show_first_screen()

    def _show_warm(self) -> bool:
        """Look for a cached report by the bytes of the runs' files (a warm open, core/cache.py
        aliases) here, on the UI thread before the first frame, and show it: about 20 ms of reading
        and JSON, against a blank frame, a worker hand-over and a second layout before the table when
        the worker looked (60-100 ms of start-up measured). True when shown. The bytes, and the alias
        when shown, go to the load worker (`_prefetched`), which parses the runs from them once this
        report's frame is painted and checks that they are the entry's. A file that cannot be read
        is left to the worker, which says what is wrong."""
        from specterm.core import cache
        from specterm.core.store import META_FILE, parse_meta, read_run_files

        if not (self.use_cache and cache.enabled()):
            return False
        paths = tuple(self.run_paths)
        read, self.files_read = self.files_read, None
        if read is not None and self.model_group == 0:
            files, fkey, alias = read
        else:
            try:
                files = [read_run_files(p) for p in paths]
            except SpectermError:
                return False
            fkey = cache.files_key(files, dict(self.analysis_params), self.model_group)
            alias = cache.load_alias(fkey) if fkey is not None else None
        report = cache.load(alias[0]) if alias is not None else None
        painted = threading.Event()
        self._prefetched = (self.load_id, paths, files, fkey, alias if report is not None else None, painted)
        if report is None or alias is None:
            return False
        self.n_model_groups = alias[1]
        first = parse_meta(files[alias[2]].meta, paths[alias[2]] / META_FILE)  # the crumb's pair
        # Textual initializes the app's reactives after its Mount, calling their watchers: a screen
        # shown before that would be drawn twice. Reading them initializes them now, with no screen yet.
        for name in ("runs", "report", "error", "ci_pending", "set_name"):
            getattr(self, name)
        self.on_report_ready(messages.ReportReady(report, self.load_id, pair_meta=first, painted=painted))
        return True

    def show_first_screen(self, mode: str | None = None) -> None:
        """Show the first screen (`mode`, else `initial`), once: when the report (or an error)
        comes, when the wait is over, or when a screen's key is pressed, whichever is first."""
        if getattr(self, "_first_shown", True):
            if mode is not None:
                self.switch_mode(mode)
            return
        self._first_shown = True
        timer = getattr(self, "_first_timer", None)
        if timer is not None:
            timer.stop()
        self._first_switch = True
        try:
            self.switch_mode(mode or self.initial)
        finally:
            self._first_switch = False

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual's switch_mode holds every update for 50 ms to mask the change of screen; the
        first screen replaces a blank one, so nothing is masked and its table is painted at once."""
        if not getattr(self, "_first_switch", False):
            super().delay_update(delay)

    # -- loading and analysis -----------------------------------------------------------------
    def open_results(self, paths: Sequence[Path]) -> None:
        """Load runs (e.g. the oracle's output) and show the Overview."""
        self.run_paths = [Path(p) for p in paths]
        self.loaded = None  # read again: the oracle's output may have grown since (same path)
        self.loaded_files = None
        self.pair_cache = {}
        self.pair_meta = None
        self.report = None  # first: a screen must never see the new runs with the old report
        self.ci_pending = False
        self.runs = None
        self.error = None
        self.start_load()
        self.action_switch_screen("overview")

    def start_load(self) -> None:
        """Load and analyse `run_paths` (the pair `model_group`) in the worker, as a new load."""
        self.load_id += 1
        self.load_stage = ""
        self.load(self.run_paths, self.load_id)

    @work(thread=True, exclusive=True, group="analysis", exit_on_error=False, description="load and analyse the runs")
    def load(self, paths: Sequence[Path], load_id: int = 0) -> None:
        """Load the runs (unless loaded already), then analyse them; heavy imports happen here, off
        the UI thread.

        A cached report (core/cache.py) is shown at once. On a warm open it is found by the bytes of
        the runs' files (an alias), before numpy is imported or the runs are parsed; the runs are
        parsed from those same bytes once its frame is painted, and their own key must be the
        entry's (else the report is withdrawn and recomputed). Otherwise one `analyse` call hands over the
        point estimates (its `on_point`: the report of boot = 0, the same shuffles, so the same
        values) before its bootstrap, and they are shown first; the full report with its CIs then
        replaces them whole: a value and a CI on screen always come from one report of one load."""
        from textual.worker import get_current_worker

        from specterm.core import cache
        from specterm.core.store import META_FILE, parse_meta, read_run_files  # no numpy before the first table

        worker = get_current_worker()

        key_paths = tuple(Path(p) for p in paths)
        params = dict(self.analysis_params)
        use_cache = self.use_cache and cache.enabled()
        head, self.head_start = self.head_start, None  # the first load's only, and only if it is the one started
        if head is not None and not head.serves(key_paths, params, self.model_group):
            head.close()
            head = None
        loaded = self.loaded
        files = None
        all_runs = None
        alias = fkey = None
        painted = None
        prefetched, self._prefetched = self._prefetched, None
        if loaded is not None and loaded[0] == key_paths:
            all_runs = loaded[1]
            files = self.loaded_files
            if files is not None and use_cache:
                fkey = cache.files_key(files, params, self.model_group)
        elif prefetched is not None and prefetched[:2] == (load_id, key_paths):
            # the first load, after _show_warm read the files (and showed the alias's report, if any)
            _, _, files, fkey, alias, painted = prefetched
        else:
            files = [read_run_files(p) for p in key_paths]  # read once: the alias and the runs come from these bytes
            fkey = cache.files_key(files, params, self.model_group) if use_cache else None
            if fkey is not None:
                alias = cache.load_alias(fkey)
            if alias is not None:  # a warm open: the report first, the runs parsed from the same bytes after it
                report = cache.load(alias[0])
                if report is None:
                    alias = None
                else:
                    self.n_model_groups = alias[1]
                    first = parse_meta(files[alias[2]].meta, key_paths[alias[2]] / META_FILE)  # the crumb's pair
                    painted = threading.Event()
                    self.post_message(messages.ReportReady(report, load_id, pair_meta=first, painted=painted))
        if alias is None and all_runs is None and files is not None:
            self.post_message(messages.LoadStage(parsing_line(len(files), sum(len(f.meta) + len(f.records or b"") for f in files)), load_id))
        head_report = None
        head_complete = False
        if head is not None:
            if alias is None and files is not None:
                point_first = params["boot"] > 0 and (not self.is_headless or self.POINT_FIRST_HEADLESS)
                shown = self._head_first(head, files, fkey, params, key_paths, load_id, point_first)
                if shown is not None:
                    head_report, head_complete, painted = shown
            if head_report is None:
                head.close()
                head = None
        if painted is not None and (alias is not None or head is not None):
            painted.wait(self.PAINT_WAIT_S)  # parsing the runs holds the GIL: after the report's frame (or 1 s)
        head_full: list[Report | None] = []  # the child's full report, read while the runs are parsed here
        head_reader = None
        if head is not None and not head_complete:
            # Shown as soon as the child sends it, not once the runs are parsed here (10M positions:
            # 3 s): the trust of its point report and of a warm open's alias (the same bytes, code and
            # parameters); below it is kept only if the parsed runs have the child's key, else withdrawn.
            def read_full() -> None:
                head_full.append(self._head_full(head))
                if head_full[0] is not None and not worker.is_cancelled:
                    self.post_message(messages.ReportReady(head_full[0], load_id))

            head_reader = threading.Thread(target=read_full, name="specterm-head-full", daemon=True)
            head_reader.start()
        if all_runs is None:
            from specterm.core.store import load_run

            assert files is not None
            all_runs = [load_run(p, f) for p, f in zip(key_paths, files)]
            self.loaded = (key_paths, all_runs)
        from specterm.core.store import group_runs, prompts_and_positions

        runs = [r for r in all_runs if r.streams]
        if not runs:
            names = ", ".join(str(p) for p in paths)
            raise SpectermError(f"{names} holds no finished prompts yet; run `specterm run` or `specterm import` first.")
        groups = group_runs(runs)  # one model pair with two settings (e.g. -n) is two groups
        self.n_model_groups = len(groups)
        runs = groups[self.model_group % len(groups)]
        self.post_message(messages.RunsLoaded(runs, load_id))
        key = cache.cache_key(runs, params) if use_cache else None
        if alias is not None:
            if alias[0] == key:
                return  # the report shown is this key's (checked against the entry in full)
            assert fkey is not None  # the alias lied (parsing the same bytes gave other runs): never again
            cache.remove_alias(fkey)
            self.post_message(messages.ReportReady(None, load_id))  # off the screen until the right one comes
        report = None
        if head is not None:  # shown already: kept when the child's runs are these (their whole key)
            if head_reader is not None:
                head_reader.join()
            full = head_report if head_complete else head_full[0]
            own = json.loads(json.dumps(key if key is not None else cache.cache_key(runs, params)))
            child_key = head.read_key()  # the child sends it after the full report
            if full is not None and child_key == own:
                report = full
            elif child_key is not None and child_key != own:  # the same bytes parsed to other runs: off the screen
                self.post_message(messages.ReportReady(None, load_id))
            if report is None:
                head.close()
            elif key is not None:  # the child goes on with the other pairs (for M); closed when the app ends
                cache.store(key, report)
        if report is None:
            report = cache.load(key) if key is not None else None
        if report is None:
            counts = prompts_and_positions(runs)  # the loading line's
            child = self._head_child
            if key is not None and head is None and child is not None:
                # another model pair (`M`): the head start's child analyses it now, or did (for the cache)
                self.post_message(messages.LoadStage(computing_line(*counts), load_id))
                if child.wait_stored(key):
                    report = cache.load(key)
        if report is None:
            from specterm.core.analysis import analyse

            def point_ready(point: "Report") -> None:
                if not worker.is_cancelled:
                    self.post_message(messages.ReportReady(point, load_id, complete=False))

            point_first = params["boot"] > 0 and (not self.is_headless or self.POINT_FIRST_HEADLESS)
            self.post_message(messages.LoadStage(computing_line(*counts, point_first), load_id))
            report = analyse(runs, gamma=params["gamma"], boot=params["boot"], shuffles=params["shuffles"],
                             seed=params["seed"], on_point=point_ready if point_first else None)
            if worker.is_cancelled:
                return
            if key is not None:
                cache.store(key, report)
        if fkey is not None and key is not None and files is not None:
            first_path = runs[0].path
            cache.store_alias(fkey, key, len(groups), next(i for i, f in enumerate(files) if f.path == first_path),
                              [w for r in all_runs for w in r.warnings])
        self.post_message(messages.ReportReady(report, load_id))

    def on_unmount(self) -> None:
        if self._head_child is not None:  # a child may still be analysing (the other pairs, for M)
            self._head_child.close()

    def _head_first(self, head: "HeadStart", files: "Sequence[RunFiles]", fkey: dict[str, Any] | None,
                    params: dict[str, Any], paths: tuple[Path, ...], load_id: int,
                    point_first: bool) -> "tuple[Report, bool, threading.Event] | None":
        """Show the head start's first report (specterm/headstart.py), if the child parsed the bytes this
        load read (its files key is this load's, `fkey`, computed here when the load did not need it:
        same bytes, code and parameters, so the same runs): (the report, whether it is complete, the
        event set when its frame is painted). None when the child's first messages are not that (then
        it is not used)."""
        from specterm.core import cache
        from specterm.core.store import META_FILE, parse_meta

        said = head.read()
        fkey = cache.files_key(files, params, 0) if fkey is None else fkey  # a head start serves pair 0 only
        if said is None or fkey is None or said.get("fkey") != json.loads(json.dumps(fkey)):
            return None
        if isinstance(said.get("prompts"), int) and isinstance(said.get("positions"), int):
            self.post_message(messages.LoadStage(computing_line(said["prompts"], said["positions"], point_first), load_id))
        shown = self._head_report(head)
        if shown is not None and not shown[1] and not point_first:
            shown = self._head_report(head)  # the full report only (headless, as the app's own analysis)
        if shown is None:
            return None
        try:
            i = int(said["first"])
            first = parse_meta(files[i].meta, paths[i] / META_FILE)  # the crumb's pair
            self.n_model_groups = int(said["groups"])
        except (KeyError, IndexError, TypeError, ValueError, SpectermError):
            return None
        painted = threading.Event()
        self.post_message(messages.ReportReady(shown[0], load_id, complete=shown[1], pair_meta=first, painted=painted))
        return shown[0], shown[1], painted

    @staticmethod
    def _head_report(head: "HeadStart") -> "tuple[Report, bool] | None":
        """The child's next report and whether it is complete; None when the next message is not one."""
        from specterm.core.report import Report

        said = head.read()
        if said is None or "report" not in said:
            return None
        try:
            return Report.from_dict(said["report"]), bool(said.get("complete"))
        except Exception:  # not a report: never shown
            return None

    def _head_full(self, head: "HeadStart") -> "Report | None":
        """The child's full report (after its point estimates), or None when it ends without one."""
        shown = self._head_report(head)
        return shown[0] if shown is not None and shown[1] else None

    def on_load_stage(self, message: messages.LoadStage) -> None:
        if message.load_id == self.load_id:
            self.load_stage = message.text

    def on_runs_loaded(self, message: messages.RunsLoaded) -> None:
        if message.load_id == self.load_id:
            self.runs = message.runs
            if self.report is not None and not self.ci_pending:  # a cached report came first (an alias)
                self.pair_cache.setdefault(self.pair_key, (self.runs, self.report))
                self.call_after_refresh(self.schedule_idle_work)  # held back until the runs came

    def on_report_ready(self, message: messages.ReportReady) -> None:
        if message.painted is not None:  # the worker waits for this report's frame before it parses the runs
            if message.load_id == self.load_id:
                self.call_after_refresh(message.painted.set)
            else:
                message.painted.set()
        if message.load_id != self.load_id:  # an older load's (other runs or another pair): never shown
            return
        report = message.report
        if report is None:  # the load found its cached report was not its runs' (load): off the screen
            self.report = None
            self.ci_pending = False
            return
        if message.pair_meta is not None and self.runs is None:
            self.pair_meta = message.pair_meta
        self.set_name = report.set_or_default(self.set_name)
        self.ci_pending = not message.complete  # read by the screens when `report` changes, just below
        self.report = report
        self.show_first_screen()  # composed with the report when it comes within FIRST_SCREEN_WAIT_S
        if not message.complete:
            return
        if self.runs is not None:  # RunsLoaded of this load came first
            self.pair_cache[self.pair_key] = (self.runs, report)
        self.call_after_refresh(self.schedule_idle_work)  # after the first table is on screen
        self.call_after_refresh(self.prewarm)
        # No toast for "pair k of m": the breadcrumb says it on every screen, and a toast here
        # covered the pooled row's CIs at start-up.

    def prewarm(self) -> None:
        """Import every screen's module in a thread, once, after the first full table is painted
        (prewarm_screens). Not in the analysis worker right after its report: the imports (plotext
        among them) then held the GIL against the first table's paint."""
        if not getattr(self, "_prewarmed", False):
            self._prewarmed = True
            self.run_worker(prewarm_screens, thread=True, group="prewarm", exit_on_error=False,
                            description="import the screens")

    def action_next_models(self) -> None:
        """Runs of different draft/target pairs are never pooled: show the next pair's runs."""
        if self.n_model_groups < 2:
            self.notify("All open runs share one draft/target pair.")
            return
        self.pair_sets[self.pair_key] = self.set_name
        self.model_group += 1
        self.ci_pending = False
        self.load_id += 1  # a load still running for the pair left behind must not show its report
        set_name = self.pair_sets.get(self.pair_key, POOLED)
        cached = self.pair_cache.get(self.pair_key)
        if cached is None:  # first visit: load and analyse in the worker (the screens show loading)
            self.pair_meta = None
            self.report = None  # first: a screen must never see the new runs with the old report
            self.set_name = set_name
            self.runs = None
            self.error = None
            self.start_load()
            return
        # A pair shown before: runs, set and report change together and the screens redraw once
        # (their watchers fire on `report`, after the runs and the set are already the new pair's).
        runs, report = cached
        self.set_reactive(SpectermApp.runs, runs)
        self.set_reactive(SpectermApp.set_name, report.set_or_default(set_name))
        self.on_report_ready(messages.ReportReady(report, self.load_id))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker errors surface: a SpectermError is one sentence, shown as is."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        text = str(error) if isinstance(error, SpectermError) else f"{type(error).__name__}: {error}"
        if event.worker.group == "analysis":
            self.error = text
            self.show_first_screen()
        self.notify(text, title="error", severity="error", timeout=10)

    # -- navigation -----------------------------------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """One toast at a time, and short: a new one replaces the last (nine `n` presses never stack
        nine), and it leaves after 3 s (an error after 6 s); app.tcss keeps it on the footer line."""
        limit = 6.0 if severity == "error" else 3.0
        self.clear_notifications()
        super().notify(message, title=title, severity=severity, timeout=min(timeout or limit, limit), markup=markup)

    def action_switch_screen(self, mode: str) -> None:  # type: ignore[override]  # sync: App.action_switch_screen is async
        self.drill_from = None  # a screen chosen by its key: Escape on Streams has nothing to go back to
        if mode not in self._modes:
            self.notify("no run in progress: start one with `specterm run`", severity="warning")
            return
        self.show_first_screen(mode)  # a key pressed while the first screen waits for the report shows its screen

    @property
    def set_names(self) -> list[str]:
        """The report's sets in display order (Report.set_names: corpora sorted, "pooled" last)."""
        return self.report.set_names if self.report is not None else []

    def action_cycle_set(self, step: int = 1) -> None:
        names = self.set_names
        if names:
            i = names.index(self.set_name) if self.set_name in names else -1
            self.set_name = names[(i + step) % len(names)]

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_help(self) -> None:
        from specterm.screens.help import HelpScreen, key_rows

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(key_rows(self)))

    # -- export ---------------------------------------------------------------------------------
    def action_export(self) -> None:
        """Ask where, then write the current screen's tables as markdown (`e`)."""
        screen = self.screen
        export = getattr(screen, "export_markdown", None)
        name = getattr(screen, "EXPORT_NAME", "")
        if export is None or not name:
            self.notify("This screen has no tables to export; E exports every table.", severity="warning")
            return
        if self.report is None and getattr(screen, "NEEDS_REPORT", True):
            self.notify("The report is not ready yet; try again when the tables show.", severity="warning")
            return
        if self.ci_pending and getattr(screen, "NEEDS_REPORT", True):
            self.notify(CI_PENDING_EXPORT, severity="warning")
            return
        stem = getattr(screen, "export_stem", lambda: f"specterm-{name}")()
        self._ask_and_write(Path(f"{stem}.md"), export)

    def action_export_all(self) -> None:
        """Ask where, then write every table (the same markdown as `specterm report --format md`)."""
        if self.report is None:
            self.notify("The report is not ready yet; try again when the tables show.", severity="warning")
            return
        if self.ci_pending:
            self.notify(CI_PENDING_EXPORT, severity="warning")
            return
        from specterm.core.export import to_markdown
        from specterm.screens.base import pair_slug

        report = self.report
        self._ask_and_write(Path(f"specterm-report-{pair_slug(self.runs or [])}.md"), lambda: to_markdown(report))

    def _ask_and_write(self, default: Path, text: Callable[[], str]) -> None:
        from specterm.screens.export import ExportScreen

        def write(path: Path | None) -> None:
            if path is None:
                return
            from specterm.core.store.atomic import write_output

            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_output(path, text().encode("utf-8"), "choose another path")  # never partial, never through a link
            except OSError as exc:
                self.notify(f"Could not write {path} ({exc.strerror}); choose another path.", severity="error")
                return
            except SpectermError as exc:
                self.notify(str(exc), severity="error")
                return
            self.notify(f"Wrote {path.resolve()}", title="export")

        self.push_screen(ExportScreen(default), write)


def prewarm_screens() -> None:
    """Import every screen's module (and what it draws with: plotext, the decide core) off the UI
    thread, so a first visit of a screen only mounts it."""
    import importlib

    for s in SCREENS:
        try:
            importlib.import_module(s.module)
        except ImportError:  # the Run screen's oracle side may be absent; its visit will say so
            pass
    import specterm.core.cost_ratio
    import specterm.core.optimum  # noqa: F401  (Optimum's throughput curves)


def make_app(run_paths: Sequence[Path] = (), **kwargs: Any) -> SpectermApp:
    """The app factory the CLI and the tests share (see SpectermApp for the keyword options)."""
    return SpectermApp(run_paths, **kwargs)


def run_tui_oracle(config: "OracleConfig", check: Callable[[Any], None] | None = None) -> Path | None:
    """`specterm run` without --headless: the Run screen runs `check(config)`, then drives the oracle;
    returns the run's path when it finished or was cancelled with prompts kept (None when nothing
    was written)."""
    app = make_app(oracle_config=config, check=check)
    app.run()
    return app.oracle_result
