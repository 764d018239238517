"""The whole block's cost (SPEC 6 "The whole block's cost"): the per-block time a real speculative decoder
spends outside its model forwards (the argmax and acceptance, cache trimming, the host loop, kernel
launches), measured in situ by `specterm costs` and fitted as a line in the draft length. Pure numpy.

Samples: short real speculative generations along stored y at three or more draft lengths g_i, each
with its target calls (blocks) B_i and the time outside its forwards, O_i = whole time - time inside
the forwards. Per block o_i = O_i / B_i. The fit is weighted least squares with weights B_i (a sample
of many blocks averages more of them):

    o(g) = a + b g,   (a, b) = argmin sum_i B_i (o_i - a - b g_i)^2

so that S_hw(g) = E(g) c_decode / (c_verify(g) + g c_draft [+ c_draft_fwd(g)] + o(g)) (costmodel).
Uncertainty (SPEC 6 "Uncertainty", like the other costs): each replicate resamples the samples with
replacement within each draft length (every g keeps its count, so every replicate has the g's the fit
needs) and refits.

Stored in a profile's cost (SPEC 7 `profiles[].cost.block_overhead`):
{"a_s", "b_s", "samples": [{"gamma", "blocks", "outside_s", ...}], ...}, outside_s on the cost's
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
    """o(g) = a + b g (seconds per block) and the samples it was fitted on."""

    a: float
    b: float
    gammas: NDArray[np.int64]
    blocks: NDArray[np.float64]
    outside: NDArray[np.float64]

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


def overhead_record(samples: Sequence[dict[str, Any]], clock: str) -> dict[str, Any]:
    """The profile's block_overhead record from samples [{"gamma", "blocks", "outside_s", ...}] (outside_s on
    `clock`): the fit and the samples as they are."""
    a, b = fit_overhead([s["gamma"] for s in samples], [s["blocks"] for s in samples],
                        [s["outside_s"] for s in samples])
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
           "at two draft lengths or more); delete it and run `specterm costs RUN` again.")
    samples = rec.get("samples") if isinstance(rec, dict) else None
    if not isinstance(samples, list) or not all(
            isinstance(s, dict) and isinstance(s.get("gamma"), int) and s["gamma"] >= 1 and _number(s.get("blocks"))
            and s["blocks"] >= 1 and _number(s.get("outside_s")) for s in samples):
        raise SpectermError(bad)
    g = np.array([s["gamma"] for s in samples], dtype=np.int64)
    if np.unique(g).size < 2:
        raise SpectermError(bad)
    blocks = np.array([s["blocks"] for s in samples], dtype=np.float64)
    outside = np.array([s["outside_s"] for s in samples], dtype=np.float64)
    a, b = fit_overhead(g, blocks, outside)
    return BlockOverhead(a=a, b=b, gammas=g, blocks=blocks, outside=outside)


def overhead_replicates(bo: BlockOverhead, gammas: ArrayLike, n: int, seed: int) -> NDArray[np.float64]:
    """(n, G): o(g) at each of `gammas` in n replicates, each resampling the samples with replacement within
    each draft length and refitting (module docstring)."""
    rng = np.random.default_rng(seed)
    grid = np.asarray(gammas, dtype=np.float64)
    groups = [np.flatnonzero(bo.gammas == g) for g in np.unique(bo.gammas).tolist()]
    out = np.empty((n, grid.size), dtype=np.float64)
    for i in range(n):
        idx = np.concatenate([grp[rng.integers(0, grp.size, size=grp.size)] for grp in groups])
        a, b = fit_overhead(bo.gammas[idx], bo.blocks[idx], bo.outside[idx])
        out[i] = a + b * grid
    return out
