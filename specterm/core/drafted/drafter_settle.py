"""When `specterm costs` can stop timing a drafter run (SPEC 2b, SPEC 6 "Cost profiles"): the stopping rule
of core/decide/hardware/settle.py (`judge`) on the drafter decision's speedups. Pure numpy.

A drafter's block at draft length g drafts d = min(g, m_s) <= g tokens, so its S_hw(g) reads c_verify(d) of
every d <= g (costmodel.drafter_speedup_hw over the walk's blocks by d):

    S(g)     = tokens(g) c_decode / (sum_d n_d(g) [c_verify(d) + o(d)] + blocks(g) c_draft)
    S_b(g)   = the same in each cost replicate (curve.cost_replicates), the walk fixed (cost-only)
    S_p(g)   = the same in each prompt resample of the set, the costs fixed (prompt-only)
    S_up(g)  = S_b(g) with every c_verify(d) at its lower bound (settle.verify_floor): pruning

and g_hw, its runner-up and every unpruned g need c_verify(d) of every d <= g timed MIN_SAMPLES times.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from specterm.core.decide import costmodel
from specterm.core.decide.hardware.curve import cost_curve, cost_replicates, sample_counts
from specterm.core.decide.hardware.settle import REGRET, SETTLE_REPLICATES, SetSettle, judge, verify_floor
from specterm.core.drafted.walk import DrafterWalk
from specterm.core.streams.bootstrap import percentile_ci


def verify_grid(cost_gammas: np.ndarray, walk_gammas: np.ndarray) -> np.ndarray:
    """The draft lengths a drafter decision can use: those timed contiguously from 1 (its blocks at g draft every
    d <= g) that the walk has."""
    timed = [int(g) for g in cost_gammas.tolist() if g in set(walk_gammas.tolist())]
    return np.asarray([g for i, g in enumerate(timed, start=1) if g == i], dtype=np.int64)


def drafter_settle(walk: DrafterWalk, W: np.ndarray | None, cost: dict[str, Any], n_rep: int = SETTLE_REPLICATES,
                   seed: int = 0) -> SetSettle | None:
    """The stopping rule (module docstring) for one set's walk; W its prompt resamples' weights (R x streams) or
    None. None without costs or a timed c_verify(1)."""
    curve = cost_curve(cost)
    reps = cost_replicates(cost, n_rep, seed)
    if curve is None or reps is None:
        return None
    grid = verify_grid(curve.gammas, walk.gammas)
    if grid.size == 0:
        return None
    D = int(grid.max())
    cols = np.searchsorted(walk.gammas, grid)
    d_all = np.arange(D + 1)
    tok = walk.tokens[:, cols].sum(axis=0).astype(np.float64)
    blk = walk.blocks[:, cols].sum(axis=0).astype(np.float64)
    H = walk.by_drafted[:, cols, : D + 1].sum(axis=0).astype(np.float64)
    c_ver = np.concatenate([[curve.c_decode], curve.c_verify[np.searchsorted(curve.gammas, grid)]])
    o_d = curve.overhead_on(d_all)
    S = costmodel.drafter_speedup_hw(tok, H, blk, curve.c_decode, c_ver, curve.c_draft, o_d)
    rc = np.searchsorted(reps.gammas, grid)
    o_b = reps.overhead_on(d_all)
    o_bg = None if o_b is None else o_b[:, None, :]

    def reps_S(c_verify: np.ndarray) -> np.ndarray:
        cv = np.concatenate([reps.c_decode[:, None], c_verify], axis=1)[:, None, :]
        return costmodel.drafter_speedup_hw(tok[None, :], H[None], blk[None, :], reps.c_decode[:, None], cv,
                                            reps.c_draft[:, None], o_bg)

    S_b = reps_S(reps.c_verify[:, rc])
    S_p = None
    if W is not None and W.shape[0]:
        Wf = W.astype(np.float64)
        S_p = costmodel.drafter_speedup_hw(Wf @ walk.tokens[:, cols], np.einsum("rn,ngd->rgd", Wf, walk.by_drafted[:, cols, : D + 1]),
                                           Wf @ walk.blocks[:, cols], curve.c_decode, c_ver, curve.c_draft, o_d)
    floor = reps_S(verify_floor(reps.c_decode, reps.c_verify[:, rc]))

    def pruned_by(j: int) -> np.ndarray:
        return np.array([float(percentile_ci(floor[:, k] / S_b[:, j] - 1.0)[1]) <= REGRET for k in range(grid.size)])

    def reads(k: int) -> list[int]:
        return list(range(k + 1))

    return judge(grid, S, S_b, S_p, sample_counts(cost), pruned_by, reads)


def drafter_settlers(walks: dict[str, tuple[DrafterWalk, np.ndarray | None]]
                     ) -> dict[str, Callable[[dict[str, Any]], SetSettle | None]]:
    """Per set (name -> its walk and prompt weights): the rule under a cost dict."""
    return {name: functools.partial(drafter_settle, walk, W) for name, (walk, W) in walks.items()}
