"""The oracle's side of `specterm compare-counters`: what the stored streams say an engine should
count at draft length g, and one sentence reading production against it. Pure numpy.

On a set's streams at fixed g (SPEC 2's walk, `blockwalk.block_accepts`: k per block):

    acceptance length  L = 1 + sum k / blocks            (tokens per verification step)
    acceptance rate    A = sum k / (g blocks)            (accepted per drafted token)
    per position j     P(k >= j) = #{blocks: k >= j} / blocks,  j = 1..g

each a ratio of sums over streams with a percentile-bootstrap 95% interval (multinomial weights over
streams, as every statistic of the report). The engines count the same things: vLLM's and SGLang's
mean acceptance length is 1 + accepted / drafts, llama.cpp's "mean len" too; their per-position
counters divided by the drafts are P(k >= j).

A production number inside the interval reads "as measured"; below it, the traffic moved or the
engine drafts differently from what was measured; above it, the traffic is easier than the corpus.

Exact replay of one llama-server request (`server_walk`): the server emits its first token from
the prompt's forward, then from emitted count s drafts d = min(g, n_predict - s - 1) tokens (no
draft when d <= 0: a plain step), accepts k = leading ones of a_s .. a_{s+d-1} and moves to
s + k + 1, until n_predict tokens (tools/server/server-context.cpp, get_n_draft_max).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specterm.core.streams.blockwalk import block_accepts
from specterm.core.streams.bootstrap import multinomial_weights, percentile_ci
from specterm.core.decide.replay import check_gamma
from specterm.core.settings import names as nm
from specterm.core.settings.counters import Counters, Reading

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class OracleCounts:
    """Per stream at g: blocks, accepted draft tokens, and blocks with k >= j (N x g)."""

    gamma: int
    blocks: IntArray
    accepted: IntArray
    at_least: IntArray


def oracle_counts(bits: Sequence[np.ndarray], gamma: int) -> OracleCounts:
    """OracleCounts of each stream at fixed g (module docstring)."""
    g = check_gamma(gamma)
    ks = [block_accepts(np.asarray(b, dtype=np.uint8), g) for b in bits]
    at = np.array([[int((k >= j).sum()) for j in range(1, g + 1)] for k in ks], dtype=np.int64).reshape(len(ks), g)
    return OracleCounts(gamma=g, blocks=np.array([k.size for k in ks], dtype=np.int64),
                        accepted=np.array([int(k.sum()) for k in ks], dtype=np.int64), at_least=at)


def _ci(x: np.ndarray) -> tuple[float | None, float | None]:
    lo, hi = percentile_ci(x)
    return (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else (None, None)


@dataclass(frozen=True)
class OracleSummary:
    length: float | None
    length_ci: tuple[float | None, float | None]
    rate: float | None
    rate_ci: tuple[float | None, float | None]
    per_pos: list[float]


def oracle_summary(c: OracleCounts, boot: int = 2000, seed: int = 0) -> OracleSummary:
    """L, A and P(k >= j) of a set with percentile-bootstrap intervals over its streams."""
    blocks, acc = c.blocks.astype(np.float64), c.accepted.astype(np.float64)
    B = float(blocks.sum())
    if B == 0:
        return OracleSummary(None, (None, None), None, (None, None), [])
    L = 1.0 + acc.sum() / B
    A = acc.sum() / (c.gamma * B)
    lci: tuple[float | None, float | None] = (None, None)
    aci: tuple[float | None, float | None] = (None, None)
    if boot > 0 and blocks.size:
        W = multinomial_weights(blocks.size, boot, seed)
        wb, wa = W @ blocks, W @ acc
        with np.errstate(divide="ignore", invalid="ignore"):
            lci, aci = _ci(1.0 + wa / wb), _ci(wa / (c.gamma * wb))
    return OracleSummary(length=float(L), length_ci=lci, rate=float(A), rate_ci=aci,
                         per_pos=(c.at_least.sum(axis=0) / B).tolist())


def server_walk(bits: np.ndarray, gamma: int, n_predict: int) -> tuple[IntArray, IntArray]:
    """(k, d) per verification step of one llama-server request (module docstring): accepted and
    drafted tokens of every step that carried a draft. Raises ValueError when the stream is too short."""
    a = np.asarray(bits, dtype=np.uint8)
    if a.size < n_predict:
        raise ValueError(f"a request of {n_predict} tokens needs {n_predict} stored positions, the stream has {a.size}")
    zeros = np.flatnonzero(a == 0)
    ks: list[int] = []
    ds: list[int] = []
    s = 1
    while s < n_predict:
        d = min(gamma, n_predict - s - 1)
        if d <= 0:
            s += 1
            continue
        nxt = zeros[np.searchsorted(zeros, s):]
        run = int(nxt[0] - s) if nxt.size else a.size - s
        k = min(run, d)
        ks.append(k)
        ds.append(d)
        s += k + 1
    return np.array(ks, dtype=np.int64), np.array(ds, dtype=np.int64)


def _fmt_ci(ci: tuple[float | None, float | None]) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci[0] is not None and ci[1] is not None else "(no interval)"


def read_production(prod: Counters, oracle: OracleSummary, gamma: int, set_name: str) -> Reading:
    """Production beside the oracle at g on a set, and one sentence (module docstring)."""
    label = nm.SOURCES[prod.engine].label if prod.engine in nm.SOURCES else prod.engine
    if prod.acceptance_length is not None and oracle.length is not None:
        what, got, want, ci = "acceptance length", prod.acceptance_length, oracle.length, oracle.length_ci
        amount = f"{prod.drafts} verification steps"
    elif prod.acceptance_rate is not None and oracle.rate is not None:
        what, got, want, ci = "acceptance rate (accepted per drafted token)", prod.acceptance_rate, oracle.rate, oracle.rate_ci
        amount = f"{prod.draft_tokens} drafted tokens"
    else:
        text = f"{label}: the counters hold no drafts to compare (no verification steps or drafted tokens)."
        return Reading(engine=label, gamma=gamma, set_name=set_name, production=prod, oracle_length=oracle.length,
                       oracle_length_ci=oracle.length_ci, oracle_rate=oracle.rate, oracle_rate_ci=oracle.rate_ci,
                       oracle_per_pos=oracle.per_pos, text=text)
    lo, hi = ci
    head = (f"{label} at g = {gamma}: production {what} {got:.3f} ({amount}, {prod.records} record"
            f"{'s' if prod.records != 1 else ''}) against the oracle's {want:.3f} {_fmt_ci(ci)} on {set_name}")
    if lo is None or hi is None:
        tail = "; no interval to judge it by (bootstrap off)."
    elif got < lo:
        tail = ("; below the oracle's interval: the traffic has moved from the measured workload, or the engine drafts "
                "differently from what was measured (a p_min stop, a smaller draft limit, another draft model).")
    elif got > hi:
        tail = "; above the oracle's interval: the traffic is easier than the measured corpus."
    else:
        tail = "; inside the oracle's interval: the traffic and the engine behave as measured."
    return Reading(engine=label, gamma=gamma, set_name=set_name, production=prod, oracle_length=oracle.length,
                   oracle_length_ci=oracle.length_ci, oracle_rate=oracle.rate, oracle_rate_ci=oracle.rate_ci,
                   oracle_per_pos=oracle.per_pos, text=head + tail)
