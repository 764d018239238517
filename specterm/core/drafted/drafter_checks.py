"""Decision checks of a drafter run's confirmations (run.json `drafter_confirmations`, `specterm confirm` on a
drafter run) for the calibration table (SPEC 6 "Intervals that cover"), built as the model decision check
(core/decide/hardware/confirmations.decision_check) is, with the drafter's costs (SPEC 2b):

    realized  = sum greedy seconds / sum drafter seconds over the K timed prompts of a corpus at g
    E-walk    = the set's streams WITHOUT the timed prompts (leave-out), each cut to the timed prompts'
                length n (as they were generated), walked at g on L_s and m_s (walk.py, the drafter's rule)
    value     = S_hw(g) = tokens c_decode / (sum_d blocks_d [c_verify(d) + o(d)] + blocks c_draft) on their
                sums, with the run's robust costs (d = min(g, m_s) drafted, d = 0: c_decode; o(d) the block
                overhead where the profile has it; costmodel.drafter_speedup_hw, as the drafter decision)
    PI        = 95% prediction interval for K new prompts: replicate b draws K leave-out streams with
                replacement (their tokens, blocks by d and blocks summed), prices them with cost replicate
                b (curve.cost_replicates) and multiplies by exp(sigma Z_b), the drift of costs between
                sessions on the machine (drift.py: machine_drift over the profile's machine's sessions;
                the stated default when it has fewer than two); percentiles 2.5 and 97.5

One check per record, corpus and g (every record: the calibration counts every confirmation, as the
model's confirmed_history). Its row: engine "<engine> <drafter kind>" ("hf prompt-lookup" for Hugging
Face's assisted generation), the machine of the costs the prediction used, the drafter's spec. Pure numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from specterm.core.decide.hardware.curve import CostCurve, cost_curve, cost_replicates
from specterm.core.decide.hardware.drift import drift_replicates, machine_drift
from specterm.core.drafted.walk import walk_streams
from specterm.core.decide import costmodel
from specterm.core.drafted.drafter_analysis import DrafterReport, DraftRule, analyse_drafter, drafter_streams, run_cost
from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED
from specterm.core.report.types import CalibrationRow
from specterm.core.settings.calibration import Check, calibration_rows
from specterm.core.store import Run, Stream

ENGINE_NAMES = {"transformers": "hf"}
"""The engine as the calibration table names it: Hugging Face's generate is "hf" (as the settings rows)."""
PRICED_BY = {"transformers": "torch"}
"""The engine whose cost profile prices a confirmation's decoder (Hugging Face's generate runs on torch). A
record whose decoder no profile of its engine prices (llama.cpp's n-gram decoder against a torch profile)
checks no decision of that engine: it is left out of the calibration, and the drafter report still lists it."""


def leave_out_sums(runs: list[np.ndarray], proposed: list[np.ndarray], n: np.ndarray, g: int, min_draft: int = 0,
                   caps: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens (N,), blocks (N,), blocks by drafted length d = 0..g (N, g + 1)) of each stream's walk at g."""
    walk = walk_streams(runs, proposed, n, np.array([g], dtype=np.int64), min_draft, caps)
    return (walk.tokens[:, 0].astype(np.float64), walk.blocks[:, 0].astype(np.float64),
            walk.by_drafted[:, 0, : g + 1].astype(np.float64))


def verify_by_drafted(c_decode: np.ndarray, c_verify: np.ndarray) -> np.ndarray:
    """[c_decode, c_verify(1), ..., c_verify(g)] per row: (B,) and (B, g) in, (B, g + 1) out."""
    return np.concatenate([np.asarray(c_decode, dtype=np.float64)[:, None], np.asarray(c_verify, dtype=np.float64)],
                          axis=1)


def prediction(t: np.ndarray, b: np.ndarray, H: np.ndarray, K: int, curve: CostCurve, cost: dict[str, Any], g: int,
               sigma: float, n_rep: int, seed: int) -> tuple[float, float | None, float | None]:
    """(value, lo, hi) of the module docstring for K prompts from the leave-out sums t, b, H (one row per stream)."""
    c_ver = verify_by_drafted(np.array([curve.c_decode]), np.array([[curve.verify_at(x) for x in range(1, g + 1)]]))[0]
    d_all = np.arange(g + 1)
    o_d = curve.overhead_on(d_all)
    value = float(costmodel.drafter_speedup_hw(t.sum(), H.sum(axis=0), b.sum(), curve.c_decode, c_ver,
                                               float(curve.c_draft), o_d))
    reps = cost_replicates(cost, n_rep, seed)
    if reps is None or n_rep <= 0:
        return value, None, None
    n = reps.c_decode.size
    idx = np.random.default_rng(seed).integers(0, t.size, size=(n, max(K, 1)))
    cols = np.searchsorted(reps.gammas, np.arange(1, g + 1))
    cv = verify_by_drafted(reps.c_decode, reps.c_verify[:, cols])
    S = costmodel.drafter_speedup_hw(t[idx].sum(axis=1), H[idx].sum(axis=1), b[idx].sum(axis=1), reps.c_decode, cv,
                                     reps.c_draft, reps.overhead_on(d_all) if o_d is not None else None)
    if sigma > 0:
        S = S * drift_replicates(sigma, n, seed)
    lo, hi = np.percentile(S, [2.5, 97.5])
    return value, float(lo), float(hi)


def drafter_checks(meta: dict[str, Any], streams: list[Stream], cost: dict[str, Any] | None, profile: str | None,
                   n_rep: int, seed: int) -> list[Check]:
    """Every decision check of the run's drafter confirmations (module docstring). `streams`: the run's, `cost`
    and `profile`: what the drafter decision reads (drafter_analysis.run_cost)."""
    from specterm.core.decide.hardware.profiles import run_profiles

    records = meta.get("drafter_confirmations")
    curve = cost_curve(cost) if cost else None
    if not isinstance(records, list) or curve is None or cost is None:
        return []
    timed_g = set(curve.gammas.tolist())
    got = meta.get("draft")
    draft: dict[str, Any] = got if isinstance(got, dict) else {}
    rule = DraftRule.of(draft)
    shown = next((p for p in run_profiles(meta) if p.id == profile), None)
    machine = shown.label() if shown is not None else "the run's costs (no profile)"
    sigma = _drift_sigma(meta, cost, profile)
    out = []
    for rec in records:
        if not isinstance(rec, dict):
            continue
        said = rec.get("engine")
        eng: dict[str, Any] = said if isinstance(said, dict) else {}
        name = str(eng.get("name") or "unknown engine")
        if shown is not None and shown.engine.get("name") != PRICED_BY.get(name, name):
            continue  # PRICED_BY: another engine's costs predict nothing about this decoder
        engine = f"{ENGINE_NAMES.get(name, name)} {draft.get('kind', 'drafter')}"
        prompts = [p for p in rec.get("prompts") or [] if isinstance(p, dict) and isinstance(p.get("spec"), dict)]
        for corpus in sorted({str(p.get("corpus")) for p in prompts}):
            mine = [p for p in prompts if p.get("corpus") == corpus]
            for g in sorted({int(k) for p in mine for k in p["spec"]}):
                if not all(x in timed_g for x in range(1, g + 1)):
                    continue  # the prediction needs c_verify(1..g) timed
                check = _check(mine, g, [s for s in streams if s.corpus == corpus], rule, curve, cost, sigma, n_rep, seed)
                if check is not None:
                    realized, value, lo, hi = check
                    out.append(Check(engine=engine, machine=machine, drafter=str(draft.get("spec")),
                                     policy=f"fixed g = {g}", realized=realized, predicted=value, lo=lo, hi=hi))
    return out


def _check(prompts: list[dict[str, Any]], g: int, streams: list[Stream], rule: Any, curve: CostCurve,
           cost: dict[str, Any], sigma: float, n_rep: int, seed: int) -> tuple[float, float, float, float] | None:
    timed = [p for p in prompts if str(g) in p["spec"]]
    try:
        # a row's own greedy seconds where it has them (llama.cpp: greedy scaled to that run's tokens)
        greedy = sum(float(p["spec"][str(g)].get("greedy_s", p["greedy_s"])) for p in timed)
        spent = sum(float(p["spec"][str(g)]["s"]) for p in timed)
    except (KeyError, TypeError, ValueError):
        return None  # an incomplete row is not a check
    ids = {p.get("id") for p in timed}
    n_cap = max((int(p.get("n") or 0) for p in timed), default=0) or None
    leave = [s for s in streams if s.id not in ids]
    if not timed or spent <= 0 or not leave:
        return None
    runs, proposed, n = drafter_streams(leave)
    caps = rule.caps(leave)
    if n_cap is not None:
        n = np.minimum(n, n_cap)
    keep = n > 0
    if not keep.any():
        return None
    pick = np.flatnonzero(keep).tolist()
    t, b, H = leave_out_sums([runs[i] for i in pick], [proposed[i] for i in pick], n[keep], g, rule.min_draft,
                             None if caps is None else [caps[i] for i in pick])
    value, lo, hi = prediction(t, b, H, len(timed), curve, cost, g, sigma, n_rep, seed)
    if lo is None or hi is None:
        return None
    return greedy / spent, value, lo, hi


def _drift_sigma(meta: dict[str, Any], cost: dict[str, Any], profile: str | None) -> float:
    """sigma of the machine whose costs predict (its profiles' sessions; the default with fewer than two)."""
    from specterm.core.decide.hardware.profiles import machine_sessions, run_profiles

    profiles = run_profiles(meta)
    shown = next((p for p in profiles if p.id == profile), None)
    sessions = machine_sessions(meta, shown, profiles) if shown is not None else [cost]
    return machine_drift(sessions).sigma


def run_calibration(runs: list[Run], boot: int, seed: int) -> list[CalibrationRow]:
    """The calibration rows of the runs' drafter confirmations, on the costs each run decides with."""
    checks = []
    for run in runs:
        cost, _, profile = run_cost(run)
        checks += drafter_checks(run.meta, run.streams, cost, profile, boot, seed)
    return calibration_rows(checks)


def with_calibration(runs: list[Run], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, seed: int = SEED) -> DrafterReport:
    """analyse_drafter's report of the runs with their confirmations' calibration rows (what `specterm report`
    and the TUI show)."""
    rep = analyse_drafter(runs, gamma=gamma, boot=boot, seed=seed)
    rep.calibration = run_calibration(runs, boot, seed)
    return rep
