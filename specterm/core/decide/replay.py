"""Draft-length policies replayed exactly on ONE stored stream (SPEC section 5).

Every policy walks blocks the way SPEC section 2 does. A block starting at s with draft length g:

    k       = leading ones in a_s .. a_{min(s+g, n)-1}       accepted draft tokens
    tokens += min(k + 1, n - s)                              k accepted + one target token
    blocks += 1                                              one verify call
    s      += k + 1

Policies differ only in how g is chosen for each block:

- fixed g: g every block (equals `blockwalk.block_counts` / `block_accepts`);
- heuristic (Hugging Face `num_assistant_tokens_schedule="heuristic"`, `heuristic_next`): start
  at g0; the next block drafts g + 2 after a fully accepted block (k == g), else max(g_min, g - 1);
- confidence stop (llama.cpp `--draft-p-min`): the draft proposes depth j only while its top-1
  probability draft_conf[s+j-1] >= tau, up to g_max;
- clairvoyant: draft exactly up to the first rejection.

Throughput is tokens per verify-cost, T = tokens / (blocks + r * drafted) (`optimum.throughput`).

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

policies.py replays whole sets of streams at once (the vectorised table) and gives exactly the
numbers of these one-stream replays.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing import overload

import numpy as np

from specterm.core.streams.blockwalk import block_accepts, block_counts, run_lengths
from specterm.core.errors import SpectermError
from specterm.core.decide.optimum import throughput


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


def check_gamma(gamma: int, name: str = "gamma") -> int:
    if int(gamma) != gamma or gamma < 0:
        raise SpectermError(f"{name} must be a whole number >= 0 (got {gamma}); pass a draft length like 4.")
    return int(gamma)


@overload
def heuristic_next(g: int, k: int, g_min: int = 1) -> int: ...
@overload
def heuristic_next(g: np.ndarray, k: np.ndarray, g_min: int = 1) -> np.ndarray: ...
def heuristic_next(g: int | np.ndarray, k: int | np.ndarray, g_min: int = 1) -> int | np.ndarray:
    """The Hugging Face `heuristic` schedule (num_assistant_tokens_schedule="heuristic"): after a
    block that drafted g and had k accepted, the next block drafts

        g + 2 if k == g (fully accepted), else max(g_min, g - 1)

    g, k: ints, or equal-shape integer arrays (one entry per stream walking in lockstep)."""
    if isinstance(g, np.ndarray):
        return np.where(k == g, g + 2, np.maximum(g_min, g - 1))
    return g + 2 if k == g else max(g_min, g - 1)


def _ones_ahead(a: np.ndarray) -> np.ndarray:
    """o_t = number of consecutive ones starting at t (up to the next zero or the end): o_t <= n - t."""
    n = a.size
    zeros = np.flatnonzero(a == 0)
    t = np.arange(n)
    next_zero = np.append(zeros, n)[np.searchsorted(zeros, t)]
    return next_zero - t


def block_starts(step: np.ndarray) -> np.ndarray:
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
    gamma = check_gamma(gamma)
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
    g0 = check_gamma(g0, "g0")
    g_min = check_gamma(g_min, "g_min")
    a = np.asarray(bits)
    n = a.size
    ones = _ones_ahead(a).tolist()
    accepts: list[int] = []
    drafts: list[int] = []
    put_k, put_g = accepts.append, drafts.append
    s, g = 0, max(g0, g_min)
    # heuristic_next inlined: this loop is the one sequential path of a long stream (one step per block)
    while s < n:
        o = ones[s]
        put_g(g)
        if o >= g:  # fully accepted: k = g
            put_k(g)
            s += g + 1
            g += 2
        else:
            put_k(o)
            s += o + 1
            g = g - 1 if g - 1 > g_min else g_min
    acc = np.asarray(accepts, dtype=np.int64)
    dr = np.asarray(drafts, dtype=np.int64)
    # every position is emitted exactly once (sum of min(k + 1, n - s) over the blocks)
    return PolicyCounts(tokens=int(n), blocks=acc.size, drafted=int(dr.sum()), accepts=acc, drafts=dr)


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
    g_max = check_gamma(g_max, "g_max")
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
    starts = block_starts(k + 1)
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
