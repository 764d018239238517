"""specterm.core.streams.navigate against plain loops (hand-checked cases and random streams)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specterm.core.streams import navigate

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


IDS = ["prose-01", "code-01", "code-10", "math-01", "Code-1"]
PROMPTS = ["Write a poem about the sea.", "def fib(n): ...", None, "What is 2 + 2? Show the CODE.", "print(1)"]


def test_search_ranks_id_matches_before_text_matches():
    # exact id (case-insensitive) "Code-1" first, then ids starting with it, then the text match
    assert navigate.search_prompts("code-1", IDS, PROMPTS) == [4, 2]
    assert navigate.search_prompts("CODE", IDS, PROMPTS) == [1, 2, 4, 3]
    assert navigate.search_prompts("-01", IDS, PROMPTS) == [0, 1, 3]
    assert navigate.search_prompts("the sea", IDS, PROMPTS) == [0]
    assert navigate.search_prompts("nothing like this", IDS, PROMPTS) == []
    assert navigate.search_prompts("  ", IDS, PROMPTS) == [0, 1, 2, 3, 4]
    assert navigate.search_prompts("fib", IDS, PROMPTS) == [1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text("abAB-", max_size=5), st.one_of(st.none(), st.text("abAB ", max_size=8))), max_size=8),
       st.text("abAB-", min_size=1, max_size=3))
def test_search_finds_exactly_the_substring_matches(rows, query):
    ids, prompts = [r[0] for r in rows], [r[1] for r in rows]
    q = query.strip().casefold()
    got = navigate.search_prompts(query, ids, prompts)
    expected = {i for i, (pid, text) in enumerate(rows) if not q or q in pid.casefold() or (text is not None and q in text.casefold())}
    assert sorted(got) == sorted(expected)
    assert len(got) == len(set(got))


def test_cycle_match():
    assert navigate.cycle_match([], 3) is None
    assert navigate.cycle_match([4, 2, 7], None) == 4
    assert navigate.cycle_match([4, 2, 7], 5, -1) == 7
    assert navigate.cycle_match([4, 2, 7], 4) == 2
    assert navigate.cycle_match([4, 2, 7], 7) == 4
    assert navigate.cycle_match([4, 2, 7], 4, -1) == 7


@pytest.mark.parametrize("text,cursor,n,t", [
    ("0", 5, 10, 0), ("9", 0, 10, 9), (" 42 ", 0, 100, 42),
    ("+3", 5, 10, 8), ("+30", 5, 10, 9), ("-2", 5, 10, 3), ("- 9", 5, 10, 0), ("500", 0, 10, 9), ("150%", 0, 11, 10),
    ("50%", 0, 11, 5), ("100%", 0, 11, 10), ("0%", 7, 11, 0), ("33.3%", 0, 4096, 1363),
    ("$", 0, 10, 9), ("END", 0, 10, 9), ("0", 0, 1, 0), ("+1", 0, 1, 0),
])
def test_jump_position(text, cursor, n, t):
    assert navigate.jump_position(text, cursor, n) == t


@pytest.mark.parametrize("text,cursor,n,t,note", [
    ("10", 0, 10, 9, "t = 10 is outside this stream (t = 0..9): the cursor went to the last position, t = 9."),
    ("500", 3, 64, 63, "t = 500 is outside this stream (t = 0..63): the cursor went to the last position, t = 63."),
    ("150%", 0, 10, 9, "150% is outside this stream (t = 0..9): the cursor went to the last position, t = 9."),
    ("+500", 5, 64, 63, "+500 from t = 5 is outside this stream (t = 0..63): the cursor went to the last position, t = 63."),
    ("-9", 5, 10, 0, "-9 from t = 5 is outside this stream (t = 0..9): the cursor went to the first position, t = 0."),
    ("100%", 0, 10, 9, None), ("+4", 5, 10, 9, None), ("9", 0, 10, 9, None),
])
def test_jump_past_an_end_goes_there_and_says_so(text, cursor, n, t, note):
    """One rule for every form (issue 20: `:500` was clamped silently, `:150%` refused)."""
    assert navigate.jump_target(text, cursor, n) == (t, note)


@pytest.mark.parametrize("text,n,message", [
    ("abc", 10, "'abc' is not a position"),
    ("", 10, "is not a position"),
    ("1.5", 10, "is not a position"),
    ("0", 0, "no positions"),
])
def test_jump_position_errors_are_one_sentence(text, n, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        navigate.jump_position(text, 0, n)


def test_keys_over_a_stream_with_excluded_positions_move_in_absolute_positions():
    # t:     0  1  2  3  4  5  6  7  8
    # bits:  1  0  1  1  0  1  1  0  1      kept: t = 4 and 7 excluded (a repaired stream's holes)
    # a (analysed) = bits[kept] = 1 0 1 1 1 1 1 at t = 0 1 2 3 5 6 8
    from specterm.core.streams import navigate as N
    from specterm.core.store import Stream

    bits = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1], dtype=np.uint8)
    gate = np.ones(9, dtype=np.uint8)
    gate[[4, 7]] = 0
    s = Stream(id="s", corpus="c", bits=bits, gate=gate, repairs=[])  # repaired: excluded one by one
    a, pos = s.a, s.kept_t
    assert not s.contiguous and pos.tolist() == [0, 1, 2, 3, 5, 6, 8] and a.tolist() == [1, 0, 1, 1, 1, 1, 1]
    assert N.next_rejection_at(a, pos, 0) == 1
    assert N.next_rejection_at(a, pos, 1) is None          # t = 4 and 7 are zeros but excluded
    assert N.prev_rejection_at(a, pos, 8) == 1
    assert N.prev_rejection_at(a, pos, 4) == 1             # from an excluded position
    assert N.longest_run_at(a, pos) == (2, 5)              # t = 2, 3, 5, 6, 8: the run joins across the holes
    assert N.run_at_position(a, pos, 6) == (2, 5)
    assert N.run_at_position(a, pos, 7) is None            # not analysed
    # a prefix (torch, the first-failure rule) needs no mapping and keeps the plain functions' answers
    prefix = Stream(id="p", corpus="c", bits=bits, gate=np.array([1] * 6 + [0, 1, 1], dtype=np.uint8))
    assert prefix.contiguous and prefix.valid_len == 6
    assert N.next_rejection_at(prefix.a, None, 1) == N.next_rejection(bits[:6], 1) == 4
