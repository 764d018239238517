"""The steady state (SPEC 4: positions t >= 32 only) against streams cut by hand and statistics
computed in plain Python, and its place in the report."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specterm.core.streams import stats as st
from specterm.core.report.analysis import analyse
from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.streams.steady import expected_shuffled_blocks, steady_report, steady_sums


def p11_p10(bits: list[int]) -> float | None:
    """p11 - p10 of one stream from its transitions, by counting (None when a conditioning count is 0)."""
    pairs = list(itertools.pairwise(bits))
    after1 = [b for a, b in pairs if a == 1]
    after0 = [b for a, b in pairs if a == 0]
    if not after1 or not after0:
        return None
    return sum(after1) / len(after1) - sum(after0) / len(after0)


def closed_runs(bits: list[int]) -> list[int]:
    out, run = [], 0
    for b in bits:
        if b:
            run += 1
        else:
            out.append(run)
            run = 0
    return out  # the trailing run is censored


def blocks(bits: list[int], g: int) -> int:
    """SPEC 2's walk, as written."""
    s, n, count = 0, len(bits), 0
    while s < n:
        k = 0
        while k < min(g, n - s) and bits[s + k] == 1:
            k += 1
        count += 1
        s += k + 1
    return count


def test_steady_numbers_against_hand_cut_streams():
    rng = np.random.default_rng(11)
    # a warm-up: hard first 32 positions, then a clustered easy chain; one stream too short to count
    streams = []
    for n in (128, 100, 90, 60, 128, 20):
        head = (rng.random(min(n, 32)) < 0.3).astype(np.uint8)
        tail = (rng.random(max(n - 32, 0)) < 0.85).astype(np.uint8)
        tail[5:9] = 0
        streams.append(np.concatenate([head, tail]))
    ss = steady_sums(streams, gamma=4, shuffles=3, seed=0)
    rep = steady_report(ss, multinomial_weights(len(streams), 200, 0))
    cut = [s[32:].tolist() for s in streams]
    assert rep.n_streams == 5 and rep.n_positions == sum(len(c) for c in cut)
    per = [v for v in (p11_p10(c) for c in cut) if v is not None]
    assert rep.autocorr.value == pytest.approx(sum(per) / len(per))
    n11 = sum(a & b for c in cut for a, b in itertools.pairwise(c))
    n1x = sum(a for c in cut for a in c[:-1])
    n01 = sum((1 - a) & b for c in cut for a, b in itertools.pairwise(c))
    n0x = sum(1 - a for c in cut for a in c[:-1])
    assert rep.autocorr_pooled.value == pytest.approx(n11 / n1x - n01 / n0x)
    L = np.array([x for c in cut for x in closed_runs(c)], dtype=float)
    alpha = sum(map(sum, cut)) / sum(map(len, cut))
    assert rep.alpha == pytest.approx(alpha)
    assert rep.dispersion_ratio.value == pytest.approx(L.var() / L.mean() * (1 - alpha))
    E_true = sum(map(len, cut)) / sum(blocks(c, 4) for c in cut)
    d = rep.deficit
    assert d.E_true == pytest.approx(E_true) and d.E_iid == pytest.approx(E_iid(alpha, 4))
    assert d.total.value == pytest.approx(1 - E_true / E_iid(alpha, 4))
    assert d.total.value == pytest.approx(d.hetero.value + d.temporal.value)
    # the shuffle control: the exact expectation over orderings of each cut stream
    E_shuf = sum(map(len, cut)) / expected_shuffled_blocks(np.array([len(c) for c in cut]),
                                                           np.array([sum(c) for c in cut]), 4).sum()
    assert d.E_shuf == pytest.approx(E_shuf)
    # ... and with exact=False, stats.shuffled_blocks of the cut streams with the set's seed
    mc = steady_sums(streams, gamma=4, shuffles=3, seed=0, exact=False)
    c = st.concat_streams([np.asarray(x, np.uint8) for x in cut])
    assert mc.M[:, mc.cols["shuf_blocks"]] == pytest.approx(st.shuffled_blocks(c, 4, 3, 0))
    for e in (rep.autocorr, rep.dispersion_ratio):
        assert e.lo <= e.value <= e.hi


def test_steady_state_in_the_report_and_json(synth):
    rng = np.random.default_rng(3)
    arrays = [synth.markov(rng, 200, 0.9, 0.3) for _ in range(20)]
    rep = analyse([synth.run(synth.streams("code", arrays))], boot=100, shuffles=2)
    js = rep.to_dict()["sets"]["code"]["steady_state"]
    assert set(js) >= {"start", "n_streams", "n_positions", "autocorr", "autocorr_pooled", "dispersion_ratio", "deficit"}
    assert js["start"] == 32 and js["n_positions"] == 20 * (200 - 32)
    assert js["deficit"]["total"]["value"] == pytest.approx(js["deficit"]["hetero"]["value"] + js["deficit"]["temporal"]["value"])


def test_expected_shuffled_blocks_equals_every_ordering():
    """The exact expectation against the mean over all distinct orderings, by SPEC 2's walk, n <= 9."""
    ns, ks, want = [], [], {g: [] for g in (1, 2, 3, 8)}
    for n in range(10):
        for k in range(n + 1):
            orders = set(itertools.permutations([1] * k + [0] * (n - k)))
            ns.append(n)
            ks.append(k)
            for g, means in want.items():
                means.append(np.mean([blocks(list(o), g) for o in orders]) if n else 0.0)
    for g, means in want.items():
        assert expected_shuffled_blocks(np.array(ns), np.array(ks), g) == pytest.approx(means, abs=1e-12)


def test_expected_shuffled_blocks_is_the_limit_of_the_shuffles():
    rng = np.random.default_rng(0)
    arrays = [(rng.random(int(rng.integers(200, 1200))) < p).astype(np.uint8) for p in (0.5, 0.85, 0.97, 0.2)]
    c = st.concat_streams(arrays)
    mc = st.shuffled_blocks(c, 8, 3000, 1)
    ex = expected_shuffled_blocks(c.lengths, np.array([a.sum() for a in arrays]), 8)
    assert ex == pytest.approx(mc, rel=0.01)


def _expected_shuffled_blocks_one_pass(n: np.ndarray, k: np.ndarray, gamma: int) -> np.ndarray:
    """steady.expected_shuffled_blocks as it was before the streams were taken in groups (one pass over
    all terms): the reference its grouped form must equal bit for bit."""
    n, k = np.asarray(n, dtype=np.int64), np.asarray(k, dtype=np.int64)
    m, gp1 = n - k, gamma + 1
    out = np.where(m == 0, -(-k // gp1), 0).astype(np.float64)
    mix = np.flatnonzero((m > 0) & (k > 0))
    out[(m > 0) & (k == 0)] = m[(m > 0) & (k == 0)]
    if mix.size == 0:
        return out
    kk, mm = k[mix], m[mix]
    terms = kk + 1
    seg = np.repeat(np.arange(mix.size), terms)
    first = np.cumsum(terms) - terms
    ell = np.arange(int(terms.sum())) - np.repeat(first, terms)
    kl, ml = kk[seg], mm[seg]
    last = ell == kl
    num_, den = np.where(last, 1, kl - ell), np.where(last, 1, kl - ell + ml - 1)
    with np.errstate(divide="ignore"):
        log_int = np.log(np.arange(int((kk + mm).max()) + 1, dtype=np.int64).astype(np.float64))
    csum = np.cumsum(log_int[num_] - log_int[den])
    before = np.concatenate([[0.0], csum[:-1]])
    p = np.exp(np.log(mm / (kk + mm))[seg] + before - before[first][seg])
    ceil_l = -(-np.arange(int(kk.max()) + 2, dtype=np.int64) // gp1)
    closed = np.bincount(seg, weights=p * ceil_l[ell + 1], minlength=mix.size)
    trailing = np.bincount(seg, weights=p * ceil_l[ell], minlength=mix.size)
    out[mix] = mm * closed + trailing
    return out


def test_expected_shuffled_blocks_in_groups_equals_one_pass(monkeypatch):
    from specterm.core.streams import steady

    rng = np.random.default_rng(4)
    cases = []
    for _ in range(40):
        N = int(rng.integers(1, 60))
        n = rng.integers(0, 1500, N)
        k = np.minimum(n, (n * rng.random(N)).astype(np.int64))
        k[rng.random(N) < 0.1] = 0  # no ones
        full = rng.random(N) < 0.1
        k[full] = n[full]  # no zeros
        cases.append((n, k))
    cases.append((np.array([5, 7, 0, 3, 1000]), np.array([5, 0, 0, 1, 999])))
    for chunk in (1, 37, 1 << 12, st.ESB_CHUNK, 1 << 40):
        monkeypatch.setattr(st, "ESB_CHUNK", chunk)
        for g in (1, 4, 8, 31):
            for n, k in cases:
                assert np.array_equal(steady.expected_shuffled_blocks(n, k, g), _expected_shuffled_blocks_one_pass(n, k, g)), (chunk, g)
