"""The llama.cpp engine's part of the exact greedy oracle (SPEC 1, `specterm run --backend llama.cpp`;
the flow is engines/oracle.py, the pair engines/llamacpp/__init__.py's LlamaPair).

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

Streams go through the same flow and writer as the torch engine's (RunWriter: resume, lock, checksums).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.store import RunWriter, Stream, load_run
from specterm.engines.base import OracleConfig
from specterm.engines.corpora import Prompt
from specterm.engines.llamacpp import models_llamacpp as LM
from specterm.engines.progress import Cancelled, Tally, check_cancel
from specterm.engines.repair import REPAIR_BOUND, REPAIR_RULE, Repaired, repair_greedy
from specterm.engines.torch.oracle_torch import PieceDecoder, decode_pieces

POSITION_CHUNK = 32  # rows per float64 softmax chunk: 32 x 152k x 8 B x 2 ~ 78 MB
CONTEXT_MARGIN = 24  # room for the cost measurement: context + a (g+1)-token verification, g <= 16
DECODING = "raw-argmax greedy on llama.cpp logits (no sampler chain)"
Y_METHOD = "llama.cpp serial greedy"


class GGUFPair(Protocol):
    """What the oracle's steps read of a llama.cpp pair (engines/llamacpp.LlamaPair, or a test's toy)."""

    @property
    def target(self) -> LM.GGUFModel: ...

    @property
    def draft(self) -> LM.GGUFModel: ...

    eog: set[int]


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


def serial_greedy(model: LM.GGUFModel, prompt_ids: list[int], max_new_tokens: int, eog: set[int],
                    on_token: Callable[[int], None] | None = None, cancel: threading.Event | None = None) -> list[int]:
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
    the prefix ends in an end-of-generation token or holds max_new_tokens tokens, else serial_greedy
    from prompt + prefix for the tokens left."""
    if not prefix or prefix[-1] in eog or len(prefix) >= max_new_tokens:
        return []
    return serial_greedy(model, list(prompt_ids) + list(prefix), max_new_tokens - len(prefix), eog, cancel=cancel)


class _TargetPass:
    """teacher_argmax of the repair loop: the target's teacher-forced argmax over the ids both models
    share (as stream_columns compares them), keeping the logits of the last y for its columns."""

    def __init__(self, pair: GGUFPair, prompt_ids: list[int]):
        self.pair, self.prompt_ids = pair, prompt_ids
        self.vocab = min(pair.target.n_vocab, pair.draft.n_vocab)
        self.y: list[int] | None = None
        self.logits: np.ndarray | None = None

    def __call__(self, y: list[int]) -> np.ndarray:
        self.y, self.logits = list(y), teacher_force_logits(self.pair.target, self.prompt_ids, y)
        arg: np.ndarray = self.logits[:, : self.vocab].argmax(axis=1)
        return arg

    def logits_of(self, y: list[int]) -> np.ndarray:
        """The target's teacher-forced logits of `y` (those of the last pass when it was this y)."""
        if self.logits is None or self.y != list(y):
            self(y)
        assert self.logits is not None
        return self.logits


def repaired_stream(pair: GGUFPair, prompt: Prompt, prompt_ids: list[int], y: list[int], max_new_tokens: int,
                    pieces: PieceDecoder, cancel: threading.Event | None = None,
                    on_repair: Callable[[int, int], None] | None = None, bound: int = REPAIR_BOUND) -> tuple[Stream, Repaired]:
    """The stream of `prompt` from its serial greedy y: the repair loop (engines/repair.py) on the target,
    then the draft teacher-forced on the final y and every column from the two passes (stream_columns)."""
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

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool = False) -> str:
        text: str = self.model.llm.detokenize(list(ids), special=True).decode("utf-8", "replace")
        return text


def context_size(prompt_lens: list[int], max_new_tokens: int) -> int:
    """n_ctx for a run: the longest prompt + max_new_tokens + a margin, rounded up to 64."""
    need = max(prompt_lens) + max_new_tokens + CONTEXT_MARGIN
    return int(-(-need // 64) * 64)




def streams_to_repair(config: OracleConfig) -> list[Stream]:
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


def repair_stored(pair: GGUFPair, writer: RunWriter, streams: list[Stream], max_new_tokens: int, pieces: PieceDecoder,
                  tally: Tally, cancel: threading.Event | None = None) -> dict[str, Any]:
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

        def on_repair(k: int, t: int, where: dict[str, Any] = where, old: Stream = old) -> None:
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


def gguf_path_of(spec: str) -> Path:
    from specterm.engines.torch import models_torch as M

    ms = M.resolve_spec(spec, hash_files=False)
    if ms.kind != "gguf":
        raise SpectermError(f"--backend llama.cpp needs GGUF files; {spec} is not a .gguf file.")
    return LM.gguf_path(ms)


def generation_meta(config: OracleConfig, eog: set[int]) -> dict[str, Any]:
    """run.json's "generation" of a llama.cpp run: serial raw-argmax greedy, teacher forcing, the repair rule."""
    return {
        "decoding": DECODING,
        "max_new_tokens": config.max_new_tokens,
        "y_built_with": "llama.cpp serial greedy (one 1-token decode per token)",
        "eos_token_ids": sorted(eog),
        "y_method": Y_METHOD,
        "prompt_encoding": LM.PROMPT_ENCODING,
        "teacher_forcing": "one llama.cpp decode of prompt + y[:-1] per model (n_batch = n_ubatch = n_ctx)",
        "repair": REPAIR_RULE,
    }


def repair_resumed(pair: GGUFPair, config: OracleConfig, writer: RunWriter, tally: Tally,
                   cancel: threading.Event | None) -> str:
    """Before a resumed run's new prompts: the repair rule recorded (a run from before the loop), and its
    stored streams without repair information repaired in place (`repair_stored`); the done line's addition."""
    if (writer.meta.get("generation") or {}).get("repair") != REPAIR_RULE:  # a run from before the loop, resumed
        writer.update_meta(generation={**(writer.meta.get("generation") or {}), "repair": REPAIR_RULE})
    stored = streams_to_repair(config)
    if not stored:
        return ""
    done = repair_stored(pair, writer, stored, config.max_new_tokens, _PieceDecoder(pair.target), tally, cancel)
    return (f"; {done['streams']} stored prompt(s) repaired in place ({done['repairs']} repair(s) in "
            f"{done['changed']} stream(s), {done['excluded']} position(s) still excluded)")


def generate_serial(pair: GGUFPair, config: OracleConfig, prompt: Prompt, ids: list[int], b0: int, tally: Tally,
                    cancel: threading.Event | None) -> tuple[list[list[int]], bool]:
    """y of one prompt by llama.cpp's serial greedy (`serial_greedy`), with progress per token; ([], True)
    when a cancel stopped it."""
    where: dict[str, Any] = {"prompt_index": b0, "prompt_id": prompt.id, "corpus": prompt.corpus}
    tally.emit("generating", f"prompt {tally.before + b0 + 1}/{tally.before + tally.n_todo}: {prompt.corpus}/{prompt.id}",
               **where)
    t0 = time.perf_counter()
    tok_before = tally.gen_tokens

    def on_token(k: int) -> None:
        tally.gen_tokens = tok_before + k
        tally.emit("generating", tokens=k, gen_extra=time.perf_counter() - t0, **where)

    try:
        y = serial_greedy(pair.target, ids, config.max_new_tokens, pair.eog, on_token=on_token, cancel=cancel)
    except Cancelled:
        return [], True
    tally.gen_time += time.perf_counter() - t0
    return [y], False


def llama_streams(pair: GGUFPair, config: OracleConfig, batch: list[Prompt], ids: list[list[int]],
                  ys: list[list[int]], b0: int, tally: Tally, cancel: threading.Event | None) -> Iterator[Stream]:
    """The repaired stream of each finished y (`repaired_stream`), with a progress line per repair."""
    pieces = _PieceDecoder(pair.target)
    for prompt, prompt_ids, y in zip(batch, ids, ys):
        where: dict[str, Any] = {"prompt_index": b0, "prompt_id": prompt.id, "corpus": prompt.corpus}

        def on_repair(k: int, t: int, where: dict[str, Any] = where, prompt: Prompt = prompt) -> None:
            tally.emit("repairing", f"{prompt.id}: repair {k} at t = {t} (the gate failed there)", **where)

        stream, _ = repaired_stream(pair, prompt, prompt_ids, y, config.max_new_tokens, pieces, cancel, on_repair)
        yield stream


def loadavg() -> tuple[float, float, float]:
    import os

    return os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
