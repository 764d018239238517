"""Drafter runs in the store (SPEC 2b, SPEC 7): records carry runs (L_s) and proposed (m_s) with
checksums; write, load, merge, repair and import take them; a corrupt L_s is refused with FILE:LINE;
the drafter report computes the walk's numbers and says which statistics do not apply."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.drafted.drafter_analysis import analyse_drafter
from specterm.core.drafted.walk import walk_loop
from specterm.core.errors import SpectermError
from specterm.core.store.importer import import_jsonl
from specterm.core.store import Stream, load_run, merge_runs, new_meta, record_checksum, repair_run, write_run

DRAFT = {"kind": "prompt-lookup", "spec": "prompt-lookup:2", "max_matching_ngram_size": 2, "max_tokens": 32,
         "eos_token_ids": [2], "source": "test"}


def _stream(rng: np.random.Generator, i: int, corpus: str) -> Stream:
    n = int(rng.integers(5, 40))
    prop = (rng.integers(0, 10, size=n) * (rng.random(n) < 0.6)).astype(np.int32)
    runs = np.minimum(rng.integers(0, 12, size=n), np.minimum(prop, n - np.arange(n))).astype(np.int32)
    return Stream(id=f"{corpus}-{i}", corpus=corpus, bits=np.zeros(0, dtype=np.uint8), prompt=f"p{i}",
                  gate=np.ones(n, dtype=np.uint8), y=rng.integers(0, 50, size=n).astype(np.int32),
                  stop="length", runs=runs, proposed=prop)


def _meta(name: str) -> dict:
    return new_meta(name, target={"spec": "t.gguf", "sha256": "ab" * 32, "vocab_size": 100}, draft=dict(DRAFT),
                    generation={"max_new_tokens": 64, "y_method": "batched greedy"})


def _streams(seed: int = 0, per: int = 12) -> list[Stream]:
    rng = np.random.default_rng(seed)
    return [_stream(rng, i, c) for c in ("code", "prose") for i in range(per)]


def test_round_trip(tmp_path: Path) -> None:
    streams = _streams()
    path = write_run(tmp_path / "run", _meta("run"), streams)
    run = load_run(path)
    assert len(run.streams) == len(streams)
    for a, b in zip(streams, run.streams):
        assert b.drafted and b.n == a.n and b.bits.size == 0
        assert np.array_equal(a.runs, b.runs) and np.array_equal(a.proposed, b.proposed)
        assert np.array_equal(a.y, b.y) and np.array_equal(a.gate, b.gate)
    rec = json.loads((path / "prompts.jsonl").read_text().splitlines()[0])
    assert "bits" not in rec and "draft_conf" not in rec and rec["runs"] == streams[0].runs.tolist()
    assert rec["checksum"] == record_checksum(rec)


def _corrupt(tmp_path: Path, edit) -> str:
    path = write_run(tmp_path / "run", _meta("run"), _streams())
    lines = (path / "prompts.jsonl").read_text().splitlines()
    rec = json.loads(lines[2])
    edit(rec)
    rec["checksum"] = record_checksum(rec)  # a consistent checksum: the value check itself must refuse it
    lines[2] = json.dumps(rec)
    (path / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SpectermError) as err:
        load_run(path)
    return str(err.value)


def test_corrupt_runs_refused_with_file_and_line(tmp_path: Path) -> None:
    def over(rec: dict) -> None:  # L_s beyond m_s
        rec["proposed"][0] = 1
        rec["runs"][0] = 3

    msg = _corrupt(tmp_path, over)
    assert "prompts.jsonl:3" in msg and "s = 0" in msg


@pytest.mark.parametrize("edit", [
    lambda r: r["runs"].__setitem__(1, -1),
    lambda r: r["runs"].pop(),
    lambda r: r["proposed"].__setitem__(0, 99),                  # beyond the drafter's max_tokens (32)
    lambda r: r.__setitem__("runs", "0101"),
    lambda r: r.__setitem__("bits", "0" * len(r["runs"])),
    lambda r: r["runs"].__setitem__(len(r["runs"]) - 1, 2) or r["proposed"].__setitem__(len(r["runs"]) - 1, 5),  # L_s > n - s
])
def test_other_corrupt_drafter_records(tmp_path: Path, edit) -> None:
    assert "prompts.jsonl:3" in _corrupt(tmp_path, edit)


def test_checksum_catches_a_changed_run(tmp_path: Path) -> None:
    path = write_run(tmp_path / "run", _meta("run"), _streams())
    lines = (path / "prompts.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["runs"][0] = 0 if rec["runs"][0] else min(1, rec["proposed"][0])
    lines[1] = json.dumps(rec)
    (path / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SpectermError, match=r"prompts.jsonl:2.*checksum"):
        load_run(path)


def test_merge_and_repair_keep_them(tmp_path: Path) -> None:
    streams = _streams()
    a = write_run(tmp_path / "a", {**_meta("a"), "shard": [0, 2]}, streams[:10])
    b = write_run(tmp_path / "b", {**_meta("b"), "shard": [1, 2]}, streams[10:])
    out, merged = merge_runs([a, b], tmp_path / "m")
    run = load_run(out)
    assert [s.runs.tolist() for s in run.streams] == [s.runs.tolist() for s in streams]
    lines = (out / "prompts.jsonl").read_bytes().splitlines(keepends=True)
    (out / "prompts.jsonl").write_bytes(b"".join(lines) + lines[0][:30])  # a torn final line
    repair_run(out)
    assert [s.proposed.tolist() for s in load_run(out).streams] == [s.proposed.tolist() for s in streams]


def test_import_drafter_lines(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "corpus": "c", "runs": [2, 0, 1, 0], "proposed": [3, 0, 2, 1]}\n'
                   '{"id": "b", "corpus": "c", "runs": [0], "proposed": [0]}\n')
    out, streams = import_jsonl(src, tmp_path / "imp", draft="prompt-lookup:2")
    run = load_run(out)
    assert run.meta["draft"]["kind"] == "prompt-lookup"
    assert run.streams[0].runs.tolist() == [2, 0, 1, 0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "corpus": "c", "runs": [2, 0], "proposed": [3, 0]}\n'
                   '{"id": "b", "corpus": "c", "runs": [3], "proposed": [1]}\n')
    with pytest.raises(SpectermError, match=r"bad.jsonl:2"):
        import_jsonl(bad, tmp_path / "imp2", draft="prompt-lookup:2")
    with pytest.raises(SpectermError, match="name the drafter"):
        import_jsonl(src, tmp_path / "imp3")


def test_drafter_report_numbers(tmp_path: Path) -> None:
    streams = _streams(3)
    run = load_run(write_run(tmp_path / "run", _meta("run"), streams))
    rep = analyse_drafter([run], gamma=4, boot=200, seed=0)
    assert set(rep.sets) == {"code", "prose", "pooled"}
    for name, s in rep.sets.items():
        members = [x for x in streams if name in ("pooled", x.corpus)]
        for g in (1, 4, 9):
            sums = np.array([walk_loop(x.runs, x.proposed, g) for x in members]).sum(axis=0)
            row = s.yield_curve[g - 1]
            assert row.E.value == pytest.approx(sums[0] / sums[1])
            assert row.drafted_per_block == pytest.approx(sums[2] / sums[1])
            lo, hi = row.E.ci
            assert lo <= row.E.value <= hi
        assert "autocorr" in s.not_applicable and "deficit" in s.not_applicable
        assert s.decision_hw.measured is False  # no costs in this run
        assert s.n_positions == sum(x.n for x in members)
    d = rep.to_dict()
    assert d["sets"]["pooled"]["not_applicable"]["dispersion_ratio"].startswith("does not apply")


def test_decision_with_costs_by_hand(tmp_path: Path) -> None:
    """S_hw(g) = tokens c_decode / (sum_d blocks_d c_verify(d) + blocks c_draft), on one stream by hand."""
    from specterm.core.drafted.drafter_analysis import set_report

    s = Stream(id="a", corpus="c", bits=np.zeros(0, dtype=np.uint8), runs=np.array([2, 0, 0, 1, 0], dtype=np.int32),
               proposed=np.array([2, 0, 0, 3, 0], dtype=np.int32))
    # g = 1: s=0 d=1 k=1 (2 tok) -> s=2 d=0 (1) -> s=3 d=1 k=1 (2) -> end: tokens 5, blocks 3, d: 1, 0, 1
    # g = 2: s=0 d=2 k=2 (3 tok) -> s=3 d=2 k=1 (2) -> end: tokens 5, blocks 2, d: 2, 2
    samples = {"decode": [1.0] * 5, "draft": [0.01] * 5, "draft2": [0.01] * 5, "verify:1": [1.2] * 5,
               "verify:2": [1.5] * 5}
    cost = {"c_decode_s": 1.0, "c_draft_s": 0.01, "c_verify_s": {"1": 1.2, "2": 1.5}, "samples_s": samples}
    rep = set_report([s], None, 2, cost, 0, 1)
    S1 = 5 * 1.0 / (1.2 + 1.0 + 1.2 + 3 * 0.01)
    S2 = 5 * 1.0 / (1.5 + 1.5 + 2 * 0.01)
    assert rep.yield_curve[0].speedup_hw == pytest.approx(S1)
    assert rep.yield_curve[1].speedup_hw == pytest.approx(S2)
    assert rep.decision_hw.gamma_hw == 2 and rep.decision_hw.speedup_hw == pytest.approx(S2)
    assert rep.decision_hw.verdict.startswith("too few prompts")


def test_specterm_run_with_drafters_then_report(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`specterm run --draft prompt-lookup --draft ngram-simple:1` on a tiny model: no draft model, one y for
    both runs, costs with the drafter's time per block; then the drafter report and Which draft?."""
    from typer.testing import CliRunner

    from specterm import cli

    out = tmp_path / "pl"
    res = CliRunner().invoke(cli.app, ["run", "--headless", "--target", str(tiny_model_dir), "--draft", "prompt-lookup",
                                       "--draft", "ngram-simple:1", "--corpus", "grounded,code", "--limit", "2",
                                       "-n", "12", "--out", str(out)])
    assert res.exit_code == 0, res.output
    a, b = load_run(out), load_run(tmp_path / "pl-ngram-simple-1")
    assert a.meta["draft"]["kind"] == "prompt-lookup" and b.meta["draft"]["kind"] == "ngram"
    assert [s.y.tolist() for s in a.streams] == [s.y.tolist() for s in b.streams]
    assert all(s.gate_rate == 1.0 for s in a.streams)
    cost = a.meta["cost"]
    assert cost["c_draft_per"] == "block" and 0 < cost["c_draft_s"] < cost["c_decode_s"]
    assert a.meta["profiles"] and b.meta["profiles"]
    res = CliRunner().invoke(cli.app, ["report", str(out), "--format", "json", "--boot", "50"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["kind"] == "drafter" and rep["sets"]["pooled"]["decision_hw"]["measured"] is True
    res = CliRunner().invoke(cli.app, ["report", str(out), str(tmp_path / "pl-ngram-simple-1"), "--boot", "50"])
    assert res.exit_code == 0, res.output
    assert "Which draft?" in res.stdout and "ngram-simple:1" in res.stdout
    res = CliRunner().invoke(cli.app, ["run", "--headless", "--target", str(tiny_model_dir), "--draft", "prompt-lookup",
                                       "--draft", "layers:1", "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "mixes a draft model" in res.output
    res = CliRunner().invoke(cli.app, ["list", "--root", str(tmp_path)])
    assert "drafter prompt-lookup:2" in res.stdout
    # --resume with one more prompt per corpus: both runs get exactly the missing ones, the stored ones kept
    before = {(s.corpus, s.id): s.runs.tolist() for s in a.streams}
    res = CliRunner().invoke(cli.app, ["run", "--headless", "--target", str(tiny_model_dir), "--draft", "prompt-lookup",
                                       "--draft", "ngram-simple:1", "--corpus", "grounded,code", "--limit", "3",
                                       "-n", "12", "--out", str(out), "--resume", "--no-cost"])
    assert res.exit_code == 0, res.output
    a2, b2 = load_run(out), load_run(tmp_path / "pl-ngram-simple-1")
    assert len(a2.streams) == len(b2.streams) == 6
    assert all(before[(s.corpus, s.id)] == s.runs.tolist() for s in a2.streams if (s.corpus, s.id) in before)
    assert [s.y.tolist() for s in a2.streams] == [s.y.tolist() for s in b2.streams]
    # --y-from: y, gate and target_conf of the same target's run taken (same torch, dtype, device), one more prompt
    # per corpus decoded and teacher-forced here; the prompts found keep their y exactly
    c_out = tmp_path / "c"
    res = CliRunner().invoke(cli.app, ["run", "--headless", "--target", str(tiny_model_dir), "--draft", "prompt-lookup:3",
                                       "--corpus", "grounded,code", "--limit", "4", "-n", "12", "--out", str(c_out),
                                       "--no-cost", "--y-from", str(out)])
    assert res.exit_code == 0, res.output
    c = load_run(c_out)
    assert c.meta["y_from"]["prompts"] == 6 and c.meta["y_from"]["gates_taken"] == 6 and len(c.streams) == 8
    src = {(s.corpus, s.id): s for s in a2.streams}
    for s in c.streams:
        if (s.corpus, s.id) in src:
            assert s.y.tolist() == src[(s.corpus, s.id)].y.tolist()
            assert s.gate.tolist() == src[(s.corpus, s.id)].gate.tolist()
        assert s.gate_rate == 1.0


def test_confirmed_rows_sum_the_latest_record(tmp_path: Path) -> None:
    from specterm.core.drafted.drafter_analysis import DrafterYield, confirmed_rows
    from specterm.core.report.types import Estimate

    curve = [DrafterYield(gamma=g, E=Estimate(value=1.0), speedup_hw=1.0 + g / 10) for g in range(1, 33)]
    rec = {"engine": {"version": "5", "torch": "2", "threads": 1}, "prompts": [
        {"corpus": "a", "greedy_s": 4.0, "spec": {"2": {"s": 2.0, "target_calls": 5, "blocks_walk": 5, "identical": True}}},
        {"corpus": "b", "greedy_s": 6.0, "spec": {"2": {"s": 4.0, "target_calls": 7, "blocks_walk": 7, "identical": False}}}]}
    rows = confirmed_rows({"drafter_confirmations": [{"prompts": []}, rec]}, None, curve)
    assert len(rows) == 1 and rows[0].realized == pytest.approx(10.0 / 6.0) and rows[0].predicted == pytest.approx(1.2)
    assert (rows[0].target_calls, rows[0].blocks_walk, rows[0].identical) == (12, 12, False)
    only_a = confirmed_rows({"drafter_confirmations": [rec]}, "a", curve)
    assert only_a[0].realized == pytest.approx(2.0) and only_a[0].identical
    assert confirmed_rows({}, None, curve) == []


def test_compare_names_the_best_and_refuses_unlike_pools() -> None:
    from specterm.core.drafted.which_draft import DrafterRow, compare
    from specterm.core.report.types import Estimate

    def row(run: str, v: float | None, lo: float | None = None) -> DrafterRow:
        return DrafterRow(run=run, drafter=run, speedup_hw=Estimate(value=v, ci=[lo, None if v is None else v + 0.1]))

    a = {"code": row("a", 1.5, 1.3), "pooled": row("a", 1.2)}
    b = {"code": row("b", 1.2, 1.0), "grounded": row("b", 2.0), "pooled": row("b", 1.4)}
    c = {"code": row("c", None)}
    cmp = compare([a, b, c], "t")
    assert cmp.sets["code"].best == "a" and cmp.sets["code"].margin.startswith("a 1.50x, 1.25 times the runner-up b's 1.20x")
    assert "clear" in cmp.sets["code"].margin and "not clear" not in cmp.sets["code"].margin
    assert cmp.sets["grounded"].best == "b"
    assert cmp.sets["pooled"].best is None and "different corpora" in cmp.sets["pooled"].note


def test_none_is_best_where_no_run_beats_plain_decoding() -> None:
    """A drafter that never drafts at its g_hw (ngram-simple below its n-gram size) is plain decoding at S_hw = 1
    exactly: against runs below 1 it is no drafter that pays, and no run is named best."""
    from specterm.core.drafted.which_draft import DrafterRow, compare
    from specterm.core.report.types import Estimate

    def row(run: str, v: float) -> DrafterRow:
        return DrafterRow(run=run, drafter=run, speedup_hw=Estimate(value=v, ci=[v, v]))

    cmp = compare([{"math": row("model", 0.98)}, {"math": row("lookup", 0.73)}, {"math": row("ngram", 1.0)}], "t")
    assert cmp.sets["math"].best is None
    assert cmp.sets["math"].margin.startswith("none: no run's S_hw is above 1 (the highest, ngram's, is 1.00x)")
    cmp = compare([{"math": row("model", 1.01)}, {"math": row("ngram", 1.0)}], "t")
    assert cmp.sets["math"].best == "model"  # just above 1: named, and its margin says whether it is clear
