"""specterm.core.navigate against plain loops (hand-checked cases and random streams)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specterm.core import navigate

bits_strategy = st.lists(st.integers(0, 1), min_size=0, max_size=60).map(lambda v: np.array(v, dtype=np.uint8))


def loop_runs(bits):
    """(start, length) of every maximal run of ones, by walking the stream."""
    out, start = [], None
    for t, b in enumerate(list(bits) + [0]):
        if b and start is None:
            start = t
        elif not b and start is not None:
            out.append((start, t - start))
            start = None
    return out


def test_hand_checked_stream():
    a = np.array([1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1], dtype=np.uint8)
    assert navigate.next_rejection(a, 0) == 2
    assert navigate.next_rejection(a, 2) == 6
    assert navigate.next_rejection(a, 6) == 7
    assert navigate.next_rejection(a, 7) is None
    assert navigate.prev_rejection(a, 10) == 7
    assert navigate.prev_rejection(a, 2) is None
    # two runs of 3 (t 3..5 and the trailing t 8..10): the earliest wins
    assert navigate.longest_run(a) == (3, 3)
    assert navigate.run_at(a, 4) == (3, 3)
    assert navigate.run_at(a, 6) is None
    assert navigate.run_at(a, 10) == (8, 3)
    assert navigate.stream_alpha(a) == pytest.approx(8 / 11)


def test_no_ones_and_empty():
    assert navigate.longest_run(np.zeros(4, dtype=np.uint8)) == (0, 0)
    assert navigate.longest_run(np.zeros(0, dtype=np.uint8)) == (0, 0)
    assert navigate.rolling_alpha(np.zeros(0, dtype=np.uint8)).size == 0
    assert np.isnan(navigate.stream_alpha(np.zeros(0, dtype=np.uint8)))


def test_rolling_alpha_by_hand():
    a = np.array([1, 0, 1, 1, 0], dtype=np.uint8)
    # window 2: [1/1, 1/2, 1/2, 2/2, 1/2]
    assert navigate.rolling_alpha(a, 2).tolist() == pytest.approx([1.0, 0.5, 0.5, 1.0, 0.5])
    with pytest.raises(ValueError):
        navigate.rolling_alpha(a, 0)


@settings(max_examples=200, deadline=None)
@given(bits_strategy, st.integers(0, 70))
def test_rejections_match_a_scan(bits, t):
    after = [i for i in range(t + 1, bits.size) if bits[i] == 0]
    before = [i for i in range(min(t, bits.size)) if bits[i] == 0]
    assert navigate.next_rejection(bits, t) == (after[0] if after else None)
    assert navigate.prev_rejection(bits, t) == (before[-1] if before else None)


@settings(max_examples=200, deadline=None)
@given(bits_strategy)
def test_runs_match_a_walk(bits):
    runs = loop_runs(bits)
    starts, lengths = navigate.runs_of_ones(bits)
    assert list(zip(starts.tolist(), lengths.tolist())) == runs
    best = max(runs, key=lambda r: r[1], default=(0, 0))  # max() keeps the first of equal keys
    assert navigate.longest_run(bits) == best
    for t in range(bits.size):
        inside = [r for r in runs if r[0] <= t < r[0] + r[1]]
        assert navigate.run_at(bits, t) == (inside[0] if inside else None)


@settings(max_examples=100, deadline=None)
@given(bits_strategy, st.integers(1, 10))
def test_rolling_alpha_matches_slices(bits, window):
    expected = [bits[max(0, t - window + 1) : t + 1].mean() for t in range(bits.size)]
    assert navigate.rolling_alpha(bits, window) == pytest.approx(expected)


def test_piece_lookup_learns_ids_from_y():
    table = navigate.piece_lookup([(np.array([5, 7]), [" a", " b"]), (np.array([7, 9]), [" b", "c"])])
    assert table == {5: " a", 7: " b", 9: "c"}
