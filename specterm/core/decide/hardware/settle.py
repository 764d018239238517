"""When a cost measurement can stop (SPEC 6 "Cost profiles": measuring stops as soon as the verdict
and g_hw are settled, or at a stated cap). Pure numpy.

More timing rounds shrink only the cost side of the decision's uncertainty; the prompts' side is
fixed by the run. So the rule compares, per set (each corpus and the pooled set), two kinds of
replicates of S(g) = E(g) c_decode / (c_verify(g) + g c_draft [+ c_draft_fwd(g)]):

- cost-only: each cost quantity's samples resampled, medians (curve.cost_replicates), E fixed at the
  set's point estimate;
- prompt-only: the set's prompts resampled (E_b(g) = sum tokens / sum blocks of the drawn streams),
  costs fixed at their point estimates.

The verdict's side is settled when the cost-only 95% interval of S(g_hw) lies clear of 1, or when its
half-width is at most SHARE of the prompt-only half-width: the decision's interval (prompts and costs
together) is then within about 5% of what any amount of timing could give (sqrt(1 + SHARE^2) = 1.054),
and the prompts, not the costs, decide. g_hw is settled when the cost-only interval of
S(g_hw) - S(g_2) (g_2 the runner-up by point estimate) lies above 0, or S(g_2) is within TIE of S(g_hw)
(the choice does not matter), or the upper end of the cost-only interval of S(g_2) / S(g_hw) - 1 is at
most REGRET (wherever the costs truly lie, choosing g_hw loses at most 5% against g_2: on a flat S curve
the g's are interchangeable), or, again, the cost-only half-width of that gap is at most SHARE of its
prompt-only half-width (the prompts, not more timing, would tell the two apart).

Pruning (what lets `specterm costs` time the whole curve once): every draft length is timed once, and
only the ones the decision can use are timed again. A draft length g timed fewer than MIN_SAMPLES times
is *pruned* when, even at a lower bound of its block cost, choosing g_hw loses at most REGRET against it:
the upper end of the cost-only interval of S_up(g) / S(g_hw) - 1 is at most REGRET, where

    S_up(g) = E(g) c_decode / (min(c_verify(g), env(g)) + g c_draft [+ min(c_draft_fwd(g), env_fwd(g))]),
    env(g) = max(c_decode, c_verify(g') for g' < g)

per cost replicate: a target forward of more tokens costs no less, so the envelope is a lower bound that
a single slow sample of g cannot raise, and g's own time (with the noise it borrows from the repeated
quantities, curve.relative_noise) keeps a curve that truly dips from being pruned by the envelope. The
verdict and g_hw count as settled only when decode, the draft step, g_hw and the runner-up were timed
MIN_SAMPLES+ times and every other draft length timed fewer is pruned.

`focus`: the draft lengths whose verify cost the rule still reads: g_hw and g_2, and every g timed fewer
than MIN_SAMPLES times that is not pruned; a focused round times only them with the decode and draft
steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.decide import costmodel
from specterm.core.streams.bootstrap import percentile_ci
from specterm.core.decide.hardware.curve import MIN_SAMPLES, CostReplicates, cost_curve, cost_replicates, sample_counts

SHARE = 1 / 3      # cost-only half-width at most a third of the prompt-only one: timing more cannot matter
TIE = 0.01         # runner-up within 1% of S(g_hw): the draft length choice does not matter
REGRET = 0.05     # the runner-up at most 5% faster at the costs' 95% bound: the choice of g is settled (README Choices)
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

    def open_parts(self) -> str:
        """What is not settled, in words: "verdict", "g" or both."""
        return ", ".join(w for w, ok in (("verdict", self.side), ("g", self.choice)) if not ok)

    def why(self) -> str:
        lo, hi = self.ci
        side = "clear of 1" if lo > 1 or hi < 1 else "narrow beside the prompts' spread (the prompts decide)"
        return f"g_hw = {self.gamma_hw}, S {self.speedup:.2f}x, cost-only [{lo:.2f}, {hi:.2f}] {side}"


def _half(x: np.ndarray) -> float:
    lo, hi = percentile_ci(x)
    return float(hi - lo) / 2


def set_settle(gammas: ArrayLike, E: ArrayLike, cost: dict[str, Any], n_rep: int = SETTLE_REPLICATES,
               seed: int = 0, E_boot: ArrayLike | None = None) -> SetSettle | None:
    """The stopping rule (module docstring) for one set's E curve over `gammas`; E_boot (R x len(gammas)):
    E in prompt resamples of the set (None: the prompts' side unknown, only "clear of 1" and TIE settle).
    None without costs."""
    curve = cost_curve(cost)
    reps = cost_replicates(cost, n_rep, seed)
    if curve is None or reps is None:
        return None
    g_all = np.asarray(gammas).tolist()
    lookup = {int(g): float(e) for g, e in zip(g_all, np.asarray(E, dtype=np.float64).tolist())}
    grid = np.array([g for g in curve.gammas.tolist() if np.isfinite(lookup.get(int(g), np.nan))], dtype=np.int64)
    if grid.size == 0:
        return None
    cols = [int(np.flatnonzero(curve.gammas == g)[0]) for g in grid.tolist()]
    Eg = np.array([lookup[int(g)] for g in grid.tolist()])
    fwd = curve.draft_fwd_on(grid)
    c_ver = np.array([curve.verify_at(int(g)) for g in grid])
    o_g = curve.overhead_on(grid)
    S = costmodel.speedup_hw(Eg, curve.c_decode, c_ver, curve.c_draft, grid, c_draft_fwd=fwd, overhead=o_g)
    fwd_b = None if reps.c_draft_fwd is None else reps.c_draft_fwd[:, cols]
    S_b = costmodel.speedup_hw(Eg[None, :], reps.c_decode[:, None], reps.c_verify[:, cols], reps.c_draft[:, None], grid,
                               c_draft_fwd=fwd_b, overhead=None if reps.overhead is None else reps.overhead[:, cols])
    S_p = None
    if E_boot is not None:
        Eb = np.asarray(E_boot, dtype=np.float64)[:, [g_all.index(int(g)) for g in grid.tolist()]]
        S_p = costmodel.speedup_hw(Eb, curve.c_decode, c_ver[None, :], curve.c_draft, grid, c_draft_fwd=fwd, overhead=o_g)
    counts = sample_counts(cost)
    return judge(grid, S, S_b, S_p, counts, lambda j: prunable(grid, Eg, reps, cols, S_b[:, j]))


def judge(grid: np.ndarray, S: np.ndarray, S_b: np.ndarray, S_p: np.ndarray | None, counts: dict[str, int],
          pruned_by: Callable[[int], np.ndarray], reads: Callable[[int], list[int]] = lambda k: [k]) -> SetSettle:
    """The rule (module docstring) on one set's speedups over `grid`: S (G,), its cost-only replicates S_b (n, G)
    and prompt-only replicates S_p (R, G) or None; `counts` the samples per cost label; pruned_by(j) the pruned
    flags with g_hw at column j; reads(k) the columns whose verify cost S(grid[k]) reads (a draft model's: k;
    a drafter's, whose blocks draft every d <= g: 0..k), each of which must be timed MIN_SAMPLES times."""
    j = int(np.argmax(S))  # ties: the smallest g (np.argmax takes the first)
    lo, hi = (float(x) for x in percentile_ci(S_b[:, j]))
    side = lo > 1.0 or hi < 1.0 or (S_p is not None and _half(S_b[:, j]) <= SHARE * _half(S_p[:, j]))
    order = np.argsort(-S, kind="stable")
    runner = int(order[1]) if S.size > 1 else None
    choice = True
    if runner is not None:
        gap_b = S_b[:, j] - S_b[:, runner]
        regret = float(percentile_ci(S_b[:, runner] / S_b[:, j] - 1.0)[1])
        choice = (float(percentile_ci(gap_b)[0]) > 0 or float(S[runner]) >= (1 - TIE) * float(S[j]) or regret <= REGRET
                  or (S_p is not None and _half(gap_b) <= SHARE * _half(S_p[:, j] - S_p[:, runner])))
    timed = [counts.get(f"verify:{g}", 0) >= MIN_SAMPLES for g in grid.tolist()]
    steps = all(counts.get(k, 0) >= MIN_SAMPLES for k in ("decode", "draft"))
    pruned = pruned_by(j)
    unpruned = [k for k in range(grid.size) if not timed[k] and not pruned[k] and k != j and k != runner]
    read = [i for k in [j] + ([] if runner is None else [runner]) for i in reads(k)]
    ready = steps and all(timed[i] for i in read) and not unpruned
    side, choice = side and ready, choice and ready
    focus = list(dict.fromkeys([int(grid[i]) for i in read] + [int(grid[i]) for k in unpruned for i in reads(k)]))
    return SetSettle(gamma_hw=int(grid[j]), speedup=float(S[j]), ci=(lo, hi),
                     runner_up=None if runner is None else int(grid[runner]), side=side, choice=choice, focus=focus)


def verify_floor(c_decode: np.ndarray, c_verify: np.ndarray) -> np.ndarray:
    """(n, G): a lower bound of each c_verify(g) (g ascending, columns) in each cost replicate (rows):
    min(c_verify(g), env(g)), env(g) = max(c_decode, c_verify(g') for g' < g) (module docstring, pruning)."""
    env = np.maximum.accumulate(np.concatenate([c_decode[:, None], c_verify[:, :-1]], axis=1), axis=1)
    return np.asarray(np.minimum(c_verify, env), dtype=np.float64)


def prunable(grid: np.ndarray, E: np.ndarray, reps: CostReplicates, cols: list[int], S_hw_b: np.ndarray) -> np.ndarray:
    """Per g of `grid`: pruned (module docstring): the 95% upper end of S_up(g) / S(g_hw) - 1 over the cost
    replicates is at most REGRET. S_hw_b: S(g_hw) in the same replicates; cols: each g's column in `reps`."""
    ver = reps.c_verify[:, cols]
    fwd = None if reps.c_draft_fwd is None else reps.c_draft_fwd[:, cols]
    env = reps.c_decode.copy()
    env_fwd = np.zeros_like(env)
    out = np.zeros(grid.size, dtype=bool)
    for k in np.argsort(grid, kind="stable").tolist():
        S_up = costmodel.speedup_hw(E[k], reps.c_decode, np.minimum(ver[:, k], env), reps.c_draft, grid[k],
                                    c_draft_fwd=None if fwd is None else np.minimum(fwd[:, k], env_fwd))
        out[k] = float(percentile_ci(S_up / S_hw_b - 1.0)[1]) <= REGRET
        env = np.maximum(env, ver[:, k])
        if fwd is not None:
            env_fwd = np.maximum(env_fwd, fwd[:, k])
    return out
