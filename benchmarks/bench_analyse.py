"""Time `analyse` on 1M synthetic positions (8000 streams x 125, 4 corpora), B=2000, 20 shuffles.

Prints the total and the share spent in the policy replay (SPEC 5) and in the rest. Target for the
analytics without policies: under ~3 s on a 2-core machine. Run: python benchmarks/bench_analyse.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from specterm.core import analysis
from specterm.core.streams import Run, Stream


def synthetic_run(n_streams: int = 8000, length: int = 125, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    corpora = ["prose", "code", "math", "json"]
    streams = [
        Stream(id=str(i), corpus=corpora[i % 4], bits=(rng.random(length) < rng.uniform(0.5, 0.95)).astype(np.uint8),
               draft_conf=rng.random(length).astype(np.float32))
        for i in range(n_streams)
    ]
    return Run(path=Path("bench"), meta={"name": "bench", "cost": {"r_measured": 0.13}}, streams=streams)


def main() -> None:
    run = synthetic_run()
    spent = {"policies": 0.0, "decide": 0.0}
    policy_summary, decision = analysis._helpers()

    def timed(name, fn):
        def wrapper(*args, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[name] += time.perf_counter() - t0
        return wrapper

    analysis._helpers = lambda: (policy_summary and timed("policies", policy_summary), decision and timed("decide", decision))
    t0 = time.perf_counter()
    analysis.analyse([run], gamma=8, boot=2000, shuffles=20, seed=0)
    total = time.perf_counter() - t0
    rest = total - spent["policies"] - spent["decide"]
    print(f"positions 1000000  streams 8000  B 2000  shuffles 20")
    print(f"analyse total {total:.2f} s   stats+bootstrap+scorecard {rest:.2f} s   policies {spent['policies']:.2f} s   decide {spent['decide']:.3f} s")
    print(f"ratio stats / 3 s target: {rest / 3.0:.2f}")


if __name__ == "__main__":
    main()
