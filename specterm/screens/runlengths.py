"""Run lengths: per set, the histogram of L against the geometric prediction, and D/D_geom with CI;
`w` swaps the histogram for the position view (alpha by position in y, widgets/position.py)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from specterm.core.report.types import Report
from specterm.core.report.text import printable
from specterm.screens.base import ReportScreen, set_bindings
from specterm.widgets.plots import ReportPlot, draw_runlengths
from specterm.widgets.position import draw_position
from specterm.core.report.fmt import fmt
from specterm.widgets.tables import fill_table, fmt_ci

COLUMNS = [("set", "corpus"), ("runs", "closed runs"), ("D", "D = var/mean"), ("D_geom", "D_geom"),
           ("ratio", "D/D_geom [CI]")]


class RunLengthsScreen(ReportScreen):
    SCREEN_TITLE = "Run lengths"
    EXPORT_NAME = "runlengths"
    EXPORT_SECTIONS = ("runlengths", "position")
    USES_SET = True

    BINDINGS = [
        *set_bindings("runlengths"),
        Binding("y", "log_y", "log y", id="runlengths.log", tooltip="Toggle a logarithmic count axis"),
        Binding("w", "by_position", "position", id="runlengths.position",
                tooltip="Swap the histogram for alpha by position in y (warm-up), and back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.log_y = False
        self.by_position = False

    def compose_body(self) -> ComposeResult:
        yield Static("", id="set-bar", classes="set-bar")
        yield DataTable(id="runlengths-table", cursor_type="row", zebra_stripes=True)
        yield ReportPlot(id="runlengths-plot")

    def show_report(self, report: Report) -> None:
        names = report.set_names
        rows = []
        for name, s in report.ordered_sets():
            rl = s.runlengths
            rows.append((name, [name, fmt(rl.n_runs), fmt(rl.D, 2), fmt(rl.D_geom, 2),
                                fmt_ci(s.dispersion_ratio, 2)]))
        table = self.query_one("#runlengths-table", DataTable)
        with self.app.batch_update():
            fill_table(table, COLUMNS, rows, width=self.avail_width)
            name, current = self.current_set(report)
            if name in names:
                table.move_cursor(row=names.index(name), animate=False)
            self.query_one("#set-bar", Static).update(self.set_label())
            label = printable(name)
            if self.by_position:
                draw_position(self.query_one(ReportPlot), label, current.position, current.alpha)
            else:
                draw_runlengths(self.query_one(ReportPlot), label, current.runlengths, self.log_y)

    def action_log_y(self) -> None:
        self.log_y = not self.log_y
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)

    def action_by_position(self) -> None:
        self.by_position = not self.by_position
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)
