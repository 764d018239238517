"""The drift of costs between sessions on one machine (core/decide/hardware/drift.py) of every machine of the
shipped runs with two sessions or more, and their median: the derivation of drift.DEFAULT_SIGMA.

    python benchmarks/drift_default.py [streams/RUN ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from specterm.core.decide.hardware.drift import machine_drift
from specterm.core.decide.hardware.profiles import machine_sessions, run_profiles, same_machine
from specterm.core.store import read_meta


def main(paths: list[str]) -> None:
    sigmas = []
    for path in paths or sorted(str(p.parent) for p in Path("streams").glob("*/run.json")):
        meta = read_meta(Path(path))
        profiles = run_profiles(meta)
        done: list = []
        for p in profiles:
            if any(same_machine(p, q) for q in done):
                continue
            done.append(p)
            d = machine_drift(machine_sessions(meta, p, profiles))
            if d.sessions:
                sigmas.append(d.sigma)
            print(f"{Path(path).name:40} {p.label():60} sessions {d.sessions:2}  sigma {d.sigma:.3f}")
    if sigmas:
        print(f"median over {len(sigmas)} machines with 2+ sessions: {statistics.median(sigmas):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
