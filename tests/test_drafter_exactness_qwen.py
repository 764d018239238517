"""The shipped Qwen prompt-lookup run (streams/qwen2.5-coder-1.5b-prompt-lookup) against Hugging Face's
assisted generation with prompt_lookup_num_tokens = g: on stored prompts, HF's output equals the stored
y and its target calls equal the walk's, at g = 2, 4, 8 (the first N_NEW tokens of y: the walk on the
first N_NEW starts, L_s cut at N_NEW - s). Slow: loads the 1.5B target (GGUF under $SPECTERM_MODELS,
./models or /work/models)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.drafted.walk import walk_loop
from specterm.core.store import load_run

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("qwen")]

RUN = Path(__file__).resolve().parent.parent / "streams" / "qwen2.5-coder-1.5b-prompt-lookup"
N_NEW = 48


@pytest.fixture(scope="module")
def qwen():
    from specterm.core.errors import SpectermError
    from specterm.core.store import model_location
    from specterm.engines.torch import models_torch as M

    if not (RUN / "run.json").exists():
        pytest.skip("the shipped prompt-lookup run is not in streams/")
    run = load_run(RUN)
    try:
        path = model_location(run.meta["target"], search=[Path("models"), Path("/work/models")])
    except SpectermError as exc:
        pytest.skip(str(exc))
    spec = M.resolve_spec(path)
    with M.gguf_parsed_once():
        tok = M.load_tokenizer(spec, False)
        model = M.load_model(spec, "cpu", M.resolve_dtype("float32", "cpu", True), False)
    return run, model, tok, M.eos_ids(model, tok)


@pytest.mark.parametrize("gamma", [2, 4, 8])
def test_hf_prompt_lookup_calls_equal_the_walk_on_qwen(qwen, gamma):
    from specterm.engines.torch.drafted_confirm import _generate

    run, model, tok, eos = qwen
    ngram = int(run.meta["draft"]["max_matching_ngram_size"])
    picked = [next(s for s in run.streams if s.corpus == c) for c in ("grounded", "code")]
    for s in picked:
        n = min(N_NEW, s.n)
        res = _generate(model, tok(s.prompt).input_ids, n, eos, gamma, ngram)
        assert res.tokens == s.y[:n].tolist()
        runs = np.minimum(s.runs[:n], n - np.arange(n))
        assert res.calls == walk_loop(runs, s.proposed[:n], gamma)[1], s.id
