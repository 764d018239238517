"""The cross-stack comparison (core/crossstack.py), on synthetic runs with known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.crossstack import (
    cross_stack,
    cross_stack_markdown,
    histogram_test,
    merge_sparse_bins,
)
from specterm.core.speclog import capped_walk_accepts, n_predict_for
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
    assert e["alpha_a"] == pytest.approx(np.mean([s.bits.mean() for s in a_streams]))
    r4 = e["by_gamma"]["4"]
    walk_all = np.concatenate([np.asarray(r["spec"]["4"]["walk_accepted"]) for r in rows])
    assert r4["hist_walk_b"] == np.bincount(walk_all, minlength=5).tolist()
    assert sum(r4["hist_real"]) == sum(r4["hist_walk_b"])  # same number of blocks, one K moved down
    assert r4["agree_real"] == pytest.approx(r4["agree_walk"])  # the prompts whose output agreed
    assert r4["test_real_vs_walk_b"]["p"] > 0.5
    md = cross_stack_markdown(cs, 4)
    assert "| code | 3 |" in md and "Accepted-run histogram at g = 4" in md
    # g = 1 has no real decoding: its missing cells are fmt.MISSING, the one spelling, never "-"
    from specterm.core.fmt import MISSING

    g1 = next(line for line in md.splitlines() if line.startswith("| code | 1 |"))
    assert f"| {MISSING} |" in g1 and "| - |" not in md
