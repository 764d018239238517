"""The thread pool of `analysis.analyse`: how many threads, running a list of independent tasks on it
(or inline), splitting n items into parts, and numpy's OpenBLAS held to one thread meanwhile.

- Threads: $SPECTERM_THREADS (a positive integer), else min(2, os.cpu_count()), except for a small
  report (PARALLEL_MIN_POSITIONS), which runs on one; 1 runs every task inline, in the serial order.
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
  calls (none in specterm) run on one thread meanwhile. A process that imports specterm before numpy
  starts with one BLAS thread anyway (specterm/__init__.py: OPENBLAS_NUM_THREADS=1 unless set), so
  OpenBLAS starts no threads to spin at import; `one_blas_thread` still holds a user's setting off.
- The C heap (glibc only; `kept_heap`): a report allocates and frees arrays of megabytes thousands of
  times (the shuffles' copies, the weights, every product). By default glibc hands large blocks
  back to the kernel on free (fresh mmaps above its dynamic threshold, at most 32 MiB; a trimmed
  heap top) and gives every thread of the pool its own arena, whose heaps are at most 64 MiB and
  shrink on free; so the next block of that size is new memory, paid for in page faults and
  zeroing by the kernel, and two threads faulting at once serialize on the process's memory map.
  10M positions on 2 threads: 0.5-1.0 s of system time and 100-200k page faults per report (0.3-0.4
  s, 36k on one thread). While an analysis runs, the pool's threads share the main arena
  (M_ARENA_MAX = 1) and freed blocks below 1 GiB stay in the heap for reuse (mmap and trim
  thresholds raised); after the last analysis that holds it, the thresholds are set to glibc's own
  dynamic maxima (32 MiB, 64 MiB: what they reach after the first large free anyway), so the heap's
  free top is handed back at the next free above 64 MiB, and the free blocks inside it are kept
  for the next analysis, as glibc keeps its heap after any free. The same report: 0.1-0.3 s of
  system time and ~17k page faults (first touches) on a fresh process, ~0.01-0.08 s and under 2k
  on the next report in the same process. Not done: malloc_trim(0) after the analysis (140 MB
  resident after a 10M report against ~400 MB) made every next report fault its memory in again,
  1M positions: 12k page faults a report against ~0-1.5k. M_ARENA_MAX stays 1 for the process
  (glibc cannot restore its default); threads that already had an arena keep it (the TUI's worker
  thread that calls analyse).
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


PARALLEL_MIN_POSITIONS = 200_000
"""Fewer positions than this (all the analysed runs' streams) and `analyse` runs on one thread unless
$SPECTERM_THREADS says otherwise: a report's tasks are then a few ms each, and the GIL hand-overs
between the threads (each numpy call gives the GIL up and waits to take it back) cost more than the
second core gives. Measured on 2 cores, the full report (B = 2000), best of runs, 1 thread / 2:
10k positions (the shipped runs) 0.37 / 0.42 s, 100k 0.27 / 0.33, 300k 0.53 / 0.49, 1M 0.90 / 0.79."""
POINT_PARALLEL_MIN_POSITIONS = 3_000_000
"""The same for the point estimates alone (boot = 0): 1M 0.41 / 0.49 s, 3M 1.10 / 1.10, 10M 3.5-4.1 / 2.7-2.9."""


def analysis_threads(positions: int | None = None, boot: int | None = None) -> int:
    """Threads of `analyse`: $SPECTERM_THREADS (a positive integer) when set; else one thread for a
    report of fewer than PARALLEL_MIN_POSITIONS positions (POINT_PARALLEL_MIN_POSITIONS when boot is
    0), else min(2, os.cpu_count()). Without `positions`, the count for a large report.
    1 runs every task inline, in the order of the serial code (the numbers are the same either way)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        small = PARALLEL_MIN_POSITIONS if boot != 0 else POINT_PARALLEL_MIN_POSITIONS
        if positions is not None and positions < small:
            return 1
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


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
HEAP_KEPT = (1 << 30, 2**31 - 1)  # (mmap, trim) thresholds while an analysis runs: blocks below 1 GiB reused
HEAP_AFTER = (32 << 20, 64 << 20)  # after: the most glibc's dynamic thresholds reach (mmap 32 MiB, trim 2x)


@cache
def _malloc_controls() -> Any | None:
    """mallopt of the glibc this process runs on, or None (another C library)."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        libc = ctypes.CDLL(None)
    except (AttributeError, ValueError, OSError):
        return None
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


_HEAP_LOCK = threading.Lock()
_heap_held = [0]  # analyses holding the heap kept


@contextmanager
def kept_heap() -> Iterator[None]:
    """glibc's freed memory kept for reuse inside (one arena, blocks below 1 GiB from the heap, no trim),
    glibc's own thresholds' maxima after the last holder (see the module docstring); nested and
    concurrent analyses alike. Nothing is done on another C library."""
    mallopt = _malloc_controls()
    if mallopt is None:
        yield
        return
    with _HEAP_LOCK:
        if _heap_held[0] == 0:
            mallopt(M_ARENA_MAX, 1)  # before the pool's threads take their first block
            mallopt(M_MMAP_THRESHOLD, HEAP_KEPT[0])
            mallopt(M_TRIM_THRESHOLD, HEAP_KEPT[1])
        _heap_held[0] += 1
    try:
        yield
    finally:
        with _HEAP_LOCK:
            _heap_held[0] -= 1
            if _heap_held[0] == 0:
                mallopt(M_MMAP_THRESHOLD, HEAP_AFTER[0])
                mallopt(M_TRIM_THRESHOLD, HEAP_AFTER[1])


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
