"""Intervals that cover (SPEC 6): the drift of costs between sessions on one machine, which a decision
check's 95% prediction interval carries besides prompts and cost samples. Pure numpy.

A session's costs (a cost profile, or the cost rounds of a `specterm confirm`) give at each draft length g
the factor S_hw / E the decision multiplies E(g) by:

    F_k(g) = c_decode / (c_verify(g) + g c_draft [+ c_draft_fwd(g)])       (robust curve of session k)

A realized speedup is a ratio of two timings on the same machine, so a machine that is slower by one
factor everywhere leaves F unchanged; what moves a prediction is a change of F between sessions. The
drift is its spread on the log scale:

    sigma(g) = sd_k log F_k(g)   (ddof = 1, over the K >= MIN_SESSIONS sessions of the machine)
    sigma    = median over the g every session measured of sigma(g)

Sessions are a machine's profiles and confirmations (same engine, device name and thread count), one per
distinct measurement (a profile migrated from a confirmation's costs is that confirmation's session).
With fewer than MIN_SESSIONS the stated default DEFAULT_SIGMA applies. In the prediction interval each
replicate's S is multiplied by exp(sigma Z), Z standard normal, drawn from its own generator.

DEFAULT_SIGMA, measured on these machines: the shipped runs' machines with two sessions or more
(`python benchmarks/drift_default.py` prints each): the torch Qwen pair on the AMD EPYC (4 sessions)
0.032 and on the Intel Xeon (7 sessions) 0.036; the llama.cpp Qwen pair on the Xeon (5 sessions) 0.042
and on the EPYC (3 sessions) 0.069; SmolLM2 on the Xeon (3 sessions) 0.017. The default is their
median, 0.036: a machine not yet seen twice is taken to drift like a typical one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.decide import costmodel
from specterm.core.decide.hardware.curve import CostCurve, cost_curve
from specterm.core.errors import SpectermError

MIN_SESSIONS = 2
DEFAULT_SIGMA = 0.036  # module docstring: the median over the shipped runs' machines


@dataclass(frozen=True)
class Drift:
    """The drift a machine's prediction intervals carry: sigma on the log scale, from `sessions` sessions
    (0: the stated default), and how it was found."""

    sigma: float
    sessions: int
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sessions": self.sessions, "source": self.source}


def session_factors(curves: Sequence[CostCurve]) -> tuple[np.ndarray, np.ndarray]:
    """(gammas every curve measured, F (K x G)): F_k(g) of each session's curve (module docstring)."""
    common = sorted(set.intersection(*(set(c.gammas.tolist()) for c in curves))) if curves else []
    g = np.array(common, dtype=np.int64)
    F = np.array([costmodel.speedup_hw(1.0, c.c_decode, [c.verify_at(int(x)) for x in common], c.c_draft, g,
                                       c_draft_fwd=c.draft_fwd_on(g)) for c in curves], dtype=np.float64)
    return g, F.reshape(len(curves), g.size)


def drift_sigma(F: np.ndarray) -> float | None:
    """sigma = median over g of sd_k log F_k(g) (ddof 1); None with fewer than MIN_SESSIONS rows or no g."""
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] < MIN_SESSIONS or F.shape[1] == 0:
        return None
    return float(np.median(np.std(np.log(F), axis=0, ddof=1)))


def _session_key(cost: dict[str, Any]) -> tuple[Any, Any]:
    return cost.get("measured_at"), cost.get("c_decode_s")


def machine_drift(costs: Sequence[dict[str, Any]], default: float = DEFAULT_SIGMA) -> Drift:
    """The drift from the cost dicts of one machine's sessions (deduplicated by when they were measured and
    their c_decode); the stated default with fewer than MIN_SESSIONS usable ones."""
    seen: set[tuple[Any, Any]] = set()
    curves = []
    for cost in costs:
        if not isinstance(cost, dict) or _session_key(cost) in seen:
            continue
        try:
            curve = cost_curve(cost)
        except SpectermError:
            continue  # a corrupt session record says nothing about drift
        if curve is not None:
            seen.add(_session_key(cost))
            curves.append(curve)
    sigma = drift_sigma(session_factors(curves)[1]) if len(curves) >= MIN_SESSIONS else None
    if sigma is None or not math.isfinite(sigma):
        return Drift(default, 0, f"default {default:.3f} (this machine has fewer than {MIN_SESSIONS} sessions; "
                                 "the median drift of the shipped runs' machines)")
    return Drift(sigma, len(curves), f"measured over {len(curves)} sessions of this machine (profiles and confirmations)")


def drift_replicates(sigma: float, n: int, seed: int) -> np.ndarray:
    """exp(sigma Z) for n replicates, Z standard normal from a generator of its own (module docstring)."""
    return np.exp(sigma * np.random.default_rng([seed, 51]).standard_normal(n))
