"""Moving through streams: rejections, the longest run, a rolling alpha, finding a prompt, jumping
to a position.

Pure functions over a stream a_0..a_{n-1} (uint8, 1 = the draft's guess at t was accepted) or over
the prompts' ids and texts. The Streams screen binds keys to them; they never touch the terminal.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Sequence

import numpy as np


SCAN_FIRST = 256
"""The first window a scan from the cursor looks at; each next one is 16 times longer. A rejection or
a run's end is near the cursor in any stream with alpha < 1, so a key press on a 5M-position stream
reads a few hundred positions, not the rest of the stream (the result is the same: the first match)."""


def _windows(start: int, stop: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) windows covering start..stop, SCAN_FIRST long then 16 times longer each."""
    size = SCAN_FIRST
    while start < stop:
        yield start, min(start + size, stop)
        start, size = start + size, size * 16


def next_rejection(bits: np.ndarray, t: int) -> int | None:
    """Smallest t' > t with a_{t'} = 0, or None when no rejection follows t."""
    a = np.asarray(bits)
    for lo, hi in _windows(max(t + 1, 0), a.size):
        found = np.flatnonzero(a[lo:hi] == 0)
        if found.size:
            return lo + int(found[0])
    return None


def prev_rejection(bits: np.ndarray, t: int) -> int | None:
    """Largest t' < t with a_{t'} = 0, or None when no rejection precedes t."""
    a = np.asarray(bits)
    end = min(max(t, 0), a.size)
    for lo, hi in _windows(0, end):  # windows counted back from t: [end - hi, end - lo)
        found = np.flatnonzero(a[end - hi : end - lo] == 0)
        if found.size:
            return end - hi + int(found[-1])
    return None


def runs_of_ones(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of every maximal run of ones, closed or trailing, in order.

    With d = diff([0, a, 0]), a run starts where d = +1 and ends (exclusive) where d = -1.
    """
    a = np.asarray(bits, dtype=np.int8)
    d = np.diff(np.concatenate(([0], a, [0])))
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return starts, ends - starts


def longest_run(bits: np.ndarray) -> tuple[int, int]:
    """(start, length) of the longest run of ones; the earliest on ties; (0, 0) when there is none."""
    starts, lengths = runs_of_ones(bits)
    if lengths.size == 0:
        return 0, 0
    i = int(np.argmax(lengths))  # argmax returns the first maximum: earliest run wins ties
    return int(starts[i]), int(lengths[i])


def run_at(bits: np.ndarray, t: int) -> tuple[int, int] | None:
    """(start, length) of the run of ones that contains position t, or None when a_t = 0: it starts
    after the last rejection before t and ends at the first one after it (or the stream's end)."""
    a = np.asarray(bits)
    if not 0 <= t < a.size or a[t] == 0:
        return None
    before = prev_rejection(a, t)
    after = next_rejection(a, t)
    start = 0 if before is None else before + 1
    return start, (a.size if after is None else after) - start


def next_rejection_at(a: np.ndarray, positions: np.ndarray | None, t: int) -> int | None:
    """`next_rejection` for a cursor at absolute position t over the analysed stream a (positions: the
    absolute t of each analysed position, Stream.kept_t; None when they are 0..len(a)-1): the smallest
    analysed t' > t with a = 0, as an absolute position."""
    if positions is None:
        return next_rejection(a, t)
    j = next_rejection(a, int(np.searchsorted(positions, t, side="right")) - 1)
    return None if j is None else int(positions[j])


def prev_rejection_at(a: np.ndarray, positions: np.ndarray | None, t: int) -> int | None:
    """`prev_rejection` for a cursor at absolute position t: the largest analysed t' < t with a = 0."""
    if positions is None:
        return prev_rejection(a, t)
    j = prev_rejection(a, int(np.searchsorted(positions, t, side="left")))
    return None if j is None else int(positions[j])


def longest_run_at(a: np.ndarray, positions: np.ndarray | None) -> tuple[int, int]:
    """`longest_run` with its start as an absolute position (its length counts analysed positions)."""
    start, length = longest_run(a)
    return (int(positions[start]), length) if positions is not None and length else (start, length)


def run_at_position(a: np.ndarray, positions: np.ndarray | None, t: int) -> tuple[int, int] | None:
    """`run_at` for absolute position t (None also when t is not analysed); start as a position."""
    if positions is None:
        return run_at(a, t)
    j = int(np.searchsorted(positions, t))
    if j >= positions.size or positions[j] != t:
        return None
    got = run_at(a, j)
    return None if got is None else (int(positions[got[0]]), got[1])


def rolling_alpha(bits: np.ndarray, window: int = 16) -> np.ndarray:
    """Trailing-window acceptance rate: alpha_t = mean(a_{max(0, t-w+1)} .. a_t), t = 0..n-1.

    The first w-1 positions average over the shorter prefix they have (a choice: no padding).
    From the cumulative sum c (c_0 = 0): alpha_t = (c_{t+1} - c_lo) / (t + 1 - lo), lo = max(0, t-w+1).
    """
    if window < 1:
        raise ValueError("window must be >= 1")
    a = np.asarray(bits)
    out = np.empty(a.size, dtype=np.float64)
    step = 1 << 20  # in slices: a 5M-position stream never holds five 40 MB temporaries at once
    for s0 in range(0, a.size, step):
        s1 = min(s0 + step, a.size)
        b0 = max(0, s0 - window + 1)  # the slice's windows reach back window - 1 positions
        c = np.concatenate(([0.0], np.cumsum(a[b0:s1], dtype=np.float64)))
        t = np.arange(s0, s1)
        lo = np.maximum(0, t - window + 1)
        out[s0:s1] = (c[t + 1 - b0] - c[lo - b0]) / (t + 1 - lo)
    return out


def stream_alpha(bits: np.ndarray) -> float:
    """alpha of one stream: sum a / n (NaN for an empty stream). The bits are 0/1, so sum a is their
    count of ones (count_nonzero: a few times cheaper than mean() per call, and the same float: an
    exact integer over n, rounded once; the Streams list makes one per prompt)."""
    a = np.asarray(bits)
    return np.count_nonzero(a) / a.size if a.size else float("nan")


def piece_lookup(pairs: Iterable[tuple[np.ndarray, list[str]]]) -> dict[int, str]:
    """Token id -> decoded piece, learned from streams that kept both y and its pieces.

    Lets the Streams screen spell the draft's rejected guess without loading a tokenizer when the
    same id occurs anywhere in y; ids never seen in y stay unknown (shown as their id).
    """
    table: dict[int, str] = {}
    for ids, pieces in pairs:
        table.update(zip(np.asarray(ids).tolist(), pieces))
    return table


def last_occurrences(ids: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, k, t): every token id u_j found in the arrays ids_0, ids_1, ..., ascending, with the array
    k_j and position t_j of its last occurrence (the last array holding it, its last position there).

    piece_lookup's answer without a piece per position: the piece of id u_j is piece t_j of stream
    k_j (piece_at), fetched when asked for. Over the arrays concatenated (x), the last occurrence
    of u is len(x) - 1 - (first index of u in x reversed).
    """
    sizes = np.array([np.asarray(y).size for y in ids], dtype=np.int64)
    if not sizes.sum():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    x = np.concatenate([np.asarray(y, dtype=np.int64) for y in ids])
    u, first_reversed = np.unique(x[::-1], return_index=True)
    last = x.size - 1 - first_reversed
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    k = np.searchsorted(offsets, last, side="right") - 1
    return u, k, last - offsets[k]


def piece_at(text: str, piece_ends: np.ndarray, t: int) -> str:
    """The decoded piece of token t: text[e_{t-1}:e_t] with e_{-1} = 0 (no list of every piece)."""
    return text[int(piece_ends[t - 1]) if t > 0 else 0 : int(piece_ends[t])]


def search_prompts(query: str, ids: Sequence[str], prompts: Sequence[str | None],
                   continuations: Sequence[str | None] | None = None) -> list[int]:
    """Indices i of the prompts whose id, prompt text or continuation (the decoded y, what the
    Streams screen shows) contains `query`, ignoring case (casefold).

    Ranked best first, in list order within a rank: the id equals the query, the id starts with it,
    the id contains it, the prompt text contains it, the continuation contains it. A query of only
    spaces matches every prompt (the search box cleared shows them all); a prompt kept without
    text (None) matches by id only.
    """
    q = query.strip().casefold()
    if not q:
        return list(range(len(ids)))
    ranked: list[tuple[int, int]] = []
    conts = list(continuations) if continuations is not None else [None] * len(ids)
    for i, (pid, text, cont) in enumerate(zip(ids, prompts, conts)):
        key = pid.casefold()
        if key == q:
            rank = 0
        elif key.startswith(q):
            rank = 1
        elif q in key:
            rank = 2
        elif text is not None and q in text.casefold():
            rank = 3
        elif cont is not None and q in cont.casefold():
            rank = 4
        else:
            continue
        ranked.append((rank, i))
    return [i for _, i in sorted(ranked)]


def cycle_match(matches: Sequence[int], current: int | None, step: int = 1) -> int | None:
    """The match `step` places after `current` in `matches` (wrapping around), the first match when
    `current` is not among them, None when there is no match (n / N after a search)."""
    if not matches:
        return None
    if current is None or current not in matches:
        return matches[0] if step >= 0 else matches[-1]
    return matches[(list(matches).index(current) + step) % len(matches)]


_POSITION = re.compile(r"^\s*(?:(?P<sign>[+-])\s*(?P<rel>\d+)|(?P<abs>\d+)|(?P<pct>\d+(?:\.\d+)?)\s*%|(?P<end>\$|end))\s*$",
                       re.IGNORECASE)


def jump_target(text: str, cursor: int, n: int) -> tuple[int, str | None]:
    """The position t a jump request names, for a stream of n positions with the cursor at `cursor`,
    and a sentence when the request lay outside the stream (None when it did not).

    `t` (0-based) goes there; `+k` / `-k` move k positions from the cursor; `p%` goes to
    floor(p/100 (n - 1)); `$` or `end` to n - 1. One rule for every form: a request past either end
    goes to that end (t = 0 or n - 1) and the sentence says so (`500`, `150%` and `+500` alike).
    Raises ValueError with one sentence for text that is not a position, or for an empty stream.
    """
    if n <= 0:
        raise ValueError("this stream has no positions to jump to.")
    m = _POSITION.match(text)
    if m is None:
        raise ValueError(f"'{text.strip()}' is not a position: type t (0..{n - 1}), +k, -k, p% or $.")
    last = n - 1
    if m["end"]:
        return last, None
    if m["abs"] is not None:
        want = int(m["abs"])
        what = f"t = {want}"
    elif m["rel"] is not None:
        k = int(m["rel"]) * (1 if m["sign"] == "+" else -1)
        want = cursor + k
        what = f"{m['sign']}{m['rel']} from t = {cursor}"
    else:
        pct = float(m["pct"])
        want = int(pct / 100 * last) if pct <= 100 else n + int((pct - 100) / 100 * last)
        what = f"{m['pct']}%"
    t = min(max(want, 0), last)
    if t == want:
        return t, None
    end = "the last position" if t == last else "the first position"
    return t, f"{what} is outside this stream (t = 0..{last}): the cursor went to {end}, t = {t}."


def jump_position(text: str, cursor: int, n: int) -> int:
    """jump_target's position alone."""
    return jump_target(text, cursor, n)[0]
