"""The steady state (SPEC 4): autocorrelation, run-length dispersion and the deficit split on the
positions t >= 32 of each stream only, since a warm-up trend (streams that start hard and turn easy)
feeds p11-p10 and the temporal deficit too (SPEC 3, acceptance by position).

Each stream a is cut to a[32:] (its analysed bits from absolute position t = 32 of y on) and the
statistics are stats.py's, on a reduced per-stream sums matrix with the same column names:

    n, ones, n11, n1x, n01, n0x, ac_val, ac_def, runs, L, L2, blocks_<gamma>, shuf_blocks

so stats.autocorr, autocorr_pooled, dispersion_ratio and deficit apply unchanged, and the bootstrap
uses the report's weights W (the same streams, the same resamples). Choices where the SPEC is silent:

- A stream shorter than 33 positions has an empty steady part: it stays a row (zeros), so the rows
  line up with the set's W; it adds nothing to any sum.
- Transitions and runs are those within t >= 32: the pair (a_31, a_32) is not counted, and a run of
  ones that started before t = 32 counts from t = 32 (the cut is a stream start for the run-length
  statistics, as the stream's real start is).
- The shuffle control of the steady parts is the exact expectation over in-place permutations
  (`expected_shuffled_blocks`), the limit S -> infinity of SPEC 3's average over S shuffles: a
  second set of S = 20 Monte-Carlo shuffles over t >= 32 cost as much as the report's own shuffles
  (the report's largest cost, ~40% more time at 1M positions) and would carry Monte-Carlo error
  besides. `steady_sums(..., exact=False)` uses S shuffles with the set's seed instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core import stats as st
from specterm.core.blockwalk import E_iid
from specterm.core.estimate import num, percentile_cis
from specterm.core.geometry import (
    concat_streams,
    segment_runs,
    stream_totals,
    zeros_by_stream,
    transition_counts,
    walk_blocks,
)
from specterm.core.params import SHUFFLES, STEADY_FROM
from specterm.core.report import Deficit, Estimate, SteadyState

# Terms per group of streams in expected_shuffled_blocks (the per-term arrays of a group stay in cache).
ESB_CHUNK = 1 << 15
COLUMNS = ("n", "ones", "n11", "n1x", "n01", "n0x", "ac_val", "ac_def", "runs", "L", "L2")


@dataclass(frozen=True)
class SteadySums:
    """M (N x K) of the steady parts a[start:], columns COLUMNS + blocks_<gamma> + shuf_blocks."""

    M: np.ndarray
    cols: dict[str, int]
    gamma: int
    start: int


def expected_shuffled_blocks(n: np.ndarray, k: np.ndarray, gamma: int) -> np.ndarray:
    """Per stream: the expected blocks of the walk at gamma over all orderings of its bits (n positions,
    k ones, m = n - k zeros), i.e. the mean of stats.shuffled_blocks as S -> infinity.

    A uniformly random ordering makes the run lengths (L_1..L_m closed by the zeros, T trailing) a
    uniformly random composition of k into m + 1 parts (stars and bars), each part with the marginal
    P(l) = C(k - l + m - 1, m - 1) / C(k + m, m), l = 0..k, so (SPEC 2's closed form)

        E[blocks] = m sum_l P(l) ceil((l + 1)/(g + 1)) + sum_l P(l) ceil(l/(g + 1)).

    P(0) = m / (k + m) and P(l + 1) / P(l) = (k - l) / (k - l + m - 1), summed in logs per stream, all
    streams at once (sum of (k + 1) terms). m = 0: ceil(k/(g + 1)); k = 0: m.
    """
    n = np.asarray(n, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    m = n - k
    gp1 = gamma + 1
    out = np.where(m == 0, -(-k // gp1), 0).astype(np.float64)
    mix = np.flatnonzero((m > 0) & (k > 0))
    out[(m > 0) & (k == 0)] = m[(m > 0) & (k == 0)]
    if mix.size == 0:
        return out
    kk_all, mm_all = k[mix], m[mix]
    # Logs of the integers 0..max n and the ceilings are looked up in tables (the same np.log of the
    # same float64 values, so the same bits as taking them term by term), log P(0) once per stream.
    with np.errstate(divide="ignore"):  # log 0 = -inf sits at index 0, never looked up (num_, den >= 1)
        log_int = np.log(np.arange(int((kk_all + mm_all).max()) + 1, dtype=np.int64).astype(np.float64))
    ceil_l = -(-np.arange(int(kk_all.max()) + 2, dtype=np.int64) // gp1)  # ceil(l / (g + 1)), l = 0..max k + 1
    logp0 = np.log(mm_all / (kk_all + mm_all))
    terms_all = kk_all + 1
    # Streams in groups of about ESB_CHUNK terms, so that the per-term arrays stay in cache (2x faster
    # at 2000 streams of ~1000). The running sum of the log steps is one sequential float sum over all
    # terms in stream order, carried from group to group, so every number has the same bits as in one
    # pass over all streams (tests/test_steady.py against that form).
    ends = np.cumsum(terms_all)
    bounds = np.unique(np.concatenate([[0], np.searchsorted(ends, np.arange(ESB_CHUNK, int(ends[-1]), ESB_CHUNK)) + 1,
                                       [mix.size]]))
    carry = 0.0
    res = np.empty(mix.size)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        kk, mm, terms = kk_all[lo:hi], mm_all[lo:hi], terms_all[lo:hi]
        seg = np.repeat(np.arange(hi - lo), terms)
        first = np.cumsum(terms) - terms
        ell = np.arange(int(terms.sum())) - np.repeat(first, terms)
        kl, ml = kk[seg], mm[seg]
        # log P(l) = log P(0) + sum_{j < l} log((k - j) / (k - j + m - 1))
        # (the step after the last term, l = k, is never used: set to 0 so the running sum stays finite)
        last = ell == kl
        num_, den = np.where(last, 1, kl - ell), np.where(last, 1, kl - ell + ml - 1)
        step = log_int[num_] - log_int[den]
        acc = np.cumsum(np.concatenate([[carry], step]))  # carry + s_0, + s_1, ...: the running sum, continued
        before, carry = acc[:-1], float(acc[-1])
        p = np.exp(logp0[lo:hi][seg] + before - before[first][seg])
        closed = np.bincount(seg, weights=p * ceil_l[ell + 1], minlength=hi - lo)
        trailing = np.bincount(seg, weights=p * ceil_l[ell], minlength=hi - lo)
        res[lo:hi] = mm * closed + trailing
    out[mix] = res
    return out


def steady_sums(a: Sequence[np.ndarray], gamma: int, shuffles: int = SHUFFLES, seed: int = 0,
                start: int = STEADY_FROM, exact: bool = True) -> SteadySums:
    """Per-stream sums of the steady parts a_i[start:] (see the module docstring). exact: the shuffle
    column is `expected_shuffled_blocks` (else the mean over `shuffles` in-place shuffles, `seed`)."""
    names = [*COLUMNS, f"blocks_{gamma}", "shuf_blocks"]
    cols = {name: i for i, name in enumerate(names)}
    cut = [np.asarray(x)[start:] for x in a]
    c = concat_streams(cut)
    N = c.starts.size
    M = np.zeros((N, len(names)))
    if N == 0:
        return SteadySums(M, cols, gamma, start)
    ones = stream_totals(c.bits, c.starts, c.ends)
    M[:, cols["n"]] = c.lengths
    M[:, cols["ones"]] = ones
    n11, n1x, n01, n0x = transition_counts(c, ones=ones)
    M[:, cols["n11"]], M[:, cols["n1x"]], M[:, cols["n01"]], M[:, cols["n0x"]] = n11, n1x, n01, n0x
    defined = (n1x > 0) & (n0x > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        M[:, cols["ac_val"]] = np.where(defined, n11 / n1x - n01 / n0x, 0.0)
    M[:, cols["ac_def"]] = defined
    runs = segment_runs(c.bits, c.starts, c.ends, seg_of=zeros_by_stream(c.lengths, ones))
    M[:, cols["runs"]] = np.bincount(runs.seg, minlength=N)
    M[:, cols["L"]] = np.bincount(runs.seg, weights=runs.L, minlength=N)
    M[:, cols["L2"]] = np.bincount(runs.seg, weights=runs.L.astype(np.float64) ** 2, minlength=N)
    M[:, cols[f"blocks_{gamma}"]] = walk_blocks(runs, N, gamma)
    if shuffles <= 0:  # no shuffle control asked for (as stats.stream_sums): hetero/temporal undefined
        M[:, cols["shuf_blocks"]] = np.nan
    elif exact:
        M[:, cols["shuf_blocks"]] = expected_shuffled_blocks(c.lengths, M[:, cols["ones"]].astype(np.int64), gamma)
    else:
        M[:, cols["shuf_blocks"]] = st.shuffled_blocks(c, gamma, shuffles, seed)
    return SteadySums(M, cols, gamma, start)


def temporal(c: np.ndarray, cols: dict[str, int], gamma: int) -> np.ndarray:
    """The temporal part (E_shuf - E_true) / E_iid of the steady parts (stats.deficit)."""
    return np.asarray(st.deficit(c, cols, gamma)[2], dtype=np.float64)


def estimates(R: np.ndarray, c: np.ndarray, stats: dict[str, Callable[[np.ndarray], Any]]) -> dict[str, dict[str, Any]]:
    """{name: {"value", "ci"}} for statistics fn(c) of column sums: values at c, CIs from the
    resampled sums R (B x K), all percentiles in one call (estimate.percentile_cis)."""
    names = list(stats)
    if not names:
        return {}
    values = [num(stats[n](c)) for n in names]
    if R.shape[0] == 0:
        return {n: {"value": v, "ci": [None, None]} for n, v in zip(names, values)}
    lo, hi = percentile_cis(np.column_stack([np.asarray(stats[n](R), dtype=np.float64) for n in names]))
    return {n: {"value": v, "ci": [num(a), num(b)]} for n, v, a, b in zip(names, values, lo, hi)}


def steady_report(ss: SteadySums, W: np.ndarray) -> SteadyState:
    """The set's steady_state (report.SteadyState): autocorrelation, D/D_geom and the deficit split on
    positions t >= ss.start, with percentile-bootstrap CIs from the set's weights W."""
    cols, g = ss.cols, ss.gamma
    c = ss.M.sum(axis=0)
    R = W @ ss.M if W.shape[0] else np.zeros((0, ss.M.shape[1]))
    e = estimates(R, c, {
        "autocorr": lambda x: st.autocorr(x, cols),
        "autocorr_pooled": lambda x: st.autocorr_pooled(x, cols),
        "dispersion_ratio": lambda x: st.dispersion_ratio(x, cols),
        "total": lambda x: st.deficit(x, cols, g)[0],
        "hetero": lambda x: st.deficit(x, cols, g)[1],
        "temporal": lambda x: st.deficit(x, cols, g)[2],
    })
    alpha = st.alpha(c, cols)

    def estimate(name: str) -> Estimate:
        return Estimate(value=e[name]["value"], ci=list(e[name]["ci"]))

    return SteadyState(
        start=ss.start,
        n_streams=int((ss.M[:, cols["n"]] > 0).sum()),
        n_positions=int(c[cols["n"]]),
        alpha=num(alpha),
        autocorr=estimate("autocorr"),
        autocorr_pooled=estimate("autocorr_pooled"),
        dispersion_ratio=estimate("dispersion_ratio"),
        deficit=Deficit(gamma=g, total=estimate("total"), hetero=estimate("hetero"), temporal=estimate("temporal"),
                        E_true=num(st.E_true(c, cols, g)),
                        E_iid=num(E_iid(float(alpha), g)) if np.isfinite(alpha) else None,
                        E_shuf=num(st.E_shuf(c, cols))),
    )
