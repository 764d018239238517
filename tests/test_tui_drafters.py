"""Drafter runs opened in the TUI (SPEC 2b: no per-position bits): the Decide screen shows "Which draft?"
(core/drafted/which_draft.beside_pair, as `specterm report` compares them), every other screen names them
on its drafter line (their statistics do not apply) and none crashes; only drafter runs: Decide shows
Which draft? alone and the other screens say why they are empty.

The drafter runs are hand-made so that their decisions are known by hand (as
tests/test_drafter_store.test_decision_with_costs_by_hand): every prompt holds the stream
L_s = [2, 0, 0, 1, 0] with m_s = [2, 0, 0, 3, 0] (drafter A) or L_s = 0 with the same m_s (drafter B);
c_decode 1, c_verify(1) 1.2, c_verify(2) 1.5, the drafter 0.01 per block (constant samples: CI = point).

    A, g = 1: tokens 5, blocks 3 (d = 1, 0, 1): S = 5 / (1.2 + 1 + 1.2 + 0.03)  = 1.458
    A, g = 2: tokens 5, blocks 2 (d = 2, 2):    S = 5 / (1.5 + 1.5 + 0.02)        = 1.656  -> g_hw 2
    B, g = 1: tokens 5, blocks 5 (d = 1, 0, 0, 1, 0): S = 5 / (1.2 + 1 + 1 + 1.2 + 1 + 0.05) = 0.917 -> g_hw 1
    B, g = 2: d = 2, 0, 0, 2, 0:                S = 5 / (1.5 + 1 + 1 + 1.5 + 1 + 0.05) = 0.826
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from app_fixture import S_A, S_B, make_drafter_runs as drafter_runs, make_fixture_run
from pilot_settle import settled

from textual.worker import WorkerFailed

from specterm.app import make_app
from specterm.screens.registry import SCREENS

FAST = {"boot": 200, "shuffles": 4}
KEYS = {s.mode: s.key for s in SCREENS}
def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def visit(app, pilot, key: str) -> None:
    await pilot.press(key)
    await pilot.pause()
    with contextlib.suppress(WorkerFailed):
        await app.workers.wait_for_complete()
    await settled(app)


def test_hand_values() -> None:
    """The docstring's arithmetic, against the drafter analysis of the same runs (no screen)."""
    import tempfile

    from specterm.core.drafted.drafter_analysis import analyse_drafter
    from specterm.core.store import load_run

    with tempfile.TemporaryDirectory() as tmp:
        a, b = (analyse_drafter([load_run(p)], boot=50) for p in drafter_runs(Path(tmp)))
    for rep, g, s in ((a, 2, S_A), (b, 1, S_B)):
        d = rep.sets["code"].decision_hw
        assert d.gamma_hw == g and d.speedup_hw == pytest.approx(s)
        assert d.speedup_hw_ci[0] == pytest.approx(s) and d.speedup_hw_ci[1] == pytest.approx(s)
    assert a.sets["code"].yield_curve[0].speedup_hw == pytest.approx(5 / (1.2 + 1 + 1.2 + 0.03))
    assert b.sets["code"].yield_curve[1].speedup_hw == pytest.approx(5 / (1.5 + 1 + 1 + 1.5 + 1 + 0.05))


@pytest.mark.anyio
async def test_decide_shows_which_draft_beside_the_pair(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    paths = [make_fixture_run(tmp_path), *drafter_runs(tmp_path)]
    app = make_app(paths, **FAST)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await settled(app)
        assert [d.drafter for d in app.drafters] == ["prompt-lookup:2", "prompt-lookup:3"]
        for mode in ("overview", "streams", "runlengths", "optimum", "policies", "scorecard"):
            await visit(app, pilot, KEYS[mode])
            note = text_of(app, "#drafter-note")
            assert app.screen.query_one("#drafter-note").display, mode
            assert "prompt-lookup:2, prompt-lookup:3" in note and "does not apply" in note, mode
        await visit(app, pilot, KEYS["decide"])
        assert not app.screen.query_one("#drafter-note").display
        shown = text_of(app, "#which-draft")
        lines = shown.splitlines()
        row_a = next(line for line in lines if line.startswith("code") and "prompt-lookup:2" in line)
        row_b = next(line for line in lines if line.startswith("code") and "prompt-lookup:3" in line)
        row_m = next(line for line in lines if line.startswith("code") and "target" not in line and "layers:1" in line)
        assert "* prompt-lookup:2" in row_a and f"{S_A:.2f}x [{S_A:.2f}, {S_A:.2f}]" in row_a and "speculate" in row_a
        assert row_a.split()[3] == "2"  # g_hw
        assert "* " not in row_b and f"{S_B:.2f}x" in row_b and "do not speculate" in row_b and row_b.split()[2] == "1"
        assert "none: costs not measured" in row_m  # the fixture pair has no measured costs: never best
        margin = next(line for line in lines if line.startswith("code:"))
        assert f"{S_A / S_B:.2f} times the runner-up prompt-lookup:3's {S_B:.2f}x" in margin and "clear:" in margin
        exported = app.screen.export_markdown()
        assert "## Which draft?" in exported and "lookup-a (best)" in exported


@pytest.mark.anyio
async def test_only_drafter_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(drafter_runs(tmp_path), **FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        with contextlib.suppress(WorkerFailed):  # the load ends with the sentence every screen but Decide shows
            await app.workers.wait_for_complete()
        await settled(app)
        assert app.report is None and app.error and "drafter runs only" in app.error
        assert "do not apply" in text_of(app, "#status")
        await visit(app, pilot, KEYS["decide"])
        assert "Drafter runs only" in text_of(app, "#status")
        shown = text_of(app, "#which-draft")
        assert "prompt-lookup:2" in shown and "prompt-lookup:3" in shown and f"{S_A:.2f}x" in shown
        assert not app.screen.query_one("#decide-table").display
        for mode in ("streams", "optimum", "scorecard"):
            await visit(app, pilot, KEYS[mode])
            assert "drafter runs only" in text_of(app, "#status")
