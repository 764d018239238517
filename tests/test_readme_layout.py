"""The README's Layout names every module of specterm/, each under its own directory, and nothing
that does not exist (a module added or moved without a word in the Layout fails here)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE = re.compile(r"[\w/]+\.py\b")


def layout_block(readme: str) -> str:
    section = readme.split("\n## Layout\n", 1)[1]
    return section.split("```", 2)[1]


def layout_modules(block: str) -> set[str]:
    """Paths (relative to the repository) of the .py files the block names: a line starting at
    column 0 with `specterm/DIR/` opens DIR; the file names on it and on the indented lines below
    belong to DIR until the next line at column 0 (paths into tests/ or benchmarks/ are references)."""
    found: set[str] = set()
    current: str | None = None
    for line in block.splitlines():
        if line and not line[0].isspace():
            head = line.split()[0]
            current = head if head.startswith("specterm/") and head.endswith("/") else None
            line = line[len(head):]
        if current is not None:
            found.update(current + name for name in FILE.findall(line) if not name.startswith(("tests/", "benchmarks/")))
    return found


def test_layout_names_every_module_and_no_other():
    block = layout_block((ROOT / "README.md").read_text(encoding="utf-8"))
    named = layout_modules(block)
    actual = {str(p.relative_to(ROOT)) for p in (ROOT / "specterm").rglob("*.py")}
    assert sorted(actual - named) == [], "modules missing from the README Layout"
    assert sorted(named - actual) == [], "the README Layout names modules that do not exist"


def test_layout_parser():
    block = ("specterm/core/  x (tests/t.py checks it)\n  a.py  does a; b.py too\n      c.py\nstreams/  d.py\n"
             "specterm/  e.py, sub/f.py\n")
    assert layout_modules(block) == {"specterm/core/a.py", "specterm/core/b.py", "specterm/core/c.py",
                                     "specterm/e.py", "specterm/sub/f.py"}
