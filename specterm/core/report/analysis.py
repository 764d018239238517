"""The whole analysis of one or more runs as one typed Report (core/report/types.py; SPEC 7 JSON via to_dict).

Length: one place where every section's sums are prepared and assembled into the report, per set
and pooled, with the choices below; the statistics themselves live in their modules.

Per corpus, the per-stream sums matrix M (stats.stream_sums) is built once; the "pooled" set stacks
the corpora's matrices. Point estimates come from column sums, CIs from the percentile bootstrap
f(W @ M) (bootstrap.py). Choices where the SPEC is silent:

- The pooled bootstrap is stratified by corpus: each corpus's streams are resampled within the
  corpus (W_pooled = [W_corpus1 | W_corpus2 | ...]), since corpus sizes are fixed by design. With
  one corpus the pooled CIs equal the corpus CIs.
- Seeds per corpus (bootstrap weights and shuffles) derive from (seed, corpus name), so a corpus
  gets the same numbers whether analysed alone or beside others.
- Streams cut at the first gate failure keep their row (possibly empty): they stay in n_streams
  and in the bootstrap, and contribute only their valid prefix.
- r of a set: the measured r of its runs; with several distinct values, their median (all of
  them are on the optimum grid). Policies and decide get that r, or params.R_DEFAULT when no run measured r.
- Undefined numbers (no positions, no defined stream, ...) are null in the report.
- Acceptance by position (position.py) and sampling acceptance (sampling.py) use the same weights
  W per set; every set shares one bin layout (enough bins for the longest analysed stream), and
  the pooled resampled sums are the corpora's added up (W_pooled is their blocks side by side).
  The pooled policy sums are resampled the same way: they are integers, so the corpora's products
  added up are W_pooled's product bit for bit (bootstrap.integer_products); the sums with
  non-integer columns (stream sums, steady state) are multiplied by W_pooled itself, whose bits the
  order of summation would change.
- The scorecard is P1-P5 then Q1-Q6 (scorecard.scorecard, economics.q_rows). Borderline (SPEC 4):
  the verdicts are recomputed with the bootstrap weights of seeds 0..4 (and the report's seed) on
  the same per-stream sums (the shuffles keep the report's seed: only the weights change, so the
  sums matrices are reused); a row whose verdict differs across them is marked borderline. Q5 and
  Q6 read the decision on this hardware, whose CIs also resample the costs; they are judged at the
  report's seed only and never marked borderline.
- Steady state (steady.py): every set's autocorrelation, D/D_geom and deficit split on t >= 32,
  bootstrapped with the set's W.
- P3 per bootstrap replicate (optimum.p3_shares): every set's g*_true and g*_iid in each replicate of
  R = W @ M, over the r grid; the shares are the set's optimum_shares (the borderline pass redoes the
  pooled set's under each seed).
- Too few prompts (SPEC 6): each set's decision gets the fewest prompts of any corpus it resamples
  (`n_prompts`); the scorecard reads the corpora's (scorecard.fewest_prompts).

Threads (parallel.py; $SPECTERM_THREADS, default min(2, CPUs), one below PARALLEL_MIN_POSITIONS):
the report's work runs on a pool of threads as independent tasks whose results are taken in a fixed
order: per corpus its sums (with the shuffles) and its position / steady / sampling sums, the policy
table of the pooled streams (one task: `_policy_table_in_parts`); then per corpus its weights
and resampled position / sampling sums; per set its report; per borderline seed its verdicts. Random
streams stay keyed by (seed, corpus), each task computes what the serial code computed, and sums
across tasks (the pooled resampled sums) are added in the corpora's order after them: the report is
bit-identical whatever the thread count and scheduling (tests/test_analysis_threads.py). Meanwhile
numpy's OpenBLAS runs on one thread and glibc keeps freed memory for reuse
(parallel.one_blas_thread, parallel.kept_heap: at 10M positions the page faults of fresh blocks cost
0.5-1 s of system time).
"""

from __future__ import annotations

import zlib
from collections import Counter
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Sequence, overload

import numpy as np

from specterm.core.streams import stats as st
from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.bootstrap import check_bootstrap_memory, integer_products, multinomial_weights
from specterm.core.decide.costmodel import r_or_default, refeed_share
from specterm.core.decide.cost_ratio import cost_ratio_optimum
from specterm.core.claims.economics import depth_gain
from specterm.core.errors import SpectermError
from specterm.core.streams.estimate import num, percentile_cis
from specterm.core.decide.hardware.engine_loop import engine_label
from specterm.core.decide.hardware import (MIXED_COSTS_NOTE, Confirmation, CostCurve, RunCostUncertainty, batched_rows,
                                    confirming, decision_check, decision_hw, q3_costs, run_cost_uncertainty,
                                    run_curve_and_confirmations)
from specterm.core.decide.hardware.confirmations import confirmed_rows
from specterm.core.decide.hardware.decision import plain_values as _plain_row
from specterm.core.decide.hardware.decision import verdict_sign_held
from specterm.core.decide.hardware.profiles import (
    NO_MATCH,
    Profile,
    profile_meta,
    run_engine,
    run_profiles,
    shown_profile,
    threads_note,
)
from specterm.core.decide.machine import Machine, available_memory, this_machine
from specterm.core.decide.optimum import optimum_table, p3_shares, r_values
from specterm.core.report.parallel import analysis_threads, contiguous_parts, kept_heap, one_blas_thread, run_all, submit
from specterm.core.params import BOOT, DEFAULT_RIDGE, GAMMA_DEFAULT, EXACT, GAMMA_MAX, GAMMAS, R_DEFAULT, SEED, SHUFFLES, STEADY_FROM, YIELD_GAMMAS
from specterm.core.decide.policies import PolicyTable, policy_summary, policy_sums, policy_table
from specterm.core.streams.longstream import long_position_sums, long_sampling_sums, long_steady_sums, long_stream_sums
from specterm.core.streams.position import PositionSums, bin_width_for, bins_needed, position_report, position_sums
from specterm.core.report.types import (
    POOLED, ConfirmedRow, Curve, DecisionHW, Deficit, Depth, Estimate, Params, Report, RunLengths, RunSummary, ScoreRow, SetReport,
)
from specterm.core.streams.repairs import repair_counts
from specterm.core.streams.sampling import SamplingSums, analysed_beta, sampling_report, sampling_sums
from specterm.core.claims.scorecard import mark_borderline, scorecard
from specterm.core.settings.for_report import calibration, draft_kind, set_engine_settings, settings_checks
from specterm.core.claims.borderline import BORDERLINE_SEEDS, best_gammas, replicates, seed_plan, seed_verdicts
from specterm.core.streams.steady import SteadySums, steady_report, steady_sums
from specterm.core.store import Run, Stream



CHUNK_POSITIONS = 1 << 20
"""Positions of a set's streams reduced at once into their per-stream sums (stats, position, steady and
sampling sums, a part of the policy table): a reduction's working arrays take tens of bytes a position,
so the chunk bounds them whatever the set's size. Every row is its stream's alone (the exact shuffle
column continues its running sum from chunk to chunk), so the chunks stack to the sums of all the
streams at once, bit for bit (tests/test_chunked.py). A longer stream is reduced alone, this many
positions at a time with carries (`pieces`, longstream.py; tests/test_longstream.py)."""


def position_chunks(lengths: Sequence[int] | np.ndarray, budget: int = CHUNK_POSITIONS) -> list[slice]:
    """Consecutive slices of the streams (of these lengths) by where they start: stream i is in chunk
    floor(start_i / budget), start_i = the positions of the streams before it; empty chunks are
    skipped, so a chunk holds at most budget positions plus its last stream's, and a stream longer
    than `budget` is a chunk of its own. One slice for no stream."""
    n = np.asarray(lengths, dtype=np.int64)
    if n.size == 0:
        return [slice(0, 0)]
    ids = (np.cumsum(n) - n) // max(int(budget), 1)
    bounds = [0, *(np.flatnonzero(np.diff(ids)) + 1).tolist(), int(n.size)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def corpus_seed(seed: int, corpus: str) -> int:
    """A seed for one corpus, fixed by (seed, corpus name)."""
    return int(np.random.SeedSequence([seed, zlib.crc32(corpus.encode("utf-8"))]).generate_state(1)[0])


def _model_name(model: object) -> str | None:
    if isinstance(model, dict):
        for key in ("spec", "name", "id", "source", "path"):
            value = model.get(key)
            if isinstance(value, str):
                return value
        return None
    return model if isinstance(model, str) else None


def _meta(meta: dict[str, Any], key: str) -> Any:
    if key in meta:
        return meta[key]
    for nest in ("generation", "oracle", "hardware"):
        sub = meta.get(nest)
        if isinstance(sub, dict) and key in sub:
            return sub[key]
    return None


def run_summary(run: Run, shown: Profile | None = None) -> RunSummary:
    return RunSummary(
        name=run.name,
        path=str(run.path),
        target=_model_name(run.meta.get("target")),
        draft=_model_name(run.meta.get("draft")),
        device=_meta(run.meta, "device"),
        dtype=_meta(run.meta, "dtype"),
        r_measured=num(run.r_measured),
        n_streams=len(run.streams),
        corpora=list(run.corpora),
        engine=run_engine(run.meta),
        shown_profile=None if shown is None else shown.id,
        imported=bool(run.meta.get("imported_from")),
    )


@dataclass(frozen=True)
class RunProfiles:
    """A run's cost profiles, the one shown (SPEC 6: the newest matching this machine, else the
    newest) and whether it matches; `views`: per profile id, the run as that profile's decision sees
    it (profiles.profile_meta)."""

    run: Run
    profiles: list[Profile]
    shown: Profile | None
    matches: bool
    views: dict[str, Run]


def _no_costs(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k not in ("cost", "batch_cost", "confirmations")}


def run_profiles_of(run: Run, machine: Machine) -> RunProfiles:
    profiles = run_profiles(run.meta)
    shown, matches = shown_profile(profiles, machine, run_engine(run.meta))
    views = {p.id: Run(path=run.path, meta=profile_meta(run.meta, p, profiles), streams=run.streams, warnings=run.warnings)
             for p in profiles}
    return RunProfiles(run=run, profiles=profiles, shown=shown, matches=matches, views=views)


def _shown_view(rp: RunProfiles) -> Run:
    """The run as the shown profile's decision sees it (the run itself when it has no profile)."""
    return rp.run if rp.shown is None else rp.views[rp.shown.id]


def _view_or_none(rp: RunProfiles, pid: str) -> Run:
    return rp.views.get(pid) or Run(path=rp.run.path, meta=_no_costs(rp.run.meta), streams=rp.run.streams,
                                    warnings=rp.run.warnings)


def _label(profiles: list[RunProfiles], idx: list[int], pid: str) -> Profile | None:
    """The profile `pid` when every run in `idx` has it (the same costs), else None."""
    found = [next((p for p in profiles[i].profiles if p.id == pid), None) for i in idx]
    return found[0] if found and all(f is not None for f in found) else None


def pieces(lengths: Sequence[int] | np.ndarray, budget: int) -> list[tuple[slice, bool]]:
    """position_chunks with every stream longer than `budget` a piece of its own, marked True: such a
    stream is reduced in slices of `budget` positions with carries (longstream.py)."""
    n = np.asarray(lengths, dtype=np.int64)
    out: list[tuple[slice, bool]] = []
    for sl in position_chunks(n, budget):
        last = sl.stop - 1
        if sl.stop > sl.start and n[last] > budget:
            if last > sl.start:
                out.append((slice(sl.start, last), False))
            out.append((slice(last, sl.stop), True))
        else:
            out.append((sl, False))
    return out


def _sums(streams: list[Stream], gamma: int, depth_gamma: int, shuffles: int, seed: int,
          budget: int | None = None) -> st.StreamSums:
    """stats.stream_sums of a set's streams, reduced `budget` positions at a time (`pieces`: a longer
    stream alone, in slices, longstream.long_stream_sums; the random shuffles, shuffles > 0, draw over
    the whole set: one chunk). budget None: CHUNK_POSITIONS."""
    budget = CHUNK_POSITIONS if budget is None else budget
    gate_ones, gate_n = st.gate_counts(streams)
    a = [s.a for s in streams]
    chunks = [(slice(None), False)] if shuffles > 0 else pieces([x.size for x in a], budget)
    parts: list[st.StreamSums] = []
    for sl, long in chunks:
        carry = parts[-1].esb_carry if parts else 0.0
        if long:
            i = sl.start
            parts.append(long_stream_sums(a[i], gate_ones[i], gate_n[i], gamma, depth_gamma, shuffles, carry, budget))
            continue
        part = st.stream_sums(a[sl], gate_ones[sl], gate_n[sl], gamma=gamma, depth_gamma=depth_gamma,
                              shuffles=shuffles, seed=seed, esb_carry=carry)
        parts.append(part.histogram_only())  # the runs themselves: two int64 per run, let go
    return parts[0] if len(parts) == 1 else _stack(parts)


def _rest(streams: list[Stream], gamma: int, shuffles: int, seed: int, bin_width: int, n_bins: int,
          budget: int | None = None) -> tuple[PositionSums, SteadySums, SamplingSums]:
    """A set's position, steady and sampling sums, reduced `budget` positions at a time (`pieces`; the
    steady parts' exact shuffle column continues its running sum; a longer stream alone, in slices:
    longstream.py). budget None: CHUNK_POSITIONS."""
    budget = CHUNK_POSITIONS if budget is None else budget
    a = [s.a for s in streams]
    t = [None if s.contiguous else s.kept_t for s in streams]  # absolute positions where some were excluded
    positions: list[PositionSums] = []
    steadies: list[SteadySums] = []
    samplings: list[SamplingSums] = []
    for sl, long in pieces([x.size for x in a], budget):
        carry = steadies[-1].esb_carry if steadies else 0.0
        if long:
            i = sl.start
            positions.append(long_position_sums(a[i], t[i], bin_width, n_bins, budget))
            steadies.append(long_steady_sums(a[i], gamma, shuffles, STEADY_FROM, carry, budget))
            samplings.append(long_sampling_sums(analysed_beta(streams[i]), budget))
        else:
            positions.append(position_sums(a[sl], bin_width=bin_width, n_bins=n_bins, t=t[sl]))
            steadies.append(steady_sums(a[sl], gamma, shuffles, seed, esb_carry=carry))
            samplings.append(sampling_sums([analysed_beta(s) for s in streams[sl]]))
    if len(positions) == 1:
        return positions[0], steadies[0], samplings[0]
    return (replace(positions[0], M=np.vstack([p.M for p in positions])),
            replace(steadies[0], M=np.vstack([p.M for p in steadies]), esb_carry=steadies[-1].esb_carry),
            replace(samplings[0], M=np.vstack([p.M for p in samplings])))


def _stack(parts: list[st.StreamSums]) -> st.StreamSums:
    """The sums of consecutive groups of streams as one (rows in order; runs or their counts added)."""
    offsets = np.cumsum([0] + [p.M.shape[0] for p in parts])
    first = parts[0]
    if any(p.run_hist is not None for p in parts):
        counts = [p.run_counts() for p in parts]
        hist = np.zeros(max(c.size for c in counts), dtype=np.int64)
        for c in counts:
            hist[:c.size] += c
        empty = np.zeros(0, np.int64)
        return st.StreamSums(np.vstack([p.M for p in parts]), first.cols, first.gamma, first.depth_gamma, empty, empty,
                             parts[-1].esb_carry, hist)
    return st.StreamSums(
        M=np.vstack([p.M for p in parts]),
        cols=first.cols,
        gamma=first.gamma,
        depth_gamma=first.depth_gamma,
        run_L=np.concatenate([p.run_L for p in parts]),
        run_seg=np.concatenate([p.run_seg + o for p, o in zip(parts, offsets)]),
        esb_carry=parts[-1].esb_carry,
    )


def measured_r(r_list: list[float | None]) -> tuple[list[float], float | None]:
    """(the distinct measured r of a set's runs, sorted; their median, None when there is none)."""
    measured = sorted({float(r) for r in r_list if r is not None})
    return measured, num(np.median(measured)) if measured else None


def set_report(sums: st.StreamSums, W: np.ndarray, r_list: list[float | None], R: np.ndarray | None = None) -> SetReport:
    """Every number of one set from its sums matrix and bootstrap weights (see module docstring);
    policies, cost_ratio, position, sampling and decision_hw are filled by `analyse`."""
    cols, gamma, dg = sums.cols, sums.gamma, sums.depth_gamma
    c = sums.M.sum(axis=0)
    R = W @ sums.M if R is None else R  # the resampled sums (B x K); `analyse` passes them once per set

    pending: list[tuple[Estimate, np.ndarray]] = []  # CIs filled in one percentile call (percentile_cis)

    def est(fn: Callable[..., Any], *args: Any) -> Estimate:
        e = Estimate(value=num(fn(c, cols, *args)), ci=[None, None])
        if R.shape[0]:
            pending.append((e, np.asarray(fn(R, cols, *args), dtype=np.float64)))
        return e

    alpha = float(st.alpha(c, cols))
    alpha_est = est(st.alpha)

    def part(k: int) -> Callable[[np.ndarray, dict[str, Any]], np.ndarray]:
        return lambda cc, cl: st.deficit(cc, cl, gamma)[k]

    total, hetero, temporal = part(0), part(1), part(2)
    curve_true = np.array([st.E_true(c, cols, int(g)) for g in GAMMAS])
    curve_iid = E_iid(alpha, GAMMAS)
    measured, r_measured = measured_r(r_list)
    hist = st.run_length_histogram_of(sums.run_counts(), alpha if np.isfinite(alpha) else 0.0)
    rep = SetReport(
        n_streams=int(sums.M.shape[0]),
        n_positions=int(c[cols["n"]]),
        n_positions_gated_out=int(c[cols["gate_n"]] - c[cols["n"]]),
        alpha=num(alpha),
        alpha_ci=[None, None],
        gate_rate=num(st.gate_rate(c, cols)),
        autocorr=est(st.autocorr),
        autocorr_pooled=est(st.autocorr_pooled),
        autocorr_simpson=est(st.autocorr_simpson),
        autocorr_defined_streams=int(c[cols["ac_def"]]),
        dispersion_ratio=est(st.dispersion_ratio),
        dispersion_ratio_trailing=est(st.dispersion_ratio_trailing),
        runlengths=RunLengths(
            L=[int(x) for x in hist["L"]],
            count=[int(x) for x in hist["count"]],
            geom_expected=[num(x) for x in hist["geom_expected"]],
            D=num(st.dispersion(c, cols)),
            D_geom=num(st.dispersion_geom(c, cols)),
            n_runs=int(c[cols["runs"]]),
        ),
        deficit=Deficit(
            gamma=gamma,
            total=est(total),
            hetero=est(hetero),
            temporal=est(temporal),
            E_true=num(st.E_true(c, cols, gamma)),
            E_iid=num(E_iid(alpha, gamma)),
            E_shuf=num(st.E_shuf(c, cols)),
        ),
        yield_ratio={str(g): est(st.yield_ratio, g) for g in YIELD_GAMMAS},
        curve=Curve(
            gamma=[int(g) for g in GAMMAS],
            E_true=[num(x) for x in curve_true],
            E_iid=[num(x) for x in curve_iid],
            E_true_ci=[est(st.E_true, int(g)).ci for g in GAMMAS],
        ),
        depth=Depth(
            gamma=dg,
            conditional=[est(st.depth_conditional, j) for j in range(1, dg + 1)],
            conditional_iid=[num(alpha)] * dg,
            unconditional=[est(st.depth_unconditional, j) for j in range(1, dg + 1)],
            unconditional_iid=[num(alpha**j) for j in range(1, dg + 1)],
            blocks=[int(c[cols[f"uncut_{j}"]]) for j in range(1, dg + 1)],
            c2_minus_c1=est(depth_gain) if dg >= 2 else None,
        ),
        optimum=optimum_table(curve_true, curve_iid, r_values(measured), measured),
        r_measured=r_measured,
        r_measured_values=measured,
    )
    if pending:
        lo, hi = percentile_cis(np.column_stack([x for _, x in pending]))
        for (e, _), a, b in zip(pending, lo.tolist(), hi.tolist()):
            e.ci[0], e.ci[1] = num(a), num(b)
    rep.alpha_ci = list(alpha_est.ci)
    return rep


def _added(arrays: list[np.ndarray]) -> np.ndarray:
    """a_1 + a_2 + ... in this order (the pooled resampled sums, added as the corpora come)."""
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return out


Hardware = tuple[CostCurve | None, list[Confirmation]]


def _set_decision_hw(rep: SetReport, name: str, members: list[tuple[Stream, int]], runs: list[Run],
                     hw: list[Hardware], sums: st.StreamSums, W: np.ndarray,
                     unc: list[RunCostUncertainty], seed: int, R: np.ndarray | None = None,
                     profile: Profile | None = None, matches: bool | None = None) -> DecisionHW:
    """hardware.decision_hw of a set from the cost curve of the run(s) its streams come from (streams
    of runs with different measured costs get no hardware decision: measured False), the refeed
    share phi(g) of its streams, its confirmed rows with their decision checks, and its uncertainty:
    E_true(g) in the set's bootstrap replicates R = W @ M (the same resamples as every statistic)
    beside the run's cost replicates (`unc`, one per run). `profile`: the cost profile `runs` show
    (profiles.profile_meta), named in the verdict, with whether it `matches` this machine."""
    idx = sorted({i for _, i in members})
    costs = [runs[i].meta.get("cost") for i in idx]
    curve, confs, note = hw[idx[0]][0], hw[idx[0]][1], None
    if len(idx) > 1:
        confs = []
        if any(c != costs[0] for c in costs[1:]):
            curve, note = None, MIXED_COSTS_NOTE
    gammas = np.asarray(rep.curve.gamma, dtype=np.int64)
    E_true = np.array([np.nan if v is None else float(v) for v in rep.curve.E_true])
    E_i = np.array([np.nan if v is None else float(v) for v in rep.curve.E_iid])
    phi = None
    if curve is not None:
        common = [g for g in gammas.tolist() if g in set(curve.gammas.tolist())]
        phi_c = refeed_share([s.a for s, _ in members], np.array(common, dtype=np.int64)) if common else np.array([])
        lookup = dict(zip(common, phi_c.tolist()))
        phi = np.array([lookup.get(int(g), np.nan) for g in gammas])
    conf, confirmed = confirming(confs, name) if curve is not None or confs else (None, [])
    R = W @ sums.M if R is None else R
    E_boot = np.stack([st.E_true(R, sums.cols, int(g)) for g in gammas.tolist()], axis=1) if R.shape[0] else None
    u = unc[idx[0]] if curve is not None else RunCostUncertainty()
    drift = runs[idx[0]].meta.get("cost_drift")  # the profile's machine's drift (profiles.profile_meta)
    if conf is not None and curve is not None and name != POOLED:  # pooled rows mix corpora timed at different g
        streams = [(s.id, s.a) for s, _ in members]
        confirmed = [{**row, **decision_check(row, conf, name, streams, curve, u.reps, W.shape[0], seed, drift)}
                     for row in confirmed]
    out = decision_hw(gammas, E_true, None if np.all(np.isnan(E_i)) else E_i, curve,
                      r_fallback=r_or_default(rep.r_measured) if curve is None else None,
                      phi_true=phi, confirmed=confirmed, note=note, E_boot=E_boot, reps=u.reps,
                      batch=u.batch, batch_reps=u.batch_reps, batch_fwd_reps=u.batch_fwd_reps,
                      where=profile.label() if profile is not None and curve is not None else None,
                      n_prompts=min(Counter(s.corpus for s, _ in members).values()))
    out.confirmed_batch = batched_rows(confs, name) if curve is not None else []
    if curve is not None:  # every confirmation of these costs' machine, not only the newest (SPEC 6)
        streams_all = [(s.id, s.a) for s, _ in members]
        out.confirmed_history = [ConfirmedRow.from_dict(_plain_row(
            {**row, **decision_check(row, c, name, streams_all, curve, u.reps, W.shape[0], seed, drift)} if name != POOLED else row))
            for c in confs for row in confirmed_rows(c, name)]
    if profile is not None and curve is not None:
        out.profile, out.machine, out.matches_this_machine = profile.id, profile.label(), matches
        out.busy_warning = profile.busy_warning()
        if out.busy_warning:
            out.verdict += f"; warning: {out.busy_warning}"
    # "sign held" means one thing in every table (docs/method.md 6, Confirmation): at the decision's g_hw,
    # realized lies on the verdict's side of 1 (none for no reliable gain); at another g, on the side of
    # that g's predicted S. The newest confirmations and every earlier one of the profile alike.
    for row in [*out.confirmed, *out.confirmed_history]:
        if row.gamma == out.gamma_hw and row.sign_held is not None:
            row.sign_held = verdict_sign_held(out.verdict_kind, float(row.realized))
    return out


def _q3_costs(corpora: list[str], by_corpus: dict[str, list[tuple[Stream, int]]],
              hw: list[Hardware]) -> dict[str, dict[str, Any]]:
    """Q3's measured costs per corpus: the robust curve of the corpus's run (one run only)."""
    out = {}
    for c in corpora:
        idx = {i for _, i in by_corpus[c]}
        if len(idx) == 1 and (costs := q3_costs(hw[idx.pop()][0])) is not None:
            out[c] = costs
    return out


def _realized(sets: dict[str, SetReport], corpora: list[str]) -> dict[str, float]:
    """Q3's realized speedups: per corpus the confirmed one at g_hw (else the first confirmed g)."""
    out = {}
    for c in corpora:
        d = sets[c].decision_hw
        if d is None:
            continue
        row = d.confirmed_at(d.gamma_hw) or (d.confirmed[0] if d.confirmed else None)
        if row is not None:
            out[c] = row.realized
    return out


def _draw_weights(sizes: list[int], seeds: list[int], boot: int, pool: Executor | None) -> tuple[np.ndarray, list[Future[np.ndarray]]]:
    """W_pooled (boot x streams: the corpora's weights side by side, stratified) and the futures of
    its blocks, each corpus's multinomial weights drawn on the pool into its columns."""
    W_pooled = np.empty((boot, sum(sizes)))
    bounds = np.cumsum([0, *sizes]).tolist()
    return W_pooled, [submit(pool, partial(multinomial_weights, hi - lo, boot, s, W_pooled[:, lo:hi]))
                      for s, lo, hi in zip(seeds, bounds[:-1], bounds[1:])]


@dataclass
class _Prepared:
    """Everything of `analyse` that does not depend on boot: per-set sums, shuffles, policy tables;
    and the bootstrap weights of the report's boot (`weights`: W_pooled and its corpora's blocks,
    drawn on the pool behind the preparation's tasks, so they fill the pool while the last ones end)."""
    runs: list[Run]
    gamma: int
    shuffles: int
    seed: int
    depth_gamma: int
    corpora: list[str]
    by_corpus: dict[str, list[tuple[Stream, int]]]
    n_entries: int
    parts: dict[str, st.StreamSums]
    positions: dict[str, PositionSums]
    samplings: dict[str, SamplingSums]
    steadies: dict[str, SteadySums]
    tables: dict[str, PolicyTable]
    hw: list[Hardware]
    boot: int
    weights: tuple[np.ndarray, list[Future[np.ndarray]]]
    profiles: list[RunProfiles]
    machine: Machine


def _policy_table_in_parts(streams: list[Stream]) -> PolicyTable:
    """The policy table of the streams without their fixed-g blocks, walked in contiguous parts of about
    CHUNK_POSITIONS positions one after another (`PolicyTable.stacked`: the same rows as at once).

    One task, not a task per part: two lockstep walks on two threads cost more than one after the
    other. Each round of a walk is a few numpy calls on arrays of one element per stream still
    walking; numpy lets go of the GIL in a call on 500 or more elements, so two walks hand it back
    and forth at every call (10,000 x 1,000: 19,000 context switches, 0.83 -> 1.24 CPU-s and
    0.83 -> 0.97 s wall on 2 threads; benchmarks/RESULTS.md). Beside the other tasks of the
    preparation (per-set sums over whole arrays) the walk keeps one thread busy instead.
    """
    parts = contiguous_parts(len(streams), max(1, -(-sum(s.n for s in streams) // CHUNK_POSITIONS)))
    return PolicyTable.stacked([policy_table(streams[sl], fixed=False, budget=CHUNK_POSITIONS) for sl in parts])


def _prepare(runs: list[Run], gamma: int, boot: int, shuffles: int, seed: int, depth_gamma: int | None,
             pool: Executor | None = None) -> _Prepared:
    """The boot-independent part of `analyse`. The runs are read as their shown cost profile sees
    them (run_profiles_of): every number that uses costs is that profile's."""
    machine = this_machine()
    profiles = [run_profiles_of(run, machine) for run in runs]
    runs = [_shown_view(rp) for rp in profiles]
    depth_gamma = gamma if depth_gamma is None else depth_gamma
    for name, value in (("--gamma", gamma), ("depth gamma", depth_gamma)):
        if not 1 <= value <= GAMMA_MAX:
            raise SpectermError(f"{name} must be between 1 and {GAMMA_MAX}, got {value}.")
    if boot < 0 or shuffles < EXACT:
        raise SpectermError("--boot must be 0 or more and --shuffles -1 (exact), 0 (no split) or more.")
    entries = [(s, i) for i, run in enumerate(runs) for s in run.streams]
    if not entries:
        raise SpectermError("the runs hold no prompts yet; run `specterm run` or `specterm import` first.")
    corpora = sorted({s.corpus for s, _ in entries})
    longest = max(s.analysed_span for s, _ in entries)  # the absolute t a bin must reach (excluded positions keep theirs)
    bin_width = bin_width_for(longest)  # 16, wider only past MAX_BINS bins (one 30M-position stream)
    n_bins = bins_needed(longest, bin_width)  # one bin layout for every set, so they stack

    by_corpus = {c: [(s, i) for s, i in entries if s.corpus == c] for c in corpora}
    streams_of = {c: [s for s, _ in by_corpus[c]] for c in corpora}

    def rest(c: str) -> tuple[PositionSums, SteadySums, SamplingSums]:
        return _rest(streams_of[c], gamma, shuffles, corpus_seed(seed, c), bin_width, n_bins)

    # All independent, the largest first: per corpus its sums (the shuffles); the policy table of the
    # pooled streams (every stream replayed once, pooled order; each corpus takes its block of rows; the
    # fixed-g blocks are the sums' own, added after); per corpus its other sums.
    pooled_streams = [s for c in corpora for s, _ in by_corpus[c]]
    sums_f = {c: submit(pool, partial(_sums, streams_of[c], gamma, depth_gamma, shuffles, corpus_seed(seed, c)))
              for c in corpora}
    table_f = submit(pool, partial(_policy_table_in_parts, pooled_streams))
    rest_f = {c: submit(pool, partial(rest, c)) for c in corpora}
    # the report's bootstrap weights need nothing above: drawn last, while the longest tasks end
    weights = _draw_weights([len(by_corpus[c]) for c in corpora], [corpus_seed(seed, c) for c in corpora], boot, pool)
    parts: dict[str, st.StreamSums] = {c: sums_f[c].result() for c in corpora}
    parts[POOLED] = _stack([parts[c] for c in corpora])
    positions: dict[str, PositionSums] = {}
    samplings: dict[str, SamplingSums] = {}
    steadies: dict[str, SteadySums] = {}
    for c in corpora:
        positions[c], steadies[c], samplings[c] = rest_f[c].result()
    first = positions[corpora[0]]
    positions[POOLED] = PositionSums(np.vstack([positions[c].M for c in corpora]), first.cols, first.bin_width, n_bins)
    first_ss = steadies[corpora[0]]
    steadies[POOLED] = SteadySums(np.vstack([steadies[c].M for c in corpora]), first_ss.cols, first_ss.gamma, first_ss.start)
    samplings[POOLED] = SamplingSums(np.vstack([samplings[c].M for c in corpora]), samplings[corpora[0]].cols)
    tables: dict[str, PolicyTable] = {POOLED: table_f.result().with_fixed(parts[POOLED].blocks())}
    lo = 0
    for c in corpora:
        tables[c] = tables[POOLED].rows(slice(lo, lo + len(by_corpus[c])))
        lo += len(by_corpus[c])
    hw = [run_curve_and_confirmations(run.meta, f"{run.path}/run.json") for run in runs]
    return _Prepared(runs=runs, gamma=gamma, shuffles=shuffles, seed=seed, depth_gamma=depth_gamma, corpora=corpora,
                     by_corpus=by_corpus, n_entries=len(entries), parts=parts, positions=positions,
                     samplings=samplings, steadies=steadies, tables=tables, hw=hw, boot=boot, weights=weights,
                     profiles=profiles, machine=machine)


@dataclass
class _Profiled:
    """Every cost profile of the runs (by id): per run its view under that profile, its hardware and cost
    replicates, and the id each run shows."""

    pids: list[str]
    shown_ids: list[str | None]
    views: dict[str, list[Any]]
    hw_of: dict[str, list[Any]]
    unc_of: dict[str, list[Any]]


def _by_profile(p: _Prepared, prof_of: _Profiled, seed: int, rep: SetReport, name: str,
                members: list[tuple[Stream, int]], sums: st.StreamSums, W: np.ndarray, R: np.ndarray) -> dict[str, DecisionHW]:
    """The set's decision under every cost profile its runs share (SPEC 6: a decision per profile)."""
    idx = sorted({i for _, i in members})
    out = {}
    for pid in prof_of.pids:
        prof = _label(p.profiles, idx, pid)
        if prof is None:
            continue
        ok = all(p.profiles[i].profiles and prof.same_machine(p.machine, run_engine(p.profiles[i].run.meta)) for i in idx)
        if rep.decision_hw is not None and all(prof_of.shown_ids[i] == pid for i in idx):
            out[pid] = rep.decision_hw
        else:
            out[pid] = _set_decision_hw(rep, name, members, prof_of.views[pid], prof_of.hw_of[pid], sums, W,
                                        prof_of.unc_of[pid], seed, R, profile=prof, matches=ok)
    return out


def _shown_profile(profiles: list[RunProfiles], shown_ids: list[str | None],
                   members: list[tuple[Stream, int]]) -> tuple[list[int], Any]:
    """The runs of a set (their indices) and the cost profile its decision is shown on: the one shown
    for its first run, labelled over all of them (None without members or profile)."""
    idx = sorted({i for _, i in members})
    first = shown_ids[idx[0]] if members else None
    return idx, _label(profiles, idx, first) if first is not None else None


def _imported_bits(members: list[tuple[Stream, int]]) -> bool:
    """Whether every stream of a (non-empty) set is imported bits: no gate stored, none checked."""
    return bool(members) and all(s.gate is None for s, _ in members)


def _resampled(corpora: list[str], done: list[tuple[Any, ...]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray | None]]:
    """Per set its resampled position, sampling and policy sums from the corpora's (`done`: per corpus W
    and its products). R = W @ M; the pooled W is the corpora's blocks side by side, so R_pooled = the sum
    of R_corpus; the pooled policy sums from its corpora's rows, added up (exact integers), or None where
    a corpus has none."""
    resampled_position = {c: d[1] for c, d in zip(corpora, done)}
    resampled_position[POOLED] = _added([resampled_position[c] for c in corpora])
    resampled_sampling = {c: d[2] for c, d in zip(corpora, done)}
    resampled_sampling[POOLED] = _added([resampled_sampling[c] for c in corpora])
    resampled_policy: dict[str, np.ndarray | None] = {c: d[3] for c, d in zip(corpora, done)}
    in_pooled = [d[4] for d in done if d[4] is not None]
    resampled_policy[POOLED] = _added(in_pooled) if len(in_pooled) == len(done) else None
    return resampled_position, resampled_sampling, resampled_policy


def _assemble(p: _Prepared, boot: int, pool: Executor | None = None,
              on_cis: Callable[[Report], None] | None = None) -> Report:
    """The report from the prepared sums with `boot` bootstrap resamples (0: point estimates only).
    Reads `p` and never changes it, so one preparation serves boot = 0 and boot = B alike.
    `on_cis` (boot > 0): called with the report before its borderline marks (`analyse`)."""
    runs, seed, corpora, by_corpus, tables, hw = p.runs, p.seed, p.corpora, p.by_corpus, p.tables, p.hw
    run_r = [run.r_measured for run in runs]
    # Pooled weights are the corpora's weights side by side (stratified); each corpus uses its block
    # (each draw writes its own columns of W_pooled), drawn with the preparation for its boot.
    sizes = [len(by_corpus[c]) for c in corpora]
    W_pooled, drawn = p.weights if boot == p.boot else _draw_weights(sizes, [corpus_seed(seed, c) for c in corpora], boot, pool)
    offsets = np.cumsum([0] + [len(by_corpus[c]) for c in corpora]).tolist()
    members_of = {**{c: by_corpus[c] for c in corpora}, POOLED: [e for c in corpora for e in by_corpus[c]]}
    r_of = {name: r_or_default(measured_r([run_r[i] for _, i in members])[1]) for name, members in members_of.items()}
    # per set its policies and per-stream policy sums (integers), resampled with the corpora's weights below
    pol_sums = {name: policy_sums([s for s, _ in members], r_of[name], table=tables[name])
                for name, members in members_of.items()}

    def corpus_weights(c: str, lo: int, hi: int, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """A corpus's weights W (its block of W_pooled) and its resampled sums: position and sampling
        sums, and the policy sums of the corpus and of the pooled set's rows of it (integers: one joint
        product, `integer_products`, with the position sums when those are integers too; None where
        they are not exact, the sets then multiply their own)."""
        flat = [pol_sums[name][1][rows].reshape(hi - lo, -1) for name, rows in ((c, slice(None)), (POOLED, slice(lo, hi)))]
        ints = integer_products(W, [p.positions[c].M, *flat])
        if ints is None:
            # the position sums hold a float column (the warm-up gain) whenever a stream has a warm-up:
            # the policy sums (integers) are still one joint product of their own
            pol = integer_products(W, flat)
            own, in_pooled = (None, None) if pol is None else (pol[0], pol[1])
            return W, W @ p.positions[c].M, W @ p.samplings[c].M, own, in_pooled
        return W, ints[0], W @ p.samplings[c].M, ints[1], ints[2]

    Ws = [f.result() for f in drawn]
    done = run_all(pool, [partial(corpus_weights, c, lo, hi, W) for c, lo, hi, W in zip(corpora, offsets[:-1], offsets[1:], Ws)])
    weights = {c: d[0] for c, d in zip(corpora, done)}
    groups = {c: (p.parts[c], weights[c], by_corpus[c]) for c in corpora}
    groups[POOLED] = (p.parts[POOLED], W_pooled, members_of[POOLED])
    resampled_position, resampled_sampling, resampled_policy = _resampled(corpora, done)
    unc = [run_cost_uncertainty(run.meta, boot, seed) for run in runs]
    # every other profile of the runs: its views, hardware and cost replicates (the shown one's are above)
    shown_ids = [None if rp.shown is None else rp.shown.id for rp in p.profiles]
    pids = list(dict.fromkeys(q.id for rp in p.profiles for q in rp.profiles))
    views = {pid: [_view_or_none(rp, pid) for rp in p.profiles] for pid in pids}
    hw_of = {pid: [run_curve_and_confirmations(v.meta, f"{v.path}/run.json") for v in views[pid]] for pid in pids}
    unc_of = {pid: [run_cost_uncertainty(v.meta, boot, seed) for v in views[pid]] for pid in pids}

    def one_set(name: str) -> tuple[SetReport, tuple[Any, ...] | None, np.ndarray]:
        """A set's report, (when boot > 0) its policies and per-stream policy sums for the borderline
        pass, and its resampled sums R = W @ M."""
        sums, W, members = groups[name]
        R = W @ sums.M  # resampled once, read by set_report and the hardware decision
        rep = set_report(sums, W, [run_r[i] for _, i in members], R)
        if _imported_bits(members):
            rep.gate_rate = None  # imported bits: no gate was checked (SPEC 1.3), so no rate to show
        rep.repairs = repair_counts([s for s, _ in members])
        rep.optimum_shares = p3_shares(R, sums.cols)
        r = r_of[name]  # = r_or_default(rep.r_measured)
        rep.policies = policy_summary([s for s, _ in members], r, W, table=tables[name], resampled=resampled_policy[name])
        rep.cost_ratio = cost_ratio_optimum(rep, r, ridge=DEFAULT_RIDGE)
        rep.position = position_report(p.positions[name], W, resampled_position[name])
        rep.sampling = sampling_report(p.samplings[name], W, resampled_sampling[name])
        idx, shown = _shown_profile(p.profiles, shown_ids, members)
        rep.decision_hw = _set_decision_hw(rep, name, members, runs, hw, sums, W, unc, seed, R, profile=shown,
                                           matches=shown is not None and all(p.profiles[i].matches for i in idx))
        rep.decision_by_profile = _by_profile(p, _Profiled(pids, shown_ids, views, hw_of, unc_of), seed, rep, name,
                                              members, sums, W, R)
        rep.engine_settings = set_engine_settings(members, runs, hw, unc, W, rep.decision_hw, r, shown)
        rep.steady_state = steady_report(p.steadies[name], W)
        pol = (*pol_sums[name], r) if boot > 0 and members else None
        return rep, pol, R

    names = [POOLED, *corpora]  # the pooled set (the largest task) first; the report keeps corpora, then pooled
    made = dict(zip(names, run_all(pool, [partial(one_set, name) for name in names])))
    sets: dict[str, SetReport] = {name: made[name][0] for name in groups}

    # P1-P5, then Q1-Q6; Q3 takes each corpus's measured costs (its run's robust curve) and realized speedups.
    q3c, real = _q3_costs(corpora, by_corpus, hw), _realized(sets, corpora)
    best = best_gammas(sets, q3c)
    if boot == 0:
        return _report(p, sets, scorecard(sets, costs=q3c, realized=real, replicates=None), boot)
    # On the pool: the borderline seeds; meanwhile this thread builds the seeds' plan, then Q2/Q3's
    # replicates (from the sets' resampled sums) and the report seed's scorecard, which `on_cis`
    # is handed before the seeds are waited for (inline, one thread: before they run). Results are
    # taken in a fixed order, so the numbers are the serial code's.
    reps = {c: replicates(made[c][2], p.parts[c].cols, best[c]) for c in corpora}  # from R: no product of its own
    # per set: the policies and their per-stream sums, built once, resampled per seed
    pol = {name: made[name][1] for name in groups if made[name][1] is not None}
    others = sorted(set(BORDERLINE_SEEDS) - {seed})
    plan = seed_plan(corpora, groups, sets, pol, q3c, best)  # what every seed reads, built once

    def submit_seeds() -> list[Future[dict[str, str]]]:
        return [submit(pool, partial(seed_verdicts, other, corpus_seed, plan, boot, sets, q3c, real)) for other in others]

    seeds_f = submit_seeds() if pool is not None else None
    rows = scorecard(sets, costs=q3c, realized=real, replicates=reps)
    if on_cis is not None and others:
        # copies: mark_borderline below changes the rows it marks, and this report is already shown
        on_cis(_report(p, sets, [replace(r) for r in rows], boot))
    if seeds_f is None:
        seeds_f = submit_seeds()
    by_seed = {seed: {r.id: r.verdict for r in rows if r.id not in ("Q5", "Q6")}}
    by_seed.update(zip(others, [f.result() for f in seeds_f]))
    return _report(p, sets, mark_borderline(rows, by_seed), boot)


def profile_rows(profiles: list[RunProfiles], machine: Machine) -> list[dict[str, Any]]:
    """SPEC 7 `profiles[]`: every run's cost profiles, each with its run and whether it is shown."""
    return [{**q.summary(machine, run_engine(rp.run.meta)), "run": rp.run.name, "shown": rp.shown is q}
            for rp in profiles for q in rp.profiles]


def profile_note(profiles: list[RunProfiles], machine: Machine) -> str | None:
    """SPEC 6: when a run's profiles include none of this machine, one sentence with the command that
    measures one; when this machine's shown profile was timed at another thread count, which threads
    and the command that times this machine's (profiles.threads_note); None otherwise."""
    missing = [rp for rp in profiles if rp.profiles and not rp.matches]
    if not missing:
        notes = [threads_note(rp.shown, machine, str(rp.run.path)) for rp in profiles if rp.shown is not None and rp.matches]
        return "; ".join(n for n in notes if n) or None
    engines = sorted({run_engine(rp.run.meta) for rp in missing})
    where = f"{machine.label()}, {' / '.join(engines)}"
    return NO_MATCH.format(machine=where, run=" ".join(str(rp.run.path) for rp in missing))


def _report(p: _Prepared, sets: dict[str, SetReport], rows: list[ScoreRow], boot: int) -> Report:
    """The Report of the prepared runs from its sets and scorecard rows."""
    return Report(
        profiles=profile_rows(p.profiles, p.machine),
        this_machine=p.machine.key(),
        profile_note=profile_note(p.profiles, p.machine),
        calibration=calibration(sets, {q.id: (engine_label(str(q.engine.get("name") or "unknown engine"), q.cost), q.label())
                                       for rp in p.profiles for q in rp.profiles},
                                {q.id: draft_kind(rp.run.meta) for rp in p.profiles for q in rp.profiles},
                                [c for rp in p.profiles for c in settings_checks(rp.run.meta)]),
        sets=sets,
        scorecard=rows,
        runs=[run_summary(_shown_view(rp), rp.shown) for rp in p.profiles],
        params=Params(gamma=p.gamma, boot=boot, shuffles=p.shuffles, seed=p.seed, depth_gamma=p.depth_gamma,
                      r_default=R_DEFAULT, ridge=DEFAULT_RIDGE),
    )


# Two signatures for mypy only: callers that spread a dict of int parameters (`analyse(runs, **params)`)
# match the first; `on_point` is keyword-only in the second.
@overload
def analyse(runs: list[Run], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, shuffles: int = SHUFFLES, seed: int = SEED,
            depth_gamma: int | None = None) -> Report: ...
@overload
def analyse(runs: list[Run], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, shuffles: int = SHUFFLES, seed: int = SEED,
            depth_gamma: int | None = None, *, on_point: Callable[[Report], None] | None,
            on_cis: Callable[[Report], None] | None = None) -> Report: ...
def analyse(runs: list[Run], gamma: int = GAMMA_DEFAULT, boot: int = BOOT, shuffles: int = SHUFFLES, seed: int = SEED,
            depth_gamma: int | None = None, *, on_point: Callable[[Report], None] | None = None,
            on_cis: Callable[[Report], None] | None = None) -> Report:
    """The report (core/report/types.py): sets (corpora sorted, then "pooled"), scorecard, runs, params;
    `report.to_dict()` is the SPEC 7 JSON.

    `on_point`, when given and boot > 0, is called once, before the bootstrap phase, with the
    point-estimate report: equal to `analyse(runs, ..., boot=0)` with the same other arguments (its
    params say boot = 0 and it has no CIs). The sums, shuffles and policy replays are shared, so the
    full report costs little more than without it. With boot = 0 it is not called (the returned
    report is that report).

    `on_cis`, when given and boot > 0, is called once, after every CI and the report seed's verdicts
    and before the borderline check (SPEC 4: the verdicts under the other seeds of 0..4, about half
    of the bootstrap's time), with the report as returned but for that check: no row is marked
    borderline and no row's evidence names the seeds' verdicts. Not called when no other seed is
    checked.
    """
    drafted = next((run for run in runs if any(s.drafted for s in run.streams)), None)
    if drafted is not None:  # L_s and m_s, not bits: nothing here is defined on them (SPEC 2b)
        raise SpectermError(f"{drafted.path} is a drafter run (no per-position bits); its report is "
                            "core/drafted (`specterm report` routes it there).")
    n_streams = sum(len(run.streams) for run in runs)
    check_bootstrap_memory(boot, n_streams, len({s.corpus for run in runs for s in run.streams}) + 1, available_memory())
    threads = analysis_threads(sum(s.bits.size for run in runs for s in run.streams), boot)
    if threads == 1:
        with one_blas_thread(), kept_heap():
            prepared = _prepare(runs, gamma, boot, shuffles, seed, depth_gamma)
            if on_point is not None and boot > 0:
                on_point(_assemble(prepared, 0))
            report = _assemble(prepared, boot, on_cis=on_cis)
            del prepared  # its sums and weights freed while the heap is kept (parallel.kept_heap)
        return report
    with one_blas_thread(), kept_heap(), ThreadPoolExecutor(threads, thread_name_prefix="specterm-analyse") as pool:
        prepared = _prepare(runs, gamma, boot, shuffles, seed, depth_gamma, pool)
        if on_point is not None and boot > 0:
            on_point(_assemble(prepared, 0, pool))
        report = _assemble(prepared, boot, pool, on_cis)
        del prepared
    return report
