"""Pilot tests of the first paint: point estimates first (boot = 0) with a visible "computing CIs"
state, then the full report; never a value beside a CI of other data (another load, another model
pair); a second open reads the analysis cache."""

from __future__ import annotations

import re
import threading

import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from pilot_settle import until
from textual.widgets import DataTable, Static

from specterm import compat_textual
from specterm.app import SpectermApp, make_app
from specterm.core.report import analysis
from specterm.core.report.types import Estimate

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


def point_first_app(paths, **kw):
    """The app as a terminal runs it: point estimates first whenever boot > 0."""
    return SpectermApp(paths, **kw)


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


class CisGate:
    """Holds every analysis with boot > 0 after it hands over the report with every CI (on_cis), before
    its borderline check, until released."""

    def __init__(self, monkeypatch) -> None:
        self.released = threading.Event()
        real = analysis.analyse

        def gated(runs, *, on_cis=None, **kw):
            def held(report):
                if on_cis is not None:
                    on_cis(report)
                self.released.wait(30)

            return real(runs, on_cis=held if kw.get("boot", 0) > 0 else on_cis, **kw)

        monkeypatch.setattr(analysis, "analyse", gated)


async def test_every_ci_shows_before_the_borderline_check_which_the_verdicts_screens_say(tmp_path, monkeypatch):
    """With every CI in and the verdicts still checked under seeds 1-4: the Overview shows every CI and
    the verdicts with a note, the Scorecard shows its verdicts under a status line and its export
    waits, Decide shows as it will; the full report then clears both."""
    gate = CisGate(monkeypatch)
    app = point_first_app([make_fixture_run(tmp_path)], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.verdicts_pending, "every CI, before the borderline check")
        await pilot.pause()
        early = app.report
        assert not app.ci_pending and not app.report_complete and early.params.boot == 200
        assert not any(row.borderline or row.seed_verdicts for row in early.scorecard)
        assert NUMERIC_CI.search(cells(app.screen)) and status(app.screen) == ""  # the Overview: every CI, no wait
        verdicts = str(app.screen.query_one("#overview-verdicts", Static).render())
        assert "checking each under bootstrap seeds 1-4" in verdicts and "…" not in verdicts
        await pilot.press("7")
        await pilot.pause()
        assert not app.screen.query_one("#body").loading and cells(app.screen)
        assert "checking the verdicts" in status(app.screen) and "seeds 1-4" in status(app.screen)
        await pilot.press("e")  # the scorecard without its borderline marks is not exported
        await pilot.pause()
        assert type(app.screen).__name__ != "ExportScreen"
        assert any("seeds 1-4" in n.message for n in app._notifications)
        await pilot.press("6")  # Decide shows no scorecard row (Q5/Q6 are judged at the report's seed): no wait there
        await pilot.pause()
        assert not app.screen.query_one("#body").loading and "checking" not in status(app.screen)
        gate.released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.report_complete and not app.verdicts_pending and status(app.screen) == ""
        assert any(row.seed_verdicts for row in app.report.scorecard)  # the check ran
        assert [(r.id, r.verdict) for r in app.report.scorecard] == [(r.id, r.verdict) for r in early.scorecard]


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
    """The screen's status line ("" when hidden, or before the first screen is shown: Textual's blank one)."""
    found = screen.query("#status").results(Static)
    s = next(found, None)
    return str(s.render()) if s is not None and s.display else ""


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
        await until(pilot, lambda: app.report_complete, "pair b's full report")
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
        await until(pilot, lambda: app.report_complete, "pair a's full report")
        assert [r.name for r in app.report.runs] == ["pair-a"]


async def opened_report(path):
    """The report (as a dict) of one open of `path`, once its analysis is done (fills the cache)."""
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        return app.report.to_dict()


async def test_second_open_reads_the_cache_and_paints_the_cis_at_once(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    first = await opened_report(path)
    gate = Gate(monkeypatch, set())
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gate.calls == []  # no analysis: the cache answered
        assert app.report.to_dict() == first and not app.ci_pending
        assert NUMERIC_CI.search(cells(app.screen))


def aliases():
    from specterm.core.report import cache

    return sorted(cache.cache_dir().glob("*.alias.json"))


class Ordered(SpectermApp):
    """Records the order in which the report and the runs reach the app, and the breadcrumb each
    time a screen draws it while the runs are not there yet."""

    def on_report_ready(self, message) -> None:
        self.__dict__.setdefault("seen", []).append(("report", message.report is not None))
        super().on_report_ready(message)

    def on_runs_loaded(self, message) -> None:
        self.__dict__.setdefault("seen", []).append(("runs", True))
        super().on_runs_loaded(message)


async def test_a_warm_open_shows_the_report_found_by_the_files_before_it_parses_the_runs(tmp_path, monkeypatch):
    """The second open finds the report by the bytes of the runs' files (an alias), shows it with
    the pair named in the breadcrumb, and only then parses the runs (from the same bytes); their own
    key is the entry's, so the alias stays."""
    from specterm.screens.base import ReportScreen

    path = make_fixture_run(tmp_path)
    first = await opened_report(path)
    (alias,) = aliases()
    written = alias.read_bytes()
    gate = Gate(monkeypatch, set())
    crumbs = []
    real = ReportScreen.update_crumb

    def update_crumb(screen):
        real(screen)
        if screen.app.runs is None:
            crumbs.append(str(screen.query_one("#crumb", Static).render()))

    monkeypatch.setattr(ReportScreen, "update_crumb", update_crumb)
    from specterm.screens.overview import OverviewScreen

    shows = []
    real_show = OverviewScreen.show_report
    monkeypatch.setattr(OverviewScreen, "show_report", lambda screen, report: shows.append(report) or real_show(screen, report))
    app = Ordered([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gate.calls == []  # no analysis
        assert app.seen == [("report", True), ("runs", True)]  # the report first, the runs after its frame
        assert app.report.to_dict() == first and not app.ci_pending
        assert [r.name for r in app.runs] == ["tiny-run"] and app.pair_cache[0][1] is app.report
        final = str(app.screen.query_one("#crumb", Static).render())  # drawn from the runs
        assert final.startswith("layers:1 -> target · ")
        assert crumbs and all(c == final for c in crumbs)  # the same pair, named before the runs came
        assert len(shows) == 1 and shows[0] is app.report  # the runs only renamed the pair: no second drawing
        assert NUMERIC_CI.search(cells(app.screen))
    assert aliases() == [alias] and alias.read_bytes() == written


class MountSeen(SpectermApp):
    """Records, as on_mount returns (before any worker or frame), the report and the screen shown."""

    def on_mount(self) -> None:
        super().on_mount()
        self.at_mount = (self.report, type(self.screen).__name__)


async def test_a_warm_open_has_its_report_in_the_first_screen_as_mount_returns(tmp_path):
    """Warm, the cached report is found on the UI thread in on_mount and composed into the first
    screen: when on_mount returns the report is the cached one and the Overview shows it (cold, the
    report comes later from the load worker, and the first screen is a loading state)."""
    from specterm.core.report.types import Report

    path = make_fixture_run(tmp_path)
    cold = MountSeen([path], **FAST)
    async with cold.run_test(size=SIZE) as pilot:
        assert cold.at_mount[0] is None  # nothing cached yet: the worker analyses
        await cold.workers.wait_for_complete()
        await pilot.pause()
        first = cold.report.to_dict()
    warm = MountSeen([path], **FAST)
    async with warm.run_test(size=SIZE) as pilot:
        report, screen = warm.at_mount
        assert isinstance(report, Report) and report.to_dict() == first
        assert screen == "OverviewScreen"
        await warm.workers.wait_for_complete()
        await pilot.pause()
        assert warm.report is report and NUMERIC_CI.search(cells(warm.screen))


async def test_one_bit_edited_in_the_records_misses_the_alias_and_the_numbers_change(tmp_path, monkeypatch):
    """Same size, same mtime, one bit of one record (its checksum redone): the files' digest differs,
    so the alias is not found, the runs are analysed again, and the numbers are the new runs'."""
    import json
    import os

    from specterm.core.store import CHECKSUM_FIELD, RECORDS_FILE, load_run, record_checksum

    path = make_fixture_run(tmp_path)
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        before = app.report
    records = path / RECORDS_FILE
    stat = records.stat()
    lines = records.read_bytes().split(b"\n")
    rec = json.loads(lines[0])
    rec["bits"] = rec["bits"][:3] + ("1" if rec["bits"][3] == "0" else "0") + rec["bits"][4:]
    rec.pop("draft_argmax", None)  # bits must agree with the stored argmaxes: drop them, as an import would
    rec[CHECKSUM_FIELD] = record_checksum(rec)
    new_line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode()
    records.write_bytes(b"\n".join([new_line, *lines[1:]]))
    os.utime(records, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    load_run(path)  # still a valid run
    gate = Gate(monkeypatch, set())
    app = make_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(gate.calls) == 1  # analysed again
        assert app.report.to_dict() != before.to_dict()
        assert app.report.to_dict() == analysis.analyse([load_run(path)], gamma=8, seed=0, **FAST).to_dict()
    assert len(aliases()) == 2  # one per content of the files


@pytest.mark.parametrize("damage", ["garbage", "other key", "not an alias"])
async def test_a_damaged_alias_is_ignored_and_rewritten(tmp_path, monkeypatch, damage):
    import json

    path = make_fixture_run(tmp_path)
    first = await opened_report(path)
    (alias,) = aliases()
    good = alias.read_bytes()
    entry = json.loads(good)
    if damage == "garbage":
        alias.write_bytes(b"\x80 not json")
    elif damage == "other key":
        entry["key"]["group"] = 7
        alias.write_text(json.dumps(entry))
    else:
        entry["groups"] = 0
        alias.write_text(json.dumps(entry))
    gate = Gate(monkeypatch, set())
    app = Ordered([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.seen == [("runs", True), ("report", True)]  # the normal path: runs, then the cached report
        assert gate.calls == [] and app.report.to_dict() == first  # the entry itself was fine
    assert alias.read_bytes() == good  # rewritten


async def test_an_alias_to_other_runs_is_caught_once_the_runs_are_parsed(tmp_path, monkeypatch):
    """An alias that points to another run set's entry (a hand-copied cache, say): the report shown
    from it is withdrawn as soon as the runs parsed from the same bytes give another key, and the
    right report replaces it; the alias is rewritten to the right entry."""
    import json

    from specterm.core.store import write_run

    a = make_fixture_run(tmp_path, "run-a")
    b = write_run(tmp_path / "run-b", {**META, "name": "run-b"}, [s for s in fixture_streams() if s.corpus == "code"])
    reports = {}
    for p in (a, b):
        app = make_app([p], **FAST)
        async with app.run_test(size=SIZE) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            reports[p.name] = app.report.to_dict()
    entries = {json.loads(x.read_bytes())["key"]["files"][0]["path"]: x for x in aliases()}
    alias_a, alias_b = entries[str(a.resolve())], entries[str(b.resolve())]
    forged = json.loads(alias_a.read_bytes())
    right = forged["content"]
    forged["content"] = json.loads(alias_b.read_bytes())["content"]
    from specterm.core.report import cache  # a forger who also rewrites the digest (issue 38): caught after parsing all the same

    forged["digest"] = cache.entry_digest(forged["key"], cache._canonical(cache._alias_body(forged)))
    alias_a.write_text(json.dumps(forged))
    gate = Gate(monkeypatch, set())
    app = Ordered([a], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.seen == [("report", True), ("runs", True), ("report", False), ("report", True)]
        assert gate.calls == [] and app.report.to_dict() == reports["run-a"]
        assert [r.name for r in app.runs] == ["run-a"] and [r.name for r in app.report.runs] == ["run-a"]
    assert json.loads(alias_a.read_bytes())["content"] == right


async def test_boot_zero_has_no_pending_state(tmp_path, monkeypatch):
    gate = Gate(monkeypatch, set())
    app = make_app([make_fixture_run(tmp_path)], boot=0, shuffles=4, use_cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gate.calls == [(["tiny-run"], 0, False)] and not app.ci_pending and status(app.screen) == ""


async def test_idle_pass_mounts_every_screen_and_hidden_screens_catch_up_after_m(tmp_path):
    from specterm.app import SCREENS
    from specterm.core.store import write_run

    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/bigtarget"}}, other)
    app = SpectermApp([a, b], **FAST)  # as a terminal runs it: the idle pass mounts every screen (under Pilot too)
    modes = [s.mode for s in SCREENS if s.mode != "run"]
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        def crumb(m: str) -> str:
            found = compat_textual.screen_stacks(app)[m][0].query("#crumb")  # composed and mounted a step after _init_mode
            return str(found.first(Static).render()) if found else ""

        # every screen mounted and filled: the last one's mount runs a moment after the idle step that started it
        await until(pilot, lambda: all(m in compat_textual.screen_stacks(app) and crumb(m) for m in modes), "every screen mounted")
        assert app.current_mode == "overview"
        crumbs = {m: crumb(m) for m in modes}
        assert all("target" in c and "bigtarget" not in c for c in crumbs.values()), crumbs
        await pilot.press("M")
        await until(pilot, lambda: app.report_complete, "pair b")
        hidden = [compat_textual.screen_stacks(app)[m][0] for m in modes if m != "overview"]
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
    class NoIdlePass(SpectermApp):
        IDLE_STEP_S = 600.0  # the idle pass would redraw it first: here it stays stale until shown

    app = NoIdlePass([a, b], **FAST)
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


async def test_head_names_the_engine(tmp_path):
    """A llama.cpp run of the same pair as a torch run: the head line says which engine, and a torch
    run's says torch (issue 37: the engine is named on every screen, torch too)."""
    from specterm.core.store import write_run

    torch_run = make_fixture_run(tmp_path, "pair-torch")
    llama = write_run(tmp_path / "pair-llama", {**META, "name": "pair-llama", "backend": {"name": "llama.cpp"}},
                      [s for s in fixture_streams() if s.corpus == "code"])
    for path, engine in ((llama, "llama.cpp"), (torch_run, "torch")):
        app = SpectermApp([path], **FAST)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = str(app.screen.query_one("#head", Static).render())
            assert text.strip().startswith(f"Overview · run 1/1 · {engine} · costs "), text  # the fixture stores no -n


async def test_the_loading_line_says_what_the_load_is_doing(tmp_path, monkeypatch):
    """While a screen waits, its line names the stage: parsing the runs (their size on disk), then
    computing the point estimates (positions and prompts of the runs); each stage is held here."""
    from specterm.core import store

    path = make_fixture_run(tmp_path)
    size_mb = sum(f.stat().st_size for f in path.iterdir()) / 1e6
    streams = store.load_run(path).streams
    positions, prompts = sum(int(s.bits.size) for s in streams), len(streams)
    parse_go, analyse_go = threading.Event(), threading.Event()
    real_load, real_analyse = store.load_run, analysis.analyse

    def held_load(*a, **k):
        assert parse_go.wait(30)
        return real_load(*a, **k)

    def held_analyse(*a, **k):
        assert analyse_go.wait(30)
        return real_analyse(*a, **k)

    monkeypatch.setattr(store, "load_run", held_load)
    monkeypatch.setattr(analysis, "analyse", held_analyse)
    app = point_first_app([path], **FAST)
    async with app.run_test(size=SIZE) as pilot:
        parsing = f"Parsing the runs (1 run, {size_mb:,.1f} MB) ..."
        await until(pilot, lambda: status(app.screen) == parsing, "the parsing line")
        assert app.screen.query_one("#body").loading
        parse_go.set()
        computing = f"Computing the point estimates of {positions:,} positions in {prompts:,} prompts ..."
        await until(pilot, lambda: status(app.screen) == computing, "the computing line")
        await pilot.press("3")  # another screen waiting for the same load says the same
        await until(pilot, lambda: status(app.screen) == computing, "the computing line on Optimum")
        analyse_go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.report_complete and status(app.screen) == ""
