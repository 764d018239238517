"""Sampling acceptance beta_t = 1 - TV(p_t, q_t) = sum_v min(p_t(v), q_t(v)) (SPEC 3, "Sampling acceptance").

beta_t is the probability that sampled speculative decoding at temperature 1 accepts the drafted
token at position t of the greedy trajectory y (SPEC 1.4). Per-stream sums, as in stats.py, on the
analysed positions (before the first gate failure):

    beta_sum, beta_n   sum of beta_t and positions with beta       (0, 0 for a stream without beta)
    bac_val, bac_def   rho_i * defined_i, defined_i                (lag-1 autocorrelation of beta)

    beta_bar          = sum beta_sum / sum beta_n                  (ratio of sums, beside alpha)
    E_iid_beta(g)     = E_iid(beta_bar, g) = (1 - beta_bar^(g+1)) / (1 - beta_bar)
    beta_autocorr     = sum bac_val / sum bac_def                  (mean of rho_i over defined streams)

    rho_i = Pearson corr((beta_0 .. beta_{n-2}), (beta_1 .. beta_{n-1})) of stream i: the sample
            correlation of the n - 1 lagged pairs, each side centred on its own mean (np.corrcoef).

Choices where the SPEC is silent:

- rho_i is defined when n >= 3 (at least two pairs) and neither lagged side is constant (tested
  exactly: some beta_t != beta_{t+1} among the pairs of that side); the set's value is the
  unweighted mean over defined streams, like the per-stream p11 - p10.
- Streams without beta (imported bits) add nothing to any column. The numbers are over the
  streams that store beta (`streams` says how many); with none, every number is null, never an error.
- The moment sums are taken after centring each stream's beta on its own mean (Pearson is
  shift-invariant), so S_xx = sum x^2 - (sum x)^2 / m does not cancel when beta is near 1 everywhere.
- Caveat: the sample lag-1 correlation of n points is biased by about -(1 + 3 rho)/n (-0.008 at
  n = 128 when rho = 0), like the per-stream p11 - p10.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from specterm.core.streams.blockwalk import E_iid
from specterm.core.streams.estimate import bootstrap_estimate, div, null
from specterm.core.params import YIELD_GAMMAS
from specterm.core.report.types import Sampling

SAMPLING_COLUMNS = ("beta_sum", "beta_n", "bac_val", "bac_def")
COLS = {name: i for i, name in enumerate(SAMPLING_COLUMNS)}


def analysed_beta(stream: Any) -> np.ndarray | None:
    """A stream's beta on its analysed positions (Stream.kept), None when not stored."""
    beta = getattr(stream, "beta", None)
    return None if beta is None else stream.analysed(beta)


def segment_sums(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per segment sums of x laid out segment after segment (counts[i] values each; empty segments give 0)."""
    out = np.zeros(counts.size)
    nz = counts > 0
    if nz.any():
        out[nz] = np.add.reduceat(x, (np.cumsum(counts) - counts)[nz])
    return out


def _concat(betas: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """(values of all streams end to end as float64, length of each stream; 0 without beta)."""
    lengths = np.array([0 if b is None else np.asarray(b).size for b in betas], dtype=np.int64)
    parts = [np.asarray(b).ravel() for b in betas if b is not None]
    v = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
    return v, lengths


def spans_sums(x: np.ndarray, lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per span i the sum of x[lo[i] : lo[i] + counts[i]] (0 for an empty span), spans in increasing
    order and not overlapping: one np.add.reduceat over the span bounds, the gaps between spans summed
    and dropped. Each span is reduced as np.add.reduceat reduces it in `segment_sums` (its first value
    plus numpy's pairwise sum of the rest), so the same values give the same bits."""
    out = np.zeros(counts.size)
    nz = np.flatnonzero(counts > 0)
    if nz.size:
        bounds = np.empty(2 * nz.size, dtype=np.int64)
        bounds[0::2] = lo[nz]
        bounds[1::2] = lo[nz] + counts[nz]
        if bounds[-1] == x.size:  # the last span runs to the end: no bound after it
            bounds = bounds[:-1]
        out[nz] = np.add.reduceat(x, bounds)[0::2]
    return out


def _lag1(v: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """lag1_pearson on concatenated values (see there). The pairs of stream i (starting at s_i) are
    x = v[s_i : s_i + m_i] and y = v[s_i + 1 : s_i + 1 + m_i], m_i = n_i - 1; their sums are taken on
    v, v^2, and the neighbour products and changes of the whole concatenation, span by span
    (`spans_sums`: the same values in the same order as in x and y laid end to end, so the same bits)."""
    N = lengths.size
    rho, defined = np.zeros(N), np.zeros(N, dtype=bool)
    m = np.maximum(lengths - 1, 0)  # lagged pairs per stream
    if m.sum() == 0:
        return rho, defined
    with np.errstate(divide="ignore", invalid="ignore"):
        v = v - np.repeat(segment_sums(v, lengths) / lengths, lengths)  # centre each stream on its mean
    starts = np.cumsum(lengths) - lengths
    # A side is constant iff no step changes within it: x's steps are pairs 0..n-3, y's are 1..n-2.
    step = (v[:-1] != v[1:]).astype(np.float64)  # step[t]: beta_t != beta_{t+1} (t the pair's x index)
    steps = spans_sums(step, starts, m)
    pairs = m > 0
    x_moves = steps.copy()
    y_moves = steps.copy()
    x_moves[pairs] -= step[starts[pairs] + m[pairs] - 1]
    y_moves[pairs] -= step[starts[pairs]]
    # Moments of the centred values: S_xy = sum xy - sum x sum y / m (the means are near 0 after centring).
    vv = v * v
    with np.errstate(divide="ignore", invalid="ignore"):
        sx, sy = spans_sums(v, starts, m), spans_sums(v, starts + 1, m)
        sxx = spans_sums(vv, starts, m) - sx * sx / m
        syy = spans_sums(vv, starts + 1, m) - sy * sy / m
        sxy = spans_sums(v[:-1] * v[1:], starts, m) - sx * sy / m
    defined = (lengths >= 3) & (x_moves > 0) & (y_moves > 0) & (sxx > 0) & (syy > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(defined, sxy / np.sqrt(sxx * syy), 0.0)
    return np.clip(rho, -1.0, 1.0), defined


def lag1_pearson(betas: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """(rho, defined) per stream: Pearson correlation of (beta_t, beta_{t+1}) within the stream.

    rho = S_xy / sqrt(S_xx S_yy) over the n - 1 pairs, x = beta_0..beta_{n-2}, y = beta_1..beta_{n-1},
    S_xy = sum (x - mean x)(y - mean y). Defined when n >= 3 and neither side is constant; rho is 0
    where undefined (so that rho * defined is a column). Vectorised over all positions of all streams.
    """
    return _lag1(*_concat(betas))


@dataclass(frozen=True)
class SamplingSums:
    """M (N x 4): columns SAMPLING_COLUMNS (see the module docstring)."""

    M: np.ndarray
    cols: dict[str, int]

    @property
    def streams_with_beta(self) -> int:
        return int((self.M[:, self.cols["beta_n"]] > 0).sum())


def sampling_sums(betas: Sequence[np.ndarray | None]) -> SamplingSums:
    """Per-stream sums from each stream's analysed beta (None: the stream stores no beta)."""
    v, lengths = _concat(betas)
    M = np.zeros((lengths.size, len(SAMPLING_COLUMNS)))
    M[:, COLS["beta_sum"]] = segment_sums(v, lengths)
    M[:, COLS["beta_n"]] = lengths
    rho, defined = _lag1(v, lengths)
    M[:, COLS["bac_val"]] = rho * defined
    M[:, COLS["bac_def"]] = defined
    return SamplingSums(M, COLS)


# ------------------------------------------------ statistics of column sums c (..., K) ---


def beta_bar(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """beta_bar = sum beta_t / sum n over the positions that have beta."""
    return div(c[..., cols["beta_sum"]], c[..., cols["beta_n"]])


def beta_autocorr(c: np.ndarray, cols: dict[str, int]) -> np.ndarray:
    """Mean over defined streams of the per-stream lag-1 Pearson correlation of beta."""
    return div(c[..., cols["bac_val"]], c[..., cols["bac_def"]])


def E_iid_beta(c: np.ndarray, cols: dict[str, int], gamma: int) -> np.ndarray:
    """E_iid(beta_bar, gamma): the yield per block i.i.d. sampling acceptance at rate beta_bar promises."""
    return E_iid(beta_bar(c, cols), gamma)


# ----------------------------------------------------------------------- the report ---


def sampling_report(ss: SamplingSums, W: np.ndarray, R: np.ndarray | None = None) -> Sampling:
    """beta_bar, beta_autocorr and E_iid(beta_bar, g) for g in YIELD_GAMMAS with percentile-bootstrap CIs.

    W: bootstrap weights (B x N) over the same streams as ss.M; R = W @ ss.M when the caller has it.
    """
    cols = ss.cols
    c = ss.M.sum(axis=0)
    n_beta, n_def = ss.streams_with_beta, int(c[cols["bac_def"]])
    if n_beta == 0:
        return Sampling(beta_bar=null(), beta_autocorr=null(), E_iid_beta={str(g): null() for g in YIELD_GAMMAS})
    R = W @ ss.M if R is None else R
    return Sampling(
        beta_bar=bootstrap_estimate(beta_bar, c, R, cols),
        beta_autocorr=bootstrap_estimate(beta_autocorr, c, R, cols) if n_def else null(),
        E_iid_beta={str(g): bootstrap_estimate(E_iid_beta, c, R, cols, g) for g in YIELD_GAMMAS},
        streams=n_beta,
        autocorr_streams=n_def,
    )
