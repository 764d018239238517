"""A verdict is a function of an interval and a threshold (SPEC 4), written once here.

Every scorecard row (P1-P5, Q1-Q6) judges a claim on two axes, each one of OUTCOMES:

    direction   the test in SPEC 4's table: a CI on the stated side of its threshold
                holds:          the CI lies strictly on the stated side
                not reproduced: the CI lies strictly on the other side
                inconclusive:   the CI contains the threshold, or is undefined
    size        the seed's stated value or range [s_lo, s_hi] against the measured CI [lo, hi]
                holds:          the ranges overlap (lo <= s_hi and s_lo <= hi): the seed's range lies
                                inside the CI or the two overlap
                not reproduced: the CI excludes the seed's range
                inconclusive:   the CI is undefined
                n/a:            the seed states no size

and the row's verdict follows from the pair (`verdict_of`):

    direction not reproduced                 -> falsified
    direction inconclusive                   -> inconclusive
    direction holds, size holds or n/a       -> holds
    direction holds, size not reproduced     -> holds in direction, not in size
    direction holds, size inconclusive       -> inconclusive  (a choice: the SPEC is silent; it happens
                                                only when the size's CI is undefined)

A claim judged "in every corpus" combines its per-corpus outcomes with `combine`: not reproduced in
some corpus -> not reproduced; holds in all -> holds; otherwise inconclusive (n/a parts are skipped).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

HOLDS = "holds"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NA = "n/a"
OUTCOMES = (HOLDS, NOT_REPRODUCED, INCONCLUSIVE, NA)

FALSIFIED = "falsified"
HOLDS_NOT_SIZE = "holds in direction, not in size"
VERDICTS = (HOLDS, HOLDS_NOT_SIZE, INCONCLUSIVE, FALSIFIED)


def _finite(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def direction(lo: float | None, hi: float | None, threshold: float, above: bool = True) -> str:
    """The CI [lo, hi] against `threshold`: holds when it lies strictly on the stated side (above:
    lo > threshold; below: hi < threshold), not reproduced when strictly on the other side,
    inconclusive when it contains the threshold or is undefined."""
    if not _finite(lo, hi):
        return INCONCLUSIVE
    assert lo is not None and hi is not None
    if (lo > threshold) if above else (hi < threshold):
        return HOLDS
    if (hi < threshold) if above else (lo > threshold):
        return NOT_REPRODUCED
    return INCONCLUSIVE


def size(lo: float | None, hi: float | None, seed_lo: float | None, seed_hi: float | None) -> str:
    """The seed's range [seed_lo, seed_hi] (a value: seed_lo = seed_hi) against the measured CI [lo, hi]:
    holds when they overlap, not reproduced when the CI excludes it, inconclusive when the CI is
    undefined, n/a when the seed states no size (seed_lo or seed_hi None)."""
    if seed_lo is None or seed_hi is None:
        return NA
    if not _finite(lo, hi):
        return INCONCLUSIVE
    assert lo is not None and hi is not None
    return HOLDS if lo <= seed_hi and seed_lo <= hi else NOT_REPRODUCED


def combine(outcomes: Iterable[str]) -> str:
    """Outcomes of one claim over several parts (corpora): not reproduced anywhere -> not reproduced;
    holds everywhere -> holds; otherwise inconclusive. n/a parts are skipped; nothing left -> n/a."""
    parts = [o for o in outcomes if o != NA]
    if not parts:
        return NA
    if NOT_REPRODUCED in parts:
        return NOT_REPRODUCED
    return HOLDS if all(o == HOLDS for o in parts) else INCONCLUSIVE


def verdict_of(direction_outcome: str, size_outcome: str) -> str:
    """The row's verdict from its direction and size outcomes (table in the module docstring)."""
    if direction_outcome == NOT_REPRODUCED:
        return FALSIFIED
    if direction_outcome != HOLDS:
        return INCONCLUSIVE
    if size_outcome in (HOLDS, NA):
        return HOLDS
    if size_outcome == NOT_REPRODUCED:
        return HOLDS_NOT_SIZE
    return INCONCLUSIVE


def score_row(pid: str, prediction: str, seed: str, direction_outcome: str, size_outcome: str, evidence: str,
              seed_size: str, steady: str | None = None) -> dict[str, Any]:
    """A scorecard row (SPEC 7: "id", "verdict", "evidence", "direction", "size", ...): the verdict from
    (direction, size) by `verdict_of`, the evidence opening with it; `seed` says whose claim
    (measurement / economics), `seed_size` the seed's stated size, `steady_state` the direction's
    outcome on positions t >= 32 (None where the row has no steady-state statistic)."""
    v = verdict_of(direction_outcome, size_outcome)
    return {"id": pid, "prediction": prediction, "verdict": v, "evidence": f"{v}: {evidence}", "seed": seed,
            "direction": direction_outcome, "size": size_outcome, "seed_size": seed_size, "steady_state": steady}


class Fields:
    """Read access to a report object (report.py dataclasses) or its SPEC 7 JSON shape alike:
    `f["key"]`, `f.get("key")`, `"key" in f`, iteration and len, nested values wrapped the same way.
    The scorecard's rules read sets through it, so they take a SetReport, the JSON dicts of an older
    report, or the light sets the borderline check builds (analysis.verdict_set)."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj.raw() if isinstance(obj, Fields) else obj

    def raw(self) -> Any:
        return self._obj

    def __getitem__(self, key: Any) -> Any:
        o = self._obj
        if isinstance(o, (dict, list, tuple)):
            return fields(o[key])
        if not hasattr(o, key):
            raise KeyError(key)
        return fields(getattr(o, key))

    def get(self, key: str, default: Any = None) -> Any:
        o = self._obj
        value = o.get(key, default) if isinstance(o, dict) else getattr(o, key, default)
        return fields(value)

    def __contains__(self, key: object) -> bool:
        o = self._obj
        return key in o if isinstance(o, (dict, list, tuple)) else isinstance(key, str) and hasattr(o, key)

    def __iter__(self) -> Any:
        o = self._obj
        return iter(o) if isinstance(o, dict) else (fields(v) for v in o)

    def __len__(self) -> int:
        return len(self._obj)

    def __bool__(self) -> bool:
        o = self._obj
        return bool(o) if isinstance(o, (dict, list, tuple)) else o is not None


def sets_view(sets: Any) -> Any:
    """A report's sets for the rules: a dict of dicts (the JSON shape) as it is, anything else (SetReports)
    through Fields."""
    if isinstance(sets, dict) and all(isinstance(v, (dict, Fields)) for v in sets.values()):
        return sets
    return fields(sets)


def fields(value: Any) -> Any:
    """`value` wrapped in Fields when it is a container or a report object; numbers and strings as they are."""
    if value is None or isinstance(value, (str, int, float, bool, Fields)):
        return value
    if isinstance(value, (dict, list, tuple)) or hasattr(value, "__dataclass_fields__"):
        return Fields(value)
    return value
