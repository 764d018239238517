"""`specterm confirm RUN`: does the predicted speedup happen on this hardware? (SPEC 6, Confirmation)

1. Load the run's models (streams.model_location, or --target/--draft; same device and dtype unless told) and take the
   first K prompts of each corpus whose stream passed the gate (prompt text and y from prompts.jsonl).
2. Re-measure the cost curve in this session (oracle/costs.py) at the mean context of the timed
   generations (prompt + n/2): `cost_repeats` rounds first, then one more round after every
   prompt, so prediction and reality share machine conditions (load on a shared box drifts).
3. Per corpus: g_hw = argmax S_hw with E_true of the corpus, g_iid = the same with E_iid(alpha), g_hw_refeed (the refeed model),
   plus every --gamma. Then, prompt by prompt, plain greedy decoding and real lossless speculative
   decoding at each of those g, the method order reversed on every other prompt; every output
   must equal the stored y (its first --max-new-tokens tokens).
4. Per (corpus, g): realized = sum greedy time / sum speculative time; predicted = S_hw(g) with
   E = tokens / blocks of the exact walk of these prompts' stored streams (so realized / predicted
   tests the cost model, not the prompt sample); predicted_corpus = S_hw(g) with the corpus's E_true.
   Checks stored beside: the same ratio in process CPU time (robust to other processes' load on a
   time-shared CPU); the forwards real decoding made, each timed (torch forward hooks): their
   medians against c_decode, c_verify(g), c_draft, and the S_hw they imply; 2-token draft forwards
   (after a fully accepted block) and Python overhead; per-block and per-step times; prefill times.

The record is appended to run.json's "confirmations" list (atomically, streams untouched) and
rewritten after every finished prompt with "complete": false, so Ctrl-C keeps finished prompts.
A run whose stored cost has no c_decode (measured before the cost model) gets this session's
costs as its "cost" (the old one kept in cost.earlier) when the device is the same.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core import costmodel
from specterm.core.blockwalk import E_iid as E_iid_formula
from specterm.core.blockwalk import set_yield
from specterm.core.costmodel import refeed_counts, refeed_share
from specterm.core.crossstack import first_divergence
from specterm.core.errors import SpectermError
from specterm.core.hardware import (
    BATCH_COST_KEY,
    CONFIRMATIONS_KEY,
    batch_costs,
    cost_curve,
    decision_hw,
    summarize_results,
)
from specterm.core.hardware.confirmations import insitu_speedup
from specterm.core.hardware.profiles import decision_profile
from specterm.core.machine import this_machine
from specterm.core.optimum import best_gamma
from specterm.core.progress import Progress, ProgressCallback, check_cancel
from specterm.core.store import (
    META_FILE,
    RunLock,
    Stream,
    check_unlocked,
    check_writable,
    hardware_info,
    load_run,
    model_key,
    model_location,
    new_meta,
    read_meta,
    write_meta_atomic,
)
from specterm.oracle.costs import BATCH_FIT_M, COST_GAMMAS, BatchGrid, context_ids, grid_record, reused_b1, session_rounds


@dataclass
class ConfirmConfig:
    run: Path
    per_corpus: int = 2
    gammas: tuple[int, ...] = ()          # timed in every corpus besides g_hw and g_iid
    corpora: tuple[str, ...] | None = None  # None: every corpus of the run
    device: str | None = None          # None: the run's device
    dtype: str | None = None           # None: the run's dtype
    max_new_tokens: int | None = None  # None: the whole stored y
    threads: int | None = None         # torch CPU threads (None: core.machine.default_threads: 1 on <= 2 cores)
    cost_repeats: int = 5                 # timed cost rounds before the generations (one more after each prompt)
    cost_gammas: tuple[int, ...] = COST_GAMMAS
    target: str | None = None          # None: the run's target, found by streams.model_location
    draft: str | None = None           # None: the run's draft, likewise
    decision_only: bool = False        # time only the run's decision g_hw (and --gamma), not this session's choices
    batch_costs: bool = False          # measure c_decode(B), c_verify(g, B), c_draft(B) and store them as the run's
    batch: int = 1                     # B > 1: batched confirmation, B prompts of a corpus decoded together
    interleave_costs: bool = True      # one more cost round after every prompt (off: only the rounds before)
    costs_only: bool = False           # with batch_costs: measure and store the costs by batch, no generations


@dataclass
class _Timed:
    tokens: list[int]
    seconds: float
    first_s: float                         # the first step / block (includes the prompt's prefill)
    step_s: list[float] = field(default_factory=list)  # later steps / blocks
    target_calls: int = 0
    draft_calls: int = 0
    cpu_s: float = 0.0                     # process CPU time
    forwards: list = field(default_factory=list)  # ForwardTimer records of this generation
    first_tokens: int = 1                  # tokens out after the first step / block


def _model_spec(entry: Any, role: str, override: str | None = None) -> str:
    """What to load the run's `role` model from: `override` (--target/--draft), else
    streams.model_location (a hub id or layers:K as recorded, or the file found by name and
    checksum under $SPECTERM_MODELS / ./models)."""
    if override is None and not isinstance(entry, dict):
        raise SpectermError(f"run.json names no {role} model; confirm needs a run made by `specterm run` (or pass --{role}).")
    return model_location(entry, override)


def select_streams(streams: list[Stream], per_corpus: int, corpora: tuple[str, ...] | None = None,
                   gate_held: bool = True) -> list[Stream]:
    """The first `per_corpus` streams of each corpus (sorted) that have prompt text and y, and with
    `gate_held` a gate of 1.000 (torch). Without it (llama.cpp) every stream qualifies: a llama.cpp
    run's gate falls below 1 at near-ties (batched teacher forcing vs serial decoding), and the
    speculative decoder verifies in batches too, so those streams are exactly the ones to check: each
    output is compared with y and the first divergence recorded beside the stream's first gate failure."""
    if per_corpus < 1:
        raise SpectermError("--per-corpus must be at least 1.")
    usable = [s for s in streams if s.prompt is not None and s.y is not None and s.n > 0
              and (s.valid_len == s.n or not gate_held)]
    if not usable:
        held = " with a passed gate" if gate_held else ""
        raise SpectermError(f"this run stores no prompt text and tokens y{held} (imported bits?); "
                            "confirm needs a run made by `specterm run`.")
    names = sorted({s.corpus for s in usable})
    if corpora is not None:
        missing = [c for c in corpora if c not in names]
        if missing:
            raise SpectermError(f"corpus {', '.join(missing)} is not in this run; choose from {', '.join(names)}.")
        names = [c for c in names if c in corpora]
    return [s for name in names for s in [x for x in usable if x.corpus == name][:per_corpus]]


def corpus_E(streams: list[Stream], gammas: np.ndarray) -> dict[str, tuple[np.ndarray, float, np.ndarray]]:
    """Per corpus: (E_true over gammas, alpha, phi over gammas) of its analysed streams, from the core's
    block walk (blockwalk.set_yield) and refeed share (costmodel.refeed_share)."""
    out = {}
    for name in sorted({s.corpus for s in streams}):
        bits = [s.a for s in streams if s.corpus == name and s.valid_len]
        if bits:
            E, alpha = set_yield(bits, gammas)
            out[name] = (E, alpha, refeed_share(bits, gammas))
    return out


def write_confirmation(run_dir: Path, record: dict[str, Any], index: int | None, cost: dict | None = None,
                       batch_cost: dict | None = None) -> int:
    """Put `record` at `index` of run.json's confirmations (append when None), atomically; returns its index.

    With `cost`, also make it the run's "cost" (the previous one is kept in cost.earlier).
    Only run.json is rewritten (temp file + rename) under the run lock (core/lock.py: a `specterm
    run --resume` or `repair` writing the same run meanwhile is refused, and vice versa);
    prompts.jsonl is never opened for writing.
    With `batch_cost`, also store it as the run's costs by batch (BATCH_COST_KEY).
    """
    with RunLock(run_dir):
        return _write_confirmation(run_dir, record, index, cost, batch_cost)


def _write_confirmation(run_dir: Path, record: dict[str, Any], index: int | None, cost: dict | None,
                        batch_cost: dict | None = None) -> int:
    meta = read_meta(run_dir)
    if batch_cost is not None:
        meta[BATCH_COST_KEY] = batch_cost
    records = meta.get(CONFIRMATIONS_KEY)
    if not isinstance(records, list):
        records = []
    if index is None or index >= len(records):
        records.append(record)
        index = len(records) - 1
    else:
        records[index] = record
    meta[CONFIRMATIONS_KEY] = records
    if cost is not None:
        old = dict(meta.get("cost") or {})
        new = dict(cost)
        if old:
            new["earlier"] = [*old.pop("earlier", []), old]
        meta["cost"] = new
    write_meta_atomic(run_dir, meta)
    return index


class ForwardTimer:
    """Wall time of every target and draft forward inside real decoding (torch forward hooks), so the
    micro-benchmark's costs can be checked against the forwards decoding really makes.

    A layer-skip draft is a shallow copy of the target and shares its hook dicts: hooks are
    registered once per distinct dict and tell the models apart by identity.
    """

    def __init__(self, target, draft):
        self.target = target
        self.records: list[tuple[str, int, float]] = []  # (role, tokens fed, seconds)
        self._pending: list[tuple[int, float]] = []
        self._handles = []
        self._cuda = target.device.type == "cuda" or draft.device.type == "cuda"
        seen: set[int] = set()
        for model in (target, draft):
            if id(model._forward_pre_hooks) in seen:
                continue
            seen.add(id(model._forward_pre_hooks))
            self._handles.append(model.register_forward_pre_hook(self._pre, with_kwargs=True))
            self._handles.append(model.register_forward_hook(self._post))

    def _sync(self) -> None:
        if self._cuda:
            import torch

            torch.cuda.synchronize()

    def _pre(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self._sync()
        self._pending.append((int(ids.shape[1]) if ids is not None else 0, time.perf_counter()))

    def _post(self, module, args, output):
        self._sync()
        n, t0 = self._pending.pop()
        self.records.append(("target" if module is self.target else "draft", n, time.perf_counter() - t0))

    def take(self) -> list[tuple[str, int, float]]:
        out, self.records = self.records, []
        return out

    def close(self) -> None:
        for h in self._handles:
            h.remove()


def _median_of(records, role: str, tokens: int) -> float | None:
    vals = [dt for r, n, dt in records if r == role and n == tokens]
    return statistics.median(vals) if vals else None


def confirm_run(config: ConfirmConfig, on_progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None, pair=None) -> dict[str, Any]:
    """Run the confirmation (see the module docstring); returns the record written to run.json.

    Raises `Cancelled` when `cancel` is set: the record on disk then holds every finished prompt.
    """
    import torch

    from specterm.oracle.costs import CostSampler
    from specterm.oracle.run import OracleConfig, encode_prompt, load_pair

    report = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    run_dir = Path(config.run)
    run = load_run(run_dir)
    check_unlocked(run_dir)  # before minutes of model loading and timing, as run --resume and repair do
    chosen = select_streams(run.streams, config.per_corpus, config.corpora)
    cost_gammas = np.array(sorted({int(g) for g in config.cost_gammas}), dtype=np.int64)
    if config.costs_only:  # the rounds only supply the batch grid's B = 1 column: its g, no further
        cost_gammas = cost_gammas[cost_gammas <= max(BATCH_FIT_M) - 1]
    extra = sorted({int(g) for g in config.gammas})
    if any(g < 1 or g not in cost_gammas for g in extra):
        raise SpectermError(f"--gamma must be among the measured draft lengths {cost_gammas.min()}..{cost_gammas.max()}.")
    if config.max_new_tokens is not None and config.max_new_tokens < 1:
        raise SpectermError("--max-new-tokens must be at least 1.")
    if config.threads is None:  # SPEC 6: 1 thread per forward on <= 2 cores (a 2-thread forward beside anything is a straggler)
        from specterm.core.machine import default_threads

        torch.set_num_threads(default_threads(os.cpu_count()))
    else:
        if config.threads < 1:
            raise SpectermError("--threads must be at least 1.")
        torch.set_num_threads(config.threads)
    meta = run.meta
    device = config.device or meta.get("device") or "auto"
    dtype = config.dtype or meta.get("dtype") or "auto"
    if pair is None:
        pair = load_pair(OracleConfig(target=_model_spec(meta.get("target"), "target", config.target),
                                      draft=_model_spec(meta.get("draft"), "draft", config.draft), prompts=[], out=run_dir,
                                      device=device, dtype=dtype), report)
    for role in ("target", "draft"):
        if model_key(pair.meta.get(role)) != model_key(meta.get(role)):
            raise SpectermError(f"the {role} model loaded now is not the one this run was made with (checksum differs); "
                                "restore the original file or re-run `specterm run`.")
    check_cancel(cancel)

    # What each generation compares against, and the exact walk's blocks at every measured g.
    items = []
    for s in chosen:
        assert s.prompt is not None and s.y is not None  # select_streams keeps only streams that have both
        n_cmp = s.n if config.max_new_tokens is None else min(s.n, config.max_new_tokens)
        ids = encode_prompt(pair.tokenizer, s.prompt)
        refeeds, blocks = refeed_counts(s.bits[:n_cmp], cost_gammas)
        items.append(dict(stream=s, ids=ids, y=s.y[:n_cmp].tolist(), n=n_cmp,
                          blocks={int(g): int(b) for g, b in zip(cost_gammas, blocks)},
                          refeeds={int(g): int(r) for g, r in zip(cost_gammas, refeeds)}))

    # Costs at the mean context of the timed generations (prompt + n/2).
    ctx_len = int(round(float(np.mean([len(it["ids"]) + it["n"] / 2 for it in items]))))
    ctx = context_ids(items[0]["ids"] + items[0]["y"], ctx_len)
    report(Progress("cost", f"measuring costs at context {ctx_len} ({config.cost_repeats} interleaved repeats)"))

    def on_measure(i, total, label, seconds):
        report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s", elapsed_s=time.perf_counter() - t_start))

    sampler = CostSampler(pair.target, pair.draft, ctx, cost_gammas.tolist(), on_measure=on_measure, cancel=cancel)
    t_costs = time.perf_counter()
    session_cost = session_rounds(sampler, config.cost_repeats, len(items) if config.interleave_costs else 0,
                                  "specterm confirm (rounds before the generations and one after every prompt)")

    cost = session_cost()
    curve = cost_curve(cost)  # g_hw and g_iid are chosen from the rounds before any generation
    # the run's decision on this machine: its cost profile's costs (SPEC 6; `specterm confirm` measures one first)
    here = decision_profile(meta, this_machine())
    run_curve = cost_curve(here.cost) if here is not None else None
    batch_record = here.batch_cost if here is not None else None
    grid = None
    grid_rounds_s = 0.0
    if config.batch_costs:
        rounds_s = time.perf_counter() - t_costs  # the g curve's rounds
        # B = 1 comes from the cost rounds just timed (same caches, context and clock), not timed again
        grid = BatchGrid(pair.target, pair.draft, ctx, on_measure=on_measure, cancel=cancel,
                         reuse=reused_b1(sampler.summary()),
                         prefilled={"target": sampler.quantities[0][2], "draft": sampler.quantities[1][2]})
        if config.costs_only or config.batch > 1 or not config.interleave_costs:
            report(Progress("cost", f"measuring costs by batch at context {ctx_len}"))
            batch_record = grid_record(grid.run_all(), rounds_s)
            grid = None
        else:  # timed in slices, one after every prompt (_time_generations), stored with the record
            report(Progress("cost", f"costs by batch at context {ctx_len}: {grid.total} forwards, timed in slices "
                                    f"after every prompt"))
            grid_rounds_s = rounds_s
        if config.costs_only:
            assert batch_record is not None
            with RunLock(run_dir):
                meta_now = read_meta(run_dir)
                meta_now[BATCH_COST_KEY] = batch_record
                write_meta_atomic(run_dir, meta_now)
            report(Progress("done", f"costs by batch stored in {run_dir / META_FILE} (whole measurement "
                                    f"{batch_record['whole_wall_s']:.1f} s wall); no generations (--costs-only)"))
            return {"batch_cost": batch_record, "results": [], "costs_only": True}
    run_batch = batch_costs(batch_record) if config.batch > 1 else None
    if config.batch > 1 and run_batch is None:
        raise SpectermError("a batched confirmation needs the run's costs by batch; add --batch-costs.")

    by_corpus = corpus_E(run.streams, cost_gammas)
    choices: dict[str, dict[str, Any]] = {}
    for name in sorted({it["stream"].corpus for it in items}):
        E_true, alpha, phi = by_corpus[name]
        d = decision_hw(cost_gammas, E_true, E_iid_formula(alpha, cost_gammas), curve, phi_true=phi)
        run_d = decision_hw(cost_gammas, E_true, None, run_curve) if run_curve is not None else d
        g_decision = run_d.gamma_hw
        if run_batch is not None:  # the decision at this batch: g_hw(B) of the run's batch costs
            if config.batch not in run_batch.batches.tolist():
                raise SpectermError(f"the run's batch costs have no batch {config.batch}; use one of "
                                    f"{', '.join(map(str, run_batch.batches.tolist()))}.")
            i = int(np.flatnonzero(run_batch.batches == config.batch)[0])
            E_b = set_yield([s.a for s in run.streams if s.corpus == name and s.valid_len], run_batch.gammas)[0]
            S_b = costmodel.speedup_hw(E_b, run_batch.c_decode[i], run_batch.c_verify[i], run_batch.c_draft[i],
                                       run_batch.gammas)
            g_decision = best_gamma(S_b, run_batch.gammas)
        session = set() if config.decision_only or config.batch > 1 else {d.gamma_hw, d.gamma_iid_hw, d.gamma_hw_refeed}
        gammas = sorted(g for g in {g_decision, *session, *extra} if g is not None)
        choices[name] = {k: getattr(d, k) for k in ("gamma_hw", "speedup_hw", "gamma_hw_refeed", "speedup_hw_refeed",
                                                    "gamma_iid_hw", "speedup_iid_hw", "gamma_mb", "speedup_mb")}
        choices[name].update(gammas=gammas, verdict=d.verdict, gamma_decision=g_decision,
                             decision_costs="the run's costs by batch, g_hw(B)" if run_batch is not None else "the run's stored costs")
    E_table = {name: {int(g): (float(e), float(p)) for g, e, p in zip(cost_gammas, by_corpus[name][0], by_corpus[name][2])}
               for name in choices}

    old_cost = meta.get("cost") or {}
    install_cost = pair.meta.get("device") == meta.get("device") and not old_cost.get("c_decode_s")
    record: dict[str, Any] = {
        "date": new_meta("")["created"],
        "specterm_version": meta.get("specterm_version"),
        "device": pair.meta.get("device", device),
        "dtype": pair.meta.get("dtype", dtype),
        "threads": int(torch.get_num_threads()),
        "hardware": hardware_info(),
        "load_avg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "per_corpus": config.per_corpus,
        "max_new_tokens": config.max_new_tokens,
        "batch": config.batch,
        "cost_context": ctx_len,
        "cost_context_rule": "mean over the timed prompts of prompt tokens + n/2 (n = tokens generated)",
        "run_cost_context": (meta.get("cost") or {}).get("context"),
        "complete": False,
        "method": ("per (corpus, g): realized = sum greedy s / sum speculative s over the same prompts, methods "
                   "alternating (order reversed every other prompt); predicted = S_hw(g) = E c_decode / (c_verify(g) + "
                   "g c_draft) with E = tokens / blocks of the exact walk of these prompts and this session's robust costs"),
        "cost": cost,
        "choices": choices,
        "prompts": [],
        "results": [],
    }
    index = write_confirmation(run_dir, record, None)

    timer = ForwardTimer(pair.target, pair.draft)
    try:
        keep_batch = batch_record if config.batch_costs and grid is None else None
        if config.batch > 1:
            return _time_batched(config, pair, run_dir, items, choices, record, index, sampler, session_cost,
                                 keep_batch, report, cancel, t_start, timer)
        return _time_generations(config, pair, run_dir, items, choices, E_table, record, index, sampler, session_cost,
                                 install_cost, timer, report, cancel, t_start, keep_batch, grid, grid_rounds_s)
    finally:
        timer.close()


def _time_generations(config, pair, run_dir, items, choices, E_table, record, index, sampler, session_cost,
                      install_cost, timer, report, cancel, t_start, batch_record=None, grid=None,
                      grid_rounds_s: float = 0.0) -> dict[str, Any]:
    """The timed part of `confirm_run`: warm-up, then every prompt's greedy and speculative generations.
    With `grid` (a BatchGrid not yet timed), one slice of it after every prompt: after prompt i of K the
    first ceil((i+1) T / K) of its T forwards are timed; it is stored as the run's costs by batch at the end
    (if the session is interrupted, an unfinished grid is not stored). grid_rounds_s: the wall seconds of
    the g curve's rounds before the generations."""
    from specterm.oracle import specdec

    cost = record["cost"]
    # Warm-up (not timed): one short greedy and one short speculative generation.
    first = items[0]
    specdec.greedy_generate(pair.target, first["ids"], 2, pair.eos, cancel=cancel)
    specdec.speculative_generate(pair.target, pair.draft, first["ids"], 2, pair.eos,
                                 specdec.FixedGamma(choices[first["stream"].corpus]["gammas"][0]), cancel=cancel)

    total = sum(1 + len(choices[it["stream"].corpus]["gammas"]) for it in items)
    done = 0
    gen_tokens = 0
    gen_time = 0.0

    def progress(phase, msg="", **kw):
        report(Progress(phase, msg, n_prompts=total, prompts_done=done,
                        tokens_per_s=gen_tokens / gen_time if gen_time > 0 else 0.0,
                        elapsed_s=time.perf_counter() - t_start, **kw))

    def run_greedy(it, label, idx) -> _Timed:
        stamps = []

        def on_token(k):
            stamps.append(time.perf_counter())
            progress("generating", prompt_index=idx, prompt_id=label, corpus=it["stream"].corpus, tokens=k,
                     max_new_tokens=it["n"])

        timer.take()
        t0, c0 = time.perf_counter(), time.process_time()
        out = specdec.greedy_generate(pair.target, it["ids"], it["n"], pair.eos, cancel=cancel, on_token=on_token)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        steps = np.diff([t0] + stamps).tolist()
        return _Timed(tokens=out, seconds=dt, first_s=steps[0], step_s=steps[1:], target_calls=len(out), cpu_s=dc,
                      forwards=timer.take())

    def run_spec(it, g, label, idx) -> _Timed:
        stamps: list[float] = []
        first_tokens: list[int] = []  # tokens out after the first block

        def on_block(res):
            stamps.append(time.perf_counter())
            if not first_tokens:
                first_tokens.append(len(res.tokens))
            progress("generating", prompt_index=idx, prompt_id=label, corpus=it["stream"].corpus,
                     tokens=len(res.tokens), max_new_tokens=it["n"], bits=specdec.spec_bits(res, len(res.tokens)))

        timer.take()
        t0, c0 = time.perf_counter(), time.process_time()
        res = specdec.speculative_generate(pair.target, pair.draft, it["ids"], it["n"], pair.eos,
                                           specdec.FixedGamma(g), on_block=on_block, cancel=cancel)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        blocks = np.diff([t0] + stamps).tolist()
        return _Timed(tokens=res.tokens, seconds=dt, first_s=blocks[0], step_s=blocks[1:],
                      target_calls=res.target_calls, draft_calls=res.draft_calls, cpu_s=dc, forwards=timer.take(),
                      first_tokens=first_tokens[0])

    for idx, it in enumerate(items):
        s = it["stream"]
        methods: list[Any] = ["greedy", *choices[s.corpus]["gammas"]]
        if idx % 2:
            methods.reverse()
        row: dict[str, Any] = {"corpus": s.corpus, "id": s.id, "tokens": it["n"], "order": [str(m) for m in methods],
                               "prompt_tokens": len(it["ids"]), "context": len(it["ids"]) + it["n"] / 2, "spec": {}}
        for m in methods:
            check_cancel(cancel)
            label = f"{s.id} {'greedy' if m == 'greedy' else f'g={m}'}"
            progress("generating", f"{s.corpus}/{label}: generating {it['n']} tokens", prompt_index=idx,
                     prompt_id=label, corpus=s.corpus, max_new_tokens=it["n"])
            timed = run_greedy(it, label, idx) if m == "greedy" else run_spec(it, m, label, idx)
            mismatch = first_divergence(timed.tokens, it["y"])
            gen_time += timed.seconds
            gen_tokens += len(timed.tokens)
            done += 1
            fw = timed.forwards
            if m == "greedy":
                row.update(greedy_s=timed.seconds, greedy_cpu_s=timed.cpu_s, greedy_prefill_s=timed.first_s,
                           greedy_step_s_median=statistics.median(timed.step_s) if timed.step_s else None,
                           greedy_decode_forward_s_median=_median_of(fw, "target", 1),
                           greedy_forward_s_sum=sum(r[2] for r in fw),
                           greedy_identical=mismatch is None, greedy_first_mismatch=mismatch)
            else:
                row["spec"][str(m)] = {
                    "s": timed.seconds, "cpu_s": timed.cpu_s, "first_block_s": timed.first_s,
                    "first_block_tokens": timed.first_tokens,
                    "block_s_median": statistics.median(timed.step_s) if timed.step_s else None,
                    "verify_forward_s_median": _median_of(fw, "target", int(m) + 1),
                    "draft_forward_s_median": _median_of(fw, "draft", 1),
                    "draft_2token_forwards": sum(1 for r in fw if r[0] == "draft" and r[1] == 2),
                    "draft_2token_forward_s_median": _median_of(fw, "draft", 2),
                    "forward_s_sum": sum(r[2] for r in fw),
                    "target_calls": timed.target_calls, "draft_calls": timed.draft_calls,
                    "blocks_walk": it["blocks"][int(m)], "refeeds_walk": it["refeeds"][int(m)],
                    "identical": mismatch is None, "first_mismatch": mismatch,
                }
            same = "identical to the stored y" if mismatch is None else f"DIFFERS from the stored y at token {mismatch}"
            progress("generating", f"{s.corpus}/{label}: {len(timed.tokens)} tokens in {timed.seconds:.2f} s, {same}",
                     prompt_index=idx, prompt_id=label, corpus=s.corpus, tokens=len(timed.tokens),
                     max_new_tokens=it["n"])
        record["prompts"].append(row)
        for extra_round in ((False, True) if config.interleave_costs else (False,)):  # write the finished prompt first, then add a cost round and rewrite
            if extra_round:
                sampler.round()
                record["cost"] = cost = session_cost()
            record["results"] = _results(record["prompts"], cost, E_table)
            record["cross_check"] = _cross_check(record["prompts"], cost)
            write_confirmation(run_dir, record, index)
        if grid is not None:
            progress("cost", f"costs by batch: slice {idx + 1}/{len(items)}")
            grid.step(-(-(idx + 1) * grid.total // len(items)) - grid.done)
    if grid is not None:
        batch_record = grid_record(grid, grid_rounds_s, upfront_s=grid_rounds_s + grid.setup_s)
        batch_record["interleaved"] = f"timed in {len(items)} slices, one after every prompt's generations"
    record["decision_checks"] = decision_checks(run_dir, record)
    record["complete"] = True
    record["load_avg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    record["seconds"] = time.perf_counter() - t_start
    if install_cost:
        record["installed_as_run_cost"] = True
    write_confirmation(run_dir, record, index, cost if install_cost else None, batch_record)
    progress("done", f"confirmation of {len(items)} prompt(s) appended to {run_dir / META_FILE}")
    return record


def decision_checks(run_dir: Path, record: dict[str, Any], n_rep: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """SPEC 6's decision check of every (corpus, g) row of `record`, as the report computes it
    (hardware.decision_check: leave-out E, the run's stored costs, 95% prediction interval for K prompts,
    in_ci, sign_held, cost drift), stored with the record so it reads without re-running the report."""
    from specterm.core.hardware import Confirmation, decision_check
    from specterm.core.hardware.uncertainty import cost_seed
    from specterm.core.hardware.curve import cost_replicates

    run = load_run(run_dir)
    here = decision_profile(run.meta, this_machine())  # the costs of this machine's profile, as the report uses
    cost = here.cost if here is not None else None
    curve = cost_curve(cost)
    if curve is None:
        return []
    reps = cost_replicates(cost, n_rep, cost_seed(seed, "cost"))
    conf = Confirmation(date=record["date"], device=record["device"], threads=record["threads"], complete=True,
                        results=[], record=record)
    out = []
    for row in record["results"]:
        streams = [(s.id, s.a) for s in run.streams if s.corpus == row["corpus"]]
        check = decision_check(row, conf, row["corpus"], streams, curve, reps, n_rep, seed)
        out.append({"corpus": row["corpus"], "gamma": row["gamma"], "realized": row["realized"], **check})
    return out


def _results(prompt_rows, cost, E_table) -> list[dict[str, Any]]:
    """`summarize_results` rows (with predicted_insitu: S_hw at the medians of the forwards these very
    generations made), plus: draft_2token_forward_s_median, draft_2token_forwards, python_overhead_s
    (speculative wall time outside forwards), block_s_median."""
    curve = cost_curve(cost)
    assert curve is not None  # the session's own cost rounds measured c_decode
    rows = summarize_results(prompt_rows, curve, E_table)
    for r in rows:
        g = str(r["gamma"])
        sp = [p["spec"][g] for p in prompt_rows if p["corpus"] == r["corpus"] and g in p["spec"]]

        def med(values):
            values = [v for v in values if v is not None]
            return statistics.median(values) if values else None

        r["block_s_median"] = med(x["block_s_median"] for x in sp)
        r["draft_2token_forward_s_median"] = med(x["draft_2token_forward_s_median"] for x in sp)
        r["draft_2token_forwards"] = sum(x["draft_2token_forwards"] for x in sp)
        r["python_overhead_s"] = sum(x["s"] - x["forward_s_sum"] for x in sp)
    return rows


def _cross_check(prompt_rows, cost) -> dict[str, Any]:
    """The micro-benchmark against real decoding: greedy per-step time vs c_decode, prefill times."""
    steps = [p["greedy_step_s_median"] for p in prompt_rows if p.get("greedy_step_s_median") is not None]
    return {
        "greedy_step_s_median": statistics.median(steps) if steps else None,
        "c_decode_s": cost["c_decode_s"],
        "c_decode_robust_s": cost["c_decode_robust_s"],
        "greedy_prefill_s_median": statistics.median([p["greedy_prefill_s"] for p in prompt_rows]),
        "spec_first_block_s_median": statistics.median(
            [sp["first_block_s"] for p in prompt_rows for sp in p["spec"].values()]) if prompt_rows else None,
    }


def confirm_command(*, run: Path, per_corpus: int, gamma: list[int], corpus: str | None, device: str | None,
                    dtype: str | None, max_new_tokens: int | None, threads: int | None, repeats: int,
                    target: str | None = None, draft: str | None = None, decision_only: bool = False,
                    batch_costs: bool = False, batch: int = 1, interleave_costs: bool = True,
                    costs_only: bool = False) -> None:
    """CLI glue: headless progress (a bar on a terminal, log lines otherwise); Ctrl-C keeps finished prompts."""
    import sys

    from specterm.core.progress import Cancelled
    from specterm.runner import headless_progress

    read_meta(Path(run))  # one sentence for a wrong path, before anything slow
    check_writable(Path(run))  # a read-only or locked run: refused before models load and costs are timed
    if repeats < 1:
        raise SpectermError("--repeats must be at least 1.")
    if batch < 1:
        raise SpectermError("--batch must be at least 1.")
    if costs_only and (not batch_costs or batch > 1):
        raise SpectermError("--costs-only measures the costs by batch: add --batch-costs (and drop --batch).")
    config = ConfirmConfig(run=Path(run), per_corpus=per_corpus, gammas=tuple(gamma),
                           corpora=tuple(c.strip() for c in corpus.split(",")) if corpus else None,
                           device=device, dtype=dtype, max_new_tokens=max_new_tokens, threads=threads,
                           cost_repeats=repeats, target=target, draft=draft, decision_only=decision_only,
                           batch_costs=batch_costs, batch=batch, interleave_costs=interleave_costs,
                           costs_only=costs_only)
    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            record = confirm_run(config, on_progress)
        if record.get("costs_only"):
            log(f"costs by batch stored (whole measurement {record['batch_cost']['whole_wall_s']:.1f} s wall)")
            return
    except (Cancelled, KeyboardInterrupt):
        print(f"interrupted: the finished prompts are kept in {Path(run) / META_FILE} (confirmation marked incomplete).",
              file=sys.stderr)
        raise SystemExit(130) from None
    for r in record.get("batched_results", []):
        log(f"{r['corpus']:>12} B={r['batch']} g={r['gamma']:<2} predicted {r['predicted']:.2f}x  realized {r['realized']:.2f}x  "
            f"ratio {r['ratio']:.2f}  {'identical' if r['identical'] else 'OUTPUTS DIFFER'}")
    log_decision_checks(record, log)
    for r in record["results"]:
        log(f"{r['corpus']:>12} g={r['gamma']:<2} predicted {r['predicted']:.2f}x  realized {r['realized']:.2f}x  "
            f"ratio {r['ratio']:.2f}  tokens/call {r['tokens_per_call']:.2f}  "
            f"{'identical' if r['identical'] else 'OUTPUTS DIFFER'}")


def log_decision_checks(record: dict[str, Any], log) -> None:
    """One log line per stored decision check (both engines' confirm commands print them)."""
    for c in record.get("decision_checks", []):
        dp = c["decision_predicted"]
        if dp["value"] is not None and dp["ci"][0] is not None:
            log(f"{c['corpus']:>12} g={c['gamma']:<2} decision check: predicts {dp['value']:.2f}x "
                f"[{dp['ci'][0]:.2f}, {dp['ci'][1]:.2f}] for {c['K']} new prompts, realized {c['realized']:.2f}x, "
                f"in PI {c['in_ci']}, sign held {c['sign_held']}")


def _time_batched(config, pair, run_dir, items, choices, record, index, sampler, session_cost, batch_record,
                  report, cancel, t_start, timer: ForwardTimer | None = None) -> dict[str, Any]:
    """A batched confirmation (SPEC 6 "Batch"): per corpus, its timed prompts in groups of B, batched plain
    greedy against lockstep batched speculative decoding (specdec.batched_speculative_generate) at the
    decision's g_hw(B), methods alternating group by group. Each group generates n = the shortest stored
    y of the group. Rows go to record["batched_results"] (never mixed with the batch-1 rows):

        realized  = sum greedy s / sum speculative s
        predicted = E_sync c_decode(B) / (c_verify(g, B) + g c_draft(B)), E_sync = n / blocks of the
                    lockstep walk of the group's stored streams (blockwalk.sync_walk), costs by batch of
                    this session when measured (--batch-costs), else the run's
        predicted_insitu = the same at the medians of the forwards these generations made (`timer`: a
                    B-row 1-token decode, (g+1)-token verify, 1-token draft step); ratio_insitu = realized / it
    """
    from specterm.core.blockwalk import sync_walk
    from specterm.oracle import specdec

    B = config.batch
    pad = pair.tokenizer.pad_token_id if pair.tokenizer.pad_token_id is not None else 0
    if batch_record is None:
        here = decision_profile(read_meta(run_dir), this_machine())
        batch_record = here.batch_cost if here is not None else None
    costs = batch_costs(batch_record)
    if costs is None:
        raise SpectermError("a batched confirmation needs the run's costs by batch; add --batch-costs.")
    i_b = int(np.flatnonzero(costs.batches == B)[0])
    record["batched_results"] = []
    record["batch_cost_source"] = "this session (--batch-costs)" if batch_record is not None else "the run's"
    groups = []
    for name in sorted(choices):
        mine = [it for it in items if it["stream"].corpus == name]
        groups += [(name, mine[j:j + B]) for j in range(0, len(mine) - B + 1, B)]
    if not groups:
        raise SpectermError(f"a batched confirmation at B = {B} needs at least {B} prompts of a corpus; raise --per-corpus.")
    first = groups[0][1]
    specdec.batched_greedy_steps(pair.target, [it["ids"] for it in first], 2, pad, cancel=cancel)  # warm-up
    for gi, (name, group) in enumerate(groups):
        g = int(choices[name]["gamma_decision"])
        n = min(it["n"] for it in group)
        prompts = [it["ids"] for it in group]
        timed: dict[str, Any] = {}
        fw: dict[str, list] = {}
        order = ["greedy", "spec"] if gi % 2 == 0 else ["spec", "greedy"]
        for m in order:
            check_cancel(cancel)
            report(Progress("generating", f"{name}: batch of {B}, {'greedy' if m == 'greedy' else f'g={g}'}, {n} tokens",
                            elapsed_s=time.perf_counter() - t_start))
            if timer is not None:
                timer.take()
            t0, c0 = time.perf_counter(), time.process_time()
            if m == "greedy":
                out = specdec.batched_greedy_steps(pair.target, prompts, n, pad, cancel=cancel)
                calls = n
            else:
                res = specdec.batched_speculative_generate(pair.target, pair.draft, prompts, n, g, pad, cancel=cancel)
                out, calls = res.tokens, res.target_calls
            timed[m] = (time.perf_counter() - t0, time.process_time() - c0, out, calls)
            fw[m] = timer.take() if timer is not None else []
        blocks = sync_walk([it["stream"].bits for it in group], g, n)
        E_sync = n / blocks
        predicted = float(costmodel.speedup_hw(E_sync, costs.c_decode[i_b], costs.c_verify[i_b, g - 1], costs.c_draft[i_b], g))
        same = [timed[m][2][r][:n] == it["y"][:n] for m in ("greedy", "spec") for r, it in enumerate(group)]
        row = {"corpus": name, "batch": B, "gamma": g, "ids": [it["stream"].id for it in group], "tokens_per_row": n,
               "greedy_s": timed["greedy"][0], "spec_s": timed["spec"][0],
               "greedy_cpu_s": timed["greedy"][1], "spec_cpu_s": timed["spec"][1],
               "realized": timed["greedy"][0] / timed["spec"][0],
               "realized_cpu": timed["greedy"][1] / timed["spec"][1] if timed["spec"][1] > 0 else None,
               "E_sync": E_sync, "blocks_walk": blocks, "target_calls": timed["spec"][3], "predicted": predicted,
               "identical": all(same), "order": order}
        row["ratio"] = row["realized"] / predicted
        t1, tv, d1 = (_median_of(fw["greedy"], "target", 1), _median_of(fw["spec"], "target", g + 1),
                      _median_of(fw["spec"], "draft", 1))
        insitu = insitu_speedup(E_sync, t1, tv, d1, g)
        row.update(decode_forward_s_median=t1, verify_forward_s_median=tv, draft_forward_s_median=d1,
                   predicted_insitu=insitu, ratio_insitu=None if insitu is None else row["realized"] / insitu)
        record["batched_results"].append(row)
        sampler.round()
        record["cost"] = session_cost()
        write_confirmation(run_dir, record, index)
    record["complete"] = True
    record["seconds"] = time.perf_counter() - t_start
    write_confirmation(run_dir, record, index, None, batch_record)
    report(Progress("done", f"batched confirmation appended to {run_dir / META_FILE}"))
    return record
