"""The whole block's cost (SPEC 6, issue 51): the fit of o(g) = a + b g against hand-made samples with known
a and b, its replicates, the decision that adds it to the block (point, interval, break-even, verdict), a
profile without it ("block overhead not measured"), and `specterm costs` measuring it on a fake engine."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.decide.hardware.curve import cost_curve, cost_replicates
from specterm.core.decide.hardware.decision import decision_hw
from specterm.core.decide.hardware.overhead import (
    NOT_MEASURED,
    block_overhead,
    fit_overhead,
    overhead_record,
    overhead_replicates,
)
from specterm.core.errors import SpectermError

A, B = 0.004, 0.0015  # o(g) = 4 ms + 1.5 ms g


def samples_exact(a=A, b=B, gammas=(1, 4, 8), blocks=(30, 12, 7)):
    """Samples whose per-block outside time is exactly a + b g."""
    return [{"gamma": g, "blocks": n, "outside_s": n * (a + b * g)} for g, n in zip(gammas, blocks)]


def test_the_fit_recovers_a_and_b_from_exact_samples():
    s = samples_exact()
    a, b = fit_overhead([x["gamma"] for x in s], [x["blocks"] for x in s], [x["outside_s"] for x in s])
    assert a == pytest.approx(A, rel=1e-12) and b == pytest.approx(B, rel=1e-12)


def test_the_fit_is_least_squares_weighted_by_blocks():
    # noisy per-block values: the answer is numpy's polyfit with weights sqrt(blocks) (it minimises
    # sum (w_i r_i)^2, so w = sqrt(B) minimises sum B_i r_i^2), derived independently of the code
    g = np.array([1, 1, 4, 4, 8, 8, 12])
    n = np.array([40, 20, 12, 9, 6, 5, 3], dtype=float)
    per_block = A + B * g + np.array([3e-4, -2e-4, 1e-4, -4e-4, 2e-4, 5e-4, -1e-4])
    a, b = fit_overhead(g, n, per_block * n)
    b_ref, a_ref = np.polyfit(g, per_block, 1, w=np.sqrt(n))
    assert a == pytest.approx(a_ref, rel=1e-10) and b == pytest.approx(b_ref, rel=1e-10)
    # unweighted would differ: the weights matter here
    b_u, a_u = np.polyfit(g, per_block, 1)
    assert abs(a_u - a) > 1e-6


def test_one_draft_length_is_not_enough():
    with pytest.raises(ValueError):
        fit_overhead([4, 4], [10, 12], [0.1, 0.12])


def test_the_stored_fit_is_recomputed_and_bad_records_get_one_sentence():
    rec = overhead_record(samples_exact(), "cpu")
    assert rec["a_s"] == pytest.approx(A) and rec["b_s"] == pytest.approx(B) and rec["clock"] == "cpu"
    bo = block_overhead({"block_overhead": {**rec, "a_s": 99.0}})  # a hand-edited a_s is not trusted
    assert bo is not None and bo.a == pytest.approx(A) and bo.at([2])[0] == pytest.approx(A + 2 * B)
    assert block_overhead({}) is None
    for bad in ({"samples": []}, {"samples": [{"gamma": 1, "blocks": 3, "outside_s": 0.1}]},
                {"samples": [{"gamma": 0, "blocks": 3, "outside_s": 0.1}, {"gamma": 2, "blocks": 3, "outside_s": 0.1}]},
                {"samples": "x"}):
        with pytest.raises(SpectermError, match="specterm costs"):
            block_overhead({"block_overhead": bad})


def test_replicates_resample_within_each_draft_length():
    # exact samples: every replicate refits the same line
    bo = block_overhead({"block_overhead": overhead_record(samples_exact(), "wall")})
    assert bo is not None
    reps = overhead_replicates(bo, [1, 2, 16], 50, seed=0)
    assert reps.shape == (50, 3) and np.allclose(reps, A + B * np.array([1, 2, 16]))
    # two samples per g, one at 0.5 and one at 1.5 times the line: every replicate lies within the two extremes
    s = [dict(x, outside_s=x["outside_s"] * f) for x in samples_exact() for f in (0.5, 1.5)]
    bo2 = block_overhead({"block_overhead": overhead_record(s, "wall")})
    assert bo2 is not None and bo2.a == pytest.approx(A) and bo2.b == pytest.approx(B)
    reps2 = overhead_replicates(bo2, [4], 400, seed=1)[:, 0]
    o4 = A + 4 * B
    assert reps2.min() >= 0.5 * o4 - 1e-12 and reps2.max() <= 1.5 * o4 + 1e-12 and reps2.std() > 0


def cost_dict(with_overhead: bool, spread: float = 0.02):
    """A cost dict: c_decode 0.1 s, c_draft 0.01 s, c_verify(g) = 0.1 + 0.005 g, 7 samples each."""
    j = np.linspace(-spread, spread, 7)
    ver = {str(g): 0.1 + 0.005 * g for g in range(1, 9)}
    s = {"decode": [0.1 * (1 + x) for x in j], "draft": [0.01 * (1 + x) for x in j],
         **{f"verify:{g}": [v * (1 + x) for x in j] for g, v in ver.items()}}
    out = {"c_decode_s": 0.1, "c_draft_s": 0.01, "c_verify_s": ver, "samples_s": s, "context": 100}
    if with_overhead:
        out["block_overhead"] = overhead_record(samples_exact(), "wall")
    return out


def test_the_decision_adds_o_g_to_the_block():
    gammas = np.arange(1, 9)
    E = 1 + 0.9 * (1 - 0.8 ** gammas) / 0.2  # any increasing E curve
    with_o = decision_hw(gammas, E, None, cost_curve(cost_dict(True)))
    without = decision_hw(gammas, E, None, cost_curve(cost_dict(False)))
    S_hand = E * 0.1 / (0.1 + 0.005 * gammas + gammas * 0.01 + A + B * gammas)
    S_plain = E * 0.1 / (0.1 + 0.005 * gammas + gammas * 0.01)
    assert with_o.curve_hw["S_true"] == pytest.approx(S_hand.tolist(), rel=1e-12)
    assert without.curve_hw["S_true"] == pytest.approx(S_plain.tolist(), rel=1e-12)
    g = with_o.gamma_hw
    assert with_o.speedup_hw == pytest.approx(S_hand.max()) and g == int(gammas[np.argmax(S_hand)])
    v_star = E[g - 1] - (g * 0.01 + A + B * g) / 0.1
    assert with_o.break_even_verify == pytest.approx(v_star)
    assert "o(g) = 4.00 ms + 1.500 ms g" in with_o.verdict and NOT_MEASURED not in with_o.verdict
    assert without.verdict.endswith(NOT_MEASURED) and "o(g)" not in without.verdict.replace(NOT_MEASURED, "")
    assert with_o.curve_hw["overhead"] == pytest.approx((A + B * gammas).tolist())


def test_the_interval_resamples_the_overhead_samples():
    gammas = np.arange(1, 9)
    E = 1 + 0.9 * (1 - 0.8 ** gammas) / 0.2
    E_boot = np.tile(E, (300, 1))  # prompts fixed: only costs move
    spread = [dict(x, outside_s=x["outside_s"] * f) for x in samples_exact() for f in (0.2, 1.8)]
    tight = cost_dict(True, spread=0.0)
    loose = {**tight, "block_overhead": overhead_record(spread, "wall")}
    d_tight = decision_hw(gammas, E, None, cost_curve(tight), E_boot=E_boot, reps=cost_replicates(tight, 300, 0))
    d_loose = decision_hw(gammas, E, None, cost_curve(loose), E_boot=E_boot, reps=cost_replicates(loose, 300, 0))
    lo_t, hi_t = d_tight.speedup_hw_ci
    lo_l, hi_l = d_loose.speedup_hw_ci
    assert hi_t - lo_t == pytest.approx(0.0, abs=1e-12)  # no spread anywhere: a point
    assert hi_l - lo_l > 0.01 and lo_l <= d_loose.speedup_hw <= hi_l


def test_specterm_costs_measures_the_block_overhead(tmp_path, monkeypatch):
    """`specterm costs` on a fake engine whose whole blocks take known time outside known forwards: the profile
    stores o(g) with its samples (blocks = the walk's, since the fake's output is the stored y) at >= 3 draft
    lengths, and the decision under that profile uses it."""
    from test_profiles import EPYC, FakeEngine, FakePair, judged_streams, legacy_meta

    from specterm.core.decide.machine import Machine
    from specterm.core.report.analysis import analyse
    from specterm.core.store import load_run, read_meta, write_run
    from specterm.engines import costs as C
    from specterm.engines.base import BlockTiming

    seen = []

    class BlockPair(FakePair):
        def block_timed(self, item, gamma, cancel):
            seen.append(gamma)
            blocks = item.blocks[gamma]
            inside = 0.5 * blocks
            outside = blocks * (A + B * gamma)
            return BlockTiming(blocks=blocks, wall_s=inside + outside + 1.0, cpu_s=inside + outside,
                               forwards_wall_s=inside + 1.0, forwards_cpu_s=inside, tokens=list(item.y))

    class Engine(FakeEngine):
        def open(self, meta, options, report):
            return BlockPair()

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    monkeypatch.setattr(C, "engine_for", lambda meta: Engine())
    monkeypatch.setattr(C.Quiet, "read", lambda self: (0.0, 0.1))
    record = C.measure(C.CostsConfig(run=path, block_tokens=24))
    bo = record["cost"]["block_overhead"]
    gs = sorted({s["gamma"] for s in bo["samples"]})
    assert len(gs) >= 3 and set(C.BLOCK_GAMMAS) <= set(gs)
    assert len(bo["samples"]) == len(gs) * C.BLOCK_PROMPTS * C.BLOCK_REPEATS and len(seen) == len(bo["samples"]) + 1
    assert all(s["blocks"] == s["blocks_walk"] and s["identical"] and s["tokens"] == 24 for s in bo["samples"])
    assert bo["clock"] == "cpu" and bo["a_s"] == pytest.approx(A) and bo["b_s"] == pytest.approx(B)
    assert all(s["outside_wall_s"] == pytest.approx(s["outside_cpu_s"]) for s in bo["samples"])
    assert read_meta(path)["profiles"][-1]["cost"]["block_overhead"] == bo
    monkeypatch.setattr("specterm.core.report.analysis.this_machine", lambda: Machine(cpu=EPYC, cores=2, threads=1))
    d = analyse([load_run(path)], boot=50, shuffles=0).sets["pooled"].decision_hw
    assert d.profile == record["id"] and "o(g) = 4.00 ms" in d.verdict and "overhead" in d.curve_hw
    # --no-block-overhead: a profile without it, whose verdict says so
    record2 = C.measure(C.CostsConfig(run=path, block_overhead=False))
    assert "block_overhead" not in record2["cost"]


def test_the_costs_command_prints_the_fitted_overhead(tmp_path, monkeypatch, capsys):
    from test_profiles import legacy_meta, judged_streams

    from specterm.core.store import write_run
    from specterm.engines import costs as C

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    record = {"id": "p1", "stop_reason": "settled", "cost": {"timing_s": 1.0, "load_s": 0.5,
                                                             "block_overhead": overhead_record(samples_exact(), "cpu")}}
    monkeypatch.setattr(C, "measure", lambda config, report, warn=None: record)
    monkeypatch.setattr(C, "_print_decisions", lambda run_dir, pid, log: None)
    C.costs_command(run=path, threads=1, device=None, dtype=None, target=None, draft=None, batch=False, max_rounds=5,
                    max_seconds=10.0, busy_ok=False, quiet_wait=1.0)
    err = capsys.readouterr().err
    assert "block overhead: o(g) = 4.00 ms + 1.500 ms g per block outside the forwards (3 generations at g = 1, 4, 8)" in err


def test_torch_times_whole_blocks_along_the_stored_y(tiny_model_dir, tmp_path):
    """The torch pair's block_timed on a tiny model: the decoder's blocks equal the walk's on the stored bits
    (its output is the stored y), and the time outside the forwards is positive and below the whole time."""
    from specterm.core.store import load_run
    from specterm.engines.confirm import build_items
    from specterm.engines.corpora import Prompt
    from specterm.engines.torch import TorchPair
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import run_oracle
    from specterm.engines.torch.oracle_torch import load_pair

    prompts = [Prompt(id="a", corpus="code", text="def add(a, b):"), Prompt(id="b", corpus="prose", text="The sea was")]
    cfg = OracleConfig(target=str(tiny_model_dir), draft="layers:2", prompts=prompts, out=tmp_path / "t",
                       max_new_tokens=16, measure_cost=False, device="cpu", dtype="float32")
    loaded = load_pair(cfg)
    run_oracle(cfg, pair=TorchPair(loaded))
    run = load_run(tmp_path / "t")
    pair = TorchPair(loaded, 1)
    items = build_items(run.streams, pair.encode, 16, np.array([1, 3]))
    for it in items:
        for g in (1, 3):
            t = pair.block_timed(it, g, None)
            assert t.tokens == it.y and t.blocks == it.blocks[g]
            assert 0 < t.wall_s - t.forwards_wall_s < t.wall_s and t.forwards_cpu_s <= t.cpu_s


def test_the_llamacpp_log_gives_the_time_inside_and_outside_the_models():
    """The stored `llama-speculative-simple -v` log (SmolLM2, g = 4): its perf summary read by hand: the target's
    prompt eval 5898.33 ms + eval 0.00 ms, the prompt's encode 2.096 s, the speculator's dur(b,g,a) = 0.003,
    2567.276, 0.006 ms, the decode loop 6.425 s over 6 blocks."""
    from pathlib import Path

    from specterm.core.compare.speclog import parse_speculative_log

    log = parse_speculative_log((Path(__file__).parent / "data" / "speculative-simple-smollm2-g4.log").read_text())
    assert log.target_eval_s == pytest.approx(5.89833) and log.draft_s == pytest.approx(2.567285)
    assert log.forwards_s == pytest.approx(5.89833 - 2.096 + 2.567285)
    assert log.outside_s == pytest.approx(6.425 - (5.89833 - 2.096) - 2.567285) and log.target_calls == 6


def test_llamacpp_times_whole_blocks_with_its_own_decoder(monkeypatch, tmp_path):
    """LlamaPair.block_timed runs llama-speculative-simple as confirm does and reports its log's times; without
    the binary it says what to do in one sentence."""
    from pathlib import Path

    import numpy as np_

    from specterm.core.compare.speclog import parse_speculative_log
    from specterm.core.store import Stream
    from specterm.engines.base import Item
    from specterm.engines.llamacpp import LlamaPair
    from specterm.engines.llamacpp import binaries as B
    from specterm.engines.llamacpp import confirm_llamacpp as CL

    text = (Path(__file__).parent / "data" / "speculative-simple-smollm2-g4.log").read_text()
    cmds = []
    monkeypatch.setattr(CL, "run_speculative", lambda cmd, timeout=1800.0: (cmds.append(cmd) or parse_speculative_log(text), 9.9, text))
    pair = LlamaPair(Path("t.gguf"), Path("d.gguf"), 1, lambda p: None)
    s = Stream(id="a", corpus="code", bits=np_.ones(28, np_.uint8), prompt="def fib(n):", y=np_.arange(28, dtype=np_.int32))
    item = Item(stream=s, ids=[1, 2, 3], y=list(range(28)), n=28, blocks={4: 6}, refeeds={4: 5})
    monkeypatch.setattr(B, "find_binary", lambda d=None: None)
    with pytest.raises(SpectermError, match="llama-speculative-simple"):
        pair.block_timed(item, 4, None)
    monkeypatch.setattr(B, "find_binary", lambda d=None: tmp_path / "llama-speculative-simple")
    t = pair.block_timed(item, 4, None)
    assert cmds[0][cmds[0].index("--spec-draft-n-max") + 1] == "4"
    assert t.blocks == 6 and t.wall_s == pytest.approx(6.425)
    assert t.wall_s - t.forwards_wall_s == pytest.approx(6.425 - (5.89833 - 2.096) - 2.567285)


def test_a_confirmation_predicts_with_the_whole_block_and_keeps_the_forwards_alone_beside():
    from specterm.core.decide.hardware import summarize_results

    curve = cost_curve(cost_dict(True))
    rows = [{"corpus": "code", "tokens": 100, "greedy_s": 50.0,
             "spec": {"4": {"s": 40.0, "target_calls": 25, "blocks_walk": 25, "identical": True}}}]
    (r,) = summarize_results(rows, curve)
    E = 100 / 25
    assert r["predicted_spec6"] == pytest.approx(E * 0.1 / (0.1 + 0.005 * 4 + 4 * 0.01 + A + B * 4))
    assert r["predicted_without_overhead"] == pytest.approx(E * 0.1 / (0.1 + 0.005 * 4 + 4 * 0.01))
    assert "predicted_without_overhead" not in summarize_results(rows, cost_curve(cost_dict(False)))[0]
    # with refeeds (blocks after a fully accepted one pay c_draft2 - c_draft more): the same prediction, o(g)
    # left out and nothing else. c_draft2 0.03, so refeed_extra 0.02; phi = 10 / 25
    cost = {**cost_dict(True), "c_draft2_s": 0.03}
    rows[0]["spec"]["4"]["refeeds_walk"] = 10
    (r,) = summarize_results(rows, cost_curve(cost))
    extra = cost_curve(cost).refeed_extra
    assert extra == pytest.approx(0.02)
    forwards = 0.1 + 0.005 * 4 + 4 * 0.01 + 0.4 * extra
    assert r["predicted"] == pytest.approx(E * 0.1 / (forwards + A + B * 4))
    assert r["predicted_without_overhead"] == pytest.approx(E * 0.1 / forwards)


def test_engine_settings_blocks_add_the_overhead_and_fixed_g_is_the_decision():
    """core/settings' block costs carry o(d) where the profile measured it: a fixed g policy's S is the decision's
    S_hw(g) with the overhead, point and replicates (the settings module's promise, kept with o(g))."""
    from specterm.core.settings.speedup import FIXED, Policy, block_costs, depth_counts, policy_speedup, stack

    c = cost_dict(True, spread=0.02)
    curve, reps = cost_curve(c), cost_replicates(c, 200, 0)
    costs = block_costs(curve, reps, 16, 0.2)
    assert costs.c_over is not None and costs.c_over[:3] == pytest.approx([A, A + B, A + 2 * B])
    assert costs.rep_over is not None and costs.rep_over.shape == (200, 17)
    assert costs.rep_over[:, 4] == pytest.approx(reps.overhead[:, 3])  # g = 4 is the curve's 4th column
    bits = [np.array([1, 1, 0, 1, 1, 1, 0, 0] * 4, np.uint8) for _ in range(3)]
    s = stack(bits, [None] * 3)
    p = Policy(FIXED, 4)
    got = policy_speedup(s.lengths, depth_counts(s, p), costs, p)
    gammas = np.arange(1, 9)
    E = np.array([set_E(bits, int(g)) for g in gammas])
    d = decision_hw(gammas, E, None, curve)
    assert got.value == pytest.approx(d.curve_hw["S_true"][3])


def set_E(bits, g):
    from specterm.core.streams.blockwalk import walk_table

    t, b = walk_table(bits, np.array([g]))
    return float(t.sum() / b.sum())
