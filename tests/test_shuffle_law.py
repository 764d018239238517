"""The in-place shuffles (stats.Shuffler, one sort of random keys per copy) against their law: a
uniform permutation of each stream. The random stream differs from specterm <= 950a878 (rng.permuted
per group of equal-length streams); these tests check the law directly and that the temporal CI's
coverage on streams with known truth equals the old sampler's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specterm.core import geometry as geo
from specterm.core import stats as st
from specterm.core.bootstrap import multinomial_weights, percentile_ci


def old_shuffled_blocks(c: geo.Concat, gamma: int, shuffles: int, seed: int) -> np.ndarray:
    """The sampler of specterm <= 950a878, kept here as the reference: rng.permuted over the streams
    of each length, stacked as rows and tiled `shuffles` times."""
    out = np.zeros(c.starts.size)
    rng = np.random.default_rng(seed)
    for length in np.unique(c.lengths):
        if length == 0:
            continue
        rows = np.flatnonzero(c.lengths == length)
        mat = np.tile(c.bits[c.starts[rows][:, None] + np.arange(length)], (shuffles, 1))
        rng.permuted(mat, axis=1, out=mat)
        n_rows = mat.shape[0]
        starts = np.arange(n_rows, dtype=np.int64) * length
        runs = geo.segment_runs(mat.ravel(), starts, starts + length, seg_of=lambda z, w=length: z // w)
        out[rows] = geo.walk_blocks(runs, n_rows, gamma).reshape(shuffles, rows.size).mean(axis=0)
    return out


def test_every_arrangement_equally_likely():
    # 2 ones among 5 positions: C(5, 2) = 10 arrangements, 20000 draws; chi-square with 9 df
    c = geo.concat_streams([np.array([1, 0, 1, 0, 0], np.uint8)] * 2000)
    out = st.shuffle_streams(c, copies=10, seed=4).reshape(-1, 5)
    assert (out.sum(axis=1) == 2).all()
    arrangements = sorted(set(itertools.permutations((1, 1, 0, 0, 0))))
    counts = np.array([np.all(out == np.array(a), axis=1).sum() for a in arrangements])
    assert counts.sum() == out.shape[0]
    expected = out.shape[0] / len(arrangements)
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 27.9  # the 0.999 quantile of chi-square(9)


def test_position_pairs_are_exchangeable():
    # P(a_i = 1, a_j = 1) = k(k-1) / (n(n-1)) for every pair i != j, whatever the original order
    bits = np.array([1] * 6 + [0] * 10, np.uint8)
    c = geo.concat_streams([bits] * 500)
    out = st.shuffle_streams(c, copies=8, seed=1).reshape(-1, 16).astype(np.float64)
    joint = out.T @ out / out.shape[0]
    off = joint[~np.eye(16, dtype=bool)]
    assert off == pytest.approx(6 * 5 / (16 * 15), abs=0.02)
    assert np.diag(joint) == pytest.approx(6 / 16, abs=0.02)


def test_many_chunks_keep_every_stream(monkeypatch):
    monkeypatch.setattr(st, "_CHUNK", 50)  # many sorts, streams longer than a chunk among them
    rng = np.random.default_rng(2)
    arrays = [(rng.random(int(rng.integers(0, 120))) < rng.random()).astype(np.uint8) for _ in range(80)]
    c = geo.concat_streams(arrays)
    assert len(st._chunks(c.lengths, 50)) > 10
    out = st.shuffle_streams(c, copies=3, seed=3)
    moved = 0
    for copy in out:
        for a, lo, hi in zip(arrays, c.starts, c.ends):
            assert copy[lo:hi].sum() == a.sum()
            moved += not np.array_equal(copy[lo:hi], a)
    assert moved > 100


def test_shuffled_blocks_same_law_as_the_old_sampler():
    # per-stream means over 200 shuffles: both samplers estimate the same E[blocks | n, k]
    rng = np.random.default_rng(5)
    arrays = [np.sort((rng.random(60) < 0.6).astype(np.uint8))[::-1].copy() for _ in range(300)]  # clustered
    c = geo.concat_streams(arrays)
    new = st.shuffled_blocks(c, 4, shuffles=200, seed=1)
    old = old_shuffled_blocks(c, 4, shuffles=200, seed=1)
    se = np.sqrt((new.var() + old.var()) / new.size)
    assert abs(new.mean() - old.mean()) < 4 * se + 1e-9
    assert not np.array_equal(new, old)  # a different random stream (stated in stats.py)


def _temporal_ci(arrays: list[np.ndarray], sampler, seed: int, boot: int = 300) -> tuple[float, float]:
    sums = st.stream_sums(arrays, gamma=4, shuffles=0)
    M, cols = sums.M.copy(), sums.cols
    M[:, cols["shuf_blocks"]] = sampler(geo.concat_streams(arrays), 4, 10, seed)
    R = multinomial_weights(len(arrays), boot, seed) @ M
    return percentile_ci(st.deficit(R, cols, 4)[2])


def test_temporal_ci_coverage_equals_the_old_samplers():
    # i.i.d. streams of different alpha: a shuffle leaves each stream's law unchanged, so the true
    # temporal deficit is 0; both samplers' 95% CIs should cover it about equally often.
    rng = np.random.default_rng(11)
    cover = {"new": 0, "old": 0}
    trials = 120
    for t in range(trials):
        alphas = rng.uniform(0.4, 0.9, 30)
        arrays = [(rng.random(int(rng.integers(80, 160))) < a).astype(np.uint8) for a in alphas]
        for name, sampler in (("new", st.shuffled_blocks), ("old", old_shuffled_blocks)):
            lo, hi = _temporal_ci(arrays, sampler, seed=t)
            cover[name] += lo <= 0.0 <= hi
    rate = {k: v / trials for k, v in cover.items()}
    assert 0.85 <= rate["new"] <= 1.0 and 0.85 <= rate["old"] <= 1.0, rate
    assert abs(rate["new"] - rate["old"]) <= 0.08, rate
