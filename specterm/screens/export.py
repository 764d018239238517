"""Where should the markdown go? A small modal with the default path filled in; Enter writes."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportScreen(ModalScreen[Path | None]):
    """Dismisses with the path to write (Enter) or None (Escape)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", id="export.cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static("[b]Export markdown[/] to (Enter writes, Escape cancels):")
            yield Input(value=str(self.default), id="export-path")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value).expanduser() if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
