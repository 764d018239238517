"""Issue 18 / SPEC 6: the decision's interval, verdict, break-even, batch fit and leave-out check.

Every expected value is computed here independently (closed forms, hand arithmetic, a simulated
population), never read back from the code under test."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.streams.blockwalk import walk_table
from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.decide.hardware import Confirmation, cost_curve, decision_check, decision_hw
from specterm.core.decide.hardware.batch import batch_costs
from specterm.core.decide.hardware.curve import cost_replicates
from specterm.core.decide.hardware.decision import (
    DO_NOT,
    NO_GAIN,
    SPECULATE,
    verdict_kind,
    verdict_text,
)

GAMMAS = np.array([1, 2, 3, 4])


def _cost_dict(c_decode, c_verify, c_draft, samples=None):
    d = {"c_decode_s": c_decode, "c_draft_s": c_draft, "c_verify_s": {str(g): c for g, c in zip(GAMMAS, c_verify)},
         "decision_clock": "wall"}
    if samples is not None:
        d["samples_s"] = samples
    return d


# ------------------------------------------------------------------------------- verdicts ---

def test_three_verdicts_on_hand_made_cases():
    assert verdict_kind(1.20, [1.05, 1.31]) == SPECULATE
    assert verdict_kind(0.81, [0.76, 0.87]) == DO_NOT
    assert verdict_kind(1.04, [0.97, 1.11]) == NO_GAIN      # the Qwen code case of issue 18: CI contains 1
    assert verdict_kind(0.99, [0.95, 1.00]) == NO_GAIN      # hi = 1 exactly: not below 1
    assert verdict_kind(1.2, [None, None]) == SPECULATE     # no interval: the point decides
    assert verdict_text(SPECULATE, 7, 1.2, [1.05, 1.31]) == "speculate with g = 7 on this hardware: 1.20x [1.05, 1.31]"
    assert verdict_text(DO_NOT, 3, 0.81, [0.76, 0.87]) == (
        "do not speculate on this hardware: the best draft length, g = 3, gives 0.81x [0.76, 0.87]")
    assert verdict_text(NO_GAIN, 7, 1.04, [0.97, 1.11]) == "no reliable gain on this hardware: g = 7 gives 1.04x [0.97, 1.11]"


def test_break_even_and_verify_steps_by_hand():
    # S_hw = [1.8 * 0.5 / 0.7, 3.0 * 0.5 / 0.9, ...]: g_hw = 2; v* = 3 - 2 * 0.1 / 0.5 = 2.6; c_verify(2) / c_decode = 1.4
    E = np.array([1.8, 3.0, 3.1, 3.15])
    curve = cost_curve(_cost_dict(0.5, [0.6, 0.7, 0.9, 1.1], 0.1))
    d = decision_hw(GAMMAS, E, None, curve)
    assert d.gamma_hw == 2 and d.speedup_hw == pytest.approx(1.5 / 0.9)
    assert d.break_even_verify == pytest.approx(2.6) and d.verify_steps == pytest.approx(1.4)
    assert "v* = 2.60 decode steps (measured on that machine: 1.40)" in d.verdict
    assert d.speedup_hw_ci == [None, None] and d.verdict_kind == SPECULATE  # no replicates given


def test_verdict_kind_follows_the_interval_not_the_point():
    E = np.array([1.8, 3.0, 3.1, 3.15])
    curve = cost_curve(_cost_dict(0.5, [0.6, 1.4, 1.5, 1.6], 0.1))  # S_hw(2) = 1.5 / 1.6 < 1, S_hw(1) = 0.9/0.7 > 1
    # replicates whose E at g_hw straddles the break-even: the CI contains 1 although the point is > 1
    E_boot = np.tile(E, (400, 1))
    E_boot[:, 0] = np.linspace(1.2, 2.4, 400)
    samples = {"decode": [0.5] * 5, "draft": [0.1] * 5, **{f"verify:{g}": [c] * 5 for g, c in zip(GAMMAS, [0.6, 1.4, 1.5, 1.6])}}
    reps = cost_replicates(_cost_dict(0.5, [0.6, 1.4, 1.5, 1.6], 0.1, samples), 400, 0)
    d = decision_hw(GAMMAS, E, None, curve, E_boot=E_boot, reps=reps)
    assert d.gamma_hw == 1 and d.speedup_hw > 1
    lo, hi = d.speedup_hw_ci
    assert lo < 1 < hi and d.verdict_kind == NO_GAIN and d.verdict.startswith("no reliable gain on this hardware: g = 1")


# ------------------------------------------------------------------------------- coverage ---

def _markov_streams(rng, n_streams, n, p11, p01):
    out = []
    for _ in range(n_streams):
        a = np.empty(n, dtype=np.uint8)
        a[0] = rng.random() < 0.6
        u = rng.random(n)
        for t in range(1, n):
            a[t] = u[t] < (p11 if a[t - 1] else p01)
        out.append(a)
    return out


def test_ci_covers_a_known_speedup_near_95_percent():
    """Synthetic streams (a clustered Markov chain) and lognormal cost samples with known medians: the
    95% CI of S_hw(g_hw) must contain the true S_hw at that g in about 95% of independent draws."""
    rng = np.random.default_rng(12345)
    p11, p01, n = 0.85, 0.45, 120
    c_dec, c_dra = 0.5, 0.12
    c_ver = np.array([0.62, 0.70, 0.80, 0.93])
    pop = _markov_streams(rng, 4000, n, p11, p01)          # the population: truth = its ratio of sums
    tok, blk = walk_table(pop, GAMMAS)
    E_pop = tok.sum(0) / blk.sum(0)
    S_true = E_pop * c_dec / (c_ver + GAMMAS * c_dra)
    trials, hits, boot, N, k = 120, 0, 400, 40, 9
    for trial in range(trials):
        idx = rng.integers(0, len(pop), N)
        t, b = tok[idx], blk[idx]
        W = multinomial_weights(N, boot, seed=trial)
        E_point = t.sum(0) / b.sum(0)
        E_boot = (W @ t) / (W @ b)
        sig = 0.08
        samples = {"decode": (c_dec * np.exp(rng.normal(0, sig, k))).tolist(),
                   "draft": (c_dra * np.exp(rng.normal(0, sig, k))).tolist(),
                   **{f"verify:{g}": (c * np.exp(rng.normal(0, sig, k))).tolist() for g, c in zip(GAMMAS, c_ver)}}
        med = {q: float(np.median(v)) for q, v in samples.items()}
        cost = _cost_dict(med["decode"], [med[f"verify:{g}"] for g in GAMMAS], med["draft"], samples)
        d = decision_hw(GAMMAS, E_point, None, cost_curve(cost), E_boot=E_boot, reps=cost_replicates(cost, boot, 1000 + trial))
        lo, hi = d.speedup_hw_ci
        hits += lo <= S_true[d.gamma_hw - 1] <= hi
    coverage = hits / trials
    assert 0.87 <= coverage <= 0.995, coverage


def test_costs_alone_widen_the_interval():
    """With one stream repeated (no prompt spread) the interval comes from the cost samples only: wider
    cost spread, wider interval; no cost spread and no prompt spread, a point."""
    E = np.array([1.8, 3.0, 3.1, 3.15])
    E_boot = np.tile(E, (300, 1))
    widths = []
    for sig in (0.0, 0.05, 0.2):
        r = np.random.default_rng(3)
        samples = {"decode": (0.5 * np.exp(r.normal(0, sig, 9))).tolist(), "draft": (0.1 * np.exp(r.normal(0, sig, 9))).tolist(),
                   **{f"verify:{g}": (c * np.exp(r.normal(0, sig, 9))).tolist() for g, c in zip(GAMMAS, [0.6, 0.7, 0.9, 1.1])}}
        cost = _cost_dict(0.5, [0.6, 0.7, 0.9, 1.1], 0.1, samples)
        d = decision_hw(GAMMAS, E, None, cost_curve(cost), E_boot=E_boot, reps=cost_replicates(cost, 300, 0))
        widths.append(d.speedup_hw_ci[1] - d.speedup_hw_ci[0])
    assert widths[0] == pytest.approx(0.0, abs=1e-12) and widths[0] < widths[1] < widths[2]


# -------------------------------------------------------------------------------- batch fit ---

def _batch_record(fn, batches=(1, 2, 4, 8), fit_m=(1, 3, 9), held=((8, 2), (4, 5)), noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    pts = {(B, m) for B in batches for m in fit_m} | set(held)
    samples = {f"target:{B}:{m}": (fn(B, m) * np.exp(rng.normal(0, noise, 3))).tolist() for B, m in pts}
    samples.update({f"draft:{B}": [0.05 + 0.01 * B] * 3 for B in batches})
    return {"batches": list(batches), "fit_m": list(fit_m), "held_back": [list(h) for h in held], "context": 100,
            "samples_s": samples, "decision_clock": "wall", "wall_s": 12.0}


def test_batch_fit_recovers_a_cost_linear_in_tokens_and_reports_held_back_error():
    a, c = 0.3, 0.01
    rec = _batch_record(lambda B, m: a + c * B * m)
    bc = batch_costs(rec)
    assert bc.fit_rms_rel == pytest.approx(0.0, abs=1e-12)
    # c_verify(g, B) = a + c B (g + 1) everywhere on the grid (every N lies inside the timed range 2..72)
    B = np.array([1, 2, 4, 8])[:, None]
    g = np.arange(1, 9)[None, :]
    assert bc.gammas.tolist() == list(range(1, 9)) and bc.c_verify == pytest.approx(a + c * B * (g + 1))
    assert bc.c_decode == pytest.approx(a + c * np.array([1, 2, 4, 8]))  # as timed, not from the fit
    assert all(abs(h["error_pct"]) < 1e-9 for h in bc.held_back)
    assert (1, 1) not in bc.points and (8, 2) not in bc.points and (4, 5) not in bc.points


def test_batch_fit_interpolates_between_timed_token_counts():
    """A convex cost in N = B m: the held-back (8, 2) (N = 16) is read off the line between the timed
    N = 12 (B 4, m 3) and N = 18 (B 2, m 9); its error against the truth is computed by hand."""
    f = lambda N: 0.3 + 0.004 * N ** 1.5
    bc = batch_costs(_batch_record(lambda B, m: f(B * m)))
    assert bc.knots.tolist() == [2, 3, 4, 6, 8, 9, 12, 18, 24, 36, 72]
    line16 = f(12) + (16 - 12) / (18 - 12) * (f(18) - f(12))
    line20 = f(18) + (20 - 18) / (24 - 18) * (f(24) - f(18))
    errs = {(h["batch"], h["gamma"]): h["error_pct"] for h in bc.held_back}
    assert errs[(8, 1)] == pytest.approx(100 * (line16 - f(16)) / f(16)) and errs[(8, 1)] > 0.5
    assert errs[(4, 4)] == pytest.approx(100 * (line20 - f(20)) / f(20))
    # c_verify(5, B = 2): N = 12, a timed point; c_verify(2, B = 4): N = 12 as well
    assert bc.c_verify[1, 4] == pytest.approx(f(12)) and bc.c_verify[2, 1] == pytest.approx(f(12))


def test_batch_fit_pools_a_timing_that_runs_backwards():
    """N = 12 timed slower than N = 18 and 24 (noise): the non-decreasing fit pools the three into
    their mean, by hand (a plain interpolation would have the cost fall with more tokens)."""
    bump = {12: 0.9}
    f = lambda N: bump.get(N, 0.3 + 0.01 * N)
    bc = batch_costs(_batch_record(lambda B, m: f(B * m)))
    k = bc.knots.tolist()
    pooled = (0.9 + f(18) + f(24)) / 3  # 0.9 > 0.48, 0.54: the three violate and pool; 36 (0.66) does not
    assert bc.fitted[k.index(12)] == pytest.approx(pooled) and bc.fitted[k.index(24)] == pytest.approx(pooled)
    assert bc.fitted[k.index(36)] == pytest.approx(f(36)) and np.all(np.diff(bc.fitted) >= 0)


def test_a_timed_point_is_used_as_timed_and_only_untimed_points_are_fitted():
    """A dense grid with one shape-specific slow forward, (B, m) = (4, 3) at 1.75 s where N = 12 would
    cost 0.42 s on the line: c_verify(2, B = 4) is that timing, not the fit; the replicates keep it too.
    With (2, 5) left out of the timings, c_verify(4, B = 2) is the fit at N = 10, by hand."""
    f = lambda B, m: 1.75 if (B, m) == (4, 3) else 0.3 + 0.01 * B * m
    rec = _batch_record(f, fit_m=tuple(range(1, 10)), held=())
    del rec["samples_s"]["target:2:5"]
    bc = batch_costs(rec)
    B = [1, 2, 4, 8]
    assert bc.c_verify[B.index(4), 1] == pytest.approx(1.75)
    assert bc.c_verify[B.index(8), 1] == pytest.approx(f(8, 3)) and bc.c_verify[B.index(1), 7] == pytest.approx(f(1, 9))
    # N = 10 is not timed: read off the line between its neighbours N = 9 and 12 of the non-decreasing fit,
    # here rebuilt independently: mean timing per N over the timed points, then pool-adjacent-violators
    from specterm.core.decide.hardware.curve import isotonic_increasing

    pts = sorted({(b, m) for b in B for m in range(1, 10) if b * m >= 2} - {(2, 5)})
    Ns = sorted({b * m for b, m in pts})
    means = [np.mean([f(b, m) for b, m in pts if b * m == N]) for N in Ns]
    fit = isotonic_increasing(np.array(means))
    assert means[Ns.index(12)] == pytest.approx((f(2, 6) + 1.75) / 2)
    i9, i12 = Ns.index(9), Ns.index(12)
    assert bc.c_verify[B.index(2), 3] == pytest.approx(fit[i9] + (10 - 9) / (12 - 9) * (fit[i12] - fit[i9]))
    dec, ver, dra = bc.replicates(rec, 50, 0)
    assert np.allclose(ver[:, B.index(4), 1], 1.75)  # constant samples: every replicate's median is the timing
    # B = 1 timed further (the g curve reaches g = 16): the grid stops at the widest forward of EVERY
    # batch (m = 9, g = 8), where nothing needs extrapolating
    rec["samples_s"].update({f"target:1:{m}": [f(1, m)] * 3 for m in range(10, 18)})
    assert batch_costs(rec).gammas.tolist() == list(range(1, 9))


def test_isotonic_rows_equals_pool_adjacent_violators():
    from specterm.core.decide.hardware.batch import isotonic_rows
    from specterm.core.decide.hardware.curve import isotonic_increasing

    Y = np.random.default_rng(3).normal(size=(40, 12)).cumsum(axis=1)
    F = isotonic_rows(Y)
    for y, fy in zip(Y, F):
        assert fy == pytest.approx(isotonic_increasing(y), abs=1e-12)


def test_by_batch_and_the_measured_crossover():
    """Verify costs that grow with the batch: speculation pays at small B (CI above 1), not at 8. The
    by-batch costs are the decision's, scaled by the batch grid's ratios c(B) / c(1), so the B = 1 row is
    the decision itself (figure and interval)."""
    rec = _batch_record(lambda B, m: 0.2 * (1 + 0.05 * B) if m == 1 else 0.2 + 0.05 * B * m, noise=0.01)
    bc = batch_costs(rec)
    E = np.array([1.9, 2.7, 3.3, 3.8, 4.1, 4.3, 4.45, 4.55])
    gam = np.arange(1, 9)
    cost = {"c_decode_s": 0.21, "c_draft_s": 0.06, "c_verify_s": {str(g): 0.25 + 0.05 * g for g in gam},
            "samples_s": {"decode": [0.21, 0.2, 0.22, 0.21, 0.205], "draft": [0.06, 0.061, 0.059, 0.06, 0.062],
                          **{f"verify:{g}": [0.25 + 0.05 * g + e for e in (0, 0.01, -0.01, 0.005, 0.0)] for g in gam}}}
    curve = cost_curve(cost)
    reps = cost_replicates(cost, 300, 1)
    E_boot = np.tile(E, (300, 1)) * np.random.default_rng(0).normal(1, 0.01, (300, 1))
    d = decision_hw(gam, E, None, curve, E_boot=E_boot, reps=reps, batch=bc, batch_reps=bc.replicates(rec, 300, 0))
    rows = {r["batch"]: r for r in d.by_batch}
    assert rows[1]["gamma_hw"] == d.gamma_hw and rows[1]["speedup_hw"]["value"] == d.speedup_hw
    assert rows[1]["speedup_hw"]["ci"] == d.speedup_hw_ci and None not in d.speedup_hw_ci
    i = {B: k for k, B in enumerate((1, 2, 4, 8))}
    c_ver = np.array([curve.verify_at(int(g)) for g in gam])
    for B in (2, 4, 8):  # independent recomputation: the decision's costs times the batch grid's ratio to B = 1
        rd, rv, rr = (bc.c_decode[i[B]] / bc.c_decode[0], bc.c_verify[i[B]] / bc.c_verify[0], bc.c_draft[i[B]] / bc.c_draft[0])
        S = E * curve.c_decode * rd / (c_ver * rv + gam * curve.c_draft * rr)
        assert rows[B]["gamma_hw"] == int(gam[np.argmax(S)]) and rows[B]["speedup_hw"]["value"] == pytest.approx(S.max())
        lo, hi = rows[B]["speedup_hw"]["ci"]
        assert lo < S.max() < hi
    lo = {B: rows[B]["speedup_hw"]["ci"][0] for B in rows}
    expected = None
    for B in sorted(rows):  # B_hw: every B up to it above 1
        if not lo[B] > 1:
            break
        expected = B
    assert d.batch_crossover == expected and rows[8]["speedup_hw"]["value"] < rows[1]["speedup_hw"]["value"]
    assert d.roofline_reference["B_star"] == pytest.approx(d.roofline_reference["ridge"] / (d.gamma_hw + 1))
    assert d.batch_fit["samples_per_cost_min"] == bc.min_samples


# ------------------------------------------------------------------------------- leave-out ---

def test_leave_out_prediction_excludes_the_timed_prompts():
    """Timed prompts accept everything (E = g + 1), the rest nothing (E = 1): the decision check's E
    must be 1, i.e. S = c_decode / (c_verify + g c_draft), and its interval a point (no spread)."""
    streams = [(f"c-{i}", np.ones(40, dtype=np.uint8)) for i in range(2)]
    streams += [(f"c-{i}", np.zeros(40, dtype=np.uint8)) for i in range(2, 12)]
    samples = {"decode": [0.5] * 5, "draft": [0.1] * 5, **{f"verify:{g}": [c] * 5 for g, c in zip(GAMMAS, [0.6, 0.7, 0.9, 1.1])}}
    cost = _cost_dict(0.5, [0.6, 0.7, 0.9, 1.1], 0.1, samples)
    curve = cost_curve(cost)
    prompts = [{"corpus": "c", "id": f"c-{i}", "tokens": 40, "context": 60.0, "spec": {"2": {}}} for i in range(2)]
    conf = Confirmation(date="d", device="cpu", threads=1, complete=True, results=[],
                        record={"prompts": prompts, "cost": cost, "cost_context": 60})
    row = {"gamma": 2, "realized": 0.6}
    out = decision_check(row, conf, "c", streams, curve, cost_replicates(cost, 200, 0), 200, 0)
    S_out = 1.0 * 0.5 / (0.7 + 2 * 0.1)
    assert out["decision_predicted"]["value"] == pytest.approx(S_out)
    assert out["decision_predicted"]["ci"] == pytest.approx([S_out, S_out])
    assert out["excluded"] == ["c-0", "c-1"] and out["leave_out_streams"] == 10 and out["K"] == 2
    assert out["sign_held"] is True and out["in_ci"] is False  # realized 0.6 lies outside the point interval [0.556, 0.556]
    assert out["cost_drift_pct"] == {"c_decode": 0.0, "c_verify": 0.0, "c_draft": 0.0, "clock": "wall"}
    assert out["timed_context"] == 60.0
    assert out["predicted_session_costs"] == pytest.approx(S_out)  # same costs this session: no drift to explain
    # without leaving them out the E would be (2 * 40 + 10 * 40) / (2 * 14 + 10 * 40) > 1: a different number
    E_in = (12 * 40) / (2 * np.ceil(40 / 3) + 10 * 40)
    assert E_in * 0.5 / 0.9 != pytest.approx(out["decision_predicted"]["value"])


def test_leave_out_skips_streams_with_nothing_analysed():
    """A stream whose gate failed at its first position has no blocks: drawing it would divide by zero
    (the prediction interval came out [nan, nan] on the llama.cpp run's prose). It is left out; the
    interval is that of the other streams, here a point."""
    streams = [("c-0", np.ones(40, dtype=np.uint8))] + [(f"c-{i}", np.zeros(40, dtype=np.uint8)) for i in range(1, 6)]
    streams += [(f"c-{i}", np.zeros(0, dtype=np.uint8)) for i in range(6, 12)]
    samples = {"decode": [0.5] * 5, "draft": [0.1] * 5, **{f"verify:{g}": [c] * 5 for g, c in zip(GAMMAS, [0.6, 0.7, 0.9, 1.1])}}
    cost = _cost_dict(0.5, [0.6, 0.7, 0.9, 1.1], 0.1, samples)
    prompts = [{"corpus": "c", "id": "c-0", "tokens": 40, "context": 60.0, "spec": {"2": {}}}]
    conf = Confirmation(date="d", device="cpu", threads=1, complete=True, results=[],
                        record={"prompts": prompts, "cost": cost, "cost_context": 60})
    out = decision_check({"gamma": 2, "realized": 0.6}, conf, "c", streams, cost_curve(cost), cost_replicates(cost, 200, 0), 200, 0)
    S_out = 1.0 * 0.5 / (0.7 + 2 * 0.1)
    assert out["leave_out_streams"] == 5 and out["decision_predicted"]["ci"] == pytest.approx([S_out, S_out])


def test_lockstep_walk_by_hand_and_one_row_is_the_spec_walk():
    from specterm.core.streams.blockwalk import block_counts, sync_walk

    # rows 1101 and 1011 at g = 2: s=0 k=(2,1) -> 2 tokens; s=2 k=(0,2) -> 1; s=3 k=(1,1) capped at n -> 1: 3 blocks
    assert sync_walk([np.array([1, 1, 0, 1]), np.array([1, 0, 1, 1])], 2, 4) == 3
    rng = np.random.default_rng(7)
    for _ in range(50):
        bits = (rng.random(int(rng.integers(1, 60))) < 0.7).astype(np.uint8)
        g = int(rng.integers(1, 9))
        assert sync_walk([bits], g, bits.size) == int(block_counts(bits, g)[1])


def test_sign_held_follows_the_verdicts_side():
    from specterm.core.decide.hardware.decision import verdict_sign_held

    assert verdict_sign_held(SPECULATE, 1.1) is True and verdict_sign_held(SPECULATE, 0.9) is False
    assert verdict_sign_held(DO_NOT, 0.9) is True and verdict_sign_held(DO_NOT, 1.1) is False
    assert verdict_sign_held(NO_GAIN, 1.1) is None  # "no reliable gain" claims no side of 1
