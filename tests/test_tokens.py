"""widgets/tokens.py: the prompt above the continuation, prompt wrapping, and a cursor step that
redraws only the lines it touches (a long stream must not re-render per key press)."""

from __future__ import annotations

import numpy as np
import pytest
from textual.app import App, ComposeResult

from specterm.widgets.tokens import TokenView, wrap_prompt

pytestmark = pytest.mark.anyio


def test_wrap_prompt_keeps_breaks_and_indentation():
    assert wrap_prompt("def f(x):\n    return x + 1", 12) == ["def f(x):", "    return x", "+ 1"]
    assert wrap_prompt("abcdefghijk l", 5) == ["abcde", "fghij", "k l"]
    assert wrap_prompt("a b", 1) == ["a", "b"]
    assert wrap_prompt("", 8) == [""]
    assert wrap_prompt("x\tz\n\ny", 8) == ["x⇥z", "", "y"]


class CountingView(TokenView):
    def __init__(self) -> None:
        super().__init__()
        self.drawn: list[int] = []

    def render_line(self, y: int):
        self.drawn.append(self.scroll_offset.y + y)
        return super().render_line(y)


class ViewApp(App):
    def compose(self) -> ComposeResult:
        yield CountingView()


def plain_lines(view: TokenView, height: int) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(height)]


async def test_prompt_is_shown_above_the_continuation():
    app = ViewApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(CountingView)
        view.set_stream(["ab", "cd", "ef"], np.array([1, 0, 1], np.uint8), 3, prompt="Write a haiku")
        await pilot.pause()
        lines = plain_lines(view, 4)
        assert lines[0] == "Write a haiku"
        assert set(lines[1]) == {"─"}
        assert lines[2] == "abcdef"
        assert view.prompt_height == 2
        assert view.token_lines(1) == (2, 2)
        view.set_stream(["ab"], np.array([1], np.uint8), 1, prompt=None)
        await pilot.pause()
        assert " ".join(plain_lines(view, 2)) == TokenView.NO_PROMPT  # wrapped at 38 cells


async def test_a_step_redraws_only_the_cursor_lines():
    n = 4096
    labels = [f" w{i % 97}" for i in range(n)]
    app = ViewApp()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(CountingView)
        view.focus()
        view.set_stream(labels, np.ones(n, np.uint8), n, prompt="p")
        await pilot.pause()
        view.move_to(40)  # mid-view, so the next steps do not scroll
        await pilot.pause()
        before = view.scroll_offset
        for _ in range(3):
            view.drawn.clear()
            await pilot.press("right")
            await pilot.pause()
            assert view.scroll_offset == before
            lines = {view.token_lines(view.cursor - 1)[0], view.token_lines(view.cursor)[0]}
            assert set(view.drawn) <= lines and view.drawn, view.drawn


async def test_a_mid_stream_excluded_position_is_drawn_as_excluded():
    """A repaired stream's kept mask (gate failing at t = 1 only): t = 1 takes the excluded style, t = 2 its own."""
    app = ViewApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(CountingView)
        view.set_stream(["ab", "cd", "ef"], np.array([1, 1, 1], np.uint8), np.array([True, False, True]), cursor=0, prompt="p")
        await pilot.pause()
        segs = [seg for seg in view.render_line(2)._segments if seg.text]
        excluded = view.get_component_rich_style("token-view--excluded")
        accepted = view.get_component_rich_style("token-view--accepted")
        assert [seg.text for seg in segs[:3]] == ["ab", "cd", "ef"]
        assert segs[1].style == view.rich_style + excluded and segs[2].style == view.rich_style + accepted
