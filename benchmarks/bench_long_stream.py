"""One long stream against many short ones at equal positions: `specterm report`'s analysis
(`analysis.analyse`) time and peak traced memory, and their ratio (issue 20, finding 8: one imported
stream of 30M positions took 443 s and 8.3 GB where 1M positions over many streams took 0.82 s).

Both sides are i.i.d. Bernoulli(0.7) bits in one corpus, written with `write_run` and read back with
`load_run` (the `report` path), measured in the same process.

    python benchmarks/bench_long_stream.py [--positions 1000000] [--short 1000] [--boot 2000] [--no-append]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _common import md_table, record

from specterm.core.report.analysis import analyse
from specterm.core.store import Stream, load_run, new_meta, write_run


def measure(lengths: list[int], boot: int, tmp: Path, name: str) -> tuple[float, float, int]:
    """(seconds, peak MB traced, position bins) of load + analyse on streams of these lengths."""
    rng = np.random.default_rng(0)
    streams = [Stream(id=f"s{i}", corpus="c", bits=(rng.random(n) < 0.7).astype(np.uint8)) for i, n in enumerate(lengths)]
    path = write_run(tmp / name, new_meta(name), streams)
    del streams
    tracemalloc.start()
    t0 = time.perf_counter()
    report = analyse([load_run(path)], boot=boot)
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return dt, peak, len(report.sets["pooled"].position.bins)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--short", type=int, default=1000, help="length of each short stream")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    P, L = args.positions, args.short
    with tempfile.TemporaryDirectory() as tmp:
        many = measure([L] * (P // L), args.boot, Path(tmp), "many")
        one = measure([P // L * L], args.boot, Path(tmp), "one")
    rows = [[f"{P // L} x {L}", f"{many[0]:.2f}", f"{many[1]:.0f}", many[2]],
            [f"1 x {P // L * L}", f"{one[0]:.2f}", f"{one[1]:.0f}", one[2]]]
    body = md_table(["streams x positions", "analyse s", "peak MB", "position bins"], rows)
    ratio = f"one long / many short: time {one[0] / many[0]:.2f}x, peak memory {one[1] / many[1]:.2f}x"
    record("Long stream vs many short (report)", body, [ratio, f"--boot {args.boot}"], append=not args.no_append)


if __name__ == "__main__":
    main()
