"""`specterm confirm` on a drafter run (SPEC 2b): Hugging Face's own assisted generation with
`prompt_lookup_num_tokens = g` (and `max_matching_ngram_size` of the run's drafter) against Hugging Face's
plain greedy generation, on K stored prompts per corpus, alternating the two, each timed.

Every output is checked against the stored y, and the real decoder's target calls (forward calls of
the target, counted by a pre-hook) against the walk's blocks on that prompt's L_s at g: the decoder is
deterministic, so they must be equal. Realized speedup = greedy seconds / prompt-lookup seconds over
the timed prompts, beside the run's decision S_hw(g) of the corpus (realized / predicted). Stored in
run.json `drafter_confirmations` (the model confirmations' parser and checks stay as they are).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from specterm.core.drafted.walk import walk_loop
from specterm.core.errors import SpectermError
from specterm.core.store import Run, Stream, load_run, model_location, new_meta
from specterm.core.store.meta import drafter_of


@dataclass
class Timed:
    tokens: list[int]
    seconds: float
    calls: int


def _generate(model: Any, ids: list[int], n: int, eos: set[int], g: int | None, ngram: int) -> Timed:
    """HF generate, raw greedy (no processors or warpers); with g: prompt lookup decoding at num_tokens g."""
    import torch
    from transformers import GenerationConfig

    calls = [0]

    def count(*_: Any) -> None:
        calls[0] += 1

    extra: dict[str, Any] = {} if g is None else {"prompt_lookup_num_tokens": g, "max_matching_ngram_size": ngram}
    # GenerationConfig.__init__(**kwargs) is unannotated in transformers: a third-party gap, not ours.
    cfg = GenerationConfig(  # type: ignore[no-untyped-call]
        do_sample=False, num_beams=1, max_new_tokens=n, eos_token_id=sorted(eos),
        pad_token_id=min(eos), temperature=None, top_p=None, top_k=None, repetition_penalty=1.0,
        no_repeat_ngram_size=0, **extra)
    x = torch.tensor([ids])
    hook = model.register_forward_pre_hook(count)
    try:
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=cfg)
            dt = time.perf_counter() - t0
    finally:
        hook.remove()
    return Timed(out[0, len(ids):].tolist(), dt, calls[0])


def pick_streams(run: Run, k: int, corpora: Optional[list[str]]) -> list[Stream]:
    """The first k streams of each corpus (run order) whose gate held everywhere."""
    out: list[Stream] = []
    by: dict[str, int] = {}
    for s in run.streams:
        if corpora and s.corpus not in corpora:
            continue
        if s.gate is not None and s.gate_rate < 1.0:
            continue
        if by.get(s.corpus, 0) < k:
            by[s.corpus] = by.get(s.corpus, 0) + 1
            out.append(s)
    return out


def confirm_drafter_run(path: Path, k: int = 2, gammas: tuple[int, ...] = (2, 4, 8), corpora: Optional[list[str]] = None,
                        target: Optional[str] = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Time HF prompt lookup against HF greedy on k prompts per corpus at every g of `gammas`; check every
    output and target-call count; append the record to run.json `drafter_confirmations`, rewritten after every
    prompt ("complete": false until the last), so Ctrl-C keeps the prompts already timed. Returns it."""
    import torch

    from specterm.engines.confirm_record import write_confirmation_key
    from specterm.engines.torch import models_torch as M

    run = load_run(path)
    draft = drafter_of(run.meta)
    if draft is None:
        raise SpectermError(f"{path} is not a drafter run; `specterm confirm` without --drafter confirms model drafts.")
    if draft.get("kind") != "prompt-lookup":
        raise SpectermError(f"{path} holds the {draft.get('spec')} drafter; the decoder confirmed here is Hugging Face's "
                            "prompt lookup; confirm it with --engine llama.cpp (llama.cpp's own n-gram speculation).")
    ngram = int(draft["max_matching_ngram_size"])
    spec = M.resolve_spec(model_location(run.meta.get("target"), target))
    log(f"loading target {spec.spec}")
    with M.gguf_parsed_once():
        tok = M.load_tokenizer(spec, False)
        model = M.load_model(spec, "cpu", M.resolve_dtype(str(run.meta.get("dtype") or "auto"), "cpu", spec.kind == "gguf"),
                             False)
    eos = M.eos_ids(model, tok)
    streams = pick_streams(run, k, corpora)
    if not streams:
        raise SpectermError(f"{path} has no stream whose gate held; nothing to confirm.")
    rows: list[dict[str, Any]] = []
    head = {"measured_at": new_meta("")["created"], "engine": {"name": "transformers", "version": _hf_version(),
            "torch": torch.__version__, "threads": torch.get_num_threads()},
            "method": "HF generate: prompt_lookup_num_tokens = g against plain greedy, alternating, per prompt",
            "drafter": draft.get("spec"), "gammas": list(gammas)}
    index: int | None = None

    def save(complete: bool) -> dict[str, Any]:
        """The record so far, written after every prompt (Ctrl-C keeps the finished ones; "complete" says so)."""
        nonlocal index
        record = {**head, "prompts": rows, "complete": complete}
        index = write_confirmation_key(path, "drafter_confirmations", record, index)
        return record

    first = streams[0]
    ids0 = tok(first.prompt).input_ids
    _generate(model, ids0, 8, eos, None, ngram)  # untimed warm-up of both paths
    _generate(model, ids0, 8, eos, gammas[0], ngram)
    for s in streams:
        ids = tok(s.prompt).input_ids
        y = s.y.tolist() if s.y is not None else []
        row: dict[str, Any] = {"corpus": s.corpus, "id": s.id, "n": len(y), "spec": {}}
        greedy = _generate(model, ids, len(y), eos, None, ngram)
        row["greedy_s"], row["greedy_calls"], row["greedy_identical"] = greedy.seconds, greedy.calls, greedy.tokens == y
        for g in gammas:
            res = _generate(model, ids, len(y), eos, g, ngram)
            assert s.runs is not None and s.proposed is not None
            _, blocks, drafted = walk_loop(s.runs, s.proposed, g)
            row["spec"][str(g)] = {"s": res.seconds, "target_calls": res.calls, "blocks_walk": blocks,
                                   "drafted_walk": drafted, "identical": res.tokens == y}
            log(f"{s.corpus}/{s.id} g={g}: {res.calls} target calls (walk {blocks}), "
                f"{'identical' if res.tokens == y else 'DIFFERENT'} tokens, {greedy.seconds / res.seconds:.2f}x")
        rows.append(row)
        save(False)
    return save(True)


def _hf_version() -> str:
    from importlib.metadata import version

    return version("transformers")
