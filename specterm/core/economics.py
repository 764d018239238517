"""The economics seed's claims Q1-Q4 (SPEC 4), computed from data, never written by hand.

Each rule is a pure function of numbers the report already has and returns a scorecard row
{"id", "prediction" (the claim), "verdict": holds|falsified|inconclusive, "evidence", "seed": "economics"}
in the P rows' shape, the evidence starting with the verdict as theirs does. `q_rows(sets)` builds
Q1-Q4 from a report's sets (scorecard.scorecard appends them after P1-P5). Numbers used:

    c_2 - c_1           depth.c2_minus_c1 (analysis: bootstrapped as f(W @ M) like the rest, with
                        depth_gain below on the stats.stream_sums columns)
    speedup(g)          = E_true(g) * factor(g), its CI = the CI of E_true(g) times factor(g)
                          (a percentile CI scales with a positive constant), with
        memory-bound:  factor(g) = 1 / (1 + g r)                          (SPEC 2, 6; r of the set)
        measured:      factor(g) = c_decode / (c_verify(g) + g c_draft)   (S_hw, SPEC 6)

Rules, and the choices where the SPEC is silent:

    Q1 holds: the CI of c_2 - c_1 lies above 0 in every corpus; falsified: it lies below 0 in some
       corpus; inconclusive otherwise (a CI that contains 0 or is undefined, depth < 2, no corpus).
    Q2 holds: the CIs of the highest and lowest corpus alpha (by point estimate) do not overlap;
       inconclusive otherwise (or with fewer than 2 corpora). The SPEC names no falsifying outcome
       and overlapping CIs do not show equal acceptance, so Q2 is never falsified.
    Q3 holds: the best corpus's speedup at its own best g has a CI above the worst corpus's;
       inconclusive otherwise, never falsified (as Q2). Each corpus's best g is chosen once on the
       whole corpus (argmax of the point curve, ties: smallest g, as optimum.best_gamma), and its
       CI is the bootstrap of the speedup at that g (the choice is not re-made per resample, like
       policies' best fixed g).
    Q4 on the pooled set: the adaptive policies are the heuristic schedule and the confidence stop
       at its best tau (highest point T / T_best_fixed; ties: smallest tau). holds: some adaptive
       policy's T / T_best_fixed CI lies above 1; falsified: every adaptive policy's CI lies below
       1; inconclusive otherwise (or no adaptive policy). Choosing tau on the same data favours the
       confidence stop slightly; the CI does not account for that choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core import costmodel
from specterm.core import stats as st
from specterm.core.costmodel import curve_throughput, r_or_default
from specterm.core.fmt import est as est_text
from specterm.core.fmt import fmt
from specterm.core.optimum import best_gamma
from specterm.core.params import GAMMAS
from specterm.core.report import ECONOMICS, POOLED, Estimate, PolicyRow, ScoreRow, SetReport

CLAIMS = {
    "Q1": "the first drafted token is the hard one; once on the rails, deeper tokens accept at 0.9-1.0",
    "Q2": "effective acceptance swings widely by workload (seed: ~0.40 prose to ~0.97 code)",
    "Q3": "the same draft gives very different speedups by workload (seed: ~1.4x to ~6x)",
    "Q4": "an adaptive draft length beats every fixed one",
}

# The economics seed's published figures, for comparison tables (README, export).
SEED_FIGURES: dict[str, Any] = {
    "first_token_acceptance": 0.4,
    "deeper_acceptance": (0.9, 1.0),
    "alpha_range": (0.40, 0.97),  # prose .. code, at gamma 6
    "speedup_range": (1.4, 6.0),
}

ADAPTIVE = ("heuristic", "confidence")


# ------------------------------------------------ statistics of column sums c (..., K) ---


def depth_gain(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """c_2 - c_1: conditional acceptance at block depth 2 minus depth 1 (uncut blocks, SPEC 3)."""
    gain: np.ndarray = st.depth_conditional(c, cols, 2) - st.depth_conditional(c, cols, 1)
    return gain


def memory_bound_factor(r: float, gammas: np.ndarray = GAMMAS) -> np.ndarray:
    """The cost-ratio model's speedup per unit of E at r: costmodel.curve_throughput(1, r, g) (SPEC 2)."""
    return curve_throughput(1.0, float(r), gammas)


def measured_factor(c_decode: float, c_verify: Mapping[int, float], c_draft: float,
                    gammas: np.ndarray = GAMMAS) -> np.ndarray:
    """c_decode / (c_verify(g) + g c_draft) for each g (S_hw / E, SPEC 6); NaN where c_verify(g) is not measured."""
    g = np.asarray(gammas)
    cv = np.array([np.nan if c_verify.get(int(x)) is None else float(c_verify[int(x)]) for x in g.tolist()])
    return costmodel.speedup_hw(1.0, c_decode, cv, c_draft, g)


@dataclass(frozen=True)
class BestSpeedup:
    """A set's speedup at its own best draft length, with CI; `basis` says which cost model."""

    gamma: int | None
    speedup: Estimate
    basis: str


def best_speedup(E_true: Sequence[float | None], E_true_ci: Sequence[Sequence[float | None]], factor: np.ndarray,
                 basis: str) -> BestSpeedup:
    """g = argmax_g E_true(g) factor(g) over GAMMAS (ties: smallest g), the speedup there and its CI.

    E_true, E_true_ci: a set's curve (report.Curve: value and bootstrap CI of E_true at g = 1..32);
    factor over GAMMAS (NaN: no cost at that g). The CI is E_true's CI at g times factor(g) > 0.
    """
    E = np.array([np.nan if x is None else float(x) for x in E_true], dtype=np.float64)
    f = np.asarray(factor, dtype=np.float64)[: E.size]
    g = best_gamma(E * f, GAMMAS[: E.size])
    if g is None:
        return BestSpeedup(None, Estimate(), basis)
    lo, hi = (None if x is None else float(x) * f[g - 1] for x in E_true_ci[g - 1])
    return BestSpeedup(g, Estimate(value=float(E[g - 1] * f[g - 1]), ci=[lo, hi]), basis)


def speedup_factor(set_report: SetReport, costs: Mapping[str, Any] | None = None) -> tuple[np.ndarray, str]:
    """(factor over GAMMAS, basis) for a set: measured costs {"c_decode", "c_verify": {g: s}, "c_draft"}
    when given (S_hw, SPEC 6), else the memory-bound model at the set's r (measured, else R_DEFAULT)."""
    if costs is not None:
        return measured_factor(costs["c_decode"], costs["c_verify"], costs["c_draft"]), "measured costs c_decode / (c_verify(g) + g c_draft)"
    r = r_or_default(set_report.r_measured)
    return memory_bound_factor(r), f"memory-bound E_true(g)/(1+g r) at r={r:.3f}"


# --------------------------------------------------------------------------- the rows ---


def _row(qid: str, verdict: str, evidence: str) -> ScoreRow:
    return ScoreRow(id=qid, prediction=CLAIMS[qid], verdict=verdict, evidence=f"{verdict}: {evidence}", seed=ECONOMICS)


def q1(conditional: Mapping[str, Sequence[float | None]], gain: Mapping[str, Estimate | None]) -> ScoreRow:
    """Q1 from each corpus's conditional acceptance c_1..c_g (values) and its c_2 - c_1 estimate."""
    corpora = list(conditional)
    if not corpora:
        return _row("Q1", "inconclusive", "no corpus to test")
    if any(len(conditional[c]) < 2 for c in corpora):
        return _row("Q1", "inconclusive", "needs conditional acceptance at depth 2 (depth gamma >= 2)")
    est = {c: gain.get(c) or Estimate() for c in corpora}

    def part(c: str) -> str:
        cs = [None if x is None else float(x) for x in conditional[c]]
        deeper = " ".join(fmt(x, 2) for x in cs[1:])
        return f"{c}: c_1 = {fmt(cs[0], 2)}, c_2..c_{len(cs)} = {deeper}, c_2 - c_1 = {est_text(est[c], sign=True)}"

    detail = "; ".join(part(c) for c in corpora)
    above = [c for c in corpora if est[c].bounds()[0] > 0]
    below = [c for c in corpora if est[c].bounds()[1] < 0]
    if below:
        return _row("Q1", "falsified", f"c_2 - c_1 CI lies below 0 in {', '.join(below)} ({detail})")
    if len(above) == len(corpora):
        return _row("Q1", "holds", f"c_2 - c_1 CI lies above 0 in all {len(corpora)} corpora ({detail})")
    rest = [c for c in corpora if c not in above]
    return _row("Q1", "inconclusive", f"c_2 - c_1 CI contains 0 or is undefined in {', '.join(rest)} ({detail})")


def _extremes(values: Mapping[str, Estimate]) -> tuple[str, str] | None:
    """(highest, lowest) set by point value (ties: first in order); None with < 2 defined values."""
    ok = [(c, e.value) for c, e in values.items() if e.value is not None]
    if len(ok) < 2:
        return None
    hi = max(ok, key=lambda p: p[1])[0]
    lo = min(ok, key=lambda p: p[1])[0]
    return hi, lo


def q2(alphas: Mapping[str, Estimate]) -> ScoreRow:
    """Q2 from each corpus's alpha estimate (value and CI)."""
    est = dict(alphas)
    ends = _extremes(est)
    seed = f"seed: ~{SEED_FIGURES['alpha_range'][0]:.2f} to ~{SEED_FIGURES['alpha_range'][1]:.2f}"
    if ends is None:
        return _row("Q2", "inconclusive", f"needs at least 2 corpora with a defined alpha ({seed})")
    hi, lo = ends
    top, bottom = est[hi].value, est[lo].value
    assert top is not None and bottom is not None  # _extremes picks defined values
    rng = top - bottom
    ev = (f"alpha ranges from {est_text(est[lo], 2)} ({lo}) to {est_text(est[hi], 2)} ({hi}), "
          f"a spread of {fmt(rng, 2)} ({seed})")
    if est[hi].bounds()[0] > est[lo].bounds()[1]:
        return _row("Q2", "holds", ev + "; the two CIs do not overlap")
    return _row("Q2", "inconclusive", ev + "; the two CIs overlap or are undefined")


def q3(speedups: Mapping[str, BestSpeedup], realized: Mapping[str, float] | None = None) -> ScoreRow:
    """Q3 from each corpus's best speedup (BestSpeedup) and, where `specterm confirm` ran, realized speedups."""
    est = {c: b.speedup for c, b in speedups.items()}
    seed = (f"seed: ~{SEED_FIGURES['speedup_range'][0]:g}x to ~{SEED_FIGURES['speedup_range'][1]:g}x, "
            f"ratio ~{SEED_FIGURES['speedup_range'][1] / SEED_FIGURES['speedup_range'][0]:.1f}")
    tail = ""
    bases = sorted({b.basis for b in speedups.values()})
    if bases:
        tail += "; " + ("; ".join(bases))
    if realized:
        parts = ", ".join(f"{c} {fmt(v, 2)}x" for c, v in realized.items())
        tail += f"; realized (specterm confirm): {parts}"
    ends = _extremes(est)
    if ends is None:
        return _row("Q3", "inconclusive", f"needs at least 2 corpora with a defined speedup ({seed}){tail}")
    hi, lo = ends
    top, bottom = est[hi].value, est[lo].value
    assert top is not None and bottom is not None  # _extremes picks defined values
    ratio = top / bottom if bottom else float("nan")
    ev = (f"best {hi} {est_text(est[hi], 2, suffix='x')} at g={speedups[hi].gamma}, worst {lo} "
          f"{est_text(est[lo], 2, suffix='x')} at g={speedups[lo].gamma}: ratio {fmt(ratio, 2)} ({seed})")
    if est[hi].bounds()[0] > est[lo].bounds()[1]:
        return _row("Q3", "holds", ev + "; the best corpus's CI lies above the worst's" + tail)
    return _row("Q3", "inconclusive", ev + "; the two CIs overlap or are undefined" + tail)


def _describe(row: PolicyRow) -> str:
    if row.policy == "confidence":
        return f"confidence stop tau={row.params.get('tau'):g}"
    if row.policy == "heuristic":
        return f"heuristic from g0={row.params.get('g0')}"
    return str(row.policy)


def _vs_best_fixed(row: PolicyRow) -> Estimate:
    return row.vs_best_fixed or Estimate()


def adaptive_candidates(policies: Sequence[PolicyRow]) -> list[PolicyRow]:
    """The heuristic row(s) and the confidence row with the best point T / T_best_fixed (ties: smallest tau)."""
    heur = [p for p in policies if p.policy == "heuristic"]
    conf = [p for p in policies if p.policy == "confidence" and _vs_best_fixed(p).value is not None]
    if conf:
        conf = [max(sorted(conf, key=lambda p: float(p.params["tau"])),
                    key=lambda p: _vs_best_fixed(p).value or 0.0)]
    return heur + conf


def q4(policies: Sequence[PolicyRow]) -> ScoreRow:
    """Q4 from the pooled set's policy rows (policies.policy_summary)."""
    cands = adaptive_candidates(policies)
    if not cands:
        return _row("Q4", "inconclusive", "no adaptive policy was replayed")
    est = [_vs_best_fixed(p) for p in cands]
    order = sorted(range(len(cands)), key=lambda i: -(v if (v := est[i].value) is not None else -np.inf))
    best = order[0]
    fixed = next((p for p in policies if p.policy == "best-fixed"), None)
    ref = ""
    if fixed is not None:
        ref = f" (best fixed g={fixed.params.get('gamma')} at r={fmt(fixed.params.get('r'), 3)})"
    ev = f"best adaptive policy: {_describe(cands[best])}, T / T_best_fixed = {est_text(est[best])}{ref}"
    others = [f"{_describe(cands[i])} {est_text(est[i])}" for i in order[1:]]
    if others:
        ev += "; also " + ", ".join(others)
    if not any(p.policy == "confidence" for p in policies):
        ev += "; no confidence stop (a stream lacks draft_conf)"
    above = [_describe(cands[i]) for i in order if est[i].bounds()[0] > 1]
    if above:
        return _row("Q4", "holds", ev + f"; CI above 1 for {', '.join(above)}")
    if all(e.bounds()[1] < 1 for e in est):
        return _row("Q4", "falsified", ev + "; every adaptive policy's CI lies below 1")
    return _row("Q4", "inconclusive", ev + "; a CI contains 1 or is undefined")


def q_rows(sets: Mapping[str, SetReport], costs: Mapping[str, Mapping[str, Any]] | None = None,
           realized: Mapping[str, float] | None = None) -> list[ScoreRow]:
    """Q1-Q4 from a report's sets (corpora = every set but POOLED).

    costs: measured costs per corpus ({"c_decode", "c_verify": {g: s}, "c_draft"}, SPEC 6) for Q3;
    a corpus without them uses the memory-bound model at its r. realized: the realized speedups
    (`specterm confirm`) per corpus, printed in Q3's evidence.
    """
    corpora = [name for name in sets if name != POOLED]
    conditional = {c: [e.value for e in sets[c].depth.conditional] for c in corpora}
    gain = {c: sets[c].depth.c2_minus_c1 for c in corpora}
    alphas = {c: Estimate(value=sets[c].alpha, ci=sets[c].alpha_ci) for c in corpora}
    speedups = {}
    for c in corpora:
        factor, basis = speedup_factor(sets[c], (costs or {}).get(c))
        speedups[c] = best_speedup(sets[c].curve.E_true, sets[c].curve.E_true_ci, factor, basis)
    pooled = sets.get(POOLED)
    return [q1(conditional, gain), q2(alphas), q3(speedups, realized),
            q4(pooled.policies if pooled is not None else [])]
