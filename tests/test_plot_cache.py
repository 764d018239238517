"""ReportPlot keeps its built figure until the data, the size or the theme changes."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from specterm.widgets.plots import ReportPlot

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class PlotApp(App):
    def compose(self) -> ComposeResult:
        yield ReportPlot(id="plot")


async def test_built_figure_is_reused_until_data_or_size_changes():
    app = PlotApp()
    async with app.run_test(size=(60, 20)) as pilot:
        plot = app.query_one(ReportPlot)
        builds = []
        real = plot._plot.build
        plot._plot.build = lambda: builds.append(1) or real()
        plt = plot.start("first")
        plt.plot([1, 2, 3], [1, 4, 9])
        plot.refresh()
        await pilot.pause()
        first = len(builds)
        assert first >= 1
        plot.render()
        plot.refresh()
        await pilot.pause()
        assert len(builds) == first  # same data, same size: no rebuild
        plt = plot.start("second")  # new data
        plt.plot([1, 2, 3], [3, 2, 1])
        assert "second" in str(plot.render())
        assert len(builds) == first + 1
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert len(builds) == first + 2  # new size: rebuilt once
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        assert len(builds) == first + 3  # new theme: rebuilt once
