"""Plots drawn with textual-plotext from report data (redrawn at the widget's size on every render,
so a resize needs no extra work). Drawing only: the numbers come from the report."""

from __future__ import annotations

import math
from typing import Sequence

from textual_plotext import PlotextPlot

from specterm.core.report import OptimumRow, RunLengths


class ReportPlot(PlotextPlot):
    """A PlotextPlot that draws nothing until it has data, then says so in its title."""

    DEFAULT_CSS = """
    ReportPlot { height: 1fr; min-height: 8; }
    """

    def start(self, title: str) -> object:
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        return plt


def finite(xs: Sequence, ys: Sequence) -> tuple[list, list]:
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


def draw_runlengths(plot: ReportPlot, name: str, runlengths: RunLengths, log_y: bool) -> None:
    """Bars: closed runs of each length L; line: the geometric prediction n_runs alpha^L (1 - alpha)."""
    L, count, expected = runlengths.L, runlengths.count, runlengths.geom_expected
    k = histogram_span(count)
    plt = plot.start(f"run lengths L, {name}" + ("  (log count)" if log_y else ""))
    if k:
        x, y = L[:k], count[:k]
        if log_y:  # log of zero is undefined: drop empty bins from the log view
            x, y = [a for a, b in zip(x, y) if b > 0], [b for b in y if b > 0]
            plt.yscale("log")
        plt.bar(x, y, label="observed", width=0.6)
        ex, ey = finite(L[:k], expected[:k])
        if log_y:
            ex, ey = [a for a, b in zip(ex, ey) if b > 0], [b for b in ey if b > 0]
        plt.plot(ex, ey, label="geometric", marker="braille")
        plt.xlabel("L (accepted tokens before a rejection)")
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
        if r_measured is not None:
            plt.vline(r_measured, "red")
        if r_chosen is not None and r_chosen != r_measured:
            plt.vline(r_chosen, "gray")
        plt.xlabel("r = c_draft / c_verify" + ("  (red: measured)" if r_measured is not None else ""))
    plot.refresh()


def draw_throughput(plot: ReportPlot, curve: dict, r: float) -> None:
    """T_true and T_iid against g at cost ratio r (from optimum.throughput_curve)."""
    plt = plot.start(f"T per verify-cost, r = {r:.2f}")
    gx, tt = finite(curve.get("gamma") or [], curve.get("T_true") or [])
    gi, ti = finite(curve.get("gamma") or [], curve.get("T_iid") or [])
    if gx:
        plt.plot(gx, tt, label="T_true", marker="braille")
        plt.plot(gi, ti, label="T_iid", marker="braille")
        plt.xlabel("g (draft length)")
    plot.refresh()
