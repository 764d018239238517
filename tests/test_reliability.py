"""Issue 13, item by item: nothing counted twice, bad arguments refused before any model loads,
guarded resume, no traceback on odd input, no corruption loaded silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specterm import cli
from specterm.core.errors import SpectermError
from specterm.core.store.importer import import_jsonl
from specterm.core.store import group_runs, pool_runs, single_pair
from specterm.core.store.records import canonical_json
from specterm.core.store import (
    BOM,
    CHECKSUM_FIELD,
    META_FILE,
    RECORDS_FILE,
    RunWriter,
    Stream,
    discover_runs,
    find_runs,
    load_run,
    merge_runs,
    model_location,
    new_meta,
    public_model,
    record_checksum,
    repair_run,
    write_run,
)
from specterm.core.report.text import printable

PAIR = {"target": {"spec": "org/target", "source": "hub"}, "draft": {"spec": "layers:2", "source": "layers"}}
OTHER = {"target": {"spec": "org/other", "source": "hub"}, "draft": {"spec": "layers:2", "source": "layers"}}


def stream(i: int, corpus: str = "code", n: int = 12, seed: int = 0) -> Stream:
    rng = np.random.default_rng(seed * 1000 + i)
    return Stream(id=f"p{i}", corpus=corpus, bits=(rng.random(n) < 0.7).astype(np.uint8), gate=np.ones(n, np.uint8),
                  y=rng.integers(0, 500, n).astype(np.int32), draft_conf=rng.random(n).astype(np.float32),
                  beta=rng.random(n).astype(np.float32), stop="length")


def make_run(path: Path, streams: list[Stream], models: dict = PAIR, **meta) -> Path:
    return write_run(path, new_meta(path.name, **models, **meta), streams)


def signed_line(rec: dict) -> str:
    return json.dumps({**rec, CHECKSUM_FIELD: record_checksum(rec)})


def report_json(args: list[str]) -> dict:
    res = CliRunner().invoke(cli.app, ["report", *args, "--format", "json", "--boot", "0", "--shuffles", "1"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # stderr may carry a note (e.g. served from the analysis cache)


@pytest.fixture
def no_model_loads(monkeypatch):
    """Loading any model weights fails the test: the checks must come first."""
    from specterm.engines.torch import models_torch as models

    def refuse(*a, **k):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(models, "load_model", refuse)


# --------------------------------------------------------------- 1. silent double counting ---

def test_shards_of_a_merged_run_are_not_discovered_again(tmp_path, monkeypatch):
    root = tmp_path / "streams"
    shards = [make_run(root / f"r.shard-{i}-of-2", [stream(j) for j in range(i, 6, 2)], shard=[i, 2]) for i in range(2)]
    merge_runs(shards, root / "r")
    runs, skipped = discover_runs(root)
    assert [p.name for p in runs] == ["r"] and [p.name for p in skipped] == [s.name for s in shards]
    assert find_runs(root) == runs
    out = CliRunner().invoke(cli.app, ["list", "--root", str(root)]).output
    rows = [line.split() for line in out.splitlines() if line.startswith("r ")]
    assert len(rows) == 1 and rows[0][2] == "6" and rows[0][3] == "72"  # 6 prompts x 12 positions, once
    assert "not counted again: 2 shard run(s)" in out
    monkeypatch.chdir(tmp_path)
    opened = {}
    monkeypatch.setattr(cli, "open_tui", lambda paths, **kw: opened.setdefault("paths", paths))
    assert CliRunner().invoke(cli.app, []).exit_code == 0
    assert [p.name for p in opened["paths"]] == ["r"]


def test_report_of_a_run_with_itself_counts_it_once(tmp_path):
    a = make_run(tmp_path / "a", [stream(i) for i in range(4)] + [stream(i, "prose") for i in range(3)])
    once, twice = report_json([str(a)]), report_json([str(a), str(a)])
    for name in ("code", "prose", "pooled"):
        assert twice["sets"][name]["n_streams"] == once["sets"][name]["n_streams"]
        assert twice["sets"][name]["n_positions"] == once["sets"][name]["n_positions"]
    assert once["sets"]["pooled"]["n_streams"] == 7


def test_identical_copy_counts_once_and_a_conflicting_copy_is_refused(tmp_path):
    a = load_run(make_run(tmp_path / "a", [stream(i) for i in range(3)]))
    copy = load_run(make_run(tmp_path / "copy", [stream(i) for i in range(1, 5)]))  # p1, p2 identical to a's
    pooled = pool_runs([a, copy])
    assert [s.id for r in pooled for s in r.streams] == ["p0", "p1", "p2", "p3", "p4"]
    assert [sum(len(r.streams) for r in g) for g in group_runs([a, copy])] == [5]  # what the TUI analyses
    clash = load_run(make_run(tmp_path / "clash", [stream(1, seed=9)]))
    with pytest.raises(SpectermError, match="is in both .*a and .*clash with different records"):
        pool_runs([a, clash])


def test_report_refuses_runs_of_two_model_pairs_naming_them(tmp_path):
    a = make_run(tmp_path / "a", [stream(0)])
    b = make_run(tmp_path / "b", [stream(0)], models=OTHER)
    res = CliRunner().invoke(cli.app, ["report", str(a), str(b), "--boot", "0"])
    assert isinstance(res.exception, SpectermError)
    msg = str(res.exception)
    assert f"{a} (target org/target" in msg and f"{b} (target org/other" in msg and "never pooled" in msg
    with pytest.raises(SpectermError):
        single_pair([load_run(a), load_run(b)])


# ------------------------------------------------------ 2. arguments checked before loading ---

def _run(args: list[str]):
    return CliRunner().invoke(cli.app, ["run", "--no-cost", "--headless", *args])


@pytest.mark.parametrize("extra,message", [
    (["--batch-size", "0"], "--batch-size"),
    (["-n", "0"], "--max-new-tokens"),
    (["-n", "-3"], "--max-new-tokens"),
    (["--limit", "0"], "--limit"),
    (["--spec-gamma", "-1"], "--spec-gamma"),
])
def test_out_of_range_numbers_are_refused_by_the_parser(tiny_model_dir, tmp_path, no_model_loads, extra, message):
    out = tmp_path / "run"
    res = _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--out", str(out), *extra])
    assert res.exit_code == 2 and message in res.output
    assert not out.exists()


def test_empty_prompt_is_named_before_loading(tiny_model_dir, tmp_path, no_model_loads):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "fine", "prompt": "def f(x):"}\n{"id": "blank", "prompt": ""}\n')
    out = tmp_path / "run"
    res = _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--prompts", str(prompts), "--out", str(out)])
    assert isinstance(res.exception, SpectermError), res.output
    assert "prompt 'blank' (p) encodes to zero tokens" in str(res.exception)
    assert not out.exists()


def test_layer_count_checked_against_the_config_before_loading(tiny_model_dir, tmp_path, no_model_loads):
    out = tmp_path / "run"
    res = _run(["--target", str(tiny_model_dir), "--draft", "layers:999", "--corpus", "code", "--out", str(out)])
    assert isinstance(res.exception, SpectermError)
    assert "layers:999 must keep between 1 and 3 of the target's 4 layers" in str(res.exception)
    assert not out.exists()


def test_report_seed_must_not_be_negative(tmp_path):
    a = make_run(tmp_path / "a", [stream(0)])
    res = CliRunner().invoke(cli.app, ["report", str(a), "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.output  # a usage error, not a traceback from numpy


# ------------------------------------------------------------------- 3. a guarded --resume ---

def test_second_writer_is_refused_naming_the_holder(tmp_path):
    path = make_run(tmp_path / "r", [stream(0)])
    meta = load_run(path).meta
    with RunWriter(path, meta, resume=True) as first:
        with pytest.raises(SpectermError, match=f"another specterm session \\(pid {os.getpid()}\\)"):
            RunWriter(path, meta, resume=True)
        first.append(stream(1))
    with RunWriter(path, meta, resume=True) as again:  # released on close
        assert again.done == {("code", "p0"), ("code", "p1")}


def test_resume_while_another_process_writes_is_refused_before_loading(tiny_model_dir, tmp_path, no_model_loads):
    path = make_run(tmp_path / "r", [stream(0)])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from specterm.core.store import RunLock; "
         f"held = RunLock({str(path)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    try:
        assert holder.stdout.readline().strip() == "held"
        res = _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--out", str(path), "--resume"])
        assert isinstance(res.exception, SpectermError)
        assert f"another specterm session (pid {holder.pid})" in str(res.exception)
    finally:
        holder.kill()
        holder.wait()
    assert len(load_run(path).streams) == 1


def test_resume_refuses_changed_generation_settings(tiny_model_dir, tmp_path, request):
    out = tmp_path / "run"
    base = ["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--limit", "1", "--out", str(out)]
    res = _run([*base, "-n", "4"])
    assert res.exit_code == 0, res.output
    request.getfixturevalue("no_model_loads")
    for extra, said in ((["-n", "8"], "max_new_tokens 4 (-n), not 8"),
                        (["-n", "4", "--spec-gamma", "3"], "y_method batched greedy (--spec-gamma)"),
                        (["-n", "4", "--dtype", "bfloat16"], "dtype float32 (--dtype), not bfloat16")):
        res = _run([*base, "--resume", *extra])
        assert isinstance(res.exception, SpectermError), res.output
        assert said in str(res.exception)
    assert len(load_run(out).streams) == 1


def test_resume_of_a_corrupt_run_is_refused_before_loading(tiny_model_dir, tmp_path, request):
    out = tmp_path / "run"
    assert _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--limit", "1", "-n", "3",
                 "--out", str(out)]).exit_code == 0
    request.getfixturevalue("no_model_loads")
    line = (out / RECORDS_FILE).read_bytes()
    (out / RECORDS_FILE).write_bytes(line + line)  # what two unguarded sessions used to leave
    res = _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "-n", "3", "--out", str(out), "--resume"])
    assert isinstance(res.exception, SpectermError) and "specterm repair" in str(res.exception)


def test_repair_drops_duplicate_and_torn_lines_and_reports_them(tmp_path):
    path = make_run(tmp_path / "r", [stream(i) for i in range(3)])
    lines = (path / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    (path / RECORDS_FILE).write_bytes(b"".join(lines) + lines[1] + lines[2][:40])  # two sessions, then a kill
    with pytest.raises(SpectermError, match=r"prompts.jsonl:4: prompt 'p1' \(code\) appears twice .*specterm repair"):
        load_run(path)
    res = CliRunner().invoke(cli.app, ["repair", str(path)])
    assert res.exit_code == 0, res.output
    assert "dropped line 4: a copy of prompt 'p1' (code) kept from line 2" in res.output
    assert "dropped line 5: torn (an interrupted write)" in res.output
    assert "3 record(s) kept, 2 line(s) dropped" in res.output
    assert [s.id for s in load_run(path).streams] == ["p0", "p1", "p2"]
    assert sorted(p.name for p in path.iterdir()) == sorted([META_FILE, RECORDS_FILE, "run.lock"])


# -------------------------------------------------------------------------- 4. odd inputs ---

def test_out_under_a_read_only_directory_is_one_sentence(tiny_model_dir, tmp_path, no_model_loads):
    if os.geteuid() == 0:
        if not Path("/sys").is_dir():
            pytest.skip("needs a read-only directory")
        out = Path("/sys/specterm-test/run")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        out = ro / "run"
    res = _run(["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--out", str(out)])
    assert isinstance(res.exception, SpectermError) and "choose another --out" in str(res.exception)
    assert not out.exists()


def test_lone_surrogate_in_imported_tokens_is_refused_and_leaves_nothing(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "corpus": "c", "bits": "01", "tokens": ["x", "\\ud800"]}\n')
    with pytest.raises(SpectermError, match=r"in.jsonl:1: 'tokens' holds a lone surrogate"):
        import_jsonl(src, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize("line,message", [
    ('{"id": "b", "corpus": "c", "bits": "01", "n": ' + "9" * 5000 + "}", "cannot be read (ValueError"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    (signed_line({"id": "\udc00", "corpus": "c", "bits": "01"}), "'id' holds a lone surrogate"),
])
def test_hostile_lines_are_one_sentence_and_hide_no_other_run(tmp_path, monkeypatch, line, message):
    root = tmp_path / "streams"
    good = make_run(root / "good", [stream(0)])
    bad = make_run(root / "bad", [stream(0)])
    with open(bad / RECORDS_FILE, "a") as fh:
        fh.write(line + "\n")
    with pytest.raises(SpectermError) as err:
        load_run(bad)
    assert str(err.value).startswith(f"{bad / RECORDS_FILE}:2: ") and message in str(err.value)
    res = CliRunner().invoke(cli.app, ["list", "--root", str(root)])
    assert res.exit_code == 0 and "good" in res.output and "warning: skipped" in res.output
    monkeypatch.chdir(tmp_path)
    opened = {}
    monkeypatch.setattr(cli, "open_tui", lambda paths, **kw: opened.setdefault("paths", paths))
    res = CliRunner().invoke(cli.app, [])
    assert res.exit_code == 0 and [p.name for p in opened["paths"]] == [good.name]


def test_control_characters_are_escaped_in_list_and_report(tmp_path):
    evil = "\x1b[2J\x1b[31mred\x07"
    root = tmp_path / "streams"
    run = make_run(root / "r", [stream(0, corpus=evil), stream(1, corpus=evil)])
    outputs = [CliRunner().invoke(cli.app, ["list", "--root", str(root)]).output]
    for fmt in ("text", "md"):
        res = CliRunner().invoke(cli.app, ["report", str(run), "--format", fmt, "--boot", "0", "--shuffles", "1"])
        assert res.exit_code == 0, res.output
        outputs.append(res.output)
    for out in outputs:
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b[2J\\x1b[31mred\\x07" in out
    assert printable("a\tb\x9bc\ud800", keep="\t") == "a\tb\\x9bc\\ud800"


# ---------------------------------------------------------------------------- 5. corruption ---

def test_a_byte_flipped_to_another_base64_character_is_refused(tmp_path):
    path = make_run(tmp_path / "r", [stream(0), stream(1)])
    data = (path / RECORDS_FILE).read_bytes()
    at = data.index(b'"draft_conf":"') + len(b'"draft_conf":"') + 3
    flipped = data[:at] + (b"B" if data[at:at + 1] != b"B" else b"C") + data[at + 1:]
    (path / RECORDS_FILE).write_bytes(flipped)
    with pytest.raises(SpectermError, match=r"prompts.jsonl:1: the record does not match its checksum"):
        load_run(path)


def canonical_reference(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


# strings that hit the direct path (base64 and bit strings) beside every character JSON escapes:
# quote, backslash, control characters, DEL, non-ASCII and lone surrogates
_EDGY = st.text(alphabet=st.sampled_from(list('01AZaz+/= ~"\\\x00\x1f\x7f\x80é\u2028\ud800')), max_size=12)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), _EDGY,
                    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None), max_size=6))


_KEY = st.one_of(_EDGY, st.sampled_from(["bits", "draft_conf", "n", "id"]))


@settings(max_examples=500, deadline=None)
@given(st.one_of(
    # a record's kinds of values only (the direct path, unless a string needs escaping)
    st.dictionaries(_KEY, st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), _EDGY), max_size=6),
    st.dictionaries(_KEY, st.one_of(_SCALAR, st.lists(_SCALAR, max_size=3), st.dictionaries(_EDGY, _SCALAR, max_size=2)),
                    max_size=8)))
def test_canonical_json_is_json_dumps_with_sorted_keys_and_ascii_escapes(obj):
    """The checksum's canonical form (built directly for plain records) is json.dumps's, byte for byte."""
    assert canonical_json(obj) == canonical_reference(obj)


def test_canonical_json_of_stored_records_and_of_keys_json_cannot_sort():
    rec = stream(0).to_record()
    assert canonical_json(rec) == canonical_reference(rec)
    with pytest.raises(TypeError):  # json.dumps cannot sort str and int keys together: neither can it
        canonical_json({"a": 1, 2: 3})
    assert canonical_json({1: "x", 0: None}) == canonical_reference({1: "x", 0: None})


@pytest.mark.parametrize("value", [np.nan, np.inf, -0.25, 1.5])
@pytest.mark.parametrize("field", ["draft_conf", "target_conf", "beta"])
def test_probabilities_must_be_finite_and_in_unit_interval(tmp_path, field, value):
    s = stream(0)
    arr = np.full(s.n, 0.5, np.float32)
    arr[3] = value
    setattr(s, field, arr)
    path = make_run(tmp_path / "r", [s])  # a correctly checksummed record: only the range check can refuse it
    with pytest.raises(SpectermError, match=f"prompts.jsonl:1: '{field}' holds values that are not probabilities"):
        load_run(path)


def test_a_record_without_checksum_is_refused_in_a_checksummed_run(tmp_path):
    path = make_run(tmp_path / "r", [stream(0)])
    with open(path / RECORDS_FILE, "a") as fh:
        fh.write(json.dumps({"id": "x", "corpus": "code", "bits": "01"}) + "\n")
    with pytest.raises(SpectermError, match="prompts.jsonl:2: the record has no checksum"):
        load_run(path)


def test_runs_written_before_checksums_still_load(tmp_path):
    path = tmp_path / "old"
    path.mkdir()
    (path / META_FILE).write_text(json.dumps({"format": "specterm-run", "schema_version": 1, "name": "old"}))
    (path / RECORDS_FILE).write_text(json.dumps({"id": "a", "corpus": "c", "bits": "0110"}) + "\n")
    assert [s.bits.tolist() for s in load_run(path).streams] == [[0, 1, 1, 0]]
    result = repair_run(path)  # adds the checksums and marks the run
    assert result.checksummed == 1 and not result.dropped
    assert load_run(path).meta["checksums"] is True and [s.id for s in load_run(path).streams] == ["a"]


def test_a_final_record_missing_only_its_newline_is_kept_on_load_and_resume(tmp_path):
    path = make_run(tmp_path / "r", [stream(0), stream(1)])
    data = (path / RECORDS_FILE).read_bytes()
    (path / RECORDS_FILE).write_bytes(data[:-1])
    assert [s.id for s in load_run(path).streams] == ["p0", "p1"]
    with RunWriter(path, load_run(path).meta, resume=True) as writer:
        assert writer.done == {("code", "p0"), ("code", "p1")}
        writer.append(stream(2))
    assert [s.id for s in load_run(path).streams] == ["p0", "p1", "p2"]


def test_import_and_merge_never_delete_an_unrelated_partial_directory(tmp_path):
    for out in (tmp_path / "imported", tmp_path / "merged"):
        keep = out.with_name(out.name + ".partial")
        keep.mkdir()
        (keep / "precious.txt").write_text("mine")
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "corpus": "c", "bits": "01"}\n')
    import_jsonl(src, tmp_path / "imported")
    shard = make_run(tmp_path / "s", [stream(0)], shard=[0, 1])
    merge_runs([shard], tmp_path / "merged")
    for name in ("imported", "merged"):
        assert (tmp_path / f"{name}.partial" / "precious.txt").read_text() == "mine"
        assert load_run(tmp_path / name).streams
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_utf8_bom_is_read(tmp_path):
    path = make_run(tmp_path / "r", [stream(0)])
    for name in (META_FILE, RECORDS_FILE):
        (path / name).write_bytes(BOM + (path / name).read_bytes())
    assert [s.id for s in load_run(path).streams] == ["p0"]
    src = tmp_path / "in.jsonl"
    src.write_bytes(BOM + b'{"id": "a", "corpus": "c", "bits": "01"}\n')
    _, streams = import_jsonl(src, tmp_path / "imported")
    assert [s.id for s in streams] == ["a"]


def test_shipped_runs_carry_checksums_and_no_local_paths():
    root = Path(__file__).parents[1] / "streams"
    for path in find_runs(root):
        run = load_run(path)
        assert run.meta["checksums"] is True and run.streams
        for key in ("target", "draft"):
            model = run.meta[key]
            assert "path" not in model and not str(model["spec"]).startswith("/")


# ------------------------------------------------------------ privacy: models and locations ---

def test_public_model_names_a_file_by_name_size_and_sha256(tmp_path):
    f = tmp_path / "models" / "tiny-gguf" / "model.gguf"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"GGUF" + bytes(60))
    desc = {"spec": str(f), "source": "gguf", "path": str(f), "sha256": "ab" * 32}
    shared = public_model(desc)
    assert shared == {"spec": "tiny-gguf/model.gguf", "source": "gguf", "sha256": "ab" * 32, "size": 64}
    assert public_model(desc, record_paths=True)["path"] == str(f)
    assert public_model({"spec": "Qwen/Qwen2.5-1.5B", "source": "hub"}) == {"spec": "Qwen/Qwen2.5-1.5B", "source": "hub"}


def test_model_location_override_recorded_path_then_search_by_name_and_hash(tmp_path):
    import hashlib

    models = tmp_path / "models"
    f = models / "tiny-gguf" / "model.gguf"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"GGUF" + bytes(60))
    decoy = models / "other" / "model.gguf"  # same file name, different bytes
    decoy.parent.mkdir()
    decoy.write_bytes(b"GGUF" + bytes(59) + b"x")
    sha = hashlib.sha256(f.read_bytes()).hexdigest()
    model = public_model({"spec": str(f), "source": "gguf", "path": str(f), "sha256": sha})
    model["spec"] = "renamed/model.gguf"  # only the file name and hash are left to go on
    assert model_location(model, search=[models]) == str(f)
    assert model_location(model, override="/elsewhere/m.gguf", search=[models]) == "/elsewhere/m.gguf"
    assert model_location({**model, "path": str(f)}, search=[]) == str(f)
    assert model_location({"spec": "layers:25", "source": "layers"}) == "layers:25"
    # same-named files with another sha256 exist: the sentence says so (issue 20, finding 10)
    with pytest.raises(SpectermError, match="checksum differs.*--target/--draft"):
        model_location({**model, "sha256": "0" * 64}, search=[models])
    with pytest.raises(SpectermError, match="was not found under .*--target/--draft"):
        model_location({**model, "spec": "absent/none.gguf", "sha256": "0" * 64}, search=[models])


def test_oracle_run_json_has_no_local_path_unless_asked(tiny_model_dir, tmp_path):
    base = ["--target", str(tiny_model_dir), "--draft", "layers:2", "--corpus", "code", "--limit", "1", "-n", "3"]
    assert _run([*base, "--out", str(tmp_path / "a")]).exit_code == 0
    assert _run([*base, "--out", str(tmp_path / "b"), "--record-paths"]).exit_code == 0
    text = (tmp_path / "a" / META_FILE).read_text()
    assert str(tiny_model_dir) not in text
    assert json.loads(text)["target"]["spec"] == f"{tiny_model_dir.parent.name}/{tiny_model_dir.name}"
    assert json.loads((tmp_path / "b" / META_FILE).read_text())["target"]["path"] == str(tiny_model_dir)


# ---------------------------------------------------------------- property: random damage ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("duplicate"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("flip-meta"), st.integers(0, 1 << 20), st.integers(0, 255)),
)


def _mutate(path: Path, op: str, pos: int, byte: int) -> None:
    target = path / (META_FILE if op == "flip-meta" else RECORDS_FILE)
    data = bytearray(target.read_bytes())
    if not data:
        return
    if op in ("flip", "flip-meta"):
        data[pos % len(data)] = byte
    elif op == "truncate":
        del data[pos % len(data):]
    else:
        lines = bytes(data).splitlines(keepends=True)
        i = pos % len(lines)
        lines.insert(i, lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
        data = bytearray(b"".join(lines))
    target.write_bytes(bytes(data))


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(MUTATION, min_size=1, max_size=3))
def test_damaged_runs_load_unchanged_records_or_fail_in_one_sentence(tmp_path_factory, ops):
    """Byte flips, truncations and duplicated lines: the loader either returns records each equal to
    one written (in the written order, none twice) or raises one SpectermError sentence."""
    written = [stream(i, corpus="code" if i % 2 else "prose", n=8) for i in range(4)]
    path = make_run(tmp_path_factory.mktemp("damage") / "r", written)
    for op in ops:
        _mutate(path, *op)
    try:
        run = load_run(path)
    except SpectermError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    original = {(s.corpus, s.id): s.to_record() for s in written}
    order = [(s.corpus, s.id) for s in written]
    keys = [(s.corpus, s.id) for s in run.streams]
    assert keys == sorted(keys, key=order.index)  # a subsequence of what was written: none twice, none new
    for s in run.streams:
        assert s.to_record() == original[(s.corpus, s.id)]  # numbers never change
