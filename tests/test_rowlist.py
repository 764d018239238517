"""The virtual row list (widgets/rowlist.py, issue 39): the Streams screen's prompt list draws only
the lines in view, whatever the number of prompts, and keeps DataTable's keys, messages and look."""

from __future__ import annotations

import numpy as np
import pytest
from app_fixture import fixture_streams, make_fixture_run
from rich.text import Text
from textual.app import App, ComposeResult

from specterm.app import make_app
from specterm.screens.streams import prompt_layout
from specterm.widgets.rowlist import RowList, cell_widths, natural_widths, text_width
from specterm.widgets.tokens import TokenView

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
LABELS = ["id", "value"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


class ListApp(App):
    def __init__(self, rows: int) -> None:
        super().__init__()
        self.n = rows
        self.seen: list[tuple[str, int, str]] = []

    def compose(self) -> ComposeResult:
        yield RowList(id="rows")

    def on_mount(self) -> None:
        rows = [(f"r{i}", f"{i * 7 % 1000:d}") for i in range(self.n)]
        self.query_one(RowList).set_rows(LABELS, [str(i) for i in range(self.n)], rows)
        self.query_one(RowList).focus()

    def on_row_list_row_highlighted(self, event: RowList.RowHighlighted) -> None:
        self.seen.append(("highlighted", event.cursor_row, event.key))

    def on_row_list_row_selected(self, event: RowList.RowSelected) -> None:
        self.seen.append(("selected", event.cursor_row, event.key))


# -- the pure parts ----------------------------------------------------------------------------------

def test_widths_are_the_widest_cell_or_label():
    rows = [("a", "12"), ("日本", Text("1234567", style="bold red")), ("x\x1b", "")]
    assert text_width("日本") == 4 and text_width("abc") == 3
    assert cell_widths(rows, 2).tolist() == [[1, 2], [4, 7], [1, 0]]  # ESC: no cell (rich's cell_len), not len's 2
    assert natural_widths(["prompt", "v"], rows) == [6, 7]
    assert natural_widths(["prompt", "v"], cell_widths(rows, 2)[[0]]) == [6, 2]  # a subset's widths
    assert natural_widths(["id", "v"], []) == [2, 1]


def test_prompt_layout_drops_corpus_then_gate_then_cuts_ids():
    widths = [20, 5, 3, 5, 6]  # id, alpha, n, gate (with its repair marks), corpus
    assert prompt_layout(widths, 49) == (5, widths)  # 39 cells + 2 padding each
    assert prompt_layout(widths, 48) == (4, widths[:4])
    # 4 columns need 41 cells: at 40 the id gives way (to 40 - 19 - 2), the gate and its repair marks stay
    assert prompt_layout(widths, 40) == (4, [19, 5, 3, 5])
    assert prompt_layout(widths, 31) == (4, [10, 5, 3, 5])  # MIN_ID
    # 3 columns need 34 cells: at 30 the id gets what alpha and n leave, less 2 (its padding)
    assert prompt_layout(widths, 30) == (3, [30 - (5 + 3 + 4) - 2, 5, 3])
    assert prompt_layout(widths, 10) == (3, [6, 5, 3])  # never below 6 cells


# -- the widget ----------------------------------------------------------------------------------------

async def test_keys_move_the_cursor_and_post_the_row():
    app = ListApp(100)
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one(RowList)
        await pilot.pause()
        page = rows.scrollable_content_region.height - 1  # lines below the header
        await pilot.press("down", "down")
        await pilot.pause()
        assert rows.cursor_row == 2 and app.seen[-2:] == [("highlighted", 1, "1"), ("highlighted", 2, "2")]
        await pilot.press("up")
        await pilot.press("pagedown")
        await pilot.pause()
        assert rows.cursor_row == 1 + page and int(rows.scroll_y) > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert rows.cursor_row == 1
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert rows.cursor_row == 99 and int(rows.scroll_y) == 100 - page  # the last row on the last line
        assert app.seen[-1] == ("highlighted", 99, "99")
        await pilot.press("down")  # at the end: no move, no message
        await pilot.pause()
        assert rows.cursor_row == 99 and app.seen[-1] == ("highlighted", 99, "99")
        await pilot.press("ctrl+home")
        await pilot.pause()
        assert rows.cursor_row == 0 and int(rows.scroll_y) == 0
        await pilot.press("enter")
        await pilot.pause()
        assert app.seen[-1] == ("selected", 0, "0")


async def test_a_click_selects_the_row_under_it():
    app = ListApp(30)
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one(RowList)
        await pilot.pause()
        await pilot.click(RowList, offset=(3, 4))  # line 4: the header, then rows 0..3
        await pilot.pause()
        assert rows.cursor_row == 3 and app.seen[-1] == ("highlighted", 3, "3")
        await pilot.click(RowList, offset=(3, 4))  # on the cursor row: selected
        await pilot.pause()
        assert app.seen[-1] == ("selected", 3, "3")
        await pilot.click(RowList, offset=(3, 0))  # the header: nothing
        await pilot.pause()
        assert rows.cursor_row == 3 and app.seen[-1] == ("selected", 3, "3")


async def test_twenty_thousand_rows_draw_only_the_lines_in_view():
    n = 20_000
    app = ListApp(n)
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one(RowList)
        await pilot.pause()
        height = rows.scrollable_content_region.height
        assert rows.row_count == n and rows.virtual_size.height == n + 1
        assert 0 < rows.lines_drawn <= 4 * height  # a few frames of the lines in view, not 20,000 rows
        drawn = rows.lines_drawn
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert rows.cursor_row == n - 1 and rows.lines_drawn - drawn <= 4 * height
        lines = [rows.render_line(y).text for y in range(height)]
        assert lines[0].split() == LABELS and lines[-1].split() == [f"r{n - 1}", str((n - 1) * 7 % 1000)]


async def test_zebra_stripes_cursor_and_pinned_column_are_styled_apart():
    app = ListApp(6)
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one(RowList)
        await pilot.pause()
        rows.render_lines(rows.region.reset_offset)  # the component styles of this frame

        def bg(y: int, x: int) -> object:
            return rows.render_line(y).crop(x, x + 1)._segments[0].style.bgcolor

        value = 1 + rows.widths[0] + 2  # a cell of the second column
        header, cursor, odd, even = bg(0, value), bg(1, value), bg(2, value), bg(3, value)
        assert len({header, cursor, odd, even}) == 4  # row 0 holds the cursor; rows 1 and 2 stripe apart
        assert bg(4, value) == odd and bg(3, 0) != even  # the pinned first column has its own style


# -- the Streams screen ----------------------------------------------------------------------------------

async def ready(app, pilot):
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_streams_cursor_keys_move_the_row_and_the_token_view_follows(tmp_path):
    streams = fixture_streams()
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        screen = app.screen
        rows = screen.query_one("#prompts", RowList)
        view = screen.query_one(TokenView)
        assert rows.labels == ["prompt", "alpha", "n", "gate", "corpus"]
        assert [rows.shown_row(i)[0] for i in range(rows.row_count)] == [s.id for s in streams]
        rows.focus()
        for expected in (1, 2, 3, 2):
            await pilot.press("down" if expected > rows.cursor_row else "up")
            await ready(app, pilot)
            s = streams[expected]
            assert rows.cursor_row == expected and screen.selected == expected
            assert view.n == s.n and np.array_equal(view._bits, s.bits)  # the token view shows that prompt
            assert f"/{s.id}" in str(screen.query_one("#stream-head").render())
        await pilot.press("c")  # the corpus filter: code first (sorted)
        await ready(app, pilot)
        code = [i for i, s in enumerate(streams) if s.corpus == "code"]
        assert rows.keys == [str(i) for i in code] and rows.cursor_row == 0
        assert screen.selected == code[0] and view.n == streams[code[0]].n
        await pilot.press("s")  # alpha ascending within the filter
        await ready(app, pilot)
        alphas = [streams[int(k)].a.mean() for k in rows.keys]
        assert sorted(int(k) for k in rows.keys) == code and alphas == sorted(alphas)
        assert rows.keys[rows.cursor_row] == str(screen.selected)  # the shown prompt keeps the cursor


async def test_streams_screen_of_thousands_of_prompts_draws_only_its_lines(tmp_path):
    from app_fixture import META
    from tui_checks import row_list_cuts

    from specterm.core.store import Stream, write_run

    rng = np.random.default_rng(3)
    n = 3000
    streams = [Stream(id=f"p{i}", corpus=("code", "prose")[i % 2], bits=(rng.random(12) < 0.7).astype(np.uint8))
               for i in range(n)]
    app = make_app([write_run(tmp_path / "many", {**META, "name": "many"}, streams)], **FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        rows = app.screen.query_one("#prompts", RowList)
        height = rows.scrollable_content_region.height
        assert rows.row_count == n and rows.shown_row(n - 1)[0] == f"p{n - 1}"
        assert 0 < rows.lines_drawn <= 4 * height  # not one line per prompt
        assert row_list_cuts(rows, visible=True) == []
        await pilot.press("c")  # code only: every other prompt
        await ready(app, pilot)
        assert rows.row_count == n // 2 and rows.keys[:3] == ["0", "2", "4"]
        assert rows.lines_drawn <= 8 * height


async def test_streams_list_vim_keys_and_y_copy_its_row(tmp_path):
    streams = fixture_streams()
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        screen = app.screen
        rows = screen.query_one("#prompts", RowList)
        rows.focus()
        await pilot.press("G")
        await ready(app, pilot)
        assert rows.cursor_row == len(streams) - 1 and screen.selected == len(streams) - 1
        await pilot.press("g", "j", "j", "k")
        await ready(app, pilot)
        assert rows.cursor_row == 1 and screen.selected == 1
        await pilot.press("y")
        await pilot.pause()
        head, rule, row = app.clipboard.strip().splitlines()
        s = streams[1]
        assert head == "| " + " | ".join(rows.labels) + " |" and rule.startswith("|---|")
        assert row.startswith(f"| {s.id} | {s.a.mean():.3f} | {s.n} |")


async def test_the_row_under_the_mouse_is_highlighted_until_a_key():
    app = ListApp(10)
    async with app.run_test(size=(40, 12)) as pilot:
        rows = app.query_one(RowList)
        await pilot.pause()
        value = 1 + rows.widths[0] + 2

        def bg(y: int) -> object:
            rows.render_lines(rows.region.reset_offset)
            return rows.render_line(y).crop(value, value + 1)._segments[0].style.bgcolor

        plain = bg(3)  # row 2
        await pilot.hover(RowList, offset=(value, 3))
        await pilot.pause()
        assert rows.hover_row == 2 and bg(3) != plain and bg(5) == plain  # row 4, the same stripe, is not
        await pilot.press("down")
        await pilot.pause()
        assert rows.hover_row is None and bg(3) == plain
