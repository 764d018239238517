"""The specterm Textual app: one screen per view (as modes, mounted on first visit), global keys,
the command palette, export, and the worker that loads and analyses the runs.

`make_app` is the one factory the CLI and the tests share. The app paints: loading (the cache alias,
the head start, point estimates then CIs, withdrawal) is specterm/loading.py's, whose events come
here as messages; `specterm.core.report.analysis.analyse` computes, and the screens read its report.
"""

from __future__ import annotations

import gc
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.events import ScreenSuspend
from textual.reactive import var
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from specterm import compat_textual, loading, messages
from specterm.commands import SpectermCommands
from specterm.core.errors import SpectermError
from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES
from specterm.core.report.text import printable
from specterm.core.report.types import POOLED
from specterm.loading import Loader
from specterm.screens.registry import SCREENS, ScreenInfo, screen_class

if TYPE_CHECKING:
    from specterm.core.report.types import Report
    from specterm.core.store import Run, RunFiles
    from specterm.headstart import HeadStart
    from specterm.engines.base import OracleConfig


CI_PENDING_EXPORT = "The CIs are still being computed; export when they show (the status line says when)."
VERDICTS_PENDING_EXPORT = ("The verdicts are still being checked under bootstrap seeds 1-4; export in a moment "
                           "(the status line says when).")


class SpectermApp(App[Any]):
    """Loads runs, analyses them once in a worker, and shows the report on lazily mounted screens."""

    TITLE = "specterm"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    COMMANDS = App.COMMANDS | {SpectermCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(s.key, f"switch_screen('{s.mode}')", s.short or s.title, id=f"screen.{s.mode}",
                    tooltip=f"{s.title}: {s.help}")
            for s in SCREENS
        ),
        Binding("e", "export", "export", id="app.export", tooltip="Write this screen's tables as markdown"),
        Binding("E", "export_all", "export all", show=False, id="app.export_all", tooltip="Write every table as markdown"),
        Binding("t", "toggle_theme", "theme", show=False, id="app.theme", tooltip="Toggle dark / light theme"),
        Binding("M", "next_models", "runs", id="app.models",
                tooltip="Runs of different draft/target pairs or settings are analysed apart: show the next"),
        Binding("y", "copy", "copy", show=False, id="app.copy",
                tooltip="Copy the focused row (or the verdict) as markdown to the clipboard (OSC 52)"),
        Binding("question_mark,f1", "help", "help", key_display="?", id="app.help",
                tooltip="Every key of every screen"),
        Binding("q", "quit", "quit", show=False, id="app.quit", tooltip="Quit specterm"),
    ]

    runs: var[list[Any] | None] = var(None)
    """The loaded runs (None until loaded)."""
    report: var["Report | None"] = var(None)
    """`analyse(runs)`: the typed report (core/report/types.py; None until ready)."""
    error: var[str | None] = var(None)
    """One sentence when loading or analysing failed."""
    drafters: var[list[Any]] = var(list)
    """The drafter runs given (core/drafted/which_draft.DrafterRuns, one per drafter; loading.Drafted): no
    per-position bits, so only Decide's Which draft? shows them; [] when none."""
    load_stage: var[str] = var("")
    """What the load is doing now (`messages.LoadStage`; "" before its first stage): the line a
    screen shows while it waits for the report."""
    ci_pending: var[bool] = var(False)
    """True while the report shown holds point estimates only (boot = 0) and the bootstrap runs;
    the screens say "computing CIs" until the full report replaces it."""
    verdicts_pending: var[bool] = var(False)
    """True while the report shown has every CI but its verdicts are still checked under bootstrap
    seeds 1..4 (SPEC 4's borderline marks: loading.Shown.cis); the screens that show verdicts say so."""
    @property
    def report_complete(self) -> bool:
        """The full report is shown: every CI, and every verdict checked under bootstrap seeds 0..4."""
        return self.report is not None and not self.ci_pending and not self.verdicts_pending

    pair_meta: dict[str, Any] | None = None
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
        self.analysis_params = {"gamma": gamma, "boot": boot, "shuffles": shuffles, "seed": seed}
        self.loading = Loader(self.analysis_params, use_cache=use_cache, paths=self.run_paths, loaded=loaded,
                              loaded_files=loaded_files, head_start=head_start, files_read=files_read)
        """Every load of this app (specterm/loading.py): `loaded` (the runs the CLI loaded from
        `run_paths`, and `loaded_files` their bytes), the head start's child and `files_read`
        (startup.warm_read's reading of `run_paths`) go to it."""
        self.oracle_config = oracle_config
        self.oracle = oracle
        self.oracle_check = check
        """Checks of the run's arguments (engines/oracle.check_run), run by the Run screen's worker first."""
        self.load_id = 0
        """Bumped by every load: messages of an older load (other runs, another pair) are ignored."""
        self.model_group = 0
        """Which draft/target pair is shown when the runs hold several (`m` cycles)."""
        self.n_model_groups = 1
        self.pair_cache: dict[int, tuple[list[Any], "Report"]] = {}
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
        self._first_shown = False
        """Whether the first screen has been shown (show_first_screen)."""
        self._first_timer: Timer | None = None
        """The wait for the report before the first screen shows its loading state."""
        self._first_switch = False
        """True while the first screen is switched to (delay_update)."""
        self._idle_scheduled = False
        """A piece of idle work is scheduled (schedule_idle_work)."""
        self._settled = False
        """Every screen is mounted and the collector frozen (_idle_step)."""
        self._prewarmed = False
        """The screens' modules are being imported, or were (prewarm)."""
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

    def _make_screen(self, info: ScreenInfo) -> Any:
        if info.mode == "run":
            screen = screen_class(info)(self.oracle_config, oracle=self.oracle, check=self.oracle_check)
        else:
            screen = screen_class(info)()
        # A new screen styles itself from the current stylesheet when it mounts; left behind the
        # app's, its stylesheet counter makes Textual restyle every widget of the app on its first visit.
        compat_textual.mark_styles_current(screen, self)
        return screen

    # -- idle work: mount the screens not yet visited, redraw hidden screens that went stale --------
    IDLE_STEP_S: ClassVar[float] = 0.05
    """Pause between two pieces of idle work, so that keys are handled in between."""

    def schedule_idle_work(self) -> None:
        """Do one piece of idle work soon (then the next), unless a pass is already scheduled."""
        if (not self._idle_scheduled and self.report_complete
                and self.runs is not None):  # a cached report can come first: screens are mounted with both
            self._idle_scheduled = True
            self.set_timer(self.IDLE_STEP_S, self._idle_step)

    def _idle_step(self) -> None:
        """One screen per step: a hidden screen that is stale is redrawn, else an unvisited screen
        is mounted (composed and filled from the report; laid out and painted on its visit) without
        being shown."""
        self._idle_scheduled = False
        if not self.report_complete or self.runs is None or not self.is_running:  # not while quitting
            return
        from specterm.screens.base import ReportScreen  # imported by now: a report is shown

        stacks = compat_textual.screen_stacks(self)
        for stack in stacks.values():
            for screen in stack:
                if screen is not self.screen and isinstance(screen, ReportScreen) and screen.stale:
                    screen.catch_up()
                    self.schedule_idle_work()
                    return
        for s in SCREENS:
            if compat_textual.has_mode(self, s.mode) and s.mode not in stacks and s.mode != "run":
                compat_textual.init_mode(self, s.mode).post_message(ScreenSuspend())  # mounted, not shown
                self.schedule_idle_work()
                return
        if not self._settled:
            # Every screen is mounted: what exists now (screens, report, runs) lives as long as the
            # app, so the cyclic collector need not walk it again. A full collection during a first
            # visit walked all of it (30-80 ms of a Streams visit, measured).
            self._settled = True
            gc.freeze()

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

    def on_mount(self) -> None:
        if self.run_paths:
            self.load_id += 1
            warm = self.loading.warm(self.run_paths, self.load_id, self.model_group)
            if warm is not None:
                self._show_warm(warm)
            self.load(self.run_paths, self.load_id)
            if warm is not None:  # the cached report is the first screen's: no wait, no blank frame
                return
            wait = self.HEAD_START_WAIT_S if self.loading.head_child is not None else self.FIRST_SCREEN_WAIT_S
            if wait > 0:
                self._first_timer = self.set_timer(wait, self.show_first_screen)
                return
        self.show_first_screen()

    def _show_warm(self, shown: "loading.Shown") -> None:
        """Show the cached report `Loader.warm` found by the bytes of the runs' files (a warm open), here
        on the UI thread before the first frame: about 20 ms of reading and JSON, against a blank frame,
        a worker hand-over and a second layout before the table when the worker looked (60-100 ms of
        start-up measured)."""
        # Textual initializes the app's reactives after its Mount, calling their watchers: a screen
        # shown before that would be drawn twice. Reading them initializes them now, with no screen yet.
        for name in ("runs", "report", "error", "ci_pending", "verdicts_pending", "set_name"):
            getattr(self, name)
        self.on_report_ready(messages.report_ready(shown))

    def show_first_screen(self, mode: str | None = None) -> None:
        """Show the first screen (`mode`, else `initial`), once: when the report (or an error)
        comes, when the wait is over, or when a screen's key is pressed, whichever is first."""
        if self._first_shown:
            if mode is not None:
                self.switch_mode(mode)
            return
        self._first_shown = True
        if self._first_timer is not None:
            self._first_timer.stop()
        self._first_switch = True
        try:
            self.switch_mode(mode or self.initial)
        finally:
            self._first_switch = False

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual's switch_mode holds every update for 50 ms to mask the change of screen; the
        first screen replaces a blank one, so nothing is masked and its table is painted at once."""
        if not self._first_switch:
            super().delay_update(delay)

    # -- loading and analysis (specterm/loading.py loads; the app shows what it says) -----------------
    def open_results(self, paths: Sequence[Path]) -> None:
        """Load runs (e.g. the oracle's output) and show the Overview."""
        self.run_paths = [Path(p) for p in paths]
        self.loading.forget_runs()  # read again: the oracle's output may have grown since (same path)
        self.pair_cache = {}
        self.pair_meta = None
        self.report = None  # first: a screen must never see the new runs with the old report
        self.ci_pending = False
        self.verdicts_pending = False
        self.runs = None
        self.error = None
        self.drafters = []
        self.start_load()
        self.action_switch_screen("overview")

    def start_load(self) -> None:
        """Load and analyse `run_paths` (the pair `model_group`) in the worker, as a new load."""
        self.load_id += 1
        self.load_stage = ""
        self.load(self.run_paths, self.load_id)

    @work(thread=True, exclusive=True, group="analysis", exit_on_error=False, description="load and analyse the runs")
    def load(self, paths: Sequence[Path], load_id: int = 0) -> None:
        """Load the runs and analyse them off the UI thread (loading.Loader.load); each of its events
        comes here as a message (messages.from_load)."""
        from textual.worker import get_current_worker

        worker = get_current_worker()
        def post(event: loading.Event) -> None:
            self.post_message(messages.from_load(event))

        group = self.model_group
        # in a daemon thread: quitting never waits for a parse or an analysis (loading.run_detached)
        loading.run_detached(lambda: self.loading.load(paths, load_id, group, post, lambda: worker.is_cancelled),
                             lambda: worker.is_cancelled)

    def on_unmount(self) -> None:
        # Quit at once: the report shown stored if it is nearly (Loader.quit), the head start's child
        # stopped (it may still be analysing the other pairs, for M), no load waited for.
        self.loading.quit(self.load_id, self.report_complete)

    def on_load_stage(self, message: messages.LoadStage) -> None:
        if message.load_id == self.load_id:
            self.load_stage = message.text

    def on_runs_loaded(self, message: messages.RunsLoaded) -> None:
        if message.load_id == self.load_id:
            if message.skipped:  # the runs given that did not load: named, the others shown
                text = "; ".join(printable(p.removeprefix("skipped ")) for p in message.skipped)
                self.notify(text, title="skipped", severity="warning", markup=False)
            self.n_model_groups = message.groups
            self.runs = message.runs
            if self.report is not None and self.report_complete:  # a cached report came first (an alias)
                self.pair_cache.setdefault(self.pair_key, (self.runs, self.report))
                self.call_after_refresh(self.schedule_idle_work)  # held back until the runs came

    def on_drafters_ready(self, message: messages.DraftersReady) -> None:
        if message.load_id == self.load_id:
            self.drafters = list(message.drafters)

    def on_report_ready(self, message: messages.ReportReady) -> None:
        if message.painted is not None:  # the worker waits for this report's frame before it parses the runs
            if message.load_id == self.load_id:
                self.call_after_refresh(message.painted.set)
            else:
                message.painted.set()
        if message.load_id != self.load_id:  # an older load's (other runs or another pair): never shown
            return
        if message.groups is not None:
            self.n_model_groups = message.groups
        report = message.report
        if report is None:  # the load found its cached report was not its runs' (load): off the screen
            self.report = None
            self.ci_pending = False
            self.verdicts_pending = False
            return
        if message.pair_meta is not None and self.runs is None:
            self.pair_meta = message.pair_meta
        self.set_name = report.set_or_default(self.set_name)
        # read by the screens when `report` changes, just below
        self.ci_pending = not message.complete and not message.cis
        self.verdicts_pending = not message.complete and message.cis
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
        if not self._prewarmed:
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
        self.verdicts_pending = False
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
        nine), and it leaves after 3 s (an error after 6 s); app.tcss keeps it one line, just above the footer."""
        limit = 6.0 if severity == "error" else 3.0
        self.clear_notifications()
        if title:  # a title is a line of its own: one line at 80 columns, it leads the message instead
            message = f"{title}: {message}"
        super().notify(message, severity=severity, timeout=min(timeout or limit, limit), markup=markup)

    def action_switch_screen(self, mode: str) -> None:  # type: ignore[override]  # sync: App.action_switch_screen is async
        self.drill_from = None  # a screen chosen by its key: Escape on Streams has nothing to go back to
        if not compat_textual.has_mode(self, mode):
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

    def action_copy(self) -> None:
        """`y`: the focused table row (a verdict's row on Decide, a corpus on Overview) as a markdown
        table line, to the terminal's clipboard by OSC 52 (it works over SSH in most terminals; a
        terminal without it ignores the sequence, and the note says so)."""
        from specterm.screens.base import focused_markdown

        text = focused_markdown(self.screen)
        if not text:
            self.notify("Nothing to copy here: focus a table row (Tab), then y.", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify("Copied the row as markdown (OSC 52; some terminals ignore it: e exports).")

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
        if self.verdicts_pending and getattr(screen, "SHOWS_BORDERLINE", False):
            self.notify(VERDICTS_PENDING_EXPORT, severity="warning")
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
        if self.verdicts_pending:
            self.notify(VERDICTS_PENDING_EXPORT, severity="warning")
            return
        from specterm.core.report.export import to_markdown
        from specterm.screens.base import pair_slug

        report = self.report
        self._ask_and_write(Path(f"specterm-report-{pair_slug(self.runs or [], report)}.md"), lambda: to_markdown(report))

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
    import specterm.core.decide.cost_ratio
    import specterm.core.decide.optimum  # noqa: F401  (Optimum's throughput curves)


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
