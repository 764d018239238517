"""The whole cost measurement of `specterm confirm --batch-costs` (the g curve at B = 1 and the batch
grid), this procedure against the one before it, in one process on the same loaded models (issue 18:
<= 90 s wall on this 2-core CPU for the Qwen pair).

    this      light warm-up round (of each kind the narrowest and widest forward), `repeats` timed
              rounds of decode, draft, draft2, verify(g) for g = 1..8; then the dense batch grid
              (every m = 1..9 at B = 2, 4, 8; warm-up: 1-token forwards), the B = 1 column reused
              from the rounds; every c_verify(g, B) used as timed (hardware.batch)
    baseline  a full untimed warm-up round, the same timed rounds, then stop 16's sparse grid timing
              B = 1 again (m = 1, 3, 9 at every B, held-back (8, 2) and (4, 5)) on caches prefilled
              again, c_verify(g, B) fitted

Both measure at the same context (a code prompt of the run + y/2, as confirm does) with one torch
thread, in the order baseline, this, baseline, this (--pairs). Printed and appended to RESULTS.md:
wall time of each part, the ratio, the held-back points' error of the interpolation on each
measurement, and the load average.

    python benchmarks/bench_cost_measurement.py [--run streams/qwen2.5-coder-0.5b-1.5b] [--pairs 1] [--repeats 2] [--no-append]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import QWEN_DRAFT, QWEN_TARGET, md_table, record

ROOT = Path(__file__).resolve().parents[1]


def measure(pair, ctx: list[int], repeats: int, light: bool) -> dict:
    """One whole measurement; returns its wall times and the fitted batch costs."""
    from specterm.core.decide.hardware import batch_costs
    from specterm.engines.timing import reused_b1
    from specterm.engines.torch import costs_torch as C

    t0 = time.perf_counter()
    sampler = C.CostSampler(pair.target, pair.draft, ctx, list(range(1, 9)))
    if not light:  # the old warm-up: every quantity once, untimed
        for q in sampler.quantities:
            C._time_forward(q[1], q[2], sampler.base, q[3])
        sampler.rounds = 1
    for _ in range(repeats + (1 if light else 0)):
        sampler.round()
    t_rounds = time.perf_counter() - t0
    if light:
        rec = C.measure_batch_costs(pair.target, pair.draft, ctx, reuse=reused_b1(sampler.summary()),
                                    prefilled={"target": sampler.quantities[0][2], "draft": sampler.quantities[1][2]})
    else:
        rec = C.measure_batch_costs(pair.target, pair.draft, ctx, fit_m=(1, 3, 9), held=((8, 2), (4, 5)))
    whole = time.perf_counter() - t0
    bc = batch_costs(rec)
    assert bc is not None
    return {"rounds_s": t_rounds, "grid_s": rec["wall_s"], "whole_s": whole,
            "held": {(h["batch"], h["gamma"]): h["error_pct"] for h in bc.held_back}, "rms": bc.fit_rms_rel}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=str(ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b"))
    ap.add_argument("--target", default=QWEN_TARGET)
    ap.add_argument("--draft", default=QWEN_DRAFT)
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from specterm.core.store import load_run
    from specterm.engines.timing import context_ids
    from specterm.engines.base import OracleConfig
    from specterm.engines.torch.oracle_torch import encode_prompt, load_pair

    run = load_run(args.run)
    pair = load_pair(OracleConfig(target=args.target, draft=args.draft, prompts=[], out=Path("."), device="cpu",
                                  dtype="float32"))
    s = next(s for s in run.streams if s.corpus == "code" and s.prompt is not None and s.y is not None)
    ids = encode_prompt(pair.tokenizer, s.prompt)
    ctx = context_ids(ids + s.y.tolist(), len(ids) + s.n // 2)
    rows = []
    for i in range(args.pairs):
        for name, light in (("baseline (stop 16)", False), ("this", True)):
            m = measure(pair, ctx, args.repeats, light)
            rows.append([i + 1, name, f"{m['rounds_s']:.1f}", f"{m['grid_s']:.1f}", f"**{m['whole_s']:.1f}**",
                         f"{m['held'].get((8, 1), float('nan')):+.1f}%", f"{m['held'].get((4, 4), float('nan')):+.1f}%",
                         f"{100 * m['rms']:.1f}%"])
            print(rows[-1], flush=True)
    whole = {name: [float(r[4].strip("*")) for r in rows if r[1] == name] for name in ("baseline (stop 16)", "this")}
    ratio = sum(whole["this"]) / sum(whole["baseline (stop 16)"])
    body = md_table(["pair", "procedure", "g-curve rounds s", "batch grid s", "whole s", "held-back B=8 g=1",
                     "held-back B=4 g=4", "RMS residual (fitted points)"], rows)
    body += f"\n\nwhole measurement, this / baseline: **{ratio:.2f}** (target: this <= 90 s wall)\n"
    record("Cost measurement by batch: the whole g curve + batch grid (issue 18)", body,
           notes=[f"context {len(ctx)} tokens (a code prompt + y/2), {args.repeats} timed rounds, 1 torch thread",
                  "held-back errors: the baseline's sparse grid read through this tree's interpolation in tokens "
                  "per forward; the dense grid holds nothing back (n/a)"],
           append=not args.no_append)


if __name__ == "__main__":
    main()
