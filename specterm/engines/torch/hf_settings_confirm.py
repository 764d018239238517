"""`specterm confirm RUN --settings` (torch runs): the Hugging Face settings specterm emits (SPEC 7
engine_settings.hf) set on the assistant's generation_config exactly as `specterm settings --engine hf`
prints them, and Hugging Face's own assisted generation timed against its plain greedy generation.

Per corpus: the report's hf answer on the profile of this machine (the policy it sets or, where the
verdict is "run without speculation", the best it could set); the first K prompts whose gate held, raw
greedy (no processors or warpers), both methods alternating on every other prompt. Every output is
checked against the stored y, and the target's forward calls (a pre-hook) against the replay's blocks.

    realized   = sum greedy s / sum assisted s over the K prompts
    predicted  = the policy's S on the corpus's other streams at the profile's stored costs, with its 95%
                 prediction interval for K prompts (core/settings/speedup.prediction_interval)

Stored in run.json "settings_confirmations" beside the llama.cpp ones (engine "hf"); the report's
calibration table counts each corpus as a decision check.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from specterm.core.errors import SpectermError
from specterm.core.decide.hardware import cost_curve, run_cost_uncertainty
from specterm.core.decide.hardware.profiles import decision_profile, profile_meta, run_engine
from specterm.core.decide.machine import this_machine
from specterm.core.params import BOOT, SEED
from specterm.core.settings import names as nm
from specterm.core.settings.engine_policies import hf_settings
from specterm.core.settings.for_report import SETTINGS_CONFIRMATIONS_KEY, draft_kind
from specterm.core.settings.speedup import FIXED, HEURISTIC, Policy, block_costs, depth_counts, prediction_interval, stack


def _policy(es: Any) -> Policy:
    spec = {"policy": es.policy, "params": es.params} if es.speculate else (es.best or {})
    kind, p = spec.get("policy"), spec.get("params") or {}
    if kind == FIXED:
        return Policy(FIXED, int(p["gamma"]))
    if kind == HEURISTIC:
        return Policy(HEURISTIC, int(p["g0"]))
    raise SpectermError(f"the report's Hugging Face answer is {kind!r}, which this confirmation cannot run.")


def _generate(model: Any, ids: list[int], n: int, eos: set[int], assistant: Any | None) -> tuple[list[int], float, int]:
    """(tokens, seconds, target forward calls) of HF generate, raw greedy; with an assistant: assisted
    generation with the settings already on the assistant's generation_config."""
    import torch
    from transformers import GenerationConfig

    calls = [0]

    def count(*_: Any) -> None:
        calls[0] += 1

    # GenerationConfig.__init__(**kwargs) is unannotated in transformers: a third-party gap, not ours.
    cfg = GenerationConfig(  # type: ignore[no-untyped-call]
        do_sample=False, num_beams=1, max_new_tokens=n, eos_token_id=sorted(eos),
        pad_token_id=min(eos), temperature=None, top_p=None, top_k=None)
    x = torch.tensor([ids])
    hook = model.register_forward_pre_hook(count)
    try:
        with torch.inference_mode():
            t0 = time.perf_counter()
            kw = {"assistant_model": assistant} if assistant is not None else {}
            out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=cfg, **kw)
            dt = time.perf_counter() - t0
    finally:
        hook.remove()
    return out[0, len(ids):].tolist(), dt, calls[0]


def confirm_hf_settings(run_dir: Path, per_corpus: int = 2, corpora: tuple[str, ...] | None = None,
                        max_new_tokens: int | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    import torch

    from specterm.core.report.analysis import analyse
    from specterm.core.store import load_run, model_location
    from specterm.engines.torch import models_torch as M
    from specterm.engines.confirm_record import write_confirmation_key

    run = load_run(run_dir)
    machine = this_machine()
    prof = decision_profile(run.meta, machine)
    if prof is None or not prof.matches(machine, run_engine(run.meta)):
        raise SpectermError(f"this run has no cost profile of this machine; measure one with `specterm costs {run_dir}`.")
    view = profile_meta(run.meta, prof)
    drift = view["cost_drift"]  # the drift of costs between sessions on this machine its intervals carry
    curve, reps = cost_curve(view.get("cost")), run_cost_uncertainty(view, BOOT, SEED).reps
    log("analysing the run for its engine settings")
    report = analyse([run], boot=BOOT)
    torch.set_num_threads(machine.threads)
    specs = [M.resolve_spec(model_location(run.meta.get(role), None)) for role in ("target", "draft")]
    with M.gguf_parsed_once():
        tok = M.load_tokenizer(specs[0], False)
        dtype = M.resolve_dtype(str(run.meta.get("dtype") or "auto"), "cpu", any(s.kind == "gguf" for s in specs))
        log(f"loading target {specs[0].spec} and draft {specs[1].spec}")
        target, assistant = (M.load_model(s, "cpu", dtype, False) for s in specs)
    eos = M.eos_ids(target, tok)
    usable = [s for s in run.streams if s.prompt and s.y is not None and s.valid_len == s.n
              and (corpora is None or s.corpus in corpora)]
    record: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "engine": nm.HF,
                              "machine": prof.label(), "profile": prof.id, "drafter": draft_kind(run.meta),
                              "threads": machine.threads, "source_version": nm.HF_SOURCE.version,
                              "method": __doc__.split("\n\n")[1] if __doc__ else "", "results": []}
    index = None
    for corpus in sorted({s.corpus for s in usable}):
        es = report.sets[corpus].engine_settings.get(nm.HF)
        if es is None:
            continue
        policy = _policy(es)
        settings = hf_settings(policy)
        # as `specterm settings --engine hf` prints it (GenerationConfig.update is unannotated in transformers)
        assistant.generation_config.update(**settings)  # type: ignore[no-untyped-call]
        timed = [s for s in usable if s.corpus == corpus][:per_corpus]
        rows: list[dict[str, Any]] = []
        for i, s in enumerate(timed):
            ids = tok(s.prompt).input_ids
            y = [int(t) for t in s.y.tolist()][: max_new_tokens or None] if s.y is not None else []
            got: dict[str, tuple[list[int], float, int]] = {}
            for what in (("greedy", "assisted") if i % 2 == 0 else ("assisted", "greedy")):
                got[what] = _generate(target, ids, len(y), eos, assistant if what == "assisted" else None)
            (gt, gs, _), (at, asec, calls) = got["greedy"], got["assisted"]
            one = stack([s.a[: len(y)]], [None if s.draft_conf is None else s.analysed(s.draft_conf)[: len(y)]])
            rows.append({"id": s.id, "tokens": len(at), "greedy_s": gs, "spec_s": asec, "target_calls": calls,
                         "replay_blocks": int(depth_counts(one, policy).sum()), "identical": at == y and gt == y})
            log(f"{corpus} {s.id}: greedy {gs:.2f} s, assisted ({policy.describe()}) {asec:.2f} s, {calls} target calls "
                f"(replay {rows[-1]['replay_blocks']}), {'identical' if rows[-1]['identical'] else 'DIFFERENT'}")
        if not rows:
            continue
        others = [x for x in run.streams if x.corpus == corpus and x.id not in {r["id"] for r in rows}]
        costs = block_costs(curve, reps, max(int(curve.gammas.max()) if curve is not None else 32, 64), 0.2)
        leave = stack([x.a for x in others], [None if x.draft_conf is None else x.analysed(x.draft_conf) for x in others])
        value, pi = prediction_interval(leave, policy, costs, len(rows), BOOT, SEED, drift["sigma"])
        realized = sum(r["greedy_s"] for r in rows) / sum(r["spec_s"] for r in rows)
        record["results"].append({"corpus": corpus, "policy": policy.describe(), "settings": settings,
                                  "speculate": es.speculate, "prompts": len(rows), "realized": realized,
                                  "predicted": value, "pi": list(pi), "drift": drift,
                                  "in_pi": pi[0] is not None and pi[1] is not None and pi[0] <= realized <= pi[1],
                                  "rows": rows, "report_predicted": es.predicted.to_dict()})
        index = write_confirmation_key(run_dir, SETTINGS_CONFIRMATIONS_KEY, record, index)
        log(f"{corpus}: realized {realized:.2f}x, predicted {value:.2f}x [{pi[0]:.2f}, {pi[1]:.2f}] for {len(rows)} prompts")
    record["complete"] = True
    write_confirmation_key(run_dir, SETTINGS_CONFIRMATIONS_KEY, record, index)
    return record
