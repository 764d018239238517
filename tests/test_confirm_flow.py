"""The engine-neutral `specterm confirm` flow (engines/confirm.py) on a fake engine pair: known timings
and a decoder that outputs the stored y, or diverges at a known token, so the record can be checked
against hand-computed values (realized = sum greedy s / sum speculative s, first divergence, the g
timed, the cost rounds, the complete flag) and an interrupted session keeps its finished prompts."""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any

import numpy as np
import pytest

from app_fixture import META, fixture_streams
from test_profiles import EPYC, FAST, FakeSampler
from specterm.core.streams.blockwalk import block_counts, set_yield
from specterm.core.report.analysis import analyse
from specterm.core.decide.hardware import cost_curve, decision_hw, latest_confirmation
from specterm.core.decide.hardware.profiles import PROFILES_KEY, confirmation_profile, new_profile, run_profiles
from specterm.engines.progress import Cancelled
from specterm.core.store import load_runs, read_meta, write_run
from specterm.engines.base import Generation, Item
from specterm.engines.base import ConfirmConfig
from specterm.engines.confirm import confirm

GAMMAS = list(range(1, 9))
GREEDY_S = {"p0": 3.0, "p1": 2.0, "c0": 5.0, "c1": 4.0}       # seconds of plain greedy per prompt
DIVERGE = ("c1", 2, 7)                                        # prompt c1 at g = 2 differs from y at token 7


def spec_s(sid: str, g: int) -> float:
    """Seconds of speculative decoding: a known function of the prompt and g."""
    return GREEDY_S[sid] / (1.5 + 0.1 * g)


class FakeConfirmPair:
    """Outputs the stored y (or y with one token changed at DIVERGE) in known seconds; target calls are
    the exact walk's blocks, as a lossless decoder makes them."""

    def __init__(self) -> None:
        self.warmed: list[tuple[str, int]] = []
        self.calls: list[tuple[str, Any]] = []

    def describe(self) -> dict[str, Any]:
        return {}

    def encode(self, text: str) -> list[int]:
        return list(range(len(text.split())))

    def cost_sampler(self, ctx, gammas, on_measure, cancel):
        return FakeSampler(gammas).s

    def batch_costs(self, *a: Any) -> dict[str, Any]:
        raise AssertionError("not asked for")

    def close(self) -> None:
        pass

    def confirm_setup(self, config, items, context, meta, report, cancel) -> dict[str, Any]:
        return {"device": "cpu", "dtype": "float32", "threads": 1, "method": "fake engine"}

    def timing(self):
        return nullcontext()

    def warm_up(self, item: Item, gamma: int) -> None:
        self.warmed.append((item.stream.id, gamma))

    def greedy_timed(self, item: Item, on_step) -> Generation:
        self.calls.append((item.stream.id, "greedy"))
        on_step(tokens=item.n)
        s = GREEDY_S[item.stream.id]
        return Generation(tokens=list(item.y), seconds=s, fields={"greedy_s": s, "greedy_cpu_s": s / 2})

    def speculative_timed(self, item: Item, gamma: int, on_step) -> Generation:
        self.calls.append((item.stream.id, gamma))
        tokens = list(item.y)
        if (item.stream.id, gamma) == DIVERGE[:2]:
            tokens[DIVERGE[2]] += 1
        s = spec_s(item.stream.id, gamma)
        return Generation(tokens=tokens, seconds=s, fields={
            "s": s, "cpu_s": s / 2, "target_calls": item.blocks[gamma], "blocks_walk": item.blocks[gamma],
            "refeeds_walk": item.refeeds[gamma]})

    def result_extras(self, spec_rows, row) -> dict[str, Any]:
        return {"fake_rows": len(spec_rows)}

    def record_checks(self, prompt_rows, cost) -> dict[str, Any]:
        return {"fake_check": len(prompt_rows)}

    def batch_cost_job(self, *a: Any):
        raise AssertionError("not asked for")

    def batch_record_fields(self) -> dict[str, Any]:
        return {}

    def time_batched(self, session):
        raise AssertionError("not asked for")


class FakeEngine:
    name = "fake"
    gate_held = True
    always_timed = (2,)
    times_session_choices = False
    installs_cost = False
    min_tokens = 1


def _run(tmp_path):
    meta = {**META, "hardware": {"cpu": EPYC, "cpu_count": 2}, "cost": FAST}
    return write_run(tmp_path / "run", meta, fixture_streams())


def _config(run, **kw) -> ConfirmConfig:
    base: dict[str, Any] = dict(run=run, engine="fake", per_corpus=2, gammas=(3,), max_new_tokens=24, cost_repeats=2,
                                cost_gammas=tuple(GAMMAS), threads=1)
    base.update(kw)
    return ConfirmConfig(**base)


def test_the_shared_flow_records_realized_sums_divergence_and_the_g_timed(tmp_path):
    run = _run(tmp_path)
    pair = FakeConfirmPair()
    record = confirm(_config(run), pair=pair, engine=FakeEngine())  # type: ignore[arg-type]
    streams = {s.id: s for s in fixture_streams()}

    # the prompts: the first 2 of each corpus whose gate held (p2's gate fails), corpora sorted
    assert [(p["corpus"], p["id"]) for p in record["prompts"]] == [("code", "c0"), ("code", "c1"),
                                                                   ("prose", "p0"), ("prose", "p1")]
    # the g timed: the run's decision (its profile's costs, the corpus's E_true, computed here), 2 and --gamma 3
    for corpus in ("code", "prose"):
        E = set_yield([s.a for s in streams.values() if s.corpus == corpus and s.valid_len], np.array(GAMMAS))[0]
        g_dec = decision_hw(np.array(GAMMAS), E, None, cost_curve(FAST)).gamma_hw
        choice = record["choices"][corpus]
        assert choice["gamma_decision"] == g_dec and choice["decision_costs"] == "the run's stored costs"
        assert choice["gammas"] == sorted({g_dec, 2, 3})
    # methods alternate: the order is reversed on every other prompt; the warm-up ran once, untimed
    for i, p in enumerate(record["prompts"]):
        forward = ["greedy", *map(str, record["choices"][p["corpus"]]["gammas"])]
        assert p["order"] == (forward if i % 2 == 0 else forward[::-1])
    assert pair.warmed == [("c0", record["choices"]["code"]["gammas"][0])]
    # per prompt: identity with the stored y and the first divergence where the fake decoder differs
    for p in record["prompts"]:
        assert p["greedy_identical"] and p["greedy_first_mismatch"] is None
        assert p["tokens"] == 24 and p["greedy_s"] == GREEDY_S[p["id"]]
        for g, sp in p["spec"].items():
            diverges = (p["id"], int(g)) == DIVERGE[:2]
            assert sp["identical"] is not diverges
            assert sp["first_mismatch"] == (DIVERGE[2] if diverges else None)
            assert sp["blocks_walk"] == int(block_counts(streams[p["id"]].bits[:24], int(g))[1])
    # per (corpus, g): realized is the ratio of the sums over the corpus's prompts
    rows = {(r["corpus"], r["gamma"]): r for r in record["results"]}
    assert set(rows) == {(c, g) for c in ("code", "prose") for g in record["choices"][c]["gammas"]}
    for (corpus, g), r in rows.items():
        ids = ["c0", "c1"] if corpus == "code" else ["p0", "p1"]
        assert r["realized"] == pytest.approx(sum(GREEDY_S[i] for i in ids) / sum(spec_s(i, g) for i in ids))
        blocks = sum(int(block_counts(streams[i].bits[:24], g)[1]) for i in ids)
        assert r["tokens_per_call"] == pytest.approx(48 / blocks)
        assert r["identical"] is ((corpus, g) != ("code", DIVERGE[1]))
        assert r["fake_rows"] == 2  # the engine's columns over the spec rows of this (corpus, g)
    assert record["fake_check"] == 4
    # the session's cost rounds: the timed repeats, then one more after every prompt (the warm-up untimed)
    assert all(len(v) == 2 + 4 for v in record["cost"]["samples_s"].values())
    assert record["complete"] is True and record["cost_context"] == round(np.mean([2 + 12] * 4))
    stored = read_meta(run)["confirmations"][-1]
    assert stored["complete"] and stored["results"] == pytest.approx(record["results"])
    assert [c["gamma"] for c in record["decision_checks"]] == [r["gamma"] for r in record["results"]]
    conf = latest_confirmation(read_meta(run), required=True)
    assert conf.complete and {(r.corpus, r.gamma) for r in conf.results} == set(rows)


def test_an_interrupted_session_keeps_its_finished_prompts(tmp_path):
    run = _run(tmp_path)
    cancel = threading.Event()

    def on_progress(p):
        if p.phase == "generating" and p.prompt_index == 2:
            cancel.set()  # the third prompt has started: two are complete and written

    with pytest.raises(Cancelled):
        confirm(_config(run), on_progress=on_progress, cancel=cancel, pair=FakeConfirmPair(),  # type: ignore[arg-type]
                engine=FakeEngine())  # type: ignore[arg-type]
    rec = read_meta(run)["confirmations"][-1]
    assert rec["complete"] is False and "decision_checks" not in rec
    assert [p["id"] for p in rec["prompts"]] == ["c0", "c1"]
    assert {r["corpus"] for r in rec["results"]} == {"code"}
    r = next(x for x in rec["results"] if x["gamma"] == 3)
    assert r["realized"] == pytest.approx((GREEDY_S["c0"] + GREEDY_S["c1"]) / (spec_s("c0", 3) + spec_s("c1", 3)))
    conf = latest_confirmation(read_meta(run), required=True)
    assert not conf.complete and [p["id"] for p in conf.record["prompts"]] == ["c0", "c1"]


H200 = "NVIDIA H200"
CUDA_DEVICE = {"kind": "cuda", "name": H200, "cores": 132, "threads": None, "memory_gb": 139.8, "driver": "CUDA 13.0",
               "capability": "9.0"}


class FakeCudaPair(FakeConfirmPair):
    """The fake pair on a GPU: the engine describes an H200 and times on "cuda"."""

    def describe(self) -> dict[str, Any]:
        return {"engine": {"name": "torch", "version": "2.11.0+cu130", "build": None}, "device": CUDA_DEVICE,
                "dtype": "float32"}

    def confirm_setup(self, config, items, context, meta, report, cancel) -> dict[str, Any]:
        return {"device": "cuda", "dtype": "float32", "threads": 16, "method": "fake engine"}


def test_a_confirmation_on_a_gpu_is_shown_under_the_gpus_profile(tmp_path, monkeypatch):
    """Seen on an H200 (benchmarks/gpu/check.sh): `confirm` stored its record, but the record named no GPU, so
    it belonged to no profile and the report showed no confirmation at all. Now it names the GPU, belongs to
    the H200's profile and appears under that profile's decision, with its decision check."""
    monkeypatch.setenv("SPECTERM_MACHINE_GPUS", H200)
    profile = new_profile(FAST, FakeCudaPair().describe(), source="measured by specterm costs")
    meta = {**META, "hardware": {"cpu": "Intel(R) Xeon(R) Processor", "cpu_count": 16}, "device": "cuda",
            "dtype": "float32", PROFILES_KEY: [profile]}
    run = write_run(tmp_path / "run", meta, fixture_streams())
    record = confirm(_config(run, threads=16), pair=FakeCudaPair(), engine=FakeEngine())  # type: ignore[arg-type]
    stored = read_meta(run)["confirmations"][-1]
    assert stored["hardware"]["gpu"] == H200 and stored["device"] == "cuda"
    assert confirmation_profile(stored, run_profiles(read_meta(run))) == profile["id"]
    rep = analyse(load_runs([run]), boot=200, shuffles=0)
    for corpus in ("code", "prose"):
        d = rep.sets[corpus].decision_hw
        assert d.profile == profile["id"] and d.matches_this_machine is True
        rows = {r.gamma: r for r in d.confirmed}
        mine = {r["gamma"]: r for r in record["results"] if r["corpus"] == corpus}
        assert set(rows) == set(mine) and rows
        for g, r in rows.items():
            assert r.realized == pytest.approx(mine[g]["realized"])
            assert r.in_ci is not None  # its decision check, against the H200 profile's costs
