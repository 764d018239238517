"""The layering contract, checked on the code itself:

- specterm.core (analytics and the stream store) never imports torch, transformers or textual:
  each core module is imported in a fresh interpreter and sys.modules is inspected after it;
- the UI (specterm/screens, specterm/widgets, app.py, commands.py) never imports specterm.oracle at
  module level (an AST scan); only the runner entry points may be imported, inside the function that
  starts the oracle, so torch loads only when an oracle runs;
- `specterm --help` does not load the app.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "specterm"
FORBIDDEN_IN_CORE = ("torch", "transformers", "textual", "textual_plotext", "llama_cpp")
UI_FILES = sorted([*ROOT.joinpath("screens").glob("*.py"), *ROOT.joinpath("widgets").glob("*.py"),
                   ROOT / "app.py", ROOT / "commands.py"])

CORE_IMPORTS = """
import importlib, pkgutil, sys
import specterm.core
forbidden = {forbidden!r}
seen = set()
for info in pkgutil.iter_modules(specterm.core.__path__, "specterm.core."):
    importlib.import_module(info.name)
    loaded = {{m.split(".")[0] for m in sys.modules}} & set(forbidden)
    for m in sorted(loaded - seen):
        print(info.name, m)
    seen |= loaded
print("modules", len(list(pkgutil.iter_modules(specterm.core.__path__))))
"""


def core_violations() -> tuple[int, list[str]]:
    """(number of core modules, ["specterm.core.x torch", ...]: the module that first loaded each forbidden package)."""
    out = subprocess.run([sys.executable, "-c", CORE_IMPORTS.format(forbidden=FORBIDDEN_IN_CORE)],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()
    return int(out[-1].split()[1]), out[:-1]


def test_core_never_imports_torch_transformers_or_textual():
    n_modules, violations = core_violations()
    assert n_modules >= 15  # streams, blockwalk, geometry, stats, params, optimum, policies, ...
    assert violations == []


def module_level_imports(tree: ast.Module) -> list[str]:
    """Modules imported by statements that run at import time (not in functions, not under TYPE_CHECKING)."""
    names: list[str] = []

    def visit(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, field, []))

    visit(tree.body)
    return names


def oracle_imports(source: str) -> list[str]:
    return [m for m in module_level_imports(ast.parse(source)) if m == "specterm.oracle" or m.startswith("specterm.oracle.")]


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_ui_never_imports_the_oracle_at_module_level(path):
    assert oracle_imports(path.read_text(encoding="utf-8")) == []


def test_the_scan_sees_the_imports_it_must_refuse():
    assert oracle_imports("from specterm.oracle.run import run_oracle\n") == ["specterm.oracle.run", "specterm.oracle.run.run_oracle"]
    assert oracle_imports("import specterm.oracle.models as m\n") == ["specterm.oracle.models"]
    assert oracle_imports("try:\n    from specterm.oracle import specdec\nexcept ImportError:\n    pass\n") != []
    assert oracle_imports("class A:\n    from specterm.oracle import costs\n") != []
    # allowed: inside the function that starts the oracle, and type-only imports
    assert oracle_imports("def go():\n    from specterm.oracle.run import run_oracle\n") == []
    assert oracle_imports("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from specterm.oracle.run import OracleConfig\n") == []
    assert len(UI_FILES) >= 15


def test_cli_help_does_not_load_the_app():
    code = "import sys; from specterm import cli; print('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
