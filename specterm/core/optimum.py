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
from numpy.typing import ArrayLike

from specterm.core.estimate import num
from specterm.core.costmodel import curve_throughput, throughput
from specterm.core.params import GAMMAS, R_GRID
from specterm.core.report import Curve, OptimumRow

__all__ = ["best_gamma", "best_index", "curve_throughput", "optimum_table", "r_values", "throughput", "throughput_curve"]

# Relative slack under which two throughputs count as tied (then the smaller gamma wins).
TIE = 1e-12


def best_index(T: ArrayLike) -> int | None:
    """Index of the largest finite T, the first among ties (within TIE relative); None when none is finite."""
    T = np.asarray(T, dtype=np.float64)
    finite = np.isfinite(T)
    if not finite.any():
        return None
    top = T[finite].max()
    return int(np.flatnonzero(finite & (T >= top - abs(top) * TIE))[0])


def best_gamma(values: ArrayLike, gammas: ArrayLike = GAMMAS) -> int | None:
    """argmax of `values` over ascending `gammas`, the smallest gamma among ties (SPEC 2); None when
    no value is finite."""
    i = best_index(values)
    return None if i is None else int(np.asarray(gammas)[i])


def r_values(measured: Iterable[float | None]) -> list[float]:
    """The r grid plus each distinct measured r (sorted)."""
    extra = {float(r) for r in measured if r is not None and np.isfinite(r) and r >= 0}
    return sorted(set(R_GRID) | extra)


def optimum_table(E_true: np.ndarray, E_iid: np.ndarray, rs: Iterable[float],
                  measured: Iterable[float | None] = ()) -> list[OptimumRow]:
    """One row per r: g*_true, g*_iid, the best throughputs, and the true throughput at g*_iid
    (what following the i.i.d. formula actually gets). `measured` marks rows that are a run's r."""
    marked = {float(r) for r in measured if r is not None}
    rows = []
    for r in rs:
        Tt, Ti = curve_throughput(E_true, r), curve_throughput(E_iid, r)
        gt, gi = best_gamma(Tt), best_gamma(Ti)
        rows.append(OptimumRow(
            r=float(r),
            gamma_true=gt,
            gamma_iid=gi,
            T_true=None if gt is None else num(Tt[gt - 1]),
            T_iid=None if gi is None else num(Ti[gi - 1]),
            T_true_at_gamma_iid=None if gi is None or gt is None else num(Tt[gi - 1]),
            measured=float(r) in marked,
        ))
    return rows


def _floats(values: Iterable[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def throughput_curve(curve: Curve, r: float) -> dict[str, list[Any]]:
    """T_true and T_iid against gamma at cost ratio r, from a set's E curves alone (SetReport.curve).

    Returns {"gamma": [1..32], "T_true": [...], "T_iid": [...]} (None where undefined).
    """
    gammas = np.asarray(curve.gamma, dtype=np.float64)
    out: dict[str, list[Any]] = {"gamma": [int(g) for g in curve.gamma]}
    for values, name in ((curve.E_true, "T_true"), (curve.E_iid, "T_iid")):
        T = curve_throughput(_floats(values), r, gammas)
        out[name] = [num(t) for t in T]
    return out
