"""Scorecard: the measurement seed's P1-P5 and the economics seed's Q1-Q6, grouped by seed, each
with its computed verdict, its direction and size outcomes (SPEC 4), and the numbers behind it."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from specterm.core.errors import SpectermError
from specterm.core.report.types import SEEDS, Report
from specterm.screens.base import ReportScreen
from specterm.widgets.styles import cell_verdict, shown_verdict, verdict_markup, verdict_style
from specterm.widgets.tables import fill_table, safe

COLUMNS = [("id", "id"), ("seed", "seed"), ("verdict", "verdict"), ("direction", "direction"), ("size", "size"),
           ("prediction", "prediction / claim")]
NARROW = [("id", "id"), ("verdict", "verdict"), ("direction", "direction"), ("size", "size")]
"""Below 100 columns the seed and prediction columns are left out (the evidence below is headed by
seed, and each row's evidence opens with its prediction); verdict, direction and size always show."""
VERDICT_WIDTH = 19  # "holds in direction," / "not in size" on two lines
OUTCOME_WIDTH = 14  # "not reproduced"


def wrapped(text: str, width: int) -> str:
    """Free text wrapped at word boundaries to `width` cells (a prediction is never cut)."""
    return "\n".join(textwrap.wrap(text, max(width, 16))) or text


class ScorecardScreen(ReportScreen):
    SCREEN_TITLE = "Scorecard"
    EXPORT_NAME = "scorecard"
    EXPORT_SECTIONS = ("scorecard",)
    NEEDS_CIS = True  # every row is a verdict on a CI: it waits for the bootstrap
    SHOWS_BORDERLINE = True  # and is marked borderline after every CI (the check under seeds 1-4)
    AUTO_FOCUS = "#scorecard-table"

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="scorecard-table", cursor_type="row", zebra_stripes=True)
        yield VerticalScroll(id="evidence-scroll")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The evidence pane follows the selected row: its entry is marked and scrolled to the top."""
        if event.data_table.id == "scorecard-table" and event.row_key is not None:
            self.show_evidence(str(event.row_key.value))

    def show_evidence(self, pid: str) -> None:
        pane = self.query_one("#evidence-scroll", VerticalScroll)
        for entry in pane.query(".evidence"):
            entry.set_class(entry.name == pid, "-selected")
        target = next((e for e in pane.query(".evidence") if e.name == pid), None)
        if target is not None:
            pane.scroll_to_widget(target, top=True, animate=False)

    def export_markdown(self) -> str:
        """The scorecard table under a heading, with the context its verdicts were computed in."""
        from specterm.core.report.export import TITLES, markdown_tables

        report = self.sapp.report
        if report is None:  # the app's export actions check first
            raise SpectermError("The report is not ready yet; try again when the tables show.")
        table = markdown_tables(report)["scorecard"]
        return f"## {TITLES['scorecard']}\n\n{self.export_context()}\n\n{table}\n"

    def show_report(self, report: Report) -> None:
        rows, evidence = [], []
        narrow = self.avail_width < 100
        columns = NARROW if narrow else COLUMNS
        # what is left for the prediction: id (3), verdict, direction, size, seed (11), 2 padding each
        room = self.avail_width - (3 + VERDICT_WIDTH + 2 * OUTCOME_WIDTH + 11) - 2 * 6 - 2
        for seed, label in SEEDS.items():  # rows are grouped by seed: P rows, then Q rows
            entries = [e for e in report.scorecard if e.seed == seed]
            if entries:
                evidence.append(("", f"[b u]{safe(label)}[/]"))
            for entry in entries:
                pid, verdict = entry.id, entry.verdict
                shown = shown_verdict(cell_verdict(entry), entry.borderline)
                vcell = Text(wrapped(shown, VERDICT_WIDTH), style=verdict_style(verdict))
                dcell = Text(entry.direction, style=verdict_style(entry.direction))
                scell = Text(entry.size, style=verdict_style(entry.size))
                if narrow:
                    rows.append((pid, [pid, vcell, dcell, scell]))
                else:
                    rows.append((pid, [pid, Text(seed, style="dim"), vcell, dcell, scell, Text(wrapped(entry.prediction, room))]))
                text = entry.evidence
                if text.startswith(verdict + ":"):  # the evidence usually opens with its verdict already
                    text = text[len(verdict) + 1 :].lstrip()
                evidence.append((pid, f"[b]{safe(pid)}[/] {safe(entry.prediction)}: {verdict_markup(verdict)}: {safe(text)}"))
        table = self.query_one("#scorecard-table", DataTable)
        with self.app.batch_update():
            fill_table(table, columns, rows)
            self._fill_evidence(evidence or [("", "No scorecard in this report.")])
        if rows:  # after the entries are laid out, so the scroll lands on the right one
            self.call_after_refresh(self.show_evidence, str(rows[min(max(table.cursor_row, 0), len(rows) - 1)][0]))

    def _fill_evidence(self, entries: list[tuple[str, str]]) -> None:
        """One Static per entry (name = its id, '' for a seed heading), rebuilt when the ids change."""
        pane = self.query_one("#evidence-scroll", VerticalScroll)
        shown = list(pane.query(Static))
        if [w.name or "" for w in shown] == [pid for pid, _ in entries]:
            for widget, (_, markup) in zip(shown, entries):
                widget.update(markup)
            return
        pane.remove_children()
        pane.mount_all([Static(markup, name=pid or None, classes="evidence" if pid else "evidence-head")
                        for pid, markup in entries])
