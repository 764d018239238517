"""core/decide/hardware.py: S_hw on hand-made cost curves, the robust curve on injected noise, g_hw's tie
rule, the verdict's sign, stored cost dicts, and per-(corpus, g) confirmation rows."""

from __future__ import annotations


import numpy as np
import pytest

from specterm.core.streams.blockwalk import E_iid
from specterm.core.decide.costmodel import (
    refeed_counts,
    refeed_share,
    refeed_share_iid,
    speedup_hw,
    speedup_mb,
)
from specterm.core.errors import SpectermError
from specterm.core.decide.hardware import (
    MEMORY_BOUND_LABEL,
    CostCurve,
    cost_curve,
    curve_summary,
    decision_hw,
    fit_line,
    isotonic_increasing,
    robust_forward_costs,
    summarize_results,
)

G = np.arange(1, 9)


def _curve(c_decode, c_verify, c_draft, gammas=G):
    return CostCurve(gammas=np.asarray(gammas), c_decode=c_decode, c_verify=np.asarray(c_verify, dtype=float),
                     c_draft=c_draft)


def test_free_verify_gives_the_memory_bound_number_of_spec6():
    E = np.array([1.8, 2.4, 2.9])
    g = np.array([1, 2, 3])
    S = speedup_hw(E, 0.5, np.full(3, 0.5), 0.1, g)  # verify costs one decode step; r = 0.1 / 0.5 = 0.2
    assert S == pytest.approx([1.8 / 1.2, 2.4 / 1.4, 2.9 / 1.6])
    assert S == pytest.approx(speedup_mb(E, 0.2, g))


def test_verify_at_two_decode_steps_halves_the_speedup():
    E = np.array([1.8, 2.4, 2.9])
    g = np.array([1, 2, 3])
    free = speedup_hw(E, 0.5, np.full(3, 0.5), 0.0, g)
    assert speedup_hw(E, 0.5, np.full(3, 1.0), 0.0, g) == pytest.approx(free / 2)
    # with drafting cost: E c_decode / (2 c_decode + g c_draft) = E / (2 + g r)
    assert speedup_hw(E, 0.5, np.full(3, 1.0), 0.1, g) == pytest.approx(E / (2 + 0.2 * g))


def test_isotonic_fit_by_hand():
    assert isotonic_increasing([1, 3, 2, 4]).tolist() == [1, 2.5, 2.5, 4]
    assert isotonic_increasing([3, 2, 1]).tolist() == [2, 2, 2]
    assert isotonic_increasing([1, 2, 3]).tolist() == [1, 2, 3]
    assert isotonic_increasing([2, 1, 5, 0], w=[3, 1, 1, 1]).tolist() == pytest.approx([1.75, 1.75, 2.5, 2.5])


def test_robust_curve_recovers_a_monotone_curve_under_injected_noise():
    rng = np.random.default_rng(7)
    m = np.arange(1, 18)  # tokens per forward: decode, then verify g = 1..16
    truth = 0.5 + 0.12 * np.maximum(0, m - 2) + 0.3 * (m >= 9)  # flat, then a ramp with a kernel step
    errs_raw, errs_fit = [], []
    for _ in range(50):
        # 7 repeats: 8% jitter, and a load spike (+50 to +200%) on a fifth of the forwards; medians per quantity
        jitter = 1 + 0.08 * rng.standard_normal((7, m.size))
        spikes = (rng.random((7, m.size)) < 0.2) * rng.uniform(0.5, 2.0, (7, m.size))
        med = np.median(truth[None, :] * (jitter + spikes), axis=0)
        dec, ver = robust_forward_costs(med[0], m[1:] - 1, med[1:])
        fit = np.concatenate([[dec], ver])
        assert np.all(np.diff(fit) >= 0)
        errs_raw.append(np.sqrt(np.mean((med / truth - 1) ** 2)))
        errs_fit.append(np.sqrt(np.mean((fit / truth - 1) ** 2)))
    # the fit removes a fifth or more of the medians' error (RMS relative; ~12% -> ~9% here)
    assert np.mean(errs_fit) < 0.8 * np.mean(errs_raw)
    assert np.mean(errs_fit) < 0.10


def test_line_fit_recovers_a_and_b_under_noise():
    rng = np.random.default_rng(3)
    m = np.arange(1, 18, dtype=float)
    c = 0.4 + 0.05 * m + rng.normal(0, 0.01, m.size)
    a, b, rms = fit_line(m, c)
    assert a == pytest.approx(0.4, abs=0.02) and b == pytest.approx(0.05, abs=0.003)
    assert rms == pytest.approx(0.01, rel=0.5)
    assert fit_line(m, 0.4 + 0.05 * m) == pytest.approx((0.4, 0.05, 0.0), abs=1e-12)


def test_robust_costs_keep_the_order_of_unsorted_gammas():
    dec, ver = robust_forward_costs(1.0, np.array([4, 1, 2]), np.array([3.0, 2.0, 1.0]))
    # sorted: m = 1, 2, 3, 5 -> [1, 2, 1, 3] -> isotonic [1, 1.5, 1.5, 3]
    assert dec == 1.0 and ver.tolist() == [3.0, 1.5, 1.5]


def test_g_hw_ties_go_to_the_smallest_g():
    E = np.array([1.5, 2.0, 2.0, 1.9, 1.9, 1.9, 1.9, 1.9])
    d = decision_hw(G, E, None, _curve(1.0, np.ones(8), 0.0))  # S_hw = E exactly
    assert d.gamma_hw == 2 and d.speedup_hw == pytest.approx(2.0)


def test_verdict_sign_and_the_memory_bound_number_beside_it():
    alpha = 0.6
    E = E_iid(alpha, G)
    # verify costs 3 decode steps: max S_hw < 1 although the memory-bound model promises > 1
    slow = decision_hw(G, E, E, _curve(0.5, np.full(8, 1.5), 0.05))
    S = E * 0.5 / (1.5 + G * 0.05)
    assert slow.speedup_hw == pytest.approx(S.max()) and slow.gamma_hw == int(G[np.argmax(S)])
    assert S.max() < 1 and not slow.speculate
    assert slow.verdict.startswith("do not speculate on this hardware")
    S_mb = E / (1 + G * 0.1)
    assert slow.gamma_mb == int(G[np.argmax(S_mb)]) and slow.speedup_mb == pytest.approx(S_mb.max()) and S_mb.max() > 1
    assert MEMORY_BOUND_LABEL not in slow.verdict and slow.memory_bound_label == MEMORY_BOUND_LABEL  # a column
    # verify as cheap as a decode step: speculate, and S_hw is the memory-bound number
    fast = decision_hw(G, E, E, _curve(0.5, np.full(8, 0.5), 0.05))
    assert fast.speculate and fast.verdict.startswith(f"speculate with g = {fast.gamma_hw} on this hardware")
    assert fast.speedup_hw == pytest.approx(fast.speedup_mb) and fast.gamma_hw == fast.gamma_mb
    assert fast.gamma_iid_hw == fast.gamma_hw  # E_true = E_iid here


def test_iid_promise_in_hardware_terms():
    E_true = np.array([1.7, 2.2, 2.5, 2.6, 2.65, 2.66, 2.66, 2.66])
    E_i = E_iid(0.75, G)
    curve = _curve(1.0, 1.0 + 0.05 * G, 0.1)
    d = decision_hw(G, E_true, E_i, curve)
    S_i = E_i / (1.0 + 0.05 * G + 0.1 * G)
    S_t = E_true / (1.0 + 0.05 * G + 0.1 * G)
    assert d.gamma_iid_hw == int(G[np.argmax(S_i)]) and d.speedup_iid_hw == pytest.approx(S_i.max())
    assert d.speedup_true_at_gamma_iid_hw == pytest.approx(S_t[d.gamma_iid_hw - 1])
    assert d.curve_hw["gamma"] == G.tolist() and d.curve_hw["S_true"] == pytest.approx(S_t.tolist())


def test_hw_decision_only_over_measured_draft_lengths():
    gam = np.arange(1, 33)
    E = E_iid(0.95, gam)
    d = decision_hw(gam, E, None, _curve(1.0, np.ones(4), 0.01, gammas=[1, 2, 4, 8]))
    assert d.curve_hw["gamma"] == [1, 2, 4, 8] and d.gamma_hw == 8
    assert d.gamma_mb > 8  # the memory-bound model uses the whole E curve


def test_without_measured_costs_the_memory_bound_model_is_kept_and_said_so():
    E = E_iid(0.8, G)
    d = decision_hw(G, E, E, None, r_fallback=0.2)
    assert not d.measured and d.gamma_hw is None and d.speedup_hw is None
    assert d.speedup_mb == pytest.approx((E / (1 + 0.2 * G)).max())
    assert d.verdict.startswith("no measured costs on this hardware")


def test_without_measured_costs_the_verdict_follows_the_reference_interval():
    """No costs: the decision is the memory-bound reference at r_fallback, and its kind follows the
    prompt-bootstrap CI of that reference (never "speculate" on a point estimate whose CI holds 1)."""
    r = 0.2
    E = E_iid(0.8, G)
    g_mb = int(G[np.argmax(E / (1 + r * G))])
    j = g_mb - 1
    spread = np.linspace(-1, 1, 400)[:, None]  # replicates of E, symmetric about the point
    for width, kind in ((0.05, "speculate"), (2.0, "no_reliable_gain")):
        E_boot = E[None, :] * (1 + width * spread)
        d = decision_hw(G, E, E, None, r_fallback=r, E_boot=E_boot)
        by_hand = E_boot[:, j] / (1 + r * g_mb)
        assert d.speedup_mb_ci == pytest.approx(np.percentile(by_hand, [2.5, 97.5]).tolist())
        assert d.verdict_kind == kind and d.speculate == (kind == "speculate")
        assert f"[{d.speedup_mb_ci[0]:.2f}, {d.speedup_mb_ci[1]:.2f}]" in d.verdict


def test_cost_curve_from_a_stored_dict():
    cost = {"c_decode_s": 0.5, "c_draft_s": 0.2, "c_verify_s": {"1": 0.9, "2": 1.33, "4": 0.99, "8": 1.4}, "context": 186}
    curve = cost_curve(cost)
    assert curve.gammas.tolist() == [1, 2, 4, 8] and curve.context == 186
    assert curve.c_decode == 0.5 and curve.c_verify == pytest.approx([0.9, 1.16, 1.16, 1.4])
    assert curve.r_mb == pytest.approx(0.4) and curve.verify_at(4) == pytest.approx(1.16)
    summary = curve_summary(curve)
    assert summary["c_verify_robust_s"]["2"] == pytest.approx(1.16)
    assert summary["c_verify_line"]["rms_s"] > 0
    # an older record (no c_decode) has no hardware curve; a malformed one is refused in one sentence
    assert cost_curve({"r_measured": 0.18, "c_draft_s": 0.18, "c_verify_s": {"4": 0.99}}) is None
    assert cost_curve(None) is None
    for bad in ({**cost, "c_decode_s": -1}, {**cost, "c_verify_s": {"x": 1.0}}, {**cost, "c_verify_s": {"0": 1.0}},
                {**cost, "c_verify_s": {"1": "slow"}}, {**cost, "c_verify_s": []}):
        with pytest.raises(SpectermError) as err:
            cost_curve(bad)
        assert "\n" not in str(err.value) and str(err.value).endswith(".")
    with pytest.raises(SpectermError, match="no c_verify"):
        curve.verify_at(3)


def test_confirmation_rows_are_ratios_of_sums():
    curve = _curve(0.5, np.full(8, 1.0), 0.1)
    rows = [
        {"corpus": "code", "tokens": 100, "greedy_s": 50.0,
         "spec": {"4": {"s": 40.0, "target_calls": 25, "blocks_walk": 25, "identical": True}}},
        {"corpus": "code", "tokens": 60, "greedy_s": 30.0,
         "spec": {"4": {"s": 40.0, "target_calls": 20, "blocks_walk": 20, "identical": True}}},
    ]
    (r,) = summarize_results(rows, curve, {"code": {4: (3.0, 0.0)}})
    assert r["realized"] == pytest.approx(80.0 / 80.0) and r["tokens"] == 160 and r["prompts"] == 2
    assert r["E_prompts"] == pytest.approx(160 / 45) and r["tokens_per_call"] == pytest.approx(160 / 45)
    assert r["predicted"] == pytest.approx((160 / 45) * 0.5 / (1.0 + 4 * 0.1))
    assert r["predicted_corpus"] == pytest.approx(3.0 * 0.5 / 1.4)
    assert r["ratio"] == pytest.approx(r["realized"] / r["predicted"]) and r["identical"]
    assert r["realized_cpu"] is None and r["refeed_share"] == 0
    assert r["realized_steady"] is None and r["ratio_steady"] is None  # no first-step timings stored
    rows[1]["spec"]["4"]["identical"] = False
    assert not summarize_results(rows, curve)[0]["identical"]


def test_cost_model_check_without_the_prefills_by_hand():
    """realized_steady: per token, greedy's first token and speculative's first block left out. By hand:
    greedy (50 - 5 + 30 - 3) s over (100 - 1 + 60 - 1) tokens = 72 / 158 s per token; speculative
    (40 - 8 + 24 - 6) s over (100 - 3 + 60 - 2) tokens = 50 / 155; realized_steady = (72/158) / (50/155)."""
    curve = _curve(0.5, np.full(8, 1.0), 0.1)
    rows = [
        {"corpus": "code", "tokens": 100, "greedy_s": 50.0, "greedy_prefill_s": 5.0,
         "spec": {"4": {"s": 40.0, "target_calls": 25, "blocks_walk": 25, "identical": True,
                        "first_block_s": 8.0, "first_block_tokens": 3}}},
        {"corpus": "code", "tokens": 60, "greedy_s": 30.0, "greedy_prefill_s": 3.0,
         "spec": {"4": {"s": 24.0, "target_calls": 20, "blocks_walk": 20, "identical": True,
                        "first_block_s": 6.0, "first_block_tokens": 2}}},
    ]
    (r,) = summarize_results(rows, curve)
    assert r["realized"] == pytest.approx(80.0 / 64.0)  # SPEC 6's realized keeps the prefills
    assert r["realized_steady"] == pytest.approx((72 / 158) / (50 / 155))
    assert r["ratio_steady"] == pytest.approx(r["realized_steady"] / r["predicted"])
    del rows[1]["spec"]["4"]["first_block_tokens"]  # one prompt without it: no steady figure at all
    assert summarize_results(rows, curve)[0]["realized_steady"] is None


def test_cost_model_check_at_the_forwards_the_generations_made_by_hand():
    """predicted_insitu = E t1 / (tv + g d1) with t1, tv, d1 the medians over prompts of each prompt's
    in-generation forward medians. By hand: E = 160 / 45; t1 = median(0.40, 0.50) = 0.45, tv = 0.60,
    d1 = median(0.10, 0.12) = 0.11; S = (160/45) 0.45 / (0.60 + 4 0.11) = 1.6 / 1.04; realized 80 / 64."""
    from specterm.core.decide.hardware.confirmations import _row

    curve = _curve(0.5, np.full(8, 1.0), 0.1)
    rows = [
        {"corpus": "code", "tokens": 100, "greedy_s": 50.0, "greedy_decode_forward_s_median": 0.40,
         "spec": {"4": {"s": 40.0, "target_calls": 25, "blocks_walk": 25, "identical": True,
                        "verify_forward_s_median": 0.60, "draft_forward_s_median": 0.10}}},
        {"corpus": "code", "tokens": 60, "greedy_s": 30.0, "greedy_decode_forward_s_median": 0.50,
         "spec": {"4": {"s": 24.0, "target_calls": 20, "blocks_walk": 20, "identical": True,
                        "verify_forward_s_median": 0.60, "draft_forward_s_median": 0.12}}},
    ]
    (r,) = summarize_results(rows, curve)
    S = (160 / 45) * 0.45 / (0.60 + 4 * 0.11)
    assert r["predicted_insitu"] == pytest.approx(S) and S == pytest.approx(1.6 / 1.04)
    assert r["ratio_insitu"] == pytest.approx((80 / 64) / S)
    assert r["predicted"] == pytest.approx((160 / 45) * 0.5 / 1.4)  # the micro-benchmark's prediction is apart
    # the SPEC 7 row recomputes it from the stored medians, whatever predicted_insitu an older record stored
    assert _row({**r, "predicted_insitu": 9.9, "tokens_per_call": 1.0})["ratio_insitu"] == pytest.approx((80 / 64) / S)
    rows[1]["spec"]["4"]["draft_forward_s_median"] = None  # one prompt without its draft forwards: no figure
    (r,) = summarize_results(rows, curve)
    assert r["predicted_insitu"] is None and r["ratio_insitu"] is None
    assert _row({**r, "tokens_per_call": 1.0})["ratio_insitu"] is None


def test_confirmed_rows_per_corpus_and_pooled():
    from specterm.core.decide.hardware import confirmed_rows, parse_confirmation

    cost = {"c_decode_s": 0.5, "c_draft_s": 0.1, "c_verify_s": {"2": 1.0, "4": 1.0}}
    prompts = [
        {"corpus": "code", "tokens": 100, "greedy_s": 50.0,
         "spec": {"4": {"s": 40.0, "target_calls": 25, "blocks_walk": 25, "identical": True}}},
        {"corpus": "prose", "tokens": 100, "greedy_s": 50.0,
         "spec": {"4": {"s": 60.0, "target_calls": 50, "blocks_walk": 50, "identical": True},
                  "2": {"s": 55.0, "target_calls": 50, "blocks_walk": 50, "identical": True}}},
    ]
    curve = cost_curve(cost)
    rec = {"date": "d", "device": "cpu", "threads": 1, "cost": cost, "prompts": prompts,
           "results": [dict(r.items()) for r in summarize_results(prompts, curve)]}
    conf = parse_confirmation(rec)
    code = confirmed_rows(conf, "code")
    assert [r["gamma"] for r in code] == [4] and code[0]["realized"] == pytest.approx(50 / 40)
    assert code[0]["predicted"] == pytest.approx(4.0 * 0.5 / 1.4)
    pooled = confirmed_rows(conf, "pooled")
    assert [r["gamma"] for r in pooled] == [2, 4]
    g4 = pooled[1]
    assert g4["prompts"] == 2 and g4["realized"] == pytest.approx(100 / 100)
    assert g4["predicted"] == pytest.approx((200 / 75) * 0.5 / 1.4) and g4["ratio"] == pytest.approx(g4["realized"] / g4["predicted"])
    assert confirmed_rows(conf, "json") == []


def test_decision_hw_dict_has_the_spec7_keys():
    from specterm.core.report.types import ConfirmedRow

    out = decision_hw(G, E_iid(0.7, G), E_iid(0.7, G), _curve(0.5, np.full(8, 1.0), 0.1),
                      confirmed=[ConfirmedRow(gamma=2, predicted=0.9, realized=0.88, prompts=2, identical=True)]).to_dict()
    assert list(out)[:7] == ["measured", "gamma_hw", "speedup_hw", "gamma_mb", "speedup_mb", "verdict", "confirmed"]
    assert out["measured"] and out["gamma_hw"] is not None and out["confirmed"][0]["realized"] == 0.88
    import json

    json.dumps(out)  # plain JSON types only


def test_refeed_counts_follow_the_decoder():
    # g = 2 on 1 1 1 | 1 1 0 | 0: blocks [k=2 full], [k=2 full: the zero is its bonus position], [k=0] ...
    bits = np.array([1, 1, 1, 1, 1, 0, 0, 1], dtype=np.uint8)
    from specterm.core.streams.blockwalk import block_accepts

    ks = block_accepts(bits, 2)
    refeeds, blocks = refeed_counts(bits, [2])
    assert blocks[0] == ks.size and refeeds[0] == int(np.sum(ks[:-1] == 2))
    # by hand: s=0 k=2 (full), s=3 k=2 (full, a_5 = 0 is the bonus), s=6 k=0, s=7 k=1 (horizon) -> 2 refeeds of 4 blocks
    assert ks.tolist() == [2, 2, 0, 1] and (refeeds[0], blocks[0]) == (2, 4)
    # a fully accepted final block has no next block, so it feeds nothing
    assert refeed_counts(np.ones(6, dtype=np.uint8), [2]) == (np.array([1]), np.array([2]))
    assert refeed_share([bits, np.ones(6, dtype=np.uint8)], [2]).tolist() == [3 / 6]
    assert refeed_share_iid(0.5, np.array([1, 3])).tolist() == [0.5, 0.125]


def test_two_token_draft_steps_add_their_extra_cost():
    E, g = np.array([3.0]), np.array([4])
    plain = speedup_hw(E, 0.5, np.array([1.0]), 0.2, g)
    assert plain == pytest.approx(3.0 * 0.5 / 1.8)
    # half the blocks follow a full one and their first draft step costs 0.5 instead of 0.2
    assert speedup_hw(E, 0.5, np.array([1.0]), 0.2, g, np.array([0.5]), 0.3) == pytest.approx(1.5 / (1.8 + 0.15))
    curve = _curve(0.5, np.ones(8), 0.2)
    assert curve.refeed_extra == 0.0  # not measured: SPEC 6's formula
    cheaper = CostCurve(gammas=G, c_decode=0.5, c_verify=np.ones(8), c_draft=0.2, c_draft2=0.15)
    assert cheaper.refeed_extra == 0.0  # a 2-token step never counts as cheaper than a 1-token one
    dear = CostCurve(gammas=G, c_decode=0.5, c_verify=np.ones(8), c_draft=0.2, c_draft2=0.5)
    E8 = E_iid(0.9, G)
    d = decision_hw(G, E8, E8, dear, phi_true=np.full(8, 0.5))
    S = E8 * 0.5 / (1.0 + G * 0.2 + 0.5 * 0.3)  # the refeed model, in the extra keys
    assert d.speedup_hw_refeed == pytest.approx(S.max()) and d.gamma_hw_refeed == int(G[np.argmax(S)])
    S6 = E8 * 0.5 / (1.0 + G * 0.2)  # SPEC 6 to the letter: the decision's S_hw and the i.i.d. promise
    assert d.speedup_hw == pytest.approx(S6.max()) and d.gamma_hw == int(G[np.argmax(S6)])
    assert d.speedup_iid_hw == pytest.approx(S6.max())
    assert d.speedup_refeed_at_gamma_hw == pytest.approx(S[G == d.gamma_hw][0])


def test_cpu_clock_is_used_when_the_run_says_so():
    cost = {"c_decode_s": 0.9, "c_draft_s": 0.5, "c_draft2_s": 0.9, "c_verify_s": {"1": 2.0, "2": 2.5},
            "c_decode_cpu_s": 0.45, "c_draft_cpu_s": 0.2, "c_draft2_cpu_s": 0.35, "c_verify_cpu_s": {"1": 0.9, "2": 1.0}}
    wall = cost_curve(cost)
    assert wall.clock == "wall" and wall.c_decode == 0.9 and wall.refeed_extra == pytest.approx(0.4)
    cpu = cost_curve({**cost, "decision_clock": "cpu"})
    assert cpu.clock == "cpu" and cpu.c_decode == 0.45 and cpu.c_verify.tolist() == [0.9, 1.0]
    assert cpu.c_draft == 0.2 and cpu.refeed_extra == pytest.approx(0.15)
    assert curve_summary(cpu)["decision_clock"] == "cpu" and curve_summary(cpu)["c_verify_robust_s"]["1"] == 0.9


def test_a_clear_kernel_step_is_kept_and_noise_is_pooled():
    from specterm.core.decide.hardware import median_se, pool_violators_within_noise

    assert median_se([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(0.929 * 2.0 / np.sqrt(5))
    y = np.array([0.45, 0.85, 1.23, 0.87, 1.05])
    # tight measurements: the step down at the 4th point is 9 standard errors, so it stays
    tight = pool_violators_within_noise(y, np.full(5, 0.02))
    assert tight.tolist() == y.tolist()
    # loose measurements: the same step is noise, pooled by precision weight (equal here)
    loose = pool_violators_within_noise(y, np.full(5, 0.2))
    assert loose.tolist() == pytest.approx([0.45, 0.85, 1.05, 1.05, 1.05])
    # weights: the more precise point pulls the pooled value toward itself
    w = pool_violators_within_noise(np.array([1.0, 0.9]), np.array([0.1, 0.05]))
    assert w.tolist() == pytest.approx([(1.0 / 0.01 + 0.9 / 0.0025) / (1 / 0.01 + 1 / 0.0025)] * 2)
    assert pool_violators_within_noise(y).tolist() == isotonic_increasing(y).tolist()
    # the same from a stored record: samples give the standard errors
    rng = np.random.default_rng(0)
    samples = {"decode": list(0.45 + 0.01 * rng.standard_normal(7))}
    for g, c in zip((1, 2, 3, 4), (0.85, 1.23, 0.87, 1.05)):
        samples[f"verify:{g}"] = list(c + 0.01 * rng.standard_normal(7))
    med = {k: float(np.median(v)) for k, v in samples.items()}
    cost = {"c_decode_s": med["decode"], "c_draft_s": 0.2, "samples_s": samples,
            "c_verify_s": {str(g): med[f"verify:{g}"] for g in (1, 2, 3, 4)}}
    curve = cost_curve(cost)
    assert curve.verify_at(2) == pytest.approx(med["verify:2"]) and curve.verify_at(3) == pytest.approx(med["verify:3"])
