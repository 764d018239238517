"""Production counters read back (`specterm compare-counters`): each engine's own report of acceptance,
parsed as documented for the version names.py states, beside the oracle's prediction. Pure.

Formats (detected from the content; names.py has where each was read):

    llama.cpp  a llama-server response (JSON object, array or JSON lines; native /completion or
               OpenAI-compatible): timings.predicted_n, timings.draft_n, timings.draft_n_accepted;
               the server log's "draft acceptance = R (A accepted / N generated), mean len = L" lines
               (verification steps = A / (L - 1)); llama-speculative-simple's "n_drafted = ",
               "n_accept = ", "n_draft = " lines; /metrics text (llamacpp:spec_decode_*_total and
               ..._per_pos_total{position="i"})
    vLLM       /metrics text: vllm:spec_decode_num_drafts_total, ..._num_draft_tokens_total,
               ..._num_accepted_tokens_total, ..._num_accepted_tokens_per_pos_total{position="i"};
               per request (JSON): metrics.spec_token_acceptance_counts
    SGLang     /generate responses (JSON): meta_info.completion_tokens, spec_verify_ct and, where given,
               spec_num_correct_drafts and spec_correct_drafts_histogram

Every record becomes `Counters`: verification steps with a draft (`drafts`), drafted tokens, accepted
draft tokens, emitted tokens, and per position j = 1..g the steps that accepted at least j (what
vLLM and llama.cpp count per position). A file that is none of these, is cut short, or carries
another version's names stops with one sentence naming the file and line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from specterm.core.errors import SpectermError
from specterm.core.settings import names as nm


@dataclass(frozen=True)
class Counters:
    """One engine's acceptance counters from one record (or summed over records)."""

    engine: str
    where: str
    drafts: int | None = None         # verification steps that carried a draft
    draft_tokens: int | None = None   # drafted tokens
    accepted: int = 0                 # accepted draft tokens
    tokens: int | None = None         # emitted tokens
    per_pos: tuple[int, ...] | None = None  # steps with >= j accepted, j = 1..len
    gamma: int | None = None          # the draft length the record shows (None: it does not)
    prompt: str | None = None         # the prompt text, when the record carries it
    output: tuple[int, ...] | None = None   # the emitted token ids, when the record carries them
    records: int = 1

    @property
    def acceptance_length(self) -> float | None:
        """1 + accepted / drafts: tokens per verification step (the engines' convention)."""
        return 1.0 + self.accepted / self.drafts if self.drafts else None

    @property
    def acceptance_rate(self) -> float | None:
        """accepted / drafted tokens."""
        return self.accepted / self.draft_tokens if self.draft_tokens else None


def _opt_sum(values: Iterable[int | None]) -> int | None:
    vals = list(values)
    return None if any(v is None for v in vals) else int(sum(v for v in vals if v is not None))


def total(items: Sequence[Counters], where: str) -> Counters:
    """The counters of several records of one engine, summed (per position where every record has it)."""
    if not items:
        raise SpectermError(f"{where}: no counter records to compare.")
    engines = {c.engine for c in items}
    if len(engines) > 1:
        raise SpectermError(f"{where}: the files mix {', '.join(sorted(engines))} counters; compare one engine at a time.")
    per = None
    if all(c.per_pos is not None for c in items):
        width = max(len(c.per_pos or ()) for c in items)
        per = tuple(sum((c.per_pos or ())[j] if j < len(c.per_pos or ()) else 0 for c in items) for j in range(width))
    gammas = {c.gamma for c in items if c.gamma is not None}
    return Counters(engine=items[0].engine, where=where, drafts=_opt_sum(c.drafts for c in items),
                    draft_tokens=_opt_sum(c.draft_tokens for c in items), accepted=sum(c.accepted for c in items),
                    tokens=_opt_sum(c.tokens for c in items), per_pos=per,
                    gamma=gammas.pop() if len(gammas) == 1 else None, records=sum(c.records for c in items))


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 \
            or int(value) != value:
        raise SpectermError(f"{where}: {what} is {value!r}, not a count; the file is not as the engine writes it.")
    return int(value)


# --- JSON records ---------------------------------------------------------------------------------

def _json_records(text: str, name: str) -> list[tuple[int, Any]]:
    """(line, object) of a JSON file: one value (an object or an array of objects) or JSON lines."""
    stripped = text.strip()
    if not stripped:
        raise SpectermError(f"{name}: the file is empty; save the engine's responses or /metrics output into it.")
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as first:
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append((i, json.loads(line)))
            except json.JSONDecodeError as e:
                if len(out) == 0 and first.lineno > 1:
                    raise SpectermError(f"{name} line {first.lineno}: the JSON is cut short or broken ({first.msg}); "
                                        "save the whole response.") from None
                raise SpectermError(f"{name} line {i}: the JSON is cut short or broken ({e.msg}); save the whole "
                                    "response.") from None
        return out
    if isinstance(value, list):
        return [(1, v) for v in value]
    return [(1, value)]


def _llama_record(obj: dict[str, Any], where: str) -> Counters:
    t = obj[nm.LLAMA_TIMINGS]
    if not isinstance(t, dict):
        raise SpectermError(f"{where}: 'timings' is not an object; the file is not a llama-server response.")
    if nm.LLAMA_DRAFT_N not in t:
        raise SpectermError(f"{where}: the llama-server timings have no draft_n: the server ran without a draft model "
                            f"(or predates the draft counters of {nm.LLAMA_SOURCE.version}); start it with "
                            f"{nm.LLAMA_DRAFT_MODEL} and {nm.LLAMA_SPEC_TYPE} {nm.LLAMA_DRAFT_SIMPLE}.")
    out = obj.get("tokens")
    prompt = obj.get("prompt")
    return Counters(engine=nm.LLAMA_CPP, where=where,
                    draft_tokens=_int(t[nm.LLAMA_DRAFT_N], "timings.draft_n", where),
                    accepted=_int(t.get(nm.LLAMA_DRAFT_N_ACCEPTED), "timings.draft_n_accepted", where),
                    tokens=_int(t[nm.LLAMA_PREDICTED_N], "timings.predicted_n", where) if nm.LLAMA_PREDICTED_N in t else None,
                    prompt=prompt if isinstance(prompt, str) else None,
                    output=tuple(int(x) for x in out) if isinstance(out, list) and all(isinstance(x, int) for x in out) else None)


def _sglang_record(meta: dict[str, Any], where: str) -> Counters:
    verify = _int(meta.get(nm.SGLANG_VERIFY_CT), "meta_info.spec_verify_ct", where)
    tokens = _int(meta.get(nm.SGLANG_COMPLETION_TOKENS), "meta_info.completion_tokens", where)
    hist = meta.get(nm.SGLANG_HISTOGRAM, meta.get("spec_accept_histogram"))
    per = None
    accepted = None
    if isinstance(hist, list) and hist:
        h = [_int(x, "meta_info.spec_correct_drafts_histogram", where) for x in hist]
        per = tuple(sum(h[j:]) for j in range(1, len(h)))
        accepted = sum(j * x for j, x in enumerate(h))
    if nm.SGLANG_CORRECT_DRAFTS in meta:
        accepted = _int(meta[nm.SGLANG_CORRECT_DRAFTS], "meta_info.spec_num_correct_drafts", where)
    if accepted is None:
        # older SGLang: only completion_tokens / spec_verify_ct; each step emits its accepted drafts + 1
        accepted = tokens - verify
    proposed = meta.get("spec_num_proposed_drafts", meta.get("spec_proposed_drafts"))
    g = None
    draft_tokens = None
    if proposed is not None and verify:
        draft_tokens = _int(proposed, "meta_info.spec_num_proposed_drafts", where)
        if draft_tokens % verify == 0:
            g = draft_tokens // verify
    if accepted > (draft_tokens if draft_tokens is not None else accepted):
        raise SpectermError(f"{where}: SGLang reports {accepted} accepted of {draft_tokens} proposed drafts; the record is corrupt.")
    return Counters(engine=nm.SGLANG, where=where, drafts=verify, draft_tokens=draft_tokens, accepted=accepted,
                    tokens=tokens, per_pos=per, gamma=g if g is not None else (len(hist) - 1 if isinstance(hist, list) and hist else None))


def _vllm_request(counts: Any, where: str) -> Counters:
    if not isinstance(counts, list) or not counts:
        raise SpectermError(f"{where}: spec_token_acceptance_counts is {counts!r}, not the list vLLM writes.")
    c = [_int(x, "spec_token_acceptance_counts", where) for x in counts]
    if any(b > a for a, b in zip(c, c[1:])):
        raise SpectermError(f"{where}: spec_token_acceptance_counts {c} is not non-increasing: not vLLM's per-position "
                            "counts (entry 0 the steps, entry j the steps accepting at least j).")
    g = len(c) - 1
    return Counters(engine=nm.VLLM, where=where, drafts=c[0], draft_tokens=c[0] * g, accepted=sum(c[1:]),
                    per_pos=tuple(c[1:]), gamma=g)


def _json_counters(text: str, name: str) -> list[Counters]:
    out = []
    for line, obj in _json_records(text, name):
        where = f"{name} line {line}"
        if not isinstance(obj, dict):
            raise SpectermError(f"{where}: expected a JSON object (a response), got {type(obj).__name__}.")
        if nm.LLAMA_TIMINGS in obj:
            out.append(_llama_record(obj, where))
        elif isinstance(obj.get(nm.SGLANG_META), dict) and (nm.SGLANG_VERIFY_CT in obj[nm.SGLANG_META]
                                                              or nm.SGLANG_COMPLETION_TOKENS in obj[nm.SGLANG_META]):
            meta = obj[nm.SGLANG_META]
            if nm.SGLANG_VERIFY_CT not in meta:
                raise SpectermError(f"{where}: the SGLang response has no meta_info.spec_verify_ct: the server ran "
                                    f"without {nm.SGLANG_ALGORITHM}.")
            out.append(_sglang_record(meta, where))
        elif isinstance(obj.get("metrics"), dict) and nm.VLLM_REQUEST_COUNTS in obj["metrics"]:
            out.append(_vllm_request(obj["metrics"][nm.VLLM_REQUEST_COUNTS], where))
        elif nm.VLLM_REQUEST_COUNTS in obj:
            out.append(_vllm_request(obj[nm.VLLM_REQUEST_COUNTS], where))
        else:
            raise SpectermError(f"{where}: not a llama.cpp, vLLM or SGLang counter record (no timings.draft_n, "
                                "meta_info.spec_verify_ct or spec_token_acceptance_counts).")
    return out


# --- text: Prometheus exposition and logs ---------------------------------------------------------

_PROM = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?\s*$')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_SERVER_LOG = re.compile(r"draft acceptance = ([0-9.]+) \(\s*(\d+) accepted /\s*(\d+) generated\), mean len =\s*([0-9.]+)")
_SIMPLE = re.compile(r"^(?:[\d.]+ [A-Z] )?\s*(n_draft|n_predict|n_drafted|n_accept)\s*=\s*(\d+)", re.MULTILINE)
_V0_METRICS = ("vllm:spec_decode_draft_acceptance_rate", "vllm:spec_decode_efficiency")


def _prometheus_sample(s: str, name: str, i: int) -> tuple[str, str, float]:
    """(metric, labels, value) of the Prometheus sample line `s` (line i of `name`); one sentence when it is
    not one, its value is no number, or it is vLLM V0's gauge."""
    m = _PROM.match(s)
    if m is None:
        raise SpectermError(f"{name} line {i}: not a Prometheus sample line ('{s[:60]}'); save the whole /metrics output.")
    metric, labels, raw = m.group(1), m.group(2) or "", m.group(3)
    try:
        value = float(raw)
    except ValueError:
        raise SpectermError(f"{name} line {i}: the value '{raw}' is not a number; the /metrics output is cut short.") from None
    if metric.startswith(_V0_METRICS):
        raise SpectermError(f"{name} line {i}: {metric} is vLLM V0's spec-decode gauge, not the V1 counters read here "
                            f"({nm.VLLM_SOURCE.version}, vllm/v1/spec_decode/metrics.py); use a V1 server's /metrics.")
    return metric, labels, value


def _prometheus(text: str, name: str) -> Counters:
    values: dict[str, float] = {}
    per: dict[int, float] = {}
    engine = None
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        metric, labels, value = _prometheus_sample(s, name, i)
        for prefix, eng in (("vllm:", nm.VLLM), (nm.LLAMA_METRIC_PREFIX, nm.LLAMA_CPP)):
            if metric.startswith(prefix + "spec_decode_"):
                if engine is not None and engine != eng:
                    raise SpectermError(f"{name} line {i}: the file mixes vLLM and llama.cpp metrics; save one server's /metrics.")
                engine = eng
                short = metric[len(prefix):].removesuffix("_total")
                if short.endswith("_created"):
                    continue
                if short == "spec_decode_num_accepted_tokens_per_pos":
                    pos = dict(_LABEL.findall(labels)).get("position")
                    if pos is None or not pos.isdigit():
                        raise SpectermError(f"{name} line {i}: a per-position counter without a position label.")
                    per[int(pos)] = per.get(int(pos), 0.0) + value
                else:
                    values[short] = values.get(short, 0.0) + value  # summed over engines / models
    if engine is None:
        raise SpectermError(f"{name}: no spec_decode counters (vllm:spec_decode_* or llamacpp:spec_decode_*): the server "
                            "ran without speculative decoding, or this is not its /metrics output.")
    need = ("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens")
    missing = [k for k in need if k not in values]
    if missing:
        raise SpectermError(f"{name}: the /metrics output has no {missing[0]} counter: cut short, or another version "
                            f"than {nm.SOURCES[engine].version}.")
    where = name
    per_t = tuple(int(per[j]) for j in sorted(per)) if per else None
    if per and sorted(per) != list(range(len(per))):
        raise SpectermError(f"{name}: the per-position counters skip a position ({sorted(per)}); the output is cut short.")
    return Counters(engine=engine, where=where, drafts=int(values[need[0]]), draft_tokens=int(values[need[1]]),
                    accepted=int(values[need[2]]), per_pos=per_t, gamma=len(per_t) if per_t else None)


def _logs(text: str, name: str) -> list[Counters]:
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        m = _SERVER_LOG.search(line)
        if m:
            acc, gen, mean = int(m.group(2)), int(m.group(3)), float(m.group(4))
            steps = round(acc / (mean - 1.0)) if mean > 1.0 else None
            if acc > gen:
                raise SpectermError(f"{name} line {i}: {acc} accepted of {gen} drafted tokens; the log line is corrupt.")
            # "mean len" is printed with two decimals: the steps are exact only when they round back to it
            if steps is not None and abs(1.0 + acc / steps - mean) > 0.006:
                steps = None
            out.append(Counters(engine=nm.LLAMA_CPP, where=f"{name} line {i}", drafts=steps, draft_tokens=gen, accepted=acc))
    if out:
        return out
    found = {m.group(1): int(m.group(2)) for m in _SIMPLE.finditer(text)}
    if found:
        if "n_drafted" not in found or "n_accept" not in found:
            raise SpectermError(f"{name}: the llama-speculative-simple log has no n_drafted/n_accept lines: it was cut "
                                "short before the end of the run.")
        return [Counters(engine=nm.LLAMA_CPP, where=name, draft_tokens=found["n_drafted"], accepted=found["n_accept"],
                         gamma=found.get("n_draft"))]
    return []


def parse_counters(text: str, name: str) -> list[Counters]:
    """Every counter record of one file (module docstring); one sentence naming the file and line when
    it is not such a file, is cut short or is another version's."""
    head = text.lstrip()[:1]
    if not head:
        raise SpectermError(f"{name}: the file is empty; save the engine's responses, log or /metrics output into it.")
    if head in ("{", "["):
        return _json_counters(text, name)
    if re.search(r"^(# (HELP|TYPE) )?(vllm|llamacpp):", text, re.MULTILINE):
        return [_prometheus(text, name)]
    logs = _logs(text, name)
    if logs:
        return logs
    first = next((i for i, line in enumerate(text.splitlines(), 1) if line.strip()), 1)
    raise SpectermError(f"{name} line {first}: not a counter file this reads (a llama-server response or log, "
                        "llama-speculative-simple's log, vLLM or llama.cpp /metrics, vLLM request metrics, SGLang "
                        "responses).")


@dataclass(frozen=True)
class Reading:
    """Production beside the oracle for one engine: the numbers and one sentence."""

    engine: str
    gamma: int
    set_name: str
    production: Counters
    oracle_length: float | None
    oracle_length_ci: tuple[float | None, float | None]
    oracle_rate: float | None
    oracle_rate_ci: tuple[float | None, float | None]
    oracle_per_pos: list[float] = field(default_factory=list)
    text: str = ""
