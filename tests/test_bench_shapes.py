"""benchmarks/bench_shapes.py's runs (issue 39): the one long stream drawn from alternating runs has the
chain's stationary acceptance and lag-1 correlation; every shape has exactly its streams and lengths,
with draft_conf and beta; a written run loads to those streams."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_shapes


def test_long_markov_has_the_chains_alpha_and_rho():
    rng = np.random.default_rng(0)
    for alpha, rho in ((0.7, 0.3), (0.55, 0.1), (0.9, 0.35)):
        a = bench_shapes.long_markov(400_000, alpha, rho, rng).astype(np.float64)
        assert a.size == 400_000 and set(np.unique(a)) <= {0.0, 1.0}
        assert abs(a.mean() - alpha) < 0.01
        p11 = (a[:-1] * a[1:]).sum() / a[:-1].sum()
        p10 = ((1 - a[:-1]) * a[1:]).sum() / (1 - a[:-1]).sum()
        assert abs((p11 - p10) - rho) < 0.01


def test_shapes_have_their_streams_and_load_back(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_shapes, "CHUNK_POSITIONS", 1000)  # several chunks
    chunks = list(bench_shapes.shape_streams(30, 200, seed=1))
    streams = [s for c in chunks for s in c]
    assert len(chunks) == 6 and [s.n for s in streams] == [200] * 30
    assert all(s.draft_conf is not None and s.beta is not None and s.draft_conf.size == 200 for s in streams)
    assert len({s.corpus for s in streams}) == 5
    from specterm.core.store import load_run

    run = load_run(bench_shapes.write_shape(tmp_path / "run", 30, 200, seed=1))
    assert [s.id for s in run.streams] == [s.id for s in streams]
    assert all(np.array_equal(a.bits, b.bits) and np.array_equal(a.beta, b.beta) for a, b in zip(run.streams, streams))
    (one,) = [s for c in bench_shapes.shape_streams(1, 150_000) for s in c]
    assert one.n == 150_000
