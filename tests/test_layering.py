"""The layering contract, checked on the code itself:

- specterm.core (analytics and the stream store) never imports torch, transformers or textual:
  every core module, those of its sub-packages (core/store, core/streams, core/decide, ...) included, is imported in
  a fresh interpreter and sys.modules is inspected after each; a planted import is found;
- the UI (specterm/screens, specterm/widgets, app.py, commands.py) never imports an engine's model-facing
  package (specterm.engines.torch, specterm.engines.llamacpp) at module level (an AST scan); only the
  runner entry points may be imported, inside the function that starts the oracle, so torch loads only
  when an oracle runs;
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
package = importlib.import_module({package!r})
forbidden = {forbidden!r}
seen = set()

def check(name):
    global seen
    loaded = {{m.split(".")[0] for m in sys.modules}} & set(forbidden)
    for m in sorted(loaded - seen):
        print("violation", name, m)
    seen |= loaded

names = []
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    check(names[-1] if names else package.__name__)  # walk_packages imports each sub-package it descends into
    names.append(info.name)
for name in names:
    importlib.import_module(name)
    check(name)
for name in names:
    print("module", name)
"""


def core_violations(package: str = "specterm.core", root: Path | None = None) -> tuple[list[str], list[str]]:
    """(every module of `package`, its sub-packages' included (pkgutil.walk_packages), and
    ["specterm.core.x torch", ...]: the module that first loaded each forbidden package), each module
    imported in turn in one fresh interpreter; `root`: the folder holding the specterm package."""
    env = None
    if root is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", CORE_IMPORTS.format(package=package, forbidden=FORBIDDEN_IN_CORE)],
                         capture_output=True, text=True, check=True, env=env, cwd=root).stdout.splitlines()
    modules = [line.split()[1] for line in out if line.startswith("module ")]
    return modules, [line.split(" ", 1)[1] for line in out if line.startswith("violation ")]


def core_files(root: Path = ROOT) -> list[str]:
    """Every module under specterm/core as a dotted name, from the files themselves."""
    names = []
    for path in sorted((root / "core").rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_core_never_imports_torch_transformers_or_textual():
    modules, violations = core_violations()
    assert violations == []
    # every module on disk was imported (the package itself aside), sub-packages' too
    assert sorted(modules) == sorted(n for n in core_files() if n != "specterm.core")
    assert any(m.startswith("specterm.core.store.") for m in modules)
    for sub in ("streams", "decide", "decide.hardware", "claims", "compare", "report"):
        assert any(m.startswith(f"specterm.core.{sub}.") for m in modules), sub


@pytest.mark.parametrize("module", ["store/pooling.py", "decide/hardware/__init__.py"])
def test_a_planted_import_in_a_core_sub_package_is_found(tmp_path, module):
    """A copy of specterm with `import textual` planted in a sub-package's module fails the walk."""
    import shutil

    copy = tmp_path / "specterm"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "core" / module
    target.write_text(target.read_text(encoding="utf-8") + "\nimport textual  # planted\n", encoding="utf-8")
    modules, violations = core_violations(root=tmp_path)
    dotted = "specterm.core." + module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    assert dotted in modules and [v.split()[1] for v in violations] == ["textual"]  # whichever module imported it first


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


MODEL_PACKAGES = ("specterm.engines.torch", "specterm.engines.llamacpp")  # what loads torch or llama_cpp


def oracle_imports(source: str) -> list[str]:
    return [m for m in module_level_imports(ast.parse(source)) if any(m == p or m.startswith(p + ".") for p in MODEL_PACKAGES)]


@pytest.mark.parametrize("path", UI_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_ui_never_imports_the_oracle_at_module_level(path):
    assert oracle_imports(path.read_text(encoding="utf-8")) == []


def test_the_scan_sees_the_imports_it_must_refuse():
    assert oracle_imports("from specterm.engines.torch.oracle_torch import run_oracle\n") == [
        "specterm.engines.torch.oracle_torch", "specterm.engines.torch.oracle_torch.run_oracle"]
    assert oracle_imports("import specterm.engines.torch.models_torch as m\n") == ["specterm.engines.torch.models_torch"]
    assert oracle_imports("try:\n    from specterm.engines.torch import specdec\nexcept ImportError:\n    pass\n") != []
    assert oracle_imports("class A:\n    from specterm.engines.llamacpp import costs_llamacpp\n") != []
    assert oracle_imports("from specterm.engines.progress import Progress\n") == []  # plain data, no model
    # allowed: inside the function that starts the oracle, and type-only imports
    assert oracle_imports("def go():\n    from specterm.engines.torch.oracle_torch import run_oracle\n") == []
    assert oracle_imports("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from specterm.engines.torch.oracle_torch import OracleConfig\n") == []
    assert len(UI_FILES) >= 15


def test_cli_help_does_not_load_the_app():
    code = "import sys; from specterm import cli; print('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
