"""A virtual row list: a table of one-line rows with a row cursor that draws only the lines in view
(Textual's Line API), for lists as long as a run's prompts (20,000 and more).

DataTable measures and renders every row when its data changes (seconds for 20,000 rows); this list
holds its rows as tuples of cells (a str, or a Text for a styled cell), sizes each column to its
widest cell once per `set_rows` (cell_len over the strings: no renderable is built per row) and
draws a line from its cells when it is in view. It reads as the Streams list's DataTable did
(cursor_type "row", zebra stripes, the first column pinned, the row under the mouse highlighted:
DataTable's component classes and CSS, so the theme styles both alike) and keeps its keys (up /
down, page up / down, ctrl+home / ctrl+end, enter) and messages (RowHighlighted when the cursor row
changes, RowSelected on enter or a click on the cursor row). A column given a width narrower than its widest cell shows its cells cut with an
ellipsis (free text only: the caller decides which column may give way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from specterm.widgets.columns import fit_text

if TYPE_CHECKING:  # numpy is imported where it is used: every screen imports this module (base.py), and a
    import numpy as np  # warm open paints its report before numpy is imported (tests/test_app_start.py)

PAD = 1
"""Cells of padding on each side of a cell (DataTable's cell_padding)."""


def cell_text(cell: Any) -> str:
    """The characters a cell shows (a Text's plain text, else str())."""
    return cell.plain if isinstance(cell, Text) else str(cell)


def cell_style(cell: Any) -> Style:
    """A cell's own style (a Text's; none for a str)."""
    if not isinstance(cell, Text) or not cell.style:
        return Style()
    return cell.style if isinstance(cell.style, Style) else Style.parse(cell.style)


def text_width(text: str) -> int:
    """Terminal cells of one line of text: its length when it is printable ASCII (one cell a
    character, the common case, without a lookup), else rich's cell_len."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def cell_widths(rows: Sequence[Sequence[Any]], columns: int) -> np.ndarray:
    """text_width of every cell of `rows` (the first `columns` of each), as an int array (rows, columns):
    measured once, a column's width over any subset of the rows is a max over this array."""
    import numpy as np

    out = np.zeros((len(rows), columns), dtype=np.int64)
    for j in range(columns):
        out[:, j] = np.fromiter((text_width(c if type(c) is str else cell_text(c)) for c in (r[j] for r in rows)),
                                dtype=np.int64, count=len(rows))
    return out


def natural_widths(labels: Sequence[str], rows: Sequence[Sequence[Any]] | np.ndarray) -> list[int]:
    """Per column: the widest of its label and its cells in terminal cells (a column's width when
    nothing is cut): max(cell_len(label), max cell_len(cell) over the rows). `rows` may be the rows'
    cell_widths already."""
    import numpy as np

    measured = rows if isinstance(rows, np.ndarray) else cell_widths(rows, len(labels))
    widest = measured[:, : len(labels)].max(axis=0) if len(measured) else np.zeros(len(labels), np.int64)
    return [max(cell_len(label), int(w)) for label, w in zip(labels, widest)]


class RowList(ScrollView, can_focus=True):
    """Rows of cells under a header line, one line each, a row cursor, the first column pinned."""

    DEFAULT_CSS = """
    RowList {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .datatable--header {
                background-tint: $foreground 5%;
            }
            & > .datatable--fixed-cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }
        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }
        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .datatable--fixed {
            background: $secondary-muted;
            color: $foreground;
        }
        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
            color: $foreground;
        }
        & > .datatable--header-hover {
            background: $accent 30%;
        }
        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "datatable--cursor", "datatable--fixed", "datatable--fixed-cursor", "datatable--header",
        "datatable--odd-row", "datatable--even-row", "datatable--hover", "datatable--header-hover",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "first", "Top", show=False),
        Binding("ctrl+end", "last", "Bottom", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor moved to row `cursor_row` (key `key`)."""

        def __init__(self, row_list: RowList, cursor_row: int, key: str) -> None:
            super().__init__()
            self.row_list = row_list
            self.cursor_row = cursor_row
            self.key = key

        @property
        def control(self) -> RowList:
            return self.row_list

    class RowSelected(RowHighlighted):
        """Enter on the cursor row, or a click on it."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.labels: list[str] = []
        self.keys: list[str] = []
        self.rows: list[Sequence[Any]] = []
        self.widths: list[int] = []
        """Cells each column shows (padding aside)."""
        self.cursor_row = 0
        self.hover_row: int | None = None
        """The row under the mouse (-1: the header; None: none, or a key was pressed since)."""
        self.lines_drawn = 0
        """Rows drawn since the list was made (render_line calls below the header): what a test counts."""
        self._styles: dict[str, Style] = {}

    # -- data -------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def set_rows(self, labels: Sequence[str], keys: Sequence[str], rows: Sequence[Sequence[Any]],
                 widths: Sequence[int] | None = None) -> None:
        """Show `rows` (cells per column, `keys[i]` naming row i) under `labels`; each column as wide
        as `widths` says (default: natural_widths, nothing cut). The cursor stays on its row number
        (within the new rows); no message is posted (the caller knows what it showed)."""
        self.labels, self.keys, self.rows = list(labels), list(keys), list(rows)
        self.widths = list(widths) if widths is not None else natural_widths(self.labels, self.rows)
        self.cursor_row = min(max(self.cursor_row, 0), max(len(self.rows) - 1, 0))
        self.virtual_size = Size(self.table_width, len(self.rows) + 1)
        self.refresh()

    @property
    def table_width(self) -> int:
        """Cells of a line: every column and its padding."""
        return sum(w + 2 * PAD for w in self.widths)

    def shown_row(self, index: int) -> list[str]:
        """Row `index`'s cells as drawn (a cell wider than its column cut with an ellipsis)."""
        return [fit_text(cell_text(c), w) for c, w in zip(self.rows[index], self.widths)]

    # -- the cursor ------------------------------------------------------------------------------
    def set_hover(self, row: int | None) -> None:
        if row != self.hover_row:
            self.hover_row = row
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """The row under the mouse is highlighted (DataTable's hover cursor)."""
        offset = event.get_content_offset(self)
        row = None if offset is None else (-1 if offset.y == 0 else int(self.scroll_y) + offset.y - 1)
        self.set_hover(row if row is not None and row < len(self.rows) else None)

    def on_leave(self, _: events.Leave) -> None:
        self.set_hover(None)

    def move_cursor(self, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on `row` (clamped to the rows), scroll it into view, and post
        RowHighlighted when the row changes."""
        if not self.rows:
            return
        row = min(max(row, 0), len(self.rows) - 1)
        moved = row != self.cursor_row
        self.cursor_row = row
        if scroll:
            self.scroll_to_cursor(animate)
        if moved:
            self.refresh()
            self.post_message(self.RowHighlighted(self, row, self.keys[row]))

    def scroll_to_cursor(self, animate: bool = False) -> None:
        """Scroll the least that shows the cursor row below the header (after the first layout)."""
        height = self.scrollable_content_region.height - 1
        if height <= 0:  # not laid out yet: on_resize scrolls
            return
        top = int(self.scroll_y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=animate, force=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=animate, force=True)

    def on_resize(self, _: events.Resize) -> None:
        """A new size (the first layout too): the cursor row stays in view."""
        self.scroll_to_cursor()

    def action_cursor_up(self) -> None:
        self.set_hover(None)  # a key hides the hover highlight until the mouse moves
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.set_hover(None)
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.set_hover(None)
        page = max(self.scrollable_content_region.height - 1, 1)
        self.scroll_to(y=self.scroll_y - page, animate=False, force=True)
        self.move_cursor(self.cursor_row - page, scroll=False)
        self.scroll_to_cursor()

    def action_page_down(self) -> None:
        self.set_hover(None)
        page = max(self.scrollable_content_region.height - 1, 1)
        self.scroll_to(y=self.scroll_y + page, animate=False, force=True)
        self.move_cursor(self.cursor_row + page, scroll=False)
        self.scroll_to_cursor()

    def action_first(self) -> None:
        self.set_hover(None)
        self.move_cursor(0)

    def action_last(self) -> None:
        self.set_hover(None)
        self.move_cursor(len(self.rows) - 1)

    def action_select_cursor(self) -> None:
        if self.rows:
            self.post_message(self.RowSelected(self, self.cursor_row, self.keys[self.cursor_row]))

    def on_click(self, event: events.Click) -> None:
        """A click on a row moves the cursor there; a click on the cursor row selects it."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = int(self.scroll_y) + offset.y - 1
        if row >= len(self.rows):
            return
        event.stop()
        if row == self.cursor_row:
            self.action_select_cursor()
        else:
            self.move_cursor(row)

    # -- drawing ---------------------------------------------------------------------------------
    def render_lines(self, crop: Any) -> list[Strip]:
        get = self.get_component_styles
        self._styles = {name: get(name).rich_style for name in self.COMPONENT_CLASSES}
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = int(self.scroll_x), int(self.scroll_y)
        if y == 0:
            line = self._line(self.labels, None)
        else:
            row = scroll_y + y - 1
            if row >= len(self.rows):
                return Strip.blank(width, self.rich_style)
            self.lines_drawn += 1
            line = self._line(self.rows[row], row)
        fill_style = line[-1].style if line else self.rich_style
        return Strip(line).crop(scroll_x, scroll_x + width).extend_cell_length(width, fill_style).simplify() \
            if scroll_x else Strip(line).adjust_cell_length(width, fill_style).simplify()

    def _line(self, cells: Sequence[Any], row: int | None) -> list[Segment]:
        """The segments of one line (DataTable's styles: a cell's own style over its row's, the cursor's
        colour over both; the pinned first column styled as fixed), filled to the widget's width."""
        s = self._styles
        cursor = row is not None and row == self.cursor_row
        if row is None:
            base = fixed = s["datatable--header"]
        else:
            base = s["datatable--odd-row" if row % 2 else "datatable--even-row"]
            fixed = s["datatable--fixed"]
        lift = Style()  # the hover's style under the cursor's, as DataTable adds them
        if self.hover_row is not None and self.hover_row == (-1 if row is None else row):
            lift += s["datatable--hover"] + (s["datatable--header-hover"] if row is None else Style())
        if cursor:
            lift += s["datatable--cursor"]
        out: list[Segment] = []
        for j, (cell, w) in enumerate(zip(cells, self.widths)):
            comp = lift + s["datatable--fixed-cursor"] if cursor and j == 0 else lift
            pre = (fixed if j == 0 else base) + comp
            post = Style.from_color(color=comp.color) if comp.color is not None else Style()
            text = cell_text(cell)
            if cell_len(text) > w:
                text = fit_text(text, w)
            own = cell_style(cell)
            out.append(Segment(" " * PAD, pre + post))
            out.append(Segment(text, pre + own + post))
            out.append(Segment(" " * (w - cell_len(text) + PAD), pre + post))
        out.append(Segment(" " * max(self.scrollable_content_region.width - self.table_width, 0), base + lift))
        return out
