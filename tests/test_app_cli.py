"""`specterm` with no command and `specterm open`: clear one-sentence errors, and a light start
(the TUI path never imports torch), and how progress messages merge."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from app_fixture import make_fixture_run
from typer.testing import CliRunner

from specterm import cli

TESTS = Path(__file__).parent


def test_no_runs_in_streams_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, [])
    assert result.exit_code == 2
    assert "no runs in ./streams" in result.output
    assert "Traceback" not in result.output


def test_open_a_missing_run_is_one_sentence(tmp_path):
    result = subprocess.run([sys.executable, "-m", "specterm.cli", "open", str(tmp_path / "nope")],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "is not a run directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_no_command_opens_the_runs_in_streams(tmp_path, monkeypatch):
    make_fixture_run(tmp_path / "streams")
    monkeypatch.chdir(tmp_path)
    opened = {}
    monkeypatch.setattr(cli, "open_tui", lambda runs, **kw: opened.setdefault("runs", runs))
    result = CliRunner().invoke(cli.app, [])
    assert result.exit_code == 0, result.output
    assert [p.name for p in opened["runs"]] == ["tiny-run"]


def test_help_lists_open(tmp_path):
    result = CliRunner().invoke(cli.app, ["--help"])
    assert result.exit_code == 0
    assert "open" in result.output


def test_tui_path_never_imports_torch(tmp_path):
    run = make_fixture_run(tmp_path)
    code = f"""
import asyncio, sys
sys.path.insert(0, {str(TESTS)!r})
from specterm.app import make_app

async def main():
    app = make_app([{str(run)!r}], boot=50, shuffles=2)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in "1234567":
            await pilot.press(key)
            await pilot.pause()
        await app.workers.wait_for_complete()
        assert app.report is not None
asyncio.run(main())
print("torch" in sys.modules, "transformers" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_progress_messages_merge_but_keep_saved_prompts():
    from specterm.engines.progress import Progress
    from specterm.messages import OracleDone, OracleProgress

    generating = OracleProgress(Progress("generating", tokens=3))
    saved = OracleProgress(Progress("saved", prompts_done=1))
    # a queued progress report is superseded by a newer one ...
    assert generating.can_replace(OracleProgress(Progress("generating", tokens=4)))
    assert generating.can_replace(saved)
    # ... except a "saved" one (it adds a point to the running-alpha sparkline), and never by other messages
    assert not saved.can_replace(generating)
    assert not generating.can_replace(OracleDone(path=None))


def test_a_crash_in_the_app_exits_non_zero(tmp_path, monkeypatch):
    """An unhandled exception inside the TUI ends `specterm open` with status 1, not 0."""
    from specterm import app as app_module

    class Crashing(app_module.SpectermApp):
        def on_mount(self) -> None:
            raise RuntimeError("boom")

        def run(self, **kw):  # no terminal under pytest
            return super().run(headless=True, **kw)

    monkeypatch.setattr(app_module, "make_app", lambda runs, **kw: Crashing(runs, **kw))
    with pytest.raises(SystemExit) as exc:
        cli.open_tui([make_fixture_run(tmp_path)])
    assert exc.value.code == 1


def test_a_clean_quit_returns(tmp_path, monkeypatch):
    from specterm import app as app_module

    class Quits(app_module.SpectermApp):
        def on_ready(self) -> None:
            self.exit()

        def run(self, **kw):
            return super().run(headless=True, **kw)

    monkeypatch.setattr(app_module, "make_app", lambda runs, **kw: Quits(runs, **kw))
    assert cli.open_tui([make_fixture_run(tmp_path)]) is None
