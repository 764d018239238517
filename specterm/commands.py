"""The command palette (Ctrl+P): every screen, both exports, theme, model pair and help."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from specterm.screens.registry import SCREENS

if TYPE_CHECKING:
    from specterm.app_view import AppView


class SpectermCommands(Provider):
    """Command palette entries: every screen, both exports, theme and help."""

    def _commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app: "AppView" = self.app  # type: ignore[assignment]
        out: list[tuple[str, Callable[[], Any], str]] = []
        for s in SCREENS:
            if s.mode == "run" and not app.has_oracle:
                continue
            out.append((f"Screen: {s.title}", partial(app.action_switch_screen, s.mode), f"[{s.key}] {s.help}"))
        out += [
            ("Export: this screen's tables", app.action_export, "[e] Write the tables on this screen as markdown"),
            ("Export: every table", app.action_export_all, "[E] The whole report as markdown (= specterm report --format md)"),
            ("Theme: toggle dark / light", app.action_toggle_theme, "[t] Switch between the dark and the light theme"),
            ("Runs: next draft/target pair", app.action_next_models, "[M] Runs of different model pairs are analysed apart"),
            ("Help: keys", app.action_help, "[f1] Every key of every screen"),
        ]
        return out

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
