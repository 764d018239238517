"""The cost side of the decision's uncertainty (SPEC 6 "Uncertainty"), once per run: replicates of
the robust cost curve and of the costs by batch, each from its stored samples, with seeds fixed by
the report's seed (independent of the prompt resamples)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.decide.hardware.batch import BatchCosts, batch_costs
from specterm.core.decide.hardware.confirmations import BATCH_COST_KEY
from specterm.core.decide.hardware.curve import CostReplicates, cost_replicates


@dataclass(frozen=True)
class RunCostUncertainty:
    reps: CostReplicates | None = None
    batch: BatchCosts | None = None
    batch_reps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    batch_fwd_reps: np.ndarray | None = None  # c_draft_fwd(g, B) replicates (an engine's term; None: torch)


def cost_seed(seed: int, what: str) -> int:
    """A seed for the cost resampling `what`, fixed by (report seed, what)."""
    return int(np.random.SeedSequence([seed, zlib.crc32(what.encode("utf-8"))]).generate_state(1)[0])


def run_cost_uncertainty(meta: dict[str, Any], boot: int, seed: int) -> RunCostUncertainty:
    """Cost replicates (`boot` of them) of a run's stored costs and of its costs by batch (when stored)."""
    reps = cost_replicates(meta.get("cost"), boot, cost_seed(seed, "cost"))
    record = meta.get(BATCH_COST_KEY)
    batch = batch_costs(record) if isinstance(record, dict) else None
    batch_reps = (batch.replicates(record, boot, cost_seed(seed, "batch_cost"))
                  if batch is not None and isinstance(record, dict) and boot > 0 else None)
    fwd_reps = (batch.draft_fwd_replicates(record, boot, cost_seed(seed, "batch_draft_fwd"))
                if batch is not None and isinstance(record, dict) and boot > 0 else None)
    return RunCostUncertainty(reps=reps, batch=batch, batch_reps=batch_reps, batch_fwd_reps=fwd_reps)
