"""The pieces of the GPU check (benchmarks/gpu/check.sh) that are not shell: comparing two runs'
streams, the limits on what the check leaves behind, the summary table, the carried size.

Reads run directories (run.json, prompts.jsonl) and report json directly, with the standard
library and numpy only: it runs before and beside specterm, with the same python.

    python results.py compare RUN_A RUN_B          one json object per pair (see compare_runs)
    python results.py limits DEST                  fails when DEST breaks the limits on results
    python results.py summary WORK                 the markdown summary table (steps.tsv + artifacts)
    python results.py carry-size CARRY REPO        carried bytes + the repository's tracked bytes
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

MAX_RESULT_FILES = 8
MAX_RESULT_BYTES = 16 * 2**20  # 16 MiB per result file
MAX_CARRY_BYTES = 60 * 2**20  # what is copied to the box: the carried folder plus the repository


# ------------------------------------------------------------------------- streams of a run ---


def read_streams(run: Path) -> dict[str, dict[str, Any]]:
    """{id: record} from RUN/prompts.jsonl; the last record of an id wins (a resumed run may
    repeat one); a torn or corrupt line is skipped (`specterm repair` reports those)."""
    out: dict[str, dict[str, Any]] = {}
    for line in (run / "prompts.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("id"), str) and isinstance(rec.get("bits"), str):
            out[rec["id"]] = rec
    return out


def tokens(rec: dict[str, Any]) -> np.ndarray:
    """The continuation y of a record (base64 of little-endian int32), empty when not stored."""
    y = rec.get("y")
    if not isinstance(y, str):
        return np.zeros(0, dtype="<i4")
    return np.frombuffer(base64.b64decode(y), dtype="<i4")


def first_difference(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first index where a and b differ (a length difference counts at the shorter length);
    None when they are equal."""
    n = min(len(a), len(b))
    neq = np.flatnonzero(a[:n] != b[:n])
    if len(neq):
        return int(neq[0])
    return None if len(a) == len(b) else n


def compare_streams(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One stream in two runs. Positions are comparable up to the first position where the two
    continuations y differ (after it the streams describe different text):
    aligned = min(n_a, n_b, first y difference); flips = #{t < aligned : a_t differs}."""
    bits_a = np.frombuffer(a["bits"].encode(), dtype=np.uint8)
    bits_b = np.frombuffer(b["bits"].encode(), dtype=np.uint8)
    y_diff = first_difference(tokens(a), tokens(b))
    aligned = min(len(bits_a), len(bits_b), len(bits_a) if y_diff is None else y_diff)
    flips = int(np.count_nonzero(bits_a[:aligned] != bits_b[:aligned]))
    return {"id": a["id"], "corpus": a.get("corpus"), "n": [len(bits_a), len(bits_b)],
            "identical": a["bits"] == b["bits"] and y_diff is None,
            "first_bit_difference": first_difference(bits_a, bits_b), "first_y_difference": y_diff,
            "aligned": aligned, "flips": flips}


def gate_rate(recs: dict[str, dict[str, Any]]) -> float | None:
    """Share of positions whose gate held, over every stream (None when no record stores a gate)."""
    gates = "".join(r["gate"] for r in recs.values() if isinstance(r.get("gate"), str))
    return gates.count("1") / len(gates) if gates else None


def compare_runs(run_a: Path, run_b: Path) -> dict[str, Any]:
    """Stream by stream over the prompts both runs hold: identical streams (bits and y), streams
    whose y diverges, flipped bits over the aligned positions, and each run's gate rate."""
    ra, rb = read_streams(run_a), read_streams(run_b)
    common = sorted(set(ra) & set(rb))
    streams = [compare_streams(ra[i], rb[i]) for i in common]
    return {"a": str(run_a.name), "b": str(run_b.name), "streams_compared": len(streams),
            "only_in_a": sorted(set(ra) - set(rb)), "only_in_b": sorted(set(rb) - set(ra)),
            "identical": sum(s["identical"] for s in streams),
            "y_diverged": sum(s["first_y_difference"] is not None for s in streams),
            "aligned_positions": sum(s["aligned"] for s in streams),
            "flips": sum(s["flips"] for s in streams),
            "gate_rate": [gate_rate(ra), gate_rate(rb)], "streams": streams}


def compare_line(c: dict[str, Any]) -> str:
    """One sentence for a comparison: '9 of 10 streams identical; 1 y diverged; 2 flips in 630 aligned positions'."""
    return (f"{c['identical']} of {c['streams_compared']} streams identical; {c['y_diverged']} with y diverging; "
            f"{c['flips']} bit flips in {c['aligned_positions']} aligned positions")


# ---------------------------------------------------------------------------------- limits ---


def result_problems(dest: Path, max_files: int = MAX_RESULT_FILES, max_bytes: int = MAX_RESULT_BYTES) -> list[str]:
    """What breaks the limits on the check's results: more than max_files files under dest (any
    depth), or a file above max_bytes. Empty when all is well."""
    files = sorted(p for p in dest.rglob("*") if p.is_file())
    problems = [f"{p.relative_to(dest)} is {p.stat().st_size} bytes, above {max_bytes}" for p in files if p.stat().st_size > max_bytes]
    if len(files) > max_files:
        problems.insert(0, f"{len(files)} files under {dest}, more than {max_files}")
    return problems


def tracked_bytes(repo: Path) -> int:
    """Bytes of the files git tracks in repo (what a clone copies), existing ones only."""
    names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True, capture_output=True).stdout
    total = 0
    for name in names.decode().split("\0"):
        path = repo / name
        if name and path.is_file():
            total += path.stat().st_size
    return total


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def carry_line(carry: int, repo: int, limit: int = MAX_CARRY_BYTES) -> str:
    total = carry + repo
    verdict = "within" if total <= limit else "ABOVE"
    return (f"carried folder {carry / 2**20:.2f} MiB + repository {repo / 2**20:.2f} MiB = {total / 2**20:.2f} MiB, "
            f"{verdict} the {limit / 2**20:.0f} MiB limit")


# --------------------------------------------------------------------------------- summary ---


def read_steps(path: Path) -> list[tuple[str, str, str, str]]:
    """steps.tsv: one line per step, 'name<TAB>status<TAB>seconds<TAB>note' (check.sh writes it)."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = (line.split("\t") + ["", "", "", ""])[:4]
            rows.append((parts[0], parts[1], parts[2], parts[3]))
    return rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table; '|' inside a cell is escaped so a cell never splits."""
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(x: Any, fmt: str = ".3g") -> str:
    return format(x, fmt) if isinstance(x, (int, float)) and not isinstance(x, bool) else "n/a"


def decision_notes(report: dict[str, Any]) -> dict[str, str]:
    """The pooled set's verdict on this hardware (row 'report') and its confirmations (row 'confirm'),
    from `report --format json`."""
    pooled = (report.get("sets") or {}).get("pooled") or {}
    d = pooled.get("decision_hw") or {}
    notes = {"report": str(d.get("verdict") or "no decision on this hardware in the report")}
    confirmed = [f"g = {c.get('gamma')}: realized {_num(c.get('realized'))}x, predicted {_num(c.get('predicted'))}x, "
                 f"{c.get('prompts')} prompts, outputs identical: {c.get('identical')}" for c in d.get("confirmed") or []]
    if confirmed:
        notes["confirm"] = "; ".join(confirmed)
    return notes


def cost_line(run_json: dict[str, Any]) -> str:
    """The run's cost profiles (SPEC 6): how many, and the last one's machine, engine, dtype, c_decode,
    c_draft, whether it was busy, why timing stopped and whether it has the by-batch grid."""
    profiles = [p for p in run_json.get("profiles") or [] if isinstance(p, dict)]
    if not profiles:
        return "no cost profile stored"
    p = profiles[-1]
    device, engine, cost = p.get("device") or {}, p.get("engine") or {}, p.get("cost") or {}
    ms = lambda s: f"{s * 1e3:.3g} ms" if isinstance(s, (int, float)) else "n/a"
    return (f"{len(profiles)} profile(s); last: {device.get('name', '?')} ({device.get('kind', '?')}), {engine.get('name', '?')} "
            f"{engine.get('version', '')}, {p.get('dtype', '?')}: c_decode {ms(cost.get('c_decode_s'))}, c_draft {ms(cost.get('c_draft_s'))}, "
            f"busy {p.get('busy')}, stopped: {p.get('stop_reason')}; by batch: {'yes' if p.get('batch_cost') else 'no'}")


def run_line(run: Path) -> str:
    """prompts, positions, alpha and gate rate of a run, with its device and dtype."""
    recs = read_streams(run)
    bits = "".join(r["bits"] for r in recs.values())
    alpha = bits.count("1") / len(bits) if bits else None
    meta = json.loads((run / "run.json").read_text(encoding="utf-8")) if (run / "run.json").exists() else {}
    return (f"{len(recs)} prompts, {len(bits)} positions, alpha {_num(alpha)}, gate {_num(gate_rate(recs))}; "
            f"{meta.get('gpu') or meta.get('device', '?')} {meta.get('dtype', '?')}")


def summary(work: Path) -> str:
    """The check's last words: one row per step (status, seconds, its result) in markdown. A step's
    result comes from what it left in work: notes/NAME.txt, NAME.json (comparisons), runs/NAME/,
    report.json (report, confirm) and the device run's run.json (costs)."""
    notes: dict[str, str] = {p.stem: p.read_text(encoding="utf-8").strip() for p in sorted((work / "notes").glob("*.txt"))}
    for run in sorted((work / "runs").glob("*/prompts.jsonl")):
        notes.setdefault(run.parent.name, run_line(run.parent))
    for name in ("device_vs_cpu", "bf16_vs_f32"):
        path = work / f"{name}.json"
        if path.exists():
            notes.setdefault(name, compare_line(json.loads(path.read_text(encoding="utf-8"))))
    if (work / "report.json").exists():
        for key, text in decision_notes(json.loads((work / "report.json").read_text(encoding="utf-8"))).items():
            notes.setdefault(key, text)
    run_json = work / "runs" / "device-f32" / "run.json"
    if run_json.exists():
        costs = cost_line(json.loads(run_json.read_text(encoding="utf-8")))
        notes["costs"] = f"{notes['costs']}: {costs}" if "costs" in notes else costs
    rows = [[name, status, seconds, "; ".join(x for x in (note, notes.get(name)) if x)]
            for name, status, seconds, note in read_steps(work / "steps.tsv")]
    return markdown_table(["step", "status", "s", "result"], rows)


def main(argv: list[str]) -> int:
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    if cmd == "compare" and len(args) == 2:
        print(json.dumps(compare_runs(Path(args[0]), Path(args[1])), indent=1))
        return 0
    if cmd == "limits" and len(args) == 1:
        problems = result_problems(Path(args[0]))
        for p in problems:
            print(f"result limit: {p}", file=sys.stderr)
        return 1 if problems else 0
    if cmd == "summary" and len(args) == 1:
        print(summary(Path(args[0])))
        return 0
    if cmd == "carry-size" and len(args) == 2:
        carry, repo = folder_bytes(Path(args[0])), tracked_bytes(Path(args[1]))
        print(carry_line(carry, repo))
        return 0 if carry + repo <= MAX_CARRY_BYTES else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
