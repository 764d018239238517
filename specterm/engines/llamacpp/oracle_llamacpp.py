"""The exact greedy oracle in llama.cpp (SPEC 1, `specterm run --backend llama.cpp`).

For each prompt (encoded as llama.cpp's examples do, `models.PROMPT_ENCODING`):

1. y = llama.cpp's raw-argmax greedy continuation of the target: the prompt in one decode, then one
   1-token decode per token, the next token the argmax of the returned logits (no sampler chain at
   all, so no temperature, penalties or top-k); stop at an end-of-generation token
   (llama_vocab_is_eog, where llama.cpp's own decoders stop) or max_new_tokens.
2. Both models teacher-forced over prompt + y[:-1], one llama.cpp decode each with the logit rows
   of positions len(prompt)-1 .. len(prompt)+n-2 kept.
3. From those logits (`stream_columns`, float64): a_t, gate_t, draft_argmax_t, the top-1
   probabilities and beta_t = sum_v min(p_t(v), q_t(v)), clamped to [0, 1].

The gate compares the batched teacher-forced argmax with y built by serial 1-token decodes: llama.cpp's
kernels do not give bit-identical logits for a row computed in a batch of many and alone, so a
near-tie can flip and the gate can fall below 1.000. SPEC 1.3's repair loop (engines/repair.py) then
makes y the target's greedy continuation as its teacher-forced pass sees it: at the first failure
take the teacher-forced token, regenerate the rest serially (the prompt and the kept prefix in one
decode, then 1-token decodes, as step 1 treats a prompt), teacher-force again, up to REPAIR_BOUND
repairs; the stream stores its flipped positions (`repairs`) and positions that still fail are
excluded one by one (Stream.kept).

`--resume` on a run whose streams carry no repair information (written before the loop) repairs
them in place first (`repair_stored`): the stored y is teacher-forced again on this machine and
repaired from its first failure (the prefix before it is kept, nothing is generated again when the
gate holds), each stream's record rewritten atomically as soon as it is done.

Streams go through the same writer as the torch backend (RunWriter: resume, lock, checksums).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled, Progress, ProgressCallback, check_cancel
from specterm.core.store import RunWriter, Stream, load_run, new_meta, public_model
from specterm.engines.llamacpp import models_llamacpp as LM
from specterm.engines.repair import REPAIR_BOUND, REPAIR_RULE, Repaired, repair_greedy

POSITION_CHUNK = 32  # rows per float64 softmax chunk: 32 x 152k x 8 B x 2 ~ 78 MB
CONTEXT_MARGIN = 24  # room for the cost measurement: context + a (g+1)-token verification, g <= 16
DECODING = "raw-argmax greedy on llama.cpp logits (no sampler chain)"
Y_METHOD = "llama.cpp serial greedy"


def stream_columns(target_logits: np.ndarray, draft_logits: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Per position t = 0..n-1 from the teacher-forced logits (row t predicts y[t]; n x V each):

        bits_t = [argmax q_t == y_t]      gate_t = [argmax p_t == y_t]      draft_argmax_t = argmax q_t
        draft_conf_t = max_v q_t(v)       target_conf_t = max_v p_t(v)
        beta_t = clip(sum_v min(p_t(v), q_t(v)), 0, 1)

    p = softmax of the target's logits, q = the draft's, both in float64 over the shared first
    V = min(V_target, V_draft) ids (vocabulary padding beyond that is ignored). The clip removes
    rounding (a sum of 150k terms can land an ulp above 1), so the stored float32 stays in [0, 1].
    Ties in argmax go to the lowest id (numpy), as llama.cpp's greedy sampler does.
    """
    y = np.asarray(y, dtype=np.int64)
    n = y.size
    if target_logits.shape[0] != n or draft_logits.shape[0] != n:
        raise ValueError("one logits row per token of y is needed")
    V = min(target_logits.shape[1], draft_logits.shape[1])
    out = {k: np.empty(n, dtype=np.float64) for k in ("draft_conf", "target_conf", "beta")}
    t_arg = np.empty(n, dtype=np.int64)
    d_arg = np.empty(n, dtype=np.int64)
    for c0 in range(0, n, POSITION_CHUNK):
        c1 = min(n, c0 + POSITION_CHUNK)
        lt = np.asarray(target_logits[c0:c1, :V], dtype=np.float64)
        ld = np.asarray(draft_logits[c0:c1, :V], dtype=np.float64)
        pt = np.exp(lt - lt.max(axis=1, keepdims=True))
        pt /= pt.sum(axis=1, keepdims=True)
        pd = np.exp(ld - ld.max(axis=1, keepdims=True))
        pd /= pd.sum(axis=1, keepdims=True)
        t_arg[c0:c1] = lt.argmax(axis=1)
        d_arg[c0:c1] = ld.argmax(axis=1)
        out["target_conf"][c0:c1] = pt.max(axis=1)
        out["draft_conf"][c0:c1] = pd.max(axis=1)
        out["beta"][c0:c1] = np.minimum(pt, pd).sum(axis=1)
    out["beta"] = np.clip(out["beta"], 0.0, 1.0)
    return {
        "bits": (d_arg == y).astype(np.uint8),
        "gate": (t_arg == y).astype(np.uint8),
        "draft_argmax": d_arg.astype(np.int32),
        **{k: v.astype(np.float32) for k, v in out.items()},
    }


def greedy_generate(model: LM.GGUFModel, prompt_ids: list[int], max_new_tokens: int, eog: set[int],
                    on_token=None, cancel: threading.Event | None = None) -> list[int]:
    """Raw-argmax greedy decoding in llama.cpp (see the module docstring, step 1): the context in one
    decode, then one 1-token decode per token, at most `max_new_tokens` tokens."""
    model.clear(0)
    logits = model.decode(prompt_ids, 0)
    out: list[int] = []
    n_past = len(prompt_ids)
    while True:
        tok = int(np.argmax(logits[-1]))
        out.append(tok)
        if on_token is not None:
            on_token(len(out))
        if tok in eog or len(out) >= max_new_tokens:
            return out
        check_cancel(cancel)
        logits = model.decode([tok], n_past)
        n_past += 1


def teacher_force_logits(model: LM.GGUFModel, prompt_ids: list[int], y: list[int]) -> np.ndarray:
    """Logits (n x V) of one decode of prompt + y[:-1]: row t is what the model predicts for y[t]."""
    model.clear(0)
    seq = list(prompt_ids) + list(y[:-1])
    first = len(prompt_ids) - 1
    return model.decode(seq, 0, rows=range(first, first + len(y)))


def continue_greedy(model: LM.GGUFModel, prompt_ids: list[int], prefix: list[int], max_new_tokens: int,
                    eog: set[int], cancel: threading.Event | None = None) -> list[int]:
    """The serial greedy continuation of y after `prefix` (the repair loop's regenerate): nothing when
    the prefix ends in an end-of-generation token or holds max_new_tokens tokens, else greedy_generate
    from prompt + prefix for the tokens left."""
    if not prefix or prefix[-1] in eog or len(prefix) >= max_new_tokens:
        return []
    return greedy_generate(model, list(prompt_ids) + list(prefix), max_new_tokens - len(prefix), eog, cancel=cancel)


class _TargetPass:
    """teacher_argmax of the repair loop: the target's teacher-forced argmax over the ids both models
    share (as stream_columns compares them), keeping the logits of the last y for its columns."""

    def __init__(self, pair: LlamaPair, prompt_ids: list[int]):
        self.pair, self.prompt_ids = pair, prompt_ids
        self.vocab = min(pair.target.n_vocab, pair.draft.n_vocab)
        self.y: list[int] | None = None
        self.logits: np.ndarray | None = None

    def __call__(self, y: list[int]) -> np.ndarray:
        self.y, self.logits = list(y), teacher_force_logits(self.pair.target, self.prompt_ids, y)
        return self.logits[:, : self.vocab].argmax(axis=1)

    def logits_of(self, y: list[int]) -> np.ndarray:
        """The target's teacher-forced logits of `y` (those of the last pass when it was this y)."""
        if self.logits is None or self.y != list(y):
            self(y)
        assert self.logits is not None
        return self.logits


def repaired_stream(pair: LlamaPair, prompt: Any, prompt_ids: list[int], y: list[int], max_new_tokens: int,
                    pieces: Any, cancel: threading.Event | None = None,
                    on_repair=None, bound: int = REPAIR_BOUND) -> tuple[Stream, Repaired]:
    """The stream of `prompt` from its serial greedy y: the repair loop (engines/repair.py) on the target,
    then the draft teacher-forced on the final y and every column from the two passes (stream_columns)."""
    from specterm.engines.torch.oracle_torch import decode_pieces

    tpass = _TargetPass(pair, prompt_ids)
    rep = repair_greedy(y, tpass, lambda prefix: continue_greedy(pair.target, prompt_ids, prefix, max_new_tokens,
                                                                  pair.eog, cancel),
                        bound=bound, on_repair=on_repair)
    check_cancel(cancel)
    cols: dict[str, Any] = stream_columns(tpass.logits_of(rep.y), teacher_force_logits(pair.draft, prompt_ids, rep.y),
                                          np.asarray(rep.y))
    if not np.array_equal(cols["gate"], rep.gate):  # the same logits and the same argmax rule: cannot differ
        raise SpectermError(f"prompt {prompt.id!r}: the gate of the repaired stream changed between two reads of "
                            "the same logits; report this as a bug.")
    text, ends = decode_pieces(pieces, rep.y)
    stream = Stream(id=prompt.id, corpus=prompt.corpus, prompt=prompt.text, y=np.asarray(rep.y, dtype=np.int32),
                    text=text, piece_ends=ends, stop="eos" if rep.y and rep.y[-1] in pair.eog else "length",
                    repairs=rep.flips, **cols)
    return stream, rep


class _PieceDecoder:
    """`tokenizer.decode` as specterm.engines.torch.oracle_torch.decode_pieces calls it, from llama.cpp's detokenizer."""

    def __init__(self, model: LM.GGUFModel):
        self.model = model

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False) -> str:
        return self.model.llm.detokenize(list(ids), special=True).decode("utf-8", "replace")


@dataclass
class LlamaPair:
    target: LM.GGUFModel
    draft: LM.GGUFModel
    eog: set[int]
    meta: dict[str, Any]


def context_size(prompt_lens: list[int], max_new_tokens: int) -> int:
    """n_ctx for a run: the longest prompt + max_new_tokens + a margin, rounded up to 64."""
    need = max(prompt_lens) + max_new_tokens + CONTEXT_MARGIN
    return int(-(-need // 64) * 64)


def load_llama_pair(target: str, draft: str, threads: int, n_ctx: int,
                    report: ProgressCallback = lambda p: None) -> LlamaPair:
    """Resolve both GGUF files, check the vocabularies (vocab-only loads, before any model work),
    then load both models."""
    from specterm.engines.torch import models_torch as M

    t_spec, d_spec = M.resolve_spec(target), M.resolve_spec(draft)
    for flag, spec in (("--target", t_spec), ("--draft", d_spec)):
        if spec.kind != "gguf":
            raise SpectermError(f"--backend llama.cpp needs GGUF files; {flag} {spec.spec} is not a .gguf file.")
    t_path, d_path = LM.gguf_path(t_spec), LM.gguf_path(d_spec)
    report(Progress("checking", "comparing the tokenizers in llama.cpp"))
    LM.check_vocabularies(LM.load_gguf(t_path, 64, threads, vocab_only=True),
                          LM.load_gguf(d_path, 64, threads, vocab_only=True))
    report(Progress("checking", "a first test decode of each model in a child process (llama.cpp kernels run here?)"))
    LM.probe_decode(t_path)
    LM.probe_decode(d_path)
    report(Progress("loading", f"loading target {target} in llama.cpp"))
    tgt = LM.load_gguf(t_path, n_ctx, threads)
    report(Progress("loading", f"loading draft {draft} in llama.cpp"))
    dft = LM.load_gguf(d_path, n_ctx, threads)
    meta = {
        "target": {**t_spec.describe(), "class": "llama.cpp", "layers": tgt.layers(), "vocab_size": tgt.n_vocab},
        "draft": {**d_spec.describe(), "class": "llama.cpp", "layers": dft.layers(), "vocab_size": dft.n_vocab},
        "tokenizer_vocab": tgt.n_vocab,
        "device": "cpu",
        "dtype": "gguf",
        "backend": LM.engine_info(threads),
    }
    return LlamaPair(tgt, dft, LM.eog_ids(tgt), meta)


def run_oracle_llamacpp(config, on_progress: ProgressCallback | None = None,
                        cancel: threading.Event | None = None, threads: int = 1,
                        pair: LlamaPair | None = None) -> Path:
    """`run_oracle` in llama.cpp: same config (specterm.engines.torch.oracle_torch.OracleConfig), same writer, same
    progress, same resume; batch_size and spec_gamma do not apply (y is serial greedy)."""
    from specterm.engines.torch.oracle_torch import _prompts_to_run, _Tally

    report = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    prompts = _prompts_to_run(config)
    if config.spec_gamma:
        raise SpectermError("--spec-gamma is not used with --backend llama.cpp (y is llama.cpp's serial greedy); drop it.")
    stored = _streams_to_repair(config)
    if pair is None:
        probe = LM.load_gguf(_gguf_path(config.target), 64, threads, vocab_only=True)
        lens = [len(probe.tokenize(text)) for text in [p.text for p in prompts] + [str(s.prompt) for s in stored]]
        if min(lens) == 0:
            raise SpectermError("a prompt encodes to zero tokens; remove it or give it some text.")
        pair = load_llama_pair(config.target, config.draft, threads, context_size(lens, config.max_new_tokens), report)
    check_cancel(cancel)
    meta = new_meta(
        config.out.name,
        **pair.meta,
        generation={
            "decoding": DECODING,
            "max_new_tokens": config.max_new_tokens,
            "y_built_with": "llama.cpp serial greedy (one 1-token decode per token)",
            "eos_token_ids": sorted(pair.eog),
            "y_method": Y_METHOD,
            "prompt_encoding": LM.PROMPT_ENCODING,
            "teacher_forcing": "one llama.cpp decode of prompt + y[:-1] per model (n_batch = n_ubatch = n_ctx)",
            "repair": REPAIR_RULE,
        },
        shard=list(config.shard) if config.shard else None,
        **config.extra_meta,
    )
    for key in ("target", "draft"):
        meta[key] = public_model(meta[key], config.record_paths)
    writer = RunWriter(config.out, meta, resume=config.resume)
    with writer:
        todo = [p for p in prompts if (p.corpus, p.id) not in writer.done]
        tally = _Tally(report, len(todo), config.max_new_tokens, t_start=t_start)
        for line in writer.warnings:  # what reopening the run mended or swept, said once
            tally.emit("warning", line)
        writer.update_meta(sessions=list(writer.meta.get("sessions") or []) + [{
            "started": meta["created"], "prompts": len(todo), "y_built_with": meta["generation"]["y_built_with"],
            "backend": "llama.cpp", "llama_threads": threads, "device": "cpu",
            "load_avg": list(_loadavg()),
        }])
        if (writer.meta.get("generation") or {}).get("repair") != REPAIR_RULE:  # a run from before the loop, resumed
            writer.update_meta(generation={**(writer.meta.get("generation") or {}), "repair": REPAIR_RULE})
        pieces = _PieceDecoder(pair.target)
        repaired = repair_stored(pair, writer, stored, config.max_new_tokens, pieces, tally, cancel) if stored else None
        _measure_cost(config, pair, writer, prompts[0], tally, cancel, threads)
        for idx, prompt in enumerate(todo):
            ids = pair.target.tokenize(prompt.text)
            if not ids:
                raise SpectermError(f"prompt {prompt.id!r} ({prompt.corpus}) encodes to zero tokens; remove it or give it some text.")
            where: dict[str, Any] = {"prompt_index": idx, "prompt_id": prompt.id, "corpus": prompt.corpus}
            tally.emit("generating", f"prompt {idx + 1}/{tally.n_todo}: {prompt.corpus}/{prompt.id}", **where)
            t0 = time.perf_counter()
            tok_before = tally.gen_tokens

            def on_token(k, t0=t0, tok_before=tok_before, where=where):
                tally.gen_tokens = tok_before + k
                tally.emit("generating", tokens=k, gen_extra=time.perf_counter() - t0, **where)

            try:
                y = greedy_generate(pair.target, ids, config.max_new_tokens, pair.eog, on_token=on_token, cancel=cancel)
            except Cancelled:
                tally.emit("cancelled", f"cancelled: {tally.done} prompt(s) saved in {config.out}")
                raise
            tally.gen_time += time.perf_counter() - t0
            tally.emit("teacher-forcing", f"teacher-forcing {prompt.id}", **where)

            def on_repair(k, t, where=where, prompt=prompt):
                tally.emit("repairing", f"{prompt.id}: repair {k} at t = {t} (the gate failed there)", **where)

            try:
                stream, _ = repaired_stream(pair, prompt, ids, y, config.max_new_tokens, pieces, cancel, on_repair)
            except Cancelled:
                tally.emit("cancelled", f"cancelled: {tally.done} prompt(s) saved in {config.out}")
                raise
            writer.append(stream)
            tally.saved(stream)
            tally.emit("saved", f"saved {prompt.id}", tokens=len(y), bits="".join(map(str, stream.bits.tolist())), **where)
    tally.emit("done", f"{tally.done} new prompt(s) saved in {config.out}" + (
        f"; {repaired['streams']} stored prompt(s) repaired in place ({repaired['repairs']} repair(s) in "
        f"{repaired['changed']} stream(s), {repaired['excluded']} position(s) still excluded)" if repaired else ""))
    return config.out


def _streams_to_repair(config) -> list[Stream]:
    """With --resume on an existing run: its stored streams that carry no repair information (written
    before the repair loop), in stored order; each needs its prompt text and y."""
    from specterm.core.store import META_FILE

    if not (config.resume and (config.out / META_FILE).is_file()):
        return []
    streams = [s for s in load_run(config.out).streams if s.repairs is None]
    for s in streams:
        if s.prompt is None or s.y is None:
            raise SpectermError(f"prompt {s.id!r} ({s.corpus}) in {config.out} stores no prompt text or y, so it cannot "
                                "be repaired; this run was not made by `specterm run --backend llama.cpp`.")
    return streams


def repair_stored(pair: LlamaPair, writer: RunWriter, streams: list[Stream], max_new_tokens: int, pieces: Any,
                  tally: Any, cancel: threading.Event | None = None) -> dict[str, Any]:
    """Repair stored streams in place (module docstring): per stream, its stored y teacher-forced on
    this machine and repaired from its first failure (repaired_stream), its record replaced at once
    (RunWriter.replace: atomic, so Ctrl-C keeps every finished stream); this session's entry in
    run.json's `sessions` says what was repaired and on which machine. Returns that summary."""
    from specterm.core.decide.machine import this_machine
    from specterm.engines.corpora import Prompt

    summary: dict[str, Any] = {"streams": 0, "of": len(streams), "changed": 0, "repairs": 0, "excluded": 0,
                               "positions": 0, "bound": REPAIR_BOUND, "machine": this_machine().key()}
    sessions = list(writer.meta.get("sessions") or [])
    for idx, old in enumerate(streams):
        check_cancel(cancel)
        where: dict[str, Any] = {"prompt_index": idx, "prompt_id": old.id, "corpus": old.corpus}
        tally.emit("repairing", f"repairing stored prompt {idx + 1}/{len(streams)}: {old.corpus}/{old.id}", **where)

        def on_repair(k, t, where=where, old=old):
            tally.emit("repairing", f"{old.id}: repair {k} at t = {t} (the gate failed there)", **where)

        ids = pair.target.tokenize(str(old.prompt))
        assert old.y is not None
        try:
            stream, rep = repaired_stream(pair, Prompt(id=old.id, corpus=old.corpus, text=str(old.prompt)), ids,
                                          [int(v) for v in old.y], max_new_tokens, pieces, cancel, on_repair)
        except Cancelled:
            tally.emit("cancelled", f"cancelled: {summary['streams']} stored prompt(s) repaired in {writer.path}; "
                                    "the others are repaired by the next --resume")
            raise
        writer.replace(stream)
        summary["streams"] += 1
        summary["changed"] += int(rep.rounds > 0)
        summary["repairs"] += len(rep.flips)
        summary["excluded"] += int(stream.n - stream.valid_len)
        summary["positions"] += stream.n
        sessions[-1] = {**sessions[-1], "repaired_in_place": dict(summary)}
        writer.update_meta(sessions=sessions)
        tally.emit("repaired", f"repaired {old.corpus}/{old.id}: {len(rep.flips)} repair(s)"
                   + (f" at t = {', '.join(map(str, rep.flips))}" if rep.flips else "")
                   + f", gate {stream.gate_rate:.3f}, {stream.n - stream.valid_len} excluded", **where)
    return summary


def _loadavg() -> tuple[float, float, float]:
    import os

    return os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3


def _gguf_path(spec: str) -> Path:
    from specterm.engines.torch import models_torch as M

    ms = M.resolve_spec(spec, hash_files=False)
    if ms.kind != "gguf":
        raise SpectermError(f"--backend llama.cpp needs GGUF files; {spec} is not a .gguf file.")
    return LM.gguf_path(ms)


def _measure_cost(config, pair: LlamaPair, writer: RunWriter, prompt, tally, cancel, threads: int) -> None:
    """llama.cpp costs (llamacpp/costs.py) at SPEC 1.7's context, unless the run has them (or --remeasure-cost)."""
    from specterm.engines.timing import context_ids
    from specterm.engines.llamacpp.costs_llamacpp import measure_costs

    old = writer.meta.get("cost") or {}
    if not config.measure_cost or (old.get("r_measured") and not config.remeasure_cost):
        return
    tally.report(Progress("cost", "measuring llama.cpp costs: c_decode, c_draft, c_verify(g) (interleaved repeats)",
                          n_prompts=tally.n_todo))
    ids = pair.target.tokenize(prompt.text)
    ctx = context_ids(ids, len(ids) + config.max_new_tokens)

    def on_measure(i, total, label, seconds):
        tally.report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s", n_prompts=tally.n_todo,
                              elapsed_s=time.perf_counter() - tally.t_start))

    cost = measure_costs(pair.target, pair.draft, ctx, gammas=config.cost_gammas, repeats=config.cost_repeats,
                         on_measure=on_measure, cancel=cancel)
    cost["measured_at"] = new_meta("")["created"]
    cost["load_avg"] = list(_loadavg())
    from specterm.core.decide.hardware.profiles import new_profile, with_profile
    from specterm.engines.llamacpp.models_llamacpp import describe_llamacpp

    profiles = with_profile(writer.meta, new_profile(cost, describe_llamacpp(threads), source="measured by specterm run"))
    if old.get("r_measured"):
        cost["earlier"] = [*old.pop("earlier", []), old]
    writer.update_meta(cost=cost, profiles=profiles)
