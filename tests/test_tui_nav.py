"""Navigation and export in the TUI (issue 11): `/` search with n / N, the `:` jump box, Enter on an
Overview/Decide row, vim keys, the breadcrumb, `8` when idle, help rows whole, export that never
overwrites and carries its context, and user strings that are markup or control characters."""

from __future__ import annotations

import pytest
from app_fixture import fixture_streams, make_fixture_run
from edge_runs import odd_names
from textual.widgets import DataTable, Static
from tui_checks import cut_cells

from specterm.app import make_app
from specterm.widgets.tokens import TokenView

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
NARROW = (80, 24)


async def ready(app, pilot):
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def text(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_search_then_n_and_N_cycle_the_matches(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        screen = app.screen
        ids = [s.id for s in fixture_streams()]
        # "c" matches the ids c0, c1, c2 first (ranked by id), then the prompts whose continuation
        # contains a "c" (the search covers the decoded y the screen shows), in list order
        by_text = {s.id for s in fixture_streams() if not s.id.startswith("c") and "c" in (s.text or "").casefold()}
        await pilot.press("slash", "c", "enter")
        await ready(app, pilot)
        shown = lambda: screen.streams[screen.selected].id
        found = [screen.streams[i].id for i in screen.matches]
        assert found[:3] == ["c0", "c1", "c2"] and set(found[3:]) == by_text and len(found) == 3 + len(by_text)
        assert shown() == "c0"
        await pilot.press("n")
        assert shown() == "c1"
        await pilot.press("N", "N")
        assert shown() == found[-1]  # wraps around
        # a prompt's text: every fixture prompt reads "prompt <id>"; "prompt p1" finds p1 only
        await pilot.press("slash", *"prompt p1", "enter")
        await ready(app, pilot)
        assert [screen.streams[i].id for i in screen.matches] == ["p1"] and shown() == "p1"
        assert set(ids) >= {screen.streams[i].id for i in screen.matches}


async def test_jump_box_moves_the_token_cursor(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        view = app.screen.query_one(TokenView)
        n = app.screen.streams[app.screen.selected].n  # p0: 64 positions
        await pilot.press("colon", "1", "7", "enter")
        assert view.cursor == 17
        await pilot.press("colon", "plus", "5", "enter")
        assert view.cursor == 22
        await pilot.press("colon", "dollar_sign", "enter")
        assert view.cursor == n - 1
        await pilot.press("colon", "5", "0", "percent_sign", "enter")
        assert view.cursor == (n - 1) // 2
        await pilot.press("colon", *"999", "enter")  # past the end: the cursor goes there, and a sentence says so
        await pilot.pause()
        assert view.cursor == n - 1 and "outside this stream" in list(app._notifications)[-1].message
        assert app._exception is None


async def test_enter_on_an_overview_row_opens_streams_for_that_corpus(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        table = app.screen.query_one("#overview-table", DataTable)
        table.focus()
        keys = [str(r.key.value) for r in table.ordered_rows]
        table.move_cursor(row=keys.index("prose"))
        await pilot.press("enter")
        await ready(app, pilot)
        screen = app.screen
        assert type(screen).__name__ == "StreamsScreen"
        assert screen.corpus_filter == "prose"
        assert {screen.streams[i].corpus for i in screen.shown} == {"prose"}
        # from Decide, the pooled row: every corpus again
        await pilot.press("6")
        await ready(app, pilot)
        table = app.screen.query_one("#decide-table", DataTable)
        table.focus()
        table.move_cursor(row=[str(r.key.value) for r in table.ordered_rows].index("pooled"))
        await pilot.press("enter")
        await ready(app, pilot)
        assert app.screen is screen and screen.corpus_filter is None and len(screen.shown) == 6


async def test_vim_keys_and_breadcrumb(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("5")
        await ready(app, pilot)
        table = app.screen.query_one("#policies-table", DataTable)
        assert app.focused is table
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0
        # the breadcrumb: pair · corpus · r (the fixture's measured r = 0.15); Decide's table does not
        # use r (issue 37): its crumb names the cost profile shown (the fixture has none)
        for key in "1234567":
            await pilot.press(key)
            await ready(app, pilot)
            crumb = text(app.screen, "#crumb")
            tail = "costs not measured" if key == "6" else "r = 0.150"
            assert " -> " in crumb and " · " in crumb and tail in crumb, (key, crumb)


async def test_8_when_idle_says_how_to_start_a_run(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("8")
        await pilot.pause()
        assert any(n.message == "no run in progress: start one with `specterm run`" for n in app._notifications)
        assert type(app.screen).__name__ == "OverviewScreen"


async def test_help_rows_are_whole_at_80_columns(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert [c for c in cut_cells(app) if c.screen == "HelpScreen"] == []
        table = app.screen.query_one("#help-table", DataTable)
        shown = " ".join(str(table.get_row_at(i)[1]).replace("\n", " ") for i in range(table.row_count))
        assert "Runs of different draft/target pairs or settings are analysed apart: show the next" in shown


async def test_export_never_overwrites_without_asking(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "specterm-scorecard-layers-1-target-torch.md"
    mine.write_text("mine\n")
    app = make_app([make_fixture_run(tmp_path / "runs")], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("7", "e")
        await pilot.pause()
        assert app.screen.query_one("#export-path").value == "specterm-scorecard-layers-1-target-torch-2.md"  # the first free name
        await pilot.press("enter")
        await pilot.pause()
        written = (tmp_path / "specterm-scorecard-layers-1-target-torch-2.md").read_text()
        assert mine.read_text() == "mine\n"
        # heading and context: run, pair, r
        assert written.startswith("## ") and "runs: tiny-run (torch, 6 prompts)" in written and " -> " in written and "r = 0.150" in written
        # a path that exists: the first Enter warns, the second overwrites
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#export-path").value = mine.name
        await pilot.press("enter")
        await pilot.pause()
        assert "exists" in text(app.screen, "#export-warning")
        assert mine.read_text() == "mine\n"
        await pilot.press("enter")
        await pilot.pause()
        assert mine.read_text() == written
        # Streams: the list as shown, under a heading with its context and filter
        await pilot.press("2", "c", "e")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        streams = (tmp_path / "specterm-streams-layers-1-target-torch.md").read_text()
        assert streams.startswith("## Streams: prompt list") and "runs: tiny-run (torch, 6 prompts)" in streams
        assert "corpus: code" in streams and "| c0 |" in streams and "| p0 |" not in streams


async def test_markup_and_control_characters_in_names_show_as_written(tmp_path):
    app = make_app(odd_names(tmp_path), **FAST)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(app, pilot)
        assert app.error is None
        cells = [str(c) for r in app.screen.query_one("#overview-table", DataTable).ordered_rows
                 for c in app.screen.query_one("#overview-table", DataTable).get_row(r.key)[:1]]
        assert "[/]" in cells and "co\\x1b[31mde\\x0d" in cells  # printable(): ESC, CR as escapes
        await pilot.press("4")
        await ready(app, pilot)
        assert "[/]" in text(app.screen, "#set-bar")
        await pilot.press("2")
        await ready(app, pilot)
        assert "[/]/[b]p0" in text(app.screen, "#stream-head")
        assert app._exception is None
