"""Shared test helpers: synthetic accept/reject streams with known truth (use the `synth` fixture)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from specterm.core.streams import Run, Stream


def iid_bits(rng: np.random.Generator, length: int, alpha: float) -> np.ndarray:
    """Bernoulli(alpha) a_t, independent."""
    return (rng.random(length) < alpha).astype(np.uint8)


def markov_bits(rng: np.random.Generator, length: int, p11: float, p10: float) -> np.ndarray:
    """Stationary two-state chain with P(1|1) = p11, P(1|0) = p10, built from its alternating runs:
    a run of ones lasts Geometric(1 - p11) positions, a run of zeros Geometric(p10)."""
    alpha = p10 / (1.0 - p11 + p10)
    state = int(rng.random() < alpha)
    n_runs = 2 * length + 2  # every run has length >= 1, so this always covers `length`
    ones = rng.geometric(1.0 - p11, size=n_runs) if p11 < 1 else np.full(n_runs, length)
    zeros = rng.geometric(p10, size=n_runs) if p10 > 0 else np.full(n_runs, length)
    lengths = np.empty(2 * n_runs, dtype=np.int64)
    values = np.empty(2 * n_runs, dtype=np.uint8)
    first, second = (ones, zeros) if state == 1 else (zeros, ones)
    lengths[0::2], lengths[1::2] = first, second
    values[0::2], values[1::2] = state, 1 - state
    return np.repeat(values, lengths)[:length]


def streams(corpus: str, arrays: list[np.ndarray], **kw) -> list[Stream]:
    return [Stream(id=f"{corpus}-{i}", corpus=corpus, bits=np.asarray(a, dtype=np.uint8), **kw) for i, a in enumerate(arrays)]


def make_run(stream_list: list[Stream], r: float | None = None, name: str = "synthetic") -> Run:
    meta = {"name": name, "format": "specterm-run", "schema_version": 1}
    if r is not None:
        meta["cost"] = {"r_measured": r}
    return Run(path=Path(name), meta=meta, streams=stream_list)


@pytest.fixture
def synth() -> SimpleNamespace:
    return SimpleNamespace(iid=iid_bits, markov=markov_bits, streams=streams, run=make_run)
