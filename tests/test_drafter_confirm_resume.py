"""Hugging Face prompt-lookup confirmation keeps finished work (the brief: Ctrl-C never loses it): the record
is rewritten after every prompt, "complete": false until the last. The model, tokenizer and generate are
fakes (what is timed does not matter here; tests/test_drafter_exactness.py runs the real one)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_ngram_confirm import _ngram_run

from specterm.core.store import load_run


def test_ctrl_c_keeps_the_prompts_already_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specterm.engines.torch import drafted_confirm as DC
    from specterm.engines.torch import models_torch as M

    path = _ngram_run(tmp_path, draft={"kind": "prompt-lookup", "spec": "prompt-lookup:2", "max_matching_ngram_size": 2,
                                       "max_tokens": 32})
    run = load_run(path)
    ys = {s.prompt: s.y.tolist() for s in run.streams}
    monkeypatch.setattr(M, "resolve_spec", lambda loc: SimpleNamespace(spec="t.gguf", kind="gguf"))
    monkeypatch.setattr(M, "gguf_parsed_once", contextlib.nullcontext)
    monkeypatch.setattr(M, "load_tokenizer", lambda spec, trust: lambda text: SimpleNamespace(input_ids=[len(text)]))
    monkeypatch.setattr(M, "load_model", lambda *a: object())
    monkeypatch.setattr(M, "resolve_dtype", lambda *a: "float32")
    monkeypatch.setattr(M, "eos_ids", lambda model, tok: {0})
    monkeypatch.setattr(DC, "model_location", lambda entry, override: "t.gguf")
    by_len = {len(p): y for p, y in ys.items()}
    generated = []

    def fake_generate(model, ids, n, eos, g, ngram):
        generated.append(g)
        if len(generated) == 2 + 3 + 2:  # warm-up (2), the first prompt (greedy + 2 g), then the second's greedy
            raise KeyboardInterrupt
        return DC.Timed(by_len[ids[0]][:n], 1.0 if g is None else 0.5, n)

    monkeypatch.setattr(DC, "_generate", fake_generate)
    with pytest.raises(KeyboardInterrupt):
        DC.confirm_drafter_run(path, k=2, gammas=(2, 4), log=lambda m: None)
    (kept,) = load_run(path).meta["drafter_confirmations"]
    assert kept["complete"] is False and len(kept["prompts"]) == 1
    assert set(kept["prompts"][0]["spec"]) == {"2", "4"} and kept["prompts"][0]["greedy_identical"]
    generated.clear()
    generated.extend([None] * 100)  # no more interruptions
    rec = DC.confirm_drafter_run(path, k=2, gammas=(2, 4), log=lambda m: None)
    stored = load_run(path).meta["drafter_confirmations"]
    assert len(stored) == 2 and stored[1]["complete"] is True and stored[1]["prompts"] == rec["prompts"]
    assert len(rec["prompts"]) == len(run.streams)
