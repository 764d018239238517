"""`specterm confirm RUN --engine llama.cpp` on an ngram-simple drafter run (SPEC 2b): llama.cpp's own n-gram
speculation (`llama-speculative-simple --spec-type ngram-simple`, examples/speculative-simple of the vendored
llama.cpp, llama-cpp-python 0.3.36) against llama.cpp's plain greedy, on K stored prompts per corpus.

Per prompt (prompt tokens: the binding's tokenizer, as the example tokenizes; checked against the log's
"encoded N tokens"):

1. llama.cpp greedy, y': the same binary with an n-gram drafter that never drafts (GREEDY_ARGS: size_n 1024,
   size_m 1, so copy_max <= 1 < size_n), `-n n-1`: every block "accepted 0/0", a 1-token target decode and
   an argmax, its token id in the log. y' is compared with the run's stored y (llama.cpp's numerics are not
   torch's; where they first differ is recorded), and everything below is checked along y'.
2. specterm's own ngram-simple (engines/drafters/ngram_simple.py, a copy of common/ngram-map.cpp
   common_ngram_simple_draft) gives L_s and m_s along prompt + y'; the walk the example makes at draft
   length g (size_m = g), core/compare/speclog.capped_drafter_walk: the drafter's rule per g, the draft cut
   to n_draft_max = min(n_ctx - n_past - 2, n_predict - s - 1) when positive, stopping once more than
   n_predict tokens are out or after the block that emits an end-of-generation token.
3. `llama-speculative-simple --spec-type ngram-simple --spec-ngram-simple-size-n N --spec-ngram-simple-size-m
   g -n (n-1-g)` (every block inside y'): its blocks read from the -v log (K/N and the target token of
   each; the n-gram types log no drafted ids). Its target calls are its blocks plus one prefill of
   prompt[:-1], outside the blocks and outside the timed loop, as in the walk. Checks: the blocks, and every
   block's (N, K), equal the walk's; every block's target token is y' at its position, and the text the
   example prints equals greedy's up to its last token ("identical": the output equals y').
4. Timing: both runs timed by the binary's own "decoded ... in X seconds" (prefill untimed), the order
   reversed every other prompt; realized = sum greedy s / sum speculative s, greedy's seconds scaled to
   the speculative run's token count (greedy_s x tokens_out / len(y')).

The record goes into run.json `drafter_confirmations` in the shape of engines/torch/drafted_confirm.py's
(engine.name "llama.cpp"); the drafter report reads realized beside the run's S_hw(g) (predicted) from it.
A prompt-lookup run is refused: llama.cpp has no Hugging Face prompt lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from specterm.core.compare.speclog import SpecLog, capped_drafter_walk, n_predict_for, parse_speculative_log
from specterm.core.errors import SpectermError
from specterm.core.store import Run, Stream, load_run, new_meta
from specterm.core.store.meta import drafter_of

NGRAM_ARGS = ("--spec-type", "ngram-simple", "--temp", "0", "--top-k", "1", "-v")
GREEDY_ARGS = ("--spec-ngram-simple-size-n", "1024", "--spec-ngram-simple-size-m", "1")  # never drafts
PROMPT_LOOKUP_REFUSAL = ("holds Hugging Face's prompt lookup, which llama.cpp does not implement (its n-gram types "
                         "take the most recent match and need a full n-gram); confirm it without --engine (Hugging "
                         "Face assisted generation), or confirm an ngram-simple run with --engine llama.cpp.")
METHOD = ("per prompt: llama-speculative-simple --spec-type ngram-simple at size_m = g against the same binary with a "
          "drafter that never drafts (size_n 1024, size_m 1: plain greedy, y'), order reversed every other prompt; "
          "both timed by the binary's own 'decoded' seconds (prefill of prompt[:-1] untimed); realized = sum greedy s "
          "(scaled to the speculative run's tokens) / sum speculative s; target calls = the log's blocks (the "
          "prefill is one more, outside them), against specterm's ngram-simple walk along prompt + y'")


@dataclass(frozen=True)
class Decoded:
    """One llama-speculative-simple run: its parsed -v log, process wall seconds, and what it printed."""

    log: SpecLog
    wall_s: float
    stdout: bytes
    stderr: str

    @property
    def seconds(self) -> float:
        return float(self.log.decoded_s if self.log.decoded_s is not None else self.wall_s)


def ngram_command(exe: Path, target: Path, prompt: str, size_n_m: tuple[str, ...], n_predict: int, threads: int,
                  n_ctx: int) -> list[str]:
    """The command line: the target alone, the n-gram type with its sizes, greedy sampling, -v (prompt as -p
    with --no-escape, as confirm_llamacpp.speculative_command)."""
    return [str(exe), "-m", str(target), "-p", prompt, "--no-escape", "-n", str(n_predict), *NGRAM_ARGS, *size_n_m,
            "-t", str(threads), "-tb", str(threads), "-c", str(n_ctx)]


def sizes(size_n: int, gamma: int) -> tuple[str, ...]:
    return ("--spec-ngram-simple-size-n", str(size_n), "--spec-ngram-simple-size-m", str(gamma))


def decode(cmd: list[str]) -> Decoded:
    from specterm.engines.llamacpp.confirm_llamacpp import run_binary

    out, err, wall = run_binary(cmd)
    return Decoded(parse_speculative_log(err, drafts_logged=False), wall, out, err)


def greedy_tokens(run: Decoded) -> list[int]:
    """y' of a never-drafting run: every block's target token (one SpectermError if a block drafted)."""
    if int(run.log.drafted.sum()) != 0:
        raise SpectermError("the greedy run of llama-speculative-simple drafted tokens (size_n 1024 should never "
                            "match); this build's ngram-simple differs from the one specterm copies.")
    return [b.target_token for b in run.log.blocks]


def printed(stdout: bytes) -> bytes:
    """The bytes the example printed: the prompt's pieces and then the emitted tokens' (the "\\n\\n" it prints
    before them, and the two it prints after the loop and at its end, taken off)."""
    text = stdout[2:] if stdout.startswith(b"\n\n") else stdout
    return text[:-4] if text.endswith(b"\n\n\n\n") else text


def first_divergence(a: list[int], b: list[int]) -> int | None:
    """The first index where a and b differ (the shorter one's length when one is a prefix of the other);
    None when they are equal."""
    return next((j for j, (x, z) in enumerate(zip(a, b)) if x != z), None if len(a) == len(b) else min(len(a), len(b)))


def check_blocks(log: SpecLog, y: list[int], walk_d: np.ndarray, walk_k: np.ndarray) -> dict[str, Any]:
    """The speculative run against y' and the walk: per block (N, K) equal to the walk's; every block's target
    token equal to y' at its position (its start + K); tokens out (up to an end-of-generation token, which
    ends y')."""
    N, K = log.drafted, log.accepted
    same = min(N.size, walk_d.size)
    diff = np.flatnonzero((N[:same] != walk_d[:same]) | (K[:same] != walk_k[:same]))
    first = int(diff[0]) if diff.size else (None if N.size == walk_d.size else same)
    s, targets_ok = 0, True
    for b in log.blocks:
        pos = s + b.accepted
        if pos >= len(y) or y[pos] != b.target_token:
            targets_ok = False
            break
        s = pos + 1
    return {"first_block_mismatch": first, "targets_equal": targets_ok, "tokens_out": min(int((K + 1).sum()), len(y))}


def decoder_output(log: SpecLog, ids: list[int], size_n: int, gamma: int, n_predict: int, n_ctx: int,
                   eog: set[int]) -> tuple[list[int], int | None]:
    """The tokens the n-gram decoder emitted, rebuilt from its log and the copied drafter: at each block, the
    code's draft on the decoder's own context (prompt + what it emitted), cut to n_draft_max when positive,
    its first K tokens, then the block's target token (cut after an end-of-generation token). Returns (the
    tokens, the first block whose logged N differs from that draft's length: the drafter or its rule does not
    match; the rebuild stops there) with None when every block matches."""
    from specterm.engines.drafters.ngram_simple import NgramSimple

    drafter = NgramSimple(size_n=size_n, size_m=gamma, max_tokens=gamma)
    out: list[int] = []
    for i, b in enumerate(log.blocks):
        s = len(out)
        d = drafter.propose(np.asarray(ids + out, dtype=np.int64)).tolist()
        budget = max(min(n_ctx - (len(ids) - 1 + s) - 2, n_predict - s - 1), 0)
        if budget > 0:
            d = d[:budget]
        if len(d) != b.size:
            return out, i
        out += [*d[: b.accepted], b.target_token]
        stop = next((j for j, t in enumerate(out[s:]) if t in eog), None)
        if stop is not None:
            return out[: s + stop + 1], None
    return out, None


def blocks_before(N: np.ndarray, K: np.ndarray, q: int | None) -> list[tuple[int, int]]:
    """(N, K) of the blocks whose emitted tokens all lie before token q (every block when q is None)."""
    out, s = [], 0
    for n, k in zip(N.tolist(), K.tolist()):
        if q is not None and s + k >= q:
            break
        out.append((n, k))
        s += k + 1
    return out


def pick(streams: list[Stream], k: int, corpora: Optional[list[str]]) -> list[Stream]:
    """The first k streams of each corpus (run order) with a prompt."""
    out: list[Stream] = []
    by: dict[str, int] = {}
    for s in streams:
        if (corpora and s.corpus not in corpora) or not s.prompt or s.y is None:
            continue
        if by.get(s.corpus, 0) < k:
            by[s.corpus] = by.get(s.corpus, 0) + 1
            out.append(s)
    return out


@dataclass(frozen=True)
class Setup:
    """What every prompt's runs share: the binary, the target GGUF, the drafter, the end-of-generation ids."""

    exe: Path
    target: Path
    drafter: Any                            # engines/drafters/ngram_simple.NgramSimple
    eog: set[int]
    threads: int
    n_ctx: int = 0


def time_prompt(setup: Setup, prompt: str, n: int, gammas: tuple[int, ...], reverse: bool,
                keep_logs: Optional[Path], name: str) -> dict[int | None, Decoded]:
    """Greedy (key None) and the n-gram decoder at every g with n_predict_for(n, g) >= 1, in this order or
    reversed; each -v log copied into keep_logs when given."""
    order: list[int | None] = [None, *gammas]
    out: dict[int | None, Decoded] = {}
    for g in order[::-1] if reverse else order:
        if g is not None and n_predict_for(n, g) < 1:
            continue
        args = GREEDY_ARGS if g is None else sizes(setup.drafter.size_n, g)
        out[g] = decode(ngram_command(setup.exe, setup.target, prompt, args, n - 1 if g is None else n_predict_for(n, g),
                                      setup.threads, setup.n_ctx))
        if keep_logs is not None:
            keep_logs.mkdir(parents=True, exist_ok=True)
            stem = keep_logs / f"{name}-{'greedy' if g is None else f'g{g}'}"
            stem.with_suffix(".log").write_text(out[g].stderr, encoding="utf-8")
            stem.with_suffix(".out").write_bytes(out[g].stdout)
    return out


def kept_runs(logs: Path, n: int, gammas: tuple[int, ...], name: str) -> dict[int | None, Decoded]:
    """What time_prompt returned, read back from the -v logs it kept (replay: no model run; wall seconds are the
    log's decoded seconds; the printed text where its .out was kept, else none, and the text check is skipped)."""
    out: dict[int | None, Decoded] = {}
    for g in [None, *gammas]:
        if g is not None and n_predict_for(n, g) < 1:
            continue
        stem = logs / f"{name}-{'greedy' if g is None else f'g{g}'}"
        if not stem.with_suffix(".log").is_file():
            raise SpectermError(f"{stem.with_suffix('.log')} is missing; replay logs kept by `--keep-logs` of the same "
                                "prompts and g.")
        err = stem.with_suffix(".log").read_text(encoding="utf-8")
        printed_out = stem.with_suffix(".out").read_bytes() if stem.with_suffix(".out").is_file() else b""
        parsed = parse_speculative_log(err, drafts_logged=False)
        out[g] = Decoded(parsed, float(parsed.decoded_s or 0.0), printed_out, err)
    return out


def prompt_row(setup: Setup, s: Stream, ids: list[int], n: int, runs_by: dict[int | None, Decoded],
               log: Callable[[str], None]) -> dict[str, Any]:
    """One prompt's record row (the shape of engines/torch/drafted_confirm.py's, plus y' against the stored y
    and the per-block comparison), from its greedy run and its n-gram runs (module docstring, steps 1-4)."""
    from specterm.engines.drafters import along_y
    from specterm.engines.llamacpp.binaries import SPEC_BINARY

    greedy = runs_by[None]
    if greedy.log.encoded_tokens is not None and greedy.log.encoded_tokens != len(ids):
        raise SpectermError(f"{SPEC_BINARY} encoded prompt {s.id!r} ({s.corpus}) as {greedy.log.encoded_tokens} "
                            f"tokens, the binding as {len(ids)}; the binary and the binding tokenize differently.")
    yp = greedy_tokens(greedy)
    stored = [] if s.y is None else s.y[:n].tolist()
    row: dict[str, Any] = {
        "corpus": s.corpus, "id": s.id, "n": len(yp), "prompt_tokens": len(ids), "greedy_s": greedy.seconds,
        "greedy_calls": greedy.log.target_calls + 1, "greedy_identical": yp == stored,
        "greedy_first_divergence": first_divergence(yp, stored), "spec": {}}
    drafter = setup.drafter
    runs, proposed, _ = along_y(drafter, ids, yp)
    caps = np.array([drafter.gamma_cap(len(ids) + j) for j in range(len(yp))], dtype=np.int64)
    end = len(yp) if yp and yp[-1] in setup.eog else None
    text = printed(greedy.stdout)
    for g, sp in runs_by.items():
        if g is None:
            continue
        n_predict = n_predict_for(n, g)
        walk_d, walk_k = capped_drafter_walk(runs, proposed, g, n_predict, drafter.min_draft, caps,
                                             setup.n_ctx - (len(ids) - 1) - 2, end=end)
        chk = check_blocks(sp.log, yp, walk_d, walk_k)
        # the decoder's own output, rebuilt with the copied drafter, and the walk along it (its own tokens)
        z, drafter_mismatch = decoder_output(sp.log, ids, drafter.size_n, g, n_predict, setup.n_ctx, setup.eog)
        own_runs, own_prop, _ = along_y(drafter, ids, z)
        own_caps = np.array([drafter.gamma_cap(len(ids) + j) for j in range(len(z))], dtype=np.int64)
        own_d, own_k = capped_drafter_walk(own_runs, own_prop, g, n_predict, drafter.min_draft, own_caps,
                                           setup.n_ctx - (len(ids) - 1) - 2, end=len(z))
        own = check_blocks(sp.log, z, own_d, own_k)
        q = first_divergence(z, yp[: len(z)])
        before = (blocks_before(sp.log.drafted, sp.log.accepted, q)
                  == blocks_before(walk_d, walk_k, q))
        shown = printed(sp.stdout)
        identical = bool(q is None and chk["targets_equal"] and (not shown or text.startswith(shown)))
        out = chk["tokens_out"]
        greedy_s = greedy.seconds * out / len(yp)
        row["spec"][str(g)] = {
            "s": sp.seconds, "wall_s": sp.wall_s, "greedy_s": greedy_s, "n_predict": n_predict, "tokens_out": out,
            "target_calls": sp.log.target_calls, "prefill_calls": 1, "blocks_walk": int(walk_d.size),
            "drafted": int(sp.log.drafted.sum()), "drafted_walk": int(walk_d.sum()),
            "accepted": int(sp.log.accepted.sum()), "accepted_walk": int(walk_k.sum()),
            "first_block_mismatch": chk["first_block_mismatch"], "identical": identical,
            "first_divergence": q, "blocks_agree_before_divergence": before, "blocks_walk_own": int(own_d.size),
            "own_block_mismatch": drafter_mismatch if drafter_mismatch is not None else own["first_block_mismatch"]}
        log(f"{s.corpus}/{s.id} g={g}: {sp.log.target_calls} target calls (walk along y' {walk_d.size}, along its own "
            f"output {own_d.size}), {'identical' if identical else f'output leaves y at token {q}'}, "
            f"{greedy_s / sp.seconds:.2f}x")
    row["spec"] = dict(sorted(row["spec"].items(), key=lambda kv: int(kv[0])))
    return row


def setup_for(run: Run, gammas: tuple[int, ...], target: Optional[str], threads: int, llama_bin: Optional[Path],
              llama_src: Optional[Path], log: Callable[[str], None]) -> tuple[Setup, Any]:
    """The run's drafter checked (ngram-simple; a prompt-lookup run refused with PROMPT_LOOKUP_REFUSAL), the
    binary found (or built), the target GGUF found by checksum; (Setup, the binding's vocabulary-only model)."""
    from specterm.engines.drafters import drafter_from_meta
    from specterm.engines.drafters.ngram_simple import NgramSimple
    from specterm.engines.llamacpp import binaries as B
    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.binding import require_binding
    from specterm.engines.llamacpp.confirm_llamacpp import resolve_gguf

    draft = drafter_of(run.meta)
    if draft is None:
        raise SpectermError(f"{run.path} is not a drafter run; `specterm confirm --engine llama.cpp` without a drafter "
                            "confirms model drafts.")
    if draft.get("kind") == "prompt-lookup":
        raise SpectermError(f"{run.path} {PROMPT_LOOKUP_REFUSAL}")
    if draft.get("type") != "ngram-simple":
        raise SpectermError(f"{run.path} holds the {draft.get('spec')} drafter; llama.cpp's n-gram decoder is confirmed "
                            "for ngram-simple runs only.")
    base = drafter_from_meta(draft)
    assert isinstance(base, NgramSimple)
    require_binding()
    exe = B.find_binary(llama_bin)
    if exe is None:
        if llama_bin is not None:
            raise SpectermError(f"{llama_bin} has no {B.SPEC_BINARY}; {B.BUILD_HINT}.")
        exe = B.build(llama_src, 1, log)
    t_path = resolve_gguf(run.meta, "target", target)
    vocab = LM.load_gguf(t_path, 64, threads, vocab_only=True)
    drafter = NgramSimple(size_n=base.size_n, max_tokens=max(base.max_tokens, *gammas))
    return Setup(exe=exe, target=t_path, drafter=drafter, eog=LM.eog_ids(vocab), threads=threads), vocab


def confirm_ngram_llamacpp(path: Path, k: int = 2, gammas: tuple[int, ...] = (2, 4, 8),
                           corpora: Optional[list[str]] = None, target: Optional[str] = None, threads: int = 1,
                           llama_bin: Optional[Path] = None, llama_src: Optional[Path] = None,
                           max_new_tokens: Optional[int] = None, keep_logs: Optional[Path] = None,
                           log: Callable[[str], None] = print, replay: Optional[Path] = None,
                           index: Optional[int] = None) -> dict[str, Any]:
    """Run the module docstring's steps on k prompts per corpus at every g of `gammas`; put the record in
    run.json `drafter_confirmations` at `index` (append when None; atomically, under the run lock; the run stays
    sealed), rewritten after every prompt ("complete": false until the last: Ctrl-C keeps the prompts timed).
    Returns it. `replay`: a --keep-logs directory of an earlier confirmation of the same prompts and g, analysed
    again without running the binary (to put at that record's index)."""
    import dataclasses

    from specterm.engines.confirm_record import write_confirmation_key
    from specterm.engines.llamacpp import binaries as B
    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.oracle_llamacpp import context_size

    run = load_run(path)
    setup, vocab = setup_for(run, gammas, target, threads, llama_bin, llama_src, log)
    streams = pick(run.streams, k, corpora)
    if not streams:
        raise SpectermError(f"{path} has no stream with its prompt and y; nothing to confirm.")
    items = [(s, vocab.tokenize(s.prompt), min(len(s.y), max_new_tokens or len(s.y))) for s in streams
             if s.prompt is not None and s.y is not None]
    setup = dataclasses.replace(setup, n_ctx=context_size([len(ids) for _, ids, _ in items], max(n for *_, n in items)))
    log(f"{B.SPEC_BINARY} {setup.exe}, target {setup.target.name}, ngram-simple size_n {setup.drafter.size_n}, g = "
        f"{', '.join(map(str, gammas))}, {len(items)} prompts, {threads} thread(s)")
    first = items[0][0]
    assert first.prompt is not None
    if replay is None:
        time_prompt(setup, first.prompt, 9, gammas[:1], False, None, "warm-up")  # untimed warm-up of both
    draft = drafter_of(run.meta) or {}
    rows: list[dict[str, Any]] = []
    record = {"measured_at": new_meta("")["created"],
              "engine": {"name": "llama.cpp", "version": LM.engine_info(threads).get("binding_version"),
                         "binary": B.binary_info(setup.exe), "threads": threads},
              "method": METHOD, "drafter": draft.get("spec"), "gammas": list(gammas), "n_ctx": setup.n_ctx,
              "greedy_is": "llama.cpp's own greedy y' (the same binary, never drafting); spec.identical: output == y'",
              "prompts": rows, "complete": False}
    earlier = run.meta.get("drafter_confirmations")
    if replay is not None and index is not None and isinstance(earlier, list) and index < len(earlier):
        record["measured_at"] = earlier[index].get("measured_at", record["measured_at"])  # when it was timed
    if replay is not None:
        record["replayed_from"] = {"logs": str(replay), "note": "analysed again from the -v logs an earlier run of this "
                                   "command kept; seconds are the logs' own 'decoded' seconds"}
    for i, (s, ids, n) in enumerate(items):
        assert s.prompt is not None
        name = f"{s.corpus}-{s.id}"
        runs_by = (kept_runs(replay, n, gammas, name) if replay is not None
                   else time_prompt(setup, s.prompt, n, gammas, i % 2 == 1, keep_logs, name))
        rows.append(prompt_row(setup, s, ids, n, runs_by, log))
        index = write_confirmation_key(path, "drafter_confirmations", record, index)  # Ctrl-C keeps these prompts
    record["complete"] = True
    write_confirmation_key(path, "drafter_confirmations", record, index)
    return record
