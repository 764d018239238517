"""The scorecard (SPEC 4): the measurement seed's P1-P5, then the economics seed's Q1-Q4
(economics.py), computed from a report's sets, never written by hand.

Corpora are every set but POOLED ("pooled"). Verdicts where the SPEC is silent (choices):

    P1 holds: per-stream p11-p10 CI lower bound > 0 in every corpus; falsified: some corpus CI lies
       entirely below 0; inconclusive otherwise (a CI that contains 0 or is undefined, or no corpus).
    P2 holds: D/D_geom CI lower bound > 1 in every corpus; falsified: some corpus CI lies entirely
       below 1 (under-dispersed); inconclusive otherwise.
    P3 on the pooled set and the fixed r grid 0.05..0.60 (measured r excluded, so runs compare):
       holds: g*_true > g*_iid at more than half of the grid; falsified: g*_true <= g*_iid at every r
       and < at some; inconclusive otherwise (or when g* is undefined).
    P4 holds: pooled temporal deficit CI lower bound > 0; falsified: CI upper bound < 0 (shuffling
       *lowers* the yield: no clustering cause); inconclusive: the CI contains 0 or is undefined.
    P5 inconclusive with < 3 corpora with defined values, or when a rank correlation is undefined
       (all values tied); holds: Spearman rho(autocorr, temporal deficit) > 0; falsified: rho <= 0.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from specterm.core import economics
from specterm.core.fmt import ci as ci_text
from specterm.core.fmt import fmt
from specterm.core.params import R_GRID
from specterm.core.report import MEASUREMENT, POOLED, Estimate, ScoreRow, SetReport

Sets = Mapping[str, SetReport]

PREDICTIONS = {
    "P1": "acceptance is autocorrelated",
    "P2": "run lengths are over-dispersed vs geometric",
    "P3": "the optimal draft length is larger than the i.i.d. choice",
    "P4": "an in-place shuffle isolates a temporal cause",
    "P5": "the effect scales with autocorrelation across corpora",
}


def _names(names: list[str]) -> str:
    return ", ".join(names)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rho (scipy.stats.spearmanr: Pearson correlation of average ranks); NaN when either side is constant."""
    import warnings

    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(stats.spearmanr(x, y).statistic)


def _row(pid: str, verdict: str, evidence: str) -> ScoreRow:
    return ScoreRow(id=pid, prediction=PREDICTIONS[pid], verdict=verdict, evidence=f"{verdict}: {evidence}",
                    seed=MEASUREMENT)


def _ci_rule(pid: str, sets: Sets, corpora: list[str], get: Callable[[SetReport], Estimate], bound: float,
             what: str) -> ScoreRow:
    """Every corpus CI above `bound` -> holds; some CI entirely below -> falsified; else inconclusive."""
    if not corpora:
        return _row(pid, "inconclusive", "no corpus to test")
    cis = {c: get(sets[c]).bounds() for c in corpora}
    above = [c for c, (lo, _) in cis.items() if lo > bound]
    below = [c for c, (_, hi) in cis.items() if hi < bound]
    spread = ", ".join(f"{c} {ci_text(get(sets[c]).ci)}" for c in cis)
    if below:
        return _row(pid, "falsified", f"{what} CI lies below {bound:g} in {_names(below)} ({spread})")
    if len(above) == len(corpora):
        los = [cis[c][0] for c in corpora]
        return _row(pid, "holds", f"{what} CI lower bound > {bound:g} in all {len(corpora)} corpora "
                                  f"(lower bounds {fmt(min(los))} to {fmt(max(los))})")
    rest = [c for c in corpora if c not in above]
    return _row(pid, "inconclusive", f"{what} CI contains {bound:g} or is undefined in {_names(rest)} ({spread})")


def p3(sets: Sets, corpora: list[str]) -> ScoreRow:
    def diffs(s: SetReport) -> np.ndarray:
        on_grid = [o for o in s.optimum if round(o.r, 2) == o.r and o.r in R_GRID]
        return np.array([o.gamma_true - o.gamma_iid for o in on_grid
                         if o.gamma_true is not None and o.gamma_iid is not None], dtype=np.int64)

    grid = f"r in [{R_GRID[0]:g}, {R_GRID[-1]:g}]"
    d = diffs(sets[POOLED]) if POOLED in sets else np.zeros(0, np.int64)
    if d.size == 0:
        return _row("P3", "inconclusive", "g*_true or g*_iid is undefined on the r grid")
    per_corpus = [c for c in corpora if (dc := diffs(sets[c])).size and (dc <= 0).all() and (dc < 0).any()]
    tail = f"; per corpus, g*_true <= g*_iid everywhere and < somewhere in {len(per_corpus)} of {len(corpora)}" if corpora else ""
    above, equal, below = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    if (d <= 0).all() and below:
        gap = -d[d < 0]
        span = f"{gap.min()}" if gap.min() == gap.max() else f"{gap.min()} to {gap.max()}"
        if equal:
            ev = f"g*_true <= g*_iid at every {grid}, below by {span} at {below} of {d.size}"
        else:
            ev = f"g*_true is {span} below g*_iid at every {grid}"
        return _row("P3", "falsified", ev + tail)
    if above > d.size / 2:
        gap = d[d > 0]
        span = f"{gap.min()}" if gap.min() == gap.max() else f"{gap.min()} to {gap.max()}"
        return _row("P3", "holds", f"g*_true is {span} above g*_iid at {above} of {d.size} {grid}" + tail)
    return _row("P3", "inconclusive", f"g*_true vs g*_iid over {d.size} {grid}: above at {above}, equal at {equal}, below at {below}" + tail)


def p4(sets: Sets) -> ScoreRow:
    if POOLED not in sets:
        return _row("P4", "inconclusive", "no pooled set")
    dfc = sets[POOLED].deficit
    t = dfc.temporal
    lo, hi = t.bounds()
    ev = f"pooled temporal deficit at gamma={dfc.gamma} is {fmt(t.value)} {ci_text(t.ci)}"
    if lo > 0:
        return _row("P4", "holds", ev + ", CI above 0")
    if hi < 0:
        return _row("P4", "falsified", ev + ", CI below 0: shuffling lowers the yield")
    return _row("P4", "inconclusive", ev + ", CI contains 0 or is undefined")


def _value(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def p5(sets: Sets, corpora: list[str]) -> ScoreRow:
    ac = np.array([_value(sets[c].autocorr.value) for c in corpora])
    tm = np.array([_value(sets[c].deficit.temporal.value) for c in corpora])
    ok = np.isfinite(ac) & np.isfinite(tm)
    cis = [sets[c].deficit.temporal.bounds() for c in corpora]
    excl = [c for c, (lo, hi) in zip(corpora, cis) if lo > 0 or hi < 0]
    tail = f"; temporal CI excludes 0 in {len(excl)} of {len(corpora)} corpora"
    if ok.sum() < 3:
        return _row("P5", "inconclusive", f"needs at least 3 corpora with defined values, has {int(ok.sum())}{tail}")
    rho = spearman(ac[ok], tm[ok])
    ev = f"Spearman rho(autocorr, temporal deficit) = {fmt(rho, 2)} over {int(ok.sum())} corpora{tail}"
    if not np.isfinite(rho):
        return _row("P5", "inconclusive", ev + " (all values tied)")
    return _row("P5", "holds" if rho > 0 else "falsified", ev)


def scorecard(sets: Sets, costs: Mapping[str, Mapping[str, object]] | None = None,
              realized: Mapping[str, float] | None = None) -> list[ScoreRow]:
    """The rows P1..P5 then Q1..Q4 (report.ScoreRow: id, prediction, verdict, evidence, seed) from the report's sets.

    costs, realized: measured costs and realized speedups per corpus for Q3 (economics.q_rows); None:
    Q3 uses the memory-bound model at each corpus's r.
    """
    return p_rows(sets) + economics.q_rows(sets, costs=costs, realized=realized)


def p_rows(sets: Sets) -> list[ScoreRow]:
    """The measurement seed's P1..P5 from the report's sets."""
    corpora = [name for name in sets if name != POOLED]
    return [
        _ci_rule("P1", sets, corpora, lambda s: s.autocorr, 0.0, "per-stream p11-p10"),
        _ci_rule("P2", sets, corpora, lambda s: s.dispersion_ratio, 1.0, "D/D_geom"),
        p3(sets, corpora),
        p4(sets),
        p5(sets, corpora),
    ]
