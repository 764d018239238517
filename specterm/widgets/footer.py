"""The key footer: Textual's Footer, recomposed only when the keys it shows change.

Textual's Footer recomposes at every bindings update of its screen (a screen shown, the focus
moved, a table filled), and each recompose mounts every key anew and restyles each one twice
(FooterKey's `compact` watcher, then its data binding). On a screen switch of this app that was
about a third of the time (profile of a revisit of Decide: 54 restyles of 27 keys). The keys shown
are a function of the screen's active bindings (key, description, action, enabled, tooltip, shown,
group) and the footer's own settings, so an update that leaves that signature alone has nothing
to redraw.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from specterm.compat_textual import FooterKey, has_reactive, mark_footer_ready


def bindings_signature(screen: Screen[Any]) -> tuple[Any, ...]:
    """What the footer draws from: each shown active binding's key, description, action, enabled
    state, tooltip and group (Footer.compose draws only bindings with `show`; a focused table's
    hidden keys coming or going changes nothing it draws)."""
    return tuple(
        (b.key, b.key_display, b.description, b.action, enabled, tooltip, b.group)
        for (_, b, enabled, tooltip) in screen.active_bindings.values() if b.show
    )


def screens_first(widgets: list[Any]) -> list[Any]:
    """The footer's keys with the screens' number keys first (in their order), then the rest as
    Textual orders them: at 80 columns the keys that give way at the right end are a screen's own
    (all listed by `?`), never the names of the screens."""
    def is_screen(w: Any) -> bool:
        return isinstance(w, FooterKey) and str(getattr(w, "action", "")).startswith("switch_screen")

    return [w for w in widgets if is_screen(w)] + [w for w in widgets if not is_screen(w)]


class KeyFooter(Footer):
    """Footer that skips a recompose when the keys it would show are the ones it shows, and whose
    keys are made in their final compact state (no restyle each from their watcher and binding)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[Any, ...] | None = None
        """The signature of the keys shown (None until composed)."""
        self._keys_composed = False
        """Whether compose has drawn the keys (then an update with the same signature has nothing to draw)."""

    def compose(self) -> ComposeResult:
        """Textual's keys, each given the footer's `compact` before it mounts: FooterKey starts
        compact and its watcher, then its data binding to the footer, switched the class twice,
        each switch a restyle of the key (20 restyles at the first paint of the Overview).

        The keys are drawn when the footer is first composed: Textual's Footer composes empty and
        waits for its screen's first bindings update, whose recompose (mount, layout, a second
        frame) came after the first table was painted."""
        mark_footer_ready(self)
        self._keys_composed = True
        self._shown = (self.compact, self.show_command_palette, bindings_signature(self.screen))
        widgets = list(super().compose())
        for widget in widgets:
            if isinstance(widget, FooterKey) and has_reactive(widget, "compact"):
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
        yield from screens_first(widgets)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            signature = (self.compact, self.show_command_palette, bindings_signature(screen))
            if self._keys_composed and signature == self._shown:
                return
            self._shown = signature
        super().bindings_changed(screen)
