"""Drafters that need no model (SPEC 2b: prompt lookup, n-gram): one class each behind `Drafter`
(base.py), and `along_y` (along.py), the accepted run L_s and proposal length m_s at every block start.

    drafter = drafter_from_spec("prompt-lookup:3", eos_ids)   # Hugging Face's rule, max n-gram 3
    runs, proposed, seconds = along_y(drafter, prompt_ids, y)

Pure numpy: nothing here imports torch or llama_cpp.
"""

from __future__ import annotations

from specterm.engines.drafters.along import along_y, draft_at
from specterm.engines.drafters.base import DRAFTER_KINDS, Drafter, drafter_from_meta, drafter_from_spec, is_drafter_spec
from specterm.engines.drafters.ngram_simple import NgramSimple
from specterm.engines.drafters.prompt_lookup import PromptLookup

__all__ = ["DRAFTER_KINDS", "Drafter", "NgramSimple", "PromptLookup", "along_y", "draft_at", "drafter_from_meta",
           "drafter_from_spec", "is_drafter_spec"]
