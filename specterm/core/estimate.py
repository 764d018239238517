"""A point estimate with its percentile-bootstrap 95% CI, and the one way to get it from column sums.

Every statistic of a set is f(c) of its per-stream column sums c = M.sum(0) (SPEC 3); a bootstrap
resample is f(w @ M), so all resamples at once are f(R) with R = W @ M (B x K). The estimate is
value = f(c) and ci = percentile_ci(f(R)) (bootstrap.percentile_ci: non-finite resamples dropped).
Undefined numbers (NaN, inf) become None, as in the JSON report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from specterm.core.bootstrap import percentile_ci


def finite_or_none(x: Any) -> float | None:
    """A finite float, or None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


@dataclass(frozen=True)
class Estimate:
    """value with its 95% CI [lo, hi]; None where undefined."""

    value: float | None
    lo: float | None = None
    hi: float | None = None

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return (self.lo, self.hi)

    def bounds(self) -> tuple[float, float]:
        """(lo, hi) as floats, NaN where undefined (so comparisons with a bound are simply False)."""
        return (np.nan if self.lo is None else self.lo, np.nan if self.hi is None else self.hi)

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "ci": [self.lo, self.hi]}

    @classmethod
    def of(cls, obj: Any) -> "Estimate":
        """From an Estimate, a report's {"value", "ci": [lo, hi]} dict, or any object with value and ci."""
        if isinstance(obj, Estimate):
            return obj
        if obj is None:
            return cls(None)
        if isinstance(obj, dict):
            value, ci = obj.get("value"), obj.get("ci") or (None, None)
        else:
            value, ci = getattr(obj, "value", None), getattr(obj, "ci", None) or (None, None)
        return cls(finite_or_none(value), finite_or_none(ci[0]), finite_or_none(ci[1]))


NULL = Estimate(None)


def percentile_cis(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per column of samples (B x K): percentile_ci of each column, in one call where a
    column is all finite (the usual case) and column by column where it is not."""
    S = np.asarray(samples, dtype=np.float64)
    lo, hi = np.full(S.shape[1], np.nan), np.full(S.shape[1], np.nan)
    full = np.isfinite(S).all(axis=0)
    if S.shape[0] and full.any():
        lo[full], hi[full] = np.percentile(S[:, full], [50 * (1 - level), 50 * (1 + level)], axis=0)
    for k in np.flatnonzero(~full):
        lo[k], hi[k] = percentile_ci(S[:, k], level)
    return lo, hi


def bootstrap_estimate(stat: Callable[..., Any], c: np.ndarray, R: np.ndarray, *args: Any) -> Estimate:
    """Estimate(stat(c), percentile CI of stat(R)): c the column sums (K,), R the resampled sums (B x K)."""
    value = finite_or_none(stat(c, *args))
    if R.shape[0] == 0:
        return Estimate(value)
    lo, hi = percentile_ci(stat(R, *args))
    return Estimate(value, finite_or_none(lo), finite_or_none(hi))
