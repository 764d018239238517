"""The robust cost curve a decision uses (SPEC 6 "Costs"), from a run.json "cost" dict. Pure numpy.

Medians of interleaved repeats are still noisy on a
shared machine (the first shipped curve had c_verify(2) = 1.33 s > c_verify(4) = 0.99 s), so the
forward costs are put on one axis, m = tokens per target forward (m = 1: c_decode; m = g + 1:
c_verify(g)), and adjacent violators of monotonicity are pooled (pool-adjacent-violators, the
isotonic least-squares fit) -- but only where the violation is within noise:

    pool blocks a < b (in m) when  median_a - median_b  <=  z * sqrt(se_a^2 + se_b^2),   z = 2
    se = 0.929 * IQR / sqrt(n)   (standard error of a median of n samples, normal approximation)
    pooled value = precision-weighted mean (weights 1/se^2), pooled se = (sum of weights)^(-1/2)

Assumption: a target forward of more tokens does not cost less, unless the measurements say so
by more than two standard errors: CPU matrix kernels do have such steps (Qwen2.5-1.5B on this
CPU: a 3-token forward 1.23 s, a 4-token one 0.87 s, in CPU time, over 7 rounds each), and
pooling them would mispredict both draft lengths. With fewer than 3 samples per quantity (no
usable spread) every violation is pooled (the plain isotonic fit). A straight line c(m) = a + b m
(least squares over the same medians) is stored beside it with its RMS residual as a check of how
far the curve is from linear; it is not used for decisions because CPU kernels make the real curve
step-shaped. c_draft and c_draft2 are single quantities: medians as they are.

An engine's per-block draft term c_draft_fwd(g) (a (g+1)-token draft forward, stored by llama.cpp
runs as c_draft_fwd_s / c_draft_fwd_cpu_s; costmodel's module docstring) is a curve over m = g + 1
like c_verify and gets the same pooling within noise, on its own (the draft's forwards are never
pooled with the target's). A curve with that term uses the engine's block cost everywhere
(`CostCurve.draft_fwd_on`), and its refeed extra is 0: llama.cpp's draft-simple speculator never
takes a 2-token draft step, since its per-block forward already put every verified token in the
draft's cache.

Clock: a run stores wall-time and process-CPU-time medians; `decision_clock` says which the curve
uses: "cpu" on a CPU with one torch thread (then CPU time is the time a forward takes when it has
the core to itself, unmoved by other processes time-sharing the machine), "wall" otherwise.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.decide import costmodel
from specterm.core.decide.hardware.overhead import BlockOverhead, block_overhead, overhead_lines
from specterm.core.errors import SpectermError

ROBUST_METHOD = ("pool-adjacent-violators over m = tokens per target forward (m = 1: c_decode, m = g + 1: "
                 "c_verify(g)), pooling a violation only when it is within 2 standard errors of the medians "
                 "(se = 0.929 IQR / sqrt(n)); c_draft, c_draft2: medians")
NOISE_Z = 2.0
MIN_SAMPLES = 3  # the fewest samples whose IQR gives a median's standard error


# ------------------------------------------------------------------------------ robust curve ---


def _pool_adjacent(y: np.ndarray, w: np.ndarray, z: float) -> np.ndarray:
    """Pool adjacent violators: scan left to right, merge the last two blocks into their weighted mean
    while the earlier one is higher by at most z * sqrt(1/w_a + 1/w_b) (z = inf: every violation)."""
    means: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    for yi, wi in zip(y.tolist(), w.tolist()):
        means.append(yi)
        weights.append(wi)
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1] and (z == math.inf or
                means[-2] - means[-1] <= z * math.sqrt(1.0 / weights[-2] + 1.0 / weights[-1])):
            wt = weights[-2] + weights[-1]
            mean = (means[-2] * weights[-2] + means[-1] * weights[-1]) / wt
            size = sizes[-2] + sizes[-1]
            del means[-1], weights[-1], sizes[-1]
            means[-1], weights[-1], sizes[-1] = mean, wt, size
    return np.repeat(np.asarray(means), np.asarray(sizes, dtype=np.int64))


def isotonic_increasing(y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Least-squares non-decreasing fit of y (in the given order): argmin_f sum w_i (f_i - y_i)^2
    subject to f_1 <= f_2 <= ... (pool adjacent violators; each pooled block takes its weighted mean)."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    return _pool_adjacent(y, w, math.inf)


def median_se(samples: ArrayLike) -> float:
    """Standard error of the median of n samples: 1.2533 sigma / sqrt(n), sigma = IQR / 1.349."""
    x = np.asarray(samples, dtype=np.float64)
    q25, q75 = np.percentile(x, [25, 75])
    return float(0.929 * (q75 - q25) / math.sqrt(x.size))


def relative_noise(samples: dict[str, Any], keys: list[str]) -> float | None:
    """sigma_rel: one forward's relative noise, the median over the quantities of `keys` timed at least
    MIN_SAMPLES times of median_se(x) sqrt(n) / median(x). None when no quantity was timed that often.

    `specterm costs` times the draft lengths the decision cannot use (`settle.prunable`) once; such a
    quantity borrows this noise, scaled to its own median (`quantity_se`), instead of counting as exact."""
    rel = [median_se(x) * math.sqrt(len(x)) / float(np.median(x)) for x in (samples.get(k) for k in keys)
           if isinstance(x, list) and len(x) >= MIN_SAMPLES and all(_positive(v) for v in x)]
    return float(np.median(rel)) if rel else None


def quantity_se(x: list[float], sigma_rel: float | None) -> float | None:
    """The standard error of a quantity's median: median_se with MIN_SAMPLES+ samples, else the borrowed
    sigma_rel * median(x) / sqrt(n) (`relative_noise`); None when neither is known."""
    if len(x) >= MIN_SAMPLES:
        return median_se(x)
    return None if sigma_rel is None or not x else sigma_rel * float(np.median(x)) / math.sqrt(len(x))


def median_ses(samples: dict[str, Any], keys: list[str]) -> np.ndarray | None:
    """quantity_se of each quantity of `keys`, the noise borrowed from those of `keys` timed MIN_SAMPLES+
    times (`relative_noise`); None when one has no positive samples or no standard error can be given."""
    vals: list[Any] = [samples.get(k) for k in keys]
    if not all(isinstance(v, list) and v and all(_positive(x) for x in v) for v in vals):
        return None
    sigma = relative_noise(samples, keys)
    ses = [quantity_se(v, sigma) for v in vals]
    return None if any(x is None for x in ses) else np.array(ses, dtype=np.float64)


def clock_samples(cost: dict[str, Any] | None) -> Any:
    """The stored samples of a cost dict on its decision clock (samples_cpu_s or samples_s; None without)."""
    if not cost:
        return None
    return cost.get("samples_cpu_s" if cost.get("decision_clock") == "cpu" else "samples_s")


def sample_counts(cost: dict[str, Any] | None) -> dict[str, int]:
    """How many timed samples each quantity of a cost dict has, on its decision clock ({} without samples)."""
    samples = clock_samples(cost)
    return {k: len(v) for k, v in samples.items() if isinstance(v, list)} if isinstance(samples, dict) else {}


def pool_violators_within_noise(y: np.ndarray, se: np.ndarray | None = None, z: float = NOISE_Z) -> np.ndarray:
    """Pool-adjacent-violators where the violation is within noise (see the module docstring).

    se None: every violation is pooled with equal weights, i.e. the plain isotonic fit
    (`isotonic_increasing`). A kept (significant) violation leaves the result non-monotone there.
    """
    y = np.asarray(y, dtype=np.float64)
    if se is None:
        return isotonic_increasing(y)
    se = np.maximum(np.asarray(se, dtype=np.float64), 1e-12 * np.maximum(np.abs(y), 1e-12))
    return _pool_adjacent(y, 1.0 / se ** 2, z)  # weights 1 / se^2


def fit_line(m: np.ndarray, c: np.ndarray) -> tuple[float, float, float]:
    """(a, b, rms): least-squares c = a + b m and the root mean square of its residuals."""
    m = np.asarray(m, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    X = np.column_stack([np.ones_like(m), m])
    (a, b), *_ = np.linalg.lstsq(X, c, rcond=None)
    rms = float(np.sqrt(np.mean((c - (a + b * m)) ** 2)))
    return float(a), float(b), rms


def robust_forward_costs(c_decode: float, gammas: np.ndarray, c_verify: np.ndarray,
                         se_decode: float | None = None, se_verify: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """(c_decode, c_verify(g)) after pooling violators within noise over m = 1, g + 1 (module docstring).

    gammas need not be sorted or contiguous; the result is in the order of `gammas`. Without
    standard errors (se_decode or se_verify None) this is the plain isotonic fit.
    """
    gammas = np.asarray(gammas, dtype=np.int64)
    order = np.argsort(gammas, kind="stable")
    y = np.concatenate([[float(c_decode)], np.asarray(c_verify, dtype=np.float64)[order]])
    se = None
    if se_decode is not None and se_verify is not None:
        se = np.concatenate([[float(se_decode)], np.asarray(se_verify, dtype=np.float64)[order]])
    fit = pool_violators_within_noise(y, se)
    out = np.empty(gammas.size, dtype=np.float64)
    out[order] = fit[1:]
    return float(fit[0]), out


@dataclass(frozen=True)
class CostCurve:
    """The measured costs a decision uses (robust curve), in seconds; gammas ascending."""

    gammas: np.ndarray
    c_decode: float
    c_verify: np.ndarray
    c_draft: float
    context: int | None = None
    raw_c_decode: float | None = None
    raw_c_verify: np.ndarray | None = None
    c_draft2: float | None = None  # a 2-token draft forward (None: not measured, taken as c_draft)
    clock: str = "wall"
    c_draft_fwd: np.ndarray | None = None  # the engine's per-block draft forward at each of `gammas` (None: torch)
    engine: str | None = None              # the engine that measured the costs (None: torch, as recorded)
    block_overhead: BlockOverhead | None = None  # o(g), the per-block time outside the forwards (None: not measured)
    forwards_where: str | None = None  # where c_verify and c_draft were timed when not as separate forwards (engine_loop)

    def overhead_on(self, gammas: ArrayLike) -> np.ndarray | None:
        """o(g) at each g of `gammas` (the block cost's overhead term), None where it was not measured."""
        return None if self.block_overhead is None else self.block_overhead.at(np.atleast_1d(np.asarray(gammas)))

    def overhead_at(self, gamma: int) -> float | None:
        """o(g) (None where the block overhead was not measured)."""
        return None if self.block_overhead is None else float(self.block_overhead.at(gamma))

    @property
    def refeed_extra(self) -> float:
        """(c_draft2 - c_draft)+: what a 2-token draft step costs beyond a 1-token one; 0 for a curve with an
        engine per-block term (that engine's draft never takes a 2-token step, module docstring)."""
        if self.c_draft_fwd is not None:
            return 0.0
        return costmodel.refeed_extra(self.c_draft, self.c_draft2)

    def draft_fwd_on(self, gammas: ArrayLike) -> np.ndarray | None:
        """c_draft_fwd(g) at each g of `gammas` (the block cost's engine term), None without one."""
        if self.c_draft_fwd is None:
            return None
        return np.array([self.c_draft_fwd[self._index(int(g))] for g in np.atleast_1d(np.asarray(gammas)).tolist()],
                        dtype=np.float64)

    def draft_fwd_at(self, gamma: int) -> float | None:
        """c_draft_fwd(g) (None without an engine term)."""
        return None if self.c_draft_fwd is None else float(self.c_draft_fwd[self._index(gamma)])

    def block_term_text(self) -> str:
        """How the block cost reads, for verdicts and tables: SPEC 6's, with the engine's term and the block
        overhead named where the curve has them."""
        text = "c_verify(g) + g c_draft"
        if self.forwards_where is not None:
            text += f" (both timed in {self.forwards_where})"
        if self.c_draft_fwd is not None:
            text += (f" + c_draft_fwd(g) ({self.engine or 'the engine'}'s per-block "
                     "(g+1)-token draft forward)")
        if self.block_overhead is not None:
            text += f" + o(g) ({self.block_overhead.text()})"
        return text

    def _index(self, gamma: int) -> int:
        i = np.flatnonzero(self.gammas == gamma)
        if i.size == 0:
            raise SpectermError(f"the cost curve has no c_verify({gamma}); measure draft lengths {self.gammas.min()}..{self.gammas.max()} only.")
        return int(i[0])

    @property
    def r_mb(self) -> float:
        """r of the memory-bound model: c_draft / c_decode."""
        return self.c_draft / self.c_decode

    def verify_at(self, gamma: int) -> float:
        return float(self.c_verify[self._index(gamma)])


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def cost_curve(cost: dict[str, Any] | None) -> CostCurve | None:
    """The robust curve from a run.json "cost" dict, or None when the run has no measured c_decode
    (imported bits, or a run measured before c_decode was timed: re-measure with --remeasure-cost).

    Uses the stored medians (c_decode_s, c_verify_s, c_draft_s) and recomputes the isotonic fit, so
    a hand-edited or older "c_verify_robust_s" is never trusted. A malformed dict raises SpectermError.
    """
    if not cost or cost.get("c_decode_s") is None:
        return None
    clock = "cpu" if cost.get("decision_clock") == "cpu" else "wall"
    sfx = "_cpu_s" if clock == "cpu" else "_s"
    c_decode: Any = cost.get("c_decode" + sfx)  # JSON values, checked just below
    c_draft: Any = cost.get("c_draft" + sfx)
    verify: Any = cost.get("c_verify" + sfx)
    c_draft2: Any = cost.get("c_draft2" + sfx)
    if not (_positive(c_decode) and _positive(c_draft) and isinstance(verify, dict) and verify):
        raise SpectermError("the run's cost record is malformed (c_decode_s, c_draft_s and c_verify_s must be positive "
                            "numbers); re-measure with `specterm run --resume --remeasure-cost`.")
    try:
        pairs = sorted((int(g), float(c)) for g, c in verify.items() if _positive(c))
    except (TypeError, ValueError):
        pairs = []
    if len(pairs) != len(verify) or any(g < 1 for g, _ in pairs):
        raise SpectermError("the run's c_verify_s must map draft lengths >= 1 to positive seconds; "
                            "re-measure with `specterm run --resume --remeasure-cost`.")
    gammas = np.array([g for g, _ in pairs], dtype=np.int64)
    raw = np.array([c for _, c in pairs], dtype=np.float64)
    samples = clock_samples(cost)
    se_dec = se_ver = None
    if isinstance(samples, dict):
        ses = median_ses(samples, ["decode"] + [f"verify:{g}" for g in gammas.tolist()])
        if ses is not None:
            se_dec, se_ver = float(ses[0]), ses[1:]
    assert c_decode is not None and c_draft is not None  # checked by _positive above
    c_dec, c_ver = robust_forward_costs(float(c_decode), gammas, raw, se_dec, se_ver)
    ctx = cost.get("context")
    engine = cost.get("engine")
    return CostCurve(gammas=gammas, c_decode=c_dec, c_verify=c_ver, c_draft=float(c_draft),
                     context=int(ctx) if isinstance(ctx, int) else None,
                     raw_c_decode=float(c_decode), raw_c_verify=raw,
                     c_draft2=float(c_draft2) if c_draft2 is not None and _positive(c_draft2) else None, clock=clock,
                     c_draft_fwd=_draft_fwd(cost, gammas, sfx, samples),
                     engine=engine if isinstance(engine, str) else None, block_overhead=block_overhead(cost),
                     forwards_where=forwards_where(cost))


def forwards_where(cost: dict[str, Any] | None) -> str | None:
    """Where the forwards were timed (cost["forwards"]["where"], engine_loop.KEY), None for separate forwards."""
    f = cost.get("forwards") if isinstance(cost, dict) else None
    where = f.get("where") if isinstance(f, dict) else None
    return where if isinstance(where, str) and where else None


def _draft_fwd(cost: dict[str, Any], gammas: np.ndarray, sfx: str, samples: Any) -> np.ndarray | None:
    """The engine term c_draft_fwd(g) over `gammas` from "c_draft_fwd" + sfx (None when the run has none),
    pooled within noise over m = g + 1 like c_verify (se from "draft_fwd:<g>" samples when all have 3+)."""
    stored: Any = cost.get("c_draft_fwd" + sfx)
    if stored is None:
        return None
    values: list[Any] = [stored.get(str(int(g))) for g in gammas.tolist()] if isinstance(stored, dict) else []
    if not values or not all(_positive(v) for v in values):
        raise SpectermError("the run's c_draft_fwd record must map every timed draft length to positive seconds; "
                            "re-measure with `specterm run --backend llama.cpp --resume --remeasure-cost`.")
    raw = np.array([float(v) for v in values], dtype=np.float64)
    se = median_ses(samples, [f"draft_fwd:{g}" for g in gammas.tolist()]) if isinstance(samples, dict) else None
    return pool_violators_within_noise(raw, se)


def curve_summary(curve: CostCurve) -> dict[str, Any]:
    """What run.json stores about the robust curve: the fitted values, the line check, the method."""
    m = np.concatenate([[1], curve.gammas + 1])
    raw = np.concatenate([[curve.raw_c_decode if curve.raw_c_decode is not None else curve.c_decode],
                          curve.raw_c_verify if curve.raw_c_verify is not None else curve.c_verify])
    a, b, rms = fit_line(m, raw)
    return {
        "c_decode_robust_s": curve.c_decode,
        "c_verify_robust_s": {str(int(g)): float(c) for g, c in zip(curve.gammas, curve.c_verify)},
        "c_verify_line": {"a_s": a, "b_s_per_token": b, "rms_s": rms,
                          "formula": "c(m) = a + b m, m = tokens per target forward (least squares over the medians)"},
        "robust_method": ROBUST_METHOD,
        "decision_clock": curve.clock,
        **({} if curve.c_draft_fwd is None else
           {"c_draft_fwd_robust_s": {str(int(g)): float(c) for g, c in zip(curve.gammas, curve.c_draft_fwd)}}),
    }



@dataclass(frozen=True)
class CostReplicates:
    """Bootstrap replicates of the robust costs (SPEC 6 "Uncertainty"): (n,) and (n, G) arrays, gammas as the curve's."""

    gammas: np.ndarray
    c_decode: np.ndarray
    c_verify: np.ndarray
    c_draft: np.ndarray
    c_draft_fwd: np.ndarray | None = None  # (n, G): the engine term's replicates (None without one)
    overhead: np.ndarray | None = None     # (n, G): the block overhead o(g)'s replicates (None: not measured)
    overhead_line: tuple[np.ndarray, np.ndarray] | None = None  # (a, b), each (n,): the fit of o in each replicate

    def draft_fwd_col(self, k: int, n: int) -> np.ndarray | None:
        """The first n replicates of the engine term at column k (the curve's k-th g), None without one."""
        return None if self.c_draft_fwd is None else self.c_draft_fwd[:n, k]

    def overhead_on(self, drafted: ArrayLike) -> np.ndarray | None:
        """(n, len(drafted)): o(d) = a + b d at each drafted length d (0 included) in every replicate."""
        if self.overhead_line is None:
            return None
        a, b = self.overhead_line
        return a[:, None] + b[:, None] * np.asarray(drafted, dtype=np.float64)[None, :]

    def overhead_col(self, k: int, n: int) -> np.ndarray | None:
        """The first n replicates of o(g) at column k (the curve's k-th g), None where it was not measured."""
        return None if self.overhead is None else self.overhead[:n, k]


def cost_replicates(cost: dict[str, Any] | None, n: int, seed: int) -> CostReplicates | None:
    """n replicates of the robust curve: each quantity's stored samples (on the curve's clock) resampled
    with replacement and their median taken, independently per quantity; the forward costs then go
    through the same pooling as the point estimate (`robust_forward_costs`, with the standard errors
    of the original samples). None without a curve, without stored samples, or with n = 0. A quantity
    with fewer than MIN_SAMPLES samples (a draft length `specterm costs` timed once because the decision
    cannot use it) borrows the others' relative noise: its resampled median times exp(sigma_rel / sqrt(n) Z),
    Z standard normal from a second generator (so the first draws the same numbers as without it); with no
    quantity timed MIN_SAMPLES times it stays fixed (no spread to resample). An engine term c_draft_fwd(g) is resampled the
    same way after every other quantity (so the other replicates do not depend on it) and pooled like the
    point estimate; without its samples it stays fixed at the curve's values. The block overhead o(g), where
measured, is resampled last from its own samples (overhead.overhead_lines, its own generator)."""
    curve = cost_curve(cost)
    if curve is None or n <= 0 or cost is None:
        return None
    samples = clock_samples(cost)
    keys = ["decode", "draft"] + [f"verify:{g}" for g in curve.gammas.tolist()]
    if not isinstance(samples, dict) or not all(isinstance(samples.get(k), list) and samples[k] for k in keys):
        return None
    rng = np.random.default_rng(seed)
    fwd_keys = [f"draft_fwd:{g}" for g in curve.gammas.tolist()]
    sigma = relative_noise(samples, ["decode", *keys[2:]])
    sigma_fwd = relative_noise(samples, fwd_keys)
    borrowed = np.random.default_rng([seed, 1])

    def med(key: str, sigma_rel: float | None = sigma) -> np.ndarray:
        x = np.asarray(samples[key], dtype=np.float64)
        m = np.median(x[rng.integers(0, x.size, size=(n, x.size))], axis=1)
        if x.size < MIN_SAMPLES and sigma_rel is not None:
            m = m * np.exp(sigma_rel / math.sqrt(x.size) * borrowed.standard_normal(n))
        return m

    dec, dra = med("decode"), med("draft")
    ver = np.stack([med(f"verify:{g}") for g in curve.gammas.tolist()], axis=1)
    ses = median_ses(samples, ["decode", *keys[2:]])  # the point curve's (cost_curve)
    se_dec, se_ver = (None, None) if ses is None else (float(ses[0]), ses[1:])
    out_dec = np.empty(n)
    out_ver = np.empty_like(ver)
    for i in range(n):
        out_dec[i], out_ver[i] = robust_forward_costs(float(dec[i]), curve.gammas, ver[i], se_dec, se_ver)
    fwd = None
    if curve.c_draft_fwd is not None:
        if all(isinstance(samples.get(k), list) and samples[k] for k in fwd_keys):
            raw = np.stack([med(k, sigma_fwd) for k in fwd_keys], axis=1)
            se_f = median_ses(samples, fwd_keys)
            fwd = np.stack([pool_violators_within_noise(row, se_f) for row in raw])
        else:
            fwd = np.broadcast_to(curve.c_draft_fwd, (n, curve.gammas.size)).copy()
    line = (None if curve.block_overhead is None
            else overhead_lines(curve.block_overhead, n, int(np.random.SeedSequence([seed, 2]).generate_state(1)[0])))
    reps = CostReplicates(gammas=curve.gammas, c_decode=out_dec, c_verify=out_ver, c_draft=dra, c_draft_fwd=fwd,
                          overhead_line=line)
    return dataclasses.replace(reps, overhead=reps.overhead_on(curve.gammas))
