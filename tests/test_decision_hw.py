"""decision_hw in the report (analysis.analyse -> SetReport.decision_hw, SPEC 6 measured costs, SPEC 7 keys):
runs written with hand-made cost curves, so every number is known in closed form from the set's E_true."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app_fixture import META, fixture_streams, judged_streams
from specterm.core.report.analysis import analyse
from specterm.core.errors import SpectermError
from specterm.core.report.export import to_json, to_markdown, to_text
from specterm.core.store import load_runs, write_run

G = list(range(1, 17))


def cost(c_decode, c_verify, c_draft, c_draft2=None):
    """A run.json "cost" dict: c_verify a number (every g) or a function of g."""
    ver = {str(g): float(c_verify(g) if callable(c_verify) else c_verify) for g in G}
    out = {"r_measured": c_draft / c_decode, "c_decode_s": c_decode, "c_draft_s": c_draft, "c_verify_s": ver}
    if c_draft2 is not None:
        out["c_draft2_s"] = c_draft2
    return out


def report_of(tmp_path, cost_dict, name="run", confirmations=None):
    meta = {**META, "name": name, "cost": cost_dict}
    if confirmations is not None:
        meta["confirmations"] = confirmations
    path = write_run(tmp_path / name, meta, judged_streams())
    return analyse(load_runs([path]), boot=0, shuffles=0)


def E_true(set_report) -> np.ndarray:
    return np.array([set_report.curve.at("E_true", g) for g in G], dtype=float)


def test_free_verify_gives_spec6s_number(tmp_path):
    # c_verify(g) = c_decode: S_hw(g) = E(g) / (1 + g r), r = c_draft / c_decode (SPEC 6).
    rep = report_of(tmp_path, cost(0.5, 0.5, 0.1))
    for _name, s in rep.ordered_sets():
        d = s.decision_hw
        S = E_true(s) / (1 + np.array(G) * 0.2)
        assert d.measured is True
        assert d.gamma_hw == G[int(np.nanargmax(S))]
        assert d.speedup_hw == pytest.approx(np.nanmax(S), rel=1e-12)
        assert d.gamma_hw == s.cost_ratio.gamma_true and d.speedup_hw == pytest.approx(s.cost_ratio.T_true, rel=1e-12)
        assert d.speedup_mb == pytest.approx(d.speedup_hw, rel=1e-12)


def test_verify_at_two_decode_steps_halves_it(tmp_path):
    # A negligible draft (1 ns; the stored costs must be positive): S_hw(g) = E(g) with free verify, E(g) / 2 with 2 steps.
    free = report_of(tmp_path, cost(0.5, 0.5, 1e-9), "free")
    two = report_of(tmp_path, cost(0.5, 1.0, 1e-9), "two")
    for name, s in free.ordered_sets():
        h = two.sets[name].decision_hw
        assert s.decision_hw.speedup_hw == pytest.approx(np.nanmax(E_true(s)), rel=1e-6)
        assert h.speedup_hw == pytest.approx(s.decision_hw.speedup_hw / 2, rel=1e-6)
        assert h.gamma_hw == s.decision_hw.gamma_hw


def test_without_measured_costs_measured_is_false_and_said(tmp_path):
    rep = report_of(tmp_path, {"r_measured": 0.15})
    for _name, s in rep.ordered_sets():
        d = s.decision_hw
        assert d.measured is False and d.gamma_hw is None and d.speedup_hw is None
        assert "no measured costs on this hardware" in d.verdict
        assert d.gamma_mb == s.cost_ratio.gamma_true and d.speedup_mb == pytest.approx(s.cost_ratio.T_true, rel=1e-12)
    data = json.loads(to_json(rep))["sets"]["pooled"]["decision_hw"]
    assert data["measured"] is False and data["speedup_hw"] is None


def test_verdict_sign_follows_s_hw(tmp_path):
    slow = report_of(tmp_path, cost(0.5, 5.0, 0.1), "slow")  # verify = 10 decode steps: E / 10 < 1 here
    for _name, s in slow.ordered_sets():
        d = s.decision_hw
        assert d.speedup_hw < 1 and d.speculate is False
        # the verdict names the machine of its costs (a hand-made cost names none: "unknown machine")
        assert d.machine == "unknown machine, torch float32"
        assert d.verdict.startswith(f"do not speculate on {d.machine}: the best draft length, g = {d.gamma_hw}")
        assert "memory-bound" not in d.verdict  # a column of the table, never part of the verdict (SPEC 6)
        assert f"pays when a verify of {d.gamma_hw + 1} tokens costs less than v* = {d.break_even_verify:.2f}" in d.verdict
    fast = report_of(tmp_path, cost(0.5, 0.5, 0.01), "fast")
    for _name, s in fast.ordered_sets():
        assert s.decision_hw.speculate is True
        assert s.decision_hw.verdict.startswith(f"speculate with g = {s.decision_hw.gamma_hw} on {s.decision_hw.machine}")


def test_a_draft_dearer_than_the_tokens_it_yields_cannot_pay_whatever_a_verify_costs(tmp_path):
    # c_draft = 4 decode steps: at g = 1, v* = E(1) - 4 < 0 (E(1) <= 2), so no verify cost could make it pay
    rep = report_of(tmp_path, cost(0.5, 0.5, 2.0), "dear")
    for _name, s in rep.ordered_sets():
        d = s.decision_hw
        E1 = s.curve.at("E_true", d.gamma_hw)
        assert d.gamma_hw == 1 and d.break_even_verify == pytest.approx(E1 - 4.0, rel=1e-12) and d.break_even_verify < 0
        assert "cannot pay on that machine whatever a verify costs" in d.verdict and "v* =" not in d.verdict
        assert f"its drafting alone costs {4.0:.2f} decode steps, more than the E = {E1:.2f} tokens" in d.verdict


def test_refeed_model_in_extra_keys_and_named_when_it_flips_the_sign(tmp_path):
    # Verify is cheap only for g <= 2, where most blocks follow a fully accepted one (alpha ~0.8 here);
    # a 2-token draft step of 40 s then sinks the refeed model below 1 at every g, SPEC 6's S_hw stays > 1.
    dear = lambda g: 0.5 if g <= 2 else 50.0
    rep = report_of(tmp_path, cost(0.5, dear, 0.01, c_draft2=40.0))
    spec = report_of(tmp_path, cost(0.5, dear, 0.01), "spec")
    for name, s in rep.ordered_sets():
        d = s.decision_hw
        assert d.speedup_hw == pytest.approx(spec.sets[name].decision_hw.speedup_hw, rel=1e-12)  # SPEC 6 untouched
        assert d.speculate is True and d.speedup_hw_refeed < 1
        assert f"(with the 2-token draft step: {d.speedup_hw_refeed:.2f}x at g = {d.gamma_hw_refeed})" in d.verdict
        assert d.speedup_refeed_at_gamma_hw < d.speedup_hw


def _result(corpus, gamma, predicted_spec6, predicted_refeed, realized, prompts=2, identical=True):
    return {"corpus": corpus, "gamma": gamma, "prompts": prompts, "tokens": 128 * prompts, "greedy_s": 100.0 * realized,
            "spec_s": 100.0, "realized": realized, "predicted": predicted_refeed, "predicted_spec6": predicted_spec6,
            "tokens_per_call": 4.0, "identical": identical, "realized_cpu": realized * 1.01}


def _record(date, results):
    return {"date": date, "device": "cpu", "threads": 1, "complete": True, "results": results}


def test_confirmation_rows_in_the_report(tmp_path):
    # prose's in-generation forwards: S = E t1 / (tv + g d1) = 3.0 * 0.5 / (0.9 + 3 * 0.1) = 1.25; 1.32 / 1.25 = 1.056
    prose = {**_result("prose", 3, 1.5, 1.2, 1.32), "E_prompts": 3.0, "decode_forward_s_median": 0.5,
             "verify_forward_s_median": 0.9, "draft_forward_s_median": 0.1}
    old = _record("2026-01-01T00:00:00+00:00", [prose, _result("code", 4, 2.0, 1.6, 1.0)])
    new = _record("2026-02-01T00:00:00+00:00", [_result("code", 5, 1.25, 1.0, 1.1)])
    rep = report_of(tmp_path, cost(0.5, 0.5, 0.1), confirmations=[old, new])
    (p,) = rep.sets["prose"].decision_hw.confirmed
    assert (p.gamma, p.predicted, p.predicted_refeed, p.realized) == (3, 1.5, 1.2, 1.32)
    assert p.ratio == pytest.approx(0.88) and p.ratio_refeed == pytest.approx(1.1)
    assert p.ratio_cpu == pytest.approx(1.32 * 1.01 / 1.5) and p.identical is True
    (c,) = rep.sets["code"].decision_hw.confirmed  # the newer record supersedes code only
    assert (c.gamma, c.predicted, c.ratio) == (5, 1.25, pytest.approx(0.88))
    md = to_markdown(rep)
    assert "Decision on unknown machine, torch float32" in md and "| prose |" in md
    assert p.predicted_insitu == pytest.approx(1.25) and p.ratio_insitu == pytest.approx(1.056)
    assert c.ratio_insitu is None  # no in-generation forwards stored
    # confirmation table: set, g, prompts, realized, cost-model check at the in-generation costs, at the
    # micro-benchmark's (wall; in CPU time 1.32 * 1.01 / 1.5 = 0.89)
    assert "| prose | 3 | 2 | 1.32x | 1.06 | 0.88 (CPU 0.89) |" in md
    text = to_text(rep)
    assert "cost-model check: real / pred at in-generation costs" in text
    keys = json.loads(to_json(rep))["sets"]["prose"]["decision_hw"]
    assert list(keys)[:7] == ["measured", "gamma_hw", "speedup_hw", "gamma_mb", "speedup_mb", "verdict", "confirmed"]
    assert list(keys["confirmed"][0])[:5] == ["gamma", "predicted", "realized", "prompts", "identical"]
    q3 = next(r for r in rep.scorecard if r.id == "Q3")
    assert "measured costs" in q3.evidence and "realized (specterm confirm)" in q3.evidence


def test_a_corrupt_confirmation_is_refused_in_one_sentence(tmp_path):
    bad = _record("2026-01-01T00:00:00+00:00", [{"corpus": "prose", "gamma": 3}])
    with pytest.raises(SpectermError, match="confirmation record is corrupt"):
        report_of(tmp_path, cost(0.5, 0.5, 0.1), confirmations=[bad])


def test_runs_with_different_costs_pool_without_a_hardware_decision(tmp_path):
    a = write_run(tmp_path / "a", {**META, "name": "a", "cost": cost(0.5, 0.5, 0.1)}, fixture_streams())
    b = write_run(tmp_path / "b", {**META, "name": "b", "cost": cost(0.5, 1.0, 0.1)}, fixture_streams())
    rep = analyse(load_runs([a, b]), boot=0, shuffles=0)
    d = rep.sets["pooled"].decision_hw
    assert d.measured is False and "different cost curves" in d.verdict
