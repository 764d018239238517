"""A sparkline on a fixed scale: a rate in [0, 1] draws at its true height whatever the series
holds (Textual's Sparkline scales each series to its own min..max, so an all-ones stream and an
all-zeros one both drew flat at the bottom, and a single value drew full height)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def bucket_means(values: Sequence[float] | np.ndarray, width: int) -> list[float]:
    """`width` column values: the mean of the values that fall in each of `width` equal slices of
    the series (with fewer values than columns, each value spans width/len columns). NaN values are
    left out of a slice's mean; a slice with none left is NaN.

    Slice j is values[lo_j:hi_j], lo_j = floor(j n / width), hi_j = max(floor((j+1) n / width), lo_j + 1):
    with n >= width the slices partition the series (numpy sums them: a 5M-value series is one pass)."""
    n = len(values)
    if n == 0 or width <= 0:
        return []
    v = np.asarray(values, dtype=np.float64)
    lo = np.arange(width, dtype=np.int64) * n // width
    if n < width:  # each slice is one value
        return [float(x) for x in v[lo]]
    finite = np.isfinite(v)
    sums = np.add.reduceat(np.where(finite, v, 0.0), lo)
    counts = np.add.reduceat(finite.astype(np.int64), lo)
    with np.errstate(invalid="ignore", divide="ignore"):
        return [float(x) for x in np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)]


def eighths(value: float, height: int, lo: float = 0.0, hi: float = 1.0) -> int:
    """How many eighths of a cell a column of `height` rows fills for `value` on the fixed scale
    lo..hi: 1 (a baseline stroke) at lo, 8 * height (full) at hi, linear between, values outside
    clamped. NaN fills nothing."""
    if not math.isfinite(value):
        return 0
    level = min(max((value - lo) / (hi - lo), 0.0), 1.0)
    return 1 + round(level * (8 * height - 1))


def scaled_rows(values: Sequence[float] | np.ndarray, width: int, height: int, lo: float = 0.0, hi: float = 1.0) -> list[str]:
    """The sparkline as `height` strings of `width` characters, top row first, on the fixed scale
    lo..hi (an empty series: one baseline row of spaces)."""
    cols = [eighths(v, height, lo, hi) for v in bucket_means(values, width)]
    rows = []
    for i in reversed(range(height)):
        line = []
        for k in cols:
            filled = min(max(k - 8 * i, 0), 8)
            line.append(" " if filled == 0 else BARS[filled - 1])
        rows.append("".join(line).ljust(width))
    return rows


class ScaledSparkline(Widget):
    """A sparkline of values on the fixed scale lo..hi (default 0..1, for rates such as alpha)."""

    DEFAULT_CSS = """
    ScaledSparkline { height: 1; color: $primary; }
    """

    def __init__(self, data: Sequence[float] = (), *, lo: float = 0.0, hi: float = 1.0, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lo, self.hi = lo, hi
        self._data = np.asarray(data, dtype=np.float64)

    @property
    def data(self) -> np.ndarray:
        return self._data

    @data.setter
    def data(self, values: Sequence[float] | np.ndarray) -> None:
        """The series, as a float array (None -> NaN); a long one is drawn at the widget's width
        (bucket_means), never as a Python float per value."""
        self._data = np.asarray(values, dtype=np.float64)
        self.refresh()

    def rows(self) -> list[str]:
        """What is drawn at the widget's current size (the Pilot tests read it)."""
        return scaled_rows(self._data, self.size.width, max(self.size.height, 1), self.lo, self.hi)

    def render(self) -> Text:
        return Text("\n".join(self.rows()), style=Style(), no_wrap=True, overflow="crop")
