"""analysis.analyse on a pool of threads (core/report/parallel.py, SPECTERM_THREADS): the report is bit-identical to the serial
one whatever the thread count and the order the tasks happen to run in; the policy table built in
parts equals the table built at once."""

from __future__ import annotations

import json
import random
import threading
import time
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from specterm.core.report import analysis, parallel
from specterm.core.errors import SpectermError
from specterm.core.report.export import to_json
from specterm.core.decide.policies import PolicyTable, policy_table
from specterm.core.store import Stream, load_run

STREAMS = Path(__file__).resolve().parents[1] / "streams"


def _runs(synth):
    rng = np.random.default_rng(5)
    s = synth.streams("prose", [synth.markov(rng, 250, 0.9, 0.3) for _ in range(12)])
    s += synth.streams("code", [synth.iid(rng, 180, 0.8) for _ in range(9)])
    s += synth.streams("math", [synth.markov(rng, 90, 0.7, 0.2) for _ in range(7)])
    t = synth.streams("chat", [synth.iid(rng, 140, 0.6) for _ in range(8)])
    t += synth.streams("code", [synth.markov(rng, 200, 0.85, 0.4) for _ in range(5)])
    return [synth.run(s, r=0.2), synth.run(t, r=0.3)]


def _doc(report) -> dict:
    return json.loads(to_json(report))


class JitterPool(Executor):
    """Every task on its own thread after a random pause: they run at once, in a random order."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.started: list[threading.Thread] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        fut: Future = Future()
        pause = self.rng.random() * 0.02

        def go() -> None:
            time.sleep(pause)
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to the caller through the future
                fut.set_exception(exc)

        th = threading.Thread(target=go)
        th.start()
        self.started.append(th)
        return fut


def _serial(monkeypatch, runs, **kw):
    monkeypatch.setenv(parallel.THREADS_ENV, "1")
    return _doc(analysis.analyse(runs, **kw))


@pytest.mark.parametrize("threads", ["2", "3", "8"])
def test_threads_give_the_serial_report(monkeypatch, synth, threads):
    runs, kw = _runs(synth), {"gamma": 6, "boot": 150, "shuffles": 4, "seed": 11}
    ref = _serial(monkeypatch, runs, **kw)
    monkeypatch.setenv(parallel.THREADS_ENV, threads)
    assert parallel.analysis_threads() == int(threads)
    got = _doc(analysis.analyse(runs, **kw))
    assert got == ref and list(got["sets"]) == list(ref["sets"])  # the sets in the same order too
    assert _doc(analysis.analyse(runs, **{**kw, "seed": 12})) != ref  # the comparison can tell reports apart


@pytest.mark.parametrize("order_seed", [0, 1, 2])
def test_any_task_order_gives_the_serial_report(monkeypatch, synth, order_seed):
    # tasks run concurrently in a random order: the same report, bit for bit
    runs, kw = _runs(synth), {"gamma": 8, "boot": 120, "shuffles": 3, "seed": 2}
    ref = _serial(monkeypatch, runs, **kw)
    pool = JitterPool(order_seed)
    prepared = analysis._prepare(runs, kw["gamma"], kw["boot"], kw["shuffles"], kw["seed"], None, pool)
    point = analysis._assemble(prepared, 0, pool)
    full = analysis._assemble(prepared, kw["boot"], pool)
    for th in pool.started:
        th.join()
    assert _doc(full) == ref
    assert _doc(point) == _serial(monkeypatch, runs, **{**kw, "boot": 0})


@pytest.mark.parametrize("name", ["smollm2-135m-selfdraft-l25", "qwen2.5-coder-0.5b-1.5b-llamacpp"])
def test_threads_shipped(monkeypatch, name):
    path = STREAMS / name
    if not (path / "run.json").exists():
        pytest.skip(f"{name} not shipped here")
    runs = [load_run(path)]
    ref = _serial(monkeypatch, runs, boot=200, shuffles=4, seed=0)
    monkeypatch.setenv(parallel.THREADS_ENV, "2")
    assert _doc(analysis.analyse(runs, boot=200, shuffles=4, seed=0)) == ref


def test_policy_table_in_parts_equals_the_whole(synth):
    rng = np.random.default_rng(9)
    bits = [synth.markov(rng, int(rng.integers(0, 300)), 0.8, 0.3) for _ in range(40)]
    streams = [Stream(id=f"s{i}", corpus="prose", bits=b, draft_conf=rng.random(b.size).astype(np.float32))
               for i, b in enumerate(bits)]
    assert policy_table(streams).confidence.any()  # the confidence walks run
    whole = policy_table(streams)
    for k in (1, 2, 3, 7, 40):
        parts = PolicyTable.stacked([policy_table(streams[sl]) for sl in parallel.contiguous_parts(len(streams), k)])
        for field in ("n", "fixed", "heuristic", "confidence", "has_conf", "clairvoyant"):
            assert np.array_equal(getattr(parts, field), getattr(whole, field)), (k, field)
    with pytest.raises(ValueError):
        PolicyTable.stacked([policy_table(streams[:5]), policy_table(streams[5:], g0=4)])
    # walked without the fixed-g blocks, then given them: the whole table
    bare = PolicyTable.stacked([policy_table(streams[sl], fixed=False) for sl in parallel.contiguous_parts(len(streams), 3)])
    assert bare.fixed.shape == (len(streams), 0)
    done = bare.with_fixed(whole.fixed)
    for field in ("n", "fixed", "heuristic", "confidence", "has_conf", "clairvoyant"):
        assert np.array_equal(getattr(done, field), getattr(whole, field)), field
    with pytest.raises(ValueError):
        bare.with_fixed(whole.fixed[:, :5])


@pytest.mark.parametrize("chunk", [1, 150, 10**9])
def test_the_table_task_walks_its_parts_in_turn(monkeypatch, synth, chunk):
    # analyse's one table task: parts of about CHUNK_POSITIONS positions, one after another, are the
    # table of all the streams at once (without the fixed-g blocks the sums add)
    rng = np.random.default_rng(11)
    bits = [synth.markov(rng, int(rng.integers(0, 300)), 0.8, 0.3) for _ in range(40)]
    streams = [Stream(id=f"s{i}", corpus="prose", bits=b, draft_conf=rng.random(b.size).astype(np.float32))
               for i, b in enumerate(bits)]
    whole = policy_table(streams, fixed=False)
    walked: list[int] = []
    real = analysis.policy_table
    monkeypatch.setattr(analysis, "policy_table", lambda part, **kw: walked.append(len(part)) or real(part, **kw))
    monkeypatch.setattr(analysis, "CHUNK_POSITIONS", chunk)
    got = analysis._policy_table_in_parts(streams)
    assert sum(walked) == len(streams) and len(walked) == min(len(streams), max(1, -(-sum(b.size for b in bits) // chunk)))
    for field in ("n", "fixed", "heuristic", "confidence", "has_conf", "clairvoyant"):
        assert np.array_equal(getattr(got, field), getattr(whole, field)), field


def test_parts_cover_in_order():
    for n in range(0, 30):
        for k in range(1, 9):
            sl = parallel.contiguous_parts(n, k)
            idx = [i for s in sl for i in range(n)[s]]
            assert idx == list(range(n))
            assert all(s.stop > s.start for s in sl) or n == 0
            assert len(sl) == max(1, min(k, n))


def test_thread_setting(monkeypatch):
    monkeypatch.delenv(parallel.THREADS_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 16)
    assert parallel.analysis_threads() == 2
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 1)
    assert parallel.analysis_threads() == 1
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: None)
    assert parallel.analysis_threads() == 1
    monkeypatch.setenv(parallel.THREADS_ENV, "4")
    assert parallel.analysis_threads() == 4
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(parallel.THREADS_ENV, bad)
        with pytest.raises(SpectermError):
            parallel.analysis_threads()


def test_small_reports_run_on_one_thread_unless_told(monkeypatch):
    monkeypatch.delenv(parallel.THREADS_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 16)
    full, point = parallel.PARALLEL_MIN_POSITIONS, parallel.POINT_PARALLEL_MIN_POSITIONS
    assert parallel.analysis_threads(full - 1, 2000) == 1
    assert parallel.analysis_threads(full, 2000) == 2
    assert parallel.analysis_threads(point - 1, 0) == 1
    assert parallel.analysis_threads(point, 0) == 2
    assert parallel.analysis_threads(full, None) == 2
    monkeypatch.setenv(parallel.THREADS_ENV, "3")  # said explicitly: whatever the size
    assert parallel.analysis_threads(10, 2000) == 3


def test_analyse_makes_a_pool_only_past_the_threshold(monkeypatch, synth):
    pools = []

    class Counted(analysis.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            pools.append(args[0] if args else kwargs.get("max_workers"))
            super().__init__(*args, **kwargs)

    monkeypatch.delenv(parallel.THREADS_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(analysis, "ThreadPoolExecutor", Counted)
    runs = _runs(synth)
    positions = sum(s.n for run in runs for s in run.streams)
    small = analysis.analyse(runs, boot=30, shuffles=3, seed=2)
    assert pools == []
    monkeypatch.setattr(parallel, "PARALLEL_MIN_POSITIONS", positions)
    large = analysis.analyse(runs, boot=30, shuffles=3, seed=2)
    assert pools == [2]
    assert _doc(small) == _doc(large)


def test_openblas_held_to_one_thread_while_an_analysis_runs(monkeypatch, synth):
    controls = parallel._blas_controls()
    if controls is None:
        pytest.skip("numpy is not linked against an OpenBLAS found in /proc/self/maps")
    get, put = controls
    before = int(get())
    put(2)
    try:
        with parallel.one_blas_thread():
            assert get() == 1
            with parallel.one_blas_thread():  # nested (or a second analysis at the same time)
                assert get() == 1
            assert get() == 1
        assert get() == 2
        seen = []
        real = analysis._assemble

        def spy(*args, **kwargs):
            seen.append(int(get()))
            return real(*args, **kwargs)

        monkeypatch.setattr(analysis, "_assemble", spy)
        for threads in ("2", "1"):
            seen.clear()
            monkeypatch.setenv(parallel.THREADS_ENV, threads)
            analysis.analyse(_runs(synth), boot=20, shuffles=2)
            assert seen == [1] and get() == 2
    finally:
        put(before)


def test_heap_kept_while_an_analysis_runs_and_handed_back_after(monkeypatch, synth):
    """kept_heap: on first entry one arena and the raised thresholds, nothing more while nested or
    concurrent; on the last exit glibc's dynamic maxima back; around analyse too (recorded on a fake
    mallopt, so any C library)."""
    calls: list[tuple[str, int, int]] = []

    def mallopt(param: int, value: int) -> int:
        calls.append(("mallopt", param, value))
        return 1

    monkeypatch.setattr(parallel, "_malloc_controls", lambda: mallopt)
    entry = [("mallopt", -8, 1), ("mallopt", -3, 1 << 30), ("mallopt", -1, 2**31 - 1)]
    exit_ = [("mallopt", -3, 32 << 20), ("mallopt", -1, 64 << 20)]
    with parallel.kept_heap():
        assert calls == entry
        with parallel.kept_heap():  # nested (or a second analysis at the same time)
            pass
        assert calls == entry
    assert calls == entry + exit_
    seen = []
    real = analysis._assemble

    def spy(*args, **kwargs):
        seen.append(list(calls))
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis, "_assemble", spy)
    for threads in ("2", "1"):
        calls.clear()
        monkeypatch.setenv(parallel.THREADS_ENV, threads)
        analysis.analyse(_runs(synth), boot=20, shuffles=2)
        assert seen[-1] == entry and calls == entry + exit_


def test_kept_heap_on_this_c_library(synth):
    """The real controls (glibc here; none elsewhere): entering and leaving works, the count is back to
    0, and a report made while the heap is already held (its blocks reused) has the same bits."""
    before = _doc(analysis.analyse(_runs(synth), boot=20, shuffles=2))
    with parallel.kept_heap():
        inside = _doc(analysis.analyse(_runs(synth), boot=20, shuffles=2))
    assert inside == before
    assert parallel._heap_held[0] == 0


@pytest.mark.parametrize("env, want", [(None, "False"), ("1", "True")])
def test_importing_specterm_first_turns_numpys_huge_pages_off_unless_asked(env, want):
    """specterm/__init__.py sets NUMPY_MADVISE_HUGEPAGE=0 unless it is set: numpy then leaves its large
    arrays to the kernel's default pages (no synchronous compaction on first touch)."""
    import os
    import subprocess
    import sys

    child_env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env is not None:
        child_env["NUMPY_MADVISE_HUGEPAGE"] = env
    probe = "import specterm, numpy; print(numpy._core.multiarray._get_madvise_hugepage())"
    out = subprocess.run([sys.executable, "-c", probe], env=child_env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == want


@pytest.mark.parametrize("env", [None, "2"])
def test_importing_specterm_first_asks_openblas_for_one_thread_unless_set(env):
    """specterm/__init__.py sets OPENBLAS_NUM_THREADS=1 unless it is set: numpy's OpenBLAS then starts
    no threads of its own (they spin at import); a value the user set is kept as numpy alone reads it."""
    import os
    import subprocess
    import sys

    # OpenBLAS reads OPENBLAS_NUM_THREADS, then GOTO_NUM_THREADS, then OMP_NUM_THREADS (which conftest sets
    # in a pytest-xdist worker): the child sees none of them but the one under test
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    if env is not None:
        child_env["OPENBLAS_NUM_THREADS"] = env

    def blas_threads(imports: str) -> str:
        code = f"import {imports}; from specterm.core.report import parallel; print(parallel._blas_controls()[0]())"
        return subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                              check=True).stdout.strip()

    got, bare = blas_threads("specterm, numpy"), blas_threads("numpy")  # bare: numpy loaded before specterm
    if env is None:
        assert got == "1"
        if len(os.sched_getaffinity(0)) > 1:  # the cores this process may use (taskset), as OpenBLAS counts them
            assert bare != "1"  # numpy alone takes a thread per core: the 1 above is specterm's
    else:
        assert got == bare  # what numpy reads from the variable alone
