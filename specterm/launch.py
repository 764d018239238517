"""The `specterm` script's entry point: `main` starts the TUI's own two command lines without
importing typer (specterm/startup.py), and hands every other one to the typer app of cli.py."""

from __future__ import annotations

from typing import Any, Callable


def _typer_app() -> Callable[[], Any]:
    from specterm.cli import app

    return app


def main() -> None:
    from specterm.startup import run

    run(_typer_app)
