"""Reduction in chunks (issue 39): a set's per-stream sums reduced a few positions at a time
(analysis.position_chunks) equal the sums of all its streams at once, bit for bit; the exact shuffle
column continues its running sum from chunk to chunk (stats.expected_shuffled_blocks_from); and a
run's lines are read one at a time (store.runs.each_stored_line) as the split did."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from specterm.core.report import analysis
from specterm.core.streams import stats as st
from specterm.core.store import Stream
from specterm.core.store.records import BOM
from specterm.core.store.runs import StoredLine, each_stored_line

PARAMS = {"gamma": 4, "boot": 30, "shuffles": -1, "seed": 3}


def random_streams(rng: np.random.Generator, lengths: list[int], gates: bool = True) -> list[Stream]:
    """Streams of these lengths (0 and 1 included) with beta and draft_conf; some with a gate that fails
    somewhere (their analysed stream `a` is a prefix), some repaired (`a` = bits[kept], holes in kept),
    some without a gate."""
    out = []
    for i, n in enumerate(lengths):
        bits = (rng.random(n) < rng.uniform(0.2, 0.95)).astype(np.uint8)
        kw = {"beta": rng.random(n).astype(np.float32), "draft_conf": rng.random(n).astype(np.float32)}
        if gates and i % 3 == 1 and n:
            gate = np.ones(n, np.uint8)
            gate[rng.integers(0, n)] = 0
            kw["gate"] = gate
        if gates and i % 3 == 2 and n:  # repaired: kept = gate == 1, holes anywhere (Stream.kept)
            kw["gate"] = (rng.random(n) < 0.9).astype(np.uint8)
            kw["repairs"] = []
        out.append(Stream(id=f"s{i}", corpus=("code", "prose")[i % 2], bits=bits, **kw))
    return out


def same(x, y) -> None:
    """Equal arrays bit for bit (NaN where NaN)."""
    assert x.shape == y.shape
    np.testing.assert_array_equal(x.view(np.uint8) if x.dtype.kind == "f" else x,
                                  y.view(np.uint8) if y.dtype.kind == "f" else y)


def test_position_chunks_cover_every_stream_once_by_where_it_starts():
    assert analysis.position_chunks([], 10) == [slice(0, 0)]
    assert analysis.position_chunks([4, 4, 4, 0, 4], 10) == [slice(0, 3), slice(3, 5)]  # starts 0 4 8 | 12 12
    assert analysis.position_chunks([25, 1, 1], 10) == [slice(0, 1), slice(1, 3)]  # a long stream alone
    assert analysis.position_chunks([3, 3], 100) == [slice(0, 2)]
    lengths = np.random.default_rng(0).integers(0, 50, 300)
    chunks = analysis.position_chunks(lengths, 64)
    assert chunks[0].start == 0 and chunks[-1].stop == 300
    assert all(a.stop == b.start and a.stop > a.start for a, b in zip(chunks, chunks[1:]))
    assert all(int(lengths[c][:-1].sum()) < 64 for c in chunks)  # at most budget positions before its last stream


@settings(max_examples=25, deadline=None)
@given(lengths=hs.lists(hs.integers(0, 90), min_size=1, max_size=40), budget=hs.integers(1, 200),
       seed=hs.integers(0, 2**16))
def test_chunked_sums_equal_the_sums_at_once(lengths, budget, seed):
    streams = random_streams(np.random.default_rng(seed), lengths)
    whole = analysis._sums(streams, 4, 4, -1, 7, budget=10**9)
    chunked = analysis._sums(streams, 4, 4, -1, 7, budget=budget)
    same(chunked.M, whole.M)
    same(chunked.run_counts(), whole.run_counts())
    raw = st.stream_sums([s.a for s in streams], *st.gate_counts(streams), gamma=4, depth_gamma=4, shuffles=-1, seed=7)
    same(chunked.run_counts(), np.bincount(raw.run_L))  # the runs' counts by length, as counted from the runs
    assert chunked.esb_carry == whole.esb_carry
    for part_whole, part_chunked in zip(analysis._rest(streams, 4, -1, 7, 16, 8, budget=10**9),
                                        analysis._rest(streams, 4, -1, 7, 16, 8, budget=budget)):
        same(part_chunked.M, part_whole.M)


def test_the_running_sum_carries_across_chunks():
    """expected_shuffled_blocks_from in two calls, the second from the first's carry, equals one call;
    from a carry of 0 the second half agrees to rounding only."""
    rng = np.random.default_rng(1)
    n = rng.integers(1, 3000, 400)
    k = rng.binomial(n, 0.7)
    whole, carry = st.expected_shuffled_blocks_from(n, k, 8)
    first, mid = st.expected_shuffled_blocks_from(n[:200], k[:200], 8)
    second, end = st.expected_shuffled_blocks_from(n[200:], k[200:], 8, mid)
    same(np.concatenate([first, second]), whole)
    assert end == carry and mid != 0.0
    same(st.expected_shuffled_blocks(n, k, 8), whole)
    fresh, _ = st.expected_shuffled_blocks_from(n[200:], k[200:], 8)
    np.testing.assert_allclose(fresh, second, rtol=1e-9)


def test_random_shuffles_are_one_draw_over_the_set():
    """shuffles > 0: the set's shuffles are one random draw over all its streams, never chunked."""
    streams = random_streams(np.random.default_rng(2), [40] * 30)
    whole = analysis._sums(streams, 4, 4, 5, 7, budget=10**9)
    same(analysis._sums(streams, 4, 4, 5, 7, budget=50).M, whole.M)


@pytest.mark.parametrize("shuffles", [-1, 0])
def test_a_report_reduced_in_chunks_is_the_report_at_once(monkeypatch, shuffles):
    from conftest import make_run

    rng = np.random.default_rng(4)
    streams = random_streams(rng, [int(x) for x in rng.integers(0, 120, 60)] + [0, 1, 300])
    run = make_run(streams, r=0.2)
    params = {**PARAMS, "shuffles": shuffles}
    whole = analysis.analyse([run], **params).to_dict()
    monkeypatch.setattr(analysis, "CHUNK_POSITIONS", 97)
    assert analysis.analyse([run], **params).to_dict() == whole


def split_lines(data: bytes) -> list[StoredLine]:
    """The reference: stored_lines as it split the whole file at once."""
    data = data.removeprefix(BOM)
    parts = data.split(b"\n")
    out = [StoredLine(i, raw, True) for i, raw in enumerate(parts[:-1], start=1)]
    out.append(StoredLine(len(parts), parts[-1], False))
    return [line for line in out if line.raw.strip()]


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.sampled_from([b"a", b"{}", b" ", b"\n", b"\r", b"\t", BOM, b"\xff"]), max_size=30))
def test_lines_one_at_a_time_are_the_split_lines(pieces):
    data = b"".join(pieces)
    assert list(each_stored_line(data)) == split_lines(data)
