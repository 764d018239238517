"""`specterm costs`' stopping rule on simulated rounds (issue 33): each forward's time is drawn from a stored
cost profile's own samples (CPU clock, with replacement), so the rule's time to settle and what it leaves
open can be read for a machine that is not here (e.g. the Xeon profile of the shipped torch run from an
EPYC), and a change of the rule or its caps compared on the same draws. No model is loaded.

Each draw runs engines.costs._rounds (the real loop: warm-up, FULL_ROUNDS full rounds, focused rounds,
caps) against a sampler whose forwards return the drawn times, and a clock that advances by them.

    python benchmarks/sim_settle.py RUN PROFILE_ID [--draws 6] [--max-seconds 120] [--max-rounds 40]
                                    [--full-rounds 3] [--regret 0.02] [--share 0.333]

Printed per draw: simulated seconds of timing, timed rounds, and each unsettled set with what is open in it
(S: the verdict side, C: the choice of g), the pooled g_hw and S_hw. The rule never reads "settled" before
decode, the draft step, g_hw and the runner-up have 3 samples (a quantity with fewer has no spread of its
own; it borrows the others' relative noise).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("profile")
    ap.add_argument("--draws", type=int, default=6)
    ap.add_argument("--max-seconds", type=float, default=None)
    ap.add_argument("--max-rounds", type=int, default=None)
    ap.add_argument("--full-rounds", type=int, default=None)
    ap.add_argument("--regret", type=float, default=None)
    ap.add_argument("--share", type=float, default=None)
    args = ap.parse_args()

    from specterm.core.decide.hardware import settle
    from specterm.core.decide.hardware.profiles import run_profiles
    from specterm.core.store import load_run
    from specterm.engines import costs as C
    from specterm.engines.timing import RoundRobinSampler, with_curve
    from specterm.engines.torch.costs_torch import METHOD

    if args.full_rounds is not None:
        C.FULL_ROUNDS = args.full_rounds
    if args.regret is not None:
        settle.REGRET = args.regret
    if args.share is not None:
        settle.SHARE = args.share
    run = load_run(Path(args.run))
    profile = next((p for p in run_profiles(run.meta) if p.id == args.profile), None)
    if profile is None:
        raise SystemExit(f"no profile {args.profile} in {args.run}")
    pool = profile.cost["samples_cpu_s"]
    gammas = np.array(C.COST_GAMMAS)
    settlers = C.set_settlers(run, gammas)

    class Drawn(RoundRobinSampler):
        def __init__(self, rng: np.random.Generator) -> None:
            self.gammas, self.base, self.rng, self.t = list(C.COST_GAMMAS), int(profile.cost.get("context") or 0), rng, 0.0
            self.quantities = [(k,) for k in pool]
            self._start(None, None)

        def _time(self, quantity: tuple) -> tuple[float, float]:
            x = pool[quantity[0]]
            v = float(x[self.rng.integers(len(x))])
            self.t += v
            return v, v

        def summary(self) -> dict:
            return with_curve({**self.common_summary(), "threads": 1, "method": METHOD, "decision_clock": "cpu"})

    config = C.CostsConfig(run=Path(args.run), busy_ok=True,
                           max_rounds=args.max_rounds or C.MAX_ROUNDS, max_seconds=args.max_seconds or C.MAX_SECONDS)
    times = []
    for seed in range(args.draws):
        sampler = Drawn(np.random.default_rng(seed))

        class Clock:  # the loop's clock: the simulated seconds so far
            perf_counter = staticmethod(lambda s=sampler: s.t)
            sleep = staticmethod(time.sleep)

        C.time = Clock  # type: ignore[assignment]
        extra = C._rounds(sampler, settlers, config, 0.0, lambda m: None, None)
        st = C.settle_all(settlers, sampler.summary())
        open_sets = {n: ("S" if not s.side else "") + ("C" if not s.choice else "") for n, s in st.items() if not s.settled}
        pooled = st.get("pooled")
        times.append(sampler.t)
        print(f"draw {seed}: {sampler.t:.0f} s, {extra['rounds']} rounds, open {open_sets or 'none'}, "
              f"pooled g_hw {pooled.gamma_hw if pooled else None} S {pooled.speedup if pooled else float('nan'):.3f}")
    print(f"median {np.median(times):.0f} s, max {max(times):.0f} s over {len(times)} draws")


if __name__ == "__main__":
    main()
