"""Speedup on the hardware the costs were measured on (SPEC 6). Pure numpy, three jobs, one module each:

    curve.py          the robust cost curve from a run's stored cost samples (CostCurve, cost_curve)
    decision.py       the decision on this hardware (decision_hw: S_hw, g_hw, verdict, memory-bound reference)
    confirmations.py  `specterm confirm` records: parsing and the per (corpus, g) rows of the report

The formulas themselves (S_hw, the block cost, the memory-bound reference, refeed, break-even)
live in core/costmodel.py, once.
"""

from specterm.core.hardware.confirmations import (
                                                  CONFIRMATIONS_KEY,
                                                  Confirmation,
                                                  ConfirmedResult,
                                                  confirmations,
                                                  confirmed_for_set,
                                                  confirmed_rows,
                                                  latest_confirmation,
                                                  parse_confirmation,
                                                  run_curve_and_confirmations,
                                                  summarize_results,
)
from specterm.core.hardware.curve import (
                                                  CostCurve,
                                                  cost_curve,
                                                  curve_summary,
                                                  fit_line,
                                                  isotonic_increasing,
                                                  median_se,
                                                  pool_violators_within_noise,
                                                  robust_forward_costs,
)
from specterm.core.hardware.decision import (
                                                  MEMORY_BOUND_LABEL,
                                                  MIXED_COSTS_NOTE,
                                                  NO_COSTS_NOTE,
                                                  decision_hw,
                                                  q3_costs,
)

__all__ = [
                                                  "CONFIRMATIONS_KEY",
                                                  "MEMORY_BOUND_LABEL",
                                                  "MIXED_COSTS_NOTE",
                                                  "NO_COSTS_NOTE",
                                                  "Confirmation",
                                                  "ConfirmedResult",
                                                  "CostCurve",
                                                  "confirmations",
                                                  "confirmed_for_set",
                                                  "confirmed_rows",
                                                  "cost_curve",
                                                  "curve_summary",
                                                  "decision_hw",
                                                  "fit_line",
                                                  "isotonic_increasing",
                                                  "latest_confirmation",
                                                  "median_se",
                                                  "parse_confirmation",
                                                  "pool_violators_within_noise",
                                                  "q3_costs",
                                                  "robust_forward_costs",
                                                  "run_curve_and_confirmations",
                                                  "summarize_results",
]
