"""The start-up path (issue 21): light imports, runs loaded once, a cached report composed into the
first screen (no loading frame), the loading state when the report is slow, and the pending mark
while the CIs are computed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from pilot_settle import until
from textual.widgets import DataTable, Static

from specterm import cli
from specterm.app import SpectermApp, make_app
from specterm.core.report import analysis
from specterm.screens.overview import PENDING_CI

SIZE = (120, 36)
FAST = {"boot": 200, "shuffles": 4}
pytestmark = pytest.mark.anyio
NUMERIC_CI = re.compile(r"\[[-+]?\d")
HEAVY = ("torch", "transformers", "scipy", "plotext", "llama_cpp", "specterm.core.report.analysis", "specterm.engines.torch",
         "specterm.engines.llamacpp")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)


class Waiting(SpectermApp):
    """The first screen waits for the report (under Pilot as on a terminal); the first screen shown is
    recorded with whether the report was there."""

    FIRST_SCREEN_WAIT_S = 0.4

    def show_first_screen(self, mode: str | None = None) -> None:
        if not self._first_shown:
            self.first_shown_with = (self.report, self.ci_pending, mode or self.initial)
        super().show_first_screen(mode)


class Hold:
    """Holds every analyse call until released (the report is slow to come)."""

    def __init__(self, monkeypatch) -> None:
        self.released = threading.Event()
        real = analysis.analyse

        def held(runs, **kw):
            self.released.wait(30)
            return real(runs, **kw)

        monkeypatch.setattr(analysis, "analyse", held)


def cells(screen) -> str:
    return "\n".join(" | ".join(str(c) for c in t.get_row_at(i)) for t in screen.query(DataTable) for i in range(t.row_count))


def test_the_start_path_imports_nothing_heavy():
    """What `specterm` / `specterm open` import before the first table: no torch, transformers,
    scipy, plotext, llama.cpp, oracle, and not the analysis (a cached report needs none)."""
    code = ("import sys; import specterm.cli, specterm.app, specterm.screens.overview, specterm.core.report.cache, "
            "specterm.core.store; print(' '.join(m for m in " + repr(HEAVY) + " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_python_dash_m_specterm_is_the_cli():
    result = subprocess.run([sys.executable, "-m", "specterm", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "open" in result.stdout


async def test_cached_open_composes_the_first_screen_with_the_report(tmp_path):
    path = make_fixture_run(tmp_path)
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE):
        await app.workers.wait_for_complete()  # fills the cache
    app = Waiting([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: hasattr(app, "first_shown_with"), "the first screen")
        report, pending, mode = app.first_shown_with
        assert report is not None and not pending and mode == "overview"  # composed with the report, not loading
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "OverviewScreen"
        assert not screen.query_one("#body").loading and not screen.query("LoadingIndicator")
        assert NUMERIC_CI.search(cells(screen))


async def test_a_slow_report_shows_the_loading_state_after_the_wait(tmp_path, monkeypatch):
    hold = Hold(monkeypatch)
    app = Waiting([make_fixture_run(tmp_path)], use_cache=False, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not hasattr(app, "first_shown_with")  # still waiting (0.4 s)
        await until(pilot, lambda: hasattr(app, "first_shown_with"), "the first screen")
        assert app.first_shown_with[0] is None  # the wait ran out before the report came
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#body").loading
        assert str(screen.query_one("#status", Static).render()).startswith("Computing the point estimates of ")  # the load's stage (boot > 0: point first)
        hold.released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not screen.query_one("#body").loading and NUMERIC_CI.search(cells(screen))


async def test_a_screen_key_during_the_wait_shows_that_screen(tmp_path, monkeypatch):
    hold = Hold(monkeypatch)
    app = Waiting([make_fixture_run(tmp_path)], use_cache=False, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert app.current_mode == "runlengths" and app.first_shown_with[2] == "runlengths"
        await pilot.pause(app.FIRST_SCREEN_WAIT_S + 0.1)  # the wait's timer must not switch back to the Overview
        assert app.current_mode == "runlengths"
        hold.released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.current_mode == "runlengths" and app.report is not None


async def test_runs_given_to_the_app_are_not_loaded_again(tmp_path, monkeypatch):
    """The CLI's own load is the app's: the worker reads no run, the first time nor at `M`."""
    import specterm.core.store as store
    from specterm.core.store import load_runs, read_run_files, write_run

    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/target"}}, other)
    loaded = load_runs([a, b])
    reads = []
    monkeypatch.setattr(store, "read_run_files", lambda path: reads.append([path]) or read_run_files(path))
    app = make_app([a, b], loaded=loaded, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r.name for r in app.report.runs] == ["pair-a"]
        await pilot.press("M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [r.name for r in app.report.runs] == ["pair-b"]
        assert reads == []
        app.open_results([a])  # other paths (e.g. the oracle's output): read from disk
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [[p.name for p in r] for r in reads] == [["pair-a"]] and app.loading.loaded is not None


def no_command_harness(monkeypatch) -> tuple[list, list[dict]]:
    """`specterm` (no command) made headless: (the paths load_run reads, the keyword arguments of every
    app made); each app quits once its full report and its runs are both in."""
    import specterm.core.store as store
    import specterm.core.store.runs as runs_module
    from specterm import app as app_module

    real = runs_module.load_run
    reads: list = []
    # the package's name too: its lazy names (PEP 562) are kept once looked up
    monkeypatch.setattr(runs_module, "load_run", lambda p, *a: reads.append(p) or real(p, *a))
    monkeypatch.setattr(store, "load_run", runs_module.load_run)

    class Quits(app_module.SpectermApp):
        def on_report_ready(self, message) -> None:
            super().on_report_ready(message)
            self.quit_when_done()

        def on_runs_loaded(self, message) -> None:
            super().on_runs_loaded(message)
            self.quit_when_done()

        def quit_when_done(self) -> None:
            if self.report_complete and self.runs is not None:
                self.call_after_refresh(self.exit)

        def run(self, **kw):  # no terminal under pytest
            return super().run(headless=True, **kw)

    made: list[dict] = []

    def make(paths, **kw):
        made.append(kw)
        return Quits(paths, **kw)

    monkeypatch.setattr(app_module, "make_app", make)
    return reads, made


def test_no_command_loads_each_run_once(tmp_path, monkeypatch):
    """`specterm` loads every run to warn about bad ones and hands them to the app as they are."""
    from typer.testing import CliRunner

    make_fixture_run(tmp_path / "streams", "run-a")
    make_fixture_run(tmp_path / "streams", "run-b")
    monkeypatch.chdir(tmp_path)
    reads, made = no_command_harness(monkeypatch)
    result = CliRunner().invoke(cli.app, [])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in reads) == ["run-a", "run-b"]  # once each, by the CLI
    assert [r.name for r in made[0]["loaded"]] == ["run-a", "run-b"]


async def test_the_overview_marks_pending_cis_then_shows_the_real_ones(tmp_path, monkeypatch):
    """While ci_pending: every CI of the Overview reads PENDING_CI (never "[n/a]", never a number),
    the scorecard line shows no verdict; then the full report's CIs and verdicts."""
    released = threading.Event()
    real = analysis.analyse

    def held(runs, *, on_point=None, **kw):
        def point(report):
            on_point(report)
            released.wait(30)

        return real(runs, on_point=point if on_point is not None else None, **kw)

    monkeypatch.setattr(analysis, "analyse", held)

    app = SpectermApp([make_fixture_run(tmp_path)], use_cache=False, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report is not None, "the point estimates")
        await pilot.pause()
        assert app.ci_pending
        shown = cells(app.screen)
        assert PENDING_CI in shown and "[n/a]" not in shown and not NUMERIC_CI.search(shown)
        rows = {str(t.get_row_at(i)[0]): [str(c) for c in t.get_row_at(i)] for t in app.screen.query(DataTable) for i in range(t.row_count)}
        assert rows["pooled"][3].endswith(PENDING_CI)  # alpha [CI]
        note = str(app.screen.query_one("#overview-note", Static).render())
        assert PENDING_CI in note and "[n/a]" not in note
        verdicts = str(app.screen.query_one("#overview-verdicts", Static).render())
        assert "…" in verdicts and not re.search(r"supported|falsified|inconclusive", verdicts)
        released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.ci_pending
        shown = cells(app.screen)
        assert PENDING_CI not in shown and NUMERIC_CI.search(shown)
        pooled = app.report.sets["pooled"]
        lo, hi = pooled.alpha_ci
        assert f"[{lo:.3f}, {hi:.3f}]" in shown  # the full report's own CI
        verdicts = str(app.screen.query_one("#overview-verdicts", Static).render())
        # the fixture's 3 prompts per corpus: every row reads "too few prompts (n = 3 in a corpus; needs 10 per corpus)", said once per line
        assert "…" not in verdicts and re.search(r"supported|falsified|inconclusive|too few prompts \(n = 3 in a corpus; needs 10 per corpus\)", verdicts)


async def test_a_revisit_keeps_styles_and_a_theme_change_still_reaches_hidden_screens(tmp_path):
    """ReportScreen skips Textual's restyle of every widget at ScreenResume when the stylesheet did
    not change; after `t` a hidden screen is restyled when shown (its crumb takes the new theme's
    colour, as the screen shown when `t` was pressed did)."""
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()
        optimum = app.screen
        dark = str(optimum.query_one("#crumb").rich_style)
        await pilot.press("1")
        await pilot.pause()
        restyled = []
        optimum.update_node_styles = lambda *a, **k: restyled.append(1)  # type: ignore[method-assign]
        await pilot.press("4")
        await pilot.pause()
        assert app.screen is optimum and restyled == []  # a revisit: nothing changed, nothing restyled
        del optimum.update_node_styles
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        await pilot.pause()
        assert not app.current_theme.dark
        light = str(app.screen.query_one("#crumb").rich_style)
        assert light != dark
        await pilot.press("4")
        await pilot.pause()
        assert app.screen is optimum and str(optimum.query_one("#crumb").rich_style) == light


def test_the_tui_command_lines_skip_typer_parsing_and_the_rest_do_not():
    from pathlib import Path

    from specterm.cli import tui_shortcut

    assert tui_shortcut([]) == []
    assert tui_shortcut(["open", "a", "b/c"]) == [Path("a"), Path("b/c")]
    for argv in (["open"], ["open", "a", "--boot", "5"], ["open", "--help"], ["open", "a", "--no-cache"], ["--help"],
                 ["report", "a"], ["list"], ["open", "-g", "4", "a"]):
        assert tui_shortcut(argv) is None, argv


def test_specterm_open_starts_without_pydantic(tmp_path):
    """typer parses parameters with pydantic (~0.1 s to import), and typer itself takes 30-45 ms;
    `specterm open RUN` (the script's entry point, launch.main) needs neither, and its errors read as
    the typer path's."""
    run = make_fixture_run(tmp_path)
    code = f"""
import sys
import specterm.app as app_module
from specterm import launch

class Quits(app_module.SpectermApp):
    def on_ready(self):
        self.exit()

    def run(self, **kw):
        return super().run(headless=True, **kw)

app_module.make_app = lambda paths, **kw: Quits(paths, **kw)
sys.argv = ["specterm", "open", {str(run)!r}]
launch.main()
print("pydantic" in sys.modules, "typer" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
    missing = subprocess.run([sys.executable, "-m", "specterm", "open", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and "is not a run directory" in missing.stderr and "Traceback" not in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = subprocess.run([sys.executable, "-m", "specterm"], capture_output=True, text=True, cwd=empty)
    assert none.returncode == 2 and "no runs in ./streams" in none.stderr and "Traceback" not in none.stderr


def test_cli_commands_start_without_pydantic(tmp_path):
    """typer 0.29 imports pydantic and builds a validator per parameter at every command (0.10 s of a
    0.27 s warm report of 1M positions); pyproject keeps typer below it. A report, cold and warm, and
    a command's --help run through typer without pydantic."""
    run = make_fixture_run(tmp_path)
    code = f"""
import sys
from specterm.cli import app
report = ["report", {str(run)!r}, "--format", "json", "--boot", "20"]
for argv in (report, report, ["list", "--help"]):  # the report cold, then warm (by its alias)
    try:
        app(argv)
    except SystemExit as e:
        assert not e.code, e.code
print("pydantic" in sys.modules, file=sys.stderr)
"""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("SPECTERM_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stderr.split()[-1] == "False"
    assert list((tmp_path / "cache").rglob("*.alias.json"))  # the first report stored the alias the second reads


def test_no_command_opens_warm_by_the_alias_and_says_the_load_warnings_again(tmp_path, monkeypatch):
    """`specterm` a second time: the analysis cache's alias for the bytes of every run's files says that
    every run loads, so the CLI loads none (the app opens them as `specterm open` does) and repeats the
    warnings their load raised (here a damaged newline: the record kept). A changed file misses it."""
    from specterm.core.store import RECORDS_FILE
    from typer.testing import CliRunner

    make_fixture_run(tmp_path / "streams", "run-a")
    b = make_fixture_run(tmp_path / "streams", "run-b")
    data = (b / RECORDS_FILE).read_bytes()
    (b / RECORDS_FILE).write_bytes(data[:-1] + b"*")  # the last newline damaged: kept, with a warning
    monkeypatch.chdir(tmp_path)
    reads, made = no_command_harness(monkeypatch)
    cold = CliRunner().invoke(cli.app, [])
    assert cold.exit_code == 0, cold.output
    assert cold.output.count("stray byte") == 1
    assert sorted(p.name for p in reads) == ["run-a", "run-b"]  # the CLI's lenient load, cold
    files = made[0]["loaded_files"]
    assert [f.records for f in files] == [(r.path / RECORDS_FILE).read_bytes() for r in made[0]["loaded"]]
    reads.clear()
    warm = CliRunner().invoke(cli.app, [])
    assert warm.exit_code == 0, warm.output
    assert warm.output.count("stray byte") == 1  # said again, from the alias
    assert made[1].get("loaded") is None  # the app opened the runs itself, as `specterm open` does
    assert sorted(p.name for p in reads) == ["run-a", "run-b"]  # by the app's worker, after the report
    (b / RECORDS_FILE).write_bytes(data)  # repaired: other bytes, no alias, the lenient load again
    reads.clear()
    again = CliRunner().invoke(cli.app, [])
    assert again.exit_code == 0 and "stray byte" not in again.output
    assert made[2]["loaded"] is not None


def test_a_warm_open_paints_its_report_before_importing_numpy(tmp_path):
    """With the analysis cache warm, `specterm open RUN` shows the cached report (found by the runs'
    files) before anything imports numpy (~55-80 ms here): numpy comes with the runs, after the frame.
    (hashlib is imported: the cache hashes with hashlib.blake2b, not CPython's private _blake2, issue 36.)"""
    import os

    run = make_fixture_run(tmp_path)
    code = f"""
import sys
import specterm.app as app_module
from specterm import launch

class Quits(app_module.SpectermApp):
    def on_report_ready(self, message):
        super().on_report_ready(message)
        if message.report is not None and not hasattr(self, "seen"):
            self.seen = "numpy" in sys.modules
            self.call_after_refresh(self.done)

    def done(self):
        print("numpy-at-report", self.seen)
        self.exit()

    def run(self, **kw):
        return super().run(headless=True, **kw)

app_module.make_app = lambda paths, **kw: Quits(paths, **kw)
sys.argv = ["specterm", "open", {str(run)!r}]
launch.main()
"""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("SPECTERM_CACHE", None)

    def opened(**extra: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**env, **extra}).stdout.split()

    cold, warm = opened(SPECTERM_HEADSTART="0"), opened()
    assert [cold[:2], warm[:2]] == [["numpy-at-report", "True"], ["numpy-at-report", "False"]]  # cold: analysed; warm: not yet
    # cold with the head start (specterm/headstart.py): the child's report, before this process imports numpy
    assert opened(XDG_CACHE_HOME=str(tmp_path / "xdg-2"))[:2] == ["numpy-at-report", "False"]


def test_pending_cis_choose_the_layout_the_cis_will_have():
    """The Overview's columns are chosen with each pending CI measured as a CI, so they do not
    change when the CIs come: at 80 columns the shipped-like widths give NARROW both times."""
    from specterm.screens.overview import MIDDLE, NARROW, PENDING_WIDTH, layout, pending_cis

    full = ["16", "1,043", "0.915 [0.898, 0.931]", "0.612", "0.99", "+0.117 [0.05, 0.20]", "1.35x [1.10, 1.62]",
            "0.056 = 0.030 + 0.026 [0.008, 0.044]", "+0.101 [0.03, 0.18]"]
    point = ["16", "1,043", "0.915 [n/a]", "0.612", "0.99", "+0.117 [n/a]", "1.35x [n/a]",
             "0.056 = 0.030 + 0.026 [n/a]", "+0.101 [n/a]"]
    rows_full = [("code", ["code", *full]), ("pooled", ["pooled", *full])]
    shown = [("code", ["code", *pending_cis(point, True)]), ("pooled", ["pooled", *pending_cis(point, True)])]
    sized = [("code", ["code", *pending_cis(point, True, PENDING_WIDTH)]), ("pooled", ["pooled", *pending_cis(point, True, PENDING_WIDTH)])]
    with_cis, _ = layout(rows_full, 78)
    assert with_cis is NARROW
    assert layout(shown, 78)[0] is MIDDLE  # measured as "[…]", the point table would take D/D_geom ...
    columns, rows = layout(shown, 78, sized=sized)
    assert columns is with_cis  # ... and lose it when the CIs come; measured as CIs it does not
    assert rows[0][1][2] == "0.915\n[…]"
