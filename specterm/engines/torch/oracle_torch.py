"""The exact greedy oracle (SPEC section 1).

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
keeps the prefix rule. Every finished prompt is appended to the run on disk at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from specterm.engines.corpora import Prompt
from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled, Progress, ProgressCallback, check_cancel
from specterm.core.store import RunWriter, Stream, load_run, new_meta, public_model
from specterm.engines.repair import REPAIR_RULE

POSITION_CHUNK = 64  # positions per softmax chunk: 64 x 152k x 4 B x 2 models ~ 78 MB


@dataclass
class OracleConfig:
    target: str
    draft: str
    prompts: list[Prompt]
    out: Path
    max_new_tokens: int = 128
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 4
    resume: bool = False
    spec_gamma: int = 0
    measure_cost: bool = True
    remeasure_cost: bool = False  # with resume: measure r again (the earlier values are kept in cost.earlier)
    cost_repeats: int = 7  # timed rounds of the cost measurement (engines/torch/costs_torch.py)
    cost_gammas: tuple[int, ...] = tuple(range(1, 17))  # draft lengths whose c_verify(g) is timed
    trust_remote_code: bool = False
    shard: Optional[tuple[int, int]] = None
    extra_meta: dict[str, Any] = field(default_factory=dict)
    record_paths: bool = False  # keep models' absolute local paths in run.json (off: names + sha256 only)

    @property
    def y_method(self) -> str:
        """How y is built, as stored in run.json generation.y_method (resume refuses a change)."""
        return f"speculative decoding, gamma={self.spec_gamma}" if self.spec_gamma > 0 else "batched greedy"


@dataclass
class LoadedPair:
    target: Any
    draft: Any
    tokenizer: Any
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


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def encode_prompt(tokenizer, text: str, name: str = "a prompt") -> list[int]:
    ids = tokenizer(text).input_ids
    if not ids:
        raise SpectermError(f"{name} encodes to zero tokens; remove it or give it some text.")
    return list(ids)


def _hidden_states(model, ids, mask):
    """Last hidden states (B x L x H) from the decoder stack, without materialising B x L x V logits."""
    out = model.get_decoder()(input_ids=ids, attention_mask=mask, use_cache=False)
    return out.last_hidden_state


def _head(model, h):
    logits = model.get_output_embeddings()(h).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = (logits / cap).tanh() * cap
    return logits


def acceptance_beta(target_logits, draft_logits):
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
        per_model.append(_hidden_states(model, ids, mask))
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
            lt = _head(pair.target, h_t[i, pos])
            ld = _head(pair.draft, h_d[i, pos].to(h_t.device))
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
                     on_repair=None) -> tuple[list[int], dict[str, np.ndarray], list[int]]:
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


def decode_pieces(tokenizer, y: list[int]) -> tuple[str, np.ndarray]:
    """Concatenated text of y and the end offset of each token's piece (for colouring tokens).

    Pieces come from decoding growing prefixes (as streaming detokenizers do), so a character
    split over several byte tokens is given whole to the token that completes it (the others get
    an empty piece) instead of showing replacement characters.
    """
    text = ""
    ends = np.empty(len(y), dtype=np.int32)
    for i in range(len(y)):
        cur = tokenizer.decode(y[: i + 1], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if cur.startswith(text) and not (cur.endswith("\ufffd") and i < len(y) - 1):
            text = cur
        ends[i] = len(text)
    return text, ends


@dataclass
class _Tally:
    """What a run has done so far, and its progress reports built from it: y tokens generated and
    the time spent generating them (tokens/s, ETA), prompts saved, and the saved streams' running
    alpha (SPEC 2's alpha: accepted / positions over the gate-valid positions, as the report counts it)
    and gate rate (over every position)."""

    report: ProgressCallback
    n_todo: int
    max_new_tokens: int
    t_start: float = field(default_factory=time.perf_counter)
    gen_tokens: int = 0
    gen_time: float = 0.0
    done: int = 0
    saved_bits: int = 0
    saved_n: int = 0
    saved_valid: int = 0
    saved_gate: int = 0
    before: int = 0
    """Prompts the run held already (--resume): counted in every report, so the Run screen shows the
    whole run (saved before + this session) and its running alpha over all of them."""
    t_prompts: float | None = None
    """When this session's first prompt started (after loading and the cost measurement)."""
    t_last_save: float | None = None
    """When this session's last prompt was saved."""

    def eta(self, now: float, rate: float) -> float | None:
        """Seconds left: once a prompt is saved, the wall time per prompt so far (from the first
        prompt's start to the last save, everything a prompt costs: generation, teacher forcing,
        saving) times the prompts left, less the time already spent since the last save (never
        below 0); before that, the tokens left at the generation rate (`rate` tokens/s; optimistic,
        it leaves out teacher forcing), or None."""
        left_prompts = self.n_todo - self.done
        if self.done and self.t_prompts is not None and self.t_last_save is not None:
            per_prompt = (self.t_last_save - self.t_prompts) / self.done
            return max(per_prompt * left_prompts - (now - self.t_last_save), 0.0)
        return (left_prompts * self.max_new_tokens / rate) if rate > 0 else None

    def emit(self, phase: str, msg: str = "", gen_extra: float = 0.0, **kw: Any) -> None:
        """Report a Progress; `gen_extra`: seconds of generation under way, not yet in gen_time."""
        now = time.perf_counter()
        elapsed = now - self.t_start
        rate = self.gen_tokens / (self.gen_time + gen_extra) if self.gen_time + gen_extra > 0 else 0.0
        if "prompt_index" in kw:
            kw["prompt_index"] += self.before
        self.report(Progress(
            phase, msg, n_prompts=self.before + self.n_todo, prompts_done=self.before + self.done,
            max_new_tokens=self.max_new_tokens,
            tokens_per_s=rate, running_alpha=(self.saved_bits / self.saved_valid) if self.saved_valid else None,
            gate_rate=(self.saved_gate / self.saved_n) if self.saved_n else None, elapsed_s=elapsed,
            eta_s=self.eta(now, rate), already=self.before, **kw,
        ))

    def saved(self, stream: Stream, before: bool = False) -> None:
        """Count a saved stream (`before`: one the run held already, --resume)."""
        if before:
            self.before += 1
        else:
            self.done += 1
            self.t_last_save = time.perf_counter()
        self.saved_bits += int(stream.a.sum())  # a: the bits up to the first gate failure
        self.saved_valid += stream.valid_len
        self.saved_n += stream.n
        self.saved_gate += int(stream.gate.sum())


def _prompts_to_run(config: OracleConfig) -> list[Prompt]:
    """config.prompts, or this shard's share of them; one sentence when there are none."""
    prompts = config.prompts
    if config.shard is not None:
        from specterm.engines.corpora import shard

        prompts = shard(prompts, *config.shard)
    if not prompts:
        raise SpectermError("there are no prompts to run; check --corpus/--prompts.")
    return prompts


def _open_writer(config: OracleConfig, pair: LoadedPair) -> tuple[RunWriter, dict[str, Any]]:
    """The run's writer (new, or resuming) and this invocation's metadata: models, how y is built,
    the shard."""
    meta = new_meta(
        config.out.name,
        **pair.meta,
        generation={
            "decoding": "raw-argmax greedy (no logits processors or warpers)",
            "max_new_tokens": config.max_new_tokens,
            "y_built_with": (f"speculative decoding with the draft, gamma={config.spec_gamma}" if config.spec_gamma > 0
                             else f"batched greedy, {config.batch_size} prompts at a time"),
            "eos_token_ids": sorted(pair.eos),
            "y_method": config.y_method,
            "batch_size": config.batch_size,
            "prompt_encoding": "tokenizer(text) with its default special tokens, no chat template",
            **({"repair": REPAIR_RULE} if repairs_needed(str(pair.meta.get("device", "cpu")), pair.meta.get("dtype"))
               else {}),
        },
        shard=list(config.shard) if config.shard else None,
        **config.extra_meta,
    )
    for key in ("target", "draft"):
        meta[key] = public_model(meta[key], config.record_paths)
    return RunWriter(config.out, meta, resume=config.resume), meta


def _record_session(writer: RunWriter, meta: dict[str, Any], config: OracleConfig, n_todo: int) -> None:
    """Each invocation (first run and every --resume) is recorded, with how it built y (`meta`:
    this invocation's metadata)."""
    writer.update_meta(sessions=list(writer.meta.get("sessions") or []) + [{
        "started": meta["created"], "prompts": n_todo, "y_built_with": meta["generation"]["y_built_with"],
        "batch_size": config.batch_size, "torch_threads": _torch_threads(), "device": meta.get("device"),
    }])


def _measure_cost(config: OracleConfig, pair: LoadedPair, writer: RunWriter, prompt: Prompt, tally: _Tally,
                  cancel: Optional[threading.Event]) -> None:
    """Measure the cost model (engines/torch/costs_torch.py: c_decode, c_draft, c_verify(g)) on `prompt` unless the run has it (or --remeasure-cost:
    again, the earlier values kept in cost.earlier)."""
    from specterm.engines.torch.costs_torch import measure_cost_ratio

    old_cost = writer.meta.get("cost") or {}
    if not config.measure_cost or (old_cost.get("r_measured") and not config.remeasure_cost):
        return
    tally.report(Progress("cost", "measuring costs: c_decode, c_draft, c_verify(g) (interleaved repeats)",
                          n_prompts=tally.n_todo))
    ctx = encode_prompt(pair.tokenizer, prompt.text)

    def on_measure(i, total, label, seconds):
        tally.report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s", n_prompts=tally.n_todo,
                              elapsed_s=time.perf_counter() - tally.t_start, step=i, steps=total))

    cost = measure_cost_ratio(pair.target, pair.draft, ctx, config.max_new_tokens, repeats=config.cost_repeats,
                              gammas=config.cost_gammas, on_measure=on_measure, cancel=cancel)
    cost["measured_at"] = new_meta("")["created"]
    from specterm.core.decide.hardware.profiles import new_profile, with_profile
    from specterm.engines.torch.models_torch import describe_torch

    # a cost profile of this machine (SPEC 6), read before `cost` changes (an old run's costs migrate first)
    described = describe_torch(str(pair.meta.get("device", "cpu")), _torch_threads(), pair.meta.get("dtype"))
    profiles = with_profile(writer.meta, new_profile(cost, described, source="measured by specterm run"))
    if old_cost.get("r_measured"):
        cost["earlier"] = [*old_cost.pop("earlier", []), old_cost]
    writer.update_meta(cost=cost, profiles=profiles)


def _generate_speculative(config: OracleConfig, pair: LoadedPair, batch: list[Prompt], ids_batch: list[list[int]],
                          b0: int, tally: _Tally, cancel: Optional[threading.Event]) -> tuple[list[list[int]], bool]:
    """y of each prompt of the batch by lossless speculative decoding, one prompt at a time.
    Returns (the finished ys, whether a cancel stopped it)."""
    from specterm.engines.torch import specdec

    ys: list[list[int]] = []
    for j, prompt in enumerate(batch):
        idx = b0 + j
        t0 = time.perf_counter()
        tok_before = tally.gen_tokens
        where = dict(prompt_index=idx, prompt_id=prompt.id, corpus=prompt.corpus)

        def on_block(res, where=where, t0=t0, tok_before=tok_before):
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


def _generate_batched(config: OracleConfig, pair: LoadedPair, batch: list[Prompt], ids_batch: list[list[int]],
                      b0: int, tally: _Tally, cancel: Optional[threading.Event]) -> tuple[list[list[int]], bool]:
    """y of every prompt of the batch by batched plain greedy decoding. Returns (ys, cancelled)
    (no ys when cancelled: the batch finishes together or not at all)."""
    from specterm.engines.torch import specdec

    t0 = time.perf_counter()
    tok_before = tally.gen_tokens
    label = f"{batch[0].id}..{batch[-1].id}" if len(batch) > 1 else batch[0].id
    where = dict(prompt_index=b0, prompt_id=label, corpus=batch[0].corpus)

    def on_step(k):
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


def _save_batch(pair: LoadedPair, writer: RunWriter, batch: list[Prompt], ids_batch: list[list[int]],
                ys: list[list[int]], b0: int, tally: _Tally, max_new_tokens: int,
                cancel: Optional[threading.Event] = None) -> None:
    """Teacher-force the finished ys (the first len(ys) prompts of the batch) and append each stream;
    where batched and serial evaluation may differ (`repairs_needed`) a stream whose gate fails goes
    through the repair loop first (`repaired_columns`) and stores its flipped positions."""
    tally.emit("teacher-forcing", f"teacher-forcing {len(ys)} prompt(s)", prompt_index=b0)
    results = teacher_force(pair, ids_batch[: len(ys)], ys)
    repair = repairs_needed(str(pair.meta.get("device", "cpu")), pair.meta.get("dtype"))
    for prompt, ids, y, cols in zip(batch, ids_batch, ys, results):
        flips = None
        if repair:
            def on_repair(k, t, prompt=prompt):
                tally.emit("repairing", f"{prompt.id}: repair {k} at t = {t} (the gate failed there)",
                           prompt_index=b0, prompt_id=prompt.id, corpus=prompt.corpus)

            y, cols, flips = repaired_columns(pair, ids, y, cols, max_new_tokens, cancel, on_repair)
        text, ends = decode_pieces(pair.tokenizer, y)
        stream = Stream(
            id=prompt.id, corpus=prompt.corpus, prompt=prompt.text, y=np.asarray(y, dtype=np.int32),
            text=text, piece_ends=ends, stop="eos" if y and y[-1] in pair.eos else "length", repairs=flips, **cols,
        )
        writer.append(stream)
        tally.saved(stream)
        tally.emit("saved", f"saved {prompt.id}", prompt_index=b0, prompt_id=prompt.id, corpus=prompt.corpus,
                   tokens=len(y), bits="".join(map(str, stream.bits.tolist())))


def run_oracle(config: OracleConfig, on_progress: Optional[ProgressCallback] = None,
               cancel: Optional[threading.Event] = None, pair: Optional[LoadedPair] = None) -> Path:
    """Run the oracle over config.prompts, appending each finished prompt to config.out.

    Steps: the prompts (this shard's), the models, the run's writer and session record, the cost
    ratio r, then per batch: y (speculative or batched greedy), the teacher-forced pass, the save.
    The writer holds the run's lock from its first write until return. Raises `Cancelled` when `cancel` is set; every prompt finished before that is on disk (a
    prompt whose y was complete when cancel came is still teacher-forced and saved).
    """
    report = on_progress or (lambda p: None)
    t_start = time.perf_counter()
    prompts = _prompts_to_run(config)
    if config.out.exists() and (config.out / "run.json").exists() and not config.resume:
        raise SpectermError(f"{config.out} already holds a run; pass --resume to continue it or choose another --out.")
    if pair is None:
        pair = load_pair(config, report)
    check_cancel(cancel)
    writer, meta = _open_writer(config, pair)
    with writer:
        todo = [p for p in prompts if (p.corpus, p.id) not in writer.done]
        tally = _Tally(report, len(todo), config.max_new_tokens, t_start=t_start)
        for line in writer.warnings:  # what reopening the run mended or swept, said once
            tally.emit("warning", line)
        if writer.done:  # --resume: the prompts saved before count in the Run screen's totals and alpha
            for stream in load_run(config.out).streams:
                tally.saved(stream, before=True)
            tally.emit("loading", f"resuming: {tally.before} prompt(s) already kept in {config.out}, "
                                  f"{len(todo)} to run")
        _record_session(writer, meta, config, len(todo))
        _measure_cost(config, pair, writer, prompts[0], tally, cancel)

        generate = _generate_speculative if config.spec_gamma > 0 else _generate_batched
        tally.t_prompts = time.perf_counter()
        for b0 in range(0, len(todo), config.batch_size):
            batch = todo[b0 : b0 + config.batch_size]
            ids_batch = [encode_prompt(pair.tokenizer, p.text, f"prompt {p.id!r} ({p.corpus})") for p in batch]
            ys, cancelled = generate(config, pair, batch, ids_batch, b0, tally, cancel)
            if ys:
                _save_batch(pair, writer, batch, ids_batch, ys, b0, tally, config.max_new_tokens,
                            None if cancelled else cancel)
            if cancelled:
                tally.emit("cancelled", f"cancelled: {tally.done} prompt(s) saved in {config.out}")
                raise Cancelled()
    tally.emit("done", f"{tally.done} prompt(s) saved in {config.out}")
    return config.out
