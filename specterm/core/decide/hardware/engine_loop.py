"""Forwards priced inside the engine's own speculative loop (SPEC 6 "The whole block's cost", llama.cpp).
Pure.

Why: llama.cpp's speculative decoder (`llama-speculative-simple`, draft-simple) was priced from forwards
timed through the binding (llama-cpp-python), one at a time: c_verify(g) + g c_draft + c_draft_fwd(g), the
last the (g+1)-token draft forward the speculator runs on every verified batch (common_speculative_process).
The binary's own perf summary splits a block differently (Qwen2.5-Coder Q4_K_M 1.5B target, 0.5B draft,
AMD EPYC, 1 thread, code-01, -n 60):

    g   target context's seconds per block   speculator's seconds per drafted token   binding: c_verify(g)
    1          0.154                                 0.034                                    0.117
    4          0.30                                  0.033                                    0.230
    8          0.57                                  0.033                                    0.600

- the speculator's own seconds (its `dur(b,g,a)`) are its g one-token steps with their sampling, about
  33 ms each against the binding's c_draft of 37-40 ms;
- the draft's (g+1)-token forward is in the target context's seconds, not the speculator's: without a
  draft model (the n-gram decoder, same binary) the target's 3- and 5-token verifications average 0.178 s a
  block where the binding's give 0.196 s, and the prompt's "encoded" seconds grow from 1.30 s to 1.86-1.94 s
  once the draft is fed the prompt too;
- plain greedy in the same binary (a drafter that never drafts) takes 55-62 ms a token, the binding's
  c_decode 53-61 ms.
The binding's three terms did not add up to the binary's block: the predictions missed on one side (21 of 30
checks inside their 95% PI, realized / predicted median 1.13).

So a llama.cpp profile prices the block with the engine's own forwards, read from the same real speculative
generations that give o(g), each over a stored y whole (samples as overhead.py's, plus "target_s": the target context's
seconds in the loop without the prompt, "draft_s": the speculator's seconds, "loop_drafted": tokens
drafted). The terms split the block as the binary's perf summary does; they add up to its block, which is
what the decision prices:

    c_verify(g) = median over the generations at g of  target_s / blocks     (the verification, and the
                                                                             draft's (g+1)-token forward)
    c_draft     = median over all generations of         draft_s / drafted   (seconds per drafted token)
    block(g)    = c_verify(g) + g c_draft + o(g)          (no separate c_draft_fwd term: it is in c_verify(g);
                                                           no refeed extra: the loop's steps are all timed)

c_decode is plain greedy's seconds per token in its own loop, the binding's (`specterm confirm --engine
llama.cpp` times greedy there, and the realized speedup divides by it): median over greedy generations of
seconds / tokens. The one-token forward timed alone, in the rounds among every other quantity, ran slower than
those generations did on a quiet machine (one confirmation session: median 0.066 s against 0.058 s a token),
which alone put the predictions high. The binding's forwards are kept beside, under BINDING_KEY. A confirm session prices
its own blocks and greedy the same way from its timed generations, at the g it timed (`session_samples`,
`session_greedy`). Sessions priced one way and sessions priced the other are not compared for drift
(`pricing`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from specterm.core.decide.hardware.curve import cost_curve, curve_summary, forwards_where
from specterm.core.errors import SpectermError

KEY = "forwards"            # cost[KEY] = {"where", "method", "gammas"}: how the forwards were priced
BINDING_KEY = "binding_forwards"  # the binding's forwards the loop's replaced, kept for the record
WHERE = "llama-speculative-simple's own loop"
METHOD = ("c_verify(g) = median over generations at g of the target context's seconds in the loop (perf summary: "
          "prompt eval + eval, less the prompt; the draft's per-block (g+1)-token forward is counted there) / "
          "blocks; c_draft = median over all generations of the speculator's seconds (dur(b,g,a)) / drafted "
          "tokens; block = c_verify(g) + g c_draft + o(g) (no separate draft-forward term, no refeed extra); "
          "c_decode = median over plain greedy generations in the binding's loop (as confirm times greedy) of "
          "seconds / tokens")
_REPLACED = ("c_verify_s", "c_verify_cpu_s", "c_verify_iqr_s", "c_draft_s", "c_draft_cpu_s", "c_draft_iqr_s",
             "c_draft2_s", "c_draft2_cpu_s", "c_draft2_iqr_s", "c_draft_fwd_s", "c_draft_fwd_cpu_s",
             "c_draft_fwd_robust_s", "c_verify_robust_s", "c_verify_line", "robust_method", "r_measured", "r_gamma",
             "r_by_gamma")


def pricing(cost: dict[str, Any] | None) -> str:
    """How a cost dict's forwards were priced: WHERE for the engine's loop, "separate forwards" otherwise."""
    return forwards_where(cost) or "separate forwards"


def engine_label(name: str, cost: dict[str, Any] | None) -> str:
    """An engine's name as the calibration table keys it: checks predicted from forwards priced in the engine's
    loop are a cost model of their own ("llama.cpp (in-loop costs)"), apart from the separate forwards'."""
    return f"{name} (in-loop costs)" if pricing(cost) == WHERE else name


def _iqr(x: Sequence[float]) -> float:
    if len(x) < 2:
        return 0.0
    q = statistics.quantiles(x, n=4, method="inclusive")
    return max(0.0, float(q[2] - q[0]))


def loop_samples(samples: Iterable[dict[str, Any]]) -> tuple[dict[int, list[float]], list[float]]:
    """({g: [target_s / blocks, ...]}, [draft_s / drafted, ...]) of the generations that carry the loop's
    seconds (module docstring); generations without them, or with no block, are skipped."""
    verify: dict[int, list[float]] = {}
    draft: list[float] = []
    for s in samples:
        t, d, blocks, drafted = s.get("target_s"), s.get("draft_s"), s.get("blocks"), s.get("loop_drafted")
        if not isinstance(t, (int, float)) or not isinstance(blocks, int) or blocks < 1 or t <= 0:
            continue
        verify.setdefault(int(s["gamma"]), []).append(float(t) / blocks)
        if isinstance(d, (int, float)) and isinstance(drafted, int) and drafted > 0 and d > 0:
            draft.append(float(d) / drafted)
    return verify, draft


_DECODE = ("c_decode_s", "c_decode_cpu_s", "c_decode_iqr_s", "c_decode_robust_s")


def greedy_per_token(greedy: Iterable[dict[str, Any]]) -> list[float]:
    """Seconds per token of each timed greedy generation ({"tokens", "seconds"}; those of no token skipped)."""
    return [float(g["seconds"]) / int(g["tokens"]) for g in greedy
            if isinstance(g.get("tokens"), int) and g["tokens"] > 0 and isinstance(g.get("seconds"), (int, float))
            and g["seconds"] > 0]


def priced_in_loop(cost: dict[str, Any], samples: Iterable[dict[str, Any]],
                   gammas: Sequence[int] | None = None, greedy: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """`cost` with its forwards priced in the engine's loop (module docstring): c_verify(g) at every g of
    `gammas` (default: every g of cost's c_verify_s; a session passes the g it timed, and the result has
    those alone), c_draft per drafted token, their samples on both clocks (the binary's clock is wall time;
    on one thread, a quiet machine's CPU time); c_draft_fwd, c_draft2 and the binding's robust fields move
    under BINDING_KEY. Raises SpectermError when a g of `gammas` has no generation or no generation drafted."""
    verify, draft = loop_samples(samples)
    decode = greedy_per_token(greedy)
    want = sorted(int(g) for g in (gammas if gammas is not None else (cost.get("c_verify_s") or {}).keys()))
    missing = [g for g in want if not verify.get(g)]
    if not want or missing or not draft:
        raise SpectermError("the engine's loop was not timed at every draft length "
                            f"(missing g = {', '.join(map(str, missing)) or 'all'}"
                            f"{'' if draft else '; no generation drafted'}); its forwards stay the binding's.")
    moved = _REPLACED + (_DECODE if decode else ())
    out = {k: v for k, v in cost.items() if k not in moved}
    out[BINDING_KEY] = {k: cost[k] for k in moved if k in cost}
    if decode:  # plain greedy per token in its loop: what confirm's realized speedup divides by
        c_dec = float(statistics.median(decode))
        out.update(c_decode_s=c_dec, c_decode_cpu_s=c_dec, c_decode_iqr_s=_iqr(decode))
    c_ver = {str(g): float(statistics.median(verify[g])) for g in want}
    c_dra = float(statistics.median(draft))
    out.update(c_verify_s=c_ver, c_verify_cpu_s=dict(c_ver), c_verify_iqr_s={str(g): _iqr(verify[g]) for g in want},
               c_draft_s=c_dra, c_draft_cpu_s=c_dra, c_draft_iqr_s=_iqr(draft))
    r_by = {g: c_dra / c for g, c in c_ver.items()}  # r = c_draft / c_verify(g), as the binding's record has it
    r_gamma = cost.get("r_gamma") if str(cost.get("r_gamma")) in r_by else want[0]
    out.update(r_by_gamma=r_by, r_gamma=r_gamma, r_measured=r_by[str(r_gamma)])
    for clock in ("samples_s", "samples_cpu_s"):
        old: dict[str, Any] = cost.get(clock) or {}
        kept = {k: v for k, v in old.items() if not k.startswith(("verify:", "draft"))}
        out[BINDING_KEY][clock] = {k: v for k, v in old.items() if k not in kept or (decode and k == "decode")}
        out[clock] = {**kept, "draft": list(draft), **{f"verify:{g}": list(verify[g]) for g in want},
                      **({"decode": list(decode)} if decode else {})}
    out[KEY] = {"where": WHERE, "method": METHOD, "gammas": want,
                "decode": "greedy loop" if decode else "one-token forwards (no greedy generation timed)"}
    curve = cost_curve(out)
    assert curve is not None  # c_decode is the binding's, kept
    out.update(curve_summary(curve))
    return out


def session_greedy(prompt_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The greedy generations of a `specterm confirm` record's prompts ({"tokens", "seconds"}), for c_decode."""
    return [{"tokens": row.get("greedy_tokens"), "seconds": row.get("greedy_s")} for row in prompt_rows
            if row.get("greedy_s") is not None]


def session_samples(prompt_rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The loop samples of a `specterm confirm --engine llama.cpp` record's prompts: one per timed speculative
    generation that stored the loop's seconds ({"gamma", "blocks", "target_s", "draft_s", "loop_drafted"})."""
    out = []
    for row in prompt_rows:
        for g, sp in (row.get("spec") or {}).items():
            if isinstance(sp, dict) and sp.get("target_loop_s") is not None:
                out.append({"gamma": int(g), "blocks": sp.get("target_calls"), "target_s": sp["target_loop_s"],
                            "draft_s": sp.get("draft_loop_s"), "loop_drafted": sp.get("draft_calls")})
    return out
