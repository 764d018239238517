"""The `specterm` command line (typer). Heavy imports live inside the commands so `--help` is instant.

run / merge are implemented in specterm/runner.py (the CLI layer: it may open the app, the oracle never does); import / report / list call specterm.core;
open and the no-argument form start the Textual app (specterm.app.make_app).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional

import typer

from specterm.core.params import BOOT, COSTS_MAX_ROUNDS as MAX_ROUNDS, COSTS_MAX_SECONDS as MAX_SECONDS, GAMMA_DEFAULT, GAMMA_MAX, SEED, SHUFFLES
from specterm import startup
from specterm.startup import fail, open_runs, open_streams, open_tui, tui_shortcut, warn  # noqa: F401  (tui_shortcut: re-exported)

if TYPE_CHECKING:
    from specterm.core.report.types import Report
    from specterm.core.store import RunFiles

MAX_BOOT = 100_000          # bootstrap resamples: CIs settle long before; the weights alone are boot x prompts x 8 bytes
MAX_SHUFFLES = 10_000      # random in-place shuffles of the comparison estimator
MAX_SEED = 2**63 - 1
MAX_THREADS = 1024         # CPU threads per forward
MAX_NEW_TOKENS = 1_000_000  # positions of one continuation
MAX_PROMPTS = 1_000_000    # --limit, --per-corpus
MAX_BATCH = 4096           # prompts per batch
MAX_REPEATS = 1000         # timed rounds
MAX_WAIT_S = 86_400.0      # --max-seconds, --quiet-wait: a day


def _finite(value: Optional[float]) -> Optional[float]:
    """A float option's check beyond its range: nan compares false with both bounds, so say it here."""
    import math

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number of seconds; give a finite number.")
    return value


SHUFFLES_HELP = ("The hetero/temporal split's shuffle control: -1 (default) the exact expectation over in-place "
                 "orderings (no shuffle noise, the same for every --seed); N > 0 the mean over N random in-place "
                 "shuffles, for comparison; 0 no split.")

app = typer.Typer(
    name="specterm",
    help=(
        "Should you speculate, and with which draft length? specterm runs an exact greedy oracle "
        "for a draft/target pair, stores every prompt's accept/reject stream, and analyses it.\n\n"
        "With no command it opens the TUI on the runs in ./streams."
    ),
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# ------------------------------------------------------------------------------ run / merge ---


@app.command("run")
def run_cmd(
    target: str = typer.Option(..., "--target", "-t", help="Target model: Hugging Face id, local directory, or .gguf file."),
    draft: List[str] = typer.Option(
        ..., "--draft", "-d",
        help="Draft model: Hugging Face id, local directory, .gguf file, or 'layers:K' (the target's first K layers, a "
             "layer-skip self-draft); or a drafter without a draft model (SPEC 2b): 'prompt-lookup[:N]' (Hugging Face's "
             "prompt lookup, max n-gram N, default 2) or 'ngram-simple[:N]' (llama.cpp's, size_n N = 12; its draft length g is size_m). "
             "Drafters may be repeated: y and the target pass are shared, one run per drafter.",
    ),
    corpus: Optional[str] = typer.Option(
        None, "--corpus", "-c", help="Built-in corpora, comma-separated (prose,code,json,math,multilingual,grounded). Default: all."),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="Prompts file: jsonl with id/corpus/prompt, or plain text with one prompt per line."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Hugging Face dataset NAME[:split:field] (needs network)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, max=MAX_PROMPTS, help="At most this many prompts per corpus."),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", "-n", min=1, max=MAX_NEW_TOKENS, help="Length of each greedy continuation y."),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda|mps (auto: cuda, then mps, then cpu)."),
    dtype: str = typer.Option("auto", "--dtype", help="auto|float32|bfloat16|float16 (auto: bfloat16 on cuda, float32 otherwise and for GGUF)."),
    batch_size: int = typer.Option(4, "--batch-size", "-b", min=1, max=MAX_BATCH,
                                   help="Prompts per batch, for greedy generation and for the teacher-forced passes."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory (default: streams/<draft>-<target>)."),
    resume: bool = typer.Option(
        False, "--resume",
        help="Continue an interrupted run: finished prompts are kept and skipped. With --backend llama.cpp, stored streams "
             "written before the repair loop (SPEC 1.3) are first repaired in place on this machine."),
    headless: bool = typer.Option(False, "--headless", help="No TUI: a plain progress display fit for nohup/SSH logs."),
    spec_gamma: int = typer.Option(
        0, "--spec-gamma", min=0, max=GAMMA_MAX,
        help="How y is built. 0 (default): batched raw-argmax greedy, --batch-size prompts at a time (fastest on CPU and GPU). "
             "G > 0: lossless speculative decoding with the draft at draft length G, one prompt at a time (live accept/reject view).",
    ),
    shard: Optional[str] = typer.Option(
        None, "--shard", help="i/N: take the i-th of N deterministic shares of the prompts (0-based); merge with `specterm merge`."),
    cost: bool = typer.Option(True, "--cost/--no-cost", help="Measure the cost ratio r = c_draft / c_verify on this hardware."),
    remeasure_cost: bool = typer.Option(False, "--remeasure-cost", help="With --resume: measure r again, e.g. on an idle machine (earlier values are kept)."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow model code from the hub (off by default)."),
    record_paths: bool = typer.Option(
        False, "--record-paths",
        help="Keep the models' absolute local paths in run.json (default: a local model is named by its file name and sha256, so a run can be shared).",
    ),
    backend: str = typer.Option(
        "torch", "--backend",
        help="torch (default) or llama.cpp: GGUF files only, y and logits from llama.cpp's own kernels, llama.cpp costs "
             "(needs the llamacpp extra: pip install -e \".[llamacpp]\").",
    ),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="llama.cpp threads with --backend llama.cpp (default 1)."),
    y_from: Optional[Path] = typer.Option(
        None, "--y-from",
        help="With drafters: take y of each prompt that this earlier run of the same target stores (same prompt text and "
             "-n) instead of decoding it again; this run's teacher-forced gate still checks every position."),
) -> None:
    """Run the exact oracle: greedy y from the target, one teacher-forced pass per model, a_t per position.

    Every argument is checked (prompts encoded with the tokenizer, layers:K against the config,
    --out writable, --resume settings unchanged) before any model is loaded."""
    params = dict(locals())
    backend = params.pop("backend")
    threads = params.pop("threads")
    y_from = params.pop("y_from")
    from specterm.engines.drafters.base import is_drafter_spec

    drafters = [d for d in draft if is_drafter_spec(d)]
    if drafters:
        if len(drafters) != len(draft):
            fail("--draft mixes a draft model with drafters; run the model draft and the drafters as two commands.")
        if backend != "torch" or threads is not None or spec_gamma:
            fail("drafters run on the torch backend with batched greedy y; leave out --backend, --threads and --spec-gamma.")
        from specterm.runner import run_drafters_command

        run_drafters_command(**params, y_from=y_from)
        return
    if y_from is not None:
        fail("--y-from is for drafters (prompt-lookup, ngram-simple); a draft model's run builds its own y.")
    if len(draft) != 1:
        fail("--draft names one draft model (only drafters without a model, e.g. prompt-lookup, may be repeated).")
    params["draft"] = draft[0]
    if backend not in ("torch", "llama.cpp"):
        fail(f"unknown --backend {backend}; use torch or llama.cpp.")
    from specterm.runner import run_command

    run_command(**params, backend=backend, threads=threads)


@app.command("merge")
def merge_cmd(
    shards: List[Path] = typer.Argument(..., help="Shard run directories written with --shard i/N (or by torchrun ranks)."),
    out: Path = typer.Option(..., "--out", "-o", help="Merged run directory."),
    allow_partial: bool = typer.Option(False, "--allow-partial",
                                       help="Merge a set that lacks some shards of the run (a warning names them)."),
) -> None:
    """Merge shard runs of the same models into one run (each prompt exactly once; every shard i/N of the run)."""
    from specterm.runner import merge_command

    merge_command(shards=shards, out=out, allow_partial=allow_partial)


# ------------------------------------------------------------------------------------ confirm ---


@app.command("confirm")
def confirm_cmd(
    run: Path = typer.Argument(
        ..., help="Run directory made by `specterm run` (its models are found by name and checksum under $SPECTERM_MODELS or ./models)."),
    per_corpus: int = typer.Option(2, "--per-corpus", "-k", min=1, max=MAX_PROMPTS, help="Prompts per corpus (the first ones of the run whose gate held)."),
    gamma: List[int] = typer.Option([], "--gamma", "-g", min=1, max=GAMMA_MAX,
                                    help=("Also time this draft length (repeatable); g_hw and g_iid are always timed "
                                                                   "(--engine llama.cpp: g = 1, 4, 8 and the run's g_hw).")),
    corpus: Optional[str] = typer.Option(None, "--corpus", "-c", help="Only these corpora of the run, comma-separated. Default: all."),
    device: Optional[str] = typer.Option(None, "--device", help="auto|cpu|cuda|mps (default: the run's device)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="float32|bfloat16|float16 (default: the run's dtype)."),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", "-n", min=1, max=MAX_NEW_TOKENS,
                                                 help="Generate and compare only the first N tokens of each stored y."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="CPU threads per forward (default: 1 on <= 2 cores, else every core); recorded with the result."),
    repeats: int = typer.Option(5, "--repeats", min=1, max=MAX_REPEATS,
                                help="Timed rounds of the cost measurement before the generations (one more follows every prompt)."),
    target: Optional[str] = typer.Option(None, "--target", help="Load the target from here instead of the run's recorded model (same checksum required)."),
    draft: Optional[str] = typer.Option(None, "--draft", help="Load the draft from here instead of the run's recorded model (same checksum required)."),
    decision_only: bool = typer.Option(False, "--decision-only",
                                       help="Time only the run's decision g_hw (and --gamma), not this session's choices."),
    batch_costs: bool = typer.Option(False, "--batch-costs",
                                     help=("Also measure c_decode(B), c_verify(g, B), c_draft(B) for B = 1, 2, 4, 8 (stored with the run; "
                                           "--engine llama.cpp: contexts of n_seq_max = B, plus the draft-simple forward by batch). With interleaved "
                                           "costs the torch grid is timed in slices between the prompts; it is stored when the last slice is done.")),
    batch: int = typer.Option(1, "--batch", min=1, max=64, help="B > 1: a batched confirmation, B prompts of a corpus together at g_hw(B)."),
    costs_only: bool = typer.Option(False, "--costs-only",
                                    help="With --batch-costs: measure the costs (g curve and batch grid) and store the costs by batch; no generations."),
    interleave_costs: bool = typer.Option(True, "--interleave-costs/--no-interleave-costs",
                                          help=("Time one more cost round (and a slice of the --batch-costs grid) after every prompt; "
                                                "off: all costs before the generations.")),
    engine: str = typer.Option(
        "torch", "--engine",
        help="torch (default: specterm's own decoder) or llama.cpp: llama.cpp's llama-speculative-simple against llama.cpp "
             "greedy decoding (needs the llamacpp extra; the binary is built on first use, or give --llama-bin).",
    ),
    llama_bin: Optional[Path] = typer.Option(
        None, "--llama-bin", help="With --engine llama.cpp: directory holding llama-speculative-simple (default: build it into the cache)."),
    llama_src: Optional[Path] = typer.Option(
        None, "--llama-src", help="With --engine llama.cpp: llama.cpp sources (a tree or the llama-cpp-python sdist) to build from."),
    keep_logs: Optional[Path] = typer.Option(
        None, "--keep-logs", help="With --engine llama.cpp: copy every llama-speculative-simple -v log into this directory."),
    cost_max_gamma: int = typer.Option(
        16, "--cost-max-gamma", min=1, max=16,
        help="With --engine llama.cpp: time c_verify(g) for g = 1..this (fewer: a shorter cost measurement)."),
    settings: bool = typer.Option(
        False, "--settings", help=("Run the settings `specterm settings` emits for each corpus, as emitted, against greedy: "
                                   "--engine llama.cpp its llama.cpp flags in llama-speculative-simple, else the Hugging Face "
                                   "ones in transformers' assisted generation; into the calibration table.")),
) -> None:
    """Time plain greedy against real speculative decoding at the run's g_hw (always), this session's g_hw, g_iid; record it in run.json.

    The run's decision here is its cost profile of this machine: without one, `specterm costs` measures it first."""
    target, draft = _models_here(run, target, draft)
    params = dict(locals())
    params.pop("settings")
    if settings:
        corpora = tuple(c.strip() for c in corpus.split(",")) if corpus else None

        def say(message: str) -> None:
            typer.echo(message, err=True)

        if engine == "llama.cpp":
            from specterm.engines.llamacpp.settings_confirm import confirm_settings

            confirm_settings(run, per_corpus, threads, llama_bin, llama_src, corpora, log=say)
        else:
            from specterm.engines.torch.hf_settings_confirm import confirm_hf_settings

            confirm_hf_settings(run, per_corpus, corpora, max_new_tokens, log=say)
        return
    from specterm.core.store import drafter_of, read_meta

    if drafter_of(read_meta(run)) is not None:  # a drafter run (SPEC 2b): HF prompt lookup or llama.cpp's ngram-simple
        _confirm_drafter(run, per_corpus, gamma, corpus, target, threads, engine, llama_bin, llama_src, max_new_tokens,
                         keep_logs)
        return
    _profile_first(run, threads, device, dtype, target, draft)
    engine = params.pop("engine")
    llama = {k: params.pop(k) for k in ("llama_bin", "llama_src", "keep_logs", "cost_max_gamma")}
    if engine == "llama.cpp":
        for key in ("device", "dtype"):
            if params[key] is not None:
                fail(f"--{key} does not apply to --engine llama.cpp (CPU, the GGUF's own weights); drop it.")
        torch_only = {"decision_only": False, "batch": 1, "interleave_costs": True, "costs_only": False}
        for key, default in torch_only.items():
            if params[key] != default:
                fail(f"--{key.replace('_', '-')} is not available with --engine llama.cpp yet; drop it.")
    elif engine != "torch":
        fail(f"unknown --engine {engine}; use torch or llama.cpp.")
    elif any(llama[k] is not None for k in ("llama_bin", "llama_src", "keep_logs")) or llama["cost_max_gamma"] != 16:
        fail("--llama-bin, --llama-src, --keep-logs and --cost-max-gamma are for --engine llama.cpp.")
    from specterm.engines.confirm import confirm_command

    confirm_command(engine=engine, **params, **llama)


def _confirm_drafter(run: Path, per_corpus: int, gamma: List[int], corpus: Optional[str], target: Optional[str],
                     threads: Optional[int], engine: str = "torch", llama_bin: Optional[Path] = None,
                     llama_src: Optional[Path] = None, max_new_tokens: Optional[int] = None,
                     keep_logs: Optional[Path] = None) -> None:
    """`specterm confirm` on a drafter run: g = 2, 4, 8, every --gamma and each corpus's g_hw. A prompt-lookup
    run in Hugging Face's assisted generation (engines/torch/drafted_confirm.py); an ngram-simple run with
    --engine llama.cpp in llama.cpp's own n-gram speculation (engines/llamacpp/ngram_confirm.py)."""
    import time as _time

    from specterm.core.drafted.drafter_analysis import analyse_drafter
    from specterm.core.store import load_run

    if engine not in ("torch", "llama.cpp"):
        fail(f"unknown --engine {engine}; use torch or llama.cpp.")
    rep = analyse_drafter([load_run(run)], boot=0)
    chosen = {2, 4, 8, *gamma, *(s.decision_hw.gamma_hw for s in rep.sets.values() if s.decision_hw.gamma_hw)}
    corpora = [c.strip() for c in corpus.split(",")] if corpus else None

    def log(msg: str) -> None:
        typer.echo(f"{_time.strftime('%H:%M:%S')} {msg}", err=True)

    if engine == "llama.cpp":
        from specterm.engines.llamacpp.ngram_confirm import confirm_ngram_llamacpp

        record = confirm_ngram_llamacpp(run, per_corpus, tuple(sorted(chosen)), corpora, target, threads or 1, llama_bin,
                                        llama_src, max_new_tokens, keep_logs, log)
        against = "llama.cpp's own greedy y'"
        same = [p for p in record["prompts"] if p["greedy_identical"]]
        typer.echo(f"llama.cpp's greedy y' equals the run's stored y on {len(same)} of {len(record['prompts'])} prompts"
                   + "".join(f"; {p['corpus']}/{p['id']} first differs at token {p['greedy_first_divergence']}"
                             for p in record["prompts"] if not p["greedy_identical"]) + ".")
    else:
        if any(x is not None for x in (llama_bin, llama_src, keep_logs)):
            fail("--llama-bin, --llama-src and --keep-logs are for --engine llama.cpp.")
        if max_new_tokens is not None:
            fail("-n is not supported for a prompt-lookup run yet: Hugging Face's prompt lookup is timed on each stored "
                 "y whole; narrow the work with -k and --corpus instead.")
        from specterm.engines.torch.drafted_confirm import confirm_drafter_run

        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        record = confirm_drafter_run(run, per_corpus, tuple(sorted(chosen)), corpora, target, log)
        against = "y"
    if engine == "llama.cpp":
        _ngram_verdict(run, record)
        return
    bad = [(p["corpus"], p["id"], g) for p in record["prompts"] for g, r in p["spec"].items()
           if not r["identical"] or r["target_calls"] != r["blocks_walk"]]
    if bad:
        fail(f"the real decoder differs from the walk on {len(bad)} (prompt, g): {bad[:3]}; the record is kept in run.json.")
    typer.echo(f"confirmed: every output equals {against} and every target-call count equals the walk's; see "
               f"`specterm report {run}`.")


def _ngram_verdict(run: Path, record: "dict[str, Any]") -> None:
    """What llama.cpp's n-gram confirmation found (engines/llamacpp/ngram_confirm.py): a failure when the decoder's
    blocks differ from the walk along its own output or, before its output leaves y', from the walk along y'; a
    note (not a failure) where its output leaves y' (llama.cpp's batched verification flipping a near-tie)."""
    rows = [(p["corpus"], p["id"], int(g), r) for p in record["prompts"] for g, r in p["spec"].items()]
    bad = [(c, i, g) for c, i, g, r in rows if r["own_block_mismatch"] is not None
           or not r["blocks_agree_before_divergence"] or (r["identical"] and r["first_block_mismatch"] is not None)]
    if bad:
        fail(f"llama.cpp's n-gram decoder differs from the walk on {len(bad)} (prompt, g): {bad[:3]}; the record is "
             "kept in run.json.")
    left = [(c, i, g, r["first_divergence"]) for c, i, g, r in rows if not r["identical"]]
    same = sum(1 for *_, r in rows if r["identical"])
    typer.echo(f"confirmed: on {same} of {len(rows)} (prompt, g) the output equals llama.cpp's own greedy y' and the "
               "target calls equal the walk's along it; on every one they equal the walk's along the decoder's own "
               "output, and along y' up to where it leaves y'.")
    if left:
        typer.echo(f"the output leaves y' on {len(left)} (prompt, g), e.g. " + ", ".join(
            f"{c}/{i} g={g} at token {q}" for c, i, g, q in left[:4]) + ": llama.cpp's batched verification is not "
            "bit-identical to its 1-token decodes (a near-tie flips), so the counts part there.")
    typer.echo(f"see `specterm report {run}`.")


def _models_here(run: Path, target: Optional[str], draft: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """--target/--draft as given, else where this machine remembers the run's models (core/store/modelkeys:
    a per-user state file, never run.json); models given are remembered for the next command."""
    from specterm.core.store.modelkeys import remember_models, remembered_models

    if target or draft:
        remember_models(run, target, draft)
    known = remembered_models(run)
    return target or known.get("target"), draft or known.get("draft")


def _profile_first(run: Path, threads: Optional[int], device: Optional[str], dtype: Optional[str],
                   target: Optional[str], draft: Optional[str]) -> None:
    """Before a confirmation: measure a cost profile of this machine when the run has none (SPEC 6), so the
    decision it checks is this machine's."""
    from specterm.core.decide.hardware.profiles import decision_profile
    from specterm.core.decide.machine import this_machine
    from specterm.core.store import read_meta

    try:
        meta = read_meta(run)
    except Exception:  # confirm itself reports an unreadable run in one sentence
        return
    if decision_profile(meta, this_machine()) is not None:
        return
    warn(f"the run has no cost profile of this machine ({this_machine().label()}); measuring one first (`specterm costs`)")
    from specterm.engines.costs import costs_command

    costs_command(run=run, threads=threads, device=device, dtype=dtype, target=target, draft=draft, batch=False,
                  max_rounds=MAX_ROUNDS, max_seconds=MAX_SECONDS, busy_ok=False, quiet_wait=120.0)


@app.command("costs")
def costs_cmd(
    run: Path = typer.Argument(
        ..., help="Run directory made by `specterm run` (its models are found by name and checksum under $SPECTERM_MODELS or ./models)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="CPU threads per forward (default: 1 on <= 2 cores, else every core); recorded."),
    device: Optional[str] = typer.Option(None, "--device", help="torch: auto|cpu|cuda|mps (default: the run's device)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="torch: float32|bfloat16|float16 (default: the run's dtype)."),
    target: Optional[str] = typer.Option(
        None, "--target", help="Load the target from here instead of the run's recorded model (same checksum required); "
                               "imported bits name no model: give both --target and --draft."),
    draft: Optional[str] = typer.Option(None, "--draft", help="Load the draft from here instead of the run's recorded model (same checksum required)."),
    batch: bool = typer.Option(False, "--batch", help="Also time the by-batch grid (B = 1, 2, 4, 8) for the batch crossover."),
    max_rounds: int = typer.Option(MAX_ROUNDS, "--max-rounds", min=3, max=MAX_REPEATS,
                                   help="Timed rounds at most (the first times the whole g curve; at least 3)."),
    max_seconds: float = typer.Option(MAX_SECONDS, "--max-seconds", min=1.0, max=MAX_WAIT_S, callback=_finite,
                                      help="Seconds of timing at most (model loading not counted); raise it where the profile says a verdict is not settled."),
    busy_ok: bool = typer.Option(False, "--busy-ok", help="Keep timing on a busy machine (the profile is marked busy and every verdict from it says so)."),
    quiet_wait: float = typer.Option(120.0, "--quiet-wait", min=0.0, max=MAX_WAIT_S, callback=_finite,
                                     help="Seconds to wait for a busy machine to be quiet before giving up."),
    block_overhead: bool = typer.Option(True, "--block-overhead/--no-block-overhead",
                                        help="Also time short speculative generations for the per-block time outside the forwards, o(g) = a + b g "
                                             "(g: the tokens a block drafts)."),
) -> None:
    """Measure a cost profile of this machine (costs + CPU/GPU, threads, engine, load) and add it to the run.

    Times c_decode, c_draft and c_verify(g) for g = 1..16 in the run's engine: every g once, then the draft
    lengths the decision could still use, until every corpus's verdict and g_hw are settled by the costs (or a
    cap). The run's decision on this machine then uses it; other profiles stay. On a drafter run (prompt lookup,
    n-gram) c_draft is the drafter's own time per block and o(d) is timed with the drafter proposing."""
    from specterm.engines.costs import costs_command

    target, draft = _models_here(run, target, draft)
    costs_command(run=run, threads=threads, device=device, dtype=dtype, target=target, draft=draft, batch=batch,
                  max_rounds=max_rounds, max_seconds=max_seconds, busy_ok=busy_ok, quiet_wait=quiet_wait,
                  block_overhead=block_overhead)


@app.command("crossstack")
def crossstack_cmd(
    run_a: Path = typer.Argument(..., help="The reference run (e.g. streams/qwen2.5-coder-0.5b-1.5b, torch)."),
    run_b: Path = typer.Argument(..., help="The same pair and prompts in llama.cpp (e.g. streams/qwen2.5-coder-0.5b-1.5b-llamacpp)."),
    format: str = typer.Option("md", "--format", "-f", help="md | json."),
    hist_gamma: int = typer.Option(4, "--hist-gamma", min=1, max=GAMMA_MAX, help="Draft length of the accepted-run histogram table."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout ('-': stdout); "
                                          "only a regular file or a new name is written."),
) -> None:
    """Side by side: alpha, tokens per target call, accepted-run histograms (real llama.cpp decoder vs the
    block walk on each engine's bits, chi-square test) and each engine's decision with its realized speedups."""
    import json

    from specterm.core.compare.crossstack import check_comparable, cross_stack, cross_stack_markdown
    from specterm.core.store import load_run

    if format not in ("md", "json"):
        fail(f"unknown --format {format}; use md or json.")
    a, b = load_run(run_a), load_run(run_b)
    check_comparable(a, b)
    cs = cross_stack(a, b, gammas=sorted({1, 4, 8, hist_gamma}))
    text = json.dumps(cs, indent=2) + "\n" if format == "json" else cross_stack_markdown(cs, hist_gamma)
    _emit(text, format, output)


# ------------------------------------------------------------------- import / report / list ---


@app.command("import")
def import_cmd(
    file: Path = typer.Argument(..., help='JSON lines: {"id": str, "corpus": str, "bits": "0110..."}, optional "draft_conf" and "tokens".'),
    out: Path = typer.Option(..., "--out", "-o", help="Run directory to create, e.g. streams/NAME."),
    name: Optional[str] = typer.Option(None, "--name", help="Run name (default: the directory name)."),
    target: Optional[str] = typer.Option(None, "--target", help=("Name of the target model the streams come from "
                                                                "(recorded; imports pool only with runs naming the same pair).")),
    draft: Optional[str] = typer.Option(None, "--draft", help=("Name of the draft model the streams come from "
                                                              "(recorded; without --target/--draft an import is never pooled with another run).")),
) -> None:
    """Import accept/reject streams from another tool as a run (nothing is written if a line is bad)."""
    from specterm.core.store.importer import import_jsonl
    from specterm.core.store.atomic import check_visible_name, leftovers_line, sweep_leftovers
    from specterm.core.report.text import printable

    check_visible_name(out)
    path, streams = import_jsonl(file, out, name, target=target, draft=draft)
    swept = sweep_leftovers(path.parent)
    if swept:
        typer.echo(printable(leftovers_line(path.parent, swept)), err=True)
    corpora = sorted({s.corpus for s in streams})
    positions = sum(s.n for s in streams)
    typer.echo(printable(f"imported {len(streams)} prompts, {positions} positions ({', '.join(corpora)}) into {path}"))


REPORT_FORMATS = ("md", "json", "text")


NO_CACHE_HELP = ("Analyse again and leave the analysis cache ($XDG_CACHE_HOME/specterm, default ~/.cache/specterm) "
                 "alone; SPECTERM_CACHE=0 does the same everywhere.")


@app.command("report")
def report_cmd(
    runs: List[Path] = typer.Argument(..., help="Run directories (e.g. streams/NAME) of one model pair; corpora are pooled across them, each prompt once."),
    format: str = typer.Option("md", "--format", "-f", help="md | json | text."),
    gamma: int = typer.Option(GAMMA_DEFAULT, "--gamma", "-g", min=1, max=GAMMA_MAX, help="Draft length of the yield deficit and the per-depth table (1..32)."),
    boot: int = typer.Option(BOOT, "--boot", min=0, max=MAX_BOOT, help="Bootstrap resamples over streams (0: no CIs)."),
    seed: int = typer.Option(SEED, "--seed", min=0, max=MAX_SEED, help="Seed of the bootstrap and the shuffles."),
    shuffles: int = typer.Option(SHUFFLES, "--shuffles", min=-1, max=MAX_SHUFFLES, help=SHUFFLES_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout ('-': stdout); "
                                          "only a regular file or a new name is written."),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
) -> None:
    """Every statistic of SPEC 2-4 per corpus and pooled, with bootstrap CIs and the scorecard (P1-P5, Q1-Q6)."""
    from specterm.core.report import cache
    from specterm.core.errors import SpectermError
    from specterm.core.report.export import to_json, to_markdown, to_text
    from specterm.core.report.fmt import parsing_line
    from specterm.core.store import read_run_files
    from specterm.core.report.text import printable

    if format not in REPORT_FORMATS:
        raise SpectermError(f"unknown --format '{format}'; use one of {', '.join(REPORT_FORMATS)}.")
    params = {"gamma": gamma, "boot": boot, "shuffles": shuffles, "seed": seed}
    use_cache = not no_cache and cache.enabled()
    from specterm.core.drafted.route import has_drafter_run

    if has_drafter_run(runs):  # drafters without a draft model (SPEC 2b): their report, or "Which draft?"
        _emit(_drafter_text(runs, format, params, use_cache), format, output)
        return
    with startup.stderr_status() as say:  # a 10M-position run takes seconds to parse and more to analyse
        say(parsing_line(len(runs), sum(_run_bytes(p) for p in runs)))
        files = [read_run_files(p) for p in runs]
        fkey = cache.files_key(files, params, cache.REPORT_PAIR) if use_cache else None
        # warm: the report found by the bytes of the files (cache.load_by_files), the runs never parsed
        served: list[str] = []
        report = cache.load_by_files(fkey, runs, note=warn) if fkey is not None else None
        if report is not None:
            served.append("found by its files' bytes")
        else:
            report = _parsed_report(runs, files, fkey, params, use_cache, say, served)
    if served:
        warn(f"served from the analysis cache ({printable(str(cache.cache_dir()))}: it guards against accidents, not "
             "forgery); `--no-cache` analyses the runs again", "note")
    _emit({"md": to_markdown, "json": to_json, "text": to_text}[format](report), format, output)


def _emit(text: str, format: str, output: Optional[Path]) -> None:
    """`text` (control characters escaped unless JSON, which escapes its own) onto stdout (no -o, or
    `-o -`), else into the file `output` (store/atomic.py write_output: atomically, only over a regular
    file or a new name), then "wrote PATH" on stderr, the path escaped."""
    from specterm.core.report.text import printable

    if format != "json":  # JSON escapes control characters itself
        text = printable(text, keep="\n")
    if output is None or str(output) == "-":
        typer.echo(text, nl=False)
    else:
        from specterm.core.store.atomic import write_output

        typer.echo(f"wrote {printable(str(write_output(output, text.encode('utf-8'))))}", err=True)


def _drafter_text(runs: List[Path], format: str, params: "dict[str, Any]", use_cache: bool) -> str:
    """The drafter report or the "Which draft?" comparison of `runs` (core/drafted), as text."""
    from specterm.core.report import cache
    from specterm.core.drafted.drafter_export import as_text
    from specterm.core.drafted.route import drafter_or_comparison
    from specterm.core.store import single_pair

    def models(group: "list[Any]") -> "Report":
        return cache.cached_analyse(single_pair(group, note=warn), use_cache=use_cache, note=warn, **params)

    result = drafter_or_comparison(runs, params["gamma"], params["boot"], params["seed"], models)
    return as_text(format, result)


def _parsed_report(runs: List[Path], files: "list[RunFiles]", fkey: "dict[str, Any] | None", params: "dict[str, Any]",
                   use_cache: bool, say: "Callable[[str], None]", served: "list[str]") -> "Report":
    """The report of `runs` parsed from their files' bytes `files` (consumed: each run's bytes are
    let go once parsed): warnings and notes said, the pair pooled, analysed or read from the cache by
    its full key (then `served` is told); the alias `fkey` of the report is stored when loading said nothing (a warm report,
    which never parses, could not say it)."""
    from specterm.core.report import cache
    from specterm.core.report.fmt import computing_line
    from specterm.core.store import load_run, prompts_and_positions, single_pair

    loaded = []
    for path in runs:
        loaded.append(load_run(path, files.pop(0)))
    said = [m for run in loaded for m in run.warnings]
    for message in said:
        warn(message)

    def note(message: str) -> None:
        said.append(message)
        warn(message, "note")

    pair = single_pair(loaded, note=note)
    return cache.cached_analyse(pair, use_cache=use_cache, on_compute=lambda: say(computing_line(*prompts_and_positions(pair))),
                                note=warn, report_alias=None if said else fkey, on_hit=served.append, **params)


def _run_bytes(path: Path) -> int:
    """The bytes of a run's two files (0 for one that cannot be read: load_runs then says why)."""
    from specterm.core.store import META_FILE, RECORDS_FILE

    total = 0
    for name in (META_FILE, RECORDS_FILE):
        try:
            total += (Path(path) / name).stat().st_size
        except OSError:
            pass
    return total


@app.command("settings")
def settings_cmd(
    runs: List[Path] = typer.Argument(..., help="Run directories (e.g. streams/NAME) of one model pair."),
    engine: str = typer.Option(..., "--engine", "-e", help="llama.cpp | hf | vllm | sglang."),
    set_name: Optional[List[str]] = typer.Option(None, "--set", help="Only these sets (a corpus or pooled); repeatable."),
    format: str = typer.Option("text", "--format", "-f", help="text | json."),
    boot: int = typer.Option(BOOT, "--boot", min=0, help="Bootstrap resamples over streams (0: no CIs)."),
    seed: int = typer.Option(SEED, "--seed", min=0, help="Seed of the bootstrap."),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
) -> None:
    """The settings to paste into one serving engine: for every set, the best draft-length policy the replay found
    that the engine can express, in its own names, with its predicted speedup, or "run without speculation"."""
    import json

    from specterm.core.errors import SpectermError
    from specterm.core.settings.names import ENGINES
    from specterm.core.settings.settings_tables import engine_text
    from specterm.core.report.text import printable

    if engine not in ENGINES:
        raise SpectermError(f"unknown --engine '{engine}'; use one of {', '.join(ENGINES)}.")
    if format not in ("text", "json"):
        raise SpectermError(f"unknown --format '{format}'; use text or json.")
    report = _report_of(runs, {"gamma": GAMMA_DEFAULT, "boot": boot, "shuffles": SHUFFLES, "seed": seed}, no_cache)
    unknown = [s for s in (set_name or []) if s not in report.sets]
    if unknown:
        raise SpectermError(f"the report has no set '{unknown[0]}'; use one of {', '.join(report.set_names)}.")
    if format == "json":
        out = {name: s.engine_settings[engine].to_dict() for name, s in report.ordered_sets()
               if engine in s.engine_settings and (not set_name or name in set_name)}
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
    else:
        typer.echo(printable(engine_text(report, engine, list(set_name or [])), keep="\n"), nl=False)


COUNTER_FILES_HELP = ("Counter files: llama-server responses or log, llama-speculative-simple's log, vLLM or llama.cpp "
                      "/metrics, vLLM request metrics, SGLang responses.")
COUNTER_SET_HELP = ("The set the traffic belongs to (a corpus or pooled); default: the requested prompts when the "
                    "records name them, else pooled.")


@app.command("compare-counters")
def compare_counters_cmd(
    run: Path = typer.Argument(..., help="The run directory whose streams predict the counters."),
    files: List[Path] = typer.Argument(..., help=COUNTER_FILES_HELP),
    gamma: Optional[int] = typer.Option(None, "--gamma", "-g", min=1, max=GAMMA_MAX, help="The draft length the engine ran (when the files do not say it)."),
    set_name: Optional[str] = typer.Option(None, "--set", help=COUNTER_SET_HELP),
    boot: int = typer.Option(BOOT, "--boot", min=0, help="Bootstrap resamples over streams (0: no CIs)."),
    seed: int = typer.Option(SEED, "--seed", min=0, help="Seed of the bootstrap."),
) -> None:
    """Production acceptance counters read back beside the oracle's prediction for the same g and set."""
    from specterm.core.store import load_run
    from specterm.core.report.text import printable
    from specterm.counters_cli import compare, read_files, render

    items = read_files(files)
    reading, checks = compare(load_run(run), items, gamma, set_name, boot, seed)
    typer.echo(printable(render(reading, checks), keep="\n"), nl=False)


def _report_of(runs: List[Path], params: "dict[str, Any]", no_cache: bool) -> "Report":
    """The report of `runs` as `specterm report` makes it (the same cache)."""
    from specterm.core.report import cache
    from specterm.core.report.fmt import parsing_line
    from specterm.core.store import read_run_files

    use_cache = not no_cache and cache.enabled()
    with startup.stderr_status() as say:
        say(parsing_line(len(runs), sum(_run_bytes(p) for p in runs)))
        files = [read_run_files(p) for p in runs]
        fkey = cache.files_key(files, params, cache.REPORT_PAIR) if use_cache else None
        report = cache.load_by_files(fkey, runs, note=warn) if fkey is not None else None
        if report is None:
            report = _parsed_report(runs, files, fkey, params, use_cache, say, [])
    return report


@app.command("list")
def list_cmd(
    root: Path = typer.Option(Path("streams"), "--root", help="Directory holding the runs."),
) -> None:
    """The runs under streams/: corpora, prompts, positions, alpha, gate (shards of a merged run are not counted;
    an import is marked and its gate is n/a; a run that cannot be read, e.g. one holding a FIFO, is skipped with a warning)."""

    from specterm.core.report.export import text_table
    from specterm.core.report.fmt import MISSING, fmt
    from specterm.core.streams.stats import rates
    from specterm.core.decide.hardware.profiles import IMPORT, run_engine
    from specterm.core.store import discover_runs, load_runs_lenient
    from specterm.core.report.text import printable

    paths, shards = discover_runs(root)
    if not paths:
        typer.echo(f"no runs under {printable(str(root))}/; make one with `specterm run` or `specterm import`.")
        return
    runs, _, problems = load_runs_lenient(paths)
    rows: list[list[str]] = []
    from specterm.core.store import drafter_of

    for run in runs:
        drafter = drafter_of(run.meta)
        if drafter is not None:  # no per-position bits, no alpha: the drafter's name in its place
            n = sum(s.n for s in run.streams)
            gate_n = sum(s.gate.size for s in run.streams if s.gate is not None)
            gate_ok = sum(int(s.gate.sum()) for s in run.streams if s.gate is not None)
            rows.append([run.path.name, ", ".join(run.corpora) or MISSING, str(len(run.streams)), str(n),
                         f"drafter {drafter.get('spec')}", fmt(gate_ok / gate_n if gate_n else None)])
            continue
        n, alpha, gate = rates(run.streams)
        imported = run_engine(run.meta) == IMPORT  # no gate was checked (SPEC 1.3): n/a, never 1.000
        # the folder, not run.json's name: a copy of a run is another folder with the same name inside
        rows.append([run.path.name + (f" ({IMPORT})" if imported else ""), ", ".join(run.corpora) or MISSING,
                     str(len(run.streams)), str(n), fmt(alpha), MISSING if imported else fmt(gate)])
    rows = [[printable(cell) for cell in row] for row in rows]
    typer.echo(text_table(["run", "corpora", "prompts", "positions", "alpha", "gate"], rows))
    if shards:
        typer.echo(f"not counted again: {len(shards)} shard run(s) already merged ({printable(', '.join(p.name for p in shards))}).")
    for run in runs:
        for message in run.warnings:
            warn(message)
    for problem in problems:
        warn(f"skipped {problem}")


@app.command("repair")
def repair_cmd(
    run: Path = typer.Argument(..., help="Run directory whose prompts.jsonl holds duplicate, torn or corrupt lines."),
) -> None:
    """Rewrite a run keeping each valid record once (torn, corrupt and duplicate lines dropped, each reported)."""
    from specterm.core.store import RECORDS_FILE, repair_run
    from specterm.core.report.text import printable

    result = repair_run(run)
    for line in result.dropped:
        typer.echo(f"dropped {printable(line)}")
    for note in result.notes:
        typer.echo(printable(note))
    if result.mended_tail:
        typer.echo("kept the last record, which had lost only its final newline")
    if result.checksummed:
        typer.echo(f"added checksums to {result.checksummed} record(s) written before checksums existed")
    verb = "rewrote" if result.changed else "checked"
    typer.echo(printable(f"{verb} {run / RECORDS_FILE}: {result.kept} record(s) kept, {len(result.dropped)} line(s) dropped"))


# ------------------------------------------------------------------------ open / no-argument ---


@app.callback(invoke_without_command=True)
def no_command(ctx: typer.Context) -> None:
    # No docstring on purpose: the Typer(help=...) text stays the --help text.
    if ctx.invoked_subcommand is not None:
        return
    open_streams(open_tui)  # this module's open_tui, looked up now (a test may stand in for it)


@app.command("open")
def open_cmd(
    runs: List[Path] = typer.Argument(..., help="Run directories (made by `specterm run` or `specterm import`)."),
    gamma: int = typer.Option(GAMMA_DEFAULT, "--gamma", "-g", min=1, max=GAMMA_MAX, help="Draft length of the yield deficit and the per-depth table (1..32)."),
    boot: int = typer.Option(BOOT, "--boot", min=0, max=MAX_BOOT, help="Bootstrap resamples over streams (0: no CIs)."),
    seed: int = typer.Option(SEED, "--seed", min=0, max=MAX_SEED, help="Seed of the bootstrap and the shuffles."),
    shuffles: int = typer.Option(SHUFFLES, "--shuffles", min=-1, max=MAX_SHUFFLES, help=SHUFFLES_HELP),
    no_cache: bool = typer.Option(False, "--no-cache", help=NO_CACHE_HELP),
) -> None:
    """Open runs in the terminal app: overview, streams, run lengths, optimum, policies, decide, scorecard (a run
    that cannot be read is named and the others open)."""
    open_runs(runs, open_tui, gamma=gamma, boot=boot, seed=seed, shuffles=shuffles, use_cache=not no_cache)


def main() -> None:
    """The whole command line (the script's entry point is launch.main, which imports this module
    only for a command line other than the TUI's two)."""
    startup.run(lambda: app)


if __name__ == "__main__":
    main()
