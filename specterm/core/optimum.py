"""The optimal draft length (SPEC 2): throughput per verify-cost and its argmax over gamma = 1..32.

    T_true(gamma, r) = tokens / (blocks + r * drafted) = E_true(gamma) / (1 + gamma r)
    T_iid(gamma, r)  = E_iid(alpha, gamma) / (1 + gamma r)
    g*_true(r) = argmax_gamma T_true,  g*_iid(r) = argmax_gamma T_iid,  ties -> smallest gamma

on r = 0.05, 0.10, ..., 0.60 plus every distinct measured r of the runs in the set.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

GAMMA_MAX = 32
GAMMAS = np.arange(1, GAMMA_MAX + 1)
R_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(1, 13))
# Relative slack under which two throughputs count as tied (then the smaller gamma wins).
TIE = 1e-12


def throughput(E: np.ndarray, r: float, gammas: np.ndarray = GAMMAS) -> np.ndarray:
    """T(gamma, r) = E(gamma) / (1 + gamma r) for a curve E over `gammas`."""
    return np.asarray(E, dtype=np.float64) / (1.0 + np.asarray(gammas, dtype=np.float64) * r)


def best_gamma(T: np.ndarray, gammas: np.ndarray = GAMMAS) -> int | None:
    """argmax of T over gammas, smallest gamma among ties (within TIE relative); None when T is all NaN."""
    T = np.asarray(T, dtype=np.float64)
    if not np.isfinite(T).any():
        return None
    top = np.nanmax(T)
    return int(np.asarray(gammas)[np.flatnonzero(T >= top - abs(top) * TIE)[0]])


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
        Tt, Ti = throughput(E_true, r), throughput(E_iid, r)
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
        T = throughput(_floats(curve[key]), r, gammas)
        out[name] = [float(t) if np.isfinite(t) else None for t in T]
    return out
