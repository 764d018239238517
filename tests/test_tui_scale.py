"""The TUI at production scale (issue 39): the Streams screen's keys over a 1M-position stream land
where numpy says they should, and quitting never waits for a parse or an analysis, while a cache
write under way still ends whole."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from app_fixture import META

from specterm import loading
from specterm.app import make_app
from specterm.core.report import cache
from specterm.core.store import Stream, write_run
from specterm.widgets.tokens import BitLabels, TokenView

pytestmark = pytest.mark.anyio
FAST = {"boot": 20, "shuffles": 2}
N = 1_000_000


def long_run(tmp_path, bits: np.ndarray):
    return write_run(tmp_path / "long", {**META, "name": "long"}, [Stream(id="long", corpus="prose", bits=bits)])


async def ready(app, pilot):
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_rejection_keys_and_longest_run_over_a_1m_stream(tmp_path):
    """1M bits, rejections at known places: End then R lands on the last rejection, r past it says
    there is none, l goes to the longest run; the view shows the stream as bits, made per line."""
    rng = np.random.default_rng(7)
    bits = (rng.random(N) < 0.9).astype(np.uint8)
    bits[-5_000:] = 1  # the last rejection 5,000 positions or more before the end
    bits[400_000:408_000] = 1  # the longest run: 8,000 ones from t = 400,000 (longer than the last run)
    bits[399_999] = bits[408_000] = 0
    zeros = np.flatnonzero(bits == 0)
    app = make_app([long_run(tmp_path, bits)], **FAST)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("2")
        await ready(app, pilot)
        view = app.screen.query_one(TokenView)
        assert view.n == N and isinstance(view.labels, BitLabels)
        await pilot.press("end", "R")
        assert view.cursor == int(zeros[-1]) < N - 5_000
        await pilot.press("r")
        assert view.cursor == int(zeros[-1])  # no rejection after it: the cursor stays
        await pilot.press("R")
        assert view.cursor == int(zeros[-2])
        await pilot.press("l")
        assert view.cursor == 400_000
        info = str(app.screen.query_one("#cursor-info").render())
        assert "run of 8000 from t 400000" in info and "next reject t 408000" in info


async def test_quit_never_waits_for_an_analysis(tmp_path, monkeypatch):
    """An analysis that would never end (it waits for an event the test sets only after the app has
    exited): `q` ends the app at once, the worker is done, the load goes on in its daemon thread, and
    when it finally ends nothing is written to the cache (its report was never finished in the app)."""
    from specterm.core.report import analysis

    release, entered = threading.Event(), threading.Event()
    real = analysis.analyse

    def slow(*args, **kwargs):
        entered.set()
        release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis, "analyse", slow)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # this test's cache alone
    run = long_run(tmp_path, np.ones(1000, np.uint8))
    app = make_app([run], **FAST)
    async with app.run_test(size=(100, 30)) as pilot:
        while not entered.is_set():
            await pilot.pause(0.01)
        t0 = time.perf_counter()
        await pilot.press("q")
    quit_s = time.perf_counter() - t0
    try:
        assert not release.is_set()
        assert all(not w.is_running for w in app.workers)  # asyncio's executor has nothing to join
        load = [t for t in threading.enumerate() if t.name == "specterm-load"]
        assert load and all(t.daemon and t.is_alive() for t in load)  # still in the analysis
        assert quit_s < 5.0  # generous: the analysis never ends while the app quits
    finally:
        release.set()
    for t in load:
        t.join(30)
    assert not [p for p in cache.cache_dir().rglob("*") if p.is_file()]  # no entry, no alias, no temp


def test_quit_lets_a_write_under_way_end_whole_and_starts_none(tmp_path):
    """Loader.quit waits for a cache write under way (it ends whole), then no write starts."""
    loader = loading.Loader({"gamma": 4, "boot": 0, "shuffles": 0, "seed": 0})
    target = tmp_path / "entry"
    started = threading.Event()

    def slow_store():
        started.set()
        time.sleep(0.3)
        target.write_text("whole")

    writer = threading.Thread(target=loader.write, args=(slow_store,))
    writer.start()
    started.wait(5)
    loader.quit(load_id=1, shown_complete=True)
    assert target.read_text() == "whole"  # quit returned after the write ended
    writer.join(5)
    later = tmp_path / "later"
    assert not loader.write(lambda: later.write_text("x")) and not later.exists()


def test_run_detached_returns_when_cancelled_and_raises_what_the_target_raised():
    gate = threading.Event()
    cancelled = threading.Event()
    threading.Timer(0.1, cancelled.set).start()
    t0 = time.perf_counter()
    loading.run_detached(lambda: gate.wait(30), cancelled.is_set)
    assert time.perf_counter() - t0 < 5.0 and not gate.is_set()
    gate.set()

    def fails():
        raise ValueError("told")

    with pytest.raises(ValueError, match="told"):
        loading.run_detached(fails, lambda: False)
