"""The steady state (SPEC 4): autocorrelation, run-length dispersion and the deficit split on the
positions t >= 32 of each stream only, since a warm-up trend (streams that start hard and turn easy)
feeds p11-p10 and the temporal deficit too (SPEC 3, acceptance by position).

Each stream a is cut to a[32:] (its analysed bits from absolute position t = 32 of y on) and the
statistics are stats.py's, on a reduced per-stream sums matrix with the same column names:

    n, ones, n11, n1x, n01, n0x, ac_val, ac_def, runs, L, L2, blocks_<gamma>, shuf_blocks

so stats.autocorr, autocorr_pooled, dispersion_ratio and deficit apply unchanged, and the bootstrap
uses the report's weights W (the same streams, the same resamples). Choices where the SPEC is silent:

- A stream shorter than 33 positions has an empty steady part: it stays a row (zeros), so the rows
  line up with the set's W; it adds nothing to any sum.
- Transitions and runs are those within t >= 32: the pair (a_31, a_32) is not counted, and a run of
  ones that started before t = 32 counts from t = 32 (the cut is a stream start for the run-length
  statistics, as the stream's real start is).
- The shuffles permute each cut stream in place, with the seed of the set's own shuffles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specterm.core import stats as st
from specterm.core.geometry import (
    concat_streams,
    segment_runs,
    transition_counts,
    walk_blocks,
)
from specterm.core.params import SHUFFLES

STEADY_FROM = 32
COLUMNS = ("n", "ones", "n11", "n1x", "n01", "n0x", "ac_val", "ac_def", "runs", "L", "L2")


@dataclass(frozen=True)
class SteadySums:
    """M (N x K) of the steady parts a[start:], columns COLUMNS + blocks_<gamma> + shuf_blocks."""

    M: np.ndarray
    cols: dict[str, int]
    gamma: int
    start: int


def steady_sums(a: Sequence[np.ndarray], gamma: int, shuffles: int = SHUFFLES, seed: int = 0,
                start: int = STEADY_FROM) -> SteadySums:
    """Per-stream sums of the steady parts a_i[start:] (see the module docstring)."""
    names = [*COLUMNS, f"blocks_{gamma}", "shuf_blocks"]
    cols = {name: i for i, name in enumerate(names)}
    cut = [np.asarray(x)[start:] for x in a]
    c = concat_streams(cut)
    N = c.starts.size
    M = np.zeros((N, len(names)))
    if N == 0:
        return SteadySums(M, cols, gamma, start)
    seg = c.seg
    M[:, cols["n"]] = c.lengths
    M[:, cols["ones"]] = np.bincount(seg, weights=c.bits, minlength=N)
    n11, n1x, n01, n0x = transition_counts(c, seg)
    M[:, cols["n11"]], M[:, cols["n1x"]], M[:, cols["n01"]], M[:, cols["n0x"]] = n11, n1x, n01, n0x
    defined = (n1x > 0) & (n0x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        M[:, cols["ac_val"]] = np.where(defined, n11 / n1x - n01 / n0x, 0.0)
    M[:, cols["ac_def"]] = defined
    runs = segment_runs(c.bits, c.starts, c.ends, seg_of=lambda z: seg[z])
    M[:, cols["runs"]] = np.bincount(runs.seg, minlength=N)
    M[:, cols["L"]] = np.bincount(runs.seg, weights=runs.L, minlength=N)
    M[:, cols["L2"]] = np.bincount(runs.seg, weights=runs.L.astype(np.float64) ** 2, minlength=N)
    M[:, cols[f"blocks_{gamma}"]] = walk_blocks(runs, N, gamma)
    M[:, cols["shuf_blocks"]] = st.shuffled_blocks(c, gamma, shuffles, seed)
    return SteadySums(M, cols, gamma, start)


def temporal(c: np.ndarray, cols: dict[str, int], gamma: int) -> np.ndarray:
    """The temporal part (E_shuf - E_true) / E_iid of the steady parts (stats.deficit)."""
    return np.asarray(st.deficit(c, cols, gamma)[2], dtype=np.float64)
