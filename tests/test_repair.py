"""SPEC 1.3's repair loop (engines/repair.py) and its llama.cpp wiring, on a hand-made engine.

The toy target over 8 ids (7 = EOS) has one clear winner per context, serial_next(ctx); a *batched*
row (a decode of more than one token, as the teacher-forced pass is) at a chosen context length
picks another token instead, a near-tie that flips:

- "next": the runner-up (winner + 1) mod 7, a flip that stays put once y holds it;
- "eos": the end-of-generation token (the repaired y ends there);
- "anti": whichever of winner and runner-up the row's next token in the batch is *not* (a flip that
  keeps coming back: the loop hits its bound and the position is excluded on its own).

Expected streams are built by hand-written loops over those rules, never by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specterm.core.store import Stream, load_run, new_meta, record_line, write_run
from specterm.core.store.records import decode_line
from specterm.engines.repair import REPAIR_BOUND, repair_greedy

V = 8
EOS = 7
PROMPT = [1, 2, 3, 4]  # prompt ids: t = len(ctx) - 4
P = len(PROMPT)


def serial_next(ctx: list[int]) -> int:
    """The toy target's clear winner after `ctx` (never EOS)."""
    return (3 * sum(ctx) + len(ctx)) % 7


def batched_choice(ctx: list[int], near: dict[int, str], nxt: int | None) -> int:
    """What a batched row after ctx picks: the winner unless len(ctx) is a near-tie of `near`."""
    a = serial_next(ctx)
    rule = near.get(len(ctx))
    if rule == "next":
        return (a + 1) % 7
    if rule == "eos":
        return EOS
    if rule == "anti" and nxt is not None:
        return (a + 1) % 7 if nxt == a else a
    return a


def serial_y(prefix: list[int], max_new: int, prompt: list[int] = PROMPT) -> list[int]:
    """The serial greedy continuation of prompt + prefix (the tokens after prefix), stop at EOS or max_new."""
    y = list(prefix)
    while not y or (y[-1] != EOS and len(y) < max_new):
        y.append(serial_next(prompt + y))
    return y[len(prefix):]


def teacher_argmax(near):
    def f(y: list[int]) -> np.ndarray:
        return np.array([batched_choice(PROMPT + y[:t], near, y[t]) for t in range(len(y))])
    return f


def regenerate(max_new):
    def f(prefix: list[int]) -> list[int]:
        if prefix[-1] == EOS or len(prefix) >= max_new:
            return []
        return serial_y(prefix, max_new)
    return f


def teacher_greedy(near: dict[int, str], max_new: int, prompt: list[int] = PROMPT) -> list[int]:
    """y decoded greedily with the batched row's choice at every step (causal rules only)."""
    y: list[int] = []
    while not y or (y[-1] != EOS and len(y) < max_new):
        y.append(batched_choice(prompt + y, near, None))
    return y


# ---------------------------------------------------------------------------------- the loop ---

def test_a_gate_that_holds_is_left_alone():
    y = serial_y([], 16)
    calls = []
    rep = repair_greedy(y, teacher_argmax({}), lambda p: calls.append(p) or [])
    assert rep.y == y and rep.flips == [] and rep.rounds == 0 and rep.gate.all() and calls == []


def test_flips_at_known_near_ties_and_the_tail_is_regenerated():
    near = {P + 3: "next", P + 9: "next"}
    y0 = serial_y([], 16)
    assert len(y0) == 16
    rep = repair_greedy(y0, teacher_argmax(near), regenerate(16))
    assert rep.flips == [3, 9] and rep.rounds == 2 and rep.gate.all()
    assert rep.y == teacher_greedy(near, 16)
    assert rep.y[:3] == y0[:3] and rep.y[3] == (y0[3] + 1) % 7  # the prefix kept, the teacher-forced token at 3
    assert rep.y[4:9] == serial_y(rep.y[:4], 16)[:5]  # the tail regenerated serially from the flipped token
    assert rep.y[3] != y0[3] and rep.y[9] == (serial_next(PROMPT + rep.y[:9]) + 1) % 7


def test_a_flip_to_eos_ends_the_stream_there():
    near = {P + 3: "next", P + 6: "eos", P + 11: "next"}
    rep = repair_greedy(serial_y([], 16), teacher_argmax(near), regenerate(16))
    assert rep.y == teacher_greedy(near, 16) and len(rep.y) == 7 and rep.y[-1] == EOS
    assert rep.flips == [3, 6] and rep.gate.all()


def test_a_flip_that_keeps_coming_back_stops_at_the_bound_and_only_it_fails():
    near = {P + 5: "anti", P + 10: "next"}
    y0 = serial_y([], 16)
    seen = []
    rep = repair_greedy(y0, teacher_argmax(near), regenerate(16), on_repair=lambda k, t: seen.append((k, t)))
    assert rep.rounds == REPAIR_BOUND and seen == [(k, 5) for k in range(1, REPAIR_BOUND + 1)]
    assert rep.flips == [5]  # every repair at 5 regenerates the tail: no later flip survives it
    assert rep.bound_reached and np.flatnonzero(rep.gate == 0).tolist() == [5, 10]
    rep2 = repair_greedy(y0, teacher_argmax(near), regenerate(16), bound=3)
    assert rep2.rounds == 3 and rep2.flips == [5]


def test_an_earlier_failure_drops_the_later_flips():
    """A pass whose rows before a flip change (llama.cpp: a different batch length) fails earlier:
    the repair there regenerates the tail, so the later flip is no longer in y."""
    y0 = serial_y([], 12)
    passes = iter([
        np.array([*y0[:6], (y0[6] + 1) % 7, *y0[7:]]),  # first pass: fails at 6
        None,  # second pass: fails at 2 (filled below)
        None,
    ])
    state = {}

    def teacher(y):
        k = state.setdefault("k", 0)
        state["k"] = k + 1
        if k == 0:
            return next(passes)
        if k == 1:
            am = np.array(y)
            am[2] = (y[2] + 1) % 7
            return am
        return np.array(y)

    rep = repair_greedy(y0, teacher, regenerate(12))
    assert rep.flips == [2] and rep.rounds == 2 and rep.gate.all()
    assert rep.y[:2] == y0[:2] and rep.y[2] == (y0[2] + 1) % 7 and rep.y[3:] == serial_y(rep.y[:3], 12)


# -------------------------------------------------------------------------- stored records ---

def _stream(bits, gate, repairs=None, **kw) -> Stream:
    n = len(bits)
    y = np.arange(n, dtype=np.int32) % 5
    bits = np.asarray(bits, dtype=np.uint8)
    return Stream(id="p", corpus="code", bits=bits, gate=np.asarray(gate, dtype=np.uint8), y=y,
                  draft_argmax=np.where(bits == 1, y, (y + 1) % 5).astype(np.int32),
                  beta=np.linspace(0.1, 0.9, n).astype(np.float32), repairs=repairs, **kw)


def test_kept_is_the_gate_one_by_one_with_repairs_and_the_prefix_rule_without():
    bits = [1, 1, 0, 1, 1, 0, 1, 1]
    gate = [1, 1, 1, 0, 1, 1, 0, 1]
    old = _stream(bits, gate)
    assert old.kept.tolist() == [True] * 3 + [False] * 5 and old.a.tolist() == [1, 1, 0] and old.valid_len == 3
    new = _stream(bits, gate, repairs=[2])
    assert new.kept.tolist() == [bool(g) for g in gate]
    assert new.a.tolist() == [1, 1, 0, 1, 0, 1] and new.valid_len == 6 and new.excluded.tolist() == [3, 6]
    assert new.kept_t.tolist() == [0, 1, 2, 4, 5, 7] and new.analysed_span == 8 and not new.contiguous
    np.testing.assert_array_equal(new.analysed(new.beta), new.beta[[0, 1, 2, 4, 5, 7]])


def test_repaired_records_round_trip_with_checksums(tmp_path):
    s = _stream([1, 0, 1, 1], [1, 1, 0, 1], repairs=[1, 3])
    line = record_line(s)
    rec = json.loads(line)
    assert rec["repairs"] == [1, 3] and len(rec["checksum"]) == 16
    back = decode_line(line, "x", require_checksum=True)
    assert back.repairs == [1, 3] and back.kept.tolist() == [True, True, False, True]
    rec["repairs"] = [1, 2]  # an edit the checksum catches
    with pytest.raises(Exception, match="checksum"):
        decode_line(json.dumps(rec).encode(), "x")
    other = _stream([1, 1], [1, 0])
    other.id = "q"
    path = write_run(tmp_path / "r", new_meta("r"), [s, other])
    assert [st.repairs for st in load_run(path).streams] == [[1, 3], None]


def test_old_records_keep_the_prefix_rule_and_their_bytes():
    s = _stream([1, 0, 1, 1], [1, 0, 1, 1])
    line = record_line(s)
    assert b"repairs" not in line  # a stream never repaired is written as before the field existed
    back = decode_line(line, "x", require_checksum=True)
    assert back.repairs is None and back.a.tolist() == [1] and back.valid_len == 1


@pytest.mark.parametrize("bad", [[3, 1], [0, 0], [-1], [4], ["1"], [True], "1", {"t": 1}])
def test_invalid_repairs_are_refused_in_one_sentence(bad):
    rec = _stream([1, 0, 1, 1], [1, 1, 1, 1], repairs=[0]).to_record()
    rec["repairs"] = bad
    with pytest.raises(Exception, match="repairs"):
        decode_line(json.dumps(rec).encode(), "x")


# ----------------------------------------------------------------------- analysis on kept ---

def test_analysis_drops_an_excluded_mid_position():
    """One repaired stream, gate failing at t = 3 only: alpha = ones / kept positions, E_true(g) the
    block walk of bits without position 3 (a hand loop of SPEC 2), the warm-up bins by absolute t."""
    from specterm.core.report.analysis import analyse
    from specterm.core.store import Run

    rng = np.random.default_rng(3)
    n = 40
    bits = (rng.random(n) < 0.7).astype(np.uint8)
    gate = np.ones(n, dtype=np.uint8)
    gate[3] = 0
    s = _stream(bits, gate, repairs=[1, 3])
    s.run = "r"
    a = np.delete(bits, 3)

    def walk(a, g):
        s_, tokens, blocks = 0, 0, 0
        while s_ < len(a):
            k = 0
            while k < g and s_ + k < len(a) and a[s_ + k] == 1:
                k += 1
            tokens += min(k + 1, len(a) - s_)
            blocks += 1
            s_ += k + 1
        return tokens / blocks

    rep = analyse([Run(path=Path("r"), meta={"name": "r"}, streams=[s])], boot=0, shuffles=0)
    code = rep.sets["code"]
    assert code.n_positions == n - 1 and code.n_positions_gated_out == 1
    assert code.alpha == pytest.approx(a.sum() / (n - 1))
    for g, E in zip(code.curve.gamma, code.curve.E_true):
        assert E == pytest.approx(walk(a, g))
    bins = code.position.bins
    # bin 0 holds t = 0..15 without t = 3: 15 positions; bin 1 holds t = 16..31 whole
    assert bins[0].n == 15 and bins[0].alpha.value == pytest.approx(np.delete(bits[:16], 3).mean())
    assert bins[1].n == 16 and bins[1].alpha.value == pytest.approx(bits[16:32].mean())
    gain = bits[32:].mean() - np.delete(bits[:16], 3).mean()
    assert code.position.warmup_gain.value == pytest.approx(gain)


def test_report_counts_repairs_per_set_and_round_trips():
    from specterm.core.report.analysis import analyse
    from specterm.core.report.export import to_markdown
    from specterm.core.report.types import Report
    from specterm.core.store import Run

    a = _stream([1, 0, 1, 1, 1, 0], [1, 1, 0, 1, 1, 1], repairs=[1, 4])
    b = _stream([1, 1, 1, 1], [1, 1, 1, 1], repairs=[])
    b.id = "q"
    old = _stream([1, 1, 0, 1], [1, 0, 1, 1])  # no repair information: the prefix rule, not counted
    old.id, old.corpus = "o", "prose"
    report = analyse([Run(path=Path("r"), meta={"name": "r"}, streams=[a, b, old])], boot=0, shuffles=0)
    code = report.sets["code"]
    assert (code.repairs.streams, code.repairs.repaired, code.repairs.repairs, code.repairs.excluded) == (2, 1, 2, 1)
    assert report.sets["prose"].repairs is None and report.sets["prose"].n_positions == 1
    assert report.sets["pooled"].repairs.streams == 2
    d = report.to_dict()
    assert d["sets"]["code"]["repairs"] == {"streams": 2, "repaired": 1, "repairs": 2, "excluded": 1}
    assert Report.from_dict(d).sets["code"].repairs == code.repairs
    assert "| code | 2 | 1 | 2 | 1 |" in to_markdown(report)


def test_position_sums_at_given_t_equal_the_contiguous_path():
    from specterm.core.streams.position import position_sums

    rng = np.random.default_rng(7)
    a = [(rng.random(n) < 0.6).astype(np.uint8) for n in (5, 40, 33, 0, 70)]
    fast = position_sums(a, n_bins=5)
    given = position_sums(a, n_bins=5, t=[np.arange(x.size) for x in a])
    np.testing.assert_allclose(given.M, fast.M)


def test_streams_screen_cells_show_repairs_and_exclusions():
    from specterm.screens.streams import prompt_cells, repair_note

    s = _stream([1, 0, 1, 1, 1, 0], [1, 1, 0, 1, 1, 1], repairs=[1, 4])
    cells = prompt_cells(s)
    assert str(cells[2]) == "5/6" and str(cells[3]) == "0.833 r2"
    note = repair_note(s)
    assert "2 repair(s) at t = 1, 4" in note and "1 excluded (gate still fails) at t = 2" in note
    assert repair_note(_stream([1, 1], [1, 1], repairs=[])) == "  no repairs"
    assert "gate fails at t = 1" in repair_note(_stream([1, 1, 1], [1, 0, 1]))
