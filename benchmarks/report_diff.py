"""Key-by-key diff of two `specterm report --format json` files: every leaf that differs, by path.

Used to check that a speed-up leaves the report's numbers bit-identical (point estimates and CIs),
or that only the Monte Carlo quantities of a changed random stream moved (deficit E_shuf, hetero,
temporal and the evidence and verdicts that quote them). --summary counts the differing leaves
per path with list indices and set names folded.

    specterm report streams/RUN --format json --no-cache > new.json   # in this tree
    (cd BASELINE && PYTHONPATH=$PWD specterm report ... > old.json)    # in the baseline tree
    python benchmarks/report_diff.py old.json new.json [--summary]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
from typing import Any


def leaves_that_differ(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, a value, b value) of every leaf where a and b differ (a missing key counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((f"{path}/{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out += leaves_that_differ(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in leaves_that_differ(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--summary", action="store_true", help="count differing leaves per folded path")
    args = ap.parse_args()
    with open(args.old, encoding="utf-8") as f_old, open(args.new, encoding="utf-8") as f_new:
        diff = leaves_that_differ(json.load(f_old), json.load(f_new))
    if args.summary:
        folded = collections.Counter(re.sub(r"^/sets/[^/]+/", "/sets/*/", re.sub(r"\[\d+\]", "[]", p)) for p, _, _ in diff)
        for p, n in sorted(folded.items()):
            print(f"{n:4d}  {p}")
    else:
        for p, x, y in diff:
            print(p, json.dumps(x)[:100], "->", json.dumps(y)[:100])
    print(f"{len(diff)} differing leaves")


if __name__ == "__main__":
    main()
