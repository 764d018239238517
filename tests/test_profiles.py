"""Cost profiles (SPEC 6 "Cost profiles", issue 33): migration of old runs, matching this machine, a
decision per profile (two that disagree are both shown), another machine's profile never used
silently, the stopping rule of `specterm costs`, and `specterm costs` itself on a fake engine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app_fixture import META, judged_streams
from specterm.core.decide import machine as machine_mod
from specterm.core.report.analysis import analyse
from specterm.core.streams.blockwalk import set_yield
from specterm.core.errors import SpectermError
from specterm.core.report.export import context_line, to_markdown
from specterm.core.decide.hardware import profiles as P
from specterm.core.decide.hardware.settle import set_settle
from specterm.core.decide.machine import Machine, other_cpu_share
from specterm.core.store import load_run, load_runs, read_meta, write_run

G = list(range(1, 17))
EPYC, XEON = "AMD EPYC", "Intel(R) Xeon(R) Processor"


def cost(c_decode, c_verify, c_draft, when, spread=0.0, n=7, threads=1):
    """A cost record with `n` samples per quantity around the given medians (+-spread, relative)."""
    jitter = np.linspace(-spread, spread, n)

    def samples(c):
        return [float(c * (1 + j)) for j in jitter]

    ver = {str(g): float(c_verify(g) if callable(c_verify) else c_verify) for g in G}
    s = {"decode": samples(c_decode), "draft": samples(c_draft), "draft2": samples(c_draft)}
    s.update({f"verify:{g}": samples(v) for g, v in ver.items()})
    return {"r_measured": c_draft / c_decode, "c_decode_s": c_decode, "c_draft_s": c_draft, "c_verify_s": ver,
            "samples_s": s, "threads": threads, "measured_at": when, "context": 100}


def confirmation(date, cpu, cost_when, threads=1):
    return {"date": date, "device": "cpu", "threads": threads, "hardware": {"cpu": cpu, "cpu_count": 2},
            "cost": {"measured_at": cost_when}, "complete": True, "results": []}


FAST = cost(0.5, 0.5, 0.05, "2026-12-01T10:00:00+00:00")           # verify = 1 decode step: speculate
SLOW = cost(0.5, lambda g: 5.0 + g, 0.2, "2026-11-30T10:00:00+00:00")  # verify = 12+ decode steps: do not


def legacy_meta():
    """An old run: SLOW measured on an EPYC (its confirmation's session costs), FAST on a Xeon (a
    confirmation 10 minutes later names the machine), both before profiles existed."""
    return {**META, "name": "legacy", "created": "2026-11-29T09:00:00+00:00", "hardware": {"cpu": EPYC, "cpu_count": 2},
            "device": "cpu", "dtype": "float32",
            "cost": {**FAST, "earlier": [{"r_measured": 0.1, "c_draft_s": 0.1, "c_verify_s": {"1": 1.0}}, SLOW]},
            "confirmations": [confirmation("2026-11-30T09:50:00+00:00", EPYC, SLOW["measured_at"]),
                              confirmation("2026-12-01T10:10:00+00:00", XEON, "2026-12-01T10:20:00+00:00")]}


def test_old_runs_migrate_with_the_machine_of_the_nearest_record():
    profiles = P.run_profiles(legacy_meta())
    # the earlier cost without c_decode decides nothing and is not a profile; the other two are, oldest first
    assert [p.cost["measured_at"] for p in profiles] == [SLOW["measured_at"], FAST["measured_at"]]
    slow, fast = profiles
    assert slow.device["name"] == EPYC and "these are its session costs" in slow.record["source"]
    assert fast.device["name"] == XEON and "nearest in time" in fast.record["source"] and "0.2 h" in fast.record["source"]
    assert slow.engine["name"] == fast.engine["name"] == "torch"
    assert slow.device["threads"] == 1
    assert fast.label() == "Intel Xeon Processor, 1 thread, torch float32"
    # the same costs read twice get the same id; a changed cost gets another
    assert P.run_profiles(legacy_meta())[1].id == fast.id
    assert P.profile_id({**FAST, "c_decode_s": 0.51}) != fast.id


def test_a_cost_without_any_time_is_marked_unknown():
    meta = {**META, "cost": {k: v for k, v in FAST.items() if k != "measured_at"}}
    (only,) = P.run_profiles(meta)
    assert only.record["source"].startswith("migrated: machine unknown")
    assert only.label().startswith("unknown machine")
    assert not only.matches(Machine(cpu=EPYC, cores=2, threads=1), "torch")


def test_matching_needs_engine_device_and_threads():
    rec = {"id": "p1", "engine": {"name": "torch"}, "device": {"kind": "cpu", "name": EPYC, "threads": 1}}
    p = P.Profile(rec)
    assert p.matches(Machine(cpu=EPYC, cores=2, threads=1), "torch")
    assert not p.matches(Machine(cpu=EPYC, cores=2, threads=2), "torch")  # another thread count
    assert not p.matches(Machine(cpu=XEON, cores=2, threads=1), "torch")  # another CPU
    assert not p.matches(Machine(cpu=EPYC, cores=2, threads=1), "llama.cpp")  # another engine
    gpu = P.Profile({"id": "g", "engine": {"name": "torch"}, "device": {"kind": "cuda", "name": "NVIDIA H100"}})
    assert gpu.matches(Machine(cpu=EPYC, cores=2, threads=1, gpus=("NVIDIA H100",)), "torch")
    assert not gpu.matches(Machine(cpu=EPYC, cores=2, threads=1, gpus=("NVIDIA L4",)), "torch")


def test_a_gpu_confirmation_belongs_to_the_profile_of_its_gpu():
    """A confirmation on CUDA names its GPU in hardware.gpu (engines.confirm.confirmation_hardware); its device
    may be "cuda" or "cuda:N". The H200's confirmation belongs to the H200 profile, whatever the CPU beside it."""
    h200 = P.Profile({"id": "h", "engine": {"name": "torch"}, "device": {"kind": "cuda", "name": "NVIDIA H200"},
                      "measured_at": "2026-12-04T14:50:04+00:00"})
    l4 = P.Profile({"id": "l", "engine": {"name": "torch"}, "device": {"kind": "cuda", "name": "NVIDIA L4"},
                    "measured_at": "2026-12-04T14:50:04+00:00"})
    cpu = P.Profile({"id": "c", "engine": {"name": "torch"}, "device": {"kind": "cpu", "name": XEON, "threads": 16}})
    profiles = [cpu, l4, h200]
    for device in ("cuda", "cuda:0", "cuda:1"):
        rec = {"date": "2026-12-04T14:50:34+00:00", "device": device, "threads": 16,
               "hardware": {"cpu": XEON, "cpu_count": 16, "gpu": "NVIDIA H200"}}
        assert P.confirmation_profile(rec, profiles) == "h"
    # without the GPU's name it cannot be placed (never on the CPU's profile)
    bare = {"date": "2026-12-04T14:50:34+00:00", "device": "cuda", "threads": 16, "hardware": {"cpu": XEON, "cpu_count": 16}}
    assert P.confirmation_profile(bare, profiles) is None


def test_shown_profile_is_the_newest_matching_else_the_newest_said_not_here():
    profiles = P.run_profiles(legacy_meta())
    epyc = Machine(cpu=EPYC, cores=2, threads=1)
    shown, ok = P.shown_profile(profiles, epyc, "torch")
    assert ok and shown is profiles[0]
    other = Machine(cpu="AMD Ryzen", cores=8, threads=8)
    shown, ok = P.shown_profile(profiles, other, "torch")
    assert not ok and shown is profiles[1]
    assert P.shown_profile(profiles, other, "torch", requested=profiles[0].id[:5]) == (profiles[0], False)


def test_confirmations_belong_to_the_profile_of_their_machine():
    meta = legacy_meta()
    profiles = P.run_profiles(meta)
    ids = [P.confirmation_profile(c, profiles) for c in meta["confirmations"]]
    assert ids == [profiles[0].id, profiles[1].id]
    view = P.profile_meta(meta, profiles[0])
    assert view["cost"] is profiles[0].cost and [c["date"] for c in view["confirmations"]] == ["2026-11-30T09:50:00+00:00"]
    # a confirmation that names its profile keeps it
    named = {**meta["confirmations"][1], "profile": profiles[0].id}
    assert P.confirmation_profile(named, profiles) == profiles[0].id


def _analyse(tmp_path, monkeypatch, machine):
    monkeypatch.setattr("specterm.core.report.analysis.this_machine", lambda: machine)
    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    return analyse(load_runs([path]), boot=200, shuffles=0), path


def _E(rep, name):
    return np.array([rep.sets[name].curve.at("E_true", g) for g in G], dtype=float)


def test_two_profiles_that_disagree_are_both_shown_each_naming_its_machine(tmp_path, monkeypatch):
    rep, _ = _analyse(tmp_path, monkeypatch, Machine(cpu=EPYC, cores=2, threads=1))
    slow_id, fast_id = (p["id"] for p in rep.profiles)
    for name, s in rep.ordered_sets():
        E = _E(rep, name)
        fast, slow = s.decision_by_profile[fast_id], s.decision_by_profile[slow_id]
        # closed forms: FAST S(g) = E(g) / (1 + 0.1 g); SLOW S(g) = E(g) 0.5 / (5 + g + 0.2 g)
        S_fast, S_slow = E / (1 + 0.1 * np.array(G)), E * 0.5 / (5 + 1.2 * np.array(G))
        assert fast.speedup_hw == pytest.approx(np.nanmax(S_fast), rel=1e-9)
        assert slow.speedup_hw == pytest.approx(np.nanmax(S_slow), rel=1e-9)
        assert fast.verdict_kind == "speculate" and slow.verdict_kind == "do_not_speculate"
        assert fast.verdict.startswith(f"speculate with g = {fast.gamma_hw} on Intel Xeon Processor, 1 thread, torch float32:")
        assert slow.verdict.startswith("do not speculate on AMD EPYC, 1 thread, torch float32:")
        # this machine is the EPYC: its profile is the one shown
        assert s.decision_hw.profile == slow_id and s.decision_hw.matches_this_machine is True
        assert s.decision_hw.verdict == slow.verdict
    assert rep.profile_note is None
    md = to_markdown(rep)
    assert "Decision by machine" in md and "(shown, this machine)" in md
    assert md.count("| pooled | Intel Xeon Processor, 1 thread, torch float32") == 1
    assert "costs: AMD EPYC, 1 thread, torch float32 (this machine)" in context_line(rep)
    data = json.loads(json.dumps(rep.to_dict()))
    assert data["sets"]["pooled"]["decision_hw"]["profile"] == slow_id
    assert set(data["sets"]["pooled"]["decision_by_profile"]) == {slow_id, fast_id}
    assert [p["matches_this_machine"] for p in data["profiles"]] == [True, False]


def test_another_machines_profile_is_never_used_silently(tmp_path, monkeypatch):
    rep, path = _analyse(tmp_path, monkeypatch, Machine(cpu="AMD Ryzen 9", cores=16, threads=16))
    assert rep.profile_note is not None and "specterm costs" in rep.profile_note and str(path) in rep.profile_note
    for _name, s in rep.ordered_sets():
        d = s.decision_hw
        assert d.matches_this_machine is False and d.machine is not None and d.machine in d.verdict
    assert "(not this machine)" in context_line(rep)
    md = to_markdown(rep)
    assert rep.profile_note.replace("|", "\\|") in md


def test_the_cache_key_names_the_machine(tmp_path, monkeypatch):
    from specterm.core.report import cache

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    runs = load_runs([path])
    monkeypatch.setattr(cache, "this_machine", lambda: Machine(cpu=EPYC, cores=2, threads=1))
    a = cache.cache_key(runs, {"boot": 0})
    monkeypatch.setattr(cache, "this_machine", lambda: Machine(cpu=XEON, cores=2, threads=1))
    assert cache.cache_key(runs, {"boot": 0}) != a


def test_other_cpu_share_is_machine_busy_minus_own():
    # 10 s of wall, the machine busy 13 s of CPU, this process 9.5 s: others used 0.35 of a core
    assert other_cpu_share(100.0, 113.0, 50.0, 59.5, 10.0) == pytest.approx(0.35)
    assert other_cpu_share(100.0, 100.0, 50.0, 51.0, 10.0) == 0.0  # never negative (tick rounding)


def test_busy_ticks_of_the_machine_or_of_pinned_cpus():
    # fields: user nice system idle iowait irq softirq steal; busy = all but idle and iowait
    stat = ["cpu  100 5 50 1000 40 3 2 1 0 0\n", "cpu0 60 5 30 400 30 2 1 1 0 0\n", "cpu1 40 0 20 600 10 1 1 0 0 0\n",
            "intr 12345\n"]
    assert machine_mod.busy_ticks(stat) == 100 + 5 + 50 + 3 + 2 + 1
    assert machine_mod.busy_ticks(stat, {0}) == 60 + 5 + 30 + 2 + 1 + 1
    assert machine_mod.busy_ticks(stat, [0, 1]) == 99 + 62
    assert machine_mod.busy_ticks(stat, {2}) is None  # a CPU the file does not list


def test_pinned_timing_judges_its_own_cpus_and_not_the_machine_load(monkeypatch):
    from specterm.engines import costs as C

    asked = []
    monkeypatch.setattr(C, "timing_cpus", lambda: frozenset({0}))
    monkeypatch.setattr(C, "cpu_busy_seconds", lambda cpus=None: asked.append(cpus) or 0.0)
    q = C.Quiet()
    assert asked == [frozenset({0})]
    # a load of 3.5 on 2 cores is busy by the load rule, but pinned only the CPU share on CPU 0 decides
    assert not q.busy(0.05, 3.5) and q.busy(0.5, 0.1)
    assert q.busy(None, 3.5)  # no share to read: the load rule again
    assert q.record(0.05, 3.5) == {"avg": 3.5, "other_cpu_share": 0.05, "cpus": [0]}
    monkeypatch.setattr(C, "timing_cpus", lambda: None)
    free = C.Quiet()
    assert free.busy(0.05, 3.5) and "cpus" not in free.record(0.05, 3.5)


def test_a_pinned_profile_is_busy_only_when_marked():
    base = {"id": "p", "device": {"kind": "cpu", "name": EPYC, "cores": 2, "threads": 1}, "cost": {}}
    assert P.Profile({**base, "load": {"avg": 3.5}, "busy": False}).busy  # the load rule: 3.5 > 2 + 1
    assert not P.Profile({**base, "load": {"avg": 3.5, "cpus": [0]}, "busy": False}).busy
    assert P.Profile({**base, "load": {"avg": 0.2, "cpus": [0]}, "busy": True}).busy


def _bits(alpha, n=400, seed=0):
    return (np.random.default_rng(seed).random(n) < alpha).astype(np.int8)


def test_settle_stops_when_the_costs_decide_and_not_before():
    E = set_yield([_bits(0.8, seed=i) for i in range(8)], np.array(G))[0]
    # verify = decode, tight samples: S(g_hw) far above 1, costs known to < 1%: settled
    tight = set_settle(G, E, cost(0.5, 0.5, 0.05, "t", spread=0.005))
    assert tight is not None and tight.settled and tight.ci[0] > 1
    # costs chosen so that S(g_hw) is about 1, with +-30% sample spread: the cost-only interval straddles 1
    # and is wider than +-2%: not settled, and the verdict's side is what is open
    E3 = float(E[2])
    loose = set_settle(G, E, cost(0.5, lambda g: 0.5 * E3 - 3 * 0.05 if g == 3 else 0.5 * float(E[g - 1]), 0.05, "t",
                                  spread=0.3))
    assert loose is not None and not loose.side and not loose.settled
    assert loose.ci[0] < 1 < loose.ci[1]
    # the g worth timing again include g_hw and exclude a g whose upper bound is below g_hw's lower bound
    assert loose.gamma_hw in loose.focus


def test_settle_g_choice_within_one_percent_is_settled():
    # E flat in g (every block yields the same), verify = decode, negligible draft: S(g) equal to < 1% for all g
    E = np.full(len(G), 3.0)
    got = set_settle(G, E, cost(0.5, 0.5, 1e-6, "t", spread=0.2))
    assert got is not None and got.choice and got.gamma_hw == 1  # ties: the smallest g


def test_settle_g_choice_settles_when_the_runner_up_is_at_most_regret_better_at_the_costs_bound(monkeypatch):
    # E rising to g = 3 (2.7: far enough above E(2) that pooling c_verify(3) >= c_verify(2) does not cap the
    # ratio S(3)/S(2) below REGRET); verify chosen so that S(2) and S(3) differ by 1.5% at the point
    # estimate. With +-3% sample spread the lead is not clear of 0 in the cost replicates and not within
    # TIE, but the runner-up's upper bound over g_hw is within REGRET (5%); with +-8% it is not (upper ends 1.4% and 6.3% over 400 replicates).
    # Computed independently: S(g) = E c_dec / (c_ver(g) + g c_draft).
    E = np.array([1.8, 2.4, 2.7] + [2.7] * (len(G) - 3))
    c_dec, c_dr = 1.0, 0.01

    def ver(g, lead):
        if g == 2:
            return 1.0
        if g == 3:  # S(3) = S(2) * (1 - lead)
            s2 = 2.4 * c_dec / (1.0 + 2 * c_dr)
            return 2.7 * c_dec / (s2 * (1 - lead)) - 3 * c_dr
        return 3.0

    medium = cost(c_dec, lambda g: ver(g, 0.015), c_dr, "t", spread=0.03, n=9)
    got = set_settle(G, E, medium)
    assert got is not None and got.gamma_hw == 2 and got.runner_up == 3 and got.choice
    monkeypatch.setattr("specterm.core.decide.hardware.settle.REGRET", 0.0)  # without the regret bound it stays open
    assert not set_settle(G, E, medium).choice
    monkeypatch.undo()
    loose = set_settle(G, E, cost(c_dec, lambda g: ver(g, 0.015), c_dr, "t", spread=0.08, n=9))
    assert loose is not None and loose.gamma_hw == 2 and not loose.choice and "g" in loose.open_parts()


# ------------------------------------------------------------------- specterm costs (fake engine) ---


class FakeSampler:
    """A RoundRobinSampler whose forwards take known CPU seconds (no model): decode 0.5, draft 0.05,
    verify(g) 0.5 + 0.01 g, each with a small deterministic jitter."""

    def __init__(self, gammas):
        from specterm.engines.timing import RoundRobinSampler

        class S(RoundRobinSampler):
            def _time(inner, quantity):
                label = quantity[0]
                base = {"decode": 0.5, "draft": 0.05, "draft2": 0.06}.get(label)
                if base is None:
                    base = 0.5 + 0.01 * int(label.split(":")[1])
                inner.k = getattr(inner, "k", 0) + 1
                t = base * (1 + 0.002 * ((inner.k % 5) - 2))
                return t, t

            def summary(inner):
                from specterm.engines.timing import with_curve

                return with_curve({**inner.common_summary(), "threads": 1, "method": "fake", "decision_clock": "cpu"})

        self.s = S()
        self.s.gammas = list(gammas)
        self.s.base = 100
        self.s.quantities = [("decode",), ("draft",), ("draft2",)] + [(f"verify:{g}",) for g in gammas]
        self.s._start(None, None)


class FakePair:
    def describe(self):
        return {"engine": {"name": "torch", "version": "0.0-test", "build": {}},
                "device": {"kind": "cpu", "name": EPYC, "cores": 2, "threads": 1}, "dtype": "float32"}

    def encode(self, text):
        return list(range(len(text.split())))

    def cost_sampler(self, ctx, gammas, on_measure, cancel):
        return FakeSampler(gammas).s

    def batch_costs(self, *a):
        raise AssertionError("not asked for")

    def close(self):
        pass


class FakeEngine:
    name = "torch"

    def open(self, meta, options, report):
        return FakePair()


def _fake_costs(tmp_path, monkeypatch, busy_rounds=0, busy_ok=False):
    from specterm.engines import costs as C

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    monkeypatch.setattr(C, "engine_for", lambda meta: FakeEngine())
    monkeypatch.setattr(C, "timing_cpus", lambda: None)  # whatever this test process is pinned to
    reads = iter([(0.0, 0.1)] + [(1.5, 3.5)] * busy_rounds + [(0.0, 0.5)] * 100)
    monkeypatch.setattr(C.Quiet, "read", lambda self: next(reads))
    monkeypatch.setattr(C, "QUIET_POLL", 0.05)
    warnings = []
    record = C.measure(C.CostsConfig(run=path, busy_ok=busy_ok, quiet_wait=1.0), warn=warnings.append)
    return path, record, warnings


def test_costs_appends_a_profile_and_keeps_the_migrated_ones(tmp_path, monkeypatch):
    path, record, warnings = _fake_costs(tmp_path, monkeypatch)
    assert warnings == []
    meta = read_meta(path)
    ids = [p["id"] for p in meta["profiles"]]
    old = [p.id for p in P.run_profiles(legacy_meta())]
    assert ids == [*old, record["id"]]                  # migrated first, never overwritten, the new one last
    assert meta["cost"] == legacy_meta()["cost"]        # the legacy cost record is left as it was
    assert record["device"]["name"] == EPYC and record["engine"]["version"] == "0.0-test"
    assert record["busy"] is False and record["stop_reason"].startswith("settled after 3 timed rounds")
    assert record["cost"]["c_decode_s"] == pytest.approx(0.5, rel=0.01)
    # this machine (an EPYC, 1 thread) now shows the new profile's decision
    monkeypatch.setattr("specterm.core.report.analysis.this_machine", lambda: Machine(cpu=EPYC, cores=2, threads=1))
    rep = analyse([load_run(path)], boot=100, shuffles=0)
    assert rep.sets["pooled"].decision_hw.profile == record["id"]
    assert len(rep.sets["pooled"].decision_by_profile) == 3


def test_costs_drops_busy_rounds_and_waits(tmp_path, monkeypatch):
    _, record, warnings = _fake_costs(tmp_path, monkeypatch, busy_rounds=1)
    assert len(warnings) == 1 and "the round is dropped" in warnings[0]
    assert record["busy"] is False and record["rounds"] == 3
    counts = {k: len(v) for k, v in record["cost"]["samples_s"].items()}
    # the busy round's samples are gone: 3 timed rounds, the first of the whole curve, then focused ones
    assert counts["decode"] == counts["draft"] == 3 and set(counts.values()) <= {1, 3}


def test_prunable_takes_the_lower_of_a_g_own_time_and_the_envelope():
    # no noise (identical replicates), c_decode 1, c_draft 0.1, E and c_verify by hand; S(g) = E / (c_ver + 0.1 g)
    # S(2) = 2.5 / 1.3 = 1.923 is g_hw. g = 3 timed once at 5.0 (a straggler): its envelope max(1, 1.0, 1.1) = 1.1
    # bounds S_up(3) = 3.0 / 1.4 = 2.143, 11% above S(2): not pruned. g = 4 at 2.0 under an envelope of 5.0:
    # S_up(4) = 3.2 / 2.4 = 1.333: pruned. g = 1: 1.8 / 1.1 = 1.636: pruned. A dip (c_ver(4) = 0.9 < the
    # envelope): S_up(4) = 3.2 / 1.3 = 2.46: not pruned.
    from specterm.core.decide.hardware.curve import CostReplicates
    from specterm.core.decide.hardware.settle import prunable

    grid = np.array([1, 2, 3, 4])
    E = np.array([1.8, 2.5, 3.0, 3.2])

    def reps(ver):
        n = 5
        return CostReplicates(gammas=grid, c_decode=np.ones(n), c_verify=np.tile(ver, (n, 1)), c_draft=np.full(n, 0.1))

    S2 = np.full(5, 2.5 / 1.3)
    got = prunable(grid, E, reps(np.array([1.0, 1.1, 5.0, 2.0])), [0, 1, 2, 3], S2)
    assert got.tolist() == [True, False, False, True]  # g = 2 at its envelope 1.0: S_up(2) = 2.5 / 1.2, 8% above S(2)
    assert prunable(grid, E, reps(np.array([1.0, 1.1, 5.0, 0.9])), [0, 1, 2, 3], S2).tolist() == [True, False, False, False]


def test_a_quantity_timed_once_borrows_the_relative_noise_of_the_repeated_ones():
    from specterm.core.decide.hardware.curve import quantity_se, relative_noise

    # [1, 2, 3]: median_se = 0.929 * (2.5 - 1.5) / sqrt(3); times sqrt(3) / median 2 = 0.4645, the same for [2, 4, 6]
    samples = {"a": [1.0, 2.0, 3.0], "b": [2.0, 4.0, 6.0], "c": [5.0]}
    sigma = relative_noise(samples, ["a", "b", "c"])
    assert sigma == pytest.approx(0.4645)
    assert quantity_se([5.0], sigma) == pytest.approx(0.4645 * 5.0)
    assert quantity_se([5.0, 7.0], sigma) == pytest.approx(0.4645 * 6.0 / np.sqrt(2))
    assert relative_noise({"c": [5.0], "d": [1.0, 2.0]}, ["c", "d"]) is None and quantity_se([5.0], None) is None


def test_settle_waits_for_three_samples_of_g_hw_and_times_every_g_it_cannot_prune():
    # c_decode 0.5, c_draft 0.2, verify = decode for g <= 2, 1.5 above; alpha 0.8 (E(1..4) about 1.8, 2.4, 3.0,
    # 3.4): S(2) = E(2) 0.5 / 0.9 is g_hw, and even at the envelope (0.5) S_up(g >= 3) = E(g) 0.5 / (0.5 + 0.2 g)
    # is below it (S_up(3) / S(2) = (E(3) / E(2)) (0.9 / 1.1) < 1)
    E = set_yield([_bits(0.8, seed=i) for i in range(8)], np.array(G))[0]
    assert E[2] / E[1] * 0.9 / 1.1 < 1

    def ver(g):
        return 0.5 if g <= 2 else 1.5

    full = cost(0.5, ver, 0.2, "t", spread=0.01, n=5)
    got = set_settle(G, E, full)
    assert got is not None and got.settled and got.gamma_hw == 2
    once = {**full, "samples_s": {k: (v if k in ("decode", "draft", "draft2", "verify:1", "verify:2") else v[:1])
                                  for k, v in full["samples_s"].items()}}
    got = set_settle(G, E, once)
    assert got is not None and got.settled and got.focus == [2, 1]  # g >= 3, timed once, are pruned
    short = {**full, "samples_s": {k: v[:2] for k, v in full["samples_s"].items()}}  # no quantity timed 3 times
    got = set_settle(G, E, short)
    assert got is not None and not got.settled
    dip = {**once, "c_verify_s": {**once["c_verify_s"], "3": 0.3},
           "samples_s": {**once["samples_s"], "verify:3": [0.3]}}  # a g timed once whose own time dips
    got = set_settle(G, E, dip)
    assert got is not None and not got.settled and 3 in got.focus


def test_costs_on_a_machine_that_stays_busy_stops_with_a_sentence(tmp_path, monkeypatch):
    with pytest.raises(SpectermError, match="stayed busy .* --busy-ok"):
        _fake_costs(tmp_path, monkeypatch, busy_rounds=100)
    assert "profiles" not in read_meta(tmp_path / "legacy")  # nothing half-written


def test_costs_busy_ok_marks_the_profile_and_every_verdict(tmp_path, monkeypatch):
    path, record, warnings = _fake_costs(tmp_path, monkeypatch, busy_rounds=1, busy_ok=True)
    assert record["busy"] is True and "--busy-ok" in warnings[0]
    monkeypatch.setattr("specterm.core.report.analysis.this_machine", lambda: Machine(cpu=EPYC, cores=2, threads=1))
    rep = analyse([load_run(path)], boot=0, shuffles=0)
    for _name, s in rep.ordered_sets():
        assert "warning: timed on a busy machine" in s.decision_hw.verdict


def test_machine_defaults():
    assert machine_mod.default_threads(2) == 1 and machine_mod.default_threads(1) == 1
    assert machine_mod.default_threads(16) == 16
    assert machine_mod.short_device_name("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz") == "Intel Xeon Gold 6338"


def test_confirm_measures_a_profile_first_only_where_none_matches(tmp_path, monkeypatch):
    from specterm import cli
    from specterm.engines import costs as C

    path = write_run(tmp_path / "legacy", legacy_meta(), judged_streams())
    called = []
    monkeypatch.setattr(C, "costs_command", lambda **kw: called.append(kw["run"]))
    monkeypatch.setenv("SPECTERM_MACHINE_CPU", EPYC)  # the EPYC profile matches: confirm goes straight on
    cli._profile_first(path, None, None, None, None, None)
    assert called == []
    monkeypatch.setenv("SPECTERM_MACHINE_CPU", "AMD Ryzen 9")  # no profile of this machine: measured first
    cli._profile_first(path, None, None, None, None, None)
    assert called == [path]


def test_a_profile_with_an_implausible_cost_is_refused_naming_it(tmp_path):
    meta = {**legacy_meta(), "profiles": [*P.stored_or_migrated(legacy_meta())]}
    bad = json.loads(json.dumps(meta))
    bad["profiles"][1]["cost"]["c_decode_s"] = -1.0
    path = write_run(tmp_path / "ok", meta, judged_streams())
    assert [p.id for p in P.run_profiles(read_meta(path))] == [p["id"] for p in meta["profiles"]]
    with pytest.raises(SpectermError, match=r"profiles\[1\]"):
        write_run(tmp_path / "bad", bad, judged_streams())
        load_run(tmp_path / "bad")


def test_legacy_costs_by_batch_join_the_profile_of_the_machine_that_timed_them():
    meta = legacy_meta()
    # timed on the EPYC (nearest record: its confirmation), though the top-level cost is the Xeon's
    meta["batch_cost"] = {"measured_at": "2026-11-30T09:55:00+00:00", "threads": 1, "batches": [1, 2]}
    slow, fast = P.run_profiles(meta)
    assert slow.batch_cost == meta["batch_cost"] and fast.batch_cost is None
    meta["batch_cost"] = {**meta["batch_cost"], "measured_at": "2026-12-01T10:15:00+00:00"}
    slow, fast = P.run_profiles(meta)
    assert slow.batch_cost is None and fast.batch_cost == meta["batch_cost"]


def test_settle_stops_when_the_prompts_not_the_costs_decide():
    """S(g_hw) about 1 with noisy costs: not settled while the prompts' spread is as narrow as the costs';
    settled once the costs' spread is a small part of the prompts' (timing more would not change the
    decision's interval by more than ~5%)."""
    E = set_yield([_bits(0.8, seed=i) for i in range(8)], np.array(G))[0]
    E3 = float(E[2])
    noisy = cost(0.5, lambda g: 0.5 * E3 - 3 * 0.05 if g == 3 else 0.5 * float(E[g - 1]), 0.05, "t", spread=0.05)
    rng = np.random.default_rng(0)
    wide = E[None, :] * (1 + rng.normal(0, 0.2, size=(400, 1)))     # prompts: +-40% (95%)
    narrow = E[None, :] * (1 + rng.normal(0, 0.005, size=(400, 1)))  # prompts: +-1%
    settled = set_settle(G, E, noisy, E_boot=wide)
    unsettled = set_settle(G, E, noisy, E_boot=narrow)
    assert settled is not None and unsettled is not None
    assert settled.ci[0] < 1 < settled.ci[1] and settled.side  # straddles 1, yet the prompts decide
    assert not unsettled.side
    assert settled.focus[0] == settled.gamma_hw and len(settled.focus) == 2


def test_own_cpu_counts_the_children_a_timing_ran():
    # a child process that burns CPU (an engine binary run by subprocess) is this process's work once waited for
    import subprocess
    import sys

    before = machine_mod.own_cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"],
                   check=True)
    assert machine_mod.own_cpu_seconds() - before >= 0.25
