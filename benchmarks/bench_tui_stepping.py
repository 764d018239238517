"""Responsiveness of the Streams screen: stepping the token cursor through a 4096-token stream.

Each key press is timed from `pilot.press` to the app being idle again (the cursor moved, the
token view and the info line re-rendered), headless at 120x36. Baseline in the same run: the
same presses on a 128-token stream. Target: no step over 100 ms.

    python benchmarks/bench_tui_stepping.py [--steps 300] [--no-append]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import md_table, record


def make_run(root: Path, n: int) -> Path:
    from app_fixture import META, make_stream

    from specterm.core.store import write_run

    return write_run(root / f"long-{n}", {**META, "name": f"long-{n}"}, [make_stream("long", "code", n, 7)])


async def step_times(run: Path, steps: int) -> list[float]:
    from specterm.app import make_app

    app = make_app([run], boot=50, shuffles=2)
    out = []
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        for key in ["right"] * steps + ["r"] * 20 + ["end", "home"]:
            t0 = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        for n in (128, 4096):
            times = asyncio.run(step_times(make_run(Path(tmp), n), args.steps))
            med, worst = statistics.median(times), max(times)
            base = base or med
            rows.append([n, len(times), f"{med * 1000:.1f}", f"{sorted(times)[int(0.95 * len(times))] * 1000:.1f}",
                         f"{worst * 1000:.1f}", f"{med / base:.2f}", "yes" if worst < 0.1 else "no"])
    table = md_table(["stream tokens", "key presses", "median ms", "p95 ms", "max ms", "median vs 128-token", "all < 100 ms"], rows)
    record("TUI: stepping the token cursor", table,
           ["headless Pilot at 120x36; each press timed until the app is idle again, so Pilot's own wait is included",
            "baseline: a 128-token stream in the same run; the ratio is what the stream length costs"],
           append=not args.no_append)


if __name__ == "__main__":
    main()
