"""The scorecard (SPEC 4): the measurement seed's P1-P5, then the economics seed's Q1-Q6
(economics.py), computed from a report's sets, never written by hand.

Every row has a `direction` and a `size` outcome and a verdict from them (core/claims/verdict.py: one
function of an interval and a threshold). Corpora are every set but "pooled". The seed's size
(SEED_SIZE, SPEC 4's table) is printed beside the measured CI in the evidence. Rules, and the choices
where the SPEC is silent:

    P1 direction: per-stream p11-p10 CI > 0 in every corpus (verdict.combine over corpora; a CI
       below 0 in some corpus: not reproduced -> falsified). size: the pooled set's per-stream
       p11-p10 CI overlaps the published pooled CI [0.125, 0.182], and the corpora's span
       [min lo, max hi] overlaps the published per-corpus range [0.047, 0.233].
    P2 direction: D/D_geom CI > 1 in every corpus. size: each corpus's CI overlaps [2.1, 24].
    P3 on the pooled set and the fixed r grid 0.05..0.60 (measured r excluded, so runs compare),
       judged per bootstrap replicate (`p3`, optimum.optimum_shares): direction holds when g*_true >
       g*_iid at more than half of the grid in >= 95% of replicates; not reproduced (falsified) when
       g*_true <= g*_iid at every r and < at some in >= 95%; inconclusive otherwise. size: the seed's
       counter-claim "1 to 3 below": the gap lies in [1, 3] at every r in >= 95% of replicates.
    P4 direction: pooled temporal deficit CI > 0 (below 0: falsified). size: it overlaps [0.033, 0.051].
    P5 direction: Spearman rho of (corpus per-stream p11-p10, corpus temporal deficit) with its exact
       two-sided permutation p-value over the corpora (`spearman_permutation`): holds when rho > 0
       and p <= 0.05, falsified when rho < 0 and p <= 0.05, inconclusive otherwise (fewer than 3
       corpora with defined values, all tied, or p > 0.05). size: "temporal part significant in
       the high-dispersion corpora and not in the flat ones": high-dispersion = D/D_geom CI > 1
       (P2's test), significant = temporal CI > 0; holds when the two sets of corpora are equal,
       not reproduced when they differ, inconclusive when a CI is undefined.

Too few prompts (SPEC 6): when a corpus has fewer than params.MIN_PROMPTS prompts, every row reads
"too few prompts (n = K in a corpus; needs M per corpus)" (`too_few`; K the fewest prompts of any corpus), its numbers kept.

Each of P1, P2, P4, P5 also says in its evidence whether its direction holds in the steady state
(the set's `steady_state`: positions t >= 32 only); P3 has no steady-state statistic.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from specterm.core.claims import economics
from specterm.core.claims import verdict as vd
from specterm.core.report.fmt import MISSING, fmt
from specterm.core.decide.optimum import P3_GAP_RANGE  # noqa: F401  (the seed's range, defined with the shares)
from specterm.core.params import MIN_PROMPTS, R_GRID, STEADY_FROM
from specterm.core.report.types import MEASUREMENT, Estimate, ScoreRow, SetReport, SteadyState

PREDICTIONS = {
    "P1": "acceptance is autocorrelated",
    "P2": "run lengths are over-dispersed vs geometric",
    "P3": "the optimal draft length is larger than the i.i.d. choice",
    "P4": "an in-place shuffle isolates a temporal cause",
    "P5": "the effect scales with autocorrelation across corpora",
}

# The measurement seed's sizes (SPEC 4's table), quoted, as (lo, hi) ranges where the seed gives one.
SEED_SIZE = {
    "P1": "per-corpus p11-p10 +0.047 to +0.233, pooled +0.155 [0.125, 0.182]",
    "P2": "D/D_geom 2.1x to 24x per corpus",
    "P3": "g*_true 1 to 3 below g*_iid at every r in [0.05, 0.6]",
    "P4": "pooled temporal deficit at g = 8 about 0.043 [0.033, 0.051]",
    "P5": "temporal part significant in the high-dispersion corpora and not in the flat ones",
}
P1_CORPUS_RANGE = (0.047, 0.233)
P1_POOLED_RANGE = (0.125, 0.182)
P2_RANGE = (2.1, 24.0)
P4_RANGE = (0.033, 0.051)
P5_ALPHA = 0.05


def _f(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def _ci(est: Estimate | None) -> tuple[float, float]:
    if est is None:
        return float("nan"), float("nan")
    lo, hi = est.ci or (None, None)
    return _f(lo), _f(hi)


def _fmt(x: float | None, digits: int = 3) -> str:
    """x as a float through core/report/fmt.py's fmt (the one number formatter; MISSING when undefined)."""
    return fmt(None if x is None else float(x), digits)


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _span(cis: Mapping[str, tuple[float, float]]) -> str:
    return ", ".join(f"{c} [{_fmt(lo)}, {_fmt(hi)}]" for c, (lo, hi) in cis.items())


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rho (as scipy.stats.spearmanr: Pearson correlation of average ranks); NaN when either
    side is constant or has fewer than 2 values."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xa.size < 2 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return float("nan")
    return float(_rank_pearson(average_ranks(xa), average_ranks(ya)[None, :])[0])


EXACT_MAX = 8  # up to 8! = 40320 orderings are enumerated; more corpora: a seeded Monte-Carlo p-value


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of x, ties sharing the mean of their ranks (scipy.stats.rankdata's "average")."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], x.size]
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = ((starts + 1 + ends) / 2.0)[group]
    return ranks


def _rank_pearson(rx: np.ndarray, RY: np.ndarray) -> np.ndarray:
    """Pearson correlation of rx (n,) with every row of RY (m x n); NaN where a side is constant."""
    dx = rx - rx.mean()
    DY = RY - RY.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((DY @ dx) / np.sqrt((dx @ dx) * (DY * DY).sum(axis=1)), dtype=np.float64)


def spearman_permutation(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(rho, p): Spearman rho of x and y (average ranks for ties) and its exact two-sided permutation
    p-value, p = #{orderings pi of y: |rho(x, y_pi)| >= |rho|} / n!, over all n! orderings (n <= 8;
    5 corpora: 120). NaN, NaN when n < 2 or a side is constant. A relative tolerance of 1e-9 counts
    orderings whose |rho| equals the observed one (ties in floating point). Beyond 8 values: 100000
    random orderings (seed 0) and p = (hits + 1) / (100000 + 1)."""
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = xa.size
    if n < 2 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return float("nan"), float("nan")
    rx, ry = average_ranks(xa), average_ranks(ya)
    rho = float(_rank_pearson(rx, ry[None, :])[0])
    if n <= EXACT_MAX:
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
        rhos = _rank_pearson(rx, ry[perms])
        hits, total = int((np.abs(rhos) >= abs(rho) * (1 - 1e-9)).sum()), perms.shape[0]
        return rho, hits / total
    rng = np.random.default_rng(0)
    m = 100_000
    RY = np.array([rng.permutation(ry) for _ in range(m)])
    hits = int((np.abs(_rank_pearson(rx, RY)) >= abs(rho) * (1 - 1e-9)).sum())
    return rho, (hits + 1) / (m + 1)


def _row(pid: str, direction: str, size: str, evidence: str, steady: str | None = None) -> ScoreRow:
    return vd.score_row(pid, PREDICTIONS[pid], MEASUREMENT, direction, size, evidence, SEED_SIZE[pid], steady)


def _steady(set_report: SetReport) -> SteadyState | None:
    """The set's steady_state (report.SteadyState); None when absent."""
    return set_report.steady_state


def _every_corpus(cis: Mapping[str, tuple[float, float]], bound: float) -> str:
    return vd.combine(vd.direction(lo, hi, bound) for lo, hi in cis.values()) if cis else vd.INCONCLUSIVE


def _direction_text(what: str, cis: Mapping[str, tuple[float, float]], bound: float, outcome: str) -> str:
    if not cis:
        return "no corpus to test"
    if outcome == vd.HOLDS:
        los = [lo for lo, _ in cis.values()]
        return f"{what} CI lower bound > {bound:g} in all {len(cis)} corpora (lower bounds {_fmt(min(los))} to {_fmt(max(los))})"
    if outcome == vd.NOT_REPRODUCED:
        below = [c for c, (_, hi) in cis.items() if hi < bound]
        return f"{what} CI lies below {bound:g} in {_names(below)} ({_span(cis)})"
    rest = [c for c, (lo, _) in cis.items() if not lo > bound]
    return f"{what} CI contains {bound:g} or is undefined in {_names(rest)} ({_span(cis)})"


def _steady_text(outcome: str | None, detail: str) -> str:
    if outcome is None:
        return f"; steady state (t >= {STEADY_FROM}): {MISSING}"
    word = {vd.HOLDS: "holds", vd.NOT_REPRODUCED: "falsified"}.get(outcome, "inconclusive")
    return f"; steady state (t >= {STEADY_FROM}): {word} ({detail})"


def _corpus_rule(sets: Mapping[str, SetReport], corpora: list[str], key: Callable[[SetReport | SteadyState], Estimate],
                 bound: float, what: str) -> tuple[str, str, str | None, str]:
    """(direction, text, steady outcome, steady text) of "`key`'s CI > bound in every corpus"."""
    cis = {c: _ci(key(sets[c])) for c in corpora}
    direction = _every_corpus(cis, bound)
    steady_cis = {c: _ci(key(ss)) for c in corpora if (ss := _steady(sets[c])) is not None}
    steady = _every_corpus(steady_cis, bound) if steady_cis and len(steady_cis) == len(corpora) else None
    return direction, _direction_text(what, cis, bound, direction), steady, _span(steady_cis)


def p1(sets: Mapping[str, SetReport], corpora: list[str]) -> ScoreRow:
    direction, text, steady, steady_detail = _corpus_rule(sets, corpora, lambda s: s.autocorr, 0.0, "per-stream p11-p10")
    cis = {c: _ci(sets[c].autocorr) for c in corpora}
    pooled = _ci(sets["pooled"].autocorr) if "pooled" in sets else (float("nan"), float("nan"))
    los = [lo for lo, _ in cis.values()]
    his = [hi for _, hi in cis.values()]
    span = (min(los), max(his)) if cis and all(map(np.isfinite, los + his)) else (float("nan"), float("nan"))
    size = vd.combine([vd.size(*pooled, *P1_POOLED_RANGE), vd.size(*span, *P1_CORPUS_RANGE)]) if cis else vd.INCONCLUSIVE
    size_text = (f"size {size}: pooled [{_fmt(pooled[0])}, {_fmt(pooled[1])}], corpora span "
                 f"[{_fmt(span[0])}, {_fmt(span[1])}] (seed's size: {SEED_SIZE['P1']})")
    return _row("P1", direction, size, f"{text}; {size_text}" + _steady_text(steady, steady_detail), steady)


def p2(sets: Mapping[str, SetReport], corpora: list[str]) -> ScoreRow:
    direction, text, steady, steady_detail = _corpus_rule(sets, corpora, lambda s: s.dispersion_ratio, 1.0, "D/D_geom")
    cis = {c: _ci(sets[c].dispersion_ratio) for c in corpora}
    size = vd.combine(vd.size(lo, hi, *P2_RANGE) for lo, hi in cis.values()) if cis else vd.INCONCLUSIVE
    off = [c for c, (lo, hi) in cis.items() if vd.size(lo, hi, *P2_RANGE) == vd.NOT_REPRODUCED]
    size_text = f"size {size}" + (f" (CI excludes 2.1 to 24 in {_names(off)})" if off else "") + f" (seed's size: {SEED_SIZE['P2']})"
    return _row("P2", direction, size, f"{text}; {size_text}" + _length_text(sets, corpora)
                + _steady_text(steady, steady_detail), steady)


def _length_text(sets: Mapping[str, SetReport], corpora: list[str]) -> str:
    """P2's caveat on stream length: D/D_geom with each stream's trailing run counted (right-censored), and
    the streams' length; the seed states no stream length, so no comparison at matched length is made."""
    tr = {c: sets[c].dispersion_ratio_trailing for c in corpora}
    if not corpora or any(t is None or t.value is None for t in tr.values()):
        return ""
    vals = [float(t.value) for t in tr.values() if t is not None and t.value is not None]
    n = [sets[c].n_positions / sets[c].n_streams for c in corpora if sets[c].n_streams]
    pooled = sets.get("pooled")
    both = ""
    if pooled is not None and pooled.dispersion_ratio_trailing is not None:
        both = (f", pooled {_fmt(_f(pooled.dispersion_ratio.value), 2)} closed only against "
                f"{_fmt(_f(pooled.dispersion_ratio_trailing.value), 2)}")
    lengths = _fmt(min(n), 0) if round(min(n)) == round(max(n)) else f"{_fmt(min(n), 0)} to {_fmt(max(n), 0)}"
    return (f"; with each stream's trailing run counted (right-censored) D/D_geom is {_fmt(min(vals), 2)} to "
            f"{_fmt(max(vals), 2)} per corpus{both}: at a mean of {lengths} analysed positions per "
            "stream the cut trailing run removes the longest runs, so D/D_geom depends on stream length; the seed "
            "states none, so its 2.1x to 24x is not compared at matched length")


def _optimum_diffs(s: SetReport) -> np.ndarray:
    rows = [o for o in s.optimum if round(o.r, 2) == o.r and o.r in R_GRID]
    return np.array([o.gamma_true - o.gamma_iid for o in rows if o.gamma_true is not None and o.gamma_iid is not None],
                    dtype=np.int64)


P3_SHARE = 0.95  # SPEC 4: P3's outcomes need >= 95% of the bootstrap replicates


def _pct(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:.1f}%"


def p3(sets: Mapping[str, SetReport], corpora: list[str]) -> ScoreRow:
    """P3 on the pooled set, judged per bootstrap replicate (SPEC 4; the set's optimum_shares): direction
    holds when g*_true > g*_iid at most r of the grid in >= 95% of replicates, not reproduced (falsified)
    when g*_true <= g*_iid at every r and < at some in >= 95%, inconclusive otherwise (and without
    replicates). size (the seed's counter-claim, 1 to 3 below at every r): holds when the gap lies in
    [1, 3] at every r in >= 95% of replicates, not reproduced when in <= 5%, inconclusive between. The
    evidence prints the shares and the point grid."""
    grid = f"r in [{R_GRID[0]:g}, {R_GRID[-1]:g}]"
    d = _optimum_diffs(sets["pooled"]) if "pooled" in sets else np.zeros(0, np.int64)
    if d.size == 0:
        return _row("P3", vd.INCONCLUSIVE, vd.INCONCLUSIVE, "g*_true or g*_iid is undefined on the r grid")
    above, equal, below = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    point = (f"point estimates over {d.size} {grid}: g*_true above g*_iid at {above}, equal at {equal}, below at "
             f"{below} (g*_iid - g*_true from {int((-d).min())} to {int((-d).max())})")
    per_corpus = [c for c in corpora if (dc := _optimum_diffs(sets[c])).size and (dc <= 0).all() and (dc < 0).any()]
    tail = (f"; per corpus (point), g*_true <= g*_iid everywhere and < somewhere in {len(per_corpus)} of "
            f"{len(corpora)}") if corpora else ""
    sh = sets["pooled"].optimum_shares
    if sh is None or sh.holds is None or sh.falsified is None or sh.size is None:
        return _row("P3", vd.INCONCLUSIVE, vd.INCONCLUSIVE,
                    f"no bootstrap replicates to judge P3 by (SPEC 4: per replicate); {point}{tail}")
    if sh.holds >= P3_SHARE:
        direction = vd.HOLDS
    elif sh.falsified >= P3_SHARE:
        direction = vd.NOT_REPRODUCED
    else:
        direction = vd.INCONCLUSIVE
    size = vd.HOLDS if sh.size >= P3_SHARE else vd.NOT_REPRODUCED if sh.size <= 1 - P3_SHARE else vd.INCONCLUSIVE
    ev = (f"in {sh.replicates} bootstrap replicates, g*_true > g*_iid at most r of the grid in {_pct(sh.holds)}, "
          f"g*_true <= g*_iid at every {grid} and < at some in {_pct(sh.falsified)} (each needs >= 95%); {point}")
    ev += (f"; size {size}: the gap g*_iid - g*_true lies in [1, 3] at every r in {_pct(sh.size)} of replicates "
           f"(seed's size: {SEED_SIZE['P3']})")
    return _row("P3", direction, size, ev + tail)


def p4(sets: Mapping[str, SetReport]) -> ScoreRow:
    if "pooled" not in sets:
        return _row("P4", vd.INCONCLUSIVE, vd.INCONCLUSIVE, "no pooled set")
    dfc = sets["pooled"].deficit
    t = dfc.temporal
    lo, hi = _ci(t)
    direction = vd.direction(lo, hi, 0.0)
    ev = f"pooled temporal deficit at gamma={dfc.gamma} is {_fmt(_f(t.value))} [{_fmt(lo)}, {_fmt(hi)}]"
    ev += {vd.HOLDS: ", CI above 0", vd.NOT_REPRODUCED: ", CI below 0: shuffling lowers the yield"}.get(
        direction, ", CI contains 0 or is undefined")
    size = vd.size(lo, hi, *P4_RANGE)
    ev += f"; size {size} (seed's size: {SEED_SIZE['P4']})"
    ss = _steady(sets["pooled"])
    steady, detail = None, ""
    if ss is not None:
        st = ss.deficit.temporal
        slo, shi = _ci(st)
        steady = vd.direction(slo, shi, 0.0)
        detail = f"pooled temporal {_fmt(_f(st.value))} [{_fmt(slo)}, {_fmt(shi)}]"
    return _row("P4", direction, size, ev + _steady_text(steady, detail), steady)


def _p5_direction(ac: np.ndarray, tm: np.ndarray) -> tuple[str, float, float, int]:
    """(direction, rho, p, corpora used) of P5 from corpus autocorrelations and temporal deficits."""
    ok = np.isfinite(ac) & np.isfinite(tm)
    n = int(ok.sum())
    if n < 3:
        return vd.INCONCLUSIVE, float("nan"), float("nan"), n
    rho, p = spearman_permutation(ac[ok], tm[ok])
    if not (np.isfinite(rho) and np.isfinite(p)) or p > P5_ALPHA:
        return vd.INCONCLUSIVE, rho, p, n
    return (vd.HOLDS if rho > 0 else vd.NOT_REPRODUCED if rho < 0 else vd.INCONCLUSIVE), rho, p, n


def p5(sets: Mapping[str, SetReport], corpora: list[str]) -> ScoreRow:
    ac = np.array([_f(sets[c].autocorr.value) for c in corpora])
    tm = np.array([_f(sets[c].deficit.temporal.value) for c in corpora])
    tcis = {c: _ci(sets[c].deficit.temporal) for c in corpora}
    excl = [c for c, (lo, hi) in tcis.items() if lo > 0 or hi < 0]
    tail = f"; temporal CI excludes 0 in {len(excl)} of {len(corpora)} corpora"
    direction, rho, p, n = _p5_direction(ac, tm)
    if n < 3:
        ev = f"needs at least 3 corpora with defined values, has {n}{tail}"
    else:
        ev = (f"Spearman rho(autocorr, temporal deficit) = {_fmt(rho, 2)}, exact permutation p = {_fmt(p, 3)} "
              f"(two-sided, {math.factorial(n) if n <= EXACT_MAX else 'random'} orderings) over {n} corpora{tail}")
        if not np.isfinite(rho):
            ev += " (all values tied)"
    # size: significant temporal part exactly in the high-dispersion corpora
    dcis = {c: _ci(sets[c].dispersion_ratio) for c in corpora}
    defined = all(np.isfinite(v).all() for v in list(tcis.values()) + list(dcis.values()))
    high = [c for c in corpora if dcis[c][0] > 1]
    signif = [c for c in corpora if tcis[c][0] > 0]
    if not corpora or not defined:
        size = vd.INCONCLUSIVE
    else:
        size = vd.HOLDS if set(high) == set(signif) else vd.NOT_REPRODUCED
    ev += (f"; size {size}: temporal CI above 0 in {_names(signif) or 'none'}, D/D_geom CI above 1 in "
           f"{_names(high) or 'none'} (seed's size: {SEED_SIZE['P5']})")
    steady, detail = None, ""
    sss = [ss for c in corpora if (ss := _steady(sets[c])) is not None]
    if corpora and len(sss) == len(corpora):
        sac = np.array([_f(s.autocorr.value) for s in sss])
        stm = np.array([_f(s.deficit.temporal.value) for s in sss])
        steady, srho, sp, sn = _p5_direction(sac, stm)
        detail = f"rho = {_fmt(srho, 2)}, p = {_fmt(sp, 3)} over {sn} corpora"
    return _row("P5", direction, size, ev + _steady_text(steady, detail), steady)


def p_rows(sets: Mapping[str, SetReport]) -> list[ScoreRow]:
    """The measurement seed's P1..P5 from the report's sets (corpora: every set but "pooled")."""
    corpora = [name for name in sets if name != "pooled"]
    return [p1(sets, corpora), p2(sets, corpora), p3(sets, corpora), p4(sets), p5(sets, corpora)]


def scorecard(sets: Mapping[str, SetReport], costs: Mapping[str, Mapping[str, Any]] | None = None,
              realized: dict[str, float] | None = None,
              replicates: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> list[ScoreRow]:
    """P1..P5 then Q1..Q6 from the report's sets (report.SetReport), as report.ScoreRow
    ("id", "prediction", "verdict", "evidence", "seed", "direction", "size", "seed_size", "steady_state").

    costs, realized: measured costs and realized speedups per corpus for Q3 (economics.q_rows); None:
    Q3 uses the memory-bound model at each corpus's r. replicates: per corpus the bootstrap replicates
    of alpha and E_true (economics.q_rows: the CIs of Q2's spread and Q3's ratio).
    """
    rows = p_rows(sets) + economics.q_rows(sets, costs=costs, realized=realized, replicates=replicates)
    n = fewest_prompts(sets)
    return [too_few(r, n) for r in rows] if n is not None and n < MIN_PROMPTS else rows


def fewest_prompts(sets: Mapping[str, SetReport]) -> int | None:
    """The fewest prompts of any corpus (every set but "pooled"; the pooled set alone when there is no
    other): every row reads the corpora, and the pooled set's bootstrap is stratified by corpus, so its
    smallest stratum bounds what its intervals can show. None without sets."""
    corpora = [s.n_streams for name, s in sets.items() if name != "pooled"] or [s.n_streams for s in sets.values()]
    return min(corpora) if corpora else None


def too_few(row: ScoreRow, n: int, needs: int = MIN_PROMPTS) -> ScoreRow:
    """A row below the minimum number of prompts (SPEC 6 "Too few prompts"): the verdict reads "too few
    prompts (n = K in a corpus; needs M per corpus)", verdict_kind "too_few_prompts", direction and size inconclusive (n/a stays
    n/a), and the evidence keeps its numbers after those words."""
    words = vd.too_few_text(n, needs)
    ev = row.evidence[len(row.verdict) + 2:] if row.evidence.startswith(row.verdict + ": ") else row.evidence
    # the outcomes the evidence names (its size, its steady state) are not judged either; the numbers stay
    ev = re.sub(r"\bsize (holds|not reproduced|inconclusive)\b", "size not judged", ev)
    ev = re.sub(rf"(steady state \(t >= {STEADY_FROM}\)): (holds|falsified|inconclusive)\b", r"\1: not judged", ev)
    return dataclasses.replace(row, verdict=words, verdict_kind=vd.TOO_FEW, evidence=f"{words}: {ev}",
                               direction=vd.INCONCLUSIVE if row.direction != vd.NA else vd.NA,
                               size=vd.INCONCLUSIVE if row.size != vd.NA else vd.NA,
                               steady_state=None if row.steady_state is None else vd.INCONCLUSIVE)


def mark_borderline(rows: list[ScoreRow], verdicts_by_seed: Mapping[int, Mapping[str, str]]) -> list[ScoreRow]:
    """Mark each row whose verdict differs across bootstrap seeds (SPEC 4: seeds 0..4) as borderline,
    with every seed's verdict (`seed_verdicts` {seed: verdict} and a line in the evidence). Rows absent
    from a seed's verdicts (not recomputed there) are left unmarked."""
    for r in rows:
        per = {s: v[r.id] for s, v in verdicts_by_seed.items() if r.id in v}
        if not per:
            continue
        r.seed_verdicts = {str(s): v for s, v in sorted(per.items())}
        r.borderline = len(set(per.values())) > 1
        if r.borderline:
            r.evidence += "; borderline across bootstrap seeds: " + ", ".join(f"seed {s} {v}" for s, v in sorted(per.items()))
    return rows
