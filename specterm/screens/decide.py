"""Decide: first the decision of the shown cost profile (SPEC 6: a decision belongs to a machine; the
report's decision_by_profile[id], `p` steps through the run's profiles, the one matching this
machine first): g_hw, S_hw [95% CI], the verdict, the break-even v*, the memory-bound reference as a
labelled column; then the verdict sentences, every profile's decision side by side (export
profile_table), S_hw by batch, the confirmations (cost-model and decision checks). A run without
measured costs gets no verdict: the memory-bound reference as a reference, and the command that
measures costs. Below, the cost-ratio model at a chosen r with the roofline B* = I*/(g+1) of an
accelerator preset or a custom ridge: the measurement seed's convention, never a decision."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Static

from specterm.core.errors import SpectermError
import dataclasses

from specterm.core.report.export import (batch_table, confirmation_table, decision_table, markdown_table, profile_table)
from specterm.core.params import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_RIDGE, R_GRID
from specterm.core.report.types import Report
from specterm.core.report.answer import costs_command
from specterm.screens.base import ReportScreen, RStepping, costs_text, fit_costs, r_bindings
from specterm.core.report.fmt import MISSING, ci, fmt, is_num
from specterm.widgets.tables import fill_table, fit_text_table, safe

COLUMNS = [("set", "corpus"), ("g_hw", "g_hw"), ("s_hw", "S_hw [95% CI]"), ("kind", "verdict"),
           ("vstar", "v* (measured)"), ("mb", "mem-bound ref.")]
CI_COLUMNS = [2, 5]  # S_hw and the memory-bound reference: their CIs go below the value when narrow
COST_RATIO_HEAD = ["set", "g*_true", "T", "g*_iid", "iid promise", "iid in fact", "roofline B*"]


def escape_md(text: str) -> str:
    return text.replace("*", "\\*")


def speed(x: Any) -> str:
    return f"{x:.2f}x" if is_num(x) else MISSING


def _text_block(table: Any, width: int = 10_000) -> list[str]:
    """A core export table as markup lines: its title in bold, then the table laid out to fit
    `width` cells (widgets.tables.fit_text_table: no line wraps mid row), escaped."""
    if table is None:
        return []
    title, head, rows = table
    return ["", f"[b]{safe(title)}[/]", *(safe(line) for line in fit_text_table(head, rows, width))]


def decision_rows(report: Report) -> list[tuple[str, list[str]]]:
    """The decision table's rows (core export.decision_table) without the verdict sentence."""
    table = decision_table(report)
    return [] if table is None else [(r[0], r[:-1]) for r in table[2]]


def ci_below(rows: list[tuple[str, list[str]]], columns: list[int], width: int) -> list[tuple[str, list[str]]]:
    """The rows as they fit `width` cells: when the one-line table is wider, the CI brackets of the
    `columns` move to a second line of their cell ("1.04x [0.95, 1.13]" -> "1.04x" over "[0.95, 1.13]"),
    so the memory-bound column stays on screen at 80 columns instead of a number being cut."""
    if not rows:
        return rows
    n = len(rows[0][1])
    widths = [len(COLUMNS[i][1]) for i in range(n)]
    for _, cells in rows:
        widths = [max(w, len(str(c))) for w, c in zip(widths, cells)]
    if sum(widths) + 2 * n <= width:
        return rows
    out = []
    for key, cells in rows:
        cells = list(cells)
        for i in columns:
            text = str(cells[i])
            if " [" in text:
                head, _, tail = text.partition(" [")
                cells[i] = f"{head}\n[{tail}"
        out.append((key, cells))
    return out


def hardware_verdicts(report: Report) -> str:
    """One line per set: the verdict sentence on this hardware (SPEC 6), under the table."""
    table = decision_table(report)
    if table is None:
        return ""
    return "\n".join(f"[b]{safe(r[0])}[/]: {safe(r[-1])}" for r in table[2])


def hardware_card(report: Report, width: int = 10_000) -> str:
    """S_hw by batch and the confirmations (cost-model and decision checks) as text tables."""
    return "\n".join(_text_block(batch_table(report), width) + _text_block(confirmation_table(report), width))


def engine_settings_block(report: Report, view: Report, width: int = 10_000, drafter_rows: Any = ()) -> str:
    """The engine settings (core/settings: the best policy each serving engine can express, on the
    profile matching this machine) and the calibration table, as text tables; `y` on a set's row copies
    that set's commands (`DecideScreen.copy_markdown`)."""
    from specterm.core.settings.settings_tables import calibration_rows_table, no_setting_notes, settings_screen_table

    if view is not report:
        lines = ["", "[b]Engine settings[/] are priced on the report's own profile: press p until it shows again."]
    else:
        lines = _text_block(settings_screen_table(report), width)
        notes = no_setting_notes(report)
        if notes:
            lines += ["", "[b]Engine settings[/]: " + safe(notes[0]), *(safe(n) for n in notes[1:])]
    return "\n".join(lines + _text_block(calibration_rows_table([*report.calibration, *drafter_rows]), width))


def which_draft(app: Any, report: Report | None) -> tuple[Any, list[str]]:
    """Which draft? of the drafter runs given beside the pair shown (core which_draft.beside_pair, as
    `specterm report` compares them) and the drafter runs of another target; (None, []) without drafters."""
    from specterm.core.drafted.which_draft import beside_pair

    if not app.drafters:
        return None, []
    runs = app.runs or []
    meta = runs[0].meta if runs else app.pair_meta
    return beside_pair(app.drafters, report, meta, "+".join(r.path.name for r in runs))


def which_draft_block(app: Any, report: Report | None, width: int = 10_000) -> str:
    """Which draft? as text: the table (each run's decision, the best marked), then per set by how much."""
    from specterm.core.drafted.drafter_export import comparison_margins, comparison_screen_table

    from specterm.core.settings.settings_tables import calibration_rows_table

    cmp, other = which_draft(app, report)
    lines: list[str] = []
    if cmp is not None:
        from specterm.screens.base import short_model

        lines += _text_block(comparison_screen_table(cmp, short_model), width)[1:]
        lines += ["", *(f"[b]{safe(n)}[/]: {safe(m)}" for n, m in comparison_margins(cmp))]  # a blank line ends the table
        if report is None:  # only drafter runs: their calibration here (else under the engine settings)
            lines += _text_block(calibration_rows_table(cmp.calibration), width)
    if other:
        lines.append("Drafter runs of another target, not compared here: " + safe(", ".join(other)))
    return "\n".join(lines)


def set_settings_markdown(report: Report, set_name: str) -> str:
    """One set's engine settings as markdown: per engine its verdict and the command to run."""
    from specterm.core.settings import names as nm

    s = report.sets.get(set_name)
    if s is None or not s.engine_settings:
        return ""
    out = [f"### Engine settings, {set_name}", ""]
    for engine in nm.ENGINES:
        es = s.engine_settings.get(engine)
        if es is None:
            continue
        out += [f"**{nm.SOURCES[engine].label}** ({es.source_version}): {es.verdict}", "", "```", es.command or "", "```", ""]
    return "\n".join(out)


def profile_ids(report: Report) -> list[str]:
    """The run's cost profiles that hold a decision, in the report's order (Report.profiles)."""
    held = {pid for _, s in report.ordered_sets() for pid in s.decision_by_profile}
    return [str(p["id"]) for p in report.profiles if str(p.get("id")) in held]


def shown_profile(report: Report) -> str | None:
    """The profile whose decision the report shows (DecisionHW.profile of its sets), if any."""
    return next((s.decision_hw.profile for _, s in report.ordered_sets()
                 if s.decision_hw is not None and s.decision_hw.profile), None)


def profile_view(report: Report, pid: str | None) -> Report:
    """The report with each set's decision_hw replaced by that profile's (decision_by_profile[pid]):
    a choice among the decisions the analysis made, never a new computation."""
    if pid is None or pid == shown_profile(report):
        return report
    sets = {name: dataclasses.replace(s, decision_hw=s.decision_by_profile.get(pid, s.decision_hw))
            for name, s in report.sets.items()}
    return dataclasses.replace(report, sets=sets)


def costs_measured(report: Report) -> bool:
    """Whether the shown decisions rest on measured costs (every set's DecisionHW.measured)."""
    ds = [s.decision_hw for _, s in report.ordered_sets() if s.decision_hw is not None]
    return bool(ds) and all(d.measured for d in ds)


def reference_rows(report: Report) -> list[tuple[str, list[str]]]:
    """Without measured costs: per set only the memory-bound reference (its g and S [CI]), no verdict."""
    rows = []
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None:
            continue
        mb = MISSING if d.gamma_mb is None else f"g={d.gamma_mb}: {speed(d.speedup_mb)} {ci(d.speedup_mb_ci, 2)}"
        rows.append((name, [name, MISSING, MISSING, "none", MISSING, mb]))
    return rows


class DecideScreen(RStepping, ReportScreen):
    SCREEN_TITLE = "Decide"
    EXPORT_NAME = "decide"
    EXPORT_SECTIONS = ("decide", "settings")
    AUTO_FOCUS = "#decide-table"
    SHOWS_DRAFTERS = True
    """Which draft? shows the drafter runs given beside the pair's decision (core/drafted/which_draft.py)."""
    PAIR_STATE = ("r", "preset", "ridge_custom", "profile")
    NEEDS_CIS = True
    """Every row is a decision on the CI of S_hw: while the bootstrap runs, the point-estimate report
    would decide without one (and say "no interval: bootstrap off"), so the screen waits, as the
    Scorecard does."""

    BINDINGS = [
        Binding("p", "next_profile(1)", "profile", id="decide.profile",
                tooltip="The decision of the run's next cost profile (machine, threads, engine)"),
        Binding("P", "next_profile(-1)", "prev profile", show=False, id="decide.profile_prev"),
        Binding("a", "accelerator(1)", "accel", id="decide.accelerator", tooltip="Next accelerator preset"),
        Binding("A", "accelerator(-1)", "prev accelerator", show=False, id="decide.accelerator_prev"),
        Binding("i", "custom_ridge", "ridge", id="decide.ridge", tooltip="Type a ridge I* in FLOP/byte"),
        *(dataclasses.replace(b, show=False) for b in r_bindings("decide", " (the cost-ratio model below)", show_measured=False)),
        Binding("escape", "leave_input", "back", show=False, id="decide.leave_input"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.presets = list(ACCELERATORS)
        self.preset: str = DEFAULT_ACCELERATOR
        self.ridge_custom: float | None = None
        self.r: float | None = None
        self.profile: str | None = None
        """The cost profile whose decision is shown (None: the report's own, the one matching this machine)."""

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="decide-bar"):
            yield Static("", id="accelerator")
            box = Input(placeholder="ridge FLOP/byte", id="ridge-input", type="number")
            box.display = False
            yield box
        yield DataTable(id="decide-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="verdict-scroll"):
            yield Static("", id="profile-note")
            yield Static("", id="which-draft")
            yield Static("", id="hw-verdicts")
            yield Static("", id="verdicts")
            yield Static("", id="engine-settings")
            yield Static("", id="hw-card")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a corpus row: Streams, filtered to that corpus (pooled: every corpus)."""
        from specterm.screens.overview import open_streams_for

        open_streams_for(self, event.row_key.value if event.row_key is not None else None)

    # -- state ------------------------------------------------------------------------------------
    @property
    def ridge(self) -> float:
        return self.ridge_custom if self.ridge_custom is not None else ACCELERATORS[self.preset].ridge

    def r_choices(self, report: Report) -> tuple[float, ...]:
        return R_GRID

    def measured_r(self, report: Report) -> float | None:
        return report.pooled.r_measured if report.pooled is not None else None

    def show_report(self, report: Report) -> None:
        from specterm.core.decide.cost_ratio import cost_ratio_optimum

        if self.r is None:
            self.r = self.initial_r(report)
        rows, notes = [], []
        for name, s in report.ordered_sets():
            try:
                d = cost_ratio_optimum(s, self.r, self.ridge)
            except SpectermError as exc:
                rows.append([name] + [MISSING] * 6)
                notes.append(f"[b]{safe(name)}[/]: {safe(exc)}")
                continue
            rows.append([name, fmt(d.gamma_true), fmt(d.T_true, 2), fmt(d.gamma_iid),
                         fmt(d.T_iid, 2), fmt(d.T_true_at_gamma_iid, 2), fmt(d.roofline_B_star, 0)])
        if self.ridge_custom is not None:
            acc = f"custom ridge I* = {self.ridge_custom:g} FLOP/byte"
        else:
            acc = f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte"
        measured = self.measured_r(report)
        r_text = f"r = {self.r:.3f}" + (" (measured)" if measured is not None and abs(self.r - measured) < 1e-12 else "")
        width = max(self.avail_width - 2, 20)  # the scroll pane's padding
        cost_ratio = ["", f"[b]Cost-ratio model (not a decision): T = E / (1 + g r) at {safe(r_text)}, r = c_draft / "
                          f"c_verify; roofline B* = I*/(g+1) for {safe(acc)}[/] (keys - + r, a accelerator, i ridge)",
                      *(safe(line) for line in fit_text_table(COST_RATIO_HEAD, rows, width)), *notes]
        view = self.shown_view(report)
        if report is not getattr(self, "_drawn_report", None):  # another pair or a new report: from the top
            self._drawn_report = report
            self.query_one("#verdict-scroll", VerticalScroll).scroll_home(animate=False)
        ids = profile_ids(report)
        pid = self.profile or shown_profile(report)
        which = f"Profile {ids.index(pid) + 1}/{len(ids)} (p next): d" if pid in ids and len(ids) > 1 else "D"
        costs = costs_text(view)
        if costs_measured(view):
            bar = safe(f"{which}ecision on " + fit_costs(costs.removeprefix("costs: "), self.avail_width - len(which) - 12))
            decision = ci_below(decision_rows(view), CI_COLUMNS, self.avail_width)
            verdicts = hardware_verdicts(view)
        else:
            bar = "[b]No verdict: costs were not measured[/] for this run"
            decision = ci_below(reference_rows(view), CI_COLUMNS, self.avail_width)
            verdicts = ("Without measured costs there is no verdict. The last column is the memory-bound "
                        "reference (if a (g+1)-token verify cost one decode step, a GPU at small batch), "
                        f"a reference only. Measure costs on this machine: [b]{safe(costs_command(view.runs))}[/]")
        notes = []
        busy = list(dict.fromkeys(s.decision_hw.busy_warning for _, s in view.ordered_sets()
                                  if s.decision_hw is not None and s.decision_hw.busy_warning))
        notes += [f"[b $warning]{safe(b)}[/]" for b in busy]
        if report.profile_note:
            notes.append(f"[b]{safe(report.profile_note)}[/]")
        card = _text_block(profile_table(report), width) + hardware_card(view, width).split("\n")
        drafters = which_draft_block(self.sapp, view, width)
        with self.app.batch_update():
            self.show_pair_widgets(True)
            self.query_one("#which-draft", Static).update(drafters)
            self.query_one("#which-draft", Static).display = bool(drafters)
            self.query_one("#accelerator", Static).update(bar)
            fill_table(self.query_one("#decide-table", DataTable), COLUMNS, decision, width=self.avail_width)
            self.query_one("#profile-note", Static).update("\n".join(notes))
            self.query_one("#profile-note", Static).display = bool(notes)
            self.query_one("#hw-verdicts", Static).update(verdicts)
            self.query_one("#verdicts", Static).update("\n".join(card))
            cmp, _ = which_draft(self.sapp, view)
            self.query_one("#engine-settings", Static).update(
                engine_settings_block(report, view, width, cmp.calibration if cmp is not None else ()))
            self.query_one("#hw-card", Static).update("\n".join(cost_ratio))

    PAIR_WIDGETS = ("#decide-bar", "#decide-table", "#hw-verdicts", "#verdicts", "#engine-settings", "#hw-card")

    def show_pair_widgets(self, shown: bool) -> None:
        """The pair's decision widgets: hidden when only drafter runs were opened (Which draft? alone)."""
        for selector in self.PAIR_WIDGETS:
            self.query_one(selector).display = shown

    def _state_changed(self, _: Any = None) -> None:
        """As every screen; when only drafter runs were opened (the load's error says so, and there is no
        pair), Which draft? alone instead of the error."""
        super()._state_changed()
        app = self.sapp
        if app.report is not None or not app.error or not app.drafters:
            return
        self.query_one("#body").loading = False
        self.query_one("#status", Static).update(
            "[b]Drafter runs only[/]: no draft-model pair to decide for, so Which draft? below compares the drafters "
            "(a draft-model run of the same target opened beside them joins it).")
        with self.app.batch_update():
            self.show_pair_widgets(False)
            self.query_one("#profile-note", Static).display = False
            block = which_draft_block(app, None, max(self.avail_width - 2, 20))
            self.query_one("#which-draft", Static).update(block)
            self.query_one("#which-draft", Static).display = bool(block)

    def copy_markdown(self) -> str:
        """`y` on a set's row: the row as markdown, then that set's engine settings (commands to paste)."""
        from specterm.screens.base import focused_markdown_row

        report = self.sapp.report
        table = self.query_one("#decide-table", DataTable)
        row = focused_markdown_row(self)
        if report is None or not row or self.focused is not table or not table.row_count:
            return row
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return row + ("\n" + set_settings_markdown(report, str(key)) if key is not None else "")

    def shown_view(self, report: Report) -> Report:
        """The report as the shown profile decides it (profile_view); the report's own when the chosen
        profile is not one of this report's (another pair, a new analysis)."""
        if self.profile is not None and self.profile not in profile_ids(report):
            self.profile = None
        return profile_view(report, self.profile)

    def crumb_r_text(self) -> str:
        """Decide's table does not use r (its cost-ratio model below says its own r): the crumb names
        the cost profile shown instead."""
        report = self.sapp.report
        if report is None:
            return ""
        ids = profile_ids(report)
        pid = self.profile or shown_profile(report)
        if pid is None or not ids:
            return "costs not measured"
        return f"profile {ids.index(pid) + 1}/{len(ids)}" if pid in ids else f"profile {pid}"

    def export_r_text(self) -> str:
        """Decide's export names the profile of its decision; the cost-ratio model as shown says its own r."""
        return self.crumb_r_text()

    def context_report(self) -> Report | None:
        report = self.sapp.report
        return self.shown_view(report) if report is not None else None

    def head_costs(self) -> str:
        report = self.sapp.report
        return costs_text(self.shown_view(report) if report is not None else None)

    def copy_columns(self) -> list[tuple[str, str]]:
        """`y` on a decision row: the machine whose costs it reads, with "(this machine)" or "(other
        machine)", as a last column (a decision belongs to a machine, SPEC 6)."""
        report = self.sapp.report
        if report is None or self.focused is None or self.focused.id != "decide-table":
            return []
        return [("machine", costs_text(self.shown_view(report)).removeprefix("costs: "))]

    def action_next_profile(self, step: int) -> None:
        """p / P: the decision of the run's next / previous cost profile, from the report's
        decision_by_profile (nothing is computed again)."""
        report = self.sapp.report
        if report is None:
            return
        ids = profile_ids(report)
        if len(ids) < 2:
            self.notify("This run has one cost profile or none; `specterm costs RUN` measures one here.")
            return
        pid = self.profile or shown_profile(report)
        i = ids.index(pid) if pid in ids else 0
        self.profile = ids[(i + step) % len(ids)]
        self.show_report(report)
        self.query_one("#verdict-scroll", VerticalScroll).scroll_home(animate=False)

    def export_markdown(self) -> str:
        """The report's decision tables (as `specterm report`), then the cost-ratio model as shown here
        when another accelerator, ridge or r than the report's is chosen. The decision is the shown
        profile's (`p`)."""
        from specterm.screens.base import screen_markdown

        from specterm.core.drafted.drafter_export import comparison_markdown

        report = self.sapp.report
        if report is None:
            return super().export_markdown()
        text = screen_markdown(self.shown_view(report), self.EXPORT_SECTIONS, self.export_context())
        cmp, _ = which_draft(self.sapp, self.shown_view(report))
        if cmp is not None:  # as `specterm report` prints it for these runs, one level down
            text += "\n" + comparison_markdown(cmp).replace("# Which draft?", "## Which draft?", 1)
        if report is None or self.r is None or (
                self.ridge_custom is None and self.preset == DEFAULT_ACCELERATOR and self.r == self.initial_r(report)):
            return text
        from specterm.core.decide.cost_ratio import cost_ratio_optimum

        rows = []
        for name, s in report.ordered_sets():
            d = cost_ratio_optimum(s, self.r, self.ridge)
            rows.append([name, fmt(d.gamma_true), fmt(d.T_true, 2), fmt(d.gamma_iid),
                         fmt(d.T_iid, 2), fmt(d.T_true_at_gamma_iid, 2), fmt(d.roofline_B_star, 0)])
        ridge = (f"custom ridge I* = {self.ridge_custom:g} FLOP/byte" if self.ridge_custom is not None
                 else f"{ACCELERATORS[self.preset].label}, ridge I* = {self.ridge:.0f} FLOP/byte")
        title = escape_md(f"cost-ratio model at r = {self.r:.3f}, {ridge} (not a decision)")
        return f"{text}\n**As shown: {title}**\n\n{markdown_table(COST_RATIO_HEAD, rows)}\n"

    def _redraw(self) -> None:
        if self.sapp.report is not None:
            self.show_report(self.sapp.report)

    # -- keys ---------------------------------------------------------------------------------------
    def action_accelerator(self, step: int) -> None:
        if not self.presets:
            return
        i = self.presets.index(self.preset) if self.preset in self.presets else -1
        self.preset = self.presets[(i + step) % len(self.presets)]
        self.ridge_custom = None
        self._redraw()

    def action_custom_ridge(self) -> None:
        box = self.query_one("#ridge-input", Input)
        box.display = True
        box.focus()

    def action_leave_input(self) -> None:
        box = self.query_one("#ridge-input", Input)
        if box.has_focus:
            box.display = False
            self.query_one("#decide-table").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from specterm.core.decide.cost_ratio import ridge_of

        try:
            self.ridge_custom = ridge_of(float(event.value)) if event.value.strip() else None
        except (SpectermError, ValueError) as exc:
            self.notify(str(exc) if isinstance(exc, SpectermError) else f"Type a ridge in FLOP/byte, e.g. {DEFAULT_RIDGE:g}.",
                        severity="error")
            return
        event.input.display = False
        self.query_one("#decide-table").focus()
        self._redraw()
