"""Records decoded many at a time (records.decode_lines, what load_run reads a run's lines with) against
decode_line one line at a time: the same streams, field for field, and the same first error."""

from __future__ import annotations

import binascii
import dataclasses
import hashlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specterm.core.errors import SpectermError
from specterm.core.store import RecordBounds, Stream, load_run, record_line, write_run
from specterm.core.store import runs as runs_module
from specterm.core.store.lines import _arrays_batch, decode_lines
from specterm.core.store.records import CHECKSUM_FIELD, canonical_json, decode_array, decode_line, record_checksum


def make_stream(i: int, n: int, full: bool) -> Stream:
    """Stream i of n positions; `full`: every field a run can store (gate, argmaxes, text, repairs)."""
    rng = np.random.default_rng(i)
    bits = rng.integers(0, 2, n).astype(np.uint8)
    s = Stream(id=f"p{i}", corpus=["code", "prose"][i % 2], bits=bits,
               draft_conf=rng.random(n).astype(np.float32), beta=rng.random(n).astype(np.float32))
    if full:
        y = rng.integers(0, 50, n).astype(np.int32)
        s.gate = (rng.random(n) < 0.9).astype(np.uint8)
        s.y, s.draft_argmax = y, np.where(bits == 1, y, (y + 1) % 50).astype(np.int32)
        s.target_conf = rng.random(n).astype(np.float32)
        pieces = [f"t{t}\n\"é" for t in range(n)]
        s.text, s.piece_ends = "".join(pieces), np.cumsum([len(p) for p in pieces]).astype(np.int32)
        s.prompt, s.stop = f"say \"{i}\"\\", "eos"
        s.repairs = [t for t in range(n) if t % 3 == 1]
    return s


LENGTHS = [0, 1, 2, 3, 4, 5, 7, 200]  # n mod 3 takes every value: base64 of 4n bytes with 0, 1 and 2 '='


def lines_of(streams: list[Stream]) -> list[tuple[bytes, str]]:
    return [(record_line(s).rstrip(b"\n"), f"f:{k + 1}") for k, s in enumerate(streams)]


def same_stream(a: Stream, b: Stream) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, f.name
            assert np.array_equal(x, y) and x.flags.writeable == y.flags.writeable, f.name
        else:
            assert type(x) is type(y) and x == y, f.name


@pytest.mark.parametrize("full", [False, True])
def test_a_batch_decodes_as_each_line_alone(full):
    streams = [make_stream(i, n, full) for i, n in enumerate(LENGTHS * 2)]
    lines = lines_of(streams)
    got = decode_lines(lines, "run", True, RecordBounds(max_n=200, vocab=50))
    assert len(got) == len(lines)
    for s, (raw, where), orig in zip(got, lines, streams):
        same_stream(s, decode_line(raw, where, "run", True, RecordBounds(max_n=200, vocab=50)))
        assert np.array_equal(s.bits, orig.bits) and np.array_equal(s.beta, orig.beta)  # the values written


def corrupt(rec: dict, how: str) -> dict:
    rec = dict(rec)
    if how == "bad char":
        rec["beta"] = "!" + rec["beta"][1:]
    elif how == "pad inside":
        rec["beta"] = rec["beta"][:2] + "=" + rec["beta"][3:]
    elif how == "short array":
        rec["beta"] = rec["beta"][:-4]
    elif how == "nan":
        rec["beta"] = binascii.b2a_base64(np.full(rec["n"], np.nan, np.float32).tobytes(), newline=False).decode()
    elif how == "not a string":
        rec["draft_conf"] = 5
    elif how == "bits":
        rec["bits"] = "2" + rec["bits"][1:]
    elif how == "n":
        rec["n"] += 1
    elif how == "too long":
        rec["bits"], rec["n"] = rec["bits"] + "1", rec["n"] + 1
    rec.pop(CHECKSUM_FIELD)
    if how != "checksum":
        rec[CHECKSUM_FIELD] = record_checksum(rec)
    else:
        rec[CHECKSUM_FIELD] = "0" * 16
    return rec


@pytest.mark.parametrize("how", ["bad char", "pad inside", "short array", "nan", "not a string", "bits", "n", "too long",
                                 "checksum"])
def test_the_first_bad_line_of_a_batch_raises_what_decode_line_raises(how):
    streams = [make_stream(i, n, False) for i, n in enumerate([3, 5, 4, 4])]
    lines = lines_of(streams)
    recs = [json.loads(raw) for raw, _ in lines]
    for k in (1, 2):  # two bad lines: the first is named
        lines[k] = (json.dumps(corrupt(recs[k], how)).encode(), lines[k][1])
    bounds = RecordBounds(max_n=5)
    with pytest.raises(SpectermError) as alone:
        decode_line(lines[1][0], lines[1][1], "", True, bounds)
    with pytest.raises(SpectermError) as batch:
        decode_lines(lines, "", True, bounds)
    assert str(batch.value) == str(alone.value) and str(batch.value).startswith("f:2: ")


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=13).map(lambda b: binascii.b2a_base64(b, newline=False).decode()),
                          st.text(alphabet="AQgw+/=Bé\n\r -_.\x00", max_size=12)), max_size=5))
def test_arrays_of_a_batch_are_decode_array_of_each_or_none(texts):
    """Each text decoded as decode_array decodes it (strict base64; bits past the last byte dropped),
    or None where decode_array refuses one or one is not whole int32 values (then one by one). The
    batch decodes with pybase64, decode_array with the standard library: the alphabet holds what
    either might read differently (whitespace, the URL-safe '-' and '_', NUL, a character beyond
    ASCII, misplaced padding)."""
    try:
        want = [decode_array(t, "<i4") for t in texts]
    except (ValueError, binascii.Error):
        want = None
    n = np.array([len(w) for w in want] if want is not None else [0] * len(texts), dtype=np.int64)
    got = _arrays_batch("piece_ends", texts, n, "<i4", None)
    if want is None:
        assert got is None
    else:
        assert got is not None and all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))


def test_load_run_batches_whole_lines_and_decodes_a_long_line_alone(tmp_path, monkeypatch):
    streams = [make_stream(i, n, True) for i, n in enumerate([4, 0, 1, 30, 2, 3, 5] * 3)]
    path = tmp_path / "r"
    write_run(path, {"format": "specterm-run", "schema_version": 1, "checksums": True}, streams)
    whole = load_run(path)
    monkeypatch.setattr(runs_module, "BATCH_BYTES", 600)  # batches of a few lines; the 30-position lines alone
    cut = load_run(path)
    monkeypatch.setattr(runs_module, "BATCH_BYTES", 0)  # every line alone (decode_line)
    alone = load_run(path)
    assert len(whole.streams) == len(cut.streams) == len(alone.streams) == len(streams)
    for a, b, c in zip(whole.streams, cut.streams, alone.streams):
        same_stream(a, c)
        same_stream(b, c)


def dumps_reference(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


@pytest.mark.parametrize("size", [10, 5000])  # a short and a long record (a 1000-position base64 array is 5,336 characters)
@pytest.mark.parametrize("bad", ["\n", "\x00", "\x7f", '"', "\\", "é", "\ud800", "ok"])
@pytest.mark.parametrize("key", ["bits", "text", "x\ny", "zz"])
def test_canonical_json_and_checksum_are_json_dumps_whatever_a_string_holds(size, bad, key):
    obj = {key: "A" * size + bad + "B", "n": 3, "beta": "Q" * size, "repairs": [1, 2], "stop": None, "checksum": "x"}
    assert canonical_json(obj) == dumps_reference(obj)
    payload = {k: v for k, v in obj.items() if k != CHECKSUM_FIELD}
    assert record_checksum(obj) == hashlib.sha256(dumps_reference(payload)).hexdigest()[:16]


def test_records_of_one_key_set_in_any_order_and_with_other_keys_are_json_dumps():
    """The sorted key order is kept per key set and key left out (records._key_plan): a record whose keys
    come in another order, one with a key more or less, one with a key that is not a str, and the
    checksum's form (its key left out) of each, are still json.dumps's."""
    base = {"id": "p", "corpus": "c", "n": 2, "bits": "01", "beta": "AAAAAAAAAAA=", "checksum": "x"}
    shapes = [base, dict(reversed(list(base.items()))), {**base, "gate": "11"}, {k: v for k, v in base.items() if k != "n"},
              {**base, "zz\u00e9": "text"}, {**base, "stop": "a\nb"}]
    for _ in range(2):  # the second time every plan is a kept one
        for obj in shapes:
            assert canonical_json(obj) == dumps_reference(obj)
            payload = {k: v for k, v in obj.items() if k != CHECKSUM_FIELD}
            assert record_checksum(obj) == hashlib.sha256(dumps_reference(payload)).hexdigest()[:16]
    ints = {2: "b", 1: "a"}  # not str keys: json.dumps itself (it writes them as strings, sorted as ints)
    assert canonical_json(ints) == dumps_reference(ints) == b'{"1":"a","2":"b"}'
