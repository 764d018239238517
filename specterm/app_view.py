"""What the screens and the command palette read and call on the app (`AppView`; app.SpectermApp is
the one implementation). They type the app with it instead of importing app.py, which imports them, so
there is no import circle, not even a type-only one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from specterm.core.report.types import Report
    from specterm.core.store import Run


class AppView(Protocol):
    report: Report | None             # the analysis of the open runs (None while it is computed)
    runs: list[Run] | None
    set_name: str                     # the chosen set (a corpus, or "pooled")
    ci_pending: bool                  # point estimates shown, intervals still computed
    verdicts_pending: bool            # intervals shown, the borderline marks still computed
    oracle_result: Path | None        # where the Run screen's run is, once it ended
    drill_from: str | None            # the screen a drill-down came from (Escape goes back)
    error: str | None                 # why the runs could not be loaded or analysed
    drafters: list[Any]               # the drafter runs given, one DrafterRuns per drafter (Decide's Which draft?)
    load_stage: str                   # what the load is doing now (the loading line)
    analysis_params: dict[str, int]   # gamma, boot, shuffles, seed of the analysis
    run_paths: list[Path]
    pair_meta: dict[str, Any] | None  # run.json of the shown pair before its runs are parsed
    n_model_groups: int               # draft/target pairs among the runs
    streams_request: bool             # Enter on a row asked Streams to show one corpus ...
    streams_corpus: str | None        # ... this one
    current_mode: str                 # the screen shown (Textual's mode)

    @property
    def set_names(self) -> list[str]: ...
    @property
    def has_oracle(self) -> bool: ...
    @property
    def pair_key(self) -> int: ...

    def schedule_idle_work(self) -> None: ...
    def open_results(self, paths: Sequence[Path]) -> None: ...
    def action_switch_screen(self, mode: str) -> None: ...
    def action_export(self) -> None: ...
    def action_export_all(self) -> None: ...
    def action_toggle_theme(self) -> None: ...
    def action_next_models(self) -> None: ...
    def action_help(self) -> None: ...
