"""`specterm run` and `specterm merge`: argument handling, and scale-out (torchrun / accelerate ranks,
--shard i/N, merge). The CLI layer: every engine's run goes through engines/oracle.py, headless
(engines/progress.headless_progress) or on the TUI's Run screen; the oracle and the engines never
import the app."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

from specterm.core.errors import SpectermError
from specterm.core.report.text import printable
from specterm.engines.progress import Cancelled, headless_progress


def load_prompts(corpus: Optional[str], prompts: Optional[Path], dataset: Optional[str], limit: Optional[int]) -> list[Any]:
    """The prompts `specterm run` is asked for: --prompts FILE, --dataset, the built-in --corpus (all of them when none is given)."""
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


def parse_shard(shard: Optional[str]) -> Optional[tuple[int, int]]:
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


def slug(spec: str) -> str:
    """A model's short name for a default --out (the GGUF's folder, the hub id's last part)."""
    base = Path(spec).parent.name if spec.lower().endswith(".gguf") else spec.rstrip("/").split("/")[-1]
    return base.replace(":", "").lower() or "model"


def run_command(*, target: str, draft: str, corpus: Optional[str], prompts: Optional[Path], dataset: Optional[str],
                limit: Optional[int], max_new_tokens: int, device: str, dtype: str, batch_size: int, out: Optional[Path],
                resume: bool, headless: bool, spec_gamma: int, shard: Optional[str], cost: bool, trust_remote_code: bool,
                remeasure_cost: bool = False, record_paths: bool = False, backend: str = "torch",
                threads: Optional[int] = None) -> None:
    """`specterm run` on any engine (--backend): the run's config, then the checks and the oracle headless
    (engines/oracle.check_run, run_oracle), or the TUI's Run screen that runs the same two in its worker."""
    from specterm.core.store.modelkeys import remember_models
    from specterm.engines import engine_named
    from specterm.engines.base import OracleConfig
    from specterm.engines.oracle import check_run

    engine = engine_named(backend)
    plist = load_prompts(corpus, prompts, dataset, limit)
    sh = parse_shard(shard)
    out = out or Path("streams") / f"{slug(draft)}-{slug(target)}{engine.run_suffix}"
    distributed = shard is None and sh is not None
    final_out = out
    if sh is not None:
        out = out.with_name(f"{out.name}.shard-{sh[0]}-of-{sh[1]}")
    config = OracleConfig(target=target, draft=draft, prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          device=device, dtype=dtype, batch_size=batch_size, resume=resume, spec_gamma=spec_gamma,
                          measure_cost=cost, remeasure_cost=remeasure_cost, trust_remote_code=trust_remote_code, shard=sh,
                          record_paths=record_paths, backend=backend, threads=threads)
    remember_models(out, target, draft)  # on this machine only, never in run.json (costs and confirm find them)
    if headless or distributed or not sys.stdout.isatty():
        check_run(config)
        path = run_headless(config)
    else:
        from specterm.app import run_tui_oracle

        # The checks load transformers or llama.cpp and the tokenizers (~10 s): the Run screen runs them in
        # its worker and says so, instead of a blank terminal until they end.
        run_tui_oracle(config, check=check_run)
        return
    if distributed:
        assert sh is not None
        _barrier_and_merge(sh, final_out)
    elif path is not None:
        print(printable(f"open it with: specterm open {path}   or   specterm report {path}"))


def run_drafters_command(*, target: str, draft: list[str], corpus: Optional[str], prompts: Optional[Path],
                         dataset: Optional[str], limit: Optional[int], max_new_tokens: int, device: str, dtype: str,
                         batch_size: int, out: Optional[Path], resume: bool, headless: bool, spec_gamma: int,
                         shard: Optional[str], cost: bool, trust_remote_code: bool, remeasure_cost: bool = False,
                         record_paths: bool = False, y_from: Optional[Path] = None) -> None:
    """`specterm run --draft prompt-lookup[:N] [--draft ...]`: the drafter oracle (engines/torch/drafted_run.py),
    headless (the Run screen shows per-position bits, which a drafter run has not)."""
    from specterm.core.store import check_new_run_dir
    from specterm.engines.base import OracleConfig
    from specterm.engines.torch.drafted_run import drafter_outs, run_drafters

    if shard is not None or parse_shard(None) is not None:
        raise SpectermError("drafter runs are not sharded; leave out --shard (a drafter run of the built-in corpora "
                            "takes one target pass).")
    plist = load_prompts(corpus, prompts, dataset, limit)
    out = out or Path("streams") / f"{slug(target)}-{draft[0].replace(':', '-')}"
    config = OracleConfig(target=target, draft=draft[0], prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          device=device, dtype=dtype, batch_size=batch_size, resume=resume, measure_cost=cost,
                          remeasure_cost=remeasure_cost, trust_remote_code=trust_remote_code, record_paths=record_paths)
    outs = drafter_outs(out, list(draft))
    for path in outs:
        check_new_run_dir(path, resume)
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


def run_headless(config: Any) -> Optional[Path]:
    """Run with a rich progress bar on a terminal, or one log line per prompt otherwise (nohup)."""
    from specterm.engines.oracle import run_oracle

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
