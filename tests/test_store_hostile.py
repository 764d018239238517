"""The store against a tester who tries to break it (issue 20's reliability findings 1-12, reserved
names, runs of one pair with different settings). Each test states the finding it guards."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from typer.testing import CliRunner

from specterm.cli import app
from specterm.core.errors import SpectermError
from specterm.core.store.importer import import_jsonl
from specterm.core.streams.position import MAX_BINS, bin_width_for, bins_needed
from specterm.core.store import (
    LOCK_FILE,
    META_FILE,
    PROB_ATOL,
    RECORDS_FILE,
    RunLock,
    RunWriter,
    Stream,
    discover_runs,
    group_runs,
    load_run,
    load_runs,
    merge_runs,
    model_location,
    read_meta,
    record_line,
    repair_run,
    single_pair,
    write_run,
)
from specterm.core.report.text import printable

runner = CliRunner()


@pytest.fixture
def anyio_backend():
    return "asyncio"


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.output + (str(res.exception) if res.exception and not isinstance(res.exception, SystemExit) else "")


def one_sentence(message: str) -> bool:
    return bool(message) and "\n" not in message.strip() and "Traceback" not in message


def _meta(name: str, **extra) -> dict:
    return {**META, "name": name, **extra}


# ------------------------------------------------------------- 1: temp directories are never runs ---


def test_unfinished_merge_and_import_directories_are_never_runs(tmp_path):
    """Finding 1: a killed merge left `.NAME.XXXX.partial/` with run.json and merged_from that hid the
    complete shards; a killed import left `.run.XXXX.partial/` that loaded as a run."""
    streams = fixture_streams()
    s0 = write_run(tmp_path / "r.shard-0-of-2", _meta("r", shard=[0, 2]), streams[:3])
    s1 = write_run(tmp_path / "r.shard-1-of-2", _meta("r", shard=[1, 2]), streams[3:])
    partial = write_run(tmp_path / "tmp-merge", _meta("merged", merged_from=[s0.name, s1.name]), streams)
    partial.rename(tmp_path / ".merged.a1b2c3d4e5f6.partial")
    write_run(tmp_path / "tmp-import", _meta("run"), streams[:2]).rename(tmp_path / ".run.0a1b2c3d4e5f.partial")
    runs, shards = discover_runs(tmp_path)
    assert [p.name for p in runs] == [s0.name, s1.name] and shards == []
    code, out = invoke("list", "--root", tmp_path)
    assert code == 0 and ".partial" not in out and "merged" not in out


def test_write_run_builds_in_a_hidden_directory_that_discovery_skips(tmp_path, monkeypatch):
    """A write killed half way leaves nothing discovery loads (the temp name is hidden)."""
    from specterm.core.store import rewrite

    def killed(tmp, target):
        raise KeyboardInterrupt  # as if the process died before the rename

    monkeypatch.setattr(rewrite, "publish_dir", killed)
    monkeypatch.setattr(rewrite, "discard_dir", lambda tmp: None)  # kill -9 cleans nothing up
    with pytest.raises(KeyboardInterrupt):
        write_run(tmp_path / "imp", _meta("imp"), fixture_streams())
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".imp.") and left[0].endswith(".partial")
    assert discover_runs(tmp_path) == ([], [])


# ------------------------------------------------------------------------------- 2: symlinks ---


def test_a_symlinked_lock_is_refused_and_nothing_outside_the_run_is_written(tmp_path):
    """Finding 2: `repair` wrote its pid into a file outside the run through a symlinked run.lock."""
    run = make_fixture_run(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / LOCK_FILE).symlink_to(victim)
    with pytest.raises(SpectermError, match="symbolic link") as exc:
        RunLock(run).acquire()
    assert one_sentence(str(exc.value))
    with pytest.raises(SpectermError, match="symbolic link"):
        repair_run(run)
    assert victim.read_text() == "precious\n"


def test_run_json_is_replaced_never_written_through_a_symlink(tmp_path):
    """Finding 2: confirm's fixed `run.json.tmp` was opened through a symlink, overwriting a file
    outside the run, and run.json became a symlink. Every writer uses the one atomic helper."""
    from specterm.engines.confirm_record import write_confirmation

    run = make_fixture_run(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run / "run.json.tmp").symlink_to(victim)
    outside = tmp_path / "outside.json"
    outside.write_text((run / META_FILE).read_text())
    (run / META_FILE).unlink()
    (run / META_FILE).symlink_to(outside)
    before = outside.read_text()
    write_confirmation(run, {"complete": True, "prompts": []}, None)
    assert victim.read_text() == "precious\n" and outside.read_text() == before
    assert not (run / META_FILE).is_symlink()
    assert read_meta(run)["confirmations"] == [{"complete": True, "prompts": []}]


def test_appends_never_follow_a_symlinked_records_file(tmp_path):
    run = make_fixture_run(tmp_path)
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes((run / RECORDS_FILE).read_bytes())
    (run / RECORDS_FILE).unlink()
    (run / RECORDS_FILE).symlink_to(victim)
    before = victim.read_bytes()
    with pytest.raises(SpectermError), RunWriter(run, read_meta(run), resume=True) as w:
        w.append(Stream(id="new", corpus="code", bits=np.array([1, 0], np.uint8)))
    assert victim.read_bytes() == before


# ------------------------------------------------------------------- 3: run.json field by field ---


@pytest.mark.parametrize("field,value", [("merged_from", 5), ("name", 5), ("cost", "fast"), ("shard", [3, 2]),
                                         ("generation", {"max_new_tokens": "many"}), ("cost", {"c_decode_s": "fast"}),
                                         ("target", {"spec": 7}), ("checksums", "yes")])
def test_a_bad_run_json_field_skips_that_run_with_a_warning(tmp_path, field, value):
    """Finding 3: `"merged_from": 5` or `"name": 5` crashed `list` and bare `specterm` for every run;
    `"cost": "fast"` crashed `report` and blocked the good run of the same pair."""
    root = tmp_path / "streams"
    good = make_fixture_run(root, "good")
    bad = make_fixture_run(root, "bad")
    meta = json.loads((bad / META_FILE).read_text())
    meta[field] = value
    (bad / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(SpectermError, match=field) as exc:
        read_meta(bad)
    assert one_sentence(str(exc.value))
    code, out = invoke("list", "--root", root)
    assert code == 0 and "good" in out and "skipped" in out
    assert discover_runs(root)[0] == [bad, good]
    code, out = invoke("report", bad, "--boot", "0", "--shuffles", "0")
    assert code != 0 and field in out and "Traceback" not in out
    code, out = invoke("report", good, "--boot", "0", "--shuffles", "0", "--format", "json")
    assert code == 0


# --------------------------------------------------------------------------------- 4: full disk ---


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_is_one_sentence_in_the_writer_and_repair(tmp_path, monkeypatch):
    """Finding 4: a full disk gave raw `OSError: [Errno 28]` tracebacks in `run` and `repair`."""
    run = make_fixture_run(tmp_path)
    before = (run / RECORDS_FILE).read_bytes()
    writer = RunWriter(run, read_meta(run), resume=True)
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(SpectermError, match="disk is full") as exc:
        writer.append(Stream(id="new", corpus="code", bits=np.array([1, 0], np.uint8)))
    assert one_sentence(str(exc.value))
    with pytest.raises(SpectermError, match="disk is full"):
        writer.update_meta(note="x")
    writer.close()
    (run / RECORDS_FILE).write_bytes(before + before.splitlines(keepends=True)[0])  # a duplicate: repair rewrites
    with pytest.raises(SpectermError, match="disk is full") as exc:
        repair_run(run)
    assert one_sentence(str(exc.value))
    monkeypatch.undo()
    assert (run / RECORDS_FILE).read_bytes().startswith(before)  # nothing lost
    assert not [p for p in run.iterdir() if p.name.startswith(".")]  # no temp file left behind


def test_a_full_disk_in_import_is_one_sentence_and_leaves_nothing(tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "corpus": "c", "bits": "0110"}\n')
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(SpectermError, match="disk is full"):
        import_jsonl(src, tmp_path / "streams" / "imp")
    assert [p.name for p in (tmp_path / "streams").iterdir()] == []


# ------------------------------------------------------------------- 5: records against their run ---


def _append_raw(run: Path, stream: Stream) -> None:
    with open(run / RECORDS_FILE, "ab") as fh:
        fh.write(record_line(stream))


def _bounded_run(tmp_path) -> Path:
    """A run of -n 64 over a 20-token vocabulary (the fixture's streams are at most 64 long)."""
    meta = _meta("bounded", target={"spec": "tiny/target", "vocab_size": 20}, generation={"max_new_tokens": 64})
    return write_run(tmp_path / "bounded", meta, fixture_streams())


def test_a_record_longer_than_the_run_generates_is_refused(tmp_path):
    """Finding 5: a record of another run (n = 128) appended to a -n 16 run loaded and changed alpha."""
    run = _bounded_run(tmp_path)
    s = fixture_streams()[0]
    _append_raw(run, Stream(id="alien", corpus="code", bits=np.ones(128, np.uint8)))
    with pytest.raises(SpectermError, match="at most 64") as exc:
        load_run(run)
    assert one_sentence(str(exc.value)) and s.n <= 64


@pytest.mark.parametrize("bad", [10**9, -7, 20])
def test_token_ids_outside_the_vocabulary_are_refused(tmp_path, bad):
    """Finding 5: y = 10^9 and y = -7 loaded."""
    run = _bounded_run(tmp_path)
    s = fixture_streams()[0]
    s.id = "alien"
    s.y = s.y.copy()
    s.y[3] = bad
    s.draft_argmax = np.where(s.bits == 1, s.y, (s.y + 1) % 20).astype(np.int32)
    _append_raw(run, s)
    with pytest.raises(SpectermError, match="vocabulary"):
        load_run(run)


def test_bits_that_disagree_with_the_stored_argmaxes_are_refused(tmp_path):
    """Finding 5: bits were not checked against draft_argmax == y (a_t = 1 iff the draft's argmax at t is y_{t+1})."""
    run = _bounded_run(tmp_path)
    s = fixture_streams()[0]
    s.id = "flipped"
    s.bits = s.bits.copy()
    s.bits[5] ^= 1
    _append_raw(run, s)
    with pytest.raises(SpectermError, match="t = 5"):
        load_run(run)


# ---------------------------------------------------------------------------- 6: damaged tail ---


@pytest.mark.parametrize("byte", [0x0B, 0x2A, 0x8A])
def test_a_whole_last_record_with_a_damaged_newline_is_kept_and_warned(tmp_path, byte):
    """Finding 6: a bit flip in the final newline made the last complete record look torn: dropped
    with no warning and cut by --resume."""
    run = make_fixture_run(tmp_path)
    data = (run / RECORDS_FILE).read_bytes()
    assert data.endswith(b"\n")
    (run / RECORDS_FILE).write_bytes(data[:-1] + bytes([byte]))
    loaded = load_run(run)
    assert [s.id for s in loaded.streams] == [s.id for s in fixture_streams()]
    assert len(loaded.warnings) == 1 and "stray byte" in loaded.warnings[0]
    code, out = invoke("list", "--root", tmp_path)
    assert code == 0 and "stray byte" in out
    with RunWriter(run, read_meta(run), resume=True) as w:
        assert len(w.done) == 6 and w.warnings
    assert (run / RECORDS_FILE).read_bytes() == data  # the newline is back, nothing cut
    (run / RECORDS_FILE).write_bytes(data[:-1] + bytes([byte]))
    result = repair_run(run)
    assert result.kept == 6 and not result.dropped and result.notes
    assert (run / RECORDS_FILE).read_bytes() == data


def test_a_torn_tail_is_still_cut(tmp_path):
    """An interrupted write (a prefix of a record) is still ignored and cut on resume."""
    run = make_fixture_run(tmp_path)
    data = (run / RECORDS_FILE).read_bytes()
    (run / RECORDS_FILE).write_bytes(data + data.splitlines(keepends=True)[0][:40])
    assert len(load_run(run).streams) == 6 and not load_run(run).warnings
    with RunWriter(run, read_meta(run), resume=True):
        pass
    assert (run / RECORDS_FILE).read_bytes() == data


# -------------------------------------------------------------------- 7: imports name their pair ---


def _import(tmp_path, name, *flags):
    src = tmp_path / f"{name}.jsonl"
    src.write_text('{"id": "a", "corpus": "code", "bits": "0110"}\n{"id": "b", "corpus": "code", "bits": "111"}\n')
    code, out = invoke("import", src, "--out", tmp_path / "streams" / name, *flags)
    assert code == 0, out
    return tmp_path / "streams" / name


def test_unnamed_imports_are_never_pooled_with_each_other(tmp_path):
    """Finding 7: two imports from unrelated tools pooled, because every import had the pair (None, None)."""
    a, b = _import(tmp_path, "toolA"), _import(tmp_path, "toolB")
    runs = load_runs([a, b])
    assert len(group_runs(runs)) == 2
    with pytest.raises(SpectermError, match="different model pairs"):
        single_pair(runs)


def test_imports_naming_the_same_pair_pool_and_the_names_are_recorded(tmp_path):
    a = _import(tmp_path, "a", "--target", "qwen-1.5b", "--draft", "qwen-0.5b")
    b = _import(tmp_path, "b", "--target", "qwen-1.5b", "--draft", "qwen-0.5b")
    c = _import(tmp_path, "c", "--target", "qwen-1.5b", "--draft", "other")
    assert read_meta(a)["target"] == {"spec": "qwen-1.5b", "source": "named"}
    assert read_meta(a)["draft"] == {"spec": "qwen-0.5b", "source": "named"}
    runs = load_runs([a, b, c])
    assert [len(g) for g in group_runs(runs)] == [2, 1]
    assert sum(len(r.streams) for r in single_pair(runs[:2])) == 2  # identical records counted once


# --------------------------------------------------------------------------- 8: one long stream ---


def test_one_long_stream_gets_at_most_max_bins_position_bins():
    """Finding 8: one stream of 30M positions made 1.9M position bins (a B x 2K bootstrap: 443 s, 8.3 GB)."""
    from specterm.core.report.analysis import analyse
    from specterm.core.store import Run

    assert bin_width_for(128) == 16 and bin_width_for(16 * MAX_BINS) == 16
    assert bin_width_for(16 * MAX_BINS + 1) == 32
    assert bins_needed(30_000_000, bin_width_for(30_000_000)) <= MAX_BINS
    rng = np.random.default_rng(0)
    run = Run(path=Path("long"), meta={"name": "long"},
              streams=[Stream(id="s", corpus="c", bits=(rng.random(20_000) < 0.7).astype(np.uint8))])
    pos = analyse([run], boot=20, shuffles=2).sets["pooled"].position
    assert len(pos.bins) <= MAX_BINS and pos.bin_width == bin_width_for(20_000)
    assert sum(b.n for b in pos.bins) == 20_000


# --------------------------------------------------------------------------------- 9, 10: confirm ---


def test_confirm_checks_the_lock_before_loading_models(tmp_path):
    """Finding 9: confirm checked the lock only at its first write, after minutes of model loading."""
    from specterm.engines.base import ConfirmConfig
    from specterm.engines.confirm import confirm

    run = make_fixture_run(tmp_path)
    with RunLock(run), pytest.raises(SpectermError, match="another specterm session"):
        confirm(ConfirmConfig(run=run, target="/nonexistent/target.gguf", draft="layers:1"))


def test_a_recorded_model_with_another_checksum_says_checksum_differs(tmp_path):
    """Finding 10: confirm loaded a recorded "path" before any checksum check, and a same-named file
    of another sha256 under $SPECTERM_MODELS gave "not found"."""
    import hashlib

    good = b"the original weights"
    entry = {"spec": "m/model.gguf", "source": "gguf", "sha256": hashlib.sha256(good).hexdigest(), "size": len(good)}
    other = tmp_path / "elsewhere" / "model.gguf"
    other.parent.mkdir()
    other.write_bytes(b"x" * len(good))
    with pytest.raises(SpectermError, match="checksum differs"):
        model_location({**entry, "path": str(other)}, search=[])
    models = tmp_path / "models" / "m"
    models.mkdir(parents=True)
    (models / "model.gguf").write_bytes(b"y" * len(good))
    with pytest.raises(SpectermError, match="checksum differs") as exc:
        model_location(entry, search=[tmp_path / "models"])
    assert one_sentence(str(exc.value))
    (models / "model.gguf").write_bytes(good)
    assert model_location(entry, search=[tmp_path / "models"]) == str(models / "model.gguf")


# --------------------------------------------------------------------------- 11: names and modes ---


def test_list_shows_the_folder_name(tmp_path):
    """Finding 11: `list` showed run.json's name, so copies looked like duplicates."""
    make_fixture_run(tmp_path, "original")
    import shutil

    shutil.copytree(tmp_path / "original", tmp_path / "copy")
    code, out = invoke("list", "--root", tmp_path)
    assert code == 0 and "copy" in out and "original" in out and "tiny-run" not in out


def test_bidi_overrides_are_escaped():
    """Finding 11: U+202E passed unescaped through list, report and the TUI."""
    assert printable("evil\u202eexe.txt") == "evil\\u202eexe.txt"
    assert printable("a\u2066b\u200fc\u061c") == "a\\u2066b\\u200fc\\u061c"
    assert printable("مرحبا") == "مرحبا"  # right-to-left text itself is untouched


def test_list_and_report_escape_a_bidi_corpus_name(tmp_path):
    """A run holding such a name (import refuses one since issue 56: it does not print) is escaped where shown."""
    write_run(tmp_path / "streams" / "imp", _meta("imp"), [Stream(id="a", corpus="code\u202e", bits=np.array([0, 1, 1, 0], np.uint8))])
    code, out = invoke("list", "--root", tmp_path / "streams")
    assert code == 0 and "\u202e" not in out and "\\u202e" in out
    code, out = invoke("report", tmp_path / "streams" / "imp", "--boot", "0", "--shuffles", "0", "--format", "md")
    assert code == 0 and "\u202e" not in out


@pytest.mark.parametrize("command", ["open", "report"])
def test_gamma_zero_is_refused_on_the_command_line(tmp_path, command):
    """Finding 11: `open --gamma 0` was accepted."""
    run = make_fixture_run(tmp_path)
    for bad in ("0", "33"):
        res = runner.invoke(app, [command, str(run), "--gamma", bad])
        assert res.exit_code == 2 and "--gamma" in res.output


def test_written_files_and_folders_have_the_usual_modes(tmp_path):
    """Finding 11: rewritten run.json files became 0600 and import/merge folders 0700."""
    old = os.umask(0o022)
    try:
        streams = fixture_streams()
        imp = write_run(tmp_path / "imp", _meta("imp"), streams)
        s0 = write_run(tmp_path / "s0", _meta("s", shard=[0, 2]), streams[:3])
        s1 = write_run(tmp_path / "s1", _meta("s", shard=[1, 2]), streams[3:])
        merged, _ = merge_runs([s0, s1], tmp_path / "merged")
        with RunWriter(imp, read_meta(imp), resume=True) as w:
            w.update_meta(note="rewritten")
        (imp / RECORDS_FILE).write_bytes((imp / RECORDS_FILE).read_bytes() * 2)
        repair_run(imp)
        for d in (imp, merged):
            assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
            for f in (META_FILE, RECORDS_FILE):
                assert stat.S_IMODE((d / f).stat().st_mode) == 0o644, d / f
    finally:
        os.umask(old)


# --------------------------------------------------------------------- 12: batching noise in shards ---


def _noisy_copy(run: Path, dest: Path, delta: float) -> Path:
    runs = load_run(run)
    streams = []
    for s in runs.streams:
        s.beta = np.clip(s.beta + np.float32(delta), 0, 1).astype(np.float32)
        s.draft_conf = np.clip(s.draft_conf - np.float32(delta), 0, 1).astype(np.float32)
        streams.append(s)
    return write_run(dest, _meta(dest.name), streams)


def test_records_within_float32_batching_noise_are_the_same_measurement(tmp_path):
    """Finding 12: a merged set of shards differed from the unsharded run by up to 3e-6 in the
    probabilities, so `report RUN SHARDS_MERGED` was refused and the TUI showed nothing."""
    run = make_fixture_run(tmp_path, "whole")
    merged = _noisy_copy(run, tmp_path / "merged", 3e-6)
    notes: list[str] = []
    pooled = single_pair(load_runs([run, merged]), note=notes.append)
    assert [len(r.streams) for r in pooled] == [6, 0]
    assert len(notes) == 1 and f"kept the records of {run}" in notes[0] and f"{PROB_ATOL:g}" in notes[0]
    code, out = invoke("report", run, merged, "--boot", "0", "--shuffles", "0", "--format", "json")
    assert code == 0 and "kept the records of" in out
    far = _noisy_copy(run, tmp_path / "far", 10 * PROB_ATOL)
    with pytest.raises(SpectermError, match="different records"):
        single_pair(load_runs([run, far]))


# ------------------------------------------------------------------------------- reserved names ---


def test_a_corpus_named_pooled_is_refused_at_import(tmp_path):
    """Issue 20: a corpus named "pooled" imported, then `report` printed a traceback."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "corpus": "code", "bits": "0110"}\n{"id": "b", "corpus": "pooled", "bits": "11"}\n')
    code, out = invoke("import", src, "--out", tmp_path / "streams" / "imp")
    assert code != 0 and "reserved" in out and f"{src}:2" in out and "Traceback" not in out
    assert not (tmp_path / "streams" / "imp").exists()


def test_a_corpus_named_pooled_is_refused_at_run_and_at_load(tmp_path):
    from specterm.engines.corpora import load_prompts_file

    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "corpus": "pooled", "prompt": "hello"}\n')
    with pytest.raises(SpectermError, match="reserved"):
        load_prompts_file(prompts)
    with pytest.raises(SpectermError, match="reserved"):
        load_prompts_file(tmp_path / "p.jsonl", default_corpus="pooled")
    stored = write_run(tmp_path / "old", _meta("old"), [Stream(id="a", corpus="pooled", bits=np.array([1, 0], np.uint8))])
    with pytest.raises(SpectermError, match="reserved") as exc:
        load_run(stored)
    assert one_sentence(str(exc.value))


@pytest.mark.parametrize("name, says", [("pooled ", "spaces around it"), (" code", "spaces around it"),
                                         ("Pooled", "reserved")])
def test_a_corpus_name_that_would_not_read_as_one_name_is_refused_at_import(tmp_path, name, says):
    """Issue 37: "pooled " (a trailing space) was accepted and showed as a second "pooled" row."""
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "b", "corpus": name, "bits": "11"}) + "\n")
    code, out = invoke("import", src, "--out", tmp_path / "streams" / "imp")
    assert code != 0 and says in out and f"{src}:1" in out and "Traceback" not in out
    assert not (tmp_path / "streams" / "imp").exists()


def test_imported_bits_report_no_gate_rate(tmp_path):
    """Issue 37: imports showed "gate 1.000" though no gate was checked (SPEC 1.3): null, shown n/a."""
    from specterm.core.report.analysis import analyse

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"p{i}", "corpus": "code", "bits": "0110111"}) + "\n" for i in range(3)))
    code, _ = invoke("import", src, "--out", tmp_path / "imp")
    assert code == 0
    rep = analyse([load_run(tmp_path / "imp")], boot=0)
    assert all(s.gate_rate is None for _, s in rep.ordered_sets())
    gated = write_run(tmp_path / "gated", _meta("gated"),
                      [Stream(id="a", corpus="code", bits=np.array([1, 0, 1], np.uint8), gate=np.array([1, 1, 0], np.uint8))])
    assert analyse([load_run(gated)], boot=0).sets["code"].gate_rate == pytest.approx(2 / 3)


# ----------------------------------------------------------- two runs of one pair, other settings ---


def _run_with_n(root: Path, name: str, n: int) -> Path:
    streams = fixture_streams()
    for s in streams:  # the same prompt ids, continuations cut at n: different records
        s.bits, s.gate, s.y, s.draft_argmax = s.bits[:n], s.gate[:n], s.y[:n], s.draft_argmax[:n]
        s.draft_conf, s.target_conf, s.beta = s.draft_conf[:n], s.target_conf[:n], s.beta[:n]
        s.text, s.piece_ends = s.text[: int(s.piece_ends[n - 1])], s.piece_ends[:n]
    return write_run(root / name, _meta(name, generation={"max_new_tokens": n}), streams)


def test_runs_of_one_pair_with_different_n_are_two_groups_not_a_refusal(tmp_path):
    """Issue 20: two honest runs of one pair with different -n made every screen refuse to show anything."""
    live = _run_with_n(tmp_path, "live", 32)
    live2 = _run_with_n(tmp_path, "live2", 16)
    dup = _run_with_n(tmp_path, "live-copy", 32)
    groups = group_runs(load_runs([live, live2, dup]))
    assert [[r.path.name for r in g] for g in groups] == [["live", "live-copy"], ["live2"]]
    assert [sum(len(r.streams) for r in g) for g in groups] == [6, 6]  # true duplicates merged
    with pytest.raises(SpectermError, match="different settings") as exc:
        single_pair(load_runs([live, live2]))
    assert "max_new_tokens 32 vs 16 (-n)" in str(exc.value) and one_sentence(str(exc.value))


@pytest.mark.anyio
async def test_the_tui_shows_runs_of_one_pair_with_different_n_as_two_groups(tmp_path):
    from specterm.app import make_app

    live = _run_with_n(tmp_path, "live", 32)
    live2 = _run_with_n(tmp_path, "live2", 16)
    tui = make_app([live, live2], boot=20, shuffles=2)
    async with tui.run_test(size=(120, 36)) as pilot:
        for _ in range(200):
            await pilot.pause(0.05)
            if tui.report is not None or tui.error is not None:
                break
        assert tui.error is None and tui.report is not None
        assert tui.n_model_groups == 2
        assert sorted(r.name for r in tui.runs) == ["live"]


# ----------------------------------------------------------------- lock survives in a subprocess ---


def test_the_lock_still_refuses_a_second_session(tmp_path):
    run = make_fixture_run(tmp_path)
    code = ("import sys, time; from specterm.core.store import RunLock; "
            f"l = RunLock({str(run)!r}).acquire(); print('held', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SpectermError, match=f"pid {holder.pid}"):
            RunLock(run).acquire()
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------------------- beta in the oracle ---


def test_beta_of_equal_distributions_is_exactly_one_and_never_above():
    """Issue 20: draft = target stored beta up to 1.0000112 (a float32 sum of min(p, q) over 49k
    entries), which the strict loader refused. acceptance_beta sums in float64."""
    import torch

    from specterm.engines.torch.oracle_torch import acceptance_beta

    torch.manual_seed(0)
    logits = torch.randn(64, 49152) * 3
    p32 = torch.softmax(logits, dim=-1)
    assert float(torch.minimum(p32, p32).sum(-1).max()) > 1.0  # the float32 path overshoots
    beta = acceptance_beta(logits, logits).float().numpy()
    assert np.all(beta == 1.0)
    other = logits + torch.randn(64, 49152)
    beta2 = acceptance_beta(logits, other).float().numpy()
    p, q = (np.exp(x.double().numpy() - x.double().numpy().max(-1, keepdims=True)) for x in (logits, other))
    p, q = p / p.sum(-1, keepdims=True), q / q.sum(-1, keepdims=True)
    assert np.all(beta2 <= 1.0) and np.allclose(beta2, np.minimum(p, q).sum(-1), atol=1e-7)
