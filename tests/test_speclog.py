"""The llama-speculative-simple -v log parser and the walk llama.cpp makes (core/compare/speclog.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specterm.core.streams.blockwalk import block_accepts
from specterm.core.errors import SpectermError
from specterm.core.compare.speclog import (
    capped_walk_accepts,
    n_predict_for,
    parse_speculative_log,
)

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
