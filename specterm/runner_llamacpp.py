"""CLI glue of the llama.cpp backend: `specterm run --backend llama.cpp` (argument checks first, then the
headless progress display); `specterm confirm --engine llama.cpp` is engines/confirm.confirm_command."""

from __future__ import annotations

import sys
from pathlib import Path

from specterm.core.errors import SpectermError
from specterm.engines.progress import Cancelled
from specterm.core.report.text import printable

IGNORED_RUN_FLAGS = {"device": "auto", "dtype": "auto", "batch_size": 4, "shard": None, "trust_remote_code": False,
                     "dataset": None}


def run_command(*, target, draft, corpus, prompts, dataset, limit, max_new_tokens, device, dtype, batch_size, out,
                resume, headless, spec_gamma, shard, cost, trust_remote_code, remeasure_cost=False, record_paths=False,
                threads: int | None = None) -> None:
    """`specterm run --backend llama.cpp`: checks (binding, GGUF files, --out, prompts), then the run."""
    from specterm.engines.llamacpp.binding import require_binding
    from specterm.engines.torch.oracle_torch import OracleConfig
    from specterm.runner import _check_out, _prompts, _slug, headless_progress

    given = {"device": device, "dtype": dtype, "batch_size": batch_size, "shard": shard,
             "trust_remote_code": trust_remote_code, "dataset": dataset}
    for key, default in IGNORED_RUN_FLAGS.items():
        if given[key] != default:
            flag = "--" + key.replace("_", "-")
            raise SpectermError(f"{flag} does not apply to --backend llama.cpp (CPU, the GGUF's own weights, one prompt "
                                "at a time); drop it.")
    if spec_gamma:
        raise SpectermError("--spec-gamma does not apply to --backend llama.cpp (y is llama.cpp's serial greedy); drop it.")
    for flag, spec in (("--target", target), ("--draft", draft)):
        if str(spec).startswith("layers:"):
            raise SpectermError(f"{flag} {spec}: a layer-skip self-draft runs only with --backend torch; give a .gguf "
                                "file for --backend llama.cpp.")
    threads = 1 if threads is None else threads
    if threads < 1:
        raise SpectermError("--threads must be at least 1.")
    require_binding()
    plist = _prompts(corpus, prompts, None, limit)
    if not plist:
        raise SpectermError("there are no prompts to run; check --corpus/--prompts.")
    out = out or Path("streams") / f"{_slug(draft)}-{_slug(target)}-llamacpp"
    _check_out(out, resume)
    from specterm.core.store.modelkeys import remember_models

    remember_models(out, target, draft)  # on this machine only, never in run.json
    config = OracleConfig(target=target, draft=draft, prompts=plist, out=out, max_new_tokens=max_new_tokens,
                          resume=resume, measure_cost=cost, remeasure_cost=remeasure_cost, record_paths=record_paths)
    from specterm.engines.llamacpp.oracle_llamacpp import run_oracle_llamacpp

    if not headless and sys.stdout.isatty():
        print("--backend llama.cpp runs headless (progress below).", file=sys.stderr)
    on_progress, ctx, log = headless_progress()
    try:
        with ctx:
            path = run_oracle_llamacpp(config, on_progress, threads=threads)
    except (Cancelled, KeyboardInterrupt):
        print(printable(f"interrupted: finished prompts are kept in {out}; continue with --resume."), file=sys.stderr)
        raise SystemExit(130) from None
    log(f"done: {path}")
    print(printable(f"open it with: specterm open {path}   or   specterm report {path}"))
