"""The stream store: exact round trip, and the loader's one-sentence refusals (with line numbers)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specterm.core.errors import SpectermError
from specterm.core.store import (
    META_FILE,
    RECORDS_FILE,
    RunWriter,
    Stream,
    find_runs,
    load_run,
    new_meta,
    write_run,
)


def full_stream(rng, i: int, n: int) -> Stream:
    pieces = [f"t{k}" for k in range(n)]
    return Stream(
        id=f"p{i}", corpus="prose" if i % 2 else "code", prompt=f"prompt {i}",
        bits=(rng.random(n) < 0.7).astype(np.uint8), gate=np.ones(n, np.uint8),
        y=rng.integers(0, 150000, n).astype(np.int32), draft_argmax=rng.integers(0, 150000, n).astype(np.int32),
        draft_conf=rng.random(n).astype(np.float32), target_conf=rng.random(n).astype(np.float32),
        beta=rng.random(n).astype(np.float32), text="".join(pieces),
        piece_ends=np.cumsum([len(p) for p in pieces]).astype(np.int32), stop="length",
    )


def test_round_trip_every_field(tmp_path):
    rng = np.random.default_rng(0)
    streams = [full_stream(rng, i, n) for i, n in enumerate([5, 0, 17, 1])]
    load = load_run(write_run(tmp_path / "r", new_meta("r"), streams))
    assert load.name == "r" and len(load.streams) == 4
    for a, b in zip(streams, load.streams):
        for name in ("bits", "gate", "y", "draft_argmax", "draft_conf", "target_conf", "beta", "piece_ends"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert (a.id, a.corpus, a.prompt, a.text, a.stop) == (b.id, b.corpus, b.prompt, b.text, b.stop)
        assert a.pieces == b.pieces


def test_gate_cut():
    s = Stream(id="x", corpus="c", bits=np.array([1, 1, 0, 1, 1], np.uint8), gate=np.array([1, 1, 1, 0, 1], np.uint8))
    assert s.valid_len == 3 and s.a.tolist() == [1, 1, 0] and s.gate_rate == pytest.approx(0.8)


@settings(max_examples=30, deadline=None)
@given(data=st.lists(st.tuples(st.text(alphabet="01", max_size=80), st.text(min_size=1, max_size=5)), min_size=1, max_size=8))
def test_round_trip_property(tmp_path_factory, data):
    streams = [Stream(id=f"{i}-{name}", corpus="c", bits=np.array([int(c) for c in bits], np.uint8)) for i, (bits, name) in enumerate(data)]
    run = load_run(write_run(tmp_path_factory.mktemp("p") / "r", new_meta("r"), streams))
    assert [(s.id, s.bits.tolist()) for s in run.streams] == [(s.id, s.bits.tolist()) for s in streams]


# ---------------------------------------------------------------------- refusals ---


def make(tmp_path, records: list, meta: dict | None = None):
    path = tmp_path / "r"
    path.mkdir()
    (path / META_FILE).write_text(json.dumps(meta or new_meta("r")))
    (path / RECORDS_FILE).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path



OK = {"id": "a", "corpus": "c", "bits": "0110"}


@pytest.mark.parametrize("rec,message", [
    ("{broken", "not valid JSON"),
    ([1], "expected a JSON object"),
    ({"id": "b", "corpus": "c"}, "field 'bits' must be a string"),
    ({"id": "b", "corpus": "c", "bits": "01x"}, "only"),
    ({"id": "b", "corpus": "c", "bits": "01", "n": 3}, "'n' is 3"),
    ({"id": "b", "corpus": "c", "bits": "01", "gate": "1"}, "'gate' has 1 positions"),
    ({"id": "b", "corpus": "c", "bits": "01", "gate": 7}, "'gate' must be a string"),
    ({"id": "b", "corpus": "c", "bits": "01", "y": "!!notbase64"}, "field 'y' is not valid base64"),
    ({"id": "b", "corpus": "c", "bits": "01", "beta": "AAAAAA=="}, "'beta' has 1 values"),
    ({"id": "b", "corpus": "c", "bits": "01", "text": "ab"}, "'text' needs 'piece_ends'"),
    ({"id": "b", "corpus": "c", "bits": "01", "prompt": 5}, "'prompt' must be a string"),
    ({"id": "a", "corpus": "c", "bits": "01"}, "appears twice"),
])
def test_corrupt_record_named_by_line(tmp_path, rec, message):
    path = make(tmp_path, [OK, rec])
    with pytest.raises(SpectermError) as err:
        load_run(path)
    assert f"{RECORDS_FILE}:2:" in str(err.value) and message in str(err.value)


@pytest.mark.parametrize("meta,message", [
    ({"format": "something-else", "schema_version": 1}, "not a specterm run file"),
    ({"format": "specterm-run", "schema_version": 99}, "newer than this specterm reads"),
    ({"format": "specterm-run"}, "no integer schema_version"),
])
def test_foreign_or_newer_meta(tmp_path, meta, message):
    with pytest.raises(SpectermError, match=message):
        load_run(make(tmp_path, [OK], meta))


def test_not_a_run(tmp_path):
    with pytest.raises(SpectermError, match="not a run directory"):
        load_run(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpectermError, match="has no run.json"):
        load_run(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / META_FILE).write_text("{")
    with pytest.raises(SpectermError, match="not valid JSON"):
        load_run(tmp_path / "bad")


def test_torn_final_line_is_ignored_and_truncated_on_resume(tmp_path):
    path = make(tmp_path, [OK])
    with open(path / RECORDS_FILE, "a") as fh:
        fh.write('{"id": "b", "corpus": "c", "bi')  # a write interrupted mid-line
    assert [s.id for s in load_run(path).streams] == ["a"]
    writer = RunWriter(path, load_run(path).meta, resume=True)
    assert writer.done == {("c", "a")}
    writer.append(Stream(id="b", corpus="c", bits=np.array([1, 0], np.uint8)))
    assert [s.id for s in load_run(path).streams] == ["a", "b"]
    with pytest.raises(SpectermError, match="already in"):
        writer.append(Stream(id="b", corpus="c", bits=np.array([1], np.uint8)))


def test_find_runs(tmp_path):
    write_run(tmp_path / "b", new_meta("b"), [])
    write_run(tmp_path / "a", new_meta("a"), [])
    (tmp_path / "not-a-run").mkdir()
    assert [p.name for p in find_runs(tmp_path)] == ["a", "b"]
    assert find_runs(tmp_path / "missing") == []


@settings(max_examples=150, deadline=None)
@given(pos=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_any_corruption_is_a_clear_error_or_loads(tmp_path_factory, pos, byte):
    """Flip one byte anywhere in a real stored file: loading either succeeds or raises SpectermError."""
    rng = np.random.default_rng(1)
    path = tmp_path_factory.mktemp("c") / "r"
    write_run(path, new_meta("r"), [full_stream(rng, i, 6) for i in range(3)])
    target = path / (RECORDS_FILE if pos % 4 else META_FILE)
    data = bytearray(target.read_bytes())
    data[pos % len(data)] = byte
    target.write_bytes(bytes(data))
    try:
        load_run(path)
    except SpectermError as exc:
        assert str(exc) and "\n" not in str(exc)
