"""Run metadata (`run.json`): read, validated field by field, and what it says about the records.

A run.json whose fields have the wrong types is refused with one sentence naming the field (so
`list`, `report` and the TUI skip that run with a warning instead of crashing on it). Unknown
fields are allowed (later versions add some); known ones must have their type or be null.

Checksum and seal: every run.json written by the store carries `meta_checksum`, the first 16 hex
digits of the sha256 of its canonical JSON (sorted keys, ASCII escapes, no spaces) without that
field (`meta_checksum`, `seal_meta`); a load verifies it, and a run.json whose checksum does not
match (a flipped bit, a hand edit) is refused naming the fix (`specterm repair RUN` accepts an edit
after checking every field, and writes the checksum again). A run.json of the sealed format
(schema_version 2, `SCHEMA_VERSION`) must also carry `records` and record checksums, or it is
refused; a truly old run (schema_version 1) loads with one warning line naming what cannot be
checked (`legacy_warning`), and `repair` seals it.

Costs: every cost value is range-checked (`check_cost_values`: positive, finite, plausible), and
`records`, the number of records the run's writers know they wrote (a lower bound, written after
each append), lets a load tell a truncated prompts.jsonl from a short run (store/runs.py).

Length: one validator for every run.json field (load, `repair`, import and merge all call
`validate_meta`), so each field's type and bound is written once, here, beside the seal it protects.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specterm.core.errors import SpectermError
from specterm.core.store.atomic import read_regular



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
SCHEMA_VERSION = 2
"""2: the sealed format. A run.json of schema 2 must carry `meta_checksum`, `records` and
`"checksums": true` (seal_meta writes 2 exactly when it does); one that claims 2 and lacks any of
them was edited or damaged and is refused. 1: an older run, loaded with one warning naming what
cannot be checked (legacy_warning)."""
LEGACY_VERSION = 1
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


def is_sealed(meta: dict[str, Any]) -> bool:
    """True when `meta` holds everything the sealed format needs (a record count and record checksums;
    seal_meta adds the metadata checksum)."""
    return type(meta.get(RECORDS_FIELD)) is int and meta.get("checksums") is True


def seal_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with its checksum (META_CHECKSUM_FIELD, last), as every writer of run.json stores it, and
    its schema_version: SCHEMA_VERSION (sealed) when it has a record count and record checksums, else
    LEGACY_VERSION (a resumed old run whose records have no checksums stays an old run)."""
    out = {k: v for k, v in meta.items() if k != META_CHECKSUM_FIELD}
    if out.get("format") == FORMAT:
        out["schema_version"] = SCHEMA_VERSION if is_sealed(out) else LEGACY_VERSION
    out[META_CHECKSUM_FIELD] = meta_checksum(out)
    return out


def unchecked(meta: dict[str, Any]) -> list[str]:
    """What a load cannot check in an old run (schema 1): each missing seal, in words."""
    out = []
    if meta.get(META_CHECKSUM_FIELD) is None:
        out.append("an edit of run.json (no meta_checksum)")
    if type(meta.get(RECORDS_FIELD)) is not int:
        out.append("a truncated prompts.jsonl or deleted lines (no record count)")
    if meta.get("checksums") is not True:
        out.append("an edited record (no record checksums)")
    return out


def legacy_warning(meta: dict[str, Any], run: Path) -> str | None:
    """The one warning line an old run (schema 1 without every seal) loads with, or None."""
    missing = unchecked(meta) if meta.get("schema_version") == LEGACY_VERSION else []
    if not missing:
        return None
    return (f"{run} is an old run (schema_version 1), so a load cannot detect {'; '.join(missing)}; "
            f"`specterm repair {run}` checks every record and seals it.")


def meta_warnings(meta: dict[str, Any], run: Path) -> list[str]:
    """The warnings a load of a valid run.json gives: an old run's (legacy_warning) and each stored cost
    profile that is skipped because it decides nothing (no c_decode_s), named by index and id."""
    out = []
    legacy = legacy_warning(meta, run)
    if legacy is not None:
        out.append(legacy)
    profiles = meta.get("profiles")
    for i, prof in enumerate(profiles if isinstance(profiles, list) else []):
        if isinstance(prof, dict) and isinstance(prof.get("cost"), dict) and prof["cost"].get("c_decode_s") is None:
            out.append(f"{run / META_FILE}: cost profile profiles[{i}] ({prof.get('id')}) has no c_decode_s, so it "
                       f"cannot decide and is skipped; measure this machine again with `specterm costs {run}`.")
    return out

def read_meta_bytes(path: Path) -> tuple[Path, bytes]:
    """(path of run.json, its bytes) of the run directory `path`; SpectermError (one sentence) when it is
    not a run directory or the file cannot be read."""
    path = Path(path)
    meta_path = path / META_FILE
    if not path.is_dir():
        raise SpectermError(f"{path} is not a run directory; pass a directory under streams/ (see `specterm list`).")
    try:
        return meta_path, read_regular(meta_path, "restore the run's own run.json")
    except FileNotFoundError:
        raise SpectermError(f"{path} has no {META_FILE}, so it is not a specterm run; pass a directory made by "
                            "`specterm run` or `specterm import`.") from None


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
    if version < LEGACY_VERSION:
        raise SpectermError(f"{meta_path} has schema_version {version}, which no specterm writes; the file is corrupt, "
                            "restore it or re-create the run.")
    validate_meta(meta, meta_path)  # first: a field that is wrong whatever the checksum says is named
    stored = meta.get(META_CHECKSUM_FIELD)
    if verify and version >= SCHEMA_VERSION:
        lacks = [f for f in (META_CHECKSUM_FIELD, RECORDS_FIELD) if meta.get(f) is None]
        lacks += [] if meta.get("checksums") is True else ['"checksums": true']
        if lacks:
            raise SpectermError(f"{meta_path} claims the sealed format (schema_version {version}) but has no "
                                f"{' and no '.join(lacks)} (it was edited or damaged); restore it, or run "
                                f"`specterm repair {meta_path.parent}` to check every record and seal it again.")
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


MAX_VOCAB = 10_000_000        # token ids of any tokenizer in use lie far below this
MAX_NEW_TOKENS = 10_000_000   # positions of one continuation (specterm run -n allows far fewer)
MAX_BATCH = 65_536            # prompts in one batch
MAX_THREADS = 65_536          # CPU threads of one machine
MAX_LAYERS = 100_000
MAX_RECORDS = 1_000_000_000   # prompts of one run
MAX_SHARDS = 100_000
MAX_NAME_CHARS = 1_000        # a name or a short label


def _int_in(lo: int, hi: int) -> tuple[Any, str]:
    return (lambda v: _is_int(v) and lo <= v <= hi, f"an integer in [{lo}, {hi}]")


_STR = (lambda v: isinstance(v, str), "a string")
_NAME = (lambda v: isinstance(v, str) and len(v) <= MAX_NAME_CHARS, f"a string of at most {MAX_NAME_CHARS} characters")
_OBJECT = (lambda v: isinstance(v, dict), "an object")
_LIST = (lambda v: isinstance(v, list), "a list")
_BOOL = (lambda v: isinstance(v, bool), "true or false")
_NUMBERS = (lambda v: isinstance(v, list) and all(_is_number(x) for x in v), "a list of numbers")
_OBJECTS = (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of objects")

# Known top-level fields: (check, what it must be). Each may also be null or absent.
_META_FIELDS: dict[str, tuple[Any, str]] = {
    "name": _NAME,
    "created": _NAME,
    "specterm_version": _NAME,
    "device": _NAME,
    "dtype": _NAME,
    "imported_from": _NAME,
    "target": (lambda v: isinstance(v, (dict, str)), "an object"),
    "draft": (lambda v: isinstance(v, (dict, str)), "an object"),
    "generation": _OBJECT,
    "hardware": _OBJECT,
    "backend": _OBJECT,
    "cost": _OBJECT,
    "batch_cost": _OBJECT,
    "sessions": _OBJECTS,
    "confirmations": _OBJECTS,
    "profiles": _OBJECTS,
    "merged_from": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of directory names"),
    "checksums": _BOOL,
    META_CHECKSUM_FIELD: (lambda v: isinstance(v, str) and len(v) == 16, "16 hex digits"),
    RECORDS_FIELD: _int_in(0, MAX_RECORDS),
    "tokenizer_vocab": _int_in(1, MAX_VOCAB),
    "shard": (lambda v: isinstance(v, list) and len(v) == 2 and all(_is_int(x) for x in v) and 0 <= v[0] < v[1] <= MAX_SHARDS,
              f"[i, N] with 0 <= i < N <= {MAX_SHARDS}"),
}
DRAFT_KINDS = ("model", "layers", "prompt-lookup", "ngram")  # run.json draft.kind (SPEC 7); absent: a model
DRAFTER_KINDS = ("prompt-lookup", "ngram")  # drafters without a draft model: records carry runs and proposed


def drafter_of(meta: dict[str, Any]) -> dict[str, Any] | None:
    """run.json's draft record when it names a drafter without a model (SPEC 2b), else None."""
    draft = meta.get("draft")
    return draft if isinstance(draft, dict) and draft.get("kind") in DRAFTER_KINDS else None


_MODEL_FIELDS: dict[str, tuple[Any, str]] = {
    "spec": _STR,
    "source": _NAME,
    "sha256": _NAME,
    "path": _STR,
    "class": _NAME,
    "vocab_size": _int_in(1, MAX_VOCAB),
    "size": _int_in(0, 1 << 50),
    "layers": _int_in(1, MAX_LAYERS),
    "kind": (lambda v: v in DRAFT_KINDS, f"one of {', '.join(DRAFT_KINDS)}"),
    "max_tokens": _int_in(1, MAX_NEW_TOKENS),
}
_GENERATION_FIELDS: dict[str, tuple[Any, str]] = {
    "max_new_tokens": _int_in(1, MAX_NEW_TOKENS),
    "batch_size": _int_in(1, MAX_BATCH),
    "y_method": _NAME,
    "y_built_with": _NAME,
    "decoding": _NAME,
    "prompt_encoding": _NAME,
    "teacher_forcing": _NAME,
    "repair": _OBJECT,
    "eos_token_ids": (lambda v: isinstance(v, list) and all(_is_int(x) and 0 <= x < MAX_VOCAB for x in v),
                      "a list of token ids"),
}
_HARDWARE_FIELDS: dict[str, tuple[Any, str]] = {
    "machine": _NAME, "processor": _NAME, "system": _NAME, "python": _NAME, "cpu": _NAME, "gpu": _NAME,
    "cpu_count": _int_in(1, MAX_THREADS),
}
_BACKEND_FIELDS: dict[str, tuple[Any, str]] = {
    "name": _NAME, "device": _NAME, "threads": _int_in(1, MAX_THREADS), "build": _OBJECT,
}
_SESSION_FIELDS: dict[str, tuple[Any, str]] = {
    "started": _NAME, "prompts": _int_in(0, MAX_RECORDS), "batch_size": _int_in(1, MAX_BATCH),
    "torch_threads": _int_in(1, MAX_THREADS), "llama_threads": _int_in(1, MAX_THREADS), "load_avg": _NUMBERS,
    "y_built_with": _NAME, "backend": _NAME, "device": _NAME,
}
_CONFIRMATION_FIELDS: dict[str, tuple[Any, str]] = {
    "date": _NAME, "engine": _NAME, "device": _NAME, "dtype": _NAME, "threads": _int_in(1, MAX_THREADS),
    "hardware": _OBJECT, "backend": _OBJECT, "cost": _OBJECT, "per_corpus": _int_in(0, MAX_RECORDS),
    "max_new_tokens": _int_in(1, MAX_NEW_TOKENS), "complete": _BOOL, "prompts": _LIST, "results": _OBJECTS,
    "choices": _OBJECT, "profile": _NAME, "batch": _int_in(1, MAX_BATCH), "load_avg_start": _NUMBERS,
    "load_avg_end": _NUMBERS,
}
_PROFILE_FIELDS: dict[str, tuple[Any, str]] = {
    "id": _NAME, "engine": _OBJECT, "device": _OBJECT, "dtype": _NAME, "context": _int_in(1, 10_000_000),
    "clock": _NAME, "measured_at": _NAME, "load": _OBJECT, "busy": _BOOL, "stop_reason": _NAME, "source": _NAME,
    "cost": _OBJECT, "batch_cost": _OBJECT,
}
_PROFILE_DEVICE_FIELDS: dict[str, tuple[Any, str]] = {
    "kind": _NAME, "name": _NAME, "cores": _int_in(1, MAX_THREADS), "threads": _int_in(1, MAX_THREADS),
    "memory_gb": (lambda v: _is_number(v) and 0 <= v <= 1e7, "a number of GB"), "driver": _NAME,
    "capability": _NAME,
}
_PROFILE_ENGINE_FIELDS: dict[str, tuple[Any, str]] = {"name": _NAME, "version": _NAME, "build": _OBJECT}
_PROFILE_LOAD_FIELDS: dict[str, tuple[Any, str]] = {
    "avg": (lambda v: _is_number(v) and v >= 0, "a non-negative number"),
    "other_cpu_share": (lambda v: _is_number(v) and v >= 0, "a non-negative number"),
    "cpus": (lambda v: isinstance(v, list) and 0 < len(v) <= MAX_THREADS
             and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1_000_000 for c in v),
             "a list of CPU numbers"),
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


def _out_of_range(key: str, value: Any, bounds: tuple[float, float, bool]) -> tuple[str, str | None]:
    """(the field's name, what is wrong with it) for the first number of a cost field outside its
    bounds (lo, hi, whether lo itself is allowed), a table's or a sample list's named by its key and
    index; (key, None) when every number is in range."""
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
            return name, f"is {shown}, outside {'[' if low_ok else '('}{lo:g}, {hi:g}]"
    return key, None


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
            key, bad = _out_of_range(key, value, bounds)
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


def _check_fields(obj: dict[str, Any], fields: dict[str, tuple[Any, str]], prefix: str, where: Path | str) -> None:
    for key, (ok, what) in fields.items():
        value = obj.get(key)
        if value is not None and not ok(value):
            raise SpectermError(f"{where}: '{prefix}{key}' must be {what}, not {_type_name(value)}; "
                                "the file is corrupt, restore it or re-create the run.")


def _check_profile(prof: dict[str, Any], name: str, where: Path) -> None:
    """One stored cost profile: its fields typed and bounded, its costs measured costs."""
    if not isinstance(prof.get("cost"), dict) or not isinstance(prof.get("id"), str):
        raise SpectermError(f"{where}: {name} is not a cost profile (an object with an id and a cost); "
                            "the file is corrupt, restore it.")
    _check_fields(prof, _PROFILE_FIELDS, f"{name}.", where)
    for part, fields in (("device", _PROFILE_DEVICE_FIELDS), ("engine", _PROFILE_ENGINE_FIELDS),
                         ("load", _PROFILE_LOAD_FIELDS)):
        if isinstance(prof.get(part), dict):
            _check_fields(prof[part], fields, f"{name}.{part}.", where)
    check_cost_values(prof["cost"], f"{where} ({name})")
    if isinstance(prof.get("batch_cost"), dict):
        check_cost_values(prof["batch_cost"], f"{where} ({name}.batch_cost)")


def validate_meta(meta: dict[str, Any], where: Path) -> None:
    """Check every known field of a run.json (`where` names it): types and bounds, nested objects
    (models, generation, hardware, backend, sessions, confirmations, cost profiles) included, and every
    cost a measured cost (check_cost_values). SpectermError naming the first bad field. The one
    validator of a load, `repair` (read_meta) and `import`/`merge` (write_run checks what it writes)."""
    _check_fields(meta, _META_FIELDS, "", where)
    for role in ("target", "draft"):
        if isinstance(meta.get(role), dict):
            _check_fields(meta[role], _MODEL_FIELDS, f"{role}.", where)
    for part, fields in (("generation", _GENERATION_FIELDS), ("hardware", _HARDWARE_FIELDS),
                         ("backend", _BACKEND_FIELDS)):
        if isinstance(meta.get(part), dict):
            _check_fields(meta[part], fields, f"{part}.", where)
    for i, session in enumerate(meta.get("sessions") or []):
        _check_fields(session, _SESSION_FIELDS, f"sessions[{i}].", where)
    cost = meta.get("cost")
    if isinstance(cost, dict):
        check_cost_values(cost, str(where))
    if isinstance(meta.get("batch_cost"), dict):
        check_cost_values(meta["batch_cost"], f"{where} (batch_cost)")
    for i, conf in enumerate(meta.get("confirmations") or []):
        _check_fields(conf, _CONFIRMATION_FIELDS, f"confirmations[{i}].", where)
        if isinstance(conf.get("hardware"), dict):
            _check_fields(conf["hardware"], _HARDWARE_FIELDS, f"confirmations[{i}].hardware.", where)
        if isinstance(conf.get("cost"), dict):
            check_cost_values(conf["cost"], f"{where} (confirmations[{i}])")
    for i, prof in enumerate(meta.get("profiles") or []):
        _check_profile(prof, f"profiles[{i}]", where)


def record_bounds(meta: dict[str, Any]) -> RecordBounds:
    """What run.json says each record must satisfy: n <= generation.max_new_tokens, ids below both the
    target's vocab_size and tokenizer_vocab (None where the run does not say, e.g. an import)."""
    gen = meta.get("generation")
    max_n = gen.get("max_new_tokens") if isinstance(gen, dict) else None
    target = meta.get("target")
    sizes = [v for v in (target.get("vocab_size") if isinstance(target, dict) else None,
                         meta.get("tokenizer_vocab")) if isinstance(v, int) and _is_int(v)]
    from specterm.core.store.records import RecordBounds

    drafter = drafter_of(meta)
    max_draft = drafter.get("max_tokens") if drafter is not None else None
    return RecordBounds(max_n=max_n if _is_int(max_n) else None, vocab=min(sizes) if sizes else None,
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
