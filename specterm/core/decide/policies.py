"""Draft-length policies on sets of streams (SPEC section 5): the vectorised policy table and the
per-set summary with bootstrap CIs. The policies themselves, and why replaying them on stored
streams is exact, are in replay.py (one stream at a time); this module gives exactly the same
numbers for all streams at once: fixed g from the run geometry (the block counts stats.stream_sums
already holds, or geometry.walk_blocks), clairvoyant in closed form, heuristic and confidence stop
walking every stream one block per round in numpy. tokens = n under every policy. A table is built
once and each set (a corpus, the pooled set) takes its streams' rows.

Throughput T = tokens / (blocks + r * drafted) (`optimum.throughput`); best fixed g by
`optimum.best_gamma` (ties: smallest g).

Length: the vectorised walks of every policy, and `long_stream_row`, their slice-by-slice twin for one
stream longer than a chunk (issue 39, core/streams/longstream.py), which shares their distance helpers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.streams.estimate import num, percentile_cis
from specterm.core.streams.geometry import Concat, concat_streams, segment_runs, walk_blocks
from specterm.core.decide.optimum import best_gamma, throughput
from specterm.core.params import GAMMAS
from specterm.core.streams.longstream import slices, walk_runs
from specterm.core.decide.replay import block_starts, check_gamma, heuristic_next, replay_heuristic
from specterm.core.report.types import Estimate, PolicyRow

if TYPE_CHECKING:
    from specterm.core.store import Stream

# Below this many streams still walking, a lockstep walk finishes the rest one stream at a time:
# each lockstep round costs a fixed numpy overhead, which a few long streams would pay per block.
LOCKSTEP_MIN = 16


def _analysed(stream: Stream) -> tuple[np.ndarray, np.ndarray | None]:
    """The analysed stream a (bits on Stream.kept) and its draft_conf, cut alike."""
    conf = None if stream.draft_conf is None else stream.analysed(stream.draft_conf)
    return stream.a, conf


def has_draft_conf(streams: Sequence[Stream]) -> bool:
    """True when every stream kept the draft's confidences (needed by the confidence stop)."""
    return all(s.draft_conf is not None for s in streams)


def _stacked(streams: Sequence[Stream], with_conf: bool = True) -> tuple[Concat, np.ndarray | None, np.ndarray]:
    """The analysed streams end to end (geometry.Concat), their draft_conf end to end as float64
    (NaN where a stream has none; None when none has any or with_conf is False), and per stream
    whether it has draft_conf."""
    cut = [_analysed(s) for s in streams]
    c = concat_streams([bits for bits, _ in cut])
    has_conf = np.array([conf is not None for _, conf in cut], dtype=bool)
    conf = None
    if with_conf and has_conf.any():
        for (bits, cf) in cut:
            if cf is not None and cf.size != bits.size:
                raise SpectermError(f"draft_conf has {cf.size} values but the stream has {bits.size} positions; re-create the run.")
        # kept in its stored precision (float32 as written); compared with tau exactly (`_at_least`)
        conf = np.concatenate([np.full(bits.size, np.nan, np.float32) if cf is None else cf for bits, cf in cut])
        if conf.dtype != np.float32:
            conf = conf.astype(np.float64, copy=False)
    return c, conf, has_conf


def _at_least(conf: np.ndarray, tau: float) -> np.ndarray:
    """conf >= tau as real numbers (NaN: False). float32 conf is compared with the smallest float32
    >= tau, which equals comparing float64(conf) with tau (float32 -> float64 is exact) at half the
    memory traffic."""
    if conf.dtype == np.float32:
        thr = np.float32(tau)
        if float(thr) < tau:
            thr = np.nextafter(thr, np.float32(np.inf))
        return conf >= thr
    return conf >= tau


def _index_dtype(size: int) -> type[np.signedinteger[Any]]:
    """int32 position arrays when every position fits (half the memory traffic), else int64."""
    return np.int32 if size < 2**31 - 64 else np.int64


def _distance_to_next(mask: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each t, (the first u >= t with mask[u], or mask.size) - t, in t's dtype."""
    hits = np.flatnonzero(mask)
    gaps = np.empty(hits.size + 1, dtype=np.int64)  # positions served by each hit (and by the end)
    if hits.size:
        gaps[0] = hits[0] + 1
        np.subtract(hits[1:], hits[:-1], out=gaps[1:-1])
        gaps[-1] = mask.size - 1 - hits[-1]
    else:
        gaps[0] = mask.size
    nxt = np.repeat(np.append(hits.astype(t.dtype), t.dtype.type(mask.size)), gaps)
    nxt -= t
    return nxt


def _capped_distance_to_next(mask: np.ndarray, cap: int) -> np.ndarray:
    """uint8: min(cap, _distance_to_next(mask)) for cap <= 127, by doubling on the run of positions
    without a hit starting at each t: r_{k+1}[t] = r_k[t] + [r_k[t] = 2^k] r_k[t + 2^k] (r_k is that
    run capped at 2^k; the array's end ends every run, as mask.size does in _distance_to_next)."""
    r = (~mask).view(np.uint8) if mask.dtype == np.bool_ else (mask == 0).astype(np.uint8)
    s = 1
    while s < cap:
        nxt = r.copy()
        full = (r[:-s] == s).view(np.uint8)
        np.multiply(full, r[s:], out=full)
        nxt[:-s] += full
        r, s = nxt, 2 * s
    out: np.ndarray = np.minimum(r, np.uint8(cap))
    return out


def fixed_blocks(c: Concat, gammas: np.ndarray = GAMMAS) -> np.ndarray:
    """(N x G) int64 blocks of every stream at each fixed g: `geometry.walk_blocks` over the runs of
    all streams (tokens = n, drafted = g * blocks). stats.stream_sums holds the same counts for
    g = 1..32 (its blocks_g columns); `policy_table` takes them from there when given."""
    runs = segment_runs(c.bits, c.starts, c.ends)
    N = c.starts.size
    out = np.zeros((N, len(gammas)), dtype=np.int64)
    for j, g in enumerate(np.asarray(gammas).tolist()):
        out[:, j] = walk_blocks(runs, N, int(g))
    return out


def _walk(step: np.ndarray, cost: np.ndarray, c: Concat, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, drafted) per stream of a walk whose step depends on the position only: s -> s + step[s]
    from each active stream's start while s < its end; blocks counts the block starts, drafted sums
    cost over them. All streams advance one block per round together (all start together, so the
    blocks of a stream still walking are the rounds so far); the last few still walking finish
    alone through `block_starts` (a round's numpy overhead would otherwise be paid per block). One
    walk per call: walking several at once (laid end to end) was slower, its gathers out of cache.
    """
    blocks = np.zeros(c.ends.size, dtype=np.int64)
    drafted = np.zeros(c.ends.size, dtype=np.int64)
    idx = np.flatnonzero(active & (c.starts < c.ends))
    pos, end = c.starts[idx], c.ends[idx]
    rounds = 0
    nd = np.zeros(idx.size, dtype=np.int64)  # per stream still walking, drafted so far
    while idx.size and idx.size >= LOCKSTEP_MIN:
        rounds += 1
        nd += cost[pos]
        pos += step[pos]
        keep = pos < end
        if not keep.all():
            done = ~keep
            blocks[idx[done]] = rounds
            drafted[idx[done]] = nd[done]
            idx, pos, end, nd = idx[keep], pos[keep], end[keep], nd[keep]
    blocks[idx] = rounds
    drafted[idx] = nd
    for i, p, e in zip(idx.tolist(), pos.tolist(), end.tolist()):
        path = p + block_starts(step[p:e])
        blocks[i] += path.size
        drafted[i] += int(cost[path].sum())
    return blocks, drafted


def _walk_heuristic(ones: np.ndarray, c: Concat, g0: int, g_min: int) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, drafted) per stream of `replay_heuristic`, all streams in lockstep with a per-stream g:

        k = min(ones ahead of s, g);  s += k + 1;  g = heuristic_next(g, k, g_min)

    All streams start together, so the blocks of a stream still walking are the rounds so far. The
    last few streams still walking finish alone through `replay_heuristic` from their current g.
    """
    blocks = np.zeros(c.ends.size, dtype=np.int64)
    drafted = np.zeros(c.ends.size, dtype=np.int64)
    idx = np.flatnonzero(c.starts < c.ends)
    pos, end = c.starts[idx], c.ends[idx]
    g = np.full(idx.size, max(g0, g_min), dtype=np.int64)
    rounds = 0
    nd = np.zeros(idx.size, dtype=np.int64)  # per stream still walking, drafted so far
    while idx.size and idx.size >= LOCKSTEP_MIN:
        k = np.minimum(ones[pos], g)
        rounds += 1
        nd += g
        pos += k
        pos += 1
        g = heuristic_next(g, k, g_min)
        keep = pos < end
        if not keep.all():
            done = ~keep
            blocks[idx[done]] = rounds
            drafted[idx[done]] = nd[done]
            idx, pos, end, g, nd = idx[keep], pos[keep], end[keep], g[keep], nd[keep]
    blocks[idx] = rounds
    drafted[idx] = nd
    for i, p, e, gi in zip(idx.tolist(), pos.tolist(), end.tolist(), g.tolist()):
        rest = replay_heuristic(c.bits[p:e], g0=gi, g_min=g_min)
        blocks[i] += rest.blocks
        drafted[i] += rest.drafted
    return blocks, drafted


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """Per-stream blocks and drafted tokens of every policy that does not depend on r (`policy_table`).

    tokens of every policy equal n, the analysed length (each position is emitted exactly once).
    """

    n: np.ndarray  # (N,) analysed positions = tokens under any policy
    fixed: np.ndarray  # (N, 32) blocks at fixed g = GAMMAS; drafted = g * blocks
    heuristic: np.ndarray  # (N, 2) blocks, drafted
    confidence: np.ndarray  # (N, len(taus), 2) blocks, drafted; zeros where has_conf is False
    has_conf: np.ndarray  # (N,) the stream kept draft_conf
    clairvoyant: np.ndarray  # (N, 2) blocks, drafted
    taus: tuple[float, ...]
    g0: int
    g_max: int

    def __len__(self) -> int:
        return int(self.n.size)

    def rows(self, index: slice | np.ndarray) -> PolicyTable:
        """The table of a subset of the streams (a slice or index array), in that order."""
        return PolicyTable(n=self.n[index], fixed=self.fixed[index], heuristic=self.heuristic[index],
                           confidence=self.confidence[index], has_conf=self.has_conf[index],
                           clairvoyant=self.clairvoyant[index], taus=self.taus, g0=self.g0, g_max=self.g_max)

    def with_fixed(self, blocks: np.ndarray) -> PolicyTable:
        """This table with the (N x 32) fixed-g block counts `blocks` (of a table built with fixed=False)."""
        blocks = np.asarray(blocks, dtype=np.int64)
        if blocks.shape != (len(self), GAMMAS.size):
            raise ValueError(f"fixed-g blocks must be {len(self)} x {GAMMAS.size}, got {blocks.shape}")
        return PolicyTable(n=self.n, fixed=blocks, heuristic=self.heuristic, confidence=self.confidence,
                           has_conf=self.has_conf, clairvoyant=self.clairvoyant, taus=self.taus, g0=self.g0,
                           g_max=self.g_max)

    @staticmethod
    def stacked(parts: Sequence[PolicyTable]) -> PolicyTable:
        """The tables of consecutive groups of streams as one (rows in order): a stream's row depends
        on that stream alone, so it equals the table of all the streams at once (built in parts by
        `analysis` to walk them on several threads)."""
        first = parts[0]
        if any((p.taus, p.g0, p.g_max) != (first.taus, first.g0, first.g_max) for p in parts):
            raise ValueError("policy tables built with different taus, g0 or g_max cannot be stacked")
        return PolicyTable(n=np.concatenate([p.n for p in parts]), fixed=np.concatenate([p.fixed for p in parts]),
                           heuristic=np.concatenate([p.heuristic for p in parts]),
                           confidence=np.concatenate([p.confidence for p in parts]),
                           has_conf=np.concatenate([p.has_conf for p in parts]),
                           clairvoyant=np.concatenate([p.clairvoyant for p in parts]),
                           taus=first.taus, g0=first.g0, g_max=first.g_max)

    def fixed_sums(self) -> np.ndarray:
        """(N x 32 x 3) tokens, blocks, drafted at g = 1..32, as `fixed_sums(streams)`."""
        n = np.broadcast_to(self.n[:, None], self.fixed.shape)
        return np.stack([n, self.fixed, GAMMAS * self.fixed], axis=-1)


def policy_table(streams: Sequence[Stream], *, taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9), g0: int = 5,
                 g_max: int = 16, blocks: np.ndarray | None = None, fixed: bool = True,
                 budget: int | None = None) -> PolicyTable:
    """Every stream replayed once under fixed g = 1..32, heuristic from g0, confidence stop at each tau
    (streams with draft_conf) and clairvoyant; all streams at once, equal to the one-stream replays.

    A set of streams takes its rows (`PolicyTable.rows`), so streams shared by several sets (each
    corpus and the pooled set) are replayed once. Clairvoyant in closed form: blocks = zeros +
    [trailing run > 0], drafted = n - blocks. `blocks`: the (N x 32) fixed-g block counts of these
    streams when the caller has them (`stats.StreamSums.blocks()`), else computed (`fixed_blocks`).
    fixed=False leaves them out (an N x 0 array) for the caller to add with `PolicyTable.with_fixed`
    (`analysis` walks the streams while their block counts are still being computed).
    `budget`: a stream of more analysed positions is walked alone, `budget` positions at a time
    (`long_stream_row`), the others together as before; None: all together.
    """
    g0 = check_gamma(g0, "g0")
    g_max = check_gamma(g_max, "g_max")
    taus = tuple(float(tau) for tau in taus)
    if budget is not None and any(s.valid_len > budget for s in streams):
        return _in_parts(streams, taus, g0, g_max, blocks, fixed, int(budget))
    c, conf, has_conf = _stacked(streams, with_conf=bool(taus))
    n, N = c.lengths, c.ends.size
    zero = c.bits == 0
    dt = _index_dtype(c.bits.size)
    t = np.arange(c.bits.size, dtype=dt)
    left = np.repeat(c.ends.astype(dt), n)  # each position's stream end ...
    left -= t  # ... less the position: positions left in the stream (>= 1)
    ones = np.minimum(_distance_to_next(zero, t), left)  # ones ahead, within the stream

    cz = np.concatenate([[0], np.cumsum(zero, dtype=dt)])
    trailing = (n > 0) & ~zero[np.maximum(c.ends - 1, 0)] if c.bits.size else np.zeros(N, dtype=bool)
    clair_blocks = (cz[c.ends] - cz[c.starts]).astype(np.int64) + trailing

    confidence = np.zeros((N, len(taus), 2), dtype=np.int64)
    if conf is not None:
        # uint8 arrays for the walks (depth <= g_max <= 32, step <= g_max + 1): the walk's gathers stay in cache
        cap = g_max + 1
        left_c = np.minimum(left, cap).astype(np.uint8)
        ones_c = np.minimum(ones, cap).astype(np.uint8)
        for j, tau in enumerate(taus):
            # distance to the next failure (NaN confidence counts as one), capped; past the end: confident
            d = _capped_distance_to_next(~_at_least(conf, tau), cap)
            depth = np.minimum(d, np.uint8(g_max))
            np.copyto(depth, np.uint8(g_max), where=d >= left_c)
            step = np.minimum(ones_c, depth)
            step += np.uint8(1)
            confidence[:, j] = np.stack(_walk(step, depth, c, has_conf), axis=-1)
    return PolicyTable(
        n=n,
        fixed=(np.zeros((N, 0), dtype=np.int64) if not fixed else
               fixed_blocks(c, GAMMAS) if blocks is None else np.asarray(blocks, dtype=np.int64)),
        heuristic=np.stack(_walk_heuristic(ones, c, g0, 1), axis=-1),
        confidence=confidence,
        has_conf=has_conf,
        clairvoyant=np.stack([clair_blocks, n - clair_blocks], axis=-1),
        taus=taus,
        g0=g0,
        g_max=g_max,
    )


def _next_zero(a: np.ndarray, at: int, budget: int) -> int:
    """The first t >= at with a[t] == 0 (a.size when none), looked for `budget` positions at a time."""
    for lo, hi in slices(a.size - at, budget):
        z = np.flatnonzero(a[at + lo:at + hi] == 0)
        if z.size:
            return at + lo + int(z[0])
    return int(a.size)


def _ones_ahead(x: np.ndarray, beyond: int) -> np.ndarray:
    """For each t of the slice x: (the first zero at or after t, counted from the slice's start; `beyond`
    when it lies past the slice) - t."""
    hits = np.flatnonzero(x == 0)
    gaps = np.diff(np.concatenate([[-1], hits, [x.size - 1]]))
    out: np.ndarray = np.repeat(np.append(hits, beyond), gaps) - np.arange(x.size)
    return out


def long_stream_row(bits: np.ndarray, conf: np.ndarray | None, taus: Sequence[float], g0: int, g_max: int,
                    budget: int) -> tuple[tuple[int, int], np.ndarray, tuple[int, int]]:
    """policy_table's row of one stream (heuristic, confidence per tau (zeros without conf),
    clairvoyant), walked `budget` positions at a time: ((blocks, drafted) heuristic, (taus x 2)
    confidence, (blocks, drafted) clairvoyant). Each walk carries its next block's start (and the
    heuristic its g) into the next slice; a slice sees the first zero past it and g_max + 1
    confidences past it, all a block starting in it can read."""
    a = np.asarray(bits)
    n = int(a.size)
    cap = g_max + 1
    s_h, g, h_blocks, h_drafted = 0, max(g0, 1), 0, 0
    s_c = [0] * len(taus)
    confidence = np.zeros((len(taus), 2), dtype=np.int64)
    zero_after = -1  # the first zero at or after the last slice's end (cached across slices)
    for lo, hi in slices(n, budget):
        if zero_after < hi:
            zero_after = _next_zero(a, hi, budget)
        ones = _ones_ahead(a[lo:hi], zero_after - lo)
        # the heuristic (replay.replay_heuristic, one Python step per block, g carried)
        if s_h < hi:
            o_list = ones.tolist()
            s = s_h
            while s < hi:
                o = o_list[s - lo]
                h_blocks += 1
                h_drafted += g
                if o >= g:
                    s += g + 1
                    g += 2
                else:
                    s += o + 1
                    g = g - 1 if g - 1 > 1 else 1
            s_h = s
        if conf is None:
            continue
        left_c = np.minimum(n - np.arange(lo, hi), cap).astype(np.uint8)
        ones_c = np.minimum(ones, cap).astype(np.uint8)
        ahead = conf[lo:min(n, hi + cap)]
        if ahead.dtype != np.float32:  # as policies._stacked keeps it: float32, else float64
            ahead = ahead.astype(np.float64, copy=False)
        for j, tau in enumerate(taus):
            if s_c[j] >= hi:
                continue
            d = _capped_distance_to_next(~_at_least(ahead, tau), cap)[:hi - lo]
            depth = np.minimum(d, np.uint8(g_max))
            np.copyto(depth, np.uint8(g_max), where=d >= left_c)
            step = np.minimum(ones_c, depth)
            step += np.uint8(1)
            first = s_c[j] - lo
            path = first + block_starts(step[first:])
            confidence[j, 0] += path.size
            confidence[j, 1] += int(depth[path].sum())
            s_c[j] = lo + int(path[-1]) + int(step[path[-1]])
    zeros = n - int(np.count_nonzero(a))
    clair = zeros + int(n > 0 and a[-1] != 0)
    return (h_blocks, h_drafted), confidence, (clair, n - clair)


def _in_parts(streams: Sequence[Stream], taus: tuple[float, ...], g0: int, g_max: int, blocks: np.ndarray | None,
              fixed: bool, budget: int) -> PolicyTable:
    """policy_table of these streams with each one longer than `budget` walked alone in slices
    (`long_stream_row`) and the runs of shorter ones between them together: a stream's row
    depends on that stream alone, so the parts stack to the table of all at once."""
    parts: list[PolicyTable] = []
    lo = 0
    for i, s in enumerate([*streams, None]):
        if s is not None and s.valid_len <= budget:
            continue
        if i > lo:
            parts.append(policy_table(streams[lo:i], taus=taus, g0=g0, g_max=g_max, fixed=fixed,
                                      blocks=None if blocks is None else blocks[lo:i]))
        lo = i + 1
        if s is None:
            break
        bits, conf = _analysed(s)
        if conf is not None and conf.size != bits.size:
            raise SpectermError(f"draft_conf has {conf.size} values but the stream has {bits.size} positions; re-create the run.")
        heuristic, confidence, clair = long_stream_row(bits, conf if taus else None, taus, g0, g_max, budget)
        n = np.array([bits.size], dtype=np.int64)
        if not fixed:
            fixed_g = np.zeros((1, 0), dtype=np.int64)
        elif blocks is not None:
            fixed_g = np.asarray(blocks, dtype=np.int64)[i:i + 1]
        else:
            fixed_g = walk_runs(bits, GAMMAS.tolist(), 0, budget).blocks[None]
        parts.append(PolicyTable(n=n, fixed=fixed_g, heuristic=np.array([heuristic], dtype=np.int64),
                                 confidence=confidence[None], has_conf=np.array([conf is not None]),
                                 clairvoyant=np.array([clair], dtype=np.int64), taus=taus, g0=g0, g_max=g_max))
    return PolicyTable.stacked(parts)


def fixed_sums(streams: Sequence[Stream], gammas: Sequence[int] | np.ndarray = GAMMAS) -> np.ndarray:
    """(N x G x 3) int64: tokens, blocks, drafted of each stream at each fixed draft length."""
    g = np.asarray(gammas, dtype=np.int64)
    c, _, _ = _stacked(streams, with_conf=False)
    blocks = fixed_blocks(c, g)
    return np.stack([np.broadcast_to(c.lengths[:, None], blocks.shape), blocks, g * blocks], axis=-1)


def best_fixed_gamma(sums: np.ndarray, r: float, gammas: Sequence[int] | np.ndarray = GAMMAS) -> int:
    """argmax over g of the set's T(g, r) = sum tokens / (sum blocks + r sum drafted); ties: smallest g.

    `sums` is `fixed_sums(streams, gammas)` (N x G x 3).
    """
    tot = np.asarray(sums, dtype=np.float64).sum(axis=0)
    g = best_gamma(throughput(tot[:, 0], tot[:, 1], tot[:, 2], r), gammas)
    return int(np.asarray(gammas)[0]) if g is None else g


def policy_sums(streams: Sequence[Stream], r: float, *, gammas: Sequence[int] = (), taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9),
                g0: int = 5, g_max: int = 16, table: PolicyTable | None = None) -> tuple[list[tuple[str, dict[str, Any]]], np.ndarray]:
    """The policies and their per-stream sums: ([(policy, params), ...], N x P x 3 int64 of tokens, blocks, drafted).

    Order: fixed g for each of `gammas`, best-fixed (argmax over g = 1..32 at r on the whole
    set; chosen once, not per bootstrap resample), heuristic from g0, confidence stop for each tau
    (omitted unless every stream has draft_conf), clairvoyant.

    `table`: these streams' rows of a `policy_table` built with the same taus, g0 and g_max (built
    here when None).
    """
    if not np.isfinite(r) or r < 0:
        raise SpectermError(f"the cost ratio r must be a number >= 0 (got {r}); measure it with `specterm run --cost`.")
    gammas = [check_gamma(g) for g in gammas]
    if table is None:
        table = policy_table(streams, taus=taus, g0=g0, g_max=g_max)
    elif len(table) != len(streams) or table.taus != tuple(float(t) for t in taus) or (table.g0, table.g_max) != (g0, g_max):
        raise ValueError(f"the policy table ({len(table)} streams, taus {table.taus}, g0 {table.g0}, g_max {table.g_max}) "
                         f"was not built for these {len(streams)} streams and parameters")
    fsums = table.fixed_sums()
    g_best = best_fixed_gamma(fsums, r, GAMMAS)
    policies: list[tuple[str, dict[str, Any]]] = [("fixed", {"gamma": int(g)}) for g in gammas]
    policies.append(("best-fixed", {"gamma": g_best, "r": float(r)}))
    policies.append(("heuristic", {"g0": int(g0)}))
    with_conf = bool(table.has_conf.all())
    if with_conf:
        policies += [("confidence", {"tau": float(tau), "g_max": int(g_max)}) for tau in taus]
    policies.append(("clairvoyant", {}))

    n = table.n[:, None]
    cols = [fsums[:, g - 1] if 1 <= g <= GAMMAS[-1] else fixed_sums(streams, [g])[:, 0] for g in gammas]
    cols.append(fsums[:, g_best - 1])
    cols.append(np.hstack([n, table.heuristic]))
    if with_conf:
        cols += [np.hstack([n, table.confidence[:, j]]) for j in range(len(taus))]
    cols.append(np.hstack([n, table.clairvoyant]))
    out = np.stack(cols, axis=1) if len(streams) else np.zeros((0, len(policies), 3), dtype=np.int64)
    return policies, out.astype(np.int64, copy=False)


def policy_summary(streams: Sequence[Stream], r: float, weights: np.ndarray, *, gammas: Sequence[int] = (),
                   taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9), g0: int = 5, g_max: int = 16,
                   table: PolicyTable | None = None, resampled: np.ndarray | None = None) -> list[PolicyRow]:
    """One row per policy (order of `policy_sums`) for a set of streams at cost ratio r.

    Row: report.PolicyRow (policy, params, tokens_per_block, drafted_per_block, and the Estimates
    throughput, vs_best_fixed, vs_clairvoyant; undefined numbers None)
    with T = sum tokens / (sum blocks + r sum drafted) and the ratios T / T_best-fixed, T / T_clairvoyant.
    CIs: percentile bootstrap over streams, one matrix product weights (B x N) @ sums (N x 3P);
    the best fixed g is the one chosen on the whole set. Confidence rows are omitted when any
    stream lacks draft_conf (imported without it); `has_draft_conf(streams)` says so.
    `table`: these streams' rows of a `policy_table` (see `policy_sums`), so that streams shared by
    several sets are replayed once. `resampled`: weights @ sums (B x 3P, the sums of `policy_sums`
    flattened per stream) when the caller has them.
    """
    if len(streams) == 0:
        return []
    policies, sums = policy_sums(streams, r, gammas=gammas, taus=taus, g0=g0, g_max=g_max, table=table)
    n, p, _ = sums.shape
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != n:
        raise ValueError(f"weights must be B x {n} (one column per stream), got {W.shape}")
    tot = sums.sum(axis=0).astype(np.float64)  # P x 3
    boot = (W @ sums.reshape(n, p * 3) if resampled is None else resampled).reshape(-1, p, 3)  # B x P x 3
    T = throughput(tot[:, 0], tot[:, 1], tot[:, 2], r)
    Tb = throughput(boot[..., 0], boot[..., 1], boot[..., 2], r)
    names = [name for name, _ in policies]
    i_best, i_clair = names.index("best-fixed"), names.index("clairvoyant")
    rows: list[PolicyRow] = []
    with np.errstate(divide="ignore", invalid="ignore"):
        # all CIs in one percentile call: columns T, T / T_best, T / T_clair per policy
        lo, hi = percentile_cis(np.concatenate([Tb, Tb / Tb[:, [i_best]], Tb / Tb[:, [i_clair]]], axis=1))
        for j, (name, params) in enumerate(policies):
            rows.append(PolicyRow(
                policy=name,
                params=params,
                tokens_per_block=num(tot[j, 0] / tot[j, 1]) if tot[j, 1] else None,
                drafted_per_block=num(tot[j, 2] / tot[j, 1]) if tot[j, 1] else None,
                throughput=Estimate(value=num(T[j]), ci=[num(lo[j]), num(hi[j])]),
                vs_best_fixed=Estimate(value=num(T[j] / T[i_best]), ci=[num(lo[p + j]), num(hi[p + j])]),
                vs_clairvoyant=Estimate(value=num(T[j] / T[i_clair]), ci=[num(lo[2 * p + j]), num(hi[2 * p + j])]),
            ))
    return rows
