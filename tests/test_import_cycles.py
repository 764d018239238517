"""No import cycle among specterm's modules, lazy and type-only imports included.

The graph has an edge a -> b for every `import`/`from ... import` of specterm module b anywhere in
module a's source: at module level, inside functions and methods, in try/except, and under
`if TYPE_CHECKING:` (a type that two modules need of each other belongs in a third). So a cycle that is
dodged at runtime by moving one import into a function body (the lazy-import-to-avoid-a-cycle pattern)
or under TYPE_CHECKING is still a cycle here, and the test fails on it; a function-level import that
is lazy only for start-up time is fine as long as it closes no loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "specterm"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, known: set[str]) -> str | None:
    """The longest known module that `name` (a module, or a module attribute) starts with."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imported_modules(source: str, module: str, known: set[str], is_package: bool = False,
                     type_checking: bool = True) -> set[str]:
    """The specterm modules `module` imports anywhere in its source (under TYPE_CHECKING too, unless
    `type_checking` is False)."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if not type_checking and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _resolve(alias.name, known)) is not None:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x / from .y import z
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                if (target := _resolve(f"{base}.{alias.name}", known)) is not None:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    found.discard(module)
    return found


def import_graph(sources: dict[str, str], packages: set[str] = frozenset(), type_checking: bool = True) -> dict[str, set[str]]:
    known = set(sources)
    return {m: imported_modules(src, m, known, m in packages, type_checking) for m, src in sources.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(out)


def specterm_sources() -> tuple[dict[str, str], set[str]]:
    files = sorted((ROOT / PACKAGE).rglob("*.py"))
    sources = {module_name(p): p.read_text(encoding="utf-8") for p in files}
    packages = {module_name(p) for p in files if p.name == "__init__.py"}
    return sources, packages


def test_no_import_cycle_among_specterm_modules():
    sources, packages = specterm_sources()
    assert len(sources) >= 50
    graph = import_graph(sources, packages)
    assert sum(len(v) for v in graph.values()) >= 100  # the scan sees the imports
    found = cycles(graph)
    assert found == [], "import cycles (an import inside a function still counts): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_check_sees_a_cycle_dodged_by_a_lazy_import():
    lazy = {
        "p.a": "from p.b import helper\n",
        "p.b": "def helper():\n    from p import a  # lazy, to dodge the cycle\n    return a\n",
        "p.c": "import p.a\n",
    }
    assert cycles(import_graph(lazy)) == [["p.a", "p.b"]]
    in_method = {"p.a": "import p.b\n", "p.b": "class K:\n    def f(self):\n        import p.a.x\n", "p.a.x": ""}
    assert cycles(import_graph(in_method)) == []  # p.b imports p.a.x, which p.a does not import
    in_method["p.a.x"] = "from p.b import K\n"
    assert cycles(import_graph(in_method)) == [["p.a.x", "p.b"]]
    relative = {"p.a": "from .b import f\n", "p.b": "try:\n    from . import a\nexcept ImportError:\n    a = None\n"}
    assert cycles(import_graph(relative)) == [["p.a", "p.b"]]


def test_a_cycle_under_type_checking_is_a_cycle():
    typed = {
        "p.a": "from p.b import f\n",
        "p.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import T\ndef f(): ...\n",
    }
    assert cycles(import_graph(typed)) == [["p.a", "p.b"]]
    assert cycles(import_graph(typed, type_checking=False)) == []  # what runs: no cycle
