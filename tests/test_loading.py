"""specterm/loading.py without the app (no Pilot, no Textual): what a load says, in order, for a cold
open (point estimates, then the CIs, then the borderline marks), a warm open (the alias's report before the runs), an alias that
lies (withdrawn, analysed again), the head start's report (kept when its runs are the load's key,
withdrawn when not), `M` to the second pair, and a cancelled load. Every report is checked against
`analyse` called here on the same runs."""

from __future__ import annotations

import io
import json
import threading
import sys

import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from report_factory import without_seed_check

from specterm import loading
from specterm.core.report import analysis, cache
from specterm.core.store import group_runs, load_run, read_run_files, write_run
from specterm.headstart import HeadStart, serve
from specterm.loading import Loader, Parsed, Shown, Stage

FAST = {"gamma": 8, "boot": 40, "shuffles": 2, "seed": 0}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)


def canonical(report) -> str:
    return json.dumps(report.to_dict(), sort_keys=True)


def run_load(loader: Loader, paths, load_id: int = 1, group: int = 0, cancelled=lambda: False) -> list:
    events: list = []
    loader.load(paths, load_id, group, events.append, cancelled)
    return events


def kinds(events) -> list[str]:
    """Each event as a word: stage, parsed, point, cis (every CI, before the borderline check), full
    or withdrawn."""
    def word(e):
        if isinstance(e, Stage):
            return "stage"
        if isinstance(e, Parsed):
            return "parsed"
        return "withdrawn" if e.report is None else ("full" if e.complete else "cis" if e.cis else "point")

    return [word(e) for e in events]


def unchecked(report) -> str:
    """`canonical` without what the borderline check writes into the scorecard (the report handed
    over with every CI, before the check, is the full report but for it)."""
    return json.dumps(without_seed_check(report.to_dict()), sort_keys=True)


def own_report(path, **params):
    return analysis.analyse([load_run(path)], **{**FAST, **params})


def test_the_module_never_imports_textual():
    import subprocess

    code = "import sys, specterm.loading; print('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_a_cold_load_says_parsing_then_shows_the_point_estimates_then_the_full_report(tmp_path):
    path = make_fixture_run(tmp_path)
    events = run_load(Loader(FAST, use_cache=False), [path])
    assert kinds(events) == ["stage", "parsed", "stage", "point", "cis", "full"]
    assert events[0].text.startswith("Parsing the runs (1 run, ")
    assert events[2].text == "Computing the point estimates of 320 positions in 6 prompts ..."
    assert all(e.load_id == 1 for e in events) and events[1].groups == 1
    assert canonical(events[3].report) == canonical(own_report(path, boot=0))
    assert unchecked(events[4].report) == unchecked(own_report(path)) and not events[4].complete
    assert not any(row.borderline or row.seed_verdicts for row in events[4].report.scorecard)
    assert canonical(events[5].report) == canonical(own_report(path))


def test_without_a_bootstrap_the_report_comes_once(tmp_path):
    path = make_fixture_run(tmp_path)
    events = run_load(Loader({**FAST, "boot": 0}, use_cache=False), [path])
    assert kinds(events) == ["stage", "parsed", "stage", "full"]
    assert events[2].text.startswith("Computing the report of ")
    assert canonical(events[3].report) == canonical(own_report(path, boot=0))


def test_a_warm_open_shows_the_aliased_report_before_the_runs_and_then_nothing_more(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    run_load(Loader(FAST), [path])  # a cold open stores the report and its alias
    own = own_report(path)
    monkeypatch.setattr(analysis, "analyse", lambda *a, **k: pytest.fail("a warm open analysed"))
    loader = Loader(FAST)
    shown = loader.warm([path], 1, 0)
    assert isinstance(shown, Shown) and shown.groups == 1 and shown.pair_meta["name"] == "tiny-run"
    assert canonical(shown.report) == canonical(own)
    shown.painted.set()  # the painter's frame
    assert kinds(run_load(loader, [path])) == ["parsed"]  # the runs' key is the entry's: kept


def test_the_worker_finds_the_alias_itself_when_warm_did_not_look(tmp_path):
    path = make_fixture_run(tmp_path)
    run_load(Loader(FAST), [path])
    events = run_load(Loader(FAST), [path], load_id=3)
    assert kinds(events) == ["full", "parsed"] and events[0].load_id == 3 and events[0].painted is not None


def test_an_alias_that_lies_is_withdrawn_removed_and_the_runs_analysed(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    other = make_fixture_run(tmp_path, "other-run")
    run_load(Loader(FAST), [other])  # the other run's report in the cache
    files = [read_run_files(path)]
    fkey = cache.files_key(files, FAST, 0)
    cache.store_alias(fkey, cache.cache_key([load_run(other)], FAST), 1, 0, [])  # this run's bytes -> the other's report
    monkeypatch.setattr(loading, "PAINT_WAIT_S", 0.01)
    events = run_load(Loader(FAST), [path])
    assert kinds(events) == ["full", "parsed", "withdrawn", "stage", "point", "cis", "full"]
    assert canonical(events[0].report) == canonical(own_report(other))
    assert canonical(events[-1].report) == canonical(own_report(path))
    alias = cache.load_alias(fkey)  # rewritten with this run's own key
    assert alias is not None and alias[0] == cache.cache_key([load_run(path)], FAST)


class Child(HeadStart):
    """The head start's messages as `headstart.serve` (the child's own code) writes them, in process;
    `alter` may change them first."""

    def __init__(self, paths, params, alter=lambda said: None):
        out = io.StringIO()
        serve({"paths": [str(p) for p in paths], "params": params, "lenient": False, "use_cache": False}, out)
        said = [json.loads(line) for line in out.getvalue().splitlines()]
        alter(said)
        self.paths, self.params, self.said, self.closed = tuple(paths), dict(params), said, False
        self.key, self.lenient, self.delivered, self.stored, self._lock = None, False, False, [], threading.Lock()

    def _receive(self):
        return self.said.pop(0) if self.said else None

    def close(self):
        self.closed = True


def test_the_head_starts_reports_are_shown_and_kept_when_the_runs_are_its(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    child = Child([path], FAST)
    own = own_report(path)
    monkeypatch.setattr(analysis, "analyse", lambda *a, **k: pytest.fail("analysed beside the head start"))
    monkeypatch.setattr(loading, "PAINT_WAIT_S", 0.01)
    events = run_load(Loader(FAST, head_start=child), [path])
    words = kinds(events)  # every CI, then the full report, show once read (their reader thread: before or after the parse), and the full once kept
    assert words[:3] == ["stage", "stage", "point"] and sorted(words[3:6]) == ["cis", "full", "parsed"] and words[6:] == ["full"]
    assert [w for w in words[3:6] if w != "parsed"] == ["cis", "full"]
    assert unchecked(next(e.report for e in events if isinstance(e, Shown) and e.cis)) == unchecked(own)
    assert events[1].text == "Computing the point estimates of 320 positions in 6 prompts ..." and events[2].groups == 1
    fulls = [e.report for e in events if isinstance(e, Shown) and e.complete]
    assert not child.closed and [canonical(r) for r in fulls] == [canonical(own)] * 2
    assert cache.load(cache.cache_key([load_run(path)], FAST)) is not None  # stored for the next open


def test_a_head_start_report_of_other_runs_is_withdrawn_and_the_runs_analysed(tmp_path, monkeypatch):
    path = make_fixture_run(tmp_path)
    other = make_fixture_run(tmp_path, "other-run")
    foreign_key = cache.cache_key([load_run(other)], FAST)

    def foreign(said):  # the same bytes said to parse to other runs: its key is theirs
        next(m for m in said if "key" in m)["key"] = json.loads(json.dumps(foreign_key))

    child = Child([path], FAST, foreign)
    monkeypatch.setattr(loading, "PAINT_WAIT_S", 0.01)
    events = run_load(Loader(FAST, head_start=child), [path])
    words = kinds(events)
    assert words[words.index("withdrawn") - 1:] == ["parsed", "withdrawn", "stage", "point", "cis", "full"]
    assert child.closed and canonical(events[-1].report) == canonical(own_report(path))


def test_a_head_start_of_other_bytes_is_not_used(tmp_path):
    path = make_fixture_run(tmp_path)

    def other_bytes(said):
        said[0]["fkey"] = {"not": "these bytes"}

    child = Child([path], FAST, other_bytes)
    events = run_load(Loader(FAST, use_cache=False, head_start=child), [path])
    assert child.closed and kinds(events) == ["stage", "parsed", "stage", "point", "cis", "full"]


def test_the_second_pair_is_the_second_group_of_the_runs(tmp_path):
    a = make_fixture_run(tmp_path, "pair-a")
    other = [s for s in fixture_streams() if s.corpus == "code"]
    b = write_run(tmp_path / "pair-b", {**META, "name": "pair-b", "target": {"spec": "other/bigtarget"}}, other)
    loader = Loader(FAST, use_cache=False)
    first = run_load(loader, [a, b], group=0)
    second = run_load(loader, [a, b], load_id=2, group=1)
    assert first[1].groups == second[0].groups == 2 and kinds(second) == ["parsed", "stage", "point", "cis", "full"]  # parsed once
    pairs = group_runs([load_run(a), load_run(b)])
    assert [r.path for r in second[0].runs] == [r.path for r in pairs[1]] == [b]
    assert canonical(second[-1].report) == canonical(analysis.analyse(pairs[1], **FAST))


def test_a_cancelled_load_shows_nothing_after_its_analysis(tmp_path):
    path = make_fixture_run(tmp_path)
    events = run_load(Loader(FAST, use_cache=False), [path], cancelled=lambda: True)
    assert kinds(events) == ["stage", "parsed", "stage"]


def test_runs_without_prompts_are_one_sentence(tmp_path):
    from specterm.core.errors import SpectermError

    empty = write_run(tmp_path / "empty", {**META, "name": "empty"}, [])
    with pytest.raises(SpectermError, match="holds no finished prompts yet; run `specterm run`"):
        run_load(Loader(FAST, use_cache=False), [empty])
