"""Snapshots of every screen at 80x24 and 120x36 (pytest-textual-snapshot).

Regenerate after an intended change with `pytest tests/test_app_snapshots.py --snapshot-update`,
then look at the SVGs (snapshot_report.html shows the differences when a test fails)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_fixture import FakeOracle, make_drafter_runs, make_fixture_run, oracle_config
from pilot_settle import settled

from specterm.app import make_app
from specterm.screens.registry import SCREENS

SIZES = [(80, 24), (120, 36)]
FAST = {"boot": 200, "shuffles": 4}
REPORT_SCREENS = [s for s in SCREENS if s.mode != "run"]


def settle(*keys: str):
    async def run_before(pilot) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await settled(pilot.app)  # the point estimates came first: their table's widths are redone at its next Idle

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", REPORT_SCREENS, ids=lambda s: s.mode)
def test_screen(snap_compare, tmp_path, monkeypatch, screen, size):
    monkeypatch.chdir(tmp_path)  # Decide names the run's path in `specterm costs RUN`: relative, the same every time
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=size, run_before=settle(screen.key))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_decide_with_drafters(snap_compare, tmp_path, monkeypatch, size):
    """Drafter runs opened beside the pair: Decide's Which draft? (scrolled to it: Tab to the table, then the
    scroll pane below it)."""
    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path), *make_drafter_runs(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=size, run_before=settle("6"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_streams_cursor_on_a_rejection(snap_compare, tmp_path, size):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=size, run_before=settle("2", "n", "r", "r"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_runlengths_by_position(snap_compare, tmp_path, size):
    """The position view (w): alpha by position bin with CI whiskers against the set's alpha."""
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=size, run_before=settle("3", "w"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_run_screen_mid_run(snap_compare, tmp_path, size, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative out path: the screen shows it, so it must not vary
    monkeypatch.setattr("specterm.screens.run.now", lambda: 0.0)  # the clock's tick adds nothing
    oracle = FakeOracle(block_after=2)
    app = make_app(oracle_config=oracle_config(Path("streams/live")), oracle=oracle, **FAST)

    async def run_before(pilot) -> None:
        assert oracle.blocked.wait(10)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(snap_compare, tmp_path, size):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=size, run_before=settle("f1"))


def test_light_theme(snap_compare, tmp_path):
    app = make_app([make_fixture_run(tmp_path)], **FAST)
    assert snap_compare(app, terminal_size=(120, 36), run_before=settle("2", "t", "right"))
