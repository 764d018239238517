"""widgets/plots.py: the log count axis never takes log10 of zero (the Run lengths `y` crash)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from specterm.core.report.types import RunLengths
from specterm.widgets.plots import ReportPlot, draw_runlengths, log_bars, log_ticks

pytestmark = pytest.mark.anyio


def test_log_bars_keeps_positive_values_and_floors_below_them():
    L = [1, 2, 3, 4]
    count = [8, 0, 2, 0]
    expected = [6.0, 3.0, 1.5, 0.0]
    bx, by, ex, ey, floor = log_bars(L, count, expected)
    assert (bx, by) == ([1, 3], [8, 2])
    assert (ex, ey) == ([1, 2, 3], [6.0, 3.0, 1.5])
    assert floor == 0.75  # half of the smallest kept value, 1.5


def test_log_bars_with_nothing_positive():
    assert log_bars([1, 2], [0, 0], [0.0, float("nan")]) == ([], [], [], [], None)


class PlotApp(App):
    def compose(self) -> ComposeResult:
        yield ReportPlot()


RUNLENGTHS = {
    "typical": RunLengths(L=[1, 2, 3, 4, 5, 6, 7, 8, 9], count=[40, 20, 0, 5, 3, 0, 1, 0, 0],
                          geom_expected=[35.0, 18.0, 9.0, 4.5, 2.2, 1.1, 0.6, 0.3, 0.15], n_runs=69),
    "no closed run": RunLengths(L=[1, 2, 3], count=[0, 0, 0], geom_expected=[0.0, 0.0, 0.0]),
    "one bin": RunLengths(L=[1], count=[1], geom_expected=[1.0], n_runs=1),
    "empty": RunLengths(L=[], count=[], geom_expected=[]),
}


@pytest.mark.parametrize("log_y", [False, True])
@pytest.mark.parametrize("case", list(RUNLENGTHS))
async def test_runlengths_plot_renders(case, log_y):
    app = PlotApp()
    async with app.run_test(size=(80, 24)) as pilot:
        plot = app.query_one(ReportPlot)
        draw_runlengths(plot, "pooled", RUNLENGTHS[case], log_y)
        await pilot.pause()
        text = str(plot.render())  # plotext builds the figure here: log10(0) raised ValueError
        if log_y and case == "typical":
            assert "bars from 0.15" in text  # the span keeps L 1..8: smallest kept value 0.3 (L = 8)
        if log_y and case in ("no closed run", "empty"):
            assert "no closed run to draw on a log axis" in text


def test_log_ticks_by_hand():
    pos, labels = log_ticks(0.075, 40)
    assert labels == ["0.1", "1", "10"]
    assert pos == pytest.approx([-1.0, 0.0, 1.0])
    pos, labels = log_ticks(0.5, 8)
    assert labels == ["0.5", "1", "2", "5"]
    assert log_ticks(3, 3)[1] == ["3", "3"]  # no tick value inside: the ends


async def test_log_view_survives_redraws():
    """plotext's yscale('log') re-applies log10 on every build; rendering twice must not crash."""
    app = PlotApp()
    async with app.run_test(size=(80, 24)) as pilot:
        plot = app.query_one(ReportPlot)
        draw_runlengths(plot, "pooled", RunLengths(L=[1, 2], count=[3, 1], geom_expected=[2.5, 0.9], n_runs=4), True)
        await pilot.pause()
        first = str(plot.render())
        assert str(plot.render()) == first
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        plot.render()
