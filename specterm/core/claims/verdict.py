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

from specterm.core.report.types import ScoreRow

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
              seed_size: str, steady: str | None = None) -> ScoreRow:
    """A scorecard row (report.ScoreRow, SPEC 7: "id", "verdict", "evidence", "direction", "size", ...): the
    verdict from (direction, size) by `verdict_of`, the evidence opening with it; `seed` says whose claim
    (measurement / economics), `seed_size` the seed's stated size, `steady_state` the direction's
    outcome on positions t >= 32 (None where the row has no steady-state statistic)."""
    v = verdict_of(direction_outcome, size_outcome)
    return ScoreRow(id=pid, prediction=prediction, verdict=v, evidence=f"{v}: {evidence}", seed=seed,
                    direction=direction_outcome, size=size_outcome, seed_size=seed_size, steady_state=steady)


ABOVE, BELOW, STRADDLES = "above 1", "below 1", "straddles 1"


def ci_side(ci: Iterable[float | None] | None) -> str:
    """A speedup CI [lo, hi] against 1 (`direction` with threshold 1): ABOVE (lo > 1), BELOW (hi < 1),
    STRADDLES (contains 1, or undefined)."""
    lo, hi = (list(ci) + [None, None])[:2] if ci else (None, None)
    return {HOLDS: ABOVE, NOT_REPRODUCED: BELOW}.get(direction(lo, hi, 1.0), STRADDLES)


def batch_hw(sides: Iterable[tuple[int, str]]) -> int | None:
    """B_hw (SPEC 6): the largest measured B such that every measured B up to it has its S_hw CI above 1,
    from (B, side) pairs (`ci_side`); None ("never on this device") when the smallest B's CI is not above 1."""
    out = None
    for B, side in sorted(sides):
        if side != ABOVE:
            break
        out = B
    return out


TOO_FEW = "too_few_prompts"


def too_few_text(n: int, needs: int, per_corpus: bool = True) -> str:
    """SPEC 6 "Too few prompts": the words every interval-based verdict reads below the minimum. The
    minimum is per corpus (a pooled set's bootstrap is stratified by corpus, so its smallest corpus
    decides), and the words say so: n is the prompts of the smallest corpus, not of the set.
    per_corpus False: a count of prompts that is not a corpus's (a paired comparison's)."""
    if not per_corpus:
        return f"too few prompts (n = {n}; needs {needs})"
    return f"too few prompts (n = {n} in a corpus; needs {needs} per corpus)"
