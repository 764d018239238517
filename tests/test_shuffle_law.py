"""The in-place shuffles (stats.Shuffler: i.i.d. marks for the zeros, then a uniform correction to
exactly m of them) against their law: a uniform permutation of each stream. The random stream
differs from specterm <= 950a878 (rng.permuted per group of equal-length streams) and from the sort
of random keys after it; these tests check the law directly (every arrangement, with the correction
forced both ways), that the walk counted from the zeros equals walk_blocks on the shuffled bits, and
that the temporal CI's coverage on streams with known truth equals the old sampler's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specterm.core.streams import geometry as geo
from specterm.core.streams import stats as st
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci


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


def _chi2_every_arrangement(base: list[int], copies: int, seed: int) -> tuple[float, int]:
    n = len(base)
    c = geo.concat_streams([np.array(base, np.uint8)] * 3000)
    out = st.shuffle_streams(c, copies=copies, seed=seed).reshape(-1, n)
    assert (out.sum(axis=1) == sum(base)).all()
    code = out.astype(np.int64) @ (1 << np.arange(n))
    arrangements = sorted(set(itertools.permutations(base)))
    counts = np.array([(code == np.array(a) @ (1 << np.arange(n))).sum() for a in arrangements])
    assert counts.sum() == out.shape[0]
    expected = out.shape[0] / len(arrangements)
    return float(((counts - expected) ** 2 / expected).sum()), len(arrangements) - 1


@pytest.mark.parametrize("q", [0.15, 0.5, 0.9])
def test_every_arrangement_equally_likely_whatever_the_marking_rate(monkeypatch, q):
    # The marks' rate only changes how much is corrected (q = 0.15: marks added to reach m = 4 of 7;
    # q = 0.9: marks removed); the law must stay uniform over all C(7, 3) = 35 arrangements.
    monkeypatch.setattr(st, "_mark_thresholds", lambda n, m: np.full(n.size, round(q * 65536) - 1, np.uint16))
    chi2, df = _chi2_every_arrangement([1, 1, 0, 0, 1, 0, 0], copies=12, seed=int(q * 10))
    assert df == 34 and chi2 < 65.2  # the 0.999 quantile of chi-square(34)


def test_the_correction_is_exercised_both_ways(monkeypatch):
    c = geo.concat_streams([np.array([1, 0, 0, 1, 0, 1, 1, 0], np.uint8)] * 200)
    sh = st.Shuffler(c, np.random.default_rng(0))
    z = np.flatnonzero(sh._marks(sh.t.size) <= sh.t)
    counts = np.diff(np.searchsorted(z, sh.bounds))
    assert (counts > 4).any() and (counts < 4).any()


def test_walk_from_the_zeros_equals_walk_blocks_of_the_copy():
    rng = np.random.default_rng(2)
    arrays = [(rng.random(int(rng.integers(0, 300))) < rng.random()).astype(np.uint8) for _ in range(300)]
    arrays = [np.zeros(0, np.uint8), *arrays, np.zeros(5, np.uint8), np.ones(7, np.uint8), np.zeros(0, np.uint8),
              np.array([0], np.uint8), np.array([1], np.uint8), np.zeros(0, np.uint8)]
    c = geo.concat_streams(arrays)
    for g in (1, 4, 8, 31):
        a, b = st.Shuffler(c, np.random.default_rng(g)), st.Shuffler(c, np.random.default_rng(g))
        for _ in range(3):
            blocks, bits = a.blocks(g), b.copy()
            runs = geo.segment_runs(bits, c.starts, c.ends)
            assert np.array_equal(blocks, geo.walk_blocks(runs, c.starts.size, g))
            for x, lo, hi in zip(arrays, c.starts, c.ends):
                assert bits[lo:hi].sum() == x.sum()


def test_distinct_ranks_are_a_uniform_subset():
    # 3 of 6 in each of 4000 streams: each of the C(6, 3) = 20 subsets equally likely, all distinct
    n = 4000
    idx = st.distinct_ranks(np.full(n, 3), np.full(n, 6), np.arange(n) * 6, 6 * n, np.random.default_rng(1))
    assert idx.size == 3 * n and np.unique(idx).size == idx.size
    owner, rank = np.divmod(np.sort(idx), 6)
    assert (np.bincount(owner, minlength=n) == 3).all()
    code = np.bincount(owner, weights=1 << rank, minlength=n).astype(np.int64)
    counts = np.bincount(code, minlength=64)[[sum(1 << r for r in s) for s in itertools.combinations(range(6), 3)]]
    assert counts.sum() == n
    chi2 = float(((counts - n / 20) ** 2 / (n / 20)).sum())
    assert chi2 < 43.8  # the 0.999 quantile of chi-square(19)


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
