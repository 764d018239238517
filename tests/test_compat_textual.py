"""One test per private Textual name in specterm/compat_textual.py: each fails when the installed
Textual renames it or changes what it does, and the rest of specterm holds none of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from specterm import compat_textual as compat

ROOT = Path(__file__).resolve().parents[1] / "specterm"
pytestmark = pytest.mark.anyio
PRIVATE = ("_css_update_count", "_screen_stacks", "_init_mode", "_modes", "_bindings_ready", "_reactives", "_footer")


class Plain(Screen):
    def compose(self) -> ComposeResult:
        yield Static("plain", id="plain")


class Two(App):
    BINDINGS = [Binding("x", "bell", "ring")]

    def on_mount(self) -> None:
        self.add_mode("one", Plain)
        self.add_mode("two", Plain)
        self.switch_mode("one")


async def test_init_mode_mounts_a_modes_screen_without_switching_and_screen_stacks_holds_it():
    app = Two()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "one" in compat.screen_stacks(app) and "two" not in compat.screen_stacks(app)
        screen = compat.init_mode(app, "two")
        await pilot.pause()
        assert isinstance(screen, Plain) and compat.screen_stacks(app)["two"] == [screen]
        assert app.current_mode == "one" and app.screen is not screen and screen.query_one("#plain")


async def test_has_mode_is_the_modes_added():
    app = Two()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert compat.has_mode(app, "one") and compat.has_mode(app, "two") and not compat.has_mode(app, "three")


async def test_styles_counter_marks_a_new_screen_current_and_a_theme_change_makes_it_stale():
    app = Two()
    async with app.run_test() as pilot:
        await pilot.pause()
        fresh = Plain()
        assert not compat.styles_current(fresh, app)  # a new screen starts behind (Textual restyles it)
        compat.mark_styles_current(fresh, app)
        assert compat.styles_current(fresh, app)
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await pilot.pause()
        assert not compat.styles_current(fresh, app)  # the app's counter moved on


def test_footer_key_is_textuals_key_widget_with_a_compact_reactive():
    from textual.widgets._footer import FooterKey

    assert compat.FooterKey is FooterKey
    key = FooterKey("x", "x", "ring", "app.bell")
    assert compat.has_reactive(key, "compact") and not compat.has_reactive(key, "no_such_reactive")


async def test_a_footer_marked_ready_composes_its_keys_at_once():
    class Keys(App):
        BINDINGS = [Binding("x", "bell", "ring")]

        def compose(self) -> ComposeResult:
            yield Footer()

    app = Keys()
    async with app.run_test() as pilot:
        await pilot.pause()
        footer = app.query_one(Footer)
        assert footer._bindings_ready  # Textual's own flag, which the helper sets
        fresh = Footer()
        assert not fresh._bindings_ready
        assert list(fresh.compose()) == []  # not ready: Textual composes no keys
        compat.mark_footer_ready(fresh)
        assert fresh._bindings_ready


def private_uses(source: str) -> set[str]:
    """The private Textual names of PRIVATE that a module's code touches (attributes and imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module and "._" in node.module and node.module.startswith("textual"):
            found.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PRIVATE:
            found.add(node.value)  # getattr(x, "_name")
    return found


@pytest.mark.parametrize("path", sorted(p for p in ROOT.rglob("*.py") if p.name != "compat_textual.py"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_module_uses_a_private_textual_name(path):
    assert private_uses(path.read_text(encoding="utf-8")) == set()


def test_the_scan_sees_what_it_must_refuse():
    assert private_uses("screen._css_update_count = 1\n") == {"_css_update_count"}
    assert private_uses("from textual.widgets._footer import FooterKey\n") == {"textual.widgets._footer"}
    assert private_uses("getattr(app, '_screen_stacks', {})\n") == {"_screen_stacks"}
    assert private_uses((ROOT / "compat_textual.py").read_text(encoding="utf-8")) >= {"_init_mode", "_modes", "_reactives"}
