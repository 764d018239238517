"""The bootstrap's speed-ups that must not move a number (issue 21): the weights drawn from raw words
equal rng.integers' draws, and products of integer columns are the same whatever way they are summed."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.streams import bootstrap
from specterm.core.streams.bootstrap import exact_product, multinomial_weights


def weights_by_rows(n: int, boot: int, seed: int) -> np.ndarray:
    """The definition: resample b counts n draws of rng.integers(0, n), one draw stream, row by row."""
    rng = np.random.default_rng(seed)
    return np.array([np.bincount(rng.integers(0, n, size=n, dtype=np.int64), minlength=n) for _ in range(boot)],
                    dtype=np.float64)


def rejected_words(n: int, words: int, seed: int) -> int:
    """How many of the first `words` 32-bit words of default_rng(seed) Lemire's method rejects for
    the range n: (u n mod 2^32) < (2^32 - n) mod n (counted here with Python integers)."""
    raw = np.random.default_rng(seed).bit_generator.random_raw(-(-words // 2))
    u = [int(x) & 0xFFFFFFFF for x in raw.tolist() for x in (x, x >> 32)][:words]
    threshold = (2**32 - n) % n
    return sum((x * n) % 2**32 < threshold for x in u)


@pytest.mark.parametrize("n, boot, seed", [(2, 50, 0), (3, 40, 1), (64, 30, 2), (37, 101, 9), (2000, 12, 4),
                                           (99_991, 6, 5), (3_000_001, 1, 6)])
def test_weights_equal_rng_integers_draw_for_draw(monkeypatch, n, boot, seed):
    # powers of two (nothing rejected), odd counts per chunk (a half word numpy carries to the next
    # call), and ranges where numpy's Lemire method rejects words (the last two)
    ref = weights_by_rows(n, boot, seed)
    for chunk in (1, n, 3 * n + 1, 65_536):
        monkeypatch.setattr(bootstrap, "WEIGHT_CHUNK", chunk)
        assert np.array_equal(multinomial_weights(n, boot, seed), ref), (n, boot, chunk)


def test_the_rejecting_cases_do_reject():
    # the cases above are only a check of the rejection path if words are rejected in them
    assert rejected_words(3_000_001, 3_000_001 + 5_000, 6) > 100
    assert rejected_words(99_991, 99_991 * 6 + 100, 5) > 0


def test_weights_of_one_stream_and_of_none():
    assert np.array_equal(multinomial_weights(1, 5, 0), np.ones((5, 1)))  # n = 1: every draw is stream 0
    assert multinomial_weights(0, 5, 0).shape == (5, 0) and multinomial_weights(4, 0, 0).shape == (0, 4)


def test_exact_product_decides_on_integers_and_size():
    F = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert exact_product(F, 10)
    assert not exact_product(F + 0.5, 10)
    assert not exact_product(F, 2**52)  # 2^52 * 4 >= 2^53
    assert not exact_product(np.array([[np.inf]]), 1)
    assert exact_product(np.zeros((3, 0)), 3)


def test_integer_columns_give_the_same_bits_however_summed():
    # the borderline pass takes a corpus's policy columns from one product with the pooled set's
    # columns of its rows (deduplicated), and the pooled set's resampled sums as the corpora's added
    # up: equal, bit for bit, to each column's own product with W_pooled
    rng = np.random.default_rng(3)
    sizes = [37, 120, 64]
    F = rng.integers(0, 50_000, size=(sum(sizes), 9)).astype(np.float64)
    blocks = [multinomial_weights(n, 300, seed=i) for i, n in enumerate(sizes)]
    W = np.hstack(blocks)
    assert exact_product(F, F.shape[0])
    direct = W @ F
    bounds = np.cumsum([0, *sizes])
    parts = [Wk @ F[lo:hi] for Wk, lo, hi in zip(blocks, bounds[:-1], bounds[1:])]
    assert np.array_equal(sum(parts[1:], parts[0].copy()), direct)
    for j in range(F.shape[1]):
        assert np.array_equal(W @ F[:, [j, 0]], direct[:, [j, 0]])
    # the same check fails on float columns, so it can fail: column sums of floats depend on the order
    G = rng.random((sum(sizes), 9)) * 1e3
    parts = [Wk @ G[lo:hi] for Wk, lo, hi in zip(blocks, bounds[:-1], bounds[1:])]
    assert not np.array_equal(sum(parts[1:], parts[0].copy()), W @ G)


def test_distinct_columns_rebuild_each_matrix():
    from specterm.core.streams.bootstrap import distinct_columns

    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, size=(6, 5)).astype(np.float64)
    b = np.hstack([a[:, [2, 0]], np.zeros((6, 1)), a[:, [2]]])
    F, where = distinct_columns([a, b])
    assert F.shape[1] == len({tuple(col) for col in np.hstack([a, b]).T})  # each column once
    assert np.array_equal(F[:, where[0]], a) and np.array_equal(F[:, where[1]], b)


def test_integer_products_equal_each_product_bit_for_bit():
    from specterm.core.streams.bootstrap import integer_products

    rng = np.random.default_rng(6)
    n = 150
    W = multinomial_weights(n, 400, seed=8)
    mats = [rng.integers(0, 10**6, size=(n, k)).astype(np.float64) for k in (7, 1, 40)]
    mats.append(np.hstack([mats[0][:, :3], mats[2][:, 5:9]]))  # shared columns, as a corpus's and the pooled set's policies
    got = integer_products(W, mats)
    assert got is not None
    for F, P in zip(mats, got):
        assert np.array_equal(P, W @ F)
    assert integer_products(W, [mats[0], mats[1] + 0.25]) is None  # a float column: the caller multiplies
    assert integer_products(W, []) is None


def test_policy_summary_from_given_resamples_is_the_same():
    from conftest import markov_bits
    from specterm.core.decide.policies import policy_summary, policy_sums, policy_table
    from specterm.core.store import Stream

    rng = np.random.default_rng(9)
    streams = []
    for i in range(12):
        bits = markov_bits(rng, int(rng.integers(40, 200)), 0.85, 0.4)
        conf = np.where(bits == 1, rng.uniform(0.5, 1.0, bits.size), rng.uniform(0.0, 0.6, bits.size)).astype(np.float32)
        streams.append(Stream(id=f"p{i}", corpus="c", bits=bits, draft_conf=conf))
    table = policy_table(streams)
    W = multinomial_weights(len(streams), 300, seed=2)
    _, sums = policy_sums(streams, 0.2, table=table)
    given = W @ sums.reshape(len(streams), -1).astype(np.float64)
    assert policy_summary(streams, 0.2, W, table=table, resampled=given) == policy_summary(streams, 0.2, W, table=table)
