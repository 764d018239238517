"""docs/layout.md names every module of specterm/, each under its own directory, and nothing that does
not exist (a module added or moved without a word in the Layout fails here); the README's Layout names
every package in one line each."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILE = re.compile(r"[\w/]+\.py\b")


def layout_block(text: str, heading: str = "# Layout, module by module") -> str:
    section = text.split(f"\n{heading}\n", 1)[1] if not text.startswith(heading + "\n") else text[len(heading):]
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
    block = layout_block((ROOT / "docs" / "layout.md").read_text(encoding="utf-8"))
    named = layout_modules(block)
    actual = {str(p.relative_to(ROOT)) for p in (ROOT / "specterm").rglob("*.py")}
    assert sorted(actual - named) == [], "modules missing from docs/layout.md"
    assert sorted(named - actual) == [], "docs/layout.md names modules that do not exist"


def test_layout_parser():
    block = ("specterm/core/  x (tests/t.py checks it)\n  a.py  does a; b.py too\n      c.py\nstreams/  d.py\n"
             "specterm/  e.py, sub/f.py\n")
    assert layout_modules(block) == {"specterm/core/a.py", "specterm/core/b.py", "specterm/core/c.py",
                                     "specterm/e.py", "specterm/sub/f.py"}


def readme_packages(block: str) -> list[str]:
    """The directories under specterm/ that the README's Layout block opens a line with."""
    return [line.split()[0] for line in block.splitlines() if line.startswith("specterm/")]


def test_readme_layout_names_every_package_once():
    """One line per package: every folder of specterm/ holding a module, each once, and no other."""
    named = readme_packages(layout_block((ROOT / "README.md").read_text(encoding="utf-8"), "## Layout"))
    actual = {str(p.parent.relative_to(ROOT)) + "/" for p in (ROOT / "specterm").rglob("*.py")}
    assert len(named) == len(set(named)), "a package has two lines in the README Layout"
    assert sorted(actual - set(named)) == [], "packages missing from the README Layout"
    assert sorted(set(named) - actual) == [], "the README Layout names packages that do not exist"


def test_readme_packages_parser():
    block = "specterm/  a\nspecterm/core/  b\n  specterm/x/ not a line of its own\nstreams/  c\n"
    assert readme_packages(block) == ["specterm/", "specterm/core/"]
