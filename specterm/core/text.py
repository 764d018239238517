"""Showing user strings (corpus names, ids, prompts, run names) safely on a terminal."""

from __future__ import annotations

# C0 controls, DEL and C1 controls (Unicode category Cc): ESC starts ANSI sequences, CR rewrites a
# line, C1 0x9b is a one-byte CSI. Each becomes a visible Python-style escape.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))}


def printable(text: str, keep: str = "") -> str:
    """`text` with every control character except those in `keep` replaced by its escape
    (ESC -> '\\x1b'), so printing it cannot move the cursor, recolour or clear the terminal.
    Lone surrogates become '\\udXXX' escapes as well (they cannot be encoded for output)."""
    table = {c: v for c, v in _CONTROL.items() if chr(c) not in keep}
    out = text.translate(table)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        out = out.encode("utf-8", "backslashreplace").decode("utf-8")
    return out
