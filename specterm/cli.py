"""The `specterm` command line (typer). Heavy imports live inside the commands so `--help` is instant.

Ownership while the project is being built (edit only your own block):
  - run / merge            -> bodies in specterm/runner.py
  - import / report / list -> analytics
  - open / no-argument     -> TUI
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

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


def fail(message: str, code: int = 2) -> None:
    """Print one sentence to stderr and exit (no traceback)."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


# ---------------------------------------------------------------- run / merge (runner) ---


@app.command("run")
def run_cmd(
    target: str = typer.Option(..., "--target", "-t", help="Target model: Hugging Face id, local directory, or .gguf file."),
    draft: str = typer.Option(
        ..., "--draft", "-d",
        help="Draft model: Hugging Face id, local directory, .gguf file, or 'layers:K' (the target's first K layers, a layer-skip self-draft).",
    ),
    corpus: Optional[str] = typer.Option(None, "--corpus", "-c", help="Built-in corpora, comma-separated (prose,code,json,math,multilingual). Default: all."),
    prompts: Optional[Path] = typer.Option(None, "--prompts", help="Prompts file: jsonl with id/corpus/prompt, or plain text with one prompt per line."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Hugging Face dataset NAME[:split:field] (needs network)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="At most this many prompts per corpus."),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", "-n", help="Length of each greedy continuation y."),
    device: str = typer.Option("auto", "--device", help="auto|cpu|cuda|mps (auto: cuda, then mps, then cpu)."),
    dtype: str = typer.Option("auto", "--dtype", help="auto|float32|bfloat16|float16 (auto: bfloat16 on cuda, float32 otherwise and for GGUF)."),
    batch_size: int = typer.Option(4, "--batch-size", "-b", help="Prompts per teacher-forced batch."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Run directory (default: streams/<draft>-<target>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run: finished prompts are kept and skipped."),
    headless: bool = typer.Option(False, "--headless", help="No TUI: a plain progress display fit for nohup/SSH logs."),
    spec_gamma: int = typer.Option(5, "--spec-gamma", help="Draft length of the speculative decoder that generates y (0: plain greedy)."),
    shard: Optional[str] = typer.Option(None, "--shard", help="i/N: take the i-th of N deterministic shares of the prompts (0-based); merge with `specterm merge`."),
    cost: bool = typer.Option(True, "--cost/--no-cost", help="Measure the cost ratio r = c_draft / c_verify on this hardware."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow model code from the hub (off by default)."),
) -> None:
    """Run the exact oracle: greedy y from the target, one teacher-forced pass per model, a_t per position."""
    from specterm.runner import run_command

    run_command(**locals())


@app.command("merge")
def merge_cmd(
    shards: List[Path] = typer.Argument(..., help="Shard run directories written with --shard i/N (or by torchrun ranks)."),
    out: Path = typer.Option(..., "--out", "-o", help="Merged run directory."),
) -> None:
    """Merge shard runs of the same models into one run (each prompt exactly once)."""
    from specterm.runner import merge_command

    merge_command(shards=shards, out=out)


# ---------------------------------------------------------- import / report / list (analytics) ---


# ---------------------------------------------------------------------- open / no-argument (TUI) ---


def main() -> None:
    from specterm.core.errors import SpectermError

    try:
        app()
    except SpectermError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
