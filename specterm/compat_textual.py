"""Every private Textual name specterm uses, in one place (Textual 8.x: pyproject pins the major
version the tests run on). tests/test_compat_textual.py checks each against the installed Textual,
so an upgrade that renames or changes one fails there, by name, not somewhere in a screen.

    _css_update_count   App and Screen: the stylesheet generation a node was styled for
    _screen_stacks      App: mode -> its screen stack (created on a mode's first visit)
    _modes              App: the modes added (add_mode)
    _init_mode          App: create a mode's screen stack (mount its screen) without switching to it
    widgets._footer     FooterKey, the widget of one key in the Footer
    _bindings_ready     Footer: compose draws keys only once it is True
    _reactives          a DOM node class's reactives by name
"""

# ruff: noqa: SLF001  (this module is where the private names live)

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.screen import Screen
    from textual.widgets import Footer

__all__ = ["FooterKey", "has_mode", "has_reactive", "init_mode", "mark_footer_ready", "mark_styles_current",
           "screen_stacks", "styles_current"]


def mark_styles_current(screen: Screen[Any], app: App[Any]) -> None:
    """Mark a screen not yet mounted as styled for the app's current stylesheet: left behind it,
    Textual restyles every widget of the app on the screen's first visit."""
    screen._css_update_count = app._css_update_count


def styles_current(screen: Screen[Any], app: App[Any]) -> bool:
    """Whether `screen` was styled for the app's current stylesheet (no change of theme or CSS since)."""
    return bool(screen._css_update_count == app._css_update_count)


def screen_stacks(app: App[Any]) -> Mapping[str, list[Screen[Any]]]:
    """Each mode's screen stack, for the modes visited or mounted so far (read only)."""
    return app._screen_stacks


def has_mode(app: App[Any], mode: str) -> bool:
    """Whether `mode` was added to the app (App.add_mode)."""
    return mode in app._modes


def init_mode(app: App[Any], mode: str) -> Screen[Any]:
    """Mount mode `mode`'s screen without switching to it; its screen."""
    app._init_mode(mode)
    return app._screen_stacks[mode][0]


def mark_footer_ready(footer: Footer) -> None:
    """Let the Footer's compose draw its keys now (Textual's waits for its screen's first bindings update)."""
    footer._bindings_ready = True


def has_reactive(node: DOMNode, name: str) -> bool:
    """Whether `name` is a reactive of the node's class."""
    return name in node._reactives
