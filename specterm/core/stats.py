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
    shuf_blocks                mean over S in-place shuffles of the blocks at the deficit's gamma
    acc_j, reach_j, uncut_j    per-depth counts at depth_gamma, j = 1..depth_gamma (see depth_counts)

Choices and caveats (where the SPEC is silent):

- Shuffles: each stream is permuted in place S times (rng.permuted over streams of equal length
  stacked as rows; fixed seed). Tokens of a stream are n under any order, so the per-stream shuffle
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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from specterm.core.blockwalk import E_iid

GAMMAS = np.arange(1, 33)
YIELD_GAMMAS = (2, 4, 8, 16)


# ----------------------------------------------------------------- concatenated streams ---


@dataclass
class Concat:
    """Streams laid end to end: bits[starts[i]:ends[i]] is stream i; seg[t] is the stream of position t."""

    bits: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    @property
    def seg(self) -> np.ndarray:
        return np.repeat(np.arange(self.starts.size), self.lengths)


def concat_streams(arrays: list[np.ndarray]) -> Concat:
    lengths = np.array([a.size for a in arrays], dtype=np.int64)
    ends = np.cumsum(lengths)
    bits = np.concatenate([np.asarray(a, dtype=np.uint8) for a in arrays]) if arrays else np.zeros(0, np.uint8)
    return Concat(bits=bits, starts=ends - lengths, ends=ends)


@dataclass
class Runs:
    """Closed runs of every stream (L ones closed by the zero at global position `zero`, in stream
    `seg`) and the censored trailing run of each stream."""

    L: np.ndarray
    seg: np.ndarray
    zero: np.ndarray
    trailing: np.ndarray


def segment_runs(bits: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 seg_of: Callable[[np.ndarray], np.ndarray] | None = None) -> Runs:
    """Run lengths of every stream of a concatenation at once (blockwalk.run_lengths, vectorised).

    L = zero position - previous zero position (or stream start - 1) - 1; trailing = end - 1 - last zero.
    `seg_of` maps global positions to their streams (default: a search in `ends`).
    """
    z = np.flatnonzero(bits == 0)
    seg = np.searchsorted(ends, z, side="right") if seg_of is None else seg_of(z)
    n_seg = starts.size
    first = np.ones(z.size, dtype=bool)
    first[1:] = seg[1:] != seg[:-1]
    prev = np.empty_like(z)
    prev[1:] = z[:-1]
    prev[first] = starts[seg[first]] - 1
    L = z - prev - 1
    last = np.ones(z.size, dtype=bool)
    last[:-1] = seg[:-1] != seg[1:]
    last_zero = starts - 1
    last_zero[seg[last]] = z[last]
    trailing = ends - 1 - last_zero
    i64 = dict(dtype=np.int64, copy=False)
    return Runs(L=L.astype(**i64), seg=seg.astype(**i64), zero=z.astype(**i64), trailing=trailing.astype(**i64))


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


def walk_blocks(runs: Runs, n_streams: int, gamma: int) -> np.ndarray:
    """Blocks of the walk at draft length gamma, per stream (closed form of blockwalk, vectorised):
    sum over closed runs of ceil((L+1)/(gamma+1)) plus ceil(trailing/(gamma+1))."""
    gp1 = gamma + 1
    closed = np.bincount(runs.seg, weights=_ceil_div(runs.L + 1, gp1), minlength=n_streams)
    return closed + _ceil_div(runs.trailing, gp1)


def block_starts_accepts(runs: Runs, starts: np.ndarray, ends: np.ndarray, gamma: int, ordered: bool = True):
    """Every block of the walk at gamma: (stream, start position s, accepted k, positions left n - s).

    Vectorised blockwalk.block_accepts. In a closed run of L ones starting at p, block b starts at
    p + b(gamma+1) and accepts gamma, except the last, which accepts L - (gamma+1)(nb-1); in the
    trailing run of T ones the last block accepts min(gamma, T - (gamma+1)(nb-1)).
    """
    gp1 = gamma + 1
    has_trail = runs.trailing > 0
    t_seg = np.flatnonzero(has_trail)
    L = np.concatenate([runs.L, runs.trailing[t_seg]])
    seg = np.concatenate([runs.seg, t_seg])
    begin = np.concatenate([runs.zero - runs.L, ends[t_seg] - runs.trailing[t_seg]])
    closed = np.concatenate([np.ones(runs.L.size, bool), np.zeros(t_seg.size, bool)])
    nb = np.where(closed, _ceil_div(L + 1, gp1), _ceil_div(L, gp1))
    total = int(nb.sum())
    run_of_block = np.repeat(np.arange(L.size), nb)
    first_block = np.cumsum(nb) - nb
    b = np.arange(total) - first_block[run_of_block]
    s = begin[run_of_block] + b * gp1
    is_last = b == nb[run_of_block] - 1
    rem = L[run_of_block] - gp1 * b
    k = np.where(is_last, np.where(closed[run_of_block], rem, np.minimum(gamma, rem)), gamma)
    bseg = seg[run_of_block]
    if ordered:
        order = np.argsort(s, kind="stable")
        bseg, s, k = bseg[order], s[order], k[order]
    return bseg, s - starts[bseg], k, ends[bseg] - s


def depth_counts(runs: Runs, starts: np.ndarray, ends: np.ndarray, gamma: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(acc, reach, uncut), each (N streams x gamma): at depth j = 1..gamma, the blocks that

        uncut_j: have at least j positions left (n - s >= j), so draft token j is observable;
        reach_j: uncut at j and accepted tokens 1..j-1 (k >= j-1);
        acc_j:   uncut at j and accepted token j (k >= j; k <= n - s always).

    conditional_j = acc_j / reach_j, unconditional_j = P(accepted length >= j) = acc_j / uncut_j.
    Censoring: a block cut by the end of the stream (fewer than j positions left) does not count at
    depth j, whatever it accepted.
    """
    n = starts.size
    bseg, _, k, left = block_starts_accepts(runs, starts, ends, gamma, ordered=False)

    def at_least(m: np.ndarray) -> np.ndarray:
        # count of blocks with m >= j for j = 1..gamma: reverse cumulative histogram of m (clipped to gamma)
        hist = np.bincount(bseg * (gamma + 1) + np.minimum(m, gamma), minlength=n * (gamma + 1)).reshape(n, gamma + 1)
        return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]

    return at_least(k), at_least(np.minimum(k + 1, left)), at_least(left)


def transition_counts(c: Concat, seg: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per stream (n11, n1x, n01, n0x): pairs (a_t, a_{t+1}) inside the stream with a_t=1,a_{t+1}=1;
    a_t=1; a_t=0,a_{t+1}=1; a_t=0. `seg` is c.seg when the caller already has it."""
    n = c.starts.size
    seg = c.seg if seg is None else seg
    inside = seg[:-1] == seg[1:]
    prev, nxt, s = c.bits[:-1][inside], c.bits[1:][inside], seg[:-1][inside]
    n1x = np.bincount(s, weights=prev, minlength=n)
    n11 = np.bincount(s, weights=prev & nxt, minlength=n)
    nx = np.bincount(s, minlength=n).astype(np.float64)
    n01 = np.bincount(s, weights=(1 - prev) & nxt, minlength=n)
    return n11, n1x, n01, nx - n1x


# ------------------------------------------------------------------------- shuffles ---


def _shuffled_groups(c: Concat, copies: int, rng: np.random.Generator):
    """Yield (stream indices, matrix of copies*count rows x length): every stream of one length,
    repeated `copies` times (copy-major), each row independently permuted in place."""
    lengths = c.lengths
    for length in np.unique(lengths):
        if length == 0:
            continue
        rows = np.flatnonzero(lengths == length)
        mat = c.bits[c.starts[rows][:, None] + np.arange(length)]
        tiled = np.tile(mat, (copies, 1))
        yield rows, rng.permuted(tiled, axis=1, out=tiled)


def shuffle_streams(c: Concat, copies: int = 1, seed: int = 0) -> np.ndarray:
    """(copies x total positions): each copy permutes every stream in place (keeps its own alpha)."""
    rng = np.random.default_rng(seed)
    out = np.empty((copies, c.bits.size), dtype=np.uint8)
    for rows, mat in _shuffled_groups(c, copies, rng):
        idx = c.starts[rows][:, None] + np.arange(mat.shape[1])
        out[:, idx] = mat.reshape(copies, rows.size, -1)
    return out


def shuffled_blocks(c: Concat, gamma: int, shuffles: int = 20, seed: int = 0) -> np.ndarray:
    """Per stream: the mean, over S in-place shuffles, of the walk's blocks at gamma.

    Tokens of a stream are n under any order, so this mean is the only per-stream shuffle quantity:
    E_shuf = sum n / sum mean_blocks (SPEC 3, yield deficit).
    """
    out = np.zeros(c.starts.size)
    if shuffles <= 0:
        return out * np.nan
    rng = np.random.default_rng(seed)
    for rows, mat in _shuffled_groups(c, shuffles, rng):
        n_rows, length = mat.shape
        starts = np.arange(n_rows, dtype=np.int64) * length
        flat = mat.ravel()
        runs = segment_runs(flat, starts, starts + length, seg_of=lambda z: z // length)
        blocks = walk_blocks(runs, n_rows, gamma)
        out[rows] = blocks.reshape(shuffles, rows.size).mean(axis=0)
    return out


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

    def rows(self, idx: np.ndarray) -> "StreamSums":
        """The sums of a subset of streams (rows renumbered 0..len(idx)-1)."""
        idx = np.asarray(idx, dtype=np.int64)
        new = -np.ones(self.M.shape[0], dtype=np.int64)
        new[idx] = np.arange(idx.size)
        keep = new[self.run_seg] >= 0
        return StreamSums(self.M[idx], self.cols, self.gamma, self.depth_gamma, self.run_L[keep], new[self.run_seg[keep]])


def sum_columns(depth_gamma: int) -> list[str]:
    names = ["n", "ones", "gate_ones", "gate_n", "n11", "n1x", "n01", "n0x", "ac_val", "ac_def", "runs", "L", "L2"]
    names += [f"blocks_{g}" for g in GAMMAS]
    names += ["shuf_blocks"]
    for j in range(1, depth_gamma + 1):
        names += [f"acc_{j}", f"reach_{j}", f"uncut_{j}"]
    return names


def stream_sums(
    a: list[np.ndarray],
    gate_ones: np.ndarray | None = None,
    gate_n: np.ndarray | None = None,
    gamma: int = 8,
    depth_gamma: int | None = None,
    shuffles: int = 20,
    seed: int = 0,
) -> StreamSums:
    """Build M for streams `a` (analysed bits). gate_ones/gate_n default to n (gate held everywhere)."""
    depth_gamma = gamma if depth_gamma is None else depth_gamma
    names = sum_columns(depth_gamma)
    cols = {name: i for i, name in enumerate(names)}
    c = concat_streams(a)
    N = c.starts.size
    M = np.zeros((N, len(names)))
    n = c.lengths.astype(np.float64)
    M[:, cols["n"]] = n
    seg = c.seg
    M[:, cols["ones"]] = np.bincount(seg, weights=c.bits, minlength=N)
    M[:, cols["gate_ones"]] = n if gate_ones is None else gate_ones
    M[:, cols["gate_n"]] = n if gate_n is None else gate_n
    n11, n1x, n01, n0x = transition_counts(c, seg)
    M[:, cols["n11"]], M[:, cols["n1x"]], M[:, cols["n01"]], M[:, cols["n0x"]] = n11, n1x, n01, n0x
    defined = (n1x > 0) & (n0x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(defined, n11 / n1x - n01 / n0x, 0.0)
    M[:, cols["ac_val"]] = value
    M[:, cols["ac_def"]] = defined
    runs = segment_runs(c.bits, c.starts, c.ends, seg_of=lambda z: seg[z])
    M[:, cols["runs"]] = np.bincount(runs.seg, minlength=N)
    M[:, cols["L"]] = np.bincount(runs.seg, weights=runs.L, minlength=N)
    M[:, cols["L2"]] = np.bincount(runs.seg, weights=runs.L.astype(np.float64) ** 2, minlength=N)
    for g in GAMMAS:
        M[:, cols[f"blocks_{g}"]] = walk_blocks(runs, N, int(g))
    M[:, cols["shuf_blocks"]] = shuffled_blocks(c, gamma, shuffles, seed)
    acc, reach, uncut = depth_counts(runs, c.starts, c.ends, depth_gamma)
    for j in range(1, depth_gamma + 1):
        M[:, cols[f"acc_{j}"]] = acc[:, j - 1]
        M[:, cols[f"reach_{j}"]] = reach[:, j - 1]
        M[:, cols[f"uncut_{j}"]] = uncut[:, j - 1]
    return StreamSums(M=M, cols=cols, gamma=gamma, depth_gamma=depth_gamma, run_L=runs.L, run_seg=runs.seg)


# ------------------------------------------------ statistics of column sums c (..., K) ---


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)


def col(c: np.ndarray, cols: dict[str, int], name: str) -> np.ndarray:
    return c[..., cols[name]]


def alpha(c, cols):
    """alpha = sum a / sum n (pooled marginal acceptance)."""
    return _div(col(c, cols, "ones"), col(c, cols, "n"))


def gate_rate(c, cols):
    """gate_rate = sum gate ones / sum positions (whole streams, before the cut at the first failure)."""
    return _div(col(c, cols, "gate_ones"), col(c, cols, "gate_n"))


def autocorr(c, cols):
    """Per-stream p11 - p10, unweighted mean over the streams where both conditioning counts are > 0."""
    return _div(col(c, cols, "ac_val"), col(c, cols, "ac_def"))


def autocorr_pooled(c, cols):
    """p11 - p10 from one transition table summed over streams: N11/N1x - N01/N0x."""
    return _div(col(c, cols, "n11"), col(c, cols, "n1x")) - _div(col(c, cols, "n01"), col(c, cols, "n0x"))


def autocorr_simpson(c, cols):
    """Simpson inflation = pooled - per-stream mean: autocorrelation created by mixing prompts of different alpha."""
    return autocorr_pooled(c, cols) - autocorr(c, cols)


def dispersion(c, cols):
    """D = var(L) / mean(L), population variance over all closed runs: (sum L^2/R - m^2)/m, m = sum L/R."""
    R = col(c, cols, "runs")
    m = _div(col(c, cols, "L"), R)
    return _div(_div(col(c, cols, "L2"), R) - m**2, m)


def dispersion_geom(c, cols):
    """D_geom = 1/(1 - alpha): D of a geometric run length under i.i.d. acceptance."""
    return _div(1.0, 1.0 - alpha(c, cols))


def dispersion_ratio(c, cols):
    """D / D_geom = D (1 - alpha)."""
    return dispersion(c, cols) * (1.0 - alpha(c, cols))


def E_true(c, cols, gamma: int):
    """E_true(gamma) = sum tokens / sum blocks (tokens of a stream = n)."""
    return _div(col(c, cols, "n"), col(c, cols, f"blocks_{gamma}"))


def yield_ratio(c, cols, gamma: int):
    """E_true(gamma) / E_iid(alpha, gamma)."""
    return _div(E_true(c, cols, gamma), E_iid(alpha(c, cols), gamma))


def E_shuf(c, cols):
    """E_shuf = sum n / sum (mean blocks over the in-place shuffles), at the deficit's gamma."""
    return _div(col(c, cols, "n"), col(c, cols, "shuf_blocks"))


def deficit(c, cols, gamma: int):
    """(total, hetero, temporal) at gamma, with e = E_iid(alpha, gamma):

    total = 1 - E_true/e, hetero = 1 - E_shuf/e, temporal = (E_shuf - E_true)/e; total = hetero + temporal.
    """
    e = E_iid(alpha(c, cols), gamma)
    et, es = E_true(c, cols, gamma), E_shuf(c, cols)
    return 1.0 - _div(et, e), 1.0 - _div(es, e), _div(es - et, e)


def depth_conditional(c, cols, j: int):
    """P(draft token j accepted | tokens 1..j-1 accepted) = acc_j / reach_j (uncut blocks only)."""
    return _div(col(c, cols, f"acc_{j}"), col(c, cols, f"reach_{j}"))


def depth_unconditional(c, cols, j: int):
    """P(accepted length >= j) = acc_j / uncut_j (uncut blocks only)."""
    return _div(col(c, cols, f"acc_{j}"), col(c, cols, f"uncut_{j}"))


def run_length_histogram(L: np.ndarray, alpha_value: float) -> dict:
    """Histogram of closed run lengths against the geometric prediction n_runs * alpha^L (1 - alpha)."""
    L = np.asarray(L, dtype=np.int64)
    count = np.bincount(L) if L.size else np.zeros(1, dtype=np.int64)
    x = np.arange(count.size)
    expected = L.size * alpha_value**x * (1.0 - alpha_value)
    return {"L": x.tolist(), "count": count.tolist(), "geom_expected": expected.tolist()}
