"""The token stream view: a prompt (dimmed) above its continuation, one coloured cell run per token,
with a cursor.

Tokens are laid out whole (a line breaks between tokens, never inside one, unless a single token
is wider than the view), so the cursor's line is known exactly and kept in view. Only the lines in
view are drawn, and a cursor move redraws just the lines of the token it leaves and the one it
reaches (a full redraw only when the view scrolls).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def token_labels(pieces: list[str] | None, bits: np.ndarray) -> list[str]:
    """What to draw per token: its decoded piece, or its accept bit ('1'/'0') when the run kept no text."""
    if pieces is not None:
        return [visible_piece(p) for p in pieces]
    return list(np.where(np.asarray(bits) == 1, "1", "0"))


@dataclass
class TokenLayout:
    """lines[k] = [(token index, text), ...]; line_of[i] = the line where token i starts."""

    lines: list[list[tuple[int, str]]]
    line_of: np.ndarray


def layout_tokens(labels: list[str], width: int) -> TokenLayout:
    """Wrap tokens into lines of at most `width` cells, breaking between tokens and at newlines."""
    width = max(width, 1)
    lines: list[list[tuple[int, str]]] = [[]]
    used = 0
    line_of = np.zeros(len(labels), dtype=np.int64)
    for i, label in enumerate(labels):
        parts = label.split("\n")
        for k, part in enumerate(parts):
            if k > 0:  # the label held a newline: the rest starts a fresh line
                lines.append([])
                used = 0
            w = cell_len(part)
            if used and used + w > width:
                lines.append([])
                used = 0
            while w > width:  # a token wider than the view is cut into view-wide pieces
                head, part = _split_cells(part, width - used)
                lines[-1].append((i, head))
                lines.append([])
                used, w = 0, cell_len(part)
            if k == 0:
                line_of[i] = len(lines) - 1
            if part:
                lines[-1].append((i, part))
                used += w
    return TokenLayout(lines=lines, line_of=line_of)


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
        self._labels: list[str] = []
        self._bits = np.zeros(0, dtype=np.uint8)
        self._kept = np.zeros(0, dtype=bool)
        self._layout = TokenLayout(lines=[], line_of=np.zeros(0, dtype=np.int64))
        self._layout_width = -1
        self._prompt: str | None = None
        self._prompt_lines: list[str] = []

    # -- data -------------------------------------------------------------------------------
    NO_PROMPT = "(this run did not store the prompt text)"

    def set_stream(self, labels: list[str], bits: np.ndarray, kept: np.ndarray | int, cursor: int = 0,
                   prompt: str | None = None) -> None:
        """Show a new stream (labels[i] drawn for token i) under its prompt (dimmed; a note when the
        run kept none) and put the cursor on token `cursor`. `kept`: the analysed positions (Stream.kept,
        a bool mask; an int k means t < k); the others are drawn as excluded."""
        self._prompt = prompt
        self._labels = labels
        self._bits = np.asarray(bits)
        self._kept = np.arange(self._bits.size) < kept if isinstance(kept, (int, np.integer)) else np.asarray(kept, dtype=bool)
        self._layout_width = -1
        self._relayout()
        self.set_reactive(TokenView.cursor, min(max(cursor, 0), max(len(labels) - 1, 0)))
        self.scroll_to(0, 0, animate=False)
        self._cursor_into_view()
        self.refresh()
        self.post_message(self.CursorMoved(self, self.cursor))

    @property
    def n(self) -> int:
        return len(self._labels)

    def _relayout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width
        if width <= 0 or width == self._layout_width:
            return
        self._layout_width = width
        self._layout = layout_tokens(self._labels, width)
        prompt = wrap_prompt(self._prompt if self._prompt is not None else self.NO_PROMPT, width)
        self._prompt_lines = [*prompt, "─" * width]  # a rule between the prompt and the continuation
        self.virtual_size = Size(width, len(self._prompt_lines) + len(self._layout.lines))

    @property
    def prompt_height(self) -> int:
        """Lines above the continuation: the wrapped prompt and the rule under it."""
        return len(self._prompt_lines)

    def token_lines(self, i: int) -> tuple[int, int]:
        """(first, last) line of the view, prompt included, that token i is drawn on."""
        line_of = self._layout.line_of
        first = int(line_of[i])
        last = int(line_of[i + 1]) if i + 1 < line_of.size else len(self._layout.lines) - 1
        return first + self.prompt_height, max(first, last) + self.prompt_height

    def on_resize(self) -> None:
        self._relayout()
        self._cursor_into_view()
        self.refresh()

    # -- cursor -----------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        before = self.scroll_offset
        self._cursor_into_view()
        if self.scroll_offset != before or not self._layout.line_of.size:
            self.refresh()
        else:  # only the lines of the token left and the token reached change
            for i in {old, new}:
                if 0 <= i < self._layout.line_of.size:
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
        """Move to the first token that starts on the line `delta` lines away."""
        if not self.n:
            return
        target = int(self._layout.line_of[self.cursor]) + delta
        found = np.flatnonzero(self._layout.line_of == target)
        if found.size:
            self.move_to(int(found[0]))
        elif delta > 0:
            self.move_to(self.n - 1)
        else:
            self.move_to(0)

    def _cursor_into_view(self) -> None:
        if self.n and self._layout.line_of.size:
            first, _ = self.token_lines(min(self.cursor, self.n - 1))
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
        if k >= len(self._layout.lines):
            return Strip.blank(width, base)
        accepted = self.get_component_rich_style("token-view--accepted")
        rejected = self.get_component_rich_style("token-view--rejected")
        excluded = self.get_component_rich_style("token-view--excluded")
        cursor = self.get_component_rich_style("token-view--cursor")
        segments = []
        for i, text in self._layout.lines[k]:
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
