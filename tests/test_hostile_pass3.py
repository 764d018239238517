"""The third hostile pass (issue 56): sealed runs, typed fields, special files, bounds, imports,
merges, escapes, profile threads, `open` with a corrupt run, the cache's word. Each test names the
finding it guards; every one failed on the code before the fix. No test needs root: FIFOs are made
with os.mkfifo in tmp_path, devices are the world-readable /dev/null, links are symlinks."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from app_fixture import META, fixture_streams, make_fixture_run
from typer.testing import CliRunner

from specterm.cli import app
from specterm.core.errors import SpectermError
from specterm.core.store import (
    META_FILE,
    RECORDS_FILE,
    SCHEMA_VERSION,
    Stream,
    load_run,
    merge_runs,
    read_meta,
    repair_run,
    write_run,
)
from specterm.core.store.meta import META_CHECKSUM_FIELD, RECORDS_FIELD, seal_meta

SHIPPED = Path(__file__).resolve().parent.parent / "streams"
SHIPPED_RUNS = sorted(p for p in SHIPPED.iterdir() if (p / META_FILE).is_file())


def invoke(*args, env=None):
    res = CliRunner().invoke(app, [str(a) for a in args], env=env)
    return res.exit_code, res.output + (str(res.exception) if res.exception and not isinstance(res.exception, SystemExit) else "")


def one_sentence(message: str) -> bool:
    return bool(message) and "\n" not in message.strip() and "Traceback" not in message


def _meta(name: str, **extra) -> dict:
    return {**META, "name": name, **extra}


def _edit_meta(run: Path, change, reseal: bool = True) -> None:
    """Rewrite run.json with `change(meta)` applied; with `reseal`, its checksum is written again (a
    valid checksum: what is refused is the field itself)."""
    meta = json.loads((run / META_FILE).read_text())
    change(meta)
    if reseal:
        meta = seal_meta(meta)
        meta["schema_version"] = json.loads((run / META_FILE).read_text())["schema_version"]
        meta = {**meta, META_CHECKSUM_FIELD: None}
        from specterm.core.store.meta import meta_checksum

        meta[META_CHECKSUM_FIELD] = meta_checksum(meta)
    (run / META_FILE).write_text(json.dumps(meta, indent=2))


def _legacy(run: Path) -> Path:
    """`run` turned into a truly old run: schema 1, no record count, no metadata checksum."""
    meta = json.loads((run / META_FILE).read_text())
    meta["schema_version"] = 1
    meta.pop(RECORDS_FIELD, None)
    meta.pop(META_CHECKSUM_FIELD, None)
    (run / META_FILE).write_text(json.dumps(meta, indent=2))
    return run


def _cut_records(run: Path, keep: int) -> None:
    lines = (run / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    (run / RECORDS_FILE).write_bytes(b"".join(lines[:keep]))


# ---------------------------------------------------------------- 1: old and downgraded runs ---


def test_new_runs_are_written_in_the_sealed_format(tmp_path):
    run = make_fixture_run(tmp_path)
    meta = read_meta(run)
    assert meta["schema_version"] == SCHEMA_VERSION == 2
    assert meta[RECORDS_FIELD] == len(fixture_streams()) and meta["checksums"] is True and meta[META_CHECKSUM_FIELD]
    assert load_run(run).warnings == []


@pytest.mark.parametrize("drop", [[META_CHECKSUM_FIELD], [RECORDS_FIELD], [META_CHECKSUM_FIELD, RECORDS_FIELD],
                                  ["checksums", META_CHECKSUM_FIELD]])
def test_a_sealed_run_stripped_of_its_seals_is_refused_not_loaded_as_old(tmp_path, drop):
    """Finding 1: deleting meta_checksum (with or without records) made a sealed run "old" again, and a
    prompts.jsonl cut from 80 to 70 records then loaded silently."""
    run = make_fixture_run(tmp_path)
    meta = json.loads((run / META_FILE).read_text())
    for key in drop:
        meta.pop(key)
    (run / META_FILE).write_text(json.dumps(meta))
    _cut_records(run, 3)
    with pytest.raises(SpectermError, match="claims the sealed format") as exc:
        load_run(run)
    assert one_sentence(str(exc.value)) and "specterm repair" in str(exc.value)
    code, out = invoke("list", "--root", tmp_path)
    assert code == 0 and "skipped" in out and "sealed format" in out


def test_a_truly_old_run_loads_with_one_warning_naming_what_cannot_be_checked(tmp_path):
    run = _legacy(make_fixture_run(tmp_path))
    loaded = load_run(run)
    assert len(loaded.streams) == len(fixture_streams())
    (warning,) = loaded.warnings
    assert "old run" in warning and "record count" in warning and "meta_checksum" in warning
    assert f"specterm repair {run}" in warning and one_sentence(warning)
    code, out = invoke("report", run, "--boot", "0", "--shuffles", "0")
    assert code == 0 and out.count("old run") == 1
    # repair seals it: no warning after, and a truncation is then refused
    repair_run(run)
    assert read_meta(run)["schema_version"] == 2 and load_run(run).warnings == []
    _cut_records(run, 2)
    with pytest.raises(SpectermError, match="holds 2 records but run.json says"):
        load_run(run)


@pytest.mark.parametrize("shipped", SHIPPED_RUNS, ids=lambda p: p.name)
def test_the_shipped_runs_are_sealed_and_a_cut_is_refused(tmp_path, shipped):
    """Finding 1: the shipped runs had no record count or checksum; dropping 1 or 3 records, cutting the
    last mid-line or deleting line 41 loaded 77-79 of 80 prompts with nothing said."""
    meta = read_meta(shipped)
    lines = (shipped / RECORDS_FILE).read_bytes().splitlines()
    assert meta["schema_version"] == 2 and meta[RECORDS_FIELD] == len(lines) and meta["checksums"] is True
    assert load_run(shipped).warnings == []
    for cut in ("last", "three", "midline", "line41"):
        copy = tmp_path / cut
        shutil.copytree(shipped, copy)
        data = (copy / RECORDS_FILE).read_bytes().splitlines(keepends=True)
        if cut == "last":
            data = data[:-1]
        elif cut == "three":
            data = data[:-3]
        elif cut == "midline":
            data = data[:-1] + [data[-1][: len(data[-1]) // 2]]
        else:
            data = data[:40] + data[41:]
        (copy / RECORDS_FILE).write_bytes(b"".join(data))
        with pytest.raises(SpectermError, match="run.json says") as exc:
            load_run(copy)
        assert one_sentence(str(exc.value)) and "specterm repair" in str(exc.value)


# ------------------------------------------------------------------------ 2: typed fields ---


@pytest.mark.parametrize("field, value, says", [
    ("confirmations", [1, "x"], "confirmations"),
    ("sessions", [42], "sessions"),
    ("hardware", {"cpu": [1]}, "hardware.cpu"),
    ("batch_cost", [], "batch_cost"),
    ("profiles", [{"id": "p1", "cost": {"c_decode_s": 0.1}, "device": {"kind": "cpu", "threads": -3}}], "threads"),
    ("profiles", [{"id": "p1", "cost": {"c_decode_s": 0.1}, "load": {"avg": 0.5, "cpus": ["0"]}}], "load.cpus"),
    ("shard", [0, 10**9], "shard"),
])
def test_a_typed_field_of_the_wrong_type_is_refused_with_a_valid_checksum(tmp_path, field, value, says):
    """Finding 2: these loaded without a word, with a valid checksum too, and `repair` accepted them."""
    run = make_fixture_run(tmp_path)
    _edit_meta(run, lambda m: m.__setitem__(field, value))
    for action in (load_run, repair_run):
        with pytest.raises(SpectermError, match=says) as exc:
            action(run)
        assert one_sentence(str(exc.value))
    with pytest.raises(SpectermError, match=says):  # the same validator when a run is written (import, merge)
        write_run(tmp_path / "again", _meta("again", **{field: value}), fixture_streams())
    assert not (tmp_path / "again").exists()


def test_a_tokenizer_smaller_than_the_stored_ids_is_refused(tmp_path):
    """Finding 2: tokenizer_vocab=5 loaded although ids reach far above it."""
    run = make_fixture_run(tmp_path)
    top = max(int(s.y.max()) for s in fixture_streams() if s.y is not None)
    _edit_meta(run, lambda m: m.__setitem__("tokenizer_vocab", 5))
    assert top >= 5
    with pytest.raises(SpectermError, match="vocab"):
        load_run(run)
    before = (run / RECORDS_FILE).read_bytes()
    with pytest.raises(SpectermError, match="restore run.json") as exc:  # repair drops no record for a wrong run.json
        repair_run(run)
    assert one_sentence(str(exc.value)) and (run / RECORDS_FILE).read_bytes() == before


def test_a_profile_without_a_decode_cost_is_named_when_skipped(tmp_path):
    """Finding 2: a cost profile without c_decode_s was dropped silently ("costs: not measured")."""
    prof = {"id": "pdeadbeef", "engine": {"name": "torch"}, "device": {"kind": "cpu", "name": "AMD EPYC", "threads": 1},
            "cost": {"c_draft_s": 0.01, "c_verify_s": {"1": 0.1}}}
    run = write_run(tmp_path / "r", _meta("r", profiles=[prof]), fixture_streams())
    (warning,) = load_run(run).warnings
    assert "profiles[0]" in warning and "pdeadbeef" in warning and "c_decode_s" in warning and "skipped" in warning
    code, out = invoke("report", run, "--boot", "0", "--shuffles", "0")
    assert code == 0 and "pdeadbeef" in out


# ------------------------------------------------------------------------ 3: special files ---


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


@pytest.mark.parametrize("name", [RECORDS_FILE, META_FILE])
def test_a_fifo_in_a_run_is_refused_at_once(tmp_path, name):
    """Finding 3: prompts.jsonl made a FIFO: `report` blocked for minutes; `list --root` hung."""
    run = make_fixture_run(tmp_path / "streams")
    _fifo(run / name)
    start = time.monotonic()
    with pytest.raises(SpectermError, match="FIFO") as exc:
        load_run(run)
    assert one_sentence(str(exc.value))
    code, out = invoke("list", "--root", tmp_path / "streams")
    assert code == 0 and "skipped" in out and "FIFO" in out
    code, out = invoke("report", run, "--boot", "0")
    assert code != 0 and "FIFO" in out
    assert time.monotonic() - start < 30


def test_a_fifo_in_the_cache_is_a_miss_not_a_hang(tmp_path, own_cache):
    from specterm.core.report import cache

    run = make_fixture_run(tmp_path)
    code, first = invoke("report", run, "--boot", "0", "--shuffles", "0", "--format", "json")
    assert code == 0
    entries = list(cache.cache_dir().glob("*.json"))
    assert entries
    for p in entries:
        _fifo(p)
    code, again = invoke("report", run, "--boot", "0", "--shuffles", "0", "--format", "json")
    assert code == 0 and json.loads(again[again.index("{"):])["sets"] == json.loads(first[first.index("{"):])["sets"]


def _report_to(tmp_path, target):
    run = tmp_path / "in" / "tiny-run"
    if not run.exists():
        make_fixture_run(tmp_path / "in")
    return invoke("report", run, "--boot", "0", "--shuffles", "0", "-o", target)


def test_report_never_replaces_what_is_not_a_regular_file(tmp_path):
    """Finding 3: `report -o` onto a FIFO, a device or a symlink (/dev/stdout is one) replaced it with a file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, out = _report_to(tmp_path, fifo)
    assert code != 0 and "FIFO" in out and one_sentence(out.replace("error: ", ""))
    assert fifo.is_fifo()
    # a device: checked where it stands, never written to (no test writes to a real /dev path: the code
    # before the fix, run as root, replaced /dev/null with the report); reached through a link in tmp
    from specterm.core.store.atomic import check_output_target

    with pytest.raises(SpectermError, match="character device") as exc:
        check_output_target(Path("/dev/null"))
    assert one_sentence(str(exc.value))
    device_link = tmp_path / "null"
    device_link.symlink_to("/dev/null")
    code, out = _report_to(tmp_path, device_link)
    assert code != 0 and "symbolic link" in out and device_link.is_symlink()
    stdout_link = tmp_path / "stdout"
    stdout_link.symlink_to("/proc/self/fd/1")
    regular_link = tmp_path / "link.md"
    (tmp_path / "real.md").write_text("mine\n")
    regular_link.symlink_to(tmp_path / "real.md")
    for link in (stdout_link, regular_link):
        code, out = _report_to(tmp_path, link)
        assert code != 0 and "symbolic link" in out and link.is_symlink()
    assert (tmp_path / "real.md").read_text() == "mine\n"
    # a regular file and a new name are written; `-o -` is stdout
    code, out = _report_to(tmp_path, tmp_path / "real.md")
    assert code == 0 and (tmp_path / "real.md").read_text().startswith("#")
    code, out = _report_to(tmp_path, "-")
    assert code == 0 and "\n# " in "\n" + out and "wrote" not in out and not (Path.cwd() / "-").exists()


# ------------------------------------------------------------------------ 4: bounded options ---


@pytest.mark.parametrize("args", [
    ["--boot", "99999999999999999999"], ["--boot", "2147483648"], ["--shuffles", "100000000000"],
])
def test_report_options_are_bounded(tmp_path, args):
    """Finding 4: --boot 1e20 was a 53-line traceback, --boot 2^31 a numpy memory error, --shuffles 1e11 never answered."""
    run = make_fixture_run(tmp_path)
    start = time.monotonic()
    code, out = invoke("report", run, *args)
    assert code == 2 and "Traceback" not in out and args[0] in out and time.monotonic() - start < 20


@pytest.mark.parametrize("args", [["--max-seconds", "-1"], ["--max-seconds", "nan"], ["--max-seconds", "inf"],
                                  ["--quiet-wait", "-5"], ["--quiet-wait", "nan"], ["--threads", "0"],
                                  ["--threads", "100000"], ["--max-rounds", "1"]])
def test_costs_options_are_bounded_before_any_model_loads(tmp_path, args, monkeypatch):
    """Finding 4: `costs --max-seconds -1|nan|inf` and `--quiet-wait -5|nan` were accepted."""
    import specterm.engines.costs as costs

    monkeypatch.setattr(costs, "costs_command", lambda **kw: pytest.fail("reached the measurement"))
    code, out = invoke("costs", make_fixture_run(tmp_path), *args)
    assert code == 2 and args[0] in out and "Traceback" not in out


def test_the_bounds_are_in_the_help():
    for command, bound in (("report", "100000"), ("costs", "86400"), ("run", "1000000"), ("confirm", "1024")):
        code, out = invoke(command, "--help", env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
        assert code == 0 and bound in out, (command, out[-2000:])


def test_the_bootstrap_memory_is_estimated_before_it_is_allocated():
    from specterm.core.streams.bootstrap import bootstrap_bytes, check_bootstrap_memory

    assert bootstrap_bytes(2000, 80, 6) == 8 * 2000 * (80 + 512 * 6)
    check_bootstrap_memory(2000, 80, 6, 8 << 30)  # 0.1 GiB of 8: fine
    with pytest.raises(SpectermError, match="lower --boot") as exc:
        check_bootstrap_memory(100_000, 10_000_000, 6, 8 << 30)
    assert one_sentence(str(exc.value))


def test_a_target_that_is_a_file_but_no_model_is_named_so(tmp_path):
    """Finding 4: `run --target /etc/passwd` said the path does not exist."""
    from specterm.engines.torch.models_torch import resolve_spec

    plain = tmp_path / "passwd"
    plain.write_text("root:x:0:0\n")
    with pytest.raises(SpectermError, match="not a .gguf model") as exc:
        resolve_spec(str(plain))
    assert "does not exist" not in str(exc.value)


# ------------------------------------------------------------------------------ 5: imports ---


def _import(tmp_path, records, out=None, *extra):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    return invoke("import", src, "--out", out or tmp_path / "streams" / "imp", *extra)


@pytest.mark.parametrize("corpus", ["poo\u200bled", "\uff50\uff4f\uff4f\uff4c\uff45\uff44", "pool\u00adled"[:0] + "poo\u2060led",
                                    "code\u200b", "co\u0007de"])
def test_a_corpus_name_that_does_not_print_or_reads_as_a_reserved_name_is_refused(tmp_path, corpus):
    """Finding 5: "poo\\u200bled" rendered as a second "pooled" row right above the real one."""
    code, out = _import(tmp_path, [{"id": "a", "corpus": corpus, "bits": "0110"}])
    assert code != 0 and "Traceback" not in out and not (tmp_path / "streams" / "imp").exists()
    assert "reserved" in out or "does not print" in out


def test_a_reserved_name_after_normalization_is_refused_at_load_too(tmp_path):
    stored = write_run(tmp_path / "r", _meta("r"), [Stream(id="a", corpus="poo\u200bled", bits=np.array([1, 0], np.uint8))])
    with pytest.raises(SpectermError, match="reserved"):
        load_run(stored)


def test_a_stream_without_positions_is_refused_at_import(tmp_path):
    code, out = _import(tmp_path, [{"id": "a", "corpus": "code", "bits": ""}])
    assert code != 0 and "no positions" in out and "in.jsonl:1" in out


def test_an_import_inside_a_run_is_refused(tmp_path):
    run = make_fixture_run(tmp_path / "streams")
    for out_dir in (run / "nested", run / "a" / "b"):
        code, out = _import(tmp_path, [{"id": "a", "corpus": "code", "bits": "01"}], out_dir)
        assert code != 0 and "inside the run" in out and not out_dir.exists()


def test_an_import_is_labelled_an_import_with_gate_na(tmp_path):
    """Finding 5: an import was listed with gate 1.000 while `report` gave gate_rate null, and the report
    and TUI labelled it engine "torch"."""
    records = [{"id": f"p{i}", "corpus": "code", "bits": "0110111"} for i in range(3)]
    assert _import(tmp_path, records)[0] == 0
    run = tmp_path / "streams" / "imp"
    code, out = invoke("list", "--root", tmp_path / "streams")
    row = next(line for line in out.splitlines() if line.startswith("imp"))
    assert "(import)" in row and row.split()[-1] == "n/a" and "1.000" not in row
    code, out = invoke("report", run, "--boot", "0", "--shuffles", "0", "--format", "json")
    data = json.loads(out[out.index("{"):])
    assert data["runs"][0]["engine"] == "import" and data["sets"]["code"]["gate_rate"] is None
    for fmt in ("md", "text"):
        code, out = invoke("report", run, "--boot", "0", "--shuffles", "0", "--format", fmt)
        assert code == 0 and "(import," in out and "torch" not in out
    from specterm.screens.base import run_engine

    assert run_engine(read_meta(run)) == "import"


# ----------------------------------------------------------------- 6: merges and resumes ---


def _shards(tmp_path):
    streams = fixture_streams()
    s0 = write_run(tmp_path / "r.shard-0-of-2", _meta("r", shard=[0, 2]), streams[:3])
    s1 = write_run(tmp_path / "r.shard-1-of-2", _meta("r", shard=[1, 2]), streams[3:])
    return s0, s1


def test_merge_refuses_an_incomplete_shard_set(tmp_path):
    """Finding 6: `merge` of shard 0/2 alone succeeded ("merged 5 prompts from 1 shard(s)")."""
    s0, s1 = _shards(tmp_path)
    code, out = invoke("merge", s0, "--out", tmp_path / "m")
    assert code != 0 and "1/2" in out and "--allow-partial" in out and not (tmp_path / "m").exists()
    code, out = invoke("merge", s0, "--out", tmp_path / "m", "--allow-partial")
    assert code == 0 and "warning" in out and "1/2" in out and len(load_run(tmp_path / "m").streams) == 3
    path, streams = merge_runs([s0, s1], tmp_path / "whole")
    assert len(streams) == len(fixture_streams())


def test_resume_on_a_folder_without_a_run_says_so_and_stops(tmp_path):
    """Finding 6: `run --resume --out NEW` silently started a fresh full run."""
    from specterm.core.store import check_new_run_dir

    for out in (tmp_path / "new", tmp_path / "empty"):
        if out.name == "empty":
            out.mkdir()
        with pytest.raises(SpectermError, match="no run to resume") as exc:
            check_new_run_dir(out, resume=True)
        assert one_sentence(str(exc.value)) and not (out / META_FILE).exists()


# ------------------------------------------------------------------------ 7: escapes ---


def test_paths_in_wrote_and_merged_lines_are_escaped(tmp_path):
    """Finding 7: ESC/BEL in an -o/--out path reached the terminal raw."""
    code, out = _report_to(tmp_path, tmp_path / "a\x1b[2Jb\x07.md")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b" in out and "\\x07" in out
    s0, s1 = _shards(tmp_path)
    code, out = invoke("merge", s0, s1, "--out", tmp_path / "m\x1b]0;x\x07")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b" in out


# ------------------------------------------------------------------ 8: profiles by threads ---


def _profile(cpu, threads, c_decode=0.5):
    from test_profiles import cost

    c = cost(c_decode, 0.5, 0.05, "2026-12-01T10:00:00+00:00", threads=threads)
    return {"id": f"p{threads}thr", "engine": {"name": "torch"}, "dtype": "float32",
            "device": {"kind": "cpu", "name": cpu, "threads": threads}, "measured_at": c["measured_at"], "cost": c}


def test_this_machines_profile_at_other_threads_is_used_and_says_so(tmp_path, monkeypatch):
    """Finding 8: right after `specterm run` (its profile at 2 threads) `report` said "no cost profile of
    this machine (AMD EPYC, 1 thread)" and never said which threads to ask for."""
    from specterm.core.report.analysis import analyse
    from specterm.core.decide.machine import Machine

    run = write_run(tmp_path / "r", _meta("r", profiles=[_profile("AMD EPYC", 2)]), fixture_streams())
    monkeypatch.setattr("specterm.core.report.analysis.this_machine", lambda: Machine(cpu="AMD EPYC", cores=2, threads=1))
    rep = analyse([load_run(run)], boot=0, shuffles=0)
    d = rep.sets["pooled"].decision_hw
    assert d is not None and d.matches_this_machine is True and "2 threads" in (d.machine or "")
    note = rep.profile_note or ""
    assert "2 threads" in note and f"specterm costs {run} --threads 1" in note and "no cost profile" not in note
    # a profile at this machine's threads is preferred over the newer one at other threads
    both = write_run(tmp_path / "b", _meta("b", profiles=[_profile("AMD EPYC", 1, 0.4), _profile("AMD EPYC", 2)]),
                     fixture_streams())
    rep = analyse([load_run(both)], boot=0, shuffles=0)
    assert rep.sets["pooled"].decision_hw.profile == "p1thr" and rep.profile_note is None


# ------------------------------------------------------------------------ 9: open ---


def test_open_shows_every_run_that_loads_and_names_the_others(tmp_path, monkeypatch):
    """Finding 9: `open CORRUPT GOOD` showed only the corrupt run's sentence. A run whose run.json or files
    do not read is named before the app starts (no numpy: the cold open still paints before it)."""
    from specterm import cli

    good = make_fixture_run(tmp_path, "good")
    bad = make_fixture_run(tmp_path, "bad")
    (bad / META_FILE).write_text((bad / META_FILE).read_text().replace('"records"', '"recs"'))
    opened = {}
    monkeypatch.setattr(cli, "open_tui", lambda paths, **kw: opened.setdefault("paths", paths))
    code, out = invoke("open", bad, good)
    assert code == 0 and opened["paths"] == [good]
    assert "skipped" in out and str(bad) in out
    code, out = invoke("open", bad)  # the one run given does not load: its own sentence
    assert code != 0 and str(bad) in out and "skipped" not in out and one_sentence(out)


def test_the_apps_load_shows_every_run_whose_records_load_and_names_the_others(tmp_path):
    """Finding 9, records: a run whose prompts.jsonl does not load is skipped by the app's own load and
    named (loading.Parsed.skipped, a toast), the good run analysed."""
    from specterm.loading import Loader, Parsed

    good = make_fixture_run(tmp_path, "good")
    bad = make_fixture_run(tmp_path, "bad")
    (bad / RECORDS_FILE).write_bytes(b"{not json}\n" + (bad / RECORDS_FILE).read_bytes())
    events: list = []
    Loader({"gamma": 8, "boot": 0, "shuffles": 0, "seed": 0}, use_cache=False).load([bad, good], 1, 0, events.append,
                                                                                     lambda: False)
    (parsed,) = [e for e in events if isinstance(e, Parsed)]
    assert [r.path for r in parsed.runs] == [good]
    (skipped,) = parsed.skipped
    assert str(bad) in skipped and "not valid JSON" in skipped
    assert any(getattr(e, "report", None) is not None for e in events)
    from specterm.messages import from_load

    assert from_load(parsed).skipped == parsed.skipped


# ------------------------------------------------------------------------ 10: the cache's word ---


def test_the_report_says_when_it_was_served_from_the_cache(tmp_path, own_cache):
    run = make_fixture_run(tmp_path)
    code, cold = invoke("report", run, "--boot", "0", "--shuffles", "0")
    assert code == 0 and "analysis cache" not in cold
    code, warm = invoke("report", run, "--boot", "0", "--shuffles", "0")
    assert code == 0 and "served from the analysis cache" in warm and "--no-cache" in warm
    code, fresh = invoke("report", run, "--boot", "0", "--shuffles", "0", "--no-cache")
    assert code == 0 and "analysis cache" not in fresh
