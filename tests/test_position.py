"""Acceptance by position and the warm-up gain (SPEC 3) on hand-computed cases and synthetic truth."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.streams import position as pos
from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.streams.estimate import bootstrap_estimate


def bits(text: str) -> np.ndarray:
    return np.array([int(c) for c in text], dtype=np.uint8)


def test_bins_by_hand():
    # width 4. A = 0011 1111 01 (10 positions), B = 1010 11 (6), C = empty (gate failed at t = 0).
    # bin 0 (t 0..3): ones 2 + 2 = 4 of 8 -> 0.5, streams A, B
    # bin 1 (t 4..7): ones 4 + 2 = 6 of 4 + 2 = 6 -> 1.0, streams A, B
    # bin 2 (t 8..9): ones 1 of 2 -> 0.5, stream A only
    ps = pos.position_sums([bits("0011111101"), bits("101011"), bits("")], bin_width=4)
    assert ps.n_bins == 3
    c = ps.M.sum(axis=0)
    assert [float(pos.bin_alpha(c, ps.cols, k)) for k in range(3)] == pytest.approx([0.5, 1.0, 0.5])
    rep = pos.position_report(ps, multinomial_weights(3, 200, 0))
    assert [b.start for b in rep.bins] == [0, 4, 8]
    assert [b.n for b in rep.bins] == [8, 6, 2]
    assert [b.streams for b in rep.bins] == [2, 2, 1]
    # no stream reaches t = 32: the gain is null, not an error
    assert rep.warmup_streams == 0 and rep.warmup_gain.value is None and rep.warmup_gain.ci == [None, None]
    js = rep.to_dict()
    assert js["bin_width"] == 4 and js["bins"][1] == {"start": 4, "alpha": js["bins"][1]["alpha"], "n": 6, "streams": 2}
    assert js["warmup_gain"] == {"value": None, "ci": [None, None]}


def test_warmup_gain_by_hand_is_paired():
    # Stream A (40 positions): t < 16 has 4 ones, t >= 32 (8 positions) has 8 ones -> 1 - 4/16 = 0.75.
    # Stream B (20 positions, all zeros) stops before t = 32: it is in bins 0 and 1, not in the gain.
    a = np.zeros(40, np.uint8)
    a[:4] = 1
    a[32:] = 1
    b = np.zeros(20, np.uint8)
    ps = pos.position_sums([a, b])
    c = ps.M.sum(axis=0)
    assert float(pos.warmup_gain(c, ps.cols)) == pytest.approx(8 / 8 - 4 / 16)
    assert c[ps.cols["warmup"]] == 1
    # the bins still count B: bin 0 = (4 + 0) / 32, bin 1 = (0 + 0) / (16 + 4)
    assert float(pos.bin_alpha(c, ps.cols, 0)) == pytest.approx(4 / 32)
    assert float(pos.bin_alpha(c, ps.cols, 1)) == 0.0
    assert [b.streams for b in pos.position_report(ps, multinomial_weights(2, 50, 0)).bins] == [2, 2, 1]


def test_a_stream_of_exactly_32_does_not_reach_t_32():
    ps = pos.position_sums([np.ones(32, np.uint8), np.ones(33, np.uint8)])
    assert ps.M[:, ps.cols["warmup"]].tolist() == [0, 1]


def test_fixed_bin_count_pads_and_rejects_too_few():
    ps = pos.position_sums([np.ones(20, np.uint8)], bin_width=16, n_bins=5)
    assert ps.n_bins == 5 and ps.M.shape == (1, 2 * 5 + len(pos.WARMUP_COLUMNS))
    assert len(pos.position_report(ps, multinomial_weights(1, 10, 0)).bins) == 2  # trailing empty bins are not listed
    with pytest.raises(ValueError):
        pos.position_sums([np.ones(40, np.uint8)], bin_width=16, n_bins=2)


def test_bootstrap_equals_brute_force_resampling():
    rng = np.random.default_rng(3)
    arrays = [(rng.random(int(rng.integers(1, 90))) < 0.7).astype(np.uint8) for _ in range(25)]
    ps = pos.position_sums(arrays)
    W = multinomial_weights(len(arrays), 30, 1)
    R = W @ ps.M
    for b in range(5):
        # resample b as an explicit list of streams: each stream i repeated W[b, i] times
        drawn = [arrays[i] for i in range(len(arrays)) for _ in range(int(W[b, i]))]
        again = pos.position_sums(drawn, n_bins=ps.n_bins).M.sum(axis=0)
        assert np.allclose(R[b], again)


def rising(n_streams: int, length: int, rng) -> list[np.ndarray]:
    """P(a_t = 1) = 0.55 for t < 16, then rising linearly to 0.9 at t = 32 and 0.9 after (truth: gain = 0.35)."""
    t = np.arange(length)
    p = np.clip(0.55 + (t - 16) * (0.35 / 16), 0.55, 0.9)
    return [(rng.random(length) < p).astype(np.uint8) for _ in range(n_streams)]


def test_rising_acceptance_gives_a_gain_whose_ci_excludes_0():
    rng = np.random.default_rng(0)
    arrays = rising(80, 96, rng)
    rep = pos.position_report(pos.position_sums(arrays), multinomial_weights(80, 2000, 0))
    g = rep.warmup_gain
    assert g.lo > 0
    assert g.lo < 0.35 < g.hi
    # bins: 0..15 at 0.55, 32.. at 0.9, each within its CI
    assert rep.bins[0].alpha.lo < 0.55 < rep.bins[0].alpha.hi
    assert rep.bins[3].alpha.lo < 0.9 < rep.bins[3].alpha.hi
    assert rep.bins[0].alpha.hi < rep.bins[3].alpha.lo


def iid_streams(n_streams: int, rng) -> list[np.ndarray]:
    """Each stream i.i.d. at its own alpha (heterogeneous prompts), constant in t. Lengths vary, and
    the short streams (< 33) are the hard ones, as EOS-stopped answers can be: truth gain = 0."""
    out = []
    for _ in range(n_streams):
        short = rng.random() < 0.3
        alpha = rng.uniform(0.2, 0.5) if short else rng.uniform(0.6, 0.95)
        length = int(rng.integers(8, 33)) if short else int(rng.integers(40, 120))
        out.append((rng.random(length) < alpha).astype(np.uint8))
    return out


def test_iid_streams_give_a_gain_whose_ci_includes_0():
    rng = np.random.default_rng(0)
    arrays = iid_streams(100, rng)
    rep = pos.position_report(pos.position_sums(arrays), multinomial_weights(100, 2000, 0))
    assert rep.warmup_gain.lo < 0 < rep.warmup_gain.hi
    # the unpaired difference (all streams in alpha(t < 16)) would be biased up by the short hard streams
    ps = pos.position_sums(arrays)
    c = ps.M.sum(axis=0)
    early_all = sum(a[:16].sum() for a in arrays) / sum(min(a.size, 16) for a in arrays)
    late = c[ps.cols["late_ones"]] / c[ps.cols["late_n"]]
    assert late - early_all > rep.warmup_gain.hi


def test_iid_coverage_is_about_95_percent():
    # Not luck: over 200 independent synthetic sets the 95% CI contains the true gain 0 about 95% of
    # the time (binomial sd ~1.5%; the percentile bootstrap with 60 streams may undercover slightly).
    hits = 0
    reps = 200
    for seed in range(reps):
        rng = np.random.default_rng(1000 + seed)
        arrays = iid_streams(60, rng)
        rep = pos.position_report(pos.position_sums(arrays), multinomial_weights(60, 1000, seed))
        hits += rep.warmup_gain.lo <= 0 <= rep.warmup_gain.hi
    assert 0.89 <= hits / reps <= 0.99


def test_vectorised_bin_cis_equal_the_one_bin_estimates():
    rng = np.random.default_rng(7)
    arrays = [(rng.random(int(rng.integers(1, 70))) < 0.6).astype(np.uint8) for _ in range(12)]
    ps = pos.position_sums(arrays)
    W = multinomial_weights(12, 400, 2)
    R = W @ ps.M
    rep = pos.position_report(ps, W, R)
    c = ps.M.sum(axis=0)
    for k, b in enumerate(rep.bins):
        # late bins are reached by few streams: some resamples leave them empty (NaN, dropped)
        assert b.alpha == bootstrap_estimate(pos.bin_alpha, c, R, ps.cols, k)


def test_constant_streams_give_exactly_zero_gain():
    """SPEC 3: per stream, equally weighted. One all-ones stream of 300 tokens and one all-zeros stream
    of 100 (issue 19's example; a ratio of pooled sums gave +0.298 [0.00, 0.33]) gain exactly 0, in every
    resample too."""
    ps = pos.position_sums([np.ones(300, np.uint8), np.zeros(100, np.uint8)])
    rep = pos.position_report(ps, multinomial_weights(2, 500, 0))
    assert rep.warmup_gain.value == 0.0 and rep.warmup_gain.ci == [0.0, 0.0] and rep.warmup_streams == 2
    rng = np.random.default_rng(7)
    arrays = [np.full(int(rng.integers(33, 400)), int(rng.integers(0, 2)), np.uint8) for _ in range(30)]
    rep = pos.position_report(pos.position_sums(arrays), multinomial_weights(30, 300, 1))
    assert rep.warmup_gain.value == 0.0 and rep.warmup_gain.ci == [0.0, 0.0]


def test_gain_weights_streams_equally_by_hand():
    # A (40): early 4/16, late 8/8 -> +0.75. B (100): early 16/16, late 34/68 -> -0.5. mean = +0.125
    # (a ratio of pooled sums would give (8 + 34)/(8 + 68) - (4 + 16)/32 = -0.0724)
    a = np.zeros(40, np.uint8)
    a[:4] = 1
    a[32:] = 1
    b = np.zeros(100, np.uint8)
    b[:16] = 1
    b[32:66] = 1
    ps = pos.position_sums([a, b])
    assert float(pos.warmup_gain(ps.M.sum(axis=0), ps.cols)) == pytest.approx((0.75 - 0.5) / 2)


def test_position_sums_equal_a_loop_over_streams_and_bins():
    # every column against a plain loop, at the awkward lengths (empty, one bin, the warm-up bounds)
    from specterm.core.params import WARMUP_EARLY, WARMUP_LATE
    from specterm.core.streams.position import bins_needed, position_sums

    rng = np.random.default_rng(7)
    for _ in range(60):
        arrays = [(rng.random(int(rng.choice([0, 1, 5, 16, 17, 31, 32, 33, 40, 100]))) < rng.random()).astype(np.uint8)
                  for _ in range(int(rng.integers(1, 7)))]
        w = int(rng.choice([1, 3, 16]))
        K = bins_needed(max(a.size for a in arrays), w) + int(rng.integers(0, 3))
        ps = position_sums(arrays, w, K)
        for i, a in enumerate(arrays):
            row, cols = ps.M[i], ps.cols
            for k in range(K):
                assert row[cols[f"ones_{k}"]] == a[k * w:(k + 1) * w].sum()
                assert row[cols[f"n_{k}"]] == a[k * w:(k + 1) * w].size
            warm = a.size > WARMUP_LATE
            assert row[cols["warmup"]] == warm
            assert row[cols["early_ones"]] == (a[:WARMUP_EARLY].sum() if warm else 0)
            assert row[cols["early_n"]] == (min(a.size, WARMUP_EARLY) if warm else 0)
            assert row[cols["late_ones"]] == (a[WARMUP_LATE:].sum() if warm else 0)
            assert row[cols["late_n"]] == (max(a.size - WARMUP_LATE, 0) if warm else 0)
