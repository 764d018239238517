"""Analytics at scale, this tree against the commit before issue 21 (950a878, a git worktree) in one
run: the full report (analyse: all corpora + pooled, B = 2000 bootstrap, 20 shuffles) and the point
estimates (boot = 0, the same shuffles) on 1M and 10M synthetic positions, and the growth 10M / 1M;
for this tree also the full report with `on_point` (the point report handed over before the bootstrap).
Targets (issue 21): full report 1M <= 0.7 s, 10M <= 3 s.

Streams: two-state Markov chains of ~1000 positions (5 corpora, per-corpus acceptance and
autocorrelation, draft_conf and beta set), written once with this tree's `write_run`; both trees
load the same stored run. Each round times, in a fresh subprocess per tree (baseline first, then
this tree, alternating, so both see the same background load), the best of --repeats reports,
wall and CPU (process) time; this tree on its default threads (min(2, CPUs), one for a small
report: parallel.analysis_threads) and on one. --profile runs cProfile on this tree's full report
(on one thread: cProfile sees the main thread only) at the first size and prints the top functions.

    python benchmarks/bench_analytics.py [--sizes 1000000,10000000] [--rounds 3] [--repeats 2] [--profile] [--model] [--no-append]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specterm.core.report import analysis
from specterm.core.store import load_run, new_meta, write_run

from _common import md_table, record, synthetic_streams

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "950a878"
STAGE_GAP_S = 0.001  # modeled_wall: main-thread work between two submits that starts a new stage

CHILD = r"""
import json, sys, time
from specterm.core.report import analysis
try:
    from specterm.core.store import load_run
except ImportError:  # the baseline tree (950a878) predates the store package
    from specterm.core.streams import load_run
import specterm
assert specterm.__file__.startswith(sys.argv[1]), specterm.__file__
t0 = time.perf_counter()
run = load_run(sys.argv[2])
out = {"load": time.perf_counter() - t0}
analysis.analyse([run], gamma=8, boot=10, shuffles=2, seed=0)  # imports and first-call costs, not timed
import inspect, os
cases = [("point", 0, {}), ("full", int(sys.argv[4]), {})]
if "on_point" in inspect.signature(analysis.analyse).parameters:  # this tree: the point report handed over first
    cases.append(("full_on_point", int(sys.argv[4]), {"on_point": lambda report: None}))
threaded = hasattr(analysis, "analysis_threads")
if threaded:  # this tree: its default thread count (parallel.analysis_threads) above, and one thread
    cases.append(("full_1thread", int(sys.argv[4]), {}))
for name, boot, kw in cases:
    if threaded:  # this tree's own choice (by size: parallel.PARALLEL_MIN_POSITIONS), and one thread
        if name == "full_1thread":
            os.environ["SPECTERM_THREADS"] = "1"
        else:
            os.environ.pop("SPECTERM_THREADS", None)
    wall = cpu = float("inf")
    for _ in range(int(sys.argv[3])):
        t0, c0 = time.perf_counter(), time.process_time()
        analysis.analyse([run], gamma=8, boot=boot, shuffles=int(sys.argv[5]), seed=0, **kw)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    out[name] = [wall, cpu]
print(json.dumps(out))
"""


def time_tree(tree: Path, run: Path, repeats: int, boot: int, shuffles: int) -> dict:
    """{"load": s, "point": [wall, cpu], "full": [wall, cpu]}: best of `repeats`, in a subprocess
    that imports specterm from `tree` (BLAS and OpenMP on one thread)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(run), str(repeats), str(boot), str(shuffles)],
                         env=env, cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(out.stderr)
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def profile_report(run, boot: int, shuffles: int, top: int) -> tuple[str, str]:
    """(top functions by own time, the same by cumulative time) of one full report under cProfile."""
    prof = cProfile.Profile()
    old = os.environ.get("SPECTERM_THREADS")
    os.environ["SPECTERM_THREADS"] = "1"  # cProfile sees the calling thread only
    try:
        prof.enable()
        analysis.analyse([run], gamma=8, boot=boot, shuffles=shuffles, seed=0)
        prof.disable()
    finally:
        if old is None:
            os.environ.pop("SPECTERM_THREADS", None)
        else:
            os.environ["SPECTERM_THREADS"] = old
    texts = []
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        texts.append(out.getvalue().strip())
    return texts[0], texts[1]


def modeled_wall(run, boot: int, shuffles: int, threads: int) -> tuple[float, float]:
    """(serial CPU s, modeled wall s on `threads` idle cores) of one full report: every task of
    analyse (core/report/parallel.py) timed alone, serially (CPU time), then list-scheduled in submission
    order on `threads` workers stage by stage, plus the main thread's own work (all of it serial,
    also where it overlaps the pool's tasks). A stage: the tasks submitted together; a new one
    begins at each `run_all` and at a `submit` after more than STAGE_GAP_S of the main thread's own
    work (tasks submitted after the main thread computed what they read). Assumes perfect scaling
    (no memory-bandwidth contention, the GIL released throughout): a bound to compare the measured
    wall time with on an idle machine."""
    from specterm.core.report import parallel

    stage, log, last = [0], [], [time.process_time()]
    real_submit, real_run = parallel.submit, parallel.run_all

    def timed(pool, fn):
        c0 = time.process_time()
        if c0 - last[0] > STAGE_GAP_S:
            stage[0] += 1
        out = real_submit(None, fn)
        last[0] = time.process_time()
        log.append((stage[0], last[0] - c0))
        return out

    def staged(pool, fns):
        stage[0] += 1
        last[0] = time.process_time()
        return real_run(pool, fns)

    old_env = os.environ.get("SPECTERM_THREADS")
    os.environ["SPECTERM_THREADS"] = "1"
    analysis.analyse([run], gamma=8, boot=10, shuffles=2, seed=0)  # imports and first-call costs, not timed
    parallel.submit = analysis.submit = timed
    parallel.run_all = analysis.run_all = staged
    try:
        with parallel.one_blas_thread():  # as analyse holds it (whatever OPENBLAS_NUM_THREADS this process was given)
            c0 = last[0] = time.process_time()
            analysis.analyse([run], gamma=8, boot=boot, shuffles=shuffles, seed=0)
            total = time.process_time() - c0
    finally:
        parallel.submit = analysis.submit = real_submit
        parallel.run_all = analysis.run_all = real_run
        if old_env is None:
            os.environ.pop("SPECTERM_THREADS", None)
        else:
            os.environ["SPECTERM_THREADS"] = old_env
    span = total - sum(d for _, d in log)
    for st in sorted({st for st, _ in log}):
        load = [0.0] * threads
        for d in (d for s, d in log if s == st):
            load[load.index(min(load))] += d
        span += max(load)
    return total, span


def baseline_tree(rev: str, where: Path) -> Path:
    """A detached `git worktree` of `rev` at `where` (made once, kept for later runs)."""
    if not (where / "specterm").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
                       check=True, capture_output=True)
    return where


def full_target(n_pos: int, wall: float) -> str:
    """Issue 21's target for the full report: <= 0.7 s below 5M positions, <= 3 s above, and whether it is met."""
    limit = 0.7 if n_pos < 5_000_000 else 3.0
    return f"<= {limit} s: {'yes' if wall <= limit else 'no'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="comma list of position counts")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--shuffles", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="subprocess pairs (baseline, this) per size")
    ap.add_argument("--repeats", type=int, default=2, help="reports per subprocess; the best is kept")
    ap.add_argument("--baseline", default=BASELINE, help="git revision timed as the baseline")
    ap.add_argument("--baseline-tree", type=Path, default=Path(tempfile.gettempdir()) / f"specterm-{BASELINE}")
    ap.add_argument("--profile", action="store_true", help="cProfile this tree's full report at the first size")
    ap.add_argument("--top", type=int, default=12, help="functions shown by --profile")
    ap.add_argument("--model", action="store_true",
                    help="also the modeled wall time on min(2, CPUs) idle cores (modeled_wall), once per size")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    sizes = [int(float(x)) for x in args.sizes.split(",")]
    load_at_start = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    base = baseline_tree(args.baseline, args.baseline_tree)
    med = statistics.median

    rows, growth, prof_text = [], {}, None
    with tempfile.TemporaryDirectory(prefix="specterm-bench-analytics-") as tmp:
        for size in sizes:
            path = write_run(Path(tmp) / f"run-{size}", {**new_meta(f"bench-{size}"), "cost": {"r_measured": 0.13}},
                             synthetic_streams(size, seed=0, beta=True))
            run = load_run(path)
            n_pos, n_streams = sum(s.n for s in run.streams), len(run.streams)
            times: dict[str, list[dict]] = {"base": [], "this": []}
            for i in range(args.rounds):
                for key, tree in (("base", base), ("this", ROOT)):
                    times[key].append(time_tree(tree, path, args.repeats, args.boot, args.shuffles))
                print(f"{n_pos:,} round {i + 1}: full {times['base'][-1]['full'][0]:.2f} s (baseline) "
                      f"vs {times['this'][-1]['full'][0]:.2f} s (this)", flush=True)
            model_row = None
            if args.model:
                threads = max(1, min(2, os.cpu_count() or 1))
                serial, modeled = modeled_wall(run, args.boot, args.shuffles, threads)
                model_row = [f"{n_pos:,}", n_streams, f"full report, modeled on {threads} idle cores (see notes)", "",
                             f"{modeled:.2f}", f"{modeled / serial:.2f} of serial CPU", "", f"{serial:.2f}", "", ""]
            if args.profile and prof_text is None:
                prof_text = profile_report(run, args.boot, args.shuffles, args.top)
            del run

            def m(key: str, what: str, i: int, times: dict[str, list[dict]] = times) -> float:
                return med([t[what][i] for t in times[key]])

            for what in ("full", "point"):
                b_wall, t_wall, b_cpu, t_cpu = m("base", what, 0), m("this", what, 0), m("base", what, 1), m("this", what, 1)
                growth[(size, what)] = (t_wall, b_wall)
                if what == "full":
                    t_full_wall, t_full_cpu = t_wall, t_cpu
                label = f"full report (B = {args.boot})" if what == "full" else "point estimates (boot = 0)"
                target = full_target(n_pos, t_wall) if what == "full" else ""
                rows.append([f"{n_pos:,}", n_streams, label, f"{b_wall:.2f}", f"{t_wall:.2f}", f"{t_wall / b_wall:.2f}",
                             f"{b_cpu:.2f}", f"{t_cpu:.2f}", f"{t_cpu / b_cpu:.2f}", target])
            if all("full_on_point" in t for t in times["this"]):
                o_wall, o_cpu = m("this", "full_on_point", 0), m("this", "full_on_point", 1)
                rows.append([f"{n_pos:,}", n_streams, "full report with on_point (point report first)", "",
                             f"{o_wall:.2f}", f"{o_wall / t_full_wall:.2f} of full", "", f"{o_cpu:.2f}",
                             f"{o_cpu / t_full_cpu:.2f} of full", ""])
            if all("full_1thread" in t for t in times["this"]):
                o_wall, o_cpu = m("this", "full_1thread", 0), m("this", "full_1thread", 1)
                rows.append([f"{n_pos:,}", n_streams, "full report, one thread (SPECTERM_THREADS=1)", "",
                             f"{o_wall:.2f}", f"{t_full_wall / o_wall:.2f} (threads / one)", "", f"{o_cpu:.2f}",
                             f"{t_full_cpu / o_cpu:.2f} (threads / one)", ""])
            if model_row:
                rows.append(model_row)
            rows.append([f"{n_pos:,}", n_streams, "load_run", f"{med([t['load'] for t in times['base']]):.2f}",
                         f"{med([t['load'] for t in times['this']]):.2f}", "", "", "", "", ""])

    table = md_table(["positions", "streams", "what", f"{args.baseline} wall s", "this wall s", "wall ratio",
                      f"{args.baseline} CPU s", "this CPU s", "CPU ratio", "target (this, wall)"], rows)
    if len(sizes) > 1:
        s0, s1 = sizes[0], sizes[-1]
        g = [[f"{s1:,} / {s0:,}", what, f"{growth[(s1, what)][1] / growth[(s0, what)][1]:.2f}",
              f"{growth[(s1, what)][0] / growth[(s0, what)][0]:.2f}"] for what in ("full", "point")]
        table += "\n\n" + md_table(["growth", "what", args.baseline, "this"], g)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    notes = [(f"this tree {head} (+ working changes) against {args.baseline} (the commit before issue 21) in a git worktree; "
              f"{args.rounds} rounds per size, baseline then this tree, one subprocess each, best of {args.repeats} reports "
              "per subprocess, median over rounds"),
             f"analyse(gamma=8, shuffles={args.shuffles}, seed=0), all 5 corpora + pooled; point = boot=0 (same shuffles)",
             "synthetic Markov streams of ~1000 positions, draft_conf and beta set; OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1; "
             "this tree's analyse runs its tasks on its default threads (min(2, CPUs); one below 200k positions, 3M for the "
             "point estimates: parallel.PARALLEL_MIN_POSITIONS; the baseline has one), "
             "and once more on one thread for the row 'one thread'",
             f"CPUs: {os.cpu_count()}; the other jobs on the machine at the start: see the load average",
             "CPU = process time, less sensitive than wall time to the other jobs on this shared machine: compare ratios",
             "modeled (--model): every task of the report timed alone (CPU), list-scheduled stage by stage on the "
             "idle cores, plus the main thread's own work; perfect scaling assumed (a bound, not a measurement)",
             f"load average at the start: {load_at_start}"]
    if prof_text:
        table += f"\n\ncProfile of this tree's full report at {sizes[0]:,} positions, top {args.top} by own time:\n\n```\n{prof_text[0]}\n```"
    record("Analytics at scale: full report, this tree vs the commit before issue 21", table, notes, append=not args.no_append)
    if prof_text:
        print(prof_text[1])


if __name__ == "__main__":
    main()
