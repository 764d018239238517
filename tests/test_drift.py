"""Intervals that cover (SPEC 6, issue 51): the drift of costs between sessions on one machine, estimated from
hand-made sessions with known drift, the stated default below two sessions, and the decision check's 95%
prediction interval that carries it."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.decide.hardware import Confirmation, decision_check
from specterm.core.decide.hardware.curve import cost_curve, cost_replicates
from specterm.core.decide.hardware.drift import DEFAULT_SIGMA, drift_sigma, machine_drift, session_factors
from specterm.core.decide.hardware.profiles import machine_sessions, profile_meta, run_profiles

GAMMAS = [1, 2, 3, 4]
VERIFY = [0.6, 0.7, 0.9, 1.1]


def cost(c_decode=0.5, scale=1.0, when="2026-12-01T10:00:00+00:00", samples=True):
    """A session's cost dict: c_decode, c_verify(g) = VERIFY, c_draft 0.1, everything times `scale` (a machine
    uniformly slower or faster), identical samples (no spread within the session)."""
    ver = {str(g): v * scale for g, v in zip(GAMMAS, VERIFY)}
    out = {"c_decode_s": c_decode * scale, "c_draft_s": 0.1 * scale, "c_verify_s": ver, "decision_clock": "wall",
           "measured_at": when}
    if samples:
        out["samples_s"] = {"decode": [c_decode * scale] * 5, "draft": [0.1 * scale] * 5,
                            **{f"verify:{g}": [v] * 5 for g, v in ver.items()}}
    return out


def test_drift_sigma_is_the_sd_of_log_factors():
    d = np.array([-0.1, 0.0, 0.1])
    F = np.exp(d[:, None] + np.log([[1.2, 0.9, 0.7]]))
    assert drift_sigma(F) == pytest.approx(0.1)  # sd (ddof 1) of -0.1, 0, 0.1 is 0.1 at every g
    assert drift_sigma(F[:1]) is None


def test_sessions_whose_c_decode_moves_drift_and_a_uniform_slowdown_does_not():
    deltas = [-0.05, 0.0, 0.05, 0.1]
    sessions = [cost(0.5 * np.exp(x), when=f"2026-12-0{i + 1}T10:00:00+00:00") for i, x in enumerate(deltas)]
    g, F = session_factors([cost_curve(c) for c in sessions])
    assert g.tolist() == GAMMAS and np.allclose(np.log(F / F[1]), np.array(deltas)[:, None])
    d = machine_drift(sessions)
    assert d.sessions == 4 and d.sigma == pytest.approx(np.std(deltas, ddof=1))
    uniform = [cost(scale=s, when=f"2026-12-0{i + 1}T10:00:00+00:00") for i, s in enumerate((1.0, 3.0, 0.5))]
    assert machine_drift(uniform).sigma == pytest.approx(0.0, abs=1e-12)  # realized is a ratio: it cancels


def test_fewer_than_two_sessions_take_the_stated_default():
    one = cost()
    d = machine_drift([one, dict(one)])  # the same measurement twice (a migrated profile) is one session
    assert d.sessions == 0 and d.sigma == DEFAULT_SIGMA and "default" in d.source
    assert machine_drift([]).sigma == DEFAULT_SIGMA


def test_a_profile_carries_its_machines_drift():
    """Two profiles of one machine and a confirmation on it: three sessions; another machine's profile is not
    one of them."""
    dev = {"kind": "cpu", "name": "AMD EPYC", "cores": 2, "threads": 1}
    eng = {"name": "torch", "version": "2.9", "build": {}}
    c1, c2, c3 = (cost(0.5 * np.exp(x), when=f"2026-12-0{i + 1}T10:00:00+00:00") for i, x in enumerate((-0.1, 0.0, 0.1)))
    other = cost(0.9, when="2026-12-05T10:00:00+00:00")
    profiles = [{"id": "pa", "engine": eng, "device": dev, "cost": c1, "measured_at": c1["measured_at"]},
                {"id": "pb", "engine": eng, "device": dev, "cost": c2, "measured_at": c2["measured_at"]},
                {"id": "px", "engine": eng, "device": {**dev, "name": "Intel Xeon"}, "cost": other,
                 "measured_at": other["measured_at"]}]
    conf = {"date": "2026-12-03T10:05:00+00:00", "device": "cpu", "threads": 1, "hardware": {"cpu": "AMD EPYC"},
            "cost": c3, "results": []}
    meta = {"profiles": profiles, "confirmations": [conf], "device": "cpu"}
    ps = run_profiles(meta)
    assert len(machine_sessions(meta, ps[0], ps)) == 3
    drift = profile_meta(meta, ps[1], ps)["cost_drift"]
    assert drift["sessions"] == 3 and drift["sigma"] == pytest.approx(0.1)
    assert profile_meta(meta, ps[2], ps)["cost_drift"]["sessions"] == 0


def test_the_prediction_interval_carries_the_drift():
    """Leave-out streams all alike and costs without spread: the interval is a point without drift, and
    S exp(+-1.96 sigma) with it (the percentiles of a lognormal)."""
    streams = [(f"c-{i}", np.zeros(40, dtype=np.uint8)) for i in range(12)]
    c = cost()
    prompts = [{"corpus": "c", "id": "c-0", "tokens": 40, "context": 60.0, "spec": {"2": {}}}]
    conf = Confirmation(date="d", device="cpu", threads=1, complete=True, results=[],
                        record={"prompts": prompts, "cost": c, "cost_context": 60})
    row = {"gamma": 2, "realized": 0.6}
    S = 1.0 * 0.5 / (0.7 + 2 * 0.1)
    n = 20000
    plain = decision_check(row, conf, "c", streams, cost_curve(c), cost_replicates(c, n, 0), n, 0)
    assert plain["decision_predicted"]["ci"] == pytest.approx([S, S]) and plain["in_ci"] is False
    sigma = 0.1
    out = decision_check(row, conf, "c", streams, cost_curve(c), cost_replicates(c, n, 0), n, 0,
                         {"sigma": sigma, "sessions": 3, "source": "hand-made"})
    lo, hi = out["decision_predicted"]["ci"]
    assert lo == pytest.approx(S * np.exp(-1.96 * sigma), rel=0.01) and hi == pytest.approx(S * np.exp(1.96 * sigma), rel=0.01)
    assert out["decision_predicted"]["value"] == pytest.approx(S)  # the point does not move
    assert out["in_ci"] is True and out["drift"]["sigma"] == sigma  # 0.6 lies in [0.46, 0.68]


def test_an_engine_settings_interval_carries_the_drift_too():
    """core/settings' prediction interval for a policy (the engine-settings checks of the calibration table):
    identical streams and fixed costs give a point without drift and S exp(+-1.96 sigma) with it."""
    from specterm.core.settings.speedup import FIXED, BlockCosts, Policy, prediction_interval, stack

    bits = [np.array([1, 1, 0, 1, 1, 0] * 5, np.uint8) for _ in range(8)]
    s = stack(bits, [None] * len(bits))
    costs = BlockCosts(c_decode=1.0, c_verify=1.0 + 0.1 * np.arange(9), c_draft=0.2, c_fwd=None, measured=False)
    p = Policy(FIXED, 2)
    value, (lo, hi) = prediction_interval(s, p, costs, 2, 20000, 0)
    assert lo == pytest.approx(value) and hi == pytest.approx(value)
    sigma = 0.05
    value2, (lo2, hi2) = prediction_interval(s, p, costs, 2, 20000, 0, sigma)
    assert value2 == pytest.approx(value)
    assert lo2 == pytest.approx(value * np.exp(-1.96 * sigma), rel=0.01)
    assert hi2 == pytest.approx(value * np.exp(1.96 * sigma), rel=0.01)
