"""widgets/tokens.py at any length: the layout (numpy line starts, labels made when drawn) against
the greedy line breaking written as a plain loop, and a cursor deep in a long stream drawing the
right window of labels."""

from __future__ import annotations

import numpy as np
import pytest
from rich.cells import cell_len
from textual.app import App, ComposeResult

from specterm.widgets.tokens import (BitLabels, ListLabels, PieceLabels, TokenView, label_items, layout_items,
                                     visible_piece)

pytestmark = pytest.mark.anyio


def greedy_lines(labels: list[str], width: int) -> tuple[list[list[tuple[int, str]]], list[int]]:
    """The layout as a loop: tokens whole, a line broken between tokens when the next does not fit and
    at each newline of a label; a part wider than the view cut into view-wide pieces (at least one
    character each). Returns the lines as (token, text) and the line each token starts on."""
    lines: list[list[tuple[int, str]]] = [[]]
    first_line = []
    used = 0
    for i, label in enumerate(labels):
        for k, part in enumerate(label.split("\n")):
            if k > 0:
                lines.append([])
                used = 0
            w = cell_len(part)
            if used and used + w > width:
                lines.append([])
                used = 0
            if k == 0:
                first_line.append(len(lines) - 1)
            while w > width:
                cut, total = len(part), 0
                for j, ch in enumerate(part):
                    total += cell_len(ch)
                    if total > width:
                        cut = max(j, 1)
                        break
                lines[-1].append((i, part[:cut]))
                lines.append([])
                part = part[cut:]
                used, w = 0, cell_len(part)
            if part:
                lines[-1].append((i, part))
                used += w
    return lines, first_line


def drawn_lines(labels, layout) -> list[list[tuple[int, str]]]:
    out = []
    for k in range(layout.lines):
        row = [(i, layout.item_text(labels, i, p, s)) for i, p, s in layout.line_items(k)]
        out.append([(i, t) for i, t in row if t])
    return out


PIECES = ["a", "bc", " the", "\n", "x\n", "\n\ny", "", "\t", "漢字", "e\u0301", "longer-than-the-view-piece",
          "👩\u200d💻", "✌\ufe0f", "\x00", " ", "z" * 13]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("width", [1, 3, 7, 12])
def test_layout_matches_the_greedy_loop(seed, width):
    rng = np.random.default_rng(seed)
    pieces = [PIECES[j] for j in rng.integers(0, len(PIECES), 300)]
    if seed % 2:  # ASCII only: the vectorised route's one-cell-per-character branch
        pieces = [p for p in pieces if p.isascii()]
    labels = [visible_piece(p) for p in pieces]
    expected, first_line = greedy_lines(labels, width)
    text = "".join(pieces)
    ends = np.cumsum([len(p) for p in pieces]).astype(np.int32)
    for source in (ListLabels(labels), PieceLabels(text, ends)):
        layout = layout_items(label_items(source), source, width)
        assert layout.lines == len(expected)
        assert drawn_lines(source, layout) == expected
        assert [layout.line_of(i) for i in range(len(labels))] == first_line


def test_bits_are_a_grid():
    bits = np.array([1, 0, 1, 1, 0, 0, 1], np.uint8)
    layout = layout_items(label_items(BitLabels(bits)), BitLabels(bits), 3)
    assert layout.starts.tolist() == [0, 3, 6] and layout.lines == 3
    assert layout.line_of(4) == 1
    assert drawn_lines(BitLabels(bits), layout) == [[(0, "1"), (1, "0"), (2, "1")], [(3, "1"), (4, "0"), (5, "0")], [(6, "1")]]


class ViewApp(App):
    def compose(self) -> ComposeResult:
        yield TokenView()


def line_text(view: TokenView, y: int) -> str:
    return view.render_line(y).text


N_LONG = 1_000_000


async def test_a_cursor_deep_in_a_long_bit_stream_draws_its_window():
    """1M bits, a rejection at every t divisible by 7: the line holding t = 987,654 shows exactly the
    labels of its 60 positions, the cursor's cell reversed, and the layout holds arrays of lines, not
    a label per token."""
    t = 987_654
    bits = (np.arange(N_LONG) % 7 != 0).astype(np.uint8)
    app = ViewApp()
    async with app.run_test(size=(62, 12)) as pilot:  # 60 cells of tokens beside the scrollbar gutter
        view = app.query_one(TokenView)
        view.set_stream(BitLabels(bits), bits, N_LONG, prompt="p")
        await pilot.pause()
        width = view.scrollable_content_region.width
        view.move_to(t)
        await pilot.pause()
        assert view.token_layout.starts.size == -(-N_LONG // width)  # one start per line, not a label per token
        first, last = view.token_lines(t)
        assert first == last == view.prompt_height + t // width
        y = first - view.scroll_offset.y
        assert 0 <= y < view.size.height
        lo = t // width * width
        assert line_text(view, y) == "".join("0" if i % 7 == 0 else "1" for i in range(lo, lo + width))
        segments = list(view.render_line(y))
        cursor = segments[t - lo]
        assert cursor.text == ("0" if t % 7 == 0 else "1") and cursor.style.reverse
        assert not any(s.style.reverse for k, s in enumerate(segments[:width]) if k != t - lo)
        await pilot.press("end")
        assert view.cursor == N_LONG - 1
        await pilot.press("up")
        assert view.cursor == (N_LONG - 1) // width * width - width  # first token of the line above


async def test_a_cursor_deep_in_a_long_text_stream_draws_its_window():
    """200k pieces with newlines: the lines around a cursor at t = 150,001 are the greedy loop's."""
    rng = np.random.default_rng(3)
    vocab = [" the", " cat", "\n", "(x", "):", " return", "漢", ""]
    pieces = [vocab[j] for j in rng.integers(0, len(vocab), 200_000)]
    text, ends = "".join(pieces), np.cumsum([len(p) for p in pieces]).astype(np.int64)
    bits = (rng.random(len(pieces)) < 0.8).astype(np.uint8)
    t = 150_001
    app = ViewApp()
    async with app.run_test(size=(42, 12)) as pilot:
        view = app.query_one(TokenView)
        view.set_stream(PieceLabels(text, ends), bits, len(pieces), prompt=None)
        await pilot.pause()
        view.move_to(t)
        await pilot.pause()
        width = view.scrollable_content_region.width
        expected, first_line = greedy_lines([visible_piece(p) for p in pieces], width)
        first, _ = view.token_lines(t)
        assert first - view.prompt_height == first_line[t]
        for y in range(view.size.height):
            k = view.scroll_offset.y + y - view.prompt_height
            if 0 <= k < len(expected):
                assert line_text(view, y).rstrip() == "".join(s for _, s in expected[k]).rstrip()


async def test_a_stream_set_while_the_view_has_no_width_is_laid_out_for_its_own_labels():
    # `M` on the Streams screen sets the next run's stream while the view is hidden (width 0): the layout
    # must belong to the new labels, or drawing asks for part 1 of a label without a newline (IndexError)
    app = ViewApp()
    async with app.run_test(size=(40, 12)) as pilot:
        view = app.query_one(TokenView)
        view.set_stream(["a\nb", "c\nd\ne", "f"], np.array([1, 0, 1], dtype=np.uint8), 3)
        await pilot.pause()
        view.display = False
        await pilot.pause()
        assert view.scrollable_content_region.width == 0
        view.set_stream(["x", "y"], np.array([1, 1], dtype=np.uint8), 2)
        layout = view.token_layout
        drawn = [layout.item_text(view.labels, i, part, piece)
                 for k in range(layout.lines) for i, part, piece in layout.line_items(k)]
        assert "".join(drawn) == "xy" and view.n == 2
        view.display = True
        await pilot.pause()
        assert view.render_line(view.prompt_height).text.startswith("xy")
