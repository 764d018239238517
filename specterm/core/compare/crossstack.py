"""The cross-stack check: the same draft/target pair and prompts measured in two engines (e.g. torch
float32 and llama.cpp on the quantized GGUF), side by side. Pure: runs in, tables out.

Per corpus (prompts matched by (corpus, id)):

- the same positions (core/compare/sameposition.py): alpha and E_true(g) of both engines on the positions
  both keep for the same prompt, at two levels ("kept by both": same prompt, same absolute position,
  kept in both runs; "same context": also the same y up to and including t), with their counts per
  corpus and pooled and the alpha difference's bootstrap interval over prompts;
- each run on its own positions (labelled so: not a same-position comparison): alpha over each run's
  kept positions (pooled, `Stream.kept`), gate rates, and how many prompts have the same y in both runs
  (token identity; the first divergence otherwise);
- tokens per target call at each g: the block walk (SPEC 2, E_true = tokens / blocks) on each run's
  kept bits, and what a real speculative decoder measured (a confirmation record that kept per-block
  accepted counts: sum tokens / sum target calls) against the walk on the same engine's bits over
  EVERY timed prompt, whether or not its output equalled the stored y; beside it the real decoder's
  own flips (prompts whose output differs from y, the median first mismatch);
- the accepted-run histogram at g (blocks with K = 0..g accepted drafts) of the real decoder, the
  walk on run B's bits and the walk on run A's bits over the same prompts, with a two-sample test
  (equivalence.histogram_test);
- the decision on this hardware in each run and its confirmations' decision checks, read from the
  run's report (core.analysis: hardware.decision_hw and hardware.decision_check, the one
  implementation of SPEC 6's decision and decision check; with the engine's block cost for a run
  whose costs carry one, costmodel), at the report's defaults (2000 replicates, seed 0).

The comparison that decides (core/claims/equivalence.py): per corpus and g, tokens per target call of the real
decoder against the walk on the same engine's bits over the same (every timed) prompts, paired over
prompts, with a 95% interval and a two one-sided test against a +-5% margin: "equivalent within 5%",
"different", or "not shown equivalent (the data can rule out only differences above X%)".

The histogram test (core/claims/equivalence.py: `histogram_test`) stays as a descriptive line, with its power
against the difference seen: "no difference detected" by a test of low power is not agreement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from specterm.core.streams.blockwalk import block_accepts, block_counts
from specterm.core.errors import SpectermError
from specterm.core.report.fmt import MISSING
from specterm.core.decide.hardware import CONFIRMATIONS_KEY, cost_curve
from specterm.core.claims.equivalence import (
    EQUIVALENCE_MARGIN,
    MIN_COLUMN,
    HistTest,
    chi2_power,
    histogram_test,
    paired_tokens_per_call,
)
from specterm.core.decide.hardware.profiles import run_engine
from specterm.core.params import BOOT, SEED
from specterm.core.compare.sameposition import first_divergence, same_positions
from specterm.core.store import Run, Stream

HIST_GAMMAS = (1, 4, 8)


def histogram(ks: npt.NDArray[np.int64], gamma: int) -> list[int]:
    """Blocks with K = 0..gamma accepted drafts."""
    counts = np.bincount(np.asarray(ks, dtype=np.int64), minlength=gamma + 1)[: gamma + 1]
    return [int(c) for c in counts]


def pooled_alpha(streams: Sequence[Stream]) -> float | None:
    """sum a / n over the kept positions of the streams (SPEC 2's alpha; a = bits[kept])."""
    n = sum(s.valid_len for s in streams)
    return float(sum(int(s.a.sum()) for s in streams)) / n if n else None


def walk_tokens_per_call(streams: Sequence[Stream], gamma: int, every_position: bool = False) -> float | None:
    """E_true(g) = sum tokens / sum blocks of the walk over the streams' analysed bits (bits[kept]), or
    over every position with `every_position` (gate ignored)."""
    tok = blk = 0
    for s in streams:
        bits = s.bits if every_position else s.a
        if bits.size:
            t, b, _ = block_counts(bits, gamma)
            tok += int(t)
            blk += int(b)
    return tok / blk if blk else None


def real_flips(sp: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The real decoder's own flips over its timed prompts (confirmation spec rows): how many outputs
    differ from the stored y, and the median first mismatch (token index) among those."""
    differ = [x for x in sp if not x.get("identical", True)]
    at = [int(x["first_mismatch"]) for x in differ if x.get("first_mismatch") is not None]
    return {"real_differ": len(differ), "real_first_mismatch_median": float(np.median(at)) if at else None}


def confirmation_prompts(run: Run, engine: str | None) -> list[dict[str, Any]]:
    """Per-prompt rows of the run's complete-or-latest confirmation records of `engine` ("llama.cpp",
    or None for records without an engine key, i.e. torch), newest record first per (corpus, id)."""
    records = run.meta.get(CONFIRMATIONS_KEY) or []
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for rec in reversed(records if isinstance(records, list) else []):
        if not isinstance(rec, dict) or rec.get("engine") != engine:
            continue
        for row in rec.get("prompts") or []:
            key = (row.get("corpus"), row.get("id"))
            if key not in seen:
                seen.add(key)
                out.append({**row, "_record_date": rec.get("date"), "_cost": rec.get("cost")})
    return out


def run_decisions(run: Run, boot: int = BOOT, seed: int = SEED) -> dict[str, dict[str, Any]]:
    """Per corpus of a run: its decision on this hardware and its confirmations with their decision
    checks, exactly as `specterm report` computes them (core.analysis: hardware.decision_hw with the
    run's stored costs and the prompt x cost bootstrap, hardware.decision_check per confirmed row:
    leave-out E, the run's costs, the 95% prediction interval for K prompts, in_ci, sign_held, cost
    drift). {corpus: {"measured": False}} for a run without measured costs (nothing to decide)."""
    from specterm.core.report.analysis import analyse

    corpora = sorted({s.corpus for s in run.streams})
    if cost_curve(run.meta.get("cost")) is None:
        return {c: {"measured": False} for c in corpora}
    rep = analyse([run], boot=boot, seed=seed)
    out: dict[str, dict[str, Any]] = {}
    for name in corpora:
        d = rep.sets[name].decision_hw
        if d is None or not d.measured:
            out[name] = {"measured": False}
            continue
        rows = []
        for c in d.confirmed:
            dp = c.decision_predicted
            rows.append({"gamma": c.gamma, "realized": c.realized, "prompts": c.prompts, "identical": c.identical,
                         "tokens_per_call": c.tokens_per_call, "predicted": c.predicted,
                         "decision_predicted": None if dp is None else {"value": dp.value, "ci": list(dp.ci)},
                         "in_ci": c.in_ci, "sign_held": c.sign_held, "K": c.K, "cost_drift_pct": c.cost_drift_pct})
        out[name] = {"measured": True, "gamma_hw": d.gamma_hw, "speedup_hw": d.speedup_hw,
                     "speedup_hw_ci": list(d.speedup_hw_ci), "verdict_kind": d.verdict_kind, "verdict": d.verdict,
                     "clock": d.clock, "confirmed": rows}
    return out


def check_comparable(run_a: Run, run_b: Run) -> None:
    """Refuse, in one sentence, a cross-stack comparison that would compare nothing: runs of different
    model pairs (models named by their file's sha256 where known: store.model_key), runs of the same
    engine (hardware.profiles.run_engine), or runs without a prompt in common (by corpus and id)."""
    from specterm.core.store import model_key, model_label

    for role in ("target", "draft"):
        ka, kb = model_key(run_a.meta.get(role)), model_key(run_b.meta.get(role))
        if ka is None or kb is None or ka != kb:
            raise SpectermError(f"{run_a.name} and {run_b.name} were run with different {role} models "
                                f"({model_label(run_a.meta.get(role))} vs {model_label(run_b.meta.get(role))}); "
                                "compare runs of the same model pair.")
    if run_engine(run_a.meta) == run_engine(run_b.meta):
        raise SpectermError(f"{run_a.name} and {run_b.name} both come from {run_engine(run_a.meta)}; compare runs of two "
                            "different engines (e.g. torch and llama.cpp).")
    a = {(s.corpus, s.id) for s in run_a.streams}
    if not any((s.corpus, s.id) in a for s in run_b.streams):
        raise SpectermError(f"{run_a.name} and {run_b.name} have no prompt in common (by corpus and id); run both "
                            "engines on the same prompts.")


def cross_stack(run_a: Run, run_b: Run, gammas: Sequence[int] = HIST_GAMMAS,
                engine_a: str | None = None, engine_b: str | None = None) -> dict[str, Any]:
    """The side-by-side comparison of the module docstring; run A is the reference (e.g. torch),
    run B the other engine (e.g. llama.cpp, whose confirmations hold the real decoder's blocks).
    Per corpus: "same_positions" (both engines on the same positions, `same_positions`), the "_own"
    columns (each run on its own kept positions), "by_gamma" (the real decoder over every timed prompt);
    "same_positions_pooled" over every prompt in both runs.
    The engines' labels are each run's recorded backend (hardware.profiles.run_engine) unless given."""
    engine_a = engine_a or run_engine(run_a.meta)
    engine_b = engine_b or run_engine(run_b.meta)
    a_by = {(s.corpus, s.id): s for s in run_a.streams}
    b_by = {(s.corpus, s.id): s for s in run_b.streams}
    shared = sorted(set(a_by) & set(b_by))
    real = {(r["corpus"], r["id"]): r for r in confirmation_prompts(run_b, None if engine_b == "torch" else engine_b)}
    dec_a, dec_b = run_decisions(run_a), run_decisions(run_b)
    corpora: dict[str, Any] = {}
    for name in sorted({c for c, _ in shared}):
        keys = [k for k in shared if k[0] == name]
        sa = [a_by[k] for k in keys]
        sb = [b_by[k] for k in keys]
        div = [first_divergence(a_by[k].y, b_by[k].y) for k in keys]
        entry: dict[str, Any] = {
            "prompts": len(keys),
            "prompts_only_a": sum(1 for k in a_by if k[0] == name and k not in b_by),
            "prompts_only_b": sum(1 for k in b_by if k[0] == name and k not in a_by),
            "same_positions": same_positions(list(zip(sa, sb)), gammas),
            # each run on its own kept positions (not a same-position comparison)
            "alpha_a_own": pooled_alpha(sa), "alpha_b_own": pooled_alpha(sb),
            "alpha_b_all": float(sum(int(s.bits.sum()) for s in sb)) / max(1, sum(s.n for s in sb)),
            "positions_a_kept": sum(s.valid_len for s in sa), "positions_a": sum(s.n for s in sa),
            "positions_b_kept": sum(s.valid_len for s in sb), "positions_b": sum(s.n for s in sb),
            "gate_a": float(np.mean([s.gate_rate for s in sa])), "gate_b": float(np.mean([s.gate_rate for s in sb])),
            "streams_b_excluding": sum(1 for s in sb if s.valid_len < s.n),
            "same_y": sum(1 for d in div if d is None),
            "first_divergence_median": (float(np.median([d for d in div if d is not None]))
                                        if any(d is not None for d in div) else None),
            "by_gamma": {},
        }
        for g in gammas:
            row: dict[str, Any] = {"walk_a": walk_tokens_per_call(sa, g), "walk_b": walk_tokens_per_call(sb, g),
                                   "walk_b_all": walk_tokens_per_call(sb, g, every_position=True)}
            confirmed = [(k, real[k]) for k in keys if k in real and str(g) in (real[k].get("spec") or {})]
            if confirmed:
                sp = [r["spec"][str(g)] for _, r in confirmed]
                tokens = sum(int(x["tokens_out"]) for x in sp)
                real_k = np.concatenate([np.asarray(x["accepted"], dtype=np.int64) for x in sp])
                walk_b_k = np.concatenate([np.asarray(x["walk_accepted"], dtype=np.int64) for x in sp])
                walk_a_k = np.concatenate([_walk_like(a_by[k].bits, g, int(x["n_predict"])) for (k, _), x in zip(confirmed, sp)])
                h_real, h_wb, h_wa = histogram(real_k, g), histogram(walk_b_k, g), histogram(walk_a_k, g)
                agree = [x for x in sp if x.get("identical")]  # secondary (json only): outputs that equalled y
                row.update(
                    real_prompts=len(confirmed), real_identical=len(agree), **real_flips(sp),
                    real_tokens_per_call=tokens / sum(int(x["target_calls"]) for x in sp),
                    walk_b_same_prompts=sum(int(x["walk_tokens"]) for x in sp) / sum(int(x["walk_calls"]) for x in sp),
                    walk_a_same_prompts=(int(walk_a_k.sum()) + walk_a_k.size) / walk_a_k.size if walk_a_k.size else None,
                    agree_real=(sum(int(x["tokens_out"]) for x in agree) / sum(int(x["target_calls"]) for x in agree)
                                if agree else None),
                    agree_walk=(sum(int(x["walk_tokens"]) for x in agree) / sum(int(x["walk_calls"]) for x in agree)
                                if agree else None),
                    paired=_paired_dict(paired_tokens_per_call(
                        [int(x["tokens_out"]) for x in sp], [int(x["target_calls"]) for x in sp],
                        [int(x["walk_tokens"]) for x in sp], [int(x["walk_calls"]) for x in sp])),
                    hist_real=h_real, hist_walk_b=h_wb, hist_walk_a=h_wa,
                    test_real_vs_walk_b=_test_dict(histogram_test(h_real, h_wb)),
                    test_real_vs_walk_a=_test_dict(histogram_test(h_real, h_wa)),
                    test_walk_b_vs_walk_a=_test_dict(histogram_test(h_wb, h_wa)),
                )
            entry["by_gamma"][str(g)] = row
        entry["decision_a"] = dec_a.get(name, {"measured": False})
        entry["decision_b"] = dec_b.get(name, {"measured": False})
        corpora[name] = entry
    return {"run_a": run_a.name, "run_b": run_b.name, "engine_a": engine_a or "torch", "engine_b": engine_b or "torch",
            "backend_b": (run_b.meta.get("backend") or {}).get("name", "torch"), "corpora": corpora,
            "same_positions_pooled": same_positions([(a_by[k], b_by[k]) for k in shared], gammas),
            "test": "Pearson chi-square test of homogeneity, sparse K bins merged upward to >= "
                    f"{MIN_COLUMN} blocks per column; blocks within a prompt are dependent, so p is nominal"}


def _walk_like(bits: npt.NDArray[np.uint8], gamma: int, n_predict: int) -> npt.NDArray[np.int64]:
    """The walk llama-speculative-simple -n n_predict makes on `bits` (core/compare/speclog), or SPEC 2's walk
    over the first n_predict + gamma + 1 positions when the stream is shorter than that walk needs."""
    from specterm.core.compare.speclog import capped_walk_accepts

    if bits.size >= n_predict + gamma + 1:
        return capped_walk_accepts(bits, gamma, n_predict)
    return block_accepts(bits, gamma)


def _test_dict(t: HistTest | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"chi2": t.statistic, "dof": t.dof, "p": t.p_value, "bins": t.merged_bins,
            "power": chi2_power(t.statistic, t.dof)}


def _paired_dict(p: Any) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"prompts": p.prompts, "blocks_real": p.blocks_real, "blocks_walk": p.blocks_walk, "diff": p.diff,
            "ci95": list(p.ci95), "ci90": list(p.ci90), "margin": p.margin, "establishable": p.establishable,
            "wording": p.wording}


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{x:.{digits}f}"


def _pct(x: Any) -> str:
    return MISSING if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f}%"


def cross_stack_markdown(cs: dict[str, Any], hist_gamma: int = 4) -> str:
    """GitHub-flavoured tables of a `cross_stack` result, one per statistic."""
    a, b = cs["engine_a"], cs["engine_b"]
    lines = [f"Cross-stack: {cs['run_a']} ({a}) vs {cs['run_b']} ({b}).", ""] + _same_position_lines(cs)
    lines += ["", ("Each run on its own kept positions (not a same-position comparison: the runs keep different "
                   "positions)."), "",
              (f"| corpus | prompts | alpha {a}, own kept positions | alpha {b}, own kept positions (kept/all) | "
               f"alpha {b}, every position | gate {b} (streams with excluded positions) | same y |"),
              "|---|---|---|---|---|---|---|"]
    for name, e in cs["corpora"].items():
        lines.append(f"| {name} | {e['prompts']} | {_f(e['alpha_a_own'])} | {_f(e['alpha_b_own'])} "
                     f"({e['positions_b_kept']}/{e['positions_b']}) | {_f(e['alpha_b_all'])} | {_f(e['gate_b'])} "
                     f"({e['streams_b_excluding']}) | {e['same_y']}/{e['prompts']} |")
    gammas = sorted({int(g) for e in cs["corpora"].values() for g in e["by_gamma"]})
    lines += ["", (f"Tokens per target call: the walk on each engine's own kept bits (all prompts), and {b}'s real "
                   f"decoder against the walk on its bits over EVERY timed prompt, whether or not its output equalled "
                   f"the stored y; beside it the real decoder's own flips (timed prompts whose output differs from y, "
                   f"the median first mismatch token)."),
              "",
              "| corpus | g | walk " + a + " (own kept) | walk " + b + " (own kept) | walk " + b + " (every position) | real "
              + b + " (all timed) | walk " + b + " (all timed) | gap | timed prompts | output differs from y (median first mismatch) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in cs["corpora"].items():
        for g in gammas:
            r = e["by_gamma"].get(str(g), {})
            gap = (r["real_tokens_per_call"] / r["walk_b_same_prompts"] - 1) * 100 if r.get("real_tokens_per_call") else None
            flips = (f"{r['real_differ']}/{r['real_prompts']} ({_f(r.get('real_first_mismatch_median'), 0)})"
                     if "real_differ" in r else MISSING)
            lines.append(f"| {name} | {g} | {_f(r.get('walk_a'))} | {_f(r.get('walk_b'))} | {_f(r.get('walk_b_all'))} "
                         f"| {_f(r.get('real_tokens_per_call'))} "
                         f"| {_f(r.get('walk_b_same_prompts'))} | {_f(gap, 1) + '%' if gap is not None else MISSING} "
                         f"| {r.get('real_prompts', 0)} | {flips} |")
    lines += ["", (f"Real {b} decoder against the walk on its bits, tokens per target call, paired over prompts: "
                   f"difference real / walk - 1 with its 95% interval over prompts, the 90% interval of the two one-sided "
                   f"tests (TOST) against a +-{100 * EQUIVALENCE_MARGIN:g}% margin, and what it shows."), "",
              "| corpus | g | prompts | blocks (real / walk) | difference [95% CI] | 90% CI | result |",
              "|---|---|---|---|---|---|---|"]
    for name, e in cs["corpora"].items():
        for g in gammas:
            pc = e["by_gamma"].get(str(g), {}).get("paired")
            if pc is None:
                continue
            lines.append(f"| {name} | {g} | {pc['prompts']} | {pc['blocks_real']} / {pc['blocks_walk']} | "
                         f"{_pct(pc['diff'])} [{_pct(pc['ci95'][0])}, {_pct(pc['ci95'][1])}] | "
                         f"[{_pct(pc['ci90'][0])}, {_pct(pc['ci90'][1])}] | {pc['wording']} |")
    lines += ["", (f"Accepted-run histogram at g = {hist_gamma} (blocks with K = 0..{hist_gamma}), a descriptive line: "
                   f"{cs['test']}; power against the difference seen in brackets (a test of low power detecting no "
                   "difference is not agreement)."), "",
              (f"| corpus | real {b} | walk on {b} bits | walk on {a} bits | real vs walk {b}: chi2 (dof), p [power] "
               f"| real vs walk {a}: chi2 (dof), p [power] |"),
              "|---|---|---|---|---|---|"]
    for name, e in cs["corpora"].items():
        r = e["by_gamma"].get(str(hist_gamma), {})
        if "hist_real" not in r:
            continue
        lines.append(f"| {name} | {r['hist_real']} | {r['hist_walk_b']} | {r['hist_walk_a']} | "
                     f"{_test_cell(r['test_real_vs_walk_b'])} | {_test_cell(r['test_real_vs_walk_a'])} |")
    return "\n".join(lines + _decision_lines(cs)) + "\n"


def _same_position_lines(cs: dict[str, Any]) -> list[str]:
    """The cross-stack markdown's first tables: alpha and E_true(g) of both engines on the same positions
    (common_positions' two levels), per corpus and pooled, with the positions counted."""
    a, b = cs["engine_a"], cs["engine_b"]
    pooled = {key: sum(e.get(key, 0) for e in cs["corpora"].values()) for key in ("prompts", "prompts_only_a", "prompts_only_b")}
    rows = [*cs["corpora"].items(), ("pooled", {**pooled, "same_positions": cs["same_positions_pooled"]})]
    lines = [(f"Same positions: alpha of both engines on the positions both keep for the same prompt. Kept by both: "
              f"t < min(n_{a}, n_{b}), kept in both runs; same context: also y equal up to and including t (same "
              f"prefix and target token, so a_t differs only by engine). Difference alpha {b} - alpha {a} with its "
              f"95% bootstrap interval over prompts."), "",
             (f"| corpus | prompts | kept by both | alpha {a} | alpha {b} | difference [95% CI] | same context | "
              f"alpha {a} | alpha {b} | difference [95% CI] |"),
             "|---|---|---|---|---|---|---|---|---|---|"]

    def cells(x: dict[str, Any]) -> str:
        lo, hi = x["ci95"]
        d = MISSING if x["diff"] is None else f"{x['diff']:+.3f}"
        return f"{x['positions']} | {_f(x['alpha_a'])} | {_f(x['alpha_b'])} | {d} [{_f(lo)}, {_f(hi)}]"

    for name, e in rows:
        sp = e["same_positions"]
        only = f" (+{e['prompts_only_a']} only in {a}, +{e['prompts_only_b']} only in {b})" if e.get(
            "prompts_only_a") or e.get("prompts_only_b") else ""
        lines.append(f"| {name} | {e['prompts']}{only} | {cells(sp['kept_by_both'])} | {cells(sp['same_context'])} |")
    gammas = sorted({int(g) for _, e in rows for g in e["same_positions"]["kept_by_both"]["E"]})
    lines += ["", ("E_true(g) on the same positions (the walk on each prompt's bits at those positions, in order; "
                   "tokens / blocks over the prompts)."), "",
              f"| corpus | g | kept by both: {a} | {b} | same context: {a} | {b} |", "|---|---|---|---|---|---|"]
    for name, e in rows:
        sp = e["same_positions"]
        for g in gammas:
            k, c = sp["kept_by_both"]["E"].get(str(g), {}), sp["same_context"]["E"].get(str(g), {})
            lines.append(f"| {name} | {g} | {_f(k.get('a'))} | {_f(k.get('b'))} | {_f(c.get('a'))} | {_f(c.get('b'))} |")
    return lines


def _test_cell(x: dict[str, Any] | None) -> str:
    """A histogram test's cell: chi2 (dof), p [power]."""
    if x is None:
        return MISSING
    power = f" [{x['power']:.2f}]" if x.get("power") is not None else ""
    return f"{x['chi2']:.2f} ({x['dof']}), {x['p']:.3g}{power}"


def _decision_lines(cs: dict[str, Any]) -> list[str]:
    """The cross-stack markdown's last table: each engine's decision and its confirmations' checks."""
    a, b = cs["engine_a"], cs["engine_b"]
    lines = ["", ("Decision in each engine on the machine of its cost profile, named in each verdict (SPEC 6; the "
                   "engine's block cost where its "
                   "costs carry one) and the decision checks of its confirmations (`specterm report`: the decision's "
                   "prediction for K new prompts with its 95% prediction interval; in = realized inside it; sign = "
                   "realized on the verdict's side of 1, n/a for no reliable gain)."),
              "",
              "| corpus | engine | g_hw | S_hw [95% CI] | verdict | g timed: realized (decision predicts [PI], in, sign; prompts) |",
              "|---|---|---|---|---|---|"]

    def sign(x: bool | None) -> str:
        return MISSING if x is None else "sign held" if x else "sign wrong"

    def check(c: dict[str, Any]) -> str:
        dp = c.get("decision_predicted") or {}
        ci = dp.get("ci") or [None, None]
        inside = MISSING if c.get("in_ci") is None else "in" if c["in_ci"] else "out"
        return (f"g={c['gamma']}: {c['realized']:.2f}x ({_f(dp.get('value'), 2)}x [{_f(ci[0], 2)}, {_f(ci[1], 2)}], "
                f"{inside}, {sign(c.get('sign_held'))}; {c['prompts']} prompts)")

    for name, e in cs["corpora"].items():
        for eng, d in ((a, e["decision_a"]), (b, e["decision_b"])):
            if not d.get("measured"):
                lines.append(f"| {name} | {eng} | {MISSING} | {MISSING} | no measured costs | {MISSING} |")
                continue
            ci = d.get("speedup_hw_ci") or [None, None]
            conf = "; ".join(check(c) for c in d.get("confirmed", [])) or "not confirmed"
            lines.append(f"| {name} | {eng} | {d['gamma_hw']} | {_f(d['speedup_hw'], 2)} [{_f(ci[0], 2)}, {_f(ci[1], 2)}] "
                         f"| {d['verdict']} | {conf} |")
    return lines
