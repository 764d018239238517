"""Headless export of a report (analysis.analyse): GitHub markdown tables, JSON, plain text.

Tables are built once as (title, header, rows) and rendered as markdown or as aligned plain text.
Cells follow the published style (numbers through core/report/fmt.py, the one number formatter): a value
then its 95% CI in brackets, e.g. `+0.233 [0.19, 0.27]`,
and the deficit as `total = hetero + temporal [CI of temporal]`, e.g. `0.064 = 0.016 + 0.048 [0.030, 0.063]`.

Length: every section's table builders in one place, since the report (md, text), the TUI's exports and
the README's generated Results all render these same tables; the decision alone has five (the shown
profile's, every profile side by side, by batch, the confirmations, every confirmation by machine).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from specterm.core.report.fmt import MISSING, ci, est, fmt
from specterm.core.params import STEADY_FROM, WARMUP_EARLY, WARMUP_LATE
from specterm.core.report.types import ECONOMICS, MEASUREMENT, SEEDS, Deficit, Report
from specterm.core.settings.settings_tables import settings_tables

YES = {True: "yes", False: "no", None: MISSING}
SECTIONS = ("overview", "runlengths", "yield", "optimum", "depth", "position", "sampling", "policies", "decide", "settings",
            "scorecard")
TITLES = {
    "overview": "Overview",
    "runlengths": "Run lengths",
    "yield": "Yield per block",
    "optimum": "Optimal draft length",
    "depth": "Acceptance by block depth",
    "position": "Acceptance by position",
    "sampling": "Sampling acceptance",
    "policies": "Draft-length policies",
    "decide": "Decision",
    "settings": "Engine settings and calibration",
    "scorecard": "Scorecard",
}
HIST_MAX = 16  # run-length histogram rows L = 0..15, then one row for L >= 16

Table = tuple[str, list[str], list[list[str]]]
BETA_ALONG = "along the greedy continuation y"
"""Where beta is measured (SPEC 1.4): on the target's greedy y, not on a temperature-1 sampled trajectory;
said wherever beta is shown."""


# ------------------------------------------------------------------------- cells ---


def deficit_cell(d: Deficit) -> str:
    """`total = hetero + temporal [CI of temporal]`; `≈` instead of `=` when the three rounded
    numbers do not add up (0.0058 = 0.0064 - 0.0006 prints as 0.006 ≈ 0.006 - 0.001): each number
    stays its own correct rounding, and the sign says the sum is only approximate."""
    t, h, m = d.total.value, d.hetero.value, d.temporal.value
    op, m_abs = ("-", -m) if m is not None and m < 0 and fmt(m) != fmt(0.0) else ("+", m)
    eq = "="
    if t is not None and h is not None and m is not None:
        shown = float(fmt(h)) + (1 if op == "+" else -1) * float(fmt(m_abs))
        eq = "=" if abs(shown - float(fmt(t))) < 5e-7 else "≈"
    return f"{fmt(t)} {eq} {fmt(h)} {op} {fmt(m_abs)} {ci(d.temporal.ci)}"


def steady_cells(s: Any) -> list[str]:
    """The steady state (t >= 32) beside the full-stream numbers: per-stream p11-p10 [CI] and D/D_geom [CI]."""
    ss = getattr(s, "steady_state", None)
    if ss is None:
        return [MISSING, MISSING]
    return [est(ss.autocorr, 3, 2, sign=True), est(ss.dispersion_ratio, 1, 2, suffix="x")]


def _cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------ tables ---


def overview_tables(report: Report) -> list[Table]:
    g = report.params.gamma
    sets = report.ordered_sets()
    head = ["set", "streams", "positions", "alpha", "gate", "p11-p10 [CI]", "D/D_geom",
            f"deficit at g={g}: total = hetero + temporal [CI]", f"t >= {STEADY_FROM}: p11-p10 [CI]", f"t >= {STEADY_FROM}: D/D_geom"]
    rows = [[name, fmt(s.n_streams), fmt(s.n_positions), fmt(s.alpha, 2), fmt(s.gate_rate, 3),
             est(s.autocorr, 3, 2, sign=True), est(s.dispersion_ratio, 1, 2, suffix="x"), deficit_cell(s.deficit),
             *steady_cells(s)]
            for name, s in sets]
    tables: list[Table] = [("Headline numbers", head, rows)]
    tables += repair_tables(sets)
    head = ["set", "per-stream p11-p10 [CI]", "pooled p11-p10 [CI]", "Simpson inflation [CI]", "streams defined"]
    rows = [[name, est(s.autocorr, sign=True), est(s.autocorr_pooled, sign=True),
             est(s.autocorr_simpson, sign=True), fmt(s.autocorr_defined_streams)]
            for name, s in sets]
    tables.append(("Autocorrelation", head, rows))
    if report.runs:
        head = ["run", "target", "draft", "device", "dtype", "r measured", "streams", "corpora"]
        rows = [[r.name, r.target or MISSING, r.draft or MISSING, r.device or MISSING,
                 r.dtype or MISSING, fmt(r.r_measured), fmt(r.n_streams), ", ".join(r.corpora)]
                for r in report.runs]
        tables.append(("Runs", head, rows))
    return tables


def repair_tables(sets: list[tuple[str, Any]]) -> list[Table]:
    """The repair loop's counts per set (SPEC 1.3), when a set has streams that went through it (llama.cpp)."""
    if all(getattr(s, "repairs", None) is None for _, s in sets):
        return []
    head = ["set", "streams checked", "streams repaired", "repairs", "positions excluded", "gate"]
    rows = [[name, MISSING, MISSING, MISSING, MISSING, fmt(s.gate_rate, 3)] if s.repairs is None else
            [name, fmt(s.repairs.streams), fmt(s.repairs.repaired), fmt(s.repairs.repairs), fmt(s.repairs.excluded),
             fmt(s.gate_rate, 3)] for name, s in sets]
    return [("Repairs (SPEC 1.3: near-ties between batched and serial evaluation, repaired; positions whose gate "
             "still fails after the bound are excluded one by one)", head, rows)]


def runlength_tables(report: Report) -> list[Table]:
    sets = report.ordered_sets()
    head = ["set", "closed runs", "mean L", "D", "D_geom", "D/D_geom [CI]", "with trailing runs (censored) [CI]"]
    rows = [[name, fmt(s.runlengths.n_runs), fmt(s.runlengths.mean, 2), fmt(s.runlengths.D, 2),
             fmt(s.runlengths.D_geom, 2), est(s.dispersion_ratio, 2),
             est(s.dispersion_ratio_trailing, 2) if s.dispersion_ratio_trailing is not None else MISSING] for name, s in sets]
    tables: list[Table] = [("Dispersion of closed run lengths (SPEC 3), and with each stream's trailing run counted as "
                            "a run of its length (right-censored: short streams cut the longest runs)", head, rows)]
    head = ["L"] + [f"{n} {k}" for n, _ in sets for k in ("observed", "geometric")]
    hist_rows = []
    for L in range(HIST_MAX + 1):
        label = str(L) if L < HIST_MAX else f">={HIST_MAX}"
        row = [label]
        for _, s in sets:
            rl = s.runlengths
            row += [fmt(int(_hist_bin(rl.count, L))), fmt(float(_hist_bin(rl.geom_expected, L)), 1)]
        hist_rows.append(row)
    tables.append(("Histogram of L against the geometric prediction n_runs alpha^L (1 - alpha)", head, hist_rows))
    return tables


def _hist_bin(values: Sequence[float | None], L: int) -> float:
    """values[L], or the tail sum values[L:] for the last row (L = HIST_MAX); an undefined value counts 0."""
    if L == HIST_MAX:
        return sum(v or 0 for v in values[HIST_MAX:])
    return (values[L] or 0) if L < len(values) else 0


def yield_tables(report: Report) -> list[Table]:
    sets = report.ordered_sets()
    gs = list(sets[0][1].yield_ratio)
    head = ["set"] + [f"E_true/E_iid g={g} [CI]" for g in gs]
    rows = [[name] + [est(s.yield_ratio[g]) for g in gs] for name, s in sets]
    tables: list[Table] = [("Yield ratio", head, rows)]
    head = ["set", "E_true", "E_iid", "E_shuf", "total [CI]", "hetero [CI]", "temporal [CI]",
            f"t >= {STEADY_FROM}: total = hetero + temporal [CI]"]
    rows = [[name, fmt(d.E_true), fmt(d.E_iid), fmt(d.E_shuf), est(d.total), est(d.hetero), est(d.temporal),
             deficit_cell(s.steady_state.deficit) if s.steady_state is not None else MISSING]
            for name, s in sets for d in [s.deficit]]
    tables.append((f"Yield deficit at g={report.params.gamma} (total = hetero + temporal)", head, rows))
    return tables


def optimum_tables(report: Report) -> list[Table]:
    sets = report.ordered_sets()
    rs: dict[float, set[str]] = {}
    for name, s in sets:
        for o in s.optimum:
            rs.setdefault(o.r, set())
            if o.measured:
                rs[o.r].add(name)
    head = ["r"] + [f"{n} g*_true / g*_iid" for n, _ in sets]
    rows = []
    for r in sorted(rs):
        label = f"{r:.3f}" + (" (measured)" if rs[r] else "")
        row = [label]
        for _, s in sets:
            at_r = next((o for o in s.optimum if o.r == r), None)
            row.append("" if at_r is None else f"{fmt(at_r.gamma_true)} / {fmt(at_r.gamma_iid)}")
        rows.append(row)
    return [("g*_true and g*_iid = argmax over g of E(g) / (1 + g r)", head, rows)] + cost_ratio_tables(report)


def cost_ratio_tables(report: Report) -> list[Table]:
    """The cost-ratio model at each set's r (SPEC 6: the measurement seed's convention, not a decision),
    with the roofline B* of the default preset as a labelled reference."""
    head = ["set", "r = c_draft / c_verify", "g*_true", "T (tokens per verify-cost)", "g*_iid", "i.i.d. promise (true)",
            "roofline B* (preset reference)"]
    rows = []
    ridge = None
    for name, s in report.ordered_sets():
        d = s.cost_ratio
        if d is None:
            continue
        ridge = d.ridge
        rows.append([name, fmt(d.r), fmt(d.gamma_true), fmt(d.T_true, 2), fmt(d.gamma_iid),
                     f"{fmt(d.T_iid, 2)} ({fmt(d.T_true_at_gamma_iid, 2)})", fmt(d.roofline_B_star, 0)])
    if not rows:
        return []
    return [(f"Cost-ratio model T = E(g) / (1 + g r), r = c_draft / c_verify (how the optimum moves with r; not a "
             f"decision); roofline B* = I*/(g+1) at the preset ridge I* = {fmt(ridge, 0)} FLOP/byte", head, rows)]


def depth_tables(report: Report) -> list[Table]:
    tables: list[Table] = []
    for name, s in report.ordered_sets():
        d = s.depth
        head = ["j", "P(j accepted | 1..j-1) [CI]", "i.i.d. alpha", "P(accepted >= j) [CI]", "i.i.d. alpha^j", "blocks"]
        rows = [[str(j + 1), est(d.conditional[j]), fmt(d.conditional_iid[j]), est(d.unconditional[j]),
                 fmt(d.unconditional_iid[j]), fmt(d.blocks[j])]
                for j in range(d.gamma)]
        tables.append((f"{name}, g={d.gamma}", head, rows))
    return tables


def position_tables(report: Report) -> list[Table]:
    """Bins (rows) x sets (columns): alpha [CI] at positions t of the bin, then the warm-up gain."""
    sets = [(name, s.position) for name, s in report.ordered_sets() if s.position is not None]
    if not sets:
        return []
    width = sets[0][1].bin_width
    n_bins = max(len(p.bins) for _, p in sets)
    head = ["t"] + [name for name, _ in sets]
    rows = [[f"{k * width}-{(k + 1) * width - 1}"] + [est(p.bins[k].alpha, 2) if k < len(p.bins) else MISSING for _, p in sets]
            for k in range(n_bins)]
    rows.append([f"warm-up gain: mean over streams of alpha_s(t >= {WARMUP_LATE}) - alpha_s(t < {WARMUP_EARLY})"]
                + [est(p.warmup_gain, 3, 2, sign=True) for _, p in sets])
    rows.append([f"streams reaching t = {WARMUP_LATE} (the gain's)"] + [fmt(p.warmup_streams) for _, p in sets])
    return [(f"alpha by position t in y, bins of {width}, over the streams that reach the bin", head, rows)]


def sampling_tables(report: Report) -> list[Table]:
    """Per set: alpha beside beta_bar, E_iid(beta_bar, g), the lag-1 autocorrelation of beta."""
    sets = [(name, s, s.sampling) for name, s in report.ordered_sets() if s.sampling is not None]
    if not sets:
        return []
    gs = list(sets[0][2].E_iid_beta)
    head = (["set", "alpha", "beta_bar [CI]"] + [f"E_iid(beta_bar, {g}) [CI]" for g in gs]
            + ["beta lag-1 autocorr [CI]", "streams with beta"])
    rows = [[name, fmt(s.alpha, 3), est(smp.beta_bar)] + [est(smp.E_iid_beta[g], 2) for g in gs]
            + [est(smp.beta_autocorr, sign=True), fmt(smp.streams)] for name, s, smp in sets]
    return [(f"Sampling acceptance beta = 1 - TV(p, q) (temperature 1) {BETA_ALONG}, beside greedy alpha", head, rows)]


def _params(p: Any) -> str:
    """A policy's parameters as `k=v, ...` ("-" for a policy without parameters)."""
    if isinstance(p, dict):
        return ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in p.items()) or "-"
    return "-" if p is None else str(p)


def policy_tables(report: Report) -> list[Table]:
    from specterm.core.decide.costmodel import r_or_default  # here: costmodel imports numpy, the Overview's tables need none

    tables: list[Table] = []
    for name, s in report.ordered_sets():
        if not s.policies:
            continue
        head = ["policy", "params", "tokens/block", "drafted/block", "T [CI]", "vs best fixed [CI]", "vs clairvoyant [CI]"]
        rows = [[p.policy, _params(p.params), fmt(p.tokens_per_block, 2), fmt(p.drafted_per_block, 2),
                 est(p.throughput), est(p.vs_best_fixed), est(p.vs_clairvoyant)] for p in s.policies]
        r = r_or_default(s.r_measured)
        tables.append((f"{name}, r={fmt(r) if s.r_measured is not None else f'{r} (default)'}", head, rows))
    return tables


def decide_tables(report: Report) -> list[Table]:
    """The decision of the shown cost profile (one table, first), every profile's decision side by side,
    then S_hw by batch, then the confirmations."""
    out = [t for t in (decision_table(report), profile_table(report), batch_table(report), confirmation_table(report),
                       confirmation_history_table(report)) if t is not None]
    return out


def shown_machine(report: Report) -> str | None:
    """The machine and engine of the shown decision's costs (one label, or several joined by "; ")."""
    labels = list(dict.fromkeys(s.decision_hw.machine for _, s in report.ordered_sets()
                                if s.decision_hw is not None and s.decision_hw.machine))
    return "; ".join(labels) if labels else None


def context_line(report: Report) -> str:
    """Which runs, engines and machine a report or an export shows: "runs: NAME (torch, 80 prompts);
    costs: AMD EPYC, 1 thread, torch float32 (this machine)"."""
    runs = ", ".join(f"{r.name} ({r.engine or MISSING}, {r.n_streams} prompt{'s' if r.n_streams != 1 else ''})"
                     for r in report.runs)
    machine = shown_machine(report)
    if machine is None:
        costs = "costs: not measured"
    else:
        here = [s.decision_hw.matches_this_machine for _, s in report.ordered_sets()
                if s.decision_hw is not None and s.decision_hw.machine]
        costs = f"costs: {machine}" + (" (this machine)" if here and all(here) else " (not this machine)")
    return f"runs: {runs}; {costs}"


def profile_table(report: Report) -> Table | None:
    """Every cost profile's decision side by side (SPEC 6: a decision per profile), per set: machine,
    g_hw, S_hw [95% CI], verdict, and the realized speedup at g_hw of that profile's newest confirmation."""
    if len(report.profiles) < 2 and not report.profile_note:
        return None
    labels = {p["id"]: p for p in report.profiles}
    head = ["set", "machine (cost profile)", "g_hw", "S_hw [95% CI]", "verdict", "realized at g_hw"]
    rows = []
    for name, s in report.ordered_sets():
        for pid, d in s.decision_by_profile.items():
            prof = labels.get(pid, {})
            tags = [t for t, on in (("shown", d is s.decision_hw or pid == (s.decision_hw.profile if s.decision_hw else None)),
                                    ("this machine", prof.get("matches_this_machine")), ("busy", prof.get("busy"))) if on]
            when = str(prof.get("measured_at") or "")[:10]
            machine = f"{d.machine or prof.get('label') or pid} [{pid}{', ' + when if when else ''}]"
            c = d.confirmed_at(d.gamma_hw)
            rows.append([name, machine + (f" ({', '.join(tags)})" if tags else ""), fmt(d.gamma_hw),
                         _x_ci(d.speedup_hw, d.speedup_hw_ci), verdict_words(d),
                         MISSING if c is None else _x(c.realized)])
    if not rows:
        return None
    title = ("Decision by machine (every cost profile of the run; each CI covers prompts and that profile's cost "
             "samples, not another machine)")
    if report.profile_note:
        title += f". {report.profile_note}"
    elif (why := shown_among(report)):
        title += f". {why}"
    return title, head, rows


def shown_among(report: Report) -> str | None:
    """Why one profile is shown where several are this machine's (SPEC 6: the newest matching one),
    or None where at most one matches: "Shown: the newest of the 2 profiles of this machine (2026-12-05);
    the others decide only where they are shown"."""
    here = [p for p in report.profiles if p.get("matches_this_machine")]
    if len(here) < 2:
        return None
    shown_ids = {r.shown_profile for r in report.runs if r.shown_profile}
    newest = next((p for p in here if p.get("id") in shown_ids), None)
    if newest is None:
        return None
    when = str(newest.get("measured_at") or "")[:10]
    return (f"Shown: the newest of the {len(here)} profiles of this machine ({newest.get('id')}"
            f"{', ' + when if when else ''}); the older ones are listed, not used")


def _x(value: Any) -> str:
    return MISSING if value is None else f"{fmt(value, 2)}x"


def _x_ci(value: Any, ci_: Any) -> str:
    lo, hi = (ci_ or [None, None])[:2]
    return MISSING if value is None else f"{fmt(value, 2)}x [{fmt(lo, 2)}, {fmt(hi, 2)}]"


VERDICT_WORDS = {"speculate": "speculate", "do_not_speculate": "do not speculate", "no_reliable_gain": "no reliable gain",
                 "too_few_prompts": "too few prompts"}
NO_VERDICT = "none: costs not measured"


def verdict_words(d: Any) -> str:
    """A decision's verdict in words (a table's narrow column): VERDICT_WORDS of its kind; "too few
    prompts" below the minimum (the verdict sentence beside it says "(n = K in a corpus; needs M per corpus)"); a kind
    without words of its own with its underscores as spaces; none without measured costs (SPEC 6:
    the memory-bound reference is a reference, never a verdict of its own)."""
    if not d.measured:
        return NO_VERDICT
    kind = d.verdict_kind or ""
    return VERDICT_WORDS.get(kind) or (kind.replace("_", " ") if kind else MISSING)


def decision_table(report: Report) -> Table | None:
    """SPEC 6's one decision table: per set g_hw, S_hw(g_hw) [95% CI], the three-way verdict, the
    break-even v* beside the measured c_verify(g_hw) / c_decode, and the memory-bound reference as a
    labelled column; the verdict sentence last."""
    machine = shown_machine(report)
    where = machine or "this hardware"
    head = ["set", "g_hw", "S_hw [95% CI]", "verdict", "break-even v* (verify here)",
            "memory-bound ref. (verify = 1 decode step)", "verdict (machine of the costs)"]
    rows, clocks = [], set()
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None:
            continue
        if d.clock:
            clocks.add(d.clock)
        be = MISSING if d.break_even_verify is None else f"{fmt(d.break_even_verify, 2)} ({fmt(d.verify_steps, 2)})"
        mb = MISSING if d.gamma_mb is None else f"g={d.gamma_mb}: {_x_ci(d.speedup_mb, d.speedup_mb_ci)}"
        rows.append([name, fmt(d.gamma_hw), _x_ci(d.speedup_hw, d.speedup_hw_ci),
                     verdict_words(d), be, mb, d.verdict])
    if not rows:
        return None
    clock = f", costs on the {'/'.join(sorted(clocks))} clock" if clocks else ""
    if any(s.decision_hw is not None and "c_draft_fwd" in s.decision_hw.curve_hw for _, s in report.ordered_sets()):
        return (f"Decision on {where}: S_hw = E c_decode / (c_verify(g) + g c_draft + c_draft_fwd(g)), the engine's "
                f"block cost (c_draft_fwd: its per-block (g+1)-token draft forward), 95% CI over prompts and this "
                f"profile's cost samples{clock}; v* = E - (g c_draft + c_draft_fwd(g)) / c_decode decode steps", head, rows)
    return (f"Decision on {where}: S_hw = E c_decode / (c_verify(g) + g c_draft), 95% CI over prompts and "
            f"this profile's cost samples{clock}; v* = E - g c_draft / c_decode decode steps", head, rows)


def batch_table(report: Report) -> Table | None:
    """S_hw(g_hw(B), B) [95% CI] per measured batch B and the measured crossover B_hw, per set."""
    batches = sorted({r["batch"] for _, s in report.ordered_sets() if s.decision_hw for r in s.decision_hw.by_batch})
    if not batches:
        return None
    head = ["set"] + [f"B={B}: g, S_hw [CI]" for B in batches] + ["B_hw (measured)", "roofline B* (preset reference)"]
    rows = []
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None or not d.by_batch:
            continue
        by = {r["batch"]: r for r in d.by_batch}
        cells = []
        for B in batches:
            r = by.get(B)
            cells.append(MISSING if r is None else f"g={r['gamma_hw']}: {_x_ci(r['speedup_hw']['value'], r['speedup_hw']['ci'])}")
        roof = d.roofline_reference or {}
        ref = MISSING if not roof else f"{fmt(roof.get('B_star'), 0)} ({roof.get('preset')}, g={roof.get('gamma')})"
        rows.append([name, *cells, d.batch_crossover_text or MISSING if d.batch_crossover is None else str(d.batch_crossover), ref])
    fits = [s.decision_hw.batch_fit for _, s in report.ordered_sets() if s.decision_hw and s.decision_hw.batch_fit]
    if fits and "engine_term" in fits[0]:
        return ("S_hw by batch on this device: S_hw(g, B) = E c_decode(B) / (c_verify(g, B) + g c_draft(B) + "
                "c_draft_fwd(g, B)), the engine's block; B_hw = largest measured B whose CI lies above 1"
                + _batch_fit_note(fits[0]), head, rows)
    return ("S_hw by batch on this device: S_hw(g, B) = E c_decode(B) / (c_verify(g, B) + g c_draft(B)); "
            "B_hw = largest measured B whose CI lies above 1" + (_batch_fit_note(fits[0]) if fits else ""), head, rows)


def _batch_fit_note(fit: dict[str, Any]) -> str:
    """How c_verify(g, B) was filled in, its error on the held-back points and the measurement's wall time."""
    held = ", ".join(f"B={h['batch']} g={h['gamma']} {h['error_pct']:+.1f}%" for h in fit.get("held_back") or [])
    wall, upfront = fit.get("whole_wall_s") or fit.get("wall_s"), fit.get("upfront_wall_s")
    timed, grid = fit.get("timed_points"), fit.get("grid_points")
    how = ("; every c_verify(g, B) timed" if timed is not None and timed == grid else
           f"; c_verify(g, B) timed at {timed} of {grid} points, the rest interpolated in tokens per forward B (g+1)"
           if timed is not None else "; c_verify(g, B) interpolated in tokens per forward B (g+1) between timed forwards")
    return (how + (f" (error at held-back points: {held})" if held else "")
            + (f"; cost measurement {fmt(wall, 0)} s wall" if isinstance(wall, (int, float)) else "")
            + (f" ({fmt(upfront, 0)} s before the first generation)" if isinstance(upfront, (int, float)) else ""))


def confirmation_table(report: Report) -> Table | None:
    """Per set and confirmed g: the cost-model check (realized / predicted at this session's costs: the forwards
    timed in the generations, and the micro-benchmark's) and the decision check (leave-out E, the run's costs, 95% PI)."""
    head = ["set", "g", "prompts", "realized", "cost-model check: real / pred at in-generation costs",
            "real / pred at micro-benchmark costs (CPU; no prefill)", "decision predicts [95% PI]", "in PI", "sign held",
            "cost drift % (decode, verify, draft)", "with this session's costs", "context timed / costs"]
    rows = []
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None:
            continue
        for c in d.confirmed:
            dp = c.decision_predicted
            drift = c.cost_drift_pct or {}
            parts = [fmt(drift.get(k), 0, sign=True) for k in ("c_decode", "c_verify", "c_draft")]
            if "c_draft_fwd" in drift:  # a llama.cpp record: the engine term's drift too
                parts.append("draft fwd " + fmt(drift["c_draft_fwd"], 0, sign=True))
            dr = MISSING if not drift else ", ".join(parts)
            ctx = f"{fmt(c.timed_context, 0)} / {fmt(c.cost_context, 0)} (run {fmt(c.run_cost_context, 0)})"
            extra = [f"{k} {fmt(v, 2)}" for k, v in (("CPU", c.ratio_cpu), ("no prefill", c.ratio_steady)) if v is not None]
            check = fmt(c.ratio, 2) + (f" ({'; '.join(extra)})" if extra else "")
            rows.append([name, str(c.gamma), str(c.prompts), _x(c.realized), fmt(c.ratio_insitu, 2), check,
                         MISSING if dp is None else _x_ci(dp.value, dp.ci), YES[c.in_ci], YES[c.sign_held], dr,
                         _x(c.predicted_session_costs), ctx])
        for b in d.confirmed_batch:
            rows.append([name, f"{b.get('gamma')} (B={b.get('batch')})", str(len(b.get("ids", []))), _x(b.get("realized")),
                         fmt(b.get("ratio_insitu"), 2), fmt(b.get("ratio"), 2), *[MISSING] * 6])
    if not rows:
        return None
    return ("Confirmations (`specterm confirm`): realized = greedy time / speculative time, same prompts, alternating",
            head, rows)


def confirmation_history_table(report: Report) -> Table | None:
    """Every confirmation of every cost profile (SPEC 6: confirmations belong to the profile they ran on),
    oldest first: machine, date, g, realized, and the decision check against that profile's costs."""
    head = ["set", "machine (cost profile)", "date", "g", "prompts", "realized", "decision predicts [95% PI]", "in PI",
            "sign held"]
    rows = []
    for name, s in report.ordered_sets():
        for pid, d in s.decision_by_profile.items():
            for c in d.confirmed_history:
                dp = c.decision_predicted
                rows.append([name, f"{d.machine or pid} [{pid}]", str(c.date or MISSING)[:16], str(c.gamma), str(c.prompts),
                             _x(c.realized), MISSING if dp is None else _x_ci(dp.value, dp.ci), YES[c.in_ci],
                             YES[c.sign_held]])
    if not rows:
        return None
    return ("Every confirmation, by the machine it ran on (the decision check uses that machine's cost profile)",
            head, rows)


def scorecard_tables(report: Report) -> list[Table]:
    """One table per seed: the measurement seed's P rows, then the economics seed's Q rows."""
    titles = {MEASUREMENT: "P1-P5, computed from the numbers above", ECONOMICS: f"the {SEEDS[ECONOMICS]}'s claims, computed from the numbers above"}
    whats = {MEASUREMENT: "prediction", ECONOMICS: "claim"}
    tables: list[Table] = []
    for seed, title in titles.items():
        entries = [p for p in report.scorecard if p.seed == seed]
        if seed == ECONOMICS and entries:
            title = f"{entries[0].id}-{entries[-1].id}, {title}"
        rows = [[p.id, p.prediction, verdict_cell(p), p.direction, p.size, p.seed_size or MISSING, p.evidence] for p in entries]
        if rows:
            tables.append((title, ["id", whats[seed], "verdict", "direction", "size", "seed's size", "evidence"], rows))
    return tables


def verdict_cell(row: Any) -> str:
    """The verdict, with "(borderline)" when it differs across bootstrap seeds 0..4."""
    return f"{row.verdict} (borderline)" if getattr(row, "borderline", False) else row.verdict


BUILDERS = {
    "overview": overview_tables,
    "runlengths": runlength_tables,
    "yield": yield_tables,
    "optimum": optimum_tables,
    "depth": depth_tables,
    "position": position_tables,
    "sampling": sampling_tables,
    "policies": policy_tables,
    "decide": decide_tables,
    "settings": settings_tables,
    "scorecard": scorecard_tables,
}


def tables(report: Report) -> dict[str, list[Table]]:
    """Every section's tables as (title, header, rows) of strings."""
    return {section: BUILDERS[section](report) for section in SECTIONS}


# --------------------------------------------------------------------- rendering ---


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: Iterable[list[str]]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def markdown_tables(report: Report) -> dict[str, str]:
    """GitHub-flavoured markdown per section (a section may hold several tables, each titled in bold)."""
    out = {}
    for section, tbls in tables(report).items():
        out[section] = "\n\n".join(f"**{title}**\n\n{markdown_table(h, rows)}" for title, h, rows in tbls) if tbls else "_none_"
    return out


def _params_line(report: Report) -> str:
    """The parameters, shuffles < 0 written "exact" (the deficit split's exact expectation, params.EXACT)."""
    return ", ".join(f"{k}={'exact' if k == 'shuffles' and isinstance(v, int) and v < 0 else v}"
                     for k, v in report.params.to_dict().items())


def to_markdown(report: Report) -> str:
    md = markdown_tables(report)
    parts = ["# specterm report", "", _cell(context_line(report)), "", _params_line(report)]
    if report.profile_note:
        parts += ["", f"**{_cell(report.profile_note)}**"]
    for section in SECTIONS:
        parts += ["", f"## {TITLES[section]}", "", md[section]]
    return "\n".join(parts) + "\n"


def to_json(report: Report) -> str:
    """The SPEC 7 JSON: `report.to_dict()`, strict (no NaN)."""
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def to_text(report: Report) -> str:
    parts = ["specterm report", context_line(report), _params_line(report)]
    if report.profile_note:
        parts.append(report.profile_note)
    for section, tbls in tables(report).items():
        parts += ["", TITLES[section].upper()]
        if not tbls:
            parts.append("(none)")
        for title, h, rows in tbls:
            parts += ["", title, text_table(h, rows)]
    return "\n".join(parts) + "\n"
