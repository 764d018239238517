"""The token stream view: a prompt (dimmed) above its continuation, one coloured cell run per token,
with a cursor.

Tokens are laid out whole (a line breaks between tokens, never inside one, unless a single token
is wider than the view), so the cursor's line is known exactly and kept in view. Only the lines in
view are drawn, and a cursor move redraws just the lines of the token it leaves and the one it
reaches (a full redraw only when the view scrolls).

At any length: a token's label is made when its line is drawn (`Labels`), and the layout is a few
arrays, not a list of lines: the view's lines as runs of "items" (a label's parts between its
newlines; a part wider than the view cut into view-wide pieces), whose starts numpy finds by the
greedy rule. A 5M-token stream holds no Python object per token, and a bits-only one (every label one
cell) is a grid: line k holds tokens k w .. (k + 1) w - 1.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from rich.cells import cell_len
from rich.segment import Segment
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

_CONTROL = {"\t": "⇥", "\r": "␍", "\x0b": "␋", "\x0c": "␌"}


def visible_piece(piece: str) -> str:
    """A token's text as shown: newlines become '↵' then a line break, other control characters a
    symbol, and an empty piece (a partial UTF-8 byte) a middle dot, so every token has a cell."""
    if piece == "":
        return "·"
    out = piece.replace("\n", "↵\n")
    for ch, sym in _CONTROL.items():
        out = out.replace(ch, sym)
    return "".join(c if c == "\n" or c.isprintable() else "�" for c in out)


# -- labels: what to draw per token, made when drawn ---------------------------------------------
class Labels(Protocol):
    """Token i's label (its visible text, '\n' where the view breaks the line) for i < len."""

    def __len__(self) -> int: ...

    def label(self, i: int) -> str: ...


class ListLabels:
    """Labels given as a list (a short stream, the tests)."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def label(self, i: int) -> str:
        return self.labels[i]


class BitLabels:
    """A run that kept no text: each token is drawn as its accept bit, '1' or '0' (one cell each)."""

    def __init__(self, bits: np.ndarray) -> None:
        self.bits = np.asarray(bits)

    def __len__(self) -> int:
        return int(self.bits.size)

    def label(self, i: int) -> str:
        return "1" if self.bits[i] else "0"


class PieceLabels:
    """The decoded pieces of y: token i is visible_piece(text[e_{i-1}:e_i]) (e = piece_ends, e_{-1} = 0)."""

    def __init__(self, text: str, piece_ends: np.ndarray) -> None:
        self.text = text
        self.ends = np.asarray(piece_ends)

    def __len__(self) -> int:
        return int(self.ends.size)

    def piece(self, i: int) -> str:
        return self.text[int(self.ends[i - 1]) if i > 0 else 0 : int(self.ends[i])]

    def label(self, i: int) -> str:
        return visible_piece(self.piece(i))


def stream_labels(text: str | None, piece_ends: np.ndarray | None, bits: np.ndarray) -> Labels:
    """What to draw per token: its decoded piece, or its accept bit ('1'/'0') when the run kept no text."""
    if text is not None and piece_ends is not None:
        return PieceLabels(text, piece_ends)
    return BitLabels(bits)


# -- items: each label's parts between its newlines, with their cells ------------------------------
@dataclass
class Items:
    """Item j is part `part[j]` (of the label split at '\n') of token `token[j]`, `width[j]` cells;
    items are in token order, then part order. token/part None: item j is token j, one part."""

    width: np.ndarray
    token: np.ndarray | None = None
    part: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.width.size)


def list_items(labels: Labels) -> Items:
    """Items of any labels, one label at a time (short streams)."""
    token, part, width = array("q"), array("q"), array("q")
    for i in range(len(labels)):
        for k, p in enumerate(labels.label(i).split("\n")):
            token.append(i)
            part.append(k)
            width.append(cell_len(p))
    return Items(np.frombuffer(width, dtype=np.int64), np.frombuffer(token, dtype=np.int64),
                 np.frombuffer(part, dtype=np.int64))


def _char_cells(code: int) -> int:
    ch = chr(code)
    return cell_len(ch if ch.isprintable() else "�")


def piece_items(text: str, piece_ends: np.ndarray) -> Items:
    """Items of PieceLabels(text, piece_ends) with numpy: the same as list_items, without a string per
    token. Token i holds the characters s_i = e_{i-1} .. e_i - 1; a newline at character c (of token
    k) starts an item at c + 1 (its '↵' ends the item before). Cells are summed per character: one
    for every ASCII character as shown (printable, a control symbol, '↵' or '�'), a table for the
    others; an empty piece is '·' (one cell); an item holding a zero-width joiner or a variation
    selector (which change the cells of the characters around them) is measured whole."""
    ends = np.asarray(piece_ends, dtype=np.int64)
    n = ends.size
    if n == 0:
        return Items(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    starts = np.concatenate(([0], ends[:-1]))
    cum: np.ndarray | None = None  # cells of characters 0..c-1 (None: one per character)
    if text.isascii():
        newlines = np.flatnonzero(np.frombuffer(text.encode("ascii"), dtype=np.uint8) == 10)
    else:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        newlines = np.flatnonzero(codes == 10)
        cells = np.ones(codes.size, dtype=np.int8)
        high = codes >= 128
        if high.any():
            uniq, inverse = np.unique(codes[high], return_inverse=True)
            cells[high] = np.array([_char_cells(int(c)) for c in uniq], dtype=np.int8)[inverse]
        cum = np.concatenate(([0], np.cumsum(cells, dtype=np.int64)))
    holder = np.searchsorted(ends, newlines, side="right")  # the token whose characters hold the newline
    count = 1 + np.bincount(holder, minlength=n)
    first = np.concatenate(([0], np.cumsum(count)))
    token = np.repeat(np.arange(n, dtype=np.int64), count)
    part = np.arange(int(first[-1]), dtype=np.int64) - first[token]
    cstart = np.empty(int(first[-1]), dtype=np.int64)
    cstart[first[:-1]] = starts
    cstart[part > 0] = newlines + 1
    cend = np.append(cstart[1:], ends[-1])
    width = cend - cstart if cum is None else cum[cend] - cum[cstart]
    width[first[:-1][starts == ends]] = 1  # an empty piece is drawn as '·'
    if cum is not None and ("\u200d" in text or "\ufe0f" in text):
        joined = np.flatnonzero((codes == 0x200D) | (codes == 0xFE0F))
        for j in np.unique(np.searchsorted(cstart, joined, side="right") - 1).tolist():
            label = visible_piece(text[starts[token[j]] : ends[token[j]]])
            width[j] = cell_len(label.split("\n")[part[j]])
    return Items(width, token, part)


def label_items(labels: Labels) -> Items:
    """The items of `labels`, by the cheapest exact route."""
    if isinstance(labels, BitLabels):
        return Items(np.ones(len(labels), dtype=np.int8))
    if isinstance(labels, PieceLabels):
        return piece_items(labels.text, labels.ends)
    return list_items(labels)


def split_wide(part: str, width: int) -> list[str]:
    """A part wider than the view, cut into view-wide pieces (the last may be narrower)."""
    pieces = []
    while cell_len(part) > width:
        head, part = _split_cells(part, width)
        pieces.append(head)
    pieces.append(part)
    return pieces


# -- layout: the lines, as runs of items ----------------------------------------------------------
@dataclass
class TokenLayout:
    """Line k of the continuation holds items starts[k] .. starts[k+1] - 1 (the last line: to the end).

    Item j is piece `sub[j]` (of a part wider than the view; None: no part is) of part `part[j]` of
    token `token[j]` (token/part None: item j is token j, whole)."""

    n: int
    starts: np.ndarray
    items: int
    cells: int
    """The view's width the lines were broken at."""
    token: np.ndarray | None = None
    part: np.ndarray | None = None
    sub: np.ndarray | None = None

    @property
    def lines(self) -> int:
        return max(int(self.starts.size), 1)

    def first_item(self, i: int) -> int:
        """The item where token i starts."""
        return i if self.token is None else int(np.searchsorted(self.token, i, side="left"))

    def line_of_item(self, j: int) -> int:
        return int(np.searchsorted(self.starts, j, side="right")) - 1

    def line_of(self, i: int) -> int:
        """The line where token i starts."""
        return self.line_of_item(self.first_item(i))

    def last_line_of(self, i: int) -> int:
        """The line where token i ends."""
        return self.line_of_item((self.first_item(i + 1) if i + 1 < self.n else self.items) - 1)

    def item_range(self, k: int) -> tuple[int, int]:
        """[first, end) items of line k (empty past the last line)."""
        if k >= self.starts.size:
            return self.items, self.items
        end = int(self.starts[k + 1]) if k + 1 < self.starts.size else self.items
        return int(self.starts[k]), end

    def line_items(self, k: int) -> list[tuple[int, int, int]]:
        """(token, part, piece) of each item of line k."""
        lo, hi = self.item_range(k)
        if self.token is None:
            return [(j, 0, 0) for j in range(lo, hi)]
        assert self.part is not None
        tokens, parts = self.token[lo:hi].tolist(), self.part[lo:hi].tolist()
        subs = self.sub[lo:hi].tolist() if self.sub is not None else [0] * (hi - lo)
        return list(zip(tokens, parts, subs))

    def item_text(self, labels: Labels, token: int, part: int, piece: int) -> str:
        """What an item draws: part `part` of the token's label, or piece `piece` of it when the part
        is wider than the view."""
        text = labels.label(token)
        if part or "\n" in text:
            text = text.split("\n")[part]
        if self.sub is not None and cell_len(text) > self.cells:
            text = split_wide(text, self.cells)[piece]
        return text

    def first_token_on(self, k: int) -> int | None:
        """The first token that starts on line k (None when every item there continues a token)."""
        return next((i for i, p, s in self.line_items(k) if p == 0 and s == 0), None)


def line_starts(width: np.ndarray, hard: np.ndarray, soft: np.ndarray, cells: int) -> np.ndarray:
    """The first item of each line by the greedy rule: an item goes on the current line when the line
    holds no cells yet or it still fits in `cells` (item widths summed); a `hard` item (the part after
    a newline, a second or later piece of a part cut to the view's width) always starts a line, a
    `soft` one (the first piece of such a part) whenever the line holds cells.

    With C_j the cells of items 0..j-1, a line starting at item s ends before the least of
    max(max{e : C_e - C_s <= cells}, min{e : C_e > C_s}), the next hard item after s, and the next
    soft item j after s if C_j > C_s; the starts are the chain from 0, followed in slices of items (bounded temporaries)."""
    m = int(width.size)
    if m == 0:
        return np.zeros(1, dtype=np.int64)
    cum = np.concatenate(([0], np.cumsum(width, dtype=np.int64)))
    hard, soft = np.flatnonzero(hard), np.flatnonzero(soft)
    out = array("q")
    j, step = 0, 1 << 20
    for lo in range(0, m, step):
        hi = min(lo + step, m)
        if j >= hi:
            continue
        idx = np.arange(lo, hi)
        # the last item that fits, but never a break before the line holds cells (a lone wide piece)
        nxt = np.maximum(np.searchsorted(cum, cum[lo:hi] + cells, side="right") - 1,
                         np.searchsorted(cum, cum[lo:hi], side="right"))
        if hard.size:
            nxt = np.minimum(nxt, np.append(hard, m)[np.searchsorted(hard, idx, side="right")])
        if soft.size:
            cut = np.append(soft, m)[np.searchsorted(soft, idx, side="right")]
            nxt = np.where(cum[cut] > cum[lo:hi], np.minimum(nxt, cut), nxt)
        table = nxt.tolist()
        while j < hi:
            out.append(j)
            j = table[j - lo]
    return np.frombuffer(out, dtype=np.int64)


def layout_items(items: Items, labels: Labels, cells: int) -> TokenLayout:
    """The layout of `items` (of `labels`) at `cells` per line."""
    cells = max(cells, 1)
    n = len(labels)
    if items.token is None or items.part is None:  # every label one cell: a grid
        return TokenLayout(n, np.arange(0, max(n, 1), cells, dtype=np.int64), n, cells)
    token, part, width = items.token, items.part, np.asarray(items.width, dtype=np.int64)
    hard = part > 0
    soft = np.zeros(0, dtype=bool)
    sub = None
    wide = np.flatnonzero(width > cells)
    if wide.size:  # rare: cut those parts into view-wide pieces, each starting a line
        pieces = [[cell_len(p) for p in split_wide(labels.label(int(token[j])).split("\n")[int(part[j])], cells)]
                  for j in wide.tolist()]
        count = np.ones(items.size, dtype=np.int64)
        count[wide] = [len(p) for p in pieces]
        first = np.concatenate(([0], np.cumsum(count)))
        token, part, hard = np.repeat(token, count), np.repeat(part, count), np.repeat(hard, count)
        sub = np.arange(int(first[-1]), dtype=np.int64) - np.repeat(first[:-1], count)
        width = np.repeat(width, count)
        for j, cut in zip(wide.tolist(), pieces):
            width[first[j] : first[j + 1]] = cut
        hard |= sub > 0
        soft = (sub == 0) & np.repeat(count > 1, count)
    return TokenLayout(n, line_starts(width, hard, soft, cells), int(width.size), cells, token, part, sub)


def wrap_prompt(text: str, width: int) -> list[str]:
    """The prompt's lines at `width` cells: its own line breaks and indentation kept, a long line
    broken at its last space that fits (the space dropped), a word wider than the view cut; tabs and
    other control characters shown as in `visible_piece`."""
    width = max(width, 1)
    out: list[str] = []
    for para in text.split("\n"):
        para = visible_piece(para) if para else ""
        while cell_len(para) > width:
            head, rest = _split_cells(para, width)
            cut = head.rfind(" ")
            if rest.startswith(" "):
                out.append(head)
                para = rest[1:]
            elif cut > 0:
                out.append(head[:cut])
                para = head[cut + 1 :] + rest
            else:
                out.append(head)
                para = rest
        out.append(para)
    return out


def _split_cells(text: str, cells: int) -> tuple[str, str]:
    cells = max(cells, 1)
    total = 0
    for j, ch in enumerate(text):
        total += cell_len(ch)
        if total > cells:
            return text[: max(j, 1)], text[max(j, 1) :]
    return text, ""


class TokenView(ScrollView, can_focus=True):
    """A stream's tokens coloured accepted / rejected / excluded (after a gate failure), with a cursor."""

    COMPONENT_CLASSES = {
        "token-view--accepted",
        "token-view--rejected",
        "token-view--excluded",
        "token-view--cursor",
        "token-view--prompt",
    }

    DEFAULT_CSS = """
    TokenView {
        scrollbar-gutter: stable;
        height: 1fr;
        & > .token-view--accepted { color: $text-success; }
        & > .token-view--rejected { color: $text-error; background: $error-muted; text-style: bold; }
        & > .token-view--excluded { color: $text-disabled; text-style: strike; }
        & > .token-view--cursor { text-style: reverse bold; }
        & > .token-view--prompt { color: $text-muted; text-style: italic; }
    }
    """

    BINDINGS = [
        Binding("left", "step(-1)", "token", show=False, id="token.prev", tooltip="Previous token"),
        Binding("right", "step(1)", "token", show=False, id="token.next", tooltip="Next token"),
        Binding("up", "line(-1)", "line up", show=False, id="token.up", tooltip="Token one line up"),
        Binding("down", "line(1)", "line down", show=False, id="token.down", tooltip="Token one line down"),
        Binding("home", "first", "first token", show=False, id="token.first"),
        Binding("end", "last", "last token", show=False, id="token.last"),
    ]

    cursor: reactive[int] = reactive(0, init=False, repaint=False)  # watch_cursor redraws what changed

    @dataclass
    class CursorMoved(Message):
        """The cursor is now on token `t`."""

        view: "TokenView"
        t: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TokenView.CursorMoved)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._labels: Labels = ListLabels([])
        self._items: Items | None = None
        """The labels' items, made at the first layout and kept for every width."""
        self._bits = np.zeros(0, dtype=np.uint8)
        self._kept = np.zeros(0, dtype=bool)
        self._layout = TokenLayout(0, np.zeros(1, dtype=np.int64), 0, 1)
        self._layout_width = -1
        self._prompt: str | None = None
        self._prompt_lines: list[str] = []

    # -- data -------------------------------------------------------------------------------
    NO_PROMPT = "(this run did not store the prompt text)"
    STAND_IN_WIDTH = 80  # cells: the layout of a stream set while the view has no width yet

    def set_stream(self, labels: Labels | Sequence[str], bits: np.ndarray, kept: np.ndarray | int, cursor: int = 0,
                   prompt: str | None = None) -> None:
        """Show a new stream (labels: token i drawn as labels.label(i), or labels[i] of a list) under
        its prompt (dimmed; a note when the run kept none) and put the cursor on token `cursor`.
        `kept`: the analysed positions (Stream.kept, a bool mask; an int k means t < k); the others are
        drawn as excluded."""
        self._prompt = prompt
        self._labels = ListLabels(labels) if isinstance(labels, Sequence) else labels
        self._items = None
        self._bits = np.asarray(bits)
        if isinstance(kept, (int, np.integer)):
            self._kept = np.zeros(self._bits.size, dtype=bool)
            self._kept[: int(kept)] = True
        else:
            self._kept = np.asarray(kept, dtype=bool)
        self._layout_width = -1
        self._relayout()
        self.set_reactive(TokenView.cursor, min(max(cursor, 0), max(self.n - 1, 0)))
        self.scroll_to(0, 0, animate=False)
        self._cursor_into_view()
        self.refresh()
        self.post_message(self.CursorMoved(self, self.cursor))

    @property
    def n(self) -> int:
        return len(self._labels)

    @property
    def labels(self) -> Labels:
        return self._labels

    @property
    def token_layout(self) -> TokenLayout:
        """The lines of the stream at the view's width (not `layout`: Widget's arrangement of children)."""
        return self._layout

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        if width == self._layout_width:
            return
        # Not shown yet (or hidden while another run is opened, `M`): lay the new stream out at a stand-in
        # width all the same, so the layout always belongs to the labels it draws; the first resize with
        # a real width lays it out again.
        self._layout_width = width if width > 0 else -1
        width = width if width > 0 else self.STAND_IN_WIDTH
        if self._items is None:
            self._items = label_items(self._labels)
        self._layout = layout_items(self._items, self._labels, width)
        prompt = wrap_prompt(self._prompt if self._prompt is not None else self.NO_PROMPT, width)
        self._prompt_lines = [*prompt, "─" * width]  # a rule between the prompt and the continuation
        self.virtual_size = Size(width, len(self._prompt_lines) + self._layout.lines)

    @property
    def prompt_height(self) -> int:
        """Lines above the continuation: the wrapped prompt and the rule under it."""
        return len(self._prompt_lines)

    def token_lines(self, i: int) -> tuple[int, int]:
        """(first, last) line of the view, prompt included, that token i is drawn on."""
        first, last = self._layout.line_of(i), self._layout.last_line_of(i)
        return first + self.prompt_height, max(first, last) + self.prompt_height

    def on_resize(self) -> None:
        self._relayout()
        self._cursor_into_view()
        self.refresh()

    # -- cursor -----------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        before = self.scroll_offset
        self._cursor_into_view()
        if self.scroll_offset != before or not self._layout.n:
            self.refresh()
        else:  # only the lines of the token left and the token reached change
            for i in {old, new}:
                if 0 <= i < self._layout.n:
                    first, last = self.token_lines(i)
                    self.refresh_lines(first, last - first + 1)
        self.post_message(self.CursorMoved(self, new))

    def move_to(self, t: int) -> None:
        if self.n:
            self.cursor = int(min(max(t, 0), self.n - 1))

    def action_step(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.n - 1)

    def action_line(self, delta: int) -> None:
        """Move to the first token that starts on the line `delta` lines away (past lines that only
        continue a wide token); to the first or last token when there is no such line."""
        if not self.n:
            return
        layout = self._layout
        k = layout.line_of(min(self.cursor, layout.n - 1)) + delta
        while 0 <= k < layout.lines:
            found = layout.first_token_on(k)
            if found is not None:
                self.move_to(found)
                return
            k += 1 if delta > 0 else -1
        self.move_to(self.n - 1 if delta > 0 else 0)

    def _cursor_into_view(self) -> None:
        if self.n and self._layout.n:
            first, _ = self.token_lines(min(self.cursor, self._layout.n - 1))
            # on the first line of the continuation, bring the prompt above it into view too
            top = 0 if first == self.prompt_height and first < self.scrollable_content_region.height else first
            self.scroll_to_region(Region(0, top, 1, first - top + 1), animate=False, x_axis=False, immediate=True)

    # -- drawing ----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_y = self.scroll_offset.y
        width = self.scrollable_content_region.width
        base = self.rich_style
        k = scroll_y + y
        if k < self.prompt_height:
            prompt = base + self.get_component_rich_style("token-view--prompt")
            return Strip([Segment(self._prompt_lines[k], prompt)]).extend_cell_length(width, base).crop(0, width)
        k -= self.prompt_height
        if k >= self._layout.lines:
            return Strip.blank(width, base)
        accepted = self.get_component_rich_style("token-view--accepted")
        rejected = self.get_component_rich_style("token-view--rejected")
        excluded = self.get_component_rich_style("token-view--excluded")
        cursor = self.get_component_rich_style("token-view--cursor")
        segments = []
        for i, part, piece in self._layout.line_items(k):
            text = self._layout.item_text(self._labels, i, part, piece)
            if not text:
                continue
            if not self._kept[i]:
                style = excluded
            elif self._bits[i]:
                style = accepted
            else:
                style = rejected
            if i == self.cursor:
                style = style + cursor
            segments.append(Segment(text, base + style))
        return Strip(segments).extend_cell_length(width, base).crop(0, width)
