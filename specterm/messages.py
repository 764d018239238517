"""Every custom Message of the app: oracle progress, loading and analysis results, failures.

Workers run in threads and talk to the UI only through these (posting a message is thread-safe).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.message import Message

from specterm import loading
from specterm.engines.progress import Progress
from specterm.core.report.types import Report


@dataclass
class OracleProgress(Message):
    """The oracle reported progress; a newer report replaces one still waiting in the queue."""

    progress: Progress

    def can_replace(self, message: Message) -> bool:
        # `self` is the older message; reports are cumulative snapshots so only the newest matters,
        # except that a "saved" report marks a finished prompt (a sparkline point) and is kept.
        return isinstance(message, OracleProgress) and self.progress.phase != "saved"


@dataclass
class OracleDone(Message):
    """The oracle finished every prompt; the run is complete at `path`."""

    path: Path


@dataclass
class OracleCancelled(Message):
    """The oracle stopped on request; every prompt finished before that is kept at `path`."""

    path: Path | None
    prompts_done: int


@dataclass
class OracleFailed(Message):
    """The oracle stopped on an error; `error` is one sentence."""

    error: str


@dataclass
class RunsLoaded(Message):
    """The runs given on the command line are loaded (streams available, report not yet)."""

    runs: list[Any]
    load_id: int = 0
    """Which load posted it (SpectermApp.load_id): a message of an older load is ignored."""
    groups: int = 1
    """How many model pairs the runs loaded hold (`M` cycles them)."""
    skipped: tuple[str, ...] = ()
    """One sentence per run given that did not load (the app names each; the others are shown)."""


@dataclass
class ReportReady(Message):
    """`analyse` finished: the typed report (core/report/types.py). `complete` is False for the point
    estimates that paint first (boot = 0: no CIs) while the bootstrap runs, and for the report with
    every CI (`cis`) while its verdicts are checked under the other bootstrap seeds."""

    report: Report | None
    """None: the report shown is withdrawn (a cached one found not to be its runs'; the right one follows)."""
    load_id: int = 0
    """Which load posted it (SpectermApp.load_id): a report of an older load is never shown."""
    complete: bool = True
    cis: bool = False
    """With complete=False: every CI is in, the borderline check of the verdicts still runs (loading.Shown.cis)."""
    pair_meta: dict[str, Any] | None = None
    """The metadata of the pair's first run, when the report comes before the runs (a warm open)."""
    painted: threading.Event | None = None
    """Set once the frame showing this report is painted (the load waits for it)."""
    groups: int | None = None
    """How many model pairs the runs hold, when the report comes before the runs."""


@dataclass
class DraftersReady(Message):
    """The drafter runs among the runs given, each drafter's Which draft? rows (loading.Drafted)."""

    drafters: list[Any]
    load_id: int = 0


@dataclass
class LoadStage(Message):
    """What the load is doing now (parsing the runs, computing the point estimates), for the line a
    screen shows while it waits: a 10M-position run takes seconds at each."""

    text: str
    load_id: int = 0


@dataclass
class LoadFailed(Message):
    """Loading or analysing the runs failed; `error` is one sentence."""

    error: str


def from_load(event: loading.Event) -> Message:
    """The message that says a load's event (specterm/loading.py) to the app."""
    if isinstance(event, loading.Stage):
        return LoadStage(event.text, event.load_id)
    if isinstance(event, loading.Parsed):
        return RunsLoaded(event.runs, event.load_id, groups=event.groups, skipped=event.skipped)
    if isinstance(event, loading.Drafted):
        return DraftersReady(event.drafters, event.load_id)
    return report_ready(event)


def report_ready(shown: loading.Shown) -> ReportReady:
    """The ReportReady message of a report a load shows (or withdraws)."""
    return ReportReady(shown.report, shown.load_id, complete=shown.complete, cis=shown.cis, pair_meta=shown.pair_meta,
                       painted=shown.painted, groups=shown.groups)
