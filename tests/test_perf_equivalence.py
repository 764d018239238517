"""Vectorised forms against the one-stream loops they replace (issue 21): equal, not close."""

from __future__ import annotations

import numpy as np

from specterm.core.decide.costmodel import refeed_counts, refeed_share


def refeed_share_loop(streams, gammas) -> np.ndarray:
    tot_r, tot_b = np.zeros(len(gammas)), np.zeros(len(gammas))
    for bits in streams:
        r, b = refeed_counts(bits, gammas)
        tot_r += r
        tot_b += b
    with np.errstate(invalid="ignore", divide="ignore"):
        return tot_r / tot_b


def test_refeed_share_equals_the_per_stream_loop():
    rng = np.random.default_rng(7)
    gammas = list(range(1, 17))
    for _ in range(150):
        streams = [(rng.random(int(rng.integers(0, 70))) < rng.random()).astype(np.uint8)
                   for _ in range(int(rng.integers(0, 9)))]
        got, ref = refeed_share(streams, gammas), refeed_share_loop(streams, gammas)
        assert np.array_equal(np.isnan(got), np.isnan(ref))
        assert np.array_equal(got[~np.isnan(got)], ref[~np.isnan(ref)])


def test_refeed_share_hand_case():
    # g = 2 on 1 1 1 0 1 1 1 1: the walk's blocks accept k = 2, 0, 2, 1 (the last cut by the end);
    # refeeds = blocks after a fully accepted one = 2 of 4 blocks
    bits = np.array([1, 1, 1, 0, 1, 1, 1, 1], np.uint8)
    r, b = refeed_counts(bits, [2])
    assert (int(r[0]), int(b[0])) == (2, 4)
    assert refeed_share([bits], [2])[0] == 0.5
    assert np.isnan(refeed_share([], [2])[0])


def test_policy_ratios_resample_one_tokens_column_exactly():
    # tokens = n under every policy, so borderline.policy_ratios resamples one tokens column; its
    # rows must equal the ratios computed from the full (B x P x 3) resample, number for number
    from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
    from specterm.core.claims.borderline import policy_ratios
    from specterm.core.decide.costmodel import throughput

    rng = np.random.default_rng(8)
    n, p, r = 40, 5, 0.17
    tokens = rng.integers(50, 900, n)
    blocks = rng.integers(5, 300, (n, p))
    sums = np.stack([np.broadcast_to(tokens[:, None], (n, p)), blocks, blocks * rng.integers(1, 9, p)], axis=-1)
    policies = [("fixed", {"gamma": g}) for g in range(1, p)] + [("best-fixed", {"gamma": 2})]
    W = multinomial_weights(n, 300, seed=2)
    rows = policy_ratios(policies, sums, r, W)
    boot = (W @ sums.reshape(n, p * 3).astype(np.float64)).reshape(-1, p, 3)
    Tb = throughput(boot[..., 0], boot[..., 1], boot[..., 2], r)
    for j, row in enumerate(rows):
        lo, hi = percentile_ci(Tb[:, j] / Tb[:, p - 1])
        assert row.vs_best_fixed.ci == [lo, hi]


def test_multinomial_weights_do_not_depend_on_the_chunk_size(monkeypatch):
    # the chunk of rows only bounds the index array; the draws are one rng.integers stream, row
    # after row, so W equals a row-by-row count of those draws whatever WEIGHT_CHUNK is
    from specterm.core.streams import bootstrap

    for n, boot, seed in ((1, 7, 0), (5, 300, 3), (37, 101, 9), (2000, 40, 1)):
        rng = np.random.default_rng(seed)
        ref = np.array([np.bincount(rng.integers(0, n, size=n, dtype=np.int64), minlength=n) for _ in range(boot)],
                       dtype=np.float64)
        for chunk in (1, n, 3 * n + 1, 2_000_000):
            monkeypatch.setattr(bootstrap, "WEIGHT_CHUNK", chunk)
            W = bootstrap.multinomial_weights(n, boot, seed)
            assert np.array_equal(W, ref), (n, boot, chunk)
            assert np.array_equal(W.sum(axis=1), np.full(boot, n))
