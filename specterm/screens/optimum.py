"""Optimum: g*_true and g*_iid against r, throughput curves at a chosen r, the measured r marked,
and E_true / E_iid at g = 2, 4, 8, 16 with CIs."""

from __future__ import annotations

import math

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from specterm.core.params import YIELD_GAMMAS
from specterm.core.report.types import Report
from specterm.core.report.text import printable
from specterm.screens.base import ReportScreen, RStepping, r_bindings, set_bindings
from specterm.widgets.plots import ReportPlot, draw_optimum, draw_throughput
from specterm.core.report.fmt import fmt
from specterm.widgets.columns import fit_text
from specterm.widgets.tables import fill_table, fmt_ci, safe

WHERE_DECISION = "g here: the cost-ratio model's (T = E/(1+g r)); the decision: Decide (6)"
"""Why this screen's g* may differ from Decide's g_hw and the memory-bound reference's (issue 37)."""
COLUMNS = [("g", "g"), ("E_true", "E_true"), ("E_iid", "E_iid"), ("ratio", "E_true/E_iid [CI]")]


class OptimumScreen(RStepping, ReportScreen):
    SCREEN_TITLE = "Optimum"
    EXPORT_NAME = "optimum"
    EXPORT_SECTIONS = ("optimum", "yield")
    USES_SET = True
    PAIR_STATE = ("r",)

    BINDINGS = [
        *set_bindings("optimum"),
        *r_bindings("optimum", " for the throughput curves", "Back to the run's measured r", show_measured=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.r: float | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="set-bar", classes="set-bar")
        yield Static("", id="where-decision", classes="dim")
        with Horizontal(id="optimum-plots"):
            yield ReportPlot(id="gstar-plot")
            yield ReportPlot(id="curve-plot")
        yield DataTable(id="yield-table", cursor_type="row", zebra_stripes=True)

    def r_choices(self, report: Report) -> list[float]:
        """The r of the current set's optimum table (the grid plus the measured r)."""
        _, s = self.current_set(report)
        return sorted({row.r for row in s.optimum})

    def measured_r(self, report: Report) -> float | None:
        _, s = self.current_set(report)
        return s.r_measured

    def show_report(self, report: Report) -> None:
        from specterm.core.decide.optimum import throughput_curve

        name, s = self.current_set(report)
        if self.r is None:
            self.r = self.initial_r(report)
        r = self.r
        measured = s.r_measured
        at_r = next((row for row in s.optimum if math.isclose(row.r, r)), None)
        curve = s.curve
        rows = []
        for g in YIELD_GAMMAS:
            rows.append((str(g), [str(g), fmt(curve.at("E_true", g)), fmt(curve.at("E_iid", g)),
                                  fmt_ci(s.yield_ratio.get(str(g)))]))
        with self.app.batch_update():
            fill_table(self.query_one("#yield-table", DataTable), COLUMNS, rows)
            mtext = "measured" if measured is not None and math.isclose(r, measured) else (
                f"chosen; measured {measured:.3f}" if measured is not None else "chosen; r not measured")
            gstar = f": g*_true [b]{at_r.gamma_true}[/], g*_iid [b]{at_r.gamma_iid}[/]" if at_r else ""
            # The cost-ratio model's r, named as such: Decide shows its own r beside the accelerator.
            self.query_one("#set-bar", Static).update(
                f"{self.set_label()}   cost-ratio model r = c_draft/c_verify = [b]{r:.3f}[/] ({mtext}){gstar}"
            )
            self.query_one("#where-decision", Static).update(safe(fit_text(WHERE_DECISION, self.avail_width)))
            draw_optimum(self.query_one("#gstar-plot", ReportPlot), printable(name), s.optimum, measured, r)
            if curve.gamma:
                draw_throughput(self.query_one("#curve-plot", ReportPlot), throughput_curve(s.curve, r), r)
