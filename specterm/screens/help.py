"""F1: every key of every screen, read from the bindings themselves (so it never goes stale)."""

from __future__ import annotations

from typing import Any

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from specterm.screens.registry import SCREENS, screen_class


def key_rows(app: Any) -> list[tuple[str, str, str]]:
    """(where, key, what) for the app's keys, then each screen's, then the token cursor's."""
    from specterm.widgets.tokens import TokenView

    def rows(where: str, bindings: Any) -> list[tuple[str, str, str]]:
        out = []
        for b in bindings:
            if not isinstance(b, Binding):
                continue
            what = b.tooltip or b.description or b.action
            keys = ", ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in b.key.split(","))
            out.append((where, keys, what))
        return out

    table = rows("everywhere", [b for b in type(app).BINDINGS if not b.action.startswith("switch_screen")])
    # Every number key the footer shows, 8 too: without a run in progress it says how to start one.
    table += [("everywhere", s.key, f"{s.title} screen" if s.mode != "run" or getattr(app, "has_oracle", False)
               else f"{s.title} screen, while `specterm run` drives the oracle (otherwise it says how to start one)")
              for s in SCREENS]
    table.append(("everywhere", app.get_key_display(Binding("ctrl+p", "command_palette")), "Command palette: screens, export, theme"))
    for s in SCREENS:
        if s.mode == "run" and not getattr(app, "has_oracle", False):
            continue
        # Only the screen's own keys (inherited ones, like Tab, are listed once below).
        table += rows(s.title, vars(screen_class(s)).get("BINDINGS", []))
        if s.mode == "streams":
            table += rows("Streams tokens", TokenView.BINDINGS)
    from specterm.screens.base import ReportScreen

    table += rows("every screen", ReportScreen.BINDINGS)
    table.append(("every screen", "enter", "Overview / Decide: open Streams filtered to the corpus of the row"))
    table.append(("everywhere", "tab, shift+tab", "Move the focus (prompt list, token view, tables)"))
    table += MARKS
    return table


MARKS = [
    ("marks on screen", "r1, r2, ...", "Streams list, gate column: y of that prompt was repaired 1, 2, ... times (an "
     "engine whose batched and serial passes round near-ties differently, llama.cpp: docs/method.md 1.3); the "
     "prompt's head line lists the repaired positions"),
    ("marks on screen", "123/128", "Streams list, n column: 123 of 128 positions analysed (the gate failed at the "
     "first one left out)"),
    ("marks on screen", "[…]", "a 95% interval still being computed"),
    ("marks on screen", "(borderline)", "a verdict that changes under another bootstrap seed (0-4)"),
    ("marks on screen", "(this machine)", "the costs a decision reads were timed on this machine; (other machine): "
     "another's, so `specterm costs RUN` measures this one"),
]
"""What the screens' marks mean, listed after the keys (the help's last section)."""


class HelpScreen(ModalScreen[None]):
    """The keys table; `rows` are (where, key, what), e.g. `key_rows(app)`."""

    BINDINGS = [Binding("escape,f1,question_mark,q", "dismiss", "close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static("[b]specterm keys[/]", id="help-title")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)
            yield Static("[dim]Escape, ? or F1 closes · Tab moves focus · Ctrl+Q quits[/]", id="help-footer")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "what")
        key_width = max((len(key) for _, key, _ in self.rows), default=3)
        # the box: 90% of the screen, at most 100, less border, padding, cell padding and a scrollbar
        width = min(int(self.app.size.width * 0.9), 100) - 4 - key_width - 4 - 2
        section = None
        for where, key, what in self.rows:
            if where != section:  # a heading row per screen
                section = where
                table.add_row(Text(""), Text(where, style="bold underline"))
            lines = textwrap.wrap(what, max(width, 20)) or [""]
            table.add_row(Text(key, style="bold"), Text("\n".join(lines)), height=len(lines))
        table.focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
