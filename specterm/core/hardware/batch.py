"""Costs by batch size from a stored batch measurement (SPEC 6 "Batch"), and the fit that fills the grid.

The measurement (oracle/costs.measure_batch_costs) times, at every batch B of the grid:

    c_decode(B)     a 1-token-per-row target forward (measured at every B, used as measured)
    c_draft(B)      a 1-token-per-row draft forward (measured at every B, used as measured)
    c(B, m)         an m-token-per-row target forward at a sparse set of m >= 2 (m = g + 1)

and c_verify(g, B) for every g = 1 .. m_max - 1 comes from the least-squares surface

    c(B, m) = a + b B + c B m          over the timed (B, m >= 2) medians

(a: per-forward overhead and weight reads, b: per-row work such as attention over the cached
context, c: per-token work). One-token forwards are kept out of the fit: on a CPU a 1-row
forward runs a matrix-vector kernel and costs far less than the line through wider forwards (Qwen2.5
1.5B here: 0.44 s for 1 token, 0.87 s for 2). Held-back grid points, timed but not fitted, measure
the fit's error (`held_back` rows: measured median, fitted value, error in %).

Uncertainty: a replicate resamples each quantity's stored samples (with replacement), takes their
medians and refits the surface (the fit is linear in the medians: one matrix product).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from specterm.core.errors import SpectermError

Array = NDArray[np.float64]
FORMULA = "c(B, m) = a + b B + c B m, least squares over the timed medians with m >= 2 (m = g + 1 tokens per row)"


def surface_design(B: NDArray[np.float64], m: NDArray[np.float64]) -> Array:
    """Design matrix [1, B, B m] of the surface (rows = points)."""
    B = np.asarray(B, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    return np.column_stack([np.ones_like(B), B, B * m])


def fit_surface(B: NDArray[np.float64], m: NDArray[np.float64], c: NDArray[np.float64]) -> Array:
    """(a, b, c) of the least-squares surface; `c` may be (points,) or (replicates, points)."""
    pinv = np.linalg.pinv(surface_design(B, m))  # (3, points)
    coef: Array = np.asarray(c, dtype=np.float64) @ pinv.T
    return coef


def surface(coef: Array, B: NDArray[np.float64], m: NDArray[np.float64]) -> Array:
    """c(B, m) of the surface at the given points; coef (3,) or (R, 3) gives (points,) or (R, points)."""
    out: Array = np.asarray(coef, dtype=np.float64) @ surface_design(B, m).T
    return out


@dataclass(frozen=True)
class BatchCosts:
    """Costs by batch (seconds on the measurement's clock). c_verify[i, j] = c_verify(gammas[j], batches[i])."""

    batches: NDArray[np.int64]
    gammas: NDArray[np.int64]
    c_decode: Array
    c_verify: Array
    c_draft: Array
    coef: Array
    held_back: list[dict[str, float]] = field(default_factory=list)
    clock: str = "wall"
    context: int | None = None
    wall_s: float | None = None
    fit_rms_rel: float | None = None   # RMS relative residual of the fitted points

    def replicates(self, record: dict[str, Any], n: int, seed: int) -> tuple[Array, Array, Array]:
        """(c_decode (n, nB), c_verify (n, nB, nG), c_draft (n, nB)): each quantity's samples resampled
        with replacement, medians, surface refitted (module docstring)."""
        samples = _samples(record, self.clock)
        rng = np.random.default_rng(seed)

        def med(key: str) -> Array:
            x = np.asarray(samples[key], dtype=np.float64)
            idx = rng.integers(0, x.size, size=(n, x.size))
            return np.asarray(np.median(x[idx], axis=1), dtype=np.float64)

        dec = np.stack([med(f"target:{B}:1") for B in self.batches.tolist()], axis=1)
        dra = np.stack([med(f"draft:{B}") for B in self.batches.tolist()], axis=1)
        pts = _fit_points(record)
        c = np.stack([med(f"target:{B}:{m}") for B, m in pts], axis=1)
        coef = fit_surface(np.array([p[0] for p in pts], dtype=np.float64), np.array([p[1] for p in pts], dtype=np.float64), c)
        Bg, mg = np.meshgrid(self.batches.astype(np.float64), self.gammas.astype(np.float64) + 1, indexing="ij")
        ver = surface(coef, Bg.ravel(), mg.ravel()).reshape(n, self.batches.size, self.gammas.size)
        return dec, ver, dra


def _samples(record: dict[str, Any], clock: str) -> dict[str, list[float]]:
    samples = record.get("samples_cpu_s" if clock == "cpu" else "samples_s")
    if not isinstance(samples, dict):
        raise SpectermError("the run's batch cost record has no samples; re-measure with `specterm confirm --batch-costs`.")
    return samples


def _fit_points(record: dict[str, Any]) -> list[tuple[int, int]]:
    return [(int(B), int(m)) for B in record["batches"] for m in record["fit_m"] if int(m) >= 2]


def _median(values: Any) -> float:
    x = [float(v) for v in values] if isinstance(values, list) else []
    if not x or not all(math.isfinite(v) and v > 0 for v in x):
        raise SpectermError("the run's batch cost record is malformed (each quantity needs positive samples); "
                            "re-measure with `specterm confirm --batch-costs`.")
    return float(np.median(x))


def batch_costs(record: dict[str, Any] | None) -> BatchCosts | None:
    """BatchCosts from a run.json "batch_cost" dict (None when the run has none); malformed: SpectermError."""
    if not record:
        return None
    try:
        clock = "cpu" if record.get("decision_clock") == "cpu" else "wall"
        samples = _samples(record, clock)
        batches = np.array(sorted(int(b) for b in record["batches"]), dtype=np.int64)
        pts = _fit_points(record)
        m_max = max(m for _, m in pts)
    except (KeyError, TypeError, ValueError):
        raise SpectermError("the run's batch cost record is malformed; re-measure with `specterm confirm --batch-costs`.") from None
    if len({m for _, m in pts}) < 2 or batches.size < 2:
        raise SpectermError("the run's batch cost record needs two widths m >= 2 and two batch sizes to fit; "
                            "re-measure with `specterm confirm --batch-costs`.")
    Bp = np.array([p[0] for p in pts], dtype=np.float64)
    mp = np.array([p[1] for p in pts], dtype=np.float64)
    cp = np.array([_median(samples.get(f"target:{B}:{m}")) for B, m in pts])
    coef = fit_surface(Bp, mp, cp)
    rms_rel = float(np.sqrt(np.mean(((surface(coef, Bp, mp) - cp) / cp) ** 2)))
    gammas = np.arange(1, m_max, dtype=np.int64)
    Bg, mg = np.meshgrid(batches.astype(np.float64), gammas.astype(np.float64) + 1, indexing="ij")
    held = []
    for B, m in record.get("held_back") or []:
        measured = _median(samples.get(f"target:{int(B)}:{int(m)}"))
        fitted = float(surface(coef, np.array([float(B)]), np.array([float(m)]))[0])
        held.append({"batch": int(B), "gamma": int(m) - 1, "measured_s": measured, "fit_s": fitted,
                     "error_pct": 100.0 * (fitted - measured) / measured})
    ctx = record.get("context")
    wall = record.get("wall_s")
    return BatchCosts(
        batches=batches, gammas=gammas,
        c_decode=np.array([_median(samples.get(f"target:{B}:1")) for B in batches.tolist()]),
        c_verify=surface(coef, Bg.ravel(), mg.ravel()).reshape(batches.size, gammas.size),
        c_draft=np.array([_median(samples.get(f"draft:{B}")) for B in batches.tolist()]),
        coef=coef, held_back=held, clock=clock, context=int(ctx) if isinstance(ctx, int) else None,
        wall_s=float(wall) if isinstance(wall, (int, float)) else None, fit_rms_rel=rms_rel)
