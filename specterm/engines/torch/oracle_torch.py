"""The torch engine's part of the exact greedy oracle (SPEC section 1; the flow is engines/oracle.py).

For each prompt: y = the target's raw-argmax greedy continuation (built with lossless speculative
decoding when `spec_gamma > 0`, else plain greedy); then one teacher-forced pass of each model over
prompt + y (batched over prompts, right-padded) gives, for t = 0..n-1,

    a_t    = 1 iff argmax draft(. | prompt, y_1..y_t) == y_{t+1}
    gate_t = 1 iff argmax target(. | prompt, y_1..y_t) == y_{t+1}     (must be 1.000)
    draft_conf_t = max_v q_t(v),  target_conf_t = max_v p_t(v),  beta_t = sum_v min(p_t(v), q_t(v))

(p = target, q = draft). Softmaxes run over chunks of positions so memory stays bounded with a
150k vocabulary. Where batched and serial evaluation may differ (any dtype but float32, any device
but the CPU: `repairs_needed`) a stream whose gate fails goes through SPEC 1.3's repair loop
(engines/repair.py, the loop llama.cpp runs) and stores its flipped positions; float32 on the CPU
keeps the prefix rule. `check_run` is every check of `specterm run` on torch that needs no weights.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol, cast

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.store import Stream
from specterm.engines.base import OracleConfig
from specterm.engines.corpora import Prompt
from specterm.engines.progress import Cancelled, Progress, ProgressCallback, Tally, check_cancel
from specterm.engines.repair import REPAIR_RULE

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

    from specterm.engines.torch.models_torch import ModelSpec
    from specterm.engines.torch.specdec import SpecResult

POSITION_CHUNK = 64  # positions per softmax chunk: 64 x 152k x 4 B x 2 models ~ 78 MB


class PieceDecoder(Protocol):
    """What `decode_pieces` needs of a tokenizer: transformers' `decode` (a torch tokenizer, or llama.cpp's
    detokenizer behind the same call)."""

    def decode(self, ids: list[int], /, *, skip_special_tokens: bool,
               clean_up_tokenization_spaces: bool) -> str | list[str]: ...


@dataclass
class LoadedPair:
    target: PreTrainedModel
    draft: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    eos: set[int]
    meta: dict[str, Any]

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad) if pad is not None else min(self.eos)


def load_pair(config: OracleConfig, report: ProgressCallback = lambda p: None) -> LoadedPair:
    """Resolve, check tokenizers (before any model work), then load both models."""
    from specterm.engines.torch import models_torch as M

    report(Progress("checking", "resolving model paths"))
    t_spec = M.resolve_spec(config.target)
    if t_spec.kind == "layers":
        raise SpectermError("--target must be a model; 'layers:K' is only a draft (the target's first K layers).")
    d_spec = M.resolve_spec(config.draft)
    device = M.resolve_device(config.device)
    dtype = M.resolve_dtype(config.dtype, device, "gguf" in (t_spec.kind, d_spec.kind))
    with M.gguf_parsed_once():  # a GGUF's tokenizer, config and weights from one parse
        report(Progress("loading", f"loading tokenizer of {config.target}"))
        tok_t = M.load_tokenizer(t_spec, config.trust_remote_code)
        if d_spec.kind != "layers":
            report(Progress("loading", f"loading tokenizer of {config.draft}"))
            tok_d = M.load_tokenizer(d_spec, config.trust_remote_code)
            M.check_tokenizers(tok_t, tok_d)
        report(Progress("loading", f"loading target {config.target}"))
        target = M.load_model(t_spec, device, dtype, config.trust_remote_code)
        report(Progress("loading", f"loading draft {config.draft}"))
        if d_spec.kind == "layers":
            assert d_spec.layers is not None  # a layers:K spec always has K
            draft = M.layer_skip_draft(target, d_spec.layers)
        else:
            draft = M.load_model(d_spec, device, dtype, config.trust_remote_code)
    meta = {
        "target": {**t_spec.describe(), "class": type(target).__name__,
                   "layers": target.config.num_hidden_layers, "vocab_size": target.config.vocab_size},
        "draft": {**d_spec.describe(), "class": type(draft).__name__,
                  "layers": draft.config.num_hidden_layers, "vocab_size": draft.config.vocab_size},
        "tokenizer_vocab": len(tok_t.get_vocab()),
        "device": device,
        "dtype": str(dtype).replace("torch.", ""),
    }
    if device.startswith("cuda"):
        import torch

        meta["gpu"] = torch.cuda.get_device_name(torch.device(device))
        meta["tf32"] = bool(torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32)
    return LoadedPair(target, draft, tok_t, M.eos_ids(target, tok_t), meta)


def torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


def encode_prompt(tokenizer: PreTrainedTokenizerBase, text: str, name: str = "a prompt") -> list[int]:
    ids = tokenizer(text).input_ids
    if not ids:
        raise SpectermError(f"{name} encodes to zero tokens; remove it or give it some text.")
    return list(ids)


def hidden_states(model: PreTrainedModel, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Last hidden states (B x L x H) from the decoder stack, without materialising B x L x V logits."""
    decoder = model.get_decoder()  # type: ignore[no-untyped-call]  # transformers leaves get_decoder unannotated
    out = decoder(input_ids=ids, attention_mask=mask, use_cache=False)
    h: torch.Tensor = out.last_hidden_state
    return h


def head_logits(model: PreTrainedModel, h: torch.Tensor) -> torch.Tensor:
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    logits: torch.Tensor = head(h).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = (logits / cap).tanh() * cap
    return logits


def acceptance_beta(target_logits: torch.Tensor, draft_logits: torch.Tensor) -> torch.Tensor:
    """beta_t = sum_v min(p_t(v), q_t(v)) per row, computed in float64 from the logits.

    In float32 the softmaxes themselves sum to 1 only within a few ulps per entry, and over a
    49k-150k vocabulary the sum of minima of two equal distributions lands up to ~1e-5 above 1
    (1.0000112 seen with draft = target): the loader, strict on probabilities, would then refuse
    the run. In float64 the excess is ~1e-12, below float32 resolution, so the stored float32 beta
    is <= 1 and a draft equal to its target stores exactly 1.
    """
    import torch

    if target_logits.device.type == "mps":  # no float64 on MPS
        target_logits, draft_logits = target_logits.cpu(), draft_logits.cpu()
    pt = torch.softmax(target_logits.to(torch.float64), dim=-1)
    pd = torch.softmax(draft_logits.to(torch.float64), dim=-1)
    return torch.minimum(pt, pd).sum(dim=-1)


def teacher_force(pair: LoadedPair, prompt_ids: list[list[int]], ys: list[list[int]]) -> list[dict[str, np.ndarray]]:
    """One teacher-forced pass of each model over prompt + y[:-1] for a batch (right padding): each
    stream's columns (`teacher_pass` without the target's argmax)."""
    return [cols for cols, _ in teacher_pass(pair, prompt_ids, ys)]


def teacher_pass(pair: LoadedPair, prompt_ids: list[list[int]],
                 ys: list[list[int]]) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """One teacher-forced pass of each model over prompt + y[:-1] for a batch (right padding): per
    stream its columns and the target's argmax at every t (row t predicts y_t; the repair loop's
    teacher_argmax), over the ids both models share.

    Right padding keeps every real token at its natural position 0..L-1, and causal attention
    never lets a real token see a pad after it; the mask still marks pads for the implementation.
    """
    import torch

    seqs = [p + y[:-1] for p, y in zip(prompt_ids, ys)]
    L = max(len(s) for s in seqs)
    pad = 0
    out: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
    per_model = []
    for model in (pair.target, pair.draft):
        dev = model.device
        ids = torch.full((len(seqs), L), pad, dtype=torch.long, device=dev)
        mask = torch.zeros((len(seqs), L), dtype=torch.long, device=dev)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s, device=dev)
            mask[i, : len(s)] = 1
        per_model.append(hidden_states(model, ids, mask))
    h_t, h_d = per_model
    for i, (p, y) in enumerate(zip(prompt_ids, ys)):
        n = len(y)
        y_next = torch.tensor(y, device=h_t.device)
        cols = {k: np.empty(n, dtype=np.float32) for k in ("draft_conf", "target_conf", "beta")}
        t_arg = np.empty(n, dtype=np.int64)
        d_arg = np.empty(n, dtype=np.int64)
        for c0 in range(0, n, POSITION_CHUNK):
            c1 = min(n, c0 + POSITION_CHUNK)
            pos = slice(len(p) - 1 + c0, len(p) - 1 + c1)
            lt = head_logits(pair.target, h_t[i, pos])
            ld = head_logits(pair.draft, h_d[i, pos].to(h_t.device))
            v = min(lt.shape[-1], ld.shape[-1])  # embedding padding beyond the real vocabulary is ignored
            pt = torch.softmax(lt[:, :v], dim=-1)
            pd = torch.softmax(ld[:, :v], dim=-1)
            tmax, targ = pt.max(dim=-1)
            dmax, darg = pd.max(dim=-1)
            cols["target_conf"][c0:c1] = tmax.cpu().numpy()
            cols["draft_conf"][c0:c1] = dmax.cpu().numpy()
            cols["beta"][c0:c1] = acceptance_beta(lt[:, :v], ld[:, :v]).cpu().numpy()
            t_arg[c0:c1] = targ.cpu().numpy()
            d_arg[c0:c1] = darg.cpu().numpy()
        yv = y_next.cpu().numpy()
        out.append(({
            "bits": (d_arg == yv).astype(np.uint8),
            "gate": (t_arg == yv).astype(np.uint8),
            "draft_argmax": d_arg.astype(np.int32),
            **cols,
        }, t_arg))
    return out


def repairs_needed(device: str, dtype: str | None) -> bool:
    """SPEC 1.3: whether batched and serial evaluation may differ, so y is repaired: any dtype but
    float32, any device but the CPU (batch-variant kernels and reduced precision round differently).
    float32 on the CPU runs the same kernels for both passes: a gate failure there is a defect, cut
    and shown (SPEC 1.3's prefix rule), never repaired away."""
    return dtype != "float32" or not str(device).startswith("cpu")


class _TargetPass:
    """teacher_argmax of the repair loop for one prompt: `teacher_pass` on prompt + y alone (the same
    batch of one every round), keeping the columns of the last y."""

    def __init__(self, pair: LoadedPair, prompt_ids: list[int]):
        self.pair, self.prompt_ids = pair, prompt_ids
        self.y: list[int] | None = None
        self.cols: dict[str, np.ndarray] | None = None

    def __call__(self, y: list[int]) -> np.ndarray:
        (cols, t_arg), = teacher_pass(self.pair, [self.prompt_ids], [list(y)])
        self.y, self.cols = list(y), cols
        return t_arg

    def cols_of(self, y: list[int]) -> dict[str, np.ndarray]:
        """The columns of `y` (those of the last pass when it was this y)."""
        if self.cols is None or self.y != list(y):
            self(y)
        assert self.cols is not None
        return self.cols


def continue_greedy(pair: LoadedPair, prompt_ids: list[int], prefix: list[int], max_new_tokens: int,
                    cancel: Optional[threading.Event] = None) -> list[int]:
    """The serial greedy continuation of y after `prefix` (the repair loop's regenerate): nothing when the
    prefix ends in an end-of-generation token or holds max_new_tokens tokens, else the target's serial
    greedy decode (specdec.greedy_generate, one prompt) from prompt + prefix for the tokens left."""
    from specterm.engines.torch import specdec

    if not prefix or prefix[-1] in pair.eos or len(prefix) >= max_new_tokens:
        return []
    return specdec.greedy_generate(pair.target, list(prompt_ids) + list(prefix), max_new_tokens - len(prefix),
                                   pair.eos, cancel=cancel)


def repaired_columns(pair: LoadedPair, prompt_ids: list[int], y: list[int], cols: dict[str, np.ndarray],
                     max_new_tokens: int, cancel: Optional[threading.Event] = None,
                     on_repair: Callable[[int, int], None] | None = None) -> tuple[list[int], dict[str, np.ndarray], list[int]]:
    """(y, columns, flipped positions) of one stream after SPEC 1.3's repair loop (engines/repair.py):
    a stream whose batched gate holds keeps its y and columns with no flips; otherwise the loop runs on
    the target alone (`_TargetPass`, `continue_greedy`) and the columns are those of its final pass."""
    from specterm.engines.repair import repair_greedy

    if bool(np.all(cols["gate"] == 1)):
        return list(y), cols, []
    tpass = _TargetPass(pair, prompt_ids)
    rep = repair_greedy(y, tpass, lambda prefix: continue_greedy(pair, prompt_ids, prefix, max_new_tokens, cancel),
                        on_repair=on_repair)
    check_cancel(cancel)
    return rep.y, tpass.cols_of(rep.y), rep.flips


def decode_pieces(tokenizer: PieceDecoder, y: list[int]) -> tuple[str, np.ndarray]:
    """Concatenated text of y and the end offset of each token's piece (for colouring tokens).

    Pieces come from decoding growing prefixes (as streaming detokenizers do), so a character
    split over several byte tokens is given whole to the token that completes it (the others get
    an empty piece) instead of showing replacement characters.
    """
    text = ""
    ends = np.empty(len(y), dtype=np.int32)
    for i in range(len(y)):
        # a flat list of ids decodes to one str (a list of str is for a batch of id lists)
        cur = cast(str, tokenizer.decode(y[: i + 1], skip_special_tokens=False, clean_up_tokenization_spaces=False))
        if cur.startswith(text) and not (cur.endswith("\ufffd") and i < len(y) - 1):
            text = cur
        ends[i] = len(text)
    return text, ends


def generate_speculative(config: OracleConfig, pair: LoadedPair, batch: list[Prompt], ids_batch: list[list[int]],
                          b0: int, tally: Tally, cancel: Optional[threading.Event]) -> tuple[list[list[int]], bool]:
    """y of each prompt of the batch by lossless speculative decoding, one prompt at a time.
    Returns (the finished ys, whether a cancel stopped it)."""
    from specterm.engines.torch import specdec

    ys: list[list[int]] = []
    for j, prompt in enumerate(batch):
        idx = b0 + j
        t0 = time.perf_counter()
        tok_before = tally.gen_tokens
        where: dict[str, Any] = {"prompt_index": idx, "prompt_id": prompt.id, "corpus": prompt.corpus}

        def on_block(res: SpecResult, where: dict[str, Any] = where, t0: float = t0, tok_before: int = tok_before) -> None:
            tally.gen_tokens = tok_before + len(res.tokens)
            tally.emit("generating", tokens=len(res.tokens), bits=specdec.spec_bits(res, len(res.tokens)),
                       gen_extra=time.perf_counter() - t0, **where)

        tally.emit("generating", f"prompt {tally.before + idx + 1}/{tally.before + tally.n_todo}: {prompt.corpus}/{prompt.id}", **where)
        try:
            res = specdec.speculative_generate(pair.target, pair.draft, ids_batch[j], config.max_new_tokens, pair.eos,
                                               specdec.FixedGamma(config.spec_gamma), on_block=on_block, cancel=cancel)
        except Cancelled:
            return ys, True
        tally.gen_time += time.perf_counter() - t0
        tally.gen_tokens = tok_before + len(res.tokens)
        ys.append(res.tokens)
    return ys, False


def generate_batched(config: OracleConfig, pair: LoadedPair, batch: list[Prompt], ids_batch: list[list[int]],
                      b0: int, tally: Tally, cancel: Optional[threading.Event]) -> tuple[list[list[int]], bool]:
    """y of every prompt of the batch by batched plain greedy decoding. Returns (ys, cancelled)
    (no ys when cancelled: the batch finishes together or not at all)."""
    from specterm.engines.torch import specdec

    t0 = time.perf_counter()
    tok_before = tally.gen_tokens
    label = f"{batch[0].id}..{batch[-1].id}" if len(batch) > 1 else batch[0].id
    where: dict[str, Any] = {"prompt_index": b0, "prompt_id": label, "corpus": batch[0].corpus}

    def on_step(k: int) -> None:
        tally.gen_tokens = tok_before + k * len(batch)
        tally.emit("generating", tokens=k, gen_extra=time.perf_counter() - t0, **where)

    tally.emit("generating", f"prompts {tally.before + b0 + 1}-{tally.before + b0 + len(batch)}/{tally.before + tally.n_todo}: batched greedy", **where)
    ys: list[list[int]] = []
    cancelled = False
    try:
        ys = specdec.batched_greedy_generate(pair.target, ids_batch, config.max_new_tokens, pair.eos,
                                             pair.pad_id, on_step=on_step, cancel=cancel)
    except Cancelled:
        cancelled = True
    tally.gen_time += time.perf_counter() - t0
    tally.gen_tokens = tok_before + sum(len(y) for y in ys)
    return ys, cancelled


def generation_meta(config: OracleConfig, pair: LoadedPair) -> dict[str, Any]:
    """run.json's "generation" of a torch run: raw-argmax greedy, how y is built, the EOS ids."""
    return {
        "decoding": "raw-argmax greedy (no logits processors or warpers)",
        "max_new_tokens": config.max_new_tokens,
        "y_built_with": (f"speculative decoding with the draft, gamma={config.spec_gamma}" if config.spec_gamma > 0
                         else f"batched greedy, {config.batch_size} prompts at a time"),
        "eos_token_ids": sorted(pair.eos),
        "y_method": config.y_method,
        "batch_size": config.batch_size,
        "prompt_encoding": "tokenizer(text) with its default special tokens, no chat template",
        **({"repair": REPAIR_RULE} if repairs_needed(str(pair.meta.get("device", "cpu")), pair.meta.get("dtype")) else {}),
    }


def torch_streams(pair: LoadedPair, batch: list[Prompt], ids_batch: list[list[int]], ys: list[list[int]], b0: int,
                  tally: Tally, max_new_tokens: int, cancel: Optional[threading.Event] = None) -> Iterator[Stream]:
    """The streams of the finished ys (the first len(ys) prompts of the batch): one teacher-forced pass of
    each model over the batch (`teacher_force`); where batched and serial evaluation may differ
    (`repairs_needed`) a stream whose gate fails goes through the repair loop first (`repaired_columns`)
    and stores its flipped positions; then y's text and its pieces."""
    results = teacher_force(pair, ids_batch[: len(ys)], ys)
    repair = repairs_needed(str(pair.meta.get("device", "cpu")), pair.meta.get("dtype"))
    for prompt, ids, y, cols in zip(batch, ids_batch, ys, results):
        flips = None
        if repair:
            def on_repair(k: int, t: int, prompt: Prompt = prompt) -> None:
                tally.emit("repairing", f"{prompt.id}: repair {k} at t = {t} (the gate failed there)",
                           prompt_index=b0, prompt_id=prompt.id, corpus=prompt.corpus)

            y, cols, flips = repaired_columns(pair, ids, y, cols, max_new_tokens, cancel, on_repair)
        text, ends = decode_pieces(pair.tokenizer, y)
        columns: dict[str, Any] = dict(cols)
        yield Stream(id=prompt.id, corpus=prompt.corpus, prompt=prompt.text, y=np.asarray(y, dtype=np.int32),
                     text=text, piece_ends=ends, stop="eos" if y and y[-1] in pair.eos else "length", repairs=flips,
                     **columns)


def target_config(ms: ModelSpec, trust_remote_code: bool) -> PretrainedConfig:
    """The target's config alone (config.json or GGUF metadata, no weights); its text config for a
    multimodal model. SpectermError (one sentence) when it cannot be read."""
    from transformers import AutoConfig

    from specterm.engines.torch.models_torch import load_error

    try:
        if ms.kind == "gguf":
            cfg = AutoConfig.from_pretrained(str(ms.path), gguf_file=ms.gguf_file)
        elif ms.kind == "dir":
            cfg = AutoConfig.from_pretrained(str(ms.path), trust_remote_code=trust_remote_code)
        else:
            cfg = AutoConfig.from_pretrained(ms.spec, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers raises many types; the user needs one sentence
        raise SpectermError(load_error(ms, "config", exc)) from None
    text: PretrainedConfig = getattr(cfg, "text_config", None) or cfg
    return text


def check_context(longest_prompt: int, max_new_tokens: int, context: object) -> None:
    """Refuse (one sentence) a run whose longest prompt plus -n tokens does not fit the target's
    context (max_position_embeddings; not checked when the config does not say)."""
    if type(context) is int and context > 0 and longest_prompt + max_new_tokens > context:
        raise SpectermError(f"-n {max_new_tokens} after the longest prompt ({longest_prompt} tokens) needs "
                            f"{longest_prompt + max_new_tokens} positions, beyond the target's context of {context}; "
                            "lower -n/--max-new-tokens or shorten the prompt.")


def check_run(config: OracleConfig) -> None:
    """torch's checks of `specterm run` that need no model weights, done before any model loads (the
    prompts and --out are engines/oracle.check_run's): the numbers, with --resume the run's models and
    generation settings, models resolved, device and dtype, the tokenizers compared and every prompt
    encoded (a prompt of zero tokens is named), layers:K against the target's config. Raises
    SpectermError (one sentence); creates nothing on disk.
    """
    from specterm.core.store import META_FILE
    from specterm.engines.corpora import shard as take_shard
    from specterm.engines.torch import models_torch as M

    _check_numbers(config)
    prompts = take_shard(config.prompts, *config.shard) if config.shard else config.prompts
    resuming = config.resume and (config.out / META_FILE).is_file()
    t_spec = M.resolve_spec(config.target, hash_files=resuming)
    if t_spec.kind == "layers":
        raise SpectermError("--target must be a model; 'layers:K' is only a draft (the target's first K layers).")
    d_spec = M.resolve_spec(config.draft, hash_files=resuming)
    device = M.resolve_device(config.device)
    dtype = M.resolve_dtype(config.dtype, device, "gguf" in (t_spec.kind, d_spec.kind))
    if resuming:
        _check_resume(config, t_spec, d_spec, dtype)
    tok = M.load_tokenizer(t_spec, config.trust_remote_code)
    if d_spec.kind != "layers":
        M.check_tokenizers(tok, M.load_tokenizer(d_spec, config.trust_remote_code))
    longest = 0
    for p in prompts:
        ids = tok(p.text).input_ids
        if not ids:
            raise SpectermError(f"prompt {p.id!r} ({p.corpus}) encodes to zero tokens; remove it or give it some text.")
        longest = max(longest, len(ids))
    _check_target_config(config, t_spec, d_spec, longest)


def _check_numbers(config: OracleConfig) -> None:
    """-n, --batch-size and --spec-gamma are integers in range; --threads is llama.cpp's."""
    for flag, value, low in (("-n/--max-new-tokens", config.max_new_tokens, 1), ("--batch-size", config.batch_size, 1),
                             ("--spec-gamma", config.spec_gamma, 0)):
        if not isinstance(value, int) or value < low:
            raise SpectermError(f"{flag} must be an integer of at least {low}, got {value}.")
    if config.threads is not None:
        raise SpectermError("--threads is for --backend llama.cpp; torch picks its own threads.")


def _check_resume(config: OracleConfig, t_spec: ModelSpec, d_spec: ModelSpec, dtype: torch.dtype) -> None:
    """--resume: the run's models and generation settings are this command's, and the run loads."""
    from specterm.core.store import load_run, public_model, read_meta, resume_conflict

    new = {"target": public_model(t_spec.describe()), "draft": public_model(d_spec.describe()),
           "dtype": str(dtype).replace("torch.", ""),
           "generation": {"max_new_tokens": config.max_new_tokens, "y_method": config.y_method}}
    conflict = resume_conflict(read_meta(config.out), new)
    if conflict:
        raise SpectermError(f"{config.out} {conflict}; resume with the same settings or choose another --out.")
    load_run(config.out)  # a corrupt run is refused now (repair it first), not after the models load


def _check_target_config(config: OracleConfig, t_spec: ModelSpec, d_spec: ModelSpec, longest: int) -> None:
    """The longest prompt + -n within the target's context, and layers:K within its layers (its config alone)."""
    try:
        tcfg = target_config(t_spec, config.trust_remote_code)
    except SpectermError:
        if d_spec.kind == "layers":
            raise
        tcfg = None  # loading the model says what is wrong; no context to check against here
    if tcfg is not None:
        check_context(longest, config.max_new_tokens, getattr(tcfg, "max_position_embeddings", None))
    if d_spec.kind == "layers":
        assert tcfg is not None and d_spec.layers is not None
        n = int(tcfg.num_hidden_layers)
        if not 1 <= d_spec.layers < n:
            raise SpectermError(f"layers:{d_spec.layers} must keep between 1 and {n - 1} of the target's {n} layers.")
