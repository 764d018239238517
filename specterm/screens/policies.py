"""Policies: draft-length policies replayed exactly on the streams (fixed, best fixed, heuristic,
confidence stop, clairvoyant), and per-depth acceptance beside its i.i.d. prediction."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from specterm.core.decide.costmodel import r_or_default
from specterm.core.report.types import Depth, PolicyRow, Report
from specterm.screens.base import ReportScreen, set_bindings
from specterm.widgets.columns import ci_below, fit_text, table_width
from specterm.core.report.fmt import MISSING, fmt, is_num
from specterm.widgets.tables import fill_table, fmt_ci, safe

POLICY_COLUMNS = [
    ("policy", "policy"), ("params", "params"), ("tpb", "tok/block"), ("dpb", "drafted/block"),
    ("T", "T [CI]"), ("best", "vs best fixed [CI]"), ("clair", "vs clairvoyant [CI]"),
]
NARROW_COLUMNS = [("policy", "policy"), ("params", "params"), ("T", "T"), ("best", "vs best fixed"),
                  ("clair", "vs clairvoyant")]
"""Where POLICY_COLUMNS do not fit: tokens and drafted per block left out, CIs on a second line."""
DEPTH_COLUMNS = [("j", "depth j"), ("cond", "P(j acc | 1..j-1 acc)"), ("cond_iid", "iid: alpha"),
                 ("uncond", "P(accepted >= j)"), ("uncond_iid", "iid: alpha^j")]


WHERE_DECISION = "g here: the policy replay's at this r; the decision on measured costs: Decide (6)"
"""Why this screen's best g may differ from Decide's g_hw and the memory-bound reference's (issue 37)."""


def params_text(params: Any) -> str:
    if isinstance(params, dict):
        # r with three decimals as everywhere else (0.177, never 0.18 beside it)
        return " ".join(f"{k}={fmt(v, 3 if k == 'r' else 2) if isinstance(v, float) else v}" for k, v in params.items())
    return "" if params is None else str(params)


def policy_row(row: PolicyRow) -> list[Any]:
    return [
        Text(row.policy),
        Text(params_text(row.params)),
        fmt(row.tokens_per_block, 2),
        fmt(row.drafted_per_block, 2),
        fmt_ci(row.throughput, 2),
        fmt_ci(row.vs_best_fixed, 2),
        fmt_ci(row.vs_clairvoyant, 2),
    ]


def policy_layout(rows: list[tuple[str, list[Any]]], width: int) -> tuple[list[Any], list[Any]]:
    """(columns, rows): every column when they fit in `width` cells, else NARROW_COLUMNS."""
    if table_width([label for _, label in POLICY_COLUMNS], [cells for _, cells in rows]) <= width:
        return POLICY_COLUMNS, rows
    return NARROW_COLUMNS, [(k, [c[0], c[1], ci_below(c[4]), ci_below(c[5]), ci_below(c[6])]) for k, c in rows]


def depth_rows(depth: Depth) -> list[tuple[str, list[str]]]:
    """One row per depth j = 1..g from the set's Depth."""
    cols: list[list[Any]] = [depth.conditional, depth.conditional_iid, depth.unconditional, depth.unconditional_iid]
    n = max((len(c) for c in cols), default=0)
    rows = []
    for j in range(n):
        cells = [fmt_ci(c[j]) if j < len(c) else MISSING for c in cols]
        rows.append((str(j + 1), [str(j + 1), *cells]))
    return rows


class PoliciesScreen(ReportScreen):
    SCREEN_TITLE = "Policies"
    EXPORT_NAME = "policies"
    EXPORT_SECTIONS = ("policies", "depth")
    USES_SET = True

    BINDINGS = set_bindings("policies")
    AUTO_FOCUS = "#policies-table"

    def compose_body(self) -> ComposeResult:
        yield Static("", id="set-bar", classes="set-bar")
        yield Static("", id="where-decision", classes="dim")
        yield DataTable(id="policies-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="depth-title", classes="pane-title")
        yield DataTable(id="depth-table", cursor_type="row", zebra_stripes=True)

    def crumb_r(self) -> float | None:
        report = self.sapp.report
        if report is None:
            return None
        _, s = self.current_set(report)
        return r_or_default(s.r_measured)

    def show_report(self, report: Report) -> None:
        name, s = self.current_set(report)
        rows = [(f"{i}", policy_row(row)) for i, row in enumerate(s.policies)]
        depth = s.depth
        # analyse() replays the policies at the set's measured r, else at its default r.
        r = r_or_default(s.r_measured)
        r_text = f"at r = {r:.3f} (measured)" if is_num(s.r_measured) else f"at r = {r:.3f} (default; no measured r)"
        with self.app.batch_update():
            self.query_one("#set-bar", Static).update(
                f"{self.set_label()}   T = tokens / (blocks + r drafted) {r_text}"
            )
            self.query_one("#where-decision", Static).update(safe(fit_text(WHERE_DECISION, self.avail_width)))
            fill_table(self.query_one("#policies-table", DataTable), *policy_layout(rows, self.avail_width))
            self.query_one("#depth-title", Static).update(
                f"acceptance by depth, g = {depth.gamma} (vs your engine's per-position counters)"
            )
            fill_table(self.query_one("#depth-table", DataTable), DEPTH_COLUMNS, depth_rows(depth))
