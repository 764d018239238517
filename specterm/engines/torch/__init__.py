"""The torch engine (transformers models, specterm's own decoder): the engine interface over
specterm/oracle/ (models, costs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.store import model_key, model_location
from specterm.engines.base import MeasureCallback, OpenOptions, Sampler


class TorchPair:
    def __init__(self, loaded: Any, threads: int) -> None:
        self.loaded = loaded
        self.threads = threads
        self._caches: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        from specterm.oracle.models import describe_torch

        return describe_torch(str(self.loaded.meta.get("device", "cpu")), self.threads, self.loaded.meta.get("dtype"))

    def encode(self, text: str) -> list[int]:
        from specterm.oracle.run import encode_prompt

        return encode_prompt(self.loaded.tokenizer, text)

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler:
        from specterm.oracle.costs import CostSampler

        return CostSampler(self.loaded.target, self.loaded.draft, ctx, gammas, on_measure=on_measure, cancel=cancel)

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        import time

        from specterm.oracle.costs import BatchGrid, grid_record, reused_b1

        t0 = time.perf_counter()
        grid = BatchGrid(self.loaded.target, self.loaded.draft, ctx, on_measure=on_measure, cancel=cancel,
                         reuse=reused_b1(sampler.summary()),
                         prefilled={"target": sampler.quantities[0][2], "draft": sampler.quantities[1][2]})
        return grid_record(grid.run_all(), time.perf_counter() - t0)

    def close(self) -> None:
        self.loaded = None


class TorchEngine:
    name = "torch"

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> TorchPair:
        import torch

        from specterm.oracle.run import OracleConfig, load_pair

        torch.set_num_threads(options.threads)
        specs = {}
        for role, override in (("target", options.target), ("draft", options.draft)):
            entry = meta.get(role)
            if override is None and not isinstance(entry, dict):
                raise SpectermError(f"run.json names no {role} model; this needs a run made by `specterm run` (or pass --{role}).")
            specs[role] = model_location(entry, override)
        loaded = load_pair(OracleConfig(target=specs["target"], draft=specs["draft"], prompts=[], out=Path("."),
                                        device=options.device or meta.get("device") or "auto",
                                        dtype=options.dtype or meta.get("dtype") or "auto"), report)
        for role in ("target", "draft"):
            if model_key(loaded.meta.get(role)) != model_key(meta.get(role)):
                raise SpectermError(f"the {role} model loaded now is not the one this run was made with (checksum differs); "
                                    "restore the original file or re-run `specterm run`.")
        return TorchPair(loaded, options.threads)
