"""The block walk: hand-computed cases, and closed form == SPEC loop on thousands of random streams."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.streams import geometry as geo
from specterm.core.streams.blockwalk import E_iid, block_accepts, block_counts, block_walk_loop, run_lengths


def bits(text: str) -> np.ndarray:
    return np.array([int(c) for c in text], dtype=np.uint8)


def walk_trace(a: np.ndarray, g: int) -> list[tuple[int, int]]:
    """(start s, accepted k) of every block, by the SPEC loop written out again (independent reference)."""
    n, s, out = len(a), 0, []
    while s < n:
        k = 0
        while k < g and s + k < n and a[s + k] == 1:
            k += 1
        out.append((s, k))
        s += k + 1
    return out


# (bits, gamma, tokens, blocks), worked by hand from the SPEC loop
HAND = [
    ("11111", 2, 5, 2),      # all ones: blocks at s=0 (k=2, 3 tokens), s=3 (k=2, cut: 2 tokens)
    ("0000", 3, 4, 4),       # all zeros: one token per block
    ("1110", 3, 4, 1),       # run of exactly g then the zero: k=3 plus the correction
    ("11110", 3, 5, 2),      # run of g+1: full block (k=3, bonus = 4th one), then the zero alone
    ("011", 2, 3, 2),        # trailing run shorter than g: the block is cut by the end (2 tokens)
    ("0111", 2, 4, 2),       # trailing run of g+1: k=2 and its bonus
    ("01111", 2, 5, 3),      # trailing run of g+2: full block with bonus, then a cut block
    ("011111", 2, 6, 3),     # trailing run of 2(g+1)-1: full block, then k=2 cut before its bonus
    ("", 4, 0, 0),
    ("1", 1, 1, 1),
    ("0", 5, 1, 1),
    ("1011001", 1, 7, 5),    # blocks at s=0 (k=1), 2 (k=1), 4 (k=0), 5 (k=0), 6 (k=1, cut)
]


@pytest.mark.parametrize("text,g,tokens,blocks", HAND)
def test_hand_cases(text, g, tokens, blocks):
    a = bits(text)
    assert block_walk_loop(a, g) == (tokens, blocks, g * blocks)
    t, b, d = block_counts(a, g)
    assert (int(t), int(b), int(d)) == (tokens, blocks, g * blocks)


def test_hand_accepts_and_runs():
    assert block_accepts(bits("11110"), 3).tolist() == [3, 0]
    assert block_accepts(bits("1011001"), 1).tolist() == [1, 1, 0, 0, 1]
    assert block_accepts(bits("0111"), 2).tolist() == [0, 2]
    closed, trailing = run_lengths(bits("0110100111"))
    assert closed.tolist() == [0, 2, 1, 0] and trailing == 3
    closed, trailing = run_lengths(bits("111"))
    assert closed.tolist() == [] and trailing == 3


def random_streams(rng, count, max_len):
    return [(rng.random(int(rng.integers(0, max_len + 1))) < rng.random()).astype(np.uint8) for _ in range(count)]


def test_closed_form_equals_loop_every_gamma():
    rng = np.random.default_rng(7)
    gammas = np.arange(1, 33)
    for a in random_streams(rng, 2000, 40):
        tokens, blocks, drafted = block_counts(a, gammas)
        ref = np.array([block_walk_loop(a, int(g)) for g in gammas])
        assert np.array_equal(tokens, ref[:, 0]) and np.array_equal(blocks, ref[:, 1]) and np.array_equal(drafted, ref[:, 2])


def test_vectorised_walk_over_many_streams_equals_loop():
    rng = np.random.default_rng(8)
    arrays = random_streams(rng, 1500, 50)
    c = geo.concat_streams(arrays)
    runs = geo.segment_runs(c.bits, c.starts, c.ends)
    for g in range(1, 33):
        blocks = geo.walk_blocks(runs, len(arrays), g)
        assert blocks.tolist() == [block_walk_loop(a, g)[1] for a in arrays]


@pytest.mark.parametrize("g", [1, 2, 3, 5, 8, 16, 32])
def test_block_starts_and_accepts_equal_the_loop(g):
    rng = np.random.default_rng(g)
    arrays = random_streams(rng, 400, 60)
    c = geo.concat_streams(arrays)
    runs = geo.segment_runs(c.bits, c.starts, c.ends)
    seg, s, k, left = geo.block_starts_accepts(runs, c.starts, c.ends, g)
    for i, a in enumerate(arrays):
        trace = walk_trace(a, g)
        mine = seg == i
        assert list(zip(s[mine].tolist(), k[mine].tolist())) == trace
        assert left[mine].tolist() == [len(a) - t[0] for t in trace]
        assert k[mine].tolist() == block_accepts(a, g).tolist()


@pytest.mark.parametrize("g", [1, 4, 8])
def test_depth_counts_by_definition(g):
    rng = np.random.default_rng(100 + g)
    arrays = random_streams(rng, 300, 40)
    c = geo.concat_streams(arrays)
    acc, reach, uncut = geo.depth_counts(geo.segment_runs(c.bits, c.starts, c.ends), c.starts, c.ends, g)
    for i, a in enumerate(arrays):
        trace = walk_trace(a, g)
        for j in range(1, g + 1):
            observable = [(s, k) for s, k in trace if len(a) - s >= j]
            assert uncut[i, j - 1] == len(observable)
            assert reach[i, j - 1] == sum(k >= j - 1 for _, k in observable)
            assert acc[i, j - 1] == sum(k >= j for _, k in observable)


def test_runs_of_concatenation_match_per_stream():
    rng = np.random.default_rng(3)
    arrays = random_streams(rng, 500, 30)
    c = geo.concat_streams(arrays)
    runs = geo.segment_runs(c.bits, c.starts, c.ends)
    for i, a in enumerate(arrays):
        closed, trailing = run_lengths(a)
        assert runs.L[runs.seg == i].tolist() == closed.tolist()
        assert runs.trailing[i] == trailing


def test_E_iid_closed_form():
    for alpha in (0.0, 0.3, 0.77, 0.999, 1.0):
        for g in (1, 2, 8, 32):
            assert E_iid(alpha, g) == pytest.approx(sum(alpha**j for j in range(g + 1)))


@pytest.mark.parametrize("alpha,gamma,n", [(0.7, 3, 8), (0.4, 1, 7), (0.9, 5, 6), (0.5, 8, 9)])
def test_expected_blocks_iid_equals_every_stream_weighted_by_its_probability(alpha, gamma, n):
    """B(n) of the recursion against the walk over all 2^n streams, each weighted alpha^ones (1-alpha)^zeros."""
    import itertools

    from specterm.core.streams.blockwalk import block_walk_loop, expected_blocks_iid

    want = 0.0
    for bits in itertools.product((0, 1), repeat=n):
        ones = sum(bits)
        weight = alpha ** ones * (1 - alpha) ** (n - ones)
        _, blocks, _ = block_walk_loop(np.array(bits, dtype=np.uint8), gamma)
        want += weight * blocks
    assert expected_blocks_iid(alpha, gamma, n) == pytest.approx(want, rel=1e-12)


def test_expected_blocks_iid_long_stream_approaches_e_iid():
    """n / B(n) -> E_iid as n grows (the cut last block's share shrinks like 1/n)."""
    from specterm.core.streams.blockwalk import E_iid, expected_blocks_iid

    e = float(E_iid(0.8, 8))
    short, long = 128 / expected_blocks_iid(0.8, 8, 128), 20000 / expected_blocks_iid(0.8, 8, 20000)
    assert short < long < e and e - long < (e - short) / 50
