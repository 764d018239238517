"""The engine interface: what specterm needs of an inference engine (a Protocol each engine
implements; nothing here imports torch or llama_cpp).

An `Engine` opens a run's model pair (`OpenPair`). An open pair says what it is (`describe`: the
engine, its version and build, the device: what a cost profile records), encodes prompts, and
times forwards for the cost profile (`cost_sampler`: rounds of c_decode, c_verify(g), c_draft,
c_draft2, and the engine's per-block terms; `batch_costs`: the by-batch grid).

`specterm run` (engines/oracle.py) is written once against it: an engine checks a run's arguments
(`check_run`) and opens a pair for it (`open_run` -> `RunPair`), which generates y, gives the
teacher-forced (and repaired) streams and says what run.json records about the engine; the flow
(prompts, shards, the writer and resume, progress, the costs at the end) is the same for every engine.

`specterm confirm` (engines/confirm.py) is written once against it: a pair that can be confirmed
(`ConfirmPair`) times one greedy and one speculative generation of a prompt and says what its rows
record beside the common fields; the flow (items, cost rounds, choices, the record and its writes,
results, decision checks) is the same for every engine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from specterm.core.decide.hardware.profiles import new_profile
from specterm.core.store import Run, Stream
from specterm.engines.confirm_record import write_confirmation
from specterm.engines.progress import Progress, ProgressCallback, Tally
from specterm.engines.timing import COST_GAMMAS

if TYPE_CHECKING:
    from specterm.core.store import RunWriter
    from specterm.engines.corpora import Prompt

MeasureCallback = Callable[[int, int, str, float], None]


class Sampler(Protocol):
    """Rounds of timed forwards (engines/timing.RoundRobinSampler): `round()` times every quantity once
    (the first round is an untimed warm-up), `summary()` is the stored cost dict."""

    rounds: int
    samples: dict[str, list[float]]
    samples_cpu: dict[str, list[float]]
    quantities: list[tuple[Any, ...]]

    def plan(self, rounds: int) -> None: ...
    def round(self, only: set[str] | None = None) -> list[str]:
        """Time one round (`only`: these labels); the labels timed."""
        ...
    def drop(self, labels: list[str]) -> None:
        """Forget the last sample of each label (a round timed on a busy machine)."""
        ...
    def summary(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OpenOptions:
    """How to open a run's pair: model overrides (same checksum required), device, dtype, threads."""

    target: str | None = None
    draft: str | None = None
    device: str | None = None    # None: the run's device
    dtype: str | None = None     # None: the run's dtype
    threads: int = 1             # CPU threads per forward


@dataclass(frozen=True)
class BlockTiming:
    """One short real speculative generation timed for the block overhead (SPEC 6 "The whole block's cost"):
    its blocks (target calls), its whole seconds and the seconds inside its model forwards, in wall and
    process CPU time, and the tokens it emitted (compared with the stored y). A drafter without a model
    (SPEC 2b) also reports the tokens its blocks drafted and its own proposals' seconds (the decision's
    c_draft per block, so not counted outside)."""

    blocks: int
    wall_s: float
    cpu_s: float
    forwards_wall_s: float
    forwards_cpu_s: float
    tokens: list[int]
    drafted: int | None = None       # a drafter's: tokens drafted over the blocks (None: a draft model, g per block)
    drafter_wall_s: float = 0.0
    drafter_cpu_s: float = 0.0
    # an engine whose forwards are priced in its own loop (core/decide/hardware/engine_loop): the target's
    # seconds in the loop (prompt excluded), the draft's, and the tokens drafted; None elsewhere
    loop_target_s: float | None = None
    loop_draft_s: float | None = None
    loop_drafted: int | None = None


class OpenPair(Protocol):
    """A loaded draft/target pair of one engine."""

    def describe(self) -> dict[str, Any]:
        """{"engine": {"name", "version", "build"}, "device": {"kind", "name", "cores", "threads",
        "memory_gb", "driver", "capability"}, "dtype"}: what a cost profile records."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler: ...

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        """The costs by batch (run.json's batch_cost record), reusing the sampler's B = 1 rounds."""
        ...

    def close(self) -> None: ...


class BlockTimer(Protocol):
    """A pair that can time whole speculative blocks (`specterm costs` measures o(g) with it)."""

    def block_timed(self, item: Item, gamma: int, cancel: Any) -> BlockTiming:
        """A speculative generation of item.n tokens along the stored y at draft length `gamma`, timed."""
        ...


@dataclass
class Item:
    """One timed prompt: its ids, the stored y it is compared with (n tokens), and the exact walk of its
    stored stream at every measured g (blocks, and blocks after a fully accepted one: refeeds)."""

    stream: Stream
    ids: list[int]
    y: list[int]
    n: int
    blocks: dict[int, int]
    refeeds: dict[int, int]


@dataclass
class Generation:
    """One timed generation, as an engine's pair reports it: the tokens, the wall seconds, the fields of
    the prompt row it stores (greedy: greedy_*; speculative: the row under spec[g]), how many of the
    stored y it is compared with (None: all n), and the progress line's summary."""

    tokens: list[int]
    seconds: float
    fields: dict[str, Any]
    compare: int | None = None
    summary: str = ""


class BatchCostJob(Protocol):
    """The costs by batch of a confirm session: all at once (`run_all`), or, where the engine can
    (`sliced`), in slices between the prompts: `step(i, k)` after prompt i of k, `finish(k)` the record."""

    sliced: bool
    total: int                   # forwards to time

    def run_all(self) -> dict[str, Any]: ...
    def step(self, done: int, of: int) -> None: ...
    def finish(self, of: int) -> dict[str, Any]: ...


StepCallback = Callable[..., None]  # on_step(tokens=k, **progress fields): progress inside one generation


class ConfirmPair(OpenPair, Protocol):
    """An open pair that `specterm confirm` can time (engines/confirm.py); what differs between engines."""

    def confirm_setup(self, config: ConfirmConfig, items: list[Item], context: int, meta: dict[str, Any],
                      report: Callable[[Any], None], cancel: Any) -> dict[str, Any]:
        """Get ready to time `items` at cost context `context` (e.g. a KV context that holds them, a binary;
        `cancel` stops the generations); the engine's fields of the confirmation record: device, dtype,
        threads, method, and what else the engine records."""
        ...

    def timing(self) -> AbstractContextManager[Any]:
        """Around the timed generations (torch: forward hooks timing every forward)."""
        ...

    def warm_up(self, item: Item, gamma: int) -> None:
        """One short untimed greedy and speculative generation."""
        ...

    def greedy_timed(self, item: Item, on_step: StepCallback) -> Generation:
        """Plain greedy decoding of `item`, timed; fields: greedy_s, greedy_cpu_s and the engine's greedy_*."""
        ...

    def speculative_timed(self, item: Item, gamma: int, on_step: StepCallback) -> Generation | None:
        """The engine's lossless speculative decoding at draft length `gamma`, timed; fields: s, cpu_s,
        target_calls, blocks_walk, refeeds_walk and the engine's own; None when it cannot run on `item`."""
        ...

    def result_extras(self, spec_rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
        """The engine's columns of a (corpus, g) result `row` from the spec rows it sums."""
        ...

    def record_checks(self, prompt_rows: list[dict[str, Any]], cost: dict[str, Any]) -> dict[str, Any]:
        """Record-level checks rewritten with the results (torch: cross_check)."""
        ...

    def batch_cost_job(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                       cancel: Any, rounds_s: float) -> BatchCostJob: ...

    def batch_record_fields(self) -> dict[str, Any]:
        """What the record says when it stores costs by batch measured in this session."""
        ...

    def time_batched(self, session: ConfirmSession) -> dict[str, Any]:
        """A batched confirmation (B prompts decoded together); one sentence where the engine has none."""
        ...


@dataclass
class ConfirmConfig:
    run: Path
    engine: str = "torch"                   # torch or llama.cpp (engines.engine_named)
    per_corpus: int = 2
    gammas: tuple[int, ...] = ()            # timed in every corpus besides the decision's g_hw
    corpora: tuple[str, ...] | None = None  # None: every corpus of the run
    device: str | None = None               # None: the run's device (torch)
    dtype: str | None = None                # None: the run's dtype (torch)
    max_new_tokens: int | None = None       # None: the whole stored y
    threads: int | None = None              # CPU threads per forward (None: core.machine.default_threads)
    cost_repeats: int = 5                   # timed cost rounds before the generations (one more after each prompt)
    cost_gammas: tuple[int, ...] = COST_GAMMAS
    decision_gammas: tuple[int, ...] | None = None  # the run's decision g_hw is chosen among these (None: cost_gammas)
    target: str | None = None               # None: the run's target, found by name and checksum
    draft: str | None = None                # None: the run's draft, likewise
    decision_only: bool = False             # time only the run's decision g_hw (and --gamma), not this session's choices
    batch_costs: bool = False               # also measure the costs by batch and store them as the run's
    batch: int = 1                          # B > 1: batched confirmation (torch), B prompts of a corpus decoded together
    interleave_costs: bool = True           # one more cost round after every prompt (off: only the rounds before)
    costs_only: bool = False                # with batch_costs: measure and store the costs by batch, no generations
    llama_bin: Path | None = None           # llama.cpp: directory holding llama-speculative-simple
    llama_src: Path | None = None           # llama.cpp: sources to build it from
    build_jobs: int = 1
    keep_logs: Path | None = None           # llama.cpp: directory to copy every speculative -v log into


@dataclass
class ConfirmSession:
    """The state of one confirmation, shared by the flow's steps and the engine's timing (no long
    parameter lists). The steps fill it in order: the g measured and the run's decisions (`confirm`),
    the items and this session's costs (`_measure`), the choices and the record (`_begin`)."""

    config: ConfirmConfig
    engine: Engine
    pair: ConfirmPair
    run_dir: Path
    run: Run
    report: ProgressCallback
    cancel: threading.Event | None
    t_start: float
    cost_gammas: np.ndarray                                    # every g on this session's cost curve
    decision_g: dict[str, int | None]                          # the run's decision g_hw per corpus
    has_profile: bool                                          # the run has a cost profile of this machine
    items: list[Item] = field(default_factory=list)
    ctx_len: int = 0                                           # the cost context (mean prompt + n/2)
    sampler: Sampler | None = None
    session_cost: Callable[[], dict[str, Any]] = dict          # the stored dict of every cost round so far
    choices: dict[str, dict[str, Any]] = field(default_factory=dict)
    E_table: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    index: int | None = None                                   # the record's place in run.json's confirmations
    install_cost: bool = False
    batch_record: dict[str, Any] | None = None  # costs by batch measured up front, stored at the end
    batch_job: Any = None                       # costs by batch timed in slices between the prompts
    total: int = 0                              # generations to time
    done: int = 0
    gen_tokens: int = 0
    gen_time: float = 0.0

    def progress(self, phase: str, msg: str = "", **kw: Any) -> None:
        self.report(Progress(phase, msg, n_prompts=self.total, prompts_done=self.done,
                             tokens_per_s=self.gen_tokens / self.gen_time if self.gen_time > 0 else 0.0,
                             elapsed_s=time.perf_counter() - self.t_start, **kw))

    def write(self, cost: dict[str, Any] | None = None, batch_cost: dict[str, Any] | None = None) -> None:
        profile = self.batch_profile(batch_cost) if batch_cost is not None else None
        self.index = write_confirmation(self.run_dir, self.record, self.index, cost, batch_cost, profile)

    def batch_profile(self, batch_cost: dict[str, Any]) -> dict[str, Any]:
        """Costs by batch belong to the machine that timed them (SPEC 6): a new cost profile of this
        machine, this session's cost rounds (whose B = 1 forwards the grid reuses) with the grid."""
        return new_profile(self.session_cost(), self.pair.describe(), source="measured by specterm confirm --batch-costs",
                           batch_cost=batch_cost)


@dataclass
class OracleConfig:
    """What `specterm run` is asked to do (engines/oracle.py), for every engine."""

    target: str
    draft: str
    prompts: list[Prompt]
    out: Path
    max_new_tokens: int = 128
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 4
    resume: bool = False
    spec_gamma: int = 0
    measure_cost: bool = True
    remeasure_cost: bool = False  # with resume: measure r again (the earlier values are kept in cost.earlier)
    cost_repeats: int = 7  # timed rounds of the cost measurement (engines/timing.run_rounds)
    cost_gammas: tuple[int, ...] = COST_GAMMAS  # draft lengths whose c_verify(g) is timed
    trust_remote_code: bool = False
    shard: tuple[int, int] | None = None
    extra_meta: dict[str, Any] = field(default_factory=dict)
    record_paths: bool = False  # keep models' absolute local paths in run.json (off: names + sha256 only)
    backend: str = "torch"      # the engine that runs it (engines.engine_named)
    threads: int | None = None  # llama.cpp: threads per decode (None: 1); torch picks its own

    @property
    def y_method(self) -> str:
        """How y is built, as stored in run.json generation.y_method (resume refuses a change)."""
        return f"speculative decoding, gamma={self.spec_gamma}" if self.spec_gamma > 0 else "batched greedy"


class RunPair(OpenPair, Protocol):
    """A pair opened for `specterm run` (engines/oracle.py: the flow is written once); what differs
    between engines: how y is generated and how many prompts at a time, the teacher-forced (and, where
    the engine's batched and serial evaluation differ, repaired) streams, and what run.json records."""

    cost_label: str  # what the cost phase's progress line measures ("costs", "llama.cpp costs")

    @property
    def meta(self) -> dict[str, Any]:
        """run.json's models (target, draft), tokenizer_vocab, device, dtype and the engine's own keys."""
        ...

    def encode_prompt(self, text: str, name: str) -> list[int]:
        """The prompt's ids; one sentence naming it (`name`) when it encodes to zero tokens."""
        ...

    def run_generation(self, config: OracleConfig) -> dict[str, Any]:
        """run.json's "generation": how y is built (decoding, y_built_with, y_method, eos ids, ...)."""
        ...

    def run_session(self, config: OracleConfig) -> dict[str, Any]:
        """The engine's fields of this invocation's entry in run.json's "sessions"."""
        ...

    def prompts_per_step(self, config: OracleConfig) -> int:
        """Prompts whose y is generated together (torch: --batch-size; llama.cpp: 1)."""
        ...

    def before_prompts(self, config: OracleConfig, writer: RunWriter, tally: Tally, cancel: threading.Event | None) -> str:
        """Work on a resumed run's stored streams before the new prompts (llama.cpp: streams from before the
        repair loop repaired in place); the done line's addition ("" when none)."""
        ...

    def generate(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], b0: int, tally: Tally,
                 cancel: threading.Event | None) -> tuple[list[list[int]], bool]:
        """y of the step's prompts (the first len(ys) of them finished) and whether a cancel stopped it."""
        ...

    def streams(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], ys: list[list[int]], b0: int,
                tally: Tally, cancel: threading.Event | None) -> Iterator[Stream]:
        """The stream of each finished y: both models teacher-forced over prompt + y (SPEC 1), repaired
        where the engine needs it, yielded one at a time so each is stored as soon as it is done."""
        ...

    def cost_extras(self) -> dict[str, Any]:
        """What the engine adds to the measured cost dict (llama.cpp: the load average)."""
        ...


class Engine(Protocol):
    name: str
    gate_held: bool                  # confirm only streams whose gate held (select_streams)
    always_timed: tuple[int, ...]    # g confirm always times beside the run's decision
    times_session_choices: bool      # confirm also times this session's g_hw, g_iid, g_hw_refeed
    installs_cost: bool              # a run's cost from before c_decode is replaced by the session's
    min_tokens: int                  # the fewest stored tokens a confirmed prompt needs

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> ConfirmPair:
        """Load the run's models (found by name and sha256 under $SPECTERM_MODELS / ./models, or the
        overrides), checked against the run's checksums; one sentence when they cannot be found."""
        ...

    def check_run(self, config: OracleConfig) -> None:
        """Every check of `specterm run` that is the engine's and needs no weights (the flags that apply,
        the models resolved, tokenizers, context); one sentence, nothing created on disk."""
        ...

    def open_run(self, config: OracleConfig, prompts: list[Prompt], report: ProgressCallback) -> RunPair:
        """Load the pair `specterm run` names (config.target, config.draft) for these prompts."""
        ...

    run_suffix: str  # the default --out's suffix (streams/DRAFT-TARGET<suffix>)
