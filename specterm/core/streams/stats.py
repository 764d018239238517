"""SPEC section 3 as per-stream sums: one matrix M (N streams x K columns) per set of streams.

Every statistic of a set is a function of the column sums c = M.sum(0) (a ratio of sums, or a mean
of per-stream quantities written as sum(x_i) / sum(1_i)). The point estimate is f(M.sum(0)); a
bootstrap resample is f(w @ M) with w a row of multinomial weights, so all resamples at once are
f(W @ M) (SPEC 3, bootstrap). The statistic functions below therefore take c of shape (..., K).

Columns of M (per stream i, on the analysed stream a = bits up to the first gate failure):

    n, ones                    positions and accepted positions (alpha = sum ones / sum n)
    gate_ones, gate_n          gate ones and positions over the *whole* stream (gate_rate)
    n11, n1x, n01, n0x         transition counts: a_t=1 -> a_{t+1}=1, a_t=1 -> any, 0 -> 1, 0 -> any
    ac_val, ac_def             (p11 - p10) * defined, defined = (n1x > 0 and n0x > 0)
    runs, L, L2                closed runs (trailing run censored): count, sum L, sum L^2
    blocks_g (g = 1..32)       blocks of the walk at draft length g (tokens of the walk are always n)
    shuf_blocks                expected blocks at the deficit's gamma over in-place orderings (exact;
                               or the mean over S shuffles with --shuffles S)
    acc_j, reach_j, uncut_j    per-depth counts at depth_gamma, j = 1..depth_gamma (see depth_counts)
    trail_runs, trail_L, trail_L2  the trailing run T (ones after the last zero): [T > 0], T, T^2
                               (dispersion_ratio_trailing: runs counted with the censored trailing one)

Choices and caveats (where the SPEC is silent):

- Shuffles: by default (params.EXACT) shuf_blocks is the exact expectation of the blocks over all
  in-place orderings of each stream (`expected_shuffled_blocks`): E_shuf, hetero and temporal then
  carry no Monte-Carlo noise and are identical for every seed. With `--shuffles S` (S > 0), for
  comparison, each stream is permuted in place S times (fixed seed), all streams of a set at once:
  per shuffle, the zeros of every stream are drawn as a uniform subset of its positions (Shuffler:
  i.i.d. marks, then a uniform thinning to exactly m). This replaced one sort of random keys
  within streams per shuffle (specterm 950a878..2d35d06), which replaced rng.permuted per group of
  equal-length streams (<= 950a878): the law (a uniform permutation of each stream) is the same each
  time, the random stream is not, so E_shuf, hetero and temporal moved by their Monte Carlo error
  for a given seed. Tokens of a stream are n under any order, so the per-stream shuffle
  quantity is the mean block count over the S shuffles, and E_shuf = sum n / sum mean_blocks.
  hetero = 1 - E_shuf/E_iid and temporal = (E_shuf - E_true)/E_iid, so total = hetero + temporal
  holds exactly (in every bootstrap resample too).
- Per depth: a block counts at depth j only when at least j positions of its stream are left
  (n - s >= j); blocks cut earlier by the end of the stream are censored at that depth.
- Stream ends: the walk's last block of each stream is cut by the end (fewer tokens, one block),
  which lowers E_true by about E/n relative (~1.5% at n = 128, gamma = 8). The shuffles keep n,
  so this lands in hetero, never in temporal.
- The per-stream p11 - p10 has a finite-length bias of about -1/n under i.i.d. acceptance
  (-0.008 at n = 128); the pooled version does not.

Length: the sums matrix's every column, the shuffle control that fills one of them (random shuffles and
their exact expectation), and the statistics read from the column sums, in one place, so a column and
the statistic over it cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.estimate import div
from specterm.core.streams.geometry import (
    Concat,
    concat_streams,
    depth_counts,
    segment_runs,
    stream_totals,
    zeros_by_stream,
    transition_counts,
    walk_blocks_many,
)
from specterm.core.params import GAMMA_DEFAULT, GAMMAS, SHUFFLES

if TYPE_CHECKING:
    from specterm.core.store import Stream


# ------------------------------------------------------------------------- shuffles ---


def _mark_thresholds(n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per stream, t (uint16) with P(u <= t) = (t + 1) / 2^16 about m / n for a uniform 16-bit u
    (any value gives the same law, see Shuffler; m / n makes the correction small)."""
    q = m / np.maximum(n, 1).astype(np.float64)
    t: np.ndarray = np.clip(np.round(q * 65536.0) - 1.0, 0, 65535).astype(np.uint16)
    return t


def distinct_ranks(need: np.ndarray, size: np.ndarray, base: np.ndarray, domain: int,
                   rng: np.random.Generator) -> np.ndarray:
    """For every stream i, need[i] distinct ranks drawn uniformly from 0..size[i]-1 (a uniform subset),
    returned as base[i] + rank (indices into a domain of `domain` items where stream i owns
    base[i]..base[i]+size[i]-1), in no particular order.

    Ranks are drawn i.i.d. uniform and drawn again where repeated until need[i] distinct ones are
    found: the distinct values of an i.i.d. uniform sequence, stopped when there are need[i] of them,
    are a uniform need[i]-subset (the law is invariant under relabelling the values).
    """
    need = need.copy()
    taken = np.zeros(domain, dtype=bool)
    stamp = np.empty(domain, dtype=np.int64)
    out = []
    while (todo := np.flatnonzero(need)).size:
        who = np.repeat(todo, need[todo])
        idx = base[who] + rng.integers(0, size[who])
        fresh = ~taken[idx]
        idx, who = idx[fresh], who[fresh]
        order = np.arange(idx.size)
        stamp[idx] = order
        first = stamp[idx] == order  # one of each repeated value
        idx = idx[first]
        taken[idx] = True
        need -= np.bincount(who[first], minlength=need.size)
        out.append(idx)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


class Shuffler:
    """In-place shuffles of every stream of `c` at once, one copy per `draw()` (zeros) or `copy()` (bits).

    A uniform permutation of a stream's bits in place is a uniform arrangement of its m zeros among
    its n positions, i.e. a uniform m-subset of positions for the zeros. Drawn per copy, all
    streams at once, without sorting (exact, not approximate):

    1. mark every position independently with probability q ~ m / n (its stream's q, a 16-bit
       threshold on one random 16-bit word per position). Given its count j, the marked set of a
       stream is a uniform j-subset (i.i.d. marks are exchangeable), whatever q is;
    2. j > m: unmark a uniform (j - m)-subset of the marked positions; j < m: mark a uniform
       (m - j)-subset of the unmarked ones (`distinct_ranks`; the r-th unmarked position is found
       from the marked ones by one search). Either way the m marks are a uniform m-subset: each
       m-subset arises from exactly C(n - m, j - m) (resp. C(m, m - j)) equally likely pairs
       (j-subset, correction), for every j.

    The zeros of the shuffled stream are the marked positions. Cost: one random 16-bit word and a
    comparison per position, then work per zero and per corrected mark (about 0.8 sqrt(m (n - m) / n)
    per stream), against a sort of 64-bit keys per position before (stats.py <= 2d35d06; the random
    stream differs, the law is the same).
    """

    def __init__(self, c: Concat, rng: np.random.Generator) -> None:
        self.c, self.rng = c, rng
        n = c.lengths.astype(np.int64)
        self.m = n - stream_totals(c.bits, c.starts, c.ends)
        self.t = np.repeat(_mark_thresholds(n, self.m), n)
        self.bounds = np.append(c.starts, c.bits.size)
        self.has = np.flatnonzero(self.m > 0)  # the streams with a zero, and where their zeros begin in a copy
        self.first = (np.cumsum(self.m) - self.m)[self.has]

    def _marks(self, size: int) -> np.ndarray:
        """`size` uniform 16-bit words (the bit generator's raw 64-bit output, four words each)."""
        return self.rng.bit_generator.random_raw(-(-size // 4)).view(np.uint16)[:size]

    def draw(self) -> np.ndarray:
        """One shuffled copy as the global positions of its zeros, ascending (stream i holds exactly
        m[i] of them, so they are grouped by stream with offsets cumsum(m) - m)."""
        c, m = self.c, self.m
        marked = self._marks(self.t.size) <= self.t
        z = np.flatnonzero(marked)
        edges = np.searchsorted(z, self.bounds)
        counts = np.diff(edges)
        over = counts - m
        if not over.any():
            return z
        drop = distinct_ranks(np.maximum(over, 0), counts, edges[:-1], z.size, self.rng)
        add = distinct_ranks(np.maximum(-over, 0), c.lengths - counts, c.starts - edges[:-1],
                             c.bits.size - z.size, self.rng)
        # the R-th unmarked position (0-based, global) is R + #{k: z[k] - k <= R}
        add += np.searchsorted(z - np.arange(z.size), add, side="right")
        marked[z[drop]] = False  # the corrections on the marks, then the zeros read off in order
        marked[add] = True
        return np.flatnonzero(marked)

    def copy(self) -> np.ndarray:
        """One shuffled copy of c.bits (a new uint8 array)."""
        out = np.ones(self.c.bits.size, dtype=np.uint8)
        out[self.draw()] = 0
        return out

    def blocks(self, gamma: int) -> np.ndarray:
        """Per stream, the walk's blocks at gamma on one shuffled copy, from its zeros:
        m + sum over closed runs floor(L/(gamma+1)) + ceil(T/(gamma+1)) (= geometry.walk_blocks)."""
        c, m, gp1, has, first = self.c, self.m, gamma + 1, self.has, self.first
        z = self.draw()
        L = np.empty_like(z)  # L = z - previous zero (or the stream's start - 1) - 1
        np.subtract(z[1:], z[:-1], out=L[1:])
        L[first] = z[first] - (c.starts[has] - 1)
        L -= 1
        long = np.flatnonzero(L >= gp1)  # floor(L / (g + 1)) > 0 only there (few runs at usual alpha and g)
        owner = has[np.searchsorted(first, long, side="right") - 1]
        closed = np.bincount(owner, weights=L[long] // gp1, minlength=m.size).astype(np.int64)
        last_zero = c.starts - 1
        last_zero[has] = z[first + m[has] - 1]
        out: np.ndarray = (closed + m + (-(-(c.ends - 1 - last_zero) // gp1))).astype(np.float64)
        return out


def shuffle_streams(c: Concat, copies: int = 1, seed: int = 0) -> np.ndarray:
    """(copies x total positions): each copy permutes every stream in place (keeps its own alpha)."""
    shuffler = Shuffler(c, np.random.default_rng(seed))
    out = np.empty((copies, c.bits.size), dtype=np.uint8)
    for i in range(copies):
        out[i] = shuffler.copy()
    return out


# Terms per group of streams in expected_shuffled_blocks (the per-term arrays of a group stay in cache).
ESB_CHUNK = 1 << 15
ESB_TABLE_MAX = 1 << 16  # streams up to this length look their logs up in a table (expected_shuffled_blocks_from)


def expected_shuffled_blocks(n: np.ndarray, k: np.ndarray, gamma: int) -> np.ndarray:
    """Per stream: the expected blocks of the walk at gamma over all orderings of its bits
    (`expected_shuffled_blocks_from` of these streams alone, from a running sum of 0)."""
    return expected_shuffled_blocks_from(n, k, gamma)[0]


def expected_shuffled_blocks_from(n: np.ndarray, k: np.ndarray, gamma: int, carry: float = 0.0) -> tuple[np.ndarray, float]:
    """(per stream: the expected blocks of the walk at gamma over all orderings of its bits (n positions,
    k ones, m = n - k zeros), i.e. the mean of stats.shuffled_blocks as S -> infinity.

    A uniformly random ordering makes the run lengths (L_1..L_m closed by the zeros, T trailing) a
    uniformly random composition of k into m + 1 parts (stars and bars), each part with the marginal
    P(l) = C(k - l + m - 1, m - 1) / C(k + m, m), l = 0..k, so (SPEC 2's closed form)

        E[blocks] = m sum_l P(l) ceil((l + 1)/(g + 1)) + sum_l P(l) ceil(l/(g + 1)).

    P(0) = m / (k + m) and P(l + 1) / P(l) = (k - l) / (k - l + m - 1), summed in logs per stream, all
    streams at once (sum of (k + 1) terms). m = 0: ceil(k/(g + 1)); k = 0: m.

    `carry`: the running sum of the log steps left by the streams before these (0 for the first),
    returned with the blocks for the streams after them: streams reduced in chunks, each from the
    carry of the one before, give every number the bits of one pass over them all.
    """
    n = np.asarray(n, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    m = n - k
    gp1 = gamma + 1
    out = np.where(m == 0, -(-k // gp1), 0).astype(np.float64)
    mix = np.flatnonzero((m > 0) & (k > 0))
    out[(m > 0) & (k == 0)] = m[(m > 0) & (k == 0)]
    if mix.size == 0:
        return out, carry
    kk_all, mm_all = k[mix], m[mix]
    # Logs of the integers 1..max n are looked up in a table when the streams are short (the same np.log
    # of the same float64 values, so the same bits as taking them term by term, which a long stream
    # does: its table would take 8 bytes a position); log P(0) once per stream.
    table = int((kk_all + mm_all).max()) < ESB_TABLE_MAX
    with np.errstate(divide="ignore"):  # log 0 = -inf sits at index 0, never looked up (num_, den >= 1)
        log_int = np.log(np.arange(int((kk_all + mm_all).max()) + 1 if table else 0, dtype=np.int64).astype(np.float64))
    logp0 = np.log(mm_all / (kk_all + mm_all))
    terms_all = kk_all + 1
    # The terms of all streams end to end, ESB_CHUNK at a time (a stream with more terms spans several
    # ranges), so that the per-term arrays stay in cache (2x faster at 2000 streams of ~1000) and take
    # memory by the range, not by the stream. The running sum of the log steps is one sequential float
    # sum over all terms in stream order, carried from range to range; a stream that continues into the
    # next range carries its running sum at its first term (`base`) and its two sums of p-weighted
    # ceilings, which np.bincount continues one term at a time as it adds them in one pass (the carried
    # sum enters first, 0 + it = it), so every number has the same bits as in one pass over all streams
    # (tests/test_steady.py against that form, tests/test_longstream.py across ranges).
    ends = np.cumsum(terms_all)
    begins = ends - terms_all
    total = int(ends[-1])
    res = np.empty(mix.size)
    base = 0.0
    part = np.zeros(2)  # the continuing stream's sums so far (closed, trailing)
    # Per term, by repeats of per-stream values (cheaper than gathering them by `seg`): l, k - l and
    # k - l + m - 1; the ceilings ceil((l + 1)/(g + 1)) and ceil(l/(g + 1)) looked up by l for short
    # streams (the same integers as float64, so the same products p * ceiling).
    k_at = kk_all + begins  # k - l = k_at - t at term t of the stream
    den_at = k_at + mm_all - 1  # k - l + m - 1 = den_at - t
    ceil_tab = (np.stack([-(-(np.arange(int(kk_all.max()) + 1) + shift) // gp1) for shift in (1, 0)]).astype(np.float64)
                if table else None)
    for t0 in range(0, total, ESB_CHUNK):
        t1 = min(t0 + ESB_CHUNK, total)
        lo = int(np.searchsorted(ends, t0, side="right"))  # the streams with terms in [t0, t1)
        hi = int(np.searchsorted(ends, t1 - 1, side="right")) + 1
        cont = begins[lo] < t0  # stream lo began in an earlier range
        mm = mm_all[lo:hi]
        counts = np.minimum(ends[lo:hi], t1) - np.maximum(begins[lo:hi], t0)
        seg = np.repeat(np.arange(hi - lo), counts)
        first = np.cumsum(counts) - counts
        t = np.arange(t0, t1)
        ell = t - np.repeat(begins[lo:hi], counts)
        # log P(l) = log P(0) + sum_{j < l} log((k - j) / (k - j + m - 1))
        # (the step after the last term, l = k, is never used: set to 0 so the running sum stays finite)
        num_ = np.repeat(k_at[lo:hi], counts) - t
        den = np.repeat(den_at[lo:hi], counts) - t
        done = hi - lo if ends[hi - 1] <= t1 else hi - lo - 1  # streams whose last term is in this range
        last = first[:done] + counts[:done] - 1  # where l = k
        num_[last] = 1
        den[last] = 1
        step = log_int[num_] - log_int[den] if table else np.log(num_.astype(np.float64)) - np.log(den.astype(np.float64))
        acc = np.cumsum(np.concatenate([[carry], step]))  # carry + s_0, + s_1, ...: the running sum, continued
        before, carry = acc[:-1], float(acc[-1])
        at_first = before[first]
        if cont:
            at_first[0] = base
        base = float(at_first[-1])
        p = np.exp(np.repeat(logp0[lo:hi], counts) + before - np.repeat(at_first, counts))
        if cont:  # the carried sums first, then this range's terms of stream lo
            seg = np.concatenate([[0], seg])
        sums = []
        for j, shift in enumerate((1, 0)):  # closed runs: ceil((l + 1)/(g + 1)); trailing: ceil(l/(g + 1))
            w = p * (ceil_tab[j][ell] if ceil_tab is not None else -(-(ell + shift) // gp1))
            sums.append(np.bincount(seg, weights=np.concatenate([[part[j]], w]) if cont else w, minlength=hi - lo))
        res[lo:lo + done] = mm[:done] * sums[0][:done] + sums[1][:done]
        if done < hi - lo:
            part = np.array([sums[0][-1], sums[1][-1]])
    out[mix] = res
    return out, carry


def shuffled_blocks(c: Concat, gamma: int, shuffles: int = SHUFFLES, seed: int = 0) -> np.ndarray:
    """`shuffled_blocks_from` of these streams alone (the exact expectation from a running sum of 0)."""
    return shuffled_blocks_from(c, gamma, shuffles, seed)[0]


def shuffled_blocks_from(c: Concat, gamma: int, shuffles: int = SHUFFLES, seed: int = 0,
                         carry: float = 0.0) -> tuple[np.ndarray, float]:
    """Per stream: the mean, over S in-place shuffles, of the walk's blocks at gamma; shuffles < 0
    (params.EXACT, the default): its exact expectation over all in-place orderings
    (`expected_shuffled_blocks`, the limit S -> infinity: no Monte-Carlo noise, the same for every seed);
    0: NaN (no shuffle control).

    Tokens of a stream are n under any order, so this mean is the only per-stream shuffle quantity:
    E_shuf = sum n / sum mean_blocks (SPEC 3, yield deficit). Each shuffle permutes every stream
    at once (Shuffler: the zeros' positions, a uniform subset per stream) and its walk is counted
    from the zeros (Shuffler.blocks, equal to walk_blocks on the shuffled bits).

    Returned with the exact expectation's running sum after these streams (`carry` in, see
    expected_shuffled_blocks_from; unchanged by shuffles >= 0).
    """
    out = np.zeros(c.starts.size)
    if shuffles < 0:
        return expected_shuffled_blocks_from(c.lengths, stream_totals(c.bits, c.starts, c.ends).astype(np.int64), gamma,
                                             carry)
    if shuffles == 0:
        return out * np.nan, carry
    shuffler = Shuffler(c, np.random.default_rng(seed))
    for _ in range(shuffles):
        out += shuffler.blocks(gamma)
    return out / shuffles, carry


# ----------------------------------------------------------------- the sums matrix ---


@dataclass
class StreamSums:
    """M (N x K) and what is needed besides column sums: closed run lengths per stream for the histogram."""

    M: np.ndarray
    cols: dict[str, int]
    gamma: int
    depth_gamma: int
    run_L: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    run_seg: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    esb_carry: float = 0.0
    """The exact shuffle expectation's running sum after these streams (expected_shuffled_blocks_from):
    where the next chunk of the set's streams starts (`stream_sums(..., esb_carry=)`)."""
    run_hist: np.ndarray | None = None
    """The closed runs counted by length (bincount of run_L) where the runs themselves were let go
    (`histogram_only`: one int64 per run length instead of two per run); None: count run_L."""

    def run_counts(self) -> np.ndarray:
        """The closed runs counted by length L = 0, 1, ... (np.bincount of every run's L)."""
        return np.bincount(self.run_L) if self.run_hist is None else self.run_hist

    def histogram_only(self) -> StreamSums:
        """These sums with the runs replaced by their counts by length (`run_counts`): all a report
        reads of them (the run-length histogram), without an array the size of the runs."""
        empty = np.zeros(0, np.int64)
        return StreamSums(self.M, self.cols, self.gamma, self.depth_gamma, empty, empty, self.esb_carry,
                          self.run_counts())

    def blocks(self) -> np.ndarray:
        """(N x 32) int64 blocks of each stream's walk at g = 1..32 (the blocks_g columns)."""
        return self.M[:, [self.cols[f"blocks_{g}"] for g in GAMMAS]].astype(np.int64)

    def rows(self, idx: np.ndarray) -> StreamSums:
        """The sums of a subset of streams (rows renumbered 0..len(idx)-1)."""
        if self.run_hist is not None:
            raise ValueError("the sums of a subset need the runs, and these were reduced to their histogram")
        idx = np.asarray(idx, dtype=np.int64)
        new = -np.ones(self.M.shape[0], dtype=np.int64)
        new[idx] = np.arange(idx.size)
        keep = new[self.run_seg] >= 0
        return StreamSums(self.M[idx], self.cols, self.gamma, self.depth_gamma, self.run_L[keep], new[self.run_seg[keep]],
                          self.esb_carry)


def sum_columns(depth_gamma: int) -> list[str]:
    names = ["n", "ones", "gate_ones", "gate_n", "n11", "n1x", "n01", "n0x", "ac_val", "ac_def", "runs", "L", "L2"]
    names += [f"blocks_{g}" for g in GAMMAS]
    names += ["shuf_blocks"]
    for j in range(1, depth_gamma + 1):
        names += [f"acc_{j}", f"reach_{j}", f"uncut_{j}"]
    names += ["trail_runs", "trail_L", "trail_L2"]
    return names


def stream_sums(
    a: list[np.ndarray],
    gate_ones: np.ndarray | None = None,
    gate_n: np.ndarray | None = None,
    gamma: int = GAMMA_DEFAULT,
    depth_gamma: int | None = None,
    shuffles: int = SHUFFLES,
    seed: int = 0,
    esb_carry: float = 0.0,
) -> StreamSums:
    """Build M for streams `a` (analysed bits). gate_ones/gate_n default to n (gate held everywhere).

    Every row is its stream's alone but the exact shuffle column's (its running sum, `esb_carry`: 0
    for a set's first streams, else the `esb_carry` of the sums of the streams before) and the random
    shuffles' (shuffles > 0: one draw over the set): streams in chunks, each from the carry of the one
    before, stack (analysis._stack) to the sums of them all at once when shuffles <= 0."""
    depth_gamma = gamma if depth_gamma is None else depth_gamma
    names = sum_columns(depth_gamma)
    cols = {name: i for i, name in enumerate(names)}
    c = concat_streams(a)
    N = c.starts.size
    M = np.zeros((N, len(names)))
    n = c.lengths.astype(np.float64)
    M[:, cols["n"]] = n
    ones = stream_totals(c.bits, c.starts, c.ends)
    M[:, cols["ones"]] = ones
    M[:, cols["gate_ones"]] = n if gate_ones is None else gate_ones
    M[:, cols["gate_n"]] = n if gate_n is None else gate_n
    n11, n1x, n01, n0x = transition_counts(c, ones=ones)
    M[:, cols["n11"]], M[:, cols["n1x"]], M[:, cols["n01"]], M[:, cols["n0x"]] = n11, n1x, n01, n0x
    defined = (n1x > 0) & (n0x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(defined, n11 / n1x - n01 / n0x, 0.0)
    M[:, cols["ac_val"]] = value
    M[:, cols["ac_def"]] = defined
    runs = segment_runs(c.bits, c.starts, c.ends, seg_of=zeros_by_stream(c.lengths, ones))
    M[:, cols["runs"]] = np.bincount(runs.seg, minlength=N)
    M[:, cols["L"]] = np.bincount(runs.seg, weights=runs.L, minlength=N)
    M[:, cols["L2"]] = np.bincount(runs.seg, weights=runs.L.astype(np.float64) ** 2, minlength=N)
    M[:, [cols[f"blocks_{g}"] for g in GAMMAS]] = walk_blocks_many(runs, N, GAMMAS)
    M[:, cols["shuf_blocks"]], esb_carry = shuffled_blocks_from(c, gamma, shuffles, seed, esb_carry)
    acc, reach, uncut = depth_counts(runs, c.starts, c.ends, depth_gamma)
    for j in range(1, depth_gamma + 1):
        M[:, cols[f"acc_{j}"]] = acc[:, j - 1]
        M[:, cols[f"reach_{j}"]] = reach[:, j - 1]
        M[:, cols[f"uncut_{j}"]] = uncut[:, j - 1]
    T = runs.trailing.astype(np.float64)
    M[:, cols["trail_runs"]] = T > 0
    M[:, cols["trail_L"]] = T
    M[:, cols["trail_L2"]] = T**2
    return StreamSums(M=M, cols=cols, gamma=gamma, depth_gamma=depth_gamma, run_L=runs.L, run_seg=runs.seg,
                      esb_carry=esb_carry)


def gate_counts(streams: Sequence[Stream]) -> tuple[np.ndarray, np.ndarray]:
    """Per stream (gate ones, positions) over the whole stream, before the cut at the first gate
    failure (a stream without a gate counts as held everywhere)."""
    gate_ones = np.array([s.n if s.gate is None else int(s.gate.sum()) for s in streams], dtype=np.float64)
    gate_n = np.array([s.n for s in streams], dtype=np.float64)
    return gate_ones, gate_n


def rates(streams: Sequence[Stream]) -> tuple[int, float, float]:
    """(positions, alpha, gate_rate) of stored streams without building the sums matrix (`specterm
    list`, the oracle's running figures), as the report defines them: alpha = sum ones / sum n over
    the analysed streams (cut at the first gate failure), gate_rate = sum gate ones / sum positions
    of the whole streams. NaN where there are no positions."""
    gate_ones, gate_n = gate_counts(streams)
    analysed = sum(s.valid_len for s in streams)
    ones = sum(int(s.a.sum()) for s in streams)
    return int(gate_n.sum()), float(div(ones, analysed)), float(div(gate_ones.sum(), gate_n.sum()))


# ------------------------------------------------ statistics of column sums c (..., K) ---


def col(c: np.ndarray, cols: dict[str, int], name: str) -> np.ndarray:
    return c[..., cols[name]]


def alpha(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """alpha = sum a / sum n (pooled marginal acceptance)."""
    return div(col(c, cols, "ones"), col(c, cols, "n"))


def gate_rate(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """gate_rate = sum gate ones / sum positions (whole streams, before the cut at the first failure)."""
    return div(col(c, cols, "gate_ones"), col(c, cols, "gate_n"))


def autocorr(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """Per-stream p11 - p10, unweighted mean over the streams where both conditioning counts are > 0."""
    return div(col(c, cols, "ac_val"), col(c, cols, "ac_def"))


def autocorr_pooled(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """p11 - p10 from one transition table summed over streams: N11/N1x - N01/N0x."""
    p11_minus_p10: np.ndarray = div(col(c, cols, "n11"), col(c, cols, "n1x")) - div(col(c, cols, "n01"), col(c, cols, "n0x"))
    return p11_minus_p10


def autocorr_simpson(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """Simpson inflation = pooled - per-stream mean: autocorrelation created by mixing prompts of different alpha."""
    inflation: np.ndarray = autocorr_pooled(c, cols) - autocorr(c, cols)
    return inflation


def dispersion(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """D = var(L) / mean(L), population variance over all closed runs: (sum L^2/R - m^2)/m, m = sum L/R."""
    R = col(c, cols, "runs")
    m = div(col(c, cols, "L"), R)
    return div(div(col(c, cols, "L2"), R) - m**2, m)


def dispersion_geom(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """D_geom = 1/(1 - alpha): D of a geometric run length under i.i.d. acceptance."""
    return div(1.0, 1.0 - alpha(c, cols))


def dispersion_ratio(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """D / D_geom = D (1 - alpha)."""
    return dispersion(c, cols) * (1.0 - alpha(c, cols))


def dispersion_ratio_trailing(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """D / D_geom with each stream's trailing run (T >= 1 ones not closed by a zero) counted as a run of
    length T: right-censored (its true length is >= T), so this D is a lower bound on what longer streams
    would show for those runs. Short streams cut the longest runs: at 128 positions per stream the closed
    runs alone understate the dispersion most (issue 34)."""
    R = col(c, cols, "runs") + col(c, cols, "trail_runs")
    m = div(col(c, cols, "L") + col(c, cols, "trail_L"), R)
    D = div(div(col(c, cols, "L2") + col(c, cols, "trail_L2"), R) - m**2, m)
    return D * (1.0 - alpha(c, cols))


def E_true(c: np.ndarray, cols: dict[str, int], gamma: int) -> np.ndarray:
    """E_true(gamma) = sum tokens / sum blocks (tokens of a stream = n)."""
    return div(col(c, cols, "n"), col(c, cols, f"blocks_{gamma}"))


def yield_ratio(c: np.ndarray, cols: dict[str, int], gamma: int) -> np.ndarray:
    """E_true(gamma) / E_iid(alpha, gamma)."""
    return div(E_true(c, cols, gamma), E_iid(alpha(c, cols), gamma))


def E_shuf(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """E_shuf = sum n / sum (mean blocks over the in-place shuffles), at the deficit's gamma."""
    return div(col(c, cols, "n"), col(c, cols, "shuf_blocks"))


def deficit(c: np.ndarray, cols: dict[str, int], gamma: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(total, hetero, temporal) at gamma, with e = E_iid(alpha, gamma):

    total = 1 - E_true/e, hetero = 1 - E_shuf/e, temporal = (E_shuf - E_true)/e; total = hetero + temporal.
    """
    e = E_iid(alpha(c, cols), gamma)
    et, es = E_true(c, cols, gamma), E_shuf(c, cols)
    return 1.0 - div(et, e), 1.0 - div(es, e), div(es - et, e)


def depth_conditional(c: np.ndarray, cols: dict[str, int], j: int) -> np.ndarray:
    """P(draft token j accepted | tokens 1..j-1 accepted) = acc_j / reach_j (uncut blocks only)."""
    return div(col(c, cols, f"acc_{j}"), col(c, cols, f"reach_{j}"))


def depth_unconditional(c: np.ndarray, cols: dict[str, int], j: int) -> np.ndarray:
    """P(accepted length >= j) = acc_j / uncut_j (uncut blocks only)."""
    return div(col(c, cols, f"acc_{j}"), col(c, cols, f"uncut_{j}"))


def run_length_histogram(L: np.ndarray, alpha_value: float) -> dict[str, list[Any]]:
    """Histogram of closed run lengths against the geometric prediction n_runs * alpha^L (1 - alpha)."""
    return run_length_histogram_of(np.bincount(np.asarray(L, dtype=np.int64)), alpha_value)


def run_length_histogram_of(count: np.ndarray, alpha_value: float) -> dict[str, list[Any]]:
    """run_length_histogram from the closed runs counted by length (count[L], StreamSums.run_counts)."""
    count = np.asarray(count, dtype=np.int64)
    if count.size == 0:
        count = np.zeros(1, dtype=np.int64)
    x = np.arange(count.size)
    expected = int(count.sum()) * alpha_value**x * (1.0 - alpha_value)
    return {"L": x.tolist(), "count": count.tolist(), "geom_expected": expected.tolist()}
