"""Every screen of the app: its mode, title, number key, class (imported on first use) and one line
of help. The app, the command palette (commands.py) and the help screen all read this list."""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class ScreenInfo:
    mode: str
    title: str
    key: str
    module: str
    cls: str
    help: str


SCREENS: tuple[ScreenInfo, ...] = (
    ScreenInfo("overview", "Overview", "1", "specterm.screens.overview", "OverviewScreen",
               "Per-corpus table: alpha, autocorrelation, D/D_geom, deficit; run metadata"),
    ScreenInfo("streams", "Streams", "2", "specterm.screens.streams", "StreamsScreen",
               "Prompt list and one prompt's tokens, coloured accepted/rejected, with a cursor"),
    ScreenInfo("runlengths", "Run lengths", "3", "specterm.screens.runlengths", "RunLengthsScreen",
               "Histogram of run lengths L against the geometric prediction"),
    ScreenInfo("optimum", "Optimum", "4", "specterm.screens.optimum", "OptimumScreen",
               "g*_true and g*_iid against r, throughput curves, E_true/E_iid"),
    ScreenInfo("policies", "Policies", "5", "specterm.screens.policies", "PoliciesScreen",
               "Draft-length policies replayed exactly; per-depth acceptance"),
    ScreenInfo("decide", "Decide", "6", "specterm.screens.decide", "DecideScreen",
               "Speculate or not, with which g; batch crossover per accelerator"),
    ScreenInfo("scorecard", "Scorecard", "7", "specterm.screens.scorecard", "ScorecardScreen",
               "P1-P5: verdict and evidence"),
    ScreenInfo("run", "Run", "8", "specterm.screens.run", "RunScreen",
               "The live oracle: progress, tokens/s, ETA, running alpha"),
)


def screen_class(info: ScreenInfo) -> type:
    """Import a screen's class on first use, so start-up only pays for the first screen."""
    return getattr(importlib.import_module(info.module), info.cls)
