"""`specterm import`: good files round-trip; every bad line is named by number and nothing is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specterm.core.errors import SpectermError
from specterm.core.store.importer import import_jsonl, read_jsonl
from specterm.core.store import load_run

GOOD = [
    {"id": "a", "corpus": "prose", "bits": "0110", "draft_conf": [0.1, 0.9, 0.8, 0.2], "tokens": ["He", "llo", ",", " w"]},
    {"id": "b", "corpus": "code", "bits": "111"},
]


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def test_round_trip(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", GOOD)
    out, streams = import_jsonl(src, tmp_path / "streams" / "imp")
    run = load_run(out)
    assert [(s.id, s.corpus, s.bits.tolist()) for s in run.streams] == [("a", "prose", [0, 1, 1, 0]), ("b", "code", [1, 1, 1])]
    a, b = run.streams
    assert a.draft_conf.tolist() == pytest.approx([0.1, 0.9, 0.8, 0.2], abs=1e-7)
    assert a.pieces == ["He", "llo", ",", " w"] and a.text == "Hello, w"
    assert a.gate is None and b.draft_conf is None and b.pieces is None
    assert run.meta["imported_from"] == src.name  # the file name, never a local absolute path
    assert len(streams) == 2


def test_blank_lines_are_skipped_but_counted(tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [GOOD[0], "", "   ", {"id": "x", "corpus": "c", "bits": "2"}])
    with pytest.raises(SpectermError, match=r"in\.jsonl:4: 'bits' must contain only"):
        read_jsonl(src)


BAD = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ({"corpus": "c", "bits": "01"}, "missing field 'id'"),
    ({"id": 3, "corpus": "c", "bits": "01"}, "field 'id' must be a string"),
    ({"id": " ", "corpus": "c", "bits": "01"}, "field 'id' is empty"),
    ({"id": "x", "corpus": "c", "bits": "0121"}, "only the characters 0 and 1"),
    ({"id": "x", "corpus": "c", "bits": [0, 1]}, "field 'bits' must be a string"),
    ({"id": "x", "corpus": "c", "bits": "01", "draft_conf": [0.5]}, "'draft_conf' has 1 values but 'bits' has 2"),
    ({"id": "x", "corpus": "c", "bits": "01", "draft_conf": [0.5, 1.5]}, "probabilities between 0 and 1"),
    ('{"id": "x", "corpus": "c", "bits": "01", "draft_conf": [0.5, NaN]}', "probabilities between 0 and 1"),
    ({"id": "x", "corpus": "c", "bits": "01", "draft_conf": [True, 0.5]}, "probabilities between 0 and 1"),
    ({"id": "x", "corpus": "c", "bits": "01", "draft_conf": "0.5"}, "probabilities between 0 and 1"),
    ({"id": "x", "corpus": "c", "bits": "01", "tokens": ["a"]}, "'tokens' has 1 pieces but 'bits' has 2"),
    ({"id": "x", "corpus": "c", "bits": "01", "tokens": ["a", 2]}, "'tokens' must be a list of strings"),
    ({"id": "a", "corpus": "prose", "bits": "01"}, "appears twice (first at"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_bad_line_named_and_nothing_written(tmp_path, line, message):
    src = write_lines(tmp_path / "in.jsonl", GOOD + [line])
    out = tmp_path / "streams" / "imp"
    with pytest.raises(SpectermError) as err:
        import_jsonl(src, out)
    assert "in.jsonl:3: " in str(err.value) and message in str(err.value)
    assert not out.exists() and not (tmp_path / "streams").exists()


def test_not_utf8(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(json.dumps(GOOD[0]).encode() + b"\n\xff\xfe\n")
    with pytest.raises(SpectermError, match=r"in\.jsonl:2: the line is not UTF-8"):
        read_jsonl(src)


def test_empty_missing_and_existing(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(SpectermError, match="holds no prompts"):
        read_jsonl(tmp_path / "empty.jsonl")
    with pytest.raises(SpectermError, match="is not a file"):
        read_jsonl(tmp_path / "missing.jsonl")
    src = write_lines(tmp_path / "in.jsonl", GOOD)
    (tmp_path / "taken").mkdir()
    with pytest.raises(SpectermError, match="already exists"):
        import_jsonl(src, tmp_path / "taken")


def test_cli_import(tmp_path, monkeypatch, capsys):
    from specterm.cli import main

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["specterm", *map(str, args)])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        return code, capsys.readouterr()

    src = write_lines(tmp_path / "in.jsonl", GOOD)
    code, out = run("import", src, "--out", tmp_path / "streams" / "ok")
    assert code == 0 and "imported 2 prompts, 7 positions (code, prose)" in out.out
    bad = write_lines(tmp_path / "bad.jsonl", GOOD + ["{oops"])
    code, out = run("import", bad, "--out", tmp_path / "streams" / "bad")
    assert code == 2 and "bad.jsonl:3:" in out.err and "Traceback" not in out.err
    assert not (tmp_path / "streams" / "bad").exists()


# --------------------------------------------------------------- property-based ---

ids = st.text(alphabet="abcxyz0123-_", min_size=1, max_size=8)
records = st.lists(
    st.tuples(st.sampled_from(["prose", "code", "math"]), st.text(alphabet="01", min_size=1, max_size=60), st.booleans(), st.booleans()),
    min_size=1, max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=records, seed=st.integers(0, 2**32 - 1))
def test_valid_files_round_trip(tmp_path_factory, recs, seed):
    rng = np.random.default_rng(seed)
    lines = []
    for i, (corpus, bits, with_conf, with_tokens) in enumerate(recs):
        rec = {"id": f"p{i}", "corpus": corpus, "bits": bits}
        if with_conf:
            rec["draft_conf"] = rng.random(len(bits)).round(4).tolist()
        if with_tokens:
            rec["tokens"] = ["tok" * int(k) + "é" for k in rng.integers(0, 3, size=len(bits))]
        lines.append(rec)
    tmp = tmp_path_factory.mktemp("rt")
    out, _ = import_jsonl(write_lines(tmp / "in.jsonl", lines), tmp / "run")
    run = load_run(out)
    assert len(run.streams) == len(lines)
    for s, rec in zip(run.streams, lines):
        assert (s.id, s.corpus) == (rec["id"], rec["corpus"])
        assert "".join(map(str, s.bits.tolist())) == rec["bits"]
        if "draft_conf" in rec:
            assert s.draft_conf.tolist() == pytest.approx(rec["draft_conf"], abs=1e-6)
        else:
            assert s.draft_conf is None
        if "tokens" in rec:
            assert s.pieces == rec["tokens"]
        else:
            assert s.pieces is None


junk = st.one_of(
    st.text(max_size=30).filter(lambda t: "\n" not in t and "\r" not in t and t.strip() != ""),
    st.fixed_dictionaries({"id": st.integers(), "corpus": st.just("c"), "bits": st.just("01")}).map(json.dumps),
    st.fixed_dictionaries({"id": st.just("z"), "corpus": st.just("c"),
                           "bits": st.text(alphabet="012 ", min_size=1).filter(lambda b: set(b) - {"0", "1"})}).map(json.dumps),
)


@settings(max_examples=60, deadline=None)
@given(before=st.integers(0, 5), after=st.integers(0, 3), bad=junk)
def test_any_bad_line_is_named(tmp_path_factory, before, after, bad):
    good = [json.dumps({"id": f"g{i}", "corpus": "c", "bits": "0110"}) for i in range(before + after)]
    try:
        parsed = json.loads(bad)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and {"id", "corpus", "bits"} <= set(parsed) and all(isinstance(parsed[k], str) for k in ("id", "corpus", "bits")) \
            and set(parsed["bits"]) <= {"0", "1"} and parsed["id"].strip():
        return  # hypothesis found a valid record; nothing to reject
    tmp = tmp_path_factory.mktemp("bad")
    src = tmp / "in.jsonl"
    src.write_text("\n".join(good[:before] + [bad] + good[before:]) + "\n", encoding="utf-8")
    with pytest.raises(SpectermError) as err:
        import_jsonl(src, tmp / "run")
    assert f"in.jsonl:{before + 1}:" in str(err.value)
    assert not (tmp / "run").exists()
