"""Sampling acceptance beta (SPEC 3): beta_bar, E_iid(beta_bar, g), lag-1 autocorrelation of beta."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specterm.core.streams import sampling as sa
from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.store.importer import import_jsonl
from specterm.core.store import Stream, load_run

# Hand-computed streams (see each value):
# A [0.5, 1.0, 0.0, 0.5]: x = (.5, 1, 0), y = (1, 0, .5), both means .5; dx = (0, .5, -.5),
#   dy = (.5, -.5, 0); S_xy = -.25, S_xx = S_yy = .5 -> rho = -.25 / .5 = -0.5
# B [0.1, 0.3, 0.5, 0.7, 0.9]: y = x + 0.2 exactly linear -> rho = 1
# C [0.9, 0.9, 0.9]: constant -> undefined
# D [0.2, 0.8]: one pair (n < 3) -> undefined
# E [0.3, 0.3, 0.6]: x = (.3, .3) constant -> undefined although y moves
# mean over defined streams (A, B) = (-0.5 + 1) / 2 = 0.25
# beta_bar = (2.0 + 2.5 + 2.7 + 1.0 + 1.2) / (4 + 5 + 3 + 2 + 3) = 9.4 / 17
HAND = [[0.5, 1.0, 0.0, 0.5], [0.1, 0.3, 0.5, 0.7, 0.9], [0.9, 0.9, 0.9], [0.2, 0.8], [0.3, 0.3, 0.6]]


def arrays(rows):
    return [None if r is None else np.array(r, dtype=np.float64) for r in rows]


def test_lag1_pearson_by_hand():
    rho, defined = sa.lag1_pearson(arrays(HAND))
    assert defined.tolist() == [True, True, False, False, False]
    assert rho[:2] == pytest.approx([-0.5, 1.0])
    assert rho[2:].tolist() == [0.0, 0.0, 0.0]


def test_lag1_pearson_matches_numpy_corrcoef():
    rng = np.random.default_rng(0)
    betas = [rng.random(int(rng.integers(3, 60))) for _ in range(40)]
    betas[5] = 0.999 + 1e-6 * rng.random(50)  # nearly constant near 1: centring keeps it exact
    rho, defined = sa.lag1_pearson(betas)
    assert defined.all()
    want = [np.corrcoef(b[:-1], b[1:])[0, 1] for b in betas]
    assert rho == pytest.approx(want, abs=1e-9)


def test_sampling_numbers_by_hand():
    ss = sa.sampling_sums(arrays(HAND))
    c = ss.M.sum(axis=0)
    assert float(sa.beta_bar(c, ss.cols)) == pytest.approx(9.4 / 17)
    assert float(sa.beta_autocorr(c, ss.cols)) == pytest.approx(0.25)
    for g in (2, 4, 8, 16):
        assert float(sa.E_iid_beta(c, ss.cols, g)) == pytest.approx((1 - (9.4 / 17) ** (g + 1)) / (1 - 9.4 / 17))
    rep = sa.sampling_report(ss, multinomial_weights(5, 500, 0))
    assert rep.streams == 5 and rep.autocorr_streams == 2
    assert rep.beta_bar.value == pytest.approx(9.4 / 17)
    assert rep.beta_bar.lo <= rep.beta_bar.value <= rep.beta_bar.hi
    assert rep.E_iid_beta["8"].value == pytest.approx(float(E_iid(9.4 / 17, 8)))
    js = rep.to_dict()
    assert set(js) >= {"beta_bar", "beta_autocorr", "E_iid_beta"} and set(js["E_iid_beta"]) == {"2", "4", "8", "16"}


def test_streams_without_beta_add_nothing():
    with_none = sa.sampling_sums(arrays(HAND + [None]))
    alone = sa.sampling_sums(arrays(HAND))
    assert np.array_equal(with_none.M[:5], alone.M) and not with_none.M[5].any()
    assert with_none.streams_with_beta == 5


def test_gate_cut_excludes_beta_after_the_first_failure():
    s = Stream(id="x", corpus="c", bits=np.ones(6, np.uint8), gate=np.array([1, 1, 1, 0, 1, 1], np.uint8),
               beta=np.array([0.2, 0.6, 0.4, 0.0, 0.0, 0.0], np.float32))
    b = sa.analysed_beta(s)
    assert b.tolist() == pytest.approx([0.2, 0.6, 0.4])
    ss = sa.sampling_sums([b])
    # beta_bar = 1.2 / 3; x = (.2, .6), y = (.6, .4): two points, slopes opposite -> rho = -1
    assert float(sa.beta_bar(ss.M.sum(0), ss.cols)) == pytest.approx(0.4)
    assert float(sa.beta_autocorr(ss.M.sum(0), ss.cols)) == pytest.approx(-1.0)


def test_imported_bits_without_beta_give_null_numbers(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in [
        {"id": "a", "corpus": "prose", "bits": "0110"}, {"id": "b", "corpus": "prose", "bits": "1110111"}]))
    path, _ = import_jsonl(src, tmp_path / "run")
    streams = load_run(path).streams
    betas = [sa.analysed_beta(s) for s in streams]
    assert betas == [None, None]
    rep = sa.sampling_report(sa.sampling_sums(betas), multinomial_weights(2, 100, 0))
    assert rep.streams == 0 and rep.beta_bar.value is None and rep.beta_autocorr.value is None
    js = rep.to_dict()
    assert js["beta_bar"] == {"value": None, "ci": [None, None]}
    assert all(v == {"value": None, "ci": [None, None]} for v in js["E_iid_beta"].values())


def test_autocorrelated_beta_is_found_and_iid_beta_is_not():
    # AR(1) beta around 0.8 with phi = 0.6 vs i.i.d. noise. The sample lag-1 correlation of n points has
    # mean about phi - (1 + 3 phi)/n (Kendall's bias), -1/n when i.i.d.: each CI holds its truth.
    rng = np.random.default_rng(1)
    n, N, phi = 200, 60, 0.6
    ar = []
    for _ in range(N):
        e = rng.normal(0, 0.05, n)
        z = np.empty(n)
        z[0] = e[0] / np.sqrt(1 - phi**2)
        for t in range(1, n):
            z[t] = phi * z[t - 1] + e[t]
        ar.append(np.clip(0.8 + z, 0, 1))
    iid = [np.clip(0.8 + rng.normal(0, 0.05, n), 0, 1) for _ in range(N)]
    W = multinomial_weights(N, 2000, 0)
    r_ar = sa.sampling_report(sa.sampling_sums(ar), W).beta_autocorr
    r_iid = sa.sampling_report(sa.sampling_sums(iid), W).beta_autocorr
    assert r_ar.lo < phi - (1 + 3 * phi) / n < r_ar.hi
    assert r_iid.lo < -1 / n < r_iid.hi
    assert r_iid.hi < r_ar.lo


def _lag1_on_copies(v: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sampling._lag1 as it was before (issue 21): x and y copied out of v (each stream less its last,
    resp. first, value), then summed by segment_sums; the reference for the sums taken on v itself."""
    N = lengths.size
    rho, defined = np.zeros(N), np.zeros(N, dtype=bool)
    m = np.maximum(lengths - 1, 0)
    if m.sum() == 0:
        return rho, defined
    with np.errstate(divide="ignore", invalid="ignore"):
        v = v - np.repeat(sa.segment_sums(v, lengths) / lengths, lengths)
    ends = np.cumsum(lengths)
    has = lengths > 0
    keep_x = np.ones(v.size, dtype=bool)
    keep_x[ends[has] - 1] = False
    keep_y = np.ones(v.size, dtype=bool)
    keep_y[(ends - lengths)[has]] = False
    x, y = v[keep_x], v[keep_y]
    step = (x != y).astype(np.float64)
    steps = sa.segment_sums(step, m)
    first = (np.cumsum(m) - m)[m > 0]
    x_moves, y_moves = steps.copy(), steps.copy()
    x_moves[m > 0] -= step[first + m[m > 0] - 1]
    y_moves[m > 0] -= step[first]
    with np.errstate(divide="ignore", invalid="ignore"):
        sx, sy = sa.segment_sums(x, m), sa.segment_sums(y, m)
        sxx = sa.segment_sums(x * x, m) - sx * sx / m
        syy = sa.segment_sums(y * y, m) - sy * sy / m
        sxy = sa.segment_sums(x * y, m) - sx * sy / m
    defined = (lengths >= 3) & (x_moves > 0) & (y_moves > 0) & (sxx > 0) & (syy > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(defined, sxy / np.sqrt(sxx * syy), 0.0)
    return np.clip(rho, -1.0, 1.0), defined


def test_lag1_on_the_concatenation_equals_the_copies_bit_for_bit():
    # streams of 0, 1, 2, 3 and many values (empty spans, one pair, spans long enough for numpy's
    # pairwise sums), constant stretches (steps 0), no beta, at the start and at the end
    rng = np.random.default_rng(17)
    for trial in range(60):
        betas: list[np.ndarray | None] = []
        for _ in range(int(rng.integers(1, 30))):
            size = int(rng.choice([0, 1, 2, 3, int(rng.integers(4, 40)), int(rng.integers(100, 600))]))
            b = rng.random(size)
            if size and rng.random() < 0.3:
                b[: size // 2] = 0.25  # a constant stretch
            betas.append(None if rng.random() < 0.1 else b)
        v, lengths = sa._concat(betas)
        got, want = sa._lag1(v, lengths), _lag1_on_copies(v, lengths)
        assert np.array_equal(got[1], want[1]), trial
        assert np.array_equal(got[0], want[0]), trial


def test_spans_sums_by_hand():
    x = np.arange(10, dtype=np.float64)
    # spans [0, 2), [3, 3) empty, [4, 7), [8, 10) up to the end
    assert sa.spans_sums(x, np.array([0, 3, 4, 8]), np.array([2, 0, 3, 2])).tolist() == [1.0, 0.0, 15.0, 17.0]
