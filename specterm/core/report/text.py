"""Showing user strings (corpus names, ids, prompts, run names) safely on a terminal."""

from __future__ import annotations

import functools

# C0 controls, DEL and C1 controls (Unicode category Cc): ESC starts ANSI sequences, CR rewrites a
# line, C1 0x9b is a one-byte CSI. Each becomes a visible Python-style escape.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
# Bidirectional formatting characters: U+202E (RIGHT-TO-LEFT OVERRIDE) and its kin reorder
# everything printed after them on the line ("Trojan Source"), so a name could make the numbers
# beside it read backwards. ALM, LRM/RLM, the embeddings/overrides and the isolates.
_BIDI = {c: f"\\u{c:04x}" for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}


@functools.lru_cache(maxsize=8)
def _table(keep: str) -> dict[int, str]:
    """printable's translation table, less the characters in `keep` (built once per `keep`)."""
    return {c: v for c, v in {**_CONTROL, **_BIDI}.items() if chr(c) not in keep}


def printable(text: str, keep: str = "") -> str:
    """`text` with every control character except those in `keep` replaced by its escape
    (ESC -> '\\x1b'), and every bidirectional formatting character too (U+202E -> '\\u202e'),
    so printing it cannot move the cursor, recolour, clear the terminal or reorder the line.
    Lone surrogates become '\\udXXX' escapes as well (they cannot be encoded for output)."""
    if text.isprintable():  # no control, bidi (both Cc/Cf) or surrogate (Cs) character: as it is
        return text
    out = text.translate(_table(keep))
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = out.encode("utf-8", "backslashreplace").decode("utf-8")
    return out

