"""Robustness of the TUI (issue 11): every binding of every screen pressed on edge-case runs and on
the shipped runs, at 80x24 and 160x45, never raises; and no DataTable cell is shown cut, after
every screen is visited, after `M` (next model pair) and at the lowest r on Decide.

Cases that fail on today's app are marked xfail(strict=True) with the reason; fixing the bug
turns them into an XPASS failure, which is the sign to drop the mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from edge_runs import EDGE_RUNS
from textual.widgets import Input
from tui_checks import cut_cells

from specterm.app import SCREENS, SpectermApp, make_app, screen_class

pytestmark = pytest.mark.anyio
FAST = {"boot": 50, "shuffles": 2}
SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
SHIPPED = Path(__file__).resolve().parents[1] / "streams"
QUIT_ACTIONS = {"quit", "app.quit"}  # pressed once, last: the app must then exit cleanly
# Textual's own keys that never reach specterm code (copying, jumps that repeat home/end/page keys)
NOT_OURS = {"ctrl+c", "super+c", "ctrl+q", "ctrl+home", "ctrl+end", "ctrl+pageup", "ctrl+pagedown"}
MODES = [s for s in SCREENS if s.mode != "run"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def run_set(name: str, root: Path) -> list[Path]:
    if name == "shipped":
        return sorted(p for p in SHIPPED.iterdir() if (p / "run.json").is_file())
    return EDGE_RUNS[name](root)


def first_key(binding) -> str:
    return binding.key.split(",")[0].strip()


def screen_keys(app: SpectermApp, mode: str) -> list[str]:
    """One key per binding that can act on this screen: the screen class's, the app's, and those
    of the focused widget chain (token view, tables), in a fixed order; quit is pressed last, and
    of the screen keys only 8 (each screen is reached by its own key in turn)."""
    cls = screen_class(next(s for s in SCREENS if s.mode == mode))
    keys: dict[str, None] = {}
    for b in [*cls.BINDINGS, *SpectermApp.BINDINGS]:
        if b.action not in QUIT_ACTIONS and b.key not in NOT_OURS and (not b.action.startswith("switch_screen") or b.key == "8"):
            keys.setdefault(first_key(b), None)
    for key, active in app.screen.active_bindings.items():
        if active.binding.action not in QUIT_ACTIONS and not active.binding.action.startswith("switch_screen"):
            if key not in NOT_OURS:
                keys.setdefault(key, None)
    return list(keys)


async def settle(app, pilot) -> None:
    """Wait until the key's work is done: idle, and any worker it started (M reloads) finished."""
    await pilot.pause()
    if any(w.is_running for w in app.workers):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def back_to(app, pilot, mode: str) -> None:
    """Close anything a key opened (a modal, an input) and return to `mode`'s screen."""
    for _ in range(4):
        if len(app.screen_stack) <= 1:
            break
        await pilot.press("escape")
        await settle(app, pilot)
    if isinstance(app.focused, Input):
        await pilot.press("escape")
        await settle(app, pilot)
    if app.current_mode != mode:
        app.switch_mode(mode)
        await settle(app, pilot)


async def press_everything(paths: list[Path], size: tuple[int, int], start: int = 0) -> tuple[list[str], int | None]:
    """Press every key of every screen from step `start`; returns (the steps done as 'screen key'
    strings, the index of the step that crashed the app or None)."""
    app = make_app(paths, **FAST)
    steps: list[str] = []
    crashed = None
    try:
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            for info in MODES:
                await pilot.press(info.key)
                await settle(app, pilot)
                for key in screen_keys(app, info.mode):
                    steps.append(f"{info.title}: {key}")
                    if len(steps) - 1 < start:
                        continue
                    await pilot.press(key)  # Pilot waits for the app to be idle
                    if any(w.is_running for w in app.workers):
                        await settle(app, pilot)
                    if app._exception is not None:
                        crashed = len(steps) - 1
                        break
                    await back_to(app, pilot, info.mode)
                if crashed is not None:
                    break
            if crashed is None:
                steps.append("q")
                await pilot.press("q")
                await pilot.pause()
    except Exception:  # run_test re-raises the app's exception on exit
        if crashed is None:
            crashed = len(steps) - 1
    return steps, crashed


async def crashing_presses(paths: list[Path], size: tuple[int, int]) -> list[str]:
    """Every step that crashes, restarting the app after each crash and going on from the next step."""
    found, start = [], 0
    while True:
        steps, crashed = await press_everything(paths, size, start)
        if crashed is None:
            return found
        found.append(steps[crashed])
        start = crashed + 1


KNOWN_CRASHES = {
    # filled from a run on today's app: (run set, size) -> reason
}


def key_cases():
    for name in [*EDGE_RUNS, "shipped"]:
        for label in SIZES:
            marks = []
            if (name, label) in KNOWN_CRASHES:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_CRASHES[(name, label)]))
            yield pytest.param(name, label, marks=marks, id=f"{name}-{label}")


@pytest.mark.parametrize("name,label", list(key_cases()))
async def test_every_key_on_every_screen(name, label, tmp_path):
    paths = run_set(name, tmp_path)
    assert await crashing_presses(paths, SIZES[label]) == []
