"""The answer first (issue 53): per corpus this machine's verdict, g and speedup with its interval, or what
is missing and the one command that gets it; the Overview's first rows read it at 80x24; every head line
keeps "(this machine)" / "(other machine)" whole; `y` on Decide carries the machine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tui_checks import static_text
from textual.widgets import Static

from specterm.app import make_app
from specterm.core.report.answer import (DONT, NO_COSTS_HERE, NO_GAIN, NOT_MEASURED, SPECULATE, TOO_FEW, answer, costs_command, machine_label)
from specterm.core.report.types import DecisionHW, RunSummary
from specterm.widgets.columns import fit_machine

SHIPPED = Path(__file__).resolve().parents[1] / "streams"
TORCH_RUN = SHIPPED / "qwen2.5-coder-0.5b-1.5b"
LLAMA_RUN = SHIPPED / "qwen2.5-coder-0.5b-1.5b-llamacpp"
FAST = {"boot": 50, "shuffles": 2}


def _run(path: str = "/tmp/x/streams/mine", target: str | None = "t.gguf", draft: str | None = "d.gguf") -> RunSummary:
    return RunSummary(name="mine", path=path, target=target, draft=draft)


def _d(kind: str | None, g: int = 3, s: float = 1.42, ci=(1.17, 1.58), here: bool = True, measured: bool = True,
       verdict: str = "", busy: str | None = None) -> DecisionHW:
    return DecisionHW(measured=measured, gamma_hw=g, speedup_hw=s, speedup_hw_ci=list(ci), verdict_kind=kind,
                      verdict=verdict, machine="AMD EPYC, 1 thread, torch 2.13 float32", profile="p1",
                      matches_this_machine=here, busy_warning=busy)


def test_each_verdict_reads_its_g_and_speedup_with_its_interval():
    a = answer("code", _d(SPECULATE), [_run()])
    assert (a.kind, a.gamma, a.speedup, a.ci, a.command) == (SPECULATE, 3, 1.42, (1.17, 1.58), "")
    assert a.text == "speculate, g = 3: 1.42x [1.17, 1.58]"
    assert answer("prose", _d(DONT, 3, 0.77, (0.69, 0.88)), []).text == "do not speculate (best g = 3: 0.77x [0.69, 0.88])"
    assert answer("json", _d(NO_GAIN, 7, 0.96, (0.85, 1.09)), []).text == "no reliable gain (g = 7: 0.96x [0.85, 1.09])"
    busy = answer("json", _d(SPECULATE, busy="timed on a busy machine"), [])
    assert busy.text.endswith("(busy)") and busy.busy


def test_too_few_prompts_keeps_its_words_and_numbers():
    v = "too few prompts (n = 2 in a corpus; needs 10 per corpus): g = 3 gives 1.42x [1.17, 1.58]"
    a = answer("pooled", _d(TOO_FEW, verdict=v), [])
    assert a.kind == TOO_FEW and a.text == "too few prompts (n = 2): g = 3, 1.42x [1.17, 1.58]"
    assert a.command == "specterm run ... --limit 10 --resume"


def test_too_few_prompts_names_the_run_that_adds_them(tmp_path, monkeypatch):
    """The one command: the same run resumed with 10 prompts per corpus, the models where this machine
    remembers them (else as run.json names them)."""
    from specterm.core.report.answer import more_prompts_command
    from specterm.core.store.modelkeys import remember_models

    monkeypatch.setenv("SPECTERM_STATE", str(tmp_path / "state.json"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "streams" / "mine").mkdir(parents=True)
    run = _run(str(tmp_path / "streams" / "mine"), "smollm2/model.gguf", "layers:25")
    assert more_prompts_command([run]) == ("specterm run --target smollm2/model.gguf --draft layers:25 --limit 10 "
                                           "--out streams/mine --resume")
    model = tmp_path / "m" / "model.gguf"
    model.parent.mkdir()
    model.write_bytes(b"x")
    remember_models(run.path, str(model), "layers:25")
    assert more_prompts_command([run]).startswith(f"specterm run --target {model.resolve()} --draft layers:25 ")
    imported = RunSummary(name="i", path="i", imported=True)
    assert more_prompts_command([imported]).startswith("import at least 10 prompts per corpus")


def test_what_is_missing_names_the_one_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "streams" / "mine").mkdir(parents=True)
    run = _run(str(tmp_path / "streams" / "mine"))
    other = answer("code", _d(SPECULATE, here=False), [run])
    assert (other.kind, other.gamma, other.command) == (NO_COSTS_HERE, None, "specterm costs streams/mine")
    none = answer("code", _d(None, measured=False), [run])
    assert (none.kind, none.command) == (NOT_MEASURED, "specterm costs streams/mine")
    # imported bits name no model: the command asks for them
    imported = answer("code", _d(None, measured=False), [_run(str(tmp_path / "streams" / "mine"), None, None)])
    assert imported.command == "specterm costs streams/mine --target T --draft D"
    # once this machine remembers the models the bits came from, `specterm costs RUN` finds them
    from specterm.core.store.modelkeys import remember_models

    monkeypatch.setenv("SPECTERM_STATE", str(tmp_path / "state.json"))
    (tmp_path / "t").mkdir()
    remember_models(tmp_path / "streams" / "mine", str(tmp_path / "t"), str(tmp_path / "t"))
    again = answer("code", _d(None, measured=False), [_run(str(tmp_path / "streams" / "mine"), None, None)])
    assert again.command == "specterm costs streams/mine"
    assert costs_command([_run("/elsewhere/has space")]) == "specterm costs '/elsewhere/has space'"


def test_machine_label_of_this_machine():
    assert machine_label({"cpu": "AMD EPYC 7B13", "cores": 2, "threads": 1, "gpus": []}) == "AMD EPYC 7B13, 1 thread"
    assert machine_label({"cpu": "x", "threads": 4, "gpus": ["NVIDIA H100", "NVIDIA H100"]}) == "NVIDIA H100"


@pytest.mark.parametrize("width", [80, 60, 45, 38, 30])
def test_fit_machine_never_cuts_its_suffix(width):
    label, suffix = "Intel(R) Xeon(R) Processor, 1 thread, torch 2.13 float32", " (other machine)"
    got = fit_machine(label, width, suffix)
    assert got.endswith(suffix) and len(got) <= max(width, len(suffix) + 1)
    assert fit_machine(label, 200, suffix) == label + suffix  # nothing shortened where it fits


def test_fit_machine_shortens_step_by_step():
    label = "Intel Xeon Processor, 1 thread, torch 2.13 float32"
    assert fit_machine(label, 45) == "Intel Xeon, 1 thread, torch 2.13 float32"
    assert fit_machine(label, 30) == "Intel Xeon, 1t, torch float32"
    assert fit_machine(label, 21) == "Intel Xeon, 1t, torch"
    assert fit_machine(label, 10) == "Intel Xeo…"  # 10 cells, the last an ellipsis


pytestmark = pytest.mark.anyio


async def _ready(app, pilot) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_the_overview_opens_with_this_machines_verdict_per_corpus():
    """A pilot reads the Overview's first rows at 80x24: one line per corpus (pooled last) with the verdict,
    g and speedup [CI] of this machine's profile, as the report's decision holds them."""
    assert os.environ.get("SPECTERM_MACHINE_CPU") == "AMD EPYC"  # conftest pins the machine the runs were timed on
    app = make_app([TORCH_RUN], **FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        lines = static_text(app.screen.query_one("#overview-answer", Static)).splitlines()
        report = app.report
        assert lines[0].startswith("Speculate on this machine?")
        names = [n for n, _ in report.ordered_sets()]
        assert [ln.split()[0] for ln in lines[1:]] == names
        words = {SPECULATE: "speculate, g", DONT: "do not speculate (best g", NO_GAIN: "no reliable gain (g"}
        for line, (_, s) in zip(lines[1:], report.ordered_sets()):
            d = s.decision_hw
            assert d.matches_this_machine
            lo, hi = d.speedup_hw_ci
            assert words[d.verdict_kind] in line
            assert f"g = {d.gamma_hw}: {d.speedup_hw:.2f}x [{lo:.2f}, {hi:.2f}]" in line, line
        # what a person sees: the first rows of the screen are the answer
        shown = app.screen._compositor.render_strips()
        text = ["".join(seg.text for seg in strip) for strip in shown]
        assert text[2].strip().startswith("Speculate on this machine?")
        assert text[3].split()[0] == names[0]


async def test_without_costs_of_this_machine_the_overview_names_the_command(monkeypatch):
    monkeypatch.setenv("SPECTERM_MACHINE_CPU", "Some Other CPU")
    app = make_app([TORCH_RUN], **FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        text = " ".join(static_text(app.screen.query_one("#overview-answer", Static)).split())
        assert "no costs of this machine (Some Other CPU, 1 thread)" in text
        assert re.search(r"specterm costs \S*qwen2\.5-coder-0\.5b-1\.5b\b", text), text
        head = static_text(app.screen.query_one("#head", Static))
        assert head.endswith("(other machine)")


@pytest.mark.parametrize("key", list("1234567"))
async def test_every_head_line_keeps_the_machine_whole_at_80x24(key):
    app = make_app([TORCH_RUN, LLAMA_RUN], **FAST)
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        await pilot.press(key)
        await _ready(app, pilot)
        head = static_text(app.screen.query_one("#head", Static))
        assert re.match(r"\w[\w ]* · run 1/2 · torch -n 128 · ", head), head
        assert head.endswith("(this machine)") and "…" not in head, head
        assert len(head) <= 78
