"""The report's "Engine settings" section (export.py renders it as md and text) and the words the
`specterm settings` command and the Decide screen print. Strings only; the numbers come from the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from specterm.core.report.fmt import MISSING, fmt
from specterm.core.report.types import CalibrationRow, EngineSetting, Estimate, Report
from specterm.core.settings import names as nm

Table = tuple[str, list[str], list[list[str]]]
VERDICT_WORDS = {"speculate": "speculate", "do_not_speculate": "run without speculation",
                 "no_reliable_gain": "run without speculation (no reliable gain)",
                 "too_few_prompts": "too few prompts"}
MODEL_KEYS = {nm.LLAMA_DRAFT_MODEL, nm.SGLANG_DRAFT_MODEL, nm.VLLM_MODEL}


def _est(e: Estimate | None) -> str:
    if e is None or e.value is None:
        return MISSING
    if e.lo is None or e.hi is None:
        return f"{fmt(e.value, 2)}x"
    return f"{fmt(e.value, 2)}x [{fmt(e.lo, 2)}, {fmt(e.hi, 2)}]"


def settings_text(engine: str, settings: dict[str, Any]) -> str:
    """The settings in the engine's own syntax, the draft model's path left to the command."""
    shown = {k: v for k, v in settings.items() if k not in MODEL_KEYS}
    if not shown:
        return MISSING
    if engine == nm.HF:
        return ", ".join(f"{k}={json.dumps(v)}" for k, v in shown.items())
    if engine == nm.VLLM:
        return f"{nm.VLLM_FLAG} '{json.dumps(settings)}'"
    return " ".join(f"{k} {v}" for k, v in shown.items())


def setting_cell(es: EngineSetting) -> str:
    """What to set, or "none" with what the best expressible policy would have been."""
    if es.speculate:
        return settings_text(es.engine, es.settings)
    if es.best:
        return f"none (best: {settings_text(es.engine, es.best.get('settings') or {})})"
    return "none"


def policy_cell(es: EngineSetting) -> str:
    """The policy in a few words: "g = 7", "p_min 0.6 up to 11", "heuristic from 5" (what `y` copies in full)."""
    spec: dict[str, Any] = es.best if not es.speculate and es.best else {"policy": es.policy, "params": es.params}
    kind, p = spec.get("policy"), dict(spec.get("params") or {})
    if kind == "fixed":
        text = f"g = {p.get('gamma')}"
    elif kind in ("confidence", "confidence-inclusive"):
        text = f"tau {fmt(p.get('tau'), 2)} up to {p.get('g_max')}"
    elif kind == "heuristic":
        text = f"heuristic from {p.get('g0')}"
    else:
        return MISSING
    return text if es.speculate else f"none (best: {text})"


def verdict_cell(es: EngineSetting) -> str:
    if es.verdict_kind is None:
        return "no setting" if es.verdict.startswith("no ") else MISSING
    return VERDICT_WORDS.get(es.verdict_kind, es.verdict_kind)


def settings_table(report: Report) -> Table | None:
    rows = []
    for name, s in report.ordered_sets():
        for engine in nm.ENGINES:
            es = s.engine_settings.get(engine)
            if es is None:
                continue
            fixed = f"g = {es.fixed_gamma}: {_est(es.fixed_predicted)}" if es.fixed_gamma is not None else MISSING
            rows.append([name, nm.SOURCES[engine].label, verdict_cell(es), setting_cell(es), _est(es.predicted), fixed,
                         es.source_version])
    if not rows:
        return None
    return ("Engine settings: the best policy each engine can express, priced on the shown cost profile "
            "(predicted speedup [95% CI over prompts and cost samples])",
            ["set", "engine", "verdict", "settings", "predicted", "best fixed g", "names as of"], rows)


def settings_screen_table(report: Report) -> Table | None:
    """The Decide screen's narrow form: set, engine, verdict, policy, predicted (`y` copies the commands)."""
    rows = [[name, nm.SOURCES[engine].label, verdict_cell(es), policy_cell(es), _est(es.predicted)]
            for name, s in report.ordered_sets() for engine in nm.ENGINES
            if (es := s.engine_settings.get(engine)) is not None and es.verdict_kind is not None]
    if not rows:
        return None
    return ("Engine settings on the shown profile (y on a set's row copies its commands)",
            ["set", "engine", "verdict", "policy", "predicted [95% CI]"], rows)


def no_setting_notes(report: Report) -> list[str]:
    """Why engines got no setting (a drafter they cannot run, no positions): each reason once, with the engines."""
    by_reason: dict[str, list[str]] = {}
    for _, s in report.ordered_sets():
        for engine in nm.ENGINES:
            es = s.engine_settings.get(engine)
            if es is not None and es.verdict_kind is None:
                names = by_reason.setdefault(es.verdict, [])
                if nm.SOURCES[engine].label not in names:
                    names.append(nm.SOURCES[engine].label)
    return [f"{', '.join(names)}: {reason}" for reason, names in by_reason.items()]


def calibration_table(report: Report) -> Table | None:
    return calibration_rows_table(report.calibration)


def calibration_rows_table(calibration: Sequence[CalibrationRow]) -> Table | None:
    """The calibration table of these rows (a report's, a drafter report's, or both side by side)."""
    rows = [[c.engine, c.machine, c.drafter, str(c.checks), str(c.in_pi), fmt(c.coverage, 2),
             fmt(c.median_ratio, 2), f"[{fmt(c.ratio_range[0], 2)}, {fmt(c.ratio_range[1], 2)}]", c.reading]
            for c in calibration]
    if not rows:
        return None
    return ("Calibration: decision checks by engine, machine and drafter (realized inside the 95% prediction interval)",
            ["engine", "machine", "drafter", "checks", "in PI", "coverage", "median real/pred", "real/pred range",
             "reading"], rows)


def settings_tables(report: Report) -> list[Table]:
    return [t for t in (settings_table(report), calibration_table(report)) if t is not None]


def engine_block(set_name: str, es: EngineSetting) -> str:
    """Plain text for one set and engine: verdict, command, settings, where the names were read."""
    lines = [f"[{set_name}] {es.verdict}"]
    lines.append(f"  command: {es.command}" if es.command else "  command: none")
    if es.speculate:
        lines.append(f"  settings: {json.dumps(es.settings)}")
    elif es.best:
        lines.append(f"  best expressible (not advised): {json.dumps(es.best.get('settings') or {})}")
    if es.fixed_gamma is not None and es.policy not in ("fixed", "none"):
        lines.append(f"  best fixed g = {es.fixed_gamma}: {_est(es.fixed_predicted)}")
    lines += [f"  note: {n}" for n in es.notes]
    lines.append(f"  names as of {es.source_version} ({es.source})")
    return "\n".join(lines)


def engine_text(report: Report, engine: str, sets: list[str] | None = None) -> str:
    """`specterm settings RUN --engine E`: every set's answer for one engine (or the named sets)."""
    out = [f"{nm.SOURCES[engine].label} settings, {nm.SOURCES[engine].version}"]
    for name, s in report.ordered_sets():
        if sets and name not in sets:
            continue
        es = s.engine_settings.get(engine)
        if es is not None:
            out += ["", engine_block(name, es)]
    return "\n".join(out) + "\n"
