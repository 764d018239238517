"""The decision on this hardware (SPEC 6 "Decision on this hardware"): `decision_hw`, the one function
behind the report's `decision_hw` key and `specterm confirm`'s choice of g. Pure numpy.

    S_hw(g) = E(g) c_decode / (c_verify(g) + g c_draft)     g_hw = argmax S_hw (ties: smallest g)
    S_mb(g) = E(g) / (1 + g c_draft / c_decode)             the memory-bound reference (a column)

(formulas in core/costmodel.py). The refeed model adds phi(g) (c_draft2 - c_draft)+ per block and is
shown beside S_hw, never instead of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core import costmodel
from specterm.core.estimate import num
from specterm.core.hardware.curve import CostCurve
from specterm.core.optimum import best_gamma
from specterm.core.report import ConfirmedRow, DecisionHW

MEMORY_BOUND_LABEL = "memory-bound model: verify = one decode step"
NO_COSTS_NOTE = "no measured costs on this hardware (imported bits or a run measured before c_decode was timed), as before"
MIXED_COSTS_NOTE = "the pooled runs measured different cost curves: no single hardware decision"

Array = NDArray[np.float64]


def _on_grid(gammas: ArrayLike, E: ArrayLike, grid: ArrayLike) -> Array:
    """E at each g of grid (NaN where the E curve has no value)."""
    lookup = {int(g): float(e) for g, e in zip(np.asarray(gammas).tolist(), np.asarray(E, dtype=np.float64).tolist())}
    return np.array([lookup.get(int(g), np.nan) for g in np.asarray(grid).tolist()], dtype=np.float64)


def _best(S: Array, gammas: NDArray[np.int64]) -> tuple[int | None, float | None]:
    g = best_gamma(S, gammas)
    if g is None:
        return None, None
    return g, float(S[np.flatnonzero(gammas == g)[0]])


def decision_hw(gammas: ArrayLike, E_true: ArrayLike, E_iid: ArrayLike | None, curve: CostCurve | None,
                r_fallback: float | None = None, phi_true: ArrayLike | None = None,
                confirmed: Sequence[ConfirmedRow] = (), note: str | None = None) -> DecisionHW:
    """SPEC 7 `decision_hw` of one set (report.DecisionHW) from its E curves (over `gammas`) and the
    run's robust cost curve; undefined numbers are None.

    With a curve: g_hw = argmax S_hw over the draft lengths both the E curve and the cost curve
    have, S_hw exactly as SPEC 6 writes it (no refeed term); the memory-bound reference uses
    r_mb = c_draft / c_decode over all of `gammas`; *_iid the same with E_iid(alpha, g), and
    speedup_true_at_gamma_iid_hw = S_hw(g_iid_hw) with E_true (what the i.i.d. choice really gives).
    The refeed model (phi_true given) is reported beside it and named in the verdict when it falls
    on the other side of 1.0. Without a curve: measured False, the memory-bound model at r_fallback,
    and the verdict starts with `note` (default NO_COSTS_NOTE). confirmed: the set's confirmed rows.
    """
    gammas = np.asarray(gammas, dtype=np.int64)
    order = np.argsort(gammas, kind="stable")
    gammas = gammas[order]
    E_t_all = np.asarray(E_true, dtype=np.float64)[order]
    E_i_all = None if E_iid is None else np.asarray(E_iid, dtype=np.float64)[order]
    phi_all = None if phi_true is None else np.asarray(phi_true, dtype=np.float64)[order]
    r_mb = curve.r_mb if curve is not None else r_fallback
    g_mb = s_mb = g_imb = s_imb = None
    if r_mb is not None and np.isfinite(r_mb) and r_mb >= 0:
        g_mb, s_mb = _best(costmodel.speedup_mb(E_t_all, r_mb, gammas), gammas)
        if E_i_all is not None:
            g_imb, s_imb = _best(costmodel.speedup_mb(E_i_all, r_mb, gammas), gammas)
    else:
        r_mb = None
    mb_text = (f"{MEMORY_BOUND_LABEL}: g = {g_mb}, {s_mb:.2f}x" if g_mb is not None
               else f"{MEMORY_BOUND_LABEL}: no cost ratio")
    out = DecisionHW(measured=curve is not None, gamma_mb=g_mb, speedup_mb=num(s_mb), confirmed=list(confirmed),
                     r_mb=num(r_mb), gamma_iid_mb=g_imb, speedup_iid_mb=num(s_imb))
    if curve is None:
        out.speculate = bool(s_mb is not None and s_mb > 1.0)
        out.verdict = f"{note or NO_COSTS_NOTE}: {mb_text}"
        return out
    grid = np.array([g for g in curve.gammas.tolist() if g in set(gammas.tolist())], dtype=np.int64)
    c_ver = np.array([curve.verify_at(int(g)) for g in grid], dtype=np.float64)
    E_t = _on_grid(gammas, E_t_all, grid)
    S_true = costmodel.speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid)
    g_hw, s_hw = _best(S_true, grid)
    g_rf = s_rf = s_rf_at = None
    S_refeed = np.full(grid.shape, np.nan)
    if phi_all is not None:
        S_refeed = costmodel.speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid,
                                        _on_grid(gammas, phi_all, grid), curve.refeed_extra)
        g_rf, s_rf = _best(S_refeed, grid)
        s_rf_at = None if g_hw is None else float(S_refeed[np.flatnonzero(grid == g_hw)[0]])
    g_ihw = s_ihw = s_true_at = None
    S_iid = np.full(grid.shape, np.nan)
    if E_i_all is not None:
        S_iid = costmodel.speedup_hw(_on_grid(gammas, E_i_all, grid), curve.c_decode, c_ver, curve.c_draft, grid)
        g_ihw, s_ihw = _best(S_iid, grid)
        s_true_at = None if g_ihw is None else float(S_true[np.flatnonzero(grid == g_ihw)[0]])
    speculate = bool(s_hw is not None and s_hw > 1.0)
    if g_hw is None:
        verdict = f"no positions in this set: nothing to decide; {mb_text}"
    elif speculate:
        verdict = f"speculate with g = {g_hw} on this hardware: {s_hw:.2f}x expected; {mb_text}"
    else:
        verdict = f"do not speculate on this hardware: the best draft length, g = {g_hw}, gives {s_hw:.2f}x; {mb_text}"
    if g_hw is not None and s_rf is not None and (s_rf > 1.0) != speculate:
        verdict += (f" (with the 2-token draft step: speculate, g = {g_rf}, {s_rf:.2f}x)" if s_rf > 1.0
                    else f" (with the 2-token draft step: do not, {s_rf:.2f}x at best)")
    if g_ihw is not None and g_hw is not None:
        verdict += (f"; the i.i.d. formula would pick g = {g_ihw} here and promise {s_ihw:.2f}x ({s_true_at:.2f}x in fact)"
                    if g_ihw != g_hw else f"; the i.i.d. formula picks the same g and promises {s_ihw:.2f}x")
    out.gamma_hw, out.speedup_hw, out.verdict, out.speculate = g_hw, num(s_hw), verdict, speculate
    out.gamma_iid_hw, out.speedup_iid_hw, out.speedup_true_at_gamma_iid_hw = g_ihw, num(s_ihw), num(s_true_at)
    out.gamma_hw_refeed, out.speedup_hw_refeed, out.speedup_refeed_at_gamma_hw = g_rf, num(s_rf), num(s_rf_at)
    out.clock = curve.clock
    out.curve_hw = {"gamma": grid.tolist(), "S_true": [num(x) for x in S_true], "S_iid": [num(x) for x in S_iid],
                    "S_true_refeed": [num(x) for x in S_refeed]}
    return out


def q3_costs(curve: CostCurve | None) -> dict[str, Any] | None:
    """The measured costs in economics.speedup_factor's shape (the robust curve), or None."""
    if curve is None:
        return None
    return {"c_decode": curve.c_decode, "c_draft": curve.c_draft,
            "c_verify": {int(g): float(c) for g, c in zip(curve.gammas, curve.c_verify)}}
