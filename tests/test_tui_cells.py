"""No number shown cut (issue 11): the column sizing helper, and the three cuts the issue names on
the shipped runs (Decide's g at the lowest r, the Overview after `M`, the Streams list's n).

Each of these failed on the app before issue 11's fix (phase 1 kept them as strict xfails); the r
leak test failed too. test_tui_keys.py scans every screen after every key.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable
from tui_checks import cut_cells, cut_cells_in

from specterm.app import make_app
from specterm.widgets.columns import cell_width, column_widths, fit_columns

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
SHIPPED = Path(__file__).resolve().parents[1] / "streams"


# -- the helper --------------------------------------------------------------------------------

def test_cell_width_and_column_widths():
    assert cell_width("0.668") == 5
    assert cell_width(Text("0.094 [-0.15, -0.04]")) == 20
    assert cell_width(128) == 3
    assert cell_width("a\nlonger") == 6
    assert cell_width("日本") == 4  # wide characters take two cells
    assert column_widths(["g", "alpha"], [["1", "0.5"], ["15", "0.668"], ["3", "-"]]) == [2, 5]
    assert column_widths(["corpus"], []) == [6]


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield DataTable(id="t")


async def test_fit_columns_grows_and_shrinks_to_the_widest_cell():
    app = TableApp()
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one(DataTable)
        table.add_column("g", key="g")
        table.add_column("CI", key="ci")
        table.add_row("1", "[0.1, 0.2]", key="code")
        table.add_row("2", "[0.1, 0.3]", key="math")
        await pilot.pause()
        assert cut_cells_in(table) == []
        # DataTable's update_cell keeps the old width: the value is shown cut, and the scan says so
        table.update_cell("code", "g", "15")
        table.update_cell("math", "ci", "[-0.15, -0.04]")
        await pilot.pause()
        assert {(c.column, c.value) for c in cut_cells_in(table)} == {("g", "15"), ("CI", "[-0.15, -0.04]")}
        fit_columns(table)
        await pilot.pause()
        assert cut_cells_in(table) == []
        assert [c.get_render_width(table) - 2 * table.cell_padding for c in table.ordered_columns] == [2, 14]
        # narrower data: the columns shrink back to the widest cell (the label "CI" is 2)
        table.update_cell("code", "g", "3")
        table.update_cell("math", "ci", "[0, 1]")
        table.update_cell("code", "ci", "[0, 2]")
        fit_columns(table)
        await pilot.pause()
        assert [c.get_render_width(table) - 2 * table.cell_padding for c in table.ordered_columns] == [1, 6]


# -- the cuts issue 11 names, one test each (the full scan is in test_tui_keys.py) ------------------

def shipped() -> list[Path]:
    return sorted(p for p in SHIPPED.iterdir() if (p / "run.json").is_file())


async def settle(app, pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def cuts_after(keys: list[str], size: tuple[int, int], screen: str) -> list[str]:
    app = make_app(shipped(), **FAST)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        for key in keys:
            await pilot.press(key)
            await settle(app, pilot)
        return [str(c) for c in cut_cells(app) if c.screen == screen]


async def test_decide_g_whole_at_the_lowest_r():
    assert await cuts_after(["6", *["minus"] * 12], (160, 45), "DecideScreen") == []


async def test_overview_whole_after_next_model_pair():
    assert await cuts_after(["M", "1"], (160, 45), "OverviewScreen") == []


async def test_streams_list_whole():
    assert await cuts_after(["2"], (160, 45), "StreamsScreen") == []


# -- per-pair state (issue 11): r, ridge, filters and cursor belong to the pair shown ------------------

async def test_next_pair_shows_its_own_measured_r(tmp_path):
    """After M, Optimum shows the new pair's measured r (0.668), not the first pair's (0.150); M
    again brings back the first pair with the r stepped there."""
    from edge_runs import two_pairs

    from textual.widgets import Static

    app = make_app(two_pairs(tmp_path), **FAST)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        bar = lambda: str(app.screen.query_one("#set-bar", Static).render())
        assert "c_draft/c_verify = 0.150 (measured)" in bar()
        await pilot.press("plus")  # step r on the first pair
        await settle(app, pilot)
        stepped = app.screen.r
        assert stepped > 0.15
        await pilot.press("M")
        await settle(app, pilot)
        assert "c_draft/c_verify = 0.668 (measured)" in bar()
        assert app.screen.r == pytest.approx(0.6676984508157208)
        await pilot.press("M")
        await settle(app, pilot)
        assert app.screen.r == stepped
