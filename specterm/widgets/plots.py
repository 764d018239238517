"""Plots drawn with textual-plotext from report data (redrawn at the widget's size on every render,
so a resize needs no extra work). Drawing only: the numbers come from the report."""

from __future__ import annotations

import math
from typing import Any, Sequence

from textual_plotext import PlotextPlot

from specterm.core.report.types import OptimumRow, RunLengths


class ReportPlot(PlotextPlot):
    """A PlotextPlot that draws nothing until it has data, then says so in its title.

    The built figure is kept until the data (a new `start`), the size or the theme changes: a
    revisit or a repaint of an unchanged plot costs no plotext build."""

    DEFAULT_CSS = """
    ReportPlot { height: 1fr; min-height: 8; }
    """

    _data_version = 0
    _built_key: tuple[Any, ...] | None = None
    _built: Any = None

    def start(self, title: str) -> Any:
        self._data_version += 1  # every draw goes through start: the figure is rebuilt at the next render
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        return plt

    def render(self) -> Any:
        key = (self.size.width, self.size.height, self.app.theme, self.theme, self._data_version)
        if key != self._built_key or self._built is None:
            self._built = super().render()
            self._built_key = key
        return self._built


def finite(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[list[float], list[float]]:
    """Pairs whose y is a finite number (plotext cannot draw None or NaN)."""
    keep = [(x, y) for x, y in zip(xs, ys) if isinstance(y, (int, float)) and math.isfinite(y)]
    return [x for x, _ in keep], [y for _, y in keep]


def histogram_span(count: Sequence[int], cover: float = 0.995, cap: int = 64) -> int:
    """How many leading L values to draw: enough to cover `cover` of the runs, at most `cap`, at
    least 8 (a choice: the geometric tail beyond is flat zero at terminal resolution)."""
    total = sum(count)
    if total <= 0:
        return min(len(count), 8)
    run = 0
    for i, c in enumerate(count):
        run += c
        if run >= cover * total:
            return min(max(i + 1, 8), cap, len(count))
    return min(len(count), cap)


def log_bars(L: Sequence[Any], count: Sequence[Any], expected: Sequence[Any]) -> tuple[list[Any], list[Any], list[Any], list[Any], float | None]:
    """What a log count axis can draw: (bar x, bar counts, line x, line values, floor).

    log10 is undefined at 0, so only positive bins and positive predictions are kept, and bars rise
    from `floor` = half the smallest kept value instead of from 0 (None when nothing is positive).
    """
    bx = [x for x, c in zip(L, count) if isinstance(c, (int, float)) and c > 0]
    by = [c for c in count if isinstance(c, (int, float)) and c > 0]
    ex, ey = finite(L, expected)
    keep = [(x, v) for x, v in zip(ex, ey) if v > 0]
    ex, ey = [x for x, _ in keep], [v for _, v in keep]
    positive = by + ey
    floor = min(positive) / 2 if positive else None
    return bx, by, ex, ey, floor


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks of a log10 axis spanning [lo, hi] (both > 0): (log10 positions, labels of the values).

    Powers of ten from 10^floor(log10 lo) to 10^ceil(log10 hi); with at most two decades the 2x and
    5x steps too, so a short axis still has a few labels.
    """
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if b - a <= 2 else (1,)
    values = [m * 10.0**e for e in range(a, b + 1) for m in steps if lo <= m * 10.0**e <= hi * 1.0000001]
    if not values:
        values = [lo, hi]
    return [math.log10(v) for v in values], [f"{v:g}" for v in values]


def count_ticks(top: float, most: int = 6) -> list[int]:
    """Whole-number ticks 0, s, 2s, ... up to `top` for a count axis, s from 1, 2, 5 x 10^k so
    there are at most `most` + 1 of them (plotext's own ticks fall between counts: 382.5)."""
    top = max(int(math.ceil(top)), 1)
    step = 1
    for e in range(0, 12):
        for m in (1, 2, 5):
            step = m * 10**e
            if top // step <= most:
                return list(range(0, top + 1, step))
    return list(range(0, top + 1, step))


def draw_runlengths(plot: ReportPlot, name: str, runlengths: RunLengths, log_y: bool) -> None:
    """Bars: closed runs of each length L; line: the geometric prediction n_runs alpha^L (1 - alpha).

    The log view draws log10 of the values on a linear axis labelled in counts (plotext's own log
    scale re-applies log10 to bar data on every redraw, and cannot draw a bar from 0): empty bins
    are left out and bars start at a positive floor, named in the title."""
    L, count, expected = list(runlengths.L), list(runlengths.count), list(runlengths.geom_expected)
    k = histogram_span(count)
    # The key is in the x label, not a plotext legend: the legend sat over the tallest bar (L = 0 or 1).
    xlabel = "L (accepted before a rejection); bars: observed, line: geometric"
    if not log_y:
        plt = plot.start(f"run lengths L, {name}")
        if k:
            plt.bar(L[:k], count[:k], width=0.6)
            ex, ey = finite(L[:k], expected[:k])
            plt.plot(ex, ey, marker="braille")
            top = max([c for c in count[:k] if isinstance(c, (int, float))] + ey + [1])
            plt.yticks(count_ticks(top))
            plt.xlabel(xlabel)
        plot.refresh()
        return
    bx, by, ex, ey, floor = log_bars(L[:k], count[:k], expected[:k])
    if floor is None:
        plot.start(f"run lengths L, {name}: no closed run to draw on a log axis")
        plot.refresh()
        return
    plt = plot.start(f"run lengths L, {name}  (log count; bars from {floor:.3g}, empty bins left out)")
    if bx:
        plt.bar(bx, [math.log10(c) for c in by], width=0.6, minimum=math.log10(floor))
    if ex:
        plt.plot(ex, [math.log10(v) for v in ey], marker="braille")
    ticks, labels = log_ticks(max(floor, 1.0), max(by + ey + [1.0]))  # counts: whole numbers only
    plt.yticks(ticks, labels)
    plt.xlabel(xlabel)
    plot.refresh()


def draw_optimum(plot: ReportPlot, name: str, rows: list[OptimumRow], r_measured: float | None, r_chosen: float | None) -> None:
    """g*_true and g*_iid against r; a vertical line at the measured r and one at the chosen r."""
    plt = plot.start(f"g* vs r, {name}")
    rs = [row.r for row in rows]
    rt, gt = finite(rs, [row.gamma_true for row in rows])
    ri, gi = finite(rs, [row.gamma_iid for row in rows])
    if rt:
        plt.plot(rt, gt, label="g*_true", marker="braille")
        plt.plot(ri, gi, label="g*_iid", marker="braille")
        top = int(max(gt + gi))
        step = max(1, -(-top // 8))  # at most ~8 integer ticks
        plt.yticks(list(range(1, top + 1, step)))
        # half a step of room below g = 1 and above the top: plotext put the tick "1" on the x label's row
        # (it read as part of the label, "1 r = c_draft / c_verify") when the axis started exactly at 1
        plt.ylim(0.5, top + 0.5)
        if r_measured is not None:
            plt.vline(r_measured, "red")
        if r_chosen is not None and r_chosen != r_measured:
            plt.vline(r_chosen, "gray")
        plt.xlabel("r = c_draft / c_verify" + ("  (red: measured)" if r_measured is not None else ""))
    plot.refresh()


def draw_throughput(plot: ReportPlot, curve: dict[str, Any], r: float) -> None:
    """T_true and T_iid against g at cost ratio r (from optimum.throughput_curve)."""
    plt = plot.start(f"T per verify-cost, r = {r:.3f}")
    gx, tt = finite(curve.get("gamma") or [], curve.get("T_true") or [])
    gi, ti = finite(curve.get("gamma") or [], curve.get("T_iid") or [])
    if gx:
        plt.plot(gx, tt, label="T_true", marker="braille")
        plt.plot(gi, ti, label="T_iid", marker="braille")
        plt.xlabel("g (draft length)")
    plot.refresh()
