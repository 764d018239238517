"""Cost ratio on this hardware (SPEC 1.7): r(g) = c_draft / c_verify(g).

c_draft: one draft decode step (one token, KV cache holding ~prompt + 128 tokens).
c_verify(g): one target forward of g + 1 tokens on the same cache. Medians of repeats.
`r_measured`, the single r a run reports, is r(4) (the middle of the usual draft lengths); the
whole curve is stored beside it.
"""

from __future__ import annotations

import statistics
import time

from specterm.oracle.models import cache_len, crop_cache, forward_logits, new_cache
from specterm.core.progress import check_cancel

GAMMAS = (1, 2, 3, 4, 5, 6, 8, 12, 16)
R_GAMMA = 4


def _sync(model) -> None:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)


def _median_time(model, cache, base: int, tokens: list[int], repeats: int, warmup: int = 1) -> float:
    import torch

    ids = torch.tensor([tokens], device=model.device)
    times = []
    for i in range(warmup + repeats):
        crop_cache(cache, base)
        _sync(model)
        t0 = time.perf_counter()
        forward_logits(model, ids, cache)
        _sync(model)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    crop_cache(cache, base)
    return statistics.median(times)


def measure_cost_ratio(target, draft, prompt_ids: list[int], extra: int = 128, repeats: int = 5,
                       gammas=GAMMAS, cancel=None) -> dict:
    """{'r_measured', 'r_gamma', 'r_by_gamma', 'c_draft_s', 'c_verify_s', 'context', 'repeats'}."""
    import torch

    ctx = (list(prompt_ids) * (1 + (len(prompt_ids) + extra) // max(1, len(prompt_ids))))[: len(prompt_ids) + extra]
    caches = {}
    for name, model in (("target", target), ("draft", draft)):
        cache = new_cache(model)
        forward_logits(model, torch.tensor([ctx], device=model.device), cache)
        caches[name] = cache
    base = len(ctx)
    c_draft = _median_time(draft, caches["draft"], base, ctx[:1], repeats)
    c_verify = {}
    for g in gammas:
        check_cancel(cancel)
        c_verify[g] = _median_time(target, caches["target"], base, (ctx * (g + 2))[: g + 1], repeats)
    r_by = {str(g): c_draft / c for g, c in c_verify.items()}
    return {
        "r_measured": r_by[str(R_GAMMA)],
        "r_gamma": R_GAMMA,
        "r_by_gamma": r_by,
        "c_draft_s": c_draft,
        "c_verify_s": {str(g): c for g, c in c_verify.items()},
        "context": base,
        "repeats": repeats,
        "method": "median wall time; draft: 1-token decode step; verify: (g+1)-token target forward; KV cache at the context length",
    }
