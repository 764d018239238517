"""Run metadata (`run.json`): read, validated field by field, and what it says about the records.

A run.json whose fields have the wrong types is refused with one sentence naming the field (so
`list`, `report` and the TUI skip that run with a warning instead of crashing on it). Unknown
fields are allowed (later versions add some); known ones must have their type or be null.

Checksum: every run.json written by the store carries `meta_checksum`, the first 16 hex digits of
the sha256 of its canonical JSON (sorted keys, ASCII escapes, no spaces) without that field
(`meta_checksum`, `seal_meta`); a load verifies it, and a run.json whose checksum does not match
(a flipped bit, a hand edit) is refused naming the fix (`specterm repair RUN` accepts an edit after
checking every field, and writes the checksum again). A run.json without the field is a legacy run
(written before run.json had a checksum, e.g. the shipped runs): it is accepted with every field
and range check below, and `repair` adds the checksum.

Costs: every cost value is range-checked (`check_cost_values`: positive, finite, plausible), and
`records`, the number of records the run's writers know they wrote (a lower bound, written after
each append), lets a load tell a truncated prompts.jsonl from a short run (store/runs.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specterm.core.errors import SpectermError



def _sha256(data: bytes) -> str:
    """Hex sha256 of `data` by the interpreter's builtin module (_sha2 from Python 3.12, _sha256
    before), without hashlib's import: its OpenSSL load is ~5-10 ms of a warm open (issue 21)."""
    import importlib

    for name in ("_sha2", "_sha256"):
        try:
            return str(importlib.import_module(name).sha256(data).hexdigest())
        except ImportError:
            continue
    import hashlib  # pragma: no cover - an interpreter without the builtin module

    return hashlib.sha256(data).hexdigest()

if TYPE_CHECKING:
    from specterm.core.store.records import RecordBounds  # imported by record_bounds: no numpy for read_meta

FORMAT = "specterm-run"
SCHEMA_VERSION = 1
META_FILE = "run.json"
RECORDS_FILE = "prompts.jsonl"
META_CHECKSUM_FIELD = "meta_checksum"
RECORDS_FIELD = "records"


def meta_checksum(meta: dict[str, Any]) -> str:
    """First 16 hex digits of sha256(canonical JSON of `meta` without META_CHECKSUM_FIELD); canonical =
    sorted keys, ASCII escapes, no spaces, so the spacing and key order of the file do not matter."""
    payload = {k: v for k, v in meta.items() if k != META_CHECKSUM_FIELD}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return _sha256(text.encode("ascii"))[:16]


def seal_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with its checksum (META_CHECKSUM_FIELD, last), as every writer of run.json stores it."""
    out = {k: v for k, v in meta.items() if k != META_CHECKSUM_FIELD}
    out[META_CHECKSUM_FIELD] = meta_checksum(out)
    return out

def read_meta_bytes(path: Path) -> tuple[Path, bytes]:
    """(path of run.json, its bytes) of the run directory `path`; SpectermError (one sentence) when it is
    not a run directory or the file cannot be read."""
    path = Path(path)
    meta_path = path / META_FILE
    if not path.is_dir():
        raise SpectermError(f"{path} is not a run directory; pass a directory under streams/ (see `specterm list`).")
    if not meta_path.is_file():
        raise SpectermError(f"{path} has no {META_FILE}, so it is not a specterm run; pass a directory made by `specterm run` or `specterm import`.")
    try:
        return meta_path, meta_path.read_bytes()
    except OSError as exc:
        raise SpectermError(f"cannot read {meta_path} ({exc.strerror}); check its permissions.") from None


def read_meta(path: Path, verify: bool = True) -> dict[str, Any]:
    """The validated run.json of the run directory `path`; SpectermError (one sentence) on any problem.
    `verify=False`: a checksum that does not match is not an error (repair, which writes it again)."""
    meta_path, raw = read_meta_bytes(path)
    return parse_meta(raw, meta_path, verify)


def parse_meta(raw: bytes, meta_path: Path, verify: bool = True) -> dict[str, Any]:
    """The validated metadata held by `raw`, the bytes of `meta_path` (read_meta, or a load that
    read the run's files once: store/runs.py read_run_files); its checksum verified (module
    docstring) unless `verify` is False."""
    try:
        meta = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        raise SpectermError(f"{meta_path} is nested too deeply to be run metadata; restore it or re-create the run.") from None
    except Exception as exc:  # one sentence for anything else: bad UTF-8, bad JSON, an integer beyond the digit limit
        detail = (getattr(exc, "msg", None) or str(exc)).splitlines()[0][:80]
        raise SpectermError(f"{meta_path} is not valid JSON ({detail}); restore it or re-create the run.") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SpectermError(f"{meta_path} is not a specterm run file (no \"format\": \"{FORMAT}\"); pass a run made by specterm.")
    version = meta.get("schema_version")
    if type(version) is not int:
        raise SpectermError(f"{meta_path} has no integer schema_version; the file is corrupt.")
    if version > SCHEMA_VERSION:
        raise SpectermError(
            f"{meta_path} was written with stream schema {version}, newer than this specterm reads ({SCHEMA_VERSION}); upgrade specterm."
        )
    validate_meta(meta, meta_path)  # first: a field that is wrong whatever the checksum says is named
    stored = meta.get(META_CHECKSUM_FIELD)
    if stored is not None and verify and stored != meta_checksum(meta):
        raise SpectermError(f"{meta_path} does not match its checksum (it was edited or damaged); restore it, or run "
                            f"`specterm repair {meta_path.parent}` to check every field and accept the edit.")
    return meta


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _type_name(value: Any) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", str: "a string", bool: "true/false"}.get(
        type(value), "a number" if _is_number(value) else type(value).__name__)


# Known top-level fields: (check, what it must be). Each may also be null or absent.
_META_FIELDS: dict[str, tuple[Any, str]] = {
    "name": (lambda v: isinstance(v, str), "a string"),
    "created": (lambda v: isinstance(v, str), "a string"),
    "specterm_version": (lambda v: isinstance(v, str), "a string"),
    "device": (lambda v: isinstance(v, str), "a string"),
    "dtype": (lambda v: isinstance(v, str), "a string"),
    "imported_from": (lambda v: isinstance(v, str), "a string"),
    "target": (lambda v: isinstance(v, (dict, str)), "an object"),
    "draft": (lambda v: isinstance(v, (dict, str)), "an object"),
    "generation": (lambda v: isinstance(v, dict), "an object"),
    "hardware": (lambda v: isinstance(v, dict), "an object"),
    "cost": (lambda v: isinstance(v, dict), "an object"),
    "sessions": (lambda v: isinstance(v, list), "a list"),
    "confirmations": (lambda v: isinstance(v, list), "a list"),
    "merged_from": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of directory names"),
    "checksums": (lambda v: isinstance(v, bool), "true or false"),
    META_CHECKSUM_FIELD: (lambda v: isinstance(v, str), "a string"),
    RECORDS_FIELD: (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "tokenizer_vocab": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "shard": (lambda v: isinstance(v, list) and len(v) == 2 and all(_is_int(x) for x in v) and 0 <= v[0] < v[1],
              "[i, N] with 0 <= i < N"),
}
DRAFT_KINDS = ("model", "layers", "prompt-lookup", "ngram")  # run.json draft.kind (SPEC 7); absent: a model
DRAFTER_KINDS = ("prompt-lookup", "ngram")  # drafters without a draft model: records carry runs and proposed


def drafter_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """run.json's draft record when it names a drafter without a model (SPEC 2b), else None."""
    draft = meta.get("draft")
    return draft if isinstance(draft, dict) and draft.get("kind") in DRAFTER_KINDS else None


_MODEL_FIELDS: dict[str, tuple[Any, str]] = {
    "spec": (lambda v: isinstance(v, str), "a string"),
    "source": (lambda v: isinstance(v, str), "a string"),
    "sha256": (lambda v: isinstance(v, str), "a string"),
    "path": (lambda v: isinstance(v, str), "a string"),
    "vocab_size": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "size": (lambda v: _is_int(v) and v >= 0, "an integer"),
    "layers": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "kind": (lambda v: v in DRAFT_KINDS, f"one of {', '.join(DRAFT_KINDS)}"),
    "max_tokens": (lambda v: _is_int(v) and v > 0, "a positive integer"),
}
_GENERATION_FIELDS: dict[str, tuple[Any, str]] = {
    "max_new_tokens": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "batch_size": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "y_method": (lambda v: isinstance(v, str), "a string"),
    "y_built_with": (lambda v: isinstance(v, str), "a string"),
    "decoding": (lambda v: isinstance(v, str), "a string"),
    "prompt_encoding": (lambda v: isinstance(v, str), "a string"),
    "eos_token_ids": (lambda v: isinstance(v, list) and all(_is_int(x) for x in v), "a list of token ids"),
}


def _cost_value_ok(key: str, value: Any) -> bool:
    """A cost entry: seconds and ratios are numbers, per-gamma tables map names to numbers, samples
    map names to lists of numbers; anything else (notes, methods, earlier records) is free."""
    if key == "earlier":
        return isinstance(value, list) and all(isinstance(x, dict) for x in value)
    if key.startswith("samples"):
        return isinstance(value, dict) and all(isinstance(v, list) and all(_is_number(x) for x in v) for v in value.values())
    if key in ("context", "repeats", "threads", "r_gamma"):
        return _is_int(value)
    if key == "r_measured" or (key.startswith("c_") and key.endswith("_s")):
        return _is_number(value) or (isinstance(value, dict) and all(_is_number(v) for v in value.values()))
    if key == "r_by_gamma":
        return isinstance(value, dict) and all(_is_number(v) for v in value.values())
    return True


MAX_COST_S = 3600.0  # one forward pass, one draft token or one verification: an hour is not a measurement
MAX_R = 100.0  # c_draft / c_verify: a draft a hundred times slower than verifying is not a draft
MAX_CONTEXT = 10_000_000  # tokens of context a cost was timed at
_INT_RANGES = {"context": (1, MAX_CONTEXT), "repeats": (1, 1_000_000), "threads": (1, 65_536), "r_gamma": (1, 1024)}


def _cost_range(key: str) -> tuple[float, float, bool] | None:
    """(low, high, low allowed) of a cost entry's numbers, or None for an entry with no range (notes,
    methods, the fitted line, earlier records)."""
    if key.startswith("c_") and key.endswith("_s"):
        spread = key.endswith("_iqr_s")  # a spread may be 0
        return (0.0, MAX_COST_S, spread)
    if key.startswith("samples"):
        return (0.0, MAX_COST_S, False)
    if key in ("r_measured", "r_by_gamma"):
        return (0.0, MAX_R, False)
    return None


def check_cost_values(cost: dict[str, Any], where: str) -> None:
    """Refuse (SpectermError naming `where` and the field) any cost value that is not a measured
    cost: seconds (c_*_s: a number or a table by g; samples*: lists) finite, above 0 and at most
    MAX_COST_S (spreads, *_iqr_s, may be 0); r_measured and r_by_gamma in (0, MAX_R]; context,
    repeats, threads and r_gamma integers in their ranges (_INT_RANGES). Types are checked too.
    Applies to any cost dict: run.json "cost", a confirmation's "cost", a cost profile's."""
    for key, value in cost.items():
        if value is None:
            continue
        bad = None if _cost_value_ok(key, value) else f"holds {_type_name(value)}, which is not a measured cost"
        if bad is None and key in _INT_RANGES:
            lo_i, hi_i = _INT_RANGES[key]
            if not lo_i <= value <= hi_i:
                bad = f"is {value}, outside [{lo_i}, {hi_i}]"
        bounds = _cost_range(key) if bad is None else None
        if bounds is not None:
            lo, hi, low_ok = bounds
            if isinstance(value, dict):
                items = [(f"{key}.{k}", v) for k, v in value.items()]
                if key.startswith("samples"):
                    items = [(f"{key}.{k}[{i}]", x) for k, v in value.items() for i, x in enumerate(v)]
            else:
                items = [(key, value)]
            for name, x in items:
                if not (lo < x <= hi or (low_ok and x == lo)):
                    shown = f"{x:.6g}" if isinstance(x, (int, float)) and math.isfinite(x) else str(x)
                    key, bad = name, f"is {shown}, outside {'[' if low_ok else '('}{lo:g}, {hi:g}]"
                    break
        if bad is not None:
            raise SpectermError(f"{where}: 'cost.{key}' {bad}; the file is corrupt, restore it or re-measure the costs "
                                "(`specterm run --resume --remeasure-cost`).")
        if key == "earlier":
            for i, old in enumerate(value):
                check_cost_values(old, f"{where} (cost.earlier[{i}])")
    _check_cost_scale(cost, where)


MAX_COST_SPREAD = 1e4  # a verification of g tokens within 10^4 of one target decode step (both target forwards)


def _check_cost_scale(cost: dict[str, Any], where: str) -> None:
    """Refuse target seconds that are each plausible but not together: every c_verify*_s (a target
    forward of g + 1 tokens; not a spread) within a factor MAX_COST_SPREAD of c_decode_s (a target
    forward of one), so S_hw = E c_decode / (c_verify + g c_draft) stays below (g + 1) 10^4 instead
    of printing as 10^30 x. The draft may be arbitrarily cheap (a negligible draft is a limit case)."""
    decode = cost.get("c_decode_s")
    if not (isinstance(decode, (int, float)) and _is_number(decode) and decode > 0):
        return
    base = float(decode)
    for key, value in cost.items():
        if not (key.startswith("c_verify") and key.endswith("_s")) or key.endswith("_iqr_s"):
            continue
        items = value.items() if isinstance(value, dict) else [("", value)]
        for sub, x in items:
            if _is_number(x) and x > 0 and not base / MAX_COST_SPREAD <= x <= base * MAX_COST_SPREAD:
                name = f"{key}.{sub}" if sub else key
                raise SpectermError(f"{where}: 'cost.{name}' is {x:.6g} s against c_decode_s {base:.6g} s, more than "
                                    f"{MAX_COST_SPREAD:g} times apart, which no measurement gives; the file is corrupt, "
                                    "restore it or re-measure the costs (`specterm run --resume --remeasure-cost`).")


def _check_fields(obj: dict[str, Any], fields: dict[str, tuple[Any, str]], prefix: str, where: Path) -> None:
    for key, (ok, what) in fields.items():
        value = obj.get(key)
        if value is not None and not ok(value):
            raise SpectermError(f"{where}: '{prefix}{key}' must be {what}, not {_type_name(value)}; "
                                "the file is corrupt, restore it or re-create the run.")


def validate_meta(meta: dict[str, Any], where: Path) -> None:
    """Check every known field of a run.json (`where` names it); SpectermError naming the first bad one."""
    _check_fields(meta, _META_FIELDS, "", where)
    for role in ("target", "draft"):
        if isinstance(meta.get(role), dict):
            _check_fields(meta[role], _MODEL_FIELDS, f"{role}.", where)
    if isinstance(meta.get("generation"), dict):
        _check_fields(meta["generation"], _GENERATION_FIELDS, "generation.", where)
    cost = meta.get("cost")
    if isinstance(cost, dict):
        check_cost_values(cost, str(where))
    confirmations = meta.get("confirmations")
    for i, conf in enumerate(confirmations if isinstance(confirmations, list) else []):
        if isinstance(conf, dict) and isinstance(conf.get("cost"), dict):
            check_cost_values(conf["cost"], f"{where} (confirmations[{i}])")
    profiles = meta.get("profiles")
    if profiles is not None and not isinstance(profiles, list):
        raise SpectermError(f"{where}: 'profiles' must be a list of cost profiles; the file is corrupt, restore it.")
    for i, prof in enumerate(profiles or []):
        if not isinstance(prof, dict) or not isinstance(prof.get("cost"), dict) or not isinstance(prof.get("id"), str):
            raise SpectermError(f"{where}: profiles[{i}] is not a cost profile (an object with an id and a cost); "
                                "the file is corrupt, restore it.")
        check_cost_values(prof["cost"], f"{where} (profiles[{i}])")


def record_bounds(meta: dict[str, Any]) -> RecordBounds:
    """What run.json says each record must satisfy: n <= generation.max_new_tokens, ids below the
    target's vocab_size (None where the run does not say, e.g. an import)."""
    gen = meta.get("generation")
    max_n = gen.get("max_new_tokens") if isinstance(gen, dict) else None
    target = meta.get("target")
    vocab = target.get("vocab_size") if isinstance(target, dict) else None
    from specterm.core.store.records import RecordBounds

    drafter = drafter_of(meta)
    max_draft = drafter.get("max_tokens") if drafter is not None else None
    return RecordBounds(max_n=max_n if _is_int(max_n) else None, vocab=vocab if _is_int(vocab) else None,
                        max_draft=max_draft if _is_int(max_draft) else None)


# ------------------------------------------------------------------------------ generation settings ---

RESUME_SETTINGS = ("max_new_tokens", "y_method", "dtype", "decoding", "prompt_encoding")


def y_method(generation: dict[str, Any]) -> str | None:
    """How y was built, without the batch size (which does not change y): 'batched greedy' or
    'speculative decoding, gamma=G'. Older runs only have the free text y_built_with."""
    method = generation.get("y_method")
    if isinstance(method, str):
        return method
    text = generation.get("y_built_with")
    if not isinstance(text, str):
        return None
    if text.startswith("speculative"):
        return "speculative decoding, gamma=" + text.rsplit("gamma=", 1)[-1]
    return "batched greedy"


def generation_settings(meta: dict[str, Any]) -> dict[str, Any]:
    """The settings that change what a stored stream means; a resumed run must keep them all."""
    gen = meta.get("generation") or {}
    return {
        "max_new_tokens": gen.get("max_new_tokens"),
        "y_method": y_method(gen),
        "dtype": meta.get("dtype"),
        "decoding": gen.get("decoding"),
        "prompt_encoding": gen.get("prompt_encoding"),
    }


SETTING_FLAGS = {"max_new_tokens": "-n", "y_method": "--spec-gamma", "dtype": "--dtype",
                 "decoding": "the decoding rule", "prompt_encoding": "the prompt encoding"}
