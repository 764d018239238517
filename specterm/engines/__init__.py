"""Engines: one small interface (`Engine`, engines/base.py) for what an inference engine does for
specterm, with torch/ and llamacpp/ implementing it. A command written against it (`specterm costs`,
engines/costs.py) runs on every engine; a third engine (a GPU server, MLX) is one new folder.

    engine = engine_for(run.meta)          # the engine that made the run
    pair = engine.open(run.meta, ...)      # load the run's models (found by name and sha256)
    pair.describe()                        # engine, version, build, device: what a cost profile records
    pair.encode(text)                      # the prompt's token ids
    pair.cost_sampler(ctx, gammas, ...)    # rounds of timed forwards (c_decode, c_verify(g), c_draft)
    pair.batch_costs(sampler, ctx, ...)    # the costs by batch (B = 1, 2, 4, 8)

`specterm confirm` (engines/confirm.py) is written once too: the pair (base.ConfirmPair) times one
greedy and one speculative generation of a prompt (`greedy_timed`, `speculative_timed`) and adds its
own columns; the flow, the record and its checks are shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing a light module of engines/ (progress.py) must not load the interface's numpy
    from specterm.engines.base import Engine

ENGINES = ("torch", "llama.cpp")


def engine_named(name: str) -> Engine:
    """The engine called `name` (torch or llama.cpp); one sentence when there is none."""
    from specterm.core.errors import SpectermError

    if name == "torch":
        from specterm.engines.torch import TorchEngine

        return TorchEngine()
    if name == "llama.cpp":
        from specterm.engines.llamacpp import LlamaEngine

        return LlamaEngine()
    raise SpectermError(f"unknown engine {name!r}; use one of {', '.join(ENGINES)}.")


def engine_for(meta: dict[str, Any]) -> Engine:
    """The engine that made a run (run.json `backend`; torch when it names none). Imported bits were made
    by none: `specterm costs IMPORTED --target T --draft D` times the models given with torch."""
    from specterm.core.decide.hardware.profiles import IMPORT, run_engine

    name = run_engine(meta)
    return engine_named("torch" if name == IMPORT else name)


__all__ = ["ENGINES", "engine_for", "engine_named"]
