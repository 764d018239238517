"""Deciding whether to speculate, and with which draft length (SPEC section 6).

Speedup over plain decoding at cost ratio r = c_draft / c_verify, draft length g:

    speedup(g, r) = E(g) / (1 + g r)          E = tokens per block (E_true measured, or E_iid)

which assumes a verify call of g + 1 tokens costs about one plain decode step: true while decoding
is memory-bound, i.e. below the batch crossover

    B* = I* / (g + 1)                          I* = accelerator ridge point, FLOP per byte

where the verify's arithmetic intensity (about (g + 1) B FLOP per weight byte at batch B) reaches
the ridge and verifying g + 1 tokens stops being nearly free.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from specterm.core.costmodel import curve_throughput
from specterm.core.errors import SpectermError
from specterm.core.optimum import best_index
from specterm.core.params import ACCELERATORS, DEFAULT_RIDGE
from specterm.core.report import Decision, SetReport


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


def batch_crossover(ridge: float, gamma: ArrayLike) -> np.ndarray:
    """B* = ridge / (gamma + 1): the batch size above which speculating with draft length gamma stops paying."""
    return np.asarray(ridge, dtype=np.float64) / (np.asarray(gamma, dtype=np.float64) + 1.0)


def speedup(E: ArrayLike, gamma: ArrayLike, r: float) -> np.ndarray:
    """E / (1 + gamma r): tokens per verify-cost relative to plain decoding's one token per step
    (`costmodel.curve_throughput`, the one throughput formula)."""
    return curve_throughput(E, r, gamma)


def decision(set_report: SetReport, r: float, ridge: float = DEFAULT_RIDGE) -> Decision:
    """Speculate or not, with which g, from a set's report (its alpha and E curves).

    g_true = argmax_g E_true(g) / (1 + g r) and its speedup; g_iid = argmax_g E_iid(g) / (1 + g r),
    the speedup the i.i.d. formula promises there and the true speedup E_true(g_iid) / (1 + g_iid r)
    actually obtained; B* = ridge / (g_true + 1). Ties: smallest g. speculate = best true speedup > 1.
    Returns a report.Decision.
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
        return Decision(r=float(r), ridge=float(ridge), alpha=alpha, speculate=False,
                        verdict="no positions in this set: nothing to decide")
    i_true = best_index(S_true)
    assert i_true is not None
    S_iid = speedup(E_iid, gamma, r)
    i_iid = best_index(S_iid)
    g_true, s_true = int(gamma[i_true]), float(S_true[i_true])
    d = Decision(
        r=float(r),
        ridge=float(ridge),
        alpha=alpha,
        gamma_true=g_true,
        speedup_true=s_true,
        gamma_iid=None if i_iid is None else int(gamma[i_iid]),
        speedup_iid=None if i_iid is None else float(S_iid[i_iid]),
        speedup_true_at_gamma_iid=None if i_iid is None else float(S_true[i_iid]),
        batch_crossover=float(batch_crossover(ridge, g_true)),
        speculate=bool(s_true > 1.0),
    )
    d.verdict = _verdict(d)
    return d


def _verdict(d: Decision) -> str:
    """Plain words, e.g. "speculate with g = 3: 1.93x expected; the i.i.d. formula would pick g = 5 and
    promise 2.21x (1.88x in fact); stop above batch ~74"."""
    if d.gamma_iid is None:
        iid = "no i.i.d. prediction (alpha unknown)"
    elif d.gamma_iid == d.gamma_true:
        iid = f"the i.i.d. formula picks the same g and promises {d.speedup_iid:.2f}x"
    else:
        iid = (f"the i.i.d. formula would pick g = {d.gamma_iid} and promise {d.speedup_iid:.2f}x "
               f"({d.speedup_true_at_gamma_iid:.2f}x in fact)")
    if d.speculate:
        return (f"speculate with g = {d.gamma_true}: {d.speedup_true:.2f}x expected; {iid}; "
                f"stop above batch ~{d.batch_crossover:.0f}")
    return (f"do not speculate: the best draft length, g = {d.gamma_true}, gives {d.speedup_true:.2f}x "
            f"at r = {d.r:.2f}; {iid}")
