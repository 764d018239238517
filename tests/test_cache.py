"""The analysis cache (core/report/cache.py): a hit is the same report, a changed run or parameter or code
is a miss, a corrupt or foreign entry is never trusted and is rebuilt, entries are JSON."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest
from conftest import make_run

from specterm.core.report import analysis, cache
from specterm.core.store import (
    CHECKSUM_FIELD,
    RECORDS_FILE,
    Stream,
    load_run,
    new_meta,
    record_checksum,
    write_run,
)


pytestmark = pytest.mark.usefixtures("own_cache")  # every test gets a cache of its own (conftest)
PARAMS = {"gamma": 4, "boot": 60, "shuffles": 3, "seed": 1}


@pytest.fixture
def run_path(tmp_path, synth):
    rng = np.random.default_rng(0)
    streams = synth.streams("code", [synth.markov(rng, 80, 0.8, 0.3) for _ in range(6)])
    streams += synth.streams("prose", [synth.markov(rng, 70, 0.6, 0.4) for _ in range(5)])
    return write_run(tmp_path / "run", new_meta("cache-test"), streams)


def entries():
    return sorted(cache.cache_dir().glob("*.json"))


def test_hit_is_the_same_report_without_analysing(run_path, counted):
    first = cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 1 and len(entries()) == 1
    second = cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 1  # read back, not recomputed
    assert second.to_dict() == first.to_dict()
    assert second.to_dict() == analysis.analyse([load_run(run_path)], **PARAMS).to_dict()
    entry = json.loads(entries()[0].read_text())  # JSON, nothing to unpickle
    assert entry["key"]["params"] == {**PARAMS, "depth_gamma": None}
    assert entry["key"]["runs"][0]["path"] == str(run_path.resolve())


def test_cache_dir_follows_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x" / "specterm" / "reports"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # XDG: a relative value is ignored
    assert cache.cache_dir() == cache.Path.home() / ".cache" / "specterm" / "reports"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == cache.Path.home() / ".cache" / "specterm" / "reports"


def test_one_bit_edited_in_the_run_file_is_a_miss_and_the_numbers_change(run_path, counted):
    before = cache.cached_analyse([load_run(run_path)], **PARAMS)
    records = run_path / RECORDS_FILE
    stat = records.stat()
    lines = records.read_bytes().split(b"\n")
    rec = json.loads(lines[0])
    flipped = "1" if rec["bits"][3] == "0" else "0"
    rec["bits"] = rec["bits"][:3] + flipped + rec["bits"][4:]
    rec[CHECKSUM_FIELD] = record_checksum(rec)
    new_line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode()
    assert len(new_line) == len(lines[0])  # same size: only the content tells
    records.write_bytes(b"\n".join([new_line, *lines[1:]]))
    os.utime(records, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime as well
    after = cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 2  # recomputed
    code_before, code_after = before.sets["code"], after.sets["code"]
    assert code_after.alpha != code_before.alpha
    assert after.to_dict() == analysis.analyse([load_run(run_path)], **PARAMS).to_dict()


@pytest.mark.parametrize("change", [{"seed": 2}, {"boot": 61}, {"shuffles": 4}, {"gamma": 5}, {"depth_gamma": 3}])
def test_every_parameter_is_in_the_key(run_path, counted, change):
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    other = cache.cached_analyse([load_run(run_path)], **{**PARAMS, **change})
    assert len(counted) == 2 and len(entries()) == 2
    assert other.params.to_dict() == analysis.analyse([load_run(run_path)], **{**PARAMS, **change}).params.to_dict()


def test_costs_in_run_json_are_in_the_key(run_path, counted):
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    run = load_run(run_path)
    run.meta["cost"] = {"r_measured": 0.25}
    report = cache.cached_analyse([run], **PARAMS)
    assert len(counted) == 2
    assert report.sets["pooled"].r_measured == pytest.approx(0.25)


def test_other_code_version_is_a_miss(run_path, counted, monkeypatch):
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    monkeypatch.setattr(cache, "code_version", lambda: "9.9.9+upgraded")
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 2


def test_code_version_hashes_the_core_sources():
    version = cache.code_version()
    import specterm

    assert version.startswith(f"{specterm.__version__}+") and f"numpy{np.__version__}" in version


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other key", "not a report", "empty"])
def test_corrupt_entry_is_rebuilt_never_trusted(run_path, counted, damage):
    good = cache.cached_analyse([load_run(run_path)], **PARAMS)
    (path,) = entries()
    text = path.read_text()
    entry = json.loads(text)
    if damage == "garbage":
        path.write_bytes(b"\x80\x04\x95 not json at all")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "other key":  # e.g. a hash collision or a hand-copied file: the full key must match
        entry["key"]["params"]["seed"] = 99
        entry["report"]["sets"]["pooled"]["alpha"] = 0.123
        path.write_text(json.dumps(entry))
    elif damage == "not a report":
        entry["report"]["sets"]["pooled"]["no_such_field"] = 1
        path.write_text(json.dumps(entry))
    else:
        path.write_text("")
    again = cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 2  # recomputed
    assert again.to_dict() == good.to_dict()
    assert json.loads(path.read_text())["key"] == entry["key"] if damage != "other key" else True
    assert cache.load(cache.cache_key([load_run(run_path)], PARAMS)).to_dict() == good.to_dict()  # rebuilt


def test_cache_off_writes_nothing(run_path, counted, monkeypatch):
    monkeypatch.setenv("SPECTERM_CACHE", "0")
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert len(counted) == 2 and entries() == []
    monkeypatch.delenv("SPECTERM_CACHE")
    cache.cached_analyse([load_run(run_path)], use_cache=False, **PARAMS)
    assert entries() == []


def test_unwritable_cache_is_not_an_error(run_path, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder should be
    report = cache.cached_analyse([load_run(run_path)], **PARAMS)
    assert report.sets["pooled"].n_streams == 11


def test_prune_keeps_the_most_recent(run_path, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    folder = cache.cache_dir()
    folder.mkdir(parents=True)
    for i in range(5):
        p = folder / f"{i:040x}.json"
        p.write_text("{}")
        os.utime(p, ns=(i * 10**9, i * 10**9))
    cache._prune(folder, keep=3)
    assert [p.name for p in entries()] == [f"{i:040x}.json" for i in (2, 3, 4)]


def test_report_cli_uses_the_cache(run_path, counted):
    from typer.testing import CliRunner

    from specterm.cli import app

    args = ["report", str(run_path), "--format", "json", "--boot", "60", "--shuffles", "3", "--seed", "1", "-g", "4"]
    first = CliRunner().invoke(app, args)
    second = CliRunner().invoke(app, args)
    assert first.exit_code == 0 and second.exit_code == 0
    assert first.stdout == second.stdout and len(counted) == 1
    assert "served from the analysis cache" in second.stderr and "analysis cache" not in first.stderr
    third = CliRunner().invoke(app, [*args, "--no-cache"])
    assert third.stdout == first.stdout and len(counted) == 2 and "analysis cache" not in third.stderr


def test_files_key_names_the_bytes_the_pair_and_the_parameters(run_path, monkeypatch):
    """An alias's key (cache.files_key) changes with one byte of either file, the pair shown, any
    parameter; a load from those bytes is the load from the directory; no key when numpy's version
    cannot be told without importing it."""
    from specterm.core.store import META_FILE, load_run, read_run_files

    files = read_run_files(run_path)
    assert files.meta == (run_path / META_FILE).read_bytes() and files.records == (run_path / RECORDS_FILE).read_bytes()
    from_bytes, from_dir = load_run(run_path, files), load_run(run_path)
    assert cache.cache_key([from_bytes], PARAMS) == cache.cache_key([from_dir], PARAMS)
    key = cache.files_key([files], PARAMS, 0)
    assert key == cache.files_key([read_run_files(run_path)], PARAMS, 0)
    assert key["files"][0]["path"] == str(run_path.resolve())
    assert cache.files_key([files], PARAMS, 1) != key
    assert cache.files_key([files], {**PARAMS, "seed": 2}, 0) != key
    flipped = bytearray(files.records or b"")
    flipped[10] ^= 1
    assert cache.files_key([type(files)(files.path, files.meta, bytes(flipped))], PARAMS, 0) != key
    assert cache.files_key([type(files)(files.path, files.meta + b" ", files.records)], PARAMS, 0) != key
    assert cache.files_key([type(files)(files.path, files.meta, None)], PARAMS, 0) != key
    with pytest.raises(ValueError):
        cache.files_key([files], {"nope": 1}, 0)
    monkeypatch.setattr(cache, "numpy_stamp", lambda: None)
    assert cache.files_key([files], PARAMS, 0) is None


def test_numpy_stamp_follows_numpy_version_file():
    import hashlib
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("numpy")
    raw = (Path(list(spec.submodule_search_locations)[0]) / "version.py").read_bytes()
    assert np.__version__.encode() in raw  # the file holds the version the stamp stands for
    assert cache.numpy_stamp().endswith(hashlib.blake2b(raw, digest_size=16).hexdigest())


def test_read_run_files_says_what_read_meta_says(tmp_path, run_path):
    from specterm.core.errors import SpectermError
    from specterm.core.store import read_meta, read_run_files

    for bad in (tmp_path / "missing", tmp_path):
        with pytest.raises(SpectermError) as by_files:
            read_run_files(bad)
        with pytest.raises(SpectermError) as by_meta:
            read_meta(bad)
        assert str(by_files.value) == str(by_meta.value)
    (run_path / RECORDS_FILE).unlink()
    assert read_run_files(run_path).records is None
    # the run had 11 records (run.json's count, issue 38): a missing file is their loss, said, not an empty run
    with pytest.raises(SpectermError, match="holds 0 records but run.json says 11 were written"):
        load_run(run_path)


def test_a_runs_digest_feeds_the_hash_in_large_chunks_with_the_same_digest(monkeypatch):
    """run_digest hands blake2b about 1 MiB at a time (one release of the GIL each; blake2b releases
    it for every piece over 2 KiB, and each hand-over back waited while the UI thread painted: 10M
    positions, 6.6 s beside the first full paint); the digest is that of feeding every piece in turn."""
    rng = np.random.default_rng(3)
    streams = [Stream(id=f"s{i}", corpus="code", bits=(rng.random(700) < 0.7).astype(np.uint8),
                      draft_conf=rng.random(700, dtype=np.float32), beta=rng.random(700, dtype=np.float32))
               for i in range(400)]  # draft_conf and beta: 2800 bytes each, over blake2b's 2 KiB
    run = make_run(streams, name="chunks")
    pieces: list[int] = []

    class Direct(cache._Chunked):  # the reference: every piece straight into the hash
        def update(self, data):
            pieces.append(len(data))
            self.h.update(data)

        def hexdigest(self):
            return str(self.h.hexdigest())

    fed: list[int] = []

    class Counting:
        def __init__(self, **kw):
            self.h = hashlib.blake2b(**kw)

        def update(self, data):
            fed.append(len(data))
            self.h.update(data)

        def hexdigest(self):
            return self.h.hexdigest()

    with monkeypatch.context() as m:
        m.setattr(cache, "blake2b", Counting)
        chunked = cache.run_digest(run)
    with monkeypatch.context() as m:
        m.setattr(cache, "_Chunked", Direct)
        direct = cache.run_digest(run)
    assert chunked == direct
    assert sum(fed) == sum(pieces) > 2 * 2**20
    assert sum(p > 2048 for p in pieces) >= 400  # the reference hands the GIL over hundreds of times
    assert len(fed) <= sum(pieces) // 2**20 + 1  # chunked: once a MiB


def test_report_cli_says_its_stages_on_a_terminal(run_path, counted, monkeypatch):
    """`specterm report` names what it waits for (a status line on a terminal's stderr): parsing the
    runs (their bytes on disk), then computing the report (positions, prompts), which a cached
    report skips; the report on stdout is the same."""
    import contextlib

    from typer.testing import CliRunner

    from specterm import startup
    from specterm.cli import app

    said: list[str] = []

    @contextlib.contextmanager
    def recorded():
        yield said.append

    monkeypatch.setattr(startup, "stderr_status", recorded)
    size = sum(f.stat().st_size for f in run_path.iterdir())
    streams = load_run(run_path).streams
    parsing = f"Parsing the runs (1 run, {size / 1e6:,.1f} MB) ..."
    computing = f"Computing the report of {sum(s.bits.size for s in streams):,} positions in {len(streams)} prompts ..."
    args = ["report", str(run_path), "--format", "json", "--boot", "60", "--shuffles", "3", "--seed", "1", "-g", "4"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0 and said == [parsing, computing]
    said.clear()
    second = CliRunner().invoke(app, args)
    assert second.stdout == first.stdout and said == [parsing] and len(counted) == 1


def test_the_status_line_is_for_terminals_only(monkeypatch):
    import io

    from specterm import startup

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, shown in ((io.StringIO(), False), (Terminal(), True)):
        monkeypatch.setattr("sys.stderr", stream)
        with startup.stderr_status() as say:
            say("Parsing the runs (1 run, 0.1 MB) ...")
        assert ("Parsing the runs (1 run, 0.1 MB) ..." in stream.getvalue()) is shown
