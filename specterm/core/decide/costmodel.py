"""The cost model of specterm, each formula written once (SPEC 2 and 6). Pure numpy.

Costs (seconds, one device, one context length):

    c_decode      one 1-token target step (plain greedy decoding pays one per token)
    c_verify(g)   one (g+1)-token target forward (verifying g drafts)
    c_draft       one 1-token draft step
    c_draft2      one 2-token draft forward (the draft's first step after a fully accepted block)
    o(g)          the block overhead: per-block time outside the forwards, o(g) = a + b g, measured in
                  situ by `specterm costs` (core/decide/hardware/overhead.py; None where not measured)
    c_draft_fwd(g) an engine's per-block draft term: one (g+1)-token draft forward, last row's logits
                  (llama.cpp's draft-simple speculator feeds the target's whole verification batch,
                  [last token, g drafts], to the draft once per block, common/speculative.cpp
                  process(); None for torch runs, whose speculative decoder has no such forward)

Formulas (E = E(g), tokens per block of the block walk, SPEC 2; g = draft length):

    throughput          T = tokens / (blocks + r drafted) = E / (1 + g r),  r = c_draft / c_verify
                        (the cost-ratio model of the measurement seed, SPEC 2: tokens per verify-cost)
    block_cost          c_block(g) = c_verify(g) + g c_draft  [+ c_draft_fwd(g)]  [+ o(g)]  [+ phi(g) (c_draft2 - c_draft)+]
    speedup_hw          S_hw(g) = E c_decode / c_block(g)  (SPEC 6: speedup over plain greedy decoding)
    speedup_mb          S_mb(g) = E / (1 + g c_draft / c_decode)  (S_hw with c_verify(g) := c_decode:
                        the memory-bound reference of SPEC 6)
    refeed_extra        (c_draft2 - c_draft)+, what a 2-token draft step costs beyond a 1-token one
    refeed_share        phi(g) = share of blocks that follow a fully accepted block (exact walk)
    break_even_verify   v*(g) = E - (g c_draft [+ c_draft_fwd(g)] [+ o(g)]) / c_decode: speculation at g pays iff
                        c_verify(g) / c_decode < v* (S_hw > 1  <=>  E c_decode > c_block(g))
    r_or_default        r when a run measured it, else params.R_DEFAULT

A drafter without a model (SPEC 2b) drafts d = min(g, m_s) <= g per block and costs c_draft per block (its
proposal), so its blocks are summed by the tokens each drafted (n_d blocks drafted d; d = 0: a plain decode
step, c_verify(0) = c_decode):

    drafter_block_cost  sum_d n_d c_verify(d) + blocks c_draft  [+ sum_d n_d o(d)]
    drafter_speedup_hw  S_hw(g) = tokens c_decode / drafter_block_cost  (NaN without blocks)

The engine term (a choice where SPEC 6 is silent): SPEC 6's S_hw(g) = E c_decode / (c_verify(g) + g c_draft)
is the block cost of a decoder whose draft advances one token per step and keeps its cache (specterm's
torch decoder). A run measured in an engine that pays more per block stores that term with its costs
(llama.cpp: c_draft_fwd_s / c_draft_fwd_cpu_s, engines/llamacpp/costs_llamacpp.py), and then the decision
(point, CI replicates, decision check, break-even) uses the engine's block cost c_verify(g) + g c_draft
+ c_draft_fwd(g): the speedup of the decoder the user of that engine runs. Without it (c_draft_fwd
None) every formula is SPEC 6's exactly, bit for bit (the term is not added, not added as 0).

Every caller (optimum, decide, hardware, economics, engines/confirm, the screens) takes these from
here; tests/test_costmodel.py fails when a copy of one of these formulas appears elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core.streams.blockwalk import block_accepts
from specterm.core.streams.geometry import block_starts_accepts, concat_streams, segment_runs
from specterm.core.params import GAMMAS, R_DEFAULT

Array = NDArray[np.float64]


def r_or_default(r: float | None) -> float:
    """The cost ratio a computation uses: r when measured (not None), else params.R_DEFAULT."""
    return R_DEFAULT if r is None else float(r)


def throughput(tokens: ArrayLike, blocks: ArrayLike, drafted: ArrayLike, r: float) -> Array:
    """T = tokens / (blocks + r * drafted): tokens per verify-cost, r = c_draft / c_verify (NaN where
    the cost is 0). Per block of a fixed draft length g (tokens/blocks = E(g), drafted/blocks = g)
    this is T(g, r) = E(g) / (1 + g r), the cost-ratio model's speedup over plain decoding."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(tokens, dtype=np.float64) / (
            np.asarray(blocks, dtype=np.float64) + r * np.asarray(drafted, dtype=np.float64))


def curve_throughput(E: ArrayLike, r: float, gammas: ArrayLike = GAMMAS) -> Array:
    """T(g, r) = E(g) / (1 + g r) for a curve E over `gammas`: `throughput(E, 1, g, r)`."""
    return throughput(E, 1.0, gammas, r)


def block_cost(c_verify: ArrayLike, c_draft: ArrayLike, gammas: ArrayLike,
               phi: ArrayLike | None = None, refeed_extra: float = 0.0,
               c_draft_fwd: ArrayLike | None = None, overhead: ArrayLike | None = None) -> Array:
    """c_block(g) = c_verify(g) + g * c_draft [+ c_draft_fwd(g)] [+ o(g)] [+ phi(g) * refeed_extra]: seconds of
    one speculative block (SPEC 6's forwards alone are the case c_draft_fwd, overhead None and phi None or
    refeed_extra 0; c_draft_fwd is an engine's per-block draft forward, overhead the block overhead o(g),
    module docstring). A term given as None is not added (not added as 0: the float sums stay bit for bit)."""
    g = np.asarray(gammas, dtype=np.float64)
    block = np.asarray(c_verify, dtype=np.float64) + g * np.asarray(c_draft, dtype=np.float64)
    if c_draft_fwd is not None:
        block = block + np.asarray(c_draft_fwd, dtype=np.float64)
    if overhead is not None:
        block = block + np.asarray(overhead, dtype=np.float64)
    if phi is not None and refeed_extra:
        block = block + np.asarray(phi, dtype=np.float64) * refeed_extra
    return block


def speedup_hw(E: ArrayLike, c_decode: ArrayLike, c_verify: ArrayLike, c_draft: ArrayLike, gammas: ArrayLike,
               phi: ArrayLike | None = None, refeed_extra: float = 0.0,
               c_draft_fwd: ArrayLike | None = None, overhead: ArrayLike | None = None) -> Array:
    """S_hw(g) = E(g) * c_decode / c_block(g), c_block = `block_cost` (SPEC 6; with an engine's per-block
    term c_draft_fwd(g) and the block overhead o(g) when given), elementwise (broadcasts: cost arrays may
    carry a leading replicate axis)."""
    return (np.asarray(E, dtype=np.float64) * np.asarray(c_decode, dtype=np.float64)
            / block_cost(c_verify, c_draft, gammas, phi, refeed_extra, c_draft_fwd, overhead))


def speedup_mb(E: ArrayLike, r_mb: ArrayLike, gammas: ArrayLike) -> Array:
    """S_mb(g) = E(g) / (1 + g r_mb), r_mb = c_draft / c_decode: S_hw with c_verify(g) := c_decode, the
    memory-bound reference of SPEC 6 ("if a (g+1)-token verify cost one decode step")."""
    return np.asarray(E, dtype=np.float64) / (1.0 + np.asarray(gammas, dtype=np.float64) * np.asarray(r_mb, dtype=np.float64))


def drafter_block_cost(by_drafted: ArrayLike, c_verify_d: ArrayLike, blocks: ArrayLike, c_draft: ArrayLike,
                       overhead_d: ArrayLike | None = None) -> Array:
    """sum_d n_d c_verify(d) + blocks c_draft [+ sum_d n_d o(d)]: seconds of a drafter's blocks (module docstring).
    by_drafted (..., D + 1): n_d, the blocks that drafted d = 0..D; c_verify_d (..., D + 1): c_decode, then
    c_verify(1..D); overhead_d (..., D + 1): o(0..D), None where not measured (not added)."""
    n_d = np.asarray(by_drafted, dtype=np.float64)
    over = None if overhead_d is None else np.sum(n_d * np.asarray(overhead_d, dtype=np.float64), axis=-1)
    return block_cost(np.sum(n_d * np.asarray(c_verify_d, dtype=np.float64), axis=-1), c_draft, blocks, overhead=over)


def drafter_speedup_hw(tokens: ArrayLike, by_drafted: ArrayLike, blocks: ArrayLike, c_decode: ArrayLike,
                       c_verify_d: ArrayLike, c_draft: ArrayLike, overhead_d: ArrayLike | None = None) -> Array:
    """S_hw = tokens c_decode / drafter_block_cost (NaN where the cost is 0: no blocks)."""
    num_ = np.asarray(tokens, dtype=np.float64) * np.asarray(c_decode, dtype=np.float64)
    den = drafter_block_cost(by_drafted, c_verify_d, blocks, c_draft, overhead_d)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(den > 0, num_ / np.where(den > 0, den, 1), np.nan), dtype=np.float64)


def break_even_verify(E: ArrayLike, c_draft: ArrayLike, c_decode: ArrayLike, gammas: ArrayLike,
                      c_draft_fwd: ArrayLike | None = None, overhead: ArrayLike | None = None) -> Array:
    """v*(g) = E(g) - (g * c_draft [+ c_draft_fwd(g)] [+ o(g)]) / c_decode, in decode steps: speculation at g
    pays iff a (g+1)-token verify costs less than v* decode steps (S_hw(g) > 1 <=> c_verify(g) / c_decode < v*)."""
    g = np.asarray(gammas, dtype=np.float64)
    draft = g * np.asarray(c_draft, dtype=np.float64)
    if c_draft_fwd is not None:
        draft = draft + np.asarray(c_draft_fwd, dtype=np.float64)
    if overhead is not None:
        draft = draft + np.asarray(overhead, dtype=np.float64)
    return np.asarray(E, dtype=np.float64) - draft / np.asarray(c_decode, dtype=np.float64)


def refeed_extra(c_draft: float, c_draft2: float | None) -> float:
    """(c_draft2 - c_draft)+: what a 2-token draft step costs beyond a 1-token one (0 when not measured)."""
    return 0.0 if c_draft2 is None else max(0.0, c_draft2 - c_draft)


def refeed_counts(bits: NDArray[np.generic], gammas: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(refeeds, blocks) of one stream at each g: blocks that follow a fully accepted block (k = g),
    and all blocks, as the walk of SPEC 2 cuts the stream."""
    refeeds, blocks = [], []
    for g in np.atleast_1d(np.asarray(gammas)).tolist():
        ks = block_accepts(np.asarray(bits), int(g))
        refeeds.append(int(np.count_nonzero(ks[:-1] == g)))
        blocks.append(int(ks.size))
    return np.array(refeeds, dtype=np.int64), np.array(blocks, dtype=np.int64)


def refeed_share(streams_bits: Iterable[NDArray[np.generic]], gammas: ArrayLike) -> Array:
    """phi(g) = sum refeeds / sum blocks over the streams (ratio of sums); NaN where there are no blocks.

    All streams at once (the walk's blocks of every stream from geometry.block_starts_accepts, in
    stream order): the same counts as summing `refeed_counts` stream by stream."""
    g_list = [int(g) for g in np.atleast_1d(np.asarray(gammas)).tolist()]
    c = concat_streams([np.asarray(b) for b in streams_bits])
    runs = segment_runs(c.bits, c.starts, c.ends)
    tot_r = np.zeros(len(g_list), dtype=np.float64)
    tot_b = np.zeros_like(tot_r)
    for j, g in enumerate(g_list):
        bseg, _, k, _ = block_starts_accepts(runs, c.starts, c.ends, g, ordered=True)
        not_last = np.ones(bseg.size, dtype=bool)  # a stream's last block is followed by nothing
        not_last[:-1] = bseg[1:] == bseg[:-1]
        not_last[-1:] = False
        tot_r[j] = np.count_nonzero((k == g) & not_last)
        tot_b[j] = bseg.size
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Array = tot_r / tot_b
    return out


def refeed_share_iid(alpha: float, gammas: ArrayLike) -> Array:
    """phi_iid(g) = alpha^g: the chance that all g drafts of a block are accepted under i.i.d. acceptance."""
    return np.asarray(alpha, dtype=np.float64) ** np.asarray(gammas, dtype=np.float64)
