"""`specterm import`: streams from another tool, one JSON object per line (SPEC 7).

    {"id": str, "corpus": str, "bits": "0110..."}       required
    "draft_conf": [float, ...]                          optional, same length as bits, each in [0, 1]
    "tokens": [str, ...]                                optional, same length as bits (stored as text + piece_ends)

Other keys are ignored. Every line is validated before anything is written (any failure is one
sentence naming FILE:LINE); the run is then written atomically (store.write_run, a unique
hidden temporary directory renamed into place), so a bad line leaves nothing behind. A UTF-8 BOM is read. Imported streams have
no gate (the oracle's gate was not checked here) and no models in their metadata.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.store import BOM, Stream, bits_from_str, check_unique, new_meta, write_run


def _check_text(value: str, name: str, where: str) -> None:
    """Refuse a lone surrogate (valid in JSON escapes, not in text): it could never be written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SpectermError(f"{where}: '{name}' holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not text; "
                            "fix the line and import again.") from None


def stream_from_line(obj: Any, where: str) -> Stream:
    """Validate one parsed line; `where` ("FILE:LINE") starts every error."""
    if not isinstance(obj, dict):
        raise SpectermError(f"{where}: expected a JSON object like {{\"id\": ..., \"corpus\": ..., \"bits\": \"0110\"}}; fix the line and import again.")
    for key in ("id", "corpus", "bits"):
        if key not in obj:
            raise SpectermError(f"{where}: missing field '{key}'; every line needs id, corpus and bits.")
        if not isinstance(obj[key], str):
            raise SpectermError(f"{where}: field '{key}' must be a string; fix the line and import again.")
    for key in ("id", "corpus"):
        if not obj[key].strip():
            raise SpectermError(f"{where}: field '{key}' is empty; give every prompt an id and a corpus.")
        _check_text(obj[key], key, where)
    try:
        bits = bits_from_str(obj["bits"])
    except (ValueError, UnicodeEncodeError):
        raise SpectermError(f"{where}: 'bits' must contain only the characters 0 and 1; fix the line and import again.") from None
    n = bits.size
    kw: dict[str, Any] = {}
    conf = obj.get("draft_conf")
    if conf is not None:
        ok = isinstance(conf, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0.0 <= x <= 1.0 for x in conf
        )
        if not ok:
            raise SpectermError(f"{where}: 'draft_conf' must be a list of probabilities between 0 and 1; fix the line and import again.")
        if len(conf) != n:
            raise SpectermError(f"{where}: 'draft_conf' has {len(conf)} values but 'bits' has {n}; they must match one to one.")
        kw["draft_conf"] = np.asarray(conf, dtype=np.float32)
    tokens = obj.get("tokens")
    if tokens is not None:
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise SpectermError(f"{where}: 'tokens' must be a list of strings; fix the line and import again.")
        for t in tokens:
            _check_text(t, "tokens", where)
        if len(tokens) != n:
            raise SpectermError(f"{where}: 'tokens' has {len(tokens)} pieces but 'bits' has {n}; they must match one to one.")
        kw["text"] = "".join(tokens)
        kw["piece_ends"] = np.cumsum([len(t) for t in tokens], dtype=np.int64).astype(np.int32)
    return Stream(id=obj["id"], corpus=obj["corpus"], bits=bits, **kw)


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
    if not streams:
        raise SpectermError(f"{path} holds no prompts; put one JSON object per line.")
    return streams


def import_jsonl(path: str | os.PathLike[str], out: str | os.PathLike[str], name: str | None = None) -> tuple[Path, list[Stream]]:
    """Validate the whole file, then write the run directory `out` atomically. Returns (out, streams)."""
    out = Path(out)
    if out.exists():
        raise SpectermError(f"{out} already exists; choose another --out or remove it first.")
    streams = read_jsonl(path)
    meta = new_meta(name or out.name, imported_from=Path(path).name, target=None, draft=None)
    return write_run(out, meta, streams), streams
