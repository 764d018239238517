"""Shared test helpers: synthetic accept/reject streams with known truth (use the `synth` fixture)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

# Which cost profile a report shows depends on the machine (SPEC 6): pin the one the tests and the README
# are written for, so that results do not depend on the kind of machine CI runs on (core/decide/machine.py).
os.environ.setdefault("SPECTERM_MACHINE_CPU", "AMD EPYC")
os.environ.setdefault("SPECTERM_MACHINE_GPUS", "")
os.environ.setdefault("SPECTERM_FORWARD_THREADS", "1")
# Where this machine remembers a run's models (core/store/modelkeys): a file of the test session, never the
# user's ~/.local/state/specterm/models.json.
os.environ.setdefault("SPECTERM_STATE", os.path.join(__import__("tempfile").mkdtemp(prefix="specterm-state-"), "models.json"))

from models_fixtures import smollm2_pair, tiny_model_dir  # noqa: F401  (fixtures for every test module)
from specterm.core.store import Run, Stream


def iid_bits(rng: np.random.Generator, length: int, alpha: float) -> np.ndarray:
    """Bernoulli(alpha) a_t, independent."""
    return (rng.random(length) < alpha).astype(np.uint8)


def markov_bits(rng: np.random.Generator, length: int, p11: float, p10: float, first: int | None = None) -> np.ndarray:
    """Two-state chain a_t with P(a_{t+1}=1 | a_t=1) = p11, P(a_{t+1}=1 | a_t=0) = p10: the one
    Markov stream generator of the tests. a_0 = `first`, or drawn from the stationary
    alpha = p10 / (1 - p11 + p10) (stationary chain).

    Defined by uniforms u_t (drawn first): a_t = [u_t < (p11 if a_{t-1} else p10)], computed without
    a loop: u_t < min(p11, p10) forces a_t = 1, u_t >= max(p11, p10) forces 0, and in between a_t
    copies a_{t-1} (p11 > p10) or flips it (p11 < p10).
    """
    u = rng.random(length)
    a0 = int(rng.random() < p10 / (1.0 - p11 + p10)) if first is None else int(first)
    if length == 0:
        return np.zeros(0, dtype=np.uint8)
    t = np.arange(length)
    lo, hi = min(p11, p10), max(p11, p10)
    forced = (u < lo) | (u >= hi)
    forced[0] = True
    value = (u < lo).astype(np.uint8)
    value[0] = a0
    last = np.maximum.accumulate(np.where(forced, t, 0))
    bits = value[last]
    if p11 < p10:
        bits = bits ^ ((t - last) & 1).astype(np.uint8)
    return bits.astype(np.uint8)


def streams(corpus: str, arrays: list[np.ndarray], **kw) -> list[Stream]:
    return [Stream(id=f"{corpus}-{i}", corpus=corpus, bits=np.asarray(a, dtype=np.uint8), **kw) for i, a in enumerate(arrays)]


def make_run(stream_list: list[Stream], r: float | None = None, name: str = "synthetic") -> Run:
    meta = {"name": name, "format": "specterm-run", "schema_version": 1}
    if r is not None:
        meta["cost"] = {"r_measured": r}
    return Run(path=Path(name), meta=meta, streams=stream_list)


@pytest.fixture
def anyio_backend() -> str:
    """The async tests (textual's Pilot) run on asyncio."""
    return "asyncio"


@pytest.fixture
def synth() -> SimpleNamespace:
    return SimpleNamespace(iid=iid_bits, markov=markov_bits, streams=streams, run=make_run)


WORKER_THREADS = {"SPECTERM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Set in each pytest-xdist worker (unless already set): torch (OpenMP), MKL and `analyse` (core/report/parallel.py)
on one thread each. Two workers of two threads each on a 2-core box are four busy threads on two cores; an
OpenMP team whose threads wait for a core spins at every barrier (the SmolLM2 tests ran 5-10x slower). The
tests of thread parity set SPECTERM_THREADS themselves (monkeypatch); serial runs (CI) are unchanged. Set
after numpy's OpenBLAS has started (it is imported above), so numpy keeps its own thread count."""


def pytest_configure(config):
    """Under pytest-xdist (-n N), tests marked xdist_group run on one worker: each press-every-key pass
    (run set, size) is observed once and the four tests that read it run where it was made; a module whose
    module-scoped fixture is a model run runs on one worker. `-n N` alone means `--dist load`; it becomes
    `loadgroup` here, and each worker is told so (pytest_configure_node), since xdist reads the group marks
    in the worker (they become a suffix of the test ids) from the worker's own `--dist`, which is `no`."""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadgroup"
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get("specterm_loadgroup"):
            config.option.loadgroup = True
        for name, value in WORKER_THREADS.items():
            os.environ.setdefault(name, value)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(pytest-xdist, in the controller) what the worker must know of the controller's --dist."""
    node.workerinput["specterm_loadgroup"] = getattr(node.config.option, "dist", "no") == "loadgroup"


@pytest.fixture(autouse=True, scope="session")
def _private_analysis_cache(tmp_path_factory):
    """The analysis cache (core/report/cache.py) of this test session (of each pytest-xdist worker) lives in
    its own temporary XDG_CACHE_HOME: never the user's ~/.cache, never shared between workers."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache of this test's own (XDG_CACHE_HOME in tmp_path, no SPECTERM_CACHE)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)


@pytest.fixture
def counted(monkeypatch):
    """analysis.analyse, counting its calls (each call's kwargs; a cache hit makes none)."""
    from specterm.core.report import analysis

    calls = []
    real = analysis.analyse

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis, "analyse", counting)
    return calls
