"""Measured costs on this hardware (SPEC 1.7 and SPEC 6 "Measured costs").

Three kinds of forward, all with a KV cache holding `context` tokens, timed on this device:

    c_decode      one 1-token target step (what plain greedy decoding pays per token)
    c_verify(g)   one (g+1)-token target forward (a verification of g drafts), g in `gammas`
    c_draft       one 1-token draft step
    c_draft2      one 2-token draft forward (the draft's first step after a fully accepted block)

Measurement (`CostSampler`): one untimed warm-up round (light: of each kind of forward only the
narrowest and the widest, `warm_up_quantities`: first touch of the caches, weights and kernel paths
without paying a full round), then timed rounds; each round times every
quantity once, in an order rotated by one each round (round-robin, so slow drift and load spikes
spread over all quantities instead of biasing one). Each forward first crops the cache back to
`context`. Stored per quantity: the median and its spread (IQR = q75 - q25, and all samples).
`measure_costs` runs `repeats` rounds in a row; `specterm confirm` adds rounds between its
generations so the costs span the same machine conditions.

Stored keys (seconds): c_decode_s, c_draft_s, c_draft2_s, c_verify_s {g: median}; c_*_iqr_s;
samples_s; the same medians in process CPU time (c_*_cpu_s, samples_cpu_s); decision_clock
("cpu" on a CPU with one torch thread, else "wall"); the robust curve of `specterm.core.decide.hardware`
on that clock (c_decode_robust_s, c_verify_robust_s, c_verify_line, robust_method), which
decisions use; and, for older readers, r_by_gamma = c_draft / c_verify(g) (wall medians),
r_measured = r(4), r_gamma.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from specterm.core.store import new_meta
from specterm.engines.timing import (
    BATCH_FIT_M,
    BATCH_HELD,
    BATCH_REPEATS,
    BATCHES,
    COST_GAMMAS,
    CostDict,
    REPEATS,
    GridSchedule,
    MeasureCallback,
    Quantity,
    RoundRobinSampler,
    check_gammas,
    context_ids,
    run_rounds,
    with_curve,
)
from specterm.engines.torch.models_torch import crop_cache, forward_logits, new_cache

if TYPE_CHECKING:
    import threading

    import torch
    from transformers import DynamicCache, PreTrainedModel

    from specterm.engines.drafters import Drafter

METHOD = ("median wall time of interleaved repeats (round-robin, order rotated each round, one light warm-up round: "
          "of each kind the narrowest and widest forward); "
          "decode: 1-token target step; draft: 1-token draft step; verify: (g+1)-token target forward; "
          "KV cache at the context length")


def _sync(model: PreTrainedModel) -> None:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)


def _time_forward(model: PreTrainedModel, cache: DynamicCache, base: int, ids: torch.Tensor) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one forward of `ids` after a cache cropped to `base`."""
    crop_cache(cache, base)
    _sync(model)
    t0, c0 = time.perf_counter(), time.process_time()
    forward_logits(model, ids, cache)
    _sync(model)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    crop_cache(cache, base)
    return dt, dc


class CostSampler(RoundRobinSampler):
    """Times the quantities of the module docstring, one round at a time, on caches holding `ctx`.

    `round()` times every quantity once (order rotated by one each round; the first round is an
    untimed warm-up) and can be called between other work, so a long session's costs span the same
    machine conditions as that work (`specterm confirm` adds a round after every prompt).
    `summary()` gives the stored dict from every timed round so far.
    """

    def __init__(self, target: PreTrainedModel, draft: PreTrainedModel, ctx: Sequence[int], gammas: Sequence[int] = COST_GAMMAS,
                 on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None):
        import torch

        self.gammas = check_gammas(gammas)
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
        self._start(on_measure, cancel)

    def _time(self, quantity: Quantity) -> tuple[float, float]:
        _, model, cache, ids = quantity
        return _time_forward(model, cache, self.base, ids)

    def summary(self) -> CostDict:
        import torch

        return with_curve({
            **self.common_summary(),
            "threads": torch.get_num_threads(),
            "method": METHOD,
            "decision_clock": "cpu" if self.cpu_only and torch.get_num_threads() == 1 else "wall",
        })


DRAFTER_CALLS = 10  # proposals per timed drafter sample (their mean)
DRAFTER_METHOD = ("median of interleaved repeats (round-robin, order rotated each round, one warm-up round); decode: "
                  "1-token target step; verify: (g+1)-token target forward (KV cache at the context length); draft: one "
                  "proposal of the drafter on that context, its whole cost per block (no draft model: c_draft is per "
                  "block, SPEC 2b)")


class DrafterCostSampler(RoundRobinSampler):
    """The costs of drafter runs (SPEC 2b): the target's decode and verify(g) forwards, as CostSampler times
    them, and each drafter's proposal on the same context (label "drafter:<i>"), in the same rounds.
    `summary_for(i)` is drafter i's stored cost dict: its proposal's samples are its "draft" (and
    "draft2": a drafter has no 2-token step), seconds per block."""

    def __init__(self, target: PreTrainedModel, drafters: Sequence[Drafter], ctx: Sequence[int], gammas: Sequence[int] = COST_GAMMAS,
                 on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None):
        import torch

        self.gammas = check_gammas(gammas)
        ctx = list(ctx)
        self.base = len(ctx)
        self.cpu_only = target.device.type == "cpu"
        cache = new_cache(target)
        forward_logits(target, torch.tensor([ctx], device=target.device), cache)
        nxt = context_ids(ctx, max(self.gammas) + 1)
        context = np.asarray(ctx, dtype=np.int64)
        self.quantities = [("decode", target, cache, torch.tensor([nxt[:1]], device=target.device))]
        self.quantities += [(f"drafter:{i}", d, context) for i, d in enumerate(drafters)]
        self.quantities += [(f"verify:{g}", target, cache, torch.tensor([nxt[: g + 1]], device=target.device))
                            for g in self.gammas]
        self.n_drafters = len(drafters)
        self._start(on_measure, cancel)

    def _time(self, quantity: Quantity) -> tuple[float, float]:
        if quantity[0].startswith("drafter:"):
            _, drafter, context = quantity
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(DRAFTER_CALLS):  # a proposal takes microseconds: the mean of a few, above clock resolution
                drafter.propose(context)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            return max(dt, 1e-9) / DRAFTER_CALLS, max(dc, 1e-9) / DRAFTER_CALLS
        _, model, cache, ids = quantity
        return _time_forward(model, cache, self.base, ids)

    def summary(self) -> CostDict:
        return self.summary_for(0)

    def summary_for(self, i: int) -> CostDict:
        import torch

        samples, cpu = self.samples, self.samples_cpu
        label = f"drafter:{i}"
        keep = [k for k in samples if not k.startswith("drafter:")]
        try:
            self.samples = {**{k: samples[k] for k in keep}, "draft": samples[label], "draft2": samples[label]}
            self.samples_cpu = {**{k: cpu[k] for k in keep}, "draft": cpu[label], "draft2": cpu[label]}
            common = self.common_summary()
        finally:
            self.samples, self.samples_cpu = samples, cpu
        common["samples_s"].pop("draft2")
        common["samples_cpu_s"].pop("draft2")
        return with_curve({
            **common,
            "c_draft_per": "block",
            "threads": torch.get_num_threads(),
            "method": DRAFTER_METHOD,
            "decision_clock": "cpu" if self.cpu_only and torch.get_num_threads() == 1 else "wall",
        })


def measure_costs(target: PreTrainedModel, draft: PreTrainedModel, ctx: Sequence[int], gammas: Sequence[int] = COST_GAMMAS, repeats: int = REPEATS,
                  on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None) -> CostDict:
    """Time c_decode, c_verify(g) for g in gammas and c_draft with caches holding `ctx`: one warm-up
    round and `repeats` timed rounds (see the module docstring)."""
    return run_rounds(CostSampler(target, draft, ctx, gammas, on_measure=on_measure, cancel=cancel), repeats)


def measure_cost_ratio(target: PreTrainedModel, draft: PreTrainedModel, prompt_ids: list[int], extra: int = 128, repeats: int = REPEATS,
                       gammas: Sequence[int] = COST_GAMMAS, on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None) -> CostDict:
    """`measure_costs` at the context SPEC 1.7 names: the prompt (repeated if short) + `extra` tokens."""
    ctx = context_ids(prompt_ids, len(prompt_ids) + extra)
    return measure_costs(target, draft, ctx, gammas=gammas, repeats=repeats, on_measure=on_measure, cancel=cancel)


BATCH_METHOD = ("dense grid: the target forward of m tokens per row at batch B is timed at every m in 1..9 "
                "(decode and every verify of g = 1..8) for every B in {2, 4, 8}; at B = 1 the session's cost rounds "
                "(decode, verify(g), draft) are reused, not timed again (same caches, context and clock). Warm-up: "
                "the 1-token forwards of each B; then interleaved rounds, order rotated. c_verify(g, B), c_decode(B), "
                "c_draft(B) are the timed medians (a point not timed would be interpolated in tokens per forward, "
                "hardware.batch). Caches: one prefill of the context at B = 1 per model, repeated B times along the "
                "batch axis (no B-row prefill). When: in a confirmation with generations and interleaved costs (the "
                "default) the grid (warm-up and both rounds) is timed in slices, one after every prompt, so only the "
                "g curve's rounds run before the first generation; --costs-only, --batch and --no-interleave-costs "
                "time it all before")


def _repeat_cache(cache: DynamicCache, batch: int) -> DynamicCache:
    """A copy of a 1-row DynamicCache repeated `batch` times along the batch axis."""
    import copy

    out = copy.deepcopy(cache)
    if batch > 1:
        out.batch_repeat_interleave(batch)
    return out


def measure_batch_costs(target: PreTrainedModel, draft: PreTrainedModel, ctx: Sequence[int], batches: Sequence[int] = BATCHES,
                        fit_m: Sequence[int] = BATCH_FIT_M, held: Sequence[tuple[int, int]] = BATCH_HELD,
                        repeats: int = BATCH_REPEATS, on_measure: MeasureCallback | None = None,
                        cancel: threading.Event | None = None, reuse: CostDict | None = None, prefilled: dict[str, DynamicCache] | None = None) -> CostDict:
    """Time c_decode(B), c_verify(g, B) and c_draft(B) for B in `batches` on caches holding `ctx` (see
    BATCH_METHOD), all in one go: `BatchGrid(...).run_all().record()`."""
    return BatchGrid(target, draft, ctx, batches, fit_m, held, repeats, on_measure, cancel, reuse,
                     prefilled).run_all().record()


class BatchGrid(GridSchedule):
    """The torch batch grid (BATCH_METHOD): caches and forwards set up here, timed by `step` / `run_all`.
    `record()` is the stored dict: every sample (wall and process CPU time) keyed "target:B:m" and
    "draft:B", the grid, the held-back points and `wall_s` (set-up plus every timed slice). The fit
    itself is core (hardware.batch.batch_costs), so a stored measurement can be re-fitted.

    reuse: `reused_b1(cost)` of cost rounds just measured on the same caches and context: the B = 1
    forwards are then copied from them instead of timed again (the whole measurement, g curve and
    batch grid, costs one set of B = 1 forwards). prefilled: {"target": cache, "draft": cache} already
    holding `ctx` (the cost rounds' caches; copied, never changed), else both are prefilled here."""

    def __init__(self, target: PreTrainedModel, draft: PreTrainedModel, ctx: Sequence[int], batches: Sequence[int] = BATCHES,
                 fit_m: Sequence[int] = BATCH_FIT_M, held: Sequence[tuple[int, int]] = BATCH_HELD,
                 repeats: int = BATCH_REPEATS, on_measure: MeasureCallback | None = None,
                 cancel: threading.Event | None = None, reuse: CostDict | None = None, prefilled: dict[str, DynamicCache] | None = None) -> None:
        import torch

        t_start = time.perf_counter()
        ctx = list(ctx)
        base = len(ctx)
        one = dict(prefilled or {})
        for name, model in (("target", target), ("draft", draft)):
            if name in one:
                continue
            cache = new_cache(model)
            forward_logits(model, torch.tensor([ctx], device=model.device), cache)
            one[name] = cache
        nxt = context_ids(ctx, max([*fit_m, *(m for _, m in held)]))
        timed_b = sorted({int(b) for b in batches} - ({1} if reuse else set()))
        points = sorted({(B, int(m)) for B in timed_b for m in fit_m}
                        | {(int(B), int(m)) for B, m in held if int(B) in timed_b})
        quantities = []
        caches = {}
        for B in timed_b:
            caches[("target", B)] = _repeat_cache(one["target"], B)
            caches[("draft", B)] = _repeat_cache(one["draft"], B)
            quantities.append((f"draft:{B}", draft, caches[("draft", B)],
                               torch.tensor([nxt[:1]] * B, device=draft.device)))
        for B, m in points:
            quantities.append((f"target:{B}:{m}", target, caches[("target", B)],
                               torch.tensor([nxt[:m]] * B, device=target.device)))
        super().__init__(quantities, lambda q: _time_forward(q[1], q[2], base, q[3]), repeats, reuse, on_measure,
                         cancel)
        self.setup_s = time.perf_counter() - t_start
        self.wall_s = self.setup_s  # the set-up counts as measurement time
        cpu_only = target.device.type == "cpu" and draft.device.type == "cpu"
        threads = torch.get_num_threads()
        self.meta = {
            "batches": sorted({int(b) for b in batches}),
            "fit_m": sorted({int(m) for m in fit_m}),
            "reused_b1": bool(reuse),
            "held_back": [[int(B), int(m)] for B, m in held],
            "context": base,
            "repeats": repeats,
            "threads": threads,
            "decision_clock": "cpu" if cpu_only and threads == 1 else "wall",
            "method": BATCH_METHOD,
        }

    def record(self) -> CostDict:
        if not self.complete:
            raise ValueError(f"the batch grid is not complete ({self.done} of {self.total} forwards timed)")
        samples, samples_cpu = self.samples()
        return {**self.meta, "samples_s": samples, "samples_cpu_s": samples_cpu, "wall_s": self.wall_s}


def grid_record(grid: "BatchGrid", rounds_s: float, upfront_s: float | None = None) -> dict[str, Any]:
    """The stored costs by batch of a finished grid: `rounds_wall_s` the g curve's rounds before the
    generations; `whole_wall_s` = those + the grid's set-up and every timed forward (the whole measurement
    of all g and B); with the grid timed in slices, `upfront_wall_s` = what a person waits before the
    first generation (the rounds and the grid's set-up; without slices it is the whole, not stored)."""
    out = grid.record()
    out["measured_at"] = new_meta("")["created"]
    out["rounds_wall_s"] = rounds_s
    out["whole_wall_s"] = rounds_s + grid.wall_s
    if upfront_s is not None:
        out["upfront_wall_s"] = upfront_s
    return out
