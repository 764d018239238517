"""The engine interface: what specterm needs of an inference engine (a Protocol each engine
implements; nothing here imports torch or llama_cpp).

An `Engine` opens a run's model pair (`OpenPair`). An open pair says what it is (`describe`: the
engine, its version and build, the device: what a cost profile records), encodes prompts, and
times forwards for the cost profile (`cost_sampler`: rounds of c_decode, c_verify(g), c_draft,
c_draft2, and the engine's per-block terms; `batch_costs`: the by-batch grid). The oracle's
greedy y, teacher-forced bits and real speculative decoding stay in each engine's oracle module
(specterm/oracle/ for torch, specterm/oracle/llamacpp/ for llama.cpp) until `run` and `confirm`
are written against this interface too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

MeasureCallback = Callable[[int, int, str, float], None]


class Sampler(Protocol):
    """Rounds of timed forwards (oracle/costs.RoundRobinSampler): `round()` times every quantity once
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


class Engine(Protocol):
    name: str

    def open(self, meta: dict[str, Any], options: OpenOptions, report: Callable[[Any], None]) -> OpenPair:
        """Load the run's models (found by name and sha256 under $SPECTERM_MODELS / ./models, or the
        overrides), checked against the run's checksums; one sentence when they cannot be found."""
        ...
