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
    """Dismisses with the path to write (Enter) or None (Escape).

    Every path a person can type gets one sentence before anything is written: empty (say so),
    a folder (refused: name a file in it), a parent folder that is missing (Enter again creates
    it), a parent that is a file (refused), a file that exists (Enter again overwrites it)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", id="export.cancel")]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = free_path(default)
        self.confirm: Path | None = None
        """A path that exists (or whose folder is missing) and was warned about: Enter on it again goes on."""

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static("[b]Export markdown[/] to (Enter writes, Escape cancels):")
            yield Input(value=str(self.default), id="export-path")
            yield Static("", id="export-warning")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def warn(self, markup: str) -> None:
        self.query_one("#export-warning", Static).update(markup)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.confirm = None
            self.warn("[b $warning]No path given:[/] type a file name to write, or press Escape to cancel.")
            return
        path = Path(value).expanduser()
        shown = safe(str(path))
        if path.is_dir():
            self.confirm = None
            self.warn(f"[b $error]{shown} is a folder:[/] type a file name in it, e.g. {safe(str(path / self.default.name))}.")
            return
        existing = next((p for p in path.parents if p.exists()), None)  # the deepest folder on the way
        if existing is not None and not existing.is_dir():
            self.confirm = None
            self.warn(f"[b $error]{safe(str(existing))} is a file, not a folder:[/] choose another path.")
            return
        if path == self.confirm:
            self.dismiss(path)
            return
        if not path.parent.exists():
            self.confirm = path
            self.warn(f"[b $warning]The folder {safe(str(path.parent))} does not exist:[/] Enter again creates it; "
                      "edit the path to write elsewhere.")
            return
        if path.exists():
            self.confirm = path
            self.warn(f"[b $warning]{shown} exists:[/] Enter again overwrites it; edit the path to keep it.")
            return
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)
