"""Oracle vs. the sweep a user would run instead, on the same K prompts and the same loaded models:

(a) specterm's oracle (`run_oracle`: y by lossless speculative decoding at gamma 5, or plain greedy
    with --y greedy, then one teacher-forced pass per model), which yields the exact block count
    for every draft length g in 1..32;
(b) Hugging Face assisted generation (`target.generate(assistant_model=draft, do_sample=False)`,
    assistant generation_config: num_assistant_tokens = g, schedule "constant", confidence stop
    off), once per g in --gammas;
(c) specterm's own speculative decoder (`speculative_generate`, FixedGamma(g)), once per g.

Prints the ratios (b)/(a) and (c)/(a) (target: (b)/(a) >= 5 on the Qwen 0.5B/1.5B pair on CPU),
checks that (b) and (c) emit exactly the oracle's y, and that their target calls equal the
blocks the oracle's walk predicts (mismatches are reported, not hidden).

    python benchmarks/bench_oracle_vs_sweep.py [--target T --draft D | --smol] [--prompts 3] [--max-new-tokens 64]
        [--gammas 1,2,4,8,16] [--y spec|greedy] [--corpora prose,code,...] [--no-append]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import default_pair, md_table, record


def hf_assisted(pair, p_ids: list[int], gamma: int, max_new_tokens: int) -> tuple[list[int], int]:
    """(continuation, target forward calls) of HF assisted generation at a constant draft length gamma."""
    import torch

    pair.draft.generation_config.num_assistant_tokens = gamma
    pair.draft.generation_config.num_assistant_tokens_schedule = "constant"
    pair.draft.generation_config.assistant_confidence_threshold = 0.0  # 0 = no confidence stop
    calls = [0]

    def count(module, args, output):
        if module is pair.target:  # a layers:K draft shares the target's hook dict
            calls[0] += 1

    handle = pair.target.register_forward_hook(count)
    try:
        ids = torch.tensor([p_ids], device=pair.target.device)
        eos = sorted(pair.eos)
        out = pair.target.generate(
            ids, attention_mask=torch.ones_like(ids), assistant_model=pair.draft, do_sample=False, num_beams=1,
            max_new_tokens=max_new_tokens, eos_token_id=eos, pad_token_id=eos[0], repetition_penalty=1.0,
            no_repeat_ngram_size=0,
        )
    finally:
        handle.remove()
    return out[0, len(p_ids):].tolist(), calls[0]


def first_diff(a: list[int], b: list[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def run_timed_oracle(pair, args, prompts, out: Path) -> dict:
    """run_oracle on the loaded pair; wall time split by phase from its progress events."""
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import run_oracle
    from specterm.engines.torch import TorchPair

    phases: dict[str, float] = {}
    last = [time.perf_counter(), "start"]
    kind = {"generating": "y", "teacher-forcing": "teacher forcing"}

    def on_progress(p):
        now = time.perf_counter()
        name = kind.get(last[1], "store + rest")
        phases[name] = phases.get(name, 0.0) + now - last[0]
        last[:] = [now, p.phase]

    cfg = OracleConfig(target=args.target, draft=args.draft, prompts=prompts, out=out,
                       max_new_tokens=args.max_new_tokens, batch_size=max(4, len(prompts)),
                       spec_gamma=args.spec_gamma if args.y == "spec" else 0, measure_cost=False)
    t0 = time.perf_counter()
    run_oracle(cfg, on_progress=on_progress, pair=TorchPair(pair))
    phases["total"] = time.perf_counter() - t0
    return phases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("--smol", action="store_true", help="SmolLM2-135M with its first 25 layers as the draft")
    ap.add_argument("--prompts", type=int, default=3, help="K: one prompt per corpus, in the order of --corpora")
    ap.add_argument("--corpora", default="prose,code,json,math,multilingual")
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--gammas", default="1,2,4,8,16")
    ap.add_argument("--y", choices=["spec", "greedy"], default="greedy", help="how the oracle builds y (greedy: batched, specterm's default)")
    ap.add_argument("--spec-gamma", type=int, default=5, help="gamma of the oracle's y when --y spec")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (0: torch's default); on a busy 2-core machine 1 thread avoids spin-wait stalls")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    t_def, d_def = default_pair(args.smol)
    args.target, args.draft = args.target or t_def, args.draft or d_def
    gammas = [int(g) for g in args.gammas.split(",")]

    import torch
    import transformers

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from specterm.core.streams.blockwalk import block_counts
    from specterm.engines.corpora import load_builtin
    from specterm.engines.base import OracleConfig
    from specterm.engines.torch.oracle_torch import encode_prompt, load_pair
    from specterm.engines.torch.specdec import FixedGamma, greedy_generate, speculative_generate
    from specterm.core.store import load_run

    transformers.logging.set_verbosity_error()
    names = [c.strip() for c in args.corpora.split(",")]
    per = -(-args.prompts // len(names))
    pool = load_builtin(names, limit=per)
    by_corpus = {c: [p for p in pool if p.corpus == c] for c in names}
    prompts = [by_corpus[c][j] for j in range(per) for c in names if j < len(by_corpus[c])][: args.prompts]

    t0 = time.perf_counter()
    pair = load_pair(OracleConfig(target=args.target, draft=args.draft, prompts=[], out=Path("."), device=args.device))
    t_load = time.perf_counter() - t0
    if pair.draft.generation_config is pair.target.generation_config:  # layers:K drafts share it by copy.copy
        pair.draft.generation_config = copy.deepcopy(pair.target.generation_config)
    print(f"loaded {args.target} + {args.draft} in {t_load:.1f} s", flush=True)
    ids = [encode_prompt(pair.tokenizer, p.text) for p in prompts]

    # Warm-up (not timed): first calls pay one-off allocation and dispatch costs.
    greedy_generate(pair.target, ids[0], 4, pair.eos)
    greedy_generate(pair.draft, ids[0], 4, pair.eos)
    hf_assisted(pair, ids[0], 2, 4)

    with tempfile.TemporaryDirectory(prefix="specterm-bench-oracle-") as tmp:
        phases = run_timed_oracle(pair, args, prompts, Path(tmp) / "oracle")
        streams = {s.id: s for s in load_run(Path(tmp) / "oracle").streams}
    ys = [streams[p.id].y.tolist() for p in prompts]
    bits = [streams[p.id].a for p in prompts]
    gate = float(np.mean([streams[p.id].gate_rate for p in prompts]))
    n_tok = sum(len(y) for y in ys)
    t0 = time.perf_counter()
    all_g = np.arange(1, 33)
    walk = np.sum([block_counts(b, all_g)[1] for b in bits], axis=0)  # blocks for every g, summed over prompts
    t_walk = time.perf_counter() - t0
    print(f"oracle {phases['total']:.1f} s ({n_tok} tokens, gate {gate:.3f})", flush=True)

    per_g, mismatches = [], []
    t_hf = t_sd = 0.0
    for g in gammas:
        row = {"g": g, "hf_s": 0.0, "sd_s": 0.0, "hf_calls": 0, "sd_calls": 0, "hf_eq": 0, "sd_eq": 0}
        for p, p_ids, y in zip(prompts, ids, ys):
            t0 = time.perf_counter()
            out, calls = hf_assisted(pair, p_ids, g, args.max_new_tokens)
            row["hf_s"] += time.perf_counter() - t0
            row["hf_calls"] += calls
            row["hf_eq"] += out == y
            if out != y:
                i = first_diff(out, y)
                mismatches.append(f"HF g={g} {p.id}: differs from y at token {i} of {len(y)} (HF {out[i:i + 3]}, y {y[i:i + 3]})")
            t0 = time.perf_counter()
            res = speculative_generate(pair.target, pair.draft, p_ids, args.max_new_tokens, pair.eos, FixedGamma(g))
            row["sd_s"] += time.perf_counter() - t0
            row["sd_calls"] += res.target_calls
            row["sd_eq"] += res.tokens == y
            if res.tokens != y:
                i = first_diff(res.tokens, y)
                mismatches.append(f"specterm g={g} {p.id}: differs from y at token {i} of {len(y)}")
        t_hf += row["hf_s"]
        t_sd += row["sd_s"]
        per_g.append(row)
        print(f"g={g}: HF {row['hf_s']:.1f} s, specterm {row['sd_s']:.1f} s", flush=True)

    K, a = len(prompts), phases["total"]
    y_how = f"spec decoding g={args.spec_gamma}" if args.y == "spec" else "plain greedy"
    summary = md_table(
        ["method", "yields", "generations", "time s", "ratio to (a)"],
        [
            [f"(a) specterm oracle: y ({y_how}) + 1 teacher-forced pass per model", "blocks for every g in 1..32",
             K, f"{a:.2f}", "1.00"],
            ["    of which y", "", "", f"{phases.get('y', 0):.2f}", f"{phases.get('y', 0) / a:.2f}"],
            ["    of which teacher forcing", "", "", f"{phases.get('teacher forcing', 0):.2f}",
             f"{phases.get('teacher forcing', 0) / a:.2f}"],
            ["    of which store + rest", "", "", f"{phases.get('store + rest', 0):.2f}", f"{phases.get('store + rest', 0) / a:.2f}"],
            ["    block walk for g = 1..32", "", "", f"{t_walk:.4f}", f"{t_walk / a:.4f}"],
            [f"(b) HF assisted generation, g in {{{args.gammas}}}", f"blocks at {len(gammas)} g", K * len(gammas),
             f"{t_hf:.2f}", f"**{t_hf / a:.2f}**"],
            [f"(c) specterm speculative decoder, g in {{{args.gammas}}}", f"blocks at {len(gammas)} g", K * len(gammas),
             f"{t_sd:.2f}", f"**{t_sd / a:.2f}**"],
        ],
    )
    detail = md_table(
        ["g", "HF s", "specterm s", "HF s / (a)", "specterm s / (a)", "blocks (oracle walk)", "HF target calls",
         "specterm target calls", "HF == y", "specterm == y", "E_true = tokens/blocks"],
        [[r["g"], f"{r['hf_s']:.2f}", f"{r['sd_s']:.2f}", f"{r['hf_s'] / a:.2f}", f"{r['sd_s'] / a:.2f}",
          int(walk[r["g"] - 1]), r["hf_calls"], r["sd_calls"], f"{r['hf_eq']}/{K}", f"{r['sd_eq']}/{K}",
          f"{n_tok / walk[r['g'] - 1]:.2f}"] for r in per_g],
    )
    notes = [
        f"target {args.target}, draft {args.draft}, {pair.meta['device']} {pair.meta['dtype']}; models loaded once "
        f"({t_load:.1f} s, not counted)",
        f"K = {K} prompts ({', '.join(p.id for p in prompts)}), max_new_tokens {args.max_new_tokens}, {n_tok} tokens of y, "
        f"oracle gate rate {gate:.3f}, alpha {sum(int(b.sum()) for b in bits) / max(1, sum(b.size for b in bits)):.3f}",
        "HF target calls counted with a forward hook on the target (one per verification)",
        "mismatches: " + ("none" if not mismatches else "; ".join(mismatches)),
    ]
    record("Oracle vs. per-g sweep (HF assisted generation, specterm decoder)", summary + "\n\n" + detail, notes,
           append=not args.no_append)


if __name__ == "__main__":
    main()
