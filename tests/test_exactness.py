"""End to end on the real SmolLM2-135M GGUF (layer-skip self-draft of its first 25 of 30 layers):
the oracle's stream predicts a real speculative decoder exactly, for every draft length and policy."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from specterm.core.decide import replay
from specterm.engines.torch import specdec
from specterm.core.streams.blockwalk import block_accepts, block_counts
from specterm.engines.corpora import load_builtin
from specterm.engines.base import OracleConfig
from specterm.engines.oracle import run_oracle
from specterm.engines.torch import TorchPair
from specterm.core.store import load_run

# loads the real SmolLM2-135M checkpoint; `pytest -m "not slow"` skips it. Under pytest-xdist the module runs on
# one worker (conftest: --dist loadgroup), so its module-scoped `smol_run` is made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exactness")]

N_NEW = 32


@pytest.fixture(scope="module")
def smol_run(smollm2_pair, tmp_path_factory):
    pair, path = smollm2_pair
    prompts = load_builtin(["code", "prose"], limit=1)
    out = tmp_path_factory.mktemp("smol") / "run"
    cfg = OracleConfig(target=str(path), draft="layers:25", prompts=prompts, out=out, max_new_tokens=N_NEW,
                       batch_size=2, measure_cost=False, spec_gamma=4)
    run_oracle(cfg, pair=TorchPair(pair))
    return load_run(out)


def _ids(pair, stream):
    return pair.tokenizer(stream.prompt).input_ids


def test_gate_is_one_and_y_is_plain_greedy(smollm2_pair, smol_run):
    pair, _ = smollm2_pair
    assert len(smol_run.streams) == 2
    for s in smol_run.streams:
        assert s.gate_rate == 1.0
        y = specdec.greedy_generate(pair.target, _ids(pair, s), N_NEW, pair.eos)
        assert y == s.y.tolist()
    # the stream is informative: neither all accepted nor all rejected
    alpha = np.concatenate([s.bits for s in smol_run.streams]).mean()
    assert 0.1 < alpha < 0.99


def test_a_t_matches_an_independent_per_position_check(smollm2_pair, smol_run):
    pair, _ = smollm2_pair
    s = smol_run.streams[0]
    p, y = _ids(pair, s), s.y.tolist()
    expect = []
    for t in range(len(y)):
        logits = pair.draft(input_ids=torch.tensor([p + y[:t]])).logits[0, -1]
        expect.append(int(int(torch.argmax(logits)) == y[t]))
    assert s.bits.tolist() == expect


@pytest.mark.parametrize("gamma", [1, 3, 5, 8])
def test_speculative_decoder_matches_the_block_walk(smollm2_pair, smol_run, gamma):
    pair, _ = smollm2_pair
    for s in smol_run.streams:
        res = specdec.speculative_generate(pair.target, pair.draft, _ids(pair, s), N_NEW, pair.eos,
                                           specdec.FixedGamma(gamma))
        assert res.tokens == s.y.tolist()
        tokens, blocks, drafted = block_counts(s.a, gamma)
        assert res.target_calls == int(blocks)
        assert res.accepts == block_accepts(s.a, gamma).tolist()
        assert sum(res.drafts) == int(drafted)


@pytest.mark.parametrize("g0", [3])
def test_heuristic_replay_equals_the_real_decoder(smollm2_pair, smol_run, g0):
    pair, _ = smollm2_pair
    for s in smol_run.streams:
        res = specdec.speculative_generate(pair.target, pair.draft, _ids(pair, s), N_NEW, pair.eos,
                                           specdec.HeuristicSchedule(g0))
        rep = replay.replay_heuristic(s.a, g0=g0)
        assert res.tokens == s.y.tolist()
        assert res.target_calls == rep.blocks
        assert res.accepts == rep.accepts.tolist()
        assert res.drafts == rep.drafts.tolist()


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_confidence_stop_replay_equals_the_real_decoder(smollm2_pair, smol_run, tau):
    pair, _ = smollm2_pair
    for s in smol_run.streams:
        res = specdec.speculative_generate(pair.target, pair.draft, _ids(pair, s), N_NEW, pair.eos,
                                           specdec.ConfidenceStop(tau, 6))
        rep = replay.replay_confidence(s.a, s.draft_conf[: s.valid_len], tau, g_max=6)
        assert res.tokens == s.y.tolist()
        assert res.target_calls == rep.blocks
        assert res.accepts == rep.accepts.tolist()


def test_clairvoyant_and_fixed_replays_equal_the_decoder_counts(smollm2_pair, smol_run):
    pair, _ = smollm2_pair
    s = smol_run.streams[1]
    res = specdec.speculative_generate(pair.target, pair.draft, _ids(pair, s), N_NEW, pair.eos, specdec.FixedGamma(3))
    rep = replay.replay_fixed(s.a, 3)
    assert (res.target_calls, res.accepts) == (rep.blocks, rep.accepts.tolist())
