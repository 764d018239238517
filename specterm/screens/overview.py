"""Overview: the answer first (per corpus, whether to speculate on this machine, or the command that
gets the answer), then the per-corpus table with the pooled row, and what was run, where, with which models."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from specterm.core.report.answer import (DONT, NO_COSTS_HERE, NOT_MEASURED, SPECULATE, TOO_FEW, answers, costs_command,
                                         machine_label)
from specterm.core.report.export import deficit_cell, steady_cells
from specterm.core.report.fmt import MISSING, ci, est, fmt
from specterm.core.params import MIN_PROMPTS, STEADY_FROM
from specterm.core.report.types import POOLED, SEEDS, Report, SetReport
from specterm.screens.base import ReportScreen, drafter_note_line, plural
from specterm.widgets.columns import ci_below, table_width
from specterm.widgets.styles import verdict_markup
from specterm.core.report.fmt import is_num
from specterm.widgets.tables import fill_table, safe

COLUMNS = [
    ("set", "corpus"),
    ("streams", "n"),
    ("positions", "tokens"),
    ("alpha", "alpha [CI]"),
    ("beta", "beta_bar"),
    ("gate", "gate"),
    ("autocorr", "p11-p10 [CI]"),
    ("dispersion", "D/D_geom [CI]"),
    ("deficit", "deficit = hetero + temporal [temporal CI]"),
    ("steady", f"t >= {STEADY_FROM}: p11-p10 [CI]"),
]
MIDDLE = [("set", "corpus"), ("streams", "n"), ("alpha", "alpha"), ("autocorr", "p11-p10"),
          ("dispersion", "D/D_geom"), ("deficit", "deficit = het + temp\n[temp CI]")]
"""Where COLUMNS do not fit (with or without the steady-state p11-p10): tokens, beta_bar, gate and
the steady state left out, CIs on a second line, the header on two lines."""
NARROW = [c for c in MIDDLE if c[0] != "dispersion"]
"""Where MIDDLE does not fit either (80 columns): D/D_geom left out too (Run lengths, key 3, shows
it): the alpha CI made the five numeric columns too wide for 80 columns."""


def narrow_row(cells: list[str], dispersion: bool = True) -> list[str]:
    """A COLUMNS row cut down to MIDDLE (or NARROW without D/D_geom): name, n, alpha, then the
    estimates, each CI below its value."""
    name, n, _tokens, alpha, _beta, _gate, autocorr, disp, deficit, _steady = cells
    return [name, n, ci_below(alpha), ci_below(autocorr), *([ci_below(disp)] if dispersion else []), ci_below(deficit)]


def layout(rows: list[tuple[str, list[str]]], width: int,
           sized: list[tuple[str, list[str]]] | None = None) -> tuple[list[Any], list[Any]]:
    """(columns, rows): the wide table with the steady-state column when it fits in `width` cells,
    else without it, else MIDDLE, else NARROW (a name too long for NARROW then gives way in
    fill_table). `sized`: the rows whose widths choose the layout (default `rows`), cell for cell
    the same shape: pending CIs are measured as the CIs they stand for (see PENDING_WIDTH)."""
    probe = rows if sized is None else sized
    if table_width([label for _, label in COLUMNS], [cells for _, cells in probe]) <= width:
        return COLUMNS, rows
    if table_width([label for _, label in COLUMNS[:-1]], [cells[:-1] for _, cells in probe]) <= width:
        return COLUMNS[:-1], [(key, cells[:-1]) for key, cells in rows]
    if table_width([label for _, label in MIDDLE], [narrow_row(cells) for _, cells in probe]) <= width:
        return MIDDLE, [(key, narrow_row(cells)) for key, cells in rows]
    return NARROW, [(key, narrow_row(cells, dispersion=False)) for key, cells in rows]


PENDING_CI = "[…]"
"""A CI that is being computed: while `app.ci_pending` the report shown holds point estimates only
(boot = 0, every CI None), and its "[n/a]" would read as "this has no CI"."""
NO_CI = f"[{MISSING}]"


PENDING_WIDTH = "[-0.000, 0.000]"
"""What a pending CI is measured as when the layout is chosen: the width of the CIs to come (three
decimals, a negative bound), so that the columns shown do not change when they arrive (measured as
the 3 cells of PENDING_CI, the point-estimate table chose a wider layout that the CIs then broke)."""


def pending_cis(cells: list[str], pending: bool, mark: str = PENDING_CI) -> list[str]:
    """`cells` with each trailing CI "[n/a]" shown as `mark` while the CIs are computed (every CI of
    a point-estimate report is missing, so each is pending, none is from other data); as they are
    otherwise. A value that is itself missing stays "n/a"."""
    if not pending:
        return cells
    return [c[: -len(NO_CI)] + mark if c.endswith(NO_CI) else c for c in cells]


def set_row(s: SetReport) -> list[str]:
    """Cells in the style of `specterm report --format md` (export's own cell formatters)."""
    return [
        fmt(s.n_streams),
        fmt(s.n_positions),
        alpha_cell(s),
        fmt(s.sampling.beta_bar.value if s.sampling is not None else None, 3),
        fmt(s.gate_rate, 3),
        est(s.autocorr, 3, 2, sign=True),
        est(s.dispersion_ratio, 2, 2, suffix="x"),
        deficit_cell(s.deficit),
        steady_cells(s)[0],
    ]


def alpha_cell(s: SetReport) -> str:
    """alpha with its 95% CI (the report's alpha_ci), in the bracket style of the other columns."""
    lo, hi = s.alpha_ci if s.alpha_ci else (None, None)
    if s.alpha is None:
        return fmt(None)
    return f"{fmt(s.alpha, 3)} {ci([lo, hi], 3)}"


def open_streams_for(screen: ReportScreen, corpus: str | None) -> None:
    """Switch to Streams with its list filtered to `corpus` (None or "pooled": every corpus)."""
    app = screen.sapp
    app.streams_corpus = None if corpus in (None, POOLED) else corpus
    app.streams_request = True
    back = app.current_mode
    app.action_switch_screen("streams")
    app.drill_from = back  # Escape on Streams goes back here


def run_lines(report: Report) -> list[str]:
    """One line per run of the report: name, draft -> target, device/dtype, measured r, prompts."""
    lines = []
    for run in report.runs:
        device = " ".join(str(x) for x in (run.device, run.dtype) if x)
        parts = [
            f"[b]{safe(run.name)}[/]",
            f"draft {safe(run.draft or '?')} -> target {safe(run.target or '?')}",
            safe(device or "device ?"),
            f"r = {run.r_measured:.3f}" if is_num(run.r_measured) else "r not measured",
            # a copy of a run (or a run whose prompts another holds) adds none: a prompt counts once
            plural(run.n_streams, "prompt") if run.n_streams else "no prompts of its own (another run holds them; each counts once)",
        ]
        lines.append("  ·  ".join(parts))
    return lines


KIND_MARKUP = {SPECULATE: "b $text-success", DONT: "b $text-error"}
"""The answer's colour: speculate green, do not speculate red, the rest (no reliable gain, too few
prompts, what is missing) in the warning colour."""


def answer_lines(report: Report, pending: bool, width: int) -> list[str]:
    """The Overview's first lines (core.answer): "Speculate on this machine?" with the machine, then per
    corpus (pooled last) its verdict, g and speedup [95% CI], or what is missing and the one command
    that gets it (said once when every corpus misses the same)."""
    rows = answers(report)
    if not rows:
        return []
    if pending:
        return ["[b]Speculate on this machine?[/] [dim]… each verdict rests on a CI, shown when it is done[/]"]
    head = "[b]Speculate on this machine?[/]"
    machines = {s.decision_hw.machine for _, s in report.ordered_sets()
                if s.decision_hw is not None and s.decision_hw.matches_this_machine and s.decision_hw.machine}
    missing = [a for a in rows if a.kind in (NO_COSTS_HERE, NOT_MEASURED)]
    if len(missing) == len(rows) and len({(a.kind, a.command) for a in missing}) == 1:
        a = missing[0]
        what = (f"no costs of this machine ({safe(machine_label(report.this_machine))}): the run's are other machines'"
                if a.kind == NO_COSTS_HERE else "no costs measured: the run holds no cost profile")
        return [f"{head} [b $text-warning]{what}[/]", f"  measure them (1-2 min): [b]{safe(a.command)}[/]"]
    if len(machines) == 1:
        head += f" [dim]costs of {safe(next(iter(machines)))}[/]"
    name_w = max(len(a.corpus) for a in rows)
    lines = [head]
    for a in rows:
        style = KIND_MARKUP.get(a.kind, "b $text-warning")
        lines.append(f"  {safe(a.corpus.ljust(name_w))}  [{style}]{safe(a.text)}[/]")
    # what is missing, and the one command that gets it: said once below the rows
    for command in dict.fromkeys(a.command for a in rows if a.command):
        kinds = {a.kind for a in rows if a.command == command}
        what = (f"a verdict needs {MIN_PROMPTS} prompts per corpus" if kinds == {TOO_FEW}
                else "measure this machine's costs (1-2 min)")
        lines.append(f"  [dim]{what}:[/] [b]{safe(command)}[/]")
    if any(a.busy for a in rows):
        lines.append(f"  [dim](busy): timed on a busy machine; re-measure when it is quiet:[/] "
                     f"[b]{safe(costs_command(report.runs))}[/]")
    return lines


class OverviewScreen(ReportScreen):
    SCREEN_TITLE = "Overview"
    EXPORT_NAME = "overview"
    EXPORT_SECTIONS = ("overview",)
    AUTO_FOCUS = "#overview-table"
    DRAFTER_NOTE_IN_BODY = True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a corpus row: Streams, filtered to that corpus (pooled: every corpus)."""
        open_streams_for(self, event.row_key.value if event.row_key is not None else None)

    def compose_body(self) -> ComposeResult:
        # One scrolling pane: at 80x24 the scorecard lines and the notes lie below the fold.
        with VerticalScroll(id="overview-scroll"):
            yield Static("", id="overview-answer", classes="answer")
            yield Static("", id="overview-meta", classes="meta")
            yield DataTable(id="overview-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="overview-verdicts", classes="note")
            yield drafter_note_line()  # below the answer and the table: the answer comes first (issue 53)
            yield Static("", id="overview-note", classes="note")

    def show_report(self, report: Report) -> None:
        table = self.query_one("#overview-table", DataTable)
        pending = self.sapp.ci_pending
        cells = [(name, set_row(s)) for name, s in report.ordered_sets()]  # the name is never a CI
        columns, rows = layout([(k, [k, *pending_cis(c, pending)]) for k, c in cells], self.avail_width,
                               sized=[(k, [k, *pending_cis(c, pending, PENDING_WIDTH)]) for k, c in cells])
        with self.app.batch_update():
            table.header_height = max(label.count("\n") + 1 for _, label in columns)
            fill_table(table, columns, rows, width=self.avail_width)
        self.query_one("#overview-answer", Static).update("\n".join(answer_lines(report, pending, self.avail_width)))
        self.query_one("#overview-meta", Static).update("\n".join(run_lines(report)))
        if report is not getattr(self, "_drawn_report", None):  # a new report or pair: the pane from its top
            self._drawn_report = report
            pane = self.query_one("#overview-scroll", VerticalScroll)
            self.call_after_refresh(pane.scroll_home, animate=False)
        pooled = report.pooled
        note = [
            "n: prompts; beta_bar: sampling acceptance 1 - TV(p, q) (temperature 1) along the greedy continuation y"
            " (n/a: no beta stored);",
            f"p11-p10: within-prompt autocorrelation (mean over prompts); t >= {STEADY_FROM}: the same past the warm-up;",
            "D/D_geom > 1: run lengths over-dispersed vs geometric;",
            f"deficit at g = {report.params.gamma}: 1 - E_true/E_iid = hetero (across prompts)"
            " + temporal (within; its CI in brackets).",
        ]
        if pooled is not None:
            one_table, simpson = pending_cis([est(pooled.autocorr_pooled, 3, 2, sign=True),
                                              est(pooled.autocorr_simpson, 3, 2, sign=True)], pending)
            note.append(f"pooled: one transition table {safe(one_table)}, Simpson inflation {safe(simpson)}")
        self.query_one("#overview-note", Static).update("[dim]" + "\n".join(note) + "[/]")
        wait = (": each verdict rests on CIs, shown when they are done" if pending
                else ": checking each under bootstrap seeds 1-4" if self.sapp.verdicts_pending else "")
        lines = [f"[dim]scorecard (7 for the evidence){wait}[/]"]
        for seed in SEEDS:  # one line per seed: measurement (P rows), economics (Q rows)
            rows = [p for p in report.scorecard if p.seed == seed]
            if not pending and rows and len({p.verdict for p in rows}) == 1 and rows[0].verdict_kind == "too_few_prompts":
                # every row reads the same "too few prompts (n = K; needs M)": said once for the line
                lines.append(f"{seed:<11}  [b]{safe(rows[0].id)}-{safe(rows[-1].id)}[/] {verdict_markup(rows[0].verdict)}")
                continue
            verdicts = "  ".join(f"[b]{safe(p.id)}[/] " + ("[dim]…[/]" if pending else verdict_markup(p.verdict, p.borderline))
                                 for p in rows)
            if verdicts:
                lines.append(f"{seed:<11}  {verdicts}")
        self.query_one("#overview-verdicts", Static).update("\n".join(lines))
