"""A/B of source trees on one run: `specterm report RUN --format json`, cold, tree after tree in each round.

Each child is a fresh process with PYTHONPATH set to its tree (a `git worktree add /tmp/tX REV` of a
commit, or this checkout), an empty analysis cache and bytecode written and read as on a user's
machine; wall time from fork to exit, CPU = user + system from os.wait4. Prints per tree the medians
and, against the first tree, the median of the per-round ratios: children of one round run minutes
apart at most, so a VM that slows down for a while moves both sides of a ratio together. The reports
of the trees are compared byte for byte (a speed-up must not move a number).

    git worktree add /tmp/tbase HEAD~3
    python benchmarks/bench_ab_trees.py RUN /tmp/tbase . --rounds 10 --threads 1

On a VM whose two vCPUs slow each other (bench_shapes' cpu_contention), `--threads 1`
(SPECTERM_THREADS=1) compares the work without that factor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _common import run_child


def child(tree: Path, run: Path, threads: int | None) -> tuple[float, float, bytes]:
    """(wall s, CPU s, stdout) of one cold `specterm report RUN --format json` with `tree` first on the path."""
    env = {} if threads is None else {"SPECTERM_THREADS": str(threads)}
    _, wall, usage, out = run_child([sys.executable, "-m", "specterm", "report", str(run), "--format", "json"],
                                    Path(tempfile.mkdtemp(prefix="specterm-ab-")), tree, env=env, capture=True,
                                    cwd=Path(tempfile.gettempdir()))
    return wall, usage.ru_utime + usage.ru_stime, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a run directory (or anything `specterm report` takes)")
    ap.add_argument("trees", type=Path, nargs="+", help="source trees; the first is the baseline")
    ap.add_argument("--rounds", type=int, default=6, help="children per tree, alternating")
    ap.add_argument("--threads", type=int, default=None, help="SPECTERM_THREADS for every child")
    args = ap.parse_args()
    trees = [t.resolve() for t in args.trees]
    if len(set(trees)) < len(trees):
        ap.error("give each source tree once (a tree twice would be timed as one)")
    runs: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
    outs: dict[Path, bytes] = {}
    for _ in range(args.rounds):
        for t in trees:
            wall, cpu, out = child(t, args.run.resolve(), args.threads)
            runs[t].append((wall, cpu))
            outs.setdefault(t, out)
    print(f"run {args.run}, {args.rounds} rounds, threads {args.threads or 'default'}")
    base = runs[trees[0]]
    for t in trees:
        walls, cpus = [w for w, _ in runs[t]], [c for _, c in runs[t]]
        line = f"{str(t):40s} wall {statistics.median(walls):6.2f} s  CPU {statistics.median(cpus):6.2f} s"
        if t != trees[0]:
            rw = statistics.median(b[0] / a[0] for a, b in zip(base, runs[t]))
            rc = statistics.median(b[1] / a[1] for a, b in zip(base, runs[t]))
            line += f"  per-round ratio to the first: wall {rw:.3f} CPU {rc:.3f}"
        print(line)
    same = all(outs[t] == outs[trees[0]] for t in trees)
    print("reports byte-identical" if same else "REPORTS DIFFER (benchmarks/report_diff.py says where)")


if __name__ == "__main__":
    main()
