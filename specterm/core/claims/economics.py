"""The economics seed's claims Q1-Q6 (SPEC 4), computed from data, never written by hand.

Each rule is a pure function of numbers the report already has (report.SetReport and its parts) and
returns a report.ScoreRow (verdict.score_row: "id", "prediction" (the claim), "verdict", "direction", "size", "evidence", ...,
"seed": "economics") in the P rows' shape, the evidence starting with the verdict as theirs does. `q_rows(sets)` builds
Q1-Q6 from a report's sets (scorecard.scorecard appends them after P1-P5). Each row has a direction
and a size (core/claims/verdict.py) and the verdict from them; the rules are in each function's docstring.
Numbers used:

    c_2 - c_1           depth.c2_minus_c1 (analysis: bootstrapped as f(W @ M) like the rest, with
                        depth_gain below on the stats.stream_sums columns)
    speedup(g)          = E_true(g) * factor(g), its CI = the CI of E_true(g) times factor(g)
                          (a percentile CI scales with a positive constant), with
        memory-bound:  factor(g) = 1 / (1 + g r)                          (SPEC 2, 6; r of the set)
        measured:      factor(g) = c_decode / (c_verify(g) + g c_draft)   (S_hw, SPEC 6)

Rules (direction; size against the seed's, SEED_SIZE), and the choices where the SPEC is silent:

    Q1 direction: the CI of c_2 - c_1 lies above 0 in every corpus; below 0 in some corpus:
       falsified. size: every corpus's c_1 CI overlaps 0.3..0.5 and each of its c_2..c_8 CIs 0.9..1.0.
    Q2 direction: the CIs of the highest and lowest corpus alpha (by point estimate) do not overlap;
       never falsified (the SPEC names no falsifying outcome; overlapping CIs do not show equal
       acceptance). size: the CI of the spread (paired bootstrap replicates) overlaps 0.45..0.70.
    Q3 direction: the best corpus's speedup at its own best g has a CI above the worst corpus's
       (with measured costs: each corpus's decision on this hardware, its g_hw and its interval over
       prompts and cost samples, the numbers the decision prints);
       never falsified (as Q2). Each corpus's best g is chosen once on the whole corpus (argmax of the
       point curve, ties: smallest g, as optimum.best_gamma), and its CI is the bootstrap of the
       speedup at that g. size: the CI of the best / worst ratio overlaps 3..6.
    Q4 direction: the heuristic schedule or the confidence stop at its best pooled tau beats the
       pooled best fixed g and each corpus's own (CIs of T / T_best_fixed above 1); falsified when
       every candidate has a CI below 1 somewhere. Choosing tau on the same data favours the
       confidence stop slightly; the CI does not account for that choice, and the evidence says so
       (SPEC 4). size: n/a.
    Q5, Q6: see q5, q6 (the decision on this hardware per cost profile, and its batch costs). Q5 is
       never falsified and Q6 needs intervals on both sides of 1 (SPEC 4). size: n/a.

Length: six claims, each a rule with its evidence text and the seed's size, over the shared
speedup helpers (best_speedup, speedup_factor) that Q3 and the README tables use; splitting the rules
from one another would scatter one seed's claims over several modules.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.decide import costmodel
from specterm.core.streams import stats as st
from specterm.core.claims import verdict as vd
from specterm.core.streams.bootstrap import percentile_ci
from specterm.core.decide.costmodel import curve_throughput, r_or_default
from specterm.core.streams.estimate import num
from specterm.core.report.fmt import MISSING, fmt
from specterm.core.decide.optimum import best_gamma
from specterm.core.params import GAMMAS
from specterm.core.report.types import ECONOMICS, DecisionHW, Estimate, PolicyRow, ScoreRow, SetReport

CLAIMS = {
    "Q1": "the first drafted token is the hard one; once on the rails, deeper tokens accept at 0.9-1.0",
    "Q2": "effective acceptance swings widely by workload (seed: ~0.40 prose to ~0.97 code)",
    "Q3": "the same draft gives very different speedups by workload (seed: ~1.4x to ~6x)",
    "Q4": "an adaptive draft length beats every fixed one",
    "Q5": "only the measured cost ratio tells which side of 1.0 you are on",
    "Q6": "the crossover depends on the batch: speculation stops paying above some batch",
}

# The seed's size per claim (SPEC 4's table), quoted in the evidence, and the ranges the size test uses.
SEED_SIZE = {
    "Q1": "c_1 ~0.4 (read: 0.3 to 0.5); c_2..c_8 0.9 to 1.0",
    "Q2": "alpha ~0.40 (prose) to ~0.97 (code): spread ~0.57 (read: 0.45 to 0.70)",
    "Q3": "speedups ~1.4x to ~6x: best / worst ratio ~4.3 (read: 3 to 6)",
    "Q4": "none stated",
    "Q5": "none stated",
    "Q6": "B* ~ 49 at g = 5 on an H100; production stops near 32 (a reference, not testable off-GPU)",
}
Q1_FIRST = (0.3, 0.5)
Q1_DEEPER = (0.9, 1.0)
Q1_DEPTH = 8  # c_2..c_8
Q2_SPREAD = (0.45, 0.70)
Q3_RATIO = (3.0, 6.0)

# The economics seed's published figures, for comparison tables (README, export).
SEED_FIGURES = {
    "first_token_acceptance": 0.4,
    "deeper_acceptance": (0.9, 1.0),
    "alpha_range": (0.40, 0.97),  # prose .. code, at gamma 6
    "speedup_range": (1.4, 6.0),
}

ADAPTIVE = ("heuristic", "confidence")
DECISION_CI = (", intervals the decision's (prompts and cost samples); the best / worst ratio's resamples prompts "
               "(one machine's costs largely cancel in it)")
SAME_DATA_TAU = ("; tau was chosen on the same prompts it is judged on (no held-out choice): the CI does not "
                 "account for that choice")


# ------------------------------------------------ statistics of column sums c (..., K) ---


def depth_gain(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """c_2 - c_1: conditional acceptance at block depth 2 minus depth 1 (uncut blocks, SPEC 3)."""
    return np.asarray(st.depth_conditional(c, cols, 2) - st.depth_conditional(c, cols, 1), dtype=np.float64)


def _value(e: Estimate) -> float:
    """An Estimate's point value as a float (NaN when undefined)."""
    return float("nan") if e.value is None else float(e.value)


def memory_bound_factor(r: float, gammas: np.ndarray = GAMMAS) -> np.ndarray:
    """The cost-ratio model's speedup per unit of E at r: costmodel.curve_throughput(1, r, g) (SPEC 2)."""
    return curve_throughput(1.0, float(r), gammas)


def measured_factor(c_decode: float, c_verify: Mapping[int, float], c_draft: float,
                    gammas: np.ndarray = GAMMAS, c_draft_fwd: Mapping[int, float] | None = None,
                    overhead: tuple[float, float] | None = None) -> np.ndarray:
    """c_decode / (c_verify(g) + g c_draft [+ c_draft_fwd(g)] [+ o(g)]) for each g (S_hw / E, SPEC 6, with an
    engine's per-block term and the block overhead o(g) = a + b g (overhead = (a, b)) when the costs carry
    them: costmodel); NaN where c_verify(g) is not measured."""
    g = np.asarray(gammas)

    def on_grid(costs: Mapping[int, float]) -> np.ndarray:
        return np.array([np.nan if costs.get(int(x)) is None else float(costs[int(x)]) for x in g.tolist()])

    fwd = None if c_draft_fwd is None else on_grid(c_draft_fwd)
    o_g = None if overhead is None else overhead[0] + overhead[1] * g.astype(np.float64)
    return costmodel.speedup_hw(1.0, c_decode, on_grid(c_verify), c_draft, g, c_draft_fwd=fwd, overhead=o_g)


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
    """(factor over GAMMAS, basis) for a set: measured costs {"c_decode", "c_verify": {g: s}, "c_draft"
    [, "c_draft_fwd": {g: s}]} when given (S_hw, SPEC 6, with the engine's block term when present), else the
    memory-bound model at the set's r (measured, else R_DEFAULT)."""
    if costs is not None:
        fwd = costs.get("c_draft_fwd")
        over = costs.get("overhead")
        terms = " + c_draft_fwd(g)" if fwd is not None else ""
        terms += " + o(g)" if over is not None else ""
        basis = f"measured costs c_decode / (c_verify(g) + g c_draft{terms})"
        if fwd is not None or over is not None:
            basis += ", the engine's block cost" if over is None else ", the whole block's cost"
        return measured_factor(costs["c_decode"], costs["c_verify"], costs["c_draft"], c_draft_fwd=fwd,
                               overhead=over), basis
    r = r_or_default(set_report.r_measured)
    return memory_bound_factor(r), f"memory-bound E_true(g)/(1+g r) at r={r:.3f}"


# --------------------------------------------------------------------------- the rows ---


def _fmt(x: float | None, digits: int = 3, sign: bool = False) -> str:
    """x as a float through core/report/fmt.py's fmt (the one number formatter; MISSING when undefined)."""
    return fmt(None if x is None else float(x), digits, sign)


def _est(e: Estimate, digits: int = 3, sign: bool = False, unit: str = "") -> str:
    return f"{_fmt(e.value, digits, sign)}{unit} [{_fmt(e.lo, digits)}, {_fmt(e.hi, digits)}]"


def _row(qid: str, direction: str, size: str, evidence: str) -> ScoreRow:
    """A Q row: the verdict from (direction, size) by verdict.verdict_of, the seed's size beside."""
    return vd.score_row(qid, CLAIMS[qid], ECONOMICS, direction, size, evidence, SEED_SIZE[qid])


def _or_undefined(x: Estimate | None) -> Estimate:
    """x, or an undefined Estimate for None."""
    return Estimate() if x is None else x


def q1(conditional: Mapping[str, Sequence[Estimate]], gain: Mapping[str, Estimate | None]) -> ScoreRow:
    """Q1 from each corpus's conditional acceptance c_1..c_g (Estimates; one without a CI makes the
    size inconclusive) and its c_2 - c_1 estimate (None: undefined).

    direction: c_2 - c_1 CI > 0 in every corpus (below 0 in some corpus: falsified). size: in every
    corpus c_1's CI overlaps 0.3..0.5 and each of c_2..c_8's CIs overlaps 0.9..1.0 (depths the report has).
    """
    corpora = list(conditional)
    if not corpora:
        return _row("Q1", vd.INCONCLUSIVE, vd.INCONCLUSIVE, "no corpus to test")
    if any(len(conditional[c]) < 2 for c in corpora):
        return _row("Q1", vd.INCONCLUSIVE, vd.INCONCLUSIVE, "needs conditional acceptance at depth 2 (depth gamma >= 2)")
    est = {c: _or_undefined(gain.get(c)) for c in corpora}
    cond = {c: list(conditional[c]) for c in corpora}

    def part(c: str) -> str:
        cs = cond[c]
        deeper = " ".join(_fmt(x.value, 2) for x in cs[1:])
        return f"{c}: c_1 = {_fmt(cs[0].value, 2)}, c_2..c_{len(cs)} = {deeper}, c_2 - c_1 = {_est(est[c], sign=True)}"

    detail = "; ".join(part(c) for c in corpora)
    direction = vd.combine(vd.direction(*est[c].bounds(), 0.0) for c in corpora)
    first = {c: vd.size(*cond[c][0].bounds(), *Q1_FIRST) for c in corpora}
    deep = {c: vd.combine(vd.size(*x.bounds(), *Q1_DEEPER) for x in cond[c][1:Q1_DEPTH]) for c in corpora}
    size = vd.combine(list(first.values()) + list(deep.values()))
    c1 = [x for c in corpora for x in [cond[c][0]] if x.lo is not None]
    ck = [x for c in corpora for x in cond[c][1:Q1_DEPTH] if x.lo is not None]
    size_text = (f"size {size}: c_1 CIs span {_fmt(min((x.bounds()[0] for x in c1), default=None), 2)} to "
                 f"{_fmt(max((x.bounds()[1] for x in c1), default=None), 2)}, c_2..c_{Q1_DEPTH} CIs span "
                 f"{_fmt(min((x.bounds()[0] for x in ck), default=None), 2)} to "
                 f"{_fmt(max((x.bounds()[1] for x in ck), default=None), 2)}")
    off = [c for c in corpora if first[c] == vd.NOT_REPRODUCED or deep[c] == vd.NOT_REPRODUCED]
    if off:
        size_text += f" (excludes the seed's size in {', '.join(off)})"
    size_text += f" (seed's size: {SEED_SIZE['Q1']})"
    if direction == vd.NOT_REPRODUCED:
        below = [c for c in corpora if est[c].bounds()[1] < 0]
        text = f"c_2 - c_1 CI lies below 0 in {', '.join(below)}"
    elif direction == vd.HOLDS:
        text = f"c_2 - c_1 CI lies above 0 in all {len(corpora)} corpora"
    else:
        rest = [c for c in corpora if not est[c].bounds()[0] > 0]
        text = f"c_2 - c_1 CI contains 0 or is undefined in {', '.join(rest)}"
    return _row("Q1", direction, size, f"{text}; {size_text} ({detail})")


def _extremes(values: Mapping[str, Estimate]) -> tuple[str, str] | None:
    """(highest, lowest) set by point value (ties: first in order); None with < 2 defined values."""
    ok = [(c, e.value) for c, e in values.items() if e.value is not None]
    if len(ok) < 2:
        return None
    hi = max(ok, key=lambda p: p[1])[0]
    lo = min(ok, key=lambda p: p[1])[0]
    return hi, lo


def _separated(hi: Estimate, lo: Estimate) -> str:
    """Direction of "hi's CI lies above lo's": holds when hi.lo > lo.hi, else inconclusive (never
    falsified: hi and lo are ordered by their point values)."""
    return vd.HOLDS if hi.bounds()[0] > lo.bounds()[1] else vd.INCONCLUSIVE


def extremes_interval(reps: Mapping[str, np.ndarray], hi: str, lo: str, op: str) -> Estimate:
    """The percentile CI of hi - lo ("diff") or hi / lo ("ratio") over bootstrap replicates paired by
    index (each corpus resampled within itself, SPEC 3), value = the same of the point values is left
    to the caller (None here)."""
    a, b = np.asarray(reps[hi], dtype=np.float64), np.asarray(reps[lo], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = a - b if op == "diff" else a / b
    lo_, hi_ = percentile_ci(x)
    return Estimate(value=None, ci=[num(lo_), num(hi_)])


def q2(alphas: Mapping[str, Estimate], spread: Estimate | None = None) -> ScoreRow:
    """Q2 from each corpus's alpha estimate (value and CI) and the CI of the spread alpha_hi - alpha_lo
    (highest minus lowest corpus by point value, over paired bootstrap replicates; None: undefined).

    direction: the CIs of the highest and the lowest corpus alpha do not overlap. size: the spread's
    CI overlaps 0.45..0.70 (the seed's ~0.40 to ~0.97: ~0.57)."""
    est = dict(alphas)
    ends = _extremes(est)
    seed = f"seed's size: {SEED_SIZE['Q2']}"
    if ends is None:
        return _row("Q2", vd.INCONCLUSIVE, vd.INCONCLUSIVE, f"needs at least 2 corpora with a defined alpha ({seed})")
    hi, lo = ends
    rng = _value(est[hi]) - _value(est[lo])
    sp = _or_undefined(spread)
    size = vd.size(*sp.bounds(), *Q2_SPREAD)
    direction = _separated(est[hi], est[lo])
    ev = (f"alpha ranges from {_est(est[lo], 2)} ({lo}) to {_est(est[hi], 2)} ({hi}), "
          f"a spread of {_fmt(rng, 2)} [{_fmt(sp.lo, 2)}, {_fmt(sp.hi, 2)}]")
    ev += "; the two CIs do not overlap" if direction == vd.HOLDS else "; the two CIs overlap or are undefined"
    return _row("Q2", direction, size, ev + f"; size {size} ({seed})")


def q3(speedups: Mapping[str, BestSpeedup], realized: Mapping[str, float] | None = None,
       ratio: Estimate | None = None) -> ScoreRow:
    """Q3 from each corpus's best speedup (BestSpeedup), the CI of the best / worst ratio (paired
    bootstrap replicates; None: undefined) and, where `specterm confirm` ran, realized speedups.

    direction: the best corpus's speedup CI lies above the worst's. size: the ratio's CI overlaps 3..6
    (the seed's ~1.4x to ~6x: ~4.3)."""
    est = {c: b.speedup for c, b in speedups.items()}
    seed = f"seed's size: {SEED_SIZE['Q3']}"
    tail = ""
    bases = sorted({b.basis for b in speedups.values()})
    if bases:
        tail += "; " + ("; ".join(bases))
    if realized:
        parts = ", ".join(f"{c} {_fmt(v, 2)}x" for c, v in realized.items())
        tail += f"; realized (specterm confirm): {parts}"
    ends = _extremes(est)
    if ends is None:
        return _row("Q3", vd.INCONCLUSIVE, vd.INCONCLUSIVE, f"needs at least 2 corpora with a defined speedup ({seed}){tail}")
    hi, lo = ends
    point = _value(est[hi]) / _value(est[lo]) if est[lo].value else float("nan")
    rt = _or_undefined(ratio)
    size = vd.size(*rt.bounds(), *Q3_RATIO)
    direction = _separated(est[hi], est[lo])
    ev = (f"best {hi} {_est(est[hi], 2, unit='x')} at g={speedups[hi].gamma}, worst {lo} "
          f"{_est(est[lo], 2, unit='x')} at g={speedups[lo].gamma}: ratio {_fmt(point, 2)} [{_fmt(rt.lo, 2)}, {_fmt(rt.hi, 2)}]")
    ev += ("; the best corpus's CI lies above the worst's" if direction == vd.HOLDS
           else "; the two CIs overlap or are undefined")
    return _row("Q3", direction, size, ev + f"; size {size} ({seed})" + tail)


def _describe(row: PolicyRow) -> str:
    params = row.params or {}
    if row.policy == "confidence":
        return f"confidence stop tau={params.get('tau'):g}"
    if row.policy == "heuristic":
        return f"heuristic from g0={params.get('g0')}"
    return str(row.policy)


def _vs_best_fixed(row: PolicyRow | None) -> Estimate:
    """A policy row's T / T_best_fixed (undefined when the row or its ratio is absent)."""
    return _or_undefined(row.vs_best_fixed if row is not None else None)


def adaptive_candidates(policies: Sequence[PolicyRow]) -> list[PolicyRow]:
    """The heuristic row(s) and the confidence row with the best point T / T_best_fixed (ties: smallest tau)."""
    heur = [p for p in policies if p.policy == "heuristic"]
    conf = [p for p in policies if p.policy == "confidence" and _vs_best_fixed(p).value is not None]
    if conf:
        conf = [max(sorted(conf, key=lambda p: p.params["tau"]), key=lambda p: _value(_vs_best_fixed(p)))]
    return heur + conf


def _same_policy(rows: Sequence[PolicyRow], policy: PolicyRow) -> PolicyRow | None:
    """The row of `rows` with the policy and parameters of `policy` (None when it was not replayed there)."""
    name, want = policy.policy, dict(policy.params or {})
    return next((r for r in rows if r.policy == name and dict(r.params or {}) == want), None)


def q4(policies: Sequence[PolicyRow], corpus_policies: Mapping[str, Sequence[PolicyRow]] | None = None) -> ScoreRow:
    """Q4 from the pooled set's policy rows (policies.policy_summary: "policy", "params", "vs_best_fixed")
    and each corpus's rows (`corpus_policies`; their vs_best_fixed is against the corpus's own best
    fixed g, SPEC 4: "the best fixed g per corpus as the baseline too").

    The adaptive candidates are the heuristic schedule and the confidence stop at its best tau on the
    pooled set (`adaptive_candidates`). A candidate holds when its T / T_best_fixed CI lies above 1 on
    the pooled set and, with the same parameters, in every corpus (verdict.combine); it is not
    reproduced when some CI lies below 1. direction: holds when some candidate holds; falsified when
    every candidate is not reproduced; else inconclusive. size: n/a (the seed states none)."""
    cands = adaptive_candidates(policies)
    if not cands:
        return _row("Q4", vd.INCONCLUSIVE, vd.NA, "no adaptive policy was replayed")
    est = [_vs_best_fixed(p) for p in cands]
    order = sorted(range(len(cands)), key=lambda i: -(_value(est[i]) if est[i].value is not None else -np.inf))
    best = order[0]
    fixed = next((p for p in policies if p.policy == "best-fixed"), None)
    ref = ""
    if fixed is not None:
        fp = fixed.params or {}
        ref = f" (best fixed g={fp.get('gamma')} at r={_fmt(fp.get('r'), 3)})"
    ev = f"best adaptive policy: {_describe(cands[best])}, T / T_best_fixed = {_est(est[best])}{ref}"
    others = [f"{_describe(cands[i])} {_est(est[i])}" for i in order[1:]]
    if others:
        ev += "; also " + ", ".join(others)
    if not any(p.policy == "confidence" for p in policies):
        ev += "; no confidence stop (a stream lacks draft_conf)"
    elif any(p.policy == "confidence" for p in cands):
        ev += SAME_DATA_TAU
    corpora = dict(corpus_policies or {})
    outcome, corpus_parts = [], []
    for i, cand in enumerate(cands):
        parts = [vd.direction(*est[i].bounds(), 1.0)]
        texts = []
        for c, rows in corpora.items():
            r = _same_policy(rows, cand)
            e = _vs_best_fixed(r)
            parts.append(vd.direction(*e.bounds(), 1.0))
            texts.append(f"{c} {_est(e)}")
        outcome.append(vd.combine(parts))
        corpus_parts.append(texts)
    if corpora:
        ev += "; against each corpus's own best fixed g: " + "; ".join(
            f"{_describe(cands[i])}: {', '.join(corpus_parts[i])}" for i in order)
    above = [_describe(cands[i]) for i in order if outcome[i] == vd.HOLDS]
    where = " and in every corpus" if corpora else ""
    if above:
        return _row("Q4", vd.HOLDS, vd.NA, ev + f"; CI above 1 on the pooled set{where} for {', '.join(above)}")
    if all(o == vd.NOT_REPRODUCED for o in outcome):
        return _row("Q4", vd.NOT_REPRODUCED, vd.NA, ev + "; every adaptive policy's CI lies below 1 on the pooled set"
                    + (" or in some corpus" if corpora else ""))
    return _row("Q4", vd.INCONCLUSIVE, vd.NA, ev + "; a CI contains 1 or is undefined")


@dataclass(frozen=True)
class ProfileDecision:
    """One cost profile's decision for one set, as Q5 reads it: `label` names the profile (its machine
    and engine), `measured` the side of 1 of the measured decision's CI (S_hw(g_hw)), `reference` the
    side of the memory-bound reference's CI (S_mb, c_verify(g) := c_decode) on the same profile's
    c_draft / c_decode; `text` the two decisions as printed."""

    label: str
    measured: str
    reference: str
    text: str = ""


def profile_decision(d: DecisionHW, label: str) -> ProfileDecision:
    """A set's DecisionHW (one profile's costs) as Q5's ProfileDecision."""
    hw, mb = d.speedup_hw_ci or [None, None], d.speedup_mb_ci or [None, None]
    side_hw, side_mb = vd.ci_side(hw), vd.ci_side(mb)
    text = (f"{label}: measured g={d.gamma_hw} {_fmt(d.speedup_hw, 2)}x [{_fmt(hw[0], 2)}, {_fmt(hw[1], 2)}] ({side_hw}), "
            f"memory-bound g={d.gamma_mb} {_fmt(d.speedup_mb, 2)}x [{_fmt(mb[0], 2)}, {_fmt(mb[1], 2)}] ({side_mb})")
    return ProfileDecision(label, side_hw, side_mb, text)


def profile_decisions(s: SetReport) -> list[ProfileDecision]:
    """A set's measured decisions, one per cost profile, for Q5: its `decision_by_profile` {profile id:
    DecisionHW} where the report has one (SPEC 7 cost profiles), else its decision_hw (the run's one
    profile); decisions without measured costs are left out."""
    by_profile = getattr(s, "decision_by_profile", None)
    if isinstance(by_profile, Mapping) and by_profile:
        return [profile_decision(d, str(getattr(d, "machine", None) or pid)) for pid, d in by_profile.items()
                if isinstance(d, DecisionHW) and d.measured]
    d = s.decision_hw
    if d is None or not d.measured:
        return []
    return [profile_decision(d, str(getattr(d, "profile", None) or "the run's cost profile"))]


def q5(decisions: Mapping[str, Sequence[ProfileDecision]]) -> ScoreRow:
    """Q5 ("only the measured cost ratio tells which side of 1.0 you are on", SPEC 4) from each set's
    decisions, one per cost profile (a run with one profile: a list of one).

    direction holds when, for some set,
      (a) two profiles' measured decisions fall on different sides of 1 (each CI clear of 1) while the
          memory-bound reference is on the same side for both (it does not move), or
      (b) one profile's measured decision and its memory-bound reference fall on different sides
          (each CI clear of 1);
    inconclusive otherwise. Never falsified: agreement of the measured decision and the reference on
    the machines measured is no evidence against the claim. size: n/a (the seed states none). The
    evidence names both decisions of every profile."""
    usable = {c: list(ds) for c, ds in decisions.items() if ds}
    if not usable:
        return _row("Q5", vd.INCONCLUSIVE, vd.NA, "no set has a measured decision (no measured costs)")
    detail = "; ".join(f"{c}: " + "; ".join(d.text or d.label for d in ds) for c, ds in usable.items())
    found = []
    for c, ds in usable.items():
        clear = [d for d in ds if vd.STRADDLES not in (d.measured, d.reference)]
        why = []
        pairs = [(a, b) for i, a in enumerate(clear) for b in clear[i + 1:]
                 if a.measured != b.measured and a.reference == b.reference]
        if pairs:
            a, b = pairs[0]
            why.append(f"{a.label} {a.measured}, {b.label} {b.measured}, the memory-bound reference {a.reference} on both")
        own = [d.label for d in clear if d.measured != d.reference]
        if own:
            why.append(f"{', '.join(own)}: the measured decision and the memory-bound reference on different sides")
        if why:
            found.append(f"{c} ({'; '.join(why)})")
    n_prof = max(len(ds) for ds in usable.values())
    if found:
        return _row("Q5", vd.HOLDS, vd.NA, "only the measured costs tell the side in " + "; ".join(found) + f" ({detail})")
    reason = ("the measured decision and the memory-bound reference agree, or a CI contains 1, in every set"
           + (" on the one profile measured: agreement on one machine is no evidence against the claim; "
              "measure another machine's profile (`specterm costs RUN`) to test it" if n_prof == 1 else
              " and on every profile"))
    return _row("Q5", vd.INCONCLUSIVE, vd.NA, f"{reason} ({detail})")


def q6(by_batch: Sequence[Mapping[str, Any]] | None, batch_crossover: float | None = None,
       roofline: float | None = None, roofline_gamma: int | None = None) -> ScoreRow:
    """Q6 from the pooled set's decision by batch (SPEC 7 decision_hw.by_batch: [{"batch", "gamma_hw",
    "speedup_hw": {"value", "ci"}}]), the measured crossover B_hw and the roofline B* of the named preset.

    A crossover needs intervals on both sides of 1 across B (SPEC 4 Q6): direction holds when
    S_hw(g_hw(B), B) has its CI above 1 at some B and below 1 at a larger B, and (the claim: speculation
    *stops* paying above some batch; a choice, SPEC 4 names the condition a crossover needs) above 1 at
    no B beyond that one (above 1 again there: inconclusive, "no crossover shown"); falsified when the CI is
    above 1 at every measured B and the largest measured B reaches the roofline B* (where speculation
    should have stopped); inconclusive otherwise: "no crossover on this device" when every CI is below
    1 or every CI is above 1, "no crossover shown" when a CI contains 1 between them. Point values
    falling with B are no evidence of a crossover. size: n/a (B* ~ 49 is a roofline reference)."""
    ref = ("; roofline B* = I*/(g+1) ~ " + (f"{roofline:.0f} at g = {roofline_gamma}" if roofline is not None else MISSING)
           + f" (seed's size: {SEED_SIZE['Q6']})")
    rows = sorted((b for b in (by_batch or []) if b.get("speedup_hw") is not None), key=lambda b: b["batch"])
    if len(rows) < 2:
        return _row("Q6", vd.INCONCLUSIVE, vd.NA, "no batch costs measured (needs S_hw at 2 or more batch sizes)" + ref)
    est = [_batch_estimate(b["speedup_hw"]) for b in rows]
    sides = [vd.ci_side(e.ci) for e in est]
    cells = ", ".join(f"B={b['batch']}: g={b.get('gamma_hw')} {_est(e, 2, unit='x')}" for b, e in zip(rows, est))
    bhw = "never on this device" if batch_crossover is None else f"{batch_crossover:g}"
    ev = f"S_hw(g_hw(B), B) {cells}; measured crossover B_hw = {bhw}"
    batches = [int(b["batch"]) for b in rows]
    above = [B for B, sd in zip(batches, sides) if sd == vd.ABOVE]
    below = [B for B, sd in zip(batches, sides) if sd == vd.BELOW]
    cross = [(a, b) for a in above for b in below if b > a]
    if cross:
        a, b = cross[0]
        again = [B for B in above if B > b]
        if not again:
            return _row("Q6", vd.HOLDS, vd.NA, ev + f"; crossover: the CI lies above 1 at B = {a} and below 1 at B = {b}, "
                                                   "and above 1 at no larger B" + ref)
        return _row("Q6", vd.INCONCLUSIVE, vd.NA, ev + f"; no crossover shown: the CI lies above 1 at B = {a} and below 1 "
                                                       f"at B = {b}, but above 1 again at B = {', '.join(map(str, again))}: "
                                                       "speculation does not stop paying above a batch" + ref)
    if len(above) == len(rows):
        if roofline is not None and batches[-1] >= roofline:
            return _row("Q6", vd.NOT_REPRODUCED, vd.NA, ev + f"; the CI lies above 1 at every measured B up to "
                                                             f"{batches[-1]}, past the roofline B*" + ref)
        return _row("Q6", vd.INCONCLUSIVE, vd.NA, ev + "; no crossover on this device: the CI lies above 1 at every "
                                                       "measured B" + ref)
    if len(below) == len(rows):
        return _row("Q6", vd.INCONCLUSIVE, vd.NA, ev + "; no crossover on this device: the CI lies below 1 at every "
                                                       "measured B" + ref)
    return _row("Q6", vd.INCONCLUSIVE, vd.NA, ev + "; no crossover shown: no B with its CI above 1 has a larger B with "
                                                   "its CI below 1 (a CI contains 1 or is undefined)" + ref)


def _batch_estimate(x: Mapping[str, Any]) -> Estimate:
    """A by_batch row's speedup_hw: DecisionHW.by_batch keeps its rows as {"value", "ci"} dicts
    (core/decide/hardware/decision.py writes them so), hence this one read of that shape."""
    ci = x.get("ci") or [None, None]
    return Estimate(value=x.get("value"), ci=[ci[0], ci[1]])


def _replicate_interval(reps: Mapping[str, np.ndarray] | None, hi: str | None, lo: str | None, op: str) -> Estimate | None:
    if reps is None or hi is None or lo is None or hi not in reps or lo not in reps:
        return None
    return extremes_interval(reps, hi, lo, op)


def q_rows(sets: Mapping[str, SetReport], costs: Mapping[str, Mapping[str, Any]] | None = None,
           realized: Mapping[str, float] | None = None,
           replicates: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> list[ScoreRow]:
    """Q1-Q6 from a report's sets (report.SetReport; corpora = every set but "pooled").

    costs: measured costs per corpus ({"c_decode", "c_verify": {g: s}, "c_draft"}, SPEC 6) for Q3;
    a corpus without them uses the memory-bound model at its r. realized: the realized speedups
    (`specterm confirm`) per corpus, printed in Q3's evidence. replicates: per corpus {"alpha": (B,),
    "E_true": (B, 32)} bootstrap replicates (the same resamples as every CI) for the CIs of Q2's spread
    and Q3's ratio; None: those CIs are undefined (size inconclusive).
    """
    corpora = [name for name in sets if name != "pooled"]
    conditional = {c: list(sets[c].depth.conditional) for c in corpora}
    gain = {c: sets[c].depth.c2_minus_c1 for c in corpora}
    alphas = {c: Estimate(value=sets[c].alpha, ci=list(sets[c].alpha_ci)) for c in corpora}
    speedups, speed_reps = {}, {}
    for c in corpora:
        factor, basis = speedup_factor(sets[c], (costs or {}).get(c))
        speedups[c] = best_speedup(sets[c].curve.E_true, sets[c].curve.E_true_ci, factor, basis)
        d = sets[c].decision_hw
        if ((costs or {}).get(c) is not None and d is not None and d.measured and d.gamma_hw == speedups[c].gamma
                and d.speedup_hw_ci and None not in d.speedup_hw_ci):
            # the decision's own interval (prompts and cost samples, SPEC 6), the number the decision prints
            speedups[c] = BestSpeedup(d.gamma_hw, Estimate(value=d.speedup_hw, ci=list(d.speedup_hw_ci)),
                                      basis + DECISION_CI)
        g = speedups[c].gamma
        if replicates is not None and c in replicates and g is not None:
            speed_reps[c] = np.asarray(replicates[c]["E_true"])[:, g - 1] * factor[g - 1]
    a_ends = _extremes(alphas) or (None, None)
    a_reps = {c: replicates[c]["alpha"] for c in corpora if c in replicates} if replicates is not None else None
    spread = _replicate_interval(a_reps, a_ends[0], a_ends[1], "diff")
    s_ends = _extremes({c: b.speedup for c, b in speedups.items()}) or (None, None)
    ratio = _replicate_interval(speed_reps if replicates is not None else None, s_ends[0], s_ends[1], "ratio")
    pooled = sets.get("pooled")
    decisions = {c: profile_decisions(sets[c]) for c in corpora}
    # the roofline B* of the named preset: the cost-ratio model's (SPEC 6)
    ref = pooled.cost_ratio if pooled is not None else None
    b_star = ref.roofline_B_star if ref is not None else None
    return [q1(conditional, gain), q2(alphas, spread), q3(speedups, realized, ratio),
            q4(pooled.policies if pooled is not None else [], {c: sets[c].policies for c in corpora}),
            q5(decisions),
            q6_profiles(pooled, b_star, ref.gamma_true if ref is not None else None)]


def _few_samples(row: ScoreRow, d: DecisionHW) -> ScoreRow:
    """`row` with the batch grid's caveat after its evidence where its ratios rest on few samples per
    cost (decision_hw.batch_fit.few_samples): the caveat is the interval's, so it goes where Q6 is read."""
    few = (d.batch_fit or {}).get("few_samples") if isinstance(d.batch_fit, dict) else None
    return dataclasses.replace(row, evidence=f"{row.evidence} (caveat: {few})") if few else row


def q6_profiles(pooled: SetReport | None, roofline: float | None, roofline_gamma: int | None) -> ScoreRow:
    """Q6 per cost profile (SPEC 6: by-batch is a profile's): `q6` on the pooled set's decision of every
    profile with batch costs (decision_by_profile; else its one decision_hw). One profile: its row. Several:
    holds when some profile's row holds, falsified when one is falsified and none holds, else inconclusive;
    the evidence gives each profile's, named by its machine."""
    if pooled is None:
        return q6(None, None, roofline, roofline_gamma)
    by = getattr(pooled, "decision_by_profile", None) or {}
    ds = [(str(getattr(d, "machine", None) or pid), d) for pid, d in by.items() if isinstance(d, DecisionHW) and d.by_batch]
    if not ds:
        d = pooled.decision_hw
        return q6(d.by_batch if d is not None else None, d.batch_crossover if d is not None else None, roofline, roofline_gamma)
    rows = [(label, _few_samples(q6(d.by_batch, d.batch_crossover, roofline, roofline_gamma), d)) for label, d in ds]
    if len(rows) == 1:  # one profile has batch costs: its row, named by its machine (it may not be the shown one)
        label, row = rows[0]
        return dataclasses.replace(row, evidence=row.evidence.replace("S_hw(g_hw(B), B) ", f"S_hw(g_hw(B), B) on {label}: ", 1))
    verdicts = [r.direction for _, r in rows]
    direction = (vd.HOLDS if vd.HOLDS in verdicts else vd.NOT_REPRODUCED if vd.NOT_REPRODUCED in verdicts
                 else vd.INCONCLUSIVE)
    ev = "; ".join(f"{label}: {r.evidence}" for label, r in rows)
    return _row("Q6", direction, vd.NA, f"per cost profile with batch costs: {ev}")
