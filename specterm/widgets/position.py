"""The position view: alpha by position bin of y with CI whiskers, against the set's overall alpha
(SPEC 3, "Acceptance by position"). Drawing only (plotext, like plots.py): the numbers come from
the report's `position` of one set."""

from __future__ import annotations

from specterm.core.report.fmt import MISSING, est
from specterm.core.report.types import Position
from specterm.widgets.plots import ReportPlot


def whiskers(position: Position) -> tuple[list[float], list[float], list[float], list[float]]:
    """(bin centres t, alpha, CI midpoints, CI widths) of the bins with a defined alpha and CI.

    plotext's error bars are centred on their y: a whisker from lo to hi is drawn at (lo + hi) / 2
    with length hi - lo, so asymmetric percentile CIs draw exactly.
    """
    x, y, mid, width = [], [], [], []
    half = position.bin_width / 2
    for b in position.bins:
        lo, hi = b.alpha.ci
        if b.alpha.value is None or lo is None or hi is None:
            continue
        x.append(b.start + half)
        y.append(b.alpha.value)
        mid.append((lo + hi) / 2)
        width.append(hi - lo)
    return x, y, mid, width


def draw_position(plot: ReportPlot, name: str, position: Position | None, alpha: float | None) -> None:
    """Whiskers: alpha [CI] per bin of t; points: the bins' alpha; dashed line: the set's overall alpha."""
    gain = est(position.warmup_gain, 3, 2, sign=True) if position is not None else MISSING
    plt = plot.start(f"alpha by position t, {name}  (warm-up gain {gain})")
    if position is not None:
        x, y, mid, width = whiskers(position)
        if x:
            plt.error(x, mid, yerr=width, label="95% CI")
            plt.scatter(x, y, label="alpha in bin", marker="●")
            if alpha is not None:
                plt.hline(alpha, "gray")
            ends = [m - w / 2 for m, w in zip(mid, width)] + [m + w / 2 for m, w in zip(mid, width)]
            ends += [] if alpha is None else [alpha]
            plt.ylim(min(ends) - 0.02, max(ends) + 0.02)
            plt.xlabel(f"t in y, bins of {position.bin_width}" + (f"  (gray: alpha = {alpha:.3f})" if alpha is not None else ""))
    plot.refresh()
