"""The whole block's cost (SPEC 6 "The whole block's cost"): the per-block time a real speculative decoder
spends outside its model forwards (the argmax and acceptance, cache trimming, the host loop, kernel
launches), measured in situ by `specterm costs` and fitted as a line in the draft length. Pure numpy.

Samples: short real speculative generations along stored y at three or more draft lengths g_i, each
with its target calls (blocks) B_i and the time outside its forwards, O_i = whole time - time inside
the forwards. Per block o_i = O_i / B_i. The fit is weighted least squares with weights B_i (a sample
of many blocks averages more of them):

    o(g) = a + b g,   (a, b) = argmin sum_i B_i (o_i - a - b g_i)^2

so that S_hw(g) = E(g) c_decode / (c_verify(g) + g c_draft [+ c_draft_fwd(g)] + o(g)) (costmodel).

g is the number of tokens a block drafts. A draft model drafts g in every block; a drafter without a model
(SPEC 2b) drafts d = min(g, m_s) <= g, so its samples also store "drafted" (D_i, the tokens their blocks
drafted) and the fit reads each sample at its mean drafted length x_i = D_i / B_i in place of g_i: the same
least squares, o(d) = a + b d per block that drafts d, and a generation's outside time is a B_i + b D_i.
Uncertainty (SPEC 6 "Uncertainty", like the other costs): each replicate resamples the samples with
replacement within each draft length (every g keeps its count, so every replicate has the g's the fit
needs) and refits.

Stored in a profile's cost (SPEC 7 `profiles[].cost.block_overhead`):
{"a_s", "b_s", "samples": [{"gamma", "blocks", "outside_s", ["drafted"], ...}], ...}, outside_s on the cost's
decision clock. A profile without it is used as before and its verdicts say so (`NOT_MEASURED`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core.errors import SpectermError

KEY = "block_overhead"
MIN_GAMMAS = 3  # distinct draft lengths `specterm costs` times (SPEC 6: three or more)
NOT_MEASURED = "block overhead not measured (`specterm costs RUN` measures it)"
FORMULA = "o(g) = a + b g, weighted least squares of the per-block time outside the forwards (weights: blocks)"


@dataclass(frozen=True)
class BlockOverhead:
    """o(g) = a + b g (seconds per block) and the samples it was fitted on: their draft lengths, blocks,
    seconds outside, and the drafted length each is read at (`at_g`: g, or D / B for a drafter's samples)."""

    a: float
    b: float
    gammas: NDArray[np.int64]
    blocks: NDArray[np.float64]
    outside: NDArray[np.float64]
    at_g: NDArray[np.float64]

    def at(self, gammas: ArrayLike) -> NDArray[np.float64]:
        """o(g) at each g of `gammas`."""
        return self.a + self.b * np.asarray(gammas, dtype=np.float64)

    def text(self) -> str:
        """How the verdict names the term: its fit in milliseconds."""
        return f"o(g) = {1e3 * self.a:.2f} ms + {1e3 * self.b:.3f} ms g per block outside the forwards"


def fit_overhead(gammas: ArrayLike, blocks: ArrayLike, outside: ArrayLike) -> tuple[float, float]:
    """(a, b) of o(g) = a + b g by weighted least squares (module docstring) from samples of draft length
    g_i, B_i blocks and O_i seconds outside the forwards. Needs two distinct g with blocks."""
    g = np.asarray(gammas, dtype=np.float64)
    w = np.asarray(blocks, dtype=np.float64)
    o = np.asarray(outside, dtype=np.float64) / np.where(w > 0, w, 1.0)
    keep = w > 0
    g, w, o = g[keep], w[keep], o[keep]
    if np.unique(g).size < 2:
        raise ValueError("the block overhead needs samples at two draft lengths or more")
    sw = w.sum()
    gm, om = (w * g).sum() / sw, (w * o).sum() / sw
    b = float((w * (g - gm) * (o - om)).sum() / (w * (g - gm) ** 2).sum())
    return float(om - b * gm), b


def drafted_lengths(samples: Sequence[dict[str, Any]]) -> list[float]:
    """The draft length each sample is read at (module docstring): drafted / blocks where the samples store
    "drafted" (a drafter's), else gamma."""
    return [float(s["drafted"]) / float(s["blocks"]) if "drafted" in s else float(s["gamma"]) for s in samples]


def overhead_record(samples: Sequence[dict[str, Any]], clock: str) -> dict[str, Any]:
    """The profile's block_overhead record from samples [{"gamma", "blocks", "outside_s", ["drafted"], ...}]
    (outside_s on `clock`): the fit and the samples as they are."""
    a, b = fit_overhead(drafted_lengths(samples), [s["blocks"] for s in samples], [s["outside_s"] for s in samples])
    return {"a_s": a, "b_s": b, "clock": clock, "formula": FORMULA, "samples": [dict(s) for s in samples]}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def block_overhead(cost: dict[str, Any] | None) -> BlockOverhead | None:
    """The block overhead of a cost dict (None when it has none); its fit recomputed from the samples, so
    a hand-edited a_s or b_s is never trusted. A malformed record raises SpectermError (one sentence)."""
    rec = (cost or {}).get(KEY)
    if rec is None:
        return None
    bad = ("the profile's block_overhead record is malformed (samples of gamma >= 1, blocks >= 1 and outside_s, "
           "drafted in all or none, at two draft lengths or more); delete it and run `specterm costs RUN` again.")
    samples = rec.get("samples") if isinstance(rec, dict) else None
    if not isinstance(samples, list) or not all(
            isinstance(s, dict) and isinstance(s.get("gamma"), int) and s["gamma"] >= 1 and _number(s.get("blocks"))
            and s["blocks"] >= 1 and _number(s.get("outside_s")) for s in samples):
        raise SpectermError(bad)
    if any("drafted" in s for s in samples) and not all(
            _number(s.get("drafted")) and 0 <= s["drafted"] <= s["gamma"] * s["blocks"] for s in samples):
        raise SpectermError(bad)
    g = np.array([s["gamma"] for s in samples], dtype=np.int64)
    at_g = np.array(drafted_lengths(samples), dtype=np.float64)
    if np.unique(at_g).size < 2:
        raise SpectermError(bad)
    blocks = np.array([s["blocks"] for s in samples], dtype=np.float64)
    outside = np.array([s["outside_s"] for s in samples], dtype=np.float64)
    a, b = fit_overhead(at_g, blocks, outside)
    return BlockOverhead(a=a, b=b, gammas=g, blocks=blocks, outside=outside, at_g=at_g)


def overhead_lines(bo: BlockOverhead, n: int, seed: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(a, b), each (n,): the fit in n replicates, each resampling the samples with replacement within each
    draft length and refitting (module docstring). A replicate whose draw holds one drafted length only
    (a drafter's samples can repeat theirs) keeps the point fit."""
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(bo.gammas == g) for g in np.unique(bo.gammas).tolist()]
    a = np.empty(n, dtype=np.float64)
    b = np.empty(n, dtype=np.float64)
    for i in range(n):
        idx = np.concatenate([grp[rng.integers(0, grp.size, size=grp.size)] for grp in groups])
        try:
            a[i], b[i] = fit_overhead(bo.at_g[idx], bo.blocks[idx], bo.outside[idx])
        except ValueError:
            a[i], b[i] = bo.a, bo.b
    return a, b


def overhead_replicates(bo: BlockOverhead, gammas: ArrayLike, n: int, seed: int) -> NDArray[np.float64]:
    """(n, G): o(g) at each of `gammas` in n replicates (`overhead_lines`)."""
    a, b = overhead_lines(bo, n, seed)
    return a[:, None] + b[:, None] * np.asarray(gammas, dtype=np.float64)[None, :]
