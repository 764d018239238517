"""The cost-ratio model's optimum (SPEC 6 "Cost-ratio model", the measurement seed's convention).

Throughput in tokens per verify-cost at cost ratio r = c_draft / c_verify, draft length g:

    T(g, r) = E(g) / (1 + g r)                E = tokens per block (E_true measured, or E_iid)

(`costmodel.curve_throughput`). It answers how the optimum moves with r (the Optimum side); it is
not a decision and is never called memory-bound: the decision on this hardware is
core/decide/hardware/decision.py. Beside it, the roofline reference of a named accelerator preset,

    B* = I* / (g + 1)                          I* = accelerator ridge point, FLOP per byte

the batch where a (g+1)-token verify's arithmetic intensity (about (g + 1) B FLOP per weight byte
at batch B) reaches the ridge: a reference, never measured here (SPEC 6 "Batch").
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.decide.costmodel import curve_throughput
from specterm.core.errors import SpectermError
from specterm.core.decide.optimum import best_index
from specterm.core.params import ACCELERATORS, DEFAULT_RIDGE
from specterm.core.report.types import CostRatioOptimum, SetReport


def ridge_of(accelerator: str | float) -> float:
    """The ridge I* (FLOP/byte) of a preset name (case-insensitive) or of a custom number."""
    if isinstance(accelerator, (int, float)):
        value = float(accelerator)
    else:
        key = str(accelerator).strip().lower().replace(" ", "").replace("-", "")
        if key in ACCELERATORS:
            return ACCELERATORS[key].ridge
        try:
            value = float(key)
        except ValueError:
            names = ", ".join(ACCELERATORS)
            raise SpectermError(f"unknown accelerator '{accelerator}'; use one of {names} or a ridge in FLOP/byte like {DEFAULT_RIDGE:g}.") from None
    if not np.isfinite(value) or value <= 0:
        raise SpectermError(f"the ridge must be a positive number of FLOP per byte (got {accelerator}); e.g. {DEFAULT_RIDGE:g} for an H100.")
    return value


def roofline_batch(ridge: float, gamma: ArrayLike) -> np.ndarray:
    """B* = ridge / (gamma + 1): the roofline reference batch of a preset (not measured on this device)."""
    return np.asarray(ridge, dtype=np.float64) / (np.asarray(gamma, dtype=np.float64) + 1.0)


def speedup(E: ArrayLike, gamma: ArrayLike, r: float) -> np.ndarray:
    """T = E / (1 + gamma r): tokens per verify-cost relative to plain decoding's one token per step
    (`costmodel.curve_throughput`, the one throughput formula)."""
    return curve_throughput(E, r, gamma)


def cost_ratio_optimum(set_report: SetReport, r: float, ridge: float = DEFAULT_RIDGE) -> CostRatioOptimum:
    """The cost-ratio model's optimum at r for a set's report (its alpha and E curves).

    g_true = argmax_g E_true(g) / (1 + g r) and its T; g_iid = argmax_g E_iid(g) / (1 + g r), the T
    the i.i.d. formula promises there and the true T_true(g_iid) actually obtained; the roofline
    reference B* = ridge / (g_true + 1). Ties: smallest g. `summary` says it in words, never as a
    verdict. Returns a report.CostRatioOptimum.
    """
    if r is None or not np.isfinite(r) or r < 0:
        raise SpectermError("no usable cost ratio r for this run; measure it with `specterm run --cost` or choose one on the Decide screen (keys - and +).")
    if not np.isfinite(ridge) or ridge <= 0:
        raise SpectermError(f"the ridge must be a positive number of FLOP per byte (got {ridge}); e.g. {DEFAULT_RIDGE:g} for an H100.")
    curve = set_report.curve
    nan = np.nan
    gamma = np.asarray(curve.gamma, dtype=np.int64)
    E_true = np.array([nan if x is None else x for x in curve.E_true], dtype=np.float64)
    E_iid = np.array([nan if x is None else x for x in curve.E_iid], dtype=np.float64)
    alpha = set_report.alpha
    order = np.argsort(gamma, kind="stable")
    gamma, E_true, E_iid = gamma[order], E_true[order], E_iid[order]

    S_true = speedup(E_true, gamma, r)
    if gamma.size == 0 or not np.any(np.isfinite(S_true)):
        return CostRatioOptimum(r=float(r), ridge=float(ridge), alpha=alpha, summary="no positions in this set")
    i_true = best_index(S_true)
    assert i_true is not None
    S_iid = speedup(E_iid, gamma, r)
    i_iid = best_index(S_iid)
    g_true, s_true = int(gamma[i_true]), float(S_true[i_true])
    d = CostRatioOptimum(
        r=float(r),
        ridge=float(ridge),
        alpha=alpha,
        gamma_true=g_true,
        T_true=s_true,
        gamma_iid=None if i_iid is None else int(gamma[i_iid]),
        T_iid=None if i_iid is None else float(S_iid[i_iid]),
        T_true_at_gamma_iid=None if i_iid is None else float(S_true[i_iid]),
        roofline_B_star=float(roofline_batch(ridge, g_true)),
    )
    d.summary = _summary(d)
    return d


def _summary(d: CostRatioOptimum) -> str:
    """Plain words, e.g. "at r = 0.100: g*_true = 3, T = 1.93 tokens per verify-cost; the i.i.d. formula would
    pick g = 5 and promise 2.21 (1.88 in fact); roofline reference B* ~ 74 (ridge 295)"."""
    if d.gamma_iid is None:
        iid = "no i.i.d. prediction (alpha unknown)"
    elif d.gamma_iid == d.gamma_true:
        iid = f"the i.i.d. formula picks the same g and promises {d.T_iid:.2f}"
    else:
        iid = (f"the i.i.d. formula would pick g = {d.gamma_iid} and promise {d.T_iid:.2f} "
               f"({d.T_true_at_gamma_iid:.2f} in fact)")
    return (f"at r = {d.r:.3f}: g*_true = {d.gamma_true}, T = {d.T_true:.2f} tokens per verify-cost; {iid}; "
            f"roofline reference B* ~ {d.roofline_B_star:.0f} (ridge {d.ridge:g})")
