"""Draft-length policies replayed exactly on stored streams (SPEC section 5).

Every policy walks blocks the way SPEC section 2 does. A block starting at s with draft length g:

    k       = leading ones in a_s .. a_{min(s+g, n)-1}       accepted draft tokens
    tokens += min(k + 1, n - s)                              k accepted + one target token
    blocks += 1                                              one verify call
    s      += k + 1

Policies differ only in how g is chosen for each block:

- fixed g: g every block (equals `blockwalk.block_counts` / `block_accepts`);
- heuristic (Hugging Face `num_assistant_tokens_schedule="heuristic"`): start at g0; the next
  block drafts g + 2 after a fully accepted block (k == g), else max(g_min, g - 1);
- confidence stop (llama.cpp `--draft-p-min`): the draft proposes depth j only while its top-1
  probability draft_conf[s+j-1] >= tau, up to g_max;
- clairvoyant: draft exactly up to the first rejection.

Throughput is tokens per verify-cost, T = tokens / (blocks + r * drafted), r = c_draft / c_verify.

Why the replay is exact: within a block the draft at depth j is conditioned on y whenever depths
1..j-1 were accepted, so a_t and draft_conf[t] are exactly what a live decoder sees at every depth
up to and including the first rejection. tokens, blocks and accepts depend on nothing else.

Choices (also in the docstrings below):
- Horizon: a block cut by the end of the stream is charged its full draft length (as the SPEC
  walk charges g), although a live decoder capped at max_new_tokens may draft fewer there. This
  touches `drafted` of at most the last block of each stream, never tokens, blocks or accepts.
- Confidence stop past the first rejection: the live draft's confidences there are conditioned
  on a wrong token and were never stored; the replay uses the stored draft_conf of those
  positions as a proxy. This is the one approximation, and it affects `drafted` only.

Sets of streams (`policy_table`, `policy_sums`, `policy_summary`) replay all streams at once and
give exactly the numbers of the one-stream replays: fixed g in closed form over the runs of all
streams, clairvoyant in closed form, heuristic and confidence stop walking every stream one block
per round in numpy. tokens = n under every policy. A table is built once and each set (a corpus,
the pooled set) takes its streams' rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from specterm.core.blockwalk import block_accepts, block_counts, run_lengths
from specterm.core.bootstrap import percentile_ci
from specterm.core.errors import SpectermError

GAMMAS = np.arange(1, 33)


@dataclass(frozen=True, eq=False)
class PolicyCounts:
    """One stream under one policy: totals, and per block the accepted count k and the draft length used."""

    tokens: int
    blocks: int
    drafted: int
    accepts: np.ndarray  # accepted draft tokens per block, in order
    drafts: np.ndarray  # draft length used in each block

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicyCounts):
            return NotImplemented
        return (
            (self.tokens, self.blocks, self.drafted) == (other.tokens, other.blocks, other.drafted)
            and np.array_equal(self.accepts, other.accepts)
            and np.array_equal(self.drafts, other.drafts)
        )

    def throughput(self, r: float) -> float:
        """tokens / (blocks + r * drafted)."""
        return float(throughput(self.tokens, self.blocks, self.drafted, r))


def throughput(tokens, blocks, drafted, r):
    """T = tokens / (blocks + r * drafted): tokens per verify-cost (NaN where the cost is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(tokens, dtype=np.float64) / (np.asarray(blocks, dtype=np.float64) + r * np.asarray(drafted, dtype=np.float64))


def _check_gamma(gamma: int, name: str = "gamma") -> int:
    if int(gamma) != gamma or gamma < 0:
        raise SpectermError(f"{name} must be a whole number >= 0 (got {gamma}); pass a draft length like 4.")
    return int(gamma)


def _ones_ahead(a: np.ndarray) -> np.ndarray:
    """o_t = number of consecutive ones starting at t (up to the next zero or the end): o_t <= n - t."""
    n = a.size
    zeros = np.flatnonzero(a == 0)
    t = np.arange(n)
    next_zero = np.append(zeros, n)[np.searchsorted(zeros, t)]
    return next_zero - t


def _block_starts(step: np.ndarray) -> np.ndarray:
    """Starts of the walk s_0 = 0, s_{i+1} = s_i + step[s_i] (step >= 1) while s < n.

    Pointer doubling: after round k `path` holds s_0 .. s_{2^k - 1} and `jump` = next^(2^k), so
    jump[path] is the next 2^k starts. log2(blocks) rounds of O(n) array work, no loop per block.
    """
    n = step.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    jump = np.append(np.minimum(np.arange(n) + step, n), n)  # n is absorbing
    path = np.zeros(1, dtype=np.int64)
    while path[-1] < n:
        path = np.concatenate([path, jump[path]])
        jump = jump[jump]
    return path[path < n]


def replay_fixed(bits: np.ndarray, gamma: int) -> PolicyCounts:
    """Fixed draft length gamma every block: the SPEC walk itself (closed form over runs).

    drafted = gamma * blocks, including a last block cut by the end of the stream.
    """
    gamma = _check_gamma(gamma)
    tokens, blocks, drafted = block_counts(bits, gamma)
    return PolicyCounts(
        tokens=int(tokens),
        blocks=int(blocks),
        drafted=int(drafted),
        accepts=block_accepts(bits, gamma),
        drafts=np.full(int(blocks), gamma, dtype=np.int64),
    )


def replay_heuristic(bits: np.ndarray, g0: int = 5, g_min: int = 1) -> PolicyCounts:
    """Hugging Face `heuristic` schedule: start at g0; next g = g + 2 if the block's k == g, else max(g_min, g - 1).

    Unbounded above, like Hugging Face (which caps only at max_length). One Python step per block
    (the schedule's state g makes the walk sequential), O(1) each from precomputed ones-ahead counts.

    Horizon: a block cut by the end of the stream (k = n - s < g) is the stream's last block, so
    the schedule's update after it never matters; it is charged its full g in `drafted`, as the
    SPEC walk charges fixed g. (Hugging Face caps that last draft at max_length and compares k
    with the capped length; only `drafted` of that one block can differ.)
    """
    g0 = _check_gamma(g0, "g0")
    g_min = _check_gamma(g_min, "g_min")
    a = np.asarray(bits)
    n = a.size
    ones = _ones_ahead(a).tolist()
    accepts: list[int] = []
    drafts: list[int] = []
    s, g, tokens = 0, max(g0, g_min), 0
    while s < n:
        k = min(ones[s], g)
        accepts.append(k)
        drafts.append(g)
        tokens += min(k + 1, n - s)
        s += k + 1
        g = g + 2 if k == g else max(g_min, g - 1)
    acc = np.asarray(accepts, dtype=np.int64)
    dr = np.asarray(drafts, dtype=np.int64)
    return PolicyCounts(tokens=tokens, blocks=acc.size, drafted=int(dr.sum()), accepts=acc, drafts=dr)


def replay_confidence(bits: np.ndarray, draft_conf: np.ndarray, tau: float, g_max: int = 16,
                      inclusive: bool = False) -> PolicyCounts:
    """Confidence stop, llama.cpp `--draft-p-min` semantics: depth j (1-based) of a block at s is
    drafted only if draft_conf[s+j-1] >= tau (and all shallower depths were drafted), up to g_max.

        g_s = min(g_max, number of leading t >= s with draft_conf[t] >= tau)
        k   = min(ones ahead of s, g_s)

    If depth 1 already fails, the block drafts 0 tokens and the target emits one token (a plain
    decode step, still one verify call). tau = 0 equals fixed g_max exactly; tau > 1 never drafts.

    `inclusive=True` is the Hugging Face `assistant_confidence_threshold` (and older llama.cpp)
    variant: the first token below tau is still proposed, then drafting stops (g_s >= 1).

    Choices: positions past the end of the stream count as confident (no confidence was stored
    there), so a block reaching the horizon is charged up to g_max, as the SPEC walk charges fixed
    g. Past the block's first rejection the stored draft_conf is a proxy for the live draft's
    (conditioned on a wrong token, never stored): it moves `drafted` only, never tokens, blocks
    or accepts, because k is fixed by depths up to the first rejection, all conditioned on y.
    """
    g_max = _check_gamma(g_max, "g_max")
    a = np.asarray(bits)
    conf = np.asarray(draft_conf, dtype=np.float64)
    n = a.size
    if conf.size != n:
        raise SpectermError(f"draft_conf has {conf.size} values but the stream has {n} positions; re-create the run.")
    t = np.arange(n)
    fail = np.flatnonzero(~(conf >= tau))  # NaN confidence counts as a failure
    next_fail = np.append(fail, n + g_max + 1)[np.searchsorted(fail, t)]
    depth = np.minimum(next_fail - t + int(inclusive), g_max)
    k = np.minimum(_ones_ahead(a), depth)
    starts = _block_starts(k + 1)
    acc = k[starts].astype(np.int64)
    dr = depth[starts].astype(np.int64)
    tokens = int(np.minimum(acc + 1, n - starts).sum())
    return PolicyCounts(tokens=tokens, blocks=int(starts.size), drafted=int(dr.sum()), accepts=acc, drafts=dr)


def replay_clairvoyant(bits: np.ndarray) -> PolicyCounts:
    """Draft exactly up to the first rejection: the bound no policy beats at any r <= 1.

    A closed run of L ones then a zero is one block drafting L and yielding L + 1 (L = 0: a plain
    decode step); a trailing run of L > 0 ones is one block drafting L - 1 and yielding L (the last
    token comes from the target). So blocks = #zeros + [trailing > 0] is the fewest any policy can
    use (a zero can only be a block's target token) and drafted = n - blocks the fewest for that;
    every policy has cost blocks + r * drafted >= r n + (1 - r) blocks_min for r <= 1.
    """
    a = np.asarray(bits)
    closed, trailing = run_lengths(a)
    acc = np.concatenate([closed, [trailing - 1]]) if trailing else closed
    acc = acc.astype(np.int64)
    return PolicyCounts(tokens=int(a.size), blocks=int(acc.size), drafted=int(acc.sum()), accepts=acc, drafts=acc.copy())


# ------------------------------------------------------------------------ sets of streams ---

# Below this many streams still walking, a lockstep walk finishes the rest one stream at a time:
# each lockstep round costs a fixed numpy overhead, which a few long streams would pay per block.
LOCKSTEP_MIN = 16


def _analysed(stream) -> tuple[np.ndarray, np.ndarray | None]:
    """The analysed stream (bits before the first gate failure) and its draft_conf, cut alike."""
    n = stream.valid_len
    conf = None if stream.draft_conf is None else np.asarray(stream.draft_conf)[:n]
    return np.asarray(stream.bits)[:n], conf


def has_draft_conf(streams: Sequence) -> bool:
    """True when every stream kept the draft's confidences (needed by the confidence stop)."""
    return all(s.draft_conf is not None for s in streams)


@dataclass(frozen=True)
class _Stacked:
    """Every analysed stream end to end: stream i is a[starts[i]:ends[i]] (conf NaN where it has none)."""

    a: np.ndarray
    conf: np.ndarray | None
    has_conf: np.ndarray  # bool per stream
    starts: np.ndarray
    ends: np.ndarray

    @property
    def n(self) -> np.ndarray:
        return self.ends - self.starts


def _stacked(streams: Sequence, with_conf: bool = True) -> _Stacked:
    """Concatenate the analysed streams (and their draft_conf as float64, as `replay_confidence` reads it)."""
    cut = [_analysed(s) for s in streams]
    n = np.array([bits.size for bits, _ in cut], dtype=np.int64)
    ends = np.cumsum(n)
    starts = ends - n
    a = np.concatenate([bits for bits, _ in cut]) if cut else np.zeros(0, dtype=np.uint8)
    has_conf = np.array([c is not None for _, c in cut], dtype=bool)
    conf = None
    if with_conf and has_conf.any():
        for (bits, c) in cut:
            if c is not None and c.size != bits.size:
                raise SpectermError(f"draft_conf has {c.size} values but the stream has {bits.size} positions; re-create the run.")
        # float32 -> float64 is exact, so one cast of the whole equals a cast per stream
        conf = np.concatenate([np.full(bits.size, np.nan, np.float32) if c is None else c for bits, c in cut])
        conf = conf.astype(np.float64, copy=False)
    return _Stacked(a=a, conf=conf, has_conf=has_conf, starts=starts, ends=ends)


def _next_true(mask: np.ndarray) -> np.ndarray:
    """For each t the first index u >= t with mask[u], or mask.size when there is none."""
    hits = np.flatnonzero(mask)
    return np.repeat(np.append(hits, mask.size), np.diff(hits, prepend=-1, append=mask.size - 1))


def _fixed_blocks(st: _Stacked, gammas: np.ndarray, v_hist: int = 64) -> np.ndarray:
    """(N x G) blocks of every stream at every fixed g, closed form over the runs of all streams at once:

        blocks(g) = sum over runs of ceil(v / (g + 1)),  v = L + 1 for a closed run, L for the trailing run

    (blockwalk's formula). Runs end after each zero and at each stream's end; v is the gap between
    consecutive run ends. Runs with v <= v_hist go through a per-stream histogram of v times the
    table ceil(v / (g + 1)); longer ones are summed one g at a time. tokens = n, drafted = g * blocks.
    """
    N = st.ends.size
    out = np.zeros((N, gammas.size), dtype=np.int64)
    if N == 0:
        return out
    # a stable sort merges the two sorted lists in linear time
    run_end = np.sort(np.concatenate([np.flatnonzero(st.a == 0) + 1, st.ends]), kind="stable")
    v = np.diff(run_end, prepend=0)
    sid = np.searchsorted(st.ends, run_end, side="left")  # a run ending at e: the first stream ending at or after e
    gp1 = gammas + 1
    short = v <= v_hist
    width = min(int(v.max()), v_hist) + 1
    hist = np.bincount(sid[short] * width + v[short], minlength=N * width).reshape(N, width)
    ceil = -(-np.arange(width)[:, None] // gp1)
    out += (hist.astype(np.float64) @ ceil.astype(np.float64)).astype(np.int64)  # exact: integers far below 2**53
    v_long, sid_long = v[~short], sid[~short]
    if v_long.size:
        for j, q in enumerate(gp1.tolist()):
            out[:, j] += np.bincount(sid_long, weights=(v_long + q - 1) // q, minlength=N).astype(np.int64)
    return out


def _walk(step: np.ndarray, cost: np.ndarray, st: _Stacked, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, drafted) per stream of a walk whose step depends on the position only: s -> s + step[s]
    from each active stream's start while s < its end; blocks counts the block starts, drafted sums
    cost over them. All streams advance one block per round together; the last few still walking
    finish alone through `_block_starts` (a round's numpy overhead would otherwise be paid per block).
    """
    blocks = np.zeros(st.ends.size, dtype=np.int64)
    drafted = np.zeros(st.ends.size, dtype=np.int64)
    idx = np.flatnonzero(active & (st.starts < st.ends))
    pos, end = st.starts[idx], st.ends[idx]
    while idx.size and idx.size >= LOCKSTEP_MIN:
        blocks[idx] += 1
        drafted[idx] += cost[pos]
        pos = pos + step[pos]
        keep = pos < end
        idx, pos, end = idx[keep], pos[keep], end[keep]
    for i, p, e in zip(idx.tolist(), pos.tolist(), end.tolist()):
        path = p + _block_starts(step[p:e])
        blocks[i] += path.size
        drafted[i] += int(cost[path].sum())
    return blocks, drafted


def _walk_heuristic(ones: np.ndarray, st: _Stacked, g0: int, g_min: int) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, drafted) per stream of `replay_heuristic`, all streams in lockstep with a per-stream g:

        k = min(ones ahead of s, g);  s += k + 1;  g = g + 2 if k == g else max(g_min, g - 1)

    The last few streams still walking finish alone through `replay_heuristic` from their current g.
    """
    blocks = np.zeros(st.ends.size, dtype=np.int64)
    drafted = np.zeros(st.ends.size, dtype=np.int64)
    idx = np.flatnonzero(st.starts < st.ends)
    pos, end = st.starts[idx], st.ends[idx]
    g = np.full(idx.size, max(g0, g_min), dtype=np.int64)
    while idx.size and idx.size >= LOCKSTEP_MIN:
        k = np.minimum(ones[pos], g)
        blocks[idx] += 1
        drafted[idx] += g
        pos = pos + k + 1
        g = np.where(k == g, g + 2, np.maximum(g_min, g - 1))
        keep = pos < end
        idx, pos, end, g = idx[keep], pos[keep], end[keep], g[keep]
    for i, p, e, gi in zip(idx.tolist(), pos.tolist(), end.tolist(), g.tolist()):
        rest = replay_heuristic(st.a[p:e], g0=gi, g_min=g_min)
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

    def rows(self, index) -> PolicyTable:
        """The table of a subset of the streams (a slice or index array), in that order."""
        return PolicyTable(n=self.n[index], fixed=self.fixed[index], heuristic=self.heuristic[index],
                           confidence=self.confidence[index], has_conf=self.has_conf[index],
                           clairvoyant=self.clairvoyant[index], taus=self.taus, g0=self.g0, g_max=self.g_max)

    def fixed_sums(self) -> np.ndarray:
        """(N x 32 x 3) tokens, blocks, drafted at g = 1..32, as `fixed_sums(streams)`."""
        n = np.broadcast_to(self.n[:, None], self.fixed.shape)
        return np.stack([n, self.fixed, GAMMAS * self.fixed], axis=-1)


def policy_table(streams: Sequence, *, taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9), g0: int = 5,
                 g_max: int = 16) -> PolicyTable:
    """Every stream replayed once under fixed g = 1..32, heuristic from g0, confidence stop at each tau
    (streams with draft_conf) and clairvoyant; all streams at once, equal to the one-stream replays.

    A set of streams takes its rows (`PolicyTable.rows`), so streams shared by several sets (each
    corpus and the pooled set) are replayed once. Clairvoyant in closed form: blocks = zeros +
    [trailing run > 0], drafted = n - blocks.
    """
    g0 = _check_gamma(g0, "g0")
    g_max = _check_gamma(g_max, "g_max")
    taus = tuple(float(tau) for tau in taus)
    st = _stacked(streams, with_conf=bool(taus))
    n, N = st.n, st.ends.size
    zero = st.a == 0
    t = np.arange(st.a.size)
    end_t = np.repeat(st.ends, n)  # each position's stream end
    ones = np.minimum(_next_true(zero), end_t) - t  # ones ahead, within the stream

    cz = np.concatenate([[0], np.cumsum(zero)])
    trailing = (n > 0) & ~zero[np.maximum(st.ends - 1, 0)] if st.a.size else np.zeros(N, dtype=bool)
    clair_blocks = cz[st.ends] - cz[st.starts] + trailing

    confidence = np.zeros((N, len(taus), 2), dtype=np.int64)
    if st.conf is not None:
        for j, tau in enumerate(taus):
            next_fail = _next_true(~(st.conf >= tau))  # NaN confidence counts as a failure
            depth = np.where(next_fail < end_t, np.minimum(next_fail - t, g_max), g_max)  # past the end: confident
            step = np.minimum(ones, depth) + 1
            confidence[:, j] = np.stack(_walk(step, depth, st, st.has_conf), axis=-1)
    return PolicyTable(
        n=n,
        fixed=_fixed_blocks(st, GAMMAS),
        heuristic=np.stack(_walk_heuristic(ones, st, g0, 1), axis=-1),
        confidence=confidence,
        has_conf=st.has_conf,
        clairvoyant=np.stack([clair_blocks, n - clair_blocks], axis=-1),
        taus=taus,
        g0=g0,
        g_max=g_max,
    )


def fixed_sums(streams: Sequence, gammas: Sequence[int] | np.ndarray = GAMMAS) -> np.ndarray:
    """(N x G x 3) int64: tokens, blocks, drafted of each stream at each fixed draft length."""
    g = np.asarray(gammas, dtype=np.int64)
    st = _stacked(streams, with_conf=False)
    blocks = _fixed_blocks(st, g)
    return np.stack([np.broadcast_to(st.n[:, None], blocks.shape), blocks, g * blocks], axis=-1)


def best_fixed_gamma(sums: np.ndarray, r: float, gammas: Sequence[int] | np.ndarray = GAMMAS) -> int:
    """argmax over g of the set's T(g, r) = sum tokens / (sum blocks + r sum drafted); ties: smallest g.

    `sums` is `fixed_sums(streams, gammas)` (N x G x 3).
    """
    tot = np.asarray(sums, dtype=np.float64).sum(axis=0)
    T = throughput(tot[:, 0], tot[:, 1], tot[:, 2], r)
    if not np.any(np.isfinite(T)):
        return int(np.asarray(gammas)[0])
    return int(np.asarray(gammas)[np.nanargmax(T)])


def policy_sums(streams: Sequence, r: float, *, gammas: Sequence[int] = (), taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9),
                g0: int = 5, g_max: int = 16, table: PolicyTable | None = None) -> tuple[list[tuple[str, dict]], np.ndarray]:
    """The policies and their per-stream sums: ([(policy, params), ...], N x P x 3 int64 of tokens, blocks, drafted).

    Order: fixed g for each of `gammas`, best-fixed (argmax over g = 1..32 at r on the whole
    set; chosen once, not per bootstrap resample), heuristic from g0, confidence stop for each tau
    (omitted unless every stream has draft_conf), clairvoyant.

    `table`: these streams' rows of a `policy_table` built with the same taus, g0 and g_max (built
    here when None).
    """
    if not np.isfinite(r) or r < 0:
        raise SpectermError(f"the cost ratio r must be a number >= 0 (got {r}); pass e.g. --r 0.1.")
    gammas = [_check_gamma(g) for g in gammas]
    if table is None:
        table = policy_table(streams, taus=taus, g0=g0, g_max=g_max)
    elif len(table) != len(streams) or table.taus != tuple(float(t) for t in taus) or (table.g0, table.g_max) != (g0, g_max):
        raise ValueError(f"the policy table ({len(table)} streams, taus {table.taus}, g0 {table.g0}, g_max {table.g_max}) "
                         f"was not built for these {len(streams)} streams and parameters")
    fsums = table.fixed_sums()
    g_best = best_fixed_gamma(fsums, r, GAMMAS)
    policies: list[tuple[str, dict]] = [("fixed", {"gamma": int(g)}) for g in gammas]
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


def _value_ci(point: float, samples: np.ndarray) -> dict:
    lo, hi = percentile_ci(samples)
    return {"value": float(point), "ci": [lo, hi]}


def policy_summary(streams: Sequence, r: float, weights: np.ndarray, *, gammas: Sequence[int] = (),
                   taus: Sequence[float] = (0.3, 0.5, 0.7, 0.9), g0: int = 5, g_max: int = 16,
                   table: PolicyTable | None = None) -> list[dict]:
    """One row per policy (order of `policy_sums`) for a set of streams at cost ratio r.

    Row: {"policy", "params", "tokens_per_block", "drafted_per_block",
          "throughput": {"value", "ci"}, "vs_best_fixed": {"value", "ci"}, "vs_clairvoyant": {"value", "ci"}}
    with T = sum tokens / (sum blocks + r sum drafted) and the ratios T / T_best-fixed, T / T_clairvoyant.
    CIs: percentile bootstrap over streams, one matrix product weights (B x N) @ sums (N x 3P);
    the best fixed g is the one chosen on the whole set. Confidence rows are omitted when any
    stream lacks draft_conf (imported without it); `has_draft_conf(streams)` says so.
    `table`: these streams' rows of a `policy_table` (see `policy_sums`), so that streams shared by
    several sets are replayed once.
    """
    if len(streams) == 0:
        return []
    policies, sums = policy_sums(streams, r, gammas=gammas, taus=taus, g0=g0, g_max=g_max, table=table)
    n, p, _ = sums.shape
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != n:
        raise ValueError(f"weights must be B x {n} (one column per stream), got {W.shape}")
    tot = sums.sum(axis=0).astype(np.float64)  # P x 3
    boot = (W @ sums.reshape(n, p * 3)).reshape(-1, p, 3)  # B x P x 3
    T = throughput(tot[:, 0], tot[:, 1], tot[:, 2], r)
    Tb = throughput(boot[..., 0], boot[..., 1], boot[..., 2], r)
    names = [name for name, _ in policies]
    i_best, i_clair = names.index("best-fixed"), names.index("clairvoyant")
    rows = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for j, (name, params) in enumerate(policies):
            rows.append({
                "policy": name,
                "params": params,
                "tokens_per_block": float(tot[j, 0] / tot[j, 1]) if tot[j, 1] else float("nan"),
                "drafted_per_block": float(tot[j, 2] / tot[j, 1]) if tot[j, 1] else float("nan"),
                "throughput": _value_ci(T[j], Tb[:, j]),
                "vs_best_fixed": _value_ci(T[j] / T[i_best], Tb[:, j] / Tb[:, i_best]),
                "vs_clairvoyant": _value_ci(T[j] / T[i_clair], Tb[:, j] / Tb[:, i_clair]),
            })
    return rows
