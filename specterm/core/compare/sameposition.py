"""The positions two engines both keep for the same prompt (issue 35), and both engines' alpha and
E_true(g) on them, so that a cross-stack difference is a difference of engines, not of positions.
Pure numpy over store.Stream; core/compare/crossstack.py tabulates it.

Two levels, per prompt in both runs (masks over t = 0..m-1, m = min(n_A, n_B)):

    kept_by_both[t] = kept_A[t] and kept_B[t]                          (same prompt, same position)
    same_context[t] = kept_by_both[t] and y_A[0..t] == y_B[0..t]       (same prefix and target token)

a_t is the draft's argmax after y[0..t-1] against y[t], so on same-context positions a_t differs only
by engine. Over the prompts of a set: alpha = sum a / positions for each engine; the difference
alpha_B - alpha_A with a percentile-bootstrap 95% interval over prompts (core.bootstrap: the prompt is
the independent unit); E_true(g) = sum tokens / sum blocks of the SPEC 2 walk on each prompt's bits at
those positions, in order with the holes closed up (as a stream's analysed a = bits[kept]).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from specterm.core.streams.blockwalk import block_counts
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.params import BOOT, SEED
from specterm.core.store import Stream


def first_divergence(a: npt.ArrayLike | None, b: npt.ArrayLike | None) -> int | None:
    """Index of the first token where two y differ (the shorter length when one is a prefix); None if
    equal. Arrays or token lists (a decoder's output against the stored y)."""
    if a is None or b is None:
        return 0
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    n = min(a.size, b.size)
    diff = np.flatnonzero(a[:n] != b[:n])
    if diff.size:
        return int(diff[0])
    return None if a.size == b.size else n


LEVELS = ("kept_by_both", "same_context")


def common_positions(sa: Stream, sb: Stream) -> dict[str, npt.NDArray[np.bool_]]:
    """One prompt's positions both engines keep, as bool masks over t = 0..m-1, m = min(n_A, n_B):

        kept_by_both[t] = kept_A[t] and kept_B[t]
        same_context[t] = kept_by_both[t] and y_A[0..t] == y_B[0..t]   (t < first divergence of the y)

    (a_t is the draft's argmax after y[0..t-1] against y[t], so equal y up to t means the same prefix
    and target token). Without y in either run no position has a known context."""
    m = min(sa.n, sb.n)
    both = np.asarray(sa.kept[:m], dtype=bool) & np.asarray(sb.kept[:m], dtype=bool)
    if sa.y is None or sb.y is None:
        d = 0
    else:
        fd = first_divergence(sa.y, sb.y)
        d = m if fd is None else min(fd, m)
    return {"kept_by_both": both, "same_context": both & (np.arange(m) < d)}


def same_positions(pairs: Sequence[tuple[Stream, Stream]], gammas: Sequence[int], boot: int = BOOT,
                   seed: int = SEED) -> dict[str, dict[str, Any]]:
    """Per level of `common_positions`, over the (A, B) stream pairs of the same prompts: the positions
    counted, alpha of each engine on them, the difference alpha_B - alpha_A with its percentile-bootstrap
    95% interval over prompts (multinomial weights @ per-prompt [positions, sum a_A, sum a_B]), and
    E_true(g) of each engine = sum tokens / sum blocks of the walk on each prompt's bits at those
    positions (in order, holes closed up)."""
    out: dict[str, dict[str, Any]] = {}
    masks = [common_positions(sa, sb) for sa, sb in pairs]
    g_arr = np.asarray(list(gammas), dtype=np.int64)
    for level in LEVELS:
        X = np.zeros((len(pairs), 3), dtype=np.float64)  # prompts x [positions, sum a_A, sum a_B]
        walk = np.zeros((2, 2, g_arr.size), dtype=np.int64)  # engine x [tokens, blocks] x g
        for i, ((sa, sb), mk) in enumerate(zip(pairs, masks)):
            m = mk[level]
            bits = (sa.bits[: m.size][m], sb.bits[: m.size][m])
            X[i] = (m.sum(), bits[0].sum(), bits[1].sum())
            for e, b in enumerate(bits):
                if b.size and g_arr.size:
                    t, blk, _ = block_counts(b, g_arr)
                    walk[e, 0] += t
                    walk[e, 1] += blk
        n = float(X[:, 0].sum())
        entry: dict[str, Any] = {"prompts": len(pairs), "positions": int(n),
                                 "alpha_a": X[:, 1].sum() / n if n else None, "alpha_b": X[:, 2].sum() / n if n else None,
                                 "diff": (X[:, 2].sum() - X[:, 1].sum()) / n if n else None, "ci95": [None, None]}
        if n and len(pairs) > 1 and boot > 0:
            R = multinomial_weights(len(pairs), boot, seed) @ X
            with np.errstate(divide="ignore", invalid="ignore"):
                lo, hi = percentile_ci((R[:, 2] - R[:, 1]) / R[:, 0])
            entry["ci95"] = [None if math.isnan(lo) else lo, None if math.isnan(hi) else hi]
        entry["E"] = {str(int(g)): {"a": float(walk[0, 0, j] / walk[0, 1, j]) if walk[0, 1, j] else None,
                                    "b": float(walk[1, 0, j] / walk[1, 1, j]) if walk[1, 1, j] else None}
                      for j, g in enumerate(g_arr.tolist())}
        out[level] = entry
    return out
