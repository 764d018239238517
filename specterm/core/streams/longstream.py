"""One long stream reduced a chunk of positions at a time (issue 39), so that the working arrays of its
sums take memory in proportion to the chunk, not to the stream.

`analysis.position_chunks` groups short streams into chunks of about `budget` positions; a stream
longer than the budget is a chunk of its own, and the functions here reduce it in slices
[lo, lo + budget) of its positions, carrying across each boundary what the slice after it needs:

    runs          the ones since the last zero (the run in progress is closed by a later slice, or
                  is the stream's trailing run); the last bit (the transition pair across the boundary)
    float sums    sum L and sum L^2 over the closed runs continue as one sequential float sum, in the
                  runs' order (`_continued`), as np.bincount adds them in one pass
    integer sums  blocks of the walk at every g, depth counts, bins, transitions, zeros: added
    policies      the heuristic's next block start (possibly past the slice) and its g, each
                  confidence walk's next block start; a slice sees the first zero at or after its end
                  and g_max + 1 confidences past it (policies.long_stream_row, on `slices`)

Every number is the one the reduction of the whole stream at once gives, bit for bit
(tests/test_longstream.py): integer counts are exact in any order, and the float sums are continued
in the original order. Depth counts are counted in closed form per closed run (all its blocks but the
last accept g and are uncut; see `_depth_hists`) instead of from every block, so a run of ones longer
than a slice costs no more than a short one. beta's float sums (sampling.py) are numpy's pairwise sums,
whose tree depends on the whole length: `pairwise_sum` follows numpy's tree down to ranges of at most
`budget` values and lets numpy sum those, so they too have the bits of one pass. Not chunked: the random
shuffles (shuffles > 0, not the default): one draw over the whole set (stats.Shuffler: a 16-bit word per
position of every stream, then corrections drawn over all streams at once, round by round), so the
draws of one stream depend on the others'; `analysis._sums` reduces such a set at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np

from specterm.core.streams import stats as st
from specterm.core.params import GAMMAS, WARMUP_EARLY, WARMUP_LATE

if TYPE_CHECKING:
    from specterm.core.streams.position import PositionSums
    from specterm.core.streams.sampling import SamplingSums
    from specterm.core.streams.steady import SteadySums


def slices(n: int, budget: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) of positions 0..n-1, budget (>= 1) at a time."""
    step = max(int(budget), 1)
    for lo in range(0, int(n), step):
        yield lo, min(lo + step, int(n))


def _continued(acc: float, x: np.ndarray) -> float:
    """acc + x_0 + x_1 + ... added one at a time, left to right (a float sum continued from `acc`; from
    0.0, the bits np.bincount gives the same values in one pass)."""
    if x.size == 0:
        return acc
    return float(np.cumsum(np.concatenate([[acc], np.asarray(x, dtype=np.float64)]))[-1])


def _at_least_j(hist: np.ndarray) -> np.ndarray:
    """From counts of x clipped to 0..G (hist, G + 1 entries): #(x >= j) for j = 1..G."""
    out: np.ndarray = np.cumsum(hist[::-1])[::-1][1:]
    return out


@dataclass
class Walked:
    """The run geometry of one stream, reduced: totals over its positions (see `walk_runs`)."""

    n: int
    ones: int
    n11: int  # pairs (a_t, a_{t+1}) = (1, 1)
    first: int  # a_0 (0 for an empty stream)
    last: int  # a_{n-1}
    runs: int  # closed runs
    L: float  # sum L over closed runs, as one sequential float sum
    L2: float  # sum L^2, likewise
    hist: np.ndarray  # closed runs counted by length
    blocks: np.ndarray  # (len(gammas),) int64 blocks of the walk at each g
    trailing: int
    acc: np.ndarray  # (depth,) int64 depth counts (geometry.depth_counts)
    reach: np.ndarray
    uncut: np.ndarray


def _depth_hists(L: np.ndarray, zero: np.ndarray, n: int, G: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The walk at G over closed runs (L ones closed by the zero at `zero`) of a stream of n positions:
    (blocks that are not their run's last, and per last block the counts of min(x, G) for x = k,
    min(k + 1, n - s), n - s). A run's blocks before its last accept G and end before its zero, so more
    than G positions are left after their start: they count at every depth (geometry.depth_counts)."""
    gp1 = G + 1
    nb = -(-(L + 1) // gp1)
    k = L - gp1 * (nb - 1)
    left = n - (zero - k)
    return (int((nb - 1).sum()), np.bincount(np.minimum(k, G), minlength=gp1),
            np.bincount(np.minimum(np.minimum(k + 1, left), G), minlength=gp1), np.bincount(np.minimum(left, G), minlength=gp1))


def walk_runs(a: np.ndarray, gammas: Sequence[int], depth: int, budget: int) -> Walked:
    """Totals of one stream `a` (0/1) reduced `budget` positions at a time: ones, transitions, closed
    runs (count, sum L, sum L^2, histogram), the walk's blocks at each g of `gammas`, the trailing run,
    and the depth counts at `depth` (geometry.depth_counts of the stream; nothing when depth is 0)."""
    a = np.asarray(a)
    n = int(a.size)
    g = np.asarray(list(gammas), dtype=np.int64)
    blocks = np.zeros(g.size, dtype=np.int64)
    hist = np.zeros(1, dtype=np.int64)
    hists = [np.zeros(depth + 1, dtype=np.int64) for _ in range(3)]
    full = ones = n11 = runs = 0
    L_sum = L2_sum = 0.0
    carry = 0  # ones since the last zero (the run in progress)
    prev = -1  # the bit before the slice
    for lo, hi in slices(n, budget):
        x = a[lo:hi]
        ones += int(np.count_nonzero(x))
        n11 += int(np.count_nonzero(x[:-1] & x[1:])) + int(prev == 1 and x[0] == 1)
        prev = int(x[-1])
        z = np.flatnonzero(x == 0)
        if z.size == 0:
            carry += hi - lo
            continue
        L = np.empty(z.size, dtype=np.int64)
        L[0] = carry + z[0]
        np.subtract(z[1:], z[:-1], out=L[1:])
        L[1:] -= 1
        carry = int(hi - lo - 1 - z[-1])
        runs += L.size
        L_sum = _continued(L_sum, L)
        L2_sum = _continued(L2_sum, L.astype(np.float64) ** 2)
        vals, counts = np.unique(L, return_counts=True)
        if vals[-1] >= hist.size:
            hist = np.concatenate([hist, np.zeros(int(vals[-1]) + 1 - hist.size, dtype=np.int64)])
        hist[vals] += counts
        blocks += (counts[None, :] * (-(-(vals[None, :] + 1) // (g[:, None] + 1)))).sum(axis=1)
        if depth:
            f, *h = _depth_hists(L, lo + z, n, depth)
            full += f
            for acc_h, new in zip(hists, h):
                acc_h += new
    T = carry
    blocks += -(-T // (g + 1))
    if depth and T > 0:  # the trailing run: its last block accepts min(G, rem) with rem positions left
        gp1 = depth + 1
        nt = -(-T // gp1)
        rem = T - gp1 * (nt - 1)
        full += nt - 1
        for acc_h, x_last in zip(hists, (min(depth, rem), min(min(depth, rem) + 1, rem), rem)):
            acc_h[min(x_last, depth)] += 1
    acc, reach, uncut = (_at_least_j(h) + full for h in hists)
    return Walked(n=n, ones=ones, n11=n11, first=int(a[0]) if n else 0, last=int(a[-1]) if n else 0, runs=runs,
                  L=L_sum, L2=L2_sum, hist=hist if runs else np.zeros(0, dtype=np.int64), blocks=blocks, trailing=T,
                  acc=acc, reach=reach, uncut=uncut)


def _transitions(w: Walked) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n11, n1x, n01, n0x, ac_val, ac_def) as 1-element float64 arrays, as geometry.transition_counts and
    stats.stream_sums make them."""
    some = w.n > 0
    n1x = w.ones - w.last if some else 0
    n01 = w.ones - w.first - w.n11 if some else 0
    n0x = max(w.n - 1, 0) - n1x
    n11_, n1x_, n01_, n0x_ = (np.array([v], dtype=np.float64) for v in (w.n11, n1x, n01, n0x))
    defined = (n1x_ > 0) & (n0x_ > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(defined, n11_ / n1x_ - n01_ / n0x_, 0.0)
    return n11_, n1x_, n01_, n0x_, value, defined


def _walk_row(w: Walked, cols: dict[str, int], width: int) -> np.ndarray:
    """A (1 x width) row of sums with the columns every walk fills: n, ones, the transitions and their
    autocorrelation, runs, L, L2 (the rest zero, for the caller)."""
    M = np.zeros((1, width))
    M[:, cols["n"]] = w.n
    M[:, cols["ones"]] = w.ones
    n11, n1x, n01, n0x, value, defined = _transitions(w)
    M[:, cols["n11"]], M[:, cols["n1x"]], M[:, cols["n01"]], M[:, cols["n0x"]] = n11, n1x, n01, n0x
    M[:, cols["ac_val"]] = value
    M[:, cols["ac_def"]] = defined
    M[:, cols["runs"]] = w.runs
    M[:, cols["L"]] = w.L
    M[:, cols["L2"]] = w.L2
    return M


def long_stream_sums(a: np.ndarray, gate_ones: float, gate_n: float, gamma: int, depth_gamma: int, shuffles: int,
                     esb_carry: float, budget: int) -> st.StreamSums:
    """stats.stream_sums of one stream (one row), reduced `budget` positions at a time, with the runs as
    their histogram (StreamSums.histogram_only). shuffles > 0 (one random draw over the set) is not
    reduced here: the caller passes the set at once."""
    if shuffles > 0:
        raise ValueError("random shuffles draw over the whole set at once; reduce the set with stats.stream_sums")
    names = st.sum_columns(depth_gamma)
    cols = {name: i for i, name in enumerate(names)}
    w = walk_runs(a, GAMMAS.tolist(), depth_gamma, budget)
    M = _walk_row(w, cols, len(names))
    M[:, cols["gate_ones"]] = gate_ones
    M[:, cols["gate_n"]] = gate_n
    M[:, [cols[f"blocks_{g}"] for g in GAMMAS]] = w.blocks
    if shuffles == 0:
        M[:, cols["shuf_blocks"]] = np.nan
    else:
        M[:, cols["shuf_blocks"]], esb_carry = st.expected_shuffled_blocks_from(
            np.array([w.n]), np.array([w.ones]), gamma, esb_carry)
    for j in range(1, depth_gamma + 1):
        M[:, cols[f"acc_{j}"]] = w.acc[j - 1]
        M[:, cols[f"reach_{j}"]] = w.reach[j - 1]
        M[:, cols[f"uncut_{j}"]] = w.uncut[j - 1]
    T = float(w.trailing)
    M[:, cols["trail_runs"]] = T > 0
    M[:, cols["trail_L"]] = T
    M[:, cols["trail_L2"]] = np.array([T]) ** 2
    empty = np.zeros(0, np.int64)
    return st.StreamSums(M, cols, gamma, depth_gamma, empty, empty, esb_carry, w.hist)


def long_steady_sums(a: np.ndarray, gamma: int, shuffles: int, start: int, esb_carry: float, budget: int) -> SteadySums:
    """steady.steady_sums of one stream (one row, the exact shuffle control), reduced `budget` positions
    of a[start:] at a time."""
    from specterm.core.streams.steady import COLUMNS, SteadySums

    names = [*COLUMNS, f"blocks_{gamma}", "shuf_blocks"]
    cols = {name: i for i, name in enumerate(names)}
    w = walk_runs(np.asarray(a)[start:], [gamma], 0, budget)
    M = _walk_row(w, cols, len(names))
    M[:, cols[f"blocks_{gamma}"]] = w.blocks[0]
    if shuffles == 0:
        M[:, cols["shuf_blocks"]] = np.nan
    else:
        M[:, cols["shuf_blocks"]], esb_carry = st.expected_shuffled_blocks_from(
            np.array([w.n]), M[:, cols["ones"]].astype(np.int64), gamma, esb_carry)
    return SteadySums(M, cols, gamma, start, esb_carry)


def long_position_sums(a: np.ndarray, t: np.ndarray | None, bin_width: int, n_bins: int, budget: int) -> PositionSums:
    """position.position_sums of one stream (one row, `n_bins` bins), reduced `budget` positions at a
    time; `t`: the absolute position of each bit (None: 0, 1, ...)."""
    from specterm.core.streams.position import WARMUP_COLUMNS, PositionSums, bins_needed, position_columns, set_warmup

    a = np.asarray(a)
    K = int(n_bins)
    span = (int(t[-1]) + 1 if t is not None else a.size) if a.size else 0
    if K < bins_needed(span, bin_width):
        raise ValueError(f"{K} bins of width {bin_width} do not cover position {span - 1}")
    ones_k = np.zeros(K, dtype=np.int64)
    n_k = np.zeros(K, dtype=np.int64)
    early_n = early_ones = late_n = late_ones = 0
    for lo, hi in slices(a.size, budget):
        x = a[lo:hi].astype(bool)
        tt = np.arange(lo, hi) if t is None else np.asarray(t[lo:hi], dtype=np.int64)
        b = tt // bin_width
        n_k += np.bincount(b, minlength=K)
        ones_k += np.bincount(b[x], minlength=K)
        early, late = tt < WARMUP_EARLY, tt >= WARMUP_LATE
        early_n += int(np.count_nonzero(early))
        early_ones += int(np.count_nonzero(x & early))
        late_n += int(np.count_nonzero(late))
        late_ones += int(np.count_nonzero(x & late))
    cols = position_columns(K)
    M = np.zeros((1, 2 * K + len(WARMUP_COLUMNS)))
    M[0, :K] = ones_k
    M[0, K:2 * K] = n_k
    set_warmup(M, cols, [early_ones], [early_n], [late_ones], [late_n])
    return PositionSums(M, cols, bin_width, K)


# ------------------------------------------------------------------ the sampling sums ---

PW_BLOCK = 128  # numpy's PW_BLOCKSIZE: a pairwise sum of at most this many values is one unrolled loop


def pairwise_sum(values: Callable[[int, int], np.ndarray], lo: int, hi: int, budget: int) -> float:
    """numpy's pairwise sum of x[lo:hi] (what np.add.reduce adds to its first value), with x[a:b]
    given by values(a, b) a piece at a time: numpy halves a range of more than PW_BLOCK values at
    n2 = n // 2 rounded down to a multiple of 8 and adds the halves' sums; this does the same until a
    range holds at most `budget` values, which numpy sums itself (from -0.0, which adds nothing to
    any float), so the tree, and every rounding, is numpy's."""
    n = hi - lo
    if n <= max(int(budget), PW_BLOCK):
        return float(np.add.reduce(values(lo, hi), initial=-0.0)) if n else -0.0
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(values, lo, lo + n2, budget) + pairwise_sum(values, lo + n2, hi, budget)


def _span_sum(values: Callable[[int, int], np.ndarray], lo: int, hi: int, budget: int) -> float:
    """np.add.reduceat's sum of the span x[lo:hi] (hi > lo): its first value plus the pairwise sum of the rest."""
    first = float(values(lo, lo + 1)[0])
    return first if hi - lo == 1 else first + pairwise_sum(values, lo + 1, hi, budget)


def long_sampling_sums(beta: np.ndarray | None, budget: int) -> SamplingSums:
    """sampling.sampling_sums' row (beta_sum, beta_n, bac_val, bac_def) of one stream's beta, with every
    sum taken in numpy's pairwise order a piece of `budget` values at a time (`pairwise_sum`): the sum,
    then the moments of the values centred on its mean (sampling._lag1). The changes between
    neighbours are counted (0/1 values: their float sum is that count). None: a stream without beta."""
    from specterm.core.streams.sampling import COLS, SamplingSums

    b = np.asarray(beta if beta is not None else np.zeros(0))
    n = int(b.size)

    def v(lo: int, hi: int) -> np.ndarray:
        return b[lo:hi].astype(np.float64)

    total = _span_sum(v, 0, n, budget) if n else 0.0
    out = np.array([[total, float(n), 0.0, 0.0]])
    m = n - 1
    if m <= 0:
        return SamplingSums(out, COLS)
    mean = np.float64(total) / np.int64(n)

    def c(lo: int, hi: int) -> np.ndarray:
        out_: np.ndarray = b[lo:hi].astype(np.float64) - mean
        return out_

    def cc(lo: int, hi: int) -> np.ndarray:
        x = c(lo, hi)
        out_: np.ndarray = x * x
        return out_

    def cross(lo: int, hi: int) -> np.ndarray:
        x = c(lo, hi + 1)
        out_: np.ndarray = x[:-1] * x[1:]
        return out_

    steps = 0
    first_step = last_step = 0
    for lo, hi in slices(m, budget):
        x = c(lo, hi + 1)
        moved = x[:-1] != x[1:]
        steps += int(np.count_nonzero(moved))
        if lo == 0:
            first_step = int(moved[0])
        last_step = int(moved[-1])
    x_moves, y_moves = steps - last_step, steps - first_step
    with np.errstate(divide="ignore", invalid="ignore"):
        sx, sy = _span_sum(c, 0, m, budget), _span_sum(c, 1, n, budget)
        sxx = np.float64(_span_sum(cc, 0, m, budget)) - sx * sx / m
        syy = np.float64(_span_sum(cc, 1, n, budget)) - sy * sy / m
        sxy = np.float64(_span_sum(cross, 0, m, budget)) - sx * sy / m
    defined = n >= 3 and x_moves > 0 and y_moves > 0 and sxx > 0 and syy > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0) if defined else 0.0
    out[0, 2], out[0, 3] = rho * defined, float(defined)
    return SamplingSums(out, COLS)
