"""The torch engine (transformers models, specterm's own decoder): TorchEngine and TorchPair, the engine
interface over this package's modules (models_torch, oracle_torch, specdec, costs_torch, confirm_torch)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specterm.core.errors import SpectermError
from specterm.core.store import model_key, model_location, public_model
from specterm.engines.base import BatchCostJob, BlockTiming, Generation, Item, MeasureCallback, OpenOptions, Sampler, StepCallback

if TYPE_CHECKING:
    import threading

    from specterm.core.store import RunWriter, Stream
    from specterm.engines.base import ConfirmConfig, ConfirmSession, OracleConfig
    from specterm.engines.corpora import Prompt
    from specterm.engines.drafters import Drafter
    from specterm.engines.progress import ProgressCallback, Tally


def model_spec(entry: Any, role: str, override: str | None = None) -> str:
    """What to load the run's `role` model from: `override` (--target/--draft), else
    streams.model_location (a hub id or layers:K as recorded, or the file found by name and
    checksum under $SPECTERM_MODELS / ./models)."""
    if override is None and not isinstance(entry, dict):
        raise SpectermError(f"run.json names no {role} model (imported bits?); pass both --target and --draft "
                            "(the models the bits came from).")
    return model_location(entry, override)


class TorchPair:
    """A loaded torch pair (engines/torch/oracle_torch.LoadedPair: target, draft, tokenizer, eos, meta), or, for
    a drafter run (SPEC 2b), the target (models_torch.TargetOnly) with the drafter that replaces the draft model:
    its costs are the target's forwards and the drafter's time per block, its whole blocks those of the
    speculative decoder with the drafter proposing."""

    cost_label = "costs"

    def __init__(self, loaded: Any, threads: int | None = None, drafter: Drafter | None = None) -> None:
        self.loaded = loaded
        self.threads = threads  # None: torch's own count at the time (a run's pair)
        self.drafter = drafter
        self._caches: dict[str, Any] = {}
        self._timer: Any = None
        self._cancel: Any = None

    def describe(self) -> dict[str, Any]:
        from specterm.engines.torch.models_torch import describe_torch

        return describe_torch(str(self.loaded.meta.get("device", "cpu")), self._threads(), self.loaded.meta.get("dtype"))

    def _threads(self) -> int:
        import torch

        return self.threads if self.threads is not None else int(torch.get_num_threads())

    def encode(self, text: str) -> list[int]:
        from specterm.engines.torch.oracle_torch import encode_prompt

        return encode_prompt(self.loaded.tokenizer, text)

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler:
        from specterm.engines.torch.costs_torch import CostSampler, DrafterCostSampler

        if self.drafter is not None:
            return DrafterCostSampler(self.loaded.model, [self.drafter], ctx, gammas, on_measure=on_measure, cancel=cancel)
        return CostSampler(self.loaded.target, self.loaded.draft, ctx, gammas, on_measure=on_measure, cancel=cancel)

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        import time

        if self.drafter is not None:
            raise SpectermError("costs by batch are not measured for a drafter run (its decision is at batch 1); "
                                "run `specterm costs` without --batch.")

        from specterm.engines.timing import reused_b1

        from specterm.engines.torch.costs_torch import BatchGrid, grid_record

        t0 = time.perf_counter()
        grid = BatchGrid(self.loaded.target, self.loaded.draft, ctx, on_measure=on_measure, cancel=cancel,
                         reuse=reused_b1(sampler.summary()),
                         prefilled={"target": sampler.quantities[0][2], "draft": sampler.quantities[1][2]})
        return grid_record(grid.run_all(), time.perf_counter() - t0)

    # specterm run (engines/oracle.py): y and the teacher-forced columns are engines/torch/oracle_torch.py's

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.loaded.meta)

    def encode_prompt(self, text: str, name: str) -> list[int]:
        from specterm.engines.torch.oracle_torch import encode_prompt

        return encode_prompt(self.loaded.tokenizer, text, name)

    def run_generation(self, config: OracleConfig) -> dict[str, Any]:
        from specterm.engines.torch.oracle_torch import generation_meta

        return generation_meta(config, self.loaded)

    def run_session(self, config: OracleConfig) -> dict[str, Any]:
        return {"batch_size": config.batch_size, "torch_threads": self._threads(), "device": self.loaded.meta.get("device")}

    def prompts_per_step(self, config: OracleConfig) -> int:
        return config.batch_size

    def before_prompts(self, config: OracleConfig, writer: RunWriter, tally: Tally, cancel: threading.Event | None) -> str:
        return ""

    def generate(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], b0: int, tally: Tally,
                 cancel: threading.Event | None) -> tuple[list[list[int]], bool]:
        """y by lossless speculative decoding (--spec-gamma > 0), else batched plain greedy."""
        from specterm.engines.torch.oracle_torch import generate_batched, generate_speculative

        generate = generate_speculative if config.spec_gamma > 0 else generate_batched
        return generate(config, self.loaded, batch, ids, b0, tally, cancel)

    def streams(self, config: OracleConfig, batch: list[Prompt], ids: list[list[int]], ys: list[list[int]], b0: int,
                tally: Tally, cancel: threading.Event | None) -> Iterator[Stream]:
        from specterm.engines.torch.oracle_torch import torch_streams

        yield from torch_streams(self.loaded, batch, ids, ys, b0, tally, config.max_new_tokens, cancel)

    def cost_extras(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self.loaded = None

    def block_timed(self, item: Item, gamma: int, cancel: Any) -> BlockTiming:
        from specterm.engines.torch.confirm_torch import block_timed

        if self.drafter is not None:
            return block_timed(self.loaded.model, None, self.loaded.eos, item, gamma, cancel, self.drafter)
        return block_timed(self.loaded.target, self.loaded.draft, self.loaded.eos, item, gamma, cancel)

    # specterm confirm (engines/confirm.py): the timed generations are engines/torch/confirm_torch.py's

    def confirm_setup(self, config: ConfirmConfig, items: list[Item], context: int, meta: dict[str, Any],
                      report: Callable[[Any], None], cancel: Any) -> dict[str, Any]:
        import torch

        from specterm.engines.torch import confirm_torch as C

        torch.set_num_threads(self._threads())
        self._cancel = cancel
        return {"device": self.loaded.meta.get("device", config.device or meta.get("device") or "auto"),
                "dtype": self.loaded.meta.get("dtype", config.dtype or meta.get("dtype") or "auto"),
                "threads": int(torch.get_num_threads()), "batch": config.batch,
                "cost_context_rule": C.COST_CONTEXT_RULE, "method": C.METHOD}

    @contextmanager
    def timing(self) -> Iterator[None]:
        from specterm.engines.torch.confirm_torch import ForwardTimer

        self._timer = ForwardTimer(self.loaded.target, self.loaded.draft)
        try:
            yield
        finally:
            self._timer.close()
            self._timer = None

    def warm_up(self, item: Item, gamma: int) -> None:
        from specterm.engines.torch.confirm_torch import warm_up

        warm_up(self.loaded, item, gamma, self._cancel)

    def greedy_timed(self, item: Item, on_step: StepCallback) -> Generation:
        from specterm.engines.torch.confirm_torch import greedy_timed

        return greedy_timed(self.loaded, self._timer, item, on_step, self._cancel)

    def speculative_timed(self, item: Item, gamma: int, on_step: StepCallback) -> Generation | None:
        from specterm.engines.torch.confirm_torch import speculative_timed

        return speculative_timed(self.loaded, self._timer, item, gamma, on_step, self._cancel)

    def result_extras(self, spec_rows: list[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
        from specterm.engines.torch.confirm_torch import result_extras

        return result_extras(spec_rows)

    def record_checks(self, prompt_rows: list[dict[str, Any]], cost: dict[str, Any]) -> dict[str, Any]:
        from specterm.engines.torch.confirm_torch import cross_check

        return {"cross_check": cross_check(prompt_rows, cost)}

    def batch_cost_job(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                       cancel: Any, rounds_s: float) -> BatchCostJob:
        from specterm.engines.torch.confirm_torch import BatchGridJob

        return BatchGridJob(self.loaded, sampler, ctx, on_measure, cancel, rounds_s)

    def batch_record_fields(self) -> dict[str, Any]:
        return {}

    def time_batched(self, session: ConfirmSession) -> dict[str, Any]:
        from specterm.engines.torch.confirm_torch import time_batched

        return time_batched(session, self.loaded, self._timer)


class TorchEngine:
    name = "torch"
    gate_held = True               # specterm's decoder reproduces y exactly where the gate held
    always_timed: tuple[int, ...] = ()
    times_session_choices = True   # this session's g_hw, g_iid, g_hw_refeed are timed too
    installs_cost = True
    min_tokens = 1

    run_suffix = ""

    def check_run(self, config: OracleConfig) -> None:
        from specterm.engines.torch.oracle_torch import check_run

        check_run(config)

    def open_run(self, config: OracleConfig, prompts: list[Prompt], report: ProgressCallback) -> TorchPair:
        from specterm.engines.torch.oracle_torch import load_pair

        return TorchPair(load_pair(config, report))

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> TorchPair:
        """The run's pair; for a drafter run (run.json draft.kind prompt-lookup or ngram) the target alone with
        the run's drafter (--draft does not apply: the drafter is the run's, from its record)."""
        import torch

        from specterm.core.store.meta import drafter_of
        from specterm.engines.base import OracleConfig

        torch.set_num_threads(options.threads)
        drafter_meta = drafter_of(meta)
        roles = ("target",) if drafter_meta is not None else ("target", "draft")
        specs = {role: model_spec(meta.get(role), role, override)
                 for role, override in zip(roles, (options.target, options.draft))}
        config = OracleConfig(target=specs["target"], draft=specs.get("draft", ""), prompts=[], out=Path("."),
                              device=options.device or meta.get("device") or "auto",
                              dtype=options.dtype or meta.get("dtype") or "auto")
        drafter = None
        if drafter_meta is not None:
            from specterm.engines.drafters import drafter_from_meta
            from specterm.engines.torch.models_torch import load_target

            if options.draft is not None:
                raise SpectermError("--draft does not apply to a drafter run (its drafter is the run's); leave it out.")
            loaded: Any = load_target(config, report)
            drafter = drafter_from_meta(drafter_meta)
        else:
            from specterm.engines.torch.oracle_torch import load_pair

            loaded = load_pair(config, report)
        for role in roles:
            entry = meta.get(role)
            if entry is None or (isinstance(entry, dict) and entry.get("source") == "named" and not entry.get("sha256")):
                continue  # imported bits name no model, or only by name: nothing to check the one given against
            if model_key(public_model(loaded.meta[role])) != model_key(meta.get(role)):
                raise SpectermError(f"the {role} model loaded now is not the one this run was made with (checksum differs); "
                                    "restore the original file or re-run `specterm run`.")
        return TorchPair(loaded, options.threads, drafter)
