"""`specterm run`: the exact greedy oracle (SPEC 1), written once against the engine interface.

For each prompt: y = the target's raw-argmax greedy continuation, then both models teacher-forced over
prompt + y give a_t, gate_t and the per-position columns (SPEC 1); where the engine's batched and
serial evaluation differ, its pair runs the repair loop (engines/repair.py) before the stream is
stored. What differs between engines is the pair's (engines/base.RunPair): how y is generated and how
many prompts at a time, the teacher-forced columns, what run.json records about the engine, and work
on a resumed run's stored streams (llama.cpp repairs streams written before the loop). The flow is
the same for every engine:

1. the prompts (this shard's share), the pair opened by its engine (`Engine.open_run`);
2. the run's writer (new, or resuming: prompts already saved are skipped and counted) and this
   invocation's entry in run.json's `sessions`;
3. per step of `pair.prompts_per_step` prompts: y, the teacher-forced (and repaired) streams, each
   appended at once (Ctrl-C keeps every finished prompt);
4. the costs at the end (`measure_cost`: c_decode, c_draft, c_verify(g) through `pair.cost_sampler`, a
   cost profile of this machine), unless the run has them.

Progress goes to `on_progress` (engines/progress.Progress, counted by `Tally`): the headless display
and the TUI's Run screen read the same reports.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store import RunWriter, check_new_run_dir, load_run, new_meta, public_model
from specterm.engines import engine_named
from specterm.engines.base import Engine, OracleConfig, RunPair
from specterm.engines.corpora import Prompt, shard
from specterm.engines.progress import Cancelled, Progress, ProgressCallback, Tally, check_cancel
from specterm.engines.timing import context_ids, run_rounds


def prompts_to_run(config: OracleConfig) -> list[Prompt]:
    """config.prompts, or this shard's share of them; one sentence when there are none."""
    prompts = shard(config.prompts, *config.shard) if config.shard is not None else config.prompts
    if not prompts:
        raise SpectermError("there are no prompts to run; check --corpus/--prompts/--shard.")
    return prompts


def check_run(config: OracleConfig) -> None:
    """Every check of `specterm run` that needs no model weights, before any model loads: the prompts,
    --out (creatable, or an unlocked run with --resume), then the engine's own (`Engine.check_run`:
    flags that apply, models resolved, tokenizers, context). One sentence; creates nothing on disk."""
    engine = engine_named(config.backend)
    prompts_to_run(config)
    check_new_run_dir(config.out, config.resume)
    engine.check_run(config)


def run_oracle(config: OracleConfig, on_progress: ProgressCallback | None = None,
               cancel: threading.Event | None = None, pair: RunPair | None = None,
               engine: Engine | None = None) -> Path:
    """Run the oracle over config.prompts in config.backend's engine (module docstring), appending each
    finished prompt to config.out; `pair`: one already open (tests, benchmarks). The writer holds the
    run's lock from its first write until return. Raises `Cancelled` when `cancel` is set; every prompt
    finished before that is on disk (a prompt whose y was complete is still teacher-forced and saved)."""
    report: ProgressCallback = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    prompts = prompts_to_run(config)
    if config.out.exists() and (config.out / "run.json").exists() and not config.resume:
        raise SpectermError(f"{config.out} already holds a run; pass --resume to continue it or choose another --out.")
    if pair is None:
        pair = (engine or engine_named(config.backend)).open_run(config, prompts, report)
    check_cancel(cancel)
    writer, meta = _open_writer(config, pair)
    with writer:
        todo = [p for p in prompts if (p.corpus, p.id) not in writer.done]
        tally = Tally(report, len(todo), config.max_new_tokens, t_start=t_start)
        for line in writer.warnings:  # what reopening the run mended or swept, said once
            tally.emit("warning", line)
        if writer.done:  # --resume: the prompts saved before count in the Run screen's totals and alpha
            for stream in load_run(config.out).streams:
                tally.saved(stream, before=True)
            tally.emit("loading", f"resuming: {tally.before} prompt(s) already kept in {config.out}, {len(todo)} to run")
        writer.update_meta(sessions=list(writer.meta.get("sessions") or []) + [{
            "started": meta["created"], "prompts": len(todo), "y_built_with": meta["generation"]["y_built_with"],
            **pair.run_session(config)}])
        stored = pair.before_prompts(config, writer, tally, cancel)
        step = pair.prompts_per_step(config)
        tally.t_prompts = time.perf_counter()
        for b0 in range(0, len(todo), step):
            batch = todo[b0 : b0 + step]
            ids_batch = [pair.encode_prompt(p.text, f"prompt {p.id!r} ({p.corpus})") for p in batch]
            ys, cancelled = pair.generate(config, batch, ids_batch, b0, tally, cancel)
            if ys:
                # a step cancelled while generating still saves its finished ys whole (no cancel inside)
                cancelled = _save(config, pair, writer, batch, ids_batch, ys, b0, tally, None if cancelled else cancel) or cancelled
            if cancelled:
                tally.emit("cancelled", f"cancelled: {tally.done} prompt(s) saved in {config.out}")
                raise Cancelled()
        measure_cost(config, pair, writer, prompts[0], tally, cancel)
    tally.emit("done", f"{tally.done} prompt(s) saved in {config.out}" + stored)
    return config.out


def _open_writer(config: OracleConfig, pair: RunPair) -> tuple[RunWriter, dict[str, Any]]:
    """The run's writer (new, or resuming) and this invocation's metadata: the pair's models and
    engine, how y is built (`pair.run_generation`), the shard."""
    meta = new_meta(config.out.name, **pair.meta, generation=pair.run_generation(config),
                    shard=list(config.shard) if config.shard else None, **config.extra_meta)
    for key in ("target", "draft"):
        meta[key] = public_model(meta[key], config.record_paths)
    return RunWriter(config.out, meta, resume=config.resume), meta


def _save(config: OracleConfig, pair: RunPair, writer: RunWriter, batch: list[Prompt], ids_batch: list[list[int]],
          ys: list[list[int]], b0: int, tally: Tally, cancel: threading.Event | None) -> bool:
    """Teacher-force the finished ys (the first len(ys) prompts of the step) and append each stream as it
    is done; True when a cancel stopped it (the streams before are kept)."""
    tally.emit("teacher-forcing", f"teacher-forcing {len(ys)} prompt(s)", prompt_index=b0)
    try:
        for prompt, y, stream in zip(batch, ys, pair.streams(config, batch, ids_batch, ys, b0, tally, cancel)):
            writer.append(stream)
            tally.saved(stream)
            tally.emit("saved", f"saved {prompt.id}", prompt_index=b0, prompt_id=prompt.id, corpus=prompt.corpus,
                       tokens=len(y), bits="".join(map(str, stream.bits.tolist())))
    except Cancelled:
        return True
    return False


def measure_cost(config: OracleConfig, pair: RunPair, writer: RunWriter, prompt: Prompt, tally: Tally,
                 cancel: threading.Event | None) -> None:
    """The costs of SPEC 1.7 (c_decode, c_draft, c_verify(g): `pair.cost_sampler`, one warm-up round and
    config.cost_repeats timed rounds) at the context of `prompt` + max_new_tokens tokens, stored as the
    run's cost and as a cost profile of this machine (SPEC 6), unless the run has them (or
    --remeasure-cost: again, the earlier values kept in cost.earlier)."""
    from specterm.core.decide.hardware.profiles import new_profile, with_profile

    old_cost = dict(writer.meta.get("cost") or {})
    if not config.measure_cost or (old_cost.get("r_measured") and not config.remeasure_cost):
        return
    tally.report(Progress("cost", f"measuring {pair.cost_label}: c_decode, c_draft, c_verify(g) (interleaved repeats)",
                          n_prompts=tally.n_todo))
    ids = pair.encode_prompt(prompt.text, f"prompt {prompt.id!r} ({prompt.corpus})")
    ctx = context_ids(ids, len(ids) + config.max_new_tokens)

    def on_measure(i: int, total: int, label: str, seconds: float) -> None:
        tally.report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s", n_prompts=tally.n_todo,
                              elapsed_s=time.perf_counter() - tally.t_start, step=i, steps=total))

    cost = run_rounds(pair.cost_sampler(ctx, config.cost_gammas, on_measure, cancel), config.cost_repeats)
    cost["measured_at"] = new_meta("")["created"]
    cost.update(pair.cost_extras())
    # a cost profile of this machine (SPEC 6), read before `cost` changes (an old run's costs migrate first)
    profiles = with_profile(writer.meta, new_profile(cost, pair.describe(), source="measured by specterm run"))
    if old_cost.get("r_measured"):
        cost["earlier"] = [*old_cost.pop("earlier", []), old_cost]
    writer.update_meta(cost=cost, profiles=profiles)
