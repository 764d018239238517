"""Drafters without a draft model against the decoder that ships them (SPEC 2b): on the real SmolLM2-135M
GGUF, `specterm run --draft prompt-lookup` (the drafter oracle, no draft model) stores L_s along the
target's greedy y, and Hugging Face's assisted generation with prompt_lookup_num_tokens = g emits y
with exactly the walk's target calls, at g = 2, 4, 8, on every prompt."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.drafted.walk import walk_loop
from specterm.core.store import load_run
from specterm.engines.torch import specdec
from specterm.engines.corpora import load_builtin

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("exactness")]

N_NEW = 40


@pytest.fixture(scope="module")
def drafter_runs(smollm2_pair, tmp_path_factory):
    from specterm.engines.torch.drafted_run import TargetOnly, run_drafters
    from specterm.engines.base import OracleConfig

    pair, path = smollm2_pair
    target = TargetOnly(pair.target, pair.tokenizer, pair.eos, {k: v for k, v in pair.meta.items() if k != "draft"})
    prompts = load_builtin(["grounded"], limit=4) + load_builtin(["code"], limit=2)
    out = tmp_path_factory.mktemp("drafters") / "pl"
    cfg = OracleConfig(target=str(path), draft="prompt-lookup:2", prompts=prompts, out=out, max_new_tokens=N_NEW,
                       batch_size=3, measure_cost=False)
    paths = run_drafters(cfg, ["prompt-lookup:2", "prompt-lookup:3", "ngram-simple:2"], pair=target)
    return [load_run(p) for p in paths]


def _ids(pair, stream):
    return pair.tokenizer(stream.prompt).input_ids


def test_y_is_greedy_and_the_gate_holds(smollm2_pair, drafter_runs):
    pair, _ = smollm2_pair
    first = drafter_runs[0]
    assert len(first.streams) == 6
    found = 0
    for s in first.streams:
        assert s.gate_rate == 1.0
        assert specdec.greedy_generate(pair.target, _ids(pair, s), N_NEW, pair.eos) == s.y.tolist()
        found += int(s.runs.sum() > 0)
    assert found >= 3  # the grounded prompts give prompt lookup something to find
    for run in drafter_runs[1:]:  # one y for every drafter
        assert [s.y.tolist() for s in run.streams] == [s.y.tolist() for s in first.streams]


def _hf_prompt_lookup(model, ids, g: int, ngram: int, eos: set[int]) -> tuple[list[int], int]:
    """HF assisted generation with prompt lookup (raw greedy, no processors): (new tokens, target calls)."""
    import torch
    from transformers import GenerationConfig

    calls = [0]
    hook = model.register_forward_pre_hook(lambda *a, **k: calls.__setitem__(0, calls[0] + 1))
    try:
        cfg = GenerationConfig(do_sample=False, max_new_tokens=N_NEW, prompt_lookup_num_tokens=g,
                               max_matching_ngram_size=ngram, eos_token_id=sorted(eos), pad_token_id=min(eos),
                               num_beams=1, temperature=None, top_p=None, top_k=None, repetition_penalty=1.0,
                               no_repeat_ngram_size=0)
        x = torch.tensor([ids])
        out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=cfg)
    finally:
        hook.remove()
    return out[0, len(ids):].tolist(), calls[0]


@pytest.mark.parametrize("gamma", [2, 4, 8])
@pytest.mark.parametrize("which", [0, 1])
def test_hf_prompt_lookup_target_calls_equal_the_walk(smollm2_pair, drafter_runs, gamma, which):
    pair, _ = smollm2_pair
    run = drafter_runs[which]
    ngram = int(run.meta["draft"]["max_matching_ngram_size"])
    for s in run.streams:
        tokens, calls = _hf_prompt_lookup(pair.target, _ids(pair, s), gamma, ngram, pair.eos)
        assert tokens == s.y.tolist()
        _, blocks, _ = walk_loop(s.runs, s.proposed, gamma)
        assert calls == blocks, (s.id, calls, blocks)


def test_the_walk_saves_target_calls_on_grounded_prompts(drafter_runs):
    run = drafter_runs[0]
    grounded = [s for s in run.streams if s.corpus == "grounded"]
    blocks = sum(walk_loop(s.runs, s.proposed, 8)[1] for s in grounded)
    assert blocks < sum(s.n for s in grounded)  # fewer target calls than tokens: something was accepted
    assert np.all([s.runs.max() <= 32 for s in grounded])


def test_specterm_confirm_on_a_prompt_lookup_run(smollm2_pair, drafter_runs, monkeypatch):
    """`specterm confirm` on the drafter run: HF prompt lookup against HF greedy at g = 2, 4, 8; the record
    holds every prompt's target calls equal to the walk's, and the drafter report shows it."""
    from specterm.core.drafted.drafter_analysis import analyse_drafter
    from specterm.engines.torch.drafted_confirm import confirm_drafter_run

    _, path = smollm2_pair
    run = drafter_runs[0]
    record = confirm_drafter_run(run.path, k=1, gammas=(2, 4, 8), target=str(path), log=lambda m: None)
    assert len(record["prompts"]) == 2  # one per corpus
    for p in record["prompts"]:
        assert p["greedy_identical"]
        for r in p["spec"].values():
            assert r["identical"] and r["target_calls"] == r["blocks_walk"]
    rep = analyse_drafter([load_run(run.path)], boot=0)
    rows = rep.sets["pooled"].confirmed
    assert [c.gamma for c in rows] == [2, 4, 8]
    assert all(c.identical and c.target_calls == c.blocks_walk and c.realized for c in rows)
