"""The cross-stack comparison (core/compare/crossstack.py), on synthetic runs with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.compare.crossstack import (
    cross_stack,
    cross_stack_markdown,
)
from specterm.core.claims.equivalence import histogram_test, merge_sparse_bins
from specterm.core.compare.sameposition import common_positions, same_positions
from specterm.core.compare.speclog import capped_walk_accepts, n_predict_for
from specterm.core.store import Run, Stream


def test_merge_sparse_bins_hand_case():
    table, groups = merge_sparse_bins([8, 1, 0, 3, 20], [7, 0, 2, 6, 30], min_column=10)
    # K=0 alone holds 15; K=1,2,3 together 12; K=4 holds 50
    assert groups == [[0], [1, 2, 3], [4]]
    assert table.tolist() == [[8, 4, 20], [7, 8, 30]]
    # a short last column joins the one before it
    table, groups = merge_sparse_bins([20, 1], [20, 2], min_column=10)
    assert groups == [[0, 1]] and table.tolist() == [[21], [22]]


def test_histogram_test_against_the_hand_formula():
    a, b = [30, 10, 5, 55], [50, 12, 8, 30]
    t = histogram_test(a, b)
    obs = np.array([a, b], dtype=float)
    exp = obs.sum(1, keepdims=True) * obs.sum(0, keepdims=True) / obs.sum()
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert t is not None and t.statistic == pytest.approx(chi2) and t.dof == 3
    same = histogram_test(a, a)
    assert same is not None and same.statistic == pytest.approx(0.0) and same.p_value == pytest.approx(1.0)
    assert histogram_test([100, 0], [0, 100]).p_value < 1e-10
    assert histogram_test([0, 0], [5, 5]) is None


def _stream(corpus, sid, bits, y=None):
    bits = np.asarray(bits, dtype=np.uint8)
    return Stream(id=sid, corpus=corpus, bits=bits, gate=np.ones_like(bits),
                  y=np.arange(bits.size, dtype=np.int32) if y is None else np.asarray(y, dtype=np.int32))


def test_cross_stack_on_synthetic_runs():
    rng = np.random.default_rng(0)
    a_streams, b_streams, rows = [], [], []
    for i in range(3):
        bits_a = (rng.random(40) < 0.8).astype(np.uint8)
        bits_b = bits_a.copy()
        bits_b[5] = 1 - bits_b[5]
        y_b = np.arange(40, dtype=np.int32)
        if i == 2:
            y_b[30] = 999  # one prompt's llama.cpp y diverges at token 30
        a_streams.append(_stream("code", f"c{i}", bits_a))
        b_streams.append(_stream("code", f"c{i}", bits_b, y_b))
        g = 4
        N = n_predict_for(40, g)
        walk = capped_walk_accepts(bits_b, g, N)
        real = walk.copy()
        if i == 0:
            real[0] = max(0, real[0] - 1)  # the real decoder rejected one more draft on prompt 0
        rows.append({"corpus": "code", "id": f"c{i}", "tokens": 40, "greedy_s": 4.0, "greedy_cum_s": [0.1 * (t + 1) for t in range(40)],
                     "spec": {"4": {"s": 2.0, "n_predict": N, "tokens_out": int(real.sum() + real.size),
                                    "target_calls": int(real.size), "accepted": real.tolist(), "walk_accepted": walk.tolist(),
                                    "walk_calls": int(walk.size), "walk_tokens": int(walk.sum() + walk.size),
                                    "identical": i != 0}}})
    run_a = Run(path=Path("a"), meta={"name": "a"}, streams=a_streams)
    run_b = Run(path=Path("b"), meta={"name": "b", "backend": {"name": "llama.cpp"},
                                      "confirmations": [{"engine": "llama.cpp", "date": "d", "prompts": rows}]},
                streams=b_streams)
    cs = cross_stack(run_a, run_b, gammas=(1, 4))
    e = cs["corpora"]["code"]
    assert e["prompts"] == 3 and e["same_y"] == 2
    assert e["alpha_a_own"] == pytest.approx(np.mean([s.bits.mean() for s in a_streams]))
    r4 = e["by_gamma"]["4"]
    walk_all = np.concatenate([np.asarray(r["spec"]["4"]["walk_accepted"]) for r in rows])
    assert r4["hist_walk_b"] == np.bincount(walk_all, minlength=5).tolist()
    assert sum(r4["hist_real"]) == sum(r4["hist_walk_b"])  # same number of blocks, one K moved down
    assert r4["agree_real"] == pytest.approx(r4["agree_walk"])  # the prompts whose output agreed
    assert r4["test_real_vs_walk_b"]["p"] > 0.5
    md = cross_stack_markdown(cs, 4)
    assert "| code | 3 |" in md and "Accepted-run histogram at g = 4" in md
    # g = 1 has no real decoding: its missing cells are fmt.MISSING, the one spelling, never "-"
    from specterm.core.report.fmt import MISSING

    tokens_table = md[md.index("Tokens per target call"):]  # (the same-position E table has a g = 1 row too)
    g1 = next(line for line in tokens_table.splitlines() if line.startswith("| code | 1 |"))
    assert f"| {MISSING} |" in g1 and "| - |" not in md


# ------------------------------------------------- issue 35: the same positions, every timed prompt ---


def _Kept(mask: np.ndarray, **fields) -> Stream:
    """A stream whose analysed positions are chosen by hand, as a repaired llama.cpp stream keeps them
    (SPEC 1.3: the positions whose gate still fails excluded one by one: holes, not a cut tail)."""
    return Stream(gate=np.asarray(mask, dtype=np.uint8), repairs=[], **fields)


def _walk_loop(bits, g):
    """SPEC 2's block walk as its loop (independent of the closed form): (tokens, blocks)."""
    n, s, tokens, blocks = len(bits), 0, 0, 0
    while s < n:
        k = 0
        while s + k < min(s + g, n) and bits[s + k] == 1:
            k += 1
        tokens += min(k + 1, n - s)
        blocks += 1
        s += k + 1
    return tokens, blocks


BITS_A = [1, 1, 0, 1, 1, 1, 0, 1, 1, 1]
BITS_B = [1, 0, 0, 1, 1, 1, 1, 0]
KEPT_B = [1, 1, 1, 1, 0, 1, 1, 1]  # position 4 excluded (inside a run of ones), the rest kept


def _pair():
    y_a = np.arange(10, 20, dtype=np.int32)
    y_b = y_a[:8].copy()
    y_b[6] = 99  # the engines' y part at t = 6
    sa = _stream("code", "p", BITS_A, y_a)
    sb = _Kept(id="p", corpus="code", bits=np.asarray(BITS_B, dtype=np.uint8), y=y_b, mask=np.asarray(KEPT_B, bool))
    return sa, sb


def test_common_positions_two_levels_by_hand():
    sa, sb = _pair()
    m = common_positions(sa, sb)
    assert m["kept_by_both"].tolist() == [True, True, True, True, False, True, True, True]  # t < min(10, 8)
    assert np.flatnonzero(m["same_context"]).tolist() == [0, 1, 2, 3, 5]  # y equal up to t = 5, hole at 4
    # a run without y: no position has a known context, the kept positions are still common
    sb.y = None
    m = common_positions(sa, sb)
    assert m["kept_by_both"].sum() == 7 and m["same_context"].sum() == 0


def test_alpha_and_E_on_the_common_positions_by_hand():
    sa, sb = _pair()
    r = same_positions([(sa, sb)], gammas=(1, 2), boot=0)
    k, c = r["kept_by_both"], r["same_context"]
    # kept by both: t = 0,1,2,3,5,6,7 -> A bits 1,1,0,1,1,0,1 (5/7), B bits 1,0,0,1,1,1,0 (4/7)
    assert (k["positions"], k["alpha_a"], k["alpha_b"]) == (7, pytest.approx(5 / 7), pytest.approx(4 / 7))
    assert k["diff"] == pytest.approx(-1 / 7) and k["ci95"] == [None, None]  # one prompt: no interval
    # same context: t = 0,1,2,3,5 -> A 1,1,0,1,1 (4/5), B 1,0,0,1,1 (3/5)
    assert (c["positions"], c["alpha_a"], c["alpha_b"]) == (5, pytest.approx(4 / 5), pytest.approx(3 / 5))
    # the walk on the bits at those positions, holes closed up: A at g = 2 on 1,1,0,1,1,0,1 is
    # blocks [1,1,0] [1,1,0] [1] -> 7 tokens in 3 blocks (split at the hole it would be 7 in 4)
    assert k["E"]["2"]["a"] == pytest.approx(7 / 3)
    for level, ma in (("kept_by_both", [0, 1, 2, 3, 5, 6, 7]), ("same_context", [0, 1, 2, 3, 5])):
        for g in (1, 2):
            for eng, bits in (("a", BITS_A), ("b", BITS_B)):
                t, b = _walk_loop([bits[i] for i in ma], g)
                assert r[level]["E"][str(g)][eng] == pytest.approx(t / b), (level, g, eng)


def test_same_position_interval_over_prompts():
    # every prompt has the same difference on the same number of positions: every resample gives it
    pairs = []
    for i in range(4):
        a = np.array([1, 1, 1, 1, 0, 1, 1, 1], dtype=np.uint8)
        b = a.copy()
        b[i] = 0  # one more rejection in engine B on each prompt
        pairs.append((_stream("code", f"p{i}", a), _stream("code", f"p{i}", b)))
    r = same_positions(pairs, gammas=(1,), boot=200)["same_context"]
    assert r["positions"] == 32 and r["diff"] == pytest.approx(-1 / 8)
    assert r["ci95"] == [pytest.approx(-1 / 8), pytest.approx(-1 / 8)]
    # prompts that disagree: the interval spans their per-prompt differences, around the pooled one
    pairs[0] = (pairs[0][0], _stream("code", "p0", pairs[0][0].bits))
    r = same_positions(pairs, gammas=(1,), boot=500)["kept_by_both"]
    assert r["diff"] == pytest.approx(-3 / 32)
    assert -1 / 8 <= r["ci95"][0] < r["diff"] < r["ci95"][1] <= 0


def _timed_row(corpus, sid, bits, g, real_drop=0, identical=True, first_mismatch=None):
    """One confirmation prompt row at g: the walk llama.cpp makes on `bits`, the real decoder's blocks
    (its first block `real_drop` drafts shorter), and whether its output equalled y."""
    N = n_predict_for(len(bits), g)
    walk = capped_walk_accepts(np.asarray(bits, dtype=np.uint8), g, N)
    real = walk.copy()
    real[0] = max(0, real[0] - real_drop)
    return {"corpus": corpus, "id": sid, "tokens": len(bits), "greedy_s": 1.0,
            "spec": {str(g): {"s": 1.0, "n_predict": N, "tokens_out": int(real.sum() + real.size),
                              "target_calls": int(real.size), "accepted": real.tolist(), "walk_accepted": walk.tolist(),
                              "walk_calls": int(walk.size), "walk_tokens": int(walk.sum() + walk.size),
                              "identical": identical, "first_mismatch": first_mismatch}}}


def test_cross_stack_counts_same_positions_and_compares_every_timed_prompt():
    rng = np.random.default_rng(1)
    a_streams, b_streams, rows = [], [], []
    for corpus in ("code", "prose"):
        for i in range(3):
            bits_a = (rng.random(40) < 0.7).astype(np.uint8)
            bits_b = bits_a.copy()
            bits_b[10 + i] = 1 - bits_b[10 + i]
            y_a = np.arange(40, dtype=np.int32)
            y_b = y_a.copy()
            if i == 1:
                y_b[20] = 999  # this prompt's y parts at t = 20
            mask = np.ones(40, dtype=bool)
            mask[[5, 30]] = False  # excluded one by one in B
            a_streams.append(_stream(corpus, f"{corpus}{i}", bits_a, y_a))
            b_streams.append(_Kept(id=f"{corpus}{i}", corpus=corpus, bits=bits_b, y=y_b, mask=mask))
            # the real decoder's output differs from y on prompts 0 and 2 (and it rejected more there)
            rows.append(_timed_row(corpus, f"{corpus}{i}", bits_b, 4, real_drop=1 if i != 1 else 0,
                                   identical=i == 1, first_mismatch=None if i == 1 else 8 + 4 * i))
    a_streams.append(_stream("code", "only-a", [1, 1, 0]))  # a prompt in one run only
    b_streams.append(_stream("prose", "only-b", [1, 0, 1]))
    run_a = Run(path=Path("a"), meta={"name": "a"}, streams=a_streams)
    run_b = Run(path=Path("b"), meta={"name": "b", "backend": {"name": "llama.cpp"},
                                      "confirmations": [{"engine": "llama.cpp", "date": "d", "prompts": rows}]},
                streams=b_streams)
    cs = cross_stack(run_a, run_b, gammas=(4,))
    code = cs["corpora"]["code"]
    assert code["prompts"] == 3 and (code["prompts_only_a"], code["prompts_only_b"]) == (1, 0)
    assert cs["corpora"]["prose"]["prompts_only_b"] == 1
    kb, sc = code["same_positions"]["kept_by_both"], code["same_positions"]["same_context"]
    assert kb["positions"] == 3 * 38  # 40 each, 2 holes in B
    assert sc["positions"] == 38 + 19 + 38  # prompt 1: t < 20, minus the hole at 5
    keep = [np.flatnonzero(s.kept) for s in b_streams[:3]]
    hand_a = sum(int(a_streams[i].bits[keep[i]].sum()) for i in range(3)) / kb["positions"]
    hand_b = sum(int(b_streams[i].bits[keep[i]].sum()) for i in range(3)) / kb["positions"]
    assert kb["alpha_a"] == pytest.approx(hand_a) and kb["alpha_b"] == pytest.approx(hand_b)
    t, b = map(sum, zip(*(_walk_loop(a_streams[i].bits[keep[i]].tolist(), 4) for i in range(3))))
    assert kb["E"]["4"]["a"] == pytest.approx(t / b)
    pooled = cs["same_positions_pooled"]["kept_by_both"]
    assert pooled["positions"] == 6 * 38 and pooled["prompts"] == 6
    # each run on its own kept positions: B's alpha over its kept positions (the prompt only in B is not shared)
    assert code["positions_b_kept"] == 3 * 38 and code["streams_b_excluding"] == 3
    # tokens per target call over EVERY timed prompt, those whose output differs from y included
    r4 = code["by_gamma"]["4"]
    sp = [r["spec"]["4"] for r in rows if r["corpus"] == "code"]
    assert r4["real_prompts"] == 3 and r4["paired"]["prompts"] == 3
    assert r4["real_tokens_per_call"] == pytest.approx(sum(x["tokens_out"] for x in sp) / sum(x["target_calls"] for x in sp))
    assert r4["walk_b_same_prompts"] == pytest.approx(sum(x["walk_tokens"] for x in sp) / sum(x["walk_calls"] for x in sp))
    assert r4["real_tokens_per_call"] < r4["walk_b_same_prompts"]  # the differing prompts count: they rejected more
    assert (r4["real_differ"], r4["real_first_mismatch_median"]) == (2, 12.0)  # first mismatches 8 and 16
    md = cross_stack_markdown(cs, 4)
    assert "EVERY timed prompt, whether or not its output equalled the stored y" in md
    assert "| code | 4 |" in md and "| 3 | 2/3 (12) |" in md
    assert f"| code | 3 (+1 only in torch, +0 only in llama.cpp) | {3 * 38} |" in md
    assert f"| pooled | 6 (+1 only in torch, +1 only in llama.cpp) | {6 * 38} |" in md
    assert "own kept positions" in md and "not a same-position comparison" in md


def test_llamacpp_result_extras_count_every_prompt_and_its_flips():
    from specterm.engines.llamacpp.confirm_llamacpp import result_extras

    rows = [_timed_row("code", f"c{i}", [1, 1, 0, 1] * 10, 4, real_drop=i % 2, identical=i == 0,
                       first_mismatch=None if i == 0 else 3 * i) for i in range(4)]
    sp = [r["spec"]["4"] for r in rows]
    for x in sp:
        x["histogram"], x["histogram_walk"] = [0] * 5, [0] * 5
    real = sum(x["tokens_out"] for x in sp) / sum(x["target_calls"] for x in sp)
    out = result_extras(sp, {"tokens_per_call": real, "realized": 1.0})
    walk = sum(x["walk_tokens"] for x in sp) / sum(x["walk_calls"] for x in sp)
    assert out["tokens_per_call_walk"] == pytest.approx(walk) and out["tokens_per_call_gap"] == pytest.approx(real / walk - 1)
    assert out["differ_prompts"] == 3 and out["first_mismatch_median"] == 6.0  # mismatches at 3, 6, 9
