"""Scorecard: the measurement seed's P1-P5 and the economics seed's Q1-Q4, grouped by seed, each
with its computed verdict and the numbers behind it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from specterm.core.report import SEEDS, Report
from specterm.screens.base import ReportScreen
from specterm.widgets.styles import VERDICT_STYLE, verdict_markup
from specterm.widgets.tables import fill_table, safe

COLUMNS = [("id", "id"), ("seed", "seed"), ("verdict", "verdict"), ("prediction", "prediction / claim")]


class ScorecardScreen(ReportScreen):
    SCREEN_TITLE = "Scorecard"
    EXPORT_NAME = "scorecard"
    EXPORT_SECTIONS = ("scorecard",)

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="scorecard-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="evidence-scroll"):
            yield Static("", id="evidence")

    def export_markdown(self) -> str:
        """The scorecard table under a heading, with the context its verdicts were computed in."""
        from specterm.core.export import TITLES, markdown_tables

        table = markdown_tables(self.sapp.report)["scorecard"]
        return f"## {TITLES['scorecard']}\n\n{self.export_context()}\n\n{table}\n"

    def show_report(self, report: Report) -> None:
        rows, evidence = [], []
        for seed, label in SEEDS.items():  # rows are grouped by seed: P rows, then Q rows
            entries = [e for e in report.scorecard if e.seed == seed]
            if entries:
                evidence.append(f"[b u]{safe(label)}[/]")
            for entry in entries:
                pid, verdict = entry.id, entry.verdict
                rows.append((pid, [pid, Text(seed, style="dim"), Text(verdict, style=VERDICT_STYLE.get(verdict, "")),
                                   Text(entry.prediction)]))
                text = entry.evidence
                if text.startswith(verdict + ":"):  # the evidence usually opens with its verdict already
                    text = text[len(verdict) + 1 :].lstrip()
                evidence.append(f"[b]{safe(pid)}[/] {verdict_markup(verdict)}: {safe(text)}")
        with self.app.batch_update():
            fill_table(self.query_one("#scorecard-table", DataTable), COLUMNS, rows)
            self.query_one("#evidence", Static).update("\n\n".join(evidence) or "No scorecard in this report.")
