"""What every report screen shares: header/footer, a body that shows a loading indicator until the
report is ready, the chosen set (corpus or pooled), and markdown export of its sections."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.events import ScreenResume
from textual.screen import Screen
from textual.widgets import DataTable, Static

from specterm.compat_textual import styles_current
from specterm.core.errors import SpectermError
from specterm.core.params import R_DEFAULT
from specterm.core.report.text import printable
from specterm.widgets.columns import fit_text
from specterm.widgets.footer import KeyFooter
from specterm.widgets.rowlist import RowList
from specterm.widgets.tables import safe

if TYPE_CHECKING:
    from specterm.app_view import AppView
    from specterm.core.report.types import Report, SetReport


class ReportScreen(Screen[Any]):
    """Subclasses compose `compose_body()` and fill it in `show_report(report)`; they never compute."""

    SCREEN_TITLE: ClassVar[str] = ""
    EXPORT_NAME: ClassVar[str] = ""
    """File stem for `e`: ./specterm-<EXPORT_NAME>.md."""
    EXPORT_SECTIONS: ClassVar[tuple[str, ...]] = ()
    """Sections of `export.markdown_tables(report)` this screen shows (what `e` writes)."""
    NEEDS_REPORT: ClassVar[bool] = True
    """False for screens that only need the loaded runs (Streams)."""
    NEEDS_CIS: ClassVar[bool] = False
    """True for screens made of verdicts on CIs (Scorecard): they keep loading while the point
    estimates show elsewhere and the bootstrap runs."""
    SHOWS_BORDERLINE: ClassVar[bool] = False
    """True for the screen of the scorecard's rows (Scorecard), whose borderline marks come after every
    CI (app.verdicts_pending): a status line says the check runs, and its export waits for it."""
    SHOWS_DRAFTERS: ClassVar[bool] = False
    DRAFTER_NOTE_IN_BODY: ClassVar[bool] = False  # the screen's body places the #drafter-note line itself
    """True for the screen that shows drafter runs (Decide's Which draft?); every other screen says, on its
    drafter line, that its statistics do not apply to them (SPEC 2b: no per-position bits)."""
    USES_SET: ClassVar[bool] = False
    """True when the screen shows one set (corpus or pooled) at a time and follows `app.set_name`."""
    PAIR_STATE: ClassVar[tuple[str, ...]] = ()
    """Attributes that belong to the model pair shown (r, ridge, filters): `M` saves them for the
    pair it leaves and restores them for the pair it shows (defaults on a first visit). Every
    table's cursor row is kept per pair as well."""

    BINDINGS = [
        Binding("j", "cursor(1)", "down", show=False, id="nav.down", tooltip="Cursor down (vim j)"),
        Binding("k", "cursor(-1)", "up", show=False, id="nav.up", tooltip="Cursor up (vim k)"),
        Binding("g", "cursor_end(0)", "top", show=False, id="nav.top", tooltip="Cursor to the first row (vim g)"),
        Binding("G", "cursor_end(1)", "bottom", show=False, id="nav.bottom", tooltip="Cursor to the last row (vim G)"),
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stale = False
        """True while hidden with older data than the app holds (`stale`)."""
        self._shown_report: Report | None = None
        """The report the screen last showed (a runs-only change then redraws just the breadcrumb)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every subclass's show_report also refreshes the breadcrumb line (pair · corpus · r)."""
        super().__init_subclass__(**kwargs)
        show = cls.__dict__.get("show_report")
        if show is not None and not getattr(show, "adds_crumb", False):
            @functools.wraps(show)
            def with_crumb(self: "ReportScreen", report: Any) -> None:
                show(self, report)
                self.update_crumb()

            with_crumb.adds_crumb = True  # type: ignore[attr-defined]
            cls.show_report = with_crumb  # type: ignore[method-assign]
        show_runs = cls.__dict__.get("show_runs")
        if show_runs is not None and not getattr(show_runs, "adds_crumb", False):
            @functools.wraps(show_runs)
            def runs_with_crumb(self: "ReportScreen", runs: Any) -> None:
                show_runs(self, runs)
                self.update_crumb()

            runs_with_crumb.adds_crumb = True  # type: ignore[attr-defined]
            cls.show_runs = runs_with_crumb  # type: ignore[method-assign]

    @property
    def sapp(self) -> "AppView":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Static("", id="head", classes="head")
        yield Static("", id="crumb", classes="crumb")
        yield Static("", id="status", classes="status")
        if not self.DRAFTER_NOTE_IN_BODY:
            yield drafter_note_line()
        with Vertical(id="body"):
            yield from self.compose_body()
        yield KeyFooter(show_command_palette=False, compact=True)  # ^p is in the help (F1); the keys need the room

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self._pair_defaults = {a: getattr(self, a) for a in self.PAIR_STATE}
        self._pair_states: dict[int, dict[str, Any]] = {}
        self._pair_shown: int | None = None
        self._shown_width: int | None = None
        self.title = "specterm"
        self.sub_title = self.SCREEN_TITLE
        # No `loading = True` here: _state_changed (below) sets the body's loading state in every case, and a
        # screen composed with its report (a cached one) never mounts and removes the indicator.
        self._waiting = False  # the status line says what the load is doing (`load_stage`)
        self.watch(self.app, "error", self._app_changed, init=False)
        self.watch(self.app, "load_stage", self._stage_changed, init=False)
        self.watch(self.app, "runs", self._app_runs_changed, init=False)
        self.watch(self.app, "report", self._app_changed, init=False)
        self.watch(self.app, "drafters", self._drafters_changed, init=False)
        if self.USES_SET:
            self.watch(self.app, "set_name", self._app_set_changed, init=False)
        if self.app.is_running:  # not while quitting: Textual may prune the screen's widgets before its Mount
            self._state_changed()  # also when mounted hidden (the app's idle pass): that is the point

    # -- hidden screens catch up when shown (or when the app is idle) ---------------------------------
    def _app_changed(self, _: Any = None) -> None:
        """The runs, the report or the error changed: redraw now if shown, else when shown."""
        if self.is_current:
            self._state_changed()
        else:
            self._stale = True
            self.sapp.schedule_idle_work()

    def _drafters_changed(self, _: Any = None) -> None:
        """The drafter runs' rows came (after the pair's report): the drafter line of a screen that leaves
        them out; Decide redraws (its Which draft?)."""
        if self.SHOWS_DRAFTERS:
            self._app_changed()
        else:
            self.show_drafter_note()

    def show_drafter_note(self) -> None:
        """One line naming the drafter runs given, which this screen leaves out (their statistics need
        per-position bits); hidden when there are none, or when the screen shows only the load's error."""
        note = self.query_one("#drafter-note", Static)
        text = drafter_note(self.sapp.drafters) if not self.SHOWS_DRAFTERS and not self.sapp.error else ""
        note.display = bool(text)
        if text:
            note.update(text)

    def _app_runs_changed(self, _: Any = None) -> None:
        """The runs changed. A shown screen drawn from the report that already shows the app's
        report (a warm open: the cached report comes before its runs) only names the pair again in
        its breadcrumb; anything else redraws as for any change."""
        app = self.sapp
        if (self.is_current and self.NEEDS_REPORT and app.report is not None and not app.ci_pending
                and self._shown_report is app.report):
            self.update_crumb()
            return
        self._app_changed()

    def _app_set_changed(self, _: Any = None) -> None:
        if self.is_current:
            self._set_changed()
        else:
            self._stale = True
            self.sapp.schedule_idle_work()

    @property
    def stale(self) -> bool:
        """True while a hidden screen shows older data than the app holds."""
        return self._stale

    def catch_up(self) -> None:
        """Redraw from the app's current runs and report (a hidden screen, before it is shown)."""
        if self.stale:
            self._stale = False
            self._state_changed()

    @on(ScreenResume)
    def resumed(self, event: ScreenResume) -> None:
        """Shown: catch up with the app's data, and keep the widgets' styles when nothing they are
        computed from changed while hidden.

        Textual restyles every widget of a screen at each ScreenResume (refresh_styles). A change
        of stylesheet or theme is already caught by its own path: switch_mode restyles the app when
        the screen's `_css_update_count` is behind the app's, as it is after `t`. So the restyle is
        skipped when the counts agree, and done as Textual would otherwise; it was most of a revisit
        (36-122 ms of CPU per switch, against 7-27 without it)."""
        if styles_current(self, self.app):
            event.refresh_styles = False  # Screen's own handler runs after this one (Textual walks the MRO: a
            # subclass's on_screen_resume, this, then Screen's)
        self.catch_up()

    def _stage_changed(self, _: Any = None) -> None:
        """The load's next stage: the status line of a screen waiting for it says so (nothing redrawn)."""
        if self._waiting:
            self.query_one("#status", Static).update(loading_text(self.sapp))

    def _state_changed(self, _: Any = None) -> None:
        self.show_drafter_note()
        app = self.sapp
        body = self.query_one("#body")
        status = self.query_one("#status", Static)
        self._waiting = False
        ready = app.report if self.NEEDS_REPORT else app.runs
        if self.NEEDS_CIS and app.ci_pending:
            ready = None
        if ready is not None:
            body.loading = False
            pending = (ci_pending_text(app) if self.NEEDS_REPORT and app.ci_pending
                       else verdicts_pending_text() if self.SHOWS_BORDERLINE and app.verdicts_pending else None)
            status.display = pending is not None
            if pending is not None:
                status.update(pending)
            self._switch_pair(app.pair_key)
            if self.NEEDS_REPORT and app.report is not None:  # `ready`
                self.show_report(app.report)
                self._shown_report = app.report
            elif app.runs is not None:
                self.show_runs(app.runs)
            return
        status.display = True
        if app.error:
            body.loading = False
            status.update(f"[b $error]Cannot show this screen:[/] {app.error}")
        elif self.NEEDS_CIS and app.ci_pending:
            body.loading = True
            status.update(ci_pending_text(app))
        elif not app.run_paths and app.has_oracle:
            body.loading = False
            status.update("No results yet: the oracle is running. Press [b]8[/] for the Run screen; "
                          "when it ends, Enter there opens the results.")
        else:
            body.loading = True
            self._waiting = True
            status.update(loading_text(app))

    # -- per-pair state -----------------------------------------------------------------------------
    def _switch_pair(self, key: int) -> None:
        """Keep the leaving pair's PAIR_STATE and table cursors; restore (or default) `key`'s."""
        if key == self._pair_shown:
            return
        if self._pair_shown is not None:
            state = {a: getattr(self, a) for a in self.PAIR_STATE}
            state["_cursors"] = {t.id: t.cursor_row for t in self.row_tables() if t.id}
            self._pair_states[self._pair_shown] = state
        restored = self._pair_states.get(key, {})
        for a, default in self._pair_defaults.items():
            setattr(self, a, restored.get(a, default))
        self._pair_shown = key
        cursors = restored.get("_cursors", {})
        if cursors:
            self.call_after_refresh(self._restore_cursors, cursors)

    def row_tables(self) -> list[DataTable[Any] | RowList]:
        """The widgets with a row cursor (whose row is kept per model pair)."""
        return [*self.query(DataTable), *self.query(RowList)]

    def _restore_cursors(self, cursors: dict[str, int]) -> None:
        for table in self.row_tables():
            row = cursors.get(table.id or "")
            if row is not None and 0 <= row < table.row_count:
                table.move_cursor(row=row, animate=False)

    # -- breadcrumb and width ---------------------------------------------------------------------
    def crumb_r(self) -> float | None:
        """The r this screen shows (the stepped r of an RStepping screen, else the run's measured r)."""
        r = getattr(self, "r", None)
        if r is not None:
            return float(r)
        report = self.sapp.report
        return report.pooled.r_measured if report is not None and report.pooled is not None else None

    def crumb_measured_r(self) -> float | None:
        """The measured r the shown r is compared with (the pooled set's; an RStepping screen's own)."""
        report = self.sapp.report
        if report is None:
            return None
        measured = getattr(self, "measured_r", None)
        if callable(measured):
            got = measured(report)
            return None if got is None else float(got)
        return report.pooled.r_measured if report.pooled is not None else None

    def crumb_r_text(self) -> str:
        """'r = 0.177 (measured)' or 'r = 0.600 (chosen)': an r never shows without saying which it is
        (Optimum and Decide step r apart, so two screens may show two r at once)."""
        r = self.crumb_r()
        if r is None:
            return "r not measured"
        measured = self.crumb_measured_r()
        what = "measured" if measured is not None and math.isclose(r, measured, rel_tol=1e-9, abs_tol=1e-12) else (
            "chosen" if measured is not None or getattr(self, "r", None) is not None else "default")
        return f"r = {r:.3f} ({what})"

    def crumb_corpus(self) -> str:
        return self.sapp.set_name if self.USES_SET else "all corpora"

    def update_crumb(self) -> None:
        """Two lines on every screen: the head (screen · run k/n · engine, -n · machine of the costs)
        and the crumb (model pair · corpus · r)."""
        app = self.sapp
        runs = app.runs or []
        pair = "?"
        meta = runs[0].meta if runs else app.pair_meta  # a cached report shown before its runs are parsed
        if meta is not None:
            pair = f"{short_model(model_spec(meta, 'draft'))} -> {short_model(model_spec(meta, 'target'))}"
        r_text = self.crumb_r_text()
        r_text = f" · {r_text}" if r_text else ""
        corpus = fit_text(printable(self.crumb_corpus()), max(self.avail_width - len(r_text) - 12, 8))
        tail = f" · {corpus}{r_text}"  # a corpus name too long gives way too (an ellipsis), r never does
        room = self.avail_width - len(tail)
        if len(pair) > room:  # the pair is free text: it gives way, the corpus and r never do
            pair = pair[: max(room - 1, 1)] + "…"
        self.query_one("#crumb", Static).update(f"{safe(pair)}{safe(tail)}")
        self.query_one("#head", Static).update(head_line(app, self.SCREEN_TITLE, self.head_costs(), self.avail_width))

    def head_costs(self) -> str:
        """The head line's last part: whose costs the decisions shown read (export.shown_machine)."""
        return costs_text(self.sapp.report)

    @property
    def avail_width(self) -> int:
        """Columns a full-width table may use: the screen's width less a vertical scrollbar."""
        width = self.size.width or self.app.size.width
        return max(width - 2, 20)

    def on_resize(self, event: Any) -> None:
        """Redraw at a new width: narrow layouts are chosen by width."""
        width = self.size.width
        if self._shown_width is not None and width != self._shown_width:
            self._app_set_changed()
        self._shown_width = width

    def _set_changed(self, _: Any = None) -> None:
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)

    def show_report(self, report: Report) -> None:
        """Fill the tables and plots from the report (called again when it or the set changes)."""

    def show_runs(self, runs: list[Any]) -> None:
        """For NEEDS_REPORT = False screens: fill from the loaded runs."""

    # -- helpers for subclasses -----------------------------------------------------------------
    def current_set(self, report: Report) -> tuple[str, SetReport]:
        """The set the app shows (report.set_or_default's fallback) and its report."""
        name = report.set_or_default(self.sapp.set_name)
        current = report.sets.get(name)
        if current is None:  # every report holds its pooled set (a load refuses runs without prompts)
            raise SpectermError("The report holds no set to show; open runs with finished prompts.")
        return name, current

    def set_label(self) -> str:
        names = [safe(n) for n in self.sapp.set_names]
        shown = safe(self.sapp.set_name)
        return "  ".join(f"[reverse] {n} [/]" if n == shown else n for n in names)

    def action_cursor(self, step: int) -> None:
        """j / k: the focused widget's cursor down / up (a table row, the token view's line)."""
        focused = self.focused
        action = getattr(focused, "action_cursor_down" if step > 0 else "action_cursor_up", None)
        if action is None:
            action = getattr(focused, "action_line", None)
            if action is not None:
                action(step)
                return
        if action is not None:
            action()

    def action_cursor_end(self, last: int) -> None:
        """g / G: the focused table's first / last row (the token view's first / last token)."""
        focused = self.focused
        if isinstance(focused, (DataTable, RowList)):
            if focused.row_count:
                focused.move_cursor(row=focused.row_count - 1 if last else 0, animate=False)
            return
        action = getattr(focused, "action_last" if last else "action_first", None)
        if action is not None:
            action()

    def export_markdown(self) -> str:
        """What `e` writes: this screen's sections of export.markdown_tables, each under its title
        as in `specterm report --format md`, the first headed by the context (run · pair · r)."""
        report = self.sapp.report
        if report is None:  # the app's export actions check first
            raise SpectermError("The report is not ready yet; try again when the tables show.")
        return screen_markdown(report, self.EXPORT_SECTIONS, self.export_context())

    def export_stem(self) -> str:
        """The default file name for `e` (without .md): specterm-<screen>-<draft>-<target>-<engine>."""
        return f"specterm-{self.EXPORT_NAME}-{pair_slug(self.sapp.runs or [], self.sapp.report)}"

    def context_report(self) -> "Report | None":
        """The report whose runs, engines and machine the export's context line names (Decide: the
        shown profile's view)."""
        return self.sapp.report

    def export_context(self) -> str:
        """One markdown line: the runs, engines and machine of the costs (export.context_line), the
        model pair and the r the shown numbers were computed at."""
        from specterm.core.report.export import context_line

        app = self.sapp
        runs = app.runs or []
        pair = "?"
        if runs:
            meta = runs[0].meta
            pair = f"{printable(str(model_spec(meta, 'draft') or '?'))} -> {printable(str(model_spec(meta, 'target') or '?'))}"
        report = self.context_report()
        context = context_line(report) if report is not None else "runs: " + (", ".join(printable(r.name) for r in runs) or "?")
        r_text = self.export_r_text()
        return f"{printable(context)} · pair: {pair}" + (f" · {r_text}" if r_text else "")

    def export_r_text(self) -> str:
        """The r the exported tables were computed at (the crumb's r, unless a screen says otherwise)."""
        return self.crumb_r_text()


def plural(n: int, noun: str) -> str:
    """"1 prompt", "2 prompts"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def loading_text(app: AppView) -> str:
    """The status line while the runs are loaded and analysed: the load's stage once it has one."""
    return app.load_stage or "Loading the runs and computing the report ..."


def verdicts_pending_text() -> str:
    """The status line of a screen of verdicts while they are checked under the other bootstrap seeds."""
    return ("[b]checking the verdicts[/] under bootstrap seeds 1-4: every CI is shown; a verdict that "
            "moves with the seed is marked borderline when it is done")


def ci_pending_text(app: AppView) -> str:
    """The status line while only point estimates are shown (the full report is on its way)."""
    boot = app.analysis_params.get("boot")
    return (f"[b]computing CIs[/] (bootstrap over streams, B = {boot}): point estimates shown, "
            "every CI and verdict appears when it is done")


def drafter_note_line() -> Static:
    """The (hidden until drafter runs are given) line that shows `drafter_note`."""
    note = Static("", id="drafter-note", classes="note")
    note.display = False
    return note


def drafter_note(drafters: Sequence[Any]) -> str:
    """The drafter line of a screen that leaves drafter runs out: which runs, and why (SPEC 2b)."""
    if not drafters:
        return ""
    names = ", ".join(safe(printable(d.drafter)) for d in drafters)
    return (f"[b]Drafter runs[/] ({names}) have no per-position bits: this screen does not apply to them; "
            "[b]6[/] Decide compares them.")


def model_spec(meta: dict[str, Any], role: str) -> Any:
    """meta[role]["spec"] (or meta[role] when it is a plain string)."""
    value = meta.get(role)
    return value.get("spec") if isinstance(value, dict) else value


def short_model(spec: Any) -> str:
    """A model spec shortened for the breadcrumb: its last path part that is not 'model.gguf'."""
    text = str(spec or "?")
    parts = [p for p in text.replace("\\", "/").split("/") if p and not p.endswith(".gguf")]
    return parts[-1] if parts else text


def screen_markdown(report: Report, sections: tuple[str, ...], context: str = "") -> str:
    """`## Title` then export.markdown_tables(report)[section], for each section, blank-line
    separated; `context` (one line: run · pair · r) under the first title."""
    from specterm.core.report.export import TITLES, markdown_tables

    tables = markdown_tables(report)
    parts = []
    for i, s in enumerate(sections):
        head = f"## {TITLES[s]}\n\n" + (f"{context}\n\n" if context and i == 0 else "")
        parts.append(head + tables[s])
    return "\n\n".join(parts) + "\n"


def pair_slug(runs: Sequence[Any], report: "Report | None" = None) -> str:
    """<draft>-<target>-<engine> for file names: short_model of each model and the engine,
    characters other than letters, digits, '.', '_' and '-' as '-' ("pair" when no run is loaded):
    the torch and llama.cpp runs of one pair get different default names."""
    import re

    if not runs:
        return "pair"
    meta = runs[0].meta
    names = [short_model(model_spec(meta, role)) for role in ("draft", "target")]
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "-", n).strip("-.") or "model" for n in names]
    engine = run_engine(meta, report)
    return "-".join(parts + [re.sub(r"[^A-Za-z0-9._-]+", "-", engine).strip("-.") or "engine"])


def run_engine(meta: dict[str, Any] | None, report: "Report | None" = None) -> str:
    """The engine of the runs shown: the report's (RunSummary.engine), else "import" for an import,
    else run.json's backend name, else torch (the oracle's own engine when run.json names none)."""
    if report is not None:
        engines = list(dict.fromkeys(r.engine for r in report.runs if r.engine))
        if engines:
            return "+".join(engines)
    if isinstance((meta or {}).get("imported_from"), str):
        return "import"  # streams from another tool: no engine of specterm's made them (profiles.run_engine)
    backend = (meta or {}).get("backend")
    name = backend.get("name") if isinstance(backend, dict) else None
    return printable(str(name)) if name else "torch"


def costs_text(report: "Report | None") -> str:
    """Whose costs the shown decisions read: "costs: <machine> (this machine)" or "(other machine)",
    "costs not measured", or "costs …" before the report (export.shown_machine)."""
    if report is None:
        return "costs …"
    from specterm.core.report.export import shown_machine

    machine = shown_machine(report)
    if machine is None:
        return "costs not measured"
    here = [s.decision_hw.matches_this_machine for _, s in report.ordered_sets()
            if s.decision_hw is not None and s.decision_hw.machine]
    return f"costs: {printable(machine)}" + (THIS if here and all(here) else OTHER)


THIS, OTHER = " (this machine)", " (other machine)"
"""Whose costs: said after the machine's label, never cut (widgets.columns.fit_machine)."""


def fit_costs(costs: str, cells: int) -> str:
    """costs_text within `cells` cells: the machine's label shortened (fit_machine), "(this machine)" or
    "(other machine)" kept whole."""
    from specterm.widgets.columns import fit_machine

    for suffix in (THIS, OTHER):
        if costs.endswith(suffix):
            head = costs[: -len(suffix)]
            prefix = "costs: " if head.startswith("costs: ") else ""
            return prefix + fit_machine(head.removeprefix(prefix), cells - len(prefix), suffix)
    return fit_text(costs, cells)


def head_line(app: "AppView", title: str, costs: str, width: int) -> str:
    """The head line, within `width` cells: the screen, which run group of how many (`M` the next),
    its engine and -n (what sets groups apart), and the machine of the costs with "(this machine)" or
    "(other machine)", never cut (fit_costs: the machine's label is shortened, the suffix stays)."""
    runs = app.runs or []
    meta = runs[0].meta if runs else app.pair_meta
    gen = (meta or {}).get("generation") if meta is not None else None
    n_new = gen.get("max_new_tokens") if isinstance(gen, dict) else None
    which = f"run {app.pair_key + 1}/{app.n_model_groups}"
    engine = run_engine(meta, app.report) + (f" -n {n_new}" if isinstance(n_new, int) else "")
    # Tighter and tighter: "(M next)" goes first, then the "costs: " before the machine (its
    # "(this machine)" / "(other machine)" says whose costs), then the machine's label gives way.
    variants = [(f"{title} · {which}{' (M next)' if app.n_model_groups > 1 else ''} · {engine} · ", costs),
                (f"{title} · {which} · {engine} · ", costs),
                (f"{title} · {which} · {engine} · ", costs.removeprefix("costs: "))]
    for fixed, text in variants:
        room = width - len(fixed)
        if fit_costs(text, room) == text:
            break
    return safe(fixed) + f"[b]{safe(fit_costs(text, max(width - len(fixed), 8)))}[/]"


def set_bindings(screen: str) -> list[BindingType]:
    """`c` / `C`: the next / previous set (corpus or pooled), for USES_SET screens."""
    return [
        Binding("c", "app.cycle_set(1)", "corpus", id=f"{screen}.corpus", tooltip="Next corpus (or pooled)"),
        Binding("C", "app.cycle_set(-1)", "prev corpus", show=False, id=f"{screen}.corpus_prev"),
    ]


def r_bindings(screen: str, what: str = "", measured: str = "Back to the measured r", show_measured: bool = True) -> list[Binding]:
    """`-` / `+` / `m` of an RStepping screen; `what` ends the step tooltips, `measured` is m's."""
    return [
        Binding("minus", "step_r(-1)", "r-", id=f"{screen}.r_down", tooltip=f"Smaller cost ratio r{what}"),
        Binding("plus,equals_sign", "step_r(1)", "r+", id=f"{screen}.r_up", tooltip=f"Larger cost ratio r{what}"),
        Binding("m", "measured_r", "measured r", show=show_measured, id=f"{screen}.r_measured", tooltip=measured),
    ]


def step_value(values: Sequence[float], current: float, step: int) -> float:
    """The next value of the sorted `values` above `current` (step > 0) or below it (step < 0),
    staying at the last (first) one at the end."""
    if step > 0:
        bigger = [x for x in values if x > current + 1e-12]
        return bigger[0] if bigger else values[-1]
    smaller = [x for x in values if x < current - 1e-12]
    return smaller[-1] if smaller else values[0]


class RStepping(ReportScreen):
    """Keys for the cost ratio r of a ReportScreen: `-`/`+` step through `r_choices(report)`, `m`
    goes back to the measured r. It starts at the measured r, else at the choice nearest R_DEFAULT.
    Subclasses define `r_choices` and `measured_r`."""

    r: float | None = None

    def r_choices(self, report: Any) -> Sequence[float]:
        raise NotImplementedError

    def measured_r(self, report: Any) -> float | None:
        raise NotImplementedError

    def initial_r(self, report: Any) -> float:
        measured = self.measured_r(report)
        if measured is not None:
            return measured
        return min(self.r_choices(report) or [R_DEFAULT], key=lambda r: abs(r - R_DEFAULT))

    def export_r_text(self) -> str:
        """The report's tables are at the measured r (and over the r grid), whatever r the screen
        steps to: the export says so, and which r the screen showed (issue 37: a table at 0.146 was
        headed "r = 0.250 (chosen)")."""
        report = self.sapp.report
        measured = self.measured_r(report) if report is not None else None
        crumb = self.crumb_r_text()
        if measured is None or self.r is None or math.isclose(self.r, measured, rel_tol=1e-9, abs_tol=1e-12):
            return crumb
        return f"tables at the measured r = {measured:.3f} and over the r grid (the screen showed {crumb})"

    def action_step_r(self, step: int) -> None:
        report = self.sapp.report
        if report is None:
            return
        rs = sorted(self.r_choices(report))
        if rs:
            self.r = step_value(rs, self.r if self.r is not None else self.initial_r(report), step)
            self.show_report(report)

    def action_measured_r(self) -> None:
        report = self.sapp.report
        if report is None:
            return
        if self.measured_r(report) is None:
            self.notify("This run has no measured r (run the oracle with --cost).", timeout=3)
        self.r = self.initial_r(report)
        self.show_report(report)


def focused_markdown(screen: Any) -> str:
    """What `y` copies: the screen's own `copy_markdown()` when it has one (Decide adds the focused
    set's engine settings), else the focused row (`focused_markdown_row`)."""
    hook = getattr(screen, "copy_markdown", None)
    return hook() if callable(hook) else focused_markdown_row(screen)


def focused_markdown_row(screen: Any) -> str:
    """The focused DataTable's head and cursor row as a two-line markdown table ("" when no table
    row is focused)."""
    from specterm.core.report.export import markdown_table

    table = getattr(screen, "focused", None)
    if isinstance(table, RowList) and table.row_count:
        return markdown_table(table.labels, [table.shown_row(table.cursor_row)[: len(table.labels)]]) + "\n"
    if not isinstance(table, DataTable) or not table.row_count or table.cursor_row < 0:
        return ""
    head = [plain_cell(c.label) for c in table.ordered_columns]
    row = [plain_cell(c) for c in table.get_row_at(table.cursor_row)]
    extra = getattr(screen, "copy_columns", None)
    for label, value in (extra() if callable(extra) else []):  # e.g. Decide: whose costs the row's decision reads
        head.append(label)
        row.append(value)
    return markdown_table(head, [row]) + "\n"


def plain_cell(value: Any) -> str:
    """A table cell as one line of text (a CI on a second line joined back with a space)."""
    return value.plain if hasattr(value, "plain") else str(value)
