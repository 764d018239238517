"""The answer first: per corpus, whether to speculate on this machine (the verdict, g and the speedup
with its interval), or what is missing and the one command that gets it (SPEC 6).

The Overview's first lines and the README's screenshot read these rows; nothing is computed here
that the report does not already hold: each row is the shown profile's decision (DecisionHW) when
that profile is this machine's, else the reason there is none.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from specterm.core.report.fmt import fmt
from specterm.core.decide.machine import Machine
from specterm.core.report.types import DecisionHW, Report, RunSummary
from specterm.core.report.text import printable
from specterm.core.params import MIN_PROMPTS
from specterm.core.store.modelkeys import remembered_models

SPECULATE, DONT, NO_GAIN, TOO_FEW = "speculate", "do_not_speculate", "no_reliable_gain", "too_few_prompts"
NO_COSTS_HERE, NOT_MEASURED = "no_costs_here", "not_measured"


@dataclass(frozen=True)
class Answer:
    """One corpus's answer on this machine. kind: a verdict_kind of SPEC 6 (speculate,
    do_not_speculate, no_reliable_gain, too_few_prompts), or no_costs_here (the run's costs are
    other machines'), or not_measured (no costs at all: imported bits). command: what gets the
    missing answer ("" when the verdict is there)."""

    corpus: str
    kind: str
    gamma: int | None
    speedup: float | None
    ci: tuple[float | None, float | None]
    text: str
    command: str = ""
    busy: bool = False
    """The verdict's profile was timed on a busy machine (its rows say "(busy)", the screen once why)."""


def run_arg(path: str) -> str:
    """A run's path as a person types it in the working folder (relative when inside it), quoted for a shell."""
    p = Path(path)
    try:
        p = p.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        pass
    return printable(shlex.quote(str(p)))


def costs_command(runs: Sequence[RunSummary]) -> str:
    """The one command that measures this machine's costs for `runs`; imported bits (a run that names
    no model) need the models named: `--target T --draft D`."""
    if not runs:
        return "specterm costs RUN"
    paths = " ".join(run_arg(r.path) for r in runs)
    # imported bits name no model: the command names them, unless this machine remembers them already
    imported = any((r.imported or not r.target or not r.draft) and len(remembered_models(r.path)) < 2 for r in runs)
    return f"specterm costs {paths}" + (" --target T --draft D" if imported else "")


def more_prompts_command(runs: Sequence[RunSummary], needs: int = MIN_PROMPTS) -> str:
    """The one command that gives every corpus a verdict: the run resumed with `needs` prompts per corpus
    (the models where this machine remembers them, else as run.json names them); imported bits: import
    more. `specterm run --resume` keeps the prompts already measured."""
    if not runs:
        return f"specterm run ... --limit {needs} --resume"
    r = runs[0]
    if r.imported or not r.target or not r.draft:
        return f"import at least {needs} prompts per corpus (specterm import FILE.jsonl --out NEW)"
    known = remembered_models(r.path)
    target = shlex.quote(known.get("target") or r.target)
    draft = shlex.quote(known.get("draft") or r.draft)
    return printable(f"specterm run --target {target} --draft {draft} --limit {needs} --out {run_arg(r.path)} --resume")


def speed_ci(d: DecisionHW) -> str:
    lo, hi = (d.speedup_hw_ci + [None, None])[:2]
    return f"{fmt(d.speedup_hw, 2)}x [{fmt(lo, 2)}, {fmt(hi, 2)}]"


def answer(corpus: str, d: DecisionHW | None, runs: Sequence[RunSummary]) -> Answer:
    """The answer for one set from its shown decision (see the module docstring)."""
    ci: tuple[float | None, float | None] = (None, None)
    if d is None or not d.measured:
        return Answer(corpus, NOT_MEASURED, None, None, ci, "no costs measured", costs_command(runs))
    if not d.matches_this_machine:
        return Answer(corpus, NO_COSTS_HERE, None, None, ci, "no costs of this machine", costs_command(runs))
    lo, hi = (d.speedup_hw_ci + [None, None])[:2]
    ci = (lo, hi)
    kind = d.verdict_kind or ""
    if kind == TOO_FEW:
        # "too few prompts (n = K)", then the numbers it keeps; the minimum is said once below the rows
        m = re.match(r"too few prompts \(n = (\d+)", d.verdict or "")
        text = f"too few prompts (n = {m.group(1)})" if m else "too few prompts"
        return Answer(corpus, kind, d.gamma_hw, d.speedup_hw, ci, f"{text}: g = {d.gamma_hw}, {speed_ci(d)}",
                      more_prompts_command(runs))
    text = {SPECULATE: f"speculate, g = {d.gamma_hw}: {speed_ci(d)}",
            DONT: f"do not speculate (best g = {d.gamma_hw}: {speed_ci(d)})",
            NO_GAIN: f"no reliable gain (g = {d.gamma_hw}: {speed_ci(d)})"}.get(kind, d.verdict)
    if d.busy_warning:
        text += " (busy)"
    return Answer(corpus, kind, d.gamma_hw, d.speedup_hw, ci, text, busy=bool(d.busy_warning))


def machine_label(key: dict[str, object]) -> str:
    """This machine (Report.this_machine, Machine.key()) as one label: its GPUs where it has some, else
    its CPU and the threads specterm uses per forward ("AMD EPYC, 1 thread")."""
    gpus = key.get("gpus") or []
    if isinstance(gpus, list) and gpus:
        return ", ".join(str(g) for g in dict.fromkeys(gpus))
    cpu, threads = key.get("cpu"), key.get("threads")
    return Machine(cpu=cpu if isinstance(cpu, str) else None, cores=None,
                   threads=threads if isinstance(threads, int) else 1).label()


def answers(report: Report) -> list[Answer]:
    """One Answer per corpus, then the pooled set, in the report's order."""
    return [answer(name, s.decision_hw, report.runs) for name, s in report.ordered_sets()]
