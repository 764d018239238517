"""The llama-speculative-simple -v log parser and the walk llama.cpp makes (core/compare/speclog.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.streams.blockwalk import block_accepts
from specterm.core.errors import SpectermError
from specterm.core.compare.speclog import (
    capped_drafter_walk,
    capped_walk_accepts,
    n_predict_for,
    parse_speculative_log,
)

from test_drafters import llamacpp_ngram_simple, planted

DATA = Path(__file__).parent / "data"

HAND_LOG = """\
spec        draft:  - seq_id 0, draft candidate   0, pos   0:     11 (   0.900) 'a'
spec        draft:  - seq_id 0, draft candidate   1, pos   0:     99 (   0.050) 'x'
spec        draft:  - seq_id 0, draft candidate   0, pos   1:     12 (   0.800) 'line
break'
spec        draft:  - seq_id 0, draft candidate   0, pos   2:     13 (   0.700) 'c'
accepted 1/3 draft tokens, the last target token is: (7)
spec        draft:  - seq_id 0, draft candidate   0, pos   0:     21 (   0.900) 'accepted 9/9 draft tokens'
spec        draft:  - seq_id 0, draft candidate   0, pos   1:     22 (   0.900) 'e'
spec        draft:  - seq_id 0, draft candidate   0, pos   2:     23 (   0.900) 'f'
accepted 3/3 draft tokens, the last target token is: (8)
\x1b[32maccepted 0/0 draft tokens, the last target token is: (9)\x1b[0m
decoded    9 tokens in    0.512 seconds, speed:   17.578 t/s
n_draft   = 3
n_predict = 9
n_drafted = 6
n_accept  = 4
"""


def test_hand_log_blocks_tokens_and_counters():
    log = parse_speculative_log(HAND_LOG)
    assert [b.accepted for b in log.blocks] == [1, 3, 0]
    assert [len(b.drafted) for b in log.blocks] == [3, 3, 0]
    # block 1: first accepted draft (11) then the target's correction 7; block 2: all three drafts + bonus 8
    assert log.tokens == [11, 7, 21, 22, 23, 8, 9]
    assert log.target_calls == 3
    assert log.decoded_tokens == 9 and log.decoded_s == pytest.approx(0.512)
    assert log.counters == {"n_draft": 3, "n_predict": 9, "n_drafted": 6, "n_accept": 4}
    assert log.accepted.sum() == 4 and log.drafted.sum() == 6


def test_log_without_blocks_is_one_sentence():
    with pytest.raises(SpectermError, match="run llama-speculative-simple with -v"):
        parse_speculative_log("decoded 3 tokens in 0.1 seconds\n")


def test_block_with_missing_drafts_is_refused():
    bad = "accepted 2/3 draft tokens, the last target token is: (5)\n"
    with pytest.raises(SpectermError, match="2/3 accepted"):
        parse_speculative_log(bad)


def _capped_loop(bits, g, n_predict):
    """Independent transcription of llama-speculative-simple's loop (examples/speculative-simple.cpp
    with common_speculative_draft's truncation: a draft budget of 0 or less is not applied)."""
    a = [int(x) for x in bits]
    out, n_pred = [], 0
    while True:
        budget = min(g, n_predict - n_pred - 1)
        d = budget if budget > 0 else g
        k = 0
        while k < d and a[n_pred + k] == 1:
            k += 1
        out.append(k)
        n_pred += k + 1
        if n_pred > n_predict:
            return out


@pytest.mark.parametrize("seed", range(20))
def test_capped_walk_matches_the_example_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(12, 80))
    bits = (rng.random(n) < rng.uniform(0.3, 0.95)).astype(np.uint8)
    for g in (1, 2, 4, 8):
        N = n_predict_for(n, g)
        ks = capped_walk_accepts(bits, g, N)
        assert ks.tolist() == _capped_loop(bits, g, N)
        assert N + 1 <= int(ks.sum() + ks.size) <= n  # every emitted token lies inside the stored stream


def test_capped_walk_hand_case_and_difference_from_spec_walk():
    bits = np.ones(14, dtype=np.uint8)
    # -n 9, g = 4: s=0: 4 drafts (5 tokens); s=5: min(4, 9-5-1) = 3 drafts (4 tokens); s=9: budget -1,
    # so 4 drafts again (5 tokens): 14 tokens in 3 target calls
    assert capped_walk_accepts(bits, 4, 9).tolist() == [4, 3, 4]
    # SPEC 2's walk over the 14 tokens: K = 4, 4, 4 (the last block yields 4 tokens: the horizon cuts its bonus)
    assert block_accepts(bits, 4).tolist() == [4, 4, 4]
    with pytest.raises(ValueError):
        capped_walk_accepts(bits, 4, 10)


def test_recorded_log_of_smollm2():
    """A real `llama-speculative-simple -v` log (SmolLM2-135M drafting for itself, g = 4, -n 23: 28 tokens,
    since the last block's draft budget is 0, which the speculator takes as no limit)."""
    path = DATA / "speculative-simple-smollm2-g4.log"
    log = parse_speculative_log(path.read_text(encoding="utf-8"))
    meta = dict(line.split("=", 1) for line in (DATA / "speculative-simple-smollm2-g4.txt").read_text().split())
    assert len(log.tokens) == int(meta["tokens"])
    assert log.counters["n_predict"] == len(log.tokens)
    assert log.counters["n_accept"] == int(log.accepted.sum())
    assert log.counters["n_drafted"] == int(log.drafted.sum())
    # llama.cpp's serial greedy decoding of that prompt (through the binding, recorded beside it) agrees up to
    # token 12, where a near-tie flips: the draft's cache holds batch-evaluated verification tokens
    greedy = [int(x) for x in meta["greedy"].split(",")]
    d = int(meta["first_divergence"])
    assert log.tokens[:d] == greedy[:d] and log.tokens[d] != greedy[d]
    # a model drafting for itself is accepted everywhere; the walk of -n 23 over all-ones bits gives the blocks
    assert (log.accepted == log.drafted).all()
    assert log.accepted.tolist() == capped_walk_accepts(np.ones(28, dtype=np.uint8), 4, 23).tolist() == [4, 4, 4, 4, 2, 4]
    assert log.decoded_tokens == 28 and log.decoded_s > 0


NGRAM_LOG = """\
0.01.000.001 D common_speculative_draft: called impl ngram-simple, hist size = 20, call_count = 1, gen = 2
0.01.000.002 D accepted 2/2 draft tokens, the last target token is: (5)
0.01.000.003 D accepted 0/0 draft tokens, the last target token is: (7)
0.01.000.004 D accepted 1/3 draft tokens, the last target token is: (4)
0.01.000.005 I decoded    6 tokens in    0.250 seconds, speed:   24.000 t/s
n_predict = 6
"""


def test_ngram_log_counts_without_drafted_ids():
    """An n-gram type logs no draft candidates: K, N and the target token per block, counted by hand."""
    log = parse_speculative_log(NGRAM_LOG, drafts_logged=False)
    assert log.target_calls == 3
    assert log.accepted.tolist() == [2, 0, 1] and log.drafted.tolist() == [2, 0, 3]
    assert [b.target_token for b in log.blocks] == [5, 7, 4]
    assert log.decoded_s == 0.25 and log.counters["n_predict"] == 6 == int((log.accepted + 1).sum())
    with pytest.raises(ValueError, match="no drafted tokens"):
        _ = log.tokens
    with pytest.raises(SpectermError):  # the draft-model parser wants the candidates it counts
        parse_speculative_log(NGRAM_LOG)
    with pytest.raises(SpectermError):
        parse_speculative_log("accepted 3/2 draft tokens, the last target token is: (1)\n", drafts_logged=False)


def test_capped_drafter_walk_hand_case():
    # L_s = 3 everywhere, m_s = 3, no rule: -n 6 at g = 4: s=0: d = min(3, budget 5) = 3, K 3 -> s 4;
    # s=4: budget 1 -> d 1, K 1 -> s 6; s=6: budget -1 (no limit) -> d 3, K 3 -> s 10 > 6: three blocks
    runs, proposed = np.full(11, 3), np.full(11, 3)
    d, k = capped_drafter_walk(runs, proposed, 4, 6)
    assert d.tolist() == [3, 1, 3] and k.tolist() == [3, 1, 3]
    # the rule: size_n = 2 drafts nothing where g < 2 or the cap is below g; a context limit of 3 - s
    d, k = capped_drafter_walk(runs, proposed, 1, 6, min_draft=2)
    assert d.tolist() == [0] * 7 and k.tolist() == [0] * 7
    cap = np.array([0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9])
    d, k = capped_drafter_walk(runs, proposed, 2, 6, min_draft=2, max_gamma=cap, context_left=3)
    # s=0: cap 0 < 2: d 0 -> s 1; s=1: cap 0: d 0 -> s 2; s=2: d 2, budget min(1, 3) = 1 -> d 1 -> s 4;
    # s=4: budget min(-1, 1) = -1 (no limit): d 2 -> s 7 > 6
    assert d.tolist() == [0, 0, 1, 2] and k.tolist() == [0, 0, 1, 2]
    # y ends with an end-of-generation token at index 4 (end 5): the block that emits it is the last
    d, k = capped_drafter_walk(np.array([0, 3, 2, 1, 0]), np.full(5, 3), 4, 30, end=5)
    assert k.tolist() == [0, 3] and d.tolist() == [3, 3]
    with pytest.raises(ValueError):
        capped_drafter_walk(runs, proposed, 4, 7)


def simulated_example(prompt: list[int], y: list[int], n: int, g: int, n_predict: int, n_ctx: int
                      ) -> tuple[list[int], list[int]]:
    """examples/speculative-simple's loop with --spec-type ngram-simple, literally, its target answering y:
    the draft of common_ngram_simple_draft at size_m = g on (prompt_tgt, id_last), cut to n_draft_max when
    that is positive, accepted while it equals y, one target token after."""
    ctx = list(prompt)
    out: list[int] = []
    sizes, accepts = [], []
    while True:
        n_past = len(ctx) - 1
        n_draft_max = max(min(n_ctx - n_past - 2, n_predict - len(out) - 1), 0)
        draft = llamacpp_ngram_simple(ctx[:-1], ctx[-1], n, g)
        if n_draft_max > 0:
            draft = draft[:n_draft_max]
        s = len(out)
        k = 0
        while k < len(draft) and draft[k] == y[s + k]:
            k += 1
        emitted = y[s:s + k + 1]
        sizes.append(len(draft))
        accepts.append(k)
        out += emitted
        ctx += emitted
        if len(out) > n_predict:
            return sizes, accepts


@pytest.mark.parametrize("seed", range(10))
def test_capped_drafter_walk_equals_the_example_loop(seed: int):
    """The walk on (L_s, m_s) of specterm's ngram-simple along y gives, at every g, the blocks, drafted and
    accepted counts of the example's loop run literally (the C drafter at size_m = g, n_draft_max)."""
    from specterm.engines.drafters import NgramSimple, along_y

    rng = np.random.default_rng(300 + seed)
    vocab = int(rng.integers(2, 5))
    seq = planted(rng, int(rng.integers(40, 120)), vocab)
    P = int(rng.integers(2, 25))
    prompt, y = seq[:P], seq[P:]
    n = int(rng.integers(1, 4))
    drafter = NgramSimple(size_n=n, max_tokens=12)
    runs, proposed, _ = along_y(drafter, prompt, y)
    caps = np.array([drafter.gamma_cap(P + s) for s in range(len(y))])
    drafted_any = 0
    for g in range(1, 11):
        n_predict = len(y) - 1 - g
        n_ctx = P + len(y) - int(rng.integers(0, 4))  # sometimes the context limit cuts a draft
        d, k = capped_drafter_walk(runs, proposed, g, n_predict, drafter.min_draft, caps, n_ctx - (P - 1) - 2)
        sizes, accepts = simulated_example(prompt, y, n, g, n_predict, n_ctx)
        assert (d.tolist(), k.tolist()) == (sizes, accepts), g
        drafted_any += int(k.sum())
    assert drafted_any > 0
