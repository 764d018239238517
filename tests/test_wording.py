"""Wording that says what the numbers are (issue 53): a migrated profile timed at a high load is busy; one of
several profiles of this machine is shown and the table says which and why; Q6 names the machine of its
by-batch numbers and their caveat; "sign held" means one thing in every table; "too few prompts" says the
minimum is per corpus; search finds what the Streams screen shows; help explains the marks."""

from __future__ import annotations

import dataclasses

import numpy as np

from specterm.core.claims import economics
from specterm.core.decide.hardware import profiles as P
from specterm.core.report.types import DecisionHW


def _migrated(avg, cores=2):
    return P.Profile({"id": "p1", "device": {"kind": "cpu", "name": "Intel Xeon", "cores": cores, "threads": 1},
                      "engine": {"name": "llama.cpp"}, "load": {"avg": avg, "other_cpu_share": None}, "busy": False,
                      "source": "migrated: ..."})


def test_a_profile_timed_at_a_load_above_its_cores_is_busy():
    # the shipped llama.cpp run's first profile: load 8.97 on 2 cores, stored with busy false
    busy = _migrated(8.96533203125)
    assert busy.busy
    assert busy.busy_warning() == ("timed on a busy machine (load 8.97 on 2 cores): re-measure on a quiet "
                                   "machine with `specterm costs`")
    assert not _migrated(2.07).busy          # 2.07 <= 1 per core + 1
    assert _migrated(3.01).busy and not _migrated(3.0).busy
    assert not _migrated(None).busy and not _migrated(9.0, cores=None).busy  # unknown: not judged
    assert P.load_busy(9.0, 8) is False and P.load_busy(9.01, 8) is True


def test_the_table_says_which_of_this_machines_profiles_is_shown():
    from specterm.core.report.export import shown_among
    from specterm.core.report.types import RunSummary

    class R:
        profiles = [{"id": "pa", "matches_this_machine": True, "measured_at": "2026-11-30T13:31"},
                    {"id": "pb", "matches_this_machine": False, "measured_at": "2026-12-01T00:00"},
                    {"id": "pc", "matches_this_machine": True, "measured_at": "2026-12-03T12:56"}]
        runs = [RunSummary(name="r", path="r", shown_profile="pc")]

    assert shown_among(R()) == ("Shown: the newest of the 2 profiles of this machine (pc, 2026-12-03); "
                                "the older ones are listed, not used")
    R.profiles = R.profiles[:2]
    R.runs = [RunSummary(name="r", path="r", shown_profile="pa")]
    assert shown_among(R()) is None  # one profile of this machine: nothing to explain


def _batch_decision(machine, few=None):
    rows = [{"batch": 1, "gamma_hw": 2, "speedup_hw": {"value": 1.42, "ci": [1.17, 1.58]}},
            {"batch": 2, "gamma_hw": 2, "speedup_hw": {"value": 0.83, "ci": [0.68, 0.95]}}]
    return DecisionHW(measured=True, by_batch=rows, batch_crossover=1, machine=machine,
                      batch_fit={"few_samples": few} if few else None)


def test_q6_names_the_machine_of_its_batch_numbers_and_their_caveat():
    class Pooled:
        decision_hw = DecisionHW(measured=True, machine="AMD EPYC, 1 thread, torch float32", profile="pa")
        decision_by_profile = {"pa": decision_hw,
                               "px": _batch_decision("Intel Xeon Processor, 1 thread, torch float32",
                                                     few="the batch grid's ratios rest on 2 samples per cost")}

    row = economics.q6_profiles(Pooled(), 42.0, 6)
    assert row.evidence.startswith("holds: S_hw(g_hw(B), B) on Intel Xeon Processor, 1 thread, torch float32: B=1:")
    assert row.evidence.endswith("(caveat: the batch grid's ratios rest on 2 samples per cost)")
    Pooled.decision_by_profile = {"pa": Pooled.decision_hw, "px": _batch_decision("Intel Xeon")}
    assert "caveat" not in economics.q6_profiles(Pooled(), 42.0, 6).evidence


def test_sign_held_at_g_hw_is_the_verdicts_side_in_the_history_too():
    """The history table and the confirmation table read the same: at g_hw, realized on the verdict's side of 1
    (n/a for no reliable gain); elsewhere on the side of that g's prediction. On the shipped torch run."""
    from pathlib import Path

    from specterm.core.report.analysis import analyse
    from specterm.core.decide.hardware.decision import verdict_sign_held
    from specterm.core.store import load_run

    run = Path(__file__).resolve().parents[1] / "streams" / "qwen2.5-coder-0.5b-1.5b"
    rep = analyse([load_run(run)], boot=50, shuffles=0)
    checked = 0
    for _, s in rep.ordered_sets():
        for d in s.decision_by_profile.values():
            for row in [*d.confirmed, *d.confirmed_history]:
                if row.realized is None or row.decision_predicted is None:
                    continue
                if row.gamma == d.gamma_hw:
                    assert row.sign_held == verdict_sign_held(d.verdict_kind, float(row.realized)), (d.machine, row)
                else:
                    assert row.sign_held == ((row.realized > 1) == (row.decision_predicted.value > 1)), row
                checked += 1
    assert checked > 10
    assert verdict_sign_held("no_reliable_gain", 0.8) is None


def test_too_few_prompts_says_the_minimum_is_per_corpus():
    """A pooled set of 10 prompts, 2 per corpus: its verdict reads the count of the smallest corpus and says
    the minimum is per corpus (the sentence used to read as if the set had 2 prompts)."""
    from app_fixture import META
    from conftest import markov_bits

    from specterm.core.report.analysis import analyse
    from specterm.core.store import Stream, load_run, write_run
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(0)
    streams = [Stream(id=f"{c}{i}", corpus=c, bits=markov_bits(rng, 64, 0.9, 0.4, first=1), gate=np.ones(64, dtype=np.uint8))
               for c in ("a", "b", "c", "d", "e") for i in range(2)]
    with tempfile.TemporaryDirectory() as tmp:
        rep = analyse([load_run(write_run(Path(tmp) / "r", {**META, "name": "r"}, streams))], boot=50, shuffles=0)
    assert rep.sets["pooled"].n_streams == 10
    words = {r.verdict for r in rep.scorecard}
    assert words == {"too few prompts (n = 2 in a corpus; needs 10 per corpus)"}


def test_search_finds_a_word_of_the_continuation():
    from specterm.core.streams.navigate import search_prompts

    ids, prompts = ["p1", "p2", "amazon-3"], ["The river", "A shop", None]
    conts = [" rises in the Amazon basin", " sells books", None]
    assert search_prompts("amazon", ids, prompts) == [2]                  # ids and prompts only
    assert search_prompts("amazon", ids, prompts, conts) == [2, 0]        # the id first, then the continuation
    assert search_prompts("books", ids, prompts, conts) == [1]
    assert search_prompts("nowhere", ids, prompts, conts) == []


def test_help_explains_the_marks():
    from specterm.screens.help import MARKS

    marks = {key: what for _, key, what in MARKS}
    assert "repaired" in marks["r1, r2, ..."] and "gate column" in marks["r1, r2, ..."]
    assert "(this machine)" in marks and "specterm costs" in marks["(this machine)"]


def test_a_row_of_too_few_prompts_keeps_its_numbers():
    d = DecisionHW(measured=True, gamma_hw=3, speedup_hw=1.1, speedup_hw_ci=[0.9, 1.3], verdict_kind="speculate",
                   verdict="speculate with g = 3 on X: 1.10x [0.90, 1.30]; speculation at g = 3 pays when ...")
    from specterm.core.decide.hardware.decision import too_few_prompts

    out = too_few_prompts(dataclasses.replace(d), 2)
    assert out.verdict.startswith("too few prompts (n = 2 in a corpus; needs 10 per corpus)")
    assert out.verdict_kind == "too_few_prompts"


import pytest  # noqa: E402


@pytest.mark.anyio
async def test_a_llamacpp_rejection_is_spelled_from_the_torch_run_of_the_same_gguf_files():
    """The draft's guess at a rejection of the llama.cpp run, an id its own y never holds, is spelled from
    the torch run of the same target file (same tokenizer), not shown as a bare id."""
    from pathlib import Path

    from pilot_settle import settled

    from specterm.app import make_app
    from specterm.core.store import load_run

    streams = Path(__file__).resolve().parents[1] / "streams"
    torch_run, llama_run = load_run(streams / "qwen2.5-coder-0.5b-1.5b"), load_run(streams / "qwen2.5-coder-0.5b-1.5b-llamacpp")
    own = set(np.concatenate([s.y for s in llama_run.streams]).tolist())
    other = set(np.concatenate([s.y for s in torch_run.streams]).tolist())
    case = next((s, t) for s in llama_run.streams for t in np.flatnonzero(s.bits == 0)
                if int(s.draft_argmax[t]) not in own and int(s.draft_argmax[t]) in other)
    app = make_app([streams / "qwen2.5-coder-0.5b-1.5b", streams / "qwen2.5-coder-0.5b-1.5b-llamacpp"], boot=50, shuffles=2)
    async with app.run_test(size=(120, 36)) as pilot:
        await settled(app)
        while "llama.cpp" not in (app.runs[0].meta.get("backend") or {}).get("name", ""):
            await pilot.press("M")
            await settled(app)
        await pilot.press("2")
        await settled(app)
        await app.workers.wait_for_complete()
        await settled(app)
        s, t = case
        shown = next(x for x in app.screen.streams if x.id == s.id and x.corpus == s.corpus)
        line = app.screen.cursor_text(shown, int(t)).splitlines()[2]
        guess = int(s.draft_argmax[t])
        assert line.startswith("draft  '") and f" id {guess}" in line, line
