"""The thread pool of `analysis.analyse`: how many threads, running a list of independent tasks on it
(or inline), splitting n items into parts, and numpy's OpenBLAS held to one thread meanwhile.

- Threads: $SPECTERM_THREADS (a positive integer), else min(2, os.cpu_count()); 1 runs every task
  inline, in the serial order.
- Threads, not processes: numpy releases the GIL in the large array operations the report's tasks
  spend their time in (random draws, ufuncs, gathers, cumulative sums, bincount, BLAS), the tasks
  share the loaded runs and sums without copying or pickling them (hundreds of MB at 10M
  positions), and a pool of threads starts in microseconds where a process pool pays its start-up
  and the transfer of its inputs and results on every report.
- BLAS: the matrix products (B x N @ N x K) run inside the pool; with OpenBLAS's own threads on top
  the cores were oversubscribed (2M positions, 2 threads: 1.75 s CPU against 1.25 s with
  OPENBLAS_NUM_THREADS=1; on one thread too, OpenBLAS's threads spin for products that take a few
  percent of the report). While an analysis runs, numpy's OpenBLAS is held to one thread
  (`one_blas_thread`, through its scipy_openblas / openblas set_num_threads entry point, found among
  the libraries this process has loaded; nothing is done when there is none) and its setting is
  restored after the last analysis that holds it. The setting is process-wide: other threads' BLAS
  calls (none in specterm) run on one thread meanwhile.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from functools import cache
from typing import Any, Callable, TypeVar

from specterm.core.errors import SpectermError

THREADS_ENV = "SPECTERM_THREADS"
T = TypeVar("T")


def analysis_threads() -> int:
    """Threads of `analyse`: $SPECTERM_THREADS (a positive integer), else min(2, os.cpu_count()).
    1 runs every task inline, in the order of the serial code."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return max(1, min(2, os.cpu_count() or 1))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise SpectermError(f"{THREADS_ENV} must be a positive integer (threads of the analysis), got {raw!r}.")
    return value


@cache
def _blas_controls() -> tuple[Any, Any] | None:
    """(get, set) of the thread count of the OpenBLAS loaded in this process (numpy's), or None
    (another BLAS, or no /proc/self/maps to find it in)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"), ("openblas", "")):
            get, put = (getattr(lib, f"{prefix}_{what}_num_threads{suffix}", None) for what in ("get", "set"))
            if get is not None and put is not None:
                get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                return get, put
    return None


_BLAS_LOCK = threading.Lock()
_blas_held = [0, 0]  # [analyses holding OpenBLAS to one thread, its thread count before the first]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS held to one thread inside (nested and concurrent analyses alike); restored after the last."""
    controls = _blas_controls()
    if controls is None:
        yield
        return
    get, put = controls
    with _BLAS_LOCK:
        if _blas_held[0] == 0:
            _blas_held[1] = int(get())
            put(1)
        _blas_held[0] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_held[0] -= 1
            if _blas_held[0] == 0:
                put(_blas_held[1])


def submit(pool: Executor | None, fn: Callable[[], T]) -> Future[T]:
    """fn on the pool, or run at once (pool None) into a finished future."""
    if pool is not None:
        return pool.submit(fn)
    done: Future[T] = Future()
    done.set_result(fn())
    return done


def run_all(pool: Executor | None, fns: list[Callable[[], T]]) -> list[T]:
    """The results of independent tasks, in the order given (whatever order they ran in)."""
    futures = [submit(pool, fn) for fn in fns]
    return [f.result() for f in futures]


def contiguous_parts(n: int, k: int) -> list[slice]:
    """0..n-1 in k contiguous parts of nearly equal size (no empty part unless n = 0)."""
    k = max(1, min(k, n))
    bounds = [n * i // k for i in range(k + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
