"""A real greedy speculative decoder (and plain greedy decoding), both raw argmax with KV caches.

Each block: the draft proposes up to gamma tokens greedily with its own KV cache; the target
verifies them in ONE forward of (pending token + drafts); the longest prefix on which the draft
agrees with the target's argmax is kept, plus one target token (the correction, or the bonus
when all drafts were accepted). Output equals the target's greedy continuation (lossless).

No logits processor or warper is ever applied, whatever the model's generation config says.

A drafter without a model (SPEC 2b: prompt lookup, n-gram; engines/drafters) can propose instead of the
draft model (`speculative_generate(..., drafter=...)`): each block drafts what the drafter's rule makes at
the policy's g on the context (drafters.draft_at), so along the target's greedy y the blocks are the
walk's on L_s and m_s; the drafter's own seconds are summed apart (SpecResult.drafter_s).

Draft-length policies (SPEC 5) are objects with `draft_len()` (the gamma for the next block),
`keep(conf)` (whether to propose a token whose draft top-1 probability is conf) and
`update(gamma, k)` (after a block that drafted gamma and had k accepted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from specterm.engines.progress import check_cancel
from specterm.core.decide.replay import heuristic_next
from specterm.engines.torch.models_torch import (
    cache_kwarg,
    cache_len,
    crop_cache,
    forward_logits,
    new_cache,
)

if TYPE_CHECKING:
    import threading

    import torch
    from transformers import DynamicCache, PreTrainedModel

    from specterm.engines.drafters import Drafter


class FixedGamma:
    def __init__(self, gamma: int):
        self.gamma = gamma

    def draft_len(self) -> int:
        return self.gamma

    def keep(self, conf: float) -> bool:
        return True

    def update(self, gamma: int, k: int) -> None:
        pass


class HeuristicSchedule(FixedGamma):
    """Hugging Face `heuristic` (core.replay.heuristic_next): +2 after a fully accepted block, else -1, floor 1."""

    def update(self, gamma: int, k: int) -> None:
        self.gamma = heuristic_next(gamma, k)


class ConfidenceStop(FixedGamma):
    """llama.cpp --draft-p-min: propose a token only while the draft's top-1 probability >= tau."""

    def __init__(self, tau: float, g_max: int):
        super().__init__(g_max)
        self.tau = tau

    def keep(self, conf: float) -> bool:
        return conf >= self.tau


@dataclass
class SpecResult:
    tokens: list[int]                  # the continuation y (EOS included when reached)
    accepts: list[int] = field(default_factory=list)   # accepted drafts per block, capped at the horizon
    drafts: list[int] = field(default_factory=list)    # tokens drafted per block
    starts: list[int] = field(default_factory=list)    # position s where each block starts
    target_calls: int = 0
    draft_calls: int = 0
    drafter_s: float = 0.0             # a drafter's proposals: wall seconds, summed
    drafter_cpu_s: float = 0.0         # and process CPU seconds


def _argmax_conf(logits: torch.Tensor) -> tuple[int, float]:
    import torch

    row = logits.float()
    top = int(torch.argmax(row))
    conf = float(torch.softmax(row, dim=-1)[top])
    return top, conf


def greedy_generate(model: PreTrainedModel, prompt_ids: list[int], max_new_tokens: int, eos: set[int],
                    cancel: threading.Event | None = None,
                    on_token: Callable[[int], None] | None = None) -> list[int]:
    """Plain raw-argmax greedy decoding with a KV cache; stops at EOS (included) or max_new_tokens.

    on_token(k) is called after the k-th token (progress, per-step timing)."""
    import torch

    dev = model.device
    cache = new_cache(model)
    seq = list(prompt_ids)
    out: list[int] = []
    while len(out) < max_new_tokens:
        check_cancel(cancel)
        ids = torch.tensor([seq[cache_len(cache):]], device=dev)
        nxt = int(torch.argmax(forward_logits(model, ids, cache)[0, -1]))
        seq.append(nxt)
        out.append(nxt)
        if on_token is not None:
            on_token(len(out))
        if nxt in eos:
            break
    return out


def batched_greedy_generate(model: PreTrainedModel, prompts: list[list[int]], max_new_tokens: int, eos: set[int],
                            pad_id: int, on_step: Callable[[int], None] | None = None,
                            cancel: threading.Event | None = None) -> list[list[int]]:
    """Raw-argmax greedy continuations of several prompts at once (left padding, KV cache).

    Decoding is memory-bound at small batch, so a batch of B prompts costs little more than one:
    on CPU this is the fastest way to build y. Each row stops at its first EOS (included) or at
    max_new_tokens; batching noise that flipped a near-tie would show up as a gate failure.
    """
    import torch

    dev = model.device
    B = len(prompts)
    L = max(len(p) for p in prompts)
    ids = torch.full((B, L), pad_id, dtype=torch.long, device=dev)
    mask = torch.zeros((B, L), dtype=torch.long, device=dev)
    for i, p in enumerate(prompts):
        ids[i, L - len(p):] = torch.tensor(p, device=dev)
        mask[i, L - len(p):] = 1
    cache = new_cache(model)
    out: list[list[int]] = [[] for _ in range(B)]
    finished = torch.zeros(B, dtype=torch.bool, device=dev)
    eos_t = torch.tensor(sorted(eos) or [-1], device=dev)
    step_ids = ids
    for step in range(max_new_tokens):
        check_cancel(cancel)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, -step_ids.shape[1]:]
        logits = model(input_ids=step_ids, attention_mask=mask, position_ids=pos, use_cache=True,
                       **{cache_kwarg(model): cache}).logits[:, -1]
        nxt = torch.argmax(logits, dim=-1)
        nxt = torch.where(finished, torch.full_like(nxt, pad_id), nxt)
        for i in torch.nonzero(~finished).flatten().tolist():
            out[i].append(int(nxt[i]))
        finished |= torch.isin(nxt, eos_t)
        if on_step is not None:
            on_step(step + 1)
        if bool(finished.all()):
            break
        mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=dev)], dim=1)
        step_ids = nxt[:, None]
    return out


def speculative_generate(
    target: PreTrainedModel,
    draft: PreTrainedModel | None,
    prompt_ids: list[int],
    max_new_tokens: int,
    eos: set[int],
    policy: FixedGamma | None = None,
    on_block: Callable[[SpecResult], None] | None = None,
    cancel: threading.Event | None = None,
    drafter: Drafter | None = None,
) -> SpecResult:
    """Lossless greedy speculative decoding; see the module docstring. `policy` defaults to FixedGamma(5).
    `drafter` (with `draft` None): a drafter without a model proposes each block's tokens."""
    import time

    import torch

    from specterm.engines.drafters import draft_at

    policy = policy or FixedGamma(5)
    dev_t = target.device
    t_cache = new_cache(target)
    d_cache = new_cache(draft) if draft is not None else None
    seq = list(prompt_ids)
    res = SpecResult(tokens=[])
    while len(res.tokens) < max_new_tokens:
        check_cancel(cancel)
        gamma = policy.draft_len()
        proposed: list[int] = []
        if drafter is not None:
            t0, c0 = time.perf_counter(), time.process_time()
            proposed = draft_at(drafter, np.asarray(seq, dtype=np.int64), gamma, len(prompt_ids)).tolist()
            res.drafter_s += time.perf_counter() - t0
            res.drafter_cpu_s += time.process_time() - c0
        else:
            assert draft is not None and d_cache is not None
            for _ in range(gamma):
                ctx = seq + proposed
                ids = torch.tensor([ctx[cache_len(d_cache):]], device=draft.device)
                tok, conf = _argmax_conf(forward_logits(draft, ids, d_cache)[0, -1])
                res.draft_calls += 1
                if not policy.keep(conf):
                    break
                proposed.append(tok)
        ids = torch.tensor([(seq + proposed)[cache_len(t_cache):]], device=dev_t)
        logits = forward_logits(target, ids, t_cache)[0, -(len(proposed) + 1):]
        preds = torch.argmax(logits, dim=-1).tolist()
        res.target_calls += 1
        k = 0
        while k < len(proposed) and proposed[k] == preds[k]:
            k += 1
        new = proposed[:k] + [preds[k]]
        res.starts.append(len(res.tokens))
        res.drafts.append(len(proposed))
        for tok in new:
            if len(res.tokens) >= max_new_tokens:
                break
            res.tokens.append(tok)
            seq.append(tok)
            if tok in eos:
                break
        policy.update(len(proposed), k)
        done = res.tokens[-1] in eos
        # Caches keep only positions whose token is now in seq (everything but the newest token).
        crop_cache(t_cache, len(seq) - 1)
        if d_cache is not None:
            crop_cache(d_cache, min(cache_len(d_cache), len(seq) - 1))
        # Capped at the horizon (EOS or max_new_tokens) as the walk counts it; only this block can be cut,
        # and later blocks only extend the output, so the value is final.
        res.accepts.append(min(k, len(res.tokens) - res.starts[-1]))
        if on_block is not None:
            on_block(res)
        if done:
            break
    return res


def spec_bits(res: SpecResult, n: int) -> str:
    """The decoder's partial view of a_t: '1' accepted, '0' rejected, '?' unknown (bonus positions)."""
    out = np.full(n, ord("?"), dtype=np.uint8)
    for s, k, d in zip(res.starts, res.accepts, res.drafts):
        out[s : min(s + k, n)] = ord("1")
        if k < d and s + k < n:
            out[s + k] = ord("0")
    return out.tobytes().decode("ascii")


@dataclass
class BatchSpecResult:
    tokens: list[list[int]]            # each row's continuation (the first n tokens)
    blocks: int = 0                    # target verify calls (one per block, all rows together)
    target_calls: int = 0
    draft_calls: int = 0


def batched_speculative_generate(target: PreTrainedModel, draft: PreTrainedModel, prompts: list[list[int]], n: int,
                                 gamma: int, pad_id: int,
                                 on_block: Callable[[BatchSpecResult], None] | None = None,
                                 cancel: threading.Event | None = None) -> BatchSpecResult:
    """Lossless greedy speculative decoding of B prompts together (left padding), rows in lockstep.

    Each block drafts g tokens per row (B x 1 draft forwards), verifies them in one B x (g + 1) target
    forward, and commits m = min over rows of (k_i + 1) tokens to every row, where k_i is row i's
    accepted drafts: the target's argmax at positions 1..m of every row (for row i the first k_i of
    them equal its drafts). So every committed token is the target's greedy token (lossless) and the
    rows' caches stay aligned (one crop for the batch); a row accepting more than the slowest row
    gives up the rest (blockwalk.sync_walk counts these blocks exactly). Runs n tokens per row (no
    EOS stop: the timed prompts' stored y have n tokens).
    """
    import torch

    B = len(prompts)
    L = max(len(p) for p in prompts)
    seq = torch.full((B, L), pad_id, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        seq[i, L - len(p):] = torch.tensor(p)
        mask[i, L - len(p):] = 1
    t_cache, d_cache = new_cache(target), new_cache(draft)
    res = BatchSpecResult(tokens=[[] for _ in range(B)])

    def feed(model: PreTrainedModel, cache: DynamicCache, ids_full: torch.Tensor, msk_full: torch.Tensor) -> torch.Tensor:
        start = cache_len(cache)
        pos = (msk_full.cumsum(-1) - 1).clamp(min=0)[:, start:]
        logits: torch.Tensor = model(input_ids=ids_full[:, start:].to(model.device), attention_mask=msk_full.to(model.device),
                                     position_ids=pos.to(model.device), use_cache=True, **{cache_kwarg(model): cache}).logits
        return logits

    while len(res.tokens[0]) < n:
        check_cancel(cancel)
        g = min(gamma, n - len(res.tokens[0]))
        ctx, msk = seq, mask
        for _ in range(g):
            logits = feed(draft, d_cache, ctx, msk)[:, -1]
            res.draft_calls += 1
            nxt = torch.argmax(logits, dim=-1).to("cpu")[:, None]
            ctx = torch.cat([ctx, nxt], dim=1)
            msk = torch.cat([msk, torch.ones((B, 1), dtype=msk.dtype)], dim=1)
        logits = feed(target, t_cache, ctx, msk)[:, -(g + 1):]
        res.target_calls += 1
        res.blocks += 1
        preds = torch.argmax(logits, dim=-1).to("cpu")          # (B, g + 1)
        proposed = ctx[:, seq.shape[1]:]                         # (B, g)
        match = (proposed == preds[:, :g]).to(torch.int64)
        k = match.cumprod(dim=1).sum(dim=1)                      # accepted drafts per row
        m = min(int(k.min()) + 1, n - len(res.tokens[0]))
        new = preds[:, :m]
        seq = torch.cat([seq, new], dim=1)
        mask = torch.cat([mask, torch.ones((B, m), dtype=mask.dtype)], dim=1)
        for i in range(B):
            res.tokens[i].extend(new[i].tolist())
        keep = seq.shape[1] - 1
        crop_cache(t_cache, keep)
        crop_cache(d_cache, min(cache_len(d_cache), keep))
        if on_block is not None:
            on_block(res)
    return res


def batched_greedy_steps(model: PreTrainedModel, prompts: list[list[int]], n: int, pad_id: int,
                         cancel: threading.Event | None = None) -> list[list[int]]:
    """`batched_greedy_generate` for exactly n tokens per row (no EOS stop), the batched baseline of a
    batched confirmation."""
    return batched_greedy_generate(model, prompts, n, set(), pad_id, cancel=cancel)
