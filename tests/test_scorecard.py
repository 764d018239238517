"""The scorecard reaches every verdict: on synthetic streams built for it, and on hand-made numbers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from report_factory import est, est3, make_set, optimum
from scipy import stats as sps

from specterm.core.claims import verdict as vd
from specterm.core.report.analysis import analyse
from specterm.core.params import R_GRID
from specterm.core.report.types import Deficit, Estimate, OptimumShares, SetReport
from specterm.core.claims.scorecard import mark_borderline, p_rows, spearman_permutation


def rows_of(report_or_sets) -> list[dict]:
    """The scorecard rows as dicts: a Report's, or p_rows of hand-made sets."""
    rows = report_or_sets.scorecard if hasattr(report_or_sets, "scorecard") else p_rows(report_or_sets)
    return [r.to_dict() for r in rows]


def verdicts(report_or_sets) -> dict[str, str]:
    return {row["id"]: row["verdict"] for row in rows_of(report_or_sets)}


def directions(report_or_sets) -> dict[str, str]:
    return {row["id"]: row["direction"] for row in rows_of(report_or_sets)}


# ------------------------------------------------------ the verdict rule, written once ---


@pytest.mark.parametrize("lo,hi,above,outcome", [
    (0.1, 0.3, True, "holds"), (-0.3, -0.1, True, "not reproduced"), (-0.1, 0.1, True, "inconclusive"),
    (0.0, 0.1, True, "inconclusive"),  # touching the threshold is not clear of it
    (None, 0.1, True, "inconclusive"), (float("nan"), 0.2, True, "inconclusive"),
    (-0.3, -0.1, False, "holds"), (0.1, 0.3, False, "not reproduced"),
])
def test_direction(lo, hi, above, outcome):
    assert vd.direction(lo, hi, 0.0, above=above) == outcome


@pytest.mark.parametrize("ci,seed,outcome", [
    ((0.10, 0.20), (0.125, 0.182), "holds"),  # seed's range inside the CI
    ((0.15, 0.30), (0.125, 0.182), "holds"),  # overlapping
    ((0.13, 0.14), (0.125, 0.182), "holds"),  # CI inside the seed's range
    ((0.19, 0.30), (0.125, 0.182), "not reproduced"),
    ((0.00, 0.10), (0.125, 0.182), "not reproduced"),
    ((0.10, 0.20), (0.15, 0.15), "holds"),  # a value
    ((None, None), (0.1, 0.2), "inconclusive"),
    ((0.1, 0.2), (None, None), "n/a"),
])
def test_size(ci, seed, outcome):
    assert vd.size(*ci, *seed) == outcome


@pytest.mark.parametrize("direction,size,verdict", [
    ("holds", "holds", "holds"), ("holds", "n/a", "holds"),
    ("holds", "not reproduced", "holds in direction, not in size"),
    ("holds", "inconclusive", "inconclusive"),
    ("inconclusive", "holds", "inconclusive"), ("inconclusive", "not reproduced", "inconclusive"),
    ("not reproduced", "holds", "falsified"), ("not reproduced", "not reproduced", "falsified"),
])
def test_verdict_of(direction, size, verdict):
    assert vd.verdict_of(direction, size) == verdict


def test_combine():
    assert vd.combine(["holds", "holds"]) == "holds"
    assert vd.combine(["holds", "inconclusive"]) == "inconclusive"
    assert vd.combine(["holds", "inconclusive", "not reproduced"]) == "not reproduced"
    assert vd.combine(["n/a", "holds"]) == "holds" and vd.combine(["n/a"]) == "n/a" and vd.combine([]) == "n/a"


# ------------------------------------------------ P5: the exact permutation p-value ---


def brute_force_p(x, y) -> tuple[float, float]:
    """scipy's Spearman rho over every ordering of y: two-sided p = #{|rho_pi| >= |rho|} / n!."""
    rho = sps.spearmanr(x, y).statistic
    rhos = [sps.spearmanr(x, [y[i] for i in perm]).statistic for perm in itertools.permutations(range(len(y)))]
    hits = sum(abs(r) >= abs(rho) - 1e-12 for r in rhos)
    return rho, hits / math.factorial(len(y))


@pytest.mark.parametrize("x,y", [
    ([0.1, 0.2, 0.3, 0.4, 0.5], [0.01, 0.02, 0.03, 0.04, 0.05]),  # rho = 1: p = 2/120
    ([0.117, 0.054, 0.072, 0.305, 0.180], [0.030, 0.019, 0.041, 0.094, 0.048]),  # the Qwen run: rho 0.9
    ([0.3, 0.1, 0.5, 0.2, 0.4], [0.2, 0.5, 0.1, 0.4, 0.3]),
    ([0.1, 0.1, 0.3, 0.4, 0.2], [0.5, 0.4, 0.4, 0.1, 0.2]),  # ties on both sides
    ([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 1.0, 2.0]),
    ([0.5, 0.1, 0.9, 0.3, 0.7, 0.2], [0.4, 0.2, 0.8, 0.1, 0.9, 0.3]),
])
def test_permutation_p_value_equals_brute_force(x, y):
    rho, p = spearman_permutation(x, y)
    rho_bf, p_bf = brute_force_p(x, y)
    assert rho == pytest.approx(rho_bf, abs=1e-12)
    assert p == pytest.approx(p_bf, abs=1e-12)


def test_permutation_p_value_closed_forms():
    # n = 5, perfectly ordered: only the identity and the reversal reach |rho| = 1
    assert spearman_permutation([1, 2, 3, 4, 5], [2, 4, 6, 8, 10]) == (pytest.approx(1.0), pytest.approx(2 / 120))
    # rho = 0.9 (one adjacent swap): identity, 4 adjacent swaps and their 5 reversals -> 10 / 120
    assert spearman_permutation([1, 2, 3, 4, 5], [1, 2, 3, 5, 4])[1] == pytest.approx(10 / 120)
    # scipy's exact permutation test agrees (statistic |rho|, all 120 pairings)
    x, y = np.array([0.3, 0.1, 0.5, 0.2, 0.4]), np.array([0.2, 0.5, 0.1, 0.4, 0.3])
    res = sps.permutation_test((y,), lambda yy: sps.spearmanr(x, yy).statistic, permutation_type="pairings",
                               alternative="two-sided", n_resamples=np.inf)
    assert spearman_permutation(x, y)[1] == pytest.approx(res.pvalue)
    assert all(math.isnan(v) for v in spearman_permutation([1, 1, 1], [1, 2, 3]))


# --------------------------------------------------------- synthetic streams, end to end ---


def run_of(synth, corpora: dict[str, list[np.ndarray]]):
    return synth.run([s for name, arrays in corpora.items() for s in synth.streams(name, arrays)])


def test_clustered_markov_corpora(synth):
    """Positively autocorrelated chains, five corpora of rising p11 - p10: P1, P2, P4, P5 hold in direction
    (P5: rho = 1 over 5 corpora, p = 2/120); their sizes are judged against the seed's."""
    rng = np.random.default_rng(0)
    params = {"a": (0.75, 0.5), "b": (0.8, 0.45), "c": (0.85, 0.35), "d": (0.9, 0.3), "e": (0.95, 0.2)}
    corpora = {name: [synth.markov(rng, 1000, *p) for _ in range(50)] for name, p in params.items()}
    rep = analyse([run_of(synth, corpora)], boot=200, shuffles=4)
    d = directions(rep)
    assert (d["P1"], d["P2"], d["P4"], d["P5"]) == ("holds",) * 4
    row = {r["id"]: r for r in rows_of(rep)}
    assert "5 of 5" in row["P5"]["evidence"] and "p = 0.017" in row["P5"]["evidence"]
    # p11 - p10 here is 0.25 .. 0.75, far above the published 0.047 .. 0.233 and pooled [0.125, 0.182]
    assert row["P1"]["size"] == "not reproduced" and row["P1"]["verdict"] == "holds in direction, not in size"
    # stationary chains have no warm-up: the steady state (t >= 32) holds too
    assert row["P1"]["steady_state"] == "holds" and "steady state (t >= 32): holds" in row["P1"]["evidence"]
    for r in rows_of(rep):
        assert r["verdict"] == vd.verdict_of(r["direction"], r["size"])
        if r["id"] not in ("Q5", "Q6"):
            assert set(r["seed_verdicts"]) == {"0", "1", "2", "3", "4"}


def test_markov_alone_falsifies_p3(synth):
    """One clustered corpus whose exact g*_true is below g*_iid at several r (see test_synthetic)."""
    rng = np.random.default_rng(1)
    rep = analyse([run_of(synth, {"m": [synth.markov(rng, 2000, 0.95, 0.2) for _ in range(100)]})], boot=100, shuffles=2)
    row = next(r for r in rows_of(rep) if r["id"] == "P3")
    assert row["verdict"] == "falsified" and row["evidence"].startswith("falsified: in 100 bootstrap replicates")


def test_anti_correlated_chain_falsifies(synth):
    """p11 < p10: acceptance alternates, runs are under-dispersed, shuffling lowers the yield."""
    rng = np.random.default_rng(2)
    rep = analyse([run_of(synth, {"anti": [synth.markov(rng, 1000, 0.3, 0.9) for _ in range(60)]})], boot=200, shuffles=4)
    v = verdicts(rep)
    assert (v["P1"], v["P2"], v["P4"]) == ("falsified",) * 3
    assert directions(rep)["P1"] == "not reproduced"
    assert v["P5"] == "inconclusive"  # one corpus


def test_iid_is_inconclusive(synth):
    rng = np.random.default_rng(3)
    rep = analyse([run_of(synth, {"iid": [synth.iid(rng, 2000, 0.7) for _ in range(60)]})], boot=200, shuffles=4)
    v = verdicts(rep)
    assert (v["P1"], v["P2"], v["P4"], v["P5"]) == ("inconclusive",) * 4


def test_regular_runs_make_p3_hold(synth):
    """Runs of 6-8 ones closed by a zero, like clockwork: drafting 7-8 is right at every cost, while
    the i.i.d. formula (alpha ~ 0.875) shrinks g as r grows."""
    rng = np.random.default_rng(4)
    arrays = []
    for _ in range(60):
        runs = rng.integers(6, 9, size=300)
        stream = np.concatenate([np.r_[np.ones(L), 0] for L in runs]).astype(np.uint8)
        arrays.append(stream[rng.integers(0, 8):][:1000])
    rep = analyse([run_of(synth, {"regular": arrays})], boot=100, shuffles=2)
    # P3's direction holds in every replicate; the seed's size (its counter-claim, 1 to 3 below) in none
    assert directions(rep)["P3"] == "holds" and verdicts(rep)["P3"] == "holds in direction, not in size"
    assert rep.sets["pooled"].optimum_shares.holds == 1.0 and rep.sets["pooled"].optimum_shares.size == 0.0


# ----------------------------------------------------------------- hand-made numbers ---


def fake_set(ac=(0.2, 0.1, 0.3), disp=(2.0, 1.5, 2.5), temporal=(0.05, 0.03, 0.07), diffs=(0,) * 12) -> SetReport:
    return make_set(
        autocorr=est3(ac),
        dispersion_ratio=est3(disp),
        deficit=Deficit(gamma=8, total=Estimate(), hetero=Estimate(), temporal=est3(temporal)),
        optimum=[optimum(r, 4 + d, 4) for r, d in zip(R_GRID, diffs)]
        + [optimum(0.123, 30, 1, measured=True)],  # measured r: not in the verdict
    )


def sets_of(**corpora):
    out = dict(corpora)
    out.setdefault("pooled", fake_set())
    return out


@pytest.mark.parametrize("cis,verdict", [
    ([(0.2, 0.1, 0.3), (0.1, 0.01, 0.2)], "holds"),  # pooled fake [0.1, 0.3] overlaps [0.125, 0.182]
    ([(0.5, 0.4, 0.6), (0.5, 0.35, 0.7)], "holds in direction, not in size"),  # corpora span [0.35, 0.7] misses 0.047..0.233
    ([(0.2, 0.1, 0.3), (-0.1, -0.2, -0.01)], "falsified"),
    ([(0.2, 0.1, 0.3), (0.05, -0.01, 0.1)], "inconclusive"),
    ([(0.2, 0.1, 0.3), (None, None, None)], "inconclusive"),
])
def test_p1(cis, verdict):
    sets = sets_of(**{f"c{i}": fake_set(ac=ci) for i, ci in enumerate(cis)})
    assert verdicts(sets)["P1"] == verdict


@pytest.mark.parametrize("cis,verdict", [
    ([(2.0, 1.2, 2.5), (3.5, 2.0, 5.0)], "holds"),
    ([(2.0, 1.2, 2.5), (1.5, 1.01, 2.0)], "holds in direction, not in size"),  # [1.01, 2.0] misses 2.1..24
    ([(2.0, 1.2, 2.5), (0.8, 0.7, 0.9)], "falsified"),
    ([(2.0, 1.2, 2.5), (1.1, 0.9, 1.3)], "inconclusive"),
])
def test_p2(cis, verdict):
    sets = sets_of(**{f"c{i}": fake_set(disp=ci) for i, ci in enumerate(cis)})
    assert verdicts(sets)["P2"] == verdict


@pytest.mark.parametrize("shares,verdict,phrase", [
    # (holds, falsified, size) shares of the replicates; the size is the seed's counter-claim (1 to 3 below)
    ((0.96, 0.0, 0.0), "holds in direction, not in size", "g*_true > g*_iid at most r of the grid in 96.0%"),
    ((0.94, 0.0, 0.0), "inconclusive", "in 94.0%"),  # 94% is not 95%
    ((0.0, 0.95, 0.97), "falsified", "and < at some in 95.0%"),
    ((0.0, 0.999, 0.0), "falsified", "lies in [1, 3] at every r in 0.0% of replicates"),
    ((0.0, 0.5, 0.5), "inconclusive", "in 50.0%"),
    (None, "inconclusive", "no bootstrap replicates to judge P3 by"),
])
def test_p3(shares, verdict, phrase):
    pooled = fake_set(diffs=(0,) * 11 + (-1,))
    if shares is not None:
        pooled.optimum_shares = OptimumShares(replicates=2000, holds=shares[0], falsified=shares[1], size=shares[2])
    row = next(r for r in p_rows(sets_of(c=fake_set(), pooled=pooled)) if r.id == "P3")
    assert row.verdict == verdict and phrase in row.evidence, row.evidence
    assert "above g*_iid at 0, equal at 11, below at 1" in row.evidence  # the point grid stays in the evidence


@pytest.mark.parametrize("ci,verdict", [
    ((0.05, 0.01, 0.08), "holds"),
    ((0.08, 0.06, 0.10), "holds in direction, not in size"),  # misses 0.033..0.051
    ((-0.05, -0.08, -0.01), "falsified"),
    ((0.01, -0.01, 0.03), "inconclusive"),
    ((None, None, None), "inconclusive"),
])
def test_p4(ci, verdict):
    assert verdicts(sets_of(c=fake_set(), pooled=fake_set(temporal=ci)))["P4"] == verdict


@pytest.mark.parametrize("pairs,direction", [
    ([(0.1, 0.01), (0.2, 0.02), (0.3, 0.05), (0.4, 0.06), (0.5, 0.07)], "holds"),  # rho 1, p = 2/120
    ([(0.1, 0.07), (0.2, 0.06), (0.3, 0.05), (0.4, 0.02), (0.5, 0.01)], "not reproduced"),  # rho -1, p = 2/120
    ([(0.1, 0.01), (0.2, 0.02), (0.3, 0.05), (0.4, 0.07), (0.5, 0.06)], "inconclusive"),  # rho 0.9, p = 10/120
    ([(0.1, 0.01), (0.2, 0.02), (0.3, 0.05)], "inconclusive"),  # rho 1 over 3 corpora: p = 2/6
    ([(0.1, 0.05), (0.2, 0.02)], "inconclusive"),  # fewer than 3 corpora
    ([(0.1, 0.05), (0.2, 0.02), (None, 0.01)], "inconclusive"),  # one undefined leaves 2
    ([(0.1, 0.02), (0.2, 0.02), (0.3, 0.02), (0.4, 0.02), (0.5, 0.02)], "inconclusive"),  # all tied
])
def test_p5(pairs, direction):
    corpora = {f"c{i}": fake_set(ac=(a, a, a), temporal=(t, t - 0.001, t + 0.001)) for i, (a, t) in enumerate(pairs)}
    row = next(r for r in p_rows(sets_of(**corpora)) if r.id == "P5")
    assert row.direction == direction
    # every temporal CI excludes 0 and every D/D_geom CI lies above 1 (fake_set): the size holds
    assert row.size == "holds"
    assert row.verdict == {"holds": "holds", "not reproduced": "falsified"}.get(direction, "inconclusive")


def test_p5_size_needs_significance_exactly_where_dispersion_is():
    pairs = [(0.1, 0.01), (0.2, 0.02), (0.3, 0.05), (0.4, 0.06), (0.5, 0.07)]
    corpora = {f"c{i}": fake_set(ac=(a, a, a), temporal=(t, t - 0.001, t + 0.001)) for i, (a, t) in enumerate(pairs)}
    corpora["c0"].dispersion_ratio = est(1.1, 0.9, 1.3)  # flat, but its temporal part is significant
    row = next(r for r in p_rows(sets_of(**corpora)) if r.id == "P5")
    assert row.size == "not reproduced" and row.verdict == "holds in direction, not in size"
    corpora["c0"].deficit.temporal = est(0.01, -0.01, 0.03)  # flat and not significant
    row = next(r for r in p_rows(sets_of(**corpora)) if r.id == "P5")
    assert row.size == "holds"


def test_mark_borderline():
    from specterm.core.report.types import ScoreRow

    rows = [ScoreRow(id="P1", prediction="p", verdict="holds", evidence="holds: x"),
            ScoreRow(id="P2", prediction="p", verdict="inconclusive", evidence="e"),
            ScoreRow(id="Q5", prediction="q", verdict="inconclusive", evidence="e")]
    by_seed = {0: {"P1": "holds", "P2": "inconclusive"}, 1: {"P1": "inconclusive", "P2": "inconclusive"},
               2: {"P1": "holds", "P2": "inconclusive"}}
    out = {r.id: r for r in mark_borderline(rows, by_seed)}
    assert out["P1"].borderline is True and out["P1"].seed_verdicts == {"0": "holds", "1": "inconclusive", "2": "holds"}
    assert out["P1"].evidence.endswith("borderline across bootstrap seeds: seed 0 holds, seed 1 inconclusive, seed 2 holds")
    assert out["P2"].borderline is False
    assert out["Q5"].borderline is False and out["Q5"].seed_verdicts == {}  # not recomputed per seed: left unmarked


def test_every_row_has_numbers_in_its_evidence():
    for row in p_rows(sets_of(a=fake_set(), b=fake_set(), c=fake_set())):
        assert row.evidence.startswith(row.verdict + ":")
        assert any(ch.isdigit() for ch in row.evidence)


def test_average_ranks_match_scipy_with_ties():
    from specterm.core.claims.scorecard import average_ranks, spearman

    rng = np.random.default_rng(5)
    for _ in range(20):
        x = rng.integers(0, 4, size=int(rng.integers(2, 9))).astype(float)
        assert average_ranks(x) == pytest.approx(sps.rankdata(x))
        y = rng.random(x.size)
        if np.ptp(x) > 0:
            assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic)


def test_borderline_check_equals_the_report_at_that_seed(synth):
    """The light re-estimate of each seed's verdicts (analysis._seed_verdicts) equals the full report run
    with that seed (shuffles off, so only the bootstrap weights depend on the seed)."""
    rng = np.random.default_rng(12)
    corpora = {name: [synth.markov(rng, 150, p11, 0.5) for _ in range(8)] for name, p11 in
               (("a", 0.55), ("b", 0.6), ("c", 0.7))}
    run = run_of(synth, corpora)
    for st_ in run.streams:
        st_.draft_conf = np.where(st_.bits == 1, 0.8, 0.3).astype(np.float32)
    reports = {seed: analyse([run], boot=150, shuffles=0, seed=seed) for seed in (0, 2)}
    for seed, rep in reports.items():
        other = 2 - seed
        got = {r.id: r.seed_verdicts[str(other)] for r in rep.scorecard if r.id not in ("Q5", "Q6")}
        want = {r.id: r.verdict for r in reports[other].scorecard if r.id not in ("Q5", "Q6")}
        assert got == want
