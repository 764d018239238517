"""`specterm costs` (issue 33): the B = 1 cost profile of a run's pair, timed until the decision is
settled, against the fixed-round measurement before it (`specterm run --remeasure-cost`: a full
warm-up-light round and 7 timed rounds of the whole g curve), in one process on the same loaded
models, one thread per forward (the default on <= 2 cores).

    this      engines/costs._rounds: 1 full round of g = 1..16, then focused rounds of the quantities the
              decision still needs (g_hw, the runner-up, every g not pruned), until every set's verdict
              and g_hw are settled (core/decide/hardware/settle) or a cap
    baseline  engines/timing.run_rounds(sampler, 7): 7 full rounds of g = 1..16

Order: baseline, this (--pairs times). Printed and appended to RESULTS.md: wall seconds of each, the
ratio, rounds and stop reason, whether the two give the same pooled g_hw and verdict kind, the load.
The whole command `specterm costs RUN` (model loading included) is timed by running it.

    python benchmarks/bench_costs.py [--run streams/qwen2.5-coder-0.5b-1.5b] [--pairs 1] [--no-append]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from _common import md_table, record

ROOT = Path(__file__).resolve().parents[1]


def _verdict(run, cost) -> tuple[int | None, str | None]:
    """The pooled g_hw and verdict kind of `run` under `cost` (no bootstrap over prompts: the cost side only)."""
    import numpy as np

    from specterm.core.decide.hardware import cost_curve, decision_hw
    from specterm.core.report.types import POOLED
    from specterm.engines.costs import COST_GAMMAS, set_curves

    g = np.array(COST_GAMMAS)
    E = set_curves(run, g)[POOLED][0]
    d = decision_hw(g, E, None, cost_curve(cost))
    return d.gamma_hw, d.verdict_kind


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", default=str(ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b"))
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()

    import numpy as np

    from specterm.core.decide.machine import default_threads
    from specterm.core.store import load_run
    from specterm.engines import engine_for
    from specterm.engines.base import OpenOptions
    from specterm.engines.costs import COST_GAMMAS, CostsConfig, _rounds, context_length, set_settlers
    from specterm.engines.timing import run_rounds

    run = load_run(Path(args.run))
    threads = default_threads(os.cpu_count())
    engine = engine_for(run.meta)
    t0 = time.perf_counter()
    pair = engine.open(run.meta, OpenOptions(threads=threads), lambda p: None)
    load_s = time.perf_counter() - t0
    ctx_len, ctx, _rule = context_length(run, pair.encode)
    gammas = np.array(COST_GAMMAS)
    settlers = set_settlers(run, gammas)
    rows = []
    agree = []
    for i in range(args.pairs):
        t = time.perf_counter()
        base = run_rounds(pair.cost_sampler(ctx, COST_GAMMAS, None, None), 7)
        base_s = time.perf_counter() - t
        rows.append([i + 1, "baseline: 7 full rounds", f"**{base_s:.1f}**", 7, "fixed rounds", *_verdict(run, base)])
        print(rows[-1], flush=True)
        t = time.perf_counter()
        sampler = pair.cost_sampler(ctx, COST_GAMMAS, None, None)
        extra = _rounds(sampler, settlers, CostsConfig(run=Path(args.run), busy_ok=True), t, print, None)
        this_s = time.perf_counter() - t
        mine = sampler.summary()
        rows.append([i + 1, "this: until settled", f"**{this_s:.1f}**", extra["rounds"], extra["stop_reason"][:90],
                     *_verdict(run, mine)])
        print(rows[-1], flush=True)
        agree.append(rows[-1][5:] == rows[-2][5:])
    whole = {name: [float(str(r[2]).strip("*")) for r in rows if r[1].startswith(name)] for name in ("baseline", "this")}
    ratio = sum(whole["this"]) / sum(whole["baseline"])
    body = md_table(["pair", "procedure", "timing s", "timed rounds", "stop", "pooled g_hw", "verdict (costs only)"], rows)
    body += (f"\n\ntiming, this / baseline: **{ratio:.2f}**; same pooled g_hw and verdict as the baseline in "
             f"{sum(agree)} of {len(agree)}; model loading {load_s:.1f} s (not in either)\n")
    record(f"specterm costs: B = 1 profile until settled against 7 fixed rounds (issue 33), {engine.name}", body,
           notes=[f"run {args.run}, context {ctx_len} tokens (median prompt + y/2), {threads} thread(s) per forward",
                  "targets (issue 33): the B = 1 profile of the Qwen pair <= 45 s on the Intel Xeon kind, <= 120 s on the AMD EPYC kind"],
           append=not args.no_append)


if __name__ == "__main__":
    main()
