"""Filling a DataTable in place (keyed rows, no flicker) and making user strings safe for it.
Numbers are formatted by core/report/fmt.py (MISSING "n/a" as in the exported tables; `fmt_ci` there is
fmt.est with the screens' choice: the value alone when its CI is undefined); markdown is
export.markdown_table."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from textual.widgets import DataTable

from rich.cells import cell_len
from rich.text import Text

from specterm.core.report.fmt import MISSING, est, fmt
from specterm.core.report.types import Estimate
from specterm.core.report.text import printable
from specterm.widgets.columns import ci_below, fit_columns, names_give_way


def fmt_ci(stat: Estimate | float | None, digits: int = 3, sign: bool = False) -> str:
    """An Estimate as 'value [lo, hi]' (fmt.est; the value alone when the CI is undefined); plain
    numbers as fmt."""
    if isinstance(stat, Estimate):
        return est(stat, digits, sign=sign, missing_ci="")
    return fmt(stat, digits, sign)


def fmt_duration(seconds: float | None) -> str:
    """Seconds as '1h02m', '3m05s' or '12s' (MISSING when unknown)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return MISSING
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def safe(text: Any) -> str:
    """A user string (corpus, id, run name, evidence) for markup: control characters made visible
    (core.text.printable), then every `[` escaped (markup.escape leaves `[31m` alone, which the
    parser still reads as a tag), so `[/]` or ESC shows as written."""
    return printable(str(text)).replace("[", "\\[")


def plain(value: Any) -> Any:
    """A cell as data, never markup: a str becomes Text with control characters made visible
    (a corpus named `[/]` or holding ESC shows as written); other renderables pass through."""
    if isinstance(value, str):
        return Text(printable(value, keep="\n"))
    if isinstance(value, Text):
        shown = printable(value.plain, keep="\n")
        return Text(shown, style=value.style) if value.plain != shown else value
    return value


def row_height(cells: Sequence[Any]) -> int:
    """Lines of the tallest cell (a CI on a second line makes a row two lines high)."""
    return max((len((c.plain if isinstance(c, Text) else str(c)).split("\n")) for c in cells), default=1)


def fill_table(table: DataTable[Any], columns: Sequence[tuple[str, str]], rows: Iterable[tuple[str, Sequence[Any]]],
               pinned: int = 1, width: int | None = None) -> None:
    """Make `table` show `rows` ((key, cells) pairs) under `columns` ((key, label) pairs), in place.

    Rows that keep their key (and height) are updated cell by cell (cursor and scroll stay put),
    new keys are added, vanished keys removed; the columns are rebuilt only when they change. Cells
    are data (plain(): never markup). The first `pinned` columns stay put when the table scrolls
    sideways, and every column is then sized to its widest value (fit_columns: nothing is cut).
    With `width` (the cells the table may use), a first column of names too long for it gives way
    (columns.names_give_way: an ellipsis on the name), so the numbers stay on screen.
    """
    cells_of: list[tuple[str, list[Any]]] = [(key, [plain(c) for c in cells]) for key, cells in rows]
    if width is not None:
        cells_of = names_give_way([label for _, label in columns], cells_of, width)
    rows = cells_of
    table.fixed_columns = pinned
    col_keys = [key for key, _ in columns]
    current = [str(c.key.value) for c in table.ordered_columns]
    labels = [str(c.label) for c in table.ordered_columns]
    if current != col_keys or labels != [label for _, label in columns]:
        table.clear(columns=True)
        for key, label in columns:
            table.add_column(Text(label), key=key)
    wanted = [key for key, _ in rows]
    have = [str(r.key.value) for r in table.ordered_rows]
    heights = [table.rows[r.key].height for r in table.ordered_rows] if have == wanted else []
    if have != wanted or heights != [row_height(cells) for _, cells in rows]:
        # The set, order or height of rows changed: rebuild them, keeping the cursor row where possible.
        cursor = table.cursor_row
        table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key, height=row_height(cells))
        if rows:
            table.move_cursor(row=min(max(cursor, 0), len(rows) - 1), animate=False)
    else:
        for key, cells in rows:
            for col, value in zip(col_keys, cells):
                if table.get_cell(key, col) != value:
                    table.update_cell(key, col, value)
    fit_columns(table)


def multiline_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """An aligned plain-text table whose cells may hold several lines ("1.04x\\n[0.95, 1.13]"): each
    row takes as many lines as its tallest cell, columns two spaces apart, a rule under the head."""
    cells = [[str(c).split("\n") for c in row] for row in [list(head), *rows]]
    widths = [max(cell_len(line) for row in cells for line in row[j]) for j in range(len(head))]
    out = []
    for i, row in enumerate(cells):
        for k in range(max(len(c) for c in row)):
            parts = [(c[k] if k < len(c) else "") for c in row]
            out.append("  ".join(p + " " * (w - cell_len(p)) for p, w in zip(parts, widths)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


NAME_LEAST = 8
"""Cells a name keeps at least when it gives way in fit_text_table."""


def fit_text_table(head: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """A core export table as plain lines that are never wider than `width` cells, so no line wraps
    mid row: the one-line table when it fits (a long first cell, a name, may give way with an
    ellipsis, down to NAME_LEAST cells); else each CI on a second line of its cell
    ("1.04x [0.95, 1.13]" over two lines, as the decision table does); else one block per row, its
    first cell then "column: value" lines (a record view, readable at any width)."""
    split_head = [h.replace(" [", "\n[") for h in head]
    split_rows = [[ci_below(c) for c in r] for r in rows]
    for h, rs in ((list(head), [list(r) for r in rows]), (split_head, split_rows)):
        lines = multiline_table(h, rs)
        excess = max(map(cell_len, lines), default=0) - width
        if excess <= 0:
            return lines
        first = max(cell_len(str(c)) for c in [h[0], *(r[0] for r in rs)])
        if rs and first - excess >= NAME_LEAST and cell_len(str(h[0])) <= first - excess:
            from specterm.widgets.columns import fit_text

            return multiline_table(h, [[fit_text(str(r[0]), first - excess), *r[1:]] for r in rs])
    out = []
    for row in rows:
        out.append(str(row[0]))
        out.extend(f"  {h}: {c}" for h, c in zip(head[1:], row[1:]))
    return out
