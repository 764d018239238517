"""`specterm run --draft prompt-lookup[:N]` (and ngram-simple): the oracle for drafters without a draft
model (SPEC 2b). No draft model is loaded.

For each prompt: y = the target's raw-argmax greedy continuation (batched greedy, as `run_oracle`
builds it without --spec-gamma); one teacher-forced pass of the target over prompt + y gives the gate
(target argmax at t == y_{t+1}, SPEC 1.3) and target_conf; then each drafter, along y, gives L_s and
m_s at every block start (engines/drafters/along.py). y and the target pass are shared by every
drafter: `--draft` repeated writes one run per drafter (the first at --out, the others beside it,
named --out + "-" + the drafter). Each finished prompt is appended to every run at once; --resume
continues the prompts some run lacks. `--y-from RUN` takes y from an earlier run of the same target,
and its gate and target_conf too when that run's target pass is this one's (same target checksum,
torch, dtype and device: the same teacher-forced computation), else the target pass runs here.

Costs: c_decode and c_verify(g) of the target, and each drafter's proposal time per block, timed in
the same interleaved rounds (engines/torch/costs_torch.DrafterCostSampler), stored as each run's cost and profile.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled, Progress, ProgressCallback, check_cancel
from specterm.core.store import RunWriter, Stream, load_run, new_meta, public_model
from specterm.engines.drafters import Drafter, along_y, drafter_from_spec
from specterm.engines.base import OracleConfig
from specterm.engines.oracle import prompts_to_run
from specterm.engines.progress import Tally
from specterm.engines.torch.models_torch import TargetOnly, load_target
from specterm.engines.torch.oracle_torch import POSITION_CHUNK, decode_pieces, encode_prompt, head_logits, hidden_states, torch_threads


def drafter_outs(out: Path, specs: list[str]) -> list[Path]:
    """The run directory of each drafter: --out for the first, --out-<drafter> for the others."""
    outs = [out] + [out.with_name(f"{out.name}-{spec.replace(':', '-')}") for spec in specs[1:]]
    if len({str(p) for p in outs}) != len(outs):
        raise SpectermError("--draft names the same drafter twice; give each once.")
    return outs


def teacher_force_target(pair: TargetOnly, prompt_ids: list[list[int]], ys: list[list[int]]) -> list[dict[str, np.ndarray]]:
    """One teacher-forced pass of the target over prompt + y[:-1] per prompt (batched, right padding):
    gate_t = 1 iff argmax target(. | prompt, y_1..y_t) == y_{t+1}, and target_conf_t = max_v p_t(v)."""
    import torch

    seqs = [p + y[:-1] for p, y in zip(prompt_ids, ys)]
    L = max(len(s) for s in seqs)
    dev = pair.model.device
    ids = torch.zeros((len(seqs), L), dtype=torch.long, device=dev)
    mask = torch.zeros((len(seqs), L), dtype=torch.long, device=dev)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, device=dev)
        mask[i, : len(s)] = 1
    h = hidden_states(pair.model, ids, mask)
    out = []
    for i, (p, y) in enumerate(zip(prompt_ids, ys)):
        n = len(y)
        conf = np.empty(n, dtype=np.float32)
        arg = np.empty(n, dtype=np.int64)
        for c0 in range(0, n, POSITION_CHUNK):
            c1 = min(n, c0 + POSITION_CHUNK)
            logits = head_logits(pair.model, h[i, len(p) - 1 + c0: len(p) - 1 + c1])
            pmax, parg = torch.softmax(logits, dim=-1).max(dim=-1)
            conf[c0:c1] = pmax.cpu().numpy()
            arg[c0:c1] = parg.cpu().numpy()
        out.append({"gate": (arg == np.asarray(y)).astype(np.uint8), "target_conf": conf})
    return out


class _DrafterTally(Tally):
    """The run's progress without an alpha (a drafter run has no per-position bits)."""

    def saved(self, stream: Stream, before: bool = False) -> None:
        if before:
            self.before += 1
        else:
            self.done += 1
        self.saved_n += stream.n
        self.saved_gate += int(stream.gate.sum()) if stream.gate is not None else stream.n


def _meta(config: OracleConfig, pair: TargetOnly, drafter: Drafter, out: Path) -> dict[str, Any]:
    meta = new_meta(
        out.name, **pair.meta, draft=drafter.describe(),
        generation={
            "decoding": "raw-argmax greedy (no logits processors or warpers)",
            "max_new_tokens": config.max_new_tokens,
            "y_built_with": f"batched greedy, {config.batch_size} prompts at a time",
            "eos_token_ids": sorted(pair.eos),
            "y_method": "batched greedy",
            "batch_size": config.batch_size,
            "prompt_encoding": "tokenizer(text) with its default special tokens, no chat template",
        },
        shard=list(config.shard) if config.shard else None, **config.extra_meta,
    )
    meta["target"] = public_model(meta["target"], config.record_paths)
    return meta


def _measure_costs(config: OracleConfig, pair: TargetOnly, drafters: list[Drafter], writers: list[RunWriter],
                   prompt_text: str, tally: Tally, cancel: Optional[threading.Event]) -> None:
    """The target's c_decode, c_verify(g) and each drafter's time per block, in one set of rounds, stored
    as a cost profile of each run that has none (or all with --remeasure-cost)."""
    from specterm.core.decide.hardware.profiles import new_profile, with_profile
    from specterm.engines.timing import context_ids, run_rounds
    from specterm.engines.torch.costs_torch import DrafterCostSampler
    from specterm.engines.torch.models_torch import describe_torch

    need = [i for i, w in enumerate(writers) if config.remeasure_cost or not (w.meta.get("cost") or {}).get("c_decode_s")]
    if not config.measure_cost or not need:
        return
    tally.report(Progress("cost", "measuring costs: c_decode, c_verify(g), each drafter's time per block",
                          n_prompts=tally.n_todo))
    ids = encode_prompt(pair.tokenizer, prompt_text)
    ctx = context_ids(ids, len(ids) + config.max_new_tokens)

    def on_measure(i: int, total: int, label: str, seconds: float) -> None:
        tally.report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.4f} s", n_prompts=tally.n_todo,
                              elapsed_s=time.perf_counter() - tally.t_start, step=i, steps=total))

    sampler = DrafterCostSampler(pair.model, [drafters[i] for i in need], ctx, config.cost_gammas,
                                 on_measure=on_measure, cancel=cancel)
    run_rounds(sampler, config.cost_repeats)
    described = describe_torch(str(pair.meta.get("device", "cpu")), torch_threads(), pair.meta.get("dtype"))
    load = [round(x, 2) for x in os.getloadavg()]  # at the end of the rounds: the 1, 5 and 15 minute averages
    when = new_meta("")["created"]
    for k, i in enumerate(need):
        cost = sampler.summary_for(k)
        cost["measured_at"] = when
        cost["load_avg"] = load
        old = writers[i].meta.get("cost") or {}
        # SPEC 6: a profile timed with the load above the cores is busy, and every verdict from it says so
        profiles = with_profile(writers[i].meta, new_profile(cost, described, source="measured by specterm run",
                                                             busy=load[0] > (os.cpu_count() or 1)))
        if old.get("c_decode_s"):
            cost["earlier"] = [*old.pop("earlier", []), old]
        writers[i].update_meta(cost=cost, profiles=profiles)


def stored_ys(y_from: Path, pair: TargetOnly, config: OracleConfig) -> dict[tuple[str, str, str], list[int]]:
    """y of each prompt an earlier run of the same target stores, keyed by (corpus, id, prompt text); one
    sentence when that run is of another target or another -n."""
    from specterm.core.store.modelkeys import model_key

    run = load_run(y_from)
    theirs = run.meta.get("target")
    if not isinstance(theirs, dict) or model_key(theirs) != model_key(public_model(pair.meta["target"])):
        raise SpectermError(f"--y-from {y_from} is a run of another target; take y from a run of {config.target}.")
    gen = run.meta.get("generation") or {}
    if gen.get("max_new_tokens") != config.max_new_tokens:
        raise SpectermError(f"--y-from {y_from} generated -n {gen.get('max_new_tokens')} tokens, this run -n "
                            f"{config.max_new_tokens}; use the same -n.")
    return {(s.corpus, s.id, s.prompt): s.y.astype(np.int64).tolist() for s in run.streams
            if s.y is not None and s.prompt is not None}


def stored_gates(y_from: Path, pair: TargetOnly) -> dict[tuple[str, str, str], dict[str, np.ndarray]]:
    """The gate (and target_conf) of each prompt of the --y-from run, when that run's target pass is this
    run's (same target checksum, checked by stored_ys; same engine, dtype and device: torch, this dtype,
    this device): the teacher-forced pass of the same target over the same prompt + y, the same numbers.
    Empty otherwise (this run teacher-forces them itself)."""
    run = load_run(y_from)
    meta = run.meta
    same = (meta.get("backend") in (None, "torch") and meta.get("dtype") == pair.meta.get("dtype")
            and meta.get("device") == pair.meta.get("device"))
    if not same:
        return {}
    return {(s.corpus, s.id, s.prompt): {"gate": s.gate, "target_conf": s.target_conf} for s in run.streams
            if s.prompt is not None and s.gate is not None and s.target_conf is not None and s.repairs is None}


def _ys_of_batch(config: OracleConfig, pair: TargetOnly, batch: list[Any], ids_batch: list[list[int]],
                 given: dict[tuple[str, str, str], list[int]], b0: int, tally: Tally,
                 cancel: Optional[threading.Event]) -> list[list[int]]:
    """y of each prompt of the batch: taken from --y-from where it has it, else batched greedy decoding."""
    from specterm.engines.torch import specdec

    t0 = time.perf_counter()
    tok_before = tally.gen_tokens
    where: dict[str, Any] = dict(prompt_index=b0, prompt_id=batch[0].id, corpus=batch[0].corpus)
    keys = [(p.corpus, p.id, p.text) for p in batch]
    decode = [i for i, k in enumerate(keys) if k not in given]

    def on_step(k: int) -> None:
        tally.gen_tokens = tok_before + k * len(decode)
        tally.emit("generating", tokens=k, gen_extra=time.perf_counter() - t0, **where)

    tally.emit("generating", f"prompts {tally.before + b0 + 1}-{tally.before + b0 + len(batch)}/"
                             f"{tally.before + tally.n_todo}: batched greedy ({len(batch) - len(decode)} y "
                             "taken from --y-from)", **where)
    decoded = specdec.batched_greedy_generate(pair.model, [ids_batch[i] for i in decode], config.max_new_tokens,
                                              pair.eos, pair.pad_id, on_step=on_step, cancel=cancel) if decode else []
    fresh = dict(zip(decode, decoded))
    ys = [fresh[i] if i in fresh else given[k] for i, k in enumerate(keys)]
    tally.gen_time += time.perf_counter() - t0
    tally.gen_tokens = tok_before + sum(len(y) for y in ys)
    return ys


def _save_batch(pair: TargetOnly, drafters: list[Drafter], writers: list[RunWriter], batch: list[Any],
                ids_batch: list[list[int]], ys: list[list[int]], given: dict[tuple[str, str, str], list[int]],
                b0: int, tally: Tally, gates: dict[tuple[str, str, str], dict[str, np.ndarray]] | None = None) -> None:
    """Teacher-force the target on the batch (the gate; `gates`: those the --y-from run's identical target
    pass stored, taken as they are), then each drafter's L_s and m_s along y, appended to every run that
    lacks the prompt."""
    gates = gates or {}
    keys = [(p.corpus, p.id, p.text) for p in batch]
    todo = [i for i, k in enumerate(keys) if not (k in given and k in gates)]
    forced_by = {}
    if todo:
        tally.emit("teacher-forcing", f"teacher-forcing {len(todo)} prompt(s)", prompt_index=b0)
        forced_by = dict(zip(todo, teacher_force_target(pair, [ids_batch[i] for i in todo], [ys[i] for i in todo])))
    forced = [forced_by[i] if i in forced_by else gates[k] for i, k in enumerate(keys)]
    for prompt, ids, y, cols in zip(batch, ids_batch, ys, forced):
        text, ends = decode_pieces(pair.tokenizer, y)
        first: Stream | None = None
        for drafter, w in zip(drafters, writers):
            if (prompt.corpus, prompt.id) in w.done:
                continue
            runs, proposed, _ = along_y(drafter, ids, y)
            stream = Stream(id=prompt.id, corpus=prompt.corpus, bits=np.zeros(0, dtype=np.uint8), prompt=prompt.text,
                            y=np.asarray(y, dtype=np.int32), text=text, piece_ends=ends,
                            stop="eos" if y and y[-1] in pair.eos else "length", runs=runs, proposed=proposed,
                            gate=cols["gate"], target_conf=cols["target_conf"], prompt_tokens=len(ids))
            w.append(stream)
            key = (prompt.corpus, prompt.id, prompt.text)
            if key in given:
                y_info = dict(w.meta.get("y_from") or {})
                y_info["prompts"] = int(y_info.get("prompts", 0)) + 1
                if key in gates:
                    y_info["gates_taken"] = int(y_info.get("gates_taken", 0)) + 1
                w.update_meta(y_from=y_info)
            first = first or stream
        if first is not None:
            tally.saved(first)
            tally.emit("saved", f"saved {prompt.id}", prompt_index=b0, prompt_id=prompt.id, corpus=prompt.corpus,
                       tokens=len(y))


def _stored_eos(outs: list[Path]) -> Optional[set[int]]:
    """The eos_token_ids every run of a resumed set stores (None when one has no run.json yet)."""
    from specterm.core.store import read_meta

    found: set[int] | None = None
    for out in outs:
        if not (out / "run.json").exists():
            return None
        ids = (read_meta(out).get("generation") or {}).get("eos_token_ids")
        if not isinstance(ids, list) or not ids:
            return None
        found = {int(i) for i in ids} if found is None else found
    return found


def run_drafters(config: OracleConfig, specs: list[str], on_progress: Optional[ProgressCallback] = None,
                 cancel: Optional[threading.Event] = None, pair: Optional[TargetOnly] = None,
                 y_from: Optional[Path] = None) -> list[Path]:
    """Run the oracle for the drafters `specs` over config.prompts (module docstring); the run directories.
    `y_from`: an earlier run of the target whose stored y is taken for the prompts it has (the gate of
    this run's teacher-forced pass checks it like a decoded one).

    Raises `Cancelled` when `cancel` is set; every prompt finished before that is in every run."""
    report = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    prompts = prompts_to_run(config)
    outs = drafter_outs(config.out, specs)
    for out in outs:
        if (out / "run.json").exists() and not config.resume:
            raise SpectermError(f"{out} already holds a run; pass --resume to continue it or choose another --out.")
    if pair is None:
        stored = _stored_eos(outs) if config.resume else None
        pair = load_target(config, report, eos=stored)
    check_cancel(cancel)
    drafters = [drafter_from_spec(s, pair.eos) for s in specs]
    given = stored_ys(y_from, pair, config) if y_from is not None else {}
    gates = stored_gates(y_from, pair) if y_from is not None else {}
    extra = {"y_from": {"run": str(y_from), "prompts": 0, "gates_taken": 0,
                        "how": "y of the prompts that run stores; their gate and target_conf too when its target pass "
                               "is this run's (same target checksum, torch, dtype, device), else teacher-forced here"}
             } if y_from is not None else {}
    writers = [RunWriter(out, {**_meta(config, pair, d, out), **extra}, resume=config.resume)
               for out, d in zip(outs, drafters)]
    from contextlib import ExitStack

    with ExitStack() as stack:
        for w in writers:
            stack.enter_context(w)
        todo = [p for p in prompts if any((p.corpus, p.id) not in w.done for w in writers)]
        tally = _DrafterTally(report, len(todo), config.max_new_tokens, t_start=t_start)
        for w in writers:
            for line in w.warnings:
                tally.emit("warning", line)
        if writers[0].done:
            for stream in load_run(outs[0]).streams:
                tally.saved(stream, before=True)
        for w in writers:
            w.update_meta(sessions=list(w.meta.get("sessions") or []) + [{
                "started": w.meta["created"], "prompts": len(todo), "y_built_with": "batched greedy",
                "batch_size": config.batch_size, "torch_threads": torch_threads(), "device": pair.meta.get("device")}])
        _measure_costs(config, pair, drafters, writers, prompts[0].text, tally, cancel)
        for b0 in range(0, len(todo), config.batch_size):
            batch = todo[b0: b0 + config.batch_size]
            ids_batch = [encode_prompt(pair.tokenizer, p.text, f"prompt {p.id!r} ({p.corpus})") for p in batch]
            try:
                ys = _ys_of_batch(config, pair, batch, ids_batch, given, b0, tally, cancel)
            except Cancelled:
                tally.emit("cancelled", f"cancelled: {tally.done} prompt(s) saved in {', '.join(map(str, outs))}")
                raise
            _save_batch(pair, drafters, writers, batch, ids_batch, ys, given, b0, tally, gates)
    tally.emit("done", f"{tally.done} prompt(s) saved in {', '.join(map(str, outs))}")
    return outs
