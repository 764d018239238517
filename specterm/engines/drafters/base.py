"""The drafter interface (like transformers' CandidateGenerator: one small interface, one class per
drafter): a drafter reads the context (prompt ids + y_1..y_s) and proposes a token sequence d_s,
possibly empty, that depends on the context alone (SPEC 2b).

`propose(context)` returns the longest proposal (at most `max_tokens`); the proposal for draft
length g is its first min(g, m_s) tokens, which each drafter's docstring checks against the code it
copies. `describe()` is run.json's `draft` record ({"kind": "prompt-lookup"|"ngram", ...}).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from specterm.core.errors import SpectermError
from specterm.core.params import GAMMA_MAX

DRAFTER_KINDS = ("prompt-lookup", "ngram")  # run.json draft.kind of a drafter run (SPEC 7)
SPEC_NAMES = ("prompt-lookup", "ngram-simple")  # what --draft accepts (with a :N option)


class Drafter(Protocol):
    @property
    def kind(self) -> str:
        """run.json draft.kind ("prompt-lookup" | "ngram")."""
        ...

    @property
    def name(self) -> str:
        """The --draft spelling, e.g. "prompt-lookup:2"."""
        ...

    @property
    def max_tokens(self) -> int:
        """The longest proposal kept (the largest g studied)."""
        ...

    @property
    def drafts_at_prompt_end(self) -> bool:
        """False: the engine's first target call (the prefill) gets no draft, so m_0 = 0."""
        ...

    @property
    def min_draft(self) -> int:
        """The shortest draft the code makes at any g (0: no such floor)."""
        ...

    def gamma_cap(self, context_len: int) -> int:
        """The largest g that drafts at all on a context of this many tokens (SPEC 2b's rule per g)."""
        ...

    def propose(self, context: np.ndarray) -> np.ndarray:
        """d_s for this context (int64 ids) as the copied code makes it at its own settings (possibly empty)."""
        ...

    def longest(self, context: np.ndarray) -> np.ndarray:
        """The longest continuation D (at most max_tokens) whose prefixes are the drafts for every g, subject to
        min_draft <= g <= gamma_cap (SPEC 2b: d_g = D[:min(g, len(D))] there, empty elsewhere)."""
        ...

    def describe(self) -> dict[str, Any]: ...


def is_drafter_spec(spec: str) -> bool:
    """True when --draft names a drafter that needs no model (prompt-lookup[:N], ngram-simple[:N])."""
    return spec.split(":", 1)[0] in SPEC_NAMES


def _ints(spec: str, parts: list[str], most: int) -> list[int]:
    if len(parts) > most or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise SpectermError(f"--draft {spec!r}: the options after the name are {most} positive integer(s) at most, "
                            "e.g. prompt-lookup:3 or ngram-simple:4.")
    return [int(p) for p in parts]


def drafter_from_spec(spec: str, eos_ids: Iterable[int] = (), max_tokens: int = GAMMA_MAX) -> Drafter:
    """The drafter a --draft value names: `prompt-lookup[:N]` (Hugging Face, max_matching_ngram_size N,
    default 2) or `ngram-simple[:N]` (llama.cpp, size_n N default 12; its draft length g is size_m, which
    the walk sweeps)."""
    from specterm.engines.drafters.ngram_simple import NgramSimple
    from specterm.engines.drafters.prompt_lookup import PromptLookup

    name, *parts = spec.split(":")
    if name == "prompt-lookup":
        (n,) = _ints(spec, parts, 1) or [PromptLookup.DEFAULT_NGRAM]
        return PromptLookup(max_ngram=n, eos_ids=tuple(sorted(set(eos_ids))), max_tokens=max_tokens)
    if name == "ngram-simple":
        vals = _ints(spec, parts, 1)
        return NgramSimple(size_n=vals[0] if vals else NgramSimple.DEFAULT_N, max_tokens=max_tokens)
    raise SpectermError(f"--draft {spec!r} is not a drafter; use prompt-lookup[:N] or ngram-simple[:N].")


def drafter_from_meta(draft: dict[str, Any]) -> Drafter:
    """The drafter a drafter run's run.json `draft` record describes (to recompute or confirm it)."""
    from specterm.engines.drafters.ngram_simple import NgramSimple
    from specterm.engines.drafters.prompt_lookup import PromptLookup

    kind = draft.get("kind")
    if kind == "prompt-lookup":
        return PromptLookup(max_ngram=int(draft["max_matching_ngram_size"]),
                            eos_ids=tuple(int(e) for e in draft.get("eos_token_ids") or ()),
                            max_tokens=int(draft["max_tokens"]))
    if kind == "ngram" and draft.get("type") == "ngram-simple":
        return NgramSimple(size_n=int(draft["size_n"]), max_tokens=int(draft["max_tokens"]))
    raise SpectermError(f"run.json names a drafter this specterm does not know ({kind!r}); upgrade specterm.")
