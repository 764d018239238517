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
  (stats.expected_shuffled_blocks, as the report's own split is by default), the limit S -> infinity
  of SPEC 3's average over S shuffles: no Monte-Carlo error, and the same for every seed.
  `steady_sums(..., exact=False)` with S > 0 shuffles uses S shuffles with the set's seed instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specterm.core.streams import stats as st
from specterm.core.streams.stats import ESB_CHUNK, expected_shuffled_blocks  # noqa: F401  (re-exported: steady's own column)
from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.estimate import num, percentile_cis
from specterm.core.streams.geometry import (
    concat_streams,
    segment_runs,
    stream_totals,
    zeros_by_stream,
    transition_counts,
    walk_blocks,
)
from specterm.core.params import SHUFFLES, STEADY_FROM
from specterm.core.report.types import Deficit, Estimate, SteadyState

COLUMNS = ("n", "ones", "n11", "n1x", "n01", "n0x", "ac_val", "ac_def", "runs", "L", "L2")


@dataclass(frozen=True)
class SteadySums:
    """M (N x K) of the steady parts a[start:], columns COLUMNS + blocks_<gamma> + shuf_blocks."""

    M: np.ndarray
    cols: dict[str, int]
    gamma: int
    start: int
    esb_carry: float = 0.0
    """The exact shuffle column's running sum after these streams (stats.StreamSums.esb_carry)."""


def steady_sums(a: Sequence[np.ndarray], gamma: int, shuffles: int = SHUFFLES, seed: int = 0,
                start: int = STEADY_FROM, exact: bool = True, esb_carry: float = 0.0) -> SteadySums:
    """Per-stream sums of the steady parts a_i[start:] (see the module docstring). exact: the shuffle
    column is `expected_shuffled_blocks` (else the mean over `shuffles` in-place shuffles, `seed`),
    continued from `esb_carry` (stats.stream_sums: a set's streams in chunks stack to one pass)."""
    names = [*COLUMNS, f"blocks_{gamma}", "shuf_blocks"]
    cols = {name: i for i, name in enumerate(names)}
    cut = [np.asarray(x)[start:] for x in a]
    c = concat_streams(cut)
    N = c.starts.size
    M = np.zeros((N, len(names)))
    if N == 0:
        return SteadySums(M, cols, gamma, start, esb_carry)
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
    if shuffles == 0:  # no shuffle control asked for (as stats.stream_sums): hetero/temporal undefined
        M[:, cols["shuf_blocks"]] = np.nan
    elif exact or shuffles < 0:
        M[:, cols["shuf_blocks"]], esb_carry = st.expected_shuffled_blocks_from(
            c.lengths, M[:, cols["ones"]].astype(np.int64), gamma, esb_carry)
    else:
        M[:, cols["shuf_blocks"]] = st.shuffled_blocks(c, gamma, shuffles, seed)
    return SteadySums(M, cols, gamma, start, esb_carry)


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
