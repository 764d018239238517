"""core/report/fmt.py, the one number formatter: its spellings, and who may import it.

The statistics never format: only the modules that write text (export, the scorecard's evidence,
economics' Q evidence) import fmt in core, and fmt imports nothing of specterm. Every core module
stays under ~450 lines unless its docstring says why (a line starting "Length:").
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from specterm.core.report.fmt import MISSING, ci, est, fmt, is_num
from specterm.core.report.types import Estimate

CORE = Path(__file__).resolve().parents[1] / "specterm" / "core"
# crossstack: its markdown tables (cross_stack_markdown); answer: the Overview's lines; settings_tables: the settings tables
TEXT_WRITERS = {"export", "scorecard", "economics", "fmt", "crossstack", "answer", "settings_tables"}
MAX_LINES = 450


@pytest.mark.parametrize("x,args,text", [
    (None, (), MISSING), (math.nan, (), MISSING), (math.inf, (), MISSING), (-math.inf, (2,), MISSING),
    (0.23349, (), "0.233"), (0.23351, (2,), "0.23"), (0.2335, (3, True), "+0.234"), (-0.05, (2, True), "-0.05"),
    (5, (), "5"), (5, (3, True), "+5"), (True, (), "yes"), (False, (), "no"), ("h100", (), "h100"),
])
def test_fmt(x, args, text):
    assert fmt(x, *args) == text


def test_ci_and_est():
    assert ci([0.1, 0.25]) == "[0.100, 0.250]" and ci([0.1, 0.25], 2) == "[0.10, 0.25]"
    assert ci([None, 0.2]) == ci([0.1, math.nan]) == ci(None) == ci([]) == f"[{MISSING}]"
    e = Estimate(value=0.2334, ci=[0.19, 0.27])
    assert est(e, 3, 2, sign=True) == "+0.233 [0.19, 0.27]"  # SPEC 7's example cell
    assert est(Estimate(value=1.34, ci=[1.06, 1.6]), 1, 2, suffix="x") == "1.3x [1.06, 1.60]"
    assert est(Estimate(value=None, ci=[None, None]), suffix="x") == f"{MISSING} [{MISSING}]"  # no "n/ax"
    assert est(Estimate(value=0.5), missing_ci="") == "0.500"  # the screens: the value alone
    assert est(None) == MISSING
    assert is_num(3) and is_num(0.5) and not is_num(True) and not is_num(math.nan) and not is_num(None)


def core_imports(path: Path) -> set[str]:
    """The specterm.core modules a core module imports (anywhere in it)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_only_the_text_writers_import_fmt():
    importers = sorted(p.relative_to(CORE).as_posix() for p in CORE.rglob("*.py")
                       if "specterm.core.report.fmt" in core_imports(p))
    assert importers and all(Path(name).stem in TEXT_WRITERS for name in importers), importers
    assert not any(m.startswith("specterm") for m in core_imports(CORE / "report" / "fmt.py"))


def test_core_modules_are_short_or_say_why():
    long = []
    for path in sorted(CORE.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if n > MAX_LINES and not any(line.startswith("Length:") for line in doc.splitlines()):
            long.append(f"{path.relative_to(CORE)} ({n} lines)")
    assert long == [], "split these modules or write why they are long ('Length: ...' in the docstring)"
