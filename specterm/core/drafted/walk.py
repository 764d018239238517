"""The block walk of a drafter run (SPEC 2b), on the accepted run L_s and proposal length m_s at every
block start s = 0..n-1 of a stream:

    s = 0
    while s < n:
        d = min(g, m_s)                  drafted this block (0: a plain decode step)
        k = min(L_s, d)                  accepted
        tokens += min(k + 1, n - s); blocks += 1; drafted += d; s += k + 1

A drafter whose proposal for g is not a prefix of its longest everywhere (llama.cpp's ngram-simple, whose
g is size_m) drafts d = 0 where g < min_draft, m_s < min_draft or g > max_gamma_s (its rule, stored as
min_draft and the per-start cap max_gamma_s); otherwise d = min(g, m_s) as above.

E(g) = sum tokens / sum blocks (tokens per target call). The walk jumps by k + 1, so it is not a
closed form over runs as the bit walk is; `walk_streams` steps every (stream, g) pair together, one
numpy step per block (at most n steps), and also counts the blocks by d (the verify forward of a
block holds d + 1 tokens: its cost) and, at one g, by (d, k) (acceptance by depth).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError


def drafted_at(gamma: Any, m: Any, min_draft: int, cap: Any) -> Any:
    """d = min(g, m_s), or 0 where g < min_draft, m_s < min_draft or g > cap (the drafter's rule per g)."""
    ok = (gamma >= min_draft) & (m >= min_draft) & (gamma <= cap)
    return np.where(ok, np.minimum(gamma, m), 0)


def walk_loop(runs: np.ndarray, proposed: np.ndarray, gamma: int, n: int | None = None, min_draft: int = 0,
              max_gamma: np.ndarray | None = None) -> tuple[int, int, int]:
    """(tokens, blocks, drafted) of the SPEC 2b loop, literally (the reference of `walk_streams`)."""
    n = len(runs) if n is None else n
    s = tokens = blocks = drafted = 0
    while s < n:
        cap = int(max_gamma[s]) if max_gamma is not None else gamma
        ok = gamma >= min_draft and int(proposed[s]) >= min_draft and gamma <= cap
        d = min(gamma, int(proposed[s])) if ok else 0
        k = min(int(runs[s]), d)
        tokens += min(k + 1, n - s)
        blocks += 1
        drafted += d
        s += k + 1
    return tokens, blocks, drafted


@dataclass(frozen=True)
class DrafterWalk:
    """Per stream (rows) and draft length (columns of `gammas`): tokens, blocks, drafted tokens, and
    `by_drafted[i, j, d]`, the blocks of stream i at gammas[j] that drafted d tokens (d = 0..max g)."""

    gammas: np.ndarray
    tokens: np.ndarray
    blocks: np.ndarray
    drafted: np.ndarray
    by_drafted: np.ndarray


def padded(columns: list[np.ndarray], width: int) -> np.ndarray:
    """The streams' columns as one (N, width) int64 array, zero past each stream's end."""
    out = np.zeros((len(columns), max(width, 1)), dtype=np.int64)
    for i, col in enumerate(columns):
        out[i, : col.size] = col
    return out


def walk_streams(runs: list[np.ndarray], proposed: list[np.ndarray], n: np.ndarray | list[int],
                 gammas: np.ndarray, min_draft: int = 0, max_gamma: list[np.ndarray] | None = None) -> DrafterWalk:
    """The walk of every stream i (its first n[i] starts) at every g of `gammas`, all together (the
    drafter's rule: min_draft and per-start caps max_gamma, None: no cap)."""
    gammas = np.asarray(gammas, dtype=np.int64)
    n_arr = np.asarray(n, dtype=np.int64)
    if gammas.size == 0 or gammas.min() < 1:
        raise SpectermError("draft lengths must be >= 1.")
    N, G = len(runs), gammas.size
    width = int(n_arr.max()) if N else 0
    R, M = padded(runs, width), padded(proposed, width)
    C = padded(max_gamma, width) if max_gamma is not None else np.full_like(M, np.iinfo(np.int64).max)
    s = np.zeros((N, G), dtype=np.int64)
    tokens = np.zeros((N, G), dtype=np.int64)
    blocks = np.zeros((N, G), dtype=np.int64)
    drafted = np.zeros((N, G), dtype=np.int64)
    by_drafted = np.zeros((N, G, int(gammas.max()) + 1), dtype=np.int64)
    ii, jj = np.nonzero(s < n_arr[:, None])
    while ii.size:
        ss = s[ii, jj]
        d = drafted_at(gammas[jj], M[ii, ss], min_draft, C[ii, ss])
        k = np.minimum(R[ii, ss], d)
        tokens[ii, jj] += np.minimum(k + 1, n_arr[ii] - ss)
        blocks[ii, jj] += 1
        drafted[ii, jj] += d
        by_drafted[ii, jj, d] += 1  # each (i, j) once per step: no repeated index
        s[ii, jj] = ss + k + 1
        live = s[ii, jj] < n_arr[ii]
        ii, jj = ii[live], jj[live]
    return DrafterWalk(gammas=gammas, tokens=tokens, blocks=blocks, drafted=drafted, by_drafted=by_drafted)


def depth_counts(runs: list[np.ndarray], proposed: list[np.ndarray], n: np.ndarray | list[int],
                 gamma: int, min_draft: int = 0, max_gamma: list[np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stream, at draft length `gamma`, for depth j = 1..gamma (columns j - 1):

        reached[i, j]  = blocks that drafted a token at depth j with tokens 1..j-1 accepted (d >= j, k >= j - 1)
        accepted[i, j] = blocks whose token at depth j was accepted (k >= j)
    and blocks[i]. Conditional acceptance c_j = sum accepted / sum reached; P(accepted length >= j) =
    sum accepted / sum blocks."""
    n_arr = np.asarray(n, dtype=np.int64)
    N = len(runs)
    width = int(n_arr.max()) if N else 0
    R, M = padded(runs, width), padded(proposed, width)
    C = padded(max_gamma, width) if max_gamma is not None else np.full_like(M, np.iinfo(np.int64).max)
    s = np.zeros(N, dtype=np.int64)
    depth = np.arange(1, gamma + 1, dtype=np.int64)
    reached = np.zeros((N, gamma), dtype=np.int64)
    accepted = np.zeros((N, gamma), dtype=np.int64)
    blocks = np.zeros(N, dtype=np.int64)
    ii = np.flatnonzero(s < n_arr)
    while ii.size:
        ss = s[ii]
        d = drafted_at(gamma, M[ii, ss], min_draft, C[ii, ss])
        k = np.minimum(R[ii, ss], d)
        reached[ii] += (d[:, None] >= depth) & (k[:, None] >= depth - 1)
        accepted[ii] += k[:, None] >= depth
        blocks[ii] += 1
        s[ii] = ss + k + 1
        ii = ii[s[ii] < n_arr[ii]]
    return reached, accepted, blocks
