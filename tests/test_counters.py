"""Production counters (core/settings/counters.py, compare.py, specterm compare-counters): samples built
from each engine's documented format (names.py says which file and version), bad input, and the oracle's
side against hand-walked streams."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.errors import SpectermError
from specterm.core.settings import names as nm
from specterm.core.settings.oracle_counts import OracleSummary, oracle_counts, oracle_summary, read_production, server_walk
from specterm.core.settings.counters import Counters, parse_counters, total

ROOT = Path(__file__).resolve().parents[1]

# llama-server /completion response (tools/server/server-task.cpp to_json_non_oaicompat; timings from
# server-common.cpp server_slot_stats::to_json, draft_n / draft_n_accepted present when drafting happened)
LLAMA_RESPONSE = {
    "index": 0, "content": " world", "tokens": [1, 2, 3], "id_slot": 0, "stop": True, "model": "t.gguf",
    "tokens_predicted": 64, "tokens_evaluated": 12, "generation_settings": {"speculative.types": "draft-simple"},
    "prompt": "Hello", "has_new_line": False, "truncated": False, "stop_type": "limit", "stopping_word": "",
    "tokens_cached": 75,
    "timings": {"cache_n": 0, "prompt_n": 12, "prompt_ms": 30.1, "prompt_per_token_ms": 2.5, "prompt_per_second": 398.7,
                "predicted_n": 64, "predicted_ms": 900.0, "predicted_per_token_ms": 14.1, "predicted_per_second": 71.1,
                "draft_n": 60, "draft_n_accepted": 45},
}
# the slot's end-of-request log line (server-context.cpp): 45 accepted in 16 steps -> mean len 1 + 45/16 = 3.8125
LLAMA_LOG = ("slot print_timing: id  0 | task 0 | \n"
             "slot print_timing: id  0 | task 0 | draft acceptance = 0.75000 (   45 accepted /    60 generated), mean len =  3.81\n")
# llama-server /metrics (server-task.cpp: "llamacpp:" + name, counters then gauges, then the per-position series)
LLAMA_METRICS = """# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 60
# HELP llamacpp:spec_decode_num_accepted_tokens_total Speculative: Total draft tokens accepted by the target model
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total 45
# HELP llamacpp:spec_decode_num_drafts_total Speculative: Total speculative decoding verification steps
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 16
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 71.1
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 14
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 12
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 10
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="3"} 9
"""
# vLLM V1 /metrics (vllm/v1/spec_decode/metrics.py: prometheus_client counters, exposed with _total and _created)
VLLM_METRICS = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="t"} 100.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="t"} 1.7e+09
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="t"} 300.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="t"} 180.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="0"} 80.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="1"} 60.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="t",position="2"} 40.0
"""
# SGLang /generate (tokenizer_manager.py _calculate_spec_decoding_metrics): g = 3 (num_draft_tokens 4), 20 steps;
# histogram of steps by accepted drafts k = 0..3: [2, 6, 8, 4] -> 0 + 6 + 16 + 12 = 34 accepted, 54 tokens
SGLANG_RESPONSE = {"text": "x", "meta_info": {
    "id": "r1", "finish_reason": {"type": "length"}, "prompt_tokens": 9, "completion_tokens": 54,
    "spec_verify_ct": 20, "spec_accept_rate": 34 / 60, "spec_accept_length": 54 / 20, "spec_num_correct_drafts": 34,
    "spec_num_proposed_drafts": 60, "spec_correct_drafts_histogram": [2, 6, 8, 4]}}


def test_llama_server_response() -> None:
    (c,) = parse_counters(json.dumps(LLAMA_RESPONSE), "r.json")
    assert (c.engine, c.draft_tokens, c.accepted, c.tokens, c.prompt, c.output) == (nm.LLAMA_CPP, 60, 45, 64, "Hello", (1, 2, 3))
    assert c.drafts is None and c.acceptance_rate == pytest.approx(0.75)
    lines = "\n".join(json.dumps(LLAMA_RESPONSE) for _ in range(3))
    assert total(parse_counters(lines, "r.jsonl"), "r.jsonl").accepted == 135


def test_llama_server_log_and_metrics() -> None:
    (c,) = parse_counters(LLAMA_LOG, "server.log")
    assert (c.drafts, c.draft_tokens, c.accepted) == (16, 60, 45)
    assert c.acceptance_length == pytest.approx(1 + 45 / 16)
    (m,) = parse_counters(LLAMA_METRICS, "metrics.txt")
    assert (m.engine, m.drafts, m.draft_tokens, m.accepted, m.per_pos, m.gamma) == (nm.LLAMA_CPP, 16, 60, 45, (14, 12, 10, 9), 4)


def test_speculative_simple_log() -> None:
    text = (ROOT / "tests" / "data" / "speculative-simple-smollm2-g4.log").read_text()
    (c,) = parse_counters(text, "spec.log")
    assert c.engine == nm.LLAMA_CPP and c.gamma == 4 and c.draft_tokens and c.accepted <= c.draft_tokens


def test_vllm_metrics_and_request() -> None:
    (c,) = parse_counters(VLLM_METRICS, "vllm.prom")
    assert (c.engine, c.drafts, c.draft_tokens, c.accepted, c.per_pos, c.gamma) == (nm.VLLM, 100, 300, 180, (80, 60, 40), 3)
    assert c.acceptance_length == pytest.approx(2.8)
    (r,) = parse_counters(json.dumps({"request_id": "a", "metrics": {"spec_token_acceptance_counts": [10, 8, 5, 2]}}), "req.json")
    # entry 0: steps; entry j: steps accepting >= j -> accepted 15, mean length (10+8+5+2)/10 = 2.5 = 1 + 15/10
    assert (r.drafts, r.accepted, r.per_pos, r.gamma) == (10, 15, (8, 5, 2), 3)
    assert r.acceptance_length == pytest.approx(2.5)


def test_sglang_response() -> None:
    (c,) = parse_counters(json.dumps(SGLANG_RESPONSE), "sg.json")
    assert (c.engine, c.drafts, c.draft_tokens, c.accepted, c.tokens, c.gamma) == (nm.SGLANG, 20, 60, 34, 54, 3)
    two = total(parse_counters(json.dumps([SGLANG_RESPONSE, SGLANG_RESPONSE]), "sg2.json"), "sg2.json")
    assert (two.drafts, two.accepted, two.per_pos, two.records, two.gamma) == (40, 68, (36, 24, 8), 2, 3)
    assert c.per_pos == (18, 12, 4)
    assert c.acceptance_length == pytest.approx(SGLANG_RESPONSE["meta_info"]["spec_accept_length"])
    old = {"meta_info": {"completion_tokens": 54, "spec_verify_ct": 20}}  # before the per-request draft counters
    (o,) = parse_counters(json.dumps(old), "old.json")
    assert o.accepted == 34 and o.acceptance_length == pytest.approx(2.7)


@pytest.mark.parametrize("text, words", [
    (json.dumps(LLAMA_RESPONSE)[:-40], "line 1: the JSON is cut short"),
    (json.dumps(LLAMA_RESPONSE) + "\n" + json.dumps(LLAMA_RESPONSE)[:50], "line 2: the JSON is cut short"),
    (json.dumps({"timings": {"predicted_n": 3}}), "no draft_n"),
    (json.dumps({"meta_info": {"completion_tokens": 5}}), "without --speculative-algorithm"),
    (json.dumps({"choices": [{"text": "hi"}]}), "not a llama.cpp, vLLM or SGLang counter record"),
    ("vllm:spec_decode_draft_acceptance_rate{model_name=\"t\"} 0.5\n", "vLLM V0's spec-decode gauge"),
    (VLLM_METRICS.replace("vllm:spec_decode_num_accepted_tokens_total{", "vllm:other{"), "no spec_decode_num_accepted_tokens"),
    (VLLM_METRICS + LLAMA_METRICS, "mixes vLLM and llama.cpp"),
    (VLLM_METRICS[: VLLM_METRICS.rindex("model_name")], "line 17: not a Prometheus sample line"),
    ("id,accepted\n1,2\n", "line 1: not a counter file"),
    ("", "the file is empty"),
    (json.dumps({"metrics": {"spec_token_acceptance_counts": [3, 5]}}), "not non-increasing"),
])
def test_bad_files_say_file_and_line(text: str, words: str) -> None:
    with pytest.raises(SpectermError) as e:
        parse_counters(text, "f.txt")
    msg = str(e.value)
    assert msg.startswith("f.txt") and words in msg, msg
    assert msg.count(". ") <= 1  # one sentence (a second only after a colon or semicolon)


def test_one_engine_at_a_time() -> None:
    a = parse_counters(VLLM_METRICS, "v")[0]
    b = parse_counters(json.dumps(SGLANG_RESPONSE), "s")[0]
    with pytest.raises(SpectermError, match="mix vllm, sglang|mix sglang, vllm"):
        total([a, b], "both")


def test_oracle_counts_by_hand() -> None:
    # "1101110", g = 2: s=0 k=2 (a0 a1), s=3 k=2 (a3 a4), s=6 k=0 -> 3 blocks, 4 accepted; k >= 1: 2, k >= 2: 2
    c = oracle_counts([np.array([1, 1, 0, 1, 1, 1, 0], np.uint8)], 2)
    assert (c.blocks.tolist(), c.accepted.tolist(), c.at_least.tolist()) == ([3], [4], [[2, 2]])
    s = oracle_summary(c, boot=0)
    assert s.length == pytest.approx(1 + 4 / 3) and s.rate == pytest.approx(4 / 6) and s.per_pos == pytest.approx([2 / 3, 2 / 3])


def test_server_walk_by_hand() -> None:
    a = np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 1], np.uint8)
    # n_predict 10, g 3: y1 from the prompt (s = 1); s=1: d=3, ones 2 -> k=2, s=4; s=4: d=3 (10-4-1=5), k=3, s=8;
    # s=8: d = min(3, 1) = 1, k=1, s=10 -> stop
    k, d = server_walk(a, 3, 10)
    assert k.tolist() == [2, 3, 1] and d.tolist() == [3, 3, 1]


def test_reading_sentence() -> None:
    oracle = OracleSummary(length=3.0, length_ci=(2.8, 3.2), rate=0.5, rate_ci=(0.45, 0.55), per_pos=[0.8, 0.6])
    inside = Counters(engine="vllm", where="x", drafts=10, draft_tokens=20, accepted=20)
    assert "inside the oracle's interval" in read_production(inside, oracle, 2, "pooled").text
    low = Counters(engine="vllm", where="x", drafts=10, draft_tokens=20, accepted=10)
    assert "below the oracle's interval" in read_production(low, oracle, 2, "pooled").text
    rate_only = Counters(engine="llama.cpp", where="x", draft_tokens=20, accepted=19)
    r = read_production(rate_only, oracle, 2, "code")
    assert "acceptance rate" in r.text and "above the oracle's interval" in r.text


def test_compare_counters_cli_on_the_shipped_llama_run(tmp_path: Path) -> None:
    """Requests built from the shipped llama.cpp run's own streams (what llama-server would count on them)
    agree exactly, and the summed reading lands inside the oracle's interval."""
    from typer.testing import CliRunner

    from specterm.cli import app
    from specterm.core.store import load_run

    run_dir = ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b-llamacpp"
    run = load_run(run_dir)
    rows = []
    for s in run.streams[:6]:
        k, d = server_walk(s.bits, 4, 60)
        rows.append(json.dumps({"prompt": s.prompt, "tokens": np.asarray(s.y)[:60].tolist(),
                                "timings": {"predicted_n": 60, "draft_n": int(d.sum()), "draft_n_accepted": int(k.sum())}}))
    f = tmp_path / "responses.jsonl"
    f.write_text("\n".join(rows) + "\n")
    res = CliRunner().invoke(app, ["compare-counters", str(run_dir), str(f), "--gamma", "4", "--boot", "200"])
    assert res.exit_code == 0, res.output
    assert "6 of 6 requests on the stored continuation agree exactly" in res.output
    assert "inside the oracle's interval" in res.output
    res = CliRunner().invoke(app, ["compare-counters", str(run_dir), str(f)])
    assert res.exit_code != 0 and "--gamma" in str(res.exception)


def test_real_llama_server_counters_agree_with_the_oracle() -> None:
    """Responses of a real llama-server (built from the vendored llama.cpp, Qwen2.5-Coder 1.5B with the
    0.5B draft, g = 4, 64 tokens, two prompts per corpus of the shipped llama.cpp run, on this machine):
    7 of 10 outputs left the stored y (llama.cpp's flips, counted); over the 3 that kept it, the server's
    accepted and drafted tokens equal the replay's exactly; its log's acceptance length (1 + accepted /
    verification steps, over all 10) is within 1% of the replay's on the same 10 requests."""
    from typer.testing import CliRunner

    from specterm.cli import app

    run_dir = ROOT / "streams" / "qwen2.5-coder-0.5b-1.5b-llamacpp"
    data = ROOT / "tests" / "data" / "llama_server"
    res = CliRunner().invoke(app, ["compare-counters", str(run_dir), str(data / "responses-g4.jsonl"), "--gamma", "4"])
    assert res.exit_code == 0, res.output
    assert "7 left it (llama.cpp flips, counted" in res.output
    assert "over those 3: accepted 140 (oracle 140), drafted 187 (oracle 187)" in res.output
    assert "inside the oracle's interval" in res.output
    (log,) = [total(parse_counters((data / "acceptance-g4.log").read_text(), "log"), "log")]
    (prom,) = parse_counters((data / "metrics-g4.txt").read_text(), "metrics")
    assert (log.drafts, log.accepted, log.draft_tokens) == (prom.drafts, prom.accepted, prom.draft_tokens) == (198, 428, 774)
    from specterm.core.store import load_run
    from specterm.counters_cli import read_files, request_checks, walk_summary

    checks = request_checks(read_files([data / "responses-g4.jsonl"]), load_run(run_dir), 4)
    oracle = walk_summary(checks, 4, 0, 0)
    assert oracle.length is not None and log.acceptance_length == pytest.approx(oracle.length, rel=0.01)
