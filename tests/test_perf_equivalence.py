"""Vectorised forms against the one-stream loops they replace (issue 21): equal, not close."""

from __future__ import annotations

import numpy as np

from specterm.core.costmodel import refeed_counts, refeed_share


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
