"""Bootstrap over streams as one matrix product: multinomial weights (B x N) @ per-stream sums (N x K).

Every headline statistic is a ratio of sums, or a mean, of per-stream quantities, so a resample
is a reweighting of streams: W[b, i] = how often stream i is drawn in resample b (rows sum to N).
"""

from __future__ import annotations

import numpy as np


def multinomial_weights(n_streams: int, boot: int = 2000, seed: int = 0) -> np.ndarray:
    """W (boot x n_streams) float64: counts of each stream in each percentile-bootstrap resample."""
    if n_streams == 0 or boot <= 0:
        return np.zeros((max(boot, 0), n_streams))
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_streams, np.full(n_streams, 1.0 / n_streams), size=boot).astype(np.float64)


def resampled_sums(sums: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B x K) = weights (B x N) @ sums (N x K): the set's column sums in every resample."""
    return weights @ np.asarray(sums, dtype=np.float64)


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the finite bootstrap samples (NaN, NaN when none is finite)."""
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.percentile(s, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi))
