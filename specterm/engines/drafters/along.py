"""A drafter along the target's greedy y (SPEC 2b): at every block start s (context = prompt + y_1..y_s),
with d_s the drafter's longest continuation (`Drafter.longest`: the drafts for every g are its prefixes,
within the drafter's rule min_draft <= g <= gamma_cap),

    L_s = number of leading i with d_s[i] == y_{s+1+i}   (i < len(d_s), s + 1 + i <= n)
    m_s = len(d_s)                                        (at most the drafter's max_tokens)

and the drafter's own time per proposal (the decision's c_draft, per block).
"""

from __future__ import annotations

import time

import numpy as np

from specterm.core.drafted.walk import drafted_at
from specterm.engines.drafters.base import Drafter


def leading_matches(d: np.ndarray, ref: np.ndarray) -> int:
    """The number of leading i (i < min(len(d), len(ref))) with d[i] == ref[i]."""
    k = min(d.size, ref.size)
    diff = np.flatnonzero(d[:k] != ref[:k])
    return int(diff[0]) if diff.size else k


def along_y(drafter: Drafter, prompt_ids: list[int] | np.ndarray, y: list[int] | np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """(L_s, m_s) for s = 0..n-1 (int32 each) and the seconds of each proposal (timed with perf_counter).

    m_0 = 0 for a drafter that gets no draft at the prefill (`drafts_at_prompt_end` False: llama.cpp)."""
    p = np.asarray(prompt_ids, dtype=np.int64)
    yy = np.asarray(y, dtype=np.int64)
    ctx = np.concatenate([p, yy])
    n = yy.size
    runs = np.zeros(n, dtype=np.int32)
    proposed = np.zeros(n, dtype=np.int32)
    seconds: list[float] = []
    for s in range(n):
        if s == 0 and not drafter.drafts_at_prompt_end:
            continue
        t0 = time.perf_counter()
        d = drafter.longest(ctx[: p.size + s])
        seconds.append(time.perf_counter() - t0)
        proposed[s] = d.size
        runs[s] = leading_matches(d, yy[s:])
    return runs, proposed, seconds


def draft_at(drafter: Drafter, context: np.ndarray, gamma: int, prompt_len: int) -> np.ndarray:
    """The draft a decoder running `drafter` at draft length `gamma` makes on `context` (prompt + y_1..y_s,
    s = len(context) - prompt_len): the first d tokens of the drafter's longest continuation, d by its rule
    per g (core/drafted/walk.drafted_at: min(g, m_s), or 0 outside min_draft <= g <= gamma_cap), and none at
    s = 0 for a drafter that gets no draft at the prefill. So the decoder's blocks are the walk's on L_s, m_s."""
    if context.size == prompt_len and not drafter.drafts_at_prompt_end:
        return context[:0]
    longest = drafter.longest(context)
    d = int(drafted_at(gamma, longest.size, drafter.min_draft, drafter.gamma_cap(int(context.size))))
    return longest[:d]
