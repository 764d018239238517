"""`specterm report` on runs that include drafter runs (SPEC 2b): one drafter's runs give the drafter
report; runs of different drafters (or a drafter beside draft-model runs) of one target give the
"Which draft?" comparison."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specterm.core.drafted.drafter_analysis import DrafterReport, is_drafter_run
from specterm.core.drafted.drafter_checks import with_calibration
from specterm.core.drafted.which_draft import (DraftComparison, DrafterRuns, compare, rows_of_drafter_report,
                                           rows_of_model_report)
from specterm.core.errors import SpectermError
from specterm.core.store import Run, load_run, read_meta
from specterm.core.store.meta import drafter_of
from specterm.core.store.modelkeys import model_key, model_label


def has_drafter_run(paths: list[Path]) -> bool:
    """True when some run directory's run.json names a drafter (read before any record is parsed)."""
    return any(drafter_of(read_meta(p)) is not None for p in paths)


def _drafter_label(run: Run) -> str:
    draft = run.meta.get("draft")
    return model_label(draft)


def drafter_or_comparison(paths: list[Path], gamma: int, boot: int, seed: int,
                          analyse_models: Callable[[list[Run]], Any]) -> DrafterReport | DraftComparison:
    """The drafter report of `paths` (one drafter) or their comparison; `analyse_models(runs)` is the
    report of draft-model runs of one pair (the CLI's cached analysis)."""
    runs = [load_run(p) for p in paths]
    targets = {repr(model_key(r.meta.get("target"))) for r in runs}
    if len(targets) > 1:
        raise SpectermError("the runs have different targets; compare drafters for one target and its prompts.")
    groups: dict[str, list[Run]] = {}
    for run in runs:
        label = _drafter_label(run)
        groups.setdefault(("drafter:" if is_drafter_run(run) else "model:") + label, []).append(run)
    if len(groups) == 1 and next(iter(groups)).startswith("drafter:"):
        return with_calibration(runs, gamma=gamma, boot=boot, seed=seed)
    rows, calibration = [], []
    for key, group in groups.items():
        name = "+".join(r.path.name for r in group)
        if key.startswith("drafter:"):
            rep = with_calibration(group, gamma=gamma, boot=boot, seed=seed)
            rows.append(rows_of_drafter_report(rep, name))
            calibration += rep.calibration
        else:
            report = analyse_models(group)
            rows.append(rows_of_model_report(report, name, key.split(":", 1)[1]))
            calibration += report.calibration
    return compare(rows, model_label(runs[0].meta.get("target")), calibration)


def drafter_runs(runs: list[Run], gamma: int, boot: int, seed: int) -> list[DrafterRuns]:
    """The drafter runs among `runs`, one entry per drafter (its runs pooled, as `specterm report` groups
    them), each analysed (drafter_checks.with_calibration) into its Which draft? rows; in the order the runs came."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        if is_drafter_run(run):
            groups.setdefault((repr(model_key(run.meta.get("target"))), _drafter_label(run)), []).append(run)
    out = []
    for (target, _), group in groups.items():
        name = "+".join(r.path.name for r in group)
        rep = with_calibration(group, gamma=gamma, boot=boot, seed=seed)
        out.append(DrafterRuns(run=name, drafter=rep.drafter, target=target, target_label=model_label(group[0].meta.get("target")),
                               rows=rows_of_drafter_report(rep, name), calibration=list(rep.calibration)))
    return out
