"""Drafters without a draft model (SPEC 2b): each drafter against a literal copy of the code it follows,
L_s and m_s against a brute-force drafter on random sequences with planted repeats, the prefix
property, and the walk on L_s against the SPEC loop."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.drafted.walk import depth_counts, drafted_at, walk_loop, walk_streams
from specterm.core.errors import SpectermError
from specterm.engines.drafters import NgramSimple, PromptLookup, along_y, drafter_from_spec


def hf_prompt_lookup(input_ids: list[int], num_output_tokens: int, max_ngram: int, eos: set[int]) -> list[int]:
    """transformers' PromptLookupCandidateGenerator.get_candidates, line by line on a Python list
    (batch 1, no logits processor, max_length far away)."""
    input_length = len(input_ids)
    chosen: list[int] | None = None
    match_found = False
    for ngram_size in range(min(max_ngram, input_length - 1), 0, -1):
        ngram = input_ids[-ngram_size:]
        match_indices = [i for i in range(input_length - ngram_size + 1) if input_ids[i:i + ngram_size] == ngram]
        for idx in match_indices:
            start_idx = idx + ngram_size
            end_idx = min(start_idx + num_output_tokens, input_length)
            if start_idx < end_idx:
                chosen = input_ids[start_idx:end_idx]
                match_found = True
                for j, tok in enumerate(chosen):
                    if tok in eos:
                        chosen = chosen[:j]
                        break
                break
        if match_found:
            break
    return chosen or []


def llamacpp_ngram_simple(tokens: list[int], sampled: int, n: int, m: int) -> list[int]:
    """common_ngram_simple_draft (common/ngram-map.cpp), statement by statement."""
    cur_len = len(tokens)
    if cur_len <= n + m + 1:
        return []
    pattern = tokens[cur_len - n + 1:cur_len] + [sampled]
    match_pos = 0
    j = cur_len - n - 1
    while j > 0:
        if all(tokens[j + k] == pattern[k] for k in range(len(pattern))):
            match_pos = j
            break
        j -= 1
    if match_pos == 0:
        return []
    copy_max = min(m, cur_len - (match_pos + n))
    if copy_max < n:
        return []
    return tokens[match_pos + n:match_pos + n + copy_max]


def planted(rng: np.random.Generator, length: int, vocab: int) -> list[int]:
    """Random tokens with copies of earlier spans planted in them (what prompt lookup finds)."""
    seq = rng.integers(0, vocab, size=length).tolist()
    for _ in range(max(1, length // 15)):
        a = int(rng.integers(0, max(1, length - 10)))
        w = int(rng.integers(2, 12))
        b = int(rng.integers(a, length))
        seq[b:b + w] = seq[a:a + w]
    return seq[:length]


def brute_runs(propose, prompt: list[int], y: list[int], first: bool = True) -> tuple[list[int], list[int]]:
    """L_s and m_s by the definition, with any proposal function of the context."""
    runs, proposed = [], []
    for s in range(len(y)):
        d = propose(prompt + y[:s]) if (s > 0 or first) else []
        k = 0
        while k < len(d) and s + k < len(y) and d[k] == y[s + k]:
            k += 1
        runs.append(k)
        proposed.append(len(d))
    return runs, proposed


@pytest.mark.parametrize("seed", range(12))
def test_prompt_lookup_matches_hf_code_and_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vocab = int(rng.integers(3, 30))
    ctx = planted(rng, int(rng.integers(20, 90)), vocab)
    P = int(rng.integers(1, len(ctx) - 5))
    prompt, y = ctx[:P], ctx[P:]
    ngram = int(rng.integers(1, 5))
    eos = {int(rng.integers(0, vocab))} if seed % 3 == 0 else set()
    drafter = PromptLookup(max_ngram=ngram, eos_ids=tuple(eos), max_tokens=10)
    for s in range(len(y)):
        context = prompt + y[:s]
        got = drafter.propose(np.asarray(context)).tolist()
        assert got == hf_prompt_lookup(context, 10, ngram, eos)
        for g in (1, 2, 4, 7):  # prefix property: the proposal for g is the first min(g, m_s) of the longest
            assert hf_prompt_lookup(context, g, ngram, eos) == got[:g]
    runs, proposed, seconds = along_y(drafter, prompt, y)
    b_runs, b_prop = brute_runs(lambda c: hf_prompt_lookup(c, 10, ngram, eos), prompt, y)
    assert runs.tolist() == b_runs and proposed.tolist() == b_prop
    assert len(seconds) == len(y)
    assert max(b_runs) > 0  # planted repeats give the drafter something to find


@pytest.mark.parametrize("seed", range(12))
def test_ngram_simple_matches_llamacpp_code_and_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    vocab = int(rng.integers(2, 6))  # a small vocabulary: n-grams repeat
    ctx = planted(rng, int(rng.integers(30, 120)), vocab)
    P = int(rng.integers(1, len(ctx) - 5))
    prompt, y = ctx[:P], ctx[P:]
    n, m = int(rng.integers(1, 4)), int(rng.integers(1, 9))
    drafter = NgramSimple(size_n=n, size_m=m, max_tokens=12)
    for s in range(len(y)):
        context = prompt + y[:s]
        if len(context) >= 2:
            assert drafter.propose(np.asarray(context)).tolist() == llamacpp_ngram_simple(context[:-1], context[-1], n, m)
    # g is size_m: the stored (L_s, m_s) of the longest continuation and the rule give, at every g, exactly the
    # literal code's draft at size_m = g (its length and its accepted run along y)
    runs, proposed, _ = along_y(drafter, prompt, y)
    found = 0
    for s in range(len(y)):
        context = prompt + y[:s]
        cap = drafter.gamma_cap(len(context))
        for g in range(1, 13):
            literal = llamacpp_ngram_simple(context[:-1], context[-1], n, g) if len(context) >= 2 else []
            d = int(drafted_at(g, int(proposed[s]), drafter.min_draft, cap))
            assert len(literal) == d, (s, g)
            k = 0
            while k < d and s + k < len(y) and literal[k] == y[s + k]:
                k += 1
            assert min(int(runs[s]), d) == k
            found += k
    assert found > 0


def test_prompt_lookup_hand_case() -> None:
    # context 5 6 7 5 6: the last 2-gram (5 6) first occurs at 0, the tokens after it are 7 5 6 (capped at the end)
    d = PromptLookup(max_ngram=2, max_tokens=32)
    assert d.propose(np.array([5, 6, 7, 5, 6])).tolist() == [7, 5, 6]
    assert PromptLookup(max_ngram=2, max_tokens=2).propose(np.array([5, 6, 7, 5, 6])).tolist() == [7, 5]
    # EOS (9) cuts the proposal; a match whose continuation is only EOS proposes nothing
    assert PromptLookup(max_ngram=1, eos_ids=(9,)).propose(np.array([4, 2, 9, 3, 4])).tolist() == [2]
    assert PromptLookup(max_ngram=1, eos_ids=(2,)).propose(np.array([4, 2, 9, 3, 4])).tolist() == []
    assert d.propose(np.array([1, 2, 3])).tolist() == []  # nothing repeats


def test_ngram_simple_hand_case() -> None:
    # tokens 1 2 3 4 1 2 3 9 9 9, sampled 1 2? size_n 2: pattern (9, 1)... a case that matches:
    ctx = np.array([0, 7, 8, 5, 6, 1, 2, 3, 4, 7, 8])
    # cur_len = 10 > n + m + 1 = 2 + 3 + 1; pattern = (7, 8); j from 10 - 2 - 1 = 7 down: match at j = 1
    # copy_max = min(3, 10 - 3) = 3: the draft is tokens[3:6] = 5 6 1
    assert NgramSimple(size_n=2, size_m=3).propose(ctx).tolist() == [5, 6, 1]
    assert NgramSimple(size_n=2, size_m=7).propose(ctx).tolist() == []  # cur_len 10 <= 2 + 7 + 1


def test_drafter_from_spec() -> None:
    d = drafter_from_spec("prompt-lookup:3", {2})
    assert isinstance(d, PromptLookup) and d.max_ngram == 3 and d.eos_ids == (2,)
    assert drafter_from_spec("prompt-lookup").max_ngram == 2  # type: ignore[attr-defined]
    g = drafter_from_spec("ngram-simple:4")
    assert isinstance(g, NgramSimple) and g.size_n == 4 and g.min_draft == 4
    for bad in ("prompt-lookup:x", "prompt-lookup:0", "ngram-simple:4:16", "lookup"):
        with pytest.raises(SpectermError):
            drafter_from_spec(bad)


@pytest.mark.parametrize("seed", range(20))
def test_walk_on_runs_equals_the_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    runs_l, prop_l, n_l = [], [], []
    for _ in range(int(rng.integers(1, 7))):
        n = int(rng.integers(0, 60))
        prop = rng.integers(0, 12, size=n) * (rng.random(n) < 0.7)
        runs = np.minimum(rng.integers(0, 14, size=n), np.minimum(prop, n - np.arange(n)))
        runs_l.append(runs)
        prop_l.append(prop)
        n_l.append(n)
    gammas = np.arange(1, 17)
    walk = walk_streams(runs_l, prop_l, n_l, gammas)
    for i in range(len(runs_l)):
        for j, g in enumerate(gammas.tolist()):
            t, b, d = walk_loop(runs_l[i], prop_l[i], g)
            assert (walk.tokens[i, j], walk.blocks[i, j], walk.drafted[i, j]) == (t, b, d)
            assert walk.by_drafted[i, j].sum() == b
            assert (walk.by_drafted[i, j] * np.arange(walk.by_drafted.shape[2])).sum() == d
            assert t == n_l[i]  # every position is emitted once


@pytest.mark.parametrize("seed", range(8))
def test_walk_with_a_rule_per_g_equals_the_loop(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    runs_l, prop_l, n_l, caps = [], [], [], []
    for _ in range(4):
        n = int(rng.integers(1, 50))
        prop = rng.integers(0, 12, size=n)
        runs_l.append(np.minimum(rng.integers(0, 14, size=n), np.minimum(prop, n - np.arange(n))))
        prop_l.append(prop)
        n_l.append(n)
        caps.append(int(rng.integers(-5, 10)) + np.arange(n))
    gammas = np.arange(1, 13)
    walk = walk_streams(runs_l, prop_l, n_l, gammas, 3, caps)
    for i in range(4):
        for j, g in enumerate(gammas.tolist()):
            assert (walk.tokens[i, j], walk.blocks[i, j], walk.drafted[i, j]) == walk_loop(runs_l[i], prop_l[i], g, None, 3, caps[i])
    reached, accepted, blocks = depth_counts(runs_l, prop_l, n_l, 5, 3, caps)
    assert blocks.tolist() == walk.blocks[:, 4].tolist()


def test_walk_hand_case_and_bits_special_case() -> None:
    # L = 3 2 1 0 ...: at g = 2, s = 0: k = 2 -> s = 3 (L = 0): k = 0 -> s = 4 ... (m_s = 5 everywhere)
    runs = np.array([3, 2, 1, 0, 2, 1, 0])
    prop = np.full(7, 5)
    assert walk_loop(runs, prop, 2) == (7, 3, 6)  # blocks at s = 0 (3 tokens), 3 (1), 4 (3)
    # a model draft's bits are the drafter case with L_s = leading ones from s and m_s = infinity
    from specterm.core.streams.blockwalk import block_walk_loop
    rng = np.random.default_rng(0)
    bits = (rng.random(80) < 0.7).astype(np.uint8)
    L = np.array([int(np.argmin(np.append(bits[s:], 0))) for s in range(80)])
    for g in (1, 3, 8):
        t, b, d = walk_loop(L, np.full(80, 99), g)
        assert (t, b) == block_walk_loop(bits, g)[:2]


def test_depth_counts_by_hand() -> None:
    # one stream, g = 3: blocks at s = 0 (d = 3, k = 2), s = 3 (d = 0, k = 0), s = 4 (d = 3, k = 3; end)
    runs = np.array([2, 0, 0, 0, 3, 0, 0, 0])
    prop = np.array([4, 0, 0, 0, 3, 0, 0, 0])
    reached, accepted, blocks = depth_counts([runs], [prop], [8], 3)
    assert blocks.tolist() == [3]
    assert reached.tolist() == [[2, 2, 2]]   # depth 3 reached at s = 0 (k = 2 >= 2, d = 3) and s = 4
    assert accepted.tolist() == [[2, 2, 1]]
