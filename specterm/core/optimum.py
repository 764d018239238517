"""The optimal draft length (SPEC 2): throughput per verify-cost and its argmax over gamma = 1..32.

    T_true(gamma, r) = tokens / (blocks + r * drafted) = E_true(gamma) / (1 + gamma r)
    T_iid(gamma, r)  = E_iid(alpha, gamma) / (1 + gamma r)
    g*_true(r) = argmax_gamma T_true,  g*_iid(r) = argmax_gamma T_iid,  ties -> smallest gamma

on r = 0.05, 0.10, ..., 0.60 plus every distinct measured r of the runs in the set.

`best_gamma` is the one tie rule of specterm; the throughput formula is costmodel.throughput /
costmodel.curve_throughput (re-exported here for the policies and the screens).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from specterm.core.costmodel import curve_throughput, throughput
from specterm.core.params import GAMMAS, R_GRID

__all__ = ["best_gamma", "best_index", "curve_throughput", "optimum_table", "r_values", "throughput", "throughput_curve"]

# Relative slack under which two throughputs count as tied (then the smaller gamma wins).
TIE = 1e-12


def best_index(T) -> int | None:
    """Index of the largest finite T, the first among ties (within TIE relative); None when none is finite."""
    T = np.asarray(T, dtype=np.float64)
    finite = np.isfinite(T)
    if not finite.any():
        return None
    top = T[finite].max()
    return int(np.flatnonzero(finite & (T >= top - abs(top) * TIE))[0])


def best_gamma(values, gammas=GAMMAS) -> int | None:
    """argmax of `values` over ascending `gammas`, the smallest gamma among ties (SPEC 2); None when
    no value is finite."""
    i = best_index(values)
    return None if i is None else int(np.asarray(gammas)[i])


def r_values(measured: Iterable[float | None]) -> list[float]:
    """The r grid plus each distinct measured r (sorted)."""
    extra = {float(r) for r in measured if r is not None and np.isfinite(r) and r >= 0}
    return sorted(set(R_GRID) | extra)


def optimum_table(E_true: np.ndarray, E_iid: np.ndarray, rs: Iterable[float],
                  measured: Iterable[float | None] = ()) -> list[dict[str, Any]]:
    """One row per r: g*_true, g*_iid, the best throughputs, and the true throughput at g*_iid
    (what following the i.i.d. formula actually gets). `measured` marks rows that are a run's r."""
    marked = {float(r) for r in measured if r is not None}
    rows = []
    for r in rs:
        Tt, Ti = curve_throughput(E_true, r), curve_throughput(E_iid, r)
        gt, gi = best_gamma(Tt), best_gamma(Ti)
        rows.append({
            "r": float(r),
            "gamma_true": gt,
            "gamma_iid": gi,
            "T_true": None if gt is None else float(Tt[gt - 1]),
            "T_iid": None if gi is None else float(Ti[gi - 1]),
            "T_true_at_gamma_iid": None if gi is None or gt is None else float(Tt[gi - 1]),
            "measured": float(r) in marked,
        })
    return rows


def _floats(values: Iterable[Any]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def throughput_curve(set_report: dict, r: float) -> dict[str, list]:
    """T_true and T_iid against gamma at cost ratio r, from a set of the report alone (its "curve").

    Returns {"gamma": [1..32], "T_true": [...], "T_iid": [...]} (None where undefined).
    """
    curve = set_report["curve"]
    gammas = np.asarray(curve["gamma"], dtype=np.float64)
    out = {"gamma": [int(g) for g in curve["gamma"]]}
    for key, name in (("E_true", "T_true"), ("E_iid", "T_iid")):
        T = curve_throughput(_floats(curve[key]), r, gammas)
        out[name] = [float(t) if np.isfinite(t) else None for t in T]
    return out
