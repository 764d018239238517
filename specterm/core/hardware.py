"""Speedup on the hardware the costs were measured on (SPEC 6, "Measured costs"). Pure numpy.

Costs (seconds, this device, the run's context length):

    c_decode      one 1-token target step (plain greedy decoding)
    c_verify(g)   one (g+1)-token target forward on the KV cache (verifying g drafts)
    c_draft       one 1-token draft step

Speedup of lossless greedy speculation at draft length g over plain greedy decoding:

    S_hw(g) = E(g) * c_decode / (c_verify(g) + g * c_draft + phi(g) * (c_draft2 - c_draft)+)
    g_hw    = argmax_g S_hw(g)                      ties: smallest g (`optimum.best_gamma`)

SPEC 6's S_hw is the case phi = 0 (or c_draft2 = c_draft). The last term is what a real decoder
pays after a fully accepted block: the draft never saw its own last proposal, so its first step of
the next block feeds 2 tokens (that proposal and the target's bonus token), which costs c_draft2
(a 2-token draft forward; on a CPU a 2-row matrix product costs 2-3 single-row ones, on a GPU about
one). phi(g) = share of blocks that follow a fully accepted block: exact from the streams' walk
(`refeed_share`), alpha^g under i.i.d. acceptance. (x)+ = max(x, 0).

E = E_true (the stored streams) or E_iid(alpha, g) (the i.i.d. promise, in hardware terms).
The memory-bound model (a GPU at small batch) takes c_verify(g) = c_decode, i.e. with
r_mb = c_draft / c_decode

    S_mb(g) = E(g) / (1 + g r_mb)

Robust cost curve (what decisions use). Medians of interleaved repeats are still noisy on a
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

Clock: a run stores wall-time and process-CPU-time medians; `decision_clock` says which the curve
uses: "cpu" on a CPU with one torch thread (then CPU time is the time a forward takes when it has
the core to itself, unmoved by other processes time-sharing the machine), "wall" otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from specterm.core.blockwalk import block_accepts
from specterm.core.errors import SpectermError
from specterm.core.estimate import num
from specterm.core.optimum import best_gamma
from specterm.core.report import POOLED, ConfirmedRow, Curve, DecisionHW

MEMORY_BOUND_LABEL = "memory-bound model: verify = one decode step"
ROBUST_METHOD = ("pool-adjacent-violators over m = tokens per target forward (m = 1: c_decode, m = g + 1: "
                 "c_verify(g)), pooling a violation only when it is within 2 standard errors of the medians "
                 "(se = 0.929 IQR / sqrt(n)); c_draft, c_draft2: medians")
NOISE_Z = 2.0


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


def isotonic_increasing(y: np.ndarray, w: Optional[np.ndarray] = None) -> np.ndarray:
    """Least-squares non-decreasing fit of y (in the given order): argmin_f sum w_i (f_i - y_i)^2
    subject to f_1 <= f_2 <= ... (pool adjacent violators; each pooled block takes its weighted mean)."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    return _pool_adjacent(y, w, math.inf)


def median_se(samples) -> float:
    """Standard error of the median of n samples: 1.2533 sigma / sqrt(n), sigma = IQR / 1.349."""
    x = np.asarray(samples, dtype=np.float64)
    q25, q75 = np.percentile(x, [25, 75])
    return float(0.929 * (q75 - q25) / math.sqrt(x.size))


def pool_violators_within_noise(y: np.ndarray, se: Optional[np.ndarray] = None, z: float = NOISE_Z) -> np.ndarray:
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
                         se_decode: Optional[float] = None, se_verify: Optional[np.ndarray] = None) -> tuple[float, np.ndarray]:
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
    context: Optional[int] = None
    raw_c_decode: Optional[float] = None
    raw_c_verify: Optional[np.ndarray] = None
    c_draft2: Optional[float] = None  # a 2-token draft forward (None: not measured, taken as c_draft)
    clock: str = "wall"

    @property
    def refeed_extra(self) -> float:
        """(c_draft2 - c_draft)+: what a 2-token draft step costs beyond a 1-token one."""
        return 0.0 if self.c_draft2 is None else max(0.0, self.c_draft2 - self.c_draft)

    @property
    def r_mb(self) -> float:
        """r of the memory-bound model: c_draft / c_decode."""
        return self.c_draft / self.c_decode

    def verify_at(self, gamma: int) -> float:
        i = np.flatnonzero(self.gammas == gamma)
        if i.size == 0:
            raise SpectermError(f"the cost curve has no c_verify({gamma}); measure draft lengths {self.gammas.min()}..{self.gammas.max()} only.")
        return float(self.c_verify[i[0]])


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def cost_curve(cost: Optional[dict]) -> Optional[CostCurve]:
    """The robust curve from a run.json "cost" dict, or None when the run has no measured c_decode
    (imported bits, or a run measured before c_decode was timed: re-measure with --remeasure-cost).

    Uses the stored medians (c_decode_s, c_verify_s, c_draft_s) and recomputes the isotonic fit, so
    a hand-edited or older "c_verify_robust_s" is never trusted. A malformed dict raises SpectermError.
    """
    if not cost or cost.get("c_decode_s") is None:
        return None
    clock = "cpu" if cost.get("decision_clock") == "cpu" else "wall"
    sfx = "_cpu_s" if clock == "cpu" else "_s"
    c_decode = cost.get("c_decode" + sfx)
    c_draft = cost.get("c_draft" + sfx)
    verify = cost.get("c_verify" + sfx)
    c_draft2 = cost.get("c_draft2" + sfx)
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
    samples = cost.get("samples_cpu_s" if clock == "cpu" else "samples_s")
    se_dec = se_ver = None
    if isinstance(samples, dict):
        keys = ["decode"] + [f"verify:{g}" for g in gammas.tolist()]
        vals = [samples.get(k) for k in keys]
        if all(isinstance(v, list) and len(v) >= 3 and all(_positive(x) for x in v) for v in vals):
            ses = [median_se(v) for v in vals]
            se_dec, se_ver = ses[0], np.array(ses[1:])
    c_dec, c_ver = robust_forward_costs(float(c_decode), gammas, raw, se_dec, se_ver)
    ctx = cost.get("context")
    return CostCurve(gammas=gammas, c_decode=c_dec, c_verify=c_ver, c_draft=float(c_draft),
                     context=int(ctx) if isinstance(ctx, int) else None,
                     raw_c_decode=float(c_decode), raw_c_verify=raw,
                     c_draft2=float(c_draft2) if _positive(c_draft2) else None, clock=clock)


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
    }


# ----------------------------------------------------------------------------- the speedups ---


def speedup_hw(E: np.ndarray, c_decode: float, c_verify: np.ndarray, c_draft: float, gammas: np.ndarray,
               phi: Optional[np.ndarray] = None, refeed_extra: float = 0.0) -> np.ndarray:
    """S_hw(g) = E(g) * c_decode / (c_verify(g) + g * c_draft + phi(g) * refeed_extra), elementwise over
    gammas; refeed_extra = (c_draft2 - c_draft)+ (`CostCurve.refeed_extra`); phi None or extra 0: SPEC 6's S_hw."""
    g = np.asarray(gammas, dtype=np.float64)
    block = np.asarray(c_verify, dtype=np.float64) + g * c_draft
    if phi is not None and refeed_extra:
        block = block + np.asarray(phi, dtype=np.float64) * refeed_extra
    return np.asarray(E, dtype=np.float64) * c_decode / block


def refeed_counts(bits: np.ndarray, gammas) -> tuple[np.ndarray, np.ndarray]:
    """(refeeds, blocks) of one stream at each g: blocks that follow a fully accepted block (k = g),
    and all blocks, as the walk of SPEC 2 cuts the stream."""
    refeeds, blocks = [], []
    for g in np.atleast_1d(np.asarray(gammas)).tolist():
        ks = block_accepts(bits, int(g))
        refeeds.append(int(np.count_nonzero(ks[:-1] == g)))
        blocks.append(int(ks.size))
    return np.array(refeeds, dtype=np.int64), np.array(blocks, dtype=np.int64)


def refeed_share(streams_bits, gammas) -> np.ndarray:
    """phi(g) = sum refeeds / sum blocks over the streams (ratio of sums); NaN where there are no blocks."""
    tot_r = np.zeros(np.atleast_1d(gammas).shape, dtype=np.float64)
    tot_b = np.zeros_like(tot_r)
    for bits in streams_bits:
        r, b = refeed_counts(bits, gammas)
        tot_r += r
        tot_b += b
    with np.errstate(invalid="ignore", divide="ignore"):
        return tot_r / tot_b


def refeed_share_iid(alpha: float, gammas) -> np.ndarray:
    """phi_iid(g) = alpha^g: the chance that all g drafts of a block are accepted under i.i.d. acceptance."""
    return np.asarray(alpha, dtype=np.float64) ** np.asarray(gammas, dtype=np.float64)


def speedup_mb(E: np.ndarray, r: float, gammas: np.ndarray) -> np.ndarray:
    """S_mb(g) = E(g) / (1 + g r): S_hw with c_verify(g) = c_decode and r = c_draft / c_decode."""
    return np.asarray(E, dtype=np.float64) / (1.0 + np.asarray(gammas, dtype=np.float64) * r)


def _on_grid(gammas: np.ndarray, E: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """E at each g of grid (NaN where the E curve has no value)."""
    lookup = {int(g): float(e) for g, e in zip(np.asarray(gammas).tolist(), np.asarray(E, dtype=np.float64).tolist())}
    return np.array([lookup.get(int(g), np.nan) for g in grid], dtype=np.float64)


@dataclass(frozen=True)
class HardwareDecision:
    """Speculate or not on the measured hardware, beside the memory-bound model (SPEC 6).

    hw: S_hw over the measured draft lengths; mb: S_mb = E / (1 + g r_mb) over the E curve's draft
    lengths. *_iid: the same with E_iid(alpha, g); speedup_true_at_gamma_iid_hw = S_hw(g_iid_hw)
    computed with E_true (what following the i.i.d. choice really gives here).
    measured: False when the run has no measured costs (then only the memory-bound fields are set,
    with the r given, and the verdict says so).
    """

    measured: bool
    gamma_hw: Optional[int]
    speedup_hw: Optional[float]
    gamma_mb: Optional[int]
    speedup_mb: Optional[float]
    gamma_iid_hw: Optional[int]
    speedup_iid_hw: Optional[float]
    speedup_true_at_gamma_iid_hw: Optional[float]
    gamma_iid_mb: Optional[int]
    speedup_iid_mb: Optional[float]
    r_mb: Optional[float]
    speculate: bool
    verdict: str
    curve_hw: dict[str, list] = field(default_factory=dict)  # {"gamma", "S_true", "S_iid", "S_true_refeed"} over the measured gammas
    gamma_hw_refeed: Optional[int] = None      # argmax of the refeed model (2-token draft step after a full block)
    speedup_hw_refeed: Optional[float] = None
    speedup_refeed_at_gamma_hw: Optional[float] = None  # the refeed model at the SPEC g_hw
    clock: Optional[str] = None                # the cost curve's clock ("wall" or "cpu")

    def to_report(self, confirmed: Optional[list[ConfirmedRow]] = None) -> DecisionHW:
        """SPEC 7 `decision_hw` as the report's DecisionHW (with these confirmed rows); NaN -> None."""
        curve_hw = {k: (v if k == "gamma" else [num(x) for x in v]) for k, v in self.curve_hw.items()}
        return DecisionHW(
            measured=self.measured, gamma_hw=self.gamma_hw, speedup_hw=num(self.speedup_hw),
            gamma_mb=self.gamma_mb, speedup_mb=num(self.speedup_mb), verdict=self.verdict,
            confirmed=list(confirmed or []),
            speculate=self.speculate, r_mb=num(self.r_mb),
            gamma_iid_hw=self.gamma_iid_hw, speedup_iid_hw=num(self.speedup_iid_hw),
            speedup_true_at_gamma_iid_hw=num(self.speedup_true_at_gamma_iid_hw),
            gamma_iid_mb=self.gamma_iid_mb, speedup_iid_mb=num(self.speedup_iid_mb),
            gamma_hw_refeed=self.gamma_hw_refeed, speedup_hw_refeed=num(self.speedup_hw_refeed),
            speedup_refeed_at_gamma_hw=num(self.speedup_refeed_at_gamma_hw), clock=self.clock,
            curve_hw=curve_hw,
        )


def _best(S: np.ndarray, gammas: np.ndarray) -> tuple[Optional[int], Optional[float]]:
    g = best_gamma(S, gammas)
    if g is None:
        return None, None
    return g, float(S[np.flatnonzero(gammas == g)[0]])


def decide_hw(gammas: np.ndarray, E_true: np.ndarray, E_iid: Optional[np.ndarray], curve: Optional[CostCurve],
              r_fallback: Optional[float] = None, phi_true: Optional[np.ndarray] = None) -> HardwareDecision:
    """The hardware decision for one set from its E curves (over `gammas`) and the run's cost curve.

    With a curve: g_hw = argmax S_hw over the draft lengths both the E curve and the cost curve
    have, S_hw exactly as SPEC 6 writes it (no refeed term); the memory-bound numbers use
    r_mb = c_draft / c_decode over all of `gammas`. The refeed model (phi_true given) is reported
    beside it (gamma_hw_refeed, speedup_hw_refeed) and named in the verdict when it falls on the
    other side of 1.0. Without one
    (`curve` None): measured = False, the memory-bound model at r_fallback (the run's r, if any).
    Verdict: "speculate with g = g_hw on this hardware" when max S_hw > 1, else "do not speculate
    on this hardware", always followed by the memory-bound number. phi_true (over `gammas`): the
    refeed share of the 2-token draft term (None: no refeed model).
    """
    gammas = np.asarray(gammas, dtype=np.int64)
    order = np.argsort(gammas, kind="stable")
    gammas = gammas[order]
    E_true = np.asarray(E_true, dtype=np.float64)[order]
    E_iid = None if E_iid is None else np.asarray(E_iid, dtype=np.float64)[order]
    phi_true = None if phi_true is None else np.asarray(phi_true, dtype=np.float64)[order]
    r_mb = curve.r_mb if curve is not None else r_fallback
    if r_mb is not None and np.isfinite(r_mb) and r_mb >= 0:
        g_mb, s_mb = _best(speedup_mb(E_true, r_mb, gammas), gammas)
        g_imb, s_imb = _best(speedup_mb(E_iid, r_mb, gammas), gammas) if E_iid is not None else (None, None)
    else:
        r_mb, g_mb, s_mb, g_imb, s_imb = None, None, None, None, None
    mb_text = (f"{MEMORY_BOUND_LABEL}: g = {g_mb}, {s_mb:.2f}x" if g_mb is not None
               else f"{MEMORY_BOUND_LABEL}: no cost ratio")
    if curve is None:
        return HardwareDecision(
            measured=False, gamma_hw=None, speedup_hw=None, gamma_mb=g_mb, speedup_mb=s_mb, gamma_iid_hw=None,
            speedup_iid_hw=None, speedup_true_at_gamma_iid_hw=None, gamma_iid_mb=g_imb, speedup_iid_mb=s_imb,
            r_mb=r_mb, speculate=bool(s_mb is not None and s_mb > 1.0),
            verdict=f"no measured costs on this hardware (imported or older run); {mb_text}")
    grid = np.array([g for g in curve.gammas.tolist() if g in set(gammas.tolist())], dtype=np.int64)
    c_ver = np.array([curve.verify_at(int(g)) for g in grid], dtype=np.float64)
    E_t = _on_grid(gammas, E_true, grid)
    extra = curve.refeed_extra
    # SPEC 6 to the letter: no refeed term. The refeed model adds phi(g) (c_draft2 - c_draft)+ per block.
    S_true = speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid)
    g_hw, s_hw = _best(S_true, grid)
    g_rf = s_rf = s_rf_at = None
    S_refeed = np.full(grid.shape, np.nan)
    if phi_true is not None:
        S_refeed = speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid, _on_grid(gammas, phi_true, grid), extra)
        g_rf, s_rf = _best(S_refeed, grid)
        s_rf_at = None if g_hw is None else float(S_refeed[np.flatnonzero(grid == g_hw)[0]])
    if E_iid is not None:
        S_iid = speedup_hw(_on_grid(gammas, E_iid, grid), curve.c_decode, c_ver, curve.c_draft, grid)
        g_ihw, s_ihw = _best(S_iid, grid)
        s_true_at = None if g_ihw is None else float(S_true[np.flatnonzero(grid == g_ihw)[0]])
    else:
        S_iid, g_ihw, s_ihw, s_true_at = np.full(grid.shape, np.nan), None, None, None
    speculate = bool(s_hw is not None and s_hw > 1.0)
    if g_hw is None:
        verdict = f"no positions in this set: nothing to decide; {mb_text}"
    elif speculate:
        verdict = f"speculate with g = {g_hw} on this hardware: {s_hw:.2f}x expected; {mb_text}"
    else:
        verdict = f"do not speculate on this hardware: the best draft length, g = {g_hw}, gives {s_hw:.2f}x; {mb_text}"
    if g_hw is not None and s_rf is not None and (s_rf > 1.0) != speculate:
        verdict += (f" (with the 2-token draft step: speculate, g = {g_rf}, {s_rf:.2f}x)" if s_rf > 1.0
                    else f" (with the 2-token draft step: do not, {s_rf:.2f}x at best)")
    if g_ihw is not None and g_hw is not None:
        verdict += (f"; the i.i.d. formula would pick g = {g_ihw} here and promise {s_ihw:.2f}x ({s_true_at:.2f}x in fact)"
                    if g_ihw != g_hw else f"; the i.i.d. formula picks the same g and promises {s_ihw:.2f}x")
    return HardwareDecision(
        measured=True, gamma_hw=g_hw, speedup_hw=s_hw, gamma_mb=g_mb, speedup_mb=s_mb, gamma_iid_hw=g_ihw,
        speedup_iid_hw=s_ihw, speedup_true_at_gamma_iid_hw=s_true_at, gamma_iid_mb=g_imb, speedup_iid_mb=s_imb,
        r_mb=r_mb, speculate=speculate, verdict=verdict,
        curve_hw={"gamma": grid.tolist(), "S_true": S_true.tolist(), "S_iid": S_iid.tolist(),
                  "S_true_refeed": S_refeed.tolist()},
        gamma_hw_refeed=g_rf, speedup_hw_refeed=s_rf, speedup_refeed_at_gamma_hw=s_rf_at, clock=curve.clock,
    )


# ------------------------------------------------------------------------ confirmation records ---

CONFIRMATIONS_KEY = "confirmations"
_RESULT_FIELDS = {"corpus": str, "gamma": int, "prompts": int, "tokens": int, "greedy_s": float, "spec_s": float,
                  "realized": float, "predicted": float, "tokens_per_call": float, "identical": bool}


@dataclass(frozen=True)
class ConfirmedResult:
    """One (corpus, g) row of a confirmation: predicted S_hw beside the realized speedup."""

    corpus: str
    gamma: int
    prompts: int
    tokens: int
    greedy_s: float
    spec_s: float
    realized: float             # greedy_s / spec_s (same prompts, same session, alternating)
    predicted: float            # S_hw(g) with E = tokens / blocks of these prompts and this session's costs
    tokens_per_call: float      # tokens / target forwards of the speculative runs (= E of these prompts)
    identical: bool             # every output equalled the stored y
    predicted_corpus: Optional[float] = None  # S_hw(g) with the corpus's E_true (all its streams)

    @property
    def ratio(self) -> float:
        """realized / predicted."""
        return self.realized / self.predicted


@dataclass(frozen=True)
class Confirmation:
    date: str
    device: str
    threads: int
    complete: bool
    results: list[ConfirmedResult]
    record: dict[str, Any]


def _check_type(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def parse_confirmation(record: Any, where: str = "run.json") -> Confirmation:
    """Validate one confirmation record; raises SpectermError (one sentence) when it is corrupt."""
    bad = f"{where}: the confirmation record is corrupt"
    fix = "; delete it from run.json and re-run `specterm confirm`."
    if not isinstance(record, dict):
        raise SpectermError(f"{bad} (not a JSON object){fix}")
    for key, kind in (("date", str), ("device", str), ("threads", int), ("results", list)):
        if not _check_type(record.get(key), kind):
            raise SpectermError(f"{bad} ('{key}' missing or not a {kind.__name__}){fix}")
    results = []
    for i, row in enumerate(record["results"]):
        if not isinstance(row, dict):
            raise SpectermError(f"{bad} (results[{i}] is not an object){fix}")
        for key, kind in _RESULT_FIELDS.items():
            if not _check_type(row.get(key), kind):
                raise SpectermError(f"{bad} (results[{i}].{key} missing or not a {kind.__name__}){fix}")
        if row["gamma"] < 1 or row["prompts"] < 1 or row["spec_s"] <= 0 or row["greedy_s"] <= 0 or row["predicted"] <= 0:
            raise SpectermError(f"{bad} (results[{i}] has a non-positive gamma, prompt count, time or prediction){fix}")
        pc = row.get("predicted_corpus")
        results.append(ConfirmedResult(**{k: row[k] for k in _RESULT_FIELDS},
                                       predicted_corpus=float(pc) if _check_type(pc, float) else None))
    return Confirmation(date=record["date"], device=record["device"], threads=record["threads"],
                        complete=bool(record.get("complete", True)), results=results, record=record)


def latest_confirmation(meta: dict[str, Any], required: bool = False, where: str = "run.json") -> Optional[Confirmation]:
    """The newest confirmation record of a run's metadata (validated), or None when there is none.

    required=True: a run without one is refused (SpectermError) instead.
    """
    records = meta.get(CONFIRMATIONS_KEY)
    if records is None or records == []:
        if required:
            raise SpectermError(f"{where} has no confirmation record; run `specterm confirm RUN` first.")
        return None
    if not isinstance(records, list):
        raise SpectermError(f"{where}: '{CONFIRMATIONS_KEY}' must be a list of confirmation records; delete it and re-run `specterm confirm`.")
    return parse_confirmation(records[-1], where)


def summarize_results(prompt_rows: list[dict[str, Any]], curve: CostCurve,
                      corpus_curves: Optional[dict[str, dict[int, tuple[float, float]]]] = None) -> list[dict[str, Any]]:
    """Per (corpus, g) rows of a confirmation from its per-prompt rows (ratio of sums over prompts).

    Each prompt row: {"corpus", "tokens", "greedy_s", ["greedy_cpu_s"], "spec": {"<g>": {"s", ["cpu_s"],
    "target_calls", "blocks_walk", ["refeeds_walk"], "identical"}}}: blocks_walk / refeeds_walk are the
    blocks (and the blocks after a fully accepted one) of the exact walk of the stored stream at g.

        realized  = sum greedy_s / sum spec_s (wall time, SPEC 6); realized_cpu the same in CPU time
        E, phi    = sum tokens / sum blocks_walk, sum refeeds_walk / sum blocks_walk
        predicted = S_hw(g) with that E and phi on the curve's clock; ratio = realized / predicted,
                    ratio_cpu = realized_cpu / predicted
        predicted_corpus = S_hw(g) with the corpus's (E_true(g), phi(g)) from `corpus_curves`
    """
    acc: dict[tuple[str, int], dict[str, Any]] = {}
    for row in prompt_rows:
        for g_key, sp in row["spec"].items():
            a = acc.setdefault((row["corpus"], int(g_key)), dict(prompts=0, tokens=0, greedy_s=0.0, spec_s=0.0,
                                                                greedy_cpu=0.0, spec_cpu=0.0, cpu=True,
                                                                calls=0, blocks=0, refeeds=0, identical=True))
            a["prompts"] += 1
            a["tokens"] += row["tokens"]
            a["greedy_s"] += row["greedy_s"]
            a["spec_s"] += sp["s"]
            if row.get("greedy_cpu_s") is not None and sp.get("cpu_s") is not None:
                a["greedy_cpu"] += row["greedy_cpu_s"]
                a["spec_cpu"] += sp["cpu_s"]
            else:
                a["cpu"] = False
            a["calls"] += sp["target_calls"]
            a["blocks"] += sp["blocks_walk"]
            a["refeeds"] += sp.get("refeeds_walk", 0)
            a["identical"] = a["identical"] and bool(sp["identical"]) and bool(row.get("greedy_identical", True))

    def s_hw(E: float, phi: float, g: int) -> float:
        return float(speedup_hw(np.array([E]), curve.c_decode, np.array([curve.verify_at(g)]), curve.c_draft,
                                np.array([g]), np.array([phi]), curve.refeed_extra)[0])

    out = []
    for (corpus, g), a in sorted(acc.items()):
        E = a["tokens"] / a["blocks"]
        phi = a["refeeds"] / a["blocks"]
        pred = s_hw(E, phi, g)
        pc = None
        if corpus_curves and g in corpus_curves.get(corpus, {}):
            pc = s_hw(*corpus_curves[corpus][g], g)
        realized = a["greedy_s"] / a["spec_s"]
        realized_cpu = a["greedy_cpu"] / a["spec_cpu"] if a["cpu"] and a["spec_cpu"] > 0 else None
        out.append({
            "corpus": corpus, "gamma": g, "prompts": int(a["prompts"]), "tokens": int(a["tokens"]),
            "greedy_s": a["greedy_s"], "spec_s": a["spec_s"], "realized": realized,
            "predicted": pred, "ratio": realized / pred, "clock": curve.clock,
            "realized_cpu": realized_cpu, "ratio_cpu": None if realized_cpu is None else realized_cpu / pred,
            "predicted_corpus": pc,
            "predicted_spec6": s_hw(E, 0.0, g),
            "predicted_mb": float(speedup_mb(np.array([E]), curve.r_mb, np.array([g]))[0]),
            "E_prompts": E, "refeed_share": phi, "tokens_per_call": a["tokens"] / a["calls"],
            "identical": bool(a["identical"]),
            "block_model_s": curve.verify_at(g) + g * curve.c_draft + phi * curve.refeed_extra,
        })
    return out


def _row(r: dict[str, Any]) -> dict[str, Any]:
    """A SPEC 7 confirmed row from a stored result row: "predicted" is S_hw as SPEC 6 writes it
    (stored as predicted_spec6 by confirm; older rows: their "predicted"), "predicted_refeed" the
    refeed model (confirm's "predicted"); ratios realized / predicted, in wall and CPU time."""
    spec = r.get("predicted_spec6") if _check_type(r.get("predicted_spec6"), float) else r["predicted"]
    refeed = r["predicted"]
    cpu = r.get("realized_cpu") if _check_type(r.get("realized_cpu"), float) else None
    return {"gamma": int(r["gamma"]), "predicted": float(spec), "realized": float(r["realized"]),
            "prompts": int(r["prompts"]), "identical": bool(r["identical"]),
            "ratio": float(r["realized"]) / float(spec), "predicted_refeed": float(refeed),
            "ratio_refeed": float(r["realized"]) / float(refeed), "realized_cpu": cpu,
            "ratio_cpu": None if cpu is None else cpu / float(spec),
            "ratio_cpu_refeed": None if cpu is None else cpu / float(refeed),
            "tokens_per_call": float(r["tokens_per_call"])}


def confirmed_rows(conf: Confirmation, set_name: str) -> list[dict[str, Any]]:
    """SPEC 7 `decision_hw.confirmed` of one set: [{"gamma", "predicted", "realized", "prompts",
    "identical"} + ratio, predicted_refeed, ratio_refeed, realized_cpu, ratio_cpu, ...], sorted by gamma.

    A corpus takes its rows of the record; "pooled" sums every prompt of the record timed at each g
    (ratio of sums, the prediction from the pooled E and phi and the record's own cost curve).
    """
    if set_name != POOLED:
        rows = [r for r in conf.record["results"] if r["corpus"] == set_name]
        return [{**_row(r), "date": conf.date} for r in sorted(rows, key=lambda r: r["gamma"])]
    prompts = conf.record.get("prompts")
    curve = cost_curve(conf.record.get("cost"))
    if not isinstance(prompts, list) or not prompts or curve is None:
        return []
    try:
        pooled = summarize_results([{**p, "corpus": POOLED} for p in prompts], curve)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        raise SpectermError("the confirmation record's prompts are corrupt; delete the record from run.json and "
                            "re-run `specterm confirm`.") from None
    return [{**_row(r), "date": conf.date} for r in pooled]


def confirmations(meta: dict[str, Any], where: str = "run.json") -> list[Confirmation]:
    """Every confirmation record of a run's metadata, validated, oldest first ([] when none)."""
    records = meta.get(CONFIRMATIONS_KEY)
    if records is None or records == []:
        return []
    if not isinstance(records, list):
        raise SpectermError(f"{where}: '{CONFIRMATIONS_KEY}' must be a list of confirmation records; delete it and re-run `specterm confirm`.")
    return [parse_confirmation(r, where) for r in records]


def confirmed_for_set(confs: list[Confirmation], set_name: str) -> list[dict[str, Any]]:
    """The confirmed rows of a set from a run's records: a corpus takes the newest record that timed
    it (a later `confirm --corpus X` supersedes X only); "pooled" takes the newest record's prompts."""
    for conf in reversed(confs):
        rows = confirmed_rows(conf, set_name)
        if rows:
            return rows
    return []


# ------------------------------------------------------------------------- the report's view ---

NO_COSTS_NOTE = "no measured costs on this hardware (imported bits or a run measured before c_decode was timed), as before"
MIXED_COSTS_NOTE = "the pooled runs measured different cost curves: no single hardware decision"


def run_curve_and_confirmations(meta: dict[str, Any], where: str = "run.json") -> tuple[Optional[CostCurve], list[Confirmation]]:
    """A run's robust cost curve (None without measured c_decode) and its confirmation records."""
    return cost_curve(meta.get("cost")), confirmations(meta, where)


def set_decision_hw(curve_report: Curve, bits: list[np.ndarray], curve: Optional[CostCurve],
                    confs: list[Confirmation], set_name: str, r_fallback: Optional[float],
                    note: Optional[str] = None) -> DecisionHW:
    """SPEC 7 `decision_hw` of one set of the report.

    curve_report: the set's E curves (report.Curve, SPEC 2); bits: its streams'
    analysed accept bits (for the refeed share phi(g)); curve: the run's robust cost curve (None: no
    measured costs, measured False, the memory-bound model at r_fallback and `note` or NO_COSTS_NOTE
    in the verdict); confs: the run's confirmation records (confirmed rows: confirmed_for_set).
    """
    gammas = np.asarray(curve_report.gamma, dtype=np.int64)
    E_true = np.array([np.nan if v is None else float(v) for v in curve_report.E_true])
    E_i = np.array([np.nan if v is None else float(v) for v in curve_report.E_iid])
    phi = None
    if curve is not None:
        common = np.array([g for g in gammas.tolist() if g in set(curve.gammas.tolist())], dtype=np.int64)
        phi_c = refeed_share(bits, common) if common.size else np.array([])
        lookup = dict(zip(common.tolist(), phi_c.tolist()))
        phi = np.array([lookup.get(int(g), np.nan) for g in gammas])
    d = decide_hw(gammas, E_true, None if np.all(np.isnan(E_i)) else E_i, curve, r_fallback=r_fallback, phi_true=phi)
    rows = confirmed_for_set(confs, set_name) if curve is not None or confs else []
    out = d.to_report([ConfirmedRow(**row) for row in rows])
    if curve is None:
        out.verdict = f"{note or NO_COSTS_NOTE}: {d.verdict.split('; ', 1)[-1]}"
    return out


def q3_costs(curve: Optional[CostCurve]) -> Optional[dict[str, Any]]:
    """The measured costs in economics.speedup_factor's shape (the robust curve), or None."""
    if curve is None:
        return None
    return {"c_decode": curve.c_decode, "c_draft": curve.c_draft,
            "c_verify": {int(g): float(c) for g, c in zip(curve.gammas, curve.c_verify)}}
