"""Moving through one accept/reject stream: rejections, the longest run, a rolling alpha.

Pure functions over a stream a_0..a_{n-1} (uint8, 1 = the draft's guess at t was accepted). The
Streams screen binds keys to them; they never touch the terminal.
"""

from __future__ import annotations

from typing import Iterable

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
