"""Checks over a running app (use inside `app.run_test()`, after a pause): every DataTable cell
shown whole.

`cut_cells(app)` lists every cell, on every screen the app has mounted, that is shown cut: its
column is narrower than the value (DataTable cuts it silently: `1` for 15), or the column is only
partly inside the table's visible width (`12` for 128 at the edge of a narrow pane). A column
scrolled wholly out of view is not a cut (the scrollbar says there is more). A test asserts the
list is empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from textual.app import App
from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable, Static

from specterm import compat_textual
from specterm.widgets.columns import cell_width
from specterm.widgets.rowlist import RowList, cell_text


@dataclass(frozen=True)
class CutCell:
    screen: str
    table: str
    column: str
    row: str
    value: str
    needs: int
    has: int

    def __str__(self) -> str:
        return (f"{self.screen} #{self.table} column {self.column!r} row {self.row!r}: "
                f"{self.value!r} needs {self.needs} cells, the column has {self.has}")


def column_content_width(table: DataTable, column) -> int:
    """Cells a column shows per value (its render width less the padding on both sides)."""
    return column.get_render_width(table) - 2 * table.cell_padding


def cut_cells_in(table: DataTable, screen_name: str = "") -> list[CutCell]:
    out = []
    for column in table.ordered_columns:
        has = column_content_width(table, column)
        label_needs = cell_width(column.label)
        if label_needs > has:
            out.append(CutCell(screen_name, table.id or "?", str(column.label), "(label)", str(column.label), label_needs, has))
        for row in table.ordered_rows:
            value = table.get_cell(row.key, column.key)
            needs = cell_width(value)
            if needs > has:
                out.append(CutCell(screen_name, table.id or "?", str(column.label), str(row.key.value),
                                   str(value), needs, has))
    return out


def clipped_columns(table: DataTable, screen_name: str = "") -> list[CutCell]:
    """Columns that straddle an edge of the table's visible width at its current horizontal scroll:
    part of every value is shown and the rest is cut without a sign. Fixed columns stay at the left;
    the others scroll by scroll_x behind them."""
    visible = table.scrollable_content_region.width
    if visible <= 0:
        return []
    out = []
    x = 0
    fixed_width = sum(c.get_render_width(table) for c in table.ordered_columns[: table.fixed_columns])
    pad = table.cell_padding
    for j, column in enumerate(table.ordered_columns):
        width = column.get_render_width(table)
        left = x if j < table.fixed_columns else x - int(table.scroll_x)
        low = 0 if j < table.fixed_columns else fixed_width
        content = width - 2 * pad
        shown = max(0, min(left + pad + content, visible) - max(left + pad, low))  # padding aside
        if 0 < shown < content:
            values = [table.get_cell(r.key, column.key) for r in table.ordered_rows]
            widest = max(values, key=cell_width, default=column.label)
            out.append(CutCell(screen_name, table.id or "?", str(column.label), "(column at the edge)",
                               str(widest), content, shown))
        x += width
    return out


def overflowing(table: DataTable) -> list[str]:
    """Labels of the columns that lie (wholly or partly) beyond the table's visible width: numbers
    the person cannot see without scrolling sideways (empty when the whole table fits)."""
    visible = table.scrollable_content_region.width
    if visible <= 0:
        return []
    out, x = [], 0
    for column in table.ordered_columns:
        x += column.get_render_width(table)
        if x > visible:
            out.append(str(column.label))
    return out


FIT_AT_80 = {"overview-table", "decide-table", "runlengths-table"}
"""Tables whose every column must be on screen at 80 columns (issue 20: a long corpus name gives way)."""


def all_screens(app: App) -> list:
    """Every screen the app holds: the stacks of all modes (mounted lazily) and installed screens."""
    seen, out = set(), []
    stacks = compat_textual.screen_stacks(app)
    for stack in stacks.values():
        for screen in stack:
            if id(screen) not in seen:
                seen.add(id(screen))
                out.append(screen)
    if id(app.screen) not in seen:
        out.append(app.screen)
    return out


def row_list_cuts(table: RowList, screen_name: str = "", visible: bool = False) -> list[CutCell]:
    """A RowList's cut cells: a cell wider than its column in any column but the first (the first, a
    name, gives way with an ellipsis by design), a label wider than its column, and with `visible`, a
    column partly beyond the list's visible width."""
    out = []
    for j, (label, has) in enumerate(zip(table.labels, table.widths)):
        if cell_width(label) > has:
            out.append(CutCell(screen_name, table.id or "?", label, "(label)", label, cell_width(label), has))
        if j == 0:
            continue
        for key, row in zip(table.keys, table.rows):
            needs = cell_width(cell_text(row[j]))
            if needs > has:
                out.append(CutCell(screen_name, table.id or "?", label, key, cell_text(row[j]), needs, has))
    width = table.scrollable_content_region.width
    if visible and width > 0:
        left = -int(table.scroll_x)
        for label, has in zip(table.labels, table.widths):
            shown = max(0, min(left + 1 + has, width) - max(left + 1, 0))
            if 0 < shown < has:
                out.append(CutCell(screen_name, table.id or "?", label, "(column at the edge)", label, has, shown))
            left += has + 2
    return out


def cut_cells(app: App) -> list[CutCell]:
    """Every cut cell in every DataTable and RowList of every screen the app has mounted (columns clipped at the
    visible edge only on the screen shown: the others are not laid out at the current size)."""
    out = []
    for screen in all_screens(app):
        for table in screen.query(DataTable):
            out.extend(cut_cells_in(table, type(screen).__name__))
            if screen is app.screen and table.display:
                out.extend(clipped_columns(table, type(screen).__name__))
        for rows in screen.query(RowList):
            out.extend(row_list_cuts(rows, type(screen).__name__, screen is app.screen and rows.display))
    return out


def static_text(widget: Static) -> str:
    """A Static's text without markup."""
    return Text.from_markup(str(widget.content)).plain if isinstance(widget.content, str) else str(widget.render())


RULE = re.compile(r"^-+(  -+)*$")


def table_lines(text: str) -> list[str]:
    """The lines of the aligned text tables in `text`: the head line above each rule ("----  --"),
    the rule, and the lines below it up to a blank line."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if RULE.match(line.strip()) and i > 0:
            out += [lines[i - 1], line]
            for row in lines[i + 1:]:
                if not row.strip():
                    break
                out.append(row)
    return out


def wrapped_table_lines(screen) -> list[str]:
    """Lines of the screen's text tables wider than the Static that shows them: such a line wraps
    mid row."""
    out = []
    for w in screen.query(Static):
        width = w.content_region.width
        if not w.display or width <= 0:
            continue
        out += [f"#{w.id}: {line}" for line in table_lines(static_text(w)) if cell_len(line) > width]
    return out


def head_mismatch(app: App) -> str | None:
    """The head line of a report screen (issue 37) against the app's state: it must name the run
    group k/n, the engine and whose costs ("costs", or the machine's "(this machine)" / "(other machine)"),
    within the screen's width. None when it does
    (or the screen has no head line, or is loading)."""
    screen = app.screen
    if not screen.query("#head") or screen.query_one("#body").loading:
        return None
    head = static_text(screen.query_one("#head", Static))
    which = f"run {app.pair_key + 1}/{app.n_model_groups}"
    report = app.report
    engines = [r.engine for r in report.runs if r.engine] if report is not None else []
    engine = "+".join(dict.fromkeys(engines)) if engines else None
    # whose costs: "costs ..." or, where "costs: " gave way at 80 columns, the machine's whole suffix (issue 53)
    whose = "costs" in head or head.endswith(("(this machine)", "(other machine)"))
    if which not in head or not whose or (engine is not None and f" · {engine}" not in head):
        return f"{type(screen).__name__}: head {head!r} lacks {which!r}, engine {engine!r} or the costs"
    if cell_len(head) > screen.size.width - 2:
        return f"{type(screen).__name__}: head {head!r} is wider than the screen"
    return None
