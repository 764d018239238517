"""The report's position, sampling and economics (Q1-Q4) sections end to end through analyse:
known truth on synthetic runs, the stratified pooled set, imported bits without beta, and the
measured-cost hook of Q3."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.streams.blockwalk import E_iid
from specterm.core.report.export import to_json, to_markdown, to_text
from specterm.core.store.importer import import_jsonl
from specterm.core.params import GAMMAS
from specterm.core.claims.scorecard import scorecard
from specterm.core.store import Stream, load_run


def warming(rng, n_streams: int, length: int = 96) -> list[np.ndarray]:
    """Acceptance 0.5 for t < 32, then 0.9: alpha(t >= 32) - alpha(t < 16) = 0.4."""
    t = np.arange(length)
    return [(rng.random(length) < np.where(t < 32, 0.5, 0.9)).astype(np.uint8) for _ in range(n_streams)]


def test_warmup_gain_through_analyse(synth):
    rng = np.random.default_rng(0)
    run = synth.run(synth.streams("warm", warming(rng, 40)) + synth.streams("flat", [synth.iid(rng, 96, 0.7) for _ in range(40)]))
    rep = analyse([run], boot=500, shuffles=2)
    warm, flat = rep.sets["warm"].position, rep.sets["flat"].position
    assert warm.warmup_gain.lo > 0 and warm.warmup_gain.lo < 0.4 < warm.warmup_gain.hi
    assert flat.warmup_gain.lo < 0 < flat.warmup_gain.hi
    assert [b.start for b in warm.bins] == [0, 16, 32, 48, 64, 80] and all(b.n == 40 * 16 for b in warm.bins)
    # bins of the pooled set: ratio of the corpora's sums
    for k, b in enumerate(rep.pooled.position.bins):
        ones = sum(round(s.position.bins[k].alpha.value * s.position.bins[k].n) for s in (rep.sets["warm"], rep.sets["flat"]))
        assert b.alpha.value == pytest.approx(ones / b.n) and b.n == 80 * 16


def test_one_corpus_pooled_equals_the_corpus(synth):
    rng = np.random.default_rng(1)
    arrays = warming(rng, 20)
    streams = synth.streams("only", arrays)
    for s in streams:
        s.beta = rng.uniform(0.3, 1.0, s.n).astype(np.float32)
    rep = analyse([synth.run(streams)], boot=200, shuffles=2)
    only, pooled = rep.sets["only"], rep.pooled
    assert pooled.position.to_dict() == only.position.to_dict()
    assert pooled.sampling.to_dict() == only.sampling.to_dict()
    beta = np.concatenate([s.beta for s in streams]).astype(np.float64)
    assert only.sampling.beta_bar.value == pytest.approx(beta.mean())
    assert only.sampling.E_iid_beta["8"].value == pytest.approx(float(E_iid(beta.mean(), 8)))
    assert only.sampling.streams == 20 and only.sampling.autocorr_streams == 20


def test_beta_only_over_the_analysed_prefix(synth):
    # gate fails at t = 2: bits and beta count up to t = 1 only
    s = Stream(id="a", corpus="c", bits=np.array([1, 1, 0, 1], np.uint8), gate=np.array([1, 1, 0, 1], np.uint8),
               beta=np.array([0.5, 0.7, 0.0, 0.0], np.float32))
    rep = analyse([synth.run([s])], boot=10, shuffles=0)
    assert rep.sets["c"].sampling.beta_bar.value == pytest.approx(0.6)
    assert rep.sets["c"].position.bins[0].n == 2


def test_imported_bits_without_beta_report_null_sampling(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in [
        {"id": "a", "corpus": "prose", "bits": "0110" * 10}, {"id": "b", "corpus": "code", "bits": "1110111" * 6}]))
    path, _ = import_jsonl(src, tmp_path / "run")
    rep = analyse([load_run(path)], boot=50, shuffles=1)
    doc = json.loads(to_json(rep))
    for s in doc["sets"].values():
        assert s["sampling"]["beta_bar"] == {"value": None, "ci": [None, None]}
        assert s["sampling"]["beta_autocorr"]["value"] is None
        assert all(v["value"] is None for v in s["sampling"]["E_iid_beta"].values())
    assert "Sampling acceptance" in to_markdown(rep) and "SAMPLING ACCEPTANCE" in to_text(rep)


def test_q_rows_through_analyse(synth):
    rng = np.random.default_rng(2)
    corpora = {"prose": [synth.iid(rng, 400, 0.55) for _ in range(30)], "code": [synth.iid(rng, 400, 0.92) for _ in range(30)]}
    run = synth.run([s for c, a in corpora.items() for s in synth.streams(c, a)], r=0.1)
    rep = analyse([run], boot=300, shuffles=2)
    rows = {r.id: r for r in rep.scorecard}
    assert [r.id for r in rep.scorecard][5:] == ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert all(rows[q].seed == "economics" for q in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6"))
    # i.i.d.: c_2 = c_1 in truth, so the difference's CI holds 0 (Q1 inconclusive); alphas far apart: Q2's
    # direction holds, and its spread 0.92 - 0.55 = 0.37 is judged against the seed's 0.45..0.70
    assert rows["Q1"].verdict == "inconclusive" and rows["Q2"].direction == "holds"
    assert rows["Q2"].size in ("holds", "not reproduced") and "spread of 0.3" in rows["Q2"].evidence
    p, c = rep.sets["prose"], rep.sets["code"]
    assert f"{p.alpha:.2f} [{p.alpha_ci[0]:.2f}, {p.alpha_ci[1]:.2f}] (prose)" in rows["Q2"].evidence
    # Q3: each corpus's best g is the argmax of E_true(g) / (1 + 0.1 g), printed with the speedup there
    g = int(GAMMAS[np.nanargmax(np.array(c.curve.E_true) / (1 + 0.1 * GAMMAS))])
    assert f"at g={g}" in rows["Q3"].evidence and "at r=0.100" in rows["Q3"].evidence
    assert rows["Q3"].direction == "holds"
    # no draft_conf: Q4 compares the heuristic only and says so
    assert "no confidence stop" in rows["Q4"].evidence


def test_q3_takes_measured_costs(synth):
    rng = np.random.default_rng(3)
    corpora = {"a": [synth.iid(rng, 300, 0.6) for _ in range(20)], "b": [synth.iid(rng, 300, 0.9) for _ in range(20)]}
    rep = analyse([synth.run([s for c, arr in corpora.items() for s in synth.streams(c, arr)], r=0.1)], boot=200, shuffles=1)
    sets = rep.sets
    # verify costs only at g = 1, 2: the best g must be 1 or 2, S_hw = E(g) c_decode / (c_verify(g) + g c_draft)
    costs = {c: {"c_decode": 1.0, "c_verify": {1: 1.1, 2: 1.2}, "c_draft": 0.05} for c in corpora}
    q3 = scorecard(sets, costs=costs)[7]
    assert q3.id == "Q3" and "measured costs" in q3.evidence and "memory-bound" not in q3.evidence
    E = sets["b"].curve.E_true
    s_hw = [E[0] / 1.15, E[1] / 1.3]
    g = 1 + int(np.argmax(s_hw))
    assert f"best b {max(s_hw):.2f}x" in q3.evidence and f"at g={g}" in q3.evidence
