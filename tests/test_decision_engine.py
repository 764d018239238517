"""Issue 22: the decision with an engine's per-block term (llama.cpp's draft-simple speculator feeds the
(g+1)-token verification batch to the draft once per block, c_draft_fwd(g)), and llama.cpp confirmation
records through the one decision check (hardware.decision_check) of SPEC 6.

Every expected value is worked by hand here from made-up costs, never read back from the code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.compare.crossstack import run_decisions
from specterm.core.decide.hardware import (
    Confirmation,
    cost_curve,
    decision_check,
    decision_hw,
    summarize_results,
    timing_rows,
)
from specterm.core.decide.hardware.curve import cost_replicates
from specterm.core.decide.hardware.drift import DEFAULT_SIGMA
from specterm.core.store import Stream, load_runs, write_run

GAMMAS = np.array([1, 2, 3, 4])
E = np.array([1.8, 3.0, 3.1, 3.15])
C_DECODE, C_VERIFY, C_DRAFT = 0.5, [0.6, 0.7, 0.9, 1.1], 0.1


def _cost(fwd=None, samples=None, clock="wall", engine="llama.cpp"):
    sfx = "_cpu_s" if clock == "cpu" else "_s"
    d = {"c_decode_s": C_DECODE, "c_draft_s": C_DRAFT, "c_verify_s": {str(g): c for g, c in zip(GAMMAS, C_VERIFY)},
         "c_draft2_s": 0.3, "decision_clock": clock}
    if clock == "cpu":
        d.update({"c_decode_cpu_s": C_DECODE, "c_draft_cpu_s": C_DRAFT, "c_draft2_cpu_s": 0.3,
                  "c_verify_cpu_s": dict(d["c_verify_s"])})
    if fwd is not None:
        d["c_draft_fwd" + sfx] = {str(g): c for g, c in zip(GAMMAS, fwd)}
        d["engine"] = engine
    if samples is not None:
        d["samples" + sfx] = samples
    return d


def _constant_samples(fwd=None, n=5):
    s = {"decode": [C_DECODE] * n, "draft": [C_DRAFT] * n, "draft2": [0.3] * n,
         **{f"verify:{g}": [c] * n for g, c in zip(GAMMAS, C_VERIFY)}}
    if fwd is not None:
        s.update({f"draft_fwd:{g}": [c] * n for g, c in zip(GAMMAS, fwd)})
    return s


FWD = [0.1, 0.45, 0.5, 0.55]


def test_engine_block_cost_moves_the_decision_by_hand():
    # SPEC 6: S = E c_decode / (c_verify + g c_draft) = 0.9/0.7, 1.5/0.9, 1.55/1.2, 1.575/1.5 -> g_hw = 2, 1.667x
    spec6 = decision_hw(GAMMAS, E, None, cost_curve(_cost()))
    assert spec6.gamma_hw == 2 and spec6.speedup_hw == pytest.approx(1.5 / 0.9)
    assert "c_draft_fwd" not in spec6.verdict
    # engine: + c_draft_fwd(g) = 0.1, 0.45, 0.5, 0.55 -> 0.9/0.8 = 1.125, 1.5/1.35 = 1.111, 1.55/1.7, 1.575/2.05
    d = decision_hw(GAMMAS, E, E, cost_curve(_cost(FWD)))
    assert d.gamma_hw == 1 and d.speedup_hw == pytest.approx(0.9 / 0.8)
    assert d.curve_hw["S_true"] == pytest.approx([0.9 / 0.8, 1.5 / 1.35, 1.55 / 1.7, 1.575 / 2.05])
    assert d.curve_hw["S_iid"] == pytest.approx(d.curve_hw["S_true"])  # E_iid := E here: same block cost
    assert d.curve_hw["c_draft_fwd"] == pytest.approx(FWD) and "c_draft_fwd" not in spec6.curve_hw
    # v* = E(1) - (1 * c_draft + c_draft_fwd(1)) / c_decode = 1.8 - 0.2 / 0.5 = 1.4; c_verify(1) / c_decode = 1.2
    assert d.break_even_verify == pytest.approx(1.4) and d.verify_steps == pytest.approx(1.2)
    assert "v* = 1.40 decode steps (measured on that machine: 1.20)" in d.verdict
    assert "c_verify(g) + g c_draft + c_draft_fwd(g)" in d.verdict and "llama.cpp" in d.verdict
    # the refeed model is the engine's block (draft-simple never takes a 2-token draft step)
    phi = np.array([0.5, 0.5, 0.5, 0.5])
    r = decision_hw(GAMMAS, E, None, cost_curve(_cost(FWD)), phi_true=phi)
    assert r.curve_hw["S_true_refeed"] == pytest.approx(r.curve_hw["S_true"])


def test_the_engine_term_is_pooled_within_noise_like_c_verify():
    # no samples: every violation pooled (plain isotonic fit): 0.1, 0.5, 0.1, 0.1 -> 0.1, 0.7/3, 0.7/3, 0.7/3
    curve = cost_curve(_cost([0.1, 0.5, 0.1, 0.1]))
    assert curve.c_draft_fwd.tolist() == pytest.approx([0.1, 0.7 / 3, 0.7 / 3, 0.7 / 3])
    assert curve.c_draft.real == C_DRAFT and curve.refeed_extra == 0.0
    assert cost_curve(_cost()).refeed_extra == pytest.approx(0.2)  # torch: (c_draft2 - c_draft)+
    with pytest.raises(Exception, match="c_draft_fwd"):
        cost_curve({**_cost(FWD), "c_draft_fwd_s": {"1": 0.1}})  # a g of the curve without its term


def test_ci_collapses_to_the_engine_hand_value_with_constant_samples():
    cost = _cost(FWD, _constant_samples(FWD))
    reps = cost_replicates(cost, 100, 0)
    assert reps is not None and reps.c_draft_fwd is not None
    assert reps.c_draft_fwd == pytest.approx(np.tile(FWD, (100, 1)))
    d = decision_hw(GAMMAS, E, None, cost_curve(cost), E_boot=np.tile(E, (100, 1)), reps=reps)
    assert d.speedup_hw_ci == pytest.approx([0.9 / 0.8, 0.9 / 0.8])
    assert d.verdict_kind == "speculate"


# --------------------------------------------------- llama.cpp confirmation -> decision check ---

BITS = np.array([1, 1, 0, 1, 1, 1, 0, 1] * 4, dtype=np.uint8)  # E(4) from the walk written out in _walk_E


def _walk_E(bits, g):
    """SPEC 2's walk written out: from s, k = accepted drafts among the next g, emits k + 1 (k at the end)."""
    s, tokens, blocks = 0, 0, 0
    n = bits.size
    while s < n:
        k = 0
        while k < g and s + k < n and bits[s + k]:
            k += 1
        step = min(k + 1, n - s)
        tokens += step
        blocks += 1
        s += step
    return tokens / blocks


def _llama_record(ids, g, realized, fwd, with_new_fields=True):
    """A llama.cpp confirmation record as `confirm --engine llama.cpp` writes it (old records: no context
    fields). Greedy 0.1 s per token, speculative time chosen to give `realized`."""
    n = BITS.size
    cost = _cost(fwd, _constant_samples(fwd), engine="llama.cpp")
    prompts = []
    for i in ids:
        row = {"corpus": "code", "id": i, "tokens": n, "prompt_tokens": 20, "greedy_s": 0.1 * n,
               "greedy_cum_s": [0.1 * (t + 1) for t in range(n)], "greedy_identical": True,
               "spec": {str(g): {"s": 0.1 * n / realized, "tokens_out": n, "target_calls": 9, "blocks_walk": 9,
                                 "refeeds_walk": 0, "identical": True, "walk_calls": 9, "walk_tokens": n,
                                 "accepted": [], "walk_accepted": [], "n_predict": n - 1 - g}}}
        if with_new_fields:
            row["context"] = 20 + n / 2
        prompts.append(row)
    results = summarize_results(timing_rows(prompts), cost_curve(cost))
    rec = {"date": "2026-12-01T00:00:00+00:00", "engine": "llama.cpp", "device": "cpu", "threads": 1,
           "complete": True, "cost": cost, "prompts": prompts, "results": results}
    if with_new_fields:
        rec.update(cost_context=36, run_cost_context=40)
    return rec


def test_a_llamacpp_record_gives_the_decision_check_row_by_hand():
    g, fwd = 4, FWD
    streams = [(f"c{i}", BITS.copy()) for i in range(6)]
    cost = _cost(fwd, _constant_samples(fwd))
    rec = _llama_record(["c0", "c1"], g, 1.0, fwd)
    conf = Confirmation(date=rec["date"], device="cpu", threads=1, complete=True, results=[], record=rec)
    row = {"gamma": g, "realized": 1.0}
    out = decision_check(row, conf, "code", streams, cost_curve(cost), cost_replicates(cost, 200, 0), 200, 0)
    E4 = _walk_E(BITS, g)
    S = E4 * C_DECODE / (C_VERIFY[3] + 4 * C_DRAFT + fwd[3])  # the engine's block, by hand
    assert out["decision_predicted"]["value"] == pytest.approx(S)
    assert out["decision_predicted"]["ci"] == pytest.approx([S, S])  # equal streams, constant samples: a point
    assert out["K"] == 2 and out["leave_out_streams"] == 4 and out["excluded"] == ["c0", "c1"]
    assert out["in_ci"] is (S == pytest.approx(1.0))  # realized 1.0 against the point interval [S, S]
    assert out["sign_held"] is ((1.0 > 1.0) == (S > 1.0))
    assert out["cost_drift_pct"]["c_draft_fwd"] == pytest.approx(0.0)
    assert out["timed_context"] == pytest.approx(20 + BITS.size / 2) and out["cost_context"] == 36
    # the cost-model check of the record is the engine's too, with SPEC 6's block alone beside it
    r = rec["results"][0]
    assert r["predicted_engine"] == pytest.approx(S) and r["predicted_spec6"] == pytest.approx(S)
    assert r["predicted_without_engine_term"] == pytest.approx(E4 * C_DECODE / (C_VERIFY[3] + 4 * C_DRAFT))


def _streams():
    return [Stream(id=f"c{i}", corpus="code", bits=BITS.copy(), gate=np.ones_like(BITS)) for i in range(6)]


META = {"format": "specterm-run", "schema_version": 1, "specterm_version": "0.1.0", "name": "llama",
        "created": "2026-12-01T00:00:00+00:00", "target": {"spec": "t"}, "draft": {"spec": "d"}, "device": "cpu",
        "dtype": "gguf", "backend": {"name": "llama.cpp"}}


def _run(tmp_path: Path, records, name="llama"):
    from specterm.core.store import FORMAT, SCHEMA_VERSION

    meta = {**META, "format": FORMAT, "schema_version": SCHEMA_VERSION, "name": name,
            "cost": _cost(FWD, _constant_samples(FWD)), "confirmations": records}
    return write_run(tmp_path / name, meta, _streams())


def test_report_and_crossstack_show_the_same_decision_checks_for_llamacpp(tmp_path):
    g = 4
    new = _llama_record(["c0", "c1"], g, 0.95, FWD)
    path = _run(tmp_path, [new])
    rep = analyse(load_runs([path]), boot=200, shuffles=0)
    d = rep.sets["code"].decision_hw
    E4 = _walk_E(BITS, g)
    S = E4 * C_DECODE / (C_VERIFY[3] + 4 * C_DRAFT + FWD[3])
    row = d.confirmed_at(g)
    assert row is not None and row.decision_predicted.value == pytest.approx(S)
    # prompts and costs without spread: the interval is the drift between sessions alone, the stated default
    # (this machine has one session): S exp(+-1.96 sigma), the percentiles of 200 lognormal draws
    lo, hi = row.decision_predicted.ci
    assert row.drift is not None and row.drift["sessions"] == 0 and row.drift["sigma"] == DEFAULT_SIGMA
    assert lo == pytest.approx(S * np.exp(-1.96 * DEFAULT_SIGMA), rel=0.03)
    assert hi == pytest.approx(S * np.exp(1.96 * DEFAULT_SIGMA), rel=0.03)
    assert row.realized == pytest.approx(0.95) and row.K == 2 and row.timed_context == pytest.approx(36.0)
    assert row.predicted == pytest.approx(S)  # the cost-model check uses the engine's block
    # crossstack reads the report's rows (same numbers at the report's defaults)
    from specterm.core.store import load_run

    cs = run_decisions(load_run(path))["code"]
    full = analyse(load_runs([path])).sets["code"].decision_hw
    assert cs["gamma_hw"] == full.gamma_hw and cs["speedup_hw_ci"] == full.speedup_hw_ci
    c4 = next(c for c in cs["confirmed"] if c["gamma"] == g)
    f4 = full.confirmed_at(g)
    assert c4["decision_predicted"]["value"] == f4.decision_predicted.value
    assert c4["decision_predicted"]["ci"] == list(f4.decision_predicted.ci) and c4["in_ci"] == f4.in_ci


def test_an_old_llamacpp_record_still_loads(tmp_path):
    old = _llama_record(["c0"], 4, 0.9, FWD, with_new_fields=False)
    for r in old["results"]:  # records before issue 22: SPEC 6's prediction stored, no engine columns
        r.pop("predicted_engine", None)
        r.pop("predicted_without_engine_term", None)
    path = _run(tmp_path, [old], "old")
    row = analyse(load_runs([path]), boot=50, shuffles=0).sets["code"].decision_hw.confirmed_at(4)
    assert row is not None and row.timed_context is None and row.cost_context is None
    assert row.decision_predicted.value is not None  # the check itself needs only prompts, spec and tokens


# ------------------------------------------------------------------------ by batch (llama.cpp) ---

def test_by_batch_uses_the_engine_block_by_hand():
    """Batch costs with draft forwards "draft_fwd:B:m" (llama.cpp): c_draft_fwd(g, B) = f_d(B (g + 1)), here
    linear in N so the fit is exact, and S_hw(g, B) = E c_decode(B) / (c_verify(g, B) + g c_draft(B) +
    c_draft_fwd(g, B)), its CI a point with constant samples."""
    from specterm.core.decide.hardware.batch import batch_costs

    batches, fit_m = (1, 2, 4, 8), (1, 3, 9)
    a, c = 0.3, 0.01          # target: c(B, m) = a + c B m
    a_d, c_d = 0.02, 0.004    # engine draft forward: a_d + c_d B m
    samples = {f"target:{B}:{m}": [a + c * B * m] * 3 for B in batches for m in fit_m}
    samples.update({f"draft:{B}": [0.05 + 0.01 * B] * 3 for B in batches})
    samples.update({f"draft_fwd:{B}:{m}": [a_d + c_d * B * m] * 3 for B in batches for m in (3, 9)})
    samples["draft_fwd:1:2"] = [a_d + c_d * 2] * 3  # the smallest N of the grid (B = 1, g = 1)
    rec = {"batches": list(batches), "fit_m": list(fit_m), "held_back": [], "context": 100, "samples_s": samples,
           "decision_clock": "wall"}
    bc = batch_costs(rec)
    B = np.array(batches, dtype=float)[:, None]
    g = np.arange(1, 9, dtype=float)[None, :]
    assert bc.c_draft_fwd == pytest.approx(a_d + c_d * B * (g + 1))
    E = np.array([1.9, 2.7, 3.3, 3.8, 4.1, 4.3, 4.45, 4.55])
    gam = np.arange(1, 9)
    # the decision's own costs are the batch grid's B = 1 (a + c m, draft 0.06, engine term a_d + c_d m), so
    # scaling them by c(B) / c(1) gives the batch grid's costs at B exactly
    cost = {"c_decode_s": a + c, "c_draft_s": 0.06, "c_verify_s": {str(x): a + c * (x + 1) for x in gam},
            "c_draft_fwd_s": {str(x): a_d + c_d * (x + 1) for x in gam}, "engine": "llama.cpp",
            "samples_s": {"decode": [a + c] * 3, "draft": [0.06] * 3, **{f"verify:{x}": [a + c * (x + 1)] * 3 for x in gam},
                          **{f"draft_fwd:{x}": [a_d + c_d * (x + 1)] * 3 for x in gam}}}
    curve = cost_curve(cost)
    assert curve.c_draft_fwd is not None
    reps = bc.replicates(rec, 50, 0)
    d = decision_hw(gam, E, None, curve, E_boot=np.tile(E, (50, 1)), reps=cost_replicates(cost, 50, 0), batch=bc,
                    batch_reps=reps, batch_fwd_reps=bc.draft_fwd_replicates(rec, 50, 0))
    rows = {r["batch"]: r for r in d.by_batch}
    assert rows[1]["speedup_hw"]["value"] == d.speedup_hw and rows[1]["speedup_hw"]["ci"] == d.speedup_hw_ci
    for b in batches:
        S = E * (a + c * b) / (a + c * b * (gam + 1) + gam * (0.05 + 0.01 * b) + a_d + c_d * b * (gam + 1))
        S_spec6 = E * (a + c * b) / (a + c * b * (gam + 1) + gam * (0.05 + 0.01 * b))
        assert rows[b]["gamma_hw"] == int(gam[np.argmax(S)])
        assert rows[b]["speedup_hw"]["value"] == pytest.approx(S.max()) and S.max() < S_spec6.max()
        assert rows[b]["speedup_hw"]["ci"] == pytest.approx([S.max(), S.max()])
    assert "engine_term" in d.batch_fit
    torch_like = batch_costs({**rec, "samples_s": {k: v for k, v in samples.items() if not k.startswith("draft_fwd")}})
    assert torch_like.c_draft_fwd is None and bc.draft_fwd_replicates(rec, 5, 0) is not None
