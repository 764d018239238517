"""The scorecard reaches every verdict: on synthetic streams built for it, and on hand-made numbers."""

from __future__ import annotations

import numpy as np
import pytest

from report_factory import est3, make_set, optimum
from specterm.core.analysis import analyse
from specterm.core.params import R_GRID
from specterm.core.report import Deficit, Estimate, Report
from specterm.core.scorecard import p_rows


def verdicts(report_or_sets) -> dict[str, str]:
    rows = report_or_sets.scorecard if isinstance(report_or_sets, Report) else p_rows(report_or_sets)
    return {row.id: row.verdict for row in rows}


# --------------------------------------------------------- synthetic streams, end to end ---


def run_of(synth, corpora: dict[str, list[np.ndarray]]):
    return synth.run([s for name, arrays in corpora.items() for s in synth.streams(name, arrays)])


def test_clustered_markov_corpora(synth):
    """Positively autocorrelated chains, three corpora of rising p11 - p10: P1, P2, P4, P5 hold."""
    rng = np.random.default_rng(0)
    params = {"low": (0.8, 0.45), "mid": (0.9, 0.3), "high": (0.95, 0.2)}
    corpora = {name: [synth.markov(rng, 1000, *p) for _ in range(50)] for name, p in params.items()}
    rep = analyse([run_of(synth, corpora)], boot=200, shuffles=4)
    v = verdicts(rep)
    assert (v["P1"], v["P2"], v["P4"], v["P5"]) == ("holds",) * 4
    assert "3 of 3" in next(r for r in rep.scorecard if r.id == "P5").evidence


def test_markov_alone_falsifies_p3(synth):
    """One clustered corpus whose exact g*_true is below g*_iid at several r (see test_synthetic)."""
    rng = np.random.default_rng(1)
    rep = analyse([run_of(synth, {"m": [synth.markov(rng, 2000, 0.95, 0.2) for _ in range(100)]})], boot=100, shuffles=2)
    row = next(r for r in rep.scorecard if r.id == "P3")
    assert row.verdict == "falsified" and row.evidence.startswith("falsified: g*_true")


def test_anti_correlated_chain_falsifies(synth):
    """p11 < p10: acceptance alternates, runs are under-dispersed, shuffling lowers the yield."""
    rng = np.random.default_rng(2)
    rep = analyse([run_of(synth, {"anti": [synth.markov(rng, 1000, 0.3, 0.9) for _ in range(60)]})], boot=200, shuffles=4)
    v = verdicts(rep)
    assert (v["P1"], v["P2"], v["P4"]) == ("falsified",) * 3
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
    v = verdicts(analyse([run_of(synth, {"regular": arrays})], boot=100, shuffles=2))
    assert v["P3"] == "holds"


# ----------------------------------------------------------------- hand-made numbers ---


def fake_set(ac=(0.2, 0.1, 0.3), disp=(2.0, 1.5, 2.5), temporal=(0.05, 0.03, 0.07), diffs=(0,) * 12):
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
    ([(0.2, 0.1, 0.3), (0.1, 0.01, 0.2)], "holds"),
    ([(0.2, 0.1, 0.3), (-0.1, -0.2, -0.01)], "falsified"),
    ([(0.2, 0.1, 0.3), (0.05, -0.01, 0.1)], "inconclusive"),
    ([(0.2, 0.1, 0.3), (None, None, None)], "inconclusive"),
])
def test_p1(cis, verdict):
    sets = sets_of(**{f"c{i}": fake_set(ac=ci) for i, ci in enumerate(cis)})
    assert verdicts(sets)["P1"] == verdict


@pytest.mark.parametrize("cis,verdict", [
    ([(2.0, 1.2, 2.5), (1.5, 1.01, 2.0)], "holds"),
    ([(2.0, 1.2, 2.5), (0.8, 0.7, 0.9)], "falsified"),
    ([(2.0, 1.2, 2.5), (1.1, 0.9, 1.3)], "inconclusive"),
])
def test_p2(cis, verdict):
    sets = sets_of(**{f"c{i}": fake_set(disp=ci) for i, ci in enumerate(cis)})
    assert verdicts(sets)["P2"] == verdict


@pytest.mark.parametrize("diffs,verdict,phrase", [
    ((1,) * 7 + (0,) * 5, "holds", "above g*_iid at 7 of 12"),
    ((1,) * 6 + (0,) * 6, "inconclusive", "above at 6"),  # exactly half is not most
    ((-1, -2, -3) + (-1,) * 9, "falsified", "g*_true is 1 to 3 below g*_iid at every r in [0.05, 0.6]"),
    ((0,) * 11 + (-1,), "falsified", "below by 1 at 1 of 12"),
    ((0,) * 12, "inconclusive", "equal at 12"),
    ((-1,) * 11 + (1,), "inconclusive", "above at 1"),
])
def test_p3(diffs, verdict, phrase):
    row = next(r for r in p_rows(sets_of(c=fake_set(), pooled=fake_set(diffs=diffs))) if r.id == "P3")
    assert row.verdict == verdict and phrase in row.evidence


@pytest.mark.parametrize("ci,verdict", [
    ((0.05, 0.01, 0.08), "holds"),
    ((-0.05, -0.08, -0.01), "falsified"),
    ((0.01, -0.01, 0.03), "inconclusive"),
    ((None, None, None), "inconclusive"),
])
def test_p4(ci, verdict):
    assert verdicts(sets_of(c=fake_set(), pooled=fake_set(temporal=ci)))["P4"] == verdict


@pytest.mark.parametrize("pairs,verdict", [
    ([(0.1, 0.01), (0.2, 0.02), (0.3, 0.05)], "holds"),
    ([(0.1, 0.05), (0.2, 0.02), (0.3, 0.01)], "falsified"),
    ([(0.1, 0.05), (0.2, 0.02)], "inconclusive"),  # fewer than 3 corpora
    ([(0.1, 0.05), (0.2, 0.02), (None, 0.01)], "inconclusive"),  # one undefined leaves 2
    ([(0.1, 0.02), (0.2, 0.02), (0.3, 0.02)], "inconclusive"),  # all temporal tied: rho undefined
])
def test_p5(pairs, verdict):
    corpora = {f"c{i}": fake_set(ac=(a, a, a), temporal=(t, t - 0.001, t + 0.001)) for i, (a, t) in enumerate(pairs)}
    assert verdicts(sets_of(**corpora))["P5"] == verdict


def test_every_row_has_numbers_in_its_evidence():
    for row in p_rows(sets_of(a=fake_set(), b=fake_set(), c=fake_set())):
        assert row.evidence.startswith(row.verdict + ":")
        assert any(ch.isdigit() for ch in row.evidence)
