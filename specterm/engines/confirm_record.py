"""A confirmation record in run.json (`specterm confirm`, SPEC 6 "Confirmation"): written whole, under
the run lock, with the costs it installs and the cost profile of costs by batch it brings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specterm.core.decide.hardware import BATCH_COST_KEY, CONFIRMATIONS_KEY
from specterm.core.decide.hardware.profiles import PROFILES_KEY, with_profile
from specterm.core.store import RunLock, read_meta, write_meta_atomic


def put_record(meta: dict[str, Any], key: str, record: dict[str, Any], index: int | None) -> int:
    """Put `record` at `index` of meta's list `key` (append when None or past its end; a missing or
    malformed list starts anew); returns its index."""
    records = meta.get(key)
    if not isinstance(records, list):
        records = []
    if index is None or index >= len(records):
        records.append(record)
        index = len(records) - 1
    else:
        records[index] = record
    meta[key] = records
    return index


def write_confirmation_key(run_dir: Path, key: str, record: dict[str, Any], index: int | None) -> int:
    """Put `record` at `index` of run.json's list `key` (append when None), atomically, under the run lock
    (only run.json is rewritten); returns its index."""
    with RunLock(run_dir):
        meta = read_meta(run_dir)
        index = put_record(meta, key, record, index)
        write_meta_atomic(run_dir, meta)
    return index


def write_confirmation(run_dir: Path, record: dict[str, Any], index: int | None, cost: dict[str, Any] | None = None,
                       batch_cost: dict[str, Any] | None = None, profile: dict[str, Any] | None = None) -> int:
    """Put `record` at `index` of run.json's confirmations (append when None), atomically; returns its index.

    With `cost`, also make it the run's "cost" (the previous one is kept in cost.earlier).
    Only run.json is rewritten (temp file + rename) under the run lock (core/lock.py: a `specterm
    run --resume` or `repair` writing the same run meanwhile is refused, and vice versa);
    prompts.jsonl is never opened for writing.
    With `batch_cost`, also store it as the run's costs by batch (BATCH_COST_KEY, for older readers)
    and `profile` (the cost profile it belongs to) among the run's profiles.
    """
    with RunLock(run_dir):
        meta = read_meta(run_dir)
        if profile is not None:
            meta[PROFILES_KEY] = with_profile(meta, profile)  # read before the legacy keys change
        if batch_cost is not None:
            meta[BATCH_COST_KEY] = batch_cost
        index = put_record(meta, CONFIRMATIONS_KEY, record, index)
        if cost is not None:
            old = dict(meta.get("cost") or {})
            new = dict(cost)
            if old:
                new["earlier"] = [*old.pop("earlier", []), old]
            meta["cost"] = new
        write_meta_atomic(run_dir, meta)
    return index
