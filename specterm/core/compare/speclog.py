"""Parse the `-v` log of llama.cpp's `llama-speculative-simple` (draft-simple, greedy). Pure.

What the example prints per block (stderr, debug level; the draft-simple implementation logs the
top-3 candidates of each drafted position, candidate 0 being the token it drafts):

    spec        draft:  - seq_id 0, draft candidate   0, pos   0:    198 (   0.991) '<piece>'
    ...
    accepted K/N draft tokens, the last target token is: (ID)

and at the end

    decoded  128 tokens in    6.931 seconds, speed:   18.469 t/s
    n_predict = 128, n_drafted = ..., n_accept = ...

A block's emitted tokens are its first K drafted tokens and then the target's token ID (the
correction after a rejection, or the bonus token after a fully accepted block). A block whose emitted
tokens contain an end-of-generation token stops the loop; the example still logs its "accepted"
line, so the log gives every token llama.cpp emitted. Token pieces may contain newlines or quotes,
so only the fixed-format prefix of each line is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from specterm.core.drafted.walk import drafted_at
from specterm.core.errors import SpectermError

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CANDIDATE = re.compile(r"draft candidate\s+(\d+), pos\s+(\d+):\s+(-?\d+) \(")
_SEQ = re.compile(r"- seq_id\s+(\d+), draft candidate")
_ACCEPTED = re.compile(r"accepted (\d+)/(\d+) draft tokens, the last target token is: \((-?\d+)\)")
_DECODED = re.compile(r"decoded\s+(\d+) tokens in\s+([0-9.]+) seconds")
_ENCODED = re.compile(r"encoded\s+(\d+) tokens in\s+([0-9.]+) seconds")
# with -v the log adds a "0.14.082.304 I " prefix (time, level) to every line
_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([0-9.]+) ms")
_EVAL = re.compile(r"(?<!prompt )eval time =\s*([0-9.]+) ms")
_DRAFT_DUR = re.compile(r"dur\(b,g,a\) =\s*([0-9.]+),\s*([0-9.]+),\s*([0-9.]+) ms")
_COUNTER = re.compile(r"^(?:[\d.]+ [A-Z] )?\s*(n_draft|n_predict|n_drafted|n_accept)\s*=\s*(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class SpecBlock:
    """One verification block: the tokens drafted, how many the target accepted, its own token.

    The n-gram types log no drafted ids: their blocks carry `n_drafted` (N of the "accepted K/N" line)
    and an empty `drafted`."""

    drafted: tuple[int, ...]
    accepted: int
    target_token: int
    n_drafted: int | None = None

    @property
    def size(self) -> int:
        """N: the tokens drafted this block."""
        return len(self.drafted) if self.n_drafted is None else self.n_drafted

    @property
    def tokens(self) -> tuple[int, ...]:
        """What the block emitted: the accepted drafts, then the target's token."""
        if self.n_drafted is not None and self.accepted:
            raise ValueError("this log names no drafted tokens (an n-gram type); its accepted tokens are unknown")
        return self.drafted[: self.accepted] + (self.target_token,)


@dataclass(frozen=True)
class SpecLog:
    """Everything read from one `llama-speculative-simple -v` log."""

    blocks: tuple[SpecBlock, ...]
    decoded_tokens: int | None = None
    decoded_s: float | None = None
    encoded_tokens: int | None = None
    encoded_s: float | None = None
    counters: dict[str, int] = field(default_factory=dict)
    target_eval_s: float | None = None  # the target context's perf: prompt eval + eval time (every decode)
    draft_s: float | None = None        # the speculator's own durations, begin + gen + accept (the draft's work)

    @property
    def target_loop_s(self) -> float | None:
        """Seconds of the target context in the decode loop: its decodes but the prompt's (target_eval_s -
        encoded_s); None when the log lacks one of them."""
        if self.target_eval_s is None or self.encoded_s is None:
            return None
        return self.target_eval_s - self.encoded_s

    @property
    def forwards_s(self) -> float | None:
        """Seconds of the decode loop inside the models: target_loop_s plus the draft speculator's durations;
        None when the log lacks one of them."""
        target = self.target_loop_s
        return None if target is None or self.draft_s is None else target + self.draft_s

    @property
    def outside_s(self) -> float | None:
        """Seconds of the decode loop outside the models (SPEC 6 "The whole block's cost"): decoded_s - forwards_s."""
        fw = self.forwards_s
        return None if fw is None or self.decoded_s is None else self.decoded_s - fw

    @property
    def tokens(self) -> list[int]:
        """Every emitted token in order (up to and including an end-of-generation token)."""
        return [t for b in self.blocks for t in b.tokens]

    @property
    def accepted(self) -> npt.NDArray[np.int64]:
        """K of every block (the accepted-run histogram's raw data)."""
        return np.array([b.accepted for b in self.blocks], dtype=np.int64)

    @property
    def drafted(self) -> npt.NDArray[np.int64]:
        """N of every block (g, or fewer near the n_predict limit)."""
        return np.array([b.size for b in self.blocks], dtype=np.int64)

    @property
    def target_calls(self) -> int:
        """Target forwards of the decode loop: one verification per block."""
        return len(self.blocks)


def parse_speculative_log(text: str, seq_id: int = 0, drafts_logged: bool = True) -> SpecLog:
    """Blocks, emitted tokens and summary counters of a `llama-speculative-simple -v` log.

    drafts_logged=False (the n-gram types, which log no draft candidates): each block's K, N and target
    token only (SpecBlock.n_drafted).
    Raises SpectermError when the log has no "accepted K/N" line (not run with -v, or it failed
    before decoding) or when a block's K exceeds its N or its logged drafts are fewer than N.
    """
    text = _ANSI.sub("", text)
    blocks: list[SpecBlock] = []
    pending: dict[int, int] = {}  # pos -> candidate-0 token id of the block being drafted
    for line in text.splitlines():
        m = _CANDIDATE.search(line)
        if m:
            s = _SEQ.search(line)
            if (s is None or int(s.group(1)) == seq_id) and int(m.group(1)) == 0:
                pending[int(m.group(2))] = int(m.group(3))
            continue
        m = _ACCEPTED.search(line)
        if m:
            k, n, last = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if not drafts_logged:
                if k > n:
                    raise SpectermError(f"the speculative log's block {len(blocks) + 1} says {k}/{n} accepted; "
                                        "rerun llama-speculative-simple with -v.")
                blocks.append(SpecBlock(drafted=(), accepted=k, target_token=last, n_drafted=n))
                continue
            drafted = tuple(pending[p] for p in sorted(pending))[:n]
            if k > n or len(drafted) < n:
                raise SpectermError(f"the speculative log's block {len(blocks) + 1} says {k}/{n} accepted but logs "
                                    f"{len(drafted)} drafted tokens; rerun llama-speculative-simple with -v.")
            blocks.append(SpecBlock(drafted=drafted, accepted=k, target_token=last))
            pending = {}
    if not blocks:
        raise SpectermError("the log has no 'accepted K/N draft tokens' line; run llama-speculative-simple with -v "
                            "and check that it decoded.")
    dec = _DECODED.search(text)
    enc = _ENCODED.search(text)
    return SpecLog(blocks=tuple(blocks),
                   decoded_tokens=int(dec.group(1)) if dec else None, decoded_s=float(dec.group(2)) if dec else None,
                   encoded_tokens=int(enc.group(1)) if enc else None, encoded_s=float(enc.group(2)) if enc else None,
                   counters={m.group(1): int(m.group(2)) for m in _COUNTER.finditer(text)}, **_loop_times(text))


def _loop_times(text: str) -> dict[str, float | None]:
    """target_eval_s and draft_s from the summary the log ends with: the target context's perf lines (after
    "target:", `common_perf_print: prompt eval time = X ms` and `eval time = X ms`) and the draft-simple
    statistics' `dur(b,g,a) = b, g, a ms` (after "draft:"); None where absent."""
    tail = text[text.rfind("target:"):] if "target:" in text else ""
    pe, ev, dur = _PROMPT_EVAL.search(tail), _EVAL.search(tail), _DRAFT_DUR.search(text)
    target = None if pe is None or ev is None else (float(pe.group(1)) + float(ev.group(1))) / 1e3
    draft = None if dur is None else sum(float(dur.group(i)) for i in (1, 2, 3)) / 1e3
    return {"target_eval_s": target, "draft_s": draft}


def capped_walk_accepts(bits: npt.NDArray[np.uint8], gamma: int, n_predict: int) -> npt.NDArray[np.int64]:
    """K per block of the walk that `llama-speculative-simple -n n_predict` makes over stream `bits`.

    At emitted-token count s the example asks for b = min(gamma, n_predict - s - 1) drafts; a budget
    b <= 0 means "no limit" to the speculator (common_speculative_draft truncates only when n_max > 0),
    so that block drafts gamma. It stops once s > n_predict. Each block: K = leading ones of
    a_s .. a_{s+d-1}, s += K + 1 (SPEC 2's walk otherwise). The last block starts at s <= n_predict
    and may draft gamma, so the walk needs n_predict + gamma + 1 positions: with
    n_predict = n - 1 - gamma every block lies inside a stream of n, and the example emits between
    n - gamma and n tokens. Raises ValueError when `bits` is too short for that.
    """
    a = np.asarray(bits, dtype=np.uint8)
    n = a.size
    if n < n_predict + gamma + 1:
        raise ValueError(f"the walk of -n {n_predict} at g = {gamma} needs {n_predict + gamma + 1} positions, "
                         f"the stream has {n}")
    zeros = np.flatnonzero(a == 0)
    out: list[int] = []
    s = 0
    while s <= n_predict:
        budget = min(gamma, n_predict - s - 1)
        d = budget if budget > 0 else gamma
        nxt = zeros[np.searchsorted(zeros, s):]
        run = int(nxt[0] - s) if nxt.size else n - s  # leading ones from s
        k = min(run, d)
        out.append(k)
        s += k + 1
    return np.array(out, dtype=np.int64)


def n_predict_for(n: int, gamma: int) -> int:
    """The -n that keeps every block of llama-speculative-simple inside a stored stream of n tokens
    (see capped_walk_accepts): n - 1 - gamma (0 or less: the stream is too short for this g)."""
    return n - 1 - gamma


def capped_drafter_walk(runs: npt.NDArray[np.integer], proposed: npt.NDArray[np.integer], gamma: int, n_predict: int,
                        min_draft: int = 0, max_gamma: npt.NDArray[np.integer] | None = None,
                        context_left: int | None = None, end: int | None = None
                        ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(N, K) per block of the walk `llama-speculative-simple -n n_predict` makes with a drafter that needs
    no model (SPEC 2b: L_s and m_s at every emitted count s, the drafter's rule min_draft and caps
    max_gamma_s as core/drafted/walk.drafted_at reads them; its draft length g is `gamma`):

        d = drafted_at(g, m_s, min_draft, cap_s)          the drafter's own draft at g
        b = min(context_left - s, n_predict - s - 1)      the example's n_draft_max (context_left: n_ctx - n_past - 2 at s = 0)
        b > 0: d = min(d, b)                              (b <= 0: no limit, as for capped_walk_accepts)
        K = min(L_s, d);  s += K + 1                      until s > n_predict, or s >= end

    `end`: the length of y when y ends with an end-of-generation token (the example stops after the block
    that emits it); else every block must lie inside the stream (n_predict + gamma + 1 positions, as
    capped_walk_accepts; ValueError otherwise). The prefill of prompt[:-1] is a target call outside these
    blocks."""
    L = np.asarray(runs, dtype=np.int64)
    m = np.asarray(proposed, dtype=np.int64)
    if end is None and L.size < n_predict + gamma + 1:
        raise ValueError(f"the walk of -n {n_predict} at g = {gamma} needs {n_predict + gamma + 1} positions, "
                         f"the stream has {L.size}")
    stop = n_predict + 1 if end is None else min(n_predict + 1, end)
    sizes: list[int] = []
    accepts: list[int] = []
    s = 0
    while s < stop:
        cap = int(max_gamma[s]) if max_gamma is not None else gamma
        d = int(drafted_at(gamma, int(m[s]), min_draft, cap))
        budget = n_predict - s - 1 if context_left is None else min(context_left - s, n_predict - s - 1)
        if budget > 0:
            d = min(d, budget)
        k = min(int(L[s]), d)
        sizes.append(d)
        accepts.append(k)
        s += k + 1
    return np.array(sizes, dtype=np.int64), np.array(accepts, dtype=np.int64)
