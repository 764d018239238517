"""The llama.cpp engine's part of `specterm confirm RUN --engine llama.cpp` (the flow is
engines/confirm.py): does llama.cpp's own speculative decoder deliver the speedup predicted for it?
(SPEC 6, Confirmation, in the engine people deploy.)

- The run's GGUF models (found by name and checksum) are loaded in llama.cpp through the binding with
  `threads` threads and a context that holds every timed prompt; every stream qualifies, its gate
  recorded beside the first divergence (select_streams, gate_held=False).
- Per corpus, g = 1, 4 and 8 are always timed (tokens per target call of the real decoder beside the
  block walk, issue 22) besides the run's decision g_hw and every --gamma; this session's own choices
  are recorded in "choices", not timed. With --batch-costs the costs by batch are measured after the
  cost rounds (llamacpp/costs.measure_batch_costs: contexts of n_seq_max = B, B = 1 reused from the
  rounds) and stored as the run's.
- Plain greedy (`greedy_timed`): llama.cpp decoding through the binding, the prompt but its last token
  prefilled untimed, then n 1-token decodes with an argmax each (timed: what llama-speculative-simple's
  "decoded ... in X seconds" covers), each token's time stamped (greedy_cum_s).
- llama.cpp's speculative decoder (`speculative_timed`): `llama-speculative-simple --spec-type
  draft-simple --spec-draft-n-max G --spec-draft-n-min 0 --spec-draft-p-min 0 --temp 0 --top-k 1
  -n (n-1) -v` (fixed-length greedy drafting; -n n-1 makes it emit exactly n tokens, see
  core/compare/speclog.py), timed by its own "decoded" line; its -v log gives every block's drafted tokens,
  accepted count and target token (core/compare/speclog.parse_speculative_log).
- Per (corpus, g) (`result_extras`): summarize_results over hardware.timing_rows (greedy timed to the
  token count the speculative run emitted; predicted with the engine's block cost c_verify(g) +
  g c_draft + c_draft_fwd(g): draft-simple feeds the (g+1)-token verification batch to the draft once
  per block; predicted_without_engine_term: SPEC 6's block alone), plus tokens_per_call_walk (the
  walk llama.cpp makes on the stored bits, speclog.capped_walk_accepts) and both accepted-run histograms.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.compare.crossstack import histogram, real_flips
from specterm.core.errors import SpectermError
from specterm.core.compare.speclog import SpecLog, capped_walk_accepts, n_predict_for, parse_speculative_log
from specterm.core.store import model_key
from specterm.engines.base import Generation, Item
from specterm.engines.llamacpp import binaries as B
from specterm.engines.llamacpp import models_llamacpp as LM

SPEC_ARGS = ("--spec-type", "draft-simple", "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "--temp", "0",
             "--top-k", "1", "-v")
METHOD = ("per (corpus, g): realized = sum greedy s / sum speculative s over the same prompts, methods alternating "
          "(order reversed every other prompt); greedy: llama.cpp 1-token decodes + argmax through the binding "
          "(prefill untimed); speculative: llama-speculative-simple's own 'decoded' seconds (prefill untimed); "
          "predicted = S_hw(g) with E = tokens / blocks of the exact walk of these prompts, this session's "
          "robust costs and the engine's block cost c_verify(g) + g c_draft + c_draft_fwd(g) (draft-simple's "
          "(g+1)-token draft forward per block)")


def greedy_timed(model: LM.GGUFModel, ids: list[int], n: int, eog: set[int]) -> tuple[list[int], list[float], float]:
    """(tokens, cumulative wall seconds after each token, CPU s) of plain greedy in llama.cpp: ids[:-1]
    prefilled untimed, then n 1-token decodes (the first feeds ids[-1]) each followed by an argmax,
    stopping at an end-of-generation token (see the module docstring, step 4)."""
    model.clear(0)
    if len(ids) > 1:
        model.decode(ids[:-1], 0)
    out: list[int] = []
    stamps: list[float] = []
    n_past = len(ids) - 1
    tok = ids[-1]
    t0, c0 = time.perf_counter(), time.process_time()
    while len(out) < n:
        logits = model.decode([tok], n_past)
        n_past += 1
        tok = int(np.argmax(logits[-1]))
        out.append(tok)
        stamps.append(time.perf_counter() - t0)
        if tok in eog:
            break
    return out, stamps, time.process_time() - c0


def speculative_command(exe: Path, target: Path, draft: Path, prompt: str, gamma: int, n_predict: int,
                        threads: int, n_ctx: int) -> list[str]:
    """The llama-speculative-simple command line (fixed-length greedy drafting at draft length gamma).

    The prompt goes in as -p with --no-escape: -f would drop a final newline and escape processing
    would turn a literal backslash-n of a code prompt into a newline, changing the tokens."""
    return [str(exe), "-m", str(target), "-md", str(draft), "-p", prompt, "--no-escape", "-n", str(n_predict),
            "--spec-draft-n-max", str(gamma), *SPEC_ARGS, "-t", str(threads), "-tb", str(threads),
            "-td", str(threads), "-tbd", str(threads), "-c", str(n_ctx)]


def run_speculative(cmd: list[str], timeout: float = 1800.0) -> tuple[SpecLog, float, str]:
    """Run it; (parsed log, wall seconds of the process, the raw stderr log)."""
    _, log, wall = run_binary(cmd, timeout)
    return parse_speculative_log(log), wall, log


def run_binary(cmd: list[str], timeout: float = 1800.0) -> tuple[bytes, str, float]:
    """Run llama-speculative-simple; (stdout: the bytes it prints, stderr: its log, wall seconds of the
    process); one sentence when it fails."""
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SpectermError(f"llama-speculative-simple ran longer than {timeout:.0f} s; check the models and -n.") from None
    wall = time.perf_counter() - t0
    log = res.stderr.decode("utf-8", "replace")
    if res.returncode == -signal.SIGILL:
        raise SpectermError(f"llama-speculative-simple stopped with an illegal instruction (its build uses CPU instructions "
                            f"this machine refuses, e.g. AMX in a VM); rebuild it with {B.NO_AMX_HINT}.")
    if res.returncode != 0:
        last = [ln for ln in log.splitlines() if ln.strip()][-1:] or ["no output"]
        raise SpectermError(f"llama-speculative-simple failed (exit {res.returncode}: {last[0][:160]}).")
    return res.stdout, log, wall


def resolve_gguf(meta: dict[str, Any], role: str, override: str | None) -> Path:
    from specterm.core.store import model_location
    from specterm.engines.torch import models_torch as M

    entry = meta.get(role)
    if override is None and not isinstance(entry, dict):
        raise SpectermError(f"run.json names no {role} model; this needs a run made by `specterm run` (or pass --{role}).")
    ms = M.resolve_spec(model_location(entry, override))
    if ms.kind != "gguf":
        raise SpectermError(f"--engine llama.cpp needs GGUF models; the run's {role} is {ms.spec}.")
    if model_key({"sha256": ms.sha256}) != model_key(entry):
        raise SpectermError(f"the {role} model found now is not the one this run was made with (checksum differs); "
                            "restore the original file or re-run `specterm run`.")
    return LM.gguf_path(ms)


def speculative_timed(pair: Any, item: Item, g: int, keep_logs: Path | None) -> Generation | None:
    """llama-speculative-simple at draft length g on item's prompt, timed by its own "decoded" line; the
    row keeps its per-block accepted and drafted counts, the walk llama.cpp makes on the stored bits
    (speclog.capped_walk_accepts) and both accepted-run histograms. None when -n would be below 1."""

    s = item.stream
    n_predict = n_predict_for(item.n, g)
    if n_predict < 1:
        return None
    assert s.prompt is not None  # select_streams keeps only streams that have it
    slog, wall, raw = run_speculative(speculative_command(pair.exe, pair.t_path, pair.d_path, s.prompt, g, n_predict,
                                                          pair.threads, pair.n_ctx))
    if keep_logs is not None:
        keep_logs.mkdir(parents=True, exist_ok=True)
        (keep_logs / f"{s.corpus}-{s.id}-g{g}.log").write_text(raw, encoding="utf-8")
    toks = slog.tokens
    walk = capped_walk_accepts(s.bits[: item.n], g, n_predict)
    ks = slog.accepted
    seconds = float(slog.decoded_s if slog.decoded_s is not None else wall)
    return Generation(tokens=list(toks), seconds=seconds, compare=len(toks), fields={
        "s": seconds, "wall_s": wall, "n_predict": n_predict, "tokens_out": len(toks),
        "target_calls": slog.target_calls, "draft_calls": int(slog.drafted.sum()),
        "walk_calls": int(walk.size), "walk_tokens": int(walk.sum() + walk.size),
        "blocks_walk": int(walk.size), "refeeds_walk": int(np.count_nonzero(walk[:-1] == g)),
        "accepted": ks.tolist(), "drafted": slog.drafted.tolist(), "walk_accepted": walk.tolist(),
        "histogram": histogram(ks, g), "histogram_walk": histogram(walk, g), "counters": slog.counters,
        # the loop's own forwards (core/decide/hardware/engine_loop): the target's seconds without the prompt,
        # the speculator's; None where the log has no perf summary
        "target_loop_s": slog.target_loop_s, "draft_loop_s": slog.draft_s,
    }, summary=f"{len(toks)} tokens in {seconds:.2f} s, {slog.target_calls} target calls (walk {walk.size})")


def result_extras(sp: list[dict[str, Any]], r: dict[str, Any]) -> dict[str, Any]:
    """A (corpus, g) row's llama.cpp columns (module docstring, step 5): tokens_per_call_walk = the walk's
    tokens / its target calls over EVERY timed prompt (whether or not its output equalled y), the gap
    of the real count to it, the real decoder's own flips beside it (differ_prompts: outputs that differ
    from y; first_mismatch_median among those), the same over the prompts whose output equals y
    (secondary), the histograms; realized_over_engine = realized / predicted_engine (the session's curve
    carries c_draft_fwd, so summarize_results' S_hw has the engine's block cost)."""
    flips = real_flips(sp)
    out: dict[str, Any] = {"differ_prompts": flips["real_differ"],
                           "first_mismatch_median": flips["real_first_mismatch_median"]}
    walk_calls = sum(x["walk_calls"] for x in sp)
    out["tokens_per_call_walk"] = sum(x["walk_tokens"] for x in sp) / walk_calls if walk_calls else None
    out["tokens_per_call_gap"] = (r["tokens_per_call"] / out["tokens_per_call_walk"] - 1.0
                                  if out["tokens_per_call_walk"] else None)
    agree = [x for x in sp if x["identical"]]
    out["identical_prompts"] = len(agree)
    out["tokens_per_call_agree"] = (sum(x["tokens_out"] for x in agree) / sum(x["target_calls"] for x in agree)
                                    if agree else None)
    out["tokens_per_call_walk_agree"] = (sum(x["walk_tokens"] for x in agree) / sum(x["walk_calls"] for x in agree)
                                         if agree else None)
    out["histogram"] = np.sum([x["histogram"] for x in sp], axis=0).tolist()
    out["histogram_walk"] = np.sum([x["histogram_walk"] for x in sp], axis=0).tolist()
    out["realized_over_engine"] = r["realized"] / r["predicted_engine"] if r.get("predicted_engine") else None
    return out
