"""Each engine's speculative-decoding names, as its own source names them, for a stated version.

One constant per name, used by engines.py to write settings and by counters.py to read what the
engines report. tests/data/engine_names/<engine>.json holds a snapshot of each engine's accepted
names taken from the same sources, and tests/test_engine_settings.py holds every emitted name
against it (and, for Hugging Face, against the installed transformers), so that a rename upstream
shows as a failing test, not as a silent bad setting.

Sources read:
- llama.cpp: common/arg.cpp and common/speculative.cpp of the llama.cpp sources vendored in the
  llama-cpp-python 0.3.36 sdist (vendor/llama.cpp), the same sources specterm builds
  llama-speculative-simple from. There `--draft-max`/`--draft-min` are *removed* (their handlers call
  arg_removed: "use --spec-draft-n-max"), `--draft-p-min` survives as an alias of `--spec-draft-p-min`,
  and a draft model needs `--spec-type draft-simple`. The draft-simple speculator drafts greedily,
  stops before a token whose top-1 probability is below p_min (the token is not proposed), stops at
  n_max, and drops a draft shorter than n_min. Server responses carry `timings.draft_n` and
  `timings.draft_n_accepted` (tools/server/server-common.cpp); the slot's end-of-request log prints
  "draft acceptance = R (A accepted / N generated), mean len = L" with L = 1 + A / verification steps
  (tools/server/server-context.cpp); /metrics has llamacpp:spec_decode_num_drafts_total,
  ..._num_draft_tokens_total, ..._num_accepted_tokens_total and
  ..._num_accepted_tokens_per_pos_total{position="i"} (tools/server/server-task.cpp).
- Hugging Face transformers: GenerationConfig (generation/configuration_utils.py) of the installed
  transformers (HF_VERSION): num_assistant_tokens (default 20), num_assistant_tokens_schedule
  ("constant" default | "heuristic", whose g persists across generate() calls | "heuristic_transient",
  reset every call), assistant_confidence_threshold (default 0.4). generation/candidate_generator.py
  reads all three from the *assistant's* generation_config (deep-copied at each call), not from
  generate()'s keyword arguments; the threshold stops the assistant after the first token below it (that
  token is proposed: stopping_criteria.ConfidenceCriteria) and, whenever scikit-learn is installed and the
  threshold is non-zero, is re-fitted during generation from an ROC curve, so no fixed threshold can be
  set; 0.0 turns both off.
- vLLM: vllm-project/vllm, vllm/config/speculative.py (SpeculativeConfig: method "draft_model",
  model, num_speculative_tokens, prompt_lookup_max/min; no confidence stop, no schedule), commit
  002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443; metrics from vllm/v1/spec_decode/metrics.py (commit
  016a8587edb04ae53c913a1da9355a07dc0ca4ae): counters vllm:spec_decode_num_drafts,
  vllm:spec_decode_num_draft_tokens, vllm:spec_decode_num_accepted_tokens and
  vllm:spec_decode_num_accepted_tokens_per_pos{position} (exposed with prometheus_client's "_total"
  suffix); mean acceptance length = 1 + accepted / drafts. Per request (the V0 engine):
  RequestOutput.metrics.spec_token_acceptance_counts, vllm/sequence.py (commit
  3e061107fac6ea02f8bab0253ee0541174423a9b): entry 0 counts the verification steps, entry j the steps
  that accepted at least j draft tokens (vLLM's examples: mean length = sum / entry 0).
- SGLang: sgl-project/sglang, python/sglang/srt/server_args.py (the --speculative-* flags, derived from
  the ServerArgs field names) and python/sglang/srt/managers/tokenizer_manager.py
  (_calculate_spec_decoding_metrics: meta_info spec_verify_ct, spec_accept_length = completion_tokens
  / spec_verify_ct, spec_num_correct_drafts, spec_num_proposed_drafts = spec_verify_ct *
  (speculative_num_draft_tokens - 1), spec_correct_drafts_histogram), both at commit
  001067fffe33427bee0ed2f007fb7551a1d76b44; algorithm STANDALONE (a small draft model) from
  python/sglang/srt/speculative/spec_info.py. With --speculative-eagle-topk 1 a chain of
  --speculative-num-steps g draft tokens is verified in a window of --speculative-num-draft-tokens g + 1.
"""

from __future__ import annotations

from dataclasses import dataclass

LLAMA_CPP, HF, VLLM, SGLANG = "llama.cpp", "hf", "vllm", "sglang"
ENGINES = (LLAMA_CPP, HF, VLLM, SGLANG)


@dataclass(frozen=True)
class EngineSource:
    """Where an engine's names were read: its label, the version stated, and the files."""

    engine: str
    label: str
    version: str
    source: str


LLAMA_SOURCE = EngineSource(
    LLAMA_CPP, "llama.cpp", "llama.cpp vendored in llama-cpp-python 0.3.36",
    "vendor/llama.cpp/common/arg.cpp, common/speculative.cpp, tools/server/server-common.cpp, "
    "server-context.cpp, server-task.cpp")
HF_VERSION = "5.25.0"  # the transformers the snapshot was taken from (tests check the installed one too)
HF_SOURCE = EngineSource(HF, "Hugging Face transformers", f"transformers {HF_VERSION}",
                         "transformers/generation/configuration_utils.py (GenerationConfig), "
                         "generation/candidate_generator.py")
VLLM_SOURCE = EngineSource(VLLM, "vLLM", "vllm-project/vllm commit 002e77c1",
                           "vllm/config/speculative.py @ 002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443; "
                           "vllm/v1/spec_decode/metrics.py @ 016a8587edb04ae53c913a1da9355a07dc0ca4ae; "
                           "vllm/sequence.py @ 3e061107fac6ea02f8bab0253ee0541174423a9b")
SGLANG_SOURCE = EngineSource(SGLANG, "SGLang", "sgl-project/sglang commit 001067ff",
                             "python/sglang/srt/server_args.py, python/sglang/srt/managers/tokenizer_manager.py "
                             "@ 001067fffe33427bee0ed2f007fb7551a1d76b44")
SOURCES = {s.engine: s for s in (LLAMA_SOURCE, HF_SOURCE, VLLM_SOURCE, SGLANG_SOURCE)}

# llama.cpp (llama-server, llama-speculative-simple)
LLAMA_MODEL = "-m"
LLAMA_SPEC_TYPE = "--spec-type"
LLAMA_DRAFT_SIMPLE = "draft-simple"
LLAMA_DRAFT_MODEL = "--spec-draft-model"
LLAMA_N_MAX = "--spec-draft-n-max"
LLAMA_N_MIN = "--spec-draft-n-min"
LLAMA_P_MIN = "--spec-draft-p-min"
LLAMA_SERVER = "llama-server"
LLAMA_TIMINGS = "timings"
LLAMA_DRAFT_N = "draft_n"
LLAMA_DRAFT_N_ACCEPTED = "draft_n_accepted"
LLAMA_PREDICTED_N = "predicted_n"
LLAMA_METRIC_PREFIX = "llamacpp:"

# Hugging Face transformers (GenerationConfig / generate kwargs)
HF_NUM_ASSISTANT_TOKENS = "num_assistant_tokens"
HF_SCHEDULE = "num_assistant_tokens_schedule"
HF_CONSTANT, HF_HEURISTIC = "constant", "heuristic_transient"  # "heuristic" keeps g across calls
HF_CONFIDENCE = "assistant_confidence_threshold"

# vLLM
VLLM_FLAG = "--speculative-config"
VLLM_METHOD = "method"
VLLM_DRAFT_MODEL_METHOD = "draft_model"
VLLM_MODEL = "model"
VLLM_NUM_TOKENS = "num_speculative_tokens"
VLLM_METRIC_DRAFTS = "vllm:spec_decode_num_drafts"
VLLM_METRIC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
VLLM_METRIC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
VLLM_METRIC_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
VLLM_REQUEST_COUNTS = "spec_token_acceptance_counts"

# SGLang
SGLANG_ALGORITHM = "--speculative-algorithm"
SGLANG_STANDALONE = "STANDALONE"
SGLANG_DRAFT_MODEL = "--speculative-draft-model-path"
SGLANG_NUM_STEPS = "--speculative-num-steps"
SGLANG_TOPK = "--speculative-eagle-topk"
SGLANG_NUM_DRAFT_TOKENS = "--speculative-num-draft-tokens"
SGLANG_META = "meta_info"
SGLANG_VERIFY_CT = "spec_verify_ct"
SGLANG_ACCEPT_LENGTH = "spec_accept_length"
SGLANG_COMPLETION_TOKENS = "completion_tokens"
SGLANG_CORRECT_DRAFTS = "spec_num_correct_drafts"
SGLANG_HISTOGRAM = "spec_correct_drafts_histogram"
