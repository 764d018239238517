"""Equivalence, not only difference (issue 34): the cross-stack comparison of a real speculative decoder
against the block walk on the same engine's bits, and the power of the descriptive chi-square test.

`paired_tokens_per_call`: per prompt, tokens and target calls of the real decoder and of the walk (both
read largely the same tokens, so the prompt is the unit and the two are paired). The relative difference

    d = (sum real tokens / sum real calls) / (sum walk tokens / sum walk calls) - 1

has a percentile-bootstrap 95% interval over prompts (one multinomial resample of the prompts for both
decoders) and a two one-sided test (TOST) against a +-5% margin: equivalence at level 0.05 is shown
exactly when the 90% interval lies inside (-5%, +5%). Wording (`equivalence_wording`): "equivalent
within 5%" (TOST), "different" (the 95% interval excludes 0, equivalence not shown), or "not shown
equivalent (the data can rule out only differences above X%)", X = the largest |bound| of the 90%
interval, the smallest margin this data could establish. Below params.MIN_PROMPTS prompts the wording
is "too few prompts (n = K; needs M)", the numbers kept.

`histogram_test`: the accepted-run histograms (blocks with K = 0..g accepted drafts) of two decoders,
a descriptive line: Pearson's chi-square test of homogeneity on the 2 x (g+1) table of block counts
(scipy.stats.chi2_contingency), sparse K bins merged upward until every column holds at least
MIN_COLUMN blocks. Why not Kolmogorov-Smirnov: K is a bounded count with g+1 values and thousands of
ties, where the KS null distribution (continuous data) does not hold and the test is conservative;
the chi-square test compares the whole categorical distribution. Caveat stated with every p-value:
blocks of one prompt are not independent (acceptance is clustered), so the nominal p-value is too
small; prompts are the independent unit.

`chi2_power`: the chi-square test's power against the difference seen (noncentral chi-square with the
statistic as noncentrality): "no difference detected" by a test of low power is not agreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.params import BOOT, MIN_PROMPTS, SEED
from specterm.core.claims.verdict import too_few_text

EQUIVALENCE_MARGIN = 0.05  # TOST margin on tokens per target call, relative (+-5%)
MIN_COLUMN = 10  # the fewest blocks per column of the histogram test


@dataclass(frozen=True)
class PairedComparison:
    """Real decoder against the walk, paired over prompts (module docstring): d = real / walk - 1 in tokens
    per target call, its 95% and 90% percentile intervals over prompts, the TOST margin, the smallest margin
    the data could establish (max |90% bound|) and the wording."""

    prompts: int
    blocks_real: int
    blocks_walk: int
    diff: float
    ci95: tuple[float, float]
    ci90: tuple[float, float]
    margin: float
    establishable: float
    wording: str


def equivalence_wording(ci95: tuple[float, float], ci90: tuple[float, float], margin: float = EQUIVALENCE_MARGIN) -> str:
    """The cross-stack wording from the paired difference's intervals (module docstring): TOST at level 0.05
    (90% interval inside (-margin, +margin)) first, then "different" (95% interval excludes 0), else
    "not shown equivalent (the data can rule out only differences above X%)"."""
    lo90, hi90 = ci90
    if -margin < lo90 and hi90 < margin:
        return f"equivalent within {100 * margin:g}%"
    if ci95[0] > 0 or ci95[1] < 0:
        return "different"
    return f"not shown equivalent (the data can rule out only differences above {100 * max(abs(lo90), abs(hi90)):.1f}%)"


def paired_tokens_per_call(real_tokens: Sequence[float], real_calls: Sequence[float], walk_tokens: Sequence[float],
                           walk_calls: Sequence[float], boot: int = BOOT, seed: int = SEED,
                           margin: float = EQUIVALENCE_MARGIN, min_prompts: int = MIN_PROMPTS) -> PairedComparison | None:
    """The paired comparison of the module docstring from per-prompt sums (one entry per prompt, both
    decoders on the same prompt); None without prompts or calls."""
    X = np.array([real_tokens, real_calls, walk_tokens, walk_calls], dtype=np.float64).T  # prompts x 4
    n = X.shape[0]
    if n == 0 or X[:, 1].sum() == 0 or X[:, 3].sum() == 0:
        return None

    def d(c: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray((c[..., 0] / c[..., 1]) / (c[..., 2] / c[..., 3]) - 1.0, dtype=np.float64)

    R = multinomial_weights(n, boot, seed) @ X
    reps = d(R)
    lo95, hi95 = (float(x) for x in percentile_ci(reps))
    lo90, hi90 = (float(x) for x in percentile_ci(reps, 0.90))
    wording = equivalence_wording((lo95, hi95), (lo90, hi90), margin)
    if n < min_prompts:
        wording = too_few_text(n, min_prompts, per_corpus=False)
    return PairedComparison(prompts=n, blocks_real=int(X[:, 1].sum()), blocks_walk=int(X[:, 3].sum()),
                            diff=float(d(X.sum(axis=0))), ci95=(lo95, hi95), ci90=(lo90, hi90), margin=margin,
                            establishable=max(abs(lo90), abs(hi90)), wording=wording)


def chi2_power(statistic: float, dof: int, level: float = 0.05) -> float:
    """The chi-square test's power against the difference seen: P(noncentral chi2(dof, nc = statistic) >
    the level's critical value) (the statistic estimates the noncentrality of the difference seen)."""
    from scipy.stats import chi2, ncx2

    return float(ncx2.sf(chi2.ppf(1 - level, dof), dof, max(statistic, 1e-12)))


@dataclass(frozen=True)
class HistTest:
    """A chi-square test of homogeneity of two K histograms."""

    statistic: float
    dof: int
    p_value: float
    merged_bins: list[list[int]]  # the K values pooled into each column


def merge_sparse_bins(a: Sequence[int], b: Sequence[int], min_column: int = MIN_COLUMN) -> tuple[np.ndarray, list[list[int]]]:
    """2 x m table from two histograms over K = 0..g: bins are merged from K = 0 upward until a
    column holds at least `min_column` blocks (a short last column joins the one before it)."""
    a_arr, b_arr = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    cols: list[list[int]] = []
    groups: list[list[int]] = []
    cur = [0, 0]
    ks: list[int] = []
    for k in range(a_arr.size):
        cur = [cur[0] + int(a_arr[k]), cur[1] + int(b_arr[k])]
        ks.append(k)
        if sum(cur) >= min_column:
            cols.append(cur)
            groups.append(ks)
            cur, ks = [0, 0], []
    if ks:
        if cols:
            cols[-1] = [cols[-1][0] + cur[0], cols[-1][1] + cur[1]]
            groups[-1] = groups[-1] + ks
        else:
            cols.append(cur)
            groups.append(ks)
    return np.array(cols, dtype=np.int64).T.reshape(2, -1), groups


def histogram_test(a: Sequence[int], b: Sequence[int]) -> HistTest | None:
    """Chi-square test of homogeneity of two K histograms (module docstring); None when there are
    fewer than 2 columns after merging or a histogram is empty."""
    from scipy.stats import chi2_contingency

    table, groups = merge_sparse_bins(a, b)
    if table.shape[1] < 2 or table.sum(axis=1).min() == 0:
        return None
    keep = table.sum(axis=0) > 0
    table = table[:, keep]
    groups = [g for g, k in zip(groups, keep.tolist()) if k]
    if table.shape[1] < 2:
        return None
    stat, p, dof, _ = chi2_contingency(table, correction=False)
    return HistTest(statistic=float(stat), dof=int(dof), p_value=float(p), merged_bins=groups)
