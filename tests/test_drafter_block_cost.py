"""The whole block's cost of a drafter run (SPEC 2b with SPEC 6, issues 51 and 54): o(d) = a + b d fitted on the
tokens each block drafted, the drafter decision that adds it (by hand), `specterm costs` on a drafter run (a fake
engine with known time outside the forwards gives a and b back), and the torch decoder with the drafter proposing,
whose blocks and drafted tokens are the walk's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.decide.hardware.overhead import NOT_MEASURED, block_overhead, overhead_record
from specterm.core.drafted.drafter_analysis import analyse_drafter, set_report
from specterm.core.drafted.walk import walk_loop
from specterm.core.errors import SpectermError
from specterm.core.store import Stream, load_run, new_meta, read_meta, write_run

A, B = 0.2, 0.5  # o(d) = 0.2 s + 0.5 s d: large, so that it moves the hand-made decision
DRAFT = {"kind": "prompt-lookup", "spec": "prompt-lookup:2", "max_matching_ngram_size": 2, "max_tokens": 32,
         "eos_token_ids": [2], "source": "test"}


def drafted_samples(a=A, b=B):
    """A drafter's samples: blocks B_i that drafted D_i tokens (d = min(g, m_s) <= g varies by block), the time
    outside exactly a B_i + b D_i."""
    rows = [(1, 10, 6), (4, 8, 20), (8, 6, 30), (8, 7, 28)]
    return [{"gamma": g, "blocks": n, "drafted": d, "outside_s": a * n + b * d} for g, n, d in rows]


def test_a_drafter_fit_reads_the_tokens_each_block_drafted():
    rec = overhead_record(drafted_samples(), "cpu")
    assert rec["a_s"] == pytest.approx(A, rel=1e-12) and rec["b_s"] == pytest.approx(B, rel=1e-12)
    bo = block_overhead({"block_overhead": rec})
    assert bo is not None and bo.at([0, 3])[1] == pytest.approx(A + 3 * B)
    # read at g instead of D / B, the same samples give another line: the drafted length is what the fit uses
    plain = overhead_record([{k: v for k, v in s.items() if k != "drafted"} for s in drafted_samples()], "cpu")
    assert abs(plain["b_s"] - B) > 0.05
    for bad in ([dict(s) for s in drafted_samples()[:3]] + [{"gamma": 2, "blocks": 3, "outside_s": 1.0}],  # drafted in some
                [dict(drafted_samples()[0], drafted=11)] + drafted_samples()[1:],  # more than g per block
                [dict(s, drafted=0) for s in drafted_samples()]):  # one drafted length: no line
        with pytest.raises(SpectermError, match="specterm costs"):
            block_overhead({"block_overhead": {"samples": bad}})


def _hand_stream() -> Stream:
    return Stream(id="a", corpus="c", bits=np.zeros(0, dtype=np.uint8), runs=np.array([2, 0, 0, 1, 0], dtype=np.int32),
                  proposed=np.array([2, 0, 0, 3, 0], dtype=np.int32))


def _hand_cost(with_overhead: bool) -> dict:
    samples = {"decode": [1.0] * 5, "draft": [0.01] * 5, "draft2": [0.01] * 5, "verify:1": [1.2] * 5,
               "verify:2": [1.5] * 5}
    cost = {"c_decode_s": 1.0, "c_draft_s": 0.01, "c_verify_s": {"1": 1.2, "2": 1.5}, "samples_s": samples}
    if with_overhead:
        cost["block_overhead"] = overhead_record(drafted_samples(), "wall")
    return cost


def test_the_drafter_decision_adds_o_of_d_by_hand():
    """S_hw(g) = tokens c_decode / (sum_d n_d (c_verify(d) + o(d)) + blocks c_draft), on one stream by hand:
    g = 1 drafts d = 1, 0, 1 (tokens 5), g = 2 drafts 2, 2 (tokens 5) (test_drafter_store's walk)."""
    with_o = set_report([_hand_stream()], None, 2, _hand_cost(True), 0, 1)
    without = set_report([_hand_stream()], None, 2, _hand_cost(False), 0, 1)
    o = lambda d: A + B * d
    S1 = 5 * 1.0 / (1.2 + 1.0 + 1.2 + 3 * 0.01 + o(1) + o(0) + o(1))
    S2 = 5 * 1.0 / (1.5 + 1.5 + 2 * 0.01 + 2 * o(2))
    assert with_o.yield_curve[0].speedup_hw == pytest.approx(S1, rel=1e-12)
    assert with_o.yield_curve[1].speedup_hw == pytest.approx(S2, rel=1e-12)
    # the overhead moves the choice: without it g = 2 (5 / 3.02), with it g = 1 (S1 > S2)
    assert without.decision_hw.gamma_hw == 2 and without.yield_curve[1].speedup_hw == pytest.approx(5 / 3.02)
    assert with_o.decision_hw.gamma_hw == 1 and with_o.decision_hw.speedup_hw == pytest.approx(S1)
    assert "c_verify(d) + c_draft + o(d)" in with_o.decision_hw.verdict and "o(g) = 200.00 ms + 500.000 ms g" in \
        with_o.decision_hw.verdict and NOT_MEASURED not in with_o.decision_hw.verdict
    assert without.decision_hw.verdict.endswith(NOT_MEASURED) and "o(d)" not in without.decision_hw.verdict
    # the memory-bound reference stays the forwards' alone (c_verify(d) := c_decode, no o)
    assert with_o.yield_curve[1].speedup_mb == without.yield_curve[1].speedup_mb


def test_the_drafter_interval_carries_the_overhead_samples():
    rng = np.random.default_rng(0)
    streams = []
    for i in range(12):
        n = 30
        prop = np.where(rng.random(n) < 0.6, 4, 0).astype(np.int32)
        runs = np.minimum(rng.integers(0, 5, size=n), np.minimum(prop, n - np.arange(n))).astype(np.int32)
        streams.append(Stream(id=f"s{i}", corpus="c", bits=np.zeros(0, dtype=np.uint8), runs=runs, proposed=prop))
    W = np.ones((200, len(streams)))  # prompts fixed: only the costs move
    tight = _hand_cost(True)
    loose = {**tight, "block_overhead": overhead_record(
        [dict(s, outside_s=s["outside_s"] * f) for s in drafted_samples() for f in (0.3, 1.7)], "wall")}
    lo_t, hi_t = set_report(streams, W, 2, tight, 0, 12).decision_hw.speedup_hw_ci
    d = set_report(streams, W, 2, loose, 0, 12).decision_hw
    assert hi_t - lo_t == pytest.approx(0.0, abs=1e-12)
    assert d.speedup_hw_ci[1] - d.speedup_hw_ci[0] > 0.01 and d.speedup_hw_ci[0] <= d.speedup_hw <= d.speedup_hw_ci[1]


def _drafter_streams() -> list[Stream]:
    """Two corpora of ten prompts, y of 40 tokens, the drafter proposing 5 at two starts in three, accepting a
    varying run (deterministic)."""
    out = []
    for c in ("code", "prose"):
        for i in range(10):
            n = 40
            s = np.arange(n)
            prop = np.where(s % 3 != 2, 5, 0).astype(np.int32)
            runs = np.minimum((s + i) % 4, np.minimum(prop, n - s)).astype(np.int32)
            out.append(Stream(id=f"{c}-{i}", corpus=c, bits=np.zeros(0, dtype=np.uint8), prompt=f"w{i} x y z",
                              y=((s * 7 + i) % 50).astype(np.int32), gate=np.ones(n, dtype=np.uint8), stop="length",
                              runs=runs, proposed=prop, prompt_tokens=4))
    return out


def test_specterm_costs_on_a_drafter_run_gives_a_and_b_back(tmp_path, monkeypatch):
    """`specterm costs` on a drafter run, through a fake engine whose whole blocks spend a B + b D outside the
    forwards and the drafter's proposals (B blocks, D drafted tokens, as the walk has them): the profile stores
    o(d) = a + b d with its samples (blocks and drafted = the walk's, the proposals' seconds apart), and the
    drafter decision under it names the block cost."""
    from test_profiles import FakeEngine, FakePair

    from specterm.engines import costs as C
    from specterm.engines.base import BlockTiming

    a, b, per_proposal = 0.004, 0.0015, 0.0003

    class BlockPair(FakePair):
        def block_timed(self, item, gamma, cancel):
            s = item.stream
            _, blocks, drafted = walk_loop(s.runs[: item.n], s.proposed[: item.n], gamma)
            inside = 0.5 * blocks
            drafter = per_proposal * blocks
            whole = inside + drafter + a * blocks + b * drafted
            return BlockTiming(blocks=blocks, wall_s=whole + 1.0, cpu_s=whole, forwards_wall_s=inside + 1.0,
                               forwards_cpu_s=inside, tokens=list(item.y), drafted=drafted, drafter_wall_s=drafter,
                               drafter_cpu_s=drafter)

    class Engine(FakeEngine):
        def open(self, meta, options, report):
            return BlockPair()

    meta = new_meta("pl", target={"spec": "t.gguf", "sha256": "ab" * 32, "vocab_size": 100}, draft=dict(DRAFT),
                    generation={"max_new_tokens": 40, "y_method": "batched greedy"}, device="cpu", dtype="float32")
    path = write_run(tmp_path / "pl", meta, _drafter_streams())
    monkeypatch.setattr(C, "engine_for", lambda meta: Engine())
    monkeypatch.setattr(C.Quiet, "read", lambda self: (0.0, 0.1))
    record = C.measure(C.CostsConfig(run=path, block_tokens=24))
    bo = record["cost"]["block_overhead"]
    assert bo["clock"] == "cpu" and bo["a_s"] == pytest.approx(a) and bo["b_s"] == pytest.approx(b)
    assert len({s["gamma"] for s in bo["samples"]}) >= 3
    for s in bo["samples"]:
        assert s["blocks"] == s["blocks_walk"] and s["drafted"] == s["drafted_walk"] and s["identical"]
        assert s["drafter_s"] == pytest.approx(per_proposal * s["blocks"]) and s["tokens"] == 24
    assert read_meta(path)["profiles"][-1]["cost"]["block_overhead"] == bo
    rep = analyse_drafter([load_run(path)], boot=50)
    verdict = rep.sets["pooled"].decision_hw.verdict
    assert rep.sets["pooled"].decision_hw.profile == record["id"] and "o(d)" in verdict and "4.00 ms" in verdict
    assert "settled" in record["stop_reason"] or "cap" in record["stop_reason"]


def test_a_drafter_run_settles_on_the_verify_costs_its_blocks_read():
    """The stopping rule on a drafter set: S_hw(g) reads c_verify(d) for every d <= g, so g_hw is the drafter
    decision's, and with c_verify(3) timed once the rule is not settled and focuses on every d <= g_hw."""
    from specterm.core.drafted.drafter_analysis import set_walks
    from specterm.core.drafted.drafter_settle import drafter_settle

    class R:
        meta = {"draft": DRAFT}
        streams = _drafter_streams()

    walks = set_walks(R(), np.arange(1, 17), boot=100, seed=0)  # type: ignore[arg-type]
    j = np.linspace(-0.01, 0.01, 5)
    ver = {g: 0.1 + 0.004 * g for g in range(1, 7)}
    samples = {"decode": [0.1 * (1 + x) for x in j], "draft": [1e-4 * (1 + x) for x in j],
               **{f"verify:{g}": [v * (1 + x) for x in j] for g, v in ver.items()}}
    cost = {"c_decode_s": 0.1, "c_draft_s": 1e-4, "c_verify_s": {str(g): v for g, v in ver.items()}, "samples_s": samples,
            "c_draft_per": "block"}
    walk, W = walks["pooled"]
    got = drafter_settle(walk, W, cost)
    rep = set_report(R.streams, None, 4, cost, 0, 10)
    assert got is not None and got.gamma_hw == rep.decision_hw.gamma_hw
    assert got.speedup == pytest.approx(rep.decision_hw.speedup_hw)
    assert got.settled
    once = {**cost, "samples_s": {**samples, "verify:1": samples["verify:1"][:1]}}
    got1 = drafter_settle(walk, W, once)
    assert got1 is not None and not got1.settled and 1 in got1.focus
    assert set(range(1, got1.gamma_hw + 1)) <= set(got1.focus)


def test_costs_by_batch_are_refused_for_a_drafter_run():
    from specterm.engines.drafters import PromptLookup
    from specterm.engines.torch import TorchPair

    with pytest.raises(SpectermError, match="drafter run"):
        TorchPair(None, 1, PromptLookup(max_ngram=2, eos_ids=(2,), max_tokens=32)).batch_costs(None, [], None, None)  # type: ignore[arg-type]


def test_torch_decoder_with_a_drafter_makes_the_walks_blocks(tiny_model_dir: Path, tmp_path: Path):
    """specdec with the drafter proposing (the blocks `specterm costs` times), on a tiny model's drafter runs of
    prompt lookup and ngram-simple:1: at every g its output is the stored y, and its target calls and drafted
    tokens are the walk's on L_s, m_s (with ngram-simple's rule per g), through the engine's own open."""
    from specterm.engines.base import OpenOptions, OracleConfig
    from specterm.engines.confirm import build_items
    from specterm.engines.corpora import load_builtin
    from specterm.engines.costs import block_streams, drafter_walk
    from specterm.engines.torch import TorchEngine
    from specterm.engines.torch.drafted_run import run_drafters

    prompts = load_builtin(["grounded", "code"], limit=2)
    cfg = OracleConfig(target=str(tiny_model_dir), draft="", prompts=prompts, out=tmp_path / "pl", max_new_tokens=40,
                       measure_cost=False, device="cpu", dtype="float32")
    outs = run_drafters(cfg, ["prompt-lookup", "ngram-simple:1"])
    for out in outs:
        run = load_run(out)
        pair = TorchEngine().open(run.meta, OpenOptions(target=str(tiny_model_dir), threads=1), lambda p: None)
        walk = drafter_walk(run)
        assert walk is not None
        items = build_items(block_streams(run, 2, 40), pair.encode, 40, np.array([1, 3, 8]))
        drafted_any = 0
        for it in items:
            for g in (1, 3, 8):
                t = pair.block_timed(it, g, None)
                blocks, drafted = walk(it.stream, it.n, g)
                assert t.tokens == it.y and t.blocks == blocks and t.drafted == drafted
                assert t.drafter_wall_s > 0 and 0 < t.wall_s - t.forwards_wall_s - t.drafter_wall_s < t.wall_s
                drafted_any += drafted
        assert drafted_any > 0  # the drafter proposed: the check is not vacuous
