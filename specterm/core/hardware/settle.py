"""When a cost measurement can stop (SPEC 6 "Cost profiles": measuring stops as soon as the verdict
and g_hw are settled, or at a stated cap). Pure numpy.

More timing rounds shrink only the cost side of the decision's uncertainty; the prompts' side is
fixed by the run. So the rule asks, per set (each corpus and the pooled set), of the *cost-only*
replicates S_b(g) = E(g) c_decode_b / (c_verify_b(g) + g c_draft_b [+ c_draft_fwd_b(g)]), E fixed at
the set's point estimate (curve.cost_replicates: each quantity's samples resampled, medians):

- the verdict's side is settled when the 95% interval of S_b(g_hw) lies clear of 1, or is narrower
  than +-PRECISION of S(g_hw) (then the costs are known well enough that only the prompts decide);
- g_hw is settled when the 95% interval of S_b(g_hw) - S_b(g_2) (g_2 the runner-up by point
  estimate) lies above 0, or S(g_2) is within TIE of S(g_hw) (either draft length gives the same
  speedup to TIE: the choice does not matter).

`focus` lists the draft lengths still worth timing: those whose upper bound reaches the lower bound
of S_b(g_hw) (the others cannot become g_hw).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from specterm.core import costmodel
from specterm.core.bootstrap import percentile_ci
from specterm.core.hardware.curve import cost_curve, cost_replicates

PRECISION = 0.02   # half-width of the cost-only interval of S(g_hw), relative: costs known "well enough"
TIE = 0.01         # runner-up within 1% of S(g_hw): the draft length choice does not matter
SETTLE_REPLICATES = 400


@dataclass
class SetSettle:
    """The rule's reading of one set."""

    gamma_hw: int
    speedup: float
    ci: tuple[float, float]                 # cost-only 95% interval of S(g_hw)
    runner_up: int | None
    side: bool                              # verdict side settled
    choice: bool                            # g_hw settled
    focus: list[int] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        return self.side and self.choice

    def why(self) -> str:
        lo, hi = self.ci
        side = ("clear of 1" if lo > 1 or hi < 1 else f"within +-{PRECISION:.0%} (the prompts decide)")
        return f"g_hw = {self.gamma_hw}, S {self.speedup:.2f}x, cost-only [{lo:.2f}, {hi:.2f}] {side}"


def set_settle(gammas: ArrayLike, E: ArrayLike, cost: dict[str, Any], n_rep: int = SETTLE_REPLICATES,
               seed: int = 0) -> SetSettle | None:
    """The stopping rule (module docstring) for one set's E curve over `gammas`; None without costs."""
    curve = cost_curve(cost)
    reps = cost_replicates(cost, n_rep, seed)
    if curve is None or reps is None:
        return None
    lookup = {int(g): float(e) for g, e in zip(np.asarray(gammas).tolist(), np.asarray(E, dtype=np.float64).tolist())}
    grid = np.array([g for g in curve.gammas.tolist() if np.isfinite(lookup.get(int(g), np.nan))], dtype=np.int64)
    if grid.size == 0:
        return None
    cols = [int(np.flatnonzero(curve.gammas == g)[0]) for g in grid.tolist()]
    Eg = np.array([lookup[int(g)] for g in grid.tolist()])
    fwd = curve.draft_fwd_on(grid)
    S = costmodel.speedup_hw(Eg, curve.c_decode, np.array([curve.verify_at(int(g)) for g in grid]), curve.c_draft, grid,
                             c_draft_fwd=fwd)
    fwd_b = None if reps.c_draft_fwd is None else reps.c_draft_fwd[:, cols]
    S_b = costmodel.speedup_hw(Eg[None, :], reps.c_decode[:, None], reps.c_verify[:, cols], reps.c_draft[:, None], grid,
                               c_draft_fwd=fwd_b)
    j = int(np.argmax(S))  # ties: the smallest g (np.argmax takes the first)
    lo, hi = (float(x) for x in percentile_ci(S_b[:, j]))
    side = lo > 1.0 or hi < 1.0 or (hi - lo) / 2 <= PRECISION * float(S[j])
    order = np.argsort(-S, kind="stable")
    runner = int(order[1]) if S.size > 1 else None
    choice = True
    if runner is not None:
        gap_lo = float(percentile_ci(S_b[:, j] - S_b[:, runner])[0])
        choice = gap_lo > 0 or float(S[runner]) >= (1 - TIE) * float(S[j])
    upper = np.percentile(S_b, 97.5, axis=0)
    focus = [int(g) for g, u in zip(grid.tolist(), upper.tolist()) if u >= lo]
    return SetSettle(gamma_hw=int(grid[j]), speedup=float(S[j]), ci=(lo, hi),
                     runner_up=None if runner is None else int(grid[runner]), side=side, choice=choice, focus=focus)
