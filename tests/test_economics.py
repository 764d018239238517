"""The economics seed's claims Q1-Q6 (SPEC 4): the per-set statistics by hand, and each rule built to
hold, to hold in direction but not in size, to be falsified and to be inconclusive (Q2 and Q3 have no
falsifying outcome in the SPEC)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from report_factory import make_set
from report_factory import policy as prow

from specterm.core.claims import economics as ec
from specterm.core.streams import stats as st
from specterm.core.claims import verdict as vd
from specterm.core.report.analysis import set_report
from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.streams.estimate import Estimate, bootstrap_estimate
from specterm.core.params import GAMMAS
from specterm.core.decide.policies import policy_summary
from specterm.core.report.types import CostRatioOptimum, Curve, DecisionHW, Depth


def bits(text: str) -> np.ndarray:
    return np.array([int(c) for c in text], dtype=np.uint8)


# ------------------------------------------------------------------ statistics ---


def test_depth_gain_by_hand():
    # 0110111 at gamma 2: blocks (s=0, k=0), (s=1, k=2), (s=4, k=2), all with >= 2 positions left.
    # depth 1: reach 3, accepted 2 -> c_1 = 2/3; depth 2: reach 2 (k >= 1), accepted 2 -> c_2 = 1.
    S = st.stream_sums([bits("0110111")], gamma=2, shuffles=0)
    c = S.M.sum(axis=0)
    assert float(ec.depth_gain(c, S.cols)) == pytest.approx(1 - 2 / 3)


def best_of(S, W, factor, basis):
    """economics.best_speedup on the set's curve as the report has it (analysis.set_report)."""
    curve = set_report(S, W, []).curve
    return ec.best_speedup(curve.E_true, curve.E_true_ci, factor, basis)


def test_best_speedup_memory_bound_by_hand():
    # 12 ones: blocks ceil(12 / (g+1)), E = 12 / blocks; at r = 0.1 the best is g = 11: E = 12, speedup 12 / 2.1
    S = st.stream_sums([np.ones(12, np.uint8)] * 3, gamma=2, shuffles=0)
    b = best_of(S, multinomial_weights(3, 100, 0), ec.memory_bound_factor(0.1), "memory-bound at r=0.1")
    assert b.gamma == 11 and b.speedup.value == pytest.approx(12 / 2.1)
    assert b.speedup.ci == pytest.approx((12 / 2.1, 12 / 2.1))  # identical streams: no spread


def test_measured_factor_and_unmeasured_gammas():
    f = ec.measured_factor(1.0, {1: 1.2, 2: 1.3}, 0.1)
    assert f[:2] == pytest.approx([1 / 1.3, 1 / 1.5]) and np.isnan(f[2:]).all()
    # 12 ones: E(1) = 2, E(2) = 3 -> S_hw = 2/1.3 = 1.54, 3/1.5 = 2.0: g = 2 (g >= 3 has no cost)
    S = st.stream_sums([np.ones(12, np.uint8)], gamma=2, shuffles=0)
    b = best_of(S, multinomial_weights(1, 10, 0), f, "measured costs")
    assert b.gamma == 2 and b.speedup.value == pytest.approx(2.0)


def test_best_speedup_matches_the_optimum_curve():
    rng = np.random.default_rng(0)
    arrays = [(rng.random(int(rng.integers(50, 150))) < rng.uniform(0.5, 0.95)).astype(np.uint8) for _ in range(30)]
    S = st.stream_sums(arrays, gamma=4, shuffles=0)
    c = S.M.sum(axis=0)
    r = 0.13
    curve = np.array([st.E_true(c, S.cols, int(g)) / (1 + g * r) for g in GAMMAS])
    b = best_of(S, multinomial_weights(30, 500, 0), ec.memory_bound_factor(r), "mb")
    assert b.gamma == int(GAMMAS[np.argmax(curve)]) and b.speedup.value == pytest.approx(curve.max())
    assert b.speedup.lo < b.speedup.value < b.speedup.hi
    # the CI is the percentile CI of the resampled speedups E_true(g) / (1 + g r) at that g
    direct = bootstrap_estimate(lambda cc, cl: st.E_true(cc, cl, b.gamma) / (1 + b.gamma * r), c,
                                multinomial_weights(30, 500, 0) @ S.M, S.cols)
    assert b.speedup.ci == pytest.approx(direct.ci)


# -------------------------------------------------------------------------- Q1 ---


def depth_inputs(corpora: dict[str, list[np.ndarray]], gamma: int = 6):
    """(conditional c_1..c_g per corpus, c_2 - c_1 estimate per corpus) from real stream sums; the c_j are
    point values only (Estimates without a CI)."""
    cond, gain = {}, {}
    for name, arrays in corpora.items():
        S = st.stream_sums(arrays, gamma=gamma, shuffles=0)
        c, R = S.M.sum(axis=0), multinomial_weights(len(arrays), 1000, 0) @ S.M
        cond[name] = [Estimate(value=float(st.depth_conditional(c, S.cols, j))) for j in range(1, gamma + 1)]
        gain[name] = bootstrap_estimate(ec.depth_gain, c, R, S.cols)
    return cond, gain


def test_q1_holds_on_clustered_chains(synth):
    # p11 = 0.95, p10 = 0.5: deeper tokens follow an accepted one (c_j ~ p11 = 0.95 for j >= 2), while a
    # block often starts right after a rejection (c_1 mixes p10 = 0.5 in): c_2 - c_1 > 0 in every corpus.
    rng = np.random.default_rng(0)
    corpora = {name: [synth.markov(rng, 200, 0.95, 0.5) for _ in range(30)] for name in ("code", "prose")}
    cond, gain = depth_inputs(corpora)
    row = ec.q1(cond, gain)
    # point values without a CI: the direction holds, the size cannot be judged
    assert row.direction == "holds" and row.size == "inconclusive" and row.verdict == "inconclusive", row
    assert all(0.93 < cond[c][2].value < 0.97 for c in corpora)
    deeper = " ".join(f"{x.value:.2f}" for x in cond["code"][1:])
    assert f"code: c_1 = {cond['code'][0].value:.2f}, c_2..c_6 = {deeper}, c_2 - c_1 = +" in row.evidence
    assert row.id == "Q1" and row.seed == "economics" and row.evidence.startswith("inconclusive: ")


def est(v, lo, hi):
    return Estimate(value=v, ci=[lo, hi])


@pytest.mark.parametrize("c1,deeper,verdict,size", [
    (est(0.4, 0.32, 0.48), [est(0.95, 0.91, 0.99)] * 7, "holds", "holds"),  # the seed's c_1 ~0.4, c_j 0.9..1
    (est(0.75, 0.70, 0.80), [est(0.95, 0.91, 0.99)] * 7, "holds in direction, not in size", "not reproduced"),
    (est(0.4, 0.32, 0.48), [est(0.95, 0.91, 0.99)] * 3 + [est(0.8, 0.75, 0.85)] * 4,
     "holds in direction, not in size", "not reproduced"),  # c_5..c_8 below 0.9
])
def test_q1_size(c1, deeper, verdict, size):
    row = ec.q1({"code": [c1, *deeper], "prose": [c1, *deeper]}, {"code": est(0.3, 0.2, 0.4), "prose": est(0.3, 0.1, 0.5)})
    assert (row.direction, row.size, row.verdict) == ("holds", size, verdict), row
    assert "seed's size: c_1 ~0.4 (read: 0.3 to 0.5); c_2..c_8 0.9 to 1.0" in row.evidence


def test_q1_falsified_by_an_anti_correlated_corpus(synth):
    # p11 = 0.6 < p10 = 0.95 in one corpus: after an accepted token the next is harder, c_2 < c_1.
    rng = np.random.default_rng(1)
    corpora = {"code": [synth.markov(rng, 200, 0.95, 0.5) for _ in range(30)],
               "json": [synth.markov(rng, 200, 0.6, 0.95) for _ in range(30)]}
    row = ec.q1(*depth_inputs(corpora))
    assert row.verdict == "falsified" and "below 0 in json" in row.evidence


def test_q1_inconclusive_on_iid_streams(synth):
    # i.i.d.: c_j = alpha at every depth, c_2 - c_1 = 0 in truth
    rng = np.random.default_rng(2)
    corpora = {"prose": [synth.iid(rng, 200, 0.8) for _ in range(30)]}
    cond, gain = depth_inputs(corpora)
    assert gain["prose"].lo < 0 < gain["prose"].hi
    assert ec.q1(cond, gain).verdict == "inconclusive"


def test_q1_needs_depth_2_and_a_corpus():
    assert ec.q1({}, {}).verdict == "inconclusive"
    assert "depth 2" in ec.q1({"a": [Estimate(value=0.5)]}, {"a": Estimate()}).evidence


# ------------------------------------------------------------------- Q2, Q3 ---


@pytest.mark.parametrize("alphas, spread, verdict", [
    ({"prose": (0.79, 0.74, 0.83), "code": (0.92, 0.90, 0.94), "json": (0.89, 0.86, 0.91)}, (0.07, 0.18),
     "holds in direction, not in size"),  # the Qwen run: spread 0.13 [0.07, 0.18] misses 0.45..0.70
    ({"prose": (0.40, 0.35, 0.45), "code": (0.97, 0.95, 0.99)}, (0.50, 0.64), "holds"),  # the seed's own figures
    ({"prose": (0.85, 0.80, 0.90), "code": (0.88, 0.84, 0.92)}, (-0.03, 0.09), "inconclusive"),  # CIs overlap
    ({"prose": (0.85, 0.80, 0.90)}, None, "inconclusive"),  # one corpus
    ({"prose": (0.85, None, None), "code": (0.95, 0.93, 0.97)}, None, "inconclusive"),  # undefined CI
    ({"prose": (0.40, 0.35, 0.45), "code": (0.97, 0.95, 0.99)}, None, "inconclusive"),  # no spread CI: size unknown
])
def test_q2(alphas, spread, verdict):
    sp = None if spread is None else Estimate(value=None, ci=list(spread))
    row = ec.q2({c: est(v, lo, hi) for c, (v, lo, hi) in alphas.items()}, sp)
    assert row.verdict == verdict, row
    if spread == (0.07, 0.18):
        assert "0.79 [0.74, 0.83] (prose) to 0.92 [0.90, 0.94] (code)" in row.evidence
        assert "spread of 0.13 [0.07, 0.18]" in row.evidence and "(read: 0.45 to 0.70)" in row.evidence


def test_spread_and_ratio_cis_pair_the_replicates():
    reps = {"a": np.array([0.9, 0.8, 0.85, 0.95]), "b": np.array([0.5, 0.6, 0.55, 0.45])}
    e = ec.extremes_interval(reps, "a", "b", "diff")
    assert e.ci == pytest.approx(list(np.percentile([0.4, 0.2, 0.3, 0.5], [2.5, 97.5])))
    e = ec.extremes_interval(reps, "a", "b", "ratio")
    assert e.ci == pytest.approx(list(np.percentile([0.9 / 0.5, 0.8 / 0.6, 0.85 / 0.55, 0.95 / 0.45], [2.5, 97.5])))


def test_q2_real_alphas_separate(synth):
    rng = np.random.default_rng(3)
    ests = {}
    for name, a in (("prose", 0.6), ("code", 0.9)):
        S = st.stream_sums([synth.iid(rng, 100, a) for _ in range(20)], gamma=2, shuffles=0)
        ests[name] = bootstrap_estimate(st.alpha, S.M.sum(0), multinomial_weights(20, 1000, 0) @ S.M, S.cols)
    assert ec.q2(ests).direction == "holds"


def bs(g, v, lo, hi, basis="memory-bound E_true(g)/(1+g r) at r=0.185"):
    return ec.BestSpeedup(g, Estimate(value=v, ci=[lo, hi]), basis)


def test_q3_holds_with_ratio_basis_and_realized():
    row = ec.q3({"prose": bs(4, 1.9, 1.75, 2.05), "code": bs(7, 2.95, 2.8, 3.1)}, realized={"code": 1.05, "prose": 0.8},
                ratio=Estimate(ci=[1.4, 1.7]))
    assert row.verdict == "holds in direction, not in size"
    ev = row.evidence
    assert "best code 2.95x [2.80, 3.10] at g=7, worst prose 1.90x [1.75, 2.05] at g=4: ratio 1.55 [1.40, 1.70]" in ev
    assert "at r=0.185" in ev and "realized (specterm confirm): code 1.05x, prose 0.80x" in ev


def test_q3_holds_at_the_seeds_size():
    row = ec.q3({"prose": bs(4, 1.4, 1.3, 1.5), "code": bs(7, 6.0, 5.5, 6.5)}, ratio=Estimate(ci=[3.8, 4.8]))
    assert (row.direction, row.size, row.verdict) == ("holds", "holds", "holds")


def test_q3_inconclusive():
    assert ec.q3({"prose": bs(4, 2.5, 2.2, 2.8), "code": bs(6, 2.7, 2.4, 3.0)}).verdict == "inconclusive"
    assert ec.q3({"prose": bs(4, 2.5, 2.2, 2.8)}).verdict == "inconclusive"
    assert ec.q3({"a": bs(None, None, None, None), "b": bs(3, 2.0, 1.9, 2.1)}).verdict == "inconclusive"


def test_q3_from_real_sums(synth):
    rng = np.random.default_rng(4)
    out = {}
    for name, a in (("prose", 0.55), ("code", 0.92)):
        S = st.stream_sums([synth.iid(rng, 150, a) for _ in range(20)], gamma=2, shuffles=0)
        out[name] = best_of(S, multinomial_weights(20, 1000, 0), ec.memory_bound_factor(0.1), "mb")
    assert out["code"].gamma > out["prose"].gamma
    assert ec.q3(out).direction == "holds"


# ------------------------------------------------------------------------- Q4 ---


BASE = [prow("best-fixed", {"gamma": 6, "r": 0.185}, 1.0, 1.0, 1.0), prow("clairvoyant", {}, 1.3, 1.25, 1.35)]


@pytest.mark.parametrize("adaptive, verdict, phrase", [
    ([prow("heuristic", {"g0": 5}, 0.95, 0.93, 0.97), prow("confidence", {"tau": 0.5, "g_max": 16}, 1.04, 1.02, 1.06),
      prow("confidence", {"tau": 0.7, "g_max": 16}, 1.01, 0.99, 1.03)], "holds",
     "best adaptive policy: confidence stop tau=0.5, T / T_best_fixed = 1.040 [1.020, 1.060] (best fixed g=6 at r=0.185)"),
    ([prow("heuristic", {"g0": 5}, 0.95, 0.93, 0.97), prow("confidence", {"tau": 0.5, "g_max": 16}, 0.98, 0.96, 0.99)],
     "falsified", "every adaptive policy's CI lies below 1"),
    ([prow("heuristic", {"g0": 5}, 0.95, 0.93, 0.97), prow("confidence", {"tau": 0.5, "g_max": 16}, 1.01, 0.99, 1.03)],
     "inconclusive", "a CI contains 1"),
    ([prow("heuristic", {"g0": 5}, 0.97, 0.95, 0.99)], "falsified", "no confidence stop"),
    ([], "inconclusive", "no adaptive policy"),
])
def test_q4(adaptive, verdict, phrase):
    row = ec.q4(BASE[:1] + adaptive + BASE[1:])
    assert row.verdict == verdict and phrase in row.evidence, row


def test_q4_judges_each_corpus_best_fixed_g_too():
    """SPEC 4: an adaptive policy must beat the best fixed g of each corpus, not only the pooled one."""
    conf = {"tau": 0.5, "g_max": 16}
    pooled = BASE[:1] + [prow("heuristic", {"g0": 5}, 1.04, 1.02, 1.06), prow("confidence", conf, 1.09, 1.07, 1.12)] + BASE[1:]
    win = {"code": [prow("confidence", conf, 1.05, 1.01, 1.09)], "prose": [prow("confidence", conf, 1.10, 1.05, 1.15)]}
    row = ec.q4(pooled, win)
    assert row.verdict == "holds" and "CI above 1 on the pooled set and in every corpus for confidence stop tau=0.5" in row.evidence
    tie = {**win, "code": [prow("confidence", conf, 1.04, 1.00, 1.08)]}  # touches 1 in code; heuristic not replayed there
    row = ec.q4(pooled, tie)
    assert row.verdict == "inconclusive" and "code 1.040 [1.000, 1.080]" in row.evidence
    lose = {"code": [prow("confidence", conf, 0.95, 0.92, 0.98), prow("heuristic", {"g0": 5}, 0.96, 0.94, 0.99)],
            "prose": [prow("confidence", conf, 1.10, 1.05, 1.15), prow("heuristic", {"g0": 5}, 1.1, 1.05, 1.15)]}
    row = ec.q4(pooled, lose)
    assert row.verdict == "falsified" and "or in some corpus" in row.evidence


def test_q4_best_tau_ties_take_the_smallest():
    rows = [prow("confidence", {"tau": t, "g_max": 16}, 1.02, 1.01, 1.03) for t in (0.9, 0.3, 0.5)]
    assert ec.adaptive_candidates(rows)[0].params["tau"] == 0.3


def test_q4_from_policy_summary_with_a_perfect_confidence(synth):
    # draft_conf 0.99 on accepted positions and 0.01 on rejected ones: the confidence stop at any tau in
    # (0.01, 0.99] drafts exactly up to the first rejection (clairvoyant) and beats every fixed g at r > 0.
    rng = np.random.default_rng(5)
    arrays = [synth.markov(rng, 200, 0.9, 0.4) for _ in range(30)]
    streams = list(synth.streams("x", arrays))
    for s in streams:
        s.draft_conf = np.where(s.bits == 1, 0.99, 0.01).astype(np.float32)
    rows = policy_summary(streams, 0.185, multinomial_weights(30, 500, 0))
    row = ec.q4(rows)
    assert row.verdict == "holds" and "confidence stop tau=0.3" in row.evidence


# -------------------------------------------------------------------- Q5, Q6 ---


def dhw(hw, mb, measured=True, **more):
    return DecisionHW(measured=measured, gamma_hw=3, speedup_hw=sum(hw) / 2, speedup_hw_ci=list(hw),
                      gamma_mb=2, speedup_mb=sum(mb) / 2, speedup_mb_ci=list(mb), **more)


def pd(label, measured, reference):
    return ec.ProfileDecision(label, measured, reference, f"{label}: {measured} / {reference}")


A, B_, S = "above 1", "below 1", "straddles 1"


@pytest.mark.parametrize("decisions, verdict, phrase", [
    # one profile (the 2-core CPU): memory-bound says speculate, the measured costs say do not (prose)
    ({"code": [pd("cpu", S, A)], "prose": [pd("cpu", B_, A)]}, "holds", "prose (cpu: the measured decision and the memory-bound"),
    # two machines: measured decisions on different sides, the reference above 1 on both (it does not move)
    ({"code": [pd("epyc", A, A), pd("xeon", B_, A)]}, "holds", "code (epyc above 1, xeon below 1, the memory-bound reference above 1 on both"),
    # the measured decisions differ, but so does the reference: the reference told the side as well
    ({"code": [pd("epyc", A, A), pd("xeon", B_, B_)]}, "inconclusive", "and on every profile"),
    # agreement everywhere (what used to read "falsified"): no evidence against the claim
    ({"code": [pd("cpu", A, A)], "prose": [pd("cpu", A, A)]}, "inconclusive", "no evidence against the claim"),
    ({"code": [pd("cpu", B_, B_)], "prose": [pd("cpu", A, A)]}, "inconclusive", "no evidence against the claim"),
    # a straddling CI on either side shows nothing
    ({"code": [pd("cpu", S, A)], "prose": [pd("cpu", B_, S)]}, "inconclusive", "a CI contains 1"),
    ({}, "inconclusive", "no set has a measured decision"),
    ({"code": []}, "inconclusive", "no set has a measured decision"),
])
def test_q5(decisions, verdict, phrase):
    row = ec.q5(decisions)
    assert row.verdict == verdict and phrase in row.evidence, row
    assert row.size == "n/a" and row.id == "Q5" and row.seed == "economics"
    for ds in decisions.values():  # the evidence names both decisions of every profile
        for d in ds:
            assert d.text in row.evidence


def test_q5_is_never_falsified():
    """SPEC 4: Q5 has no falsified outcome, whatever the sides (every combination of 1-3 profiles, 1-2 sets)."""
    sides = (A, B_, S)
    profiles = [pd(f"m{i}", m, r) for i, (m, r) in enumerate(itertools.product(sides, sides))]
    rng = np.random.default_rng(0)
    for _ in range(300):
        sets = {c: [profiles[int(i)] for i in rng.integers(0, len(profiles), rng.integers(1, 4))] for c in ("code", "prose")[: rng.integers(1, 3)]}
        row = ec.q5(sets)
        assert row.verdict in ("holds", "inconclusive") and row.direction != "not reproduced"
        # holds exactly when a profile's two decisions sit on clear, different sides, or two profiles'
        # measured decisions do while their reference agrees (an independent restatement of the rule)
        expect = any(
            any(d.measured != d.reference and S not in (d.measured, d.reference) for d in ds)
            or any(x.measured != y.measured and x.reference == y.reference and S not in (x.measured, y.measured, x.reference)
                   for x in ds for y in ds)
            for ds in sets.values())
        assert (row.verdict == "holds") == expect, sets


def test_profile_decision_reads_the_sides_of_both_intervals():
    d = ec.profile_decision(dhw((0.75, 0.87), (1.2, 1.3)), "xeon, torch")
    assert (d.measured, d.reference) == ("below 1", "above 1") and d.label == "xeon, torch"
    assert "measured g=3 0.81x [0.75, 0.87] (below 1)" in d.text and "memory-bound g=2 1.25x [1.20, 1.30] (above 1)" in d.text
    assert ec.profile_decision(DecisionHW(measured=True, speedup_hw=1.2), "x").measured == "straddles 1"  # no interval


def batch(b, v, lo, hi, g=3):
    return {"batch": b, "gamma_hw": g, "speedup_hw": {"value": v, "ci": [lo, hi]}}


@pytest.mark.parametrize("by_batch, verdict, phrase", [
    ([batch(1, 1.6, 1.5, 1.7), batch(4, 1.2, 1.1, 1.3), batch(16, 0.8, 0.7, 0.9)], "holds",
     "above 1 at B = 1 and below 1 at B = 16"),
    # above 1 everywhere measured, short of the roofline's B*: no crossover on this device
    ([batch(1, 1.6, 1.5, 1.7), batch(4, 1.2, 1.1, 1.3), batch(16, 1.05, 1.01, 1.1)], "inconclusive",
     "no crossover on this device: the CI lies above 1 at every measured B"),
    # ... and past B* = 49.2: falsified
    ([batch(1, 1.6, 1.5, 1.7), batch(64, 1.05, 1.01, 1.1)], "falsified", "past the roofline B*"),
    # SmolLM2's shape: below 1 at every B, the point values falling: no crossover, not "holds"
    ([batch(1, 0.70, 0.66, 0.75), batch(2, 0.69, 0.62, 0.74), batch(8, 0.68, 0.61, 0.76)], "inconclusive",
     "no crossover on this device: the CI lies below 1 at every measured B"),
    # llama.cpp's shape: B = 1 straddles, then below: the interval never lay above 1
    ([batch(1, 0.98, 0.85, 1.04), batch(4, 0.60, 0.54, 0.74), batch(8, 0.74, 0.67, 0.86)], "inconclusive",
     "no crossover shown"),
    # above, below, above again: speculation does not stop paying
    ([batch(1, 1.4, 1.2, 1.6), batch(2, 0.8, 0.7, 0.9), batch(4, 1.4, 1.2, 1.7)], "inconclusive", "above 1 again at B = 4"),
    ([batch(1, 0.9, 0.85, 0.95), batch(8, 1.3, 1.2, 1.4)], "inconclusive", "no crossover shown"),
    ([batch(1, 1.6, 1.5, 1.7)], "inconclusive", "no batch costs"),
    (None, "inconclusive", "no batch costs"),
])
def test_q6(by_batch, verdict, phrase):
    row = ec.q6(by_batch, batch_crossover=4 if verdict == "holds" else None, roofline=49.2, roofline_gamma=5)
    assert row.verdict == verdict and phrase in row.evidence, row
    assert "roofline B* = I*/(g+1) ~ 49 at g = 5" in row.evidence and "B* ~ 49 at g = 5 on an H100" in row.evidence
    if verdict == "holds":
        assert "measured crossover B_hw = 4" in row.evidence


@pytest.mark.parametrize("sides, expected", [
    ([(1, A), (2, A), (4, A), (8, A)], 8),
    ([(1, A), (2, B_), (4, A), (8, A)], 1),   # B = 2 below: B_hw stops there, whatever B = 4 and 8 say
    ([(8, A), (1, A), (4, S), (2, A)], 2),    # order of the input does not matter
    ([(1, S), (2, A)], None),                 # "never on this device"
    ([], None),
])
def test_batch_hw_is_the_largest_b_with_every_smaller_b_above_1(sides, expected):
    assert vd.batch_hw(sides) == expected


def fake_q_set(alpha, decision_hw=None, cost_ratio=None):
    E = [1.0 + alpha * int(g) / (1 + 0.1 * int(g)) for g in GAMMAS]
    return make_set(
        depth=Depth(gamma=2, conditional=[est(0.8, 0.7, 0.9), est(0.9, 0.85, 0.95)], conditional_iid=[], unconditional=[],
                    unconditional_iid=[], blocks=[], c2_minus_c1=est(0.1, 0.05, 0.15)),
        alpha=alpha, alpha_ci=[alpha - 0.02, alpha + 0.02], r_measured=0.2,
        curve=Curve(gamma=[int(g) for g in GAMMAS], E_true=E, E_iid=[None] * len(E), E_true_ci=[[e * 0.95, e * 1.05] for e in E]),
        decision_hw=decision_hw, cost_ratio=cost_ratio)


def test_q_rows_wire_q5_q6_to_decision_hw():
    """q_rows reads decision_hw's speedup_hw_ci / speedup_mb_ci per corpus (Q5) and the pooled set's
    by_batch, batch_crossover and the cost-ratio model's roofline B* (Q6)."""
    pooled_hw = dhw((0.9, 1.0), (1.3, 1.4), by_batch=[batch(1, 1.2, 1.1, 1.3), batch(8, 0.7, 0.6, 0.8)], batch_crossover=1)
    sets = {"code": fake_q_set(0.9, dhw((1.02, 1.1), (1.4, 1.6))), "prose": fake_q_set(0.7, dhw((0.75, 0.87), (1.2, 1.3))),
            "pooled": fake_q_set(0.8, pooled_hw, CostRatioOptimum(r=0.2, ridge=295.0, gamma_true=5, roofline_B_star=49.17))}
    rows = {r.id: r for r in ec.q_rows(sets)}
    assert [*rows] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert rows["Q5"].verdict == "holds" and "the side in prose (the run's cost profile" in rows["Q5"].evidence
    assert rows["Q6"].verdict == "holds" and "B_hw = 1" in rows["Q6"].evidence and "~ 49 at g = 5" in rows["Q6"].evidence
    # without the decision's CIs (an older report, imported bits): inconclusive
    for s in sets.values():
        s.decision_hw = DecisionHW(measured=True, speedup_hw=1.1)
    rows = {r.id: r for r in ec.q_rows(sets)}
    assert rows["Q5"].verdict == rows["Q6"].verdict == "inconclusive"


def test_q5_reads_every_cost_profile_of_a_set():
    """With cost profiles (a decision per machine), Q5 holds when two machines' measured decisions fall on
    different sides of 1 while the memory-bound reference stays on one side; one profile alone that agrees
    with its reference shows nothing."""
    from types import SimpleNamespace

    both = SimpleNamespace(decision_hw=None, decision_by_profile={"epyc": dhw((1.1, 1.2), (1.3, 1.4)),
                                                                  "xeon": dhw((0.8, 0.9), (1.3, 1.4))})
    ds = ec.profile_decisions(both)
    assert [(d.label, d.measured, d.reference) for d in ds] == [("epyc", "above 1", "above 1"), ("xeon", "below 1", "above 1")]
    row = ec.q5({"code": ds})
    assert row.verdict == "holds" and "epyc above 1, xeon below 1, the memory-bound reference above 1 on both" in row.evidence
    one = SimpleNamespace(decision_hw=dhw((1.1, 1.2), (1.3, 1.4)))
    assert ec.q5({"code": ec.profile_decisions(one)}).verdict == "inconclusive"
    assert ec.profile_decisions(SimpleNamespace(decision_hw=dhw((1.1, 1.2), (1.3, 1.4), measured=False))) == []
