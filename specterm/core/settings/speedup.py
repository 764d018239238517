"""Speedup on a profile's measured costs of the draft-length policies engines can express (SPEC 5
replayed on the stored streams, SPEC 6 costs). Pure numpy.

A policy drafts d tokens in a block (d varies by block for the confidence stop and the heuristic).
With H[d] the blocks that drafted d tokens and n the tokens emitted (every policy emits the whole
continuation),

    S = n c_decode / sum_d H[d] c_block(d)
    c_block(d) = c_verify(d) + f(d) c_draft + c_draft_fwd(max(d, 1)) + o(d)       c_verify(0) = c_decode

f(d) = d draft steps, plus one where an exclusive confidence stop (llama.cpp `p_min`) evaluated the
refused token (d < g_max: the draft ran a forward whose top-1 fell below tau); c_draft_fwd is the
engine's per-block term when the profile has one (llama.cpp), else 0; o(d) = a + b d the block overhead
(hardware/overhead.py) where the profile measured it, else 0. For fixed g (H[g] = blocks)
S is the decision's S_hw(g) (hardware.decision_hw) exactly, and its interval pairs the same prompt
resamples W with the same cost replicates. A depth the cost curve did not time is read off the
curve: interpolated inside it, beyond its largest g on the least-squares line through it (the
heuristic can grow past the curve); `BlockCosts.extrapolated` says from which depth.

Without measured costs (imported bits) the memory-bound reference of SPEC 6 stands in: c_decode =
c_verify(d) = 1, c_draft = r, no engine term; its interval resamples prompts only.

Depths per block come from one walk over all streams at once: every stream's per-position depth and
accepted run are capped at its own end, so the walk s -> s + min(k + 1, left) steps from one stream's
last block exactly onto the next stream's start (`replay.block_starts` over the concatenation). The
numbers equal the one-stream replays of replay.py (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from specterm.core.streams.bootstrap import percentile_ci
from specterm.core.errors import SpectermError
from specterm.core.decide.costmodel import block_cost
from specterm.core.decide.hardware.curve import CostCurve, CostReplicates
from specterm.core.decide.hardware.drift import drift_replicates
from specterm.core.decide.replay import block_starts, check_gamma, replay_heuristic

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

FIXED, STOP, STOP_INCLUSIVE, HEURISTIC = "fixed", "confidence", "confidence-inclusive", "heuristic"


@dataclass(frozen=True)
class Policy:
    """One draft-length policy: fixed g; a confidence stop at tau up to g_max (exclusive: llama.cpp's
    `p_min`, the refused token is not proposed; inclusive: Hugging Face's `assistant_confidence_threshold`,
    it is, then drafting stops); the Hugging Face heuristic schedule from g0 (`gamma` holds g, g_max or g0)."""

    kind: str
    gamma: int
    tau: float | None = None

    def params(self) -> dict[str, float | int]:
        if self.kind == FIXED:
            return {"gamma": self.gamma}
        if self.kind == HEURISTIC:
            return {"g0": self.gamma}
        assert self.tau is not None
        return {"tau": self.tau, "g_max": self.gamma}

    def describe(self) -> str:
        if self.kind == FIXED:
            return f"fixed g = {self.gamma}"
        if self.kind == HEURISTIC:
            return f"heuristic schedule from g0 = {self.gamma}"
        word = "confidence stop" if self.kind == STOP else "confidence stop (inclusive)"
        return f"{word} at tau = {self.tau:g} up to g_max = {self.gamma}"


@dataclass(frozen=True)
class Streams:
    """The analysed streams of a set end to end: bits, draft confidences (NaN where a stream has none),
    each position's positions left in its stream, its ones ahead within the stream, and the stream ends."""

    bits: NDArray[np.uint8]
    conf: Array | None
    left: IntArray
    ones: IntArray
    ends: IntArray

    _fails: dict[float, IntArray] = field(default_factory=dict, compare=False, repr=False)

    @property
    def lengths(self) -> IntArray:
        return np.diff(np.concatenate([[0], self.ends])).astype(np.int64)

    def to_fail(self, tau: float) -> IntArray:
        """Per position, the distance to the next position whose confidence is below tau (NaN counts as
        below; the concatenation's end when none), computed once per tau."""
        if tau not in self._fails:
            assert self.conf is not None
            self._fails[tau] = _distance_to_next(~(self.conf >= tau))
        return self._fails[tau]


def _distance_to_next(mask: NDArray[np.bool_]) -> IntArray:
    """For each t, (first u >= t with mask[u], or mask.size) - t."""
    n = mask.size
    hits = np.flatnonzero(mask)
    nxt = np.append(hits, n)[np.searchsorted(hits, np.arange(n))]
    return (nxt - np.arange(n)).astype(np.int64)


def stack(bits: Sequence[np.ndarray], conf: Sequence[np.ndarray | None] | None = None) -> Streams:
    """`Streams` from per-stream bits and (optionally) draft confidences."""
    lengths = np.array([np.asarray(b).size for b in bits], dtype=np.int64)
    ends = np.cumsum(lengths).astype(np.int64)
    flat = np.concatenate([np.asarray(b, dtype=np.uint8) for b in bits]) if len(bits) else np.zeros(0, np.uint8)
    t = np.arange(flat.size, dtype=np.int64)
    left = np.repeat(ends, lengths) - t
    ones = np.minimum(_distance_to_next(flat == 0), left)
    c = None
    if conf is not None and any(x is not None for x in conf):
        parts = []
        for b, x in zip(bits, conf):
            if x is not None and np.asarray(x).size != np.asarray(b).size:
                raise SpectermError(f"draft_conf has {np.asarray(x).size} values but the stream has {np.asarray(b).size} "
                                    "positions; re-create the run.")
            parts.append(np.full(np.asarray(b).size, np.nan) if x is None else np.asarray(x, dtype=np.float64))
        c = np.concatenate(parts) if parts else np.zeros(0)
    return Streams(bits=flat, conf=c, left=left, ones=ones, ends=ends)


def _histogram(s: Streams, starts: IntArray, depth_at_start: IntArray, width: int) -> IntArray:
    """(N x width) blocks per stream and drafted depth."""
    N = s.ends.size
    sid = np.searchsorted(s.ends, starts, side="right")
    return np.bincount(sid * width + depth_at_start, minlength=N * width).reshape(N, width).astype(np.int64)


def depth_counts(s: Streams, policy: Policy, width: int | None = None) -> IntArray:
    """(N x width) H[i, d]: blocks of stream i under `policy` that drafted d tokens (width: at least
    the largest depth + 1; default g + 1, or what the heuristic reaches).

    Per position t (within its stream, `left` positions from its end):
        fixed g:              depth_t = g
        confidence stop:      depth_t = min(distance to the next t' >= t with conf < tau, g_max)
                              (+ 1 when inclusive; g_max when no such t' is left in the stream)
        k_t = min(ones_t, depth_t);  blocks start where s -> s + min(k_s + 1, left_s) lands.
    The heuristic's depth depends on the block before, so it is replayed per stream
    (`replay.replay_heuristic`)."""
    g = check_gamma(policy.gamma)
    N = s.ends.size
    if policy.kind == HEURISTIC:
        rows, starts0 = [], np.concatenate([[0], s.ends[:-1]]) if N else np.zeros(0, np.int64)
        for a, b in zip(starts0.tolist(), s.ends.tolist()):
            rows.append(replay_heuristic(s.bits[a:b], g0=g).drafts)
        top = max([int(r.max()) for r in rows if r.size] + [g])
        w = max(width or 0, top + 1)
        out = np.zeros((N, w), dtype=np.int64)
        for i, r in enumerate(rows):
            out[i] = np.bincount(r, minlength=w)
        return out
    if policy.kind == FIXED:
        depth = np.full(s.bits.size, g, dtype=np.int64)
    elif policy.kind in (STOP, STOP_INCLUSIVE):
        if s.conf is None:
            raise SpectermError("the confidence stop needs the draft's confidences (draft_conf), which this run did not store.")
        assert policy.tau is not None
        to_fail = s.to_fail(policy.tau)
        depth = np.minimum(to_fail + int(policy.kind == STOP_INCLUSIVE), g)
        depth[to_fail >= s.left] = g  # no failure left in the stream: past its end counts as confident
    else:
        raise ValueError(f"unknown policy kind {policy.kind!r}")
    step = np.minimum(np.minimum(s.ones, depth) + 1, s.left)
    starts = block_starts(step)
    return _histogram(s, starts, depth[starts], max(width or 0, g + 1))


def draft_forwards(policy: Policy, width: int) -> Array:
    """f(d), d = 0..width-1: the draft steps a block of depth d costs (module docstring)."""
    d = np.arange(width, dtype=np.float64)
    if policy.kind == STOP:
        return d + (d < policy.gamma)
    return d


@dataclass(frozen=True)
class BlockCosts:
    """Costs by drafted depth d = 0..D on one profile (seconds), point and replicates (None: none)."""

    c_decode: float
    c_verify: Array                   # (D+1,)
    c_draft: float
    c_fwd: Array | None               # (D+1,) the engine's per-block term
    measured: bool
    extrapolated: int | None = None   # the first depth beyond the timed curve (None: none)
    rep_decode: Array | None = None   # (n,)
    rep_verify: Array | None = None   # (n, D+1)
    rep_draft: Array | None = None    # (n,)
    rep_fwd: Array | None = None      # (n, D+1)
    c_over: Array | None = None       # (D+1,) the block overhead o(d) (hardware/overhead.py; None: not measured)
    rep_over: Array | None = None     # (n, D+1)

    @property
    def width(self) -> int:
        return int(self.c_verify.size)

    def block(self, policy: Policy) -> Array:
        """c_block(d) at the point costs."""
        return block_cost(self.c_verify, self.c_draft, draft_forwards(policy, self.width),
                          c_draft_fwd=self.c_fwd, overhead=self.c_over)

    def block_replicates(self, policy: Policy) -> Array | None:
        """(n, D+1) c_block(d) per cost replicate (None without replicates)."""
        if self.rep_verify is None or self.rep_draft is None:
            return None
        over = None if self.c_over is None else (self.c_over[None, :] if self.rep_over is None else self.rep_over)
        return block_cost(self.rep_verify, self.rep_draft[:, None], draft_forwards(policy, self.width)[None, :],
                          c_draft_fwd=self.rep_fwd, overhead=over)


def _on_depths(gammas: IntArray, values: Array, depths: IntArray) -> Array:
    """values (... x G) at each depth >= 1: interpolated between the curve's g, beyond its largest g on
    the least-squares line through all of them, below its smallest at the smallest."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    x = gammas.astype(np.float64)
    d = np.clip(depths.astype(np.float64), x[0], x[-1])
    hi = np.clip(np.searchsorted(x, d), 1, max(x.size - 1, 1)) if x.size > 1 else np.zeros(d.size, dtype=np.int64)
    lo = np.maximum(hi - 1, 0)
    span = np.where(x[hi] > x[lo], x[hi] - x[lo], 1.0)
    w = np.where(x[hi] > x[lo], (d - x[lo]) / span, 0.0)
    out = v[:, lo] * (1.0 - w) + v[:, hi] * w
    beyond = depths > gammas[-1]
    if beyond.any() and gammas.size >= 2:
        slope, icpt = np.polyfit(x, v.T, 1)
        out[:, beyond] = icpt[:, None] + slope[:, None] * depths[beyond][None, :].astype(np.float64)
    return out if np.ndim(values) > 1 else out[0]


def block_costs(curve: CostCurve | None, reps: CostReplicates | None, depth_max: int,
                r_fallback: float) -> BlockCosts:
    """BlockCosts for depths 0..depth_max from the profile's robust cost curve and its replicates;
    without a curve, the memory-bound reference at r_fallback (module docstring)."""
    depths = np.arange(1, depth_max + 1, dtype=np.int64)
    if curve is None:
        return BlockCosts(c_decode=1.0, c_verify=np.ones(depth_max + 1), c_draft=float(r_fallback), c_fwd=None,
                          measured=False)
    g = curve.gammas.astype(np.int64)
    ver = np.concatenate([[curve.c_decode], _on_depths(g, curve.c_verify, depths)])
    fwd = None
    if curve.c_draft_fwd is not None:
        f = _on_depths(g, curve.c_draft_fwd, depths)
        fwd = np.concatenate([[f[0]], f])  # a block that drafted nothing still re-fed the draft its last tokens
    beyond = int(g[-1]) + 1
    d_all = np.arange(depth_max + 1, dtype=np.float64)
    over = None if curve.block_overhead is None else curve.block_overhead.at(d_all)  # o(d) = a + b d, a line at every d
    out = BlockCosts(c_decode=float(curve.c_decode), c_verify=ver, c_draft=float(curve.c_draft), c_fwd=fwd,
                     measured=True, extrapolated=beyond if depth_max >= beyond else None, c_over=over)
    if reps is None:
        return out
    rv = np.concatenate([reps.c_decode[:, None], _on_depths(g, reps.c_verify, depths)], axis=1)
    rf = None
    if fwd is not None and reps.c_draft_fwd is not None:
        f = _on_depths(g, reps.c_draft_fwd, depths)
        rf = np.concatenate([f[:, :1], f], axis=1)
    elif fwd is not None:
        rf = np.broadcast_to(fwd, rv.shape).copy()
    r_over = None
    if over is not None and reps.overhead is not None and g.size >= 2:
        # each replicate's o(g) is a line over the curve's g: its own a and b from the two ends
        b = (reps.overhead[:, -1] - reps.overhead[:, 0]) / float(g[-1] - g[0])
        r_over = (reps.overhead[:, 0] - b * float(g[0]))[:, None] + b[:, None] * d_all[None, :]
    return BlockCosts(c_decode=out.c_decode, c_verify=ver, c_draft=out.c_draft, c_fwd=fwd, measured=True,
                      extrapolated=out.extrapolated, rep_decode=reps.c_decode, rep_verify=rv,
                      rep_draft=reps.c_draft, rep_fwd=rf, c_over=over, rep_over=r_over)


@dataclass(frozen=True)
class PolicySpeedup:
    """One policy on one set: S on the profile's costs, its 95% interval (prompts and cost samples
    resampled as the decision's), tokens and drafted tokens per block."""

    policy: Policy
    value: float | None
    ci: tuple[float | None, float | None]
    tokens_per_block: float | None
    drafted_per_block: float | None


def _fit(H: IntArray, width: int) -> IntArray:
    if H.shape[1] >= width:
        return H
    return np.pad(H, ((0, 0), (0, width - H.shape[1])))


def point_speedup(n: IntArray, H: IntArray, costs: BlockCosts, policy: Policy) -> float | None:
    """S at the point costs, without an interval (the candidates' ranking; `policy_speedup` for the winner)."""
    blocks = np.asarray(H, dtype=np.float64).sum(axis=0)
    if not blocks.sum():
        return None
    return float(np.asarray(n, dtype=np.float64).sum() * costs.c_decode / (blocks @ costs.block(policy)[: blocks.size]))


def policy_speedup(n: IntArray, H: IntArray, costs: BlockCosts, policy: Policy,
                   W: np.ndarray | None = None, drift: Array | None = None) -> PolicySpeedup:
    """S = sum n c_decode / sum_d H[d] c_block(d) (module docstring) and its interval: replicate b
    pairs the prompt resample W[b] (B x N multinomial weights) with cost replicate b, as
    hardware.decision_hw does, times drift[b] where given (a prediction interval's drift of costs between
    sessions, hardware/drift.py); measured costs without replicates give no interval."""
    width = max(costs.width, H.shape[1])
    if width > costs.width:
        raise SpectermError(f"{policy.describe()} drafts {H.shape[1] - 1} tokens in a block, beyond the {costs.width - 1} "
                            "the costs were laid out for.")
    H = _fit(np.asarray(H, dtype=np.int64), width)
    n = np.asarray(n, dtype=np.float64)
    blocks = H.sum(axis=0).astype(np.float64)
    d = np.arange(width, dtype=np.float64)
    nb = float(blocks.sum())
    value = float(n.sum() * costs.c_decode / (blocks @ costs.block(policy))) if nb else None
    ci: tuple[float | None, float | None] = (None, None)
    if W is not None and np.asarray(W).shape[0] and nb:
        Wm = np.asarray(W, dtype=np.float64)
        if costs.measured:
            rep = costs.block_replicates(policy)
            if rep is not None and costs.rep_decode is not None:
                k = min(Wm.shape[0], rep.shape[0])
                S = (Wm[:k] @ n) * costs.rep_decode[:k] / np.einsum("bd,bd->b", Wm[:k] @ H, rep[:k])
                ci = _ci(S if drift is None else S * drift[:k])
        else:
            S = (Wm @ n) * costs.c_decode / ((Wm @ H) @ costs.block(policy))
            ci = _ci(S if drift is None else S * drift[: S.size])
    return PolicySpeedup(policy=policy, value=value, ci=ci,
                         tokens_per_block=float(n.sum() / nb) if nb else None,
                         drafted_per_block=float((blocks @ d) / nb) if nb else None)


def _ci(S: Array) -> tuple[float | None, float | None]:
    lo, hi = percentile_ci(S)
    return (float(lo), float(hi)) if np.isfinite(lo) and np.isfinite(hi) else (None, None)


def prediction_interval(s: Streams, policy: Policy, costs: BlockCosts, K: int, boot: int,
                        seed: int, sigma: float = 0.0) -> tuple[float | None, tuple[float | None, float | None]]:
    """SPEC 6's decision check for a policy: S on the leave-out streams `s` at the point costs, and a 95%
    *prediction* interval for K new prompts: replicate b draws K of the streams with replacement and
    pairs them with cost replicate b (prompts only without cost replicates), times exp(sigma Z_b), the
    drift of costs between sessions on the profile's machine (hardware/drift.py; the profile's
    cost_drift sigma, 0: none)."""
    N = s.ends.size
    if N == 0 or K < 1:
        return None, (None, None)
    H = depth_counts(s, policy, costs.width)
    n = s.lengths
    value = point_speedup(n, H, costs, policy)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, N, size=(boot, K))
    W = np.zeros((boot, N))
    np.add.at(W, (np.repeat(np.arange(boot), K), draws.ravel()), 1.0)
    got = policy_speedup(n, H, costs, policy, W, drift_replicates(sigma, boot, seed) if sigma > 0 else None)
    return value, got.ci
