"""Pieces of the Run screen: the current prompt's stream growing live, and the oracle's numbers."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widget import Widget

from specterm.engines.progress import Progress
from specterm.core.report.fmt import MISSING
from specterm.widgets.tables import fmt_duration


RUNS = re.compile(r"1+|0+|[^01]+")


class BitsView(Widget):
    """The current prompt's stream as the speculative decoder sees it: 1 accepted, 0 rejected, ? not yet known."""

    COMPONENT_CLASSES = {"bits-view--accepted", "bits-view--rejected", "bits-view--unknown"}

    DEFAULT_CSS = """
    BitsView {
        height: auto;
        min-height: 2;
        & > .bits-view--accepted { color: $text-success; }
        & > .bits-view--rejected { color: $text-error; text-style: bold; }
        & > .bits-view--unknown { color: $text-muted; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bits = ""

    def show(self, bits: str) -> None:
        if bits != self.bits:
            self.bits = bits
            self.refresh(layout=True)

    def render(self) -> Text:
        styles = {
            "1": self.get_component_rich_style("bits-view--accepted"),
            "0": self.get_component_rich_style("bits-view--rejected"),
        }
        unknown = self.get_component_rich_style("bits-view--unknown")
        text = Text(no_wrap=False, overflow="fold")
        # One span per maximal run of a character, not one per position.
        for m in RUNS.finditer(self.bits):
            text.append(m.group(), styles.get(m.group()[0], unknown))
        return text


def bits_legend(bits: str | None) -> str:
    """The line under the current prompt's stream: how many positions are accepted ('1'), rejected
    ('0') and not yet known ('?') so far; "none yet" before a prompt starts."""
    if not bits:
        return "current prompt: not started yet   (key: 1 accepted · 0 rejected · ? not yet known)"
    return (f"current prompt: {bits.count('1')} accepted, {bits.count('0')} rejected, "
            f"{bits.count('?')} not yet known")


def stats_line(p: Progress, eta: bool = True, since: float = 0.0) -> str:
    """tokens/s, ETA (left out with eta=False: after a cancel or the end), elapsed, running alpha
    and the gate, as markup. `since`: seconds since `p` was reported: the clock runs on between
    reports (elapsed + since, ETA - since, never below 0)."""
    gate = MISSING if p.gate_rate is None else f"{p.gate_rate:.3f}"
    gate_style = "" if p.gate_rate is None else ("$text-success" if p.gate_rate >= 1.0 else "$text-error")
    alpha = MISSING if p.running_alpha is None else f"{p.running_alpha:.3f}"
    parts = [
        f"[b]{p.tokens_per_s:.1f}[/] tok/s",
        *([f"ETA [b]{fmt_duration(None if p.eta_s is None else max(p.eta_s - since, 0.0))}[/]"] if eta else []),
        f"elapsed {fmt_duration(p.elapsed_s + since)}",
        f"alpha [b]{alpha}[/]",
        f"gate [b {gate_style}]{gate}[/]" if gate_style else f"gate {gate}",
    ]
    return "   ".join(parts)
