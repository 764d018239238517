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

Draft length g: the engine truncates a draft to its n_max (common_speculative_draft: "truncating
draft to n_max tokens"), so with size_m fixed the draft for g is the first min(g, m_s) tokens of the
size_m one and one L_s per start serves every g. (Setting g through size_m instead would not keep
that prefix: the length tests above change with m.) The prefill gets no draft (llama.cpp samples the
first token from the prompt's own evaluation), so m_0 = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

SOURCE = "llama.cpp common/ngram-map.cpp common_ngram_simple_draft (vendored in llama-cpp-python 0.3.36)"


@dataclass(frozen=True)
class NgramSimple:
    DEFAULT_N: ClassVar[int] = 12  # common.h common_params_speculative_ngram_map size_n
    DEFAULT_M: ClassVar[int] = 48  # size_m
    size_n: int = 12
    size_m: int = 48
    kind: str = field(default="ngram", init=False)
    drafts_at_prompt_end: bool = field(default=False, init=False)

    @property
    def name(self) -> str:
        return f"ngram-simple:{self.size_n}:{self.size_m}"

    @property
    def max_tokens(self) -> int:
        return self.size_m

    def propose(self, context: np.ndarray) -> np.ndarray:
        ctx = np.asarray(context, dtype=np.int64)
        n, m = self.size_n, self.size_m
        tokens = ctx[:-1]
        cur_len = tokens.size
        if ctx.size == 0 or cur_len <= n + m + 1:
            return ctx[:0]
        pattern = ctx[ctx.size - n:]
        last = cur_len - n - 1  # j runs from here down to 1
        windows = sliding_window_view(tokens[: last + n], n)  # windows j = 0 .. last
        hits = np.flatnonzero((windows[1:] == pattern).all(axis=1)) + 1
        if hits.size == 0:
            return ctx[:0]
        match_pos = int(hits[-1])
        copy_max = min(m, cur_len - (match_pos + n))
        if copy_max < n:
            return ctx[:0]
        return tokens[match_pos + n: match_pos + n + copy_max]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "type": "ngram-simple", "spec": self.name, "size_n": self.size_n,
                "size_m": self.size_m, "max_tokens": self.size_m, "source": SOURCE}
