"""What the report (core/report/analysis.py) asks of this package: a set's engine settings from its streams,
its bootstrap weights and the shown profile's costs, and the calibration table from the sets'
decision checks. The costs are the ones the set's decision uses (the same curve, the same replicates,
the same "mixed costs" rule), so a fixed g's prediction equals the decision's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from specterm.core.params import GAMMA_MAX
from specterm.core.report.types import POOLED, CalibrationRow, DecisionHW, EngineSetting, SetReport
from specterm.core.settings.calibration import Check, calibration_rows
from specterm.core.settings.engine_policies import Models, engine_settings
from specterm.core.settings.speedup import block_costs, stack

if TYPE_CHECKING:
    from specterm.core.decide.hardware import CostCurve, RunCostUncertainty
    from specterm.core.decide.hardware.profiles import Profile
    from specterm.core.store import Run, Stream

HEURISTIC_ROOM = 64  # depths laid out for the heuristic schedule, which grows past the timed curve
DRAFT_KINDS = ("model", "layers", "prompt-lookup", "ngram")


def _spec(model: Any) -> str:
    if isinstance(model, dict):
        for key in ("spec", "path", "name"):
            if isinstance(model.get(key), str) and model[key]:
                return str(model[key])
    return model if isinstance(model, str) and model else "MODEL"


def draft_kind(meta: Mapping[str, Any]) -> str:
    """SPEC 7 run.json draft.kind, or what older runs imply: a "layers" source is the target's own layers."""
    draft = meta.get("draft")
    if isinstance(draft, dict):
        kind = draft.get("kind")
        if isinstance(kind, str) and kind in DRAFT_KINDS:
            return kind
        spec = draft.get("spec")
        if draft.get("source") == "layers" or (isinstance(spec, str) and spec.startswith("layers:")):
            return "layers"
    return "model"


def models_of(meta: Mapping[str, Any]) -> Models:
    """The target and draft as the run names them, and the draft's kind."""
    return Models(target=_spec(meta.get("target")), draft=_spec(meta.get("draft")), kind=draft_kind(meta))


def set_engine_settings(members: Sequence[tuple[Stream, int]], runs: Sequence[Run],
                        hw: Sequence[tuple[CostCurve | None, Any]], unc: Sequence[RunCostUncertainty],
                        W: np.ndarray | None, decision: DecisionHW | None, r_fallback: float,
                        profile: Profile | None = None) -> dict[str, EngineSetting]:
    """SPEC 7 `engine_settings` of one set (engines.engine_settings) on the costs its decision uses."""
    if not members:
        return {}
    idx = sorted({i for _, i in members})
    curve, reps = hw[idx[0]][0], unc[idx[0]].reps
    costs = [runs[i].meta.get("cost") for i in idx]
    if len(idx) > 1 and any(c != costs[0] for c in costs[1:]):
        curve, reps = None, None  # the decision's rule: different cost curves give no single hardware decision
    limit = int(curve.gammas.max()) if curve is not None else GAMMA_MAX
    table = block_costs(curve, reps if curve is not None else None, max(limit, HEURISTIC_ROOM), r_fallback)
    s = stack([m.a for m, _ in members],
              [None if m.draft_conf is None else m.analysed(m.draft_conf) for m, _ in members])
    where = (profile.label() if profile is not None and curve is not None
             else "this hardware" if curve is not None else "the memory-bound reference (costs not measured)")
    models = [models_of(runs[i].meta) for i in idx]
    return engine_settings(s, W, table, models[0], where, decision, depth_limit=limit)


SETTINGS_CONFIRMATIONS_KEY = "settings_confirmations"  # run.json: `specterm confirm --settings` records


def settings_checks(meta: Mapping[str, Any]) -> list[Check]:
    """The decision checks of a run's engine-settings confirmations (each row: the policy the engine was
    given, realized, and the policy's prediction interval for K prompts on the profile's costs)."""
    out = []
    records = meta.get(SETTINGS_CONFIRMATIONS_KEY)
    for rec in records if isinstance(records, list) else []:
        if not isinstance(rec, dict):
            continue
        for row in rec.get("results") or []:
            try:
                out.append(Check(engine=str(rec["engine"]), machine=str(rec["machine"]), drafter=str(rec.get("drafter", "model")),
                                 policy=f"settings: {row['policy']}", realized=float(row["realized"]),
                                 predicted=float(row["predicted"]), lo=float(row["pi"][0]), hi=float(row["pi"][1])))
            except (KeyError, TypeError, ValueError, IndexError):
                continue  # an incomplete row (a run stopped mid-corpus) is not a check
    return out


def calibration(sets: Mapping[str, SetReport], profiles: Mapping[str, tuple[str, str]],
                drafters: Mapping[str, str], extra: Sequence[Check] = ()) -> list[CalibrationRow]:
    """SPEC 7 `calibration` from every corpus's decision checks under every profile (the pooled set
    keeps no checks of its own) and `extra` checks (the engine-settings confirmations). `profiles`: id ->
    (engine name, machine label); `drafters`: id -> the drafter kind of the run the profile belongs to."""
    checks = list(extra)
    for name, rep in sets.items():
        if name == POOLED:
            continue
        for pid, d in rep.decision_by_profile.items():
            engine, machine = profiles.get(pid, ("unknown engine", d.machine or pid))
            for row in d.confirmed_history:
                pi = row.decision_predicted
                if pi is None or pi.value is None or pi.lo is None or pi.hi is None:
                    continue
                checks.append(Check(engine=engine, machine=machine, drafter=drafters.get(pid, "model"),
                                    policy=f"fixed g = {row.gamma}", realized=float(row.realized),
                                    predicted=float(pi.value), lo=float(pi.lo), hi=float(pi.hi)))
    return calibration_rows(checks)
