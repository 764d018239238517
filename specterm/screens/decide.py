"""Decide: first the one decision table on the hardware the run measured (report decision_hw, SPEC 6:
g_hw, S_hw [95% CI], the three-way verdict, the break-even v*, the memory-bound reference as a
labelled column), then the verdict sentences, S_hw by batch, the confirmations (cost-model and
decision checks). Below, the cost-ratio model at a chosen r with the roofline B* = I*/(g+1) of an
accelerator preset or a custom ridge: the measurement seed's convention, never a decision."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Input, Static

from specterm.core.errors import SpectermError
from specterm.core.export import batch_table, confirmation_table, decision_table, markdown_table, text_table
from specterm.core.params import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_RIDGE, R_GRID
from specterm.core.report import Report
from specterm.screens.base import ReportScreen, RStepping, r_bindings
from specterm.core.fmt import MISSING, fmt, is_num
from specterm.widgets.tables import fill_table, safe

COLUMNS = [("set", "corpus"), ("g_hw", "g_hw"), ("s_hw", "S_hw [95% CI]"), ("kind", "verdict"),
           ("vstar", "v* (here)"), ("mb", "mem-bound ref.")]
CI_COLUMNS = [2, 5]  # S_hw and the memory-bound reference: their CIs go below the value when narrow
COST_RATIO_HEAD = ["set", "g*_true", "T", "g*_iid", "iid promise", "iid in fact", "roofline B*"]


def escape_md(text: str) -> str:
    return text.replace("*", "\\*")


def speed(x) -> str:
    return f"{x:.2f}x" if is_num(x) else MISSING


def _text_block(table) -> list[str]:
    """A core export table as markup lines: its title in bold, then the aligned text table (escaped)."""
    if table is None:
        return []
    title, head, rows = table
    return ["", f"[b]{safe(title)}[/]", *(safe(line) for line in text_table(head, rows).splitlines())]


def decision_rows(report: Report) -> list[tuple[str, list[str]]]:
    """The decision table's rows (core export.decision_table) without the verdict sentence."""
    table = decision_table(report)
    return [] if table is None else [(r[0], r[:-1]) for r in table[2]]


def ci_below(rows: list[tuple[str, list[str]]], columns: list[int], width: int) -> list[tuple[str, list[str]]]:
    """The rows as they fit `width` cells: when the one-line table is wider, the CI brackets of the
    `columns` move to a second line of their cell ("1.04x [0.95, 1.13]" -> "1.04x" over "[0.95, 1.13]"),
    so the memory-bound column stays on screen at 80 columns instead of a number being cut."""
    if not rows:
        return rows
    n = len(rows[0][1])
    widths = [len(COLUMNS[i][1]) for i in range(n)]
    for _, cells in rows:
        widths = [max(w, len(str(c))) for w, c in zip(widths, cells)]
    if sum(widths) + 2 * n <= width:
        return rows
    out = []
    for key, cells in rows:
        cells = list(cells)
        for i in columns:
            text = str(cells[i])
            if " [" in text:
                head, _, tail = text.partition(" [")
                cells[i] = f"{head}\n[{tail}"
        out.append((key, cells))
    return out


def hardware_verdicts(report: Report) -> str:
    """One line per set: the verdict sentence on this hardware (SPEC 6), under the table."""
    table = decision_table(report)
    if table is None:
        return ""
    return "\n".join(f"[b]{safe(r[0])}[/]: {safe(r[-1])}" for r in table[2])


def hardware_card(report: Report) -> str:
    """S_hw by batch and the confirmations (cost-model and decision checks) as text tables."""
    return "\n".join(_text_block(batch_table(report)) + _text_block(confirmation_table(report)))


class DecideScreen(RStepping, ReportScreen):
    SCREEN_TITLE = "Decide"
    EXPORT_NAME = "decide"
    EXPORT_SECTIONS = ("decide",)
    AUTO_FOCUS = "#decide-table"
    PAIR_STATE = ("r", "preset", "ridge_custom")
    NEEDS_CIS = True
    """Every row is a decision on the CI of S_hw: while the bootstrap runs, the point-estimate report
    would decide without one (and say "no interval: bootstrap off"), so the screen waits, as the
    Scorecard does."""

    BINDINGS = [
        Binding("a", "accelerator(1)", "accel", id="decide.accelerator", tooltip="Next accelerator preset"),
        Binding("A", "accelerator(-1)", "prev accelerator", show=False, id="decide.accelerator_prev"),
        Binding("i", "custom_ridge", "ridge", id="decide.ridge", tooltip="Type a ridge I* in FLOP/byte"),
        *r_bindings("decide", show_measured=False),
        Binding("escape", "leave_input", "back", show=False, id="decide.leave_input"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.presets = list(ACCELERATORS)
        self.preset: str = DEFAULT_ACCELERATOR
        self.ridge_custom: float | None = None
        self.r: float | None = None

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="decide-bar"):
            yield Static("", id="accelerator")
            box = Input(placeholder="ridge FLOP/byte", id="ridge-input", type="number")
            box.display = False
            yield box
        yield DataTable(id="decide-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="verdict-scroll"):
            yield Static("", id="hw-verdicts")
            yield Static("", id="verdicts")
            yield Static("", id="hw-card")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a corpus row: Streams, filtered to that corpus (pooled: every corpus)."""
        from specterm.screens.overview import open_streams_for

        open_streams_for(self, event.row_key.value if event.row_key is not None else None)

    # -- state ------------------------------------------------------------------------------------
    @property
    def ridge(self) -> float:
        return self.ridge_custom if self.ridge_custom is not None else ACCELERATORS[self.preset].ridge

    def r_choices(self, report: Report) -> tuple[float, ...]:
        return R_GRID

    def measured_r(self, report: Report) -> float | None:
        return report.pooled.r_measured if report.pooled is not None else None

    def show_report(self, report: Report) -> None:
        from specterm.core.cost_ratio import cost_ratio_optimum

        if self.r is None:
            self.r = self.initial_r(report)
        rows, notes = [], []
        for name, s in report.ordered_sets():
            try:
                d = cost_ratio_optimum(s, self.r, self.ridge)
            except SpectermError as exc:
                rows.append([name] + [MISSING] * 6)
                notes.append(f"[b]{safe(name)}[/]: {safe(exc)}")
                continue
            rows.append([name, fmt(d.gamma_true), fmt(d.T_true, 2), fmt(d.gamma_iid),
                         fmt(d.T_iid, 2), fmt(d.T_true_at_gamma_iid, 2), fmt(d.roofline_B_star, 0)])
        if self.ridge_custom is not None:
            acc = f"custom ridge I* = {self.ridge_custom:g} FLOP/byte"
        else:
            acc = f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte"
        measured = self.measured_r(report)
        r_text = f"r = {self.r:.3f}" + (" (measured)" if measured is not None and abs(self.r - measured) < 1e-12 else "")
        cost_ratio = ["", f"[b]Cost-ratio model (not a decision): T = E / (1 + g r) at {safe(r_text)}, r = c_draft / "
                          f"c_verify; roofline B* = I*/(g+1) for {safe(acc)}[/] (keys - + r, a accelerator, i ridge)",
                      *(safe(line) for line in text_table(COST_RATIO_HEAD, rows).splitlines()), *notes]
        with self.app.batch_update():
            self.query_one("#accelerator", Static).update(
                "[b]Decision on this hardware[/]: " + safe("S_hw [95% CI] at g_hw; v* = break-even verify cost in decode steps")
            )
            fill_table(self.query_one("#decide-table", DataTable), COLUMNS,
                       ci_below(decision_rows(report), CI_COLUMNS, self.avail_width), width=self.avail_width)
            self.query_one("#hw-verdicts", Static).update(hardware_verdicts(report))
            self.query_one("#verdicts", Static).update(hardware_card(report))
            self.query_one("#hw-card", Static).update("\n".join(cost_ratio))

    def export_markdown(self) -> str:
        """The report's decision tables (as `specterm report`), then the cost-ratio model as shown here
        when another accelerator, ridge or r than the report's is chosen."""
        text = super().export_markdown()
        report = self.sapp.report
        if report is None or self.r is None or (
                self.ridge_custom is None and self.preset == DEFAULT_ACCELERATOR and self.r == self.initial_r(report)):
            return text
        from specterm.core.cost_ratio import cost_ratio_optimum

        rows = []
        for name, s in report.ordered_sets():
            d = cost_ratio_optimum(s, self.r, self.ridge)
            rows.append([name, fmt(d.gamma_true), fmt(d.T_true, 2), fmt(d.gamma_iid),
                         fmt(d.T_iid, 2), fmt(d.T_true_at_gamma_iid, 2), fmt(d.roofline_B_star, 0)])
        ridge = (f"custom ridge I* = {self.ridge_custom:g} FLOP/byte" if self.ridge_custom is not None
                 else f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte")
        title = escape_md(f"cost-ratio model at r = {self.r:.3f}, {ridge} (not a decision)")
        return f"{text}\n**As shown: {title}**\n\n{markdown_table(COST_RATIO_HEAD, rows)}\n"

    def _redraw(self) -> None:
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)

    # -- keys ---------------------------------------------------------------------------------------
    def action_accelerator(self, step: int) -> None:
        if not self.presets:
            return
        i = self.presets.index(self.preset) if self.preset in self.presets else -1
        self.preset = self.presets[(i + step) % len(self.presets)]
        self.ridge_custom = None
        self._redraw()

    def action_custom_ridge(self) -> None:
        box = self.query_one("#ridge-input", Input)
        box.display = True
        box.focus()

    def action_leave_input(self) -> None:
        box = self.query_one("#ridge-input", Input)
        if box.has_focus:
            box.display = False
            self.query_one("#decide-table").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from specterm.core.cost_ratio import ridge_of

        try:
            self.ridge_custom = ridge_of(float(event.value)) if event.value.strip() else None
        except (SpectermError, ValueError) as exc:
            self.notify(str(exc) if isinstance(exc, SpectermError) else f"Type a ridge in FLOP/byte, e.g. {DEFAULT_RIDGE:g}.",
                        severity="error")
            return
        event.input.display = False
        self.query_one("#decide-table").focus()
        self._redraw()
