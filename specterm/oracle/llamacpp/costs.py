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

import numpy as np

from specterm.core.hardware import cost_curve, curve_summary
from specterm.core.progress import check_cancel
from specterm.oracle.costs import COST_GAMMAS as GAMMAS
from specterm.oracle.costs import R_GAMMA, REPEATS, MeasureCallback, context_ids
from specterm.oracle.llamacpp.models import GGUFModel

METHOD = ("median of interleaved repeats (round-robin, order rotated each round, one warm-up round) of llama.cpp "
          "llama_decode calls: decode: 1-token target decode; draft: 1-token draft decode; verify: (g+1)-token target "
          "decode with every row's logits; draft_fwd: (g+1)-token draft decode, last row's logits; KV cache at the "
          "context length")


def _iqr(values: Sequence[float]) -> float:
    q25, q75 = np.percentile(np.asarray(values, dtype=np.float64), [25, 75])
    return float(q75 - q25)


class LlamaCostSampler:
    """oracle/costs.CostSampler for llama.cpp models (same round/plan/summary protocol)."""

    def __init__(self, target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], gammas: Sequence[int] = GAMMAS,
                 on_measure: MeasureCallback | None = None, cancel=None):
        self.gammas = sorted({int(g) for g in gammas})
        if not self.gammas or self.gammas[0] < 1:
            raise ValueError("gammas must be draft lengths >= 1")
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
        self.samples: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.samples_cpu: dict[str, list[float]] = {q[0]: [] for q in self.quantities}
        self.rounds = 0
        self.on_measure = on_measure
        self.cancel = cancel
        self.planned = 0
        self.done = 0

    def plan(self, rounds: int) -> None:
        self.planned += rounds * len(self.quantities)

    def _time(self, model: GGUFModel, tokens: list[int], all_rows: bool) -> tuple[float, float]:
        model.clear(self.base)
        t0, c0 = time.perf_counter(), time.process_time()
        model.decode_timed_only(tokens, self.base, all_rows)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        model.clear(self.base)
        return dt, dc

    def round(self) -> None:
        warm = self.rounds == 0
        shift = self.rounds % len(self.quantities)
        if self.done + len(self.quantities) > self.planned:
            self.plan(1)
        for label, model, tokens, all_rows in self.quantities[shift:] + self.quantities[:shift]:
            check_cancel(self.cancel)
            dt, dc = self._time(model, tokens, all_rows)
            self.done += 1
            if not warm:
                self.samples[label].append(dt)
                self.samples_cpu[label].append(dc)
            if self.on_measure is not None:
                self.on_measure(self.done, self.planned, f"{label} (warm-up)" if warm else label, dt)
        self.rounds += 1

    def summary(self) -> dict:
        """The stored dict: oracle/costs.CostSampler.summary's keys, plus c_draft_fwd_* and the engine."""
        if self.rounds < 2:
            raise ValueError("no timed round yet (the first round is the warm-up)")
        s, sc = self.samples, self.samples_cpu
        med = {k: statistics.median(v) for k, v in s.items()}
        gammas = self.gammas
        c_verify = {str(g): med[f"verify:{g}"] for g in gammas}
        r_by = {g: med["draft"] / c for g, c in c_verify.items()}
        r_gamma = R_GAMMA if R_GAMMA in gammas else min(gammas, key=lambda g: (abs(g - R_GAMMA), g))
        threads = self.target.threads
        cost = {
            "r_measured": r_by[str(r_gamma)],
            "r_gamma": r_gamma,
            "r_by_gamma": r_by,
            "c_decode_s": med["decode"],
            "c_draft_s": med["draft"],
            "c_verify_s": c_verify,
            "c_decode_iqr_s": _iqr(s["decode"]),
            "c_draft_iqr_s": _iqr(s["draft"]),
            "c_draft2_s": med["draft2"],
            "c_draft2_iqr_s": _iqr(s["draft2"]),
            "c_verify_iqr_s": {str(g): _iqr(s[f"verify:{g}"]) for g in gammas},
            "c_draft_fwd_s": {str(g): med[f"draft_fwd:{g}"] for g in gammas},
            "samples_s": {k: list(v) for k, v in s.items()},
            "c_decode_cpu_s": statistics.median(sc["decode"]),
            "c_draft_cpu_s": statistics.median(sc["draft"]),
            "c_draft2_cpu_s": statistics.median(sc["draft2"]),
            "c_verify_cpu_s": {str(g): statistics.median(sc[f"verify:{g}"]) for g in gammas},
            "c_draft_fwd_cpu_s": {str(g): statistics.median(sc[f"draft_fwd:{g}"]) for g in gammas},
            "samples_cpu_s": {k: list(v) for k, v in sc.items()},
            "context": self.base,
            "repeats": self.rounds - 1,
            "threads": threads,
            "engine": "llama.cpp",
            "method": METHOD,
            "decision_clock": "cpu" if threads == 1 else "wall",
        }
        curve = cost_curve(cost)
        assert curve is not None  # c_decode_s was just measured
        cost.update(curve_summary(curve))
        return cost


def measure_costs(target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], gammas: Sequence[int] = GAMMAS,
                  repeats: int = REPEATS, on_measure: MeasureCallback | None = None, cancel=None) -> dict:
    """One warm-up round and `repeats` timed rounds (see the module docstring)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    sampler = LlamaCostSampler(target, draft, ctx, gammas, on_measure=on_measure, cancel=cancel)
    sampler.plan(repeats + 1)
    for _ in range(repeats + 1):
        sampler.round()
    return sampler.summary()
