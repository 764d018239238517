"""Confirmation records of run.json (`specterm confirm`, SPEC 6 "Confirmation"): parsing, and the
per (corpus, g) rows the report shows. Pure numpy."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.decide import costmodel
from specterm.core.streams.blockwalk import walk_table
from specterm.core.errors import SpectermError
from specterm.core.decide.hardware.curve import CostCurve, CostReplicates, cost_curve
from specterm.core.decide.hardware.drift import drift_replicates

CONFIRMATIONS_KEY = "confirmations"
BATCH_COST_KEY = "batch_cost"  # run.json: the costs by batch (engines/torch/costs_torch.measure_batch_costs)
_RESULT_FIELDS: dict[str, type] = {"corpus": str, "gamma": int, "prompts": int, "tokens": int, "greedy_s": float, "spec_s": float,
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
    predicted_corpus: float | None = None  # S_hw(g) with the corpus's E_true (all its streams)

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
    head: tuple[tuple[str, type], ...] = (("date", str), ("device", str), ("threads", int), ("results", list))
    for key, kind in head:
        if not _check_type(record.get(key), kind):
            raise SpectermError(f"{bad} ('{key}' missing or not a {kind.__name__}){fix}")
    results = []
    for i, row in enumerate(record["results"]):
        if not isinstance(row, dict):
            raise SpectermError(f"{bad} (results[{i}] is not an object){fix}")
        for key, field_type in _RESULT_FIELDS.items():
            if not _check_type(row.get(key), field_type):
                raise SpectermError(f"{bad} (results[{i}].{key} missing or not a {field_type.__name__}){fix}")
        if row["gamma"] < 1 or row["prompts"] < 1 or row["spec_s"] <= 0 or row["greedy_s"] <= 0 or row["predicted"] <= 0:
            raise SpectermError(f"{bad} (results[{i}] has a non-positive gamma, prompt count, time or prediction){fix}")
        pc: Any = row.get("predicted_corpus")
        results.append(ConfirmedResult(**{k: row[k] for k in _RESULT_FIELDS},
                                       predicted_corpus=float(pc) if pc is not None and _check_type(pc, float) else None))
    return Confirmation(date=record["date"], device=record["device"], threads=record["threads"],
                        complete=bool(record.get("complete", True)), results=results, record=record)


def latest_confirmation(meta: dict[str, Any], required: bool = False, where: str = "run.json") -> Confirmation | None:
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


def timing_rows(prompt_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-prompt rows as `summarize_results` sums them. A row with per-token greedy stamps
    (greedy_cum_s: a llama.cpp confirmation, whose speculative decoder emits its own number of tokens)
    becomes one row per g that times greedy over the T tokens that speculative run emitted (greedy's
    time to its T-th token, T = tokens_out); every other row passes unchanged."""
    out: list[dict[str, Any]] = []
    for p in prompt_rows:
        cum = p.get("greedy_cum_s")
        if not isinstance(cum, list) or not cum:
            out.append(p)
            continue
        for g, sp in p["spec"].items():
            t = min(int(sp["tokens_out"]), len(cum))
            out.append({"corpus": p["corpus"], "id": p.get("id"), "tokens": t, "greedy_s": cum[t - 1],
                        "greedy_identical": p.get("greedy_identical", True), "spec": {g: sp}})
    return out


def summarize_results(prompt_rows: list[dict[str, Any]], curve: CostCurve,
                      corpus_curves: dict[str, dict[int, tuple[float, float]]] | None = None) -> list[dict[str, Any]]:
    """Per (corpus, g) rows of a confirmation from its per-prompt rows (ratio of sums over prompts).

    Each prompt row: {"corpus", "tokens", "greedy_s", ["greedy_cpu_s"], "spec": {"<g>": {"s", ["cpu_s"],
    "target_calls", "blocks_walk", ["refeeds_walk"], "identical"}}}: blocks_walk / refeeds_walk are the
    blocks (and the blocks after a fully accepted one) of the exact walk of the stored stream at g.

        realized  = sum greedy_s / sum spec_s (wall time, SPEC 6); realized_cpu the same in CPU time
        E, phi    = sum tokens / sum blocks_walk, sum refeeds_walk / sum blocks_walk
        predicted = S_hw(g) with that E and phi on the curve's clock; ratio = realized / predicted,
                    ratio_cpu = realized_cpu / predicted
        predicted_corpus = S_hw(g) with the corpus's (E_true(g), phi(g)) from `corpus_curves`
        realized_steady = [sum (greedy_s - greedy_prefill_s) / sum (tokens - 1)]
                          / [sum (spec_s - first_block_s) / sum (tokens - first_block_tokens)]
                    the same ratio per token with each method's first step left out (the prompt's prefill:
                    greedy's first token, speculative's first block, which also prefills the draft);
                    ratio_steady = realized_steady / predicted (None unless every prompt row has the
                    three fields). S_hw is a steady-state rate and SPEC 6's realized includes the
                    prefills, so on short generations the two ratios differ by the prefills' share.
        predicted_insitu = S_hw(g) with that E (SPEC 6 block, no refeed term) and the costs of the forwards
                    these generations made, each timed (prompt rows' greedy_decode_forward_s_median, spec
                    verify_forward_s_median and draft_forward_s_median; medians over prompts):
                    E t1 / (tv + g d1); ratio_insitu = realized / predicted_insitu (None without them).
                    The cost-model check proper: the micro-benchmark's costs carry their own session
                    noise (`ratio`), the forwards timed inside the very generations do not.

    With an engine per-block term on the curve (llama.cpp), every S_hw uses the engine's block cost
    (costmodel.block_cost with c_draft_fwd(g)); predicted_engine repeats predicted_spec6 and
    predicted_without_engine_term is SPEC 6's block alone, for comparison.
    """
    acc: dict[tuple[str, int], dict[str, Any]] = {}
    for row in prompt_rows:
        for g_key, sp in row["spec"].items():
            a = acc.setdefault((row["corpus"], int(g_key)), dict(prompts=0, tokens=0, greedy_s=0.0, spec_s=0.0,
                                                                greedy_cpu=0.0, spec_cpu=0.0, cpu=True,
                                                                calls=0, blocks=0, refeeds=0, identical=True,
                                                                steady=[0.0, 0, 0.0, 0], has_steady=True,
                                                                fwd=([], [], [])))
            for lst, v in zip(a["fwd"], (row.get("greedy_decode_forward_s_median"), sp.get("verify_forward_s_median"),
                                         sp.get("draft_forward_s_median"))):
                if _check_type(v, float):
                    lst.append(float(v))
            first_s, first_n, pre = sp.get("first_block_s"), sp.get("first_block_tokens"), row.get("greedy_prefill_s")
            if _check_type(first_s, float) and _check_type(first_n, int) and _check_type(pre, float):
                st = a["steady"]
                st[0] += row["greedy_s"] - pre
                st[1] += row["tokens"] - 1
                st[2] += sp["s"] - first_s
                st[3] += row["tokens"] - first_n
            else:
                a["has_steady"] = False
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

    def s_hw(E: float, phi: float, g: int, engine: bool = True, overhead: bool = True) -> float:
        fwd = curve.draft_fwd_on([g]) if engine else None
        return float(costmodel.speedup_hw(np.array([E]), curve.c_decode, np.array([curve.verify_at(g)]), curve.c_draft,
                                np.array([g]), np.array([phi]), curve.refeed_extra, fwd,
                                curve.overhead_on([g]) if overhead else None)[0])

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
        gs, gn, ss, sn = a["steady"]
        steady = (gs / gn) / (ss / sn) if a["has_steady"] and min(gs, gn, ss, sn) > 0 else None
        t1, tv, d1 = (float(np.median(v)) if len(v) == a["prompts"] else None for v in a["fwd"])
        insitu = insitu_speedup(E, t1, tv, d1, g)
        out.append({
            "corpus": corpus, "gamma": g, "prompts": int(a["prompts"]), "tokens": int(a["tokens"]),
            "greedy_s": a["greedy_s"], "spec_s": a["spec_s"], "realized": realized,
            "predicted": pred, "ratio": realized / pred, "clock": curve.clock,
            "realized_cpu": realized_cpu, "ratio_cpu": None if realized_cpu is None else realized_cpu / pred,
            "realized_steady": steady, "ratio_steady": None if steady is None else steady / pred,
            "decode_forward_s_median": t1, "verify_forward_s_median": tv, "draft_forward_s_median": d1,
            "predicted_insitu": insitu, "ratio_insitu": None if insitu is None else realized / insitu,
            "predicted_corpus": pc,
            "predicted_spec6": s_hw(E, 0.0, g),
            "predicted_mb": float(costmodel.speedup_mb(np.array([E]), curve.r_mb, np.array([g]))[0]),
            "E_prompts": E, "refeed_share": phi, "tokens_per_call": a["tokens"] / a["calls"],
            "identical": bool(a["identical"]),
            "block_model_s": float(costmodel.block_cost(curve.verify_at(g), curve.c_draft, g, phi, curve.refeed_extra,
                                                        curve.draft_fwd_at(g), curve.overhead_at(g))),
        })
        if curve.block_overhead is not None:  # the whole block is the prediction; the same without o(g) beside it
            out[-1]["predicted_without_overhead"] = s_hw(E, phi, g, overhead=False)
        if curve.c_draft_fwd is not None:  # the engine's block is the prediction; SPEC 6's block beside it
            out[-1]["predicted_engine"] = out[-1]["predicted_spec6"]
            out[-1]["predicted_without_engine_term"] = s_hw(E, 0.0, g, engine=False)
    return out


def insitu_speedup(E: float, t1: float | None, tv: float | None, d1: float | None, g: int) -> float | None:
    """S_hw(g) = E t1 / (tv + g d1) at the costs of the forwards real decoding made (t1 a 1-token decode,
    tv a (g+1)-token verify, d1 a 1-token draft step, each a median timed inside the generations);
    None when any is missing (a llama.cpp or batched record, or one made before they were timed)."""
    if t1 is None or tv is None or d1 is None:
        return None
    return float(costmodel.speedup_hw(np.array([E]), t1, tv, d1, np.array([g]))[0])


def _row(r: dict[str, Any]) -> dict[str, Any]:
    """A SPEC 7 confirmed row from a stored result row: "predicted" is S_hw as the decision computes it
    (stored as predicted_engine by a llama.cpp confirmation, whose block cost has the engine term, else
    predicted_spec6; older rows: their "predicted"), "predicted_refeed" the refeed model (confirm's
    "predicted"); ratios realized / predicted, in wall and CPU time."""
    spec = (r["predicted_engine"] if _check_type(r.get("predicted_engine"), float)
            else r["predicted_spec6"] if _check_type(r.get("predicted_spec6"), float) else r["predicted"])
    refeed = r["predicted"]
    cpu = float(r["realized_cpu"]) if _check_type(r.get("realized_cpu"), float) else None
    steady = float(r["realized_steady"]) if _check_type(r.get("realized_steady"), float) else None
    # recomputed from the stored medians: records before 2026-12-01 09:00 stored a refeed-model predicted_insitu
    t1, tv, d1 = (float(r[k]) if _check_type(r.get(k), float) else None
                  for k in ("decode_forward_s_median", "verify_forward_s_median", "draft_forward_s_median"))
    E = r.get("E_prompts")
    insitu = insitu_speedup(float(E), t1, tv, d1, int(r["gamma"])) if E is not None and _check_type(E, float) else None
    return {"gamma": int(r["gamma"]), "predicted": float(spec), "realized": float(r["realized"]),
            "prompts": int(r["prompts"]), "identical": bool(r["identical"]),
            "ratio": float(r["realized"]) / float(spec), "predicted_refeed": float(refeed),
            "ratio_refeed": float(r["realized"]) / float(refeed), "realized_cpu": cpu,
            "ratio_cpu": None if cpu is None else cpu / float(spec),
            "ratio_cpu_refeed": None if cpu is None else cpu / float(refeed),
            "realized_steady": steady, "ratio_steady": None if steady is None else steady / float(spec),
            "predicted_insitu": insitu, "ratio_insitu": None if insitu is None else float(r["realized"]) / insitu,
            "tokens_per_call": float(r["tokens_per_call"])}


def confirmed_rows(conf: Confirmation, set_name: str) -> list[dict[str, Any]]:
    """SPEC 7 `decision_hw.confirmed` of one set: [{"gamma", "predicted", "realized", "prompts",
    "identical"} + ratio, predicted_refeed, ratio_refeed, realized_cpu, ratio_cpu, ...], sorted by gamma.

    A corpus takes its rows of the record; "pooled" sums every prompt of the record timed at each g
    (ratio of sums, the prediction from the pooled E and phi and the record's own cost curve).
    """
    if set_name != "pooled":
        rows = [r for r in conf.record["results"] if r["corpus"] == set_name]
        return [{**_row(r), "date": conf.date} for r in sorted(rows, key=lambda r: r["gamma"])]
    prompts = conf.record.get("prompts")
    curve = cost_curve(conf.record.get("cost"))
    if not isinstance(prompts, list) or not prompts or curve is None:
        return []
    try:
        pooled = summarize_results(timing_rows([{**p, "corpus": "pooled"} for p in prompts]), curve)
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
    return confirming(confs, set_name)[1]


def confirming(confs: list[Confirmation], set_name: str) -> tuple[Confirmation | None, list[dict[str, Any]]]:
    """(the record, its rows) that `confirmed_for_set` takes for a set; (None, []) when none timed it."""
    for conf in reversed(confs):
        rows = confirmed_rows(conf, set_name)
        if rows:
            return conf, rows
    return None, []


def timed_prompts(conf: Confirmation, set_name: str, gamma: int) -> list[dict[str, Any]]:
    """The prompt rows of a record that a set's confirmed row at `gamma` sums over."""
    prompts = conf.record.get("prompts")
    if not isinstance(prompts, list):
        return []
    return [p for p in prompts if isinstance(p, dict) and isinstance(p.get("spec"), dict) and str(gamma) in p["spec"]
            and (set_name == "pooled" or p.get("corpus") == set_name)]


def _pct(now: float, then: float) -> float:
    return 100.0 * (now / then - 1.0)


def decision_check(row: dict[str, Any], conf: Confirmation, set_name: str, streams: list[tuple[str, np.ndarray]],
                   curve: CostCurve, reps: CostReplicates | None, n_rep: int, seed: int,
                   drift: dict[str, Any] | None = None) -> dict[str, Any]:
    """SPEC 6's decision check of one confirmed row: what the run's decision predicts for K new prompts.

        E_out     = sum tokens / sum blocks at g over the set's streams WITHOUT the timed prompts
                    (leave-out; each stream cut to the timed prompts' length n, as they were generated)
        value     = S_hw(g) with E_out and the run's stored robust costs (`curve`; with its engine per-block
                    term c_draft_fwd(g) when it has one, here and in every replicate: costmodel)
        ci        = 95% prediction interval for K prompts: replicate b draws K leave-out streams with
                    replacement (E = their tokens / blocks) and pairs it with cost replicate b (`reps`),
                    times exp(sigma Z_b), the drift of costs between sessions on the machine (`drift`:
                    drift.Drift.as_dict(), the profile's cost_drift; sigma 0 without one)
        in_ci     = lo <= realized <= hi;  sign_held = (realized > 1) == (value > 1) (the report replaces it
                    at g_hw by the verdict's side: decision.verdict_sign_held; None for no reliable gain)
        cost_drift_pct = 100 (this session's robust cost / the run's - 1) for c_decode, c_verify(g), c_draft
        predicted_session_costs = S_hw(g) with E_out and this session's costs: how much of a miss the
                    cost drift explains (the prompts are the same, only the costs move)
        timed_context  = mean prompt + n/2 of the timed prompts (recorded by confirm), beside the run's
                         and this session's cost contexts

    streams: (id, analysed bits) of every stream of the set. Realized is the wall-clock ratio.
    """
    g = int(row["gamma"])
    timed = timed_prompts(conf, set_name, g)
    ids = {p.get("id") for p in timed}
    K = max(len(timed), 1)
    n_cap = max((int(p.get("tokens", 0)) for p in timed), default=0) or None
    # a stream whose gate failed at its first position has nothing analysed (no blocks): it is no
    # prompt the decision saw, and drawing it would divide by zero blocks
    leave = [b for b in (np.asarray(bits)[:n_cap] for sid, bits in streams if sid not in ids) if b.size]
    out: dict[str, Any] = {"decision_predicted": {"value": None, "ci": [None, None]}, "in_ci": None,
                           "sign_held": None, "leave_out_streams": len(leave), "K": len(timed),
                           "excluded": sorted(str(i) for i in ids), "cost_drift_pct": None,
                           "timed_context": None, "cost_context": conf.record.get("cost_context"),
                           "run_cost_context": curve.context, "predicted_session_costs": None,
                           **({"drift": dict(drift)} if drift else {})}
    sigma = float(drift["sigma"]) if drift and isinstance(drift.get("sigma"), (int, float)) else 0.0
    if not leave or g not in set(curve.gammas.tolist()):
        return out
    tokens, blocks = walk_table(leave, np.array([g]))
    t, b = tokens[:, 0], blocks[:, 0]
    value = float(costmodel.speedup_hw(t.sum() / b.sum(), curve.c_decode, curve.verify_at(g), curve.c_draft, g,
                                       c_draft_fwd=curve.draft_fwd_at(g), overhead=curve.overhead_at(g)))
    ci: list[float | None] = [None, None]
    if reps is not None and n_rep > 0:
        k = int(np.flatnonzero(reps.gammas == g)[0])
        idx = np.random.default_rng(seed).integers(0, len(leave), size=(min(n_rep, reps.c_decode.size), K))
        E_K = t[idx].sum(axis=1) / b[idx].sum(axis=1)
        n = idx.shape[0]
        S = costmodel.speedup_hw(E_K, reps.c_decode[:n], reps.c_verify[:n, k], reps.c_draft[:n], g,
                                 c_draft_fwd=reps.draft_fwd_col(k, n), overhead=reps.overhead_col(k, n))
        if sigma > 0:
            S = S * drift_replicates(sigma, n, seed)
        lo, hi = np.percentile(S, [2.5, 97.5])
        ci = [float(lo), float(hi)]
    realized = float(row["realized"])
    out["decision_predicted"] = {"value": value, "ci": ci}
    out["in_ci"] = None if ci[0] is None or ci[1] is None else bool(ci[0] <= realized <= ci[1])
    out["sign_held"] = bool((realized > 1.0) == (value > 1.0))
    session = cost_curve(conf.record.get("cost")) if isinstance(conf.record.get("cost"), dict) else None
    if session is not None and g in set(session.gammas.tolist()):
        out["predicted_session_costs"] = float(costmodel.speedup_hw(t.sum() / b.sum(), session.c_decode,
                                                                    session.verify_at(g), session.c_draft, g,
                                                                    c_draft_fwd=session.draft_fwd_at(g),
                                                                    overhead=session.overhead_at(g)))
        out["cost_drift_pct"] = {"c_decode": _pct(session.c_decode, curve.c_decode),
                                 "c_verify": _pct(session.verify_at(g), curve.verify_at(g)),
                                 "c_draft": _pct(session.c_draft, curve.c_draft), "clock": session.clock}
        s_fwd, r_fwd = session.draft_fwd_at(g), curve.draft_fwd_at(g)
        if s_fwd is not None and r_fwd is not None:
            out["cost_drift_pct"]["c_draft_fwd"] = _pct(s_fwd, r_fwd)
    ctx = [float(p["context"]) for p in timed if isinstance(p.get("context"), (int, float))]
    out["timed_context"] = float(np.mean(ctx)) if ctx else None
    return out


def batched_rows(confs: list[Confirmation], set_name: str) -> list[dict[str, Any]]:
    """The newest record's batched confirmation rows of a corpus (`confirm --batch B`), [] when none."""
    for conf in reversed(confs):
        rows = conf.record.get("batched_results")
        if isinstance(rows, list):
            mine = [r for r in rows if isinstance(r, dict) and r.get("corpus") == set_name]
            if mine:
                return [{**r, "date": conf.date} for r in mine]
    return []



def run_curve_and_confirmations(meta: dict[str, Any], where: str = "run.json") -> tuple[CostCurve | None, list[Confirmation]]:
    """A run's robust cost curve (None without measured c_decode) and its confirmation records."""
    return cost_curve(meta.get("cost")), confirmations(meta, where)

