"""Estimates from per-stream column sums: the point value and its percentile-bootstrap 95% CI.

Every statistic of a set is f(c) of its per-stream column sums c = M.sum(0) (SPEC 3); a bootstrap
resample is f(w @ M), so all resamples at once are f(R) with R = W @ M (B x K). The estimate is
value = f(c) and ci = percentile_ci(f(R)) (bootstrap.percentile_ci: non-finite resamples dropped),
as a report.Estimate. Undefined numbers (NaN, inf) become None, as in the JSON report.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.streams.bootstrap import percentile_ci
from specterm.core.report.types import Estimate


def div(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """a / b elementwise as float64, NaN (0/0) or inf (x/0) without a warning: an undefined ratio
    of column sums stays undefined and becomes None in the report (num)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)


def num(x: Any) -> float | None:
    """A finite float, or None (JSON null) for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def null() -> Estimate:
    """An undefined estimate: value and CI null."""
    return Estimate()


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
    value = num(stat(c, *args))
    if R.shape[0] == 0:
        return Estimate(value=value)
    lo, hi = percentile_ci(stat(R, *args))
    return Estimate(value=value, ci=[num(lo), num(hi)])
