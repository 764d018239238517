"""The Decide screen shows the engine settings and the calibration table, and `y` on a set's row copies
that set's commands for every engine (core/settings)."""

from __future__ import annotations

import pytest
from app_fixture import make_fixture_run
from pilot_settle import settled

from specterm.app import make_app
from specterm.core.settings import names as nm
from specterm.screens.registry import SCREENS

DECIDE = next(s.key for s in SCREENS if s.mode == "decide")


@pytest.mark.anyio
async def test_decide_shows_and_copies_the_engine_settings(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app([make_fixture_run(tmp_path)], boot=200, shuffles=4)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press(DECIDE)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await settled(app)
        shown = str(app.screen.query_one("#engine-settings").render())
        assert "Engine settings" in shown and "llama.cpp" in shown and "SGLang" in shown
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
        await pilot.press("y")
        await pilot.pause()
        assert copied, "y copied nothing"
        text = copied[0]
        report = app.report
        first = report.set_names[0]
        assert text.startswith("| ") and f"### Engine settings, {first}" in text
        for engine in nm.ENGINES:
            es = report.sets[first].engine_settings[engine]
            assert es.command and es.command in text
