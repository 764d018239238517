"""Many records at once: `decode_lines`, what a run's load (store/runs.py iter_records) decodes its
whole lines with, a batch at a time; the same streams as decode_line of each line alone, or the same
first error.

Per record (records.py) a few numpy calls per field cost more than the field's values at 200
positions: 20,000 short records spent about as long in them as in reading their JSON. Here the
per-record checks that read one field (the checksum, the types, the text, the corpus name, repairs)
stay per record, and each field's bits or decoded bytes of the whole batch lie end to end in one
array, checked in one pass of numpy, each stream's values a view of it.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

try:  # a dependency; the GPU check's bare carry (benchmarks/gpu) runs without it, on binascii
    import pybase64

    def _b64(text: str) -> bytes:
        return pybase64.b64decode(text, validate=True)
except ImportError:  # pragma: no cover - exercised by the GPU check's carry only

    def _b64(text: str) -> bytes:
        return binascii.a2b_base64(text, strict_mode=True)

from specterm.core.store.records import (FLOAT_FIELDS, INT_FIELDS, STR_FIELDS, PROB_SLACK, RecordBounds, Stream,
                                         check_checksum, check_text, check_text_ends, repairs_field, check_corpus_name,
                                         decode_line)

def _bits_batch(texts: list[str]) -> np.ndarray | None:
    """bits_from_str of the strings end to end (uint8); None when one holds another character."""
    try:
        arr = np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8) - ord("0")
    except UnicodeEncodeError:
        return None
    return None if arr.size and arr.max() > 1 else arr


def _pieces(flat: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    """flat cut into consecutive pieces of these sizes (views)."""
    bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _arrays_batch(name: str, texts: list[str], n: np.ndarray, dtype: str, vocab: int | None) -> list[np.ndarray] | None:
    """_array_field of each text (n[i] values of `dtype` each): each decoded by pybase64 with validate=True
    (the strict base64 decode_array accepts: the alphabet, whole quanta, padding only at the end; SIMD,
    about 7x binascii's, which spent 0.4 s of a 10M-position load in this loop), their bytes end to
    end one array, its values checked at once; None when one of them would be refused."""
    try:
        raw = [_b64(text) for text in texts]
    except (ValueError, binascii.Error):  # binascii.Error is a ValueError; also a str beyond ASCII
        return None
    item = np.dtype(dtype).itemsize
    if not np.array_equal(np.fromiter(map(len, raw), dtype=np.int64, count=len(raw)), n * item):
        return None
    flat = np.frombuffer(b"".join(raw), dtype=dtype)  # read-only, as decode_array's
    if flat.size:
        lo, hi = flat.min(), flat.max()
        if name in FLOAT_FIELDS and not (lo >= 0.0 and hi <= 1.0 + PROB_SLACK):  # a NaN is both
            return None
        if name in ("y", "draft_argmax") and (int(lo) < 0 or (vocab is not None and int(hi) >= vocab)):
            return None
    return _pieces(flat, n)


def _record_checks(rec: Any, where: str, require_checksum: bool) -> bool:
    """The checks of stream_from_record that read one field at a time (raising its SpectermError), and
    whether every array field is a string or null (the batch decodes strings only)."""
    if not isinstance(rec, dict):
        return False
    check_checksum(rec, where, require_checksum)
    for key in ("id", "corpus", "bits"):
        if not isinstance(rec.get(key), str):
            return False
    for key in STR_FIELDS:
        check_text(rec.get(key), key, where)
    check_corpus_name(rec["corpus"], where, "re-import the run with another corpus name.")
    if "n" in rec and (type(rec["n"]) is not int or rec["n"] != len(rec["bits"])):
        return False
    for key in ("prompt", "stop"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return False
    return all(rec.get(key) is None or type(rec[key]) is str for key in ("gate", *INT_FIELDS, *FLOAT_FIELDS))


def _decode_batch(lines: Sequence[tuple[bytes, str]], run: str, require_checksum: bool,
                  bounds: RecordBounds | None) -> list[Stream] | None:
    """`decode_lines`' streams, with every field check of stream_from_record; None (or a SpectermError)
    when some line would not decode: the caller then decodes them one by one."""
    recs = [json.loads(raw.decode("utf-8")) for raw, _ in lines]
    if not all(_record_checks(rec, where, require_checksum) for rec, (_, where) in zip(recs, lines)):
        return None
    bits = _bits_batch([rec["bits"] for rec in recs])
    if bits is None:
        return None
    n = np.fromiter((len(rec["bits"]) for rec in recs), dtype=np.int64, count=len(recs))
    if bounds is not None and bounds.max_n is not None and n.size and int(n.max()) > bounds.max_n:
        return None
    fields: dict[str, list[Any]] = {"bits": _pieces(bits, n)}
    vocab = None if bounds is None else bounds.vocab
    for name, dtype in [("gate", ""), *[(f, "<i4") for f in INT_FIELDS], *[(f, "<f4") for f in FLOAT_FIELDS]]:
        has = [i for i, rec in enumerate(recs) if rec.get(name) is not None]
        column: list[Any] = [None] * len(recs)
        if has:
            texts = [recs[i][name] for i in has]
            if name == "gate":
                flat = _bits_batch(texts)
                ok = flat is not None and flat.size == int(n[has].sum()) and np.array_equal(
                    np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), n[has])
                values = _pieces(flat, n[has]) if ok and flat is not None else None
            else:
                values = _arrays_batch(name, texts, n[has], dtype, vocab)
            if values is None:
                return None
            for i, v in zip(has, values):
                column[i] = v
        fields[name] = column
    out = []
    for i, (rec, (_, where)) in enumerate(zip(recs, lines)):
        kw = {name: fields[name][i] for name in ("gate", *INT_FIELDS, *FLOAT_FIELDS) if fields[name][i] is not None}
        b = fields["bits"][i]
        if "y" in kw and "draft_argmax" in kw and not np.array_equal(b, kw["draft_argmax"] == kw["y"]):
            return None
        text = rec.get("text")
        if text is not None:
            check_text_ends(text, kw.get("piece_ends"), b.size, where)
        repairs = repairs_field(rec.get("repairs"), b.size, "gate" in kw, where)
        out.append(Stream(id=rec["id"], corpus=rec["corpus"], bits=b, prompt=rec.get("prompt"), text=text,
                          stop=rec.get("stop"), run=run, repairs=repairs, **kw))
    return out


def decode_lines(lines: Sequence[tuple[bytes, str]], run: str = "", require_checksum: bool = False,
                 bounds: RecordBounds | None = None) -> list[Stream]:
    """decode_line of each (raw, where) in turn: the same streams, or the same first error.

    The records' bit strings and arrays are checked and cut together, field by field, for all of them
    (each field's bits or decoded bytes end to end in one array, checked in one pass of numpy, each
    stream's values a view of it: 20,000 records of 200 positions pay a few numpy calls per field,
    not a few per record and field); the checks that read one field of one record stay per record.
    When some line would be refused, every line goes through decode_line in order, which raises the
    first line's error.
    """
    try:
        streams = _decode_batch(lines, run, require_checksum, bounds)
    except Exception:  # whatever the error, decode_line says it in its one sentence for the first bad line
        streams = None
    if streams is not None:
        return streams
    return [decode_line(raw, where, run, require_checksum, bounds) for raw, where in lines]
