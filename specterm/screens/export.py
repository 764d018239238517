"""Where should the markdown go? A small modal with the default path filled in; Enter writes.

Never overwrites without asking: the default offered is the first free name (specterm-x.md,
specterm-x-2.md, ...), and Enter on a path that exists only warns; a second Enter on the same
path confirms the overwrite."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from specterm.widgets.tables import safe


def free_path(path: Path) -> Path:
    """`path` if nothing is there, else the first of stem-2, stem-3, ... (same folder and suffix)
    that is free."""
    if not path.exists():
        return path
    k = 2
    while (candidate := path.with_name(f"{path.stem}-{k}{path.suffix}")).exists():
        k += 1
    return candidate


class ExportScreen(ModalScreen[Path | None]):
    """Dismisses with the path to write (Enter) or None (Escape)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", id="export.cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = free_path(default)
        self.confirm: Path | None = None
        """A path that exists and was warned about: Enter on it again overwrites."""

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static("[b]Export markdown[/] to (Enter writes, Escape cancels):")
            yield Input(value=str(self.default), id="export-path")
            yield Static("", id="export-warning")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.dismiss(None)
            return
        path = Path(value).expanduser()
        if path.exists() and path != self.confirm:
            self.confirm = path
            self.query_one("#export-warning", Static).update(
                f"[b $warning]{safe(str(path))} exists:[/] Enter again overwrites it; edit the path to keep it.")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
