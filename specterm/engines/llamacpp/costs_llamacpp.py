"""Measured costs in llama.cpp (SPEC 1.7 and SPEC 6), stored exactly as engines/torch/costs_torch.py stores the
torch costs, so the core's decision on this hardware reads a llama.cpp run unchanged.

Quantities (each a llama_decode on a KV cache cropped back to `context` before and after):

    c_decode      a 1-token target decode (logits of its row): what plain greedy pays per token
    c_verify(g)   a (g+1)-token target decode with logits for every row (a verification of g drafts)
    c_draft       a 1-token draft decode
    c_draft2      a 2-token draft decode (last row's logits)
    c_draft_fwd(g) a (g+1)-token draft decode, last row's logits only: what llama.cpp's draft-simple
                  speculator pays once per block on top of its g 1-token drafts, because it feeds the
                  target's whole verification batch to the draft (common/speculative.cpp, process())

Same conventions as engines/torch/costs_torch.py: one untimed warm-up round, then rounds that time every
quantity once in an order rotated by one each round; medians, IQRs and all samples, in wall time and
process CPU time; decision_clock "cpu" with one llama.cpp thread on a CPU (the thread is the calling
thread, so process CPU time is the forward's own time), else "wall"; the robust curve of
specterm.core.decide.hardware on that clock. c_draft_fwd is stored beside (c_draft_fwd_s, c_draft_fwd_cpu_s)
and used only by the llama.cpp engine prediction of `confirm --engine llama.cpp`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from specterm.engines.timing import COST_GAMMAS as GAMMAS
from specterm.engines.timing import (
    REPEATS,
    CostDict,
    MeasureCallback,
    Quantity,
    RoundRobinSampler,
    check_gammas,
    context_ids,
    run_rounds,
    with_curve,
)
from specterm.engines.llamacpp.models_llamacpp import GGUFModel

if TYPE_CHECKING:
    import threading

METHOD = ("median of interleaved repeats (round-robin, order rotated each round, one warm-up round) of llama.cpp "
          "llama_decode calls: decode: 1-token target decode; draft: 1-token draft decode; verify: (g+1)-token target "
          "decode with every row's logits; draft_fwd: (g+1)-token draft decode, last row's logits; KV cache at the "
          "context length")


class LlamaCostSampler(RoundRobinSampler):
    """engines/torch/costs_torch.CostSampler for llama.cpp models (same round/plan/summary protocol)."""

    def __init__(self, target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], gammas: Sequence[int] = GAMMAS,
                 on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None):
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

    def _time(self, quantity: Quantity) -> tuple[float, float]:
        _, model, tokens, all_rows = quantity
        model.clear(self.base)
        t0, c0 = time.perf_counter(), time.process_time()
        model.decode_timed_only(tokens, self.base, all_rows)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        model.clear(self.base)
        return dt, dc

    def summary(self) -> CostDict:
        """The stored dict: engines/torch/costs_torch.CostSampler.summary's keys, plus c_draft_fwd_* and the engine."""
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
                  repeats: int = REPEATS, on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None) -> CostDict:
    """One warm-up round and `repeats` timed rounds (see the module docstring)."""
    return run_rounds(LlamaCostSampler(target, draft, ctx, gammas, on_measure=on_measure, cancel=cancel), repeats)


# ------------------------------------------------------------------------------ batch costs ---

BATCH_METHOD = ("llama.cpp costs by batch: for every B in {2, 4, 8} a context of the model with n_seq_max = B "
                "(one KV stream per sequence, kv_unified off), each sequence prefilled with the context; timed "
                "llama_decode calls of B rows: target m tokens per row at m in {1, 3, 9} (+ held-back points), "
                "every row's logits; draft 1 token per row; draft_fwd m in {3, 9} tokens per row, last row's "
                "logits per sequence (draft-simple's per-block forward). At B = 1 the session's cost rounds "
                "(decode, verify(g), draft, draft_fwd(g)) are reused. Warm-up: the 1-token forwards of each B; "
                "then interleaved rounds, order rotated; KV cropped back to the context after each forward. The fit "
                "is core (hardware.batch): c_verify(g, B) and c_draft_fwd(g, B) interpolated in tokens per forward")


def reused_b1_llamacpp(cost: CostDict) -> CostDict:
    """engines/timing.reused_b1 of a llama.cpp cost-rounds summary, plus its draft forwards:
    "draft_fwd:1:{g+1}" = draft_fwd:g, for both clocks."""
    from specterm.engines.timing import reused_b1

    out = reused_b1(cost)
    for clock in ("samples_s", "samples_cpu_s"):
        src = cost.get(clock) or {}
        out[clock].update({f"draft_fwd:1:{int(k.split(':')[1]) + 1}": list(v) for k, v in src.items()
                           if k.startswith("draft_fwd:")})
    return out


class SeqContext:
    """One model's llama.cpp context with n_seq_max = B (per-sequence KV streams), every sequence holding
    `ctx`; `time_rows(tokens, all_rows)` times one llama_decode of B rows of `tokens` at the context's end."""

    def __init__(self, model: GGUFModel, B: int, ctx: Sequence[int], m_max: int):
        import llama_cpp
        from llama_cpp import _internals

        self.B, self.base = B, len(ctx)
        p = llama_cpp.llama_context_default_params()
        per_seq = -(-(self.base + m_max + 1) // 256) * 256  # llama.cpp rounds n_ctx / n_seq_max to 256s
        p.n_ctx = B * per_seq
        p.n_batch = p.n_ubatch = max(self.base, B * m_max)
        p.n_seq_max = B
        p.n_threads = p.n_threads_batch = model.threads
        p.kv_unified = False
        self.ctx = _internals.LlamaContext(model=model.llm._model, params=p, verbose=False)
        self.batch = _internals.LlamaBatch(n_tokens=int(p.n_batch), embd=0, n_seq_max=B, verbose=False)
        self._rm = llama_cpp.llama_memory_seq_rm
        for seq in range(B):
            self._decode([(tok, i, seq, i == self.base - 1) for i, tok in enumerate(ctx)])

    def _decode(self, rows: list[tuple[int, int, int, bool]]) -> None:
        b = self.batch.batch
        b.n_tokens = len(rows)
        for i, (tok, pos, seq, out) in enumerate(rows):
            b.token[i] = int(tok)
            b.pos[i] = pos
            b.seq_id[i][0] = seq
            b.n_seq_id[i] = 1
            b.logits[i] = out
        self.ctx.decode(self.batch)

    def time_rows(self, tokens: Sequence[int], all_rows: bool) -> tuple[float, float]:
        """(wall s, CPU s) of one decode of B rows of `tokens` (every row's logits, or each sequence's last)."""
        m = len(tokens)
        rows = [(tok, self.base + i, seq, all_rows or i == m - 1) for seq in range(self.B) for i, tok in enumerate(tokens)]
        self._rm(self.ctx.memory, -1, self.base, -1)
        t0, c0 = time.perf_counter(), time.process_time()
        self._decode(rows)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        self._rm(self.ctx.memory, -1, self.base, -1)
        return dt, dc

    def close(self) -> None:
        self.batch.close()  # type: ignore[no-untyped-call]  # llama_cpp's _internals leave close() unannotated
        self.ctx.close()  # type: ignore[no-untyped-call]  # (same)


def measure_batch_costs(target: GGUFModel, draft: GGUFModel, ctx: Sequence[int], reuse: CostDict | None = None,
                        on_measure: MeasureCallback | None = None, cancel: threading.Event | None = None) -> CostDict:
    """c_decode(B), c_verify(g, B), c_draft(B) and the engine term's draft forwards by batch in llama.cpp
    (BATCH_METHOD), stored as engines/torch/costs_torch.measure_batch_costs stores torch's ("target:B:m", "draft:B",
    plus "draft_fwd:B:m"); reuse: `reused_b1_llamacpp(cost)` of this session's cost rounds (B = 1)."""
    from specterm.engines.timing import BATCH_FIT_M, BATCH_HELD, BATCH_REPEATS, BATCHES, batch_grid_rounds

    t_start = time.perf_counter()
    ctx = list(ctx)
    fwd_m = [m for m in BATCH_FIT_M if m >= 2]
    m_max = max([*BATCH_FIT_M, *(m for _, m in BATCH_HELD)])
    nxt = context_ids(ctx, m_max)
    timed_b = sorted(set(BATCHES) - ({1} if reuse else set()))
    contexts = {(name, B): SeqContext(model, B, ctx, m_max) for B in timed_b
                for name, model in (("target", target), ("draft", draft))}
    try:
        quantities: list[tuple[str, SeqContext, list[int], bool]] = []
        for B in timed_b:
            quantities.append((f"draft:{B}", contexts[("draft", B)], nxt[:1], True))
            quantities += [(f"target:{B}:{m}", contexts[("target", B)], nxt[:m], True) for m in BATCH_FIT_M]
            quantities += [(f"target:{B}:{m}", contexts[("target", B)], nxt[:m], True) for b, m in BATCH_HELD if b == B]
            quantities += [(f"draft_fwd:{B}:{m}", contexts[("draft", B)], nxt[:m], False) for m in fwd_m]
        samples, samples_cpu = batch_grid_rounds(quantities, lambda q: q[1].time_rows(q[2], q[3]), BATCH_REPEATS,
                                                 reuse, on_measure, cancel)
    finally:
        for sc in contexts.values():
            sc.close()
    threads = target.threads
    return {
        "batches": sorted(BATCHES),
        "fit_m": sorted(BATCH_FIT_M),
        "reused_b1": bool(reuse),
        "held_back": [[int(B), int(m)] for B, m in BATCH_HELD],
        "context": len(ctx),
        "repeats": BATCH_REPEATS,
        "threads": threads,
        "engine": "llama.cpp",
        "samples_s": samples,
        "samples_cpu_s": samples_cpu,
        "decision_clock": "cpu" if threads == 1 else "wall",
        "wall_s": time.perf_counter() - t_start,
        "method": BATCH_METHOD,
    }
