"""The calibration table (SPEC 6 "Intervals that cover", SPEC 7 `calibration`). Pure.

A decision check is one `specterm confirm` row of a corpus: the realized speedup on K timed prompts
beside the decision's 95% prediction interval for K new prompts of that corpus (leave-out E, the
run's costs; hardware.decision_check). Per engine, machine and drafter kind:

    checks        the decision checks
    in_pi         how many realized speedups fell inside their interval
    coverage      in_pi / checks (a 95% interval should cover about 95%)
    median_ratio  median of realized / predicted (the interval's point)
    ratio_range   [min, max] of realized / predicted

Coverage below 95% beyond chance is a defect of the model, shown as such: the reading names the
one-sided binomial probability of so few inside under 95% coverage, P(X <= in_pi), X ~ Bin(checks,
0.95), and calls the interval too narrow when it is below 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from specterm.core.streams.estimate import num
from specterm.core.report.types import CalibrationRow

NOMINAL = 0.95
DEFECT_P = 0.05


@dataclass(frozen=True)
class Check:
    """One decision check: where it ran, what was timed, realized and the interval's point and bounds."""

    engine: str
    machine: str
    drafter: str
    policy: str
    realized: float
    predicted: float
    lo: float
    hi: float

    @property
    def inside(self) -> bool:
        return self.lo <= self.realized <= self.hi

    @property
    def ratio(self) -> float:
        return self.realized / self.predicted


def binomial_below(k: int, n: int, p: float = NOMINAL) -> float:
    """P(X <= k), X ~ Bin(n, p)."""
    return float(sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(0, k + 1)))


def reading(checks: int, in_pi: int, median_ratio: float | None) -> str:
    """One sentence on a row: coverage against 95%, and which way realized leans."""
    if checks == 0:
        return "no decision checks"
    p = binomial_below(in_pi, checks)
    cov = f"{in_pi} of {checks} inside their 95% prediction interval"
    lean = ""
    if median_ratio is not None:
        lean = (f"; realized runs {abs(median_ratio - 1) * 100:.0f}% {'below' if median_ratio < 1 else 'above'} "
                "the prediction at the median")
    if p < DEFECT_P:
        return f"{cov}: the interval is too narrow (P = {p:.3g} of so few under 95% coverage){lean}"
    if checks < 10:
        return f"{cov}: too few checks to judge the coverage{lean}"
    return f"{cov}: consistent with 95% coverage (P = {p:.2f}){lean}"


def calibration_rows(checks: Iterable[Check]) -> list[CalibrationRow]:
    """One row per (engine, machine, drafter), sorted by them (module docstring)."""
    groups: dict[tuple[str, str, str], list[Check]] = {}
    for c in checks:
        if not (math.isfinite(c.realized) and math.isfinite(c.predicted) and c.predicted > 0):
            continue
        groups.setdefault((c.engine, c.machine, c.drafter), []).append(c)
    rows = []
    for (engine, machine, drafter), cs in sorted(groups.items()):
        ratios = np.array([c.ratio for c in cs], dtype=np.float64)
        in_pi = sum(c.inside for c in cs)
        med = float(np.median(ratios))
        rows.append(CalibrationRow(
            engine=engine, machine=machine, drafter=drafter, checks=len(cs), in_pi=in_pi,
            coverage=num(in_pi / len(cs)), median_ratio=num(med),
            ratio_range=[num(float(ratios.min())), num(float(ratios.max()))],
            policies=sorted({c.policy for c in cs}), reading=reading(len(cs), in_pi, med)))
    return rows
