"""Append the decision on this hardware of the shipped runs to benchmarks/RESULTS.md (issue 18).

    python benchmarks/decision_results.py [--write]      # prints; --write appends to RESULTS.md

Everything is read from `specterm report` (the Decision section: the one decision table with its
95% CIs, S_hw by batch, the confirmations) plus the stored batch-cost measurement of each run (wall
time of the whole measurement, the fit's error on the held-back grid points), and a checklist of
issue 18's "Done when" computed from the same report.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = [ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b", ROOT / "streams" / "smollm2-135m-selfdraft-l25"]


def section(run_dir: Path) -> list[str]:
    from specterm.core.report.analysis import analyse
    from specterm.core.report.export import markdown_tables
    from specterm.core.store import load_run

    report = analyse([load_run(run_dir)], gamma=8, boot=2000, shuffles=20, seed=0)
    cmd = f"`specterm report {run_dir.relative_to(ROOT)} --format md` (B = 2000, seed 0), Decision section:"
    out = [f"### `{run_dir.relative_to(ROOT)}`", "", cmd, "",
           markdown_tables(report)["decide"].strip(), ""]
    pooled = report.pooled.decision_hw
    fit = pooled.batch_fit if pooled is not None else None
    if fit:
        held = "; ".join(f"B={h['batch']} g={h['gamma']}: measured {h['measured_s']:.3f} s, fit {h['fit_s']:.3f} s "
                         f"({h['error_pct']:+.1f}%)" for h in fit["held_back"])
        whole, upfront = fit.get("whole_wall_s"), fit.get("upfront_wall_s")
        took = (f"the whole measurement (g curve at B = 1 and the batch grid) took {whole:.1f} s wall, the batch grid "
                f"{fit['wall_s']:.1f} s of it" if isinstance(whole, (int, float)) else
                f"the batch grid took {fit['wall_s']:.1f} s wall (the g curve's rounds not recorded with it)")
        if isinstance(upfront, (int, float)):
            took += (f"; {upfront:.1f} s of it before the first generation, the grid's {fit['wall_s']:.1f} s in slices "
                     f"between the prompts (interleaved with generation)")
        out += [f"Costs by batch: {took} (target <= 90 s on this 2-core CPU), {fit['clock']} clock, context "
                f"{fit['context']}; {fit.get('method') or 'fit'}; RMS relative residual {100 * fit['fit_rms_rel']:.1f}% "
                f"on the fitted points; held back (timed, not fitted): {held or 'none (a dense grid: every c_verify(g, B) timed, the fit unused)'}.", ""]
    out += checklist(report)
    return out


def _f2(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def checklist(report) -> list[str]:
    """Issue 18's "Done when", computed from the report."""
    lines = ["Done when, from this report:", ""]
    bad = [n for n, s in report.ordered_sets() if s.decision_hw and s.decision_hw.verdict_kind == "speculate"
           and s.decision_hw.speedup_hw_ci[0] is not None and s.decision_hw.speedup_hw_ci[0] <= 1]
    lines.append(f"- no 'speculate' verdict whose CI contains 1: {'yes' if not bad else 'NO: ' + ', '.join(bad)}")
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None or not d.measured or name == "pooled":
            continue
        at = d.confirmed_at(d.gamma_hw)
        if at is None:
            lines.append(f"- {name}: g_hw = {d.gamma_hw} not confirmed")
            continue
        dp = at.decision_predicted
        drift = at.cost_drift_pct or {}
        lines.append(
            f"- {name}: confirmed at g_hw = {d.gamma_hw} ({at.prompts} prompts): realized {at.realized:.2f}x, decision "
            f"predicts {dp.value:.2f}x [{dp.ci[0]:.2f}, {dp.ci[1]:.2f}] -> in PI {at.in_ci}, sign held {at.sign_held}; "
            f"cost-model check at the in-generation costs {_f2(at.ratio_insitu)} (0.90-1.10: "
            f"{at.ratio_insitu is not None and 0.90 <= at.ratio_insitu <= 1.10}), at the micro-benchmark's "
            f"{at.ratio:.2f} (0.90-1.10: {0.90 <= at.ratio <= 1.10}; CPU time {_f2(at.ratio_cpu)}, "
            f"prefills left out {_f2(at.ratio_steady)}); cost drift "
            f"decode {drift.get('c_decode', float('nan')):+.0f}%, verify {drift.get('c_verify', float('nan')):+.0f}%, "
            f"draft {drift.get('c_draft', float('nan')):+.0f}%")
    pooled = report.pooled.decision_hw
    if pooled is not None and pooled.by_batch:
        lines.append(f"- S_hw by batch shown; B_hw = {pooled.batch_crossover_text if pooled.batch_crossover is None else pooled.batch_crossover}")
    return lines + [""]


def main() -> None:
    import os

    head = ["## Decision on this hardware: interval, batch, out-of-sample confirmation (issue 18)", "",
            f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
            (f"- machine: {platform.machine()}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.2f}, "
             f"Python {platform.python_version()}"),
            "- command: `python benchmarks/decision_results.py --write` (from `specterm report`, B = 2000, seed 0)",
            ("- confirmations: `specterm confirm RUN -k 2 -n 64|128 [--decision-only] --batch-costs --threads 1` "
             "(every corpus, 2 prompts, batch 1), costs by batch with `--batch-costs --costs-only`, and "
             "`specterm confirm RUN -k 4 -n 64 --corpus code --batch 4` on the Qwen run"), ""]
    body = [line for run in RUNS for line in section(run)]
    text = "\n".join(head + body) + "\n"
    if "--write" in sys.argv:
        path = ROOT / "benchmarks" / "RESULTS.md"
        with path.open("a", encoding="utf-8") as f:
            f.write("\n" + text)
        print(f"appended to {path}")
    else:
        print(text)


if __name__ == "__main__":
    main()
