"""Measured costs in llama.cpp (SPEC 1.7 and SPEC 6), stored exactly as oracle/costs.py stores the
torch costs, so the core's decision on this hardware reads a llama.cpp run unchanged.

Quantities (each a llama_decode on a KV cache cropped back to `context` before and after):

    c_decode      a 1-token target decode (logits of its row): what plain greedy pays per token
    c_verify(g)   a (g+1)-token target decode with logits for every row (a verification of g drafts)
    c_draft       a 1-token draft decode
    c_draft2      a 2-token draft decode (last row's logits)
    c_draft_fwd(g) a (g+1)-token draft decode, last row's logits only: what llama.cpp's draft-simple
                  speculator pays once per block on top of its g 1-token drafts, because it feeds the
                  target's whole verification batch to the draft (common/speculative.cpp, process())

Same conventions as oracle/costs.py: one untimed warm-up round, then rounds that time every
quantity once in an order rotated by one each round; medians, IQRs and all samples, in wall time and
process CPU time; decision_clock "cpu" with one llama.cpp thread on a CPU (the thread is the calling
thread, so process CPU time is the forward's own time), else "wall"; the robust curve of
specterm.core.hardware on that clock. c_draft_fwd is stored beside (c_draft_fwd_s, c_draft_fwd_cpu_s)
and used only by the llama.cpp engine prediction of `confirm --engine llama.cpp`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence


from specterm.oracle.costs import COST_GAMMAS as GAMMAS
from specterm.oracle.costs import (
    REPEATS,
    MeasureCallback,
    RoundRobinSampler,
    check_gammas,
    context_ids,
    run_rounds,
    with_curve,
)
from specterm.oracle.llamacpp.models import GGUFModel

METHOD = ("median of interleaved repeats (round-robin, order rotated each round, one warm-up round) of llama.cpp "
          "llama_decode calls: decode: 1-token target decode; draft: 1-token draft decode; verify: (g+1)-token target "
          "decode with every row's logits; draft_fwd: (g+1)-token draft decode, last row's logits; KV cache at the "
          "context length")


class LlamaCostSampler(RoundRobinSampler):
    """oracle/costs.CostSampler for llama.cpp models (same round/plan/summary protocol)."""

    def __init__(self, target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], gammas: Sequence[int] = GAMMAS,
                 on_measure: MeasureCallback | None = None, cancel=None):
        self.gammas = check_gammas(gammas)
        ctx = list(ctx)
        self.base = len(ctx)
        self.target, self.draft = target, draft
        for model in (target, draft):
            model.clear(0)
            model.decode_timed_only(ctx, 0, all_rows=False)
        nxt = context_ids(ctx, max(self.gammas) + 1)
        # (label, model, tokens, every row's logits)
        self.quantities = [("decode", target, nxt[:1], False), ("draft", draft, nxt[:1], False),
                           ("draft2", draft, nxt[:2], False)]
        self.quantities += [(f"verify:{g}", target, nxt[: g + 1], True) for g in self.gammas]
        self.quantities += [(f"draft_fwd:{g}", draft, nxt[: g + 1], False) for g in self.gammas]
        self._start(on_measure, cancel)

    def _time(self, quantity: tuple) -> tuple[float, float]:
        _, model, tokens, all_rows = quantity
        model.clear(self.base)
        t0, c0 = time.perf_counter(), time.process_time()
        model.decode_timed_only(tokens, self.base, all_rows)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        model.clear(self.base)
        return dt, dc

    def summary(self) -> dict:
        """The stored dict: oracle/costs.CostSampler.summary's keys, plus c_draft_fwd_* and the engine."""
        cost = self.common_summary()
        med = {k: statistics.median(v) for k, v in self.samples.items()}
        cpu = self.samples_cpu
        threads = self.target.threads
        return with_curve({
            **cost,
            "c_draft_fwd_s": {str(g): med[f"draft_fwd:{g}"] for g in self.gammas},
            "c_draft_fwd_cpu_s": {str(g): statistics.median(cpu[f"draft_fwd:{g}"]) for g in self.gammas},
            "threads": threads,
            "engine": "llama.cpp",
            "method": METHOD,
            "decision_clock": "cpu" if threads == 1 else "wall",
        })


def measure_costs(target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], gammas: Sequence[int] = GAMMAS,
                  repeats: int = REPEATS, on_measure: MeasureCallback | None = None, cancel=None) -> dict:
    """One warm-up round and `repeats` timed rounds (see the module docstring)."""
    return run_rounds(LlamaCostSampler(target, draft, ctx, gammas, on_measure=on_measure, cancel=cancel), repeats)
