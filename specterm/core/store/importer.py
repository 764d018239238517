"""`specterm import`: streams from another tool, one JSON object per line (SPEC 7).

    {"id": str, "corpus": str, "bits": "0110..."}       required
    "draft_conf": [float, ...]                          optional, same length as bits, each in [0, 1]
    "tokens": [str, ...]                                optional, same length as bits (stored as text + piece_ends)

A drafter's streams (SPEC 2b) carry, instead of "bits", "runs": [L_s, ...] and "proposed": [m_s, ...]
(one int per block start, 0 <= L_s <= min(m_s, n - s)); name the drafter with --draft prompt-lookup[:N]
or --draft ngram-... (its run.json draft.kind). A file holds one kind of line.

Other keys are ignored. Every line is validated before anything is written (any failure is one
sentence naming FILE:LINE); the run is then written atomically (store.write_run, a unique
hidden temporary directory renamed into place), so a bad line leaves nothing behind. A UTF-8 BOM is read. Imported streams have
no gate (the oracle's gate was not checked here; shown "n/a"); their models are the names given with
--target/--draft, if any, and the run is labelled an import (never an engine). A corpus name must
print (no control, format or separator character) and may not take a name the report uses for
itself ("pooled"), also after Unicode normalization (store name_form); a stream has at least one
position; --out is never inside another run.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.store.atomic import check_not_in_run
from specterm.core.store import (
    BOM,
    Stream,
    bits_from_str,
    check_corpus_name,
    check_unique,
    drafter_runs_of,
    new_meta,
    write_run,
)


def _check_text(value: str, name: str, where: str) -> None:
    """Refuse a lone surrogate (valid in JSON escapes, not in text): it could never be written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SpectermError(f"{where}: '{name}' holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; "
                            "fix the line and import again.") from None


def check_import_corpus(corpus: str, where: str) -> None:
    """An imported corpus name prints (no control, format or separator character such as a zero-width
    space: str.isprintable) and is not a reserved name (store check_corpus_name, after normalization)."""
    if not corpus.isprintable():
        raise SpectermError(f"{where}: the corpus name {corpus!r} holds a character that does not print (a control, "
                            "format or separator character such as a zero-width space); rename the corpus and import again.")
    check_corpus_name(corpus, where, "rename the corpus and import again.")


def _bits(text: str, where: str) -> np.ndarray:
    """The stream's bits: only 0 and 1, at least one position."""
    try:
        bits = bits_from_str(text)
    except (ValueError, UnicodeEncodeError):
        raise SpectermError(f"{where}: 'bits' must contain only the characters 0 and 1; fix the line and import again.") from None
    if bits.size == 0:
        raise SpectermError(f"{where}: 'bits' is empty (no positions); every stream needs at least one position, "
                            "fix the line and import again.")
    return bits


def stream_from_line(obj: Any, where: str) -> Stream:
    """Validate one parsed line; `where` ("FILE:LINE") starts every error."""
    if not isinstance(obj, dict):
        raise SpectermError(f"{where}: expected a JSON object like {{\"id\": ..., \"corpus\": ..., \"bits\": \"0110\"}}; fix the line and import again.")
    drafted = "runs" in obj or "proposed" in obj
    for key in ("id", "corpus") if drafted else ("id", "corpus", "bits"):
        if key not in obj:
            raise SpectermError(f"{where}: missing field '{key}'; every line needs id, corpus and bits "
                                "(or a drafter's runs and proposed).")
        if not isinstance(obj[key], str):
            raise SpectermError(f"{where}: field '{key}' must be a string; fix the line and import again.")
    for key in ("id", "corpus"):
        if not obj[key].strip():
            raise SpectermError(f"{where}: field '{key}' is empty; give every prompt an id and a corpus.")
        _check_text(obj[key], key, where)
    check_import_corpus(obj["corpus"], where)
    if drafted:
        if obj.get("draft_conf") is not None:
            raise SpectermError(f"{where}: a drafter's line has no 'draft_conf' (it proposes without a model); remove it.")
        runs, proposed = drafter_runs_of(obj, where, None)
        return _with_tokens(obj, where, Stream(id=obj["id"], corpus=obj["corpus"], bits=np.zeros(0, dtype=np.uint8),
                                               runs=runs, proposed=proposed))
    bits = _bits(obj["bits"], where)
    n = bits.size
    kw: dict[str, Any] = {}
    conf = obj.get("draft_conf")
    if conf is not None:
        kw["draft_conf"] = _draft_conf(conf, n, where)
    return _with_tokens(obj, where, Stream(id=obj["id"], corpus=obj["corpus"], bits=bits, **kw))


def _draft_conf(conf: Any, n: int, where: str) -> np.ndarray:
    """A line's 'draft_conf': n probabilities in [0, 1], as float32; one sentence when it is not."""
    ok = isinstance(conf, list) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0.0 <= x <= 1.0 for x in conf
    )
    if not ok:
        raise SpectermError(f"{where}: 'draft_conf' must be a list of probabilities between 0 and 1; fix the line and import again.")
    if len(conf) != n:
        raise SpectermError(f"{where}: 'draft_conf' has {len(conf)} values but 'bits' has {n}; they must match one to one.")
    return np.asarray(conf, dtype=np.float32)


def _with_tokens(obj: dict[str, Any], where: str, stream: Stream) -> Stream:
    """`stream` with the line's optional "tokens" (n pieces) as text and piece_ends."""
    tokens = obj.get("tokens")
    n = stream.n
    if tokens is not None:
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise SpectermError(f"{where}: 'tokens' must be a list of strings; fix the line and import again.")
        for t in tokens:
            _check_text(t, "tokens", where)
        if len(tokens) != n:
            what = "'runs' has" if stream.drafted else "'bits' has"
            raise SpectermError(f"{where}: 'tokens' has {len(tokens)} pieces but {what} {n}; they must match one to one.")
        stream.text = "".join(tokens)
        stream.piece_ends = np.cumsum([len(t) for t in tokens], dtype=np.int64).astype(np.int32)
    return stream


def _parse_line(raw: bytes, where: str) -> Stream:
    """One line -> Stream; every failure (bad UTF-8, bad JSON, huge integers, deep nesting) is one
    sentence starting with `where`."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpectermError(f"{where}: the line is not UTF-8 text; save the file as UTF-8 and import again.") from None
    except json.JSONDecodeError as exc:
        raise SpectermError(f"{where}: not valid JSON ({exc.msg}); fix the line and import again.") from None
    except RecursionError:
        raise SpectermError(f"{where}: the line is nested too deeply; put one flat JSON object per line.") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise SpectermError(f"{where}: the line cannot be read ({str(exc)[:80]}); fix the line and import again.") from None
    return stream_from_line(obj, where)


def read_jsonl(path: str | os.PathLike[str]) -> list[Stream]:
    """Every stream of the file, validated; SpectermError naming FILE:LINE on the first bad line."""
    path = Path(path)
    if not path.is_file():
        raise SpectermError(f"{path} is not a file; pass the .jsonl file to import.")
    streams: list[Stream] = []
    linenos: list[int] = []
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise SpectermError(f"cannot read {path} ({exc.strerror}); check the path and its permissions.") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            where = f"{path}:{lineno}"
            if not raw.strip():
                continue
            streams.append(_parse_line(raw, where))
            linenos.append(lineno)
    check_unique(streams, lambda i: f"{path}:{linenos[i]}",
                 "ids must be unique within a corpus; fix the file and import again.")
    kinds = [s.drafted for s in streams]
    if any(kinds) and not all(kinds):
        i = kinds.index(not kinds[0])
        raise SpectermError(f"{path}:{linenos[i]}: the file mixes per-position bits and a drafter's runs; import each "
                            "kind from its own file.")
    if not streams:
        raise SpectermError(f"{path} holds no prompts; put one JSON object per line.")
    return streams


def named_model(name: str | None, flag: str) -> dict[str, Any] | None:
    """The run.json entry of a model an import names (`--target`/`--draft`): {"spec": name,
    "source": "named"}; model_key is then the name, so imports naming the same pair pool together.
    None when not named."""
    if name is None:
        return None
    if not name.strip():
        raise SpectermError(f"{flag} is empty; name the model the streams come from, or leave {flag} out.")
    _check_text(name, flag, "the command line")
    return {"spec": name, "source": "named"}


def import_jsonl(path: str | os.PathLike[str], out: str | os.PathLike[str], name: str | None = None,
                 target: str | None = None, draft: str | None = None) -> tuple[Path, list[Stream]]:
    """Validate the whole file, then write the run directory `out` atomically. Returns (out, streams).

    `target`/`draft` name the models the streams come from (named_model). An import that names
    neither is a pair of its own (store.pair_key), never pooled with another run: two files from
    unrelated tools must not pool just because neither says what it measured."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        raise SpectermError(f"{out} already exists; choose another --out or remove it first.")
    check_not_in_run(out)
    models = {"target": named_model(target, "--target"), "draft": named_model(draft, "--draft")}
    streams = read_jsonl(path)
    if streams[0].drafted:
        kind = "prompt-lookup" if (draft or "").startswith("prompt-lookup") else "ngram" if (draft or "").startswith("ngram") else None
        if kind is None:
            raise SpectermError(f"{path} holds a drafter's runs; name the drafter with --draft prompt-lookup[:N] or "
                                "--draft ngram-simple[:N].")
        models["draft"] = {**(models["draft"] or {}), "kind": kind}
    meta = new_meta(name or out.name, imported_from=Path(path).name, **models)
    return write_run(out, meta, streams), streams
