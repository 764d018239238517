"""Store: load time of ~1M positions with `load_run` (target < 1 s) against `json.loads` of the same
records written as plain JSON lists (the obvious format, measured in the same run), and bytes per
position on disk.

Two record kinds: `bits` (what `specterm import` stores: bits + draft_conf) and `full` (what the
oracle stores: bits, gate, y, draft_argmax, draft_conf, target_conf, beta, text, piece_ends).

    python benchmarks/bench_store.py [--positions 1000000] [--repeats 5] [--kinds bits,full] [--no-append]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


from _common import md_table, record, synthetic_streams
from specterm.core.store import RECORDS_FILE, load_run, new_meta, write_run


def plain_record(s) -> dict:
    """The same record with every array as a JSON list (floats as Python floats)."""
    rec = {"id": s.id, "corpus": s.corpus, "n": s.n, "bits": s.bits.tolist()}
    for name in ("gate", "y", "draft_argmax", "draft_conf", "target_conf", "beta", "piece_ends"):
        val = getattr(s, name)
        if val is not None:
            rec[name] = val.tolist()
    if s.text is not None:
        rec["text"] = s.text
        rec["stop"] = s.stop
    return rec


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def load_plain(path: Path) -> list:
    with open(path, "rb") as fh:
        return [json.loads(line) for line in fh]


def bench_kind(kind: str, positions: int, repeats: int, tmp: Path) -> list:
    streams = synthetic_streams(positions, full=(kind == "full"), seed=1)
    n_pos, n_streams = sum(s.n for s in streams), len(streams)
    run_dir = tmp / f"run-{kind}"
    t0 = time.perf_counter()
    write_run(run_dir, new_meta(run_dir.name), streams)
    t_write = time.perf_counter() - t0
    plain = tmp / f"plain-{kind}.jsonl"
    with open(plain, "w", encoding="utf-8") as fh:
        for s in streams:
            fh.write(json.dumps(plain_record(s), separators=(",", ":")) + "\n")
    del streams
    run = load_run(run_dir)  # check it round-trips before timing
    assert sum(s.n for s in run.streams) == n_pos
    del run
    t_load = median_time(lambda: load_run(run_dir), repeats)
    t_plain = median_time(lambda: load_plain(plain), repeats)
    b_store = (run_dir / RECORDS_FILE).stat().st_size
    b_plain = plain.stat().st_size
    return [kind, n_pos, n_streams,
            f"{t_write:.2f}", f"{t_load:.3f}", f"{t_plain:.3f}", f"{t_load / t_plain:.2f}",
            f"{b_store / n_pos:.2f}", f"{b_plain / n_pos:.2f}", f"{b_store / b_plain:.2f}",
            "yes" if t_load < 1.0 else "NO"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5, help="timed loads per file; the median is reported")
    ap.add_argument("--kinds", default="bits,full", help="comma list of: bits, full")
    ap.add_argument("--no-append", action="store_true", help="print only; do not append to RESULTS.md")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="specterm-bench-store-") as tmp:
        for kind in args.kinds.split(","):
            rows.append(bench_kind(kind.strip(), args.positions, args.repeats, Path(tmp)))
            print(rows[-1], flush=True)
    table = md_table(
        ["records", "positions", "streams", "write_run s", "load_run s", "json.loads lists s (baseline)",
         "ratio load_run / baseline", "bytes/pos store", "bytes/pos lists", "size ratio", "load < 1 s"],
        rows,
    )
    record("Store: load_run vs plain JSON lists", table, [
        f"median of {args.repeats} loads from the page cache (file just written); load_run validates and builds numpy arrays, "
        "the baseline only parses",
        "synthetic Markov streams of ~1000 positions (lengths 900-1100), 5 corpora",
    ], append=not args.no_append)


if __name__ == "__main__":
    main()
