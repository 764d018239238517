"""This machine, as a cost profile names machines (SPEC 6 "Cost profiles"): CPU model name, cores,
the threads specterm uses per forward by default, GPUs. Standard library only (the warm path and the
cache key read it before numpy is imported)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


def default_threads(cores: int | None) -> int:
    """Threads per forward that specterm uses by default on a CPU: 1 on a machine with <= 2 cores (a
    2-thread forward beside any other process is a straggler), else every core."""
    return 1 if cores is None or cores <= 2 else int(cores)


def cpu_name() -> str | None:
    """This CPU's model name (/proc/cpuinfo "model name", as run.json's hardware.cpu records it)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


@lru_cache(maxsize=1)
def gpu_names() -> tuple[str, ...]:
    """This machine's NVIDIA GPU names from nvidia-smi (no torch import), empty without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ()
    try:
        out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.splitlines() if line.strip())


@dataclass(frozen=True)
class Machine:
    """What a decision needs to know of this machine: CPU name, cores, threads specterm uses, GPUs."""

    cpu: str | None
    cores: int | None
    threads: int
    gpus: tuple[str, ...] = ()

    def key(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "cores": self.cores, "threads": self.threads, "gpus": list(self.gpus)}

    def label(self) -> str:
        name = short_device_name(self.cpu) if self.cpu else "unknown CPU"
        return f"{name}, {self.threads} thread{'s' if self.threads != 1 else ''}"


@lru_cache(maxsize=4)
def _this_machine(threads_env: str, cpu_env: str | None, gpus_env: str | None) -> Machine:
    cores = os.cpu_count()
    threads = int(threads_env) if threads_env.isdigit() and int(threads_env) > 0 else default_threads(cores)
    gpus = gpu_names() if gpus_env is None else tuple(g.strip() for g in gpus_env.split(",") if g.strip())
    return Machine(cpu=cpu_name() if cpu_env is None else cpu_env, cores=cores, threads=threads, gpus=gpus)


def this_machine() -> Machine:
    """This machine. Environment overrides, to see the decision another machine would be shown (and to
    pin the machine in tests, so that results do not depend on the CI machine's kind):
    SPECTERM_FORWARD_THREADS (threads per forward), SPECTERM_MACHINE_CPU (the CPU model name),
    SPECTERM_MACHINE_GPUS (comma-separated GPU names; empty: none)."""
    env = os.environ
    return _this_machine(env.get("SPECTERM_FORWARD_THREADS", ""), env.get("SPECTERM_MACHINE_CPU"),
                         env.get("SPECTERM_MACHINE_GPUS"))


def short_device_name(name: str) -> str:
    """A device name for a verdict line: "Intel(R) Xeon(R) Processor" -> "Intel Xeon Processor"."""
    text = re.sub(r"\((R|TM|tm|r)\)", "", name)
    text = re.sub(r"\s+CPU\s+@.*$", "", text)
    return re.sub(r"\s+", " ", text).strip()


def busy_ticks(stat_lines: list[str], cpus: Collection[int] | None = None) -> int | None:
    """Busy clock ticks in /proc/stat's lines: user + nice + system + irq + softirq + steal (all but idle,
    field 4, and iowait, field 5) of the "cpu" line, or summed over the "cpuN" lines of `cpus`; None
    where a wanted line is missing."""
    want = {"cpu"} if cpus is None else {f"cpu{int(c)}" for c in cpus}
    rows = [parts for parts in (line.split() for line in stat_lines) if parts and parts[0] in want]
    if len(rows) != len(want):
        return None
    busy = 0
    for parts in rows:
        ticks = [int(x) for x in parts[1:]]
        busy += sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy


def cpu_busy_seconds(cpus: Collection[int] | None = None) -> float | None:
    """Seconds the CPUs spent busy since boot (busy_ticks of /proc/stat): every CPU of the machine, or only
    those in `cpus`; None where /proc/stat is missing or lacks one."""
    try:
        with open("/proc/stat") as fh:
            lines = [line for line in fh if line.startswith("cpu")]
    except OSError:
        return None
    ticks = busy_ticks(lines, cpus)
    return None if ticks is None else ticks / os.sysconf("SC_CLK_TCK")


def timing_cpus() -> frozenset[int] | None:
    """The CPUs this process may run on when that is fewer than the machine has (pinned, e.g. `taskset -c 0
    specterm costs RUN`), else None. Pinned, a busy check looks at those CPUs only: other processes pinned
    elsewhere share no core with the timing (they still share memory bandwidth and the last-level cache)."""
    try:
        mine = frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    total = os.cpu_count() or len(mine)
    return mine if 0 < len(mine) < total else None


def own_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, every thread, and of its children that have ended (an
    engine's binary run as a subprocess, llama-speculative-simple, is this timing's own work, not another
    process's)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def other_cpu_share(busy0: float, busy1: float, own0: float, own1: float, wall: float) -> float:
    """Cores' worth of CPU that other processes used over `wall` seconds:
    ((busy1 - busy0) - (own1 - own0)) / wall, from machine-wide busy seconds and this process's."""
    if wall <= 0:
        return 0.0
    return max(0.0, ((busy1 - busy0) - (own1 - own0)) / wall)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (MemAvailable of /proc/meminfo, else the free
    physical pages), or None where neither can be read."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
