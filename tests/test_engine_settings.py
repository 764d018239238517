"""Engine settings (core/settings): the vectorised depth walk against the one-stream replays, the
speedup of a policy against hand-computed costs and against the decision's S_hw, the choice and the
verdict, and every emitted name held against a snapshot of the engine's accepted names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.decide.hardware.curve import CostCurve, CostReplicates
from specterm.core.decide.replay import replay_confidence, replay_fixed, replay_heuristic
from specterm.core.report.types import DecisionHW
from specterm.core.settings import names as nm
from specterm.core.settings.engine_policies import Models, candidates, command_for, engine_settings, settings_for
from specterm.core.settings.speedup import (FIXED, HEURISTIC, STOP, STOP_INCLUSIVE, BlockCosts, Policy, block_costs,
                                            depth_counts, policy_speedup, stack)

DATA = Path(__file__).parent / "data" / "engine_names"
ROOT = Path(__file__).resolve().parents[1]


def _streams(seed: int = 3, n_streams: int = 12) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    bits, conf = [], []
    for _ in range(n_streams):
        n = int(rng.integers(1, 60))
        a = (rng.random(n) < rng.uniform(0.3, 0.95)).astype(np.uint8)
        c = np.where(a == 1, rng.uniform(0.4, 1.0, n), rng.uniform(0.0, 0.8, n)).astype(np.float32)
        bits.append(a)
        conf.append(c)
    return bits, conf


@pytest.mark.parametrize("policy", [Policy(FIXED, 1), Policy(FIXED, 5), Policy(STOP, 4, 0.6), Policy(STOP, 9, 0.3),
                                    Policy(STOP_INCLUSIVE, 4, 0.6), Policy(STOP_INCLUSIVE, 7, 0.9),
                                    Policy(HEURISTIC, 1), Policy(HEURISTIC, 6)])
def test_depth_counts_equal_the_one_stream_replays(policy: Policy) -> None:
    bits, conf = _streams()
    H = depth_counts(stack(bits, conf), policy)
    for i, (a, c) in enumerate(zip(bits, conf)):
        if policy.kind == FIXED:
            r = replay_fixed(a, policy.gamma)
        elif policy.kind == HEURISTIC:
            r = replay_heuristic(a, g0=policy.gamma)
        else:
            r = replay_confidence(a, c, float(policy.tau or 0), policy.gamma, inclusive=policy.kind == STOP_INCLUSIVE)
        want = np.bincount(r.drafts, minlength=H.shape[1])
        assert want.size == H.shape[1]
        assert np.array_equal(H[i], want), (i, H[i], want)


def test_a_zero_threshold_is_fixed_g_max() -> None:
    bits, conf = _streams(5)
    s = stack(bits, conf)
    assert np.array_equal(depth_counts(s, Policy(STOP, 6, 0.0)), depth_counts(s, Policy(FIXED, 6)))


def _costs() -> BlockCosts:
    # c_verify(d) = 1 + 0.1 d, c_draft = 0.2, c_decode = 1: a hand-made profile
    return BlockCosts(c_decode=1.0, c_verify=1.0 + 0.1 * np.arange(9), c_draft=0.2, c_fwd=None, measured=True)


def test_speedup_by_hand() -> None:
    # one stream "11011", g = 2: blocks (s=0: k=2 -> 3 tokens), (s=3: k=1, n - s = 2 -> 2 tokens): two blocks of depth 2
    s = stack([np.array([1, 1, 0, 1, 1], np.uint8)], [np.array([0.9, 0.8, 0.2, 0.9, 0.4])])
    H = depth_counts(s, Policy(FIXED, 2))
    assert H[0].tolist() == [0, 0, 2]
    got = policy_speedup(s.lengths, H, _costs(), Policy(FIXED, 2))
    assert got.value == pytest.approx(5 * 1.0 / (2 * (1.2 + 2 * 0.2)))
    # p_min 0.5 up to 3: s=0 confident 0.9, 0.8, then 0.2 < 0.5: depth 2, k = 2 -> s = 3; s=3: 0.9 then 0.4: depth 1, k = 1
    # -> s = 5. Both blocks stopped on a refused token: f(d) = d + 1.
    p = Policy(STOP, 3, 0.5)
    H = depth_counts(s, p)
    assert H[0].tolist() == [0, 1, 1, 0]
    want = 5 / ((1.2 + 3 * 0.2) + (1.1 + 2 * 0.2))
    assert policy_speedup(s.lengths, H, _costs(), p).value == pytest.approx(want)
    # inclusive (Hugging Face): the refused token is proposed, no extra step: s=0 depth 3 (k = 2), s=3 depth 2 (k = 1)
    p = Policy(STOP_INCLUSIVE, 3, 0.5)
    H = depth_counts(s, p)
    assert H[0].tolist() == [0, 0, 1, 1]
    assert policy_speedup(s.lengths, H, _costs(), p).value == pytest.approx(5 / ((1.2 + 2 * 0.2) + (1.3 + 3 * 0.2)))


def test_interval_pairs_prompt_and_cost_replicates() -> None:
    bits, conf = _streams(7, 20)
    s = stack(bits, conf)
    p = Policy(FIXED, 3)
    H = depth_counts(s, p)
    rng = np.random.default_rng(0)
    W = rng.multinomial(20, np.full(20, 1 / 20), size=300).astype(np.float64)
    n_rep = 200
    rep_v = 1.0 + 0.1 * np.arange(9)[None, :] * rng.uniform(0.9, 1.1, (n_rep, 1))
    costs = BlockCosts(c_decode=1.0, c_verify=1.0 + 0.1 * np.arange(9), c_draft=0.2, c_fwd=None, measured=True,
                       rep_decode=np.ones(n_rep), rep_verify=rep_v, rep_draft=np.full(n_rep, 0.2))
    got = policy_speedup(s.lengths, H, costs, p, W)
    S = (W[:n_rep] @ s.lengths) / ((W[:n_rep] @ H)[:, 3] * (rep_v[:, 3] + 3 * 0.2))
    lo, hi = np.percentile(S, [2.5, 97.5])
    assert got.ci == pytest.approx((lo, hi))


def test_block_costs_read_the_curve_and_extend_it_on_its_line() -> None:
    g = np.arange(1, 5)
    curve = CostCurve(gammas=g, c_decode=2.0, c_verify=2.0 + 0.5 * g, c_draft=0.3)
    reps = CostReplicates(gammas=g, c_decode=np.array([2.0, 2.2]), c_verify=np.stack([2.0 + 0.5 * g, 2.2 + 0.6 * g]),
                          c_draft=np.array([0.3, 0.4]))
    b = block_costs(curve, reps, 8, r_fallback=0.2)
    assert b.c_verify.tolist() == pytest.approx([2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0])
    assert b.rep_verify is not None and b.rep_verify[1].tolist() == pytest.approx([2.2 + 0.6 * d if d else 2.2 for d in range(9)])
    assert b.extrapolated == 5
    mb = block_costs(None, None, 4, r_fallback=0.25)
    assert not mb.measured and mb.block(Policy(FIXED, 2)).tolist() == pytest.approx([1.0, 1.25, 1.5, 1.75, 2.0])


def _decision(kind: str | None = None) -> DecisionHW:
    return DecisionHW(measured=True, verdict_kind=kind, verdict="", profile="p1")


def test_choice_and_verdict_follow_the_interval() -> None:
    bits = [np.ones(34, np.uint8)] * 15  # always accepted: two blocks of 17 at g = 16, the only g with two
    conf = [np.full(34, 0.99)] * 15
    s = stack(bits, conf)
    W = np.random.default_rng(1).multinomial(15, np.full(15, 1 / 15), size=200).astype(np.float64)
    models = Models(target="t.gguf", draft="d.gguf")
    cheap = BlockCosts(c_decode=1.0, c_verify=np.ones(17), c_draft=0.01, c_fwd=None, measured=False)
    out = engine_settings(s, W, cheap, models, "here", _decision(), depth_limit=16)
    assert out[nm.VLLM].speculate and out[nm.VLLM].params == {"gamma": 16}
    assert out[nm.VLLM].settings[nm.VLLM_NUM_TOKENS] == 16
    assert out[nm.SGLANG].settings[nm.SGLANG_NUM_DRAFT_TOKENS] == 17
    dear = BlockCosts(c_decode=1.0, c_verify=np.ones(17) * 3.0, c_draft=2.0, c_fwd=None, measured=False)
    out = engine_settings(s, W, dear, models, "here", _decision(), depth_limit=16)
    for es in out.values():
        assert not es.speculate and es.settings == {} and es.verdict.startswith("run without speculation")
        assert es.best is not None and es.predicted.value is not None and es.predicted.value < 1
        assert nm.LLAMA_DRAFT_MODEL not in (es.command or "")
    too_few = engine_settings(s, W, cheap, models, "here", DecisionHW(measured=True, verdict_kind="too_few_prompts",
                                                                      verdict="too few prompts (n = 5; needs 10): x"))
    assert too_few[nm.VLLM].verdict_kind == "too_few_prompts" and not too_few[nm.VLLM].speculate


def test_a_layer_skip_draft_has_no_setting() -> None:
    s = stack([np.ones(10, np.uint8)], [np.full(10, 0.9)])
    out = engine_settings(s, None, _costs(), Models("t", "layers:25", kind="layers"), "here", depth_limit=8)
    assert all(not es.speculate and "first layers" in es.verdict for es in out.values())


def test_fixed_g_is_the_decision(shipped_run_report) -> None:
    """The engine's best fixed g is the decision's g_hw, with its S_hw and interval (same W, same cost replicates)."""
    for name, s in shipped_run_report.ordered_sets():
        d = s.decision_hw
        es = s.engine_settings[nm.VLLM]
        assert es.fixed_gamma == d.gamma_hw, name
        assert es.fixed_predicted.value == pytest.approx(d.speedup_hw, rel=1e-12)
        assert es.fixed_predicted.ci == pytest.approx(d.speedup_hw_ci, rel=1e-12)
        assert s.engine_settings[nm.LLAMA_CPP].predicted.value >= d.speedup_hw - 1e-12  # fixed g is a candidate


@pytest.fixture(scope="module")
def shipped_run_report():
    from specterm.core.report.analysis import analyse
    from specterm.core.store import load_run

    return analyse([load_run(ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b")], boot=200)


# --- names: every emitted name against the engine's snapshot ------------------------------------------


def _snapshot(engine: str) -> dict:
    return json.loads((DATA / f"{engine}.json").read_text())


def _policies() -> list[Policy]:
    return sorted({p for e in nm.ENGINES for p in candidates(e, 16, True)}, key=lambda p: (p.kind, p.gamma, p.tau or 0))


def test_llama_cpp_flags_are_accepted_by_the_vendored_sources() -> None:
    snap = _snapshot(nm.LLAMA_CPP)
    accepted, removed = set(snap["accepted"]), set(snap["removed"])
    models = Models("t.gguf", "d.gguf")
    for p in candidates(nm.LLAMA_CPP, 16, True):
        settings = settings_for(nm.LLAMA_CPP, p, models)
        for flag in settings:
            assert flag in accepted and flag not in removed, flag
        assert settings[nm.LLAMA_SPEC_TYPE] in snap["spec_types"]
        assert settings[nm.LLAMA_N_MAX] == p.gamma
    assert nm.LLAMA_MODEL in accepted
    # the old names the issue text uses were removed in these sources: never emitted
    assert {"--draft-max", "--draft-min"} <= removed
    cmd = command_for(nm.LLAMA_CPP, settings_for(nm.LLAMA_CPP, Policy(STOP, 7, 0.8), models), models)
    assert "--draft-max" not in cmd and "--spec-draft-p-min 0.8" in cmd


def test_hf_names_are_the_installed_generation_config() -> None:
    transformers = pytest.importorskip("transformers")
    snap = _snapshot(nm.HF)
    live = set(vars(transformers.GenerationConfig()))
    for p in candidates(nm.HF, 16, True):
        settings = settings_for(nm.HF, p, Models("t", "d"))
        for key in settings:
            assert key in snap["generation_config"] and key in live, key
        assert settings[nm.HF_SCHEDULE] in snap["schedules"]
        assert settings[nm.HF_CONFIDENCE] == 0.0  # the adaptive threshold is turned off
    assert transformers.GenerationConfig(**settings).num_assistant_tokens_schedule == settings[nm.HF_SCHEDULE]


def test_vllm_and_sglang_names_match_their_snapshots() -> None:
    v, sg = _snapshot(nm.VLLM), _snapshot(nm.SGLANG)
    models = Models("t", "d")
    for p in candidates(nm.VLLM, 16, True):
        settings = settings_for(nm.VLLM, p, models)
        assert set(settings) <= set(v["speculative_config"])
        assert settings[nm.VLLM_METHOD] in v["methods"]
    assert nm.VLLM_FLAG == v["cli_flag"]
    assert {nm.VLLM_METRIC_DRAFTS, nm.VLLM_METRIC_DRAFT_TOKENS, nm.VLLM_METRIC_ACCEPTED, nm.VLLM_METRIC_PER_POS} <= set(v["metrics"])
    for p in candidates(nm.SGLANG, 16, True):
        settings = settings_for(nm.SGLANG, p, models)
        assert set(settings) <= set(sg["flags"])
        assert settings[nm.SGLANG_ALGORITHM] in sg["algorithms"]
    assert {nm.SGLANG_VERIFY_CT, nm.SGLANG_ACCEPT_LENGTH, nm.SGLANG_CORRECT_DRAFTS, nm.SGLANG_HISTOGRAM} <= set(sg["meta_info"])
    cmd = command_for(nm.VLLM, settings_for(nm.VLLM, Policy(FIXED, 5), models), models)
    assert json.loads(cmd.split("--speculative-config ", 1)[1].strip("'")) == {"method": "draft_model", "model": "d",
                                                                               "num_speculative_tokens": 5}


def test_llama_cpp_snapshot_matches_the_vendored_sources_when_present() -> None:
    """Re-extracts the names from arg.cpp when the vendored sources are on this machine (skipped otherwise)."""
    import os
    import re

    src = Path(os.environ.get("SPECTERM_LLAMA_SRC", "/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp")) / "common" / "arg.cpp"
    if not src.is_file():
        pytest.skip("the vendored llama.cpp sources are not unpacked here (set SPECTERM_LLAMA_SRC)")
    text = src.read_text()
    names = set(re.findall(r'"(--spec-[a-z0-9-]+)"', text))
    snap = _snapshot(nm.LLAMA_CPP)
    assert names <= set(snap["accepted"]) | set(snap["removed"])


def test_prediction_interval_for_k_prompts() -> None:
    """K = N draws of every stream once would be the set itself; a K-prompt interval is wider than the
    set's own (fewer prompts) and holds the point estimate."""
    from specterm.core.settings.speedup import prediction_interval

    bits, conf = _streams(11, 30)
    s = stack(bits, conf)
    costs = BlockCosts(c_decode=1.0, c_verify=1.0 + 0.1 * np.arange(20), c_draft=0.2, c_fwd=None, measured=False)
    p = Policy(STOP, 6, 0.5)
    value, (lo2, hi2) = prediction_interval(s, p, costs, 2, 2000, 0)
    _, (lo30, hi30) = prediction_interval(s, p, costs, 30, 2000, 0)
    assert value == pytest.approx(policy_speedup(s.lengths, depth_counts(s, p), costs, p).value)
    assert lo2 < lo30 <= value <= hi30 < hi2


def test_the_confirmation_runs_the_emitted_flags() -> None:
    """`confirm --settings` hands llama-speculative-simple exactly the flags `specterm settings` prints."""
    from specterm.engines.llamacpp.settings_confirm import settings_command

    snap = _snapshot(nm.LLAMA_CPP)
    cmd = settings_command(Path("x"), Path("t.gguf"), Path("d.gguf"), "p", Policy(STOP, 9, 0.7), 50, 1, 512)
    flags = [c for c in cmd if c.startswith("-")]
    assert all(f in snap["accepted"] for f in flags), flags
    i = cmd.index(nm.LLAMA_P_MIN)
    assert cmd[i + 1] == "0.7" and cmd[cmd.index(nm.LLAMA_N_MAX) + 1] == "9" and cmd[cmd.index(nm.LLAMA_N_MIN) + 1] == "0"
