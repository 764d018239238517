"""`specterm report`'s warm path (issue 39): a cached report is found by the bytes of the runs' files
(cache.load_by_files) and printed without parsing the runs; anything that could change the report
misses; a load that said something stores no alias. And the runs' content digest, taken field by
field over the streams (cache._column)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_run
from typer.testing import CliRunner

from specterm.core.report import cache
from specterm.core import store
from specterm.core.store import RECORDS_FILE, Stream, new_meta, write_run


pytestmark = pytest.mark.usefixtures("own_cache")  # every test gets a cache of its own (conftest)
ARGS = ["--format", "json", "--boot", "40", "--shuffles", "-1", "--seed", "1", "-g", "4"]


@pytest.fixture
def run_path(tmp_path, synth):
    rng = np.random.default_rng(5)
    streams = synth.streams("code", [synth.markov(rng, 60, 0.8, 0.3) for _ in range(5)])
    streams += synth.streams("prose", [synth.markov(rng, 50, 0.6, 0.2) for _ in range(4)])
    return write_run(tmp_path / "run", new_meta("warm-test"), streams)


def report(*args: str):
    from specterm.cli import app

    out = CliRunner().invoke(app, ["report", *args, *ARGS])
    assert out.exit_code == 0, out.output
    return out


def no_parsing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the warm path parsed a run")

    monkeypatch.setattr(store, "load_run", refuse)


def aliases():
    return sorted(cache.cache_dir().glob("*.alias.json"))


def test_warm_report_parses_nothing_and_prints_the_same(run_path, counted, monkeypatch):
    cold = report(str(run_path))
    assert len(counted) == 1 and len(aliases()) == 1
    no_parsing(monkeypatch)
    warm = report(str(run_path))
    assert warm.stdout == cold.stdout and len(counted) == 1


def test_the_runs_are_named_as_given_now(run_path, counted, monkeypatch):
    report(str(run_path))
    monkeypatch.chdir(run_path.parent)
    no_parsing(monkeypatch)
    warm = json.loads(report("run").stdout)
    assert [r["path"] for r in warm["runs"]] == ["run"]
    assert len(counted) == 1


def test_a_changed_byte_parses_again(run_path, counted):
    """A byte of run.json that changes nothing the report reads: the alias misses, the runs are parsed,
    and their full key finds the entry (no analysis); a flipped bit of a record: a new report."""
    cold = report(str(run_path))
    meta = run_path / "run.json"
    meta.write_bytes(meta.read_bytes().rstrip() + b"\n\n")
    assert report(str(run_path)).stdout == cold.stdout and len(counted) == 1
    rec = run_path / RECORDS_FILE
    lines = rec.read_bytes().split(b"\n")
    parsed = json.loads(lines[0])
    parsed["bits"] = "".join("1" if b == "0" else "0" for b in parsed["bits"])
    parsed.pop("checksum")
    parsed["checksum"] = store.record_checksum(parsed)
    lines[0] = json.dumps(parsed, separators=(",", ":")).encode()
    rec.write_bytes(b"\n".join(lines))
    changed = report(str(run_path))
    assert changed.stdout != cold.stdout and len(counted) == 2


def test_other_parameters_miss(run_path, counted):
    report(str(run_path))
    from specterm.cli import app

    out = CliRunner().invoke(app, ["report", str(run_path), *ARGS[:-1], "5"])
    assert out.exit_code == 0 and len(counted) == 2


def test_a_load_that_warns_stores_no_alias_and_warns_again(run_path, counted):
    """A record kept from a damaged line is a warning of its load: the report comes from the entry (full
    key) but never from an alias, so the warning is said every time."""
    rec = run_path / RECORDS_FILE
    rec.write_bytes(rec.read_bytes().rstrip(b"\n") + b"xx")  # the last newline damaged: kept, with a warning
    first = report(str(run_path))
    assert "stray byte" in first.stderr and aliases() == []
    second = report(str(run_path))
    assert "stray byte" in second.stderr and second.stdout == first.stdout and len(counted) == 1


def test_no_cache_reads_and_writes_no_alias(run_path, counted):
    report(str(run_path), "--no-cache")
    assert aliases() == [] and len(counted) == 1


# ---------------------------------------------------------------- the content digest ---


def streams_of(*bits: str, **fields) -> list[Stream]:
    return [Stream(id=f"s{i}", corpus="c", bits=np.frombuffer(b.encode(), np.uint8) - 48, **fields)
            for i, b in enumerate(bits)]


def digest(streams: list[Stream]) -> str:
    return cache.run_digest(make_run(streams, name="d"))["content"]


def test_digest_is_a_function_of_every_field_and_where_streams_end():
    base = digest(streams_of("0110", "1"))
    assert digest(streams_of("0110", "1")) == base
    assert digest(streams_of("011", "01")) != base  # the same bits end to end, other boundaries
    assert digest(streams_of("0110", "0")) != base
    assert digest(streams_of("0110", "1", prompt="p")) != base
    mixed = streams_of("0110", "1")
    mixed[1].beta = np.ones(1, np.float32)  # one stream with beta, one without: typed value by value
    assert digest(mixed) != base
    other = streams_of("0110", "1")
    other[1].beta = np.ones(1, np.float64)  # the same values in another dtype
    assert digest(other) != digest(mixed)
    assert digest([]) != base


def test_column_hashes_what_the_value_by_value_form_distinguishes():
    """_column's one-header forms (arrays of one dtype, strings) never collide with each other or with
    the typed value-by-value form on the same values."""
    import hashlib

    def h(values):
        out = hashlib.blake2b(digest_size=20)
        cache._column(out, values)
        return out.hexdigest()

    arrays = [np.array([1, 2], np.int32), np.array([3], np.int32)]
    assert h(arrays) != h([np.array([1], np.int32), np.array([2, 3], np.int32)])
    assert h(["ab", "c"]) != h(["a", "bc"]) != h(["a", "b", "c"])
    assert h(["ab", None]) != h(["ab", ""])
    assert h([None, None]) != h([None]) != h([])
    assert h([None, None]) != h([None, "N"])
    assert h([np.array([1, 2], np.uint8)]) != h([np.array([1, 2], np.int8)])
