"""Scorecard: P1-P5, each with its computed verdict and the numbers behind it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Static

from specterm.core.report import Report
from specterm.screens.base import ReportScreen
from specterm.widgets.styles import VERDICT_STYLE, verdict_markup
from specterm.widgets.tables import fill_table

COLUMNS = [("id", "id"), ("verdict", "verdict"), ("prediction", "prediction")]


class ScorecardScreen(ReportScreen):
    SCREEN_TITLE = "Scorecard"
    EXPORT_NAME = "scorecard"
    EXPORT_SECTIONS = ("scorecard",)

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="scorecard-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="evidence-scroll"):
            yield Static("", id="evidence")

    def show_report(self, report: Report) -> None:
        rows, evidence = [], []
        for entry in report.scorecard:
            pid, verdict = entry.id, entry.verdict
            rows.append((pid, [pid, Text(verdict, style=VERDICT_STYLE.get(verdict, "")), Text(entry.prediction)]))
            text = entry.evidence
            if text.startswith(verdict + ":"):  # the evidence usually opens with its verdict already
                text = text[len(verdict) + 1 :].lstrip()
            evidence.append(f"[b]{escape(pid)}[/] {verdict_markup(verdict)}: {escape(text)}")
        with self.app.batch_update():
            fill_table(self.query_one("#scorecard-table", DataTable), COLUMNS, rows)
            self.query_one("#evidence", Static).update("\n\n".join(evidence) or "No scorecard in this report.")
