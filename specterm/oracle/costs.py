"""Measured costs on this hardware (SPEC 1.7 and SPEC 6 "Measured costs").

Three kinds of forward, all with a KV cache holding `context` tokens, timed on this device:

    c_decode      one 1-token target step (what plain greedy decoding pays per token)
    c_verify(g)   one (g+1)-token target forward (a verification of g drafts), g in `gammas`
    c_draft       one 1-token draft step
    c_draft2      one 2-token draft forward (the draft's first step after a fully accepted block)

Measurement (`CostSampler`): one untimed warm-up round, then timed rounds; each round times every
quantity once, in an order rotated by one each round (round-robin, so slow drift and load spikes
spread over all quantities instead of biasing one). Each forward first crops the cache back to
`context`. Stored per quantity: the median and its spread (IQR = q75 - q25, and all samples).
`measure_costs` runs `repeats` rounds in a row; `specterm confirm` adds rounds between its
generations so the costs span the same machine conditions.

Stored keys (seconds): c_decode_s, c_draft_s, c_draft2_s, c_verify_s {g: median}; c_*_iqr_s;
samples_s; the same medians in process CPU time (c_*_cpu_s, samples_cpu_s); decision_clock
("cpu" on a CPU with one torch thread, else "wall"); the robust curve of `specterm.core.hardware`
on that clock (c_decode_robust_s, c_verify_robust_s, c_verify_line, robust_method), which
decisions use; and, for older readers, r_by_gamma = c_draft / c_verify(g) (wall medians),
r_measured = r(4), r_gamma.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Optional, Sequence

import numpy as np

from specterm.core.hardware import cost_curve, curve_summary
from specterm.core.progress import check_cancel
from specterm.oracle.models import crop_cache, forward_logits, new_cache

COST_GAMMAS = tuple(range(1, 17))  # draft lengths whose verify cost c_verify(g) is timed (params.GAMMAS: the analysis range 1..32)
R_GAMMA = 4
REPEATS = 7
METHOD = ("median wall time of interleaved repeats (round-robin, order rotated each round, one warm-up round); "
          "decode: 1-token target step; draft: 1-token draft step; verify: (g+1)-token target forward; "
          "KV cache at the context length")

# on_measure(i, total, label, seconds): called after each timed forward (i = 1..total, warm-up included).
MeasureCallback = Callable[[int, int, str, float], None]


def _sync(model) -> None:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)


def _time_forward(model, cache, base: int, ids) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one forward of `ids` after a cache cropped to `base`."""
    crop_cache(cache, base)
    _sync(model)
    t0, c0 = time.perf_counter(), time.process_time()
    forward_logits(model, ids, cache)
    _sync(model)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    crop_cache(cache, base)
    return dt, dc


def _iqr(values: Sequence[float]) -> float:
    q25, q75 = np.percentile(np.asarray(values, dtype=np.float64), [25, 75])
    return float(q75 - q25)


def context_ids(tokens: Sequence[int], length: int) -> list[int]:
    """`tokens` repeated or cut to exactly `length` ids (the cache content only sets its length)."""
    tokens = list(tokens) or [0]
    return (tokens * (1 + length // len(tokens)))[:length]


class CostSampler:
    """Times the quantities of the module docstring, one round at a time, on caches holding `ctx`.

    `round()` times every quantity once (order rotated by one each round; the first round is an
    untimed warm-up) and can be called between other work, so a long session's costs span the same
    machine conditions as that work (`specterm confirm` adds a round after every prompt).
    `summary()` gives the stored dict from every timed round so far.
    """

    def __init__(self, target, draft, ctx: Sequence[int], gammas: Sequence[int] = COST_GAMMAS,
                 on_measure: Optional[MeasureCallback] = None, cancel=None):
        import torch

        self.gammas = sorted({int(g) for g in gammas})
        if not self.gammas or self.gammas[0] < 1:
            raise ValueError("gammas must be draft lengths >= 1")
        ctx = list(ctx)
        self.base = len(ctx)
        self.cpu_only = target.device.type == "cpu" and draft.device.type == "cpu"
        caches = {}
        for name, model in (("target", target), ("draft", draft)):
            cache = new_cache(model)
            forward_logits(model, torch.tensor([ctx], device=model.device), cache)
            caches[name] = cache
        # (label, model, cache, input ids); the fed tokens' values do not change the cost, only their count.
        nxt = context_ids(ctx, max(self.gammas) + 1)
        self.quantities = [("decode", target, caches["target"], torch.tensor([nxt[:1]], device=target.device)),
                           ("draft", draft, caches["draft"], torch.tensor([nxt[:1]], device=draft.device)),
                           ("draft2", draft, caches["draft"], torch.tensor([nxt[:2]], device=draft.device))]
        self.quantities += [(f"verify:{g}", target, caches["target"], torch.tensor([nxt[: g + 1]], device=target.device))
                            for g in self.gammas]
        self.samples: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.samples_cpu: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.rounds = 0  # rounds run, the warm-up included
        self.on_measure = on_measure
        self.cancel = cancel
        self.planned = 0  # forwards announced to on_measure as the total (grows with plan())
        self.done = 0

    def plan(self, rounds: int) -> None:
        """Announce `rounds` more rounds (only the progress total depends on it)."""
        self.planned += rounds * len(self.quantities)

    def round(self) -> None:
        warm = self.rounds == 0
        shift = self.rounds % len(self.quantities)
        if self.done + len(self.quantities) > self.planned:
            self.plan(1)
        for label, model, cache, ids in self.quantities[shift:] + self.quantities[:shift]:
            check_cancel(self.cancel)
            dt, dc = _time_forward(model, cache, self.base, ids)
            self.done += 1
            if not warm:
                self.samples[label].append(dt)
                self.samples_cpu[label].append(dc)
            if self.on_measure is not None:
                self.on_measure(self.done, self.planned, f"{label} (warm-up)" if warm else label, dt)
        self.rounds += 1

    def summary(self) -> dict:
        import torch

        if self.rounds < 2:
            raise ValueError("no timed round yet (the first round is the warm-up)")
        samples = self.samples
        med = {k: statistics.median(v) for k, v in samples.items()}
        gammas = self.gammas
        c_draft = med["draft"]
        c_verify = {str(g): med[f"verify:{g}"] for g in gammas}
        r_by = {g: c_draft / c for g, c in c_verify.items()}
        r_gamma = R_GAMMA if R_GAMMA in gammas else min(gammas, key=lambda g: (abs(g - R_GAMMA), g))
        cost = {
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
            # processes' load than wall time does (with 1 torch thread it equals wall time on an idle machine).
            "c_decode_cpu_s": statistics.median(self.samples_cpu["decode"]),
            "c_draft_cpu_s": statistics.median(self.samples_cpu["draft"]),
            "c_draft2_cpu_s": statistics.median(self.samples_cpu["draft2"]),
            "c_verify_cpu_s": {str(g): statistics.median(self.samples_cpu[f"verify:{g}"]) for g in gammas},
            "samples_cpu_s": {k: list(v) for k, v in self.samples_cpu.items()},
            "context": self.base,
            "repeats": self.rounds - 1,
            "threads": torch.get_num_threads(),
            "method": METHOD,
            "decision_clock": "cpu" if self.cpu_only and torch.get_num_threads() == 1 else "wall",
        }
        curve = cost_curve(cost)
        assert curve is not None  # c_decode_s was just measured
        cost.update(curve_summary(curve))
        return cost


def measure_costs(target, draft, ctx: Sequence[int], gammas: Sequence[int] = COST_GAMMAS, repeats: int = REPEATS,
                  on_measure: Optional[MeasureCallback] = None, cancel=None) -> dict:
    """Time c_decode, c_verify(g) for g in gammas and c_draft with caches holding `ctx`: one warm-up
    round and `repeats` timed rounds (see the module docstring)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    sampler = CostSampler(target, draft, ctx, gammas, on_measure=on_measure, cancel=cancel)
    sampler.plan(repeats + 1)
    for _ in range(repeats + 1):
        sampler.round()
    return sampler.summary()


def measure_cost_ratio(target, draft, prompt_ids: list[int], extra: int = 128, repeats: int = REPEATS,
                       gammas: Sequence[int] = COST_GAMMAS, on_measure: Optional[MeasureCallback] = None, cancel=None) -> dict:
    """`measure_costs` at the context SPEC 1.7 names: the prompt (repeated if short) + `extra` tokens."""
    ctx = context_ids(prompt_ids, len(prompt_ids) + extra)
    return measure_costs(target, draft, ctx, gammas=gammas, repeats=repeats, on_measure=on_measure, cancel=cancel)
