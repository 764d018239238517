"""Statistics of SPEC 3 on hand-computed cases; bootstrap == brute-force resampling; shuffles; optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from report_factory import curve
from specterm.core.streams import geometry as geo
from specterm.core.streams import stats as st
from specterm.core.report.analysis import analyse, set_report
from specterm.core.streams.blockwalk import E_iid, block_walk_loop
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.decide.optimum import best_gamma, optimum_table, r_values, throughput_curve
from specterm.core.params import R_GRID
from specterm.core.claims.scorecard import spearman
from specterm.core.store import Stream


def bits(text: str) -> np.ndarray:
    return np.array([int(c) for c in text], dtype=np.uint8)


def colsums(arrays, **kw):
    S = st.stream_sums([bits(a) if isinstance(a, str) else a for a in arrays], shuffles=kw.pop("shuffles", 2), **kw)
    return S, S.M.sum(axis=0), S.cols


def test_transition_counts_by_hand():
    # 1101: pairs (1,1) (1,0) (0,1) -> n11=1, n1x=2, n01=1, n0x=1 ; 0001: (0,0) (0,0) (0,1)
    c = geo.concat_streams([bits("1101"), bits("0001")])
    n11, n1x, n01, n0x = geo.transition_counts(c)
    assert n11.tolist() == [1, 0] and n1x.tolist() == [2, 0] and n01.tolist() == [1, 1] and n0x.tolist() == [1, 3]


def test_autocorr_mean_pooled_simpson_by_hand():
    # stream A 1101: p11 = 1/2, p10 = 1/1 -> -0.5 ; stream B 1100: p11 = 1/2, p10 = 0/1 -> 0.5 ;
    # stream C 111: no 0 -> undefined, left out of the mean (but in the pooled table).
    _, c, cols = colsums(["1101", "1100", "111"])
    assert st.autocorr(c, cols) == pytest.approx(0.0)
    # pooled: n11 = 1 + 1 + 2 = 4, n1x = 2 + 2 + 2 = 6, n01 = 1 + 0, n0x = 1 + 1 -> 4/6 - 1/2
    assert st.autocorr_pooled(c, cols) == pytest.approx(4 / 6 - 1 / 2)
    assert st.autocorr_simpson(c, cols) == pytest.approx(4 / 6 - 1 / 2)


def test_dispersion_by_hand():
    # closed runs L = 0, 2, 4 (the trailing 11 is censored); mean 2, population var 8/3 -> D = 4/3
    _, c, cols = colsums(["01101111011"])
    assert c[cols["runs"]] == 3
    assert st.dispersion(c, cols) == pytest.approx(4 / 3)
    a = 8 / 11
    assert st.alpha(c, cols) == pytest.approx(a)
    assert st.dispersion_ratio(c, cols) == pytest.approx(4 / 3 * (1 - a))


def test_yield_and_deficit_identity():
    rng = np.random.default_rng(0)
    arrays = [(rng.random(int(rng.integers(1, 80))) < rng.uniform(0.2, 0.95)).astype(np.uint8) for _ in range(60)]
    S, c, cols = colsums(arrays, gamma=5, shuffles=4)
    n = sum(a.size for a in arrays)
    for g in (1, 5, 17):
        blocks = sum(block_walk_loop(a, g)[1] for a in arrays)
        assert st.E_true(c, cols, g) == pytest.approx(n / blocks)
        assert st.yield_ratio(c, cols, g) == pytest.approx(n / blocks / E_iid(st.alpha(c, cols), g))
    total, hetero, temporal = st.deficit(c, cols, 5)
    assert total == pytest.approx(hetero + temporal, abs=1e-12)
    # and in every bootstrap resample
    R = multinomial_weights(len(arrays), 50, 1) @ S.M
    t, h, m = st.deficit(R, cols, 5)
    assert np.allclose(t, h + m)


def test_gate_cut_and_gate_rate(synth):
    s = Stream(id="x", corpus="c", bits=bits("111011"), gate=bits("111011"))  # gate fails at t = 3
    assert s.a.tolist() == [1, 1, 1]
    rep = analyse([synth.run([s, Stream(id="y", corpus="c", bits=bits("0101"))])], boot=20, shuffles=2)
    pooled = rep.sets["pooled"]
    assert pooled.n_positions == 3 + 4
    assert pooled.alpha == pytest.approx((3 + 2) / 7)
    assert pooled.gate_rate == pytest.approx((5 + 4) / (6 + 4))
    assert pooled.n_positions_gated_out == 3


def brute_force_ci(arrays, W, stat):
    """Resample streams explicitly (stream i repeated W[b, i] times) and compute stat on the list."""
    values = []
    for row in W:
        sample = [a for a, k in zip(arrays, row.astype(int)) for _ in range(k)]
        values.append(stat(sample))
    return percentile_ci(np.array(values))


def direct_alpha(sample):
    return sum(int(a.sum()) for a in sample) / sum(a.size for a in sample)


def direct_E_true(sample, g=3):
    return sum(a.size for a in sample) / sum(block_walk_loop(a, g)[1] for a in sample)


def direct_autocorr(sample):
    vals = []
    for a in sample:
        prev, nxt = a[:-1], a[1:]
        if (prev == 1).any() and (prev == 0).any():
            vals.append(nxt[prev == 1].mean() - nxt[prev == 0].mean())
    return np.mean(vals) if vals else np.nan


def test_bootstrap_ci_equals_brute_force_resampling():
    rng = np.random.default_rng(5)
    arrays = [(rng.random(int(rng.integers(5, 40))) < rng.uniform(0.3, 0.9)).astype(np.uint8) for _ in range(12)]
    S = st.stream_sums(arrays, gamma=3, shuffles=1)
    W = multinomial_weights(len(arrays), 150, seed=11)
    rep = set_report(S, W, [None])
    assert rep.alpha_ci == pytest.approx(list(brute_force_ci(arrays, W, direct_alpha)))
    assert rep.curve.E_true_ci[2] == pytest.approx(list(brute_force_ci(arrays, W, direct_E_true)))
    assert rep.autocorr.ci == pytest.approx(list(brute_force_ci(arrays, W, direct_autocorr)))


def test_multinomial_weights_law():
    W = multinomial_weights(7, 4000, seed=3)
    assert W.shape == (4000, 7) and (W.sum(axis=1) == 7).all() and (W >= 0).all()
    assert W.mean() == pytest.approx(1.0, abs=0.03)  # E[count] = 1
    assert W.var(axis=0).mean() == pytest.approx(6 / 7, abs=0.06)  # Var = N p (1-p) = 6/7
    assert np.array_equal(W, multinomial_weights(7, 4000, seed=3))


def test_shuffle_preserves_each_streams_alpha_exactly():
    rng = np.random.default_rng(9)
    arrays = [(rng.random(int(rng.integers(0, 50))) < rng.random()).astype(np.uint8) for _ in range(200)]
    c = geo.concat_streams(arrays)
    out = st.shuffle_streams(c, copies=5, seed=1)
    changed = 0
    for copy in out:
        for a, lo, hi in zip(arrays, c.starts, c.ends):
            assert copy[lo:hi].sum() == a.sum() and hi - lo == a.size
            changed += not np.array_equal(copy[lo:hi], a)
    assert changed > 500  # the order is destroyed (most streams of 5 copies differ)


def test_shuffled_blocks_mean_matches_enumeration():
    # exact E[blocks] over all C(10, 6) arrangements of six ones and four zeros, by enumeration
    g = 2
    arrangements = set(itertools.permutations("1111110000"))
    exact = np.mean([block_walk_loop(np.array([int(x) for x in p]), g)[1] for p in arrangements])
    c = geo.concat_streams([bits("1111110000")] * 50)
    got = st.shuffled_blocks(c, g, shuffles=400, seed=2)
    assert got.mean() == pytest.approx(exact, rel=0.01)
    assert np.array_equal(got, st.shuffled_blocks(c, g, shuffles=400, seed=2))  # fixed seed


def test_run_length_histogram_geometric_prediction():
    h = st.run_length_histogram(np.array([0, 0, 1, 3]), 0.5)
    assert h["L"] == [0, 1, 2, 3] and h["count"] == [2, 1, 0, 1]
    assert h["geom_expected"] == pytest.approx([4 * 0.5, 4 * 0.25, 4 * 0.125, 4 * 0.0625])


# ------------------------------------------------------------------------ optimum ---


def test_optimum_brute_force_and_ties():
    gam = np.arange(1, 33)
    E = np.array([E_iid(0.8, g) for g in gam])
    for r in R_GRID:
        T = [E[g - 1] / (1 + g * r) for g in gam]
        assert best_gamma(np.array(T)) == int(np.argmax(T)) + 1
    assert best_gamma(np.ones(32)) == 1  # all tied -> smallest
    assert best_gamma(np.array([1.0, 3.0, 3.0, 2.0])) == 2
    assert best_gamma(np.full(32, np.nan)) is None
    assert r_values([None, 0.123, 0.123, 0.1]) == sorted(set(R_GRID) | {0.123})
    rows = optimum_table(E, E_iid(0.8, gam), [0.1, 0.123], measured=[0.123])
    assert [row.measured for row in rows] == [False, True]
    assert all(row.gamma_true == row.gamma_iid for row in rows)


def test_throughput_curve_from_the_e_curves():
    out = throughput_curve(curve([1, 2, 3], [1.5, 2.0, None], [1.8, 2.4, 2.9]), 0.5)
    assert out["gamma"] == [1, 2, 3]
    assert out["T_true"][:2] == pytest.approx([1.0, 1.0]) and out["T_true"][2] is None
    assert out["T_iid"] == pytest.approx([1.8 / 1.5, 2.4 / 2.0, 2.9 / 2.5])


def test_spearman_hand_computed():
    # rho = 1 - 6 sum d^2 / (n (n^2 - 1)) without ties: d = (0, 1, -1) -> 1 - 12/24
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) == pytest.approx(0.5)
    # ties take the average rank: x ranks (1.5, 1.5, 3), y ranks (1, 2, 3) -> Pearson of the ranks
    assert spearman(np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.0, 3.0])) == pytest.approx(np.sqrt(3) / 2)
    assert np.isnan(spearman(np.ones(4), np.arange(4.0)))  # constant side: undefined


def test_spearman_equals_scipy_with_ties():
    from scipy import stats as sps

    rng = np.random.default_rng(8)
    for n in (2, 3, 7, 40):
        for _ in range(50):
            x = rng.integers(0, 4, n).astype(float)
            y = np.round(rng.normal(size=n), 1)
            ours, ref = spearman(x, y), sps.spearmanr(x, y).statistic
            assert (np.isnan(ours) and np.isnan(ref)) or ours == pytest.approx(ref, abs=1e-12)


def test_walk_blocks_many_equals_walk_blocks_dense_and_sorted():
    rng = np.random.default_rng(4)
    arrays = [(rng.random(int(rng.integers(0, 300))) < rng.random()).astype(np.uint8) for _ in range(40)]
    c = geo.concat_streams(arrays)
    runs = geo.segment_runs(c.bits, c.starts, c.ends)
    ref = np.stack([geo.walk_blocks(runs, c.starts.size, g) for g in range(1, 33)], axis=1)
    for dense in (True, False, None):
        assert np.array_equal(geo.walk_blocks_many(runs, c.starts.size, range(1, 33), dense=dense), ref)


def test_transition_counts_equal_a_loop_over_pairs():
    rng = np.random.default_rng(4)
    for _ in range(60):
        arrays = [(rng.random(int(rng.choice([0, 1, 2, 3, 40]))) < rng.random()).astype(np.uint8)
                  for _ in range(int(rng.integers(0, 10)))]
        c = geo.concat_streams(arrays)
        got = np.stack(geo.transition_counts(c), axis=1) if arrays else np.zeros((0, 4))
        want = [[sum(int(a[t] == x and a[t + 1] == y) for t in range(a.size - 1) for x, y in pairs)
                 for pairs in ([(1, 1)], [(1, 0), (1, 1)], [(0, 1)], [(0, 0), (0, 1)])] for a in arrays]
        assert got.tolist() == [[float(v) for v in row] for row in want]
        assert geo.stream_totals(c.bits, c.starts, c.ends).tolist() == [int(a.sum()) for a in arrays]


def test_stream_totals_of_bits_equal_the_slices_summed():
    """stream_totals over 0/1 data (bit_prefix: eight bytes a word) equals each slice summed: any
    length (the tail after the last whole word), views that start mid-word, empty and reversed ranges,
    bounds past the end; and a uint8 array with a 2 in it takes the cumulative sum instead."""
    rng = np.random.default_rng(11)
    for _ in range(2000):
        x = (rng.random(int(rng.integers(0, 70))) < rng.random()).astype(rng.choice([np.uint8, np.bool_]))
        x = x[int(rng.integers(0, 3)):]  # most views start off an 8-byte boundary
        lo, hi = rng.integers(0, x.size + 3, (2, int(rng.integers(0, 12))))
        want = [int(x[a:b].astype(np.int64).sum()) for a, b in zip(lo.tolist(), hi.tolist())]
        got = geo.stream_totals(x, lo, hi)
        assert got.dtype == np.int64 and got.tolist() == want
        p = np.arange(x.size + 1)
        assert geo.bit_prefix(x, p).tolist() == np.concatenate([[0], np.cumsum(x, dtype=np.int64)]).tolist()
    y = np.array([1, 2, 0, 1, 1, 0, 0, 1, 1, 1], dtype=np.uint8)
    assert geo.stream_totals(y, np.array([0, 1, 9]), np.array([10, 2, 10])).tolist() == [8, 2, 1]
