"""Timing rounds, shared by every engine: the round-robin sampler of the cost rounds (one light
warm-up round, then every quantity once per round in an order rotated by one), the batch grid's schedule
(`GridSchedule`: timed in slices between a confirmation's generations, or all at once), and what the
stored cost dict of every engine holds in common (`RoundRobinSampler.common_summary`, `with_curve`).
An engine subclasses the sampler with its own forwards (engines/torch/costs_torch.CostSampler,
engines/llamacpp/costs_llamacpp.LlamaCostSampler).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, Self

import numpy as np

from specterm.core.decide.hardware import cost_curve, curve_summary
from specterm.core.store import new_meta
from specterm.engines.progress import check_cancel

COST_GAMMAS = tuple(range(1, 17))  # draft lengths whose verify cost c_verify(g) is timed (params.GAMMAS: the analysis range 1..32)


R_GAMMA = 4


REPEATS = 7


# on_measure(i, total, label, seconds): called after each timed forward (i = 1..total, warm-up included).
MeasureCallback = Callable[[int, int, str, float], None]
# One timed quantity: its label ("decode", "verify:<g>", ...) first, then what the engine's `_time` needs
# (model, cache, ids, ...); the items after the label differ by engine, hence Any.
Quantity = tuple[Any, ...]
# A stored cost dict (JSON-like: the keys of `common_summary` plus the engine's own).
CostDict = dict[str, Any]
# Timed samples by label (seconds).
Samples = dict[str, list[float]]


def _iqr(values: Sequence[float]) -> float:
    q25, q75 = np.percentile(np.asarray(values, dtype=np.float64), [25, 75])
    return float(q75 - q25)


def context_ids(tokens: Sequence[int], length: int) -> list[int]:
    """`tokens` repeated or cut to exactly `length` ids (the cache content only sets its length)."""
    tokens = list(tokens) or [0]
    return (tokens * (1 + length // len(tokens)))[:length]


def warm_up_quantities(quantities: list[Quantity]) -> list[Quantity]:
    """The warm-up round's forwards: of each kind (label before ":", e.g. "verify" of "verify:8") the
    first and the last in the list (the narrowest and widest of a g grid), in their order."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, q in enumerate(quantities):
        kind = str(q[0]).split(":")[0]
        first.setdefault(kind, i)
        last[kind] = i
    keep = set(first.values()) | set(last.values())
    return [q for i, q in enumerate(quantities) if i in keep]


class RoundRobinSampler:
    """Rounds of timed forwards, shared by the torch (`CostSampler`) and llama.cpp samplers.

    A subclass fills `self.quantities` with tuples whose first item is the label ("decode",
    "draft", "draft2", "verify:g", ...), calls `_start`, and times one quantity in `_time`.
    `round()` times every quantity once (order rotated by one each round; the first round is an
    untimed warm-up); `common_summary()` gives the stored keys both engines share.
    """

    gammas: list[int]
    base: int
    quantities: list[Quantity]

    def _start(self, on_measure: MeasureCallback | None, cancel: threading.Event | None) -> None:
        self.samples: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.samples_cpu: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.rounds = 0  # rounds run, the warm-up included
        self.on_measure = on_measure
        self.cancel = cancel
        self.planned = 0  # forwards announced to on_measure as the total (grows with plan())
        self.done = 0

    def _time(self, quantity: Quantity) -> tuple[float, float]:
        """(wall s, process CPU s) of one forward of `quantity`."""
        raise NotImplementedError

    def summary(self) -> CostDict:
        """The stored dict: `common_summary()` plus the engine's own keys, through `with_curve`."""
        raise NotImplementedError

    def plan(self, rounds: int) -> None:
        """Announce `rounds` more rounds (only the progress total depends on it)."""
        self.planned += rounds * len(self.quantities)

    def round(self, only: set[str] | None = None) -> list[str]:
        """Time one round (the first is the warm-up); `only`: the labels to time (a focused round of
        `specterm costs`: the quantities the decision still needs). Returns the labels timed."""
        warm = self.rounds == 0
        shift = self.rounds % len(self.quantities)
        order = warm_up_quantities(self.quantities) if warm else self.quantities[shift:] + self.quantities[:shift]
        if only is not None and not warm:
            order = [q for q in order if q[0] in only]
        if warm and self.planned >= len(self.quantities):  # the announced total counted a full warm-up round
            self.planned -= len(self.quantities) - len(order)
        if self.done + len(order) > self.planned:
            self.plan(1)
        for quantity in order:
            label = quantity[0]
            check_cancel(self.cancel)
            dt, dc = self._time(quantity)
            self.done += 1
            if not warm:
                self.samples[label].append(dt)
                self.samples_cpu[label].append(dc)
            if self.on_measure is not None:
                self.on_measure(self.done, self.planned, f"{label} (warm-up)" if warm else label, dt)
        self.rounds += 1
        return [] if warm else [q[0] for q in order]

    def drop(self, labels: list[str]) -> None:
        """Forget the last sample of each of `labels` (a round timed while the machine was busy)."""
        for label in labels:
            self.samples[label].pop()
            self.samples_cpu[label].pop()

    def common_summary(self) -> CostDict:
        """The stored keys of both engines (module docstring), from every timed round so far."""
        if self.rounds < 2:
            raise ValueError("no timed round yet (the first round is the warm-up)")
        samples, cpu = self.samples, self.samples_cpu
        med = {k: statistics.median(v) for k, v in samples.items()}
        gammas = self.gammas
        c_draft = med["draft"]
        c_verify = {str(g): med[f"verify:{g}"] for g in gammas}
        r_by = {g: c_draft / c for g, c in c_verify.items()}
        r_gamma = R_GAMMA if R_GAMMA in gammas else min(gammas, key=lambda g: (abs(g - R_GAMMA), g))
        return {
            "r_measured": r_by[str(r_gamma)],
            "r_gamma": r_gamma,
            "r_by_gamma": r_by,
            "c_decode_s": med["decode"],
            "c_draft_s": c_draft,
            "c_verify_s": c_verify,
            "c_decode_iqr_s": _iqr(samples["decode"]),
            "c_draft_iqr_s": _iqr(samples["draft"]),
            "c_draft2_s": med["draft2"],
            "c_draft2_iqr_s": _iqr(samples["draft2"]),
            "c_verify_iqr_s": {str(g): _iqr(samples[f"verify:{g}"]) for g in gammas},
            "samples_s": {k: list(v) for k, v in samples.items()},
            # Process CPU time of the same forwards: on a time-shared CPU it moves far less with other
            # processes' load than wall time does (with 1 thread it equals wall time on an idle machine).
            "c_decode_cpu_s": statistics.median(cpu["decode"]),
            "c_draft_cpu_s": statistics.median(cpu["draft"]),
            "c_draft2_cpu_s": statistics.median(cpu["draft2"]),
            "c_verify_cpu_s": {str(g): statistics.median(cpu[f"verify:{g}"]) for g in gammas},
            "samples_cpu_s": {k: list(v) for k, v in cpu.items()},
            "context": self.base,
            "repeats": self.rounds - 1,
        }


def session_rounds(sampler: Rounds, repeats: int, later_rounds: int, measured_by: str) -> Callable[[], CostDict]:
    """A confirm session's cost rounds, both engines: the warm-up and `repeats` timed rounds now
    (`later_rounds` more announced, one after each prompt); returns session_cost(), the stored dict of
    every round so far with when and by what it was measured."""
    sampler.plan(1 + repeats + later_rounds)
    for _ in range(1 + repeats):
        sampler.round()

    def session_cost() -> CostDict:
        cost = sampler.summary()
        cost["measured_at"] = new_meta("")["created"]
        cost["measured_by"] = measured_by
        return cost

    return session_cost


def with_curve(cost: CostDict) -> CostDict:
    """`cost` with the robust curve's summary (core.hardware) added: the last step of every summary."""
    curve = cost_curve(cost)
    assert curve is not None  # c_decode_s was just measured
    cost.update(curve_summary(curve))
    return cost


class Rounds(Protocol):
    """What `run_rounds` needs of a sampler (RoundRobinSampler, or an engine's through base.Sampler)."""

    def plan(self, rounds: int) -> None: ...
    def round(self, only: set[str] | None = None) -> list[str]: ...
    def summary(self) -> dict[str, Any]: ...


def run_rounds(sampler: Rounds, repeats: int) -> dict[str, Any]:
    """One warm-up round and `repeats` timed rounds of `sampler`, then its summary."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    sampler.plan(repeats + 1)
    for _ in range(repeats + 1):
        sampler.round()
    return sampler.summary()


def check_gammas(gammas: Sequence[int]) -> list[int]:
    """The draft lengths to time, sorted and unique; refused unless every one is >= 1."""
    out = sorted({int(g) for g in gammas})
    if not out or out[0] < 1:
        raise ValueError("gammas must be draft lengths >= 1")
    return out


BATCHES = (1, 2, 4, 8)


BATCH_FIT_M = tuple(range(1, 10))  # tokens per row timed at every B > 1: decode and every verify of g = 1..8


BATCH_HELD: tuple[tuple[int, int], ...] = ()  # a dense grid has nothing to hold back (hardware/batch.py: why dense)


BATCH_REPEATS = 2


def reused_b1(cost: CostDict) -> CostDict:
    """The B = 1 column of the batch grid taken from a cost-rounds summary (CostSampler.summary()):
    "target:1:1" = decode, "target:1:{g+1}" = verify:g, "draft:1" = draft, for both clocks."""
    out: dict[str, dict[str, list[float]]] = {}
    for clock in ("samples_s", "samples_cpu_s"):
        src = cost.get(clock) or {}
        keys = {"target:1:1": "decode", "draft:1": "draft"}
        keys.update({f"target:1:{int(k.split(':')[1]) + 1}": k for k in src if k.startswith("verify:")})
        out[clock] = {new: list(src[old]) for new, old in keys.items() if old in src}
    return out


class GridSchedule:
    """The batch grid's timing, shared by both engines: a warm-up of the cheapest forwards of each batch
    (labels "draft:B" and "...:1": first touch of every cache and kernel path; a full warm-up round
    would cost as much as a timed one), then `repeats` rounds of every quantity, order rotated.
    `time_one(quantity)` -> (wall s, CPU s); quantities are tuples whose first item is the label.

    `step(k)` times the next k forwards of that schedule, so a confirmation can time the grid in slices
    between its generations (`confirm`: one slice after every prompt) instead of all before them;
    `run_all()` times the rest. `samples()` -> (samples_s, samples_cpu_s), with `reuse`'s samples
    (the B = 1 column) added; `wall_s` sums the timed slices' wall time."""

    def __init__(self, quantities: list[Quantity], time_one: Callable[[Quantity], tuple[float, float]], repeats: int,
                 reuse: CostDict | None, on_measure: MeasureCallback | None, cancel: threading.Event | None) -> None:
        self._samples: dict[str, list[float]] = {q[0]: [] for q in quantities}
        self._samples_cpu: dict[str, list[float]] = {q[0]: [] for q in quantities}
        if reuse:
            self._samples.update(reuse["samples_s"])
            self._samples_cpu.update(reuse["samples_cpu_s"])
        warm = [(q, True) for q in quantities if q[0].startswith("draft:") or q[0].endswith(":1")]
        rounds = []
        for rnd in range(repeats):
            shift = (rnd * len(quantities)) // max(repeats, 1)
            rounds += [(q, False) for q in quantities[shift:] + quantities[:shift]]
        self._todo = warm + rounds
        self._time_one, self.on_measure, self.cancel = time_one, on_measure, cancel
        self.done = 0
        self.wall_s = 0.0

    @property
    def total(self) -> int:
        return len(self._todo)

    @property
    def complete(self) -> bool:
        return self.done == self.total

    def step(self, k: int) -> None:
        """Time the next `k` forwards of the schedule (fewer if fewer are left)."""
        t0 = time.perf_counter()
        for q, warm in self._todo[self.done:self.done + max(int(k), 0)]:
            check_cancel(self.cancel)
            dt, dc = self._time_one(q)
            self.done += 1
            if not warm:
                self._samples[q[0]].append(dt)
                self._samples_cpu[q[0]].append(dc)
            if self.on_measure is not None:
                self.on_measure(self.done, self.total, f"{q[0]} (warm-up)" if warm else q[0], dt)
        self.wall_s += time.perf_counter() - t0

    def run_all(self) -> Self:
        self.step(self.total - self.done)
        return self

    def samples(self) -> tuple[Samples, Samples]:
        return self._samples, self._samples_cpu


def batch_grid_rounds(quantities: list[Quantity], time_one: Callable[[Quantity], tuple[float, float]], repeats: int,
                      reuse: CostDict | None, on_measure: MeasureCallback | None, cancel: threading.Event | None) -> tuple[Samples, Samples]:
    """`GridSchedule` timed in one go: (samples_s, samples_cpu_s)."""
    return GridSchedule(quantities, time_one, repeats, reuse, on_measure, cancel).run_all().samples()
