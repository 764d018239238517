"""llama.cpp's `ngram-simple` speculative type (`--spec-type ngram-simple`, `--spec-ngram-simple-size-n`,
`--spec-ngram-simple-size-m`), as common/ngram-map.cpp `common_ngram_simple_draft` does it (vendored
llama.cpp of llama-cpp-python 0.3.36; speculative.cpp's `common_speculative_impl_ngram_simple` calls
it with the tokens before the last sampled one and that sampled token):

    tokens = context[:-1], sampled = context[-1], cur_len = len(tokens), n = size_n, m = size_m
    cur_len <= n + m + 1: no draft
    pattern = tokens[cur_len - n + 1 :] + [sampled]           (the context's last n tokens)
    match_pos = the largest j in [1, cur_len - n - 1] with tokens[j : j + n] == pattern (j = 0 never)
    none: no draft
    copy_max = min(m, cur_len - (match_pos + n));  copy_max < n: no draft
    draft = tokens[match_pos + n : match_pos + n + copy_max]

Draft length g: the decoders (examples/speculative-simple, tools/server) cap a draft only by the
context and the tokens left (n_max), so g is size_m. The prefix property of SPEC 2b fails here: a
larger m can empty the draft (the cur_len test) and m < n always does. So the walk takes the draft for
g from the longest continuation D = tokens[match_pos + n : cur_len] (stored: L_s of D along y and
m_s = len(D), both capped at the largest g studied) by the rule above:

    d_g = D[:min(g, m_s)]   when n <= g <= cur_len - n - 2 and m_s >= n,   else empty

with cur_len = prompt tokens + s - 1 at block start s (the record's prompt_tokens): per g exactly what
the code drafts. Both decoders draft on the prompt too (speculative-simple evaluates the prompt but
its last token first, then drafts with that token as `id_last`), so m_0 is the prompt's draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from specterm.core.params import GAMMA_MAX

SOURCE = "llama.cpp common/ngram-map.cpp common_ngram_simple_draft (vendored in llama-cpp-python 0.3.36)"
GAMMA_IS = ("size_m (--spec-ngram-simple-size-m): d_g = D[:min(g, m_s)] when size_n <= g <= cur_len - size_n - 2 "
            "and m_s >= size_n, else empty (cur_len = prompt_tokens + s - 1)")


@dataclass(frozen=True)
class NgramSimple:
    DEFAULT_N: ClassVar[int] = 12  # common.h common_params_speculative_ngram_map size_n
    DEFAULT_M: ClassVar[int] = 48  # size_m
    size_n: int = 12
    size_m: int = 48               # only `propose` (the literal code at one m) reads it; the walk sweeps g = size_m
    max_tokens: int = GAMMA_MAX
    kind: str = field(default="ngram", init=False)
    drafts_at_prompt_end: bool = field(default=True, init=False)

    @property
    def name(self) -> str:
        return f"ngram-simple:{self.size_n}"

    @property
    def min_draft(self) -> int:
        """The shortest draft the code makes (copy_max < size_n: no draft)."""
        return self.size_n

    def gamma_cap(self, context_len: int) -> int:
        """The largest g (= size_m) that drafts at all on a context of this length: cur_len - n - 2."""
        return context_len - 1 - self.size_n - 2

    def _match(self, ctx: np.ndarray) -> int:
        """match_pos (0: none) of the code's backward search."""
        n = self.size_n
        cur_len = ctx.size - 1
        last = cur_len - n - 1  # j runs from here down to 1
        if last < 1:
            return 0
        windows = sliding_window_view(ctx[: last + n], n)  # windows j = 0 .. last of tokens
        hits = np.flatnonzero((windows[1:] == ctx[ctx.size - n:]).all(axis=1)) + 1
        return int(hits[-1]) if hits.size else 0

    def longest(self, context: np.ndarray) -> np.ndarray:
        """D = tokens[match_pos + n : cur_len] (empty without a match), at most max_tokens long."""
        ctx = np.asarray(context, dtype=np.int64)
        if ctx.size < 2:
            return ctx[:0]
        pos = self._match(ctx)
        if pos == 0:
            return ctx[:0]
        start = pos + self.size_n
        return ctx[start: min(ctx.size - 1, start + self.max_tokens)]

    def propose(self, context: np.ndarray) -> np.ndarray:
        """common_ngram_simple_draft at size_m = self.size_m, as the code writes it."""
        ctx = np.asarray(context, dtype=np.int64)
        n, m = self.size_n, self.size_m
        cur_len = ctx.size - 1
        if ctx.size == 0 or cur_len <= n + m + 1:
            return ctx[:0]
        pos = self._match(ctx)
        if pos == 0:
            return ctx[:0]
        copy_max = min(m, cur_len - (pos + n))
        if copy_max < n:
            return ctx[:0]
        return ctx[pos + n: pos + n + copy_max]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "type": "ngram-simple", "spec": self.name, "size_n": self.size_n,
                "max_tokens": self.max_tokens, "gamma_is": GAMMA_IS, "source": SOURCE}
