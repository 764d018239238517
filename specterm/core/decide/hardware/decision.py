"""The decision on this hardware (SPEC 6 "Decision on this hardware"): `decision_hw`, the one function
behind the report's `decision_hw` key and `specterm confirm`'s choice of g. Pure numpy.

    S_hw(g) = E(g) c_decode / (c_verify(g) + g c_draft)     g_hw = argmax S_hw (ties: smallest g)
    S_mb(g) = E(g) / (1 + g c_draft / c_decode)             the memory-bound reference (a column)

(formulas in core/decide/costmodel.py). The refeed model adds phi(g) (c_draft2 - c_draft)+ per block and is
shown beside S_hw, never instead of it.

Engine block cost: when the run's costs carry an engine's per-block term (llama.cpp's draft-simple
speculator: a (g+1)-token draft forward per block, c_draft_fwd(g); CostCurve.c_draft_fwd), every number
of the decision uses the engine's block c_verify(g) + g c_draft + c_draft_fwd(g) instead of SPEC 6's
c_verify(g) + g c_draft: S_hw and g_hw, the CI replicates, the i.i.d. column, the break-even v* =
E - (g c_draft + c_draft_fwd(g)) / c_decode, and the verdict names the term. SPEC 6's block is the
cost of a decoder whose draft advances one token per step; the decision is for the decoder the
run's engine really runs. Torch runs have no such term and their numbers are SPEC 6's exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specterm.core.decide import costmodel
from specterm.core.claims import verdict as vd
from specterm.core.streams.bootstrap import percentile_ci
from specterm.core.streams.estimate import num
from specterm.core.decide.hardware.batch import FORMULA, BatchCosts
from specterm.core.decide.hardware.curve import CostCurve, CostReplicates
from specterm.core.decide.hardware.overhead import NOT_MEASURED
from specterm.core.decide.optimum import best_gamma
from specterm.core.params import ACCELERATORS, DEFAULT_ACCELERATOR, MIN_PROMPTS
from specterm.core.report.types import ConfirmedRow, DecisionHW

MEMORY_BOUND_LABEL = "memory-bound reference: if a (g+1)-token verify cost one decode step (a GPU at small batch)"
SPECULATE, DO_NOT, NO_GAIN = "speculate", "do_not_speculate", "no_reliable_gain"
NEVER = "never on this device"
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


def _without_costs(out: DecisionHW, gammas: Array, E_b: Array | None, g_mb: int | None, s_mb: float | None,
                   r_mb: float | None, mb_text: str, note: str | None) -> DecisionHW:
    """The decision without a cost curve: the memory-bound reference at the given r, its CI resampling
    prompts only (no cost was measured, so there are no cost samples to resample)."""
    ci_ref: list[float | None] = [None, None]
    if g_mb is not None and r_mb is not None and E_b is not None and E_b.shape[0]:
        jm = int(np.flatnonzero(gammas == g_mb)[0])
        ci_ref = _ci(costmodel.speedup_mb(E_b[:, jm], r_mb, g_mb))
    if ci_ref[0] is not None and ci_ref[1] is not None:
        mb_text += f" [{ci_ref[0]:.2f}, {ci_ref[1]:.2f}]"
    out.speedup_mb_ci = plain_values(ci_ref)
    out.verdict_kind = verdict_kind(s_mb, ci_ref)
    out.speculate = out.verdict_kind == SPECULATE
    out.verdict = f"{note or NO_COSTS_NOTE}: {mb_text}"
    return out


def _hw_cis(gammas: Array, E_b: Array | None, reps: CostReplicates | None, g_hw: int | None,
            g_mb: int | None) -> tuple[list[float | None], list[float | None]]:
    """The percentile intervals of S_hw(g_hw) and of the memory-bound S(g_mb) over the paired replicates
    (E_boot[b] with cost replicate b); [None, None] without replicates."""
    ci_hw: list[float | None] = [None, None]
    ci_mb: list[float | None] = [None, None]
    if g_hw is not None and E_b is not None and reps is not None and E_b.shape[0]:
        n = min(E_b.shape[0], reps.c_decode.size)
        j = int(np.flatnonzero(gammas == g_hw)[0])
        k = int(np.flatnonzero(reps.gammas == g_hw)[0])
        S_rep = costmodel.speedup_hw(E_b[:n, j], reps.c_decode[:n], reps.c_verify[:n, k], reps.c_draft[:n], g_hw,
                                     c_draft_fwd=reps.draft_fwd_col(k, n), overhead=reps.overhead_col(k, n))
        ci_hw = _ci(S_rep)
        if g_mb is not None:
            jm = int(np.flatnonzero(gammas == g_mb)[0])
            ci_mb = _ci(costmodel.speedup_mb(E_b[:n, jm], reps.c_draft[:n] / reps.c_decode[:n], g_mb))
    return ci_hw, ci_mb


def decision_hw(gammas: ArrayLike, E_true: ArrayLike, E_iid: ArrayLike | None, curve: CostCurve | None,
                r_fallback: float | None = None, phi_true: ArrayLike | None = None,
                confirmed: Sequence[ConfirmedRow | dict[str, Any]] = (), note: str | None = None,
                E_boot: ArrayLike | None = None, reps: CostReplicates | None = None,
                batch: BatchCosts | None = None,
                batch_reps: tuple[Array, Array, Array] | None = None,
                batch_fwd_reps: Array | None = None, where: str | None = None,
                n_prompts: int | None = None) -> DecisionHW:
    """SPEC 7 `decision_hw` of one set (report.DecisionHW) from its E curves (over `gammas`) and the
    run's robust cost curve; undefined numbers are None.

    With a curve: g_hw = argmax S_hw over the draft lengths both the E curve and the cost curve
    have, S_hw exactly as SPEC 6 writes it (no refeed term); the memory-bound reference uses
    r_mb = c_draft / c_decode over all of `gammas`; *_iid the same with E_iid(alpha, g), and
    speedup_true_at_gamma_iid_hw = S_hw(g_iid_hw) with E_true (what the i.i.d. choice really gives).
    The refeed model (phi_true given) is reported beside it and named in the verdict when it falls
    on the other side of 1.0. Without a curve: measured False, the memory-bound model at r_fallback,
    and the verdict starts with `note` (default NO_COSTS_NOTE). confirmed: the set's confirmed rows.

    Uncertainty (SPEC 6): E_boot (R x len(gammas)) holds E_true(g) in the report's bootstrap
    replicates (the same prompt resamples as every other statistic); reps the run's cost replicates
    (each cost's stored samples resampled independently, medians, `curve.cost_replicates`). Replicate
    b pairs E_boot[b] with cost replicate b; speedup_hw_ci is the percentile interval of
    S_hw(g_hw) over them, g_hw fixed at the point estimate (speedup_mb_ci likewise at g_mb, with
    r_mb = c_draft / c_decode per replicate). Without replicates the intervals are [None, None] and
    the verdict says so; its kind then follows the point estimate. n_prompts: the fewest prompts of any
    corpus the set resamples; below params.MIN_PROMPTS the verdict reads "too few prompts (n = K in a corpus; needs
    M per corpus)" (`too_few_prompts`).
    Batch (SPEC 6 "Batch"): with `batch` (the run's costs by batch, BatchCosts) and its replicates,
    by_batch lists S_hw(g_hw(B), B) with its CI per measured B, from the decision's own costs and
    resampling scaled by the batch grid's ratios c(B) / c(1) (`_set_batch`: the B = 1 row is the
    decision), and batch_crossover is B_hw, the largest B such that every measured B up to it has its
    CI above 1 (None: "never on this device"). With an engine term by batch (batch.c_draft_fwd, its
    replicates batch_fwd_reps) the block by batch is the engine's: c_verify(g, B) + g c_draft(B) +
    c_draft_fwd(g, B).
    where: the machine and engine the costs were measured on (their cost profile's label), named in
    the verdict ("speculate with g = 2 on Intel Xeon, 1 thread, torch 2.13 float32: ..."); None: "this hardware".
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
    out = DecisionHW(
        measured=curve is not None, gamma_mb=g_mb, speedup_mb=num(s_mb),
        confirmed=[c if isinstance(c, ConfirmedRow) else ConfirmedRow.from_dict(plain_values(c)) for c in confirmed],
        r_mb=num(r_mb), gamma_iid_mb=g_imb, speedup_iid_mb=num(s_imb), memory_bound_label=MEMORY_BOUND_LABEL,
    )
    E_b = None if E_boot is None else np.asarray(E_boot, dtype=np.float64)[:, order]
    if curve is None:
        return too_few_prompts(_without_costs(out, gammas, E_b, g_mb, s_mb, r_mb, mb_text, note), n_prompts, where=where)
    grid = np.array([g for g in curve.gammas.tolist() if g in set(gammas.tolist())], dtype=np.int64)
    c_ver = np.array([curve.verify_at(int(g)) for g in grid], dtype=np.float64)
    c_fwd = curve.draft_fwd_on(grid)  # the engine's per-block term (None: SPEC 6's block)
    o_g = curve.overhead_on(grid)     # the block overhead o(g) (None: not measured)
    E_t = _on_grid(gammas, E_t_all, grid)
    S_true = costmodel.speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid, c_draft_fwd=c_fwd, overhead=o_g)
    g_hw, s_hw = _best(S_true, grid)
    g_rf = s_rf = s_rf_at = None
    S_refeed = np.full(grid.shape, np.nan)
    if phi_all is not None:
        S_refeed = costmodel.speedup_hw(E_t, curve.c_decode, c_ver, curve.c_draft, grid,
                                        _on_grid(gammas, phi_all, grid), curve.refeed_extra, c_fwd, o_g)
        g_rf, s_rf = _best(S_refeed, grid)
        s_rf_at = None if g_hw is None else float(S_refeed[np.flatnonzero(grid == g_hw)[0]])
    g_ihw = s_ihw = s_true_at = None
    S_iid = np.full(grid.shape, np.nan)
    if E_i_all is not None:
        S_iid = costmodel.speedup_hw(_on_grid(gammas, E_i_all, grid), curve.c_decode, c_ver, curve.c_draft, grid,
                                     c_draft_fwd=c_fwd, overhead=o_g)
        g_ihw, s_ihw = _best(S_iid, grid)
        s_true_at = None if g_ihw is None else float(S_true[np.flatnonzero(grid == g_ihw)[0]])
    ci_hw, ci_mb = _hw_cis(gammas, E_b, reps, g_hw, g_mb)
    kind = verdict_kind(s_hw, ci_hw)
    speculate = kind == SPECULATE
    v_star = steps = None
    if g_hw is None or s_hw is None:
        verdict = f"no positions in this set: nothing to decide; {mb_text}"
    else:
        E_at = float(E_t[np.flatnonzero(grid == g_hw)[0]])
        v_star = float(costmodel.break_even_verify(E_at, curve.c_draft, curve.c_decode, g_hw, curve.draft_fwd_at(g_hw),
                                                   curve.overhead_at(g_hw)))
        steps = curve.verify_at(g_hw) / curve.c_decode
        verdict = verdict_text(kind, g_hw, float(s_hw), ci_hw, where) + break_even_text(g_hw, v_star, steps, E_at)
        verdict += block_clauses(curve)
        if s_rf is not None and (s_rf > 1.0) != (s_hw > 1.0):
            verdict += f" (with the 2-token draft step: {s_rf:.2f}x at g = {g_rf})"
    out.speedup_hw_ci, out.speedup_mb_ci, out.verdict_kind = plain_values(ci_hw), plain_values(ci_mb), kind
    out.break_even_verify, out.verify_steps, out.cost_context = num(v_star), num(steps), curve.context
    if batch is not None:
        _set_batch(out, gammas, E_t_all, E_b, batch, batch_reps, curve, reps, g_hw, num(s_hw), plain_values(ci_hw),
                   batch_fwd_reps)
    out.gamma_hw, out.speedup_hw, out.verdict, out.speculate = g_hw, num(s_hw), verdict, speculate
    out.gamma_iid_hw, out.speedup_iid_hw, out.speedup_true_at_gamma_iid_hw = g_ihw, num(s_ihw), num(s_true_at)
    out.gamma_hw_refeed, out.speedup_hw_refeed, out.speedup_refeed_at_gamma_hw = g_rf, num(s_rf), num(s_rf_at)
    out.clock = curve.clock
    out.curve_hw = {"gamma": grid.tolist(), "S_true": plain_values(S_true), "S_iid": plain_values(S_iid),
                    "S_true_refeed": plain_values(S_refeed)}
    if c_fwd is not None:  # the engine's per-block term the block cost includes (absent for torch runs)
        out.curve_hw["c_draft_fwd"] = plain_values(c_fwd)
    if o_g is not None:  # the block overhead the block cost includes (absent where not measured)
        out.curve_hw["overhead"] = plain_values(o_g)
    return too_few_prompts(out, n_prompts, where=where)


def block_clauses(curve: CostCurve) -> str:
    """The verdict's clauses on the block cost: the block named where it has more than SPEC 6's forwards (an
    engine's term, the block overhead), and "block overhead not measured" where the profile has no o(g)."""
    out = f"; block cost {curve.block_term_text()}" if curve.c_draft_fwd is not None or curve.block_overhead is not None else ""
    return out + (f"; {NOT_MEASURED}" if curve.block_overhead is None else "")


def too_few_prompts(out: DecisionHW, n: int | None, needs: int = MIN_PROMPTS, where: str | None = None) -> DecisionHW:
    """SPEC 6 "Too few prompts": below `needs` prompts (n: the fewest prompts of any corpus the set's
    bootstrap resamples) the decision reads "too few prompts (n = K in a corpus; needs M per corpus)" (verdict_kind
    "too_few_prompts", speculate False), its numbers kept after those words; unchanged otherwise."""
    if n is None or n >= needs or out.verdict_kind is None:
        return out
    words = vd.too_few_text(n, needs)
    verdict = out.verdict
    if out.measured and out.gamma_hw is not None and out.speedup_hw is not None:
        # the verdict's first clause (speculate / do not / no reliable gain) gives way to the words; its numbers stay
        rest = verdict.split("; ", 1)[1] if "; " in verdict else ""
        lo, hi = out.speedup_hw_ci
        interval = (f"{out.speedup_hw:.2f}x [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None
                    else f"{out.speedup_hw:.2f}x (no interval: bootstrap off)")
        on = f" on {where}" if where else ""
        verdict = f"g = {out.gamma_hw}{on} gives {interval}" + (f"; {rest}" if rest else "")
    out.verdict_kind, out.speculate, out.verdict = vd.TOO_FEW, False, f"{words}: {verdict}"
    return out


def plain_values(value: Any) -> Any:
    """numpy scalars and arrays to Python, NaN and inf to None, recursively (the typed report holds plain values)."""
    if isinstance(value, dict):
        return {k: plain_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_values(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain_values(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return num(float(value))
    return value


def _ci(samples: Array) -> list[float | None]:
    lo, hi = percentile_ci(samples)
    return [float(lo), float(hi)] if np.isfinite(lo) and np.isfinite(hi) else [None, None]


def verdict_kind(S: float | None, ci: Sequence[float | None]) -> str | None:
    """SPEC 6's three-way verdict from S_hw(g_hw) and its 95% CI [lo, hi]: "speculate" when lo > 1,
    "do_not_speculate" when hi < 1, "no_reliable_gain" otherwise. Without an interval (bootstrap
    off) the point estimate decides between the first two. None when there is nothing to decide."""
    if S is None or not np.isfinite(S):
        return None
    lo, hi = ci
    if lo is None or hi is None:
        return SPECULATE if S > 1.0 else DO_NOT
    if lo > 1.0:
        return SPECULATE
    if hi < 1.0:
        return DO_NOT
    return NO_GAIN


def verdict_sign_held(kind: str | None, realized: float) -> bool | None:
    """Whether realized lies on the verdict's side of 1: speculate -> realized > 1, do not speculate ->
    realized < 1; None for "no reliable gain" (that verdict claims no side) or no verdict."""
    if kind == SPECULATE:
        return realized > 1.0
    if kind == DO_NOT:
        return realized < 1.0
    return None


def verdict_text(kind: str | None, g: int, S: float, ci: Sequence[float | None], where: str | None = None) -> str:
    """SPEC 6's wording of a verdict, e.g. "speculate with g = 7 on AMD EPYC, 1 thread, torch float32:
    1.24x [1.10, 1.38]" (`where`: the cost profile's machine; None: "this hardware")."""
    where = where or "this hardware"
    lo, hi = ci
    interval = (f"{S:.2f}x [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None
                else f"{S:.2f}x (no interval: bootstrap off)")
    if kind == SPECULATE:
        return f"speculate with g = {g} on {where}: {interval}"
    if kind == DO_NOT:
        return f"do not speculate on {where}: the best draft length, g = {g}, gives {interval}"
    return f"no reliable gain on {where}: g = {g} gives {interval}"


MIN_COST_SAMPLES = 5  # fewer samples per cost than this: the batch ratios' resampling is named in batch_fit


def _set_batch(out: DecisionHW, gammas: NDArray[np.int64], E_all: Array, E_b: Array | None, batch: BatchCosts,
               batch_reps: tuple[Array, Array, Array] | None, curve: CostCurve, reps: CostReplicates | None,
               g_hw: int | None, s_hw: float | None, ci_hw: list[float | None], fwd_reps: Array | None = None) -> None:
    """Sets out's by_batch rows, the measured crossover B_hw and the roofline reference (see decision_hw).

    The by-batch costs come from the decision's own costs and resampling (SPEC 6): each cost at batch B
    is the decision's cost (the robust curve, and in replicate b the decision's cost replicate b) times
    the batch grid's ratio c(B) / c(1) for that quantity (c_decode, c_verify(g), c_draft, the engine's
    c_draft_fwd(g)); in replicate b the ratio is the batch grid's replicate b (each batch quantity's
    samples resampled, medians, refitted: BatchCosts.replicates), so its noise is in the interval as far
    as its samples show it. E(g) in replicate b is the decision's prompt resample b. The B = 1 row is the
    decision itself (its g_hw, S_hw and interval, the ratios being 1); B > 1 search g over the batch
    grid's draft lengths. B_hw = the largest B such that every measured B up to it has its CI above 1
    (verdict.batch_hw)."""
    batches = batch.batches.tolist()
    if 1 not in batches:
        out.batch_fit = {"method": FORMULA, "note": "the batch grid has no B = 1: no by-batch decision"}
        return
    i1 = batches.index(1)
    present, on_curve = set(gammas.tolist()), set(curve.gammas.tolist())
    bg = np.array([g for g in batch.gammas.tolist() if g in present and g in on_curve], dtype=np.int64)
    cols = [int(np.flatnonzero(gammas == g)[0]) for g in bg.tolist()]
    jj = [int(np.flatnonzero(batch.gammas == g)[0]) for g in bg.tolist()]
    r_dec, r_dra = batch.c_decode / batch.c_decode[i1], batch.c_draft / batch.c_draft[i1]
    r_ver = batch.c_verify[:, jj] / batch.c_verify[i1, jj]
    c_ver = np.array([curve.verify_at(int(g)) for g in bg.tolist()], dtype=np.float64)
    fwd_curve = curve.draft_fwd_on(bg)
    o_bg = curve.overhead_on(bg)  # o(g) measured at batch 1 only: kept as it is at every B
    r_fwd = (batch.c_draft_fwd[:, jj] / batch.c_draft_fwd[i1, jj] if batch.c_draft_fwd is not None and fwd_curve is not None
             else np.ones((len(batches), bg.size)))
    rows: list[dict[str, Any]] = []
    sides: list[tuple[int, str]] = []
    for i, B in enumerate(batches):
        if i == i1:
            g_b, s_b, ci = g_hw, s_hw, list(ci_hw)
        else:
            fwd = None if fwd_curve is None else fwd_curve * r_fwd[i]
            S = costmodel.speedup_hw(E_all[cols], curve.c_decode * r_dec[i], c_ver * r_ver[i], curve.c_draft * r_dra[i], bg,
                                     c_draft_fwd=fwd, overhead=o_bg)
            g_b, s_b = _best(S, bg)
            ci = [None, None]
            if g_b is not None and E_b is not None and batch_reps is not None and reps is not None and E_b.shape[0]:
                dec, ver, dra = batch_reps
                n = min(E_b.shape[0], dec.shape[0], reps.c_decode.size)
                j = int(np.flatnonzero(gammas == g_b)[0])
                jb = int(np.flatnonzero(batch.gammas == g_b)[0])
                k = int(np.flatnonzero(reps.gammas == g_b)[0])
                fwd_b = None
                if fwd_curve is not None:
                    base = reps.draft_fwd_col(k, n)
                    base = np.full(n, curve.draft_fwd_at(g_b)) if base is None else base
                    fr = (fwd_reps[:n, i, jb] / fwd_reps[:n, i1, jb] if fwd_reps is not None
                          else np.full(n, r_fwd[i, bg.tolist().index(g_b)]))
                    fwd_b = base * fr
                ci = _ci(costmodel.speedup_hw(E_b[:n, j], reps.c_decode[:n] * dec[:n, i] / dec[:n, i1],
                                              reps.c_verify[:n, k] * ver[:n, i, jb] / ver[:n, i1, jb],
                                              reps.c_draft[:n] * dra[:n, i] / dra[:n, i1], g_b, c_draft_fwd=fwd_b,
                                              overhead=reps.overhead_col(k, n)))
        rows.append({"batch": int(B), "gamma_hw": g_b, "speedup_hw": {"value": s_b, "ci": ci},
                     "c_decode": float(curve.c_decode * r_dec[i]), "c_draft": float(curve.c_draft * r_dra[i])})
        sides.append((int(B), vd.ci_side(ci)))
    crossover = vd.batch_hw(sides)
    preset = ACCELERATORS[DEFAULT_ACCELERATOR]
    g_ref = g_hw if g_hw is not None else 5
    roofline = {"preset": DEFAULT_ACCELERATOR, "label": preset.label, "ridge": preset.ridge, "gamma": g_ref,
                "B_star": float(preset.ridge / (g_ref + 1)),
                "note": "roofline reference for a named accelerator, B* = I*/(g+1); not measured on this device"}
    out.by_batch, out.batch_crossover, out.roofline_reference = plain_values(rows), crossover, plain_values(roofline)
    out.batch_crossover_text = NEVER if crossover is None else f"speculation pays up to batch {crossover}"
    few = batch.min_samples is not None and batch.min_samples < MIN_COST_SAMPLES
    out.batch_fit = plain_values({"held_back": batch.held_back, "fit_rms_rel": batch.fit_rms_rel, "wall_s": batch.wall_s,
                            "whole_wall_s": batch.whole_wall_s, "upfront_wall_s": batch.upfront_wall_s, "method": FORMULA,
                            "timed_points": batch.timed_points(), "grid_points": int(batch.c_verify.size),
                            "clock": batch.clock, "context": batch.context,
                            "resampling": ("the decision's: its prompt resamples and cost replicates, times the batch "
                                           "grid's ratio c(B) / c(1) in the same replicate; the B = 1 row is the decision"),
                            "samples_per_cost_min": batch.min_samples,
                            **({"few_samples": (f"the batch grid's ratios rest on {batch.min_samples} samples per cost "
                                                f"(fewer than {MIN_COST_SAMPLES}): their spread in the interval is "
                                                "what those samples show, an underestimate")} if few else {}),
                            **({} if batch.c_draft_fwd is None else
                               {"engine_term": "c_draft_fwd(g, B): the engine's per-block draft forward, fitted like c_verify"})})


def q3_costs(curve: CostCurve | None) -> dict[str, Any] | None:
    """The measured costs in economics.speedup_factor's shape (the robust curve), or None."""
    if curve is None:
        return None
    out: dict[str, Any] = {"c_decode": curve.c_decode, "c_draft": curve.c_draft,
                           "c_verify": {int(g): float(c) for g, c in zip(curve.gammas, curve.c_verify)}}
    if curve.c_draft_fwd is not None:
        out["c_draft_fwd"] = {int(g): float(c) for g, c in zip(curve.gammas, curve.c_draft_fwd)}
    if curve.block_overhead is not None:
        out["overhead"] = (curve.block_overhead.a, curve.block_overhead.b)
    return out


def break_even_text(g: int, v_star: float, steps: float, E: float) -> str:
    """The verdict's break-even clause: a verify of g + 1 tokens must cost less than v* = E(g) - (g c_draft
    [+ c_draft_fwd(g)]) / c_decode decode steps; with v* <= 0 no verify is cheap enough (the drafting alone, g draft
    steps and any engine term, costs as many decode steps as the E(g) tokens a block yields), and the clause says so."""
    if v_star <= 0:
        return (f"; speculation at g = {g} cannot pay on that machine whatever a verify costs: its drafting "
                f"alone costs {E - v_star:.2f} decode steps, more than the E = {E:.2f} tokens a block yields")
    return (f"; speculation at g = {g} pays when a verify of {g + 1} tokens costs less than "
            f"v* = {v_star:.2f} decode steps (measured on that machine: {steps:.2f})")
