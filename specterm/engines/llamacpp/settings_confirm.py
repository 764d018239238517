"""`specterm confirm RUN --engine llama.cpp --settings`: the llama.cpp settings specterm emits (SPEC 7
engine_settings, core/settings), run as emitted and timed: confirmed as configured.

Per corpus, the report's llama.cpp answer on the profile of this machine: the policy it sets (or, where the
verdict is "run without speculation", the best it could set, to test the prediction all the same), passed
to llama-speculative-simple with exactly the emitted flags (--spec-type draft-simple --spec-draft-n-max
--spec-draft-n-min --spec-draft-p-min) plus --temp 0 --top-k 1 -v, against llama.cpp greedy decoding
through the binding (engines/llamacpp/confirm_llamacpp.greedy_timed), methods alternating on every other prompt,
the first K prompts of the corpus.

    realized   = sum greedy s / sum speculative s over the K prompts (greedy timed to the token count the
                 speculative run emitted; llama-speculative-simple's own "decoded" seconds)
    predicted  = the policy's S on the corpus's other streams (leave-out) at the profile's stored costs,
                 with its 95% prediction interval for K prompts (core/settings/speedup.prediction_interval)
    replay     = the policy's target calls on the timed prompts (core/settings/speedup.depth_counts) beside
                 the calls llama.cpp made (its -v log), tokens per call each

The record goes to run.json's "settings_confirmations" (atomic, under the run lock); the report's
calibration table counts each row as a decision check beside the fixed-g ones.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.decide.hardware import cost_curve, run_cost_uncertainty
from specterm.core.decide.hardware.profiles import decision_profile, profile_meta
from specterm.core.decide.machine import default_threads, this_machine
from specterm.core.params import BOOT, SEED
from specterm.core.settings import names as nm
from specterm.core.settings.engine_policies import llama_settings
from specterm.core.settings.for_report import SETTINGS_CONFIRMATIONS_KEY, draft_kind
from specterm.core.settings.speedup import FIXED, STOP, Policy, block_costs, depth_counts, prediction_interval, stack
from specterm.core.compare.speclog import n_predict_for
from specterm.engines.confirm_record import write_confirmation_key

EXTRA_ARGS = ("--temp", "0", "--top-k", "1", "-v")


def _policy(es: Any) -> Policy:
    spec = {"policy": es.policy, "params": es.params} if es.speculate else (es.best or {})
    kind, p = spec.get("policy"), spec.get("params") or {}
    if kind == FIXED:
        return Policy(FIXED, int(p["gamma"]))
    if kind == STOP:
        return Policy(STOP, int(p["g_max"]), float(p["tau"]))
    raise SpectermError(f"the report's llama.cpp answer is {kind!r}, which this confirmation cannot run.")


def settings_command(exe: Path, target: Path, draft: Path, prompt: str, policy: Policy, n_predict: int,
                     threads: int, n_ctx: int) -> list[str]:
    """llama-speculative-simple with the emitted settings (names.py), as a person would paste them."""
    flags = [str(x) for kv in llama_settings(policy).items() for x in kv]
    return [str(exe), nm.LLAMA_MODEL, str(target), nm.LLAMA_DRAFT_MODEL, str(draft), "-p", prompt, "--no-escape",
            "-n", str(n_predict), *flags, *EXTRA_ARGS, "-t", str(threads), "-tb", str(threads), "-td", str(threads),
            "-tbd", str(threads), "-c", str(n_ctx)]


def confirm_settings(run_dir: Path, per_corpus: int = 2, threads: int | None = None, llama_bin: Path | None = None,
                     llama_src: Path | None = None, corpora: tuple[str, ...] | None = None,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    from specterm.core.report.analysis import analyse
    from specterm.core.store import load_run
    from specterm.engines.confirm import select_streams
    from specterm.engines.llamacpp import binaries as B
    from specterm.engines.llamacpp import models_llamacpp as LM
    from specterm.engines.llamacpp.confirm_llamacpp import greedy_timed, resolve_gguf, run_speculative

    run = load_run(run_dir)
    machine = this_machine()
    threads = threads or default_threads(machine.cores)
    prof = decision_profile(run.meta, machine)
    if prof is None or not prof.matches(machine, "llama.cpp"):
        raise SpectermError(f"this run has no llama.cpp cost profile of this machine; measure one with `specterm costs {run_dir}`.")
    view = profile_meta(run.meta, prof)
    drift = view["cost_drift"]  # the drift of costs between sessions on this machine its intervals carry
    curve = cost_curve(view.get("cost"))
    reps = run_cost_uncertainty(view, BOOT, SEED).reps
    log("analysing the run for its engine settings")
    report = analyse([run], boot=BOOT)
    exe = B.find_binary(llama_bin) or B.build(llama_src, jobs=1, log=log)
    t_path, d_path = resolve_gguf(run.meta, "target", None), resolve_gguf(run.meta, "draft", None)
    streams = select_streams(run.streams, per_corpus, corpora, gate_held=False)
    target = LM.load_gguf(t_path, 4096, threads)
    eog = LM.eog_ids(target)
    record: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "engine": nm.LLAMA_CPP,
                              "machine": prof.label(), "profile": prof.id, "drafter": draft_kind(run.meta),
                              "threads": threads, "binary": str(exe), "source_version": nm.LLAMA_SOURCE.version,
                              "method": __doc__.split("\n\n")[1] if __doc__ else "", "results": []}
    index = None
    for corpus in sorted({s.corpus for s in streams}):
        es = report.sets[corpus].engine_settings.get(nm.LLAMA_CPP)
        if es is None:
            continue
        policy = _policy(es)
        timed = [s for s in streams if s.corpus == corpus]
        rows = []
        for i, s in enumerate(timed):
            assert s.prompt is not None
            ids = target.tokenize(s.prompt)
            n_predict = n_predict_for(s.n, policy.gamma)
            if n_predict < 1:
                continue
            order = ("greedy", "spec") if i % 2 == 0 else ("spec", "greedy")
            got: dict[str, Any] = {}
            for what in order:
                if what == "greedy":
                    toks, stamps, _ = greedy_timed(target, ids, n_predict + 1, eog)
                    got["greedy"] = (toks, stamps)
                else:
                    cmd = settings_command(exe, t_path, d_path, s.prompt, policy, n_predict, threads, 4096)
                    slog, wall, _ = run_speculative(cmd)
                    got["spec"] = (slog, wall)
            slog, wall = got["spec"]
            toks, stamps = got["greedy"]
            out = slog.tokens
            m = min(len(out), len(stamps))
            spec_s = float(slog.decoded_s if slog.decoded_s is not None else wall)
            y = [int(t) for t in np.asarray(s.y)[: len(out)]] if s.y is not None else []
            rows.append({"id": s.id, "tokens": len(out), "greedy_s": float(stamps[m - 1]), "spec_s": spec_s,
                         "target_calls": slog.target_calls, "identical": list(out) == y,
                         "accepted": int(slog.accepted.sum()), "drafted": int(slog.drafted.sum())})
            log(f"{corpus} {s.id}: {len(out)} tokens, greedy {stamps[m - 1]:.2f} s, {policy.describe()} {spec_s:.2f} s")
        if not rows:
            continue
        others = [x for x in run.streams if x.corpus == corpus and x.id not in {r["id"] for r in rows}]
        costs = block_costs(curve, reps, max(int(curve.gammas.max()) if curve is not None else 32, 64), 0.2)
        leave = stack([x.a for x in others], [None if x.draft_conf is None else x.analysed(x.draft_conf) for x in others])
        value, pi = prediction_interval(leave, policy, costs, len(rows), BOOT, SEED, drift["sigma"])
        mine = stack([x.a for x in timed], [None if x.draft_conf is None else x.analysed(x.draft_conf) for x in timed])
        H = depth_counts(mine, policy, costs.width)
        realized = sum(r["greedy_s"] for r in rows) / sum(r["spec_s"] for r in rows)
        result = {"corpus": corpus, "policy": policy.describe(), "settings": llama_settings(policy),
                  "speculate": es.speculate, "prompts": len(rows), "realized": realized, "predicted": value,
                  "pi": list(pi), "drift": drift, "in_pi": pi[0] is not None and pi[1] is not None and pi[0] <= realized <= pi[1],
                  "tokens_per_call": sum(r["tokens"] for r in rows) / max(1, sum(r["target_calls"] for r in rows)),
                  "tokens_per_call_replay": float(mine.lengths.sum() / max(1, H.sum())),
                  "identical_prompts": sum(r["identical"] for r in rows), "rows": rows,
                  "report_predicted": es.predicted.to_dict()}
        record["results"].append(result)
        index = write_confirmation_key(run_dir, SETTINGS_CONFIRMATIONS_KEY, record, index)
        lo, hi = pi
        log(f"{corpus}: realized {realized:.2f}x, predicted {value:.2f}x [{lo:.2f}, {hi:.2f}] for {len(rows)} prompts "
            f"({'inside' if result['in_pi'] else 'outside'})")
    record["complete"] = True
    record["finished"] = time.time()
    write_confirmation_key(run_dir, SETTINGS_CONFIRMATIONS_KEY, record, index)
    return record
