"""The borderline pass resamples only the policy columns Q4's CIs read (borderline.policy_columns): the
rows it builds from them equal the rows built from every column, value and CI alike."""

from __future__ import annotations

import numpy as np
import pytest

from specterm.core.streams.bootstrap import multinomial_weights
from specterm.core.claims.borderline import policy_columns, policy_plan, policy_rows

POLICIES = [("fixed", {"gamma": 3}), ("best-fixed", {"gamma": 4, "r": 0.1}), ("heuristic", {"g0": 5}),
            *[("confidence", {"tau": t, "g_max": 16}) for t in (0.3, 0.5, 0.7, 0.9)], ("clairvoyant", {})]


def sums_of(n: int, one_tokens: bool, seed: int) -> np.ndarray:
    """N x P x 3 integer sums (tokens, blocks, drafted) per stream and policy; tokens the same for every
    policy when `one_tokens` (as policies.policy_sums gives when every policy reads the whole stream)."""
    rng = np.random.default_rng(seed)
    sums = rng.integers(0, 60, size=(n, len(POLICIES), 3))
    sums[:, :, 1] += 1  # at least a block
    if one_tokens:
        sums[:, :, 0] = sums[:, :1, 0]
    return sums


@pytest.mark.parametrize("one_tokens", [True, False])
@pytest.mark.parametrize("keep", [None, [], [("heuristic", {"g0": 5}), ("confidence", {"tau": 0.5, "g_max": 16})]])
def test_rows_from_the_columns_read_equal_the_rows_from_all(one_tokens, keep):
    sums = sums_of(40, one_tokens, 3)
    plan = policy_plan(POLICIES, sums, 0.1)
    assert plan.one_tokens == one_tokens
    W = multinomial_weights(40, 300, seed=7)
    every = W @ plan.flat
    cols = policy_columns(plan, keep)
    assert np.array_equal(W @ plan.flat[:, cols], every[:, cols])  # integers: each column its own exact product
    full = policy_rows(plan, every, keep)
    cut = policy_rows(plan, W @ plan.flat[:, cols], keep, cols)
    assert [(r.policy, r.params) for r in cut] == POLICIES
    for a, b in zip(full, cut):
        assert a.vs_best_fixed == b.vs_best_fixed
    want = [p for p in POLICIES if keep is None or p in keep]
    with_ci = [(r.policy, r.params) for r in cut if r.vs_best_fixed.ci[0] is not None]
    assert with_ci == want  # CIs exactly where Q4 wants them


def test_the_columns_are_the_best_fixed_and_the_candidates():
    plan = policy_plan(POLICIES, sums_of(5, True, 1), 0.1)
    # tokens (once), then blocks and drafted of best-fixed (policy 1) and heuristic (policy 2)
    assert policy_columns(plan, [("heuristic", {"g0": 5})]).tolist() == [0, 3, 4, 5, 6]
    plan3 = policy_plan(POLICIES, sums_of(5, False, 1), 0.1)
    assert policy_columns(plan3, []).tolist() == [3, 4, 5]  # best-fixed alone: its tokens, blocks, drafted
    assert policy_columns(plan3, None).tolist() == list(range(3 * len(POLICIES)))
