"""The best policy each serving engine can express, in its own words (SPEC 7 `engine_settings`).

What each engine can be told (names.py has the names and where they were read):

    llama.cpp   fixed g (--spec-draft-n-max g, --spec-draft-p-min 0) or a confidence stop
                (--spec-draft-p-min tau: the refused token is not proposed) up to g_max
    hf          fixed g (schedule "constant") or the heuristic schedule from g0 ("heuristic_transient":
                restarted every call, as the replay restarts every prompt), set on the assistant's
                generation_config; assistant_confidence_threshold 0.0 (a fixed threshold cannot be set:
                transformers adapts it whenever scikit-learn is installed)
    vllm        fixed g (num_speculative_tokens)
    sglang      fixed g (a STANDALONE chain: --speculative-num-steps g, topk 1, g + 1 draft tokens)

For each engine every candidate (CANDIDATE_TAUS x g_max, g0, g within the profile's timed draft
lengths) is replayed on the set's streams and priced on the shown profile's costs (speedup.py); the
candidate with the largest point estimate wins (ties: the earlier, simpler one: fixed before the
others, smaller g first). Choosing among candidates on the same prompts flatters the winner a
little; its interval does not account for the choice, and the notes say so when an adaptive
policy wins. The verdict is SPEC 6's, on the winner's interval: lo > 1 speculate with these
settings; otherwise "run without speculation" (hi < 1: it does not pay; else no reliable gain), and
the set's decision's "too few prompts" carries over.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.streams.estimate import num
from specterm.core.decide.hardware.decision import DO_NOT, SPECULATE, verdict_kind
from specterm.core.report.types import DecisionHW, EngineSetting, Estimate
from specterm.core.settings import names as nm
from specterm.core.settings.speedup import (FIXED, HEURISTIC, STOP, BlockCosts, Policy,
                                            PolicySpeedup, Streams, depth_counts, point_speedup, policy_speedup)

CANDIDATE_TAUS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
TOO_FEW = "too_few_prompts"


@dataclass(frozen=True)
class Models:
    """What the commands name: the target and draft as the run names them, and the draft's kind."""

    target: str
    draft: str
    kind: str = "model"  # model | layers | prompt-lookup | ngram


def candidates(engine: str, depth_limit: int, with_conf: bool) -> list[Policy]:
    """The policies `engine` can express, simplest first (module docstring)."""
    gs = range(1, depth_limit + 1)
    out = [Policy(FIXED, g) for g in gs]
    if engine == nm.LLAMA_CPP and with_conf:
        out += [Policy(STOP, g, tau) for tau in CANDIDATE_TAUS for g in gs]
    elif engine == nm.HF:
        # no confidence stop: transformers adapts assistant_confidence_threshold itself (an ROC fit over the
        # generation) whenever scikit-learn is installed, so a fixed threshold cannot be set (names.py)
        out += [Policy(HEURISTIC, g) for g in gs]
    return out


def _q(text: str) -> str:
    return shlex.quote(text)


def llama_settings(policy: Policy) -> dict[str, Any]:
    """llama.cpp's flags for a fixed g or a p_min stop (n_min 0: the replay never drops a short draft)."""
    tau = 0.0 if policy.kind == FIXED else float(policy.tau or 0.0)
    return {nm.LLAMA_SPEC_TYPE: nm.LLAMA_DRAFT_SIMPLE, nm.LLAMA_N_MAX: policy.gamma, nm.LLAMA_N_MIN: 0,
            nm.LLAMA_P_MIN: tau}


def hf_settings(policy: Policy) -> dict[str, Any]:
    """The assistant's GenerationConfig for a fixed g ("constant") or the heuristic from g0 (its per-call
    variant, which starts every generate() call from g0, as the replay starts every prompt); the
    threshold 0.0 turns the confidence stop and its adaptation off (the default 0.4 would run both)."""
    schedule = nm.HF_HEURISTIC if policy.kind == HEURISTIC else nm.HF_CONSTANT
    return {nm.HF_NUM_ASSISTANT_TOKENS: policy.gamma, nm.HF_SCHEDULE: schedule, nm.HF_CONFIDENCE: 0.0}


def vllm_settings(policy: Policy, draft: str) -> dict[str, Any]:
    return {nm.VLLM_METHOD: nm.VLLM_DRAFT_MODEL_METHOD, nm.VLLM_MODEL: draft, nm.VLLM_NUM_TOKENS: policy.gamma}


def sglang_settings(policy: Policy, draft: str) -> dict[str, Any]:
    return {nm.SGLANG_ALGORITHM: nm.SGLANG_STANDALONE, nm.SGLANG_DRAFT_MODEL: draft,
            nm.SGLANG_NUM_STEPS: policy.gamma, nm.SGLANG_TOPK: 1, nm.SGLANG_NUM_DRAFT_TOKENS: policy.gamma + 1}


def settings_for(engine: str, policy: Policy, models: Models) -> dict[str, Any]:
    """The engine's keys and values for `policy` (names.py)."""
    if engine == nm.LLAMA_CPP:
        return {nm.LLAMA_DRAFT_MODEL: models.draft, **llama_settings(policy)}
    if engine == nm.HF:
        return hf_settings(policy)
    if engine == nm.VLLM:
        return vllm_settings(policy, models.draft)
    if engine == nm.SGLANG:
        return sglang_settings(policy, models.draft)
    raise ValueError(f"unknown engine {engine!r}")


def _flags(settings: dict[str, Any]) -> str:
    return " ".join(f"{k} {_q(str(v))}" for k, v in settings.items())


def command_for(engine: str, settings: dict[str, Any], models: Models) -> str:
    """The command (or call) that runs the target with `settings` ({}: without speculation)."""
    if engine == nm.LLAMA_CPP:
        tail = f" {_flags(settings)}" if settings else ""
        return f"{nm.LLAMA_SERVER} {nm.LLAMA_MODEL} {_q(models.target)}{tail}"
    if engine == nm.HF:
        if not settings:
            return "model.generate(**inputs, do_sample=False)"
        kw = ", ".join(f"{k}={json.dumps(v)}" for k, v in settings.items())
        # transformers reads these from the assistant's own generation_config (candidate_generator.py), not
        # from generate()'s keyword arguments
        return (f"assistant_model.generation_config.update({kw}); "
                "model.generate(**inputs, assistant_model=assistant_model, do_sample=False)")
    if engine == nm.VLLM:
        tail = f" {nm.VLLM_FLAG} {_q(json.dumps(settings))}" if settings else ""
        return f"vllm serve {_q(models.target)}{tail}"
    if engine == nm.SGLANG:
        tail = f" {_flags(settings)}" if settings else ""
        return f"python -m sglang.launch_server --model-path {_q(models.target)}{tail}"
    raise ValueError(f"unknown engine {engine!r}")


def expressible(engine: str, kind: str) -> str | None:
    """None when `engine` can run a draft of this kind as specterm measured it; else why not."""
    if kind == "model":
        return None
    if kind == "layers":
        return ("the run's draft is the target's own first layers (layer-skip self-speculation), which cannot be "
                "given as a draft model")
    return f"no settings are written for a {kind} drafter yet"


def _estimate(p: PolicySpeedup) -> Estimate:
    return Estimate(value=num(p.value), ci=[num(p.ci[0]), num(p.ci[1])])


def _best(results: Sequence[PolicySpeedup]) -> PolicySpeedup | None:
    best = None
    for r in results:
        if r.value is not None and np.isfinite(r.value) and (best is None or best.value is None or r.value > best.value):
            best = r
    return best


def _verdict_text(engine: str, kind: str | None, best: PolicySpeedup, where: str, n_note: str | None) -> str:
    label = nm.SOURCES[engine].label
    est = _estimate(best)
    lo, hi = est.ci
    interval = (f"{best.value:.2f}x [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None
                else f"{best.value:.2f}x (no interval)")
    what = best.policy.describe()
    if kind == TOO_FEW:
        return f"{n_note or 'too few prompts'}: {label} with {what} would give {interval} on {where}"
    if kind == SPECULATE:
        return f"speculate on {where} with {what}: {interval}"
    if kind == DO_NOT:
        return f"run without speculation on {where}: the best {label} can be told, {what}, gives {interval}"
    return f"run without speculation on {where} (no reliable gain): the best {label} can be told, {what}, gives {interval}"


def engine_setting(engine: str, results: Sequence[PolicySpeedup], models: Models, where: str,
                   decision: DecisionHW | None = None, costs: BlockCosts | None = None,
                   candidates_n: int | None = None) -> EngineSetting:
    """One engine's answer from its candidates' speedups (module docstring)."""
    src = nm.SOURCES[engine]
    base = EngineSetting(engine=engine, policy="none", source_version=src.version, source=src.source,
                         command=command_for(engine, {}, models),
                         profile=decision.profile if decision is not None else None)
    why = expressible(engine, models.kind)
    if why is not None:
        base.verdict = f"no setting: {why}"
        return base
    best = _best(results)
    if best is None:
        base.verdict = "no positions in this set: nothing to set"
        return base
    fixed = _best([r for r in results if r.policy.kind == FIXED])
    kind = verdict_kind(best.value, best.ci)
    n_note = None
    if decision is not None and decision.verdict_kind == TOO_FEW:
        kind, n_note = TOO_FEW, decision.verdict.split(":", 1)[0]
    settings = settings_for(engine, best.policy, models)
    out = EngineSetting(engine=engine, policy=best.policy.kind, params=best.policy.params(),
                        predicted=_estimate(best), source_version=src.version, source=src.source,
                        verdict_kind=kind, verdict=_verdict_text(engine, kind, best, where, n_note),
                        fixed_gamma=fixed.policy.gamma if fixed is not None else None,
                        fixed_predicted=_estimate(fixed) if fixed is not None else None,
                        tokens_per_block=num(best.tokens_per_block), drafted_per_block=num(best.drafted_per_block),
                        profile=base.profile)
    if kind == SPECULATE:
        out.speculate, out.settings = True, settings
        out.command = command_for(engine, settings, models)
    else:
        out.policy, out.params, out.command = "none", {}, base.command
        out.best = {"policy": best.policy.kind, "params": best.policy.params(), "settings": settings}
    if best.policy.kind != FIXED:
        out.notes.append(f"{best.policy.describe()} was chosen among {candidates_n or len(results)} candidates on the same prompts; "
                         "its interval does not account for the choice")
    if costs is not None and costs.extrapolated is not None and best.drafted_per_block is not None and \
            best.policy.kind == HEURISTIC:
        out.notes.append(f"blocks of {costs.extrapolated} or more draft tokens are priced on the cost curve's line "
                         "(not timed)")
    if costs is not None and not costs.measured:
        out.notes.append("no measured costs: priced on the memory-bound reference")
    else:
        out.notes.append(f"priced on the costs of {where}; another machine or engine needs its own cost profile")
    if engine == nm.LLAMA_CPP:
        out.notes.append("greedy requests (temperature 0), as measured; the draft-simple speculator drafts greedily")
    return out


def engine_settings(s: Streams, W: np.ndarray | None, costs: BlockCosts, models: Models, where: str,
                    decision: DecisionHW | None = None, engines: Sequence[str] = nm.ENGINES,
                    depth_limit: int | None = None) -> dict[str, EngineSetting]:
    """SPEC 7 engine_settings of one set: every engine's candidates replayed once on the set's streams
    (a policy shared by several engines, fixed g, is replayed once) and priced on `costs`."""
    limit = depth_limit or (costs.width - 1)
    with_conf = s.conf is not None and bool(np.isfinite(s.conf).all())
    n = s.lengths
    tables: dict[Policy, np.ndarray] = {}
    points: dict[Policy, float | None] = {}
    priced: dict[Policy, PolicySpeedup] = {}

    def with_interval(p: Policy) -> PolicySpeedup:
        if p not in priced:
            priced[p] = policy_speedup(n, tables[p], costs, p, W)
        return priced[p]

    out: dict[str, EngineSetting] = {}
    for engine in engines:
        results: list[PolicySpeedup] = []
        if expressible(engine, models.kind) is None and s.bits.size:
            ranked: list[Policy] = []
            for p in candidates(engine, limit, with_conf):
                if p not in tables:
                    H = depth_counts(s, p)
                    if H.shape[1] > costs.width:
                        continue  # the heuristic outgrew the depths laid out (the caller sizes them)
                    tables[p], points[p] = H, point_speedup(n, H, costs, p)
                ranked.append(p)
            # intervals only for what is shown: the winner and the best fixed g (the ranking uses point values)
            best = _best_policy(ranked, points)
            fixed = _best_policy([p for p in ranked if p.kind == FIXED], points)
            results = [with_interval(p) for p in dict.fromkeys(x for x in (fixed, best) if x is not None)]
            out[engine] = engine_setting(engine, results, models, where, decision, costs, candidates_n=len(ranked))
        else:
            out[engine] = engine_setting(engine, results, models, where, decision, costs)
    return out


def _best_policy(ranked: Sequence[Policy], points: dict[Policy, float | None]) -> Policy | None:
    """The candidate with the largest point S (ties: the earlier)."""
    best, value = None, -np.inf
    for p in ranked:
        v = points.get(p)
        if v is not None and np.isfinite(v) and v > value:
            best, value = p, v
    return best
