"""Acceptance by position in the continuation, and the warm-up gain (SPEC 3, "Acceptance by position").

Per-stream sums, as in stats.py: a matrix M (N streams x K columns) whose column sums c = M.sum(0)
give every number as a ratio of sums, and whose bootstrap is f(W @ M) (estimate.py). On the analysed
stream a (bits before the first gate failure), with t = 0, 1, ... the absolute position in y:

    ones_k, n_k      accepted positions and positions with t in bin k = [k w, (k+1) w), w = bin width
    early_ones/_n    accepted positions and positions with t < 16          (warm-up streams only)
    late_ones/_n     accepted positions and positions with t >= 32         (warm-up streams only)
    warmup           1 for a warm-up stream: one that reaches t = 32 (n >= 33), else 0
    gain             alpha_s(t >= 32) - alpha_s(t < 16) = late_ones/late_n - early_ones/early_n of the
                     stream itself (warm-up streams only, else 0)

    alpha_k      = sum_i ones_ik / sum_i n_ik         over the streams that reach bin k
    warm-up gain = sum_i gain_i / sum_i warmup_i      the mean over the streams that reach t = 32 of
                                                      [alpha_s(t >= 32) - alpha_s(t < 16)], each stream
                                                      weighted equally (SPEC 3)

Choices where the SPEC is silent:

- A stream counts in bin k when it reaches the bin (n_ik > 0), with the positions it has there; a
  bin's "n" is its positions, "streams" the streams that reach it. Both terms of alpha_k are pooled
  over positions (ratio of sums), like alpha itself.
- The warm-up gain is per stream and paired (SPEC 3): each stream that reaches t = 32 (n >= 33)
  contributes its own late-minus-early difference, and the set's gain is their unweighted mean (a
  ratio of sums of per-stream columns, so it bootstraps like the rest). A set of constant streams
  gives exactly 0 whatever their lengths (a ratio of pooled sums would let a long all-ones stream
  outweigh a short all-zeros one late and not early). Streams shorter than 33 count in the bins but
  not in the gain. No warm-up stream: the gain is null.
- Warm-up thresholds (16, 32) are the SPEC's and do not move with the bin width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.streams.estimate import bootstrap_estimate, div, null, num, percentile_cis
from specterm.core.params import WARMUP_EARLY, WARMUP_LATE
from specterm.core.report.types import Estimate, Position, PositionBin

BIN_WIDTH = 16
MAX_BINS = 64  # bins of a report before the width grows past BIN_WIDTH (bin_width_for)
WARMUP_COLUMNS = ("early_ones", "early_n", "late_ones", "late_n", "warmup", "gain")


def bin_width_for(max_length: int, base: int = BIN_WIDTH, max_bins: int = MAX_BINS) -> int:
    """The bin width of a report whose longest analysed stream has `max_length` positions: `base`
    (16, SPEC 3) while ceil(max_length / base) <= max_bins, else the smallest multiple of `base`
    that covers max_length in at most max_bins bins.

    Choice where the SPEC is silent: the SPEC's width 16 assumes continuations of ~128 tokens. One
    imported stream of 30M positions would otherwise make 1.9M bins, and the bootstrap of the bins
    a dense B x 2K matrix (GBs, minutes) for a table no one can read; with the cap it costs what
    many short streams of the same positions cost. Runs up to max_bins * base positions (1024)
    keep width 16 exactly; the report states the width it used (bin_width).
    """
    return int(base) * max(1, -(-bins_needed(max_length, base) // int(max_bins)))


def bins_needed(max_length: int, bin_width: int = BIN_WIDTH) -> int:
    """Bins [0, w), [w, 2w), ... that cover positions t = 0 .. max_length - 1: ceil(max_length / w)."""
    return -(-int(max_length) // int(bin_width))


@dataclass(frozen=True)
class PositionSums:
    """M (N x (2 n_bins + 6)) with columns ones_0..ones_{K-1}, n_0..n_{K-1}, then WARMUP_COLUMNS."""

    M: np.ndarray
    cols: dict[str, int]
    bin_width: int
    n_bins: int


def position_columns(n_bins: int) -> dict[str, int]:
    names = [f"ones_{k}" for k in range(n_bins)] + [f"n_{k}" for k in range(n_bins)] + list(WARMUP_COLUMNS)
    return {name: i for i, name in enumerate(names)}


def position_sums(a: Sequence[np.ndarray], bin_width: int = BIN_WIDTH, n_bins: int | None = None,
                  t: Sequence[np.ndarray | None] | None = None) -> PositionSums:
    """Per-stream position sums of the analysed streams `a` (bits on Stream.kept).

    `n_bins` fixes the number of bins (so that the sets of one report stack into the pooled set);
    by default just enough for the longest stream. Vectorised over all positions: t = global index
    minus the stream's start, bin = t // w, one bincount per column family.

    `t` gives, per stream, the absolute position of each analysed bit (Stream.kept_t) where positions
    were excluded one by one (a repaired stream); None (or a None entry) means t = 0, 1, ... A stream
    counts in the warm-up gain when it has analysed positions at t < 16 and at t >= 32.
    """
    if bin_width < 1:
        raise ValueError(f"bin width must be >= 1, got {bin_width}")
    if t is not None and any(x is not None for x in t):
        return _position_sums_at(a, [np.arange(np.asarray(x).size) if tx is None else np.asarray(tx, dtype=np.int64)
                                     for x, tx in zip(a, t, strict=True)], bin_width, n_bins)
    lengths = np.array([np.asarray(x).size for x in a], dtype=np.int64)
    N = lengths.size
    needed = bins_needed(int(lengths.max()) if N else 0, bin_width)
    K = needed if n_bins is None else int(n_bins)
    if K < needed:
        raise ValueError(f"{K} bins of width {bin_width} do not cover a stream of {int(lengths.max())} positions")
    cols = position_columns(K)
    M = np.zeros((N, 2 * K + len(WARMUP_COLUMNS)))
    if N == 0:
        return PositionSums(M, cols, bin_width, K)
    # Counts from one cumulative sum of the bits, read at the bin bounds (no pass per column family):
    # ones in positions [lo, hi) of the concatenation = cs[hi] - cs[lo]; positions per bin in closed form.
    bits = np.concatenate([np.asarray(x).ravel() for x in a])
    cs = np.zeros(bits.size + 1, dtype=np.int64)
    np.cumsum(bits, dtype=np.int64, out=cs[1:])
    starts = np.cumsum(lengths) - lengths
    edge = np.minimum(np.arange(K + 1, dtype=np.int64) * bin_width, lengths[:, None])  # N x (K + 1), within the stream
    at = cs[starts[:, None] + edge]
    M[:, :K] = np.diff(at, axis=1)
    M[:, K:2 * K] = np.diff(edge, axis=1)
    warm = lengths > WARMUP_LATE
    early = np.minimum(lengths, WARMUP_EARLY)
    late = np.minimum(lengths, WARMUP_LATE)
    ends = starts + lengths
    M[:, cols["early_ones"]] = (cs[starts + early] - cs[starts]) * warm
    M[:, cols["early_n"]] = early * warm
    M[:, cols["late_ones"]] = (cs[ends] - cs[starts + late]) * warm
    M[:, cols["late_n"]] = (lengths - late) * warm
    M[:, cols["warmup"]] = warm
    with np.errstate(divide="ignore", invalid="ignore"):
        own = (M[:, cols["late_ones"]] / M[:, cols["late_n"]]) - (M[:, cols["early_ones"]] / M[:, cols["early_n"]])
    M[:, cols["gain"]] = np.where(warm, own, 0.0)
    return PositionSums(M, cols, bin_width, K)


def _position_sums_at(a: Sequence[np.ndarray], t: Sequence[np.ndarray], bin_width: int, n_bins: int | None) -> PositionSums:
    """position_sums with each bit at its given absolute position t (one bincount per column family over
    (stream, bin) pairs)."""
    lengths = np.array([np.asarray(x).size for x in a], dtype=np.int64)
    N = lengths.size
    bits = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in a]) if N else np.zeros(0)
    ts = np.concatenate([np.asarray(x, dtype=np.int64).ravel() for x in t]) if N else np.zeros(0, dtype=np.int64)
    if ts.size != bits.size:
        raise ValueError("t must give one position per analysed bit")
    needed = bins_needed(int(ts.max()) + 1 if ts.size else 0, bin_width)
    K = needed if n_bins is None else int(n_bins)
    if K < needed:
        raise ValueError(f"{K} bins of width {bin_width} do not cover position {int(ts.max())}")
    cols = position_columns(K)
    M = np.zeros((N, 2 * K + len(WARMUP_COLUMNS)))
    sid = np.repeat(np.arange(N), lengths)
    cell = sid * K + ts // bin_width
    M[:, :K] = np.bincount(cell, weights=bits, minlength=N * K).reshape(N, K)
    M[:, K:2 * K] = np.bincount(cell, minlength=N * K).reshape(N, K)
    early, late = ts < WARMUP_EARLY, ts >= WARMUP_LATE
    set_warmup(M, cols, np.bincount(sid, weights=bits * early, minlength=N), np.bincount(sid, weights=early, minlength=N),
               np.bincount(sid, weights=bits * late, minlength=N), np.bincount(sid, weights=late, minlength=N))
    return PositionSums(M, cols, bin_width, K)


def set_warmup(M: np.ndarray, cols: dict[str, int], early_ones: ArrayLike, early_n: ArrayLike, late_ones: ArrayLike,
               late_n: ArrayLike) -> None:
    """Fill the warm-up columns of M (one row per stream) from each stream's counts before WARMUP_EARLY and
    from WARMUP_LATE on: zero for a stream that does not reach both; gain = alpha_s(late) - alpha_s(early)."""
    early_n, late_n = np.asarray(early_n, dtype=np.float64), np.asarray(late_n, dtype=np.float64)
    warm = (early_n > 0) & (late_n > 0)
    M[:, cols["early_ones"]] = np.asarray(early_ones, dtype=np.float64) * warm
    M[:, cols["early_n"]] = early_n * warm
    M[:, cols["late_ones"]] = np.asarray(late_ones, dtype=np.float64) * warm
    M[:, cols["late_n"]] = late_n * warm
    M[:, cols["warmup"]] = warm
    with np.errstate(divide="ignore", invalid="ignore"):
        own = (M[:, cols["late_ones"]] / M[:, cols["late_n"]]) - (M[:, cols["early_ones"]] / M[:, cols["early_n"]])
    M[:, cols["gain"]] = np.where(warm, own, 0.0)


# ------------------------------------------------ statistics of column sums c (..., K) ---


def bin_alpha(c: np.ndarray, cols: dict[str, int], k: int) -> np.ndarray:
    """alpha_k = sum ones_k / sum n_k: acceptance at positions t in [k w, (k+1) w)."""
    return div(c[..., cols[f"ones_{k}"]], c[..., cols[f"n_{k}"]])


def bin_alphas(c: np.ndarray, n_bins: int) -> np.ndarray:
    """alpha_k for every bin k at once, (..., n_bins): columns ones_0.. over columns n_0.. (position_columns order)."""
    return div(c[..., :n_bins], c[..., n_bins:2 * n_bins])


def warmup_gain(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """mean over the streams that reach t = 32 of alpha_s(t >= 32) - alpha_s(t < 16): sum gain / sum warmup."""
    return div(c[..., cols["gain"]], c[..., cols["warmup"]])


# ----------------------------------------------------------------------- the report ---


def position_report(ps: PositionSums, W: np.ndarray, R: np.ndarray | None = None) -> Position:
    """Alpha by position bin (only bins some stream reaches) and the warm-up gain, with percentile-bootstrap CIs.

    W: bootstrap weights (B x N) over the same streams as ps.M; R = W @ ps.M when the caller has it.
    """
    cols, K = ps.cols, ps.n_bins
    c = ps.M.sum(axis=0)
    R = W @ ps.M if R is None else R
    n_k = c[K:2 * K]
    reach = (ps.M[:, K:2 * K] > 0).sum(axis=0)
    last = int(np.flatnonzero(n_k > 0)[-1]) + 1 if (n_k > 0).any() else 0
    point = bin_alphas(c, K)[:last]
    lo, hi = percentile_cis(bin_alphas(R, K)[:, :last]) if R.shape[0] else (np.full(last, np.nan),) * 2
    bins = [PositionBin(start=k * ps.bin_width, alpha=Estimate(value=num(point[k]), ci=[num(lo[k]), num(hi[k])]),
                        n=int(n_k[k]), streams=int(reach[k])) for k in range(last)]
    n_warm = int(c[cols["warmup"]])
    gain = bootstrap_estimate(warmup_gain, c, R, cols) if n_warm else null()
    return Position(bin_width=ps.bin_width, bins=bins, warmup_gain=gain, warmup_streams=n_warm)
