"""Forwards priced in the engine's own speculative loop (issue 51, core/decide/hardware/engine_loop.py):
hand-made generations whose per-block target seconds and per-token draft seconds are known, the cost dict
they give (medians by hand, the binding's forwards kept beside, no separate draft forward), the decision's
block on it by hand, a confirm session's samples, `specterm costs` on a fake engine priced in its loop, the
SmolLM2 log's loop seconds, and drift that never mixes the two ways of pricing."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from specterm.core.decide import costmodel
from specterm.core.decide.hardware.curve import cost_curve, cost_replicates
from specterm.core.decide.hardware.engine_loop import (
    BINDING_KEY,
    KEY,
    WHERE,
    loop_samples,
    priced_in_loop,
    greedy_per_token,
    pricing,
    session_greedy,
    session_samples,
)
from specterm.core.errors import SpectermError

V = {1: 0.15, 2: 0.20, 3: 0.25}  # target seconds per block in the loop
D = 0.033                        # draft seconds per drafted token in the loop


def binding_cost():
    """A binding-timed cost dict (as `specterm costs` on llama.cpp stores one) over g = 1..3."""
    gs = (1, 2, 3)
    samples = {"decode": [0.05, 0.06, 0.055], "draft": [0.04, 0.041, 0.039], "draft2": [0.07] * 3,
               **{f"verify:{g}": [0.1 * g, 0.1 * g + 0.01, 0.1 * g - 0.01] for g in gs},
               **{f"draft_fwd:{g}": [0.07, 0.071, 0.069] for g in gs}}
    return {"c_decode_s": 0.055, "c_decode_cpu_s": 0.055, "c_draft_s": 0.04, "c_draft_cpu_s": 0.04,
            "c_draft2_s": 0.07, "c_draft2_cpu_s": 0.07,
            "c_verify_s": {str(g): 0.1 * g for g in gs}, "c_verify_cpu_s": {str(g): 0.1 * g for g in gs},
            "c_draft_fwd_s": {str(g): 0.07 for g in gs}, "c_draft_fwd_cpu_s": {str(g): 0.07 for g in gs},
            "samples_s": copy.deepcopy(samples), "samples_cpu_s": copy.deepcopy(samples),
            "decision_clock": "cpu", "engine": "llama.cpp", "r_gamma": 2, "context": 100}


def generations():
    """Three generations per g: blocks 10, 12, 8; target seconds V[g] x blocks x (1, 1.1, 0.9); draft D per
    drafted token (g per block) except one slower one (1.5 D) at g = 2."""
    out = []
    for g, v in V.items():
        for blocks, f in ((10, 1.0), (12, 1.1), (8, 0.9)):
            d = D * (1.5 if (g == 2 and f == 1.1) else 1.0)
            out.append({"gamma": g, "blocks": blocks, "target_s": v * f * blocks, "draft_s": d * g * blocks,
                        "loop_drafted": g * blocks, "outside_s": 0.001 * blocks})
    return out


def test_the_loop_samples_are_per_block_and_per_drafted_token():
    verify, draft = loop_samples(generations() + [{"gamma": 1, "blocks": 0, "target_s": 1.0}, {"gamma": 2}])
    assert verify[1] == pytest.approx([0.15, 0.165, 0.135]) and len(verify[2]) == 3
    assert len(draft) == 9 and sorted(draft)[-1] == pytest.approx(1.5 * D)


def test_priced_in_loop_takes_medians_and_keeps_the_binding_beside():
    cost = binding_cost()
    out = priced_in_loop(cost, generations())
    # medians by hand: V[g] x (1, 1.1, 0.9) -> V[g]; draft: eight D and one 1.5 D -> D
    assert out["c_verify_s"] == pytest.approx({"1": 0.15, "2": 0.20, "3": 0.25})
    assert out["c_verify_cpu_s"] == out["c_verify_s"] and out["c_draft_s"] == pytest.approx(D)
    assert out["c_decode_s"] == 0.055  # the binding's one-token forward: confirm's greedy is timed there
    for k in ("c_draft_fwd_s", "c_draft_fwd_cpu_s", "c_draft2_s"):
        assert k not in out and out[BINDING_KEY][k] == cost[k]
    assert out[BINDING_KEY]["c_verify_s"] == cost["c_verify_s"]
    assert out[BINDING_KEY]["samples_cpu_s"]["draft_fwd:2"] == cost["samples_cpu_s"]["draft_fwd:2"]  # kept whole
    assert out[BINDING_KEY]["samples_cpu_s"]["verify:1"] == cost["samples_cpu_s"]["verify:1"]
    assert not any(k.startswith(("draft_fwd", "draft2")) for k in out["samples_cpu_s"])
    assert out["samples_cpu_s"]["verify:3"] == pytest.approx([0.25, 0.275, 0.225])
    assert out["samples_cpu_s"]["decode"] == cost["samples_cpu_s"]["decode"]
    assert out[KEY]["where"] == WHERE and pricing(out) == WHERE and pricing(cost) == "separate forwards"
    assert out["r_by_gamma"]["2"] == pytest.approx(D / 0.20) and out["r_measured"] == pytest.approx(D / 0.20)
    assert cost["c_verify_s"]["1"] == 0.1  # the input is not changed


def test_the_decision_block_is_the_loops_forwards_without_a_draft_forward():
    out = priced_in_loop(binding_cost(), generations())
    curve = cost_curve(out)
    assert curve is not None and curve.c_draft_fwd is None and curve.refeed_extra == 0.0
    assert curve.forwards_where == WHERE and WHERE in curve.block_term_text()
    E = np.array([1.8, 2.4, 2.9])
    S = costmodel.speedup_hw(E, curve.c_decode, curve.c_verify, curve.c_draft, curve.gammas)
    by_hand = [1.8 * 0.055 / (0.15 + D), 2.4 * 0.055 / (0.20 + 2 * D), 2.9 * 0.055 / (0.25 + 3 * D)]
    assert S == pytest.approx(by_hand)
    reps = cost_replicates(out, 200, 0)
    assert reps is not None and reps.c_draft_fwd is None
    assert np.all(reps.c_verify[:, 0] >= 0.135 - 1e-12) and np.all(reps.c_verify[:, 0] <= 0.165 + 1e-12)


def test_a_draft_length_without_a_generation_keeps_the_binding_with_one_sentence():
    with pytest.raises(SpectermError, match=r"missing g = 3"):
        priced_in_loop(binding_cost(), [s for s in generations() if s["gamma"] != 3])
    out = priced_in_loop(binding_cost(), [s for s in generations() if s["gamma"] != 3], gammas=[1, 2])
    assert sorted(out["c_verify_s"]) == ["1", "2"]  # a session: the g it timed, alone


def test_a_confirm_sessions_prompts_give_the_loop_samples():
    rows = [{"spec": {"1": {"target_calls": 30, "draft_calls": 30, "target_loop_s": 4.5, "draft_loop_s": 1.0},
                      "4": {"target_calls": 10, "draft_calls": 40, "target_loop_s": 3.0, "draft_loop_s": 1.32},
                      "8": {"target_calls": 7, "draft_calls": 56, "target_loop_s": None}}},
            {"spec": {}}]
    s = session_samples(rows)
    assert s == [{"gamma": 1, "blocks": 30, "target_s": 4.5, "draft_s": 1.0, "loop_drafted": 30},
                 {"gamma": 4, "blocks": 10, "target_s": 3.0, "draft_s": 1.32, "loop_drafted": 40}]
    verify, draft = loop_samples(s)
    assert verify == {1: [pytest.approx(0.15)], 4: [pytest.approx(0.30)]} and draft == pytest.approx([1 / 30, 0.033])


def test_the_smollm2_log_gives_the_loops_target_and_draft_seconds(monkeypatch, tmp_path):
    """The stored SmolLM2 log at g = 4 (test_block_overhead reads its perf summary by hand): the target's loop
    seconds are prompt eval 5898.33 ms + eval 0 less the prompt's 2.096 s; the draft's 2.567285 s; drafted
    tokens: the log's own n_drafted counter."""
    from pathlib import Path

    from specterm.core.compare.speclog import parse_speculative_log
    from specterm.core.store import Stream
    from specterm.engines.base import Item
    from specterm.engines.llamacpp import LlamaPair
    from specterm.engines.llamacpp import binaries as B
    from specterm.engines.llamacpp import confirm_llamacpp as CL

    text = (Path(__file__).parent / "data" / "speculative-simple-smollm2-g4.log").read_text()
    log = parse_speculative_log(text)
    monkeypatch.setattr(CL, "run_speculative", lambda cmd, timeout=1800.0: (log, 9.9, text))
    monkeypatch.setattr(B, "find_binary", lambda d=None: tmp_path / "llama-speculative-simple")
    pair = LlamaPair(Path("t.gguf"), Path("d.gguf"), 1, lambda p: None)
    assert pair.forwards_in_loop
    s = Stream(id="a", corpus="code", bits=np.ones(28, np.uint8), prompt="def fib(n):", y=np.arange(28, dtype=np.int32))
    item = Item(stream=s, ids=[1, 2, 3], y=list(range(28)), n=28, blocks={4: 6}, refeeds={4: 5})
    t = pair.block_timed(item, 4, None)
    assert t.loop_target_s == pytest.approx(5.89833 - 2.096) and t.loop_draft_s == pytest.approx(2.567285)
    assert t.loop_drafted == log.counters["n_drafted"]


def test_specterm_costs_prices_an_in_loop_engine_from_its_generations(tmp_path, monkeypatch):
    """A fake engine priced in its loop whose generations take V(g) = 0.1 + 0.05 g per block in the target and
    D per drafted token: the profile's c_verify(g) at every g of the curve and c_draft are those, the binding's
    rounds sit under BINDING_KEY, o(g)'s g are timed BLOCK_REPEATS times per prompt and the rest once."""
    from test_profiles import FakeEngine, FakePair, judged_streams, legacy_meta

    from specterm.core.store import write_run
    from specterm.engines import costs as C
    from specterm.engines.base import BlockTiming

    def v(g):
        return 0.1 + 0.05 * g

    class LoopPair(FakePair):
        forwards_in_loop = True

        def greedy_loop(self, item):
            return item.n, 0.05 * item.n

        def block_timed(self, item, gamma, cancel):
            blocks = item.blocks[gamma]
            target, draft = v(gamma) * blocks, D * gamma * blocks
            return BlockTiming(blocks=blocks, wall_s=target + draft + 0.002 * blocks, cpu_s=target + draft + 0.002 * blocks,
                               forwards_wall_s=target + draft, forwards_cpu_s=target + draft, tokens=list(item.y),
                               loop_target_s=target, loop_draft_s=draft, loop_drafted=gamma * blocks)

    class Engine(FakeEngine):
        def open(self, meta, options, report):
            return LoopPair()

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    monkeypatch.setattr(C, "engine_for", lambda meta: Engine())
    monkeypatch.setattr(C.Quiet, "read", lambda self: (0.0, 0.1))
    warnings: list[str] = []
    record = C.measure(C.CostsConfig(run=path), warn=warnings.append)
    cost = record["cost"]
    assert not warnings
    assert cost[KEY]["where"] == WHERE and cost[KEY]["gammas"] == list(C.COST_GAMMAS)
    assert cost["c_verify_s"] == pytest.approx({str(g): v(g) for g in C.COST_GAMMAS})
    assert cost["c_draft_s"] == pytest.approx(D) and BINDING_KEY in cost
    # c_decode: greedy in its loop over each block prompt's whole y, BLOCK_REPEATS times
    assert cost["c_decode_s"] == pytest.approx(0.05) and len(cost[KEY]["greedy"]) == C.BLOCK_PROMPTS * C.BLOCK_REPEATS
    gens = cost[KEY]["generations"]
    counts = {g: sum(1 for s in gens if s["gamma"] == g) for g in C.COST_GAMMAS}
    repeated = sorted({s["gamma"] for s in cost["block_overhead"]["samples"]})  # o(g)'s line: BLOCK_GAMMAS and g_hw
    assert set(C.BLOCK_GAMMAS) <= set(repeated) and len(repeated) <= len(C.BLOCK_GAMMAS) + 1
    assert all(counts[g] == C.BLOCK_PROMPTS * (C.BLOCK_REPEATS if g in repeated else 1) for g in C.COST_GAMMAS)
    # each generation the stored y whole (the fake emits y): its blocks at the decision's contexts
    n = {s.id: s.n for s in judged_streams()}
    assert {s["prompt"] for s in gens} == {"c0", "p0"} and all(s["tokens"] == n[s["prompt"]] for s in gens)
    assert cost["block_overhead"]["a_s"] == pytest.approx(0.002) and cost["block_overhead"]["b_s"] == pytest.approx(0.0, abs=1e-12)
    curve = cost_curve(cost)
    assert curve is not None and curve.c_draft_fwd is None and curve.verify_at(16) == pytest.approx(v(16))


def test_drift_compares_sessions_priced_the_same_way_only():
    """Three sessions of one machine: two priced in the loop, one with separate forwards whose F differs by 30%.
    The in-loop profile's drift uses the two in-loop sessions: sigma = sd of log F over them, by hand."""
    from test_profiles import EPYC

    from specterm.core.decide.hardware.drift import machine_drift
    from specterm.core.decide.hardware.profiles import machine_sessions, run_profiles

    loop_a = priced_in_loop(binding_cost(), generations())
    loop_a["measured_at"] = "2026-12-07T20:00:00+00:00"
    gens_b = [{**s, "target_s": s["target_s"] * 1.05} for s in generations()]
    loop_b = priced_in_loop(binding_cost(), gens_b)
    loop_b["measured_at"] = "2026-12-07T21:00:00+00:00"
    sep = {**binding_cost(), "measured_at": "2026-12-07T19:00:00+00:00"}
    dev = {"kind": "cpu", "name": EPYC, "cores": 2, "threads": 1}
    eng = {"name": "llama.cpp", "version": "x", "build": {}}
    meta = {"profiles": [{"id": f"p{i}", "engine": eng, "device": dev, "dtype": "gguf", "context": 100, "clock": "cpu",
                          "measured_at": c["measured_at"], "load": {"avg": 0.1}, "busy": False, "stop_reason": "x",
                          "source": "measured by specterm costs", "cost": c, "batch_cost": None}
                         for i, c in enumerate((sep, loop_a, loop_b))]}
    profiles = run_profiles(meta)
    sessions = machine_sessions(meta, profiles[-1], profiles)
    assert [pricing(c) for c in sessions] == [WHERE, WHERE]
    assert len(machine_sessions(meta, profiles[0], profiles)) == 1
    Fa = [0.055 / (V[g] + g * D) for g in (1, 2, 3)]
    Fb = [0.055 / (1.05 * V[g] + g * D) for g in (1, 2, 3)]
    sig = np.median([np.std(np.log([a, b]), ddof=1) for a, b in zip(Fa, Fb)])
    d = machine_drift(sessions)
    assert d.sessions == 2 and d.sigma == pytest.approx(sig)


def test_greedy_in_its_loop_prices_c_decode():
    """Greedy generations of 100, 120 and 80 tokens at 0.050, 0.056 and 0.053 s a token (and one of no token,
    skipped): c_decode = their median per-token seconds, 0.053; the binding's one-token forward moves beside."""
    greedy = [{"tokens": 100, "seconds": 5.0}, {"tokens": 120, "seconds": 120 * 0.056},
              {"tokens": 80, "seconds": 80 * 0.053}, {"tokens": 0, "seconds": 1.0}]
    assert greedy_per_token(greedy) == pytest.approx([0.05, 0.056, 0.053])
    cost = binding_cost()
    out = priced_in_loop(cost, generations(), greedy=greedy)
    assert out["c_decode_s"] == out["c_decode_cpu_s"] == pytest.approx(0.053)
    assert out[BINDING_KEY]["c_decode_s"] == 0.055 and out[KEY]["decode"] == "greedy loop"
    assert out[BINDING_KEY]["samples_cpu_s"]["decode"] == cost["samples_cpu_s"]["decode"]
    assert out["samples_cpu_s"]["decode"] == pytest.approx([0.05, 0.056, 0.053])
    curve = cost_curve(out)
    assert curve is not None and curve.c_decode == pytest.approx(0.053)
    S = costmodel.speedup_hw(np.array([2.4]), curve.c_decode, [curve.verify_at(2)], curve.c_draft, np.array([2]))
    assert S[0] == pytest.approx(2.4 * 0.053 / (0.20 + 2 * D))
    # without greedy generations c_decode stays the binding's
    assert priced_in_loop(cost, generations())["c_decode_s"] == 0.055
    rows = [{"greedy_s": 6.4, "greedy_tokens": 128, "spec": {}}, {"spec": {}}]
    assert session_greedy(rows) == [{"tokens": 128, "seconds": 6.4}]
