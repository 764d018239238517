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

from specterm.core.streams.estimate import num
from specterm.core.decide.costmodel import curve_throughput, throughput
from specterm.core.params import GAMMAS, R_GRID
from specterm.core.streams.blockwalk import E_iid
from specterm.core.report.types import Curve, OptimumRow, OptimumShares

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


def best_gamma_rows(T: ArrayLike, gammas: ArrayLike = GAMMAS) -> np.ndarray:
    """`best_gamma` of every row of T (R x G), the same tie rule; 0 where a row has no finite value."""
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    finite = np.isfinite(T)
    top = np.max(np.where(finite, T, -np.inf), axis=1, keepdims=True)
    best = finite & (T >= top - np.abs(top) * TIE)
    g = np.asarray(gammas, dtype=np.int64)[np.argmax(best, axis=1)]
    return np.where(best.any(axis=1), g, 0)


def optimum_gaps(E_true_reps: ArrayLike, alpha_reps: ArrayLike, rs: Iterable[float],
                 gammas: ArrayLike = GAMMAS) -> np.ndarray:
    """g*_true(r) - g*_iid(r) in every bootstrap replicate (R x len(rs)): replicate b's E_true(g) (row b,
    over `gammas`) and E_iid(alpha_b, g), each maximised over g at each r (`best_gamma_rows`); 0 where
    g* is undefined in a replicate (counted as no gap)."""
    E = np.atleast_2d(np.asarray(E_true_reps, dtype=np.float64))
    a = np.asarray(alpha_reps, dtype=np.float64).reshape(-1, 1)
    g = np.asarray(gammas, dtype=np.float64)[None, :]
    Ei = E_iid(a, g)
    out = [best_gamma_rows(curve_throughput(E, r, g), gammas) - best_gamma_rows(curve_throughput(Ei, r, g), gammas)
           for r in rs]
    return np.stack(out, axis=1) if out else np.zeros((E.shape[0], 0), dtype=np.int64)


def optimum_shares(gaps: ArrayLike, rs: Iterable[float], size_range: tuple[float, float] = (1.0, 3.0)) -> OptimumShares:
    """P3's replicate shares (report.OptimumShares) from `optimum_gaps` d (R x len(rs)):
    holds = mean over replicates of [#{r: d > 0} > len(rs) / 2], falsified = mean of [d <= 0 at every r
    and d < 0 at some], size = mean of [lo <= -d <= hi at every r]."""
    d = np.atleast_2d(np.asarray(gaps, dtype=np.float64))
    rs = [float(r) for r in rs]
    if d.shape[0] == 0 or d.shape[1] == 0:
        return OptimumShares(replicates=int(d.shape[0]), r_grid=rs)
    lo, hi = size_range
    holds = (d > 0).sum(axis=1) > d.shape[1] / 2
    falsified = (d <= 0).all(axis=1) & (d < 0).any(axis=1)
    size = ((-d >= lo) & (-d <= hi)).all(axis=1)
    return OptimumShares(replicates=int(d.shape[0]), holds=float(holds.mean()), falsified=float(falsified.mean()),
                         size=float(size.mean()), r_grid=rs)


P3_GAP_RANGE = (1.0, 3.0)  # the seed's counter-claim: g*_true 1 to 3 below g*_iid at every r (SPEC 4)


def p3_shares(R: np.ndarray, cols: dict[str, int]) -> OptimumShares | None:
    """P3 per bootstrap replicate (SPEC 4) from a set's resampled sums R (B x K, stats.stream_sums columns,
    blocks_g for every g): E_true(g) and alpha in each replicate, `optimum_shares` over the r grid;
    None without replicates."""
    from specterm.core.streams import stats as st

    if R.shape[0] == 0:
        return None
    E = np.stack([st.E_true(R, cols, int(g)) for g in GAMMAS], axis=1)
    return optimum_shares(optimum_gaps(E, st.alpha(R, cols), R_GRID), R_GRID, P3_GAP_RANGE)


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
