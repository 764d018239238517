"""Which streams are analysed together (SPEC: a prompt counts once; model pairs are never pooled).

- Runs of different model pairs (model_key of target and draft) are never pooled: the TUI shows one
  pair at a time (group_by_models), `specterm report` refuses a mix (single_pair).
- Within one pair, a (corpus, id) counts once: the same run opened twice is opened once, and a
  prompt stored in two runs is kept from the first when the records are identical and refused
  when they differ (pool_runs).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any


from specterm.core.errors import SpectermError
from specterm.core.streams import Run, Stream, model_key, model_label


def pair_key(run: Run) -> tuple[str, str]:
    """The model pair of a run: (target, draft) identities (model_key)."""
    return (repr(model_key(run.meta.get("target"))), repr(model_key(run.meta.get("draft"))))


def pair_label(run: Run) -> str:
    return f"target {model_label(run.meta.get('target'))}, draft {model_label(run.meta.get('draft'))}"


def same_record(a: Stream, b: Stream) -> bool:
    """True when two streams hold the same stored record (every field, arrays compared exactly)."""
    ra, rb = a.to_record(), b.to_record()
    return ra == rb


def pool_runs(runs: list[Run]) -> list[Run]:
    """The runs of one pair with every (corpus, id) kept once, in order.

    A run directory given twice is kept once; a prompt already kept from an earlier run is dropped
    from a later one when its record is identical, and refused (SpectermError naming both runs)
    when it differs. Returns new Run objects; the inputs are not changed.
    """
    out: list[Run] = []
    seen_paths: set[Any] = set()
    kept: dict[tuple[str, str], tuple[Stream, Run]] = {}
    for run in runs:
        where = run.path.resolve()
        if where in seen_paths:
            continue
        seen_paths.add(where)
        streams = []
        for s in run.streams:
            key = (s.corpus, s.id)
            if key in kept:
                first, first_run = kept[key]
                if not same_record(first, s):
                    raise SpectermError(
                        f"prompt {s.id!r} ({s.corpus}) is in both {first_run.path} and {run.path} with different "
                        "records; a prompt of one model pair counts once, so open only one of these runs."
                    )
                continue
            kept[key] = (s, run)
            streams.append(s)
        out.append(replace(run, streams=streams))
    return out


def group_by_models(runs: list[Run]) -> list[list[Run]]:
    """Runs split by model pair in first-seen order, each group pooled (pool_runs)."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(pair_key(run), []).append(run)
    return [pool_runs(g) for g in groups.values()]


def single_pair(runs: list[Run]) -> list[Run]:
    """The runs pooled (pool_runs), or one sentence naming runs of different model pairs."""
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(pair_key(run), []).append(run)
    if len(groups) > 1:
        firsts = [g[0] for g in groups.values()]
        names = " and ".join(f"{r.path} ({pair_label(r)})" for r in firsts[:3])
        raise SpectermError(f"{names} are runs of different model pairs, which are never pooled; report each pair on its own.")
    return pool_runs(runs)
