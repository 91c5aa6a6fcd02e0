"""The import graph docs/DESIGN.md's package table promises, read from the source (no import runs).

- Each package imports only what its "may import" column allows: ``tidegate/`` no other package
  (but its CLI, which starts them all),
  ``catalog/`` only ``tidegate``, ``engine/`` no wire (``gateway``), ``gateway/`` never pyspark.
  Imports inside functions count too: a lazy import is still a dependency.
- No module-level import cycle inside a package (a module's top-level imports never lead back to
  it): the order in which modules are first imported cannot matter.
- No import cycle at all, imports inside functions included (those under ``if TYPE_CHECKING:``
  are annotations, not dependencies): each module can be understood and tested from the modules
  below it, and a lazy import is never the way around a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tidegate", "catalog", "engine", "gateway")
ALLOWED = {  # package -> first-party packages it may import
    "tidegate": set(),
    "catalog": {"tidegate"},
    "engine": {"tidegate", "catalog"},
    "gateway": {"tidegate", "catalog", "engine"},
}
NEVER = {"gateway": {"pyspark"}, "catalog": {"pyspark"}, "tidegate": {"pyspark"}}
ENTRY_POINTS = {"tidegate.cli", "tidegate.__main__"}  # the composition root starts every package


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def _imports(path: Path, top_level_only: bool, modules: dict[str, Path], *,
             runtime_only: bool = False) -> list[tuple[str, int]]:
    """(imported module, line) of each import; ``from m import x`` is m.x when that is a module, else m.
    ``runtime_only``: without the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    skip = _type_checking_nodes(tree) if runtime_only else set()
    found = []
    for node in nodes:
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module,
                       node.lineno) for alias in node.names]
    return found


def test_packages_import_only_what_the_design_allows() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        package = name.split(".")[0]
        if name in ENTRY_POINTS:
            continue
        for target, line in _imports(path, False, modules):
            head = target.split(".")[0]
            if head in PACKAGES and head != package and head not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
            if head in NEVER.get(package, set()):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
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
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_level_import_cycles() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _ in _imports(path, True, modules):
            if target in modules and target != name:
                graph[name].add(target)
    assert not _cycles(graph), _cycles(graph)


def test_no_import_cycles_even_through_imports_inside_functions() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    where: dict[tuple[str, str], int] = {}
    for name, path in modules.items():
        for target, line in _imports(path, False, modules, runtime_only=True):
            if target in modules and target != name:
                graph[name].add(target)
                where.setdefault((name, target), line)
    found = _cycles(graph)
    detail = [f"{a} -> {b} (line {where[a, b]})" for cycle in found for a in cycle for b in sorted(graph[a])
              if b in cycle]
    assert not found, "\n".join(detail)


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
