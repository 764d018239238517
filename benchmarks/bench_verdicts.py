"""The full report with issue 19's verdicts (direction and size, borderline across bootstrap seeds 0..4,
steady state, per-stream warm-up gain) against the same report at a base commit, in the same run.

The base tree is `git archive`d into a temporary folder; each timing is a fresh subprocess that imports
specterm from one tree (PYTHONPATH) and times `analysis.analyse` in-process (best of --repeats, the two
trees interleaved so both see the same background load). Inputs: the shipped Qwen run and a synthetic
run of --size positions (benchmarks/_common.synthetic_streams, ~1000-position Markov streams).
Target (issue 19): ratio <= 1.3.

    python benchmarks/bench_verdicts.py [--base REV] [--size 1000000] [--repeats 3] [--no-append]

--base defaults to `git merge-base HEAD main` (the commit before this branch's change).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import md_table, record

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, time
from specterm.core.report import analysis
try:
    from specterm.core.store import load_run
except ImportError:  # a base from before the store split
    from specterm.core.store import load_run
run = load_run(sys.argv[1])
analysis.analyse([run], gamma=8, boot=2000, shuffles=20, seed=0)  # warm imports and caches
t0 = time.process_time()
analysis.analyse([run], gamma=8, boot=2000, shuffles=20, seed=0)
print(time.process_time() - t0)
"""


def timed(tree: Path, run: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(run)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=None)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True,
                                       text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="specterm-bench-verdicts-") as tmp:
        tree = Path(tmp) / "base"
        tree.mkdir()
        arch = subprocess.run(["git", "archive", base, "specterm"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=arch, check=True)
        from _common import synthetic_streams

        sys.path.insert(0, str(ROOT))
        from specterm.core.store import new_meta, write_run

        synth = write_run(Path(tmp) / "synthetic", {**new_meta("bench"), "cost": {"r_measured": 0.13}},
                          synthetic_streams(args.size, seed=0, beta=True))
        rows = []
        for label, run in (("qwen2.5-coder-0.5b-1.5b", ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b"),
                           (f"synthetic {args.size:,} positions", synth)):
            t_base, t_head = [], []
            for _ in range(args.repeats):
                t_base.append(timed(tree, run))
                t_head.append(timed(ROOT, run))
            b, h = min(t_base), min(t_head)
            rows.append([label, f"{b:.2f}", f"{h:.2f}", f"{h / b:.2f}"])
            print(f"{label}: base {b:.2f} s, head {h:.2f} s, ratio {h / b:.2f}", flush=True)
    table = md_table(["run", f"base {base[:7]} CPU s", f"head {head} CPU s", "ratio head / base"], rows)
    notes = [f"best of {args.repeats} process-CPU timings of analyse(gamma=8, boot=2000, shuffles=20, seed=0), "
             "base and head interleaved, one BLAS thread", "target (issue 19): ratio <= 1.3"]
    record("Verdicts (issue 19): full report against the commit before", table, notes, append=not args.no_append)


if __name__ == "__main__":
    main()
