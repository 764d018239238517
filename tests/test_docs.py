"""The README is short and points into docs/; every "SPEC n" the code cites has its section in docs/method.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITE = re.compile(r"SPEC (\d+b?(?:\.\d+)?)")
HEADING = re.compile(r"^#{2,3} (\d+b?(?:\.\d+)?)\.? ", re.M)


def cited(root: Path = ROOT / "specterm") -> dict[str, int]:
    """Each section number cited as "SPEC n" or "SPEC n.m" in the code, with how often."""
    counts: dict[str, int] = {}
    for path in root.rglob("*.py"):
        for m in CITE.finditer(path.read_text(encoding="utf-8")):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def sections(text: str) -> set[str]:
    """The numbered sections of a method document: "## 6. Deciding" -> "6", "### 1.3 The gate" -> "1.3"."""
    return set(HEADING.findall(text))


def test_every_spec_citation_in_the_code_has_its_section_in_docs_method():
    have = sections((ROOT / "docs" / "method.md").read_text(encoding="utf-8"))
    counts = cited()
    assert sum(counts.values()) > 100  # the code does cite the method
    missing = {n: k for n, k in counts.items() if n not in have}
    assert missing == {}, f"cited as SPEC n in specterm/ but no section n in docs/method.md: {missing}"


def test_the_citation_check_can_fail(tmp_path):
    (tmp_path / "m.py").write_text('"""SPEC 6 and SPEC 1.3; SPEC 9.1 too."""\n', encoding="utf-8")
    have = sections("## 1. The oracle\n### 1.3 The gate\n## 6. Deciding\n#### 9.1 too deep\n")
    assert have == {"1", "1.3", "6"}
    assert set(cited(tmp_path)) - have == {"9.1"}


def test_readme_is_short_and_its_links_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\((docs/[\w.]+\.md)(?:#[\w-]+)?\)", text)
    assert {"docs/method.md", "docs/results.md", "docs/engines.md", "docs/store.md", "docs/performance.md"} <= set(links)
    for link in links:
        assert (ROOT / link).is_file(), link


def test_readme_anchor_into_method_exists():
    """GitHub's anchor of a heading: lower case, spaces to '-', punctuation dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    method = (ROOT / "docs" / "method.md").read_text(encoding="utf-8")
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.*)$", method, re.M)}
    for anchor in re.findall(r"\]\(docs/method\.md#([\w-]+)\)", text):
        assert anchor in anchors, anchor
