"""Report shape (SPEC 7 names), markdown that parses as GitHub tables, and the report/list CLI."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from specterm.core.report.analysis import analyse
from specterm.core.report.export import SECTIONS, deficit_cell, markdown_tables, to_json, to_markdown, to_text
from specterm.core.store import new_meta, write_run

SET_KEYS = {"n_streams", "n_positions", "alpha", "gate_rate", "autocorr", "autocorr_pooled", "dispersion_ratio",
            "deficit", "yield_ratio", "optimum"}
TUI_KEYS = {"autocorr_simpson", "runlengths", "curve", "depth", "r_measured"}


def small_run(synth):
    rng = np.random.default_rng(0)
    s = synth.streams("prose", [synth.markov(rng, 300, 0.9, 0.3) for _ in range(20)])
    s += synth.streams("code", [synth.iid(rng, 200, 0.8) for _ in range(15)])
    for x in s:
        x.draft_conf = rng.random(x.n).astype(np.float32)
    return synth.run(s, r=0.21)


@pytest.fixture
def report(synth):
    return analyse([small_run(synth)], gamma=6, boot=100, shuffles=3, seed=1)


def is_est(x) -> bool:
    return isinstance(x, dict) and set(x) >= {"value", "ci"} and len(x["ci"]) == 2


def test_spec7_json_shape(report):
    doc = json.loads(to_json(report))  # strict JSON: no NaN
    assert set(doc) >= {"sets", "scorecard", "runs", "params"}
    assert set(doc["sets"]) == {"prose", "code", "pooled"}
    for s in doc["sets"].values():
        assert SET_KEYS | TUI_KEYS <= set(s)
        for key in ("autocorr", "autocorr_pooled", "dispersion_ratio"):
            assert is_est(s[key]), key
        assert s["deficit"]["gamma"] == 6
        assert all(is_est(s["deficit"][k]) for k in ("total", "hetero", "temporal"))
        assert set(s["yield_ratio"]) == {"2", "4", "8", "16"} and all(is_est(v) for v in s["yield_ratio"].values())
        assert all(set(o) >= {"r", "gamma_true", "gamma_iid"} for o in s["optimum"])
        rl = s["runlengths"]
        assert set(rl) >= {"L", "count", "geom_expected", "D", "D_geom", "n_runs"} and sum(rl["count"]) == rl["n_runs"]
        assert s["curve"]["gamma"] == list(range(1, 33)) and len(s["curve"]["E_true"]) == 32 == len(s["curve"]["E_iid"])
        d = s["depth"]
        assert d["gamma"] == 6 and len(d["conditional"]) == 6 == len(d["unconditional_iid"]) == len(d["conditional_iid"])
        assert all(is_est(x) for x in d["conditional"] + d["unconditional"])
        assert s["r_measured"] == 0.21
        pos = s["position"]  # SPEC 7 names
        assert pos["bin_width"] == 16 and all(set(b) >= {"start", "alpha", "n"} and is_est(b["alpha"]) for b in pos["bins"])
        assert [b["start"] for b in pos["bins"]] == [16 * k for k in range(len(pos["bins"]))] and is_est(pos["warmup_gain"])
        smp = s["sampling"]
        assert is_est(smp["beta_bar"]) and is_est(smp["beta_autocorr"])
        assert set(smp["E_iid_beta"]) == {"2", "4", "8", "16"} and all(is_est(v) for v in smp["E_iid_beta"].values())
        assert is_est(d["c2_minus_c1"])
    assert [p["id"] for p in doc["scorecard"]] == ["P1", "P2", "P3", "P4", "P5", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]
    assert [p["seed"] for p in doc["scorecard"]] == ["measurement"] * 5 + ["economics"] * 6
    verdicts = ("holds", "holds in direction, not in size", "falsified", "inconclusive")
    assert all(p["verdict"] in verdicts and isinstance(p["evidence"], str) for p in doc["scorecard"])
    outcomes = ("holds", "not reproduced", "inconclusive", "n/a")
    assert all(p["direction"] in outcomes and p["size"] in outcomes for p in doc["scorecard"])
    run = doc["runs"][0]
    assert set(run) >= {"name", "path", "target", "draft", "device", "dtype", "r_measured", "n_streams", "corpora"}
    assert run["n_streams"] == 35 and run["corpora"] == ["code", "prose"]
    assert doc["params"]["gamma"] == 6 and doc["params"]["boot"] == 100 and doc["params"]["seed"] == 1


def test_report_is_deterministic(report, synth):
    again = analyse([small_run(synth)], gamma=6, boot=100, shuffles=3, seed=1)
    assert to_json(again) == to_json(report)
    other = analyse([small_run(synth)], gamma=6, boot=100, shuffles=3, seed=2)
    assert other.sets["prose"].autocorr.ci != report.sets["prose"].autocorr.ci


SEP = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def split_row(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return re.split(r"(?<!\\)\|", line[1:-1])


def parse_gfm_tables(md: str) -> list[list[list[str]]]:
    """Every block of consecutive |-lines: header, separator, then rows with the header's cell count."""
    tables, block = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            assert len(block) >= 2 and SEP.match(block[1]), block[:2]
            width = len(split_row(block[0]))
            assert len(split_row(block[1])) == width
            rows = [split_row(x) for x in [block[0]] + block[2:]]
            assert all(len(r) == width for r in rows), block
            tables.append(rows)
            block = []
    return tables


def test_markdown_tables_parse_as_github_tables(report):
    md = markdown_tables(report)
    assert list(md) == list(SECTIONS)
    for section, text in md.items():
        tables = parse_gfm_tables(text)
        assert tables, section
    whole = to_markdown(report)
    assert len(parse_gfm_tables(whole)) == sum(len(parse_gfm_tables(t)) for t in md.values())
    assert "## Scorecard" in whole and "| P1 |" in whole


def test_published_cell_style(report):
    d = report.sets["prose"].deficit
    t, h, m = (d.total.value, d.hetero.value, d.temporal.value)
    lo, hi = d.temporal.ci
    sign = "-" if m < 0 else "+"
    assert deficit_cell(d) == f"{t:.3f} = {h:.3f} {sign} {abs(m):.3f} [{lo:.3f}, {hi:.3f}]"
    row = next(line for line in markdown_tables(report)["overview"].splitlines() if line.startswith("| prose |"))
    ac = report.sets["prose"].autocorr
    assert f"{ac.value:+.3f} [{ac.ci[0]:.2f}, {ac.ci[1]:.2f}]" in row


def test_text_has_every_section(report):
    text = to_text(report)
    for word in ("OVERVIEW", "RUN LENGTHS", "SCORECARD", "P5"):
        assert word in text
    assert not any(line.startswith("|") or line.startswith("**") for line in text.splitlines())  # no markdown


# ------------------------------------------------------------------------------ CLI ---


def make_store(tmp_path, synth):
    rng = np.random.default_rng(5)
    streams = synth.streams("prose", [synth.iid(rng, 120, 0.7) for _ in range(8)])
    streams += synth.streams("code", [synth.markov(rng, 120, 0.9, 0.4) for _ in range(8)])
    root = tmp_path / "streams"
    write_run(root / "demo", new_meta("demo", cost={"r_measured": 0.15}), streams)
    return root


def cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    from specterm.cli import main

    monkeypatch.setattr(sys, "argv", ["specterm", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_report_formats(tmp_path, synth, monkeypatch, capsys):
    root = make_store(tmp_path, synth)
    code, out, err = cli(monkeypatch, capsys, "report", root / "demo", "--format", "json", "--boot", "50", "--gamma", "4")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["params"]["gamma"] == 4 and set(doc["sets"]) == {"prose", "code", "pooled"}
    code, out, _ = cli(monkeypatch, capsys, "report", root / "demo", "--boot", "20", "--shuffles", "2")
    assert code == 0 and parse_gfm_tables(out)
    target = tmp_path / "r.txt"
    code, _, _ = cli(monkeypatch, capsys, "report", root / "demo", "-f", "text", "--boot", "20", "-o", target)
    assert code == 0 and "SCORECARD" in target.read_text()


def test_cli_report_errors(tmp_path, synth, monkeypatch, capsys):
    root = make_store(tmp_path, synth)
    code, _, err = cli(monkeypatch, capsys, "report", root / "demo", "--format", "xml")
    assert code == 2 and "md, json, text" in err and "Traceback" not in err
    code, _, err = cli(monkeypatch, capsys, "report", tmp_path / "nope")
    assert code == 2 and "not a run directory" in err
    code, _, err = cli(monkeypatch, capsys, "report", root / "demo", "--gamma", "40")
    # the range is checked by the command line itself (typer's min/max), in its own words
    assert code == 2 and "gamma" in err and "32" in err and "Traceback" not in err
    code, _, err = cli(monkeypatch, capsys, "report", root / "demo", "--gamma", "0")
    assert code == 2 and "gamma" in err and "Traceback" not in err


def test_cli_list(tmp_path, synth, monkeypatch, capsys):
    root = make_store(tmp_path, synth)
    code, out, _ = cli(monkeypatch, capsys, "list", "--root", root)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["run", "corpora", "prompts", "positions", "alpha", "gate"]
    from specterm.core.store import load_run

    run = load_run(root / "demo")
    alpha = sum(int(s.bits.sum()) for s in run.streams) / sum(s.n for s in run.streams)
    assert lines[2].split() == ["demo", "code,", "prose", "16", "1920", f"{alpha:.3f}", "1.000"]
    code, out, _ = cli(monkeypatch, capsys, "list", "--root", tmp_path / "empty")
    assert code == 0 and "no runs" in out


def test_several_runs_each_measured_r(synth):
    from specterm.core.decide.optimum import throughput_curve

    rng = np.random.default_rng(6)
    one = synth.run(synth.streams("prose", [synth.iid(rng, 100, 0.8) for _ in range(5)]), r=0.12, name="one")
    two = synth.run(synth.streams("prose", [synth.iid(rng, 100, 0.6) for _ in range(5)]), r=0.33, name="two")
    for s in two.streams:
        s.id = "two-" + s.id
    rep = analyse([one, two], boot=20, shuffles=2)
    pooled = rep.sets["pooled"]
    measured = [o.r for o in pooled.optimum if o.measured]
    assert measured == [0.12, 0.33] and pooled.r_measured == pytest.approx(0.225)
    assert [r.name for r in rep.runs] == ["one", "two"] and pooled.n_streams == 10
    # the TUI's curve, from the set's E curves alone, agrees with the optimum table
    for o in pooled.optimum:
        curve = throughput_curve(pooled.curve, o.r)
        assert curve["gamma"][int(np.argmax(curve["T_true"]))] == o.gamma_true
        assert curve["gamma"][int(np.argmax(curve["T_iid"]))] == o.gamma_iid
