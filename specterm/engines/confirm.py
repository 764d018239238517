"""`specterm confirm RUN [--engine llama.cpp]`: does the predicted speedup happen on this hardware?
(SPEC 6, Confirmation.) One flow for every engine, written against the engine interface
(engines/base.ConfirmPair); what differs between engines (how a generation is timed, what each row
records beside the common fields) lives in each engine's pair.

1. Take the first K prompts of each corpus (with a passed gate where the engine's decoder needs one:
   `select_streams`, gate_held), open the run's models in the engine (found by name and checksum, or
   --target/--draft), and build one `Item` per prompt: its ids, the stored y (its first
   --max-new-tokens tokens), and the exact walk's blocks and refeeds at every measured g.
2. The run's decision on this machine: g_hw of its cost profile of this machine (decision_profile)
   and the corpus's E_true. Every g timed is on this session's cost curve.
3. Costs in this session at the mean context of the timed generations (prompt + n/2): `cost_repeats`
   rounds first, then one more round after every prompt, so prediction and reality share machine
   conditions (`session_rounds`). With --batch-costs, the costs by batch too (the engine's job: torch
   times its grid in slices between the prompts, llama.cpp up front).
4. Per corpus the g timed: the run's decision g_hw (always), the engine's always-timed g, this
   session's own choices (g_hw, g_iid, g_hw_refeed) where the engine times them, plus every --gamma.
   Then, prompt by prompt, plain greedy and real speculative decoding at each g, the method order
   reversed on every other prompt; each output is compared with the stored y (first divergence).
5. Per (corpus, g): realized = sum greedy time / sum speculative time; predicted = S_hw(g) with E of
   these prompts' exact walk (`results`: summarize_results plus the engine's columns). When every
   prompt is done: SPEC 6's decision checks (`decision_checks`), stored with the record.

The record is appended to run.json's "confirmations" (`write_confirmation`: atomic, under the run
lock, streams untouched) and rewritten after every finished prompt with "complete": false, so Ctrl-C
keeps finished prompts. A run whose stored cost has no c_decode (measured before the cost model) gets
this session's costs as its "cost" (the old one kept in cost.earlier) when the engine installs them
and the device is the same.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.streams.blockwalk import E_iid as E_iid_formula
from specterm.core.streams.blockwalk import set_yield
from specterm.core.decide import costmodel
from specterm.core.decide.costmodel import refeed_counts, refeed_share
from specterm.core.compare.sameposition import first_divergence
from specterm.core.errors import SpectermError
from specterm.core.report.text import printable
from specterm.core.decide.hardware import (
    BATCH_COST_KEY,
    batch_costs,
    cost_curve,
    decision_hw,
    summarize_results,
    timing_rows,
)
from specterm.core.decide.hardware.profiles import PROFILES_KEY, decision_profile, with_profile
from specterm.core.decide.machine import default_threads, this_machine
from specterm.core.decide.optimum import best_gamma
from specterm.engines.progress import Progress, ProgressCallback, check_cancel
from specterm.core.store import (
    META_FILE,
    Run,
    RunLock,
    Stream,
    check_unlocked,
    check_writable,
    hardware_info,
    load_run,
    new_meta,
    read_meta,
    write_meta_atomic,
)
from specterm.engines.base import ConfirmConfig, ConfirmPair, ConfirmSession, Engine, Item
from specterm.engines.timing import BATCH_FIT_M, COST_GAMMAS



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


def build_items(chosen: list[Stream], encode: Callable[[str], list[int]], max_new_tokens: int | None,
                cost_gammas: np.ndarray, min_tokens: int = 1) -> list[Item]:
    """One `Item` per chosen stream with at least `min_tokens` tokens to compare: n = min(stream n,
    max_new_tokens); blocks and refeeds of the exact walk of its first n bits at every g (refeed_counts)."""
    items = []
    for s in chosen:
        assert s.prompt is not None and s.y is not None  # select_streams keeps only streams that have both
        n = s.n if max_new_tokens is None else min(s.n, max_new_tokens)
        if n < min_tokens:
            continue
        refeeds, blocks = refeed_counts(s.bits[:n], cost_gammas)
        items.append(Item(stream=s, ids=list(encode(s.prompt)), y=s.y[:n].tolist(), n=n,
                          blocks={int(g): int(b) for g, b in zip(cost_gammas, blocks)},
                          refeeds={int(g): int(r) for g, r in zip(cost_gammas, refeeds)}))
    if not items:
        raise SpectermError(f"no stored stream has {min_tokens} or more tokens to time; check --max-new-tokens.")
    return items


def decision_checks(run_dir: Path, record: dict[str, Any], n_rep: int = 2000, seed: int = 0) -> list[dict[str, Any]]:
    """SPEC 6's decision check of every (corpus, g) row of `record`, as the report computes it
    (hardware.decision_check: leave-out E, the run's stored costs, 95% prediction interval for K prompts,
    in_ci, sign_held, cost drift), stored with the record so it reads without re-running the report."""
    from specterm.core.decide.hardware import Confirmation, decision_check
    from specterm.core.decide.hardware.curve import cost_replicates
    from specterm.core.decide.hardware.drift import machine_drift
    from specterm.core.decide.hardware.profiles import machine_sessions
    from specterm.core.decide.hardware.uncertainty import cost_seed

    run = load_run(run_dir)
    here = decision_profile(run.meta, this_machine())  # the costs of this machine's profile, as the report uses
    cost = here.cost if here is not None else None
    curve = cost_curve(cost)
    if curve is None:
        return []
    reps = cost_replicates(cost, n_rep, cost_seed(seed, "cost"))
    conf = Confirmation(date=record["date"], device=record["device"], threads=record["threads"], complete=True,
                        results=[], record=record)
    drift = machine_drift(machine_sessions(run.meta, here)).as_dict() if here is not None else None
    out = []
    for row in record["results"]:
        streams = [(s.id, s.a) for s in run.streams if s.corpus == row["corpus"]]
        check = decision_check(row, conf, row["corpus"], streams, curve, reps, n_rep, seed, drift)
        out.append({"corpus": row["corpus"], "gamma": row["gamma"], "realized": row["realized"], **check})
    return out


def results(prompt_rows: list[dict[str, Any]], cost: dict[str, Any], E_table: dict[str, dict[int, tuple[float, float]]],
            pair: ConfirmPair) -> list[dict[str, Any]]:
    """Per (corpus, g): summarize_results over hardware.timing_rows (realized = sum greedy s / sum
    speculative s; predicted = S_hw(g) with E of these prompts' exact walk and this session's costs),
    plus the engine's columns from the spec rows of that (corpus, g) (pair.result_extras)."""
    curve = cost_curve(cost)
    assert curve is not None  # the session's own cost rounds measured c_decode
    rows = summarize_results(timing_rows(prompt_rows), curve, E_table)
    for r in rows:
        g = str(r["gamma"])
        sp = [p["spec"][g] for p in prompt_rows if p["corpus"] == r["corpus"] and g in p["spec"]]
        r.update(pair.result_extras(sp, r))
    return rows


def _decisions(config: ConfirmConfig, run: Run, corpora: list[str]) -> tuple[dict[str, int | None], bool]:
    """The run's decision g_hw per corpus on this machine (its cost profile of this machine, the corpus's
    E_true, among config.decision_gammas or the cost gammas), and whether the run has such a profile."""
    here = decision_profile(run.meta, this_machine())
    run_curve = cost_curve(here.cost) if here is not None else None
    if run_curve is None:
        return dict.fromkeys(corpora), False
    grid = np.array(sorted(set(config.decision_gammas or config.cost_gammas)), dtype=np.int64)
    by_corpus = corpus_E(run.streams, grid)
    return {name: (decision_hw(grid, by_corpus[name][0], None, run_curve).gamma_hw if name in by_corpus else None)
            for name in corpora}, True


def _batch_decision(run: Run, corpus: str, run_batch: Any, batch: int) -> int | None:
    """g_hw(B) of the run's costs by batch at batch B and the corpus's E_true."""
    if batch not in run_batch.batches.tolist():
        raise SpectermError(f"the run's batch costs have no batch {batch}; use one of "
                            f"{', '.join(map(str, run_batch.batches.tolist()))}.")
    i = int(np.flatnonzero(run_batch.batches == batch)[0])
    E_b = set_yield([s.a for s in run.streams if s.corpus == corpus and s.valid_len], run_batch.gammas)[0]
    S_b = costmodel.speedup_hw(E_b, run_batch.c_decode[i], run_batch.c_verify[i], run_batch.c_draft[i], run_batch.gammas)
    return best_gamma(S_b, run_batch.gammas)


def choose(config: ConfirmConfig, run: Run, engine: Engine, corpora: list[str], cost_gammas: np.ndarray,
           cost: dict[str, Any], decision_g: dict[str, int | None], has_profile: bool,
           run_batch: Any) -> dict[str, dict[str, Any]]:
    """Per corpus: this session's choices (decision_hw with this session's costs: g_hw, g_iid, g_hw_refeed, ...)
    and the g to time: the run's decision (g_hw(B) of the run's costs by batch for a batched confirmation;
    without a profile of this machine, this session's g_hw where the engine times the session's choices),
    the engine's always-timed g, the session's choices where the engine times them (not with
    --decision-only or a batch), and every --gamma."""
    curve = cost_curve(cost)
    assert curve is not None  # g_hw and g_iid are chosen from the rounds before any generation
    by_corpus = corpus_E(run.streams, cost_gammas)
    extra = {int(g) for g in config.gammas}
    session_too = engine.times_session_choices and not config.decision_only and config.batch == 1
    choices: dict[str, dict[str, Any]] = {}
    for name in corpora:
        E_true, alpha, phi = by_corpus[name]
        d = decision_hw(cost_gammas, E_true, E_iid_formula(alpha, cost_gammas), curve, phi_true=phi)
        g_decision = decision_g.get(name)
        costs_said = "the run's stored costs" if has_profile else None
        if run_batch is not None:  # the decision at this batch: g_hw(B) of the run's batch costs
            g_decision, costs_said = _batch_decision(run, name, run_batch, config.batch), "the run's costs by batch, g_hw(B)"
        elif not has_profile and engine.times_session_choices:
            g_decision, costs_said = d.gamma_hw, "the run's stored costs"
        session = {d.gamma_hw, d.gamma_iid_hw, d.gamma_hw_refeed} if session_too else set()
        gammas = sorted(g for g in {g_decision, *engine.always_timed, *session, *extra} if g is not None)
        choices[name] = {k: getattr(d, k) for k in ("gamma_hw", "speedup_hw", "gamma_hw_refeed", "speedup_hw_refeed",
                                                    "gamma_iid_hw", "speedup_iid_hw", "gamma_mb", "speedup_mb")}
        choices[name].update(gammas=gammas, verdict=d.verdict, gamma_decision=g_decision, decision_costs=costs_said)
    return choices


def _check_config(config: ConfirmConfig) -> None:
    if config.max_new_tokens is not None and config.max_new_tokens < 1:
        raise SpectermError("--max-new-tokens must be at least 1.")
    if config.threads is not None and config.threads < 1:
        raise SpectermError("--threads must be at least 1.")
    if config.cost_repeats < 1:
        raise SpectermError("--repeats must be at least 1.")


def confirm(config: ConfirmConfig, on_progress: ProgressCallback | None = None,
            cancel: threading.Event | None = None, pair: ConfirmPair | None = None,
            engine: Engine | None = None) -> dict[str, Any]:
    """Run the confirmation (module docstring); returns the record written to run.json (with --costs-only,
    {"batch_cost", "results": [], "costs_only": True}). `pair`: an open pair to use (not closed here);
    `engine`: its engine (None: engines.engine_named(config.engine)).

    Raises `Cancelled` when `cancel` is set: the record on disk then holds every finished prompt.
    """
    from specterm.engines import engine_named
    from specterm.engines.base import OpenOptions

    report = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    run_dir = Path(config.run)
    run = load_run(run_dir)
    check_unlocked(run_dir)  # before minutes of model loading and timing, as run --resume and repair do
    engine = engine or engine_named(config.engine)
    chosen = select_streams(run.streams, config.per_corpus, config.corpora, gate_held=engine.gate_held)
    _check_config(config)
    cost_gammas = sorted({int(g) for g in config.cost_gammas})
    if config.costs_only:  # the rounds only supply the batch grid's B = 1 column: its g, no further
        cost_gammas = [g for g in cost_gammas if g <= max(BATCH_FIT_M) - 1]
    allowed = sorted(set(config.decision_gammas or cost_gammas))
    extra = sorted({int(g) for g in config.gammas})
    if any(g not in allowed for g in extra):
        raise SpectermError(f"--gamma must be among the measured draft lengths {allowed[0]}..{allowed[-1]}.")
    threads = default_threads(os.cpu_count()) if config.threads is None else config.threads
    corpora = sorted({s.corpus for s in chosen})
    decision_g, has_profile = _decisions(config, run, corpora)
    # the cost curve covers every g timed, so each has a prediction with this session's costs
    timed = set() if config.costs_only else {*extra, *engine.always_timed, *(g for g in decision_g.values() if g is not None)}
    own = pair is None
    if pair is None:
        pair = engine.open(run.meta, OpenOptions(target=config.target, draft=config.draft, device=config.device,
                                                 dtype=config.dtype, threads=threads), report)
    session = ConfirmSession(config=config, engine=engine, pair=pair, run_dir=run_dir, run=run, report=report,
                             cancel=cancel, t_start=t_start, decision_g=decision_g, has_profile=has_profile,
                             cost_gammas=np.array(sorted(set(cost_gammas) | timed), dtype=np.int64))
    try:
        check_cancel(cancel)
        fields = _measure(session, chosen)
        if config.costs_only:
            return _store_batch_costs(session)
        _begin(session, fields)
        with pair.timing():
            if config.batch > 1:
                return pair.time_batched(session)
            return time_prompts(session)
    finally:
        if own:
            pair.close()


def _measure(session: ConfirmSession, chosen: list[Stream]) -> dict[str, Any]:
    """The items, the engine made ready to time them (its record fields returned), and this session's cost
    rounds before the generations at the mean context of the timed generations; with --batch-costs the
    engine's costs by batch, up front or (torch, interleaved) in slices between the prompts."""
    from specterm.engines.timing import context_ids, session_rounds

    config, pair, report = session.config, session.pair, session.report
    items = session.items = build_items(chosen, pair.encode, config.max_new_tokens, session.cost_gammas,
                                        session.engine.min_tokens)
    ctx_len = session.ctx_len = int(round(float(np.mean([len(it.ids) + it.n / 2 for it in items]))))
    fields = pair.confirm_setup(config, items, ctx_len, session.run.meta, report, session.cancel)
    ctx = context_ids(items[0].ids + items[0].y, ctx_len)
    report(Progress("cost", f"measuring costs at context {ctx_len} ({config.cost_repeats} interleaved repeats)"))

    def on_measure(i: int, total: int, label: str, seconds: float) -> None:
        report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s",
                        elapsed_s=time.perf_counter() - session.t_start))

    sampler = session.sampler = pair.cost_sampler(ctx, session.cost_gammas.tolist(), on_measure, session.cancel)
    t_costs = time.perf_counter()
    flag = "" if config.engine == "torch" else f" --engine {config.engine}"
    rounds = session_rounds(sampler, config.cost_repeats, len(items) if config.interleave_costs else 0,
                            f"specterm confirm{flag} (rounds before the generations and one after every prompt)")
    session.session_cost = with_block_overhead(rounds, session.run.meta)
    if getattr(pair, "forwards_in_loop", False):
        session.session_cost = with_loop_forwards(session.session_cost, session)
    if config.batch_costs:
        rounds_s = time.perf_counter() - t_costs  # the g curve's rounds
        job = pair.batch_cost_job(sampler, ctx, on_measure, session.cancel, rounds_s)
        if config.costs_only or config.batch > 1 or not config.interleave_costs or not job.sliced:
            report(Progress("cost", f"measuring costs by batch at context {ctx_len}"))
            session.batch_record = job.run_all()
        else:  # timed in slices, one after every prompt, stored with the record
            report(Progress("cost", f"costs by batch at context {ctx_len}: {job.total} forwards, timed in slices "
                                    "after every prompt"))
            session.batch_job = job
    return fields


def with_block_overhead(session_cost: Callable[[], dict[str, Any]], meta: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """session_cost with the block overhead o(g) of the run's cost profile of this machine added (SPEC 6 "The
    whole block's cost": a confirm session times forwards, not whole blocks, so its cost-model check
    predicts with the profile's o(g), named by `from_profile`); unchanged where that profile has none."""
    from specterm.core.decide.hardware.overhead import KEY

    here = decision_profile(meta, this_machine())
    bo = here.cost.get(KEY) if here is not None else None
    if not isinstance(bo, dict) or here is None:
        return session_cost
    pid = here.id

    def cost() -> dict[str, Any]:
        return {**session_cost(), KEY: {**bo, "from_profile": pid}}

    return cost


def with_loop_forwards(session_cost: Callable[[], dict[str, Any]], session: ConfirmSession) -> Callable[[], dict[str, Any]]:
    """session_cost with its forwards priced in the engine's own loop at the g this session has timed so far
    (core/decide/hardware/engine_loop: c_verify(g) and c_draft from the timed generations' perf summaries,
    c_decode from its greedy generations),
    so its cost-model check prices the blocks the engine ran; the rounds' forwards alone before the first
    generation (the choices)."""
    from specterm.core.decide.hardware.engine_loop import priced_in_loop, session_greedy, session_samples

    def cost() -> dict[str, Any]:
        base = session_cost()
        rows = session.record["prompts"] if session.record else []
        samples = session_samples(rows)
        if not samples:
            return base
        return priced_in_loop(base, samples, sorted({s["gamma"] for s in samples}), session_greedy(rows))

    return cost


def _store_batch_costs(session: ConfirmSession) -> dict[str, Any]:
    """--costs-only: the costs by batch stored as the run's, no generations, no confirmation record."""
    batch_record = session.batch_record
    assert batch_record is not None
    with RunLock(session.run_dir):
        meta_now = read_meta(session.run_dir)
        meta_now[PROFILES_KEY] = with_profile(meta_now, session.batch_profile(batch_record))
        meta_now[BATCH_COST_KEY] = batch_record
        write_meta_atomic(session.run_dir, meta_now)
    session.report(Progress("done", f"costs by batch stored in {session.run_dir / META_FILE} (whole measurement "
                                    f"{batch_record['whole_wall_s']:.1f} s wall); no generations (--costs-only)"))
    return {"batch_cost": batch_record, "results": [], "costs_only": True}


def confirmation_hardware(described: dict[str, Any]) -> dict[str, Any]:
    """A confirmation record's `hardware`: hardware_info() (the CPU), and on a GPU its name (`gpu`, from the
    engine's description), by which the record finds the cost profile it ran on (profiles._conf_machine):
    without it a CUDA confirmation belonged to no profile, and no report showed it."""
    hw = hardware_info()
    device = described.get("device") if isinstance(described.get("device"), dict) else {}
    assert isinstance(device, dict)
    if device.get("kind") == "cuda" and isinstance(device.get("name"), str) and device["name"]:
        hw["gpu"] = device["name"]
    return hw


def _begin(session: ConfirmSession, fields: dict[str, Any]) -> None:
    """The choices (with the run's costs by batch for a batched confirmation) and the record skeleton with
    the engine's `fields`, written to run.json before the first generation."""
    config, run = session.config, session.run
    cost = session.session_cost()
    run_batch = None
    if config.batch > 1:
        here = decision_profile(run.meta, this_machine())
        run_batch = batch_costs(session.batch_record if session.batch_record is not None
                                else (here.batch_cost if here is not None else None))
        if run_batch is None:
            raise SpectermError("a batched confirmation needs the run's costs by batch; add --batch-costs.")
    corpora = sorted({it.stream.corpus for it in session.items})
    gam = session.cost_gammas
    session.choices = choose(config, run, session.engine, corpora, gam, cost, session.decision_g, session.has_profile,
                             run_batch)
    by_corpus = corpus_E(run.streams, gam)
    session.E_table = {name: {int(g): (float(e), float(p)) for g, e, p in zip(gam, by_corpus[name][0], by_corpus[name][2])}
                       for name in session.choices}
    meta = run.meta
    session.install_cost = (session.engine.installs_cost and fields.get("device") == meta.get("device")
                            and not (meta.get("cost") or {}).get("c_decode_s"))
    session.record = {
        "date": new_meta("")["created"],
        **fields,
        "specterm_version": meta.get("specterm_version"),
        "hardware": confirmation_hardware(session.pair.describe()),
        "load_avg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "per_corpus": config.per_corpus,
        "max_new_tokens": config.max_new_tokens,
        "cost_context": session.ctx_len,
        "cost_context_rule": fields.get("cost_context_rule",
                                        "mean over the timed prompts of prompt tokens + n/2 (n = tokens compared)"),
        "run_cost_context": (meta.get("cost") or {}).get("context"),
        "complete": False,
        "cost": cost,
        "choices": session.choices,
        "prompts": [],
        "results": [],
    }
    session.write()


def time_prompts(session: ConfirmSession) -> dict[str, Any]:
    """The timed part: a warm-up (untimed), then every prompt's greedy and speculative generations, the
    method order reversed on every other prompt; the record rewritten after every prompt (and again after
    that prompt's cost round), finished with the decision checks and "complete": true."""
    pair, items, choices, record = session.pair, session.items, session.choices, session.record
    first = items[0]
    pair.warm_up(first, choices[first.stream.corpus]["gammas"][0])
    session.total = sum(1 + len(choices[it.stream.corpus]["gammas"]) for it in items)
    for idx, it in enumerate(items):
        record["prompts"].append(time_prompt(session, idx, it))
        for extra_round in ((False, True) if session.config.interleave_costs else (False,)):  # the finished prompt first
            if extra_round:
                assert session.sampler is not None  # measured by _measure
                session.sampler.round()
            if extra_round or getattr(pair, "forwards_in_loop", False):  # the loop's forwards: this prompt's too
                record["cost"] = session.session_cost()
            record["results"] = results(record["prompts"], record["cost"], session.E_table, pair)
            record.update(pair.record_checks(record["prompts"], record["cost"]))
            session.write()
        if session.batch_job is not None:
            session.progress("cost", f"costs by batch: slice {idx + 1}/{len(items)}")
            session.batch_job.step(idx + 1, len(items))
    if session.batch_job is not None:
        session.batch_record = session.batch_job.finish(len(items))
    record["decision_checks"] = decision_checks(session.run_dir, record)
    record["complete"] = True
    record["load_avg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    record["seconds"] = time.perf_counter() - session.t_start
    if session.install_cost:
        record["installed_as_run_cost"] = True
    if session.batch_record is not None:
        record.update(pair.batch_record_fields())
    session.write(record["cost"] if session.install_cost else None, session.batch_record)
    session.progress("done", f"confirmation of {len(items)} prompt(s) appended to {session.run_dir / META_FILE}")
    return record


def time_prompt(session: ConfirmSession, idx: int, it: Item) -> dict[str, Any]:
    """One prompt's row: greedy and every g of its corpus, each output compared with the stored y."""
    s = it.stream
    methods: list[Any] = ["greedy", *session.choices[s.corpus]["gammas"]]
    if idx % 2:
        methods.reverse()
    row: dict[str, Any] = {"corpus": s.corpus, "id": s.id, "tokens": it.n, "order": [str(m) for m in methods],
                           "prompt_tokens": len(it.ids), "context": len(it.ids) + it.n / 2}
    if not session.engine.gate_held:  # every stream qualifies: the gate is recorded beside the first divergence
        row.update(gate_valid_len=s.first_failure, gate_rate=s.gate_rate)
    row["spec"] = {}
    for m in methods:
        check_cancel(session.cancel)
        label = f"{s.id} {'greedy' if m == 'greedy' else f'g={m}'}"
        where: dict[str, Any] = dict(prompt_index=idx, prompt_id=label, corpus=s.corpus)
        session.progress("generating", f"{s.corpus}/{label}: generating {it.n} tokens", max_new_tokens=it.n, **where)

        def on_step(tokens: int, **kw: Any) -> None:
            session.progress("generating", tokens=tokens, max_new_tokens=it.n, **where, **kw)  # noqa: B023

        gen = (session.pair.greedy_timed(it, on_step) if m == "greedy"
               else session.pair.speculative_timed(it, int(m), on_step))
        session.done += 1
        if gen is None:  # the engine cannot time this g on this prompt (too few tokens)
            continue
        mismatch = first_divergence(gen.tokens, it.y if gen.compare is None else it.y[:gen.compare])
        session.gen_time += gen.seconds
        session.gen_tokens += len(gen.tokens)
        if m == "greedy":
            row.update(gen.fields, greedy_identical=mismatch is None, greedy_first_mismatch=mismatch)
        else:
            row["spec"][str(m)] = {**gen.fields, "identical": mismatch is None, "first_mismatch": mismatch}
        same = "identical to the stored y" if mismatch is None else f"DIFFERS from the stored y at token {mismatch}"
        summary = gen.summary or f"{len(gen.tokens)} tokens in {gen.seconds:.2f} s"
        session.progress("generating", f"{s.corpus}/{label}: {summary}, {same}", tokens=len(gen.tokens),
                         max_new_tokens=it.n, **where)
    return row


def confirm_command(*, run: Path, per_corpus: int, gamma: list[int], corpus: str | None, max_new_tokens: int | None,
                    threads: int | None, repeats: int, engine: str = "torch", device: str | None = None,
                    dtype: str | None = None, target: str | None = None, draft: str | None = None,
                    decision_only: bool = False, batch_costs: bool = False, batch: int = 1,
                    interleave_costs: bool = True, costs_only: bool = False, llama_bin: Path | None = None,
                    llama_src: Path | None = None, keep_logs: Path | None = None, cost_max_gamma: int = 16) -> None:
    """CLI glue: headless progress (a bar on a terminal, log lines otherwise); Ctrl-C keeps finished prompts."""
    import sys

    from specterm.engines.progress import Cancelled
    from specterm.engines.progress import headless_progress

    read_meta(Path(run))  # one sentence for a wrong path, before anything slow
    check_writable(Path(run))  # a read-only or locked run: refused before models load and costs are timed
    if repeats < 1:
        raise SpectermError("--repeats must be at least 1.")
    if batch < 1:
        raise SpectermError("--batch must be at least 1.")
    if costs_only and (not batch_costs or batch > 1):
        raise SpectermError("--costs-only measures the costs by batch: add --batch-costs (and drop --batch).")
    llama = engine == "llama.cpp"
    config = ConfirmConfig(run=Path(run), engine=engine, per_corpus=per_corpus, gammas=tuple(gamma),
                           corpora=tuple(c.strip() for c in corpus.split(",")) if corpus else None,
                           device=device, dtype=dtype, max_new_tokens=max_new_tokens, threads=threads,
                           cost_repeats=repeats, target=target, draft=draft, decision_only=decision_only,
                           batch_costs=batch_costs, batch=batch, interleave_costs=interleave_costs,
                           costs_only=costs_only, llama_bin=llama_bin, llama_src=llama_src, keep_logs=keep_logs,
                           cost_gammas=tuple(range(1, cost_max_gamma + 1)) if llama else COST_GAMMAS,
                           decision_gammas=COST_GAMMAS if llama else None)
    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            record = confirm(config, on_progress)
        if record.get("costs_only"):
            log(f"costs by batch stored (whole measurement {record['batch_cost']['whole_wall_s']:.1f} s wall)")
            return
    except (Cancelled, KeyboardInterrupt):
        print(printable(f"interrupted: the finished prompts are kept in {Path(run) / META_FILE} (confirmation marked incomplete)."),
              file=sys.stderr)
        raise SystemExit(130) from None
    log_results(record, log)


def log_results(record: dict[str, Any], log: Callable[[str], None]) -> None:
    """The log lines of a finished confirmation: batched rows, decision checks, then every (corpus, g) row
    (with the engine's block cost where the record has it: llama.cpp)."""
    for r in record.get("batched_results", []):
        log(f"{r['corpus']:>12} B={r['batch']} g={r['gamma']:<2} predicted {r['predicted']:.2f}x  realized {r['realized']:.2f}x  "
            f"ratio {r['ratio']:.2f}  {'identical' if r['identical'] else 'OUTPUTS DIFFER'}")
    log_decision_checks(record, log)
    for r in record["results"]:
        same = "identical" if r["identical"] else "OUTPUTS DIFFER"
        if r.get("differ_prompts") is not None:  # the real decoder's own flips, over every timed prompt
            same = f"{r['differ_prompts']} of {r['prompts']} outputs differ from y"
        if r.get("predicted_engine") is not None:
            log(f"{r['corpus']:>12} g={r['gamma']:<2} predicted {r['predicted_engine']:.2f}x "
                f"(SPEC 6 block alone {r['predicted_without_engine_term']:.2f}x)  realized {r['realized']:.2f}x  "
                f"tokens/call {r['tokens_per_call']:.3f} (walk {r.get('tokens_per_call_walk') or 0:.3f})  {same}")
        else:
            log(f"{r['corpus']:>12} g={r['gamma']:<2} predicted {r['predicted']:.2f}x  realized {r['realized']:.2f}x  "
                f"ratio {r['ratio']:.2f}  tokens/call {r['tokens_per_call']:.2f}  {same}")


def log_decision_checks(record: dict[str, Any], log: Callable[[str], None]) -> None:
    """One log line per stored decision check."""
    for c in record.get("decision_checks", []):
        dp = c["decision_predicted"]
        if dp["value"] is not None and dp["ci"][0] is not None:
            log(f"{c['corpus']:>12} g={c['gamma']:<2} decision check: predicts {dp['value']:.2f}x "
                f"[{dp['ci'][0]:.2f}, {dp['ci'][1]:.2f}] for {c['K']} new prompts, realized {c['realized']:.2f}x, "
                f"in PI {c['in_ci']}, sign held {c['sign_held']}")


__all__ = ["confirm", "confirm_command", "corpus_E", "decision_checks", "results", "select_streams"]
