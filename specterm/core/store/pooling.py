"""Which runs are analysed together (SPEC: a prompt counts once; model pairs are never pooled).

A *measurement* is a model pair run with one set of generation settings (meta.generation_settings:
max_new_tokens, how y was built, dtype, decoding rule, prompt encoding). Runs of different
measurements are never pooled: the TUI shows one at a time (group_runs, `M` for the next), and
`specterm report` refuses a mix (single_pair). Two runs of one pair with different -n are two
honest measurements, shown as two groups, never refused as a whole.

- A run's pair is the identities of its target and draft (model_key). An import names its models
  with `import --target/--draft` (recorded as source "named"); an import that names none is a pair
  of its own, never pooled with another run.
- Within one measurement, a (corpus, id) counts once: the same run opened twice is opened once; a
  prompt stored in two runs is kept from the first when the records are the same measurement and
  refused when they differ. The same measurement (same_measurement): every field equal except the
  probabilities (draft_conf, target_conf, beta), which may differ by float32 batching noise, up to
  PROB_ATOL: shards of one run teacher-forced in other batches differ by ~3e-6.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.store.meta import SETTING_FLAGS, generation_settings
from specterm.core.store.modelkeys import model_key, model_label
from specterm.core.store.records import Stream
from specterm.core.store.runs import Run

# Largest |difference| of a stored probability between two records of one measurement. float32
# batching noise (summation order of another batch shape) is ~1e-6 (3e-6 seen on merged shards); a
# real difference of models or settings moves probabilities by far more. 1e-4 leaves 30x headroom
# and is below every printed digit of the statistics that use probabilities (3 decimals).
PROB_ATOL = 1e-4
_PROB_FIELDS = ("draft_conf", "target_conf", "beta")
_EXACT_FIELDS = ("id", "corpus", "prompt", "bits", "gate", "y", "draft_argmax", "text", "piece_ends", "stop", "runs",
                 "proposed", "prompt_tokens")


def _unnamed(model: Any) -> bool:
    return model is None


def pair_key(run: Run) -> tuple[str, str]:
    """The model pair of a run: (target, draft) identities (model_key). A run that names neither
    model (an import without --target/--draft) is its own pair, keyed by its directory."""
    target, draft = run.meta.get("target"), run.meta.get("draft")
    if _unnamed(target) and _unnamed(draft):
        return ("unnamed import", str(run.path.resolve()))
    return (repr(model_key(target)), repr(model_key(draft)))


def pair_label(run: Run) -> str:
    target, draft = run.meta.get("target"), run.meta.get("draft")
    if _unnamed(target) and _unnamed(draft):
        return "models not named (import with --target/--draft to pool it with runs of its pair)"
    return f"target {model_label(target)}, draft {model_label(draft)}"


def settings_key(run: Run) -> tuple[Any, ...]:
    """The generation settings of a run that change what its streams mean (meta.generation_settings)."""
    return tuple(generation_settings(run.meta).values())


def measurement_key(run: Run) -> tuple[Any, ...]:
    """What must be equal for two runs to pool: the pair and the generation settings."""
    return (pair_key(run), settings_key(run))


def settings_difference(a: Run, b: Run) -> str:
    """How the settings of two runs of one pair differ, e.g. "max_new_tokens 16 vs 128 (-n)"."""
    sa, sb = generation_settings(a.meta), generation_settings(b.meta)
    parts = [f"{k} {sa[k]} vs {sb[k]} ({SETTING_FLAGS[k]})" for k in sa if sa[k] != sb[k]]
    return ", ".join(parts) or "the same settings"


def group_label(runs: list[Run]) -> str:
    """One line naming a group of runs: its pair and the settings that set it apart."""
    if not runs:
        return ""
    gen = generation_settings(runs[0].meta)
    extra = f", -n {gen['max_new_tokens']}" if gen["max_new_tokens"] is not None else ""
    return f"{pair_label(runs[0])}{extra}"


def same_measurement(a: Stream, b: Stream, atol: float = PROB_ATOL) -> bool:
    """True when two streams hold the same measurement: every field equal (arrays exactly) except
    the probabilities, which must be both absent or within `atol` of each other everywhere."""
    for name in _EXACT_FIELDS:
        va, vb = getattr(a, name), getattr(b, name)
        if isinstance(va, np.ndarray) or isinstance(vb, np.ndarray):
            if va is None or vb is None or not np.array_equal(va, vb):
                return False
        elif va != vb:
            return False
    for name in _PROB_FIELDS:
        va, vb = getattr(a, name), getattr(b, name)
        if va is None or vb is None:
            if va is not vb:
                return False
        elif va.shape != vb.shape or not bool(np.all(np.abs(va.astype(np.float64) - vb) <= atol)):
            return False
    return True


def pool_runs(runs: list[Run], note: Callable[[str], None] | None = None) -> list[Run]:
    """The runs of one measurement with every (corpus, id) kept once, in order.

    A run directory given twice is kept once; a prompt already kept from an earlier run is dropped
    from a later one when it is the same measurement (same_measurement), and refused
    (SpectermError naming both runs) when it differs. When the dropped copies differ within
    PROB_ATOL only, `note` gets one sentence per pair of runs saying which run's records were kept.
    Returns new Run objects; the inputs are not changed.
    """
    out: list[Run] = []
    seen_paths: set[Any] = set()
    kept: dict[tuple[str, str], tuple[Stream, Run]] = {}
    noisy: dict[tuple[str, str], int] = {}
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
                if not same_measurement(first, s):
                    raise SpectermError(
                        f"prompt {s.id!r} ({s.corpus}) is in both {first_run.path} and {run.path} with different "
                        "records; a prompt of one model pair counts once, so open only one of these runs."
                    )
                if not same_measurement(first, s, atol=0.0):
                    pair = (str(first_run.path), str(run.path))
                    noisy[pair] = noisy.get(pair, 0) + 1
                continue
            kept[key] = (s, run)
            streams.append(s)
        out.append(replace(run, streams=streams))
    if note is not None:
        for (first_path, later_path), count in noisy.items():
            note(f"{count} prompt(s) are in both {first_path} and {later_path} with probabilities equal within "
                 f"{PROB_ATOL:g} (float32 batching noise), the same measurement: kept the records of {first_path}.")
    return out


def group_runs(runs: list[Run], note: Callable[[str], None] | None = None) -> list[list[Run]]:
    """Runs split by measurement (measurement_key: pair and generation settings) in first-seen
    order, each group pooled (pool_runs)."""
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        groups.setdefault(measurement_key(run), []).append(run)
    return [pool_runs(g, note) for g in groups.values()]


def single_pair(runs: list[Run], note: Callable[[str], None] | None = None) -> list[Run]:
    """The runs pooled (pool_runs), or one sentence naming runs of different model pairs or of one
    pair with different generation settings."""
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        groups.setdefault(measurement_key(run), []).append(run)
    if len(groups) > 1:
        firsts = [g[0] for g in groups.values()]
        if len({pair_key(r) for r in firsts}) > 1:
            names = " and ".join(f"{r.path} ({pair_label(r)})" for r in firsts[:3])
            raise SpectermError(f"{names} are runs of different model pairs, which are never pooled; report each pair on its own.")
        a, b = firsts[0], firsts[1]
        raise SpectermError(f"{a.path} and {b.path} are runs of one model pair with different settings "
                            f"({settings_difference(a, b)}), different measurements that are never pooled; report each on its own.")
    return pool_runs(runs, note)
