"""The TUI on production shapes (issue 39), headless (Textual's run_test, 120x36), each shape in a
fresh child process with its own empty analysis cache: seconds to the first table and to every CI,
the Streams screen (from `2` pressed at the first table to the frame that shows the longest stream,
while the CIs are still computed), seven keys on it (End, R, Home, r, l, Right, Down), the longest hold
of the UI thread in the 3 s after the CIs (the other screens are mounted then), and quitting: `q` to
the app's end and to the process's exit (its daemon threads and the interpreter's teardown included),
and peak RSS (os.wait4 of that child alone). `--early` quits 2 s after the start instead, while the
runs are loaded and analysed (nothing else is measured then).

    shape       what
    bits5m      1 x 5,000,000 accept bits, imported (no text: each token drawn as its bit)
    text5m      1 x 5,000,000 with y, draft guesses and text (1-5 characters a piece, newlines)
    short20k    20,000 x 200 accept bits over 5 corpora

The runs are i.i.d. Bernoulli(0.7) bits (the TUI's costs do not depend on the chain), written under
--keep (default: a temporary folder) once.

    python benchmarks/bench_tui_shapes.py [SHAPE ...] [--early] [--keep DIR] [--no-append]

benchmarks/bench_shapes.py (report and the load's first table / every CI without Textual, ratios to
the 10M baseline) is the companion for the analysis; this script measures what only the app does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {"bits5m": "1 x 5,000,000 bits", "text5m": "1 x 5,000,000 with y/text", "short20k": "20,000 x 200"}
KEYS = ("end", "R", "home", "r", "l", "right", "down")
IDLE_S = 3.0
EARLY_S = 2.0


def make_run(folder: Path, shape: str) -> Path:
    """The run of `shape` under `folder` (written once)."""
    import numpy as np

    from specterm.core.store import Stream, new_meta, write_run

    path = folder / shape
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    if shape == "bits5m":
        streams = [Stream(id="long", corpus="c", bits=(rng.random(5_000_000) < 0.7).astype(np.uint8))]
    elif shape == "text5m":
        n = 5_000_000
        bits = (rng.random(n) < 0.7).astype(np.uint8)
        ends = np.cumsum(rng.integers(1, 6, n)).astype(np.int32)
        text = "".join(rng.choice(np.array(list("abcdefgh (){};=\n")), int(ends[-1])).tolist())
        y = rng.integers(0, 50_000, n).astype(np.int32)
        streams = [Stream(id="long", corpus="c", bits=bits, y=y, draft_argmax=np.where(bits == 1, y, (y + 1) % 50_000).astype(np.int32),
                          text=text, piece_ends=ends, prompt="write a long thing")]
    else:
        bits = (rng.random((20_000, 200)) < 0.7).astype(np.uint8)
        corpora = ["prose", "code", "json", "math", "multilingual"]
        streams = [Stream(id=f"s{i}", corpus=corpora[i % 5], bits=bits[i].copy()) for i in range(20_000)]
    return write_run(path, new_meta(shape), streams)


async def until(done) -> None:
    """Wait (5 ms polls on the app's event loop) until done() is true."""
    import asyncio

    while not done():
        await asyncio.sleep(0.005)


def child(run: str, early: bool) -> None:
    """One measurement (the child): JSON marks on the last line of stdout."""
    import asyncio
    import resource

    t0 = time.perf_counter()
    from specterm.app import make_app
    from specterm.widgets.tokens import TokenView

    app = make_app([Path(run)])
    marks: dict = {}

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    async def streams_shown() -> None:
        while True:
            screen = app.screen
            views = screen.query(TokenView) if type(screen).__name__ == "StreamsScreen" else []
            if views and views.first().n > 0:
                return
            await asyncio.sleep(0.002)

    async def main() -> None:
        stall = [0.0]

        async def watch() -> None:  # the longest the event loop (the UI thread) was held
            while True:
                t = time.perf_counter()
                await asyncio.sleep(0.01)
                stall[0] = max(stall[0], time.perf_counter() - t - 0.01)

        async def every_ci() -> None:  # when every CI is there, whatever the keys are waiting for
            await until(lambda: (app.report is not None and not app.ci_pending) or app.error is not None)
            marks["cis_seen_s"] = time.perf_counter() - t0
            await until(lambda: app.report_complete or app.error is not None)  # then the verdicts' borderline check
            marks["full_seen_s"] = time.perf_counter() - t0

        async with app.run_test(size=(120, 36)) as pilot:
            seen = asyncio.create_task(every_ci())
            if early:
                await asyncio.sleep(EARLY_S)
                marks.update(report_at_quit=app.report is not None, q_wall=time.time(), q_t=time.perf_counter())
                seen.cancel()
                app.exit()
                return
            while app.report is None and app.error is None:
                await asyncio.sleep(0.005)
            await pilot.pause()
            marks["table_s"] = time.perf_counter() - t0
            while app.runs is None:
                await asyncio.sleep(0.005)
            t = time.perf_counter()
            await pilot.press("2")
            await streams_shown()
            await pilot.pause()
            marks["streams_s"] = time.perf_counter() - t
            t = time.perf_counter()
            for key in KEYS:
                await pilot.press(key)
            await pilot.pause()
            marks["keys_s"] = time.perf_counter() - t
            while (app.report is None or app.ci_pending) and app.error is None:
                await asyncio.sleep(0.005)
            await pilot.pause()
            marks["cis_s"] = time.perf_counter() - t0
            await seen  # the full report too: the idle measure below starts with no analysis left
            marks["error"] = app.error
            watcher = asyncio.create_task(watch())
            await asyncio.sleep(IDLE_S)
            watcher.cancel()
            marks.update(idle_stall_s=stall[0], rss_before_quit_mb=rss(), q_wall=time.time(), q_t=time.perf_counter())
            await pilot.press("q")
            marks["quit_app_s"] = time.perf_counter() - marks["q_t"]

    asyncio.run(main())
    marks["quit_loop_s"] = time.perf_counter() - marks["q_t"]
    print(json.dumps(marks), flush=True)


def measure(run: Path, cache: Path, early: bool) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT), "SPECTERM_HEADSTART": "0"}
    argv = [sys.executable, __file__, "--child", str(run)] + (["--early"] if early else [])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.time()
    if status != 0:
        raise SystemExit(f"the child for {run.name} failed (status {status})")
    m = json.loads(out.strip().splitlines()[-1])
    m.update(quit_process_s=end - m["q_wall"], peak_rss_mb=usage.ru_maxrss / 1024, cpu_s=usage.ru_utime + usage.ru_stime)
    return m


def main() -> None:
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1], "--early" in sys.argv)
        return
    from _common import md_table, record

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", help=f"any of {', '.join(SHAPES)} (default: all)")
    ap.add_argument("--early", action="store_true", help=f"quit {EARLY_S:g} s after the start (mid-analysis)")
    ap.add_argument("--keep", type=Path, default=None, help="where the runs are (made when missing)")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    shapes = args.shapes or list(SHAPES)
    if set(shapes) - set(SHAPES):
        ap.error(f"a shape is one of {', '.join(SHAPES)}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "runs"
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for shape in shapes:
            m = measure(make_run(folder, shape), Path(tmp) / f"cache-{shape}", args.early)
            print(shape, json.dumps(m), flush=True)
            if args.early:
                rows.append([SHAPES[shape], "yes" if m["report_at_quit"] else "no", f"{m['quit_loop_s']:.2f}",
                             f"{m['quit_process_s']:.2f}", f"{m['peak_rss_mb']:.0f}", f"{m['cpu_s']:.1f}"])
            else:
                rows.append([SHAPES[shape], f"{m['table_s']:.2f}", f"{m['cis_s']:.2f}", f"{m['cis_seen_s']:.2f}",
                             f"{m['full_seen_s']:.2f}", f"{m['streams_s']:.3f}",
                             f"{m['keys_s']:.2f}", f"{m['idle_stall_s']:.2f}",
                             f"{m['quit_loop_s']:.2f} / {m['quit_process_s']:.2f}", f"{m['peak_rss_mb']:.0f}", f"{m['cpu_s']:.1f}"])
    if args.early:
        head = ["shape", "report shown at q", "quit: app s", "quit: process s", "peak RSS MB", "CPU s"]
        title = f"TUI on production shapes: quit {EARLY_S:g} s after the start (issue 39)"
    else:
        head = ["shape", "first table s", "every CI s", "every CI seen s", "borderline checked seen s", "Streams s",
                "7 keys s", "longest UI hold after the full report s",
                "quit s (app / process)", "peak RSS MB", "CPU s"]
        title = "TUI on production shapes (issue 39)"
    notes = ["headless run_test 120x36, no head start (SPECTERM_HEADSTART=0), empty analysis cache per child, B = 2000",
             "every CI: after Streams and its 7 keys (each key waits for an idle CPU, which the analysis denies); "
             "every CI seen: when the app first had every CI (a task beside the keys); borderline checked seen: "
             "when it had the full report (the verdicts checked under bootstrap seeds 1-4, after every CI)",
             "targets for 1 x 5,000,000: peak RSS <= 400 MB, Streams <= 0.5 s, quit <= 1 s"]
    record(title, md_table(head, rows), notes, append=not args.no_append)


if __name__ == "__main__":
    main()
