"""Speedup on the hardware the costs were measured on (SPEC 6). Pure numpy, three jobs, one module each:

    curve.py          the robust cost curve from a run's stored cost samples (CostCurve, cost_curve)
    batch.py          costs by batch size: the sparse grid and its fitted surface (BatchCosts, batch_costs)
    decision.py       the decision on this hardware (decision_hw: S_hw, g_hw, verdict, memory-bound reference)
    confirmations.py  `specterm confirm` records: parsing and the per (corpus, g) rows of the report
    overhead.py       the whole block's cost: o(g) = a + b g outside the forwards (BlockOverhead)
    drift.py          the drift of costs between sessions on one machine, carried by prediction intervals

The formulas themselves (S_hw, the block cost, the memory-bound reference, refeed, break-even)
live in core/decide/costmodel.py, once.
"""

from specterm.core.decide.hardware.batch import BatchCosts, batch_costs
from specterm.core.decide.hardware.confirmations import (
                                                  BATCH_COST_KEY,
                                                  CONFIRMATIONS_KEY,
                                                  Confirmation,
                                                  ConfirmedResult,
                                                  batched_rows,
                                                  confirmations,
                                                  confirmed_for_set,
                                                  confirmed_rows,
                                                  confirming,
                                                  decision_check,
                                                  latest_confirmation,
                                                  parse_confirmation,
                                                  run_curve_and_confirmations,
                                                  summarize_results,
                                                  timing_rows,
)
from specterm.core.decide.hardware.curve import (
                                                  CostCurve,
                                                  cost_curve,
                                                  curve_summary,
                                                  fit_line,
                                                  isotonic_increasing,
                                                  median_se,
                                                  pool_violators_within_noise,
                                                  robust_forward_costs,
)
from specterm.core.decide.hardware.decision import (
                                                  MEMORY_BOUND_LABEL,
                                                  MIXED_COSTS_NOTE,
                                                  NO_COSTS_NOTE,
                                                  decision_hw,
                                                  q3_costs,
)
from specterm.core.decide.hardware.uncertainty import RunCostUncertainty, run_cost_uncertainty

__all__ = [
                                                  "BATCH_COST_KEY",
                                                  "CONFIRMATIONS_KEY",
                                                  "MEMORY_BOUND_LABEL",
                                                  "MIXED_COSTS_NOTE",
                                                  "NO_COSTS_NOTE",
                                                  "BatchCosts",
                                                  "Confirmation",
                                                  "ConfirmedResult",
                                                  "CostCurve",
                                                  "RunCostUncertainty",
                                                  "batch_costs",
                                                  "batched_rows",
                                                  "confirmations",
                                                  "confirmed_for_set",
                                                  "confirmed_rows",
                                                  "confirming",
                                                  "cost_curve",
                                                  "curve_summary",
                                                  "decision_check",
                                                  "decision_hw",
                                                  "fit_line",
                                                  "isotonic_increasing",
                                                  "latest_confirmation",
                                                  "median_se",
                                                  "parse_confirmation",
                                                  "pool_violators_within_noise",
                                                  "q3_costs",
                                                  "robust_forward_costs",
                                                  "run_cost_uncertainty",
                                                  "run_curve_and_confirmations",
                                                  "summarize_results",
                                                  "timing_rows",
]
