"""Headless export of a report (analysis.analyse): GitHub markdown tables, JSON, plain text.

Tables are built once as (title, header, rows) and rendered as markdown or as aligned plain text.
Cells follow the published style (numbers through core/fmt.py, the one number formatter): a value
then its 95% CI in brackets, e.g. `+0.233 [0.19, 0.27]`,
and the deficit as `total = hetero + temporal [CI of temporal]`, e.g. `0.064 = 0.016 + 0.048 [0.030, 0.063]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from specterm.core.costmodel import r_or_default
from specterm.core.fmt import MISSING, ci, est, fmt
from specterm.core.report import ECONOMICS, MEASUREMENT, SEEDS, ConfirmedRow, Decision, DecisionHW, Deficit, Report

SECTIONS = ("overview", "runlengths", "yield", "optimum", "depth", "position", "sampling", "policies", "decide", "scorecard")
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
    "scorecard": "Scorecard",
}
HIST_MAX = 16  # run-length histogram rows L = 0..15, then one row for L >= 16

Table = tuple[str, list[str], list[list[str]]]


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


def _cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


# ------------------------------------------------------------------------ tables ---


def overview_tables(report: Report) -> list[Table]:
    g = report.params.gamma
    sets = report.ordered_sets()
    head = ["set", "streams", "positions", "alpha", "gate", "p11-p10 [CI]", "D/D_geom",
            f"deficit at g={g}: total = hetero + temporal [CI]"]
    rows = [[name, fmt(s.n_streams), fmt(s.n_positions), fmt(s.alpha, 2), fmt(s.gate_rate, 3),
             est(s.autocorr, 3, 2, sign=True), est(s.dispersion_ratio, 1, 2, suffix="x"), deficit_cell(s.deficit)]
            for name, s in sets]
    tables: list[Table] = [("Headline numbers", head, rows)]
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


def runlength_tables(report: Report) -> list[Table]:
    sets = report.ordered_sets()
    head = ["set", "closed runs", "mean L", "D", "D_geom", "D/D_geom [CI]"]
    rows = [[name, fmt(s.runlengths.n_runs), fmt(s.runlengths.mean, 2), fmt(s.runlengths.D, 2),
             fmt(s.runlengths.D_geom, 2), est(s.dispersion_ratio, 2)] for name, s in sets]
    tables: list[Table] = [("Dispersion of closed run lengths", head, rows)]
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
    head = ["set", "E_true", "E_iid", "E_shuf", "total [CI]", "hetero [CI]", "temporal [CI]"]
    rows = [[name, fmt(d.E_true), fmt(d.E_iid), fmt(d.E_shuf), est(d.total), est(d.hetero), est(d.temporal)]
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
    return [("g*_true and g*_iid = argmax over g of E(g) / (1 + g r)", head, rows)]


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
    rows.append(["warm-up gain alpha(t >= 32) - alpha(t < 16)"] + [est(p.warmup_gain, 3, 2, sign=True) for _, p in sets])
    rows.append(["streams reaching t = 32 (the gain's)"] + [fmt(p.warmup_streams) for _, p in sets])
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
    return [("Sampling acceptance beta = 1 - TV(p, q) (temperature 1) beside greedy alpha", head, rows)]


def _params(p: Any) -> str:
    """A policy's parameters as `k=v, ...` ("-" for a policy without parameters)."""
    if isinstance(p, dict):
        return ", ".join(f"{k}={fmt(v) if isinstance(v, float) else v}" for k, v in p.items()) or "-"
    return "-" if p is None else str(p)


def policy_tables(report: Report) -> list[Table]:
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


def decide_tables(report: Report, decisions: Mapping[str, Decision] | None = None,
                  setting: str | None = None) -> list[Table]:
    """The decision per set (memory-bound model), then the decision on this hardware.

    `decisions` (set name -> Decision) replace each set's report.decide: the Decide screen's `e`
    passes the ones it shows (its r and accelerator), and `setting` names them in the title, so one
    export holds one accelerator and one r throughout."""
    head = ["set", "r", "g_true", "speedup", "g_iid", "i.i.d. promise (true)", "stop above batch", "verdict"]
    rows = []
    for name, s in report.ordered_sets():
        d = s.decide if decisions is None else decisions.get(name)
        if d is None:
            continue
        promise = f"{fmt(d.speedup_iid, 2)}x ({fmt(d.speedup_true_at_gamma_iid, 2)}x)"
        rows.append([name, fmt(d.r), fmt(d.gamma_true), f"{fmt(d.speedup_true, 2)}x",
                     fmt(d.gamma_iid), promise, fmt(d.batch_crossover, 0), d.verdict])
    where = f", {setting}" if setting else ""
    out = [(f"Speculate or not, per set{where} (memory-bound model: verify = one decode step)", head, rows)] if rows else []
    hw = hardware_table(report)
    return out + ([hw] if hw is not None else [])


def _g_speedup(g: int | None, s: float | None) -> str:
    return MISSING if g is None or s is None else f"g={g}: {fmt(s, 2)}x"


def confirmed_cells(d: DecisionHW) -> list[str]:
    """realized (wall) | realized / predicted (SPEC 6; refeed) | realized CPU | outputs, at the
    confirmed g = g_hw when it was timed, else the first confirmed g; n/a when never confirmed."""
    row: ConfirmedRow | None = d.confirmed_at(d.gamma_hw) or (d.confirmed[0] if d.confirmed else None)
    if row is None:
        return [MISSING, MISSING, MISSING, MISSING]
    ratio = f"{fmt(row.ratio, 2)} (refeed {fmt(row.ratio_refeed, 2)})"
    cpu = MISSING if row.realized_cpu is None else f"{fmt(row.realized_cpu, 2)}x ({fmt(row.ratio_cpu, 2)})"
    n = f"{row.prompts} prompt" + ("s" if row.prompts != 1 else "")
    return [f"g={row.gamma}: {fmt(row.realized, 2)}x ({n})", ratio, cpu,
            "identical" if row.identical else "DIFFER"]


def hardware_table(report: Report) -> Table | None:
    """Decision on this hardware (SPEC 6 measured costs): memory-bound model, S_hw, the refeed model,
    and what `specterm confirm` realized, per set."""
    head = ["set", "memory-bound (verify = 1 decode step)", "S_hw (this hardware)", "refeed model", "realized (wall)",
            "realized / predicted (refeed)", "realized CPU (/ predicted)", "outputs", "verdict on this hardware"]
    rows, clocks = [], set()
    for name, s in report.ordered_sets():
        d = s.decision_hw
        if d is None:
            continue
        if d.clock:
            clocks.add(d.clock)
        rows.append([name, _g_speedup(d.gamma_mb, d.speedup_mb), _g_speedup(d.gamma_hw, d.speedup_hw),
                     _g_speedup(d.gamma_hw_refeed, d.speedup_hw_refeed), *confirmed_cells(d), d.verdict])
    if not rows:
        return None
    clock = f", costs on the {'/'.join(sorted(clocks))} clock" if clocks else ""
    return (f"Decision on this hardware: S_hw = E c_decode / (c_verify(g) + g c_draft){clock}", head, rows)


def scorecard_tables(report: Report) -> list[Table]:
    """One table per seed: the measurement seed's P rows, then the economics seed's Q rows."""
    titles = {MEASUREMENT: ("P1-P5, computed from the numbers above", "prediction"),
              ECONOMICS: (f"Q1-Q4, the {SEEDS[ECONOMICS]}'s claims, computed from the numbers above", "claim")}
    tables: list[Table] = []
    for seed, (title, what) in titles.items():
        rows = [[p.id, p.prediction, p.verdict, p.evidence] for p in report.scorecard if p.seed == seed]
        if rows:
            tables.append((title, ["id", what, "verdict", "evidence"], rows))
    return tables


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
    return ", ".join(f"{k}={v}" for k, v in report.params.to_dict().items())


def to_markdown(report: Report) -> str:
    md = markdown_tables(report)
    parts = ["# specterm report", "", _params_line(report)]
    for section in SECTIONS:
        parts += ["", f"## {TITLES[section]}", "", md[section]]
    return "\n".join(parts) + "\n"


def to_json(report: Report) -> str:
    """The SPEC 7 JSON: `report.to_dict()`, strict (no NaN)."""
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def to_text(report: Report) -> str:
    parts = ["specterm report", _params_line(report)]
    for section, tbls in tables(report).items():
        parts += ["", TITLES[section].upper()]
        if not tbls:
            parts.append("(none)")
        for title, h, rows in tbls:
            parts += ["", title, text_table(h, rows)]
    return "\n".join(parts) + "\n"
