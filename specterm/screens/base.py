"""What every report screen shares: header/footer, a body that shows a loading indicator until the
report is ready, the chosen set (corpus or pooled), and markdown export of its sections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from specterm.core.params import R_DEFAULT

if TYPE_CHECKING:
    from specterm.app import SpectermApp
    from specterm.core.report import Report, SetReport


class ReportScreen(Screen):
    """Subclasses compose `compose_body()` and fill it in `show_report(report)`; they never compute."""

    SCREEN_TITLE: ClassVar[str] = ""
    EXPORT_NAME: ClassVar[str] = ""
    """File stem for `e`: ./specterm-<EXPORT_NAME>.md."""
    EXPORT_SECTIONS: ClassVar[tuple[str, ...]] = ()
    """Sections of `export.markdown_tables(report)` this screen shows (what `e` writes)."""
    NEEDS_REPORT: ClassVar[bool] = True
    """False for screens that only need the loaded runs (Streams)."""
    USES_SET: ClassVar[bool] = False
    """True when the screen shows one set (corpus or pooled) at a time and follows `app.set_name`."""

    @property
    def sapp(self) -> "SpectermApp":
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(icon="")
        yield Static("", id="status", classes="status")
        with Vertical(id="body"):
            yield from self.compose_body()
        yield Footer()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.title = "specterm"
        self.sub_title = self.SCREEN_TITLE
        self.query_one("#body").loading = True
        self.watch(self.app, "error", self._state_changed, init=False)
        self.watch(self.app, "runs", self._state_changed, init=False)
        self.watch(self.app, "report", self._state_changed, init=False)
        if self.USES_SET:
            self.watch(self.app, "set_name", self._set_changed, init=False)
        self._state_changed()

    def _state_changed(self, _: Any = None) -> None:
        app = self.sapp
        body = self.query_one("#body")
        status = self.query_one("#status", Static)
        ready = app.report if self.NEEDS_REPORT else app.runs
        if ready is not None:
            body.loading = False
            status.display = False
            if self.NEEDS_REPORT:
                self.show_report(app.report)
            else:
                self.show_runs(app.runs)
            return
        status.display = True
        if app.error:
            body.loading = False
            status.update(f"[b $error]Cannot show this screen:[/] {app.error}")
        elif not app.run_paths and app.has_oracle:
            body.loading = False
            status.update("No results yet: the oracle is running. Press [b]8[/] for the Run screen; "
                          "when it ends, Enter there opens the results.")
        else:
            body.loading = True
            status.update("Loading the runs and computing the report ...")

    def _set_changed(self, _: Any = None) -> None:
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)

    def show_report(self, report: Report) -> None:
        """Fill the tables and plots from the report (called again when it or the set changes)."""

    def show_runs(self, runs: list) -> None:
        """For NEEDS_REPORT = False screens: fill from the loaded runs."""

    # -- helpers for subclasses -----------------------------------------------------------------
    def current_set(self, report: Report) -> tuple[str, SetReport | None]:
        """The set the app shows (report.set_or_default's fallback) and its report."""
        name = report.set_or_default(self.sapp.set_name)
        return name, report.sets.get(name)

    def set_label(self) -> str:
        names = self.sapp.set_names
        return "  ".join(f"[reverse] {n} [/]" if n == self.sapp.set_name else n for n in names)

    def export_markdown(self) -> str:
        """What `e` writes: this screen's sections of export.markdown_tables, each under its title
        as in `specterm report --format md`."""
        return screen_markdown(self.sapp.report, self.EXPORT_SECTIONS)


def screen_markdown(report: Report, sections: tuple[str, ...]) -> str:
    """`## Title` then export.markdown_tables(report)[section], for each section, blank-line separated."""
    from specterm.core.export import TITLES, markdown_tables

    tables = markdown_tables(report)
    return "\n\n".join(f"## {TITLES[s]}\n\n{tables[s]}" for s in sections) + "\n"


def set_bindings(screen: str) -> list[Binding]:
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


class RStepping:
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
