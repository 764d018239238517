"""Hand-made report objects for rule tests (scorecard, economics, decide): a SetReport whose fields
the test names and whose other fields are empty, so a rule sees exactly the numbers the test chose."""

from __future__ import annotations

from typing import Any

from specterm.core.report.types import (
    Curve, Deficit, Depth, Estimate, OptimumRow, PolicyRow, RunLengths, SetReport,
)


def est(value: float | None, lo: float | None = None, hi: float | None = None) -> Estimate:
    """Estimate(value, [lo, hi])."""
    return Estimate(value=value, ci=[lo, hi])


def est3(v: tuple[float | None, float | None, float | None]) -> Estimate:
    """Estimate from a (value, lo, hi) triple."""
    return est(*v)


def curve(gamma: list[int], E_true: list[float | None], E_iid: list[float | None] | None = None) -> Curve:
    """E curves over `gamma` (E_iid None where not given; no CIs)."""
    return Curve(gamma=list(gamma), E_true=list(E_true), E_iid=list(E_iid) if E_iid is not None else [None] * len(gamma),
                 E_true_ci=[[None, None] for _ in gamma])


def optimum(r: float, gamma_true: int | None, gamma_iid: int | None, measured: bool = False) -> OptimumRow:
    return OptimumRow(r=r, gamma_true=gamma_true, gamma_iid=gamma_iid, measured=measured)


def policy(name: str, params: dict[str, Any], v: float | None, lo: float | None, hi: float | None) -> PolicyRow:
    """A policy row with only T / T_best_fixed (what Q4 reads)."""
    return PolicyRow(policy=name, params=params, vs_best_fixed=est(v, lo, hi))


def make_set(**fields: Any) -> SetReport:
    """A SetReport with `fields` set and every other field empty (0, None, [] or undefined estimates)."""
    base: dict[str, Any] = dict(
        n_streams=0, n_positions=0, n_positions_gated_out=0,
        autocorr=Estimate(), autocorr_pooled=Estimate(), autocorr_simpson=Estimate(), autocorr_defined_streams=0,
        dispersion_ratio=Estimate(),
        runlengths=RunLengths(L=[], count=[], geom_expected=[]),
        deficit=Deficit(gamma=8, total=Estimate(), hetero=Estimate(), temporal=Estimate()),
        yield_ratio={},
        curve=curve([], []),
        depth=Depth(gamma=0, conditional=[], conditional_iid=[], unconditional=[], unconditional_iid=[], blocks=[]),
        optimum=[],
    )
    base.update(fields)
    return SetReport(**base)


def without_seed_check(doc: dict[str, Any]) -> dict[str, Any]:
    """A report's JSON (Report.to_dict) with what the borderline check writes taken out of every
    scorecard row: the mark, the seeds' verdicts and the evidence's closing clause that names them
    (the report analyse hands on_cis is the full report but for these)."""
    for row in doc["scorecard"]:
        row.pop("borderline", None)
        row.pop("seed_verdicts", None)
        row["evidence"] = row["evidence"].split("; borderline across bootstrap seeds: ")[0]
    return doc
