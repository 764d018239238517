"""What every report screen shares: header/footer, a body that shows a loading indicator until the
report is ready, the chosen set (corpus or pooled), and markdown export of its sections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

if TYPE_CHECKING:
    from specterm.app import SpectermApp


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

    def show_report(self, report: dict) -> None:
        """Fill the tables and plots from the report (called again when it or the set changes)."""

    def show_runs(self, runs: list) -> None:
        """For NEEDS_REPORT = False screens: fill from the loaded runs."""

    # -- helpers for subclasses -----------------------------------------------------------------
    def current_set(self, report: dict) -> tuple[str, dict]:
        sets = report.get("sets") or {}
        name = self.sapp.set_name
        if name not in sets:
            name = "pooled" if "pooled" in sets else next(iter(sets), "")
        return name, sets.get(name) or {}

    def set_label(self) -> str:
        names = self.sapp.set_names
        return "  ".join(f"[reverse] {n} [/]" if n == self.sapp.set_name else n for n in names)

    def export_markdown(self) -> str:
        """What `e` writes: this screen's sections of export.markdown_tables, each under its title
        as in `specterm report --format md`."""
        return screen_markdown(self.sapp.report, self.EXPORT_SECTIONS)


def screen_markdown(report: dict, sections: tuple[str, ...]) -> str:
    """`## Title` then export.markdown_tables(report)[section], for each section, blank-line separated."""
    from specterm.core.export import TITLES, markdown_tables

    tables = markdown_tables(report)
    return "\n\n".join(f"## {TITLES[s]}\n\n{tables[s]}" for s in sections) + "\n"
