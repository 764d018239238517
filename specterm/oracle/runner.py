"""`specterm run` and `specterm merge`: argument handling, the headless progress display, and
scale-out (torchrun / accelerate ranks, --shard i/N, merge)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Optional

from specterm.core.errors import SpectermError
from specterm.core.progress import Cancelled, Progress


def _prompts(corpus: Optional[str], prompts: Optional[Path], dataset: Optional[str], limit: Optional[int]):
    from specterm.oracle import corpora

    out = []
    if prompts is not None:
        out += corpora.load_prompts_file(prompts)
    if dataset is not None:
        out += corpora.load_dataset_prompts(dataset, limit)
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


def run_command(*, target, draft, corpus, prompts, dataset, limit, max_new_tokens, device, dtype, batch_size,
                out, resume, headless, spec_gamma, shard, cost, trust_remote_code, remeasure_cost=False) -> None:
    from specterm.oracle.run import OracleConfig

    plist = _prompts(corpus, prompts, dataset, limit)
    sh = _parse_shard(shard)
    out = out or Path("streams") / f"{_slug(draft)}-{_slug(target)}"
    distributed = shard is None and sh is not None
    final_out = out
    if sh is not None:
        out = out.with_name(f"{out.name}.shard-{sh[0]}-of-{sh[1]}")
    config = OracleConfig(target=target, draft=draft, prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          device=device, dtype=dtype, batch_size=batch_size, resume=resume, spec_gamma=spec_gamma,
                          measure_cost=cost, remeasure_cost=remeasure_cost, trust_remote_code=trust_remote_code, shard=sh)
    if headless or distributed or not sys.stdout.isatty():
        path = run_headless(config)
    else:
        from specterm.app import run_tui_oracle

        run_tui_oracle(config)
        return
    if distributed:
        _barrier_and_merge(sh, final_out)
    elif path is not None:
        print(f"open it with: specterm open {path}   or   specterm report {path}")


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
            log(p.message + extra)
    from contextlib import nullcontext

    return on_progress, nullcontext(), log


def run_headless(config) -> Optional[Path]:
    """Run with a rich progress bar on a terminal, or one log line per prompt otherwise (nohup)."""
    from specterm.oracle.run import run_oracle

    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            path = run_oracle(config, on_progress)
    except (Cancelled, KeyboardInterrupt):
        print(f"interrupted: finished prompts are kept in {config.out}; continue with --resume.", file=sys.stderr)
        raise SystemExit(130)
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


def merge_command(*, shards: list[Path], out: Path) -> None:
    from specterm.core.streams import load_run, model_key, write_run

    runs = [load_run(p) for p in shards]
    first = runs[0].meta
    for r in runs[1:]:
        for key in ("target", "draft"):
            if model_key(first.get(key)) != model_key(r.meta.get(key)):
                raise SpectermError(f"{r.path} was run with a different {key}; merge only shards of the same run.")
    seen, streams = set(), []
    for r in runs:
        for s in r.streams:
            if (s.corpus, s.id) in seen:
                raise SpectermError(f"prompt '{s.id}' ({s.corpus}) is in more than one shard; merge refuses to duplicate it.")
            seen.add((s.corpus, s.id))
            streams.append(s)
    meta = dict(first)
    meta["name"] = out.name
    meta["shard"] = None
    meta["merged_from"] = [str(r.path) for r in runs]
    write_run(out, meta, streams)
    print(f"merged {len(streams)} prompts from {len(runs)} shard(s) into {out}", file=sys.stderr)
