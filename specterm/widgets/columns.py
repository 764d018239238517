"""Column sizing for DataTables: a column is exactly as wide as its widest cell or its label, so a
number is never cut (DataTable grows columns on add_row but not on update_cell, and never shrinks).

Call `fit_columns(table)` after every change of a table's data (new rows, updated cells, another
model pair); `column_widths` is the pure part, over rows of cell values.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable


def cell_width(value: Any) -> int:
    """Cells a DataTable needs to show `value` whole: the widest of its lines (str() of non-text)."""
    text = value.plain if isinstance(value, Text) else str(value)
    return max((cell_len(line) for line in text.split("\n")), default=0)


def column_widths(labels: Sequence[Any], rows: Iterable[Sequence[Any]]) -> list[int]:
    """Per column: max(cell_width(label), cell_width(cell) for every row's cell in that column)."""
    widths = [cell_width(label) for label in labels]
    for row in rows:
        for j, value in enumerate(row[: len(widths)]):
            widths[j] = max(widths[j], cell_width(value))
    return widths


def fit_columns(table: DataTable[Any]) -> None:
    """Size every column of `table` to its widest cell or label, growing or shrinking it.

    Uses DataTable's own public path: re-setting the widest cell of each column with
    update_width=True makes the table re-measure that column (and the whole column when the widest
    cell is narrower than the current width), which also invalidates its render caches.
    """
    columns = table.ordered_columns
    if not columns or not table.row_count:
        return
    row_keys = [row.key for row in table.ordered_rows]
    for column in columns:
        values = list(table.get_column(column.key))
        widths = [cell_width(v) for v in values]
        widest = max(range(len(widths)), key=widths.__getitem__)
        if not column.auto_width and column.width < max(widths[widest], cell_width(column.label)):
            column.auto_width = True  # a fixed width narrower than a value would cut it
        table.update_cell(row_keys[widest], column.key, values[widest], update_width=True)


def table_width(labels: Sequence[Any], rows: Iterable[Sequence[Any]], padding: int = 1) -> int:
    """Cells a table needs to show every column whole: sum of column_widths + 2 padding each."""
    widths = column_widths(labels, rows)
    return sum(widths) + 2 * padding * len(widths)


def ci_below(cell: Any) -> Any:
    """'value [lo, hi]' with its CI moved to a second line ('value\\n[lo, hi]'), for narrow layouts;
    a cell without a bracket is returned as is."""
    if isinstance(cell, Text):
        return Text(ci_below(cell.plain), style=cell.style)
    text = str(cell)
    head, sep, tail = text.partition(" [")
    return f"{head}\n[{tail}" if sep else text


def fit_text(text: str, cells: int) -> str:
    """Free text shortened to `cells` terminal cells with a trailing ellipsis (unchanged when it fits)."""
    from rich.cells import set_cell_size

    if cell_len(text) <= cells:
        return text
    return set_cell_size(text, max(cells - 1, 1)) + "…"


MACHINE_SHORTER = (
    (r"\s*\((?:R|TM)\)", ""),                          # Intel(R) Xeon(R) -> Intel Xeon
    (r"\s+(?:Processor|CPU)\b", ""),                     # Intel Xeon Processor -> Intel Xeon
    (r"\b(torch|llama\.cpp) \d+(?:\.\d+)*", r"\1"),       # the engine's version
    (r" (\d+) threads?\b", r" \1t"),                      # 1 thread -> 1t
    (r",? ?\b(?:float32|float16|bfloat16|gguf)\b", ""),   # the dtype
    (r", (?:torch|llama\.cpp)$", ""),                     # the engine (the head line names it already)
)
"""How a machine label is shortened, step by step, until it fits: vendor marks, "Processor", the
engine's version, "thread" as "t", the dtype, the engine. The machine's name itself goes last (an
ellipsis)."""


def fit_machine(label: str, cells: int, suffix: str = "") -> str:
    """A machine label (a cost profile's "Intel Xeon Processor, 1 thread, torch 2.13 float32") within
    `cells` cells together with `suffix` (" (this machine)"), which is never cut: the label is
    shortened by MACHINE_SHORTER's steps, each applied in turn until it fits, then ends in an
    ellipsis; the suffix stays whole."""
    import re

    room = max(cells - cell_len(suffix), 1)
    text = label
    for pattern, repl in MACHINE_SHORTER:
        if cell_len(text) <= room:
            break
        text = re.sub(pattern, repl, text).strip().rstrip(",")
    return fit_text(text, room) + suffix


def names_give_way(labels: Sequence[Any], rows: list[tuple[str, list[Any]]], width: int,
                   least: int = 8) -> list[tuple[str, list[Any]]]:
    """Rows whose first cell (a corpus or prompt name: free text) is shortened with an ellipsis just
    enough for the table to fit in `width` cells (table_width), but not below `least` cells or the
    column's label; the numbers are never touched. Rows are returned as given when they fit."""
    need = table_width(labels, [cells for _, cells in rows])
    if need <= width or not rows:
        return rows
    first = column_widths(labels[:1], [cells[:1] for _, cells in rows])[0]
    room = max(first - (need - width), least, cell_width(labels[0]))
    out = []
    for key, cells in rows:
        name = cells[0]
        if isinstance(name, Text):
            name = Text(fit_text(name.plain, room), style=name.style)
        else:
            name = fit_text(str(name), room)
        out.append((key, [name, *cells[1:]]))
    return out
