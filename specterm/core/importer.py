"""`specterm import`: streams from another tool, one JSON object per line (SPEC 7).

    {"id": str, "corpus": str, "bits": "0110..."}       required
    "draft_conf": [float, ...]                          optional, same length as bits, each in [0, 1]
    "tokens": [str, ...]                                optional, same length as bits (stored as text + piece_ends)

Other keys are ignored. Every line is validated before anything is written; the run is then
written atomically (streams.write_run), so a bad line leaves nothing behind. Imported streams have
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
from specterm.core.streams import Stream, bits_from_str, new_meta, write_run


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
        if len(tokens) != n:
            raise SpectermError(f"{where}: 'tokens' has {len(tokens)} pieces but 'bits' has {n}; they must match one to one.")
        kw["text"] = "".join(tokens)
        kw["piece_ends"] = np.cumsum([len(t) for t in tokens], dtype=np.int64).astype(np.int32)
    return Stream(id=obj["id"], corpus=obj["corpus"], bits=bits, **kw)


def read_jsonl(path: str | os.PathLike[str]) -> list[Stream]:
    """Every stream of the file, validated; SpectermError naming FILE:LINE on the first bad line."""
    path = Path(path)
    if not path.is_file():
        raise SpectermError(f"{path} is not a file; pass the .jsonl file to import.")
    streams: list[Stream] = []
    seen: dict[tuple[str, str], int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SpectermError(f"{where}: the line is not UTF-8 text; save the file as UTF-8 and import again.") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SpectermError(f"{where}: not valid JSON ({exc.msg}); fix the line and import again.") from None
            stream = stream_from_line(obj, where)
            key = (stream.corpus, stream.id)
            if key in seen:
                raise SpectermError(f"{where}: prompt '{stream.id}' ({stream.corpus}) already appeared on line {seen[key]}; ids must be unique within a corpus.")
            seen[key] = lineno
            streams.append(stream)
    if not streams:
        raise SpectermError(f"{path} holds no prompts; put one JSON object per line.")
    return streams


def import_jsonl(path: str | os.PathLike[str], out: str | os.PathLike[str], name: str | None = None) -> tuple[Path, list[Stream]]:
    """Validate the whole file, then write the run directory `out` atomically. Returns (out, streams)."""
    out = Path(out)
    if out.exists():
        raise SpectermError(f"{out} already exists; choose another --out or remove it first.")
    streams = read_jsonl(path)
    meta = new_meta(name or out.name, imported_from=str(Path(path).resolve()), target=None, draft=None)
    return write_run(out, meta, streams), streams
