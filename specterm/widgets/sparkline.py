"""A sparkline on a fixed scale: a rate in [0, 1] draws at its true height whatever the series
holds (Textual's Sparkline scales each series to its own min..max, so an all-ones stream and an
all-zeros one both drew flat at the bottom, and a single value drew full height)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

BARS = "▁▂▃▄▅▆▇█"


def bucket_means(values: Sequence[float], width: int) -> list[float]:
    """`width` column values: the mean of the values that fall in each of `width` equal slices of
    the series (with fewer values than columns, each value spans width/len columns). NaN values are
    left out of a slice's mean; a slice with none left is NaN."""
    n = len(values)
    if n == 0 or width <= 0:
        return []
    out = []
    for j in range(width):
        lo = j * n // width
        hi = max((j + 1) * n // width, lo + 1)
        part = [float(v) for v in values[lo:hi] if v is not None and math.isfinite(float(v))]
        out.append(sum(part) / len(part) if part else float("nan"))
    return out


def eighths(value: float, height: int, lo: float = 0.0, hi: float = 1.0) -> int:
    """How many eighths of a cell a column of `height` rows fills for `value` on the fixed scale
    lo..hi: 1 (a baseline stroke) at lo, 8 * height (full) at hi, linear between, values outside
    clamped. NaN fills nothing."""
    if not math.isfinite(value):
        return 0
    level = min(max((value - lo) / (hi - lo), 0.0), 1.0)
    return 1 + round(level * (8 * height - 1))


def scaled_rows(values: Sequence[float], width: int, height: int, lo: float = 0.0, hi: float = 1.0) -> list[str]:
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
        self._data: list[float] = list(data)

    @property
    def data(self) -> list[float]:
        return self._data

    @data.setter
    def data(self, values: Sequence[float]) -> None:
        self._data = list(values)
        self.refresh()

    def rows(self) -> list[str]:
        """What is drawn at the widget's current size (the Pilot tests read it)."""
        return scaled_rows(self._data, self.size.width, max(self.size.height, 1), self.lo, self.hi)

    def render(self) -> Text:
        return Text("\n".join(self.rows()), style=Style(), no_wrap=True, overflow="crop")
