"""`specterm run` and `specterm merge`: argument handling, the headless progress display, and
scale-out (torchrun / accelerate ranks, --shard i/N, merge). The CLI layer (it may open the Run
screen of the app); the oracle and the engines never import the app."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Optional

from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled, Progress
from specterm.core.report.text import printable


def _prompts(corpus: Optional[str], prompts: Optional[Path], dataset: Optional[str], limit: Optional[int]):
    from specterm.engines import corpora

    out = []
    if prompts is not None:
        out += corpora.load_prompts_file(prompts)
    if dataset is not None:
        out += corpora.load_dataset_prompts(dataset, limit)
    if corpus is not None and not all(c.strip() for c in corpus.split(",")):
        raise SpectermError(f"--corpus {corpus!r} names an empty corpus; name them (e.g. prose,code) or leave --corpus out for all.")
    if corpus is not None or not out:
        names = [c.strip() for c in corpus.split(",")] if corpus else None
        out += corpora.load_builtin(names, limit)
    if limit is not None and prompts is not None:
        by: dict[str, int] = {}
        kept = []
        for p in out:
            by[p.corpus] = by.get(p.corpus, 0) + 1
            if by[p.corpus] <= limit:
                kept.append(p)
        out = kept
    return out


def _parse_shard(shard: Optional[str]) -> Optional[tuple[int, int]]:
    """--shard i/N, or the rank/world size of torchrun / accelerate launch when present."""
    if shard:
        try:
            i, n = (int(x) for x in shard.split("/"))
        except ValueError:
            raise SpectermError(f"--shard {shard} must look like i/N, e.g. 0/4.") from None
        if not 0 <= i < n:
            raise SpectermError(f"--shard {shard}: i must be in 0..N-1.")
        return (i, n)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        return (int(os.environ.get("RANK", "0")), world)
    return None


def _slug(spec: str) -> str:
    base = Path(spec).parent.name if spec.lower().endswith(".gguf") else spec.rstrip("/").split("/")[-1]
    return base.replace(":", "").lower() or "model"


def _check_out(out: Path, resume: bool) -> None:
    """--out must be a new path we can create outside any run, or (with --resume) an existing run (a folder
    without one is refused, never started afresh); nothing is created."""
    import tempfile

    from specterm.core.store import LOCK_FILE, META_FILE, check_unlocked
    from specterm.core.store.atomic import check_not_in_run, check_visible_name, is_temp_name

    check_visible_name(out)
    if out.exists() and not out.is_dir():
        raise SpectermError(f"--out {out} is a file, not a run directory; choose another --out.")
    if resume and not os.path.lexists(out / META_FILE):
        raise SpectermError(f"--resume: {out} holds no run to resume (no {META_FILE}); drop --resume to start a new run "
                            "there, or pass the folder of the interrupted run.")
    if not resume:
        check_not_in_run(out)
    if (out / META_FILE).is_file():
        if not resume:
            raise SpectermError(f"{out} already holds a run; pass --resume to continue it or choose another --out.")
        check_unlocked(out)
    elif out.is_dir() and any(p.name != LOCK_FILE and not is_temp_name(p.name) for p in out.iterdir()):
        raise SpectermError(f"{out} exists and is not a specterm run (no {META_FILE}); choose another --out.")
    probe = out
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise SpectermError(f"cannot create {out}: {probe} is not a directory; choose another --out.")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".specterm-probe-", dir=probe))
    except OSError as exc:
        raise SpectermError(f"cannot write under {probe} ({exc.strerror}); choose another --out.") from None


def _target_config(ms, trust_remote_code: bool):
    """The target's config alone (config.json or GGUF metadata, no weights); its text config for a
    multimodal model. SpectermError (one sentence) when it cannot be read."""
    from transformers import AutoConfig

    from specterm.engines.torch.models_torch import _load_error

    try:
        if ms.kind == "gguf":
            cfg = AutoConfig.from_pretrained(str(ms.path), gguf_file=ms.gguf_file)
        elif ms.kind == "dir":
            cfg = AutoConfig.from_pretrained(str(ms.path), trust_remote_code=trust_remote_code)
        else:
            cfg = AutoConfig.from_pretrained(ms.spec, trust_remote_code=trust_remote_code)
    except Exception as exc:  # transformers raises many types; the user needs one sentence
        raise SpectermError(_load_error(ms, "config", exc)) from None
    return getattr(cfg, "text_config", None) or cfg


def check_context(longest_prompt: int, max_new_tokens: int, context: object) -> None:
    """Refuse (one sentence) a run whose longest prompt plus -n tokens does not fit the target's
    context (max_position_embeddings; not checked when the config does not say)."""
    if type(context) is int and context > 0 and longest_prompt + max_new_tokens > context:
        raise SpectermError(f"-n {max_new_tokens} after the longest prompt ({longest_prompt} tokens) needs "
                            f"{longest_prompt + max_new_tokens} positions, beyond the target's context of {context}; "
                            "lower -n/--max-new-tokens or shorten the prompt.")


def check_run_arguments(config) -> None:
    """Every check of `specterm run` that needs no model weights, done before any model loads.

    Prompts (after --shard), --out (creatable, or an unlocked run with --resume whose models and
    generation settings match), models resolved, device and dtype, the tokenizers compared and
    every prompt encoded (a prompt of zero tokens is named), layers:K against the target's config.
    Raises SpectermError (one sentence); creates nothing on disk.
    """
    from specterm.core.store import META_FILE, load_run, public_model, read_meta, resume_conflict
    from specterm.engines.torch import models_torch as M
    from specterm.engines.corpora import shard as take_shard

    for flag, value, low in (("-n/--max-new-tokens", config.max_new_tokens, 1), ("--batch-size", config.batch_size, 1),
                             ("--spec-gamma", config.spec_gamma, 0)):
        if not isinstance(value, int) or value < low:
            raise SpectermError(f"{flag} must be an integer of at least {low}, got {value}.")
    prompts = take_shard(config.prompts, *config.shard) if config.shard else config.prompts
    if not prompts:
        raise SpectermError("there are no prompts to run; check --corpus/--prompts/--shard.")
    _check_out(config.out, config.resume)
    resuming = config.resume and (config.out / META_FILE).is_file()
    t_spec = M.resolve_spec(config.target, hash_files=resuming)
    if t_spec.kind == "layers":
        raise SpectermError("--target must be a model; 'layers:K' is only a draft (the target's first K layers).")
    d_spec = M.resolve_spec(config.draft, hash_files=resuming)
    device = M.resolve_device(config.device)
    dtype = M.resolve_dtype(config.dtype, device, "gguf" in (t_spec.kind, d_spec.kind))
    if resuming:
        new = {"target": public_model(t_spec.describe()), "draft": public_model(d_spec.describe()),
               "dtype": str(dtype).replace("torch.", ""),
               "generation": {"max_new_tokens": config.max_new_tokens, "y_method": config.y_method}}
        conflict = resume_conflict(read_meta(config.out), new)
        if conflict:
            raise SpectermError(f"{config.out} {conflict}; resume with the same settings or choose another --out.")
        load_run(config.out)  # a corrupt run is refused now (repair it first), not after the models load
    tok = M.load_tokenizer(t_spec, config.trust_remote_code)
    if d_spec.kind != "layers":
        M.check_tokenizers(tok, M.load_tokenizer(d_spec, config.trust_remote_code))
    longest = 0
    for p in prompts:
        ids = tok(p.text).input_ids
        if not ids:
            raise SpectermError(f"prompt {p.id!r} ({p.corpus}) encodes to zero tokens; remove it or give it some text.")
        longest = max(longest, len(ids))
    try:
        target_config = _target_config(t_spec, config.trust_remote_code)
    except SpectermError:
        if d_spec.kind == "layers":
            raise
        target_config = None  # loading the model says what is wrong; no context to check against here
    if target_config is not None:
        check_context(longest, config.max_new_tokens, getattr(target_config, "max_position_embeddings", None))
    if d_spec.kind == "layers":
        assert target_config is not None
        n = int(target_config.num_hidden_layers)
        if not 1 <= d_spec.layers < n:
            raise SpectermError(f"layers:{d_spec.layers} must keep between 1 and {n - 1} of the target's {n} layers.")


def run_command(*, target, draft, corpus, prompts, dataset, limit, max_new_tokens, device, dtype, batch_size,
                out, resume, headless, spec_gamma, shard, cost, trust_remote_code, remeasure_cost=False,
                record_paths=False) -> None:
    from specterm.engines.torch.oracle_torch import OracleConfig

    plist = _prompts(corpus, prompts, dataset, limit)
    sh = _parse_shard(shard)
    out = out or Path("streams") / f"{_slug(draft)}-{_slug(target)}"
    distributed = shard is None and sh is not None
    final_out = out
    if sh is not None:
        out = out.with_name(f"{out.name}.shard-{sh[0]}-of-{sh[1]}")
    config = OracleConfig(target=target, draft=draft, prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          device=device, dtype=dtype, batch_size=batch_size, resume=resume, spec_gamma=spec_gamma,
                          measure_cost=cost, remeasure_cost=remeasure_cost, trust_remote_code=trust_remote_code, shard=sh,
                          record_paths=record_paths)
    from specterm.core.store.modelkeys import remember_models

    remember_models(out, target, draft)  # on this machine only, never in run.json (costs and confirm find them)
    if headless or distributed or not sys.stdout.isatty():
        check_run_arguments(config)
        path = run_headless(config)
    else:
        from specterm.app import run_tui_oracle

        # The checks load transformers and the tokenizers (~10 s): the Run screen runs them in its
        # worker and says so, instead of a blank terminal until they end.
        run_tui_oracle(config, check=check_run_arguments)
        return
    if distributed:
        _barrier_and_merge(sh, final_out)
    elif path is not None:
        print(printable(f"open it with: specterm open {path}   or   specterm report {path}"))


def run_drafters_command(*, target, draft, corpus, prompts, dataset, limit, max_new_tokens, device, dtype, batch_size,
                         out, resume, headless, spec_gamma, shard, cost, trust_remote_code, remeasure_cost=False,
                         record_paths=False, y_from=None) -> None:
    """`specterm run --draft prompt-lookup[:N] [--draft ...]`: the drafter oracle (engines/torch/drafted_run.py),
    headless (the Run screen shows per-position bits, which a drafter run has not)."""
    from specterm.engines.torch.drafted_run import drafter_outs, run_drafters
    from specterm.engines.torch.oracle_torch import OracleConfig

    if shard is not None or _parse_shard(None) is not None:
        raise SpectermError("drafter runs are not sharded; leave out --shard (a drafter run of the built-in corpora "
                            "takes one target pass).")
    plist = _prompts(corpus, prompts, dataset, limit)
    out = out or Path("streams") / f"{_slug(target)}-{draft[0].replace(':', '-')}"
    config = OracleConfig(target=target, draft=draft[0], prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          device=device, dtype=dtype, batch_size=batch_size, resume=resume, measure_cost=cost,
                          remeasure_cost=remeasure_cost, trust_remote_code=trust_remote_code, record_paths=record_paths)
    outs = drafter_outs(out, list(draft))
    for path in outs:
        _check_out(path, resume)
    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            paths = run_drafters(config, list(draft), on_progress, y_from=y_from)
    except (Cancelled, KeyboardInterrupt):
        print(f"interrupted: finished prompts are kept in {', '.join(map(str, outs))}; continue with --resume.",
              file=sys.stderr)
        raise SystemExit(130) from None
    for path in paths:
        log(f"done: {path}")
    print(f"report them with: specterm report {paths[0]}" + (f"   compare them with: specterm report {' '.join(map(str, paths))}"
                                                               if len(paths) > 1 else ""))


def headless_progress():
    """(on_progress, context manager, log) of the headless display: a rich progress bar on a terminal,
    one log line per message otherwise (nohup). Shared by `specterm run --headless` and `specterm confirm`."""
    tty = sys.stderr.isatty()

    def log(msg: str) -> None:
        print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)

    if tty:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeRemainingColumn

        console = Console(stderr=True)
        bar = RichProgress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=console)
        task = bar.add_task("starting", total=None, info="")

        def on_progress(p: Progress) -> None:
            if p.phase == "warning":
                from rich.text import Text

                console.print(Text.assemble(("warning: ", "yellow"), p.message))
                return
            if p.phase in ("loading", "checking", "cost"):
                bar.update(task, description=p.message[:60])
                return
            alpha = f"alpha {p.running_alpha:.3f}" if p.running_alpha is not None else ""
            gate = f"gate {p.gate_rate:.3f}" if p.gate_rate is not None else ""
            bar.update(task, total=p.n_prompts, completed=p.prompts_done,
                       description=f"{p.corpus}/{p.prompt_id} {p.tokens}/{p.max_new_tokens}"[:40],
                       info=f"{p.tokens_per_s:5.1f} tok/s {alpha} {gate}")
        return on_progress, bar, log

    def on_progress(p: Progress) -> None:
        if p.phase in ("loading", "checking", "cost", "saved", "done", "cancelled") or p.message:
            extra = ""
            if p.phase == "saved" and p.running_alpha is not None:
                extra = (f" [{p.prompts_done}/{p.n_prompts}] {p.tokens} tokens, {p.tokens_per_s:.1f} tok/s,"
                         f" alpha {p.running_alpha:.3f}, gate {p.gate_rate:.3f}"
                         + (f", ETA {p.eta_s / 60:.1f} min" if p.eta_s else ""))
            log(("warning: " if p.phase == "warning" else "") + p.message + extra)
    from contextlib import nullcontext

    return on_progress, nullcontext(), log


def run_headless(config) -> Optional[Path]:
    """Run with a rich progress bar on a terminal, or one log line per prompt otherwise (nohup)."""
    from specterm.engines.torch.oracle_torch import run_oracle

    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            path = run_oracle(config, on_progress)
    except (Cancelled, KeyboardInterrupt):
        print(printable(f"interrupted: finished prompts are kept in {config.out}; continue with --resume."), file=sys.stderr)
        raise SystemExit(130) from None
    log(f"done: {path}")
    return path


def _barrier_and_merge(sh: tuple[int, int], final_out: Path) -> None:
    """Under torchrun/accelerate: wait for every rank, then rank 0 merges the shards."""
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="gloo")
    dist.barrier()
    if sh[0] == 0:
        shards = [final_out.with_name(f"{final_out.name}.shard-{i}-of-{sh[1]}") for i in range(sh[1])]
        merge_command(shards=shards, out=final_out)
    dist.barrier()
    dist.destroy_process_group()


def merge_command(*, shards: list[Path], out: Path, allow_partial: bool = False) -> None:
    """`specterm merge`: store.merge_runs, then one line saying what was merged (the path escaped)."""
    from specterm.core.store import merge_runs
    from specterm.core.store.atomic import check_not_in_run, check_visible_name, leftovers_line, sweep_leftovers
    from specterm.startup import warn

    check_visible_name(out)
    check_not_in_run(out)
    path, streams = merge_runs(shards, out, allow_partial=allow_partial, warn=warn)
    print(printable(f"merged {len(streams)} prompts from {len(shards)} shard(s) into {path}"), file=sys.stderr)
    swept = sweep_leftovers(path.parent)
    if swept:
        print(printable(leftovers_line(path.parent, swept)), file=sys.stderr)
