"""`specterm confirm` on the real SmolLM2-135M GGUF (layer-skip self-draft, as the shipped run was
made): outputs equal the stored y, the decoder's tokens per target call equal the exact walk's E,
the record lands in run.json without touching the streams, Ctrl-C keeps finished prompts; and a
corrupt or missing confirmation record is refused in one sentence."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from specterm.core.streams.blockwalk import block_counts
from specterm.core.errors import SpectermError
from specterm.core.decide.hardware import latest_confirmation, parse_confirmation
from specterm.engines.progress import Cancelled
from specterm.core.store import load_run, read_meta, write_meta_atomic

SHIPPED = Path(__file__).resolve().parent.parent / "streams" / "smollm2-135m-selfdraft-l25"
N_NEW = 12


def _copy_run(tmp_path: Path, gguf: Path) -> Path:
    """The shipped SmolLM2 run in a temp dir, its target path pointed at this machine's copy (same sha256)."""
    out = tmp_path / "smol"
    shutil.copytree(SHIPPED, out)
    meta = json.loads((out / "run.json").read_text())
    meta["target"]["spec"] = meta["target"]["path"] = str(gguf)
    write_meta_atomic(out, meta)  # sealed, as a writer of the store writes it (the shipped run is sealed)
    return out


def _config(run_dir: Path, **kw):
    from specterm.engines.base import ConfirmConfig

    base = dict(run=run_dir, per_corpus=1, corpora=("code", "math"), max_new_tokens=N_NEW, gammas=(3,),
                cost_repeats=1, cost_gammas=(1, 2, 3, 4), threads=1)
    base.update(kw)
    return ConfirmConfig(**base)


def confirm_run(config, on_progress=None, cancel=None, pair=None):
    """engines.confirm.confirm on the loaded torch pair of the fixture (one thread, as _config says)."""
    from specterm.engines.confirm import confirm
    from specterm.engines.torch import TorchPair

    return confirm(config, on_progress=on_progress, cancel=cancel, pair=TorchPair(pair, config.threads))


@pytest.mark.slow
def test_confirm_records_identical_outputs_and_a_realized_speedup(smollm2_pair, tmp_path):
    pair, gguf = smollm2_pair
    run_dir = _copy_run(tmp_path, gguf)
    # The shipped run carries measured costs now; give the copy its cost from before c_decode was
    # timed, so this session's costs must be installed (and the old one kept).
    meta = read_meta(run_dir)
    meta["cost"] = next(c for c in reversed(meta["cost"].get("earlier") or [meta["cost"]]) if "c_decode_s" not in c)
    write_meta_atomic(run_dir, meta)
    streams_before = (run_dir / "prompts.jsonl").read_bytes()
    old_cost = read_meta(run_dir)["cost"]
    assert "c_decode_s" not in old_cost
    record = confirm_run(_config(run_dir), pair=pair)

    assert (run_dir / "prompts.jsonl").read_bytes() == streams_before
    meta = read_meta(run_dir)
    assert meta["confirmations"][-1] == json.loads(json.dumps(record))
    conf = latest_confirmation(meta, required=True)
    assert conf.complete and conf.threads == 1 and conf.device == "cpu"
    run = load_run(run_dir)
    by_id = {(s.corpus, s.id): s for s in run.streams}
    assert [(p["corpus"], p["id"]) for p in record["prompts"]] == [("code", "code-01"), ("math", "math-01")]
    for corpus in ("code", "math"):
        choice = record["choices"][corpus]
        assert set(choice["gammas"]) == {choice["gamma_hw"], choice["gamma_iid_hw"], choice["gamma_hw_refeed"], 3}
        rows = [r for r in conf.results if r.corpus == corpus]
        assert sorted(r.gamma for r in rows) == choice["gammas"]
        bits = by_id[(corpus, f"{corpus}-01")].bits[:N_NEW]
        c = record["cost"]
        assert c["decision_clock"] == "cpu"  # CPU, one torch thread: decisions use process CPU time
        for r in rows:
            assert r.identical and r.tokens == N_NEW and r.prompts == 1
            assert r.realized > 0 and r.realized == pytest.approx(r.greedy_s / r.spec_s)
            # the real decoder made exactly the blocks the walk of the stored stream predicts
            _, blocks, _ = block_counts(bits, r.gamma)
            assert r.tokens_per_call == pytest.approx(N_NEW / int(blocks))
            row = next(x for x in record["results"] if x["corpus"] == corpus and x["gamma"] == r.gamma)
            spec = record["prompts"][["code", "math"].index(corpus)]["spec"][str(r.gamma)]
            # ... and as many 2-token draft steps as the walk has blocks after a fully accepted one
            assert spec["draft_2token_forwards"] == spec["refeeds_walk"]
            phi = spec["refeeds_walk"] / int(blocks)
            extra = max(0.0, c["c_draft2_cpu_s"] - c["c_draft_cpu_s"])
            expect = (N_NEW / int(blocks)) * c["c_decode_robust_s"] / (
                c["c_verify_robust_s"][str(r.gamma)] + r.gamma * c["c_draft_cpu_s"] + phi * extra)
            assert r.predicted == pytest.approx(expect) and row["refeed_share"] == pytest.approx(phi)
            assert row["realized_cpu"] > 0
    # the shipped run's cost predates c_decode: this session's costs become the run's, the old one kept
    assert meta["cost"]["c_decode_s"] == record["cost"]["c_decode_s"]
    assert meta["cost"]["earlier"][-1]["r_measured"] == old_cost["r_measured"]
    assert record["cross_check"]["greedy_step_s_median"] > 0


@pytest.mark.slow
def test_cancel_keeps_the_finished_prompts(smollm2_pair, tmp_path):
    pair, gguf = smollm2_pair
    run_dir = _copy_run(tmp_path, gguf)
    cancel = threading.Event()

    def on_progress(p):
        if p.prompt_index == 1 and p.phase == "generating":
            cancel.set()  # the second prompt has started: the first is complete and written

    with pytest.raises(Cancelled):
        confirm_run(_config(run_dir), on_progress=on_progress, cancel=cancel, pair=pair)
    conf = latest_confirmation(read_meta(run_dir), required=True)
    assert not conf.complete
    assert [p["id"] for p in conf.record["prompts"]] == ["code-01"]
    assert {r.corpus for r in conf.results} == {"code"} and all(r.identical for r in conf.results)


def test_missing_confirmation_is_refused_in_one_sentence():
    meta = json.loads((SHIPPED / "run.json").read_text())
    meta.pop("confirmations", None)  # the shipped run has been confirmed; a run that was not
    assert latest_confirmation(meta) is None
    with pytest.raises(SpectermError) as err:
        latest_confirmation(meta, required=True, where="streams/x/run.json")
    _one_sentence(str(err.value))
    assert "specterm confirm" in str(err.value)


GOOD = {"date": "2026-11-30T12:00:00+00:00", "device": "cpu", "threads": 1, "complete": True, "results": [
    {"corpus": "code", "gamma": 2, "prompts": 2, "tokens": 256, "greedy_s": 100.0, "spec_s": 80.0, "realized": 1.25,
     "predicted": 1.2, "tokens_per_call": 3.1, "identical": True}]}


@pytest.mark.parametrize("mutate", [
    lambda r: r.pop("results"),
    lambda r: r.__setitem__("threads", "one"),
    lambda r: r["results"][0].pop("realized"),
    lambda r: r["results"][0].__setitem__("gamma", 0),
    lambda r: r["results"][0].__setitem__("predicted", float("nan")),
    lambda r: r["results"][0].__setitem__("identical", "yes"),
    lambda r: r.__setitem__("results", ["not an object"]),
])
def test_corrupt_confirmation_is_refused_in_one_sentence(mutate):
    ok = parse_confirmation(json.loads(json.dumps(GOOD)))
    assert ok.results[0].ratio == pytest.approx(1.25 / 1.2)
    bad = json.loads(json.dumps(GOOD))
    mutate(bad)
    with pytest.raises(SpectermError) as err:
        latest_confirmation({"confirmations": [bad]}, where="streams/x/run.json")
    _one_sentence(str(err.value))
    assert "corrupt" in str(err.value)
    with pytest.raises(SpectermError):
        latest_confirmation({"confirmations": {"not": "a list"}})


def test_confirm_cli_refuses_a_missing_run_and_imported_bits(tmp_path):
    missing = subprocess.run([sys.executable, "-m", "specterm.cli", "confirm", str(tmp_path / "nope")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "is not a run directory" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    from specterm.engines.confirm import select_streams
    from specterm.core.store import Stream

    with pytest.raises(SpectermError, match="imported bits"):
        select_streams([Stream(id="a", corpus="c", bits=np.array([1, 0], dtype=np.uint8))], 2)
    run = load_run(SHIPPED)
    with pytest.raises(SpectermError, match="not in this run"):
        select_streams(run.streams, 1, ("poetry",))
    picked = select_streams(run.streams, 2, ("code", "prose"))
    assert [s.id for s in picked] == ["code-01", "code-02", "prose-01", "prose-02"]


def _one_sentence(msg: str) -> None:
    assert "\n" not in msg and msg.endswith(".") and msg.count(". ") == 0, msg


def test_confirmation_is_written_under_the_run_lock(tmp_path):
    from specterm.core.store import RunLock
    from specterm.engines.confirm_record import write_confirmation

    run = tmp_path / "smol"
    shutil.copytree(SHIPPED, run)
    before = (run / "prompts.jsonl").read_bytes()
    n = len(read_meta(run).get("confirmations") or [])
    with RunLock(run):  # another session (e.g. `specterm run --resume`) is writing this run
        with pytest.raises(SpectermError, match="being written by another specterm session") as err:
            write_confirmation(run, json.loads(json.dumps(GOOD)), None)
        _one_sentence(str(err.value))
    assert len(read_meta(run).get("confirmations") or []) == n
    assert write_confirmation(run, json.loads(json.dumps(GOOD)), None) == n
    assert read_meta(run)["confirmations"][n:] == [GOOD]
    assert (run / "prompts.jsonl").read_bytes() == before


def test_confirm_finds_the_models_by_name_and_checksum_or_takes_overrides(tmp_path, monkeypatch):
    from specterm.engines.torch import model_spec as _model_spec

    meta = read_meta(SHIPPED)
    assert _model_spec(meta["draft"], "draft") == "layers:25"  # a self-draft as recorded
    assert _model_spec(meta["target"], "target", "/elsewhere/model.gguf") == "/elsewhere/model.gguf"
    fake = tmp_path / "models" / "smollm2-135m-instruct" / "model.gguf"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"not the model")
    monkeypatch.setenv("SPECTERM_MODELS", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpectermError) as err:  # same name, other size and checksum: refused, not loaded
        _model_spec(meta["target"], "target")
    _one_sentence(str(err.value))
    with pytest.raises(SpectermError, match="--target"):
        _model_spec(None, "target")


@pytest.mark.slow
def test_batch_costs_batched_confirmation_and_the_decision_check(smollm2_pair, tmp_path):
    """--batch-costs stores costs by batch; the decision's g_hw (from the run's stored costs) is always
    timed; the stored decision check excludes the timed prompts; a batched confirmation at B = 2 gives
    the stored y in every row and exactly the blocks of the lockstep walk."""
    from specterm.core.streams.blockwalk import set_yield, sync_walk
    from specterm.core.decide.hardware import batch_costs, cost_curve, decision_hw
    pair, gguf = smollm2_pair
    run_dir = _copy_run(tmp_path, gguf)
    run = load_run(run_dir)
    record = confirm_run(_config(run_dir, corpora=("code",), gammas=(), decision_only=True, batch_costs=True,
                                 interleave_costs=False), pair=pair)
    meta = read_meta(run_dir)
    bc = batch_costs(meta["batch_cost"])
    assert bc is not None and bc.batches.tolist() == [1, 2, 4, 8] and bc.held_back == []  # a dense grid holds nothing back
    # B = 1 is the cost rounds' own forwards (reused, not timed again): a prefix of this session's samples
    rec_b, session = meta["batch_cost"], record["cost"]["samples_s"]
    assert rec_b["reused_b1"] and rec_b["whole_wall_s"] >= rec_b["wall_s"] > 0
    for key, src in (("target:1:1", "decode"), ("target:1:2", "verify:1"), ("target:1:5", "verify:4"), ("draft:1", "draft")):
        assert rec_b["samples_s"][key] == session[src][: len(rec_b["samples_s"][key])] and rec_b["samples_s"][key]
    # the decision's g_hw: the run's stored costs and the corpus's E_true, computed here independently
    gam = np.arange(1, 5)  # the confirmation's cost_gammas (_config)
    E, _ = set_yield([s.a for s in run.streams if s.corpus == "code"], gam)
    g_decision = decision_hw(gam, E, None, cost_curve(meta["cost"])).gamma_hw
    assert record["choices"]["code"]["gammas"] == [g_decision]
    (check,) = record["decision_checks"]
    assert check["excluded"] == ["code-01"] and check["leave_out_streams"] == 15 and check["K"] == 1
    lo, hi = check["decision_predicted"]["ci"]
    assert lo <= check["decision_predicted"]["value"] <= hi

    batched = confirm_run(_config(run_dir, per_corpus=2, corpora=("code",), gammas=(), batch=2,
                                  interleave_costs=False), pair=pair)
    (row,) = batched["batched_results"]
    assert row["identical"] and row["batch"] == 2 and row["ids"] == ["code-01", "code-02"]
    group = [s for s in run.streams if s.id in ("code-01", "code-02")]
    n = min(N_NEW, *(s.n for s in group))
    assert row["tokens_per_row"] == n
    assert row["target_calls"] == row["blocks_walk"] == sync_walk([s.bits for s in group], row["gamma"], n)
    # the forwards the batched generations made, timed: the in-generation prediction is E_sync t1 / (tv + g d1)
    t1, tv, d1 = row["decode_forward_s_median"], row["verify_forward_s_median"], row["draft_forward_s_median"]
    assert min(t1, tv, d1) > 0
    assert row["predicted_insitu"] == pytest.approx(row["E_sync"] * t1 / (tv + row["gamma"] * d1))
    assert row["ratio_insitu"] == pytest.approx(row["realized"] / row["predicted_insitu"])


@pytest.mark.slow
def test_costs_only_stores_a_dense_batch_grid_and_no_confirmation(smollm2_pair, tmp_path):
    """--costs-only: the costs by batch are stored (every m = 1..9 timed at B = 2, 4, 8, B = 1 from the
    cost rounds), no generation runs and no confirmation record is added; c_verify(g, B) is the timing."""
    from specterm.core.decide.hardware import batch_costs
    pair, gguf = smollm2_pair
    run_dir = _copy_run(tmp_path, gguf)
    before = read_meta(run_dir).get("confirmations") or []
    out = confirm_run(_config(run_dir, corpora=("code",), gammas=(), decision_only=True, batch_costs=True,
                              costs_only=True, interleave_costs=False, cost_gammas=tuple(range(1, 9))), pair=pair)
    meta = read_meta(run_dir)
    assert out["costs_only"] and (meta.get("confirmations") or []) == before
    rec = meta["batch_cost"]
    assert rec["held_back"] == [] and rec["reused_b1"]
    for B in (2, 4, 8):
        assert all(len(rec["samples_s"][f"target:{B}:{m}"]) == 2 for m in range(1, 10))
    bc = batch_costs(rec)
    clock = "samples_cpu_s" if rec["decision_clock"] == "cpu" else "samples_s"
    assert bc.c_verify[2, 1] == pytest.approx(float(np.median(rec[clock]["target:4:3"])))  # B = 4, g = 2
    assert bc.c_verify[0, 7] == pytest.approx(float(np.median(rec[clock]["target:1:9"])))


@pytest.mark.slow
def test_batch_grid_is_timed_between_the_prompts(smollm2_pair, tmp_path):
    """--batch-costs with interleaved costs (the default): only the g curve's rounds run before the first
    generation; the batch grid is timed in one slice after every prompt and stored when the last slice is
    done, with every (B, m) timed twice and the wait before the first generation recorded."""
    pair, gguf = smollm2_pair
    run_dir = _copy_run(tmp_path, gguf)
    seen: list[tuple[str, str]] = []
    record = confirm_run(_config(run_dir, gammas=(), decision_only=True, batch_costs=True, max_new_tokens=6),
                         on_progress=lambda p: seen.append((p.phase, p.message)), pair=pair)
    msgs = [m for _, m in seen]
    first_gen = next(i for i, m in enumerate(msgs) if "generating 6 tokens" in m)
    assert not any(":" in m and m.startswith("cost ") and "target:" in m for m in msgs[:first_gen])  # no grid forward yet
    slices = [i for i, m in enumerate(msgs) if m.startswith("costs by batch: slice")]
    assert [msgs[i] for i in slices] == ["costs by batch: slice 1/2", "costs by batch: slice 2/2"]
    second_prompt = next(i for i, m in enumerate(msgs) if m.startswith("math/"))
    assert slices[0] < second_prompt < slices[1]  # one slice after each prompt, not all at the end
    rec = read_meta(run_dir)["batch_cost"]
    assert rec["reused_b1"] and "slices" in rec["interleaved"]
    for B in (2, 4, 8):
        assert all(len(rec["samples_s"][f"target:{B}:{m}"]) == 2 for m in range(1, 10))
    assert 0 < rec["rounds_wall_s"] < rec["upfront_wall_s"] < rec["whole_wall_s"]
    assert rec["whole_wall_s"] == pytest.approx(rec["rounds_wall_s"] + rec["wall_s"])
    assert record["complete"]
    # the first block's tokens, as the decoder reports them, equal the exact walk's: leading accepts + 1
    run = load_run(run_dir)
    bits = {s.id: s.bits for s in run.streams}
    for p in record["prompts"]:
        for g, sp in p["spec"].items():
            lead = next((i for i, b in enumerate(bits[p["id"]][: int(g)]) if not b), int(g))
            assert sp["first_block_tokens"] == min(lead + 1, p["tokens"])
    assert all(r["ratio_steady"] is not None and r["ratio_steady"] > 0 for r in record["results"])
    # the cost-model check at the forwards these generations made: medians over the prompts, SPEC 6's block
    for r in record["results"]:
        mine = [p for p in record["prompts"] if p["corpus"] == r["corpus"]]
        t1 = float(np.median([p["greedy_decode_forward_s_median"] for p in mine]))
        tv = float(np.median([p["spec"][str(r["gamma"])]["verify_forward_s_median"] for p in mine]))
        d1 = float(np.median([p["spec"][str(r["gamma"])]["draft_forward_s_median"] for p in mine]))
        assert r["predicted_insitu"] == pytest.approx(r["E_prompts"] * t1 / (tv + r["gamma"] * d1))
        assert r["ratio_insitu"] == pytest.approx(r["realized"] / r["predicted_insitu"])
