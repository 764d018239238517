"""Formatting report values for tables, and filling a DataTable in place (keyed rows, no flicker).
A missing value is spelled MISSING ("n/a", core/export.py) here as in the exported tables; markdown
is export.markdown_table."""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from textual.widgets import DataTable

from specterm.core.export import MISSING
from specterm.core.report import Estimate


def is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def fmt_num(x: Any, digits: int = 3, sign: bool = False) -> str:
    """A number with `digits` decimals (MISSING, "n/a", when missing or not finite)."""
    if not is_num(x):
        return MISSING if x is None or isinstance(x, float) else str(x)
    if isinstance(x, int):
        return f"{x:+d}" if sign else f"{x:d}"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def fmt_ci(stat: Estimate | float | None, digits: int = 3, sign: bool = False) -> str:
    """An Estimate as 'value [lo, hi]' (the SPEC's bracket style; the value alone when the CI is
    undefined); plain numbers pass to fmt_num."""
    if isinstance(stat, Estimate):
        value = fmt_num(stat.value, digits, sign)
        ci = stat.ci
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(is_num(c) for c in ci):
            return f"{value} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
        return value
    return fmt_num(stat, digits, sign)


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


def fill_table(table: DataTable, columns: Sequence[tuple[str, str]], rows: Iterable[tuple[str, Sequence[Any]]]) -> None:
    """Make `table` show `rows` ((key, cells) pairs) under `columns` ((key, label) pairs), in place.

    Rows that keep their key are updated cell by cell (cursor and scroll stay put), new keys are
    added, vanished keys removed; the columns are rebuilt only when they change.
    """
    rows = list(rows)
    col_keys = [key for key, _ in columns]
    current = [str(c.key.value) for c in table.ordered_columns]
    labels = [str(c.label) for c in table.ordered_columns]
    if current != col_keys or labels != [label for _, label in columns]:
        table.clear(columns=True)
        for key, label in columns:
            table.add_column(label, key=key)
    wanted = [key for key, _ in rows]
    have = [str(r.key.value) for r in table.ordered_rows]
    if have != wanted:
        # The set or order of rows changed: rebuild them, keeping the cursor row where possible.
        cursor = table.cursor_row
        table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key)
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
        return
    for key, cells in rows:
        for col, value in zip(col_keys, cells):
            if table.get_cell(key, col) != value:
                table.update_cell(key, col, value)
