"""The GPU check at real sizes with nothing carried but the config (`check.sh --synthetic`, issue 51).

A forward's time depends on the architecture, not on the weights, so Qwen2-architecture pairs of real
shapes (a 0.5B-shaped draft with a 1.5B-shaped target; the 7B-shaped target where memory allows) are
built here from transformers' Qwen2Config with seeded random weights: no download. Random weights give
no realistic acceptance, so `costs` and `confirm` prescribe it: a replay drafter (`ReplayDraft`) runs the
real draft forward for every token it proposes, then proposes y_t where a stored stream's bits (the
shipped Qwen run's, laid along the positions) say accept and another token where they say reject. The
target calls then equal the walk on those bits, and the time is that of real-shape forwards plus the
real block overhead. Per pair, in order (each step timed, skipped when the budget cannot hold it):

    oracle-f32    specterm's oracle (engines/torch/oracle_torch.run_oracle) on the pair in float32
                  (prompts: the built-in corpora, a character-level stand-in tokenizer, ids < vocab)
    replay run    that run with each stream's bits replaced by the shipped Qwen run's (same corpus)
    costs         `specterm costs` (engines/costs.measure) with the replay drafter: the forwards, and
                  the block overhead o(g) from whole speculative blocks
    confirm       `specterm confirm` (engines/confirm.confirm) at the decision's g_hw and two others
    hf            Hugging Face assisted generation with the same random pair (its own drafts, whatever
                  their acceptance) timed against plain greedy, beside specterm's prediction for that
                  pair's own walk (the oracle-f32 bits) at the same g with the costs above
    oracle-bf16   the oracle again in bfloat16 (the pair converted in place): repairs, kept positions

    python benchmarks/gpu/synthetic.py OUT [--device cuda|cpu] [--budget-s 420] [--shrink] [--sizes 1.5B,7B]

OUT gets synthetic.json (every number) and synthetic.md (the table). --shrink builds small shapes of
the same architecture (the `--device cpu` dry run of this repository's tests).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
QWEN_RUN = ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b"
VOCAB = 151936
SHAPES: dict[str, dict[str, int]] = {  # Qwen2.5 0.5B / 1.5B / 7B (their config.json), weights aside
    "0.5B": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2),
    "1.5B": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2),
    "7B": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4),
}
SHRUNK: dict[str, dict[str, int]] = {  # --shrink: the same architecture, small enough for a CPU dry run
    "0.5B": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2),
    "1.5B": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    "7B": dict(hidden_size=192, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
}
SHRUNK_VOCAB = 4096
PARAMS_B = {"0.5B": 0.49, "1.5B": 1.54, "7B": 7.6}  # billions of parameters, for the memory check
PROMPT_IDS = 96    # prompt ids at most (the stand-in tokenizer is character-level)


class CharTokenizer:
    """A stand-in tokenizer for random-weight models: one id per character (a fixed hash into the vocabulary,
    0 kept for padding), decoded as CJK characters so every id has a visible piece."""

    pad_token_id = 0

    def __init__(self, vocab: int) -> None:
        self.vocab = vocab

    def __call__(self, text: str) -> Any:
        ids = [1 + (ord(c) * 7919) % (self.vocab - 1) for c in text][:PROMPT_IDS]
        return type("Encoding", (), {"input_ids": ids})()

    def decode(self, ids: Any, skip_special_tokens: bool = False, clean_up_tokenization_spaces: bool = False) -> str:
        return "".join(chr(0x4E00 + int(i) % 0x5000) for i in ids)


def build(shape: str, seed: int, device: str, shrink: bool) -> Any:
    """A Qwen2ForCausalLM of `shape` with seeded random weights, float32, on `device`, in eval mode."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    dims = (SHRUNK if shrink else SHAPES)[shape]
    cfg = Qwen2Config(vocab_size=SHRUNK_VOCAB if shrink else VOCAB, max_position_embeddings=4096, rope_theta=1e6,
                      tie_word_embeddings=shape != "7B", **dims)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg)
    return model.to(torch.float32).eval().requires_grad_(False)


def plan_tokens(y: np.ndarray, bits: np.ndarray, vocab: int) -> list[int]:
    """What the replay drafter proposes at continuation index t: y_t where bits_t = 1, else another token
    ((y_t + 1) mod vocab, never y_t), so the verify accepts exactly where the bits say."""
    y = np.asarray(y, dtype=np.int64)
    return np.where(np.asarray(bits) == 1, y, (y + 1) % vocab).tolist()


def make_replay(inner: Any) -> Any:
    """The replay drafter around a real draft model (module docstring): every forward is the real one; the
    last row's logits are then replaced so that its argmax is the planned token of the position it
    predicts (`bind`: the prompt length and plan_tokens of the generation about to run)."""
    import torch

    from specterm.engines.torch.models_torch import cache_kwarg

    class ReplayDraft(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner
            self.prompt_len = 0
            self.plan: list[int] = []

        @property
        def device(self) -> Any:
            return self.inner.device

        @property
        def config(self) -> Any:
            return self.inner.config

        def bind(self, prompt_len: int, plan: list[int]) -> None:
            self.prompt_len, self.plan = prompt_len, list(plan)

        def forward(self, input_ids: Any = None, past_key_values: Any = None, **kw: Any) -> Any:
            if past_key_values is not None:
                kw[cache_kwarg(self.inner)] = past_key_values
            out = self.inner(input_ids=input_ids, **kw)
            cache = kw.get(cache_kwarg(self.inner))
            if cache is not None and self.plan:
                t = int(cache.get_seq_length()) - self.prompt_len  # the index in y the last row predicts
                if 0 <= t < len(self.plan):
                    row = out.logits[:, -1]
                    row.fill_(-30.0)
                    row[:, self.plan[t]] = 30.0
            return out

    return ReplayDraft()


def replay_pair_class() -> Any:
    """engines/torch.TorchPair whose draft is a ReplayDraft, bound to each item before it is generated."""
    from specterm.engines.torch import TorchPair

    class ReplayPair(TorchPair):
        def _bind(self, item: Any) -> None:
            self.loaded.draft.bind(len(item.ids), plan_tokens(item.stream.y[: item.n], item.stream.bits[: item.n],
                                                               int(self.loaded.draft.config.vocab_size)))

        def block_timed(self, item: Any, gamma: int, cancel: Any) -> Any:
            self._bind(item)
            return super().block_timed(item, gamma, cancel)

        def warm_up(self, item: Any, gamma: int) -> None:
            self._bind(item)
            super().warm_up(item, gamma)

        def speculative_timed(self, item: Any, gamma: int, on_step: Any) -> Any:
            self._bind(item)
            return super().speculative_timed(item, gamma, on_step)

    return ReplayPair


def loaded_pair(target: Any, draft: Any, device: str, dtype: str, names: tuple[str, str]) -> Any:
    from specterm.engines.torch.oracle_torch import LoadedPair

    meta: dict[str, Any] = {"device": device, "dtype": dtype, "tokenizer_vocab": int(target.config.vocab_size)}
    for role, model, name in (("target", target, names[0]), ("draft", draft, names[1])):
        meta[role] = {"source": "synthetic", "spec": f"synthetic:qwen2-{name}", "class": type(model).__name__,
                      "layers": int(model.config.num_hidden_layers), "vocab_size": int(model.config.vocab_size)}
    if device.startswith("cuda"):
        import torch

        meta["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return LoadedPair(target, draft, CharTokenizer(int(target.config.vocab_size)), set(), meta)


def replay_streams(run_dir: Path, qwen: Path, vocab: int) -> list[Any]:
    """The oracle run's streams with the shipped Qwen run's bits laid along them: stream i of corpus c takes
    the bits of the Qwen run's i-th stream of c (cycling), both cut to the shorter length; draft_argmax
    follows the bits (y_t where accepted, plan_tokens' other token where not)."""
    from specterm.core.store import load_run

    donors: dict[str, list[np.ndarray]] = {}
    for s in load_run(qwen).streams:
        donors.setdefault(s.corpus, []).append(np.asarray(s.a, dtype=np.uint8))
    pool = [b for c in sorted(donors) for b in donors[c]]
    out, seen = [], {}
    for s in load_run(run_dir).streams:
        i = seen[s.corpus] = seen.get(s.corpus, -1) + 1
        mine = donors.get(s.corpus) or pool
        bits = mine[i % len(mine)]
        m = int(min(s.valid_len, bits.size))
        if m < 2:
            continue
        cut = {k: getattr(s, k)[:m] for k in ("y", "gate", "draft_conf", "target_conf", "beta", "piece_ends")
               if getattr(s, k) is not None}
        draft_argmax = np.asarray(plan_tokens(s.y[:m], bits[:m], vocab), dtype=np.int32)
        text = s.text[: int(cut["piece_ends"][-1])] if s.text is not None and "piece_ends" in cut else s.text
        out.append(dataclasses.replace(s, bits=bits[:m].copy(), draft_argmax=draft_argmax, text=text, repairs=None,
                                       stop="length", **cut))
    return out


class Budget:
    def __init__(self, seconds: float) -> None:
        self.t0, self.seconds = time.perf_counter(), seconds

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.t0)


def fits_memory(target: str, device: str, shrink: bool) -> bool:
    """Whether a float32 target of `target`'s size, its bfloat16 copy and the draft fit (with room for the caches)."""
    if shrink or not device.startswith("cuda"):
        return True
    import torch

    free, _ = torch.cuda.mem_get_info()
    need = (PARAMS_B[target] + PARAMS_B["0.5B"]) * 1e9 * 4 * 1.3
    return free > need


def oracle_summary(run_dir: Path) -> dict[str, Any]:
    from specterm.core.store import load_run

    run = load_run(run_dir)
    n = sum(s.n for s in run.streams)
    kept = sum(s.valid_len for s in run.streams)
    return {"streams": len(run.streams), "positions": n, "kept": kept, "kept_share": kept / n if n else None,
            "gate_failures": int(sum(int((s.gate == 0).sum()) for s in run.streams if s.gate is not None)),
            "repairs": int(sum(len(s.repairs or ()) for s in run.streams)),
            "repaired_streams": sum(1 for s in run.streams if s.repairs), "alpha": (
                float(sum(int(s.a.sum()) for s in run.streams) / kept) if kept else None)}


def hf_assisted(target: Any, draft: Any, prompts: list[list[int]], n: int, gamma: int) -> dict[str, Any]:
    """Hugging Face assisted generation (fixed num_assistant_tokens = gamma, no confidence stop) against plain
    greedy with the same random pair, methods alternating per prompt; outputs compared."""
    import torch

    sync = torch.cuda.synchronize if target.device.type == "cuda" else (lambda: None)
    draft.generation_config.num_assistant_tokens = gamma
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    common = dict(max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0, eos_token_id=None)
    times = {"greedy": 0.0, "assisted": 0.0}
    same = 0
    for k, p in enumerate(prompts):
        ids = torch.tensor([p], device=target.device)
        mask = torch.ones_like(ids)
        outs = {}
        for method in (("greedy", "assisted") if k % 2 == 0 else ("assisted", "greedy")):
            extra = {"assistant_model": draft} if method == "assisted" else {}
            sync()
            t0 = time.perf_counter()
            with torch.no_grad():
                outs[method] = target.generate(input_ids=ids, attention_mask=mask, **common, **extra)
            sync()
            times[method] += time.perf_counter() - t0
        same += int(torch.equal(outs["greedy"], outs["assisted"]))
    return {"gamma": gamma, "prompts": len(prompts), "tokens": n, "greedy_s": times["greedy"],
            "assisted_s": times["assisted"], "realized": times["greedy"] / times["assisted"], "identical": same}


def predicted_for_walk(run_dir: Path, cost: dict[str, Any], gamma: int, n: int) -> float | None:
    """specterm's S_hw(g) for the pair's own walk: E = tokens / blocks of the oracle run's bits (cut to n),
    the profile's costs with its block overhead (costmodel)."""
    from specterm.core.decide import costmodel
    from specterm.core.decide.hardware.curve import cost_curve
    from specterm.core.store import load_run
    from specterm.core.streams.blockwalk import walk_table

    curve = cost_curve(cost)
    bits = [s.a[:n] for s in load_run(run_dir).streams if s.valid_len]
    if curve is None or not bits or gamma not in set(curve.gammas.tolist()):
        return None
    tokens, blocks = walk_table(bits, np.array([gamma]))
    E = float(tokens.sum() / blocks.sum())
    return float(costmodel.speedup_hw(E, curve.c_decode, curve.verify_at(gamma), curve.c_draft, gamma,
                                      overhead=curve.overhead_at(gamma)))


def check_pair(size: str, args: argparse.Namespace, out: Path, budget: Budget, log: Any) -> dict[str, Any]:
    """Every step of the module docstring for the 0.5B-shaped draft with the `size`-shaped target."""
    import torch

    from specterm.core.store import load_run, write_run
    from specterm.engines.confirm import confirm
    from specterm.engines.corpora import load_builtin
    from specterm.engines.costs import CostsConfig, measure
    from specterm.engines.torch import TorchEngine
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import run_oracle
    from specterm.engines.torch import TorchPair
    from specterm.engines.base import ConfirmConfig

    res: dict[str, Any] = {"target": size, "draft": "0.5B", "shrink": args.shrink, "steps": {}}
    device = args.device
    t = time.perf_counter()
    target, draft = build(size, 1, device, args.shrink), build("0.5B", 2, device, args.shrink)
    vocab = int(target.config.vocab_size)
    res["steps"]["build"] = time.perf_counter() - t
    log(f"{size}: built in {res['steps']['build']:.1f} s")
    prompts = load_builtin(limit=args.per_corpus)
    runs = out / "runs"
    names = (size, "0.5B")

    def step(name: str, need: float, fn: Any) -> Any:
        if budget.left() < need:
            res["steps"][name] = f"skipped: {budget.left():.0f} s left, needs ~{need:.0f} s"
            log(f"{size}: {name} skipped (budget)")
            return None
        t0 = time.perf_counter()
        value = fn()
        res["steps"][name] = time.perf_counter() - t0
        log(f"{size}: {name} in {res['steps'][name]:.1f} s")
        return value

    f32 = runs / f"{size}-f32"
    pair32 = loaded_pair(target, draft, device, "float32", names)
    step("oracle-f32", 20, lambda: run_oracle(OracleConfig(target="synthetic", draft="synthetic", prompts=prompts, out=f32,
                                                           max_new_tokens=args.tokens, device=device, dtype="float32",
                                                           measure_cost=False, batch_size=args.batch_size), pair=TorchPair(pair32)))
    if not (f32 / "prompts.jsonl").exists():
        return res
    res["oracle_f32"] = oracle_summary(f32)
    replay_dir = runs / f"{size}-replay"
    write_run(replay_dir, {**load_run(f32).meta, "name": replay_dir.name,
                           "replay": {"bits_from": QWEN_RUN.name, "rule": plan_tokens.__doc__}},
              replay_streams(f32, QWEN_RUN, vocab))
    replay = make_replay(draft)
    rpair = replay_pair_class()(loaded_pair(target, replay, device, "float32", names), args.threads)
    record = step("costs", 30, lambda: measure(CostsConfig(run=replay_dir, threads=args.threads, max_rounds=args.rounds,
                                                           max_seconds=args.cost_seconds, busy_ok=True,
                                                           block_tokens=args.tokens), pair=rpair))
    if record is not None:
        cost = record["cost"]
        from specterm.core.report.analysis import analyse

        dec = analyse([load_run(replay_dir)], boot=400, shuffles=0).sets["pooled"].decision_hw
        bo = cost.get("block_overhead") or {}
        res["costs"] = {"profile": record["id"], "stop_reason": record["stop_reason"], "c_decode_s": cost["c_decode_s"],
                        "c_draft_s": cost["c_draft_s"], "clock": cost.get("decision_clock"),
                        "overhead_a_s": bo.get("a_s"), "overhead_b_s": bo.get("b_s"),
                        "gamma_hw": dec.gamma_hw, "speedup_hw": dec.speedup_hw, "speedup_hw_ci": dec.speedup_hw_ci,
                        "verdict": dec.verdict}
        g_hw = int(dec.gamma_hw or 2)
        others = tuple(sorted({g for g in (1, 2, 4, 8) if g != g_hw})[:2])
        corpora = tuple(sorted({s.corpus for s in load_run(replay_dir).streams}))[:2]
        conf = step("confirm", 30, lambda: confirm(ConfirmConfig(run=replay_dir, per_corpus=1, gammas=others, corpora=corpora,
                                                                 decision_only=True, threads=args.threads, cost_repeats=3,
                                                                 interleave_costs=False), pair=rpair, engine=TorchEngine()))
        if conf is not None:
            checks = {(c["corpus"], c["gamma"]): c for c in conf.get("decision_checks") or []}
            res["confirm"] = [{"corpus": r["corpus"], "gamma": r["gamma"], "predicted": r["predicted"],
                               "realized": r["realized"], "ratio": r["realized"] / r["predicted"],
                               "tokens_per_call": r["tokens_per_call"], "walk_E": r["E_prompts"], "identical": r["identical"],
                               "decision_predicted": (checks.get((r["corpus"], r["gamma"])) or {}).get("decision_predicted"),
                               "in_pi": (checks.get((r["corpus"], r["gamma"])) or {}).get("in_ci")}
                              for r in conf.get("results") or []]
        ids = [pair32.tokenizer(p.text).input_ids for p in prompts[: args.hf_prompts]]
        hf = step("hf", 20, lambda: hf_assisted(target, draft, ids, args.tokens, g_hw))
        if hf is not None:
            hf["predicted"] = predicted_for_walk(f32, cost, g_hw, args.tokens)
            res["hf"] = hf
    bf16 = runs / f"{size}-bf16"

    def oracle_bf16() -> None:
        target.to(torch.bfloat16)
        draft.to(torch.bfloat16)
        run_oracle(OracleConfig(target="synthetic", draft="synthetic", prompts=prompts, out=bf16,
                                max_new_tokens=args.tokens, device=device, dtype="bfloat16", measure_cost=False,
                                batch_size=args.batch_size), pair=TorchPair(loaded_pair(target, draft, device, "bfloat16", names)))

    step("oracle-bf16", 20, oracle_bf16)
    if (bf16 / "prompts.jsonl").exists():
        res["oracle_bf16"] = oracle_summary(bf16)
    return res


def _f(x: Any, fmt: str = ".2f") -> str:
    return "n/a" if x is None else format(x, fmt)


def markdown(results: list[dict[str, Any]]) -> str:
    head = ("| pair | oracle f32 kept | oracle bf16 kept (repairs) | o(g) a, b (ms) | g_hw, S_hw | "
            "confirm: g predicted -> realized | HF assisted: predicted -> realized |")
    rows = [head, "|" + "---|" * 7]
    for r in results:
        o32, o16, c, hf = r.get("oracle_f32") or {}, r.get("oracle_bf16") or {}, r.get("costs") or {}, r.get("hf") or {}
        conf = "; ".join(f"{x['corpus']} g={x['gamma']} {_f(x['predicted'])}x -> {_f(x['realized'])}x"
                         for x in r.get("confirm") or []) or "n/a"
        a, b = c.get("overhead_a_s"), c.get("overhead_b_s")
        rows.append(f"| {r['draft']} -> {r['target']}{' (shrunk)' if r['shrink'] else ''} "
                    f"| {o32.get('kept', 'n/a')} / {o32.get('positions', 'n/a')} "
                    f"| {o16.get('kept', 'n/a')} / {o16.get('positions', 'n/a')} ({o16.get('repairs', 'n/a')}) "
                    f"| {_f(None if a is None else 1e3 * a)}, {_f(None if b is None else 1e3 * b, '.3f')} "
                    f"| {c.get('gamma_hw', 'n/a')}, {_f(c.get('speedup_hw'))}x "
                    f"| {conf} | g={hf.get('gamma', 'n/a')} {_f(hf.get('predicted'))}x -> {_f(hf.get('realized'))}x |")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=420.0)
    ap.add_argument("--shrink", action="store_true", help="small shapes of the same architecture (a CPU dry run)")
    ap.add_argument("--sizes", default="1.5B,7B", help="target shapes, each with the 0.5B-shaped draft")
    ap.add_argument("--per-corpus", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cost-seconds", type=float, default=60.0)
    ap.add_argument("--hf-prompts", type=int, default=2)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch sees no CUDA device; pass --device cpu (with --shrink for a dry run).", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    budget = Budget(args.budget_s)

    def log(msg: str) -> None:
        print(f"[{args.budget_s - budget.left():.0f}s] {msg}", file=sys.stderr, flush=True)

    results = []
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        if size not in SHAPES or size == "0.5B":
            print(f"unknown target size {size!r}; use 1.5B or 7B.", file=sys.stderr)
            return 2
        if not fits_memory(size, args.device, args.shrink):
            results.append({"target": size, "draft": "0.5B", "shrink": args.shrink, "steps": {"all": "skipped: memory"}})
            log(f"{size}: skipped (GPU memory)")
            continue
        if budget.left() < 60:
            results.append({"target": size, "draft": "0.5B", "shrink": args.shrink, "steps": {"all": "skipped: budget"}})
            continue
        results.append(check_pair(size, args, args.out, budget, log))
        gc.collect()  # the pair's models go with check_pair's frame: free them before the next size
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
        (args.out / "synthetic.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    (args.out / "synthetic.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    (args.out / "synthetic.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
