"""What the TUI shows is the state it is in (issue 20, the TUI list): each test names the item it
checks and failed on the app before that item's fix."""

from __future__ import annotations

import numpy as np
import pytest
from app_fixture import META, fixture_streams, make_fixture_run, make_stream
from edge_runs import with_bits
from rich.console import Console
from textual.widgets import DataTable, Static

from specterm.app import make_app
from specterm.core.store import write_run
from specterm.widgets.rowlist import RowList

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
NARROW = (80, 24)


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def ready(app, pilot):
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def text(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def drawn(widget) -> list[str]:
    """The lines a widget draws at its size (rendered as the compositor would)."""
    w, h = widget.size.width, widget.size.height
    console = Console(width=w, height=h, color_system=None, legacy_windows=False)
    lines = console.render_lines(widget.render(), console.options.update(width=w, height=h), pad=True)
    return ["".join(seg.text for seg in line) for line in lines]


# -- the rolling-alpha sparkline: a fixed 0..1 scale ---------------------------------------------------

async def rolling_rows(tmp_path, bits_by_stream) -> list[list[str]]:
    streams = [with_bits(make_stream(f"s{i}", "prose", len(b), 70 + i), np.asarray(b)) for i, b in enumerate(bits_by_stream)]
    path = write_run(tmp_path / "r", {**META, "name": "r"}, streams)
    app = make_app([path], **FAST)
    out = []
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        for _ in streams:
            out.append(drawn(app.screen.query_one("#rolling")))
            await pilot.press("n")
            await pilot.pause()
    return out


async def test_rolling_alpha_draws_a_constant_series_at_its_level(tmp_path):
    ones, zeros = await rolling_rows(tmp_path, [np.ones(40), np.zeros(40)])
    assert set(ones[0].strip()) == {"█"} and len(ones[0].strip()) == len(ones[0])  # alpha 1: the top, full
    assert zeros[0].strip() == "" and set(zeros[-1].strip()) == {"▁"}  # alpha 0: a stroke at the bottom


async def test_one_token_zero_stream_draws_at_the_bottom(tmp_path):
    (rows,) = await rolling_rows(tmp_path, [[0]])
    assert rows[0].strip() == "" and set(rows[-1].strip()) == {"▁"}


# -- the live Run screen ------------------------------------------------------------------------

async def test_run_screen_counts_the_current_prompt_and_ends_full(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    s = fixture_streams()[2]  # the prompt the fake oracle blocks in, half generated
    half = s.n // 2
    oracle = FakeOracle(block_after=2)
    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=oracle, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        assert oracle.blocked.wait(10)
        await pilot.pause(0.2)
        ones = int(s.bits[:half].sum())
        legend = text(app.screen, "#bits-legend")
        assert legend == f"current prompt: {ones} accepted, {half - ones} rejected, 1 not yet known", legend
        assert "ETA 30s" in text(app.screen, "#run-stats")
        await pilot.press("escape")  # cancel: no ETA from then on
        await pilot.pause(0.2)
        assert "ETA" not in text(app.screen, "#run-stats")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "ETA" not in text(app.screen, "#run-stats")


async def test_run_screen_token_bar_full_at_done(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        bar = app.screen.query_one("#prompt")
        assert bar.total and bar.progress == bar.total
        count = str(app.screen.query_one("#prompt-count").render())
        last = fixture_streams()[-1]
        assert count == f"{last.n}/{last.n} tokens", count
        assert "ETA" not in text(app.screen, "#run-stats")


async def test_run_screen_labels_the_cost_phase(tmp_path):
    import threading

    from app_fixture import oracle_config

    from specterm.engines.progress import Progress, check_cancel

    measuring = threading.Event()

    def costs_then_wait(config, on_progress, cancel):
        on_progress(Progress("cost", "measuring costs", n_prompts=3))
        on_progress(Progress("cost", "cost 1/4: c_decode 0.010 s", n_prompts=3, step=1, steps=4))
        measuring.set()
        cancel.wait(timeout=30)
        check_cancel(cancel)

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=costs_then_wait, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        assert measuring.wait(10)
        await pilot.pause(0.2)
        screen = app.screen
        assert str(screen.query_one("#overall-label").render()) == "costs"
        assert str(screen.query_one("#overall-count").render()) == "1/4 measured"
        bar = screen.query_one("#overall")
        assert (bar.progress, bar.total) == (1, 4)
        await pilot.press("escape")
        await app.workers.wait_for_complete()


async def test_run_screen_shows_the_checks_at_once(tmp_path):
    """`specterm run` checked models, tokenizers and prompts (~10 s) before the TUI drew anything:
    the checks now run in the Run screen's worker, which says so from the first frame."""
    import threading

    from app_fixture import FakeOracle, oracle_config

    go = threading.Event()

    def slow_check(config):
        go.wait(timeout=30)

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), check=slow_check, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await pilot.pause(0.2)
        assert "checking" in text(app.screen, "#run-phase")
        go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "done" in text(app.screen, "#run-phase")


async def test_run_screen_check_failure_is_one_sentence(tmp_path):
    from app_fixture import FakeOracle, oracle_config

    from specterm.core.errors import SpectermError

    def bad_check(config):
        raise SpectermError("there are no prompts to run; check --corpus/--prompts/--shard.")

    app = make_app(oracle_config=oracle_config(tmp_path / "live"), oracle=FakeOracle(), check=bad_check, **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "failed" in text(app.screen, "#run-phase") and "no prompts to run" in text(app.screen, "#run-phase")
        assert not (tmp_path / "live").exists()


# -- the breadcrumb follows the filter; Escape goes back after a drill-down ------------------------

async def test_breadcrumb_follows_the_streams_filter(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        assert " · all corpora · " in text(app.screen, "#crumb")
        await pilot.press("c")  # corpora sorted: code first
        await pilot.pause()
        assert app.screen.corpus_filter == "code"
        assert " · code · " in text(app.screen, "#crumb")
        await pilot.press("c", "c")  # prose, then all again
        await pilot.pause()
        assert " · all corpora · " in text(app.screen, "#crumb")


async def test_enter_on_a_row_then_escape_goes_back(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        for mode, table_id in (("overview", "#overview-table"), ("decide", "#decide-table")):
            await pilot.press("1" if mode == "overview" else "6")
            await ready(app, pilot)
            table = app.screen.query_one(table_id, DataTable)
            table.focus()
            table.move_cursor(row=[str(r.key.value) for r in table.ordered_rows].index("prose"))
            await pilot.press("enter")
            await ready(app, pilot)
            assert app.current_mode == "streams" and app.screen.corpus_filter == "prose"
            assert " · prose · " in text(app.screen, "#crumb")  # the crumb says the filter Enter set
            await pilot.press("escape")  # help: "esc back"
            await ready(app, pilot)
            assert app.current_mode == mode
        # a screen reached by its number key: Escape stays (nothing to go back to)
        await pilot.press("2")
        await ready(app, pilot)
        await pilot.press("escape")
        await ready(app, pilot)
        assert app.current_mode == "streams"


# -- F1, the jump box, ids with control characters ---------------------------------------------

async def test_help_lists_every_screen_key_the_footer_shows(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(app, pilot)
        footer_keys = {b.key for b in app.BINDINGS if b.action.startswith("switch_screen")}
        assert footer_keys == set("12345678")
        await pilot.press("f1")
        await pilot.pause()
        table = app.screen.query_one("#help-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert footer_keys <= {r[0] for r in rows}
        eight = next(r[1] for r in rows if r[0] == "8")
        assert "Run" in eight and "specterm run" in eight.replace("\n", " ")


async def test_jump_past_the_end_goes_there_and_says_so(tmp_path):
    from specterm.widgets.tokens import TokenView

    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        view = app.screen.query_one(TokenView)
        n = app.screen.streams[app.screen.selected].n
        for typed in ("500", "150%"):
            await pilot.press("colon", "0", "enter")
            assert view.cursor == 0
            await pilot.press("colon", *typed.replace("%", ""), *(["percent_sign"] if "%" in typed else []), "enter")
            await pilot.pause()
            assert view.cursor == n - 1, typed
            said = [m.message for m in app._notifications]
            assert said and said[-1] == (f"{typed} is outside this stream (t = 0..{n - 1}): the cursor went to the "
                                         f"last position, t = {n - 1}.").replace("500 is", "t = 500 is")


async def test_an_id_with_tab_and_newline_is_one_row(tmp_path):
    streams = fixture_streams()[:2]
    streams[0].id = "tab\there\nnewline"
    path = write_run(tmp_path / "r", {**META, "name": "r"}, streams)
    app = make_app([path], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        table = app.screen.query_one("#prompts", RowList)
        assert table.row_count == 2 and table.virtual_size.height == 1 + 2  # the header and one line a row
        shown = table.shown_row(table.keys.index("0"))[0]
        # escaped, on one line; at this width the id gives way (an ellipsis) before the gate column does
        assert "\n" not in shown and "\t" not in shown and shown.startswith("tab\\x09here")
        assert "tab\\x09here\\x0anewline".startswith(shown.removesuffix("…"))


# -- toasts: one at a time, short, off the tables --------------------------------------------------

async def test_match_count_is_a_status_not_a_stack_of_toasts(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        await pilot.press("slash", *"prompt", "enter")  # every prompt's text: 6 matches
        await pilot.pause()
        for _ in range(9):
            await pilot.press("n")
        await pilot.pause()
        assert len(app._notifications) <= 1
        title = app.screen.query_one("#prompt-filter")
        assert "match 4 of 6" in text(app.screen, "#prompt-filter")  # 1 + 9 presses, wrapping at 6
        assert title.content_region.width * title.content_region.height >= len(text(app.screen, "#prompt-filter"))


async def test_no_toast_over_the_tables_at_start_with_two_pairs(tmp_path):
    from edge_runs import two_pairs

    app = make_app(two_pairs(tmp_path), **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        assert len(app._notifications) == 0
        assert "run 1/2 (M next)" in text(app.screen, "#head")


async def test_a_toast_sits_above_the_footer_line_and_leaves_soon(tmp_path):
    from textual.widgets._toast import Toast

    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW, notifications=True) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        await pilot.press("colon", "dollar_sign", "enter", "r", "r")  # no rejection after the end, twice
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1
        region = toasts[0].region
        # one line, just above the footer: the keys stay readable (issue 53)
        assert region.bottom == NARROW[1] - 1 and region.height == 1, region
        assert all(n.timeout <= 3 for n in app._notifications)
        # a titled toast of 70 characters is one line too at 80 columns (issue 37)
        app.notify("x" * 62, title="export")
        await pilot.pause(0.3)
        region = list(app.screen.query(Toast))[0].region
        assert region.bottom == NARROW[1] - 1 and region.height == 1, region


# -- every r says which it is; alpha with its CI ------------------------------------------------

async def test_optimum_and_decide_say_which_r_they_show(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(app, pilot)
        await pilot.press("4", "plus")
        await ready(app, pilot)
        bar = text(app.screen, "#set-bar")
        assert "cost-ratio model r = c_draft/c_verify = 0.200 (chosen; measured 0.150)" in bar, bar
        assert text(app.screen, "#crumb").endswith("r = 0.200 (chosen)")
        await pilot.press("6")
        await ready(app, pilot)
        model = text(app.screen, "#hw-card")  # the cost-ratio model under the decision on this hardware
        assert "r = 0.150 (measured)" in model and "r = c_draft / c_verify" in model, model
        assert text(app.screen, "#crumb").endswith("costs not measured")  # Decide's table uses no r (issue 37)
        for key in "12357":
            await pilot.press(key)
            await ready(app, pilot)
            assert text(app.screen, "#crumb").endswith("r = 0.150 (measured)"), key


@pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])
async def test_overview_shows_alpha_with_its_ci_and_names_the_deficit_bracket(tmp_path, size):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        table = app.screen.query_one("#overview-table", DataTable)
        labels = [str(c.label) for c in table.ordered_columns]
        alpha_col = next(i for i, label in enumerate(labels) if label.startswith("alpha"))
        assert any("temp" in label and "CI]" in label for label in labels if label.startswith("deficit")), labels
        for row in table.ordered_rows:
            s = app.report.sets[str(row.key.value)]
            lo, hi = s.alpha_ci
            assert lo <= s.alpha <= hi
            cell = " ".join(str(table.get_cell(row.key, table.ordered_columns[alpha_col].key)).split())
            assert cell == f"{s.alpha:.3f} [{lo:.3f}, {hi:.3f}]"


# -- a long corpus name gives way at 80x24; the numbers stay on screen --------------------------------

async def test_a_long_corpus_name_gives_way_not_the_numbers(tmp_path):
    from edge_runs import LONG_CORPUS, long_name
    from tui_checks import cut_cells, overflowing

    app = make_app(long_name(tmp_path), **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        for key, table_id in (("1", "#overview-table"), ("6", "#decide-table"), ("3", "#runlengths-table")):
            await pilot.press(key)
            await ready(app, pilot)
            table = app.screen.query_one(table_id, DataTable)
            assert overflowing(table) == [], (key, overflowing(table))
            assert [c for c in cut_cells(app) if c.screen == type(app.screen).__name__] == []
            names = [str(table.get_cell(r.key, table.ordered_columns[0].key)) for r in table.ordered_rows]
            long = next(n for n in names if n.startswith(LONG_CORPUS[:6]))
            assert long.endswith("…") and LONG_CORPUS.startswith(long[:-1]), (key, names)
            last = str(table.ordered_columns[-1].label)
            assert last in {"deficit = het + temp\n[temp CI]", "mem-bound ref.", "D/D_geom [CI]"}, last
            crumb = text(app.screen, "#crumb")
            tail = "costs not measured" if key == "6" else "r = 0.150 (measured)"  # Decide's table uses no r
            assert crumb.endswith(tail) and len(crumb) <= NARROW[0] - 2, crumb


# -- Scorecard: the evidence pane follows the selected row ----------------------------------------

async def test_scorecard_evidence_follows_the_selected_row(tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("7")
        await ready(app, pilot)
        table = app.screen.query_one("#scorecard-table", DataTable)
        pane = app.screen.query_one("#evidence-scroll")
        ids = [str(r.key.value) for r in table.ordered_rows]
        assert len(ids) > 3
        for key, pid in (("G", ids[-1]), ("g", ids[0]), ("j", ids[1])):
            await pilot.press(key)
            await pilot.pause(0.1)
            await pilot.pause()
            selected = [w for w in pane.query(".evidence") if w.has_class("-selected")]
            assert [w.name for w in selected] == [pid], key
            region, view = selected[0].region, pane.scrollable_content_region
            assert view.y <= region.y < view.bottom, (key, region, view)  # on screen, at the top
            assert str(selected[0].render()).startswith(pid)


# -- export: the dialog answers every path; every export names run · pair · r --------------------------

PAIR = "layers-1-target-torch"  # the fixture's draft "layers:1", target "tiny/target" and engine, as a file name part


async def open_export(app, pilot, path: str | None = None):
    await pilot.press("e")
    await pilot.pause()
    if path is not None:
        app.screen.query_one("#export-path").value = path
    await pilot.press("enter")
    await pilot.pause()


async def test_export_dialog_answers_every_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path / "runs")], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        # a folder: refused with one sentence, the dialog stays
        (tmp_path / "out").mkdir()
        await open_export(app, pilot, str(tmp_path / "out"))
        assert type(app.screen).__name__ == "ExportScreen"
        warning = text(app.screen, "#export-warning")
        assert "is a folder" in warning and "exists" not in warning
        await pilot.press("enter")  # a second Enter does not write into a folder either
        await pilot.pause()
        assert type(app.screen).__name__ == "ExportScreen" and list((tmp_path / "out").iterdir()) == []
        # an empty path: said so, nothing closes silently
        app.screen.query_one("#export-path").value = "  "
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ExportScreen" and "No path given" in text(app.screen, "#export-warning")
        # a missing folder: asked first, created on the second Enter
        target = tmp_path / "new" / "deeper" / "x.md"
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert "does not exist" in text(app.screen, "#export-warning") and not (tmp_path / "new").exists()
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "OverviewScreen" and target.is_file()
        # a file where a folder should be: refused
        await open_export(app, pilot, str(target / "y.md"))
        assert type(app.screen).__name__ == "ExportScreen" and "is a file, not a folder" in text(app.screen, "#export-warning")
        await pilot.press("escape")
        await pilot.pause()


async def test_every_export_names_run_pair_and_r_and_its_file_the_pair(tmp_path, monkeypatch):
    from specterm.screens.registry import SCREENS

    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path / "runs")], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        for s in [s for s in SCREENS if s.mode != "run"]:
            await pilot.press(s.key)
            await ready(app, pilot)
            await pilot.press("e")
            await pilot.pause()
            default = app.screen.query_one("#export-path").value
            assert default == f"specterm-{s.mode}-{PAIR}.md", default
            await pilot.press("enter")
            await pilot.pause()
            written = (tmp_path / default).read_text()
            tail = "costs not measured" if s.mode == "decide" else "r = 0.150 (measured)"  # Decide's table uses no r
            assert ("runs: tiny-run (torch, 6 prompts); costs: not measured · pair: layers:1 -> tiny/target · "
                    f"{tail}") in written, s.mode
        await pilot.press("E")
        await pilot.pause()
        assert app.screen.query_one("#export-path").value == f"specterm-report-{PAIR}.md"
        await pilot.press("escape")


async def test_decide_export_is_the_export_modules_with_one_preset(tmp_path, monkeypatch):
    """Decide's `e` writes export.markdown_tables' decide section (issue 17: it scraped the DataTable),
    and the cost-ratio model as shown at one accelerator preset, named once."""
    from specterm.core.report.export import markdown_tables
    from specterm.core.params import ACCELERATORS, DEFAULT_ACCELERATOR

    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path / "runs")], **FAST)
    async with app.run_test(size=NARROW) as pilot:
        await ready(app, pilot)
        await pilot.press("6", "a")  # the preset after the default
        await ready(app, pilot)
        preset = app.screen.preset
        assert preset != DEFAULT_ACCELERATOR
        await open_export(app, pilot)
        written = (tmp_path / f"specterm-decide-{PAIR}.md").read_text()
        assert markdown_tables(app.report)["decide"] in written
    assert written.count(ACCELERATORS[preset].label) == 1 and ACCELERATORS[DEFAULT_ACCELERATOR].label not in written
    assert "[b]" not in written


# -- cosmetics: no -0.000, sums that add up, integer count ticks, the legend off the bars ---------------

def test_no_negative_zero_and_sums_that_add_up():
    from specterm.core.report.export import deficit_cell
    from specterm.core.report.fmt import ci, est, fmt
    from specterm.core.report.types import Deficit, Estimate
    from specterm.widgets.tables import fmt_ci

    assert fmt(-0.0004) == "0.000" and fmt(-0.0004, sign=True) == "+0.000" and fmt(-0.0006) == "-0.001"
    assert fmt(-0.004, 2) == "0.00" and ci([-0.0001, 0.5]) == "[0.000, 0.500]"
    assert est(Estimate(value=-0.00001, ci=[-0.0004, 0.2]), sign=True) == "+0.000 [0.000, 0.200]"
    assert fmt_ci(Estimate(value=-0.0001, ci=[-0.0004, 0.2])) == "0.000 [0.000, 0.200]"

    def deficit(t, h, m):
        return Deficit(gamma=8, total=Estimate(value=t, ci=[None, None]), hetero=Estimate(value=h, ci=[None, None]),
                       temporal=Estimate(value=m, ci=[0.01, 0.02]))

    # 0.0064 - 0.0006 = 0.0058: printed 0.006 = 0.006 - 0.001 did not add up; "≈" says the rounding
    assert deficit_cell(deficit(0.0058, 0.0064, -0.0006)) == "0.006 ≈ 0.006 - 0.001 [0.010, 0.020]"
    assert deficit_cell(deficit(0.064, 0.016, 0.048)) == "0.064 = 0.016 + 0.048 [0.010, 0.020]"
    assert deficit_cell(deficit(0.0002, 0.0006, -0.0004)) == "0.000 ≈ 0.001 + 0.000 [0.010, 0.020]"


def plot_lines(widget) -> list[str]:
    return drawn(widget)


async def test_runlength_histogram_counts_are_integers_and_the_legend_is_off_the_bars(tmp_path):
    import re

    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        for keys in (["3"], ["y"]):  # linear, then log counts
            await pilot.press(*keys)
            await ready(app, pilot)
            lines = plot_lines(app.screen.query_one("#runlengths-plot"))
            ticks = [m.group(1) for line in lines if (m := re.match(r"^\s*([0-9][0-9.e+]*)\s*[┤├┼│]", line))]
            assert ticks, lines
            assert all(float(t) == int(float(t)) and "." not in t for t in ticks), ticks
            assert float(min(ticks, key=float)) >= (1 if keys == ["y"] else 0)
            # the key is the x label under the axis, never a legend drawn inside the canvas
            body = [line for line in lines if line.strip()]
            assert not any("observed" in line or "geometric" in line for line in body[:-1]), lines
            assert "bars: observed, line: geometric" in body[-1]
