"""Numbers as text: the one number formatter of specterm (exported tables, the screens, the CLI and
the scorecard's evidence sentences).

    MISSING   "n/a": the one spelling of a missing or undefined value
    fmt       a number with `digits` decimals (MISSING for None, NaN, inf); ints as ints; bools yes/no;
              never "-0.000" (unsigned_zero)
    ci        a 95% CI as "[lo, hi]" ("[n/a]" when a bound is missing)
    est       an Estimate as "value[suffix] [lo, hi]", e.g. "+0.233 [0.19, 0.27]" (SPEC 7's bracket style)
    parsing_line, computing_line   what a load says while it waits (the TUI's loading line, `report`'s status)

Why here, in core/ and importing nothing of specterm: the scorecard's evidence sentences are part of
the SPEC 7 JSON, so core code (scorecard.py, economics.py) writes numbers into text too, and it must
spell them exactly as the tables do. A leaf module lets export, the scorecard, the screens and the CLI
share it without the statistics depending on the exporter (tests/test_layering.py: the statistics
modules never import it, and it imports nothing of specterm).
"""

from __future__ import annotations

import math
from typing import Protocol, Sequence

MISSING = "n/a"
"""The one spelling of a missing or undefined value, in exported tables, evidence and on the screens."""


class HasValueAndCI(Protocol):
    """What `est` reads: report.Estimate (a point value and its CI [lo, hi])."""

    @property
    def value(self) -> float | None: ...

    @property
    def ci(self) -> Sequence[float | None]: ...


def is_num(x: object) -> bool:
    """A finite int or float (bools are not numbers here)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def unsigned_zero(x: float, digits: int) -> float:
    """x, or +0.0 when x rounds to zero at `digits` decimals, so "-0.000" is never printed."""
    return 0.0 if round(x, digits) == 0 else x


def fmt(x: object, digits: int = 3, sign: bool = False) -> str:
    """`x` with `digits` decimals (`sign`: always a sign); MISSING for None, NaN and inf; an int as an
    int ("+5" with `sign`); a bool as yes/no; anything else as str(x). A float that rounds to zero
    prints unsigned ("0.000", "+0.000" with `sign`), never "-0.000"."""
    if x is None:
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:+d}" if sign else f"{x:d}"
    if isinstance(x, float):
        if not math.isfinite(x):
            return MISSING
        x = unsigned_zero(x, digits)
        return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    return str(x)


def ci(bounds: Sequence[float | None] | None, digits: int = 3) -> str:
    """`[lo, hi]`, or `[n/a]` when either bound is missing."""
    if not bounds or len(bounds) != 2 or not is_num(bounds[0]) or not is_num(bounds[1]):
        return f"[{MISSING}]"
    return f"[{fmt(bounds[0], digits)}, {fmt(bounds[1], digits)}]"


def est(e: HasValueAndCI | None, digits: int = 3, ci_digits: int | None = None, sign: bool = False,
        suffix: str = "", missing_ci: str | None = None) -> str:
    """`value[suffix] [lo, hi]` of an Estimate: the value with `digits` decimals (`sign`: always a
    sign), the suffix only after a defined value, the CI with `ci_digits` (default `digits`).
    A missing Estimate is MISSING; a missing CI is `[n/a]`, or `missing_ci` when given ("" shows the
    value alone, as the screens do)."""
    if e is None:
        return MISSING
    value = fmt(e.value, digits, sign) + (suffix if is_num(e.value) else "")
    bounds = ci(e.ci, ci_digits or digits)
    if missing_ci is not None and bounds == f"[{MISSING}]":
        return f"{value} {missing_ci}" if missing_ci else value
    return f"{value} {bounds}"


def parsing_line(runs: int, size: int) -> str:
    """What a load says while it parses `runs` runs of `size` bytes (the TUI's loading line, the
    report command's status)."""
    return f"Parsing the runs ({runs} run{'' if runs == 1 else 's'}, {size / 1e6:,.1f} MB) ..."


def computing_line(prompts: int, positions: int, point_first: bool = False) -> str:
    """What a load says while it computes the first report of `prompts` prompts (point_first: the
    point estimates, whose CIs follow)."""
    what = "the point estimates" if point_first else "the report"
    return f"Computing {what} of {positions:,} positions in {prompts:,} prompts ..."
