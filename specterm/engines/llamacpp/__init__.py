"""The llama.cpp engine (llama-cpp-python, GGUF weights on the CPU): the engine interface over
specterm/oracle/llamacpp/ (models, costs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specterm.engines.base import MeasureCallback, OpenOptions, Sampler

N_CTX = 1024  # the cost contexts hold a prompt + y/2 (hundreds of tokens) plus a 17-token verify


class LlamaPair:
    def __init__(self, target: Any, draft: Any, threads: int) -> None:
        self.target, self.draft, self.threads = target, draft, threads

    def describe(self) -> dict[str, Any]:
        from specterm.oracle.llamacpp.models import describe_llamacpp

        return describe_llamacpp(self.threads)

    def encode(self, text: str) -> list[int]:
        return list(self.target.tokenize(text))

    def cost_sampler(self, ctx: Sequence[int], gammas: Sequence[int], on_measure: MeasureCallback | None,
                     cancel: Any) -> Sampler:
        from specterm.oracle.llamacpp.costs import LlamaCostSampler

        return LlamaCostSampler(self.target, self.draft, ctx, gammas, on_measure=on_measure, cancel=cancel)

    def batch_costs(self, sampler: Sampler, ctx: Sequence[int], on_measure: MeasureCallback | None,
                    cancel: Any) -> dict[str, Any]:
        from specterm.oracle.llamacpp.costs import measure_batch_costs, reused_b1_llamacpp

        return measure_batch_costs(self.target, self.draft, ctx, reuse=reused_b1_llamacpp(sampler.summary()),
                                   on_measure=on_measure, cancel=cancel)

    def close(self) -> None:
        self.target = self.draft = None


class LlamaEngine:
    name = "llama.cpp"

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> LlamaPair:
        from specterm.core.errors import SpectermError
        from specterm.core.progress import Progress
        from specterm.oracle.llamacpp import models as LM
        from specterm.oracle.llamacpp.confirm import _resolve

        if options.device not in (None, "cpu") or options.dtype is not None:
            raise SpectermError("--device and --dtype do not apply to llama.cpp (CPU, the GGUF's own weights); drop them.")
        t_path = _resolve(meta, "target", options.target)
        d_path = _resolve(meta, "draft", options.draft)
        LM.probe_decode(t_path)
        LM.probe_decode(d_path)
        report(Progress("loading", f"loading {t_path.name} and {d_path.name} in llama.cpp ({options.threads} thread(s))"))
        return LlamaPair(LM.load_gguf(t_path, N_CTX, options.threads), LM.load_gguf(d_path, N_CTX, options.threads),
                         options.threads)
