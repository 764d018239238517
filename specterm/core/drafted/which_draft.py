"""Which draft? Runs of different drafters (a draft model, layers:K, prompt lookup, n-gram) for the same
target and prompts, side by side: each run's decision on this hardware per corpus (SPEC 7
`sets.<set>.drafters`) and the best per corpus.

Best: the highest S_hw(g_hw) of the set, where it is above 1; the margin says whether its CI lies above the
runner-up's point estimate ("clear") or not. A run whose costs were not measured has no S_hw and is never
best. Where no run's S_hw is above 1 none is best: plain decoding is (a drafter that never drafts at its
g_hw, as ngram-simple below its n-gram size, is plain decoding at S_hw = 1 exactly, not a drafter that pays).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from specterm.core.drafted.drafter_analysis import DrafterReport
from specterm.core.report.types import POOLED, CalibrationRow, Estimate, Record, Report, set_names
from specterm.core.store.modelkeys import model_key, model_label


@dataclass(kw_only=True)
class DrafterRow(Record):
    """One run's decision in one set (SPEC 7 sets.<set>.drafters[])."""

    run: str
    drafter: str
    gamma_hw: int | None = None
    speedup_hw: Estimate = dataclasses.field(default_factory=Estimate)
    verdict: str = ""
    verdict_kind: str | None = None


@dataclass(kw_only=True)
class DrafterEntry(Record):
    drafters: list[DrafterRow]
    best: str | None = None       # the run
    margin: str | None = None
    note: str | None = None       # pooled over different corpora: said, and no best named


@dataclass(kw_only=True)
class DraftComparison(Record):
    kind: str = "drafters"
    target: str | None = None
    sets: dict[str, DrafterEntry] = dataclasses.field(default_factory=dict)
    calibration: list[CalibrationRow] = dataclasses.field(default_factory=list)  # every compared run's decision checks

    def ordered_sets(self) -> list[tuple[str, DrafterEntry]]:
        return [(n, self.sets[n]) for n in set_names(self.sets)]


def rows_of_drafter_report(rep: DrafterReport, run: str) -> dict[str, DrafterRow]:
    return {name: DrafterRow(run=run, drafter=rep.drafter, gamma_hw=s.decision_hw.gamma_hw,
                             speedup_hw=Estimate(value=s.decision_hw.speedup_hw, ci=list(s.decision_hw.speedup_hw_ci)),
                             verdict=s.decision_hw.verdict, verdict_kind=s.decision_hw.verdict_kind)
            for name, s in rep.sets.items()}


def rows_of_model_report(rep: Report, run: str, drafter: str) -> dict[str, DrafterRow]:
    out = {}
    for name, s in rep.sets.items():
        d = s.decision_hw
        if d is None:
            out[name] = DrafterRow(run=run, drafter=drafter, verdict="no decision in this report")
            continue
        out[name] = DrafterRow(run=run, drafter=drafter, gamma_hw=d.gamma_hw,
                               speedup_hw=Estimate(value=d.speedup_hw if d.measured else None,
                                                   ci=list(d.speedup_hw_ci or [None, None]) if d.measured else [None, None]),
                               verdict=d.verdict or "", verdict_kind=d.verdict_kind)
    return out


def best_of(rows: list[DrafterRow]) -> tuple[str | None, str | None]:
    """(the run with the highest S_hw, the margin sentence) over rows with an S_hw; ties: the first."""
    scored = [r for r in rows if r.speedup_hw.value is not None]
    if not scored:
        return None, None
    ranked = sorted(scored, key=lambda r: -float(r.speedup_hw.value))  # type: ignore[arg-type]
    top = ranked[0]
    assert top.speedup_hw.value is not None
    if top.speedup_hw.value <= 1.0:
        return None, (f"none: no run's S_hw is above 1 (the highest, {top.drafter}'s, is {top.speedup_hw.value:.2f}x); "
                      "plain decoding is the best here")
    if len(ranked) == 1:
        return top.run, "the only run with measured costs"
    second = ranked[1]
    assert top.speedup_hw.value is not None and second.speedup_hw.value is not None
    ratio = top.speedup_hw.value / second.speedup_hw.value
    lo = top.speedup_hw.lo
    clear = lo is not None and lo > second.speedup_hw.value
    return top.run, (f"{top.drafter} {top.speedup_hw.value:.2f}x, {ratio:.2f} times the runner-up {second.drafter}'s "
                     f"{second.speedup_hw.value:.2f}x; "
                     + ("clear: its CI lies above the runner-up's S_hw" if clear
                        else "not clear: its CI reaches the runner-up's S_hw"))


def compare(rows_by_run: list[dict[str, DrafterRow]], target: str | None,
            calibration: list[CalibrationRow] | None = None) -> DraftComparison:
    """The comparison of the runs' rows, per set present in any run (each set lists the runs that have it).
    When the runs hold different corpora their pooled sets are different workloads: the pooled entry says so
    and names no best."""
    names = set_names({n for rows in rows_by_run for n in rows})
    corpora = [frozenset(n for n in rows if n != POOLED) for rows in rows_by_run]
    sets = {}
    for name in names:
        rows = [r[name] for r in rows_by_run if name in r]
        if name == POOLED and len(set(corpora)) > 1:
            sets[name] = DrafterEntry(drafters=rows, note="the runs pool different corpora: compare them per corpus")
            continue
        best, margin = best_of(rows)
        sets[name] = DrafterEntry(drafters=rows, best=best, margin=margin)
    return DraftComparison(target=target, sets=sets, calibration=list(calibration or []))


@dataclass(frozen=True)
class DrafterRuns:
    """One drafter's runs as the TUI holds them (loading.py): their names joined by "+", the key and name of
    their target, and their rows per set (rows_of_drafter_report)."""

    run: str
    drafter: str                            # its spec, e.g. "prompt-lookup:2"
    target: str                             # repr(model_key(target)): the runs compared share it
    target_label: str
    rows: dict[str, DrafterRow]
    calibration: list[CalibrationRow] = dataclasses.field(default_factory=list)  # DrafterReport.calibration


def beside_pair(drafters: list[DrafterRuns], model: Report | None, pair_meta: dict[str, Any] | None = None,
                pair_run: str = "") -> tuple[DraftComparison | None, list[str]]:
    """Which draft? as the Decide screen shows it: the drafter runs of the shown pair's target beside the
    pair's own decision (`model`, the report shown, of the runs `pair_run` whose run.json is `pair_meta`), by
    `compare` as `specterm report` does. With no pair (only drafter runs were opened) the drafters of the
    first one's target. Also the drafter runs left out: those of another target."""
    if model is not None and pair_meta is None:
        model = None
    target = repr(model_key(pair_meta.get("target"))) if model is not None and pair_meta is not None else (
        drafters[0].target if drafters else None)
    mine = [d for d in drafters if d.target == target]
    other = [d.run for d in drafters if d.target != target]
    if not mine:
        return None, other
    rows = [rows_of_model_report(model, pair_run, model_label(pair_meta.get("draft")))] if (
        model is not None and pair_meta is not None) else []
    return compare(rows + [d.rows for d in mine], mine[0].target_label, [c for d in mine for c in d.calibration]), other
