"""The llama.cpp engine (llama-cpp-python, GGUF weights on the CPU): the engine interface over
specterm/engines/llamacpp/ (models, costs, the timed generations of confirm: engines/llamacpp/confirm_llamacpp.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specterm.engines.base import BatchCostJob, BlockTiming, Generation, Item, MeasureCallback, OpenOptions, Sampler, StepCallback

if TYPE_CHECKING:
    import threading

    from specterm.core.store import RunWriter, Stream
    from specterm.engines.base import ConfirmConfig, ConfirmSession, OracleConfig
    from specterm.engines.corpora import Prompt
    from specterm.engines.progress import ProgressCallback, Tally

N_CTX = 1024  # the cost contexts hold a prompt + y/2 (hundreds of tokens) plus a 17-token verify


class LlamaPair:
    """A GGUF pair in llama.cpp, for `specterm run` (loaded at once, `LlamaEngine.open_run`) and for
    `specterm confirm` and `specterm costs` (loaded on first use, so confirm can size the context to its
    prompts first; encoding before that uses a vocab-only load)."""

    cost_label = "llama.cpp costs"
    forwards_in_loop = True  # `specterm costs` prices its forwards in llama-speculative-simple (core/.../engine_loop)

    def __init__(self, t_path: Path | None, d_path: Path | None, threads: int, report: Callable[[Any], None],
                 n_ctx: int = N_CTX, models: tuple[Any, Any] | None = None) -> None:
        self.t_path, self.d_path, self.threads, self.n_ctx = t_path, d_path, threads, n_ctx
        self.report = report
        self._models: tuple[Any, Any] | None = models
        self._vocab: Any = None
        self.exe: Path | None = None   # llama-speculative-simple (confirm)
        self.eog: set[int] = set()
        self.keep_logs: Path | None = None
        self.run_meta: dict[str, Any] = {}  # run.json's models, device, dtype, backend (a run's pair)

    @classmethod
    def of_models(cls, target: Any, draft: Any, eog: set[int], meta: dict[str, Any], threads: int = 1,
                  paths: tuple[Path, Path] | None = None, n_ctx: int = N_CTX) -> LlamaPair:
        """A pair of models already loaded (GGUFModel's interface: a test's toy engine too)."""
        t_path, d_path = paths or (None, None)
        pair = cls(t_path, d_path, threads, lambda p: None, n_ctx=n_ctx, models=(target, draft))
        pair.eog, pair.run_meta = set(eog), dict(meta)
        return pair

    def _loaded(self) -> tuple[Any, Any]:
        if self._models is None:
            assert self.t_path is not None and self.d_path is not None
            from specterm.engines.progress import Progress
            from specterm.engines.llamacpp import models_llamacpp as LM

            self.report(Progress("loading", f"loading {self.t_path.name} and {self.d_path.name} in llama.cpp "
                                            f"({self.threads} thread(s))"))
            self._models = (LM.load_gguf(self.t_path, self.n_ctx, self.threads),
                            LM.load_gguf(self.d_path, self.n_ctx, self.threads))
        return self._models

    @property
    def target(self) -> Any:
        return self._loaded()[0]

    @property
    def draft(self) -> Any:
        return self._loaded()[1]

    def describe(self) -> dict[str, Any]:
        from specterm.engines.llamacpp.models_llamacpp import describe_llamacpp

        return describe_llamacpp(self.threads)

    def encode(self, text: str) -> list[int]:
        if self._models is not None:
            return list(self._models[0].tokenize(text))
        if self._vocab is None:
            from specterm.engines.llamacpp import models_llamacpp as LM

            assert self.t_path is not None
            self._vocab = LM.load_gguf(self.t_path, 64, self.threads, vocab_only=True)
        return list(self._vocab.tokenize(text))

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler:
        from specterm.engines.llamacpp.costs_llamacpp import LlamaCostSampler

        return LlamaCostSampler(self.target, self.draft, ctx, gammas, on_measure=on_measure, cancel=cancel)

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        from specterm.engines.llamacpp.costs_llamacpp import measure_batch_costs, reused_b1_llamacpp

        return measure_batch_costs(self.target, self.draft, ctx, reuse=reused_b1_llamacpp(sampler.summary()),
                                   on_measure=on_measure, cancel=cancel)

    # specterm run (engines/oracle.py): serial greedy y and the repair loop are engines/llamacpp/oracle_llamacpp.py's

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.run_meta)

    def encode_prompt(self, text: str, name: str) -> list[int]:
        from specterm.core.errors import SpectermError

        ids = self.encode(text)
        if not ids:
            raise SpectermError(f"{name} encodes to zero tokens; remove it or give it some text.")
        return ids

    def run_generation(self, config: OracleConfig) -> dict[str, Any]:
        from specterm.engines.llamacpp.oracle_llamacpp import generation_meta

        return generation_meta(config, self.eog)

    def run_session(self, config: OracleConfig) -> dict[str, Any]:
        from specterm.engines.llamacpp.oracle_llamacpp import loadavg

        return {"backend": "llama.cpp", "llama_threads": self.threads, "device": "cpu", "load_avg": list(loadavg())}

    def prompts_per_step(self, config: OracleConfig) -> int:
        return 1  # y is serial greedy, one prompt at a time

    def before_prompts(self, config: OracleConfig, writer: RunWriter, tally: Tally, cancel: threading.Event | None) -> str:
        from specterm.engines.llamacpp.oracle_llamacpp import repair_resumed

        return repair_resumed(self, config, writer, tally, cancel)

    def generate(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], b0: int, tally: Tally,
                 cancel: threading.Event | None) -> tuple[list[list[int]], bool]:
        from specterm.engines.llamacpp.oracle_llamacpp import generate_serial

        return generate_serial(self, config, batch[0], ids[0], b0, tally, cancel)

    def streams(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], ys: list[list[int]], b0: int,
                tally: Tally, cancel: threading.Event | None) -> Iterator[Stream]:
        from specterm.engines.llamacpp.oracle_llamacpp import llama_streams

        return llama_streams(self, config, batch, ids, ys, b0, tally, cancel)

    def cost_extras(self) -> dict[str, Any]:
        from specterm.engines.llamacpp.oracle_llamacpp import loadavg

        return {"load_avg": list(loadavg())}

    def close(self) -> None:
        self._models = self._vocab = None

    # specterm confirm (engines/confirm.py): the timed generations are engines/llamacpp/confirm_llamacpp.py's

    def block_timed(self, item: Item, gamma: int, cancel: Any) -> BlockTiming:
        """llama.cpp's own speculative decoder (llama-speculative-simple, as `confirm --engine llama.cpp` runs it)
        on item's prompt at draft length `gamma`, for the block overhead: its blocks, its decode loop's seconds
        ("decoded ... in X seconds") and the seconds inside the models its perf summary reports
        (core/compare/speclog.SpecLog.forwards_s). Wall time only: the binary's own clocks, on 1 thread the
        forward's own time on a quiet machine."""
        from specterm.core.compare.speclog import n_predict_for
        from specterm.core.errors import SpectermError
        from specterm.engines.llamacpp import binaries as B
        from specterm.engines.llamacpp.confirm_llamacpp import run_speculative, speculative_command

        exe = self.exe or B.find_binary(None)
        if exe is None:
            raise SpectermError(f"timing whole blocks in llama.cpp needs {B.SPEC_BINARY}; {B.BUILD_HINT} "
                                "(or pass --no-block-overhead).")
        self.exe = exe
        assert item.stream.prompt is not None and self.t_path is not None and self.d_path is not None
        slog, _, _ = run_speculative(speculative_command(exe, self.t_path, self.d_path, item.stream.prompt, gamma,
                                                         max(1, n_predict_for(item.n, gamma)), self.threads, self.n_ctx))
        if slog.outside_s is None or slog.decoded_s is None or slog.forwards_s is None:
            raise SpectermError(f"{B.SPEC_BINARY}'s log has no perf summary (target eval times, draft durations); "
                                "the block overhead cannot be read from this build (pass --no-block-overhead).")
        return BlockTiming(blocks=slog.target_calls, wall_s=slog.decoded_s, cpu_s=slog.decoded_s,
                           forwards_wall_s=slog.forwards_s, forwards_cpu_s=slog.forwards_s, tokens=list(slog.tokens),
                           loop_target_s=slog.target_loop_s, loop_draft_s=slog.draft_s,
                           loop_drafted=int(slog.drafted.sum()))

    def greedy_loop(self, item: Item) -> tuple[int, float]:
        """(tokens, seconds) of plain greedy on item's prompt in the binding's loop, as `confirm` times greedy
        (confirm_llamacpp.greedy_timed), for the loop-priced c_decode; as many tokens as item's y and the
        context hold."""
        from specterm.engines.llamacpp import models_llamacpp as LM
        from specterm.engines.llamacpp.confirm_llamacpp import greedy_timed

        if not self.eog:
            self.eog = LM.eog_ids(self.target)
        n = max(1, min(item.n, self.n_ctx - len(item.ids) - 1))
        toks, stamps, _ = greedy_timed(self.target, item.ids, n, self.eog)
        return len(toks), stamps[-1]

    def confirm_setup(self, config: ConfirmConfig, items: list[Item], context: int, meta: dict[str, Any],
                      report: Callable[[Any], None], cancel: Any) -> dict[str, Any]:
        """llama-speculative-simple found (or built), the models loaded with a context that holds every
        prompt + n (engines/llamacpp/oracle_llamacpp.context_size)."""
        from specterm.core.errors import SpectermError
        from specterm.engines.progress import Progress
        from specterm.engines.llamacpp import binaries as B
        from specterm.engines.llamacpp import models_llamacpp as LM
        from specterm.engines.llamacpp.confirm_llamacpp import METHOD, SPEC_ARGS
        from specterm.engines.llamacpp.oracle_llamacpp import context_size

        exe = B.find_binary(config.llama_bin)
        if exe is None:
            if config.llama_bin is not None:
                raise SpectermError(f"{config.llama_bin} has no {B.SPEC_BINARY}; {B.BUILD_HINT}.")
            exe = B.build(config.llama_src, config.build_jobs, lambda msg: report(Progress("checking", msg)))
        self.exe, self.keep_logs = exe, config.keep_logs
        n_ctx = context_size([len(it.ids) for it in items], max(it.n for it in items))
        if n_ctx != self.n_ctx:
            self._models, self.n_ctx = None, n_ctx
        self.eog = LM.eog_ids(self.target)
        return {"engine": "llama.cpp", "device": "cpu", "dtype": meta.get("dtype"), "threads": self.threads,
                "backend": LM.engine_info(self.threads), "binary": {**B.binary_info(exe), "args": list(SPEC_ARGS)},
                "context_timed": context, "method": METHOD}

    def timing(self) -> AbstractContextManager[Any]:
        return nullcontext()

    def warm_up(self, item: Item, gamma: int) -> None:
        from specterm.engines.llamacpp.confirm_llamacpp import greedy_timed, run_speculative, speculative_command

        assert self.exe is not None and item.stream.prompt is not None
        assert self.t_path is not None and self.d_path is not None
        greedy_timed(self.target, item.ids, 2, self.eog)
        run_speculative(speculative_command(self.exe, self.t_path, self.d_path, item.stream.prompt, gamma, 2,
                                            self.threads, self.n_ctx))

    def greedy_timed(self, item: Item, on_step: StepCallback) -> Generation:
        from specterm.engines.llamacpp.confirm_llamacpp import greedy_timed

        toks, stamps, cpu = greedy_timed(self.target, item.ids, item.n, self.eog)
        return Generation(tokens=toks, seconds=stamps[-1], fields=dict(
            greedy_s=stamps[-1], greedy_cpu_s=cpu, greedy_tokens=len(toks), greedy_cum_s=stamps))

    def speculative_timed(self, item: Item, gamma: int, on_step: StepCallback) -> Generation | None:
        from specterm.engines.llamacpp.confirm_llamacpp import speculative_timed

        return speculative_timed(self, item, gamma, self.keep_logs)

    def result_extras(self, spec_rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
        from specterm.engines.llamacpp.confirm_llamacpp import result_extras

        return result_extras(spec_rows, row)

    def record_checks(self, prompt_rows: list[dict[str, Any]], cost: dict[str, Any]) -> dict[str, Any]:
        return {}

    def batch_cost_job(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                       cancel: Any, rounds_s: float) -> BatchCostJob:
        return _LlamaBatchJob(self, sampler, ctx, on_measure, cancel)

    def batch_record_fields(self) -> dict[str, Any]:
        return {"batch_costs_measured": True}

    def time_batched(self, session: ConfirmSession) -> dict[str, Any]:
        from specterm.core.errors import SpectermError

        raise SpectermError("--batch is not available with --engine llama.cpp yet; drop it.")


class _LlamaBatchJob:
    """llama.cpp's costs by batch, all at once after the cost rounds (not sliced)."""

    sliced = False
    total = 0

    def __init__(self, pair: LlamaPair, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                 cancel: Any) -> None:
        self.pair, self.sampler, self.ctx, self.on_measure, self.cancel = pair, sampler, ctx, on_measure, cancel

    def run_all(self) -> dict[str, Any]:
        from specterm.core.store import new_meta

        out = self.pair.batch_costs(self.sampler, self.ctx, self.on_measure, self.cancel)
        out["measured_at"] = new_meta("")["created"]
        return out

    def step(self, done: int, of: int) -> None:
        raise NotImplementedError("llama.cpp's costs by batch are not timed in slices")

    def finish(self, of: int) -> dict[str, Any]:
        raise NotImplementedError("llama.cpp's costs by batch are not timed in slices")


class LlamaEngine:
    name = "llama.cpp"
    gate_held = False                       # every stream: near-ties are exactly what to check
    always_timed: tuple[int, ...] = (1, 4, 8)  # tokens per target call of the real decoder beside the walk (issue 22)
    times_session_choices = False           # this session's choices are recorded, not timed
    installs_cost = False
    min_tokens = 3                          # the speculative run needs -n n - 1 - g >= 1

    run_suffix = "-llamacpp"

    def check_run(self, config: OracleConfig) -> None:
        """The flags that do not apply to llama.cpp refused (CPU, the GGUF's own weights, one prompt at a time),
        --threads, the binding installed, both models GGUF files."""
        from specterm.core.errors import SpectermError
        from specterm.engines.llamacpp.binding import require_binding
        from specterm.engines.llamacpp.oracle_llamacpp import gguf_path_of

        for flag, value, default in (("--device", config.device, "auto"), ("--dtype", config.dtype, "auto"),
                                     ("--batch-size", config.batch_size, 4), ("--shard", config.shard, None),
                                     ("--trust-remote-code", config.trust_remote_code, False)):
            if value != default:
                raise SpectermError(f"{flag} does not apply to --backend llama.cpp (CPU, the GGUF's own weights, one "
                                    "prompt at a time); drop it.")
        if config.spec_gamma:
            raise SpectermError("--spec-gamma does not apply to --backend llama.cpp (y is llama.cpp's serial greedy); drop it.")
        for flag, spec in (("--target", config.target), ("--draft", config.draft)):
            if str(spec).startswith("layers:"):
                raise SpectermError(f"{flag} {spec}: a layer-skip self-draft runs only with --backend torch; give a .gguf "
                                    "file for --backend llama.cpp.")
        if config.threads is not None and config.threads < 1:
            raise SpectermError("--threads must be at least 1.")
        require_binding()
        gguf_path_of(config.target)
        gguf_path_of(config.draft)

    def open_run(self, config: OracleConfig, prompts: list[Prompt], report: ProgressCallback) -> LlamaPair:
        """Both GGUF files resolved, the vocabularies compared (vocab-only loads, before any model work), a
        first test decode of each in a child process, then both loaded with a context that holds the
        longest prompt (new or stored for repair) + max_new_tokens."""
        from specterm.core.errors import SpectermError
        from specterm.engines.llamacpp import models_llamacpp as LM
        from specterm.engines.llamacpp.oracle_llamacpp import context_size, streams_to_repair
        from specterm.engines.progress import Progress

        if config.spec_gamma:
            raise SpectermError("--spec-gamma is not used with --backend llama.cpp (y is llama.cpp's serial greedy); drop it.")
        from specterm.engines.torch import models_torch as M

        threads = 1 if config.threads is None else config.threads
        t_spec, d_spec = M.resolve_spec(config.target), M.resolve_spec(config.draft)
        for flag, spec in (("--target", t_spec), ("--draft", d_spec)):
            if spec.kind != "gguf":
                raise SpectermError(f"--backend llama.cpp needs GGUF files; {flag} {spec.spec} is not a .gguf file.")
        t_path, d_path = LM.gguf_path(t_spec), LM.gguf_path(d_spec)
        probe = LM.load_gguf(t_path, 64, threads, vocab_only=True)
        texts = [p.text for p in prompts] + [str(s.prompt) for s in streams_to_repair(config)]
        lens = [len(probe.tokenize(text)) for text in texts]
        if min(lens) == 0:
            raise SpectermError("a prompt encodes to zero tokens; remove it or give it some text.")
        report(Progress("checking", "comparing the tokenizers in llama.cpp"))
        LM.check_vocabularies(probe, LM.load_gguf(d_path, 64, threads, vocab_only=True))
        report(Progress("checking", "a first test decode of each model in a child process (llama.cpp kernels run here?)"))
        LM.probe_decode(t_path)
        LM.probe_decode(d_path)
        n_ctx = context_size(lens, config.max_new_tokens)
        report(Progress("loading", f"loading target {config.target} in llama.cpp"))
        tgt = LM.load_gguf(t_path, n_ctx, threads)
        report(Progress("loading", f"loading draft {config.draft} in llama.cpp"))
        dft = LM.load_gguf(d_path, n_ctx, threads)
        meta = {
            "target": {**t_spec.describe(), "class": "llama.cpp", "layers": tgt.layers(), "vocab_size": tgt.n_vocab},
            "draft": {**d_spec.describe(), "class": "llama.cpp", "layers": dft.layers(), "vocab_size": dft.n_vocab},
            "tokenizer_vocab": tgt.n_vocab,
            "device": "cpu",
            "dtype": "gguf",
            "backend": LM.engine_info(threads),
        }
        return LlamaPair.of_models(tgt, dft, LM.eog_ids(tgt), meta, threads, paths=(t_path, d_path), n_ctx=n_ctx)

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> LlamaPair:
        from specterm.core.errors import SpectermError
        from specterm.engines.llamacpp import models_llamacpp as LM
        from specterm.engines.llamacpp.binding import require_binding
        from specterm.engines.llamacpp.confirm_llamacpp import resolve_gguf

        require_binding()
        if options.device not in (None, "cpu") or options.dtype is not None:
            raise SpectermError("--device and --dtype do not apply to llama.cpp (CPU, the GGUF's own weights); drop them.")
        t_path = resolve_gguf(meta, "target", options.target)
        d_path = resolve_gguf(meta, "draft", options.draft)
        LM.probe_decode(t_path)
        LM.probe_decode(d_path)
        return LlamaPair(t_path, d_path, options.threads, report)
