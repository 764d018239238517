"""Same-run A/B of the full report: this tree against a baseline commit, on the same stored run.

The baseline is checked out into a temporary `git worktree` (removed afterwards). One synthetic run
(1M positions, 5 corpora, draft_conf and beta set) is written once with this tree's store; each
round then times the full report (analyse: gamma 8, B = 2000, 20 shuffles, all corpora + pooled)
in a fresh subprocess per tree, baseline first then this tree, alternating, so both see the same
background load. A subprocess reports the best of --repeats reports; the result is the median over
rounds of each tree's best, and the ratio this / baseline, for wall time and for CPU (process) time.

    python benchmarks/bench_analytics_ab.py [--baseline bacf634] [--size 1000000] [--rounds 4] [--repeats 3] [--no-append]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import md_table, record, synthetic_streams
from specterm.core.store import new_meta, write_run

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, time
from specterm.core.report import analysis
from specterm.core.store import load_run
import specterm
assert specterm.__file__.startswith(sys.argv[1]), specterm.__file__
run = load_run(sys.argv[2])
wall = cpu = float("inf")
for _ in range(int(sys.argv[3])):
    t0, c0 = time.perf_counter(), time.process_time()
    analysis.analyse([run], gamma=8, boot=2000, shuffles=20, seed=0)
    wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
print(wall, cpu)
"""


def time_tree(tree: Path, run: Path, repeats: int) -> tuple[float, float]:
    """(best wall s, best CPU s) of `repeats` full reports in a subprocess that imports specterm from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(run), str(repeats)], env=env, cwd=tree,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    wall, cpu = out.stdout.split()[-2:]
    return float(wall), float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="bacf634", help="git revision timed as the baseline")
    ap.add_argument("--size", type=int, default=1_000_000, help="positions in the synthetic run")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="reports per subprocess; the best is kept")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="specterm-ab-") as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                       check=True, capture_output=True)
        try:
            run = write_run(Path(tmp) / "run", {**new_meta("ab"), "cost": {"r_measured": 0.13}},
                            synthetic_streams(args.size, seed=0, beta=True))
            times: dict[str, list[tuple[float, float]]] = {"baseline": [], "this": []}
            for i in range(args.rounds):
                for key, tree in (("baseline", base), ("this", ROOT)):
                    times[key].append(time_tree(tree, run, args.repeats))
                print(f"round {i + 1}: baseline {times['baseline'][-1]} s, this {times['this'][-1]} s (wall, cpu)", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    med = {k: [statistics.median(t[i] for t in v) for i in (0, 1)] for k, v in times.items()}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = []
    for key, label in (("baseline", f"baseline {args.baseline}"), ("this", f"this tree ({head} + working changes)")):
        rows.append([label, " ".join(f"{t[0]:.3f}" for t in times[key]), f"{med[key][0]:.3f}",
                     f"{med[key][0] / med['baseline'][0]:.2f}", f"{med[key][1]:.3f}", f"{med[key][1] / med['baseline'][1]:.2f}"])
    table = md_table(["tree", "wall s, best of each round", "median wall s", "wall ratio", "median CPU s", "CPU ratio"], rows)
    notes = [f"full report on {args.size:,} synthetic positions (5 corpora + pooled, gamma 8, B = 2000, 20 shuffles), "
             f"the same stored run for both trees",
             f"{args.rounds} rounds, baseline then this tree, one subprocess each, best of {args.repeats} reports per subprocess",
             "CPU = process time (one thread: OMP_NUM_THREADS=1), less sensitive than wall time to other jobs on a shared machine"]
    record(f"Analytics A/B: full report, this tree vs {args.baseline}", table, notes, append=not args.no_append)


if __name__ == "__main__":
    main()
