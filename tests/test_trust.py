"""Issue 38: trust nothing unchecked. The analysis cache proves what it serves, every output file is
written whole and never through a link or over a run, merge refuses a shard still being written,
crossstack refuses mismatched runs, run.json carries a checksum and range-checked costs, a truncated
prompts.jsonl is said, and the nine tracebacks are one sentence each. Each test names its case."""

from __future__ import annotations

import errno
import io
import json
import os
import sys
import time
from pathlib import Path

import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from typer.testing import CliRunner

from specterm.cli import app
from specterm.core.report import analysis, cache
from specterm.core.errors import SpectermError
from specterm.core.store import (
    LOCK_FILE,
    META_FILE,
    RECORDS_FILE,
    RunLock,
    RunWriter,
    Stream,
    load_run,
    merge_runs,
    read_meta,
    repair_run,
    write_run,
)


def sweep_leftovers(folder):
    from specterm.core.store.atomic import sweep_leftovers as sweep

    return sweep(folder)


def check_cost_values(cost, where):
    from specterm.core.store.meta import check_cost_values as check

    check(cost, where)


def meta_checksum(meta):
    from specterm.core.store.meta import meta_checksum as checksum

    return checksum(meta)

runner = CliRunner()
PARAMS = {"gamma": 4, "boot": 20, "shuffles": 2, "seed": 1}
SHIPPED = Path(__file__).resolve().parent.parent / "streams"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SPECTERM_CACHE", raising=False)


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.output + (str(res.exception) if res.exception and not isinstance(res.exception, SystemExit) else "")


def one_sentence(message: str) -> bool:
    return bool(message) and "\n" not in message.strip() and "Traceback" not in message


def main(argv, monkeypatch, capsys) -> tuple[int, str]:
    """The real entry point (launch.main: startup.run, the one place errors become sentences)."""
    from specterm.launch import main as entry

    monkeypatch.setattr(sys, "argv", ["specterm", *[str(a) for a in argv]])
    code = 0
    try:
        entry()
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.err


# -------------------------------------------------------------- 1: the cache proves what it serves ---


def _entry(run_path):
    key = cache.cache_key([load_run(run_path)], PARAMS)
    return cache.entry_path(key), key


def test_an_edited_number_in_a_cache_entry_is_a_miss_said_once(tmp_path):
    """43 of 200 bit flips in an entry were shown as a wrong report; an edited pooled alpha was printed."""
    run_path = make_fixture_run(tmp_path)
    truth = cache.cached_analyse([load_run(run_path)], **PARAMS)
    path, _ = _entry(run_path)
    entry = json.loads(path.read_text())
    entry["report"]["sets"]["pooled"]["alpha"] = 0.9125
    path.write_text(json.dumps(entry, separators=(",", ":")))
    said: list[str] = []
    again = cache.cached_analyse([load_run(run_path)], note=said.append, **PARAMS)
    assert again.sets["pooled"].alpha == truth.sets["pooled"].alpha != 0.9125
    assert len(said) == 1 and "digest" in said[0] and one_sentence(said[0])
    assert json.loads(path.read_text())["report"]["sets"]["pooled"]["alpha"] == truth.sets["pooled"].alpha  # rebuilt


def test_another_runs_report_pasted_into_an_entry_is_a_miss_even_with_a_matching_digest(tmp_path):
    """Another run's report pasted into the entry was printed for a 10-prompt run as 80 prompts."""
    small = write_run(tmp_path / "small", {**META, "name": "small"}, fixture_streams()[:3])
    big = make_fixture_run(tmp_path, "big")
    own = cache.cached_analyse([load_run(small)], **PARAMS)
    other = analysis.analyse([load_run(big)], **PARAMS)
    path, key = _entry(small)
    body = other.to_dict()
    forged = {"key": key, "digest": cache.entry_digest(key, cache._canonical(body)), "report": body}
    path.write_text(json.dumps(forged, separators=(",", ":")))
    said: list[str] = []
    again = cache.cached_analyse([load_run(small)], note=said.append, **PARAMS)
    assert again.sets["pooled"].n_streams == 3 == own.sets["pooled"].n_streams
    assert len(said) == 1 and "run(s) of [6] prompts where the runs hold [3]" in said[0]


def test_a_cache_entry_without_a_digest_is_never_served(tmp_path):
    run_path = make_fixture_run(tmp_path)
    cache.cached_analyse([load_run(run_path)], **PARAMS)
    path, _ = _entry(run_path)
    entry = json.loads(path.read_text())
    del entry["digest"]
    path.write_text(json.dumps(entry))
    assert cache.load(cache.cache_key([load_run(run_path)], PARAMS)) is None and not path.exists()


def test_an_alias_with_an_edited_field_is_a_miss(tmp_path):
    from specterm.core.store import read_run_files

    run_path = make_fixture_run(tmp_path)
    fkey = cache.files_key([read_run_files(run_path)], PARAMS, 0)
    key = cache.cache_key([load_run(run_path)], PARAMS)
    cache.store_alias(fkey, key, 1, 0, [])
    assert cache.load_alias(fkey) is not None
    path = cache.alias_path(fkey)
    entry = json.loads(path.read_text())
    entry["warnings"] = ["a warning that loading never said"]
    path.write_text(json.dumps(entry))
    assert cache.load_alias(fkey) is None


def test_report_paths_never_come_from_the_cache(tmp_path, monkeypatch):
    """`report --format json` took runs[].path from the cache: it depended on an earlier call's cwd."""
    run_path = make_fixture_run(tmp_path / "streams")
    monkeypatch.chdir(tmp_path)
    args = ["--format", "json", "--boot", "20", "--shuffles", "2", "--seed", "1", "-g", "4"]
    code, _ = invoke("report", "streams/tiny-run", *args)
    assert code == 0
    monkeypatch.chdir(tmp_path / "streams")
    res = runner.invoke(app, ["report", "tiny-run", *args])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["runs"][0]["path"] == "tiny-run"
    assert (tmp_path / "streams" / "tiny-run").resolve() == run_path.resolve()


# ------------------------------------------------------------------ 2: one atomic output writer ---


REPORT_FAST = ["--boot", "0", "--shuffles", "0", "--no-cache"]


def test_report_o_refuses_a_runs_own_files_and_its_directory(tmp_path):
    """`report R -o R/prompts.jsonl` overwrote the run's own records (every later load failed)."""
    run = make_fixture_run(tmp_path)
    before = (run / RECORDS_FILE).read_bytes()
    for target in (run / RECORDS_FILE, run / "report.md", run / META_FILE):
        code, out = invoke("report", run, *REPORT_FAST, "-o", target)
        assert code != 0 and "run" in out and "choose another -o path" in out
    assert (run / RECORDS_FILE).read_bytes() == before and not (run / "report.md").exists()
    load_run(run)


def test_report_o_never_writes_through_nor_over_a_dangling_symlink(tmp_path):
    """The export wrote through a dangling symlink to wherever it pointed (`exists()` is False for it);
    since issue 56 a symlink is not replaced either: only a regular file or a new name is written."""
    run = make_fixture_run(tmp_path / "streams")
    link = tmp_path / "out.md"
    elsewhere = tmp_path / "elsewhere.md"
    link.symlink_to(elsewhere)
    code, out = invoke("report", run, *REPORT_FAST, "-o", link)
    assert code != 0 and "symbolic link" in out, out
    assert not elsewhere.exists() and link.is_symlink()


def test_report_o_on_a_full_disk_keeps_the_old_report_whole(tmp_path, monkeypatch):
    """On a full disk the old report was gone and a 16 KB partial one left."""
    run = make_fixture_run(tmp_path / "streams")
    out_file = tmp_path / "report.md"
    out_file.write_text("the old report\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code, out = invoke("report", run, *REPORT_FAST, "-o", out_file)
    monkeypatch.undo()
    assert code != 0 and "disk is full" in out
    assert out_file.read_text() == "the old report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_tui_export_goes_through_the_atomic_writer(tmp_path):
    """The TUI's export used write_text: partial on a full disk and through a dangling symlink."""
    import inspect

    from specterm.app import SpectermApp

    src = inspect.getsource(SpectermApp._ask_and_write)
    assert "write_output(" in src and "write_text(" not in src


# ------------------------------------------------------------------------ 3: merge takes the locks ---


def _shards(tmp_path):
    streams = fixture_streams()
    s0 = write_run(tmp_path / "r.shard-0-of-2", {**META, "name": "r", "shard": [0, 2]}, streams[:3])
    s1 = write_run(tmp_path / "r.shard-1-of-2", {**META, "name": "r", "shard": [1, 2]}, streams[3:])
    return s0, s1


def test_merge_refuses_a_shard_whose_writer_holds_its_lock(tmp_path):
    """merge merged a shard still being written; its later prompts then vanished from list and the TUI."""
    s0, s1 = _shards(tmp_path)
    with RunLock(s1), pytest.raises(SpectermError, match="being written by another specterm session") as exc:
        merge_runs([s0, s1], tmp_path / "merged")
    assert one_sentence(str(exc.value)) and not (tmp_path / "merged").exists()
    merge_runs([s0, s1], tmp_path / "merged")  # released: merged
    assert len(load_run(tmp_path / "merged").streams) == 6


def test_merge_refuses_a_shard_with_a_torn_last_prompt(tmp_path):
    s0, s1 = _shards(tmp_path)
    with open(s1 / RECORDS_FILE, "ab") as fh:
        fh.write(b'{"id": "half-writ')
    with pytest.raises(SpectermError, match="incomplete") as exc:
        merge_runs([s0, s1], tmp_path / "merged")
    assert one_sentence(str(exc.value)) and not (tmp_path / "merged").exists()


# ----------------------------------------------------------------- 4: crossstack refuses mismatches ---


def _engine_run(tmp_path, name, backend=None, target="tiny/target", streams=None):
    meta = {**META, "name": name, "target": {"spec": target}}
    if backend:
        meta["backend"] = {"name": backend}
    return write_run(tmp_path / name, meta, streams if streams is not None else fixture_streams())


@pytest.mark.parametrize("case", ["pair", "engine", "prompts"])
def test_crossstack_refuses_mismatched_runs_in_one_sentence(tmp_path, case):
    """Two model pairs were compared as one; a torch run was labelled llama.cpp; no prompts in common
    gave empty tables with exit 0."""
    a = _engine_run(tmp_path, "a")
    if case == "pair":
        b = _engine_run(tmp_path, "b", "llama.cpp", target="other/target")
    elif case == "engine":
        b = _engine_run(tmp_path, "b")
    else:
        renamed = [Stream(id=f"x{s.id}", corpus=s.corpus, bits=s.bits) for s in fixture_streams()]
        b = _engine_run(tmp_path, "b", "llama.cpp", streams=renamed)
    code, out = invoke("crossstack", a, b)
    words = {"pair": "different target", "engine": "both come from torch", "prompts": "no prompt in common"}[case]
    assert code != 0 and words in out and one_sentence(out.replace("error: ", ""))


def test_crossstack_labels_come_from_each_runs_backend(tmp_path):
    from specterm.core.compare.crossstack import cross_stack

    a = load_run(_engine_run(tmp_path, "a", "llama.cpp"))
    b = load_run(_engine_run(tmp_path, "b"))
    cs = cross_stack(a, b, gammas=(1,))
    assert (cs["engine_a"], cs["engine_b"]) == ("llama.cpp", "torch")


# --------------------------------------------------------- 5: run.json checksum and cost ranges ---


def test_a_flipped_bit_in_run_json_is_refused_and_repair_accepts_a_checked_edit(tmp_path):
    """4 of 60 bit flips in run.json changed the decision silently (a cost sample 1.849 became 1.049)."""
    run = make_fixture_run(tmp_path)
    text = (run / META_FILE).read_text()
    assert json.loads(text)["meta_checksum"] == meta_checksum(json.loads(text))
    (run / META_FILE).write_text(text.replace('"r_measured": 0.15', '"r_measured": 0.75'))
    with pytest.raises(SpectermError, match="does not match its checksum") as exc:
        load_run(run)
    assert "specterm repair" in str(exc.value) and one_sentence(str(exc.value))
    result = repair_run(run)
    assert any("checksum" in n for n in result.notes)
    assert load_run(run).meta["cost"]["r_measured"] == 0.75


def test_shipped_runs_are_sealed_and_an_old_copy_still_loads(tmp_path):
    """The shipped runs are sealed (issue 56: schema 2 with a checksum and a record count); a truly old
    run.json (schema 1, no checksum, written before it existed) is accepted with every field checked and
    one warning; a sealed one stripped of its checksum is refused."""
    import shutil

    for path in sorted(p for p in SHIPPED.iterdir() if (p / META_FILE).is_file()):
        lines = sum(1 for line in (path / "prompts.jsonl").read_bytes().splitlines() if line.strip())
        assert lines >= 80 and len(load_run(path).streams) == lines and read_meta(path)["schema_version"] == 2
        legacy = tmp_path / path.name
        shutil.copytree(path, legacy)
        meta = json.loads((legacy / META_FILE).read_text())
        meta.pop("meta_checksum", None)
        (legacy / META_FILE).write_text(json.dumps(meta))
        with pytest.raises(SpectermError, match="sealed format"):
            read_meta(legacy)
        meta.update(schema_version=1)
        meta.pop("records")
        (legacy / META_FILE).write_text(json.dumps(meta))
        old = load_run(legacy)
        assert "meta_checksum" not in old.meta and len(old.streams) == lines and len(old.warnings) == 1


@pytest.mark.parametrize("field,value", [("c_draft2_s", -1.0), ("c_draft2_s", 0.0), ("context", 0), ("context", 10**30),
                                         ("r_measured", 1e30), ("c_decode_s", 1e30), ("c_decode_s", 1e308),
                                         ("c_verify_s", {"1": 0.5, "4": 5000.0}), ("samples_s", {"decode": [0.4, -0.1]})])
def test_implausible_costs_are_refused_naming_the_field(tmp_path, field, value):
    """c_draft2_s -1 or 0, context 0 or 1e30, r_measured 1e30 were accepted; c_decode_s 1e30 printed
    "speculate with g = 1: 1641188475959142604383828574208.00x", 1e308 a ZeroDivisionError."""
    meta = {**META, "cost": {"r_measured": 0.2, "c_decode_s": 0.5, "c_draft_s": 0.1, "c_verify_s": {"1": 0.6}, field: value}}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / META_FILE).write_text(json.dumps(meta))  # a legacy run.json: the ranges apply all the same
    with pytest.raises(SpectermError, match=f"cost.{field}") as exc:
        read_meta(tmp_path / "r")
    assert one_sentence(str(exc.value))
    code, out = invoke("report", tmp_path / "r", *REPORT_FAST)
    assert code != 0 and "x" not in out.split("cost.")[0][-3:] and "speculate" not in out


def test_check_cost_values_applies_to_any_cost_dict_and_passes_the_shipped_ones():
    for path in sorted(p for p in SHIPPED.iterdir() if (p / META_FILE).is_file()):
        meta = json.loads((path / META_FILE).read_text())
        check_cost_values(meta["cost"], str(path))
    check_cost_values({"c_verify_iqr_s": {"1": 0.0}}, "profile")  # a spread may be 0
    with pytest.raises(SpectermError, match=r"'cost.c_verify_s.4' is 0.0001 s against c_decode_s 3000 s"):
        check_cost_values({"c_decode_s": 3000.0, "c_verify_s": {"1": 2000.0, "4": 1e-4}}, "profile")
    with pytest.raises(SpectermError, match=r"profile x: 'cost.c_draft_s' is 0, outside \(0, 3600\]"):
        check_cost_values({"c_draft_s": 0}, "profile x")


# ------------------------------------------------------------ 6: nine tracebacks, one sentence each ---


class _FullFile(io.FileIO):
    """A file on a full disk: every write fails with ENOSPC (and so does the flush that close makes)."""

    def write(self, b):
        raise OSError(errno.ENOSPC, "No space left on device")


def _full_disk_lock(monkeypatch):
    from specterm.core.store import writer

    real = os.fdopen

    def fdopen(fd, mode="r", *args, encoding=None, **kw):
        if mode == "r+" and encoding == "ascii":  # the lock file's pid
            return io.TextIOWrapper(io.BufferedRandom(_FullFile(fd, "r+")), encoding="ascii")
        return real(fd, mode, *args, encoding=encoding, **kw)

    monkeypatch.setattr(writer.os, "fdopen", fdopen)


def test_a_full_disk_while_taking_the_lock_is_one_sentence_in_repair_and_run(tmp_path, monkeypatch, capsys):
    """OSError from fh.close() inside the except handler (writer.py) was a traceback in repair and run."""
    run = make_fixture_run(tmp_path)
    _full_disk_lock(monkeypatch)
    code, err = main(["repair", run], monkeypatch, capsys)
    assert code == 2 and "disk is full" in err and "Traceback" not in err
    with pytest.raises(SpectermError, match="disk is full"):
        RunWriter(tmp_path / "new-run", {**META, "name": "new"})


def test_a_full_disk_while_appending_says_resume():
    """The full-disk message said "run the command again" where the run needs --resume."""
    from specterm.core.store.atomic import write_failure
    from specterm.core.store.writer import RESUME

    message = str(write_failure("x/prompts.jsonl", OSError(errno.ENOSPC, "full"), "nothing kept", RESUME))
    assert "--resume" in message and "run the command again" not in message


@pytest.mark.parametrize("target", ["/", "missing-dir/out.md", "a-dir"])
def test_crossstack_o_into_a_directory_or_a_missing_one_is_one_sentence(tmp_path, monkeypatch, capsys, target):
    """`crossstack -o /` or into a missing or read-only directory was a traceback."""
    from specterm.core.compare import crossstack

    a = _engine_run(tmp_path, "a")
    b = _engine_run(tmp_path, "b", "llama.cpp")
    monkeypatch.setattr(crossstack, "run_decisions", lambda run, boot=0, seed=0: {})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-dir").mkdir()
    code, err = main(["crossstack", a, b, "-o", target], monkeypatch, capsys)
    assert code == 2 and err.startswith("error: ") and one_sentence(err) and "directory" in err
    assert "pass a file name" in err or "does not exist" in err


LONG = "x" * 300


@pytest.mark.parametrize("argv", [["report", LONG], ["list", "--root", LONG], ["repair", LONG], ["open", LONG],
                                  ["merge", LONG, LONG + "y", "-o", "m"], ["crossstack", LONG, LONG],
                                  ["confirm", LONG], ["import", "in.jsonl", "-o", f"streams/{LONG}"],
                                  ["run", "-t", "t", "-d", "layers:1", "--out", f"streams/{LONG}", "--corpus", "code"]])
def test_a_path_component_over_255_bytes_is_one_sentence(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "streams").mkdir()
    (tmp_path / "in.jsonl").write_text('{"id": "a", "corpus": "c", "bits": "0110"}\n')
    code, err = main(argv, monkeypatch, capsys)
    assert code != 0 and "Traceback" not in err and err.startswith("error: ") and one_sentence(err)
    assert "longer than the file system allows" in err, err


@pytest.mark.parametrize("line,words", [('{"prompt": "p", "id": ' + "9" * 5000 + "}", "cannot be read"),
                                        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
                                        ('{"prompt": "a \\ud800 b"}', "lone surrogate")])
def test_a_hostile_prompts_file_is_one_sentence(tmp_path, line, words):
    """`run --prompts` with a 5,000-digit integer (ValueError), 100k-deep nesting (RecursionError), a
    lone surrogate (TypeError after 10 s)."""
    from specterm.engines.corpora import load_prompts_file

    path = tmp_path / "p.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(SpectermError, match=words) as exc:
        load_prompts_file(path)
    assert one_sentence(str(exc.value))


# ------------------------------------------------------------- 7: a truncated prompts.jsonl is said ---


@pytest.mark.parametrize("damage", ["truncated", "middle line deleted"])
def test_a_shortened_prompts_file_is_reported_and_repair_says_what_it_recovers(tmp_path, damage):
    """15 of 15 truncations and 6 of 6 deleted middle lines loaded fewer prompts without a word."""
    run = make_fixture_run(tmp_path)
    lines = (run / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    kept = lines[:4] if damage == "truncated" else lines[:2] + lines[3:]
    (run / RECORDS_FILE).write_bytes(b"".join(kept))
    with pytest.raises(SpectermError, match=f"holds {len(kept)} records but run.json says 6") as exc:
        load_run(run)
    assert "specterm repair" in str(exc.value) and one_sentence(str(exc.value))
    result = repair_run(run)
    assert any(f"recovered {len(kept)} of the 6" in n for n in result.notes)
    assert len(load_run(run).streams) == len(kept)


def test_the_writer_counts_what_it_wrote(tmp_path):
    writer = RunWriter(tmp_path / "r", {**META, "name": "r"})
    for s in fixture_streams()[:3]:
        writer.append(s)
    writer.close()
    assert read_meta(tmp_path / "r")["records"] == 3
    lines = (tmp_path / "r" / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    (tmp_path / "r" / RECORDS_FILE).write_bytes(b"".join(lines[:2]))
    with pytest.raises(SpectermError, match="holds 2 records"):
        load_run(tmp_path / "r")


# ----------------------------------------------------------------------------- 8: rough edges ---


def test_the_sweep_removes_a_dead_writers_leftovers_and_keeps_a_live_ones(tmp_path, monkeypatch):
    """Killed import/merge left hidden .partial directories nobody removed (62 MB after 25 kills); a
    killed repair left a .tmp inside the run."""
    from specterm.core.store import atomic

    dead_dir = tmp_path / ".run.0123456789ab.partial"
    dead_dir.mkdir()
    (dead_dir / RECORDS_FILE).write_text("x")
    dead_file = tmp_path / ".prompts.jsonl.ba9876543210.tmp"
    dead_file.write_text("half")
    live = atomic.make_temp_dir(tmp_path / "live")
    other = tmp_path / ".hidden-by-a-person"
    other.mkdir()
    monkeypatch.setattr(atomic, "SWEEP_MIN_AGE_S", 0.0)
    removed = sweep_leftovers(tmp_path)
    assert sorted(removed) == sorted([dead_dir.name, dead_file.name])
    assert live.exists() and other.exists() and not dead_dir.exists() and not dead_file.exists()
    atomic.discard_dir(live)


def test_import_prints_one_line_for_what_the_sweep_removed(tmp_path, monkeypatch):
    from specterm.core.store import atomic

    monkeypatch.setattr(atomic, "SWEEP_MIN_AGE_S", 0.0)
    (tmp_path / "streams").mkdir()
    (tmp_path / "streams" / ".old.0123456789ab.partial").mkdir()
    (tmp_path / "in.jsonl").write_text('{"id": "a", "corpus": "c", "bits": "0110"}\n')
    res = runner.invoke(app, ["import", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "streams" / "imp")])
    assert res.exit_code == 0 and "removed 1 leftover(s) of interrupted writes" in res.output
    assert sorted(p.name for p in (tmp_path / "streams").iterdir()) == ["imp"]


def test_a_directory_holding_only_run_lock_does_not_block_run(tmp_path):
    from specterm.core.store import check_new_run_dir

    out = tmp_path / "r"
    out.mkdir()
    (out / LOCK_FILE).write_text("12345\n")
    check_new_run_dir(out, resume=False)
    with pytest.raises(SpectermError, match="no run to resume"):  # issue 56: --resume with no run says so and stops
        check_new_run_dir(out, resume=True)


def test_an_empty_corpus_is_refused():
    """`--corpus ""` meant all corpora."""
    from specterm.runner import load_prompts

    for corpus in ("", "code,,prose"):
        with pytest.raises(SpectermError, match="empty corpus"):
            load_prompts(corpus, None, None, None)


@pytest.mark.parametrize("command", ["import", "merge", "run"])
def test_a_hidden_out_is_refused(tmp_path, monkeypatch, capsys, command):
    """`import --out streams/.hidden` never showed in `list`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text('{"id": "a", "corpus": "c", "bits": "0110"}\n')
    argv = {"import": ["import", "in.jsonl", "-o", "streams/.hidden"],
            "merge": ["merge", "s0", "s1", "-o", "streams/.hidden"],
            "run": ["run", "-t", "t", "-d", "layers:1", "--corpus", "code", "--out", "streams/.hidden"]}[command]
    code, err = main(argv, monkeypatch, capsys)
    assert code == 2 and "hidden name" in err and not (tmp_path / "streams" / ".hidden").exists()


def test_llamacpp_refuses_a_layer_skip_draft_before_anything_loads():
    from specterm.runner import run_command

    with pytest.raises(SpectermError, match="layer-skip self-draft runs only with --backend torch"):
        run_command(target="t.gguf", draft="layers:20", corpus=None, prompts=None, dataset=None, limit=None,
                    max_new_tokens=8, device="auto", dtype="auto", batch_size=4, out=None, resume=False, headless=True,
                    spec_gamma=0, shard=None, cost=True, trust_remote_code=False, backend="llama.cpp")


def test_confirm_refuses_a_read_only_run_before_loading_models(tmp_path, monkeypatch):
    """`confirm` on a read-only run was refused only after loading models and timing costs."""
    from specterm.engines import confirm

    run = make_fixture_run(tmp_path)
    real = os.open

    def read_only(path, flags, *args, **kw):
        if str(path).startswith(str(run)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", read_only)
    monkeypatch.setattr(confirm, "confirm", lambda *a, **k: pytest.fail("models were loaded"))
    with pytest.raises(SpectermError, match="Read-only file system") as exc:
        confirm.confirm_command(run=run, per_corpus=1, gamma=[], corpus=None, device=None, dtype=None,
                                max_new_tokens=None, threads=None, repeats=1)
    assert one_sentence(str(exc.value))


def test_a_corpus_name_with_a_newline_is_refused_in_a_prompts_file(tmp_path):
    """A newline in a corpus name split a row."""
    from specterm.engines.corpora import load_prompts_file

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"prompt": "p", "corpus": "co\nde"}) + "\n")
    with pytest.raises(SpectermError, match="line break"):
        load_prompts_file(path)


def test_sweep_age_guard_keeps_a_just_created_temp_name(tmp_path):
    fresh = tmp_path / ".x.0123456789ab.tmp"
    fresh.write_text("")
    assert sweep_leftovers(tmp_path) == [] and fresh.exists()
    os.utime(fresh, (time.time() - 60, time.time() - 60))
    assert sweep_leftovers(tmp_path) == [fresh.name]



def test_n_beyond_the_targets_context_is_refused_before_any_model_loads(tiny_model_dir, tmp_path, monkeypatch):
    """`-n 100000` beyond the model's context was not refused up front (the tiny model: 1024 positions)."""
    from specterm.engines.torch import models_torch as models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("a model was loaded before the check"))
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--no-cost", "--headless", "--target", str(tiny_model_dir), "--draft", "layers:2",
                              "--corpus", "code", "--limit", "1", "--out", str(out), "-n", "100000"])
    assert isinstance(res.exception, SpectermError), res.output
    assert "beyond the target's context of 1024" in str(res.exception) and one_sentence(str(res.exception))
    assert not out.exists()


def test_repair_and_resume_remove_a_killed_writers_tmp_inside_the_run(tmp_path):
    """A killed repair left a .tmp inside the run that nobody removed."""
    run = make_fixture_run(tmp_path)
    for name in (".prompts.jsonl.0123456789ab.tmp", ".run.json.ba9876543210.tmp"):
        (run / name).write_text("half")
        os.utime(run / name, (time.time() - 60, time.time() - 60))
    result = repair_run(run)
    assert any("removed 2 leftover(s) of interrupted writes" in n for n in result.notes)
    (run / ".run.json.0a0a0a0a0a0a.tmp").write_text("half")
    os.utime(run / ".run.json.0a0a0a0a0a0a.tmp", (time.time() - 60, time.time() - 60))
    with RunWriter(run, read_meta(run), resume=True) as writer:
        assert any("removed 1 leftover(s)" in w for w in writer.warnings)
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
