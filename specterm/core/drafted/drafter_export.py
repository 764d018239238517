"""The drafter report and the "Which draft?" comparison as text: Markdown (GitHub tables, CIs in
brackets), plain text (the same tables), JSON (the typed records' to_dict, SPEC 7 keys)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from specterm.core.drafted.drafter_analysis import DrafterReport, DrafterSet
from specterm.core.drafted.which_draft import DraftComparison
from specterm.core.report.types import CalibrationRow, Estimate

YIELD_ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
DECODERS = {  # what each decoder's confirmation timed (run.json drafter_confirmations, engine.name)
    "transformers": "Hugging Face assisted generation with prompt_lookup_num_tokens = g against plain greedy, outputs "
                    "against the run's y",
    "llama.cpp": "llama.cpp's llama-speculative-simple --spec-type ngram-simple at size_m = g against the same binary "
                 "never drafting (plain greedy), outputs against that greedy y' (llama.cpp's numerics, not the run's), "
                 "target calls besides the prefill of prompt[:-1], the walk along y'; where its batched verification "
                 "flips a near-tie the output leaves y' and the counts part from there (run.json keeps where, and the "
                 "walk along the decoder's own output)",
}


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _est(e: Estimate, digits: int = 2) -> str:
    if e.value is None:
        return "—"
    if e.lo is None or e.hi is None:
        return f"{e.value:.{digits}f}"
    return f"{e.value:.{digits}f} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]"


def _ci(value: float | None, ci: list[float | None], digits: int = 2, unit: str = "x") -> str:
    if value is None:
        return "—"
    if ci[0] is None or ci[1] is None:
        return f"{value:.{digits}f}{unit}"
    return f"{value:.{digits}f}{unit} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def drafter_markdown(rep: DrafterReport) -> str:
    """The drafter report: per set the decision, the yield curve, depth, and what does not apply."""
    lines = [f"# specterm report: drafter {rep.drafter}", "",
             f"Target {rep.target or 'unnamed'}; drafter {rep.drafter} ({rep.draft.get('source', '')}); "
             f"runs {', '.join(rep.runs)}. No draft model: at each block start s the drafter proposes d_s from the "
             "context alone; L_s = its accepted run along y, m_s = its length (SPEC 2b). 95% bootstrap CIs over prompts.",
             "", "## Decision on this hardware", ""]
    rows = []
    for name, s in rep.ordered_sets():
        d = s.decision_hw
        rows.append([name, str(s.n_streams), str(s.n_positions), _f(s.proposal_rate), str(d.gamma_hw or "—"),
                     _ci(d.speedup_hw, d.speedup_hw_ci), str(d.gamma_mb or "—"), _ci(d.speedup_mb, d.speedup_mb_ci),
                     "—" if d.c_draft_block_s is None else f"{d.c_draft_block_s * 1e6:.0f} µs", d.verdict])
    lines += _table(["set", "prompts", "positions", "proposal rate", "g_hw", "S_hw", "g_mb", "S_mb (memory-bound ref.)",
                     "drafter per block", "verdict"], rows)
    lines += ["", "S_hw(g) = tokens(g) c_decode / (sum over blocks of [c_verify(d) + o(d)] + blocks c_draft), d = min(g, m_s) "
              "drafted in the block (d = 0: a plain decode step), o(d) the block overhead where the profile has it "
              "(`specterm costs RUN` measures it); the memory-bound reference sets every c_verify(d) to c_decode.", "", "## Tokens per target call E(g)", ""]
    sets = rep.ordered_sets()
    rows = []
    for g in YIELD_ROWS:
        row = [str(g)]
        for _, s in sets:
            y = s.yield_curve[g - 1]
            row.append(_est(y.E))
        rows.append(row)
    lines += _table(["g", *[n for n, _ in sets]], rows)
    lines += ["", "## Drafted tokens per block and their acceptance", ""]
    rows = [[str(g), *[f"{_f(s.yield_curve[g - 1].drafted_per_block)} / {_f(s.yield_curve[g - 1].acceptance)}"
                       for _, s in sets]] for g in YIELD_ROWS]
    lines += _table(["g", *[f"{n}: drafted / accepted share" for n, _ in sets]], rows)
    lines += ["", "## Optimum of the cost-ratio model T(g, r) = tokens / (blocks + r drafted)", ""]
    rs = [row["r"] for row in sets[0][1].optimum] if sets else []
    lines += _table(["set", *[f"r = {r:.2f}" for r in rs]],
                    [[n, *[str(row["gamma_true"]) for row in s.optimum]] for n, s in sets])
    if sets:
        gamma = sets[0][1].depth.gamma
        lines += ["", f"## Acceptance by depth at g = {gamma}", ""]
        rows = []
        for j in range(gamma):
            rows.append([str(j + 1), *[f"{_est(s.depth.conditional[j])} / {_est(s.depth.unconditional[j])}" for _, s in sets]])
        lines += _table(["depth j", *[f"{n}: c_j / P(len >= j)" for n, _ in sets]], rows)
        conf = [(n, c) for n, s in sets for c in s.confirmed]
        if conf:
            lines += ["", "## Confirmed against the real decoder", ""]
            for decoder in sorted({c.decoder for _, c in conf}):
                first = next(c for _, c in conf if c.decoder == decoder)
                lines += [f"{DECODERS.get(decoder, decoder)} ({first.engine}); the decoder is deterministic, so its "
                          "target calls must equal the walk's.", ""]
                mine = [(n, c) for n, c in conf if c.decoder == decoder]
                own = all(c.blocks_walk_own is not None for _, c in mine)
                lines += _table(["set", "g", "prompts", "outputs = greedy", "target calls", "walk's blocks",
                                 *(["walk along its output"] if own else []), "realized", "predicted S_hw(g)"],
                                [[n, str(c.gamma), str(c.prompts), "yes" if c.identical else "NO", str(c.target_calls),
                                  str(c.blocks_walk), *([str(c.blocks_walk_own)] if own else []), _f(c.realized),
                                  _f(c.predicted)] for n, c in mine])
                lines += [""]
            lines.pop()
        lines += calibration_markdown(rep.calibration)
        lines += ["", "## Statistics that do not apply", ""]
        na = sets[0][1].not_applicable
        lines += _table(["statistic", "why"], [[k, v] for k, v in na.items()])
    return "\n".join(lines) + "\n"


def calibration_markdown(rows: list[CalibrationRow]) -> list[str]:
    """The calibration section (as the model report's, settings_tables) of these rows; none without rows."""
    from specterm.core.settings.settings_tables import calibration_rows_table

    table = calibration_rows_table(rows)
    if table is None:
        return []
    title, head, body = table
    return ["", "## Calibration", "", title + ". A drafter's checks (`specterm confirm` on a drafter run; engine "
            "\"hf prompt-lookup\" or \"llama.cpp ngram\") carry a 95% prediction interval for their K prompts built as the model decision "
            "check's: leave-out streams, cost replicates, the drift between sessions.", "", *_table(head, body)]


def drafter_text(rep: DrafterReport) -> str:
    return drafter_markdown(rep).replace("**", "")


def drafter_json(rep: DrafterReport) -> str:
    return json.dumps(rep.to_dict(), indent=2, allow_nan=False) + "\n"


def _set_line(s: DrafterSet) -> str:
    return s.decision_hw.verdict


def comparison_markdown(cmp: DraftComparison) -> str:
    """"Which draft?": per corpus, each run's decision on this hardware, and the best."""
    lines = ["# Which draft?", "", f"Target {cmp.target or 'unnamed'}: runs of different drafters on the same prompts, "
             "each decided on this hardware (S_hw at its own g_hw, 95% CI over prompts and cost samples).", ""]
    rows = []
    for name, entry in cmp.ordered_sets():
        for row in entry.drafters:
            best = " (best)" if entry.best is not None and row.run == entry.best else ""
            rows.append([name, row.run + best, row.drafter, str(row.gamma_hw or "—"),
                         _ci(row.speedup_hw.value, row.speedup_hw.ci), row.verdict])
    lines += _table(["set", "run", "drafter", "g_hw", "S_hw", "verdict"], rows)
    lines += ["", "Best per set: the run whose S_hw is highest; \"clear\" when its CI lies above the runner-up's point "
              "estimate.", ""]
    lines += _table(["set", "best", "by"], [[n, e.best or "—", e.margin or e.note or "—"] for n, e in cmp.ordered_sets()])
    lines += calibration_markdown(cmp.calibration)
    return "\n".join(lines) + "\n"


def comparison_screen_table(cmp: DraftComparison, name: Callable[[str], str] = str) -> tuple[str, list[str], list[list[str]]]:
    """Which draft? as a narrow table (the Decide screen's): per set each run's drafter (`name(drafter)`, the
    best one marked "*"), g_hw, S_hw [CI] and the verdict in words; the margins are `comparison_margins`."""
    from specterm.core.report.export import NO_VERDICT, VERDICT_WORDS

    rows = []
    for set_name, entry in cmp.ordered_sets():
        for row in entry.drafters:
            kind = row.verdict_kind or ""
            words = (VERDICT_WORDS.get(kind) or kind.replace("_", " ")) if row.speedup_hw.value is not None else (
                NO_VERDICT if row.gamma_hw is None else row.verdict)
            best = "* " if entry.best is not None and row.run == entry.best else "  "
            rows.append([set_name, best + name(row.drafter), str(row.gamma_hw or "—"),
                         _ci(row.speedup_hw.value, row.speedup_hw.ci), words])
    return (f"Which draft? Target {name(cmp.target or 'unnamed')}: each run's decision on this machine (S_hw at its "
            "own g_hw, the g column; 95% CI over prompts and cost samples; * the best of the set)",
            ["set", "drafter", "g", "S_hw [95% CI]", "verdict"], rows)


def comparison_margins(cmp: DraftComparison) -> list[tuple[str, str]]:
    """(set, by how much the best leads, or why none is named) per set."""
    return [(n, e.margin or e.note or "—") for n, e in cmp.ordered_sets()]


def comparison_json(cmp: DraftComparison) -> str:
    return json.dumps(cmp.to_dict(), indent=2, allow_nan=False) + "\n"


def as_text(kind: str, obj: Any) -> str:
    """md | text | json of a DrafterReport or a DraftComparison."""
    if isinstance(obj, DrafterReport):
        return {"md": drafter_markdown, "text": drafter_text, "json": drafter_json}[kind](obj)
    md = comparison_markdown(obj)
    return {"md": md, "text": md, "json": comparison_json(obj)}[kind]
