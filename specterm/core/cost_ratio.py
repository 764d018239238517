"""The cost-ratio model's optimum (SPEC 6 "Cost-ratio model", the measurement seed's convention).

Throughput in tokens per verify-cost at cost ratio r = c_draft / c_verify, draft length g:

    T(g, r) = E(g) / (1 + g r)                E = tokens per block (E_true measured, or E_iid)

(`costmodel.curve_throughput`). It answers how the optimum moves with r (the Optimum side); it is
not a decision and is never called memory-bound: the decision on this hardware is
core/hardware/decision.py. Beside it, the roofline reference of a named accelerator preset,

    B* = I* / (g + 1)                          I* = accelerator ridge point, FLOP per byte

the batch where a (g+1)-token verify's arithmetic intensity (about (g + 1) B FLOP per weight byte
at batch B) reaches the ridge: a reference, never measured here (SPEC 6 "Batch").
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core.blockwalk import E_iid as E_iid_formula
from specterm.core.costmodel import curve_throughput
from specterm.core.errors import SpectermError
from specterm.core.optimum import best_index
from specterm.core.params import ACCELERATORS, DEFAULT_RIDGE
from specterm.core.report import CostRatioOptimum


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


def roofline_batch(ridge: float, gamma: ArrayLike) -> NDArray[np.float64]:
    """B* = ridge / (gamma + 1): the roofline reference batch of a preset (not measured on this device)."""
    return np.asarray(ridge, dtype=np.float64) / (np.asarray(gamma, dtype=np.float64) + 1.0)


def speedup(E: ArrayLike, gamma: ArrayLike, r: float) -> NDArray[np.float64]:
    """T = E / (1 + gamma r): tokens per verify-cost relative to plain decoding's one token per step
    (`costmodel.curve_throughput`, the one throughput formula)."""
    return curve_throughput(E, r, gamma)


def cost_ratio_optimum(set_report: Any, r: float, ridge: float = DEFAULT_RIDGE) -> CostRatioOptimum:
    """The cost-ratio model's optimum at r for a set's report ("alpha", "curve": {"gamma", "E_true", "E_iid"}).

    g_true = argmax_g E_true(g) / (1 + g r) and its T; g_iid = argmax_g E_iid(g) / (1 + g r), the T
    the i.i.d. formula promises there and the true T_true(g_iid) actually obtained; the roofline
    reference B* = ridge / (g_true + 1). Ties: smallest g. E_iid is computed from alpha when the curve
    lacks it. `summary` says it in words, never as a verdict.

    `set_report`: a SetReport (or its JSON dict). Returns a report.CostRatioOptimum.
    """
    if r is None or not np.isfinite(r) or r < 0:
        raise SpectermError("no usable cost ratio r for this run; measure it with `specterm run --cost` or choose one on the Decide screen (keys - and +).")
    if not np.isfinite(ridge) or ridge <= 0:
        raise SpectermError(f"the ridge must be a positive number of FLOP per byte (got {ridge}); e.g. {DEFAULT_RIDGE:g} for an H100.")
    curve = set_report.get("curve") or {}
    gamma = np.asarray(curve.get("gamma", []), dtype=np.int64)
    E_true = np.asarray(curve.get("E_true", []), dtype=np.float64)
    alpha = set_report.get("alpha")
    if curve.get("E_iid") is not None:
        E_iid = np.asarray(curve["E_iid"], dtype=np.float64)
    elif alpha is not None:
        E_iid = E_iid_formula(alpha, gamma)
    else:
        E_iid = np.full(gamma.shape, np.nan)
    order = np.argsort(gamma, kind="stable")
    gamma, E_true, E_iid = gamma[order], E_true[order], E_iid[order]

    out: dict[str, Any] = {"r": float(r), "ridge": float(ridge), "alpha": None if alpha is None else float(alpha)}
    S_true = speedup(E_true, gamma, r)
    if gamma.size == 0 or not np.any(np.isfinite(S_true)):
        out.update(gamma_true=None, T_true=None, gamma_iid=None, T_iid=None,
                   T_true_at_gamma_iid=None, roofline_B_star=None, summary="no positions in this set")
        result: CostRatioOptimum = CostRatioOptimum.from_dict(out)
        return result
    i_true = best_index(S_true)
    S_iid = speedup(E_iid, gamma, r)
    i_iid = best_index(S_iid)
    g_true, s_true = int(gamma[i_true]), float(S_true[i_true])
    b_star = float(roofline_batch(ridge, g_true))
    out.update(
        gamma_true=g_true,
        T_true=s_true,
        gamma_iid=None if i_iid is None else int(gamma[i_iid]),
        T_iid=None if i_iid is None else float(S_iid[i_iid]),
        T_true_at_gamma_iid=None if i_iid is None else float(S_true[i_iid]),
        roofline_B_star=b_star,
    )
    out["summary"] = _summary(out)
    optimum: CostRatioOptimum = CostRatioOptimum.from_dict(out)
    return optimum


def _summary(d: dict[str, Any]) -> str:
    """Plain words, e.g. "at r = 0.10: g*_true = 3, T = 1.93 tokens per verify-cost; the i.i.d. formula would
    pick g = 5 and promise 2.21 (1.88 in fact); roofline reference B* ~ 74 (ridge 295)"."""
    if d["gamma_iid"] is None:
        iid = "no i.i.d. prediction (alpha unknown)"
    elif d["gamma_iid"] == d["gamma_true"]:
        iid = f"the i.i.d. formula picks the same g and promises {d['T_iid']:.2f}"
    else:
        iid = (f"the i.i.d. formula would pick g = {d['gamma_iid']} and promise {d['T_iid']:.2f} "
               f"({d['T_true_at_gamma_iid']:.2f} in fact)")
    return (f"at r = {d['r']:.3f}: g*_true = {d['gamma_true']}, T = {d['T_true']:.2f} tokens per verify-cost; {iid}; "
            f"roofline reference B* ~ {d['roofline_B_star']:.0f} (ridge {d['ridge']:g})")
