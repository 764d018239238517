"""The repair loop's counts over a set of streams (SPEC 1.3; the loop itself is engines/repair.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from specterm.core.report.types import Repairs

if TYPE_CHECKING:
    from specterm.core.store import Stream


def repair_counts(streams: Sequence[Stream]) -> Repairs | None:
    """Over the streams with repair information (Stream.repairs is not None): their number, those with
    at least one repair, sum len(repairs), and sum (n - analysed positions); None when there are none."""
    checked = [s for s in streams if s.repairs is not None]
    if not checked:
        return None
    return Repairs(streams=len(checked), repaired=sum(1 for s in checked if s.repairs),
                   repairs=sum(len(s.repairs or ()) for s in checked),
                   excluded=sum(s.n - s.valid_len for s in checked))
