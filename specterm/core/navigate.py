"""Moving through streams: rejections, the longest run, a rolling alpha, finding a prompt, jumping
to a position.

Pure functions over a stream a_0..a_{n-1} (uint8, 1 = the draft's guess at t was accepted) or over
the prompts' ids and texts. The Streams screen binds keys to them; they never touch the terminal.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import numpy as np


def next_rejection(bits: np.ndarray, t: int) -> int | None:
    """Smallest t' > t with a_{t'} = 0, or None when no rejection follows t."""
    after = np.flatnonzero(np.asarray(bits)[t + 1 :] == 0)
    return int(t + 1 + after[0]) if after.size else None


def prev_rejection(bits: np.ndarray, t: int) -> int | None:
    """Largest t' < t with a_{t'} = 0, or None when no rejection precedes t."""
    before = np.flatnonzero(np.asarray(bits)[: max(t, 0)] == 0)
    return int(before[-1]) if before.size else None


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
    """(start, length) of the run of ones that contains position t, or None when a_t = 0."""
    starts, lengths = runs_of_ones(bits)
    i = np.searchsorted(starts, t, side="right") - 1
    if i < 0 or t >= starts[i] + lengths[i]:
        return None
    return int(starts[i]), int(lengths[i])


def rolling_alpha(bits: np.ndarray, window: int = 16) -> np.ndarray:
    """Trailing-window acceptance rate: alpha_t = mean(a_{max(0, t-w+1)} .. a_t), t = 0..n-1.

    The first w-1 positions average over the shorter prefix they have (a choice: no padding).
    From the cumulative sum c (c_0 = 0): alpha_t = (c_{t+1} - c_lo) / (t + 1 - lo), lo = max(0, t-w+1).
    """
    if window < 1:
        raise ValueError("window must be >= 1")
    a = np.asarray(bits, dtype=np.float64)
    c = np.concatenate(([0.0], np.cumsum(a)))
    t = np.arange(a.size)
    lo = np.maximum(0, t - window + 1)
    return (c[t + 1] - c[lo]) / (t + 1 - lo)


def stream_alpha(bits: np.ndarray) -> float:
    """alpha of one stream: sum a / n (NaN for an empty stream)."""
    a = np.asarray(bits)
    return float(a.mean()) if a.size else float("nan")


def piece_lookup(pairs: Iterable[tuple[np.ndarray, list[str]]]) -> dict[int, str]:
    """Token id -> decoded piece, learned from streams that kept both y and its pieces.

    Lets the Streams screen spell the draft's rejected guess without loading a tokenizer when the
    same id occurs anywhere in y; ids never seen in y stay unknown (shown as their id).
    """
    table: dict[int, str] = {}
    for ids, pieces in pairs:
        table.update(zip(np.asarray(ids).tolist(), pieces))
    return table


def search_prompts(query: str, ids: Sequence[str], prompts: Sequence[str | None]) -> list[int]:
    """Indices i of the prompts whose id or prompt text contains `query`, ignoring case (casefold).

    Ranked best first, in list order within a rank: the id equals the query, the id starts with it,
    the id contains it, the prompt text contains it. A query of only spaces matches every prompt
    (the search box cleared shows them all); a prompt kept without text (None) matches by id only.
    """
    q = query.strip().casefold()
    if not q:
        return list(range(len(ids)))
    ranked: list[tuple[int, int]] = []
    for i, (pid, text) in enumerate(zip(ids, prompts)):
        key = pid.casefold()
        if key == q:
            rank = 0
        elif key.startswith(q):
            rank = 1
        elif q in key:
            rank = 2
        elif text is not None and q in text.casefold():
            rank = 3
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
