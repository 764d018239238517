"""Hugging Face's prompt lookup decoding (`prompt_lookup_num_tokens`, `max_matching_ngram_size`), as
transformers' generation/candidate_generator.py `PromptLookupCandidateGenerator.get_candidates` does it
(read in the installed transformers, version in `SOURCE`):

    for ngram_size = min(max_matching_ngram_size, len - 1) down to 1:
        the windows of the context equal to its last ngram_size tokens, leftmost first;
        the first window whose next index start = idx + ngram_size is < min(start + num_tokens, len):
            candidates = context[start : min(start + num_tokens, len)], cut before the first EOS;
            stop (even when the cut leaves nothing: then no candidates)
    no window: no candidates (a plain decode step)

Prefix property (SPEC 2b): the window chosen does not depend on num_tokens (start < len is the test
for every num_tokens >= 1), and both the length cap and the EOS cut keep a prefix, so the proposal
for num_tokens = g is the first min(g, m_s) tokens of the one for the largest g. One L_s per start
serves every g. (HF also returns no candidates when one token is left before max_length; the target
calls are the same, a plain decode step either way.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from specterm.core.params import GAMMA_MAX

SOURCE = "transformers 5.25.0 generation/candidate_generator.py PromptLookupCandidateGenerator.get_candidates (line 1033)"


@dataclass(frozen=True)
class PromptLookup:
    DEFAULT_NGRAM: ClassVar[int] = 2  # transformers' default max_matching_ngram_size
    max_ngram: int = 2
    eos_ids: tuple[int, ...] = ()
    max_tokens: int = GAMMA_MAX
    kind: str = field(default="prompt-lookup", init=False)
    drafts_at_prompt_end: bool = field(default=True, init=False)  # HF drafts before the prefill too

    @property
    def name(self) -> str:
        return f"prompt-lookup:{self.max_ngram}"

    @property
    def min_draft(self) -> int:
        return 0

    def gamma_cap(self, context_len: int) -> int:
        """Every g drafts (the proposal for g is a prefix of the longest)."""
        return 2**31 - 1

    def longest(self, context: np.ndarray) -> np.ndarray:
        """The proposal at the largest g studied (max_tokens); the one for g is its first min(g, m_s)."""
        return self.propose(context)

    def propose(self, context: np.ndarray) -> np.ndarray:
        ctx = np.asarray(context, dtype=np.int64)
        length = ctx.size
        for n in range(min(self.max_ngram, length - 1), 0, -1):
            windows = sliding_window_view(ctx, n)
            idx = np.flatnonzero((windows == ctx[length - n:]).all(axis=1))
            idx = idx[idx + n < length]  # start_idx < end_idx = min(start + g, len)
            if idx.size:
                start = int(idx[0]) + n
                chosen = ctx[start:min(start + self.max_tokens, length)]
                if self.eos_ids:
                    eos = np.flatnonzero(np.isin(chosen, self.eos_ids))
                    if eos.size:
                        chosen = chosen[: int(eos[0])]
                return chosen
        return ctx[:0]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.name, "max_matching_ngram_size": self.max_ngram,
                "max_tokens": self.max_tokens, "eos_token_ids": list(self.eos_ids), "source": _source()}


def _source() -> str:
    """The transformers version whose code this copies (the installed one when there is one)."""
    try:
        from importlib.metadata import version

        return f"transformers {version('transformers')} generation/candidate_generator.py PromptLookupCandidateGenerator"
    except Exception:  # pragma: no cover - transformers is a dependency
        return SOURCE
