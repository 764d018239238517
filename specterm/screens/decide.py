"""Decide: per corpus, speculate or not and with which g, at the run's cost ratio r, with the
batch crossover B* = I*/(g+1) for a chosen accelerator preset or a custom ridge (the memory-bound
model: verify = one decode step). Below it, the decision on the hardware the run measured
(report decision_hw: S_hw, the refeed model, and predicted vs realized from `specterm confirm`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Input, Static

from specterm.core.errors import SpectermError
from specterm.core.hardware import MEMORY_BOUND_LABEL
from specterm.core.export import hardware_table, markdown_table, text_table
from specterm.core.text import printable
from specterm.core.params import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_RIDGE, R_GRID
from specterm.core.report import Report
from specterm.screens.base import ReportScreen, RStepping, r_bindings
from specterm.core.fmt import MISSING, fmt, is_num
from specterm.widgets.tables import fill_table, safe

COLUMNS = [("set", "corpus"), ("g_true", "g"), ("s_true", "speedup"), ("g_iid", "iid g"), ("s_iid", "iid promise"),
           ("s_fact", "iid in fact"), ("bstar", "stop above batch")]


def escape_md(text: str) -> str:
    return text.replace("*", "\\*")


def speed(x) -> str:
    return f"{x:.2f}x" if is_num(x) else MISSING


CARD_HEAD = ["set", "mem-bound", "S_hw", "refeed", "realized", "real/pred (refeed)", "CPU (real/pred)", "outputs"]


def hardware_card(report: Report) -> str:
    """The decision on this hardware as markup: the export table (memory-bound | S_hw | refeed model |
    realized | realized / predicted ...) without its verdict column, then one verdict line per set."""
    table = hardware_table(report)
    if table is None:
        return ""
    title, _, rows = table
    table_lines = text_table(CARD_HEAD, [r[:-1] for r in rows]).splitlines()
    lines = ["", f"[b]{safe(title)}[/]", *(safe(line) for line in table_lines), ""]
    lines += [f"[b]{safe(r[0])}[/]: {safe(r[-1])}" for r in rows]
    return "\n".join(lines)


def hardware_verdicts(report: Report) -> str:
    """One short line per set with the decision on this hardware (measured costs), first on screen so
    the answer a user acts on is never below the fold; '' when no set has measured costs."""
    lines = []
    for name, s in report.ordered_sets():
        hw = s.decision_hw
        if hw is None or not hw.measured:
            continue
        best = f"g = {fmt(hw.gamma_hw)}: {speed(hw.speedup_hw)}"
        text = f"speculate with {best}" if hw.speculate else f"do not speculate (best {best})"
        done = hw.confirmed_at(hw.gamma_hw) or (hw.confirmed[0] if hw.confirmed else None)
        if done is not None:
            text += f"; realized {speed(done.realized)} at g = {done.gamma}"
        lines.append(f"[b]{safe(name)}[/]: {safe(text)}")
    if not lines:
        return ""
    return "\n".join(["[b]On this hardware[/] (measured costs, S_hw; table below):"] + lines + [""])


class DecideScreen(RStepping, ReportScreen):
    SCREEN_TITLE = "Decide"
    EXPORT_NAME = "decide"
    EXPORT_SECTIONS = ("decide",)
    AUTO_FOCUS = "#decide-table"
    PAIR_STATE = ("r", "preset", "ridge_custom")

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
        self.decisions: dict = {}
        """Set name -> the Decision shown (at this screen's r and ridge); `e` exports exactly these."""
        self.refused: dict[str, str] = {}
        """Set name -> the sentence shown where no decision could be made."""

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
        from specterm.core.decide import decision

        if self.r is None:
            self.r = self.initial_r(report)
        rows, verdicts = [], []
        self.decisions = {}
        self.refused = {}
        for name, s in report.ordered_sets():
            try:
                d = decision(s, self.r, self.ridge)
            except SpectermError as exc:
                self.refused[name] = str(exc)
                rows.append((name, [name] + [MISSING] * 6))
                verdicts.append(f"[b]{safe(name)}[/]: {safe(exc)}")
                continue
            self.decisions[name] = d
            rows.append((name, [name, fmt(d.gamma_true), speed(d.speedup_true), fmt(d.gamma_iid),
                                speed(d.speedup_iid), speed(d.speedup_true_at_gamma_iid), fmt(d.batch_crossover, 0)]))
            verdicts.append(f"[b]{safe(name)}[/]: {safe(d.verdict)}")
        if self.ridge_custom is not None:
            acc = f"custom ridge I* = {self.ridge_custom:g} FLOP/byte"
        else:
            acc = f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte"
        measured = self.measured_r(report)
        if measured is not None and abs(self.r - measured) < 1e-12:
            r_text = f"r = [b]{self.r:.3f}[/] (measured costs)"
        else:
            r_text = f"r = [b]{self.r:.3f}[/] (chosen" + (f"; measured {measured:.3f})" if measured is not None else ")")
        r_text += f"   {MEMORY_BOUND_LABEL}"
        with self.app.batch_update():
            self.query_one("#accelerator", Static).update(
                f"{escape(acc)}   {r_text}"
            )
            fill_table(self.query_one("#decide-table", DataTable), COLUMNS, rows, width=self.avail_width)
            hw_lines = hardware_verdicts(report)
            self.query_one("#hw-verdicts", Static).update(hw_lines)
            if hw_lines:
                verdicts.insert(0, f"[b]{escape(MEMORY_BOUND_LABEL)}[/] (a GPU at small batch):")
            self.query_one("#verdicts", Static).update("\n".join(verdicts))
            self.query_one("#hw-card", Static).update(hardware_card(report))

    def setting_text(self) -> str:
        """The r and accelerator the shown decisions were made at, in words (no markup)."""
        report = self.sapp.report
        measured = self.measured_r(report) if report is not None else None
        r = self.r if self.r is not None else float("nan")
        which = "measured" if measured is not None and abs(r - measured) < 1e-12 else "chosen"
        if self.ridge_custom is not None:
            acc = f"custom ridge I* = {self.ridge_custom:g} FLOP/byte"
        else:
            acc = f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte"
        return f"at r = {r:.3f} ({which}) and {acc}"

    def export_markdown(self) -> str:
        """What `e` writes: export.decide_tables with the decisions shown here (this screen's r and
        one accelerator preset or ridge throughout, named in the title), under the context line;
        sets that could not be decided follow as a list, one item each."""
        from specterm.core.export import TITLES, decide_tables

        report = self.sapp.report
        if report is None:  # app.action_export checks this first
            return ""
        parts = [f"## {TITLES['decide']}", "", self.export_context()]
        for title, head, rows in decide_tables(report, decisions=self.decisions, setting=self.setting_text()):
            parts += ["", f"**{escape_md(title)}**", "", markdown_table(head, rows)]
        if self.refused:
            parts += ["", "Not decided:", ""] + [f"- **{escape_md(printable(k))}**: {escape_md(v)}" for k, v in self.refused.items()]
        return "\n".join(parts) + "\n"

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
        from specterm.core.decide import ridge_of

        try:
            self.ridge_custom = ridge_of(float(event.value)) if event.value.strip() else None
        except (SpectermError, ValueError) as exc:
            self.notify(str(exc) if isinstance(exc, SpectermError) else f"Type a ridge in FLOP/byte, e.g. {DEFAULT_RIDGE:g}.",
                        severity="error")
            return
        event.input.display = False
        self.query_one("#decide-table").focus()
        self._redraw()
