"""The head start of a cold open (specterm/headstart.py): a child process analyses the runs while the
app starts. Its reports are the in-process analysis, bit for bit; the app shows them only for the
bytes it read itself, withdraws them when the parsed runs are not the child's, analyses on its own
when the child says nothing useful, and the child never outlives `specterm open`."""

from __future__ import annotations

import json
import threading

import pytest
from app_fixture import make_fixture_run
from pilot_settle import until

from specterm.app import SpectermApp, make_app
from specterm.core.report import analysis, cache
from specterm.core.store import CHECKSUM_FIELD, RECORDS_FILE, load_run, read_run_files, record_checksum
from specterm.headstart import HeadStart

FAST = {"gamma": 8, "boot": 60, "shuffles": 2, "seed": 0}
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)
    monkeypatch.delenv("SPECTERM_HEADSTART", raising=False)


def drained(head: HeadStart) -> list[dict]:
    """Every message of the child, in order (it has ended when this returns)."""
    out = []
    while (m := head.read()) is not None:
        out.append(m)
    head.close()
    return out


class Replay(HeadStart):
    """A head start that says `messages` (a child's, possibly altered) and nothing more."""

    def __init__(self, paths, params, messages, key=None):
        self.paths, self.params, self.messages, self.closed = tuple(paths), dict(params), list(messages), False
        self.key, self.lenient, self.delivered, self.stored, self._lock = key, False, False, [], threading.Lock()

    def _receive(self):
        return self.messages.pop(0) if self.messages else None

    def close(self):
        self.closed = True


def flip_one_bit(path) -> None:
    """One accept bit of the first record flipped (its checksum redone): a valid run, other numbers."""
    records = path / RECORDS_FILE
    lines = records.read_bytes().split(b"\n")
    rec = json.loads(lines[0])
    rec["bits"] = rec["bits"][:3] + ("1" if rec["bits"][3] == "0" else "0") + rec["bits"][4:]
    rec.pop("draft_argmax", None)  # bits must agree with the stored argmaxes: drop them, as an import would
    rec[CHECKSUM_FIELD] = record_checksum(rec)
    records.write_bytes(b"\n".join([json.dumps(rec, separators=(",", ":")).encode(), *lines[1:]]))


def canonical(d: dict) -> str:
    return json.dumps(d, sort_keys=True)


def with_foreign_full(said: list[dict]) -> dict:
    """The child's messages with its full report (the last) replaced by one with other numbers; returns it."""
    foreign = json.loads(json.dumps(said[-1]["report"]))
    foreign["sets"]["pooled"]["alpha"] = 0.123456
    said[-1]["report"] = foreign
    return foreign


def forbid_analysis(monkeypatch) -> None:
    """The app's own analysis fails the test (the child, another process, is not affected)."""
    def no(*a, **k):
        raise AssertionError("the app analysed although the head start had the report")

    monkeypatch.setattr(analysis, "analyse", no)


async def final_report(app) -> str:
    """The report the app shows once its load is done (canonical JSON)."""
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        return canonical(app.report.to_dict())


def test_the_childs_messages_are_the_in_process_analysis(tmp_path):
    """fkey and key are those of the bytes and runs, the point report is analyse(boot = 0), the report
    with every CI analyse(...)'s but for the borderline check, the full report analyse(...), bit for
    bit (through JSON)."""
    from specterm.core.report.types import Report

    path = make_fixture_run(tmp_path)
    head = HeadStart.start([path], FAST)
    assert head is not None
    first, point, cis, full = drained(head)  # the key message is kept and read past
    run = load_run(path)
    assert first["fkey"] == json.loads(json.dumps(cache.files_key([read_run_files(path)], FAST, 0)))
    assert head.key == json.loads(json.dumps(cache.cache_key([run], FAST)))
    assert (first["groups"], first["first"]) == (1, 0)
    assert point["complete"] is False and "cis" not in point and full["complete"] is True
    assert cis["complete"] is False and cis["cis"] is True
    expected_point = analysis.analyse([run], **{**FAST, "boot": 0}).to_dict()
    expected = analysis.analyse([run], **FAST).to_dict()
    assert canonical(Report.from_dict(point["report"]).to_dict()) == canonical(expected_point)
    assert canonical(Report.from_dict(full["report"]).to_dict()) == canonical(expected)
    early = Report.from_dict(cis["report"])
    assert not any(row.borderline or row.seed_verdicts for row in early.scorecard)
    assert [(r.id, r.verdict) for r in early.scorecard] == [(r["id"], r["verdict"]) for r in expected["scorecard"]]
    assert early.to_dict()["sets"] == expected["sets"]  # every CI
    assert head.proc.returncode == 0


def test_off_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTERM_HEADSTART", "0")
    assert HeadStart.start([make_fixture_run(tmp_path)], FAST) is None


@pytest.mark.anyio
async def test_the_app_shows_the_childs_report_without_analysing(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    expected = analysis.analyse([load_run(path)], **FAST).to_dict()
    head = HeadStart.start([path], FAST)
    forbid_analysis(monkeypatch)
    app = make_app([path], head_start=head, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == canonical(expected)
        assert not app.ci_pending and app.runs is not None
    assert head.proc.poll() is not None  # ended, and reaped
    # it was stored as the app's own analysis is: a second open is warm
    assert cache.load(cache.cache_key([load_run(path)], FAST)).to_dict() == app.report.to_dict()


@pytest.mark.anyio
async def test_other_bytes_than_the_childs_are_analysed_here(tmp_path):
    """The child parsed the run before one bit of it changed: its files key is not the app's, so its
    numbers are never shown; the app's report is the changed run's."""
    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    old = said[-1]["report"]
    flip_one_bit(path)
    head = Replay([path], FAST, said, child.key)
    seen = []

    class Watching(SpectermApp):
        def watch_report(self, report):
            if report is not None:
                seen.append(canonical(report.to_dict()))

    new = canonical(analysis.analyse([load_run(path)], **FAST).to_dict())
    assert await final_report(Watching([path], head_start=head, **FAST)) == new != canonical(old)
    assert canonical(old) not in seen and head.closed


@pytest.mark.anyio
async def test_a_report_of_other_runs_is_withdrawn_once_the_runs_are_parsed(tmp_path):
    """Same files key but another content key (parsing the same bytes gave other runs): the report
    shown first is withdrawn and the app's own analysis replaces it."""
    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    foreign = with_foreign_full(said)  # a report with other numbers
    head = Replay([path], FAST, said, {**child.key, "runs": []})
    own = canonical(analysis.analyse([load_run(path)], **FAST).to_dict())
    assert await final_report(make_app([path], head_start=head, **FAST)) == own != canonical(foreign)


def test_the_child_sends_its_key_after_the_full_report(tmp_path):
    """The raw order of the child's messages: files key, point report, the report with every CI, the
    full report, then the runs' cache key (computing it, 0.2 s at 10M positions, is not on the full
    report's way)."""
    head = HeadStart.start([make_fixture_run(tmp_path)], FAST)
    assert head is not None
    kinds = []
    while (m := head._receive()) is not None:
        kinds.append(next(k for k in ("fkey", "key") if k in m) if "report" not in m
                     else f"report:{m['complete']}" + (":cis" if m.get("cis") else ""))
    head.close()
    assert kinds == ["fkey", "report:False", "report:False:cis", "report:True", "key"]


@pytest.mark.anyio
@pytest.mark.parametrize("same", [True, False])
async def test_the_key_read_after_the_full_report_keeps_or_withdraws_it(tmp_path, monkeypatch, same):
    """The key message comes after the full report (none known before): the load reads it once it has
    parsed the runs; its own key keeps the child's report (stored, nothing analysed here), another key
    withdraws it and the app's own analysis replaces it."""
    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    key = child.key if same else {**child.key, "runs": []}
    own = analysis.analyse([load_run(path)], **FAST)
    if same:
        forbid_analysis(monkeypatch)
    else:
        with_foreign_full(said)  # other numbers, to see it go
    head = Replay([path], FAST, [*said, {"key": key}])
    assert await final_report(make_app([path], head_start=head, **FAST)) == canonical(own.to_dict())
    assert head.key == json.loads(json.dumps(key)) and not head.messages
    stored = cache.load(cache.cache_key([load_run(path)], FAST))
    assert stored is not None and canonical(stored.to_dict()) == canonical(own.to_dict())


PointFirst = SpectermApp  # the point report, then the full one, as on a terminal (and under Pilot)


def held_parse(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """The app's parse of the runs waits for `go` (the test sets it); `parsing` is set when it starts."""
    from specterm.core import store

    parsing, go = threading.Event(), threading.Event()
    real = store.load_run

    def slow(*args, **kwargs):
        parsing.set()
        assert go.wait(30), "the test never let the parse go on"
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "load_run", slow)
    return parsing, go


@pytest.mark.anyio
async def test_the_childs_full_report_is_shown_while_the_runs_are_parsed(tmp_path, monkeypatch):
    """The child's CIs come when it sends them, not once this process has parsed the runs (10M
    positions: seconds); the parsed runs then confirm them (kept, nothing analysed here)."""
    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    expected = canonical(analysis.analyse([load_run(path)], **FAST).to_dict())
    head = Replay([path], FAST, said, child.key)
    parsing, go = held_parse(monkeypatch)
    forbid_analysis(monkeypatch)
    app = PointFirst([path], head_start=head, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report_complete, "every CI", tries=1000)
        assert parsing.is_set() and app.runs is None  # every CI on screen, the runs not parsed yet
        assert canonical(app.report.to_dict()) == expected
        go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.runs is not None and canonical(app.report.to_dict()) == expected and not head.closed


@pytest.mark.anyio
async def test_a_full_report_shown_early_is_withdrawn_when_the_runs_are_not_the_childs(tmp_path, monkeypatch):
    """The same files key but another content key: the child's full report, shown before the parse,
    is taken off the screen once the runs are parsed, and the app's own analysis replaces it."""
    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    foreign = with_foreign_full(said)
    head = Replay([path], FAST, said, {**child.key, "runs": []})
    own = canonical(analysis.analyse([load_run(path)], **FAST).to_dict())
    parsing, go = held_parse(monkeypatch)
    app = PointFirst([path], head_start=head, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.report_complete, "every CI", tries=1000)
        assert canonical(app.report.to_dict()) == canonical(foreign) and app.runs is None
        go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == own != canonical(foreign) and head.closed


class HeldPoint(Replay):
    """A Replay whose point report (its second message) waits until `go` is set."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.go, self.reads = threading.Event(), 0

    def _receive(self):
        self.reads += 1
        if self.reads == 2:
            assert self.go.wait(30), "the test never let the child go on"
        return super()._receive()


@pytest.mark.anyio
async def test_while_the_child_computes_the_loading_line_says_how_much(tmp_path):
    """The child's first message counts the pair's prompts and positions; the loading line says them
    while the point estimates are on their way."""
    from specterm.screens.base import loading_text

    path = make_fixture_run(tmp_path)
    child = HeadStart.start([path], FAST)
    said = drained(child)
    streams = load_run(path).streams
    assert (said[0]["prompts"], said[0]["positions"]) == (len(streams), sum(int(s.bits.size) for s in streams))
    head = HeldPoint([path], FAST, said, child.key)
    app = PointFirst([path], head_start=head, **FAST)
    line = f"Computing the point estimates of {said[0]['positions']:,} positions in {said[0]['prompts']:,} prompts ..."
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.load_stage == line, "the computing line", tries=1000)
        assert app.report is None and loading_text(app) == line
        head.go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.report_complete


@pytest.mark.anyio
@pytest.mark.parametrize("messages", [[], [{"error": "no prompts"}], [{"fkey": None}], ["garbage"]])
async def test_a_child_with_nothing_useful_leaves_the_analysis_to_the_app(tmp_path, messages):
    path = make_fixture_run(tmp_path)
    head = Replay([path], FAST, [m for m in messages if isinstance(m, dict)])
    own = canonical(analysis.analyse([load_run(path)], **FAST).to_dict())
    assert await final_report(make_app([path], head_start=head, **FAST)) == own
    assert head.closed


def test_specterm_open_stops_its_child_when_the_app_ends(tmp_path, monkeypatch):
    """The child runs while the app does; when the app ends (here at once) it is stopped and reaped."""
    import specterm.app as app_module
    from specterm import startup

    started = []

    class Ends:
        return_code = 0

        def __init__(self, runs, head_start=None, **kw):
            started.append(head_start)

        def run(self):
            assert head_start_alive(started[0])

    def head_start_alive(head):
        return head is not None and head.proc.poll() is None

    monkeypatch.setattr(app_module, "make_app", Ends)
    startup.open_tui([make_fixture_run(tmp_path)], boot=2000)  # long enough to be running when the app starts
    assert started[0] is not None and started[0].proc.returncode is not None  # stopped and reaped


@pytest.mark.anyio
async def test_the_child_caches_the_other_pairs_for_m(tmp_path, monkeypatch):
    """Two model pairs: the child shows the first and stores the second's report in the cache, so `M`
    shows it without analysing in the app; both are the in-process analysis of each pair."""
    from edge_runs import two_pairs

    from specterm.core.store import group_runs

    paths = two_pairs(tmp_path)
    pairs = group_runs([load_run(p) for p in paths])
    expected = [analysis.analyse(pair, **FAST).to_dict() for pair in pairs]
    head = HeadStart.start(paths, FAST)
    forbid_analysis(monkeypatch)
    app = make_app(paths, head_start=head, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == canonical(expected[0])
        assert head.proc.wait(timeout=60) == 0  # the second pair analysed and stored
        await pilot.press("M")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == canonical(expected[1])


def test_close_stops_a_running_child_at_once(tmp_path):
    """SIGTERM ends the child between two Python steps (a cache entry being written is removed, not
    left half): it exits with 0 well before the SIGKILL that would follow."""
    import time

    head = HeadStart.start([make_fixture_run(tmp_path)], {**FAST, "boot": 20000})  # seconds of bootstrap
    assert head.read() is not None  # started and past its imports (the handler is installed)
    t0 = time.perf_counter()
    head.close()
    assert head.proc.returncode == 0 and time.perf_counter() - t0 < 1.0


def test_a_warm_open_starts_no_child_and_reads_the_files_once(tmp_path, monkeypatch):
    """The cache has an alias for the runs' bytes: `specterm open` starts no child, and the app gets the
    bytes, their key and the alias as read (it does not read them again); cold: a child, no alias."""
    import specterm.app as app_module
    from specterm import startup
    from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES

    made = []

    class Ends:
        return_code = 0

        def __init__(self, runs, **kw):
            made.append(kw)

        def run(self):
            pass

    monkeypatch.setattr(app_module, "make_app", Ends)
    path = make_fixture_run(tmp_path)
    startup.open_tui([path])
    assert made[0]["head_start"] is not None and made[0]["files_read"][2] is None  # cold
    params = {"gamma": GAMMA_DEFAULT, "boot": BOOT, "shuffles": SHUFFLES, "seed": SEED}
    files = [read_run_files(path)]
    key = cache.cache_key([load_run(path)], params)
    cache.store(key, analysis.analyse([load_run(path)], **{**params, "boot": 20, "shuffles": 2}))
    cache.store_alias(cache.files_key(files, params, 0), key, 1, 0, [])
    startup.open_tui([path])
    assert made[1]["head_start"] is None
    read_files, fkey, alias = made[1]["files_read"]
    assert [f.records for f in read_files] == [f.records for f in files] and alias[0] == json.loads(json.dumps(key))


def test_specterm_with_a_corrupt_run_takes_the_childs_report_of_the_others(tmp_path, monkeypatch):
    """`specterm` (./streams, lenient): the child skips the run that cannot be read, as the CLI's own
    load does, so its files key is the app's and the app shows its report without analysing."""
    from specterm import startup

    good = make_fixture_run(tmp_path / "streams", "run-a")
    bad = make_fixture_run(tmp_path / "streams", "run-b")
    (bad / "run.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    # the report names the run by the path `specterm` found it at (./streams/run-a)
    from specterm.core.params import BOOT, SHUFFLES

    expected = analysis.analyse([load_run(good.relative_to(tmp_path))], **{**FAST, "boot": BOOT, "shuffles": SHUFFLES}).to_dict()

    shown = []

    class Quits(SpectermApp):
        def watch_error(self, error):
            if error:
                shown.append(error)
                self.call_after_refresh(self.exit)

        def on_report_ready(self, message):
            super().on_report_ready(message)
            if self.report_complete and self.runs is not None:
                shown.append(self.report.to_dict())
                self.call_after_refresh(self.exit)

        def on_runs_loaded(self, message):
            super().on_runs_loaded(message)
            if self.report_complete:
                shown.append(self.report.to_dict())
                self.call_after_refresh(self.exit)

    def opener(paths, **kw):
        assert kw["head_start"] is not None and [p.name for p in paths] == ["run-a"]
        Quits(paths, **kw).run(headless=True)

    forbid_analysis(monkeypatch)
    startup.open_streams(opener)
    assert shown and canonical(shown[0]) == canonical(expected)


def test_a_warm_specterm_hands_its_reading_of_the_files_to_the_app(tmp_path, monkeypatch):
    """`specterm` (./streams), warm: the alias found by the CLI's reading of the files comes with that
    reading to the app (files, key, alias), which then neither reads them again nor starts a child."""
    from specterm import startup
    from specterm.core.params import BOOT, GAMMA_DEFAULT, SEED, SHUFFLES

    path = make_fixture_run(tmp_path / "streams", "run-a")
    monkeypatch.chdir(tmp_path)
    rel = path.relative_to(tmp_path)
    params = {"gamma": GAMMA_DEFAULT, "boot": BOOT, "shuffles": SHUFFLES, "seed": SEED}
    files = [read_run_files(rel)]
    key = cache.cache_key([load_run(rel)], params)
    cache.store(key, analysis.analyse([load_run(rel)], **{**params, "boot": 20, "shuffles": 2}))
    cache.store_alias(cache.files_key(files, params, 0), key, 1, 0, [])
    opened = []
    startup.open_streams(lambda paths, **kw: opened.append((paths, kw)))
    ((paths, kw),) = opened
    read_files, fkey, alias = kw["files_read"]
    assert paths == [rel] and "head_start" not in kw and "loaded" not in kw
    assert [f.records for f in read_files] == [f.records for f in files] and alias[0] == json.loads(json.dumps(key))


def test_the_child_runs_this_specterm_whatever_the_current_folder_holds(tmp_path, monkeypatch):
    """Started in a folder holding another `specterm` package (another checkout), the child still
    imports this one: its files key is this code's, so the app can take its reports."""
    path = make_fixture_run(tmp_path / "runs")
    other = tmp_path / "elsewhere" / "specterm"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the other checkout')\n")
    (other / "headstart.py").write_text("raise SystemExit(3)\n")
    monkeypatch.chdir(other.parent)
    head = HeadStart.start([path], FAST)
    first = drained(head)[0]
    assert first["fkey"] == json.loads(json.dumps(cache.files_key([read_run_files(path)], FAST, 0)))
    assert head.proc.returncode == 0


@pytest.mark.anyio
async def test_m_to_a_pair_the_child_is_analysing_waits_for_it(tmp_path, monkeypatch):
    """`M` before the child has stored the second pair: the app waits for the child's word (its report
    is in the cache) instead of analysing the pair a second time beside it, and shows that report."""
    from edge_runs import two_pairs

    from specterm.core.store import group_runs

    paths = two_pairs(tmp_path)
    pairs = group_runs([load_run(p) for p in paths])
    expected = [analysis.analyse(pair, **FAST) for pair in pairs]
    child = HeadStart.start(paths, FAST, use_cache=False)  # says the first pair only: the rest is played here
    said = drained(child)
    second_key = json.loads(json.dumps(cache.cache_key(pairs[1], FAST)))

    class Storing(Replay):
        """The child's messages, then, once the test lets it, the second pair stored and said so."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.go = threading.Event()

        def _receive(self):
            if not self.messages and not self.stored and self.go.wait(30):
                cache.store(cache.cache_key(pairs[1], FAST), expected[1])
                self.messages.append({"stored": second_key})
            return super()._receive()

    head = Storing(paths, FAST, said, child.key)
    forbid_analysis(monkeypatch)
    app = make_app(paths, head_start=head, **FAST)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == canonical(expected[0].to_dict())
        await pilot.press("M")
        await until(pilot, lambda: app.load_stage.startswith("Computing the report of"), "the wait for the child", tries=1000)
        assert app.report is None  # waiting for the child, not analysing (that would fail the test)
        head.go.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert canonical(app.report.to_dict()) == canonical(expected[1].to_dict())
