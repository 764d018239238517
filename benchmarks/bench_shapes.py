"""Production shapes (issue 39): `specterm report` cold and warm, and the TUI's first table and every
CI, on synthetic runs of four shapes, each measured in a fresh child process for wall time, CPU
seconds (user + system) and peak RSS, with per-position ratios to the 10M baseline of the same run.

    shape               streams x positions    what
    many short          20,000 x 200           a sample of real traffic (4M positions)
    one long            1 x 5,000,000          a long-context job
    baseline            10,000 x 1,000         the 10M synthetic run of bench_analytics (the baseline)
    big (--big)         100,000 x 1,000        a GPU run of 100k prompts (100M positions): report only

Runs: two-state Markov streams (_common.markov_bits; per corpus its acceptance level and
autocorrelation, per stream its alpha around it; lengths exact), draft_conf and beta set (as
_common.synthetic_streams with beta), written under a temporary folder in chunks of streams (record
lines appended to prompts.jsonl: the 100M run is 1.2 GB and never in memory at once); the one long
stream is drawn from alternating geometric runs (the same chain, without a Python step per position).

Each child runs with its own empty analysis cache ($XDG_CACHE_HOME in the temporary folder):

    report cold     `python -m specterm report RUN --format json` (stdout discarded), no cache entry:
                    parses, analyses and stores the entry
    report warm     the same command again: the entry of the cold run is read and printed
    TUI table/CIs   the TUI's own load (specterm.loading.Loader.load, what the app's worker runs,
                    without textual and without the head start's second process) with an empty cache:
                    seconds from the child's start to the point estimates (the first table), to
                    the report with every CI (before the borderline check of the verdicts under
                    seeds 1-4) and to the full report; one child, so its CPU and RSS are the whole load's

Wall: from the child's start (fork) to its exit (or to the mark); CPU and peak RSS: os.wait4's rusage
of that child alone. The load average and the CPU model are printed with the table, and how much two
busy CPUs slow each other (cpu_contention: 0.99-1.5x on one EPYC VM within an hour), since the analysis runs
on two threads and its CPU-s carry that factor. The floor rows: `python -c pass`, importing the CLI,
and `specterm report --help` (a command that reads nothing).

    python benchmarks/bench_shapes.py [--big] [--quick] [--repeats 1] [--keep DIR] [--no-append]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CORPORA, cpu_model, markov_bits, md_table, record, run_child

ROOT = Path(__file__).resolve().parents[1]
CHUNK_POSITIONS = 2_000_000  # positions generated and written at once
BASELINE = "10,000 x 1,000"

SHAPES = {  # label: (streams, positions per stream, report only)
    "20,000 x 200": (20_000, 200, False),
    "1 x 5,000,000": (1, 5_000_000, False),
    BASELINE: (10_000, 1_000, False),
}
BIG = ("100,000 x 1,000", (100_000, 1_000, True))
QUICK = {  # --quick: the same kinds of shape, small enough for a smoke test (seconds)
    "400 x 200": (400, 200, False),
    "1 x 50,000": (1, 50_000, False),
    "100 x 1,000": (100, 1_000, False),
}
QUICK_BASELINE = "100 x 1,000"

TUI_CHILD = r"""
import json, sys, time
t = {}
from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES
from specterm.loading import Loader, Shown
def emit(event):
    if isinstance(event, Shown) and event.report is not None:
        t["full" if event.complete else "cis" if event.cis else "point"] = time.time()
params = {"gamma": GAMMA_DEFAULT, "boot": BOOT, "shuffles": SHUFFLES, "seed": SEED}
Loader(params).load([sys.argv[1]], 1, 0, emit)
print(json.dumps(t))
"""


# ------------------------------------------------------------------------------ the runs ---


def long_markov(length: int, alpha: float, rho: float, rng: np.random.Generator) -> np.ndarray:
    """One two-state Markov chain of `length` bits (stationary P(1) = alpha, lag-1 correlation rho,
    as markov_bits) from alternating runs: runs of ones are geometric with P(end) = 1 - p11, runs of
    zeros with P(end) = p10 (p11 = alpha + rho (1 - alpha), p10 = alpha (1 - rho)); the first bit is
    drawn from the stationary law."""
    p11, p10 = alpha + rho * (1 - alpha), alpha * (1 - rho)
    out = np.empty(length, dtype=np.uint8)
    state, at = int(rng.random() < alpha), 0
    while at < length:
        k = max(1024, int(2 * (length - at) * min(1 - p11, p10)) + 16)  # runs drawn per batch
        ones, zeros = rng.geometric(1 - p11, k), rng.geometric(p10, k)
        runs = np.empty(2 * k, dtype=np.int64)
        runs[0::2], runs[1::2] = (ones, zeros) if state else (zeros, ones)
        values = np.empty(2 * k, dtype=np.uint8)
        values[0::2], values[1::2] = state, 1 - state
        bits = np.repeat(values, runs)[: length - at]
        out[at:at + bits.size] = bits
        at += bits.size
    return out


def shape_streams(n: int, length: int, seed: int = 0):
    """Chunks (lists) of Streams: n streams of exactly `length` positions over the 5 corpora, with
    draft_conf and beta (high where a_t = 1), ~CHUNK_POSITIONS positions per chunk."""
    from specterm.core.store import Stream

    rng = np.random.default_rng(seed)
    corpus_of = np.arange(n) % len(CORPORA)
    alpha = np.clip(np.array([0.65, 0.85, 0.8, 0.7, 0.55])[corpus_of] + rng.normal(0, 0.08, n), 0.05, 0.98)
    rho = np.array([0.15, 0.35, 0.3, 0.2, 0.1])[corpus_of]
    per = max(1, CHUNK_POSITIONS // length)
    for c0 in range(0, n, per):
        c1 = min(n, c0 + per)
        if length > 100_000:
            bits = np.stack([long_markov(length, float(alpha[i]), float(rho[i]), rng) for i in range(c0, c1)])
        else:
            bits = markov_bits(c1 - c0, length, alpha[c0:c1], rho[c0:c1], rng)
        ones = bits == 1
        conf = np.where(ones, rng.beta(5, 2, bits.shape), rng.beta(2, 3, bits.shape)).astype(np.float32)
        beta = np.where(ones, rng.beta(8, 1, bits.shape), rng.beta(2, 2, bits.shape)).astype(np.float32)
        yield [Stream(id=f"s{i}", corpus=CORPORA[corpus_of[i]], bits=bits[i - c0], draft_conf=conf[i - c0],
                      beta=beta[i - c0]) for i in range(c0, c1)]


def write_shape(path: Path, n: int, length: int, seed: int = 0) -> Path:
    """A run of `shape_streams(n, length)` at `path`: run.json by write_run (no records), then the
    records appended chunk by chunk (run.json's record count, 0, is a lower bound: it holds)."""
    from specterm.core.store import new_meta, write_run
    from specterm.core.store.records import record_line

    write_run(path, {**new_meta(path.name), "cost": {"r_measured": 0.13}}, [])
    with open(path / "prompts.jsonl", "ab") as fh:
        for chunk in shape_streams(n, length, seed):
            fh.write(b"".join(record_line(s) for s in chunk))
    return path


# ------------------------------------------------------------------------------ children ---


def child(argv: list[str], cache: Path, mark: bool = False) -> dict:
    """Run `argv` (python ...) in a child with its own cache folder; wall s (fork to exit), CPU s
    (user + system) and peak RSS MB from os.wait4 (that child alone); `mark`: the child prints a JSON
    object of time.time() marks on its last line, returned as seconds from its fork."""
    t0, wall, usage, out = run_child(argv, cache, ROOT, capture=mark)
    got = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024.0}
    if mark:
        marks = json.loads(out.decode().strip().splitlines()[-1])
        got.update({k: v - t0 for k, v in marks.items()})
    return got


def measure(run: Path, tmp: Path, report_only: bool, tag: str) -> dict[str, dict]:
    """{measure: {wall, cpu, rss}} of one run: report cold, report warm, and (unless report_only)
    the TUI's load to the first table and to every CI."""
    cache = tmp / f"cache-{tag}"
    shutil.rmtree(cache, ignore_errors=True)
    report = [sys.executable, "-m", "specterm", "report", str(run), "--format", "json"]
    out = {"report cold": child(report, cache), "report warm": child(report, cache)}
    if not report_only:
        shutil.rmtree(cache, ignore_errors=True)
        tui = child([sys.executable, "-c", TUI_CHILD, str(run)], cache, mark=True)
        out["TUI first table"] = {"wall": tui["point"], "cpu": None, "rss": None}
        out["TUI every CI"] = {"wall": tui.get("cis", tui["full"]), "cpu": None, "rss": None}
        out["TUI borderline checked"] = {"wall": tui["full"], "cpu": tui["cpu"], "rss": tui["rss"]}
    shutil.rmtree(cache, ignore_errors=True)
    return out


def python_floor(tmp: Path) -> dict[str, dict]:
    """What any command costs: `python -c pass`, importing the CLI, and a report command that reads
    nothing (`report --help`: typer's parsing of the command line on top of the imports; the warm
    report's floor)."""
    return {"python -c pass": child([sys.executable, "-c", "pass"], tmp / "cache-floor"),
            "python -c 'import specterm.cli'": child([sys.executable, "-c", "import specterm.cli"], tmp / "cache-floor"),
            "specterm report --help": child([sys.executable, "-m", "specterm", "report", "--help"], tmp / "cache-floor")}


SPIN = "import time; t = time.process_time(); x = 0\nfor i in range(10_000_000): x += i\nprint(time.process_time() - t)"


def cpu_contention(rounds: int = 3) -> float:
    """CPU seconds of a fixed pure-Python loop run as two processes at once over the same loop alone
    (medians of `rounds`): 1.0 when two busy vCPUs do not slow each other. On a VM they may (vCPUs on
    one physical core's two hyperthreads, a shared power budget), and then every CPU-s figure of a
    two-thread analysis carries that factor on part of its work: a line in CPU-s moves with the VM."""
    def spin(n: int) -> list[float]:
        procs = [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True) for _ in range(n)]
        return [float(p.communicate()[0]) for p in procs]

    alone = statistics.median(spin(1)[0] for _ in range(rounds))
    pair = statistics.median(statistics.mean(spin(2)) for _ in range(rounds))
    return pair / alone


def profile_report(run: Path, top: int) -> str:
    """cProfile's top functions by own time of a cold report's work in this process, on one thread
    (cProfile sees the calling thread only): the runs parsed, their cache key, the analysis."""
    import cProfile
    import io
    import pstats

    from specterm.core.report import cache
    from specterm.core.report.analysis import analyse
    from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES
    from specterm.core.store import load_run, read_run_files, single_pair

    params = {"gamma": GAMMA_DEFAULT, "boot": BOOT, "shuffles": SHUFFLES, "seed": SEED}
    os.environ["SPECTERM_THREADS"] = "1"
    prof = cProfile.Profile()
    prof.enable()
    pair = single_pair([load_run(run, read_run_files(run))])
    cache.cache_key(pair, params)
    analyse(pair, **params)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    return out.getvalue().strip()


def median_of(runs: list[dict[str, dict]]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for what in runs[0]:
        out[what] = {}
        for k in ("wall", "cpu", "rss"):
            vals = [r[what][k] for r in runs if r[what][k] is not None]
            out[what][k] = statistics.median(vals) if vals else None
    return out


def fmt(x: float | None, spec: str = ".2f") -> str:
    return "" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--big", action="store_true", help="also 100,000 x 1,000 (100M positions, ~1.2 GB on disk): report only")
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke test of the script, seconds)")
    ap.add_argument("--repeats", type=int, default=1, help="children per measure; the median is kept")
    ap.add_argument("--keep", type=Path, default=None, help="write the runs here and keep them (reused when present)")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    ap.add_argument("--profile", metavar="SHAPE", default=None,
                    help="only cProfile a cold report's work on this shape (e.g. '20,000 x 200'), top --top functions")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if args.profile is not None:
        n, length, _ = {**SHAPES, **QUICK, BIG[0]: BIG[1]}[args.profile]
        with tempfile.TemporaryDirectory(prefix="specterm-bench-shapes-") as tmp_name:
            run = (args.keep or Path(tmp_name)) / f"run-{n}x{length}"
            if not (run / "run.json").exists():
                write_shape(run, n, length)
            print(profile_report(run, args.top))
        return
    shapes = dict(QUICK if args.quick else SHAPES)
    base_label = QUICK_BASELINE if args.quick else BASELINE
    if args.big and not args.quick:
        shapes[BIG[0]] = BIG[1]
    load_start = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    contention = cpu_contention()
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="specterm-bench-shapes-") as tmp_name:
        tmp = Path(tmp_name)
        where = args.keep or tmp
        floor = python_floor(tmp)
        for label, (n, length, report_only) in shapes.items():
            run = where / f"run-{n}x{length}"
            if not (run / "run.json").exists():
                t0 = time.perf_counter()
                write_shape(run, n, length)
                print(f"{label}: written in {time.perf_counter() - t0:.1f} s, "
                      f"{(run / 'prompts.jsonl').stat().st_size / 1e6:.0f} MB", flush=True)
            results[label] = median_of([measure(run, tmp, report_only, label.replace(' ', '').replace(',', ''))
                                        for _ in range(args.repeats)])
            print(f"{label}: " + json.dumps({w: {k: round(v, 3) for k, v in d.items() if v is not None}
                                            for w, d in results[label].items()}), flush=True)

    positions = {label: n * length for label, (n, length, _) in shapes.items()}
    base = results[base_label]
    rows = []
    for label, got in results.items():
        for what, m in got.items():
            b = base[what]
            scale = positions[base_label] / positions[label]  # per position, relative to the baseline
            ratio = m["wall"] / b["wall"] * scale
            cpu_ratio = m["cpu"] / b["cpu"] * scale if m["cpu"] is not None else None
            rows.append([label, f"{positions[label]:,}", what, fmt(m["wall"]), fmt(m["cpu"]), fmt(m["rss"], ".0f"),
                         fmt(ratio), fmt(cpu_ratio), fmt(m["rss"] / b["rss"] if m["rss"] is not None else None)])
    for what, m in floor.items():
        rows.append(["", "", what, fmt(m["wall"]), fmt(m["cpu"]), fmt(m["rss"], ".0f"), "", "", ""])
    body = md_table(["shape", "positions", "what", "wall s", "CPU s", "peak RSS MB",
                     f"wall per position / {base_label}", f"CPU per position / {base_label}",
                     f"peak RSS / {base_label}"], rows)
    warm = [f"{label}: warm / cold {got['report warm']['wall'] / got['report cold']['wall']:.2f} (wall)"
            for label, got in results.items()]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip()
    record("Production shapes: report cold/warm and the TUI's load (issue 39)", body, notes=[
        f"tree {head} (+ working changes); CPU model (lscpu): {cpu_model()}; {os.cpu_count()} CPUs",
        f"load average at the start: {load_start}; at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"two busy CPUs: a pure-Python loop takes {contention:.2f}x its CPU time alone when two copies run at once "
        "(cpu_contention; 1.00 = no slowdown): the two-thread analysis's CPU-s carry part of that factor",
        "each measure a fresh child process: wall fork to exit (TUI: to the mark), CPU = user + system and peak RSS "
        "from os.wait4 of that child; per-position ratios: (value / positions) / (baseline value / baseline positions)",
        "report: `python -m specterm report RUN --format json`, cold = empty analysis cache, warm = the same again; "
        "TUI: specterm.loading.Loader.load (the app's worker, no textual, no head start), empty cache; "
        "first table = the point estimates handed over, every CI = the report with every CI (before the "
        "verdicts' borderline check under seeds 1-4), borderline checked = the full report",
        f"median of {args.repeats} child(ren) per measure; " + "; ".join(warm),
    ], append=not args.no_append)


if __name__ == "__main__":
    main()
