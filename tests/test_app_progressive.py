"""Pilot tests of the first paint: point estimates first (boot = 0) with a visible "computing CIs"
state, then the full report; never a value beside a CI of other data (another load, another model
pair); a second open reads the analysis cache."""

from __future__ import annotations

import re
import threading

import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from textual.widgets import DataTable, Static

from specterm.app import SpectermApp, make_app
from specterm.core import analysis
from specterm.core.report import Estimate

SIZE = (120, 36)
FAST = {"boot": 200, "shuffles": 4}
pytestmark = pytest.mark.anyio
NUMERIC_CI = re.compile(r"\[[-+]?\d")  # "[lo, hi]" with a number in it


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)


class PointFirstApp(SpectermApp):
    """Point estimates first under Pilot too (headless apps get the full report only)."""

    POINT_FIRST_HEADLESS = True


def point_first_app(paths, **kw):
    return PointFirstApp(paths, **kw)


class Gate:
    """Holds the bootstrap of the runs named in `hold` until released: an analyse call with boot > 0
    hands over its point estimates (on_point) and then waits, before its bootstrap phase. `calls`
    records each call's (run names, boot, whether on_point was given)."""

    def __init__(self, monkeypatch, hold: set[str]) -> None:
        self.hold, self.calls = hold, []
        self.released = threading.Event()
        real = analysis.analyse

        def gated(runs, *, on_point=None, **kw):
            self.calls.append(([r.name for r in runs], kw.get("boot"), on_point is not None))
            if kw.get("boot", 0) > 0 and {r.name for r in runs} & self.hold:
                def held(point):
                    if on_point is not None:
                        on_point(point)
                    self.released.wait(30)

                return real(runs, on_point=held, **kw)
            return real(runs, on_point=on_point, **kw)

        monkeypatch.setattr(analysis, "analyse", gated)


def estimates(obj):
    """Every Estimate in a report (depth first)."""
    if isinstance(obj, Estimate):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from estimates(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from estimates(v)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            yield from estimates(getattr(obj, name))


def cells(screen) -> str:
    return "\n".join(" | ".join(str(c) for c in t.get_row_at(i)) for t in screen.query(DataTable) for i in range(t.row_count))


def status(screen) -> str:
    s = screen.query_one("#status", Static)
    return str(s.render()) if s.display else ""


async def until(pilot, cond, what: str, tries: int = 400) -> None:
    for _ in range(tries):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_point_estimates_paint_first_then_cis(tmp_path, monkeypatch):
    gate = Gate(monkeypatch, {"tiny-run"})
    app = point_first_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report is not None, "the point estimates")
        await pilot.pause()
        point = app.report
        assert app.ci_pending and point.params.boot == 0
        assert all(e.ci == [None, None] for e in estimates(point))  # no CI at all, so none of other data
        screen = app.screen
        assert "computing CIs" in status(screen) and "B = 200" in status(screen)
        shown = cells(screen)
        assert shown and not NUMERIC_CI.search(shown)  # values only ("[n/a]" at most), no "[lo, hi]"
        await pilot.press("e")  # no export of a report without its CIs
        await pilot.pause()
        assert type(app.screen).__name__ != "ExportScreen"
        assert any("still being computed" in n.message for n in app._notifications)
        await pilot.press("7")  # the Scorecard is verdicts on CIs: it waits
        await pilot.pause()
        assert app.screen.query_one("#body").loading and "computing CIs" in status(app.screen)
        await pilot.press("6")  # so is Decide: each row decides on the CI of S_hw
        await pilot.pause()
        assert app.screen.query_one("#body").loading and "computing CIs" in status(app.screen)
        assert not cells(app.screen)
        await pilot.press("1")
        gate.released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        full = app.report
        assert not app.ci_pending and full.params.boot == 200 and status(app.screen) == ""
        assert gate.calls == [(["tiny-run"], 200, True)]  # one analysis: the point estimates came from its on_point
        assert NUMERIC_CI.search(cells(app.screen))
        # the point estimates were the full report's values (the same shuffles and seed)
        assert [e.value for e in estimates(point)] == [e.value for e in estimates(full)]
        assert any(e.ci != [None, None] for e in estimates(full))
        await pilot.press("7")
        await pilot.pause()
        assert not app.screen.query_one("#body").loading
        await pilot.press("6")
        await pilot.pause()
        assert not app.screen.query_one("#body").loading and NUMERIC_CI.search(cells(app.screen))


async def test_no_stale_ci_when_m_leaves_a_pair_whose_bootstrap_runs(tmp_path, monkeypatch):
    from specterm.core.store import write_run

    gate = Gate(monkeypatch, {"pair-a"})
    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/target"}}, other)
    app = point_first_app([a, b], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report is not None, "pair a's point estimates")
        assert app.ci_pending and [r.name for r in app.report.runs] == ["pair-a"]
        await pilot.press("M")  # leave pair a while its bootstrap is held
        await until(pilot, lambda: app.report is not None and not app.ci_pending, "pair b's full report")
        assert [r.name for r in app.report.runs] == ["pair-b"]
        gate.released.set()  # pair a's bootstrap ends now: its report must not be shown
        await app.workers.wait_for_complete()
        for _ in range(5):
            await pilot.pause(0.05)
        report = app.report
        assert [r.name for r in report.runs] == ["pair-b"] and not app.ci_pending
        assert report.sets["pooled"].n_streams == len(other)
        assert [r.name for r in app.runs] == ["pair-b"]
        await pilot.press("M")  # back to a: computed again (its first analysis never finished)
        await until(pilot, lambda: app.report is not None and not app.ci_pending, "pair a's full report")
        assert [r.name for r in app.report.runs] == ["pair-a"]


async def test_second_open_reads_the_cache_and_paints_the_cis_at_once(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        first = app.report.to_dict()
    gate = Gate(monkeypatch, set())
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gate.calls == []  # no analysis: the cache answered
        assert app.report.to_dict() == first and not app.ci_pending
        assert NUMERIC_CI.search(cells(app.screen))


async def test_boot_zero_has_no_pending_state(tmp_path, monkeypatch):
    gate = Gate(monkeypatch, set())
    app = make_app([make_fixture_run(tmp_path)], boot=0, shuffles=4, use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gate.calls == [(["tiny-run"], 0, False)] and not app.ci_pending and status(app.screen) == ""


class Premounting:
    """The app with its idle pass on under Pilot (headless apps mount screens on their visit only)."""

    PREMOUNT_HEADLESS = True


async def test_idle_pass_mounts_every_screen_and_hidden_screens_catch_up_after_m(tmp_path):
    from specterm.app import SCREENS
    from specterm.core.store import write_run

    class App(Premounting, PointFirstApp):
        pass

    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/bigtarget"}}, other)
    app = App([a, b], **FAST)
    modes = [s.mode for s in SCREENS if s.mode != "run"]
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        def crumb(m: str) -> str:
            found = app._screen_stacks[m][0].query("#crumb")  # composed and mounted a step after _init_mode
            return str(found.first(Static).render()) if found else ""

        # every screen mounted and filled: the last one's mount runs a moment after the idle step that started it
        await until(pilot, lambda: all(m in app._screen_stacks and crumb(m) for m in modes), "every screen mounted")
        assert app.current_mode == "overview"
        crumbs = {m: crumb(m) for m in modes}
        assert all("target" in c and "bigtarget" not in c for c in crumbs.values()), crumbs
        await pilot.press("M")
        await until(pilot, lambda: app.report is not None and not app.ci_pending, "pair b")
        hidden = [app._screen_stacks[m][0] for m in modes if m != "overview"]
        await until(pilot, lambda: not any(s.stale for s in hidden), "hidden screens redrawn in the idle pass")
        for screen in hidden:
            assert "bigtarget" in str(screen.query_one("#crumb", Static).render())
        await pilot.press("4")
        await pilot.pause()
        assert "bigtarget" in str(app.screen.query_one("#crumb", Static).render())


async def test_hidden_screen_redraws_when_shown(tmp_path):
    from specterm.core.store import write_run

    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/bigtarget"}}, other)
    app = make_app([a, b], **FAST)  # headless: no idle pass, so the screen is stale until shown
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()
        optimum = app.screen
        await pilot.press("1")
        await pilot.press("M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert optimum.stale and "bigtarget" not in str(optimum.query_one("#crumb", Static).render())
        await pilot.press("4")
        await pilot.pause()
        assert app.screen is optimum and not optimum.stale
        assert "bigtarget" in str(optimum.query_one("#crumb", Static).render())


async def test_crumb_names_a_non_torch_engine_first(tmp_path):
    """A llama.cpp run of the same pair as a torch run: the crumb says which engine, first (the pair
    text gives way at its end on a narrow screen); a torch run has no prefix."""
    from specterm.core.store import write_run

    torch_run = make_fixture_run(tmp_path, "pair-torch")
    llama = write_run(tmp_path / "pair-llama", {**META, "name": "pair-llama", "backend": {"name": "llama.cpp"}},
                      [s for s in fixture_streams() if s.corpus == "code"])
    for path, prefix in ((llama, True), (torch_run, False)):
        app = SpectermApp([path], **FAST)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = str(app.screen.query_one("#crumb", Static).render())
            assert text.strip().startswith("llama.cpp: ") is prefix, text
