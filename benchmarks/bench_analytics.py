"""Analytics at scale: a full `analyse` (all corpora + pooled, B = 2000 bootstrap, 20 shuffles) on 1M and
10M synthetic positions, against the point estimates alone (boot = 0: same shuffles, no resampling),
and the growth ratio 10M / 1M (linear cost: ~10). Target: the full 1M report within 3 s on 2 cores.

Streams: two-state Markov chains of ~1000 positions (5 corpora, per-corpus acceptance and
autocorrelation, draft_conf and beta set), written with `write_run` to a temporary run and loaded back with
`load_run`; the load is timed separately. --profile runs cProfile on the full report at the first
size and prints the top functions.

    python benchmarks/bench_analytics.py [--sizes 1000000,10000000] [--boot 2000] [--shuffles 20] [--repeats 3] [--profile] [--no-append]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

from _common import md_table, peak_rss_mb, record, synthetic_streams
from specterm.core import analysis
from specterm.core.store import load_run, new_meta, write_run


def timed_analyse(run, boot: int, shuffles: int) -> float:
    t0 = time.perf_counter()
    analysis.analyse([run], gamma=8, boot=boot, shuffles=shuffles, seed=0)
    return time.perf_counter() - t0


def profile_report(run, boot: int, shuffles: int, top: int) -> tuple[str, str]:
    """(top functions by own time, the same by cumulative time) of one full report under cProfile."""
    prof = cProfile.Profile()
    prof.enable()
    analysis.analyse([run], gamma=8, boot=boot, shuffles=shuffles, seed=0)
    prof.disable()
    texts = []
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        texts.append(out.getvalue().strip())
    return texts[0], texts[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="comma list of position counts")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--shuffles", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="timings per size; the best (least disturbed) is reported")
    ap.add_argument("--profile", action="store_true", help="cProfile the full report at the first size")
    ap.add_argument("--top", type=int, default=12, help="functions shown by --profile")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    sizes = [int(float(x)) for x in args.sizes.split(",")]

    rows, per_size, prof_text = [], [], None
    with tempfile.TemporaryDirectory(prefix="specterm-bench-analytics-") as tmp:
        for size in sizes:
            t0 = time.perf_counter()
            streams = synthetic_streams(size, seed=0, beta=True)
            t_gen = time.perf_counter() - t0
            path = write_run(Path(tmp) / f"run-{size}", {**new_meta(f"bench-{size}"), "cost": {"r_measured": 0.13}}, streams)
            del streams
            loads, bare, points, fulls = [], [], [], []
            for _ in range(args.repeats):
                run = None
                t0 = time.perf_counter()
                run = load_run(path)
                loads.append(time.perf_counter() - t0)
            n_pos = sum(s.n for s in run.streams)
            for _ in range(args.repeats):  # interleaved so both see the same background load
                bare.append(timed_analyse(run, 0, 0))
                points.append(timed_analyse(run, 0, args.shuffles))
                fulls.append(timed_analyse(run, args.boot, args.shuffles))
            t_load = min(loads)
            t_bare, t_point, t_full = min(bare), min(points), min(fulls)
            if args.profile and not prof_text:
                prof_text = profile_report(run, args.boot, args.shuffles, args.top)
            per_size.append((n_pos, t_load, t_full, t_point))
            rows.append([f"{n_pos:,}", len(run.streams), f"{t_load:.2f}", f"{t_bare:.2f}", f"{t_point:.2f}", f"{t_full:.2f}",
                         f"{t_full / t_point:.2f}", f"{t_full - t_point:.2f}", f"{peak_rss_mb():.0f}"])
            print(f"{n_pos:,} positions: generated {t_gen:.1f} s, load {t_load:.2f} s, point {t_point:.2f} s, "
                  f"full {t_full:.2f} s", flush=True)
            del run

    table = md_table(
        ["positions", "streams", "load_run s", "no shuffles, no bootstrap s", "point estimates s (boot=0)", f"full report s (B={args.boot})",
         "ratio full / point", "bootstrap cost s (full - point)", "peak RSS MB"],
        rows,
    )
    if len(per_size) > 1:
        (n0, l0, f0, p0), (n1, l1, f1, p1) = per_size[0], per_size[-1]
        growth = md_table(
            ["growth", "positions", "load_run", "point estimates", "full report"],
            [[f"{n1:,} / {n0:,}", f"{n1 / n0:.2f}", f"{l1 / l0:.2f}", f"{p1 / p0:.2f}", f"{f1 / f0:.2f}"]],
        )
        table += "\n\n" + growth
    notes = [f"best of {args.repeats} (the machine is shared; min is the least disturbed run), point and full interleaved",
             f"analyse(gamma=8, shuffles={args.shuffles}, seed=0), all 5 corpora + pooled; point = boot=0 (same shuffles); "
             "'no shuffles' = boot=0, shuffles=0 (no hetero/temporal split)",
             "synthetic Markov streams of ~1000 positions, draft_conf and beta set (so the confidence policies and sampling statistics run)",
             "target: full 1M report <= 3 s; linear growth means the 10M/1M ratio ~ the positions ratio"]
    if prof_text:
        table += f"\n\ncProfile of the full report at {per_size[0][0]:,} positions, top {args.top} by own time:\n\n```\n{prof_text[0]}\n```"
    record("Analytics at scale: full report vs point estimates", table, notes, append=not args.no_append)
    if prof_text:
        print(prof_text[1])


if __name__ == "__main__":
    main()
