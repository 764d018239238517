"""Synthetic streams with known truth through the whole analysis (small sizes, small B)."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.streams.blockwalk import E_iid
from specterm.core.params import R_GRID

BOOT, SHUFFLES = 300, 6


def contains(ci, x) -> bool:
    return ci[0] <= x <= ci[1]


def markov_E(p11: float, p10: float, g: int) -> float:
    """Exact long-run tokens per block of a stationary two-state chain at draft length g.

    The state at a block start is the value of the position before it. From state x the first
    draft token is accepted with q_x (p11 or p10), each later one with p11, so
    P(k = 0) = 1 - q_x, P(k = j) = q_x p11^(j-1) (1 - p11) for 0 < j < g, P(k = g) = q_x p11^(g-1).
    A rejection leaves state 0; a full block skips the bonus position, whose value is 1 w.p. p11.
    E = sum_x pi_x E[k + 1 | x] with pi the stationary law of this block-start chain.
    """
    P, Ek = np.zeros((2, 2)), np.zeros(2)
    for x, q in ((0, p10), (1, p11)):
        pk = np.array([1 - q] + [q * p11 ** (j - 1) * (1 - p11) for j in range(1, g)] + [q * p11 ** (g - 1)])
        Ek[x] = (pk * np.arange(1, g + 2)).sum()
        P[x] = [pk[:g].sum() + pk[g] * (1 - p11), pk[g] * p11]
    pi1 = P[0, 1] / (P[0, 1] + P[1, 0])
    return (1 - pi1) * Ek[0] + pi1 * Ek[1]


def test_iid_bernoulli(synth):
    rng = np.random.default_rng(1)
    alpha = 0.7
    # long streams: the block cut by each stream's end costs ~2/n of the yield (a real deficit that
    # lands in hetero), which must stay well inside the CI here
    run = synth.run(synth.streams("iid", [synth.iid(rng, 10_000, alpha) for _ in range(40)]))
    s = analyse([run], boot=BOOT, shuffles=SHUFFLES).sets["iid"]
    assert s.alpha == pytest.approx(alpha, abs=0.01)
    for g in ("2", "4", "8", "16"):
        assert contains(s.yield_ratio[g].ci, 1.0), g
    assert contains(s.autocorr.ci, 0.0)
    assert s.dispersion_ratio.value == pytest.approx(1.0, abs=0.05)
    assert contains(s.dispersion_ratio.ci, 1.0)
    assert s.runlengths.D_geom == pytest.approx(1 / (1 - s.alpha))
    t = s.deficit.temporal
    assert abs(t.value) < 0.01 and contains(t.ci, 0.0)
    # per depth: conditional ~ alpha, unconditional ~ alpha^j (censoring must not bias them)
    for j, (cond, unc) in enumerate(zip(s.depth.conditional, s.depth.unconditional), start=1):
        assert cond.value == pytest.approx(alpha, abs=0.03), j
        assert unc.value == pytest.approx(alpha**j, abs=0.03), j
    assert s.depth.unconditional_iid == pytest.approx([s.alpha ** j for j in range(1, 9)])


def test_two_state_markov(synth):
    rng = np.random.default_rng(2)
    # chosen so that g*_true < g*_iid at several r with margin (robust to +-0.01 in alpha, 1% in E)
    p11, p10 = 0.95, 0.2
    alpha = p10 / (1 - p11 + p10)
    run = synth.run(synth.streams("markov", [synth.markov(rng, 2000, p11, p10) for _ in range(200)]))
    s = analyse([run], boot=BOOT, shuffles=SHUFFLES).sets["markov"]
    assert s.alpha == pytest.approx(alpha, abs=0.015)
    assert s.autocorr.value == pytest.approx(p11 - p10, abs=0.03)
    assert s.autocorr_pooled.value == pytest.approx(p11 - p10, abs=0.03)
    # E_true against the exact long-run yield of the chain, every gamma
    exact = np.array([markov_E(p11, p10, g) for g in range(1, 33)])
    assert np.allclose(s.curve.E_true, exact, rtol=0.02)
    # closed runs: L = 0 w.p. 1 - p10, else Geometric(1 - p11) on 1, 2, ...: D from its moments
    m1 = p10 / (1 - p11)
    m2 = p10 * (1 + p11) / (1 - p11) ** 2
    D = (m2 - m1**2) / m1
    assert s.runlengths.D == pytest.approx(D, rel=0.05)
    assert s.dispersion_ratio.ci[0] > 1
    d = s.deficit
    assert d.total.ci[0] > 0 and d.temporal.ci[0] > 0
    # within a block, every draft token after the first is accepted with p11
    for cond in s.depth.conditional[1:]:
        assert cond.value == pytest.approx(p11, abs=0.02)
    # the exact curves put g*_true at or below g*_iid on the whole grid; so must the data
    gam = np.arange(1, 33)
    for r in R_GRID:
        assert np.argmax(exact / (1 + gam * r)) <= np.argmax(E_iid(alpha, gam) / (1 + gam * r))
    rows = [o for o in s.optimum if o.r in R_GRID]
    assert len(rows) == len(R_GRID)
    assert all(o.gamma_true <= o.gamma_iid for o in rows)
    assert any(o.gamma_true < o.gamma_iid for o in rows)


def test_heterogeneous_iid_prompts(synth):
    rng = np.random.default_rng(3)
    arrays = [synth.iid(rng, 400, a) for a in rng.uniform(0.3, 0.95, size=300)]
    s = analyse([synth.run(synth.streams("mix", arrays))], boot=BOOT, shuffles=SHUFFLES).sets["mix"]
    assert s.autocorr_pooled.ci[0] > 0.05  # mixing prompts of different alpha looks clustered
    assert contains(s.autocorr.ci, 0.0)  # each prompt alone is not
    assert s.autocorr_simpson.ci[0] > 0.05
    d = s.deficit
    assert d.hetero.ci[0] > 0
    assert abs(d.temporal.value) < 0.01 and contains(d.temporal.ci, 0.0)
    assert d.total.value == pytest.approx(d.hetero.value + d.temporal.value, abs=1e-12)


def test_corpora_separate_and_pooled(synth):
    rng = np.random.default_rng(4)
    a = synth.streams("easy", [synth.iid(rng, 200, 0.9) for _ in range(40)])
    b = synth.streams("hard", [synth.iid(rng, 100, 0.4) for _ in range(30)])
    rep = analyse([synth.run(a + b, r=0.17)], boot=50, shuffles=2)
    sets = rep.sets
    assert list(sets) == ["easy", "hard", "pooled"]
    assert sets["easy"].n_positions == 8000 and sets["hard"].n_positions == 3000
    assert sets["pooled"].n_streams == 70 and sets["pooled"].n_positions == 11000
    ones = sum(int(s.bits.sum()) for s in a + b)
    assert sets["pooled"].alpha == pytest.approx(ones / 11000)
    assert 0.17 in [o.r for o in sets["pooled"].optimum] and sets["pooled"].r_measured == 0.17
    # a corpus gets the same numbers alone as beside others (seeds derive from the corpus name)
    alone = analyse([synth.run(a, r=0.17)], boot=50, shuffles=2).sets["easy"]
    assert alone.deficit == sets["easy"].deficit and alone.autocorr == sets["easy"].autocorr
