"""The layering contract, checked on the code itself:

- specterm.core (analytics and the stream store) never imports torch, transformers or textual:
  every core module, those of its sub-packages (core/store, core/streams, core/decide, ...) included, is imported in
  a fresh interpreter and sys.modules is inspected after each; a planted import is found;
- the UI (specterm/screens, specterm/widgets, app.py, commands.py) never imports an engine's model-facing
  package (specterm.engines.torch, specterm.engines.llamacpp) at module level (an AST scan); only the
  runner entry points may be imported, inside the function that starts the oracle, so torch loads only
  when an oracle runs;
- `specterm --help` does not load the app;
- the import graph (every import, lazy and type-only ones included) runs app -> engines -> core and
  nothing up: core imports neither engines nor the app, engines never import the app;
- no module imports a private (underscore) name of another, nor reads one off an imported module;
- no module name is used twice for different things.
"""

from __future__ import annotations

import ast
import re
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


# -- the import graph: app -> engines -> core, nothing up; no private names across modules -----------------

from test_import_cycles import import_graph, specterm_sources  # noqa: E402

DUNDER = re.compile(r"^__\w+__$")


def layer(module: str) -> str:
    """core (specterm.core.*), engines (specterm.engines.*), root (the package's __init__: environment and
    version, imports nothing of specterm) or app (the command line and the TUI: everything else)."""
    if module == "specterm":
        return "root"
    for name in ("core", "engines"):
        if module == f"specterm.{name}" or module.startswith(f"specterm.{name}."):
            return name
    return "app"


ALLOWED = {"core": {"core", "root"}, "engines": {"engines", "core", "root"}, "app": {"app", "engines", "core", "root"},
           "root": {"root"}}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import (at any depth, type-only ones included) that goes up the layers."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer(b) not in ALLOWED[layer(a)])


def private_imports(sources: dict[str, str]) -> list[str]:
    """'module: name from other' for every `from other import _name` and every `alias._name` read on a
    module imported as `alias`, where other is another specterm module (dunder names such as
    __version__ are public)."""
    out = []
    for module, source in sources.items():
        tree = ast.parse(source)
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("specterm"):
                for a in node.names:
                    if a.name.startswith("_") and not DUNDER.match(a.name):
                        out.append(f"{module}: {a.name} from {node.module}")
                    if f"{node.module}.{a.name}" in sources:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("specterm") and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not DUNDER.match(node.attr) and aliases[node.value.id] != module):
                out.append(f"{module}: {node.attr} of {aliases[node.value.id]}")
    return sorted(set(out))


def test_imports_go_app_to_engines_to_core_and_never_up():
    sources, packages = specterm_sources()
    graph = import_graph(sources, packages, type_checking=True)
    assert any(layer(b) == "core" for targets in graph.values() for b in targets)  # the scan sees the imports
    assert upward_imports(graph) == []


def test_no_module_imports_a_private_name_of_another():
    sources, _ = specterm_sources()
    assert private_imports(sources) == []


def test_the_layer_checks_see_what_they_must_refuse():
    planted = {
        "specterm": "",
        "specterm.core.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from specterm.engines.x import T\n",
        "specterm.engines.x": "def f():\n    from specterm.runner import go\n",
        "specterm.runner": "from specterm.engines.x import f\nfrom specterm.core.a import g\nfrom specterm import __version__\n",
    }
    graph = import_graph(planted, set(), type_checking=True)
    assert upward_imports(graph) == ["specterm.core.a -> specterm.engines.x", "specterm.engines.x -> specterm.runner"]
    private = {"specterm.a": "from specterm.b import _hidden, __version__\nimport specterm.b as B\nB._x\nB.y\n",
               "specterm.b": "_hidden = 1\n_x = 2\ny = 3\nclass K:\n    def f(self):\n        return self._x\n"}
    assert private_imports(private) == ["specterm.a: _hidden from specterm.b", "specterm.a: _x of specterm.b"]


# -- one name, one idea --------------------------------------------------------------------------------

# A screen or widget is named after what it shows, so it may share the name of the core or engine module
# that computes that thing (screens/scorecard.py shows core/claims/scorecard.py); "base" is a package's
# base classes (screens' Screen, engines' interface, drafters' interface). Any other name is used once.
VIEWS = {"decide", "export", "optimum", "policies", "position", "progress", "scorecard", "streams", "run"}


def repeated_module_names(paths: list[Path]) -> dict[str, list[str]]:
    """Module and package names used more than once under specterm/ (paths relative to it), leaving out
    `base` and a view's name shared by one screen or widget and the one module it shows (VIEWS)."""
    seen: dict[str, list[str]] = {}
    for path in paths:
        rel = path.relative_to(ROOT)
        if rel == Path("__init__.py"):
            continue
        name = rel.parent.name if path.name == "__init__.py" else path.stem
        seen.setdefault(name, []).append(str(rel.parent) + "/" if path.name == "__init__.py" else str(rel))
    out = {}
    for name, where in seen.items():
        views = [w for w in where if w.startswith(("screens/", "widgets/"))]
        if len(where) < 2 or name == "base" or (name in VIEWS and len(views) == 1 and len(where) == 2):
            continue
        out[name] = sorted(where)
    return out


def test_the_name_check_sees_a_repeated_name():
    names = [ROOT / p for p in ("core/a/x.py", "engines/x.py", "core/claims/scorecard.py", "screens/scorecard.py",
                                "engines/base.py", "screens/base.py", "core/report/export.py", "screens/export.py",
                                "core/drafted/export.py", "core/stats/__init__.py", "widgets/stats.py")]
    assert repeated_module_names(names) == {"export": ["core/drafted/export.py", "core/report/export.py", "screens/export.py"],
                                            "stats": ["core/stats/", "widgets/stats.py"], "x": ["core/a/x.py", "engines/x.py"]}


def test_no_module_name_is_used_twice_for_different_things():
    assert repeated_module_names(sorted(ROOT.rglob("*.py"))) == {}
