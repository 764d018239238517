"""The calibration table (SPEC 6) of one run's decision checks from confirmations made since a date: how a
fresh set of checks covers, apart from the stored ones. The run is copied, its older confirmations are
left out of the copy's run.json (resealed), and the report's calibration rows are printed.

    python benchmarks/calibration_since.py streams/RUN --since 2026-12-07T16:30 [--boot 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
from datetime import datetime
from pathlib import Path

from specterm.core.report.analysis import analyse
from specterm.core.store import load_run, read_meta
from specterm.core.store.writer import write_meta_atomic


def _when(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.astimezone()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--since", required=True, help="ISO date-time; confirmations dated before it are left out")
    ap.add_argument("--boot", type=int, default=2000)
    args = ap.parse_args()
    since = _when(args.since)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / args.run.name
        shutil.copytree(args.run, copy)
        meta = read_meta(copy)
        kept = [c for c in meta.get("confirmations") or [] if _when(str(c.get("date"))) >= since]
        print(f"{args.run.name}: {len(kept)} of {len(meta.get('confirmations') or [])} confirmations since {since:%Y-%m-%d %H:%M %Z}")
        meta["confirmations"] = kept
        meta.pop("settings_confirmations", None)
        write_meta_atomic(copy, meta)
        rep = analyse([load_run(copy)], boot=args.boot, shuffles=0)
    for row in rep.calibration:
        d = dataclasses.asdict(row)
        ratio = d.get("median_ratio")
        print(f"  {d['engine']:10} {d['machine']:45} {d.get('drafter', '')!s:8} checks {d['checks']:3}  in PI {d['in_pi']:3}  "
              f"coverage {d['coverage']:.3f}  median realized/predicted {ratio if ratio is None else round(ratio, 3)}")
        print(f"    {d['reading']}")


if __name__ == "__main__":
    main()
