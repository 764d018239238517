"""y generation per corpus: plain raw-argmax greedy decoding of the target (the baseline) against lossless
greedy speculative decoding with the draft at a fixed gamma (default 5), on the same prompts, interleaved
prompt by prompt. Speedup = greedy time / speculative time (target: >= 1.8x on code with the Qwen
0.5B/1.5B pair). Also checks that both emit the same tokens.

    python benchmarks/bench_generation.py [--target T --draft D | --smol] [--per-corpus 2] [--max-new-tokens 64]
        [--gamma 5] [--corpora prose,code,json,math,multilingual] [--threads N] [--no-append]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import default_pair, md_table, record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("--smol", action="store_true", help="SmolLM2-135M with its first 25 layers as the draft")
    ap.add_argument("--per-corpus", type=int, default=2, help="prompts per corpus (the first ones of its file)")
    ap.add_argument("--corpora", default="prose,code,json,math,multilingual")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--gamma", type=int, default=5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0: torch's default); on a busy 2-core machine 1 thread avoids spin-wait stalls")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    t_def, d_def = default_pair(args.smol)
    args.target, args.draft = args.target or t_def, args.draft or d_def

    import torch
    import transformers

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from specterm.engines.corpora import load_builtin
    from specterm.engines.base import OracleConfig
    from specterm.engines.torch.oracle_torch import encode_prompt, load_pair
    from specterm.engines.torch.specdec import FixedGamma, greedy_generate, speculative_generate

    transformers.logging.set_verbosity_error()
    names = [c.strip() for c in args.corpora.split(",")]
    prompts = load_builtin(names, limit=args.per_corpus)
    t0 = time.perf_counter()
    pair = load_pair(OracleConfig(target=args.target, draft=args.draft, prompts=[], out=Path("."), device=args.device))
    t_load = time.perf_counter() - t0
    print(f"loaded {args.target} + {args.draft} in {t_load:.1f} s", flush=True)
    ids = {p.id: encode_prompt(pair.tokenizer, p.text) for p in prompts}
    first = ids[prompts[0].id]
    greedy_generate(pair.target, first, 4, pair.eos)  # warm-up, not timed
    speculative_generate(pair.target, pair.draft, first, 4, pair.eos, FixedGamma(args.gamma))

    stats = {c: dict(greedy=0.0, spec=0.0, tokens=0, calls=0, accepted=0, drafted=0, equal=0, prompts=0) for c in names}
    mismatches = []
    for p in prompts:
        t0 = time.perf_counter()
        y = greedy_generate(pair.target, ids[p.id], args.max_new_tokens, pair.eos)
        t_g = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = speculative_generate(pair.target, pair.draft, ids[p.id], args.max_new_tokens, pair.eos, FixedGamma(args.gamma))
        t_s = time.perf_counter() - t0
        s = stats[p.corpus]
        s["greedy"] += t_g
        s["spec"] += t_s
        s["tokens"] += len(y)
        s["calls"] += res.target_calls
        s["accepted"] += sum(res.accepts)
        s["drafted"] += sum(res.drafts)
        s["equal"] += res.tokens == y
        s["prompts"] += 1
        if res.tokens != y:
            i = next((k for k, (a, b) in enumerate(zip(res.tokens, y)) if a != b), min(len(y), len(res.tokens)))
            mismatches.append(f"{p.id}: speculative output differs from greedy at token {i}")
        print(f"{p.id}: greedy {t_g:.2f} s, spec {t_s:.2f} s, {len(y)} tokens, {res.target_calls} target calls", flush=True)

    total = {k: sum(s[k] for s in stats.values()) for k in next(iter(stats.values()))}
    rows = []
    for name, s in list(stats.items()) + [("all", total)]:
        if not s["prompts"]:
            continue
        rows.append([
            name, s["prompts"], s["tokens"], f"{s['greedy']:.2f}", f"{s['spec']:.2f}",
            f"**{s['greedy'] / s['spec']:.2f}x**", f"{s['tokens'] / s['greedy']:.1f}", f"{s['tokens'] / s['spec']:.1f}",
            f"{s['tokens'] / s['calls']:.2f}", f"{s['accepted'] / max(1, s['drafted']):.2f}", f"{s['equal']}/{s['prompts']}",
        ])
    table = md_table(
        ["corpus", "prompts", "tokens", "greedy s (baseline)", f"speculative g={args.gamma} s", "speedup",
         "greedy tok/s", "spec tok/s", "tokens per target call", "accepted / drafted", "same tokens"],
        rows,
    )
    notes = [
        f"target {args.target}, draft {args.draft}, {pair.meta['device']} {pair.meta['dtype']}; models loaded once "
        f"({t_load:.1f} s, not counted)",
        f"{args.per_corpus} prompt(s) per corpus (first of each file), max_new_tokens {args.max_new_tokens}; "
        "greedy and speculative alternate prompt by prompt",
        "mismatches: " + ("none" if not mismatches else "; ".join(mismatches)),
    ]
    record("y generation: plain greedy vs lossless speculative decoding", table, notes, append=not args.no_append)


if __name__ == "__main__":
    main()
