"""`specterm confirm RUN --engine llama.cpp`: does llama.cpp's own speculative decoder deliver the
speedup predicted for it? (SPEC 6, Confirmation, in the engine people deploy.)

1. The run's GGUF models (found by name and checksum, as `specterm confirm` finds them) are loaded in
   llama.cpp through the binding, with `threads` threads; the first K prompts of each corpus whose
   gate held are taken.
2. Costs are measured in this session (llamacpp/costs.py) at the mean context of the timed
   generations: `cost_repeats` rounds first, one more after every prompt.
3. Per corpus, the draft lengths timed: g = 1, 4 and 8 (tokens per target call of the real decoder
   beside the block walk, issue 22) and the run's decision g_hw (decision_hw with the run's stored
   costs and the corpus's E_true: SPEC 6 "g_hw of the corpus is always timed"), plus every --gamma;
   the cost curve is timed at every one of them. This session's own choices (g_hw, g_iid from
   decision_hw with this session's costs) are recorded in "choices", not timed. With --batch-costs,
   the costs by batch are measured after the cost rounds (llamacpp/costs.measure_batch_costs: contexts
   of n_seq_max = B, the B = 1 column reused from the rounds) and stored as the run's, so the report's
   by-batch table appears for the llama.cpp run.
4. Per prompt, methods alternating (order reversed every other prompt):
   - plain greedy: llama.cpp decoding through the binding, the prompt but its last token prefilled
     untimed, then n 1-token decodes with an argmax each (timed: what llama-speculative-simple's
     "decoded ... in X seconds" covers);
   - llama.cpp's speculative decoder: `llama-speculative-simple --spec-type draft-simple
     --spec-draft-n-max G --spec-draft-n-min 0 --spec-draft-p-min 0 --temp 0 --top-k 1 -n (n-1) -v`
     (fixed-length greedy drafting; -n n-1 makes it emit exactly n tokens, see core/speclog.py),
     timed by its own "decoded" line; its -v log gives every block's drafted tokens, accepted count
     and target token (core/speclog.parse_speculative_log).
   Each output is compared with the stored y (token identity up to the first divergence, recorded).
5. Per (corpus, g): specterm.core.hardware.summarize_results's rows over hardware.timing_rows
   (realized = sum greedy s / sum speculative s, greedy timed to the token count the speculative run
   emitted; predicted = S_hw with E of these prompts' exact walk and the engine's block cost
   c_verify(g) + g c_draft + c_draft_fwd(g), costmodel: llama.cpp's draft-simple speculator feeds the
   (g+1)-token verification batch to the draft once per block; predicted_without_engine_term:
   SPEC 6's block alone), plus
   - tokens_per_call_walk: the same count from the walk llama.cpp makes on the stored bits
     (speclog.capped_walk_accepts), and the accepted-run histograms of both.
6. When every prompt is done: SPEC 6's decision checks (oracle/confirm.decision_checks, i.e.
   hardware.decision_check, the one implementation torch confirmations use too: leave-out E, the
   run's stored costs, the 95% prediction interval for K prompts, in_ci, sign_held, cost drift),
   stored with the record. Every prompt row records its context (prompt + n/2) and the record its
   cost context, as torch records do.

The record goes to run.json's "confirmations" (oracle/confirm.write_confirmation: atomic, under the
run lock), rewritten after every prompt with "complete": false; it carries engine: "llama.cpp".
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.blockwalk import E_iid as E_iid_formula
from specterm.core.crossstack import first_divergence, histogram
from specterm.core.errors import SpectermError
from specterm.core.hardware.profiles import decision_profile
from specterm.core.machine import default_threads, this_machine
from specterm.core.costmodel import refeed_counts
from specterm.core.hardware import cost_curve, decision_hw, summarize_results, timing_rows
from specterm.core.progress import Progress, ProgressCallback, check_cancel
from specterm.core.speclog import (
    SpecLog,
    capped_walk_accepts,
    n_predict_for,
    parse_speculative_log,
)
from specterm.core.store import hardware_info, load_run, model_key, new_meta
from specterm.oracle.costs import COST_GAMMAS
from specterm.oracle.costs import context_ids, session_rounds
from specterm.oracle.llamacpp import binaries as B
from specterm.oracle.llamacpp import models as LM

DEFAULT_GAMMAS = (1, 4, 8)  # always timed (where the stream is long enough), beside the run's decision g_hw
SPEC_ARGS = ("--spec-type", "draft-simple", "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "--temp", "0",
             "--top-k", "1", "-v")


@dataclass
class LlamaConfirmConfig:
    run: Path
    per_corpus: int = 2
    gammas: tuple[int, ...] = ()
    corpora: tuple[str, ...] | None = None
    max_new_tokens: int | None = None
    threads: int = 1
    cost_repeats: int = 5
    cost_gammas: tuple[int, ...] = COST_GAMMAS
    target: str | None = None
    draft: str | None = None
    llama_bin: Path | None = None
    llama_src: Path | None = None
    build_jobs: int = 1
    keep_logs: Path | None = None  # directory to copy every speculative -v log into
    batch_costs: bool = False      # also measure the costs by batch (B = 1, 2, 4, 8) and store them as the run's


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
    return parse_speculative_log(log), wall, log


def _resolve(meta: dict[str, Any], role: str, override: str | None) -> Path:
    from specterm.core.store import model_location
    from specterm.oracle import models as M

    entry = meta.get(role)
    if override is None and not isinstance(entry, dict):
        raise SpectermError(f"run.json names no {role} model; confirm needs a run made by `specterm run` (or pass --{role}).")
    ms = M.resolve_spec(model_location(entry, override))
    if ms.kind != "gguf":
        raise SpectermError(f"--engine llama.cpp needs GGUF models; the run's {role} is {ms.spec}.")
    if model_key({"sha256": ms.sha256}) != model_key(entry):
        raise SpectermError(f"the {role} model found now is not the one this run was made with (checksum differs); "
                            "restore the original file or re-run `specterm run`.")
    return LM.gguf_path(ms)


def confirm_llamacpp(config: LlamaConfirmConfig, on_progress: ProgressCallback | None = None,
                     cancel: threading.Event | None = None) -> dict[str, Any]:
    """Run the confirmation (module docstring); returns the record written to run.json."""
    from specterm.oracle.confirm import corpus_E, select_streams, write_confirmation
    from specterm.oracle.llamacpp.costs import LlamaCostSampler
    from specterm.oracle.llamacpp.run import context_size

    report = on_progress or (lambda p: None)
    log = lambda msg: report(Progress("checking", msg))
    t_start = time.perf_counter()
    run_dir = Path(config.run)
    run = load_run(run_dir)
    chosen = select_streams(run.streams, config.per_corpus, config.corpora, gate_held=False)
    extra = sorted({int(g) for g in config.gammas})
    if any(g < 1 or g > max(COST_GAMMAS) for g in extra):
        raise SpectermError(f"--gamma must be between 1 and {max(COST_GAMMAS)}.")
    here = decision_profile(run.meta, this_machine())  # the run's decision on this machine: its profile's costs
    run_curve = cost_curve(here.cost) if here is not None else None
    by_corpus = corpus_E(run.streams, np.array(COST_GAMMAS, dtype=np.int64))
    decision_g: dict[str, int | None] = {}
    for name in sorted({s.corpus for s in chosen}):
        decision_g[name] = (decision_hw(COST_GAMMAS, by_corpus[name][0], None, run_curve).gamma_hw
                            if run_curve is not None and name in by_corpus else None)
    timed = {*DEFAULT_GAMMAS, *extra, *(g for g in decision_g.values() if g is not None)}
    # the cost curve covers every g timed, so each has a prediction with this session's costs
    cost_gammas = np.array(sorted({int(g) for g in config.cost_gammas} | timed), dtype=np.int64)
    if config.threads < 1:
        raise SpectermError("--threads must be at least 1.")
    meta = run.meta
    t_path = _resolve(meta, "target", config.target)
    d_path = _resolve(meta, "draft", config.draft)
    exe = B.find_binary(config.llama_bin)
    if exe is None:
        if config.llama_bin is not None:
            raise SpectermError(f"{config.llama_bin} has no {B.SPEC_BINARY}; {B.BUILD_HINT}.")
        exe = B.build(config.llama_src, config.build_jobs, log)

    probe = LM.load_gguf(t_path, 64, config.threads, vocab_only=True)
    items = []
    for s in chosen:
        n_cmp = s.n if config.max_new_tokens is None else min(s.n, config.max_new_tokens)
        if n_cmp < 3:  # the speculative run needs -n n - 1 - g >= 1
            continue
        assert s.prompt is not None and s.y is not None  # select_streams keeps only streams that have both
        ids = probe.tokenize(s.prompt)
        refeeds, blocks = refeed_counts(s.bits[:n_cmp], cost_gammas)
        items.append({"stream": s, "ids": ids, "y": s.y[:n_cmp].tolist(), "n": n_cmp,
                      "blocks": {int(g): int(b) for g, b in zip(cost_gammas, blocks)},
                      "refeeds": {int(g): int(r) for g, r in zip(cost_gammas, refeeds)}})
    if not items:
        raise SpectermError("no stored stream has two or more tokens to time; check --max-new-tokens.")
    n_ctx = context_size([len(it["ids"]) for it in items], max(it["n"] for it in items))
    LM.probe_decode(t_path)
    LM.probe_decode(d_path)
    report(Progress("loading", f"loading {t_path.name} and {d_path.name} in llama.cpp ({config.threads} thread(s))"))
    target = LM.load_gguf(t_path, n_ctx, config.threads)
    draft = LM.load_gguf(d_path, n_ctx, config.threads)
    eog = LM.eog_ids(target)
    check_cancel(cancel)

    ctx_len = round(float(np.mean([len(it["ids"]) + it["n"] / 2 for it in items])))
    ctx = context_ids(items[0]["ids"] + items[0]["y"], ctx_len)
    report(Progress("cost", f"measuring llama.cpp costs at context {ctx_len} ({config.cost_repeats} interleaved repeats)"))

    def on_measure(i, total, label, seconds):
        report(Progress("cost", f"cost {i}/{total}: {label} {seconds:.3f} s", elapsed_s=time.perf_counter() - t_start))

    sampler = LlamaCostSampler(target, draft, ctx, cost_gammas.tolist(), on_measure=on_measure, cancel=cancel)
    session_cost = session_rounds(sampler, config.cost_repeats, len(items),
                                  "specterm confirm --engine llama.cpp (rounds before the generations and one after every prompt)")

    cost = session_cost()
    curve = cost_curve(cost)
    batch_record = None
    if config.batch_costs:
        from specterm.oracle.llamacpp.costs import measure_batch_costs, reused_b1_llamacpp

        report(Progress("cost", f"measuring llama.cpp costs by batch at context {ctx_len}"))
        batch_record = measure_batch_costs(target, draft, ctx, reuse=reused_b1_llamacpp(cost), on_measure=on_measure,
                                           cancel=cancel)
        batch_record["measured_at"] = new_meta("")["created"]
    by_corpus = corpus_E(run.streams, cost_gammas)
    choices: dict[str, dict[str, Any]] = {}
    for name in sorted({it["stream"].corpus for it in items}):
        E_true, alpha, phi = by_corpus[name]
        d = decision_hw(cost_gammas, E_true, E_iid_formula(alpha, cost_gammas), curve, phi_true=phi)
        gammas = sorted(g for g in {*DEFAULT_GAMMAS, decision_g.get(name), *extra} if g is not None)
        choices[name] = {"gamma_hw": d.gamma_hw, "speedup_hw": d.speedup_hw, "gamma_hw_refeed": d.gamma_hw_refeed,
                         "speedup_hw_refeed": d.speedup_hw_refeed, "gamma_iid_hw": d.gamma_iid_hw,
                         "speedup_iid_hw": d.speedup_iid_hw, "gamma_mb": d.gamma_mb, "speedup_mb": d.speedup_mb,
                         "gammas": gammas, "verdict": d.verdict, "gamma_decision": decision_g.get(name),
                         "decision_costs": "the run's stored costs" if run_curve is not None else None}
    E_table = {name: {int(g): (float(e), float(p)) for g, e, p in zip(cost_gammas, by_corpus[name][0], by_corpus[name][2])}
               for name in choices}
    record: dict[str, Any] = {
        "date": new_meta("")["created"],
        "engine": "llama.cpp",
        "specterm_version": meta.get("specterm_version"),
        "device": "cpu",
        "dtype": meta.get("dtype"),
        "threads": config.threads,
        "backend": LM.engine_info(config.threads),
        "binary": {**B.binary_info(exe), "args": list(SPEC_ARGS)},
        "hardware": hardware_info(),
        "load_avg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "per_corpus": config.per_corpus,
        "max_new_tokens": config.max_new_tokens,
        "context_timed": ctx_len,
        "cost_context": ctx_len,
        "cost_context_rule": "mean over the timed prompts of prompt tokens + n/2 (n = tokens compared)",
        "run_cost_context": (meta.get("cost") or {}).get("context"),
        "complete": False,
        "method": ("per (corpus, g): realized = sum greedy s / sum speculative s over the same prompts, methods alternating "
                   "(order reversed every other prompt); greedy: llama.cpp 1-token decodes + argmax through the binding "
                   "(prefill untimed); speculative: llama-speculative-simple's own 'decoded' seconds (prefill untimed); "
                   "predicted = S_hw(g) with E = tokens / blocks of the exact walk of these prompts, this session's "
                   "robust costs and the engine's block cost c_verify(g) + g c_draft + c_draft_fwd(g) (draft-simple's "
                   "(g+1)-token draft forward per block)"),
        "cost": cost,
        "choices": choices,
        "prompts": [],
        "results": [],
    }
    index = write_confirmation(run_dir, record, None)

    # Warm-up (untimed): one short greedy generation and one speculative run.
    first = items[0]
    greedy_timed(target, first["ids"], 2, eog)
    run_speculative(speculative_command(exe, t_path, d_path, first["stream"].prompt,
                                        choices[first["stream"].corpus]["gammas"][0], 2, config.threads, n_ctx))
    return _time(config, items, choices, E_table, record, index, sampler, session_cost, target, draft, eog, exe,
                 t_path, d_path, n_ctx, run_dir, report, cancel, t_start, batch_record)


def _time(config, items, choices, E_table, record, index, sampler, session_cost, target, draft, eog, exe, t_path,
          d_path, n_ctx, run_dir, report, cancel, t_start, batch_record=None) -> dict[str, Any]:
    from specterm.oracle.confirm import decision_checks, write_confirmation

    total = sum(1 + len(choices[it["stream"].corpus]["gammas"]) for it in items)
    done = 0
    for idx, it in enumerate(items):
        s = it["stream"]
        methods: list[Any] = ["greedy", *choices[s.corpus]["gammas"]]
        if idx % 2:
            methods.reverse()
        row: dict[str, Any] = {"corpus": s.corpus, "id": s.id, "tokens": it["n"], "prompt_tokens": len(it["ids"]),
                               "context": len(it["ids"]) + it["n"] / 2,
                               "gate_valid_len": s.valid_len, "gate_rate": s.gate_rate,
                               "order": [str(m) for m in methods], "spec": {}}
        for m in methods:
            check_cancel(cancel)
            label = f"{s.id} {'greedy' if m == 'greedy' else f'g={m}'}"
            report(Progress("generating", f"{s.corpus}/{label}: generating {it['n']} tokens", n_prompts=total,
                            prompts_done=done, prompt_index=idx, prompt_id=label, corpus=s.corpus,
                            elapsed_s=time.perf_counter() - t_start))
            if m == "greedy":
                toks, stamps, cpu = greedy_timed(target, it["ids"], it["n"], eog)
                mm = first_divergence(toks, it["y"])
                row.update(greedy_s=stamps[-1], greedy_cpu_s=cpu, greedy_identical=mm is None, greedy_first_mismatch=mm,
                           greedy_tokens=len(toks), greedy_cum_s=stamps)
                msg = f"{len(toks)} tokens in {stamps[-1]:.2f} s"
            else:
                g = int(m)
                n_predict = n_predict_for(it["n"], g)
                if n_predict < 1:
                    done += 1
                    continue
                cmd = speculative_command(exe, t_path, d_path, s.prompt, g, n_predict, config.threads, n_ctx)
                slog, wall, raw = run_speculative(cmd)
                if config.keep_logs is not None:
                    config.keep_logs.mkdir(parents=True, exist_ok=True)
                    (config.keep_logs / f"{s.corpus}-{s.id}-g{g}.log").write_text(raw, encoding="utf-8")
                toks = slog.tokens
                mm = first_divergence(toks, it["y"][: len(toks)])
                walk = capped_walk_accepts(s.bits[: it["n"]], g, n_predict)
                ks = slog.accepted
                row["spec"][str(g)] = {
                    "s": float(slog.decoded_s if slog.decoded_s is not None else wall), "wall_s": wall,
                    "n_predict": n_predict, "tokens_out": len(toks),
                    "target_calls": slog.target_calls, "draft_calls": int(slog.drafted.sum()),
                    "walk_calls": int(walk.size), "walk_tokens": int(walk.sum() + walk.size),
                    "blocks_walk": int(walk.size), "refeeds_walk": int(np.count_nonzero(walk[:-1] == g)),
                    "identical": mm is None, "first_mismatch": mm,
                    "accepted": ks.tolist(), "drafted": slog.drafted.tolist(), "walk_accepted": walk.tolist(),
                    "histogram": histogram(ks, g), "histogram_walk": histogram(walk, g),
                    "counters": slog.counters,
                }
                msg = (f"{len(toks)} tokens in {row['spec'][str(g)]['s']:.2f} s, {slog.target_calls} target calls "
                       f"(walk {walk.size})")
            done += 1
            same = "identical to the stored y" if mm is None else f"DIFFERS from the stored y at token {mm}"
            report(Progress("generating", f"{s.corpus}/{label}: {msg}, {same}", n_prompts=total, prompts_done=done,
                            prompt_index=idx, prompt_id=label, corpus=s.corpus))
        record["prompts"].append(row)
        sampler.round()
        record["cost"] = session_cost()
        record["results"] = results(record["prompts"], record["cost"], E_table)
        write_confirmation(run_dir, record, index)
    record["decision_checks"] = decision_checks(run_dir, record)
    record["complete"] = True
    record["load_avg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    record["seconds"] = time.perf_counter() - t_start
    if batch_record is not None:
        record["batch_costs_measured"] = True
    write_confirmation(run_dir, record, index, None, batch_record)
    report(Progress("done", f"llama.cpp confirmation of {len(items)} prompt(s) appended to {run_dir / 'run.json'}"))
    return record


def results(prompt_rows: list[dict[str, Any]], cost: dict[str, Any], E_table) -> list[dict[str, Any]]:
    """summarize_results rows (over hardware.timing_rows; their S_hw with the engine's block cost, since the
    session's curve carries c_draft_fwd) plus the llama.cpp columns (module docstring, step 5):
    tokens_per_call_walk = the walk's tokens / its target calls, the gap of the real count to it, the
    histograms; realized_over_engine = realized / predicted_engine."""
    curve = cost_curve(cost)
    assert curve is not None and curve.c_draft_fwd is not None  # the session's costs were just measured
    rows = summarize_results(timing_rows(prompt_rows), curve, E_table)
    for r in rows:
        g = str(r["gamma"])
        sp = [p["spec"][g] for p in prompt_rows if p["corpus"] == r["corpus"] and g in p["spec"]]
        walk_calls = sum(x["walk_calls"] for x in sp)
        r["tokens_per_call_walk"] = sum(x["walk_tokens"] for x in sp) / walk_calls if walk_calls else None
        r["tokens_per_call_gap"] = (r["tokens_per_call"] / r["tokens_per_call_walk"] - 1.0
                                    if r["tokens_per_call_walk"] else None)
        agree = [x for x in sp if x["identical"]]
        r["identical_prompts"] = len(agree)
        r["tokens_per_call_agree"] = (sum(x["tokens_out"] for x in agree) / sum(x["target_calls"] for x in agree)
                                      if agree else None)
        r["tokens_per_call_walk_agree"] = (sum(x["walk_tokens"] for x in agree) / sum(x["walk_calls"] for x in agree)
                                           if agree else None)
        r["histogram"] = np.sum([x["histogram"] for x in sp], axis=0).tolist()
        r["histogram_walk"] = np.sum([x["histogram_walk"] for x in sp], axis=0).tolist()
        r["realized_over_engine"] = r["realized"] / r["predicted_engine"] if r["predicted_engine"] else None
    return rows


def confirm_command(*, run: Path, per_corpus: int, gamma: list[int], corpus: str | None,
                    max_new_tokens: int | None, threads: int | None, repeats: int, target: str | None = None,
                    draft: str | None = None, llama_bin: Path | None = None, llama_src: Path | None = None,
                    keep_logs: Path | None = None, cost_max_gamma: int = 16, batch_costs: bool = False) -> None:
    """CLI glue (headless progress); Ctrl-C keeps finished prompts."""
    import sys

    from specterm.core.progress import Cancelled
    from specterm.core.store import check_writable, read_meta
    from specterm.oracle.llamacpp import require_binding
    from specterm.oracle.confirm import log_decision_checks
    from specterm.runner import headless_progress

    read_meta(Path(run))
    check_writable(Path(run))  # a read-only or locked run: refused before models load and costs are timed
    require_binding()
    if repeats < 1:
        raise SpectermError("--repeats must be at least 1.")
    config = LlamaConfirmConfig(run=Path(run), per_corpus=per_corpus, gammas=tuple(gamma),
                                corpora=tuple(c.strip() for c in corpus.split(",")) if corpus else None,
                                max_new_tokens=max_new_tokens, threads=default_threads(os.cpu_count()) if threads is None else threads,
                                cost_repeats=repeats, target=target, draft=draft, llama_bin=llama_bin,
                                llama_src=llama_src, keep_logs=keep_logs, batch_costs=batch_costs,
                                cost_gammas=tuple(range(1, cost_max_gamma + 1)))
    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            record = confirm_llamacpp(config, on_progress)
    except (Cancelled, KeyboardInterrupt):
        print(f"interrupted: the finished prompts are kept in {Path(run) / 'run.json'} (confirmation marked incomplete).",
              file=sys.stderr)
        raise SystemExit(130) from None
    log_decision_checks(record, log)
    for r in record["results"]:
        log(f"{r['corpus']:>12} g={r['gamma']:<2} predicted {r['predicted_engine']:.2f}x "
            f"(SPEC 6 block alone {r['predicted_without_engine_term']:.2f}x)  "
            f"realized {r['realized']:.2f}x  tokens/call {r['tokens_per_call']:.3f} (walk {r['tokens_per_call_walk'] or 0:.3f})  "
            f"{'identical' if r['identical'] else 'OUTPUTS DIFFER'}")
