"""Costs by batch size from a stored batch measurement (SPEC 6 "Batch"), and the fit that fills the grid.

The measurement (engines/torch/costs_torch.measure_batch_costs) times, at every batch B of the grid:

    c_decode(B)     a 1-token-per-row target forward (measured at every B, used as measured)
    c_draft(B)      a 1-token-per-row draft forward (measured at every B, used as measured)
    c(B, m)         an m-token-per-row target forward at a sparse set of (B, m) (m = g + 1)

and c_verify(g, B) for every g = 1 .. m_max - 1 is the timed forward's median where (B, g + 1) was timed
(`overlay_timed`: the default grid times every m = 1..9 at every B, so nothing is fitted), and only
where it was not timed comes from the tokens per forward N = B m:

    c(B, m) = f(B m),  f = the non-decreasing least-squares fit (isotonic) of the timed medians
                       over N, points of equal N pooled by their mean, linear between timed N
                       (constant beyond the timed range)

Why N: every token of every row goes through the same weight matrices (the linear layers multiply a
(B m) x d matrix), and attention over a context of L costs B m L; the per-row KV-cache reads (B L per
layer) are small next to the weights at the contexts measured. Non-decreasing: more tokens per
forward never cost less; the isotonic step pools timing noise instead of letting it bend the curve.
The 1-row 1-token forward (N = 1) stays out: on a CPU it runs a matrix-vector kernel and costs far
less than a 2-token forward (Qwen2.5 1.5B here: 0.44 s vs 0.87 s). An earlier version fitted the
plane c = a + b B + c B m; on this CPU it missed held-back points by 20-24% (RMS 34%), because the
cost is not linear in N at small N (weight reads dominate until compute catches up).
Held-back grid points, timed but not fitted, measure the interpolation's error (`held_back` rows:
measured median, interpolated value, error in %).

Why the default grid is dense: on this CPU (Qwen2.5 1.5B in float32, one thread) the cost depends on
the shape, not only on N: (B, m) = (4, 3) took 1.73-1.76 s in two sessions against 1.17-1.20 s for
(4, 5) and 1.09-1.45 s for (8, 2). No smooth function of (B, m) predicts such a point; the sparse
grid's interpolation missed its held-back points (8, 2) and (4, 5) by +55% and +46% (2026-12-01).
So every (B, m) the decision reads is timed (about 60 s of forwards for the Qwen pair) and the fit
only serves records that did not time a point (older sparse records, a grid cut short).

An engine's per-block draft term (llama.cpp's draft-simple: one (g+1)-token-per-row draft forward
per block, costmodel) is measured beside as "draft_fwd:B:m" (m >= 2 tokens per row, last row's
logits) and gets the same fit on its own: c_draft_fwd(g, B) = f_d(B (g + 1)), f_d the non-decreasing
fit over the draft forwards' tokens per forward (`BatchCosts.c_draft_fwd`, None for torch records).

Uncertainty: a replicate resamples each quantity's stored samples (with replacement), takes their
medians and refits (isotonic in closed form, vectorised over replicates: `isotonic_rows`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core.errors import SpectermError

Array = NDArray[np.float64]
FORMULA = ("c(B, m) = f(B m): non-decreasing least-squares fit over the timed forwards' tokens per forward "
           "N = B m >= 2, linear between timed N (m = g + 1 tokens per row)")


def isotonic_rows(Y: ArrayLike) -> Array:
    """Non-decreasing least-squares fit of every row of Y (R, n), equal weights, by the min-max formula

        f_i = max_{j <= i} min_{k >= i} mean(y_j .. y_k)

    (equal to pool-adjacent-violators; vectorised over rows, O(n^3) per row: n is a grid of ~12)."""
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    n = Y.shape[1]
    C = np.concatenate([np.zeros((Y.shape[0], 1)), np.cumsum(Y, axis=1)], axis=1)
    j = np.arange(n)[:, None]
    k = np.arange(n)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        M = (C[:, None, 1:] - C[:, :n, None]) / (k - j + 1)  # M[r, j, k] = mean(y_j..y_k) for j <= k
    M = np.where(k >= j, M, np.inf)
    A = np.minimum.accumulate(M[:, :, ::-1], axis=2)[:, :, ::-1]  # A[r, j, i] = min_{k >= i} M[r, j, k]
    A = np.where(k >= j, A, -np.inf)                              # only j <= i
    out: Array = A.max(axis=1)
    return out


def interpolate(knots: Array, values: Array, N: Array) -> Array:
    """f(N) linear between knots (sorted), constant beyond them; values (K,) or (R, K) -> (len(N),) or (R, len(N))."""
    knots = np.asarray(knots, dtype=np.float64)
    V = np.atleast_2d(np.asarray(values, dtype=np.float64))
    N = np.clip(np.asarray(N, dtype=np.float64), knots[0], knots[-1])
    i = np.clip(np.searchsorted(knots, N, side="right") - 1, 0, max(knots.size - 2, 0))
    if knots.size == 1:
        out1: Array = np.repeat(V[:, :1], N.size, axis=1)
        return out1 if np.ndim(values) == 2 else out1[0]
    w = (N - knots[i]) / (knots[i + 1] - knots[i])
    out: Array = V[:, i] * (1 - w) + V[:, i + 1] * w
    return out if np.ndim(values) == 2 else out[0]


def pooled_by_tokens(points: list[tuple[int, int]], medians: Array) -> tuple[Array, Array]:
    """(sorted distinct N = B m, mean median per N); medians (P,) or (R, P) -> values (K,) or (R, K)."""
    N = np.array([B * m for B, m in points], dtype=np.float64)
    knots = np.unique(N)
    A = (N[None, :] == knots[:, None]).astype(np.float64)
    A /= A.sum(axis=1, keepdims=True)
    vals: Array = np.asarray(medians, dtype=np.float64) @ A.T
    return knots, vals


def fit_tokens(points: list[tuple[int, int]], medians: Array) -> tuple[Array, Array]:
    """(knots N, fitted f at the knots): pooled by N, then non-decreasing (isotonic_rows)."""
    knots, vals = pooled_by_tokens(points, medians)
    fitted = isotonic_rows(vals)
    return knots, fitted if np.ndim(medians) == 2 else fitted[0]


@dataclass(frozen=True)
class BatchCosts:
    """Costs by batch (seconds on the measurement's clock). c_verify[i, j] = c_verify(gammas[j], batches[i])."""

    batches: NDArray[np.int64]
    gammas: NDArray[np.int64]
    c_decode: Array
    c_verify: Array
    c_draft: Array
    knots: Array            # timed tokens per forward N (sorted)
    fitted: Array           # f(N) at the knots
    held_back: list[dict[str, float]] = field(default_factory=list)
    clock: str = "wall"
    context: int | None = None
    wall_s: float | None = None
    fit_rms_rel: float | None = None   # RMS relative residual of the fitted points (pooled medians vs f)
    points: list[tuple[int, int]] = field(default_factory=list)  # the (B, m) fitted
    whole_wall_s: float | None = None  # g-curve rounds + batch grid (None: not recorded)
    upfront_wall_s: float | None = None  # of which before the first generation (None: all of it, no slices)
    c_draft_fwd: Array | None = None   # (nB, nG): the engine's per-block draft forward (None: torch)
    fwd_points: list[tuple[int, int]] = field(default_factory=list)  # the (B, m) of the draft forwards fitted
    min_samples: int | None = None     # the fewest stored samples of any quantity read (decode, draft, forwards)

    def timed_points(self) -> int:
        """How many (B, g) of the c_verify grid were timed (the rest are interpolated)."""
        grid = {(int(B), int(g) + 1) for B in self.batches.tolist() for g in self.gammas.tolist()}
        return len(grid & set(self.points))

    def grid_tokens(self) -> Array:
        """N = B (g + 1) for every (batch, gamma) of the grid, shape (nB * nG,)."""
        Bg, mg = np.meshgrid(self.batches.astype(np.float64), self.gammas.astype(np.float64) + 1, indexing="ij")
        out: Array = (Bg * mg).ravel()
        return out

    def replicates(self, record: dict[str, Any], n: int, seed: int) -> tuple[Array, Array, Array]:
        """(c_decode (n, nB), c_verify (n, nB, nG), c_draft (n, nB)): each quantity's samples resampled
        with replacement, medians, the fit redone (module docstring)."""
        samples = _samples(record, self.clock)
        rng = np.random.default_rng(seed)

        def med(key: str) -> Array:
            x = np.asarray(samples[key], dtype=np.float64)
            idx = rng.integers(0, x.size, size=(n, x.size))
            return np.asarray(np.median(x[idx], axis=1), dtype=np.float64)

        dec = np.stack([med(f"target:{B}:1") for B in self.batches.tolist()], axis=1)
        dra = np.stack([med(f"draft:{B}") for B in self.batches.tolist()], axis=1)
        c = np.stack([med(f"target:{B}:{m}") for B, m in self.points], axis=1)
        knots, fitted = fit_tokens(self.points, c)
        ver = interpolate(knots, fitted, self.grid_tokens()).reshape(n, self.batches.size, self.gammas.size)
        return dec, overlay_timed(ver, self.batches, self.gammas, self.points, c), dra

    def draft_fwd_replicates(self, record: dict[str, Any], n: int, seed: int) -> Array | None:
        """c_draft_fwd(g, B) replicates (n, nB, nG): the draft forwards' samples resampled, medians, refitted;
        None without the engine term."""
        if self.c_draft_fwd is None:
            return None
        samples = _samples(record, self.clock)
        rng = np.random.default_rng(seed)
        c = np.stack([np.median(np.asarray(samples[f"draft_fwd:{B}:{m}"], dtype=np.float64)[
            rng.integers(0, len(samples[f"draft_fwd:{B}:{m}"]), size=(n, len(samples[f"draft_fwd:{B}:{m}"])))], axis=1)
            for B, m in self.fwd_points], axis=1)
        knots, fitted = fit_tokens(self.fwd_points, c)
        out: Array = interpolate(knots, fitted, self.grid_tokens()).reshape(n, self.batches.size, self.gammas.size)
        return overlay_timed(out, self.batches, self.gammas, self.fwd_points, c)


def overlay_timed(grid: Array, batches: NDArray[np.int64], gammas: NDArray[np.int64],
                  points: list[tuple[int, int]], medians: Array) -> Array:
    """The grid (..., nB, nG) with every timed point (B, m = g + 1) set to its own median (..., P): a
    forward that was timed is used as timed; the fit only fills the points nobody timed."""
    out = np.array(grid, dtype=np.float64, copy=True)
    bi = {int(B): i for i, B in enumerate(batches.tolist())}
    gj = {int(g): j for j, g in enumerate(gammas.tolist())}
    for k, (B, m) in enumerate(points):
        if B in bi and (m - 1) in gj:
            out[..., bi[B], gj[m - 1]] = np.asarray(medians)[..., k]
    return out


def _samples(record: dict[str, Any], clock: str) -> dict[str, list[float]]:
    samples = record.get("samples_cpu_s" if clock == "cpu" else "samples_s")
    if not isinstance(samples, dict):
        raise SpectermError("the run's batch cost record has no samples; re-measure with `specterm confirm --batch-costs`.")
    return samples


def _fit_points(record: dict[str, Any], samples: dict[str, Any]) -> list[tuple[int, int]]:
    """Every timed target forward "target:B:m" of the grid's batches with B m >= 2, held-back points excluded."""
    batches = {int(b) for b in record["batches"]}
    held = {(int(B), int(m)) for B, m in record.get("held_back") or []}
    pts = set()
    for key in samples:
        parts = key.split(":")
        if len(parts) == 3 and parts[0] == "target":
            B, m = int(parts[1]), int(parts[2])
            if B in batches and B * m >= 2 and (B, m) not in held:
                pts.add((B, m))
    return sorted(pts)


def _fwd_points(record: dict[str, Any], samples: dict[str, Any]) -> list[tuple[int, int]]:
    """Every timed engine draft forward "draft_fwd:B:m" of the grid's batches (m >= 2)."""
    batches = {int(b) for b in record["batches"]}
    pts = set()
    for key in samples:
        parts = key.split(":")
        if len(parts) == 3 and parts[0] == "draft_fwd" and int(parts[1]) in batches and int(parts[2]) >= 2:
            pts.add((int(parts[1]), int(parts[2])))
    return sorted(pts)


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
        pts = _fit_points(record, samples)
        # the grid's g reach the widest forward timed at EVERY batch (B = 1 may reach further, from the
        # g curve's rounds; beyond a batch's widest forward the fit would only extrapolate)
        m_max = min(max(m for B, m in pts if B == b) for b in {int(b) for b in record["batches"]})
    except (KeyError, TypeError, ValueError):
        raise SpectermError("the run's batch cost record is malformed; re-measure with `specterm confirm --batch-costs`.") from None
    if len({B * m for B, m in pts}) < 2 or batches.size < 2:
        raise SpectermError("the run's batch cost record needs target forwards of two sizes and two batch sizes to fit; "
                            "re-measure with `specterm confirm --batch-costs`.")
    cp = np.array([_median(samples.get(f"target:{B}:{m}")) for B, m in pts])
    knots, fitted = fit_tokens(pts, cp)
    pooled = pooled_by_tokens(pts, cp)[1]
    rms_rel = float(np.sqrt(np.mean(((fitted - pooled) / pooled) ** 2)))
    held = []
    for B, m in record.get("held_back") or []:
        measured = _median(samples.get(f"target:{int(B)}:{int(m)}"))
        fit = float(interpolate(knots, fitted, np.array([float(B) * float(m)]))[0])
        held.append({"batch": int(B), "gamma": int(m) - 1, "measured_s": measured, "fit_s": fit,
                     "error_pct": 100.0 * (fit - measured) / measured})
    ctx = record.get("context")
    wall = record.get("wall_s")
    whole = record.get("whole_wall_s")
    upfront = record.get("upfront_wall_s")
    out = BatchCosts(
        batches=batches, gammas=np.arange(1, m_max, dtype=np.int64),
        c_decode=np.array([_median(samples.get(f"target:{B}:1")) for B in batches.tolist()]),
        c_verify=np.zeros(0),
        c_draft=np.array([_median(samples.get(f"draft:{B}")) for B in batches.tolist()]),
        knots=knots, fitted=fitted, held_back=held, clock=clock, context=int(ctx) if isinstance(ctx, int) else None,
        wall_s=float(wall) if isinstance(wall, (int, float)) else None, fit_rms_rel=rms_rel, points=pts,
        whole_wall_s=float(whole) if isinstance(whole, (int, float)) else None,
        upfront_wall_s=float(upfront) if isinstance(upfront, (int, float)) else None)
    c_verify = overlay_timed(interpolate(knots, fitted, out.grid_tokens()).reshape(batches.size, out.gammas.size),
                             batches, out.gammas, pts, cp)
    fwd_pts = _fwd_points(record, samples)
    c_fwd = None
    if fwd_pts:
        if len({B * m for B, m in fwd_pts}) < 2:
            raise SpectermError("the run's batch cost record needs draft forwards of two sizes to fit c_draft_fwd(g, B); "
                                "re-measure with `specterm confirm --engine llama.cpp --batch-costs`.")
        cf = np.array([_median(samples.get(f"draft_fwd:{B}:{m}")) for B, m in fwd_pts])
        kf, ff = fit_tokens(fwd_pts, cf)
        c_fwd = overlay_timed(interpolate(kf, ff, out.grid_tokens()).reshape(batches.size, out.gammas.size),
                              batches, out.gammas, fwd_pts, cf)
    keys = ([f"target:{B}:{m}" for B, m in pts] + [f"target:{B}:1" for B in batches.tolist()]
            + [f"draft:{B}" for B in batches.tolist()] + [f"draft_fwd:{B}:{m}" for B, m in fwd_pts])
    n_min = min(len(samples[k]) for k in keys)
    return BatchCosts(**{**out.__dict__, "c_verify": c_verify, "c_draft_fwd": c_fwd, "fwd_points": fwd_pts,
                         "min_samples": n_min})
