"""What a person needs before acting (issues 37 and 33, at 80x24): every screen names the run group
(k of n), its engine and the machine of the costs; Decide shows the decision of one cost profile at a
time (`p` steps through the report's decision_by_profile) beside every profile's, and no verdict
without measured costs; no text table line wraps; the Overview scrolls to its last line; `--resume`
counts the whole run on the Run screen; quitting right after the CIs leaves a warm cache and no
temp file."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from app_fixture import make_fixture_run
from pilot_settle import until
from tui_checks import static_text, wrapped_table_lines
from rich.cells import cell_len
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from specterm.app import make_app
from specterm.core.report import analysis, cache
from specterm.core.report.export import shown_machine
from specterm.core.report.fmt import fmt
from specterm.core.store import load_run
from specterm.widgets.columns import fit_machine
from specterm.widgets.tables import fit_text_table
from specterm.widgets.rowlist import RowList

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
SIZE = (80, 24)
SHIPPED = Path(__file__).resolve().parents[1] / "streams"
TORCH_RUN = SHIPPED / "qwen2.5-coder-0.5b-1.5b"


async def ready(app, pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def screen_words(screen) -> str:
    """Everything a screen holds in text (scrolled out of view too): its Statics and its tables' cells."""
    parts = [static_text(w) for w in screen.query(Static)]
    for table in screen.query(DataTable):
        parts += [str(c.label) for c in table.ordered_columns]
        parts += [str(table.get_cell_at((i, j))) for i in range(table.row_count) for j in range(len(table.columns))]
    for rows in screen.query(RowList):
        parts += rows.labels + [c for i in range(rows.row_count) for c in rows.shown_row(i)[: len(rows.labels)]]
    return "\n".join(parts)


# -- the text-table fitter -------------------------------------------------------------------------

def test_fit_text_table_moves_cis_then_falls_back_to_records():
    head, rows = ["set", "S_hw [95% CI]"], [["code", "1.04x [0.95, 1.13]"]]
    assert fit_text_table(head, rows, 40) == ["set   S_hw [95% CI]", "----  ------------------", "code  1.04x [0.95, 1.13]"]
    assert fit_text_table(head, rows, 20) == ["set   S_hw", "      [95% CI]", "----  ------------", "code  1.04x",
                                              "      [0.95, 1.13]"]
    assert fit_text_table(head, rows, 10) == ["code", "  S_hw [95% CI]: 1.04x [0.95, 1.13]"]
    # a long name gives way (an ellipsis), down to 8 cells, before the numbers move
    long = [["a-very-long-corpus-name", "3"]]
    assert fit_text_table(["set", "g"], long, 15) == ["set           g", "------------  -", "a-very-long…  3"]
    assert fit_text_table(["set", "g"], long, 9) == ["a-very-long-corpus-name", "  g: 3"]


# -- the head line ------------------------------------------------------------------------------------

async def test_every_screen_names_run_engine_and_machine_at_80x24():
    paths = sorted(p for p in SHIPPED.iterdir() if (p / "run.json").is_file())
    app = make_app(paths, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        for k in range(1, app.n_model_groups + 1):
            report = app.report
            engine = report.runs[0].engine
            machine = shown_machine(report)
            for key in "1234567":
                await pilot.press(key)
                await ready(app, pilot)
                head = static_text(app.screen.query_one("#head", Static))
                assert cell_len(head) <= SIZE[0] - 2, head
                assert f"run {k}/{app.n_model_groups}" in head and f" · {engine} -n " in head, head
                if machine is None:
                    assert "costs not measured" in head, head
                else:  # the machine's label is shortened (fit_machine), its name kept, its suffix never cut
                    assert fit_machine(machine.split(",")[0], 80) .split(" ")[0] in head, head
                    assert head.endswith(("(this machine)", "(other machine)")) and "…" not in head, head
                assert wrapped_table_lines(app.screen) == [], (key, wrapped_table_lines(app.screen))
            await pilot.press("M")
            await ready(app, pilot)
        assert app.screen.active_bindings["M"].binding.show  # `M` is in the footer
        assert app.screen.active_bindings["question_mark"].binding.action == "help"


async def test_overview_scrolls_to_its_last_line_at_80x24(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        pane = app.screen.query_one("#overview-scroll", VerticalScroll)
        note = app.screen.query_one("#overview-note", Static)
        assert pane.max_scroll_y > 0  # the notes lie below the fold at 80x24
        assert note.region.bottom > pane.region.bottom
        await pilot.press("tab", "end")
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y
        assert note.region.bottom <= pane.region.bottom  # the last line is on screen now


# -- Decide: one profile at a time, every profile side by side -----------------------------------------

async def test_p_steps_through_the_profiles_decisions():
    app = make_app([TORCH_RUN], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("6")
        await ready(app, pilot)
        report = app.report
        ids = [p["id"] for p in report.profiles]
        assert len(ids) >= 2
        table = app.screen.query_one("#decide-table", DataTable)
        seen = []
        shown = report.pooled.decision_hw.profile
        order = ids[ids.index(shown):] + ids[: ids.index(shown)]
        for pid in order:
            d = report.pooled.decision_by_profile[pid]
            cell = str(table.get_cell("pooled", "s_hw"))
            assert cell.split("\n")[0] == f"{fmt(d.speedup_hw, 2)}x", (pid, cell)
            assert str(table.get_cell("pooled", "g_hw")) == fmt(d.gamma_hw)
            head = static_text(app.screen.query_one("#head", Static))
            assert fit_machine(d.machine, 30).split(",")[0] in head and head.endswith(("(this machine)", "(other machine)")), head
            seen.append(pid)
            await pilot.press("p")
            await pilot.pause()
        assert seen == order
        assert str(table.get_cell("pooled", "s_hw")).split("\n")[0] == f"{fmt(report.pooled.decision_hw.speedup_hw, 2)}x"
        card = static_text(app.screen.query_one("#verdicts", Static))
        assert "Decision by machine" in card
        for pid in ids:
            assert pid in card  # each profile's row, labelled with its id
        assert wrapped_table_lines(app.screen) == []
        # the export is the shown profile's decision, with the context line (runs, engine, machine)
        await pilot.press("p")
        await pilot.pause()
        text = app.screen.export_markdown()
        other = report.pooled.decision_by_profile[app.screen.profile]
        assert f"costs: {other.machine}" in text.splitlines()[2]
        assert "(torch, " in text.splitlines()[2]


async def test_a_run_without_costs_gets_no_verdict_anywhere(tmp_path):
    """The fixture stores no costs (an imported run's case): no screen says "speculate"; Decide shows
    the memory-bound reference as a reference and names `specterm costs RUN`."""
    path = make_fixture_run(tmp_path)
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        assert not app.report.pooled.decision_hw.measured
        for key in "1234567":
            await pilot.press(key)
            await ready(app, pilot)
            words = screen_words(app.screen)
            assert not re.search(r"\bspeculate\b", words), (key, [w for w in words.splitlines() if "speculate" in w])
            assert "costs not measured" in static_text(app.screen.query_one("#head", Static))
        await pilot.press("6")
        await ready(app, pilot)
        decide = screen_words(app.screen)
        assert "costs were not measured" in decide and f"specterm costs {path}" in decide
        table = app.screen.query_one("#decide-table", DataTable)
        d = app.report.pooled.decision_hw
        assert str(table.get_cell("pooled", "kind")) == "none"
        assert str(table.get_cell("pooled", "mb")).startswith(f"g={d.gamma_mb}: {fmt(d.speedup_mb, 2)}x")


# -- --resume: the Run screen counts the whole run -------------------------------------------------

async def test_resume_counts_the_whole_run_on_the_run_screen(tiny_model_dir, tmp_path):
    from specterm.engines.corpora import load_builtin
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import run_oracle

    out = tmp_path / "resumed"
    prompts = load_builtin(["code", "prose"], limit=2)
    base = dict(target=str(tiny_model_dir), draft="layers:1", out=out, max_new_tokens=12, batch_size=1,
                measure_cost=False)
    run_oracle(OracleConfig(prompts=prompts[:2], **base))  # the first session: 2 prompts
    config = OracleConfig(prompts=prompts, resume=True, **base)
    app = make_app(oracle_config=config, oracle=run_oracle, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        run = load_run(out)
        assert len(run.streams) == len(prompts) == 4
        alpha = sum(int(s.a.sum()) for s in run.streams) / sum(s.valid_len for s in run.streams)
        words = screen_words(app.screen)
        assert f"{len(prompts)}/{len(prompts)} saved" in words, words
        assert f"now {alpha:.3f}" in words, (alpha, words)


# -- quit right after the CIs: a warm next start, no temp file ----------------------------------------

async def test_quit_right_after_the_cis_leaves_a_warm_cache(tmp_path, monkeypatch):
    """With a head start, the full report shows before the app has parsed the runs (held here); the
    app quits at once. Its entry is written before the child is closed: the next open is warm (no
    analysis), and the cache holds no temp file."""
    from specterm.core import store
    from specterm.headstart import HeadStart

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = make_fixture_run(tmp_path)
    params = {"gamma": 8, "seed": 0, **FAST}
    real_load = store.load_run

    def slow_load(*a, **k):  # the app's parse of the runs, after the child's full report is shown
        time.sleep(1.0)
        return real_load(*a, **k)

    head = HeadStart.start([path], params)
    assert head is not None
    monkeypatch.setattr(store, "load_run", slow_load)
    app = make_app([path], head_start=head, **params)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report_complete, "the full report")
        app.exit()
    monkeypatch.setattr(store, "load_run", real_load)
    folder = cache.cache_dir()
    assert [p.name for p in folder.rglob("*.tmp")] == []
    key = cache.cache_key([load_run(path)], params)
    assert cache.load(key) is not None

    def no(*a, **k):
        raise AssertionError("analysed again: the start was not warm")

    monkeypatch.setattr(analysis, "analyse", no)
    again = make_app([path], **params)
    async with again.run_test(size=SIZE) as pilot:
        await ready(again, pilot)
        assert again.report is not None and again.error is None


def test_stale_temp_files_of_a_killed_writer_are_removed(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    old, young = folder / ".abc.json.0123.tmp", folder / ".def.json.4567.tmp"
    for p in (old, young):
        p.write_text("{")
    past = time.time() - cache.STALE_TEMP_S - 5
    os.utime(old, (past, past))
    assert cache.remove_stale_temps(folder) == [old]
    assert not old.exists() and young.exists()  # a younger one may be a write under way


# -- Streams: laid out again on resize; the cut at a gate failure shown where it is ---------------------

async def test_streams_relays_its_list_on_resize_and_shows_the_cut(tmp_path):
    import math

    from app_fixture import GATE_FAIL_AT
    from tui_checks import cut_cells

    from specterm.widgets.sparkline import ScaledSparkline

    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        table = app.screen.query_one("#prompts", RowList)
        narrow = list(table.labels)
        await pilot.resize_terminal(160, 45)
        await ready(app, pilot)
        wide = list(table.labels)
        assert "gate" in wide and len(wide) > len(narrow), (narrow, wide)
        assert [c for c in cut_cells(app) if c.screen == "StreamsScreen"] == []
        await pilot.resize_terminal(*SIZE)
        await ready(app, pilot)
        assert list(table.labels) == narrow
        assert [c for c in cut_cells(app) if c.screen == "StreamsScreen"] == []
        # the stream whose gate fails at t = GATE_FAIL_AT: n analysed in the list, the sparkline blank after
        cut = next(i for i, s in enumerate(app.screen.streams) if s.valid_len < s.n)
        s = app.screen.streams[cut]
        assert table.shown_row(table.keys.index(str(cut)))[table.labels.index("n")] == f"{GATE_FAIL_AT}/{s.n}"
        table.move_cursor(row=app.screen.shown.index(cut), animate=False)
        await ready(app, pilot)
        data = app.screen.query_one("#rolling", ScaledSparkline).data
        assert len(data) == s.n and all(math.isnan(v) for v in data[GATE_FAIL_AT:])
        assert not any(math.isnan(v) for v in data[:GATE_FAIL_AT])
        label = static_text(app.screen.query_one("#rolling-label", Static))
        assert f"t < {GATE_FAIL_AT} of {s.n} analysed" in label


# -- verdicts shown as the report words them; y copies the focused row ----------------------------------

async def test_a_too_few_prompts_verdict_shows_as_the_report_says_it(tmp_path):
    """A verdict kind the screens have no words of their own for (the verdicts issue's
    "too_few_prompts") shows as the report's words on Decide and the Scorecard, never as n/a."""
    import dataclasses

    app = make_app([TORCH_RUN], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        report = app.report
        few = "too few prompts (n = 1; needs 8)"
        pooled = report.pooled
        d = dataclasses.replace(pooled.decision_hw, verdict_kind="too_few_prompts", verdict=few)
        sets = {**report.sets, "pooled": dataclasses.replace(pooled, decision_hw=d,
                                                             decision_by_profile={**pooled.decision_by_profile, d.profile: d})}
        rows = [dataclasses.replace(row, verdict=few) if row.id == "P1" else row for row in report.scorecard]
        app.report = dataclasses.replace(report, sets=sets, scorecard=rows)
        await pilot.press("6")
        await ready(app, pilot)
        table = app.screen.query_one("#decide-table", DataTable)
        assert str(table.get_cell("pooled", "kind")) == "too few prompts"
        assert few in static_text(app.screen.query_one("#hw-verdicts", Static))
        await pilot.press("7")
        await ready(app, pilot)
        assert "too few prompts" in " ".join(screen_words(app.screen).split())
        # y: the focused row as markdown, to the clipboard
        await pilot.press("6")
        await ready(app, pilot)
        app.screen.query_one("#decide-table", DataTable).focus()
        table.move_cursor(row=table.get_row_index("pooled"), animate=False)
        await pilot.press("y")
        await pilot.pause()
        # the row, then (issue 55) that set's engine settings: the commands to paste
        head, rule, row = app.clipboard.strip().splitlines()[:3]
        assert "### Engine settings, pooled" in app.clipboard
        assert head.startswith("| corpus | g_hw | S_hw [95% CI] | verdict") and rule.startswith("|---|")
        assert row.startswith(f"| pooled | {fmt(d.gamma_hw)} | {fmt(d.speedup_hw, 2)}x [") and "| too few prompts |" in row
        # the row carries its machine (whose costs the decision reads), whole
        assert head.endswith("| machine |")
        assert row.endswith(f"| {d.machine}" + (" (this machine) |" if d.matches_this_machine else " (other machine) |"))


async def test_an_export_says_the_r_its_tables_are_at(tmp_path):
    """Optimum stepped to r = 0.200: its export's tables are the report's (measured r = 0.150 and the
    r grid), and the context line says so, with the r the screen showed."""
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await pilot.press("4", "plus")
        await ready(app, pilot)
        context = app.screen.export_markdown().splitlines()[2]
        assert context.endswith("· tables at the measured r = 0.150 and over the r grid "
                                "(the screen showed r = 0.200 (chosen))"), context
        assert context.startswith("runs: tiny-run (torch, 6 prompts); costs: not measured · pair: ")
        await pilot.press("m")
        await ready(app, pilot)
        assert app.screen.export_markdown().splitlines()[2].endswith("· r = 0.150 (measured)")
