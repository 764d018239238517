"""`specterm costs RUN`: measure a cost profile of this machine and add it to the run (SPEC 6 "Cost
profiles"), written once against the engine interface (engines/base.py), so it runs on every engine.

1. Open the run's pair in its engine (models found by name and sha256), `threads` per forward
   (default: 1 on a machine with <= 2 cores, else every core; recorded).
2. Context: the run's median prompt + y/2 tokens (SPEC 6), the cache filled once.
3. Rounds (engines/torch/costs_torch.RoundRobinSampler): a light warm-up, FULL_ROUNDS round(s) of the whole g curve
   (c_decode, c_draft, c_draft2, c_verify(g) for g = 1..16, and the engine's per-block terms), then
   focused rounds of the quantities the decision still needs (decode, the draft's, and the g in
   core/decide/hardware/settle's `focus`: g_hw, the runner-up, and every g the decision could still use),
   until every set's verdict and g_hw are settled (core/decide/hardware/settle: which needs 3 samples of
   each of those) or a cap (max rounds, max seconds). A draft length the decision cannot use (settle's
   pruning) stays timed once. The profile says why it stopped.
4. Busy machine: after every round, the load average and the CPU that other processes used during
   it (core/decide/machine.other_cpu_share). Above BUSY_OTHER_SHARE of a core (or a load above the cores)
   the round is dropped and timing waits for the machine to be quiet (`quiet_wait` s, then stops
   with one sentence); with `busy_ok` it keeps timing and the profile is marked busy, a warning that
   every verdict drawn from it carries.
5. The whole block's cost (SPEC 6): where the engine can time whole blocks (base.BlockTimer), short real
   speculative generations along stored y (BLOCK_TOKENS tokens of the first stream of BLOCK_PROMPTS corpora
   whose gate held, so the blocks are the walk's) at BLOCK_GAMMAS and the pooled g_hw, BLOCK_REPEATS times,
   after one untimed warm-up; per generation the time outside its forwards on the decision clock, fitted
   as o(g) = a + b g (core/decide/hardware/overhead.py) and stored as cost.block_overhead with its samples.
   llama.cpp times its own decoder (llama-speculative-simple) and reads the seconds inside the models from
   its perf summary (core/compare/speclog); where that cannot run (no binary) the profile stores none, a
   warning says why, and its verdicts say the block overhead was not measured.
   A drafter run (SPEC 2b: prompt lookup, n-gram; no draft model) goes through the same steps: its pair is the
   target with the run's drafter (torch: engines/torch TorchPair), its rounds time the drafter's proposal as
   c_draft per block, its sets settle on the drafter decision (core/drafted/drafter_settle), and its whole
   blocks are the speculative decoder's with the drafter proposing, on the stored streams where the drafter
   proposes most; each sample adds the tokens its blocks drafted (o(d) is fitted on them) and the drafter's
   own seconds in the loop, which are c_draft's, not outside (as a draft model's forwards are not): o(d) is
   the target's side of the block. (On the Qwen prompt-lookup run the loop's search took 350-430 us a block
   against the rounds' 59 us, a proposal on the cost context: `drafter_s` keeps the in-loop figure.)
6. `batch`: the by-batch grid (B = 1, 2, 4, 8) after the rounds, reusing their B = 1 forwards.
7. The profile is appended to run.json's `profiles` under the run's lock (old runs' costs are first
   written out as their migrated profiles); nothing is written before the end, so Ctrl-C keeps
   nothing half-written.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.decide.hardware.profiles import BUSY_OTHER_SHARE, PROFILES_KEY, load_busy, new_profile, with_profile
from specterm.core.decide.hardware.curve import MIN_SAMPLES
from specterm.core.decide.hardware.overhead import KEY as OVERHEAD_KEY
from specterm.core.decide.hardware.overhead import overhead_record
from specterm.core.decide.hardware.engine_loop import KEY as LOOP_KEY
from specterm.core.decide.hardware.engine_loop import priced_in_loop
from specterm.core.decide.hardware.settle import SetSettle, set_settle
from specterm.core.store.meta import drafter_of
from specterm.core.decide.machine import cpu_busy_seconds, default_threads, other_cpu_share, own_cpu_seconds, timing_cpus
from specterm.core.params import COSTS_MAX_ROUNDS, COSTS_MAX_SECONDS
from specterm.engines.progress import Progress, check_cancel
from specterm.core.report.types import POOLED
from specterm.core.store import RunLock, Run, Stream, check_unlocked, load_run, new_meta, read_meta, write_meta_atomic
from specterm.engines import engine_for
from specterm.engines.base import OpenOptions, Sampler

COST_GAMMAS = tuple(range(1, 17))
FULL_ROUNDS = 1        # timed rounds of the whole g curve; the g the decision can use are timed until settled
MAX_ROUNDS = COSTS_MAX_ROUNDS      # timed rounds at most (full and focused); core/params says why
MAX_SECONDS = COSTS_MAX_SECONDS    # timing (not loading) at most, seconds
QUIET_WAIT = 120.0     # seconds to wait for a busy machine to be quiet before stopping
BLOCK_GAMMAS = (1, 4, 8)  # draft lengths of the block overhead's generations (SPEC 6: three or more), + g_hw
BLOCK_PROMPTS = 2      # stored prompts (the first of each corpus, corpora in order) timed at each of them
BLOCK_TOKENS = 32      # tokens per generation: short, the overhead is per block
BLOCK_REPEATS = 2      # generations per (prompt, g)
QUIET_POLL = 2.0


@dataclass
class CostsConfig:
    run: Path
    threads: int | None = None
    device: str | None = None
    dtype: str | None = None
    target: str | None = None
    draft: str | None = None
    batch: bool = False
    max_rounds: int = MAX_ROUNDS
    max_seconds: float = MAX_SECONDS
    busy_ok: bool = False
    quiet_wait: float = QUIET_WAIT
    block_overhead: bool = True  # time whole blocks for o(g) (where the engine can)
    block_prompts: int = BLOCK_PROMPTS
    block_tokens: int = BLOCK_TOKENS


Settler = Callable[[dict[str, Any]], SetSettle | None]


def set_settlers(run: Run, gammas: np.ndarray) -> dict[str, Settler]:
    """Per corpus and the pooled set: the stopping rule under a cost dict (core/decide/hardware/settle). A
    drafter run's sets settle on its walk over L_s, m_s (core/drafted/drafter_settle: S_hw(g) reads every
    c_verify(d), d <= g); a draft model's on E(g) of its bits (`set_curves`)."""
    if drafter_of(run.meta) is not None:
        from specterm.core.drafted.drafter_analysis import set_walks
        from specterm.core.drafted.drafter_settle import drafter_settlers

        return drafter_settlers(set_walks(run, gammas, boot=400, seed=0))
    def settler(E: np.ndarray, E_boot: np.ndarray) -> Settler:
        return lambda cost: set_settle(gammas, E, cost, E_boot=E_boot)

    return {name: settler(E, E_boot) for name, (E, E_boot) in set_curves(run, gammas).items()}


def set_curves(run: Run, gammas: np.ndarray, boot: int = 400, seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per corpus and the pooled set: (E_true(g), E_true(g) in `boot` prompt resamples) over the
    analysed positions of each stream (SPEC 2: sum tokens / sum blocks; resamples as the report's,
    multinomial weights over the set's streams)."""
    from specterm.core.streams.blockwalk import walk_table
    from specterm.core.streams.bootstrap import multinomial_weights

    sets: dict[str, list[np.ndarray]] = {}
    for s in run.streams:
        if s.valid_len:
            sets.setdefault(s.corpus, []).append(s.a)
    if sets:
        sets[POOLED] = [b for name in sorted(sets) for b in sets[name]]
    out = {}
    for i, (name, bits) in enumerate(sorted(sets.items())):
        tokens, blocks = walk_table(bits, gammas)
        W = multinomial_weights(len(bits), boot, seed + i)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = (tokens.sum(axis=0) / blocks.sum(axis=0), (W @ tokens) / (W @ blocks))
    return out


RUN_CONTEXT_RULE = "median over the run's streams of prompt tokens + n/2"
IMPORTED_PROMPT_TOKENS = 64
"""Imported bits store no prompt: their cost context takes a prompt of this many tokens (the median
prompt of the built-in corpora is of this order) + n/2, and the profile says so."""
IMPORTED_CONTEXT_RULE = (f"imported bits (no prompt stored): {IMPORTED_PROMPT_TOKENS} prompt tokens + the median over "
                         "the run's streams of n/2")
FILLER = "The quick brown fox jumps over the lazy dog. "


def context_length(run: Run, encode: Callable[[str], list[int]]) -> tuple[int, list[int], str]:
    """SPEC 6's cost context: the median over the run's streams of prompt tokens + n/2, and ids of that
    length (the first stream's prompt + y, repeated; only the length matters), and the rule used.
    Imported bits store no prompt or y: IMPORTED_PROMPT_TOKENS + the median n/2, over a filler text."""
    from specterm.engines.timing import context_ids

    usable = [s for s in run.streams if s.prompt is not None and s.y is not None and s.n > 0]
    if not usable:
        ns = [s.n for s in run.streams if s.n > 0]
        if not ns:
            raise SpectermError("the run has no positions; nothing to time costs for.")
        n = int(round(IMPORTED_PROMPT_TOKENS + statistics.median(ns) / 2))
        return n, context_ids(encode(FILLER * 8), n), IMPORTED_CONTEXT_RULE
    lengths = [len(encode(s.prompt)) + s.n / 2 for s in usable if s.prompt is not None]
    n = int(round(statistics.median(lengths)))
    first = usable[0]
    assert first.prompt is not None and first.y is not None
    return n, context_ids(encode(first.prompt) + first.y.tolist(), n), RUN_CONTEXT_RULE


def settle_all(settlers: dict[str, Settler], cost: dict[str, Any]) -> dict[str, SetSettle]:
    out = {}
    for name, settle in settlers.items():
        got = settle(cost)
        if got is not None:
            out[name] = got
    return out


class Quiet:
    """The load and other processes' CPU over each round (core/decide/machine), and waiting for quiet.
    Pinned to fewer CPUs than the machine has (machine.timing_cpus), other processes' CPU is counted on
    those CPUs only and the machine-wide load average is recorded but does not decide: a process pinned
    to another core shares no core with the timing."""

    def __init__(self, threshold: float = BUSY_OTHER_SHARE) -> None:
        self.threshold = threshold
        self.cpus = timing_cpus()
        self.cores = os.cpu_count() or 1
        self.worst_other = 0.0
        self.worst_load = 0.0
        self._start()

    def _start(self) -> None:
        self.t0, self.busy0, self.own0 = time.perf_counter(), cpu_busy_seconds(self.cpus), own_cpu_seconds()

    def read(self) -> tuple[float | None, float]:
        """(other processes' CPU in cores since the last read, the 1-minute load average); restarts."""
        busy1, own1, t1 = cpu_busy_seconds(self.cpus), own_cpu_seconds(), time.perf_counter()
        other = (None if self.busy0 is None or busy1 is None
                 else other_cpu_share(self.busy0, busy1, self.own0, own1, t1 - self.t0))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        self._start()
        return other, load

    def busy(self, other: float | None, load: float) -> bool:
        if self.cpus is not None and other is not None:
            return other > self.threshold
        return (other is not None and other > self.threshold) or load_busy(load, self.cores)

    def note(self, other: float | None, load: float) -> None:
        self.worst_other = max(self.worst_other, other or 0.0)
        self.worst_load = max(self.worst_load, load)

    def record(self, other: float | None, load: float) -> dict[str, Any]:
        """A profile's `load`: the load average, other processes' CPU (on the pinned CPUs, listed in `cpus`)."""
        return {"avg": round(load, 2), "other_cpu_share": None if other is None else round(other, 3),
                **({"cpus": sorted(self.cpus)} if self.cpus is not None else {})}


def measure(config: CostsConfig, report: Callable[[Progress], None] = lambda p: None, cancel: Any = None,
            warn: Callable[[str], None] = lambda m: None, pair: Any = None) -> dict[str, Any]:
    """Measure a cost profile of this machine for the run (module docstring) and append it to run.json;
    returns the profile record. `pair`: an open pair to time (not closed here; None: the run's engine opens
    the run's models)."""
    run_dir = Path(config.run)
    run = load_run(run_dir)
    check_unlocked(run_dir)  # before minutes of loading, as confirm does
    if config.max_rounds < MIN_SAMPLES:
        raise SpectermError(f"--max-rounds must be at least {MIN_SAMPLES} (a cost needs {MIN_SAMPLES} samples for its spread).")
    threads = config.threads if config.threads is not None else default_threads(os.cpu_count())
    if threads < 1:
        raise SpectermError("--threads must be at least 1.")
    gammas = np.array(COST_GAMMAS, dtype=np.int64)
    settlers = set_settlers(run, gammas)
    if not settlers:
        raise SpectermError("the run has no analysed positions; nothing to decide.")
    engine = engine_for(run.meta)
    t_load = time.perf_counter()
    own = pair is None
    if pair is None:
        pair = engine.open(run.meta, OpenOptions(target=config.target, draft=config.draft, device=config.device,
                                                 dtype=config.dtype, threads=threads), report)
    try:
        load_s = time.perf_counter() - t_load
        ctx_len, ctx, context_rule = context_length(run, pair.encode)
        described = pair.describe()
        check_cancel(cancel)
        t0 = time.perf_counter()

        def on_measure(i: int, total: int, label: str, seconds: float) -> None:
            report(Progress("cost", f"{label} {seconds:.3f} s", prompts_done=i, n_prompts=total,
                            elapsed_s=time.perf_counter() - t0))

        report(Progress("cost", f"timing {engine.name} forwards at context {ctx_len} ({threads} thread(s))"))
        sampler = pair.cost_sampler(ctx, COST_GAMMAS, on_measure, cancel)
        profile_extra = _rounds(sampler, settlers, config, t0, warn, cancel)
        batch_record = None
        cost = sampler.summary()
        cost["measured_at"] = new_meta("")["created"]
        cost["measured_by"] = "specterm costs"
        if config.block_overhead and hasattr(pair, "block_timed"):
            cost = whole_blocks(pair, run, cost, settlers, config, cancel, report, warn)
        cost["timing_s"] = time.perf_counter() - t0
        cost["load_s"] = load_s
        if config.batch:
            report(Progress("cost", f"timing the by-batch grid at context {ctx_len}"))
            batch_record = pair.batch_costs(sampler, ctx, on_measure, cancel)
    finally:
        if own:
            pair.close()
    record = new_profile(cost, described, source="measured by specterm costs", batch_cost=batch_record,
                         context_rule=context_rule, **profile_extra)
    add_profile(run_dir, record)
    return record


def whole_blocks(pair: Any, run: Run, cost: dict[str, Any], settlers: dict[str, Settler], config: CostsConfig,
                 cancel: Any, report: Callable[[Progress], None], warn: Callable[[str], None]) -> dict[str, Any]:
    """`cost` with the block overhead o(g) (module docstring, step 5) and, for an engine priced in its own
    loop (pair.forwards_in_loop: llama.cpp), its forwards read from the same generations at every g of the
    curve (core/decide/hardware/engine_loop); `cost` as it was, with a warning, where they cannot be timed."""
    report(Progress("cost", "timing whole speculative blocks for the block overhead o(g)"))
    settled = settle_all(settlers, cost)
    g_hw = (settled.get(POOLED) or next(iter(settled.values()))).gamma_hw if settled else None
    g_block = sorted(set(BLOCK_GAMMAS) | ({g_hw} if g_hw is not None else set()))
    in_loop = bool(getattr(pair, "forwards_in_loop", False))
    g_once: list[int] = []
    if in_loop:  # every g the curve has, once; the g of o(g)'s line again (engine_loop's c_verify(g))
        g_once = [g for g in COST_GAMMAS if g not in g_block]
    quiet = Quiet()
    try:
        samples = block_samples(pair, run, g_block, str(cost.get("decision_clock") or "wall"), config, cancel,
                                report, g_once)
    except SpectermError as e:  # e.g. llama.cpp without its speculative binary: the profile says not measured
        warn(f"the block overhead was not measured: {e}")
        return cost
    other, load = quiet.read()  # the machine while the blocks were timed, kept with them
    # o(g)'s line is fitted on the g timed BLOCK_REPEATS times (BLOCK_GAMMAS and g_hw), as for every engine
    fitted = [s for s in samples if s["gamma"] in g_block]
    cost[OVERHEAD_KEY] = {**overhead_record(fitted, "cpu" if cost.get("decision_clock") == "cpu" else "wall"),
                          "load": quiet.record(other, load), "busy": quiet.busy(other, load)}
    if quiet.busy(other, load):
        warn(f"busy machine while timing whole blocks (load {load:.2f}): o(g) is marked busy")
    if in_loop:
        greedy = loop_greedy(pair, run, config, cancel, report)
        try:
            cost = priced_in_loop(cost, samples, COST_GAMMAS, greedy)
        except SpectermError as e:
            warn(str(e))
        else:  # every generation, those at the g timed once too
            cost[LOOP_KEY]["generations"] = [{k: s[k] for k in ("gamma", "blocks", "tokens", "target_s", "draft_s",
                                                                "loop_drafted", "outside_s", "prompt") if k in s}
                                             for s in samples]
            cost[LOOP_KEY]["greedy"] = greedy
    return cost


def loop_greedy(pair: Any, run: Run, config: CostsConfig, cancel: Any,
                report: Callable[[Progress], None] = lambda p: None) -> list[dict[str, Any]]:
    """Plain greedy generations in the engine's loop, for c_decode (core/decide/hardware/engine_loop): each block
    prompt's whole stored y (its mean context is the cost context's rule, prompt + y/2), BLOCK_REPEATS times;
    [{"prompt", "tokens", "seconds"}]. [] where the pair has no greedy loop."""
    from specterm.engines.confirm import build_items

    if not hasattr(pair, "greedy_loop"):
        return []
    chosen = block_streams(run, max(1, config.block_prompts), config.block_tokens)
    items = build_items(chosen, pair.encode, None, np.array([1], dtype=np.int64)) if chosen else []
    out = []
    for _rep in range(BLOCK_REPEATS):
        for it in items:
            check_cancel(cancel)
            tokens, seconds = pair.greedy_loop(it)
            out.append({"prompt": it.stream.id, "tokens": tokens, "seconds": seconds})
            report(Progress("cost", f"greedy {it.stream.corpus}/{it.stream.id}: {tokens} tokens, "
                                    f"{1e3 * seconds / max(tokens, 1):.1f} ms a token"))
    return out


def block_samples(pair: Any, run: Run, block_gammas: list[int], clock: str, config: CostsConfig, cancel: Any,
                  report: Callable[[Progress], None] = lambda p: None,
                  gammas_once: list[int] | None = None) -> list[dict[str, Any]]:
    """The block overhead's samples (module docstring, step 5): per generation {"gamma", "blocks",
    "outside_s" (on `clock`), "outside_wall_s", "outside_cpu_s", "wall_s", "corpus", "prompt", "tokens",
    "blocks_walk", "identical"}; blocks are the decoder's target calls, blocks_walk the walk's on the stored
    stream (equal when the output equals y). A drafter run's samples add "drafted" (the tokens its blocks
    drafted; the fit reads them, overhead.py), "drafted_walk" and "drafter_s" (its proposals' seconds, the
    decision's c_draft per block, so not outside). An engine priced in its own loop (pair.forwards_in_loop:
    llama.cpp) adds "target_s", "draft_s" and "loop_drafted" (core/decide/hardware/engine_loop), times each
    stored y whole, and the g of `gammas_once` in the first repeat only."""
    from specterm.engines.confirm import build_items

    chosen = block_streams(run, max(1, config.block_prompts), config.block_tokens)
    if not chosen:
        raise SpectermError("no stored stream with prompt text, y and a gate of 1.000 to time whole blocks on; "
                            "pass --no-block-overhead.")
    once = sorted(gammas_once or [])  # timed in the first repeat only
    every = sorted(set(block_gammas) | set(once))
    in_loop = bool(getattr(pair, "forwards_in_loop", False))

    # the engine's loop prices its forwards: each generation the stored y whole, so its blocks sit at the
    # contexts the decision is about (mean: prompt + y/2, the cost context's rule) and draft g to near the end
    # (-n cuts the last ones short); o(g) alone needs only short ones
    n_gen = None if in_loop else config.block_tokens
    items = build_items(chosen, pair.encode, n_gen, np.array(every, dtype=np.int64))
    walk = drafter_walk(run)
    pair.block_timed(items[0], block_gammas[0], cancel)  # warm-up (untimed)
    samples: list[dict[str, Any]] = []
    total = len(items) * (len(block_gammas) * BLOCK_REPEATS + len(once))
    for rep in range(BLOCK_REPEATS):
        for it in items:
            for g in every if rep == 0 else block_gammas:
                check_cancel(cancel)
                t = pair.block_timed(it, g, cancel)
                out_wall = t.wall_s - t.forwards_wall_s - t.drafter_wall_s
                out_cpu = t.cpu_s - t.forwards_cpu_s - t.drafter_cpu_s
                sample = {"gamma": int(g), "blocks": int(t.blocks), "outside_s": out_cpu if clock == "cpu" else out_wall,
                          "outside_wall_s": out_wall, "outside_cpu_s": out_cpu, "wall_s": t.wall_s,
                          "corpus": it.stream.corpus, "prompt": it.stream.id, "tokens": len(t.tokens),
                          "blocks_walk": it.blocks[int(g)], "identical": t.tokens == it.y}
                if t.loop_target_s is not None:  # the engine's own forwards (engine_loop)
                    sample.update(target_s=t.loop_target_s, draft_s=t.loop_draft_s, loop_drafted=t.loop_drafted)
                if walk is not None:
                    blocks_walk, drafted_walk = walk(it.stream, it.n, int(g))
                    assert t.drafted is not None  # a drafter run's pair reports its drafted tokens
                    sample.update(drafted=int(t.drafted), drafter_s=t.drafter_cpu_s if clock == "cpu" else t.drafter_wall_s,
                                  blocks_walk=blocks_walk, drafted_walk=drafted_walk)
                samples.append(sample)
                report(Progress("cost", f"block g={g} {it.stream.corpus}/{it.stream.id}: {t.blocks} blocks, "
                                        f"{1e3 * out_wall / max(t.blocks, 1):.2f} ms outside the forwards per block",
                                prompts_done=len(samples), n_prompts=total))
    return samples


def block_streams(run: Run, k: int, tokens: int) -> list[Stream]:
    """The stored streams whose whole blocks are timed: the first gate-held stream of k corpora (corpora in
    order). A drafter run takes, of each corpus, the gate-held stream whose drafter proposes at the most of its
    first `tokens` block starts, and the k corpora where that is most (so the blocks draft: o(d) needs blocks of
    several drafted lengths d)."""
    from specterm.engines.confirm import select_streams

    if drafter_of(run.meta) is None:
        return select_streams(run.streams, 1, gate_held=True)[:k]
    usable = [s for s in run.streams if s.prompt is not None and s.y is not None and s.n > 0 and s.valid_len == s.n
              and s.proposed is not None]
    best: dict[str, tuple[int, Stream]] = {}
    for s in usable:
        count = int(np.count_nonzero(np.asarray(s.proposed)[:tokens]))
        if s.corpus not in best or count > best[s.corpus][0]:
            best[s.corpus] = (count, s)
    return [s for _, s in sorted(best.values(), key=lambda cs: (-cs[0], cs[1].corpus))][:k]


def drafter_walk(run: Run) -> Callable[[Stream, int, int], tuple[int, int]] | None:
    """For a drafter run: (blocks, drafted) of the walk on a stream's first n starts at g (SPEC 2b, the drafter's
    rule per g), literally (core/drafted/walk.walk_loop); None for a draft model's run."""
    draft = drafter_of(run.meta)
    if draft is None:
        return None
    from specterm.core.drafted.drafter_analysis import DraftRule
    from specterm.core.drafted.walk import walk_loop

    rule = DraftRule.of(draft)

    def walk(stream: Stream, n: int, g: int) -> tuple[int, int]:
        assert stream.runs is not None and stream.proposed is not None
        caps = rule.caps([stream])
        _, blocks, drafted = walk_loop(stream.runs[:n], stream.proposed[:n], g, n, rule.min_draft,
                                       None if caps is None else caps[0][:n])
        return blocks, drafted

    return walk


def _rounds(sampler: Sampler, settlers: dict[str, Settler], config: CostsConfig, t0: float,
            warn: Callable[[str], None], cancel: Any) -> dict[str, Any]:
    """The timing rounds (module docstring, steps 3 and 4); returns the profile's load, busy flag and
    stop reason."""
    quiet = Quiet()
    busy_kept = False
    timed = 0
    labels = [str(q[0]) for q in sampler.quantities]
    sampler.plan(1 + FULL_ROUNDS)
    sampler.round()  # warm-up (untimed)
    quiet.read()
    stop = ""
    while True:
        check_cancel(cancel)
        only = None
        if timed >= FULL_ROUNDS:
            settled = settle_all(settlers, sampler.summary())
            if settled and all(s.settled for s in settled.values()):
                pooled = settled.get(POOLED) or next(iter(settled.values()))
                stop = (f"settled after {timed} timed rounds: every set's verdict and g_hw are settled by the costs "
                        f"(pooled: {pooled.why()})")
                break
            if timed >= config.max_rounds:
                stop = f"cap: {config.max_rounds} timed rounds (not settled: {_open_sets(settled)})"
                break
            focus = sorted({g for s in settled.values() if not s.settled for g in s.focus})
            # every per-round step (decode, the draft's steps or a drafter's proposal) and the focus' forwards
            only = ({q for q in labels if not q.startswith(("verify:", "draft_fwd:"))}
                    | ({f"verify:{g}" for g in focus} | {f"draft_fwd:{g}" for g in focus}) & set(labels))
            if time.perf_counter() - t0 + _round_estimate(sampler, only) > config.max_seconds:
                stop = (f"cap: {config.max_seconds:.0f} s of timing after {timed} rounds, the next would pass it "
                        f"(not settled: {_open_sets(settled)})")
                break
            sampler.plan(1)
        did = sampler.round(only)
        other, load = quiet.read()
        if quiet.busy(other, load):
            share = "?" if other is None else f"{other:.2f}"
            if config.busy_ok:
                busy_kept = True
                quiet.note(other, load)
                warn(f"busy machine: other processes used {share} of a core (load {load:.2f}); timing goes on (--busy-ok), "
                     "the profile is marked busy")
            else:
                sampler.drop(did)
                warn(f"busy machine: other processes used {share} of a core during that round (load {load:.2f}); "
                     "the round is dropped, waiting for the machine to be quiet")
                _wait_quiet(quiet, config.quiet_wait, cancel)
                continue
        else:
            quiet.note(other, load)
        timed += 1
    extra = {"load": quiet.record(quiet.worst_other, quiet.worst_load),
             "busy": busy_kept, "stop_reason": stop, "rounds": timed}
    return extra


def _round_estimate(sampler: Sampler, only: set[str]) -> float:
    """Seconds the next focused round should take: the sum of the median wall time of each forward in it."""
    return float(sum(statistics.median(sampler.samples[k]) for k in only if sampler.samples.get(k)))


def _open_sets(settled: dict[str, SetSettle]) -> str:
    """ "json (verdict), pooled (g)": each unsettled set with what is open in it."""
    return "; ".join(f"{n} ({s.open_parts()})" for n, s in settled.items() if not s.settled)


def _wait_quiet(quiet: Quiet, limit: float, cancel: Any) -> None:
    """Poll until other processes use less than the threshold over a poll, or give up after `limit` s."""
    waited = 0.0
    other: float | None = None
    load = 0.0
    while waited < limit:
        check_cancel(cancel)
        time.sleep(QUIET_POLL)
        waited += QUIET_POLL
        other, load = quiet.read()
        if not quiet.busy(other, load):
            return
    share = "?" if other is None else f"{other:.2f}"
    raise SpectermError(f"the machine stayed busy for {limit:.0f} s (other processes {share} of a core, load {load:.2f}); "
                        "run `specterm costs` again when it is quiet, or pass --busy-ok to keep a profile marked busy.")


def add_profile(run_dir: Path, record: dict[str, Any]) -> None:
    """Append a profile to run.json under the run's lock (the migrated profiles of an old run first);
    an existing profile with the same id is kept, never overwritten."""
    with RunLock(run_dir):
        meta = read_meta(run_dir)
        meta[PROFILES_KEY] = with_profile(meta, record)
        write_meta_atomic(run_dir, meta)


def costs_command(*, run: Path, threads: int | None, device: str | None, dtype: str | None, target: str | None,
                  draft: str | None, batch: bool, max_rounds: int, max_seconds: float, busy_ok: bool,
                  quiet_wait: float, block_overhead: bool = True) -> None:
    """CLI glue: a progress bar on a terminal (log lines otherwise), warnings on stderr, then each set's
    decision under the new profile. Ctrl-C writes nothing."""
    import sys

    from specterm.engines.progress import Cancelled

    read_meta(Path(run))  # one sentence for a wrong path, before anything slow
    config = CostsConfig(run=Path(run), threads=threads, device=device, dtype=dtype, target=target, draft=draft,
                         batch=batch, max_rounds=max_rounds, max_seconds=max_seconds, busy_ok=busy_ok,
                         quiet_wait=quiet_wait, block_overhead=block_overhead)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)

    from contextlib import AbstractContextManager, nullcontext

    bar_ctx: AbstractContextManager[Any] = nullcontext()
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        bar = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           console=Console(stderr=True))
        task = bar.add_task("loading the models", total=None)
        bar_ctx = bar

        def on_progress(p: Progress) -> None:
            if p.n_prompts:
                bar.update(task, total=p.n_prompts, completed=p.prompts_done, description=f"timing {p.message}"[:50])
            else:
                bar.update(task, description=p.message[:70])

        def warn(msg: str) -> None:
            bar.console.print(f"[yellow]{msg}[/]")
    else:
        last = [0.0]

        def on_progress(p: Progress) -> None:
            if not p.n_prompts or time.perf_counter() - last[0] > 5:
                last[0] = time.perf_counter()
                log(p.message if not p.n_prompts else f"timing {p.prompts_done}/{p.n_prompts}: {p.message}")

        warn = log
    try:
        with bar_ctx:
            record = measure(config, on_progress, warn=warn)
    except (Cancelled, KeyboardInterrupt):
        print("interrupted: no profile was written (run.json is unchanged).", file=sys.stderr)
        raise SystemExit(130) from None
    log(f"profile {record['id']} added to {Path(run) / 'run.json'}: {record['stop_reason']}")
    bo = record["cost"].get(OVERHEAD_KEY)
    if isinstance(bo, dict):
        log(f"block overhead: o(g) = {1e3 * bo['a_s']:.2f} ms + {1e3 * bo['b_s']:.3f} ms g per block outside the forwards "
            f"({len(bo['samples'])} generations at g = {', '.join(str(g) for g in sorted({x['gamma'] for x in bo['samples']}))})")
    log(f"timing {record['cost']['timing_s']:.1f} s, model loading {record['cost']['load_s']:.1f} s, "
        f"whole command {time.perf_counter() - t0:.1f} s")
    _print_decisions(Path(run), record["id"], log)


def _print_decisions(run_dir: Path, pid: str, log: Callable[[str], None]) -> None:
    """Each set's decision under profile `pid` (the report's decision_by_profile; a drafter run's report decides
    with this machine's newest profile, the one just added)."""
    from specterm.core.report.cache import cached_analyse

    run = load_run(run_dir)
    if drafter_of(run.meta) is not None:
        from specterm.core.drafted.drafter_analysis import analyse_drafter

        for name, ds in analyse_drafter([run]).ordered_sets():
            log(f"{name:>12}: {ds.decision_hw.verdict.split('; speculation at')[0]}")
        return
    report = cached_analyse([run])
    for name, s in report.ordered_sets():
        d = s.decision_by_profile.get(pid)
        if d is not None:
            log(f"{name:>12}: {d.verdict.split('; speculation at')[0]}")
