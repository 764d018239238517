"""One long stream reduced in slices with carries (longstream.py, issue 39): every sum equals the
reduction of the whole stream at once, bit for bit, wherever the slice boundaries fall (inside blocks,
inside runs, a budget of 1 or 7 positions), and the reduction's peak memory follows the slice, not the
stream."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from specterm.core.report import analysis
from specterm.core.streams import stats as st
from specterm.core.streams.geometry import concat_streams, depth_counts, segment_runs
from specterm.core.streams.longstream import (long_position_sums, long_sampling_sums, long_steady_sums, long_stream_sums,
                                      pairwise_sum, walk_runs)
from specterm.core.decide.policies import long_stream_row as long_policy_row
from specterm.core.decide.policies import policy_table
from specterm.core.streams.position import position_sums
from specterm.core.decide.replay import replay_confidence, replay_heuristic
from specterm.core.streams.sampling import sampling_sums
from specterm.core.streams.steady import steady_sums
from specterm.core.store import Stream
from test_chunked import random_streams, same

HAND = {
    "long run across every boundary": [1] * 40 + [0] + [1] * 3 + [0, 0] + [1] * 19,
    "all ones": [1] * 50,
    "all zeros": [0] * 23,
    "alternating": [1, 0] * 20,
    "ends in a zero": [1] * 9 + [0] + [1] * 17 + [0],
    "one": [1],
    "a zero": [0],
    "runs of 8 and 9 (blocks of g = 8 end at the boundary)": ([1] * 8 + [0] + [1] * 9 + [0]) * 4 + [1] * 5,
}
BUDGETS = (1, 2, 3, 7, 9, 16)


def bits(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint8)


@pytest.mark.parametrize("name", HAND)
@pytest.mark.parametrize("budget", BUDGETS)
def test_a_stream_in_slices_has_the_sums_of_the_stream_at_once(name, budget):
    a = bits(HAND[name])
    whole = st.stream_sums([a], np.array([a.size + 3.0]), np.array([a.size + 5.0]), gamma=8, depth_gamma=8,
                           shuffles=-1, esb_carry=0.25)
    part = long_stream_sums(a, a.size + 3.0, a.size + 5.0, 8, 8, -1, 0.25, budget)
    same(part.M, whole.M)
    same(part.run_counts(), np.bincount(whole.run_L))
    assert part.esb_carry == whole.esb_carry
    same(long_stream_sums(a, a.size, a.size, 8, 3, 0, 0.0, budget).M,
         st.stream_sums([a], gamma=8, depth_gamma=3, shuffles=0).M)
    steady = steady_sums([a], 4, -1, esb_carry=1.5)
    got = long_steady_sums(a, 4, -1, 32, 1.5, budget)
    same(got.M, steady.M)
    assert got.esb_carry == steady.esb_carry
    same(long_position_sums(a, None, 4, 30, budget).M, position_sums([a], bin_width=4, n_bins=30).M)


@pytest.mark.parametrize("name", HAND)
@pytest.mark.parametrize("budget", BUDGETS)
def test_depth_counts_in_closed_form_equal_the_blocks_counted(name, budget):
    a = bits(HAND[name])
    c = concat_streams([a])
    runs = segment_runs(c.bits, c.starts, c.ends)
    for G in (1, 2, 5, 8):
        w = walk_runs(a, [G], G, budget)
        acc, reach, uncut = depth_counts(runs, c.starts, c.ends, G)
        same(w.acc, acc[0])
        same(w.reach, reach[0])
        same(w.uncut, uncut[0])


@pytest.mark.parametrize("name", HAND)
@pytest.mark.parametrize("budget", BUDGETS)
def test_policies_walked_in_slices_are_the_one_stream_replays(name, budget):
    """Against replay.py (one stream at a time, independently written): the heuristic's g and each
    confidence walk's next block carry across the slice boundaries."""
    a = bits(HAND[name])
    conf = np.random.default_rng(len(a)).random(a.size).astype(np.float32)
    taus = (0.0, 0.3, 0.9, 1.5)
    heuristic, confidence, clair = long_policy_row(a, conf, taus, 5, 6, budget)
    h = replay_heuristic(a, g0=5)
    assert heuristic == (h.blocks, h.drafted)
    for j, tau in enumerate(taus):
        r = replay_confidence(a, conf, tau, g_max=6)
        assert tuple(confidence[j]) == (r.blocks, r.drafted)
    zeros = int((a == 0).sum())
    assert clair[0] == zeros + int(a[-1] == 1) and clair[1] == a.size - clair[0]


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 129, 257, 8193, 100_003])
@pytest.mark.parametrize("budget", [1, 7, 200, 1 << 20])
def test_pairwise_sums_in_pieces_follow_numpys_tree(n, budget):
    """np.add.reduce is a pairwise sum over the whole length (and np.add.reduceat's span its first value
    plus that of the rest): summed in pieces of `budget` values down numpy's tree, every bit is numpy's."""
    x = np.random.default_rng(n).random(n) * 2 - 0.9

    def values(lo: int, hi: int) -> np.ndarray:
        assert hi - lo <= max(budget, 128)  # never more than a piece at a time
        return x[lo:hi]

    assert pairwise_sum(values, 0, n, budget) == np.add.reduce(x)
    if n > 1:
        assert x[0] + pairwise_sum(values, 1, n, budget) == np.add.reduceat(x, [0])[0]


@pytest.mark.parametrize("beta", [[], [0.5], [0.5, 0.25], [0.9] * 40, [0.9, 1.0] * 30, [1.0] * 39 + [0.5], "random"])
@pytest.mark.parametrize("budget", [1, 3, 7, 64])
def test_sampling_sums_in_pieces_are_the_sums_at_once(beta, budget):
    b = np.random.default_rng(3).random(3000) if beta == "random" else np.array(beta)
    b = b.astype(np.float32)
    same(long_sampling_sums(b, budget).M, sampling_sums([b]).M)
    same(long_sampling_sums(None, budget).M, sampling_sums([None]).M)


def long_streams(rng: np.random.Generator, lengths: list[int]) -> list[Stream]:
    """random_streams (beta, draft_conf, gates that fail, repaired streams) with some runs of ones
    longer than any budget below."""
    streams = random_streams(rng, lengths)
    for s in streams[::4]:
        if s.n > 10:
            lo = int(rng.integers(0, s.n - 5))
            s.bits[lo:lo + int(rng.integers(5, 60))] = 1
    return streams


@settings(max_examples=30, deadline=None)
@given(lengths=hs.lists(hs.integers(0, 150), min_size=1, max_size=12), budget=hs.integers(1, 40),
       seed=hs.integers(0, 2**16))
def test_sets_with_long_streams_reduce_to_the_sums_at_once(lengths, budget, seed):
    streams = long_streams(np.random.default_rng(seed), lengths)
    whole = analysis._sums(streams, 4, 6, -1, 7, budget=10**9)
    chunked = analysis._sums(streams, 4, 6, -1, 7, budget=budget)
    same(chunked.M, whole.M)
    same(chunked.run_counts(), whole.run_counts())
    assert chunked.esb_carry == whole.esb_carry
    for part_whole, part_chunked in zip(analysis._rest(streams, 4, -1, 7, 16, 10, budget=10**9),
                                        analysis._rest(streams, 4, -1, 7, 16, 10, budget=budget)):
        same(part_chunked.M, part_whole.M)
    at_once = policy_table(streams, g_max=7)
    in_slices = policy_table(streams, g_max=7, budget=budget)
    for field in ("n", "fixed", "heuristic", "confidence", "has_conf", "clairvoyant"):
        same(getattr(in_slices, field), getattr(at_once, field))


def test_the_exact_shuffle_expectation_splits_a_stream_across_term_ranges(monkeypatch):
    """expected_shuffled_blocks_from with ranges of 5 terms (every stream split, its running sum at its
    first term and its two partial sums carried) and with every log taken term by term equals ranges of
    2^15 terms with the log table."""
    rng = np.random.default_rng(5)
    n = np.concatenate([rng.integers(0, 40, 30), [500, 0, 1, 2]])
    k = rng.binomial(n, 0.7)
    whole, carry = st.expected_shuffled_blocks_from(n, k, 8, 0.125)
    monkeypatch.setattr(st, "ESB_CHUNK", 5)
    split, carry_split = st.expected_shuffled_blocks_from(n, k, 8, 0.125)
    same(split, whole)
    assert carry_split == carry
    monkeypatch.setattr(st, "ESB_TABLE_MAX", 0)
    by_term, carry_term = st.expected_shuffled_blocks_from(n, k, 8, 0.125)
    same(by_term, whole)
    assert carry_term == carry


def test_a_report_with_a_stream_longer_than_the_budget_is_the_report_at_once(monkeypatch):
    from conftest import make_run

    rng = np.random.default_rng(6)
    streams = long_streams(rng, [400, 30, 7, 260, 0, 90])
    run = make_run(streams, r=0.2)
    params = {"gamma": 4, "boot": 30, "shuffles": -1, "seed": 3}
    whole = analysis.analyse([run], **params).to_dict()
    monkeypatch.setattr(analysis, "CHUNK_POSITIONS", 37)
    assert analysis.analyse([run], **params).to_dict() == whole


def traced_peak(fn) -> int:
    """Peak bytes traced (tracemalloc) while fn() runs, above what was allocated before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_the_reduction_of_a_long_stream_takes_memory_by_the_slice():
    """2M positions (with draft_conf and beta) in slices of 2^14: the sums, the steady / position sums and the
    policy table and the sampling sums peak under 150 bytes a slice position + 4 MB (the exact shuffle expectation's range of
    stats.ESB_CHUNK terms, about 3 MB, and small tables), where the stream at once takes tens of bytes a
    stream position (about 20x more here; the same measure of the whole stream must exceed the bound
    tenfold, or the bound proves nothing)."""
    n, budget = 2_000_000, 1 << 14
    rng = np.random.default_rng(7)
    s = Stream(id="long", corpus="c", bits=(rng.random(n) < 0.7).astype(np.uint8),
               draft_conf=rng.random(n).astype(np.float32), beta=rng.random(n).astype(np.float32))
    bound = 150 * budget + (4 << 20)

    def reduce(b: int) -> None:
        analysis._sums([s], 8, 8, -1, 0, budget=b)
        analysis._rest([s], 8, -1, 0, 16 * 2048, 62, budget=b)
        policy_table([s], fixed=False, budget=b)

    assert traced_peak(lambda: reduce(budget)) < bound
    assert traced_peak(lambda: walk_runs(s.bits, [8], 8, budget)) < bound
    assert traced_peak(lambda: reduce(n)) > 10 * bound
