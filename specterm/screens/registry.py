"""Every screen of the app: its mode, title, number key, class (imported on first use) and one line
of help. The app, the command palette (commands.py) and the help screen all read this list."""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class ScreenInfo:
    """A screen: its mode name, title, number key and one line of help. Its class is
    `<Title without spaces>Screen` in `specterm.screens.<mode>`."""

    mode: str
    title: str
    key: str
    help: str
    short: str = ""
    """The name the footer shows beside the key (short enough for 80 columns)."""

    @property
    def module(self) -> str:
        return f"specterm.screens.{self.mode}"

    @property
    def cls(self) -> str:
        return self.title.title().replace(" ", "") + "Screen"


SCREENS: tuple[ScreenInfo, ...] = tuple(ScreenInfo(*row) for row in (
    ("overview", "Overview", "1", "The answer for this machine per corpus, then alpha, autocorrelation, D/D_geom, deficit; run metadata", "over"),
    ("streams", "Streams", "2", "Prompt list and one prompt's tokens, coloured accepted/rejected, with a cursor", "streams"),
    ("runlengths", "Run lengths", "3", "Histogram of run lengths L against the geometric prediction; w: alpha by position in y", "lengths"),
    ("optimum", "Optimum", "4", "g*_true and g*_iid against r, throughput curves, E_true/E_iid", "opt"),
    ("policies", "Policies", "5", "Draft-length policies replayed exactly; per-depth acceptance", "policy"),
    ("decide", "Decide", "6", "Speculate or not, with which g; batch crossover per accelerator", "decide"),
    ("scorecard", "Scorecard", "7", "P1-P5 and Q1-Q6 by seed: verdict, direction, size and evidence", "score"),
    ("run", "Run", "8", "The live oracle: progress, tokens/s, ETA, running alpha", "run"),
))


def screen_class(info: ScreenInfo) -> type:
    """Import a screen's class on first use, so start-up only pays for the first screen."""
    cls: type = getattr(importlib.import_module(info.module), info.cls)
    return cls
