"""Opening a large run, this tree against a baseline commit (a git worktree) in one run: `load_run`
of the run, and a cold `specterm open RUN` on a pseudo-terminal (bench_tui's instrumented app and
pty, an empty analysis cache each time): the point estimates on screen, then every CI.

The run: ~N synthetic positions (default 10M: a week of one pair's traffic; _common.synthetic_streams
with beta, ~1000 positions a stream), written once with this tree's `write_run` under the temporary
folder and read by both trees. Rounds alternate the trees, so both see the same background load.
Every child runs from the temporary folder, so that `python -m specterm.headstart` (the head start's
child) imports its own tree's specterm, not the one in the current directory.

    python benchmarks/bench_large_open.py [--positions 10000000] [--rounds 3] [--baseline REV] [--no-append]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import bench_tui
from _common import md_table, record, synthetic_streams

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "03bb143"
"""The commit before the large-run work of 2026-12-02 (the head start already in it)."""

LOAD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import specterm
assert specterm.__file__.startswith(sys.argv[1]), specterm.__file__
from specterm.core.store import load_run
load_run(sys.argv[2])
best = float("inf")
for _ in range(2):
    t0 = time.perf_counter(); load_run(sys.argv[2]); best = min(best, time.perf_counter() - t0)
print(best)
"""


def load_time(tree: Path, run: Path, cwd: Path) -> float:
    """Best of two `load_run` calls of `run` in a fresh process importing specterm from `tree`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", LOAD, str(tree), str(run)], capture_output=True, text=True,
                         cwd=cwd, env={**env, "PYTHONPYCACHEPREFIX": str(cwd / "pycache")}, check=True)
    return float(out.stdout)


def open_times(tree: Path, run: Path, tmp: Path, i: int) -> dict:
    """A cold `specterm open RUN` from `tree`: seconds to the point estimates and to every CI."""
    cwd = os.getcwd()
    os.chdir(tmp)  # the head start's `python -m` must not find this checkout's specterm first
    try:
        return bench_tui.measure("specterm", [str(run)], tmp, tree=tree, cache=tmp / f"cache-{tree.name}-{i}",
                                 start_only=True)
    finally:
        os.chdir(cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=float, default=1e7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--baseline-tree", type=Path, default=None, help="where its worktree is (made when missing)")
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()

    from specterm.core.store import new_meta, write_run

    n = int(args.positions)
    base = bench_tui.baseline_tree(args.baseline, args.baseline_tree or Path(tempfile.gettempdir()) / f"specterm-{args.baseline}")
    bench_tui.__file__ = str(Path(bench_tui.__file__).resolve())  # its children are started from the temporary folder
    trees = {"baseline": base, "this tree": ROOT}
    got: dict[str, dict[str, list[float]]] = {name: {"load": [], "point": [], "full": []} for name in trees}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        run = write_run(tmp / f"run-{n}", {**new_meta(f"bench-{n}"), "cost": {"r_measured": 0.13}},
                        synthetic_streams(n, seed=0, beta=True))
        size = sum(f.stat().st_size for f in run.iterdir())
        print(f"run: {n} positions, {size / 1e6:.1f} MB; baseline {args.baseline} at {base}", flush=True)
        for tree in trees.values():  # untimed: fills each tree's bytecode cache
            open_times(tree, run, tmp, -1)
        for i in range(args.rounds):
            for name, tree in trees.items():
                got[name]["load"].append(load_time(tree, run, tmp))
                marks = open_times(tree, run, tmp, i)
                got[name]["point"].append(marks["table"])
                got[name]["full"].append(marks["cis"])
            print(f"round {i + 1}: " + json.dumps({k: {m: round(v[-1], 2) for m, v in d.items()} for k, d in got.items()}),
                  flush=True)

    med = statistics.median
    rows = []
    for what, key in (("load_run of the run", "load"), ("cold open: point estimates on screen", "point"),
                      ("cold open: every CI on screen", "full")):
        b, t = med(got["baseline"][key]), med(got["this tree"][key])
        rows.append([what, f"{b:.2f}", f"{t:.2f}", f"{t / b:.2f}"])
    body = md_table(["what (median s)", f"baseline {args.baseline}", "this tree", "this / baseline"], rows)
    record(f"Opening a large run ({n:,} positions)", body, notes=[
        f"run: {n} synthetic positions, {size / 1e6:.1f} MB (_common.synthetic_streams, beta set)",
        f"{args.rounds} rounds, trees alternating; load_run: best of 2 in a fresh process; the open: bench_tui's "
        "instrumented app on a 120x36 pty, an empty analysis cache, from process start to the frame painted",
        f"load average at the end: {os.getloadavg()[0]:.2f}",
    ], append=not args.no_append)


if __name__ == "__main__":
    main()
