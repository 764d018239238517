"""Policy replays against hand-worked cases, literal per-depth reference loops, and the clairvoyant bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import markov_bits
from specterm.core.streams.blockwalk import block_walk_loop
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.errors import SpectermError
from specterm.core.report import analysis
from specterm.core.decide import policies
from specterm.core.decide.policies import best_fixed_gamma, fixed_sums, has_draft_conf, policy_sums, policy_summary, policy_table
from specterm.core.decide.replay import PolicyCounts, replay_clairvoyant, replay_confidence, replay_fixed, replay_heuristic
from specterm.core.store import Run, Stream, bits_from_str


def iid_stream(rng, n, alpha):
    return (rng.random(n) < alpha).astype(np.uint8)


def conf_for(rng, a):
    """Confidence that is informative but noisy: higher where the draft is right."""
    return np.where(a == 1, rng.uniform(0.35, 1.0, a.size), rng.uniform(0.0, 0.75, a.size)).astype(np.float32)


def synthetic(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for alpha in (0.2, 0.6, 0.9):
        out.append(iid_stream(rng, int(rng.integers(1, 300)), alpha))
    for p11, p10 in ((0.95, 0.3), (0.8, 0.6), (0.99, 0.05)):
        out.append(markov_bits(rng, int(rng.integers(1, 300)), p11, p10))
    out += [np.ones(17, np.uint8), np.zeros(9, np.uint8), np.array([1], np.uint8), np.array([0], np.uint8)]
    return [(a, conf_for(rng, a)) for a in out]


# ------------------------------------------------------------------ literal reference decoders ---


def live_decoder(bits, choose_depth, update=lambda g, k: g, g0=0):
    """Simulate a greedy speculative decoder depth by depth: at each depth ask whether to draft,
    compare the draft token with y (a_t), stop at the first rejection; the target adds one token."""
    a = list(map(int, bits))
    n = len(a)
    s, g, tokens, accepts, drafts = 0, g0, 0, [], []
    while s < n:
        d = choose_depth(s, g)
        k = 0
        while k < d and s + k < n and a[s + k] == 1:
            k += 1
        tokens += min(k + 1, n - s)
        accepts.append(k)
        drafts.append(d)
        s += k + 1
        g = update(g, k)
    return PolicyCounts(tokens, len(accepts), sum(drafts), np.array(accepts, dtype=np.int64), np.array(drafts, dtype=np.int64))


def confidence_depth(conf, tau, g_max, inclusive=False):
    def choose(s, _g):
        d = 0
        while d < g_max:
            t = s + d
            ok = t >= len(conf) or conf[t] >= tau  # past the end counts as confident (documented choice)
            if not ok:
                return d + 1 if inclusive else d
            d += 1
        return d
    return choose


# ------------------------------------------------------------------------------- fixed g ---


def test_fixed_equals_the_spec_loop_and_per_block_accepts():
    for a, _ in synthetic(1):
        for g in (0, 1, 2, 3, 5, 8, 31):
            c = replay_fixed(a, g)
            assert (c.tokens, c.blocks, c.drafted) == block_walk_loop(a, g)
            ref = live_decoder(a, lambda s, _g, g=g: g)
            assert c == ref
            assert c.tokens == a.size


def test_fixed_rejects_negative_gamma():
    with pytest.raises(SpectermError):
        replay_fixed(np.ones(3, np.uint8), -1)


# ----------------------------------------------------------------------------- heuristic ---


def test_heuristic_hand_checked():
    # bits (n = 12):   1 1 | 0 1 1 1 1 | 1 | 0 | 0 | 1 1   g0 = 2
    # s=0,  g=2: a0..a1 = 11         -> k=2 == g, tokens 3 (y1..y3), s=3,  next g = 4
    # s=3,  g=4: a3..a6 = 1111       -> k=4 == g, tokens 5,          s=8,  next g = 6
    # s=8,  g=6: a8 = 0              -> k=0,      tokens 1,          s=9,  next g = 5
    # s=9,  g=5: a9 = 0              -> k=0,      tokens 1,          s=10, next g = 4
    # s=10, g=4: a10..a11 = 11 (end) -> k=2,      tokens min(3, 2)=2, s=13: done (cut by the horizon)
    a = bits_from_str("110111110011")
    c = replay_heuristic(a, g0=2)
    assert c.accepts.tolist() == [2, 4, 0, 0, 2]
    assert c.drafts.tolist() == [2, 4, 6, 5, 4]
    assert (c.tokens, c.blocks, c.drafted) == (12, 5, 21)


def test_heuristic_floor():
    # all rejections from g0 = 3: 3, 2, 1, 1, 1 (floor 1); with g_min = 2: 3, 2, 2, 2, 2
    a = np.zeros(5, np.uint8)
    assert replay_heuristic(a, g0=3).drafts.tolist() == [3, 2, 1, 1, 1]
    assert replay_heuristic(a, g0=3, g_min=2).drafts.tolist() == [3, 2, 2, 2, 2]
    assert replay_heuristic(a, g0=3).tokens == 5


def test_heuristic_equals_a_live_decoder():
    for a, _ in synthetic(2):
        for g0 in (1, 2, 5, 9):
            ref = live_decoder(a, lambda s, g: g, lambda g, k: g + 2 if k == g else max(1, g - 1), g0=g0)
            assert replay_heuristic(a, g0) == ref


# ---------------------------------------------------------------------------- confidence ---


def test_confidence_hand_checked():
    # bits 1 1 0 1 1 1, conf .9 .9 .9 .2 .9 .9, tau .5, g_max 16
    # s=0: conf[0..2] pass, conf[3] fails -> depth 3; ones ahead 2 -> k=2, tokens 3, s=3
    # s=3: conf[3] fails                   -> depth 0 (plain step), k=0, tokens 1, s=4
    # s=4: conf[4..5] pass, then the end   -> depth 16; k=2, tokens min(3, 2) = 2, s=7
    a = bits_from_str("110111")
    conf = np.array([0.9, 0.9, 0.9, 0.2, 0.9, 0.9], np.float32)
    c = replay_confidence(a, conf, 0.5)
    assert c.accepts.tolist() == [2, 0, 2] and c.drafts.tolist() == [3, 0, 16]
    assert (c.tokens, c.blocks, c.drafted) == (6, 3, 19)
    # inclusive (HF): the first unconfident token is still proposed
    # s=0: depth 4, k=2, s=3;  s=3: depth 1, k=1, tokens 2, s=5;  s=5: depth 16, k=1, tokens 1, s=7
    c = replay_confidence(a, conf, 0.5, inclusive=True)
    assert c.accepts.tolist() == [2, 1, 1] and c.drafts.tolist() == [4, 1, 16]
    assert (c.tokens, c.blocks, c.drafted) == (6, 3, 21)


def test_confidence_tau_zero_is_fixed_g_max():
    for a, conf in synthetic(3):
        for g_max in (1, 4, 16):
            assert replay_confidence(a, conf, 0.0, g_max) == replay_fixed(a, g_max)


def test_confidence_tau_above_one_never_drafts():
    for a, conf in synthetic(4):
        c = replay_confidence(a, conf, 1.01)
        assert (c.tokens, c.blocks, c.drafted) == (a.size, a.size, 0)
        assert not c.accepts.any() and not c.drafts.any()
        # inclusive variant proposes exactly the first token each block: fixed g = 1
        assert replay_confidence(a, conf, 1.01, 16, inclusive=True) == replay_fixed(a, 1)


def test_confidence_equals_a_live_decoder():
    for a, conf in synthetic(5):
        for tau in (0.2, 0.5, 0.8, 0.95):
            for g_max in (1, 3, 16):
                for inclusive in (False, True):
                    ref = live_decoder(a, confidence_depth(conf, tau, g_max, inclusive))
                    assert replay_confidence(a, conf, tau, g_max, inclusive) == ref


def test_confidence_length_mismatch_is_a_clear_error():
    with pytest.raises(SpectermError):
        replay_confidence(np.ones(4, np.uint8), np.ones(3), 0.5)


# --------------------------------------------------------------------------- clairvoyant ---


def test_clairvoyant_hand_checked():
    # 11 0 | 111 0 | 111 : closed runs L = 2, 3 -> blocks drafting 2, 3 yielding 3, 4;
    # trailing run of 3 -> one block drafting 2 yielding 3 (the last token from the target)
    c = replay_clairvoyant(bits_from_str("1101110111"))
    assert c.accepts.tolist() == [2, 3, 2] and c.drafts.tolist() == [2, 3, 2]
    assert (c.tokens, c.blocks, c.drafted) == (10, 3, 7)
    assert c == live_decoder(bits_from_str("1101110111"), lambda s, _g, a="1101110111": _to_rejection(a, s))


def _to_rejection(a, s):
    d = 0
    while s + d < len(a) and a[s + d] == "1":
        d += 1
    return d if s + d < len(a) else d - 1  # a run reaching the end: the last token comes from the target


def test_clairvoyant_beats_every_policy_at_every_r():
    r_grid = np.linspace(0.0, 1.0, 21)
    for seed in (6, 7):
        streams = synthetic(seed)
        others: dict[str, list[PolicyCounts]] = {}
        for a, conf in streams:
            cands = [replay_fixed(a, g) for g in range(0, 33)]
            cands += [replay_heuristic(a, g0) for g0 in (1, 3, 5, 10)]
            cands += [replay_confidence(a, conf, tau, gm, inc) for tau in (0.0, 0.3, 0.5, 0.7, 0.9, 1.1)
                      for gm in (2, 16) for inc in (False, True)]
            others[id(a)] = cands
            clair = replay_clairvoyant(a)
            assert all(c.tokens == clair.tokens == a.size for c in cands)
            for r in r_grid:
                best_other = max(c.throughput(r) for c in cands)
                assert clair.throughput(r) >= best_other - 1e-12, (a, r)
        # pooled over streams too (a ratio of sums)
        for j in range(len(next(iter(others.values())))):
            tot = np.array([[c[j].tokens, c[j].blocks, c[j].drafted] for c in others.values()]).sum(0)
            ctot = np.array([[replay_clairvoyant(a).tokens, replay_clairvoyant(a).blocks, replay_clairvoyant(a).drafted]
                             for a, _ in streams]).sum(0)
            for r in r_grid:
                assert ctot[0] / (ctot[1] + r * ctot[2]) >= tot[0] / (tot[1] + r * tot[2]) - 1e-12


# ---------------------------------------------------------------------------- the summary ---


def make_streams(seed=8, n_streams=24, with_conf=True):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_streams):
        if i % 2:
            a = markov_bits(rng, int(rng.integers(40, 200)), 0.9, 0.35)
        else:
            a = iid_stream(rng, int(rng.integers(40, 200)), rng.uniform(0.4, 0.9))
        out.append(Stream(id=f"p{i}", corpus="c", bits=a, draft_conf=conf_for(rng, a) if with_conf else None))
    return out


def test_summary_rows_best_fixed_and_cis():
    streams = make_streams()
    r = 0.15
    W = multinomial_weights(len(streams), 400, seed=1)
    rows = policy_summary(streams, r, W, gammas=(4,), taus=(0.5, 0.9))
    assert [row.policy for row in rows] == ["fixed", "best-fixed", "heuristic", "confidence", "confidence", "clairvoyant"]

    # best fixed g by brute force over the SPEC loop
    tot = np.array([[sum(block_walk_loop(s.bits, g)[k] for s in streams) for k in range(3)] for g in range(1, 33)])
    T = tot[:, 0] / (tot[:, 1] + r * tot[:, 2])
    assert rows[1].params["gamma"] == int(np.argmax(T)) + 1
    assert rows[1].throughput.value == pytest.approx(T.max())
    assert rows[0].throughput.value == pytest.approx(T[3])
    assert rows[1].vs_best_fixed.value == pytest.approx(1.0)
    assert rows[-1].vs_clairvoyant.value == pytest.approx(1.0)

    for row in rows:
        for key in ("throughput", "vs_best_fixed", "vs_clairvoyant"):
            lo, hi = getattr(row, key).ci
            assert lo - 1e-12 <= getattr(row, key).value <= hi + 1e-12, (row.policy, key)
        assert row.vs_clairvoyant.ci[1] <= 1.0 + 1e-12
        assert row.vs_clairvoyant.value <= 1.0 + 1e-12


def test_summary_ci_is_the_resampled_ratio():
    streams = make_streams(seed=9, n_streams=10)
    r = 0.3
    W = multinomial_weights(len(streams), 200, seed=2)
    rows = policy_summary(streams, r, W, taus=(0.7,))
    heur = next(row for row in rows if row.policy == "heuristic")
    h = np.array([[c.tokens, c.blocks, c.drafted] for c in (replay_heuristic(s.bits, 5) for s in streams)], float)
    cl = np.array([[c.tokens, c.blocks, c.drafted] for c in (replay_clairvoyant(s.bits) for s in streams)], float)
    Th, Tc = [], []
    for w in W:  # one resample at a time, the slow way
        hs, cs = (w[:, None] * h).sum(0), (w[:, None] * cl).sum(0)
        Th.append(hs[0] / (hs[1] + r * hs[2]))
        Tc.append(cs[0] / (cs[1] + r * cs[2]))
    assert heur.throughput.ci == pytest.approx(list(percentile_ci(np.array(Th))))
    assert heur.vs_clairvoyant.ci == pytest.approx(list(percentile_ci(np.array(Th) / np.array(Tc))))
    assert heur.tokens_per_block == pytest.approx(h[:, 0].sum() / h[:, 1].sum())
    assert heur.drafted_per_block == pytest.approx(h[:, 2].sum() / h[:, 1].sum())


def test_summary_without_draft_conf_omits_confidence_rows():
    streams = make_streams(seed=10, n_streams=6)
    streams[2].draft_conf = None
    assert not has_draft_conf(streams)
    rows = policy_summary(streams, 0.1, multinomial_weights(6, 50))
    assert "confidence" not in {row.policy for row in rows}
    assert {"best-fixed", "heuristic", "clairvoyant"} <= {row.policy for row in rows}


def test_summary_uses_the_gated_prefix_only():
    rng = np.random.default_rng(11)
    a = iid_stream(rng, 80, 0.7)
    gate = np.ones(80, np.uint8)
    gate[50] = 0
    s = Stream(id="x", corpus="c", bits=a, gate=gate, draft_conf=conf_for(rng, a))
    rows = policy_summary([s], 0.1, multinomial_weights(1, 10))
    clair = rows[-1]
    c = replay_clairvoyant(a[:50])
    assert clair.tokens_per_block == pytest.approx(50 / c.blocks)


def test_summary_rejects_a_bad_r():
    with pytest.raises(SpectermError):
        policy_summary(make_streams(n_streams=2), -0.1, multinomial_weights(2, 5))


# ------------------------------------- all streams at once == one stream at a time ---


def mixed_streams(seed, n_streams=90, conf_missing=0.1):
    """Streams of every awkward kind: empty, length 1, all ones, all zeros, long runs, gate failures
    (also at position 0), NaN confidences, confidences exactly on a tau, no draft_conf at all."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_streams):
        n = int(rng.choice([0, 1, 2, 7, 60, 250, 900]))
        kind = i % 6
        if kind == 0:
            a = iid_stream(rng, n, rng.uniform(0.0, 1.0))
        elif kind == 1:
            a = markov_bits(rng, n, 0.97, 0.3) if n else np.zeros(0, np.uint8)
        elif kind == 2:
            a = np.ones(n, np.uint8)
        elif kind == 3:
            a = np.zeros(n, np.uint8)
        else:
            a = iid_stream(rng, n, 0.98)  # runs longer than the fixed-g histogram width
        conf = conf_for(rng, a)
        conf[rng.random(n) < 0.05] = np.nan
        conf[rng.random(n) < 0.1] = 0.5
        conf[rng.random(n) < 0.1] = 0.9  # float32(0.9) < 0.9: passes tau 0.9 only if compared in float32
        gate = None
        if n and rng.random() < 0.3:
            gate = np.ones(n, np.uint8)
            gate[int(rng.integers(0, n))] = 0
        has_conf = rng.random() >= conf_missing
        out.append(Stream(id=f"s{i}", corpus="abc"[i % 3], bits=a, gate=gate, draft_conf=conf if has_conf else None))
    return out


def reference_policy_sums(streams, r, gammas=(), taus=(0.3, 0.5, 0.7, 0.9), g0=5, g_max=16):
    """The straightforward way: every stream replayed alone by the one-stream replays."""
    cut = [(s.bits[: s.valid_len], None if s.draft_conf is None else s.draft_conf[: s.valid_len]) for s in streams]
    fixed = np.array([[[c.tokens, c.blocks, c.drafted] for c in (replay_fixed(a, g) for g in range(1, 33))]
                      for a, _ in cut], dtype=np.int64).reshape(len(cut), 32, 3)
    g_best = best_fixed_gamma(fixed, r)
    with_conf = has_draft_conf(streams)
    rows = []
    for a, conf in cut:
        cs = [replay_fixed(a, g) for g in gammas] + [replay_fixed(a, g_best), replay_heuristic(a, g0)]
        if with_conf:
            cs += [replay_confidence(a, conf, tau, g_max) for tau in taus]
        cs.append(replay_clairvoyant(a))
        rows.append([[c.tokens, c.blocks, c.drafted] for c in cs])
    return g_best, np.array(rows, dtype=np.int64).reshape(len(cut), -1, 3)


@pytest.mark.parametrize("lockstep_min", [0, 5, 10**9])  # all in lockstep, a tail left alone, all alone
def test_table_equals_the_one_stream_replays(monkeypatch, lockstep_min):
    monkeypatch.setattr(policies, "LOCKSTEP_MIN", lockstep_min)
    streams = mixed_streams(20)
    cut = [s.bits[: s.valid_len] for s in streams]
    with_conf = [i for i, s in enumerate(streams) if s.draft_conf is not None]
    without = [i for i, s in enumerate(streams) if s.draft_conf is None]
    assert with_conf and without  # both cases are exercised
    taus = (0.0, 0.5, 0.9, 1.5)
    # fixed and clairvoyant do not depend on g0 or g_max: checked once, on the default table
    table = policy_table(streams, taus=taus)
    assert table.fixed.tolist() == [[block_walk_loop(a, g)[1] for g in range(1, 33)] for a in cut]
    assert table.clairvoyant.tolist() == [[c.blocks, c.drafted] for c in map(replay_clairvoyant, cut)]
    for g0, g_max in ((5, 16), (0, 1), (2, 0)):
        table = policy_table(streams, taus=taus, g0=g0, g_max=g_max)
        assert len(table) == len(streams)
        assert table.n.tolist() == [a.size for a in cut]
        assert table.heuristic.tolist() == [[h.blocks, h.drafted] for h in (replay_heuristic(a, g0) for a in cut)]
        assert table.has_conf.tolist() == [s.draft_conf is not None for s in streams]
        for i in with_conf:
            for j, tau in enumerate(taus):
                c = replay_confidence(cut[i], streams[i].draft_conf[: streams[i].valid_len], tau, g_max)
                assert table.confidence[i, j].tolist() == [c.blocks, c.drafted], (i, tau)
        assert not table.confidence[without].any()  # no draft_conf: zeros, as documented


def test_fixed_sums_equal_the_spec_loop():
    streams = mixed_streams(21, n_streams=30)
    sums = fixed_sums(streams, [0, 1, 3, 8, 40])
    for i, s in enumerate(streams):
        for j, g in enumerate([0, 1, 3, 8, 40]):
            assert tuple(sums[i, j]) == block_walk_loop(s.a, g)


@pytest.mark.parametrize("kw", [{}, {"gammas": (0, 3, 40), "taus": (0.0, 0.5, 1.0), "g0": 0, "g_max": 0},
                                {"gammas": (1,), "taus": (0.7,), "g0": 2, "g_max": 3}])
def test_policy_sums_equal_the_straightforward_replay(kw):
    for streams in (mixed_streams(22, n_streams=40, conf_missing=0.0), mixed_streams(23, n_streams=40)):
        for r in (0.0, 0.3):
            names, sums = policy_sums(streams, r, **kw)
            g_best, ref = reference_policy_sums(streams, r, **kw)
            assert sums.dtype == np.int64 and np.array_equal(sums, ref)
            assert next(params for name, params in names if name == "best-fixed")["gamma"] == g_best
            assert ("confidence" in {name for name, _ in names}) == has_draft_conf(streams)


def test_sets_take_their_rows_of_one_table():
    streams = mixed_streams(24, n_streams=60, conf_missing=0.0)
    streams[1].draft_conf = None  # corpus "b" lacks confidences for one stream; "a" and "c" keep them
    table = policy_table(streams)
    W = multinomial_weights(len(streams), 100, seed=3)
    assert policy_summary(streams, 0.2, W, table=table) == policy_summary(streams, 0.2, W)
    assert "confidence" not in {row.policy for row in policy_summary(streams, 0.2, W, table=table)}
    for corpus in "abc":
        idx = np.array([i for i, s in enumerate(streams) if s.corpus == corpus])
        members = [streams[i] for i in idx]
        names, sums = policy_sums(members, 0.2, table=table.rows(idx))
        assert np.array_equal(sums, reference_policy_sums(members, 0.2)[1])
        assert ("confidence" in {name for name, _ in names}) == (corpus != "b")
        Wc = multinomial_weights(len(members), 50, seed=4)
        assert policy_summary(members, 0.2, Wc, table=table.rows(idx)) == policy_summary(members, 0.2, Wc)


def test_a_table_of_other_streams_is_refused():
    streams = make_streams(n_streams=4)
    table = policy_table(streams)
    with pytest.raises(ValueError):
        policy_sums(streams[:3], 0.1, table=table)
    with pytest.raises(ValueError):
        policy_sums(streams, 0.1, taus=(0.5,), table=table)
    with pytest.raises(ValueError):
        policy_sums(streams, 0.1, g0=3, table=table)


def test_no_streams_and_empty_streams():
    assert len(policy_table([])) == 0
    names, sums = policy_sums([], 0.1)
    assert sums.shape == (0, len(names), 3)
    empty = [Stream(id=str(i), corpus="c", bits=np.zeros(0, np.uint8), draft_conf=np.zeros(0, np.float32)) for i in range(3)]
    names, sums = policy_sums(empty, 0.1)
    assert not sums.any() and [n for n, _ in names].count("confidence") == 4


def test_short_draft_conf_is_a_clear_error():
    s = Stream(id="x", corpus="c", bits=np.ones(5, np.uint8), draft_conf=np.ones(3, np.float32))
    with pytest.raises(SpectermError):
        policy_summary([s], 0.1, multinomial_weights(1, 5))


def test_analyse_gives_each_set_the_summary_of_its_own_streams(monkeypatch):
    streams = mixed_streams(25, n_streams=45, conf_missing=0.0)  # corpora interleaved, so pooled order differs
    streams[4].draft_conf = None
    runs = [Run(path=Path("x"), meta={"name": "x", "cost": {"r_measured": 0.17}}, streams=streams[:30]),
            Run(path=Path("y"), meta={"name": "y"}, streams=streams[30:])]
    calls: list[tuple[int, bool]] = []  # (matrices, exact) of each joint product the corpora took
    joint = analysis.integer_products

    def spy(W, mats):
        out = joint(W, mats)
        calls.append((len(mats), out is not None))
        return out

    monkeypatch.setattr(analysis, "integer_products", spy)
    fast = analysis.analyse(runs, boot=50, shuffles=2, seed=5)
    # the position sums hold the warm-up gain (a float column): the policy sums alone were one product
    assert (3, False) in calls and (2, True) in calls
    summary = analysis.policy_summary
    # the straightforward way: every set replays its own streams, no shared table (nor the stats' block counts),
    # and resamples its own sums with its own weights (not the corpora's products added up)
    monkeypatch.setattr(analysis, "policy_summary", lambda s, r, W, table=None, resampled=None: summary(s, r, W))
    slow = analysis.analyse(runs, boot=50, shuffles=2, seed=5)
    assert set(fast.sets) == {"a", "b", "c", "pooled"}
    for name in fast.sets:
        assert fast.sets[name].policies == slow.sets[name].policies, name
    with_conf = {name for name, rep in fast.sets.items() if any(row.policy == "confidence" for row in rep.policies)}
    assert with_conf == {"a", "c"}  # stream 4 (corpus b) has no draft_conf: b and pooled lack the rows


@pytest.mark.parametrize("tau", [0.0, 0.3, 0.5, 0.7, 0.9, 1.0, 1.5, 1e-40])
def test_float32_confidence_compared_with_tau_exactly(tau):
    # float32 neighbours of tau on both sides: conf >= tau must equal float64(conf) >= tau
    t32 = np.float32(tau)
    near = [np.nextafter(t32, np.float32(-np.inf)), t32, np.nextafter(t32, np.float32(np.inf))]
    conf = np.array([*near, np.nan, 0.0, 1.0], dtype=np.float32)
    assert policies._at_least(conf, tau).tolist() == (conf.astype(np.float64) >= tau).tolist()
    assert policies._at_least(conf.astype(np.float64), tau).tolist() == (conf.astype(np.float64) >= tau).tolist()


def test_distances_to_the_next_hit_equal_a_loop():
    rng = np.random.default_rng(3)
    for _ in range(150):
        n = int(rng.integers(0, 120))
        mask = rng.random(n) < rng.random()
        ref = np.array([next((u for u in range(i, n) if mask[u]), n) - i for i in range(n)], dtype=np.int64)
        assert policies._distance_to_next(mask, np.arange(n, dtype=np.int32)).tolist() == ref.tolist()
        for cap in (1, 2, 3, 17, 33):
            assert policies._capped_distance_to_next(mask, cap).tolist() == np.minimum(ref, cap).tolist()
